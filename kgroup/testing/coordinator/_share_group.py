"""A pure model of Apache Kafka 4.4's share groups (KIP-932): the coordinator, share partitions, share sessions.

One object answers what a share-group member sends: ShareGroupHeartbeat (the group coordinator,
``GroupMetadataManager.shareGroupHeartbeat``, ``ShareGroup``, the server-side ``SimpleAssignor``),
ShareFetch and ShareAcknowledge (the partition leader's ``SharePartitionManager``,
``ShareSessionCache`` and one :class:`~kgroup.testing.coordinator._share_partition.SharePartition`
per group and topic partition). Same conventions as
:class:`~kgroup.testing.coordinator.ConsumerGroupModel`: no IO, no threads, time from an injected
clock, timers (sessions, acquisition locks, the share-state initialization) fired inside the
model's own calls (:meth:`ShareGroupModel.tick` and around every request), an append-only event log,
every answer a completed :class:`~kgroup.testing.coordinator.Reply`. The topic partitions' logs are
the model's own (:meth:`ShareGroupModel.produce` appends a batch).

The rules:

* **Validation**: an empty group id or member id, an epoch below -1, a join (epoch 0) without
  subscribed topic names: INVALID_REQUEST.
* **Join and heartbeat**: epoch 0 creates the group (at group epoch 1) and the member; any other
  epoch needs both (GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID) and the member's epoch, or its previous
  one (the answer that moved it was lost; FENCED_MEMBER_EPOCH otherwise). A new member, a
  changed subscription or a change of the subscribed topics' partitions bumps the group epoch;
  the group is full at ``max_size`` members (GROUP_MAX_SIZE_REACHED, ``group.share.max.size``).
* **Share-state initialization**: a partition is assigned only once its share state is
  initialized (the group coordinator's InitializeShareGroupState to the share coordinator). The
  first target assignment that meets uninitialized partitions leaves them out and starts their
  initialization; it completes ``initialize_delay_ms`` later and bumps the group epoch (unless
  something else bumped it meanwhile). So a group's first member joins at epoch 2 with no
  partitions and gets them at epoch 3, at its first heartbeat one assignment interval later, as
  Apache Kafka 4.4 answers. Until then a ShareFetch of the partition answers it with
  UNKNOWN_SERVER_ERROR.
* **Target assignment**: when the group epoch is ahead of the assignment epoch and
  ``assignment_interval_ms`` passed since the last target (``group.share.assignment.interval.ms``;
  a group's first target at once), the heartbeat computes the new one with the simple assignor
  (:func:`simple_assign`). There is no reconciliation: a member takes the target epoch and its
  target partitions at its next heartbeat (nothing is revoked, partitions are shared).
* **The answer**: member id, epoch, ``heartbeat_interval_ms``; the assignment on a join or when the
  member's partitions changed (``None`` otherwise).
* **Leave and session**: epoch -1 removes the member (answer epoch -1, interval 0); so does
  ``session_timeout_ms`` without a heartbeat. A removed member keeps its acquired records until
  their locks expire, and its share session (Apache Kafka 4.4: the group coordinator and the
  partition leaders do not talk about members).
* **Share sessions** (``ShareSessionCache``, keyed by group and member id): ShareFetch epoch 0 opens
  (or replaces: the old session's acquired records stay acquired) a session with the request's
  partitions (acknowledgements in it: INVALID_REQUEST); each later request must carry the
  session's epoch (INVALID_SHARE_SESSION_EPOCH; no session: SHARE_SESSION_NOT_FOUND), adds its
  partitions, drops ``forgotten`` ones, and bumps the epoch (partition errors bump it too); epoch
  -1 applies the acknowledgements, releases the member's acquired records of the session's
  partitions and closes it. ShareAcknowledge never opens a session (epoch 0:
  INVALID_SHARE_SESSION_EPOCH). More than ``max_share_sessions`` sessions: SHARE_SESSION_LIMIT_REACHED.
  ShareFetch does not check group membership or the assignment (any member id may fetch any partition).
* **ShareFetch**: acknowledgements first, then acquisition over the session's partitions, in
  session order, sharing ``max_records`` (see ``SharePartition.acquire``); a renew-acknowledgement
  (``is_renew_ack``, v2) acquires nothing and must set the fetch parameters to 0 (INVALID_REQUEST).
  A partition's share state starts at its first fetch:
  SPSO at the log end (``share.auto.offset.reset`` ``latest``, the default) or the log start
  (``earliest``), per group (:meth:`ShareGroupModel.set_group_config`). The answer lists every
  partition of an opening request, else those with records, errors or acknowledgements, and the
  lock duration in ``acquisition_lock_timeout_ms`` (0 on a request error).

Not modelled: the wait of a ShareFetch for records (``max_wait_ms``/``min_bytes``: the model answers
at once with what is there), record bytes and sizes (``max_bytes``), transactions
(``share.isolation.level``), ``by_duration`` offset reset, racks, the ``share_group`` describe and
admin APIs, the share coordinator's persistence (a failover, :meth:`ShareGroupModel.restart`, keeps
everything). docs/simulation.md, "Share-group model", lists what the conformance suite compared
against Apache Kafka 4.4 and the differences found.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import attrs

from kgroup import _error_codes as codes
from kgroup._clock import Clock
from kgroup.protocol.group_api import OffsetCommitRequest
from kgroup.protocol.share_group_heartbeat import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    TopicIdPartitions,
)
from kgroup.testing.coordinator import _events as ev
from kgroup.testing.coordinator._core import CoordinatorCore
from kgroup.testing.coordinator._reply import Reply
from kgroup.testing.coordinator._share_api import (
    FINAL_SHARE_SESSION_EPOCH,
    INITIAL_SHARE_SESSION_EPOCH,
    AcquiredRecords,
    ShareAcknowledgePartition,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareAcquireMode,
    ShareFetchPartition,
    ShareFetchRequest,
    ShareFetchResponse,
    SharePartitionData,
)
from kgroup.testing.coordinator._share_partition import PartitionLog, SharePartition

__all__ = [
    "LOCKS_EXPIRED",
    "PARTITIONS_INITIALIZED",
    "RECORDS_ACKNOWLEDGED",
    "RECORDS_ACQUIRED",
    "SHARE_GROUP_EPOCH_BUMPED",
    "SHARE_SESSION_CLOSED",
    "SHARE_SESSION_LIMIT_REACHED",
    "SHARE_SESSION_OPENED",
    "SHARE_TARGET_ASSIGNMENT_COMPUTED",
    "ShareGroupConfig",
    "ShareGroupModel",
    "simple_assign",
]

SHARE_SESSION_LIMIT_REACHED: Final = codes.SHARE_SESSION_LIMIT_REACHED
"""Kafka 4.1's error code: the broker holds ``group.share.max.share.sessions`` share sessions."""

