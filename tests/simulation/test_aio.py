"""``kgroup.aio.Consumer`` on the deterministic simulator: asyncio members in a simulated group.

Each asyncio member runs its ``async def app(consumer, running)`` on an event loop whose clock
is the simulator's virtual time and whose waits hand the baton back; the aio consumer's
worker thread is a simulated thread too, so runs replay exactly. ``check()`` verifies the
group's properties against what the *application* received (``async for`` / ``poll()``), not
what the worker fetched for it: a commit covering a record still buffered in the aio
consumer is a "commit beyond hand-out".
"""

from __future__ import annotations

import asyncio
import contextvars
import random
import threading
from collections.abc import Callable
from typing import Any

import pytest

import kgroup
from kgroup import TopicPartition, aio
from kgroup.testing.simulation import SimulatedGroup

TOPIC = "t"
Running = Callable[[], bool]


class Journal:
    """What every member's application received and what its listener saw."""

    def __init__(self) -> None:
        self.received: list[tuple[str, int, int]] = []
        self.events: list[tuple[str, str, frozenset[TopicPartition]]] = []
        self.listener_threads: dict[str, set[int]] = {}
        self.loop_threads: dict[str, int] = {}
        self.overlaps = 0

    def distinct(self) -> set[tuple[int, int]]:
        return {(p, o) for _, p, o in self.received}

    def duplicates(self) -> int:
        return len(self.received) - len(self.distinct())


class CommittingListener(aio.RebalanceListener):
    """Java's idiom, awaited: commit what was processed before giving partitions up."""

    def __init__(self, name: str, consumer: aio.Consumer, journal: Journal) -> None:
        self.name = name
        self.consumer = consumer
        self.journal = journal
        self.running = False

    async def _enter(self, kind: str, partitions: frozenset[TopicPartition]) -> None:
        if self.running:
            self.journal.overlaps += 1
        self.running = True
        self.journal.listener_threads.setdefault(self.name, set()).add(threading.get_ident())
        self.journal.events.append((self.name, kind, partitions))
        await asyncio.sleep(0.05)  # some awaited work: other tasks and the group thread go on

    async def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        await self._enter("revoked", partitions)
        await self.consumer.commit()
        self.running = False

    async def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        await self._enter("assigned", partitions)
        self.running = False

    async def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        await self._enter("lost", partitions)
        self.running = False


def iterating_app(name: str, journal: Journal, *, commit_every: int = 7):
    """``async for`` with a commit every few records and the committing listener."""

    async def app(consumer: aio.Consumer, running: Running) -> None:
        journal.loop_threads[name] = threading.get_ident()
        await consumer.subscribe([TOPIC], listener=CommittingListener(name, consumer, journal))

        async def stop_when_asked() -> None:
            while running():
                await asyncio.sleep(0.1)
            await consumer.close()

        stopper = asyncio.ensure_future(stop_when_asked())
        count = 0
        async for record in consumer:  # ends when close() runs
            journal.received.append((name, record.partition, record.offset))
            await asyncio.sleep(0.001)  # the "work"
            count += 1
            if count % commit_every == 0:
                await consumer.commit()
        await stopper

    return app


def test_async_listeners_commit_on_revoke_across_rebalances_without_loss_or_duplicate() -> None:
    """Three members join and leave one by one; each commits in its awaited on_partitions_revoked
    and every few records. Every record arrives exactly once, the properties hold, callbacks ran
    on the member's event loop thread and never overlapped."""
    journal = Journal()
    group = SimulatedGroup({TOPIC: 6}, seed=11)
    group.produce(TOPIC, 600)
    group.add_member("a", iterating_app("a", journal), enable_auto_commit=False)
    group.run_for(4.0)
    group.add_member("b", iterating_app("b", journal), enable_auto_commit=False)
    group.produce(TOPIC, 600)
    group.run_for(4.0)
    group.add_member("c", iterating_app("c", journal), enable_auto_commit=False)
    group.produce(TOPIC, 600)
    group.run_for(4.0)
    group.stop("a")
    group.produce(TOPIC, 600)
    group.run_for(3.0)
    group.stop("b")
    group.produce(TOPIC, 600)
    assert group.run_until(lambda: len(journal.distinct()) == 3000, 60.0), len(journal.distinct())
    group.check()
    assert journal.duplicates() == 0
    revokes = [e for e in journal.events if e[1] == "revoked"]
    assert {name for name, _, _ in revokes} == {"a", "b", "c"}
    assert not [e for e in journal.events if e[1] == "lost"]
    assert journal.overlaps == 0
    for name, threads in journal.listener_threads.items():
        assert threads == {journal.loop_threads[name]}, name
    # the revoke commits moved the group's offsets to what had been received
    committed = group.committed()
    assert sum(committed.values()) == 3000


