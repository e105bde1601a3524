"""ShareGroupMachine: the sans-IO member of a share group (KIP-932), on the membership core.

A share group's member has one membership request, ShareGroupHeartbeat
(:mod:`kgroup.protocol.share_group_heartbeat`); the coordinator assigns every partition, and a
partition may be assigned to several members at once: they share its records through
acquisition locks (ShareFetch, ShareAcknowledge), not through exclusive ownership. So nothing
is revoked with callbacks and nothing is committed on a rebalance: the member's partitions are
only where it fetches from.

The machine keeps the core's rules (:mod:`kgroup.membership.core`, docs/protocol.md "Share
groups on the core"): ``handle(event, now)`` and ``tick(now)`` return commands of the shared
vocabulary (:mod:`kgroup.membership.commands`: ``SendFindCoordinator``, ``DeliverStep`` with
the one ``RebalanceStep``, ``RequestMetadata``, ``Notify``, ``Fail``) plus its heartbeat,
``SendShareGroupHeartbeat``; it takes the shared events (:mod:`kgroup.membership.events`) plus
``ShareGroupHeartbeatResponded``; it finds its coordinator with ``CoordinatorState`` and backs
off with the core's ``RetryTimer`` and ``next_backoff_s``. No IO, no clock: ``now`` is seconds
on the driver's clock, the member id and the jitter come from the injected ``rng``. An illegal
input (``EVENT_TABLE``) raises ``ProtocolViolation`` before anything changes and poisons the
machine; a response whose request is no longer in flight is dropped first.

The member, as Java's ``ShareMembershipManager`` (on ``AbstractMembershipManager``) and
``ShareHeartbeatRequestManager`` run it:

1. **Join**: after ``Subscribe`` the next ``Polled`` moves UNSUBSCRIBED -> JOINING; the member
   heartbeats at once with epoch 0, its member id (a UUID it generated, KIP-1082), the
   subscription and its rack.
2. **Heartbeat**: the answer carries the epoch, the heartbeat interval (the broker's
   ``group.share.heartbeat.interval.ms``) and, when it changed, the assignment by topic id;
   later heartbeats carry only what changed (none after an error: every field again).
3. **Reconcile** (RECONCILING): topic ids are resolved to names (``MetadataUpdated``;
   ``RequestMetadata`` asks for the unknown ones); one ``DeliverStep`` hands the poll thread
   the partitions it may fetch from (``assigned``, ``revoked``: no commit, no listener). When
   it completes the member heartbeats at once (ACKNOWLEDGING), then is STABLE. The request has
   no owned-partitions field: nothing waits for a share member to let a partition go.
4. **Fenced** (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID): the epoch drops to 0, the partitions go
   to the poll thread as lost, then the member rejoins with epoch 0 at once.
5. **Leave** (``Leave``, ``Unsubscribe``): the partitions are released, then a heartbeat with
   epoch -1 goes out; its answer (or none) ends the membership: CLOSED, or UNSUBSCRIBED.
6. **The poll watchdog** (``max_poll_interval_ms`` without ``Polled``, while the member is in the
   group and not leaving, its coordinator known): the member sends the leave heartbeat (epoch -1,
   its answer ignored), then is STALE: the partitions go to the poll thread as lost, no
   heartbeats; the next ``Polled`` rejoins with epoch 0, once the lost partitions are released
   (Java's ``AbstractHeartbeatRequestManager.poll``, ``transitionToSendingLeaveGroup(true)``,
   ``transitionToStale`` and ``maybeRejoinStaleMember``).
"""

from __future__ import annotations

import enum
import logging
import random
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Final
from uuid import UUID

from kgroup._error_codes import NONE, UNSUPPORTED_VERSION, error_name
from kgroup.config import ConsumerConfig
from kgroup.errors import (
    SHARE_GROUPS_NOT_SUPPORTED,
    Api,
    Disposition,
    FatalGroupError,
    ProtocolViolation,
    broker_error,
    classify,
)
from kgroup.membership import consumer_group
from kgroup.membership.commands import (
    Command,
    DeliverStep,
    Fail,
    Notify,
    RebalanceStep,
    RequestMetadata,
    SendShareGroupHeartbeat,
)
from kgroup.membership.consumer_group_states import MemberState
from kgroup.membership.coordinator import CoordinatorState
from kgroup.membership.core import BrokerAssignedMember, MemberSnapshot
from kgroup.membership.events import (
    CoordinatorDead,
    FindCoordinatorResponded,
    Leave,
    MetadataUpdated,
    Polled,
    RequestFailed,
    ShareGroupHeartbeatResponded,
    StepCompleted,
    Subscribe,
    Unsubscribe,
)
from kgroup.membership.states import Verdict
from kgroup.membership.timers import RetryTimer, next_backoff_s
from kgroup.protocol.share_group_heartbeat import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    TopicIdPartitions,
)
from kgroup.types import Generation, TopicPartition

