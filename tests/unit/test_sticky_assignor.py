"""The sticky and cooperative-sticky assignors: Java's scenarios, the cooperative rule, user_data bytes.

Scenarios re-expressed from Apache Kafka's ``AbstractStickyAssignorTest``, ``StickyAssignorTest``
and ``CooperativeStickyAssignorTest`` (rack-unaware), with Java's names (``topic``, ``topic1``,
``consumer1``, ...). Where a Java test asserts an exact plan, the same plan is asserted here.
"""

from __future__ import annotations

import time

import pytest

from kgroup.assignors import (
    ASSIGNORS,
    CooperativeStickyAssignor,
    MemberSubscription,
    StickyAssignor,
    validate_plan,
)
from kgroup.assignors._sticky_user_data import (
    StickyUserData,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)
from kgroup.errors import AssignmentError
from kgroup.types import NO_GENERATION, RebalanceProtocol, TopicPartition

BOTH = [StickyAssignor(), CooperativeStickyAssignor()]


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def ps(*tps: TopicPartition) -> frozenset[TopicPartition]:
    return frozenset(tps)


def sub(member_id, topics, owned=(), generation=NO_GENERATION, user_data=None, instance=None):
    return MemberSubscription(
        member_id=member_id,
        group_instance_id=instance,
        topics=frozenset(topics),
        owned=frozenset(owned),
        generation_id=generation,
        user_data=user_data,
    )


def check(plan, members, topics, protocol=RebalanceProtocol.EAGER):
    validate_plan(plan, members, topics, protocol)


def proto(assignor) -> RebalanceProtocol:
    """The protocol an assignor's plans must satisfy: COOPERATIVE for cooperative-sticky."""
    if isinstance(assignor, CooperativeStickyAssignor):
        return RebalanceProtocol.COOPERATIVE
    return RebalanceProtocol.EAGER


def fully_balanced(plan) -> bool:
    sizes = [len(v) for v in plan.values()]
    return max(sizes) - min(sizes) <= 1


def then(plan, members, generation):
    """The next round's subscriptions: every member now owns what ``plan`` gave it."""
    return {
        m: sub(m, s.topics, plan[m], generation, instance=s.group_instance_id) for m, s in members.items()
    }


# --- registry and names --------------------------------------------------------------------------


def test_sticky_registered_names_and_protocols():
    assert ASSIGNORS["sticky"] is StickyAssignor
    assert ASSIGNORS["cooperative-sticky"] is CooperativeStickyAssignor
    assert StickyAssignor.supported_protocols == (RebalanceProtocol.EAGER,)
    assert CooperativeStickyAssignor.supported_protocols == (
        RebalanceProtocol.COOPERATIVE,
        RebalanceProtocol.EAGER,
    )