def test_cancelled_polls_lose_nothing() -> None:
    """Every poll is wrapped in ``asyncio.wait_for`` with a short, random timeout, so many are
    cancelled while running, some after they fetched records. The records come back from the
    next poll: each exactly once, in order per partition, across a rebalance."""
    journal = Journal()
    cancelled_with_records = [0]
    rng = random.Random(5)

    def app(name: str):
        async def run(consumer: aio.Consumer, running: Running) -> None:
            await consumer.subscribe([TOPIC], listener=CommittingListener(name, consumer, journal))
            poll_job = consumer._poll_job

            def counting_poll_job(timeout_ms: int, *kind: Any) -> None:
                if consumer._buffer:  # kept from a cancelled poll: this poll returns them
                    cancelled_with_records[0] += 1
                poll_job(timeout_ms, *kind)

            consumer._poll_job = counting_poll_job  # type: ignore[method-assign]
            while running():
                try:
                    records = await asyncio.wait_for(consumer.poll(200), rng.choice((0.001, 0.004, 0.02, 0.3)))
                except asyncio.TimeoutError:
                    continue
                journal.received += [(name, r.partition, r.offset) for r in records]
                if records:
                    await consumer.commit()
            await consumer.close()

        return run

    run_two_members_across_a_rebalance(app, journal, seed=3)
    assert cancelled_with_records[0] > 0, cancelled_with_records  # the case that matters happened
    print("cancelled polls whose records the next poll returned:", cancelled_with_records[0])


def run_two_members_across_a_rebalance(app: Callable[[str], Any], journal: Journal, *, seed: int) -> SimulatedGroup:
    """Members a, then b (a rebalance), 4,000 records on 4 partitions: each received exactly once,
    in order per member and partition, and the simulator's checks hold."""
    group = SimulatedGroup({TOPIC: 4}, seed=seed)
    group.produce(TOPIC, 2000)
    group.add_member("a", app("a"), enable_auto_commit=False, max_poll_records=50)
    group.run_for(3.0)
    group.add_member("b", app("b"), enable_auto_commit=False, max_poll_records=50)
    group.produce(TOPIC, 2000)
    assert group.run_until(lambda: len(journal.distinct()) == 4000, 60.0), len(journal.distinct())
    group.check()
    assert journal.duplicates() == 0
    for member in ("a", "b"):
        by_partition: dict[int, list[int]] = {}
        for name, p, o in journal.received:
            if name == member:
                by_partition.setdefault(p, []).append(o)
        for offsets in by_partition.values():
            assert offsets == sorted(offsets)
    return group


