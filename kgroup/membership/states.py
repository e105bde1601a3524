"""What the membership machine remembers, and which events each state takes (docs/protocol.md).

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

``EVENT_TABLE`` says, for every state and every event type, whether the machine handles the
event, ignores it on purpose, or rejects it as illegal (h11's ``_state.py`` keeps its
transitions the same way). ``GroupMachine`` consults it in one place, before anything changes.
Besides ``MemberState`` the machine keeps small sub-states, each a frozen value replaced on
change: the coordinator (``kgroup.membership.coordinator.CoordinatorState``), its timers
(``kgroup.membership.timers``) and its requests in flight (``InFlight``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, TypeVar, get_args

import attrs

from kgroup.membership import events as ev

__all__ = [
    "ANSWERS",
    "EVENT_TABLE",
    "HEARTBEAT_STATES",
    "RESPONSES",
    "InFlight",
    "MemberState",
    "Request",
    "Verdict",
    "parse_event_table",
]

_State = TypeVar("_State", bound=enum.Enum)


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


# ==================================================================== requests in flight
class Request(enum.Enum):
    """What a request id in flight stands for."""

    FIND_COORDINATOR = "FindCoordinator"
    JOIN_GROUP = "JoinGroup"
    #: the leader's assignor, run by the driver (``ComputeAssignment``)
    ASSIGNMENT = "assignment"
    SYNC_GROUP = "SyncGroup"
    HEARTBEAT = "Heartbeat"
    LEAVE_GROUP = "LeaveGroup"
    #: a SyncGroup of the current generation asking whether the coordinator still has the member
    #: in it, after an outage past the session timeout (``GroupMachine._maybe_probe``)
    SYNC_PROBE = "SyncGroup (probe)"


@attrs.frozen
class InFlight:
    """A request the machine waits for: what it is, and the generation it was sent in."""

    request: Request
    generation_id: int
    #: when it was sent (the machine's clock, seconds)
    sent_at: float = 0.0


#: the events that may answer each kind of request; ``RequestFailed`` answers any request
ANSWERS: Final[Mapping[Request, frozenset[type]]] = MappingProxyType(
    {
        Request.FIND_COORDINATOR: frozenset({ev.FindCoordinatorResponded, ev.RequestFailed}),
        Request.JOIN_GROUP: frozenset({ev.JoinGroupResponded, ev.RequestFailed}),
        Request.ASSIGNMENT: frozenset({ev.AssignmentComputed, ev.AssignmentFailed, ev.RequestFailed}),
        Request.SYNC_GROUP: frozenset({ev.SyncGroupResponded, ev.RequestFailed}),
        Request.SYNC_PROBE: frozenset({ev.SyncGroupResponded, ev.RequestFailed}),
        Request.HEARTBEAT: frozenset({ev.HeartbeatResponded, ev.RequestFailed}),
        Request.LEAVE_GROUP: frozenset({ev.LeaveGroupResponded, ev.RequestFailed}),
    }
)

#: the events that answer a request (they carry its ``request_id``)
RESPONSES: Final[frozenset[type]] = frozenset().union(*ANSWERS.values())


# ==================================================================== the event table
class Verdict(enum.Enum):
    """What a state does with an event type."""

    #: the event's handler runs
    HANDLE = "handle"
    #: nothing changes (the machine still does what is due at ``now``)
    IGNORE = "ignore"
    #: a bug in the caller or the machine: ``ProtocolViolation``, and the machine is poisoned
    ILLEGAL = "illegal"


_EVENT_TABLE = """
                         unjoined preparing joining assigning syncing reconciling stable  leaving closed  fatal