# --- one consumer / trivial groups (AbstractStickyAssignorTest) ---------------------------------


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_no_members_empty_plan(assignor):
    assert assignor.assign({"topic": 3}, {}) == {}


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_one_consumer_no_topic(assignor):
    members = {"consumer1": sub("consumer1", [])}
    assert assignor.assign({}, members) == {"consumer1": frozenset()}


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_one_consumer_nonexistent_topic_no_exception(assignor):
    members = {"consumer1": sub("consumer1", ["topic"])}
    assert assignor.assign({}, members) == {"consumer1": frozenset()}


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_only_subscribed_topic_deleted_no_exception(assignor):
    # testNoExceptionThrownWhenOnlySubscribedTopicDeleted: owned partitions of a deleted topic
    members = {"consumer1": sub("consumer1", ["topic"], [tp("topic", 0), tp("topic", 1)], 1)}
    plan = assignor.assign({}, members)
    assert plan == {"consumer1": frozenset()}


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_assignment_updated_for_deleted_topic(assignor):
    topics = {"topic1": 1, "topic3": 100}
    members = {"consumer1": sub("consumer1", ["topic1", "topic2", "topic3"])}
    plan = assignor.assign(topics, members)
    assert len(plan["consumer1"]) == 101
    check(plan, members, topics)


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_one_consumer_one_topic(assignor):
    members = {"consumer1": sub("consumer1", ["topic"])}
    plan = assignor.assign({"topic": 3}, members)
    assert plan == {"consumer1": ps(tp("topic", 0), tp("topic", 1), tp("topic", 2))}


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_only_assigns_partitions_from_subscribed_topics(assignor):
    topics = {"topic": 3, "other": 3}
    members = {"consumer1": sub("consumer1", ["topic"])}
    plan = assignor.assign(topics, members)
    assert plan == {"consumer1": ps(tp("topic", 0), tp("topic", 1), tp("topic", 2))}


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_two_consumers_one_topic_one_partition(assignor):
    members = {c: sub(c, ["topic"]) for c in ("consumer1", "consumer2")}
    plan = assignor.assign({"topic": 1}, members)
    assert plan == {"consumer1": ps(tp("topic", 0)), "consumer2": frozenset()}


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_two_consumers_one_topic_two_partitions(assignor):
    members = {c: sub(c, ["topic"]) for c in ("consumer1", "consumer2")}
    plan = assignor.assign({"topic": 2}, members)
    assert plan == {"consumer1": ps(tp("topic", 0)), "consumer2": ps(tp("topic", 1))}


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_multiple_consumers_mixed_topic_subscriptions(assignor):
    topics = {"topic1": 3, "topic2": 2}
    members = {
        "consumer1": sub("consumer1", ["topic1"]),
        "consumer2": sub("consumer2", ["topic1", "topic2"]),
        "consumer3": sub("consumer3", ["topic1"]),
    }
    plan = assignor.assign(topics, members)
    assert plan == {
        "consumer1": ps(tp("topic1", 0), tp("topic1", 2)),
        "consumer2": ps(tp("topic2", 0), tp("topic2", 1)),
        "consumer3": ps(tp("topic1", 1)),
    }
    check(plan, members, topics)


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_two_consumers_two_topics_six_partitions(assignor):
    topics = {"topic1": 3, "topic2": 3}
    members = {c: sub(c, ["topic1", "topic2"]) for c in ("consumer1", "consumer2")}
    plan = assignor.assign(topics, members)
    assert plan == {
        "consumer1": ps(tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)),
        "consumer2": ps(tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)),
    }


# --- quotas in the constrained path -------------------------------------------------------------


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_consumer_owning_min_quota_expected_max_quota(assignor):
    topics = {"topic1": 2, "topic2": 3}
    members = {
        "consumer1": sub("consumer1", topics, [tp("topic1", 0), tp("topic2", 1)], 1),
        "consumer2": sub("consumer2", topics, [tp("topic1", 1), tp("topic2", 2)], 1),
    }
    plan = assignor.assign(topics, members)
    assert plan == {
        "consumer1": ps(tp("topic1", 0), tp("topic2", 1), tp("topic2", 0)),
        "consumer2": ps(tp("topic1", 1), tp("topic2", 2)),
    }
    check(plan, members, topics, RebalanceProtocol.COOPERATIVE)


def test_sticky_max_quota_consumers_more_than_expected():
    # testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers. Two members own maxQuota (2) but
    # only one may keep it: the first in member-id order (Java: the first in HashMap order, which
    # there is consumer2, so Java moves topic2-0 from consumer1 instead of topic2-1 from consumer2).
    topics = {"topic1": 2, "topic2": 2}
    members = {
        "consumer1": sub("consumer1", topics, [tp("topic1", 0), tp("topic2", 0)], 1),
        "consumer2": sub("consumer2", topics, [tp("topic1", 1), tp("topic2", 1)], 1),
        "consumer3": sub("consumer3", topics, [], 1),
    }
    plan = StickyAssignor().assign(topics, members)
    assert plan == {
        "consumer1": ps(tp("topic1", 0), tp("topic2", 0)),
        "consumer2": ps(tp("topic1", 1)),
        "consumer3": ps(tp("topic2", 1)),
    }
    # cooperative: topic2-1 is still owned by consumer2, so it is revoked this round...
    coop = CooperativeStickyAssignor().assign(topics, members)
    assert coop == {**plan, "consumer3": frozenset()}
    check(coop, members, topics, RebalanceProtocol.COOPERATIVE)
    # ...and assigned in the follow-up round, where nobody owns it
    follow = then(coop, members, 2)
    assert CooperativeStickyAssignor().assign(topics, follow) == plan


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_all_consumers_under_min_quota(assignor):
    topics = {"topic1": 2, "topic2": 3}
    members = {
        "consumer1": sub("consumer1", topics, [tp("topic1", 0)], 1),
        "consumer2": sub("consumer2", topics, [tp("topic1", 1)], 1),
        "consumer3": sub("consumer3", topics, [], 1),
    }
    plan = assignor.assign(topics, members)
    assert plan == {
        "consumer1": ps(tp("topic1", 0), tp("topic2", 1)),
        "consumer2": ps(tp("topic1", 1), tp("topic2", 2)),
        "consumer3": ps(tp("topic2", 0)),
    }


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_all_consumers_reach_expected_quota(assignor):
    topics = {"topic": 4}
    members = {
        "consumer1": sub("consumer1", topics, [tp("topic", 0), tp("topic", 1)], 1),
        "consumer2": sub("consumer2", topics, [tp("topic", 2)], 1),
        "consumer3": sub("consumer3", topics, [], 1),
    }
    plan = assignor.assign(topics, members)
    assert plan == {
        "consumer1": ps(tp("topic", 0), tp("topic", 1)),
        "consumer2": ps(tp("topic", 2)),
        "consumer3": ps(tp("topic", 3)),
    }


