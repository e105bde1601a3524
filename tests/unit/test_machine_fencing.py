"""FENCED_INSTANCE_ID (82) on every path of a static member (KIP-345, seed 004 "Fencing").

``test_machine_errors.py`` already feeds FENCED_INSTANCE_ID to JoinGroup, SyncGroup and
Heartbeat in the state where each is expected. This file adds the paths it does not reach:

* OffsetCommit (the poll thread reports it as ``CommitErrorObserved``), also for a commit
  sent with an older generation;
* LeaveGroup, which Java's ``LeaveGroupResponseHandler`` only logs: closing goes on;
* the restarted static leader's skip_assignment round (KIP-814) fenced at SyncGroup, and a
  parked JoinGroup fenced because a second process took the instance id;
* fencing while partitions are owned (cooperative) and while the close revoke step runs.

Fatal means (docs/protocol.md): one ``Fail`` carrying ``FencedInstanceIdError`` that names
the instance id, the machine FATAL, and no further group request (no heartbeat, no
JoinGroup, no LeaveGroup) from any later ``handle``/``tick``: both raise the stored error.
The poll thread runs ``on_partitions_lost`` when it gets the ``Fail``.
"""

from __future__ import annotations

import pytest

from kgroup._error_codes import FENCED_INSTANCE_ID
from kgroup.errors import Api, FencedInstanceIdError
from kgroup.membership import GroupMachine, MemberState
from kgroup.membership import events as ev
from kgroup.membership.commands import (
    ComputeAssignment,
    DeliverStep,
    Fail,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
    WatchGroupTopics,
)
from kgroup.types import Generation
from tests.unit.machine_script import MEMBER_ID, Script, kinds, of_kind, only, tp

INSTANCE_ID = "orders-0"
OWNED = frozenset({tp("a", 0), tp("a", 1)})


def _stable_static(**overrides) -> tuple[Script, GroupMachine]:
    t = Script(group_instance_id=INSTANCE_ID, **overrides)
    m = t.machine()
    t.bring_to_stable(m, owned=OWNED)  # generation 1, member MEMBER_ID, at now=0.0
    return t, m


def _assert_fenced(m: GroupMachine, cmds: list, api: Api) -> FencedInstanceIdError:
    """One Fail, last, with a FencedInstanceIdError of ``api`` naming the instance id; and
    nothing is ever sent again."""
    fails = of_kind(cmds, Fail)
    assert len(fails) == 1, cmds
    assert isinstance(cmds[-1], Fail), cmds
    assert of_kind(cmds, SendLeaveGroup) == []
    assert of_kind(cmds, SendJoinGroup) == []
    error = fails[0].error
    assert isinstance(error, FencedInstanceIdError)
    assert error.api is api
    assert error.code == FENCED_INSTANCE_ID
    assert "FENCED_INSTANCE_ID" in str(error)
    # the same explanation whichever API noticed it (machine._fatal_response)
    assert f"group_instance_id {INSTANCE_ID!r} was fenced" in str(error)
    assert m.state is MemberState.FATAL
    assert m.snapshot().fatal is error
    assert m.next_deadline(10.0) == float("inf")
    for later in (lambda: m.tick(1000.0), lambda: m.handle(ev.Polled(), 1000.0),
                  lambda: m.handle(ev.Leave("closing"), 1000.0)):
        with pytest.raises(FencedInstanceIdError) as raised:
            later()
        assert raised.value is error
    return error


# --------------------------------------------------------------------------- OffsetCommit


def test_offset_commit_fenced_is_fatal_and_names_the_instance_id():
    t, m = _stable_static()
    cmds = t.handle(m, ev.CommitErrorObserved(m.generation, FENCED_INSTANCE_ID, "OffsetCommit"), now=1.0)
    _assert_fenced(m, cmds, Api.OFFSET_COMMIT)


