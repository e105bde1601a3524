"""Heartbeat answers per state, session timers and their renewal, expiry."""

from __future__ import annotations

import pytest

from kgroup import _error_codes as codes
from kgroup.testing.coordinator import _events as ev
from tests.unit.coordinator_model.helpers import Harness


def test_heartbeat_per_state():
    h = Harness(group_initial_rebalance_delay_ms=1000)
    a, a_join = h.new_member(client_id="a")
    # PreparingRebalance (initial): generation 0 is the current one
    assert h.heartbeat(a, 0) == codes.REBALANCE_IN_PROGRESS
    h.advance(1)
    gen = a_join.response.generation_id
    # CompletingRebalance: a heartbeat after the JoinGroup response is a normal heartbeat
    assert h.state() == "CompletingRebalance"
    assert h.heartbeat(a, gen) == codes.NONE
    h.sync(a, gen, {a: b"A"})
    assert h.heartbeat(a, gen) == codes.NONE  # Stable


def test_heartbeat_errors():
    h = Harness()
    (a, _b), gen = h.form_group(2)
    assert h.heartbeat(a, gen, group="") == codes.INVALID_GROUP_ID
    assert h.heartbeat(a, gen, group="unknown") == codes.UNKNOWN_MEMBER_ID
    assert h.heartbeat("ghost", gen) == codes.UNKNOWN_MEMBER_ID
    assert h.heartbeat(a, gen - 1) == codes.ILLEGAL_GENERATION
    assert h.heartbeat(a, gen + 1) == codes.ILLEGAL_GENERATION


def test_heartbeat_of_a_pending_member_is_unknown_member_id():
    h = Harness()
    pending = h.join(client_id="p").response.member_id
    assert h.heartbeat(pending, 0) == codes.UNKNOWN_MEMBER_ID


def test_session_expiry_removes_the_member_and_starts_a_rebalance():
    h = Harness()
    (a, b), gen = h.form_group(2, session=10_000)
    for _ in range(3):
        h.advance(3)
        assert h.heartbeat(a, gen) == codes.NONE  # a renews its session; b stays silent
    h.advance(3)
    # b's session (armed at its SyncGroup) expired at 10 s
    assert h.heartbeat(a, gen) == codes.REBALANCE_IN_PROGRESS
    assert h.state() == "PreparingRebalance"
    assert (b, "session timeout") in h.kinds(ev.MEMBER_REMOVED)
    assert h.kinds(ev.REBALANCE_STARTED)[-1][1] == f"removing member {b} on heartbeat expiration."
    reply = h.join(a, client_id="m0")
    assert reply.done  # the survivor's rejoin completes at once
    assert [m.member_id for m in reply.response.members] == [a]
    assert reply.response.generation_id == gen + 1


def test_session_expiry_at_exactly_the_session_timeout():
    h = Harness()
    (_a,), _gen = h.form_group(1, session=10_000)
    assert h.model.next_deadline() == pytest.approx(h.clock.monotonic() + 10.0)
    h.advance(9.999)
    assert h.state() == "Stable"
    h.advance(0.001)
    assert h.state() == "Empty"


def test_expiry_of_the_last_member_empties_the_group_with_a_generation_bump():
    h = Harness()
    (_a,), gen = h.form_group(1)
    h.advance(10)
    assert h.state() == "Empty"
    assert h.members() == []
    assert h.kinds(ev.GENERATION_COMPLETED)[-1] == ("", f"generation {gen + 1}, Empty")
    assert h.model.next_deadline() is None


def _b_rejoins_while_a_heartbeats(heartbeats: int):
    """Two members (10 s sessions); b rejoins (the group prepares a rebalance) and waits parked
    in JoinGroup while a heartbeats every 5 s, ``heartbeats`` times, each answered
    REBALANCE_IN_PROGRESS."""
    h = Harness()
    (a, b), gen = h.form_group(2, session=10_000, rebalance=60_000)
    b_join = h.join(b, client_id="m1", session=10_000, rebalance=60_000, protocols=(("range", b"x"),))
    for _ in range(heartbeats):
        h.advance(5)
        assert h.heartbeat(a, gen) == codes.REBALANCE_IN_PROGRESS
    return h, a, b, gen, b_join


