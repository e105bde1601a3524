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
from kgroup.types import ConsumerRecord

__all__ = ["ColumnSlice", "ColumnSlices", "ColumnarRecords", "exhausted", "load_columnar_decoder"]


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
        """The rows as ``ConsumerRecord`` s, built in bulk (``DecodedRecordSet.records``, ``fetch()``'s)."""
        records: list[ConsumerRecord] = self.decoded.records(tp.topic, tp.partition, self.start, self.stop)
        return records


class ColumnSlices:
    """What a ``take`` across windows hands out: its ``ColumnSlice`` s, in order (``fetch()`` only)."""

    __slots__ = ("slices",)

    def __init__(self, slices: list[ColumnSlice]) -> None:
        self.slices = slices

    def __len__(self) -> int:
        return sum(map(len, self.slices))

    def records(self, tp: KTopicPartition) -> list[ConsumerRecord]:
        """The rows of every slice as ``ConsumerRecord`` s, in order."""
        out: list[ConsumerRecord] = []
        for part in self.slices:
            out += part.records(tp)
        return out


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

    Windows: with ``windows`` (the response's later windows, :func:`kgroup._io.columnar.split_batches`)
    and ``decode_window`` (decodes one, the response's aborted-transaction state running on),
    ``decoded`` is the first window's columns and each later window is decoded when its first batch
    is reached, so only one window's columns are held at a time. A ``take`` across windows returns
    their slices as one :class:`ColumnSlices`. The rows, positions and errors are those of the
    whole response decoded at once.
    """

    def __init__(self, decoded: Any, fetch_offset: int, tp: KTopicPartition, size_in_bytes: int,
                 on_drain: Any, windows: list[Any] | None = None, decode_window: Any = None) -> None:
        self.decoded = decoded
        self._windows = list(windows or ())
        self._decode_window = decode_window
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
                and self._batch >= len(self.decoded.batches) and self.decoded.error is None and not self._windows)

    def take(self, n: int | None = None) -> ColumnSlice | ColumnSlices:
        if self._next_inline_exception is not None:
            exc, self._next_inline_exception = self._next_inline_exception, None
            raise exc
        start = self._row
        if self._drained:
            return ColumnSlice(self.decoded, start, start)
        limit = sys.maxsize if n is None else n
        taken = take_by_batch(self, limit, self._take_rows, self._reach_next_batch)
        if not self._at_window_end() or taken >= limit:
            return ColumnSlice(self.decoded, start, start + taken)
        slices = [ColumnSlice(self.decoded, start, start + taken)] if taken else []
        while taken < limit and self._at_window_end():  # on into the next window, as one take
            self._next_window()
            try:
                step = take_by_batch(self, limit - taken, self._take_rows, self._reach_next_batch)
            except Exception as exc:
                if not taken:
                    raise
                self._next_inline_exception = exc  # raised by the next take (errors in line)
                break
            if step:
                slices.append(ColumnSlice(self.decoded, 0, step))
                taken += step
        if len(slices) == 1:
            return slices[0]
        return ColumnSlices(slices) if slices else ColumnSlice(self.decoded, self._row, self._row)

    def _at_window_end(self) -> bool:
        """Every batch of this window reached and handed out, no error in it, and a window after it."""
        return bool(self._windows) and not self._drained and self._next_inline_exception is None and (
            self._row >= self._batch_end and self._batch >= len(self.decoded.batches) and self.decoded.error is None)

    def _next_window(self) -> None:
        """Decode the next window; its rows are handed out from here (``next_fetch_offset`` runs on)."""
        self.decoded = self._decode_window(self._windows.pop(0))
        self._row = self._batch_end = self._batch = 0

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
            if self._windows:
                return False  # this window's end: the next take decodes the next window
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
    return bool(part.exhausted())


def load_columnar_decoder() -> Any:
    """``kgroup._io.columnar.decode_record_set``, or None without numpy or pyarrow (the ``spark`` extra)."""
    try:
        from kgroup._io.columnar import decode_record_set
    except ImportError:
        return None
    return decode_record_set