# --- add / remove consumers, stickiness -----------------------------------------------------------


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_add_remove_consumer_one_topic(assignor):
    topics = {"topic": 3}
    members = {"consumer1": sub("consumer1", topics)}
    plan = assignor.assign(topics, members)
    assert plan["consumer1"] == ps(tp("topic", 0), tp("topic", 1), tp("topic", 2))

    members = then(plan, members, 1)
    members["consumer2"] = sub("consumer2", topics, [], 1)
    plan = StickyAssignor().assign(topics, members)  # the balanced target
    assert plan == {
        "consumer1": ps(tp("topic", 0), tp("topic", 1)),
        "consumer2": ps(tp("topic", 2)),
    }

    del members["consumer1"]
    members = then(plan, {"consumer2": members["consumer2"]}, 2)
    plan = assignor.assign(topics, members)
    assert plan == {"consumer2": ps(tp("topic", 0), tp("topic", 1), tp("topic", 2))}


def test_sticky_javadoc_example_1_consumer_leaves_keeps_everything():
    topics = {f"t{i}": 2 for i in range(4)}
    members = {c: sub(c, topics) for c in ("C0", "C1", "C2")}
    first = StickyAssignor().assign(topics, members)
    assert sorted(len(v) for v in first.values()) == [2, 3, 3]
    members = then(first, {c: members[c] for c in ("C0", "C2")}, 1)
    second = StickyAssignor().assign(topics, members)
    assert first["C0"] <= second["C0"]
    assert first["C2"] <= second["C2"]
    assert second["C0"] | second["C2"] == first["C0"] | first["C1"] | first["C2"]
    assert fully_balanced(second)


def test_sticky_javadoc_example_2_heterogeneous():
    topics = {"t0": 1, "t1": 2, "t2": 3}
    members = {
        "C0": sub("C0", ["t0"]),
        "C1": sub("C1", ["t0", "t1"]),
        "C2": sub("C2", ["t0", "t1", "t2"]),
    }
    plan = StickyAssignor().assign(topics, members)
    assert plan == {
        "C0": ps(tp("t0", 0)),
        "C1": ps(tp("t1", 0), tp("t1", 1)),
        "C2": ps(tp("t2", 0), tp("t2", 1), tp("t2", 2)),
    }
    # C0 leaves: sticky keeps all 5 other assignments (round-robin would keep 3)
    members = then(plan, {c: members[c] for c in ("C1", "C2")}, 1)
    after = StickyAssignor().assign(topics, members)
    assert after == {
        "C1": ps(tp("t0", 0), tp("t1", 0), tp("t1", 1)),
        "C2": ps(tp("t2", 0), tp("t2", 1), tp("t2", 2)),
    }


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_reassignment_after_one_consumer_added_moves_minimum(assignor):
    topics = {"topic": 20}
    members = {f"consumer{i}": sub(f"consumer{i}", topics) for i in range(1, 10)}
    plan = StickyAssignor().assign(topics, members)
    members = then(plan, members, 1)
    members["consumer10"] = sub("consumer10", topics, [], 1)
    after = StickyAssignor().assign(topics, members)
    assert fully_balanced(after)
    moved = [p for m, tps in after.items() for p in tps if p not in plan.get(m, frozenset())]
    assert len(moved) == 2  # consumer10 takes 2; nobody else changes
    assert all(plan[m] >= after[m] for m in plan)


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_reassignment_after_one_consumer_leaves(assignor):
    topics = {f"topic{i:02d}": i for i in range(1, 20)}
    members = {
        f"consumer{i:02d}": sub(f"consumer{i:02d}", [f"topic{j:02d}" for j in range(1, i + 1)])
        for i in range(1, 20)
    }
    plan = StickyAssignor().assign(topics, members)
    check(plan, members, topics)
    members = then(plan, members, 1)
    del members["consumer10"]
    after = assignor.assign(topics, members)
    check(after, members, topics, proto(assignor))
    # nothing moves that did not have to: every survivor keeps what it had
    for m in members:
        assert plan[m] <= after[m]


