"""The adapter's batch decoder: ``record_decoder.PartitionRecords`` against kafka-python.

Record batches are built with kafka-python's own builders, so the bytes are what a broker sends.
Every test runs with each decoder: kgroup's own C extension (``kgroup._io._crecords``, built at
install time), aiokafka's C record extension and kafka-python's pure-Python ``DefaultRecordBatch``
(the fallback when neither is there).
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from kafka.errors import CorruptRecordError
from kafka.protocol.consumer import IsolationLevel
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from kafka.record.util import calc_crc32c
from kafka.structs import TopicPartition as KTopicPartition

from kgroup._io import record_decoder
from kgroup.types import ConsumerRecord

TP = KTopicPartition("orders", 3)
C_DECODER = record_decoder.load_aiokafka_decoder()
KGROUP_DECODER = record_decoder.load_batch_decoder()
DECODERS = [
    pytest.param((None, frozenset()), id="kafka-python"),
    pytest.param(C_DECODER, id="aiokafka-c",
                 marks=pytest.mark.skipif(C_DECODER[0] is None, reason="aiokafka's C extension not installed")),
    pytest.param(KGROUP_DECODER, id="kgroup-c"),
]
GZIP = 1
ATTR_OFFSET = 21  # attributes (int16); the CRC at 17 covers everything from here
CONTROL_BIT = 0x20
LOG_APPEND_BIT = 0x08


def batch(base: int, n: int, *, compression: int = 0, epoch: int = 5, first_ts: int = 1_700_000_000_000,
          transactional: bool = False, producer_id: int = -1, attrs_bits: int = 0,
          key: Any = b"k", headers: Any = None, last_offset_delta: int | None = None) -> bytes:
    """One v2 batch of ``n`` records at ``base``..; record i has value ``b"v<offset>"``."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=transactional, producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1, base_sequence=0 if producer_id >= 0 else -1,
        batch_size=1 << 20,
    )
    for i in range(n):
        builder.append(i, timestamp=first_ts + i, key=key, value=b"v%d" % (base + i), headers=headers or [])
    buf = bytearray(builder.build())
    struct.pack_into(">q", buf, 0, base)
    struct.pack_into(">i", buf, 12, epoch)  # partition leader epoch: not covered by the CRC
    if attrs_bits or last_offset_delta is not None:
        (attrs,) = struct.unpack_from(">h", buf, ATTR_OFFSET)
        struct.pack_into(">h", buf, ATTR_OFFSET, attrs | attrs_bits)
        if last_offset_delta is not None:
            struct.pack_into(">i", buf, ATTR_OFFSET + 2, last_offset_delta)
        struct.pack_into(">I", buf, 17, calc_crc32c(memoryview(buf)[ATTR_OFFSET:]))
    return bytes(buf)


