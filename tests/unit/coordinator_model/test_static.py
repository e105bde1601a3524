"""Static membership (KIP-345, seed 004) and skip_assignment (KIP-814)."""

from __future__ import annotations

import pytest

from kgroup import _error_codes as codes
from kgroup.testing.coordinator import LeaveMember
from kgroup.testing.coordinator import _events as ev
from tests.unit.coordinator_model.helpers import Harness

ST = {"session": 30_000, "rebalance": 20_000}


def _static_group(h: Harness, instances=("i0", "i1"), version: int = 9):
    """A Stable group of static members (delay 0): member ids by instance, generation."""
    ids: dict[str, str] = {}
    for instance in instances:
        replies = {instance: h.join(instance=instance, client_id=instance, version=version, **ST)}
        for other, mid in ids.items():
            replies[other] = h.join(mid, instance=other, client_id=other, version=version, **ST)
        for inst, reply in replies.items():
            assert reply.done and reply.response.error_code == codes.NONE, reply
            ids[inst] = reply.response.member_id
        gen = replies[instance].response.generation_id
        leader = replies[instance].response.leader
        for inst, mid in ids.items():
            if mid != leader:
                h.sync(mid, gen, instance=inst)
        leader_inst = next(inst for inst, mid in ids.items() if mid == leader)
        h.sync(leader, gen, {mid: f"a-{inst}".encode() for inst, mid in ids.items()}, instance=leader_inst)
    assert h.state() == "Stable"
    return ids, gen


def test_static_restart_in_stable_replaces_the_member_id_without_rebalance():
    h = Harness()
    ids, gen = _static_group(h)
    old = ids["i1"]
    reply = h.join(instance="i1", client_id="i1", **ST)
    assert reply.done
    response = reply.response
    new = response.member_id
    assert new != old and new.startswith("i1-")
    assert (response.error_code, response.generation_id, response.leader) == (codes.NONE, gen, ids["i0"])
    assert (response.skip_assignment, response.members) == (False, ())
    assert h.state() == "Stable"
    sync = h.sync(new, gen, instance="i1").response
    assert (sync.error_code, sync.assignment) == (codes.NONE, b"a-i1")
    assert h.members() == [ids["i0"], new]
    assert h.kinds(ev.STATIC_MEMBER_REPLACED) == [(new, f"instance i1: replaces {old}")]
    assert (old, "fenced") in h.kinds(ev.MEMBER_REMOVED)
    assert h.kinds(ev.REBALANCE_STARTED)[-1][0] == ""  # no new rebalance event
    assert len(h.kinds(ev.REBALANCE_STARTED)) == 2


def test_old_member_id_is_fenced_everywhere():
    h = Harness()
    ids, gen = _static_group(h)
    old = ids["i1"]
    new = h.join(instance="i1", client_id="i1", **ST).response.member_id
    assert h.heartbeat(old, gen, instance="i1") == codes.FENCED_INSTANCE_ID
    assert h.sync(old, gen, instance="i1").response.error_code == codes.FENCED_INSTANCE_ID
    assert h.join(old, instance="i1", client_id="i1", **ST).response.error_code == codes.FENCED_INSTANCE_ID
    assert h.commit_errors({("t", 0): 1}, member_id=old, generation=gen, instance="i1") == {
        ("t", 0): codes.FENCED_INSTANCE_ID
    }
    leave = h.leave(LeaveMember(member_id=old, group_instance_id="i1"))
    assert leave.members[0].error_code == codes.FENCED_INSTANCE_ID
    # without the instance id the old id is simply unknown
    assert h.heartbeat(old, gen) == codes.UNKNOWN_MEMBER_ID
    assert h.heartbeat(new, gen, instance="i1") == codes.NONE
    assert h.members() == [ids["i0"], new]


def test_unknown_instance_id_is_unknown_member_id():
    h = Harness()
    ids, gen = _static_group(h)
    assert h.heartbeat(ids["i1"], gen, instance="nobody") == codes.UNKNOWN_MEMBER_ID
    assert h.join(ids["i1"], instance="nobody", **ST).response.error_code == codes.UNKNOWN_MEMBER_ID


