"""The assignor API: pure objects that turn subscriptions into a partition plan.

Rules (franz-go's sticky balancer):

1. An assignor is pure. ``assign`` depends only on its arguments; anything from the past
   (owned partitions, generations) arrives in ``MemberSubscription``. Nothing is remembered
   between calls, so one assignor object may serve many consumers and threads.
2. An assignor runs on the group thread of the elected leader ("Sync group members
   and assign partitions"). It must be fast and must not block or do IO.
3. Members are ordered as Java's ``AbstractPartitionAssignor.MemberInfo.compareTo`` orders them:
   static members (with a ``group_instance_id``) first, by instance id, then dynamic members by
   member id (KIP-345: a restarted static member keeps its place and so its partitions).
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping, Sequence
from typing import ClassVar

import attrs

from kgroup.types import NO_GENERATION, PartitionInfo, RebalanceProtocol, TopicPartition

__all__ = [
    "Assignor",
    "MemberSubscription",
    "Plan",
    "member_sort_key",
    "ordered_items",
    "partition_infos",
    "sorted_members",
]

#: A plan: member id -> the partitions it is assigned.
Plan = Mapping[str, frozenset[TopicPartition]]


def _topics(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


def _partitions(value: Iterable[TopicPartition]) -> frozenset[TopicPartition]:
    return frozenset(value)


@attrs.frozen(kw_only=True)
class MemberSubscription:
    """One member's entry in the leader's JoinGroup response, decoded.

    Attributes:
        member_id: the member id the coordinator gave the member.
        group_instance_id: the member's static instance id (KIP-345), or None.
        topics: the topics it subscribes to.
        owned: partitions it owns (ConsumerProtocol Subscription v1+), for sticky assignors.
        generation_id: the generation its ``owned`` comes from (Subscription v2+, KIP-792), or -1.
        rack: its ``client_rack`` (Subscription v3+, KIP-881), or None.
        user_data: assignor-specific bytes from ``Assignor.subscription_user_data``.

    """

    member_id: str
    group_instance_id: str | None = None
    topics: frozenset[str] = attrs.field(converter=_topics)
    owned: frozenset[TopicPartition] = attrs.field(default=frozenset(), converter=_partitions)
    generation_id: int = NO_GENERATION
    rack: str | None = None
    user_data: bytes | None = None


def partition_infos(partitions_per_topic: Mapping[str, int]) -> dict[str, tuple[PartitionInfo, ...]]:
    """Partition counts as ``PartitionInfo``s without leaders or racks (for ``assign_partitions``)."""
    return {topic: tuple(PartitionInfo(p) for p in range(n)) for topic, n in partitions_per_topic.items()}


def member_sort_key(member: MemberSubscription) -> tuple[int, str, str]:
    """Java's member order: static members by instance id first, then dynamic by member id."""
    if member.group_instance_id is not None:
        return (0, member.group_instance_id, member.member_id)
    return (1, member.member_id, "")


def ordered_items(members: Mapping[str, MemberSubscription]) -> list[tuple[str, MemberSubscription]]:
    """``(member_id, subscription)`` pairs in Java's order, the mapping key breaking ties."""
    return sorted(members.items(), key=lambda item: (member_sort_key(item[1]), item[0]))


def sorted_members(members: Iterable[MemberSubscription]) -> list[MemberSubscription]:
    """``members`` in Java's order (see ``member_sort_key``)."""
    return sorted(members, key=member_sort_key)


class Assignor(abc.ABC):
    """Base class of partition assignors (Java ``ConsumerPartitionAssignor``).

    Subclass it to write your own; set ``name`` (the protocol name sent in JoinGroup, shared
    with other clients: "range", "roundrobin", "sticky", "cooperative-sticky") and
    ``supported_protocols``, and implement ``assign``. An assignor that needs more of the
    cluster than partition counts (replica racks, KIP-881) overrides ``assign_partitions``
    instead, as Java's ``AbstractPartitionAssignor.assignPartitions``; each default calls the
    other, and a concrete subclass must override one of them. See
    ``examples/custom_assignor.py``.
    """

    #: protocol name sent in JoinGroup; members of one group agree on it by vote
    name: ClassVar[str]
    #: rebalance protocols this assignor supports (KIP-429); EAGER unless stated
    supported_protocols: ClassVar[tuple[RebalanceProtocol, ...]] = (RebalanceProtocol.EAGER,)

    def subscription_user_data(
        self,
        topics: frozenset[str],
        generation_id: int,
        owned: frozenset[TopicPartition],
    ) -> bytes | None:
        """Bytes to put in this member's Subscription ``user_data`` (KIP-54); None by default.

        Called before every JoinGroup, on the group thread.

        Args:
            topics: the topics the member subscribes to.
            generation_id: the generation of the member's last assignment, or -1 before its
                first one.
            owned: the partitions of the member's last assignment (what Java's assignors keep
                from ``onAssignment``). Under EAGER they were already revoked before this
                JoinGroup, so they are absent from the Subscription's owned partitions; this
                is how Java's ``sticky`` assignor still remembers them.

        """
        return None

    def __init_subclass__(cls, **kwargs: object) -> None:
        """Refuse a concrete assignor that computes no plan: it overrides ``assign`` or ``assign_partitions``.

        Each of the two defaults calls the other; an abstract intermediate class (one that
        declares an abstract method) may leave both to its subclasses.
        """
        super().__init_subclass__(**kwargs)
        overrides = cls.assign is not Assignor.assign or cls.assign_partitions is not Assignor.assign_partitions
        declares_abstract = any(getattr(v, "__isabstractmethod__", False) for v in vars(cls).values())
        if not overrides and not declares_abstract:
            raise TypeError(f"{cls.__name__} must override assign or assign_partitions")

    def assign_partitions(
        self,
        partitions_per_topic: Mapping[str, Sequence[PartitionInfo]],
        members: Mapping[str, MemberSubscription],
    ) -> Plan:
        """Compute the plan from full partition metadata; what the group leader calls.

        The default drops everything but the partition counts and calls ``assign`` (Java
        ``AbstractPartitionAssignor.assignPartitions``). Rack-aware assignors override it.

        Args:
            partitions_per_topic: topic -> its partitions (``PartitionInfo``: number, leader,
                replica racks), for every subscribed topic that exists.
            members: member id -> its subscription (``rack`` is its ``client_rack``).

        Returns:
            As ``assign``.

        """
        return self.assign({topic: len(parts) for topic, parts in partitions_per_topic.items()}, members)

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        members: Mapping[str, MemberSubscription],
    ) -> Plan:
        """Compute the plan.

        The default is ``assign_partitions`` for partitions without leaders or racks
        (``partition_infos``), as Java's rack-aware assignors (``RangeAssignor``,
        ``AbstractStickyAssignor``) compute their plan in ``assignPartitions`` either way.

        Args:
            partitions_per_topic: partition count of every topic some member subscribes to
                (topics that do not exist are absent).
            members: member id -> its subscription; every member must appear in the plan.

        Returns:
            member id -> frozenset of ``TopicPartition``; a partition appears at most once,
            only for a member subscribed to its topic.

        """
        return self.assign_partitions(partition_infos(partitions_per_topic), members)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
