"""The group APIs' requests and responses: one description, shared by the client and the coordinator model.

kgroup's own value types (``attrs.frozen``, no kafka-python) for the classic group protocol's
APIs, as franz-go's ``kmsg`` serves both its client and its fake cluster:

* the client's commands and events *are* these values plus routing: ``SendJoinGroup`` is a
  :class:`JoinGroupRequest` with a request id, a node and a timeout
  (:mod:`kgroup.membership.commands`); ``JoinGroupResponded`` is a :class:`JoinGroupResponse`
  with the request id it answers (:mod:`kgroup.membership.events`);
* the coordinator model (:mod:`kgroup.testing.coordinator`) takes the requests and answers the
  responses;
* one mapping, :mod:`kgroup._io.kafka_messages`, turns them into kafka-python's message classes
  and back, for the client adapter and for the coordinator proxy alike. Its module docstring
  has the per-API table of version rules.

Field names follow Apache Kafka's message schemas (``clients/src/main/resources/common/message``,
the Kafka protocol guide) in snake_case, as kafka-python spells them; the two exceptions are
named in the mapping. Each request carries an ``api_version``: the version it travels at. A
request the client builds names the newest version kgroup speaks (:data:`NEWEST_VERSIONS`, the
default) and the connection negotiates it down to what the broker supports; a request the
coordinator model receives names the version it arrived with, because several rules depend on
it (MEMBER_ID_REQUIRED only from JoinGroup v4, KIP-394; ``skip_assignment`` only at v9,
KIP-814; the LeaveGroup batch form from v3, KIP-345). Batched forms (FindCoordinator v4+,
KIP-699; OffsetFetch v8+, KIP-709) are one value per key or group.

All times are in ms; error codes are Kafka's numeric codes (:mod:`kgroup._error_codes`).

======================  ===  ==============
API                     key  newest version
======================  ===  ==============
OffsetCommit              8  9
OffsetFetch               9  9
FindCoordinator          10  6
JoinGroup                11  9
Heartbeat                12  4
LeaveGroup               13  5
SyncGroup                14  5
DescribeGroups           15  6
ListGroups               16  5
DeleteGroups             42  2
======================  ===  ==============
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Final

import attrs

__all__ = [
    "API_NAMES",
    "DELETE_GROUPS",
    "DESCRIBE_GROUPS",
    "FIND_COORDINATOR",
    "HEARTBEAT",
    "JOIN_GROUP",
    "LEAVE_GROUP",
    "LIST_GROUPS",
    "NEWEST_VERSIONS",
    "NO_GENERATION",
    "OFFSET_COMMIT",
    "OFFSET_FETCH",
    "SYNC_GROUP",
    "UNKNOWN_MEMBER_ID",
    "CommitPartition",
    "CommitPartitionResult",
    "CommitTopic",
    "CommitTopicResult",
    "DeleteGroupsRequest",
    "DeleteGroupsResponse",
    "DeletedGroupResult",
    "DescribeGroupsRequest",
    "DescribeGroupsResponse",
    "DescribedGroup",
    "DescribedMember",
    "FetchPartitionResult",
    "FetchTopic",
    "FetchTopicResult",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "GroupRequest",
    "GroupResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "JoinGroupMember",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "LeaveMember",
    "LeaveMemberResult",
    "ListGroupsRequest",
    "ListGroupsResponse",
    "ListedGroup",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "SyncGroupAssignment",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "type_of",
    "value_of",
]

OFFSET_COMMIT: Final = 8
OFFSET_FETCH: Final = 9
FIND_COORDINATOR: Final = 10
JOIN_GROUP: Final = 11
HEARTBEAT: Final = 12
LEAVE_GROUP: Final = 13
SYNC_GROUP: Final = 14
DESCRIBE_GROUPS: Final = 15
LIST_GROUPS: Final = 16
DELETE_GROUPS: Final = 42

API_NAMES: Final[Mapping[int, str]] = MappingProxyType(
    {
        OFFSET_COMMIT: "OffsetCommit",
        OFFSET_FETCH: "OffsetFetch",
        FIND_COORDINATOR: "FindCoordinator",
        JOIN_GROUP: "JoinGroup",
        HEARTBEAT: "Heartbeat",
        LEAVE_GROUP: "LeaveGroup",
        SYNC_GROUP: "SyncGroup",
        DESCRIBE_GROUPS: "DescribeGroups",
        LIST_GROUPS: "ListGroups",
        DELETE_GROUPS: "DeleteGroups",
    }
)
"""Kafka's name of each group API."""

