"""``PipelinedFetcher.fetch_columns`` with the columnar decoder: the hand-out of ``fetch``, to the offset.

On the fake network of ``tests/unit/test_fetch_pipeline.py``: the same steps run once through
``fetch`` (records from ``record_decoder.PartitionRecords``) and once through ``fetch_columns``
(columns from ``kgroup._io.columnar``), and every row, error, position and next Fetch must agree;
each case checks that the columnar decoder really handed its rows out.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kgroup
from kgroup import _error_codes as codes
from kgroup._io import fetch_pipeline, record_decoder
from tests.unit.test_columnar_decoder import build, control_batch, corrupt, simple
from tests.unit.test_fetch_pipeline import P0, P1, answer, make, start
from tests.unit.test_fetch_pipeline import _outcomes as _pipeline_outcomes

CODEC = 3  # lz4: the test extra installs it


@pytest.fixture
def decoded_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Rows handed out as decoded columns, counted (a case that never used the decoder proves nothing)."""
    counted: list[int] = []
    of_decoded = fetch_pipeline.RecordColumns.of_decoded.__func__  # type: ignore[attr-defined]

    def counting(cls: Any, tp: Any, decoded: Any, begin: int, end: int) -> Any:
        counted.append(end - begin)
        return of_decoded(cls, tp, decoded, begin, end)

    monkeypatch.setattr(fetch_pipeline.RecordColumns, "of_decoded", classmethod(counting))
    return counted


def _epochs(fetcher: Any) -> Any:
    """The positions with their leader epochs (``fetch`` and ``fetch_columns`` must agree on both)."""
    positions = [fetcher._subscription.assignment[record_decoder.kafka_tp(tp)].position for tp in (P0, P1)]
    return [(p.offset, p.leader_epoch) if p is not None else None for p in positions]


def _outcomes(columnar: bool | str, decoder: Any, steps: list[Any], **config: Any) -> list[Any]:
    """``tests/unit/test_fetch_pipeline.py``'s ``_outcomes``, with the positions' leader epochs."""
    return _pipeline_outcomes(columnar, decoder, steps, _epochs, **config)


def differential(steps: list[Any], reference: Any = None, **config: Any) -> list[Any]:
    """``steps`` through ``fetch`` (``reference``'s record decoder: the default one when None) and ``fetch_columns``."""
    reference = reference or record_decoder.load_batch_decoder()
    expected = _outcomes(False, reference, steps, **config)
    assert any(isinstance(o, list) and o for o in expected), "the case hands out records"
    got = _outcomes(True, record_decoder.load_batch_decoder(), steps, **config)
    assert got == expected
    assert _outcomes("poll", record_decoder.load_batch_decoder(), steps, **config) == expected
    return got


