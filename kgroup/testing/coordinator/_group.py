"""Mutable group and member records of the coordinator model (Kafka ``ClassicGroup``/``ClassicGroupMember``).

These are the model's private bookkeeping. Iteration order: Kafka keeps members in a
``java.util.HashMap`` keyed by (random, UUID-based) member id, so "the first member" it picks
when it moves the leadership is effectively arbitrary; the model uses join order instead
(a Python ``dict``), which is one of Kafka's possible orders and makes tests deterministic.
"""

from __future__ import annotations

import enum
from typing import Any, Final

import attrs

from kgroup import _error_codes as codes
from kgroup.protocol.group_api import JoinGroupMember, JoinGroupResponse, SyncGroupResponse
from kgroup.testing.coordinator._protocol import select_protocol
from kgroup.testing.coordinator._reply import Reply

__all__ = ["Group", "GroupState", "Member", "PersistedGroup", "PersistedMember"]


class GroupState(enum.Enum):
    """Kafka ``ClassicGroupState``; the value is the name DescribeGroups/ListGroups report."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS: Final[dict[GroupState, frozenset[GroupState]]] = {
    # Kafka ClassicGroupState: the states each state may be entered from.
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


@attrs.define(kw_only=True, eq=False)
class MemberRecord:
    """What a live member and its stored record share: who it is and its two timeouts."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int

    def record_fields(self) -> dict[str, Any]:
        """These fields by name, to build the other kind of record of the same member."""
        return {field.name: getattr(self, field.name) for field in attrs.fields(MemberRecord)}


@attrs.define(kw_only=True, eq=False)
class Member(MemberRecord):
    """One member (Kafka ``ClassicGroupMember``), with its parked replies."""

    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    join_reply: Reply[JoinGroupResponse] | None = None
    sync_reply: Reply[SyncGroupResponse] | None = None
    is_new: bool = False
    """Kafka ``isNew``: added by a JoinGroup that has not completed yet; expires even while parked."""

    @property
    def awaiting_join(self) -> bool:
        """Whether a JoinGroup of this member is parked."""
        return self.join_reply is not None

    @property
    def awaiting_sync(self) -> bool:
        """Whether a SyncGroup of this member is parked."""
        return self.sync_reply is not None

    def has_satisfied_heartbeat(self) -> bool:
        """Kafka ``hasSatisfiedHeartbeat``: a parked (not new) member needs no heartbeat."""
        if self.is_new:
            return False
        return self.awaiting_join or self.awaiting_sync

    def protocol_names(self) -> tuple[str, ...]:
        """The member's protocol names in preference order."""
        return tuple(name for name, _ in self.protocols)

    def metadata(self, protocol_name: str | None) -> bytes:
        """The member's metadata for ``protocol_name`` (``b""`` if it does not list it)."""
        for name, metadata in self.protocols:
            if name == protocol_name:
                return metadata
        return b""


@attrs.frozen(kw_only=True)
class PersistedMember(MemberRecord):
    """A member as the GroupMetadata record in ``__consumer_offsets`` stores it."""

    metadata: bytes
    assignment: bytes


@attrs.frozen(kw_only=True)
class PersistedGroup:
    """The last GroupMetadata record written for a group: what a coordinator reloads after failover."""

    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str | None
    members: tuple[PersistedMember, ...]


