"""Inputs of the membership machine. Every event is ``attrs.frozen``.

User intents come from the poll thread (``Subscribe``, ``Polled``, ``StepCompleted``,
``Leave``, ``RequestRejoin``, ``CommitErrorObserved``, ``CoordinatorDead``); responses come
from the transport and carry the ``request_id`` of the command that caused them, so a
response to a request the machine no longer waits for is dropped (Java's
``generationUnchanged()`` check, generalised). Each ``*Responded`` event *is* the group API
response of :mod:`kgroup.protocol.group_api` (``JoinGroupResponded`` is a
``JoinGroupResponse``) plus that ``request_id``; :func:`responded` makes one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from kgroup.protocol.group_api import (
    FindCoordinatorResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    SyncGroupResponse,
)
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
    "Leave",
    "LeaveGroupResponded",
    "Polled",
    "RequestFailed",
    "RequestRejoin",
    "StepCompleted",
    "Subscribe",
    "SyncGroupResponded",
    "responded",
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

_RESPONDED: Mapping[type, type] = {
    FindCoordinatorResponse: FindCoordinatorResponded,
    JoinGroupResponse: JoinGroupResponded,
    SyncGroupResponse: SyncGroupResponded,
    HeartbeatResponse: HeartbeatResponded,
    LeaveGroupResponse: LeaveGroupResponded,
}


def responded(request_id: int, response: Any) -> Event:
    """The event for ``response``, a group API response to the request ``request_id``.

    Raises:
        KeyError: the machine takes no such response (only the five APIs it sends).

    """
    event: Event = _RESPONDED[type(response)](request_id=request_id, **attrs.asdict(response, recurse=False))
    return event