def test_offset_commit_fenced_with_an_older_generation_is_not_fatal():
    # a commit sent in generation 1 answers after the member moved on: Java's
    # OffsetCommitResponseHandler raises FENCED_INSTANCE_ID only if generationUnchanged();
    # otherwise that commit fails (RebalanceInProgress / CommitFailed) and the member goes on
    t, m = _stable_static()
    only(t.handle(m, ev.RequestRejoin("test"), now=1.0), DeliverStep)
    only(t.handle(m, t.step_completed(), now=1.0), SendJoinGroup)
    t.join_and_sync(m, OWNED, generation_id=2)
    t.handle(m, t.step_completed(), now=1.5)
    assert m.generation.generation_id == 2
    old = Generation(1, MEMBER_ID, "range")
    cmds = t.handle(m, ev.CommitErrorObserved(old, FENCED_INSTANCE_ID, "OffsetCommit"), now=2.0)
    assert of_kind(cmds, Fail) == []
    assert m.state is MemberState.STABLE
    assert m.generation.generation_id == 2


def test_offset_commit_fenced_while_the_close_revoke_runs_sends_no_leave_group():
    # close(group_membership="leave") of a static member: the revoke callback commits and is
    # fenced; the member must not send LeaveGroup with an instance id another process owns
    t, m = _stable_static()
    only(t.handle(m, ev.Leave("scaling down", send_leave_group=True), now=1.0), DeliverStep)
    cmds = t.handle(m, ev.CommitErrorObserved(m.generation, FENCED_INSTANCE_ID, "OffsetCommit"), now=1.1)
    _assert_fenced(m, cmds, Api.OFFSET_COMMIT)
    assert of_kind(t.log, SendLeaveGroup) == []


# --------------------------------------------------------------------------- LeaveGroup


def test_leave_group_fenced_is_ignored_and_the_member_closes():
    # Java's LeaveGroupResponseHandler logs the error; the consumer closes regardless
    t, m = _stable_static()
    only(t.handle(m, ev.Leave("scaling down", send_leave_group=True), now=1.0), DeliverStep)
    leave = only(t.handle(m, t.step_completed(), now=1.1), SendLeaveGroup)
    assert leave.members[0].group_instance_id == INSTANCE_ID
    assert leave.members[0].member_id == MEMBER_ID
    assert t.handle(m, t.leave_response(FENCED_INSTANCE_ID), now=1.2) == []
    assert m.state is MemberState.CLOSED
    assert m.snapshot().fatal is None
    assert t.tick(m, 100.0) == []


# --------------------------------------------------------------------------- Heartbeat


def test_heartbeat_fenced_while_the_close_revoke_runs_is_fatal_and_sends_no_leave_group():
    t, m = _stable_static()
    only(t.handle(m, ev.Leave("scaling down", send_leave_group=True), now=1.0), DeliverStep)
    hb = only(t.tick(m, 3.0), SendHeartbeat)  # heartbeats continue while the revoke runs
    assert hb.group_instance_id == INSTANCE_ID
    cmds = t.handle(m, t.heartbeat_response(FENCED_INSTANCE_ID), now=3.1)
    _assert_fenced(m, cmds, Api.HEARTBEAT)
    assert of_kind(t.log, SendLeaveGroup) == []


def test_heartbeat_fenced_with_owned_partitions_cooperative_fails_without_a_revoke_step():
    # cooperative members keep their partitions across a rebalance; fencing must not hand
    # them to on_partitions_revoked (which could commit): the poll thread reports them lost
    t, m = _stable_static(assignors=("cooperative-sticky",))
    only(t.tick(m, 3.0), SendHeartbeat)
    cmds = t.handle(m, t.heartbeat_response(FENCED_INSTANCE_ID), now=3.1)
    _assert_fenced(m, cmds, Api.HEARTBEAT)
    assert of_kind(cmds, DeliverStep) == []


# --------------------------------------------------------------------------- JoinGroup / SyncGroup


