"""GroupMachine's event table: every (state, event type) pair is handled, ignored on purpose, or
illegal, and an illegal event raises before the machine changes (h11's ``_state.py`` table).

Each state is reached through public events with a request in flight, so that a response
event can name a request the machine waits for: the table, not the stale-response rule,
decides what happens to it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args

import attrs
import pytest

from kgroup._error_codes import GROUP_AUTHORIZATION_FAILED, ILLEGAL_GENERATION
from kgroup.errors import FatalGroupError, ProtocolViolation
from kgroup.membership import GroupMachine, MemberState
from kgroup.membership import events as ev
from kgroup.membership.commands import (
    ComputeAssignment,
    DeliverStep,
    Fail,
    SendFindCoordinator,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
)
from kgroup.membership.states import ANSWERS, EVENT_TABLE, RESPONSES, Request, Verdict
from tests.unit.machine_script import MEMBER_ID, Script, of_kind, only, tp

OWNED = frozenset({tp("a", 0), tp("a", 1)})
EVENT_TYPES: tuple[type, ...] = get_args(ev.ClassicEvent)
UNKNOWN_ID = 999


# ------------------------------------------------------------------ reaching each state
@attrs.frozen
class Reached:
    """A machine in ``state`` at ``t.now``, waiting for request ``request_id`` (a ``request``)."""

    t: Script
    m: GroupMachine
    request_id: int
    request: Request


def _unjoined() -> Reached:
    t = Script()
    m = t.machine()
    find = only(t.handle(m, ev.Subscribe(frozenset({"a"}))), SendFindCoordinator)
    return Reached(t, m, find.request_id, Request.FIND_COORDINATOR)


def _preparing() -> Reached:
    t = Script()
    m = t.machine()
    t.bring_to_stable(m, owned=OWNED)
    t.now = t.heartbeat_interval_s
    cmds = t.handle(m, ev.RequestRejoin("test"))  # the eager revoke goes out; the heartbeat is due
    only(of_kind(cmds, DeliverStep), DeliverStep)
    heartbeat = only(of_kind(cmds, SendHeartbeat), SendHeartbeat)
    return Reached(t, m, heartbeat.request_id, Request.HEARTBEAT)


def _joining() -> Reached:
    t = Script()
    m = t.machine()
    t.handle(m, ev.Subscribe(frozenset({"a"})))
    join = only(t.handle(m, t.coordinator_found()), SendJoinGroup)
    return Reached(t, m, join.request_id, Request.JOIN_GROUP)


def _assigning() -> Reached:
    reached = _joining()
    t, m = reached.t, reached.m
    t.handle(m, t.member_id_required())
    compute = only(t.handle(m, t.join_response()), ComputeAssignment)
    return Reached(t, m, compute.request_id, Request.ASSIGNMENT)


def _syncing() -> Reached:
    reached = _joining()
    t, m = reached.t, reached.m
    t.handle(m, t.member_id_required())
    sync = only(t.handle(m, t.join_response(leader="other")), SendSyncGroup)
    return Reached(t, m, sync.request_id, Request.SYNC_GROUP)


def _reconciling() -> Reached:
    reached = _syncing()
    t, m = reached.t, reached.m
    only(t.handle(m, t.sync_response(OWNED)), DeliverStep)
    heartbeat = only(t.tick(m, t.heartbeat_interval_s), SendHeartbeat)
    t.now = t.heartbeat_interval_s
    return Reached(t, m, heartbeat.request_id, Request.HEARTBEAT)


def _stable() -> Reached:
    t = Script()
    m = t.machine()
    t.bring_to_stable(m, owned=OWNED)
    heartbeat = only(t.tick(m, t.heartbeat_interval_s), SendHeartbeat)
    t.now = t.heartbeat_interval_s
    return Reached(t, m, heartbeat.request_id, Request.HEARTBEAT)


def _leaving() -> Reached:
    t = Script()
    m = t.machine()
    t.bring_to_stable(m)
    leave = only(t.handle(m, ev.Leave()), SendLeaveGroup)
    return Reached(t, m, leave.request_id, Request.LEAVE_GROUP)


def _closed() -> Reached:
    # the poll watchdog's LeaveGroup is still in flight when the close completes
    t = Script()
    m = t.machine()
    t.bring_to_stable(m, owned=OWNED)
    t.now = t.max_poll_interval_s + 1
    cmds = t.tick(m)
    leave = only(of_kind(cmds, SendLeaveGroup), SendLeaveGroup)
    only(of_kind(cmds, DeliverStep), DeliverStep)  # the owned partitions are lost
    t.handle(m, ev.Leave())
    assert t.handle(m, t.step_completed()) == []  # the member id was reset: no LeaveGroup of its own
    return Reached(t, m, leave.request_id, Request.LEAVE_GROUP)


def _fatal() -> Reached:
    reached = _stable()
    t, m = reached.t, reached.m
    only(t.handle(m, t.heartbeat_response(GROUP_AUTHORIZATION_FAILED)), Fail)
    return Reached(t, m, reached.request_id, reached.request)


REACH: dict[MemberState, Callable[[], Reached]] = {
    MemberState.UNJOINED: _unjoined,
    MemberState.PREPARING: _preparing,
    MemberState.JOINING: _joining,
    MemberState.ASSIGNING: _assigning,
    MemberState.SYNCING: _syncing,
    MemberState.RECONCILING: _reconciling,
    MemberState.STABLE: _stable,
    MemberState.LEAVING: _leaving,
    MemberState.CLOSED: _closed,
    MemberState.FATAL: _fatal,
}


def _reach(state: MemberState) -> Reached:
    reached = REACH[state]()
    assert reached.m.state is state
    return reached


# ------------------------------------------------------------------ one event of each type
EVENTS: dict[type, Callable[[Reached, int], Any]] = {
    ev.Subscribe: lambda r, rid: ev.Subscribe(frozenset({"b"})),
    ev.Polled: lambda r, rid: ev.Polled(),
    ev.StepCompleted: lambda r, rid: ev.StepCompleted(1),
    ev.Leave: lambda r, rid: ev.Leave(),
    ev.RequestRejoin: lambda r, rid: ev.RequestRejoin("test"),
    ev.CoordinatorDead: lambda r, rid: ev.CoordinatorDead("test"),
    ev.CommitErrorObserved: lambda r, rid: ev.CommitErrorObserved(r.m.generation, ILLEGAL_GENERATION),
    ev.FindCoordinatorResponded: lambda r, rid: ev.FindCoordinatorResponded(
        request_id=rid, node_id=9, host="y", port=2
    ),
    ev.JoinGroupResponded: lambda r, rid: ev.JoinGroupResponded(
        request_id=rid, generation_id=9, protocol_name="range", leader="x", member_id=MEMBER_ID
    ),
    ev.AssignmentComputed: lambda r, rid: ev.AssignmentComputed(rid, ()),
    ev.AssignmentFailed: lambda r, rid: ev.AssignmentFailed(rid, RuntimeError("test")),
    ev.SyncGroupResponded: lambda r, rid: ev.SyncGroupResponded(request_id=rid, assignment=b""),
    ev.HeartbeatResponded: lambda r, rid: ev.HeartbeatResponded(request_id=rid),
    ev.LeaveGroupResponded: lambda r, rid: ev.LeaveGroupResponded(request_id=rid),
    ev.RequestFailed: lambda r, rid: ev.RequestFailed(rid, "test"),
}


def _event(kind: type, reached: Reached, request_id: int | None = None) -> Any:
    return EVENTS[kind](reached, reached.request_id if request_id is None else request_id)


def _cells(verdict: Verdict, *, states: tuple[MemberState, ...] = tuple(MemberState)) -> list[Any]:
    return [
        pytest.param(state, kind, id=f"{state.name}-{kind.__name__}")
        for state in states
        for kind in EVENT_TYPES
        if EVENT_TABLE[state][kind] is verdict
    ]


LIVE_STATES = tuple(s for s in MemberState if s is not MemberState.FATAL)


# ------------------------------------------------------------------ the table's shape
def test_table_has_a_verdict_for_every_state_and_event_type():
    assert set(EVENT_TABLE) == set(MemberState)
    for state in MemberState:
        assert set(EVENT_TABLE[state]) == set(EVENT_TYPES), state
        assert all(isinstance(verdict, Verdict) for verdict in EVENT_TABLE[state].values())
    # every event type has a handler, and the test knows how to build each
    assert set(GroupMachine._HANDLERS) == set(EVENT_TYPES)
    assert set(EVENTS) == set(EVENT_TYPES)
    assert set(REACH) == set(MemberState)


def test_table_every_response_answers_some_request_and_every_request_is_answerable():
    assert set(ANSWERS) == set(Request)
    assert {kind for kind in EVENT_TYPES if "request_id" in attrs.fields_dict(kind)} == RESPONSES
    for request, events in ANSWERS.items():
        assert ev.RequestFailed in events, request


def test_table_fatal_takes_nothing():
    assert set(EVENT_TABLE[MemberState.FATAL].values()) == {Verdict.ILLEGAL}


def test_table_which_events_joining_takes():
    row = EVENT_TABLE[MemberState.JOINING]
    handled = {kind for kind, verdict in row.items() if verdict is Verdict.HANDLE}
    assert handled == {
        ev.Subscribe, ev.Polled, ev.Leave, ev.RequestRejoin, ev.CoordinatorDead, ev.CommitErrorObserved,
        ev.JoinGroupResponded,
        ev.HeartbeatResponded,  # one sent in the generation being rejoined
        ev.LeaveGroupResponded,  # the poll watchdog's
        ev.RequestFailed,
    }
    assert {kind for kind, verdict in row.items() if verdict is Verdict.IGNORE} == set()
    assert {kind for kind, verdict in row.items() if verdict is Verdict.ILLEGAL} == {
        ev.StepCompleted, ev.FindCoordinatorResponded, ev.AssignmentComputed, ev.AssignmentFailed,
        ev.SyncGroupResponded,
    }


@pytest.mark.parametrize("state", list(MemberState), ids=lambda s: s.name)
def test_table_each_state_is_reachable_with_a_request_in_flight(state):
    reached = _reach(state)
    assert reached.request in Request


# ------------------------------------------------------------------ illegal: raise, change nothing
@pytest.mark.parametrize(("state", "kind"), _cells(Verdict.ILLEGAL, states=LIVE_STATES))
def test_table_illegal_event_raises_before_the_machine_changes(state, kind):
    reached = _reach(state)
    m = reached.m
    before = m.snapshot()
    with pytest.raises(ProtocolViolation, match=f"illegal in state {state.name}") as raised:
        m.handle(_event(kind, reached), reached.t.now)
    after = m.snapshot()
    # the poison is the only change (Rule 3): nothing the event would have done happened
    assert after.state is MemberState.FATAL
    assert after.fatal is raised.value
    # (``hold_at`` follows the state: a FATAL member's session clock no longer runs)
    assert after.hold_at == float("inf")
    assert attrs.evolve(after, state=before.state, state_name=before.state_name, fatal=before.fatal,
                        hold_at=before.hold_at) == before
    with pytest.raises(ProtocolViolation) as again:
        m.tick(reached.t.now + 100)
    assert again.value is raised.value


@pytest.mark.parametrize("kind", EVENT_TYPES, ids=lambda k: k.__name__)
def test_table_fatal_every_event_raises_the_stored_error_and_changes_nothing(kind):
    reached = _reach(MemberState.FATAL)
    m = reached.m
    before = m.snapshot()
    assert isinstance(before.fatal, FatalGroupError)
    with pytest.raises(FatalGroupError) as raised:
        m.handle(_event(kind, reached), reached.t.now)
    assert raised.value is before.fatal
    assert m.snapshot() == before


@pytest.mark.parametrize("state", LIVE_STATES, ids=lambda s: s.name)
def test_table_response_to_a_request_of_another_kind_is_illegal(state):
    reached = _reach(state)
    wrong = [
        kind
        for kind in sorted(RESPONSES, key=lambda k: k.__name__)
        if EVENT_TABLE[state][kind] is Verdict.HANDLE and kind not in ANSWERS[reached.request]
    ]
    for kind in wrong:
        reached = _reach(state)
        before = reached.m.snapshot()
        with pytest.raises(ProtocolViolation, match=f"cannot answer a {reached.request.value} request"):
            reached.m.handle(_event(kind, reached), reached.t.now)
        assert attrs.evolve(reached.m.snapshot(), state=before.state, state_name=before.state_name, fatal=None,
                            hold_at=before.hold_at) == before


def test_table_assignment_failed_naming_the_sync_group_no_longer_aborts_the_round():
    # the assignor's request and SyncGroup were one kind of request: this was taken as the
    # assignor failing, and the member left the round for a SyncGroup still in flight
    reached = _reach(MemberState.SYNCING)
    with pytest.raises(ProtocolViolation, match="illegal in state SYNCING"):
        reached.m.handle(ev.AssignmentFailed(reached.request_id, RuntimeError("x")), reached.t.now)


def test_table_subscribe_after_leave_is_illegal_while_the_close_step_runs():
    reached = _reach(MemberState.STABLE)
    t, m = reached.t, reached.m
    only(of_kind(t.handle(m, ev.Leave()), DeliverStep), DeliverStep)
    assert m.state is MemberState.STABLE  # the revoke step of the close is out
    before = m.snapshot()
    with pytest.raises(ProtocolViolation, match="subscribe after close"):
        m.handle(ev.Subscribe(frozenset({"b"})), t.now)
    assert attrs.evolve(m.snapshot(), state=before.state, state_name=before.state_name, fatal=None) == before


# ------------------------------------------------------------------ ignored: nothing changes
@pytest.mark.parametrize(("state", "kind"), _cells(Verdict.IGNORE))
def test_table_ignored_event_changes_nothing(state, kind):
    reached = _reach(state)
    m = reached.m
    before = (m.snapshot(), m.next_deadline(reached.t.now))
    assert m.handle(_event(kind, reached), reached.t.now) == []
    assert (m.snapshot(), m.next_deadline(reached.t.now)) == before


def test_table_a_second_leave_is_ignored():
    reached = _reach(MemberState.STABLE)
    t, m = reached.t, reached.m
    t.handle(m, ev.Leave("first"))
    before = m.snapshot()
    assert t.handle(m, ev.Leave("second")) == []
    assert m.snapshot() == before
    leave = only(t.handle(m, t.step_completed()), SendLeaveGroup)
    assert leave.members[0].reason == "first"


@pytest.mark.parametrize("state", LIVE_STATES, ids=lambda s: s.name)
@pytest.mark.parametrize("kind", sorted(RESPONSES, key=lambda k: k.__name__), ids=lambda k: k.__name__)
def test_table_stale_response_is_dropped_in_every_state(state, kind):
    # Rule 4 comes before the table: a response to no request in flight is never illegal
    reached = _reach(state)
    m = reached.m
    before = (m.snapshot(), m.next_deadline(reached.t.now))
    assert m.handle(_event(kind, reached, UNKNOWN_ID), reached.t.now) == []
    assert (m.snapshot(), m.next_deadline(reached.t.now)) == before
