"""Rack awareness (KIP-881) never costs validity or balance: properties over random racks.

Java's promise for range: "retaining the same co-partitioning and per-topic balancing
guarantees as non-rack-aware range assignment"; for the sticky assignors: "prioritizing
balanced assignment over rack alignment".
"""

from __future__ import annotations

from collections import Counter

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kgroup.assignors import CooperativeStickyAssignor, MemberSubscription, RangeAssignor, StickyAssignor
from kgroup.assignors.validate import validate_plan
from kgroup.types import PartitionInfo, RebalanceProtocol, TopicPartition

RACKS = ["a", "b", "c", "d"]


@st.composite
def racked_groups(draw, *, identical: bool):
    topic_count = draw(st.integers(1, 3))
    counts = {f"t{i}": draw(st.integers(1, 12)) for i in range(topic_count)}
    partitions = {
        t: tuple(
            PartitionInfo(p, 0, draw(st.frozensets(st.sampled_from(RACKS), max_size=3))) for p in range(n)
        )
        for t, n in counts.items()
    }
    names = sorted(counts)
    member_count = draw(st.integers(1, 6))
    members = {}
    for i in range(member_count):
        topics = frozenset(names) if identical else draw(st.frozensets(st.sampled_from(names), min_size=1))
        members[f"m{i}"] = MemberSubscription(
            member_id=f"m{i}", topics=topics, rack=draw(st.none() | st.sampled_from(RACKS))
        )
    return counts, partitions, members


def _without_racks(members):
    return {m: MemberSubscription(member_id=s.member_id, topics=s.topics) for m, s in members.items()}


def _valid_plan(assignor, group):
    """The assignor's plan for a racked group, checked by validate_plan."""
    counts, partitions, members = group
    plan = assignor.assign_partitions(partitions, members)
    validate_plan(plan, members, counts, RebalanceProtocol.EAGER)
    return plan


@settings(max_examples=300, deadline=None)
@given(racked_groups(identical=False))
def test_range_with_racks_is_valid_and_keeps_per_topic_shares(group) -> None:
    counts, _, members = group
    plan = _valid_plan(RangeAssignor(), group)
    plain = RangeAssignor().assign(counts, _without_racks(members))
    for topic in counts:
        shares = Counter(
            sum(1 for tp in tps if tp.topic == topic) for m, tps in plan.items() if topic in members[m].topics
        )
        plain_shares = Counter(
            sum(1 for tp in tps if tp.topic == topic) for m, tps in plain.items() if topic in members[m].topics
        )
        assert shares == plain_shares


@settings(max_examples=300, deadline=None)
@given(racked_groups(identical=True), st.sampled_from([StickyAssignor(), CooperativeStickyAssignor()]))
def test_sticky_with_racks_is_valid_and_fully_balanced(group, assignor) -> None:
    plan = _valid_plan(assignor, group)
    sizes = [len(tps) for tps in plan.values()]
    assert max(sizes) - min(sizes) <= 1


@settings(max_examples=200, deadline=None)
@given(racked_groups(identical=False), st.sampled_from([StickyAssignor(), CooperativeStickyAssignor()]))
def test_sticky_with_racks_and_different_subscriptions_is_valid(group, assignor) -> None:
    _valid_plan(assignor, group)


@settings(max_examples=200, deadline=None)
@given(racked_groups(identical=True))
def test_rerunning_a_rack_aligned_cooperative_sticky_plan_moves_nothing(group) -> None:
    """Stickiness holds where racks agree. (Java drops an owned partition outside its owner's
    rack, so a plan that had to misalign some partitions for balance may be reshuffled.)"""
    _, partitions, members = group
    assignor = CooperativeStickyAssignor()
    first = assignor.assign_partitions(partitions, members)
    racks = {TopicPartition(t, p.partition): p.replica_racks for t, ps in partitions.items() for p in ps}
    assume(all(members[m].rack is None or members[m].rack in racks[tp] for m, tps in first.items() for tp in tps))
    owned = {
        m: MemberSubscription(member_id=m, topics=s.topics, rack=s.rack, owned=first[m], generation_id=1)
        for m, s in members.items()
    }
    assert assignor.assign_partitions(partitions, owned) == first
