"""kgroup's consumer meets kafka-python's transactional ``KafkaProducer`` (KIP-447).

``KafkaProducer.send_offsets_to_transaction(offsets, group_metadata)`` takes the group's
identity only as kafka-python's own ``kafka.structs.ConsumerGroupMetadata`` (an ``isinstance``
check), so ``Consumer.group_metadata()`` builds that value here, the one place that may import
kafka-python. The offsets need nothing: kgroup's ``TopicPartition`` equals and hashes as
kafka-python's (``(topic, partition)``) and ``OffsetAndMetadata.leader_epoch`` is an int (-1
unknown), which is all kafka-python's TxnOffsetCommit handler reads (docs/exactly-once.md).
"""

from __future__ import annotations

from kgroup._io import quiet_kafka  # noqa: F401  (first: kafka-python, without its import-time warning)

# isort: split
from kafka.structs import ConsumerGroupMetadata
from kafka.structs import MemberState as KafkaMemberState

from kgroup.types import GroupMetadata

__all__ = ["consumer_group_metadata"]


def consumer_group_metadata(
    group_id: str, generation_id: int, member_id: str, group_instance_id: str | None, state: str
) -> GroupMetadata:
    """kafka-python's ``ConsumerGroupMetadata`` of a member (Java ``ConsumerGroupMetadata``).

    The first four are the member's identity as the group coordinator checks it in
    TxnOffsetCommit v3+ (KIP-447).

    Args:
        group_id: the consumer's group.
        generation_id: the generation, or the member epoch under the consumer group protocol
            (KIP-848), as Java sends it.
        member_id: the member id.
        group_instance_id: the static member's ``group_instance_id`` (KIP-345), else None.
        state: the name of the member's state as ``Consumer.member_state()`` reports it (either
            protocol's), for kafka-python's informational ``state`` field (the producer ignores it).

    """
    if state == "STABLE":
        kafka_state = KafkaMemberState.STABLE
    elif state in ("UNJOINED", "UNSUBSCRIBED"):
        kafka_state = KafkaMemberState.UNJOINED
    else:
        kafka_state = KafkaMemberState.REBALANCING
    value: GroupMetadata = ConsumerGroupMetadata(
        group_id=group_id,
        generation_id=generation_id,
        member_id=member_id,
        group_instance_id=group_instance_id,
        state=kafka_state,
    )
    return value
