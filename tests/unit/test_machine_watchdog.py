"""GroupMachine timers on a fake ``now``: the max.poll.interval watchdog (KIP-62, KIP-345)
and the session timer (expiry: a member holding partitions counts itself out, as librdkafka;
one holding none rediscovers the coordinator, as Java's ``HeartbeatThread``)."""

from __future__ import annotations

import pytest

from kgroup.membership import MemberState
from kgroup.membership import events as ev
from kgroup.membership.commands import (
    DeliverStep,
    SendFindCoordinator,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
)
from tests.unit.machine_script import MEMBER_ID, NODE_ID, Script, kinds, of_kind, only, tp

OWNED = frozenset({tp("a", 0), tp("a", 1)})


def _stable(**overrides):
    t = Script(**overrides)
    m = t.machine()
    t.bring_to_stable(m, owned=OWNED)  # at now=0.0
    return t, m


def _run_until(t: Script, m, until: float, now: float = 0.0) -> tuple[float, list]:
    """Drive like the group thread: tick at ``next_deadline``, answer heartbeats at once.

    Stops at the first tick that emits something besides heartbeats, or past ``until``.
    Returns that tick's time and commands.
    """
    for _ in range(1000):
        now = m.next_deadline(now)
        if now > until:
            return now, []
        cmds = t.tick(m, now)
        for hb in of_kind(cmds, SendHeartbeat):
            t.handle(m, t.heartbeat_response(request_id=hb.request_id), now=now)
        if any(not isinstance(c, SendHeartbeat) for c in cmds):
            return now, cmds
    raise AssertionError("the machine never reached a deadline past `until`")


def _poll(t: Script, m, now: float) -> list:
    """Polled at ``now``; a heartbeat it triggers is answered at once."""
    cmds = t.handle(m, ev.Polled(), now=now)
    for hb in of_kind(cmds, SendHeartbeat):
        t.handle(m, t.heartbeat_response(request_id=hb.request_id), now=now)
    return cmds


# --------------------------------------------------------------------------- poll watchdog


def test_watchdog_dynamic_member_poll_timeout_leaves_and_loses_owned():
    t, m = _stable()
    _poll(t, m, 1.0)
    when, cmds = _run_until(t, m, until=100.0, now=1.0)
    assert when == pytest.approx(61.0)
    assert kinds(cmds) == [SendLeaveGroup, DeliverStep]
    leave = cmds[0]
    assert "max_poll_interval_ms" in leave.members[0].reason
    assert leave.members[0].member_id == MEMBER_ID
    assert leave.members[0].group_instance_id is None
    assert leave.node_id == NODE_ID
    step = cmds[1].step
    assert step.lost == OWNED
    assert step.revoked == frozenset()
    assert step.assigned == frozenset()
    assert step.invoke_assigned is False
    assert m.owned == frozenset()
    assert not m.generation.is_valid()


def test_watchdog_not_expired_before_max_poll_interval():
    t, m = _stable()
    _poll(t, m, 1.0)
    _, cmds = _run_until(t, m, until=60.99, now=1.0)
    assert cmds == []
    assert of_kind(t.log, SendLeaveGroup) == []
    assert m.state is MemberState.STABLE
    assert m.owned == OWNED


def test_watchdog_regular_polls_keep_the_member():
    t, m = _stable()
    now = 0.0
    for poll_at in (30.0, 60.0, 90.0, 120.0):
        _, cmds = _run_until(t, m, until=poll_at, now=now)
        assert cmds == []
        _poll(t, m, poll_at)
        now = poll_at
    assert of_kind(t.log, SendLeaveGroup) == []
    assert m.state is MemberState.STABLE
    assert m.generation.generation_id == 1


