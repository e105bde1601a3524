"""ConsumerGroupMachine: the sans-IO member of the consumer group protocol (KIP-848).

The classic protocol's machine (:mod:`kgroup.membership.machine`) joins, syncs and runs the
leader's assignor; under the consumer protocol the broker computes every assignment and the
member has one request, ConsumerGroupHeartbeat (:mod:`kgroup.protocol.consumer_group_heartbeat`).
The rules are the classic machine's:

Rule 1: every transition is in this module. ``handle(event, now)`` and ``tick(now)`` return
        the commands to execute; the driver executes them and feeds the answers back.
Rule 2: no IO, no clock, no threads. ``now`` is seconds on the driver's monotonic clock; the
        member id and the backoff jitter come from the injected ``rng``.
Rule 3: ``kgroup.membership.consumer_group_states.EVENT_TABLE`` says which events each state
        takes (handle, ignore, illegal). ``_admit`` consults it, and checks the event against
        the machine (the step it completes is out, no subscription after close), before
        anything changes. An illegal input (a bug) raises ``ProtocolViolation`` and poisons
        the machine: every later call raises it again. A fatal *broker* error is not a bug: the
        machine moves to FATAL, reports ``Fail`` once, releases its partitions as lost, and
        sends nothing else.
Rule 4: every response carries the request id of the command that caused it; a response whose
        id is no longer in flight (the coordinator moved, the member was fenced or left) is
        dropped.

The member, as Java's ``ConsumerMembershipManager`` / ``AbstractMembershipManager`` and
``ConsumerHeartbeatRequestManager`` run it (docs/kip848.md has the state table):

1. **Join**: after ``Subscribe``, the next ``Polled`` (Java joins only inside ``poll()``) moves
   UNSUBSCRIBED -> JOINING; the member heartbeats at once with epoch 0 and every field (its
   member id, a random UUID it generated, KIP-1082; the subscription; the rebalance timeout).
2. **Heartbeat**: the broker answers with the member epoch, the heartbeat interval and, when it
   changed, the target assignment (topic ids and partitions). Later heartbeats carry only what
   changed since the last one sent; after an error the next carries every field again.
3. **Reconcile** (state RECONCILING): topic ids are resolved to names from metadata
   (``MetadataUpdated``; ``RequestMetadata`` asks for ids not known yet); only the resolved part
   is reconciled. One ``DeliverStep`` goes to the poll thread: commit (auto-commit), then
   ``revoked = owned - assigned``, then ``assigned - owned``, in that order. A newer target
   received meanwhile replaces the one waiting; the step in progress finishes first.
4. **Acknowledge**: when the step completes the reconciled assignment becomes current and the
   member heartbeats at once (ACKNOWLEDGING) with it as ``topic_partitions``; then STABLE, or
   RECONCILING again if the target moved on.
5. **Fenced** (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID): the epoch drops to 0, the owned
   partitions go to the poll thread as *lost* (no commit: the epoch is gone), then the member
   rejoins with epoch 0 at once (no backoff). A static member fenced with FENCED_MEMBER_EPOCH
   first releases its instance id with a -2 heartbeat (kgroup, beyond Java: the coordinator
   still holds the instance id at the member's old epoch and refuses epoch 0 with
   UNRELEASED_INSTANCE_ID, which Java's consumer takes as fatal; ``_send_instance_release``).
6. **Leave**: ``Leave`` (close) and ``Unsubscribe`` release the partitions (revoked if the
   member still has an epoch, else lost), then heartbeat with epoch -1, or -2 for a static
   member (``group_instance_id``: it keeps its assignment until the session times out). The
   poll watchdog (``max_poll_interval_ms`` without ``Polled``) sends the same leave heartbeat,
   then releases the partitions as lost (STALE) and rejoins at the next ``Polled``.
7. **The session timer** (kgroup, beyond Java): with the group's session timeout known
   (``SessionTimeoutDescribed``: the group thread asks DescribeConfigs for the group's
   ``consumer.session.timeout.ms``), a member holding partitions whose last successful heartbeat
   was sent ``session_timeout_ms`` ago, or that was told to revoke partitions a rebalance timeout
   ago without its acknowledgement being answered, hands nothing out (``hand_out_on_hold``) until
   the coordinator answers; with the coordinator unknown (a broker restart) it keeps the
   partitions and asks once it is found again: only the coordinator's word (FENCED_MEMBER_EPOCH,
   UNKNOWN_MEMBER_ID) or the poll watchdog gives them up (``_settle_session``; docs/kip848.md,
   "Beyond Java: the session timer").

Besides its ``MemberState`` (Java's names) the machine keeps small frozen sub-states, replaced on
change (``kgroup.membership.consumer_group_states``); the heartbeat timing and sent fields are
apart (``kgroup.membership.consumer_group_heartbeat``), and so are the assignment and steps
(``kgroup.membership.consumer_group_reconcile``) and the session timer
(``kgroup.membership.consumer_group_session``). The heartbeat exchange (sending it, and what each
answer means) is ``HeartbeatExchange`` (``kgroup.membership.consumer_group_exchange``), which the
machine inherits, as Java's ``ConsumerHeartbeatRequestManager`` calls its membership manager.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable, Mapping
from typing import Any, Final
from uuid import UUID

import attrs

from kgroup._error_codes import FENCED_MEMBER_EPOCH, error_name
from kgroup.config import ConsumerConfig
from kgroup.errors import (
    Api,
    Disposition,
    KGroupError,
    ProtocolViolation,
    classify,
)
from kgroup.membership.commands import (
    Command,
    DeliverStep,
    Fail,
    RebalanceStep,
    RequestMetadata,
)
from kgroup.membership.consumer_group_exchange import HeartbeatExchange
from kgroup.membership.consumer_group_heartbeat import NO_ASSIGNMENT, HeartbeatRequestState, LocalAssignment
from kgroup.membership.consumer_group_reconcile import PendingStep, Reconciliation, StepKind, Steps
from kgroup.membership.consumer_group_session import SessionTimer
from kgroup.membership.consumer_group_states import (
    EVENT_TABLE,
    HOLDING,
    LEAVING,
    NOT_IN_GROUP,
    STATES,
    TAKES_ASSIGNMENT,
    TRANSITIONS,
    Lifecycle,
    MemberState,
    Requests,
    Subscription,
)
from kgroup.membership.coordinator import CoordinatorState
from kgroup.membership.core import MemberSnapshot, View, generate_member_id
from kgroup.membership.events import (
    CommitErrorObserved,
    ConsumerGroupEvent,
    ConsumerGroupHeartbeatResponded,
    CoordinatorDead,
    FindCoordinatorResponded,
    Leave,
    LeaveOperation,
    MetadataUpdated,
    Polled,
    RequestFailed,
    RequestRejoin,
    SessionTimeoutDescribed,
    StepCompleted,
    Subscribe,
    Unsubscribe,
)
from kgroup.membership.states import Verdict
from kgroup.protocol.consumer_group_heartbeat import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    TopicIdPartitions,
)
from kgroup.types import Generation, TopicPartition

__all__ = [
    "EVENT_TABLE",
    "STATES",
    "TRANSITIONS",
    "ConsumerGroupMachine",
    "LocalAssignment",
    "MemberState",
    "generate_member_id",
    "generation_of",
]

log = logging.getLogger(__name__)

#: an event handler: ``handler(machine, event, now, out)`` appends the commands to ``out``
_Handler = Callable[["ConsumerGroupMachine", Any, float, list[Command]], None]


def generation_of(member_id: str, member_epoch: int) -> Generation:
    """The member's identity as commits carry it: the member epoch and id, or ``Generation()`` without an epoch.

    OffsetCommit's ``generation_id`` field is ``GenerationIdOrMemberEpoch`` since KIP-848 (Java's
    ``CommitRequestManager``); with no epoch (joining, fenced, left) a commit fails.
    """
    return Generation(member_epoch, member_id) if member_epoch > 0 else Generation()


class ConsumerGroupMachine(HeartbeatExchange):
    """The member of a consumer-protocol group. Not thread-safe: one owner.

    Args:
        config: the consumer's configuration: ``group_id``, ``group_instance_id``,
            ``client_rack``, ``max_poll_interval_ms`` (the watchdog, and the rebalance timeout
            sent unless ``rebalance_timeout_ms`` is set), ``retry_backoff_ms``,
            ``retry_backoff_max_ms``, ``request_timeout_ms``.
        server_assignor: the server-side assignor to ask for (``"uniform"``, ``"range"``), or
            ``None`` for the broker's default.
        rng: randomness for the member id and the backoff jitter (``random.Random(seed)`` in
            tests).
        member_id: use this member id instead of generating one.

    Use: feed ``handle(event, now)`` with events and call ``tick(now)`` at
    ``next_deadline(now)``; execute the returned commands in order.

    """

    def __init__(
        self,
        config: ConsumerConfig,
        *,
        server_assignor: str | None = None,
        rng: random.Random | None = None,
        member_id: str | None = None,
    ) -> None:
        super().__init__(config, rng, member_id)
        self._instance_id = config.group_instance_id
        self._server_assignor = server_assignor
        self._rebalance_timeout_ms = config.effective_rebalance_timeout_ms
        self._fatal: Exception | None = None
        self._poisoned: KGroupError | None = None
        #: the commands of the call in progress (``handle``/``tick`` return them)
        self._out: list[Command] = []
        # the sub-states, each a frozen value replaced on change
        self._subscription = Subscription()
        self._coordinator = CoordinatorState()
        self._requests = Requests()
        self._life = Lifecycle()
        self._rec = Reconciliation()
        self._steps = Steps()
        self._session = SessionTimer()
        # heartbeat timing and sent fields (seconds on the driver's clock)
        self._heartbeat = HeartbeatRequestState(self._backoff, config.retry_backoff_ms / 1000)
        #: the epoch at which an answer shrank the assignment (the member gave partitions up)
        self._gave_up_at_epoch = -1

    # ---------------------------------------------------------------- read-only views
    state = View[MemberState]("_state", "The member state (Java's ``MemberState``, plus CLOSED).")
    state_name = View[str]("_state.name", "The member state's name (Java's ``MemberState``, plus CLOSED).")
    member_id = View[str]("_member_id", "The member id, generated once and kept for the machine's lifetime (KIP-1082).")
    member_epoch = View[int]("_epoch", "The member epoch: 0 while joining, > 0 in the group, -1/-2 when it left.")
    owned = View[frozenset[TopicPartition]](
        "_steps.owned", "The partitions the poll thread owns, as far as the steps delivered so far go."
    )
    coordinator = View[int | None]("_coordinator.node_id", "The coordinator's node id, or ``None`` while unknown.")
    heartbeat_interval_ms = View[int](
        "_heartbeat.interval_ms", "The heartbeat interval the broker gave (0 before the first answer)."
    )
    current_assignment = View[LocalAssignment](
        "_rec.current", "The last reconciled assignment (by topic id), the one the heartbeats acknowledge."
    )
    target_assignment = View[LocalAssignment]("_rec.target", "The last target assignment received from the broker.")
    fatal_error = View[Exception | None]("_fatal", "The fatal error, once FATAL.")

    @property
    def session_timeout_ms(self) -> int | None:
        """The group's session timeout (``consumer.session.timeout.ms``, from DescribeConfigs); None while unknown."""
        timeout_s = self._session.timeout_s
        return None if timeout_s is None else round(timeout_s * 1000)

    @property
    def hand_out_on_hold(self) -> bool:
        """The member may be out of the group: the poll thread hands nothing out.

        In doubt (the session timer, ``_settle_session``), or its partitions wait to be released
        as lost (its epoch gone) behind a step the poll thread is running.
        """
        return self._session.in_doubt or (
            bool(self._steps.owned)
            and (self._epoch <= 0 or self._steps.release_after is StepKind.RELEASE_LOST)
        )

    @property
    def identity(self) -> Generation:
        """The member id and epoch as commits carry them (``generation_of``)."""
        return generation_of(self._member_id, self._epoch)

    def snapshot(self) -> MemberSnapshot:
        """An immutable view for other threads: the state as the poll thread reads it (``STATES``), the identity."""
        return MemberSnapshot(
            STATES[self._state], self.identity, self._steps.owned, self._coordinator.node_id,
            self._subscription.topics, self._instance_id, self._fatal, self.hand_out_on_hold, self._hold_at(),
            self._state.name, self.session_timeout_ms,
        )

    def _hold_at(self) -> float:
        """When ``_settle_session`` will hold the hand-out, unless a heartbeat succeeds first (inf: never)."""
        if not self._holds_for_session():
            return math.inf
        return min([math.inf, *self._session.clocks(self._rebalance_timeout_ms)])

    def next_deadline(self, now: float) -> float:
        """The earliest time after ``now`` at which ``tick`` has something to do (inf: nothing)."""
        if self._state in (MemberState.CLOSED, MemberState.FATAL) or self._poisoned is not None:
            return float("inf")
        deadlines = []
        if self._coordinator.node_id is None:
            deadlines.append(self._coordinator.lookup.at)
        elif self._heartbeats() and self._requests.heartbeat is None:
            deadlines.append(self._heartbeat_due())
        if self._watchdog_armed():
            deadlines.append(self._poll_deadline())
        if self._rec.requested_ids:
            deadlines.append(self._rec.metadata_requested_at + self._config.retry_backoff_max_ms / 1000)
        if self._holds_for_session():
            # the session timer's clocks (one already past is filtered out below)
            deadlines.extend(self._session.clocks(self._rebalance_timeout_ms))
        future = [d for d in deadlines if d > now]
        return min(future) if future else float("inf")

    # ---------------------------------------------------------------- entry points
    def handle(self, event: ConsumerGroupEvent, now: float) -> list[Command]:
        """Process one event at ``now`` (seconds) and return the commands to execute.

        Raises:
            ProtocolViolation: the event is illegal in the current state (poisons), or the
                machine was poisoned before.

        """
        self._raise_if_poisoned()
        return self._run(now, lambda out: self._handle(event, now, out))

    def tick(self, now: float) -> list[Command]:
        """Fire due timers (heartbeat, retries, the poll watchdog) at ``now``."""
        self._raise_if_poisoned()
        self._start(now)
        return self._run(now, lambda out: self._check_poll_watchdog(now, out))

    def _run(self, now: float, first: Callable[[list[Command]], None]) -> list[Command]:
        """``first``, then the session timer and the drive loop: the commands. A ``ProtocolViolation`` poisons."""
        out = self._out = []
        try:
            first(out)
            self._settle_session(now)
            self._drive(now, out)
        except ProtocolViolation as exc:
            self._poisoned = exc
            raise
        return out

    def _handle(self, event: ConsumerGroupEvent, now: float, out: list[Command]) -> None:
        handler = self._admit(event)
        self._start(now)
        if handler is not None:
            handler(self, event, now, out)

    # ---------------------------------------------------------------- the event table
    def _admit(self, event: ConsumerGroupEvent) -> _Handler | None:
        """The handler ``event`` runs now, or None if the state ignores it on purpose (``Verdict.IGNORE``).

        Where it is decided what an event may do, before anything changes: ``EVENT_TABLE`` (which
        has a row for every event type the machine takes), then what the event names: the step
        it completes, no subscription once closing. Its handler matches a response's request id
        (Rule 4). Raises ``ProtocolViolation`` when the event is illegal now.
        """
        kind = type(event)
        verdict = EVENT_TABLE[self._state].get(kind)
        if verdict is None:
            raise ProtocolViolation(f"unknown event {event!r}")
        if verdict is Verdict.ILLEGAL:
            raise ProtocolViolation(f"{kind.__name__} is illegal in state {self._state.name}")
        if verdict is Verdict.IGNORE:
            return None
        if isinstance(event, StepCompleted):
            pending = self._steps.pending
            if pending is None or pending.step.step_id != event.step_id:
                raise ProtocolViolation(f"StepCompleted({event.step_id}) but the pending step is {pending!r}")
        elif isinstance(event, (Subscribe, Unsubscribe)) and self._life.closing is not None:
            raise ProtocolViolation(f"{'subscribe' if isinstance(event, Subscribe) else 'unsubscribe'} after close")
        elif isinstance(event, Leave) and self._life.closing is not None:
            return None  # already closing
        return self._HANDLERS[kind]

    # ---------------------------------------------------------------- helpers
    def _raise_if_poisoned(self) -> None:
        if self._poisoned is not None:
            raise self._poisoned

    def _start(self, now: float) -> None:
        if not self._life.started:
            self._life = attrs.evolve(self._life, started=True, last_poll=now)

    def _transition(self, target: MemberState) -> None:
        if target is self._state:
            return
        if self._state not in TRANSITIONS[target]:
            raise ProtocolViolation(f"illegal transition {self._state.name} -> {target.name}")
        log.info(
            "group %s member %s epoch %d: %s -> %s",
            self._group_id, self._member_id, self._epoch, self._state.name, target.name,
        )
        self._state = target





    def _poll_deadline(self) -> float:
        return self._life.last_poll + self._config.max_poll_interval_ms / 1000

    def _watchdog_armed(self) -> bool:
        return self._coordinator.node_id is not None and self._heartbeats() and self._state not in LEAVING

    def _new_step(self, kind: StepKind, resolved: LocalAssignment | None = None, **fields: Any) -> DeliverStep:
        step = RebalanceStep(step_id=self._steps.next_id, generation=self.identity, **fields)
        self._steps = attrs.evolve(
            self._steps, next_id=self._steps.next_id + 1, pending=PendingStep(step, kind, resolved)
        )
        return DeliverStep(step)

    def _leave_group_epoch(self, operation: LeaveOperation) -> int:
        """Java's ``ConsumerMembershipManager.leaveGroupEpoch``."""
        if operation is LeaveOperation.LEAVE_GROUP or self._instance_id is None:
            return LEAVE_GROUP_MEMBER_EPOCH
        return LEAVE_GROUP_STATIC_MEMBER_EPOCH

    def _sends_leave(self, operation: LeaveOperation) -> bool:
        """Whether closing with ``operation`` sends a leave heartbeat (Java's ``isLeavingGroup``)."""
        return not (operation is LeaveOperation.REMAIN_IN_GROUP and self._instance_id is None)

    # ---------------------------------------------------------------- the drive loop
    def _leave_not_sent(self) -> None:
        self._after_leave_sent()
        self._finish_leave()

    def _looks_for_coordinator(self, now: float) -> bool:
        return self._requests.find is None and self._coordinator.due(now) and self._wants_coordinator()

    def _find_coordinator_sent(self) -> int:
        rid = self._request_id()
        self._requests = attrs.evolve(self._requests, find=rid)
        return rid

    def _drive_with_coordinator(self, now: float, out: list[Command]) -> None:
        """Reconcile, heartbeat."""
        self._maybe_reconcile(now, out)
        if not self._heartbeats():
            return
        if self._state is MemberState.LEAVING or (
            self._requests.heartbeat is None and now >= self._heartbeat_due()
        ):
            self._send_heartbeat(now, out)
            self._maybe_reconcile(now, out)  # the acknowledgement may leave a newer target to reconcile





    def _on_heartbeat_sent(self) -> None:
        """The states a heartbeat ends (Java ``onHeartbeatRequestGenerated``)."""
        if self._state is MemberState.ACKNOWLEDGING:
            self._transition(
                MemberState.STABLE if self._rec.target == self._rec.current else MemberState.RECONCILING
            )
        elif self._state is MemberState.LEAVING:
            self._after_leave_sent()

    def _after_leave_sent(self) -> None:
        if self._life.poll_expired:
            self._transition(MemberState.STALE)
            self._release_lost("left the group: poll() was not called within max_poll_interval_ms")
        else:
            self._transition(MemberState.UNSUBSCRIBED)

    # ---------------------------------------------------------------- reconciliation
    def _maybe_reconcile(self, now: float, out: list[Command]) -> None:
        """Java ``AbstractMembershipManager.maybeReconcile``, the step going to the poll thread."""
        rec = self._rec
        if self._state is not MemberState.RECONCILING or rec.target == rec.current or self._steps.pending is not None:
            return
        if self._steps.retry_at_poll:
            return
        partitions, unresolved, rec = rec.resolve()
        if unresolved and (
            unresolved != rec.requested_ids
            or now >= rec.metadata_requested_at + self._config.retry_backoff_max_ms / 1000
        ):
            log.info(
                "group %s member %s: topic ids %s of the target assignment have no name yet; asking for metadata",
                self._group_id, self._member_id, sorted(str(t) for t in unresolved),
            )
            rec = attrs.evolve(rec, requested_ids=unresolved, metadata_requested_at=now)
            out.append(RequestMetadata(unresolved))
        elif not unresolved:
            rec = attrs.evolve(rec, requested_ids=frozenset())
        self._rec = rec
        resolved = LocalAssignment(rec.target.local_epoch, partitions)
        if rec.current != NO_ASSIGNMENT and partitions == rec.current.partitions:
            # only unresolved topics differ: acknowledge the resolved part (once per target)
            if resolved != rec.current:
                self._rec = attrs.evolve(rec, current=resolved)
                self._transition(MemberState.ACKNOWLEDGING)
            return
        assigned = rec.named(partitions)
        revoked = self._steps.owned - assigned
        added = assigned - self._steps.owned
        if added and (self._requests.heartbeat is not None or self._claim_unanswered()):
            # kgroup, beyond Java: no partition is taken while a heartbeat is unanswered. It told the
            # coordinator what the member owns now; if a newer target came meanwhile, the coordinator
            # released what that heartbeat did not claim, and this target's additions may already be
            # another member's. Its answer brings the newer target, or confirms this one. A claim
            # whose answer never came (lost, timed out, an error) holds the same way until a later
            # heartbeat is answered (the simulator on the consumer protocol, seed 1651: the
            # acknowledgement of a partly resolved target timed out, the rest resolved, and the
            # coordinator had given it to another member)
            return
        log.info(
            "group %s member %s epoch %d: reconciling target %d: %d partitions (added %d, revoked %d)",
            self._group_id, self._member_id, self._epoch, resolved.local_epoch, len(assigned), len(added), len(revoked),
        )
        self._steps = attrs.evolve(self._steps, rejoined_while_reconciling=False)
        out.append(
            self._new_step(
                StepKind.RECONCILE,
                resolved,
                commit=True,
                revoked=revoked,
                assigned=added,
                owned=assigned,
                invoke_assigned=True,
                reason=f"target assignment {resolved.local_epoch} at member epoch {self._epoch}",
            )
        )

    def _claim_unanswered(self) -> bool:
        """A heartbeat that carried the owned partitions has had no answer without error since (``Requests``)."""
        return self._requests.claim_unconfirmed

    def _process_assignment(self, assignment: tuple[TopicIdPartitions, ...]) -> None:
        """Java ``processAssignmentReceived``: a newer target replaces the one waiting."""
        self._rec = self._rec.received(assignment)
        if self._rec.target != self._rec.current:
            self._transition(MemberState.RECONCILING)
        elif self._state in (MemberState.RECONCILING, MemberState.JOINING):
            self._transition(MemberState.STABLE)

    # ---------------------------------------------------------------- releasing partitions
    def _release_lost(self, reason: str) -> None:
        """Deliver the owned partitions as lost, now or once the step in progress completes."""
        if self._steps.pending is not None:
            self._steps = attrs.evolve(self._steps, release_after=StepKind.RELEASE_LOST, release_reason=reason)
            return
        self._deliver_lost(reason)

    def _deliver_lost(self, reason: str) -> None:
        owned = self._steps.owned
        if owned:
            self._out.append(self._new_step(StepKind.RELEASE_LOST, lost=owned, owned=frozenset(), reason=reason))
            self._steps = attrs.evolve(self._steps, owned=frozenset())
        else:
            self._lost_released()

    def _lost_released(self) -> None:
        """The lost partitions are released (Java: the ``onPartitionsLost`` callback completed)."""
        self._rec = self._rec.cleared()
        if self._life.closing is not None:
            return
        if self._state is MemberState.FENCED:
            self._transition_to_joining()
        elif self._state is MemberState.STALE and not self._life.poll_expired:
            self._transition_to_joining()  # the application polled while the partitions were released

    def _transition_to_joining(self) -> None:
        if self._state is MemberState.FATAL:
            return
        pending = self._steps.pending
        if pending is not None and pending.kind is StepKind.RECONCILE:
            self._steps = attrs.evolve(self._steps, rejoined_while_reconciling=True)
        self._epoch = JOIN_GROUP_MEMBER_EPOCH
        self._heartbeat.end_prompt()
        self._transition(MemberState.JOINING)
        # the join heartbeat owns nothing: no revocation can be pending
        self._session = attrs.evolve(self._session, revoke_since=None)
        self._rec = self._rec.rejoining()
        self._steps = attrs.evolve(self._steps, retry_at_poll=False)
        self._subscription = attrs.evolve(self._subscription, updated=False)

    def _transition_to_fenced(self, reason: str, now: float, error_code: int | None = None) -> None:
        """Java ``AbstractMembershipManager.transitionToFenced``.

        ``error_code``: the heartbeat's, when an answer fenced the member; a static member fenced
        with FENCED_MEMBER_EPOCH releases its instance id before the join (``_send_instance_release``).
        """
        if self._state is MemberState.PREPARE_LEAVING:
            # fenced while releasing for a leave: no leave heartbeat, no rejoin; the release in
            # progress completes on its own
            log.info("group %s member %s: fenced while leaving (%s); not sending the leave", self._group_id,
                     self._member_id, reason)
            self._epoch = self._leave_group_epoch(self._leave_operation())
            self._transition(MemberState.LEAVING)
            self._transition(MemberState.UNSUBSCRIBED)
            self._requests = attrs.evolve(self._requests, heartbeat=None)
            self._finish_leave()
            return
        if self._state is MemberState.LEAVING:
            self._transition(MemberState.UNSUBSCRIBED)
            self._finish_leave()
            return
        if self._state in (MemberState.UNSUBSCRIBED, MemberState.FENCED, MemberState.STALE):
            return
        log.info("group %s member %s epoch %d: fenced (%s); releasing partitions as lost, then rejoining",
                 self._group_id, self._member_id, self._epoch, reason)
        self._transition(MemberState.FENCED)
        self._epoch = JOIN_GROUP_MEMBER_EPOCH
        self._requests = attrs.evolve(
            self._requests,
            heartbeat=None,
            release_instance=self._requests.release_instance
            or (self._instance_id is not None and error_code == FENCED_MEMBER_EPOCH),
        )
        self._release_lost(f"fenced: {reason}")

    def _transition_to_fatal(self, error: Exception, out: list[Command]) -> None:
        """Java ``AbstractMembershipManager.transitionToFatal``: no more requests; partitions lost."""
        previous = self._state
        log.error("group %s member %s: fatal: %s", self._group_id, self._member_id, error)
        self._fatal = error
        self._transition(MemberState.FATAL)
        self._requests = attrs.evolve(self._requests, heartbeat=None, find=None)
        out.append(Fail(error))
        if previous in (MemberState.LEAVING, MemberState.PREPARE_LEAVING, MemberState.UNSUBSCRIBED):
            self._requests = attrs.evolve(self._requests, leave=None)
            if self._steps.pending is None and self._life.closing is not None:
                self._close_if_done()
            return
        self._release_lost(f"fatal error: {error}")

    # ---------------------------------------------------------------- leaving
    def _start_leave(self, reason: str) -> None:
        """Java ``leaveGroup``: PREPARE_LEAVING, release the partitions, then the leave heartbeat."""
        self._transition(MemberState.PREPARE_LEAVING)
        log.info("group %s member %s epoch %d: leaving: %s", self._group_id, self._member_id, self._epoch, reason)
        self._release_for_leave(reason)

    def _release_for_leave(self, reason: str) -> None:
        if self._steps.pending is not None:
            self._steps = attrs.evolve(self._steps, release_after=StepKind.RELEASE_LEAVE, release_reason=reason)
            return
        owned = self._steps.owned
        if owned:
            if self._epoch > 0:
                step = self._new_step(StepKind.RELEASE_LEAVE, commit=True, revoked=owned, owned=frozenset(),
                                      reason=reason)
            else:
                step = self._new_step(StepKind.RELEASE_LEAVE, lost=owned, owned=frozenset(), reason=reason)
            self._steps = attrs.evolve(self._steps, owned=frozenset())
            self._out.append(step)
        else:
            self._released_for_leave()

    def _released_for_leave(self) -> None:
        """Java ``clearAssignmentAndLeaveGroup``: the leave heartbeat goes out next, if any."""
        self._rec = self._rec.cleared()
        if self._state is not MemberState.PREPARE_LEAVING:
            return
        operation = self._leave_operation()
        if not self._sends_leave(operation):
            log.info("group %s member %s: closing without leaving the group (%s)", self._group_id,
                     self._member_id, operation.value)
            self._transition(MemberState.UNSUBSCRIBED)
            self._finish_leave()
            return
        self._epoch = self._leave_group_epoch(operation)
        self._transition(MemberState.LEAVING)

    def _leave_operation(self) -> LeaveOperation:
        closing = self._life.closing
        return closing.operation if closing is not None else LeaveOperation.DEFAULT

    def _finish_leave(self) -> None:
        """The leave is over (answered, failed or never sent)."""
        self._requests = attrs.evolve(self._requests, leave=None)
        if self._life.closing is not None:
            self._close_if_done()

    def _close_if_done(self) -> None:
        if self._steps.pending is None and self._requests.leave is None:
            self._transition(MemberState.CLOSED)

    # ---------------------------------------------------------------- the session timer
    def _holds_for_session(self) -> bool:
        """A member in the group holding partitions (``_settle_session`` watches it)."""
        return (
            bool(self._steps.owned)
            and self._epoch > 0
            and self._life.closing is None
            and self._state in HOLDING
            and self._steps.release_after is None
        )

    def _session_renewed(self, previous_target: frozenset[tuple[UUID, int]]) -> None:
        """The current heartbeat was answered without error: move the clocks (``SessionTimer.renewed``)."""
        before = self._session.revoke_since
        self._session = self._session.renewed(
            in_group=self._state not in NOT_IN_GROUP and self._state not in LEAVING,
            target=self._rec.target.partitions,
            previous_target=previous_target,
        )
        if before is None and self._session.revoke_since is not None:
            log.debug("group %s member %s: partitions to revoke; the coordinator's rebalance timeout runs from %.3f",
                      self._group_id, self._member_id, self._session.revoke_since)

    def _settle_session(self, now: float) -> None:
        """The session timer: hand nothing out while the coordinator may have removed the member.

        ``kgroup.membership.consumer_group_session`` says when; docs/kip848.md, "Beyond Java: the
        session timer".
        """
        was_in_doubt = self._session.in_doubt
        self._session, why = self._session.settled(
            now, holds=self._holds_for_session(), rebalance_timeout_ms=self._rebalance_timeout_ms
        )
        if why is not None and not was_in_doubt:
            # with the coordinator unknown (a broker restart, a partition) nothing can be asked
            # yet: the partitions are kept and the heartbeat goes out once it is found again
            log.warning(
                "group %s member %s epoch %d: %s: holding back records, keeping the partitions, until the "
                "coordinator%s answers", self._group_id, self._member_id, self._epoch, why,
                "" if self._coordinator.node_id is not None else " (unknown: finding it again)",
            )

    # ---------------------------------------------------------------- the poll watchdog
    def _check_poll_watchdog(self, now: float, out: list[Command]) -> None:
        """KIP-62 under the consumer protocol: leave, release as lost (STALE), rejoin at the next poll."""
        if not self._watchdog_armed() or now < self._poll_deadline():
            return
        log.warning(
            "group %s member %s: poll() was not called within max_poll_interval_ms (%d ms): the time spent "
            "processing records is too long; leaving the group (increase max_poll_interval_ms or lower "
            "max_poll_records)",
            self._group_id, self._member_id, self._config.max_poll_interval_ms,
        )
        self._life = attrs.evolve(self._life, poll_expired=True)
        self._transition(MemberState.PREPARE_LEAVING)
        self._epoch = self._leave_group_epoch(LeaveOperation.DEFAULT)
        self._rec = attrs.evolve(self._rec, current=NO_ASSIGNMENT)
        self._transition(MemberState.LEAVING)
        self._requests = attrs.evolve(self._requests, heartbeat=None)
        self._heartbeat.reset_backoff()
        self._heartbeat.resend_all()

    # ---------------------------------------------------------------- user events
    def _on_subscribe(self, event: Subscribe, now: float, out: list[Command]) -> None:
        if not event.topics and event.pattern is None:
            self._on_unsubscribe(Unsubscribe(), now, out)
            return
        if event.topics != self._subscription.topics or event.pattern != self._subscription.pattern:
            self._subscription = Subscription(event.topics, event.pattern, updated=True)

    def _on_unsubscribe(self, event: Unsubscribe, now: float, out: list[Command]) -> None:
        self._subscription = Subscription()
        if self._state in LEAVING or self._state in NOT_IN_GROUP:
            if self._state is MemberState.FENCED:
                # Java: a fenced member that unsubscribes does not rejoin
                self._transition(MemberState.UNSUBSCRIBED)
            return
        self._start_leave("unsubscribed")

    def _on_polled(self, event: Polled, now: float, out: list[Command]) -> None:
        self._life = attrs.evolve(self._life, last_poll=now)
        if self._life.poll_expired:
            self._life = attrs.evolve(self._life, poll_expired=False)
            if self._state is MemberState.STALE and self._steps.pending is None:
                self._transition_to_joining()
        if self._subscription.updated and self._state is MemberState.UNSUBSCRIBED and self._life.closing is None:
            self._subscription = attrs.evolve(self._subscription, updated=False)
            self._transition_to_joining()
        self._steps = attrs.evolve(self._steps, retry_at_poll=False)

    def _on_step_completed(self, event: StepCompleted, now: float, out: list[Command]) -> None:
        pending = self._steps.pending
        assert pending is not None  # ``_admit`` checked that it is the step out
        step = pending.step
        self._steps = attrs.evolve(
            self._steps, pending=None, owned=step.owned if event.applied else self._steps.owned
        )
        if pending.kind is StepKind.RECONCILE:
            self._on_reconciled(pending, event)
        elif pending.kind is StepKind.RELEASE_LOST:
            self._lost_released()
        else:
            self._released_for_leave()
        follow_up = self._steps.release_after
        if follow_up is not None:
            self._steps = attrs.evolve(self._steps, release_after=None)
            if follow_up is StepKind.RELEASE_LOST:
                self._deliver_lost(self._steps.release_reason)
            else:
                self._release_for_leave(self._steps.release_reason)
        if self._life.closing is not None and self._state in NOT_IN_GROUP:
            self._close_if_done()

    def _on_reconciled(self, pending: PendingStep, event: StepCompleted) -> None:
        if event.error is not None:
            # Java: the member stays RECONCILING without acknowledging; the broker fences it if
            # the reconciliation does not complete within the rebalance timeout
            log.warning(
                "group %s member %s: a rebalance listener failed (%s); reconciling again at the next poll",
                self._group_id, self._member_id, event.error,
            )
            self._steps = attrs.evolve(self._steps, retry_at_poll=self._state is MemberState.RECONCILING)
            return
        rejoined = self._steps.rejoined_while_reconciling
        if self._state is not MemberState.RECONCILING or rejoined:
            log.info(
                "group %s member %s: the reconciliation completed but is no longer relevant (%s)",
                self._group_id, self._member_id,
                "rejoined meanwhile" if rejoined else f"state {self._state.name}",
            )
            self._steps = attrs.evolve(self._steps, rejoined_while_reconciling=False)
            return
        assert pending.resolved is not None
        self._rec = attrs.evolve(self._rec, current=pending.resolved)
        self._transition(MemberState.ACKNOWLEDGING)

    def _on_leave(self, event: Leave, now: float, out: list[Command]) -> None:
        self._life = attrs.evolve(self._life, closing=event)
        self._subscription = attrs.evolve(self._subscription, updated=False)
        if self._state in LEAVING:
            return  # an unsubscribe is leaving already; close when it is done
        if self._state in NOT_IN_GROUP:
            # not in the group: nothing to send; close once a release in progress is done
            self._life = attrs.evolve(self._life, poll_expired=False)
            self._close_if_done()
            return
        self._start_leave(event.reason)

    def _on_metadata(self, event: MetadataUpdated, now: float, out: list[Command]) -> None:
        self._rec = self._rec.metadata(event.topic_names)

    def _on_coordinator_dead(self, event: CoordinatorDead, now: float, out: list[Command]) -> None:
        self._mark_coordinator_unknown(event.reason, now)

    # ---------------------------------------------------------------- the membership's side of the heartbeat


    def _on_heartbeat_success(self, event: ConsumerGroupHeartbeatResponded, now: float) -> None:
        """Java ``onResponse`` (timing) and ``ConsumerMembershipManager.onHeartbeatSuccess``."""
        self._heartbeat.succeeded(now, event.heartbeat_interval_ms)
        if self._state in NOT_IN_GROUP or self._state is MemberState.LEAVING:
            return
        if event.member_epoch < 0:
            log.debug("group %s: ignoring a heartbeat response with epoch %d", self._group_id, event.member_epoch)
            return
        if event.member_id and event.member_id != self._member_id:
            # v0: the coordinator may hand out the member id
            log.info("group %s: the coordinator named this member %s", self._group_id, event.member_id)
            self._member_id = event.member_id
        if event.member_epoch != self._epoch:
            log.info("group %s member %s: epoch %d -> %d", self._group_id, self._member_id, self._epoch,
                     event.member_epoch)
        previous_epoch, previous_target = self._epoch, self._rec.target.partitions
        self._epoch = event.member_epoch
        if event.assignment is not None and self._state in TAKES_ASSIGNMENT:
            self._process_assignment(event.assignment)
        self._maybe_prompt(previous_epoch, previous_target, now)

    def _maybe_prompt(self, previous_epoch: int, previous_target: frozenset[tuple[UUID, int]], now: float) -> None:
        """Heartbeat promptly for a while if partitions may still be on their way (kgroup, beyond Java).

        The coordinator gives a partition of the member's target only once its previous owner
        revoked it (``CurrentAssignmentBuilder``: UNRELEASED_PARTITIONS), which the answer does
        not say; these answers say that partitions may still come:

        * the join's (epoch 0 -> above 0): a member joining a group takes its partitions from
          the others, who learn of it at their next heartbeat;
        * one that moved the member to a new epoch, unless the member gave partitions up at
          the epoch it leaves or enters (an answer shrank its assignment: a member giving
          partitions up in a rebalance of a sticky assignor takes none in it);
        * one that added partitions to the target: the coordinator released some, maybe not all.

        Then ``HeartbeatRequestState.prompt`` (bounded, backed off: its docstring).
        """
        epoch, target = self._epoch, self._rec.target.partitions
        if epoch <= 0:
            return
        if previous_target - target:
            self._gave_up_at_epoch = epoch
        joined = previous_epoch <= 0
        moved = epoch != previous_epoch and self._gave_up_at_epoch not in (previous_epoch, epoch)
        if joined or moved or bool(target - previous_target):
            if not self._heartbeat.prompting(now):
                log.debug("group %s member %s epoch %d: heartbeating promptly while partitions may be on their way",
                          self._group_id, self._member_id, epoch)
            self._heartbeat.prompt(now)

    def _on_session_timeout(self, event: SessionTimeoutDescribed, now: float, out: list[Command]) -> None:
        ms = event.session_timeout_ms
        if ms is None or ms <= 0:
            return  # a failed request: the value learned before, if any, stays
        if ms / 1000 != self._session.timeout_s:
            log.info(
                "group %s member %s: the group's session timeout is %d ms (consumer.session.timeout.ms, from "
                "DescribeConfigs): records are held back when no heartbeat has succeeded for that long",
                self._group_id, self._member_id, ms,
            )
        self._session = attrs.evolve(self._session, timeout_s=ms / 1000)

    def _on_request_rejoin(self, event: RequestRejoin, now: float, out: list[Command]) -> None:
        """Nothing to do: the broker decides when to rebalance (Java's ``AsyncKafkaConsumer.enforceRebalance`` too)."""
        log.info(
            "group %s: a rebalance was asked for (%s); under the consumer protocol the broker decides "
            "when to rebalance: nothing to do", self._group_id, event.reason,
        )
        self._check_poll_watchdog(now, out)

    def _on_commit_error(self, event: CommitErrorObserved, now: float, out: list[Command]) -> None:
        """A commit's (or offset fetch's) error: the coordinator moved, or nothing (the next heartbeat tells)."""
        disposition = classify(Api(event.api), event.code)
        reason = f"{event.api} returned {error_name(event.code)}"
        if disposition is Disposition.REDISCOVER:
            self._mark_coordinator_unknown(reason, now)
            return
        if disposition is Disposition.REJOIN:
            self._on_request_rejoin(RequestRejoin(reason), now, out)
            return
        log.info("group %s: a commit returned error %d; the next heartbeat will tell", self._group_id, event.code)
        self._check_poll_watchdog(now, out)

    #: the handler of each event type
    _HANDLERS: Final[Mapping[type, _Handler]] = {
        Subscribe: _on_subscribe,
        Unsubscribe: _on_unsubscribe,
        Polled: _on_polled,
        StepCompleted: _on_step_completed,
        Leave: _on_leave,
        RequestRejoin: _on_request_rejoin,
        CommitErrorObserved: _on_commit_error,
        MetadataUpdated: _on_metadata,
        CoordinatorDead: _on_coordinator_dead,
        FindCoordinatorResponded: HeartbeatExchange._on_find_coordinator,
        ConsumerGroupHeartbeatResponded: HeartbeatExchange._on_heartbeat,
        RequestFailed: HeartbeatExchange._on_request_failed,
        SessionTimeoutDescribed: _on_session_timeout,
    }
