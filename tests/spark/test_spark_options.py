"""The options taken from Spark's Kafka source, without Spark or a broker: parsing and planning.

Option names, defaults and rules are those of Spark's "Structured Streaming + Kafka Integration
Guide" (``KafkaSourceProvider``, ``KafkaOffsetRangeCalculator``, ``KafkaMicroBatchStream``). The
end-to-end behaviour of each option is in test_spark_source_options.py.
"""

from __future__ import annotations

import json
from operator import attrgetter

import pytest

from kgroup.spark._options import EARLIEST, LATEST, PartitionOffsets, SourceOptionError, parse_options
from kgroup.spark._planner import (
    OffsetRange,
    StreamOffset,
    pack_ranges,
    plan_batch_ranges,
    plan_end,
    plan_ranges,
    split_ranges,
)
from kgroup.types import TopicPartition

BASE = {"bootstrap.servers": "h:9092", "group.id": "g", "subscribe": "t"}
T0, T1, T2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)


# ---------------------------------------------------------------------- defaults and parsing
def test_defaults_are_sparks():
    opts = parse_options(BASE)
    assert opts.fail_on_data_loss is True
    assert opts.min_partitions is None
    assert opts.min_offsets_per_trigger is None
    assert opts.max_trigger_delay_ms == 15 * 60 * 1000  # "15m"
    assert opts.starting_offsets is None  # the mode's default: streaming latest, batch earliest
    assert opts.ending_offsets is None  # latest


def test_the_consumer_protocol_drops_the_drivers_default_assignor_but_not_one_given():
    """The driver's cooperative-sticky default is the classic protocol's: under
    ``group.protocol=consumer`` the broker assigns; an assignor the user names is still refused
    (Java's ``ConsumerConfig``)."""
    assert parse_options(BASE).consumer_config().assignors[0].name == "cooperative-sticky"
    config = parse_options({**BASE, "group.protocol": "consumer"}).consumer_config()
    assert config.group_protocol == "consumer"
    with pytest.raises(SourceOptionError) as raised:  # at load(), as every Kafka property
        parse_options({**BASE, "group.protocol": "consumer", "partition.assignment.strategy": "range"})
    assert raised.value.field == "partition.assignment.strategy"


def test_new_options_case_insensitive():
    opts = parse_options({
        **BASE, "MINPARTITIONS": "8", "failondataloss": "FALSE", "minOffsetsPerTrigger": "100",
        "maxOffsetsPerTrigger": "500", "maxTriggerDelay": "30s",
    })
    assert (opts.min_partitions, opts.fail_on_data_loss) == (8, False)
    assert (opts.min_offsets_per_trigger, opts.max_offsets_per_trigger, opts.max_trigger_delay_ms) == (100, 500, 30_000)


@pytest.mark.parametrize(
    ("value", "ms"),
    [
        ("15m", 900_000), ("2s", 2000), ("500ms", 500), ("250", 250), ("1h", 3_600_000), ("1min", 60_000),
        ("1d", 86_400_000),
    ],
)
def test_max_trigger_delay_takes_sparks_time_strings(value, ms):
    assert parse_options({**BASE, "maxTriggerDelay": value}).max_trigger_delay_ms == ms


def test_per_partition_json_offsets_with_sparks_sentinels():
    opts = parse_options({
        "bootstrap.servers": "h:9092", "group.id": "g", "subscribe": "a,b",
        "startingOffsets": json.dumps({"a": {"0": 23, "1": -2}, "b": {"0": -1}}),
        "endingOffsets": json.dumps({"a": {"0": 50, "1": -1}, "b": {"0": -1}}),
    })
    assert opts.starting_offsets == PartitionOffsets(
        ((TopicPartition("a", 0), 23), (TopicPartition("a", 1), EARLIEST), (TopicPartition("b", 0), LATEST))
    )
    assert opts.ending_offsets.as_dict()[TopicPartition("a", 0)] == 50


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({**BASE, "minPartitions": "0"}, "minPartitions"),
        ({**BASE, "minPartitions": "many"}, "minPartitions"),
        ({**BASE, "failOnDataLoss": "yes"}, "failOnDataLoss"),
        ({**BASE, "minOffsetsPerTrigger": "-1"}, "minOffsetsPerTrigger"),
        # Spark: "The value of minOffsetPerTrigger(..) is higher than the maxOffsetsPerTrigger(..)"
        ({**BASE, "minOffsetsPerTrigger": "11", "maxOffsetsPerTrigger": "10"}, "minOffsetsPerTrigger"),
        ({**BASE, "maxTriggerDelay": "soon"}, "maxTriggerDelay"),
        ({**BASE, "maxTriggerDelay": "5 fortnights"}, "maxTriggerDelay"),
        ({**BASE, "startingOffsets": '{"t": {"0": -3}}'}, "startingOffsets"),
        ({**BASE, "startingOffsets": '{"t": {"x": 1}}'}, "startingOffsets"),
        ({**BASE, "startingOffsets": '{"t": [0]}'}, "startingOffsets"),
        ({**BASE, "startingOffsets": '{"other": {"0": 1}}'}, "startingOffsets"),
        ({**BASE, "endingOffsets": '{"t": {"0": -2}}'}, "endingOffsets"),
        ({**BASE, "endingOffsets": "earliest"}, "endingOffsets"),
        # Spark's checkOffsetLimitValidity: the same partitions, no start after its end
        ({**BASE, "startingOffsets": '{"t": {"0": 1}}', "endingOffsets": '{"t": {"1": 5}}'}, "endingOffsets"),
        ({**BASE, "startingOffsets": '{"t": {"0": 9}}', "endingOffsets": '{"t": {"0": 5}}'}, "endingOffsets"),
    ],
)
def test_bad_values_name_the_option(options, field):
    with pytest.raises(SourceOptionError) as info:
        parse_options(options)
    assert info.value.field == field