SHARE_GROUP_EPOCH_BUMPED: Final = "share_group_epoch_bumped"
"""The group epoch went up (detail: the new epoch and why)."""
SHARE_TARGET_ASSIGNMENT_COMPUTED: Final = "share_target_assignment_computed"
"""A new target assignment (detail: epoch, member -> partitions)."""
PARTITIONS_INITIALIZED: Final = "share_partitions_initialized"
"""The share state of partitions was initialized (detail: the partitions)."""
SHARE_SESSION_OPENED: Final = "share_session_opened"
"""A ShareFetch at epoch 0 opened (or replaced) the member's share session."""
SHARE_SESSION_CLOSED: Final = "share_session_closed"
"""A request at epoch -1 closed the member's share session."""
RECORDS_ACQUIRED: Final = "records_acquired"
"""A ShareFetch acquired records (detail: ``topic:partition first-last x delivery count``)."""
RECORDS_ACKNOWLEDGED: Final = "records_acknowledged"
"""Acknowledgements were applied (detail: partition, batches and the error code)."""
LOCKS_EXPIRED: Final = "acquisition_locks_expired"
"""Acquisition locks ran out or a member's records were released (detail: offsets and new states)."""

_INT32_MAX: Final = 2**31 - 1

Assignment = dict[uuid.UUID, frozenset[int]]
TopicsFn = Callable[[], Mapping[str, tuple[uuid.UUID, int]]]
TopicPartition = tuple[uuid.UUID, int]
_AUTO_OFFSET_RESETS: Final = ("latest", "earliest")


@attrs.frozen(kw_only=True)
class ShareGroupConfig:
    """Broker configs of share groups (Kafka's names without ``group.share.``), Apache Kafka 4.4's defaults.

    ``session_timeout_ms`` 45000, ``heartbeat_interval_ms`` 5000, ``max_size`` 200,
    ``assignment_interval_ms`` 1000, ``record_lock_duration_ms`` 30000, ``delivery_count_limit`` 5
    (2-10), ``partition_max_record_locks`` 2000, ``max_share_sessions`` 2000 (``group.share.*``);
    ``auto_offset_reset`` ``"latest"`` and ``dead_letter_topic`` ``""`` are the group configs
    ``share.auto.offset.reset`` and ``errors.deadletterqueue.topic.name`` (KIP-1191) for every group
    (:meth:`ShareGroupModel.set_group_config` overrides them per group). ``initialize_delay_ms`` (0)
    is the model's: how long the share coordinator takes to initialize a partition's state.

    Raises:
        ValueError: a value out of range (the message names it).

    """

    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    max_size: int = 200
    assignment_interval_ms: int = 1000
    record_lock_duration_ms: int = 30000
    delivery_count_limit: int = 5
    partition_max_record_locks: int = 2000
    max_share_sessions: int = 2000
    auto_offset_reset: str = "latest"
    dead_letter_topic: str = ""
    initialize_delay_ms: int = 0

    def __attrs_post_init__(self) -> None:
        for name in ("session_timeout_ms", "heartbeat_interval_ms", "max_size", "record_lock_duration_ms",
                     "partition_max_record_locks", "max_share_sessions", "assignment_interval_ms",
                     "initialize_delay_ms"):
            value = getattr(self, name)
            minimum = 0 if name in ("assignment_interval_ms", "initialize_delay_ms") else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
        if not 2 <= self.delivery_count_limit <= 10:
            raise ValueError(f"delivery_count_limit must be in [2, 10], got {self.delivery_count_limit!r}")
        if self.auto_offset_reset not in _AUTO_OFFSET_RESETS:
            raise ValueError(f"auto_offset_reset must be one of {_AUTO_OFFSET_RESETS}, got {self.auto_offset_reset!r}")


