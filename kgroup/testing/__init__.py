"""Test support for kgroup: a real Kafka-protocol broker for integration tests.

:func:`start_broker` returns a :class:`BrokerHandle` for an external cluster
(``KGROUP_BOOTSTRAP_SERVERS``), the kind named by ``KGROUP_BROKER`` or ``kind=``, a
testcontainers Apache Kafka, or the embedded Tansu broker, in that order of preference. One kind,
``"apache-kafka"``, is chosen only by name: Apache Kafka's own broker
(:data:`kgroup.testing.apache_kafka.KAFKA_VERSION`, KRaft) run as JVM child processes from jars
that ``python -m kgroup.testing.apache_kafka fetch`` resolves from Maven Central once, one node
or three, whose handle can restart, kill, stop and start nodes (:mod:`kgroup.testing.apache_kafka`).
:func:`create_topic` and :func:`produce` are small admin helpers built on kafka-python,
:func:`alter_group_configs` one on :class:`kgroup.admin.GroupAdmin`. The pytest plugin
``kgroup.testing.pytest_plugin`` (registered as the ``kgroup`` pytest11 entry point) provides
the ``kafka_broker``, ``kafka_bootstrap``, ``topic_factory``, ``group_id_factory`` and
``kafka_cluster`` fixtures, and the ``broker_kinds("tansu", "apache-kafka")`` mark that runs a
test once per broker kind.

:class:`CoordinatorProxy` puts a faithful model of Apache Kafka's classic group coordinator
(:mod:`kgroup.testing.coordinator`) in front of the real broker: clients talk to the proxy, which
answers the group APIs from the model and forwards everything else. Its ``faults``
(:class:`Faults`) inject errors, delays, dropped responses, closed connections and black holes;
``move_coordinator()`` and ``restart_coordinator()`` simulate coordinator failover.

Tansu deviates from Apache Kafka in its group coordinator; see the
:mod:`kgroup.testing.broker` docstring. Tests must set ``session_timeout_ms`` explicitly.
"""

from typing import TYPE_CHECKING

from kgroup._lazy import lazy_getattr
from kgroup.testing._fake_clock import FakeClock
from kgroup.testing.broker import (
    BrokerHandle,
    BrokerStartError,
    alter_group_configs,
    create_topic,
    produce,
    start_broker,
)

if TYPE_CHECKING:
    from kgroup.testing.faults import BlackHole, FaultFired, FaultRule, Faults
    from kgroup.testing.proxy import CoordinatorProxy, RequestRecord

#: names imported on first use (PEP 562): the proxy and the fault rules load kafka-python and
#: the coordinator model, which the pytest plugin (imported by every pytest run where kgroup is
#: installed) must not load before a fixture needs them
_LAZY: dict[str, str] = {
    "BlackHole": "kgroup.testing.faults",
    "FaultFired": "kgroup.testing.faults",
    "FaultRule": "kgroup.testing.faults",
    "Faults": "kgroup.testing.faults",
    "CoordinatorProxy": "kgroup.testing.proxy",
    "RequestRecord": "kgroup.testing.proxy",
}

__all__ = [
    "BlackHole",
    "BrokerHandle",
    "BrokerStartError",
    "CoordinatorProxy",
    "FakeClock",
    "FaultFired",
    "FaultRule",
    "Faults",
    "RequestRecord",
    "alter_group_configs",
    "create_topic",
    "produce",
    "start_broker",
]


if not TYPE_CHECKING:  # type checkers see the imports above
    __getattr__ = lazy_getattr(__name__, _LAZY)
