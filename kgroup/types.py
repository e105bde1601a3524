"""kgroup's own value types.

Rule 1: every type here is ``attrs.frozen`` and holds only immutable data (tuples, frozensets),
so a value can cross threads without a lock. (``ConsumerRecord`` is an immutable ``NamedTuple``
instead, for speed: see its docstring; ``GroupMetadata`` is a protocol, the fields of the value
``Consumer.group_metadata()`` returns.)
Rule 2: nothing here imports kafka-python; the adapter (``kgroup._io.kafka_python``) converts.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol

import attrs

# K and V live apart (kgroup._typevars) so importing kgroup.consumer needs no attrs; re-exported here
from kgroup._typevars import K as K
from kgroup._typevars import V as V

__all__ = [
    "NO_GENERATION",
    "UNKNOWN_MEMBER_ID",
    "AcknowledgeType",
    "ConsumerRecord",
    "Generation",
    "GroupMetadata",
    "OffsetAndMetadata",
    "PartitionInfo",
    "RebalanceProtocol",
    "ShareConsumerRecord",
    "TopicPartition",
    "partitions_by_topic",
    "tp_key",
]

#: Generation id of a member that is not part of any generation (Java ``Generation.NO_GENERATION``).
NO_GENERATION = -1
#: Member id sent on a first JoinGroup (Java ``JoinGroupRequest.UNKNOWN_MEMBER_ID``).
UNKNOWN_MEMBER_ID = ""


@attrs.frozen(eq=False, order=False)
class TopicPartition:
    """A partition of a topic: ``TopicPartition("orders", 3)``.

    It equals, and hashes as, the tuple ``(topic, partition)``, so also kafka-python's
    ``TopicPartition`` namedtuple: a dict keyed by kgroup's partitions is one kafka-python's
    ``KafkaProducer.send_offsets_to_transaction`` can take and answer by its own keys
    (docs/exactly-once.md).

    Attributes:
        topic: topic name (str).
        partition: partition number (int, >= 0).

    """

    topic: str
    partition: int

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TopicPartition):
            return self.topic == other.topic and self.partition == other.partition
        if isinstance(other, tuple):
            return len(other) == 2 and other[0] == self.topic and other[1] == self.partition
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.topic, self.partition))

    # ordered by topic, then partition (written out: attrs' generated order builds tuples per call,
    # and sorting a thousand partitions was a visible part of a join and a commit)
    def __lt__(self, other: object) -> bool:
        if not isinstance(other, TopicPartition):
            return NotImplemented
        return (self.topic, self.partition) < (other.topic, other.partition)

    def __le__(self, other: object) -> bool:
        if not isinstance(other, TopicPartition):
            return NotImplemented
        return (self.topic, self.partition) <= (other.topic, other.partition)

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, TopicPartition):
            return NotImplemented
        return (self.topic, self.partition) > (other.topic, other.partition)

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, TopicPartition):
            return NotImplemented
        return (self.topic, self.partition) >= (other.topic, other.partition)

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def _epoch(leader_epoch: int | None) -> int:
    return -1 if leader_epoch is None else leader_epoch


@attrs.frozen
class OffsetAndMetadata:
    """An offset to commit, or a committed offset (Java ``OffsetAndMetadata``).

    Attributes:
        offset: the offset of the *next* record to consume (int, >= 0).
        metadata: free-form string stored with the commit (str).
        leader_epoch: the leader epoch of the last consumed record (KIP-320), -1 when unknown
            (the wire's spelling, and kafka-python's: ``None`` is taken as -1), so that
            kafka-python's ``KafkaProducer.send_offsets_to_transaction`` can encode the value
            as it is (TxnOffsetCommit, KIP-447).

    """

    offset: int
    metadata: str = ""
    leader_epoch: int = attrs.field(default=-1, converter=_epoch)


@attrs.frozen
class OffsetAndTimestamp:
    """A ``Consumer.offsets_for_times`` answer (Java ``OffsetAndTimestamp``).

    Attributes:
        offset: the earliest offset whose record timestamp is >= the one asked for (int).
        timestamp: that record's timestamp, in ms since the epoch (int).

    """

    offset: int
    timestamp: int


@attrs.frozen
class PartitionInfo:
    """One partition as cluster metadata describes it (Java ``PartitionInfo``).

    Attributes:
        partition: the partition number (int, >= 0).
        leader: the leader's broker node id, or -1 while there is none.
        replica_racks: the racks (``broker.rack``) of the brokers holding its replicas; empty
            when brokers have no rack. Rack-aware assignors (KIP-881) prefer a consumer whose
            ``client_rack`` is one of them.

    """

    partition: int
    leader: int = -1
    replica_racks: frozenset[str] = attrs.field(default=frozenset(), converter=frozenset)


class RebalanceProtocol(enum.IntEnum):
    """Rebalance protocols (KIP-429). Higher is newer; a group uses the highest common one."""

    EAGER = 0
    COOPERATIVE = 1


@attrs.frozen
class Generation:
    """A member's place in the group: generation id, member id and chosen protocol.

    ``Generation()`` is the "no generation" value (generation_id -1, member_id "").
    """

    generation_id: int = NO_GENERATION
    member_id: str = UNKNOWN_MEMBER_ID
    protocol: str | None = None

    def is_valid(self) -> bool:
        """True when this is a generation a commit or heartbeat may use."""
        return self.generation_id != NO_GENERATION


class GroupMetadata(Protocol):
    """What ``Consumer.group_metadata()`` returns (Java ``ConsumerGroupMetadata``).

    The value is kafka-python's own ``kafka.structs.ConsumerGroupMetadata`` (a namedtuple with
    these fields, and ``state``), so that kafka-python's
    ``KafkaProducer.send_offsets_to_transaction(offsets, consumer.group_metadata())`` takes it as
    it is: the group coordinator fences a transactional offset commit of a member that is no
    longer in the generation (KIP-447; docs/exactly-once.md).

    Attributes:
        group_id: the consumer's group.
        generation_id: the generation the member holds, or under ``group_protocol="consumer"``
            its member epoch, as Java's ``AsyncKafkaConsumer`` puts it there; -1 before the
            member first joined. After the member lost its generation it stays the last one
            it held until it joins again, so that a commit from the old one is fenced.
        member_id: the member id ("" before the member first joined).
        group_instance_id: the static member's ``group_instance_id`` (KIP-345), else None.

    """

    @property
    def group_id(self) -> str:
        """The consumer's group."""
        ...

    @property
    def generation_id(self) -> int:
        """The generation, or member epoch, the member holds (-1 before it first joined)."""
        ...

    @property
    def member_id(self) -> str:
        """The member id ("" before the member first joined)."""
        ...

    @property
    def group_instance_id(self) -> str | None:
        """The static member's ``group_instance_id``, else None."""
        ...


