"""Groups of ``kgroup.ParallelProcessor`` in the simulator, checked at every step.

Each member runs a real :class:`kgroup.ParallelProcessor` on a real ``Consumer`` (the runs of
``_run.py``: same cluster, coordinator models, ownership and liveness checks), with two ports
swapped through the processor's ``_runtime``: its thread pool is a pool of simulated threads
(:class:`SimExecutor`, which take turns with everything else) and its completion queue blocks on
virtual time (:class:`SimCompletions`). Handlers sleep a virtual duration drawn from the seed and
the record, and sometimes fail (retries, the dead-letter hook). Records carry keys and values of
drawn sizes. Faults: member crashes (kill: nothing more is committed), restarts, clean closes
(leave, then join again). Both group protocols.

Checked as it happens (``ParallelChecker``):

* **per-key order within a generation**: in one member's ownership of a partition, the records of
  one lane (``ordering="key"``: the partition and key; ``"partition"``: the partition) start in
  offset order (a record may start again only after its attempt failed) and never two at once;
* **no commit past an incomplete record**: every OffsetCommit a member sends commits an offset
  whose records below are all completed (by it, or by the previous owners whose completions it
  skipped), and the completions its metadata claims above it are all really completed;
* **buffered records and bytes within their bounds**: after every turn of every simulated thread,
  the records a processor took and did not complete are at most ``max_buffered_records - 1 +
  max_poll_records`` (bytes likewise: one ``poll()`` more may come in before the pause), and its
  counts of records and bytes match a recount of its queues.

Checked at the end: **no record completed twice across a clean handover**: a record completed
twice was first completed by a member that later crashed, lost the partition or failed its
revocation commit, or was still running when its member's revocation timed out
(``revoke_timeout_ms``), or was left out of a commit's metadata to fit ``max_metadata_chars``;
and **every record completed** (liveness).
"""

from __future__ import annotations

import concurrent.futures
import itertools
import math
import queue
import random
import zlib
from collections import deque
from collections.abc import Callable
from typing import Any

import attrs

from kgroup._parallel.offsets import decode_completed
from kgroup.errors import FatalGroupError, GroupThreadCrashed, KGroupError, WakeupError
from kgroup.listener import RebalanceListener
from kgroup.parallel import ParallelProcessor, ProcessingError
from kgroup.testing.simulation._cluster import FaultProfile
from kgroup.testing.simulation._invariants import Checker, _Handed
from kgroup.testing.simulation._run import (
    _CLIENT_ERRORS,
    ASSIGNOR_LISTS,
    SERVER_ASSIGNORS,
    VERSION,
    FaultEvent,
    MemberSpec,
    RunResult,
    Scenario,
    Simulation,
    _Incarnation,
    liveness_bound_s,
)
from kgroup.testing.simulation._scheduler import Killed, Scheduler, SimThread
from kgroup.types import ConsumerRecord, TopicPartition

__all__ = [
    "ParallelChecker",
    "ParallelScenario",
    "ParallelSimulation",
    "SimCompletions",
    "SimExecutor",
    "parallel_scenario_for",
    "run_parallel_seed",
]

#: the consumer's max_poll_records in a run (``_Incarnation``)
MAX_POLL_RECORDS = 50


