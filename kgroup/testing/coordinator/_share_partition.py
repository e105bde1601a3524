"""A share partition (KIP-932): the in-flight records of one topic partition shared by a share group.

The broker side of acquisition and acknowledgement, as Apache Kafka 4.4's ``SharePartition`` (core
module, ``kafka.server.share``) does it, as a pure value machine: no timer of its own, time is the
``now_ms`` each call is given, and the model (:mod:`kgroup.testing.coordinator._share_group`)
arms one timer at :meth:`SharePartition.next_lock_deadline` and calls
:meth:`SharePartition.expire_locks` when it fires.

* **Offsets.** The share-partition start offset (SPSO, :attr:`SharePartition.start_offset`) is the
  first offset not yet in a terminal state (ACKNOWLEDGED or ARCHIVED); the end offset (SPEO,
  :attr:`SharePartition.end_offset`, exclusive here: the first offset never acquired). Records in
  ``[SPSO, SPEO)`` are in flight, each in a :class:`RecordState`. The SPSO moves only over terminal
  records; records before it leave the cache.
* **Acquisition** (``SharePartition.acquire``): AVAILABLE records in flight first, in offset order,
  then new records from the SPEO up to the log end, whole log batches at a time; a member's fetch
  acquires them (ACQUIRED, ``delivery_count + 1``, locked until ``now + record_lock_duration_ms``).
  No new records are acquired while the in-flight span reaches ``max_record_locks``
  (``group.share.partition.max.record.locks``). ``max_records`` is a soft limit (a batch that
  crosses it is taken whole) unless ``strict`` (ShareFetch v2's RECORD_LIMIT mode). Apache Kafka
  4.4 throttles redeliveries so that a poison record does not take its neighbours with it: a
  record delivered ``t = max(2, ceil(delivery_count_limit / 2))`` times or more starts a fetch of
  its own (a fetch that meets it after acquiring others stops before it) that takes at most
  ``max(1, batch records >> (delivery_count - t + 1))`` records (limit 5, a batch of 10: the 4th
  delivery takes 5); a record on its last attempt (``delivery_count + 1 == delivery_count_limit``)
  is delivered alone.
* **Lock expiry**: an ACQUIRED record whose lock ran out goes back to AVAILABLE, or to ARCHIVED if it
  was delivered ``delivery_count_limit`` times.
* **Acknowledgement** (``SharePartition.acknowledge``): only ACQUIRED records of the acknowledging
  member; ACCEPT -> ACKNOWLEDGED, RELEASE -> AVAILABLE (ARCHIVED at the delivery limit), REJECT and
  GAP -> ARCHIVED, RENEW -> the lock restarts. All or nothing per partition: an offending offset
  fails the partition's acknowledgements with INVALID_REQUEST or INVALID_RECORD_STATE (see
  :meth:`SharePartition.acknowledge`), nothing changed; offsets before the SPSO are skipped.
* **Dead-letter queue** (KIP-1191, Apache Kafka 4.4's group config ``errors.deadletterqueue.topic.name``):
  when a name is set, every record archived by the delivery limit or a REJECT is listed in
  :attr:`SharePartition.dead_lettered` (offset, reason); the model writes no topic.
"""

from __future__ import annotations

import bisect
import enum
import uuid
from collections.abc import Iterable, Sequence
from typing import Final

import attrs

from kgroup import _error_codes as codes
from kgroup.testing.coordinator._share_api import AcknowledgementBatch, AcknowledgeType, AcquiredRecords

__all__ = ["DEAD_LETTER_DELIVERY_LIMIT", "DEAD_LETTER_REJECTED", "InFlightRecord", "PartitionLog", "RecordState",
           "SharePartition"]

_INT64_MAX: Final = 2**63 - 1

DEAD_LETTER_DELIVERY_LIMIT: Final = "delivery count limit"
"""Why a record went to the dead-letter queue: its last delivery's lock expired or it was released."""
DEAD_LETTER_REJECTED: Final = "rejected"
"""Why a record went to the dead-letter queue: a member rejected it."""