def test_cancelled_poll_columns_mixed_with_polls_lose_nothing() -> None:
    """``poll_columns()`` and ``poll()`` in turn, each in a short random ``wait_for``: what a
    cancelled call buffered is returned by the next call of its kind, or given back (positions
    rewound) and fetched again by a call of the other kind. Each record arrives exactly once, in
    order per partition, across a rebalance, and the commits cover only what was received."""
    journal = Journal()
    switched = [0]
    kept = [0]
    rng = random.Random(8)

    def app(name: str):
        async def run(consumer: aio.Consumer, running: Running) -> None:
            await consumer.subscribe([TOPIC], listener=CommittingListener(name, consumer, journal))
            poll_job = consumer._poll_job

            def counting_poll_job(timeout_ms: int, columns: bool = False, *rest: Any) -> None:
                if consumer._buffer:
                    if consumer._buffer.columns == columns:
                        kept[0] += 1
                    else:
                        switched[0] += 1  # the other kind's: given back, fetched again
                poll_job(timeout_ms, columns, *rest)

            consumer._poll_job = counting_poll_job  # type: ignore[method-assign]
            while running():
                as_columns = rng.random() < 0.6
                call = consumer.poll_columns(200, max_records=rng.choice((1, 7, 40))) if as_columns else (
                    consumer.poll(200))
                try:
                    fetched = await asyncio.wait_for(call, rng.choice((0.001, 0.004, 0.02, 0.3)))
                except asyncio.TimeoutError:
                    continue
                if as_columns:
                    assert all(isinstance(c, kgroup.RecordColumns) for c in fetched)
                    got = [(name, c.topic_partition.partition, o) for c in fetched for o in c.offsets]
                    assert sum(len(c) for c in fetched) == len(got)
                else:
                    assert all(isinstance(r, kgroup.ConsumerRecord) for r in fetched)
                    got = [(name, r.partition, r.offset) for r in fetched]
                journal.received += got
                if got:
                    await consumer.commit()
            await consumer.close()

        return run

    group = run_two_members_across_a_rebalance(app, journal, seed=4)
    assert switched[0] > 0 and kept[0] > 0, (switched, kept)  # both cases happened
    assert sum(group.committed().values()) == 4000


def test_cancelled_polls_with_auto_commit_commit_only_what_was_received() -> None:
    """The same cancellations with auto-commit and a crash: the auto-commits and the revoke
    commits of the wrapped consumer cover only records the application received
    (``check()``: no record lost, no commit beyond hand-out)."""
    journal = Journal()
    rng = random.Random(9)

    def app(name: str):
        async def run(consumer: aio.Consumer, running: Running) -> None:
            await consumer.subscribe([TOPIC])
            while running():
                try:
                    records = await asyncio.wait_for(consumer.poll(100), rng.choice((0.002, 0.01, 0.2)))
                except asyncio.TimeoutError:
                    continue
                journal.received += [(name, r.partition, r.offset) for r in records]
            await consumer.close()

        return run

    group = SimulatedGroup({TOPIC: 3}, seed=4)
    group.produce(TOPIC, 900)
    for name in ("a", "b"):
        group.add_member(name, app(name), enable_auto_commit=True, auto_commit_interval_ms=200, max_poll_records=20)
    group.run_for(3.0)
    group.crash("b")
    group.produce(TOPIC, 900)
    assert group.run_until(lambda: len(journal.distinct()) == 1800, 60.0)
    group.check()


def test_the_same_seed_replays_exactly_with_asyncio_members() -> None:
    """The worker threads and event loops take turns with the scheduler's baton: same seed, same run."""

    def run_once() -> tuple[list[str], list[tuple[str, int, int]], float]:
        journal = Journal()
        rng = random.Random(2)

        def app(name: str):
            async def run(consumer: aio.Consumer, running: Running) -> None:
                await consumer.subscribe([TOPIC], listener=CommittingListener(name, consumer, journal))
                while running():
                    try:
                        records = await asyncio.wait_for(consumer.poll(100), rng.choice((0.003, 0.05)))
                    except asyncio.TimeoutError:
                        continue
                    journal.received += [(name, r.partition, r.offset) for r in records]
                    consumer.commit_async()
                await consumer.close()

            return run

        group = SimulatedGroup({TOPIC: 4}, seed=8)
        group.produce(TOPIC, 500)
        group.add_member("a", app("a"), enable_auto_commit=False, max_poll_records=30)
        group.add_member("b", iterating_app("b", journal), enable_auto_commit=False)
        group.run_for(5.0)
        group.crash("a")
        group.add_member("c", app("c"), enable_auto_commit=False, max_poll_records=30)
        group.produce(TOPIC, 500)
        group.run_for(20.0)
        group.check()
        return group.lines, journal.received, group.now

    first, second = run_once(), run_once()
    assert first[1] and len({(p, o) for _, p, o in first[1]}) == 1000
    assert first == second


