"""``kgroup.aio.ParallelProcessor`` on an in-memory asyncio consumer: order, bounds, commits, rebalances, failures.

``FakeAioConsumer`` stands for ``kgroup.aio.Consumer``: partitions are lists of ``(key, value)``,
the rebalances a test asks for run (awaited) inside the next ``poll()`` as the real consumer runs
its listener on the loop, commits land in ``committed_offsets`` at once. The real consumer and
broker: ``tests/integration/test_aio_parallel.py``.
"""

from __future__ import annotations

import asyncio
import time

import pytest

import kgroup
import kgroup.aio
from kgroup import ConfigError, ProcessingError, TopicPartition
from kgroup._parallel.offsets import decode_completed
from kgroup.aio import ParallelProcessor
from kgroup.testing import FakeClock
from kgroup.types import ConsumerRecord
from tests.unit.test_parallel_processor import FakeConsumer, keyed_logs

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


class FakeAioConsumer(FakeConsumer):
    """``FakeConsumer`` (the threaded processor's tests') with ``kgroup.aio.Consumer``'s awaited calls."""

    def __init__(self, logs, *, max_poll_records=500):
        super().__init__(logs, max_poll_records=max_poll_records)
        self.polls: list[int] = []

    async def subscribe(self, topics, listener=None, *, pattern=None):
        self.listener = listener
        self.events.append(("assigned", frozenset(self.logs)))

    async def _rebalance(self):
        events, self.events = self.events, []
        for kind, tps in events:
            if kind == "assigned":
                self.owned |= tps
                for tp in tps:
                    om = self.committed_offsets.get(tp)
                    self.positions[tp] = om.offset if om else 0
                await self.listener.on_partitions_assigned(tps)
            elif kind == "revoked":
                await self.listener.on_partitions_revoked(tps)
                self.owned -= tps
                self.paused_set -= tps
            else:
                await self.listener.on_partitions_lost(tps)
                self.owned -= tps
                self.paused_set -= tps

    async def poll(self, timeout_ms=0):
        if self.closed:
            raise kgroup.ConsumerClosedError("closed")
        self.polls.append(timeout_ms)
        await self._rebalance()
        out = []
        for tp in sorted(self.owned - self.paused_set):
            log = self.logs[tp]
            while self.positions[tp] < len(log) and len(out) < self.max_poll_records:
                offset = self.positions[tp]
                key, value = log[offset]
                out.append(ConsumerRecord(tp.topic, tp.partition, offset, key, value))
                self.positions[tp] += 1
        if not out:
            await asyncio.sleep(min(timeout_ms, 2) / 1000)  # the broker's wait, shortened
        return out

    async def commit(self, offsets, *, timeout_ms=None):
        if self.events and self.events[0][0] == "lost":
            raise kgroup.CommitFailedError("generation reset")
        assert set(offsets) <= self.owned, "commit of a partition not owned"
        self.commits.append(dict(offsets))
        self.committed_offsets.update(offsets)

    def commit_async(self, offsets):
        future = asyncio.get_running_loop().create_future()
        if self.events and self.events[0][0] == "lost":
            future.set_exception(kgroup.CommitFailedError("generation reset"))
            return future
        assert set(offsets) <= self.owned, "commit of a partition not owned"
        self.commits.append(dict(offsets))
        self.committed_offsets.update(offsets)
        future.set_result(None)
        return future

    async def committed(self, partitions, *, timeout_ms=None):
        return {tp: self.committed_offsets.get(tp) for tp in partitions}

    async def close(self, timeout_ms=30000):
        if not self.closed:
            self.closed = True
            self.events.append(("revoked", frozenset(self.owned)))
            await self._rebalance()