NEWEST_VERSIONS: Final[Mapping[int, int]] = MappingProxyType(
    {
        OFFSET_COMMIT: 9,
        OFFSET_FETCH: 9,
        FIND_COORDINATOR: 6,
        JOIN_GROUP: 9,
        HEARTBEAT: 4,
        LEAVE_GROUP: 5,
        SYNC_GROUP: 5,
        DESCRIBE_GROUPS: 6,
        LIST_GROUPS: 5,
        DELETE_GROUPS: 2,
    }
)
"""The newest version of each API kgroup speaks: the client sends at most this (JoinGroup v9 on
Kafka 4.x) and the connection negotiates down from it."""

NO_GENERATION: Final = -1
"""``generation_id`` of a request made outside any generation (Kafka's ``JoinGroupRequest.UNKNOWN_GENERATION_ID``)."""
UNKNOWN_MEMBER_ID: Final = ""
"""The empty member id a new member joins with (Kafka's ``JoinGroupRequest.UNKNOWN_MEMBER_ID``)."""


# --- FindCoordinator (API 10) ---------------------------------------------------------------


@attrs.frozen(kw_only=True)
class FindCoordinatorRequest:
    """FindCoordinator v0-v6 for one key (a group id when ``key_type`` is 0; 1 is a transactional id)."""

    API_KEY: ClassVar[int] = FIND_COORDINATOR

    api_version: int = NEWEST_VERSIONS[FIND_COORDINATOR]
    key: str
    key_type: int = 0


@attrs.frozen(kw_only=True)
class FindCoordinatorResponse:
    """FindCoordinator answer for one key: the coordinator's node, host and port."""

    API_KEY: ClassVar[int] = FIND_COORDINATOR

    error_code: int = 0
    error_message: str | None = None
    node_id: int = -1
    host: str = ""
    port: int = -1


# --- JoinGroup (API 11) ---------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class JoinGroupRequest:
    """JoinGroup v0-v9. ``protocols`` is the member's ordered ``(name, metadata)`` list.

    ``client_id`` and ``client_host`` come from the request header and the connection; the
    coordinator reports them in DescribeGroups.
    """

    API_KEY: ClassVar[int] = JOIN_GROUP

    api_version: int = NEWEST_VERSIONS[JOIN_GROUP]
    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None
    protocol_type: str = "consumer"
    protocols: tuple[tuple[str, bytes], ...] = ()
    reason: str | None = None
    client_id: str = ""
    client_host: str = "/127.0.0.1"


@attrs.frozen(kw_only=True)
class JoinGroupMember:
    """One entry of the leader's member list (``group_instance_id`` from v5, KIP-345)."""

    member_id: str
    group_instance_id: str | None = None
    metadata: bytes


@attrs.frozen(kw_only=True)
class JoinGroupResponse:
    """JoinGroup answer. ``members`` is non-empty only for the leader (and empty with skip_assignment)."""

    API_KEY: ClassVar[int] = JOIN_GROUP

    error_code: int = 0
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = UNKNOWN_MEMBER_ID
    members: tuple[JoinGroupMember, ...] = ()


# --- SyncGroup (API 14) ---------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class SyncGroupAssignment:
    """The leader's assignment bytes for one member."""

    member_id: str
    assignment: bytes


@attrs.frozen(kw_only=True)
class SyncGroupRequest:
    """SyncGroup v0-v5; ``assignments`` is empty for followers."""

    API_KEY: ClassVar[int] = SYNC_GROUP

    api_version: int = NEWEST_VERSIONS[SYNC_GROUP]
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: tuple[SyncGroupAssignment, ...] = ()


@attrs.frozen(kw_only=True)
class SyncGroupResponse:
    """SyncGroup answer: this member's assignment bytes."""

    API_KEY: ClassVar[int] = SYNC_GROUP

    error_code: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


# --- Heartbeat (API 12) ---------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class HeartbeatRequest:
    """Heartbeat v0-v4."""

    API_KEY: ClassVar[int] = HEARTBEAT

    api_version: int = NEWEST_VERSIONS[HEARTBEAT]
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@attrs.frozen(kw_only=True)
class HeartbeatResponse:
    """Heartbeat answer."""

    API_KEY: ClassVar[int] = HEARTBEAT

    error_code: int = 0


# --- LeaveGroup (API 13) --------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class LeaveMember:
    """One member identity in a LeaveGroup (v0-2 carry exactly one, with no instance id)."""

    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@attrs.frozen(kw_only=True)
