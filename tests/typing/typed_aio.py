"""A typed asyncio program: mypy --strict must accept it (tests/test_aio_typing.py runs it)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from typing_extensions import assert_type

import kgroup
import kgroup.aio
from kgroup.deserializers import string_deserializer


def parse(data: bytes) -> dict[str, Any]:
    value = json.loads(data)
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


class Commits(kgroup.aio.RebalanceListener):
    def __init__(self, consumer: kgroup.aio.Consumer[str, dict[str, Any]]) -> None:
        self.consumer = consumer

    async def on_partitions_revoked(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
        await self.consumer.commit()


class Plain(kgroup.RebalanceListener):
    def on_partitions_assigned(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
        print(sorted(partitions))


async def raw() -> None:
    async with kgroup.aio.Consumer(bootstrap_servers="localhost:9092", group_id="g") as consumer:
        await consumer.subscribe(["orders"], listener=Plain())
        async for record in consumer:
            assert_type(record.value, bytes | None)
            assert_type(record.key, bytes | None)
        batch = await consumer.poll(100)
        assert_type(batch, list[kgroup.ConsumerRecord[bytes, bytes]])
        tp = kgroup.TopicPartition("orders", 0)
        assert_type(await consumer.position(tp), int)
        assert_type(await consumer.committed([tp]), dict[kgroup.TopicPartition, kgroup.OffsetAndMetadata | None])
        assert_type(consumer.commit_async(), asyncio.Future[None])
        consumer.seek(tp, 0)
        consumer.pause([tp])
        assert_type(consumer.paused(), frozenset[kgroup.TopicPartition])


async def typed() -> None:
    consumer = kgroup.aio.Consumer(
        bootstrap_servers="localhost:9092", group_id="orders",
        key_deserializer=string_deserializer(), value_deserializer=parse,
    )
    annotated: kgroup.aio.Consumer[str, dict[str, Any]] = consumer
    await annotated.subscribe(["orders"], listener=Commits(annotated))
    async for record in annotated:
        key: str | None = record.key
        value: dict[str, Any] | None = record.value
        print(key, value, record.offset)
    await annotated.close(timeout_ms=5000, group_membership="leave")


async def parallel() -> None:
    consumer = kgroup.aio.Consumer(
        bootstrap_servers="localhost:9092", group_id="billing", enable_auto_commit=False,
        key_deserializer=string_deserializer(), value_deserializer=parse,
    )

    async def handle(record: kgroup.ConsumerRecord[str, dict[str, Any]]) -> None:
        print(record.key, record.value)

    async def dead_letter(record: kgroup.ConsumerRecord[str, dict[str, Any]], error: BaseException) -> None:
        print(record.offset, error)

    processor = kgroup.aio.ParallelProcessor(consumer, handle, ordering="key", on_dead_letter=dead_letter)
    async with processor:
        await processor.subscribe(["orders"], Commits(consumer))
        await processor.run()
    assert_type(processor.metrics(), dict[str, float])
    assert_type(processor.health(), kgroup.HealthReport)


async def share() -> None:
    async with kgroup.aio.ShareConsumer(
        bootstrap_servers="localhost:9092", group_id="jobs", share_acknowledgement_mode="explicit",
        key_deserializer=string_deserializer(), value_deserializer=parse,
    ) as consumer:

        async def acknowledged(offsets: Mapping[kgroup.TopicPartition, frozenset[int]],
                               error: kgroup.KGroupError | None) -> None:
            print(offsets, error)

        consumer.set_acknowledgement_commit_callback(acknowledged)
        await consumer.subscribe(["jobs"])
        for record in await consumer.poll(1000):
            assert_type(record, kgroup.ShareConsumerRecord[str, dict[str, Any]])
            consumer.acknowledge(record, kgroup.AcknowledgeType.RELEASE)
        assert_type(await consumer.commit_sync(), dict[kgroup.TopicPartition, kgroup.KGroupError | None])
        assert_type(consumer.metrics(), dict[str, float])
        assert_type(consumer.health(), kgroup.HealthReport)
        assert_type(consumer.acquisition_lock_timeout_ms(), int | None)
