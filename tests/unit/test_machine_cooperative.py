"""GroupMachine, incremental cooperative protocol (KIP-429; seed 001 "Incremental cooperative").

The rules under test, in Java's ``ConsumerCoordinator`` terms:

* onJoinPrepare: with a valid generation, revoke only partitions of topics no longer
  subscribed; everything else stays owned (and keeps being consumed) through the rebalance;
* the JoinGroup Subscription carries the owned partitions and the generation (KIP-792);
* onJoinComplete: revoke ``owned - assigned``, assign ``assigned - owned``, in one step whose
  callbacks run revoked-then-assigned; a non-empty revocation requests a second rebalance;
* a lost generation loses every owned partition (onPartitionsLost), never revokes them.
"""

from __future__ import annotations

from kgroup._error_codes import ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID
from kgroup.assignors import RangeAssignor
from kgroup.membership import MemberState
from kgroup.membership import events as ev
from kgroup.membership.commands import (
    ComputeAssignment,
    DeliverStep,
    SendHeartbeat,
    SendJoinGroup,
    SendSyncGroup,
)
from kgroup.protocol.consumer_protocol import decode_subscription
from kgroup.protocol.group_api import JoinGroupMember
from kgroup.types import RebalanceProtocol
from tests.unit.machine_script import MEMBER_ID, Script, kinds, of_kind, only, tp


class CooperativeRange(RangeAssignor):
    """Range's plan under the cooperative protocol: enough to drive the machine's rules."""

    name = "cooperative-range-test"
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)


OWNED = frozenset({tp("a", 0), tp("a", 1)})


def _stable(owned=OWNED, topics=None):
    t = Script(assignors=(CooperativeRange(),))
    m = t.machine()
    t.bring_to_stable(m, owned=owned, topics=topics)
    return t, m


def _rejoin_signalled(t: Script, m) -> SendJoinGroup:
    """Heartbeat at 3.0 answered REBALANCE_IN_PROGRESS at 3.1: cooperative joins at once."""
    only(t.tick(m, 3.0), SendHeartbeat)
    return only(t.handle(m, t.heartbeat_response(REBALANCE_IN_PROGRESS), now=3.1), SendJoinGroup)


def _sync(t: Script, m, assigned, *, now: float, generation_id: int = 2) -> DeliverStep:
    """Answer the outstanding JoinGroup as a follower and the SyncGroup with ``assigned``."""
    t.now = now
    only(t.handle(m, t.join_response(generation_id=generation_id, leader="someone-else")), SendSyncGroup)
    return only(t.handle(m, t.sync_response(assigned)), DeliverStep)


def test_an_all_cooperative_assignor_list_runs_the_cooperative_protocol():
    assert Script(assignors=(CooperativeRange(),)).config.protocol is RebalanceProtocol.COOPERATIVE
    # Java's rule: one eager-only assignor in the list makes the member eager
    assert Script(assignors=(CooperativeRange(), "range")).config.protocol is RebalanceProtocol.EAGER


def test_rebalance_in_progress_joins_at_once_without_revoking_anything():
    t, m = _stable()
    join = _rejoin_signalled(t, m)
    assert of_kind(t.log, DeliverStep)[-1].step.assigned == OWNED  # the last step is the old assign
    assert m.owned == OWNED
    assert m.state is MemberState.JOINING
    assert join.member_id == MEMBER_ID


def test_join_subscription_carries_owned_partitions_and_generation():
    t, m = _stable()
    join = _rejoin_signalled(t, m)
    sub = decode_subscription(join.protocols[0][1])
    assert set(sub.owned_partitions) == OWNED
    assert sub.generation_id == 1
    assert join.protocols[0][0] == "cooperative-range-test"


def test_no_heartbeats_while_the_cooperative_join_is_parked_and_the_partitions_stay_owned():
    # Java's HeartbeatThread is disabled while the member "has not joined" (PREPARING_REBALANCE):
    # the parked JoinGroup itself keeps the member alive (the coordinator waits up to the
    # rebalance timeout), so a heartbeat would only be answered REBALANCE_IN_PROGRESS.
    t, m = _stable()
    _rejoin_signalled(t, m)
    assert of_kind(t.tick(m, 30.0), SendHeartbeat) == []
    assert m.state is MemberState.JOINING
    assert m.owned == OWNED