# ---------------------------------------------------------------------- the processor's runtime
class SimCompletions:
    """``queue.SimpleQueue``'s ``put``/``get``/``get_nowait``, waiting on the scheduler's virtual time."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler
        self._items: deque[Any] = deque()

    def put(self, item: Any) -> None:
        self._items.append(item)

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        if not self._items and block:
            self._scheduler.block(lambda: bool(self._items), math.inf if timeout is None else timeout)
        if not self._items:
            raise queue.Empty
        return self._items.popleft()

    def get_nowait(self) -> Any:
        return self.get(False)


class SimExecutor(concurrent.futures.Executor):
    """``ThreadPoolExecutor`` on simulated threads: up to ``max_workers``, started as work comes.

    As ``ThreadPoolExecutor`` does, a submission takes an idle worker if one is left, else starts
    a new one below ``max_workers``, else waits in the queue. ``spawn(name, target)`` starts a
    simulated thread of the member (so that a crash kills it).
    """

    def __init__(self, scheduler: Scheduler, spawn: Callable[[str, Callable[[], None]], SimThread],
                 max_workers: int) -> None:
        self._scheduler = scheduler
        self._spawn = spawn
        self._max = max_workers
        self._work: deque[tuple[concurrent.futures.Future[Any], Callable[..., Any], tuple[Any, ...]]] = deque()
        self._workers = 0
        self._idle = 0
        self._shutdown = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        if self._shutdown:
            raise RuntimeError("cannot schedule new futures after shutdown")
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._work.append((future, lambda: fn(*args, **kwargs), ()))
        if self._idle:
            self._idle -= 1
        elif self._workers < self._max:
            self._workers += 1
            self._spawn(f"pool-{self._workers}", self._worker)
        return future

    def _worker(self) -> None:
        while True:
            self._scheduler.block(lambda: bool(self._work) or self._shutdown, math.inf)
            if not self._work:
                return  # shut down
            future, fn, _ = self._work.popleft()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except Killed:
                    raise
                except BaseException as exc:
                    future.set_exception(exc)
            self._idle += 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._shutdown = True
        if cancel_futures:
            while self._work:
                self._work.popleft()[0].cancel()


class _SimRuntime:
    """The processor's ``_runtime`` in a simulation."""

    def __init__(self, scheduler: Scheduler, spawn: Callable[[str, Callable[[], None]], SimThread]) -> None:
        self._scheduler = scheduler
        self._spawn = spawn

    def executor(self, max_workers: int) -> concurrent.futures.Executor:
        return SimExecutor(self._scheduler, self._spawn, max_workers)

    def completions(self) -> Any:
        return SimCompletions(self._scheduler)


# ---------------------------------------------------------------------- scenarios
@attrs.frozen
class ParallelScenario:
    """A run of ``ParallelProcessor`` members: the group scenario and the processors' settings."""

    base: Scenario
    ordering: str
    max_concurrency: int
    max_buffered_records: int
    max_buffered_bytes: int
    commit_interval_ms: int
    revoke_timeout_ms: int
    retries: int
    #: distinct keys per partition (a share of records has a null key)
    keys: int
    max_value_bytes: int
    #: the handlers' usual virtual duration (mean, ms), and the share that runs ``long_ms`` more
    handler_ms: float
    long_share: float
    long_ms: int
    #: the share of attempts that raise
    fail_share: float
    #: the broker's ``offset.metadata.max.bytes`` the processor is told (small: completions are left out)
    max_metadata_chars: int = 4096

    @property
    def seed(self) -> int:
        return self.base.seed


