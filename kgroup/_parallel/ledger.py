"""The bookkeeping both parallel processors share: records taken, running, completed; what to commit and pause.

``kgroup.ParallelProcessor`` (threads) and ``kgroup.aio.ParallelProcessor`` (asyncio tasks)
differ only in how a handler runs and how they wait (a pool and a queue, or tasks on the
loop); everything they decide is here, once:

* which record starts next (``start``), under ``ordering`` and ``max_concurrency``, and what
  a finished or failed attempt means (``finished``: completed, retried after a backoff, handed
  to the dead-letter hook, or the processor's ``ProcessingError``);
* what to commit (``commit_points``: the first record not completed per partition, the
  completions above it in the metadata, ``kgroup._parallel.offsets``), one asynchronous commit
  in flight at a time (``due_commit``);
* which partitions to pause (``backpressure``: the buffer limits, and partitions whose
  completions no longer fit the metadata);
* rebalances (``drop_waiting``, ``forget``, ``assigned``) and what ``metrics()`` and
  ``health()`` report (records running past ``stuck_after_ms``).

No IO, no threads of its own, no clock: time is passed in. The caller owns it from one
thread (the poll thread, or the event loop); ``running`` is guarded by the lock the caller
passes (``metrics()`` and ``health()`` may read it from another thread).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypedDict

import attrs

from kgroup._parallel.offsets import DEFAULT_MAX_METADATA_CHARS, PartitionOffsets, decode_completed
from kgroup._parallel.scheduler import ORDERINGS, Lane, Ordering, Scheduler
from kgroup._typevars import K, V
from kgroup.errors import ConfigError, KGroupError
from kgroup.health import HealthReport
from kgroup.types import ConsumerRecord, OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["METRIC_NAMES", "Job", "Ledger", "ProcessingError", "ProcessorOptions", "Settings", "Tries", "record_size"]

log = logging.getLogger("kgroup.parallel")


class ProcessingError(KGroupError):
    """A record failed every attempt and no dead-letter hook took it (or the hook raised).

    ``run()`` raises it; the record's partition was not committed past it. ``record`` is the
    record, ``__cause__`` the last exception.
    """

    __module__ = "kgroup.parallel"

    def __init__(self, record: ConsumerRecord[Any, Any], message: str) -> None:
        super().__init__(f"{record.topic}-{record.partition}@{record.offset}: {message}")
        self.record = record


class Tries:
    """A job's attempts so far, and once every attempt failed the last error (the owner's)."""

    __slots__ = ("count", "dead_letter")

    def __init__(self) -> None:
        self.count = 0
        #: set (by the owner) once every attempt failed: the dead-letter hook's turn
        self.dead_letter: BaseException | None = None


@attrs.frozen(eq=False)
class Job(Generic[K, V]):
    """One record on its way through a processor (the owner's; the handler's runner reads it)."""

    record: ConsumerRecord[K, V]
    tp: TopicPartition
    lane: Lane
    offsets: PartitionOffsets
    size: int
    tries: Tries = attrs.field(factory=Tries)


def record_size(record: ConsumerRecord[Any, Any]) -> int:
    """Bytes a record counts against ``max_buffered_bytes``: its key and value if ``bytes`` or ``str``."""
    size = 0
    for part in (record.key, record.value):
        if isinstance(part, (bytes, bytearray, str)):
            size += len(part)
    return size


class _Outcome(Protocol):
    """A commit's future: ``concurrent.futures.Future`` or ``asyncio.Future``."""

    def done(self) -> bool: ...

    def exception(self) -> BaseException | None: ...


def _failure_of(future: _Outcome) -> BaseException | None:
    try:
        return future.exception()
    except BaseException as exc:  # a cancelled asyncio.Future raises CancelledError here
        return exc


class ProcessorOptions(TypedDict, total=False):
    """The keyword arguments both processors take alike (``Settings`` has their defaults and meanings)."""

    ordering: Ordering
    max_concurrency: int
    max_buffered_records: int
    max_buffered_bytes: int
    retries: int
    retry_backoff_ms: int
    retry_backoff_max_ms: int
    commit_interval_ms: int
    revoke_timeout_ms: int
    stuck_after_ms: int
    max_metadata_chars: int
    commit_metadata: bool