class LeaveGroupRequest:
    """LeaveGroup v0-v5. For v0-2 the caller puts the single ``member_id`` in ``members``."""

    API_KEY: ClassVar[int] = LEAVE_GROUP

    api_version: int = NEWEST_VERSIONS[LEAVE_GROUP]
    group_id: str
    members: tuple[LeaveMember, ...]


@attrs.frozen(kw_only=True)
class LeaveMemberResult:
    """Per-member LeaveGroup outcome (v3+)."""

    member_id: str
    group_instance_id: str | None
    error_code: int


@attrs.frozen(kw_only=True)
class LeaveGroupResponse:
    """LeaveGroup answer: top-level error, and per-member results for v3+."""

    API_KEY: ClassVar[int] = LEAVE_GROUP

    error_code: int = 0
    members: tuple[LeaveMemberResult, ...] = ()


# --- OffsetCommit (API 8) -------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class CommitPartition:
    """One partition's committed position (``committed_leader_epoch`` -1 = unknown)."""

    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    committed_metadata: str | None = ""


@attrs.frozen(kw_only=True)
class CommitTopic:
    """A topic's partitions in an OffsetCommit."""

    name: str
    partitions: tuple[CommitPartition, ...]


@attrs.frozen(kw_only=True)
class OffsetCommitRequest:
    """OffsetCommit v2-v9 (``generation_id`` -1 and ``member_id`` '' = a commit outside the group)."""

    API_KEY: ClassVar[int] = OFFSET_COMMIT

    api_version: int = NEWEST_VERSIONS[OFFSET_COMMIT]
    group_id: str
    generation_id: int = NO_GENERATION
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None
    topics: tuple[CommitTopic, ...] = ()


@attrs.frozen(kw_only=True)
class CommitPartitionResult:
    """Per-partition commit outcome."""

    partition_index: int
    error_code: int


@attrs.frozen(kw_only=True)
class CommitTopicResult:
    """Per-topic commit outcomes, in request order."""

    name: str
    partitions: tuple[CommitPartitionResult, ...]


@attrs.frozen(kw_only=True)
class OffsetCommitResponse:
    """OffsetCommit answer (errors are per partition; the whole request shares one on fencing)."""

    API_KEY: ClassVar[int] = OFFSET_COMMIT

    topics: tuple[CommitTopicResult, ...] = ()


# --- OffsetFetch (API 9) --------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class FetchTopic:
    """Partitions asked for in an OffsetFetch."""

    name: str
    partition_indexes: tuple[int, ...]


@attrs.frozen(kw_only=True)
class OffsetFetchRequest:
    """OffsetFetch for one group; ``topics=None`` asks for every committed partition (v2+).

    ``member_id`` and ``member_epoch`` (v9+, KIP-848) are a consumer-protocol member's, which
    the coordinator checks (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH); ``None`` and ``-1``, what
    classic members and admin clients send, are not checked.
    """

    API_KEY: ClassVar[int] = OFFSET_FETCH

    api_version: int = NEWEST_VERSIONS[OFFSET_FETCH]
    group_id: str
    member_id: str | None = None
    member_epoch: int = -1
    topics: tuple[FetchTopic, ...] | None = None
    require_stable: bool = False


@attrs.frozen(kw_only=True)
class FetchPartitionResult:
    """One partition's committed position (offset -1 and metadata '' when none)."""

    partition_index: int
    committed_offset: int = -1
    committed_leader_epoch: int = -1
    metadata: str | None = ""
    error_code: int = 0


@attrs.frozen(kw_only=True)
class FetchTopicResult:
    """A topic's partitions in an OffsetFetch answer."""

    name: str
    partitions: tuple[FetchPartitionResult, ...]


@attrs.frozen(kw_only=True)
class OffsetFetchResponse:
    """OffsetFetch answer for one group (top-level ``error_code`` from v2)."""

    API_KEY: ClassVar[int] = OFFSET_FETCH

    error_code: int = 0
    topics: tuple[FetchTopicResult, ...] = ()


# --- DescribeGroups (API 15) and ListGroups (API 16) ----------------------------------------


@attrs.frozen(kw_only=True)
class DescribeGroupsRequest:
    """DescribeGroups v0-v6 (``include_authorized_operations`` from v3, KIP-430)."""

    API_KEY: ClassVar[int] = DESCRIBE_GROUPS

    api_version: int = NEWEST_VERSIONS[DESCRIBE_GROUPS]
    groups: tuple[str, ...]
    include_authorized_operations: bool = False


