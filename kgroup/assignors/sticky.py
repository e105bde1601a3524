"""The sticky assignors: balanced plans that keep as many previous assignments as balance allows.

Semantics of Apache Kafka's Java ``StickyAssignor`` (protocol name "sticky", KIP-54) and
``CooperativeStickyAssignor`` ("cooperative-sticky", KIP-429), both built on
``AbstractStickyAssignor`` as of Kafka 3.5-4.0 (KIP-341, KIP-792, the constrained fast path for
identical subscriptions, rack awareness of KIP-881). See ``kgroup.assignors._sticky_core`` for the
algorithm and where kgroup departs from Java.

1. **Balance first.** With identical subscriptions partition counts differ by at most one. With
   different subscriptions no member holds two partitions more than another member that could
   take one of them (Java's ``isBalanced``).
2. **Then stickiness.** With identical subscriptions every member keeps ``min(owned, quota)``
   of the partitions it owned (``minQuota`` = total // members; the first members, in member-id
   order, that owned enough keep ``minQuota + 1``). Kept partitions are the lowest-numbered.
3. **Who owned what.** A claim comes from ``MemberSubscription.owned`` (Subscription v1+) with
   ``generation_id`` (v2+, KIP-792); when a member sends none, from the assignor's ``user_data``
   (see each class). Two members claiming a partition: the higher generation keeps it; equal
   generations: neither keeps it (Java logs "claimed by multiple consumers" and reassigns it).
4. **Determinism.** Only member ids and topic names order anything, never dict order.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

from kgroup.assignors._sticky_core import MemberData, StickyResult, cooperative_adjust, sticky_assign
from kgroup.assignors._sticky_user_data import (
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)
from kgroup.assignors.base import Assignor, MemberSubscription, Plan
from kgroup.types import NO_GENERATION, PartitionInfo, RebalanceProtocol, TopicPartition
from kgroup.types import tp_key as _tp_key

__all__ = ["CooperativeStickyAssignor", "StickyAssignor"]


def _plan(result: Mapping[str, set[TopicPartition]]) -> dict[str, frozenset[TopicPartition]]:
    return {member_id: frozenset(tps) for member_id, tps in sorted(result.items())}


def _sticky(
    partitions_per_topic: Mapping[str, Sequence[PartitionInfo]],
    members: Mapping[str, MemberSubscription],
    member_data: Callable[[MemberSubscription], MemberData],
) -> StickyResult:
    """The sticky algorithm on partition counts, replica racks and each member's ``member_data``."""
    counts = {topic: len(parts) for topic, parts in partitions_per_topic.items()}
    racks = {
        TopicPartition(topic, p.partition): p.replica_racks
        for topic, parts in partitions_per_topic.items()
        for p in parts
    }
    return sticky_assign(counts, members, {member_id: member_data(m) for member_id, m in members.items()}, racks)


class _AbstractStickyAssignor(Assignor):
    """What both sticky assignors share (Java's ``AbstractStickyAssignor``): ``user_data`` from the last assignment."""

    def subscription_user_data(
        self,
        topics: frozenset[str],
        generation_id: int,
        owned: frozenset[TopicPartition],
    ) -> bytes | None:
        """The assignor's ``user_data`` for the member's last assignment (``_user_data``); ``topics`` is unused."""
        return self._user_data(generation_id, owned)

    @abc.abstractmethod
    def _user_data(self, generation_id: int, owned: frozenset[TopicPartition]) -> bytes | None:
        """The encoded ``user_data`` for ``owned`` assigned in ``generation_id`` (-1 before the first)."""


