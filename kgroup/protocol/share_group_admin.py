"""Share groups' admin APIs (KIP-932) as kgroup values: ShareGroupDescribe and the start-offset APIs.

A share group (KIP-932) has no committed offsets: per partition its coordinator keeps the
share-partition start offset (SPSO), the first offset not yet delivered and acknowledged by
every member. Java's ``Admin.describeShareGroups``, ``listShareGroupOffsets``,
``alterShareGroupOffsets`` and ``deleteShareGroupOffsets`` send these APIs;
:class:`kgroup.admin.GroupAdmin` does the same. :mod:`kgroup._io.kafka_messages` turns
kafka-python's messages into these values (field names: Apache Kafka's message schemas, in
snake_case).

=========================  ===  ========  =================================================
API                        key  versions  what
=========================  ===  ========  =================================================
ShareGroupDescribe          77  1         state, epochs, assignor; members with their
                                          assignment by topic name (Kafka 4.1+)
DescribeShareGroupOffsets   90  0-1       each partition's start offset; v1 adds its lag
                                          (KIP-1226, Kafka 4.2+)
AlterShareGroupOffsets      91  0         set start offsets; the group must be empty
                                          (NON_EMPTY_GROUP otherwise)
DeleteShareGroupOffsets     92  0         delete a topic's start offsets; empty group only
=========================  ===  ========  =================================================

A ``-1`` start offset, lag or epoch means "none" or "unknown", as in Kafka's schemas.
"""

from __future__ import annotations

from typing import Final

import attrs

from kgroup.protocol.consumer_group_describe import NamedTopicPartitions
from kgroup.types import TopicPartition

__all__ = [
    "ALTER_SHARE_GROUP_OFFSETS",
    "DELETE_SHARE_GROUP_OFFSETS",
    "DESCRIBE_SHARE_GROUP_OFFSETS",
    "SHARE_GROUP_DESCRIBE",
    "DescribedShareGroup",
    "DescribedShareMember",
    "ShareGroupOffsets",
    "ShareOffsetsAltered",
    "ShareOffsetsDeleted",
    "SharePartitionOffset",
]

#: the API keys
SHARE_GROUP_DESCRIBE: Final = 77
DESCRIBE_SHARE_GROUP_OFFSETS: Final = 90
ALTER_SHARE_GROUP_OFFSETS: Final = 91
DELETE_SHARE_GROUP_OFFSETS: Final = 92


@attrs.frozen(kw_only=True)
class DescribedShareMember:
    """One member of a ShareGroupDescribe answer (epoch, client, and its assignment by topic)."""

    member_id: str
    rack_id: str | None = None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...] = ()
    assignment: tuple[NamedTopicPartitions, ...] = ()


@attrs.frozen(kw_only=True)
class DescribedShareGroup:
    """One group of a ShareGroupDescribe answer; ``error_code`` 69 (GROUP_ID_NOT_FOUND): not a share group."""

    error_code: int
    error_message: str | None = None
    group_id: str
    group_state: str = ""
    group_epoch: int = -1
    assignment_epoch: int = -1
    assignor_name: str = ""
    members: tuple[DescribedShareMember, ...] = ()


@attrs.frozen(kw_only=True)
class SharePartitionOffset:
    """One partition of a DescribeShareGroupOffsets answer.

    Attributes:
        start_offset: the share-partition start offset, -1 when the group has none there.
        leader_epoch: the leader epoch it was written at, -1 when unknown.
        lag: the records from the start offset to the log end not yet acknowledged (v1+,
            KIP-1226), -1 when unknown or not carried (v0).
        error_code: the partition's error code (0: none).
        error_message: its message, or None.

    """

    start_offset: int
    leader_epoch: int = -1
    lag: int = -1
    error_code: int = 0
    error_message: str | None = None


@attrs.frozen(kw_only=True)
class ShareGroupOffsets:
    """A group's DescribeShareGroupOffsets answer: its error and each partition's start offset."""

    error_code: int
    error_message: str | None = None
    partitions: dict[TopicPartition, SharePartitionOffset] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class ShareOffsetsAltered:
    """An AlterShareGroupOffsets answer: the request's error (NON_EMPTY_GROUP, ...) and each partition's."""

    error_code: int
    error_message: str | None = None
    partitions: dict[TopicPartition, int] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class ShareOffsetsDeleted:
    """A DeleteShareGroupOffsets answer: the request's error and each topic's."""

    error_code: int
    error_message: str | None = None
    topics: dict[str, int] = attrs.field(factory=dict)
