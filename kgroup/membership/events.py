"""Inputs of the membership machines, one vocabulary for every group protocol. Every event is ``attrs.frozen``.

User intents come from the poll thread (``Subscribe``, ``Unsubscribe``, ``Polled``,
``StepCompleted``, ``Leave``, ``RequestRejoin``, ``CommitErrorObserved``, ``CoordinatorDead``);
responses come from the transport and carry the ``request_id`` of the command that caused them,
so a response to a request the machine no longer waits for is dropped (Java's
``generationUnchanged()`` check, generalised). Each ``*Responded`` event *is* the group API
response of :mod:`kgroup.protocol` (``JoinGroupResponded`` is a ``JoinGroupResponse``) plus that
``request_id``; :func:`responded` makes a classic one.

Both machines take the shared events (``ClassicEvent`` and ``ConsumerGroupEvent`` say which):
the classic one (:mod:`kgroup.membership.machine`) also the JoinGroup/SyncGroup round's
answers, the consumer protocol's (:mod:`kgroup.membership.consumer_group`, KIP-848) also
``ConsumerGroupHeartbeatResponded``, ``MetadataUpdated`` and ``SessionTimeoutDescribed``; the
share-group machine (:mod:`kgroup.membership.share_group`, KIP-932) also
``ShareGroupHeartbeatResponded``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any
from uuid import UUID

import attrs

from kgroup.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse
from kgroup.protocol.group_api import (
    FindCoordinatorResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    SyncGroupResponse,
)
from kgroup.protocol.share_group_heartbeat import ShareGroupHeartbeatResponse
from kgroup.types import Generation

__all__ = [
    "AssignmentComputed",
    "AssignmentFailed",
    "ClassicEvent",
    "CommitErrorObserved",
    "ConsumerGroupEvent",
    "ConsumerGroupHeartbeatResponded",
    "CoordinatorDead",
    "Event",
    "FindCoordinatorResponded",
    "HeartbeatResponded",
    "JoinGroupResponded",
    "Leave",
    "LeaveGroupResponded",
    "LeaveOperation",
    "MetadataUpdated",
    "Polled",
    "RequestFailed",
    "RequestRejoin",
    "SessionTimeoutDescribed",
    "ShareGroupHeartbeatResponded",
    "StepCompleted",
    "Subscribe",
    "SyncGroupResponded",
    "Unsubscribe",
    "responded",
]


def _topics(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


@attrs.frozen
class Subscribe:
    """The application subscribes to ``topics`` (replacing any earlier subscription).

    ``pattern``: a server-side RE2J pattern (the consumer protocol only; the classic protocol's
    pattern subscriptions are matched by the client, which subscribes to the topics). Under the
    consumer protocol an empty subscription (no topics, no pattern) is ``Unsubscribe``.
    """

    topics: frozenset[str] = attrs.field(converter=_topics)
    pattern: str | None = None


@attrs.frozen
class Unsubscribe:
    """The application unsubscribes: release the partitions, leave the group, stay usable (consumer protocol)."""


@attrs.frozen
class Polled:
    """The application is inside ``poll()``: resets the max.poll.interval watchdog (KIP-62).

    Under the consumer protocol the member also joins only inside ``poll()`` (as Java's).
    """


@attrs.frozen
class StepCompleted:
    """The poll thread finished running the listener callbacks of step ``step_id``.

    Attributes:
        step_id: the step.
        error: a listener callback raised it (the poll thread reported it to the application);
            under the consumer protocol the reconciliation is not acknowledged and runs again at
            the next ``Polled``.
        applied: whether the step's ``owned`` took effect. ``False`` only when the revoke phase
            failed, so nothing was assigned and the revoked partitions are still owned.

    """

    step_id: int
    error: Exception | None = None
    applied: bool = True


class LeaveOperation(enum.Enum):
    """What closing does to the membership (Java's ``CloseOptions.GroupMembershipOperation``)."""

    #: dynamic members leave; static members leave for now (the consumer protocol's epoch -2)
    #: or stay (the classic protocol sends no LeaveGroup for a static member, KIP-345)
    DEFAULT = "default"
    #: every member leaves for good
    LEAVE_GROUP = "leave_group"
    #: dynamic members send nothing (the session times out); static members of the consumer
    #: protocol send epoch -2
    REMAIN_IN_GROUP = "remain_in_group"


_LEAVE_OPERATIONS = MappingProxyType(
    {None: LeaveOperation.DEFAULT, True: LeaveOperation.LEAVE_GROUP, False: LeaveOperation.REMAIN_IN_GROUP}
)


@attrs.frozen
class Leave:
    """The application closes the consumer; ``reason`` is logged and sent (KIP-800)."""

    reason: str = "the consumer is being closed"
    #: send LeaveGroup: True for dynamic members by default, False for static ones (KIP-345)
    send_leave_group: bool | None = None

    @property
    def operation(self) -> LeaveOperation:
        """``send_leave_group`` None / True / False: Java's ``CloseOptions`` DEFAULT / LEAVE_GROUP / REMAIN_IN_GROUP."""
        return _LEAVE_OPERATIONS[self.send_leave_group]


@attrs.frozen
class RequestRejoin:
    """Something outside the machine wants a rebalance (e.g. an OffsetCommit said so)."""

    reason: str


@attrs.frozen
class CoordinatorDead:
    """The poll thread saw the coordinator fail (NOT_COORDINATOR, disconnect) on an offset call."""

    reason: str


@attrs.frozen
class CommitErrorObserved:
    """An OffsetCommit/OffsetFetch sent with ``generation`` returned ``code`` (not 0).

    The offsets client decides the call's own outcome; what the code means for the membership
    (find the coordinator again, rejoin, reset, fatal) the machine decides, here only.
    """

    generation: Generation
    code: int
    api: str = "OffsetCommit"


@attrs.frozen
class AssignmentComputed:
    """The driver ran the leader's assignor: member id -> encoded Assignment bytes."""

    request_id: int
    assignments: tuple[tuple[str, bytes], ...]


@attrs.frozen
class AssignmentFailed:
    """The leader's assignor (or metadata lookup) failed; ``error`` surfaces from poll()."""

    request_id: int
    error: Exception


@attrs.frozen(kw_only=True)
class FindCoordinatorResponded(FindCoordinatorResponse):
    """A FindCoordinator response."""

    request_id: int


@attrs.frozen(kw_only=True)
class JoinGroupResponded(JoinGroupResponse):
    """A JoinGroup response."""

    request_id: int


@attrs.frozen(kw_only=True)
class SyncGroupResponded(SyncGroupResponse):
    """A SyncGroup response: this member's encoded Assignment."""

    request_id: int


@attrs.frozen(kw_only=True)
class HeartbeatResponded(HeartbeatResponse):
    """A Heartbeat response."""

    request_id: int


@attrs.frozen(kw_only=True)
class LeaveGroupResponded(LeaveGroupResponse):
    """A LeaveGroup response (v3+: with this member's own result in ``members``)."""

    request_id: int


@attrs.frozen(kw_only=True)
class ConsumerGroupHeartbeatResponded(ConsumerGroupHeartbeatResponse):
    """A ConsumerGroupHeartbeat response (the consumer protocol, KIP-848)."""

    request_id: int


@attrs.frozen(kw_only=True)
class ShareGroupHeartbeatResponded(ShareGroupHeartbeatResponse):
    """A ShareGroupHeartbeat response (share groups, KIP-932)."""

    request_id: int


def _topic_names(value: Mapping[UUID, str]) -> Mapping[UUID, str]:
    return MappingProxyType(dict(value))


@attrs.frozen
class MetadataUpdated:
    """The driver's metadata now maps these topic ids to names (every topic it knows, not a delta)."""

    topic_names: Mapping[UUID, str] = attrs.field(converter=_topic_names)


@attrs.frozen
class SessionTimeoutDescribed:
    """What DescribeConfigs answered for the group's ``consumer.session.timeout.ms`` (the consumer protocol).

    ``session_timeout_ms`` None: the request failed (no DESCRIBE_CONFIGS permission on the
    group, a broker without group configs, no answer); the value learned before, if any, stays.
    """

    session_timeout_ms: int | None


@attrs.frozen
class RequestFailed:
    """A request got no response: disconnect, timeout or a client-side error.

    ``unsupported_version``: the broker does not serve the request at any version kgroup
    speaks (a cluster without the consumer protocol, or a pattern subscription that needs v1).
    """

    request_id: int
    reason: str
    unsupported_version: bool = False


#: what the classic machine takes (its event table has a row for each)
ClassicEvent = (
    Subscribe
    | Polled
    | StepCompleted
    | Leave
    | RequestRejoin
    | CoordinatorDead
    | CommitErrorObserved
    | AssignmentComputed
    | AssignmentFailed
    | FindCoordinatorResponded
    | JoinGroupResponded
    | SyncGroupResponded
    | HeartbeatResponded
    | LeaveGroupResponded
    | RequestFailed
)

#: what the consumer protocol's machine takes (KIP-848)
ConsumerGroupEvent = (
    Subscribe
    | Unsubscribe
    | Polled
    | StepCompleted
    | Leave
    | RequestRejoin
    | CommitErrorObserved
    | MetadataUpdated
    | CoordinatorDead
    | FindCoordinatorResponded
    | ConsumerGroupHeartbeatResponded
    | RequestFailed
    | SessionTimeoutDescribed
)

Event = ClassicEvent | ConsumerGroupEvent

_RESPONDED: Mapping[type, type] = {
    FindCoordinatorResponse: FindCoordinatorResponded,
    JoinGroupResponse: JoinGroupResponded,
    SyncGroupResponse: SyncGroupResponded,
    HeartbeatResponse: HeartbeatResponded,
    LeaveGroupResponse: LeaveGroupResponded,
}


def responded(request_id: int, response: Any) -> ClassicEvent:
    """The event for ``response``, a group API response to the request ``request_id``.

    Raises:
        KeyError: the machine takes no such response (only the five APIs it sends).

    """
    event: ClassicEvent = _RESPONDED[type(response)](request_id=request_id, **attrs.asdict(response, recurse=False))
    return event
