"""A pure model of Apache Kafka's consumer-group coordinator (KIP-848, ConsumerGroupHeartbeat), 4.x.

The broker side of the consumer group protocol, as ``GroupMetadataManager.consumerGroupHeartbeat``
and the classes around it do it in Apache Kafka 4.x (group-coordinator module: ``ConsumerGroup``,
``ConsumerGroupMember``, ``TargetAssignmentBuilder``, ``CurrentAssignmentBuilder``, the ``uniform``
and ``range`` assignors, ``OffsetMetadataManager``). Same conventions as
:class:`~kgroup.testing.coordinator.GroupCoordinatorModel`: no IO, no threads, time from an
injected clock, timers fired inside the model's own calls (:meth:`ConsumerGroupModel.tick` and
around every request), an append-only event log, every answer a
:class:`~kgroup.testing.coordinator.Reply` (always completed at once: this protocol parks nothing).

The rules, each from the Kafka method named:

* **Validation** (``throwIfConsumerGroupHeartbeatRequestIsInvalid``): an empty group id, instance
  id or rack id, a missing member id (v1+: the member makes its own, KIP-1082), a join (epoch 0)
  without a rebalance timeout, a subscription, or with owned partitions, an epoch below -2: all
  INVALID_REQUEST; an unknown server assignor: UNSUPPORTED_ASSIGNOR.
* **Join and heartbeat** (``consumerGroupHeartbeat``): epoch 0 creates the group and the member,
  or takes a known member back as it is (Apache Kafka 4.4: its epoch and assignment unchanged);
  any other epoch needs both (GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID). An epoch above the member's
  is FENCED_MEMBER_EPOCH; below it too, unless it is the member's previous epoch and the owned
  partitions it reports are a subset of its assignment (the answer that bumped it was lost:
  ``throwIfConsumerGroupMemberEpochIsInvalid``). A new member or a changed subscription (topic
  names or pattern) bumps the group epoch, and so does a change of the subscribed topics'
  metadata (a topic created or deleted, partitions added: checked on every heartbeat, where
  Kafka checks at its next metadata refresh). A new group starts at epoch 1, so its first member
  gets epoch 2, as Apache Kafka 4.4 answers. The group is full at ``max_size`` members
  (GROUP_MAX_SIZE_REACHED).
* **Target assignment** (``updateTargetAssignment``, ``TargetAssignmentBuilder``): when the group
  epoch is ahead of the assignment epoch and ``assignment_interval_ms`` has passed since the last
  target was computed (Kafka 4.4's ``group.consumer.assignment.interval.ms``; a group's first target
  is computed at once), the heartbeat that notices computes the new target with
  the assignor most members ask for (ties: the first in ``assignors`` order; none asked: the first
  of ``assignors``), from every member's previous target; a static member replacing its previous
  incarnation inherits its target.
* **Reconciliation** (``CurrentAssignmentBuilder``): a member moves to the target epoch only once
  the partitions it must give up are no longer in what it reports owning (partitions pending
  revocation, state UNREVOKED_PARTITIONS, its epoch unchanged meanwhile); it is given a target
  partition only once no other member holds it (UNRELEASED_PARTITIONS). A member entering
  UNREVOKED_PARTITIONS gets a rebalance timer of its rebalance timeout: not out of that state
  (at the same epoch) in time, it is fenced (removed).
* **Session** (``scheduleConsumerGroupSessionTimeout``): every successful heartbeat re-arms
  ``session_timeout_ms``; when it runs out, the member is fenced. A member removed for any reason
  frees its partitions at once and bumps the group epoch; the others' targets follow at their
  next heartbeat.
* **Leave** (``consumerGroupLeave``): epoch -1 removes the member (a static member by its instance
  id: UNKNOWN_MEMBER_ID if none, FENCED_INSTANCE_ID if another member id holds it); epoch -2 (a
  static member) keeps it, its assignment and its partitions, at epoch -2 until its session times
  out or a new member with its instance id replaces it (``consumerGroupStaticMemberGroupLeave``);
  an instance id still held at any other epoch refuses the newcomer with UNRELEASED_INSTANCE_ID.
* **The answer**: member id, epoch, ``heartbeat_interval_ms``; the assignment when the request was
  a full one (a join, or rebalance timeout, subscription and owned partitions all set) or the
  member's assigned partitions changed.
* **Offsets** (``ConsumerGroup.validateOffsetCommit`` / ``validateOffsetFetch``): an OffsetCommit
  with epoch < 0 to a group without members is accepted (admin, manual assignment); otherwise the
  member must exist (UNKNOWN_MEMBER_ID), use OffsetCommit v9+ (UNSUPPORTED_VERSION) and send its
  current epoch, or (Apache Kafka 4.4) an older one no older than the epoch at which it got each
  partition of the commit, which it must still hold, assigned or pending revocation
  (STALE_MEMBER_EPOCH otherwise, for the whole request). An unknown group: GROUP_ID_NOT_FOUND with an epoch >= 0,
  accepted without. OffsetFetch validates a member id and epoch only when given.
* **Failover** (``restart``): the group is kept as written (everything here is persisted at once in
  Kafka), requests get COORDINATOR_LOAD_IN_PROGRESS until ``load_ms`` passed; then every member's
  session timer is armed afresh and members in UNREVOKED_PARTITIONS get their rebalance timer
  (``GroupMetadataManager.onLoaded``).

Not modelled: the online migration to and from classic groups, classic members inside a consumer
group, pattern resolution's asynchrony (a ``subscribed_topic_regex`` is matched at once with
Python's ``re.fullmatch``, RE2J's syntax for the patterns clients use), racks (``rack_id`` is kept,
no assignor uses it), group configs (``consumer.session.timeout.ms`` per group), share groups,
offset expiry and transactions. docs/kip848.md, "The coordinator model", lists what the
conformance suite compared against Apache Kafka and the differences kept.
"""