# ---------------------------------------------------------------------- batch ranges
def test_batch_ranges_from_json_start_to_json_end():
    earliest, latest = {T0: 2, T1: 0}, {T0: 40, T1: 30}
    start = PartitionOffsets(((T0, 5), (T1, EARLIEST)))
    end = PartitionOffsets(((T0, 20), (T1, LATEST)))
    assert plan_batch_ranges(earliest, latest, start, end) == [OffsetRange("t", 0, 5, 20), OffsetRange("t", 1, 0, 30)]
    assert plan_batch_ranges(earliest, latest, "earliest", end) == [
        OffsetRange("t", 0, 2, 20), OffsetRange("t", 1, 0, 30)
    ]


def test_batch_json_must_name_every_partition_and_fit_the_log():
    earliest, latest = {T0: 0, T1: 0}, {T0: 10, T1: 10}
    with pytest.raises(ValueError, match=r"^startingOffsets names partitions"):
        plan_batch_ranges(earliest, latest, PartitionOffsets(((T0, 1),)))
    with pytest.raises(ValueError, match=r"^endingOffsets of t-0: 11 is past the log end offset 10"):
        plan_batch_ranges(earliest, latest, "earliest", PartitionOffsets(((T0, 11), (T1, LATEST))))
    with pytest.raises(ValueError, match="after the ending offset"):
        plan_batch_ranges(earliest, latest, PartitionOffsets(((T0, 8), (T1, 0))), PartitionOffsets(((T0, 5), (T1, 5))))


# ---------------------------------------------------------------------- minPartitions
def test_min_partitions_splits_as_sparks_range_calculator():
    ranges = [OffsetRange("t", 0, 0, 100), OffsetRange("t", 1, 0, 10), OffsetRange("t", 2, 7, 7)]
    # not set, or no more than the non-empty ranges: one range per partition, empty ones dropped
    assert split_ranges(ranges, None) == ranges[:2]
    assert split_ranges(ranges, 2) == ranges[:2]
    # KafkaOffsetRangeCalculatorSuite's shape: the small range stays whole, the large one is cut
    assert split_ranges(ranges, 4) == [
        OffsetRange("t", 0, 0, 33), OffsetRange("t", 0, 33, 66), OffsetRange("t", 0, 66, 100),
        OffsetRange("t", 1, 0, 10),
    ]


@pytest.mark.parametrize("n", [1, 3, 5, 7, 16, 64, 300])
def test_min_partitions_covers_exactly_the_same_offsets(n):
    ranges = [OffsetRange("t", 0, 5, 205), OffsetRange("t", 1, 0, 3), OffsetRange("u", 0, 10, 71)]
    split = split_ranges(ranges, n)
    covered = sorted((r.topic, r.partition, o) for r in split for o in range(r.start, r.end))
    assert covered == sorted((r.topic, r.partition, o) for r in ranges for o in range(r.start, r.end))
    if len(ranges) <= n <= sum(r.size for r in ranges):
        assert abs(len(split) - n) <= len(ranges)  # "approximately minPartitions"
    else:
        assert len(split) == min(max(n, len(ranges)), sum(r.size for r in ranges))


