"""The columnar decoder (``kgroup._io.columnar``) against the record decoder, column by column.

Record batches are built with kafka-python's own ``DefaultRecordBatchBuilder`` (the bytes a
broker sends), then decoded by :func:`decode_record_set` and by
``record_decoder.PartitionRecords`` (aiokafka's C decoder when installed, else kafka-python's),
and every column, the next fetch offset and the leader epoch must agree; errors must come after
the same records.
"""

from __future__ import annotations

import struct
from typing import Any

import kafka.codec as kcodec
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.errors import CorruptRecordError
from kafka.protocol.consumer import IsolationLevel
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from kafka.record.util import calc_crc32c
from kafka.structs import TopicPartition as KTopicPartition

from kgroup._io import columnar, record_decoder
from kgroup._io.columnar import HEADERS_TYPE, decode_record_set

TP = KTopicPartition("orders", 3)
DECODER = record_decoder.load_batch_decoder()
ATTR_OFFSET = 21
CONTROL_BIT = 0x20
LOG_APPEND_BIT = 0x08
TS = 1_700_000_000_000
# every codec, none skipped: the test extra installs kafka-python's lz4, snappy and zstd extras
CODECS = [0, 1, 2, 3, 4]
assert all(has() for has in (kcodec.has_gzip, kcodec.has_snappy, kcodec.has_lz4, kcodec.has_zstd)), (
    "install the test extra: pip install -e '.[test]' (kafka-python[lz4,snappy,zstd])"
)

Record = tuple[int, int, Any, Any, list[tuple[str, Any]]]  # offset delta, timestamp, key, value, headers