def test_restarted_static_leader_v9_gets_skip_assignment_and_the_member_list():
    h = Harness()
    ids, gen = _static_group(h)
    response = h.join(instance="i0", client_id="i0", version=9, **ST).response
    new = response.member_id
    assert response.error_code == codes.NONE
    assert response.skip_assignment is True
    assert response.leader == new
    assert [(m.member_id, m.group_instance_id) for m in response.members] == [(ids["i1"], "i1"), (new, "i0")]
    assert response.generation_id == gen
    assert h.state() == "Stable"
    # its SyncGroup in Stable returns the stored assignment
    assert h.sync(new, gen, instance="i0").response.assignment == b"a-i0"


@pytest.mark.parametrize("version", [5, 8])
def test_restarted_static_leader_below_v9_is_told_the_old_leader_id(version):
    # Kafka answers with the leader id from before the replacement: the restarted leader thinks it
    # is a follower, sends an empty SyncGroup and gets its stored assignment.
    h = Harness()
    ids, gen = _static_group(h, version=version)
    response = h.join(instance="i0", client_id="i0", version=version, **ST).response
    assert response.error_code == codes.NONE
    assert response.leader == ids["i0"] != response.member_id
    assert (response.skip_assignment, response.members) == (False, ())
    assert h.sync(response.member_id, gen, instance="i0").response.assignment == b"a-i0"


def test_static_rejoin_with_a_changed_protocol_choice_rebalances():
    h = Harness()
    _ids, _gen = _static_group(h)
    both = (("roundrobin", b""), ("range", b""))
    # i0 now prefers roundrobin but i1 only supports range: the choice stays range -> no rebalance
    assert h.join(instance="i0", protocols=both, **ST).done
    assert h.state() == "Stable"


def test_static_rejoin_that_would_change_the_selected_protocol_rebalances():
    h = Harness()
    both = (("roundrobin", b""), ("range", b""))
    _ids, gen = _static_group(h, instances=("i0",))
    # a single member: switching its preference changes the vote
    reply = h.join(instance="i0", protocols=both, reason="upgrade", **ST)
    new = h.kinds(ev.STATIC_MEMBER_REPLACED)[-1][0]
    assert h.kinds(ev.REBALANCE_STARTED)[-1][1] == (
        f"Group's selectedProtocol will change because static member {new} with instance id i0 "
        "joined with change of protocol; client reason: upgrade"
    )
    assert reply.done  # the only member rejoined: the barrier completes at once
    assert reply.response.protocol_name == "roundrobin"
    assert reply.response.generation_id == gen + 1


def test_static_rejoin_during_completing_rebalance_forces_a_rebalance():
    h = Harness()
    ids, gen = _static_group(h)
    h.join(ids["i0"], instance="i0", client_id="i0", **ST)  # the leader's rejoin: a new generation
    h.join(ids["i1"], instance="i1", client_id="i1", **ST)
    assert h.state() == "CompletingRebalance"
    i1_sync = h.sync(ids["i1"], gen + 1, instance="i1")
    assert not i1_sync.done
    restarted = h.join(instance="i1", client_id="i1", **ST)
    # the old id's parked SyncGroup is fenced; the group rebalances (the leader may be assigning
    # to the old id) instead of answering from the cache
    assert i1_sync.response.error_code == codes.FENCED_INSTANCE_ID
    assert h.state() == "PreparingRebalance"
    assert not restarted.done
    new = h.kinds(ev.STATIC_MEMBER_REPLACED)[-1][0]
    assert h.kinds(ev.REBALANCE_STARTED)[-1][1] == (
        f"Updating metadata for static member {new} with instance id i1; client reason: not provided"
    )
    leader_join = h.join(ids["i0"], instance="i0", client_id="i0", **ST)
    assert leader_join.done and restarted.done
    assert restarted.response.generation_id == gen + 2


