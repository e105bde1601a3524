"""``ParallelProcessor`` on an in-memory consumer: order, concurrency, commits, rebalances, failures.

``FakeConsumer`` stands for ``kgroup.Consumer``: partitions are lists of ``(key, value)``, the
rebalances a test asks for run inside the next ``poll()`` (as the real consumer runs its
listener), commits land in ``committed`` at once. The real consumer and broker:
``tests/integration/test_parallel.py``.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from types import SimpleNamespace

import pytest

import kgroup
from kgroup import ConfigError, OffsetAndMetadata, ParallelProcessor, ProcessingError, TopicPartition
from kgroup._parallel.offsets import decode_completed
from kgroup.health import HealthReport
from kgroup.membership.states import MemberState
from kgroup.testing import FakeClock
from kgroup.types import ConsumerRecord

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


class FakeConsumer:
    def __init__(self, logs, *, max_poll_records=500):
        self.config = SimpleNamespace(enable_auto_commit=False)
        self.logs = logs  # {tp: [(key, value), ...]}
        self.max_poll_records = max_poll_records
        self.listener = None
        self.owned: set[TopicPartition] = set()
        self.positions: dict[TopicPartition, int] = {}
        self.paused_set: set[TopicPartition] = set()
        self.committed_offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        self.events: list = []  # rebalance steps for the next poll()
        self.commits: list[dict] = []
        self.closed = False

    # what the processor calls
    def subscribe(self, topics, listener=None, *, pattern=None):
        self.listener = listener
        self.events.append(("assigned", frozenset(self.logs)))

    def poll(self, timeout_ms=0):
        events, self.events = self.events, []
        for kind, tps in events:
            if kind == "assigned":
                self.owned |= tps
                for tp in tps:
                    om = self.committed_offsets.get(tp)
                    self.positions[tp] = om.offset if om else 0
                self.listener.on_partitions_assigned(tps)
            elif kind == "revoked":
                self.listener.on_partitions_revoked(tps)
                self.owned -= tps
                self.paused_set -= tps
            else:
                self.listener.on_partitions_lost(tps)
                self.owned -= tps
                self.paused_set -= tps
        out = []
        for tp in sorted(self.owned - self.paused_set):
            log = self.logs[tp]
            while self.positions[tp] < len(log) and len(out) < self.max_poll_records:
                offset = self.positions[tp]
                key, value = log[offset]
                out.append(ConsumerRecord(tp.topic, tp.partition, offset, key, value))
                self.positions[tp] += 1
        return out

    def commit(self, offsets, *, timeout_ms=None):
        if self.events and self.events[0][0] == "lost":
            raise kgroup.CommitFailedError("generation reset")
        assert set(offsets) <= self.owned, "commit of a partition not owned"
        self.commits.append(dict(offsets))
        self.committed_offsets.update(offsets)

    def commit_async(self, offsets):
        future = concurrent.futures.Future()
        try:
            self.commit(offsets)
        except kgroup.KGroupError as exc:  # as kgroup.Consumer.commit_async: the error is on the future
            future.set_exception(exc)
            return future
        future.set_result(None)
        return future

    def committed(self, partitions, *, timeout_ms=None):
        return {tp: self.committed_offsets.get(tp) for tp in partitions}

    def pause(self, partitions):
        self.paused_set |= set(partitions)

    def resume(self, partitions):
        self.paused_set -= set(partitions)

    def assignment(self):
        return frozenset(self.owned)

    def metrics(self):
        return {"records-consumed-total": 0.0}

    def health(self):
        return HealthReport(state=MemberState.STABLE, live=True, ready=True)

    def close(self, timeout_ms=30000):
        if not self.closed:
            self.closed = True
            self.events.append(("revoked", frozenset(self.owned)))
            self.poll()


def keyed_logs(partitions=2, per_partition=200, keys=10):
    return {
        TopicPartition("t", p): [(b"k%d" % (i % keys), b"%d" % i) for i in range(per_partition)]
        for p in range(partitions)
    }


def run_until(processor, predicate, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        processor.run_once(poll_timeout_ms=0)


def test_auto_commit_must_be_off():
    consumer = FakeConsumer({})
    consumer.config.enable_auto_commit = True
    with pytest.raises(ConfigError, match="enable_auto_commit"):
        ParallelProcessor(consumer, print)
    with pytest.raises(ConfigError, match="ordering"):
        ParallelProcessor(FakeConsumer({}), print, ordering="random")
    with pytest.raises(ConfigError, match="max_concurrency"):
        ParallelProcessor(FakeConsumer({}), print, max_concurrency=0)


@pytest.mark.parametrize("ordering", ["key", "partition", "unordered"])
def test_order_is_held_and_records_run_concurrently(ordering):
    logs = keyed_logs()
    consumer = FakeConsumer(logs)
    lock = threading.Lock()
    running: dict = {}
    seen: list = []
    peak = [0]

    def handler(record):
        lane = {"key": (record.partition, record.key), "partition": record.partition}.get(ordering, record.offset)
        with lock:
            if ordering != "unordered":
                assert lane not in running, f"two records of lane {lane} at once"
            running[lane] = record.offset
            peak[0] = max(peak[0], len(running))
            seen.append((record.partition, record.key, record.offset))
        time.sleep(0.001)  # the work: not synchronisation
        with lock:
            del running[lane]

    processor = ParallelProcessor(consumer, handler, ordering=ordering, max_concurrency=8)
    processor.subscribe(["t"])
    run_until(processor, lambda: processor.metrics()["parallel-records-completed-total"] == 400)
    if ordering == "key":
        for tp in logs:
            for key in {k for k, _ in logs[tp]}:
                offsets = [o for p, k, o in seen if p == tp.partition and k == key]
                assert offsets == sorted(offsets)
    if ordering == "partition":
        assert peak[0] <= 2
    else:
        assert peak[0] > 2
    expected = {TP0: 200, TP1: 200}
    run_until(processor, lambda: {tp: om.offset for tp, om in consumer.committed_offsets.items()} == expected)
    processor.close()
    assert consumer.closed


def test_a_revocation_commits_only_completed_work_and_the_next_owner_skips_the_rest():
    logs = {TP0: [(b"k%d" % i, b"") for i in range(20)]}
    consumer = FakeConsumer(logs)
    release = threading.Event()
    done: list[int] = []

    def handler(record):
        if record.offset in (3, 7):
            release.wait(30)  # held until the test lets it go: not synchronisation with sleep
        done.append(record.offset)

    processor = ParallelProcessor(consumer, handler, max_concurrency=4, revoke_timeout_ms=50)
    processor.subscribe(["t"])
    run_until(processor, lambda: len(done) == 18)
    consumer.events.append(("revoked", frozenset({TP0})))
    processor.run_once(poll_timeout_ms=0)
    # 3 and 7 still running after revoke_timeout_ms: committed at 3, the completions above it in the metadata
    om = consumer.committed_offsets[TP0]
    assert om.offset == 3
    assert decode_completed(om.metadata, 3) == set(range(4, 20)) - {7}
    release.set()
    run_until(processor, lambda: processor.metrics()["parallel-records-discarded-total"] == 2)
    assert consumer.committed_offsets[TP0].offset == 3  # a revoked partition's late results are not committed
    processor.close()

    # the next owner runs only 3 and 7
    second: list[int] = []
    consumer2 = FakeConsumer(logs)
    consumer2.committed_offsets = dict(consumer.committed_offsets)
    processor2 = ParallelProcessor(consumer2, lambda record: second.append(record.offset))
    processor2.subscribe(["t"])
    run_until(processor2, lambda: consumer2.committed_offsets[TP0].offset == 20)
    assert sorted(second) == [3, 7]
    assert processor2.metrics()["parallel-records-skipped-total"] == 15
    processor2.close()


def test_a_lost_partition_commits_nothing_more():
    logs = {TP0: [(b"k", b"") for _ in range(5)]}
    consumer = FakeConsumer(logs)
    release = threading.Event()
    calls: list = []

    class Listener(kgroup.RebalanceListener):
        def on_partitions_lost(self, partitions):
            calls.append(("lost", partitions))

        def on_partitions_revoked(self, partitions):
            calls.append(("revoked", partitions))

    processor = ParallelProcessor(consumer, lambda record: release.wait(30), max_concurrency=2)
    processor.subscribe(["t"], Listener())
    run_until(processor, lambda: processor.metrics()["parallel-records-in-flight"] == 1)
    consumer.events.append(("lost", frozenset({TP0})))
    processor.run_once(poll_timeout_ms=0)
    assert calls == [("lost", frozenset({TP0}))]
    release.set()
    run_until(processor, lambda: processor.metrics()["parallel-records-discarded-total"] == 1)
    processor.run_once(poll_timeout_ms=0)
    assert TP0 not in consumer.committed_offsets or consumer.committed_offsets[TP0].offset == 0
    processor.close()


def test_retries_then_the_dead_letter_hook_and_the_key_waits_meanwhile():
    logs = {TP0: [(b"a", b"bad"), (b"a", b"good"), (b"b", b"good")]}
    consumer = FakeConsumer(logs)
    attempts: list[int] = []
    dead: list = []

    def handler(record):
        attempts.append(record.offset)
        if record.value == b"bad":
            raise RuntimeError("boom")

    processor = ParallelProcessor(
        consumer, handler, retries=2, retry_backoff_ms=1, on_dead_letter=lambda r, e: dead.append((r.offset, repr(e)))
    )
    processor.subscribe(["t"])
    run_until(processor, lambda: TP0 in consumer.committed_offsets and consumer.committed_offsets[TP0].offset == 3)
    assert attempts.count(0) == 3
    assert attempts.index(1) > max(i for i, o in enumerate(attempts) if o == 0)  # key a waited for the bad record
    assert dead == [(0, "RuntimeError('boom')")]
    metrics = processor.metrics()
    assert metrics["parallel-records-retried-total"] == 2
    assert metrics["parallel-records-dead-lettered-total"] == 1
    processor.close()


def test_without_a_dead_letter_hook_run_raises_and_commits_below_the_record():
    logs = {TP0: [(b"a", b"good"), (b"b", b"bad"), (b"c", b"good")]}
    consumer = FakeConsumer(logs)

    def handler(record):
        if record.value == b"bad":
            raise ValueError("no")

    processor = ParallelProcessor(consumer, handler, retries=0)
    processor.subscribe(["t"])
    with pytest.raises(ProcessingError, match="t-0@1") as raised:
        processor.run()
    assert isinstance(raised.value.__cause__, ValueError)
    processor.close()
    assert consumer.committed_offsets[TP0].offset == 1
    assert decode_completed(consumer.committed_offsets[TP0].metadata, 1) == {2}


@pytest.mark.parametrize("commit_metadata", [True, False])
def test_commit_metadata_off_commits_the_first_incomplete_offset_only(commit_metadata):
    """``commit_metadata=False``: the same committed offset, no completions in the metadata
    (the next owner redoes them); the default (on) carries them."""
    logs = {TP0: [(b"k%d" % i, b"") for i in range(20)]}
    consumer = FakeConsumer(logs)
    release = threading.Event()
    done: list[int] = []

    def handler(record):
        if record.offset == 3:
            release.wait(30)  # held until the test lets it go
        done.append(record.offset)

    kwargs = {} if commit_metadata else {"commit_metadata": False}
    processor = ParallelProcessor(consumer, handler, max_concurrency=4, commit_interval_ms=1, **kwargs)
    processor.subscribe(["t"])
    run_until(processor, lambda: len(done) == 19 and TP0 in consumer.committed_offsets
              and consumer.committed_offsets[TP0].offset == 3
              and (not commit_metadata or decode_completed(consumer.committed_offsets[TP0].metadata, 3)
                   == set(range(4, 20))))
    om = consumer.committed_offsets[TP0]
    assert om.offset == 3
    if commit_metadata:
        assert om.metadata.startswith("kgp1:3:")
    else:
        assert om.metadata == ""
    release.set()
    run_until(processor, lambda: consumer.committed_offsets[TP0] == OffsetAndMetadata(20, ""))
    processor.close()


def test_back_pressure_pauses_and_resumes():
    logs = keyed_logs(partitions=2, per_partition=100, keys=100)
    consumer = FakeConsumer(logs, max_poll_records=10)
    gate = threading.Event()
    processor = ParallelProcessor(consumer, lambda record: gate.wait(30), max_concurrency=2, max_buffered_records=20)
    processor.subscribe(["t"])
    run_until(processor, lambda: consumer.paused_set == {TP0, TP1})
    for _ in range(5):
        processor.run_once(poll_timeout_ms=0)
    assert processor.metrics()["parallel-records-buffered"] <= 20 + 10
    gate.set()
    run_until(processor, lambda: processor.metrics()["parallel-records-completed-total"] == 200)
    assert processor.metrics()["parallel-pauses-total"] >= 2
    processor.close()


def test_a_stuck_handler_is_reported_by_health_and_metrics():
    clock = FakeClock()
    consumer = FakeConsumer({TP0: [(b"k", b"")]})
    gate = threading.Event()
    processor = ParallelProcessor(consumer, lambda record: gate.wait(30), stuck_after_ms=1000, clock=clock)
    processor.subscribe(["t"])
    run_until(processor, lambda: processor.metrics()["parallel-records-in-flight"] == 1)
    assert processor.health().live
    clock.advance(2.0)
    report = processor.health()
    assert not report.live
    assert "t-0@0 has been running for 2 s" in report.reasons[0]
    assert processor.metrics()["parallel-records-stuck"] == 1
    gate.set()
    run_until(processor, lambda: processor.metrics()["parallel-records-in-flight"] == 0)
    assert processor.health().live
    processor.close()


def test_a_retry_waiting_for_its_time_does_not_spin_the_loop():
    clock = FakeClock()
    consumer = FakeConsumer({TP0: [(b"k", b"")]})
    polls: list[int] = []
    poll = consumer.poll
    consumer.poll = lambda timeout_ms=0: polls.append(timeout_ms) or poll(timeout_ms)

    def handler(record):
        raise RuntimeError("later")

    processor = ParallelProcessor(consumer, handler, retries=1, retry_backoff_ms=5000, clock=clock)
    processor.subscribe(["t"])
    run_until(processor, lambda: processor.metrics()["parallel-records-retried-total"] == 1)
    processor.run_once(poll_timeout_ms=100)
    assert polls[-1] == 100  # the retry is 5 s away: an idle poll, not poll(0) in a loop
    clock.advance(4.99)
    processor.run_once(poll_timeout_ms=100)
    assert 0 < polls[-1] <= 11
    processor.close()


def test_the_users_listener_runs_after_the_processors_part():
    logs = {TP0: [(b"k%d" % i, b"") for i in range(10)], TP1: [(b"k", b"")]}
    consumer = FakeConsumer(logs)
    seen: list = []

    class Listener(kgroup.RebalanceListener):
        def on_partitions_assigned(self, partitions):
            seen.append(("assigned", partitions, {tp: processor._offsets.get(tp) is not None for tp in partitions}))

        def on_partitions_revoked(self, partitions):
            # the completed work is committed, and nothing of the partitions runs any more
            seen.append(("revoked", partitions, consumer.committed_offsets[TP0].offset,
                         processor.metrics()["parallel-records-in-flight"]))

    processor = ParallelProcessor(consumer, lambda record: None)
    processor.subscribe(["t"], Listener())
    run_until(processor, lambda: processor.metrics()["parallel-records-completed-total"] == 11)
    consumer.events.append(("revoked", frozenset({TP0})))
    processor.run_once(poll_timeout_ms=0)
    assert seen == [
        ("assigned", frozenset({TP0, TP1}), {TP0: True, TP1: True}),
        ("revoked", frozenset({TP0}), 10, 0.0),
    ]
    processor.close()


def test_a_partition_whose_metadata_no_longer_fits_is_held_until_it_does():
    # offset 0 never finishes while its key's later records wait: scattered incompletes pile up
    logs = {TP0: [(b"slow" if i % 2 == 0 else b"k%d" % i, b"") for i in range(400)]}
    consumer = FakeConsumer(logs, max_poll_records=50)
    release = threading.Event()

    def handler(record):
        if record.offset == 0:
            release.wait(30)  # held until the test lets go: not synchronisation with sleep

    processor = ParallelProcessor(consumer, handler, max_concurrency=4, max_metadata_chars=40, commit_interval_ms=1)
    processor.subscribe(["t"])
    run_until(processor, lambda: processor.metrics()["parallel-partitions-held"] == 1)
    assert TP0 in consumer.paused_set
    om = consumer.committed_offsets[TP0]
    assert om.offset == 0 and len(om.metadata) <= 40  # the lowest completions only
    release.set()
    run_until(processor, lambda: consumer.committed_offsets[TP0].offset == 400)
    assert processor.metrics()["parallel-partitions-held"] == 0
    assert TP0 not in consumer.paused_set
    processor.close()


def test_a_position_moved_back_starts_the_partitions_bookkeeping_over():
    consumer = FakeConsumer({TP0: [(b"k%d" % (i % 2), b"") for i in range(5)]}, max_poll_records=2)
    seen: list[int] = []
    gate = threading.Event()

    def handler(record):
        if record.offset == 1 and not gate.is_set():
            gate.wait(30)  # the first attempt runs across the reset: not synchronisation with sleep
        seen.append(record.offset)

    processor = ParallelProcessor(consumer, handler)
    processor.subscribe(["t"])
    run_until(processor, lambda: 0 in seen)
    consumer.positions[TP0] = 0  # an offset reset (auto_offset_reset after OFFSET_OUT_OF_RANGE)
    run_until(processor, lambda: seen.count(0) == 2)
    gate.set()  # the old record 1 ends: discarded, and its key's lane is the new bookkeeping's
    run_until(processor, lambda: len(seen) >= 6 and sorted(set(seen)) == [0, 1, 2, 3, 4])
    run_until(processor, lambda: TP0 in consumer.committed_offsets and consumer.committed_offsets[TP0].offset == 5)
    processor.close()


def test_a_dead_letter_hook_that_raises_stops_run():
    consumer = FakeConsumer({TP0: [(b"a", b"bad")]})

    def handler(record):
        raise RuntimeError("boom")

    def hook(record, error):
        raise OSError("dead-letter topic unreachable")

    processor = ParallelProcessor(consumer, handler, retries=0, on_dead_letter=hook)
    processor.subscribe(["t"])
    with pytest.raises(ProcessingError, match="dead-letter hook raised") as raised:
        processor.run()
    assert isinstance(raised.value.__cause__, OSError)
    assert raised.value.record.offset == 0
    processor.close()
    assert TP0 not in consumer.committed_offsets or consumer.committed_offsets[TP0].offset == 0


def test_the_byte_limit_pauses_too():
    logs = {TP0: [(b"k%d" % i, b"x" * 1000) for i in range(50)]}
    consumer = FakeConsumer(logs, max_poll_records=5)
    gate = threading.Event()
    processor = ParallelProcessor(consumer, lambda record: gate.wait(30), max_concurrency=2, max_buffered_bytes=10_000)
    processor.subscribe(["t"])
    run_until(processor, lambda: consumer.paused_set == {TP0})
    assert processor.metrics()["parallel-bytes-buffered"] <= 10_000 + 5 * 1002
    gate.set()
    run_until(processor, lambda: processor.metrics()["parallel-records-completed-total"] == 50)
    processor.close()