if TYPE_CHECKING or sys.version_info >= (3, 11):  # a generic NamedTuple needs Python 3.11

    class ConsumerRecord(NamedTuple, Generic[K, V]):
        """One record handed to the application by ``Consumer.poll()``.

        Attributes:
            topic, partition, offset: where the record lives.
            key, value: as the consumer's deserializers made them (``K``/``V``), raw ``bytes``
                without one; None for a null key or value (a tombstone), which no
                deserializer sees.
            headers: tuple of ``(key: str, value: bytes | None)``.
            timestamp: record timestamp in ms since the epoch.
            timestamp_type: 0 = CreateTime, 1 = LogAppendTime.
            leader_epoch: the partition leader epoch of the record's batch, if known.

        The one exception to rule 1: a ``NamedTuple``, not ``attrs.frozen``. One is built per
        record on the consume hot path, and a tuple costs about a sixth of a frozen attrs
        instance to create (``benchmarks/results.md``). It is just as immutable; fields are read
        by name; ``_replace`` makes a changed copy.

        """

        topic: str
        partition: int
        offset: int
        key: K | None
        value: V | None
        headers: tuple[tuple[str, bytes | None], ...] = ()
        timestamp: int = -1
        timestamp_type: int = 0
        leader_epoch: int | None = None

        @property
        def topic_partition(self) -> TopicPartition:
            """The record's partition as a ``TopicPartition``."""
            return TopicPartition(self.topic, self.partition)