def test_sticky_heterogeneous_balance_and_stickiness():
    # testSameSubscriptions-like rounds with a heterogeneous group; Java's isBalanced criterion
    topics = {"a": 6, "b": 4, "c": 2}
    members = {
        "m1": sub("m1", ["a"]),
        "m2": sub("m2", ["a", "b"]),
        "m3": sub("m3", ["a", "b", "c"]),
        "m4": sub("m4", ["c"]),
    }
    plan = StickyAssignor().assign(topics, members)
    check(plan, members, topics)
    _assert_java_balanced(plan, members, topics)
    members = then(plan, members, 1)
    members["m5"] = sub("m5", ["a", "b"], [], 1)
    after = StickyAssignor().assign(topics, members)
    check(after, members, topics)
    _assert_java_balanced(after, members, topics)
    kept = sum(len(plan[m] & after[m]) for m in plan)
    assert kept >= 12 - 3  # m5 takes about a fifth of a and b; the rest stays


def _assert_java_balanced(plan, members, topics):
    owner = {p: m for m, tps in plan.items() for p in tps}
    for m, s in members.items():
        for t in s.topics & set(topics):
            for n in range(topics[t]):
                other = owner[tp(t, n)]
                assert len(plan[other]) <= len(plan[m]) + 1, (m, other)


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_new_subscription_drops_unsubscribed_topic(assignor):
    topics = {"topic1": 3, "topic2": 3}
    members = {c: sub(c, topics) for c in ("consumer1", "consumer2")}
    plan = StickyAssignor().assign(topics, members)
    members = then(plan, members, 1)
    members["consumer1"] = sub("consumer1", ["topic1"], plan["consumer1"], 1)
    after = assignor.assign(topics, members)
    check(after, members, topics, proto(assignor))
    assert all(p.topic == "topic1" for p in after["consumer1"])


# --- conflicting claims and generations (KIP-341, KIP-792) -----------------------------------------


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_owned_invalidated_for_stale_generation(assignor):
    topics = {"topic": 3, "topic2": 3}
    claim = [tp("topic", 0), tp("topic", 2), tp("topic2", 1)]
    members = {
        "consumer1": sub("consumer1", topics, claim, 10),
        "consumer2": sub("consumer2", topics, claim, 9),
    }
    plan = assignor.assign(topics, members)
    assert plan["consumer1"] == frozenset(claim)
    if isinstance(assignor, StickyAssignor):
        assert plan["consumer2"] == ps(tp("topic", 1), tp("topic2", 0), tp("topic2", 2))


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_owned_invalidated_for_no_generation(assignor):
    topics = {"topic": 3, "topic2": 3}
    claim = [tp("topic", 0), tp("topic", 2), tp("topic2", 1)]
    members = {
        "consumer1": sub("consumer1", topics, claim, 10),
        "consumer2": sub("consumer2", topics, claim, NO_GENERATION),
    }
    plan = StickyAssignor().assign(topics, members)
    assert plan == {
        "consumer1": frozenset(claim),
        "consumer2": ps(tp("topic", 1), tp("topic2", 0), tp("topic2", 2)),
    }