def test_close_is_bounded_and_ends_the_running_poll() -> None:
    """close(timeout_ms) from another task: the ``async for`` blocked in a long poll ends at once,
    LeaveGroup goes out (the other member takes over without a session timeout), and close
    returns within its timeout even when a revoke callback never finishes."""
    took: dict[str, float] = {}
    iteration_ended: list[str] = []
    received: list[tuple[int, int]] = []

    class Stuck(aio.RebalanceListener):
        hang = False

        async def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
            if self.hang:
                await asyncio.sleep(3600)

    def app(name: str, listener: aio.RebalanceListener | None, timeout_ms: int):
        async def run(consumer: aio.Consumer, running: Running) -> None:
            await consumer.subscribe([TOPIC], listener=listener)
            loop = asyncio.get_running_loop()

            async def consume() -> None:
                async for record in consumer:
                    received.append((record.partition, record.offset))
                iteration_ended.append(name)

            task = asyncio.ensure_future(consume())
            while running():
                await asyncio.sleep(0.05)
            started = loop.time()
            await consumer.close(timeout_ms=timeout_ms)
            took[name] = loop.time() - started
            await asyncio.wait_for(task, 1.0)

        return run

    group = SimulatedGroup({TOPIC: 2}, seed=6)
    group.produce(TOPIC, 10)
    a = group.add_member("a", app("a", None, 5000))
    stuck = Stuck()
    b = group.add_member("b", app("b", stuck, 2000))
    assert group.run_until(lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1, 30.0)
    assert group.run_until(lambda: len(received) == 10, 30.0)
    group.stop("a")  # a's async for is blocked in poll(1000) with nothing to fetch
    assert group.run_until(lambda: "a" in took, 10.0)
    assert took["a"] < 1.0  # no wait for the poll's timeout
    assert iteration_ended == ["a"]
    # a sent LeaveGroup: b owns both partitions long before a session timeout (10 s) passes
    left_at = group.now
    assert group.run_until(lambda: len(b.assignment()) == 2, 5.0), group.now - left_at
    stuck.hang = True
    group.stop("b")  # b's revoke callback hangs: close gives up after its 2 s
    assert group.run_until(lambda: "b" in took, 10.0)
    assert 2.0 <= took["b"] <= 2.1
    assert iteration_ended == ["a", "b"]
    group.check()


def test_a_revoke_callback_may_wait_for_another_task_that_commits() -> None:
    """The revoke callback waits for in-flight processing, whose task commits itself: the commit
    runs while the worker waits for the callback (no deadlock), before the partitions move."""
    journal = Journal()
    commits_in_revoke: list[int] = []

    def app(name: str):
        async def run(consumer: aio.Consumer, running: Running) -> None:
            queue: asyncio.Queue[kgroup.ConsumerRecord] = asyncio.Queue(maxsize=5)

            class Drain(aio.RebalanceListener):
                async def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
                    before = len(journal.received)
                    await queue.join()  # the worker task commits what it processed
                    commits_in_revoke.append(len(journal.received) - before)

            async def work() -> None:
                while True:
                    record = await queue.get()
                    await asyncio.sleep(0.01)
                    journal.received.append((name, record.partition, record.offset))
                    await consumer.commit({record.topic_partition: record.offset + 1})
                    queue.task_done()

            worker = asyncio.ensure_future(work())
            await consumer.subscribe([TOPIC], listener=Drain())
            while running():
                for record in await consumer.poll(100):
                    await queue.put(record)
            await consumer.close()
            worker.cancel()

        return run

    group = SimulatedGroup({TOPIC: 4}, seed=12)
    group.produce(TOPIC, 400)
    group.add_member("a", app("a"), enable_auto_commit=False, max_poll_records=10)
    group.run_for(1.0)
    group.add_member("b", app("b"), enable_auto_commit=False, max_poll_records=10)
    group.produce(TOPIC, 400)
    assert group.run_until(lambda: len(journal.distinct()) == 800, 60.0)
    group.check()
    assert journal.duplicates() == 0
    assert commits_in_revoke and max(commits_in_revoke) > 0


