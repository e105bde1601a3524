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

from kgroup._clock import Clock, MonotonicClock
from kgroup._parallel.ledger import Job as _Job
from kgroup._parallel.ledger import Ledger, ProcessingError, Settings
from kgroup._parallel.offsets import DEFAULT_MAX_METADATA_CHARS
from kgroup._parallel.scheduler import Ordering
from kgroup._typevars import K, V
from kgroup.consumer import Consumer
from kgroup.errors import IllegalStateError, KGroupError
from kgroup.health import HealthReport
from kgroup.listener import RebalanceListener
from kgroup.types import ConsumerRecord, OffsetAndMetadata, TopicPartition

__all__ = ["ParallelProcessor", "ProcessingError"]

log = logging.getLogger(__name__)

Handler = Callable[[ConsumerRecord[K, V]], object]
DeadLetterHook = Callable[[ConsumerRecord[K, V], BaseException], object]
_Pattern = re.Pattern[str] | str | None
_Listener = RebalanceListener


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
        commit_metadata: True (the default) writes the completions above the committed offset
            into the commit's metadata, so that the next owner skips them; False commits the
            first record not completed only, with empty metadata (the next owner processes
            again every completion above it; ``docs/parallel.md``, "Commits").
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
        commit_metadata: bool = True,
        clock: Clock | None = None,
        _runtime: _Runtime | None = None,
    ) -> None:
        settings = Settings.checked(
            enable_auto_commit=consumer.config.enable_auto_commit, dead_letter_hook=on_dead_letter is not None,
            ordering=ordering, max_concurrency=max_concurrency, max_buffered_records=max_buffered_records,
            max_buffered_bytes=max_buffered_bytes, retries=retries, retry_backoff_ms=retry_backoff_ms,
            retry_backoff_max_ms=retry_backoff_max_ms, commit_interval_ms=commit_interval_ms,
            revoke_timeout_ms=revoke_timeout_ms, stuck_after_ms=stuck_after_ms, max_metadata_chars=max_metadata_chars,
            commit_metadata=bool(commit_metadata),
        )
        self._consumer = consumer
        self._handler = handler
        self._ordering = ordering
        self._max_concurrency = max_concurrency
        self._on_dead_letter = on_dead_letter
        self._revoke_timeout_s = revoke_timeout_ms / 1000
        self._clock = clock or MonotonicClock()
        # ---- the poll thread's (the running records: the poll thread writes, health() reads, under the lock)
        self._lock = threading.Lock()
        self._ledger: Ledger[K, V] = Ledger(settings, self._lock)
        self._offsets = self._ledger.offsets
        self._running = self._ledger.running
        self._user_listener: RebalanceListener | None = None
        runtime = _runtime or _Threads()
        self._pool = runtime.executor(max_concurrency)
        self._completions: queue.SimpleQueue[_Job[K, V] | _Failed[K, V]] = runtime.completions()
        self._stop = threading.Event()
        self._closed = False

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
        nothing_to_start = len(self._running) >= self._max_concurrency or not self._ledger.scheduler.ready(now)
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
        return self._ledger.poll_timeout_ms(idle_ms, self._clock.monotonic())

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
        return self._ledger.metrics(self._consumer.metrics(), self._clock.monotonic())

    def health(self) -> HealthReport:
        """The consumer's ``health()``, not live while a record runs past ``stuck_after_ms``.

        A handler that never returns holds its lane (its key, or partition) forever: only a
        restart helps, so it is a liveness failure, with the record named in ``reasons``.
        Safe from any thread.
        """
        return self._ledger.health(self._consumer.health(), self._clock.monotonic())

    # ------------------------------------------------------------------ the poll thread's work
    def _raise_failure(self) -> None:
        failure = self._ledger.take_failure()
        if failure is not None:
            self._stop.set()
            raise failure

    def _take(self, record: ConsumerRecord[K, V]) -> None:
        self._ledger.take(record)

    def _dispatch(self) -> None:
        now = self._clock.monotonic()
        while (job := self._ledger.start(now)) is not None:
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
        if isinstance(item, _Failed):
            self._ledger.finished(item.job, item.error, self._clock.monotonic())
        else:
            self._ledger.finished(item, None, self._clock.monotonic())

    def _backpressure(self) -> None:
        """Pause every partition past the buffer limits (resume below 3/4), and those held for their metadata."""
        self._ledger.apply_backpressure(self._consumer)

    def _maybe_commit(self, *, force: bool) -> None:
        points = self._ledger.due_commit(self._clock.monotonic(), force=force)
        if points:
            self._ledger.sent(self._consumer.commit_async(points), points)

    def _commit_now(self, partitions: Collection[TopicPartition]) -> None:
        """A synchronous commit of ``partitions`` (revocation: the generation is still valid)."""
        points = self._ledger.commit_points(partitions)
        if not points:
            return
        try:
            self._consumer.commit(points)
        except KGroupError as exc:
            self._ledger.commit_failed(points, exc)
            return
        self._ledger.committed(points)

    # ------------------------------------------------------------------ rebalances (inside poll())
    def _forget(self, partitions: Collection[TopicPartition]) -> None:
        self._ledger.forget(partitions)

    def _revoked(self, partitions: frozenset[TopicPartition]) -> None:
        self._ledger.drop_waiting(partitions)  # no record of theirs starts from now on
        self._ledger.revoking = partitions
        try:
            self._finish_in_flight(partitions)
            self._commit_now(partitions)
        finally:
            self._ledger.revoking = frozenset()
            self._forget(partitions)

    def _finish_in_flight(self, partitions: frozenset[TopicPartition]) -> None:
        deadline = self._clock.monotonic() + self._revoke_timeout_s
        while self._ledger.running_in(partitions):
            left = deadline - self._clock.monotonic()
            if left <= 0:
                log.warning(
                    "%d records of revoked partitions still running after revoke_timeout_ms; not committed",
                    len(self._ledger.running_in(partitions)),
                )
                break
            self._drain(min(left, 0.05))
        self._commit_now(partitions)
        self._forget(partitions)

    def _assigned(self, partitions: frozenset[TopicPartition]) -> None:
        committed: Mapping[TopicPartition, OffsetAndMetadata | None] = {}
        if partitions:
            try:
                committed = self._consumer.committed(partitions)
            except KGroupError as exc:
                log.warning("reading the committed metadata of %s failed (%r): no record skipped", partitions, exc)
        self._ledger.assigned(partitions, committed)
        # paused at once if the buffer is full: the poll() this callback runs in would hand out
        # their records past the bound (the back-pressure before it knew only the old partitions)
        self._backpressure()


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
