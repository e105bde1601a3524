"""Inputs of the membership machine. Every event is ``attrs.frozen``.

User intents come from the poll thread (``Subscribe``, ``Polled``, ``StepCompleted``,
``Leave``, ``RequestRejoin``, ``CommitErrorObserved``, ``CoordinatorDead``); responses come
from the transport and carry the ``request_id`` of the command that caused them, so a
response to a request the machine no longer waits for is dropped (Java's
``generationUnchanged()`` check, generalised).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from kgroup.types import Generation

__all__ = [
    "AssignmentComputed",
    "AssignmentFailed",
    "CommitErrorObserved",
    "CoordinatorDead",
    "Event",
    "FindCoordinatorResponded",
    "HeartbeatResponded",
    "JoinGroupResponded",
    "JoinedMember",
    "Leave",
    "LeaveGroupResponded",
    "Polled",
    "RequestFailed",
    "RequestRejoin",
    "StepCompleted",
    "Subscribe",
    "SyncGroupResponded",
]


def _topics(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


@attrs.frozen
class Subscribe:
    """The application subscribes to ``topics`` (replacing any earlier subscription)."""

    topics: frozenset[str] = attrs.field(converter=_topics)


@attrs.frozen
class Polled:
    """The application is inside ``poll()``: resets the max.poll.interval watchdog (KIP-62)."""


@attrs.frozen
class StepCompleted:
    """The poll thread finished running the listener callbacks of step ``step_id``."""

    step_id: int


@attrs.frozen
class Leave:
    """The application closes the consumer; ``reason`` is logged and sent (KIP-800)."""

    reason: str = "the consumer is being closed"
    #: send LeaveGroup: True for dynamic members by default, False for static ones (KIP-345)
    send_leave_group: bool | None = None


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
    """An OffsetCommit/OffsetFetch sent with ``generation`` returned ``code`` (not 0)."""

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


@attrs.frozen
class FindCoordinatorResponded:
    """A FindCoordinator response."""

    request_id: int
    error_code: int
    node_id: int = -1
    host: str = ""
    port: int = -1


@attrs.frozen
class JoinedMember:
    """One member listed in the leader's JoinGroup response."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@attrs.frozen
class JoinGroupResponded:
    """A JoinGroup response."""

    request_id: int
    error_code: int
    generation_id: int = -1
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[JoinedMember, ...] = ()
    skip_assignment: bool = False


@attrs.frozen
class SyncGroupResponded:
    """A SyncGroup response: this member's encoded Assignment."""

    request_id: int
    error_code: int
    assignment: bytes = b""


@attrs.frozen
class HeartbeatResponded:
    """A Heartbeat response."""

    request_id: int
    error_code: int


@attrs.frozen
class LeaveGroupResponded:
    """A LeaveGroup response (top-level or this member's error code)."""

    request_id: int
    error_code: int


@attrs.frozen
class RequestFailed:
    """A request got no response: disconnect, timeout or a client-side error."""

    request_id: int
    reason: str


Event = (
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