HEADERS = [("trace", b"abc"), ("empty", None)]
CASES = [
    pytest.param({}, [("fetch", 5), ("answer", 0, {P0: simple(0, 3, headers=HEADERS) + simple(3, 4, key=None)
                                                   + simple(7, 2, log_append=True), P1: simple(0, 6)}, None)]
                 + [("fetch", 4)] * 6, id="headers-nulls-log-append-time"),
    pytest.param({}, [("fetch", 5), ("answer", 0, {P0: simple(0, 40, codec=CODEC) + simple(40, 3, codec=CODEC),
                                                   P1: simple(0, 2)}, None)] + [("fetch", 7)] * 8,
                 id="compressed"),
    pytest.param({}, [("fetch", 5), ("answer", 0, {P0: simple(0, 3) + simple(3, 3), P1: simple(0, 3)}, None)]
                 + [("fetch", 3)] * 4, id="takes-ending-on-batch-ends"),
    pytest.param({}, [("fetch", 5), ("answer", 0, {P0: simple(0, 3) + control_batch(3, 7, abort=False)
                                                   + control_batch(4, 7, abort=False), P1: simple(0, 3)}, None)]
                 + [("fetch", 3)] * 4, id="control-batches-after-the-last-record"),
    pytest.param({}, [("fetch", 5), ("answer", 0, {P0: simple(0, 3, last_offset_delta=6) + simple(7, 2)[:40],
                                                   P1: simple(0, 3)}, None)] + [("fetch", 2)] * 4,
                 id="compacted-end-and-partial-batch"),
    pytest.param({"check_crcs": True},
                 [("fetch", 5), ("answer", 0, {P0: simple(0, 3) + corrupt(simple(3, 3), -2), P1: simple(0, 2)},
                                 None)] + [("fetch", 2)] * 4 + [("seek", P0, 6), ("fetch", 5)], id="corrupt-batch"),
    pytest.param({"check_crcs": True},
                 [("fetch", 5), ("answer", 0, {P0: simple(0, 3, epoch=3) + control_batch(3, 7, abort=False)
                                               + corrupt(simple(4, 3, epoch=9), -2), P1: simple(0, 2)}, None)]
                 + [("fetch", 10)] * 3, id="corrupt-batch-after-a-control-batch"),
    pytest.param({"check_crcs": False, "reference": (None, frozenset())},
                 [("fetch", 5), ("answer", 0, {P0: simple(0, 3, epoch=3) + corrupt(simple(3, 3, epoch=9), 63)
                                               + simple(6, 1), P1: simple(0, 2)}, None)]
                 + [("fetch", 10)] * 3, id="broken-record-without-crc-checks"),  # aiokafka's is laxer than Java's
    pytest.param({}, [("fetch", 5), ("answer", 0, {P0: simple(0, 3, epoch=2) + simple(3, 3, epoch=4)
                                                   + simple(6, 3, epoch=-1), P1: simple(0, 2, epoch=8)}, None)]
                 + [("fetch", 2)] * 6, id="leader-epochs"),
    pytest.param({"isolation_level": "read_committed"},
                 [("fetch", 5), ("answer", 0, {P0: simple(0, 2, transactional=True, producer_id=7)
                                               + control_batch(2, 7, abort=False) + simple(3, 2),
                                               P1: simple(0, 2)}, [])] + [("fetch", 3)] * 4,
                 id="read-committed-without-aborted-transactions"),
    pytest.param({}, [("seek", P0, 2), ("seek", P1, 4), ("fetch", 5),
                      ("answer", 0, {P0: simple(0, 5, codec=CODEC), P1: simple(0, 3) + simple(3, 3)}, None)]
                 + [("fetch", 2)] * 4, id="batches-starting-before-the-fetch-offset"),
]


@pytest.mark.parametrize(("config", "steps"), CASES)
def test_fetch_columns_with_the_columnar_decoder_hands_out_exactly_what_fetch_does(
        config: dict[str, Any], steps: list[Any], decoded_rows: list[int]) -> None:
    differential(steps, **config)
    assert sum(decoded_rows) > 0


def test_read_committed_with_aborted_transactions_is_decoded_as_columns(decoded_rows: list[int]) -> None:
    data = (simple(0, 2, transactional=True, producer_id=7) + control_batch(2, 7, abort=True)
            + simple(3, 2, transactional=True, producer_id=8) + control_batch(5, 8, abort=False))
    differential([("fetch", 5), ("answer", 0, {P0: data, P1: data}, [SimpleNamespace(producer_id=7, first_offset=0)])]
                 + [("fetch", 3)] * 4, isolation_level="read_committed")
    assert sum(decoded_rows) == 4  # offsets 3 and 4 of each partition, the aborted 0 and 1 skipped


def test_responses_the_columnar_decoder_leaves_come_as_record_columns(decoded_rows: list[int]) -> None:
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    builder = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    for offset in range(3):
        builder.append(offset, timestamp=1_700_000_000_000, key=b"k", value=b"v%d" % offset)
    legacy = bytes(builder.build())
    differential([("fetch", 5), ("answer", 0, {P0: legacy, P1: simple(0, 2)}, None)] + [("fetch", 2)] * 3)
    assert sum(decoded_rows) == 2  # P1's; P0's legacy message set went to the record decoder