Subscribe                handle   handle    handle  handle    handle  handle      handle  illegal illegal illegal
Polled                   handle   handle    handle  handle    handle  handle      handle  ignore  ignore  illegal
StepCompleted            handle   handle    illegal illegal   illegal handle      handle  illegal illegal illegal
Leave                    handle   handle    handle  handle    handle  handle      handle  ignore  ignore  illegal
RequestRejoin            handle   handle    handle  handle    handle  handle      handle  ignore  ignore  illegal
CoordinatorDead          handle   handle    handle  handle    handle  handle      handle  ignore  ignore  illegal
CommitErrorObserved      handle   handle    handle  handle    handle  handle      handle  ignore  ignore  illegal
FindCoordinatorResponded handle   handle    illegal illegal   illegal handle      handle  illegal illegal illegal
JoinGroupResponded       illegal  illegal   handle  illegal   illegal illegal     illegal illegal illegal illegal
AssignmentComputed       illegal  illegal   illegal handle    illegal illegal     illegal illegal illegal illegal
AssignmentFailed         illegal  illegal   illegal handle    illegal illegal     illegal illegal illegal illegal
SyncGroupResponded       illegal  illegal   illegal illegal   handle  illegal     illegal illegal illegal illegal
HeartbeatResponded       handle   handle    handle  handle    handle  handle      handle  illegal illegal illegal
LeaveGroupResponded      handle   handle    handle  handle    handle  handle      handle  handle  handle  illegal
RequestFailed            handle   handle    handle  handle    handle  handle      handle  handle  handle  illegal
"""
# How to read the table, row by row:
#
# - A response (``RESPONSES``) is first matched to its request (``GroupMachine`` Rule 4): one
#   whose request id is not in flight any more is dropped in every state, before the table.
#   The table judges the rest, which answer a request the machine waits for. Each kind of
#   request is in flight in a few states only: JoinGroup in JOINING, the leader's assignor in
#   ASSIGNING, SyncGroup in SYNCING; FindCoordinator while no coordinator is known, which a
#   JoinGroup/SyncGroup round never is (losing the coordinator ends the round); Heartbeats
#   stop at LEAVING; a LeaveGroup sent by the poll watchdog may be answered in any state, and
#   ``RequestFailed`` answers any request. A response must also be one that ``ANSWERS`` its
#   request (a SyncGroup response to a Heartbeat is illegal).
# - ``StepCompleted``: a step is out in PREPARING and RECONCILING, and during a close also in
#   UNJOINED or STABLE (the close's revoke step); never during a JoinGroup/SyncGroup round (a
#   close ends the round first) nor after LeaveGroup went out. It must name the step that is out.
# - ``Subscribe`` is illegal once the application closed the consumer (``Leave``), whatever the
#   state; a second ``Leave`` is ignored.
# - LEAVING and CLOSED ignore what the application and the poll thread say: the member has left.
# - FATAL: every call raises the stored error first (h11's ERROR state); the column is there
#   for completeness.


def parse_event_table(
    text: str, states: type[_State], events: tuple[type, ...]
) -> Mapping[_State, Mapping[type, Verdict]]:
    """An event table's grid as ``{state: {event type: verdict}}``; any gap or typo fails the import.

    The columns are every member of ``states`` in order (by value), the rows every one of ``events``
    (by class name): each machine writes its own table this way (this module's for the classic
    protocol, ``kgroup.membership.consumer_group_states`` for the consumer protocol). A grid too
    wide for a line may be written as blocks of columns, one after the other, a blank line apart.
    """
    by_name: dict[str, type] = {kind.__name__: kind for kind in events}
    table: dict[_State, dict[type, Verdict]] = {state: {} for state in states}
    seen: list[_State] = []
    for block in text.strip().split("\n\n"):
        header, *rows = block.strip().splitlines()
        columns = [states(name) for name in header.split()]
        seen += columns
        for row in rows:
            name, *cells = row.split()
            kind = by_name.get(name)
            if kind is None or len(cells) != len(columns) or any(kind in table[state] for state in columns):
                raise ValueError(f"EVENT_TABLE: bad row {row!r}")
            for state, cell in zip(columns, cells, strict=True):
                table[state][kind] = Verdict(cell)
    if seen != list(states):
        raise ValueError(f"EVENT_TABLE: the columns must be every {states.__name__} in order, got {seen}")
    missing = sorted(name for name, kind in by_name.items() if any(kind not in table[state] for state in states))
    if missing:
        raise ValueError(f"EVENT_TABLE: no row for {missing}")
    return MappingProxyType({state: MappingProxyType(verdicts) for state, verdicts in table.items()})


#: state -> event type -> ``Verdict``: every pair, written out above as a grid
EVENT_TABLE: Final[Mapping[MemberState, Mapping[type, Verdict]]] = parse_event_table(
    _EVENT_TABLE, MemberState, get_args(ev.ClassicEvent)
)
