"""``ParallelProcessor`` on a real broker (embedded Tansu and Apache Kafka).

Key order holds with many records in flight; a 10 ms handler runs far faster than the plain
loop (the ratio is printed: timings belong in ``benchmarks/``); a rebalance in the middle of
processing hands partitions over with no record processed twice; a closed member's
completions above its committed offset are skipped by the next one.

The handovers run against ``group_coordinator``: on ``[tansu]`` the coordinator proxy (Kafka's
coordinator modelled) in front of the embedded broker, because the embedded Tansu broker does
not keep an OffsetCommit's metadata (an OffsetFetch answers it empty), which the skipping needs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import kgroup
from kgroup import ParallelProcessor, TopicPartition
from kgroup._parallel.offsets import decode_completed
from kgroup.testing import produce

from .harness import BOTH, HEARTBEAT_MS, SESSION_TIMEOUT_MS, wait_until
from .parallel_worker import COMMIT_INTERVAL_MS, MAX_CONCURRENCY
from .test_examples import report, run_example

pytestmark = BOTH


def make_consumer(bootstrap: str, group_id: str, **overrides: object) -> kgroup.Consumer:
    settings: dict[str, object] = {
        "bootstrap_servers": bootstrap, "group_id": group_id, "auto_offset_reset": "earliest",
        "enable_auto_commit": False, "session_timeout_ms": SESSION_TIMEOUT_MS, "heartbeat_interval_ms": HEARTBEAT_MS,
    }
    settings.update(overrides)
    settings = {name: value for name, value in settings.items() if value is not None}  # None: the default
    return kgroup.Consumer(**settings)


class Runner(threading.Thread):
    """A processor's poll loop on a thread of its own, closed on that thread."""

    def __init__(self, processor: ParallelProcessor, topic: str) -> None:
        super().__init__(daemon=True)
        self.processor = processor
        self.topic = topic
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.processor.subscribe([self.topic])
            self.processor.run()
        except BaseException as exc:
            self.error = exc
        finally:
            self.processor.close()

    def stop(self) -> None:
        self.processor.stop()
        self.join(60)
        assert not self.is_alive()
        assert self.error is None, self.error


def test_key_order_holds_with_many_records_in_flight(kafka_bootstrap, topic_factory, group_id_factory):
    topic = topic_factory(partitions=4)
    total, keys = 3000, 1000
    produce(kafka_bootstrap, topic, [(i % 4, b"key-%d" % (i % keys), b"%d" % i) for i in range(total)])
    lock = threading.Lock()
    seen: dict[tuple[int, bytes], list[int]] = {}
    span: list[float] = []  # when the first record started and the last ended

    def handler(record):
        started = time.monotonic()
        time.sleep(0.01)  # the 10 ms of work under test: not synchronisation
        with lock:
            seen.setdefault((record.partition, record.key), []).append(record.offset)
            span[:] = [min(span[0], started) if span else started, time.monotonic()]

    processor = ParallelProcessor(make_consumer(kafka_bootstrap, group_id_factory()), handler, max_concurrency=64)
    runner = Runner(processor, topic)
    runner.start()
    wait_until(lambda: sum(map(len, seen.values())) >= total, 120, "every record processed")
    parallel_rate = total / (span[1] - span[0])
    metrics = processor.metrics()
    runner.stop()
    for offsets in seen.values():
        assert offsets == sorted(offsets)
    assert sum(map(len, seen.values())) == total  # none twice
    assert metrics["parallel-max-in-flight"] > 1

    # the plain loop over the same kind of records, for the printed ratio (not asserted)
    plain = make_consumer(kafka_bootstrap, group_id_factory(), max_poll_records=50)
    done = 0
    with plain:
        plain.subscribe([topic])
        deadline = time.monotonic() + 60
        start: float | None = None
        while done < 200 and time.monotonic() < deadline:
            for record in plain.poll(100):
                if start is None:
                    start = time.monotonic()
                handler(record)
                done += 1
        assert start is not None
        plain_rate = done / (time.monotonic() - start)
    print(
        f"\n10 ms handler, ordering='key', {keys} keys: parallel {parallel_rate:.0f} records/s "
        f"(max_concurrency=64), plain loop {plain_rate:.0f} records/s: "
        f"{parallel_rate / plain_rate:.1f}x"
    )


@pytest.mark.parametrize(
    "group_protocol",
    ["classic", pytest.param("consumer", marks=pytest.mark.broker_kinds("apache-kafka"))],  # KIP-848: Kafka's
)
def test_a_rebalance_mid_processing_hands_over_with_no_record_processed_twice(
    kafka_bootstrap, group_coordinator, topic_factory, group_id_factory, broker_kind, group_protocol
):
    """Eager (classic, range) or incremental (KIP-848) revocation while a processes: none twice."""
    topic = topic_factory(partitions=2)
    total = 3000  # at about 400 records/s: b joins while a is at work
    produce(kafka_bootstrap, topic, [(i % 2, b"k%d" % (i % 40), b"%d" % i) for i in range(total)])
    group = group_id_factory()
    lock = threading.Lock()
    processed: list[tuple[str, int, int]] = []

    def handler_for(member: str):
        def handler(record):
            time.sleep(0.01)  # the work under test: not synchronisation
            with lock:
                processed.append((member, record.partition, record.offset))

        return handler

    bootstrap = group_coordinator.bootstrap_servers
    protocol = {"group_protocol": group_protocol}
    if group_protocol == "consumer":  # the broker runs the session timeout and heartbeats
        protocol.update(session_timeout_ms=None, heartbeat_interval_ms=None)
    def member(name: str) -> Runner:
        consumer = make_consumer(bootstrap, group, **protocol)
        return Runner(ParallelProcessor(consumer, handler_for(name), max_concurrency=4), topic)

    a = member("a")
    a.start()
    wait_until(lambda: len(processed) >= 100, 60, "member a under way")
    b = member("b")
    b.start()
    wait_until(lambda: len({(p, o) for _, p, o in processed}) >= total, 120, "every record processed")
    a.stop()
    b.stop()
    by_record: dict[tuple[int, int], list[str]] = {}
    for member, partition, offset in processed:
        by_record.setdefault((partition, offset), []).append(member)
    twice = {record: members for record, members in by_record.items() if len(members) > 1}
    assert twice == {}
    assert {m for m, _, _ in processed} == {"a", "b"}, "the rebalance gave b a partition"


