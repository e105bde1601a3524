"""JoinGroup: validation, MEMBER_ID_REQUIRED, the join barrier, generations, leaders, KIP-134 delay, KIP-389."""

from __future__ import annotations

import pytest

from kgroup import _error_codes as codes
from kgroup.testing.coordinator import _events as ev
from kgroup.testing.coordinator._config import NEW_MEMBER_JOIN_TIMEOUT_MS
from tests.unit.coordinator_model.helpers import G, Harness

# --- request validation ------------------------------------------------------------------------


def test_empty_group_id_is_invalid_group_id():
    h = Harness()
    response = h.join(group="", member_id="x").response
    assert (response.error_code, response.member_id) == (codes.INVALID_GROUP_ID, "x")
    assert h.model.group_state("") == "Dead"


@pytest.mark.parametrize(
    ("session", "expected"),
    [
        (5_999, codes.INVALID_SESSION_TIMEOUT),
        (6_000, codes.MEMBER_ID_REQUIRED),
        (1_800_000, codes.MEMBER_ID_REQUIRED),
        (1_800_001, codes.INVALID_SESSION_TIMEOUT),
    ],
)
def test_session_timeout_bounds(session, expected):
    h = Harness()
    assert h.join(session=session).response.error_code == expected


def test_session_timeout_bounds_follow_the_config():
    h = Harness(group_min_session_timeout_ms=1000, group_max_session_timeout_ms=2000)
    assert h.join(session=999).response.error_code == codes.INVALID_SESSION_TIMEOUT
    assert h.join(session=2001).response.error_code == codes.INVALID_SESSION_TIMEOUT
    assert h.join(session=1500).response.error_code == codes.MEMBER_ID_REQUIRED


def test_unknown_member_id_for_unknown_group_does_not_create_it():
    h = Harness()
    response = h.join("ghost-1").response
    assert (response.error_code, response.member_id) == (codes.UNKNOWN_MEMBER_ID, "ghost-1")
    assert h.state() == "Dead"


def test_unknown_member_id_in_existing_group():
    h = Harness()
    h.form_group(1)
    assert h.join("ghost-1").response.error_code == codes.UNKNOWN_MEMBER_ID
    assert h.state() == "Stable"


# --- MEMBER_ID_REQUIRED (KIP-394) --------------------------------------------------------------


@pytest.mark.parametrize("version", [4, 5, 9])
def test_member_id_required_from_v4_creates_only_a_pending_member(version):
    h = Harness()
    response = h.join(version=version, client_id="app").response
    assert response.error_code == codes.MEMBER_ID_REQUIRED
    assert response.member_id == "app-1"
    assert response.generation_id == -1
    # the group exists (Kafka writes an empty record) but has no member yet
    assert h.state() == "Empty"
    assert h.members() == []
    assert h.kinds(ev.PENDING_MEMBER_ADDED) == [("app-1", "")]


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_v0_to_v3_gets_its_id_assigned_and_joins_at_once(version):
    h = Harness()
    reply = h.join(version=version, client_id="old")
    assert reply.done
    response = reply.response
    assert response.error_code == codes.NONE
    assert response.member_id == "old-1"
    assert response.generation_id == 1
    assert response.leader == "old-1"
    assert [m.member_id for m in response.members] == ["old-1"]


def test_static_member_never_gets_member_id_required():
    h = Harness()
    response = h.join(instance="i1", version=9).response
    assert response.error_code == codes.NONE
    assert response.member_id == "i1-1"  # Kafka prefixes a static member's id with its instance id
    assert h.kinds(ev.MEMBER_ADDED) == [("i1-1", "static i1")]
    assert h.kinds(ev.REBALANCE_STARTED) == [
        ("", "Adding new member i1-1 with group instance id i1; client reason: not provided")
    ]


# --- first generation --------------------------------------------------------------------------


