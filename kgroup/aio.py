"""``kgroup.aio``: the consumer for asyncio services (FastAPI, aiohttp, faststream).

``kgroup.aio.Consumer`` drives a ``kgroup.Consumer`` from an event loop. It is the same group
member (membership machine, group thread, poll loop, acquiesce, commits, close), not a second
implementation; ``docs/asyncio.md`` is the guide. The rules:

Threads.

* The event loop's thread: the application calls every method here, and every rebalance
  listener callback runs here (a coroutine method is awaited as a task, a plain one called).
* One worker thread per consumer, started on the first call that needs it: the wrapped
  consumer's poll thread. It runs the blocking calls (``poll``, ``commit``, ``committed``,
  ``position``, the offset look-ups, ``subscribe``, ``close``) one at a time, in the order
  they were asked for, and the loop awaits each.
* kgroup's group thread sends heartbeats and never waits for the loop or the worker
  (``docs/protocol.md``); kafka-python's IO thread owns the sockets.

Listener callbacks (``kgroup.listener``'s contract, with "the thread that calls poll()" read
as "the event loop that awaits poll()"): a callback runs on the loop while the worker, inside
that ``poll()``, ``unsubscribe()`` or ``close()``, waits for it; callbacks never overlap and
keep the order lost, revoked, assigned; heartbeats go on meanwhile. While it waits, the worker
runs the calls a callback (or any other task) awaits, except those three: ``await
consumer.commit()`` inside ``on_partitions_revoked`` commits with the generation still valid,
as in Java; the three from inside a callback raise ``IllegalStateError``.
A callback that raises makes that ``poll()`` raise ``ListenerError`` once the rebalance
completed. Cancelling ``poll()`` never cancels a callback; a cancelled callback task fails
like a raising one.

Records. Records the worker fetched and the application has not received yet are *buffered*
here: ``poll()`` returns them, ``async for`` yields them one by one. A commit with default
offsets, ``position()`` and ``current_lag()`` count a buffered record as not consumed (the
Java consumer's position is the next record the application gets), ``seek()`` drops the
partition's buffered records, ``pause()`` gives them back (the position goes back to the first
of them), and ``close()`` gives every one back before its revoke commit. The worker polls
the wrapped consumer only while the buffer is empty, so the auto-commit and every rebalance
commit it makes cover only records the application received.

Cancellation. Cancelling ``await poll()`` (``asyncio.wait_for``, a task group, a shutdown)
loses no record: a poll still queued never runs; a running one is ended early with the
wrapped consumer's ``wakeup()`` (a listener callback it is running completes first), and
whatever it fetched stays buffered for the next ``poll()``; an error it raised (a
``ListenerError``, say) is raised by the next ``poll()``. ``poll_columns()`` likewise; records
one kind of call buffered are given back (positions rewound) before a call of the other kind
fetches. A ``wakeup()`` of the application
that the cancelled call swallowed is kept for the next call. Cancelling ``await commit()``
does not withdraw the OffsetCommit (it completes, bounded by its ``timeout_ms``); cancelling a
look-up ends it early. ``close()`` returns within its ``timeout_ms``: it ends a running
``poll()`` at once (that ``poll()`` and ``async for`` end with ``ConsumerClosedError`` and
``StopAsyncIteration``), and if the wrapped consumer's close takes longer (a listener
callback still running), the rest goes on in the background.

Non-blocking methods (``seek``, ``seek_to_beginning``, ``seek_to_end``, ``pause``,
``resume``, ``commit_async``) run at once when no call is running or queued; otherwise they
are queued behind it and apply as if called right after it returned (a ``poll()`` in flight
may still return records from before a ``seek`` or of a partition being paused).
``paused()`` includes queued ``pause``/``resume`` calls. Reads (``assignment``,
``subscription``, ``group_metadata``, ``metrics``, ``health``, ...) never wait.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextvars
import functools
import inspect
import logging
import re
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic

from typing_extensions import TypeVar

from kgroup import listener as _sync_listener
from kgroup._clock import Clock
from kgroup._driver.closing import CLOSE_POLICIES as _CLOSE_POLICIES
from kgroup._io.transport import Transport
from kgroup.columns import RecordColumns
from kgroup.config import ConsumerConfig, GroupMembershipOperation
from kgroup.consumer import Consumer as _SyncConsumer
from kgroup.deserializers import DeserializerLike
from kgroup.errors import ConfigError, ConsumerClosedError, IllegalStateError, WakeupError
from kgroup.health import HealthReport, HealthServer
from kgroup.membership.states import MemberState
from kgroup.types import (
    ConsumerRecord,
    GroupMetadata,
    K,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    TopicPartition,
    V,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from kgroup.config import ConsumerArgs

__all__ = ["Consumer", "RebalanceListener"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: the poll timeout of ``async for`` (each empty poll returns to the loop and polls again)
_ITER_POLL_MS = 1000
#: longest one idle wait of the worker before it looks again (any post wakes it sooner)
_IDLE_WAIT_S = 3600.0

#: job states
_QUEUED, _RUNNING, _DONE = 0, 1, 2
#: who may touch the wrapped consumer right now (None: nobody is)
_WORKER, _LOOP = "worker", "loop"



class _CallbackScope:
    """Set in the context a listener callback runs in, active until the callback returns."""

    __slots__ = ("active", "consumer")

    def __init__(self, consumer: object) -> None:
        self.consumer = consumer
        self.active = True


_IN_LISTENER: contextvars.ContextVar[_CallbackScope | None] = contextvars.ContextVar(
    "kgroup_aio_listener", default=None
)


class RebalanceListener:
    """``kgroup.RebalanceListener`` with coroutine callbacks, awaited on the event loop.

    Subclass and override what you need; the defaults do nothing (``on_partitions_lost``
    awaits ``on_partitions_revoked``, as Java's default). Inside a callback, ``await
    consumer.commit()`` and the other calls of the consumer work (not ``poll()``,
    ``unsubscribe()`` or ``close()``); the rebalance waits for the callback, heartbeats do not. A plain
    ``kgroup.RebalanceListener`` works too: its methods are called on the loop.
    """

    async def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        """Partitions this member gives up; commit their offsets here if you commit manually."""

    async def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        """Partitions newly assigned; ``seek()`` here to choose where to start."""

    async def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        """Partitions lost without a clean revoke: they may be someone else's, do not commit."""
        result: Any = self.on_partitions_revoked(partitions)
        if inspect.isawaitable(result):
            await result


Listener = RebalanceListener | _sync_listener.RebalanceListener


class _Job:
    """One call for the worker: what to run, who awaits it, and how far it got."""

    __slots__ = ("barrier", "cancelled", "context", "fn", "future", "interrupted", "interruptible", "last", "state")

    def __init__(
        self,
        fn: Callable[[], Any],
        future: asyncio.Future[Any] | None,
        *,
        barrier: bool = False,
        interruptible: bool = False,
        last: bool = False,
    ) -> None:
        self.fn = fn
        self.future = future
        #: poll, unsubscribe, close: never run while the worker waits for a listener callback
        self.barrier = barrier
        #: read-only calls an internal wakeup() may end early when their awaiter gives up
        self.interruptible = interruptible
        self.last = last
        self.state = _QUEUED
        self.cancelled = False
        self.interrupted = False
        self.context = contextvars.copy_context()


class _Bridge(_sync_listener.RebalanceListener):
    """The wrapped consumer's listener: runs the user's callback on the loop and waits."""

    def __init__(self, owner: Consumer[Any, Any], user: Listener) -> None:
        self._owner = owner
        self._user = user

    def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        self._owner._run_listener(self._user.on_partitions_revoked, partitions)

    def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        self._owner._run_listener(self._user.on_partitions_assigned, partitions)

    def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self._owner._run_listener(self._user.on_partitions_lost, partitions)


class _ListenerCancelled(RuntimeError):
    """A listener callback's task was cancelled before it finished."""


class Consumer(Generic[K, V]):
    """A consumer-group member for asyncio: ``kgroup.Consumer``'s semantics, awaited.

    ``kgroup.aio.Consumer(bootstrap_servers="host:9092", group_id="billing", **config)`` takes
    what ``kgroup.Consumer`` takes (a ``ConsumerConfig`` or its fields as keywords, and
    deserializers). Nothing starts before the first awaited call.

    Use it from one event loop. The module docstring states which thread runs what, how
    listener callbacks run and what cancelling a call does.

    Example::

        async with kgroup.aio.Consumer(bootstrap_servers=servers, group_id="billing") as consumer:
            await consumer.subscribe(["orders"])
            async for record in consumer:
                await handle(record)

    """

    def __init__(
        self,
        config: ConsumerConfig | None = None,
        /,
        *,
        key_deserializer: DeserializerLike[K] | None = None,
        value_deserializer: DeserializerLike[V] | None = None,
        transport: Transport | None = None,
        clock: Clock | None = None,
        **kwargs: Unpack[ConsumerArgs],
    ) -> None:
        sync: _SyncConsumer[K, V] = _SyncConsumer(
            config,
            key_deserializer=key_deserializer,
            value_deserializer=value_deserializer,
            transport=transport,
            clock=clock,
            **kwargs,
        )
        self._setup(sync, None)

    @classmethod
    def _wrapping(
        cls, sync: _SyncConsumer[K, V], spawn: Callable[[str, Callable[[], None]], None] | None = None
    ) -> Consumer[K, V]:
        """An aio consumer around ``sync`` (the simulator's; ``spawn`` starts the worker thread)."""
        self = cls.__new__(cls)
        self._setup(sync, spawn)
        return self

    def _setup(self, sync: _SyncConsumer[K, V], spawn: Callable[[str, Callable[[], None]], None] | None) -> None:
        self._sync = sync
        self._spawn = spawn
        self._cond = threading.Condition()
        #: guarded by _cond: the worker's queue, who owns the wrapped consumer, the buffer
        self._queue: collections.deque[_Job] = collections.deque()
        self._free = 0  # queued jobs that are not barriers (they may run during a callback)
        self._owner: str | None = None
        self._parked = False  # the worker waits for a listener callback
        #: records, or columns of a poll_columns() (one kind at a time: _buffer_columns says which)
        self._buffer: collections.deque[Any] = collections.deque()
        self._buffer_columns = False
        self._poll_running: _Job | None = None  # the running barrier: poll, unsubscribe or close
        self._current: _Job | None = None  # the innermost running job (None while parked)
        self._user_woken = False
        self._stopped = False
        #: pause/resume calls queued behind a running call: (pause?, partitions)
        self._pending_pauses: list[tuple[bool, frozenset[TopicPartition]]] = []
        #: loop side only
        self._loop: asyncio.AbstractEventLoop | None = None
        self._worker_started = False
        self._closing = False
        self._closed = False
        self._close_future: asyncio.Future[None] | None = None
        self._pending_error: BaseException | None = None
        self._listener_tasks: set[asyncio.Future[Any]] = set()
        #: worker side: the context of the poll/close job whose listener callbacks run now
        self._job_context: contextvars.Context | None = None

    # ------------------------------------------------------------------ hooks
    def _handed_out(self, records: list[ConsumerRecord[K, V]]) -> None:
        """Records the application received (the simulator records hand-outs here)."""

    def _handed_out_columns(self, columns: list[RecordColumns]) -> None:
        """Columns the application received from ``poll_columns()`` (the simulator's hook too)."""

    # ------------------------------------------------------------------ properties
    @property
    def config(self) -> ConsumerConfig:
        """The consumer's configuration."""
        return self._sync.config

    # ------------------------------------------------------------------ context manager
    async def __aenter__(self) -> Consumer[K, V]:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # ------------------------------------------------------------------ subscription
    async def subscribe(
        self,
        topics: Iterable[str] | None = None,
        listener: Listener | None = None,
        *,
        pattern: re.Pattern[str] | str | None = None,
    ) -> None:
        """Join the group for ``topics`` or every topic matching ``pattern`` (``kgroup.Consumer.subscribe``).

        Args:
            topics: topic names (a bare str is one topic).
            listener: a ``kgroup.aio.RebalanceListener`` (coroutine callbacks) or a
                ``kgroup.RebalanceListener``; its callbacks run on this event loop.
            pattern: a regular expression instead of ``topics`` (created and deleted topics join
                and leave the subscription).

        Raises:
            IllegalStateError: empty topic list, both or neither of topics and pattern, a bad
                listener, or the consumer is manually assigned.
            ConsumerClosedError: after ``close()``.

        """
        self._check_usable(None)
        if listener is not None and not isinstance(listener, (RebalanceListener, _sync_listener.RebalanceListener)):
            raise IllegalStateError("listener must be a kgroup.aio.RebalanceListener or kgroup.RebalanceListener")
        names: Iterable[str] | None = None
        if topics is not None:
            names = (topics,) if isinstance(topics, str) else tuple(topics)
        bridge = _Bridge(self, listener) if listener is not None else None
        await self._call(lambda: self._sync.subscribe(names, bridge, pattern=pattern))

    async def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Consume exactly ``partitions`` with no group membership (``kgroup.Consumer.assign``).

        Raises:
            IllegalStateError: the consumer is subscribed (``unsubscribe()`` first).
            ConsumerClosedError: after ``close()``.

        """
        self._check_usable(None)
        wanted = tuple(partitions)
        await self._call(lambda: self._sync.assign(wanted))

    async def unsubscribe(self, timeout_ms: int | None = None) -> None:
        """Revoke the partitions (with callbacks) and leave the group (``kgroup.Consumer.unsubscribe``).

        Runs after a ``poll()`` in flight; buffered records are given back first, so the
        revoke commit does not cover them. A later ``subscribe()`` joins again.

        Raises:
            IllegalStateError: called from inside a listener callback.
            ListenerError: a callback raised (the consumer is unsubscribed all the same).
            ConsumerClosedError: after ``close()``.

        """
        self._check_usable("unsubscribe")

        def job() -> None:
            self._give_back(None, rewind=True)
            self._sync.unsubscribe(timeout_ms)

        await self._call(job, barrier=True)

    def enforce_rebalance(self, reason: str | None = None) -> None:
        """Rejoin the group on the next ``poll()`` (``kgroup.Consumer.enforce_rebalance``, KIP-568).

        Raises:
            IllegalStateError: not subscribed.
            ConsumerClosedError: after ``close()``.

        """
        self._check_usable(None)
        self._sync.enforce_rebalance(reason)  # posts to the group thread: safe from any thread

    @property
    def rebalance_reason(self) -> str:
        """Why the current (or last) rebalance happened: read it inside a listener callback."""
        return self._sync.rebalance_reason

    def subscription(self) -> frozenset[str]:
        """The subscribed topics (empty before ``subscribe``)."""
        return self._sync.subscription()

    # ------------------------------------------------------------------ poll
    async def poll(self, timeout_ms: int = 0) -> list[ConsumerRecord[K, V]]:
        """Run due rebalance callbacks and return records of owned partitions.

        ``kgroup.Consumer.poll`` on the worker thread; records it fetched while this call was
        being cancelled are kept for the next call (see the module docstring).

        Args:
            timeout_ms: the longest to wait for records, in ms (>= 0).

        Returns:
            Up to ``max_poll_records`` records, in offset order per partition.

        Raises:
            the errors of ``kgroup.Consumer.poll``; ``ConsumerClosedError`` also when
            ``close()`` ended this call; ``IllegalStateError`` from a listener callback.

        """
        self._check_usable("poll")
        if timeout_ms < 0:
            raise ValueError("timeout_ms must be >= 0")
        records = self._take_all(columns=False)
        if records:
            return records
        self._raise_kept_error()
        await self._fill(timeout_ms)
        return self._take_all(columns=False)

    async def poll_columns(self, timeout_ms: int = 0, max_records: int | None = None) -> list[RecordColumns]:
        """``poll()`` for bulk readers: each partition's records as one ``kgroup.RecordColumns``.

        ``kgroup.Consumer.poll_columns`` on the worker thread, with this class's rules for
        ``poll()``: callbacks on the loop, columns fetched while the call was being cancelled
        kept for the next ``poll_columns()``, an error of a cancelled call raised by the next.
        Records buffered by a cancelled call of the other kind (``poll()`` or ``async for``) are
        given back first (the positions go back to them) and fetched again as columns; the same
        holds the other way round. Keys and values are raw bytes (no deserializer).

        Args:
            timeout_ms: the longest to wait for records, in ms (>= 0).
            max_records: at most this many records in all (>= 1); ``max_poll_records`` when None.

        Returns:
            One ``RecordColumns`` per partition that had records, ``[]`` when none came in time.

        Raises:
            ValueError: ``timeout_ms`` < 0 or ``max_records`` < 1.
            the errors of ``kgroup.Consumer.poll_columns``; ``ConsumerClosedError`` also when
            ``close()`` ended this call; ``IllegalStateError`` from a listener callback.

        """
        self._check_usable("poll_columns")
        if timeout_ms < 0:
            raise ValueError("timeout_ms must be >= 0")
        if max_records is not None and (isinstance(max_records, bool) or max_records < 1):
            raise ValueError(f"max_records must be >= 1, got {max_records!r}")
        columns: list[RecordColumns] = self._take_all(columns=True)
        if columns:
            return columns
        self._raise_kept_error()
        await self._fill(timeout_ms, columns=True, max_records=max_records)
        return self._take_all(columns=True)

    def __aiter__(self) -> Consumer[K, V]:
        return self

    async def __anext__(self) -> ConsumerRecord[K, V]:
        """The next record; polls when none is buffered. Ends when the consumer closes."""
        while True:
            if self._closing or self._closed:  # close() began: nothing more is handed out
                raise StopAsyncIteration
            record = self._take_one()
            if record is not None:
                return record
            self._check_usable("poll")
            self._raise_kept_error()
            try:
                await self._fill(_ITER_POLL_MS)
            except ConsumerClosedError:
                raise StopAsyncIteration from None

    async def _fill(self, timeout_ms: int, *, columns: bool = False, max_records: int | None = None) -> None:
        try:
            await self._call(
                functools.partial(self._poll_job, timeout_ms, columns, max_records), barrier=True, interruptible=True
            )
        except WakeupError:
            if self._closing:
                raise ConsumerClosedError("poll() ended by close()") from None
            raise
        if self._closing:
            raise ConsumerClosedError("poll() ended by close()")

    def _poll_job(self, timeout_ms: int, columns: bool = False, max_records: int | None = None) -> None:
        """Worker: poll the wrapped consumer into the buffer, unless records of this kind wait there.

        Records of the other kind (a cancelled call's) are given back first: their positions go
        back, so they are fetched again in the kind asked for.
        """
        with self._cond:
            if self._closing:
                return
            other_kind = bool(self._buffer) and self._buffer_columns != columns
            if self._buffer and not other_kind:
                return
        if other_kind:
            self._give_back(None, rewind=True)
        if columns:
            fetched: list[Any] = self._sync.poll_columns(timeout_ms, max_records)
        else:
            fetched = self._sync.poll(timeout_ms)
        if fetched:
            with self._cond:
                self._buffer.extend(fetched)
                self._buffer_columns = columns

    def _take_all(self, *, columns: bool) -> list[Any]:
        """Everything buffered if it is of the kind asked for (records or columns), else ``[]``."""
        with self._cond:
            if self._buffer_columns != columns:
                return []
            taken = list(self._buffer)
            self._buffer.clear()
        if taken:
            if columns:
                self._handed_out_columns(taken)
            else:
                self._handed_out(taken)
        return taken

    def _take_one(self) -> ConsumerRecord[K, V] | None:
        with self._cond:
            if not self._buffer or self._buffer_columns:
                return None
            record: ConsumerRecord[K, V] = self._buffer.popleft()
        self._handed_out([record])
        return record

    def _raise_kept_error(self) -> None:
        error, self._pending_error = self._pending_error, None
        if error is not None:
            raise error

    def _buffered_firsts(self) -> dict[TopicPartition, int]:
        """The first buffered offset of each partition with buffered records (under ``_cond``)."""
        firsts: dict[TopicPartition, int] = {}
        for item in self._buffer:
            tp = item.topic_partition
            if tp not in firsts:
                firsts[tp] = _first_offset(item)
        return firsts

    def _give_back(self, partitions: frozenset[TopicPartition] | None, *, rewind: bool) -> None:
        """Drop buffered records of ``partitions`` (None: all); ``rewind``: seek back to them."""
        with self._cond:
            kept: collections.deque[Any] = collections.deque()
            firsts: dict[TopicPartition, int] = {}
            for item in self._buffer:
                tp = item.topic_partition
                if partitions is None or tp in partitions:
                    firsts.setdefault(tp, _first_offset(item))
                else:
                    kept.append(item)
            self._buffer = kept
        if rewind:
            owned = self._sync.assignment()
            for tp, offset in firsts.items():
                if tp in owned:
                    self._sync.seek(tp, offset)

    # ------------------------------------------------------------------ commits
    def _offsets_to_commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None
    ) -> Mapping[TopicPartition, OffsetAndMetadata | int] | None:
        """Default offsets that leave out buffered records (``None``: the wrapped consumer's)."""
        if offsets is not None:
            return offsets
        with self._cond:
            firsts = self._buffered_firsts()
        parts = self._sync._parts
        if not firsts or parts is None:
            return None
        consumed: dict[TopicPartition, OffsetAndMetadata | int] = dict(
            parts.consumed_offsets(self._sync.assignment())
        )
        for tp, offset in firsts.items():
            consumed[tp] = OffsetAndMetadata(offset)
        return consumed

    async def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> None:
        """Commit offsets and wait for the answer (``kgroup.Consumer.commit``).

        Default offsets: the position after the last record this consumer handed to the
        application (``poll()`` or ``async for``), per owned partition. Works inside a listener
        callback. Cancelling the call does not withdraw the commit.

        Raises:
            the errors of ``kgroup.Consumer.commit``.

        """
        self._check_usable(None)
        await self._call(lambda: self._sync.commit(self._offsets_to_commit(offsets), timeout_ms=timeout_ms))

    def commit_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None
    ) -> asyncio.Future[None]:
        """Send one OffsetCommit (``kgroup.Consumer.commit_async``); await the future, or not.

        The offsets are taken when the request is made: now, or once a call in flight returns.
        Never retried. A failure is logged (as Java's default callback does) and set on the
        returned future.

        Raises:
            ConsumerClosedError: after ``close()``.

        """
        self._check_usable(None)
        loop = self._bind_loop()
        result: asyncio.Future[None] = loop.create_future()
        result.add_done_callback(self._log_commit_failure)

        def settle(future: concurrent.futures.Future[None]) -> None:
            if result.done():
                return
            error = future.exception()
            if error is None:
                result.set_result(None)
            else:
                result.set_exception(error)

        def op() -> None:
            try:
                sent = self._sync.commit_async(self._offsets_to_commit(offsets))
            except Exception as exc:
                sent = concurrent.futures.Future()
                sent.set_exception(exc)
            sent.add_done_callback(lambda f: self._on_loop(settle, f))

        self._apply(op)
        return result

    def _log_commit_failure(self, future: asyncio.Future[None]) -> None:
        if not future.cancelled() and future.exception() is not None:
            log.warning("group %s: async commit failed: %s", self._sync.config.group_id, future.exception())

    async def committed(
        self, partitions: Iterable[TopicPartition], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (``kgroup.Consumer.committed``)."""
        self._check_usable(None)
        wanted = list(partitions)
        return await self._call(lambda: self._sync.committed(wanted, timeout_ms=timeout_ms), interruptible=True)

    # ------------------------------------------------------------------ positions
    async def position(self, tp: TopicPartition, *, timeout_ms: int | None = None) -> int:
        """The offset of the next record the application gets for ``tp`` (``kgroup.Consumer.position``)."""
        self._check_usable(None)

        def job() -> int:
            with self._cond:
                first = self._buffered_firsts().get(tp)
            if first is not None:
                return first
            return self._sync.position(tp, timeout_ms=timeout_ms)

        return await self._call(job, interruptible=True)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Fetch ``tp`` from ``offset`` next (``kgroup.Consumer.seek``); drops its buffered records.

        Raises:
            IllegalStateError: ``tp`` is not assigned.
            ValueError: a negative offset.

        """
        self._check_usable(None)
        self._require_assigned((tp,))
        if offset < 0:
            raise ValueError("offset must be >= 0")

        def op() -> None:
            self._sync.seek(tp, offset)
            self._give_back(frozenset((tp,)), rewind=False)

        self._apply(op)

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """``kgroup.Consumer.seek_to_beginning``; drops the partitions' buffered records."""
        self._seek_to(partitions, "beginning")

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """``kgroup.Consumer.seek_to_end``; drops the partitions' buffered records."""
        self._seek_to(partitions, "end")

    def _seek_to(self, partitions: Iterable[TopicPartition] | None, where: str) -> None:
        self._check_usable(None)
        chosen = None if partitions is None else frozenset(partitions)
        if chosen is not None:
            self._require_assigned(chosen)

        def op() -> None:
            if where == "beginning":
                self._sync.seek_to_beginning(chosen)
            else:
                self._sync.seek_to_end(chosen)
            self._give_back(chosen, rewind=False)

        self._apply(op)

    async def beginning_offsets(
        self, partitions: Iterable[TopicPartition], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """``kgroup.Consumer.beginning_offsets`` (ListOffsets)."""
        self._check_usable(None)
        wanted = list(partitions)
        return await self._call(
            lambda: self._sync.beginning_offsets(wanted, timeout_ms=timeout_ms), interruptible=True
        )

    async def end_offsets(
        self, partitions: Iterable[TopicPartition], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """``kgroup.Consumer.end_offsets`` (ListOffsets)."""
        self._check_usable(None)
        wanted = list(partitions)
        return await self._call(lambda: self._sync.end_offsets(wanted, timeout_ms=timeout_ms), interruptible=True)

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """``kgroup.Consumer.offsets_for_times`` (ListOffsets by timestamp)."""
        self._check_usable(None)
        wanted = dict(timestamps)
        return await self._call(
            lambda: self._sync.offsets_for_times(wanted, timeout_ms=timeout_ms), interruptible=True
        )

    # ------------------------------------------------------------------ pause / resume
    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop fetching ``partitions`` (``kgroup.Consumer.pause``); their buffered records go back.

        Raises:
            IllegalStateError: a partition is not assigned.

        """
        self._pause(partitions, True)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        """Fetch ``partitions`` again (``kgroup.Consumer.resume``).

        Raises:
            IllegalStateError: a partition is not assigned.

        """
        self._pause(partitions, False)

    def _pause(self, partitions: Iterable[TopicPartition], pause: bool) -> None:
        self._check_usable(None)
        chosen = frozenset(partitions)
        self._require_assigned(chosen)
        entry = (pause, chosen)

        def op() -> None:
            with self._cond:
                if entry in self._pending_pauses:
                    self._pending_pauses.remove(entry)
            if pause:
                self._give_back(chosen, rewind=True)
                self._sync.pause(chosen)
            else:
                self._sync.resume(chosen)

        with self._cond:
            self._pending_pauses.append(entry)
        self._apply(op)

    def paused(self) -> frozenset[TopicPartition]:
        """Paused partitions, counting ``pause``/``resume`` calls queued behind a running call."""
        with self._cond:
            pending = list(self._pending_pauses)
        result = set(self._sync.paused())
        for pause, partitions in pending:
            if pause:
                result |= partitions
            else:
                result -= partitions
        return frozenset(result)

    # ------------------------------------------------------------------ reads
    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions this consumer owns (as its listener last saw them)."""
        return self._sync.assignment()

    def group_metadata(self) -> GroupMetadata:
        """group_id, generation_id, member_id and group_instance_id (Java ``groupMetadata()``)."""
        return self._sync.group_metadata()

    def member_state(self) -> MemberState:
        """The membership machine's state (for diagnostics)."""
        return self._sync.member_state()

    def highwater(self, tp: TopicPartition) -> int | None:
        """``kgroup.Consumer.highwater``: the high watermark from ``tp``'s last fetch, no request."""
        return self._sync.highwater(tp)

    def current_lag(self, tp: TopicPartition) -> int | None:
        """Records of ``tp`` the application has not received yet (``kgroup.Consumer.current_lag``)."""
        with self._cond:
            first = self._buffered_firsts().get(tp)
        if first is None:
            return self._sync.current_lag(tp)
        high = self._sync.highwater(tp)
        return None if high is None else max(0, high - first)

    def metrics(self) -> dict[str, float]:
        """``kgroup.Consumer.metrics``: the Java consumer's metric names; never blocks."""
        return self._sync.metrics()

    def health(self) -> HealthReport:
        """``kgroup.Consumer.health``: liveness and readiness verdicts; never blocks."""
        return self._sync.health()

    def serve_health(self, port: int = 8080, host: str = "0.0.0.0") -> HealthServer:
        """``kgroup.Consumer.serve_health``: ``/livez``, ``/readyz``, ``/metrics`` on its own thread."""
        return self._sync.serve_health(port, host)

    def wakeup(self) -> None:
        """Make the running (or next) ``poll()``, ``commit()``, ``committed()``, ``position()`` raise ``WakeupError``.

        Safe from any thread (a signal handler's too). ``close()`` ignores it.
        """
        with self._cond:
            self._user_woken = True
        self._sync.wakeup()

    # ------------------------------------------------------------------ close
    async def close(
        self,
        timeout_ms: int = 30000,
        *,
        group_membership: GroupMembershipOperation = "default",
        reason: str = "the consumer is being closed",
    ) -> None:
        """Leave the group (or not) and release resources; returns within ``timeout_ms``.

        ``kgroup.Consumer.close`` on the worker thread, after a running ``poll()`` was ended
        and queued ones dropped (calls queued before, such as commits, still run first, within
        the same budget); buffered records are given back first, so the revoke commit does not
        cover them. If it has not finished after ``timeout_ms`` (a listener callback still
        running), it goes on in the background and this returns, logging a warning.
        Idempotent; a second call waits for the first.

        Raises:
            IllegalStateError: called from inside a listener callback.
            ConfigError: ``group_membership`` is not "default", "remain" or "leave".
            KGroupError: a listener callback raised during close (the consumer is closed).

        """
        if self._in_listener():
            raise IllegalStateError("close() must not be called from a rebalance listener callback")
        if group_membership not in _CLOSE_POLICIES:
            raise ConfigError(
                "group_membership", f"must be one of {sorted(_CLOSE_POLICIES)}, got {group_membership!r}"
            )
        loop = self._bind_loop()
        if self._close_future is not None:  # closing or closed: wait for that close, quietly
            await asyncio.wait([self._close_future], timeout=max(0.0, timeout_ms / 1000))
            return
        self._closing = True
        started = self._sync._clock.monotonic()
        dropped: list[_Job] = []
        with self._cond:
            for job in list(self._queue):
                if job.barrier:
                    self._queue.remove(job)
                    job.state = _DONE
                    dropped.append(job)
            if self._poll_running is not None and self._poll_running.interruptible:
                self._interrupt(self._poll_running)
        for job in dropped:
            if job.future is not None and not job.future.done():
                job.future.set_exception(ConsumerClosedError("the call was ended by close()"))
        future: asyncio.Future[None] = loop.create_future()
        self._close_future = future
        self._submit(
            _Job(
                functools.partial(self._close_job, started, timeout_ms, group_membership, reason),
                future,
                barrier=True,
                last=True,
            )
        )
        try:
            await asyncio.wait_for(asyncio.shield(future), max(0.0, timeout_ms / 1000))
        except asyncio.TimeoutError:
            log.warning(
                "group %s: close() did not finish within %d ms; it goes on in the background",
                self._sync.config.group_id, timeout_ms,
            )
            future.add_done_callback(self._log_close_failure)
        except asyncio.CancelledError:
            future.add_done_callback(self._log_close_failure)  # it goes on in the background
            raise
        finally:
            self._closed = True

    def _close_job(self, started: float, timeout_ms: int, group_membership: GroupMembershipOperation,
                   reason: str) -> None:
        """Worker: give buffered records back, then close the wrapped consumer in what is left."""
        try:
            self._give_back(None, rewind=True)
        except Exception as exc:  # a fatal consumer cannot seek: nothing will be committed
            log.debug("group %s: buffered records not rewound: %s", self._sync.config.group_id, exc)
        left_ms = max(0, int(timeout_ms - (self._sync._clock.monotonic() - started) * 1000))
        self._sync.close(left_ms, group_membership=group_membership, reason=reason)

    def _log_close_failure(self, future: asyncio.Future[None]) -> None:
        if not future.cancelled() and future.exception() is not None:
            log.warning("group %s: close failed: %s", self._sync.config.group_id, future.exception())

    # ------------------------------------------------------------------ loop side: calls
    def _bind_loop(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            raise RuntimeError("this kgroup.aio.Consumer is used from another event loop")
        return self._loop

    def _in_listener(self) -> bool:
        """Whether this code runs inside (or in a task started by) one of our running callbacks."""
        scope = _IN_LISTENER.get()
        return scope is not None and scope.consumer is self and scope.active

    def _check_usable(self, what: str | None) -> None:
        if self._in_listener():
            if what is not None:
                raise IllegalStateError(f"{what}() must not be called from a rebalance listener callback")
            if not self._closed:
                return  # a callback of close() may still commit, as with kgroup.Consumer
        if self._closing or self._closed:
            raise ConsumerClosedError("the consumer is closed")

    def _require_assigned(self, partitions: Iterable[TopicPartition]) -> None:
        owned = self._sync.assignment()
        for tp in partitions:
            if tp not in owned:
                raise IllegalStateError(f"partition {tp} is not assigned to this consumer")

    async def _call(self, fn: Callable[[], T], *, barrier: bool = False, interruptible: bool = False) -> T:
        """Run ``fn`` on the worker and await its outcome (see the module docstring on cancelling)."""
        loop = self._bind_loop()
        future: asyncio.Future[T] = loop.create_future()
        job = _Job(fn, future, barrier=barrier, interruptible=interruptible)
        self._submit(job)
        try:
            return await future
        except asyncio.CancelledError:
            self._cancel(job)
            if future.done() and not future.cancelled():
                # the outcome arrived, but the task was cancelled before it resumed
                self._dropped(job, future.exception())
            raise

    def _submit(self, job: _Job) -> None:
        with self._cond:
            self._queue.append(job)
            if not job.barrier:
                self._free += 1
        self._ensure_worker()
        self._sync._mailbox.notify()

    def _cancel(self, job: _Job) -> None:
        with self._cond:
            job.cancelled = True
            if job.state == _QUEUED:
                self._queue.remove(job)
                if not job.barrier:
                    self._free -= 1
                job.state = _DONE
            elif job.state == _RUNNING and job.interruptible:
                self._interrupt(job)

    def _interrupt(self, job: _Job) -> None:
        """Under ``_cond``: end the running ``job`` early with the wrapped consumer's ``wakeup()``.

        Under the lock, the worker cannot have moved on to another call yet. While ``job``
        waits for a listener callback (or runs a call the callback awaits), the wakeup waits
        until the callback is over: it must not end a commit the callback awaits.
        """
        if job.interrupted:
            return
        job.interrupted = True
        if self._current is job:
            self._sync.wakeup()

    def _dropped(self, job: _Job, error: BaseException | None) -> None:
        """Loop: the awaiter of ``job`` gave up before getting ``error`` (or a result)."""
        if error is None:
            return
        if isinstance(error, WakeupError):
            with self._cond:
                user = self._user_woken
            if user:  # the application's wakeup() was used up by a call nobody awaits: keep it
                self._sync._mailbox.wake()
        elif job.barrier and isinstance(error, Exception) and not self._closing:
            self._pending_error = error  # the next poll() raises it

    def _resolve(self, job: _Job, value: Any, error: BaseException | None) -> None:
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
            with self._cond:
                self._user_woken = False
        future.set_exception(error)

    def _on_loop(self, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn(*args)`` on the loop (from any thread); dropped once the loop is closed."""
        loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:
            log.debug("event loop closed: %s not delivered", getattr(fn, "__name__", fn))

    def _apply(self, op: Callable[[], None]) -> None:
        """Run a non-blocking ``op`` now on this thread if nothing runs or waits, else queue it."""
        with self._cond:
            ahead = self._free if self._parked else len(self._queue)
            direct = self._owner is None and not ahead
            if direct:
                self._owner = _LOOP
        if not direct:
            self._submit(_Job(op, None))
            return
        try:
            op()
        finally:
            with self._cond:
                self._owner = None
                self._cond.notify_all()

    def _ensure_worker(self) -> None:
        if self._worker_started:
            return
        self._worker_started = True
        if self._spawn is not None:
            self._spawn("aio-worker", self._worker_main)
            return
        threading.Thread(target=self._worker_main, name="kgroup-aio-poll", daemon=True).start()

    # ------------------------------------------------------------------ worker side
    def _worker_main(self) -> None:
        while True:
            job = self._next_job(barrier_ok=True, until=None)
            if job is None:
                return
            self._execute(job)
            if job.last:
                with self._cond:
                    self._stopped = True
                    left = list(self._queue)
                    self._queue.clear()
                    self._free = 0
                for late in left:  # asked for from a close callback, too late to run
                    if late.future is not None:
                        self._on_loop(self._resolve, late, None, ConsumerClosedError("the consumer is closed"))
                return

    def _next_job(self, *, barrier_ok: bool, until: Callable[[], bool] | None) -> _Job | None:
        """The next job to run (taking ownership), or None once ``until()`` holds and none is due."""
        mailbox = self._sync._mailbox
        while True:
            with self._cond:
                job = self._pop(barrier_ok)
                if job is not None:
                    while self._owner == _LOOP:  # the loop runs a non-blocking op: microseconds
                        self._cond.wait()
                    self._owner = _WORKER
                    job.state = _RUNNING
                    if job.barrier:
                        self._poll_running = job
                    return job
                if self._stopped:
                    return None
            if until is not None and until():
                return None

            def ready() -> bool:  # under the mailbox's lock: must not take _cond
                due = len(self._queue) if barrier_ok else self._free
                return bool(due) or self._stopped or (until is not None and until())

            mailbox.wait_until(ready, _IDLE_WAIT_S)

    def _pop(self, barrier_ok: bool) -> _Job | None:
        """Under ``_cond``: the first runnable queued job."""
        if barrier_ok:
            if not self._queue:
                return None
            job = self._queue.popleft()
        else:
            if not self._free:
                return None
            job = next(j for j in self._queue if not j.barrier)
            self._queue.remove(job)
        if not job.barrier:
            self._free -= 1
        return job

    def _execute(self, job: _Job) -> None:
        """Worker: run ``job`` (owning the wrapped consumer) and deliver its outcome."""
        outer = self._job_context
        if job.barrier:
            self._job_context = job.context
        with self._cond:
            self._current = job
        value: Any = None
        error: BaseException | None = None
        try:
            value = job.fn()
        except BaseException as exc:
            error = exc
        finally:
            self._job_context = outer
            with self._cond:
                self._owner = None
                self._current = None
                job.state = _DONE
                if self._poll_running is job:
                    self._poll_running = None
                interrupted = job.interrupted
                user = self._user_woken
                self._cond.notify_all()
        if interrupted and not user and not isinstance(error, WakeupError):
            # the internal wakeup() may outlive the call it ended: no later call may see it
            self._sync._mailbox.consume_wakeup()
        if job.future is not None:
            self._on_loop(self._resolve, job, value, error)
        elif error is not None:
            log.warning("group %s: queued call failed: %s", self._sync.config.group_id, error)

    def _run_listener(
        self,
        method: Callable[[frozenset[TopicPartition]], Awaitable[None] | None],
        partitions: frozenset[TopicPartition],
    ) -> None:
        """Worker, inside the wrapped consumer's callback: run ``method`` on the loop and wait.

        Meanwhile the worker runs the calls awaited by the callback or by other tasks, except
        poll, unsubscribe and close; then it owns the wrapped consumer again and returns (or raises what the
        callback raised, which the wrapped consumer reports as ``ListenerError``).
        """
        loop = self._loop
        if loop is None:
            raise RuntimeError("no event loop to run the listener callback on")
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        mailbox = self._sync._mailbox
        done.add_done_callback(lambda _f: mailbox.notify())
        context = (self._job_context or contextvars.copy_context()).copy()
        try:
            loop.call_soon_threadsafe(self._start_listener, method, partitions, context, done)
        except RuntimeError as exc:
            raise RuntimeError(f"{getattr(method, '__name__', method)} not run: the event loop is closed") from exc
        with self._cond:
            outer = self._current
            self._current = None
            self._owner = None
            self._parked = True
            if outer is not None and outer.interrupted and not self._user_woken:
                # the poll running this callback was ended early: the wakeup() must not end the
                # calls the callback awaits; it is made again once the callback is over
                self._sync._mailbox.consume_wakeup()
            self._cond.notify_all()
        def over() -> bool:  # a loop closed before it ran the callback never will
            return done.done() or loop.is_closed()

        try:
            while True:
                job = self._next_job(barrier_ok=False, until=over)
                if job is None:
                    break
                self._execute(job)
        finally:
            with self._cond:
                self._parked = False
                while self._owner == _LOOP:
                    self._cond.wait()
                self._owner = _WORKER
                self._current = outer
                if outer is not None and outer.interrupted:
                    self._sync.wakeup()  # the interrupt that waited for the callback
        if not done.done():
            raise RuntimeError(f"{getattr(method, '__name__', method)} not run: the event loop was closed")
        error = done.exception()
        if error is not None:
            raise error

    def _start_listener(
        self,
        method: Callable[[frozenset[TopicPartition]], Awaitable[None] | None],
        partitions: frozenset[TopicPartition],
        context: contextvars.Context,
        done: concurrent.futures.Future[None],
    ) -> None:
        """Loop: call the user's callback in ``context``; await it as a task if it is a coroutine."""
        scope = _CallbackScope(self)
        context.run(_IN_LISTENER.set, scope)
        try:
            result = context.run(method, partitions)
            if not inspect.isawaitable(result):
                scope.active = False
                done.set_result(None)
                return
            task = context.run(asyncio.ensure_future, result)
        except BaseException as exc:
            scope.active = False
            done.set_exception(exc)
            return
        self._listener_tasks.add(task)
        name = getattr(method, "__name__", "listener callback")
        task.add_done_callback(functools.partial(self._listener_finished, name, scope, done))

    def _listener_finished(
        self, name: str, scope: _CallbackScope, done: concurrent.futures.Future[None], task: asyncio.Future[Any]
    ) -> None:
        scope.active = False
        self._listener_tasks.discard(task)
        if task.cancelled():
            done.set_exception(_ListenerCancelled(f"{name} was cancelled"))
            return
        error = task.exception()
        if error is None:
            done.set_result(None)
        else:
            done.set_exception(error)


def _first_offset(item: ConsumerRecord[Any, Any] | RecordColumns) -> int:
    """The offset of a buffered record, or of the first row of buffered columns."""
    return item.offset if isinstance(item, ConsumerRecord) else item.offsets[0]
