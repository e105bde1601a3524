"""GroupMachine, eager protocol (seed 000 "Rebalancing"): revoke everything before JoinGroup,
assign everything after SyncGroup."""

from __future__ import annotations

from kgroup._error_codes import REBALANCE_IN_PROGRESS
from kgroup.membership import MemberState
from kgroup.membership import events as ev
from kgroup.membership.commands import (
    DeliverStep,
    SendFindCoordinator,
    SendHeartbeat,
    SendJoinGroup,
)
from kgroup.protocol.consumer_protocol import decode_subscription
from kgroup.types import RebalanceProtocol
from tests.unit.machine_script import MEMBER_ID, NODE_ID, Script, of_kind, only, tp

OWNED = frozenset({tp("a", 0), tp("a", 1)})


def _stable(owned=OWNED, **overrides):
    t = Script(**overrides)
    m = t.machine()
    t.bring_to_stable(m, owned=owned)
    return t, m


def _rebalance_signalled(t: Script, m) -> DeliverStep:
    """Heartbeat at 3.0 answered REBALANCE_IN_PROGRESS at 3.1; returns the revoke step."""
    only(t.tick(m, 3.0), SendHeartbeat)
    return only(t.handle(m, t.heartbeat_response(REBALANCE_IN_PROGRESS), now=3.1), DeliverStep)


def test_eager_config_runs_eager_protocol():
    t = Script()
    assert t.config.protocol is RebalanceProtocol.EAGER


def test_eager_heartbeat_rebalance_in_progress_revokes_all_owned_before_join():
    t, m = _stable()
    deliver = _rebalance_signalled(t, m)
    step = deliver.step
    assert step.revoked == OWNED
    assert step.lost == frozenset()
    assert step.assigned == frozenset()
    assert step.owned == frozenset()
    assert step.invoke_assigned is False
    assert step.generation == m.generation
    assert step.generation.generation_id == 1
    assert m.state is MemberState.PREPARING
    assert m.owned == frozenset()


def test_eager_preparing_keeps_heartbeating_at_the_interval():
    t, m = _stable()
    _rebalance_signalled(t, m)
    assert of_kind(t.tick(m, 5.9), SendHeartbeat) == []
    hb = only(t.tick(m, 6.0), SendHeartbeat)
    assert hb.generation_id == 1
    assert hb.member_id == MEMBER_ID
    # a second REBALANCE_IN_PROGRESS while already preparing: no second revoke step
    assert t.handle(m, t.heartbeat_response(REBALANCE_IN_PROGRESS), now=6.1) == []
    assert m.state is MemberState.PREPARING
    # ... and it counts as a successful heartbeat: the session (10 s) runs from 6.1, not 0.0
    only(t.tick(m, 9.0), SendHeartbeat)  # never answered
    assert of_kind(t.tick(m, 12.0), SendFindCoordinator) == []
    assert m.coordinator == NODE_ID


def test_eager_step_completed_sends_join_with_member_id_and_no_owned_partitions():
    t, m = _stable()
    _rebalance_signalled(t, m)
    join = only(t.handle(m, t.step_completed(), now=4.0), SendJoinGroup)
    assert join.member_id == MEMBER_ID
    sub = decode_subscription(join.protocols[0][1])
    assert sub.topics == ("a",)
    assert sub.owned_partitions == ()
    assert m.state is MemberState.JOINING


def test_eager_joining_sends_no_heartbeats():
    t, m = _stable()
    _rebalance_signalled(t, m)
    only(t.handle(m, t.step_completed(), now=4.0), SendJoinGroup)
    assert of_kind(t.tick(m, 6.0) + t.tick(m, 9.0), SendHeartbeat) == []


def test_eager_new_sync_assigns_all_new_partitions():
    t, m = _stable()
    _rebalance_signalled(t, m)
    t.handle(m, t.step_completed(), now=4.0)
    t.now = 5.0
    new = frozenset({tp("a", 1), tp("a", 2)})  # a-1 was owned before: eager assigns it again
    step = t.join_and_sync(m, new, leader=False, generation_id=2).step
    assert step.assigned == new
    assert step.revoked == frozenset()
    assert step.lost == frozenset()
    assert step.invoke_assigned is True
    assert step.owned == new
    assert step.generation.generation_id == 2
    assert m.state is MemberState.RECONCILING
    assert t.handle(m, t.step_completed()) == []
    assert m.state is MemberState.STABLE
    assert m.owned == new
    assert m.generation.generation_id == 2