def parallel_scenario_for(seed: int, group_protocol: str = "classic") -> ParallelScenario:
    """The scenario of ``seed``: 2 to 4 processors, 1 or 2 topics, 2 to 6 crashes, restarts and closes."""
    rng = random.Random(seed * 31337 + 7)
    topics = tuple((f"t{i}", rng.randint(2, 6)) for i in range(rng.choice((1, 1, 2))))
    n_members = rng.randint(2, 4)
    assignors = rng.choice(ASSIGNOR_LISTS)
    members = tuple(
        MemberSpec(
            name=f"m{i}", static=rng.random() < 0.3,
            assignors=SERVER_ASSIGNORS[assignors] if group_protocol == "consumer" else assignors,
            commit_mode="sync", poll_timeout_ms=100, processing_ms=0,
        )
        for i in range(n_members)
    )
    fault_end = rng.uniform(10.0, 20.0)
    faults = tuple(sorted(
        (
            FaultEvent(at=rng.uniform(3.0, fault_end), kind=rng.choice(("crash", "crash", "restart", "close")),
                       member=rng.randrange(n_members), arg=rng.random())
            for _ in range(rng.randint(2, 6))
        ),
        key=lambda f: f.at,
    ))
    session, heartbeat, max_poll, metadata_age = 10000, rng.choice((1000, 2000)), 30000, 10000
    base = Scenario(
        seed=seed, topics=topics, members=members, session_timeout_ms=session, heartbeat_interval_ms=heartbeat,
        max_poll_interval_ms=max_poll, metadata_max_age_ms=metadata_age, rebalance_delay_ms=0,
        produce_every_s=rng.choice((0.05, 0.1, 0.2)), fault_end_s=fault_end,
        quiet_s=liveness_bound_s(session, max_poll, metadata_age),
        profile=FaultProfile(delay=rng.choice((0.0, 0.05)), max_delay_s=0.2),
        faults=faults, group_protocol=group_protocol, version=VERSION,
    )
    params = ParallelScenario(
        base=base,
        ordering=rng.choice(("key", "key", "key", "partition", "unordered")),
        max_concurrency=rng.choice((1, 2, 4, 8)),
        max_buffered_records=rng.choice((5, 20, 100, 10_000)),
        max_buffered_bytes=rng.choice((200, 2000, 64 * 1024 * 1024)),
        commit_interval_ms=rng.choice((50, 100, 500)),
        revoke_timeout_ms=rng.choice((10_000, 10_000, 10_000, 300)),
        retries=rng.choice((0, 1, 3)),
        keys=rng.choice((1, 3, 10)),
        max_value_bytes=rng.choice((0, 20, 100)),
        handler_ms=rng.choice((1.0, 5.0, 20.0)),
        long_share=rng.choice((0.0, 0.002, 0.01, 0.03)),
        long_ms=rng.choice((200, 1000, 3000)),
        fail_share=rng.choice((0.0, 0.0, 0.03)),
        max_metadata_chars=rng.choice((4096, 4096, 4096, 13)),
    )
    # the records come at a quarter at most of what one member alone processes: the backlog of
    # the faults is gone well within the liveness bound
    partitions = sum(count for _, count in topics)
    lanes = {"key": partitions * params.keys, "partition": partitions, "unordered": params.max_concurrency}
    cost_s = (params.handler_ms + params.long_share * params.long_ms) / 1000
    capacity = min(params.max_concurrency, lanes[params.ordering]) / cost_s
    slowest = 3 / (0.25 * capacity)  # 3 records a production on average
    if base.produce_every_s < slowest:
        params = attrs.evolve(params, base=attrs.evolve(base, produce_every_s=round(slowest, 3)))
    return params


def _draw(*parts: object) -> float:
    """A number in [0, 1) fixed by ``parts`` (the same in every process and run)."""
    return zlib.crc32("/".join(map(str, parts)).encode()) / 2**32