_AT_LEAST_ONE = (
    "max_concurrency", "max_buffered_records", "max_buffered_bytes", "commit_interval_ms", "stuck_after_ms",
    "max_metadata_chars",
)
_NOT_NEGATIVE = ("retries", "retry_backoff_ms", "retry_backoff_max_ms", "revoke_timeout_ms")


@attrs.frozen
class Settings:
    """A processor's arguments (``kgroup.ParallelProcessor`` documents each), checked by ``checked``."""

    dead_letter_hook: bool
    ordering: Ordering = "key"
    max_concurrency: int = 16
    max_buffered_records: int = 10_000
    max_buffered_bytes: int = 64 * 1024 * 1024
    retries: int = 3
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 10_000
    commit_interval_ms: int = 100
    revoke_timeout_ms: int = 10_000
    stuck_after_ms: int = 60_000
    max_metadata_chars: int = DEFAULT_MAX_METADATA_CHARS
    commit_metadata: bool = True

    @classmethod
    def checked(
        cls, *, enable_auto_commit: bool, dead_letter_hook: bool, **options: Unpack[ProcessorOptions]
    ) -> Settings:
        """The settings of a processor over a consumer with ``enable_auto_commit``.

        Raises:
            ConfigError: ``enable_auto_commit`` is on, an unknown ``ordering``, a count or
                interval below 1, a retry count, backoff or timeout below 0.

        """
        if enable_auto_commit:
            raise ConfigError(
                "enable_auto_commit",
                "must be False for a ParallelProcessor: it commits the completed records itself",
            )
        ordering = options.get("ordering", "key")
        if ordering not in ORDERINGS:
            raise ConfigError("ordering", f"must be one of {ORDERINGS}, not {ordering!r}")
        settings = cls(dead_letter_hook, **options)
        for name in _AT_LEAST_ONE:
            if getattr(settings, name) < 1:
                raise ConfigError(name, f"must be at least 1, not {getattr(settings, name)}")
        for name in _NOT_NEGATIVE:
            if getattr(settings, name) < 0:
                raise ConfigError(name, f"must not be negative, not {getattr(settings, name)}")
        return settings


class _Pausable(Protocol):
    """What back-pressure needs of a consumer (``kgroup.Consumer`` and ``kgroup.aio.Consumer`` alike)."""

    def assignment(self) -> frozenset[TopicPartition]: ...

    def pause(self, partitions: Iterable[TopicPartition]) -> None: ...

    def resume(self, partitions: Iterable[TopicPartition]) -> None: ...


