"""``kgroup.Consumer``: the public facade, run on the application's ("poll") thread.

Threads (``docs/protocol.md``): the caller's thread runs ``poll()``, listener callbacks,
commits and offset lookups; the group thread (``kgroup._driver.group_thread``) owns the
membership machine, heartbeats and the leader's assignor; kafka-python's IO thread owns the
sockets and completes request futures. They share only the group thread's inbox, the mailbox
and a published snapshot. The facade composes two poll-thread objects that never import it:
``PartitionState`` (``kgroup._driver.partitions``: assignment, pauses, positions, held
records) and ``OffsetsClient`` (``kgroup._driver.commits``: OffsetCommit and OffsetFetch).

The poll loop, one pass (the classic protocol's steps as seen from the application):

1. tell the group thread we are polling (resets the max.poll.interval watchdog, KIP-62);
2. run delivered rebalance steps: *acquiesce* (no record of a partition being revoked is
   handed out once its revocation starts; its buffered records are dropped), *commit*
   (auto-commit on revoke), the listener callbacks, then ``StepCompleted``;
3. *OffsetFetch* positions for newly assigned partitions (auto_offset_reset otherwise),
   bounded by the poll's timeout: an unanswered look-up is reused by the next ``poll()``;
4. *fetch* through kafka-python's Fetcher, only owned, unpaused partitions;
5. before returning, steps that arrived meanwhile run first and drop the records of the
   partitions they take away; the records of kept partitions are *held* while those steps
   run, so their commits cannot cover records the application has not received.
"""

from __future__ import annotations

import concurrent.futures
import logging
import math
import random
import re
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Protocol

from typing_extensions import TypeVar

