"""SyncGroup: the second barrier, assignments, errors, the pending-sync timeout."""

from __future__ import annotations

import pytest

from kgroup import _error_codes as codes
from kgroup.testing.coordinator import _events as ev
from tests.unit.coordinator_model.helpers import Harness


def _completing(h: Harness, n: int = 2, **kwargs):
    """A group of ``n`` that has just completed its join phase (generation 1): ids, generation, leader."""
    replies = [h.new_member(client_id=f"m{i}", **kwargs) for i in range(n)]
    # initial delay 1 s, re-armed once because members 2..n arrived during it (KIP-134)
    h.advance(1.999)
    assert not replies[0][1].done
    h.advance(0.001)
    for _, reply in replies:
        assert reply.done
    ids = [mid for mid, _ in replies]
    response = replies[0][1].response
    assert h.state() == "CompletingRebalance"
    return ids, response.generation_id, response.leader


def test_followers_park_until_the_leaders_sync_and_get_their_own_bytes():
    h = Harness(group_initial_rebalance_delay_ms=1000)
    (a, b, c), gen, leader = _completing(h, 3)
    assert leader == a
    b_sync = h.sync(b, gen)
    c_sync = h.sync(c, gen)
    assert not b_sync.done and not c_sync.done
    a_sync = h.sync(a, gen, {a: b"A", b: b"B", c: b"C"})
    for reply, data in ((a_sync, b"A"), (b_sync, b"B"), (c_sync, b"C")):
        assert reply.done
        response = reply.response
        assert (response.error_code, response.assignment) == (codes.NONE, data)
        assert (response.protocol_type, response.protocol_name) == ("consumer", "range")
    assert h.state() == "Stable"
    assert h.kinds(ev.GROUP_STABLE) == [(a, f"generation 1: assignments for [{a}, {b}, {c}]")]


def test_leader_sync_first_then_followers_are_answered_at_once():
    h = Harness(group_initial_rebalance_delay_ms=1000)
    (a, b), gen, _ = _completing(h)
    assert h.sync(a, gen, {a: b"A", b: b"B"}).response.assignment == b"A"
    reply = h.sync(b, gen)
    assert reply.done and reply.response.assignment == b"B"


def test_members_missing_from_the_leaders_assignment_get_empty_bytes():
    h = Harness(group_initial_rebalance_delay_ms=1000)
    (a, b), gen, _ = _completing(h)
    b_sync = h.sync(b, gen)
    h.sync(a, gen, {a: b"A", "stranger": b"S"})
    assert (b_sync.response.error_code, b_sync.response.assignment) == (codes.NONE, b"")
    assert [m.member_assignment for m in h.describe().members] == [b"A", b""]


def test_sync_on_unknown_or_empty_group_is_unknown_member_id():
    h = Harness()
    assert h.sync("x", 1, group="nope", protocol_name="range").response.error_code == codes.UNKNOWN_MEMBER_ID
    h.join(client_id="p")  # pending member only: the group is Empty
    assert h.sync("p-1", 0, protocol_name="range").response.error_code == codes.UNKNOWN_MEMBER_ID


def test_sync_unknown_member_and_illegal_generation():
    h = Harness()
    (_a, b), gen = h.form_group(2)
    assert h.sync("ghost", gen).response.error_code == codes.UNKNOWN_MEMBER_ID
    assert h.sync(b, gen - 1).response.error_code == codes.ILLEGAL_GENERATION
    assert h.sync(b, gen + 1).response.error_code == codes.ILLEGAL_GENERATION


def test_sync_in_preparing_rebalance_is_rebalance_in_progress():
    h = Harness()
    (a, b), gen = h.form_group(2)
    h.join(a, client_id="m0")
    assert h.state() == "PreparingRebalance"
    assert h.sync(b, gen).response.error_code == codes.REBALANCE_IN_PROGRESS
    # validation comes first: an old generation is still ILLEGAL_GENERATION
    assert h.sync(b, gen - 1).response.error_code == codes.ILLEGAL_GENERATION


