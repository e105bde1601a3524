"""``kgroup.Consumer``: the public facade, run on the application's ("poll") thread.

Threads (``docs/protocol.md``): the caller's thread runs ``poll()``, listener callbacks,
commits and offset lookups; the group thread (``kgroup._driver.group_thread``) owns the
membership machine, heartbeats and the leader's assignor; kafka-python's IO thread owns the
sockets and completes request futures. They share only the group thread's inbox, the mailbox
and a published snapshot. The facade composes two poll-thread objects that never import it:
``PartitionState`` (``kgroup._driver.partitions``: assignment, pauses, positions, held
records) and ``OffsetsClient`` (``kgroup._driver.commits``: OffsetCommit and OffsetFetch).

``poll()`` is ``kgroup._driver.poll_loop``'s loop; the rest of what the poll thread runs lives
beside it in ``kgroup._driver``: the rebalance steps and listener callbacks (``steps``), the
offset look-ups (``lookups``), the auto-commit (``autocommit``), pattern subscription
(``patterns``), manual assignment (``assign``) and leaving the group (``closing``). The group
is reached through ``kgroup._driver.port.GroupPort``.
"""

from __future__ import annotations

import concurrent.futures
import logging
import math
import random
import re
import sys
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic

from kgroup._lazy import lazy_getattr
from kgroup._leaving_api import LeavingAPI
from kgroup._observability_api import ObservabilityAPI
from kgroup._positions_api import PositionsAPI
from kgroup._typevars import K, V
from kgroup.errors import (
    ConsumerClosedError,
    FatalGroupError,
    GroupThreadCrashed,
    IllegalStateError,
    KGroupError,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

    # Bound by the first ``Consumer(...)``, not by ``from kgroup import Consumer``
    # (tests/unit/test_import_time.py): ``_DEFERRED`` below names the ones read at run time.
    from kgroup._clock import Clock, MonotonicClock
    from kgroup._driver.autocommit import AutoCommit, prepare_offsets
    from kgroup._driver.commits import OffsetsClient
    from kgroup._driver.group_thread import GroupThread
    from kgroup._driver.lookups import OffsetLookups
    from kgroup._driver.partitions import PartitionState
    from kgroup._driver.patterns import PatternSubscription, compile_pattern
    from kgroup._driver.poll_loop import PollLoop
    from kgroup._driver.port import GroupPort, GroupView
    from kgroup._driver.runtime import Runtime, Threads
    from kgroup._driver.steps import ListenerSteps
    from kgroup._io.transport import Transport
    from kgroup.columns import RecordColumns
    from kgroup.config import ConsumerArgs, ConsumerConfig, resolve_bootstrap_servers
    from kgroup.deserializers import DeserializerLike, as_function
    from kgroup.health import HealthServer
    from kgroup.listener import RebalanceListener
    from kgroup.membership.commands import RebalanceStep
    from kgroup.membership.consumer_group_states import MemberState as ConsumerMemberState
    from kgroup.membership.events import RequestRejoin, Subscribe
    from kgroup.membership.states import MemberState
    from kgroup.metrics import Recorder
    from kgroup.types import ConsumerRecord, Generation, GroupMetadata, OffsetAndMetadata, TopicPartition

__all__ = ["Consumer"]

log = logging.getLogger(__name__)

#: the names this module reads at run time that ``from kgroup import Consumer`` must not import
#: (about 80 attrs classes, and attrs): module -> names.
#: The first ``Consumer(...)`` binds them all as globals (``_import_deferred``), before any method
#: can run; ``subscribe()`` then finds the same modules loaded as when they were top-level
#: imports. kafka-python, the group thread and its machine are imported where first used
#: (subscribe(), assign(), a look-up; benchmarks/startup.py).
_DEFERRED: dict[str, tuple[str, ...]] = {
    "kgroup._clock": ("MonotonicClock",),
    "kgroup._driver.autocommit": ("AutoCommit", "prepare_offsets"),
    "kgroup._driver.lookups": ("OffsetLookups",),
    "kgroup._driver.patterns": ("PatternSubscription", "compile_pattern"),
    "kgroup._driver.poll_loop": ("PollLoop",),
    "kgroup._driver.runtime": ("Threads",),
    "kgroup._driver.steps": ("ListenerSteps",),
    "kgroup._io.transport": ("Transport",),  # the port: loaded now, not at subscribe()
    "kgroup.config": ("ConsumerConfig", "resolve_bootstrap_servers"),
    "kgroup.deserializers": ("as_function",),
    "kgroup.health": ("HealthServer",),
    "kgroup.membership.events": ("RequestRejoin", "Subscribe"),
    "kgroup.membership.states": ("MemberState",),
    "kgroup.metrics": ("Recorder",),
}
_MODULE_OF: dict[str, str] = {name: module for module, names in _DEFERRED.items() for name in names}

if not TYPE_CHECKING:  # type checkers see the imports above; a module __getattr__ would hide typos
    __getattr__ = lazy_getattr(__name__, _MODULE_OF)


def _held(generation: Generation, group_protocol: str) -> bool:
    """Whether ``generation`` is one the member holds.

    A classic generation from 0 up (a broker may start at 0), a member epoch above 0 (0 is
    joining, below 0 left; KIP-848).
    """
    if group_protocol == "consumer":
        return generation.generation_id > 0
    return generation.generation_id >= 0


def _import_deferred() -> None:
    """Bind every name of ``_DEFERRED`` (the module ``__getattr__`` imports each once)."""
    this = sys.modules[__name__]
    for name in _MODULE_OF:
        getattr(this, name)


class Consumer(PositionsAPI, ObservabilityAPI, LeavingAPI, Generic[K, V]):
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
        _runtime: Runtime | None = None,
        **kwargs: Unpack[ConsumerArgs],
    ) -> None:
        _import_deferred()
        if config is None:
            config = ConsumerConfig.from_kwargs(**kwargs)
        elif kwargs:
            raise TypeError("pass either a ConsumerConfig or keyword arguments, not both")
        if transport is None and _runtime is None:
            # Java's KafkaConsumer resolves bootstrap.servers in its constructor (ClientUtils)
            resolve_bootstrap_servers(config.bootstrap_servers)
        self._config = config
        self._clock = clock or MonotonicClock()
        self._runtime: Runtime = _runtime or Threads()
        self._transport_arg = transport
        self._transport: Transport | None = None
        self._parts: PartitionState | None = None
        self._offsets: OffsetsClient | None = None
        self._mailbox = self._runtime.mailbox()
        #: the group thread, or the StandaloneGroup that stands for it after assign()
        self._group: GroupPort | None = None
        #: the group thread the runtime runs (None before subscribe() and under assign())
        self._group_thread: GroupThread | None = None
        self._errors: list[Exception] = []
        self._fatal: Exception | None = None
        #: the assignment and the paused partitions, published by the poll thread whenever they
        #: change, for reads from other threads (health(), the asyncio wrapper's paused()):
        #: PartitionState itself is the poll thread's only
        self._published: tuple[frozenset[TopicPartition], frozenset[TopicPartition]] = (frozenset(), frozenset())
        self._closed = False
        self._closing = False
        self._rng = random.Random()
        self._metrics = Recorder(self._clock, group_protocol=config.group_protocol)
        #: the listener and the rebalance steps it runs; the offset look-ups; the auto-commit
        self._steps = ListenerSteps(config, self._clock, self._metrics, self._errors)
        self._lookups = OffsetLookups(config, self._clock, self._mailbox, self._rng)
        self._auto_commit = AutoCommit(config, self._clock)
        self._poll = PollLoop(
            config, self._clock, self._mailbox, self._metrics, self._runtime.fetch_slice_ms,
            as_function(key_deserializer), as_function(value_deserializer),
        )
        self._health_servers: list[HealthServer] = []
        self._subscribed_at: float | None = None
        #: assign() was called: no group membership, a StandaloneGroup stands for the group thread
        self._manual = False
        #: a pattern subscription under the classic protocol
        self._patterns = PatternSubscription(config, self._clock)
        #: the member id under group_protocol="consumer", from the first subscribe() on (KIP-1082)
        self._member_id: str | None = None
        #: the generation of the last rebalance step run here: group_metadata() once it is reset
        self._held_generation: Generation | None = None

    # ------------------------------------------------------------------ properties
    @property
    def config(self) -> ConsumerConfig:
        """The consumer's configuration."""
        return self._config

    def _snapshot(self) -> GroupView | None:
        return self._group.snapshot if self._group is not None else None

    @property
    def _assignment(self) -> frozenset[TopicPartition]:
        return self._published[0]

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

        thread = GroupThread(
            self._config, transport, self._mailbox, self._clock, self._rng, self._metrics, member_id=self._member_id
        )
        self._group = self._group_thread = thread
        if self._member_id is None:
            # the consumer protocol's member id: generated once and kept for the consumer's lifetime,
            # across unsubscribe() and subscribe() too (KIP-1082; Java's AbstractMembershipManager)
            self._member_id = thread.consumer_member_id
        self._offsets = OffsetsClient(
            self._config, transport, thread, self._mailbox, self._clock, self._rng, self._metrics
        )
        self._runtime.start(thread)
        self._auto_commit.start()

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
            compiled = compile_pattern(pattern)
        else:
            assert topics is not None
            if isinstance(topics, str):
                topics = (topics,)
            wanted = frozenset(topics)
            if not wanted or not all(isinstance(t, str) and t for t in wanted):
                raise IllegalStateError(f"subscribe() needs a non-empty list of topic names, got {topics!r}")
        self._start_subscription(listener)
        assert self._group is not None
        self._patterns.follow(compiled)
        if compiled is None:
            self._group.post(Subscribe(wanted))
        else:
            self._maybe_match_pattern()  # the lookup goes out now; poll() applies its answer

    def _start_subscription(self, listener: RebalanceListener | None) -> None:
        """Take the listener (``IllegalStateError`` if it is not a ``RebalanceListener``), start the group."""
        self._steps.set_listener(listener)
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
        self._patterns.stop()
        self._group.post(Subscribe(frozenset(), pattern=text))

    def _maybe_match_pattern(self) -> None:
        """Pattern subscription: list the topics when due, and follow the match (``kgroup._driver.patterns``)."""
        if self._group is not None:
            self._patterns.maybe_match(self._group, self._transport)

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
        self._group.post(RequestRejoin(reason or "rebalance enforced by user"))

    @property
    def rebalance_reason(self) -> str:
        """Why the current (or last) rebalance happened: read it inside a listener callback.

        The reason of the rebalance step being run (a rejoin's reason, "generation N assigned",
        the close reason, ...); empty before the first rebalance.
        """
        return self._steps.reason

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
        """The loop of ``poll()`` and ``poll_columns()`` (``kgroup._driver.poll_loop``)."""
        return self._poll.run(self, timeout_ms, max_records, columns=columns)

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

    def _raise_pending(self) -> None:
        if self._fatal is not None:
            raise self._fatal.with_traceback(None)
        if self._errors:
            error = self._errors.pop(0)
            raise error

    def _drain_mailbox(self, records: list[Any] | None, *, columns: bool = False) -> list[Any]:
        """Run every delivered step; drop records (``columns``: RecordColumns) of partitions taken away (acquiesce)."""
        return self._steps.drain(self, records, columns=columns)

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
        self._steps.raise_interrupt()

    # ------------------------------------------------------------------ rebalance steps
    def _set_assignment(self, partitions: frozenset[TopicPartition]) -> None:
        assert self._parts is not None
        self._parts.set_assignment(partitions)
        self._publish()
        self._lookups.assignment_changed(partitions)

    def _publish(self) -> None:
        """Publish the assignment and the paused partitions (poll thread; one reference, read anywhere)."""
        assert self._parts is not None
        self._published = (self._parts.assignment, frozenset(self._parts.paused))

    def _invoke(self, callback: str, partitions: frozenset[TopicPartition]) -> None:
        """Call the listener's ``callback`` (``kgroup._driver.steps``; the simulator records these)."""
        self._steps.invoke(callback, partitions)

    def _run_step(self, step: RebalanceStep) -> None:
        """Run one rebalance step's callbacks, then ``StepCompleted`` (the simulator times these)."""
        if _held(step.generation, self._config.group_protocol):
            self._held_generation = step.generation  # group_metadata() after the generation is gone
        self._steps.run(self, step)

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
        """Positions for assigned partitions that have none, within ``deadline`` (``kgroup._driver.lookups``)."""
        if self._fatal is not None or self._group is None:
            return
        assert self._parts is not None
        assert self._offsets is not None
        self._lookups.update_positions(self._parts, self._offsets, self._group, deadline)

    # ------------------------------------------------------------------ commits
    def _maybe_auto_commit(self) -> None:
        """One async auto-commit per interval (``kgroup._driver.autocommit``)."""
        if self._parts is not None and self._offsets is not None:
            self._auto_commit.maybe_commit(self._snapshot(), self._assignment, self._parts, self._offsets)

    def _auto_commit_sync(self) -> None:
        """The revoke step's commit (Java ``maybeAutoCommitOffsetsSync``)."""
        assert self._parts is not None
        assert self._offsets is not None
        self._auto_commit.commit_sync(self._assignment, self._parts, self._offsets)

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
        return prepare_offsets(offsets, self._parts, self._assignment)

    def _require_assigned(self, tp: TopicPartition) -> None:
        if tp not in self._assignment:
            raise IllegalStateError(f"partition {tp} is not assigned to this consumer")

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
            self._poll.bootstrapping = kp
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
        if self._steps.in_callback:
            raise IllegalStateError("assign() must not be called from a rebalance listener callback")
        from kgroup._driver.assign import checked_partitions, standalone_group  # with the offsets client

        wanted = checked_partitions(partitions)
        if self._subscribed_at is not None:
            raise IllegalStateError(
                "subscription to topics, partitions and pattern are mutually exclusive: unsubscribe() first"
            )
        if not wanted:
            self.unsubscribe()
            return
        transport = self._ensure_transport()
        if self._group is None:  # a StandaloneGroup stands for the group thread
            self._group, self._offsets = standalone_group(
                self._config, transport, self._mailbox, self._clock, self._rng, self._metrics
            )
            self._auto_commit.start()
        self._manual = True
        log.info("group %s: assigned manually %s", self._config.group_id, sorted(map(str, wanted)))
        self._set_assignment(wanted)

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop fetching ``partitions`` (they stay assigned; no rebalance).

        Raises:
            IllegalStateError: a partition is not assigned.

        """
        self._pause(partitions, pause=True)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        """Fetch ``partitions`` again.

        Raises:
            IllegalStateError: a partition is not assigned.

        """
        self._pause(partitions, pause=False)

    def _pause(self, partitions: Iterable[TopicPartition], *, pause: bool) -> None:
        self._check_open()
        try:
            for tp in partitions:
                self._require_assigned(tp)
                assert self._parts is not None
                if pause:
                    self._parts.pause(tp)
                else:
                    self._parts.resume(tp)
        finally:
            if self._parts is not None:
                self._publish()  # also when a partition before the failing one changed

    def paused(self) -> frozenset[TopicPartition]:
        """Paused partitions."""
        return self._published[1]

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions this consumer currently owns (as its listener last saw them)."""
        return self._assignment

    def group_metadata(self) -> GroupMetadata:
        """The member's identity for transactional offset commits (Java ``KafkaConsumer.groupMetadata()``).

        kafka-python's own ``ConsumerGroupMetadata`` (group_id, generation_id, member_id,
        group_instance_id, state), as ``KafkaProducer.send_offsets_to_transaction(offsets,
        consumer.group_metadata())`` takes it: the group coordinator then commits the offsets
        with the transaction only while this member holds that generation, and fences a
        member that lost it (KIP-447, Java ``KafkaProducer.sendOffsetsToTransaction``;
        docs/exactly-once.md). Under ``group_protocol="consumer"`` the member epoch stands in
        the generation's place, as in Java. Before the member first joined: generation -1 and
        member id "" (Java's ``ConsumerGroupMetadata`` of a new consumer); after it lost its
        generation, the last one it held until it joins again (never -1, which the coordinator
        would take as "no member" and not fence). Under ``assign()``, no membership: -1 and "".
        """
        from kgroup._io.kafka_transactions import consumer_group_metadata

        snap = self._snapshot()
        generation = None if self._manual else self._held_generation  # assign(): no membership
        if snap is not None and _held(snap.generation, self._config.group_protocol):
            generation = snap.generation
        generation_id, member_id = (generation.generation_id, generation.member_id) if generation else (-1, "")
        return consumer_group_metadata(
            self._config.group_id, generation_id, member_id, self._config.group_instance_id, self.member_state().name
        )

    def member_state(self) -> MemberState | ConsumerMemberState:
        """The membership machine's own state (for diagnostics).

        Under ``group_protocol="classic"`` the classic machine's (``kgroup.MemberState``: UNJOINED,
        JOINING, SYNCING, STABLE, ...); under ``"consumer"`` the consumer protocol's
        (``kgroup.membership.consumer_group.MemberState``, Java's ``MemberState``: UNSUBSCRIBED,
        JOINING, RECONCILING, ACKNOWLEDGING, STABLE, FENCED, ...; UNSUBSCRIBED before ``subscribe()``
        and with ``assign()``, as Java's). Both call the settled member STABLE: ``.name == "STABLE"``
        holds under either.
        """
        snap = self._snapshot()
        if self._config.group_protocol == "consumer":
            from kgroup.membership.consumer_group_states import MemberState as ConsumerMemberState

            name = getattr(snap, "state_name", "")  # a manual assignment's snapshot has none
            return ConsumerMemberState.__members__.get(name, ConsumerMemberState.UNSUBSCRIBED)
        return snap.state if snap is not None else MemberState.UNJOINED

    def wakeup(self) -> None:
        """Interrupt a blocked or the next ``poll()``, ``commit()``, ``committed()``, ``position()``.

        That call raises ``WakeupError``. Safe from any thread; ``close()`` ignores it.
        """
        self._mailbox.wake()
        fetcher = self._fetcher
        if fetcher is not None:
            fetcher.wakeup()
