"""Differential tests: kgroup's sticky assignors against kafka-python 3.0.12's.

What kafka-python's sticky package is: ``StickyPartitionAssignor`` ports Java's pre-2.4
``StickyAssignor`` (KIP-54's general algorithm only: no constrained fast path, a partition
claimed twice in one generation stays with the first claimant instead of being invalidated as
Java does since KAFKA-12984). kgroup matches current Java (``AbstractStickyAssignor`` 3.x/4.0),
so plans are compared for balance, not equality. kafka-python's ``CooperativeStickyAssignor``
reads ownership from the Subscription's ``owned_partitions`` like Java's.

User data: Java writes StickyAssignorUserData without a header; kafka-python 3.x writes it with
an int16 version header in front (``ApiData.encode(header=True)``) and reads only that form, so
its ``parse_member_metadata`` silently drops a previous assignment written by Java (or kgroup).
kgroup writes Java's layout and reads both. The header-less layout is checked against
kafka-python's ``StickyAssignorUserData.decode(..., header=False)``; a strict xfail pins the
kafka-python gap.
"""

from __future__ import annotations

from types import SimpleNamespace

# plain imports: if a kafka-python upgrade moves these, the compat tier must fail, not skip
import kafka.coordinator.assignors.cooperative_sticky as kp_cooperative
import kafka.coordinator.assignors.sticky.sticky_assignor as kp_sticky
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription
from kafka.structs import TopicPartition as KpTopicPartition

from kgroup.assignors import CooperativeStickyAssignor, MemberSubscription, StickyAssignor, validate_plan
from kgroup.assignors._sticky_user_data import decode_sticky_user_data, encode_sticky_user_data
from kgroup.types import RebalanceProtocol, TopicPartition
from tests.strategies import topic_names, topics_with_counts

INT32 = st.integers(-(2**31), 2**31 - 1)


class FakeCluster:
    """The two ``ClusterMetadata`` methods the sticky assignors call."""

    def __init__(self, partitions_per_topic: dict[str, int]) -> None:
        self._counts = partitions_per_topic

    def topics(self) -> set[str]:
        return set(self._counts)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        count = self._counts.get(topic)
        return None if count is None else set(range(count))


def _kp_plan(result) -> dict[str, frozenset[TopicPartition]]:
    return {
        member_id: frozenset(TopicPartition(tp.topic, tp.partition) for tp in a.partitions())
        for member_id, a in result.items()
    }


def _grouped(partitions) -> list[tuple[str, list[int]]]:
    out: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        out.setdefault(tp.topic, []).append(tp.partition)
    return list(out.items())


# --- user data bytes -----------------------------------------------------------------------------

partition_sets = st.frozensets(
    st.builds(TopicPartition, topic_names(), st.integers(0, 2**31 - 1)), max_size=10
)


@settings(max_examples=100)
@given(partitions=partition_sets, generation=INT32)
def test_sticky_user_data_kgroup_bytes_decode_with_kafka_python_headerless(partitions, generation):
    data = encode_sticky_user_data(partitions, generation)
    decoded = StickyAssignorUserData.decode(data, version=1, header=False)
    assert decoded.generation == generation
    got = {TopicPartition(e.topic, p) for e in decoded.previous_assignment for p in e.partitions}
    assert got == set(partitions)
    v0 = StickyAssignorUserData.decode(encode_sticky_user_data(partitions, None), version=0, header=False)
    assert {TopicPartition(e.topic, p) for e in v0.previous_assignment for p in e.partitions} == set(partitions)


@settings(max_examples=100)
@given(partitions=partition_sets, generation=INT32)
def test_sticky_user_data_kafka_python_bytes_decode_with_kgroup(partitions, generation):
    kp_bytes = StickyAssignorUserData(_grouped(partitions), generation).encode()  # what it sends
    decoded = decode_sticky_user_data(kp_bytes)
    assert decoded.generation == generation
    assert set(decoded.partitions) == set(partitions)
    headerless = StickyAssignorUserData(_grouped(partitions), generation).encode(header=False)
    assert headerless == encode_sticky_user_data(partitions, generation)  # same layout as Java's


def test_sticky_user_data_kafka_python_metadata_round_trips_through_kgroup():
    owned = [KpTopicPartition("t", 0), KpTopicPartition("t", 2)]
    sub = kp_sticky.StickyPartitionAssignor._metadata(["t"], owned, 5)
    wire = ConsumerProtocolSubscription.decode(sub.encode()).user_data
    assert decode_sticky_user_data(wire).partitions == (TopicPartition("t", 0), TopicPartition("t", 2))
    assert decode_sticky_user_data(wire).generation == 5


@pytest.mark.xfail(strict=True, reason="kafka-python 3.0.12 reads only its version-prefixed user data")
def test_sticky_user_data_kafka_python_parses_java_layout():
    data = encode_sticky_user_data([TopicPartition("t", 0), TopicPartition("t", 2)], 5)
    parsed = kp_sticky.StickyPartitionAssignor.parse_member_metadata(SimpleNamespace(topics=["t"], user_data=data))
    assert parsed.generation == 5


# --- plans ---------------------------------------------------------------------------------------


