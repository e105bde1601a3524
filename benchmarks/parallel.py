"""Parallel processing benchmark: ``ParallelProcessor`` against the plain poll loop and aiokafka.

One topic (``--partitions``, 12) of ``--records`` (20,000) records of 100 B over ``--keys``
(1,000) keys, on one broker for the whole run: ``--broker tansu`` (the embedded one, behind
the coordinator proxy, which keeps commit metadata as Apache Kafka does) or ``--broker
apache-kafka`` (Apache Kafka 4.4 from ``kgroup.testing``, ``group.initial.rebalance.delay.ms=0``).
Each contender reads the topic in its own consumer group; a handler waits ``--handler-ms`` (10)
ms per record, standing for I/O. Throughput, records/s = records / (first handler start -> last
handler end), so the group join is left out:

* the plain loop: kgroup's ``poll()``, the handler (``time.sleep``) per record, one at a time,
  over ``--plain-records`` (300);
* aiokafka, one asyncio task per partition, each awaiting ``asyncio.sleep`` per record in
  offset order and committing after each batch, over ``--peer-records`` (4,000);
* ``ParallelProcessor`` with each ``ordering`` ("key", "partition", "unordered") at
  ``--concurrency`` (64), the handler ``time.sleep``; every record ("partition" over
  ``--peer-records``: its parallelism is the partitions', as aiokafka's), the order of every
  key (or partition) checked.

Then the records redone after a crash, with the commit metadata (the default) and without it
(``commit_metadata=False``): a member process (``ParallelProcessor``, ``ordering="key"``) is
killed with SIGKILL once it has completed ``--kill-at`` (half) of the records; a second member
then joins and processes the rest. Each member logs every handler start and end (``os.write``
on an ``O_APPEND`` file, so that a SIGKILL loses nothing written). Reported: the records
running at the kill (started, not ended, in the first member's log), those it completed that no
landed commit covers (read back from the group's committed offsets and metadata), the records
whose handler ran twice (started in both logs), and the records lost (ended in neither: must be
0). A record is in flight from its handler's start until a commit that landed covers its completion (the
committed offset, or the metadata's completions): running at the kill, or completed and waiting
for the next commit. The run exits with status 1 if any kill redid more records than were in
flight (a completion a landed commit covers was done again) or lost one.

Every figure is the median over ``--repeat`` (3) rounds; the load average is printed with the
results (the machine's load slows threads waking up).

    python benchmarks/parallel.py --broker apache-kafka --repeat 3
    python benchmarks/parallel.py --records 50000 --concurrency 128 --handler-ms 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import kgroup  # noqa: E402
from kgroup.testing import create_topic, produce, start_broker  # noqa: E402

ORDERINGS = ("key", "partition", "unordered")
#: the kill scenario's members: a dead member's partitions move after this long
SESSION_TIMEOUT_MS = 6000
DEADLINE_S = 600.0


class Span:
    """The first start and the last end of the handlers, and the records of each lane in order."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.first = float("inf")
        self.last = 0.0
        self.count = 0
        self.order_broken = 0
        self.last_offset: dict[tuple[int, bytes | None], int] = {}

    def record(self, partition: int, key: bytes | None, offset: int, started: float) -> None:
        with self.lock:
            self.first = min(self.first, started)
            self.last = max(self.last, time.monotonic())
            self.count += 1
            lane = (partition, key)
            if self.last_offset.get(lane, -1) > offset:
                self.order_broken += 1
            self.last_offset[lane] = offset

    def rate(self) -> float:
        return self.count / (self.last - self.first) if self.count > 1 else 0.0


def _consumer(bootstrap: str, **extra: Any) -> kgroup.Consumer:
    return kgroup.Consumer(
        bootstrap_servers=bootstrap, group_id=extra.pop("group_id", f"bench-{uuid.uuid4().hex[:8]}"),
        enable_auto_commit=False, auto_offset_reset="earliest", max_poll_records=500, **extra,
    )


def _wait(condition: Callable[[], bool], what: str, timeout_s: float = DEADLINE_S, step_s: float = 0.05) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout_s:.0f} s")
        time.sleep(step_s)


# ---------------------------------------------------------------- throughput
def plain(bootstrap: str, topic: str, records: int, handler_s: float) -> float:
    span = Span()
    deadline = time.monotonic() + DEADLINE_S
    with _consumer(bootstrap) as consumer:
        consumer.subscribe([topic])
        while span.count < records:
            if time.monotonic() > deadline:
                raise TimeoutError("plain loop")
            for record in consumer.poll(100):
                started = time.monotonic()
                time.sleep(handler_s)
                span.record(record.partition, None, record.offset, started)
                if span.count >= records:
                    break
    return span.rate()


