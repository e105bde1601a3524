"""``ParallelProcessor``: many records of one partition processed at once, with safe commits.

A ``Consumer`` hands out a partition's records in order; a plain loop processes them one at a
time. ``ParallelProcessor`` owns the consumer's poll loop and runs a handler per record on a
thread pool, up to ``max_concurrency`` at once, keeping the order that matters
(``ordering``): records with the same key one at a time, in offset order ("key", the
default), a partition's records one at a time ("partition"), or none ("unordered").

Commits never run ahead: a partition's committed offset is its first record not completed, and
the records completed above it travel in the commit's metadata (``kgroup._parallel.offsets``
describes the encoding), so that the next owner skips them. ``docs/parallel.md`` is the guide.

Threads: ``run()``, ``close()`` and ``subscribe()`` on one thread (the consumer's poll thread,
where rebalance callbacks run too); the handler on the pool's threads; ``stop()``,
``metrics()`` and ``health()`` from any thread.
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import re
import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Generic, Protocol

import attrs

from kgroup._clock import Clock, MonotonicClock
from kgroup._parallel.offsets import DEFAULT_MAX_METADATA_CHARS, PartitionOffsets, decode_completed
from kgroup._parallel.scheduler import ORDERINGS, Lane, Ordering, Scheduler
from kgroup._typevars import K, V
from kgroup.consumer import Consumer
from kgroup.errors import ConfigError, IllegalStateError, KGroupError
from kgroup.health import HealthReport
from kgroup.listener import RebalanceListener
from kgroup.types import ConsumerRecord, OffsetAndMetadata, TopicPartition

__all__ = ["ParallelProcessor", "ProcessingError"]

log = logging.getLogger(__name__)

Handler = Callable[[ConsumerRecord[K, V]], object]
DeadLetterHook = Callable[[ConsumerRecord[K, V], BaseException], object]
_Pattern = re.Pattern[str] | str | None
_Listener = RebalanceListener


class ProcessingError(KGroupError):
    """A record failed every attempt and no dead-letter hook took it (or the hook raised).

    ``run()`` raises it; the record's partition was not committed past it. ``record`` is the
    record, ``__cause__`` the last exception.
    """

    def __init__(self, record: ConsumerRecord[Any, Any], message: str) -> None:
        super().__init__(f"{record.topic}-{record.partition}@{record.offset}: {message}")
        self.record = record


class _Tries:
    """A job's attempts so far, and once every attempt failed the last error (the poll thread's)."""

    __slots__ = ("count", "dead_letter")

    def __init__(self) -> None:
        self.count = 0
        #: set (by the poll thread) once every attempt failed: the dead-letter hook's turn
        self.dead_letter: BaseException | None = None


@attrs.frozen(eq=False)
class _Job(Generic[K, V]):
    """One record on its way through the processor (poll thread's; the worker reads it)."""

    record: ConsumerRecord[K, V]
    tp: TopicPartition
    lane: Lane
    offsets: PartitionOffsets
    size: int
    tries: _Tries = attrs.field(factory=_Tries)


class _Failed(Generic[K, V]):
    """A failed attempt (of the handler, or of the dead-letter hook) reported by a pool thread."""

    __slots__ = ("error", "job")

    def __init__(self, job: _Job[K, V], error: BaseException) -> None:
        self.job = job
        self.error = error


class _Runtime(Protocol):
    """Where the processor's handlers run and how their results come back (the simulator swaps it).

    ``kgroup.testing.simulation`` passes one whose pool threads and queue wait on its virtual
    clock (``docs/simulation.md``); production's is ``_Threads``.
    """

    def executor(self, max_workers: int) -> concurrent.futures.Executor: ...

    def completions(self) -> queue.SimpleQueue[Any]: ...


class _Threads:
    """Production: a ``ThreadPoolExecutor`` and a ``queue.SimpleQueue``."""

    def executor(self, max_workers: int) -> concurrent.futures.Executor:
        return concurrent.futures.ThreadPoolExecutor(max_workers, thread_name_prefix="kgroup-parallel")

    def completions(self) -> queue.SimpleQueue[Any]:
        return queue.SimpleQueue()


def _size(record: ConsumerRecord[Any, Any]) -> int:
    size = 0
    for part in (record.key, record.value):
        if isinstance(part, (bytes, bytearray, str)):
            size += len(part)
    return size


class ParallelProcessor(Generic[K, V]):
    """Run ``handler(record)`` for the records of ``consumer``, many at once, committing safely.

    Args:
        consumer: a ``Consumer`` with ``enable_auto_commit=False``, not subscribed yet; the
            processor owns its poll loop from ``subscribe()`` on, and ``close()`` closes it.
        handler: called with each record on a pool thread; its return is ignored, an exception
            is a failure (retried, then dead-lettered).
        ordering: "key" (records with equal keys in a partition one at a time, in offset
            order; a null key counts as one key), "partition" or "unordered".
        max_concurrency: records in flight at most (the pool's threads).
        max_buffered_records, max_buffered_bytes: taken from the consumer and not completed
            (waiting, retrying or running) at most; beyond, every partition is paused, and
            resumed below three quarters (one ``poll()`` more, ``max_poll_records``, may come
            in while pausing). Bytes count keys and values that are ``bytes`` or ``str``.
        retries: attempts after the first, ``retry_backoff_ms`` apart, doubling up to
            ``retry_backoff_max_ms``; the record's lane (its key, or partition) waits meanwhile.
        on_dead_letter: ``hook(record, exception)`` after the last failed attempt, on a pool
            thread; once it returns the record counts as completed. Without one (or if it
            raises) ``run()`` raises ``ProcessingError``.
        commit_interval_ms: how often the completed work is committed (asynchronously; one
            commit in flight at a time); on revocation and close, synchronously.
        revoke_timeout_ms: how long a revoked partition's in-flight records get to finish
            before its commit (those still running are then processed again by the next owner).
        stuck_after_ms: a record running longer is reported by ``health()`` (not live) and
            the ``parallel-records-stuck`` metric.
        max_metadata_chars: the broker's ``offset.metadata.max.bytes`` (4096 by default).
        clock: a ``Clock`` (tests).

    Raises:
        ConfigError: ``enable_auto_commit`` is on (the processor commits itself; an auto-commit
            would commit records not processed yet), or a bad argument.

    """

    def __init__(
        self,
        consumer: Consumer[K, V],
        handler: Handler[K, V],
        *,
        ordering: Ordering = "key",
        max_concurrency: int = 16,
        max_buffered_records: int = 10_000,
        max_buffered_bytes: int = 64 * 1024 * 1024,
        retries: int = 3,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 10_000,
        on_dead_letter: DeadLetterHook[K, V] | None = None,
        commit_interval_ms: int = 100,
        revoke_timeout_ms: int = 10_000,
        stuck_after_ms: int = 60_000,
        max_metadata_chars: int = DEFAULT_MAX_METADATA_CHARS,
        clock: Clock | None = None,
        _runtime: _Runtime | None = None,
    ) -> None:
        if consumer.config.enable_auto_commit:
            raise ConfigError(
                "enable_auto_commit",
                "must be False for a ParallelProcessor: it commits the completed records itself",
            )
        if ordering not in ORDERINGS:
            raise ConfigError("ordering", f"must be one of {ORDERINGS}, not {ordering!r}")
        for name, value in (
            ("max_concurrency", max_concurrency), ("max_buffered_records", max_buffered_records),
            ("max_buffered_bytes", max_buffered_bytes), ("commit_interval_ms", commit_interval_ms),
            ("stuck_after_ms", stuck_after_ms), ("max_metadata_chars", max_metadata_chars),
        ):
            if value < 1:
                raise ConfigError(name, f"must be at least 1, not {value}")
        for name, value in (
            ("retries", retries), ("retry_backoff_ms", retry_backoff_ms),
            ("retry_backoff_max_ms", retry_backoff_max_ms), ("revoke_timeout_ms", revoke_timeout_ms),
        ):
            if value < 0:
                raise ConfigError(name, f"must not be negative, not {value}")
        self._consumer = consumer
        self._handler = handler
        self._ordering = ordering
        self._max_concurrency = max_concurrency
        self._max_records = max_buffered_records
        self._max_bytes = max_buffered_bytes
        self._retries = retries
        self._backoff_s = retry_backoff_ms / 1000
        self._backoff_max_s = retry_backoff_max_ms / 1000
        self._on_dead_letter = on_dead_letter
        self._commit_interval_s = commit_interval_ms / 1000
        self._revoke_timeout_s = revoke_timeout_ms / 1000
        self._stuck_after_s = stuck_after_ms / 1000
        self._max_metadata_chars = max_metadata_chars
        self._clock = clock or MonotonicClock()
        # ---- the poll thread's
        self._scheduler: Scheduler[_Job[K, V]] = Scheduler(ordering)
        self._offsets: dict[TopicPartition, PartitionOffsets] = {}
        self._last_commit: dict[TopicPartition, tuple[int, str]] = {}
        self._commit_due = 0.0
        #: the asynchronous commit in flight and what it commits (settled by the poll thread)
        self._pending_commit: tuple[concurrent.futures.Future[None], dict[TopicPartition, OffsetAndMetadata]] | None
        self._pending_commit = None
        #: partitions being revoked: a failure of theirs is not retried
        self._revoking: frozenset[TopicPartition] = frozenset()
        self._paused_by_us: set[TopicPartition] = set()
        #: partitions whose commit metadata no longer fits: paused until it does again
        self._held: set[TopicPartition] = set()
        self._buffered_records = 0
        self._buffered_bytes = 0
        self._failure: ProcessingError | None = None
        self._user_listener: RebalanceListener | None = None
        runtime = _runtime or _Threads()
        self._pool = runtime.executor(max_concurrency)
        self._completions: queue.SimpleQueue[_Job[K, V] | _Failed[K, V]] = runtime.completions()
        # ---- shared: the running records (poll thread writes, health() reads), under the lock
        self._lock = threading.Lock()
        self._running: dict[int, tuple[_Job[K, V], float]] = {}
        self._stop = threading.Event()
        self._closed = False
        #: counters, written by the poll thread only (read anywhere: ints)
        self._counts: dict[str, int] = dict.fromkeys(
            ("completed", "skipped", "retried", "dead-lettered", "failed", "discarded", "commits",
             "commit-failures", "pauses", "max-in-flight"),
            0,
        )

    # ------------------------------------------------------------------ lifecycle
    def subscribe(
        self, topics: Iterable[str] | None = None, listener: _Listener | None = None, *, pattern: _Pattern = None
    ) -> None:
        """``Consumer.subscribe`` with the processor's listener in front of ``listener``.

        The user's callbacks keep the listener contract (``kgroup.listener``), and run after
        the processor's part: ``on_partitions_revoked`` once the partitions' records are done
        (or timed out, ``revoke_timeout_ms``) and committed, ``on_partitions_lost`` once their
        records are dropped, ``on_partitions_assigned`` once their committed offsets and
        metadata are read. A ``seek()`` in ``on_partitions_assigned`` is not seen by the
        processor's skip list: do not seek there.
        """
        self._user_listener = listener
        self._consumer.subscribe(topics, _ProcessorListener(self), pattern=pattern)

    def run(self, *, until: Callable[[], bool] | None = None) -> None:
        """Poll, dispatch and commit until ``stop()`` (or ``until()`` returns True).

        Raises:
            ProcessingError: a record failed and no dead-letter hook took it.
            Anything ``Consumer.poll()`` raises (``ListenerError``, a fatal group error, ...).

        """
        while not self._stop.is_set() and (until is None or not until()):
            self.run_once()

    def run_once(self, poll_timeout_ms: int = 100) -> None:
        """One turn of the loop: finished records, new dispatches, back-pressure, commit, ``poll()``."""
        self._raise_failure()
        now = self._clock.monotonic()
        # wait a little for a completion when nothing else can start until one comes
        nothing_to_start = len(self._running) >= self._max_concurrency or not self._scheduler.ready(now)
        self._drain(0.005 if self._running and nothing_to_start else 0.0)
        self._dispatch()
        self._maybe_commit(force=False)
        self._backpressure()
        records = self._consumer.poll(self._poll_timeout_ms(poll_timeout_ms))
        for record in records:
            self._take(record)
        if records:
            self._dispatch()

    def _poll_timeout_ms(self, idle_ms: int) -> int:
        """0 while records run or can start; until the next retry is due; else ``idle_ms``."""
        if self._running or self._scheduler.ready(self._clock.monotonic()):
            return 0
        due = self._scheduler.next_retry()
        if due is None:
            return idle_ms
        return max(0, min(idle_ms, int((due - self._clock.monotonic()) * 1000) + 1))

    def stop(self) -> None:
        """Make ``run()`` return after its current turn. Safe from any thread (a signal handler)."""
        self._stop.set()

    def close(self, timeout_ms: int = 30_000) -> None:
        """Stop starting records, let in-flight ones finish, commit, close the consumer and the pool.

        Call it on the thread that called ``run()``. ``Consumer.close()`` revokes the partitions,
        which waits for their records (``revoke_timeout_ms``) and commits; records still running
        then are left to finish on their threads, uncommitted.
        """
        if self._closed:
            return
        self._stop.set()
        try:
            self._consumer.close(timeout_ms)
        except IllegalStateError:
            raise  # close() inside a rebalance callback (kgroup.listener): nothing was closed
        except BaseException:
            self._shut_down()
            raise
        self._shut_down()

    def _shut_down(self) -> None:
        self._closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> ParallelProcessor[K, V]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ observability
    def metrics(self) -> dict[str, float]:
        """The consumer's metrics plus ``parallel-*``: records in flight, buffered, stuck, and counts.

        Safe from any thread.
        """
        now = self._clock.monotonic()
        with self._lock:
            started = [start for _, start in self._running.values()]
        out = dict(self._consumer.metrics())
        out["parallel-records-in-flight"] = float(len(started))
        out["parallel-records-stuck"] = float(sum(1 for start in started if now - start > self._stuck_after_s))
        out["parallel-oldest-record-running-seconds"] = max((now - start for start in started), default=0.0)
        out["parallel-records-buffered"] = float(self._buffered_records)
        out["parallel-bytes-buffered"] = float(self._buffered_bytes)
        out["parallel-partitions-paused"] = float(len(self._paused_by_us))
        out["parallel-partitions-held"] = float(len(self._held))
        for name, value in list(self._counts.items()):
            out[_METRIC_NAMES[name]] = float(value)
        return out

    def health(self) -> HealthReport:
        """The consumer's ``health()``, not live while a record runs past ``stuck_after_ms``.

        A handler that never returns holds its lane (its key, or partition) forever: only a
        restart helps, so it is a liveness failure, with the record named in ``reasons``.
        Safe from any thread.
        """
        report = self._consumer.health()
        now = self._clock.monotonic()
        with self._lock:
            stuck = [(job, now - start) for job, start in self._running.values() if now - start > self._stuck_after_s]
        if not stuck:
            return report
        reasons = tuple(
            f"record {job.tp.topic}-{job.tp.partition}@{job.record.offset} has been running for {age:.0f} s"
            f" (stuck_after_ms={self._stuck_after_s * 1000:.0f})"
            for job, age in sorted(stuck, key=lambda item: -item[1])[:5]
        )
        return attrs.evolve(report, live=False, ready=False, reasons=report.reasons + reasons)

    # ------------------------------------------------------------------ the poll thread's work
    def _raise_failure(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            self._stop.set()
            raise failure

    def _take(self, record: ConsumerRecord[K, V]) -> None:
        tp = TopicPartition(record.topic, record.partition)
        offsets = self._offsets.get(tp)
        if offsets is None:
            return  # not ours any more (a record handed out while the partition was revoked)
        try:
            fresh = offsets.take(record.offset)
        except ValueError:
            # the position moved back (an offset reset): start the partition's bookkeeping over
            log.warning("%s: offset %d below the last taken one; tracking the partition anew", tp, record.offset)
            self._drop_waiting([tp])  # the old bookkeeping's records and lanes go; running ones are discarded
            offsets = self._offsets[tp] = PartitionOffsets()
            fresh = offsets.take(record.offset)
        if not fresh:
            self._counts["skipped"] += 1
            return
        job = _Job(record, tp, self._scheduler.lane(tp, record.key), offsets, _size(record))
        self._buffered_records += 1
        self._buffered_bytes += job.size
        self._scheduler.add(job.lane, job)

    def _dispatch(self) -> None:
        now = self._clock.monotonic()
        while len(self._running) < self._max_concurrency and self._failure is None:
            taken = self._scheduler.take(now)
            if taken is None:
                return
            job = taken[1]
            if job.tries.dead_letter is None:
                job.tries.count += 1
            with self._lock:
                self._running[id(job)] = (job, now)
            self._counts["max-in-flight"] = max(self._counts["max-in-flight"], len(self._running))
            self._pool.submit(self._work, job)

    def _work(self, job: _Job[K, V]) -> None:
        """On a pool thread: the handler (or the dead-letter hook), then report back."""
        try:
            if job.tries.dead_letter is not None and self._on_dead_letter is not None:
                self._on_dead_letter(job.record, job.tries.dead_letter)
            else:
                self._handler(job.record)
        except BaseException as exc:  # every failure is the record's, reported back
            self._completions.put(_Failed(job, exc))
            return
        self._completions.put(job)

    def _drain(self, wait_s: float) -> None:
        """Handle the records finished since the last turn, waiting up to ``wait_s`` for the first."""
        try:
            item = self._completions.get(timeout=wait_s) if wait_s > 0 else self._completions.get_nowait()
        except queue.Empty:
            return
        while True:
            self._finished(item)
            try:
                item = self._completions.get_nowait()
            except queue.Empty:
                return

    def _finished(self, item: _Job[K, V] | _Failed[K, V]) -> None:
        failed = isinstance(item, _Failed)
        job: _Job[K, V] = item.job if isinstance(item, _Failed) else item
        with self._lock:
            self._running.pop(id(job), None)
        current = self._offsets.get(job.tp) is job.offsets
        if isinstance(item, _Failed) and current and job.tp not in self._revoking and self._failed(job, item.error):
            return  # retried or dead-lettered: still buffered, its lane still busy
        self._buffered_records -= 1
        self._buffered_bytes -= job.size
        if not current:
            self._counts["discarded"] += 1  # revoked or lost meanwhile: its result is not committed
            return
        if failed:
            return  # left incomplete (revoking, or the failure is raised by run())
        job.offsets.complete(job.record.offset)
        self._scheduler.finish(job.lane)
        self._counts["completed"] += 1

    def _failed(self, job: _Job[K, V], error: BaseException) -> bool:
        """A failed attempt: True when it is retried or dead-lettered (the job lives on)."""
        self._counts["failed"] += 1
        if job.tries.dead_letter is not None:  # the dead-letter hook itself raised
            self._fail(job, f"the dead-letter hook raised {error!r}", error)
            return False
        if job.tries.count <= self._retries:
            delay = min(self._backoff_max_s, self._backoff_s * 2 ** (job.tries.count - 1))
            self._counts["retried"] += 1
            self._scheduler.retry(job.lane, job, self._clock.monotonic() + delay)
            return True
        if self._on_dead_letter is None:
            self._fail(job, f"failed {job.tries.count} times: {error!r}", error)
            return False
        self._counts["dead-lettered"] += 1
        job.tries.dead_letter = error
        self._scheduler.retry(job.lane, job, self._clock.monotonic())  # the hook runs next, in its lane
        return True

    def _fail(self, job: _Job[K, V], message: str, error: BaseException) -> None:
        if self._failure is None:
            failure = ProcessingError(job.record, message)
            failure.__cause__ = error
            self._failure = failure

    def _backpressure(self) -> None:
        """Pause every partition past the buffer limits (resume below 3/4), and those held for their metadata."""
        assigned = self._consumer.assignment()
        self._paused_by_us &= assigned
        self._held &= assigned
        if self._buffered_records >= self._max_records or self._buffered_bytes >= self._max_bytes:
            wanted = set(assigned)
        elif self._buffered_records < self._max_records * 3 // 4 and self._buffered_bytes < self._max_bytes * 3 // 4:
            wanted = set(self._held)
        else:
            wanted = self._paused_by_us | self._held
        pause, resume = wanted - self._paused_by_us, self._paused_by_us - wanted
        if pause:
            self._consumer.pause(pause)
            self._counts["pauses"] += 1
        if resume:
            self._consumer.resume(resume)
        self._paused_by_us = wanted

    def _commit_points(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata]:
        out: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp in partitions:
            offsets = self._offsets.get(tp)
            point = offsets.commit_point(self._max_metadata_chars) if offsets is not None else None
            if offsets is not None and offsets.truncated != (tp in self._held):
                if offsets.truncated:
                    log.warning(
                        "%s: the completions above offset %s no longer fit the commit metadata (%d chars):"
                        " the partition is paused until they do", tp, offsets.commit_offset(), self._max_metadata_chars,
                    )
                    self._held.add(tp)
                else:
                    self._held.discard(tp)
            if point is not None and self._last_commit.get(tp) != point:
                out[tp] = OffsetAndMetadata(point[0], point[1])
        return out

    def _maybe_commit(self, *, force: bool) -> None:
        now = self._clock.monotonic()
        if not force and now < self._commit_due:
            return
        if self._pending_commit is not None:
            future, sent = self._pending_commit
            if not future.done():
                return  # one commit in flight at a time: a later one never lands before it
            self._pending_commit = None
            error = future.exception()
            if error is None:
                self._committed(sent)
            else:
                self._counts["commit-failures"] += 1
                log.debug("parallel commit failed: %r", error)
        self._commit_due = now + self._commit_interval_s
        points = self._commit_points(list(self._offsets))
        if points:
            self._pending_commit = (self._consumer.commit_async(points), points)

    def _committed(self, points: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        self._counts["commits"] += 1
        for tp, om in points.items():
            if tp in self._offsets:
                self._last_commit[tp] = (om.offset, om.metadata)

    def _commit_now(self, partitions: Collection[TopicPartition]) -> None:
        """A synchronous commit of ``partitions`` (revocation: the generation is still valid)."""
        points = self._commit_points(partitions)
        if not points:
            return
        try:
            self._consumer.commit(points)
        except KGroupError as exc:
            self._counts["commit-failures"] += 1
            log.warning("parallel commit of %s on revocation failed: %r", sorted(map(str, points)), exc)
            return
        self._committed(points)

    # ------------------------------------------------------------------ rebalances (inside poll())
    def _drop_waiting(self, partitions: Collection[TopicPartition]) -> None:
        for job in self._scheduler.drop(partitions):
            self._buffered_records -= 1
            self._buffered_bytes -= job.size

    def _forget(self, partitions: Collection[TopicPartition]) -> None:
        self._drop_waiting(partitions)
        for tp in partitions:
            self._offsets.pop(tp, None)
            self._paused_by_us.discard(tp)
            self._held.discard(tp)
            self._last_commit.pop(tp, None)

    def _revoked(self, partitions: frozenset[TopicPartition]) -> None:
        self._drop_waiting(partitions)  # no record of theirs starts from now on
        self._revoking = partitions
        try:
            self._finish_in_flight(partitions)
            self._commit_now(partitions)
        finally:
            self._revoking = frozenset()
            self._forget(partitions)

    def _finish_in_flight(self, partitions: frozenset[TopicPartition]) -> None:
        deadline = self._clock.monotonic() + self._revoke_timeout_s
        while self._running_in(partitions):
            left = deadline - self._clock.monotonic()
            if left <= 0:
                log.warning(
                    "%d records of revoked partitions still running after revoke_timeout_ms; not committed",
                    self._running_in(partitions),
                )
                break
            self._drain(min(left, 0.05))
        self._commit_now(partitions)
        self._forget(partitions)

    def _running_in(self, partitions: Collection[TopicPartition]) -> int:
        with self._lock:
            return sum(1 for job, _ in self._running.values() if job.tp in partitions)

    def _assigned(self, partitions: frozenset[TopicPartition]) -> None:
        committed: Mapping[TopicPartition, OffsetAndMetadata | None] = {}
        if partitions:
            try:
                committed = self._consumer.committed(partitions)
            except KGroupError as exc:
                log.warning("reading the committed metadata of %s failed (%r): no record skipped", partitions, exc)
        for tp in partitions:
            om = committed.get(tp)
            if om is None:
                self._offsets[tp] = PartitionOffsets()
            else:
                self._offsets[tp] = PartitionOffsets(om.offset, decode_completed(om.metadata, om.offset))
                self._last_commit[tp] = (om.offset, om.metadata)


class _ProcessorListener(RebalanceListener):
    """The processor's part of a rebalance, then the user's listener (inside ``poll()``)."""

    def __init__(self, processor: ParallelProcessor[K, V]) -> None:
        self._processor: ParallelProcessor[K, V] = processor

    def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        self._processor._revoked(partitions)
        user = self._processor._user_listener
        if user is not None:
            user.on_partitions_revoked(partitions)

    def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self._processor._forget(partitions)  # in-flight results are not committed
        user = self._processor._user_listener
        if user is not None:
            user.on_partitions_lost(partitions)

    def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        self._processor._assigned(partitions)
        user = self._processor._user_listener
        if user is not None:
            user.on_partitions_assigned(partitions)


#: the processor's counters as metric names
_METRIC_NAMES = {
    "completed": "parallel-records-completed-total",
    "skipped": "parallel-records-skipped-total",
    "retried": "parallel-records-retried-total",
    "dead-lettered": "parallel-records-dead-lettered-total",
    "failed": "parallel-attempts-failed-total",
    "discarded": "parallel-records-discarded-total",
    "commits": "parallel-commits-total",
    "commit-failures": "parallel-commit-failures-total",
    "pauses": "parallel-pauses-total",
    "max-in-flight": "parallel-max-in-flight",
}
