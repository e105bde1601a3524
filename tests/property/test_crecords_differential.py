"""kgroup's C record decoder (``kgroup._io._crecords``) against kafka-python's pure-Python one.

Random record batches (null and non-null keys and values, headers with null values, every codec,
create and log-append time, fetch offsets inside a batch, takes of random sizes) are handed out by
``record_decoder.PartitionRecords`` with each decoder; the records, the next fetch offset and the
leader epoch must be the same. Corrupt bytes (CRC checks off, so the structure is what breaks)
raise ``CorruptRecordError`` after the good records, never anything else and never a crash; and the
C function itself, given arbitrary bytes, raises ``ValueError`` or returns, never reads past them.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.errors import CorruptRecordError
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from kafka.record.util import calc_crc32c
from kafka.structs import TopicPartition as KTopicPartition

from kgroup._io import _crecords, record_decoder  # built at install (hatch_build.py)
from kgroup.types import ConsumerRecord

TP = KTopicPartition("orders", 3)
PURE = (None, frozenset())
KGROUP_C = record_decoder.load_batch_decoder()
ATTR_OFFSET = 21
LOG_APPEND_BIT = 0x08
RECORDS_START = 61  # the first record of a v2 batch

nullable = st.one_of(st.none(), st.binary(max_size=40))
header = st.tuples(st.text(max_size=8), nullable)
record = st.tuples(nullable, nullable, st.lists(header, max_size=3), st.integers(0, 3))  # key, value, headers, gap


@st.composite
def batches(draw: Any) -> tuple[bytes, int, int]:
    """Some v2 batches back to back: (bytes, first offset, offset after the last)."""
    offset = draw(st.integers(0, 1 << 40))
    first = offset
    out = b""
    for _ in range(draw(st.integers(1, 3))):
        compression = draw(st.sampled_from([0, 1, 2, 3, 4]))
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=compression, is_transactional=False,
                                            producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                            batch_size=1 << 20)
        delta = 0
        ts = draw(st.integers(0, 1 << 41))
        for key, value, headers, gap in draw(st.lists(record, min_size=1, max_size=30)):
            builder.append(delta, timestamp=ts + delta * 3 - 5, key=key, value=value, headers=headers)
            delta += 1 + gap
        buf = bytearray(builder.build())
        struct.pack_into(">q", buf, 0, offset)
        struct.pack_into(">i", buf, 12, draw(st.sampled_from([-1, 0, 7])))
        if draw(st.booleans()):
            (attrs,) = struct.unpack_from(">h", buf, ATTR_OFFSET)
            struct.pack_into(">h", buf, ATTR_OFFSET, attrs | LOG_APPEND_BIT)
            struct.pack_into(">I", buf, 17, calc_crc32c(memoryview(buf)[ATTR_OFFSET:]))
        out += bytes(buf)
        offset += delta
    return out, first, offset


def hand_out(decoder: Any, data: bytes, fetch_offset: int, takes: list[int], **kwargs: Any) -> dict[str, Any]:
    part = record_decoder.PartitionRecords(decoder, fetch_offset, TP, MemoryRecords(data), **kwargs)
    records: list[ConsumerRecord] = []
    error: Exception | None = None
    steps = iter(takes)
    try:
        while part:
            got = part.take(next(steps, None))
            assert all(type(r) is ConsumerRecord for r in got)
            records += got
    except Exception as exc:
        error = exc
    return {"records": [tuple(r) for r in records], "error": error, "next_fetch_offset": part.next_fetch_offset,
            "leader_epoch": part.leader_epoch, "part": part}


@given(batches(), st.data())
def test_the_c_decoder_hands_out_what_kafka_python_does(made: tuple[bytes, int, int], data: Any) -> None:
    raw, first, end = made
    fetch_offset = data.draw(st.integers(first, end), label="fetch_offset")
    takes = data.draw(st.lists(st.integers(1, 40), max_size=8), label="takes")
    want = hand_out(PURE, raw, fetch_offset, takes)
    got = hand_out(KGROUP_C, raw, fetch_offset, takes)
    assert want["error"] is None and got["error"] is None
    del want["part"], got["part"]
    assert got == want


def _varint(buf: bytes, pos: int, bits: int = 32) -> tuple[int, int]:
    """A zigzag varint (protobuf's) at ``pos``: (value, next position); ValueError past the end."""
    raw = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")
    value = (raw >> 1) ^ -(raw & 1)
    if bits == 32 and not -(1 << 31) <= value < (1 << 31):
        raise ValueError("varint out of range")
    return value, pos


def reference_records(buf: bytes, count: int, base_offset: int, first_ts: int) -> list[tuple[Any, ...]]:
    """The records section parsed by Java's rules (``DefaultRecord.readFrom``), as (offset, key,
    value, headers, timestamp); ValueError (or UnicodeDecodeError) where Java throws."""
    out = []
    pos = 0
    for _ in range(count):
        length, pos = _varint(buf, pos)
        if length < 0 or length > len(buf) - pos:
            raise ValueError("record size")
        end = pos + length
        body = buf[:end]
        if pos >= end:
            raise ValueError("no attributes")
        pos += 1  # attributes: one byte
        ts_delta, pos = _varint(body, pos, 64)
        offset_delta, pos = _varint(body, pos)
        fields = []
        for _ in range(2):
            n, pos = _varint(body, pos)
            if n < 0:
                fields.append(None)
                continue
            if n > end - pos:
                raise ValueError("truncated bytes")
            fields.append(body[pos:pos + n])
            pos += n
        nheaders, pos = _varint(body, pos)
        if nheaders < 0:
            raise ValueError("negative header count")
        headers = []
        for _ in range(nheaders):
            klen, pos = _varint(body, pos)
            if klen < 0 or klen > end - pos:
                raise ValueError("header key size")
            hkey = body[pos:pos + klen].decode("utf-8")
            pos += klen
            vlen, pos = _varint(body, pos)
            if vlen < 0:
                headers.append((hkey, None))
                continue
            if vlen > end - pos:
                raise ValueError("truncated header value")
            headers.append((hkey, body[pos:pos + vlen]))
            pos += vlen
        if pos != end:
            raise ValueError("record size mismatch")
        out.append((base_offset + offset_delta, fields[0], fields[1], tuple(headers), first_ts + ts_delta))
    if pos != len(buf):
        raise ValueError("bytes after the last record")
    return out


@given(batches(), st.data())
def test_corrupt_records_decode_by_javas_rules(made: tuple[bytes, int, int], data: Any) -> None:
    """A byte of an uncompressed records section changed: the C decoder hands out what Java's
    rules read (a changed value, length or count), or raises ValueError where they throw; and
    a partition's records raise CorruptRecordError (after the good batches before), again and again."""
    raw, _, _ = made
    (length,) = struct.unpack_from(">i", raw, 8)
    (attrs,) = struct.unpack_from(">h", raw, ATTR_OFFSET)
    if attrs & 0x07:
        raw = raw[12 + length:] or raw  # the next batch, if any
        (length,) = struct.unpack_from(">i", raw, 8)
        (attrs,) = struct.unpack_from(">h", raw, ATTR_OFFSET)
    if attrs & 0x07:
        return  # every batch compressed: the codec's checks come first (the test above)
    section = bytearray(raw[RECORDS_START:12 + length])
    at = data.draw(st.integers(0, len(section) - 1), label="at")
    section[at] = data.draw(st.integers(0, 255).filter(lambda b: b != section[at]), label="byte")
    (base_offset,) = struct.unpack_from(">q", raw, 0)
    (first_ts,) = struct.unpack_from(">q", raw, 27)
    (count,) = struct.unpack_from(">i", raw, 57)
    try:
        want: list[tuple[Any, ...]] | None = reference_records(bytes(section), count, base_offset, first_ts)
    except ValueError:
        want = None
    limit = data.draw(st.integers(1, count + 1), label="limit")
    got: list[tuple[Any, ...]] = []
    pos, left = 0, count
    try:
        while left:
            records, pos, left = _crecords.decode(ConsumerRecord, bytes(section), pos, left, limit, "t", 0,
                                                  base_offset, first_ts, None, 0, None, -(1 << 63))
            got += [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in records]
    except ValueError:
        assert want is None, "the C decoder refused what Java's rules read"
        assert got == [] or got == reference_prefix(bytes(section), len(got), base_offset, first_ts)
    else:
        assert got == want
    # the same batch in a partition's records, CRC checks off: CorruptRecordError, kept
    broken = raw[:RECORDS_START] + bytes(section) + raw[12 + length:]
    part = record_decoder.PartitionRecords(KGROUP_C, base_offset, TP, MemoryRecords(broken), check_crcs=False)
    if want is None:
        takes = iter(data.draw(st.lists(st.integers(1, 40), max_size=6), label="takes"))

        def drain() -> None:
            while part:
                part.take(next(takes, None))

        with pytest.raises(CorruptRecordError):
            drain()
        with pytest.raises(CorruptRecordError):
            part.take(None)


def reference_prefix(section: bytes, n: int, base_offset: int, first_ts: int) -> list[tuple[Any, ...]]:
    """The first ``n`` records by Java's rules (those before the one that breaks)."""
    out = []
    pos = 0
    for _ in range(n):
        length, after = _varint(section, pos)
        out += reference_records(section[pos:after + length], 1, base_offset, first_ts)
        pos = after + length
    return out


@given(st.binary(max_size=200), st.integers(-2, 210), st.integers(-1, 40), st.integers(0, 50),
       st.integers(-(1 << 63), (1 << 63) - 1))
def test_arbitrary_bytes_raise_value_error_or_decode(buffer: bytes, pos: int, count: int, limit: int,
                                                     base_offset: int) -> None:
    try:
        records, new_pos, left = _crecords.decode(ConsumerRecord, buffer, pos, count, limit, "t", 0, base_offset,
                                                  0, None, 0, None, -(1 << 63))
    except ValueError:  # UnicodeDecodeError too
        return
    assert 0 <= pos <= new_pos <= len(buffer)
    assert 0 <= left <= count and len(records) == count - left <= limit
    assert all(type(r) is ConsumerRecord and len(r) == 9 for r in records)