__all__ = [
    "EVENT_TABLE",
    "SHARE_STATES",
    "STATES",
    "SendShareGroupHeartbeat",
    "ShareGroupEvent",
    "ShareGroupHeartbeatResponded",
    "ShareGroupMachine",
    "ShareMemberState",
]

log = logging.getLogger(__name__)

_HEARTBEAT: Final = Api.SHARE_GROUP_HEARTBEAT


#: what the share-group machine takes
ShareGroupEvent = (
    Subscribe
    | Unsubscribe
    | Polled
    | StepCompleted
    | Leave
    | MetadataUpdated
    | CoordinatorDead
    | FindCoordinatorResponded
    | ShareGroupHeartbeatResponded
    | RequestFailed
)


# ==================================================================== states


#: Where a member of a share group stands: Java's ``MemberState``, which ``ShareMembershipManager``
#: shares with the consumer protocol's ``ConsumerMembershipManager`` (and CLOSED); STALE: the poll
#: watchdog made the member leave (docs/share-groups.md, "The poll watchdog")
ShareMemberState = MemberState
_S = MemberState

#: the states a share member takes (``EVENT_TABLE``'s): every one
SHARE_STATES: Final = frozenset(MemberState)

#: each state as the poll thread reads it (``MemberSnapshot.state``): the consumer protocol's
#: reading; ``state_name`` keeps the member's own
STATES: Final = consumer_group.STATES

#: states in which the member is in the group and heartbeats
_HEARTBEATING: Final = frozenset({_S.JOINING, _S.RECONCILING, _S.ACKNOWLEDGING, _S.STABLE, _S.PREPARE_LEAVING})
#: states whose heartbeat goes without waiting for the interval (Java's ``shouldHeartbeatNow``)
_HEARTBEAT_NOW: Final = frozenset({_S.JOINING, _S.ACKNOWLEDGING, _S.LEAVING})
#: states that take an assignment from a heartbeat's answer
_TAKES_ASSIGNMENT: Final = frozenset({_S.JOINING, _S.RECONCILING, _S.ACKNOWLEDGING, _S.STABLE})
#: states in which the member looks for its coordinator (LEAVING does not: no coordinator, no leave)
_LOOKS_UP: Final = _HEARTBEATING | {_S.FENCED}
#: states in which a heartbeat may be in flight (the leave's in LEAVING)
_SENDS_HEARTBEATS: Final = _HEARTBEATING | {_S.LEAVING}
#: states in which the poll watchdog runs (Java: not ``shouldSkipHeartbeat``, not ``isLeavingGroup``)
_WATCHED: Final = frozenset({_S.JOINING, _S.RECONCILING, _S.ACKNOWLEDGING, _S.STABLE})


