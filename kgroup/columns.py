"""``RecordColumns``: one partition's records as columns (``Consumer.poll_columns()``, the Spark source).

A light module (no kafka-python, no numpy or pyarrow at import): ``kgroup.RecordColumns`` is a
public name. The columns come from the fetch pipeline (``kgroup._io.fetch_pipeline``), either
decoded straight from the record batches (``kgroup._io.columnar``) or taken from records.
"""

from __future__ import annotations

import operator
import struct
from typing import TYPE_CHECKING, Any

from kgroup.types import ConsumerRecord, TopicPartition

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["RecordColumns"]

#: the ``ConsumerRecord`` fields of ``RecordColumns``, in its attributes' order
_COLUMN_FIELDS = tuple(
    operator.itemgetter(ConsumerRecord._fields.index(name))
    for name in ("offset", "key", "value", "headers", "timestamp", "timestamp_type")
)


class RecordColumns:
    """One partition's records of one fetch, as columns: row ``i`` of each is the ``i``-th record.

    What ``Consumer.poll_columns()`` returns (the fetch pipeline's ``fetch_columns``), for readers
    that turn records into columnar data (the Spark source's Arrow batches, :meth:`to_arrow`) and
    need no object per record. Two kinds, the same attributes:

    * decoded columns (``decoded`` is not None): rows ``[start, stop)`` of the columnar
      decoder's arrays (:func:`kgroup._io.columnar.decode_record_set`: numpy offsets,
      timestamps and timestamp types, Arrow keys, values and headers), no Python object per
      record; the list attributes below are made from them on first use. Bulk readers take the
      arrays themselves (:attr:`decoded`, :attr:`start`, :attr:`stop`) and slice them.
    * record columns: taken from the hand-out's ``ConsumerRecord`` s by ``map(itemgetter)`` (in
      C), for responses the columnar decoder leaves to the record decoder (legacy message sets,
      read_committed with aborted transactions), without numpy and pyarrow, and for fetchers
      without a columnar hand-out.

    ``len()`` is the number of records, at least 1 as handed out by the fetcher.

    Attributes:
        topic_partition: the partition (every row's).
        offsets: ``list[int]``, ascending; gaps where compaction, transaction markers or
            aborted transactions (read_committed) removed records.
        timestamps: ``list[int]``, ms since the epoch (UTC).
        timestamp_types: ``list[int]``, 0 = CreateTime, 1 = LogAppendTime.
        keys, values: ``list[bytes | None]``, the raw bytes; None for a null key or value.
        headers: ``list[tuple[tuple[str, bytes | None], ...]]``: per record its headers as
            ``(key, value)`` pairs, ``()`` without headers.
        decoded: the :class:`kgroup._io.columnar.DecodedRecordSet` whose rows ``[start, stop)``
            these are, or None for record columns.
        start, stop: the rows of ``decoded`` (0 and ``len()`` for record columns).
        nbytes: bytes of keys and values (decoded columns), None for record columns.

    """

    __slots__ = ("_lists", "_offsets", "decoded", "start", "stop", "topic_partition")

    def __init__(self, topic_partition: TopicPartition, records: list[ConsumerRecord]) -> None:
        """Columns of ``records``: one partition's, non-empty, ascending offsets."""
        self.topic_partition = topic_partition
        self._lists: list[list[Any]] | None = [list(map(field, records)) for field in _COLUMN_FIELDS]
        self._offsets: list[int] | None = None
        self.decoded: Any = None
        self.start = 0
        self.stop = len(records)

    @classmethod
    def of_decoded(cls, topic_partition: TopicPartition, decoded: Any, start: int, stop: int) -> RecordColumns:
        """Rows ``[start, stop)`` (``start < stop``) of a ``DecodedRecordSet``, without copying them."""
        columns = cls.__new__(cls)
        columns.topic_partition = topic_partition
        columns._lists = None
        columns._offsets = None
        columns.decoded = decoded
        columns.start = start
        columns.stop = stop
        return columns

    def __len__(self) -> int:
        return self.stop - self.start

    def _columns(self) -> list[list[Any]]:
        lists = self._lists
        if lists is None:
            d, start, n = self.decoded, self.start, self.stop - self.start
            headers = [tuple((h["key"], h["value"]) for h in hs) if hs else () for hs in
                       d.headers.slice(start, n).to_pylist()]
            lists = self._lists = [d.offsets[start:self.stop].tolist(), d.keys.slice(start, n).to_pylist(),
                                   d.values.slice(start, n).to_pylist(), headers,
                                   d.timestamps[start:self.stop].tolist(),
                                   d.timestamp_types[start:self.stop].tolist()]
        return lists

    @property
    def offsets(self) -> list[int]:
        """The offsets (class docstring)."""
        if self._lists is None:  # the one column bookkeeping reads: no need to convert the others
            if self._offsets is None:
                self._offsets = self.decoded.offsets[self.start:self.stop].tolist()
            return self._offsets
        return self._lists[0]

    @property
    def keys(self) -> list[bytes | None]:
        """The keys (class docstring)."""
        return self._columns()[1]

    @property
    def values(self) -> list[bytes | None]:
        """The values (class docstring)."""
        return self._columns()[2]

    @property
    def headers(self) -> list[tuple[tuple[str, bytes | None], ...]]:
        """The headers (class docstring)."""
        return self._columns()[3]

    @property
    def timestamps(self) -> list[int]:
        """The timestamps (class docstring)."""
        return self._columns()[4]

    @property
    def timestamp_types(self) -> list[int]:
        """The timestamp types (class docstring)."""
        return self._columns()[5]

    def to_arrow(self) -> pa.RecordBatch:
        """The rows as an Arrow record batch (needs pyarrow: ``pip install 'kgroup[spark]'``).

        Columns: ``offset`` int64, ``timestamp`` int64 (ms since the epoch), ``timestamp_type``
        int32 (0 = CreateTime, 1 = LogAppendTime), ``key`` and ``value`` binary (null for a
        null key or value), ``headers`` ``list<struct<key: string, value: binary>>``. Decoded
        columns are slices of the decoder's arrays (no copy of the keys and values); record
        columns are converted from their lists.

        Raises:
            ImportError: pyarrow is not installed.

        """
        import pyarrow as pa

        headers_type = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
        n = len(self)
        if self.decoded is not None:
            d, start, stop = self.decoded, self.start, self.stop
            arrays = [
                pa.array(d.offsets[start:stop], pa.int64()),
                pa.array(d.timestamps[start:stop], pa.int64()),
                pa.array(d.timestamp_types[start:stop], pa.int32()),
                d.keys.slice(start, n),
                d.values.slice(start, n),
                d.headers.slice(start, n).cast(headers_type),
            ]
        else:
            arrays = [
                pa.array(self.offsets, pa.int64()),
                pa.array(self.timestamps, pa.int64()),
                pa.array(self.timestamp_types, pa.int32()),
                pa.array(self.keys, pa.binary()),
                pa.array(self.values, pa.binary()),
                pa.array([[{"key": k, "value": v} for k, v in hs] for hs in self.headers], headers_type),
            ]
        return pa.RecordBatch.from_arrays(
            arrays, names=["offset", "timestamp", "timestamp_type", "key", "value", "headers"]
        )

    @property
    def nbytes(self) -> int | None:
        """Bytes of keys and values of decoded columns; None for record columns."""
        if self.decoded is None:
            return None
        n = self.stop - self.start
        total = 0
        for array in (self.decoded.keys, self.decoded.values):
            part = array.slice(self.start, n)
            offsets = part.buffers()[1]
            if offsets is not None and n:
                (first,) = struct.unpack_from("<i", offsets, 4 * part.offset)
                (last,) = struct.unpack_from("<i", offsets, 4 * (part.offset + n))
                total += last - first
        return total
