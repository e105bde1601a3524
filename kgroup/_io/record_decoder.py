"""Fetched record batches to kgroup ``ConsumerRecord``s: the record decoder of the fetch pipeline.

:class:`PartitionRecords` is one partition's fetched data, decoded a whole batch at a time
straight into kgroup ``ConsumerRecord``s, instead of one generator step, one kafka-python record
and one kafka-python ``ConsumerRecord`` per record. Records are decoded (:func:`load_batch_decoder`)
by kgroup's own C extension, :mod:`kgroup._io._crecords`, when it was built at install time: it
parses a batch's records straight into the ``ConsumerRecord`` s handed out, as ``take`` asks for
them, with no Python object for a record until then; else by aiokafka's C record extension when it
is installed; else by kafka-python's own (pure Python) ``DefaultRecordBatch``. :mod:`kgroup._io.fetch_pipeline` hands
its records out; :mod:`kgroup._io.columnar` decodes the same bytes into columns instead.

:func:`fetch_error` is the kgroup error for an error kafka-python raised while fetching (Java's
consumer exceptions).
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable
from itertools import repeat
from types import ModuleType
from typing import Any

from kgroup._io import quiet_kafka  # noqa: F401  (first: kafka-python, without its import-time warning)

# isort: split
import kafka.errors as KErrors
from kafka.consumer.fetcher import Fetcher
from kafka.protocol.consumer import IsolationLevel
from kafka.structs import TopicPartition as KTopicPartition

from kgroup._io.crc import crc_matches
from kgroup.errors import FetchError, OffsetOutOfRangeError
from kgroup.types import ConsumerRecord, TopicPartition

__all__ = [
    "BatchDecoder", "PartitionRecords", "fetch_error", "kafka_tp", "load_aiokafka_decoder", "load_batch_decoder",
    "take_by_batch",
]

#: the record decoder and the codecs it decompresses: kgroup's C module :mod:`kgroup._io._crecords`
#: (every codec: kafka-python decompresses), aiokafka's C ``DefaultRecordBatch``, or None
#: (kafka-python's own ``DefaultRecordBatch``)
BatchDecoder = tuple[Any, frozenset[int]]
#: compression codes of the record batch attributes: none, gzip, snappy, lz4, zstd
_EVERY_CODEC = frozenset(range(5))
#: kgroup._io._crecords.decode's min_offset that skips no record (a signed 64-bit minimum)
_NO_MINIMUM = -(1 << 63)
#: a decoded record: the fields of a ``ConsumerRecord`` in its order, as a plain tuple
RecordFields = tuple[Any, ...]

_new_tuple = tuple.__new__
#: ``PartitionRecords.record_iterator`` until drained (kafka-python: None once drained)
_NOT_DRAINED = object()


def kafka_tp(tp: TopicPartition) -> KTopicPartition:
    """kafka-python's ``TopicPartition`` of ``tp``."""
    return KTopicPartition(tp.topic, tp.partition)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


@functools.cache
def load_batch_decoder() -> BatchDecoder:
    """The fastest record decoder importable (:data:`BatchDecoder`).

    kgroup's C module (:mod:`kgroup._io._crecords`, compiled when kgroup is installed where a C
    compiler is found; ``KGROUP_NO_EXTENSIONS=1`` at install time leaves it out), else
    aiokafka's (:func:`load_aiokafka_decoder`), else (None, {}): kafka-python's.
    """
    try:
        module = importlib.import_module("kgroup._io._crecords")
    except ImportError:
        return load_aiokafka_decoder()
    return module, _EVERY_CODEC


@functools.cache
def load_aiokafka_decoder() -> BatchDecoder:
    """The C ``DefaultRecordBatch`` of aiokafka and the codecs it decompresses, or (None, {}).

    Imported at the first call (the first fetched response), not with this module: importing
    aiokafka's record extension imports the whole aiokafka package (tens of ms), which a
    member's join, before any response to decode, need not wait for.
    """
    try:
        module = importlib.import_module("aiokafka.record._crecords.default_records")
        codec = importlib.import_module("aiokafka.codec")
    except ImportError:
        return None, frozenset()
    codecs = {0}
    for code, name in ((1, "has_gzip"), (2, "has_snappy"), (3, "has_lz4"), (4, "has_zstd")):
        if getattr(codec, name)():
            codecs.add(code)
    return module.DefaultRecordBatch, frozenset(codecs)


def fetch_error(exc: Exception) -> FetchError:
    """The kgroup error for an error kafka-python's Fetcher raised (Java's consumer exceptions)."""
    partitions = getattr(exc, "args", ())
    tp = None
    if partitions and isinstance(partitions[0], dict) and partitions[0]:
        ktp = next(iter(partitions[0]))
        tp = TopicPartition(ktp.topic, ktp.partition)
    if isinstance(exc, KErrors.OffsetOutOfRangeError):
        return OffsetOutOfRangeError(f"fetch position out of range and auto_offset_reset is 'none': {exc}", tp)
    return FetchError(f"fetch failed: {_describe(exc)}", tp)