class Ledger(Generic[K, V]):
    """The state a parallel processor's owner (poll thread or event loop) keeps, and its decisions.

    Args:
        settings: the processor's ordering, bounds, retries and intervals.
        lock: guards ``running`` (read by ``metrics()``/``health()`` from other threads);
            none needed on an event loop.

    """

    def __init__(self, settings: Settings, lock: AbstractContextManager[Any] | None = None) -> None:
        self.settings = settings
        self.scheduler: Scheduler[Job[K, V]] = Scheduler(settings.ordering)
        self.offsets: dict[TopicPartition, PartitionOffsets] = {}
        self.last_commit: dict[TopicPartition, tuple[int, str]] = {}
        self.commit_due = 0.0
        #: the asynchronous commit in flight and what it commits
        self.pending_commit: tuple[_Outcome, dict[TopicPartition, OffsetAndMetadata]] | None = None
        #: partitions being revoked: a failure of theirs is not retried
        self.revoking: frozenset[TopicPartition] = frozenset()
        self.paused_by_us: set[TopicPartition] = set()
        #: partitions whose commit metadata no longer fits: paused until it does again
        self.held: set[TopicPartition] = set()
        self.buffered_records = 0
        self.buffered_bytes = 0
        self.failure: ProcessingError | None = None
        self.lock: AbstractContextManager[Any] = lock if lock is not None else nullcontext()
        #: the running records, by id(job): (job, when it started); under ``lock``
        self.running: dict[int, tuple[Job[K, V], float]] = {}
        #: counters, written by the owner only (read anywhere: ints)
        self.counts: dict[str, int] = dict.fromkeys(METRIC_NAMES, 0)

    # ------------------------------------------------------------------ records
    def take_failure(self) -> ProcessingError | None:
        """The failure ``run()`` raises now, if any (cleared)."""
        failure, self.failure = self.failure, None
        return failure

    def take(self, record: ConsumerRecord[K, V]) -> None:
        """A record ``poll()`` returned: queued in its lane, skipped, or ignored (not ours)."""
        tp = TopicPartition(record.topic, record.partition)
        offsets = self.offsets.get(tp)
        if offsets is None:
            return  # not ours any more (a record handed out while the partition was revoked)
        try:
            fresh = offsets.take(record.offset)
        except ValueError:
            # the position moved back (an offset reset): start the partition's bookkeeping over
            log.warning("%s: offset %d below the last taken one; tracking the partition anew", tp, record.offset)
            self.drop_waiting([tp])  # the old bookkeeping's records and lanes go; running ones are discarded
            offsets = self.offsets[tp] = PartitionOffsets()
            fresh = offsets.take(record.offset)
        if not fresh:
            self.counts["skipped"] += 1
            return
        job = Job(record, tp, self.scheduler.lane(tp, record.key), offsets, record_size(record))
        self.buffered_records += 1
        self.buffered_bytes += job.size
        self.scheduler.add(job.lane, job)

    def start(self, now: float) -> Job[K, V] | None:
        """The next record to run now (registered as running), or None (full, nothing ready, failed)."""
        if len(self.running) >= self.settings.max_concurrency or self.failure is not None:
            return None
        taken = self.scheduler.take(now)
        if taken is None:
            return None
        job = taken[1]
        if job.tries.dead_letter is None:
            job.tries.count += 1
        with self.lock:
            self.running[id(job)] = (job, now)
        self.counts["max-in-flight"] = max(self.counts["max-in-flight"], len(self.running))
        return job

    def can_start(self, now: float) -> bool:
        """Whether ``start(now)`` would return a record."""
        return len(self.running) < self.settings.max_concurrency and self.failure is None and self.scheduler.ready(now)

    def poll_timeout_ms(self, idle_ms: int, now: float) -> int:
        """0 while records run or can start; until the next retry is due; else ``idle_ms``."""
        if self.running or self.scheduler.ready(now):
            return 0
        return self.idle_timeout_ms(idle_ms, now)

    def idle_timeout_ms(self, idle_ms: int, now: float) -> int:
        """``idle_ms``, or less when a retry is due sooner."""
        due = self.scheduler.next_retry()
        if due is None:
            return idle_ms
        return max(0, min(idle_ms, int((due - now) * 1000) + 1))

    def finished(self, job: Job[K, V], error: BaseException | None, now: float) -> None:
        """An attempt of ``job`` ended (``error`` None: the handler, or the hook, returned)."""
        with self.lock:
            self.running.pop(id(job), None)
        current = self.offsets.get(job.tp) is job.offsets
        if error is not None and current and job.tp not in self.revoking and self._failed(job, error, now):
            return  # retried or dead-lettered: still buffered, its lane still busy
        self.buffered_records -= 1
        self.buffered_bytes -= job.size
        if not current:
            self.counts["discarded"] += 1  # revoked or lost meanwhile: its result is not committed
            return
        if error is not None:
            return  # left incomplete (revoking, or the failure is raised by run())
        job.offsets.complete(job.record.offset)
        self.scheduler.finish(job.lane)
        self.counts["completed"] += 1

    def _failed(self, job: Job[K, V], error: BaseException, now: float) -> bool:
        """A failed attempt: True when it is retried or dead-lettered (the job lives on)."""
        self.counts["failed"] += 1
        settings = self.settings
        if job.tries.dead_letter is not None:  # the dead-letter hook itself raised
            self._fail(job, f"the dead-letter hook raised {error!r}", error)
            return False
        if job.tries.count <= settings.retries:
            backoff_s, backoff_max_s = settings.retry_backoff_ms / 1000, settings.retry_backoff_max_ms / 1000
            delay = min(backoff_max_s, backoff_s * 2 ** (job.tries.count - 1))
            self.counts["retried"] += 1
            self.scheduler.retry(job.lane, job, now + delay)
            return True
        if not settings.dead_letter_hook:
            self._fail(job, f"failed {job.tries.count} times: {error!r}", error)
            return False
        self.counts["dead-lettered"] += 1
        job.tries.dead_letter = error
        self.scheduler.retry(job.lane, job, now)  # the hook runs next, in its lane
        return True

    def _fail(self, job: Job[K, V], message: str, error: BaseException) -> None:
        if self.failure is None:
            failure = ProcessingError(job.record, message)
            failure.__cause__ = error
            self.failure = failure

    # ------------------------------------------------------------------ back-pressure
    def backpressure(self, assigned: frozenset[TopicPartition]) -> tuple[set[TopicPartition], set[TopicPartition]]:
        """``(pause, resume)``: every partition past the buffer limits (resumed below 3/4), and those held."""
        max_records, max_bytes = self.settings.max_buffered_records, self.settings.max_buffered_bytes
        self.paused_by_us &= assigned
        self.held &= assigned
        if self.buffered_records >= max_records or self.buffered_bytes >= max_bytes:
            wanted = set(assigned)
        elif self.buffered_records < max_records * 3 // 4 and self.buffered_bytes < max_bytes * 3 // 4:
            wanted = set(self.held)
        else:
            wanted = self.paused_by_us | self.held
        pause, resume = wanted - self.paused_by_us, self.paused_by_us - wanted
        if pause:
            self.counts["pauses"] += 1
        self.paused_by_us = wanted
        return pause, resume

    def apply_backpressure(self, consumer: _Pausable) -> None:
        """``backpressure()`` on ``consumer``: its partitions paused and resumed (non-blocking calls)."""
        pause, resume = self.backpressure(consumer.assignment())
        if pause:
            consumer.pause(pause)
        if resume:
            consumer.resume(resume)

    # ------------------------------------------------------------------ commits
    def commit_points(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata]:
        """What to commit for ``partitions`` (those whose point changed since the last commit)."""
        out: dict[TopicPartition, OffsetAndMetadata] = {}
        max_chars = self.settings.max_metadata_chars
        for tp in partitions:
            offsets = self.offsets.get(tp)
            if offsets is not None and not self.settings.commit_metadata:
                offset = offsets.commit_offset()
                if offset is not None and self.last_commit.get(tp) != (offset, ""):
                    out[tp] = OffsetAndMetadata(offset, "")
                continue
            point = offsets.commit_point(max_chars) if offsets is not None else None
            if offsets is not None and offsets.truncated != (tp in self.held):
                if offsets.truncated:
                    log.warning(
                        "%s: the completions above offset %s no longer fit the commit metadata (%d chars):"
                        " the partition is paused until they do", tp, offsets.commit_offset(), max_chars,
                    )
                    self.held.add(tp)
                else:
                    self.held.discard(tp)
            if point is not None and self.last_commit.get(tp) != point:
                out[tp] = OffsetAndMetadata(point[0], point[1])
        return out

    def due_commit(self, now: float, *, force: bool) -> dict[TopicPartition, OffsetAndMetadata] | None:
        """The points to commit asynchronously now; None when not due or a commit is in flight.

        Settles the commit in flight first (one at a time: a later one never lands before it).
        The caller sends the points and hands the future to ``sent()``.
        """
        if not force and now < self.commit_due:
            return None
        if self.pending_commit is not None:
            future, points = self.pending_commit
            if not future.done():
                return None
            self.pending_commit = None
            error = _failure_of(future)
            if error is None:
                self.committed(points)
            else:
                self.counts["commit-failures"] += 1
                log.debug("parallel commit failed: %r", error)
        self.commit_due = now + self.settings.commit_interval_ms / 1000
        return self.commit_points(list(self.offsets)) or None

    def sent(self, future: _Outcome, points: dict[TopicPartition, OffsetAndMetadata]) -> None:
        """The asynchronous commit of ``points`` is in flight."""
        self.pending_commit = (future, points)

    def committed(self, points: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """A commit of ``points`` landed."""
        self.counts["commits"] += 1
        for tp, om in points.items():
            if tp in self.offsets:
                self.last_commit[tp] = (om.offset, om.metadata)

    def commit_failed(self, points: Mapping[TopicPartition, OffsetAndMetadata], error: BaseException) -> None:
        """A synchronous commit of ``points`` (on revocation) failed."""
        self.counts["commit-failures"] += 1
        log.warning("parallel commit of %s on revocation failed: %r", sorted(map(str, points)), error)

    # ------------------------------------------------------------------ rebalances
    def drop_waiting(self, partitions: Collection[TopicPartition]) -> None:
        """No waiting record or retry of ``partitions`` starts any more."""
        for job in self.scheduler.drop(partitions):
            self.buffered_records -= 1
            self.buffered_bytes -= job.size

    def forget(self, partitions: Collection[TopicPartition]) -> None:
        """``partitions`` are not ours: their bookkeeping goes (running records' results are discarded)."""
        self.drop_waiting(partitions)
        for tp in partitions:
            self.offsets.pop(tp, None)
            self.paused_by_us.discard(tp)
            self.held.discard(tp)
            self.last_commit.pop(tp, None)

    def running_in(self, partitions: Collection[TopicPartition]) -> list[Job[K, V]]:
        """The running records of ``partitions``."""
        with self.lock:
            return [job for job, _ in self.running.values() if job.tp in partitions]

    def assigned(
        self, partitions: Iterable[TopicPartition], committed: Mapping[TopicPartition, OffsetAndMetadata | None]
    ) -> None:
        """``partitions`` are ours, from their ``committed`` offsets and the completions in the metadata."""
        for tp in partitions:
            om = committed.get(tp)
            if om is None:
                self.offsets[tp] = PartitionOffsets()
            else:
                self.offsets[tp] = PartitionOffsets(om.offset, decode_completed(om.metadata, om.offset))
                self.last_commit[tp] = (om.offset, om.metadata)

    # ------------------------------------------------------------------ observability
    def metrics(self, consumer_metrics: Mapping[str, float], now: float) -> dict[str, float]:
        """``consumer_metrics`` plus the ``parallel-*`` metrics (``docs/parallel.md``, "Observability")."""
        with self.lock:
            started = [start for _, start in self.running.values()]
        stuck_after_s = self.settings.stuck_after_ms / 1000
        out = dict(consumer_metrics)
        out["parallel-records-in-flight"] = float(len(started))
        out["parallel-records-stuck"] = float(sum(1 for start in started if now - start > stuck_after_s))
        out["parallel-oldest-record-running-seconds"] = max((now - start for start in started), default=0.0)
        out["parallel-records-buffered"] = float(self.buffered_records)
        out["parallel-bytes-buffered"] = float(self.buffered_bytes)
        out["parallel-partitions-paused"] = float(len(self.paused_by_us))
        out["parallel-partitions-held"] = float(len(self.held))
        for name, value in list(self.counts.items()):
            out[METRIC_NAMES[name]] = float(value)
        return out

    def health(self, report: HealthReport, now: float) -> HealthReport:
        """``report``, not live (nor ready) while a record runs past ``stuck_after_ms``, naming it."""
        stuck_after_s = self.settings.stuck_after_ms / 1000
        with self.lock:
            stuck = [(job, now - start) for job, start in self.running.values() if now - start > stuck_after_s]
        if not stuck:
            return report
        reasons = tuple(
            f"record {job.tp.topic}-{job.tp.partition}@{job.record.offset} has been running for {age:.0f} s"
            f" (stuck_after_ms={stuck_after_s * 1000:.0f})"
            for job, age in sorted(stuck, key=lambda item: -item[1])[:5]
        )
        return attrs.evolve(report, live=False, ready=False, reasons=report.reasons + reasons)


#: the processors' counters as metric names
METRIC_NAMES = {
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
