"""GroupMachine: the first join (seed 001 steps 3-5): FindCoordinator, JoinGroup, SyncGroup."""

from __future__ import annotations

import pytest

from kgroup.assignors.base import MemberSubscription
from kgroup.errors import KGroupError, MalformedMetadata
from kgroup.membership import MemberState
from kgroup.membership import events as ev
from kgroup.membership.commands import (
    ComputeAssignment,
    DeliverStep,
    Fail,
    Notify,
    SendFindCoordinator,
    SendHeartbeat,
    SendJoinGroup,
    SendSyncGroup,
    WatchGroupTopics,
)
from kgroup.protocol.consumer_protocol import (
    Assignment,
    Subscription,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kgroup.protocol.group_api import JoinGroupMember
from tests.unit.machine_script import MEMBER_ID, NODE_ID, Script, kinds, of_kind, only, tp

# a truncated Subscription: version 3, then half of the topic count
BAD_SUBSCRIPTION = b"\x00\x03\x00\x00"
# a truncated Assignment: version 3, one topic, then the topic name cut short
BAD_ASSIGNMENT = b"\x00\x03\x00\x00\x00\x01\x00\x05ab"


def _joining(t: Script, topics: frozenset[str] = frozenset({"a"})):
    """A machine with its first JoinGroup (member id "") in flight."""
    m = t.machine()
    only(t.handle(m, ev.Subscribe(topics)), SendFindCoordinator)
    only(t.handle(m, t.coordinator_found()), SendJoinGroup)
    return m


def _joining_with_member_id(t: Script, topics: frozenset[str] = frozenset({"a"})):
    m = _joining(t, topics)
    only(t.handle(m, t.member_id_required()), SendJoinGroup)
    return m


# --------------------------------------------------------------------------- FindCoordinator


def test_machine_first_subscribe_emits_find_coordinator():
    t = Script()
    m = t.machine()
    cmd = only(t.handle(m, ev.Subscribe(frozenset({"a"}))), SendFindCoordinator)
    assert cmd.timeout_ms == 30000
    assert m.state is MemberState.UNJOINED
    assert m.coordinator is None


def test_machine_without_subscription_never_joins():
    t = Script()
    m = t.machine()
    cmds = t.tick(m, 0.0)
    if cmds:  # looking up the coordinator early is allowed; joining is not
        only(cmds, SendFindCoordinator)
        cmds = t.handle(m, t.coordinator_found())
    assert of_kind(cmds + t.tick(m, 1000.0), SendJoinGroup) == []
    assert m.state is MemberState.UNJOINED


def test_machine_find_coordinator_in_flight_is_not_duplicated():
    t = Script()
    m = t.machine()
    only(t.handle(m, ev.Subscribe(frozenset({"a"}))), SendFindCoordinator)
    assert of_kind(t.tick(m, 5.0), SendFindCoordinator) == []


# --------------------------------------------------------------------------- JoinGroup


def test_join_coordinator_found_sends_join_with_empty_member_id_and_encoded_protocols():
    t = Script()
    m = t.machine()
    t.handle(m, ev.Subscribe(frozenset({"b", "a"})))
    join = only(t.handle(m, t.coordinator_found()), SendJoinGroup)
    assert join.member_id == ""
    assert join.node_id == NODE_ID
    assert join.group_instance_id is None
    assert join.session_timeout_ms == 10000
    assert [name for name, _ in join.protocols] == ["range"]
    sub = decode_subscription(join.protocols[0][1])
    assert sub.topics == ("a", "b")
    assert sub.owned_partitions == ()
    assert sub.generation_id == -1
    assert m.state is MemberState.JOINING
    assert m.coordinator == NODE_ID


def test_join_several_assignors_send_one_protocol_each_in_preference_order():
    t = Script(assignors=("roundrobin", "range"))
    m = _joining(t, frozenset({"x"}))
    join = t.last_of(SendJoinGroup)
    assert [name for name, _ in join.protocols] == ["roundrobin", "range"]
    for _, metadata in join.protocols:
        assert decode_subscription(metadata).topics == ("x",)
    assert m.state is MemberState.JOINING


def test_join_member_id_required_rejoins_at_once_with_adopted_member_id():
    t = Script()
    m = _joining(t)
    first = t.last_of(SendJoinGroup)
    second = only(t.handle(m, t.member_id_required("adopted-1")), SendJoinGroup)
    assert second.member_id == "adopted-1"
    assert second.request_id != first.request_id
    assert second.protocols == first.protocols
    assert m.state is MemberState.JOINING
    assert m.generation.member_id == "adopted-1"
    assert not m.generation.is_valid()


def test_join_static_member_sends_group_instance_id():
    t = Script(group_instance_id="inst-1")
    m = _joining(t)
    assert t.last_of(SendJoinGroup).group_instance_id == "inst-1"
    assert m.state is MemberState.JOINING


@pytest.mark.parametrize(
    ("request_timeout_ms", "rebalance_timeout_ms", "expected_timeout_ms"),
    [
        (30000, None, 65000),  # rebalance timeout = max_poll_interval_ms = 60000
        (30000, 10000, 30000),  # request timeout wins
        (30000, 25000, 30000),  # equal
        (40000, 40000, 45000),
    ],
    ids=["default-rebalance", "request-wins", "equal", "rebalance-wins"],
)
def test_join_timeout_is_max_of_request_and_rebalance_plus_5s(
    request_timeout_ms, rebalance_timeout_ms, expected_timeout_ms
):
    t = Script(request_timeout_ms=request_timeout_ms, rebalance_timeout_ms=rebalance_timeout_ms)
    _joining(t)
    assert t.last_of(SendJoinGroup).timeout_ms == expected_timeout_ms


@pytest.mark.parametrize(
    ("rebalance_timeout_ms", "expected"),
    [(None, 60000), (20000, 20000)],
    ids=["default-is-max-poll-interval", "explicit"],
)
def test_join_rebalance_timeout_defaults_to_max_poll_interval(rebalance_timeout_ms, expected):
    t = Script(rebalance_timeout_ms=rebalance_timeout_ms)
    _joining(t)
    assert t.last_of(SendJoinGroup).rebalance_timeout_ms == expected


# --------------------------------------------------------------------------- leader / follower


def test_join_leader_gets_compute_assignment_with_decoded_member_subscriptions():
    t = Script(group_instance_id="inst-1")
    m = _joining_with_member_id(t, frozenset({"a", "b"}))
    own_metadata = t.last_of(SendJoinGroup).protocols[0][1]
    other = Subscription(
        topics=("b", "c"),
        user_data=b"ud",
        owned_partitions=(tp("b", 0), tp("c", 2)),
        generation_id=4,
        rack_id="rack-9",
    )
    members = (
        JoinGroupMember(member_id=MEMBER_ID, group_instance_id="inst-1", metadata=own_metadata),
        JoinGroupMember(member_id="m-2", group_instance_id=None, metadata=encode_subscription(other)),
    )
    cmd = only(
        t.handle(m, t.join_response(generation_id=5, members=members, protocol="range")),
        ComputeAssignment,
    )
    assert cmd.protocol == "range"
    assert cmd.members == (
        MemberSubscription(
            member_id=MEMBER_ID,
            group_instance_id="inst-1",
            topics=frozenset({"a", "b"}),
            owned=frozenset(),
            generation_id=-1,
            rack=None,
            user_data=None,
        ),
        MemberSubscription(
            member_id="m-2",
            group_instance_id=None,
            topics=frozenset({"b", "c"}),
            owned=frozenset({tp("b", 0), tp("c", 2)}),
            generation_id=4,
            rack="rack-9",
            user_data=b"ud",
        ),
    )
    assert m.state is MemberState.ASSIGNING
    assert m.generation.generation_id == 5

    plan = t.assignment_computed({MEMBER_ID: {tp("a", 0)}, "m-2": {tp("b", 0)}})
    sync = only(t.handle(m, plan), SendSyncGroup)
    assert tuple((a.member_id, a.assignment) for a in sync.assignments) == plan.assignments
    assert sync.generation_id == 5
    assert sync.member_id == MEMBER_ID
    assert sync.group_instance_id == "inst-1"
    assert sync.protocol_name == "range"
    assert sync.node_id == NODE_ID
    assert m.state is MemberState.SYNCING


def test_join_follower_sends_sync_with_empty_assignments():
    t = Script()
    m = _joining_with_member_id(t)
    sync = only(t.handle(m, t.join_response(generation_id=3, leader="the-leader")), SendSyncGroup)
    assert sync.assignments == ()
    assert sync.generation_id == 3
    assert sync.member_id == MEMBER_ID
    assert m.state is MemberState.SYNCING


def test_join_leader_with_skip_assignment_syncs_without_assignments():
    t = Script()
    m = _joining_with_member_id(t)
    cmds = t.handle(m, t.join_response(generation_id=2, skip_assignment=True))
    assert of_kind(cmds, ComputeAssignment) == []
    # KIP-814: the returning static leader keeps the plan and watches the group's topics from now
    # (Java onLeaderElected: assignmentSnapshot = metadataSnapshot)
    assert [type(c) for c in cmds] == [WatchGroupTopics, SendSyncGroup]
    assert cmds[0].generation_id == 2
    sync = cmds[1]
    assert sync.assignments == ()
    assert sync.generation_id == 2
    assert m.state is MemberState.SYNCING


# --------------------------------------------------------------------------- SyncGroup


@pytest.mark.parametrize(
    ("assignment", "expected"),
    [
        (encode_assignment(Assignment(partitions=(tp("a", 1), tp("a", 0)))), {tp("a", 0), tp("a", 1)}),
        (encode_assignment(Assignment(partitions=())), set()),
    ],
    ids=["two-partitions", "empty-assignment"],
)
@pytest.mark.parametrize("leader", [True, False], ids=["leader", "follower"])
def test_sync_response_delivers_step_with_assigned_and_invoke_assigned(assignment, expected, leader):
    t = Script()
    m = _joining_with_member_id(t)
    cmds = t.handle(m, t.join_response(leader=None if leader else "the-leader"))
    if leader:
        only(cmds, ComputeAssignment)
        t.handle(m, t.assignment_computed({MEMBER_ID: expected}))
    step = only(t.handle(m, t.sync_response(assignment=assignment)), DeliverStep).step
    assert step.invoke_assigned is True
    assert step.assigned == frozenset(expected)
    assert step.owned == frozenset(expected)
    assert step.revoked == frozenset()
    assert step.lost == frozenset()
    assert step.generation == m.generation
    assert step.generation.generation_id == 1
    assert m.state is MemberState.RECONCILING
    assert m.owned == frozenset(expected)


def test_step_completed_after_sync_goes_stable_and_heartbeats_every_interval():
    t = Script(now=100.0)
    m = t.machine()
    t.bring_to_stable(m, owned={tp("a", 0)})
    assert m.state is MemberState.STABLE
    assert m.next_deadline(100.0) == pytest.approx(103.0)
    assert of_kind(t.tick(m, 102.99), SendHeartbeat) == []
    hb = only(t.tick(m, 103.0), SendHeartbeat)
    assert hb.generation_id == 1
    assert hb.member_id == MEMBER_ID
    assert hb.node_id == NODE_ID
    assert t.handle(m, t.heartbeat_response(), now=103.2) == []
    assert t.tick(m, 105.9) == []
    nxt = only(t.tick(m, 106.0), SendHeartbeat)
    assert nxt.request_id != hb.request_id
    assert m.state is MemberState.STABLE


def test_heartbeat_not_sent_while_previous_is_in_flight():
    t = Script()
    m = t.machine()
    t.bring_to_stable(m, owned={tp("a", 0)})
    only(t.tick(m, 3.0), SendHeartbeat)
    assert of_kind(t.tick(m, 6.0), SendHeartbeat) == []


# --------------------------------------------------------------------------- malformed metadata


def _assert_rejoins_later(t: Script, m, cmds: list, now: float) -> None:
    """No Fail; exactly one JoinGroup within the backoff cap (1.2 s), with the member id kept."""
    assert of_kind(cmds, Fail) == []
    assert m.state is not MemberState.FATAL
    joins = of_kind(cmds, SendJoinGroup) + of_kind(t.tick(m, now + 1.5), SendJoinGroup)
    assert len(joins) == 1
    assert joins[0].member_id == MEMBER_ID
    assert m.state is MemberState.JOINING


def test_join_malformed_member_subscription_notifies_and_rejoins():
    t = Script()
    m = _joining_with_member_id(t)
    own = t.last_of(SendJoinGroup).protocols[0][1]
    members = (
        JoinGroupMember(member_id=MEMBER_ID, metadata=own),
        JoinGroupMember(member_id="m-bad", metadata=BAD_SUBSCRIPTION),
    )
    cmds = t.handle(m, t.join_response(members=members))
    assert of_kind(cmds, ComputeAssignment) == []
    notify = of_kind(cmds, Notify)
    assert len(notify) == 1
    assert isinstance(notify[0].error, MalformedMetadata)
    assert "m-bad" in str(notify[0].error)
    _assert_rejoins_later(t, m, cmds, t.now)


def test_join_malformed_member_subscription_rejoin_waits_for_backoff():
    # _abort_round's contract: "report it, rejoin after a backoff"
    t = Script()
    m = _joining_with_member_id(t)
    members = (JoinGroupMember(member_id="m-bad", group_instance_id=None, metadata=BAD_SUBSCRIPTION),)
    cmds = t.handle(m, t.join_response(members=members))
    assert kinds(cmds) == [Notify]
    assert of_kind(t.tick(m, t.now + 0.07), SendJoinGroup) == []  # first backoff >= 0.08 s
    assert len(of_kind(t.tick(m, t.now + 0.13), SendJoinGroup)) == 1


@pytest.mark.parametrize("assignment", [BAD_ASSIGNMENT, b"", b"\x00"], ids=["truncated", "zero-bytes", "one-byte"])
def test_sync_malformed_assignment_notifies_and_rejoins(assignment):
    # zero bytes: the leader gave this member no entry (Java's onJoinComplete refuses < 2 bytes)
    t = Script()
    m = _joining_with_member_id(t)
    only(t.handle(m, t.join_response(leader="the-leader")), SendSyncGroup)
    cmds = t.handle(m, t.sync_response(assignment=assignment))
    assert of_kind(cmds, DeliverStep) == []
    notify = of_kind(cmds, Notify)
    assert len(notify) == 1
    assert isinstance(notify[0].error, MalformedMetadata)
    assert m.owned == frozenset()
    # Java: a failed onJoinComplete raises from poll(); the generation is kept, nothing is lost
    assert m.generation.generation_id == 1
    _assert_rejoins_later(t, m, cmds, t.now)


def test_sync_malformed_assignment_rejoin_waits_for_backoff():
    t = Script()
    m = _joining_with_member_id(t)
    t.handle(m, t.join_response(leader="the-leader"))
    cmds = t.handle(m, t.sync_response(assignment=BAD_ASSIGNMENT))
    assert kinds(cmds) == [Notify]
    assert of_kind(t.tick(m, t.now + 0.07), SendJoinGroup) == []
    assert len(of_kind(t.tick(m, t.now + 0.13), SendJoinGroup)) == 1


# --------------------------------------------------------------------------- D8, D9 (correctness review)


def test_assignment_naming_a_topic_unsubscribed_during_the_join_is_not_applied():
    """Java onJoinComplete: an assignment that does not match the subscription is ignored and
    the member rejoins; no callback runs for the unsubscribed topic (before: applied and
    announced, and its records delivered)."""
    t = Script()
    m = _joining_with_member_id(t, frozenset({"a", "b"}))
    cmds = t.handle(m, t.join_response(leader="the-leader"))
    only(cmds, SendSyncGroup)
    t.handle(m, ev.Subscribe(frozenset({"a"})))  # changed while the round runs
    cmds = t.handle(m, t.sync_response([tp("a", 0), tp("b", 0)]))
    assert of_kind(cmds, DeliverStep) == []
    assert m.owned == frozenset()
    joins = of_kind(cmds + t.tick(m, t.now + 1.0), SendJoinGroup)
    assert len(joins) == 1
    assert decode_subscription(joins[0].protocols[0][1]).topics == ("a",)


def test_a_failed_leader_assignment_keeps_the_generation_and_loses_nothing():
    """D9: the assignor raising (or its metadata failing) aborts the round, but a cooperative
    member keeps its generation and its partitions: nothing is reported lost."""
    t = Script(assignors=("cooperative-sticky",))
    m = _joining_with_member_id(t)
    t.join_and_sync(m, [tp("a", 0), tp("a", 1)])
    t.handle(m, t.step_completed())
    assert m.state is MemberState.STABLE
    only(t.handle(m, ev.RequestRejoin("test")), SendJoinGroup)
    cmds = t.handle(m, t.join_response(generation_id=2))
    request = only(cmds, ComputeAssignment)
    cmds = t.handle(m, ev.AssignmentFailed(request.request_id, KGroupError("metadata timed out")))
    assert of_kind(cmds, DeliverStep) == []
    assert only(cmds, Notify).error.args == ("metadata timed out",)
    assert m.generation.generation_id == 2
    assert m.owned == frozenset({tp("a", 0), tp("a", 1)})
    later = t.tick(m, t.now + 5.0)
    assert of_kind(later, DeliverStep) == []
    join = only(later, SendJoinGroup)
    owned = decode_subscription(join.protocols[0][1]).owned_partitions
    assert set(owned) == {tp("a", 0), tp("a", 1)}


def test_join_and_leave_reasons_are_cut_to_255_characters():
    """D7: Java JoinGroupRequest.maybeTruncateReason; Kafka rejects strings over 32,767 bytes."""
    topics = frozenset(f"topic-{i:05d}" for i in range(2000))
    t = Script()
    m = t.machine()
    t.handle(m, ev.Subscribe(topics))
    join = only(t.handle(m, t.coordinator_found()), SendJoinGroup)
    assert len(join.reason) == 255
    assert join.reason.startswith("subscription changed to [")