def build(base: int, recs: list[Record], *, codec: int = 0, epoch: int = 5, log_append: bool = False,
          transactional: bool = False, producer_id: int = -1, control: bool = False,
          last_offset_delta: int | None = None) -> bytes:
    """One v2 batch at ``base`` of ``recs`` (offset deltas as given: gaps are compacted records)."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=transactional, producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1, base_sequence=0 if producer_id >= 0 else -1,
        batch_size=1 << 24)
    for delta, ts, key, value, headers in recs:
        builder.append(delta, timestamp=ts, key=key, value=value, headers=headers)
    buf = bytearray(builder.build())
    struct.pack_into(">q", buf, 0, base)
    struct.pack_into(">i", buf, 12, epoch)  # partition leader epoch: not covered by the CRC
    bits = (CONTROL_BIT if control else 0) | (LOG_APPEND_BIT if log_append else 0)
    if bits or last_offset_delta is not None:
        (attrs,) = struct.unpack_from(">h", buf, ATTR_OFFSET)
        struct.pack_into(">h", buf, ATTR_OFFSET, attrs | bits)
        if last_offset_delta is not None:
            struct.pack_into(">i", buf, ATTR_OFFSET + 2, last_offset_delta)
        struct.pack_into(">I", buf, 17, calc_crc32c(memoryview(buf)[ATTR_OFFSET:]))
    return bytes(buf)


def simple(base: int, n: int, *, key: Any = b"k", headers: Any = None, size: int = 0, **kwargs: Any) -> bytes:
    return build(base, [(i, TS + i, key, b"v%d" % (base + i) + bytes(size), headers or []) for i in range(n)],
                 **kwargs)


def control_batch(base: int, producer_id: int, *, abort: bool) -> bytes:
    return build(base, [(0, 1, struct.pack(">hh", 0, 0 if abort else 1), bytes(6), [])], transactional=True,
                 producer_id=producer_id, control=True)


class Reference:
    """What ``record_decoder.PartitionRecords`` hands out for the same bytes."""

    def __init__(self, data: bytes, fetch_offset: int = 0, **kwargs: Any) -> None:
        part = record_decoder.PartitionRecords(DECODER, fetch_offset, TP, MemoryRecords(data), **kwargs)
        self.records: list[Any] = []
        self.error: Exception | None = None
        try:
            while part:
                self.records += part.take(None)
        except Exception as exc:
            self.error = exc
        self.next_fetch_offset = part.next_fetch_offset
        self.leader_epoch = part.leader_epoch


def decode(data: bytes, fetch_offset: int = 0, **kwargs: Any) -> Any:
    return decode_record_set(data, fetch_offset, topic_partition=TP, **kwargs)


def assert_same(data: bytes, fetch_offset: int = 0, *, read_committed: bool = False, check_crcs: bool = True,
                aborted: Any = ()) -> Any:
    """Decode ``data`` both ways and compare everything; the columnar result."""
    isolation = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
    ref = Reference(data, fetch_offset, check_crcs=check_crcs, aborted_transactions=list(aborted),
                    isolation_level=isolation)
    got = decode(data, fetch_offset, check_crcs=check_crcs, read_committed=read_committed, aborted_transactions=aborted)
    assert got is not None
    recs = ref.records
    assert got.offsets.dtype == np.int64 and got.timestamps.dtype == np.int64
    assert got.timestamp_types.dtype == np.int32
    assert got.offsets.tolist() == [r.offset for r in recs]
    assert got.timestamps.tolist() == [r.timestamp for r in recs]
    assert got.timestamp_types.tolist() == [r.timestamp_type for r in recs]
    assert got.keys.type == pa.binary() and got.values.type == pa.binary()
    assert got.keys.to_pylist() == [r.key for r in recs]
    assert got.values.to_pylist() == [r.value for r in recs]
    assert got.headers.type == HEADERS_TYPE
    assert [tuple((h["key"], h["value"]) for h in hs) for hs in got.headers.to_pylist()] == [r.headers for r in recs]
    for array in (got.keys, got.values, got.headers):
        array.validate(full=True)
    assert sum(b.rows for b in got.batches) == len(recs)
    if ref.error is None:
        assert got.error is None
        assert (got.next_offset if got.batches else fetch_offset) == ref.next_fetch_offset
        assert (got.batches[-1].leader_epoch if got.batches else -1) == ref.leader_epoch
    else:
        assert got.error is not None
        assert type(got.error) is type(ref.error) or isinstance(got.error, CorruptRecordError)
    return got


def test_every_field_of_plain_batches():
    headers = [("trace", b"abc"), ("empty", None), ("", b"")]
    data = simple(10, 3, headers=headers) + simple(13, 2, key=None, epoch=7) + simple(15, 70, size=200)
    got = assert_same(data, 10)
    assert got.offsets.tolist() == list(range(10, 85))
    assert got.headers[0].as_py() == [{"key": "trace", "value": b"abc"}, {"key": "empty", "value": None},
                                      {"key": "", "value": b""}]
    assert got.leader_epochs == [5, 7, 5]
    assert got.next_offset == 85


def test_null_and_empty_keys_and_values():
    recs: list[Record] = [(0, TS, None, None, []), (1, TS, b"", b"", []), (2, TS, b"k", None, []),
                          (3, TS, None, b"v", [("h", None)]), (4, TS, b"x" * 300, b"y" * 70000, [])]
    got = assert_same(build(0, recs))
    assert got.keys.null_count == 2 and got.values.null_count == 2


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec(codec):
    data = simple(0, 100, codec=codec, size=50) + simple(100, 3, codec=codec, headers=[("a", b"b")])
    got = assert_same(data)
    assert len(got) == 103


def test_log_append_time_gives_every_record_the_batch_max_timestamp():
    got = assert_same(simple(0, 3, log_append=True) + simple(3, 2))
    assert got.timestamp_types.tolist() == [1, 1, 1, 0, 0]
    assert got.timestamps.tolist()[:3] == [TS + 2] * 3


@pytest.mark.parametrize("fetch_offset", [0, 1, 7, 9, 10, 12, 15])
def test_records_below_the_fetch_offset_are_dropped(fetch_offset):
    got = assert_same(simple(0, 10, codec=CODECS[-1]) + simple(10, 5), fetch_offset)
    assert got.offsets.tolist() == list(range(fetch_offset, 15))


def test_a_truncated_trailing_batch_is_ignored():
    whole = simple(0, 5) + simple(5, 5)
    for cut in (1, 11, 12, 40, 70, 100):
        got = assert_same(whole + simple(10, 5)[:cut])
        assert got.next_offset == 10


def test_the_next_fetch_offset_comes_from_the_last_batch_header():
    got = assert_same(simple(0, 3, last_offset_delta=9))
    assert got.next_offset == 10


def test_compacted_offset_gaps():
    recs: list[Record] = [(0, TS, b"a", b"1", []), (3, TS + 5, b"b", b"2", []), (64, TS + 9000, b"c", b"3", [])]
    got = assert_same(build(100, recs, last_offset_delta=70))
    assert got.offsets.tolist() == [100, 103, 164]
    assert got.next_offset == 171


def test_control_batches_are_skipped():
    data = (simple(0, 2, transactional=True, producer_id=7) + control_batch(2, 7, abort=False) + simple(3, 1)
            + control_batch(4, 7, abort=False))
    got = assert_same(data)
    assert got.offsets.tolist() == [0, 1, 3]
    assert got.next_offset == 5
    assert [b.control for b in got.batches] == [False, True, False, True]


class Aborted:
    producer_id = 7
    first_offset = 0


def test_read_committed_without_aborted_transactions_is_decoded():
    data = simple(0, 2, transactional=True, producer_id=7) + control_batch(2, 7, abort=False) + simple(3, 2)
    got = assert_same(data, read_committed=True)
    assert got.offsets.tolist() == [0, 1, 3, 4]


def test_read_committed_skips_the_batches_of_aborted_transactions():
    data = simple(0, 2, transactional=True, producer_id=7) + control_batch(2, 7, abort=True) + simple(3, 2)
    got = assert_same(data, read_committed=True, aborted=[Aborted()])
    assert got.offsets.tolist() == [3, 4]
    assert [(b.rows, b.control) for b in got.batches] == [(0, True), (0, True), (2, False)]
    # read_uncommitted hands out aborted records (Java's rule)
    assert assert_same(data, aborted=[Aborted()]).offsets.tolist() == [0, 1, 3, 4]
    # no transactional data batch: nothing to skip
    assert_same(simple(0, 2) + simple(2, 2), read_committed=True, aborted=[Aborted()])


class Txn:
    def __init__(self, producer_id: int, first_offset: int) -> None:
        self.producer_id = producer_id
        self.first_offset = first_offset


#: one batch of a transactional log: (producer id, None: a data batch / True: an abort / False: a commit marker,
#: records, transactional)
txn_batch_st = st.tuples(st.integers(0, 2), st.sampled_from([None, None, True, False]), st.integers(1, 4),
                         st.booleans(), st.sampled_from([0, 3]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=st.lists(txn_batch_st, min_size=1, max_size=10), fetch_skip=st.integers(0, 20),
       listed=st.lists(st.integers(0, 9), max_size=3), read_committed=st.booleans())
def test_transactional_logs_decode_like_the_record_decoder(log, fetch_skip, listed, read_committed):
    """Aborted transactions, commit and abort markers, producers interleaved: the record decoder's records."""
    data = b""
    base = 0
    aborted: list[Txn] = []
    open_since: dict[int, int] = {}
    for producer, marker, n, transactional, codec in log:
        if marker is not None:
            if marker and producer in open_since:
                aborted.append(Txn(producer, open_since[producer]))
            open_since.pop(producer, None)
            data += control_batch(base, producer, abort=marker)
            base += 1
            continue
        if transactional:
            open_since.setdefault(producer, base)
        data += simple(base, n, transactional=transactional, producer_id=producer if transactional else -1,
                       codec=codec, headers=[("p", b"%d" % producer)] if n % 2 else None)
        base += n
    extra = [Txn(i % 3, base * i // 10) for i in listed]  # the broker may list more than this log shows
    assert_same(data, min(fetch_skip, base), read_committed=read_committed, aborted=aborted + extra)


def test_legacy_message_sets_are_left_to_the_record_decoder():
    builder = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    builder.append(0, timestamp=TS, key=b"k", value=b"v")
    assert decode(bytes(builder.build())) is None
    assert decode(simple(0, 2) + bytes(builder.build())) is None


def corrupt(data: bytes, at: int) -> bytes:
    buf = bytearray(data)
    buf[at] ^= 0xFF
    return bytes(buf)


def test_a_crc_failure_comes_after_the_records_of_the_batches_before_it():
    data = simple(0, 3) + corrupt(simple(3, 3), -2) + simple(6, 3)
    got = assert_same(data)
    assert got.offsets.tolist() == [0, 1, 2]
    assert isinstance(got.error, CorruptRecordError) and "crc" in str(got.error)
    assert got.next_offset is None and got.error_leader_epoch is None


def test_a_crc_failure_in_the_first_batch():
    got = assert_same(corrupt(simple(0, 3), 30))
    assert len(got) == 0 and got.batches == () and isinstance(got.error, CorruptRecordError)


@pytest.mark.parametrize("field_at", [61, 62, 64, 65, 66, 70])
def test_corrupt_records_without_crc_checks(field_at):
    # structure broken in the second batch (a record's length, attributes, deltas or lengths)
    second = bytearray(simple(3, 3))
    second[field_at] = 0x7F if second[field_at] != 0x7F else 0x01
    data = simple(0, 3) + bytes(second) + simple(6, 3)
    ref = Reference(data, check_crcs=False)
    got = decode(data, check_crcs=False)
    assert got is not None
    if ref.error is None:  # a byte no decoder reads (the attributes)
        assert_same(data, check_crcs=False)
        return
    assert got.error is not None
    assert got.offsets.tolist()[:3] == [0, 1, 2]
    assert len(got) <= len(ref.records)


def test_a_batch_shorter_than_its_header_is_corrupt():
    data = simple(0, 2)
    short = bytearray(data[:40])
    struct.pack_into(">i", short, 8, 40 - 12)
    got = decode(data + bytes(short))
    assert got.offsets.tolist() == [0, 1] and isinstance(got.error, CorruptRecordError)


def test_an_unknown_codec_is_an_error_after_the_records_before_it():
    bad = bytearray(simple(3, 2))
    (attrs,) = struct.unpack_from(">h", bad, ATTR_OFFSET)
    struct.pack_into(">h", bad, ATTR_OFFSET, attrs | 0x07)
    struct.pack_into(">I", bad, 17, calc_crc32c(memoryview(bad)[ATTR_OFFSET:]))
    got = decode(simple(0, 3) + bytes(bad))
    assert got.offsets.tolist() == [0, 1, 2] and got.error is not None


def test_records_of_varied_sizes_take_the_stepping_path(monkeypatch):
    recs: list[Record] = [(i, TS + i * 37, b"k" * (i % 5), b"v" * ((i * 7919) % 300), []) for i in range(400)]
    data = build(0, recs) + build(400, recs[:50])
    assert_same(data)
    monkeypatch.setattr(columnar, "_GUESS_ROUNDS", 0)  # every record stepped through
    assert_same(data)


def test_empty_and_partial_inputs():
    assert len(decode(b"")) == 0
    got = decode(simple(0, 3)[:50])
    assert len(got) == 0 and got.error is None and got.next_offset is None


records_st = st.lists(
    st.tuples(
        st.integers(0, 3),  # offset gap before the record
        st.integers(-5, 100_000),  # timestamp delta
        st.one_of(st.none(), st.binary(max_size=20)),
        st.one_of(st.none(), st.binary(max_size=300)),
        st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))), max_size=2),
    ),
    min_size=0, max_size=40,
)
batch_st = st.tuples(records_st, st.sampled_from(CODECS), st.booleans(), st.booleans(), st.integers(0, 3),
                     st.integers(-1, 9))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(batch_st, min_size=1, max_size=6), fetch_skip=st.integers(0, 60),
       cut=st.integers(0, 80), uniform=st.booleans())
