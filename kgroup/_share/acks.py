"""Acknowledgements: the records a share consumer's ``poll()`` returned and what it said about them.

Rules (KIP-932; Java's ``ShareInFlightBatch``, ``Acknowledgements`` and
``KafkaShareConsumer``'s acknowledgement modes):

1. Every record ``poll()`` returns is *in flight* until acknowledged: ``ACCEPT``, ``RELEASE`` or
   ``REJECT`` end it; ``RENEW`` (KIP-1222) asks the broker for a longer lock and leaves it in
   flight. Acknowledging a record that is not in flight (not returned by the last ``poll()``,
   or already acknowledged) raises ``IllegalStateError``.
2. ``implicit`` mode: ``acknowledge()`` is refused (``IllegalStateError``); what ``poll()``
   returned is accepted when the next ``poll()``, ``commit_sync()``, ``commit_async()`` or
   ``close()`` takes the acknowledgements.
3. ``explicit`` mode: the next ``poll()`` raises ``IllegalStateError`` while a record it returned
   is in flight; commits send what was acknowledged so far.
4. Offsets the member acquired without a record to hand out (compacted away, transaction
   markers) are acknowledged as gaps (type 0), and records that failed to decode or deserialize
   are released or rejected, without the application (``add``).
5. A partition's acknowledgements go out as batches of consecutive offsets, each with one type
   when all its offsets share it, else one per offset (``batches``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kgroup.errors import IllegalStateError
from kgroup.protocol.share_fetch import AcknowledgementBatch
from kgroup.types import AcknowledgeType, TopicPartition

__all__ = ["EXPLICIT", "GAP", "IMPLICIT", "InFlight", "batches", "merge"]

#: the acknowledgement type of an acquired offset without a record (Kafka's code 0)
GAP = 0
IMPLICIT = "implicit"
EXPLICIT = "explicit"

#: one partition's acknowledgements: offset -> Kafka's type code
Acks = dict[int, int]
#: a partition as ``InFlight`` keys it: ``(topic, partition)``, a record's first two fields
_Key = tuple[str, int]
_ACCEPT = int(AcknowledgeType.ACCEPT)
_RENEW = int(AcknowledgeType.RENEW)


def batches(acks: Mapping[int, int]) -> tuple[AcknowledgementBatch, ...]:
    """The acknowledgement batches of one partition's ``offset -> type``: consecutive offsets together.

    A batch whose offsets all have one type carries it once; else one type per offset (Java's
    ``Acknowledgements.getAcknowledgementBatches`` and ``maybeOptimiseAcknowledgementTypes``).
    """
    out: list[AcknowledgementBatch] = []
    first = last = -2
    types: list[int] = []

    def close() -> None:
        if types:
            kinds = (types[0],) if len(set(types)) == 1 else tuple(types)
            out.append(AcknowledgementBatch(first, last, kinds))

    for offset in sorted(acks):
        if offset == last + 1:
            last = offset
            types.append(acks[offset])
            continue
        close()
        first = last = offset
        types = [acks[offset]]
    close()
    return tuple(out)


def merge(into: dict[TopicPartition, Acks], more: Mapping[TopicPartition, Mapping[int, int]]) -> None:
    """Add ``more`` to ``into`` (a later type for an offset wins)."""
    for tp, acks in more.items():
        if acks:
            into.setdefault(tp, {}).update(acks)


class InFlight:
    """The records of the last ``poll()`` and their acknowledgements (the poll thread's only).

    Its books are keyed by ``(topic, partition)`` tuples, the form a record's first two fields
    already have (``record[:2]``): ``acknowledge_record`` looks a record up without building a
    ``TopicPartition`` (which hashes and compares as that tuple). What it hands out
    (``take``, ``take_renewals``) is keyed by ``TopicPartition``.

    Args:
        mode: ``"implicit"`` or ``"explicit"`` (``share_acknowledgement_mode``).

    """

    def __init__(self, mode: str) -> None:
        if mode not in (IMPLICIT, EXPLICIT):
            raise ValueError(f"mode must be {IMPLICIT!r} or {EXPLICIT!r}, got {mode!r}")
        self.mode = mode
        self._explicit = mode == EXPLICIT
        #: offsets returned by poll() and not finally acknowledged, by partition
        self._waiting: dict[_Key, set[int]] = {}
        #: acknowledgements not yet taken for a request
        self._acks: dict[_Key, Acks] = {}
        #: lock renewals not yet taken (KIP-1222)
        self._renew: dict[_Key, set[int]] = {}

    def delivered(self, records: Iterable[tuple[TopicPartition, int]]) -> None:
        """``poll()`` returned these (partition, offset) pairs."""
        for tp, offset in records:
            self._waiting.setdefault((tp.topic, tp.partition), set()).add(offset)

    def deliver(self, tp: TopicPartition, offsets: Iterable[int]) -> None:
        """``poll()`` returned these offsets of ``tp`` (``delivered``, one partition at once)."""
        self._waiting.setdefault((tp.topic, tp.partition), set()).update(offsets)

    def add(self, tp: TopicPartition, acks: Mapping[int, int]) -> None:
        """Acknowledgements made without the application (gaps, undecodable records: rule 4)."""
        if acks:
            self._acks.setdefault((tp.topic, tp.partition), {}).update(acks)

    def acknowledge(self, tp: TopicPartition, offset: int, kind: AcknowledgeType) -> None:
        """The application acknowledges one record (explicit mode).

        Raises:
            IllegalStateError: implicit mode, or the record is not in flight (rule 1).

        """
        self.acknowledge_record((tp.topic, tp.partition), offset, int(AcknowledgeType(kind)))

    def acknowledge_record(self, key: tuple[str, int], offset: int, code: int) -> None:
        """``acknowledge`` by the record's ``(topic, partition)`` and Kafka's type code (``ShareConsumer``'s path).

        Raises:
            IllegalStateError: implicit mode, or the record is not in flight (rule 1).

        """
        if not self._explicit:
            raise IllegalStateError(
                "acknowledge() needs share_acknowledgement_mode='explicit': in implicit mode the records "
                "poll() returned are accepted by the next poll(), commit or close()"
            )
        waiting = self._waiting.get(key)
        if waiting is None or offset not in waiting:
            raise IllegalStateError(
                f"the record {key[0]}-{key[1]}@{offset} cannot be acknowledged: the last poll() did not "
                "return it, or it was acknowledged already"
            )
        if code == _RENEW:
            self._renew.setdefault(key, set()).add(offset)
            return
        waiting.remove(offset)
        if not waiting:
            del self._waiting[key]
        if self._renew:
            renew = self._renew.get(key)
            if renew is not None:
                renew.discard(offset)
        acks = self._acks.get(key)
        if acks is None:
            self._acks[key] = {offset: code}
        else:
            acks[offset] = code

    def give_back(self, acks: Mapping[TopicPartition, Mapping[int, int]]) -> None:
        """Acknowledge records ``poll()`` returned that the application never got (in either mode).

        ``kgroup.aio.ShareConsumer`` releases the records it still buffers before a commit or a
        close, which would otherwise accept them (implicit mode) or leave them in flight.
        """
        for tp, tp_acks in acks.items():
            key = (tp.topic, tp.partition)
            waiting = self._waiting.get(key)
            if waiting is not None:
                waiting.difference_update(tp_acks)
                if not waiting:
                    del self._waiting[key]
            renew = self._renew.get(key)
            if renew is not None:
                renew.difference_update(tp_acks)
            if tp_acks:
                self._acks.setdefault(key, {}).update(tp_acks)

    def unacknowledged(self) -> int:
        """How many records the last ``poll()`` returned are still in flight."""
        return sum(len(offsets) for offsets in self._waiting.values())

    def check_all_acknowledged(self) -> None:
        """Explicit mode, before the next ``poll()`` (rule 3).

        Raises:
            IllegalStateError: a record the last ``poll()`` returned is not acknowledged.

        """
        if self._explicit and self._waiting:
            count = self.unacknowledged()
            raise IllegalStateError(
                f"all records must be acknowledged in explicit acknowledgement mode: {count} record(s) the last "
                "poll() returned are not (acknowledge each with ACCEPT, RELEASE or REJECT first)"
            )

    def take(self) -> dict[TopicPartition, Acks]:
        """The acknowledgements to send now; implicit mode accepts everything still in flight (rule 2)."""
        if not self._explicit:
            for key, offsets in self._waiting.items():
                acks = self._acks.setdefault(key, {})
                for offset in offsets:
                    acks.setdefault(offset, _ACCEPT)
            self._waiting.clear()
        taken, self._acks = self._acks, {}
        return {TopicPartition(*key): acks for key, acks in taken.items()}

    def take_renewals(self) -> dict[TopicPartition, Acks]:
        """The lock renewals to send now (``RENEW`` per offset still in flight)."""
        renew, self._renew = self._renew, {}
        out: dict[TopicPartition, Acks] = {}
        for key, offsets in renew.items():
            waiting = self._waiting.get(key, ())
            acks = {o: _RENEW for o in offsets if o in waiting}
            if acks:
                out[TopicPartition(*key)] = acks
        return out

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        """Partitions whose records can no longer be acknowledged (their session ended): drop them."""
        for tp in partitions:
            key = (tp.topic, tp.partition)
            self._waiting.pop(key, None)
            self._renew.pop(key, None)