def test_poll_and_close_from_a_callback_raise_illegal_state() -> None:
    errors: list[str] = []

    class Misbehaving(aio.RebalanceListener):
        def __init__(self, consumer: aio.Consumer) -> None:
            self.consumer = consumer

        async def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
            for call in (self.consumer.poll(0), self.consumer.close()):
                try:
                    await call
                except kgroup.IllegalStateError as exc:
                    errors.append(str(exc))
            await self.consumer.commit()  # fine
            assert await self.consumer.committed(partitions) is not None

    async def app(consumer: aio.Consumer, running: Running) -> None:
        await consumer.subscribe([TOPIC], listener=Misbehaving(consumer))
        while running():
            await consumer.poll(100)
        await consumer.close()

    group = SimulatedGroup({TOPIC: 1}, seed=1)
    group.add_member("a", app)
    assert group.run_until(lambda: len(errors) == 2, 10.0)
    assert "poll() must not be called" in errors[0]
    assert "close() must not be called" in errors[1]
    group.check()


def test_buffered_records_are_not_consumed_until_received() -> None:
    """``async for`` hands out one record of a fetched batch: ``position()``, a default commit and
    ``current_lag()`` count only what was received; ``pause()`` gives the rest back, ``seek()``
    drops it; a second consumer then reads from the committed offset."""
    seen: dict[str, Any] = {}
    tp = TopicPartition(TOPIC, 0)

    async def app(consumer: aio.Consumer, running: Running) -> None:
        await consumer.subscribe([TOPIC])
        iterator = aio_iter(consumer)
        first = await iterator.__anext__()
        seen["first"] = first.offset
        seen["buffered"] = len(consumer._buffer)
        seen["position"] = await consumer.position(tp)
        seen["lag"] = consumer.current_lag(tp)
        await consumer.commit()
        seen["committed"] = (await consumer.committed([tp]))[tp]
        consumer.pause([tp])
        seen["after_pause"] = (len(consumer._buffer), await consumer.position(tp), consumer.paused())
        consumer.resume([tp])
        second = await iterator.__anext__()
        seen["second"] = second.offset
        consumer.seek(tp, 50)
        seen["after_seek"] = (len(consumer._buffer), await consumer.position(tp))
        third = await iterator.__anext__()
        seen["third"] = third.offset
        await consumer.close()

    group = SimulatedGroup({TOPIC: 1}, seed=2)
    group.produce(TOPIC, 100)
    group.add_member("a", app, enable_auto_commit=False)
    assert group.run_until(lambda: "third" in seen, 30.0)
    group.run_for(1.0)
    assert seen["first"] == 0
    assert seen["buffered"] > 0  # the rest of the batch waits in the aio consumer
    assert seen["position"] == 1
    assert seen["lag"] == 99
    assert seen["committed"] == kgroup.OffsetAndMetadata(1)
    assert seen["after_pause"] == (0, 1, frozenset({tp}))
    assert seen["second"] == 1  # fetched again after the resume
    assert seen["after_seek"] == (0, 50)
    assert seen["third"] == 50
    group.check()


def aio_iter(consumer: aio.Consumer):
    return consumer.__aiter__()


def test_wakeup_interrupts_a_poll_and_one_swallowed_by_a_cancelled_poll_is_kept() -> None:
    outcomes: list[str] = []

    async def app(consumer: aio.Consumer, running: Running) -> None:
        await consumer.subscribe([TOPIC])
        await consumer.poll(500)
        loop = asyncio.get_running_loop()
        # another task wakes the consumer up while poll() waits
        loop.call_later(0.2, consumer.wakeup)
        try:
            await consumer.poll(5000)
        except kgroup.WakeupError:
            outcomes.append(f"woken after {loop.time():.1f}")
        # a wakeup used up by a poll whose awaiter gave up is kept for the next call
        task = asyncio.ensure_future(consumer.poll(5000))
        await asyncio.sleep(0.1)
        task.cancel()
        consumer.wakeup()
        with pytest.raises(asyncio.CancelledError):
            await task
        started = loop.time()
        try:
            await consumer.poll(5000)
        except kgroup.WakeupError:
            outcomes.append(f"kept ({loop.time() - started:.1f} s)")
        outcomes.append(f"then {len(await consumer.poll(100))} records")
        await consumer.close()

    group = SimulatedGroup({TOPIC: 1}, seed=2)
    group.add_member("a", app)
    assert group.run_until(lambda: len(outcomes) == 3, 30.0), outcomes
    assert outcomes[1:] == ["kept (0.0 s)", "then 0 records"]
    group.check()