def test_singleton_with_zero_delay_completes_at_its_second_join():
    h = Harness()
    mid, reply = h.new_member(client_id="a", protocols=(("range", b"R"),))
    assert reply.done
    response = reply.response
    assert response.error_code == codes.NONE
    assert response.generation_id == 1
    assert response.leader == mid == response.member_id
    assert response.protocol_type == "consumer"
    assert response.protocol_name == "range"
    assert [(m.member_id, m.group_instance_id, m.metadata) for m in response.members] == [(mid, None, b"R")]
    assert response.skip_assignment is False
    assert h.state() == "CompletingRebalance"
    assert h.kinds(ev.MEMBER_ADDED) == [(mid, "dynamic")]
    assert h.kinds(ev.REBALANCE_STARTED) == [
        ("", f"Adding new member {mid} with group instance id None; client reason: not provided")
    ]


def test_generation_bumps_on_each_completed_join():
    h = Harness()
    (a,), gen = h.form_group(1)
    assert gen == 1
    reply = h.join(a, client_id="m0")  # the leader's rejoin forces a rebalance
    assert reply.done
    assert reply.response.generation_id == 2
    assert h.kinds(ev.GENERATION_COMPLETED)[-1][1].startswith("generation 2, leader")


# --- KIP-134 initial rebalance delay -----------------------------------------------------------


def test_initial_delay_parks_the_first_join_for_the_delay():
    h = Harness(group_initial_rebalance_delay_ms=3000)
    _, reply = h.new_member(rebalance=30_000)
    assert not reply.done
    assert h.state() == "PreparingRebalance"
    assert h.model.next_deadline() == pytest.approx(1003.0)
    h.advance(2.999)
    assert not reply.done
    h.advance(0.001)
    assert reply.done
    assert reply.response.generation_id == 1


def test_initial_delay_is_rearmed_while_members_arrive_bounded_by_rebalance_timeout():
    # Kafka: first timer (delay=3000, remaining=rt-3000=7000); each re-arm waits min(3000, remaining)
    # with remaining' = max(remaining - delay, 0): 3000 (4000 left), 3000 (1000 left), 1000 (0 left).
    h = Harness(group_initial_rebalance_delay_ms=3000)
    _, first = h.new_member(client_id="a", rebalance=10_000)
    start = h.now_ms()
    for name in "bcdefg":
        h.advance(2.5)
        if first.done:
            break
        h.new_member(client_id=name, rebalance=10_000)
    # members keep arriving every 2.5 s; the join still completes exactly rt=10 s after the first join
    assert h.now_ms() - start == 10_000
    assert first.response.generation_id == 1
    assert len(first.response.members) == 4  # a, b, c, d joined at 0, 2.5, 5, 7.5 s


def test_initial_delay_completes_after_one_delay_when_nobody_else_arrives():
    h = Harness(group_initial_rebalance_delay_ms=3000)
    _, a = h.new_member(client_id="a", rebalance=60_000)
    h.advance(1)
    _, b = h.new_member(client_id="b", rebalance=60_000)
    h.advance(2)  # t=3: b arrived during the first delay -> one more delay of 3 s
    assert not a.done
    h.advance(2.999)
    assert not a.done
    h.advance(0.001)  # t=6
    assert a.done and b.done
    assert a.response.generation_id == b.response.generation_id == 1


def test_initial_delay_is_not_shortened_by_all_members_having_joined():
    h = Harness(group_initial_rebalance_delay_ms=3000)
    _, a = h.new_member(client_id="a")
    _, b = h.new_member(client_id="b")
    assert not a.done and not b.done  # maybeCompleteJoinPhase refuses during the initial rebalance


# --- the join barrier --------------------------------------------------------------------------


def test_new_member_parks_until_every_member_rejoined():
    h = Harness()
    (a,), gen = h.form_group(1)
    b, b_join = h.new_member(client_id="b")
    assert not b_join.done
    assert h.state() == "PreparingRebalance"
    assert h.heartbeat(a, gen) == codes.REBALANCE_IN_PROGRESS
    a_join = h.join(a, client_id="m0")
    assert a_join.done and b_join.done
    assert a_join.response.generation_id == b_join.response.generation_id == 2
    assert a_join.response.leader == b_join.response.leader == a
    assert [m.member_id for m in a_join.response.members] == [a, b]
    assert b_join.response.members == ()
    assert h.state() == "CompletingRebalance"


