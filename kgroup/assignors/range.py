"""The range assignor: per topic, contiguous partition ranges over the sorted subscribers.

Semantics of Java's ``RangeAssignor`` ("Range assignor"; rack awareness of KIP-881):
for each topic, its subscribers are taken in ``member_sort_key`` order (static members by
instance id first, then dynamic members by member id; KIP-345), partitions ``0..n-1`` are cut
into contiguous ranges of ``n // m`` and the first ``n % m`` subscribers get one more. Topics
are independent, so with several small topics the first members are favoured.

Racks (KIP-881, Java ``RangeAssignor.assignPartitions``): when members send a ``client_rack``
and a topic's partitions do not all have replicas in the same racks, each member first takes,
up to its share, the partitions with a replica in its rack (for topics with the same
subscribers and partition count, "co-partitioned", partition ``p`` of every such topic goes to
the same member); the rest are then dealt as ranges. The per-topic shares are unchanged, so the
plan is exactly as balanced as without racks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from kgroup.assignors.base import Assignor, MemberSubscription, Plan, ordered_items
from kgroup.types import PartitionInfo, RebalanceProtocol, TopicPartition

__all__ = ["RangeAssignor"]


class _TopicState:
    """Java ``RangeAssignor.TopicAssignmentState``: one topic's subscribers, shares and racks."""

    def __init__(self, topic: str, parts: Sequence[PartitionInfo], subscribers: list[str],
                 member_racks: Mapping[str, str]) -> None:
        self.topic = topic
        self.subscribers = subscribers
        self.racks = {m: member_racks.get(m) for m in subscribers}
        self.unassigned = [TopicPartition(topic, p.partition) for p in sorted(parts, key=lambda p: p.partition)]
        self.count = {m: 0 for m in subscribers}
        self.quota, self.extra = divmod(len(parts), len(subscribers)) if subscribers else (0, 0)
        consumer_racks = {r for r in self.racks.values() if r is not None}
        self.partition_racks: dict[TopicPartition, frozenset[str]] = (
            {TopicPartition(topic, p.partition): p.replica_racks for p in parts} if consumer_racks else {}
        )
        all_racks = set().union(*self.partition_racks.values()) if self.partition_racks else set()
        self.needs_racks = bool(
            consumer_racks
            and not consumer_racks.isdisjoint(all_racks)
            and any(r != all_racks for r in self.partition_racks.values())
        )

    def racks_match(self, member_id: str, tp: TopicPartition) -> bool:
        rack = self.racks[member_id]
        return rack is None or rack in self.partition_racks.get(tp, frozenset())

    def max_assignable(self, member_id: str) -> int:
        return max(0, self.quota + (1 if self.extra > 0 else 0) - self.count[member_id])

    def take(self, member_id: str, tps: list[TopicPartition], out: dict[str, set[TopicPartition]]) -> None:
        out[member_id].update(tps)
        self.count[member_id] += len(tps)
        if self.count[member_id] > self.quota:
            self.extra -= 1
        if len(tps) == len(self.unassigned) or tps == self.unassigned[: len(tps)]:
            del self.unassigned[: len(tps)]  # the common case: a range from the front
        else:
            taken = set(tps)
            self.unassigned = [tp for tp in self.unassigned if tp not in taken]


class RangeAssignor(Assignor):
    """Java's ``RangeAssignor`` (protocol name ``"range"``), EAGER only, rack-aware (KIP-881).

    Example: one topic with 8 partitions and members C0, C1, C2 gives
    C0 = P0-P2, C1 = P3-P5, C2 = P6-P7.
    """

    name: ClassVar[str] = "range"
    supported_protocols: ClassVar[tuple[RebalanceProtocol, ...]] = (RebalanceProtocol.EAGER,)

    def assign_partitions(
        self,
        partitions_per_topic: Mapping[str, Sequence[PartitionInfo]],
        members: Mapping[str, MemberSubscription],
    ) -> Plan:
        """Assign contiguous ranges of each topic to its subscribers; same-rack partitions first (KIP-881).

        Source: Java ``RangeAssignor.assignPartitions``. Every member of ``members`` appears in
        the plan, possibly with an empty set; nothing is raised for valid inputs.
        """
        order = ordered_items(members)
        out: dict[str, set[TopicPartition]] = {member_id: set() for member_id, _ in order}
        member_racks = {member_id: m.rack for member_id, m in order if m.rack}
        states = []
        for topic in sorted({t for _, m in order for t in m.topics}):
            parts = partitions_per_topic.get(topic)
            subscribers = [member_id for member_id, m in order if topic in m.topics]
            if parts and subscribers:
                states.append(_TopicState(topic, parts, subscribers, member_racks))
        if any(s.needs_racks for s in states):
            self._assign_with_rack_matching(states, out)
        for state in states:
            self._assign_ranges(state, None, out)
        return {member_id: frozenset(tps) for member_id, tps in out.items()}

    @staticmethod
    def _assign_ranges(state: _TopicState, rack_match: bool | None, out: dict[str, set[TopicPartition]]) -> None:
        """Each subscriber in order takes up to its share of the (rack-matching) unassigned partitions."""
        for member_id in state.subscribers:
            if not state.unassigned:
                break
            limit = state.max_assignable(member_id)
            if not rack_match:
                eligible = state.unassigned[:limit]
            else:
                eligible = []
                for tp in state.unassigned:
                    if len(eligible) == limit:
                        break
                    if state.racks_match(member_id, tp):
                        eligible.append(tp)
            if eligible:
                state.take(member_id, eligible, out)

    def _assign_with_rack_matching(self, states: list[_TopicState], out: dict[str, set[TopicPartition]]) -> None:
        """Java ``assignWithRackMatching``: co-partitioned topics together, others one by one."""
        groups: dict[tuple[tuple[tuple[str, str | None], ...], int], list[_TopicState]] = {}
        for state in states:
            key = (tuple(state.racks.items()), len(state.partition_racks))
            groups.setdefault(key, []).append(state)
        for (subscribers, partition_count), group in groups.items():
            if len(group) > 1:
                self._assign_co_partitioned(list(dict(subscribers)), partition_count, group, out)
            elif group[0].needs_racks:
                self._assign_ranges(group[0], True, out)

    @staticmethod
    def _assign_co_partitioned(
        subscribers: list[str], partition_count: int, group: list[_TopicState], out: dict[str, set[TopicPartition]]
    ) -> None:
        """Partition ``p`` of every topic in ``group`` to the first member whose rack holds all of them."""
        remaining = list(subscribers)
        for p in range(partition_count):
            match = next(
                (
                    m
                    for m in remaining
                    if all(s.racks_match(m, TopicPartition(s.topic, p)) and s.max_assignable(m) > 0 for s in group)
                ),
                None,
            )
            if match is None:
                continue
            for s in group:
                tp = TopicPartition(s.topic, p)
                if tp in s.unassigned:
                    s.take(match, [tp], out)
            if not any(s.max_assignable(match) > 0 for s in group):
                remaining.remove(match)
                if not remaining:
                    break
