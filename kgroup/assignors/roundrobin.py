"""The round-robin assignor: all partitions of all topics dealt to the sorted members in turn.

Semantics of Java's ``RoundRobinAssignor`` ("Round-robin assignor"): every partition
of every subscribed topic, sorted by (topic, partition), is dealt in turn over the members in
``member_sort_key`` order (static members by instance id first, then dynamic members by member
id; KIP-345). The deal uses one circular cursor: a member not subscribed to the partition's
topic is skipped, and the next partition starts after the member that took this one. With
identical subscriptions the counts differ by at most one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from kgroup.assignors.base import Assignor, MemberSubscription, Plan, ordered_items
from kgroup.types import RebalanceProtocol, TopicPartition

__all__ = ["RoundRobinAssignor"]


class RoundRobinAssignor(Assignor):
    """Java's ``RoundRobinAssignor`` (protocol name ``"roundrobin"``), EAGER only.

    Example: one topic with 8 partitions and members C0, C1, C2 gives
    C0 = P0, P3, P6; C1 = P1, P4, P7; C2 = P2, P5.
    """

    name: ClassVar[str] = "roundrobin"
    supported_protocols: ClassVar[tuple[RebalanceProtocol, ...]] = (RebalanceProtocol.EAGER,)

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        members: Mapping[str, MemberSubscription],
    ) -> Plan:
        """Deal every subscribed partition round-robin over the sorted members.

        Source: Java ``RoundRobinAssignor.assign`` (``CircularIterator`` over the sorted
        ``MemberInfo`` list).

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
        topics = sorted({t for _, m in order for t in m.topics})
        cursor = 0
        for topic in topics:
            count = partitions_per_topic.get(topic)
            if count is None or count <= 0:
                continue
            for partition in range(count):
                # the topic has a subscriber (it came from a subscription), so this ends
                while topic not in order[cursor][1].topics:
                    cursor = (cursor + 1) % len(order)
                out[order[cursor][0]].add(TopicPartition(topic, partition))
                cursor = (cursor + 1) % len(order)
        return {member_id: frozenset(tps) for member_id, tps in out.items()}