def test_static_restart_during_preparing_rebalance_fences_the_parked_join():
    h = Harness()
    ids, gen = _static_group(h, instances=("i0", "i1", "i2"))
    leader_join = h.join(ids["i0"], instance="i0", client_id="i0", **ST)
    parked = h.join(ids["i1"], instance="i1", client_id="i1", **ST)
    assert not parked.done
    restarted = h.join(instance="i1", client_id="i1", **ST)
    assert (parked.response.error_code, parked.response.member_id) == (codes.FENCED_INSTANCE_ID, ids["i1"])
    assert not restarted.done  # it takes the old member's place at the barrier
    h.join(ids["i2"], instance="i2", client_id="i2", **ST)
    assert leader_join.done and restarted.done
    new = restarted.response.member_id
    assert new != ids["i1"]
    assert restarted.response.generation_id == gen + 1
    assert [m.member_id for m in leader_join.response.members] == [ids["i0"], ids["i2"], new]


def test_join_with_a_wrong_member_id_for_a_known_instance_is_fenced():
    h = Harness()
    ids, _gen = _static_group(h)
    response = h.join(ids["i0"], instance="i1", **ST).response
    assert (response.error_code, response.member_id) == (codes.FENCED_INSTANCE_ID, ids["i0"])
    assert h.state() == "Stable"


def test_static_member_survives_the_rebalance_timeout_but_not_its_session_timeout():
    h = Harness()
    ids, gen = _static_group(h, instances=("i0", "i1", "i2"))
    # i1 (static) and i2 stay silent; i0 (leader) rejoins and waits the rebalance timeout (20 s)
    leader_join = h.join(ids["i0"], instance="i0", client_id="i0", **ST)
    h.advance(20)
    assert leader_join.done
    # static members are not removed when they miss the rebalance: they are in the new generation
    assert [m.member_id for m in leader_join.response.members] == [ids["i0"], ids["i1"], ids["i2"]]
    h.sync(ids["i0"], gen + 1, {}, instance="i0")
    # the join completion re-armed every session (30 s, until t=50) and awaits SyncGroup from
    # everyone within the rebalance timeout (until t=40): Kafka then drops i1 and i2 too
    h.advance(19.999)
    assert h.heartbeat(ids["i0"], gen + 1, instance="i0") == codes.NONE
    assert len(h.members()) == 3
    h.advance(0.001)
    assert h.members() == [ids["i0"]]
    assert [m for m, d in h.kinds(ev.MEMBER_REMOVED) if d == "pending sync timeout"] == [ids["i1"], ids["i2"]]


def test_static_leader_that_does_not_rejoin_keeps_membership_but_loses_leadership():
    h = Harness()
    ids, _gen = _static_group(h, instances=("i0", "i1"))
    i1_join = h.join(ids["i1"], instance="i1", client_id="i1", protocols=(("range", b"v2"),), **ST)
    h.advance(20)
    assert i1_join.done
    assert i1_join.response.leader == ids["i1"]
    assert [m.member_id for m in i1_join.response.members] == [ids["i0"], ids["i1"]]


def test_leave_by_instance_id_removes_the_static_member():
    h = Harness()
    ids, _gen = _static_group(h)
    response = h.leave(LeaveMember(member_id="", group_instance_id="i1", reason="admin"))
    assert response.members[0].error_code == codes.NONE
    assert response.members[0].member_id == ""
    assert h.members() == [ids["i0"]]
    assert (ids["i1"], "left: admin") in h.kinds(ev.MEMBER_REMOVED)
    assert h.state() == "PreparingRebalance"
    assert any(ids["i1"] in detail for _, detail in h.kinds(ev.REBALANCE_STARTED))
    unknown = h.leave(LeaveMember(member_id="", group_instance_id="nobody"))
    assert unknown.members[0].error_code == codes.UNKNOWN_MEMBER_ID


def test_static_member_leave_with_its_own_ids():
    h = Harness()
    ids, _gen = _static_group(h)
    response = h.leave(LeaveMember(member_id=ids["i1"], group_instance_id="i1"))
    assert response.members[0].error_code == codes.NONE
    assert h.members() == [ids["i0"]]


def test_static_member_without_leave_keeps_its_assignment_until_session_timeout():
    h = Harness()
    ids, gen = _static_group(h)
    for _ in range(5):
        h.advance(5)
        assert h.heartbeat(ids["i0"], gen, instance="i0") == codes.NONE
    assert h.members() == [ids["i0"], ids["i1"]]
    h.advance(5)  # i1's 30 s session
    assert h.heartbeat(ids["i0"], gen, instance="i0") == codes.REBALANCE_IN_PROGRESS
