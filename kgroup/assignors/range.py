"""The range assignor: per topic, contiguous partition ranges over the sorted subscribers.

Semantics of Java's ``RangeAssignor`` without rack awareness (seed 000, "Range assignor"):
for each topic, its subscribers are taken in ``member_sort_key`` order (static members by
instance id first, then dynamic members by member id; KIP-345), partitions ``0..n-1`` are cut
into contiguous ranges of ``n // m`` and the first ``n % m`` subscribers get one more. Topics
are independent, so with several small topics the first members are favoured (seed 000).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from kgroup.assignors.base import Assignor, MemberSubscription, Plan, ordered_items
from kgroup.types import RebalanceProtocol, TopicPartition

__all__ = ["RangeAssignor"]


class RangeAssignor(Assignor):
    """Java's ``RangeAssignor`` (protocol name ``"range"``), EAGER only.

    Example (seed 000): one topic with 8 partitions and members C0, C1, C2 gives
    C0 = P0-P2, C1 = P3-P5, C2 = P6-P7.
    """

    name: ClassVar[str] = "range"
    supported_protocols: ClassVar[tuple[RebalanceProtocol, ...]] = (RebalanceProtocol.EAGER,)

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        members: Mapping[str, MemberSubscription],
    ) -> Plan:
        """Assign contiguous ranges of each topic to its subscribers.

        Source: Java ``RangeAssignor.assignPartitions`` (rack-unaware path); seed 000.

        Args:
            partitions_per_topic: topic -> partition count (int); topics missing here are
                skipped (they do not exist).
            members: member id -> ``MemberSubscription``.

        Returns:
            member id -> frozenset[TopicPartition]; every member of ``members`` appears,
            possibly with an empty set.

        Raises:
            Nothing for valid inputs.

        """
        order = ordered_items(members)
        out: dict[str, set[TopicPartition]] = {member_id: set() for member_id, _ in order}
        for topic in sorted({t for _, m in order for t in m.topics}):
            count = partitions_per_topic.get(topic)
            if count is None or count <= 0:
                continue
            subscribers = [member_id for member_id, m in order if topic in m.topics]
            quota, extra = divmod(count, len(subscribers))
            start = 0
            for i, member_id in enumerate(subscribers):
                length = quota + (1 if i < extra else 0)
                out[member_id].update(
                    TopicPartition(topic, p) for p in range(start, start + length)
                )
                start += length
        return {member_id: frozenset(tps) for member_id, tps in out.items()}
