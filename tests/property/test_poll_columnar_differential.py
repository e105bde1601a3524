"""``poll()``'s records from the columnar decoder are exactly the record decoder's, for random logs.

On the fake network of ``tests/unit/test_fetch_pipeline.py``: random partition logs (batches of
records with and without keys, values and headers, every codec, control batches, transactions
of several producers committed and aborted, compacted offset gaps), read with read_committed or
read_uncommitted, in random ``fetch`` sizes with seeks between them, once through the record
decoder (``record_decoder.PartitionRecords``, aiokafka's C decoder or kafka-python's) and once
through the columnar decoder (``DecodedRecordSet.records``): every record (all fields, the
leader epoch included), every error and its partition, every position with its leader epoch and
every next Fetch must agree; and the columnar decoder must really have handed the rows out.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup._io import columnar, fetch_pipeline, record_decoder
from tests.unit.test_columnar_decoder import CODECS, build, control_batch, corrupt
from tests.unit.test_fetch_columns_decoded import _epochs
from tests.unit.test_fetch_pipeline import P0, P1
from tests.unit.test_fetch_pipeline import _outcomes as _pipeline_outcomes

TS = 1_700_000_000_000

record_st = st.tuples(
    st.integers(0, 2),  # offset gap before the record (compaction)
    st.one_of(st.none(), st.binary(max_size=12)),
    st.one_of(st.none(), st.binary(max_size=60)),
    st.lists(st.tuples(st.text(max_size=4), st.one_of(st.none(), st.binary(max_size=4))), max_size=2),
)
#: (producer: -1 none, else its id; marker: None data, True abort, False commit; records; codec; epoch)
batch_st = st.tuples(st.sampled_from([-1, 0, 0, 1, 2]), st.sampled_from([None, None, True, True, False]),
                     st.lists(record_st, min_size=1, max_size=6), st.sampled_from(CODECS), st.integers(-1, 4))
step_st = st.one_of(st.tuples(st.just("fetch"), st.integers(1, 9)),
                    st.tuples(st.just("seek"), st.sampled_from([P0, P1]), st.integers(0, 30)))


def partition_log(batches: list[Any]) -> tuple[bytes, list[Any], int]:
    """The bytes of a log of ``batches``, the aborted transactions a broker lists for it, its end offset."""
    data = b""
    base = 0
    aborted: list[Any] = []
    open_since: dict[int, int] = {}
    for producer, marker, records, codec, epoch in batches:
        if marker is not None and producer >= 0:
            if marker and producer in open_since:
                aborted.append(SimpleNamespace(producer_id=producer, first_offset=open_since[producer]))
            open_since.pop(producer, None)
            data += control_batch(base, producer, abort=marker)
            base += 1
            continue
        built = []
        delta = -1
        for gap, key, value, headers in records:
            delta += 1 + gap
            built.append((delta, TS + base + delta, key, value, headers))
        if producer >= 0:
            open_since.setdefault(producer, base)
        data += build(base, built, codec=codec, epoch=epoch, transactional=producer >= 0, producer_id=producer)
        base += delta + 1
    return data, aborted, base


def _outcomes(mode: bool | str, decoder: Any, steps: list[Any], **config: Any) -> list[Any]:
    return _pipeline_outcomes(mode, decoder, steps, _epochs, **config)


def _whole_records(records: list[Any]) -> list[Any]:
    """Every field of every record (the leader epoch and topic too) and the types of key and value."""
    return [(*r, type(r), type(r.key), type(r.value), type(r.headers)) for r in records]


@pytest.fixture
def columnar_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Rows ``poll()`` built from decoded columns, counted (a case the columnar path never took proves nothing)."""
    import tests.unit.test_fetch_pipeline as pipeline_tests

    monkeypatch.setattr(pipeline_tests, "_rows", _whole_records)
    counted: list[int] = []
    records = columnar.DecodedRecordSet.records

    def counting(self: Any, topic: str, partition: int, start: int, stop: int) -> Any:
        counted.append(stop - start)
        return records(self, topic, partition, start, stop)

    monkeypatch.setattr(columnar.DecodedRecordSet, "records", counting)
    return counted


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(p0=st.lists(batch_st, min_size=1, max_size=8), p1=st.lists(batch_st, min_size=1, max_size=4),
       steps=st.lists(step_st, min_size=1, max_size=10), read_committed=st.sampled_from([True, True, False]),
       cut=st.integers(0, 40),
       bad=st.sampled_from([-1, -1, -1, -1, 0, 1, 3]), c_decoder=st.booleans(),
       window=st.sampled_from([1, 100, 300, 1000, fetch_pipeline.DECODE_WINDOW_BYTES]))
def test_poll_from_the_columnar_decoder_yields_what_the_record_decoder_yields(
        p0: list[Any], p1: list[Any], steps: list[Any], read_committed: bool, cut: int, bad: int, c_decoder: bool,
        window: int, columnar_rows: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetch_pipeline, "DECODE_WINDOW_BYTES", window)  # 1: a window per batch
    data0, aborted0, end0 = partition_log(p0)
    data1, aborted1, _ = partition_log(p1)
    if bad >= 0:  # a CRC failure in some batch: the records before it, then the typed error in line
        data0 = corrupt(data0, min(len(data0) - 1, 21 + bad * 7))
    data0 += build(end0, [(0, TS, b"k", b"v", [])])[:cut]  # maybe a partial batch at the end
    config = {"isolation_level": "read_committed" if read_committed else "read_uncommitted", "check_crcs": True}
    plan = [("fetch", 4), ("answer", 0, {P0: data0, P1: data1}, aborted0 + aborted1), *steps]
    reference = record_decoder.load_batch_decoder() if c_decoder else (None, frozenset())
    expected = _outcomes(False, reference, plan, **config)
    del columnar_rows[:]
    got = _outcomes("poll", reference, plan, **config)
    assert got == expected
    if any(isinstance(o, list) and o for o in expected):
        assert sum(columnar_rows) > 0, "poll() took the columnar path"


@pytest.mark.parametrize("window", [1, 100, fetch_pipeline.DECODE_WINDOW_BYTES])
def test_an_aborted_transaction_ended_in_one_window_does_not_reach_into_the_next(
        window: int, columnar_rows: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """The aborted-transaction state runs on across windows: the producer's next transaction is read."""
    monkeypatch.setattr(fetch_pipeline, "DECODE_WINDOW_BYTES", window)
    one = [(0, None, b"a", [])]
    log = [(0, None, one, 0, 0), (0, True, one, 0, 0), (0, None, [(0, None, b"b", [])], 0, 0), (0, False, one, 0, 0)]
    data, aborted, _ = partition_log(log)
    plan = [("fetch", 4), ("answer", 0, {P0: data, P1: build(0, [(0, TS, b"k", b"v", [])])}, aborted),
            ("fetch", 9), ("fetch", 9)]
    config = {"isolation_level": "read_committed"}
    expected = _outcomes(False, (None, frozenset()), plan, **config)
    assert [r[4] for r in expected[2] if r[1] == 0] == [b"b"]  # offset 0 aborted, offset 2 committed
    assert _outcomes("poll", (None, frozenset()), plan, **config) == expected
    assert sum(columnar_rows) == 2
