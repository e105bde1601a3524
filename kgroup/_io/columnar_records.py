"""The columnar decoder's responses, handed out like the record decoder's (``fetch_columns``).

:class:`ColumnarRecords` is one partition's response decoded by :mod:`kgroup._io.columnar`
(numpy and Arrow columns, no Python object per record), stepped through batch by batch exactly
as :class:`kgroup._io.record_decoder.PartitionRecords` steps through the record batches, so the
fetch pipeline (:mod:`kgroup._io.fetch_pipeline`) hands both out by the same rules; its ``take``
returns a :class:`ColumnSlice` of rows instead of a list of records.
"""

from __future__ import annotations

import sys
from typing import Any

from kgroup._io import quiet_kafka  # noqa: F401  (first: kafka-python, without its import-time warning)

# isort: split
from kafka.structs import TopicPartition as KTopicPartition

from kgroup._io.record_decoder import take_by_batch
from kgroup.columns import RecordColumns
from kgroup.types import ConsumerRecord, TopicPartition

__all__ = ["ColumnSlice", "ColumnarRecords", "exhausted", "load_columnar_decoder"]


class ColumnSlice:
    """What ``ColumnarRecords.take`` hands out: rows ``[start, stop)`` of its decoded set."""

    __slots__ = ("decoded", "start", "stop")

    def __init__(self, decoded: Any, start: int, stop: int) -> None:
        self.decoded = decoded
        self.start = start
        self.stop = stop

    def __len__(self) -> int:
        return self.stop - self.start

    def records(self, tp: KTopicPartition) -> list[ConsumerRecord]:
        """The rows as ``ConsumerRecord`` s (``fetch()`` meeting a response decoded for ``fetch_columns``)."""
        columns = RecordColumns.of_decoded(TopicPartition(tp.topic, tp.partition), self.decoded, self.start,
                                           self.stop)
        epochs: list[int | None] = []
        for batch in self.decoded.batches:
            epochs += [batch.leader_epoch if batch.leader_epoch >= 0 else None] * batch.rows
        return [ConsumerRecord(tp.topic, tp.partition, offset, key, value, headers, timestamp, ts_type, epoch)
                for offset, key, value, headers, timestamp, ts_type, epoch in zip(
                    columns.offsets, columns.keys, columns.values, columns.headers, columns.timestamps,
                    columns.timestamp_types, epochs[self.start:self.stop], strict=True)]


class ColumnarRecords:
    """One partition's response decoded by the columnar decoder, handed out like ``PartitionRecords``.

    The same contract and state as ``PartitionRecords`` (``take(n)``,
    ``next_fetch_offset`` after each take, ``leader_epoch`` of the last batch reached,
    ``drain()`` at the end, errors in line), stepping through the decoded batches exactly as it
    steps through the record batches: a take stops as soon as it has ``n`` records, without
    looking at the next batch; a control batch moves ``next_fetch_offset`` to its end when it is
    reached; after the last batch ``next_fetch_offset`` is that batch's end (Java
    ``RecordBatch.nextOffset``); a batch that failed to decode raises on every later ``take``.
    ``take`` returns a :class:`ColumnSlice` of the rows instead of a list of records.
    """

    def __init__(self, decoded: Any, fetch_offset: int, tp: KTopicPartition, size_in_bytes: int,
                 on_drain: Any) -> None:
        self.decoded = decoded
        self.topic_partition = tp
        self.fetch_offset = fetch_offset
        self.next_fetch_offset = fetch_offset
        self.leader_epoch = -1
        self.records_read = 0
        self.bytes_read = 0
        self.size_in_bytes = size_in_bytes
        self.on_drain = on_drain
        self._next_inline_exception: Exception | None = None
        self._failure: Exception | None = None
        self._drained = False
        self._row = 0  # the next row to hand out
        self._batch_end = 0  # rows of the batches reached so far
        self._batch = 0  # the next batch to reach
        self._reached_any = False

    def __bool__(self) -> bool:
        return not self._drained

    def drain(self) -> None:
        if not self._drained:
            self._drained = True
            self._next_inline_exception = None
            self.on_drain(self)

    def exhausted(self) -> bool:
        """Every row handed out, no error pending and no batch left to reach."""
        return (self._row >= self._batch_end and self._next_inline_exception is None
                and self._batch >= len(self.decoded.batches) and self.decoded.error is None)

    def take(self, n: int | None = None) -> ColumnSlice:
        if self._next_inline_exception is not None:
            exc, self._next_inline_exception = self._next_inline_exception, None
            raise exc
        start = self._row
        if self._drained:
            return ColumnSlice(self.decoded, start, start)
        taken = take_by_batch(self, sys.maxsize if n is None else n, self._take_rows, self._reach_next_batch)
        return ColumnSlice(self.decoded, start, start + taken)

    def _take_rows(self, limit: int) -> int:
        """Up to ``limit`` rows of the batches reached: how many (0: all handed out)."""
        step = min(self._batch_end - self._row, limit)
        if step <= 0:
            return 0
        self._row += step
        self.records_read += step
        self.next_fetch_offset = int(self.decoded.offsets[self._row - 1]) + 1
        return step

    def _reach_next_batch(self) -> bool:
        """Step into the next batch; False (and drained) after the last one."""
        if self._failure is not None:
            raise self._failure
        decoded = self.decoded
        if self._batch >= len(decoded.batches):
            if decoded.error is not None:
                if decoded.error_leader_epoch is not None:
                    self.leader_epoch = decoded.error_leader_epoch
                self._failure = decoded.error
                raise decoded.error
            if self._reached_any:
                self.next_fetch_offset = decoded.batches[-1].next_offset
            self.drain()
            return False
        batch = decoded.batches[self._batch]
        self._batch += 1
        self._reached_any = True
        self.leader_epoch = batch.leader_epoch
        if batch.control:
            self.next_fetch_offset = batch.next_offset
        self._batch_end += batch.rows
        self.bytes_read += batch.size_in_bytes
        return True


def exhausted(part: Any) -> bool:
    """Nothing left in ``part`` to hand out or reach, and no error pending."""
    if isinstance(part, ColumnarRecords):
        return part.exhausted()
    return bool(part._next_index >= len(part._decoded) and part._next_inline_exception is None
                and not part._batches.has_next())


def load_columnar_decoder() -> Any:
    """``kgroup._io.columnar.decode_record_set``, or None without numpy or pyarrow (the ``spark`` extra)."""
    try:
        from kgroup._io.columnar import decode_record_set
    except ImportError:
        return None
    return decode_record_set