def test_sticky_ensure_partitions_assigned_to_highest_generation():
    topics = {"topic": 3, "topic2": 3, "topic3": 3}
    members = {
        "consumer1": sub("consumer1", topics, [tp("topic", 0), tp("topic2", 0), tp("topic3", 0)], 10),
        "consumer2": sub("consumer2", topics, [tp("topic", 1), tp("topic2", 1), tp("topic3", 1)], 9),
        "consumer3": sub("consumer3", topics, [tp("topic2", 1), tp("topic3", 0), tp("topic3", 2)], 8),
    }
    for assignor in BOTH:
        plan = assignor.assign(topics, members)
        assert plan["consumer1"] == ps(tp("topic", 0), tp("topic2", 0), tp("topic3", 0))
        assert plan["consumer2"] == ps(tp("topic", 1), tp("topic2", 1), tp("topic3", 1))
    plan = StickyAssignor().assign(topics, members)
    assert plan["consumer3"] == ps(tp("topic", 2), tp("topic2", 2), tp("topic3", 2))


def test_sticky_no_reassignment_on_current_members():
    topics = {"topic": 3, "topic1": 3, "topic2": 3, "topic3": 3}
    members = {
        "consumer1": sub("consumer1", topics, [], NO_GENERATION),
        "consumer2": sub("consumer2", topics, [tp("topic", 0), tp("topic2", 0), tp("topic1", 0)], 9),
        "consumer3": sub("consumer3", topics, [tp("topic3", 2), tp("topic2", 2), tp("topic1", 1)], 8),
        "consumer4": sub("consumer4", topics, [tp("topic3", 1), tp("topic", 1), tp("topic", 2)], 7),
    }
    for assignor in BOTH:
        plan = assignor.assign(topics, members)
        assert plan["consumer1"] == ps(tp("topic1", 2), tp("topic2", 1), tp("topic3", 0))
        for m in ("consumer2", "consumer3", "consumer4"):
            assert plan[m] == members[m].owned


def test_sticky_owned_invalidated_for_multiple_generations():
    topics = {"topic": 3, "topic2": 3}
    members = {
        "consumer1": sub("consumer1", topics, [tp("topic", 0), tp("topic2", 1), tp("topic", 1)], 10),
        "consumer2": sub("consumer2", topics, [tp("topic", 0), tp("topic2", 1), tp("topic2", 2)], 8),
    }
    plan = StickyAssignor().assign(topics, members)
    assert plan == {
        "consumer1": ps(tp("topic", 0), tp("topic2", 1), tp("topic", 1)),
        "consumer2": ps(tp("topic", 2), tp("topic2", 2), tp("topic2", 0)),
    }


@pytest.mark.parametrize(("count", "c1"), [(3, [1]), (4, [1, 3])])
def test_sticky_same_generation_duplicate_claim_invalidated(count, c1):
    # testAllConsumersHaveOwnedPartitionInvalidatedWhenClaimedByMultipleConsumersInSameGeneration...
    topics = {"topic": count}
    members = {
        "consumer1": sub("consumer1", topics, [tp("topic", 0), tp("topic", 1)], 1),
        "consumer2": sub("consumer2", topics, [tp("topic", 0), tp("topic", 2)], 1),
        "consumer3": sub("consumer3", topics, [], 1),
    }
    expected = {
        "consumer1": frozenset(tp("topic", n) for n in c1),
        "consumer2": ps(tp("topic", 2)),
        "consumer3": ps(tp("topic", 0)),
    }
    assert StickyAssignor().assign(topics, members) == expected
    # cooperative: topic-0 was claimed by two members, so Java marks it transferring: revoked first
    coop = CooperativeStickyAssignor().assign(topics, members)
    assert coop == {**expected, "consumer3": frozenset()}
    check(coop, members, topics, RebalanceProtocol.COOPERATIVE)


