"""GroupMachine: the sans-IO client half of Kafka's classic group protocol.

Rule 1: every transition is in this module. ``handle(event, now)`` and ``tick(now)`` return
        the commands to execute; the driver executes them and feeds responses back.
Rule 2: no IO, no clock, no threads. ``now`` is seconds on the driver's monotonic clock.
Rule 3: an illegal input raises ``ProtocolViolation`` and poisons the machine; after a fatal
        error (``Fail``) every later ``handle``/``tick`` raises the stored error (h11's ERROR).
Rule 4: every response carries the request id of the command that caused it. A response whose
        id is not in flight any more, or whose generation is no longer current, is dropped
        (Java's ``generationUnchanged()``, generalised).

The protocol steps, in the classic protocol's order ("A little more detail"), and where they live:

1. acquiesce -- a ``DeliverStep`` with ``revoked`` goes to the poll thread *before* JoinGroup
   (state PREPARING); the poll thread stops handing out those partitions' records,
2. commit -- the poll thread commits (auto-commit on revoke) inside that step, with the
   still-valid generation,
3. FindCoordinator -- ``SendFindCoordinator`` whenever the coordinator is unknown,
4. JoinGroup -- ``SendJoinGroup`` once the step completed (state JOINING); MEMBER_ID_REQUIRED
   (KIP-394) adopts the id and joins again at once,
5. SyncGroup -- the leader's assignor runs (``ComputeAssignment``), then ``SendSyncGroup``,
6. OffsetFetch -- the poll thread fetches committed offsets for the ``assigned`` step,
7. heartbeats -- ``SendHeartbeat`` every heartbeat_interval_ms while a generation is held,
8. leave -- ``SendLeaveGroup`` on close (dynamic members) or when the poll watchdog fires.

Eager (the classic protocol: Rebalancing): revoke everything before JoinGroup; after SyncGroup assign
all. Cooperative (KIP-429): before JoinGroup revoke only partitions of topics no longer
subscribed; after SyncGroup revoke ``owned - assigned`` and assign ``assigned - owned``; a
non-empty revocation triggers a second JoinGroup at once.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

from kgroup._error_codes import FENCED_INSTANCE_ID
from kgroup.assignors.base import MemberSubscription
from kgroup.config import ConsumerConfig
from kgroup.errors import (
    Api,
    Disposition,
    FatalGroupError,
    KGroupError,
    MalformedMetadata,
    ProtocolViolation,
    broker_error,
    classify,
    error_name,
)
from kgroup.membership import events as ev
from kgroup.membership.backoff import next_backoff_s
from kgroup.membership.commands import (
    Command,
    ComputeAssignment,
    DeliverStep,
    Fail,
    Notify,
    RebalanceStep,
    SendFindCoordinator,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
    WatchGroupTopics,
)
from kgroup.membership.states import HEARTBEAT_STATES, MemberState
from kgroup.protocol.consumer_protocol import (
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_subscription,
)
from kgroup.protocol.group_api import LeaveMember, SyncGroupAssignment
from kgroup.types import (
    NO_GENERATION,
    UNKNOWN_MEMBER_ID,
    Generation,
    RebalanceProtocol,
    TopicPartition,
)

__all__ = ["MAX_REASON_LENGTH", "GroupMachine", "MemberSnapshot", "truncate_reason"]

#: the longest JoinGroup/LeaveGroup ``reason`` sent (Java ``JoinGroupRequest.maybeTruncateReason``);
#: Kafka rejects any string over 32,767 bytes, and a reason built from a large subscription
#: would make every JoinGroup fail (KIP-800)
MAX_REASON_LENGTH = 255


def truncate_reason(reason: str) -> str:
    """``reason`` cut to ``MAX_REASON_LENGTH`` characters, as the Java client sends it."""
    return reason if len(reason) <= MAX_REASON_LENGTH else reason[:MAX_REASON_LENGTH]

log = logging.getLogger(__name__)


class MemberSnapshot:
    """An immutable view of the machine, published to other threads after every call."""

    __slots__ = (
        "coordinator",
        "fatal",
        "generation",
        "group_instance_id",
        "owned",
        "state",
        "subscription",
    )

    def __init__(
        self,
        state: MemberState,
        generation: Generation,
        owned: frozenset[TopicPartition],
        coordinator: int | None,
        subscription: frozenset[str],
        group_instance_id: str | None,
        fatal: Exception | None,
    ) -> None:
        self.state = state
        self.generation = generation
        self.owned = owned
        self.coordinator = coordinator
        self.subscription = subscription
        self.group_instance_id = group_instance_id
        self.fatal = fatal

    def __repr__(self) -> str:
        return (
            f"MemberSnapshot(state={self.state.value}, generation={self.generation.generation_id}, "
            f"member_id={self.generation.member_id!r}, owned={len(self.owned)})"
        )


class GroupMachine:
    """The client half of the classic group protocol. Not thread-safe: one owner.

    Args:
        config: the consumer's configuration (pure data).
        rng: randomness for backoff jitter (inject ``random.Random(seed)`` in tests).

    Use: feed ``handle(event, now)`` with events and call ``tick(now)`` at
    ``next_deadline()``; execute the returned commands in order.

    """

    def __init__(self, config: ConsumerConfig, *, rng: random.Random | None = None) -> None:
        self._config = config
        self._rng = rng or random.Random()
        self._protocol = config.protocol
        self._group_instance_id = config.group_instance_id
        self._state = MemberState.UNJOINED
        self._generation = Generation()
        self._owned: frozenset[TopicPartition] = frozenset()
        # the last assignment and its generation, for Assignor.subscription_user_data: Java's
        # sticky assignors remember them in onAssignment, also after an eager revoke emptied
        # owned (StickyAssignor user data, KIP-54; CooperativeStickyAssignor's generation)
        self._last_assigned: frozenset[TopicPartition] = frozenset()
        self._last_assigned_generation = NO_GENERATION
        self._subscription: frozenset[str] = frozenset()
        self._joined_subscription: frozenset[str] = frozenset()
        self._coordinator: int | None = None
        self._in_flight: dict[int, tuple[Api, int]] = {}
        self._next_request_id = 1
        self._next_step_id = 1
        self._pending_step: RebalanceStep | None = None
        self._rejoin_needed = False
        self._rejoin_reason = ""
        #: generation of a cooperative revocation whose second round has not happened yet
        self._second_round_after: int | None = None
        self._awaiting_poll = False
        self._closing: ev.Leave | None = None
        #: the reason the last JoinGroup carried (KIP-800), named again by the assignment's step
        self._join_reason = ""
        self._fatal: Exception | None = None
        # timers (seconds on the driver's clock)
        self._last_poll = 0.0
        self._started = False
        self._next_heartbeat_at = 0.0
        self._last_heartbeat_ok = 0.0
        self._coordinator_retry_at = 0.0
        self._coordinator_attempts = 0
        self._join_retry_at = 0.0
        self._join_attempts = 0

    # ---------------------------------------------------------------- read-only views
    @property
    def state(self) -> MemberState:
        """The member state (see ``kgroup.membership.states``)."""
        return self._state

    @property
    def generation(self) -> Generation:
        """The current generation (``Generation()`` when none)."""
        return self._generation

    @property
    def owned(self) -> frozenset[TopicPartition]:
        """Partitions this member owns (as far as the group protocol is concerned)."""
        return self._owned

    @property
    def coordinator(self) -> int | None:
        """The coordinator's node id, or None while unknown."""
        return self._coordinator

    def snapshot(self) -> MemberSnapshot:
        """An immutable view for other threads."""
        return MemberSnapshot(
            self._state,
            self._generation,
            self._owned,
            self._coordinator,
            self._subscription,
            self._group_instance_id,
            self._fatal,
        )

    def next_deadline(self, now: float) -> float:
        """The earliest time after ``now`` at which ``tick`` has something to do (inf: none)."""
        if self._state in (MemberState.CLOSED, MemberState.FATAL):
            return float("inf")
        deadlines = []
        if not self._awaiting_poll and self._closing is None and self._subscription:
            deadlines.append(self._poll_deadline())
        if self._coordinator is None:
            deadlines.append(self._coordinator_retry_at)
        if self._heartbeats_enabled():
            deadlines.append(self._next_heartbeat_at)
            deadlines.append(self._session_deadline())
        if self._rejoin_needed:
            deadlines.append(self._join_retry_at)
        future = [d for d in deadlines if d > now]
        return min(future) if future else float("inf")

    # ---------------------------------------------------------------- entry points
    def handle(self, event: ev.Event, now: float) -> list[Command]:
        """Process one event at time ``now`` (seconds) and return the commands to execute.

        Raises:
            KGroupError: the stored fatal error, if the machine is poisoned.
            ProtocolViolation: the event is illegal in the current state (poisons).

        """
        self._raise_if_poisoned()
        if not self._started:
            self._started = True
            self._last_poll = now
        out: list[Command] = []
        try:
            handler = self._HANDLERS.get(type(event))
            if handler is None:
                raise ProtocolViolation(f"unknown event {event!r}")
            handler(self, event, now, out)
            self._drive(now, out)
        except ProtocolViolation as exc:
            self._poison(exc, out)
            raise
        return out

    def tick(self, now: float) -> list[Command]:
        """Fire due timers (heartbeat, session, poll watchdog, retries) at ``now``."""
        self._raise_if_poisoned()
        if not self._started:
            self._started = True
            self._last_poll = now
        out: list[Command] = []
        if self._state in (MemberState.CLOSED, MemberState.FATAL):
            return out
        self._check_poll_watchdog(now, out)
        self._check_session(now, out)
        self._drive(now, out)
        return out

    # ---------------------------------------------------------------- helpers
    def _raise_if_poisoned(self) -> None:
        if self._fatal is not None:
            raise self._fatal

    def _poison(self, error: Exception, out: list[Command]) -> None:
        log.error("group %s member %r: fatal: %s", self._config.group_id, self._generation.member_id, error)
        self._fatal = error
        self._state = MemberState.FATAL
        self._in_flight.clear()
        out.append(Fail(error))

    def _request_id(self, api: Api) -> int:
        rid = self._next_request_id
        self._next_request_id += 1
        self._in_flight[rid] = (api, self._generation.generation_id)
        return rid

    def _take(self, request_id: int, api: Api) -> bool:
        """Pop ``request_id`` if it is in flight for ``api``; False means stale: drop it."""
        entry = self._in_flight.get(request_id)
        if entry is None or entry[0] is not api:
            log.debug("group %s: dropping stale %s response %d", self._config.group_id, api.value, request_id)
            return False
        del self._in_flight[request_id]
        if api is Api.HEARTBEAT and entry[1] != self._generation.generation_id:
            log.debug("group %s: dropping heartbeat response of generation %d", self._config.group_id, entry[1])
            return False
        return True

    def _in_flight_api(self, api: Api) -> bool:
        return any(a is api for a, _ in self._in_flight.values())

    def _heartbeats_enabled(self) -> bool:
        return (
            self._state in HEARTBEAT_STATES
            and self._generation.is_valid()
            and self._coordinator is not None
        )

    def _poll_deadline(self) -> float:
        return self._last_poll + self._config.max_poll_interval_ms / 1000

    def _session_deadline(self) -> float:
        return self._last_heartbeat_ok + self._config.session_timeout_ms / 1000

    def _backoff(self, attempts: int) -> float:
        return next_backoff_s(
            attempts, self._config.retry_backoff_ms, self._config.retry_backoff_max_ms, self._rng
        )

    def _new_step(self, **kwargs: object) -> RebalanceStep:
        step = RebalanceStep(step_id=self._next_step_id, generation=self._generation, **kwargs)  # type: ignore[arg-type]
        self._next_step_id += 1
        self._pending_step = step
        return step

    def _request_rejoin(self, reason: str) -> None:
        if not self._rejoin_needed:
            log.info(
                "group %s member %r: rejoin needed: %s",
                self._config.group_id, self._generation.member_id, reason,
            )
        self._rejoin_needed = True
        self._rejoin_reason = reason

    def _mark_coordinator_unknown(self, reason: str, now: float) -> None:
        if self._coordinator is not None:
            log.info("group %s: coordinator %s marked unknown: %s", self._config.group_id, self._coordinator, reason)
        self._coordinator = None
        # responses from the old coordinator no longer count
        for rid, (api, _) in list(self._in_flight.items()):
            if api in (Api.JOIN_GROUP, Api.SYNC_GROUP, Api.HEARTBEAT):
                del self._in_flight[rid]
        if self._state in (MemberState.JOINING, MemberState.SYNCING, MemberState.ASSIGNING):
            self._state = MemberState.UNJOINED
            self._request_rejoin(f"coordinator lost during rebalance: {reason}")
        self._coordinator_retry_at = max(self._coordinator_retry_at, now + self._backoff(self._coordinator_attempts))

    def _reset_generation(self, reason: str, out: list[Command], *, reset_member_id: bool) -> None:
        """Drop the generation; owned partitions become lost (delivered as a step)."""
        member_id = UNKNOWN_MEMBER_ID if reset_member_id else self._generation.member_id
        log.info(
            "group %s member %r: resetting generation %d (%s)%s",
            self._config.group_id, self._generation.member_id, self._generation.generation_id,
            reason, "; member id reset" if reset_member_id else "",
        )
        self._generation = Generation(NO_GENERATION, member_id, None)
        for rid, (api, _) in list(self._in_flight.items()):
            if api in (Api.JOIN_GROUP, Api.SYNC_GROUP, Api.HEARTBEAT):
                del self._in_flight[rid]
        self._request_rejoin(reason)
        if self._state not in (MemberState.PREPARING, MemberState.RECONCILING):
            self._state = MemberState.UNJOINED
        self._deliver_lost_if_needed(reason, out)

    def _deliver_lost_if_needed(self, reason: str, out: list[Command]) -> None:
        """Owned partitions without a valid generation are lost (Java ``onPartitionsLost``)."""
        if self._owned and not self._generation.is_valid() and self._pending_step is None:
            lost = self._owned
            self._owned = frozenset()
            out.append(DeliverStep(self._new_step(lost=lost, owned=frozenset(), reason=reason)))
            self._state = MemberState.PREPARING

    # ---------------------------------------------------------------- the drive loop
    def _drive(self, now: float, out: list[Command]) -> None:
        """Issue whatever the current state calls for (find coordinator, join, heartbeat)."""
        if self._state in (MemberState.CLOSED, MemberState.FATAL, MemberState.LEAVING):
            return
        if self._closing is not None:
            self._drive_close(now, out)
            if self._state not in (MemberState.LEAVING, MemberState.CLOSED):
                # the close revoke step may run long: keep the generation alive meanwhile
                self._maybe_heartbeat(now, out)
            return
        if self._coordinator is None:
            if not self._in_flight_api(Api.FIND_COORDINATOR) and now >= self._coordinator_retry_at:
                rid = self._request_id(Api.FIND_COORDINATOR)
                out.append(
                    SendFindCoordinator(
                        request_id=rid, key=self._config.group_id, timeout_ms=self._config.request_timeout_ms
                    )
                )
            return
        if self._owned and not self._generation.is_valid():
            self._deliver_lost_if_needed("generation reset", out)
        if (
            self._pending_step is None
            and self._rejoin_needed
            and self._state in (MemberState.UNJOINED, MemberState.STABLE)
            and self._subscription
            and not self._awaiting_poll
            and now >= self._join_retry_at
        ):
            self._prepare_join(now, out)
        self._maybe_heartbeat(now, out)

    def _maybe_heartbeat(self, now: float, out: list[Command]) -> None:
        if self._heartbeats_enabled() and not self._in_flight_api(Api.HEARTBEAT) and now >= self._next_heartbeat_at:
            assert self._coordinator is not None
            rid = self._request_id(Api.HEARTBEAT)
            out.append(
                SendHeartbeat(
                    request_id=rid,
                    node_id=self._coordinator,
                    group_id=self._config.group_id,
                    generation_id=self._generation.generation_id,
                    member_id=self._generation.member_id,
                    group_instance_id=self._group_instance_id,
                    timeout_ms=self._config.request_timeout_ms,
                )
            )
            self._next_heartbeat_at = now + self._config.heartbeat_interval_ms / 1000

    def _prepare_join(self, now: float, out: list[Command]) -> None:
        """Step 1-2 (acquiesce, commit): revoke before JoinGroup, or join at once."""
        if self._protocol is RebalanceProtocol.EAGER:
            revoked = self._owned
        else:
            revoked = frozenset(tp for tp in self._owned if tp.topic not in self._subscription)
        if revoked and self._generation.is_valid():
            self._owned = self._owned - revoked
            step = self._new_step(revoked=revoked, owned=self._owned, reason=self._rejoin_reason)
            self._state = MemberState.PREPARING
            out.append(DeliverStep(step))
            return
        if revoked:
            # no valid generation: the partitions cannot be committed; they are lost
            self._owned = self._owned - revoked
            step = self._new_step(lost=revoked, owned=self._owned, reason=self._rejoin_reason)
            self._state = MemberState.PREPARING
            out.append(DeliverStep(step))
            return
        self._send_join(now, out)

    def _send_join(self, now: float, out: list[Command]) -> None:
        assert self._coordinator is not None
        self._joined_subscription = self._subscription
        owned = tuple(sorted(self._owned))
        protocols = []
        for assignor in self._config.assignors:
            user_data = assignor.subscription_user_data(
                self._subscription, self._last_assigned_generation, self._last_assigned
            )
            sub = Subscription(
                topics=tuple(sorted(self._subscription)),
                user_data=user_data,
                owned_partitions=owned,
                generation_id=self._generation.generation_id,
                rack_id=self._config.client_rack,
            )
            protocols.append((assignor.name, encode_subscription(sub)))
        rebalance_ms = self._config.effective_rebalance_timeout_ms
        rid = self._request_id(Api.JOIN_GROUP)
        self._state = MemberState.JOINING
        reason = truncate_reason(self._rejoin_reason or "joining the group")
        self._join_reason = reason
        log.info(
            "group %s member %r: JoinGroup (%s)", self._config.group_id, self._generation.member_id, reason
        )
        out.append(
            SendJoinGroup(
                request_id=rid,
                node_id=self._coordinator,
                group_id=self._config.group_id,
                member_id=self._generation.member_id,
                group_instance_id=self._group_instance_id,
                session_timeout_ms=self._config.session_timeout_ms,
                rebalance_timeout_ms=rebalance_ms,
                protocols=tuple(protocols),
                reason=reason,
                timeout_ms=max(self._config.request_timeout_ms, rebalance_ms + 5000),
            )
        )

    def _drive_close(self, now: float, out: list[Command]) -> None:
        assert self._closing is not None
        if self._pending_step is not None:
            return  # wait for the poll thread to finish the outstanding step
        if self._owned:
            if self._generation.is_valid():
                step = self._new_step(revoked=self._owned, owned=frozenset(), reason=self._closing.reason)
            else:
                step = self._new_step(lost=self._owned, owned=frozenset(), reason=self._closing.reason)
            self._owned = frozenset()
            out.append(DeliverStep(step))
            return
        send = self._closing.send_leave_group
        if send is None:
            send = self._group_instance_id is None
        if send and self._coordinator is not None and self._generation.member_id:
            rid = self._request_id(Api.LEAVE_GROUP)
            out.append(
                SendLeaveGroup(
                    request_id=rid,
                    node_id=self._coordinator,
                    group_id=self._config.group_id,
                    members=(
                        LeaveMember(
                            member_id=self._generation.member_id,
                            group_instance_id=self._group_instance_id,
                            reason=truncate_reason(self._closing.reason),
                        ),
                    ),
                    timeout_ms=self._config.request_timeout_ms,
                )
            )
            self._state = MemberState.LEAVING
        else:
            self._state = MemberState.CLOSED
        self._generation = Generation()
        for rid_, (api, _) in list(self._in_flight.items()):
            if api is not Api.LEAVE_GROUP:
                del self._in_flight[rid_]

    # ---------------------------------------------------------------- timers
    def _check_poll_watchdog(self, now: float, out: list[Command]) -> None:
        """KIP-62: no poll() within max_poll_interval_ms -> leave (dynamic) and reset."""
        if self._awaiting_poll or self._closing is not None or not self._subscription:
            return
        if now < self._poll_deadline():
            return
        rebalancing = (MemberState.JOINING, MemberState.ASSIGNING, MemberState.SYNCING)
        if not (self._generation.is_valid() or self._state in rebalancing):
            return
        reason = (
            f"consumer poll timeout has expired: poll() was not called within "
            f"max_poll_interval_ms ({self._config.max_poll_interval_ms} ms); the time spent "
            "processing records is too long. Increase max_poll_interval_ms or lower max_poll_records"
        )
        log.warning("group %s member %r: %s", self._config.group_id, self._generation.member_id, reason)
        self._awaiting_poll = True
        if self._group_instance_id is None and self._coordinator is not None and self._generation.member_id:
            rid = self._request_id(Api.LEAVE_GROUP)
            out.append(
                SendLeaveGroup(
                    request_id=rid,
                    node_id=self._coordinator,
                    group_id=self._config.group_id,
                    members=(LeaveMember(member_id=self._generation.member_id, reason=truncate_reason(reason)),),
                    timeout_ms=self._config.request_timeout_ms,
                )
            )
        self._reset_generation("poll timeout", out, reset_member_id=True)

    def _check_session(self, now: float, out: list[Command]) -> None:
        """No successful heartbeat within session_timeout_ms: rediscover (Java HeartbeatThread)."""
        if not self._heartbeats_enabled():
            return
        if now >= self._session_deadline():
            log.warning(
                "group %s member %r: no successful heartbeat within session_timeout_ms (%d ms); "
                "marking the coordinator unknown",
                self._config.group_id, self._generation.member_id, self._config.session_timeout_ms,
            )
            self._mark_coordinator_unknown("session timeout expired", now)
            self._last_heartbeat_ok = now

    # ---------------------------------------------------------------- user events
    def _on_subscribe(self, event: ev.Subscribe, now: float, out: list[Command]) -> None:
        if self._closing is not None:
            raise ProtocolViolation("subscribe after close")
        if event.topics != self._subscription:
            self._subscription = event.topics
            self._request_rejoin(f"subscription changed to {sorted(event.topics)}")

    def _on_polled(self, event: ev.Polled, now: float, out: list[Command]) -> None:
        self._last_poll = now
        if self._awaiting_poll:
            self._awaiting_poll = False
            self._join_retry_at = now

    def _on_step_completed(self, event: ev.StepCompleted, now: float, out: list[Command]) -> None:
        step = self._pending_step
        if step is None or step.step_id != event.step_id:
            raise ProtocolViolation(f"StepCompleted({event.step_id}) but pending step is {step!r}")
        self._pending_step = None
        if self._closing is not None:
            return
        if self._state is MemberState.PREPARING:
            # the drive loop sends JoinGroup next (or delivers lost partitions first)
            self._state = MemberState.STABLE if self._generation.is_valid() else MemberState.UNJOINED
        elif self._state is MemberState.RECONCILING:
            self._state = MemberState.STABLE
            if step.revoked and self._protocol is RebalanceProtocol.COOPERATIVE:
                self._request_rejoin("cooperative: partitions were revoked; second round")
                self._second_round_after = step.generation.generation_id

    def _on_leave(self, event: ev.Leave, now: float, out: list[Command]) -> None:
        if self._closing is not None:
            return
        self._closing = event
        self._rejoin_needed = False
        log.info("group %s member %r: leaving: %s", self._config.group_id, self._generation.member_id, event.reason)
        # an in-flight join or sync no longer matters
        for rid, (api, _) in list(self._in_flight.items()):
            if api in (Api.JOIN_GROUP, Api.SYNC_GROUP):
                del self._in_flight[rid]
        if self._state in (MemberState.JOINING, MemberState.ASSIGNING, MemberState.SYNCING):
            self._state = MemberState.UNJOINED

    def _on_request_rejoin(self, event: ev.RequestRejoin, now: float, out: list[Command]) -> None:
        self._request_rejoin(event.reason)

    def _on_coordinator_dead(self, event: ev.CoordinatorDead, now: float, out: list[Command]) -> None:
        self._mark_coordinator_unknown(event.reason, now)

    def _on_commit_error(self, event: ev.CommitErrorObserved, now: float, out: list[Command]) -> None:
        disposition = classify(Api.OFFSET_COMMIT, event.code)
        unchanged = event.generation == self._generation
        name = error_name(event.code)
        if disposition is Disposition.FATAL:
            # Java OffsetCommitResponseHandler: FENCED_INSTANCE_ID (and the other fatal codes)
            # poison the member only if the commit was sent in the current generation; a stale
            # commit's error says nothing about the member as it is now
            if unchanged:
                self._fatal_response(Api.OFFSET_COMMIT, event.code, out)
        elif disposition is Disposition.REDISCOVER:
            self._mark_coordinator_unknown(f"{event.api} returned {name}", now)
        elif disposition is Disposition.REJOIN:
            if self._state is MemberState.STABLE:
                self._request_rejoin(f"{event.api} returned {name}")
        elif disposition in (Disposition.RESET_GENERATION, Disposition.RESET_MEMBER) and unchanged:
            self._reset_generation(
                f"{event.api} returned {name}", out,
                reset_member_id=disposition is Disposition.RESET_MEMBER,
            )

    # ---------------------------------------------------------------- responses
    def _context(self) -> str:
        return (
            f"group_id={self._config.group_id!r}, member_id={self._generation.member_id!r}, "
            f"generation_id={self._generation.generation_id}, "
            f"group_instance_id={self._group_instance_id!r}"
        )

    def _fatal_response(self, api: Api, code: int, out: list[Command]) -> None:
        message = self._context()
        if code == FENCED_INSTANCE_ID:
            message = (
                f"group_instance_id {self._group_instance_id!r} was fenced: another consumer with "
                f"the same instance id joined the group, so two processes share it ({message})"
            )
        error = broker_error(api, code, message)
        if not isinstance(error, FatalGroupError):
            error = FatalGroupError(api, code, message)  # whatever the code, the member stops
        self._poison(error, out)

    def _on_find_coordinator(self, event: ev.FindCoordinatorResponded, now: float, out: list[Command]) -> None:
        if not self._take(event.request_id, Api.FIND_COORDINATOR):
            return
        disposition = classify(Api.FIND_COORDINATOR, event.error_code)
        if disposition is Disposition.OK:
            self._coordinator = event.node_id
            self._coordinator_attempts = 0
            self._last_heartbeat_ok = now
            log.info(
                "group %s: discovered coordinator %s at %s:%s",
                self._config.group_id, event.node_id, event.host, event.port,
            )
        elif disposition is Disposition.FATAL:
            self._fatal_response(Api.FIND_COORDINATOR, event.error_code, out)
        else:
            self._coordinator_attempts += 1
            self._coordinator_retry_at = now + self._backoff(self._coordinator_attempts)
            log.info("group %s: FindCoordinator failed: %s", self._config.group_id, error_name(event.error_code))

    def _on_join(self, event: ev.JoinGroupResponded, now: float, out: list[Command]) -> None:
        if not self._take(event.request_id, Api.JOIN_GROUP):
            return
        if self._state is not MemberState.JOINING:
            raise ProtocolViolation(f"JoinGroup response in state {self._state}")
        disposition = classify(Api.JOIN_GROUP, event.error_code)
        name = error_name(event.error_code)
        if disposition is Disposition.OK:
            self._join_attempts = 0
            # Java: a subscription changed while the join was in flight needs another round
            self._rejoin_needed = self._subscription != self._joined_subscription
            self._rejoin_reason = "subscription changed during JoinGroup" if self._rejoin_needed else ""
            self._generation = Generation(event.generation_id, event.member_id, event.protocol_name)
            if self._second_round_after is not None and event.generation_id > self._second_round_after:
                self._second_round_after = None  # the second round is this new generation
            self._last_heartbeat_ok = now
            self._next_heartbeat_at = now + self._config.heartbeat_interval_ms / 1000
            is_leader = event.leader == event.member_id
            log.info(
                "group %s: joined generation %d as %r (%s), protocol %s",
                self._config.group_id, event.generation_id, event.member_id,
                "leader" if is_leader else "follower", event.protocol_name,
            )
            if is_leader and not event.skip_assignment:
                self._start_assignment(event, out, now)
            else:
                if is_leader:
                    out.append(WatchGroupTopics(event.generation_id, self._group_topics(event)))
                self._send_sync((), out)
        elif disposition is Disposition.ADOPT_MEMBER_ID:
            self._generation = Generation(NO_GENERATION, event.member_id, None)
            self._send_join(now, out)
        elif disposition is Disposition.RETRY_NOW:
            self._send_join(now, out)
        elif disposition in (Disposition.RESET_MEMBER, Disposition.RESET_GENERATION):
            self._state = MemberState.UNJOINED
            self._reset_generation(
                f"JoinGroup returned {name}", out, reset_member_id=disposition is Disposition.RESET_MEMBER
            )
        elif disposition is Disposition.REDISCOVER:
            self._state = MemberState.UNJOINED
            self._mark_coordinator_unknown(f"JoinGroup returned {name}", now)
        elif disposition is Disposition.RETRY:
            self._state = MemberState.UNJOINED
            self._join_attempts += 1
            self._join_retry_at = now + self._backoff(self._join_attempts)
        elif disposition is Disposition.RAISE:
            # Java JoinGroupResponseHandler, final else: raised from poll(), joined again
            self._state = MemberState.UNJOINED
            self._join_attempts += 1
            self._join_retry_at = now + self._backoff(self._join_attempts)
            out.append(Notify(broker_error(Api.JOIN_GROUP, event.error_code, self._context())))
        else:
            self._fatal_response(Api.JOIN_GROUP, event.error_code, out)

    def _group_topics(self, event: ev.JoinGroupResponded) -> frozenset[str]:
        """Every topic the group's members subscribe to (undecodable subscriptions skipped)."""
        topics: set[str] = set(self._subscription)
        for member in event.members:
            try:
                topics.update(decode_subscription(member.metadata).topics)
            except MalformedMetadata:
                continue
        return frozenset(topics)

    def _start_assignment(self, event: ev.JoinGroupResponded, out: list[Command], now: float) -> None:
        members = []
        try:
            for member in event.members:
                sub = decode_subscription(member.metadata)
                members.append(
                    MemberSubscription(
                        member_id=member.member_id,
                        group_instance_id=member.group_instance_id,
                        topics=frozenset(sub.topics),
                        owned=frozenset(sub.owned_partitions),
                        generation_id=sub.generation_id,
                        rack=sub.rack_id,
                        user_data=sub.user_data,
                    )
                )
        except MalformedMetadata as exc:
            error = MalformedMetadata(f"member {member.member_id!r} sent an undecodable Subscription: {exc}")
            self._abort_round(error, out, now)
            return
        self._state = MemberState.ASSIGNING
        rid = self._request_id(Api.SYNC_GROUP)  # the assignment result is matched like a response
        out.append(ComputeAssignment(rid, event.protocol_name or "", tuple(members)))

    def _abort_round(self, error: KGroupError, out: list[Command], now: float) -> None:
        """A non-fatal failure of this rebalance round: report it, rejoin after a backoff."""
        log.warning("group %s: rebalance round failed: %s", self._config.group_id, error)
        out.append(Notify(error))
        # Java: a failed onLeaderElected/onJoinComplete raises from poll() and the member joins
        # again; the generation is not reset and owned partitions stay owned (not lost)
        self._state = MemberState.UNJOINED
        self._join_attempts += 1
        self._request_rejoin(str(error))
        self._join_retry_at = now + self._backoff(self._join_attempts)

    def _on_assignment_computed(self, event: ev.AssignmentComputed, now: float, out: list[Command]) -> None:
        if not self._take(event.request_id, Api.SYNC_GROUP):
            return
        if self._state is not MemberState.ASSIGNING:
            raise ProtocolViolation(f"AssignmentComputed in state {self._state}")
        self._send_sync(event.assignments, out)

    def _on_assignment_failed(self, event: ev.AssignmentFailed, now: float, out: list[Command]) -> None:
        if not self._take(event.request_id, Api.SYNC_GROUP):
            return
        error = event.error if isinstance(event.error, KGroupError) else KGroupError(str(event.error))
        self._abort_round(error, out, now)

    def _send_sync(self, assignments: tuple[tuple[str, bytes], ...], out: list[Command]) -> None:
        assert self._coordinator is not None
        rid = self._request_id(Api.SYNC_GROUP)
        self._state = MemberState.SYNCING
        out.append(
            SendSyncGroup(
                request_id=rid,
                node_id=self._coordinator,
                group_id=self._config.group_id,
                generation_id=self._generation.generation_id,
                member_id=self._generation.member_id,
                group_instance_id=self._group_instance_id,
                protocol_type="consumer",
                protocol_name=self._generation.protocol,
                assignments=tuple(SyncGroupAssignment(member_id=m, assignment=a) for m, a in assignments),
                timeout_ms=self._config.request_timeout_ms,
            )
        )

    def _on_sync(self, event: ev.SyncGroupResponded, now: float, out: list[Command]) -> None:
        if not self._take(event.request_id, Api.SYNC_GROUP):
            return
        if self._state is not MemberState.SYNCING:
            raise ProtocolViolation(f"SyncGroup response in state {self._state}")
        disposition = classify(Api.SYNC_GROUP, event.error_code)
        name = error_name(event.error_code)
        if disposition is Disposition.OK:
            try:
                if len(event.assignment) < 2:
                    # Java's ConsumerCoordinator.onJoinComplete rejects an assignment shorter
                    # than its version field: the leader's assignor is broken
                    raise MalformedMetadata(f"{len(event.assignment)} bytes, too short for an Assignment")
                assignment = decode_assignment(event.assignment)
            except MalformedMetadata as exc:
                self._abort_round(MalformedMetadata(f"the leader sent an undecodable Assignment: {exc}"), out, now)
                return
            self._on_assignment(frozenset(assignment.partitions), out)
        elif disposition is Disposition.REJOIN:
            self._state = MemberState.UNJOINED
            self._request_rejoin(f"SyncGroup returned {name}")
        elif disposition in (Disposition.RESET_MEMBER, Disposition.RESET_GENERATION):
            self._state = MemberState.UNJOINED
            self._reset_generation(
                f"SyncGroup returned {name}", out, reset_member_id=disposition is Disposition.RESET_MEMBER
            )
        elif disposition is Disposition.REDISCOVER:
            self._state = MemberState.UNJOINED
            self._mark_coordinator_unknown(f"SyncGroup returned {name}", now)
            self._request_rejoin(f"SyncGroup returned {name}")
        elif disposition is Disposition.RAISE:
            # Java SyncGroupResponseHandler, final else: "Unexpected error from SyncGroup",
            # raised from poll(); the member joins again (generation kept, nothing lost)
            self._abort_round(broker_error(Api.SYNC_GROUP, event.error_code, self._context()), out, now)
        else:
            self._fatal_response(Api.SYNC_GROUP, event.error_code, out)

    def _on_assignment(self, assigned: frozenset[TopicPartition], out: list[Command]) -> None:
        unsubscribed = {tp.topic for tp in assigned if tp.topic not in self._subscription}
        if unsubscribed:
            # Java ConsumerCoordinator.onJoinComplete: an assignment that does not match the
            # subscription (it changed during the round) is not applied and no callback runs;
            # the member keeps what it owns and rejoins at once
            log.info(
                "group %s: assignment names topics no longer subscribed %s; not applied, rejoining",
                self._config.group_id, sorted(unsubscribed),
            )
            self._state = MemberState.STABLE
            self._request_rejoin(f"assigned topics no longer subscribed: {sorted(unsubscribed)}")
            self._join_retry_at = 0.0
            return
        if self._protocol is RebalanceProtocol.EAGER:
            revoked: frozenset[TopicPartition] = frozenset()
            added = assigned
        else:
            revoked = self._owned - assigned
            added = assigned - self._owned
        self._owned = assigned
        self._last_assigned = assigned
        self._last_assigned_generation = self._generation.generation_id
        log.info(
            "group %s member %r: generation %d assigned %d partitions (added %d, revoked %d)",
            self._config.group_id, self._generation.member_id, self._generation.generation_id,
            len(assigned), len(added), len(revoked),
        )
        step = self._new_step(
            revoked=revoked, assigned=added, owned=assigned, invoke_assigned=True,
            reason=f"generation {self._generation.generation_id} assigned after: {self._join_reason}",
        )
        self._state = MemberState.RECONCILING
        out.append(DeliverStep(step))
        if self._second_round_after is not None:
            # The join after a cooperative revocation brought no new generation: a static member
            # replaced in a Stable group gets its stored assignment back without a rebalance
            # (KIP-345), so the partitions it revoked would stay unassigned. Join once more: as
            # the leader, or with owned partitions that differ from its stored subscription, that
            # JoinGroup starts the second round.
            self._second_round_after = None
            self._request_rejoin("cooperative: the second round after a revocation did not happen; joining again")

    def _on_heartbeat(self, event: ev.HeartbeatResponded, now: float, out: list[Command]) -> None:
        if not self._take(event.request_id, Api.HEARTBEAT):
            return
        disposition = classify(Api.HEARTBEAT, event.error_code)
        name = error_name(event.error_code)
        if disposition is Disposition.OK:
            self._last_heartbeat_ok = now
        elif disposition is Disposition.REJOIN:
            self._last_heartbeat_ok = now
            if self._state in (MemberState.STABLE, MemberState.RECONCILING):
                self._request_rejoin(f"Heartbeat returned {name}")
        elif disposition in (Disposition.RESET_MEMBER, Disposition.RESET_GENERATION):
            self._reset_generation(
                f"Heartbeat returned {name}", out, reset_member_id=disposition is Disposition.RESET_MEMBER
            )
        elif disposition is Disposition.REDISCOVER:
            self._mark_coordinator_unknown(f"Heartbeat returned {name}", now)
        elif disposition is Disposition.RETRY:
            # Java HeartbeatResponseHandler, final else: failHeartbeat(), retried after backoff
            log.warning("group %s: Heartbeat returned %s; retrying", self._config.group_id, name)
            self._next_heartbeat_at = now + self._config.retry_backoff_ms / 1000
        else:
            self._fatal_response(Api.HEARTBEAT, event.error_code, out)

    def _on_leave_response(self, event: ev.LeaveGroupResponded, now: float, out: list[Command]) -> None:
        if not self._take(event.request_id, Api.LEAVE_GROUP):
            return
        code = event.error_code or next((m.error_code for m in event.members), 0)  # v3+: this member's own
        if code:
            log.info("group %s: LeaveGroup returned %s (ignored)", self._config.group_id, error_name(code))
        if self._state is MemberState.LEAVING:
            self._state = MemberState.CLOSED

    def _on_request_failed(self, event: ev.RequestFailed, now: float, out: list[Command]) -> None:
        entry = self._in_flight.get(event.request_id)
        if entry is None:
            return
        api = entry[0]
        del self._in_flight[event.request_id]
        log.info("group %s: %s request failed: %s", self._config.group_id, api.value, event.reason)
        if api is Api.FIND_COORDINATOR:
            self._coordinator_attempts += 1
            self._coordinator_retry_at = now + self._backoff(self._coordinator_attempts)
        elif api is Api.LEAVE_GROUP:
            if self._state is MemberState.LEAVING:
                self._state = MemberState.CLOSED
        elif api is Api.SYNC_GROUP and self._state is MemberState.ASSIGNING:
            self._abort_round(KGroupError(event.reason), out, now)
        else:
            if api is Api.HEARTBEAT and entry[1] != self._generation.generation_id:
                return
            self._mark_coordinator_unknown(f"{api.value} failed: {event.reason}", now)

    _HANDLERS: dict[type, Callable[[GroupMachine, object, float, list[Command]], None]] = {
        ev.Subscribe: _on_subscribe,  # type: ignore[dict-item]
        ev.Polled: _on_polled,  # type: ignore[dict-item]
        ev.StepCompleted: _on_step_completed,  # type: ignore[dict-item]
        ev.Leave: _on_leave,  # type: ignore[dict-item]
        ev.RequestRejoin: _on_request_rejoin,  # type: ignore[dict-item]
        ev.CoordinatorDead: _on_coordinator_dead,  # type: ignore[dict-item]
        ev.CommitErrorObserved: _on_commit_error,  # type: ignore[dict-item]
        ev.FindCoordinatorResponded: _on_find_coordinator,  # type: ignore[dict-item]
        ev.JoinGroupResponded: _on_join,  # type: ignore[dict-item]
        ev.AssignmentComputed: _on_assignment_computed,  # type: ignore[dict-item]
        ev.AssignmentFailed: _on_assignment_failed,  # type: ignore[dict-item]
        ev.SyncGroupResponded: _on_sync,  # type: ignore[dict-item]
        ev.HeartbeatResponded: _on_heartbeat,  # type: ignore[dict-item]
        ev.LeaveGroupResponded: _on_leave_response,  # type: ignore[dict-item]
        ev.RequestFailed: _on_request_failed,  # type: ignore[dict-item]
    }
