"""Seed 000's worked tables: one topic with 8 partitions, consumers C0..C3 grown 1 -> 4.

Source: seeds/000_38713d5dd34a24ec.txt, "Range assignor" and "Round-robin assignor".
A "move" is a partition whose owner changes between two consecutive plans (the seed's swaps).
Also the static-member ordering of KIP-345 (seed 004): a restarted static member with a new
member id keeps its partitions.
"""

from __future__ import annotations

import pytest

from kgroup.assignors import (
    MemberSubscription,
    RangeAssignor,
    RoundRobinAssignor,
    validate_plan,
)
from kgroup.types import RebalanceProtocol, TopicPartition

TOPIC = "T"
PARTITIONS = {TOPIC: 8}


def _members(n: int) -> dict[str, MemberSubscription]:
    return {
        f"C{i}": MemberSubscription(member_id=f"C{i}", topics=frozenset({TOPIC})) for i in range(n)
    }


def _p(*numbers: int) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(TOPIC, n) for n in numbers)


def _moves(before, after) -> int:
    owner_before = {tp: m for m, tps in before.items() for tp in tps}
    owner_after = {tp: m for m, tps in after.items() for tp in tps}
    return sum(1 for tp, m in owner_after.items() if owner_before.get(tp) != m)


RANGE_TABLES = {
    1: {"C0": _p(0, 1, 2, 3, 4, 5, 6, 7)},
    2: {"C0": _p(0, 1, 2, 3), "C1": _p(4, 5, 6, 7)},
    3: {"C0": _p(0, 1, 2), "C1": _p(3, 4, 5), "C2": _p(6, 7)},
    4: {"C0": _p(0, 1), "C1": _p(2, 3), "C2": _p(4, 5), "C3": _p(6, 7)},
}

ROUNDROBIN_TABLES = {
    1: {"C0": _p(0, 1, 2, 3, 4, 5, 6, 7)},
    2: {"C0": _p(0, 2, 4, 6), "C1": _p(1, 3, 5, 7)},
    3: {"C0": _p(0, 3, 6), "C1": _p(1, 4, 7), "C2": _p(2, 5)},
    4: {"C0": _p(0, 4), "C1": _p(1, 5), "C2": _p(2, 6), "C3": _p(3, 7)},
}


def _assert_table(assignor, table, consumers):
    members = _members(consumers)
    plan = assignor.assign(PARTITIONS, members)
    assert dict(plan) == table
    validate_plan(plan, members, PARTITIONS, RebalanceProtocol.EAGER)


@pytest.mark.parametrize("consumers", [1, 2, 3, 4])
def test_range_seed000_table_matches(consumers):
    _assert_table(RangeAssignor(), RANGE_TABLES[consumers], consumers)


@pytest.mark.parametrize("consumers", [1, 2, 3, 4])
def test_roundrobin_seed000_table_matches(consumers):
    _assert_table(RoundRobinAssignor(), ROUNDROBIN_TABLES[consumers], consumers)


@pytest.mark.parametrize(("grow", "moves"), [((1, 2), 4), ((2, 3), 3), ((3, 4), 5)])
def test_range_seed000_growth_moves_match_seed(grow, moves):
    before, after = (RangeAssignor().assign(PARTITIONS, _members(n)) for n in grow)
    assert _moves(before, after) == moves


@pytest.mark.parametrize(("grow", "moves"), [((1, 2), 4), ((2, 3), 4), ((3, 4), 5)])
def test_roundrobin_seed000_growth_moves_match_seed(grow, moves):
    before, after = (RoundRobinAssignor().assign(PARTITIONS, _members(n)) for n in grow)
    assert _moves(before, after) == moves


def test_range_seed000_two_to_three_delta_matches_table():
    before = RangeAssignor().assign(PARTITIONS, _members(2))
    after = RangeAssignor().assign(PARTITIONS, _members(3))
    assert before["C0"] - after["C0"] == _p(3)
    assert before["C1"] - after["C1"] == _p(6, 7)
    assert after["C1"] - before["C1"] == _p(3)
    assert after["C2"] == _p(6, 7)


# --- static membership (KIP-345, seed 004) ---------------------------------------------------


def _static(instance_id: str, member_id: str, topic: str = "S") -> MemberSubscription:
    return MemberSubscription(
        member_id=member_id, group_instance_id=instance_id, topics=frozenset({topic})
    )


@pytest.mark.parametrize("assignor", [RangeAssignor(), RoundRobinAssignor()], ids=repr)
def test_assignors_static_restart_new_member_id_keeps_partitions(assignor):
    # seed 004: static members A, B, C with member ids 1, 2, 3; A restarts and becomes 4.
    partitions = {"S": 9}
    before_members = {"1": _static("A", "1"), "2": _static("B", "2"), "3": _static("C", "3")}
    after_members = {"4": _static("A", "4"), "2": _static("B", "2"), "3": _static("C", "3")}
    before = assignor.assign(partitions, before_members)
    after = assignor.assign(partitions, after_members)
    assert after["4"] == before["1"]
    assert after["2"] == before["2"]
    assert after["3"] == before["3"]


def test_range_static_seed004_example_ranges():
    partitions = {"S": 9}
    members = {"4": _static("A", "4"), "2": _static("B", "2"), "3": _static("C", "3")}
    plan = RangeAssignor().assign(partitions, members)
    assert plan == {
        "4": frozenset(TopicPartition("S", n) for n in (0, 1, 2)),
        "2": frozenset(TopicPartition("S", n) for n in (3, 4, 5)),
        "3": frozenset(TopicPartition("S", n) for n in (6, 7, 8)),
    }


def test_range_dynamic_seed004_example_all_ranges_shift():
    # without instance ids the leader sorts by member id, so every range moves (seed 004)
    partitions = {"S": 9}
    dyn = {m: MemberSubscription(member_id=m, topics=frozenset({"S"})) for m in ("2", "3", "4")}
    plan = RangeAssignor().assign(partitions, dyn)
    assert plan["2"] == frozenset(TopicPartition("S", n) for n in (0, 1, 2))
    assert plan["4"] == frozenset(TopicPartition("S", n) for n in (6, 7, 8))


@pytest.mark.parametrize("assignor", [RangeAssignor(), RoundRobinAssignor()], ids=repr)
def test_assignors_static_members_sort_before_dynamic(assignor):
    members = {
        "a-dynamic": MemberSubscription(member_id="a-dynamic", topics=frozenset({"S"})),
        "z-static": _static("inst", "z-static"),
    }
    plan = assignor.assign({"S": 1}, members)
    assert plan["z-static"] == frozenset({TopicPartition("S", 0)})
    assert plan["a-dynamic"] == frozenset()