def test_watchdog_expired_member_sends_no_heartbeats_and_no_join_until_polled():
    t, m = _stable()
    cmds = t.tick(m, 60.0)  # last poll: the first event, at 0.0
    assert kinds(cmds) == [SendLeaveGroup, DeliverStep]
    later = t.tick(m, 63.0) + t.tick(m, 66.0)
    assert t.handle(m, t.leave_response(), now=66.5) == []
    completed = t.handle(m, t.step_completed(), now=67.0)
    later += completed + t.tick(m, 70.0) + t.tick(m, 500.0)
    assert of_kind(later, SendHeartbeat) == []
    assert of_kind(later, SendJoinGroup) == []
    assert m.state is MemberState.UNJOINED

    join = only(t.handle(m, ev.Polled(), now=501.0), SendJoinGroup)
    assert join.member_id == ""
    assert m.state is MemberState.JOINING


def test_watchdog_polled_before_step_completed_joins_after_the_step():
    t, m = _stable()
    t.tick(m, 60.0)
    assert of_kind(t.handle(m, ev.Polled(), now=61.0), SendJoinGroup) == []
    join = only(t.handle(m, t.step_completed(), now=61.5), SendJoinGroup)
    assert join.member_id == ""


def test_watchdog_static_member_poll_timeout_sends_no_leave_group():
    t, m = _stable(group_instance_id="inst-1")
    cmds = t.tick(m, 60.0)
    step = only(cmds, DeliverStep).step
    assert step.lost == OWNED
    assert of_kind(t.tick(m, 63.0), SendHeartbeat) == []
    t.handle(m, t.step_completed(), now=64.0)
    join = only(t.handle(m, ev.Polled(), now=65.0), SendJoinGroup)
    assert join.group_instance_id == "inst-1"


def test_watchdog_tick_at_reported_deadline_fires_with_fractional_poll_time():
    # a driver sleeps until next_deadline(now) and ticks then: the watchdog must fire there,
    # also when last_poll + interval is not exact in binary floating point (4.1 + 60.0)
    t, m = _stable()
    _poll(t, m, 4.1)
    when, cmds = _run_until(t, m, until=100.0, now=4.1)
    assert of_kind(cmds, SendLeaveGroup) != []
    assert when == pytest.approx(64.1)


# --------------------------------------------------------------------------- session timer


def _cut_off_past_the_session(t: Script, m) -> None:
    """A Heartbeat sent at 3.0 fails at 33.0 (coordinator unknown), past the 10 s session."""
    hb = only(t.tick(m, 3.0), SendHeartbeat)  # never answered
    assert t.tick(m, 9.9) == []
    assert not m.snapshot().hand_out_on_hold
    assert m.snapshot().hold_at == 10.0  # what the poll thread checks itself (MemberSnapshot.hold_at)
    assert t.tick(m, 10.0) == []  # the JoinGroup that completed the join went at 0.0
    assert m.snapshot().hand_out_on_hold
    assert m.owned == OWNED and m.coordinator == NODE_ID  # a Heartbeat is in flight: wait for it
    failed = t.handle(m, ev.RequestFailed(hb.request_id, "Heartbeat timed out after 30 s"), now=33.0)
    assert of_kind(failed, DeliverStep) == []
    assert m.coordinator is None


def _probe(t: Script, m, now: float) -> SendSyncGroup:
    cmds = t.handle(m, t.coordinator_found(), now=now) + t.tick(m, now + 0.1)
    probe = only(of_kind(cmds, SendSyncGroup), SendSyncGroup)
    assert (probe.generation_id, probe.member_id, probe.assignments) == (1, MEMBER_ID, ())
    return probe