def test_eager_subscription_change_revokes_all_then_joins_with_new_topics():
    t, m = _stable()
    step = only(t.handle(m, ev.Subscribe(frozenset({"a", "b"})), now=1.0), DeliverStep).step
    assert step.revoked == OWNED
    assert step.generation.generation_id == 1
    assert m.state is MemberState.PREPARING
    join = only(t.handle(m, t.step_completed(), now=1.5), SendJoinGroup)
    assert decode_subscription(join.protocols[0][1]).topics == ("a", "b")
    assert join.member_id == MEMBER_ID
    assert m.state is MemberState.JOINING


def test_eager_same_subscription_again_is_a_no_op():
    t, m = _stable()
    assert t.handle(m, ev.Subscribe(frozenset({"a"})), now=1.0) == []
    assert m.state is MemberState.STABLE
    assert m.owned == OWNED


def test_eager_request_rejoin_revokes_all_then_joins_with_reason():
    t, m = _stable()
    step = only(t.handle(m, ev.RequestRejoin("operator asked"), now=1.0), DeliverStep).step
    assert step.revoked == OWNED
    join = only(t.handle(m, t.step_completed(), now=1.5), SendJoinGroup)
    assert "operator asked" in join.reason


def test_eager_rejoin_with_nothing_owned_joins_without_a_step():
    t, m = _stable(owned=frozenset())
    join = only(t.handle(m, ev.RequestRejoin("again"), now=1.0), SendJoinGroup)
    assert join.member_id == MEMBER_ID
    assert m.state is MemberState.JOINING


def test_eager_subscription_change_during_join_rejoins_with_new_topics():
    # Java ConsumerCoordinator.rejoinNeededOrPending: joinedSubscription != subscription -> rejoin
    t = Script()
    m = t.machine()
    t.handle(m, ev.Subscribe(frozenset({"a"})))
    t.handle(m, t.coordinator_found())
    only(t.handle(m, t.member_id_required()), SendJoinGroup)  # carries topics ("a",)
    mark = len(t.log)
    t.handle(m, ev.Subscribe(frozenset({"a", "b"})), now=0.5)
    t.handle(m, t.join_response(leader="other"), now=1.0)
    t.handle(m, t.sync_response({tp("a", 0)}), now=1.1)
    completed: set[int] = set()
    for _ in range(3):  # complete each step as it comes (the assigned step, then a revoke step)
        for c in of_kind(t.log[mark:], DeliverStep):
            if c.step.step_id not in completed:
                completed.add(c.step.step_id)
                t.handle(m, ev.StepCompleted(c.step.step_id), now=1.2)
    t.tick(m, 2.5)
    joined_topics = [decode_subscription(j.protocols[0][1]).topics for j in of_kind(t.log[mark:], SendJoinGroup)]
    assert ("a", "b") in joined_topics


def test_eager_join_gives_the_assignor_the_last_assignment_for_its_user_data():
    # Java's StickyAssignor remembers the last assignment (onAssignment) and sends it as user
    # data, although under EAGER the Subscription's owned partitions are empty by then
    from kgroup.assignors import RangeAssignor

    calls = []

    class Recording(RangeAssignor):
        def subscription_user_data(self, topics, generation_id, owned):
            calls.append((topics, generation_id, owned))
            return b"ud"

    t = Script(assignors=(Recording(),))
    m = t.machine()
    t.bring_to_stable(m, owned=OWNED)
    assert calls[-1] == (frozenset({"a"}), -1, frozenset())  # the first join: nothing yet
    _rebalance_signalled(t, m)
    join = only(t.handle(m, t.step_completed(), now=4.0), SendJoinGroup)
    assert calls[-1] == (frozenset({"a"}), 1, OWNED)
    sub = decode_subscription(join.protocols[0][1])
    assert sub.owned_partitions == ()
    assert sub.user_data == b"ud"
