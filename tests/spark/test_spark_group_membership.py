"""How a streaming query's driver lives in the consumer group: static membership, and lost partitions.

* ``group.instance.id`` (KIP-345): the query's consumer is a static member. Stopping the query
  does not leave the group, and a restart within ``session.timeout.ms`` takes the member's place
  again without a rebalance (the coordinator replaces the member id and keeps the generation).
* A partition **lost** to another application: a micro-batch longer than ``max.poll.interval.ms``
  makes the driver leave the group (KIP-62) with that batch in flight; another member of the group
  takes the partitions at the group's committed offsets and so reads that batch again. When the
  partitions come back, the query goes on from the further of its checkpoint and the group's
  offsets: it reads nothing twice and skips nothing the group has not processed (docs/spark.md,
  "Lost partitions").

The group runs through the coordinator proxy (``kafka_cluster``), whose event log shows what the
coordinator did.
"""

from __future__ import annotations

import threading

from kgroup import Consumer, ConsumerConfig
from tests.spark.conftest import wait_for
from tests.spark.test_spark_source import committed_offsets
from tests.spark.test_spark_source_options import TIMEOUT_S, BatchSink, _processing_time_query, produce

_REBALANCING = ("rebalance_started", "generation_completed", "pending_member_added")


def test_a_static_member_restarted_within_its_session_takes_its_place_back_without_a_rebalance(
    spark, kafka_cluster, topic_factory, group_id_factory, tmp_path
):
    topic = topic_factory(2)
    group = group_id_factory()
    bootstrap = kafka_cluster.bootstrap_servers
    checkpoint = str(tmp_path / "ckpt")
    static = {"group.instance.id": "billing-0", "session.timeout.ms": "30000", "heartbeat.interval.ms": "1000"}
    sink = BatchSink(by_batch_id=True)  # a batch cut off by query.stop() runs again on restart

    def run_until(rows: set[tuple]) -> None:
        query = _processing_time_query(spark, kafka_cluster, topic, group, checkpoint, sink, **static)
        try:
            wait_for(lambda: rows <= set(sink.rows), TIMEOUT_S, f"{len(rows)} rows")
        finally:
            query.stop()
        assert query.exception() is None

    first = produce(bootstrap, topic, 2, "one", 20)
    run_until(first)
    before = kafka_cluster.model_events(group)
    assert [e.detail for e in before if e.kind == "member_added"] == ["static billing-0"]
    # stopped: the static member did not leave (no LeaveGroup), its session still runs
    assert not [e for e in before if e.kind == "member_removed"]
    second = produce(bootstrap, topic, 2, "two", 20)
    run_until(first | second)
    after = kafka_cluster.model_events(group)[len(before):]
    replaced = [e for e in after if e.kind == "static_member_replaced"]
    assert len(replaced) == 1
    # Kafka's replaceStaticMember: the old member id is fenced, the new one takes its assignment
    removed = [e for e in after if e.kind == "member_removed"]
    assert [(e.detail, e.member_id in replaced[0].detail) for e in removed] == [("fenced", True)]
    assert [e for e in after if e.kind in _REBALANCING] == [], "the restart rebalanced the group"
    assert sink.replayed_differently == [], "a batch Spark ran again read other records"
    assert sorted(sink.rows) == sorted(first | second), "a record was read twice or lost across the restart"


def test_partitions_lost_to_another_application_mid_stream(
    spark, kafka_cluster, topic_factory, group_id_factory, tmp_path
):
    topic = topic_factory(2)
    group = group_id_factory()
    bootstrap = kafka_cluster.bootstrap_servers
    blocked, release = threading.Event(), threading.Event()
    in_flight: set[tuple] = set()

    def stall_the_second_phase(batch_id: int, rows: list) -> None:
        if not blocked.is_set() and any(bytes(r.value).startswith(b"two") for r in rows):
            in_flight.update((r.topic, r.partition, r.offset, bytes(r.value)) for r in rows)
            blocked.set()
            release.wait(TIMEOUT_S)  # longer than max.poll.interval.ms: the driver leaves the group

    sink = BatchSink(stall_the_second_phase)
    query = _processing_time_query(
        spark, kafka_cluster, topic, group, str(tmp_path / "ckpt"), sink, **{"max.poll.interval.ms": "4000"}
    )
    other: Consumer | None = None
    read_by_other: set[tuple] = set()

    def removals() -> int:
        return sum(e.kind == "member_removed" for e in kafka_cluster.model_events(group))

    try:
        phase1 = produce(bootstrap, topic, 2, "one", 20)
        wait_for(lambda: phase1 <= set(sink.rows), TIMEOUT_S, "phase 1")
        wait_for(lambda: committed_offsets(bootstrap, group, topic, 2) == {0: 10, 1: 10}, TIMEOUT_S,
                 "the group commit of phase 1")
        phase2 = produce(bootstrap, topic, 2, "two", 10)
        wait_for(blocked.is_set, TIMEOUT_S, "the query's batch of phase 2")
        removed_before = removals()
        wait_for(lambda: removals() > removed_before, TIMEOUT_S,
                 "the driver to leave the group (max.poll.interval.ms) while its batch is stalled")
        # another application of the group takes both partitions at the group's offsets (10, 10)
        other = Consumer(ConsumerConfig(
            bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=6000, heartbeat_interval_ms=1000,
            enable_auto_commit=False, auto_offset_reset="earliest",
        ))
        other.subscribe([topic])

        def other_reads(wanted: set[tuple]) -> bool:
            assert other is not None
            records = other.poll(200)
            read_by_other.update((r.topic, r.partition, r.offset, r.value) for r in records)
            return wanted <= read_by_other

        wait_for(lambda: other_reads(phase2), TIMEOUT_S, "the other application to read phase 2")
        phase3 = produce(bootstrap, topic, 2, "three", 10)
        wait_for(lambda: other_reads(phase3), TIMEOUT_S, "the other application to read phase 3")
        other.commit()
        other.close()
        other = None
        assert committed_offsets(bootstrap, group, topic, 2) == {0: 20, 1: 20}
        release.set()
        # the query's next trigger: partitions lost (no commit), the group joined again, all assigned back
        phase4 = produce(bootstrap, topic, 2, "four", 10)
        wait_for(lambda: phase4 <= set(sink.rows), TIMEOUT_S, "phase 4")
        wait_for(lambda: committed_offsets(bootstrap, group, topic, 2) == {0: 25, 1: 25}, TIMEOUT_S,
                 "the group commit of phase 4")
    finally:
        release.set()
        if other is not None:
            other.close()
        query.stop()
    assert query.exception() is None
    rows = sink.rows
    assert len(rows) == len(set(rows)), "the query read a record twice"
    assert in_flight and in_flight <= phase2
    # what replays: exactly the batch in flight when the partitions were lost (its group commit never happened)
    assert set(rows) & read_by_other == in_flight
    # what does not: the query skips what the other application committed (the group is ahead of the
    # checkpoint), and the other application never saw what the query had committed before
    assert set(rows) == phase1 | in_flight | phase4
    assert read_by_other == phase2 | phase3