# ---------------------------------------------------------------------- the checks
class ParallelChecker(Checker):
    """``Checker`` plus the processor's properties (the module docstring)."""

    def __init__(self, now: Callable[[], float], ordering: str, max_metadata_chars: int = 4096) -> None:
        super().__init__(now)
        self._max_metadata_chars = max_metadata_chars
        self.hand_out_bound = False  # the processor's commits are checked against completions instead
        self._ordering = ordering
        #: (incarnation, partition) -> its ownership count (bumped by each on_partitions_assigned)
        self._epoch: dict[tuple[str, TopicPartition], int] = {}
        #: (incarnation, partition, offset) -> the ownership its last hand-out was in
        self._handed_in: dict[tuple[str, TopicPartition, int], int] = {}
        #: (incarnation, ownership, lane) -> the offset running now
        self._running: dict[tuple[str, int, object], int] = {}
        #: (incarnation, ownership, lane) -> (the last offset started, whether that attempt failed)
        self._last: dict[tuple[str, int, object], tuple[int, bool]] = {}
        #: (partition, offset) -> [(incarnation, when)] of each completion
        self._completions: dict[tuple[TopicPartition, int], list[tuple[str, float]]] = {}
        self._done: dict[TopicPartition, _Handed] = {}
        #: (incarnation, partition, offset): records the processor may run again after a clean handover:
        #: running when its member's revocation timed out, or left out of a commit's metadata to fit
        self._abandoned: set[tuple[str, TopicPartition, int]] = set()
        #: (incarnation, partition) -> the offsets it completed
        self._completed_by: dict[tuple[str, TopicPartition], set[int]] = {}
        self.completed = 0
        self.started = 0

    def _lane(self, record: ConsumerRecord[Any, Any]) -> object | None:
        tp = TopicPartition(record.topic, record.partition)
        if self._ordering == "key":
            return (tp, record.key)
        if self._ordering == "partition":
            return tp
        return None

    def owns(self, who: str, partitions: frozenset[TopicPartition]) -> None:
        """``who``'s processor was given ``partitions`` (``on_partitions_assigned``)."""
        for tp in partitions:
            self._epoch[(who, tp)] = self._epoch.get((who, tp), 0) + 1

    def taken(self, who: str, records: list[ConsumerRecord[Any, Any]]) -> None:
        """``poll()`` gave ``records`` to ``who``'s processor."""
        for record in records:
            tp = TopicPartition(record.topic, record.partition)
            self._handed_in[(who, tp, record.offset)] = self._epoch.get((who, tp), 0)

    def abandoned(self, who: str, tp: TopicPartition, offset: int) -> None:
        """A record of ``who`` still ran when its partition's revocation gave up waiting."""
        self._abandoned.add((who, tp, offset))

    def _key(self, who: str, record: ConsumerRecord[Any, Any]) -> tuple[str, int, object] | None:
        lane = self._lane(record)
        if lane is None:
            return None
        tp = TopicPartition(record.topic, record.partition)
        return (who, self._handed_in.get((who, tp, record.offset), 0), lane)

    def start(self, who: str, record: ConsumerRecord[Any, Any]) -> tuple[str, int, object] | None:
        """An attempt at ``record`` starts on ``who``'s pool (the handler, or the dead-letter hook).

        Returns the attempt's lane in its ownership, for ``end()`` (the ownership of its hand-out
        now: a record handed out again later, after its partition came back, is another attempt).
        """
        self.started += 1
        key = self._key(who, record)
        if key is None:
            return None
        where = f"{record.topic}-{record.partition}@{record.offset} (key {record.key!r}) on {who}"
        running = self._running.get(key)
        if running is not None:
            self.fail("two records of one lane at once", f"{where} started while offset {running} still runs")
        last = self._last.get(key)
        if last is not None and (record.offset < last[0] or (record.offset == last[0] and not last[1])):
            again = "again after it completed" if record.offset == last[0] else f"after offset {last[0]}"
            self.fail("records of one lane out of offset order", f"{where} started {again}")
        self._running[key] = record.offset
        self._last[key] = (record.offset, False)
        return key

    def end(self, who: str, record: ConsumerRecord[Any, Any], key: tuple[str, int, object] | None, ok: bool) -> None:
        """The attempt ``start()`` returned ``key`` for ended: completed (``ok``), or it raised."""
        if key is not None:
            if self._running.get(key) == record.offset:
                del self._running[key]
            self._last[key] = (record.offset, not ok)
        if not ok:
            return
        self.completed += 1
        tp = TopicPartition(record.topic, record.partition)
        self._completions.setdefault((tp, record.offset), []).append((who, self._now()))
        self._completed_by.setdefault((who, tp), set()).add(record.offset)
        done = self._done.get(tp)
        if done is None:
            done = self._done[tp] = _Handed()
        done.add(record.offset)

    def done_low(self, tp: TopicPartition) -> int:
        """The lowest offset of ``tp`` not completed by any member."""
        done = self._done.get(tp)
        return done.low if done is not None else 0

    def _is_done(self, tp: TopicPartition, offset: int) -> bool:
        done = self._done.get(tp)
        return done is not None and bool(done.bits >> offset & 1)

    def commit_sent(self, who: str, tp: TopicPartition, offset: int, metadata: str) -> None:
        """``who`` sends an OffsetCommit of ``tp`` at ``offset`` with ``metadata``."""
        low = self.done_low(tp)
        if offset > low:
            self.fail(
                "commit past an incomplete record",
                f"{who} commits {tp} at {offset}, but offset {low} was never completed",
            )
        claimed = decode_completed(metadata, offset)
        wrong = sorted(o for o in claimed if not self._is_done(tp, o))
        if wrong:
            self.fail(
                "commit metadata claims records not completed",
                f"{who} commits {tp} at {offset} with metadata {metadata!r} claiming {wrong[:5]} completed",
            )
        if len(metadata) > self._max_metadata_chars:
            self.fail("commit metadata too long", f"{who} commits {tp} with {len(metadata)} characters of metadata")
        if self._max_metadata_chars < 4096:
            # completions left out of the metadata to fit it are processed again after a handover
            for left_out in self._completed_by.get((who, tp), set()):
                if left_out > offset and left_out not in claimed:
                    self._abandoned.add((who, tp, left_out))

    def check_duplicates(self) -> None:
        """No record completed twice across a clean handover (the module docstring)."""
        for (tp, offset), events in sorted(self._completions.items()):
            for (first, first_at), (again, _) in itertools.pairwise(events):
                if (first, tp, offset) in self._abandoned or (again, tp, offset) in self._abandoned:
                    continue
                if self.explained(tp, first, first_at, again):
                    continue
                self.fail(
                    "record completed twice",
                    f"{tp}@{offset} completed by {first} at {first_at:.3f} and again by {again}; {first} never "
                    f"crashed, lost {tp} or failed its revocation commit afterwards",
                )

    @property
    def duplicates(self) -> int:
        """Records completed more than once."""
        return sum(len(events) - 1 for events in self._completions.values())


