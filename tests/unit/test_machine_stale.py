"""GroupMachine fencing: a response the machine no longer waits for is dropped (design.md 2.3,
Java's ``generationUnchanged()`` generalised)."""

from __future__ import annotations

import pytest

from kgroup._error_codes import ILLEGAL_GENERATION, NOT_COORDINATOR, UNKNOWN_MEMBER_ID
from kgroup.membership import GroupMachine
from kgroup.membership import events as ev
from kgroup.membership.commands import (
    DeliverStep,
    SendFindCoordinator,
    SendHeartbeat,
    SendJoinGroup,
    SendSyncGroup,
)
from kgroup.protocol.consumer_protocol import Assignment, encode_assignment
from tests.unit.machine_script import MEMBER_ID, Script, only, tp

OWNED = frozenset({tp("a", 0), tp("a", 1)})
NEW = frozenset({tp("a", 2)})
UNKNOWN_ID = 999


def _view(m: GroupMachine) -> tuple:
    return (m.state, m.generation, m.owned, m.coordinator, m.next_deadline(1.0))


STALE_EVENTS = [
    pytest.param(
        ev.FindCoordinatorResponded(request_id=UNKNOWN_ID, node_id=9, host="y", port=2), id="FindCoordinator"
    ),
    pytest.param(
        ev.JoinGroupResponded(
            request_id=UNKNOWN_ID, generation_id=9, protocol_name="range", leader="x", member_id="x"
        ),
        id="JoinGroup",
    ),
    pytest.param(
        ev.JoinGroupResponded(request_id=UNKNOWN_ID, error_code=UNKNOWN_MEMBER_ID), id="JoinGroup-UNKNOWN_MEMBER_ID"
    ),
    pytest.param(
        ev.SyncGroupResponded(request_id=UNKNOWN_ID, assignment=encode_assignment(Assignment(partitions=tuple(NEW)))),
        id="SyncGroup",
    ),
    pytest.param(
        ev.SyncGroupResponded(request_id=UNKNOWN_ID, error_code=ILLEGAL_GENERATION), id="SyncGroup-ILLEGAL_GENERATION"
    ),
    pytest.param(
        ev.HeartbeatResponded(request_id=UNKNOWN_ID, error_code=ILLEGAL_GENERATION), id="Heartbeat-ILLEGAL_GENERATION"
    ),
    pytest.param(
        ev.HeartbeatResponded(request_id=UNKNOWN_ID, error_code=NOT_COORDINATOR), id="Heartbeat-NOT_COORDINATOR"
    ),
    pytest.param(ev.LeaveGroupResponded(request_id=UNKNOWN_ID), id="LeaveGroup"),
    pytest.param(ev.AssignmentComputed(UNKNOWN_ID, ((MEMBER_ID, b""),)), id="AssignmentComputed"),
    pytest.param(ev.AssignmentFailed(UNKNOWN_ID, RuntimeError("x")), id="AssignmentFailed"),
    pytest.param(ev.RequestFailed(UNKNOWN_ID, "disconnected"), id="RequestFailed"),
]


@pytest.mark.parametrize("event", STALE_EVENTS)
def test_stale_unknown_request_id_in_stable_is_ignored(event):
    t = Script()
    m = t.machine()
    t.bring_to_stable(m, owned=OWNED)
    before = _view(m)
    assert t.handle(m, event, now=1.0) == []
    assert _view(m) == before


@pytest.mark.parametrize("event", STALE_EVENTS)
def test_stale_unknown_request_id_while_joining_is_ignored(event):
    t = Script()
    m = t.machine()
    t.handle(m, ev.Subscribe(frozenset({"a"})))
    t.handle(m, t.coordinator_found())
    join = t.last_of(SendJoinGroup)
    before = _view(m)
    assert t.handle(m, event, now=1.0) == []
    assert _view(m) == before
    # the real response still completes the join
    only(t.handle(m, t.join_response(leader="other", request_id=join.request_id), now=1.0), SendSyncGroup)


@pytest.mark.parametrize(
    "late",
    [
        pytest.param(
            lambda rid: ev.HeartbeatResponded(request_id=rid, error_code=ILLEGAL_GENERATION), id="ILLEGAL_GENERATION"
        ),
        pytest.param(
            lambda rid: ev.HeartbeatResponded(request_id=rid, error_code=UNKNOWN_MEMBER_ID), id="UNKNOWN_MEMBER_ID"
        ),
        pytest.param(
            lambda rid: ev.HeartbeatResponded(request_id=rid, error_code=NOT_COORDINATOR), id="NOT_COORDINATOR"
        ),
        pytest.param(lambda rid: ev.RequestFailed(rid, "timed out"), id="RequestFailed"),
    ],
)
def test_stale_heartbeat_of_old_generation_is_ignored_after_rejoin(late):
    t = Script()
    m = t.machine()
    t.bring_to_stable(m, owned=OWNED)
    old_hb = only(t.tick(m, 3.0), SendHeartbeat)  # generation 1, answered only at the end
    only(t.handle(m, ev.RequestRejoin("test"), now=3.5), DeliverStep)
    only(t.handle(m, t.step_completed(), now=3.6), SendJoinGroup)
    t.now = 4.0
    t.join_and_sync(m, NEW, leader=False, generation_id=2)
    t.handle(m, t.step_completed())
    before = _view(m)
    assert m.generation.generation_id == 2

    assert t.handle(m, late(old_hb.request_id), now=4.5) == []
    assert _view(m) == before
    assert m.owned == NEW


@pytest.mark.parametrize("api", ["JoinGroup", "SyncGroup"])
def test_stale_response_after_coordinator_dead_is_ignored(api):
    t = Script()
    m = t.machine()
    t.handle(m, ev.Subscribe(frozenset({"a"})))
    t.handle(m, t.coordinator_found())
    only(t.handle(m, t.member_id_required()), SendJoinGroup)
    if api == "JoinGroup":
        late = t.join_response(generation_id=5, leader="other")
    else:
        only(t.handle(m, t.join_response(generation_id=5, leader="other")), SendSyncGroup)
        late = t.sync_response(NEW)

    only(t.handle(m, ev.CoordinatorDead("disconnected"), now=1.0), SendFindCoordinator)
    assert m.coordinator is None
    before = _view(m)
    assert t.handle(m, late, now=1.1) == []
    assert _view(m) == before
    assert m.owned == frozenset()

    # the member rejoins through the new coordinator, with its member id
    rejoin = only(t.handle(m, t.coordinator_found(node_id=8), now=1.2), SendJoinGroup)
    assert rejoin.node_id == 8
    assert rejoin.member_id == MEMBER_ID


def test_stale_duplicate_join_response_is_ignored():
    t = Script()
    m = t.machine()
    t.handle(m, ev.Subscribe(frozenset({"a"})))
    t.handle(m, t.coordinator_found())
    t.handle(m, t.member_id_required())
    response = t.join_response(generation_id=3, leader="other")
    only(t.handle(m, response), SendSyncGroup)
    before = _view(m)
    assert t.handle(m, response) == []
    assert _view(m) == before