@st.composite
def groups(draw, *, identical: bool):
    """Topics, then members with non-conflicting previous ownership (kafka-python cannot settle
    same-generation conflicts the way Java does) on partitions that exist."""
    topics = draw(topics_with_counts(max_partitions=10))
    names = sorted(topics)
    ids = [f"consumer{i}" for i in range(draw(st.integers(1, 6)))]
    shared = draw(st.frozensets(st.sampled_from(names), min_size=1))
    subscribed = {m: shared if identical else draw(st.frozensets(st.sampled_from(names), min_size=1)) for m in ids}
    owned: dict[str, set[TopicPartition]] = {m: set() for m in ids}
    for t in names:
        for n in range(topics[t]):
            owner = draw(st.sampled_from([None, *ids]))
            if owner is not None and t in subscribed[owner]:
                owned[owner].add(TopicPartition(t, n))
    generation = draw(st.integers(1, 5))
    return topics, subscribed, owned, generation


def _kp_sticky_members(subscribed, owned, generation):
    out = []
    for m in subscribed:
        kp_owned = [KpTopicPartition(tp.topic, tp.partition) for tp in sorted(owned[m])]
        sub = kp_sticky.StickyPartitionAssignor._metadata(sorted(subscribed[m]), kp_owned, generation)
        metadata = ConsumerProtocolSubscription.decode(sub.encode())
        out.append(SimpleNamespace(member_id=m, group_instance_id=None, metadata=metadata))
    return out


def _balance(plan) -> list[int]:
    return sorted(len(v) for v in plan.values())


@settings(max_examples=100, deadline=None)
@given(group=groups(identical=True))
def test_sticky_identical_subscriptions_as_balanced_as_kafka_python(group):
    topics, subscribed, owned, generation = group
    kp_members = _kp_sticky_members(subscribed, owned, generation)
    # kgroup reads the very user_data bytes kafka-python members sent
    members = {
        m.member_id: MemberSubscription(
            member_id=m.member_id, topics=subscribed[m.member_id], user_data=m.metadata.user_data
        )
        for m in kp_members
    }
    ours = StickyAssignor().assign(topics, members)
    theirs = _kp_plan(kp_sticky.StickyPartitionAssignor().assign(FakeCluster(topics), kp_members))
    validate_plan(ours, members, topics, RebalanceProtocol.EAGER)
    assert _balance(ours) == _balance(theirs)
    # and as sticky: each keeps at least as many as the quota allows
    kept_ours = sum(len(ours[m] & owned[m]) for m in ours)
    kept_theirs = sum(len(theirs[m] & owned[m]) for m in theirs)
    assert kept_ours >= kept_theirs


@settings(max_examples=100, deadline=None)
@given(group=groups(identical=False))
def test_sticky_heterogeneous_fresh_assignment_as_balanced_as_kafka_python(group):
    topics, subscribed, _, _ = group
    kp_members = _kp_sticky_members(subscribed, {m: set() for m in subscribed}, -1)
    members = {m: MemberSubscription(member_id=m, topics=subscribed[m]) for m in subscribed}
    ours = StickyAssignor().assign(topics, members)
    theirs = _kp_plan(kp_sticky.StickyPartitionAssignor().assign(FakeCluster(topics), kp_members))
    validate_plan(ours, members, topics, RebalanceProtocol.EAGER)
    # same algorithm family on a fresh group: same spread of partition counts
    assert max(_balance(ours)) - min(_balance(ours)) <= max(_balance(theirs)) - min(_balance(theirs))


@settings(max_examples=100, deadline=None)
@given(group=groups(identical=True))
def test_cooperative_both_plans_obey_kip429_and_kgroup_completes_in_two_rounds(group):
    topics, subscribed, owned, generation = group
    kp_members = []
    members = {}
    for m in subscribed:
        metadata = ConsumerProtocolSubscription(
            version=2,
            topics=sorted(subscribed[m]),
            user_data=b"",
            owned_partitions=[
                ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=ps) for t, ps in _grouped(owned[m])
            ],
            generation_id=generation,
        )
        kp_members.append(SimpleNamespace(member_id=m, group_instance_id=None, metadata=metadata))
        members[m] = MemberSubscription(member_id=m, topics=subscribed[m], owned=owned[m], generation_id=generation)
    ours = CooperativeStickyAssignor().assign(topics, members)
    theirs = _kp_plan(kp_cooperative.CooperativeStickyAssignor().assign(FakeCluster(topics), kp_members))
    validate_plan(ours, members, topics, RebalanceProtocol.COOPERATIVE)
    validate_plan(theirs, members, topics, RebalanceProtocol.COOPERATIVE)
    # the same partitions are held back: each leaves out exactly what moves between members
    eager = StickyAssignor().assign(topics, members)
    assert all(ours[m] <= eager[m] for m in ours)
    # round two: what each was given is now owned; kgroup completes, balanced
    round2 = {
        m: MemberSubscription(member_id=m, topics=subscribed[m], owned=ours[m], generation_id=generation + 1)
        for m in subscribed
    }
    final = CooperativeStickyAssignor().assign(topics, round2)
    validate_plan(final, round2, topics, RebalanceProtocol.EAGER)
    assert _balance(final) == _balance(eager)


def test_sticky_protocol_names_match_kafka_python():
    assert StickyAssignor.name == kp_sticky.StickyPartitionAssignor.name
    assert CooperativeStickyAssignor.name == kp_cooperative.CooperativeStickyAssignor.name