def test_random_record_sets_decode_like_the_record_decoder(batches, fetch_skip, cut, uniform):
    data = b""
    base = 0
    for recs, codec, log_append, control, extra, epoch in batches:
        if control:
            data += control_batch(base, 7, abort=False)
            base += 1
            continue
        if uniform:  # same-size records: the stride guessing finds them
            recs = [(1, 0, b"key", b"value", []) for _ in recs]
        built: list[Record] = []
        delta = -1
        for gap, ts, key, value, headers in recs:
            delta += 1 + gap
            built.append((delta, TS + ts, key, value, headers))
        if not built:
            continue
        data += build(base, built, codec=codec, log_append=log_append, epoch=epoch,
                      last_offset_delta=delta + extra)
        base += delta + extra + 1
    data += simple(base, 3)[:cut]  # maybe a partial batch at the end
    assert_same(data, min(fetch_skip, base))


@pytest.mark.parametrize("change", [-1, 1])
def test_a_record_count_that_does_not_match_the_records_is_corrupt(change):
    bad = bytearray(simple(3, 4, size=10))
    struct.pack_into(">i", bad, 57, 4 + change)  # the records count, CRC'd: recompute the CRC
    struct.pack_into(">I", bad, 17, calc_crc32c(memoryview(bad)[ATTR_OFFSET:]))
    data = simple(0, 3) + bytes(bad) + simple(7, 2)
    got = assert_same(data)
    assert got.offsets.tolist() == [0, 1, 2] and isinstance(got.error, CorruptRecordError)