def _table() -> Mapping[ShareMemberState, Mapping[type, Verdict]]:
    """What each state does with each event type: handle it, ignore it on purpose, or reject it.

    * The application's calls (``Subscribe``, ``Unsubscribe``, ``Polled``, ``Leave``) and the
      driver's (``MetadataUpdated``, ``CoordinatorDead``) are taken in every live state;
      after a close (CLOSED) and a fatal error they are ignored, except ``Subscribe``, which is
      illegal then (a closed consumer cannot subscribe; nor can one that is closing: its
      handler raises before any change), and ``Leave``, which closes a FATAL member.
    * ``StepCompleted``: a step is out only in RECONCILING (the reconcile step), FENCED and
      STALE (the lost partitions), PREPARE_LEAVING (the release) and FATAL (the lost
      partitions); CLOSED ignores a late one. Anywhere else it is illegal.
    * Responses are matched to their request first (a stale one is dropped in every state);
      the table judges the rest. A heartbeat is in flight only while the member heartbeats or
      leaves (not FENCED: the answer that fenced it was the one in flight); a FindCoordinator
      only while it looks for its coordinator (not LEAVING: without a coordinator the leave is
      not sent). ``RequestFailed`` answers either. None is in flight in UNSUBSCRIBED (the leave
      ends them all) nor in STALE (the watchdog's leave is not waited for).
    """
    live = SHARE_STATES - {_S.CLOSED, _S.FATAL}
    responses = {
        FindCoordinatorResponded: _LOOKS_UP,
        ShareGroupHeartbeatResponded: _SENDS_HEARTBEATS,
        RequestFailed: _LOOKS_UP | _SENDS_HEARTBEATS,
    }
    handled: dict[type, frozenset[ShareMemberState]] = {
        Subscribe: live,
        Unsubscribe: live,
        Polled: live,
        Leave: live | {_S.FATAL},
        MetadataUpdated: live,
        CoordinatorDead: live,
        StepCompleted: frozenset({_S.RECONCILING, _S.FENCED, _S.STALE, _S.PREPARE_LEAVING, _S.FATAL}),
        **responses,
    }
    ignored: dict[type, frozenset[ShareMemberState]] = {
        Unsubscribe: frozenset({_S.CLOSED, _S.FATAL}),
        Polled: frozenset({_S.CLOSED, _S.FATAL}),
        Leave: frozenset({_S.CLOSED}),
        MetadataUpdated: frozenset({_S.CLOSED, _S.FATAL}),
        CoordinatorDead: frozenset({_S.CLOSED, _S.FATAL}),
        StepCompleted: frozenset({_S.CLOSED}),
        **{kind: frozenset({_S.CLOSED, _S.FATAL}) for kind in responses},
    }

    def verdict(state: ShareMemberState, kind: type) -> Verdict:
        if state in handled[kind]:
            return Verdict.HANDLE
        return Verdict.IGNORE if state in ignored.get(kind, frozenset()) else Verdict.ILLEGAL

    rows = {state: MappingProxyType({kind: verdict(state, kind) for kind in handled}) for state in SHARE_STATES}
    return MappingProxyType({state: rows[state] for state in _S if state in rows})  # in the enum's order


#: state -> event type -> ``Verdict``, every pair
EVENT_TABLE: Final[Mapping[ShareMemberState, Mapping[type, Verdict]]] = _table()


def _flatten(topics: Iterable[TopicIdPartitions]) -> frozenset[tuple[UUID, int]]:
    return frozenset((tp.topic_id, p) for tp in topics for p in tp.partitions)


class _Step(enum.Enum):
    RECONCILE = "reconcile"
    LOST = "lost"  # fenced, stale or fatal
    RELEASE = "release"  # leaving


# ==================================================================== the machine