def test_member_id_required_does_not_start_a_rebalance():
    h = Harness()
    (a,), gen = h.form_group(1)
    assert h.join(client_id="b").response.error_code == codes.MEMBER_ID_REQUIRED
    assert h.state() == "Stable"
    assert h.heartbeat(a, gen) == codes.NONE


def test_pending_member_holds_the_barrier_until_it_expires():
    h = Harness()
    (a,), _gen = h.form_group(1)
    pending = h.join(client_id="p", session=10_000).response.member_id
    a_join = h.join(a, client_id="m0")
    assert not a_join.done  # hasAllMembersJoined needs no pending members
    h.advance(9.999)
    assert not a_join.done
    h.advance(0.001)  # the pending member's session timeout
    assert a_join.done and a_join.response.generation_id == 2
    assert h.kinds(ev.PENDING_MEMBER_REMOVED) == [(pending, "session timeout")]


def test_pending_member_that_rejoins_completes_the_barrier():
    h = Harness()
    (a,), _gen = h.form_group(1)
    pending = h.join(client_id="p").response.member_id
    a_join = h.join(a, client_id="m0")
    p_join = h.join(pending, client_id="p")
    assert a_join.done and p_join.done
    assert [m.member_id for m in a_join.response.members] == [a, pending]


def test_rebalance_timeout_removes_members_that_did_not_rejoin():
    h = Harness()
    (a, b, c), gen = h.form_group(3, rebalance=20_000, session=30_000)
    a_join = h.join(a, client_id="m0", rebalance=20_000, session=30_000)
    c_join = h.join(c, client_id="m2", rebalance=20_000, session=30_000)
    assert not a_join.done
    h.advance(10)
    assert h.heartbeat(b, gen) == codes.REBALANCE_IN_PROGRESS  # b is alive but does not rejoin
    h.advance(10)
    assert a_join.done and c_join.done
    assert a_join.response.generation_id == gen + 1
    assert [m.member_id for m in a_join.response.members] == [a, c]
    assert h.members() == [a, c]
    assert h.heartbeat(b, gen) == codes.UNKNOWN_MEMBER_ID
    assert (b, "rebalance timeout") in h.kinds(ev.MEMBER_REMOVED)


def test_rebalance_timeout_is_the_max_over_members():
    h = Harness()
    (a, b), _ = h.form_group(2, rebalance=5_000, session=60_000)
    a_join = h.join(a, client_id="m0", rebalance=40_000, session=60_000)
    h.advance(39.999)
    assert not a_join.done
    h.advance(0.001)
    assert a_join.done
    assert h.members() == [a]
    assert b not in h.members()


def test_leader_that_does_not_rejoin_is_replaced_by_a_rejoined_member():
    h = Harness()
    (a, b, c), _gen = h.form_group(3, rebalance=20_000, session=30_000)
    b_join = h.join(b, client_id="m1", rebalance=20_000, session=30_000, protocols=(("range", b"v2"),), reason="new")
    assert h.kinds(ev.REBALANCE_STARTED)[-1] == (
        "",
        f"Updating metadata for member {b} during Stable; client reason: new",
    )
    c_join = h.join(c, client_id="m2", rebalance=20_000, session=30_000, reason="rejoin")
    h.advance(19.999)
    assert not b_join.done
    h.advance(0.001)
    assert b_join.response.leader == c_join.response.leader == b
    assert [(m.member_id, m.metadata) for m in b_join.response.members] == [(b, b"v2"), (c, b"range-meta")]
    assert c_join.response.members == ()
    assert (a, "rebalance timeout") in h.kinds(ev.MEMBER_REMOVED)


def test_leader_rejoin_in_stable_forces_a_rebalance_with_new_generation():
    h = Harness()
    (a, b), gen = h.form_group(2)
    a_join = h.join(a, client_id="m0")
    assert not a_join.done
    assert (
        h.kinds(ev.REBALANCE_STARTED)[-1][1]
        == f"Leader {a} re-joining group during Stable; client reason: not provided"
    )
    b_join = h.join(b, client_id="m1")
    assert a_join.response.generation_id == b_join.response.generation_id == gen + 1


