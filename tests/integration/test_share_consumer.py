"""``kgroup.ShareConsumer`` end to end on Apache Kafka 4.4 (KIP-932): fetch, acknowledge, redeliver, share.

Apache Kafka 4.4 from ``kgroup.testing`` serves share groups as it is (docs/share-groups.md). A
share group starts reading a partition at its end (the group's ``share.auto.offset.reset`` is
``latest``), from the moment a member first fetches it: each test waits until every member has
had a ShareFetch answered (``acquisition_lock_timeout_ms()`` is known) before producing.

What it shows: implicit mode consumes every record once and accepts it; explicit mode's
RELEASE redelivers (``delivery_count`` 2) and REJECT never does; the records a closed member
held go to another member; four members on one partition all get records; explicit mode
refuses a ``poll()`` with a record left unacknowledged; ``commit_sync()`` answers per partition; the
records a killed member (SIGKILL, ``tests/integration/share_worker.py``) held go to another; a
member that stops polling past ``max_poll_interval_ms`` leaves (the other gets its partitions and
their records) and its next ``poll()`` rejoins. And on Tansu, which serves no share groups, the
consumer fails with ``FatalGroupError``.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kgroup import AcknowledgeType, ShareConsumer
from kgroup._error_codes import UNSUPPORTED_VERSION
from kgroup.admin import GroupAdmin
from kgroup.errors import SHARE_GROUPS_NOT_SUPPORTED, FatalGroupError, IllegalStateError, WakeupError
from kgroup.testing.broker import alter_group_configs, produce
from kgroup.types import ShareConsumerRecord, TopicPartition

pytestmark = pytest.mark.broker_kinds("apache-kafka")

DEADLINE_S = 90.0
T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float = DEADLINE_S) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        result = probe()
        if result is not None and result is not False:
            return result
        if time.monotonic() >= deadline:
            pytest.fail(f"{what}: not true after {timeout_s} s")


def until_fetching(*consumers: ShareConsumer[Any, Any]) -> list[ShareConsumerRecord[Any, Any]]:
    """Poll each until it has partitions and a ShareFetch answered (nothing produced yet: no records)."""
    got: list[ShareConsumerRecord[Any, Any]] = []
    for consumer in consumers:
        def ready(c: ShareConsumer[Any, Any] = consumer) -> bool:
            got.extend(c.poll(200))
            return bool(c.assignment()) and c.acquisition_lock_timeout_ms() is not None
        wait_for("a member fetching", ready)
    return got


def values(records: list[ShareConsumerRecord[Any, Any]]) -> list[bytes]:
    return sorted(r.value for r in records)


def test_implicit_mode_consumes_every_record_once(kafka_bootstrap: str, topic_factory: Any,
                                                  group_id_factory: Any, share_consumers: Any) -> None:
    topic = topic_factory(3)
    consumer = share_consumers(group_id_factory(), topic)
    assert until_fetching(consumer) == []
    assert consumer.acquisition_lock_timeout_ms() == 30000  # the broker's group.share.record.lock.duration.ms
    sent = [(p, None, f"v{i}".encode()) for i, p in enumerate([0, 1, 2] * 20)]
    produce(kafka_bootstrap, topic, sent)
    got: list[ShareConsumerRecord[Any, Any]] = []
    wait_for("all 60 records", lambda: (got.extend(consumer.poll(500)), len(got) >= 60)[1])
    assert values(got) == sorted(v for _, _, v in sent)
    assert all(r.delivery_count == 1 for r in got)
    assert {r.partition for r in got} == {0, 1, 2}
    # accepted at the next poll: nothing comes back, not even after the lock would have expired
    outcome = consumer.commit_sync(30000)
    assert outcome == {} or all(error is None for error in outcome.values()), outcome
    assert consumer.poll(2000) == []
    # Java's KafkaShareConsumer metrics: 60 records acquired and acknowledged, heartbeats answered
    metrics = consumer.metrics()
    assert metrics["records-consumed-total"] == 60 and metrics["bytes-consumed-total"] > 0
    assert metrics["acknowledgements-send-total"] >= 60 and metrics["acknowledgements-error-total"] == 0
    assert metrics["fetch-total"] >= 2 and metrics["fetch-latency-max"] >= 0
    assert metrics["heartbeat-total"] >= 1 and metrics["rebalance-total"] >= 1
    assert 0 <= metrics["last-heartbeat-seconds-ago"] < 30 and metrics["last-poll-seconds-ago"] >= 0
    wait_for("a ready share member", lambda: (consumer.poll(100), consumer.health().ready)[1])
    assert consumer.health().live and consumer.health().assigned_partitions == 3


def test_explicit_release_redelivers_and_reject_does_not(kafka_bootstrap: str, topic_factory: Any,
                                                          group_id_factory: Any, share_consumers: Any) -> None:
    topic = topic_factory(1)
    consumer = share_consumers(group_id_factory(), topic, share_acknowledgement_mode="explicit")
    until_fetching(consumer)
    produce(kafka_bootstrap, topic, [(0, None, b"release-me"), (0, None, b"reject-me"), (0, None, b"accept-me")])
    first: list[ShareConsumerRecord[Any, Any]] = []
    while len(first) < 3:
        batch = wait_for("the three records", lambda: consumer.poll(500) or None)
        for record in batch:
            kind = {b"release-me": AcknowledgeType.RELEASE, b"reject-me": AcknowledgeType.REJECT}.get(
                record.value, AcknowledgeType.ACCEPT)
            consumer.acknowledge(record, type=kind)
        first.extend(batch)
    assert values(first) == [b"accept-me", b"reject-me", b"release-me"]
    assert all(r.delivery_count == 1 for r in first)
    again = wait_for("the released record again", lambda: consumer.poll(500) or None)
    assert [(r.value, r.delivery_count) for r in again] == [(b"release-me", 2)]
    consumer.acknowledge(again[0].topic, again[0].partition, again[0].offset, AcknowledgeType.ACCEPT)
    outcome = consumer.commit_sync(30000)
    assert outcome == {TopicPartition(topic, 0): None}
    assert consumer.poll(2000) == []  # the rejected one never comes back


def test_explicit_mode_refuses_a_poll_with_a_record_unacknowledged(kafka_bootstrap: str, topic_factory: Any,
                                                                    group_id_factory: Any,
                                                                    share_consumers: Any) -> None:
    topic = topic_factory(1)
    consumer = share_consumers(group_id_factory(), topic, share_acknowledgement_mode="explicit")
    until_fetching(consumer)
    produce(kafka_bootstrap, topic, [(0, None, b"a"), (0, None, b"b")])
    got = wait_for("records", lambda: consumer.poll(500) or None)
    with pytest.raises(IllegalStateError, match="explicit acknowledgement mode"):
        consumer.poll(0)
    with pytest.raises(IllegalStateError):
        consumer.acknowledge(got[0].topic, got[0].partition, got[0].offset + 100, AcknowledgeType.ACCEPT)
    for record in got:
        consumer.acknowledge(record)
    with pytest.raises(IllegalStateError, match="cannot be acknowledged"):
        consumer.acknowledge(got[0])  # twice
    consumer.poll(0)  # everything acknowledged: allowed again
    consumer.wakeup()
    with pytest.raises(WakeupError):
        consumer.poll(30000)
    assert consumer.poll(0) == []  # the wakeup was consumed


def test_renew_extends_the_lock_and_the_record_still_needs_its_acknowledgement(
    kafka_bootstrap: str, topic_factory: Any, group_id_factory: Any, share_consumers: Any
) -> None:
    """RENEW (KIP-1222, ShareAcknowledge v2 with IsRenewAck): answered without error; the record stays in flight."""
    topic = topic_factory(1)
    consumer = share_consumers(group_id_factory(), topic, share_acknowledgement_mode="explicit")
    until_fetching(consumer)
    produce(kafka_bootstrap, topic, [(0, None, b"slow")])
    (record,) = wait_for("the record", lambda: consumer.poll(500) or None)
    consumer.acknowledge(record, type=AcknowledgeType.RENEW)
    assert consumer.commit_sync(30000) == {TopicPartition(topic, 0): None}
    with pytest.raises(IllegalStateError):
        consumer.poll(0)  # renewed, not acknowledged
    consumer.acknowledge(record, type=AcknowledgeType.ACCEPT)
    assert consumer.commit_sync(30000) == {TopicPartition(topic, 0): None}
    assert consumer.poll(2000) == []


def test_record_limit_acquires_at_most_max_poll_records(kafka_bootstrap: str, topic_factory: Any,
                                                        group_id_factory: Any, share_consumers: Any) -> None:
    """``share_acquire_mode="record_limit"`` (KIP-1206, ShareFetch v2): a fetch acquires no more than
    ``max_poll_records`` of one batch, so another member gets the rest at once (batch-optimized, the holder
    would have acquired the whole batch and the other would wait for the lock timeout)."""
    topic = topic_factory(1)
    group_id = group_id_factory()
    holder = share_consumers(group_id, topic, max_poll_records=5, share_acquire_mode="record_limit",
                             share_acknowledgement_mode="explicit")
    until_fetching(holder)
    produce(kafka_bootstrap, topic, [(0, None, f"b{i:02}".encode()) for i in range(50)])  # one batch
    held = wait_for("the holder's five", lambda: holder.poll(500) or None)
    assert len(held) == 5
    other = share_consumers(group_id, topic)
    got: list[ShareConsumerRecord[Any, Any]] = []
    wait_for("the other 45", lambda: (got.extend(other.poll(500)), len(got) >= 45)[1], timeout_s=25.0)
    assert values(got + held) == sorted(f"b{i:02}".encode() for i in range(50))
    assert all(r.delivery_count == 1 for r in got)  # not redelivered after a lock timeout: never acquired


def test_unsubscribe_leaves_and_a_new_subscription_joins_again(kafka_bootstrap: str, topic_factory: Any,
                                                              group_id_factory: Any, share_consumers: Any) -> None:
    topic = topic_factory(1)
    consumer = share_consumers(group_id_factory(), topic, value_deserializer=bytes.decode)
    until_fetching(consumer)
    member_id = consumer.member_id
    consumer.unsubscribe()
    assert consumer.subscription() == frozenset() and consumer.assignment() == frozenset()
    with pytest.raises(IllegalStateError):
        consumer.poll(0)
    consumer.subscribe([topic])
    assert consumer.subscription() == frozenset({topic})
    until_fetching(consumer)
    produce(kafka_bootstrap, topic, [(0, None, b"again")])
    got = wait_for("a record after joining again", lambda: consumer.poll(500) or None)
    assert [r.value for r in got] == ["again"]  # value_deserializer, as on Consumer
    assert consumer.member_id == member_id  # kept for the consumer's lifetime


def test_commit_sync_answers_per_partition_and_runs_the_callback(kafka_bootstrap: str, topic_factory: Any,
                                                                 group_id_factory: Any,
                                                                 share_consumers: Any) -> None:
    topic = topic_factory(2)
    consumer = share_consumers(group_id_factory(), topic)
    called: list[tuple[dict[TopicPartition, frozenset[int]], Any]] = []
    consumer.set_acknowledgement_commit_callback(lambda offsets, error: called.append((dict(offsets), error)))
    until_fetching(consumer)
    produce(kafka_bootstrap, topic, [(p, None, b"x") for p in (0, 1, 0, 1)])
    got: list[ShareConsumerRecord[Any, Any]] = []
    wait_for("four records", lambda: (got.extend(consumer.poll(500)), len(got) >= 4)[1])
    outcome = consumer.commit_sync(30000)
    assert outcome == {TopicPartition(topic, 0): None, TopicPartition(topic, 1): None}
    acknowledged: dict[TopicPartition, set[int]] = {}
    for offsets, error in called:
        assert error is None
        for tp, numbers in offsets.items():
            acknowledged.setdefault(tp, set()).update(numbers)
    assert acknowledged == {TopicPartition(topic, 0): {0, 1}, TopicPartition(topic, 1): {0, 1}}
    assert consumer.commit_sync(1000) == {}  # nothing due


def test_records_a_closed_member_held_go_to_another(kafka_bootstrap: str, topic_factory: Any,
                                                    group_id_factory: Any, share_consumers: Any) -> None:
    topic = topic_factory(1)
    group_id = group_id_factory()
    holder = share_consumers(group_id, topic, share_acknowledgement_mode="explicit")
    until_fetching(holder)
    produce(kafka_bootstrap, topic, [(0, None, f"r{i}".encode()) for i in range(5)])
    held: list[ShareConsumerRecord[Any, Any]] = []
    wait_for("the holder acquires all five", lambda: (held.extend(holder.poll(500)), len(held) >= 5)[1])
    other = share_consumers(group_id, topic)
    holder.close(timeout_ms=30000)  # nothing acknowledged: the session's close releases them
    got: list[ShareConsumerRecord[Any, Any]] = []
    wait_for("the other member gets them", lambda: (got.extend(other.poll(500)), len(got) >= 5)[1])
    assert values(got) == values(held)
    assert all(r.delivery_count == 2 for r in got)


def test_more_members_than_partitions_all_get_records(kafka_bootstrap: str, topic_factory: Any,
                                                      group_id_factory: Any, share_consumers: Any) -> None:
    topic = topic_factory(1)
    group_id = group_id_factory()
    members = [share_consumers(group_id, topic, max_poll_records=5, share_acquire_mode="record_limit")
               for _ in range(4)]
    until_fetching(*members)
    assert all(m.assignment() == frozenset({TopicPartition(topic, 0)}) for m in members)
    produce(kafka_bootstrap, topic, [(0, None, f"m{i}".encode()) for i in range(400)])
    got: dict[int, list[ShareConsumerRecord[Any, Any]]] = {i: [] for i in range(4)}

    def round_robin() -> bool:
        for i, member in enumerate(members):
            records = member.poll(100)
            assert len(records) <= 5  # max_poll_records, strictly (record_limit, ShareFetch v2)
            got[i].extend(records)
        return sum(len(v) for v in got.values()) >= 400 and all(got.values())

    wait_for("every member gets records, together all 400", round_robin)
    everything = [r for v in got.values() for r in v]
    assert values(everything) == sorted(f"m{i}".encode() for i in range(400))
    print("\nrecords per member:", [len(v) for v in got.values()])


def test_records_a_killed_member_held_go_to_another(kafka_bootstrap: str, topic_factory: Any,
                                                    group_id_factory: Any, share_consumers: Any) -> None:
    """SIGKILL, no close: the broker releases the dead member's records (its connection's share session, or at
    the latest the acquisition lock timeout) and another member gets them, delivered a second time."""
    topic = topic_factory(1)
    group_id = group_id_factory()
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.share_worker", kafka_bootstrap, group_id, topic, "5"],
        stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "fetching"
        produce(kafka_bootstrap, topic, [(0, None, f"k{i}".encode()) for i in range(5)])
        held = worker.stdout.readline().split()
        assert held == ["held"] + [f"k{i}" for i in range(5)]
        other = share_consumers(group_id, topic)
        assert until_fetching(other) == []  # a member of the group, fetching: the worker holds every record
        started = time.monotonic()
        worker.send_signal(signal.SIGKILL)
        worker.wait(30)
        got: list[ShareConsumerRecord[Any, Any]] = []
        wait_for("the other member gets them", lambda: (got.extend(other.poll(500)), len(got) >= 5)[1])
        elapsed, lock_ms = time.monotonic() - started, other.acquisition_lock_timeout_ms()
        print(f"\nredelivered {elapsed:.1f} s after the kill (acquisition lock timeout {lock_ms} ms)")
        assert values(got) == [f"k{i}".encode() for i in range(5)]
        assert all(r.delivery_count == 2 for r in got)
        assert lock_ms is not None and elapsed <= lock_ms / 1000 + 1.0, (elapsed, lock_ms)  # KIP-932's bound, + 1 s
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(30)


def test_a_member_that_stops_polling_leaves_and_its_next_poll_rejoins(
    kafka_bootstrap: str, topic_factory: Any, group_id_factory: Any, share_consumers: Any
) -> None:
    """The poll watchdog (Java's ``max.poll.interval.ms``): no ``poll()`` for ``max_poll_interval_ms`` sends the
    leave heartbeat (epoch -1); the coordinator gives the member's partitions to the other, which gets their
    records; the stalled member's next ``poll()`` rejoins with the same member id and gets partitions again."""
    topic = topic_factory(3)
    group_id = group_id_factory()
    everything = frozenset(TopicPartition(topic, p) for p in range(3))
    alter_group_configs(kafka_bootstrap, group_id, {"share.auto.offset.reset": "earliest"})
    stalled = share_consumers(group_id, topic, max_poll_interval_ms=3000)
    other = share_consumers(group_id, topic)
    got: list[ShareConsumerRecord[Any, Any]] = []

    def split() -> bool:  # both members have partitions; the coordinator split them
        got.extend(stalled.poll(100))
        got.extend(other.poll(100))
        return bool(stalled.assignment()) and stalled.assignment() | other.assignment() == everything \
            and other.assignment() != everything
    wait_for("the two members share the three partitions", split)
    member_id = stalled.member_id
    with GroupAdmin.connect(kafka_bootstrap) as admin:
        stalled_at = time.monotonic()  # from here the stalled member does not poll
        wait_for("the other member has every partition",
                 lambda: (got.extend(other.poll(200)), other.assignment() == everything)[1], timeout_s=45.0)
        left_after = time.monotonic() - stalled_at
        members = {m.member_id for m in admin.describe_share_group(group_id).members}
        assert member_id not in members and len(members) == 1
        produce(kafka_bootstrap, topic, [(p, None, f"w{p}-{i}".encode()) for p in range(3) for i in range(5)])
        wait_for("the other member gets the stalled member's partitions' records",
                 lambda: (got.extend(other.poll(200)), len(got) >= 15)[1])
        assert values(got) == sorted(f"w{p}-{i}".encode() for p in range(3) for i in range(5))
        assert all(r.delivery_count == 1 for r in got)
        rejoined_at = time.monotonic()
        wait_for("the stalled member rejoins at its next poll()",  # the other polls too: it must not stall
                 lambda: (other.poll(100), stalled.poll(200), bool(stalled.assignment()))[2])
        assert stalled.member_id == member_id
        members = {m.member_id for m in admin.describe_share_group(group_id).members}
        assert members >= {member_id}
    print(f"\nleft and reassigned {left_after:.1f} s after the last poll (max_poll_interval_ms 3000); "
          f"rejoined with partitions {time.monotonic() - rejoined_at:.1f} s after polling again")


@pytest.mark.broker_kinds("tansu")
def test_a_cluster_without_share_groups_fails_the_consumer(kafka_bootstrap: str, topic_factory: Any,
                                                           group_id_factory: Any, share_consumers: Any) -> None:
    """Tansu serves no ShareGroupHeartbeat: ``poll()`` raises ``FatalGroupError`` (UNSUPPORTED_VERSION), then again."""
    topic = topic_factory(1)
    consumer = share_consumers(group_id_factory(), topic)

    def failed() -> FatalGroupError | None:
        try:
            consumer.poll(200)
        except FatalGroupError as exc:
            return exc
        return None

    error = wait_for("the fatal error", failed)
    assert error.code == UNSUPPORTED_VERSION and SHARE_GROUPS_NOT_SUPPORTED in str(error)
    with pytest.raises(FatalGroupError):
        consumer.poll(0)