def test_the_next_owner_skips_what_the_last_one_completed_above_its_committed_offset(
    kafka_bootstrap, group_coordinator, topic_factory, group_id_factory
):
    topic = topic_factory(partitions=1)
    total = 100
    produce(kafka_bootstrap, topic, [(0, b"k%d" % i, b"%d" % i) for i in range(total)])
    group = group_id_factory()
    tp = TopicPartition(topic, 0)
    release = threading.Event()
    first: list[int] = []

    def slow_on_ten(record):
        if record.offset == 10:
            release.wait(60)  # held until the test lets go: not synchronisation
        else:
            first.append(record.offset)

    bootstrap = group_coordinator.bootstrap_servers
    a = Runner(
        ParallelProcessor(make_consumer(bootstrap, group), slow_on_ten, max_concurrency=8, revoke_timeout_ms=200), topic
    )
    a.start()
    wait_until(lambda: len(first) == total - 1, 60, "all but record 10 processed")
    a.stop()  # close: record 10 still running after revoke_timeout_ms, not committed
    release.set()
    with make_consumer(bootstrap, group) as probe:
        probe.assign([tp])
        committed = probe.committed([tp])[tp]
    assert committed is not None and committed.offset == 10
    assert decode_completed(committed.metadata, 10) == set(range(11, total))

    second: list[int] = []
    b = Runner(ParallelProcessor(make_consumer(bootstrap, group), lambda r: second.append(r.offset)), topic)
    b.start()
    wait_until(lambda: b.processor.metrics()["parallel-records-skipped-total"] == total - 11, 60, "the rest skipped")
    b.stop()
    assert second == [10]


def test_the_parallel_service_example_runs(group_coordinator, kafka_bootstrap, topic_factory, group_id_factory):
    """examples/parallel_service.py on the session's broker: every record processed or dead-lettered."""
    topic = topic_factory(partitions=4)
    values = [b"poison" if i == 7 else b"order %d" % i for i in range(600)]
    produce(kafka_bootstrap, topic, [(b"customer-%d" % (i % 50), v) for i, v in enumerate(values)])
    result = run_example(
        "parallel_service.py", timeout_s=120, KGROUP_BOOTSTRAP_SERVERS=group_coordinator.bootstrap_servers,
        TOPIC=topic, GROUP=group_id_factory(), RECORDS="600",
    )
    lines = result.stdout.strip().splitlines()
    assert result.returncode == 0, report(result)
    assert lines and lines[-1].startswith("stopped: 599 records processed, 1 dead-lettered"), report(result)


def test_after_a_kill_9_only_records_not_covered_by_the_last_commit_are_redone(
    kafka_bootstrap, group_coordinator, topic_factory, group_id_factory, tmp_path: Path
):
    """A member killed mid-processing: the next one skips every record its last commit covered.

    Covered: below the committed offset, or completed above it per the metadata. What is redone
    is printed next to the bound (the records in flight, ``max_concurrency``, plus those
    completed since the last commit landed, ``commit_interval_ms`` ago at most).
    """
    topic = topic_factory(partitions=2)
    total = 4000
    produce(kafka_bootstrap, topic, [(i % 2, b"k%d" % (i % 300), b"%d" % i) for i in range(total)])
    group = group_id_factory()
    bootstrap = group_coordinator.bootstrap_servers
    out = tmp_path / "first.txt"
    out.touch()
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)}
    worker = subprocess.Popen(
        [sys.executable, str(root / "tests" / "integration" / "parallel_worker.py"), bootstrap, topic, group, str(out)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        wait_until(lambda: len(out.read_text().splitlines()) >= total // 3, 90, "a third processed")
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(30)
    first = {tuple(map(int, line.split())) for line in out.read_text().splitlines() if line.count(" ") == 1}
    tps = [TopicPartition(topic, p) for p in (0, 1)]
    with make_consumer(bootstrap, group) as probe:
        probe.assign(tps)
        committed = probe.committed(tps)
    covered: set[tuple[int, int]] = set()
    for tp in tps:
        om = committed[tp]
        if om is not None:
            covered |= {(tp.partition, o) for o in range(om.offset)}
            covered |= {(tp.partition, o) for o in decode_completed(om.metadata, om.offset)}
    assert covered <= first  # a commit never covers a record not completed

    lock = threading.Lock()
    second: set[tuple[int, int]] = set()

    def handler(record):
        with lock:
            second.add((record.partition, record.offset))

    b = Runner(ParallelProcessor(make_consumer(bootstrap, group), handler), topic)
    b.start()
    wait_until(lambda: len(second) >= total - len(covered), 90, "the rest processed")
    b.stop()
    everything = {(p, o) for p in (0, 1) for o in range(total // 2)}
    assert second == everything - covered  # nothing covered redone, nothing skipped
    redone = first & second
    print(
        f"\nkill -9 after {len(first)} records: {len(redone)} redone "
        f"(max_concurrency={MAX_CONCURRENCY}, commit_interval_ms={COMMIT_INTERVAL_MS})"
    )
