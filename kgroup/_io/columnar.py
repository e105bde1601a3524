"""Kafka v2 record batches decoded straight into columns: numpy and Arrow, no object per record.

:func:`decode_record_set` takes the ``records`` bytes of one partition of a Fetch response (a
sequence of record batches, Kafka's "Record Batch" format, magic 2: the Kafka documentation's
"Message Format" section, Java's ``org.apache.kafka.common.record.DefaultRecordBatch`` and
``DefaultRecord``) and returns one partition's records as columns (:class:`DecodedRecordSet`):
offsets, timestamps and timestamp types as numpy arrays, keys and values as Arrow ``binary``
arrays, headers as an Arrow ``list<struct<key: string, value: binary>>`` array.

How it stays vectorised. The Python code loops once per *batch* (its 61-byte header, the CRC,
decompression) and, per record, only over the record's leading length varint, to find where
each record starts (record ``i + 1`` starts where record ``i``'s length says: a chain no array
operation follows; the common one- and two-byte lengths are read inline). Everything else is
numpy over the record start positions of all batches at once: the attributes byte, the
timestampDelta varlong and offsetDelta varint (zigzag), the key and value lengths and their
byte ranges, the header count. Keys and values are copied out of the batch bytes by Arrow
(``take`` over an array whose elements alternate between the wanted slices and the bytes
between them), with a validity bitmap for null (negative length) keys and values. Records with headers
(a count above 0) have their headers read by a loop over those records only; records without
headers (the common case) need none.

The rules of Java's ``Fetcher``/``CompletedFetch`` (and of kgroup's record decoder,
``kgroup._io.record_decoder.PartitionRecords``) are kept:

* the CRC-32C of each batch (attributes to the end) is checked when ``check_crcs`` is true,
  with the ``crc32c`` package's (hardware instructions), else aiokafka's C ``crc32c``, else
  kafka-python's ``calc_crc32c``;
* compressed batches (gzip, snappy, lz4, zstd: the batch attributes' bits 0-2) are
  decompressed with kafka-python's codecs (``kafka.codec``); a codec whose library is missing
  raises ``UnsupportedCodecError``, as kafka-python's ``DefaultRecordBatch`` does;
* records with an offset below the fetch offset are dropped (a batch may start before it);
* control batches (transaction markers) are skipped, their offsets still advance the position;
* under read_committed, the batches of aborted transactions (the response's
  ``aborted_transactions``, tracked batch by batch as Java's ``CompletedFetch`` does) are skipped
  the same way;
* LogAppendTime batches give every record the batch's max timestamp, as Java's
  ``DefaultRecordBatch`` does; CreateTime records get ``firstTimestamp + timestampDelta``;
* a trailing partial batch (a Fetch response cut at ``max_bytes``) is ignored;
* a corrupt batch (CRC mismatch, a record that does not fit its batch, a bad length) ends the
  decoding there: the records of the batches before it are returned, with the error
  (kafka-python's ``CorruptRecordError``) in :attr:`DecodedRecordSet.error`, to be raised
  after those records were handed out ("errors in line", Java's ``FetchCollector``).

Not handled (``decode_record_set`` returns None, and the caller decodes the response with
``kgroup._io.record_decoder.PartitionRecords`` instead): a response with any legacy message set
(magic 0 or 1, written by brokers before 0.11; Kafka 4.0 removed them, KIP-724).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from itertools import repeat
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from kgroup._io import quiet_kafka  # noqa: F401  (first: kafka-python, without its import-time warning)

# isort: split
import kafka.codec as kcodec
from kafka.errors import CorruptRecordError, UnsupportedCodecError
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.util import decode_varint

from kgroup._io.crc import crc32c as _crc32c
from kgroup.types import ConsumerRecord

__all__ = ["HEADERS_TYPE", "AbortedTransactions", "DecodedBatch", "DecodedRecordSet", "decode_record_set",
           "split_batches"]


_new_tuple = tuple.__new__

#: the v2 batch header (Java ``DefaultRecordBatch``): baseOffset, batchLength, partitionLeaderEpoch,
#: magic, crc, attributes, lastOffsetDelta, baseTimestamp, maxTimestamp, producerId, producerEpoch,
#: baseSequence, records count
_HEADER = struct.Struct(">qiibIhiqqqhii")
_HEADER_SIZE = _HEADER.size  # 61
#: baseOffset and batchLength: the log overhead before each batch (Java ``Records.LOG_OVERHEAD``)
_LOG_OVERHEAD = 12
_MAGIC_OFFSET = 16
#: where the CRC'd bytes start: the attributes (Java ``DefaultRecordBatch.ATTRIBUTES_OFFSET``)
_ATTRIBUTES_OFFSET = 21
#: the smallest batch kafka-python's ``MemoryRecords`` accepts (a v0 message's overhead)
_MIN_BATCH = _LOG_OVERHEAD + 14
#: the smallest record: length, attributes, timestampDelta, offsetDelta, key, value, header count
_MIN_RECORD = 7
_CODEC_MASK = 0x07
_TIMESTAMP_TYPE_MASK = 0x08
_TRANSACTIONAL_MASK = 0x10
_CONTROL_MASK = 0x20
_INT32_MAX = 2**31 - 1

#: the headers column's Arrow type (the list's item is named ``element``, as in PySpark's
#: ``to_arrow_schema`` for ``ArrayType(StructType([key string, value binary]))``)
HEADERS_TYPE = pa.list_(pa.field("element", pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])))

_DECOMPRESS: dict[int, tuple[str, Callable[[], bool], Callable[[Any], bytes]]] = {
    1: ("gzip", kcodec.has_gzip, lambda data: kcodec.gzip_decode(data)),
    2: ("snappy", kcodec.has_snappy, lambda data: kcodec.snappy_decode(bytes(data))),
    3: ("lz4", kcodec.has_lz4, lambda data: kcodec.lz4_decode(bytes(data))),
    4: ("zstd", kcodec.has_zstd, lambda data: kcodec.zstd_decode(bytes(data))),
}


class DecodedBatch(NamedTuple):
    """One record batch of a :class:`DecodedRecordSet` (in the order of the fetch response).

    Attributes:
        rows: its records in the columns (those at or above the fetch offset; 0 for a control
            batch, a batch wholly below the fetch offset, or one compaction emptied).
        leader_epoch: its partitionLeaderEpoch (-1 when unknown).
        next_offset: ``baseOffset + lastOffsetDelta + 1``: the offset after the batch, also when
            compaction removed its last records (Java ``RecordBatch.nextOffset``).
        size_in_bytes: its size in the response, log overhead included.
        control: True for a batch whose records are never handed out: a control batch
            (transaction markers) or, under read_committed, an aborted transaction's batch.

    """

    rows: int
    leader_epoch: int
    next_offset: int
    size_in_bytes: int
    control: bool


class DecodedRecordSet:
    """One partition's records of one fetch response, as columns (row ``i`` is the ``i``-th record).

    Attributes:
        offsets: ``numpy.ndarray`` of int64, ascending.
        timestamps: int64, ms since the epoch (UTC).
        timestamp_types: int32, 0 = CreateTime, 1 = LogAppendTime.
        keys, values: ``pyarrow.BinaryArray``, null for a null key or value (a negative length:
            -1, and any other, as Java's ``DefaultRecord.readFrom`` reads it).
        headers: ``pyarrow.ListArray`` of :data:`HEADERS_TYPE`: per record its headers in order,
            an empty list without headers; a header's value may be null.
        batches: the batches decoded, in order (:class:`DecodedBatch`): their ``rows`` add up
            to the number of rows. The batch that failed, if any, is not among them.
        error: None, or the error of the batch after ``batches``: raise it after handing out
            the rows (kafka-python's ``CorruptRecordError`` for corrupt data,
            ``UnsupportedCodecError`` for a codec whose library is missing).
        error_leader_epoch: the failed batch's leader epoch when its CRC was good (the record
            decoder takes the epoch of a batch before decoding its records), else None.

    """

    __slots__ = ("_header_offsets", "_header_pairs", "_row_epochs", "batches", "error", "error_leader_epoch",
                 "headers", "keys", "offsets", "timestamp_types", "timestamps", "values")

    def __init__(self, offsets: np.ndarray, timestamps: np.ndarray, timestamp_types: np.ndarray, keys: pa.Array,
                 values: pa.Array, headers: pa.Array, batches: Sequence[DecodedBatch], error: Exception | None,
                 error_leader_epoch: int | None) -> None:
        self.offsets = offsets
        self.timestamps = timestamps
        self.timestamp_types = timestamp_types
        self.keys = keys
        self.values = values
        self.headers = headers
        self.batches = tuple(batches)
        self.error = error
        self.error_leader_epoch = error_leader_epoch
        self._row_epochs: list[int | None] | None = None
        self._header_offsets: list[int] | None = None
        self._header_pairs: list[tuple[str, bytes | None]] | None = None

    def __len__(self) -> int:
        return len(self.offsets)

    def records(self, topic: str, partition: int, start: int, stop: int) -> list[ConsumerRecord]:
        """Rows ``[start, stop)`` as ``ConsumerRecord`` s, built in bulk (what ``poll()`` hands out).

        Each column is converted to Python objects at once (numpy ``tolist``, Arrow
        ``to_pylist``) and the records are made by ``map`` over their ``zip``: no Python code
        runs per record. Fields as the record decoder makes them
        (``kgroup._io.record_decoder.PartitionRecords``): keys and values ``bytes`` or None,
        headers a tuple of ``(key, value)`` pairs (``()`` without), the batch's leader epoch or
        None when it is -1.
        """
        n = stop - start
        if n <= 0:
            return []
        return list(map(_new_tuple, repeat(ConsumerRecord, n), zip(  # noqa: B905 (columns of one length)
            repeat(topic, n), repeat(partition, n), self.offsets[start:stop].tolist(),
            self.keys.slice(start, n).to_pylist(), self.values.slice(start, n).to_pylist(),
            self._header_tuples(start, stop), self.timestamps[start:stop].tolist(),
            self.timestamp_types[start:stop].tolist(), self._epochs()[start:stop])))

    def _epochs(self) -> list[int | None]:
        """Each row's leader epoch (None for -1), made once."""
        epochs = self._row_epochs
        if epochs is None:
            epochs = self._row_epochs = []
            for batch in self.batches:
                if batch.rows:
                    epochs += [batch.leader_epoch if batch.leader_epoch >= 0 else None] * batch.rows
        return epochs

    def _header_tuples(self, start: int, stop: int) -> Any:
        """The headers of rows ``[start, stop)`` as tuples of ``(key, value)`` pairs."""
        offsets = self._header_offsets
        if offsets is None:
            offsets = self._header_offsets = self.headers.offsets.to_numpy().tolist()
        first, last = offsets[start], offsets[stop]
        if first == last:
            return repeat((), stop - start)  # no headers (the common case)
        pairs = self._header_pairs
        if pairs is None:
            items = self.headers.values
            keys, values = items.field("key").to_pylist(), items.field("value").to_pylist()
            pairs = self._header_pairs = list(zip(keys, values, strict=True))
        bounds = zip(offsets[start:stop], offsets[start + 1:stop + 1], strict=True)
        return [tuple(pairs[a:b]) if a != b else () for a, b in bounds]

    @property
    def next_offset(self) -> int | None:
        """The next fetch offset after the whole set: the last batch's ``next_offset``.

        None when no batch was decoded or decoding stopped at an error (the position then
        moves only as far as the records handed out).
        """
        if self.error is not None or not self.batches:
            return None
        return self.batches[-1].next_offset

    @property
    def leader_epochs(self) -> list[int]:
        """The leader epoch of each batch, in order."""
        return [b.leader_epoch for b in self.batches]