def test_sync_revokes_only_the_difference_and_requests_a_second_round():
    t, m = _stable()
    _rejoin_signalled(t, m)
    step = _sync(t, m, {tp("a", 0)}, now=4.0).step
    assert step.revoked == {tp("a", 1)}
    assert step.assigned == frozenset()
    assert step.lost == frozenset()
    assert step.owned == {tp("a", 0)}
    assert step.invoke_assigned is True
    assert m.state is MemberState.RECONCILING
    # KIP-429: once the revocation is done the member rejoins at once for the second round
    join = only(t.handle(m, t.step_completed(), now=4.5), SendJoinGroup)
    sub = decode_subscription(join.protocols[0][1])
    assert set(sub.owned_partitions) == {tp("a", 0)}
    assert sub.generation_id == 2


def test_second_round_assigning_only_new_partitions_ends_stable_without_another_join():
    t, m = _stable()
    _rejoin_signalled(t, m)
    _sync(t, m, {tp("a", 0)}, now=4.0)
    only(t.handle(m, t.step_completed(), now=4.5), SendJoinGroup)
    step = _sync(t, m, {tp("a", 0), tp("a", 2)}, now=5.0, generation_id=3).step
    assert step.revoked == frozenset()
    assert step.assigned == {tp("a", 2)}
    assert step.owned == {tp("a", 0), tp("a", 2)}
    assert t.handle(m, t.step_completed(), now=5.1) == []
    assert m.state is MemberState.STABLE
    assert m.owned == {tp("a", 0), tp("a", 2)}
    assert m.generation.generation_id == 3


def test_one_step_revokes_and_assigns_so_callbacks_run_revoked_then_assigned():
    t, m = _stable()
    _rejoin_signalled(t, m)
    step = _sync(t, m, {tp("a", 0), tp("a", 5)}, now=4.0).step
    assert step.revoked == {tp("a", 1)}
    assert step.assigned == {tp("a", 5)}
    assert step.owned == {tp("a", 0), tp("a", 5)}


def test_unchanged_assignment_still_delivers_an_empty_assigned_callback():
    t, m = _stable()
    _rejoin_signalled(t, m)
    step = _sync(t, m, OWNED, now=4.0).step
    assert (step.revoked, step.assigned, step.invoke_assigned) == (frozenset(), frozenset(), True)
    assert t.handle(m, t.step_completed(), now=4.1) == []
    assert m.state is MemberState.STABLE


def test_unsubscribed_topics_are_revoked_before_the_join_and_the_rest_kept():
    owned = frozenset({tp("a", 0), tp("b", 0)})
    t, m = _stable(owned=owned, topics={"a", "b"})
    deliver = only(t.handle(m, ev.Subscribe(frozenset({"a"})), now=1.0), DeliverStep)
    assert deliver.step.revoked == {tp("b", 0)}
    assert deliver.step.owned == {tp("a", 0)}
    assert deliver.step.generation.generation_id == 1  # commits in the callback still count
    assert m.state is MemberState.PREPARING
    join = only(t.handle(m, t.step_completed(), now=1.5), SendJoinGroup)
    sub = decode_subscription(join.protocols[0][1])
    assert sub.topics == ("a",)
    assert sub.owned_partitions == (tp("a", 0),)


def test_illegal_generation_loses_every_owned_partition_instead_of_revoking():
    t, m = _stable()
    only(t.tick(m, 3.0), SendHeartbeat)
    deliver = only(t.handle(m, t.heartbeat_response(ILLEGAL_GENERATION), now=3.1), DeliverStep)
    assert deliver.step.lost == OWNED
    assert deliver.step.revoked == frozenset()
    assert m.owned == frozenset()
    join = only(t.handle(m, t.step_completed(), now=3.2), SendJoinGroup)
    assert join.member_id == MEMBER_ID  # ILLEGAL_GENERATION keeps the member id
    sub = decode_subscription(join.protocols[0][1])
    assert sub.owned_partitions == ()
    assert sub.generation_id == -1


def test_unknown_member_id_loses_owned_partitions_and_rejoins_with_an_empty_id():
    t, m = _stable()
    only(t.tick(m, 3.0), SendHeartbeat)
    deliver = only(t.handle(m, t.heartbeat_response(UNKNOWN_MEMBER_ID), now=3.1), DeliverStep)
    assert deliver.step.lost == OWNED
    join = only(t.handle(m, t.step_completed(), now=3.2), SendJoinGroup)
    assert join.member_id == ""


