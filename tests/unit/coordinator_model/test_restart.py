"""Coordinator failover: parked replies, reload from the last persisted state, the load window."""

from __future__ import annotations

import pytest

from kgroup import _error_codes as codes
from kgroup.testing.coordinator import DescribeGroupsRequest, LeaveMember
from kgroup.testing.coordinator import _events as ev
from tests.unit.coordinator_model.helpers import Harness


def test_parked_joins_and_syncs_get_not_coordinator():
    h = Harness()
    (a, _b, _c), _gen = h.form_group(3)
    a_join = h.join(a, client_id="m0")
    h2 = Harness()
    (x, y), gen2 = h2.form_group(2)
    h2.join(x, client_id="m0")
    h2.join(y, client_id="m1")
    y_sync = h2.sync(y, gen2 + 1)
    h.model.restart()
    h2.model.restart()
    assert (a_join.response.error_code, a_join.response.member_id) == (codes.NOT_COORDINATOR, a)
    assert y_sync.response.error_code == codes.NOT_COORDINATOR
    assert h.kinds(ev.COORDINATOR_RESTARTED, group="") == [("", "load_ms=0")]


def test_stable_group_reloads_as_it_was_with_fresh_session_timers():
    h = Harness()
    (a, b), gen = h.form_group(2, session=10_000)
    h.advance(8)
    h.model.restart()
    assert h.state() == "Stable"
    assert h.members() == [a, b]
    assert [m.member_assignment for m in h.describe().members] == [f"a-{a}".encode(), f"a-{b}".encode()]
    h.advance(9.999)  # timers restarted at the reload: nobody expired at their old deadline
    assert h.members() == [a, b]
    assert h.heartbeat(a, gen) == codes.NONE
    assert h.sync(b, gen).response.assignment == f"a-{b}".encode()
    h.advance(0.001)
    assert h.members() == [a]


def test_an_in_flight_rebalance_is_lost_and_the_last_synced_generation_returns():
    h = Harness()
    (a, b), gen = h.form_group(2)
    c, c_join = h.new_member(client_id="c")
    h.join(a, client_id="m0")
    h.join(b, client_id="m1")
    assert c_join.response.generation_id == gen + 1
    assert h.state() == "CompletingRebalance"
    h.model.restart()
    assert h.state() == "Stable"
    assert h.members() == [a, b]  # c was never persisted: the last SyncGroup stored [a, b]
    assert h.heartbeat(c, gen + 1) == codes.UNKNOWN_MEMBER_ID
    assert h.heartbeat(a, gen + 1) == codes.ILLEGAL_GENERATION
    assert h.heartbeat(a, gen) == codes.NONE


def test_leader_and_protocol_are_reloaded():
    h = Harness()
    (a, _b), _gen = h.form_group(2, protocols=(("roundrobin", b"x"),))
    h.model.restart()
    assert h.describe().protocol_data == "roundrobin"
    # the leader's rejoin still forces a rebalance: it is still the leader
    a_join = h.join(a, client_id="m0", protocols=(("roundrobin", b"x"),))
    assert not a_join.done
    assert h.state() == "PreparingRebalance"


def test_group_that_emptied_reloads_empty_and_pending_members_are_lost():
    h = Harness()
    (a,), _gen = h.form_group(1)
    h.leave(LeaveMember(member_id=a))
    pending = h.join(client_id="p").response.member_id
    h.model.restart()
    assert h.state() == "Empty"
    # the pending id is unknown now: the rejoin with it is refused... as an unknown member of an Empty group
    assert h.join(pending, client_id="p").response.error_code == codes.UNKNOWN_MEMBER_ID


def test_offsets_and_simple_groups_survive_a_restart():
    h = Harness()
    h.commit({("t", 0): 42}, group="simple")
    h.model.restart()
    assert h.state("simple") == "Empty"
    assert h.fetch({"t": (0,)}, group="simple").topics[0].partitions[0].committed_offset == 42


def test_static_replacement_is_persisted():
    h = Harness()
    ids = {}
    for inst in ("i0",):
        ids[inst] = h.join(instance=inst, client_id=inst).response.member_id
    gen = 1
    h.sync(ids["i0"], gen, {ids["i0"]: b"A"}, instance="i0")
    new = h.join(instance="i0", client_id="i0", version=9).response.member_id
    h.model.restart()
    assert h.members() == [new]
    assert h.heartbeat(ids["i0"], gen, instance="i0") == codes.FENCED_INSTANCE_ID
    assert h.sync(new, gen, instance="i0").response.assignment == b"A"


def test_load_window_answers_coordinator_load_in_progress():
    h = Harness()
    (a, b), gen = h.form_group(2, session=10_000)
    h.commit({("t", 0): 1}, member_id=a, generation=gen)
    h.model.restart(load_ms=5_000)
    assert h.model.next_deadline() == pytest.approx(h.clock.monotonic() + 5.0)
    assert h.join(a, client_id="m0").response.error_code == codes.COORDINATOR_LOAD_IN_PROGRESS
    assert h.sync(a, gen).response.error_code == codes.COORDINATOR_LOAD_IN_PROGRESS
    assert h.commit_errors({("t", 0): 2}, member_id=a, generation=gen) == {("t", 0): codes.COORDINATOR_LOAD_IN_PROGRESS}
    assert h.fetch({"t": (0,)}).error_code == codes.COORDINATOR_LOAD_IN_PROGRESS
    assert h.leave(LeaveMember(member_id=b)).error_code == codes.COORDINATOR_LOAD_IN_PROGRESS
    assert h.list_groups().error_code == codes.COORDINATOR_LOAD_IN_PROGRESS
    described = h.model.describe_groups(DescribeGroupsRequest(api_version=5, groups=("g",))).response.groups[0]
    assert (described.group_id, described.error_code) == ("g", codes.COORDINATOR_LOAD_IN_PROGRESS)
    # GroupCoordinatorService.heartbeat answers NONE while the group loads
    assert h.heartbeat("anyone", 99) == codes.NONE
    # request validation still comes first
    assert h.join(group="", client_id="x").response.error_code == codes.INVALID_GROUP_ID
    assert h.join(session=1).response.error_code == codes.INVALID_SESSION_TIMEOUT
    h.advance(4.999)
    assert h.sync(a, gen).response.error_code == codes.COORDINATOR_LOAD_IN_PROGRESS
    h.advance(0.001)
    assert h.heartbeat(a, gen) == codes.NONE
    assert h.heartbeat("anyone", 99) == codes.UNKNOWN_MEMBER_ID
    assert h.fetch({"t": (0,)}).topics[0].partitions[0].committed_offset == 1
    # session timers start when the load completes
    h.advance(9.999)
    assert b in h.members()
    h.advance(0.001)
    assert b not in h.members()


def test_restart_rejects_negative_load():
    h = Harness()
    with pytest.raises(ValueError, match="load_ms"):
        h.model.restart(load_ms=-1)


def test_over_capacity_group_rebalances_after_load():
    h = Harness(group_max_size=3)
    h.form_group(3)
    h.model._config = type(h.model.config)(group_initial_rebalance_delay_ms=0, group_max_size=2)
    h.model.restart()
    assert h.state() == "PreparingRebalance"
    assert h.kinds(ev.REBALANCE_STARTED)[-1][1].startswith("Freshly-loaded group g (size 3) is over capacity 2")
