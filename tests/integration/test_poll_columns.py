"""``Consumer.poll_columns()`` on a real broker: every record once, in order, with all its fields.

The records of ``test_consume_path`` (several batches per partition, a gzip-compressed round,
headers, null keys and values) taken as columns with a small ``max_records``: at most one
``RecordColumns`` per partition per call, at most ``max_records`` rows per call, offsets
contiguous, every field as produced; the positions and the commit cover exactly what was
returned, and ``poll()`` afterwards has nothing left.
"""

from __future__ import annotations

from typing import Any

import pytest

import kgroup
from kgroup import TopicPartition

from .harness import HEARTBEAT_MS, SESSION_TIMEOUT_MS, wait_until
from .test_consume_path import PARTITIONS, _produce

JOIN_BUDGET_S = 30.0


def test_poll_columns_hands_out_every_record_once_with_its_fields(
    kafka_bootstrap: str, topic_factory: Any, group_id_factory: Any
) -> None:
    topic = topic_factory(PARTITIONS)
    expected = _produce(kafka_bootstrap, topic)
    consumer: kgroup.Consumer[Any, Any] = kgroup.Consumer(
        bootstrap_servers=kafka_bootstrap, group_id=group_id_factory(), session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=HEARTBEAT_MS, auto_offset_reset="earliest", enable_auto_commit=False,
        value_deserializer=lambda b: b.decode(),  # not applied by poll_columns()
    )
    got: dict[tuple[int, int], tuple[Any, ...]] = {}
    calls: list[list[Any]] = []

    def poll() -> bool:
        fetched = consumer.poll_columns(100, max_records=7)
        if fetched:
            calls.append(fetched)
            for columns in fetched:
                tp = columns.topic_partition
                assert tp.topic == topic and len(columns) >= 1
                arrow = columns.to_arrow()
                assert arrow.num_rows == len(columns)
                assert arrow.column("offset").to_pylist() == list(columns.offsets)
                assert arrow.column("value").to_pylist() == list(columns.values)
                rows = zip(columns.offsets, columns.keys, columns.values, columns.headers, columns.timestamps,
                           columns.timestamp_types, strict=True)
                for offset, key, value, headers, timestamp, timestamp_type in rows:
                    assert (tp.partition, offset) not in got, f"{tp}@{offset} twice"
                    got[(tp.partition, offset)] = (key, value, tuple(headers), timestamp, timestamp_type)
        return len(got) >= len(expected)

    try:
        with pytest.raises(ValueError, match="max_records"):
            consumer.poll_columns(0, max_records=0)
        consumer.subscribe([topic])
        wait_until(poll, JOIN_BUDGET_S, f"{len(expected)} records")
        assert set(got) == set(expected)
        for fetched in calls:
            assert sum(map(len, fetched)) <= 7
            partitions = [c.topic_partition for c in fetched]
            assert len(partitions) == len(set(partitions)), "a partition twice in one call"
            for columns in fetched:
                assert list(columns.offsets) == list(range(columns.offsets[0], columns.offsets[0] + len(columns)))
        for where, (key, value, headers, timestamp, timestamp_type) in got.items():
            exp_key, exp_value, exp_headers = expected[where]
            assert (key, value, headers) == (exp_key, exp_value, tuple(exp_headers))  # raw bytes
            assert timestamp > 0 and timestamp_type == 0
        ends = {p: 1 + max(o for q, o in expected if q == p) for p in range(PARTITIONS)}
        for p in range(PARTITIONS):
            assert consumer.position(TopicPartition(topic, p)) == ends[p]
        consumer.commit()
        committed = consumer.committed({TopicPartition(topic, p) for p in range(PARTITIONS)})
        assert {tp.partition: om.offset for tp, om in committed.items() if om is not None} == ends
        assert consumer.poll(300) == []  # nothing left, nothing twice
    finally:
        consumer.close()


def test_aio_poll_columns_hands_out_every_record_once(
    kafka_bootstrap: str, topic_factory: Any, group_id_factory: Any
) -> None:
    """``kgroup.aio.Consumer.poll_columns()``: the same records as columns, the commit after them."""
    import asyncio

    from kgroup import aio

    topic = topic_factory(PARTITIONS)
    expected = _produce(kafka_bootstrap, topic)

    async def run() -> tuple[dict[tuple[int, int], tuple[Any, ...]], dict[int, int]]:
        got: dict[tuple[int, int], tuple[Any, ...]] = {}
        consumer: aio.Consumer[Any, Any] = aio.Consumer(
            bootstrap_servers=kafka_bootstrap, group_id=group_id_factory(), session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_MS, auto_offset_reset="earliest", enable_auto_commit=False,
        )
        async with consumer:
            with pytest.raises(ValueError, match="max_records"):
                await consumer.poll_columns(0, max_records=0)
            await consumer.subscribe([topic])
            loop = asyncio.get_running_loop()
            deadline = loop.time() + JOIN_BUDGET_S
            while len(got) < len(expected) and loop.time() < deadline:
                for columns in await consumer.poll_columns(200, max_records=5):
                    assert sum(1 for _ in columns.offsets) == len(columns) <= 5
                    tp = columns.topic_partition
                    for offset, key, value, headers in zip(columns.offsets, columns.keys, columns.values,
                                                           columns.headers, strict=True):
                        assert (tp.partition, offset) not in got, f"{tp}@{offset} twice"
                        got[(tp.partition, offset)] = (key, value, tuple(headers))
            await consumer.commit()
            committed = await consumer.committed({TopicPartition(topic, p) for p in range(PARTITIONS)})
            assert await consumer.poll(300) == []  # nothing left, nothing twice
        return got, {tp.partition: om.offset for tp, om in committed.items() if om is not None}

    got, committed = asyncio.run(run())
    assert got == {where: (k, v, tuple(h)) for where, (k, v, h) in expected.items()}
    assert committed == {p: 1 + max(o for q, o in expected if q == p) for p in range(PARTITIONS)}