def test_session_cut_off_past_the_timeout_keeps_the_partitions_until_the_coordinator_says_otherwise():
    # Not Java's rule: a member cut off from the coordinator for session_timeout_ms may already
    # be out of the group; it hands nothing out, keeps its partitions (a coordinator that
    # restarted keeps it), and once the coordinator is found asks with a SyncGroup of its
    # generation (a Heartbeat's answer says nothing while the coordinator loads the group)
    t, m = _stable()
    _cut_off_past_the_session(t, m)
    assert m.owned == OWNED and m.snapshot().hand_out_on_hold
    assert m.generation.generation_id == 1
    probe = _probe(t, m, 33.2)
    assert m.snapshot().hand_out_on_hold
    # the coordinator no longer has the member: the partitions are lost, it rejoins
    answered = t.handle(m, ev.SyncGroupResponded(request_id=probe.request_id, error_code=25), now=33.3)
    step = only(of_kind(answered, DeliverStep), DeliverStep).step
    assert step.lost == OWNED and step.revoked == frozenset()
    assert m.generation.generation_id == -1
    cmds = t.handle(m, t.step_completed(), now=33.4) + t.tick(m, 34.5)
    assert only(of_kind(cmds, SendJoinGroup), SendJoinGroup).member_id == ""


def test_session_cut_off_past_the_timeout_resumes_when_the_coordinator_confirms_the_member():
    t, m = _stable()
    _cut_off_past_the_session(t, m)
    probe = _probe(t, m, 33.2)
    _first_probe_id = probe.request_id
    # loading: asked again after retry_backoff_ms, hand-outs still held
    t.handle(m, ev.SyncGroupResponded(request_id=probe.request_id, error_code=14), now=33.3)
    assert m.snapshot().hand_out_on_hold and m.owned == OWNED
    probe = only(of_kind(t.tick(m, 33.5), SendSyncGroup), SendSyncGroup)
    t.handle(m, ev.SyncGroupResponded(request_id=probe.request_id, error_code=0), now=33.6)
    # the member is in the group; the Heartbeat that went out with the first probe, answered
    # after it (validated: the group is loaded), renews the session
    assert m.snapshot().hand_out_on_hold
    hb = t.last_of(SendHeartbeat)
    assert hb.request_id > _first_probe_id
    t.handle(m, ev.HeartbeatResponded(request_id=hb.request_id, error_code=0), now=33.7)
    assert not m.snapshot().hand_out_on_hold
    assert m.owned == OWNED and m.generation.generation_id == 1 and m.state is MemberState.STABLE


def test_session_in_doubt_a_successful_heartbeat_resumes_the_hand_outs():
    # a Heartbeat sent at 3.0 and answered at 8.0 shows the coordinator held the session at
    # 3.0 at the latest: in doubt from 13.0, when a Heartbeat goes out at once; its success
    # ends the doubt without any loss
    t, m = _stable()
    hb = only(t.tick(m, 3.0), SendHeartbeat)
    # the next one was due at 6.0: it goes with the answer, and stays unanswered a while
    regular = only(t.handle(m, t.heartbeat_response(request_id=hb.request_id), now=8.0), SendHeartbeat)
    assert m.next_deadline(8.0) <= 13.0
    assert of_kind(t.tick(m, 12.99), DeliverStep) == []
    assert not m.snapshot().hand_out_on_hold
    assert t.tick(m, 13.0) == []  # the Heartbeat in flight is the question
    assert m.snapshot().hand_out_on_hold
    answered = t.handle(m, t.heartbeat_response(request_id=regular.request_id), now=13.2)
    assert of_kind(answered, DeliverStep) == []
    assert not m.snapshot().hand_out_on_hold
    assert m.owned == OWNED


def test_session_in_doubt_without_a_coordinator_keeps_the_partitions_and_holds_the_hand_outs():
    t, m = _stable()
    hb = only(t.tick(m, 3.0), SendHeartbeat)
    t.handle(m, ev.RequestFailed(hb.request_id, "disconnected"), now=4.0)  # coordinator unknown
    assert m.coordinator is None and m.owned == OWNED
    lapsed = t.tick(m, 10.0)
    assert of_kind(lapsed, DeliverStep) == []
    assert m.owned == OWNED and m.snapshot().hand_out_on_hold
    # a Heartbeat answered without error (blindly, by a coordinator loading the group) does not
    # end the doubt: only the SyncGroup probe's answer does
    cmds = t.handle(m, t.coordinator_found(), now=10.5) + t.tick(m, 10.6)
    probe = only(of_kind(cmds, SendSyncGroup), SendSyncGroup)
    hb = only(of_kind(cmds + t.tick(m, 13.6), SendHeartbeat), SendHeartbeat)
    t.handle(m, ev.HeartbeatResponded(request_id=hb.request_id, error_code=0), now=13.7)
    assert m.snapshot().hand_out_on_hold
    t.handle(m, ev.SyncGroupResponded(request_id=probe.request_id, error_code=0), now=13.8)
    assert not m.snapshot().hand_out_on_hold


