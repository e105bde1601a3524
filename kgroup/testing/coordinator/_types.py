"""Requests, responses and replies of the coordinator model (kgroup's own types, no kafka-python).

Field names follow Apache Kafka's message schemas (``clients/src/main/resources/common/message``),
in snake_case as kafka-python spells them, so the proxy's wire mapping is mechanical. Each
request carries the ``api_version`` it arrived with, because several rules depend on it
(MEMBER_ID_REQUIRED only from JoinGroup v4, KIP-394; ``skip_assignment`` only at v9, KIP-814;
the LeaveGroup batch form from v3, KIP-345). The OffsetFetch v8+ multi-group form is split
into one :class:`OffsetFetchRequest` per group by the caller.

All times are in ms; error codes are Kafka's numeric codes (see :mod:`kgroup.errors`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import attrs

__all__ = [
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

R = TypeVar("R")

NO_GENERATION = -1
"""``generation_id`` of a request made outside any generation (Kafka's ``JoinGroupRequest.UNKNOWN_GENERATION_ID``)."""
UNKNOWN_MEMBER_ID = ""
"""The empty member id a new member joins with (Kafka's ``JoinGroupRequest.UNKNOWN_MEMBER_ID``)."""


class Reply(Generic[R]):
    """The answer to one request: available at once, or later (a parked JoinGroup/SyncGroup).

    The model completes a reply exactly once, from inside one of its own method calls
    (another member's request, :meth:`~kgroup.testing.coordinator.GroupCoordinatorModel.tick`,
    ``restart``). Callbacks run synchronously at completion, in registration order; a callback
    added after completion runs at once. Not thread-safe: the model and its replies belong to
    one thread (the proxy's event loop, or a test).
    """

    __slots__ = ("_callbacks", "_done", "_response")

    def __init__(self) -> None:
        self._done = False
        self._response: R | None = None
        self._callbacks: list[Callable[[R], None]] = []

    @classmethod
    def of(cls, response: R) -> Reply[R]:
        """A reply completed with ``response``."""
        reply: Reply[R] = cls()
        reply.complete(response)
        return reply

    @property
    def done(self) -> bool:
        """Whether the response is available."""
        return self._done

    @property
    def response(self) -> R:
        """The response.

        Raises:
            RuntimeError: the reply is still parked.

        """
        if not self._done:
            raise RuntimeError("reply is still parked; no response yet")
        return self._response  # type: ignore[return-value]

    def complete(self, response: R) -> None:
        """Complete the reply (model-internal).

        Raises:
            RuntimeError: it was already completed (a model bug: one request, one response).

        """
        if self._done:
            raise RuntimeError(f"reply completed twice: first {self._response!r}, then {response!r}")
        self._done = True
        self._response = response
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(response)

    def add_done_callback(self, callback: Callable[[R], None]) -> None:
        """Call ``callback(response)`` at completion (at once if already done)."""
        if self._done:
            callback(self._response)  # type: ignore[arg-type]
        else:
            self._callbacks.append(callback)

    def __repr__(self) -> str:
        return f"Reply({self._response!r})" if self._done else "Reply(<parked>)"


# --- JoinGroup (API 11) ---------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class JoinGroupRequest:
    """JoinGroup v0-v9. ``protocols`` is the member's ordered ``(name, metadata)`` list.

    ``client_id`` and ``client_host`` come from the request header and the connection; the
    coordinator reports them in DescribeGroups.
    """

    api_version: int
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
    """One entry of the leader's member list."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@attrs.frozen(kw_only=True)
class JoinGroupResponse:
    """JoinGroup answer. ``members`` is non-empty only for the leader (and empty with skip_assignment)."""

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

    api_version: int
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

    error_code: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


# --- Heartbeat (API 12) ---------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class HeartbeatRequest:
    """Heartbeat v0-v4."""

    api_version: int
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@attrs.frozen(kw_only=True)
class HeartbeatResponse:
    """Heartbeat answer."""

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

    api_version: int
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

    api_version: int
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

    topics: tuple[CommitTopicResult, ...] = ()


# --- OffsetFetch (API 9) --------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class FetchTopic:
    """Partitions asked for in an OffsetFetch."""

    name: str
    partition_indexes: tuple[int, ...]


@attrs.frozen(kw_only=True)
class OffsetFetchRequest:
    """OffsetFetch for one group; ``topics=None`` asks for every committed partition (v2+)."""

    api_version: int
    group_id: str
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

    error_code: int = 0
    topics: tuple[FetchTopicResult, ...] = ()


# --- DescribeGroups (API 15) and ListGroups (API 16) ----------------------------------------


@attrs.frozen(kw_only=True)
class DescribeGroupsRequest:
    """DescribeGroups v0-v6 (``include_authorized_operations`` from v3, KIP-430)."""

    api_version: int
    groups: tuple[str, ...]
    include_authorized_operations: bool = False


@attrs.frozen(kw_only=True)
class DescribedMember:
    """A member as DescribeGroups reports it (metadata/assignment for the chosen protocol)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@attrs.frozen(kw_only=True)
class DescribedGroup:
    """A group as DescribeGroups reports it.

    ``group_state`` uses Kafka's names: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead.
    ``error_message`` (v6+, KIP-1043) accompanies an error. ``authorized_operations`` holds Kafka
    ``AclOperation`` codes when the request asked for them (v3+, KIP-430), else ``None``.
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

    groups: tuple[DescribedGroup, ...]


@attrs.frozen(kw_only=True)
class ListGroupsRequest:
    """ListGroups v0-v5; empty filters match everything."""

    api_version: int
    states_filter: tuple[str, ...] = ()
    types_filter: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class ListedGroup:
    """One ListGroups entry."""

    group_id: str
    protocol_type: str
    group_state: str
    group_type: str = "classic"


@attrs.frozen(kw_only=True)
class ListGroupsResponse:
    """ListGroups answer."""

    error_code: int = 0
    groups: tuple[ListedGroup, ...] = ()


# --- DeleteGroups (API 42) ------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class DeleteGroupsRequest:
    """DeleteGroups v0-v3: the group ids to delete."""

    api_version: int
    groups: tuple[str, ...]


@attrs.frozen(kw_only=True)
class DeletedGroupResult:
    """One group's deletion outcome."""

    group_id: str
    error_code: int = 0


@attrs.frozen(kw_only=True)
class DeleteGroupsResponse:
    """DeleteGroups answer, one result per requested group, in request order."""

    results: tuple[DeletedGroupResult, ...] = ()