class ShareGroupMachine(BrokerAssignedMember):
    """The member of a share group. Not thread-safe: one owner (the group thread).

    Args:
        config: the consumer's configuration: ``group_id``, ``client_rack``,
            ``retry_backoff_ms``, ``retry_backoff_max_ms``, ``request_timeout_ms``,
            ``max_poll_interval_ms`` (the poll watchdog).
        rng: randomness for the member id and the backoff jitter (``random.Random(seed)`` in tests).
        member_id: use this member id instead of generating one.

    Use: feed ``handle(event, now)`` with events and call ``tick(now)`` at
    ``next_deadline(now)``; execute the returned commands in order.

    """

    _group_kind: ClassVar[str] = "share group"

    def __init__(
        self, config: ConsumerConfig, *, rng: random.Random | None = None, member_id: str | None = None
    ) -> None:
        super().__init__(config, rng, member_id)
        self._fatal: Exception | None = None
        self._poisoned: ProtocolViolation | None = None
        self._topics: frozenset[str] = frozenset()
        self._subscription_changed = False
        self._closing = False
        #: the coordinator already dropped the member (fenced while it released for a leave)
        self._leave_unneeded = False
        self._coordinator = CoordinatorState()
        self._find_rid: int | None = None
        self._heartbeat_rid: int | None = None
        self._leave_rid: int | None = None
        self._next_rid = 1
        self._interval_s = 0.0
        self._next_heartbeat_at = 0.0
        self._retry = RetryTimer()
        #: what the last heartbeat sent (None: send every field next)
        self._sent_topics: frozenset[str] | None = None
        #: the assignment the broker gave, by topic id; the partitions the poll thread has
        self._target: frozenset[tuple[UUID, int]] = frozenset()
        self._owned: frozenset[TopicPartition] = frozenset()
        self._names: Mapping[UUID, str] = MappingProxyType({})
        self._asked_ids: frozenset[UUID] = frozenset()
        self._step: tuple[RebalanceStep, _Step] | None = None
        self._next_step_id = 1
        #: the poll watchdog: when the application last polled; whether the watchdog fired and the
        #: application has not polled since (Java's ``isPollTimerExpired``)
        self._last_poll = 0.0
        self._poll_expired = False

    # ---------------------------------------------------------------- what the driver reads
    @property
    def state(self) -> ShareMemberState:
        """The member's state."""
        return self._state

    @property
    def state_name(self) -> str:
        """The member's state, by name (Java's ``MemberState``)."""
        return self._state.name

    @property
    def member_id(self) -> str:
        """The member id (generated at construction, kept for the member's lifetime)."""
        return self._member_id

    @property
    def member_epoch(self) -> int:
        """The member epoch (0: not in the group)."""
        return self._epoch

    @property
    def owned(self) -> frozenset[TopicPartition]:
        """The partitions the poll thread fetches from once the step out (if any) completes."""
        return self._owned

    @property
    def heartbeat_interval_ms(self) -> int:
        """The heartbeat interval the broker gave (0 before the first answer)."""
        return round(self._interval_s * 1000)

    @property
    def session_timeout_ms(self) -> int | None:
        """Not known to a share member (the group's ``group.share.session.timeout.ms`` is the broker's)."""
        return None

    @property
    def fatal_error(self) -> Exception | None:
        """The fatal error that stopped the member, if any."""
        return self._fatal

    def snapshot(self) -> MemberSnapshot:
        """An immutable view for other threads."""
        return MemberSnapshot(
            state=STATES[self._state],
            generation=Generation(self._epoch, self._member_id) if self._epoch > 0 else Generation(),
            owned=self._owned,
            coordinator=self._coordinator.node_id,
            subscription=self._topics,
            group_instance_id=None,
            fatal=self._fatal,
            state_name=self._state.name,
        )

    def next_deadline(self, now: float) -> float:
        """When ``tick`` next has work: the heartbeat, the coordinator lookup, or the poll watchdog."""
        if self._state in (_S.CLOSED, _S.FATAL):
            return float("inf")
        if self._coordinator.node_id is None:
            waiting = self._find_rid is not None or self._state not in _LOOKS_UP
            return float("inf") if waiting else max(now, self._coordinator.lookup.at)
        watchdog = self._poll_deadline() if self._watchdog_armed() else float("inf")
        if not (self._heartbeating() or self._state is _S.LEAVING) or self._heartbeat_rid is not None:
            return max(now, watchdog)
        if self._state is _S.LEAVING and self._leave_rid is not None:
            return max(now, watchdog)  # the leave is in flight: nothing to do before its answer (or failure)
        return max(now, min(self._heartbeat_due(), watchdog))

    # ---------------------------------------------------------------- entry points
    def handle(self, event: ShareGroupEvent, now: float) -> list[Command | SendShareGroupHeartbeat]:
        """Process one event at ``now`` (seconds) and return the commands to execute.

        Raises:
            ProtocolViolation: the event is illegal in the current state (poisons), or the
                machine was poisoned before.

        """
        if self._poisoned is not None:
            raise self._poisoned
        out: list[Command | SendShareGroupHeartbeat] = []
        rid = getattr(event, "request_id", None)
        if isinstance(event, _RESPONSES) and rid not in (self._find_rid, self._heartbeat_rid, self._leave_rid):
            return out  # a stale answer: its request is no longer in flight
        verdict = EVENT_TABLE[self._state].get(type(event), Verdict.ILLEGAL)
        wrong_answer = (isinstance(event, FindCoordinatorResponded) and rid != self._find_rid) or (
            isinstance(event, ShareGroupHeartbeatResponded) and rid == self._find_rid
        )
        if verdict is Verdict.ILLEGAL or wrong_answer:
            self._poisoned = ProtocolViolation(
                f"{type(event).__name__} is illegal in {self._state.name}"
                + (f" (request {rid} is not of its kind)" if wrong_answer else "")
            )
            raise self._poisoned
        if verdict is Verdict.HANDLE:
            try:
                self._HANDLERS[type(event)](self, event, now, out)
            except ProtocolViolation as exc:  # raised before any change (``Subscribe`` after ``Leave``, ...)
                self._poisoned = exc
                raise
        self._check_poll_watchdog(now, out)
        self._drive(now, out)
        return out

    def tick(self, now: float) -> list[Command | SendShareGroupHeartbeat]:
        """Send what is due at ``now`` (the heartbeat, the coordinator lookup, the poll watchdog's leave)."""
        if self._poisoned is not None:
            raise self._poisoned
        out: list[Command | SendShareGroupHeartbeat] = []
        self._check_poll_watchdog(now, out)
        self._drive(now, out)
        return out

    # ---------------------------------------------------------------- helpers
    def _transition(self, target: ShareMemberState) -> None:
        if target is not self._state:
            log.info(
                "share group %s member %s epoch %d: %s -> %s",
                self._group_id, self._member_id, self._epoch, self._state.name, target.name,
            )
            self._state = target

    def _rid(self) -> int:
        rid = self._next_rid
        self._next_rid += 1
        return rid

    def _backoff(self, attempts: int) -> float:
        return next_backoff_s(attempts, self._config.retry_backoff_ms, self._config.retry_backoff_max_ms, self._rng)

    def _heartbeat_due(self) -> float:
        due = self._retry.at
        return due if self._state in _HEARTBEAT_NOW else max(due, self._next_heartbeat_at)

    def _context(self) -> str:
        return f"group_id={self._group_id!r}, member_id={self._member_id!r}, member_epoch={self._epoch}"

    def _deliver(self, kind: _Step, out: list[Any], **fields: Any) -> None:
        step = RebalanceStep(
            step_id=self._next_step_id,
            generation=Generation(self._epoch, self._member_id) if self._epoch > 0 else Generation(),
            reason=kind.value,
            **fields,
        )
        self._next_step_id += 1
        self._step = (step, kind)
        out.append(DeliverStep(step))

    def _release(self, kind: _Step, out: list[Any]) -> bool:
        """Hand the owned partitions back (lost or revoked); False when there is nothing to release."""
        if not self._owned:
            return False
        if kind is _Step.LOST:
            self._deliver(kind, out, lost=self._owned)
        else:
            self._deliver(kind, out, revoked=self._owned)
        return True

    def _mark_coordinator_unknown(self, reason: str, now: float) -> None:
        log.info("share group %s: coordinator %s unknown: %s", self._group_id, self._coordinator.node_id, reason)
        self._coordinator = self._coordinator.lost(now + self._backoff(self._coordinator.lookup.attempts))
        self._heartbeat_rid = None  # its answer, from the old coordinator, no longer counts
        self._sent_topics = None

    def _heartbeat_failed(self, now: float, *, back_off: bool = True) -> None:
        """Java's ``onFailedAttempt``: the next heartbeat waits for the backoff, not the interval.

        ``back_off=False``: Java's ``heartbeatRequestState.reset()`` as well (the coordinator moved,
        or the member was fenced): the next heartbeat goes as soon as it can.
        """
        self._next_heartbeat_at = now
        self._retry = self._retry.failed(now, self._backoff) if back_off else RetryTimer()
        self._sent_topics = None  # Java: after an error the next heartbeat carries every field

    # ---------------------------------------------------------------- the drive loop
    def _leave_not_sent(self) -> None:
        self._finish_leave()

    def _looks_for_coordinator(self, now: float) -> bool:
        return self._find_rid is None and self._state in _LOOKS_UP and self._coordinator.due(now)

    def _find_coordinator_sent(self) -> int:
        self._find_rid = self._rid()
        return self._find_rid

    def _drive_with_coordinator(self, now: float, out: list[Any]) -> None:
        self._maybe_reconcile(out)
        if self._state is _S.LEAVING:
            if self._leave_rid is None:
                self._send_leave(out)
            return
        if self._heartbeating() and self._heartbeat_rid is None and now >= self._heartbeat_due():
            self._send_heartbeat(now, out)

    def _heartbeating(self) -> bool:
        """In the group and heartbeating: not while releasing for a leave without an epoch (fenced, stale)."""
        return self._state in _HEARTBEATING and not (self._state is _S.PREPARE_LEAVING and self._epoch <= 0)

    def _send_heartbeat(self, now: float, out: list[Any]) -> None:
        """Only what changed since the last heartbeat (Java's ``ShareHeartbeatRequestManager.HeartbeatState``)."""
        joining = self._state is _S.JOINING
        send_topics = joining or self._sent_topics != self._topics
        self._heartbeat_rid = self._rid()
        out.append(self._heartbeat(
            self._heartbeat_rid,
            self._epoch,
            rack_id=self._config.client_rack if joining else None,
            subscribed_topic_names=tuple(sorted(self._topics)) if send_topics else None,
        ))
        self._sent_topics = self._topics
        self._next_heartbeat_at = now + self._interval_s
        if self._state is _S.ACKNOWLEDGING:  # Java: onHeartbeatRequestGenerated
            self._transition(_S.STABLE if self._reconciled() else _S.RECONCILING)

    def _send_leave(self, out: list[Any]) -> None:
        self._leave_rid = self._rid()
        self._heartbeat_rid = None
        out.append(self._heartbeat(self._leave_rid, LEAVE_GROUP_MEMBER_EPOCH))

    def _heartbeat(self, request_id: int, epoch: int, **fields: Any) -> SendShareGroupHeartbeat:
        """A ShareGroupHeartbeat to the coordinator: the member's identity, ``epoch`` and ``fields``."""
        return self._heartbeat_to_coordinator(SendShareGroupHeartbeat, request_id, epoch, fields)

    # ---------------------------------------------------------------- reconciling
    def _reconciled(self) -> bool:
        """The poll thread has the whole assignment, every topic id resolved."""
        return all(t in self._names for t, _ in self._target) and self._resolved_target() == self._owned

    def _resolved_target(self) -> frozenset[TopicPartition]:
        return frozenset(TopicPartition(self._names[t], p) for t, p in self._target if t in self._names)

    def _maybe_reconcile(self, out: list[Any]) -> None:
        """RECONCILING with no step out: ask for unknown names, hand out the resolved assignment."""
        if self._state is not _S.RECONCILING or self._step is not None:
            return
        unknown = frozenset(t for t, _ in self._target if t not in self._names)
        if unknown - self._asked_ids:
            self._asked_ids |= unknown
            out.append(RequestMetadata(unknown))
        target = self._resolved_target()
        if target == self._owned:
            if not unknown:
                self._transition(_S.STABLE)
            return
        self._deliver(
            _Step.RECONCILE, out, assigned=target - self._owned, revoked=self._owned - target, owned=target
        )

    def _take_assignment(self, assignment: tuple[TopicIdPartitions, ...] | None) -> None:
        if assignment is not None:
            self._target = _flatten(assignment)
        if self._state is _S.JOINING or (assignment is not None and self._state is _S.STABLE):
            self._transition(_S.RECONCILING)

    # ---------------------------------------------------------------- leaving, fencing, fatal
    def _start_leave(self, out: list[Any]) -> None:
        if self._state in (_S.UNSUBSCRIBED, _S.FENCED, _S.STALE) and self._step is None:
            self._epoch = JOIN_GROUP_MEMBER_EPOCH
            self._finish_leave()
            return
        if self._state is _S.STALE:  # the watchdog's leave went already: release, then done
            self._leave_unneeded = True
        self._transition(_S.PREPARE_LEAVING)
        if self._step is None and not self._release(_Step.LOST if self._epoch <= 0 else _Step.RELEASE, out):
            self._to_leaving()

    def _to_leaving(self) -> None:
        if self._leave_unneeded:
            self._finish_leave()
            return
        # Java's transitionToSendingLeaveGroup: the epoch -1 heartbeat goes also from JOINING (the
        # coordinator may have added the member already); without a coordinator it is skipped
        self._transition(_S.LEAVING)

    def _finish_leave(self) -> None:
        self._leave_rid = self._heartbeat_rid = self._find_rid = None
        self._leave_unneeded = False
        self._poll_expired = False
        self._epoch = JOIN_GROUP_MEMBER_EPOCH
        self._target = frozenset()
        self._sent_topics = None
        self._transition(_S.CLOSED if self._closing else _S.UNSUBSCRIBED)

    # ---------------------------------------------------------------- the poll watchdog
    def _poll_deadline(self) -> float:
        return self._last_poll + self._config.max_poll_interval_ms / 1000

    def _watchdog_armed(self) -> bool:
        return self._coordinator.node_id is not None and self._state in _WATCHED

    def _check_poll_watchdog(self, now: float, out: list[Any]) -> None:
        """No ``Polled`` for ``max_poll_interval_ms``: leave (epoch -1, answer ignored), release as lost (STALE).

        Java's ``AbstractHeartbeatRequestManager.poll`` on an expired poll timer:
        ``transitionToSendingLeaveGroup(true)`` (PREPARE_LEAVING, LEAVING), the leave heartbeat
        whose response is ignored, the heartbeat state reset; the heartbeat generated moves the
        member to STALE (``transitionToStale``), which releases the partitions as lost.
        """
        if not self._watchdog_armed() or now < self._poll_deadline():
            return
        log.warning(
            "share group %s member %s: poll() was not called within max_poll_interval_ms (%d ms): the time spent "
            "processing records is too long; leaving the group until the next poll() (increase "
            "max_poll_interval_ms or lower max_poll_records)",
            self._group_id, self._member_id, self._config.max_poll_interval_ms,
        )
        self._poll_expired = True
        self._transition(_S.PREPARE_LEAVING)
        self._transition(_S.LEAVING)
        self._heartbeat_rid = None  # the heartbeat in flight no longer counts
        out.append(self._heartbeat(self._rid(), LEAVE_GROUP_MEMBER_EPOCH))  # not waited for
        self._epoch = JOIN_GROUP_MEMBER_EPOCH
        self._target = frozenset()
        self._sent_topics = None
        self._retry = RetryTimer()
        self._transition(_S.STALE)
        if self._step is None:
            self._release(_Step.LOST, out)

    def _rejoin_if_stale(self) -> None:
        """STALE, the application polled since and the lost partitions are released: rejoin (epoch 0)."""
        if self._state is _S.STALE and not self._poll_expired and self._step is None and not self._closing:
            self._retry = RetryTimer()
            self._transition(_S.JOINING)

    def _fence(self, reason: str, out: list[Any]) -> None:
        """FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: release the partitions as lost, then rejoin with epoch 0."""
        log.info(
            "share group %s member %s fenced at epoch %d: %s", self._group_id, self._member_id, self._epoch, reason
        )
        self._epoch = JOIN_GROUP_MEMBER_EPOCH
        self._target = frozenset()
        self._sent_topics = None
        self._retry = RetryTimer()  # Java: heartbeatRequestState.reset(), no backoff before rejoining
        self._transition(_S.FENCED)
        if self._step is None and not self._release(_Step.LOST, out):
            self._transition(_S.JOINING)

    def _to_fatal(self, error: Exception, out: list[Any]) -> None:
        log.error("share group %s member %s: fatal: %s", self._group_id, self._member_id, error)
        self._fatal = error
        self._heartbeat_rid = self._find_rid = self._leave_rid = None
        self._transition(_S.FATAL)
        out.append(Fail(error))
        if self._step is None:
            self._release(_Step.LOST, out)

    # ---------------------------------------------------------------- handlers
    def _on_subscribe(self, event: Subscribe, now: float, out: list[Any]) -> None:
        if self._closing:
            raise ProtocolViolation("Subscribe after the consumer closed")
        if not event.topics:
            self._on_unsubscribe(Unsubscribe(), now, out)
            return
        self._topics = event.topics
        self._subscription_changed = True

    def _on_unsubscribe(self, event: Unsubscribe, now: float, out: list[Any]) -> None:
        self._topics = frozenset()
        self._subscription_changed = False
        if self._state not in (_S.PREPARE_LEAVING, _S.LEAVING):
            self._start_leave(out)

    def _on_polled(self, event: Polled, now: float, out: list[Any]) -> None:
        self._last_poll = now  # Java's resetPollTimer
        if self._poll_expired:  # Java's maybeRejoinStaleMember
            log.warning("share group %s member %s: poll() called again after max_poll_interval_ms expired; "
                        "rejoining the group", self._group_id, self._member_id)
            self._poll_expired = False
            self._rejoin_if_stale()
        # Java's AbstractMembershipManager.onConsumerPoll: a new subscription joins inside poll()
        if self._state is _S.UNSUBSCRIBED and self._subscription_changed and self._topics:
            self._subscription_changed = False
            self._retry = RetryTimer()
            self._transition(_S.JOINING)

    def _on_leave(self, event: Leave, now: float, out: list[Any]) -> None:
        self._closing = True
        if self._state is _S.FATAL:
            self._transition(_S.CLOSED)
        elif self._state not in (_S.PREPARE_LEAVING, _S.LEAVING):
            self._start_leave(out)

    def _on_metadata(self, event: MetadataUpdated, now: float, out: list[Any]) -> None:
        self._names = event.topic_names
        self._asked_ids = frozenset(t for t in self._asked_ids if t not in self._names)

    def _on_coordinator_dead(self, event: CoordinatorDead, now: float, out: list[Any]) -> None:
        self._mark_coordinator_unknown(event.reason, now)

    def _on_step_completed(self, event: StepCompleted, now: float, out: list[Any]) -> None:
        if self._step is None or event.step_id != self._step[0].step_id:
            raise ProtocolViolation(f"StepCompleted({event.step_id}) names no step out")
        step = self._step[0]
        self._step = None
        if event.applied:
            self._owned = step.owned
        if self._state is _S.RECONCILING:
            self._transition(_S.ACKNOWLEDGING)  # heartbeat at once
        elif self._state is _S.FENCED:
            if not self._release(_Step.LOST, out):
                self._transition(_S.JOINING)
        elif self._state is _S.STALE:
            if not self._release(_Step.LOST, out):
                self._rejoin_if_stale()
        elif self._state is _S.PREPARE_LEAVING:
            if not self._release(_Step.LOST if self._epoch <= 0 else _Step.RELEASE, out):
                self._to_leaving()
        elif self._state is _S.FATAL:
            self._release(_Step.LOST, out)

    def _on_find_coordinator(self, event: FindCoordinatorResponded, now: float, out: list[Any]) -> None:
        self._find_rid = None
        self._coordinator, disposition = self._coordinator.answered(event.error_code, event.node_id, now, self._backoff)
        if disposition is Disposition.FATAL:
            self._to_fatal(broker_error(Api.FIND_COORDINATOR, event.error_code, self._context()), out)
        elif disposition is not Disposition.OK:
            log.info("share group %s: FindCoordinator failed: %s", self._group_id, error_name(event.error_code))

    def _on_heartbeat(self, event: ShareGroupHeartbeatResponded, now: float, out: list[Any]) -> None:
        if event.request_id == self._leave_rid:
            if event.error_code != NONE:
                log.info(
                    "share group %s: the leave heartbeat returned %s", self._group_id, error_name(event.error_code)
                )
            self._finish_leave()
            return
        self._heartbeat_rid = None
        disposition = classify(_HEARTBEAT, event.error_code)
        if disposition is Disposition.OK:
            self._retry = self._retry.succeeded()
            self._epoch = event.member_epoch
            self._interval_s = event.heartbeat_interval_ms / 1000
            self._next_heartbeat_at = now + self._interval_s  # Java: the interval runs from the answer
            if self._state in _TAKES_ASSIGNMENT:
                self._take_assignment(event.assignment)
            return
        message = event.error_message or ""
        self._heartbeat_failed(now, back_off=disposition not in (Disposition.REDISCOVER, Disposition.RESET_GENERATION))
        if disposition is Disposition.REDISCOVER:
            self._mark_coordinator_unknown(error_name(event.error_code), now)
        elif disposition is Disposition.RESET_GENERATION:
            if self._state in _TAKES_ASSIGNMENT:
                self._fence(error_name(event.error_code), out)
            else:  # fenced while releasing for a leave: the release is a loss, no leave heartbeat
                self._epoch = JOIN_GROUP_MEMBER_EPOCH
                self._leave_unneeded = True
        elif disposition is Disposition.FATAL:
            self._to_fatal(broker_error(_HEARTBEAT, event.error_code, message, self._context()), out)
        elif disposition is Disposition.RAISE:  # and RETRY: back off, heartbeat again; RAISE tells the application
            out.append(Notify(broker_error(_HEARTBEAT, event.error_code, message, self._context())))

    def _on_request_failed(self, event: RequestFailed, now: float, out: list[Any]) -> None:
        if event.request_id == self._find_rid:
            self._find_rid = None
            self._coordinator = self._coordinator.lookup_failed(now, self._backoff)
        elif event.request_id == self._leave_rid:
            self._finish_leave()
        elif event.unsupported_version:
            self._heartbeat_rid = None
            self._to_fatal(FatalGroupError(_HEARTBEAT, UNSUPPORTED_VERSION, SHARE_GROUPS_NOT_SUPPORTED), out)
        else:
            self._heartbeat_failed(now)
            self._mark_coordinator_unknown(event.reason, now)

    _HANDLERS: Final[Mapping[type, Callable[[ShareGroupMachine, Any, float, list[Any]], None]]] = MappingProxyType({
        Subscribe: _on_subscribe,
        Unsubscribe: _on_unsubscribe,
        Polled: _on_polled,
        Leave: _on_leave,
        MetadataUpdated: _on_metadata,
        CoordinatorDead: _on_coordinator_dead,
        StepCompleted: _on_step_completed,
        FindCoordinatorResponded: _on_find_coordinator,
        ShareGroupHeartbeatResponded: _on_heartbeat,
        RequestFailed: _on_request_failed,
    })


_RESPONSES: Final = (FindCoordinatorResponded, ShareGroupHeartbeatResponded, RequestFailed)