def test_session_of_a_member_without_partitions_rediscovers_and_keeps_generation():
    # nothing to hand out: Java's HeartbeatThread rule, the generation is kept
    t = Script()
    m = t.machine()
    t.bring_to_stable(m, owned=frozenset())
    only(t.tick(m, 3.0), SendHeartbeat)  # never answered
    assert of_kind(t.tick(m, 9.9), SendFindCoordinator) == []
    expired = t.tick(m, 10.1)
    only(expired, SendFindCoordinator)
    assert m.generation.generation_id == 1
    assert m.state is MemberState.STABLE
    cmds = t.handle(m, t.coordinator_found(), now=10.2) + t.tick(m, 13.5)
    assert of_kind(cmds, SendJoinGroup) == []
    assert only(of_kind(cmds, SendHeartbeat)[:1], SendHeartbeat).generation_id == 1


def test_session_successful_heartbeats_keep_the_coordinator():
    t, m = _stable()
    _, cmds = _run_until(t, m, until=50.0)
    assert cmds == []
    assert of_kind(t.log, SendFindCoordinator) == [t.log[0]]
    assert m.coordinator == NODE_ID


def test_session_tick_at_reported_deadline_rediscovers():
    # next_deadline reports the session deadline; a tick then must act (hold the hand-outs)
    t, m = _stable()
    only(t.tick(m, 3.0), SendHeartbeat)  # never answered
    assert t.tick(m, 6.0) == []
    deadline = m.next_deadline(6.0)
    assert deadline == pytest.approx(10.0)
    t.tick(m, deadline)
    assert m.snapshot().hand_out_on_hold


def test_session_java_timer_of_a_member_without_partitions_starts_at_the_join_response():
    # a JoinGroup parked 8 s (a slow first rebalance) and a SyncGroup still parked: a member that
    # holds nothing follows Java's timer, which restarts at the JoinGroup response (8.0), not at
    # its send (0.0): no rediscovery before 18.0
    t = Script()
    m = t.machine()
    only(t.handle(m, ev.Subscribe(frozenset({"a"})), now=0.0), SendFindCoordinator)
    only(t.handle(m, t.coordinator_found(), now=0.0), SendJoinGroup)
    joined = t.handle(m, t.join_response(generation_id=1, leader="someone-else"), now=8.0)
    assert SendSyncGroup in kinds(joined)
    for now in (10.0, 12.0, 15.0, 17.9):
        assert of_kind(t.tick(m, now), SendFindCoordinator) == []
    assert m.coordinator == NODE_ID


def test_session_doubt_comes_at_the_rebalance_timeout_when_it_is_the_shorter():
    # A rebalance that began after the last calm Heartbeat (sent at 3.0), which the member never
    # heard of, removes it rebalance_timeout_ms (8 s) later: in doubt at 11.0, before the
    # session's 13.0 (found by the deterministic simulator: seeds 7271, 18678)
    t, m = _stable(rebalance_timeout_ms=8000)
    hb = only(t.tick(m, 3.0), SendHeartbeat)
    t.handle(m, t.heartbeat_response(request_id=hb.request_id), now=3.1)
    t.tick(m, 6.1)  # the next one is never answered
    t.tick(m, 10.99)
    assert not m.snapshot().hand_out_on_hold
    assert m.snapshot().hold_at == 11.0  # the poll thread holds from here even before this tick
    t.tick(m, 11.0)
    assert m.snapshot().hand_out_on_hold