from kgroup._typevars import K, V
from kgroup.errors import (
    Api,
    ClusterUnreachableError,
    CommitFailedError,
    ConfigError,
    ConsumerClosedError,
    FatalGroupError,
    GroupThreadCrashed,
    IllegalStateError,
    KafkaTimeoutError,
    KGroupError,
    ListenerError,
    NoOffsetForPartitionError,
    RecordDeserializationError,
    WakeupError,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

    # Not imported with ``from kgroup import Consumer`` (tests/unit/test_import_time.py): the names
    # the facade uses at run time are imported and bound by the first ``Consumer(...)``
    # (``_import_deferred``: the configuration, the assignors, the membership's events, commands
    # and states, metrics, health, the value types, and attrs); the rest where first used
    # (subscribe(), assign(), a look-up): kafka-python, aiokafka's C decoder, the group thread
    # and its machine (benchmarks/startup.py)
    from kgroup._clock import Clock, MonotonicClock
    from kgroup._driver.commits import OffsetsClient
    from kgroup._driver.group_thread import GroupThread
    from kgroup._driver.mailbox import Mailbox
    from kgroup._driver.partitions import PartitionState
    from kgroup._io.kafka_python import KafkaPythonTransport
    from kgroup._io.transport import OffsetFetchResult, Transport
    from kgroup._retry import Deadline
    from kgroup.columns import RecordColumns
    from kgroup.config import ConsumerArgs, ConsumerConfig, GroupMembershipOperation, resolve_bootstrap_servers
    from kgroup.deserializers import DeserializerLike, as_function
    from kgroup.health import HealthReport, HealthServer
    from kgroup.listener import RebalanceListener
    from kgroup.membership import events as ev
    from kgroup.membership.backoff import exponential_backoff
    from kgroup.membership.commands import RebalanceStep
    from kgroup.membership.machine import MemberSnapshot
    from kgroup.membership.states import MemberState
    from kgroup.metrics import Recorder
    from kgroup.types import ConsumerRecord, GroupMetadata, OffsetAndMetadata, OffsetAndTimestamp, TopicPartition

__all__ = ["Consumer"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: longest a single fetch wait blocks before the poll loop looks at its mailbox again: a
#: rebalance step (revoke, assign) posted meanwhile waits at most this long for its callback,
#: and under EAGER the whole group waits for that callback (benchmarks/results.md, rebalances)
_FETCH_SLICE_MS = 20
#: close(group_membership=...) -> Leave.send_leave_group (None: dynamic leaves, static stays)
_CLOSE_POLICIES: dict[str, bool | None] = {"default": None, "remain": False, "leave": True}
#: how long close() waits for the group thread to stop once the member left, in seconds
_GROUP_STOP_S = 5.0

def _fetch_columns(fetcher: Any, max_records: int, timeout_ms: int) -> list[RecordColumns]:
    """The fetcher's columnar hand-out (``kgroup._io.fetch_pipeline.fetch_columns``), imported on first use."""
    from kgroup._io.fetch_pipeline import fetch_columns

    return fetch_columns(fetcher, max_records, timeout_ms)


def _columns_size(columns: RecordColumns) -> int:
    """Bytes of keys and values in ``columns`` (the ``bytes-consumed`` metric)."""
    nbytes = getattr(columns, "nbytes", None)
    if isinstance(nbytes, int):
        return nbytes
    return sum(len(k) for k in columns.keys if k) + sum(len(v) for v in columns.values if v)


#: set once ``_import_deferred`` has bound the names below
_deferred_imported = False


def _import_deferred() -> None:
    """Import this module's run-time names and bind them as globals, once: at the first ``Consumer(...)``.

    ``from kgroup import Consumer`` loads only this module, ``kgroup.errors`` and the ``K``/``V``
    type variables. The rest of what the facade uses (the configuration and its assignors, the
    mailbox, the membership's events, commands and states, the transport port, metrics, health
    and the value types: about 80 attrs classes, and attrs) is imported here, by the constructor,
    before any method can run. Afterwards the module holds the same names as when these were
    top-level imports, the methods use them as plain globals, and ``subscribe()`` finds the same
    modules loaded as before: the first JoinGroup waits for no import it did not wait for then.
    """
    global _deferred_imported
    global Clock, MonotonicClock, Mailbox, OffsetFetchResult, Transport, Deadline
    global ConsumerConfig, GroupMembershipOperation, resolve_bootstrap_servers, DeserializerLike, as_function
    global HealthReport, HealthServer, RebalanceListener, ev, exponential_backoff, RebalanceStep, MemberState
    global Recorder, ConsumerRecord, GroupMetadata, OffsetAndMetadata, OffsetAndTimestamp, TopicPartition
    if _deferred_imported:
        return
    from kgroup._clock import Clock, MonotonicClock
    from kgroup._driver.mailbox import Mailbox
    from kgroup._io.transport import OffsetFetchResult, Transport
    from kgroup._retry import Deadline
    from kgroup.config import ConsumerConfig, GroupMembershipOperation, resolve_bootstrap_servers
    from kgroup.deserializers import DeserializerLike, as_function
    from kgroup.health import HealthReport, HealthServer
    from kgroup.listener import RebalanceListener
    from kgroup.membership import events as ev
    from kgroup.membership.backoff import exponential_backoff
    from kgroup.membership.commands import RebalanceStep
    from kgroup.membership.states import MemberState
    from kgroup.metrics import Recorder
    from kgroup.types import ConsumerRecord, GroupMetadata, OffsetAndMetadata, OffsetAndTimestamp, TopicPartition

    _deferred_imported = True


class _Runtime(Protocol):
    """How a consumer gets its mailbox and runs its group thread (the simulator swaps it)."""

    def mailbox(self) -> Mailbox: ...

    def start(self, group: GroupThread) -> None: ...

    def stop(self, group: GroupThread, timeout_s: float) -> None: ...

    #: longest one fetch wait of the poll loop, in ms (the loop looks at its mailbox between)
    fetch_slice_ms: int


class _Threads:
    """Production: a real mailbox and the group thread's own OS thread."""

    fetch_slice_ms = _FETCH_SLICE_MS

    def mailbox(self) -> Mailbox:
        return Mailbox()

    def start(self, group: GroupThread) -> None:
        group.start()

    def stop(self, group: GroupThread, timeout_s: float) -> None:
        group.stop(timeout_s)


class _PositionLookup:
    """The OffsetFetch in flight for positions, reused across polls (Java's pending request)."""

    __slots__ = ("future", "partitions")

    def __init__(
        self, partitions: tuple[TopicPartition, ...], future: concurrent.futures.Future[OffsetFetchResult]
    ) -> None:
        self.partitions = partitions
        self.future = future


class _LookupRetriable(Exception):
    """Internal: an offset look-up to try again until its deadline."""


class _OffsetsMissing(_LookupRetriable):
    """Internal: a ListOffsets look-up left these partitions without an offset (retried)."""


class _TransportFailed(_LookupRetriable):
    """Internal: the request failed on the way (no broker yet, a disconnect): retried."""


class Consumer(Generic[K, V]):
    """A member of a Kafka consumer group (the Java ``KafkaConsumer``'s group semantics).

    ``Consumer(bootstrap_servers="host:9092", group_id="billing", **config)`` or
    ``Consumer(ConsumerConfig(...))``. Keyword names and defaults are ``ConsumerConfig``'s.
    The constructor starts nothing: threads start on ``subscribe()``.

    Args:
        config: a ``ConsumerConfig``; or pass its fields as keywords instead.
        key_deserializer, value_deserializer: ``bytes -> K``/``V`` callables, or objects with
            Java's ``deserialize(topic, headers, data)`` (``kgroup.deserializers``); records
            then carry ``K``/``V`` (``Consumer[K, V]``), else raw ``bytes``. Null keys and
            values stay None.
        transport: a ``Transport`` (tests); default: kafka-python's network client.
        clock: a ``Clock`` (tests); default: the monotonic clock.
        **kwargs: ``ConsumerConfig`` fields.

    Raises:
        ConfigError: a bad or unknown configuration value, naming the field; or no
            ``bootstrap_servers`` host resolves ("No resolvable bootstrap urls given in
            bootstrap.servers", as Java's constructor; unresolvable ones are logged and skipped).

    Use it from one thread (the "poll thread"); ``wakeup()`` is the only method safe to call
    from another thread.

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
        _runtime: _Runtime | None = None,
        **kwargs: Unpack[ConsumerArgs],
    ) -> None:
        if not _deferred_imported:
            _import_deferred()
        if config is None:
            config = ConsumerConfig.from_kwargs(**kwargs)
        elif kwargs:
            raise TypeError("pass either a ConsumerConfig or keyword arguments, not both")
        if transport is None and _runtime is None:
            # Java's KafkaConsumer resolves bootstrap.servers in its constructor (ClientUtils)
            resolve_bootstrap_servers(config.bootstrap_servers)
        self._config = config
        self._key_fn = as_function(key_deserializer)
        self._value_fn = as_function(value_deserializer)
        #: a deserialization failure raised by the next poll() while the position is still there
        self._bad_records: dict[TopicPartition, RecordDeserializationError] = {}
        self._clock = clock or MonotonicClock()
        self._runtime: _Runtime = _runtime or _Threads()
        self._transport_arg = transport
        self._transport: Transport | None = None
        self._parts: PartitionState | None = None
        self._offsets: OffsetsClient | None = None
        self._mailbox = self._runtime.mailbox()
        self._group: GroupThread | None = None
        self._listener: RebalanceListener = RebalanceListener()
        self._errors: list[Exception] = []
        self._fatal: Exception | None = None
        self._interrupt: BaseException | None = None
        self._closed = False
        self._closing = False
        self._in_callback = False
        self._last_polled_sent = float("-inf")
        self._next_auto_commit = float("inf")
        self._auto_commit: concurrent.futures.Future[None] | None = None
        self._position_lookup: _PositionLookup | None = None
        self._missing_topics: frozenset[str] = frozenset()
        #: while close() runs: the deadline its revoke-step commit must respect (clock seconds)
        self._close_deadline: float | None = None
        self._rng = random.Random()
        self._metrics = Recorder(self._clock, group_protocol=config.group_protocol)
        self._health_servers: list[HealthServer] = []
        self._subscribed_at: float | None = None
        #: assign() was called: no group membership, a StandaloneGroup stands for the group thread
        self._manual = False
        #: a pattern subscription: the pattern, the topic listing in flight, when to list again
        self._pattern: re.Pattern[str] | None = None
        self._pattern_lookup: concurrent.futures.Future[frozenset[str]] | None = None
        self._pattern_check_at = float("-inf")
        #: the network client until its first bootstrap succeeds (ClusterUnreachableError)
        self._bootstrapping: KafkaPythonTransport | None = None
        self._rebalance_reason = ""
        #: the member id under group_protocol="consumer", from the first subscribe() on (KIP-1082)
        self._member_id: str | None = None

    # ------------------------------------------------------------------ properties
    @property
    def config(self) -> ConsumerConfig:
        """The consumer's configuration."""
        return self._config

    def _snapshot(self) -> MemberSnapshot | None:
        return self._group.snapshot if self._group is not None else None

    @property
    def _assignment(self) -> frozenset[TopicPartition]:
        return self._parts.assignment if self._parts is not None else frozenset()

    @property
    def _fetcher(self) -> Any:
        """The record fetcher (tests inspect what it buffers)."""
        return self._parts.fetcher if self._parts is not None else None

    # ------------------------------------------------------------------ lifecycle
    def _ensure_started(self) -> None:
        if self._group is not None:
            return
        transport = self._ensure_transport()
        # imported after the network client started bootstrapping: the import overlaps it
        from kgroup._driver.commits import OffsetsClient
        from kgroup._driver.group_thread import GroupThread

        self._group = GroupThread(
            self._config, transport, self._mailbox, self._clock, self._rng, self._metrics, member_id=self._member_id
        )
        if self._member_id is None:
            # the consumer protocol's member id: generated once and kept for the consumer's lifetime,
            # across unsubscribe() and subscribe() too (KIP-1082; Java's AbstractMembershipManager)
            self._member_id = self._group.consumer_member_id
        self._offsets = OffsetsClient(
            self._config, transport, self._group, self._mailbox, self._clock, self._rng, self._metrics
        )
        self._runtime.start(self._group)
        if self._config.enable_auto_commit:
            self._next_auto_commit = self._clock.monotonic() + self._config.auto_commit_interval_ms / 1000

    def _check_open(self) -> None:
        if self._closed:
            raise ConsumerClosedError("the consumer is closed")
        if self._fatal is not None:
            raise self._fatal.with_traceback(None)  # raised again and again: no growing traceback

    def __enter__(self) -> Consumer[K, V]:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ subscription
    def subscribe(
        self,
        topics: Iterable[str] | None = None,
        listener: RebalanceListener | None = None,
        *,
        pattern: re.Pattern[str] | str | None = None,
    ) -> None:
        """Join the group for ``topics``, or for every topic matching ``pattern`` (replacing an earlier subscription).

        With ``pattern`` (Java ``subscribe(Pattern)``), the topics are those whose whole name
        matches it (``re.fullmatch``), internal topics excluded; the consumer lists the cluster's
        topics at ``subscribe()``, then every ``metadata_max_age_ms`` and when a subscribed topic
        disappears, and a created or deleted topic joins or leaves the subscription: the member
        rejoins with it and the leader assigns anew. Until a topic matches, the member does not
        join. Checked on the thread that calls ``poll()``, as Java does.

        Args:
            topics: topic names (an iterable of str; a bare str is one topic).
            listener: a ``RebalanceListener`` subclass instance; callbacks run on the thread
                that calls ``poll()``/``close()``.
            pattern: a compiled ``re.Pattern`` or a regular expression string, instead of ``topics``.

        Raises:
            IllegalStateError: empty topic list, both or neither of ``topics`` and ``pattern``, a bad
                pattern, or a bad listener.
            ConsumerClosedError: after ``close()``.

        """
        self._check_open()
        if self._manual:
            raise IllegalStateError(
                "subscription to topics, partitions and pattern are mutually exclusive: unsubscribe() first"
            )
        if (topics is None) == (pattern is None):
            raise IllegalStateError("subscribe() takes either topics or a pattern")
        compiled: re.Pattern[str] | None = None
        wanted: frozenset[str] = frozenset()
        if pattern is not None and self._config.group_protocol == "consumer":
            self._subscribe_regex(pattern, listener)
            return
        if pattern is not None:
            try:
                compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
            except re.error as exc:
                raise IllegalStateError(f"subscribe(): invalid pattern {pattern!r}: {exc}") from exc
            if not isinstance(compiled, re.Pattern):
                raise IllegalStateError(f"subscribe(): pattern must be a str or re.Pattern, got {pattern!r}")
        else:
            assert topics is not None
            if isinstance(topics, str):
                topics = (topics,)
            wanted = frozenset(topics)
            if not wanted or not all(isinstance(t, str) and t for t in wanted):
                raise IllegalStateError(f"subscribe() needs a non-empty list of topic names, got {topics!r}")
        self._start_subscription(listener)
        assert self._group is not None
        self._pattern = compiled
        self._pattern_lookup = None
        self._pattern_check_at = float("-inf")
        if compiled is None:
            self._group.post(ev.Subscribe(wanted))
        else:
            self._maybe_match_pattern()  # the lookup goes out now; poll() applies its answer

    def _start_subscription(self, listener: RebalanceListener | None) -> None:
        """Take the listener (``IllegalStateError`` if it is not a ``RebalanceListener``), start the group."""
        if listener is not None:
            if not isinstance(listener, RebalanceListener):
                raise IllegalStateError("listener must be a kgroup.RebalanceListener instance")
            self._listener = listener
        self._ensure_started()
        if self._subscribed_at is None:
            self._subscribed_at = self._clock.monotonic()

    def _subscribe_regex(self, pattern: re.Pattern[str] | str, listener: RebalanceListener | None) -> None:
        """``subscribe(pattern=...)`` under the consumer protocol: the broker matches (KIP-848).

        The pattern goes in the heartbeat's ``SubscribedTopicRegex`` (Java's
        ``subscribe(SubscriptionPattern)``), in RE2J syntax, not Python's ``re``: the broker
        compiles and matches it (whole topic names) and answers INVALID_REGULAR_EXPRESSION,
        a ``FatalGroupError``, for one it cannot compile. docs/kip848.md, "Patterns", has what
        differs from Python's ``re``.
        """
        text = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
        if not isinstance(text, str) or not text:
            raise IllegalStateError(f"subscribe(): pattern must be a non-empty str or re.Pattern, got {pattern!r}")
        self._start_subscription(listener)
        assert self._group is not None
        self._pattern = None
        self._pattern_lookup = None
        from kgroup.membership.consumer_group import Subscribe  # the consumer protocol's own event

        self._group.post(Subscribe(frozenset(), pattern=text))

    def _maybe_match_pattern(self) -> None:
        """Pattern subscription: list the topics when due, and follow the match (poll thread)."""
        pattern = self._pattern
        if pattern is None or self._group is None:
            return
        lookup = self._pattern_lookup
        if lookup is not None:
            if not lookup.done():
                return
            self._pattern_lookup = None
            if lookup.exception() is None:
                matched = frozenset(t for t in lookup.result() if pattern.fullmatch(t))
                current = self.subscription()
                if matched != current and (matched or current):
                    log.info("group %s: pattern %r now matches %s", self._config.group_id, pattern.pattern,
                             sorted(matched))
                    self._group.post(ev.Subscribe(matched))
            else:
                self._pattern_check_at = self._clock.monotonic() + self._config.retry_backoff_ms / 1000
                return
        now = self._clock.monotonic()
        if now < self._pattern_check_at:
            return
        self._pattern_check_at = now + self._config.metadata_max_age_ms / 1000
        assert self._transport is not None
        self._pattern_lookup = self._transport.list_topics(self._config.request_timeout_ms)

    def enforce_rebalance(self, reason: str | None = None) -> None:
        """Make the member rejoin the group on the next ``poll()`` (Java ``enforceRebalance``, KIP-568).

        Non-blocking. The reason travels with the JoinGroup (KIP-800; cut to 255 characters) and
        is ``rebalance_reason`` in the listener callbacks of that rebalance. A no-op while a
        rebalance is already under way. Use it when the assignment must be recomputed for a reason
        the group cannot see (a custom assignor's inputs changed).

        Args:
            reason: why (default "rebalance enforced by user", Java's).

        Raises:
            IllegalStateError: not subscribed.
            ConsumerClosedError: after ``close()``.

        """
        self._check_open()
        if self._group is None or self._subscribed_at is None:
            raise IllegalStateError("enforce_rebalance() is only supported for subscribed consumers")
        self._group.post(ev.RequestRejoin(reason or "rebalance enforced by user"))

    @property
    def rebalance_reason(self) -> str:
        """Why the current (or last) rebalance happened: read it inside a listener callback.

        The reason of the rebalance step being run (a rejoin's reason, "generation N assigned",
        the close reason, ...); empty before the first rebalance.
        """
        return self._rebalance_reason

    def subscription(self) -> frozenset[str]:
        """The subscribed topics (empty before ``subscribe``)."""
        snap = self._snapshot()
        return snap.subscription if snap is not None else frozenset()

    # ------------------------------------------------------------------ poll
    def poll(self, timeout_ms: int = 0) -> list[ConsumerRecord[K, V]]:
        """Run due rebalance callbacks and return records of owned partitions.

        Args:
            timeout_ms: the longest to wait for records, in ms (>= 0). Listener callbacks
                run inside ``poll()`` and are not bounded by it (as in Java).

        Returns:
            Up to ``max_poll_records`` ``ConsumerRecord``s, in offset order per partition.

        Raises:
            ListenerError: a rebalance callback raised (the rebalance still completed).
            FatalGroupError / FencedInstanceIdError / GroupThreadCrashed: the member cannot
                continue.
            NoOffsetForPartitionError: auto_offset_reset="none" and no committed offset.
            OffsetOutOfRangeError, FetchError: fetching failed.
            ClusterUnreachableError: no broker of ``bootstrap_servers`` has answered since
                ``subscribe()``, ``default_api_timeout_ms`` ago or more (the consumer keeps trying).
            AuthenticationFailedError: a broker refused the TLS handshake or the SASL exchange
                (the consumer keeps trying).
            RecordDeserializationError: a deserializer raised; the records before it were
                returned by the previous call, the position stays at the record.
            WakeupError: ``wakeup()`` was called.
            IllegalStateError: not subscribed, or called from a listener callback.
            ConsumerClosedError: after ``close()``.

        """
        return self._poll_loop(timeout_ms, self._config.max_poll_records, columns=False)

    def poll_columns(self, timeout_ms: int = 0, max_records: int | None = None) -> list[RecordColumns]:
        """``poll()`` for bulk readers: each partition's records as one :class:`RecordColumns`.

        Everything ``poll()`` does happens here too, with the same guarantees: rebalance
        callbacks run inside the call, records of partitions whose revocation started are not
        returned (their positions go back), positions advance past what is returned, auto-commit
        and the ``max_poll_interval_ms`` watchdog count this call as a poll. What differs is the
        shape: one ``RecordColumns`` per partition (at most one per partition per call, offsets
        ascending) whose attributes are columns (``offsets``, ``keys``, ``values``, ``headers``,
        ``timestamps``, ``timestamp_types``), taken from the fetched batches without a
        ``ConsumerRecord`` per record where the decoder allows it; the Spark source turns them into
        Arrow record batches. Keys and values are the raw bytes: the deserializers are not
        applied. There is no Java counterpart (Java's ``KafkaConsumer.poll`` returns records).

        Args:
            timeout_ms: the longest to wait for records, in ms (>= 0), as for ``poll()``.
            max_records: at most this many records in all (>= 1); ``max_poll_records`` when None.

        Returns:
            The partitions' columns, ``[]`` when no record arrived in time.

        Raises:
            ValueError: ``timeout_ms`` < 0 or ``max_records`` < 1.
            everything ``poll()`` raises, but ``RecordDeserializationError``.

        """
        if max_records is not None and (isinstance(max_records, bool) or max_records < 1):
            raise ValueError(f"max_records must be >= 1, got {max_records!r}")
        limit = self._config.max_poll_records if max_records is None else max_records
        return self._poll_loop(timeout_ms, limit, columns=True)

    def _poll_loop(self, timeout_ms: int, max_records: int, *, columns: bool) -> list[Any]:
        """The loop of ``poll()`` (``columns`` False: records) and ``poll_columns()`` (True)."""
        self._check_open()
        name = "poll_columns()" if columns else "poll()"
        if self._in_callback:
            raise IllegalStateError(f"{name} must not be called from a rebalance listener callback")
        if self._group is None or (self._subscribed_at is None and not self._manual):
            raise IllegalStateError(
                f"{name} before subscribe() or assign(): the consumer is not subscribed to any topic"
            )
        if timeout_ms < 0:
            raise ValueError("timeout_ms must be >= 0")
        deadline = self._clock.monotonic() + timeout_ms / 1000
        parts = self._parts
        assert parts is not None
        self._metrics.polled()
        first = True
        while True:
            self._signal_polled(force=first)  # once per poll() resets the watchdog (KIP-62)
            first = False
            self._drain_mailbox(None)
            self._raise_pending()
            if not columns:
                self._raise_bad_record()
            self._raise_if_unreachable()
            self._maybe_match_pattern()
            if self._mailbox.consume_wakeup():
                raise WakeupError(f"{name} interrupted by wakeup()")
            self._maybe_auto_commit()
            self._update_positions(deadline)
            remaining_ms = max(0, math.ceil((deadline - self._clock.monotonic()) * 1000))
            fetched: list[Any] = []
            on_hold = self._hand_out_on_hold()
            if parts.fetchable() and not on_hold:
                wait_ms = min(remaining_ms, self._runtime.fetch_slice_ms)
                if columns:
                    fetched = _fetch_columns(parts.fetcher, max_records, wait_ms)
                else:
                    fetched = parts.fetcher.fetch(max_records, wait_ms)
            if columns:
                parts.hold_columns(fetched)
            else:
                parts.hold(fetched)
            self._check_missing_topics()
            try:
                fetched = self._drain_mailbox(fetched, columns=columns)
                if fetched and self._hand_out_on_hold():
                    # the member may have been removed meanwhile: the positions go back
                    fetched = self._drop_taken(fetched, {item.topic_partition for item in fetched}, columns)
            finally:
                parts.release()
            if fetched:
                # errors that arrived with records wait for the next poll(): no record is lost
                if self._fatal is not None:
                    raise self._fatal
                if columns:
                    self._metrics.consumed(sum(map(len, fetched)), sum(_columns_size(c) for c in fetched))
                    return fetched
                size = sum(len(r.key or b"") + len(r.value or b"") for r in fetched)
                if self._key_fn is not None or self._value_fn is not None:
                    fetched = self._deserialize(fetched)
                    if not fetched:
                        self._raise_bad_record()
                self._metrics.consumed(len(fetched), size)
                return fetched
            self._raise_pending()
            now = self._clock.monotonic()
            if now >= deadline:
                return []
            if not parts.fetchable() or on_hold:
                self._mailbox.wait(min(deadline - now, self._runtime.fetch_slice_ms / 1000))
            elif parts.fetcher.idle():
                # nothing in flight to wait on (no leader known yet, a reset pending): back off
                self._mailbox.wait(min(deadline - now, self._config.retry_backoff_ms / 1000))

    def _drop_taken(self, fetched: list[Any], taken: set[TopicPartition], columns: bool) -> list[Any]:
        assert self._parts is not None
        if columns:
            return self._parts.drop_columns(fetched, taken)
        return self._parts.drop(fetched, taken)

    def _hand_out_on_hold(self) -> bool:
        """The member may be out of the group: no successful heartbeat for session_timeout_ms.

        The coordinator may have removed the member and given its partitions to others
        (docs/protocol.md, "Liveness: the session timer"): nothing is handed out until the
        coordinator confirms the session (the partitions are kept) or they are lost.
        """
        snap = self._snapshot()
        if snap is None:
            return False
        # the group thread may not have run at the session clock's deadline yet: look at it here
        hold_at = getattr(snap, "hold_at", math.inf)
        return bool(getattr(snap, "hand_out_on_hold", False)) or self._clock.monotonic() >= hold_at

    def _deserialize(self, records: list[ConsumerRecord]) -> list[ConsumerRecord]:
        """Apply the deserializers; a failing record and its partition's later ones stay unread."""
        key_fn, value_fn = self._key_fn, self._value_fn
        out = []
        failed: dict[tuple[str, int], RecordDeserializationError] = {}
        for record in records:
            where = (record.topic, record.partition)
            if where in failed:
                continue
            origin = "key"
            key: Any
            value: Any
            try:
                key = record.key
                if key_fn is not None and key is not None:
                    key = key_fn(record.topic, record.headers, key)
                origin = "value"
                value = record.value
                if value_fn is not None and value is not None:
                    value = value_fn(record.topic, record.headers, value)
            except Exception as exc:
                error = RecordDeserializationError(record.topic_partition, record.offset, origin, repr(exc))
                error.__cause__ = exc
                failed[where] = error
                continue
            out.append(record._replace(key=key, value=value))
        assert self._parts is not None
        for error in failed.values():
            tp = error.topic_partition
            assert isinstance(tp, TopicPartition)
            self._parts.seek(tp, error.offset)  # the position stays at the record that failed
            self._bad_records[tp] = error
        return out

    def _raise_bad_record(self) -> None:
        """Raise a deserialization failure whose partition still sits at that record."""
        for tp, error in list(self._bad_records.items()):
            del self._bad_records[tp]
            if tp in self._assignment and self._parts is not None and self._parts.position(tp) == error.offset:
                raise error

    def _raise_if_unreachable(self) -> None:
        """Raise why no broker was reached: a refused connection at once, else after the timeout.

        AuthenticationFailedError when a broker refused the TLS handshake or the SASL exchange;
        ClusterUnreachableError once default_api_timeout_ms passed with no broker ever reached.
        """
        kp = self._bootstrapping
        if kp is None:
            return
        if kp.bootstrapped:
            self._bootstrapping = None
            return
        refused = kp.authentication_failure()  # Java's poll() throws AuthenticationException at once
        if refused is not None:
            raise refused
        since = self._subscribed_at
        timeout_ms = self._config.default_api_timeout_ms
        if since is not None and self._clock.monotonic() - since >= timeout_ms / 1000:
            raise ClusterUnreachableError(
                f"no broker of bootstrap_servers {self._config.bootstrap_servers!r} has answered in "
                f"{timeout_ms} ms (default_api_timeout_ms); still trying: poll() again, or close()"
            )

    def _check_missing_topics(self) -> None:
        """Tell the group thread once when an assigned topic disappears from metadata.

        As Java's Fetcher, which asks for a metadata update then.
        """
        assert self._parts is not None
        missing = self._parts.fetcher.missing_topics()
        if missing and missing != self._missing_topics:
            assert self._group is not None
            self._group.metadata_stale()
            self._pattern_check_at = float("-inf")  # a deleted topic leaves a pattern subscription
        self._missing_topics = missing

    def _signal_polled(self, *, force: bool = False) -> None:
        now = self._clock.monotonic()
        if force or now - self._last_polled_sent >= 0.5:
            self._last_polled_sent = now
            assert self._group is not None
            self._group.post(ev.Polled())

    def _raise_pending(self) -> None:
        if self._fatal is not None:
            raise self._fatal.with_traceback(None)
        if self._errors:
            error = self._errors.pop(0)
            raise error

    def _drain_mailbox(self, records: list[Any] | None, *, columns: bool = False) -> list[Any]:
        """Run every delivered step; drop records (``columns``: RecordColumns) of partitions taken away (acquiesce)."""
        items = self._mailbox.take_all()
        kept = records or []
        if not items:
            return kept
        assert self._parts is not None
        taken: set[TopicPartition] = set()
        for item in items:
            if isinstance(item, RebalanceStep):
                taken |= item.lost | item.revoked
                if item.invoke_assigned:
                    taken |= self._assignment - item.owned
        if kept and taken:
            kept = self._drop_taken(kept, taken, columns)
        for item in items:
            if isinstance(item, RebalanceStep):
                self._run_step(item)
            else:
                self._on_error(item)
        return kept

    def _on_error(self, error: Exception) -> None:
        snap = self._snapshot()
        if (
            isinstance(error, (FatalGroupError, GroupThreadCrashed))
            or (snap is not None and snap.state is MemberState.FATAL)
        ):
            self._fail(error)
        else:
            self._errors.append(error)

    def _fail(self, error: Exception) -> None:
        """A fatal error: lost callbacks for everything owned, then poison the consumer."""
        if self._fatal is not None:
            return
        self._fatal = error
        lost = self._assignment
        self._set_assignment(frozenset())
        if lost:
            self._invoke("on_partitions_lost", lost)
        self._raise_interrupt()

    # ------------------------------------------------------------------ rebalance steps
    def _set_assignment(self, partitions: frozenset[TopicPartition]) -> None:
        assert self._parts is not None
        self._parts.set_assignment(partitions)
        if self._position_lookup is not None and not set(self._position_lookup.partitions) <= partitions:
            self._position_lookup = None

    def _invoke(self, callback: str, partitions: frozenset[TopicPartition]) -> None:
        self._in_callback = True
        started = self._clock.monotonic()
        try:
            getattr(self._listener, callback)(partitions)
        except Exception as exc:
            log.exception("group %s: %s raised", self._config.group_id, callback)
            error = ListenerError(f"{type(self._listener).__name__}.{callback} raised {exc!r}")
            error.__cause__ = exc
            self._errors.append(error)
        except BaseException as exc:
            # KeyboardInterrupt, SystemExit: finish the step (the member must not wedge),
            # then let it through
            if self._interrupt is None:
                self._interrupt = exc
        finally:
            self._in_callback = False
            self._metrics.listener(callback, self._clock.monotonic() - started)

    def _raise_interrupt(self) -> None:
        interrupt, self._interrupt = self._interrupt, None
        if interrupt is not None:
            raise interrupt

    def _run_step(self, step: RebalanceStep) -> None:
        self._rebalance_reason = step.reason
        try:
            self._apply_step(step)
        finally:
            assert self._group is not None
            self._group.post(ev.StepCompleted(step.step_id))
        self._raise_interrupt()

    def _apply_step(self, step: RebalanceStep) -> None:
        group_id = self._config.group_id
        if step.lost:
            log.info("group %s: partitions lost (%s): %s", group_id, step.reason, sorted(map(str, step.lost)))
            self._set_assignment(self._assignment - step.lost)
            self._invoke("on_partitions_lost", step.lost)
        if step.revoked and not self._generation_still(step):
            # The step was made while the generation was valid, but the group thread reset it
            # before this thread ran the step (e.g. the poll watchdog fired while a rebalance
            # waited for this poll). Java decides revoke-or-lose when onJoinPrepare runs, not
            # when the rebalance was noticed: the partitions can no longer be committed, so
            # they are lost, not revoked (ConsumerCoordinator.onJoinPrepare/onLeavePrepare).
            log.info(
                "group %s: partitions lost (generation %d was reset before the revoke ran): %s",
                group_id, step.generation.generation_id, sorted(map(str, step.revoked)),
            )
            self._set_assignment(self._assignment - step.revoked)
            self._invoke("on_partitions_lost", step.revoked)
        elif step.revoked:
            log.info("group %s: acquiesce: revoking %d partitions (%s)", group_id, len(step.revoked), step.reason)
            if self._config.enable_auto_commit:
                self._auto_commit_sync()
            self._invoke("on_partitions_revoked", step.revoked)
            self._set_assignment(self._assignment - step.revoked)
        if step.invoke_assigned:
            self._set_assignment(step.owned)
            log.info(
                "group %s: generation %d: assigned %s",
                group_id, step.generation.generation_id, sorted(map(str, step.assigned)),
            )
            self._invoke("on_partitions_assigned", step.assigned)

    def _generation_still(self, step: RebalanceStep) -> bool:
        """Whether the member still holds the generation ``step`` was made in."""
        snap = self._snapshot()
        if snap is None:
            return False
        current = snap.generation
        if self._config.group_protocol == "consumer":
            # the member epoch moves on with every assignment the broker makes (KIP-848): the
            # member still holds its partitions while it keeps its member id and an epoch
            return current.is_valid() and current.member_id == step.generation.member_id
        return (
            current.is_valid()
            and current.generation_id == step.generation.generation_id
            and current.member_id == step.generation.member_id
        )

    # ------------------------------------------------------------------ positions
    def _update_positions(self, deadline: float) -> None:
        """Step 6 (OffsetFetch): positions for assigned partitions that have none.

        Bounded by ``deadline`` (clock seconds): a look-up still unanswered then is kept and
        reused by the next call (Java ``ConsumerCoordinator.refreshCommittedOffsetsIfNeeded``
        with its pending OffsetFetch), so ``poll(0)`` loops still get their positions.
        """
        parts = self._parts
        assert parts is not None
        assert self._offsets is not None
        if not parts.needs_position or self._fatal is not None:
            return
        wanted = tuple(sorted(parts.needs_position))
        lookup = self._position_lookup
        if lookup is None or lookup.partitions != wanted:
            snap = self._snapshot()
            if snap is None or snap.coordinator is None or snap.fatal is not None:
                return
            # under the consumer protocol it carries the member id and epoch (OffsetFetch v9+, KIP-848)
            lookup = _PositionLookup(wanted, self._offsets.send_fetch(wanted, snap, snap.coordinator))
            self._position_lookup = lookup
        if not self._mailbox.wait_future(lookup.future, deadline - self._clock.monotonic()):
            return
        self._position_lookup = None
        exc = lookup.future.exception()
        if exc is not None:
            assert self._group is not None
            self._group.post(ev.CoordinatorDead(f"OffsetFetch failed: {exc}"))
            return
        result = lookup.future.result()
        from kgroup._driver.commits import Retriable  # loaded with the OffsetsClient that sent it

        try:
            self._offsets._raise_first(
                Api.OFFSET_FETCH, [result.error_code] + [c.error_code for c in result.partitions.values()], None
            )
        except Retriable:
            return
        missing: list[TopicPartition] = []
        for tp in wanted:
            if tp not in parts.needs_position:
                continue  # sought meanwhile
            found = result.partitions.get(tp)
            if found is not None and found.offset >= 0:
                parts.seek(tp, found.offset, found.leader_epoch)
                continue
            if self._config.auto_offset_reset == "none":
                missing.append(tp)
                continue
            parts.fetcher.request_reset(tp, self._config.auto_offset_reset)
            parts.needs_position.discard(tp)
        if missing:
            raise NoOffsetForPartitionError(frozenset(missing))

    # ------------------------------------------------------------------ commits
    def _maybe_auto_commit(self) -> None:
        """Java ``maybeAutoCommitOffsetsAsync``: one async commit per interval, never queued.

        While the coordinator is unknown the commit is skipped and tried again after
        ``retry_backoff_ms``; while the previous auto-commit is unanswered, nothing is sent.
        """
        if not self._config.enable_auto_commit:
            return
        now = self._clock.monotonic()
        if now < self._next_auto_commit:
            return
        snap = self._snapshot()
        if snap is None or snap.state is not MemberState.STABLE or not self._assignment:
            self._next_auto_commit = now + self._config.auto_commit_interval_ms / 1000
            return
        if snap.coordinator is None or (self._auto_commit is not None and not self._auto_commit.done()):
            self._next_auto_commit = now + self._config.retry_backoff_ms / 1000
            return
        self._next_auto_commit = now + self._config.auto_commit_interval_ms / 1000
        assert self._parts is not None
        assert self._offsets is not None
        offsets = self._parts.consumed_offsets(self._assignment)
        if offsets:
            self._auto_commit = self._offsets.commit_async(offsets)
            self._auto_commit.add_done_callback(self._log_async_commit)

    def _log_async_commit(self, future: concurrent.futures.Future[None]) -> None:
        exc = future.exception()
        if exc is not None:
            log.warning("group %s: auto-commit failed: %s", self._config.group_id, exc)

    def _auto_commit_sync(self) -> None:
        """The revoke step's commit (Java ``onJoinPrepare``/``onLeavePrepare``: ``maybeAutoCommitOffsetsSync``)."""
        assert self._parts is not None
        assert self._offsets is not None
        offsets = self._parts.consumed_offsets(self._assignment)
        if not offsets:
            return
        timeout_ms = self._config.default_api_timeout_ms
        if self._close_deadline is not None:
            timeout_ms = max(0, int((self._close_deadline - self._clock.monotonic()) * 1000))
        log.info("group %s: commit: auto-commit on revoke (%d partitions)", self._config.group_id, len(offsets))
        try:
            self._offsets.commit_sync(offsets, timeout_ms)
        except KGroupError as exc:
            log.warning("group %s: auto-commit on revoke failed: %s", self._config.group_id, exc)

    def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> None:
        """Commit offsets synchronously (OffsetCommit with this member's generation).

        Args:
            offsets: ``{TopicPartition: OffsetAndMetadata | int}``, the offset of the next
                record to read; default: the positions of the records handed out by poll().
            timeout_ms: the longest to wait, retrying retriable errors, in ms
                (default: default_api_timeout_ms).

        Raises:
            CommitFailedError: a partition is not owned by this member, or the generation
                was reset (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID); no offset was written.
            RebalanceInProgressError: the group is rebalancing; call poll() then retry.
            CoordinatorUnavailable: no answer within ``timeout_ms``.
            WakeupError: ``wakeup()`` interrupted the call.
            FatalGroupError / FencedInstanceIdError: the member cannot continue.
            BrokerError: OFFSET_METADATA_TOO_LARGE, TOPIC_AUTHORIZATION_FAILED, an unexpected
                error code and the like (only this commit failed).

        """
        self._check_open()
        if self._group is None:
            raise IllegalStateError("commit() before subscribe()")
        prepared = self._prepare_offsets(offsets)
        assert self._offsets is not None
        if prepared:
            timeout = timeout_ms if timeout_ms is not None else self._config.default_api_timeout_ms
            self._offsets.commit_sync(prepared, timeout)

    def commit_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None
    ) -> concurrent.futures.Future[None]:
        """Send one OffsetCommit now; the future completes with None or the commit's error.

        The offsets are taken when called (default: positions of records handed out) and sent
        with the generation the member holds now. Never retried (Java ``commitAsync``): a
        retry could land after a later commit and move the committed offset back. Errors are
        those of ``commit()``, set on the future, with ``RetriableCommitFailedError`` for a
        retriable failure (commit again later). The future completes on kgroup's network
        thread; ``close()`` waits for pending ones (up to its timeout).
        """
        self._check_open()
        if self._group is None:
            raise IllegalStateError("commit_async() before subscribe()")
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        try:
            prepared = self._prepare_offsets(offsets)
        except KGroupError as exc:
            future.set_exception(exc)
            return future
        if not prepared:
            future.set_result(None)
            return future
        assert self._offsets is not None
        return self._offsets.commit_async(prepared)

    def _prepare_offsets(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        assert self._parts is not None
        if offsets is None:
            return self._parts.consumed_offsets(self._assignment)
        prepared: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, value in offsets.items():
            if not isinstance(tp, TopicPartition):
                raise TypeError(f"commit() keys must be kgroup.TopicPartition, got {tp!r}")
            om = OffsetAndMetadata(value) if isinstance(value, int) else value
            if not isinstance(om, OffsetAndMetadata) or om.offset < 0:
                raise ValueError(f"bad offset for {tp}: {value!r}")
            prepared[tp] = om
        not_owned = set(prepared) - self._assignment
        if not_owned:
            raise CommitFailedError(
                f"cannot commit partitions this member does not own: {sorted(map(str, not_owned))}; "
                "they may belong to another member after a rebalance. No offsets were written."
            )
        return prepared

    def committed(
        self, partitions: Iterable[TopicPartition], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (OffsetFetch), None where nothing is committed.

        Under ``group_protocol="consumer"`` a member with an epoch sends its member id and member
        epoch (OffsetFetch v9+, KIP-848), as Java's ``CommitRequestManager`` does; a
        STALE_MEMBER_EPOCH answer is retried, within ``timeout_ms``, with the member's latest epoch.

        Args:
            partitions: the partitions to look up.
            timeout_ms: the longest to wait, in ms (default: default_api_timeout_ms).

        Raises:
            CoordinatorUnavailable: no answer within ``timeout_ms``.
            WakeupError: ``wakeup()`` interrupted the call.
            FatalGroupError: authorization failures.
            BrokerError: under ``group_protocol="consumer"``, UNKNOWN_MEMBER_ID, or
                STALE_MEMBER_EPOCH once the member has no epoch (fenced or left; not retried, as in Java).

        """
        self._check_open()
        if self._group is None:
            raise IllegalStateError("committed() before subscribe()")
        assert self._offsets is not None
        parts = list(partitions)
        found = self._offsets.fetch_committed(
            parts, timeout_ms if timeout_ms is not None else self._config.default_api_timeout_ms
        )
        return {tp: found.get(tp) for tp in parts}

    # ------------------------------------------------------------------ positions API
    def _require_assigned(self, tp: TopicPartition) -> None:
        if tp not in self._assignment:
            raise IllegalStateError(f"partition {tp} is not assigned to this consumer")

    def position(self, tp: TopicPartition, *, timeout_ms: int | None = None) -> int:
        """The offset of the next record ``poll()`` will return for ``tp``.

        Raises:
            IllegalStateError: ``tp`` is not assigned.
            NoOffsetForPartitionError: auto_offset_reset="none" and nothing committed.
            WakeupError: ``wakeup()`` interrupted the call.
            KGroupError: the position could not be found within ``timeout_ms`` (ms).

        """
        self._check_open()
        self._require_assigned(tp)
        assert self._parts is not None
        timeout = timeout_ms if timeout_ms is not None else self._config.default_api_timeout_ms
        deadline = self._clock.monotonic() + timeout / 1000
        while True:
            self._update_positions(deadline)
            position = self._parts.position(tp)
            if position is not None:
                return position
            if self._mailbox.consume_wakeup():
                raise WakeupError("position() interrupted by wakeup()")
            if self._clock.monotonic() >= deadline:
                raise KGroupError(f"position of {tp} unknown after {timeout} ms")
            self._mailbox.sleep(min(0.02, deadline - self._clock.monotonic()))

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Fetch ``tp`` from ``offset`` on the next ``poll()`` (>= 0).

        Raises:
            IllegalStateError: ``tp`` is not assigned.
            ValueError: a negative offset.

        """
        self._check_open()
        self._require_assigned(tp)
        if offset < 0:
            raise ValueError("offset must be >= 0")
        assert self._parts is not None
        self._parts.seek(tp, offset)

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Fetch each of ``partitions`` from its log start on the next ``poll()``/``position()``.

        Lazy, as Java's ``seekToBeginning``: the ListOffsets request goes out now and the
        position is known once it answers. A later ``seek`` or rebalance overrides it; a
        partition revoked meanwhile is not fetched again (the seek applies only while owned).

        Args:
            partitions: assigned partitions (default: every assigned partition).

        Raises:
            IllegalStateError: a partition is not assigned to this consumer.
            ConsumerClosedError: after ``close()``.

        """
        self._reset(partitions, "earliest")

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Fetch each of ``partitions`` from its log end on the next ``poll()`` (Java ``seekToEnd``).

        The log end is the high watermark, or the last stable offset with
        ``isolation_level="read_committed"``. Same rules as ``seek_to_beginning``.

        Raises:
            IllegalStateError: a partition is not assigned to this consumer.
            ConsumerClosedError: after ``close()``.

        """
        self._reset(partitions, "latest")

    def _reset(self, partitions: Iterable[TopicPartition] | None, strategy: str) -> None:
        self._check_open()
        chosen = sorted(self._assignment if partitions is None else set(partitions))
        for tp in chosen:
            self._require_assigned(tp)
        assert self._parts is not None or not chosen
        for tp in chosen:
            self._parts.reset(tp, strategy)  # type: ignore[union-attr]

    def beginning_offsets(
        self, partitions: Iterable[TopicPartition], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """The first offset of each partition's log (ListOffsets, Java ``beginningOffsets``).

        Any partition, assigned or not. Retries partitions whose leader is unknown or moving
        until ``timeout_ms``.

        Args:
            partitions: the partitions to look up.
            timeout_ms: the longest to wait, in ms (default: default_api_timeout_ms).

        Returns:
            ``{TopicPartition: offset}`` for every partition asked for.

        Raises:
            KafkaTimeoutError: not every offset was found within ``timeout_ms`` (an unknown
                topic or partition ends here too, as in Java).
            WakeupError: ``wakeup()`` interrupted the call.
            ConsumerClosedError: after ``close()``.

        """
        return self._list_offsets(partitions, "earliest", timeout_ms)

    def end_offsets(
        self, partitions: Iterable[TopicPartition], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """The log end offset of each partition (the high watermark; Java ``endOffsets``).

        With ``isolation_level="read_committed"`` the last stable offset. Same rules and
        errors as ``beginning_offsets``.
        """
        return self._list_offsets(partitions, "latest", timeout_ms)

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """For each partition, the earliest offset whose record timestamp is >= the one given.

        ListOffsets by timestamp (Java ``offsetsForTimes``); no position changes.

        Args:
            timestamps: ``{TopicPartition: timestamp in ms since the epoch (>= 0)}``.
            timeout_ms: the longest to wait, in ms (default: default_api_timeout_ms).

        Returns:
            ``{TopicPartition: OffsetAndTimestamp | None}``: None where no record is that late.

        Raises:
            ValueError: a negative timestamp.
            KafkaTimeoutError: no answer within ``timeout_ms``.
            WakeupError: ``wakeup()`` interrupted the call.
            ConsumerClosedError: after ``close()``.

        """
        self._check_open()
        wanted = dict(timestamps)
        for tp, ts in wanted.items():
            if not isinstance(ts, int) or ts < 0:
                raise ValueError(f"the target time for partition {tp} must be an int >= 0, got {ts!r}")
        if not wanted:
            return {}
        transport = self._ensure_transport()
        timeout = timeout_ms if timeout_ms is not None else self._config.default_api_timeout_ms
        deadline = Deadline.after_ms(self._clock, timeout)

        def attempt() -> dict[TopicPartition, tuple[int, int]]:
            return self._await_lookup(
                "offsets_for_times", lambda ms: transport.offsets_for_times(wanted, ms), deadline.remaining_ms()
            )

        backoff = exponential_backoff(self._config.retry_backoff_ms, self._config.retry_backoff_max_ms, self._rng)
        try:
            found = self._mailbox.retry(
                attempt, deadline, retry_on=_LookupRetriable, backoff_s=backoff, what="offsets_for_times"
            )
        except _TransportFailed as failed:
            raise KafkaTimeoutError(f"offsets_for_times: no answer within {timeout} ms ({failed})") from None
        return {
            tp: OffsetAndTimestamp(*found[tp]) if tp in found else None for tp in wanted
        }

    def _list_offsets(
        self, partitions: Iterable[TopicPartition], spec: str, timeout_ms: int | None
    ) -> dict[TopicPartition, int]:
        self._check_open()
        wanted = set(partitions)
        if not wanted:
            return {}
        transport = self._ensure_transport()
        timeout = timeout_ms if timeout_ms is not None else self._config.default_api_timeout_ms
        deadline = Deadline.after_ms(self._clock, timeout)
        out: dict[TopicPartition, int] = {}

        def attempt() -> dict[TopicPartition, int]:
            asked = frozenset(wanted - set(out))
            found: dict[TopicPartition, int] = self._await_lookup(
                f"{spec} offsets", lambda ms: transport.list_offsets(asked, spec, ms), deadline.remaining_ms()
            )
            out.update(found)
            missing = wanted - set(out)
            if missing:
                raise _OffsetsMissing(sorted(map(str, missing)))
            return {tp: out[tp] for tp in wanted}

        backoff = exponential_backoff(self._config.retry_backoff_ms, self._config.retry_backoff_max_ms, self._rng)
        try:
            return self._mailbox.retry(
                attempt, deadline, retry_on=_LookupRetriable, backoff_s=backoff, what=f"{spec} offsets"
            )
        except _TransportFailed as failed:
            raise KafkaTimeoutError(f"{spec} offsets: no answer within {timeout} ms ({failed})") from None
        except _OffsetsMissing as missing:
            raise KafkaTimeoutError(
                f"{spec} offsets of {missing.args[0]} not found within {timeout} ms "
                "(no leader, or the topic or partition does not exist)"
            ) from None

    def _await_lookup(
        self, what: str, send: Callable[[int], concurrent.futures.Future[T]], timeout_ms: int
    ) -> T:
        """Send a lookup with ``timeout_ms`` and wait for it, honouring ``wakeup()``."""
        future = send(max(1, timeout_ms))
        if not self._mailbox.wait_future(future, timeout_ms / 1000):
            if self._mailbox.consume_wakeup():
                raise WakeupError(f"{what} interrupted by wakeup()")
            raise KafkaTimeoutError(f"{what}: no answer within {timeout_ms} ms")
        exc = future.exception()
        if exc is not None:
            if isinstance(exc, KGroupError):
                raise exc
            raise _TransportFailed(f"{what} failed: {exc}") from exc
        return future.result()

    def _ensure_transport(self) -> Transport:
        """The network client and the partition state (no group thread: lookups, assign())."""
        if self._transport is not None:
            return self._transport
        if self._transport_arg is not None:
            transport: Transport = self._transport_arg
        else:
            from kgroup._io.kafka_python import KafkaPythonTransport  # kafka-python: ~0.1-0.2 s, once

            kp = KafkaPythonTransport(self._config)
            kp.start_async()  # as Java: no call waits for the cluster unless it has a timeout
            self._bootstrapping = kp
            transport = kp
        self._transport = transport
        if self._parts is None:
            from kgroup._driver.partitions import PartitionState

            self._parts = PartitionState(transport.fetcher(), self._config.group_id)
        return transport

    # ------------------------------------------------------------------ manual assignment
    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Consume exactly ``partitions``, with no group membership (Java ``KafkaConsumer.assign``).

        No JoinGroup, no heartbeats, no listener callbacks: the application chose the
        partitions. Positions start from the group's committed offsets (``group_id``), else
        ``auto_offset_reset``; ``commit()``, ``commit_async()``, auto-commit and ``committed()``
        go to the group's coordinator with generation -1 and no member id, which Kafka accepts
        from a consumer outside the group (an active group with members refuses them:
        ``CommitFailedError``). Calling it again replaces the assignment; partitions kept keep
        their positions; ``assign([])`` is ``unsubscribe()``. ``poll()`` then works as usual.

        Args:
            partitions: ``TopicPartition``s (any topics).

        Raises:
            IllegalStateError: the consumer is subscribed (``subscribe()`` and ``assign()`` are
                mutually exclusive, as in Java: ``unsubscribe()`` first), or an element is not a
                ``TopicPartition``.
            ConsumerClosedError: after ``close()``.

        """
        self._check_open()
        if self._in_callback:
            raise IllegalStateError("assign() must not be called from a rebalance listener callback")
        wanted = frozenset(partitions)
        if not all(isinstance(tp, TopicPartition) for tp in wanted):
            raise IllegalStateError(f"assign() takes TopicPartitions, got {sorted(map(repr, wanted))}")
        if self._subscribed_at is not None:
            raise IllegalStateError(
                "subscription to topics, partitions and pattern are mutually exclusive: unsubscribe() first"
            )
        if not wanted:
            self.unsubscribe()
            return
        transport = self._ensure_transport()
        if self._group is None:
            from kgroup._driver.commits import OffsetsClient
            from kgroup._driver.standalone import StandaloneGroup

            standalone = StandaloneGroup(self._config, transport, self._clock)
            self._group = standalone  # type: ignore[assignment]  # it stands for the group thread
            self._offsets = OffsetsClient(
                self._config, transport, standalone,  # type: ignore[arg-type]  # the snapshot fields it reads
                self._mailbox, self._clock, self._rng, self._metrics,
            )
            if self._config.enable_auto_commit:
                self._next_auto_commit = self._clock.monotonic() + self._config.auto_commit_interval_ms / 1000
        self._manual = True
        log.info("group %s: assigned manually %s", self._config.group_id, sorted(map(str, wanted)))
        self._set_assignment(wanted)

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop fetching ``partitions`` (they stay assigned; no rebalance).

        Raises:
            IllegalStateError: a partition is not assigned.

        """
        self._check_open()
        for tp in partitions:
            self._require_assigned(tp)
            assert self._parts is not None
            self._parts.pause(tp)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        """Fetch ``partitions`` again.

        Raises:
            IllegalStateError: a partition is not assigned.

        """
        self._check_open()
        for tp in partitions:
            self._require_assigned(tp)
            assert self._parts is not None
            self._parts.resume(tp)

    def paused(self) -> frozenset[TopicPartition]:
        """Paused partitions."""
        return frozenset(self._parts.paused) if self._parts is not None else frozenset()

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions this consumer currently owns (as its listener last saw them)."""
        return self._assignment

    def group_metadata(self) -> GroupMetadata:
        """group_id, generation_id, member_id and group_instance_id (Java ``groupMetadata()``)."""
        snap = self._snapshot()
        generation_id = snap.generation.generation_id if snap else -1
        member_id = snap.generation.member_id if snap else ""
        return GroupMetadata(self._config.group_id, generation_id, member_id, self._config.group_instance_id)

    def member_state(self) -> MemberState:
        """The membership machine's state (for diagnostics)."""
        snap = self._snapshot()
        return snap.state if snap is not None else MemberState.UNJOINED

    def wakeup(self) -> None:
        """Interrupt a blocked or the next ``poll()``, ``commit()``, ``committed()``, ``position()``.

        That call raises ``WakeupError``. Safe from any thread; ``close()`` ignores it.
        """
        self._mailbox.wake()
        fetcher = self._fetcher
        if fetcher is not None:
            fetcher.wakeup()

    # ------------------------------------------------------------------ observability
    def highwater(self, tp: TopicPartition) -> int | None:
        """The high watermark of ``tp`` from its last fetch response, or None before one.

        No request is sent (as Java's ``currentLag`` and franz-go's per-partition high
        watermark): the value is as fresh as the last fetch of ``tp``.

        Raises:
            IllegalStateError: ``tp`` is not assigned to this consumer.

        """
        self._require_assigned(tp)
        assert self._parts is not None
        return self._parts.fetcher.highwater(tp)

    def current_lag(self, tp: TopicPartition) -> int | None:
        """``highwater(tp)`` minus the position of ``tp``, or None while either is unknown.

        Java ``KafkaConsumer.currentLag`` (KIP-695): no request is sent.

        Raises:
            IllegalStateError: ``tp`` is not assigned to this consumer.

        """
        self._require_assigned(tp)
        assert self._parts is not None
        fetcher = self._parts.fetcher
        high, position = fetcher.highwater(tp), fetcher.position(tp)
        if high is None or position is None:
            return None
        return max(0, high - position)

    def _lags(self) -> dict[tuple[str, int], int]:
        if self._parts is None:
            return {}
        fetcher = self._parts.fetcher
        lags = {}
        for tp in self._assignment:
            high, position = fetcher.highwater(tp), fetcher.position(tp)
            if high is not None and position is not None:
                lags[(tp.topic, tp.partition)] = max(0, high - position)
        return lags

    def metrics(self) -> dict[str, float]:
        """A snapshot of the consumer's metrics, keyed by the Java consumer's metric names.

        Returns:
            ``{name: value}`` for every name of ``kgroup.metrics.METRICS`` (its table gives
            each metric's unit: latencies in ms, ``*-seconds-ago`` in s, rates per second or
            per hour; NaN for a windowed statistic with no sample in the last 60 s), plus
            ``records-lag{topic=T,partition=P}`` for each assigned partition whose lag is known.

        Safe from any thread (a probe's or a metrics exporter's). Never blocks on the network.

        """
        return self._metrics.snapshot(len(self._assignment), self._lags())

    def health(self) -> HealthReport:
        """Liveness and readiness verdicts for probes (``kgroup.health`` explains each).

        Returns:
            A ``HealthReport``: ``state``, ``live``, ``ready``, ``reasons`` (why not).

        Safe from any thread; never blocks.

        """
        now = self._clock.monotonic()
        snap = self._snapshot()
        state = MemberState.CLOSED if self._closed else (snap.state if snap is not None else MemberState.UNJOINED)
        reasons: list[str] = []
        live = True
        if self._closed:
            live = False
            reasons.append("the consumer is closed")
        fatal = self._fatal or (snap.fatal if snap is not None else None)
        if fatal is not None or (self._group is not None and self._group.crashed is not None):
            live = False
            reasons.append(f"fatal error: {fatal if fatal is not None else self._group.crashed}")  # type: ignore[union-attr]
        last_poll = self._metrics.last_poll()
        since = self._subscribed_at if last_poll is None else last_poll
        max_poll_s = self._config.max_poll_interval_ms / 1000
        if not self._closed and since is not None and now - since > max_poll_s:
            live = False
            reasons.append(
                f"poll() not called for {now - since:.1f} s (max_poll_interval_ms is "
                f"{self._config.max_poll_interval_ms})"
            )
        ready = live
        if live and self._manual:
            if snap is None or snap.coordinator is None:
                ready = False
                reasons.append("the group's coordinator (for commits) is not known yet")
        elif live:
            if snap is None or snap.state is not MemberState.STABLE or snap.generation.generation_id < 0:
                ready = False
                reasons.append(f"not a stable member of a generation yet (state {state.name})")
            ok_at = self._metrics.last_group_ok
            session_s = self._config.session_timeout_ms / 1000
            if ok_at is None or now - ok_at > session_s:
                ready = False
                ago = "never" if ok_at is None else f"{now - ok_at:.1f} s ago"
                reasons.append(
                    f"no successful response from the group coordinator within session_timeout_ms "
                    f"({self._config.session_timeout_ms} ms; last: {ago})"
                )
        return HealthReport(
            state=state,
            live=live,
            ready=ready,
            reasons=tuple(reasons),
            last_poll_seconds_ago=-1.0 if last_poll is None else now - last_poll,
            assigned_partitions=len(self._assignment),
        )

    def serve_health(self, port: int = 8080, host: str = "0.0.0.0") -> HealthServer:
        """Serve ``/livez``, ``/readyz`` and ``/metrics`` over HTTP until ``close()``.

        Args:
            port: TCP port (0: any free one; read ``HealthServer.port``).
            host: the address to bind (default all interfaces, as probes come from the kubelet).

        Returns:
            The running ``HealthServer`` (``kgroup.health`` documents the answers).

        Raises:
            OSError: the port is taken.
            ConsumerClosedError: after ``close()``.

        """
        if self._closed:
            raise ConsumerClosedError("the consumer is closed")
        server = HealthServer(self, host, port)
        self._health_servers.append(server)
        return server

    # ------------------------------------------------------------------ close
    def _leave(
        self, group: GroupThread, deadline: float, send_leave_group: bool | None, reason: str, what: str,
        timeout_ms: int,
    ) -> None:
        """Revoke (callbacks, commit) and leave or remain as ``send_leave_group`` says, by ``deadline``."""
        assert self._offsets is not None
        self._offsets.wait_async(deadline)
        group.post(ev.Leave(reason, send_leave_group=send_leave_group))

        def settled() -> bool:
            return self._mailbox.has_items() or group.snapshot.state in (MemberState.CLOSED, MemberState.FATAL)

        while self._clock.monotonic() < deadline:
            self._drain_mailbox(None)
            if group.snapshot.state in (MemberState.CLOSED, MemberState.FATAL) or group.crashed:
                return
            self._mailbox.wait_until(settled, deadline - self._clock.monotonic())
        log.warning(
            "group %s: %s gave up after %d ms with the member still %s (a request to the coordinator, "
            "such as a JoinGroup parked until the rebalance completes, had not been answered); the "
            "coordinator removes the member after session_timeout_ms (%d ms)",
            self._config.group_id, what, timeout_ms, group.snapshot.state.name, self._config.session_timeout_ms,
        )

    def unsubscribe(self, timeout_ms: int | None = None) -> None:
        """Stop consuming: revoke the partitions (with callbacks) and leave the group (Java ``unsubscribe``).

        ``on_partitions_revoked`` runs for the owned partitions (``on_partitions_lost`` if the
        generation is gone), after the auto-commit if enabled; a dynamic member then sends
        LeaveGroup, a static one does not (as Java, KIP-345: its session keeps the partitions
        until it subscribes again or the session expires). A later ``subscribe()`` joins the
        group again: under ``group_protocol="classic"`` as a new member for a dynamic consumer;
        under ``"consumer"`` with the same member id, which the consumer keeps for its lifetime
        (KIP-1082), at epoch 0. A no-op when not subscribed.

        Args:
            timeout_ms: the longest to wait for the commit, the callbacks and LeaveGroup, in ms
                (default: default_api_timeout_ms).

        Raises:
            IllegalStateError: called from inside a listener callback.
            ListenerError: a callback raised (the consumer is unsubscribed all the same).
            ConsumerClosedError: after ``close()``.

        """
        self._check_open()
        if self._in_callback:
            raise IllegalStateError("unsubscribe() must not be called from a rebalance listener callback")
        group = self._group
        if self._manual:
            self._drop_manual_assignment(timeout_ms)
            return
        if group is None or self._subscribed_at is None:
            return
        timeout = timeout_ms if timeout_ms is not None else self._config.default_api_timeout_ms
        deadline = self._clock.monotonic() + timeout / 1000
        self._close_deadline = deadline
        try:
            self._leave(group, deadline, None, "the consumer unsubscribed from all topics", "unsubscribe()", timeout)
        finally:
            self._close_deadline = None
            self._runtime.stop(group, _GROUP_STOP_S)
            self._group = None
            self._offsets = None
            self._subscribed_at = None
            self._pattern = None
            self._pattern_lookup = None
            if self._parts is not None:
                self._set_assignment(frozenset())
            self._next_auto_commit = float("inf")
        self._raise_pending()

    def _drop_manual_assignment(self, timeout_ms: int | None) -> None:
        """End a manual assignment: the auto-commit, if enabled, then nothing is assigned."""
        if self._config.enable_auto_commit and self._assignment:
            timeout = timeout_ms if timeout_ms is not None else self._config.default_api_timeout_ms
            self._close_deadline = self._clock.monotonic() + timeout / 1000
            try:
                self._auto_commit_sync()
            finally:
                self._close_deadline = None
        self._set_assignment(frozenset())
        self._manual = False
        self._group = None
        self._offsets = None
        self._next_auto_commit = float("inf")

    def close(
        self,
        timeout_ms: int = 30000,
        *,
        group_membership: GroupMembershipOperation = "default",
        reason: str = "the consumer is being closed",
    ) -> None:
        """Leave the group (or not) and release resources, within ``timeout_ms``.

        Waits for pending async commits, then runs ``on_partitions_revoked`` for owned
        partitions (after the auto-commit, if enabled; ``on_partitions_lost`` if the
        generation is no longer valid), then, depending on ``group_membership`` (KIP-1092's
        ``CloseOptions.GroupMembershipOperation``):

        * ``"default"``: a dynamic member sends LeaveGroup, a static member (``group_instance_id``
          set) does not and stays in the group until its session timeout, so a restart within
          ``session_timeout_ms`` gets its partitions back without a rebalance (KIP-345);
        * ``"remain"``: no LeaveGroup, also for a dynamic member (the coordinator expires it
          after ``session_timeout_ms``);
        * ``"leave"``: LeaveGroup (v3+, with the instance id for a static member): use it when
          scaling a static deployment down, so its partitions move at once.

        Every wait (async commits, the revoke commit, the callbacks' step, LeaveGroup) is
        bounded by ``timeout_ms``; then the group thread gets up to 5 s to stop (it is idle by
        then: milliseconds) and the network client closes. A listener's own work is not bounded
        (as in Java). When the member is still in a rebalance at the deadline, ``close()`` logs a
        warning and returns: the coordinator removes the member after ``session_timeout_ms``. A
        LeaveGroup does not wait behind a JoinGroup parked at the coordinator (it takes the
        broker's other connection). ``wakeup()`` does not interrupt ``close()``. Idempotent.
        docs/production.md explains how to size ``timeout_ms`` against a platform's grace
        period.

        Args:
            timeout_ms: the longest close waits for commits, callbacks and LeaveGroup, in ms.
            group_membership: ``"default"``, ``"remain"`` or ``"leave"``.
            reason: the KIP-800 reason sent with LeaveGroup (cut to 255 characters).

        Raises:
            IllegalStateError: called from inside a listener callback.
            ConfigError: ``group_membership`` is not one of the three values.
            KGroupError: a listener callback raised during close (``__cause__`` is its
                ``ListenerError``); the consumer is closed all the same (Java
                ``KafkaConsumer.close``: "Failed to close kafka consumer").

        """
        if group_membership not in _CLOSE_POLICIES:
            raise ConfigError(
                "group_membership", f"must be one of {sorted(_CLOSE_POLICIES)}, got {group_membership!r}"
            )
        if self._in_callback:
            raise IllegalStateError("close() must not be called from a rebalance listener callback")
        if self._closed or self._closing:
            return
        # not yet _closed: commit() must keep working inside the close revoke callback
        self._closing = True
        self._mailbox.disable_wakeups()  # wakeup() does not interrupt close() (Java: disableWakeups)
        group = self._group
        deadline = self._clock.monotonic() + timeout_ms / 1000
        self._close_deadline = deadline
        errors_before = len(self._errors)
        try:
            if self._manual and self._fatal is None:
                if self._config.enable_auto_commit and self._assignment:
                    self._auto_commit_sync()  # Java's close: maybeAutoCommitOffsetsSync, no group to leave
            elif group is not None and self._fatal is None:
                self._leave(group, deadline, _CLOSE_POLICIES[group_membership], reason, "close()", timeout_ms)
        finally:
            self._closed = True
            self._close_deadline = None
            for server in self._health_servers:
                server.close()
            if group is not None:
                self._runtime.stop(group, _GROUP_STOP_S)
            if self._transport is not None and self._transport_arg is None:
                self._transport.close()
            log.info("group %s: consumer closed", self._config.group_id)
        failures = self._errors[errors_before:]
        listener_errors = [e for e in failures if isinstance(e, ListenerError)]
        for error in failures:
            log.warning("group %s: error during close: %s", self._config.group_id, error)
        if listener_errors:
            raise KGroupError(f"failed to close the consumer: {listener_errors[0]}") from listener_errors[0]
