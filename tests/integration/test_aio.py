"""``kgroup.aio.Consumer`` on a real broker: asyncio members rebalancing, cancelled polls, close.

The rebalance test runs on Apache Kafka's own coordinator (``[apache-kafka]``) and on the
coordinator proxy in front of the embedded Tansu (``[tansu]``); the cancellation, close and
example tests are about the client (the data path, the worker thread, the loop), which Apache
Kafka would not exercise differently, and run on Tansu only. Every wait has a deadline.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from typing import Any

import pytest

import kgroup
from kgroup import TopicPartition, aio
from kgroup.testing import produce

from .harness import BOTH, HEARTBEAT_MS, SESSION_TIMEOUT_MS
from .test_examples import broker_env, report, run_example

TANSU = pytest.mark.broker_kinds("tansu")
BUDGET_S = 60.0


@pytest.fixture
def bootstrap(group_coordinator: Any) -> str:
    """Apache Kafka itself, or the coordinator proxy in front of the embedded Tansu."""
    return group_coordinator.bootstrap_servers


def _consumer(bootstrap: str, group: str, name: str, **config: Any) -> aio.Consumer:
    settings: dict[str, Any] = {
        "session_timeout_ms": SESSION_TIMEOUT_MS,
        "heartbeat_interval_ms": HEARTBEAT_MS,
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "client_id": name,
    }
    settings.update(config)
    return aio.Consumer(bootstrap_servers=bootstrap, group_id=group, **settings)


async def _until(predicate: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await asyncio.sleep(0.05)


class Member:
    """An aio consumer processing with ``async for``; its async listener commits on revoke."""

    def __init__(self, name: str, consumer: aio.Consumer, loop_thread: int) -> None:
        self.name = name
        self.consumer = consumer
        self.loop_thread = loop_thread
        self.received: list[tuple[int, int]] = []
        self.events: list[tuple[str, frozenset[TopicPartition]]] = []
        self.callback_threads: set[int] = set()
        self.in_callback = False
        self.overlaps = 0
        self.failed_commits = 0
        self.task: asyncio.Future[None] | None = None

    def listener(self) -> aio.RebalanceListener:
        member = self

        class Commits(aio.RebalanceListener):
            async def _enter(self, kind: str, partitions: frozenset[TopicPartition]) -> None:
                member.overlaps += member.in_callback
                member.in_callback = True
                member.callback_threads.add(threading.get_ident())
                member.events.append((kind, partitions))
                await asyncio.sleep(0.02)  # awaited work while the rebalance waits

            async def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
                await self._enter("revoked", partitions)
                await member.consumer.commit()  # with the generation still valid
                member.in_callback = False

            async def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
                await self._enter("assigned", partitions)
                member.in_callback = False

            async def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
                await self._enter("lost", partitions)
                member.in_callback = False

        return Commits()

    async def run(self, topic: str) -> None:
        await self.consumer.subscribe([topic], listener=self.listener())
        async for record in self.consumer:  # ends when close() runs
            self.received.append((record.partition, record.offset))
            await asyncio.sleep(0.002)  # the "work"
            if len(self.received) % 25 == 0:
                try:
                    await self.consumer.commit()
                except (kgroup.CommitFailedError, kgroup.RebalanceInProgressError):
                    self.failed_commits += 1  # the revoke commit covers these records
                except kgroup.ConsumerClosedError:
                    # close() ran while this record's work was awaited (the scenario closes the
                    # consumer from another task): its revoke commit covered what was received
                    break

    def start(self, topic: str) -> Member:
        self.task = asyncio.ensure_future(self.run(topic))
        return self


@BOTH
def test_two_aio_members_rebalance_with_an_async_listener_committing_on_revoke(
    bootstrap: str, topic_factory: Any, group_id_factory: Any
) -> None:
    """a consumes alone; b joins mid-stream; then a leaves. Both listeners are coroutines that
    commit in on_partitions_revoked. Every record is received exactly once; callbacks ran on
    the event loop's thread and never overlapped; a revoked before b got partitions."""
    topic = topic_factory(6)
    group = group_id_factory()

    def batch(start: int, count: int) -> list[tuple[int, bytes, bytes]]:
        return [(i % 6, str(i).encode(), f"v{i}".encode()) for i in range(start, start + count)]

    produce(bootstrap, topic, batch(0, 1200))

    async def scenario() -> tuple[Member, Member]:
        loop_thread = threading.get_ident()
        a = Member("a", _consumer(bootstrap, group, "a", max_poll_records=50), loop_thread).start(topic)
        await _until(lambda: len(a.received) >= 200, BUDGET_S, "a consuming")
        b = Member("b", _consumer(bootstrap, group, "b", max_poll_records=50), loop_thread).start(topic)
        await asyncio.to_thread(produce, bootstrap, topic, batch(1200, 1200))
        await _until(lambda: len(b.consumer.assignment()) == 3 and len(a.consumer.assignment()) == 3,
                     BUDGET_S, "a and b splitting 6 partitions")
        await _until(lambda: len(b.received) >= 100, BUDGET_S, "b consuming")
        await a.consumer.close()  # revokes (committing) and leaves: b takes everything
        assert a.task is not None
        await asyncio.wait_for(a.task, 5.0)  # its async for ended with the close
        await asyncio.to_thread(produce, bootstrap, topic, batch(2400, 600))
        await _until(lambda: len(set(a.received) | set(b.received)) >= 3000, BUDGET_S, "all records")
        await b.consumer.close()
        assert b.task is not None
        await asyncio.wait_for(b.task, 5.0)
        return a, b

    a, b = asyncio.run(asyncio.wait_for(scenario(), 3 * BUDGET_S))
    seen = a.received + b.received
    assert set(seen) == {(i % 6, i // 6) for i in range(3000)}
    assert len(seen) == len(set(seen)), "a record was received twice"
    for member in (a, b):
        assert member.callback_threads == {member.loop_thread}
        assert member.overlaps == 0
    assert [kind for kind, _ in a.events].count("revoked") >= 2  # b's join, then a's close
    assert not [e for m in (a, b) for e in m.events if e[0] == "lost"]


@TANSU
def test_a_cancelled_poll_loses_no_record(bootstrap: str, topic_factory: Any, group_id_factory: Any) -> None:
    """A poll cancelled after its records reached the aio consumer (the task is cancelled while
    the loop is busy, before the poll's result is handed over): the next poll returns them.
    Then, while records trickle in, polls under ``asyncio.wait_for`` with random short
    timeouts: every record exactly once, in order per partition."""
    topic = topic_factory(4)
    total = 4400

    def batch(start: int, count: int) -> list[tuple[int, None, bytes]]:
        return [(i % 4, None, str(i).encode()) for i in range(start, start + count)]

    produce(bootstrap, topic, batch(0, 400))

    async def scenario() -> tuple[list[kgroup.ConsumerRecord], list[kgroup.ConsumerRecord], int]:
        consumer = _consumer(bootstrap, group_id_factory(), "c", max_poll_records=20)
        await consumer.subscribe([topic])
        early: list[kgroup.ConsumerRecord] = []
        deadline = time.monotonic() + BUDGET_S
        while len(consumer.assignment()) < 4 and time.monotonic() < deadline:
            early += await consumer.poll(100)  # the rebalance callbacks run inside poll()
        # 1. cancel a poll whose records are already buffered but not handed over
        task = asyncio.ensure_future(consumer.poll(10_000))
        await asyncio.sleep(0)  # the poll is submitted to the worker
        deadline = time.monotonic() + BUDGET_S
        while not consumer._buffer and time.monotonic() < deadline:
            time.sleep(0.001)  # blocks the loop on purpose: the poll's task cannot resume
        assert consumer._buffer, "no records fetched"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        kept = await consumer.poll(0)  # returned at once, from the buffer
        got: list[kgroup.ConsumerRecord] = early + kept
        # 2. many cancellations at random points, while records trickle in
        async def trickle() -> None:
            for start in range(400, total, 100):
                await asyncio.to_thread(produce, bootstrap, topic, batch(start, 100))
                await asyncio.sleep(0.02)

        producer = asyncio.ensure_future(trickle())
        rng = random.Random(7)
        cancelled = 0
        deadline = time.monotonic() + BUDGET_S
        while len(got) < total and time.monotonic() < deadline:
            try:
                got += await asyncio.wait_for(consumer.poll(500), rng.choice((0.0001, 0.0005, 0.002, 0.1)))
            except asyncio.TimeoutError:
                cancelled += 1
        await producer
        await consumer.commit()
        await consumer.close()
        return kept, got, cancelled

    kept, records, cancelled = asyncio.run(scenario())
    assert kept, "the cancelled poll's records were not returned by the next poll"
    print(f"{cancelled} polls cancelled")
    assert cancelled > 0
    assert len(records) == total
    assert {(r.partition, r.offset) for r in records} == {(p, o) for p in range(4) for o in range(total // 4)}
    for p in range(4):
        offsets = [r.offset for r in records if r.partition == p]
        assert offsets == sorted(offsets)


@TANSU
def test_close_is_bounded(bootstrap: str, topic_factory: Any, group_id_factory: Any) -> None:
    """close(timeout_ms) returns at once while another task's ``async for`` waits in a long poll
    (which ends), and within its timeout when a revoke callback never finishes; the other
    member gets the partitions without waiting for a session timeout (LeaveGroup was sent)."""
    topic = topic_factory(2)
    group = group_id_factory()

    class Stuck(aio.RebalanceListener):
        hang = False

        async def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
            if self.hang:
                await asyncio.sleep(60)

    async def scenario() -> dict[str, float]:
        took: dict[str, float] = {}
        a = _consumer(bootstrap, group, "a")
        b = _consumer(bootstrap, group, "b")
        stuck = Stuck()
        await a.subscribe([topic])
        await b.subscribe([topic], listener=stuck)

        async def drain(consumer: aio.Consumer) -> None:
            async for _ in consumer:
                pass

        tasks = [asyncio.ensure_future(drain(c)) for c in (a, b)]
        await _until(lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1, BUDGET_S, "a and b assigned")
        await asyncio.sleep(0.5)  # both async for loops wait in poll() (nothing to consume)
        started = time.monotonic()
        await a.close(timeout_ms=10_000)
        took["a"] = time.monotonic() - started
        await asyncio.wait_for(tasks[0], 1.0)
        left = time.monotonic()
        await _until(lambda: len(b.assignment()) == 2, SESSION_TIMEOUT_MS / 1000, "b owning both partitions")
        took["takeover"] = time.monotonic() - left
        stuck.hang = True
        started = time.monotonic()
        await b.close(timeout_ms=2000)
        took["b"] = time.monotonic() - started
        await asyncio.wait_for(tasks[1], 1.0)
        return took

    took = asyncio.run(scenario())
    assert took["a"] < 5.0, took  # a LeaveGroup round trip, not the poll's or close's timeout
    assert took["takeover"] < SESSION_TIMEOUT_MS / 1000, took
    assert 1.9 <= took["b"] < 3.0, took


@TANSU
def test_asyncio_service_example_passes(broker_kind: str) -> None:
    """examples/asyncio_service.py in demo mode (its own embedded broker): 1000 records processed
    and committed."""
    result = run_example("asyncio_service.py", timeout_s=180, **broker_env(broker_kind))
    lines = result.stdout.strip().splitlines()
    assert result.returncode == 0, report(result)
    assert lines and lines[-1] == "PASS: 1000 records processed and committed", report(result)


@TANSU
def test_concurrent_tasks_share_one_consumer(bootstrap: str, topic_factory: Any, group_id_factory: Any) -> None:
    """While one task runs ``async for``, others send ``commit_async()`` and await
    ``position()`` and ``committed()``: calls made during a poll in flight are queued behind
    it, the rest run at once. Every record arrives exactly once and in order per partition, and
    the last commit covers them all. (Pausing is left out: kafka-python 3.0's Fetcher restores
    a resumed partition's parked records only when its in-line slot is None, and a drained
    PartitionRecords stays there, so after some pause/resume sequences a partition is never
    fetched again, with kgroup.Consumer alone too.)"""
    topic = topic_factory(4)
    total = produce(bootstrap, topic, [(i % 4, None, str(i).encode()) for i in range(4000)])
    partitions = [TopicPartition(topic, p) for p in range(4)]

    async def scenario() -> tuple[list[tuple[int, int]], dict[TopicPartition, Any], int]:
        consumer = _consumer(bootstrap, group_id_factory(), "c", max_poll_records=50)
        await consumer.subscribe([topic])
        received: list[tuple[int, int]] = []
        done = asyncio.Event()
        calls = [0]

        async def consume() -> None:
            async for record in consumer:
                received.append((record.partition, record.offset))
                if len(received) % 10 == 0:
                    await asyncio.sleep(0.002)  # the others get their turns
                if len(received) == total:
                    done.set()
                    return

        async def meddle(seed: int) -> None:
            rng = random.Random(seed)
            while not done.is_set():
                owned = sorted(consumer.assignment())
                if owned:
                    tp = rng.choice(owned)
                    action = rng.randrange(1, 4)
                    if action == 1:
                        consumer.commit_async()
                    elif action == 2:
                        assert await consumer.position(tp) >= 0
                    else:
                        await consumer.committed([tp])
                    calls[0] += 1
                await asyncio.sleep(rng.random() / 200)

        tasks = [asyncio.ensure_future(consume())] + [asyncio.ensure_future(meddle(s)) for s in range(3)]
        await asyncio.wait_for(done.wait(), BUDGET_S)
        await asyncio.gather(*tasks)
        await consumer.commit()
        committed = await consumer.committed(partitions)
        await consumer.close()
        return received, committed, calls[0]

    received, committed, calls = asyncio.run(scenario())
    assert calls > 20
    assert len(received) == total == len(set(received))
    for p in range(4):
        offsets = [o for q, o in received if q == p]
        assert offsets == list(range(total // 4))
    assert {tp: om.offset for tp, om in committed.items()} == {tp: total // 4 for tp in partitions}