def test_a_raising_async_callback_surfaces_from_poll_as_listener_error() -> None:
    outcomes: list[BaseException] = []

    class Raising(aio.RebalanceListener):
        async def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
            await asyncio.sleep(0.01)
            raise ValueError("boom")

    async def app(consumer: aio.Consumer, running: Running) -> None:
        await consumer.subscribe([TOPIC], listener=Raising())
        while running() and not outcomes:
            try:
                await consumer.poll(100)
            except kgroup.ListenerError as exc:
                outcomes.append(exc)
        await consumer.close()

    group = SimulatedGroup({TOPIC: 2}, seed=2)
    group.add_member("a", app)
    assert group.run_until(lambda: bool(outcomes), 10.0)
    assert isinstance(outcomes[0].__cause__, ValueError)
    group.check()


def test_close_gives_buffered_records_back_before_its_auto_commit() -> None:
    """Breaking out of ``async for`` mid-batch, then closing with auto-commit on: the revoke
    commit of close covers the five records received, not the rest of the fetched batch, and
    the next member starts right after them."""
    received: dict[str, list[int]] = {"a": [], "b": []}

    def app(name: str, stop_after: int | None):
        async def run(consumer: aio.Consumer, running: Running) -> None:
            await consumer.subscribe([TOPIC])
            async for record in consumer:
                received[name].append(record.offset)
                if stop_after is not None and len(received[name]) == stop_after:
                    break
            buffered = len(consumer._buffer)
            await consumer.close()
            received[name].append(-buffered)  # how many records close gave back

        return run

    group = SimulatedGroup({TOPIC: 1}, seed=2)
    group.produce(TOPIC, 50)
    group.add_member("a", app("a", 5), enable_auto_commit=True)
    assert group.run_until(lambda: len(received["a"]) == 6, 30.0)
    assert received["a"][:5] == [0, 1, 2, 3, 4] and received["a"][5] < 0  # records were buffered
    assert group.committed() == {TopicPartition(TOPIC, 0): 5}
    group.add_member("b", app("b", None), enable_auto_commit=True)
    assert group.run_until(lambda: len(received["b"]) == 45, 30.0)
    assert received["b"] == list(range(5, 50))
    group.check()


def test_a_callback_runs_in_the_context_of_the_task_that_awaited_poll() -> None:
    """contextvars set by the polling task (a trace id, say) are seen by its listener callbacks,
    plain or coroutine, and a plain callback may seek without awaiting."""
    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
    seen: list[tuple[str, str]] = []
    first: list[int] = []

    class Plain(kgroup.RebalanceListener):
        def __init__(self, consumer: aio.Consumer) -> None:
            self.consumer = consumer

        def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
            seen.append(("plain", request_id.get()))
            for tp in partitions:
                self.consumer.seek(tp, 5)

    class Coroutine(aio.RebalanceListener):
        async def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
            seen.append(("coroutine", request_id.get()))

    async def app(consumer: aio.Consumer, running: Running) -> None:
        request_id.set("poller")
        await consumer.subscribe([TOPIC], listener=Plain(consumer))
        while not first:
            first.extend(r.offset for r in await consumer.poll(100))
        await consumer.subscribe([TOPIC], listener=Coroutine())
        request_id.set("closer")
        await consumer.close()

    group = SimulatedGroup({TOPIC: 1}, seed=2)
    group.produce(TOPIC, 20)
    group.add_member("a", app)
    assert group.run_until(lambda: len(seen) == 2, 10.0)
    assert seen == [("plain", "poller"), ("coroutine", "closer")]
    assert first[0] == 5