@attrs.frozen(kw_only=True)
class DescribedMember:
    """A member as DescribeGroups reports it (bytes as the coordinator holds them).

    Attributes:
        member_id: the member id the coordinator assigned.
        group_instance_id: the static member's id (KIP-345; DescribeGroups v4+), else None.
        client_id: the member's ``client.id``.
        client_host: the address the coordinator saw it connect from (``"/127.0.0.1"``).
        member_metadata: its ConsumerProtocol Subscription for the chosen protocol; empty
            unless the group is Stable (Kafka's ``describeNoMetadata``).
        member_assignment: its ConsumerProtocol Assignment; empty before SyncGroup.

    """

    member_id: str
    group_instance_id: str | None = None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@attrs.frozen(kw_only=True)
class DescribedGroup:
    """A group as DescribeGroups reports it.

    ``group_state`` uses Kafka's names: Empty, PreparingRebalance, CompletingRebalance, Stable,
    Dead (an unknown group is Dead with error 0 on Apache Kafka). ``protocol_type`` is
    "consumer" for consumer groups; ``protocol_data`` is the chosen protocol (the assignor's
    name) when Stable, else "". ``error_message`` (v6+, KIP-1043) accompanies an error.
    ``authorized_operations`` holds Kafka ``AclOperation`` codes when the request asked for them
    (v3+, KIP-430), else ``None``.
    """

    error_code: int
    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str
    members: tuple[DescribedMember, ...]
    error_message: str | None = None
    authorized_operations: frozenset[int] | None = None


@attrs.frozen(kw_only=True)
class DescribeGroupsResponse:
    """DescribeGroups answer, one entry per requested group, in request order."""

    API_KEY: ClassVar[int] = DESCRIBE_GROUPS

    groups: tuple[DescribedGroup, ...]


@attrs.frozen(kw_only=True)
class ListGroupsRequest:
    """ListGroups v0-v5; empty filters match everything."""

    API_KEY: ClassVar[int] = LIST_GROUPS

    api_version: int = NEWEST_VERSIONS[LIST_GROUPS]
    states_filter: tuple[str, ...] = ()
    types_filter: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class ListedGroup:
    """One ListGroups entry."""

    group_id: str
    protocol_type: str
    group_state: str = ""
    group_type: str = "classic"


@attrs.frozen(kw_only=True)
class ListGroupsResponse:
    """ListGroups answer."""

    API_KEY: ClassVar[int] = LIST_GROUPS

    error_code: int = 0
    groups: tuple[ListedGroup, ...] = ()


# --- DeleteGroups (API 42) ------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class DeleteGroupsRequest:
    """DeleteGroups v0-v3: the group ids to delete."""

    API_KEY: ClassVar[int] = DELETE_GROUPS

    api_version: int = NEWEST_VERSIONS[DELETE_GROUPS]
    groups: tuple[str, ...]


@attrs.frozen(kw_only=True)
class DeletedGroupResult:
    """One group's deletion outcome."""

    group_id: str
    error_code: int = 0


@attrs.frozen(kw_only=True)
class DeleteGroupsResponse:
    """DeleteGroups answer, one result per requested group, in request order."""

    API_KEY: ClassVar[int] = DELETE_GROUPS

    results: tuple[DeletedGroupResult, ...] = ()


GroupRequest = (
    FindCoordinatorRequest
    | JoinGroupRequest
    | SyncGroupRequest
    | HeartbeatRequest
    | LeaveGroupRequest
    | OffsetCommitRequest
    | OffsetFetchRequest
    | DescribeGroupsRequest
    | ListGroupsRequest
    | DeleteGroupsRequest
)
GroupResponse = (
    FindCoordinatorResponse
    | JoinGroupResponse
    | SyncGroupResponse
    | HeartbeatResponse
    | LeaveGroupResponse
    | OffsetCommitResponse
    | OffsetFetchResponse
    | DescribeGroupsResponse
    | ListGroupsResponse
    | DeleteGroupsResponse
)


def type_of(value: object) -> type:
    """The group API type ``value`` is: its own class, or the one a command or event extends.

    Raises:
        TypeError: ``value`` is not a group API value.

    """
    for cls in type(value).__mro__:
        if cls.__module__ == __name__:
            return cls
    raise TypeError(f"not a group API value: {value!r}")


def value_of(value: object) -> Any:
    """``value`` as its plain group API type (``value`` itself when it is plain).

    A command's request loses its request id, node and timeout; an event's response its request id.
    """
    cls = type_of(value)
    if cls is type(value):
        return value
    return cls(**{field.name: getattr(value, field.name) for field in attrs.fields(cls)})
