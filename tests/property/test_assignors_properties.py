"""Properties of the range and round-robin assignors over random groups."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.assignors import RangeAssignor, RoundRobinAssignor, validate_plan
from kgroup.types import RebalanceProtocol
from tests.strategies import member_subscriptions, topics_with_counts

ASSIGNORS = [RangeAssignor(), RoundRobinAssignor()]


@st.composite
def groups(draw, *, identical: bool = False):
    topics = draw(topics_with_counts())
    members = draw(member_subscriptions(topics, identical=identical))
    return topics, members


def _range_plan(group):
    """(topics, members, RangeAssignor's plan for them)."""
    topics, members = group
    return topics, members, RangeAssignor().assign(topics, members)


@pytest.mark.parametrize("assignor", ASSIGNORS, ids=repr)
@settings(max_examples=200)
@given(group=groups())
def test_assignor_random_group_plan_is_valid(assignor, group):
    topics, members = group
    plan = assignor.assign(topics, members)
    validate_plan(plan, members, topics, RebalanceProtocol.EAGER)
    assert set(plan) == set(members)
    assert all(isinstance(v, frozenset) for v in plan.values())


@pytest.mark.parametrize("assignor", ASSIGNORS, ids=repr)
@settings(max_examples=150)
@given(group=groups(), data=st.data())
def test_assignor_insertion_order_permuted_same_plan(assignor, group, data):
    topics, members = group
    member_order = data.draw(st.permutations(list(members)))
    topic_order = data.draw(st.permutations(list(topics)))
    shuffled_members = {m: members[m] for m in member_order}
    shuffled_topics = {t: topics[t] for t in topic_order}
    assert assignor.assign(shuffled_topics, shuffled_members) == assignor.assign(topics, members)


@settings(max_examples=150)
@given(group=groups(identical=True))
def test_roundrobin_identical_subscriptions_counts_differ_by_at_most_one(group):
    topics, members = group
    plan = RoundRobinAssignor().assign(topics, members)
    counts = [len(tps) for tps in plan.values()]
    assert max(counts) - min(counts) <= 1


@settings(max_examples=150)
@given(group=groups(identical=True))
def test_range_identical_subscriptions_per_topic_counts_differ_by_at_most_one(group):
    topics, members, plan = _range_plan(group)
    subscribed = next(iter(members.values())).topics
    for topic in subscribed & set(topics):
        per_member = Counter({m: 0 for m in members})
        per_member.update(m for m, tps in plan.items() for tp in tps if tp.topic == topic)
        counts = per_member.values()
        assert max(counts) - min(counts) <= 1


@settings(max_examples=150)
@given(group=groups(identical=True))
def test_range_identical_subscriptions_ranges_are_contiguous(group):
    *_, plan = _range_plan(group)
    for tps in plan.values():
        for topic in {tp.topic for tp in tps}:
            numbers = sorted(tp.partition for tp in tps if tp.topic == topic)
            assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))


@pytest.mark.parametrize("assignor", ASSIGNORS, ids=repr)
@settings(max_examples=100)
@given(group=groups())
def test_assignor_same_input_twice_same_plan(assignor, group):
    topics, members = group
    assert assignor.assign(topics, members) == assignor.assign(topics, members)
