"""GroupMachine shutdown (design.md 2.5 rule 7): revoke, then LeaveGroup (dynamic members),
then CLOSED; static members skip LeaveGroup (KIP-345)."""

from __future__ import annotations

import pytest

from kgroup._error_codes import COORDINATOR_NOT_AVAILABLE, UNKNOWN_MEMBER_ID
from kgroup.membership import MemberState
from kgroup.membership import events as ev
from kgroup.membership.commands import (
    DeliverStep,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
)
from tests.unit.machine_script import MEMBER_ID, NODE_ID, Script, of_kind, only, tp

OWNED = frozenset({tp("a", 0), tp("a", 1)})
REASON = "shutting down for the test"


def _stable(owned=OWNED, **overrides):
    t = Script(**overrides)
    m = t.machine()
    t.bring_to_stable(m, owned=owned)
    return t, m


def test_close_from_stable_revokes_owned_then_sends_leave_group_with_reason():
    t, m = _stable()
    step = only(t.handle(m, ev.Leave(REASON), now=1.0), DeliverStep).step
    assert step.revoked == OWNED
    assert step.lost == frozenset()
    assert step.assigned == frozenset()
    assert step.owned == frozenset()
    assert step.generation.generation_id == 1  # commits inside the revoke use it
    assert m.owned == frozenset()

    leave = only(t.handle(m, t.step_completed(), now=1.5), SendLeaveGroup)
    assert leave.members[0].reason == REASON
    assert leave.members[0].member_id == MEMBER_ID
    assert leave.members[0].group_instance_id is None
    assert leave.node_id == NODE_ID
    assert m.state is MemberState.LEAVING

    assert t.handle(m, t.leave_response(), now=1.6) == []
    assert m.state is MemberState.CLOSED
    assert t.tick(m, 100.0) == []
    assert m.next_deadline(100.0) == float("inf")


@pytest.mark.parametrize(
    "response",
    [
        pytest.param(lambda t: t.leave_response(COORDINATOR_NOT_AVAILABLE), id="COORDINATOR_NOT_AVAILABLE"),
        pytest.param(lambda t: t.leave_response(UNKNOWN_MEMBER_ID), id="UNKNOWN_MEMBER_ID"),
        pytest.param(
            lambda t: ev.RequestFailed(t.last_of(SendLeaveGroup).request_id, "disconnected"),
            id="RequestFailed",
        ),
    ],
)
def test_close_leave_group_failure_still_closes(response):
    t, m = _stable()
    t.handle(m, ev.Leave(REASON), now=1.0)
    only(t.handle(m, t.step_completed(), now=1.5), SendLeaveGroup)
    assert t.handle(m, response(t), now=1.6) == []
    assert m.state is MemberState.CLOSED


def test_close_sends_no_heartbeats_while_leaving():
    t, m = _stable()
    t.handle(m, ev.Leave(REASON), now=1.0)
    t.handle(m, t.step_completed(), now=1.5)
    assert of_kind(t.tick(m, 3.0) + t.tick(m, 6.0), SendHeartbeat) == []
    assert m.state is MemberState.LEAVING


def test_close_static_member_sends_no_leave_group_and_closes_after_the_step():
    t, m = _stable(group_instance_id="inst-1")
    step = only(t.handle(m, ev.Leave(REASON), now=1.0), DeliverStep).step
    assert step.revoked == OWNED
    assert m.state is not MemberState.CLOSED
    assert t.handle(m, t.step_completed(), now=1.5) == []
    assert m.state is MemberState.CLOSED
    assert of_kind(t.log, SendLeaveGroup) == []


def test_close_static_member_may_ask_for_leave_group():
    t, m = _stable(group_instance_id="inst-1")
    t.handle(m, ev.Leave(REASON, send_leave_group=True), now=1.0)
    leave = only(t.handle(m, t.step_completed(), now=1.5), SendLeaveGroup)
    assert leave.members[0].group_instance_id == "inst-1"


def test_close_dynamic_member_may_remain_in_the_group():
    # KIP-1092 GroupMembershipOperation.REMAIN: the coordinator expires it after session_timeout_ms
    t, m = _stable()
    step = only(t.handle(m, ev.Leave(REASON, send_leave_group=False), now=1.0), DeliverStep).step
    assert step.revoked == OWNED
    assert t.handle(m, t.step_completed(), now=1.5) == []
    assert m.state is MemberState.CLOSED
    assert of_kind(t.log, SendLeaveGroup) == []


def test_close_with_nothing_owned_sends_leave_group_at_once():
    t, m = _stable(owned=frozenset())
    leave = only(t.handle(m, ev.Leave(REASON), now=1.0), SendLeaveGroup)
    assert leave.members[0].reason == REASON
    assert m.state is MemberState.LEAVING


def test_close_while_joining_leaves_and_ignores_the_late_join_response():
    t = Script()
    m = t.machine()
    t.handle(m, ev.Subscribe(frozenset({"a"})))
    t.handle(m, t.coordinator_found())
    only(t.handle(m, t.member_id_required()), SendJoinGroup)
    join_rid = t.last_of(SendJoinGroup).request_id
    leave = only(t.handle(m, ev.Leave(REASON), now=1.0), SendLeaveGroup)
    assert leave.members[0].member_id == MEMBER_ID
    late = t.join_response(generation_id=4, leader="other", request_id=join_rid)
    assert of_kind(t.handle(m, late, now=1.1), SendSyncGroup) == []
    assert m.state is MemberState.LEAVING
    t.handle(m, t.leave_response(), now=1.2)
    assert m.state is MemberState.CLOSED


def test_close_heartbeats_continue_while_the_revoke_step_runs():
    # design.md 2.5 rule 4 (Java semantics): heartbeats keep flowing while a listener runs, so
    # a slow on_partitions_revoked (committing offsets) at close keeps the generation alive
    t, m = _stable()
    only(t.handle(m, ev.Leave(REASON), now=1.0), DeliverStep)
    hb = only(t.tick(m, 3.0), SendHeartbeat)
    assert hb.generation_id == 1
    assert hb.member_id == MEMBER_ID


def test_close_slow_revoke_with_answered_heartbeats_still_sends_leave_group():
    t, m = _stable()
    only(t.handle(m, ev.Leave(REASON), now=1.0), DeliverStep)
    for now in (3.0, 6.0, 9.0, 12.0, 15.0, 18.0):  # the revoke callback takes 19 s
        for hb in of_kind(t.tick(m, now), SendHeartbeat):
            t.handle(m, t.heartbeat_response(request_id=hb.request_id), now=now)
    assert m.coordinator == NODE_ID
    leave = only(t.handle(m, t.step_completed(), now=20.0), SendLeaveGroup)
    assert leave.members[0].reason == REASON
