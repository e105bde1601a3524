"""``kgroup.aio.ParallelProcessor`` on a real broker (embedded Tansu and Apache Kafka), both group protocols.

The threaded processor's tests (``test_parallel.py``) for the asyncio one: key order holds with
many handler tasks in flight; a rebalance in the middle of processing hands partitions over
with no record completed twice; a closed member's completions above its committed offset are
skipped by the next one; after a kill -9 only what the last commit did not cover is redone.
The first three under the classic protocol and the consumer group protocol
(KIP-848, ``group_protocol="consumer"``: Apache Kafka's coordinator only).

The handovers run against ``group_coordinator``: on ``[tansu]`` the coordinator proxy in front
of the embedded broker, because the embedded Tansu broker does not keep an OffsetCommit's
metadata (an OffsetFetch answers it empty), which the skipping needs (``docs/parallel.md``,
"Brokers").
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import kgroup
import kgroup.aio
from kgroup import TopicPartition
from kgroup._parallel.offsets import decode_completed
from kgroup.testing import produce

from .aio_parallel_worker import COMMIT_INTERVAL_MS, MAX_CONCURRENCY
from .harness import BOTH, HEARTBEAT_MS, SESSION_TIMEOUT_MS, wait_until

pytestmark = BOTH

PROTOCOLS = pytest.mark.parametrize(
    "group_protocol",
    ["classic", pytest.param("consumer", marks=pytest.mark.broker_kinds("apache-kafka"))],  # KIP-848: Kafka's
)


def settings(bootstrap: str, group_id: str, group_protocol: str = "classic") -> dict[str, Any]:
    out: dict[str, Any] = {
        "bootstrap_servers": bootstrap, "group_id": group_id, "auto_offset_reset": "earliest",
        "enable_auto_commit": False, "group_protocol": group_protocol,
    }
    if group_protocol == "classic":  # under KIP-848 the broker runs the session timeout and heartbeats
        out.update(session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS)
    return out


def processor(bootstrap: str, group_id: str, handler: Any, group_protocol: str = "classic", **options: Any):
    consumer: kgroup.aio.Consumer[bytes, bytes] = kgroup.aio.Consumer(**settings(bootstrap, group_id, group_protocol))
    return kgroup.aio.ParallelProcessor(consumer, handler, **options)


async def until(predicate: Any, timeout_s: float, what: str) -> None:
    """Wait on the loop for ``predicate()``, failing with ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for: {what}"
        await asyncio.sleep(0.05)


class Member:
    """A processor's ``run()`` as a task; ``stop()`` ends it and closes the processor."""

    def __init__(self, processor: kgroup.aio.ParallelProcessor[Any, Any], topic: str) -> None:
        self.processor = processor
        self.task = asyncio.ensure_future(self._main(topic))

    async def _main(self, topic: str) -> None:
        try:
            await self.processor.subscribe([topic])
            await self.processor.run()
        finally:
            await self.processor.close()

    async def stop(self) -> None:
        self.processor.stop()
        await asyncio.wait_for(self.task, 60)  # raises what run() raised


def committed(bootstrap: str, group: str, tps: list[TopicPartition]) -> dict[TopicPartition, Any]:
    with kgroup.Consumer(**settings(bootstrap, group)) as probe:
        probe.assign(tps)
        return probe.committed(tps)


@PROTOCOLS
def test_key_order_holds_with_many_tasks_in_flight(kafka_bootstrap, topic_factory, group_id_factory, group_protocol):
    topic = topic_factory(partitions=4)
    total, keys = 2000, 500
    produce(kafka_bootstrap, topic, [(i % 4, b"key-%d" % (i % keys), b"%d" % i) for i in range(total)])
    seen: dict[tuple[int, bytes], list[int]] = {}

    async def handle(record: kgroup.ConsumerRecord[bytes, bytes]) -> None:
        await asyncio.sleep(0.01)  # the 10 ms of work under test: not synchronisation
        seen.setdefault((record.partition, record.key or b""), []).append(record.offset)

    async def scenario() -> dict[str, float]:
        parallel = processor(kafka_bootstrap, group_id_factory(), handle, group_protocol, max_concurrency=64)
        member = Member(parallel, topic)
        await until(lambda: sum(map(len, seen.values())) >= total, 120, "every record processed")
        metrics = member.processor.metrics()
        await member.stop()
        return metrics

    metrics = asyncio.run(scenario())
    for offsets in seen.values():
        assert offsets == sorted(offsets)
    assert sum(map(len, seen.values())) == total  # none twice
    assert metrics["parallel-max-in-flight"] > 1


