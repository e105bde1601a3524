"""The parallel processor's scheduler (``kgroup._parallel.scheduler``): lanes, order, retries, drops."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup._parallel.scheduler import Scheduler
from kgroup.types import TopicPartition

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def drain(scheduler, now=0.0):
    out = []
    while (taken := scheduler.take(now)) is not None:
        out.append(taken)
    return out


def test_key_ordering_runs_one_record_per_key_at_a_time():
    s: Scheduler[str] = Scheduler("key")
    for name, key in (("a1", b"a"), ("b1", b"b"), ("a2", b"a"), ("n1", None), ("n2", None)):
        s.add(s.lane(TP0, key), name)
    s.add(s.lane(TP1, b"a"), "other-partition-a1")  # the same key in another partition: its own lane
    first = drain(s)
    assert [record for _, record in first] == ["a1", "b1", "n1", "other-partition-a1"]
    assert s.waiting() == 2
    s.finish(first[0][0])
    assert [record for _, record in drain(s)] == ["a2"]
    s.finish(first[2][0])
    assert [record for _, record in drain(s)] == ["n2"]


def test_partition_ordering_and_unordered():
    s: Scheduler[int] = Scheduler("partition")
    for i in range(3):
        s.add(s.lane(TP0, i), i)
    taken = drain(s)
    assert [r for _, r in taken] == [0]
    u: Scheduler[int] = Scheduler("unordered")
    for i in range(3):
        u.add(u.lane(TP0, b"same"), i)
    assert [r for _, r in drain(u)] == [0, 1, 2]


def test_unhashable_keys_are_ordered_by_their_repr():
    s: Scheduler[int] = Scheduler("key")
    s.add(s.lane(TP0, {"id": 1}), 1)
    s.add(s.lane(TP0, {"id": 1}), 2)
    assert [r for _, r in drain(s)] == [1]


def test_a_retry_holds_its_lane_until_due():
    s: Scheduler[str] = Scheduler("key")
    s.add(s.lane(TP0, b"k"), "first")
    s.add(s.lane(TP0, b"k"), "second")
    lane, record = s.take(0.0)
    s.retry(lane, record, due=5.0)
    assert s.take(4.9) is None
    assert not s.ready(4.9)
    assert s.next_retry() == 5.0
    assert s.take(5.0) == (lane, "first")
    s.finish(lane)
    assert s.take(5.0) == (lane, "second")


def test_drop_forgets_a_partitions_waiting_records_and_retries():
    s: Scheduler[str] = Scheduler("key")
    s.add(s.lane(TP0, b"a"), "a1")
    s.add(s.lane(TP0, b"a"), "a2")
    s.add(s.lane(TP0, b"b"), "b1")
    s.add(s.lane(TP1, b"a"), "x1")
    lane, record = s.take(0.0)
    s.retry(lane, record, 1.0)
    assert sorted(s.drop({TP0})) == ["a1", "a2", "b1"]
    assert [r for _, r in drain(s, 2.0)] == ["x1"]
    s.finish(lane)  # a dropped lane's late finish changes nothing
    assert s.waiting() == 0 and s.retrying() == 0


def test_unknown_ordering_is_refused():
    with pytest.raises(ValueError):
        Scheduler("random")  # type: ignore[arg-type]


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 4)), max_size=60), st.randoms())
def test_key_order_holds_whatever_order_records_finish(records, rng):
    s: Scheduler[tuple[int, int, int]] = Scheduler("key")
    for seq, (p, key) in enumerate(records):
        tp = TopicPartition("t", p)
        s.add(s.lane(tp, key), (p, key, seq))
    running: list = []
    done: list = []
    while True:
        while (taken := s.take(0.0)) is not None:
            lane, record = taken
            assert all(other_lane != lane for other_lane, _ in running)  # one per lane at a time
            running.append(taken)
        if not running:
            break
        lane, record = running.pop(rng.randrange(len(running)))
        done.append(record)
        s.finish(lane)
    assert sorted(done) == sorted((p, k, i) for i, (p, k) in enumerate(records))
    for p in (0, 1):
        for key in range(5):
            seqs = [seq for (pp, kk, seq) in done if (pp, kk) == (p, key)]
            assert seqs == sorted(seqs)
