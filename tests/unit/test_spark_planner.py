"""kgroup.spark's pure parts: offset planning (kgroup/spark/_planner.py) and option parsing.

No Spark and no broker: these import neither PySpark nor kafka-python's network code.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kgroup.spark._options import SourceOptionError, parse_options
from kgroup.spark._planner import (
    OffsetRange,
    StreamOffset,
    cap_lags,
    plan_batch_ranges,
    plan_end,
    plan_ranges,
)
from kgroup.types import TopicPartition

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


# ---------------------------------------------------------------------- offsets JSON
def test_stream_offset_json_round_trip_is_sorted_and_string_keyed():
    offset = StreamOffset({B0: 3, A1: 7, A0: 5}, {A1: 2})
    data = offset.to_json()
    assert json.dumps(data) == '{"offsets": {"a": {"0": 5, "1": 7}, "b": {"0": 3}}, "from": {"a": {"1": 2}}}'
    assert StreamOffset.from_json(json.loads(json.dumps(data))) == offset


@pytest.mark.parametrize("value", [None, {}])
def test_empty_offset(value):
    assert StreamOffset.from_json(value) == StreamOffset()


@pytest.mark.parametrize(
    "value",
    [
        {"a": {"0": 1}},  # Spark's Kafka source layout: not ours
        {"offsets": {"a": {"x": 1}}},
        {"offsets": {"a": {"0": -1}}},
        {"offsets": {"a": {"0": "1"}}},
        {"offsets": {"a": [1]}},
    ],
)
def test_foreign_or_bad_offsets_are_rejected(value):
    with pytest.raises(ValueError):
        StreamOffset.from_json(value)


# ---------------------------------------------------------------------- caps
def test_cap_lags_without_limit_or_under_it_is_the_lag():
    lags = {A0: 5, A1: 0, B0: 7}
    assert cap_lags(lags, None) == lags
    assert cap_lags(lags, 12) == lags


def test_cap_lags_prorates_by_lag():
    assert cap_lags({A0: 100, A1: 300}, 40) == {A0: 10, A1: 30}


def test_cap_lags_gives_rounding_leftovers_to_the_largest_remainders():
    assert cap_lags({A0: 1, A1: 1, B0: 1}, 2) == {A0: 1, A1: 1, B0: 0}
    assert cap_lags({A0: 10, A1: 5}, 4) == {A0: 3, A1: 1}


def test_cap_lags_rejects_bad_input():
    with pytest.raises(ValueError):
        cap_lags({A0: 3}, 0)
    with pytest.raises(ValueError):
        cap_lags({A0: -1}, 5)


@given(
    st.dictionaries(st.integers(0, 20).map(lambda p: TopicPartition("t", p)), st.integers(0, 10_000), max_size=12),
    st.one_of(st.none(), st.integers(1, 50_000)),
)
def test_cap_lags_properties(lags, limit):
    out = cap_lags(lags, limit)
    assert set(out) == set(lags)
    assert all(0 <= out[tp] <= lags[tp] for tp in lags)
    total = sum(lags.values())
    assert sum(out.values()) == (total if limit is None else min(limit, total))


# ---------------------------------------------------------------------- plan_end
def test_first_batch_starts_every_owned_partition_at_its_assignment_offset():
    end = plan_end(StreamOffset(), [A0, A1], {A0: 3, A1: 0}, {A0: 10, A1: 4})
    assert end == StreamOffset({A0: 10, A1: 4}, {A0: 3, A1: 0})
    assert plan_ranges(StreamOffset(), end) == [OffsetRange("a", 0, 3, 10), OffsetRange("a", 1, 0, 4)]


def test_next_batch_continues_from_the_previous_end_without_from_entries():
    start = StreamOffset({A0: 10}, {A0: 3})
    end = plan_end(start, [A0], {A0: 3}, {A0: 15})
    assert end == StreamOffset({A0: 15}, {})
    assert plan_ranges(start, end) == [OffsetRange("a", 0, 10, 15)]


def test_nothing_new_plans_the_same_offsets():
    start = StreamOffset({A0: 10}, {A0: 3})
    assert plan_end(start, [A0], {A0: 3}, {A0: 10}).offsets == start.offsets


def test_partitions_not_owned_are_not_planned_but_keep_their_position():
    start = StreamOffset({A0: 10, A1: 4})
    end = plan_end(start, [A0], {A0: 0}, {A0: 12, A1: 9})
    assert end.offsets == {A0: 12, A1: 4}
    assert plan_ranges(start, end) == [OffsetRange("a", 0, 10, 12)]


def test_before_the_first_assignment_after_a_restart_the_checkpoint_is_kept():
    start = StreamOffset({A0: 10, A1: 4})
    assert plan_end(start, [], {}, {}).offsets == start.offsets


def test_owned_partition_without_any_offset_yet_waits():
    end = plan_end(StreamOffset({A0: 1}), [A0, A1], {}, {A0: 1, A1: 5})
    assert end.offsets == {A0: 1}


def test_restart_checkpoint_ahead_of_the_group_wins():
    # the group commit of the last batch trails Spark's: the checkpoint says 100, the group 80
    start = StreamOffset({A0: 100})
    end = plan_end(start, [A0], {A0: 80}, {A0: 120})
    assert end == StreamOffset({A0: 120}, {})
    assert plan_ranges(start, end) == [OffsetRange("a", 0, 100, 120)]


def test_group_ahead_of_the_checkpoint_wins():
    # another application consumed the partition to 150 while this one did not own it
    start = StreamOffset({A0: 100})
    end = plan_end(start, [A0], {A0: 150}, {A0: 170})
    assert end == StreamOffset({A0: 170}, {A0: 150})
    assert plan_ranges(start, end) == [OffsetRange("a", 0, 150, 170)]


def test_latest_behind_position_does_not_go_backwards():
    end = plan_end(StreamOffset({A0: 10}), [A0], {}, {A0: 7})
    assert end.offsets == {A0: 10}


def test_partition_without_latest_does_not_advance():
    end = plan_end(StreamOffset({A0: 10}), [A0, A1], {A1: 0}, {A1: 3})
    assert end.offsets == {A0: 10, A1: 3}


def test_limit_caps_the_whole_batch():
    end = plan_end(StreamOffset({A0: 0, A1: 0}), [A0, A1], {}, {A0: 100, A1: 300}, limit=40)
    assert end.offsets == {A0: 10, A1: 30}


def test_plan_ranges_errors():
    with pytest.raises(ValueError, match="no start"):
        plan_ranges(StreamOffset(), StreamOffset({A0: 4}))
    with pytest.raises(ValueError, match="before"):
        plan_ranges(StreamOffset({A0: 5}), StreamOffset({A0: 4}))


@given(
    st.dictionaries(st.sampled_from([A0, A1, B0]), st.integers(0, 100)),
    st.dictionaries(st.sampled_from([A0, A1, B0]), st.integers(0, 100)),
    st.dictionaries(st.sampled_from([A0, A1, B0]), st.integers(0, 300)),
    st.sets(st.sampled_from([A0, A1, B0])),
    st.one_of(st.none(), st.integers(1, 200)),
)
def test_plan_end_then_ranges_never_rereads_or_skips(previous, assigned, latest, owned, limit):
    start = StreamOffset(previous)
    end = plan_end(start, owned, assigned, latest, limit)
    ranges = {r.topic_partition: r for r in plan_ranges(start, end)}
    assert set(end.offsets) <= owned | set(previous)
    for tp in set(previous) - owned:
        assert end.offsets[tp] == previous[tp] and tp not in ranges
    for tp, stop in end.offsets.items():
        if tp not in owned:
            continue
        begin = max(x for x in (previous.get(tp), assigned.get(tp)) if x is not None)
        if tp in ranges:
            assert ranges[tp].start == begin
            assert ranges[tp].end == stop
        else:
            assert stop == begin
    if limit is not None:
        assert sum(r.size for r in ranges.values()) <= limit
    # Spark stores the offset as JSON: the plan survives the round trip
    assert StreamOffset.from_json(json.loads(json.dumps(end.to_json()))) == end


def test_batch_ranges():
    earliest = {A0: 2, A1: 0}
    latest = {A0: 9, A1: 0}
    assert plan_batch_ranges(earliest, latest, "earliest") == [OffsetRange("a", 0, 2, 9)]
    assert plan_batch_ranges(earliest, latest, "latest") == []
    with pytest.raises(ValueError, match="a-1"):
        plan_batch_ranges({A0: 0}, {A0: 1, A1: 1}, "earliest")


# ---------------------------------------------------------------------- options
BASE = {"bootstrap.servers": "h:9092", "group.id": "g", "subscribe": "t2, t1"}


def test_options_minimal_and_case_insensitive():
    opts = parse_options({"Bootstrap.Servers": "h:9092", "GROUP.ID": "g", "subscribe": "t2,t1,t2"})
    assert opts.topics == ("t1", "t2")
    assert opts.assign is None
    assert opts.group_id == "g"
    config = opts.consumer_config()
    assert config.bootstrap_servers == "h:9092"
    assert [a.name for a in config.assignors] == ["cooperative-sticky"]


def test_options_kafka_properties_and_source_options():
    opts = parse_options({
        **BASE, "kafka.session.timeout.ms": "6000", "heartbeat.interval.ms": "1000",
        "group.instance.id": "app-1", "partition.assignment.strategy": "range",
        "maxOffsetsPerTrigger": "500", "startingOffsets": "Earliest", "fetchTimeoutMs": "5000",
    })
    config = opts.consumer_config()
    assert (config.session_timeout_ms, config.heartbeat_interval_ms) == (6000, 1000)
    assert config.group_instance_id == "app-1"
    assert [a.name for a in config.assignors] == ["range"]
    assert (opts.max_offsets_per_trigger, opts.starting_offsets, opts.fetch_timeout_ms) == (500, "earliest", 5000)


def test_options_assign():
    opts = parse_options({"bootstrap.servers": "h:9092", "group.id": "g", "assign": '{"t": [1, 0]}'})
    assert opts.assign == (TopicPartition("t", 0), TopicPartition("t", 1))
    assert opts.topics is None


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"group.id": "g", "subscribe": "t"}, "bootstrap.servers"),
        ({"bootstrap.servers": "h:9092", "subscribe": "t"}, "group.id"),
        ({"bootstrap.servers": "h:9092", "group.id": " ", "subscribe": "t"}, "group.id"),
        ({**BASE, "colour": "blue"}, "colour"),
        ({**BASE, "assign": '{"t": [0]}'}, "assign"),
        ({"bootstrap.servers": "h:9092", "group.id": "g"}, "subscribe"),
        ({**BASE, "subscribe": " , "}, "subscribe"),
        ({"bootstrap.servers": "h:9092", "group.id": "g", "assign": "[0]"}, "assign"),
        ({"bootstrap.servers": "h:9092", "group.id": "g", "assign": '{"t": ["x"]}'}, "assign"),
        ({**BASE, "maxOffsetsPerTrigger": "0"}, "maxOffsetsPerTrigger"),
        ({**BASE, "startingOffsets": "oldest"}, "startingOffsets"),
        ({**BASE, "endingOffsets": "earliest"}, "endingOffsets"),
        ({**BASE, "enable.auto.commit": "true"}, "enable.auto.commit"),
        ({**BASE, "auto.offset.reset": "earliest"}, "auto.offset.reset"),
        ({**BASE, "session.timeout.ms": "soon"}, "session.timeout.ms"),
        ({**BASE, "session.timeout.ms": "-5"}, "session.timeout.ms"),
        ({**BASE, "group.instance.id": "no spaces"}, "group.instance.id"),
        ({**BASE, "partition.assignment.strategy": "best"}, "partition.assignment.strategy"),
        ({**BASE, "session.timeout.ms": "6000", "kafka.session.timeout.ms": "7000"}, "kafka.session.timeout.ms"),
    ],
)
def test_bad_options_name_the_option(options, field):
    with pytest.raises(SourceOptionError) as info:
        parse_options(options)
    assert info.value.field == field
    assert field in str(info.value)