# ---------------------------------------------------------------------- the members
class _ProcessorListener(RebalanceListener):
    """The application's listener behind the processor's: ownership for the checks."""

    def __init__(self, inc: _ParallelIncarnation) -> None:
        self._inc = inc

    def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        inc = self._inc
        inc.trace(f"assigned {sorted(map(str, partitions))}")
        inc.checker.owns(inc.name, partitions)
        inc.released -= partitions

    def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        inc = self._inc
        inc.trace(f"revoked {sorted(map(str, partitions))}")
        inc.released |= partitions

    def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        inc = self._inc
        inc.trace(f"lost {sorted(map(str, partitions))}")
        inc.checker.excuse(inc.name, frozenset(partitions), "lost")
        inc.released |= partitions


class _ParallelIncarnation(_Incarnation):
    """One process of a member whose application is a ``ParallelProcessor``."""

    sim: ParallelSimulation

    def __init__(self, sim: ParallelSimulation, spec: MemberSpec, number: int) -> None:
        self.processor: ParallelProcessor[Any, Any] | None = None
        self.workers: list[SimThread] = []
        self.attempts: dict[tuple[TopicPartition, int], int] = {}
        super().__init__(sim, spec, number)
        self.checker = sim.checker
        fetcher = self.transport.fetcher()
        fetch = fetcher.fetch
        params = sim.params

        def keyed_fetch(max_records: int, timeout_ms: int) -> list[ConsumerRecord[Any, Any]]:
            return [_keyed(params, r) for r in fetch(max_records, timeout_ms)]

        fetcher.fetch = keyed_fetch  # type: ignore[method-assign]

    def _spawn(self, what: str, target: Callable[[], None]) -> SimThread:
        thread = self.sim.scheduler.spawn(f"{self.name}:{what}", target)
        self.workers.append(thread)
        return thread

    def crash(self) -> None:
        super().crash()
        for thread in self.workers:
            self.sim.scheduler.kill(thread)

    # ------------------------------------------------------------------ the application
    def _handler(self, record: ConsumerRecord[Any, Any]) -> None:
        tp = TopicPartition(record.topic, record.partition)
        attempt = self.attempts[(tp, record.offset)] = self.attempts.get((tp, record.offset), 0) + 1
        params = self.sim.params
        seed = params.seed
        lane = self.checker.start(self.name, record)
        ok = False
        try:
            u = _draw(seed, "duration", tp, record.offset, attempt)
            seconds = -math.log(1.0 - u) * params.handler_ms / 1000
            if _draw(seed, "long", tp, record.offset, attempt) < params.long_share:
                seconds += params.long_ms / 1000
            if seconds > 0:
                self.sim.cluster.clock.sleep(seconds)
            if _draw(seed, "fail", tp, record.offset, attempt) < params.fail_share:
                raise RuntimeError(f"handler failed on {tp}@{record.offset} (attempt {attempt})")
            ok = True
        finally:
            self.checker.end(self.name, record, lane, ok)

    def _dead_letter(self, record: ConsumerRecord[Any, Any], error: BaseException) -> None:
        lane = self.checker.start(self.name, record)
        self.trace(f"dead-lettered {record.topic}-{record.partition}@{record.offset}")
        self.checker.end(self.name, record, lane, True)

    def _instrument_parallel(self, processor: ParallelProcessor[Any, Any]) -> None:
        consumer, checker, sim = self.consumer, self.checker, self.sim
        poll = consumer.poll

        def recorded_poll(timeout_ms: int = 0) -> list[ConsumerRecord[Any, Any]]:
            records = poll(timeout_ms)
            if records and not self.hung:
                sim.check_revoked_first(self, records)
                checker.handed_out(self.name, records)
                checker.taken(self.name, records)
            return records

        consumer.poll = recorded_poll  # type: ignore[method-assign]
        offset_commit = self.transport.offset_commit

        def checked_commit(request: Any, node_id: int, timeout_ms: int) -> Any:
            for topic in request.topics:
                for part in topic.partitions:
                    checker.commit_sent(self.name, TopicPartition(topic.name, part.partition_index),
                                        part.committed_offset, part.committed_metadata or "")
            return offset_commit(request, node_id, timeout_ms)

        self.transport.offset_commit = checked_commit  # type: ignore[method-assign]
        commit_now = processor._commit_now

        def revocation_commit(partitions: Any) -> None:
            before = processor._ledger.counts["commit-failures"]
            commit_now(partitions)
            if processor._ledger.counts["commit-failures"] > before:
                self.trace(f"revocation commit of {sorted(map(str, partitions))} failed")
                checker.excuse(self.name, frozenset(partitions))

        processor._commit_now = revocation_commit  # type: ignore[method-assign]
        revoked = processor._revoked
        timeout_s = self.sim.params.revoke_timeout_ms / 1000

        def timed_revocation(partitions: frozenset[TopicPartition]) -> None:
            started = sim.scheduler.now
            revoked(partitions)
            with processor._lock:
                running = [job for job, _ in processor._running.values() if job.tp in partitions]
            if not running:
                return
            if sim.scheduler.now - started < timeout_s - 1e-6:
                checker.fail(
                    "revocation returned with records running",
                    f"{self.name}: {len(running)} records of {sorted(map(str, partitions))} still run "
                    f"{sim.scheduler.now - started:.3f} s into the revocation (revoke_timeout_ms "
                    f"{self.sim.params.revoke_timeout_ms})",
                )
            for job in running:  # past revoke_timeout_ms: processed again by the next owner
                self.trace(f"revocation gave up waiting for {job.tp}@{job.record.offset}")
                checker.abandoned(self.name, job.tp, job.record.offset)

        processor._revoked = timed_revocation  # type: ignore[method-assign]

    def _app(self) -> None:
        sim = self.sim
        params = sim.params
        topics = tuple(t for t, _ in sim.scenario.topics)
        processor: ParallelProcessor[Any, Any] = ParallelProcessor(
            self.consumer, self._handler, ordering=params.ordering,  # type: ignore[arg-type]
            max_concurrency=params.max_concurrency, max_buffered_records=params.max_buffered_records,
            max_buffered_bytes=params.max_buffered_bytes, retries=params.retries, retry_backoff_ms=50,
            retry_backoff_max_ms=400, on_dead_letter=self._dead_letter,
            commit_interval_ms=params.commit_interval_ms, revoke_timeout_ms=params.revoke_timeout_ms,
            max_metadata_chars=params.max_metadata_chars, clock=sim.cluster.clock,
            _runtime=_SimRuntime(sim.scheduler, self._spawn),
        )
        self.processor = processor
        processor.subscribe(topics, listener=_ProcessorListener(self))
        self._instrument_parallel(processor)
        try:
            self._loop_parallel(processor)
        finally:
            self.alive = False

    def _loop_parallel(self, processor: ParallelProcessor[Any, Any]) -> None:
        sim = self.sim
        while not self.stopping:
            started = sim.scheduler.now
            try:
                processor.run(until=lambda: self.stopping)
            except WakeupError:
                continue
            except ProcessingError as exc:
                sim.checker.fail("processing error", f"{self.name}: {exc!r} (the dead-letter hook takes every failure)")
                break
            except (FatalGroupError, GroupThreadCrashed) as exc:
                self.trace(f"fatal: {exc!r}")
                sim.checker.excuse(self.name, None, "crash")
                if sim.scenario.group_protocol == "consumer":
                    index = sim.scenario.members.index(self.spec)
                    sim.scheduler.call_later(1.0, lambda i=index: sim._restart(i))  # type: ignore[misc]
                break
            except KGroupError as exc:
                self.trace(f"run raised {type(exc).__name__}: {exc}")
                if isinstance(exc, _CLIENT_ERRORS):
                    sim.checker.fail("client error", f"{self.name}: run() raised {type(exc).__name__}: {exc}")
                if sim.scheduler.now == started:
                    sim.cluster.clock.sleep(0.01)
        self._close_parallel(processor)

    def _close_parallel(self, processor: ParallelProcessor[Any, Any]) -> None:
        started = self.sim.scheduler.now
        timeout = self.stop_timeout_ms
        try:
            processor.close(timeout)
        except KGroupError as exc:
            self.trace(f"close raised {exc!r}")
            self.sim.checker.excuse(self.name, None)
        else:
            if self.sim.scheduler.now - started >= timeout / 1000 - 1e-6:
                self.trace("close gave up at its timeout")
                self.sim.checker.excuse(self.name, None)
        self.alive = False
        self.trace("closed")


