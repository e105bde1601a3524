"""Test support for kgroup: a real Kafka-protocol broker for integration tests.

:func:`start_broker` returns a :class:`BrokerHandle` for an external cluster
(``KGROUP_BOOTSTRAP_SERVERS``), a testcontainers Apache Kafka, or the embedded Tansu
broker, in that order of preference; :func:`create_topic` and :func:`produce` are small
admin helpers built on kafka-python. The pytest plugin ``kgroup.testing.pytest_plugin``
(registered as the ``kgroup`` pytest11 entry point) provides the ``kafka_broker``,
``kafka_bootstrap``, ``topic_factory`` and ``group_id_factory`` fixtures.

Tansu deviates from Apache Kafka in its group coordinator; see the
:mod:`kgroup.testing.broker` docstring. Tests must set ``session_timeout_ms`` explicitly.
"""

from kgroup.testing._fake_clock import FakeClock
from kgroup.testing.broker import (
    BrokerHandle,
    BrokerStartError,
    create_topic,
    produce,
    start_broker,
)

__all__ = [
    "BrokerHandle",
    "BrokerStartError",
    "FakeClock",
    "create_topic",
    "produce",
    "start_broker",
]