@pytest.mark.parametrize("equal", [True, False])
def test_sticky_conflicting_previous_generations(equal):
    topics = {"topic": 4, "topic2": 4, "topic3": 4}
    everything = list(topics)
    c1_topics = everything if equal else ["topic"]
    c2_topics = everything if equal else ["topic", "topic2"]
    t = {(name, n): tp(name, n) for name in topics for n in range(4)}
    c1 = (
        [t["topic", 0], t["topic", 1], t["topic", 2], t["topic2", 2], t["topic2", 3], t["topic3", 0]]
        if equal
        else [t["topic", n] for n in range(4)]
    )
    c2 = [t["topic", 0], t["topic", 1], t["topic2", 0], t["topic2", 1], t["topic2", 2], t["topic2", 3]]
    c3 = [t["topic", 2], t["topic", 3], t["topic3", 0], t["topic3", 1], t["topic3", 2], t["topic3", 3]]
    members = {
        "consumer1": sub("consumer1", c1_topics, c1, 1),
        "consumer2": sub("consumer2", c2_topics, c2, 2),
        "consumer3": sub("consumer3", everything, c3, 2),
    }
    plan = StickyAssignor().assign(topics, members)
    check(plan, members, topics)
    assert [len(plan[m]) for m in sorted(plan)] == [4, 4, 4]
    assert plan["consumer2"] <= frozenset(c2)
    assert plan["consumer3"] <= frozenset(c3)


@pytest.mark.parametrize("equal", [True, False])
def test_sticky_multiple_generations_rounds(equal):
    # testAssignmentWithMultipleGenerations1
    everything = ["topic", "topic2"]
    c2_topics = everything if equal else ["topic"]
    topics = {"topic": 6, "topic2": 6}
    members = {
        "consumer1": sub("consumer1", everything),
        "consumer2": sub("consumer2", c2_topics),
        "consumer3": sub("consumer3", everything),
    }
    a = StickyAssignor()
    r1 = a.assign(topics, members)
    assert [len(r1[m]) for m in sorted(r1)] == [4, 4, 4]
    members2 = {
        "consumer1": sub("consumer1", everything, r1["consumer1"], 1),
        "consumer2": sub("consumer2", c2_topics, r1["consumer2"], 1),
    }
    r2 = a.assign(topics, members2)
    assert [len(r2[m]) for m in sorted(r2)] == [6, 6]
    if equal:
        assert r1["consumer1"] <= r2["consumer1"]
    assert r1["consumer2"] <= r2["consumer2"]
    assert r2["consumer2"] & r1["consumer3"]
    members3 = {
        "consumer2": sub("consumer2", c2_topics, r2["consumer2"], 2),
        "consumer3": sub("consumer3", everything, r1["consumer3"], 1),
    }
    r3 = a.assign(topics, members3)
    check(r3, members3, topics)
    assert [len(r3[m]) for m in sorted(r3)] == [6, 6]


# --- where the previous assignment comes from -----------------------------------------------------


def test_sticky_user_data_used_when_member_sends_no_owned():
    # testSchemaBackwardCompatibility: consumer2 sends v0 user data (no generation)
    topics = {"topic": 3}
    members = {
        "consumer1": sub("consumer1", topics, user_data=encode_sticky_user_data([tp("topic", 0), tp("topic", 2)], 1)),
        "consumer2": sub("consumer2", topics, user_data=encode_sticky_user_data([tp("topic", 1)], None)),
        "consumer3": sub("consumer3", topics),
    }
    plan = StickyAssignor().assign(topics, members)
    assert [len(plan[m]) for m in sorted(plan)] == [1, 1, 1]
    assert plan["consumer1"] <= ps(tp("topic", 0), tp("topic", 2))
    assert plan["consumer2"] == ps(tp("topic", 1))


def test_sticky_member_data_prefers_owned_then_user_data():
    ud = encode_sticky_user_data([tp("topic1", 0), tp("topic2", 1)], 4)
    from_user_data = StickyAssignor.member_data(sub("c", ["topic"], [], 5, ud))
    assert from_user_data.partitions == (tp("topic1", 0), tp("topic2", 1))
    assert from_user_data.generation == 4
    from_owned = StickyAssignor.member_data(sub("c", ["topic"], [tp("topic", 0)], 5, ud))
    assert from_owned.partitions == (tp("topic", 0),)
    assert from_owned.generation == 5
    nothing = StickyAssignor.member_data(sub("c", ["topic"], user_data=b"\x01"))
    assert nothing.partitions == ()
    assert nothing.generation == NO_GENERATION


def test_cooperative_member_data_old_subscription_generation_from_user_data():
    # testAssignorWithOldVersionSubscriptions: v1 subscription without generation_id
    member = sub("c", ["topic1"], [tp("topic1", 0)], NO_GENERATION, encode_cooperative_user_data(7))
    data = CooperativeStickyAssignor.member_data(member)
    assert data.partitions == (tp("topic1", 0),)
    assert data.generation == 7
    v2 = sub("c", ["topic1"], [tp("topic1", 0)], 9, encode_cooperative_user_data(7))
    assert CooperativeStickyAssignor.member_data(v2).generation == 9


