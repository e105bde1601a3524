"""GroupThread: the one thread that owns the membership machine (and is its heartbeat thread).

Rules (docs/protocol.md):

1. The machine (``GroupMachine``, or ``ConsumerGroupMachine`` with ``group_protocol="consumer"``,
   or a share group's ``ShareGroupMachine`` with ``share=True``, each a
   ``kgroup.membership.core.Member``) is touched only here. Other threads talk to it by
   ``post(event)`` into a ``queue.SimpleQueue``; it talks back through the ``Mailbox`` (steps, errors) and a published
   ``MemberSnapshot`` (rebinding one attribute: atomic).
2. Responses arrive from kafka-python's IO thread as events in the same inbox.
3. Listener callbacks never run here; assignors do (they are pure and fast).
4. The loop sleeps until the machine's next deadline or the next event: heartbeats and the
   ``max_poll_interval_ms`` watchdog keep running while the poll thread runs user code.
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import random
import threading
from collections.abc import Mapping
from typing import Any, cast
from uuid import UUID

import attrs

from kgroup._clock import Clock
from kgroup._driver.leader_watch import LeaderWatch, ThreadView
from kgroup._driver.mailbox import Mailbox
from kgroup._driver.metadata import MetadataCache, MetadataFuture
from kgroup._io.transport import ConsumerGroupTransport, ShareGroupTransport, Transport
from kgroup.assignors.base import Assignor, MemberSubscription
from kgroup.assignors.validate import validate_plan, validation_protocol
from kgroup.config import ConsumerConfig
from kgroup.errors import AssignmentError, BrokerError, GroupThreadCrashed, KGroupError
from kgroup.membership import events as ev
from kgroup.membership.commands import (
    Command,
    ComputeAssignment,
    DeliverStep,
    Fail,
    Notify,
    RequestMetadata,
    SendConsumerGroupHeartbeat,
    SendGroupRequest,
    SendHeartbeat,
    SendJoinGroup,
    SendSyncGroup,
    WatchGroupTopics,
)
from kgroup.membership.consumer_group import ConsumerGroupMachine
from kgroup.membership.core import Member, MemberSnapshot
from kgroup.membership.machine import GroupMachine
from kgroup.membership.share_group import SendShareGroupHeartbeat, ShareGroupMachine
from kgroup.membership.states import MemberState
from kgroup.metrics import Recorder
from kgroup.protocol.consumer_protocol import Assignment, encode_assignment
from kgroup.types import PartitionInfo

__all__ = ["GroupThread"]

log = logging.getLogger(__name__)

_STOP = object()
_STALE = object()


@attrs.frozen
class _MetadataReady:
    """Metadata for the leader's assignment arrived (an inbox item of this thread only)."""

    command: ComputeAssignment
    assignor: Assignor
    future: MetadataFuture


@attrs.frozen
class _TopicIds:
    """Topic ids for the consumer protocol's assignment arrived (an inbox item of this thread only)."""

    future: concurrent.futures.Future[dict[UUID, str]]


@attrs.frozen
class _SessionTimeout:
    """DescribeConfigs answered for the group's session timeout (an inbox item of this thread only)."""

    future: concurrent.futures.Future[dict[str, str | None]]


#: the group config the consumer-protocol member's session timer needs (KIP-848's per-group
#: override of the broker's ``group.consumer.session.timeout.ms``; DescribeConfigs answers with
#: the broker's value for a group without its own)
SESSION_TIMEOUT_CONFIG = "consumer.session.timeout.ms"
#: a ``Polled`` posted within this long (s) of the last one, with no other event posted between
#: them, is dropped: the machine learns nothing from it but a watchdog reset this much later
#: (``max_poll_interval_ms``, KIP-62), and waking this thread at every ``poll()`` (thousands a
#: second) kept the network thread from the GIL: CPython hands it over only after a switch
#: interval with no other thread taking it, and each wake-up took it
POLLED_COALESCE_S = 0.05


#: the group requests ``Consumer.metrics()`` times, by the name the recorder knows them by
_METRIC_APIS: dict[type, str] = {SendJoinGroup: "join", SendSyncGroup: "sync", SendHeartbeat: "heartbeat"}


