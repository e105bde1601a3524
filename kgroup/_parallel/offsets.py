"""One partition's offsets under parallel processing, and the commit metadata that carries them.

The committed offset of a partition is the first record handed to the processor and not yet
completed (so a commit never runs ahead of unfinished work). Records completed *above* it are
written in the commit's metadata string, so that a new owner of the partition skips them
instead of processing them again.

The metadata encoding, version 1 (``docs/parallel.md``, "The commit metadata"):

``kgp1:<base>:<kind><payload>``

* ``base``: the committed offset the metadata belongs to, in decimal. A reader whose committed
  offset differs (an offset reset, another client's commit) ignores the metadata.
* ``kind``: ``r`` (run lengths) or ``b`` (bit set), whichever is shorter.
* ``payload``: URL-safe base64 without padding of

  - ``r``: the lengths of alternating runs of not-completed and completed offsets starting at
    ``base`` (so the first run, the incomplete ``base`` itself, is at least 1), each an unsigned
    LEB128 varint, ending with a run of completed ones;
  - ``b``: a bit per offset ``base + 1``, ``base + 2``, ... (least significant bit first in
    each byte), 1 for completed.

An empty string means nothing above ``base`` is completed. When the encoding would be longer
than the limit (Kafka's ``offset.metadata.max.bytes``, 4096 by default), the highest
completions are left out until it fits: the metadata then claims fewer completed records
(those left out are processed again after a handover), never a record that is not completed.
"""

from __future__ import annotations

import base64
import binascii
from collections import deque
from collections.abc import Iterable, Sequence

__all__ = [
    "DEFAULT_MAX_METADATA_CHARS",
    "PartitionOffsets",
    "decode_completed",
    "encode_completed",
]

#: Kafka's default ``offset.metadata.max.bytes`` (the broker refuses longer metadata with
#: OFFSET_METADATA_TOO_LARGE)
DEFAULT_MAX_METADATA_CHARS = 4096

_PREFIX = "kgp1:"


def _varint(value: int, out: bytearray) -> None:
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return


def _read_varints(data: bytes) -> list[int]:
    values: list[int] = []
    value = shift = 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
            if shift > 63:
                raise ValueError("varint too long")
        else:
            values.append(value)
            value = shift = 0
    if shift:
        raise ValueError("truncated varint")
    return values


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _run_lengths(relative: Sequence[int]) -> bytes:
    """Alternating incomplete/complete run lengths over ``0..max(relative)`` (0 is incomplete)."""
    out = bytearray()
    position = 0  # the next relative offset not yet described
    i = 0
    while i < len(relative):
        start = relative[i]
        end = start
        while i + 1 < len(relative) and relative[i + 1] == end + 1:
            i += 1
            end += 1
        _varint(start - position, out)  # incomplete run, >= 1
        _varint(end - start + 1, out)  # completed run, >= 1
        position = end + 1
        i += 1
    return bytes(out)