def control_batch(base: int, producer_id: int, *, abort: bool) -> bytes:
    """A transaction marker: one control record, key = (version 0, type 0 abort / 1 commit)."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True,
                                        producer_id=producer_id, producer_epoch=0, base_sequence=-1,
                                        batch_size=1 << 20)
    builder.append(0, timestamp=1, key=struct.pack(">hh", 0, 0 if abort else 1), value=b"\x00\x00\x00\x00\x00\x00",
                   headers=[])
    buf = bytearray(builder.build())
    struct.pack_into(">q", buf, 0, base)
    (attrs,) = struct.unpack_from(">h", buf, ATTR_OFFSET)
    struct.pack_into(">h", buf, ATTR_OFFSET, attrs | CONTROL_BIT)
    struct.pack_into(">I", buf, 17, calc_crc32c(memoryview(buf)[ATTR_OFFSET:]))
    return bytes(buf)


def records(decoder: Any, data: bytes, *, fetch_offset: int = 0, **kwargs: Any) -> Any:
    drained: list[Any] = []
    part = record_decoder.PartitionRecords(decoder, fetch_offset, TP, MemoryRecords(data),
                                          on_drain=drained.append, **kwargs)
    part.drained = drained
    return part


def take_all(part: Any, n: int | None = None) -> list[ConsumerRecord]:
    out: list[ConsumerRecord] = []
    while part:
        out += part.take(n)
    return out


@pytest.mark.parametrize("decoder", DECODERS)
def test_every_field_reaches_the_record(decoder):
    headers = [("trace", b"abc"), ("empty", None)]
    data = batch(10, 3, headers=headers) + batch(13, 2, key=None, epoch=-1)
    got = take_all(records(decoder, data, fetch_offset=10))
    assert [r.offset for r in got] == [10, 11, 12, 13, 14]
    assert all(isinstance(r, ConsumerRecord) for r in got)
    first = got[0]
    assert first == ConsumerRecord("orders", 3, 10, b"k", b"v10", (("trace", b"abc"), ("empty", None)),
                                   1_700_000_000_000, 0, 5)
    assert first.topic_partition.partition == 3
    assert got[3].key is None and got[3].headers == () and got[3].leader_epoch is None
    assert [r.timestamp for r in got] == [1_700_000_000_000 + i for i in (0, 1, 2, 0, 1)]


@pytest.mark.parametrize("decoder", DECODERS)
def test_log_append_time_batches_report_the_batch_max_timestamp(decoder):
    got = take_all(records(decoder, batch(0, 3, attrs_bits=LOG_APPEND_BIT)))
    assert {r.timestamp_type for r in got} == {1}
    assert {r.timestamp for r in got} == {1_700_000_000_002}


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("n", [1, 2, 7, 500])
def test_take_honours_n_and_advances_the_fetch_offset(decoder, n):
    part = records(decoder, batch(0, 10) + batch(10, 5) + batch(15, 20))
    seen: list[int] = []
    while part:
        got = part.take(n)
        assert len(got) <= n
        if got:
            assert part.next_fetch_offset == got[-1].offset + 1
        seen += [r.offset for r in got]
    assert seen == list(range(35))
    assert part.next_fetch_offset == 35
    assert len(part.drained) == 1 and part.records_read == 35 and part.bytes_read > 0


@pytest.mark.parametrize("decoder", DECODERS)
def test_records_below_the_fetch_offset_are_skipped(decoder):
    # a broker returns whole batches, so a fetch from the middle of one starts before the offset
    got = take_all(records(decoder, batch(0, 10, compression=GZIP) + batch(10, 5), fetch_offset=7))
    assert [r.offset for r in got] == [7, 8, 9, 10, 11, 12, 13, 14]


@pytest.mark.parametrize("decoder", DECODERS)
def test_the_next_fetch_offset_comes_from_the_last_batch_header(decoder):
    # compaction removed the batch's last records; v2 keeps last_offset_delta, so fetch after it
    part = records(decoder, batch(0, 3, last_offset_delta=9))
    assert [r.offset for r in take_all(part)] == [0, 1, 2]
    assert part.next_fetch_offset == 10


@pytest.mark.parametrize("decoder", DECODERS)
def test_compressed_batches(decoder):
    got = take_all(records(decoder, batch(0, 50, compression=GZIP) + batch(50, 1)), 16)
    assert [r.offset for r in got] == list(range(51))
    assert got[49].value == b"v49"


def test_a_codec_the_c_decoder_lacks_falls_back_to_kafka_python():
    if C_DECODER[0] is None:
        pytest.skip("aiokafka's C extension not installed")
    got = take_all(records((C_DECODER[0], frozenset({0})), batch(0, 4, compression=GZIP)))
    assert [r.value for r in got] == [b"v0", b"v1", b"v2", b"v3"]


@pytest.mark.parametrize("decoder", DECODERS)
def test_a_corrupt_batch_raises_after_the_good_records_before_it_and_keeps_raising(decoder):
    bad = bytearray(batch(3, 3))
    bad[-2] ^= 0xFF  # a byte of the last record's value
    part = records(decoder, batch(0, 3) + bytes(bad) + batch(6, 3))
    assert [r.offset for r in part.take(10)] == [0, 1, 2]
    for _ in range(3):
        with pytest.raises(CorruptRecordError, match="offset 3"):
            part.take(10)
    assert part.next_fetch_offset == 3  # the position never passes the corrupt batch


@pytest.mark.parametrize("decoder", DECODERS)
def test_crc_checks_can_be_turned_off(decoder):
    bad = bytearray(batch(0, 2))
    bad[-2] ^= 0xFF
    got = take_all(records(decoder, bytes(bad), check_crcs=False))
    assert [r.offset for r in got] == [0, 1]


@pytest.mark.parametrize("decoder", DECODERS)
def test_control_batches_are_never_handed_out(decoder):
    data = batch(0, 2, transactional=True, producer_id=7) + control_batch(2, 7, abort=False) + batch(3, 1)
    part = records(decoder, data)
    assert [r.offset for r in take_all(part)] == [0, 1, 3]
    assert part.next_fetch_offset == 4


@pytest.mark.parametrize("decoder", DECODERS)
def test_read_committed_skips_aborted_transactions(decoder):
    class Aborted:
        producer_id = 7
        first_offset = 0

    data = (batch(0, 2, transactional=True, producer_id=7) + control_batch(2, 7, abort=True)
            + batch(3, 2, transactional=True, producer_id=8) + control_batch(5, 8, abort=False))
    committed = records(decoder, data, isolation_level=IsolationLevel.READ_COMMITTED,
                        aborted_transactions=[Aborted()])
    assert [r.offset for r in take_all(committed)] == [3, 4]
    assert committed.next_fetch_offset == 6
    uncommitted = records(decoder, data, aborted_transactions=[Aborted()])
    assert [r.offset for r in take_all(uncommitted)] == [0, 1, 3, 4]


@pytest.mark.parametrize("decoder", DECODERS)
def test_legacy_message_sets(decoder):
    builder = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    for i in range(3):
        builder.append(i, timestamp=1000 + i, key=None, value=b"old%d" % i)
    got = take_all(records(decoder, bytes(builder.build()), fetch_offset=1))
    assert [(r.offset, r.value, r.timestamp, r.headers, r.leader_epoch) for r in got] == [
        (1, b"old1", 1001, (), None), (2, b"old2", 1002, (), None)]


@pytest.mark.parametrize("decoder", DECODERS)
def test_an_empty_fetch_drains_at_once(decoder):
    part = records(decoder, b"", fetch_offset=42)
    assert part.take(5) == []
    assert not part and part.next_fetch_offset == 42


def test_the_c_decoders_are_used_when_installed():
    """kgroup's C decoder is built by the install (a compiler is there wherever the tests run), and
    chosen first; aiokafka's is the one after it."""
    from kgroup._io import _crecords

    assert record_decoder.load_batch_decoder() == (_crecords, frozenset({0, 1, 2, 3, 4}))
    if C_DECODER[0] is not None:
        assert type(C_DECODER[0]).__name__ == "type" and "_crecords" in C_DECODER[0].__module__
        assert 0 in C_DECODER[1]


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("taken", [0, 2])
def test_a_response_not_drained_is_freed_without_the_cyclic_collector(decoder, taken):
    """Dropped before it is drained (the columnar decoder took it over, a seek, a revocation), a
    partition's records and the response buffer they view go at once, not at a full collection."""
    import gc
    import weakref

    class Buffer(bytearray):  # weak-referenceable, like the response buffers of the receive path
        pass

    response = Buffer(batch(0, 5))
    buffer_ref = weakref.ref(response)
    part = records(decoder, memoryview(response))
    if taken:
        assert [r.offset for r in part.take(taken)] == [0, 1]
    assert part  # not drained
    part_ref = weakref.ref(part)
    enabled = gc.isenabled()
    gc.disable()
    try:
        del part, response
        assert part_ref() is None
        assert buffer_ref() is None
    finally:
        if enabled:
            gc.enable()