def take_by_batch(part: Any, limit: int, take_rows: Callable[[int], int], next_batch: Callable[[], bool]) -> int:
    """Hand out up to ``limit`` records of ``part`` batch by batch; how many were taken.

    ``take_rows(k)`` takes up to ``k`` records of the batch reached (0: none left in it);
    ``next_batch()`` reaches the next batch (False: drained after the last). An error after some
    records were taken is kept as ``part._next_inline_exception``, raised by its next ``take``
    (kafka-python's errors in line); before any, it is raised at once.
    """
    taken = 0
    try:
        while taken < limit:
            step = take_rows(limit - taken)
            if step:
                taken += step
            elif not next_batch():
                break
    except Exception as exc:
        if not taken:
            raise
        part._next_inline_exception = exc  # raised by the next take()
    return taken


class PartitionRecords(Fetcher.PartitionRecords):  # type: ignore[misc]
    """One partition's fetched data, handed out as kgroup ``ConsumerRecord``s.

    Keeps the contract kafka-python's Fetcher relies on (``take(n)``, ``next_fetch_offset``
    after each take, ``drain()`` at the end, errors raised in line) and its batch rules:
    CRC check first, the leader epoch of the batch, aborted transactions skipped under
    read_committed, control batches skipped, records below the fetch offset skipped, and
    the next fetch offset taken from the last batch's header at the end. A batch whose
    decoding fails raises on every later ``take`` until the position moves past it.
    """

    def __init__(self, decoder: BatchDecoder, fetch_offset: int, tp: Any, records: Any,
                 **kwargs: Any) -> None:
        super().__init__(fetch_offset, tp, records, **kwargs)
        # kafka-python's record iterator (a generator holding this object and the response's
        # bytes) is never used here: only "not None until drained" is. Left in place, it makes a
        # reference cycle that keeps the whole response buffer alive until a full collection of
        # CPython's cyclic garbage collector, for every response not drained through ``take``
        # (one the columnar decoder took over, one dropped after a seek or a revocation).
        self.record_iterator = _NOT_DRAINED
        self._fast_batch, self._fast_codecs = decoder
        self._batches = records
        self._decoded: list[RecordFields] = []
        self._next_index = 0
        self._last_batch: Any = None
        self._failure: Exception | None = None
        #: kgroup's C decoder: where the batch reached is read (:meth:`_take_decoded`), else None
        self._cursor: list[Any] | None = None

    def take(self, n: int | None = None) -> list[ConsumerRecord]:
        self._maybe_raise_next_inline_exception()
        out: list[ConsumerRecord] = []
        if self.record_iterator is None:  # drained
            return out

        def take_rows(limit: int) -> int:  # up to limit records of the decoded batch
            if self._cursor is not None:
                return self._take_decoded(out, limit)
            decoded, start = self._decoded, self._next_index
            end = min(len(decoded), start + limit)
            if end <= start:
                return 0
            # the records handed out are made only now, from the batch's plain tuples
            out.extend(map(_new_tuple, repeat(ConsumerRecord, end - start), decoded[start:end]))
            self._next_index = end
            self.records_read += end - start
            self.next_fetch_offset = decoded[end - 1][2] + 1
            return end - start

        take_by_batch(self, sys.maxsize if n is None else n, take_rows, self._decode_next_batch)
        return out

    def exhausted(self) -> bool:
        """Nothing left to hand out or reach, and no error pending (not yet drained)."""
        return (self._cursor is None and self._next_index >= len(self._decoded)
                and self._next_inline_exception is None and not self._batches.has_next())

    def _decode_next_batch(self) -> bool:
        """Decode the next batch into ``_decoded``; False (and drained) after the last one."""
        if self._failure is not None:
            raise self._failure
        batch = self._batches.next_batch()
        if batch is None:
            last = self._last_batch
            if last is not None and last.magic == 2:
                # v2 keeps the last offset of a batch even when compaction removed its record
                self.next_fetch_offset = last.next_offset
            self.drain()
            return False
        self._last_batch = batch
        self._decoded = []
        self._next_index = 0
        self._cursor = None
        try:
            self._decoded = self._decode(batch)
        except Exception as exc:
            self._failure = exc
            raise
        self.bytes_read += batch.size_in_bytes
        return True

    def _take_decoded(self, out: list[ConsumerRecord], limit: int) -> int:
        """Up to ``limit`` records of the batch reached, decoded by kgroup's C decoder into ``out``."""
        if self._failure is not None:
            raise self._failure
        cursor = self._cursor
        assert cursor is not None
        buffer, pos, count, args = cursor
        try:
            got, cursor[1], left = self._fast_batch.decode(ConsumerRecord, buffer, pos, count, limit, *args)
        except ValueError as exc:
            self._failure = KErrors.CorruptRecordError(
                f"Found invalid record structure in partition {self.topic_partition}: {exc!r}")
            raise self._failure from exc
        cursor[2] = left
        if not left:
            self._cursor = None
        if not got:
            return 0
        out += got
        self.records_read += len(got)
        self.next_fetch_offset = got[-1][2] + 1
        return len(got)

    def _corrupt(self, batch: Any) -> Exception:
        error: Exception = KErrors.CorruptRecordError(
            f"Record batch for partition {self.topic_partition} at offset {batch.base_offset} failed crc check"
        )
        return error

    def _decode(self, batch: Any) -> list[RecordFields]:
        """The records of ``batch`` at or above the fetch offset, as plain tuples (:data:`RecordFields`).

        Plain tuples, not ``ConsumerRecord`` s: CPython's cyclic garbage collector stops tracking
        a plain tuple of strings, numbers and bytes at its first collection, but never a tuple
        subclass's instance, so a batch of thousands of ``ConsumerRecord`` s made at once would
        be carried into the older generations and walked by every full collection there (0.46 s
        of collections per million records of 100 B against 0.18 s this way, measured in
        ``benchmarks/results.md``). ``take`` makes the ``ConsumerRecord`` s it hands out.
        """
        tp = self.topic_partition
        topic, partition = tp.topic, tp.partition
        if batch.magic < 2:  # legacy message sets (brokers before 0.11): kafka-python per record
            legacy: list[RecordFields] = []
            for r in batch:
                if self.check_crcs and not r.validate_crc():
                    raise self._corrupt(batch)
                if r.offset >= self.fetch_offset:
                    legacy.append((topic, partition, r.offset, r.key, r.value, (), r.timestamp, r.timestamp_type, None))
            return legacy
        fast = self._fast_batch
        if isinstance(fast, ModuleType):  # kgroup._io._crecords
            return self._open(batch)
        source: Any = batch
        if fast is not None:
            source = fast(batch._buffer)  # the batch's bytes (kafka-python keeps a private copy)
        if self.check_crcs and not source.validate_crc():
            raise self._corrupt(batch)
        if fast is not None and batch.compression_type not in self._fast_codecs:
            source = batch  # a codec only kafka-python's libraries decompress
        if not self._hands_out(batch):
            return []
        epoch = batch.leader_epoch if batch.leader_epoch >= 0 else None
        records: list[RecordFields] = [
            (topic, partition, r.offset, r.key, r.value, tuple(h) if (h := r.headers) else (),
             r.timestamp, r.timestamp_type, epoch)
            for r in source
        ]
        if batch.base_offset < self.fetch_offset:  # a batch that starts before the fetch offset
            records = [r for r in records if r[2] >= self.fetch_offset]
        return records

    def _hands_out(self, batch: Any) -> bool:
        """Apply the batch's leader epoch and transactional rules (after its CRC check).

        False for an aborted transaction's batch under read_committed and for a control batch,
        which are skipped (the next fetch offset moved past them).
        """
        self.leader_epoch = batch.leader_epoch
        if self.isolation_level == IsolationLevel.READ_COMMITTED and batch.has_producer_id():
            self._consume_aborted_transactions_up_to(batch.last_offset)
            producer_id = batch.producer_id
            if self._contains_abort_marker(batch):
                self.aborted_producer_ids.discard(producer_id)
            elif self._is_batch_aborted(batch):
                self.next_fetch_offset = batch.next_offset
                return False
        if batch.is_control_batch:  # transaction markers are never handed out
            self.next_fetch_offset = batch.next_offset
            return False
        return True

    def _open(self, batch: Any) -> list[RecordFields]:
        """:meth:`_decode` for kgroup's C decoder: the batch's rules here, its records at ``take``.

        The CRC, the transactional rules and decompression (kafka-python's codecs) come first, as
        in :meth:`_decode`; the records are then parsed by :func:`kgroup._io._crecords.decode`
        only when :meth:`take` hands them out (``_cursor``), straight into ``ConsumerRecord`` s.
        Returns no decoded tuples (always ``[]``).
        """
        if self.check_crcs and not crc_matches(batch):
            raise self._corrupt(batch)
        if not self._hands_out(batch):
            return []
        tp = self.topic_partition
        epoch = batch.leader_epoch if batch.leader_epoch >= 0 else None
        timestamp_type = batch.timestamp_type
        iter(batch)  # decompresses the records (kafka-python's codecs); _buffer is then theirs
        self._cursor = [batch._buffer, batch._pos, batch.records_count, (
            tp.topic, tp.partition, batch.base_offset, batch.first_timestamp,
            batch.max_timestamp if timestamp_type == 1 else None, timestamp_type, epoch,
            # only a batch that starts before the fetch offset has records to skip (as _decode)
            self.fetch_offset if batch.base_offset < self.fetch_offset else _NO_MINIMUM,
        )]
        return []