class RecordState(enum.Enum):
    """Kafka ``RecordState`` of an in-flight record."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4

    @property
    def terminal(self) -> bool:
        """ACKNOWLEDGED and ARCHIVED records are never delivered again."""
        return self in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


@attrs.frozen
class InFlightRecord:
    """One in-flight record (Kafka ``InFlightState``): its state, deliveries, holder and lock deadline (ms)."""

    state: RecordState
    delivery_count: int
    member_id: str | None = None
    lock_deadline_ms: int | None = None


class PartitionLog:
    """A topic partition's log as a share partition sees it: record batches ``[base, last]`` and a log start.

    ``append(count)`` writes one batch of ``count`` records (a producer's batch); the high
    watermark is the end offset (every record is committed at once).
    """

    def __init__(self) -> None:
        self.log_start_offset = 0
        self._batches: list[tuple[int, int]] = []

    @property
    def end_offset(self) -> int:
        """The next offset to be written (the high watermark)."""
        return self._batches[-1][1] + 1 if self._batches else self.log_start_offset

    def append(self, count: int) -> int:
        """Write one batch of ``count`` records; returns its base offset.

        Raises:
            ValueError: ``count`` is below 1.

        """
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count!r}")
        base = self.end_offset
        self._batches.append((base, base + count - 1))
        return base

    def batch_of(self, offset: int) -> tuple[int, int]:
        """The batch ``(base, last)`` holding ``offset`` (an offset of the log).

        Raises:
            KeyError: ``offset`` is not in the log.

        """
        i = bisect.bisect_right(self._batches, (offset, _INT64_MAX)) - 1
        if i < 0 or not self._batches[i][0] <= offset <= self._batches[i][1]:
            raise KeyError(offset)
        return self._batches[i]


class SharePartition:
    """One share group's view of one topic partition (Kafka ``SharePartition``).

    Args:
        start_offset: the SPSO at initialization (``share.auto.offset.reset``: the log end for
            ``latest``, the log start for ``earliest``).
        delivery_count_limit: ``group.share.delivery.count.limit`` (2-10).
        record_lock_duration_ms: ``group.share.record.lock.duration.ms``.
        max_record_locks: ``group.share.partition.max.record.locks``.
        dead_letter_topic: the group's ``errors.deadletterqueue.topic.name`` (``""``: none).

    """

    def __init__(
        self,
        topic_id: uuid.UUID,
        partition: int,
        *,
        start_offset: int,
        delivery_count_limit: int,
        record_lock_duration_ms: int,
        max_record_locks: int,
        dead_letter_topic: str = "",
    ) -> None:
        self.topic_id = topic_id
        self.partition = partition
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.delivery_count_limit = delivery_count_limit
        self.record_lock_duration_ms = record_lock_duration_ms
        self.max_record_locks = max_record_locks
        self.dead_letter_topic = dead_letter_topic
        self.throttle_delivery_count = max(2, -(-delivery_count_limit // 2))
        """From this many deliveries on, a record's redelivery is throttled (Kafka ``throttleRecordsDeliveryLimit``)."""
        self.dead_lettered: list[tuple[int, str]] = []
        self._records: dict[int, InFlightRecord] = {}

    # ---- reading

    def record(self, offset: int) -> InFlightRecord | None:
        """The in-flight state of ``offset`` (``None``: before the SPSO or never acquired)."""
        return self._records.get(offset)

    def in_flight(self) -> dict[int, InFlightRecord]:
        """Offset -> state of every in-flight record, in offset order."""
        return dict(sorted(self._records.items()))

    def acquired_by(self, member_id: str) -> list[int]:
        """The offsets ``member_id`` holds locks on."""
        held = RecordState.ACQUIRED
        return sorted(o for o, r in self._records.items() if r.state is held and r.member_id == member_id)

    def next_lock_deadline(self) -> int | None:
        """The earliest acquisition lock deadline (ms), or ``None`` if nothing is acquired."""
        deadlines = [r.lock_deadline_ms for r in self._records.values() if r.lock_deadline_ms is not None]
        return min(deadlines) if deadlines else None

    # ---- acquisition

    def acquire(
        self, member_id: str, log: PartitionLog, now_ms: int, *, max_records: int, strict: bool
    ) -> list[AcquiredRecords]:
        """Acquire up to ``max_records`` records for ``member_id`` (``SharePartition.acquire``); the ranges acquired.

        Ranges are contiguous offsets of one log batch with one delivery count (the request's
        ``batch_size`` does not split them: Apache Kafka 4.4 answers a batch of 5 whole with ``batch_size`` 2).
        """
        if self.start_offset < log.log_start_offset:
            self._move_start_to(log.log_start_offset)
        taken: list[tuple[int, int]] = []  # (offset, delivery count)
        cap: int | None = None  # the throttled fetch's limit
        offset = self.start_offset
        while offset < log.end_offset:
            # a soft limit is checked between log batches only: the batch under way is taken whole
            continuing = bool(taken) and not strict and log.batch_of(taken[-1][0]) == log.batch_of(offset)
            if len(taken) >= max_records and not continuing:
                break
            if offset < self.end_offset:
                rec = self._records.get(offset)
                if rec is None or rec.state is not RecordState.AVAILABLE:
                    offset += 1
                    continue
                count = rec.delivery_count + 1
                if count >= self.delivery_count_limit:  # its last delivery attempt: delivered alone
                    if not taken:
                        taken.append((offset, count))
                    break
                if cap is None and rec.delivery_count >= self.throttle_delivery_count:
                    if taken:  # a throttled record starts a fetch of its own
                        break
                    base, last = log.batch_of(offset)
                    cap = max(1, (last - base + 1) >> (rec.delivery_count - self.throttle_delivery_count + 1))
                if cap is not None and len(taken) >= cap:
                    break
                taken.append((offset, count))
            else:
                if self.end_offset - self.start_offset >= self.max_record_locks and (strict or not continuing):
                    break
                taken.append((offset, 1))
                self.end_offset = offset + 1
            offset += 1
        deadline = now_ms + self.record_lock_duration_ms
        for o, count in taken:
            self._records[o] = InFlightRecord(RecordState.ACQUIRED, count, member_id, deadline)
        return self._ranges(taken, log)

    @staticmethod
    def _ranges(taken: Sequence[tuple[int, int]], log: PartitionLog) -> list[AcquiredRecords]:
        """Contiguous offsets of one log batch with one delivery count make one range (as Kafka's in-flight batches)."""
        out: list[AcquiredRecords] = []
        for o, count in sorted(taken):
            prev = out[-1] if out else None
            if (
                prev is not None
                and prev.last_offset + 1 == o
                and prev.delivery_count == count
                and log.batch_of(prev.first_offset) == log.batch_of(o)
            ):
                out[-1] = attrs.evolve(prev, last_offset=o)
            else:
                out.append(AcquiredRecords(o, o, count))
        return out

    # ---- lock expiry and release

    def expire_locks(self, now_ms: int) -> list[tuple[int, RecordState]]:
        """Release every record whose lock deadline is at or before ``now_ms``; the offsets and their new states."""
        due = [o for o, r in self._records.items() if r.lock_deadline_ms is not None and r.lock_deadline_ms <= now_ms]
        return self._release(due)

    def release_member(self, member_id: str) -> list[tuple[int, RecordState]]:
        """Release every record ``member_id`` holds (its share session closed, it left the group)."""
        return self._release(self.acquired_by(member_id))

    def _release(self, offsets: Iterable[int]) -> list[tuple[int, RecordState]]:
        changed = []
        for o in sorted(offsets):
            rec = self._records[o]
            state = self._released_state(o, rec)
            self._records[o] = InFlightRecord(state, rec.delivery_count)
            changed.append((o, state))
        self._advance_start()
        return changed

    def _released_state(self, offset: int, rec: InFlightRecord) -> RecordState:
        if rec.delivery_count >= self.delivery_count_limit:
            self._dead_letter(offset, DEAD_LETTER_DELIVERY_LIMIT)
            return RecordState.ARCHIVED
        return RecordState.AVAILABLE

    def _dead_letter(self, offset: int, why: str) -> None:
        if self.dead_letter_topic:
            self.dead_lettered.append((offset, why))

    # ---- acknowledgement

    def acknowledge(
        self, member_id: str, batches: Sequence[AcknowledgementBatch], now_ms: int, *, renew: bool
    ) -> int:
        """Apply ``member_id``'s acknowledgements of this partition (``SharePartition.acknowledge``); the error code.

        All or nothing. INVALID_REQUEST: batches out of order or overlapping, a batch with
        ``first_offset > last_offset``, neither one type nor one per offset, an unknown type, a
        RENEW without ``renew`` (a request without ``is_renew_ack``), or an offset at or past the
        SPEO (never acquired) while records are in flight. INVALID_RECORD_STATE: such an offset
        while nothing is in flight, or an offset in flight that is not ACQUIRED by ``member_id``. Offsets before the
        SPSO (already terminal) are skipped, as Apache Kafka 4.4 answers.
        """
        plan: list[tuple[int, AcknowledgeType]] = []
        previous_last = -1
        for batch in batches:
            error = _invalid_batch(batch, renew)
            if error or batch.first_offset <= previous_last:
                return error or codes.INVALID_REQUEST
            previous_last = batch.last_offset
        for batch in batches:
            offsets = range(batch.first_offset, batch.last_offset + 1)
            types = batch.acknowledge_types
            if len(types) == 1:
                types = types * len(offsets)
            for o, t in zip(offsets, types, strict=True):
                if o >= self.end_offset:
                    return codes.INVALID_REQUEST if self._records else codes.INVALID_RECORD_STATE
                rec = self._records.get(o)
                if rec is None and o < self.start_offset:
                    continue
                if rec is None or rec.state is not RecordState.ACQUIRED or rec.member_id != member_id:
                    return codes.INVALID_RECORD_STATE
                plan.append((o, AcknowledgeType(t)))
        for o, kind in plan:
            rec = self._records[o]
            if kind is AcknowledgeType.ACCEPT:
                self._records[o] = InFlightRecord(RecordState.ACKNOWLEDGED, rec.delivery_count)
            elif kind is AcknowledgeType.RELEASE:
                self._records[o] = InFlightRecord(self._released_state(o, rec), rec.delivery_count)
            elif kind is AcknowledgeType.RENEW:
                self._records[o] = attrs.evolve(rec, lock_deadline_ms=now_ms + self.record_lock_duration_ms)
            else:
                if kind is AcknowledgeType.REJECT:
                    self._dead_letter(o, DEAD_LETTER_REJECTED)
                self._records[o] = InFlightRecord(RecordState.ARCHIVED, rec.delivery_count)
        self._advance_start()
        return codes.NONE

    # ---- the start offset

    def _advance_start(self) -> None:
        """Move the SPSO over terminal records (Kafka ``maybeUpdateCachedStateAndOffsets``)."""
        while self.start_offset < self.end_offset:
            rec = self._records.get(self.start_offset)
            if rec is None or not rec.state.terminal:
                break
            del self._records[self.start_offset]
            self.start_offset += 1

    def _move_start_to(self, offset: int) -> None:
        """The log start moved past the SPSO (retention, deleteRecords): those records are gone."""
        for o in [o for o in self._records if o < offset]:
            del self._records[o]
        self.start_offset = offset
        self.end_offset = max(self.end_offset, offset)
        self._advance_start()


def _invalid_batch(batch: AcknowledgementBatch, renew: bool) -> int:
    """KafkaApis' checks of one acknowledgement batch: INVALID_REQUEST, or 0."""
    count = batch.last_offset - batch.first_offset + 1
    if count < 1 or len(batch.acknowledge_types) not in (1, count):
        return codes.INVALID_REQUEST
    for t in batch.acknowledge_types:
        if t not in AcknowledgeType.__members__.values() or (t == AcknowledgeType.RENEW and not renew):
            return codes.INVALID_REQUEST
    return codes.NONE
