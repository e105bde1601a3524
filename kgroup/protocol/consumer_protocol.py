"""Kafka's ConsumerProtocol codec: Subscription and Assignment bytes of the classic protocol.

These are the bytes a consumer puts in JoinGroup ``protocols[].metadata`` (a ``Subscription``)
and the leader puts in SyncGroup ``assignments[].assignment`` (an ``Assignment``). The broker
never looks inside them; every client in a group must agree on them, so this codec follows
Apache Kafka's Java ``ConsumerProtocol`` (schemas ``ConsumerProtocolSubscription.json`` and
``ConsumerProtocolAssignment.json``, versions 0-3, not flexible). kgroup owns this codec
rather than importing kafka-python's generated classes, which are not public API
(docs/protocol.md); ``tests/compat`` checks it against them.

Wire format (big-endian)::

    Subscription => version:int16 topics:[string] user_data:nullable_bytes
                    owned_partitions:[topic:string partitions:[int32]]   (v1+, KIP-429)
                    generation_id:int32                                  (v2+, KIP-792)
                    rack_id:nullable_string                              (v3+, KIP-881)
    Assignment   => version:int16 assigned_partitions:[topic:string partitions:[int32]]
                    user_data:nullable_bytes                             (same layout v0-v3)

``string`` is an int16 length then UTF-8, ``bytes`` an int32 length; length -1 is null.
``user_data`` is the assignor's own payload (KIP-54: the sticky assignor's previous
assignment rides there).

Rules:

1. **Deterministic encoding.** Topics are written sorted and de-duplicated; partitions are
   grouped by topic, topics sorted, partition numbers sorted and de-duplicated. Equal values
   give equal bytes.
2. **Forward compatibility** (Java ``ConsumerProtocol.checkSubscriptionVersion`` /
   ``checkAssignmentVersion``): a version above 3 is parsed with the v3 layout and bytes after
   the v3 fields are ignored, so a newer client's additions are skipped. Trailing bytes are
   ignored at every version. The decoded value's ``version`` is the layout used (at most 3).
3. **Untrusted input.** A negative version, a truncated buffer, a null where the schema does
   not allow one, a garbled length or bad UTF-8 raises ``kgroup.errors.MalformedMetadata`` with
   the field and byte offset; never ``IndexError`` or ``struct.error``.
4. **Empty assignment.** Zero bytes decode to an empty ``Assignment``: the coordinator hands
   a member zero bytes when the leader's SyncGroup gave it no entry. This is the codec's
   answer only; Java's ``ConsumerCoordinator.onJoinComplete`` refuses an assignment shorter
   than 2 bytes (``IllegalStateException``, "the leader's assign function is buggy"), so the
   membership layer decides what an empty assignment means (``Assignment.version`` is 3 and
   ``partitions`` empty; test ``len(data) == 0`` to tell it apart).
   Zero bytes are not a valid ``Subscription``: ``MalformedMetadata``.
5. **Encoding at an older version** silently drops fields that version cannot carry
   (owned partitions below v1, generation below v2, rack below v3), as Java does for these
   "ignorable" fields. A requested version above 3 is written as 3 (Java clamps too); a
   negative one raises ``ValueError``.
"""

from __future__ import annotations

import attrs

from kgroup.errors import MalformedMetadata
from kgroup.protocol._codec import Reader, Writer
from kgroup.types import NO_GENERATION, TopicPartition

__all__ = [
    "LATEST_VERSION",
    "Assignment",
    "Subscription",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]

#: Highest ConsumerProtocol version kgroup reads and writes (Subscription and Assignment).
LATEST_VERSION = 3


@attrs.frozen(kw_only=True)
class Subscription:
    """A member's JoinGroup protocol metadata (Java ``ConsumerPartitionAssignor.Subscription``).

    Attributes:
        topics: subscribed topic names (tuple[str, ...]); written sorted.
        user_data: assignor-specific bytes (KIP-54), or None.
        owned_partitions: partitions the member owns (tuple[TopicPartition, ...]); v1+ (KIP-429).
        generation_id: generation ``owned_partitions`` comes from, -1 if none; v2+ (KIP-792).
        rack_id: the member's ``client.rack``, or None; v3+ (KIP-881).
        version: the version it was decoded from (at most 3), or the default version it is
            encoded at by ``encode_subscription``.

    """

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = NO_GENERATION
    rack_id: str | None = None
    version: int = LATEST_VERSION


@attrs.frozen(kw_only=True)
class Assignment:
    """A member's SyncGroup assignment (Java ``ConsumerPartitionAssignor.Assignment``).

    Attributes:
        partitions: the assigned partitions (tuple[TopicPartition, ...]); written grouped by topic.
        user_data: assignor-specific bytes (KIP-54), or None.
        version: the version it was decoded from (at most 3), or the default version it is
            encoded at by ``encode_assignment``. Versions 0-3 share one layout.

    """

    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None = None
    version: int = LATEST_VERSION