@PROTOCOLS
def test_a_rebalance_mid_processing_hands_over_with_no_record_completed_twice(
    kafka_bootstrap, group_coordinator, topic_factory, group_id_factory, group_protocol
):
    """Eager (classic, range) or incremental (KIP-848) revocation while a processes: none twice."""
    topic = topic_factory(partitions=2)
    total = 3000  # with max_concurrency=4 and 10 ms handlers: b joins while a is at work
    produce(kafka_bootstrap, topic, [(i % 2, b"k%d" % (i % 40), b"%d" % i) for i in range(total)])
    group = group_id_factory()
    bootstrap = group_coordinator.bootstrap_servers
    processed: list[tuple[str, int, int]] = []

    def handler_for(name: str) -> Any:
        async def handle(record: kgroup.ConsumerRecord[bytes, bytes]) -> None:
            await asyncio.sleep(0.01)  # the work under test: not synchronisation
            processed.append((name, record.partition, record.offset))

        return handle

    async def scenario() -> None:
        a = Member(processor(bootstrap, group, handler_for("a"), group_protocol, max_concurrency=4), topic)
        await until(lambda: len(processed) >= 100, 60, "member a under way")
        b = Member(processor(bootstrap, group, handler_for("b"), group_protocol, max_concurrency=4), topic)
        await until(lambda: len({(p, o) for _, p, o in processed}) >= total, 180, "every record processed")
        await a.stop()
        await b.stop()

    asyncio.run(scenario())
    by_record: dict[tuple[int, int], list[str]] = {}
    for name, partition, offset in processed:
        by_record.setdefault((partition, offset), []).append(name)
    twice = {record: names for record, names in by_record.items() if len(names) > 1}
    assert twice == {}
    assert {name for name, _, _ in processed} == {"a", "b"}, "the rebalance gave b a partition"


@PROTOCOLS
def test_the_next_owner_skips_what_the_last_one_completed_above_its_committed_offset(
    group_coordinator, kafka_bootstrap, topic_factory, group_id_factory, group_protocol
):
    topic = topic_factory(partitions=1)
    total = 100
    produce(kafka_bootstrap, topic, [(0, b"k%d" % i, b"%d" % i) for i in range(total)])
    group = group_id_factory()
    bootstrap = group_coordinator.bootstrap_servers
    tp = TopicPartition(topic, 0)
    first: list[int] = []
    cancelled: list[int] = []

    async def slow_on_ten(record: kgroup.ConsumerRecord[bytes, bytes]) -> None:
        if record.offset == 10:
            try:
                await asyncio.Event().wait()  # never returns: close() cancels it
            except asyncio.CancelledError:
                cancelled.append(record.offset)
                raise
        first.append(record.offset)

    async def first_owner() -> None:
        a = Member(processor(bootstrap, group, slow_on_ten, group_protocol, max_concurrency=8, revoke_timeout_ms=200),
                   topic)
        await until(lambda: len(first) == total - 1, 60, "all but record 10 processed")
        await a.stop()  # close: record 10 still running after revoke_timeout_ms, not committed

    asyncio.run(first_owner())
    assert cancelled == [10]
    om = committed(bootstrap, group, [tp])[tp]
    assert om is not None and om.offset == 10
    assert decode_completed(om.metadata, 10) == set(range(11, total))

    second: list[int] = []

    async def record_it(record: kgroup.ConsumerRecord[bytes, bytes]) -> None:
        second.append(record.offset)

    async def second_owner() -> None:
        b = Member(processor(bootstrap, group, record_it, group_protocol), topic)
        skipped = lambda: b.processor.metrics()["parallel-records-skipped-total"]  # noqa: E731
        await until(lambda: skipped() == total - 11, 60, "the rest skipped")
        await b.stop()

    asyncio.run(second_owner())
    assert second == [10]
    assert committed(bootstrap, group, [tp])[tp].offset == total


def test_after_a_kill_9_only_records_not_covered_by_the_last_commit_are_redone(
    kafka_bootstrap, group_coordinator, topic_factory, group_id_factory, tmp_path: Path
):
    """An asyncio member killed mid-processing: its commits never covered a record not completed,
    and the next one skips every record they covered (below the committed offset, or completed
    above it per the metadata). What is redone is printed next to the bound (the tasks in
    flight, ``max_concurrency``, plus those completed since the last commit landed).
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
        [sys.executable, str(root / "tests" / "integration" / "aio_parallel_worker.py"), bootstrap, topic, group,
         str(out)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        wait_until(lambda: len(out.read_text().splitlines()) >= total // 3, 90, "a third processed")
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(30)
    first = {tuple(map(int, line.split())) for line in out.read_text().splitlines() if line.count(" ") == 1}
    tps = [TopicPartition(topic, p) for p in (0, 1)]
    covered: set[tuple[int, int]] = set()
    for tp, om in committed(bootstrap, group, tps).items():
        if om is not None:
            covered |= {(tp.partition, o) for o in range(om.offset)}
            covered |= {(tp.partition, o) for o in decode_completed(om.metadata, om.offset)}
    assert covered, "the killed member committed nothing"
    assert covered <= first  # a commit never covers a record not completed

    second: set[tuple[int, int]] = set()

    async def handle(record: kgroup.ConsumerRecord[bytes, bytes]) -> None:
        second.add((record.partition, record.offset))

    async def next_owner() -> None:
        b = Member(processor(bootstrap, group, handle), topic)
        await until(lambda: len(second) >= total - len(covered), 90, "the rest processed")
        await b.stop()

    asyncio.run(next_owner())
    everything = {(p, o) for p in (0, 1) for o in range(total // 2)}
    assert second == everything - covered  # nothing covered redone, nothing skipped
    print(
        f"\nkill -9 after {len(first)} records: {len(first & second)} redone "
        f"(max_concurrency={MAX_CONCURRENCY}, commit_interval_ms={COMMIT_INTERVAL_MS})"
    )
