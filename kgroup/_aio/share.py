"""``kgroup.aio.ShareConsumer``: a share group's member (KIP-932) driven from an event loop.

It wraps a ``kgroup.ShareConsumer`` as ``kgroup.aio.Consumer`` wraps a ``kgroup.Consumer``: the
same member, its blocking calls run one at a time on one worker thread (``kgroup._aio.worker``),
the loop awaits each. docs/share-groups.md ("asyncio") is the guide. Rules:

1. ``poll()`` runs the wrapped ``poll()`` on the worker into a buffer and hands the buffer out.
   A cancelled ``poll()`` loses no acquired record: a queued one never runs; a running one is
   ended with the wrapped consumer's ``wakeup()``, and what it returned stays buffered; the next
   ``poll()`` hands it out without polling the wrapped consumer (so the records are still the
   last ``poll()``'s: implicit mode does not accept them, explicit mode may acknowledge them).
2. Records still buffered when a call would acknowledge them (``commit_sync``, ``commit_async``,
   ``unsubscribe``, ``close``: implicit mode accepts what the last wrapped ``poll()`` returned)
   are released first (``AcknowledgeType.RELEASE``): the application never saw them, so the
   broker delivers them again, to this member or another.
3. The acknowledgement commit callback runs on the loop (a coroutine function is awaited as a
   task); what it raises is raised by the next ``poll()`` or commit.
4. An error a cancelled ``poll()`` raised is raised by the next ``poll()``; a ``wakeup()`` of the
   application it swallowed is kept for the next call.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from kgroup._aio.worker import Job, Worker
from kgroup._typevars import K, V
from kgroup.errors import ConsumerClosedError, KGroupError, WakeupError
from kgroup.share_consumer import ShareConsumer as _SyncShareConsumer
from kgroup.types import AcknowledgeType, ShareConsumerRecord, TopicPartition

if TYPE_CHECKING:
    from kgroup._clock import Clock
    from kgroup.config import ShareConsumerConfig
    from kgroup.deserializers import DeserializerLike
    from kgroup.health import HealthReport

__all__ = ["AsyncAcknowledgementCommitCallback", "ShareConsumer"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: the acknowledgement commit callback on the loop: ``(offsets by partition, error or None)``,
#: a plain function or a coroutine function
AsyncAcknowledgementCommitCallback = Callable[
    [Mapping[TopicPartition, frozenset[int]], "KGroupError | None"], "Awaitable[None] | None"
]


class _WorkerView:
    """What the worker reads of the consumer it runs calls for: the mailbox, ``wakeup()``, the group's config."""

    def __init__(self, sync: _SyncShareConsumer[Any, Any]) -> None:
        self._mailbox = sync._mailbox
        self.wakeup = sync.wakeup
        self.config = sync.config.consumer