def test_parked_join_fenced_by_a_second_process_is_fatal_with_partitions_still_owned():
    # cooperative: the rejoin keeps OWNED; while the JoinGroup is parked another process
    # joins with the same instance id and the coordinator answers the parked join FENCED
    t, m = _stable_static(assignors=("cooperative-sticky",))
    join = only(t.handle(m, ev.RequestRejoin("test"), now=1.0), SendJoinGroup)
    assert join.group_instance_id == INSTANCE_ID
    assert join.member_id == MEMBER_ID
    assert m.owned == OWNED
    cmds = t.handle(m, t.join_response(FENCED_INSTANCE_ID), now=2.0)
    _assert_fenced(m, cmds, Api.JOIN_GROUP)


def test_restarted_static_leader_skip_assignment_sync_fenced_is_fatal():
    # KIP-814: the restarted leader gets skip_assignment and syncs without a plan; if another
    # process took the instance id meanwhile, SyncGroup answers FENCED
    t = Script(group_instance_id=INSTANCE_ID)
    m = t.machine()
    t.handle(m, ev.Subscribe(frozenset({"a"})), now=0.0)
    cmds = t.handle(m, t.coordinator_found(), now=0.0)
    join = only(cmds, SendJoinGroup)
    assert join.member_id == ""
    assert join.group_instance_id == INSTANCE_ID
    cmds = t.handle(m, t.join_response(generation_id=5, member_id="orders-0-new", skip_assignment=True), now=0.1)
    assert kinds(cmds) == [WatchGroupTopics, SendSyncGroup]  # no ComputeAssignment: the plan is kept
    assert cmds[0] == WatchGroupTopics(5, frozenset({"a"}))  # Java: assignmentSnapshot = metadataSnapshot
    sync = cmds[1]
    assert of_kind(t.log, ComputeAssignment) == []
    assert sync.assignments == ()
    assert sync.group_instance_id == INSTANCE_ID
    cmds = t.handle(m, t.sync_response(error_code=FENCED_INSTANCE_ID), now=0.2)
    _assert_fenced(m, cmds, Api.SYNC_GROUP)


def test_commit_errors_take_effect_on_the_group_in_the_machine_only() -> None:
    """The offsets client reports every group-level commit error as ``CommitErrorObserved``; the machine decides."""
    from kgroup._error_codes import NOT_COORDINATOR, REBALANCE_IN_PROGRESS
    from kgroup.config import ConsumerConfig
    from kgroup.membership.consumer_group import ConsumerGroupMachine

    classic = GroupMachine(ConsumerConfig(bootstrap_servers="k:9092", group_id="g"))
    assert classic.coordinator is None
    (find,) = classic.handle(ev.Subscribe({"t"}), 0.0)
    classic.handle(ev.FindCoordinatorResponded(request_id=find.request_id, error_code=0, node_id=1), 0.0)
    assert classic.coordinator == 1
    classic.handle(ev.CommitErrorObserved(Generation(), NOT_COORDINATOR, "OffsetFetch"), 0.0)
    assert classic.coordinator is None
    consumer = ConsumerGroupMachine(ConsumerConfig(bootstrap_servers="k:9092", group_id="g", group_protocol="consumer"))
    consumer.handle(ev.Subscribe({"t"}), 0.0)
    (find_cg,) = consumer.handle(ev.Polled(), 0.0)
    consumer.handle(ev.FindCoordinatorResponded(request_id=find_cg.request_id, error_code=0, node_id=1), 0.0)
    assert consumer.coordinator == 1
    consumer.handle(ev.CommitErrorObserved(Generation(), REBALANCE_IN_PROGRESS, "OffsetCommit"), 0.0)
    assert consumer.coordinator == 1  # the broker decides when to rebalance
    consumer.handle(ev.CommitErrorObserved(Generation(), NOT_COORDINATOR, "OffsetCommit"), 0.0)
    assert consumer.coordinator is None