@attrs.define(kw_only=True)
class _Member:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    rack_id: str | None = None
    subscribed_topic_names: frozenset[str] = frozenset()
    assigned: Assignment = attrs.field(factory=dict)


@attrs.define(kw_only=True)
class _Group:
    group_id: str
    group_epoch: int = 1
    assignment_epoch: int = 0
    assigned_at_ms: int | None = None
    members: dict[str, _Member] = attrs.field(factory=dict)
    target: dict[str, Assignment] = attrs.field(factory=dict)
    subscription_metadata: dict[str, tuple[uuid.UUID, int]] = attrs.field(factory=dict)
    initialized: set[TopicPartition] = attrs.field(factory=set)
    initializing: set[TopicPartition] = attrs.field(factory=set)

    def state(self) -> str:
        if not self.members:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        if any(m.member_epoch != self.assignment_epoch for m in self.members.values()):
            return "Reconciling"
        return "Stable"


@attrs.define(kw_only=True)
class _Session:
    epoch: int
    partitions: list[TopicPartition]


class _Error(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def simple_assign(
    members: Mapping[str, frozenset[str]],
    topics: Mapping[str, tuple[uuid.UUID, int]],
    allowed: Callable[[uuid.UUID, int], bool],
    previous: Mapping[str, Assignment],
) -> dict[str, Assignment]:
    """The server-side ``simple`` share assignor: member id -> topic id -> partitions.

    ``members``: member id -> subscribed topic names; ``topics``: name -> (topic id, partition
    count); only partitions for which ``allowed`` is true (initialized) are assigned. With one
    subscription for all (Kafka ``SimpleHomogeneousAssignmentBuilder``): at most as many members as
    partitions, every partition goes to one member, the counts balanced (a difference of at most
    one); more members than partitions, every partition goes to ``ceil(members / partitions)``
    members and the members' counts are balanced (3 members, 2 partitions: 2, 1 and 1, as Apache
    Kafka 4.4 answers). Either way a member keeps what it had where the balance allows, and the
    rest go in sorted member-id order (Kafka's own order among members is its hash maps'). Different
    subscriptions: the same per topic, among its subscribers.
    """
    out: dict[str, Assignment] = {m: {} for m in members}
    subscriptions = set(members.values())
    groups: list[tuple[list[str], list[TopicPartition]]] = []
    if len(subscriptions) <= 1:
        names = next(iter(subscriptions), frozenset())
        groups.append((sorted(members), _partitions_of(names, topics, allowed)))
    else:
        for name in sorted(set().union(*subscriptions)):
            subscribers = sorted(m for m, subs in members.items() if name in subs)
            groups.append((subscribers, _partitions_of(frozenset((name,)), topics, allowed)))
    for member_ids, partitions in groups:
        if not member_ids or not partitions:
            continue
        plan = _balance(member_ids, partitions, previous)
        for member_id, tps in plan.items():
            for topic_id, p in tps:
                out[member_id][topic_id] = out[member_id].get(topic_id, frozenset()) | {p}
    return out


def _partitions_of(
    names: frozenset[str], topics: Mapping[str, tuple[uuid.UUID, int]], allowed: Callable[[uuid.UUID, int], bool]
) -> list[TopicPartition]:
    parts = [(topics[n][0], p) for n in names if n in topics for p in range(topics[n][1])]
    return sorted((tp for tp in parts if allowed(*tp)), key=lambda tp: (str(tp[0]), tp[1]))


def _balance(
    member_ids: list[str], partitions: list[TopicPartition], previous: Mapping[str, Assignment]
) -> dict[str, list[TopicPartition]]:
    def had(member_id: str) -> list[TopicPartition]:
        return [tp for tp in partitions if tp[1] in previous.get(member_id, {}).get(tp[0], ())]

    plan: dict[str, list[TopicPartition]] = {m: [] for m in member_ids}
    if len(member_ids) <= len(partitions):
        base, extra = divmod(len(partitions), len(member_ids))
        quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(member_ids)}
        taken: set[TopicPartition] = set()
        for m in member_ids:
            for tp in had(m):
                if len(plan[m]) < quota[m] and tp not in taken:
                    plan[m].append(tp)
                    taken.add(tp)
        free = [tp for tp in partitions if tp not in taken]
        for m in member_ids:
            while len(plan[m]) < quota[m]:
                plan[m].append(free.pop(0))
        return plan
    # more members than partitions: each partition shared by ceil(members / partitions) members
    sharing = -(-len(member_ids) // len(partitions))
    base, extra = divmod(sharing * len(partitions), len(member_ids))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(member_ids)}
    capacity = dict.fromkeys(partitions, sharing)
    for m in member_ids:
        for tp in had(m):
            if len(plan[m]) < quota[m] and capacity[tp] > 0:
                plan[m].append(tp)
                capacity[tp] -= 1
    for m in member_ids:
        while len(plan[m]) < quota[m]:
            tp = max((tp for tp in partitions if tp not in plan[m]), key=lambda tp: capacity[tp])
            plan[m].append(tp)
            capacity[tp] -= 1
    return plan