def test_kafka_python_s_crc_when_aiokafka_is_not_installed(monkeypatch):
    monkeypatch.setattr(columnar, "_crc32c", calc_crc32c)
    got = assert_same(simple(0, 3) + corrupt(simple(3, 3), -2))
    assert got.offsets.tolist() == [0, 1, 2] and "crc" in str(got.error)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=st.lists(txn_batch_st, min_size=1, max_size=10), window=st.integers(1, 400), cut=st.integers(0, 60),
       bad=st.integers(-1, 4))
def test_windows_decoded_one_after_the_other_give_the_whole_response(log, window, cut, bad):
    """``split_batches``: windows of whole batches, decoded in turn with one ``AbortedTransactions``."""
    data = b""
    base = 0
    aborted: list[Txn] = []
    for producer, marker, n, transactional, codec in log:
        if marker is not None:
            aborted += [Txn(producer, max(0, base - 3))] if marker else []
            data += control_batch(base, producer, abort=marker)
            base += 1
            continue
        data += simple(base, n, transactional=transactional, producer_id=producer if transactional else -1,
                       codec=codec, headers=[("h", b"x")] if n % 2 else None)
        base += n
    if bad >= 0:
        data = corrupt(data, min(len(data) - 1, 25 + bad * 40))
    data += simple(base, 3)[:cut]
    whole = decode(data, read_committed=True, aborted_transactions=aborted)
    windows = columnar.split_batches(data, window)
    assert b"".join(bytes(w) for w in windows) == data
    state = columnar.AbortedTransactions(aborted) if aborted else None
    parts = []
    for w in windows:
        parts.append(decode(w, read_committed=True, transactions=state))
        if parts[-1].error is not None:
            break
    assert np.concatenate([p.offsets for p in parts]).tolist() == whole.offsets.tolist()
    assert [v for p in parts for v in p.values.to_pylist()] == whole.values.to_pylist()
    assert [h for p in parts for h in p.headers.to_pylist()] == whole.headers.to_pylist()
    assert [b for p in parts for b in p.batches] == list(whole.batches)
    assert type(parts[-1].error) is type(whole.error)
    assert str(parts[-1].error) == str(whole.error)
