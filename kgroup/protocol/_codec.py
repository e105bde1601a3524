"""Private big-endian Reader/Writer for Kafka's non-flexible (classic) wire primitives.

Rules:

1. ``Reader`` never lets ``IndexError`` or ``struct.error`` escape: a short buffer, a negative
   length where null is not allowed, or bad UTF-8 raises ``MalformedMetadata`` naming the field
   and the byte offset. These bytes come from peers, so they are untrusted.
2. An array count is checked against the bytes left before anything is allocated (Java's
   generated readers do the same: "Tried to allocate a collection of size N ...").
3. ``Writer`` raises ``ValueError`` for a value the wire cannot carry (a string over 32767
   bytes, an int out of range): that is a caller bug, not a peer's.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import TypeVar

from kgroup.errors import MalformedMetadata
from kgroup.types import TopicPartition

__all__ = ["Reader", "Writer"]

T = TypeVar("T")

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")

_INT16_MAX = 2**15 - 1
_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1


class Reader:
    """Reads Kafka primitives from a buffer; every failure is ``MalformedMetadata``.

    Args:
        data: the bytes to read (bytes, bytearray or memoryview).
        what: a name for the structure being decoded, used in error messages.

    """

    __slots__ = ("_buf", "_pos", "_what")

    def __init__(self, data: bytes | bytearray | memoryview, what: str) -> None:
        self._buf = memoryview(data).cast("B")
        self._pos = 0
        self._what = what

    @property
    def remaining(self) -> int:
        """Bytes not yet read."""
        return len(self._buf) - self._pos

    def _fail(self, field: str, problem: str) -> MalformedMetadata:
        return MalformedMetadata(
            f"malformed {self._what}: {field} at byte {self._pos}: {problem} "
            f"(buffer is {len(self._buf)} bytes)"
        )

    def _take(self, n: int, field: str) -> memoryview:
        if n > self.remaining:
            raise self._fail(field, f"needs {n} bytes, only {self.remaining} left")
        chunk = self._buf[self._pos : self._pos + n]
        self._pos += n
        return chunk

    def int16(self, field: str) -> int:
        """Read a big-endian int16."""
        value: int = _INT16.unpack(self._take(2, field))[0]
        return value

    def int32(self, field: str) -> int:
        """Read a big-endian int32."""
        value: int = _INT32.unpack(self._take(4, field))[0]
        return value

    def _utf8(self, n: int, field: str) -> str:
        raw = self._take(n, field)
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            raise self._fail(field, f"invalid UTF-8 ({exc.reason})") from None

    def string(self, field: str) -> str:
        """Read a non-nullable string (int16 length, UTF-8)."""
        n = self.int16(field)
        if n < 0:
            raise self._fail(field, f"non-nullable string has length {n}")
        return self._utf8(n, field)

    def _nullable_length(self, n: int, field: str, what: str) -> int | None:
        """A nullable length read: None for -1, another negative one is malformed."""
        if n == -1:
            return None
        if n < 0:
            raise self._fail(field, f"invalid {what} length {n}")
        return n

    def nullable_string(self, field: str) -> str | None:
        """Read a nullable string (int16 length, -1 = null)."""
        n = self._nullable_length(self.int16(field), field, "string")
        return None if n is None else self._utf8(n, field)

    def nullable_bytes(self, field: str) -> bytes | None:
        """Read nullable bytes (int32 length, -1 = null)."""
        n = self._nullable_length(self.int32(field), field, "bytes")
        return None if n is None else bytes(self._take(n, field))

    def array(self, field: str, min_item_size: int, item: Callable[[], T]) -> list[T]:
        """Read a non-nullable array (int32 count) whose items ``item()`` reads.

        ``min_item_size`` (bytes, >= 1) bounds the count by the bytes left, so a garbled count
        fails fast instead of allocating.
        """
        n = self.int32(field)
        if n < 0:
            raise self._fail(field, f"non-nullable array has count {n}")
        if n * min_item_size > self.remaining:
            raise self._fail(
                field, f"array of {n} items cannot fit in the {self.remaining} bytes left"
            )
        return [item() for _ in range(n)]

    def topic_partitions(self, field: str) -> tuple[TopicPartition, ...]:
        """Read an array of topics, each a name and an array of int32 partitions."""

        def entry() -> list[TopicPartition]:
            topic = self.string(f"{field}.topic")
            numbers = self.array(f"{field}.partitions", 4, lambda: self.int32(f"{field}.partition"))
            return [TopicPartition(topic, n) for n in numbers]

        # each entry is at least a 2-byte topic length and a 4-byte partition count
        entries = self.array(field, 6, entry)
        return tuple(tp for group in entries for tp in group)


class Writer:
    """Accumulates Kafka primitives; ``getvalue()`` returns the bytes."""

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def int16(self, value: int) -> None:
        """Write a big-endian int16 (ValueError when out of range)."""
        if not -(2**15) <= value <= _INT16_MAX:
            raise ValueError(f"{value} does not fit in an int16")
        self._parts.append(_INT16.pack(value))

    def int32(self, value: int) -> None:
        """Write a big-endian int32 (ValueError when out of range)."""
        if not _INT32_MIN <= value <= _INT32_MAX:
            raise ValueError(f"{value} does not fit in an int32")
        self._parts.append(_INT32.pack(value))

    def nullable_string(self, value: str | None) -> None:
        """Write a string (int16 length, UTF-8); None is written as length -1."""
        if value is None:
            self.int16(-1)
            return
        raw = value.encode("utf-8")
        if len(raw) > _INT16_MAX:
            raise ValueError(f"string of {len(raw)} UTF-8 bytes is longer than {_INT16_MAX}")
        self.int16(len(raw))
        self._parts.append(raw)

    def string(self, value: str) -> None:
        """Write a non-nullable string."""
        self.nullable_string(value)

    def nullable_bytes(self, value: bytes | None) -> None:
        """Write bytes (int32 length); None is written as length -1."""
        if value is None:
            self.int32(-1)
            return
        self.int32(len(value))
        self._parts.append(bytes(value))

    def topic_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        """Write partitions as an array of topics (sorted), each a name and its sorted, distinct partitions."""
        grouped: dict[str, list[int]] = {}
        for tp in sorted(set(partitions)):
            grouped.setdefault(tp.topic, []).append(tp.partition)
        self.int32(len(grouped))
        for topic, numbers in grouped.items():
            self.string(topic)
            self.int32(len(numbers))
            for number in numbers:
                self.int32(number)

    def getvalue(self) -> bytes:
        """Return the bytes written so far."""
        return b"".join(self._parts)