def test_cooperative_old_version_subscriptions():
    topics = {"topic1": 3}
    members = {
        "consumer1": sub("consumer1", topics, [tp("topic1", 0)], NO_GENERATION, encode_cooperative_user_data(1)),
        "consumer2": sub("consumer2", topics, [tp("topic1", 1)], NO_GENERATION, encode_cooperative_user_data(1)),
        "consumer3": sub("consumer3", topics, [], 1, encode_cooperative_user_data(1)),
    }
    plan = CooperativeStickyAssignor().assign(topics, members)
    assert plan == {
        "consumer1": ps(tp("topic1", 0)),
        "consumer2": ps(tp("topic1", 1)),
        "consumer3": ps(tp("topic1", 2)),
    }


# --- the cooperative rule (KIP-429) -----------------------------------------------------------------


def test_cooperative_partition_owned_by_a_planned_for_b_left_unassigned():
    topics = {"topic": 4}
    members = {
        "A": sub("A", topics, [tp("topic", n) for n in range(4)], 3),
        "B": sub("B", topics, [], 3),
    }
    eager = StickyAssignor().assign(topics, members)
    assert eager == {"A": ps(tp("topic", 0), tp("topic", 1)), "B": ps(tp("topic", 2), tp("topic", 3))}
    coop = CooperativeStickyAssignor().assign(topics, members)
    assert coop == {"A": ps(tp("topic", 0), tp("topic", 1)), "B": frozenset()}
    check(coop, members, topics, RebalanceProtocol.COOPERATIVE)
    with pytest.raises(AssignmentError, match="moves directly"):
        check(eager, members, topics, RebalanceProtocol.COOPERATIVE)
    # round 2: A revoked topic-2 and topic-3; now B gets them
    round2 = then(coop, members, 4)
    assert CooperativeStickyAssignor().assign(topics, round2) == eager


def test_cooperative_general_path_transfer_left_unassigned():
    # heterogeneous subscriptions: Java computes the transferring set after the general builder
    topics = {"a": 4, "b": 1}
    members = {
        "A": sub("A", ["a", "b"], [tp("a", n) for n in range(4)] + [tp("b", 0)], 2),
        "B": sub("B", ["a"], [], 2),
    }
    coop = CooperativeStickyAssignor().assign(topics, members)
    check(coop, members, topics, RebalanceProtocol.COOPERATIVE)
    assert coop["B"] == frozenset()
    assert coop["A"] < members["A"].owned


def test_cooperative_unsubscribed_owned_partition_revoked_not_transferred():
    topics = {"topic1": 2, "topic2": 2}
    members = {
        "A": sub("A", ["topic1"], [tp("topic1", 0), tp("topic2", 0), tp("topic2", 1)], 5),
        "B": sub("B", ["topic1", "topic2"], [tp("topic1", 1)], 5),
    }
    coop = CooperativeStickyAssignor().assign(topics, members)
    check(coop, members, topics, RebalanceProtocol.COOPERATIVE)
    assert not coop["A"] & {tp("topic2", 0), tp("topic2", 1)}
    assert tp("topic2", 0) not in coop["B"]


# --- determinism and static members ---------------------------------------------------------------


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_dict_order_does_not_matter(assignor):
    topics = {"x": 5, "y": 3, "z": 7}
    members = {
        "m3": sub("m3", ["x", "y"], [tp("x", 0), tp("y", 1)], 2),
        "m1": sub("m1", ["x", "z"], [tp("z", 2)], 2),
        "m2": sub("m2", ["y", "z"], [], 2),
    }
    plan = assignor.assign(topics, members)
    reversed_members = dict(reversed(list(members.items())))
    reversed_topics = dict(reversed(list(topics.items())))
    assert assignor.assign(reversed_topics, reversed_members) == plan


# --- user_data bytes ------------------------------------------------------------------------------

