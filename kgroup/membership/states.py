"""Member states of the membership machine (docs/protocol.md).

| state       | meaning                                         | heartbeats          |
|-------------|-------------------------------------------------|---------------------|
| UNJOINED    | no generation (start, after reset or leave)     | no                  |
| PREPARING   | a step is out before JoinGroup (revoke or lost) | if generation valid |
| JOINING     | JoinGroup in flight                             | no                  |
| ASSIGNING   | leader computing the assignment                 | yes                 |
| SYNCING     | SyncGroup in flight                             | yes                 |
| RECONCILING | the post-sync step is out to the poll thread     | yes                 |
| STABLE      | member of the current generation                | yes                 |
| LEAVING     | LeaveGroup in flight                            | no                  |
| CLOSED      | terminal                                        | no                  |
| FATAL       | terminal, poisoned                              | no                  |
"""

from __future__ import annotations

import enum

__all__ = ["HEARTBEAT_STATES", "MemberState"]


class MemberState(enum.Enum):
    """Where a member stands in the join/sync cycle (the classic protocol's join and sync steps)."""

    UNJOINED = "unjoined"
    PREPARING = "preparing"
    JOINING = "joining"
    ASSIGNING = "assigning"
    SYNCING = "syncing"
    RECONCILING = "reconciling"
    STABLE = "stable"
    LEAVING = "leaving"
    CLOSED = "closed"
    FATAL = "fatal"


#: states in which a member with a valid generation heartbeats (Java's heartbeat thread runs
#: unless the member "has not joined": UNJOINED or a JoinGroup in flight)
HEARTBEAT_STATES = frozenset(
    {
        MemberState.PREPARING,
        MemberState.ASSIGNING,
        MemberState.SYNCING,
        MemberState.RECONCILING,
        MemberState.STABLE,
    }
)
