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
import concurrent.futures
import functools
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic

from typing_extensions import TypeVar

from kgroup import listener as _sync_listener
from kgroup._aio.buffer import RecordBuffer
from kgroup._aio.listener import Listener, RebalanceListener
from kgroup._aio.parallel import ParallelProcessor
from kgroup._aio.share import ShareConsumer  # a share group's member (KIP-932) for asyncio
from kgroup._aio.worker import Job, Worker, settle
from kgroup._clock import Clock
from kgroup._driver.closing import close_policy
from kgroup._io.transport import Transport
from kgroup.columns import RecordColumns
from kgroup.config import ConsumerConfig, GroupMembershipOperation
from kgroup.consumer import Consumer as _SyncConsumer
from kgroup.deserializers import DeserializerLike
from kgroup.errors import ConsumerClosedError, IllegalStateError, WakeupError
from kgroup.health import HealthReport, HealthServer
from kgroup.membership.states import MemberState
from kgroup.types import (
    ConsumerRecord,
    GroupMetadata,
    K,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    PartitionInfo,
    TopicPartition,
    V,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from kgroup.config import ConsumerArgs
    from kgroup.membership.consumer_group_states import MemberState as ConsumerMemberState

__all__ = ["Consumer", "ParallelProcessor", "RebalanceListener", "ShareConsumer"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: the poll timeout of ``async for`` (each empty poll returns to the loop and polls again)
_ITER_POLL_MS = 1000



class _Bridge(_sync_listener.RebalanceListener):
    """The wrapped consumer's listener: runs the user's callback on the loop and waits."""

    def __init__(self, worker: Worker, user: Listener) -> None:
        self._worker = worker
        self._user = user

    def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        self._worker.run_listener(self._user.on_partitions_revoked, partitions)

    def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        self._worker.run_listener(self._user.on_partitions_assigned, partitions)

    def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self._worker.run_listener(self._user.on_partitions_lost, partitions)


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
        #: the worker thread that owns the wrapped consumer, and its lock (``kgroup._aio.worker``)
        self._worker = Worker(sync, spawn, self._resolve)
        self._cond = self._worker.cond
        #: records, or columns of a poll_columns(), fetched and not handed out yet
        self._buffer = RecordBuffer(self._cond, sync)
        #: guarded by _cond: pause/resume calls queued behind a running call: (pause?, partitions)
        self._pending_pauses: list[tuple[bool, frozenset[TopicPartition]]] = []
        #: loop side only
        self._closing = False
        self._closed = False
        self._close_future: asyncio.Future[None] | None = None
        self._pending_error: BaseException | None = None

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
        bridge = _Bridge(self._worker, listener) if listener is not None else None
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
            self._buffer.give_back(None, rewind=True)
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
            held = self._buffer.holds(columns)
            if held:
                return
        if held is False:  # the other kind's
            self._buffer.give_back(None, rewind=True)
        if columns:
            fetched: list[Any] = self._sync.poll_columns(timeout_ms, max_records)
        else:
            fetched = self._sync.poll(timeout_ms)
        if fetched:
            self._buffer.extend(fetched, columns=columns)

    def _take_all(self, *, columns: bool) -> list[Any]:
        """Everything buffered if it is of the kind asked for (records or columns), else ``[]``."""
        taken = self._buffer.take_all(columns=columns)
        if taken:
            if columns:
                self._handed_out_columns(taken)
            else:
                self._handed_out(taken)
        return taken

    def _take_one(self) -> ConsumerRecord[K, V] | None:
        record = self._buffer.take_one()
        if record is not None:
            self._handed_out([record])
        return record

    def _raise_kept_error(self) -> None:
        error, self._pending_error = self._pending_error, None
        if error is not None:
            raise error

    # ------------------------------------------------------------------ commits
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
        await self._call(lambda: self._sync.commit(self._buffer.offsets_to_commit(offsets), timeout_ms=timeout_ms))

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
        loop = self._worker.bind_loop()
        result: asyncio.Future[None] = loop.create_future()
        result.add_done_callback(self._log_commit_failure)

        def answered(future: concurrent.futures.Future[None]) -> None:
            if not result.done():
                settle(result, future.exception())

        def op() -> None:
            try:
                sent = self._sync.commit_async(self._buffer.offsets_to_commit(offsets))
            except Exception as exc:
                sent = concurrent.futures.Future()
                sent.set_exception(exc)
            sent.add_done_callback(lambda f: self._worker.on_loop(answered, f))

        self._worker.apply(op)
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
            first = self._buffer.firsts().get(tp)
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
            self._buffer.give_back(frozenset((tp,)), rewind=False)

        self._worker.apply(op)

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
            self._buffer.give_back(chosen, rewind=False)

        self._worker.apply(op)

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

    async def list_topics(self, *, timeout_ms: int | None = None) -> dict[str, list[PartitionInfo]]:
        """``kgroup.Consumer.list_topics`` (Metadata; Java ``listTopics``)."""
        self._check_usable(None)
        return await self._call(lambda: self._sync.list_topics(timeout_ms=timeout_ms), interruptible=True)

    async def partitions_for(self, topic: str, *, timeout_ms: int | None = None) -> list[PartitionInfo]:
        """``kgroup.Consumer.partitions_for`` (Metadata; Java ``partitionsFor``)."""
        self._check_usable(None)
        return await self._call(lambda: self._sync.partitions_for(topic, timeout_ms=timeout_ms), interruptible=True)

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
            try:
                if pause:
                    self._buffer.give_back(chosen, rewind=True)
                    self._sync.pause(chosen)
                else:
                    self._sync.resume(chosen)
            finally:  # dropped once applied (and published): paused() sees one or the other
                with self._cond:
                    if entry in self._pending_pauses:
                        self._pending_pauses.remove(entry)

        with self._cond:
            self._pending_pauses.append(entry)
        self._worker.apply(op)

    def paused(self) -> frozenset[TopicPartition]:
        """Paused partitions, counting ``pause``/``resume`` calls queued behind a running call.

        Reads what the wrapped consumer published (``kgroup.Consumer.paused()``), never the
        worker's partition state, together with the calls still queued.
        """
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
        """``kgroup.Consumer.group_metadata``: kafka-python's ``ConsumerGroupMetadata`` of the member.

        For ``KafkaProducer.send_offsets_to_transaction(offsets, consumer.group_metadata())``
        (KIP-447, Java ``KafkaProducer.sendOffsetsToTransaction``; docs/exactly-once.md).
        """
        return self._sync.group_metadata()

    def member_state(self) -> MemberState | ConsumerMemberState:
        """The membership machine's own state (for diagnostics; ``kgroup.Consumer.member_state``)."""
        return self._sync.member_state()

    def highwater(self, tp: TopicPartition) -> int | None:
        """``kgroup.Consumer.highwater``: the high watermark from ``tp``'s last fetch, no request."""
        return self._sync.highwater(tp)

    def current_lag(self, tp: TopicPartition) -> int | None:
        """Records of ``tp`` the application has not received yet (``kgroup.Consumer.current_lag``)."""
        first = self._buffer.firsts().get(tp)
        if first is None:
            return self._sync.current_lag(tp)
        high = self._sync.highwater(tp)
        return None if high is None else max(0, high - first)

    def metrics(self) -> dict[str, float]:
        """``kgroup.Consumer.metrics``: the Java consumer's metric names; never blocks."""
        return self._sync.metrics()

    def health(self) -> HealthReport:
        """``kgroup.Consumer.health``: liveness and readiness verdicts; never blocks.

        Reads the wrapped consumer's published snapshot, not the worker's partition state.
        """
        return self._sync.health()

    def serve_health(self, port: int = 8080, host: str = "0.0.0.0") -> HealthServer:
        """``kgroup.Consumer.serve_health``: ``/livez``, ``/readyz``, ``/metrics`` on its own thread."""
        return self._sync.serve_health(port, host)

    def wakeup(self) -> None:
        """Make the running (or next) ``poll()``, ``commit()``, ``committed()``, ``position()`` raise ``WakeupError``.

        Safe from any thread (a signal handler's too). ``close()`` ignores it.
        """
        self._worker.user_wakeup()

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
        if self._worker.in_listener():
            raise IllegalStateError("close() must not be called from a rebalance listener callback")
        close_policy(group_membership)  # ConfigError before anything happens
        loop = self._worker.bind_loop()
        if self._close_future is not None:  # closing or closed: wait for that close, quietly
            await asyncio.wait([self._close_future], timeout=max(0.0, timeout_ms / 1000))
            return
        self._closing = True
        started = self._sync._clock.monotonic()
        for job in self._worker.drop_barriers():
            if job.future is not None and not job.future.done():
                job.future.set_exception(ConsumerClosedError("the call was ended by close()"))
        future: asyncio.Future[None] = loop.create_future()
        self._close_future = future
        self._worker.submit(
            Job(
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
            self._buffer.give_back(None, rewind=True)
        except Exception as exc:  # a fatal consumer cannot seek: nothing will be committed
            log.debug("group %s: buffered records not rewound: %s", self._sync.config.group_id, exc)
        left_ms = max(0, int(timeout_ms - (self._sync._clock.monotonic() - started) * 1000))
        self._sync.close(left_ms, group_membership=group_membership, reason=reason)

    def _log_close_failure(self, future: asyncio.Future[None]) -> None:
        if not future.cancelled() and future.exception() is not None:
            log.warning("group %s: close failed: %s", self._sync.config.group_id, future.exception())

    # ------------------------------------------------------------------ loop side: calls
    def _check_usable(self, what: str | None) -> None:
        if self._worker.in_listener():
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
        loop = self._worker.bind_loop()
        future: asyncio.Future[T] = loop.create_future()
        job = Job(fn, future, barrier=barrier, interruptible=interruptible)
        self._worker.submit(job)
        try:
            return await future
        except asyncio.CancelledError:
            self._worker.cancel(job)
            if future.done() and not future.cancelled():
                # the outcome arrived, but the task was cancelled before it resumed
                self._dropped(job, future.exception())
            raise

    def _dropped(self, job: Job, error: BaseException | None) -> None:
        """Loop: the awaiter of ``job`` gave up before getting ``error`` (or a result)."""
        if error is None:
            return
        if isinstance(error, WakeupError):
            if self._worker.user_woken:  # the application's wakeup() was used up by a call nobody awaits: keep it
                self._sync._mailbox.wake()
        elif job.barrier and isinstance(error, Exception) and not self._closing:
            self._pending_error = error  # the next poll() raises it

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