def test_a_join_answered_past_the_next_generation_loses_the_owned_partitions_and_joins_again():
    # A static member that did not rejoin in time stays in the group (Kafka removes only dynamic
    # members when the join phase ends) and the leader assigned it from its older subscription:
    # generation 2 formed without it and may have handed its partitions to others. Its JoinGroup
    # sent in generation 1 is answered with generation 3: the partitions are lost, not revoked
    # (their offsets may be someone else's now), and generation 3 is not adopted.
    t, m = _stable()
    _rejoin_signalled(t, m)
    deliver = only(t.handle(m, t.join_response(generation_id=3, leader="someone-else"), now=4.0), DeliverStep)
    assert deliver.step.lost == OWNED
    assert deliver.step.revoked == frozenset()
    assert m.owned == frozenset()
    assert m.generation.generation_id == -1
    assert m.generation.member_id == MEMBER_ID
    join = only(t.handle(m, t.step_completed(), now=4.1), SendJoinGroup)
    assert join.member_id == MEMBER_ID
    sub = decode_subscription(join.protocols[0][1])
    assert sub.owned_partitions == ()
    assert sub.generation_id == -1
    # the round after it is an ordinary one: everything assigned arrives as added
    step = _sync(t, m, {tp("a", 1)}, now=4.5, generation_id=4).step
    assert step.assigned == {tp("a", 1)}
    assert step.lost == frozenset()
    assert step.revoked == frozenset()


def test_a_join_answered_with_the_next_generation_keeps_the_owned_partitions():
    t, m = _stable()
    _rejoin_signalled(t, m)
    assert only(t.handle(m, t.join_response(generation_id=2, leader="someone-else"), now=4.0), SendSyncGroup)
    assert m.owned == OWNED
    assert m.generation.generation_id == 2


def test_leader_hands_the_assignor_every_members_owned_partitions_and_generation():
    t, m = _stable()
    join = _rejoin_signalled(t, m)
    metadata = join.protocols[0][1]
    other = JoinGroupMember(member_id="m-2", group_instance_id=None, metadata=metadata)
    mine = JoinGroupMember(member_id=MEMBER_ID, group_instance_id=None, metadata=metadata)
    compute = only(
        t.handle(m, t.join_response(generation_id=2, members=[mine, other]), now=4.0), ComputeAssignment
    )
    by_id = {s.member_id: s for s in compute.members}
    assert by_id[MEMBER_ID].owned == OWNED
    assert by_id[MEMBER_ID].generation_id == 1
    assert by_id["m-2"].owned == OWNED  # the same bytes: the leader decodes what each member sent


def test_partitions_kept_through_a_revoke_step_are_held_until_the_coordinator_answers():
    # The revoke step of a subscription change runs long (its commit waits on an unreachable
    # coordinator); the session runs out meanwhile and the coordinator is lost. When the step
    # ends, the partition it kept stays owned but nothing of it goes out while the member looks
    # for the coordinator (found by the deterministic simulator); the JoinGroup the new
    # subscription needs is the question: UNKNOWN_MEMBER_ID loses it.
    owned = frozenset({tp("a", 0), tp("b", 0)})
    t, m = _stable(owned=owned, topics={"a", "b"})
    only(t.handle(m, ev.Subscribe(frozenset({"a"})), now=1.0), DeliverStep)  # revoke b-0: still running
    hb = only(t.tick(m, 3.0), SendHeartbeat)  # never answered
    assert t.tick(m, 10.0) == []  # session_timeout_ms since the JoinGroup went at 0.0: in doubt
    assert m.snapshot().hand_out_on_hold
    failed = t.handle(m, ev.RequestFailed(hb.request_id, "Heartbeat timed out"), now=11.0)
    assert of_kind(failed, DeliverStep) == []
    assert m.coordinator is None
    assert m.snapshot().hand_out_on_hold
    done = t.handle(m, t.step_completed(), now=12.0)
    assert of_kind(done, DeliverStep) == []
    assert m.owned == {tp("a", 0)} and m.snapshot().hand_out_on_hold
    cmds = t.handle(m, t.coordinator_found(), now=12.5) + t.tick(m, 12.6)
    join = only(of_kind(cmds, SendJoinGroup), SendJoinGroup)
    assert join.member_id == MEMBER_ID
    assert m.snapshot().hand_out_on_hold
    refused = t.handle(m, t.join_response(UNKNOWN_MEMBER_ID, request_id=join.request_id), now=13.0)
    assert only(of_kind(refused, DeliverStep), DeliverStep).step.lost == {tp("a", 0)}


