"""``kgroup.aio.ParallelProcessor``: ``kgroup.ParallelProcessor``'s contract with asyncio tasks.

A ``kgroup.aio.Consumer``'s records, an ``async def handle(record)`` per record, up to
``max_concurrency`` tasks at once, in the order ``ordering`` keeps ("key", "partition",
"unordered"), committed so that a commit never runs ahead of unfinished work (the first record
not completed per partition, the completions above it in the commit metadata). The decisions
(what starts next, retries, dead letters, back-pressure, commit points, stuck records) are
``kgroup._parallel.ledger``'s, shared with the threaded processor; this module runs them on
the event loop. ``docs/parallel.md`` ("asyncio") is the guide.

Everything runs on the event loop of ``run()``: the loop polls, dispatches and commits; a
handler task that ends reports back and starts the next record at once; the rebalance
callbacks (awaited on the loop by ``kgroup.aio.Consumer``) wait for the revoked partitions'
tasks with ``asyncio.wait``. ``stop()``, ``metrics()`` and ``health()`` are safe from any thread.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Protocol

from kgroup import listener as _sync_listener
from kgroup._aio.listener import Listener as _Listener
from kgroup._aio.listener import RebalanceListener
from kgroup._clock import Clock, MonotonicClock
from kgroup._parallel.ledger import Job, Ledger, ProcessorOptions, Settings
from kgroup._typevars import K, V
from kgroup.errors import ConsumerClosedError, IllegalStateError, KGroupError
from kgroup.health import HealthReport
from kgroup.types import ConsumerRecord, OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from kgroup.config import ConsumerConfig

__all__ = ["ParallelProcessor"]


class Consumer(Protocol[K, V]):
    """What the processor uses of its ``kgroup.aio.Consumer`` (a protocol: no import of ``kgroup.aio``)."""

    @property
    def config(self) -> ConsumerConfig: ...

    async def subscribe(
        self,
        topics: Iterable[str] | None = None,
        listener: _Listener | None = None,
        *,
        pattern: re.Pattern[str] | str | None = None,
    ) -> None: ...

    async def poll(self, timeout_ms: int = 0) -> list[ConsumerRecord[K, V]]: ...

    async def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None, *, timeout_ms: int | None = None
    ) -> None: ...

    def commit_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None
    ) -> asyncio.Future[None]: ...

    async def committed(
        self, partitions: Iterable[TopicPartition], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]: ...

    def assignment(self) -> frozenset[TopicPartition]: ...

    def pause(self, partitions: Iterable[TopicPartition]) -> None: ...

    def resume(self, partitions: Iterable[TopicPartition]) -> None: ...

    def metrics(self) -> dict[str, float]: ...

    def health(self) -> HealthReport: ...

    async def close(self, timeout_ms: int = 30000) -> None: ...

log = logging.getLogger("kgroup.aio.parallel")

Handler = Callable[[ConsumerRecord[K, V]], Awaitable[object]]
#: a plain function or a coroutine function (awaited)
DeadLetterHook = Callable[[ConsumerRecord[K, V], BaseException], object]

#: the longest poll while records run and partitions are paused for back-pressure, in ms
#: (a completion may let them resume)
_PAUSED_POLL_MS = 10


class ParallelProcessor(Generic[K, V]):
    """Run ``await handler(record)`` for the records of ``consumer``, many at once, committing safely.

    ``kgroup.ParallelProcessor``'s contract (``docs/parallel.md``) with asyncio tasks instead
    of threads; the arguments (and their defaults), metrics and commit metadata are the same.

    Args:
        consumer: a ``kgroup.aio.Consumer`` with ``enable_auto_commit=False``, not subscribed
            yet; the processor owns its poll loop from ``subscribe()`` on, and ``close()``
            closes it.
        handler: ``async def handler(record)``, run as a task on the loop; its result is
            ignored, an exception is a failure (retried, then dead-lettered).
        ordering: "key" (records with equal keys in a partition one at a time, in offset
            order; a null key counts as one key), "partition" or "unordered".
        max_concurrency: handler tasks running at once at most.
        max_buffered_records, max_buffered_bytes: taken from the consumer and not completed
            (waiting, retrying or running) at most; beyond, every partition is paused, and
            resumed below three quarters. Bytes count keys and values that are ``bytes`` or ``str``.
        retries: attempts after the first, ``retry_backoff_ms`` apart, doubling up to
            ``retry_backoff_max_ms``; the record's lane (its key, or partition) waits meanwhile.
        on_dead_letter: ``hook(record, exception)`` after the last failed attempt, a plain or
            a coroutine function (awaited in a task); once it returns the record counts as
            completed. Without one (or if it raises) ``run()`` raises ``kgroup.ProcessingError``.
        commit_interval_ms: how often the completed work is committed (``commit_async``; one
            commit in flight at a time); on revocation and close, awaited.
        revoke_timeout_ms: how long a revoked partition's running tasks get to finish before
            its commit (the results of those still running are then discarded, and the next
            owner processes the records again).
        stuck_after_ms: a task running longer is reported by ``health()`` (not live) and the
            ``parallel-records-stuck`` metric.
        max_metadata_chars: the broker's ``offset.metadata.max.bytes`` (4096 by default).
        commit_metadata: True (the default): the completions above the committed offset in the
            commit's metadata; False: the first record not completed only (as the threaded one).
        clock: a ``Clock`` (tests).

    Raises:
        ConfigError: ``enable_auto_commit`` is on, or a bad argument.

    Example::

        async with kgroup.aio.ParallelProcessor(consumer, handle, max_concurrency=64) as processor:
            await processor.subscribe(["orders"])
            await processor.run()  # until processor.stop(), or cancelled

    """

    def __init__(
        self,
        consumer: Consumer[K, V],
        handler: Handler[K, V],
        *,
        on_dead_letter: DeadLetterHook[K, V] | None = None,
        clock: Clock | None = None,
        **options: Unpack[ProcessorOptions],
    ) -> None:
        settings = Settings.checked(
            enable_auto_commit=consumer.config.enable_auto_commit, dead_letter_hook=on_dead_letter is not None,
            **options,
        )
        self._consumer = consumer
        self._handler = handler
        self._on_dead_letter = on_dead_letter
        self._revoke_timeout_s = settings.revoke_timeout_ms / 1000
        self._clock = clock or MonotonicClock()
        # metrics() and health() may come from another thread: the running records under a lock
        self._ledger: Ledger[K, V] = Ledger(settings, threading.Lock())
        #: the handler tasks running, by id(job)
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._user_listener: _Listener | None = None
        self._stop = False
        self._closed = False

    # ------------------------------------------------------------------ lifecycle
    async def subscribe(
        self,
        topics: Iterable[str] | None = None,
        listener: _Listener | None = None,
        *,
        pattern: re.Pattern[str] | str | None = None,
    ) -> None:
        """``kgroup.aio.Consumer.subscribe`` with the processor's listener in front of ``listener``.

        ``listener`` is a ``kgroup.aio.RebalanceListener`` (coroutine callbacks, awaited) or a
        ``kgroup.RebalanceListener``; its callbacks keep the listener contract and run after
        the processor's part: ``on_partitions_revoked`` once the partitions' tasks are done
        (or timed out, ``revoke_timeout_ms``) and committed, ``on_partitions_lost`` once their
        records are dropped, ``on_partitions_assigned`` once their committed offsets and
        metadata are read. Do not ``seek()`` in ``on_partitions_assigned``.

        Raises:
            IllegalStateError: a bad listener, and what ``kgroup.aio.Consumer.subscribe`` raises.

        """
        if listener is not None and not isinstance(listener, (RebalanceListener, _sync_listener.RebalanceListener)):
            raise IllegalStateError("listener must be a kgroup.aio.RebalanceListener or kgroup.RebalanceListener")
        self._user_listener = listener
        await self._consumer.subscribe(topics, _ProcessorListener(self), pattern=pattern)

    async def run(self, *, poll_timeout_ms: int = 100) -> None:
        """Poll, dispatch and commit until ``stop()``.

        Cancelling it (a task group, ``asyncio.wait_for``, a shutdown) stops it too: nothing
        new starts, the completed work is committed (awaited; a failure is logged), and the
        ``CancelledError`` goes on. Running tasks go on until ``close()``.

        Args:
            poll_timeout_ms: the longest one ``poll()`` waits when nothing is due sooner.

        Raises:
            ProcessingError: a record failed and no dead-letter hook took it.
            Anything ``kgroup.aio.Consumer.poll()`` raises (``ListenerError``, a fatal group error, ...).

        """
        try:
            while not self._stop:
                self._raise_failure()
                self._dispatch()
                self._maybe_commit()
                self._ledger.apply_backpressure(self._consumer)
                records = await self._consumer.poll(self._poll_timeout_ms(poll_timeout_ms))
                for record in records:
                    self._ledger.take(record)
                if records:
                    self._dispatch()
            self._raise_failure()
        except ConsumerClosedError:
            if not self._stop:
                raise  # closed behind the processor's back
        except asyncio.CancelledError:
            self._stop = True
            await self._commit_safe()
            raise

    def stop(self) -> None:
        """Make ``run()`` return after its current turn (``poll_timeout_ms`` at most). Safe from any thread."""
        self._stop = True

    async def close(self, timeout_ms: int = 30_000) -> None:
        """Stop starting records, let running tasks finish, commit, close the consumer.

        ``kgroup.aio.Consumer.close()`` revokes the partitions, which waits for their tasks
        (``revoke_timeout_ms``) and commits; tasks still running then are cancelled (their
        records were not committed). Idempotent.

        Raises:
            IllegalStateError: called from inside a rebalance listener callback (nothing closed).
            What ``kgroup.aio.Consumer.close()`` raises (the processor is closed all the same).

        """
        if self._closed:
            return
        self._stop = True
        started = asyncio.get_running_loop().time()
        try:
            await self._consumer.close(timeout_ms)
        except IllegalStateError:
            raise  # close() inside a rebalance callback (kgroup.listener): nothing was closed
        except BaseException:
            await self._shut_down(started, timeout_ms)
            raise
        await self._shut_down(started, timeout_ms)

    async def _shut_down(self, started: float, timeout_ms: int) -> None:
        self._closed = True
        left_s = timeout_ms / 1000 - (asyncio.get_running_loop().time() - started)
        await self._cancel_tasks(max(0.0, left_s))

    async def _cancel_tasks(self, timeout_s: float) -> None:
        """Cancel the tasks still running and wait for them (a handler may ignore the cancel: ``timeout_s``)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=max(timeout_s, 0.001))

    async def __aenter__(self) -> ParallelProcessor[K, V]:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # ------------------------------------------------------------------ observability
    def metrics(self) -> dict[str, float]:
        """The consumer's metrics plus ``parallel-*`` (``docs/parallel.md``, "Observability"). Any thread."""
        return self._ledger.metrics(self._consumer.metrics(), self._clock.monotonic())

    def health(self) -> HealthReport:
        """The consumer's ``health()``, not live while a task runs past ``stuck_after_ms``. Any thread.

        A handler that never returns holds its lane (its key, or partition): a liveness
        failure, with the record named in ``reasons``.
        """
        return self._ledger.health(self._consumer.health(), self._clock.monotonic())

    # ------------------------------------------------------------------ the loop's work
    def _raise_failure(self) -> None:
        failure = self._ledger.take_failure()
        if failure is not None:
            self._stop = True
            raise failure

    def _poll_timeout_ms(self, idle_ms: int) -> int:
        """0 when records can start; else until the next retry or commit is due, ``idle_ms`` at most."""
        now = self._clock.monotonic()
        if self._ledger.can_start(now):
            return 0
        timeout = self._ledger.idle_timeout_ms(idle_ms, now)
        if self._tasks:
            if self._ledger.commit_due > now:  # the completions' commit
                timeout = min(timeout, int((self._ledger.commit_due - now) * 1000) + 1)
            if self._ledger.paused_by_us:
                timeout = min(timeout, _PAUSED_POLL_MS)
        return timeout

    def _dispatch(self) -> None:
        if self._stop:
            return
        now = self._clock.monotonic()
        while (job := self._ledger.start(now)) is not None:
            self._tasks[id(job)] = asyncio.ensure_future(self._work(job))

    async def _work(self, job: Job[K, V]) -> None:
        """A task: the handler (or the dead-letter hook), then its outcome, then the next record."""
        error: BaseException | None = None
        try:
            if job.tries.dead_letter is not None and self._on_dead_letter is not None:
                result: Any = self._on_dead_letter(job.record, job.tries.dead_letter)
            else:
                result = self._handler(job.record)
            if inspect.isawaitable(result):
                await result
        except BaseException as exc:  # every failure is the record's (a cancel at close too)
            error = exc
        self._tasks.pop(id(job), None)
        self._ledger.finished(job, error, self._clock.monotonic())
        self._dispatch()

    def _maybe_commit(self) -> None:
        points = self._ledger.due_commit(self._clock.monotonic(), force=False)
        if points:
            self._ledger.sent(self._consumer.commit_async(points), points)

    async def _commit_now(self, partitions: Iterable[TopicPartition]) -> None:
        """An awaited commit of ``partitions`` (revocation, a cancelled ``run()``)."""
        points = self._ledger.commit_points(partitions)
        if not points:
            return
        try:
            await self._consumer.commit(points)
        except KGroupError as exc:
            self._ledger.commit_failed(points, exc)
            return
        self._ledger.committed(points)

    async def _commit_safe(self) -> None:
        """A cancelled ``run()``: commit the completed work (never more)."""
        try:
            await self._commit_now(list(self._ledger.offsets))
        except Exception as exc:  # a consumer closing meanwhile: the revoke commit covers it
            log.debug("commit of a cancelled run() not made: %r", exc)

    # ------------------------------------------------------------------ rebalances (awaited inside poll())
    async def _revoked(self, partitions: frozenset[TopicPartition]) -> None:
        ledger = self._ledger
        ledger.drop_waiting(partitions)  # no record of theirs starts from now on
        ledger.revoking = partitions
        try:
            tasks = [self._tasks[id(job)] for job in ledger.running_in(partitions) if id(job) in self._tasks]
            if tasks:
                _, late = await asyncio.wait(tasks, timeout=self._revoke_timeout_s)
                if late:
                    log.warning(
                        "%d records of revoked partitions still running after revoke_timeout_ms; not committed",
                        len(late),
                    )
            await self._commit_now(partitions)
        finally:
            ledger.revoking = frozenset()
            ledger.forget(partitions)

    async def _assigned(self, partitions: frozenset[TopicPartition]) -> None:
        committed: Mapping[TopicPartition, OffsetAndMetadata | None] = {}
        if partitions:
            try:
                committed = await self._consumer.committed(partitions)
            except KGroupError as exc:
                log.warning("reading the committed metadata of %s failed (%r): no record skipped", partitions, exc)
        self._ledger.assigned(partitions, committed)
        # paused at once if the buffer is full: the poll() this callback runs in would hand out
        # their records past the bound (the back-pressure before it knew only the old partitions)
        self._ledger.apply_backpressure(self._consumer)

    async def _user(self, name: str, partitions: frozenset[TopicPartition]) -> None:
        user = self._user_listener
        if user is None:
            return
        result: Any = getattr(user, name)(partitions)
        if inspect.isawaitable(result):
            await result


class _ProcessorListener(RebalanceListener):
    """The processor's part of a rebalance, then the user's listener (awaited inside ``poll()``)."""

    def __init__(self, processor: ParallelProcessor[Any, Any]) -> None:
        self._processor = processor

    async def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        await self._processor._revoked(partitions)
        await self._processor._user("on_partitions_revoked", partitions)

    async def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self._processor._ledger.forget(partitions)  # results of running tasks are not committed
        await self._processor._user("on_partitions_lost", partitions)

    async def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        await self._processor._assigned(partitions)
        await self._processor._user("on_partitions_assigned", partitions)
