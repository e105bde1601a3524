"""A pure model of Apache Kafka's classic group coordinator, for tests and for the test proxy.

:class:`GroupCoordinatorModel` answers JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
OffsetFetch, DescribeGroups and ListGroups as an Apache Kafka 3.x/4.x broker's classic group
coordinator does, with time taken from an injected clock (no IO, no threads). Parked
JoinGroup/SyncGroup requests return an undone :class:`Reply` that the model completes later.
See :mod:`kgroup.testing.coordinator._model` for the rules and their sources.
"""

from kgroup.testing.coordinator._config import CoordinatorConfig
from kgroup.testing.coordinator._events import CoordinatorEvent
from kgroup.testing.coordinator._model import GroupCoordinatorModel
from kgroup.testing.coordinator._types import (
    CommitPartition,
    CommitPartitionResult,
    CommitTopic,
    CommitTopicResult,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    FetchPartitionResult,
    FetchTopic,
    FetchTopicResult,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeaveMember,
    LeaveMemberResult,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Reply,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)

__all__ = [
    "CommitPartition",
    "CommitPartitionResult",
    "CommitTopic",
    "CommitTopicResult",
    "CoordinatorConfig",
    "CoordinatorEvent",
    "DescribeGroupsRequest",
    "DescribeGroupsResponse",
    "DescribedGroup",
    "DescribedMember",
    "FetchPartitionResult",
    "FetchTopic",
    "FetchTopicResult",
    "GroupCoordinatorModel",
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
    "Reply",
    "SyncGroupAssignment",
    "SyncGroupRequest",
    "SyncGroupResponse",
]