def test_decoded_columns_keep_the_documented_attributes() -> None:
    fetcher, manager, _ = make()
    start(fetcher, P0)
    assert fetcher.fetch_columns(10, 0) == []
    answer(manager, 0, {P0: simple(0, 3, headers=HEADERS) + build(3, [(0, 5, None, None, [])], log_append=True)})
    (columns,) = fetcher.fetch_columns(10, 0)
    assert columns.decoded is not None and (columns.start, columns.stop) == (0, 4) and len(columns) == 4
    assert columns.offsets == [0, 1, 2, 3]
    assert columns.keys == [b"k", b"k", b"k", None]
    assert columns.values == [b"v0", b"v1", b"v2", None]
    assert columns.headers == [tuple(HEADERS)] * 3 + [()]
    assert columns.timestamps == [1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_002, 5]
    assert columns.timestamp_types == [0, 0, 0, 1]
    assert columns.nbytes == 3 + 6
    assert isinstance(columns.decoded.offsets, np.ndarray)
    assert fetcher.position(P0) == 4


def test_fetch_after_fetch_columns_gets_the_rest_as_records() -> None:
    fetcher, manager, _ = make()
    start(fetcher, P0)
    fetcher.fetch_columns(10, 0)
    answer(manager, 0, {P0: simple(0, 5, headers=HEADERS)})
    (columns,) = fetcher.fetch_columns(2, 0)
    assert columns.offsets == [0, 1] and columns.decoded is not None
    rest = fetcher.fetch(10, 0)
    assert [r.offset for r in rest] == [2, 3, 4]
    assert rest[0] == kgroup.ConsumerRecord("t", 0, 2, b"k", b"v2", tuple(HEADERS), 1_700_000_000_002, 0, 5)
    assert fetcher.position(P0) == 5


step_st = st.one_of(st.tuples(st.just("fetch"), st.integers(1, 12)),
                    st.tuples(st.just("seek"), st.sampled_from([P0, P1]), st.integers(0, 12)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(1, 6), min_size=1, max_size=4), controls=st.lists(st.booleans(), max_size=4),
       codec=st.sampled_from([0, CODEC]), steps=st.lists(step_st, min_size=1, max_size=8), cut=st.integers(0, 60),
       check_crcs=st.booleans(), bad=st.booleans())
def test_random_hand_outs_agree(sizes: list[int], controls: list[bool], codec: int, steps: list[Any], cut: int,
                                check_crcs: bool, bad: bool) -> None:
    data = b""
    base = 0
    for i, n in enumerate(sizes):
        data += simple(base, n, codec=codec, epoch=i)
        base += n
        if i < len(controls) and controls[i]:
            data += control_batch(base, 7, abort=False)
            base += 1
    if bad and len(sizes) > 1:
        data = data[:-20] + corrupt(data[-20:], 5)
    data += simple(base, 2)[:cut]
    plan = [("fetch", 4), ("answer", 0, {P0: data, P1: simple(0, 3)}, None), *steps]
    # broken records without CRC checks: kafka-python's decoder checks each record as Java's
    # DefaultRecord.readFrom does; aiokafka's C one reads some of them and raises its own exception
    reference = record_decoder.load_batch_decoder() if check_crcs else (None, frozenset())
    expected = _outcomes(False, reference, plan, check_crcs=check_crcs)
    got = _outcomes(True, reference, plan, check_crcs=check_crcs)
    assert got == expected
    assert _outcomes("poll", reference, plan, check_crcs=check_crcs) == expected