def _keyed(params: ParallelScenario, record: ConsumerRecord[Any, Any]) -> ConsumerRecord[Any, Any]:
    """``record`` with the key and value the scenario draws for its offset."""
    crc = zlib.crc32(f"{record.topic}/{record.partition}/{record.offset}".encode())
    key = None if crc % 13 == 0 else b"k%d" % (crc // 13 % params.keys)
    size = crc >> 20 & 0xFFF
    value = b"v" * (size % (params.max_value_bytes + 1))
    return record._replace(key=key, value=value)


def _max_record_bytes(params: ParallelScenario) -> int:
    return len(b"k%d" % (params.keys - 1)) + params.max_value_bytes


class ParallelSimulation(Simulation):
    """A simulated group of ``ParallelProcessor`` members (the module docstring)."""

    checker: ParallelChecker

    def __init__(self, params: ParallelScenario, *, trace_limit: int = 4000) -> None:
        super().__init__(params.base, trace_limit=trace_limit)
        self.params = params
        self.checker = ParallelChecker(lambda: self.scheduler.now, params.ordering, params.max_metadata_chars)
        self._record_bound = params.max_buffered_records - 1 + MAX_POLL_RECORDS
        self._byte_bound = params.max_buffered_bytes - 1 + MAX_POLL_RECORDS * _max_record_bytes(params)
        self.scheduler.after_turn.append(self._check_buffers)

    def _incarnation(self, spec: MemberSpec, number: int) -> _Incarnation:
        return _ParallelIncarnation(self, spec, number)

    def _check_buffers(self) -> None:
        """After every turn: each processor's buffered records and bytes within bounds, counted right."""
        if self.checker.violations:
            return
        for inc in self.incarnations.values():
            processor = getattr(inc, "processor", None)
            if processor is None or not inc.alive:
                continue
            records, size = processor._ledger.buffered_records, processor._ledger.buffered_bytes
            scheduler = processor._ledger.scheduler
            recount = scheduler.waiting() + scheduler.retrying() + len(processor._running)
            if records != recount:
                self.checker.fail(
                    "buffered records miscounted",
                    f"{inc.name}: {records} counted, {recount} waiting, retrying or running",
                )
            if records > self._record_bound or size > self._byte_bound:
                self.checker.fail(
                    "buffer over its bound",
                    f"{inc.name}: {records} records ({self._record_bound} at most), {size} bytes "
                    f"({self._byte_bound} at most)",
                )
            if records <= 200:  # (a recount of the bytes walks every buffered record)
                jobs = [job for lane in scheduler._lanes.values() for job in lane]
                jobs += [entry[3] for entry in scheduler._retries]
                jobs += [job for job, _ in processor._running.values()]
                recounted = sum(job.size for job in jobs)
                if size != recounted:
                    self.checker.fail(
                        "buffered bytes miscounted", f"{inc.name}: {size} bytes counted, {recounted} buffered"
                    )

    def _liveness_problems(self) -> list[str]:
        problems = super()._liveness_problems()
        if problems:
            return problems
        subscribed = self._subscribed_topics()
        for tp, end in sorted(self.cluster.log_end.items()):
            low = self.checker.done_low(tp)
            if tp.topic in subscribed and low < end:
                problems.append(f"{tp}: records {low}..{end - 1} not completed")
        return problems


def run_parallel_seed(seed: int, group_protocol: str = "classic") -> RunResult:
    """Run the ``ParallelProcessor`` scenario of ``seed`` (``parallel_scenario_for``)."""
    return ParallelSimulation(parallel_scenario_for(seed, group_protocol)).run()