def test_heartbeat_in_preparing_rebalance_renews_the_session():
    h, a, _b, gen, b_join = _b_rejoins_while_a_heartbeats(5)
    assert a in h.members()  # 25 s later, still a member
    assert not b_join.done
    h.join(a, client_id="m0", session=10_000, rebalance=60_000)
    assert b_join.done and b_join.response.generation_id == gen + 1


def test_members_parked_in_join_do_not_expire():
    h, a, b, _gen, b_join = _b_rejoins_while_a_heartbeats(10)
    assert h.members() == [a, b]  # b is silent for 50 s but parked: its session is "satisfied"
    a_join = h.join(a, client_id="m0", session=10_000, rebalance=60_000)
    assert a_join.done and b_join.done


def test_parked_join_of_a_member_does_not_protect_the_others():
    h, a, b, gen, b_join = _b_rejoins_while_a_heartbeats(0)
    h.advance(10)  # a is silent: it expires and the barrier completes without it
    assert (a, "session timeout") in h.kinds(ev.MEMBER_REMOVED)
    assert b_join.done
    assert (b_join.response.leader, b_join.response.generation_id) == (b, gen + 1)
    h.advance(10)  # the completed join re-armed b's session; b never syncs nor heartbeats
    assert h.state() == "Empty"


def test_sync_completion_rearms_the_session():
    h = Harness(group_initial_rebalance_delay_ms=1000)
    a, a_join = h.new_member(client_id="a", session=10_000)
    b, _ = h.new_member(client_id="b", session=10_000)
    h.advance(2)  # the delay, re-armed once for b
    gen = a_join.response.generation_id
    h.advance(7)
    b_sync = h.sync(b, gen)  # parked at t=9
    assert h.heartbeat(a, gen) == codes.NONE
    h.advance(4)  # b's session (armed at t=2) would have expired at 12, but b is parked
    assert h.heartbeat(a, gen) == codes.NONE
    h.sync(a, gen, {a: b"A", b: b"B"})  # t=13: b's session re-armed until 23
    assert b_sync.response.error_code == codes.NONE
    h.advance(9.999)
    assert b in h.members()
    h.advance(0.001)
    assert b not in h.members()


def test_join_in_stable_does_not_renew_a_followers_session():
    # Kafka answers a follower's unchanged JoinGroup in Stable without touching its heartbeat timer.
    h = Harness()
    (a, b), gen = h.form_group(2, session=10_000)
    h.advance(9)
    h.heartbeat(a, gen)
    assert h.join(b, client_id="m1").done
    h.advance(1)
    assert b not in h.members()


def test_next_deadline_and_tick():
    h = Harness()
    assert h.model.next_deadline() is None
    pending = h.join(client_id="p", session=7_000).response.member_id
    assert h.model.next_deadline() == pytest.approx(h.clock.monotonic() + 7.0)
    h.clock.advance(7)
    h.model.tick()
    assert h.kinds(ev.PENDING_MEMBER_REMOVED) == [(pending, "session timeout")]
    assert h.model.next_deadline() is None


def test_timers_fire_before_a_late_request_is_handled():
    h = Harness()
    (a, _b), gen = h.form_group(2, session=10_000)
    h.clock.advance(30)  # nobody called tick(); the next request sees the expiries first
    assert h.heartbeat(a, gen) == codes.UNKNOWN_MEMBER_ID
    expiry_times = [e.time_ms for e in h.model.events if e.kind == ev.MEMBER_REMOVED]
    assert expiry_times == [1_010_000, 1_010_000]  # removed at their deadlines, not at the request


def test_each_member_expires_after_its_own_session_timeout():
    # Kafka keeps a session timeout per member (ClassicGroupMember.sessionTimeoutMs); broker-notes
    # S6d: Tansu applies the first joiner's to everyone
    h = Harness(group_initial_rebalance_delay_ms=1000)
    short, short_join = h.new_member(client_id="short", session=6_000)
    long_, long_join = h.new_member(client_id="long", session=30_000)
    h.advance(2)  # the initial delay, re-armed once for the second member
    gen = short_join.response.generation_id
    assert long_join.response.generation_id == gen
    h.sync(short, gen, {short: b"S", long_: b"L"})
    h.sync(long_, gen)
    h.advance(6)  # nobody heartbeats: only the 6 s member is gone
    assert h.kinds(ev.MEMBER_REMOVED) == [(short, "session timeout")]
    h.advance(25)
    assert h.kinds(ev.MEMBER_REMOVED) == [(short, "session timeout"), (long_, "session timeout")]