class ShareConsumer(Generic[K, V]):
    """``kgroup.ShareConsumer`` for asyncio: the same share-group member, its blocking calls awaitable.

    ``kgroup.aio.ShareConsumer(bootstrap_servers=..., group_id=..., **config)`` takes what
    ``kgroup.ShareConsumer`` takes. Use it from one event loop; ``wakeup()`` is safe from any
    thread. ``async with`` closes it.

    Example::

        async with kgroup.aio.ShareConsumer(bootstrap_servers="kafka:9092", group_id="jobs") as consumer:
            await consumer.subscribe(["jobs"])
            while True:
                for record in await consumer.poll(1000):
                    await handle(record)

    """

    def __init__(
        self,
        config: ShareConsumerConfig | None = None,
        /,
        *,
        key_deserializer: DeserializerLike[K] | None = None,
        value_deserializer: DeserializerLike[V] | None = None,
        transport: Any = None,
        clock: Clock | None = None,
        **kwargs: Any,
    ) -> None:
        sync: _SyncShareConsumer[K, V] = _SyncShareConsumer(
            config, key_deserializer=key_deserializer, value_deserializer=value_deserializer,
            transport=transport, clock=clock, **kwargs,
        )
        self._setup(sync, None)

    @classmethod
    def _wrapping(
        cls, sync: _SyncShareConsumer[K, V], spawn: Callable[[str, Callable[[], None]], None] | None = None
    ) -> ShareConsumer[K, V]:
        """An aio share consumer around ``sync`` (tests, the simulator; ``spawn`` starts the worker)."""
        self = cls.__new__(cls)
        self._setup(sync, spawn)
        return self

    def _setup(self, sync: _SyncShareConsumer[K, V], spawn: Callable[[str, Callable[[], None]], None] | None) -> None:
        self._sync = sync
        self._worker = Worker(cast(Any, _WorkerView(sync)), spawn, self._resolve)
        self._cond = self._worker.cond
        #: guarded by _cond: records the wrapped poll() returned and the application did not get yet
        self._buffer: collections.deque[ShareConsumerRecord[K, V]] = collections.deque()
        #: loop side only
        self._closing = False
        self._closed = False
        self._close_future: asyncio.Future[None] | None = None
        self._pending_error: BaseException | None = None
        self._callback: AsyncAcknowledgementCommitCallback | None = None
        self._callback_tasks: set[asyncio.Future[Any]] = set()

    # ------------------------------------------------------------------ properties, reads
    @property
    def config(self) -> ShareConsumerConfig:
        """The share consumer's configuration."""
        return self._sync.config

    @property
    def member_id(self) -> str | None:
        """``kgroup.ShareConsumer.member_id``."""
        return self._sync.member_id

    def subscription(self) -> frozenset[str]:
        """The subscribed topic names (empty when not subscribed)."""
        return self._sync.subscription()

    def assignment(self) -> frozenset[TopicPartition]:
        """``kgroup.ShareConsumer.assignment``: the partitions the coordinator assigned (others may share them)."""
        return self._sync.assignment()

    def acquisition_lock_timeout_ms(self) -> int | None:
        """``kgroup.ShareConsumer.acquisition_lock_timeout_ms``: the broker's lock timeout in ms, or None."""
        return self._sync.acquisition_lock_timeout_ms()

    def metrics(self) -> dict[str, float]:
        """``kgroup.ShareConsumer.metrics``: Java's ``KafkaShareConsumer`` metric names; never blocks."""
        return self._sync.metrics()

    def health(self) -> HealthReport:
        """``kgroup.ShareConsumer.health``: liveness and readiness verdicts; never blocks."""
        return self._sync.health()

    # ------------------------------------------------------------------ context manager
    async def __aenter__(self) -> ShareConsumer[K, V]:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # ------------------------------------------------------------------ subscription
    async def subscribe(self, topics: Iterable[str]) -> None:
        """``kgroup.ShareConsumer.subscribe`` on the worker (same errors); the member joins at the next ``poll()``."""
        self._check_usable()
        names = topics if isinstance(topics, str) else list(topics)  # a one-shot iterable is read once, here
        await self._call(functools.partial(self._sync.subscribe, names))

    async def unsubscribe(self) -> None:
        """``kgroup.ShareConsumer.unsubscribe`` on the worker; buffered records are released first (rule 2)."""
        self._check_usable()
        await self._call(functools.partial(self._releasing, self._sync.unsubscribe), barrier=True)

    # ------------------------------------------------------------------ poll
    async def poll(self, timeout_ms: int = 0) -> list[ShareConsumerRecord[K, V]]:
        """Records acquired for this member: ``kgroup.ShareConsumer.poll`` on the worker thread.

        Cancellation-safe: records a cancelled call got stay buffered for the next call, which
        returns them first (the module docstring).

        Args:
            timeout_ms: the longest to wait for records, in ms (>= 0).

        Returns:
            Up to ``max_poll_records`` records.

        Raises:
            the errors of ``kgroup.ShareConsumer.poll``; ``ConsumerClosedError`` also when
            ``close()`` ended this call; what the acknowledgement commit callback raised.

        """
        self._check_usable()
        if timeout_ms < 0:
            raise ValueError(f"timeout_ms must not be negative, got {timeout_ms}")
        self._raise_kept_error()
        taken = self._take_all()
        if taken:
            return taken
        try:
            await self._call(functools.partial(self._poll_job, timeout_ms), barrier=True, interruptible=True)
        except WakeupError:
            if self._closing:
                raise ConsumerClosedError("poll() ended by close()") from None
            raise
        if self._closing:
            raise ConsumerClosedError("poll() ended by close()")
        self._raise_kept_error()
        return self._take_all()

    def _poll_job(self, timeout_ms: int) -> None:
        """Worker: poll the wrapped consumer into the buffer, unless records wait there (rule 1)."""
        with self._cond:
            if self._closing or self._buffer:
                return
        records = self._sync.poll(timeout_ms)
        with self._cond:
            self._buffer.extend(records)

    def _take_all(self) -> list[ShareConsumerRecord[K, V]]:
        with self._cond:
            taken = list(self._buffer)
            self._buffer.clear()
        return taken

    def _releasing(self, fn: Callable[[], T]) -> T:
        """Worker: release the buffered records (rule 2), then ``fn()``."""
        with self._cond:
            held = list(self._buffer)
            self._buffer.clear()
        fetcher = self._sync._fetcher
        if held and fetcher is not None:
            by_tp: dict[TopicPartition, dict[int, int]] = {}
            for record in held:
                by_tp.setdefault(record.topic_partition, {})[record.offset] = int(AcknowledgeType.RELEASE)
            fetcher.inflight.give_back(by_tp)
        return fn()

    def _raise_kept_error(self) -> None:
        error, self._pending_error = self._pending_error, None
        if error is not None:
            raise error

    # ------------------------------------------------------------------ acknowledgements
    def acknowledge(self, record: Any, *args: Any, **kwargs: Any) -> None:
        """``kgroup.ShareConsumer.acknowledge`` (explicit mode): a record the last ``poll()`` returned.

        Non-blocking: it runs at once when no call runs, else right after the running one.

        Raises:
            IllegalStateError: implicit mode, or the record is not waiting for an acknowledgement
                (raised here when it runs at once).
            TypeError: a bad argument.

        """
        self._check_usable()
        self._worker.apply(functools.partial(self._sync.acknowledge, record, *args, **kwargs))

    def set_acknowledgement_commit_callback(self, callback: AsyncAcknowledgementCommitCallback | None) -> None:
        """Call ``callback(offsets, error)`` on the loop once acknowledgements are answered (rule 3).

        ``kgroup.ShareConsumer.set_acknowledgement_commit_callback``'s arguments; a coroutine
        function is awaited as a task. What it raises is raised by the next ``poll()`` or commit.
        """
        self._callback = callback
        self._sync.set_acknowledgement_commit_callback(None if callback is None else self._on_acknowledged)

    def _on_acknowledged(self, offsets: Mapping[TopicPartition, frozenset[int]], error: KGroupError | None) -> None:
        """Worker, inside the wrapped call: hand the callback to the loop."""
        self._worker.on_loop(self._run_callback, offsets, error)

    def _run_callback(self, offsets: Mapping[TopicPartition, frozenset[int]], error: KGroupError | None) -> None:
        callback = self._callback
        if callback is None:
            return
        try:
            result = callback(offsets, error)
        except Exception as exc:
            self._pending_error = self._pending_error or exc
            return
        if inspect.isawaitable(result):
            task = asyncio.ensure_future(result)
            self._callback_tasks.add(task)
            task.add_done_callback(self._callback_done)

    def _callback_done(self, task: asyncio.Future[Any]) -> None:
        self._callback_tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._pending_error = self._pending_error or task.exception()

    async def commit_sync(self, timeout_ms: int | None = None) -> dict[TopicPartition, KGroupError | None]:
        """``kgroup.ShareConsumer.commit_sync`` on the worker: send the acknowledgements due, await the answers.

        Buffered records are released first (rule 2). Cancelling it does not withdraw the
        request carrying the acknowledgements (a ShareFetch or a ShareAcknowledge, bounded by
        ``timeout_ms``).

        Returns:
            Per partition acknowledged: None or the typed error (``kgroup.ShareConsumer.commit_sync``).

        Raises:
            WakeupError: ``wakeup()`` was called. What the acknowledgement commit callback raised.

        """
        self._check_usable()
        self._raise_kept_error()
        result = await self._call(functools.partial(self._releasing, functools.partial(self._sync.commit_sync,
                                                                                       timeout_ms)))
        self._raise_kept_error()
        return result

    async def commit_async(self) -> None:
        """``kgroup.ShareConsumer.commit_async`` on the worker: send the acknowledgements due, not awaiting answers.

        Buffered records are released first (rule 2); the callback reports the outcome later.
        """
        self._check_usable()
        self._raise_kept_error()
        await self._call(functools.partial(self._releasing, self._sync.commit_async))

    # ------------------------------------------------------------------ wakeup, close
    def wakeup(self) -> None:
        """Make the running (or next) ``poll()`` or ``commit_sync()`` raise ``WakeupError``; any thread."""
        self._worker.user_wakeup()

    async def close(self, timeout_ms: int = 30000) -> None:
        """``kgroup.ShareConsumer.close`` on the worker, within ``timeout_ms``; idempotent.

        A running ``poll()`` is ended at once (it raises ``ConsumerClosedError``), queued ones
        dropped; buffered records are released (rule 2); then the wrapped close acknowledges,
        closes the share sessions and leaves the group. If that takes longer than
        ``timeout_ms``, it goes on in the background and this returns, logging a warning.
        """
        loop = self._worker.bind_loop()
        if self._close_future is not None:
            await asyncio.wait([self._close_future], timeout=max(0.0, timeout_ms / 1000))
            return
        self._closing = True
        started = self._sync._clock.monotonic()
        for job in self._worker.drop_barriers():
            if job.future is not None and not job.future.done():
                job.future.set_exception(ConsumerClosedError("the call was ended by close()"))
        future: asyncio.Future[None] = loop.create_future()
        self._close_future = future

        def close_job() -> None:
            left_ms = max(0, int(timeout_ms - (self._sync._clock.monotonic() - started) * 1000))
            self._releasing(functools.partial(self._sync.close, left_ms))

        self._worker.submit(Job(close_job, future, barrier=True, last=True))
        try:
            await asyncio.wait_for(asyncio.shield(future), max(0.0, timeout_ms / 1000))
        except asyncio.TimeoutError:
            log.warning("share group %s: close() did not finish within %d ms; it goes on in the background",
                        self._sync.config.consumer.group_id, timeout_ms)
            future.add_done_callback(self._log_close_failure)
        except asyncio.CancelledError:
            future.add_done_callback(self._log_close_failure)
            raise
        finally:
            self._closed = True

    def _log_close_failure(self, future: asyncio.Future[None]) -> None:
        if not future.cancelled() and future.exception() is not None:
            log.warning("share group %s: close failed: %s", self._sync.config.consumer.group_id, future.exception())

    # ------------------------------------------------------------------ loop side: calls
    def _check_usable(self) -> None:
        if self._closing or self._closed:
            raise ConsumerClosedError("the share consumer is closed")

    async def _call(self, fn: Callable[[], T], *, barrier: bool = False, interruptible: bool = False) -> T:
        """Run ``fn`` on the worker and await its outcome (rule 1 on cancelling)."""
        loop = self._worker.bind_loop()
        future: asyncio.Future[T] = loop.create_future()
        job = Job(fn, future, barrier=barrier, interruptible=interruptible)
        self._worker.submit(job)
        try:
            return await future
        except asyncio.CancelledError:
            self._worker.cancel(job)
            if future.done() and not future.cancelled():
                self._dropped(job, future.exception())
            raise

    def _dropped(self, job: Job, error: BaseException | None) -> None:
        """Loop: the awaiter of ``job`` gave up before getting ``error`` (or a result): rule 4."""
        if error is None:
            return
        if isinstance(error, WakeupError):
            if self._worker.user_woken:
                self._sync._mailbox.wake()
        elif job.barrier and isinstance(error, Exception) and not self._closing:
            self._pending_error = error

    def _resolve(self, job: Job, value: Any, error: BaseException | None) -> None:
        """Loop: hand ``job``'s outcome to its awaiter."""
        future = job.future
        assert future is not None
        if future.done():
            self._dropped(job, error)
            return
        if error is None:
            future.set_result(value)
            return
        if isinstance(error, WakeupError):
            self._worker.wakeup_delivered()
        future.set_exception(error)
