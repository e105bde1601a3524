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

4. the hold itself, with Apache Kafka's own coordinator behind a ``CoordinatorProxy`` in
   ``coordinator="upstream"`` mode: member A (through the proxy) and member B (direct) share a
   group whose session timeout is 6 s; the proxy then swallows A's ConsumerGroupHeartbeats (its
   fetches still flow, on their own connection). Kafka removes A after the session timeout and
   gives A's partition to B. A must hand out no record of that partition once B has it: its
   session timer holds the hand-out from 6 s after its last answered heartbeat was sent. With
   the timer taken out (Java's behaviour), A goes on handing the partition's records out while B
   processes them too: the test's check fails, which shows the check can see it.

The unit tests and the simulator cover the hold's every path (tests/unit/test_kip848_session_timer.py,
tests/simulation/test_consumer_protocol.py). No fixed sleeps: every wait is a condition with a deadline.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import kgroup
from kgroup import TopicPartition
from kgroup.membership.consumer_group import ConsumerGroupMachine
from kgroup.testing import BrokerHandle, create_topic, start_broker
from kgroup.testing.proxy import CoordinatorProxy
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


HOLD_SESSION_MS = 6000


class _Owned(kgroup.RebalanceListener):
    """When the member got each partition it owns (monotonic seconds)."""

    def __init__(self) -> None:
        self.assigned_at: dict[TopicPartition, float] = {}

    def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        now = time.monotonic()
        for tp in partitions:
            self.assigned_at[tp] = now

    def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        for tp in partitions:
            self.assigned_at.pop(tp, None)

    def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self.on_partitions_revoked(partitions)


def _produce_until(bootstrap: str, topic: str, stop: threading.Event) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        n = 0
        while not stop.wait(0.01):  # a steady stream: 100 records/s per partition
            for partition in (0, 1):
                producer.send(topic, value=b"%d" % n, partition=partition)
            n += 1
        producer.flush(10)
    finally:
        producer.close(timeout=10)


@pytest.mark.parametrize("timer", ["kgroup", "without the session timer"])
def test_a_member_whose_heartbeats_go_unanswered_stops_handing_out_before_kafka_moves_its_partition(
    session_broker: BrokerHandle, monkeypatch: pytest.MonkeyPatch, timer: str
) -> None:
    if timer != "kgroup":
        monkeypatch.setattr(ConsumerGroupMachine, "_settle_session", lambda self, now: None)
        monkeypatch.setattr(ConsumerGroupMachine, "_hold_at", lambda self: math.inf)
    bootstrap = session_broker.bootstrap_servers
    topic = f"session-hold-{time.monotonic_ns()}"
    group = f"session-hold-{time.monotonic_ns()}"
    create_topic(bootstrap, topic, 2)
    _set_group_session_timeout(bootstrap, group, HOLD_SESSION_MS)
    stop = threading.Event()
    producer = threading.Thread(target=_produce_until, args=(bootstrap, topic, stop), daemon=True)
    producer.start()
    a_listener, b_listener = _Owned(), _Owned()
    handed: dict[str, list[tuple[float, TopicPartition, int]]] = {"a": [], "b": []}
    with CoordinatorProxy(bootstrap, coordinator="upstream") as proxy:
        a: kgroup.Consumer[bytes, bytes] = kgroup.Consumer(
            bootstrap_servers=proxy.bootstrap_servers, group_id=group, group_protocol="consumer",
            client_id=f"{group}-a", auto_offset_reset="earliest", request_timeout_ms=20000,
        )
        b: kgroup.Consumer[bytes, bytes] = kgroup.Consumer(
            bootstrap_servers=bootstrap, group_id=group, group_protocol="consumer", client_id=f"{group}-b",
            auto_offset_reset="earliest",
        )
        members = {"a": a, "b": b}

        def poll_both() -> None:
            for name, consumer in members.items():
                records = consumer.poll(20)
                now = time.monotonic()
                handed[name] += [(now, r.topic_partition, r.offset) for r in records]

        try:
            a.subscribe([topic], listener=a_listener)
            b.subscribe([topic], listener=b_listener)

            def split() -> bool:
                poll_both()
                return (
                    len(a.assignment()) == 1 and len(b.assignment()) == 1 and bool(handed["a"])
                    and _session_timeout_read(a) == HOLD_SESSION_MS  # the timer runs once the member knows it
                )

            wait_until(split, DEADLINE_S, "A and B own one partition each, A knows its session timeout",
                       interval_s=0.0)
            (moved,) = a.assignment()
            assert moved not in b_listener.assigned_at
            proxy.faults.drop(api="ConsumerGroupHeartbeat", client_id=f"{group}-a")
            dropped_at = time.monotonic()

            def b_took_it_and_consumed() -> bool:
                # both members keep polling for 2 s after B got the partition: long enough for A to
                # hand records of it out, if it would
                poll_both()
                got = b_listener.assigned_at.get(moved)
                return (
                    got is not None and time.monotonic() >= got + 2.0
                    and sum(1 for t, tp, _ in handed["b"] if tp == moved and t > got) >= 50
                )

            wait_until(b_took_it_and_consumed, DEADLINE_S, "B got A's partition and consumed from it", interval_s=0.0)
            b_got_at = b_listener.assigned_at[moved]
            after = [(t, o) for t, tp, o in handed["a"] if tp == moved and t > b_got_at]
            last_a = max(t for t, tp, _ in handed["a"] if tp == moved)
            print(f"\n[{timer}] A's heartbeats dropped; B got {moved} {b_got_at - dropped_at:.2f} s later; A's last "
                  f"record of it {last_a - dropped_at:.2f} s after the drop; {len(after)} handed out by A after "
                  "B had it")
            if timer == "kgroup":
                assert after == [], f"A handed out {len(after)} records of {moved} after Kafka gave it to B"
            else:
                assert after, "without the session timer A should have gone on handing out the partition"
        finally:
            stop.set()
            proxy.faults.clear()
            for consumer in members.values():
                consumer.close(timeout_ms=5000)
            producer.join(timeout=20)
