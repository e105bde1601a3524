"""Outputs of the membership machines, one vocabulary for every group protocol. Every command is ``attrs.frozen``.

``Send*`` commands are requests the driver sends to the coordinator (``node_id``): each *is*
the group API request of :mod:`kgroup.protocol.group_api` (``SendJoinGroup`` is a
``JoinGroupRequest``), plus a fresh ``request_id`` and a timeout in ms; the transport sends the
request part (:func:`kgroup.protocol.group_api.value_of`). ``ComputeAssignment`` asks the driver to
run the leader's assignor (it needs cluster metadata, which is IO). ``DeliverStep`` goes to
the poll thread, which runs the listener callbacks and answers with ``StepCompleted``.
``Notify`` carries a non-fatal error to the next ``poll()``; ``Fail`` a fatal one. The
consumer protocol's machine (KIP-848) sends ``SendConsumerGroupHeartbeat`` and asks for topic
names with ``RequestMetadata``; the share-group machine (KIP-932) sends ``SendShareGroupHeartbeat``
and asks the same; every other command is shared.
"""

from __future__ import annotations

from typing import Generic, TypeVar
from uuid import UUID

import attrs
from attrs import AttrsInstance

from kgroup.assignors.base import MemberSubscription
from kgroup.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from kgroup.protocol.group_api import (
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from kgroup.protocol.share_group_heartbeat import ShareGroupHeartbeatRequest
from kgroup.types import Generation, TopicPartition

__all__ = [
    "Command",
    "ComputeAssignment",
    "DeliverStep",
    "Fail",
    "Notify",
    "RebalanceStep",
    "RequestMetadata",
    "RequestPart",
    "SendConsumerGroupHeartbeat",
    "SendFindCoordinator",
    "SendGroupRequest",
    "SendHeartbeat",
    "SendJoinGroup",
    "SendLeaveGroup",
    "SendShareGroupHeartbeat",
    "SendSyncGroup",
    "WatchGroupTopics",
]


@attrs.frozen(kw_only=True)
class RebalanceStep:
    """Listener work for the poll thread, run in the order commit, lost, revoked, assigned.

    One step type for every group protocol: the member's identity is ``generation`` (the member
    id with the classic generation, or with the consumer protocol's member epoch, which commits
    carry in OffsetCommit's ``GenerationIdOrMemberEpoch``; ``Generation()`` without one).

    Attributes:
        step_id: answer with ``StepCompleted(step_id)``.
        generation: the generation the step belongs to (commits inside callbacks use it).
        commit: commit consumed offsets first (auto-commit), with ``generation``.
        lost: partitions lost without a clean revoke (generation reset, poll timeout).
        revoked: partitions to give up (commit their offsets first).
        assigned: newly assigned partitions; after a SyncGroup this is always delivered,
            also when empty (Java and franz-go semantics).
        owned: what the member owns once the step completes.
        invoke_assigned: whether ``on_partitions_assigned`` runs (True after a SyncGroup).
        reason: why the step happens, for logs.

    """

    step_id: int
    generation: Generation
    commit: bool = False
    lost: frozenset[TopicPartition] = frozenset()
    revoked: frozenset[TopicPartition] = frozenset()
    assigned: frozenset[TopicPartition] = frozenset()
    owned: frozenset[TopicPartition] = frozenset()
    invoke_assigned: bool = False
    reason: str = ""


@attrs.frozen
class DeliverStep:
    """Hand ``step`` to the poll thread."""

    step: RebalanceStep


@attrs.frozen(kw_only=True)
class SendFindCoordinator(FindCoordinatorRequest):
    """FindCoordinator for the group (``key`` is the group id; Kafka protocol guide: FindCoordinator)."""

    request_id: int
    timeout_ms: int


@attrs.frozen(kw_only=True)
class SendJoinGroup(JoinGroupRequest):
    """JoinGroup at the highest version both sides support (the classic protocol: Join or rejoin)."""

    request_id: int
    node_id: int
    timeout_ms: int


@attrs.frozen
class ComputeAssignment:
    """The leader must assign: run ``protocol``'s assignor over ``members``."""

    request_id: int
    protocol: str
    members: tuple[MemberSubscription, ...]


@attrs.frozen
class WatchGroupTopics:
    """A returning static leader skipped the assignment (KIP-814): watch ``topics`` from now.

    Java ``ConsumerCoordinator.onLeaderElected`` with ``skipAssignment``: the assignment
    snapshot becomes the current metadata, so later partition changes still make the leader
    rejoin.
    """

    generation_id: int
    topics: frozenset[str]


@attrs.frozen(kw_only=True)
class SendSyncGroup(SyncGroupRequest):
    """SyncGroup; the leader's carries every member's assignment (the classic protocol: Sync group)."""

    request_id: int
    node_id: int
    timeout_ms: int


@attrs.frozen(kw_only=True)
class SendHeartbeat(HeartbeatRequest):
    """Heartbeat for the current generation."""

    request_id: int
    node_id: int
    timeout_ms: int


@attrs.frozen(kw_only=True)
class SendLeaveGroup(LeaveGroupRequest):
    """LeaveGroup for this member, with a reason (KIP-800)."""

    request_id: int
    node_id: int
    timeout_ms: int


_Request = TypeVar("_Request", bound=AttrsInstance)


class RequestPart(Generic[_Request]):
    """A ``Send*`` command's ``request()``: the request it extends (its first base), without the routing fields."""

    __slots__ = ()

    def request(self) -> _Request:
        """The request part, without the routing fields."""
        request_type = type(self).__mro__[1]
        request: _Request = request_type(**{f.name: getattr(self, f.name) for f in attrs.fields(request_type)})
        return request


@attrs.frozen(kw_only=True)
class SendConsumerGroupHeartbeat(ConsumerGroupHeartbeatRequest, RequestPart[ConsumerGroupHeartbeatRequest]):
    """A ConsumerGroupHeartbeat to the coordinator ``node_id``; answered by ``ConsumerGroupHeartbeatResponded``."""

    request_id: int
    node_id: int
    timeout_ms: int


@attrs.frozen(kw_only=True)
class SendShareGroupHeartbeat(ShareGroupHeartbeatRequest, RequestPart[ShareGroupHeartbeatRequest]):
    """A ShareGroupHeartbeat (share groups, KIP-932) to ``node_id``; answered by ``ShareGroupHeartbeatResponded``."""

    request_id: int
    node_id: int
    timeout_ms: int


@attrs.frozen
class RequestMetadata:
    """Refresh metadata: ``topic_ids`` of the target assignment have no name yet; answer with ``MetadataUpdated``."""

    topic_ids: frozenset[UUID]


@attrs.frozen
class Notify:
    """A non-fatal error for the next ``poll()`` (e.g. a malformed assignment from the leader)."""

    error: Exception


@attrs.frozen
class Fail:
    """A fatal error: the machine is poisoned; ``poll()``/``commit()`` raise it from now on."""

    error: Exception


#: the classic protocol's requests: what the group thread sends through ``Transport.send``
SendGroupRequest = SendFindCoordinator | SendJoinGroup | SendSyncGroup | SendHeartbeat | SendLeaveGroup

Command = (
    DeliverStep
    | SendGroupRequest
    | ComputeAssignment
    | WatchGroupTopics
    | SendConsumerGroupHeartbeat
    | RequestMetadata
    | Notify
    | Fail
)