class StickyAssignor(_AbstractStickyAssignor):
    """Java's ``StickyAssignor`` (protocol name ``"sticky"``), EAGER only.

    ``user_data`` is Java's StickyAssignorUserData v1: the member's previous assignment and its
    generation (``[topic:string partitions:[int32]] generation:int32``), readable by Java members;
    v0 (no generation) and kafka-python 3.x's version-prefixed form are read as well.

    Previous ownership: ``MemberSubscription.owned`` with ``generation_id`` when the member sent
    owned partitions; otherwise the partitions and generation in its ``user_data``. (Java's
    StickyAssignor reads only ``user_data``: under EAGER a Java member revokes everything before
    joining, so its ``owned`` is empty and the two agree.)

    Example (Java javadoc): C0, C1, C2 on t0-t3 with 2 partitions each get 3, 3, 2 partitions;
    when C1 leaves, C0 and C2 keep all theirs and split C1's.
    """

    name: ClassVar[str] = "sticky"
    supported_protocols: ClassVar[tuple[RebalanceProtocol, ...]] = (RebalanceProtocol.EAGER,)

    def _user_data(self, generation_id: int, owned: frozenset[TopicPartition]) -> bytes | None:
        """StickyAssignorUserData v1 for ``owned`` at ``generation_id``.

        Source: Java ``StickyAssignor.subscriptionUserData``.

        Args:
            generation_id: the generation ``owned`` was assigned in.
            owned: the partitions the member was assigned last (its previous assignment).

        Returns:
            The encoded bytes; None for a member never assigned anything (no generation and
            nothing owned), as Java sends null before its first assignment.

        """
        if generation_id == NO_GENERATION and not owned:
            return None
        return encode_sticky_user_data(owned, generation_id)

    @staticmethod
    def member_data(member: MemberSubscription) -> MemberData:
        """The member's previous ownership claim: ``owned`` if it sent any, else its user_data."""
        if member.owned:
            generation = member.generation_id
            if generation == NO_GENERATION:
                decoded = decode_sticky_user_data(member.user_data).generation
                generation = NO_GENERATION if decoded is None else decoded
            return MemberData(tuple(sorted(member.owned, key=_tp_key)), generation)
        decoded_data = decode_sticky_user_data(member.user_data)
        generation = NO_GENERATION if decoded_data.generation is None else decoded_data.generation
        return MemberData(decoded_data.partitions, generation)

    def assign_partitions(
        self,
        partitions_per_topic: Mapping[str, Sequence[PartitionInfo]],
        members: Mapping[str, MemberSubscription],
    ) -> Plan:
        """Compute a balanced, sticky plan; members with a ``rack`` prefer partitions in it (KIP-881).

        Source: Java ``AbstractStickyAssignor.assignPartitions`` (constrained path for identical
        subscriptions, general path otherwise) and its ``RackInfo``: balance comes first; racks
        decide which partitions a member keeps or gets within its quota. Every member of
        ``members`` appears, possibly with an empty set; every partition of a subscribed topic
        is assigned. Undecodable user_data counts as no previous assignment.
        """
        return _plan(_sticky(partitions_per_topic, members, self.member_data).plan)


class CooperativeStickyAssignor(_AbstractStickyAssignor):
    """Java's ``CooperativeStickyAssignor`` (``"cooperative-sticky"``), COOPERATIVE and EAGER.

    Same plan as ``StickyAssignor``, then KIP-429's rule: a partition that the balanced plan gives
    to a member while another member still owns it is left out of this round's plan. Its owner
    sees it missing and revokes it; the revocation makes the owner rejoin, and the follow-up
    rebalance (where nobody owns it) assigns it. In Java this removal happens in the assignor
    (``CooperativeStickyAssignor.adjustAssignment`` of ``partitionsTransferringOwnership``, which
    ``AbstractStickyAssignor``'s constrained builder records and, after the general builder,
    ``computePartitionsTransferringOwnership`` derives); ``ConsumerCoordinator`` trusts the
    built-in assignor and runs ``validateCooperativeAssignment`` only for other COOPERATIVE
    assignors. kgroup removes them here too, and ``validate_plan`` checks every plan.

    Previous ownership always comes from ``MemberSubscription.owned`` (a cooperative member keeps
    its partitions across the join). Its generation is ``generation_id`` (Subscription v2+); for
    older subscriptions, the generation in ``user_data``: Java's CooperativeStickyAssignorUserData,
    one int32 (``generation:int32``), which ``subscription_user_data`` always writes.
    """

    name: ClassVar[str] = "cooperative-sticky"
    supported_protocols: ClassVar[tuple[RebalanceProtocol, ...]] = (
        RebalanceProtocol.COOPERATIVE,
        RebalanceProtocol.EAGER,
    )

    def _user_data(self, generation_id: int, owned: frozenset[TopicPartition]) -> bytes | None:
        """The generation as one big-endian int32 (Java ``CooperativeStickyAssignor``).

        Args:
            generation_id: the member's last generation (-1 before its first).
            owned: the partitions it owns (unused: they travel in the Subscription).

        Returns:
            4 bytes.

        """
        return encode_cooperative_user_data(generation_id)

    @staticmethod
    def member_data(member: MemberSubscription) -> MemberData:
        """The member's claim: ``owned`` at ``generation_id``, else at its user_data generation."""
        generation = member.generation_id
        if generation == NO_GENERATION:
            decoded = decode_cooperative_user_data(member.user_data)
            generation = NO_GENERATION if decoded is None else decoded
        return MemberData(tuple(sorted(member.owned, key=_tp_key)), generation)

    def assign_partitions(
        self,
        partitions_per_topic: Mapping[str, Sequence[PartitionInfo]],
        members: Mapping[str, MemberSubscription],
    ) -> Plan:
        """The sticky plan (racks as ``StickyAssignor``'s), minus partitions to revoke first (KIP-429).

        Source: Java ``CooperativeStickyAssignor.assignPartitions``. Every member appears. A
        partition is missing only while it is being revoked from a member that owns it; no
        partition goes to a member that does not own it while another member owns it.
        """
        result = _sticky(partitions_per_topic, members, self.member_data)
        cooperative_adjust(result.plan, members, result.transferring)
        return _plan(result.plan)