def _bit_set(relative: Sequence[int]) -> bytes:
    out = bytearray((relative[-1] - 1) // 8 + 1)
    for r in relative:
        out[(r - 1) >> 3] |= 1 << ((r - 1) & 7)
    return bytes(out)


def _encode_all(base: int, relative: Sequence[int]) -> str:
    runs = _b64(_run_lengths(relative))
    bits = _b64(_bit_set(relative))
    body = "r" + runs if len(runs) <= len(bits) else "b" + bits
    return f"{_PREFIX}{base}:{body}"


def encode_completed(base: int, completed: Iterable[int], max_chars: int = DEFAULT_MAX_METADATA_CHARS) -> str:
    """The metadata string for committed offset ``base`` with ``completed`` offsets above it done.

    Args:
        base: the committed offset (the first record not completed), >= 0.
        completed: offsets completed above ``base`` (each > ``base``), any order.
        max_chars: the longest string to return; the highest completions are left out to fit
            (all of them, "" , when even one does not fit).

    Raises:
        ValueError: a completed offset not above ``base``.

    """
    return _encode_fitting(base, completed, max_chars)[0]


def _encode_fitting(base: int, completed: Iterable[int], max_chars: int) -> tuple[str, bool]:
    """``encode_completed``, and whether completions were left out to fit."""
    relative = sorted({offset - base for offset in completed})
    if not relative:
        return "", False
    if relative[0] < 1:
        raise ValueError(f"completed offset {relative[0] + base} is not above the committed offset {base}")
    text = _encode_all(base, relative)
    if len(text) <= max_chars:
        return text, False
    # the longest prefix that fits (the length grows with the prefix: bisect)
    low, high = 0, len(relative) - 1  # prefix length low fits (0: ""), high does not... yet
    while low < high:
        middle = (low + high + 1) // 2
        if len(_encode_all(base, relative[:middle])) <= max_chars:
            low = middle
        else:
            high = middle - 1
    return (_encode_all(base, relative[:low]) if low else ""), True


def decode_completed(metadata: str, base: int) -> frozenset[int]:
    """The offsets ``metadata`` says were completed above committed offset ``base``.

    Anything else (empty, another client's metadata, another base, a malformed string)
    decodes to the empty set: the records are processed again, never skipped wrongly.
    """
    if not metadata.startswith(_PREFIX):
        return frozenset()
    try:
        base_text, body = metadata[len(_PREFIX):].split(":", 1)
        if int(base_text) != base or not body:
            return frozenset()
        kind, data = body[0], _unb64(body[1:])
        if kind == "r":
            runs = _read_varints(data)
            if len(runs) % 2 or any(run < 1 for run in runs):
                return frozenset()
            out: set[int] = set()
            position = base
            for incomplete, complete in zip(runs[::2], runs[1::2], strict=True):
                position += incomplete
                out.update(range(position, position + complete))
                position += complete
            return frozenset(out)
        if kind == "b":
            return frozenset(
                base + 1 + (i << 3) + bit for i, byte in enumerate(data) for bit in range(8) if byte >> bit & 1
            )
    except (ValueError, binascii.Error):
        return frozenset()
    return frozenset()


class PartitionOffsets:
    """One partition's records taken for processing, which completed, and what to commit.

    Records are taken in offset order (as ``poll()`` hands them out; offsets may skip: compacted
    topics, transaction markers). ``commit_offset()`` is the first taken record not completed,
    or the offset after the last taken record; ``completed_above()`` the completions above it,
    including those a previous owner's metadata reported and not fetched again yet.

    Args:
        committed: the committed offset this owner starts from (None: nothing committed).
        inherited: offsets above ``committed`` the previous owner completed (its metadata):
            taking one of them reports it as done at once (``take()`` returns False).

    """

    def __init__(self, committed: int | None = None, inherited: Iterable[int] = ()) -> None:
        #: taken offsets from the first not completed on, in order
        self._order: deque[int] = deque()
        #: completed offsets among ``_order``
        self._done: set[int] = set()
        #: the offset after the last taken record (the committed offset before the first)
        self._next: int | None = committed
        #: the previous owner's completions not taken yet, ascending
        self._inherited: deque[int] = deque(sorted(o for o in inherited if committed is None or o > committed))
        #: the last ``commit_point()`` left completions out of the metadata to fit
        self.truncated = False

    def take(self, offset: int) -> bool:
        """Record ``offset`` as handed to the processor; False when it was completed already (skip it).

        Raises:
            ValueError: ``offset`` is not above the last taken one.

        """
        if self._next is not None and offset < self._next:
            raise ValueError(f"offset {offset} taken out of order (expected {self._next} or above)")
        self._next = offset + 1
        inherited = self._inherited
        while inherited and inherited[0] < offset:
            inherited.popleft()  # never fetched: no such record (compaction, markers)
        if inherited and inherited[0] == offset:
            inherited.popleft()
            if self._order:
                self._order.append(offset)
                self._done.add(offset)
            return False
        self._order.append(offset)
        return True

    def complete(self, offset: int) -> None:
        """Record a taken offset as completed (its handler returned, or it was dead-lettered)."""
        order = self._order
        if not order or offset < order[0] or offset in self._done:
            return  # completed already (or never taken): nothing changes
        self._done.add(offset)
        while order and order[0] in self._done:
            self._done.discard(order.popleft())

    def commit_offset(self) -> int | None:
        """The offset to commit: the first record not completed (None before anything).

        That is the first taken record not completed or, when every taken one is, the offset
        after the last, past the previous owner's completions that follow it at once.
        """
        if self._order:
            return self._order[0]
        offset = self._next
        if offset is not None:
            for inherited in self._inherited:
                if inherited != offset:
                    break
                offset += 1
        return offset

    def completed_above(self) -> list[int]:
        """Completed offsets above ``commit_offset()``, ascending."""
        if self._order:
            return sorted(self._done) + list(self._inherited)
        offset = self.commit_offset()
        return [o for o in self._inherited if offset is None or o > offset]

    def pending(self) -> int:
        """How many taken records are not completed."""
        return len(self._order) - len(self._done)

    def commit_point(self, max_chars: int = DEFAULT_MAX_METADATA_CHARS) -> tuple[int, str] | None:
        """``(offset, metadata)`` to commit now, None before the first record and without a committed offset."""
        offset = self.commit_offset()
        if offset is None:
            return None
        metadata, self.truncated = _encode_fitting(offset, self.completed_above(), max_chars)
        return offset, metadata