@pytest.mark.parametrize(
    ("protocol_type", "protocol_name", "expected"),
    [
        ("consumer", "range", codes.NONE),
        # From v5 both are mandatory (KafkaApis.handleSyncGroupRequest,
        # SyncGroupRequest.areMandatoryProtocolTypeAndNamePresent): a null one is refused.
        (None, None, codes.INCONSISTENT_GROUP_PROTOCOL),
        (None, "range", codes.INCONSISTENT_GROUP_PROTOCOL),
        ("consumer", None, codes.INCONSISTENT_GROUP_PROTOCOL),
        ("connect", "range", codes.INCONSISTENT_GROUP_PROTOCOL),
        ("consumer", "roundrobin", codes.INCONSISTENT_GROUP_PROTOCOL),
        (None, "roundrobin", codes.INCONSISTENT_GROUP_PROTOCOL),
    ],
)
def test_sync_v5_protocol_type_and_name_must_match(protocol_type, protocol_name, expected):
    h = Harness()
    (_a, b), gen = h.form_group(2)
    response = h.sync(b, gen, protocol_type=protocol_type, protocol_name=protocol_name).response
    assert response.error_code == expected
    if expected == codes.NONE:
        assert response.assignment == f"a-{b}".encode()


def test_sync_in_stable_returns_the_stored_assignment():
    h = Harness()
    (a, _b), gen = h.form_group(2)
    response = h.sync(a, gen, {a: b"ignored"}).response
    assert (response.error_code, response.assignment) == (codes.NONE, f"a-{a}".encode())


def test_pending_sync_timeout_removes_members_that_never_synced_and_rebalances():
    h = Harness(group_initial_rebalance_delay_ms=1000)
    (a, b, c), gen, _ = _completing(h, 3, rebalance=20_000, session=30_000)
    b_sync = h.sync(b, gen)
    h.advance(10)
    h.heartbeat(c, gen)  # c is alive but never sends SyncGroup
    h.heartbeat(a, gen)  # the leader too
    h.advance(10)  # the rebalance timeout (20 s) after the join completed
    assert b_sync.done
    assert b_sync.response.error_code == codes.REBALANCE_IN_PROGRESS
    assert h.state() == "PreparingRebalance"
    assert h.members() == [b]
    removed = [mid for mid, detail in h.kinds(ev.MEMBER_REMOVED) if detail == "pending sync timeout"]
    assert removed == [a, c]
    assert h.kinds(ev.REBALANCE_STARTED)[-1][1] == f"Removing [{a}, {c}] on pending sync request expiration"


def test_pending_sync_timeout_also_applies_after_the_leader_synced():
    h = Harness(group_initial_rebalance_delay_ms=1000)
    (a, b), gen, _ = _completing(h, 2, rebalance=20_000, session=30_000)
    h.sync(a, gen, {a: b"A", b: b"B"})
    assert h.state() == "Stable"
    h.advance(15)
    assert h.heartbeat(b, gen) == codes.NONE  # b heartbeats but never syncs
    h.advance(5)
    assert h.state() == "PreparingRebalance"
    assert h.members() == [a]


def test_pending_sync_timer_is_cancelled_once_everyone_synced():
    h = Harness(group_initial_rebalance_delay_ms=1000)
    (a, b), gen, _ = _completing(h, 2, rebalance=20_000, session=30_000)
    h.sync(b, gen)
    h.sync(a, gen, {a: b"A", b: b"B"})
    h.advance(25)
    assert h.heartbeat(a, gen) == h.heartbeat(b, gen) == codes.NONE
    assert h.state() == "Stable"


def test_a_resent_parked_sync_answers_the_older_request():
    h = Harness(group_initial_rebalance_delay_ms=1000)
    (a, b), gen, _ = _completing(h)
    first = h.sync(b, gen)
    second = h.sync(b, gen)
    assert first.done and first.response.error_code == codes.REBALANCE_IN_PROGRESS
    h.sync(a, gen, {b: b"B"})
    assert second.response.assignment == b"B"


def test_sync_v5_without_protocol_type_or_name_is_refused_before_the_group_is_looked_up():
    h = Harness()
    (_a, b), gen = h.form_group(2)
    assert h.sync(b, gen, group="nope", protocol_name=None).response.error_code == codes.INCONSISTENT_GROUP_PROTOCOL
    assert h.sync(b, gen, group="", protocol_type=None).response.error_code == codes.INCONSISTENT_GROUP_PROTOCOL
    below_v5 = h.sync(b, gen, version=4, protocol_type=None, protocol_name=None).response
    assert (below_v5.error_code, below_v5.assignment) == (codes.NONE, f"a-{b}".encode())