def test_unsubscribe_revokes_with_an_awaited_commit_and_gives_buffered_records_back() -> None:
    """``async for`` stops mid-batch; ``unsubscribe()`` runs the async revoke callback, whose
    commit covers the received records only; auto-commit on revoke does not skip the buffered
    rest; the member leaves, the other one continues right after; a second subscribe rejoins."""
    received: dict[str, list[int]] = {"a": [], "b": []}
    revoked: list[frozenset[TopicPartition]] = []
    stopped = [False]

    class Commit(aio.RebalanceListener):
        def __init__(self, consumer: aio.Consumer) -> None:
            self.consumer = consumer

        async def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
            revoked.append(partitions)
            await self.consumer.commit()

    async def a_app(consumer: aio.Consumer, running: Running) -> None:
        await consumer.subscribe([TOPIC], listener=Commit(consumer))
        async for record in consumer:
            received["a"].append(record.offset)
            if len(received["a"]) == 7:
                break
        await consumer.unsubscribe()
        stopped[0] = True
        assert consumer.assignment() == frozenset()
        while running():
            await asyncio.sleep(0.1)
        await consumer.close()

    async def b_app(consumer: aio.Consumer, running: Running) -> None:
        await consumer.subscribe([TOPIC])
        while running():
            received["b"] += [r.offset for r in await consumer.poll(100)]
        await consumer.close()

    group = SimulatedGroup({TOPIC: 1}, seed=3)
    group.produce(TOPIC, 40)
    group.add_member("a", a_app, enable_auto_commit=True)
    assert group.run_until(lambda: stopped[0], 30.0)
    assert revoked == [frozenset({TopicPartition(TOPIC, 0)})]
    assert group.committed() == {TopicPartition(TOPIC, 0): 7}
    group.add_member("b", b_app)
    assert group.run_until(lambda: len(received["b"]) == 33, 30.0)
    assert received["b"] == list(range(7, 40))
    group.check()


def test_enforce_rebalance_reason_reaches_an_async_listener() -> None:
    reasons: list[tuple[str, str]] = []
    go: list[bool] = []

    class Reasons(aio.RebalanceListener):
        def __init__(self, consumer: aio.Consumer) -> None:
            self.consumer = consumer

        async def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
            reasons.append(("revoked", self.consumer.rebalance_reason))

        async def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
            reasons.append(("assigned", self.consumer.rebalance_reason))

    async def app(consumer: aio.Consumer, running: Running) -> None:
        await consumer.subscribe([TOPIC], listener=Reasons(consumer))
        while running():
            if go and go.pop():
                consumer.enforce_rebalance("the pricing model changed")
            await consumer.poll(100)
        await consumer.close()

    group = SimulatedGroup({TOPIC: 2}, seed=4)
    a = group.add_member("a", app)
    assert group.run_until(lambda: a.metrics()["rebalance-total"] == 1, 30.0)
    go.append(True)
    assert group.run_until(lambda: a.metrics()["rebalance-total"] == 2, 30.0)
    assert ("revoked", "the pricing model changed") in reasons
    group.check()


def test_aio_assign_and_pattern_subscribe() -> None:
    """The asyncio consumer passes assign() and subscribe(pattern=...) through to the sync core."""
    import kgroup.aio

    group = SimulatedGroup({"orders-eu": 1, "orders-us": 1, "audit": 1}, seed=61)
    got: dict[str, list[tuple[str, int]]] = {"pattern": [], "assigned": []}

    def make(kind: str):  # type: ignore[no-untyped-def]
        async def app(consumer: kgroup.aio.Consumer, running):  # type: ignore[no-untyped-def]
            if kind == "pattern":
                await consumer.subscribe(pattern=r"orders-\w+")
            else:
                await consumer.assign([kgroup.TopicPartition("audit", 0)])
            while running():
                got[kind].extend((r.topic, r.offset) for r in await consumer.poll(100))
            await consumer.close()

        return app

    group.add_member("p", make("pattern"))
    group.add_member("m", make("assigned"), group_id="another-group")
    group.produce("orders-eu", 2)
    group.produce("orders-us", 2)
    group.produce("audit", 3)
    assert group.run_until(lambda: len(got["pattern"]) == 4 and len(got["assigned"]) == 3, 30)
    assert {t for t, _ in got["pattern"]} == {"orders-eu", "orders-us"}
    assert got["assigned"] == [("audit", 0), ("audit", 1), ("audit", 2)]
    group.close()