def test_follower_rejoin_with_same_metadata_in_stable_returns_current_generation():
    h = Harness()
    (a, b), gen = h.form_group(2)
    reply = h.join(b, client_id="m1")
    assert reply.done
    response = reply.response
    assert (response.error_code, response.generation_id, response.leader, response.members) == (
        codes.NONE,
        gen,
        a,
        (),
    )
    assert h.state() == "Stable"


def test_follower_rejoin_with_new_metadata_in_stable_rebalances():
    h = Harness()
    (a, b), gen = h.form_group(2)
    reply = h.join(b, client_id="m1", protocols=(("range", b"new"),))
    assert not reply.done
    assert (
        h.kinds(ev.REBALANCE_STARTED)[-1][1]
        == f"Updating metadata for member {b} during Stable; client reason: not provided"
    )
    h.join(a, client_id="m0")
    assert reply.response.generation_id == gen + 1


def test_rejoin_in_completing_rebalance_with_same_metadata_repeats_the_response():
    h = Harness()
    a, a_join = h.new_member(client_id="a")
    assert h.state() == "CompletingRebalance"
    again = h.join(a, client_id="a")
    assert again.done
    assert again.response == a_join.response
    assert h.state() == "CompletingRebalance"


def test_rejoin_in_completing_rebalance_with_new_metadata_rebalances_and_fails_parked_syncs():
    h = Harness()
    (a, b), gen = h.form_group(2)
    h.join(a, client_id="m0")
    h.join(b, client_id="m1")
    assert h.state() == "CompletingRebalance"
    b_sync = h.sync(b, gen + 1)
    assert not b_sync.done
    a_join = h.join(a, client_id="m0", protocols=(("range", b"v2"),))
    assert b_sync.done
    assert b_sync.response.error_code == codes.REBALANCE_IN_PROGRESS
    assert b_sync.response.assignment == b""
    assert b_sync.response.protocol_name is None
    assert not a_join.done
    assert h.state() == "PreparingRebalance"