class AbortedTransactions:
    """Under read_committed, which batches belong to an aborted transaction (Java ``CompletedFetch``).

    One per partition response: its state runs on from batch to batch, also across the windows of
    a response decoded window by window (:func:`split_batches`).

    Batch by batch, in order (kafka-python's ``Fetcher.PartitionRecords`` and kgroup's record
    decoder do the same): a batch with a producer id first makes every aborted transaction of
    the response starting at or before its last offset current (its producer id aborted); an
    abort marker (a control batch whose first record is an ABORT) ends its producer's aborted
    transaction; a transactional data batch of an aborted producer is skipped whole.
    """

    __slots__ = ("_aborted", "_pending")

    def __init__(self, aborted_transactions: Sequence[Any]) -> None:
        self._pending = sorted(aborted_transactions, key=lambda txn: txn.first_offset, reverse=True)
        self._aborted: set[int] = set()

    def skips(self, view: Any, start: int, end: int, header: tuple[Any, ...]) -> bool:
        """True when the batch ``view[start:end]`` (its header decoded: ``header``) is skipped."""
        base_offset, attributes, last_delta, producer_id = header[0], header[5], header[6], header[9]
        pending = self._pending
        while pending and pending[-1].first_offset <= base_offset + last_delta:
            self._aborted.add(pending.pop().producer_id)
        if attributes & _CONTROL_MASK:
            if _is_abort_marker(view, start, end):
                self._aborted.discard(producer_id)
            return False
        return bool(attributes & _TRANSACTIONAL_MASK) and producer_id in self._aborted