class Group:
    """One classic group (Kafka ``ClassicGroup``)."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.previous_state = GroupState.EMPTY
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}
        self.pending_members: dict[str, None] = {}
        self.pending_sync: dict[str, None] = {}
        self.new_member_added = False
        #: static members the last generation was completed without: they had not rejoined when
        #: the rebalance timeout passed, and KIP-345 keeps them (only their session timeout
        #: removes them), so the leader planned with the subscription of their previous join
        self.left_out: frozenset[str] = frozenset()
        self.persisted = PersistedGroup(
            generation_id=0, protocol_type=None, protocol_name=None, leader_id=None, members=()
        )

    # --- state --------------------------------------------------------------------------------

    def transition_to(self, state: GroupState) -> None:
        """Change state, checking Kafka's valid transitions.

        Raises:
            RuntimeError: an invalid transition (a model bug).

        """
        if self.state not in _VALID_PREVIOUS[state]:
            raise RuntimeError(f"group {self.group_id}: invalid transition {self.state.value} -> {state.value}")
        self.previous_state = self.state
        self.state = state

    def can_rebalance(self) -> bool:
        """Kafka ``canRebalance``: PreparingRebalance may be entered from the current state."""
        return self.state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    # --- membership ---------------------------------------------------------------------------

    def add(self, member: Member) -> None:
        """Kafka ``ClassicGroup.add``: the first member fixes the protocol type and is leader."""
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> Member | None:
        """Kafka ``ClassicGroup.remove``: drop the member; a removed leader passes to the first member."""
        member = self.members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.pop(member_id, None)
        self.pending_sync.pop(member_id, None)
        return member

    def validate_member(self, member_id: str, group_instance_id: str | None) -> int:
        """Kafka ``ClassicGroup.validateMember``: the error code for an unknown or fenced identity, else NONE.

        KIP-345: a known instance id mapped to another member id is FENCED_INSTANCE_ID; an unknown
        instance id or member id is UNKNOWN_MEMBER_ID.
        """
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                return codes.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return codes.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return codes.UNKNOWN_MEMBER_ID
        return codes.NONE

    def num_awaiting_join(self) -> int:
        """How many members have a parked JoinGroup."""
        return sum(1 for member in self.members.values() if member.awaiting_join)

    def has_all_members_joined(self) -> bool:
        """Kafka ``hasAllMembersJoined``: every member is parked in JoinGroup and no id is pending."""
        return len(self.members) == self.num_awaiting_join() and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        """The group's rebalance timeout: the max of its members' (0 without members)."""
        return max((member.rebalance_timeout_ms for member in self.members.values()), default=0)

    def supports_protocols(self, protocol_type: str, names: tuple[str, ...]) -> bool:
        """Kafka ``ClassicGroup.supportsProtocols``.

        An Empty group takes any non-empty protocol type with at least one protocol; otherwise the
        type must equal the group's and one of the names must be supported by every member.
        """
        if self.state is GroupState.EMPTY:
            return protocol_type != "" and len(names) > 0
        if self.protocol_type != protocol_type:
            return False
        counts: dict[str, int] = {}
        for member in self.members.values():
            for name in member.protocol_names():
                counts[name] = counts.get(name, 0) + 1
        return any(counts.get(name, 0) == len(self.members) for name in names)

    def select_protocol(self) -> str | None:
        """The protocol the members vote for (Kafka ``ClassicGroup.selectProtocol``)."""
        return select_protocol([member.protocol_names() for member in self.members.values()])

    def maybe_elect_new_joined_leader(self) -> bool:
        """Kafka ``maybeElectNewJoinedLeader``: keep a rejoined leader, else pick the first rejoined member.

        Returns:
            False when there is no leader or no member rejoined.

        """
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    def init_next_generation(self) -> None:
        """Kafka ``initNextGeneration``: bump the generation, pick the protocol, go to CompletingRebalance or Empty."""
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY)
        self.pending_sync.clear()

    def join_members(self) -> tuple[JoinGroupMember, ...]:
        """The member list a leader gets (Kafka ``currentClassicGroupMembers``): metadata for the chosen protocol."""
        return tuple(
            JoinGroupMember(
                member_id=member.member_id,
                group_instance_id=member.group_instance_id,
                metadata=member.metadata(self.protocol_name),
            )
            for member in self.members.values()
        )

    def snapshot(self) -> PersistedGroup:
        """The GroupMetadata record Kafka would write now (members, their assignments, the generation)."""
        return PersistedGroup(
            generation_id=self.generation_id,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            leader_id=self.leader_id if self.members else None,
            members=tuple(
                PersistedMember(
                    **member.record_fields(),
                    metadata=member.metadata(self.protocol_name),
                    assignment=member.assignment,
                )
                for member in self.members.values()
            ),
        )

    @classmethod
    def from_persisted(cls, group_id: str, persisted: PersistedGroup) -> Group:
        """Kafka ``GroupMetadataManager.replay``: Stable with the stored members, or Empty."""
        group = cls(group_id)
        group.generation_id = persisted.generation_id
        group.protocol_type = persisted.protocol_type
        group.protocol_name = persisted.protocol_name
        group.persisted = persisted
        for stored in persisted.members:
            group.add(
                Member(
                    **stored.record_fields(),
                    protocol_type=persisted.protocol_type or "",
                    protocols=((persisted.protocol_name or "", stored.metadata),),
                    assignment=stored.assignment,
                )
            )
        group.protocol_type = persisted.protocol_type
        if persisted.members:
            group.leader_id = persisted.leader_id
            group.state = group.previous_state = GroupState.STABLE
        return group