async def until(predicate, timeout_s=30.0):
    """Wait for ``predicate()`` on the loop, with a deadline (each check yields to the loop)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.001)


def committed_at(consumer, tp):
    om = consumer.committed_offsets.get(tp)
    return None if om is None else om.offset


async def started(processor, topics=("t",), listener=None):
    await processor.subscribe(list(topics), listener)
    return asyncio.ensure_future(processor.run())


async def stopped(processor, task):
    processor.stop()
    await asyncio.wait_for(task, 30)
    await processor.close()


def test_bad_arguments_raise_config_errors():
    consumer = FakeAioConsumer({})
    consumer.config.enable_auto_commit = True

    async def handle(record):
        pass

    with pytest.raises(ConfigError, match="enable_auto_commit"):
        ParallelProcessor(consumer, handle)
    with pytest.raises(ConfigError, match="ordering"):
        ParallelProcessor(FakeAioConsumer({}), handle, ordering="random")
    with pytest.raises(ConfigError, match="max_concurrency"):
        ParallelProcessor(FakeAioConsumer({}), handle, max_concurrency=0)
    with pytest.raises(ConfigError, match="revoke_timeout_ms"):
        ParallelProcessor(FakeAioConsumer({}), handle, revoke_timeout_ms=-1)


def test_it_is_exported_by_kgroup_aio():
    assert "ParallelProcessor" in kgroup.aio.__all__
    assert kgroup.aio.ParallelProcessor is ParallelProcessor


@pytest.mark.parametrize("ordering", ["key", "partition", "unordered"])
def test_order_is_held_and_records_run_concurrently(ordering):
    logs = keyed_logs()
    consumer = FakeAioConsumer(logs)
    running: dict = {}
    seen: list = []
    peak = [0]

    async def handle(record):
        lane = {"key": (record.partition, record.key), "partition": record.partition}.get(ordering, record.offset)
        if ordering != "unordered":
            assert lane not in running, f"two records of lane {lane} at once"
        running[lane] = record.offset
        peak[0] = max(peak[0], len(running))
        seen.append((record.partition, record.key, record.offset))
        await asyncio.sleep(0.001)  # the work: not synchronisation
        del running[lane]

    async def scenario():
        processor = ParallelProcessor(consumer, handle, ordering=ordering, max_concurrency=8)
        task = await started(processor)
        await until(lambda: processor.metrics()["parallel-records-completed-total"] == 400)
        await until(lambda: {tp: om.offset for tp, om in consumer.committed_offsets.items()} == {TP0: 200, TP1: 200})
        assert processor.metrics()["parallel-max-in-flight"] <= 8
        await stopped(processor, task)

    asyncio.run(scenario())
    if ordering == "key":
        for tp in logs:
            for key in {k for k, _ in logs[tp]}:
                offsets = [o for p, k, o in seen if p == tp.partition and k == key]
                assert offsets == sorted(offsets)
    if ordering == "partition":
        assert peak[0] <= 2
    else:
        assert peak[0] > 2
    assert len(seen) == 400
    assert consumer.closed


def test_a_revocation_waits_commits_only_completed_work_and_the_next_owner_skips_the_rest():
    logs = {TP0: [(b"k%d" % i, b"") for i in range(20)]}
    consumer = FakeAioConsumer(logs)
    second: list[int] = []

    async def scenario():
        release = asyncio.Event()
        done: list[int] = []

        async def handle(record):
            if record.offset in (3, 7):
                await release.wait()  # held until the test lets go
            done.append(record.offset)

        processor = ParallelProcessor(consumer, handle, max_concurrency=4, revoke_timeout_ms=50)
        task = await started(processor)
        await until(lambda: len(done) == 18)
        consumer.events.append(("revoked", frozenset({TP0})))
        await until(lambda: TP0 not in consumer.owned)
        # 3 and 7 still running after revoke_timeout_ms: committed at 3, the completions above it in the metadata
        om = consumer.committed_offsets[TP0]
        assert om.offset == 3
        assert decode_completed(om.metadata, 3) == set(range(4, 20)) - {7}
        release.set()
        await until(lambda: processor.metrics()["parallel-records-discarded-total"] == 2)
        assert consumer.committed_offsets[TP0].offset == 3  # late results of a revoked partition
        await stopped(processor, task)

        # the next owner runs only 3 and 7
        consumer2 = FakeAioConsumer(logs)
        consumer2.committed_offsets = dict(consumer.committed_offsets)

        async def record_it(record):
            second.append(record.offset)

        processor2 = ParallelProcessor(consumer2, record_it)
        task2 = await started(processor2)
        await until(lambda: committed_at(consumer2, TP0) == 20)
        assert processor2.metrics()["parallel-records-skipped-total"] == 15
        await stopped(processor2, task2)

    asyncio.run(scenario())
    assert sorted(second) == [3, 7]


def test_in_flight_tasks_of_a_revoked_partition_finish_before_its_commit():
    logs = {TP0: [(b"k%d" % i, b"") for i in range(4)], TP1: [(b"k", b"")]}
    consumer = FakeAioConsumer(logs)

    async def scenario():
        release = asyncio.Event()

        async def handle(record):
            if record.partition == 0:
                await release.wait()  # held until the revocation has begun

        processor = ParallelProcessor(consumer, handle, max_concurrency=8)
        task = await started(processor)
        await until(lambda: processor.metrics()["parallel-records-in-flight"] == 4)
        consumer.events.append(("revoked", frozenset({TP0})))
        await until(lambda: processor._ledger.revoking == {TP0})
        assert committed_at(consumer, TP0) in (None, 0)  # nothing of TP0 done yet
        release.set()
        await until(lambda: TP0 not in consumer.owned)
        assert committed_at(consumer, TP0) == 4
        assert processor.metrics()["parallel-records-discarded-total"] == 0
        await stopped(processor, task)

    asyncio.run(scenario())


def test_a_lost_partition_commits_nothing_more_and_the_async_listener_is_called():
    logs = {TP0: [(b"k", b"") for _ in range(5)]}
    consumer = FakeAioConsumer(logs)
    calls: list = []

    class Listener(kgroup.aio.RebalanceListener):
        async def on_partitions_lost(self, partitions):
            calls.append(("lost", partitions))

        async def on_partitions_revoked(self, partitions):
            calls.append(("revoked", partitions))

    async def scenario():
        release = asyncio.Event()

        async def handle(record):
            await release.wait()

        processor = ParallelProcessor(consumer, handle, max_concurrency=2)
        task = await started(processor, listener=Listener())
        await until(lambda: processor.metrics()["parallel-records-in-flight"] == 1)
        consumer.events.append(("lost", frozenset({TP0})))
        await until(lambda: calls == [("lost", frozenset({TP0}))])
        release.set()
        await until(lambda: processor.metrics()["parallel-records-discarded-total"] == 1)
        assert committed_at(consumer, TP0) in (None, 0)
        await stopped(processor, task)

    asyncio.run(scenario())
    assert committed_at(consumer, TP0) in (None, 0)


def test_retries_then_an_async_dead_letter_hook_and_the_key_waits_meanwhile():
    logs = {TP0: [(b"a", b"bad"), (b"a", b"good"), (b"b", b"good")]}
    consumer = FakeAioConsumer(logs)
    attempts: list[int] = []
    dead: list = []

    async def handle(record):
        attempts.append(record.offset)
        if record.value == b"bad":
            raise RuntimeError("boom")

    async def hook(record, error):
        await asyncio.sleep(0)
        dead.append((record.offset, repr(error)))

    async def scenario():
        processor = ParallelProcessor(consumer, handle, retries=2, retry_backoff_ms=1, on_dead_letter=hook)
        task = await started(processor)
        await until(lambda: committed_at(consumer, TP0) == 3)
        metrics = processor.metrics()
        assert metrics["parallel-records-retried-total"] == 2
        assert metrics["parallel-records-dead-lettered-total"] == 1
        assert metrics["parallel-attempts-failed-total"] == 3
        await stopped(processor, task)

    asyncio.run(scenario())
    assert attempts.count(0) == 3
    assert attempts.index(1) > max(i for i, o in enumerate(attempts) if o == 0)  # key a waited for the bad record
    assert dead == [(0, "RuntimeError('boom')")]


def test_a_plain_dead_letter_hook_is_accepted():
    consumer = FakeAioConsumer({TP0: [(b"a", b"bad")]})
    dead: list[int] = []

    async def handle(record):
        raise RuntimeError("boom")

    async def scenario():
        processor = ParallelProcessor(consumer, handle, retries=0, on_dead_letter=lambda r, e: dead.append(r.offset))
        task = await started(processor)
        await until(lambda: committed_at(consumer, TP0) == 1)
        await stopped(processor, task)

    asyncio.run(scenario())
    assert dead == [0]


def test_without_a_dead_letter_hook_run_raises_and_commits_below_the_record():
    logs = {TP0: [(b"a", b"good"), (b"b", b"bad"), (b"c", b"good")]}
    consumer = FakeAioConsumer(logs)

    async def handle(record):
        if record.value == b"bad":
            raise ValueError("no")

    async def scenario():
        processor = ParallelProcessor(consumer, handle, retries=0)
        await processor.subscribe(["t"])
        with pytest.raises(ProcessingError, match="t-0@1") as raised:
            await asyncio.wait_for(processor.run(), 30)
        assert isinstance(raised.value.__cause__, ValueError)
        await processor.close()

    asyncio.run(scenario())
    assert consumer.committed_offsets[TP0].offset == 1
    assert decode_completed(consumer.committed_offsets[TP0].metadata, 1) == {2}


def test_a_dead_letter_hook_that_raises_stops_run():
    consumer = FakeAioConsumer({TP0: [(b"a", b"bad")]})

    async def handle(record):
        raise RuntimeError("boom")

    async def hook(record, error):
        raise OSError("dead-letter topic unreachable")

    async def scenario():
        processor = ParallelProcessor(consumer, handle, retries=0, on_dead_letter=hook)
        await processor.subscribe(["t"])
        with pytest.raises(ProcessingError, match="dead-letter hook raised") as raised:
            await asyncio.wait_for(processor.run(), 30)
        assert isinstance(raised.value.__cause__, OSError)
        await processor.close()

    asyncio.run(scenario())
    assert committed_at(consumer, TP0) in (None, 0)


@pytest.mark.parametrize("limit", ["records", "bytes"])
def test_back_pressure_pauses_and_resumes(limit):
    logs = keyed_logs(partitions=2, per_partition=100, keys=100)
    logs = {tp: [(k, b"x" * 100) for k, _ in log] for tp, log in logs.items()}
    consumer = FakeAioConsumer(logs, max_poll_records=10)
    bound = {"max_buffered_records": 20} if limit == "records" else {"max_buffered_bytes": 20 * 102}

    async def scenario():
        gate = asyncio.Event()

        async def handle(record):
            await gate.wait()

        processor = ParallelProcessor(consumer, handle, max_concurrency=2, **bound)
        task = await started(processor)
        await until(lambda: consumer.paused_set == {TP0, TP1})
        polls = len(consumer.polls)
        await until(lambda: len(consumer.polls) >= polls + 5)
        metrics = processor.metrics()
        assert metrics["parallel-records-buffered"] <= 20 + 10
        assert metrics["parallel-partitions-paused"] == 2
        gate.set()
        await until(lambda: processor.metrics()["parallel-records-completed-total"] == 200)
        assert processor.metrics()["parallel-pauses-total"] >= 2
        await until(lambda: consumer.paused_set == set())  # resumed once the buffer drained
        await stopped(processor, task)

    asyncio.run(scenario())


def test_a_stuck_handler_is_reported_by_health_and_metrics():
    clock = FakeClock()
    consumer = FakeAioConsumer({TP0: [(b"k", b"")]})

    async def scenario():
        gate = asyncio.Event()

        async def handle(record):
            await gate.wait()

        processor = ParallelProcessor(consumer, handle, stuck_after_ms=1000, clock=clock)
        task = await started(processor)
        await until(lambda: processor.metrics()["parallel-records-in-flight"] == 1)
        assert processor.health().live
        clock.advance(2.0)
        report = processor.health()
        assert not report.live
        assert not report.ready
        assert "t-0@0 has been running for 2 s" in report.reasons[0]
        assert processor.metrics()["parallel-records-stuck"] == 1
        gate.set()
        await until(lambda: processor.metrics()["parallel-records-in-flight"] == 0)
        assert processor.health().live
        await stopped(processor, task)

    asyncio.run(scenario())


def test_a_cancelled_run_commits_the_completed_work_and_close_cancels_what_still_runs():
    logs = {TP0: [(b"k%d" % i, b"") for i in range(10)]}
    consumer = FakeAioConsumer(logs)
    cancelled: list[int] = []

    async def scenario():
        async def handle(record):
            if record.offset == 5:
                try:
                    await asyncio.Event().wait()  # never returns by itself
                except asyncio.CancelledError:
                    cancelled.append(record.offset)
                    raise

        # a long commit interval: only the cancellation's own commit can land the completions
        processor = ParallelProcessor(consumer, handle, commit_interval_ms=3_600_000, revoke_timeout_ms=50)
        task = await started(processor)
        await until(lambda: processor.metrics()["parallel-records-completed-total"] == 9)
        commits = len(consumer.commits)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert len(consumer.commits) == commits + 1
        om = consumer.committed_offsets[TP0]
        assert (om.offset, decode_completed(om.metadata, 5)) == (5, set(range(6, 10)))
        assert processor.metrics()["parallel-records-in-flight"] == 1  # still running: close() decides
        async with processor:
            pass  # close(): revoke (record 5 times out), then the task is cancelled
        assert processor.metrics()["parallel-records-in-flight"] == 0

    asyncio.run(scenario())
    assert cancelled == [5]
    assert consumer.committed_offsets[TP0].offset == 5


def test_the_users_listener_runs_after_the_processors_part():
    logs = {TP0: [(b"k%d" % i, b"") for i in range(10)], TP1: [(b"k", b"")]}
    consumer = FakeAioConsumer(logs)
    seen: list = []
    holder: list = []

    class Listener(kgroup.RebalanceListener):  # a plain listener works too
        def on_partitions_assigned(self, partitions):
            processor = holder[0]
            seen.append(("assigned", partitions, {tp: tp in processor._ledger.offsets for tp in partitions}))

        def on_partitions_revoked(self, partitions):
            # the completed work is committed, and nothing of the partitions runs any more
            seen.append(("revoked", partitions, committed_at(consumer, TP0),
                         holder[0].metrics()["parallel-records-in-flight"]))

    async def handle(record):
        pass

    async def scenario():
        processor = ParallelProcessor(consumer, handle, commit_interval_ms=3_600_000)
        holder.append(processor)
        task = await started(processor, listener=Listener())
        await until(lambda: processor.metrics()["parallel-records-completed-total"] == 11)
        consumer.events.append(("revoked", frozenset({TP0})))
        await until(lambda: len(seen) == 2)
        await stopped(processor, task)

    asyncio.run(scenario())
    assert seen[:2] == [
        ("assigned", frozenset({TP0, TP1}), {TP0: True, TP1: True}),
        ("revoked", frozenset({TP0}), 10, 0.0),
    ]


def test_a_retry_waiting_for_its_time_does_not_spin_the_poll_loop():
    clock = FakeClock()
    consumer = FakeAioConsumer({TP0: [(b"k", b"")]})

    async def handle(record):
        raise RuntimeError("later")

    async def scenario():
        processor = ParallelProcessor(consumer, handle, retries=1, retry_backoff_ms=5000, clock=clock)
        task = await started(processor)
        await until(lambda: processor.metrics()["parallel-records-retried-total"] == 1)
        polls = len(consumer.polls)
        await until(lambda: len(consumer.polls) >= polls + 3)
        assert consumer.polls[-1] == 100  # the retry is 5 s away: idle polls, not poll(0) in a loop
        clock.advance(4.99)
        polls = len(consumer.polls)
        await until(lambda: len(consumer.polls) >= polls + 2)
        assert 0 < consumer.polls[-1] <= 11
        await stopped(processor, task)

    asyncio.run(scenario())