def _is_abort_marker(view: Any, start: int, end: int) -> bool:
    """The control batch ``view[start:end]``'s first record is an ABORT marker (kafka-python's ``ControlRecord``)."""
    record = next(DefaultRecordBatch(bytes(view[start:end])), None)
    return bool(record is not None and record.abort)


class _Corrupt(Exception):
    """A record of a batch does not parse (internal: turned into ``CorruptRecordError``)."""


def split_batches(data: bytes | bytearray | memoryview, window_bytes: int) -> list[memoryview] | None:
    """``data`` (one partition's Fetch response records) cut between batches into windows of about ``window_bytes``.

    Each window holds whole batches, at least one, and at most ``window_bytes`` unless its one
    batch is larger; whatever follows the last whole batch (a partial batch, or bytes that do not
    parse as one) ends the last window, so decoding the windows one after the other
    (:func:`decode_record_set`, one :class:`AbortedTransactions` for all of them) gives the
    records, errors and offsets of decoding ``data`` whole. None when a batch is not a v2 batch
    (``decode_record_set`` leaves those to the record decoder).
    """
    view = memoryview(data).cast("B") if not isinstance(data, memoryview) else data.cast("B")
    size = len(view)
    windows: list[memoryview] = []
    start = pos = 0
    while size - pos >= _LOG_OVERHEAD:
        (length,) = struct.unpack_from(">i", view, pos + 8)
        end = pos + _LOG_OVERHEAD + length
        if end > size or end - pos < _MIN_BATCH:
            break  # a partial batch, or a corrupt length: the last window's end
        if view[pos + _MAGIC_OFFSET] != 2:
            return None
        if end - start > window_bytes and pos > start:
            windows.append(view[start:pos])
            start = pos
        pos = end
    if start < size:
        windows.append(view[start:])
    return windows


