"""Rack-aware assignment (KIP-881): Java's own expected plans for range and the sticky assignors.

Every case is one of Apache Kafka's ``RangeAssignorTest`` / ``AbstractStickyAssignorTest``
rack cases (``testRackAwareAssignmentWith*``; ``preferRackAwareLogic`` off, Java's default),
built the way Java's ``AbstractPartitionAssignorTest.partitionInfos`` builds them: brokers
``0..n-1`` in racks ``brokerRacks[i]``; replica ``j`` of partition ``i`` of a topic starting
at node index ``s`` is broker ``(i + j + s) % n``; topics laid out in the order t1, t2, t3.
Consumers are ``consumer0..2`` with racks ``a, b, c`` unless stated.
"""

from __future__ import annotations

import pytest

from kgroup.assignors import CooperativeStickyAssignor, RangeAssignor, StickyAssignor
from kgroup.assignors.base import MemberSubscription
from kgroup.config import ConsumerConfig
from kgroup.protocol.consumer_protocol import Subscription, decode_subscription, encode_subscription
from kgroup.types import PartitionInfo, TopicPartition

ABC = ["a", "b", "c"]
ALL = ("t1", "t2", "t3")


def partitions(topics: dict[str, int], rf: int, broker_racks: list[str | None]) -> dict[str, tuple[PartitionInfo, ...]]:
    out = {}
    start = 0
    n = len(broker_racks)
    for topic, count in topics.items():
        infos = []
        for i in range(count):
            replicas = [(i + j + start) % n for j in range(rf)]
            racks = frozenset(r for r in (broker_racks[b] for b in replicas) if r is not None)
            infos.append(PartitionInfo(i, replicas[0], racks))
        out[topic] = tuple(infos)
        start += count
    return out


def tps(text: str) -> frozenset[TopicPartition]:
    if not text:
        return frozenset()
    return frozenset(TopicPartition(t.rsplit("-", 1)[0], int(t.rsplit("-", 1)[1])) for t in text.split(", "))


def members(subs, consumer_racks, owned=None):
    return {
        f"consumer{i}": MemberSubscription(
            member_id=f"consumer{i}",
            topics=subs[i],
            rack=consumer_racks[i],
            owned=tps(owned[i]) if owned else frozenset(),
        )
        for i in range(len(subs))
    }


def run(assignor, topics, rf, broker_racks, consumer_racks, subs, owned=None):
    plan = assignor.assign_partitions(partitions(topics, rf, broker_racks), members(subs, consumer_racks, owned))
    return [plan[f"consumer{i}"] for i in range(len(subs))]


def mismatched(topics, rf, broker_racks, consumer_racks, plan) -> int:
    infos = partitions(topics, rf, broker_racks)
    count = 0
    for rack, assigned in zip(consumer_racks, plan, strict=True):
        if rack is None:
            continue
        count += sum(1 for tp in assigned if rack not in infos[tp.topic][tp.partition].replica_racks)
    return count


UNEVEN = {"t1": 6, "t2": 7, "t3": 2}
EVEN = {"t1": 5, "t2": 5, "t3": 5}
UNIFORM = [ALL, ALL, ALL]
NON_EQUAL = [ALL, ALL, ("t1", "t3")]