def _write_version(w: Writer, version: int, what: str) -> int:
    if version < 0:
        raise ValueError(f"unsupported {what} version {version}: must be >= 0")
    version = min(version, LATEST_VERSION)
    w.int16(version)
    return version


def _read_version(r: Reader, what: str) -> int:
    version = r.int16("version")
    if version < 0:
        raise MalformedMetadata(f"malformed {what}: unsupported version {version}")
    return min(version, LATEST_VERSION)


def encode_subscription(s: Subscription, version: int | None = None) -> bytes:
    """Encode a Subscription as JoinGroup protocol metadata.

    Source: Java ``ConsumerProtocol.serializeSubscription``; KIP-429 (v1), KIP-792 (v2),
    KIP-881 (v3).

    Args:
        s: the subscription.
        version: wire version to write; defaults to ``s.version`` (3 unless ``s`` was decoded
            from an older buffer). Above 3 writes 3; fields the version cannot carry are
            dropped (see the module rules).

    Returns:
        The encoded bytes (deterministic: topics and partitions sorted).

    Raises:
        ValueError: a negative version, or a value the wire cannot carry (a name longer than
            32767 UTF-8 bytes, a number outside int32).

    """
    w = Writer()
    v = _write_version(w, s.version if version is None else version, "subscription")
    topics = sorted(set(s.topics))
    w.int32(len(topics))
    for topic in topics:
        w.string(topic)
    w.nullable_bytes(s.user_data)
    if v >= 1:
        w.topic_partitions(s.owned_partitions)
    if v >= 2:
        w.int32(s.generation_id)
    if v >= 3:
        w.nullable_string(s.rack_id)
    return w.getvalue()


def decode_subscription(data: bytes | bytearray | memoryview) -> Subscription:
    """Decode JoinGroup protocol metadata into a Subscription.

    Source: Java ``ConsumerProtocol.deserializeSubscription``.

    Args:
        data: the bytes a member sent.

    Returns:
        The Subscription; fields absent at the decoded version take their defaults
        (no owned partitions, generation -1, rack None). ``version`` is the layout used:
        a version above 3 is parsed as 3 and the rest ignored.

    Raises:
        MalformedMetadata: empty, truncated or garbled bytes, or a negative version.

    """
    r = Reader(data, "consumer protocol subscription")
    version = _read_version(r, "consumer protocol subscription")
    topics = tuple(r.array("topics", 2, lambda: r.string("topics[]")))
    user_data = r.nullable_bytes("user_data")
    owned: tuple[TopicPartition, ...] = ()
    generation_id = NO_GENERATION
    rack_id: str | None = None
    if version >= 1:
        owned = r.topic_partitions("owned_partitions")
    if version >= 2:
        generation_id = r.int32("generation_id")
    if version >= 3:
        rack_id = r.nullable_string("rack_id")
    return Subscription(
        topics=topics,
        user_data=user_data,
        owned_partitions=owned,
        generation_id=generation_id,
        rack_id=rack_id,
        version=version,
    )


def encode_assignment(a: Assignment, version: int | None = None) -> bytes:
    """Encode an Assignment as a SyncGroup member assignment.

    Source: Java ``ConsumerProtocol.serializeAssignment``.

    Args:
        a: the assignment.
        version: wire version to write (0-3 share one layout); defaults to ``a.version``;
            above 3 writes 3.

    Returns:
        The encoded bytes (partitions grouped by topic, topics and partitions sorted).

    Raises:
        ValueError: a negative version, or a value the wire cannot carry.

    """
    w = Writer()
    _write_version(w, a.version if version is None else version, "assignment")
    w.topic_partitions(a.partitions)
    w.nullable_bytes(a.user_data)
    return w.getvalue()


def decode_assignment(data: bytes | bytearray | memoryview) -> Assignment:
    """Decode a SyncGroup member assignment.

    Source: Java ``ConsumerProtocol.deserializeAssignment``; the empty-bytes rule is kgroup's
    (module rule 4).

    Args:
        data: the bytes the leader assigned (via the coordinator).

    Returns:
        The Assignment; zero bytes give an empty Assignment (no partitions, no user data).
        A version above 3 is parsed as 3 and trailing bytes are ignored.

    Raises:
        MalformedMetadata: truncated or garbled bytes, or a negative version.

    """
    if len(data) == 0:
        return Assignment(partitions=())
    r = Reader(data, "consumer protocol assignment")
    version = _read_version(r, "consumer protocol assignment")
    partitions = r.topic_partitions("assigned_partitions")
    user_data = r.nullable_bytes("user_data")
    return Assignment(partitions=partitions, user_data=user_data, version=version)