def decode_record_set(data: bytes | bytearray | memoryview, fetch_offset: int, *, check_crcs: bool = True,
                      read_committed: bool = False, aborted_transactions: Sequence[Any] = (),
                      topic_partition: object = None,
                      transactions: AbortedTransactions | None = None) -> DecodedRecordSet | None:
    """Decode one partition's Fetch response records (v2 record batches) into columns.

    Args:
        data: the ``records`` field of one partition of a Fetch response: v2 record batches,
            possibly ending in a partial batch (ignored).
        fetch_offset: the Fetch's offset for the partition: records below it are dropped.
        check_crcs: verify each batch's CRC-32C (``check.crcs``).
        read_committed: the Fetch's isolation level is read_committed.
        aborted_transactions: the partition's ``aborted_transactions`` of the response.
        topic_partition: the partition, named in error messages only.
        transactions: under read_committed, the :class:`AbortedTransactions` of the response's
            earlier windows (:func:`split_batches`), instead of one made from ``aborted_transactions``.

    Returns:
        The columns, or None when the response is not handled here (the module docstring: a
        legacy message set).
        Errors are not raised but returned in :attr:`DecodedRecordSet.error`, after the records
        of the batches before the failed one.

    """
    view = memoryview(data).cast("B") if not isinstance(data, bytes) else data
    size = len(view)
    # pass 1, per batch: the headers, and whether this decoder handles the response at all
    headers: list[tuple[int, int, tuple[Any, ...]]] = []  # (start, end, header)
    error: Exception | None = None
    pos = 0
    while size - pos >= _LOG_OVERHEAD:
        (length,) = struct.unpack_from(">i", view, pos + 8)
        end = pos + _LOG_OVERHEAD + length
        if end > size:
            break  # a partial batch at the end of the response
        if end - pos < _MIN_BATCH:
            error = CorruptRecordError(
                f"Record size is less than the minimum record overhead ({_MIN_BATCH - _LOG_OVERHEAD})")
            break
        if view[pos + _MAGIC_OFFSET] != 2:
            return None  # a legacy message set (or an unknown magic): the record decoder's
        if end - pos < _HEADER_SIZE:
            error = CorruptRecordError(f"Record batch at offset {pos} is shorter than its header ({end - pos} bytes)")
            break
        headers.append((pos, end, _HEADER.unpack_from(view, pos)))
        pos = end
    # pass 2, per batch: CRC, decompression
    bodies: list[bytes | None] = []  # each data batch's records decompressed, None if not compressed
    spans: list[tuple[int, int]] = []  # where each data batch's records are in ``view`` or its body
    counts: list[int] = []
    decoded: list[tuple[tuple[Any, ...], int, int]] = []  # (header, records, size) of data batches
    batches: list[DecodedBatch] = []
    error_epoch: int | None = None
    aborts = transactions
    if aborts is None and read_committed and aborted_transactions:
        aborts = AbortedTransactions(aborted_transactions)
    for start, end, header in headers:
        base_offset, _, epoch, _, crc, attributes, last_delta = header[:7]
        if check_crcs and _crc32c(memoryview(view)[start + _ATTRIBUTES_OFFSET:end]) != crc:
            error = CorruptRecordError(
                f"Record batch for partition {topic_partition} at offset {base_offset} failed crc check")
            break
        next_offset = base_offset + last_delta + 1
        if aborts is not None and header[9] >= 0:
            try:
                skip = aborts.skips(view, start, end, header)
            except Exception as exc:  # a control record that does not parse
                error = CorruptRecordError(f"Record batch for partition {topic_partition} at offset {base_offset}: "
                                           f"invalid control record: {exc!r}")
                error_epoch = epoch
                break
            if skip:  # an aborted transaction's batch: skipped whole, as a control batch is
                batches.append(DecodedBatch(0, epoch, next_offset, end - start, True))
                continue
        if attributes & _CONTROL_MASK:
            batches.append(DecodedBatch(0, epoch, next_offset, end - start, True))
            continue
        count = header[12]
        codec = attributes & _CODEC_MASK
        if codec:
            try:
                body = _decompress(codec, memoryview(view)[start + _HEADER_SIZE:end])
            except Exception as exc:  # a codec missing, or data it cannot decompress
                error = exc if isinstance(exc, UnsupportedCodecError) else CorruptRecordError(
                    f"Record batch for partition {topic_partition} at offset {base_offset} does not decompress: "
                    f"{exc!r}")
                error_epoch = epoch
                break
            bodies.append(body)
            at, stop = 0, len(body)
        else:
            bodies.append(None)
            at, stop = start + _HEADER_SIZE, end
        if count < 0 or count * _MIN_RECORD > stop - at:
            error = CorruptRecordError(f"Record batch for partition {topic_partition} at offset {base_offset}: "
                                       f"{count} records do not fit in {stop - at} bytes")
            error_epoch = epoch
            bodies.pop()
            break
        spans.append((at, stop))
        counts.append(count)
        decoded.append((header, count, end - start))
        batches.append(DecodedBatch(count, epoch, next_offset, end - start, False))
    payload: Any = view
    if any(body is not None for body in bodies):
        # one buffer of every data batch's records, in order (the Arrow offsets must ascend)
        segments = [memoryview(view)[at:stop] if body is None else body for body, (at, stop) in
                    zip(bodies, spans, strict=True)]
        payload = b"".join(segments)
        ends = np.cumsum([len(s) for s in segments]).tolist()
        spans = list(zip([0, *ends[:-1]], ends, strict=True))
    # pass 3, vectorised over all data batches: where each record starts, then every field
    starts, failed = _find_starts(payload, spans, counts)
    if failed is not None:  # a batch whose records do not chain up to its end
        header = decoded[failed][0]
        error = CorruptRecordError(
            f"Record batch for partition {topic_partition} at offset {header[0]}: invalid record structure")
        error_epoch = int(header[2])
        cut = [i for i, b in enumerate(batches) if not b.control][failed]
        starts = starts[:sum(counts[:failed])]
        batches, counts, decoded = batches[:cut], counts[:failed], decoded[:failed]
    return _columns(payload, fetch_offset, starts, counts, decoded, batches, error, error_epoch, topic_partition)


