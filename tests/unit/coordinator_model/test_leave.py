"""LeaveGroup: v0-2 and v3+ forms, KIP-800 reasons, rebalances caused by leaving."""

from __future__ import annotations

import pytest

from kgroup import _error_codes as codes
from kgroup.testing.coordinator import LeaveMember, LeaveMemberResult
from kgroup.testing.coordinator import _events as ev
from tests.unit.coordinator_model.helpers import Harness


@pytest.mark.parametrize("version", [0, 1, 2])
def test_v0_to_v2_single_member_top_level_error(version):
    h = Harness()
    (a, b), _gen = h.form_group(2)
    response = h.leave(LeaveMember(member_id=b), version=version)
    assert (response.error_code, response.members) == (codes.NONE, ())
    assert h.members() == [a]
    response = h.leave(LeaveMember(member_id="ghost"), version=version)
    assert (response.error_code, response.members) == (codes.UNKNOWN_MEMBER_ID, ())


def test_v3_batch_reports_per_member_errors_with_top_level_none():
    h = Harness()
    (_a, b, _c), _gen = h.form_group(3)
    response = h.leave(LeaveMember(member_id=b, reason="scaling down"), LeaveMember(member_id="ghost"), version=3)
    assert response.error_code == codes.NONE
    assert response.members == (
        LeaveMemberResult(member_id=b, group_instance_id=None, error_code=codes.NONE),
        LeaveMemberResult(member_id="ghost", group_instance_id=None, error_code=codes.UNKNOWN_MEMBER_ID),
    )
    assert (b, "left: scaling down") in h.kinds(ev.MEMBER_REMOVED)


def test_leave_reason_defaults_to_not_provided():
    h = Harness()
    (_a, b), _ = h.form_group(2)
    h.leave(LeaveMember(member_id=b))
    assert (b, "left: not provided") in h.kinds(ev.MEMBER_REMOVED)


def test_leave_of_an_unknown_group():
    h = Harness()
    response = h.leave(LeaveMember(member_id="x"), group="nope")
    assert response.error_code == codes.NONE
    assert response.members[0].error_code == codes.UNKNOWN_MEMBER_ID
    assert h.leave(LeaveMember(member_id="x"), group="nope", version=1).error_code == codes.UNKNOWN_MEMBER_ID
    assert h.leave(LeaveMember(member_id="x"), group="").error_code == codes.INVALID_GROUP_ID


def test_leave_triggers_a_rebalance_that_completes_when_the_rest_rejoin():
    h = Harness()
    (a, b, c), gen = h.form_group(3)
    h.leave(LeaveMember(member_id=b))
    assert h.state() == "PreparingRebalance"
    assert h.kinds(ev.REBALANCE_STARTED)[-1][1] == f"explicit `LeaveGroup` request for ({b}) members."
    assert h.heartbeat(a, gen) == codes.REBALANCE_IN_PROGRESS
    a_join = h.join(a, client_id="m0")
    assert not a_join.done
    c_join = h.join(c, client_id="m2")
    assert a_join.done and c_join.done
    assert [m.member_id for m in a_join.response.members] == [a, c]


def test_last_member_leaving_empties_the_group():
    h = Harness()
    (a,), gen = h.form_group(1)
    h.leave(LeaveMember(member_id=a))
    assert h.state() == "Empty"
    assert h.kinds(ev.GENERATION_COMPLETED)[-1] == ("", f"generation {gen + 1}, Empty")
    assert h.list_groups().groups[0].protocol_type == "consumer"  # kept by an Empty group


def test_leader_leaving_passes_leadership():
    h = Harness()
    (a, b), _gen = h.form_group(2)
    h.leave(LeaveMember(member_id=a))
    b_join = h.join(b, client_id="m1")
    assert b_join.done
    assert b_join.response.leader == b


def test_leaving_during_preparing_rebalance_lets_the_barrier_complete():
    h = Harness()
    (a, b, c), _gen = h.form_group(3)
    a_join = h.join(a, client_id="m0")
    b_join = h.join(b, client_id="m1")
    assert not a_join.done
    h.leave(LeaveMember(member_id=c))
    assert a_join.done and b_join.done
    assert [m.member_id for m in a_join.response.members] == [a, b]


def test_leaving_while_parked_in_join_answers_the_join_unknown_member_id():
    h = Harness()
    (a, _b), _gen = h.form_group(2)
    a_join = h.join(a, client_id="m0")
    h.leave(LeaveMember(member_id=a))
    assert (a_join.response.error_code, a_join.response.member_id) == (codes.UNKNOWN_MEMBER_ID, "")


def test_pending_member_can_leave_and_that_counts_as_a_leave():
    h = Harness()
    (_a,), _gen = h.form_group(1)
    pending = h.join(client_id="p").response.member_id
    response = h.leave(LeaveMember(member_id=pending))
    assert response.members[0].error_code == codes.NONE
    assert h.kinds(ev.PENDING_MEMBER_REMOVED) == [(pending, "left: not provided")]
    assert h.state() == "PreparingRebalance"  # Kafka rebalances on any successful leave


def test_leave_in_completing_rebalance_answers_parked_syncs():
    h = Harness()
    (a, b, c), gen = h.form_group(3)
    h.join(a, client_id="m0")
    h.join(b, client_id="m1")
    h.join(c, client_id="m2")
    b_sync = h.sync(b, gen + 1)
    h.leave(LeaveMember(member_id=c))
    assert b_sync.response.error_code == codes.REBALANCE_IN_PROGRESS
    assert h.state() == "PreparingRebalance"