else:  # Python 3.10: the same tuple, subscriptable (ConsumerRecord[str, dict]) but not generic
    _FIELDS = [
        ("topic", str), ("partition", int), ("offset", int), ("key", Any), ("value", Any),
        ("headers", tuple), ("timestamp", int), ("timestamp_type", int), ("leader_epoch", Any),
    ]
    ConsumerRecord = NamedTuple("ConsumerRecord", _FIELDS)
    ConsumerRecord.__new__.__defaults__ = ((), -1, 0, None)
    ConsumerRecord.__doc__ = "One record handed to the application by ``Consumer.poll()``."
    ConsumerRecord.topic_partition = property(lambda self: TopicPartition(self.topic, self.partition))
    ConsumerRecord.__class_getitem__ = classmethod(lambda cls, item: cls)


class AcknowledgeType(enum.IntEnum):
    """How a share consumer acknowledges a record (KIP-932; Java's ``AcknowledgeType``).

    The values are Kafka's codes in ShareFetch and ShareAcknowledge.

    * ``ACCEPT``: processed; the record is not delivered again.
    * ``RELEASE``: not processed; the record goes back to be delivered again (to this or another
      member), its delivery count one higher, unless it reached the group's
      ``share.delivery.count.limit``.
    * ``REJECT``: unprocessable; the record is archived and never delivered again.
    * ``RENEW``: still being processed; the acquisition lock is renewed for another
      ``acquisition_lock_timeout_ms`` and the record still needs one of the three above (KIP-1222;
      Apache Kafka 4.4+, ShareAcknowledge v2).
    """

    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


if TYPE_CHECKING or sys.version_info >= (3, 11):

    class ShareConsumerRecord(NamedTuple, Generic[K, V]):
        """One record handed to the application by ``ShareConsumer.poll()`` (KIP-932).

        The fields of ``ConsumerRecord`` plus ``delivery_count``: how many times the share group
        has delivered it, this delivery included (1 the first time; Java's
        ``ConsumerRecord.deliveryCount()``). A ``NamedTuple`` for speed, as ``ConsumerRecord`` is.
        """

        topic: str
        partition: int
        offset: int
        key: K | None
        value: V | None
        headers: tuple[tuple[str, bytes | None], ...] = ()
        timestamp: int = -1
        timestamp_type: int = 0
        leader_epoch: int | None = None
        delivery_count: int = 1

        @property
        def topic_partition(self) -> TopicPartition:
            """The record's partition as a ``TopicPartition``."""
            return TopicPartition(self.topic, self.partition)

else:  # Python 3.10: the same tuple, subscriptable but not generic
    ShareConsumerRecord = NamedTuple("ShareConsumerRecord", [*_FIELDS, ("delivery_count", int)])
    ShareConsumerRecord.__new__.__defaults__ = ((), -1, 0, None, 1)
    ShareConsumerRecord.__doc__ = "One record handed to the application by ``ShareConsumer.poll()``."
    ShareConsumerRecord.topic_partition = property(lambda self: TopicPartition(self.topic, self.partition))
    ShareConsumerRecord.__class_getitem__ = classmethod(lambda cls, item: cls)


def tp_key(tp: TopicPartition) -> tuple[str, int]:
    """Sort key giving ``TopicPartition`` order (topic, then partition) without attrs' slower ``__lt__``."""
    return (tp.topic, tp.partition)


def partitions_by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    """Group partitions by topic: ``{topic: sorted partition numbers}``, topics sorted."""
    out: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        out.setdefault(tp.topic, []).append(tp.partition)
    return out