def test_errors_in_line_after_decoded_columns() -> None:
    differential([("fetch", 5), ("answer", 0, {P0: simple(0, 3), P1: codes.OFFSET_OUT_OF_RANGE}, None)]
                 + [("fetch", 10)] * 3, auto_offset_reset="none")


def test_the_spark_source_s_arrow_batch_is_the_same_from_decoded_and_record_columns() -> None:
    pytest.importorskip("pyspark")
    from pyspark.sql.pandas.types import to_arrow_schema

    from kgroup._io.columnar import decode_record_set
    from kgroup.spark import _source
    from tests.unit.test_columnar_decoder import Reference

    schema = to_arrow_schema(_source.SCHEMA, timezone="UTC")
    data = (simple(0, 3, headers=HEADERS) + simple(3, 4, key=None, codec=CODEC)
            + build(7, [(0, 5, None, None, [("k", None)])], log_append=True) + simple(8, 70, size=300))
    decoded = decode_record_set(data, 2)
    records = Reference(data, 2).records
    tp = kgroup.TopicPartition("t", 0)
    for begin, end in ((0, len(records)), (1, 5), (5, 6), (6, len(records))):
        from_records = _source._columns_to_batch(fetch_pipeline.RecordColumns(tp, records[begin:end]), schema)
        from_decoded = _source._columns_to_batch(fetch_pipeline.RecordColumns.of_decoded(tp, decoded, begin, end),
                                                 schema)
        assert from_decoded.schema == schema
        assert from_decoded.equals(from_records)
        assert from_decoded.num_rows == end - begin


def test_a_failure_of_the_columnar_decoder_itself_leaves_the_response_to_the_record_decoder(
        decoded_rows: list[int], caplog: pytest.LogCaptureFixture) -> None:
    fetcher, manager, _ = make()
    start(fetcher, P0)
    assert fetcher.fetch_columns(10, 0) == []

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    fetcher._columnar = broken
    answer(manager, 0, {P0: simple(0, 3)})
    (columns,) = fetcher.fetch_columns(10, 0)
    assert columns.decoded is None and columns.offsets == [0, 1, 2] and columns.values == [b"v0", b"v1", b"v2"]
    assert fetcher.position(P0) == 3
    assert decoded_rows == [] and "columnar decoder failed" in caplog.text



def test_to_arrow_gives_the_same_batch_for_decoded_and_record_columns() -> None:
    """``RecordColumns.to_arrow()`` (the public Arrow view of ``Consumer.poll_columns()``): the same
    rows and types whether the columns were decoded from the batch bytes or taken from records."""
    import pyarrow as pa

    from kgroup._io.columnar import decode_record_set
    from tests.unit.test_columnar_decoder import Reference

    data = (simple(0, 3, headers=HEADERS) + simple(3, 4, key=None, codec=CODEC)
            + build(7, [(0, 5, None, None, [("k", None)])], log_append=True) + simple(8, 20, size=30))
    decoded = decode_record_set(data, 2)
    records = Reference(data, 2).records
    tp = kgroup.TopicPartition("t", 0)
    for begin, end in ((0, len(records)), (1, 5), (5, 6)):
        from_decoded = kgroup.RecordColumns.of_decoded(tp, decoded, begin, end).to_arrow()
        from_records = kgroup.RecordColumns(tp, records[begin:end]).to_arrow()
        assert from_decoded.equals(from_records), (from_decoded.to_pylist(), from_records.to_pylist())
        assert from_decoded.schema.names == ["offset", "timestamp", "timestamp_type", "key", "value", "headers"]
        assert from_decoded.schema.field("value").type == pa.binary()
        rows = from_decoded.to_pylist()
        for row, record in zip(rows, records[begin:end], strict=True):
            assert (row["offset"], row["key"], row["value"], row["timestamp"], row["timestamp_type"]) == (
                record.offset, record.key, record.value, record.timestamp, record.timestamp_type)
            assert [(h["key"], h["value"]) for h in row["headers"]] == list(record.headers)