from __future__ import annotations

import enum
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import attrs

from kgroup import _error_codes as codes
from kgroup._clock import Clock
from kgroup.protocol.consumer_group_heartbeat import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicIdPartitions,
)
from kgroup.protocol.group_api import (
    OffsetCommitRequest,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from kgroup.testing.coordinator import _events as ev
from kgroup.testing.coordinator._core import CoordinatorCore
from kgroup.testing.coordinator._offsets import fetch_answer
from kgroup.testing.coordinator._reply import Reply
from kgroup.testing.coordinator._server_assignors import ASSIGNORS, AssignmentSpec, MemberSpec, assign

__all__ = [
    "GROUP_EPOCH_BUMPED",
    "MEMBER_EPOCH_CHANGED",
    "TARGET_ASSIGNMENT_COMPUTED",
    "ConsumerGroupConfig",
    "ConsumerGroupModel",
    "MemberState",
]

GROUP_EPOCH_BUMPED: Final = "group_epoch_bumped"
"""The group epoch went up (detail: the new epoch and why); the protocol's "rebalance"."""
TARGET_ASSIGNMENT_COMPUTED: Final = "target_assignment_computed"
"""A new target assignment (detail: epoch, assignor, member -> partitions)."""
MEMBER_EPOCH_CHANGED: Final = "member_epoch_changed"
"""A member's epoch or state changed by reconciliation (detail: epoch, state, assigned, pending revocation)."""

_INT32_MAX: Final = 2**31 - 1

Assignment = dict[uuid.UUID, frozenset[int]]
TopicsFn = Callable[[], Mapping[str, tuple[uuid.UUID, int]]]


@attrs.frozen(kw_only=True)
class ConsumerGroupConfig:
    """Broker configs of the consumer group protocol (Kafka's names without ``group.consumer.``).

    Defaults are Apache Kafka 4.x's: ``group.consumer.session.timeout.ms`` 45000,
    ``group.consumer.heartbeat.interval.ms`` 5000, ``group.consumer.assignors`` uniform then
    range, ``group.consumer.max.size`` Integer.MAX_VALUE, ``group.consumer.assignment.interval.ms``
    1000 (Kafka 4.4: a new target assignment is computed at most once per interval; 0: at once).
    """

    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    assignors: tuple[str, ...] = ("uniform", "range")
    max_size: int = _INT32_MAX
    assignment_interval_ms: int = 1000

    def __attrs_post_init__(self) -> None:
        unknown = [a for a in self.assignors if a not in ASSIGNORS]
        if unknown or not self.assignors:
            raise ValueError(f"assignors must be a non-empty subset of {sorted(ASSIGNORS)}, got {self.assignors!r}")
        for name in ("session_timeout_ms", "heartbeat_interval_ms", "max_size", "assignment_interval_ms"):
            value = getattr(self, name)
            minimum = 0 if name == "assignment_interval_ms" else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


class MemberState(enum.Enum):
    """Kafka ``MemberState`` of a consumer group member (the reconciliation's state)."""

    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"
    UNKNOWN = "unknown"


@attrs.define(kw_only=True)
class _Member:
    """One member (Kafka ``ConsumerGroupMember``); replaced, never shared, by the heartbeat."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    state: MemberState = MemberState.STABLE
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assigned: Assignment = attrs.field(factory=dict)
    pending_revocation: Assignment = attrs.field(factory=dict)
    assigned_at: dict[tuple[uuid.UUID, int], int] = attrs.field(factory=dict)
    """the member epoch at which each partition it holds was assigned to it"""

    def copy(self, **changes: object) -> _Member:
        return attrs.evolve(self, **changes)  # type: ignore[arg-type]

    def reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch

    def same_subscription(self, other: _Member) -> bool:
        return (
            self.subscribed_topic_names == other.subscribed_topic_names
            and self.subscribed_topic_regex == other.subscribed_topic_regex
        )


@attrs.define(kw_only=True)
class _Group:
    """One consumer group (Kafka ``ConsumerGroup``)."""

    group_id: str
    group_epoch: int = 1
    assignment_epoch: int = 0
    assigned_at_ms: int | None = None
    """when the last target assignment was computed"""
    members: dict[str, _Member] = attrs.field(factory=dict)
    static_members: dict[str, str] = attrs.field(factory=dict)
    target: dict[str, Assignment] = attrs.field(factory=dict)
    subscription_metadata: dict[str, tuple[uuid.UUID, int]] = attrs.field(factory=dict)

    def state(self) -> str:
        """Kafka ``ConsumerGroup.maybeUpdateGroupState``'s name of the group state."""
        if not self.members:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        if any(not m.reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    def static_member(self, instance_id: str) -> _Member | None:
        """The member that holds the static ``instance_id``, if any."""
        member_id = self.static_members.get(instance_id)
        return self.members.get(member_id) if member_id is not None else None

    def partition_owner(self, topic_id: uuid.UUID, partition: int) -> str | None:
        """Kafka ``currentPartitionEpoch``: who holds the partition (assigned or pending revocation)."""
        for member in self.members.values():
            if partition in member.assigned.get(topic_id, ()) or partition in member.pending_revocation.get(
                topic_id, ()
            ):
                return member.member_id
        return None


class _Error(Exception):
    """A heartbeat or commit refused with an error code (Kafka's ``ApiException``s)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _known_static_member(static: _Member | None, r: ConsumerGroupHeartbeatRequest) -> _Member:
    """Kafka ``throwIfStaticMemberIsUnknown`` and ``throwIfInstanceIdIsFenced``: ``r``'s static member.

    ``static`` is the member holding ``r``'s instance id: none is UNKNOWN_MEMBER_ID, another member
    id than ``r``'s is FENCED_INSTANCE_ID.
    """
    if static is None:
        raise _Error(codes.UNKNOWN_MEMBER_ID, f"Instance id {r.instance_id} is unknown.")
    if static.member_id != r.member_id:
        raise _Error(
            codes.FENCED_INSTANCE_ID,
            f"Static member {r.member_id} with instance id {r.instance_id} was fenced by member "
            f"{static.member_id}.",
        )
    return static


def _wire(assignment: Assignment) -> tuple[TopicIdPartitions, ...]:
    ordered = sorted(assignment.items(), key=lambda item: str(item[0]))
    return tuple(TopicIdPartitions(t, tuple(sorted(ps))) for t, ps in ordered)


def _brief(assignment: Assignment) -> str:
    return " ".join(f"{str(t)[:8]}:{sorted(ps)}" for t, ps in sorted(assignment.items(), key=lambda i: str(i[0])))


class ConsumerGroupModel(CoordinatorCore[ConsumerGroupConfig, _Group]):
    """Apache Kafka 4.x's consumer-group coordinator (KIP-848), as a deterministic in-memory model.

    Args:
        config: the broker's consumer-group configs (defaults: Kafka's).
        clock: the time source; only ``monotonic()`` is used.
        topics: the cluster's topics now, ``name -> (topic id, partition count)`` (the coordinator's
            metadata image); called on each heartbeat.
        partition_exists: ``(topic, partition) -> bool`` for OffsetCommit's UNKNOWN_TOPIC_OR_PARTITION;
            ``None``: every partition exists.

    """

    def __init__(
        self,
        config: ConsumerGroupConfig | None = None,
        *,
        clock: Clock,
        topics: TopicsFn,
        partition_exists: Callable[[str, int], bool] | None = None,
    ) -> None:
        super().__init__(
            config if config is not None else ConsumerGroupConfig(), clock=clock, partition_exists=partition_exists
        )
        self._topics = topics

    # ==========================================================================================
    # public surface
    # ==========================================================================================

    def group_state(self, group_id: str) -> str:
        """Kafka's name of the group's state (Empty, Assigning, Reconciling, Stable); ``"Dead"`` if unknown."""
        group = self._groups.get(group_id)
        return group.state() if group is not None else "Dead"

    def group_epoch(self, group_id: str) -> int:
        """The group epoch (0: no such group)."""
        group = self._groups.get(group_id)
        return group.group_epoch if group is not None else 0

    def assignment_epoch(self, group_id: str) -> int:
        """The epoch of the group's current target assignment (0: no such group)."""
        group = self._groups.get(group_id)
        return group.assignment_epoch if group is not None else 0

    def members(self, group_id: str) -> Mapping[str, tuple[int, str, Mapping[uuid.UUID, frozenset[int]]]]:
        """Member id -> (member epoch, state, assigned partitions by topic id) of the group's members."""
        group = self._groups.get(group_id)
        if group is None:
            return {}
        return {mid: (m.member_epoch, m.state.value, dict(m.assigned)) for mid, m in group.members.items()}

    def target_assignment(self, group_id: str) -> Mapping[str, Mapping[uuid.UUID, frozenset[int]]]:
        """Member id -> its target assignment."""
        group = self._groups.get(group_id)
        return {} if group is None else {mid: dict(a) for mid, a in group.target.items()}

    def heartbeat(self, request: ConsumerGroupHeartbeatRequest, *, client_id: str = "") -> Reply[
        ConsumerGroupHeartbeatResponse
    ]:
        """Handle ConsumerGroupHeartbeat (v0-v1); always answered at once."""
        self._fire_due_timers()
        response = self._heartbeat(request, client_id)
        self._fire_due_timers()
        return Reply.of(response)

    def offset_fetch(
        self, request: OffsetFetchRequest, *, member_id: str | None = None, member_epoch: int = -1
    ) -> Reply[OffsetFetchResponse]:
        """Handle OffsetFetch; v9's ``member_id``/``member_epoch`` (else the request's), validated when given."""
        if member_id is None and member_epoch < 0:
            member_id, member_epoch = request.member_id, request.member_epoch
        self._fire_due_timers()
        response = self._offset_fetch(request, member_id, member_epoch)
        self._fire_due_timers()
        return Reply.of(response)

    # ==========================================================================================
    # failover
    # ==========================================================================================

    def _unload(self) -> None:
        """A coordinator failover (:meth:`restart`) loses nothing but the timers.

        Every change of a consumer group is written to ``__consumer_offsets`` at once, so the
        groups reload as they were; requests get COORDINATOR_LOAD_IN_PROGRESS until ``load_ms``
        have passed, then :meth:`_on_loaded` arms the timers afresh.
        """

    def _on_loaded(self) -> None:
        """Kafka ``GroupMetadataManager.onLoaded``: session timers for all, rebalance timers where due."""
        for group in self._groups.values():
            for member in group.members.values():
                self._schedule_session(group, member.member_id)
                if member.state is MemberState.UNREVOKED_PARTITIONS:
                    self._schedule_rebalance_timeout(group, member)

    def _schedule_session(self, group: _Group, member_id: str) -> None:
        gid = group.group_id
        self._schedule(
            ("session", gid, member_id),
            self._config.session_timeout_ms,
            lambda: self._fence_by_timer(gid, member_id, None, "session timeout"),
        )

    def _schedule_rebalance_timeout(self, group: _Group, member: _Member) -> None:
        gid, mid, epoch = group.group_id, member.member_id, member.member_epoch
        self._schedule(
            ("rebalance", gid, mid),
            member.rebalance_timeout_ms,
            lambda: self._fence_by_timer(gid, mid, epoch, "rebalance timeout"),
        )

    def _fence_by_timer(self, group_id: str, member_id: str, epoch: int | None, why: str) -> None:
        """Kafka ``consumerGroupFenceMemberOperation`` / the rebalance timeout's check of the epoch."""
        group = self._groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None:
            return
        if epoch is not None and member.member_epoch != epoch:
            return
        self._remove_member(group, member, why)

    # ==========================================================================================
    # ConsumerGroupHeartbeat
    # ==========================================================================================

    def _heartbeat(self, request: ConsumerGroupHeartbeatRequest, client_id: str) -> ConsumerGroupHeartbeatResponse:
        try:
            if self._loading():
                raise _Error(codes.COORDINATOR_LOAD_IN_PROGRESS, "The coordinator is loading.")
            self._validate(request)
            if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(request)
            return self._regular_heartbeat(request, client_id)
        except _Error as error:
            return ConsumerGroupHeartbeatResponse(error_code=error.code, error_message=error.message)

    def _validate(self, r: ConsumerGroupHeartbeatRequest) -> None:
        """Kafka ``throwIfConsumerGroupHeartbeatRequestIsInvalid`` (v1: the member id is always the member's)."""
        bad = codes.INVALID_REQUEST
        if not r.group_id:
            raise _Error(bad, "GroupId can't be empty.")
        if r.instance_id == "":
            raise _Error(bad, "InstanceId can't be empty.")
        if r.rack_id == "":
            raise _Error(bad, "RackId can't be empty.")
        if r.api_version >= 1 and not r.member_id:
            raise _Error(bad, "MemberId can't be empty.")
        if r.member_epoch > 0 or r.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            if not r.member_id:
                raise _Error(bad, "MemberId can't be empty.")
        elif r.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
            if r.rebalance_timeout_ms == -1:
                raise _Error(bad, "RebalanceTimeoutMs must be provided in first request.")
            if r.topic_partitions is None or len(r.topic_partitions) > 0:
                raise _Error(bad, "TopicPartitions must be empty when (re-)joining.")
            if not r.subscribed_topic_names and not r.subscribed_topic_regex:
                raise _Error(bad, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
        elif r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if not r.member_id:
                raise _Error(bad, "MemberId can't be empty.")
            if r.instance_id is None:
                raise _Error(bad, "InstanceId can't be null.")
        else:
            raise _Error(bad, "MemberEpoch is invalid.")
        if r.subscribed_topic_regex:
            try:
                re.compile(r.subscribed_topic_regex)
            except re.error as exc:
                raise _Error(codes.INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex is invalid: {exc}") from None
        if r.server_assignor is not None and r.server_assignor not in self._config.assignors:
            raise _Error(
                codes.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {r.server_assignor} is not supported. Supported assignors: "
                f"{', '.join(self._config.assignors)}.",
            )

    def _epoch_check(self, member: _Member, epoch: int, owned: Sequence[TopicIdPartitions] | None) -> None:
        """Kafka ``throwIfConsumerGroupMemberEpochIsInvalid``."""
        if epoch > member.member_epoch:
            raise _Error(
                codes.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a greater member epoch ({epoch}) than the one known by the group "
                f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
            )
        if epoch < member.member_epoch:
            subset = owned is not None and all(
                set(tp.partitions) <= member.assigned.get(tp.topic_id, frozenset()) for tp in owned
            )
            if epoch != member.previous_member_epoch or not subset:
                raise _Error(
                    codes.FENCED_MEMBER_EPOCH,
                    f"The consumer group member has a smaller member epoch ({epoch}) than the one known by the "
                    f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and "
                    "rejoin.",
                )

    def _regular_heartbeat(
        self, r: ConsumerGroupHeartbeatRequest, client_id: str
    ) -> ConsumerGroupHeartbeatResponse:
        joining = r.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        group = self._groups.get(r.group_id)
        if group is None and not joining:
            raise _Error(codes.GROUP_ID_NOT_FOUND, f"Consumer group {r.group_id} not found.")
        if group is None:
            group = _Group(group_id=r.group_id)
        if len(group.members) >= self._config.max_size and r.member_id not in group.members:
            raise _Error(
                codes.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {self._config.max_size} members.",
            )
        replaced: str | None = None
        if r.instance_id is None:
            existing = group.members.get(r.member_id)
            if existing is None:
                if not joining:
                    raise _Error(
                        codes.UNKNOWN_MEMBER_ID, f"Member {r.member_id} is not a member of group {r.group_id}."
                    )
                member = _Member(member_id=r.member_id)
            else:
                member = existing
                if not joining:  # Kafka 4.4 takes a rejoin (epoch 0) of a known member as it is
                    self._epoch_check(member, r.member_epoch, r.topic_partitions)
        else:
            static = group.static_member(r.instance_id)
            if joining:
                if static is None:
                    member = group.members.get(r.member_id) or _Member(member_id=r.member_id)
                else:
                    if static.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                        raise _Error(
                            codes.UNRELEASED_INSTANCE_ID,
                            f"Static member {r.member_id} with instance id {r.instance_id} cannot join the group "
                            f"because the instance id is owned by {static.member_id} member.",
                        )
                    member = static.copy(member_id=r.member_id, member_epoch=0, previous_member_epoch=0)
                    if static.member_id != r.member_id:
                        replaced = static.member_id
            else:
                member = _known_static_member(static, r)
                self._epoch_check(member, r.member_epoch, r.topic_partitions)

        is_new = r.member_id not in group.members
        updated = member.copy(
            instance_id=r.instance_id if r.instance_id is not None else member.instance_id,
            rack_id=r.rack_id if r.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(
                r.rebalance_timeout_ms if r.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms
            ),
            server_assignor=r.server_assignor if r.server_assignor is not None else member.server_assignor,
            subscribed_topic_names=(
                frozenset(r.subscribed_topic_names) if r.subscribed_topic_names is not None
                else member.subscribed_topic_names
            ),
            subscribed_topic_regex=(
                (r.subscribed_topic_regex or None) if r.subscribed_topic_regex is not None
                else member.subscribed_topic_regex
            ),
            client_id=client_id or member.client_id,
        )
        # ---- 1. the member, the subscription metadata, the group epoch
        if self._groups.get(r.group_id) is None:
            self._groups[r.group_id] = group
        bump_reasons: list[str] = []
        if is_new and replaced is None:
            bump_reasons.append(f"member {updated.member_id} joined")
        elif not updated.same_subscription(member):
            bump_reasons.append(f"member {updated.member_id} changed its subscription")
        others = [m for mid, m in group.members.items() if mid not in (updated.member_id, replaced)]
        metadata = self._subscription_metadata([*others, updated])
        if metadata != group.subscription_metadata:
            bump_reasons.append("the subscribed topics' metadata changed")
        if replaced is not None:
            del group.members[replaced]
            self._cancel_member_timers(group.group_id, replaced)
            group.target[updated.member_id] = group.target.pop(replaced, {})
            self._event(group.group_id, ev.STATIC_MEMBER_REPLACED, updated.member_id, f"replaces {replaced}")
        if is_new:
            self._event(
                group.group_id, ev.MEMBER_ADDED, updated.member_id,
                "dynamic" if updated.instance_id is None else f"static {updated.instance_id}",
            )
        group.members[updated.member_id] = updated
        if updated.instance_id is not None:
            group.static_members[updated.instance_id] = updated.member_id
        group.subscription_metadata = metadata
        if bump_reasons:
            group.group_epoch += 1
            self._event(group.group_id, GROUP_EPOCH_BUMPED, updated.member_id,
                        f"epoch {group.group_epoch}: {'; '.join(bump_reasons)}")
        # ---- 2. the target assignment, at most once per assignment interval
        last = group.assigned_at_ms
        due = last is None or self._now_ms() - last >= self._config.assignment_interval_ms
        if group.group_epoch > group.assignment_epoch and due:
            self._compute_target(group)
        # ---- 3. reconciliation
        target = group.target.get(updated.member_id, {})
        reconciled = self._reconcile(group, updated, target, r.topic_partitions)
        if reconciled is not updated:
            group.members[updated.member_id] = reconciled
            if reconciled.state is MemberState.UNREVOKED_PARTITIONS:
                self._schedule_rebalance_timeout(group, reconciled)
            else:
                self._cancel(("rebalance", group.group_id, reconciled.member_id))
        self._schedule_session(group, reconciled.member_id)
        full = joining or (
            r.rebalance_timeout_ms != -1 and r.subscribed_topic_names is not None and r.topic_partitions is not None
        )
        changed = reconciled.assigned != member.assigned
        return ConsumerGroupHeartbeatResponse(
            error_code=codes.NONE,
            member_id=reconciled.member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self._config.heartbeat_interval_ms,
            assignment=_wire(reconciled.assigned) if full or changed else None,
        )

    def _subscription_metadata(self, members: Sequence[_Member]) -> dict[str, tuple[uuid.UUID, int]]:
        """Kafka ``computeSubscriptionMetadata``: the subscribed topics that exist, with id and partitions."""
        topics = self._topics()
        names: set[str] = set()
        for member in members:
            names |= member.subscribed_topic_names
            if member.subscribed_topic_regex:
                pattern = re.compile(member.subscribed_topic_regex)
                names |= {t for t in topics if pattern.fullmatch(t)}
        return {name: topics[name] for name in sorted(names) if name in topics}

    def _subscribed_ids(self, group: _Group, member: _Member) -> frozenset[uuid.UUID]:
        meta = group.subscription_metadata
        ids = {meta[t][0] for t in member.subscribed_topic_names if t in meta}
        if member.subscribed_topic_regex:
            pattern = re.compile(member.subscribed_topic_regex)
            ids |= {topic_id for name, (topic_id, _) in meta.items() if pattern.fullmatch(name)}
        return frozenset(ids)

    def _compute_target(self, group: _Group) -> None:
        """Kafka ``updateTargetAssignment`` / ``TargetAssignmentBuilder.build`` at the group epoch."""
        counts: dict[str, int] = {}
        for member in group.members.values():
            if member.server_assignor is not None:
                counts[member.server_assignor] = counts.get(member.server_assignor, 0) + 1
        order = self._config.assignors
        name = max(counts, key=lambda a: (counts[a], -order.index(a))) if counts else order[0]
        partitions = {topic_id: count for topic_id, count in group.subscription_metadata.values()}
        specs = tuple(
            MemberSpec(
                member_id=m.member_id,
                instance_id=m.instance_id,
                subscribed=self._subscribed_ids(group, m),
                current=group.target.get(m.member_id, {}),
            )
            for m in group.members.values()
        )
        plan = assign(name, AssignmentSpec(members=specs, partitions=partitions))
        group.target = {mid: {t: ps for t, ps in a.items() if ps} for mid, a in plan.items()}
        group.assignment_epoch = group.group_epoch
        group.assigned_at_ms = self._now_ms()
        self._event(
            group.group_id, TARGET_ASSIGNMENT_COMPUTED,
            detail=f"epoch {group.assignment_epoch} by {name}: "
            + ", ".join(f"{mid}=[{_brief(a)}]" for mid, a in sorted(group.target.items())),
        )

    def _reconcile(
        self, group: _Group, member: _Member, target: Assignment, owned: Sequence[TopicIdPartitions] | None
    ) -> _Member:
        """Kafka ``maybeReconcile`` / ``CurrentAssignmentBuilder.build``; the same object when unchanged."""
        epoch = group.assignment_epoch
        if member.reconciled_to(epoch):
            return member
        state = member.state
        if state is MemberState.STABLE:
            result = self._next_assignment(group, member, member.member_epoch, target, owned)
        elif state is MemberState.UNREVOKED_PARTITIONS:
            if _owns_any(owned, member.pending_revocation):
                return member
            result = self._next_assignment(group, member, member.member_epoch + 1, target, owned)
        elif state is MemberState.UNRELEASED_PARTITIONS:
            result = self._next_assignment(group, member, member.member_epoch, target, owned)
        else:  # UNKNOWN
            if owned is None or owned:
                raise _Error(
                    codes.FENCED_MEMBER_EPOCH,
                    "The consumer group member is in a unknown state. The member must abandon all its partitions "
                    "and rejoin.",
                )
            result = self._next_assignment(group, member, epoch, target, owned)
        if attrs.astuple(result, recurse=False) == attrs.astuple(member, recurse=False):
            return member
        self._event(
            group.group_id, MEMBER_EPOCH_CHANGED, member.member_id,
            f"epoch {result.member_epoch} {result.state.value} assigned [{_brief(result.assigned)}] "
            f"revoking [{_brief(result.pending_revocation)}]",
        )
        return result

    def _next_assignment(
        self, group: _Group, member: _Member, member_epoch: int, target: Assignment,
        owned: Sequence[TopicIdPartitions] | None,
    ) -> _Member:
        """Kafka ``CurrentAssignmentBuilder.computeNextAssignment``."""
        target_epoch = group.assignment_epoch
        unreleased = False
        assigned: dict[uuid.UUID, frozenset[int]] = {}
        revoking: dict[uuid.UUID, frozenset[int]] = {}
        incoming: dict[uuid.UUID, frozenset[int]] = {}
        for topic_id in sorted(set(target) | set(member.assigned), key=str):
            wanted = target.get(topic_id, frozenset())
            current = member.assigned.get(topic_id, frozenset())
            keep = current & wanted
            give = current - keep
            take = set(wanted - keep)
            held = {p for p in take if group.partition_owner(topic_id, p) is not None}
            if held:
                unreleased = True
                take -= held
            if keep:
                assigned[topic_id] = keep
            if give:
                revoking[topic_id] = give
            if take:
                incoming[topic_id] = frozenset(take)
        if revoking and _owns_any(owned, revoking):
            return member.copy(
                assigned_at=member.assigned_at,
                state=MemberState.UNREVOKED_PARTITIONS,
                previous_member_epoch=member.member_epoch,
                member_epoch=member_epoch,
                assigned=assigned,
                pending_revocation=revoking,
            )
        for topic_id, partitions in incoming.items():
            assigned[topic_id] = assigned.get(topic_id, frozenset()) | partitions
        assigned_at = {
            (t, p): member.assigned_at.get((t, p), target_epoch) for t, ps in assigned.items() for p in ps
        }
        state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        return member.copy(
            assigned_at=assigned_at,
            state=state,
            previous_member_epoch=member.member_epoch,
            member_epoch=target_epoch,
            assigned=assigned,
            pending_revocation={},
        )

    # ---- leaving and removal -----------------------------------------------------------------

    def _leave(self, r: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        """Kafka ``consumerGroupLeave`` (-1) and ``consumerGroupStaticMemberGroupLeave`` (-2)."""
        group = self._groups.get(r.group_id)
        if group is None:
            raise _Error(codes.GROUP_ID_NOT_FOUND, f"Consumer group {r.group_id} not found.")
        if r.instance_id is None:
            member = group.members.get(r.member_id)
            if member is None:
                raise _Error(codes.UNKNOWN_MEMBER_ID, f"Member {r.member_id} is not a member of group {r.group_id}.")
            self._remove_member(group, member, "left")
            return ConsumerGroupHeartbeatResponse(error_code=codes.NONE, member_id=r.member_id,
                                                  member_epoch=r.member_epoch)
        member = _known_static_member(group.static_member(r.instance_id), r)
        if r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            group.members[member.member_id] = member.copy(
                member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation={}
            )
            self._event(group.group_id, MEMBER_EPOCH_CHANGED, member.member_id, "epoch -2: static member left for now")
            return ConsumerGroupHeartbeatResponse(
                error_code=codes.NONE, member_id=member.member_id, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH
            )
        self._remove_member(group, member, "left")
        return ConsumerGroupHeartbeatResponse(error_code=codes.NONE, member_id=r.member_id,
                                              member_epoch=r.member_epoch)

    def _remove_member(self, group: _Group, member: _Member, why: str) -> None:
        """Kafka ``consumerGroupFenceMember``: remove, free its partitions, bump the group epoch."""
        del group.members[member.member_id]
        group.target.pop(member.member_id, None)
        if member.instance_id is not None and group.static_members.get(member.instance_id) == member.member_id:
            del group.static_members[member.instance_id]
        group.subscription_metadata = self._subscription_metadata(list(group.members.values()))
        group.group_epoch += 1
        self._cancel_member_timers(group.group_id, member.member_id)
        self._event(group.group_id, ev.MEMBER_REMOVED, member.member_id, why)
        self._event(group.group_id, GROUP_EPOCH_BUMPED, member.member_id,
                    f"epoch {group.group_epoch}: member {member.member_id} removed ({why})")

    def _cancel_member_timers(self, group_id: str, member_id: str) -> None:
        self._cancel(("session", group_id, member_id))
        self._cancel(("rebalance", group_id, member_id))

    # ==========================================================================================
    # offsets
    # ==========================================================================================

    def _validate_member(
        self, group: _Group, member_id: str, epoch: int, partitions: Sequence[tuple[str, int]] | None = None
    ) -> int:
        """``ConsumerGroup.validateMemberEpoch``, with Kafka 4.4's older epochs for commits.

        The member's current epoch is always accepted. An older epoch is accepted for an
        OffsetCommit whose every partition the member still holds (assigned, or pending
        revocation) since that epoch or before (observed on Apache Kafka 4.4: a member that moved
        to a new epoch may still commit, with the epoch it had, the partitions it kept).
        """
        member = group.members.get(member_id)
        if member is None:
            return codes.UNKNOWN_MEMBER_ID
        if epoch == member.member_epoch:
            return codes.NONE
        if epoch > member.member_epoch or partitions is None:
            return codes.STALE_MEMBER_EPOCH
        topics = self._topics()
        for name, index in partitions:
            topic_id = topics[name][0] if name in topics else None
            held = topic_id is not None and (
                index in member.assigned.get(topic_id, ()) or index in member.pending_revocation.get(topic_id, ())
            )
            if not held or member.assigned_at.get((topic_id, index), epoch + 1) > epoch:  # type: ignore[arg-type]
                return codes.STALE_MEMBER_EPOCH
        return codes.NONE

    def _create_simple_group(self, group_id: str) -> None:
        """Nothing: the commit is accepted and kept without a group (this model has no classic groups)."""

    def _validate_group_offset_commit(self, request: OffsetCommitRequest) -> int:
        """Kafka ``ConsumerGroup.validateOffsetCommit`` (after :meth:`_validate_offset_commit`'s checks)."""
        group = self._groups[request.group_id]
        if request.generation_id < 0 and not group.members:
            return codes.NONE
        if request.member_id not in group.members:
            return codes.UNKNOWN_MEMBER_ID
        if request.api_version < 9:
            return codes.UNSUPPORTED_VERSION
        partitions = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
        return self._validate_member(group, request.member_id, request.generation_id, partitions)

    def _offset_fetch(self, request: OffsetFetchRequest, member_id: str | None, epoch: int) -> OffsetFetchResponse:
        """Kafka ``OffsetMetadataManager.fetchOffsets`` + ``ConsumerGroup.validateOffsetFetch``."""
        if self._loading():
            return OffsetFetchResponse(error_code=codes.COORDINATOR_LOAD_IN_PROGRESS)
        group = self._groups.get(request.group_id)
        if group is not None and not (member_id is None and epoch < 0):
            error = self._validate_member(group, member_id or "", epoch)
            if error != codes.NONE:
                return OffsetFetchResponse(error_code=error)
        return fetch_answer(self._offsets.get(request.group_id, {}), request.topics)


def _owns_any(owned: Sequence[TopicIdPartitions] | None, assignment: Assignment) -> bool:
    """Kafka ``CurrentAssignmentBuilder.ownsRevokedPartitions``: ``None`` (not reported) counts as owning."""
    if owned is None:
        return True
    return any(p in assignment.get(tp.topic_id, frozenset()) for tp in owned for p in tp.partitions)