def aiokafka_per_partition(bootstrap: str, topic: str, records: int, handler_s: float) -> float:
    """aiokafka, one task per assigned partition: ``getmany(tp)``, await the handler per record."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    span = Span()

    async def go() -> None:
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=f"bench-aio-{uuid.uuid4().hex[:8]}",
            auto_offset_reset="earliest", enable_auto_commit=False, max_poll_records=500,
        )
        await consumer.start()
        done = asyncio.Event()

        async def partition_task(tp: TopicPartition) -> None:
            while not done.is_set():
                batch = (await consumer.getmany(tp, timeout_ms=100, max_records=500)).get(tp, [])
                for record in batch:
                    started = time.monotonic()
                    await asyncio.sleep(handler_s)  # the handler's I/O
                    span.record(record.partition, None, record.offset, started)
                    if span.count >= records:
                        done.set()
                    if done.is_set():
                        return
                if batch:
                    await consumer.commit({tp: batch[-1].offset + 1})

        try:
            deadline = time.monotonic() + DEADLINE_S
            while not consumer.assignment():  # aiokafka joins in the background after start()
                if time.monotonic() > deadline:
                    raise TimeoutError("aiokafka: no assignment")
                await asyncio.sleep(0.05)
            tasks = [asyncio.create_task(partition_task(tp)) for tp in sorted(consumer.assignment())]
            await asyncio.wait_for(asyncio.gather(*tasks), DEADLINE_S)
        finally:
            await consumer.stop()

    asyncio.run(go())
    return span.rate()


def parallel(bootstrap: str, topic: str, records: int, handler_s: float, concurrency: int, ordering: str) -> Span:
    span = Span()

    def handler(record: kgroup.ConsumerRecord) -> None:
        started = time.monotonic()
        time.sleep(handler_s)
        span.record(record.partition, record.key if ordering == "key" else None, record.offset, started)

    processor = kgroup.ParallelProcessor(
        _consumer(bootstrap), handler, ordering=ordering, max_concurrency=concurrency  # type: ignore[arg-type]
    )
    deadline = time.monotonic() + DEADLINE_S
    with processor:
        processor.subscribe([topic])
        processor.run(until=lambda: span.count >= records or time.monotonic() > deadline)
    if span.count < records:
        raise TimeoutError(f"ParallelProcessor(ordering={ordering!r})")
    if ordering != "unordered" and span.order_broken:
        raise AssertionError(f"ordering={ordering!r}: order broken {span.order_broken} times")
    return span


# ---------------------------------------------------------------- a member killed with SIGKILL
def member_main(args: argparse.Namespace) -> int:
    """``--member``: a ``ParallelProcessor`` logging each handler's start and end, until SIGTERM."""
    fd = os.open(args.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def handler(record: kgroup.ConsumerRecord) -> None:
        os.write(fd, b"S %d %d\n" % (record.partition, record.offset))
        time.sleep(args.handler_ms / 1000)
        os.write(fd, b"E %d %d\n" % (record.partition, record.offset))

    consumer = _consumer(
        args.bootstrap, group_id=args.group, session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=1000
    )
    processor = kgroup.ParallelProcessor(
        consumer, handler, ordering="key", max_concurrency=args.concurrency[0],
        commit_interval_ms=args.commit_interval_ms, commit_metadata=args.commit_metadata == "on",
    )
    signal.signal(signal.SIGTERM, lambda *_: processor.stop())
    with processor:
        processor.subscribe([args.topic])
        processor.run()
        metrics = processor.metrics()
    print(json.dumps({"skipped": metrics["parallel-records-skipped-total"]}), flush=True)
    return 0


def _read_log(path: Path) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    started: set[tuple[int, int]] = set()
    ended: set[tuple[int, int]] = set()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return started, ended
    for line in data[: data.rfind(b"\n") + 1].splitlines():  # not a last line being written
        kind, partition, offset = line.split()
        (started if kind == b"S" else ended).add((int(partition), int(offset)))
    return started, ended


def _ended_count(path: Path) -> int:
    try:
        return path.read_bytes().count(b"E ")
    except FileNotFoundError:
        return 0


def _committed_claim(bootstrap: str, group: str) -> set[tuple[int, int]] | None:
    """The records the group's committed offsets and metadata claim are done (None: unreadable)."""
    from kgroup._parallel.offsets import decode_completed
    from kgroup.admin import GroupAdmin

    try:
        admin = GroupAdmin.connect(bootstrap)
        try:
            committed = admin.committed_offsets(group)
        finally:
            admin.close()
    except kgroup.KGroupError as exc:
        print(f"the committed offsets of {group} could not be read: {exc!r}", flush=True)
        return None
    claimed: set[tuple[int, int]] = set()
    for tp, om in committed.items():
        claimed.update((tp.partition, offset) for offset in range(om.offset))
        claimed.update((tp.partition, offset) for offset in decode_completed(om.metadata, om.offset))
    return claimed


def kill_run(bootstrap: str, topic: str, args: argparse.Namespace, metadata: str, run_dir: Path) -> dict[str, Any]:
    group = f"bench-kill-{metadata}-{uuid.uuid4().hex[:8]}"
    logs = [run_dir / f"{group}-a.log", run_dir / f"{group}-b.log"]
    members: list[subprocess.Popen[bytes]] = []

    def spawn(log: Path) -> subprocess.Popen[bytes]:
        out = open(log.with_suffix(".out"), "wb")  # noqa: SIM115  (the member's own)
        command = [sys.executable, __file__, "--member", "--bootstrap", bootstrap, "--topic", topic, "--group", group,
                   "--log", str(log), "--commit-metadata", metadata, "--concurrency", str(args.concurrency[0]),
                   "--handler-ms", str(args.handler_ms), "--commit-interval-ms", str(args.commit_interval_ms)]
        member = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        members.append(member)
        return member

    try:
        first = spawn(logs[0])
        _wait(lambda: _ended_count(logs[0]) >= args.records * args.kill_at or first.poll() is not None,
              "the first member's share")
        if first.poll() is not None:
            raise RuntimeError(f"the first member exited ({first.returncode}): see {logs[0].with_suffix('.out')}")
        first.kill()  # SIGKILL: no revocation, no last commit
        first.wait(60)
        started_a, ended_a = _read_log(logs[0])
        claimed = _committed_claim(bootstrap, group)  # what the commits that landed say is done
        spawn(logs[1])
        _wait(lambda: len(ended_a | _read_log(logs[1])[1]) >= args.records, "the second member's share", step_s=0.5)
        members[1].send_signal(signal.SIGTERM)
        members[1].wait(120)
        started_b, ended_b = _read_log(logs[1])
        lines = logs[1].with_suffix(".out").read_text().strip().splitlines()
        skipped = json.loads(lines[-1])["skipped"] if lines and lines[-1].startswith("{") else float("nan")
    finally:
        for member in members:
            if member.poll() is None:
                member.kill()
                member.wait(60)
    return {
        "uncommitted": len(ended_a - claimed) if claimed is not None else float("nan"),
        "in_flight": len(started_a - ended_a),
        "redone": len(started_a & started_b),
        "lost": args.records - len(ended_a | ended_b),
        "done_at_kill": len(ended_a),
        "skipped": skipped,
    }


# ---------------------------------------------------------------- the run
def _median(values: Sequence[float]) -> float:
    return statistics.median(values)


def _spread(values: Sequence[float]) -> str:
    return f"{min(values):,.0f}-{max(values):,.0f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--broker", choices=("tansu", "apache-kafka"), default="tansu")
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--plain-records", type=int, default=300)
    parser.add_argument("--peer-records", type=int, default=4000)
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--handler-ms", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, nargs=1, default=[64])
    parser.add_argument("--commit-interval-ms", type=int, default=100)
    parser.add_argument("--kill-at", type=float, default=0.5, help="fraction of --records done at the kill")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-kill", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true", help="only the kill scenario")
    # a member of the kill scenario (the benchmark runs itself)
    parser.add_argument("--member", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--group", help=argparse.SUPPRESS)
    parser.add_argument("--log", help=argparse.SUPPRESS)
    parser.add_argument("--commit-metadata", choices=("on", "off"), default="on", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.member:
        return member_main(args)

    stack: list[Any] = []
    try:
        if args.broker == "apache-kafka":
            broker = start_broker(kind="apache-kafka", overrides={"group.initial.rebalance.delay.ms": 0},
                                  startup_timeout_s=180)
            stack.append(broker)
            bootstrap = broker.bootstrap_servers
            label = str(broker.version)
        else:
            from kgroup.testing.coordinator import CoordinatorConfig
            from kgroup.testing.proxy import CoordinatorProxy

            broker = start_broker(kind="tansu")
            stack.append(broker)
            proxy = CoordinatorProxy(broker.bootstrap_servers,
                                     config=CoordinatorConfig(group_initial_rebalance_delay_ms=0)).start()
            stack.append(proxy)
            bootstrap = proxy.bootstrap_servers
            label = f"{broker.version} (embedded) behind the coordinator proxy"
        topic = f"bench-parallel-{uuid.uuid4().hex[:8]}"
        create_topic(broker.bootstrap_servers, topic, partitions=args.partitions)
        produce(
            broker.bootstrap_servers, topic,
            [(i % args.partitions, b"key-%d" % (i % args.keys), b"x" * 100) for i in range(args.records)],
            timeout_s=300,
        )
        handler_s = args.handler_ms / 1000
        concurrency = args.concurrency[0]
        rates: dict[str, list[float]] = {}
        kills: dict[str, list[dict[str, Any]]] = {"on": [], "off": []}
        loads: list[float] = [os.getloadavg()[0]]
        run_dir = Path(tempfile.mkdtemp(prefix="bench-parallel-"))
        for round_ in range(args.repeat):
            if not args.skip_throughput:
                rates.setdefault("plain", []).append(plain(bootstrap, topic, args.plain_records, handler_s))
                rates.setdefault("aiokafka", []).append(
                    aiokafka_per_partition(bootstrap, topic, args.peer_records, handler_s))
                for ordering in ORDERINGS:
                    count = args.peer_records if ordering == "partition" else args.records
                    span = parallel(bootstrap, topic, count, handler_s, concurrency, ordering)
                    rates.setdefault(ordering, []).append(span.rate())
                loads.append(os.getloadavg()[0])
            if not args.skip_kill:
                for metadata in ("on", "off"):
                    kills[metadata].append(kill_run(bootstrap, topic, args, metadata, run_dir))
                loads.append(os.getloadavg()[0])
            print(f"round {round_ + 1}/{args.repeat}: "
                  + ", ".join(f"{name} {values[-1]:,.0f}" for name, values in rates.items())
                  + "".join(f"; kill metadata={m}: {v[-1]}" for m, v in kills.items() if v), flush=True)
    finally:
        for item in reversed(stack):
            item.stop()

    print(f"\n{label}; load average {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} CPUs; "
          f"{args.records:,} records of 100 B, {args.keys:,} keys, {args.partitions} partitions, "
          f"{args.handler_ms:g} ms handler; medians over {args.repeat} rounds [min-max]")
    if not args.skip_throughput:
        base, peer = _median(rates["plain"]), _median(rates["aiokafka"])
        print("\n| loop | records/s | [min-max] | x plain | x aiokafka |")
        print("|---|---:|---:|---:|---:|")
        rows = [("plain", "plain `poll()` loop (kgroup), one record at a time"),
                ("aiokafka", f"aiokafka, one asyncio task per partition ({args.partitions})")]
        rows += [(o, f"`ParallelProcessor(ordering={o!r}, max_concurrency={concurrency})`") for o in ORDERINGS]
        for name, title in rows:
            rate = _median(rates[name])
            print(f"| {title} | {rate:,.0f} | {_spread(rates[name])} | {rate / base:.1f} | {rate / peer:.2f} |")
    if not args.skip_kill:
        print(f"\nSIGKILL of a member (`ordering='key'`, `max_concurrency={concurrency}`, "
              f"`commit_interval_ms={args.commit_interval_ms}`) after {args.kill_at:.0%} of the records; "
              f"medians over {args.repeat} [min-max]")
        print("\n| commit metadata | running at the kill | completed, not in a landed commit "
              "| in flight (both) | records redone | redone - in flight | skipped by the second member | lost |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for metadata, title in (("on", "on (default)"), ("off", "off (`commit_metadata=False`)")):
            runs = kills[metadata]
            cells = []
            for values in ([run["in_flight"] for run in runs], [run["uncommitted"] for run in runs],
                           [run["in_flight"] + run["uncommitted"] for run in runs],
                           [run["redone"] for run in runs],
                           [run["redone"] - run["in_flight"] - run["uncommitted"] for run in runs]):
                cells.append(f"{_median(values):,.0f} [{_spread(values)}]")
            cells.append(f"{_median([run['skipped'] for run in runs]):,.0f}")
            cells.append(f"{max(run['lost'] for run in runs)}")
            print(f"| {title} | " + " | ".join(cells) + " |")
        broken = [(metadata, run) for metadata, runs in kills.items() for run in runs
                  if run["lost"] or not run["redone"] <= run["in_flight"] + run["uncommitted"]]
        if broken:  # a committed completion done again, or a record never done: the guarantee broke
            for metadata, run in broken:
                print(f"FAIL: metadata={metadata}: {run}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
