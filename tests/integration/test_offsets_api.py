"""Offset lookups and seeks with the Java consumer's semantics, on a real broker.

``beginning_offsets``/``end_offsets``/``offsets_for_times`` work without a subscription (as
Java's) and answer for any partition; ``seek_to_beginning``/``seek_to_end`` move only assigned
partitions; an unknown partition ends in ``KafkaTimeoutError`` at the caller's timeout.
"""

from __future__ import annotations

import time

import pytest
from kafka import KafkaProducer

import kgroup
from kgroup import TopicPartition

from .harness import BOTH, SESSION_TIMEOUT_MS, poll_records, wait_until

pytestmark = BOTH

BASE_TS = 1_700_000_000_000  # ms since the epoch

#: measured on Tansu 0.6: 5 then 3 records in two batches, ListOffsets(latest) answered 6 (the
#: last batch's base offset + 1, not the log end 8), and a timestamp lookup ignored the records'
#: timestamps (offset 0 with a timestamp no record has)
LIST_OFFSETS = (
    "ListOffsets: 'latest' answers the last batch's base offset + 1 instead of the log end, and "
    "a lookup by timestamp ignores the records' timestamps"
)


def _produce_with_timestamps(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    """Record i of partition p gets timestamp BASE_TS + 1000 * i."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        for p in range(partitions):
            for i in range(per_partition):
                producer.send(topic, value=b"%d-%d" % (p, i), partition=p, timestamp_ms=BASE_TS + 1000 * i)
        producer.flush(30)
    finally:
        producer.close()


def _consumer(bootstrap: str, group: str) -> kgroup.Consumer:
    return kgroup.Consumer(
        bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=1000, auto_offset_reset="earliest", enable_auto_commit=False,
    )


@pytest.mark.tansu_deviation(LIST_OFFSETS)
def test_lookups_need_no_subscription(kafka_bootstrap, topic_factory, group_id_factory):
    topic = topic_factory(partitions=2)
    _produce_with_timestamps(kafka_bootstrap, topic, 2, 5)
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    with _consumer(kafka_bootstrap, group_id_factory()) as consumer:
        assert consumer.beginning_offsets(tps) == {tps[0]: 0, tps[1]: 0}
        assert consumer.end_offsets(tps) == {tps[0]: 5, tps[1]: 5}
        found = consumer.offsets_for_times({tps[0]: BASE_TS + 2500, tps[1]: BASE_TS, })
        assert found[tps[0]] == kgroup.OffsetAndTimestamp(3, BASE_TS + 3000)
        assert found[tps[1]] == kgroup.OffsetAndTimestamp(0, BASE_TS)
        assert consumer.offsets_for_times({tps[0]: BASE_TS + 60_000}) == {tps[0]: None}
        with pytest.raises(ValueError, match="must be an int >= 0"):
            consumer.offsets_for_times({tps[0]: -5})
        assert consumer.assignment() == frozenset()
        with pytest.raises(kgroup.IllegalStateError):
            consumer.poll(0)  # still not subscribed


def test_an_unknown_partition_times_out_at_the_callers_timeout(kafka_bootstrap, topic_factory, group_id_factory):
    topic = topic_factory(partitions=1)
    with _consumer(kafka_bootstrap, group_id_factory()) as consumer:
        started = time.monotonic()
        with pytest.raises(kgroup.KafkaTimeoutError, match="not found within 2000 ms"):
            consumer.end_offsets([TopicPartition(topic, 0), TopicPartition(topic, 7)], timeout_ms=2000)
        took = time.monotonic() - started
        assert 1.0 <= took < 4.0, took


@pytest.mark.tansu_deviation(LIST_OFFSETS)
def test_seek_to_end_and_beginning_move_assigned_partitions(kafka_bootstrap, topic_factory, group_id_factory):
    topic = topic_factory(partitions=2)
    _produce_with_timestamps(kafka_bootstrap, topic, 2, 5)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with _consumer(kafka_bootstrap, group_id_factory()) as consumer:
        consumer.subscribe([topic])
        wait_until(lambda: (consumer.poll(100) or True) and len(consumer.assignment()) == 2, 60, "the assignment")
        with pytest.raises(kgroup.IllegalStateError, match="not assigned"):
            consumer.seek_to_end([TopicPartition(topic, 9)])
        consumer.seek_to_end()
        assert consumer.position(tp0) == 5 and consumer.position(tp1) == 5
        _produce_with_timestamps(kafka_bootstrap, topic, 1, 2)  # two more in partition 0
        got = poll_records(consumer, 2)
        assert [(r.partition, r.offset) for r in got] == [(0, 5), (0, 6)]
        consumer.seek_to_beginning([tp1])
        got = poll_records(consumer, 5)
        assert sorted((r.partition, r.offset) for r in got) == [(1, i) for i in range(5)]
        assert consumer.position(tp0) == 7


def test_list_topics_and_partitions_for_need_no_subscription(kafka_bootstrap, topic_factory, group_id_factory):
    """Java ``listTopics``/``partitionsFor`` (aiokafka ``topics()``/``partitions_for_topic()``):
    Metadata for any topic, no subscription; a topic that does not exist has no partitions and
    is not created; the asyncio consumer answers the same."""
    import asyncio

    import kgroup.aio

    topic = topic_factory(partitions=3)
    missing = f"never-created-{time.monotonic_ns()}"
    with _consumer(kafka_bootstrap, group_id_factory()) as consumer:
        parts = consumer.partitions_for(topic)
        assert [p.partition for p in parts] == [0, 1, 2]
        assert all(p.leader >= 0 for p in parts)
        listed = consumer.list_topics(timeout_ms=30000)
        assert [p.partition for p in listed[topic]] == [0, 1, 2]
        assert consumer.partitions_for(missing) == []
        assert missing not in consumer.list_topics()
        with pytest.raises(TypeError):
            consumer.partitions_for("")

    async def from_asyncio() -> list[int]:
        async with kgroup.aio.Consumer(bootstrap_servers=kafka_bootstrap, group_id=group_id_factory()) as consumer:
            assert topic in await consumer.list_topics()
            return [p.partition for p in await consumer.partitions_for(topic)]

    assert asyncio.run(from_asyncio()) == [0, 1, 2]