def test_new_member_join_timeout_drops_a_member_whose_join_stays_parked():
    h = Harness()
    (a, b), gen = h.form_group(2, session=30_000)
    c, c_join = h.new_member(client_id="c", session=30_000, rebalance=600_000)
    # a and b keep heartbeating but never rejoin; c's JoinGroup may wait at most 5 minutes
    for _ in range(NEW_MEMBER_JOIN_TIMEOUT_MS // 10_000):
        assert not c_join.done
        h.advance(10)
        h.heartbeat(a, gen)
        h.heartbeat(b, gen)
    assert c_join.done
    assert (c_join.response.error_code, c_join.response.member_id) == (codes.UNKNOWN_MEMBER_ID, "")
    assert (c, "new member join timeout") in h.kinds(ev.MEMBER_REMOVED)


# --- protocols ---------------------------------------------------------------------------------


def test_protocol_chosen_by_vote_over_common_protocols():
    h = Harness(group_initial_rebalance_delay_ms=1000)
    _, a = h.new_member(client_id="a", protocols=(("range", b"ra"), ("roundrobin", b"rra")))
    _, _b = h.new_member(client_id="b", protocols=(("roundrobin", b"rrb"), ("sticky", b"sb")))
    _, _c = h.new_member(client_id="c", protocols=(("sticky", b"sc"), ("roundrobin", b"rrc")))
    h.advance(2)
    # candidates (supported by all): {roundrobin}; everybody votes roundrobin
    assert a.response.protocol_name == "roundrobin"
    assert [m.metadata for m in a.response.members] == [b"rra", b"rrb", b"rrc"]


def test_protocol_vote_majority_wins():
    h = Harness(group_initial_rebalance_delay_ms=1000)
    both = (("range", b""), ("roundrobin", b""))
    _, a = h.new_member(client_id="a", protocols=both)
    h.new_member(client_id="b", protocols=(("roundrobin", b""), ("range", b"")))
    h.new_member(client_id="c", protocols=(("roundrobin", b""), ("range", b"")))
    h.advance(2)
    assert a.response.protocol_name == "roundrobin"


@pytest.mark.parametrize("first_member_prefers", ["range", "sticky"])
def test_protocol_vote_tie_breaks_in_java_hashmap_order(first_member_prefers):
    # "sticky" hashes to bucket 8 and "range" to bucket 9 of a 16-bucket HashMap: sticky wins a tie
    # whatever the member order (not alphabetical, not first-voter).
    h = Harness(group_initial_rebalance_delay_ms=1000)
    other = "range" if first_member_prefers == "sticky" else "sticky"
    _, a = h.new_member(client_id="a", protocols=((first_member_prefers, b""), (other, b"")))
    h.new_member(client_id="b", protocols=((other, b""), (first_member_prefers, b"")))
    h.advance(2)
    assert a.response.protocol_name == "sticky"


@pytest.mark.parametrize(
    ("protocol_type", "protocols"),
    [
        ("consumer", (("roundrobin", b""),)),  # no common protocol
        ("connect", (("range", b""),)),  # protocol type differs from the group's
        ("consumer", ()),  # no protocol at all
    ],
)
def test_inconsistent_group_protocol_for_a_new_member(protocol_type, protocols):
    h = Harness()
    h.form_group(1)
    response = h.join(protocol_type=protocol_type, protocols=protocols).response
    assert (response.error_code, response.member_id) == (codes.INCONSISTENT_GROUP_PROTOCOL, "")


@pytest.mark.parametrize(("protocol_type", "protocols"), [("", (("range", b""),)), ("consumer", ())])
def test_inconsistent_group_protocol_for_the_first_member(protocol_type, protocols):
    h = Harness()
    assert h.join(protocol_type=protocol_type, protocols=protocols).response.error_code == (
        codes.INCONSISTENT_GROUP_PROTOCOL
    )


def test_inconsistent_group_protocol_for_an_existing_member_keeps_its_id():
    h = Harness()
    (_a, b), _ = h.form_group(2)
    response = h.join(b, client_id="m1", protocols=(("cooperative-sticky", b""),)).response
    assert (response.error_code, response.member_id) == (codes.INCONSISTENT_GROUP_PROTOCOL, b)


# --- KIP-389 group.max.size --------------------------------------------------------------------


def test_group_max_size_rejects_a_new_member_of_a_full_group():
    h = Harness(group_max_size=2)
    (a, b), _gen = h.form_group(2)
    # acceptJoiningMember runs before MEMBER_ID_REQUIRED: a full Stable group refuses at once
    response = h.join(client_id="c").response
    assert (response.error_code, response.member_id) == (codes.GROUP_MAX_SIZE_REACHED, "")
    assert h.kinds(ev.PENDING_MEMBER_ADDED)[-1][0] != "c-3"
    assert h.members() == [a, b]
    assert h.state() == "Stable"


def test_group_max_size_during_preparing_rebalance_counts_parked_joins():
    h = Harness(group_max_size=2)
    (a, b), gen = h.form_group(2)
    a_join = h.join(a, client_id="m0")
    c_id = h.join(client_id="c").response.member_id
    # one parked join (a) < 2: c is accepted and parks
    c_join = h.join(c_id, client_id="c")
    assert not c_join.done
    # now two are parked: b, although a member, is over the limit and is dropped
    b_join = h.join(b, client_id="m1")
    assert b_join.response.error_code == codes.GROUP_MAX_SIZE_REACHED
    assert (b, "group max size reached") in h.kinds(ev.MEMBER_REMOVED)
    h.advance(30)
    assert a_join.response.generation_id == gen + 1
    assert [m.member_id for m in a_join.response.members] == [a, c_id]


def test_join_for_another_group_is_independent():
    h = Harness()
    h.form_group(1)
    _, reply = h.new_member(group="other")
    assert reply.response.generation_id == 1
    assert h.state("other") == "CompletingRebalance"
    assert h.state(G) == "Stable"


def test_pending_member_rejoining_with_an_instance_id_is_unknown_server_error_without_member_id():
    # classicGroupJoinExistingMember throws IllegalStateException for a static pending member; the exception
    # handler of GroupCoordinatorService.joinGroup answers JoinGroupResponseData with the error code only.
    h = Harness()
    pending = h.join(client_id="p").response.member_id
    response = h.join(pending, client_id="p", instance="i").response
    assert (response.error_code, response.member_id, response.generation_id) == (codes.UNKNOWN_SERVER_ERROR, "", -1)