def _wire(assignment: Assignment) -> tuple[TopicIdPartitions, ...]:
    ordered = sorted(assignment.items(), key=lambda item: str(item[0]))
    return tuple(TopicIdPartitions(t, tuple(sorted(ps))) for t, ps in ordered if ps)


class ShareGroupModel(CoordinatorCore[ShareGroupConfig, _Group]):
    """Apache Kafka 4.4's share groups (KIP-932), coordinator and partition leader, as a deterministic model.

    Args:
        config: the broker's share-group configs (defaults: Kafka's).
        clock: the time source; only ``monotonic()`` is used.
        topics: the cluster's topics now, ``name -> (topic id, partition count)``; called on each
            heartbeat and fetch.

    """

    def __init__(self, config: ShareGroupConfig | None = None, *, clock: Clock, topics: TopicsFn) -> None:
        super().__init__(config if config is not None else ShareGroupConfig(), clock=clock, partition_exists=None)
        self._topics = topics
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._share_partitions: dict[tuple[str, uuid.UUID, int], SharePartition] = {}
        self._sessions: dict[tuple[str, str], _Session] = {}
        self._group_configs: dict[str, dict[str, str | int]] = {}

    # ==========================================================================================
    # public surface
    # ==========================================================================================

    def set_group_config(
        self,
        group_id: str,
        *,
        auto_offset_reset: str | None = None,
        dead_letter_topic: str | None = None,
        record_lock_duration_ms: int | None = None,
        delivery_count_limit: int | None = None,
    ) -> None:
        """Set a group's configs, as IncrementalAlterConfigs on the group does.

        Kafka's ``share.auto.offset.reset``, ``errors.deadletterqueue.topic.name``,
        ``share.record.lock.duration.ms`` and ``share.delivery.count.limit``. Takes effect for
        share partitions not yet started.

        Raises:
            ValueError: an unknown reset, a lock duration below 1 ms, a delivery count limit outside 2-10.

        """
        if auto_offset_reset is not None and auto_offset_reset not in _AUTO_OFFSET_RESETS:
            raise ValueError(f"auto_offset_reset must be one of {_AUTO_OFFSET_RESETS}, got {auto_offset_reset!r}")
        if record_lock_duration_ms is not None and record_lock_duration_ms < 1:
            raise ValueError(f"record_lock_duration_ms must be >= 1, got {record_lock_duration_ms!r}")
        if delivery_count_limit is not None and not 2 <= delivery_count_limit <= 10:
            raise ValueError(f"delivery_count_limit must be in [2, 10], got {delivery_count_limit!r}")
        overrides = self._group_configs.setdefault(group_id, {})
        if delivery_count_limit is not None:
            overrides["delivery_count_limit"] = delivery_count_limit
        if auto_offset_reset is not None:
            overrides["auto_offset_reset"] = auto_offset_reset
        if dead_letter_topic is not None:
            overrides["dead_letter_topic"] = dead_letter_topic
        if record_lock_duration_ms is not None:
            overrides["record_lock_duration_ms"] = record_lock_duration_ms

    def produce(self, topic_id: uuid.UUID, partition: int, count: int) -> int:
        """Append one batch of ``count`` records to a partition's log; its base offset.

        Raises:
            ValueError: ``count`` is below 1.

        """
        base = self._log(topic_id, partition).append(count)
        return base

    def log_end_offset(self, topic_id: uuid.UUID, partition: int) -> int:
        """The partition's high watermark."""
        return self._log(topic_id, partition).end_offset

    def share_partition(self, group_id: str, topic_id: uuid.UUID, partition: int) -> SharePartition | None:
        """The group's share partition (``None`` until its first fetch); read it, do not change it."""
        return self._share_partitions.get((group_id, topic_id, partition))

    def group_state(self, group_id: str) -> str:
        """Empty, Assigning, Reconciling or Stable; ``"Dead"`` if unknown."""
        group = self._groups.get(group_id)
        return group.state() if group is not None else "Dead"

    def group_epoch(self, group_id: str) -> int:
        """The group epoch (0: no such group)."""
        group = self._groups.get(group_id)
        return group.group_epoch if group is not None else 0

    def members(self, group_id: str) -> Mapping[str, tuple[int, Mapping[uuid.UUID, frozenset[int]]]]:
        """Member id -> (member epoch, assigned partitions by topic id)."""
        group = self._groups.get(group_id)
        if group is None:
            return {}
        return {mid: (m.member_epoch, dict(m.assigned)) for mid, m in group.members.items()}

    def share_session_epoch(self, group_id: str, member_id: str) -> int | None:
        """The epoch the member's next request must carry, or ``None`` without a share session."""
        session = self._sessions.get((group_id, member_id))
        return None if session is None else session.epoch

    def heartbeat(self, request: ShareGroupHeartbeatRequest) -> Reply[ShareGroupHeartbeatResponse]:
        """Handle ShareGroupHeartbeat (v1); always answered at once."""
        self._fire_due_timers()
        try:
            response = self._heartbeat(request)
        except _Error as error:
            response = ShareGroupHeartbeatResponse(error_code=error.code, error_message=error.message)
        self._fire_due_timers()
        return Reply.of(response)

    def share_fetch(self, request: ShareFetchRequest) -> Reply[ShareFetchResponse]:
        """Handle ShareFetch (v1-v2); answered at once with what can be acquired now."""
        self._fire_due_timers()
        try:
            response = self._share_fetch(request)
        except _Error as error:
            response = ShareFetchResponse(error_code=error.code)
        self._fire_due_timers()
        return Reply.of(response)

    def share_acknowledge(self, request: ShareAcknowledgeRequest) -> Reply[ShareAcknowledgeResponse]:
        """Handle ShareAcknowledge (v1-v2)."""
        self._fire_due_timers()
        try:
            response = self._share_acknowledge(request)
        except _Error as error:
            response = ShareAcknowledgeResponse(error_code=error.code)
        self._fire_due_timers()
        return Reply.of(response)

    # ==========================================================================================
    # failover and timers
    # ==========================================================================================

    def _unload(self) -> None:
        """A failover loses nothing but the timers (the groups and share states are persisted)."""

    def _on_loaded(self) -> None:
        for group in self._groups.values():
            for member_id in group.members:
                self._schedule_session(group.group_id, member_id)
            for tp in group.initializing:
                self._schedule_initialize(group.group_id, tp, group.group_epoch)
        for key in self._share_partitions:
            self._arm_locks(key)

    def _create_simple_group(self, group_id: str) -> None:
        """OffsetCommit is not a share-group API: nothing is created."""

    def _validate_group_offset_commit(self, request: OffsetCommitRequest) -> int:
        """A share group takes no OffsetCommit (not compared with Kafka)."""
        return codes.GROUP_ID_NOT_FOUND

    def _schedule_session(self, group_id: str, member_id: str) -> None:
        self._schedule(
            ("session", group_id, member_id),
            self._config.session_timeout_ms,
            lambda: self._expire_session(group_id, member_id),
        )

    def _expire_session(self, group_id: str, member_id: str) -> None:
        group = self._groups.get(group_id)
        if group is not None and member_id in group.members:
            self._remove_member(group, member_id, "session timeout")

    def _schedule_initialize(self, group_id: str, tp: TopicPartition, epoch: int) -> None:
        self._schedule(("initialize", group_id, str(tp[0]), str(tp[1])), self._config.initialize_delay_ms,
                       lambda: self._initialized(group_id, tp, epoch))

    def _initialized(self, group_id: str, tp: TopicPartition, epoch: int) -> None:
        """The share coordinator initialized ``tp``'s state, asked for at group epoch ``epoch``.

        The group epoch becomes ``epoch + 1`` unless it moved past ``epoch`` meanwhile (a join
        after the request: Apache Kafka 4.4 then bumps nothing more).
        """
        group = self._groups.get(group_id)
        if group is None or tp not in group.initializing:
            return
        group.initializing.discard(tp)
        group.initialized.add(tp)
        self._event(group_id, PARTITIONS_INITIALIZED, detail=f"{str(tp[0])[:8]}:{tp[1]}")
        if not group.initializing and group.group_epoch <= epoch:
            self._bump(group, "share state initialized")

    def _arm_locks(self, key: tuple[str, uuid.UUID, int]) -> None:
        sp = self._share_partitions[key]
        timer = ("locks", key[0], str(key[1]), str(key[2]))
        deadline = sp.next_lock_deadline()
        if deadline is None:
            self._cancel(timer)
            return
        self._schedule(timer, deadline - self._now_ms(), lambda: self._expire_locks(key))

    def _expire_locks(self, key: tuple[str, uuid.UUID, int]) -> None:
        sp = self._share_partitions[key]
        changed = sp.expire_locks(self._now_ms())
        if changed:
            self._event(key[0], LOCKS_EXPIRED, detail=_changes(key, changed))
        self._arm_locks(key)

    # ==========================================================================================
    # ShareGroupHeartbeat
    # ==========================================================================================

    def _heartbeat(self, r: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse:
        if self._loading():
            raise _Error(codes.COORDINATOR_LOAD_IN_PROGRESS, "The coordinator is loading.")
        bad = codes.INVALID_REQUEST
        if not r.group_id:
            raise _Error(bad, "GroupId can't be empty.")
        if not r.member_id:
            raise _Error(bad, "MemberId can't be empty.")
        if r.rack_id == "":
            raise _Error(bad, "RackId can't be empty.")
        if r.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
            raise _Error(bad, "MemberEpoch is invalid.")
        if r.member_epoch == JOIN_GROUP_MEMBER_EPOCH and not r.subscribed_topic_names:
            raise _Error(bad, "SubscribedTopicNames must be set in first request.")
        group = self._groups.get(r.group_id)
        joining = r.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        if group is None and not joining:
            raise _Error(codes.GROUP_ID_NOT_FOUND, f"Group {r.group_id} not found.")
        if group is not None and r.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            if r.member_id not in group.members:
                raise _Error(codes.UNKNOWN_MEMBER_ID, f"Member {r.member_id} is not a member of group {r.group_id}.")
            self._remove_member(group, r.member_id, "left")
            return ShareGroupHeartbeatResponse(
                error_code=codes.NONE, member_id=r.member_id, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                heartbeat_interval_ms=0,
            )
        if group is None:
            group = self._groups.setdefault(r.group_id, _Group(group_id=r.group_id))
        member = group.members.get(r.member_id)
        if member is None:
            if not joining:
                raise _Error(codes.UNKNOWN_MEMBER_ID, f"Member {r.member_id} is not a member of group {r.group_id}.")
            if len(group.members) >= self._config.max_size:
                raise _Error(codes.GROUP_MAX_SIZE_REACHED,
                             f"The share group has reached its maximum capacity of {self._config.max_size} members.")
        elif not joining and r.member_epoch != member.member_epoch and (
            r.member_epoch > member.member_epoch or r.member_epoch != member.previous_member_epoch
        ):
            relation = "greater" if r.member_epoch > member.member_epoch else "smaller"
            raise _Error(
                codes.FENCED_MEMBER_EPOCH,
                f"The share group member has a {relation} member epoch ({r.member_epoch}) than the one known by "
                f"the group coordinator ({member.member_epoch}). The member must abandon all its partitions and "
                "rejoin.",
            )
        reasons: list[str] = []
        if member is None:
            member = _Member(member_id=r.member_id)
            group.members[r.member_id] = member
            self._event(group.group_id, ev.MEMBER_ADDED, r.member_id, "share")
            reasons.append(f"member {r.member_id} joined")
        if r.rack_id is not None:
            member.rack_id = r.rack_id
        subscribed = r.subscribed_topic_names
        if subscribed is not None and frozenset(subscribed) != member.subscribed_topic_names:
            if not reasons:
                reasons.append(f"member {r.member_id} changed its subscription")
            member.subscribed_topic_names = frozenset(subscribed)
        metadata = self._subscription_metadata(group)
        if metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            if not reasons:
                reasons.append("the subscribed topics' metadata changed")
        if reasons:
            self._bump(group, "; ".join(reasons))
        self._maybe_compute_target(group)
        previous = member.assigned
        if member.member_epoch != group.assignment_epoch:
            member.previous_member_epoch = member.member_epoch
        member.member_epoch = group.assignment_epoch
        member.assigned = dict(group.target.get(r.member_id, {}))
        self._schedule_session(group.group_id, r.member_id)
        send = joining or member.assigned != previous
        return ShareGroupHeartbeatResponse(
            error_code=codes.NONE,
            member_id=r.member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self._config.heartbeat_interval_ms,
            assignment=_wire(member.assigned) if send else None,
        )

    def _bump(self, group: _Group, why: str) -> None:
        group.group_epoch += 1
        self._event(group.group_id, SHARE_GROUP_EPOCH_BUMPED, detail=f"epoch {group.group_epoch}: {why}")

    def _subscription_metadata(self, group: _Group) -> dict[str, tuple[uuid.UUID, int]]:
        topics = self._topics()
        names = set().union(*(m.subscribed_topic_names for m in group.members.values())) if group.members else set()
        return {n: topics[n] for n in sorted(names) if n in topics}

    def _maybe_compute_target(self, group: _Group) -> None:
        if group.group_epoch <= group.assignment_epoch:
            return
        now = self._now_ms()
        if group.assigned_at_ms is not None and now - group.assigned_at_ms < self._config.assignment_interval_ms:
            return
        topics = group.subscription_metadata
        wanted = {(tid, p) for tid, count in topics.values() for p in range(count)}
        previous = group.target
        group.target = simple_assign(
            {mid: m.subscribed_topic_names for mid, m in group.members.items()},
            topics,
            lambda tid, p: (tid, p) in group.initialized,
            previous,
        )
        group.assignment_epoch = group.group_epoch
        group.assigned_at_ms = now
        detail = ", ".join(f"{mid}: {_brief(a)}" for mid, a in sorted(group.target.items()))
        self._event(
            group.group_id, SHARE_TARGET_ASSIGNMENT_COMPUTED, detail=f"epoch {group.assignment_epoch}: {detail}"
        )
        for tp in sorted(wanted - group.initialized - group.initializing, key=lambda tp: (str(tp[0]), tp[1])):
            group.initializing.add(tp)
            self._schedule_initialize(group.group_id, tp, group.group_epoch)

    def _remove_member(self, group: _Group, member_id: str, why: str) -> None:
        del group.members[member_id]
        group.target.pop(member_id, None)
        self._cancel(("session", group.group_id, member_id))
        self._event(group.group_id, ev.MEMBER_REMOVED, member_id, why)
        self._bump(group, f"member {member_id} removed ({why})")

    # ==========================================================================================
    # ShareFetch and ShareAcknowledge
    # ==========================================================================================

    def _share_fetch(self, r: ShareFetchRequest) -> ShareFetchResponse:
        if not r.group_id or not r.member_id:
            raise _Error(codes.INVALID_REQUEST, "GroupId and MemberId can't be empty.")
        key = (r.group_id, r.member_id)
        acks = [p for p in r.partitions if p.acknowledgement_batches]
        renew = r.api_version >= 2 and r.is_renew_ack
        if renew and (r.max_wait_ms or r.min_bytes or r.max_bytes or r.max_records):
            raise _Error(codes.INVALID_REQUEST, "maxWaitMs, minBytes, maxBytes and maxRecords must be set to 0, "
                                                "if isRenewAck is true.")
        if r.share_session_epoch == INITIAL_SHARE_SESSION_EPOCH:
            if acks:
                raise _Error(codes.INVALID_REQUEST, "Acknowledge data present on initial epoch.")
            if key not in self._sessions and len(self._sessions) >= self._config.max_share_sessions:
                raise _Error(SHARE_SESSION_LIMIT_REACHED, "The share session limit is reached.")
            session = _Session(epoch=1, partitions=[])
            self._sessions[key] = session
            self._event(r.group_id, SHARE_SESSION_OPENED, r.member_id)
        else:
            session = self._session(key, r.share_session_epoch)
        for p in r.partitions:
            if (p.topic_id, p.partition) not in session.partitions:
                session.partitions.append((p.topic_id, p.partition))
        for tp in r.forgotten:
            if tp in session.partitions:
                session.partitions.remove(tp)
        ack_errors = self._apply_acks(r.group_id, r.member_id, acks, renew)
        out: dict[TopicPartition, ShareFetchPartition] = {}
        for tp, code in ack_errors.items():
            out[tp] = ShareFetchPartition(topic_id=tp[0], partition=tp[1], acknowledge_error_code=code)
        if r.share_session_epoch == FINAL_SHARE_SESSION_EPOCH:
            self._close_session(key, session)
        elif not renew:
            budget = r.max_records
            strict = r.api_version >= 2 and r.share_acquire_mode == ShareAcquireMode.RECORD_LIMIT
            for tp in list(session.partitions):
                got = self._acquire(r.group_id, r.member_id, tp, budget if budget > 0 else 0, strict)
                if isinstance(got, int):
                    out[tp] = ShareFetchPartition(topic_id=tp[0], partition=tp[1], error_code=got)
                    continue
                budget -= sum(a.last_offset - a.first_offset + 1 for a in got)
                if got or r.share_session_epoch == INITIAL_SHARE_SESSION_EPOCH or tp in out:
                    old = out.get(tp)
                    out[tp] = ShareFetchPartition(
                        topic_id=tp[0], partition=tp[1], acquired_records=tuple(got),
                        acknowledge_error_code=old.acknowledge_error_code if old else 0,
                    )
        return ShareFetchResponse(acquisition_lock_timeout_ms=self._lock_ms(r.group_id), partitions=tuple(out.values()))

    def _share_acknowledge(self, r: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse:
        key = (r.group_id, r.member_id)
        if r.share_session_epoch == INITIAL_SHARE_SESSION_EPOCH:
            raise _Error(codes.INVALID_SHARE_SESSION_EPOCH, "ShareAcknowledge cannot open a share session.")
        session = self._session(key, r.share_session_epoch)
        renew = r.api_version >= 2 and r.is_renew_ack
        errors = self._apply_acks(r.group_id, r.member_id, list(r.partitions), renew)
        if r.share_session_epoch == FINAL_SHARE_SESSION_EPOCH:
            self._close_session(key, session)
        return ShareAcknowledgeResponse(
            acquisition_lock_timeout_ms=self._lock_ms(r.group_id) if r.api_version >= 2 else 0,
            partitions=tuple(ShareAcknowledgePartition(topic_id=t, partition=p, error_code=c)
                             for (t, p), c in errors.items()),
        )

    def _session(self, key: tuple[str, str], epoch: int) -> _Session:
        """The session a non-initial request names, its epoch checked and bumped (Kafka ``ShareSessionCache``)."""
        session = self._sessions.get(key)
        if session is None:
            raise _Error(codes.SHARE_SESSION_NOT_FOUND, f"Share session for {key[1]} not found.")
        if epoch != FINAL_SHARE_SESSION_EPOCH:
            if epoch != session.epoch:
                raise _Error(codes.INVALID_SHARE_SESSION_EPOCH,
                             f"Share session epoch {epoch} is not the expected {session.epoch}.")
            session.epoch += 1
        return session

    def _close_session(self, key: tuple[str, str], session: _Session) -> None:
        del self._sessions[key]
        for tp in session.partitions:
            spkey = (key[0], *tp)
            sp = self._share_partitions.get(spkey)
            if sp is not None:
                changed = sp.release_member(key[1])
                if changed:
                    self._event(key[0], LOCKS_EXPIRED, key[1], _changes(spkey, changed))
                self._arm_locks(spkey)
        self._event(key[0], SHARE_SESSION_CLOSED, key[1])

    def _apply_acks(
        self, group_id: str, member_id: str, partitions: Sequence[SharePartitionData], renew: bool
    ) -> dict[TopicPartition, int]:
        errors: dict[TopicPartition, int] = {}
        for p in partitions:
            tp = (p.topic_id, p.partition)
            sp = self._share_partitions.get((group_id, *tp))
            if sp is None:
                code = codes.INVALID_RECORD_STATE if self._known(tp) else codes.UNKNOWN_TOPIC_OR_PARTITION
            else:
                code = sp.acknowledge(member_id, p.acknowledgement_batches, self._now_ms(), renew=renew)
                self._arm_locks((group_id, *tp))
            brief = " ".join(f"{b.first_offset}-{b.last_offset}:{list(b.acknowledge_types)}"
                             for b in p.acknowledgement_batches)
            self._event(group_id, RECORDS_ACKNOWLEDGED, member_id, f"{str(tp[0])[:8]}:{tp[1]} {brief} -> {code}")
            errors[tp] = code
        return errors

    def _lock_ms(self, group_id: str) -> int:
        return int(self._group_configs.get(group_id, {}).get("record_lock_duration_ms",
                                                              self._config.record_lock_duration_ms))

    def _known(self, tp: TopicPartition) -> bool:
        return any(tid == tp[0] and 0 <= tp[1] < count for tid, count in self._topics().values())

    def _log(self, topic_id: uuid.UUID, partition: int) -> PartitionLog:
        return self._logs.setdefault((topic_id, partition), PartitionLog())

    def _acquire(
        self, group_id: str, member_id: str, tp: TopicPartition, budget: int, strict: bool
    ) -> list[AcquiredRecords] | int:
        """The records acquired, or the partition's error code.

        UNKNOWN_TOPIC_OR_PARTITION, or UNKNOWN_SERVER_ERROR while the group's share state of ``tp``
        is not initialized (Apache Kafka 4.4: the share partition cannot load a state the group
        coordinator has not written).
        """
        if not self._known(tp):
            return codes.UNKNOWN_TOPIC_OR_PARTITION
        group = self._groups.get(group_id)
        if group is None or tp not in group.initialized:
            return codes.UNKNOWN_SERVER_ERROR
        key = (group_id, *tp)
        log = self._log(*tp)
        sp = self._share_partitions.get(key)
        if sp is None:
            overrides = self._group_configs.get(group_id, {})
            reset = overrides.get("auto_offset_reset", self._config.auto_offset_reset)
            dlq = str(overrides.get("dead_letter_topic", self._config.dead_letter_topic))
            sp = SharePartition(
                tp[0], tp[1],
                start_offset=log.end_offset if reset == "latest" else log.log_start_offset,
                delivery_count_limit=int(overrides.get("delivery_count_limit", self._config.delivery_count_limit)),
                record_lock_duration_ms=self._lock_ms(group_id),
                max_record_locks=self._config.partition_max_record_locks,
                dead_letter_topic=dlq,
            )
            self._share_partitions[key] = sp
        if budget <= 0:
            return []
        got = sp.acquire(member_id, log, self._now_ms(), max_records=budget, strict=strict)
        if got:
            self._event(group_id, RECORDS_ACQUIRED, member_id, f"{str(tp[0])[:8]}:{tp[1]} " + " ".join(
                f"{a.first_offset}-{a.last_offset}x{a.delivery_count}" for a in got))
            self._arm_locks(key)
        return got


def _brief(assignment: Assignment) -> str:
    return " ".join(f"{str(t)[:8]}:{sorted(ps)}" for t, ps in sorted(assignment.items(), key=lambda i: str(i[0])))


def _changes(key: tuple[str, uuid.UUID, int], changed: Sequence[tuple[int, object]]) -> str:
    return f"{str(key[1])[:8]}:{key[2]} " + " ".join(f"{o}->{getattr(s, 'name', s)}" for o, s in changed)
