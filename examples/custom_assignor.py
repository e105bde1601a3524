"""A custom assignor: partitions shared in proportion to each member's declared capacity.

Run it with ``python examples/custom_assignor.py`` (``PYTHONPATH`` must reach ``kgroup``). It
uses the cluster named by ``KGROUP_BOOTSTRAP_SERVERS`` if that is set, and otherwise starts the
embedded test broker (``kgroup.testing.start_broker()``) and stops it at the end (~15 s).

The assignor API (``kgroup.Assignor``; Java's ``ConsumerPartitionAssignor``, KIP-54 user data):

* ``name``: the protocol name sent in JoinGroup. Members vote on a name every one of them
  lists, so all members of a group must ship the same assignor under the same name.
* ``supported_protocols``: the rebalance protocols it can run (KIP-429). EAGER is always safe.
  A COOPERATIVE assignor must never move a partition straight from one member to another in a
  single round (give it to nobody until its owner has revoked it); the leader validates every
  plan and a violation fails the rebalance with ``kgroup.AssignmentError`` rather than letting
  two members own a partition.
* ``subscription_user_data(topics, generation_id, owned)``: bytes each member sends in its
  Subscription; every member's bytes reach the leader's ``assign`` as
  ``MemberSubscription.user_data``. Here: the member's capacity as a big-endian int32.
* ``assign(partitions_per_topic, members)``: runs on the leader only. Pure: no IO, no state
  (owned partitions and generations arrive in ``members``). Return member id -> frozenset of
  ``TopicPartition``, every member present, every partition at most once, only to a member
  subscribed to its topic. Members must be ordered deterministically; ``sorted_members`` gives
  Java's order (static members by ``group_instance_id`` first, KIP-345), so a restarted static
  member keeps its partitions.
* Override ``assign_partitions`` instead if you need replica racks (KIP-881): it receives
  ``kgroup.PartitionInfo`` lists (see ``kgroup.RangeAssignor``).

What the script shows: two consumers in one group, ``light`` (capacity 1) and ``heavy``
(capacity 2), both configured with ``assignors=(CapacityAssignor(n),)``, on a 12-partition
topic. Whichever of them leads, ``light`` ends up with 4 partitions and ``heavy`` with 8. It
prints both assignments and ``PASS`` (exit 0) or ``FAIL`` (exit 1).
"""

from __future__ import annotations

import os
import struct
import sys
import time
import uuid
from collections.abc import Mapping
from typing import ClassVar

import kgroup
from kgroup.assignors.base import Plan, sorted_members
from kgroup.testing import create_topic, start_broker

PARTITIONS = 12
DEADLINE_S = 60.0


class CapacityAssignor(kgroup.Assignor):
    """Shares each topic's partitions in proportion to the members' capacities.

    Args:
        capacity: this member's capacity (int >= 1), sent to the leader in the Subscription's
            user data (4 bytes, big-endian).

    Raises:
        ValueError: a capacity below 1 (at construction).
        kgroup.AssignmentError: (in ``assign``, on the leader) a member sent user data that is
            not a 4-byte capacity: a member running another version of this assignor.

    """

    name: ClassVar[str] = "capacity"
    supported_protocols: ClassVar[tuple[kgroup.RebalanceProtocol, ...]] = (kgroup.RebalanceProtocol.EAGER,)

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity

    def subscription_user_data(
        self, topics: frozenset[str], generation_id: int, owned: frozenset[kgroup.TopicPartition]
    ) -> bytes | None:
        return struct.pack(">i", self.capacity)

    @staticmethod
    def capacity_of(member: kgroup.MemberSubscription) -> int:
        data = member.user_data
        if data is None or len(data) != 4 or struct.unpack(">i", data)[0] < 1:
            raise kgroup.AssignmentError(
                f"member {member.member_id!r} sent {data!r} as its capacity; "
                "every member of the group must run CapacityAssignor"
            )
        value: int = struct.unpack(">i", data)[0]
        return value

    def assign(self, partitions_per_topic: Mapping[str, int], members: Mapping[str, kgroup.MemberSubscription]) -> Plan:
        order = sorted_members(members.values())
        plan: dict[str, set[kgroup.TopicPartition]] = {m.member_id: set() for m in order}
        capacity = {m.member_id: self.capacity_of(m) for m in order}
        for topic in sorted({t for m in order for t in m.topics}):
            count = partitions_per_topic.get(topic, 0)
            subscribers = [m.member_id for m in order if topic in m.topics]
            if not count or not subscribers:
                continue
            total = sum(capacity[m] for m in subscribers)
            # largest-remainder apportionment: floor shares, then the biggest remainders get one more
            exact = {m: count * capacity[m] / total for m in subscribers}
            shares = {m: int(exact[m]) for m in subscribers}
            by_remainder = sorted(subscribers, key=lambda m: (-(exact[m] - shares[m]), subscribers.index(m)))
            for m in by_remainder[: count - sum(shares.values())]:
                shares[m] += 1
            start = 0
            for m in subscribers:  # contiguous ranges, like range
                plan[m].update(kgroup.TopicPartition(topic, p) for p in range(start, start + shares[m]))
                start += shares[m]
        return {member_id: frozenset(tps) for member_id, tps in plan.items()}


def run(bootstrap: str) -> int:
    topic = f"capacity-{uuid.uuid4().hex[:8]}"
    group = f"capacity-group-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    consumers = {
        name: kgroup.Consumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=name,
            assignors=(CapacityAssignor(capacity),),
            session_timeout_ms=6000,
            heartbeat_interval_ms=1000,
        )
        for name, capacity in (("light", 1), ("heavy", 2))
    }
    try:
        for consumer in consumers.values():
            consumer.subscribe([topic])
        deadline = time.monotonic() + DEADLINE_S
        sizes: dict[str, int] = {}
        while time.monotonic() < deadline:
            for consumer in consumers.values():  # one thread polls both: each stays within its poll interval
                consumer.poll(100)
            sizes = {name: len(c.assignment()) for name, c in consumers.items()}
            generations = {c.group_metadata().generation_id for c in consumers.values()}
            if sizes == {"light": 4, "heavy": 8} and len(generations) == 1:
                break
        for name, consumer in consumers.items():
            parts = sorted(tp.partition for tp in consumer.assignment())
            print(f"{name:>5} (capacity {consumer.config.assignors[0].capacity}): {len(parts)} partitions {parts}")
        if sizes == {"light": 4, "heavy": 8}:
            print("PASS: partitions shared 1:2 by capacity")
            return 0
        print(f"FAIL: expected light=4, heavy=8 within {DEADLINE_S:.0f} s, got {sizes}")
        return 1
    finally:
        for consumer in consumers.values():
            consumer.close(timeout_ms=10_000)


def main() -> int:
    bootstrap = os.environ.get("KGROUP_BOOTSTRAP_SERVERS")
    if bootstrap:
        return run(bootstrap)
    with start_broker() as broker:
        return run(broker.bootstrap_servers)


if __name__ == "__main__":
    sys.exit(main())
