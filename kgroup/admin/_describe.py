"""Described groups to ``GroupDescription``: DescribeGroups, ConsumerGroupDescribe (KIP-848) and ShareGroupDescribe.

A classic member's bytes are decoded with kgroup's ConsumerProtocol codec
(:mod:`kgroup.protocol.consumer_protocol`): its assignment always (empty bytes: no partitions, as
Java's ``DescribeConsumerGroupsHandler``), its subscription when the coordinator sends it (only
while the group is Stable: Kafka's ``describeNoMetadata``); bytes that do not decode are named in
``MemberDescription.decode_error``. A consumer group's members come decoded already.
"""

from __future__ import annotations

from typing import Final

from kgroup.admin._errors import AdminError
from kgroup.admin._values import Coordinator, GroupDescription, MemberDescription
from kgroup.errors import MalformedMetadata
from kgroup.protocol.consumer_group_describe import (
    MEMBER_TYPE_CLASSIC,
    MEMBER_TYPE_CONSUMER,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    NamedTopicPartitions,
)
from kgroup.protocol.consumer_protocol import decode_assignment, decode_subscription
from kgroup.protocol.group_api import DescribedGroup, DescribedMember
from kgroup.protocol.share_group_admin import DescribedShareGroup, DescribedShareMember
from kgroup.types import TopicPartition

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "SHARE_PROTOCOL_TYPE",
    "describe_classic_group",
    "describe_consumer_group",
    "describe_share_group",
]

#: the protocol type of consumer groups (Kafka Connect's and others' groups are not described)
CONSUMER_PROTOCOL_TYPE: Final = "consumer"
#: the protocol type (and group type) ListGroups answers for a share group (KIP-932)
SHARE_PROTOCOL_TYPE: Final = "share"


def describe_classic_group(described: DescribedGroup, coordinator: Coordinator) -> GroupDescription:
    """A DescribeGroups entry as a ``GroupDescription`` (AdminError: not a consumer group)."""
    if described.protocol_type not in (CONSUMER_PROTOCOL_TYPE, ""):
        raise AdminError(
            f"group {described.group_id!r} is not a consumer group (protocol type {described.protocol_type!r})",
            api="DescribeGroups",
        )
    return GroupDescription(
        group_id=described.group_id,
        state=described.group_state,
        protocol_type=described.protocol_type,
        protocol=described.protocol_data,
        generation_id=None,
        coordinator=coordinator,
        members=tuple(_member(m) for m in described.members),
    )


def describe_consumer_group(described: DescribedConsumerGroup, coordinator: Coordinator) -> GroupDescription:
    """A ConsumerGroupDescribe entry as a ``GroupDescription`` (``group_type`` "consumer")."""
    return GroupDescription(
        group_id=described.group_id,
        state=described.group_state,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol=described.assignor_name,
        generation_id=None,
        coordinator=coordinator,
        members=tuple(_consumer_member(m) for m in described.members),
        group_type="consumer",
        group_epoch=described.group_epoch,
        assignment_epoch=described.assignment_epoch,
    )


def describe_share_group(described: DescribedShareGroup, coordinator: Coordinator) -> GroupDescription:
    """A ShareGroupDescribe entry as a ``GroupDescription`` (``group_type`` "share", KIP-932)."""
    return GroupDescription(
        group_id=described.group_id,
        state=described.group_state,
        protocol_type=SHARE_PROTOCOL_TYPE,
        protocol=described.assignor_name,
        generation_id=None,
        coordinator=coordinator,
        members=tuple(_share_member(m) for m in described.members),
        group_type=SHARE_PROTOCOL_TYPE,
        group_epoch=described.group_epoch,
        assignment_epoch=described.assignment_epoch,
    )


def _share_member(m: DescribedShareMember) -> MemberDescription:
    return MemberDescription(
        member_id=m.member_id,
        group_instance_id=None,
        client_id=m.client_id,
        client_host=m.client_host,
        assignment=_partitions(m.assignment),
        subscribed_topics=tuple(sorted(m.subscribed_topic_names)),
        member_epoch=m.member_epoch,
        rack_id=m.rack_id,
    )


_MEMBER_PROTOCOLS: Final = {MEMBER_TYPE_CLASSIC: "classic", MEMBER_TYPE_CONSUMER: "consumer"}


def _partitions(topics: tuple[NamedTopicPartitions, ...]) -> tuple[TopicPartition, ...]:
    return tuple(sorted(TopicPartition(t.topic_name, p) for t in topics for p in t.partitions))


def _consumer_member(m: DescribedConsumerMember) -> MemberDescription:
    return MemberDescription(
        member_id=m.member_id,
        group_instance_id=m.instance_id,
        client_id=m.client_id,
        client_host=m.client_host,
        assignment=_partitions(m.assignment),
        subscribed_topics=tuple(sorted(m.subscribed_topic_names)),
        member_epoch=m.member_epoch,
        target_assignment=_partitions(m.target_assignment),
        member_protocol=_MEMBER_PROTOCOLS.get(m.member_type),
        rack_id=m.rack_id,
        subscribed_topic_regex=m.subscribed_topic_regex,
    )


def _member(m: DescribedMember) -> MemberDescription:
    problems: list[str] = []
    assignment: tuple[TopicPartition, ...] = ()
    topics: tuple[str, ...] | None = None
    try:
        assignment = tuple(sorted(decode_assignment(m.member_assignment).partitions))
    except MalformedMetadata as exc:
        problems.append(f"assignment: {exc}")
    if m.member_metadata:
        try:
            topics = tuple(sorted(decode_subscription(m.member_metadata).topics))
        except MalformedMetadata as exc:
            problems.append(f"subscription: {exc}")
    return MemberDescription(
        member_id=m.member_id,
        group_instance_id=m.group_instance_id,
        client_id=m.client_id,
        client_host=m.client_host,
        assignment=assignment,
        subscribed_topics=topics,
        decode_error="; ".join(problems) or None,
    )