# ----------------------------------------------------------------------------- range
@pytest.mark.parametrize(
    ("topics", "subs", "rf", "broker_racks", "expected", "mismatches"),
    [
        # testRackAwareAssignmentWithUniformSubscription
        (UNEVEN, UNIFORM, 1, ABC,
         ["t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0", "t1-2, t1-5, t2-2, t2-5, t3-1"], 0),
        (UNEVEN, UNIFORM, 2, ABC,
         ["t1-0, t1-2, t2-0, t2-2, t2-3, t3-1", "t1-1, t1-3, t2-1, t2-4, t3-0", "t1-4, t1-5, t2-5, t2-6"], 1),
        (UNEVEN, UNIFORM, 3, ["a", "b"],
         ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1", "t1-4, t1-5, t2-5, t2-6"], 4),
        # testRackAwareAssignmentWithNonEqualSubscription
        (UNEVEN, NON_EQUAL, 1, ABC,
         ["t1-0, t1-3, t2-0, t2-2, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t2-5, t3-0", "t1-2, t1-5, t3-1"], 2),
        (UNEVEN, NON_EQUAL, 2, ABC,
         ["t1-0, t1-2, t2-0, t2-2, t2-3, t2-5, t3-1", "t1-1, t1-3, t2-1, t2-4, t2-6, t3-0", "t1-4, t1-5"], 0),
        (UNEVEN, NON_EQUAL, 3, ["a", "b"],
         ["t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0", "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1", "t1-4, t1-5"], 2),
        # testRackAwareAssignmentWithUniformPartitions: co-partitioning wins over racks
        *[
            (EVEN, UNIFORM, rf, racks,
             ["t1-0, t1-1, t2-0, t2-1, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3", "t1-4, t2-4, t3-4"], mm)
            for rf, racks, mm in ((1, ABC, 10), (2, ABC, 5), (3, ["a", "b"], 3))
        ],
        # testRackAwareAssignmentWithUniformPartitionsNonEqualSubscription
        (EVEN, NON_EQUAL, 1, ABC,
         ["t1-0, t1-1, t2-0, t2-1, t2-4, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3", "t1-4, t3-4"], 9),
        (EVEN, NON_EQUAL, 2, ABC,
         ["t1-2, t2-0, t2-1, t2-3, t3-2", "t1-0, t1-3, t2-2, t2-4, t3-0, t3-3", "t1-1, t1-4, t3-1, t3-4"], 0),
        (EVEN, NON_EQUAL, 3, ["a", "b"],
         ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1", "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3", "t1-4, t3-4"], 2),
    ],
)
def test_range_matches_javas_rack_aware_plans(topics, subs, rf, broker_racks, expected, mismatches) -> None:
    plan = run(RangeAssignor(), topics, rf, broker_racks, ABC, subs)
    assert plan == [tps(e) for e in expected]
    assert mismatched(topics, rf, broker_racks, ABC, plan) == mismatches


@pytest.mark.parametrize(
    ("topics", "subs", "expected"),
    [
        (UNEVEN, UNIFORM,
         ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1", "t1-4, t1-5, t2-5, t2-6"]),
        (UNEVEN, NON_EQUAL,
         ["t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0", "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1", "t1-4, t1-5"]),
    ],
)
@pytest.mark.parametrize(
    ("rf", "broker_racks", "consumer_racks"),
    [
        (3, [None, None, None], ABC),  # brokers without racks
        (3, ABC, [None, None, None]),  # consumers without racks
        (3, ABC, ABC),  # every partition in every rack
        (3, ABC, ["d", "e", "f"]),  # consumer racks hold no replica
        (3, ABC, [None, "e", "f"]),
    ],
)
def test_range_without_usable_racks_is_plain_range(topics, subs, expected, rf, broker_racks, consumer_racks) -> None:
    plan = run(RangeAssignor(), topics, rf, broker_racks, consumer_racks, subs)
    assert plan == [tps(e) for e in expected]
    assert RangeAssignor().assign(topics, members(subs, consumer_racks)) == {
        f"consumer{i}": tps(e) for i, e in enumerate(expected)
    }


# ----------------------------------------------------------------------------- sticky
STICKY_UNIFORM = ["t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0", "t1-2, t1-5, t2-2, t2-5, t3-1"]
STICKY_NON_EQUAL = ["t1-5, t2-0, t2-2, t2-4, t2-6", "t1-3, t2-1, t2-3, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-4, t3-1"]
BOTH_STICKY = pytest.mark.parametrize(
    "assignor", [StickyAssignor(), CooperativeStickyAssignor()], ids=["sticky", "coop"]
)


@BOTH_STICKY
@pytest.mark.parametrize(
    ("subs", "rf", "broker_racks", "consumer_racks", "expected", "mismatches"),
    [
        # testRackAwareAssignmentWithUniformSubscription (verifyUniformSubscription)
        (UNIFORM, 3, [None, None, None], ABC, STICKY_UNIFORM, None),
        (UNIFORM, 3, ABC, [None, None, None], STICKY_UNIFORM, None),
        (UNIFORM, 3, ABC, ABC, STICKY_UNIFORM, 0),
        (UNIFORM, 3, ABC, ["d", "e", "f"], STICKY_UNIFORM, None),
        (UNIFORM, 3, ABC, [None, "e", "f"], STICKY_UNIFORM, None),
        (UNIFORM, 1, ABC, ABC, STICKY_UNIFORM, 0),
        (UNIFORM, 2, ABC, ABC, STICKY_UNIFORM, 0),
        (UNIFORM, 3, ["a", "b"], ABC, STICKY_UNIFORM, 5),
        # testRackAwareAssignmentWithNonEqualSubscription (verifyNonEqualSubscription)
        (NON_EQUAL, 3, [None, None, None], ABC, STICKY_NON_EQUAL, None),
        (NON_EQUAL, 3, ABC, [None, None, None], STICKY_NON_EQUAL, None),
        (NON_EQUAL, 3, ABC, ABC, STICKY_NON_EQUAL, 0),
        (NON_EQUAL, 3, ABC, ["d", "e", "f"], STICKY_NON_EQUAL, None),
        (NON_EQUAL, 3, ABC, [None, "e", "f"], STICKY_NON_EQUAL, None),
        (NON_EQUAL, 1, ABC, ABC,
         ["t1-3, t2-0, t2-2, t2-3, t2-6", "t1-4, t2-1, t2-4, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-5, t3-1"], 4),
        (NON_EQUAL, 2, ABC, ABC,
         ["t1-3, t2-0, t2-2, t2-5, t2-6", "t1-0, t2-1, t2-3, t2-4, t3-0", "t1-1, t1-2, t1-4, t1-5, t3-1"], 0),
        (NON_EQUAL, 3, ["a", "b"], ABC, STICKY_NON_EQUAL, 5),
    ],
)
@pytest.mark.parametrize("with_owned", [False, True], ids=["fresh", "owned-as-expected"])
def test_sticky_matches_javas_rack_aware_plans(
    assignor, subs, rf, broker_racks, consumer_racks, expected, mismatches, with_owned
) -> None:
    owned = expected if with_owned else None
    plan = run(assignor, UNEVEN, rf, broker_racks, consumer_racks, subs, owned)
    assert plan == [tps(e) for e in expected]
    if mismatches is not None:
        assert mismatched(UNEVEN, rf, broker_racks, consumer_racks, plan) == mismatches


MISALIGNED = ["t1-0, t1-1, t1-2, t1-3, t1-4", "t1-5, t2-0, t2-1, t2-2, t2-3", "t2-4, t2-5, t2-6, t3-0, t3-1"]


def test_sticky_moves_misaligned_owned_partitions_into_their_racks() -> None:
    """Java: "rack-awareness is improved if already owned partitions are misaligned"."""
    assert run(StickyAssignor(), UNEVEN, 1, ABC, ABC, UNIFORM, MISALIGNED) == [tps(e) for e in STICKY_UNIFORM]


def test_cooperative_sticky_first_revokes_misaligned_partitions_then_aligns() -> None:
    first = run(CooperativeStickyAssignor(), UNEVEN, 1, ABC, ABC, UNIFORM, MISALIGNED)
    assert first == [tps("t1-0, t1-3"), tps("t2-1"), tps("t2-5, t3-1")]


def test_non_equal_misaligned_owned_partitions() -> None:
    final = ["t1-3, t2-0, t2-2, t2-3, t2-6", "t1-4, t2-1, t2-4, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-5, t3-1"]
    assert run(StickyAssignor(), UNEVEN, 1, ABC, ABC, NON_EQUAL, MISALIGNED) == [tps(e) for e in final]
    intermediate = ["t1-3", "t2-1", "t3-1"]
    assert run(CooperativeStickyAssignor(), UNEVEN, 1, ABC, ABC, NON_EQUAL, MISALIGNED) == [
        tps(e) for e in intermediate
    ]
    assert run(CooperativeStickyAssignor(), UNEVEN, 1, ABC, ABC, NON_EQUAL, intermediate) == [tps(e) for e in final]


# ----------------------------------------------------------------------------- wire and config
def test_client_rack_travels_in_subscription_v3() -> None:
    config = ConsumerConfig(bootstrap_servers="localhost:9092", group_id="g", client_rack="use1-az2")
    assert config.client_rack == "use1-az2"
    sub = Subscription(topics=("t",), rack_id=config.client_rack)
    assert decode_subscription(encode_subscription(sub)).rack_id == "use1-az2"


def test_empty_client_rack_means_no_rack_as_in_java() -> None:
    assert ConsumerConfig(bootstrap_servers="h:1", group_id="g", client_rack="").client_rack is None
    assert ConsumerConfig.from_properties(
        {"bootstrap.servers": "h:1", "group.id": "g", "client.rack": "r1"}
    ).client_rack == "r1"


@pytest.mark.parametrize("rack", [None, "use1-az2"])
def test_join_group_subscription_carries_the_client_rack(rack) -> None:
    from kgroup.membership import events as ev
    from kgroup.membership.commands import SendJoinGroup
    from tests.unit.machine_script import Script, only

    t = Script(client_rack=rack, assignors=("cooperative-sticky", "range"))
    m = t.machine()
    t.handle(m, ev.Subscribe(frozenset({"a"})))
    join = only(t.handle(m, t.coordinator_found()), SendJoinGroup)
    assert [decode_subscription(meta).rack_id for _, meta in join.protocols] == [rack, rack]