def test_hand_outs_are_held_while_a_join_is_unanswered_past_the_session_timeout():
    # A cooperative member keeps its partitions through its JoinGroup. Past session_timeout_ms
    # since its last confirmed heartbeat, the JoinGroup may be parked at the coordinator (which
    # keeps the member) or may never have arrived (the coordinator expires it): the member hands
    # nothing out until it knows. The new generation's join renewed the session no earlier than
    # the JoinGroup was sent (3.1), so after the SyncGroup a Heartbeat confirms it first.
    t, m = _stable()
    join = _rejoin_signalled(t, m)  # heartbeat sent at 3.0 (answered), JoinGroup at 3.1
    assert m.next_deadline(3.1) <= 13.0
    assert not m.snapshot().hand_out_on_hold
    assert of_kind(t.tick(m, 12.99), DeliverStep) == []
    assert not m.snapshot().hand_out_on_hold
    assert t.tick(m, 13.0) == []  # nothing is lost yet: the join may be parked
    assert m.snapshot().hand_out_on_hold
    assert m.owned == OWNED
    joined = t.handle(m, t.join_response(generation_id=2, leader="other", request_id=join.request_id), now=14.0)
    assert kinds(joined) == [SendSyncGroup, SendHeartbeat]  # the Heartbeat asks at once, not after 3 s
    probe = of_kind(joined, SendHeartbeat)[0]
    assert m.snapshot().hand_out_on_hold  # SyncGroup parked: still in doubt
    t.handle(m, t.sync_response(OWNED), now=14.1)
    assert m.snapshot().hand_out_on_hold  # the renewal is not proven yet
    t.handle(m, t.heartbeat_response(request_id=probe.request_id), now=14.2)
    assert not m.snapshot().hand_out_on_hold
    assert m.owned == OWNED


def test_a_join_that_fails_past_the_session_timeout_holds_the_partitions_until_the_coordinator_answers():
    t, m = _stable()
    join = _rejoin_signalled(t, m)
    t.tick(m, 13.0)
    assert m.snapshot().hand_out_on_hold
    failed = t.handle(m, ev.RequestFailed(join.request_id, "JoinGroup timed out"), now=20.0)
    assert of_kind(failed, DeliverStep) == [] and m.owned == OWNED
    assert m.snapshot().hand_out_on_hold
    cmds = t.handle(m, t.coordinator_found(), now=20.5) + t.tick(m, 21.0)
    rejoin = only(of_kind(cmds, SendJoinGroup), SendJoinGroup)
    refused = t.handle(m, t.join_response(UNKNOWN_MEMBER_ID, request_id=rejoin.request_id), now=21.5)
    assert [s.step.lost for s in of_kind(refused, DeliverStep)] == [OWNED]


def test_a_sync_answered_rebalance_in_progress_past_the_session_timeout_rejoins_holding_the_partitions():
    # A join phase longer than the session timeout (a slow member's revocation keeps it open),
    # then another rebalance before the SyncGroup: REBALANCE_IN_PROGRESS to the SyncGroup shows the
    # coordinator still knew the member (UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION otherwise), and
    # the JoinGroup that follows is the question, as a parked one is. The partitions were lost
    # here before (every member of a cooperative group lost its unmoved partitions after such a
    # join phase: benchmarks/results.md, bare broker).
    t, m = _stable()
    join = _rejoin_signalled(t, m)  # JoinGroup at 3.1
    assert t.tick(m, 13.0) == []  # parked past the session: in doubt
    joined = t.handle(m, t.join_response(generation_id=2, leader="other", request_id=join.request_id), now=15.0)
    sync = of_kind(joined, SendSyncGroup)[0]
    failed = t.handle(m, t.sync_response(error_code=REBALANCE_IN_PROGRESS, request_id=sync.request_id), now=15.5)
    assert of_kind(failed, DeliverStep) == [], "the partitions must not be lost: the coordinator still has the member"
    rejoin = only(of_kind(failed, SendJoinGroup), SendJoinGroup)
    assert rejoin.member_id == MEMBER_ID
    assert m.owned == OWNED and m.snapshot().hand_out_on_hold  # nothing goes out until it knows
    # generation 3's join renewed the session no earlier than that JoinGroup was sent (15.5)
    t.handle(m, t.join_response(generation_id=3, leader="other", request_id=rejoin.request_id), now=16.0)
    t.handle(m, t.sync_response(OWNED), now=16.1)
    assert not m.snapshot().hand_out_on_hold and m.owned == OWNED


def test_a_rejoin_past_the_session_timeout_answered_unknown_member_id_loses_the_partitions():
    t, m = _stable()
    join = _rejoin_signalled(t, m)
    t.tick(m, 13.0)
    joined = t.handle(m, t.join_response(generation_id=2, leader="other", request_id=join.request_id), now=15.0)
    sync = of_kind(joined, SendSyncGroup)[0]
    failed = t.handle(m, t.sync_response(error_code=REBALANCE_IN_PROGRESS, request_id=sync.request_id), now=15.5)
    rejoin = only(of_kind(failed, SendJoinGroup), SendJoinGroup)
    gone = t.handle(m, t.join_response(UNKNOWN_MEMBER_ID, request_id=rejoin.request_id), now=16.0)
    assert [s.step.lost for s in of_kind(gone, DeliverStep)] == [OWNED]