#: Java StickyAssignor.serializeTopicPartitionAssignment([t-0, t-2], generation 5): v1 layout
STICKY_V1_GOLDEN = bytes.fromhex(
    "00000001"  # previous_assignment: 1 topic
    "0001" "74"  # topic "t"
    "00000002" "00000000" "00000002"  # partitions [0, 2]
    "00000005"  # generation 5
)
#: the same assignment in v0 (Java's STICKY_ASSIGNOR_USER_DATA_V0, no generation)
STICKY_V0_GOLDEN = STICKY_V1_GOLDEN[:-4]
#: kafka-python 3.x's StickyAssignorUserData.encode(): an int16 version header, then v1
STICKY_KAFKA_PYTHON_GOLDEN = bytes.fromhex("0001") + STICKY_V1_GOLDEN


def test_sticky_user_data_golden_bytes():
    assert encode_sticky_user_data([tp("t", 2), tp("t", 0)], 5) == STICKY_V1_GOLDEN
    assert encode_sticky_user_data([tp("t", 0), tp("t", 2)], None) == STICKY_V0_GOLDEN
    two_topics = encode_sticky_user_data([tp("b", 1), tp("a", 0)], -1)
    assert two_topics == bytes.fromhex(
        "00000002" "0001" "61" "00000001" "00000000" "0001" "62" "00000001" "00000001" "ffffffff"
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (STICKY_V1_GOLDEN, StickyUserData((tp("t", 0), tp("t", 2)), 5)),
        (STICKY_V0_GOLDEN, StickyUserData((tp("t", 0), tp("t", 2)), None)),
        (STICKY_KAFKA_PYTHON_GOLDEN, StickyUserData((tp("t", 0), tp("t", 2)), 5)),
        (STICKY_V1_GOLDEN + b"\x00\x00", StickyUserData((tp("t", 0), tp("t", 2)), 5)),
        (None, StickyUserData((), None)),
        (b"", StickyUserData((), None)),
        (b"\xff\xff\xff\xff", StickyUserData((), NO_GENERATION)),
        (b"\x00\x00\x00\x09\x00", StickyUserData((), NO_GENERATION)),
    ],
    ids=["v1", "v0", "kafka-python", "trailing", "null", "empty", "negative-count", "truncated"],
)
def test_sticky_user_data_decode(data, expected):
    assert decode_sticky_user_data(data) == expected


def test_sticky_subscription_user_data():
    a = StickyAssignor()
    assert a.subscription_user_data(frozenset({"t"}), NO_GENERATION, frozenset()) is None
    assert a.subscription_user_data(frozenset({"t"}), 5, ps(tp("t", 0), tp("t", 2))) == STICKY_V1_GOLDEN
    assert a.subscription_user_data(frozenset({"t"}), 5, frozenset()) == bytes.fromhex("00000000 00000005")


def test_cooperative_user_data_golden_bytes():
    c = CooperativeStickyAssignor()
    assert c.subscription_user_data(frozenset({"t"}), 7, frozenset()) == b"\x00\x00\x00\x07"
    assert c.subscription_user_data(frozenset({"t"}), NO_GENERATION, frozenset()) == b"\xff\xff\xff\xff"
    assert decode_cooperative_user_data(b"\x00\x00\x00\x07") == 7
    assert decode_cooperative_user_data(b"\x00\x00\x00\x07\x01") == 7
    assert decode_cooperative_user_data(None) is None
    assert decode_cooperative_user_data(b"\x00\x01") == NO_GENERATION


# --- performance ----------------------------------------------------------------------------------


@pytest.mark.parametrize("assignor", BOTH, ids=repr)
def test_sticky_100_members_1000_partitions_within_a_cpu_budget(assignor):
    """A guard against an algorithmic blow-up, not a speed claim (those are in benchmarks/assignors.py).

    CPU time of this process, not wall time: a loaded machine (CI's) does not fail it. About 0.3 s
    on the development machine; an accidental quadratic step costs tens of seconds.
    """
    topics = {f"topic{i}": 100 for i in range(10)}
    members = {f"consumer{i:03d}": sub(f"consumer{i:03d}", topics) for i in range(100)}
    start = time.process_time()
    plan = assignor.assign(topics, members)
    members = then(plan, members, 1)
    del members["consumer000"]
    members["consumer100"] = sub("consumer100", topics, [], 1)
    again = assignor.assign(topics, members)
    elapsed = time.process_time() - start
    assert elapsed < 5.0
    check(again, members, topics, proto(assignor))
