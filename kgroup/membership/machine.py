"""GroupMachine: the sans-IO client half of Kafka's classic group protocol.

Rule 1: every transition is in this module. ``handle(event, now)`` and ``tick(now)`` return
        the commands to execute; the driver executes them and feeds responses back.
Rule 2: no IO, no clock, no threads. ``now`` is seconds on the driver's monotonic clock.
Rule 3: ``kgroup.membership.states.EVENT_TABLE`` says which events each state takes (handle,
        ignore, illegal). ``_admit`` consults it, and checks the event against the machine
        (the step it completes is out, the request it answers is in flight), before anything
        changes. An illegal input raises ``ProtocolViolation`` and poisons the machine; after
        that or a fatal error (``Fail``) every later ``handle``/``tick`` raises the stored
        error (h11's ERROR).
Rule 4: every response carries the request id of the command that caused it. A response whose
        id is not in flight any more, or whose generation is no longer current, is dropped
        (Java's ``generationUnchanged()``, generalised).

Besides ``MemberState`` the machine keeps its coordinator (``kgroup.membership.coordinator``),
its timers (``kgroup.membership.timers``) and its requests in flight as small frozen values,
replaced on change; it reads
the few consumer settings it uses from a ``MachineConfig`` (``kgroup.membership.machine_config``).
What its requests carry is built by ``kgroup.membership.classic_requests``, and what the session
timer asks of it is decided by ``kgroup.membership.classic_session``.

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
import math
import random
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from kgroup._error_codes import COORDINATOR_LOAD_IN_PROGRESS, FENCED_INSTANCE_ID
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
from kgroup.membership import classic_requests as wire
from kgroup.membership import events as ev
from kgroup.membership.classic_requests import MAX_REASON_LENGTH, truncate_reason
from kgroup.membership.classic_session import SessionVerdict, java_session_deadline, session_deadline, session_verdict
from kgroup.membership.commands import (
    Command,
    ComputeAssignment,
    DeliverStep,
    Fail,
    Notify,
    RebalanceStep,
    WatchGroupTopics,
)
from kgroup.membership.coordinator import CoordinatorState
from kgroup.membership.core import MemberSnapshot, View
from kgroup.membership.log_throttle import LogThrottle
from kgroup.membership.machine_config import MachineConfig, machine_config
from kgroup.membership.states import (
    ANSWERS,
    EVENT_TABLE,
    HEARTBEAT_STATES,
    RESPONSES,
    InFlight,
    MemberState,
    Request,
    Verdict,
)
from kgroup.membership.timers import HeartbeatTimer, PollTimer, RetryTimer, next_backoff_s
from kgroup.types import (
    NO_GENERATION,
    UNKNOWN_MEMBER_ID,
    Generation,
    RebalanceProtocol,
    TopicPartition,
)

__all__ = [
    "MAX_REASON_LENGTH",
    "GroupMachine",
    "MachineConfig",
    "machine_config",
    "truncate_reason",
]

log = logging.getLogger(__name__)

#: the requests of one JoinGroup/SyncGroup round
_ROUND_REQUESTS = frozenset({Request.JOIN_GROUP, Request.ASSIGNMENT, Request.SYNC_GROUP})
#: the requests that count only for the coordinator and generation they were sent to
_GENERATION_REQUESTS = _ROUND_REQUESTS | {Request.HEARTBEAT}
#: the answers that cost the member its generation (RESET_*) or its coordinator (REDISCOVER)
_STANDING_LOST = frozenset({Disposition.RESET_MEMBER, Disposition.RESET_GENERATION, Disposition.REDISCOVER})


#: an event handler: ``handler(machine, event, now, out)`` appends the commands to ``out``
_Handler = Callable[["GroupMachine", Any, float, list[Command]], None]


class GroupMachine:
    """The client half of the classic group protocol. Not thread-safe: one owner.

    Args:
        config: the consumer's configuration (pure data), or just the part the machine uses.
        rng: randomness for backoff jitter (inject ``random.Random(seed)`` in tests).

    Use: feed ``handle(event, now)`` with events and call ``tick(now)`` at
    ``next_deadline()``; execute the returned commands in order.

    """

    def __init__(self, config: ConsumerConfig | MachineConfig, *, rng: random.Random | None = None) -> None:
        self._config = config if isinstance(config, MachineConfig) else machine_config(config)
        self._rng = rng or random.Random()
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
        self._coordinator = CoordinatorState()
        #: repeated request failures are logged once per cause and interval (a lookup retried
        #: at every backoff against an unreachable cluster)
        self._failure_log = LogThrottle()
        self._in_flight: dict[int, InFlight] = {}
        self._next_request_id = 1
        self._next_step_id = 1
        self._pending_step: RebalanceStep | None = None
        self._rejoin_needed = False
        self._rejoin_reason = ""
        #: generation of a cooperative revocation whose second round has not happened yet
        self._second_round_after: int | None = None
        self._closing: ev.Leave | None = None
        #: the reason the last JoinGroup carried (KIP-800), named again by the assignment's step
        self._join_reason = ""
        self._fatal: Exception | None = None
        #: hand-outs on hold: see ``_check_session``
        self._in_doubt = False
        #: (generation id, not before) while the coordinator must confirm the member in that
        #: generation with a SyncGroup probe before hand-outs resume (``_maybe_probe``)
        self._probe: tuple[int, float] | None = None
        #: the newest generation this member joined (kept through resets)
        self._joined_generation_id = NO_GENERATION
        # timers (seconds on the driver's clock)
        self._poll = PollTimer()
        self._heartbeat = HeartbeatTimer()
        self._join_retry = RetryTimer()

    # ---------------------------------------------------------------- read-only views
    state = View[MemberState]("_state", "The member state (see ``kgroup.membership.states``).")
    generation = View[Generation]("_generation", "The current generation (``Generation()`` when none).")
    owned = View[frozenset[TopicPartition]](
        "_owned", "Partitions this member owns (as far as the group protocol is concerned)."
    )
    coordinator = View[int | None]("_coordinator.node_id", "The coordinator's node id, or None while unknown.")

    def snapshot(self) -> MemberSnapshot:
        """An immutable view for other threads."""
        return MemberSnapshot(
            self._state,
            self._generation,
            self._owned,
            self._coordinator.node_id,
            self._subscription,
            self._config.group_instance_id,
            self._fatal,
            # in doubt, or the generation is gone and the loss waits behind a running step
            self._in_doubt or (bool(self._owned) and not self._generation.is_valid()),
            self._session_deadline() if self._holds_for_session() else math.inf,
            self._state.name,
            self._config.session_timeout_ms,
        )

    @property
    def member_id(self) -> str:
        """The member id the coordinator gave ("" before the first JoinGroup answer)."""
        return self._generation.member_id

    @property
    def state_name(self) -> str:
        """The member state's name."""
        return self._state.name

    @property
    def session_timeout_ms(self) -> int:
        """The configured session timeout, which JoinGroup sends and the coordinator enforces."""
        return self._config.session_timeout_ms

    def next_deadline(self, now: float) -> float:
        """The earliest time after ``now`` at which ``tick`` has something to do (inf: none)."""
        if self._state in (MemberState.CLOSED, MemberState.FATAL):
            return float("inf")
        deadlines = []
        if not self._poll.expired and self._closing is None and self._subscription:
            deadlines.append(self._poll_deadline())
        if self._coordinator.node_id is None:
            deadlines.append(self._coordinator.lookup.at)
        if self._heartbeats_enabled():
            deadlines.append(self._heartbeat.next_at)
        if self._holds_for_session():
            if not self._in_doubt:
                deadlines.append(self._session_deadline())
        elif self._heartbeats_enabled():
            deadlines.append(java_session_deadline(self._heartbeat, self._config))
        if self._rejoin_needed:
            deadlines.append(self._join_retry.at)
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
        out: list[Command] = []
        try:
            handler = self._admit(event)
            self._start(now)
            if handler is not None:
                handler(self, event, now, out)
            self._settle_session(now, out)
            self._drive(now, out)
        except ProtocolViolation as exc:
            self._poison(exc, out)
            raise
        return out

    def tick(self, now: float) -> list[Command]:
        """Fire due timers (heartbeat, session, poll watchdog, retries) at ``now``."""
        self._raise_if_poisoned()
        self._start(now)
        out: list[Command] = []
        if self._state in (MemberState.CLOSED, MemberState.FATAL):
            return out
        self._check_poll_watchdog(now, out)
        self._settle_session(now, out)
        self._drive(now, out)
        return out

    # ---------------------------------------------------------------- the event table
    def _admit(self, event: ev.Event) -> _Handler | None:
        """The handler ``event`` runs now, or None if it is ignored (stale or on purpose).

        The one place that decides what an event may do: ``EVENT_TABLE`` for the state, then
        what the event names (the step it completes, the request it answers). Nothing changes
        before it returns.

        Raises:
            ProtocolViolation: the event is illegal now.

        """
        kind = type(event)
        handler = self._HANDLERS.get(kind)
        if handler is None:
            raise ProtocolViolation(f"unknown event {event!r}")
        answered: InFlight | None = None
        if kind in RESPONSES:
            answered = self._in_flight.get(event.request_id)  # type: ignore[union-attr]
            if answered is None:  # Rule 4: stale, in every state
                log.debug("group %s: dropping stale %s", self._config.group_id, _describe(event))
                return None
        verdict = EVENT_TABLE[self._state][kind]
        if answered is not None and answered.request is Request.SYNC_PROBE and self._state is not MemberState.FATAL:
            verdict = Verdict.HANDLE  # checked below: a probe may be answered in any live state
        if verdict is Verdict.ILLEGAL:
            raise ProtocolViolation(f"{_describe(event)} is illegal in state {self._state.name}")
        if verdict is Verdict.IGNORE:
            return None
        if answered is not None and kind not in ANSWERS[answered.request]:
            raise ProtocolViolation(f"{_describe(event)} cannot answer a {answered.request.value} request")
        if answered is not None and answered.request is Request.SYNC_PROBE and isinstance(event, ev.SyncGroupResponded):
            # sent in STABLE, answered in whatever state the member is in by then: the probe's
            # handler judges whether the answer still says anything (``_on_probe``)
            return None if self._state in (MemberState.LEAVING, MemberState.CLOSED) else GroupMachine._on_probe
        if isinstance(event, ev.StepCompleted):
            step = self._pending_step
            if step is None or step.step_id != event.step_id:
                raise ProtocolViolation(f"StepCompleted({event.step_id}) but pending step is {step!r}")
        elif isinstance(event, ev.Subscribe):
            if self._closing is not None:
                raise ProtocolViolation("subscribe after close")
        elif isinstance(event, ev.Leave) and self._closing is not None:
            return None  # already closing
        return handler

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

    def _start(self, now: float) -> None:
        """The first call starts the poll watchdog's clock."""
        if not self._poll.started:
            self._poll = self._poll.polled(now)

    def _request_id(self, request: Request, now: float) -> int:
        rid = self._next_request_id
        self._next_request_id += 1
        self._in_flight[rid] = InFlight(request, self._generation.generation_id, now)
        return rid

    def _answered(self, request_id: int) -> InFlight:
        """The request a response answers (``_admit`` checked that it is in flight)."""
        return self._in_flight.pop(request_id)

    def _awaiting(self, request: Request) -> bool:
        return any(entry.request is request for entry in self._in_flight.values())

    def _forget(self, requests: frozenset[Request]) -> None:
        """Stop waiting for ``requests``: their responses are stale from now on."""
        for rid, entry in list(self._in_flight.items()):
            if entry.request in requests:
                del self._in_flight[rid]

    def _heartbeats_enabled(self) -> bool:
        return (
            self._state in HEARTBEAT_STATES
            and self._generation.is_valid()
            and self._coordinator.node_id is not None
        )

    def _poll_deadline(self) -> float:
        return self._poll.last + self._config.max_poll_interval_ms / 1000

    def _session_deadline(self) -> float:
        """The first moment the coordinator may have removed the member (session or rebalance timeout)."""
        return session_deadline(self._heartbeat, self._config)

    def _holds_for_session(self) -> bool:
        """A member holding partitions under a generation (``_check_session`` watches it)."""
        return (
            bool(self._owned)
            and self._generation.is_valid()
            and self._closing is None
            and self._state not in (MemberState.CLOSED, MemberState.FATAL, MemberState.LEAVING)
        )

    def _rejoin_pending(self) -> bool:
        """A JoinGroup with the member's generation is about to go out to a known coordinator."""
        return (
            self._rejoin_needed
            and self._state is MemberState.UNJOINED
            and self._generation.is_valid()
            and self._coordinator.node_id is not None
            and bool(self._subscription)
            and not self._poll.expired
        )

    def _parked(self) -> bool:
        """A JoinGroup or SyncGroup is unanswered: the coordinator may be keeping the member alive."""
        return self._awaiting(Request.JOIN_GROUP) or self._awaiting(Request.SYNC_GROUP)

    def _backoff(self, attempts: int) -> float:
        return next_backoff_s(
            attempts, self._config.retry_backoff_ms, self._config.retry_backoff_max_ms, self._rng
        )

    def _new_step(self, **kwargs: Any) -> RebalanceStep:
        step = RebalanceStep(step_id=self._next_step_id, generation=self._generation, **kwargs)
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
        node_id = self._coordinator.node_id
        if node_id is not None:
            log.info("group %s: coordinator %s marked unknown: %s", self._config.group_id, node_id, reason)
        self._coordinator = self._coordinator.lost(now + self._backoff(self._coordinator.lookup.attempts))
        self._forget(_GENERATION_REQUESTS)  # responses from the old coordinator no longer count
        if self._state in (MemberState.JOINING, MemberState.SYNCING, MemberState.ASSIGNING):
            self._state = MemberState.UNJOINED
            self._request_rejoin(f"coordinator lost during rebalance: {reason}")

    def _reset_generation(self, reason: str, out: list[Command], *, reset_member_id: bool) -> None:
        """Drop the generation; owned partitions become lost (delivered as a step)."""
        member_id = UNKNOWN_MEMBER_ID if reset_member_id else self._generation.member_id
        log.info(
            "group %s member %r: resetting generation %d (%s)%s",
            self._config.group_id, self._generation.member_id, self._generation.generation_id,
            reason, "; member id reset" if reset_member_id else "",
        )
        self._generation = Generation(NO_GENERATION, member_id, None)
        self._forget(_GENERATION_REQUESTS)
        self._request_rejoin(reason)
        if self._state not in (MemberState.PREPARING, MemberState.RECONCILING):
            self._state = MemberState.UNJOINED
        self._deliver_lost_if_needed(reason, out)

    def _deliver_lost_if_needed(self, reason: str, out: list[Command]) -> None:
        """Owned partitions without a valid generation are lost (Java ``onPartitionsLost``)."""
        if self._owned and not self._generation.is_valid() and self._pending_step is None:
            out.append(self._give_up(self._owned, reason))
            self._state = MemberState.PREPARING

    def _give_up(self, partitions: frozenset[TopicPartition], reason: str) -> DeliverStep:
        """The step that takes ``partitions`` from the member: revoked, or lost without a valid generation.

        Without a valid generation their offsets cannot be committed (Java ``onPartitionsLost``).
        """
        self._owned = self._owned - partitions
        valid = self._generation.is_valid()
        none: frozenset[TopicPartition] = frozenset()
        return DeliverStep(self._new_step(
            revoked=partitions if valid else none, lost=none if valid else partitions, owned=self._owned, reason=reason
        ))

    def _lose_standing(self, disposition: Disposition, reason: str, now: float, out: list[Command]) -> None:
        """A response says the member lost its generation (RESET_*) or its coordinator (REDISCOVER)."""
        if disposition is Disposition.REDISCOVER:
            self._mark_coordinator_unknown(reason, now)
        else:
            self._reset_generation(reason, out, reset_member_id=disposition is Disposition.RESET_MEMBER)

    def _coordinator_id(self) -> int:
        """The coordinator's node id, where the state says it is known."""
        node_id = self._coordinator.node_id
        assert node_id is not None
        return node_id

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
        if self._owned and not self._generation.is_valid():
            # deferred while a step ran; the coordinator is not needed to let them go (and a
            # member that cannot find it must not go on handing them out)
            self._deliver_lost_if_needed("generation reset", out)
        if self._coordinator.node_id is None:
            if not self._awaiting(Request.FIND_COORDINATOR) and self._coordinator.due(now):
                out.append(wire.find_coordinator(self._config, self._request_id(Request.FIND_COORDINATOR, now)))
            return
        if (
            self._pending_step is None
            and self._rejoin_needed
            and self._state in (MemberState.UNJOINED, MemberState.STABLE)
            and self._subscription
            and not self._poll.expired
            and now >= self._join_retry.at
        ):
            self._prepare_join(now, out)
        self._maybe_probe(now, out)
        self._maybe_heartbeat(now, out)

    def _maybe_probe(self, now: float, out: list[Command]) -> None:
        """After an outage past the session timeout: a SyncGroup asks (``classic_session``'s docstring)."""
        probe, generation = self._probe, self._generation
        if probe is None or now < probe[1] or self._state is not MemberState.STABLE:
            return
        if probe[0] == generation.generation_id and not self._awaiting(Request.SYNC_PROBE):
            log.info("group %s member %r: asking the coordinator whether generation %d still holds (SyncGroup)",
                     self._config.group_id, generation.member_id, generation.generation_id)
            rid = self._request_id(Request.SYNC_PROBE, now)
            out.append(wire.sync_group(self._config, rid, self._coordinator_id(), generation, ()))

    def _on_probe(self, event: ev.SyncGroupResponded, now: float, out: list[Command]) -> None:
        """The coordinator's answer to ``_maybe_probe``'s SyncGroup."""
        sent = self._answered(event.request_id)
        if self._probe is None or sent.generation_id != self._generation.generation_id:
            return  # the member moved on meanwhile (a new generation, a reset): the answer is moot
        code, name = event.error_code, error_name(event.error_code)
        if code == COORDINATOR_LOAD_IN_PROGRESS:
            self._probe = (self._probe[0], now + self._config.retry_backoff_ms / 1000)
            return
        disposition = classify(Api.SYNC_GROUP, code)
        if disposition in (Disposition.OK, Disposition.REJOIN):
            # in the loaded group; a SyncGroup renews no session: the heartbeat timer goes on
            log.info("group %s member %r: the coordinator still has the member in generation %d (SyncGroup %s)",
                     self._config.group_id, self._generation.member_id, sent.generation_id, name)
            self._probe = None
            if disposition is Disposition.REJOIN:
                self._request_rejoin(f"SyncGroup returned {name}")
        elif disposition is Disposition.REDISCOVER:
            self._mark_coordinator_unknown(f"SyncGroup returned {name}", now)
        elif disposition in _STANDING_LOST:
            self._probe = None
            self._lose_standing(disposition, f"SyncGroup returned {name}", now, out)
        elif disposition is Disposition.FATAL:
            self._fatal_response(Api.SYNC_GROUP, code, out)
        else:
            self._probe = None
            self._reset_generation(f"SyncGroup returned {name}", out, reset_member_id=False)

    def _maybe_heartbeat(self, now: float, out: list[Command]) -> None:
        # in doubt: ask at once (unless a SyncGroup probe is the question: a Heartbeat's answer
        # says nothing then, see _maybe_probe)
        due = now >= self._heartbeat.next_at or (self._in_doubt and self._probe is None)
        if self._heartbeats_enabled() and not self._awaiting(Request.HEARTBEAT) and due:
            node_id = self._coordinator_id()
            rid = self._request_id(Request.HEARTBEAT, now)
            out.append(wire.heartbeat(self._config, rid, node_id, self._generation))
            self._heartbeat = self._heartbeat.due_at(now + self._config.heartbeat_interval_ms / 1000)

    def _prepare_join(self, now: float, out: list[Command]) -> None:
        """Step 1-2 (acquiesce, commit): revoke before JoinGroup, or join at once."""
        if self._config.protocol is RebalanceProtocol.EAGER:
            revoked = self._owned
        else:
            revoked = frozenset(tp for tp in self._owned if tp.topic not in self._subscription)
        if revoked:
            out.append(self._give_up(revoked, self._rejoin_reason))
            self._state = MemberState.PREPARING
            return
        self._send_join(now, out)

    def _send_join(self, now: float, out: list[Command]) -> None:
        node_id = self._coordinator_id()
        self._joined_subscription = self._subscription
        protocols = wire.join_protocols(
            self._config, self._subscription, self._owned, self._generation.generation_id,
            (self._last_assigned_generation, self._last_assigned),
        )
        rid = self._request_id(Request.JOIN_GROUP, now)
        self._state = MemberState.JOINING
        reason = truncate_reason(self._rejoin_reason or "joining the group")
        self._join_reason = reason
        log.info(
            "group %s member %r: JoinGroup (%s)", self._config.group_id, self._generation.member_id, reason
        )
        out.append(wire.join_group(self._config, rid, node_id, self._generation.member_id, protocols, reason))

    def _drive_close(self, now: float, out: list[Command]) -> None:
        assert self._closing is not None
        if self._pending_step is not None:
            return  # wait for the poll thread to finish the outstanding step
        if self._owned:
            out.append(self._give_up(self._owned, self._closing.reason))
            return
        send = self._closing.send_leave_group
        if send is None:
            send = self._config.group_instance_id is None
        node_id = self._coordinator.node_id
        if send and node_id is not None and self._generation.member_id:
            rid = self._request_id(Request.LEAVE_GROUP, now)
            reason = self._closing.reason
            out.append(wire.leave_group(self._config, rid, node_id, self._generation.member_id, reason))
            self._state = MemberState.LEAVING
        else:
            self._state = MemberState.CLOSED
        self._generation = Generation()
        self._forget(frozenset(Request) - {Request.LEAVE_GROUP})

    # ---------------------------------------------------------------- timers
    def _check_poll_watchdog(self, now: float, out: list[Command]) -> None:
        """KIP-62: no poll() within max_poll_interval_ms -> leave (dynamic) and reset."""
        if self._poll.expired or self._closing is not None or not self._subscription:
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
        self._poll = self._poll.expire()
        node_id = self._coordinator.node_id
        if self._config.group_instance_id is None and node_id is not None and self._generation.member_id:
            rid = self._request_id(Request.LEAVE_GROUP, now)
            out.append(wire.leave_group(self._config, rid, node_id, self._generation.member_id, reason))
        self._reset_generation("poll timeout", out, reset_member_id=True)

    def _settle_session(self, now: float, out: list[Command]) -> None:
        """Apply the session timer; hand-outs stay on hold only while the doubt lasts."""
        if self._state not in (MemberState.CLOSED, MemberState.FATAL):
            self._check_session(now, out)
        holds = self._holds_for_session()
        if self._probe is not None and not (holds and self._probe[0] == self._generation.generation_id):
            self._probe = None  # a new generation or none: nothing left to confirm
        self._in_doubt = holds and (now >= self._session_deadline() or self._probe is not None)

    def _check_session(self, now: float, out: list[Command]) -> None:
        """No successful heartbeat for session_timeout_ms: the member may be out of the group (``session_verdict``)."""
        verdict = session_verdict(
            now,
            holds=self._holds_for_session(),
            deadline=self._session_deadline(),
            can_ask=self._parked() or self._heartbeats_enabled() or self._rejoin_pending(),
            heartbeats=self._heartbeats_enabled(),
            java_deadline=java_session_deadline(self._heartbeat, self._config),
        )
        if verdict is SessionVerdict.ASK and not self._in_doubt:
            log.warning(
                "group %s member %r: no successful heartbeat within session_timeout_ms (%d ms): "
                "holding back records until the coordinator answers (%s)",
                self._config.group_id, self._generation.member_id, self._config.session_timeout_ms,
                "a Heartbeat" if self._heartbeats_enabled() else "its JoinGroup or SyncGroup",
            )
        elif verdict is SessionVerdict.LOST and self._probe is None:  # keep, hold, probe once found
            log.warning(
                "group %s member %r: no successful heartbeat within session_timeout_ms (%d ms) and the "
                "coordinator unknown: holding back records, keeping the partitions, until the "
                "coordinator is found again and confirms the member",
                self._config.group_id, self._generation.member_id, self._config.session_timeout_ms,
            )
            self._probe = (self._generation.generation_id, now)
        elif verdict is SessionVerdict.REDISCOVER:
            log.warning(
                "group %s member %r: no successful heartbeat within session_timeout_ms (%d ms); "
                "marking the coordinator unknown",
                self._config.group_id, self._generation.member_id, self._config.session_timeout_ms,
            )
            self._mark_coordinator_unknown("session timeout expired", now)
            self._heartbeat = self._heartbeat.reset(now)

    # ---------------------------------------------------------------- user events
    def _on_subscribe(self, event: ev.Subscribe, now: float, out: list[Command]) -> None:
        if event.topics != self._subscription:
            self._subscription = event.topics
            self._request_rejoin(f"subscription changed to {sorted(event.topics)}")

    def _on_polled(self, event: ev.Polled, now: float, out: list[Command]) -> None:
        expired = self._poll.expired
        self._poll = self._poll.polled(now)
        if expired:
            self._join_retry = self._join_retry.allow_from(now)

    def _on_step_completed(self, event: ev.StepCompleted, now: float, out: list[Command]) -> None:
        step = self._pending_step
        assert step is not None  # _admit checked it is the pending step
        self._pending_step = None
        if self._closing is not None:
            return
        if self._state is MemberState.PREPARING:
            # the drive loop sends JoinGroup next (or delivers lost partitions first)
            self._state = MemberState.STABLE if self._generation.is_valid() else MemberState.UNJOINED
        elif self._state is MemberState.RECONCILING:
            self._state = MemberState.STABLE
            if step.revoked and self._config.protocol is RebalanceProtocol.COOPERATIVE:
                self._request_rejoin("cooperative: partitions were revoked; second round")
                self._second_round_after = step.generation.generation_id

    def _on_leave(self, event: ev.Leave, now: float, out: list[Command]) -> None:
        self._closing = event
        self._rejoin_needed = False
        log.info("group %s member %r: leaving: %s", self._config.group_id, self._generation.member_id, event.reason)
        self._forget(_ROUND_REQUESTS)  # an in-flight join or sync no longer matters
        if self._state in (MemberState.JOINING, MemberState.ASSIGNING, MemberState.SYNCING):
            self._state = MemberState.UNJOINED

    def _on_request_rejoin(self, event: ev.RequestRejoin, now: float, out: list[Command]) -> None:
        self._request_rejoin(event.reason)

    def _on_coordinator_dead(self, event: ev.CoordinatorDead, now: float, out: list[Command]) -> None:
        self._mark_coordinator_unknown(event.reason, now)

    def _on_commit_error(self, event: ev.CommitErrorObserved, now: float, out: list[Command]) -> None:
        """The one place a commit's (or offset fetch's) error code takes effect on the membership."""
        disposition = classify(Api(event.api), event.code)
        unchanged = event.generation == self._generation
        name = error_name(event.code)
        if disposition is Disposition.FATAL:
            # Java OffsetCommitResponseHandler: FENCED_INSTANCE_ID (and the other fatal codes)
            # poison the member only if the commit was sent in the current generation; a stale
            # commit's error says nothing about the member as it is now
            if unchanged:
                self._fatal_response(Api.OFFSET_COMMIT, event.code, out)
        elif disposition is Disposition.REJOIN:
            self._request_rejoin(f"{event.api} returned {name}")
        elif disposition is Disposition.REDISCOVER or (disposition in _STANDING_LOST and unchanged):
            self._lose_standing(disposition, f"{event.api} returned {name}", now, out)

    # ---------------------------------------------------------------- responses
    def _context(self) -> str:
        return (
            f"group_id={self._config.group_id!r}, member_id={self._generation.member_id!r}, "
            f"generation_id={self._generation.generation_id}, "
            f"group_instance_id={self._config.group_instance_id!r}"
        )

    def _fatal_response(self, api: Api, code: int, out: list[Command]) -> None:
        message = self._context()
        if code == FENCED_INSTANCE_ID:
            message = (
                f"group_instance_id {self._config.group_instance_id!r} was fenced: another consumer with "
                f"the same instance id joined the group, so two processes share it ({message})"
            )
        error = broker_error(api, code, message)
        if not isinstance(error, FatalGroupError):
            error = FatalGroupError(api, code, message)  # whatever the code, the member stops
        self._poison(error, out)

    def _on_find_coordinator(self, event: ev.FindCoordinatorResponded, now: float, out: list[Command]) -> None:
        self._answered(event.request_id)
        disposition = classify(Api.FIND_COORDINATOR, event.error_code)
        if disposition is Disposition.OK:
            self._coordinator = self._coordinator.found(event.node_id)
            self._failure_log.forget()
            self._heartbeat = self._heartbeat.reset(now)
            log.info(
                "group %s: discovered coordinator %s at %s:%s",
                self._config.group_id, event.node_id, event.host, event.port,
            )
        elif disposition is Disposition.FATAL:
            self._fatal_response(Api.FIND_COORDINATOR, event.error_code, out)
        else:
            self._coordinator = self._coordinator.lookup_failed(now, self._backoff)
            log.info("group %s: FindCoordinator failed: %s", self._config.group_id, error_name(event.error_code))

    def _on_join(self, event: ev.JoinGroupResponded, now: float, out: list[Command]) -> None:
        sent = self._answered(event.request_id)
        disposition = classify(Api.JOIN_GROUP, event.error_code)
        name = error_name(event.error_code)
        if disposition is Disposition.OK:
            if self._missed_generation(sent, event):
                self._give_up_missed(sent, event, out)
                return
            self._join_retry = self._join_retry.succeeded()
            # Java: a subscription changed while the join was in flight needs another round
            self._rejoin_needed = self._subscription != self._joined_subscription
            self._rejoin_reason = "subscription changed during JoinGroup" if self._rejoin_needed else ""
            self._generation = Generation(event.generation_id, event.member_id, event.protocol_name)
            if self._second_round_after is not None and event.generation_id > self._second_round_after:
                self._second_round_after = None  # the second round is this new generation
            alive_at, calm_at = self._heartbeat.alive_at, self._heartbeat.calm_at
            if event.generation_id > self._joined_generation_id:
                # a completed join: the coordinator renewed every member's session then, after
                # this JoinGroup arrived (a Stable group's answer to a follower's rejoin, with
                # the generation the member already had, renews nothing)
                alive_at = max(alive_at, sent.sent_at)
                self._joined_generation_id = event.generation_id
            self._heartbeat = HeartbeatTimer(
                # calm: an answered JoinGroup found the group past its join phase on arrival
                now + self._config.heartbeat_interval_ms / 1000, alive_at, now, max(calm_at, sent.sent_at)
            )
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
                    topics = wire.group_topics(self._subscription, event.members)
                    out.append(WatchGroupTopics(event.generation_id, topics))
                self._send_sync((), out, now)
        elif disposition is Disposition.ADOPT_MEMBER_ID:
            self._generation = Generation(NO_GENERATION, event.member_id, None)
            self._send_join(now, out)
        elif disposition is Disposition.RETRY_NOW:
            self._send_join(now, out)
        elif disposition in _STANDING_LOST:
            self._state = MemberState.UNJOINED
            self._lose_standing(disposition, f"JoinGroup returned {name}", now, out)
        elif disposition in (Disposition.RETRY, Disposition.RAISE):
            self._state = MemberState.UNJOINED
            self._join_retry = self._join_retry.failed(now, self._backoff)
            if disposition is Disposition.RAISE:
                # Java JoinGroupResponseHandler, final else: raised from poll(), joined again
                out.append(Notify(broker_error(Api.JOIN_GROUP, event.error_code, self._context())))
        else:
            self._fatal_response(Api.JOIN_GROUP, event.error_code, out)

    def _missed_generation(self, sent: InFlight, event: ev.JoinGroupResponded) -> bool:
        """Whether a cooperative member holding partitions joins past a generation formed without it.

        A static member that did not rejoin in time stays in the group when the join phase ends
        (Kafka removes only dynamic members then, ``GroupMetadataManager.completeClassicGroupJoin``);
        the leader assigns it from its previous JoinGroup's subscription, whose owned partitions
        are older than the ones it holds now, so that generation may have given them to others
        without a revocation. A JoinGroup sent in generation ``g`` and answered with ``g + 2`` or
        later proves that such a generation passed.
        """
        return (
            self._config.protocol is RebalanceProtocol.COOPERATIVE
            and bool(self._owned)
            and sent.generation_id > NO_GENERATION
            and event.generation_id > sent.generation_id + 1
        )

    def _give_up_missed(self, sent: InFlight, event: ev.JoinGroupResponded, out: list[Command]) -> None:
        """Lose the owned partitions (no commit: the offsets may be another member's now), then rejoin.

        The answered generation is not adopted: its round counted the stale claims, and a member
        that stays out of its SyncGroup cannot be given anything in it. The next JoinGroup, with
        no owned partitions, changes the member's subscription, so the coordinator starts another
        round (Java's client keeps the partitions into the new generation and revokes them after
        its SyncGroup, committing offsets another member has moved past meanwhile).
        """
        reason = (
            f"JoinGroup sent in generation {sent.generation_id} was answered with generation "
            f"{event.generation_id}: a generation formed without this member"
        )
        log.warning("group %s member %r: %s; its partitions are lost", self._config.group_id, event.member_id, reason)
        self._generation = Generation(NO_GENERATION, event.member_id, None)
        self._state = MemberState.UNJOINED
        self._request_rejoin(reason)
        self._deliver_lost_if_needed(reason, out)

    def _start_assignment(self, event: ev.JoinGroupResponded, out: list[Command], now: float) -> None:
        try:
            members = wire.member_subscriptions(event.members)
        except MalformedMetadata as exc:
            self._abort_round(exc, out, now)
            return
        self._state = MemberState.ASSIGNING
        rid = self._request_id(Request.ASSIGNMENT, now)  # the assignment result is matched like a response
        out.append(ComputeAssignment(rid, event.protocol_name or "", members))

    def _abort_round(self, error: KGroupError, out: list[Command], now: float) -> None:
        """A non-fatal failure of this rebalance round: report it, rejoin after a backoff."""
        log.warning("group %s: rebalance round failed: %s", self._config.group_id, error)
        out.append(Notify(error))
        # Java: a failed onLeaderElected/onJoinComplete raises from poll() and the member joins
        # again; the generation is not reset and owned partitions stay owned (not lost)
        self._state = MemberState.UNJOINED
        self._request_rejoin(str(error))
        self._join_retry = self._join_retry.failed(now, self._backoff)

    def _on_assignment_computed(self, event: ev.AssignmentComputed, now: float, out: list[Command]) -> None:
        self._answered(event.request_id)
        self._send_sync(event.assignments, out, now)

    def _on_assignment_failed(self, event: ev.AssignmentFailed, now: float, out: list[Command]) -> None:
        self._answered(event.request_id)
        error = event.error if isinstance(event.error, KGroupError) else KGroupError(str(event.error))
        self._abort_round(error, out, now)

    def _send_sync(self, assignments: tuple[tuple[str, bytes], ...], out: list[Command], now: float) -> None:
        node_id = self._coordinator_id()
        rid = self._request_id(Request.SYNC_GROUP, now)
        self._state = MemberState.SYNCING
        out.append(wire.sync_group(self._config, rid, node_id, self._generation, assignments))

    def _on_sync(self, event: ev.SyncGroupResponded, now: float, out: list[Command]) -> None:
        self._answered(event.request_id)
        disposition = classify(Api.SYNC_GROUP, event.error_code)
        name = error_name(event.error_code)
        if disposition is Disposition.OK:
            try:
                assigned = wire.assigned_partitions(event.assignment)
            except MalformedMetadata as exc:
                self._abort_round(exc, out, now)
                return
            self._on_assignment(assigned, out)
        elif disposition is Disposition.REJOIN:
            self._state = MemberState.UNJOINED
            self._request_rejoin(f"SyncGroup returned {name}")
        elif disposition in _STANDING_LOST:
            self._state = MemberState.UNJOINED
            self._lose_standing(disposition, f"SyncGroup returned {name}", now, out)
            if disposition is Disposition.REDISCOVER:
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
            self._join_retry = self._join_retry.allow_from(0.0)
            return
        if self._config.protocol is RebalanceProtocol.EAGER:
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
        sent = self._answered(event.request_id)
        if sent.generation_id != self._generation.generation_id:
            log.debug(
                "group %s: dropping heartbeat response of generation %d", self._config.group_id, sent.generation_id
            )
            return
        disposition = classify(Api.HEARTBEAT, event.error_code)
        name = error_name(event.error_code)
        if disposition is Disposition.OK:
            self._heartbeat = self._heartbeat.confirmed(sent.sent_at, now, calm=True)
        elif disposition is Disposition.REJOIN:
            self._heartbeat = self._heartbeat.confirmed(sent.sent_at, now, calm=False)
            if self._state in (MemberState.STABLE, MemberState.RECONCILING):
                self._request_rejoin(f"Heartbeat returned {name}")
        elif disposition in _STANDING_LOST:
            self._lose_standing(disposition, f"Heartbeat returned {name}", now, out)
        elif disposition is Disposition.RETRY:
            # Java HeartbeatResponseHandler, final else: failHeartbeat(), retried after backoff
            log.warning("group %s: Heartbeat returned %s; retrying", self._config.group_id, name)
            self._heartbeat = self._heartbeat.due_at(now + self._config.retry_backoff_ms / 1000)
        else:
            self._fatal_response(Api.HEARTBEAT, event.error_code, out)

    def _on_leave_response(self, event: ev.LeaveGroupResponded, now: float, out: list[Command]) -> None:
        self._answered(event.request_id)
        code = event.error_code or next((m.error_code for m in event.members), 0)  # v3+: this member's own
        if code:
            log.info("group %s: LeaveGroup returned %s (ignored)", self._config.group_id, error_name(code))
        if self._state is MemberState.LEAVING:
            self._state = MemberState.CLOSED

    def _on_request_failed(self, event: ev.RequestFailed, now: float, out: list[Command]) -> None:
        sent = self._answered(event.request_id)
        request = sent.request
        self._failure_log.log(log, (request, event.reason), now, "group %s: %s request failed: %s",
                              self._config.group_id, request.value, event.reason)
        if request is Request.FIND_COORDINATOR:
            self._coordinator = self._coordinator.lookup_failed(now, self._backoff)
        elif request is Request.LEAVE_GROUP:
            if self._state is MemberState.LEAVING:
                self._state = MemberState.CLOSED
        elif request is Request.ASSIGNMENT:
            self._abort_round(KGroupError(event.reason), out, now)
        else:
            if request is Request.HEARTBEAT and sent.generation_id != self._generation.generation_id:
                return
            self._mark_coordinator_unknown(f"{request.value} failed: {event.reason}", now)

    #: the handler of each event type; ``EVENT_TABLE`` says in which states it runs
    _HANDLERS: ClassVar[Mapping[type, _Handler]] = {
        ev.Subscribe: _on_subscribe,
        ev.Polled: _on_polled,
        ev.StepCompleted: _on_step_completed,
        ev.Leave: _on_leave,
        ev.RequestRejoin: _on_request_rejoin,
        ev.CoordinatorDead: _on_coordinator_dead,
        ev.CommitErrorObserved: _on_commit_error,
        ev.FindCoordinatorResponded: _on_find_coordinator,
        ev.JoinGroupResponded: _on_join,
        ev.AssignmentComputed: _on_assignment_computed,
        ev.AssignmentFailed: _on_assignment_failed,
        ev.SyncGroupResponded: _on_sync,
        ev.HeartbeatResponded: _on_heartbeat,
        ev.LeaveGroupResponded: _on_leave_response,
        ev.RequestFailed: _on_request_failed,
    }


def _describe(event: ev.Event) -> str:
    """``event`` for an error message: its type and the request or step it names."""
    request_id = getattr(event, "request_id", None)
    if request_id is not None:
        return f"{type(event).__name__} (request {request_id})"
    if isinstance(event, ev.StepCompleted):
        return f"StepCompleted({event.step_id})"
    return type(event).__name__
