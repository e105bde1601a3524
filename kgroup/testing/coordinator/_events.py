"""The model's append-only event log, for tests to assert on what the coordinator did and why."""

from __future__ import annotations

from typing import Final

import attrs

__all__ = [
    "COORDINATOR_RESTARTED",
    "GENERATION_COMPLETED",
    "GROUP_STABLE",
    "MEMBER_ADDED",
    "MEMBER_REMOVED",
    "OFFSETS_COMMITTED",
    "PENDING_MEMBER_ADDED",
    "PENDING_MEMBER_REMOVED",
    "REBALANCE_STARTED",
    "STATIC_MEMBER_REPLACED",
    "CoordinatorEvent",
]

MEMBER_ADDED: Final = "member_added"
"""A member entered the group (detail: ``"dynamic"`` or ``"static <instance id>"``)."""
MEMBER_REMOVED: Final = "member_removed"
"""A member left the group. Detail: ``"session timeout"``, ``"new member join timeout"``, ``"rebalance timeout"``
(did not rejoin in time), ``"pending sync timeout"``, ``"left: <KIP-800 reason>"``, ``"fenced"`` (its static
instance id was taken over), ``"group max size reached"``."""
PENDING_MEMBER_ADDED: Final = "pending_member_added"
"""A dynamic member was given an id with MEMBER_ID_REQUIRED (KIP-394) and is awaited."""
PENDING_MEMBER_REMOVED: Final = "pending_member_removed"
"""A pending member went away (detail ``"session timeout"`` or ``"left: <reason>"``)."""
REBALANCE_STARTED: Final = "rebalance_started"
"""The group entered PreparingRebalance; detail is Kafka's reason string."""
GENERATION_COMPLETED: Final = "generation_completed"
"""The join phase completed: detail ``"generation N, leader L, protocol P, members [..]"`` (or ``"... Empty"``)."""
GROUP_STABLE: Final = "group_stable"
"""The leader's SyncGroup delivered the assignments; the group is Stable."""
STATIC_MEMBER_REPLACED: Final = "static_member_replaced"
"""A static member rejoined with an empty member id and got a new one (KIP-345); detail names the old id."""
OFFSETS_COMMITTED: Final = "offsets_committed"
"""An OffsetCommit stored offsets; detail lists ``topic-partition@offset``."""
COORDINATOR_RESTARTED: Final = "coordinator_restarted"
"""``restart()`` was called (group id ``""``); detail gives ``load_ms``."""


@attrs.frozen(kw_only=True)
class CoordinatorEvent:
    """One thing the coordinator model did.

    Attributes:
        time_ms: the model clock in ms (``round(clock.monotonic() * 1000)``); for what a timer did,
            the timer's deadline (timers fire "on time" even when ``tick()`` comes late).
        group_id: the group concerned (``""`` for coordinator-wide events).
        kind: one of the kind constants of this module, e.g. ``"member_removed"``.
        member_id: the member concerned, ``""`` for group-level events.
        detail: a human-readable reason, Kafka-like where Kafka logs one.

    """

    time_ms: int
    group_id: str
    kind: str
    member_id: str = ""
    detail: str = ""
