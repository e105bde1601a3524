"""A pure model of Apache Kafka's classic group coordinator (consumer groups), as Kafka 3.x/4.x behaves.

No IO, no threads, no wall clock: time comes from the injected :class:`~kgroup._clock.Clock`
(``now_ms = round(clock.monotonic() * 1000)``) and timers fire only inside the model's own
calls: :meth:`GroupCoordinatorModel.tick`, and before and after every request (so a timer
already due when a request arrives has fired, as it would have on a broker, and a 0 ms timer
armed by a request fires before that request returns).

Sources. The rules follow the Java group coordinator of Apache Kafka (``group-coordinator``
module: ``GroupMetadataManager`` classic-group methods, ``ClassicGroup``, ``ClassicGroupMember``,
``OffsetMetadataManager``, ``GroupCoordinatorService``), the KIPs they implement (KIP-134 delayed
initial rebalance, KIP-345 static membership, KIP-389 group.max.size, KIP-394 MEMBER_ID_REQUIRED,
KIP-800 leave reasons, KIP-814 skip_assignment) and the specification documents kgroup was built from
(the book chapter "Group Membership and Partition Assignment": "Group membership basics",
"Delayed rebalance", "Static membership"; "Kafka consumer rebalances in excruciating detail":
"Rebalances as Double Barriers"; the "Consumer Group Protocol" overview: "Group Coordinator
Failover"; KIP-345). Each rule's comment names the
Kafka method it reproduces.

Replies. Every request returns a :class:`~kgroup.testing.coordinator.Reply`; JoinGroup and
SyncGroup may return it parked, and the model completes it exactly once later. Where Kafka would
leave a future unanswered forever (a member re-sending JoinGroup/SyncGroup while the previous one is
still parked overwrites Kafka's future; a member removed while its SyncGroup is parked), the model
answers the orphan instead: REBALANCE_IN_PROGRESS for a superseded request, UNKNOWN_MEMBER_ID for a
removed member.

DeleteGroups removes an Empty group and its offsets (``GroupCoordinatorShard.deleteGroups``).

Not modelled: offset expiry after ``offsets_retention_ms`` (and the Dead groups it leaves behind),
transactions (so ``require_stable`` never yields UNSTABLE_OFFSET_COMMIT),
the KIP-848 consumer protocol and its online upgrade/downgrade, authorization, quotas, and
failures to append to ``__consumer_offsets``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Final

import attrs

from kgroup import _error_codes as codes
from kgroup._clock import Clock
from kgroup.protocol.group_api import (
    DeletedGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeaveMemberResult,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.testing.coordinator import _events as ev
from kgroup.testing.coordinator._config import NEW_MEMBER_JOIN_TIMEOUT_MS, CoordinatorConfig
from kgroup.testing.coordinator._core import CoordinatorCore
from kgroup.testing.coordinator._group import Group, GroupState, Member
from kgroup.testing.coordinator._offsets import fetch_answer
from kgroup.testing.coordinator._reply import Reply

__all__ = ["GroupCoordinatorModel"]

_EMPTY = GroupState.EMPTY
_PREPARING = GroupState.PREPARING_REBALANCE
_COMPLETING = GroupState.COMPLETING_REBALANCE
_STABLE = GroupState.STABLE

GROUP_OPERATIONS: Final = frozenset({3, 6, 8, 10, 11})
"""READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS: Kafka ``AclEntry.supportedOperations(GROUP)``,
what ``AuthHelper.authorizedOperations`` grants on a cluster without an authorizer (the model's)."""

def _default_member_id(prefix: str) -> str:
    """Kafka ``ClassicGroup.generateMemberId``: ``<client id or instance id>-<random UUID>``."""
    return f"{prefix}-{uuid.uuid4()}"


def _reason(reason: str | None) -> str:
    """Kafka ``JoinGroupRequest.joinReason`` / LeaveGroup: a missing or empty reason reads ``not provided``."""
    return reason if reason else "not provided"


class GroupCoordinatorModel(CoordinatorCore[CoordinatorConfig, Group]):
    """Apache Kafka's classic group coordinator, as a deterministic in-memory model.

    Args:
        config: broker configs (defaults: Kafka's).
        clock: the time source; only ``monotonic()`` is used.
        partition_exists: ``(topic, partition) -> bool``; OffsetCommit answers
            UNKNOWN_TOPIC_OR_PARTITION for a partition it rejects. ``None``: every partition exists.
        member_id_factory: makes a new member id from the prefix Kafka uses: the ``client_id``
            for a dynamic member, the ``group_instance_id`` for a static one (Kafka
            ``ClassicGroup.generateMemberId``). Default ``f"{prefix}-{uuid4()}"``.

    """

    _max_timer_firings = 100_000

    def __init__(
        self,
        config: CoordinatorConfig | None = None,
        *,
        clock: Clock,
        partition_exists: Callable[[str, int], bool] | None = None,
        member_id_factory: Callable[[str], str] | None = None,
    ) -> None:
        super().__init__(
            config if config is not None else CoordinatorConfig(), clock=clock, partition_exists=partition_exists
        )
        self._new_member_id = member_id_factory if member_id_factory is not None else _default_member_id

    # ==========================================================================================
    # public surface
    # ==========================================================================================

    def group_state(self, group_id: str) -> str:
        """Kafka's name of the group's state; ``"Dead"`` for a group the coordinator does not know."""
        group = self._groups.get(group_id)
        return group.state.value if group is not None else GroupState.DEAD.value

    def join_group(self, request: JoinGroupRequest) -> Reply[JoinGroupResponse]:
        """Handle JoinGroup (v0-v9); the reply is parked until the join phase completes."""
        self._fire_due_timers()
        reply = self._join_group(request)
        self._fire_due_timers()
        return reply

    def sync_group(self, request: SyncGroupRequest) -> Reply[SyncGroupResponse]:
        """Handle SyncGroup (v0-v5); a follower's reply is parked until the leader's SyncGroup."""
        self._fire_due_timers()
        reply = self._sync_group(request)
        self._fire_due_timers()
        return reply

    def heartbeat(self, request: HeartbeatRequest) -> Reply[HeartbeatResponse]:
        """Handle Heartbeat (v0-v4)."""
        self._fire_due_timers()
        reply = Reply.of(HeartbeatResponse(error_code=self._heartbeat(request)))
        self._fire_due_timers()
        return reply

    def leave_group(self, request: LeaveGroupRequest) -> Reply[LeaveGroupResponse]:
        """Handle LeaveGroup: v0-2 answer with one top-level error, v3+ per member (KIP-345)."""
        self._fire_due_timers()
        reply = Reply.of(self._leave_group(request))
        self._fire_due_timers()
        return reply

    def offset_fetch(self, request: OffsetFetchRequest) -> Reply[OffsetFetchResponse]:
        """Handle OffsetFetch for one group (``topics=None``: every committed partition)."""
        self._fire_due_timers()
        return Reply.of(self._offset_fetch(request))

    def describe_groups(self, request: DescribeGroupsRequest) -> Reply[DescribeGroupsResponse]:
        """Handle DescribeGroups: one entry per requested id, in request order (authorized operations if asked)."""
        self._fire_due_timers()
        groups = tuple(self._describe(gid, request.api_version) for gid in request.groups)
        if request.include_authorized_operations and request.api_version >= 3:
            # KafkaApis.handleDescribeGroupsRequest adds them to every described group, known or not.
            groups = tuple(attrs.evolve(group, authorized_operations=GROUP_OPERATIONS) for group in groups)
        return Reply.of(DescribeGroupsResponse(groups=groups))

    def list_groups(self, request: ListGroupsRequest) -> Reply[ListGroupsResponse]:
        """Handle ListGroups, honouring the state (v4+) and type (v5+) filters case-insensitively."""
        self._fire_due_timers()
        return Reply.of(self._list_groups(request))

    def delete_groups(self, request: DeleteGroupsRequest) -> Reply[DeleteGroupsResponse]:
        """Handle DeleteGroups: one result per requested id, in request order."""
        self._fire_due_timers()
        return Reply.of(DeleteGroupsResponse(results=tuple(self._delete_group(gid) for gid in request.groups)))

    # ==========================================================================================
    # failover
    # ==========================================================================================

    def _unload(self) -> None:
        """A coordinator failover (:meth:`restart`): unload every group, then reload it from ``__consumer_offsets``.

        Kafka ``GroupMetadataManager.onUnloaded`` answers every parked JoinGroup/SyncGroup with
        NOT_COORDINATOR; the new coordinator replays the log (``replay(GroupMetadataKey, ...)``):
        each group comes back as its last GroupMetadata record left it (Stable with the members
        and assignments stored when the last SyncGroup completed, or Empty), pending members and
        in-flight rebalances are lost, committed offsets are kept. ``onLoaded`` then arms each
        member's session timer and rebalances a group that is over ``group_max_size``. Until
        ``load_ms`` have passed, requests are answered COORDINATOR_LOAD_IN_PROGRESS (the classic protocol
        "Group Coordinator Failover"), except Heartbeat, which Kafka ``GroupCoordinatorService.heartbeat``
        answers NONE while the group loads.
        """
        for group in self._groups.values():
            for member in group.members.values():
                join_reply, member.join_reply = member.join_reply, None
                sync_reply, member.sync_reply = member.sync_reply, None
                if join_reply is not None:
                    join_reply.complete(JoinGroupResponse(error_code=codes.NOT_COORDINATOR, member_id=member.member_id))
                if sync_reply is not None:
                    sync_reply.complete(SyncGroupResponse(error_code=codes.NOT_COORDINATOR))
        self._groups = {gid: Group.from_persisted(gid, group.persisted) for gid, group in self._groups.items()}

    def _on_loaded(self) -> None:
        """Kafka ``GroupMetadataManager.onLoaded``: arm session timers; rebalance an over-capacity group."""
        for group in self._groups.values():
            for member in group.members.values():
                self._reschedule_heartbeat(group, member)
            if len(group.members) > self._config.group_max_size:
                self._prepare_rebalance(
                    group,
                    f"Freshly-loaded group {group.group_id} (size {len(group.members)}) is over capacity "
                    f"{self._config.group_max_size}. Rebalancing in order to give a chance for consumers "
                    "to commit offsets",
                )

    # --- per-member and per-group timers ------------------------------------------------------

    def _reschedule_heartbeat(self, group: Group, member: Member, timeout_ms: int | None = None) -> None:
        """Kafka ``rescheduleClassicGroupMemberHeartbeat``: (re)arm the member's session timer."""
        gid, mid = group.group_id, member.member_id
        delay = member.session_timeout_ms if timeout_ms is None else timeout_ms
        self._schedule(("heartbeat", gid, mid), delay, lambda: self._expire_heartbeat(gid, mid))

    def _cancel_heartbeat(self, group: Group, member_id: str) -> None:
        self._cancel(("heartbeat", group.group_id, member_id))

    def _expire_heartbeat(self, group_id: str, member_id: str) -> None:
        """Kafka ``expireClassicGroupMemberHeartbeat``.

        A pending (MEMBER_ID_REQUIRED) member expires after its session timeout. A member expires
        unless it "has satisfied heartbeat": parked in JoinGroup/SyncGroup and not new (a new
        member's JoinGroup may itself time out, after NEW_MEMBER_JOIN_TIMEOUT_MS).
        """
        group = self._groups.get(group_id)
        if group is None:
            return
        if member_id in group.pending_members:
            group.remove(member_id)
            self._event(group_id, ev.PENDING_MEMBER_REMOVED, member_id, "session timeout")
            if group.state is _PREPARING and group.has_all_members_joined():
                self._complete_join(group)
            return
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return
        detail = "new member join timeout" if member.is_new else "session timeout"
        self._remove_member_and_update_group(
            group, member, detail, f"removing member {member_id} on heartbeat expiration."
        )

    def _remove_member_and_update_group(self, group: Group, member: Member, detail: str, reason: str) -> None:
        """Kafka ``removeMemberAndUpdateClassicGroup``: drop the member, then rebalance or finish the join."""
        self._drop_member(group, member.member_id, detail)
        if group.state in (_STABLE, _COMPLETING):
            self._maybe_prepare_rebalance_or_complete_join(group, reason)
        elif group.state is _PREPARING and group.has_all_members_joined():
            self._complete_join(group)

    def _drop_member(self, group: Group, member_id: str, detail: str) -> Member | None:
        """Remove a member: answer its parked JoinGroup (and, unlike Kafka, a parked SyncGroup) UNKNOWN_MEMBER_ID."""
        member = group.members.get(member_id)
        if member is None:
            group.remove(member_id)
            return None
        join_reply, member.join_reply = member.join_reply, None
        sync_reply, member.sync_reply = member.sync_reply, None
        group.remove(member_id)
        self._cancel_heartbeat(group, member_id)
        self._event(group.group_id, ev.MEMBER_REMOVED, member_id, detail)
        if join_reply is not None:
            join_reply.complete(JoinGroupResponse(error_code=codes.UNKNOWN_MEMBER_ID, member_id=""))
        if sync_reply is not None:
            sync_reply.complete(SyncGroupResponse(error_code=codes.UNKNOWN_MEMBER_ID))
        return member

    # ==========================================================================================
    # rebalance machinery
    # ==========================================================================================

    def _maybe_prepare_rebalance_or_complete_join(self, group: Group, reason: str) -> None:
        """Kafka ``maybePrepareRebalanceOrCompleteJoin``."""
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)
        else:
            self._maybe_complete_join_phase(group)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        """Kafka ``prepareRebalance``: enter PreparingRebalance and arm the join barrier's timer.

        From CompletingRebalance, parked SyncGroups are answered REBALANCE_IN_PROGRESS and every
        assignment is cleared (``resetAndPropagateAssignmentWithError``); a pending-sync timer is
        cancelled. From Empty this is the *initial* rebalance: KIP-134 delays it by
        ``group_initial_rebalance_delay_ms`` (the classic protocol "Delayed rebalance"); the join phase then
        completes only from that timer.
        """
        if group.state is _COMPLETING:
            for member in group.members.values():
                member.assignment = b""
            self._propagate_assignment(group, codes.REBALANCE_IN_PROGRESS)
        group.pending_sync.clear()
        self._cancel(("sync", group.group_id))
        initial = group.state is _EMPTY
        if initial:
            delay = self._config.group_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule_initial_delay(group, delay, remaining)
        group.transition_to(_PREPARING)
        self._event(group.group_id, ev.REBALANCE_STARTED, detail=reason)
        if not initial:
            self._maybe_complete_join_else_schedule(group)

    def _schedule_initial_delay(self, group: Group, delay_ms: int, remaining_ms: int) -> None:
        gid = group.group_id
        self._schedule(
            ("join", gid), delay_ms, lambda: self._try_complete_initial_rebalance(gid, delay_ms, remaining_ms)
        )

    def _try_complete_initial_rebalance(self, group_id: str, delay_ms: int, remaining_ms: int) -> None:
        """Kafka ``tryCompleteInitialRebalanceElseSchedule`` (KIP-134).

        If a new member joined during the last delay and rebalance time remains, wait again:
        ``min(initial delay, remaining)`` more, with ``max(remaining - delay, 0)`` left after that,
        so the total stays bounded by the first member's rebalance timeout.
        """
        group = self._groups.get(group_id)
        if group is None:
            return
        if group.new_member_added and remaining_ms != 0:
            group.new_member_added = False
            new_delay = min(self._config.group_initial_rebalance_delay_ms, remaining_ms)
            new_remaining = max(remaining_ms - delay_ms, 0)
            self._schedule_initial_delay(group, new_delay, new_remaining)
        else:
            self._complete_join(group)

    def _maybe_complete_join_else_schedule(self, group: Group) -> None:
        """Kafka ``maybeCompleteJoinElseSchedule``: complete now, or wait up to the rebalance timeout."""
        if group.has_all_members_joined():
            self._complete_join(group)
        else:
            gid = group.group_id
            self._schedule(("join", gid), group.rebalance_timeout_ms(), lambda: self._complete_join_by_id(gid))

    def _maybe_complete_join_phase(self, group: Group) -> None:
        """Kafka ``maybeCompleteJoinPhase``: the join barrier (the classic protocol "Rebalances as Double Barriers").

        Completes only in PreparingRebalance, never during the initial (delayed) rebalance, and
        only once every member has rejoined and no MEMBER_ID_REQUIRED member is pending.
        """
        if group.state is not _PREPARING or group.previous_state is _EMPTY:
            return
        if group.has_all_members_joined():
            self._complete_join(group)

    def _complete_join_by_id(self, group_id: str) -> None:
        group = self._groups.get(group_id)
        if group is not None:
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        """Kafka ``completeClassicGroupJoin``: close the join barrier and start the next generation.

        Dynamic members that did not rejoin are removed (the rebalance timeout passed); static
        members stay (KIP-345: only their session timeout removes them). The leader is kept if it
        rejoined, else the first rejoined member leads. If nobody rejoined, wait another rebalance
        timeout. Otherwise the generation is bumped (Empty if no member is left), the protocol
        chosen by vote, every parked JoinGroup answered (the leader gets the member list), every
        session timer re-armed, and SyncGroup awaited from everyone within the rebalance timeout.
        """
        if group.state is not _PREPARING:
            return
        gid = group.group_id
        self._cancel(("join", gid))
        for member in [m for m in group.members.values() if not m.awaiting_join and m.group_instance_id is None]:
            self._drop_member(group, member.member_id, "rebalance timeout")
        if not group.maybe_elect_new_joined_leader() and group.members:
            self._schedule(("join", gid), max(group.rebalance_timeout_ms(), 1), lambda: self._complete_join_by_id(gid))
            return
        group.left_out = frozenset(m.member_id for m in group.members.values() if not m.awaiting_join)
        group.init_next_generation()
        if group.state is _EMPTY:
            group.persisted = group.snapshot()
            self._event(gid, ev.GENERATION_COMPLETED, detail=f"generation {group.generation_id}, Empty")
            return
        self._event(
            gid,
            ev.GENERATION_COMPLETED,
            group.leader_id or "",
            f"generation {group.generation_id}, leader {group.leader_id}, protocol {group.protocol_name}, "
            f"members [{', '.join(group.members)}]",
        )
        for member in list(group.members.values()):
            response = JoinGroupResponse(
                error_code=codes.NONE,
                generation_id=group.generation_id,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=group.leader_id or "",
                member_id=member.member_id,
                members=group.join_members() if member.member_id == group.leader_id else (),
            )
            reply, member.join_reply = member.join_reply, None
            self._reschedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync[member.member_id] = None
            if reply is not None:
                reply.complete(response)
        generation = group.generation_id
        self._schedule(("sync", gid), group.rebalance_timeout_ms(), lambda: self._expire_pending_sync(gid, generation))

    def _expire_pending_sync(self, group_id: str, generation_id: int) -> None:
        """Kafka ``expirePendingSync``: members that did not SyncGroup within the rebalance timeout are removed.

        Applies in CompletingRebalance and Stable (the leader may have synced but a follower not),
        then a rebalance starts.
        """
        group = self._groups.get(group_id)
        if group is None or group.generation_id != generation_id:
            return
        if group.state not in (_COMPLETING, _STABLE) or not group.pending_sync:
            return
        laggards = list(group.pending_sync)
        for member_id in laggards:
            self._drop_member(group, member_id, "pending sync timeout")
        self._prepare_rebalance(group, f"Removing [{', '.join(laggards)}] on pending sync request expiration")

    def _propagate_assignment(self, group: Group, error_code: int) -> None:
        """Kafka ``propagateAssignment``: answer every parked SyncGroup and re-arm its session timer."""
        ok = error_code == codes.NONE
        for member in list(group.members.values()):
            reply, member.sync_reply = member.sync_reply, None
            if reply is None:
                continue
            self._reschedule_heartbeat(group, member)
            reply.complete(
                SyncGroupResponse(
                    error_code=error_code,
                    protocol_type=group.protocol_type if ok else None,
                    protocol_name=group.protocol_name if ok else None,
                    assignment=member.assignment,
                )
            )

    def _remove_pending_sync(self, group: Group, member_id: str) -> None:
        """Kafka ``removePendingSyncMember``: the pending-sync timer stops once everyone has synced."""
        group.pending_sync.pop(member_id, None)
        if group.state in (_COMPLETING, _STABLE) and group.pending_sync:
            return
        self._cancel(("sync", group.group_id))

    # ==========================================================================================
    # JoinGroup
    # ==========================================================================================

    def _join_group(self, request: JoinGroupRequest) -> Reply[JoinGroupResponse]:
        """Kafka ``GroupCoordinatorService.joinGroup`` then ``classicGroupJoinToClassicGroup``."""
        # GroupCoordinatorService: request validation happens before the coordinator (even while loading).
        if not request.group_id:
            return Reply.of(JoinGroupResponse(error_code=codes.INVALID_GROUP_ID, member_id=request.member_id))
        if not (
            self._config.group_min_session_timeout_ms
            <= request.session_timeout_ms
            <= self._config.group_max_session_timeout_ms
        ):
            return Reply.of(JoinGroupResponse(error_code=codes.INVALID_SESSION_TIMEOUT, member_id=request.member_id))
        if self._loading():
            return Reply.of(JoinGroupResponse(error_code=codes.COORDINATOR_LOAD_IN_PROGRESS))
        is_new_member = request.member_id == ""
        group = self._groups.get(request.group_id)
        if group is None:
            if not is_new_member:
                # getOrMaybeCreateClassicGroup(createIfNotExists=false) -> UNKNOWN_MEMBER_ID
                return Reply.of(JoinGroupResponse(error_code=codes.UNKNOWN_MEMBER_ID, member_id=request.member_id))
            group = self._create_group(request.group_id)
        if not self._accept_joining_member(group, request.member_id):
            # KIP-389: Kafka also drops the rejected (existing) member from the group, silently.
            self._drop_member(group, request.member_id, "group max size reached")
            return Reply.of(JoinGroupResponse(error_code=codes.GROUP_MAX_SIZE_REACHED, member_id=""))
        if is_new_member:
            return self._join_new_member(group, request)
        return self._join_existing_member(group, request)

    def _create_group(self, group_id: str) -> Group:
        """A new Empty group; Kafka writes an empty GroupMetadata record for it (generation 0)."""
        group = Group(group_id)
        self._groups[group_id] = group
        return group

    def _accept_joining_member(self, group: Group, member_id: str) -> bool:
        """Kafka ``acceptJoiningMember`` (KIP-389 ``group.max.size``).

        Empty: always. PreparingRebalance: a member already parked in JoinGroup, or while fewer than
        max members are parked. CompletingRebalance/Stable: an existing member, or while the group
        has fewer than max members.
        """
        max_size = self._config.group_max_size
        if group.state is _EMPTY:
            return True
        if group.state is _PREPARING:
            member = group.members.get(member_id)
            return (member is not None and member.awaiting_join) or group.num_awaiting_join() < max_size
        return member_id in group.members or len(group.members) < max_size

    def _join_new_member(self, group: Group, request: JoinGroupRequest) -> Reply[JoinGroupResponse]:
        """Kafka ``classicGroupJoinNewMember`` (member id ``""``)."""
        if not group.supports_protocols(request.protocol_type, tuple(name for name, _ in request.protocols)):
            return Reply.of(JoinGroupResponse(error_code=codes.INCONSISTENT_GROUP_PROTOCOL, member_id=""))
        instance_id = request.group_instance_id
        new_member_id = self._new_member_id(instance_id if instance_id is not None else request.client_id)
        if instance_id is not None:
            existing = group.static_members.get(instance_id)
            if existing is not None:
                return self._update_static_member(group, request, existing, new_member_id)
            return self._add_member(group, request, new_member_id)
        if request.api_version >= 4:
            # KIP-394: a dynamic member at v4+ first gets an id and must rejoin with it. The pending
            # id holds the join barrier until it rejoins or its session timeout passes.
            group.pending_members[new_member_id] = None
            gid = group.group_id
            self._schedule(
                ("heartbeat", gid, new_member_id),
                request.session_timeout_ms,
                lambda: self._expire_heartbeat(gid, new_member_id),
            )
            self._event(gid, ev.PENDING_MEMBER_ADDED, new_member_id)
            return Reply.of(JoinGroupResponse(error_code=codes.MEMBER_ID_REQUIRED, member_id=new_member_id))
        # v0-3 clients do not know MEMBER_ID_REQUIRED: the broker adds them at once.
        return self._add_member(group, request, new_member_id)

    def _join_existing_member(self, group: Group, request: JoinGroupRequest) -> Reply[JoinGroupResponse]:
        """Kafka ``classicGroupJoinExistingMember``."""
        member_id = request.member_id
        if not group.supports_protocols(request.protocol_type, tuple(name for name, _ in request.protocols)):
            return Reply.of(JoinGroupResponse(error_code=codes.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id))
        if member_id in group.pending_members:
            if request.group_instance_id is not None:
                # Kafka throws IllegalStateException here (a pending member is never static); the exception
                # handler of GroupCoordinatorService.joinGroup answers a bare JoinGroupResponseData with the
                # error code only: no member id.
                return Reply.of(JoinGroupResponse(error_code=codes.UNKNOWN_SERVER_ERROR))
            return self._add_member(group, request, member_id)
        error = group.validate_member(member_id, request.group_instance_id)
        if error != codes.NONE:
            return Reply.of(JoinGroupResponse(error_code=error, member_id=member_id))
        member = group.members[member_id]
        client_reason = _reason(request.reason)
        state = group.state.value
        if group.state is _PREPARING:
            return self._update_member_then_rebalance(
                group,
                member,
                request,
                f"Member {member_id} is joining group during {state}; client reason: {client_reason}",
            )
        if group.state is _COMPLETING:
            if member.protocols == request.protocols:
                # The member lost its JoinGroup response: answer again with the current generation.
                return Reply.of(self._current_generation_response(group, member_id, with_members=True))
            return self._update_member_then_rebalance(
                group,
                member,
                request,
                f"Updating metadata for member {member_id} during {state}; client reason: {client_reason}",
            )
        if group.state is _STABLE:
            if member_id == group.leader_id:
                # The leader's JoinGroup always forces a rebalance (e.g. topic metadata changed).
                return self._update_member_then_rebalance(
                    group,
                    member,
                    request,
                    f"Leader {member_id} re-joining group during {state}; client reason: {client_reason}",
                )
            if member.protocols != request.protocols:
                return self._update_member_then_rebalance(
                    group,
                    member,
                    request,
                    f"Updating metadata for member {member_id} during {state}; client reason: {client_reason}",
                )
            return Reply.of(self._current_generation_response(group, member_id, with_members=False))
        # Empty (unreachable: validate_member fails without members): let the member reset and rejoin.
        return Reply.of(JoinGroupResponse(error_code=codes.UNKNOWN_MEMBER_ID, member_id=member_id))

    def _current_generation_response(self, group: Group, member_id: str, *, with_members: bool) -> JoinGroupResponse:
        return JoinGroupResponse(
            error_code=codes.NONE,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            member_id=member_id,
            members=group.join_members() if with_members and member_id == group.leader_id else (),
        )

    def _park_join(self, member: Member, reply: Reply[JoinGroupResponse]) -> None:
        """Park ``reply`` as the member's JoinGroup, answering a still-parked older one (Kafka loses it)."""
        previous, member.join_reply = member.join_reply, reply
        if previous is not None:
            previous.complete(JoinGroupResponse(error_code=codes.REBALANCE_IN_PROGRESS, member_id=member.member_id))

    def _update_member(self, member: Member, request: JoinGroupRequest, reply: Reply[JoinGroupResponse]) -> None:
        """Kafka ``ClassicGroup.updateMember``: new protocols and timeouts, JoinGroup parked."""
        member.protocols = request.protocols
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.session_timeout_ms = request.session_timeout_ms
        self._park_join(member, reply)

    def _update_member_then_rebalance(
        self, group: Group, member: Member, request: JoinGroupRequest, reason: str
    ) -> Reply[JoinGroupResponse]:
        """Kafka ``updateMemberThenRebalanceOrCompleteJoin``."""
        reply: Reply[JoinGroupResponse] = Reply()
        self._update_member(member, request, reply)
        self._maybe_prepare_rebalance_or_complete_join(group, reason)
        return reply

    def _add_member(self, group: Group, request: JoinGroupRequest, member_id: str) -> Reply[JoinGroupResponse]:
        """Kafka ``addMemberThenRebalanceOrCompleteJoin``.

        A member added during the initial delayed rebalance extends the delay (KIP-134). The new
        member's JoinGroup may stay parked at most NEW_MEMBER_JOIN_TIMEOUT_MS (its session
        timeout does not apply: it cannot heartbeat yet).
        """
        reply: Reply[JoinGroupResponse] = Reply()
        member = Member(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client_id=request.client_id,
            client_host=request.client_host,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            session_timeout_ms=request.session_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=request.protocols,
            join_reply=reply,
            is_new=True,
        )
        if group.state is _PREPARING and group.previous_state is _EMPTY:
            group.new_member_added = True
        group.add(member)
        kind = "dynamic" if request.group_instance_id is None else f"static {request.group_instance_id}"
        self._event(group.group_id, ev.MEMBER_ADDED, member_id, kind)
        self._reschedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        instance = request.group_instance_id if request.group_instance_id is not None else "None"
        client_reason = _reason(request.reason)
        self._maybe_prepare_rebalance_or_complete_join(
            group, f"Adding new member {member_id} with group instance id {instance}; client reason: {client_reason}"
        )
        return reply

    def _update_static_member(
        self, group: Group, request: JoinGroupRequest, old_member_id: str, new_member_id: str
    ) -> Reply[JoinGroupResponse]:
        """Kafka ``updateStaticMemberThenRebalanceOrCompleteJoin`` (KIP-345, "Server Side Changes").

        A known instance id joining with an empty member id replaces the old member id: the old
        id is fenced (its parked JoinGroup/SyncGroup answered FENCED_INSTANCE_ID) and the member
        keeps its assignment. In Stable, if the group's protocol would not change, there is no
        rebalance: the reply carries the current generation, and at v9 a leader gets
        ``skip_assignment`` with the member list (KIP-814); below v9 the reply names the *old*
        leader id, so a restarted leader acts as a follower and SyncGroup returns the cached
        assignment. In CompletingRebalance a rebalance is forced (the leader may be assigning to
        the old id); in PreparingRebalance the member simply joins the barrier.
        """
        instance_id = request.group_instance_id
        assert instance_id is not None
        current_leader = group.leader_id
        old = group.members.pop(old_member_id)
        old_join, old.join_reply = old.join_reply, None
        old_sync, old.sync_reply = old.sync_reply, None
        self._cancel_heartbeat(group, old_member_id)
        new = attrs.evolve(old, member_id=new_member_id, join_reply=None, sync_reply=None, is_new=False)
        group.members[new_member_id] = new
        if group.leader_id == old_member_id:
            group.leader_id = new_member_id
        group.static_members[instance_id] = new_member_id
        # Kafka leaves the old id in the pending-sync set: if it had not synced yet, the pending-sync
        # timer later finds it missing and starts a rebalance. Reproduced as is.
        self._event(group.group_id, ev.MEMBER_REMOVED, old_member_id, "fenced")
        detail = f"instance {instance_id}: replaces {old_member_id}"
        self._event(group.group_id, ev.STATIC_MEMBER_REPLACED, new_member_id, detail)
        if old_join is not None:
            old_join.complete(JoinGroupResponse(error_code=codes.FENCED_INSTANCE_ID, member_id=old_member_id))
        if old_sync is not None:
            old_sync.complete(SyncGroupResponse(error_code=codes.FENCED_INSTANCE_ID))
        self._reschedule_heartbeat(group, new)
        reply: Reply[JoinGroupResponse] = Reply()
        self._update_member(new, request, reply)
        client_reason = _reason(request.reason)
        if group.state is _STABLE:
            if group.protocol_name == group.select_protocol():
                group.persisted = group.snapshot()
                is_leader = new_member_id == group.leader_id
                new.join_reply = None
                if request.api_version >= 9:
                    response = JoinGroupResponse(
                        generation_id=group.generation_id,
                        protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name,
                        leader=group.leader_id or "",
                        skip_assignment=is_leader,
                        member_id=new_member_id,
                        members=group.join_members() if is_leader else (),
                    )
                else:
                    response = JoinGroupResponse(
                        generation_id=group.generation_id,
                        protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name,
                        leader=current_leader or "",
                        member_id=new_member_id,
                    )
                reply.complete(response)
                return reply
            self._maybe_prepare_rebalance_or_complete_join(
                group,
                f"Group's selectedProtocol will change because static member {new_member_id} with instance id "
                f"{instance_id} joined with change of protocol; client reason: {client_reason}",
            )
        elif group.state is _COMPLETING:
            self._prepare_rebalance(
                group,
                f"Updating metadata for static member {new_member_id} with instance id {instance_id}; "
                f"client reason: {client_reason}",
            )
        else:
            self._maybe_complete_join_phase(group)
        return reply

    # ==========================================================================================
    # SyncGroup
    # ==========================================================================================

    def _sync_group(self, request: SyncGroupRequest) -> Reply[SyncGroupResponse]:
        """Kafka ``classicGroupSync`` / ``classicGroupSyncToClassicGroup`` / ``validateSyncGroup``.

        From v5 a null protocol type or name is INCONSISTENT_GROUP_PROTOCOL before anything else (KafkaApis).
        Errors, in Kafka's order: unknown or Empty group and unknown member -> UNKNOWN_MEMBER_ID,
        fenced instance -> FENCED_INSTANCE_ID, wrong generation -> ILLEGAL_GENERATION, protocol
        type/name (v5) different from the group's -> INCONSISTENT_GROUP_PROTOCOL, PreparingRebalance
        -> REBALANCE_IN_PROGRESS. In CompletingRebalance the reply is parked until the leader's
        SyncGroup (the classic protocol "State synchronisation"); members missing from the leader's assignments
        get ``b""``. In Stable the stored assignment is returned at once.
        """
        if request.api_version >= 5 and (request.protocol_type is None or request.protocol_name is None):
            # KafkaApis.handleSyncGroupRequest (SyncGroupRequest.areMandatoryProtocolTypeAndNamePresent): from v5
            # both are mandatory; a null one is refused before the coordinator sees the request.
            return Reply.of(SyncGroupResponse(error_code=codes.INCONSISTENT_GROUP_PROTOCOL))
        if not request.group_id:
            return Reply.of(SyncGroupResponse(error_code=codes.INVALID_GROUP_ID))
        if self._loading():
            return Reply.of(SyncGroupResponse(error_code=codes.COORDINATOR_LOAD_IN_PROGRESS))
        group = self._groups.get(request.group_id)
        if group is None or group.state is _EMPTY:
            return Reply.of(SyncGroupResponse(error_code=codes.UNKNOWN_MEMBER_ID))
        error = group.validate_member(request.member_id, request.group_instance_id)
        if error == codes.NONE and request.generation_id != group.generation_id:
            error = codes.ILLEGAL_GENERATION
        if error == codes.NONE and (
            _inconsistent(request.protocol_type, group.protocol_type)
            or _inconsistent(request.protocol_name, group.protocol_name)
        ):
            error = codes.INCONSISTENT_GROUP_PROTOCOL
        if error == codes.NONE and group.state is _PREPARING:
            error = codes.REBALANCE_IN_PROGRESS
        if error != codes.NONE:
            return Reply.of(SyncGroupResponse(error_code=error))
        member = group.members[request.member_id]
        if group.state is _STABLE:
            self._remove_pending_sync(group, member.member_id)
            return Reply.of(
                SyncGroupResponse(
                    protocol_type=group.protocol_type, protocol_name=group.protocol_name, assignment=member.assignment
                )
            )
        # CompletingRebalance
        reply: Reply[SyncGroupResponse] = Reply()
        previous, member.sync_reply = member.sync_reply, reply
        if previous is not None:
            previous.complete(SyncGroupResponse(error_code=codes.REBALANCE_IN_PROGRESS))
        self._remove_pending_sync(group, member.member_id)
        if member.member_id == group.leader_id:
            assignments = {item.member_id: item.assignment for item in request.assignments}
            for each in group.members.values():
                each.assignment = assignments.get(each.member_id, b"")
            group.persisted = group.snapshot()
            group.transition_to(_STABLE)
            self._event(
                group.group_id,
                ev.GROUP_STABLE,
                member.member_id,
                f"generation {group.generation_id}: assignments for [{', '.join(group.members)}]",
            )
            self._propagate_assignment(group, codes.NONE)
        return reply

    # ==========================================================================================
    # Heartbeat
    # ==========================================================================================

    def _heartbeat(self, request: HeartbeatRequest) -> int:
        """Kafka ``classicGroupHeartbeatToClassicGroup``: the error code to answer.

        Unknown group or member -> UNKNOWN_MEMBER_ID; fenced -> FENCED_INSTANCE_ID; wrong
        generation -> ILLEGAL_GENERATION; Empty -> UNKNOWN_MEMBER_ID. In PreparingRebalance the
        session is renewed and the answer is REBALANCE_IN_PROGRESS (the member must rejoin); in
        CompletingRebalance and Stable the session is renewed and the answer is NONE.
        """
        if not request.group_id:
            return codes.INVALID_GROUP_ID
        if self._loading():
            return codes.NONE  # GroupCoordinatorService.heartbeat: "the group is still loading, so blindly respond"
        group = self._groups.get(request.group_id)
        if group is None:
            return codes.UNKNOWN_MEMBER_ID
        error = group.validate_member(request.member_id, request.group_instance_id)
        if error != codes.NONE:
            return error
        if request.generation_id != group.generation_id:
            return codes.ILLEGAL_GENERATION
        if group.state is _EMPTY:
            return codes.UNKNOWN_MEMBER_ID
        self._reschedule_heartbeat(group, group.members[request.member_id])
        return codes.REBALANCE_IN_PROGRESS if group.state is _PREPARING else codes.NONE

    # ==========================================================================================
    # LeaveGroup
    # ==========================================================================================

    def _leave_group(self, request: LeaveGroupRequest) -> LeaveGroupResponse:
        """Kafka ``classicGroupLeaveToClassicGroup`` and ``LeaveGroupResponse(data, version)``.

        Each identity: member id ``""`` with a known instance id removes that static member (admin
        removal, KIP-345); a pending member id is dropped; otherwise the identity is validated
        (UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID per member). Any removal makes a Stable or
        CompletingRebalance group rebalance (or become Empty) and lets a PreparingRebalance barrier
        complete without the leaver. v0-2 carry one member and report its error at top level.
        """
        if not request.group_id:
            return LeaveGroupResponse(error_code=codes.INVALID_GROUP_ID)
        if self._loading():
            return LeaveGroupResponse(error_code=codes.COORDINATOR_LOAD_IN_PROGRESS)
        group = self._groups.get(request.group_id)
        results: list[LeaveMemberResult] = []
        removed: list[str] = []
        for identity in request.members:
            error = codes.NONE
            left = identity.member_id  # the member id that leaves (found by instance id when empty)
            reason = _reason(identity.reason)
            if group is None:
                error = codes.UNKNOWN_MEMBER_ID
            elif identity.member_id == "":
                static_id = (
                    group.static_members.get(identity.group_instance_id)
                    if identity.group_instance_id is not None
                    else None
                )
                if static_id is None:
                    error = codes.UNKNOWN_MEMBER_ID
                else:
                    self._drop_member(group, static_id, f"left: {reason}")
                    left = static_id
            elif identity.member_id in group.pending_members:
                group.remove(identity.member_id)
                self._cancel_heartbeat(group, identity.member_id)
                self._event(group.group_id, ev.PENDING_MEMBER_REMOVED, identity.member_id, f"left: {reason}")
            else:
                error = group.validate_member(identity.member_id, identity.group_instance_id)
                if error == codes.NONE:
                    self._drop_member(group, identity.member_id, f"left: {reason}")
            if error == codes.NONE:
                removed.append(left)
            results.append(
                LeaveMemberResult(
                    member_id=identity.member_id, group_instance_id=identity.group_instance_id, error_code=error
                )
            )
        if group is not None and removed:
            if group.state in (_STABLE, _COMPLETING):
                self._maybe_prepare_rebalance_or_complete_join(
                    group, f"explicit `LeaveGroup` request for ({', '.join(removed)}) members."
                )
            elif group.state is _PREPARING:
                self._maybe_complete_join_phase(group)
        if request.api_version < 3:
            return LeaveGroupResponse(error_code=results[0].error_code if results else codes.NONE)
        return LeaveGroupResponse(error_code=codes.NONE, members=tuple(results))

    # ==========================================================================================
    # OffsetCommit / OffsetFetch
    # ==========================================================================================

    def _create_simple_group(self, group_id: str) -> None:
        """Kafka ``getOrMaybeCreateClassicGroup(createIfNotExists=true)``: a "simple" Empty group, generation 0."""
        self._create_group(group_id)

    def _validate_group_offset_commit(self, request: OffsetCommitRequest) -> int:
        """Kafka ``ClassicGroup.validateOffsetCommit`` (after :meth:`_validate_offset_commit`'s checks).

        * generation < 0 on an Empty group: accepted (admin client / manual assignment).
        * generation >= 0, a member id or an instance id: the member must be valid
          (UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID) and the generation current (ILLEGAL_GENERATION).
        * generation < 0 and no member on a non-empty group: UNKNOWN_MEMBER_ID.
        * CompletingRebalance: REBALANCE_IN_PROGRESS (the member must finish SyncGroup first).
          In PreparingRebalance a commit at the current (old) generation is accepted.

        On success in Stable/PreparingRebalance the member's session timer is re-armed.
        """
        group = self._groups[request.group_id]
        if request.generation_id < 0 and group.state is _EMPTY:
            return codes.NONE
        if request.generation_id >= 0 or request.member_id or request.group_instance_id is not None:
            error = group.validate_member(request.member_id, request.group_instance_id)
            if error != codes.NONE:
                return error
            if request.generation_id != group.generation_id:
                return codes.ILLEGAL_GENERATION
        elif group.state is not _EMPTY:
            return codes.UNKNOWN_MEMBER_ID
        if group.state is _COMPLETING:
            return codes.REBALANCE_IN_PROGRESS
        if group.state in (_STABLE, _PREPARING):
            self._reschedule_heartbeat(group, group.members[request.member_id])
        return codes.NONE

    def _offset_fetch(self, request: OffsetFetchRequest) -> OffsetFetchResponse:
        """Kafka ``OffsetMetadataManager.fetchOffsets`` / ``fetchAllOffsets``.

        A partition without a commit answers offset -1, leader epoch -1, metadata ``""``, NONE.
        ``topics=None`` lists every committed partition of the group, topics in first-commit order.
        ``require_stable`` needs nothing: without transactions no offset is ever pending, so
        UNSTABLE_OFFSET_COMMIT is never returned. The empty group id is an ordinary group id
        (GroupCoordinatorService.fetchOffsets refuses only null).
        """
        if self._loading():
            return OffsetFetchResponse(error_code=codes.COORDINATOR_LOAD_IN_PROGRESS)
        committed = self._offsets.get(request.group_id, {}) if request.group_id in self._groups else {}
        return fetch_answer(committed, request.topics)

    # ==========================================================================================
    # DescribeGroups / ListGroups
    # ==========================================================================================

    def _describe(self, group_id: str, api_version: int) -> DescribedGroup:
        """Kafka ``GroupMetadataManager.describeGroups`` for one id.

        Unknown group: state "Dead", no members, no error before v6; from v6 (KIP-1043)
        GROUP_ID_NOT_FOUND with the message "Group <id> not found." Stable: ``protocol_data`` is the
        chosen protocol and members carry their metadata for it. Any other state: ``protocol_data``
        ``""`` and members without metadata (Kafka ``describeNoMetadata``), but with assignments.
        """
        if self._loading():
            return DescribedGroup(
                error_code=codes.COORDINATOR_LOAD_IN_PROGRESS,
                group_id=group_id,
                group_state="",
                protocol_type="",
                protocol_data="",
                members=(),
            )
        group = self._groups.get(group_id)
        if group is None:
            return DescribedGroup(
                error_code=codes.GROUP_ID_NOT_FOUND if api_version >= 6 else codes.NONE,
                error_message=f"Group {group_id} not found." if api_version >= 6 else None,
                group_id=group_id,
                group_state=GroupState.DEAD.value,
                protocol_type="",
                protocol_data="",
                members=(),
            )
        stable = group.state is _STABLE
        return DescribedGroup(
            error_code=codes.NONE,
            group_id=group_id,
            group_state=group.state.value,
            protocol_type=group.protocol_type or "",
            protocol_data=(group.protocol_name or "") if stable else "",
            members=tuple(
                DescribedMember(
                    member_id=member.member_id,
                    group_instance_id=member.group_instance_id,
                    client_id=member.client_id,
                    client_host=member.client_host,
                    member_metadata=member.metadata(group.protocol_name) if stable else b"",
                    member_assignment=member.assignment,
                )
                for member in group.members.values()
            ),
        )

    def _delete_group(self, group_id: str) -> DeletedGroupResult:
        """Kafka ``GroupCoordinatorShard.deleteGroups`` for one id.

        ``GroupMetadataManager.validateDeleteGroup``: an unknown group is GROUP_ID_NOT_FOUND;
        ``ClassicGroup.validateDeleteGroup``: a group with members (PreparingRebalance,
        CompletingRebalance, Stable) is NON_EMPTY_GROUP. An Empty group loses its committed
        offsets (``OffsetMetadataManager.deleteAllOffsets``) and is removed (a GroupMetadata
        tombstone): it no longer exists for DescribeGroups, ListGroups or OffsetFetch.
        """
        if self._loading():
            return DeletedGroupResult(group_id=group_id, error_code=codes.COORDINATOR_LOAD_IN_PROGRESS)
        group = self._groups.get(group_id)
        if group is None:
            return DeletedGroupResult(group_id=group_id, error_code=codes.GROUP_ID_NOT_FOUND)
        if group.state is not _EMPTY:
            return DeletedGroupResult(group_id=group_id, error_code=codes.NON_EMPTY_GROUP)
        for key in [key for key in self._timers if len(key) > 1 and key[1] == group_id]:
            self._cancel(key)
        del self._groups[group_id]
        self._offsets.pop(group_id, None)
        return DeletedGroupResult(group_id=group_id, error_code=codes.NONE)

    def _list_groups(self, request: ListGroupsRequest) -> ListGroupsResponse:
        """Kafka ``GroupMetadataManager.listGroups``: every group (Empty ones too), filters case-insensitive.

        States are compared lower-cased and trimmed; types through ``GroupType.parse`` (case-insensitive;
        every group here is ``classic``).
        """
        if self._loading():
            return ListGroupsResponse(error_code=codes.COORDINATOR_LOAD_IN_PROGRESS)
        states = {state.strip().lower() for state in request.states_filter}
        types = {kind.strip().lower() for kind in request.types_filter}
        listed = tuple(
            ListedGroup(
                group_id=group.group_id,
                protocol_type=group.protocol_type or "",
                group_state=group.state.value,
                group_type="classic",
            )
            for group in self._groups.values()
            if (not states or group.state.value.lower() in states) and (not types or "classic" in types)
        )
        return ListGroupsResponse(groups=listed)


def _inconsistent(requested: str | None, current: str | None) -> bool:
    """Kafka ``isProtocolInconsistent``: both known and different (SyncGroup v5 protocol checks)."""
    return requested is not None and current is not None and requested != current

