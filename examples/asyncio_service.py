"""An asyncio consumer service: ``kgroup.aio.Consumer``, ``async for``, an awaited commit on revoke.

Run it::

    KGROUP_BOOTSTRAP_SERVERS=broker:9092 TOPIC=orders GROUP=billing python examples/asyncio_service.py

Without ``KGROUP_BOOTSTRAP_SERVERS`` it starts the embedded test broker, produces ``RECORDS``
(default 1000) records, consumes them, commits, and prints ``PASS: ...``
(``SESSION_TIMEOUT_MS`` sets the session timeout, Kafka's 45000 by default). SIGTERM or Ctrl-C
stops it: the handler calls ``consumer.wakeup()``, the loop ends, and leaving ``async with``
closes the consumer (the revoke callback commits what was processed, then LeaveGroup).

The offsets committed are those of records *processed* (``done``), not merely received: a
commit stays right even if a handler is cancelled halfway. In a web framework, run
``consume()`` as a background task from the app's startup (FastAPI's ``lifespan``, aiohttp's
``cleanup_ctx``) and stop it the same way at shutdown. docs/asyncio.md has the rules.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import kgroup
import kgroup.aio


class CommitProcessed(kgroup.aio.RebalanceListener):
    """Commit the processed offsets of partitions before they move (Java's idiom, awaited)."""

    def __init__(self, consumer: kgroup.aio.Consumer, done: dict[kgroup.TopicPartition, int]) -> None:
        self.consumer = consumer
        self.done = done

    async def on_partitions_revoked(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
        offsets = {tp: self.done.pop(tp) for tp in partitions if tp in self.done}
        try:
            await self.consumer.commit(offsets)
        except kgroup.CommitFailedError as exc:  # the generation moved on: the next owner re-reads
            print(f"commit on revoke failed: {exc}", file=sys.stderr)

    async def on_partitions_lost(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
        for tp in partitions:  # someone else may own them already: never commit them
            self.done.pop(tp, None)


async def handle(record: kgroup.ConsumerRecord) -> None:
    """The application's work for one record (an HTTP call, a database write, ...)."""
    value: bytes | None = record.value
    if value is not None:
        await asyncio.sleep(0)


async def consume(consumer: kgroup.aio.Consumer, topic: str, expected: int) -> int:
    """Process records until ``wakeup()`` (or, with ``expected``, until that many were processed)."""
    done: dict[kgroup.TopicPartition, int] = {}
    await consumer.subscribe([topic], listener=CommitProcessed(consumer, done))
    processed = 0
    try:
        async for record in consumer:
            await handle(record)
            done[record.topic_partition] = record.offset + 1
            processed += 1
            if processed % 100 == 0 or processed == expected:
                await consumer.commit(dict(done))
            if processed == expected:
                break
    except kgroup.WakeupError:
        pass  # SIGTERM or Ctrl-C: leaving `async with` closes the consumer
    return processed


async def serve(bootstrap: str, topic: str, group: str, expected: int, session_ms: int) -> tuple[int, int]:
    """Consume in ``group``; returns the records processed and the sum of committed offsets."""
    async with kgroup.aio.Consumer(
        bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=session_ms,
        heartbeat_interval_ms=min(3000, session_ms // 3), enable_auto_commit=False, auto_offset_reset="earliest",
    ) as consumer:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, consumer.wakeup)
        processed = await consume(consumer, topic, expected)
        committed = await consumer.committed(consumer.assignment())
    total = sum(om.offset for om in committed.values() if om is not None)
    print(f"stopped: {processed} records processed, committed offsets add up to {total}")
    return processed, total


def main() -> int:
    bootstrap = os.environ.get("KGROUP_BOOTSTRAP_SERVERS", "")
    topic = os.environ.get("TOPIC", "orders")
    group = os.environ.get("GROUP", "asyncio-service")
    if bootstrap:
        asyncio.run(serve(bootstrap, topic, group, 0, int(os.environ.get("SESSION_TIMEOUT_MS", "45000"))))
        return 0
    from kgroup.testing import create_topic, produce, start_broker  # demo mode

    records = int(os.environ.get("RECORDS", "1000"))
    with start_broker() as broker:
        create_topic(broker.bootstrap_servers, topic, 4)
        produce(broker.bootstrap_servers, topic, ((None, f"order {i}".encode()) for i in range(records)))
        # a short session: the embedded broker makes every join wait session_timeout_ms / 2
        processed, committed = asyncio.run(serve(broker.bootstrap_servers, topic, group, records, 6000))
    if processed != records or committed != records:
        print(f"FAIL: {processed} of {records} records processed, {committed} committed")
        return 1
    print(f"PASS: {records} records processed and committed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