# ---------------------------------------------------------------------- maxPartitions
def test_max_partitions_is_parsed_and_not_below_min_partitions():
    assert parse_options(BASE).max_partitions is None  # Spark's Kafka source: a task per range
    assert parse_options({**BASE, "maxPartitions": "2"}).max_partitions == 2
    assert parse_options({**BASE, "minPartitions": "2", "maxPartitions": "2"}).min_partitions == 2
    for bad in ("0", "-1", "x"):
        with pytest.raises(SourceOptionError) as raised:
            parse_options({**BASE, "maxPartitions": bad})
        assert raised.value.field == "maxPartitions"
    with pytest.raises(SourceOptionError, match="higher than maxPartitions") as raised:
        parse_options({**BASE, "minPartitions": "3", "maxPartitions": "2"})
    assert raised.value.field == "minPartitions"


def test_max_partitions_packs_the_largest_range_first_onto_the_lightest_task():
    ranges = [OffsetRange("t", p, 0, size) for p, size in enumerate([10, 70, 40, 30, 50])]
    assert pack_ranges(ranges, None) == [(r,) for r in ranges]
    assert pack_ranges(ranges, 5) == [(r,) for r in ranges]
    # 70 -> task 0, 50 -> 1, 40 -> 1 (90), 30 -> 0 (100), 10 -> 1 (100); each task in partition order
    assert pack_ranges(ranges, 2) == [(ranges[1], ranges[3]), (ranges[0], ranges[2], ranges[4])]
    assert pack_ranges(ranges, 1) == [tuple(ranges)]
    with pytest.raises(ValueError, match="max_partitions"):
        pack_ranges(ranges, 0)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 12, 13])
def test_max_partitions_keeps_every_range_once_in_at_most_n_near_equal_tasks(n):
    ranges = [OffsetRange("t" if p % 2 else "u", p, p, p + 1 + (p * 37) % 101) for p in range(12)]
    tasks = pack_ranges(ranges, n)
    assert len(tasks) == min(n, len(ranges))
    key = attrgetter("topic", "partition", "start")
    assert sorted((r for task in tasks for r in task), key=key) == sorted(ranges, key=key)
    loads = [sum(r.size for r in task) for task in tasks]
    assert max(loads) - min(loads) <= max(r.size for r in ranges)  # greedy LPT: within one range
    if n < len(ranges):  # packed: a function of the ranges, not of their order
        assert pack_ranges(list(reversed(ranges)), n) == tasks
    else:  # a task per range, in the planned order
        assert tasks == [(r,) for r in ranges]


# ---------------------------------------------------------------------- data loss planning
def test_reset_restarts_a_partition_whose_log_went_back():
    start = StreamOffset({T0: 100, T1: 10})
    end = plan_end(start, [T0, T1], {T0: 100, T1: 10}, {T0: 7, T1: 12}, resets={T0: 0})
    assert end.offsets == {T0: 7, T1: 12}
    assert end.starts == {T0: 0}
    assert plan_ranges(start, end) == [OffsetRange("t", 0, 0, 7), OffsetRange("t", 1, 10, 12)]


def test_dropped_partitions_leave_the_stream_offset():
    start = StreamOffset({T0: 5, T2: 9})  # t-2: carried from an earlier assignment
    end = plan_end(start, [T0], {}, {T0: 8}, drop=[T2])
    assert end.offsets == {T0: 8}


# ---------------------------------------------------------------------- the driver's rules, on a fake clock
@pytest.fixture
def clock(monkeypatch):
    from kgroup.spark import _source
    from kgroup.testing import FakeClock

    fake = FakeClock(1000.0)
    monkeypatch.setattr(_source, "_CLOCK", fake)
    return fake


def _reader(**options: str):
    from kgroup.spark._source import KGroupStreamReader

    return KGroupStreamReader(parse_options({**BASE, **options}))


def test_min_offsets_per_trigger_and_max_trigger_delay_follow_sparks_delay_batch(clock):
    reader = _reader(minOffsetsPerTrigger="100", maxTriggerDelay="10s")
    assert reader._delay(100, 3) is False  # the first trigger is never delayed (Spark: lastTriggerMillis = 0)
    clock.advance(1)
    assert reader._delay(100, 3) is True  # too few, and the delay has not passed
    assert reader._delay(100, 150) is False  # enough: run, and the delay counts from now
    clock.advance(9.9)
    assert reader._delay(100, 99) is True
    clock.advance(0.1)
    assert reader._delay(100, 1) is False  # maxTriggerDelay passed: run what there is


def test_default_read_limits(clock):
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows

    assert _reader().getDefaultReadLimit() == ReadAllAvailable()
    assert _reader(minOffsetsPerTrigger="5").getDefaultReadLimit() == ReadMinRows(5)
    # PySpark has no composite limit: the maximum goes to Spark, the minimum stays with latestOffset
    assert _reader(minOffsetsPerTrigger="5", maxOffsetsPerTrigger="9").getDefaultReadLimit() == ReadMaxRows(9)


