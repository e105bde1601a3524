"""``kgroup.aio.ShareConsumer`` end to end on Apache Kafka 4.4 (KIP-932): the share consumer from an event loop.

What it shows: implicit mode consumes every record once (and ``metrics()``/``health()`` report
the member); explicit mode's RELEASE redelivers (``delivery_count`` 2) with the acknowledgement
commit callback run on the loop; polls cancelled over and over (``asyncio.wait_for`` with a
short timeout) lose no record: every produced record is received exactly once, none redelivered.
As in tests/integration/test_share_consumer.py, each test waits until the member had a
ShareFetch answered before producing (a share group starts reading at the partitions' end).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import pytest

import kgroup.aio
from kgroup import AcknowledgeType
from kgroup.testing.broker import produce
from kgroup.types import ShareConsumerRecord, TopicPartition

pytestmark = pytest.mark.broker_kinds("apache-kafka")

DEADLINE_S = 90.0


async def until_fetching(consumer: kgroup.aio.ShareConsumer[Any, Any]) -> None:
    """Poll until the member has partitions and a ShareFetch answered (nothing produced yet)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while not (consumer.assignment() and consumer.acquisition_lock_timeout_ms() is not None):
        assert loop.time() < deadline, "the member never fetched"
        assert await consumer.poll(200) == []


async def collect(consumer: kgroup.aio.ShareConsumer[Any, Any], count: int,
                  poll_ms: int = 500) -> list[ShareConsumerRecord[Any, Any]]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    got: list[ShareConsumerRecord[Any, Any]] = []
    while len(got) < count:
        assert loop.time() < deadline, f"{len(got)} of {count} records"
        got.extend(await consumer.poll(poll_ms))
    return got


def test_implicit_mode_consumes_every_record_once(kafka_bootstrap: str, topic_factory: Any,
                                                  group_id_factory: Any) -> None:
    topic = topic_factory(2)

    async def scenario() -> None:
        async with kgroup.aio.ShareConsumer(bootstrap_servers=kafka_bootstrap, group_id=group_id_factory()) as consumer:
            await consumer.subscribe([topic])
            assert consumer.subscription() == frozenset({topic})
            await until_fetching(consumer)
            sent = [(i % 2, None, f"v{i}".encode()) for i in range(20)]
            produce(kafka_bootstrap, topic, sent)
            got = await collect(consumer, 20)
            assert sorted(r.value for r in got) == sorted(v for _, _, v in sent)
            assert all(r.delivery_count == 1 for r in got)
            outcome = await consumer.commit_sync(30000)
            assert all(error is None for error in outcome.values()), outcome
            assert await consumer.poll(1000) == []
            metrics = consumer.metrics()
            assert metrics["records-consumed-total"] == 20 and metrics["acknowledgements-send-total"] >= 20
            assert metrics["heartbeat-total"] >= 1
            assert consumer.health().live

    asyncio.run(asyncio.wait_for(scenario(), 3 * DEADLINE_S))


def test_explicit_release_redelivers(kafka_bootstrap: str, topic_factory: Any, group_id_factory: Any) -> None:
    topic = topic_factory(1)
    tp = TopicPartition(topic, 0)

    async def scenario() -> None:
        consumer: kgroup.aio.ShareConsumer[Any, Any] = kgroup.aio.ShareConsumer(
            bootstrap_servers=kafka_bootstrap, group_id=group_id_factory(), share_acknowledgement_mode="explicit")
        answered: list[tuple[dict[TopicPartition, frozenset[int]], Any, int]] = []

        async def on_ack(offsets: Any, error: Any) -> None:
            answered.append((dict(offsets), error, threading.get_ident()))

        consumer.set_acknowledgement_commit_callback(on_ack)
        try:
            await consumer.subscribe([topic])
            await until_fetching(consumer)
            produce(kafka_bootstrap, topic, [(0, None, b"again")])
            (first,) = await collect(consumer, 1)
            assert first.delivery_count == 1
            consumer.acknowledge(first, AcknowledgeType.RELEASE)
            (second,) = await collect(consumer, 1)
            assert (second.value, second.offset, second.delivery_count) == (b"again", first.offset, 2)
            consumer.acknowledge(second)
            assert await consumer.commit_sync(30000) == {tp: None}
            loop = asyncio.get_running_loop()
            deadline = loop.time() + DEADLINE_S
            while len(answered) < 2:  # the RELEASE's answer and the ACCEPT's, on the loop's thread
                assert loop.time() < deadline, answered
                await asyncio.sleep(0.01)
            assert {(frozenset(o[tp]), e) for o, e, _ in answered} == {(frozenset({first.offset}), None)}
            assert {thread for _, _, thread in answered} == {threading.get_ident()}
        finally:
            await consumer.close()

    asyncio.run(asyncio.wait_for(scenario(), 3 * DEADLINE_S))


def test_cancelled_polls_lose_no_record(kafka_bootstrap: str, topic_factory: Any, group_id_factory: Any) -> None:
    topic = topic_factory(1)

    async def scenario() -> None:
        async with kgroup.aio.ShareConsumer(bootstrap_servers=kafka_bootstrap, group_id=group_id_factory(),
                                            max_poll_records=5) as consumer:
            await consumer.subscribe([topic])
            await until_fetching(consumer)
            loop = asyncio.get_running_loop()
            cancelled = 0
            for _ in range(3):  # nothing produced yet: each poll is cancelled while it waits
                with contextlib.suppress(asyncio.TimeoutError):
                    assert await asyncio.wait_for(consumer.poll(5000), 0.05) == []
                    continue
                cancelled += 1

            def producing() -> None:  # three rounds while the loop below polls and cancels
                for chunk in range(3):
                    produce(kafka_bootstrap, topic, [(0, None, f"v{chunk * 10 + i}".encode()) for i in range(10)])

            produced = loop.run_in_executor(None, producing)
            deadline = loop.time() + DEADLINE_S
            got: list[ShareConsumerRecord[Any, Any]] = []
            timeouts = (0.001, 0.005, 0.02)
            while len(got) < 30:
                assert loop.time() < deadline, f"{len(got)} of 30 records after {cancelled} cancelled polls"
                try:  # many polls are cancelled while they wait, some as their records arrive
                    got.extend(await asyncio.wait_for(consumer.poll(5000), timeouts[cancelled % 3]))
                except asyncio.TimeoutError:
                    cancelled += 1
            await produced
            assert cancelled > 0
            assert sorted(r.value for r in got) == sorted(f"v{i}".encode() for i in range(30))
            assert all(r.delivery_count == 1 for r in got)  # none was lost (released) and redelivered
            assert await consumer.commit_sync(30000) == {TopicPartition(topic, 0): None}
            assert await consumer.poll(1000) == []

    asyncio.run(asyncio.wait_for(scenario(), 3 * DEADLINE_S))
