"""Private codecs for the ``user_data`` of the "sticky" and "cooperative-sticky" assignors.

Both layouts are Apache Kafka's (Java ``StickyAssignor`` / ``CooperativeStickyAssignor``), written
with the classic non-flexible primitives (big-endian, no version header, no tagged fields)::

    StickyAssignorUserData v0 => previous_assignment:[topic:string partitions:[int32]]
    StickyAssignorUserData v1 => previous_assignment:[topic:string partitions:[int32]]
                                 generation:int32
    CooperativeStickyAssignorUserData v0 => generation:int32

Java always writes sticky v1 and, to read, tries v1 then v0 and ignores bytes it could not parse
(the member then counts as owning nothing, generation -1); trailing bytes are ignored.

kafka-python 3.x writes the sticky layout with an extra int16 version header in front
(``ApiData.encode(header=True)``), which Java cannot read. kgroup writes Java's bytes and reads
both: each candidate layout is first tried requiring the whole buffer to be consumed, so the
header form is recognised without mistaking it for Java's; then Java's lenient reads follow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import attrs

from kgroup.errors import MalformedMetadata
from kgroup.protocol._codec import Reader, Writer
from kgroup.types import NO_GENERATION, TopicPartition

__all__ = [
    "StickyUserData",
    "decode_cooperative_user_data",
    "decode_sticky_user_data",
    "encode_cooperative_user_data",
    "encode_sticky_user_data",
]


@attrs.frozen
class StickyUserData:
    """A decoded StickyAssignorUserData.

    Attributes:
        partitions: the member's previous assignment (tuple[TopicPartition, ...]), in wire order.
        generation: the generation of that assignment (v1), or None when the bytes carry none (v0,
            or no user data at all).

    """

    partitions: tuple[TopicPartition, ...]
    generation: int | None


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int | None) -> bytes:
    """Encode Java's StickyAssignorUserData: v1 with ``generation``, v0 when it is None.

    Topics are written sorted, each topic's partitions sorted and de-duplicated (Java writes
    them in ``HashMap`` order; the order carries no meaning).

    Raises:
        ValueError: a value the wire cannot carry (a topic name over 32767 UTF-8 bytes, a
            number outside int32).

    """
    w = Writer()
    w.topic_partitions(partitions)
    if generation is not None:
        w.int32(generation)
    return w.getvalue()


def _java(data: bytes, *, with_generation: bool, exact: bool) -> StickyUserData:
    r = Reader(data, "StickyAssignorUserData")
    partitions = r.topic_partitions("previous_assignment")
    generation = r.int32("generation") if with_generation else None
    if exact and r.remaining:
        raise MalformedMetadata(f"{r.remaining} trailing bytes")
    return StickyUserData(partitions, generation)


def _kafka_python(data: bytes) -> StickyUserData:
    r = Reader(data, "StickyAssignorUserData")
    version = r.int16("version")
    if version not in (0, 1):
        raise MalformedMetadata(f"version {version}")
    partitions = r.topic_partitions("previous_assignment")
    generation = r.int32("generation") if version == 1 else None
    if r.remaining:
        raise MalformedMetadata(f"{r.remaining} trailing bytes")
    return StickyUserData(partitions, generation)


def decode_sticky_user_data(data: bytes | None) -> StickyUserData:
    """Decode a StickyAssignorUserData the way Java's ``StickyAssignor.memberData`` does.

    Layouts tried, first success wins: Java v1 and v0 consuming every byte; kafka-python 3.x's
    header form consuming every byte; then Java's own lenient reads (v1, then v0, trailing bytes
    ignored).

    Returns:
        ``StickyUserData(partitions, generation)``. None or empty bytes give no partitions and
        generation None (Java: ``Optional.empty()``); bytes no layout can read give no partitions
        and generation -1 (Java ignores a previous assignment it cannot parse).

    """
    if not data:
        return StickyUserData((), None)
    attempts: tuple[Callable[[], StickyUserData], ...] = (
        lambda: _java(data, with_generation=True, exact=True),
        lambda: _java(data, with_generation=False, exact=True),
        lambda: _kafka_python(data),
        lambda: _java(data, with_generation=True, exact=False),
        lambda: _java(data, with_generation=False, exact=False),
    )
    for attempt in attempts:
        try:
            return attempt()
        except MalformedMetadata:
            continue
    return StickyUserData((), NO_GENERATION)


def encode_cooperative_user_data(generation: int) -> bytes:
    """Encode Java's CooperativeStickyAssignor user data: the generation as one int32."""
    w = Writer()
    w.int32(generation)
    return w.getvalue()


def decode_cooperative_user_data(data: bytes | None) -> int | None:
    """Decode Java's CooperativeStickyAssignor user data.

    Returns:
        The generation; None for no user data (None); -1 when fewer than 4 bytes (Java:
        unreadable user data means ``DEFAULT_GENERATION``). Trailing bytes are ignored.

    """
    if data is None:
        return None
    try:
        return Reader(data, "CooperativeStickyAssignorUserData").int32("generation")
    except MalformedMetadata:
        return NO_GENERATION