@pytest.mark.parametrize("fail_on_data_loss", [True, False])
def test_a_log_end_below_the_position_is_data_loss_after_two_more_looks(clock, fail_on_data_loss):
    from kgroup.spark import DataLossError

    reader = _reader(failOnDataLoss=str(fail_on_data_loss).lower())
    asked: list[tuple[str, list]] = []
    answers = {"latest": [{T0: 7}, {T0: 7}], "earliest": [{T0: 2}]}

    def list_offsets(partitions, spec):
        asked.append((spec, sorted(partitions)))
        return answers[spec].pop(0)

    reader._list_offsets = list_offsets
    latest = {T0: 7, T1: 50}
    if fail_on_data_loss:
        with pytest.raises(DataLossError, match="t-0 went back from 100 to 7"):
            reader._regressed({T0: 100, T1: 40}, latest)
    else:
        assert reader._regressed({T0: 100, T1: 40}, latest) == {T0: 2}  # on from the earliest offset
    assert asked[:2] == [("latest", [T0]), ("latest", [T0])]


def test_a_stale_log_end_that_catches_up_is_not_data_loss(clock):
    reader = _reader()
    reader._list_offsets = lambda partitions, spec: {T0: 120}
    assert reader._regressed({T0: 100}, {T0: 7}) == {}


# ---------------------------------------------------------------------- executors: fetched columns to Arrow
def _record(offset: int, headers: tuple = (), key: bytes | None = b"k", timestamp_type: int = 0):
    from kgroup.types import ConsumerRecord

    return ConsumerRecord("t", 0, offset, key, b"v%d" % offset, headers, 1_700_000_000_000 + offset, timestamp_type)


def _spark_rows(batches) -> list[tuple]:
    import datetime

    out = []
    for b in batches:
        for row in b.to_pylist():
            stamp = row["timestamp"]
            assert stamp.tzinfo is not None
            ms = (stamp - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)) // datetime.timedelta(
                milliseconds=1)
            out.append((row["topic"], row["partition"], row["offset"], row["key"], row["value"],
                        tuple((h["key"], h["value"]) for h in row["headers"]), ms, row["timestampType"]))
    return out


def _expected_rows(records) -> list[tuple]:
    return [(r.topic, r.partition, r.offset, r.key, r.value, r.headers, r.timestamp, r.timestamp_type) for r in records]


@pytest.mark.parametrize("with_headers", [True, False])
def test_fetched_columns_become_an_arrow_batch_of_sparks_kafka_schema(with_headers):
    from pyspark.sql.pandas.types import to_arrow_schema

    from kgroup._io.fetch_pipeline import RecordColumns
    from kgroup.spark._source import SCHEMA, _columns_to_batch

    schema = to_arrow_schema(SCHEMA, timezone="UTC")
    headers = (("trace", b"abc"), ("empty", None)) if with_headers else ()
    records = [_record(3, headers), _record(4, key=None, timestamp_type=1), _record(7)]
    batch = _columns_to_batch(RecordColumns(T0, records), schema)
    assert batch.schema == schema
    assert _spark_rows([batch]) == _expected_rows(records)


def test_read_range_cuts_arrow_batches_of_batch_rows_and_stops_at_the_range_end(monkeypatch):
    """Fetches of any size (a gap, records past the end): batches of ``batch_rows``, the last one shorter."""
    from kgroup.spark import _source
    from kgroup.spark._planner import OffsetRange

    log = [_record(o, (("h", b"%d" % o),) if o % 5 == 0 else ()) for o in range(30) if o != 11]  # 11: a marker

    class Fetcher:
        position_ = 0
        asked: list[int] = []

        def assign(self, partitions):
            pass

        def seek(self, tp, offset):
            self.position_ = offset

        def fetch_until(self, tp, end_offset):
            self.end = end_offset

        def reusable(self):
            return True

        def fetch(self, max_records, timeout_ms):
            self.asked.append(max_records)
            out = [r for r in log if r.offset >= self.position_][: min(max_records, 3)]
            if out:
                self.position_ = out[-1].offset + 1
            return out

        def position(self, tp):
            return self.position_

    fetcher = Fetcher()

    class Transport:
        def __init__(self, config):
            pass

        def start(self, timeout_ms):
            pass

        def fetcher(self):
            return fetcher

        def close(self):
            pass

    monkeypatch.setattr(_source, "KafkaPythonTransport", Transport)
    batches = list(_source.read_range(parse_options(BASE), OffsetRange("t", 0, 2, 21), batch_rows=4))
    assert [b.num_rows for b in batches] == [4, 4, 4, 4, 2]
    assert _spark_rows(batches) == _expected_rows([r for r in log if 2 <= r.offset < 21])
    assert max(fetcher.asked) <= 4, "never more than the next batch lacks"