class GroupThread:
    """Runs the membership machine on a daemon thread named ``kgroup-<group_id>``.

    ``GroupMachine`` for ``group_protocol="classic"``; ``ConsumerGroupMachine`` (KIP-848) for
    ``"consumer"``, whose heartbeats go through the transport's ``consumer_group_heartbeat``
    and whose topic-id lookups through ``topic_ids`` (``ConsumerGroupTransport``);
    ``ShareGroupMachine`` (KIP-932) with ``share=True``, whose heartbeats go through the
    transport's ``share_group_heartbeat`` (``ShareGroupTransport``) and whose topic ids are
    looked up the same way (no leader watch, no session-timeout look-up: the share
    coordinator assigns, and the share consumer's ``poll()`` has no records to hold). Every
    machine's ``max_poll_interval_ms`` watchdog is its own deadline (``next_deadline``, ``tick``),
    fed by the ``Polled`` events ``poll()`` posts: the loop needs nothing more for it.

    Args:
        config: consumer configuration.
        transport: the network port.
        mailbox: where steps and errors for the poll thread go.
        clock: time source (``FakeClock`` in tests).
        rng: randomness for backoff jitter.
        member_id: under ``"consumer"``, the member id to join with (the consumer's, kept across
            subscriptions, KIP-1082); None generates one.
        share: run a share group's member (``ShareGroupMachine``) instead of a consumer group's.

    """

    def __init__(
        self,
        config: ConsumerConfig,
        transport: Transport,
        mailbox: Mailbox,
        clock: Clock,
        rng: random.Random | None = None,
        metrics: Recorder | None = None,
        *,
        member_id: str | None = None,
        share: bool = False,
    ) -> None:
        self._config = config
        #: where group requests and rebalances are recorded (``Consumer.metrics()``)
        self.metrics = metrics if metrics is not None else Recorder(clock)
        self._transport = transport
        self._mailbox = mailbox
        self._clock = clock
        self._share = share
        self._consumer_protocol = config.group_protocol == "consumer" and not share
        self._machine: Member
        if share:
            self._machine = ShareGroupMachine(config, rng=rng)
        elif self._consumer_protocol:
            self._machine = ConsumerGroupMachine(
                config, server_assignor=config.group_remote_assignor, rng=rng, member_id=member_id
            )
        else:
            self._machine = GroupMachine(config, rng=rng)
        self._inbox: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._post_lock = threading.Lock()
        self._polled_posted_at: float | None = None  # the last event posted was a Polled, at this time
        self._thread = threading.Thread(target=self._run, name=f"kgroup-{config.group_id}", daemon=True)
        self._snapshot: MemberSnapshot = self._machine.snapshot()
        self._assignors: Mapping[str, Assignor] = {a.name: a for a in config.assignors}
        self._metadata = MetadataCache(transport, config, clock)
        self._crashed: Exception | None = None
        #: the classic leader's metadata watch and ownership check (None: the consumer protocol,
        #: whose coordinator watches the metadata)
        view = ThreadView(self.post, lambda: self._snapshot, self._machine.snapshot)
        self._leader: LeaderWatch | None = (
            None if self._consumer_protocol or share else LeaderWatch(config, transport, self._metadata, clock, view)
        )
        #: ident of the thread the assignor last ran on (tests assert it is this loop's thread)
        self.assignor_thread: int | None = None
        #: the consumer protocol's session timer: when DescribeConfigs next asks for the group's
        #: session timeout (None: the member has not joined yet), whether a request is out, and
        #: whether a failure was logged (once, until one succeeds)
        self._session_config_at: float | None = None
        self._session_config_out = False
        self._session_config_failed = False

    @property
    def snapshot(self) -> MemberSnapshot:
        """The latest published view of the machine (any thread)."""
        return self._snapshot

    @property
    def consumer_member_id(self) -> str | None:
        """The consumer protocol's member id, generated by the member (KIP-1082); None under ``"classic"``."""
        return self._machine.member_id if self._consumer_protocol else None

    @property
    def share_member_id(self) -> str | None:
        """A share group's member id, generated by the member (KIP-932, as KIP-1082); None for other groups."""
        return self._machine.member_id if self._share else None

    @property
    def consumer_session_timeout_ms(self) -> int | None:
        """The consumer protocol's group session timeout from DescribeConfigs; None while unknown, or classic."""
        return self._machine.session_timeout_ms if self._consumer_protocol else None

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def post(self, event: object) -> None:
        """Queue an event for the machine (any thread); a ``Polled`` may be coalesced (``POLLED_COALESCE_S``)."""
        polled = isinstance(event, ev.Polled)
        now = self._clock.monotonic() if polled else 0.0
        with self._post_lock:
            if polled:
                last = self._polled_posted_at
                if last is not None and now - last < POLLED_COALESCE_S:
                    return
                self._polled_posted_at = now
            else:
                self._polled_posted_at = None
            self._inbox.put(event)

    def stop(self, timeout_s: float) -> None:
        """Stop the loop and join the thread (any thread but this one)."""
        self._inbox.put(_STOP)
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout_s)

    # ------------------------------------------------------------------ the loop
    def _run(self) -> None:
        if not self.step(None):
            return
        while True:
            timeout = self.next_deadline() - self._clock.monotonic()
            try:
                item = self._inbox.get(timeout=min(max(timeout, 0.0), 1.0))
            except queue.Empty:
                item = None
            if item is _STOP or not self.step(item):
                return

    def next_deadline(self) -> float:
        """Clock seconds at which ``step(None)`` has timer work (heartbeat, session, watchdog, DescribeConfigs)."""
        now = self._clock.monotonic()
        deadline = self._machine.next_deadline(now)
        at = self._session_config_at
        if (
            at is not None
            and not self._session_config_out
            and self._crashed is None
            and self._snapshot.state not in (MemberState.CLOSED, MemberState.FATAL)
        ):
            deadline = min(deadline, max(at, now))
        return deadline

    def metadata_stale(self) -> None:
        """Fetching found a topic deleted: refresh metadata now, not at ``metadata_max_age_ms`` (any thread).

        Java's Fetcher requests a metadata update on UNKNOWN_TOPIC_OR_PARTITION; the leader then
        sees the changed group subscription metadata and rejoins.
        """
        self._inbox.put(_STALE)

    def has_pending(self) -> bool:
        """True when items were posted and not yet stepped."""
        return not self._inbox.empty()

    def take_pending(self) -> list[object]:
        """Items posted and not yet stepped (the simulator's stepping; empty with the thread running)."""
        items = []
        while True:
            try:
                items.append(self._inbox.get_nowait())
            except queue.Empty:
                return items

    @property
    def crashed(self) -> Exception | None:
        """The error that stopped this loop (a poisoned machine or a kgroup bug), else None."""
        return self._crashed

    def step(self, item: object) -> bool:
        """One pass of the loop body: handle ``item`` (None: timers only), tick, execute.

        The thread calls it for every inbox item and at every machine deadline; the
        deterministic simulator calls it directly on its virtual clock. Returns False once
        the loop must stop: the machine is poisoned, or a kgroup bug raised here. Then the
        poll thread is told with a ``FatalGroupError``-like error, so the consumer stops
        fetching instead of running on without heartbeats.
        """
        if self._crashed is not None:
            return False
        machine = self._machine
        try:
            commands: list[Command] = []
            if isinstance(item, _MetadataReady):
                self._on_metadata_ready(item)
            elif self._leader is not None and self._leader.handle(item):
                pass
            elif isinstance(item, _SessionTimeout):
                commands += machine.handle(self._session_timeout(item), self._clock.monotonic())
            elif isinstance(item, _TopicIds):
                if item.future.exception() is None:  # else the machine asks again after a backoff
                    commands += machine.handle(ev.MetadataUpdated(item.future.result()), self._clock.monotonic())
            elif item is _STALE:
                self._metadata.invalidate()
            elif item is not None:
                self._record_response(item)
                commands += machine.handle(item, self._clock.monotonic())
            if machine.snapshot().state is not MemberState.FATAL:
                commands += machine.tick(self._clock.monotonic())
            self._execute(commands)  # a Fail among them tells the poll thread
            if self._snapshot.state is MemberState.FATAL:
                self._crashed = self._snapshot.fatal
                return False
            if self._leader is not None:
                self._leader.after_step()
            self._maybe_describe_session_timeout()
            return True
        except KGroupError as exc:
            # an illegal input (ProtocolViolation) poisoned the machine: tell the poll thread
            self._crashed = exc
            self._publish()
            self._mailbox.post(exc)
        except Exception as exc:  # a kgroup bug: surface it, never die silently
            log.exception("group thread crashed")
            self._crashed = exc
            self._publish()
            crashed = GroupThreadCrashed(f"group thread crashed: {exc!r}")
            crashed.__cause__ = exc
            self._mailbox.post(crashed)
        return False

    def _publish(self) -> None:
        self._snapshot = self._machine.snapshot()
        if self._consumer_protocol or self._share:  # the consumer and share protocols' rebalance metrics
            self.metrics.member_state(self._machine.state_name)
        self._mailbox.notify()  # a poll-thread wait may be on the state (close)

    def _execute(self, commands: list[Command]) -> None:
        for command in commands:
            if isinstance(command, SendGroupRequest):
                api = _METRIC_APIS.get(type(command))
                if api is not None:
                    self.metrics.request_sent(api, command.request_id)
                future = self._transport.send(command, self._config.group_id)
                future.add_done_callback(self._on_response)
                if isinstance(command, SendJoinGroup):
                    self._warm_metadata()
            elif isinstance(command, DeliverStep):
                self._publish()
                self._mailbox.post(command.step)
            elif isinstance(command, ComputeAssignment):
                self._compute_assignment(command)
            elif isinstance(command, WatchGroupTopics):
                if self._leader is not None:
                    self._leader.watch(command)
            elif isinstance(command, (Notify, Fail)):
                self._publish()
                self._mailbox.post(command.error)
            elif isinstance(command, SendConsumerGroupHeartbeat):
                self.metrics.request_sent("consumer-heartbeat", command.request_id)
                answer = cast(ConsumerGroupTransport, self._transport).consumer_group_heartbeat(command)
                answer.add_done_callback(self._on_response)
            elif isinstance(command, SendShareGroupHeartbeat):
                self.metrics.request_sent("share-heartbeat", command.request_id)
                share_answer = cast(ShareGroupTransport, self._transport).share_group_heartbeat(command)
                share_answer.add_done_callback(self._on_response)
            elif isinstance(command, RequestMetadata):
                ids = cast(ConsumerGroupTransport, self._transport).topic_ids(self._config.request_timeout_ms)
                ids.add_done_callback(lambda f: self.post(_TopicIds(f)))
        self._publish()

    def _record_response(self, item: object) -> None:
        if isinstance(item, (ev.JoinGroupResponded, ev.SyncGroupResponded, ev.HeartbeatResponded,
                             ev.ConsumerGroupHeartbeatResponded, ev.ShareGroupHeartbeatResponded)):
            self.metrics.response(item.request_id, item.error_code)
        elif isinstance(item, ev.RequestFailed):
            self.metrics.response(item.request_id, None)

    def _on_response(self, future: concurrent.futures.Future[Any]) -> None:
        # runs on kafka-python's IO thread: only hand the event over
        self._inbox.put(future.result())

    def _warm_metadata(self) -> None:
        """With a JoinGroup: make sure the metadata a leader would assign from is at hand.

        If this member is elected leader it assigns from the cache instead of making the whole
        group wait, after the join, for a Metadata request (which a broker answers only after the
        fetch long-poll ahead of it on the same connection). Java's leader assigns from its
        cached cluster metadata too (``ConsumerCoordinator.onLeaderElected``).
        """
        topics = self._machine.snapshot().subscription
        if topics:
            self._metadata.get(topics)

    def _maybe_describe_session_timeout(self) -> None:
        """Under the consumer protocol: ask for the group's session timeout, then every ``metadata_max_age_ms``.

        The coordinator's session timeout is a broker (or group) config the member is not told
        (KIP-848); DescribeConfigs (resource type GROUP) answers it to any client allowed to
        DESCRIBE_CONFIGS the group. The first request goes once the member has joined (an epoch
        above 0); the member's session timer needs it (``ConsumerGroupMachine._settle_session``).
        A failure leaves the member without the timer, as Java's consumer always is; it is logged
        once and asked again at the next refresh.
        """
        if not self._consumer_protocol or self._session_config_out:
            return
        now = self._clock.monotonic()
        if self._session_config_at is None:
            if self._snapshot.generation.generation_id <= 0:
                return
            self._session_config_at = now
        if now < self._session_config_at or self._snapshot.state in (MemberState.CLOSED, MemberState.FATAL):
            return
        self._session_config_at = now + self._config.metadata_max_age_ms / 1000
        try:
            future = cast(ConsumerGroupTransport, self._transport).describe_group_configs(
                self._config.group_id, (SESSION_TIMEOUT_CONFIG,), self._config.request_timeout_ms
            )
        except Exception as exc:  # a transport without DescribeConfigs: no session timer
            future = concurrent.futures.Future()
            future.set_exception(exc)
        self._session_config_out = True
        future.add_done_callback(lambda f: self.post(_SessionTimeout(f)))

    def _session_timeout(self, item: _SessionTimeout) -> ev.SessionTimeoutDescribed:
        """The answer as the machine's event: the timeout, or None (logged once) on a failure."""
        self._session_config_out = False
        exc = item.future.exception()
        value = None if exc is not None else item.future.result().get(SESSION_TIMEOUT_CONFIG)
        if value is not None and value.strip().isdigit() and int(value) > 0:
            self._session_config_failed = False
            return ev.SessionTimeoutDescribed(int(value))
        reason = repr(exc) if exc is not None else f"{SESSION_TIMEOUT_CONFIG} is not in the answer ({value!r})"
        if not self._session_config_failed:
            self._session_config_failed = True
            log.warning(
                "group %s: DescribeConfigs for the group's %s failed (%s): without it the member cannot tell when "
                "the coordinator may have expired its session, and hands out records as Java's consumer does "
                "(allow DESCRIBE_CONFIGS on the group to enable kgroup's session timer); asking again every "
                "metadata_max_age_ms", self._config.group_id, SESSION_TIMEOUT_CONFIG, reason,
            )
        else:
            log.debug("group %s: DescribeConfigs for %s failed again: %s", self._config.group_id,
                      SESSION_TIMEOUT_CONFIG, reason)
        return ev.SessionTimeoutDescribed(None)

    def _compute_assignment(self, command: ComputeAssignment) -> None:
        """The leader's step 5: metadata, then (on this thread) the assignor, validate, encode."""
        assignor = self._assignors.get(command.protocol)
        if assignor is None:
            self.post(ev.AssignmentFailed(command.request_id, AssignmentError(
                f"the group chose protocol {command.protocol!r}, which this member does not have")))
            return
        topics = set().union(*(m.topics for m in command.members)) if command.members else set()
        future = self._metadata.get(frozenset(topics))
        # the future may complete on kafka-python's IO thread: the assignor must not run there
        future.add_done_callback(lambda f: self.post(_MetadataReady(command, assignor, f)))

    def _on_metadata_ready(self, item: _MetadataReady) -> None:
        command = item.command
        exc = item.future.exception()
        if exc is not None:
            # a broker's refusal (TopicAuthorizationFailedError) is raised from poll() as it is
            error = exc if isinstance(exc, BrokerError) else KGroupError(f"metadata for assignment failed: {exc}")
            self.post(ev.AssignmentFailed(command.request_id, error))
            return
        self.assignor_thread = threading.get_ident()
        members = {m.member_id: m for m in command.members}
        self.post(self._assign(command, item.assignor, item.future.result(), members))

    def _assign(
        self,
        command: ComputeAssignment,
        assignor: Assignor,
        partitions: dict[str, tuple[PartitionInfo, ...]],
        members: Mapping[str, MemberSubscription],
    ) -> ev.Event:
        partitions_per_topic = {topic: len(parts) for topic, parts in partitions.items()}
        subscribed: set[str] = set().union(*(m.topics for m in members.values()))
        missing = sorted(subscribed - set(partitions_per_topic))
        if missing:
            log.warning("group %s: subscribed topics not found in metadata: %s", self._config.group_id, missing)
        try:
            plan = assignor.assign_partitions(partitions, members)
            validate_plan(plan, members, partitions_per_topic, validation_protocol(self._config.protocol, members))
        except Exception as exc:
            if isinstance(exc, KGroupError):
                error: KGroupError = exc
            else:
                error = AssignmentError(f"assignor {assignor.name!r} failed: {exc!r}")
            if error is not exc:
                error.__cause__ = exc
            return ev.AssignmentFailed(command.request_id, error)
        encoded = tuple(
            (member_id, encode_assignment(Assignment(partitions=tuple(sorted(plan.get(member_id, frozenset()))))))
            for member_id in members
        )
        generation_id = self._machine.snapshot().generation.generation_id
        if self._leader is not None:
            self._leader.assigned(generation_id, partitions_per_topic, frozenset(subscribed))
        log.info(
            "group %s: leader assigned %d partitions to %d members with %s",
            self._config.group_id, sum(len(p) for p in plan.values()), len(members), assignor.name,
        )
        return ev.AssignmentComputed(command.request_id, encoded)
