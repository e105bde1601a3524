"""ShareGroupHeartbeat (API key 76): the request and response as kgroup values.

The membership API of share groups (KIP-932, "Queues for Kafka"): a member of a share group
joins, heartbeats and leaves with this request alone; the coordinator computes every
assignment, and a partition may be assigned to several members at once (they share its records
through acquisition locks, not through exclusive ownership). These are kgroup's own value
types (``attrs.frozen``, no kafka-python), as :mod:`kgroup.protocol.consumer_group_heartbeat`
is for the consumer group protocol (KIP-848); :mod:`kgroup._io.kafka_messages` turns them into
kafka-python messages and back.

Field names follow Apache Kafka's message schema (``ShareGroupHeartbeatRequest.json`` and
``ShareGroupHeartbeatResponse.json`` in ``clients/src/main/resources/common/message``) in
snake_case. Versions:

=======  =====================================================================================
version  what changes
=======  =====================================================================================
1        Apache Kafka 4.1+ (version 0, the early access of Kafka 4.0, was removed); the member
         generates its own member id (KIP-1082)
=======  =====================================================================================

Unlike ConsumerGroupHeartbeat, the request carries no owned partitions (a share member does not
acknowledge its assignment: nothing is revoked, so nothing waits for it), no rebalance timeout,
no instance id and no server assignor. ``subscribed_topic_names`` and ``rack_id`` are sent only
when they changed since the last heartbeat (``None``: unchanged); a joining member sends them.
Topic partitions travel as topic ids (:class:`uuid.UUID`), as
:class:`~kgroup.protocol.consumer_group_heartbeat.TopicIdPartitions`.

What each error code means is a row of :func:`kgroup.errors.classify`
(``Api.SHARE_GROUP_HEARTBEAT``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, Final

import attrs

from kgroup.protocol.consumer_group_heartbeat import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    ConsumerGroupHeartbeatResponse,
    TopicIdPartitions,
)

__all__ = [
    "JOIN_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_MEMBER_EPOCH",
    "NEWEST_VERSION",
    "OLDEST_VERSION",
    "SHARE_GROUP_HEARTBEAT",
    "ShareGroupHeartbeatRequest",
    "ShareGroupHeartbeatResponse",
    "TopicIdPartitions",
]

#: the API key of ShareGroupHeartbeat
SHARE_GROUP_HEARTBEAT: Final = 76
#: the one version kgroup speaks (Apache Kafka 4.1+)
NEWEST_VERSION: Final = 1
#: the oldest version kgroup speaks: a broker that serves only v0 (Kafka 4.0's early access) is
#: not a share-group broker for kgroup, as for Java's ``ShareHeartbeatRequestManager``
OLDEST_VERSION: Final = 1


def _optional_tuple(value: Iterable[object] | None) -> tuple[object, ...] | None:
    return None if value is None else tuple(value)


@attrs.frozen(kw_only=True)
class ShareGroupHeartbeatRequest:
    """A ShareGroupHeartbeat request.

    Attributes:
        group_id: the share group.
        member_id: the member's id, a UUID the member generated, kept for its lifetime.
        member_epoch: the current epoch; ``0`` joins, ``-1`` leaves.
        rack_id: the member's rack, sent when joining; ``None`` if unchanged or not set.
        subscribed_topic_names: the subscription; ``None`` if unchanged.
        api_version: the version to send.

    """

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = attrs.field(default=None, converter=_optional_tuple)
    api_version: int = NEWEST_VERSION

    API_KEY: ClassVar[int] = SHARE_GROUP_HEARTBEAT


@attrs.frozen(kw_only=True)
class ShareGroupHeartbeatResponse(ConsumerGroupHeartbeatResponse):
    """A ShareGroupHeartbeat response: the fields of a ConsumerGroupHeartbeat response, field for field.

    Kafka's two response schemas are alike: the error, the member id (here the one the member
    sent), the member epoch, the heartbeat interval (the broker's
    ``group.share.heartbeat.interval.ms`` or the group's override) and the new assignment by topic
    id (``None``: unchanged). Only the API key differs.
    """

    API_KEY: ClassVar[int] = SHARE_GROUP_HEARTBEAT