#: rounds of stride guessing (``_find_starts``) before the rest is stepped through one by one
_GUESS_ROUNDS = 8
#: a round that finds fewer record starts than this per batch ends the guessing (records of varied sizes)
_GUESS_MIN_GAIN = 4


def _find_starts(payload: Any, spans: list[tuple[int, int]], counts: list[int]) -> tuple[np.ndarray, int | None]:
    """Where each record of each data batch starts in ``payload``; (starts, first batch that fails).

    A record's start is the previous record's start plus its size (its length varint and the
    length it says): a chain. It is followed by guessing, for all batches at once, that the
    records ahead are as large as the one at the current position, checking every guessed start
    at once, and keeping the guesses up to the first record of another size (whose start is
    right too), round after round. Records of a producer mostly change size a few times per
    batch (where offsetDelta and timestampDelta need another varint byte), so a few rounds find
    them all. Batches of records of varied sizes, and what is left after ``_GUESS_ROUNDS``, are
    stepped through record by record (``_step_starts``: the only loop per record).

    A batch fails when a record size is not positive, runs past the batch, or the last record
    does not end where the batch does; its starts and those of the batches after it are garbage.
    """
    nb = len(counts)
    total = sum(counts)
    out = np.zeros(total, dtype=np.int64)
    if not total:
        return out, None
    buf = np.frombuffer(payload, dtype=np.uint8)
    count = np.asarray(counts, dtype=np.int64)
    span = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    cur = span[:, 0].copy()
    stop = span[:, 1]
    slot = np.concatenate(([0], np.cumsum(count)[:-1]))  # where a batch's starts go in out
    done = np.zeros(nb, dtype=np.int64)
    failed = np.zeros(nb, dtype=bool)
    for _ in range(_GUESS_ROUNDS):
        act = np.flatnonzero((done < count) & ~failed)
        if not len(act):
            break
        c = cur[act]
        size = _record_sizes(buf, c)
        room = stop[act] - c
        bad = (size <= 0) | (size > room)
        if bad.any():
            failed[act[bad]] = True
            keep = ~bad
            act, c, size, room = act[keep], c[keep], size[keep], room[keep]
            if not len(act):
                continue
        m = np.minimum(count[act] - done[act], room // size)  # >= 1
        seg = np.repeat(np.arange(len(act)), m)
        first_of = np.concatenate(([0], np.cumsum(m)[:-1]))
        k = np.arange(len(seg), dtype=np.int64) - first_of[seg]
        cand = c[seg] + size[seg] * k
        sizes = _record_sizes(buf, cand)
        mismatch = np.flatnonzero(sizes != size[seg])
        first_mismatch = m.copy()
        np.minimum.at(first_mismatch, seg[mismatch], k[mismatch])
        broke = first_mismatch < m
        accepted = np.where(broke, first_mismatch + 1, m)
        taken = k < accepted[seg]
        out[(slot[act] + done[act])[seg[taken]] + k[taken]] = cand[taken]
        last = first_of + accepted - 1
        failed[act[broke & (sizes[last] <= 0)]] = True
        cur[act] = np.where(broke, cand[last] + sizes[last], c + size * m)
        done[act] += accepted
        if accepted.sum() < _GUESS_MIN_GAIN * len(act):
            break
    rest = np.flatnonzero((done < count) & ~failed)
    if len(rest):
        for b in rest.tolist():
            found: list[int] = []
            try:
                after = _step_starts(payload, int(cur[b]), int(count[b] - done[b]), found)
            except (IndexError, ValueError):
                failed[b] = True
                continue
            first = int(slot[b] + done[b])
            out[first:first + len(found)] = found
            if len(found) > 1 and not (np.diff(out[first:first + len(found)]) > 0).all():
                failed[b] = True  # a negative length stepped back
            cur[b] = after
    failed |= cur != stop
    return out, (int(failed.argmax()) if failed.any() else None)


def _record_sizes(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The size of the records at ``pos``: their length varint's bytes plus the length it says."""
    length, nbytes = _varints(buf, pos, 5, np.zeros(len(pos), dtype=bool))
    size: np.ndarray = length + nbytes
    return size


def _decompress(codec: int, data: memoryview) -> bytes:
    entry = _DECOMPRESS.get(codec)
    if entry is None:
        raise UnsupportedCodecError(f"Unrecognized compression type: {codec}")
    name, available, decompress = entry
    if not available():
        raise UnsupportedCodecError(f"Libraries for {name} compression codec not found")
    return decompress(data)


def _step_starts(buf: Any, pos: int, count: int, out: list[int]) -> int:
    """Append the start of each of ``count`` records from ``pos`` to ``out``; the position after them.

    The one loop per record (records of varied sizes, ``_find_starts``): each record's start
    is the previous start plus its length varint (zigzag, Java ``ByteUtils.readVarint``) and
    the length it says. Raises IndexError past the
    end of ``buf``, ValueError on an over-long varint.
    """
    append = out.append
    for _ in range(count):
        append(pos)
        b = buf[pos]
        if b < 0x80:
            pos += 1 + ((b >> 1) ^ -(b & 1))
        else:
            c = buf[pos + 1]
            if c < 0x80:
                z = (b & 0x7F) | (c << 7)
                pos += 2 + ((z >> 1) ^ -(z & 1))
            else:
                length, pos = decode_varint(buf, pos)
                pos += length
    return pos


_SHIFTS = {width: (7 * np.arange(width, dtype=np.uint64)) for width in (5, 10)}
_LANES = {width: np.arange(width, dtype=np.int64) for width in (5, 10)}


def _varints(buf: np.ndarray, pos: np.ndarray, width: int, bad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The zigzag varints (``width`` 5) or varlongs (10) at ``pos`` in ``buf``: (values, byte counts).

    Java ``ByteUtils.readVarint``/``readVarlong``, over all positions at once. Positions past
    ``buf`` read its last byte (the caller's bounds checks reject such records); a varint with
    no last byte within ``width`` bytes sets ``bad`` at its row.
    """
    last = len(buf) - 1
    first = buf[np.minimum(pos, last)]
    more = first >= 0x80
    if not more.any():  # every varint one byte long
        z = first.astype(np.int64)
        return (z >> 1) ^ -(z & 1), np.ones(len(pos), np.int64)
    second = buf[np.minimum(pos + 1, last)]
    if not (more & (second >= 0x80)).any():  # none longer than two bytes: the common case
        z = np.where(more, (first & 0x7F).astype(np.int64) | (second.astype(np.int64) << 7), first)
        return (z >> 1) ^ -(z & 1), more.astype(np.int64) + 1
    lanes = _LANES[width]
    grid = buf[np.minimum(pos[:, None] + lanes, last)]
    ends = grid < 0x80
    bad |= ~ends.any(axis=1)
    nbytes = ends.argmax(axis=1) + 1
    groups = (grid & 0x7F).astype(np.uint64) << _SHIFTS[width]
    groups[lanes >= nbytes[:, None]] = 0
    z = groups.sum(axis=1, dtype=np.uint64)
    values = (z >> np.uint64(1)).astype(np.int64) ^ -(z & np.uint64(1)).astype(np.int64)
    return values, nbytes.astype(np.int64)


class _Fields(NamedTuple):
    """Every record's fields, one array each (row ``i``: the record starting at ``starts[i]``)."""

    timestamp_delta: np.ndarray
    offset_delta: np.ndarray
    key_start: np.ndarray
    key_end: np.ndarray
    key_null: np.ndarray
    value_start: np.ndarray
    value_end: np.ndarray
    value_null: np.ndarray
    header_count: np.ndarray
    headers_start: np.ndarray
    record_end: np.ndarray

    def head(self, rows: int) -> _Fields:
        return _Fields(*(column[:rows] for column in self))

    def take(self, rows: np.ndarray) -> _Fields:
        return _Fields(*(column[rows] for column in self))


def _record_fields(buf: np.ndarray, s: np.ndarray) -> tuple[_Fields, np.ndarray]:
    """Decode the fields of the records starting at ``s`` (Java ``DefaultRecord.readFrom``); (fields, bad).

    A record is bad when a varint does not end, its length or header count is below 0,
    or its fields do not end exactly at its end (without headers) or run past it (with headers:
    ``_read_headers`` checks those exactly).
    """
    bad = np.zeros(len(s), dtype=bool)
    length, w = _varints(buf, s, 5, bad)
    p = s + w
    record_end = p + length
    p = p + 1  # attributes: one byte, unused
    ts_delta, w = _varints(buf, p, 10, bad)
    p = p + w
    offset_delta, w = _varints(buf, p, 5, bad)
    p = p + w
    key_length, w = _varints(buf, p, 5, bad)
    key_start = p + w
    key_end = key_start + np.maximum(key_length, 0)
    value_length, w = _varints(buf, key_end, 5, bad)
    value_start = key_end + w
    value_end = value_start + np.maximum(value_length, 0)
    header_count, w = _varints(buf, value_end, 5, bad)
    p = value_end + w
    bad |= (length < 0) | (header_count < 0)  # a negative key or value length is null, as in Java
    bad |= np.where(header_count == 0, p != record_end, p > record_end)
    fields = _Fields(ts_delta, offset_delta, key_start, key_end, key_length < 0, value_start, value_end,
                     value_length < 0, header_count, p, record_end)
    return fields, bad


def _columns(payload: Any, fetch_offset: int, starts: np.ndarray, counts: list[int],
             decoded: list[tuple[tuple[Any, ...], int, int]], batches: list[DecodedBatch],
             error: Exception | None, error_epoch: int | None, topic_partition: object) -> DecodedRecordSet:
    """The vectorised part: every record field of every data batch at once (module docstring)."""
    buf = np.frombuffer(payload, dtype=np.uint8)
    if len(buf) > _INT32_MAX:
        raise CorruptRecordError(f"{len(buf)} bytes of records: more than Arrow's 32-bit offsets address")
    s = starts
    fields, bad = _record_fields(buf, s)
    first_bad: int | None = int(bad.argmax()) if bad.any() else None
    message = "Invalid record structure"
    with_headers = np.flatnonzero(fields.header_count > 0)
    if first_bad is not None:
        with_headers = with_headers[with_headers < first_bad]
    header_lists: list[list[tuple[str, bytes | None]]] = []
    if len(with_headers):
        try:
            header_lists = _read_headers(payload, with_headers, fields)
        except _Corrupt as exc:
            message, first_bad = exc.args[0], exc.args[1]
            header_lists = header_lists[:0]
            with_headers = with_headers[with_headers < first_bad]
            header_lists = _read_headers(payload, with_headers, fields)
    if first_bad is not None:  # the records of the batches before the first bad record, and an error
        bounds = np.cumsum([0, *counts])
        bad_batch = int(np.searchsorted(bounds, first_bad, side="right")) - 1
        header = decoded[bad_batch][0]
        cut = [i for i, b in enumerate(batches) if not b.control][bad_batch]
        rows = int(bounds[bad_batch])
        batches, counts, decoded = batches[:cut], counts[:bad_batch], decoded[:bad_batch]
        fields = fields.head(rows)
        header_lists = header_lists[:int(np.searchsorted(with_headers, rows))]
        with_headers = with_headers[with_headers < rows]
        error = CorruptRecordError(f"Record batch for partition {topic_partition} at offset {header[0]}: {message}")
        error_epoch = int(header[2])
    batch_of = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    hdr = np.asarray([h for h, _, _ in decoded], dtype=np.int64).reshape(-1, 13)
    offsets = hdr[batch_of, 0] + fields.offset_delta
    log_append = (hdr[batch_of, 5] & _TIMESTAMP_TYPE_MASK) != 0
    timestamps = np.where(log_append, hdr[batch_of, 8], hdr[batch_of, 7] + fields.timestamp_delta)
    ts_types = log_append.astype(np.int32)
    if len(offsets) and offsets[0] < fetch_offset:  # a batch starting before the fetch offset
        keep = offsets >= fetch_offset
        rows_kept = iter(np.bincount(batch_of[keep], minlength=len(counts)).tolist())
        batches = [b if b.control else b._replace(rows=next(rows_kept)) for b in batches]
        if len(with_headers):
            header_lists = [h for h, row in zip(header_lists, with_headers.tolist(), strict=True) if keep[row]]
        fields = fields.take(np.flatnonzero(keep))
        offsets, timestamps, ts_types = offsets[keep], timestamps[keep], ts_types[keep]
    pa_payload = pa.py_buffer(payload)
    keys = _binary(pa_payload, fields.key_start, fields.key_end, fields.key_null)
    values = _binary(pa_payload, fields.value_start, fields.value_end, fields.value_null)
    headers = _headers(fields.header_count, header_lists)
    return DecodedRecordSet(offsets, timestamps, ts_types, keys, values, headers, batches, error, error_epoch)


def _binary(payload: pa.Buffer, starts: np.ndarray, ends: np.ndarray, nulls: np.ndarray) -> pa.Array:
    """The byte ranges ``[starts, ends)`` of ``payload`` as an Arrow binary array (null where ``nulls``).

    Built as one array whose elements alternate between the ranges and the bytes between them
    (its offsets ``starts[0], ends[0], starts[1], ends[1], ...``, no copy), of which Arrow's
    ``take`` copies every other element.
    """
    n = len(starts)
    if n == 0:
        return pa.array([], pa.binary())
    offsets = np.empty(2 * n, dtype=np.int32)
    offsets[0::2] = starts
    offsets[1::2] = ends
    validity = None
    null_count = int(nulls.sum())
    if null_count:
        valid = np.ones(2 * n - 1, dtype=bool)
        valid[0::2] = ~nulls
        validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
    interleaved = pa.Array.from_buffers(pa.binary(), 2 * n - 1, [validity, pa.py_buffer(offsets), payload],
                                        null_count=null_count)
    return interleaved.take(pa.array(np.arange(0, 2 * n - 1, 2, dtype=np.int64)))


def _read_headers(payload: Any, rows: np.ndarray, fields: _Fields) -> list[list[tuple[str, bytes | None]]]:
    """The headers of the records ``rows`` (those with a count above 0), read one by one.

    Java ``DefaultRecord.readHeaders``: a key is a varint length and UTF-8 bytes (never null), a
    value a varint length (-1 for null) and bytes; the last header ends where the record does.
    Raises ``_Corrupt(message, row)`` for the first record that does not parse.
    """
    out: list[list[tuple[str, bytes | None]]] = []
    for row, count, pos, end in zip(rows.tolist(), fields.header_count[rows].tolist(),
                                    fields.headers_start[rows].tolist(), fields.record_end[rows].tolist(), strict=True):
        entries: list[tuple[str, bytes | None]] = []
        try:
            for _ in range(count):
                key_length, pos = decode_varint(payload, pos)
                if key_length < 0 or pos + key_length > end:
                    raise _Corrupt(f"Invalid header key size {key_length}", row)
                key = bytes(payload[pos:pos + key_length]).decode("utf-8")
                pos += key_length
                value_length, pos = decode_varint(payload, pos)
                if pos + value_length > end:
                    raise _Corrupt(f"Invalid header value size {value_length}", row)
                value = None
                if value_length >= 0:
                    value = bytes(payload[pos:pos + value_length])
                    pos += value_length
                entries.append((key, value))
        except (IndexError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
            raise _Corrupt(f"Invalid record headers: {exc!r}", row) from exc
        if pos != end:
            raise _Corrupt(f"Invalid record size: the headers end {end - pos} bytes before the record", row)
        out.append(entries)
    return out


_EMPTY_HEADERS = pa.array([], HEADERS_TYPE.value_type)


def _headers(counts: np.ndarray, lists: list[list[tuple[str, bytes | None]]]) -> pa.Array:
    """The headers column: empty lists where ``counts`` is 0, ``lists`` in order for the others."""
    n = len(counts)
    offsets = np.zeros(n + 1, dtype=np.int32)
    if not lists:
        return pa.ListArray.from_arrays(pa.array(offsets), _EMPTY_HEADERS, type=HEADERS_TYPE)
    np.cumsum(counts, out=offsets[1:])
    keys = [k for entries in lists for k, _ in entries]
    values = [v for entries in lists for _, v in entries]
    items = pa.StructArray.from_arrays([pa.array(keys, pa.string()), pa.array(values, pa.binary())],
                                       fields=list(HEADERS_TYPE.value_type))
    return pa.ListArray.from_arrays(pa.array(offsets), items, type=HEADERS_TYPE)
