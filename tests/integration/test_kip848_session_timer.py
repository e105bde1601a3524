"""The consumer-protocol member reads its group's session timeout from Apache Kafka 4.4 (DescribeConfigs).

Under KIP-848 the session timeout is the broker's ``group.consumer.session.timeout.ms``, or the
group's own ``consumer.session.timeout.ms``; the member is not told it. kgroup's member asks
DescribeConfigs (resource type GROUP) once it has joined, for its session timer
(docs/kip848.md, "Beyond Java: the session timer"). On a node of its own with
``group.consumer.session.timeout.ms=20000``:

1. a ``Consumer(group_protocol="consumer")`` that joined a group without its own config reads
   20000 ms (the broker's value, ``STATIC_BROKER_CONFIG``);
2. a group given ``consumer.session.timeout.ms=12000`` with IncrementalAlterConfigs before its
   member joins: the member reads 12000 ms;
3. the member logs the value it learned.

The hold itself (no hand-out once the session may have expired) is the unit tests' and the
simulator's (tests/unit/test_kip848_session_timer.py, tests/simulation/test_consumer_protocol.py).
No fixed sleeps: every wait is a condition with a deadline.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest

import kgroup
from kgroup.testing import BrokerHandle, create_topic, start_broker
from tests.integration.harness import wait_until

pytestmark = pytest.mark.broker_kinds("apache-kafka")

BROKER_SESSION_MS = 20_000
GROUP_SESSION_MS = 12_000
DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def session_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerHandle]:
    """An Apache Kafka node of its own whose consumer groups' session timeout is 20 s."""
    from kgroup.testing import apache_kafka

    apache_kafka.skip_if_unavailable()
    overrides = {
        "group.initial.rebalance.delay.ms": 0,
        "group.consumer.session.timeout.ms": BROKER_SESSION_MS,
        "group.consumer.min.session.timeout.ms": 6000,
        "group.consumer.heartbeat.interval.ms": 1000,
        "group.consumer.min.heartbeat.interval.ms": 1000,
    }
    with start_broker(kind="apache-kafka", overrides=overrides,
                      log_dir=tmp_path_factory.mktemp("kip848-session-timer")) as broker:
        yield broker


def _set_group_session_timeout(bootstrap: str, group: str, ms: int) -> None:
    """The group's own ``consumer.session.timeout.ms`` (IncrementalAlterConfigs on resource type GROUP)."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="session-timer-test")
    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, group,
                                            configs={"consumer.session.timeout.ms": str(ms)})])
    finally:
        admin.close()


def _session_timeout_read(consumer: kgroup.Consumer[Any, Any]) -> int | None:
    group = consumer._group
    return None if group is None else group.consumer_session_timeout_ms


def _join(bootstrap: str, group: str, topic: str) -> tuple[kgroup.Consumer[bytes, bytes], float]:
    consumer: kgroup.Consumer[bytes, bytes] = kgroup.Consumer(
        bootstrap_servers=bootstrap, group_id=group, group_protocol="consumer", auto_offset_reset="earliest",
        client_id=f"{group}-member",
    )
    consumer.subscribe([topic])
    started = time.monotonic()
    wait_until(lambda: (consumer.poll(100) is not None) and _session_timeout_read(consumer) is not None,
               DEADLINE_S, f"{group}: the member learned no session timeout")
    return consumer, time.monotonic() - started


def test_the_member_reads_the_broker_session_timeout_and_a_group_override(
    session_broker: BrokerHandle, caplog: pytest.LogCaptureFixture
) -> None:
    bootstrap = session_broker.bootstrap_servers
    topic = f"session-timer-{time.monotonic_ns()}"
    create_topic(bootstrap, topic, 2)
    caplog.set_level(logging.INFO, logger="kgroup.membership.consumer_group")

    plain = f"plain-{time.monotonic_ns()}"
    consumer, took_s = _join(bootstrap, plain, topic)
    try:
        assert _session_timeout_read(consumer) == BROKER_SESSION_MS
        assert consumer.group_metadata().generation_id > 0
    finally:
        consumer.close()
    print(f"\nbroker value: subscribe to session timeout known {took_s:.2f} s")

    tuned = f"tuned-{time.monotonic_ns()}"
    _set_group_session_timeout(bootstrap, tuned, GROUP_SESSION_MS)
    consumer, took_s = _join(bootstrap, tuned, topic)
    try:
        assert _session_timeout_read(consumer) == GROUP_SESSION_MS
    finally:
        consumer.close()
    print(f"group override: subscribe to session timeout known {took_s:.2f} s")

    learned = [r.getMessage() for r in caplog.records if "the group's session timeout is" in r.getMessage()]
    assert any(f"{BROKER_SESSION_MS} ms" in m for m in learned), learned
    assert any(f"{GROUP_SESSION_MS} ms" in m for m in learned), learned
