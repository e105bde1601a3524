"""A work queue on a share group (KIP-932): twelve workers on three partitions, one poisoned record, one crash.

Run it::

    python examples/work_queue.py                                  # starts Apache Kafka from kgroup.testing
    KGROUP_BOOTSTRAP_SERVERS=broker:9092 python examples/work_queue.py   # on your cluster (Apache Kafka 4.1+)

Share groups need Apache Kafka 4.1 or later with the ``share.version`` feature on (a new 4.4
cluster has it; docs/share-groups.md, "The broker"). Tansu, kgroup's embedded test broker, has no
share groups: on it the workers fail with ``FatalGroupError`` and the example says so.

What it does: writes ``RECORDS`` (3000) jobs over 60 keys to a new three-partition topic, one of
them poisoned, then starts ``WORKERS`` (12) worker processes in one share group. Twelve workers on
three partitions is the point: in a consumer group nine of them would sit idle; in a share group
they all take records from the same partitions, under acquisition locks. Each worker
(``kgroup.ShareConsumer`` in explicit mode, ``share_acquire_mode="record_limit"``, at most 10
records per ``poll()``):

* works on each record for 1 to 10 ms (30 ms for the records of six slow keys), then
  acknowledges it: ``ACCEPT``; the poisoned record: ``REJECT`` (archived, never delivered again);
* sends the acknowledgements with ``commit_sync()`` and reports only what the broker answered
  without error (a record whose lock expired would come back to someone else).

The first worker to have records accepted is killed with SIGKILL half-way through its next batch
(the demo tells it on its stdin; it stops there and reports what it holds): the records it held were
never acknowledged, the broker releases them when the connection drops (or at the latest when
their locks expire: the group's ``share.record.lock.duration.ms``), and other workers get them
with ``delivery_count`` 2.

Before the workers start, the example sets the group's configs with ``kgroup.testing.alter_group_configs``
(IncrementalAlterConfigs on the GROUP resource): ``share.auto.offset.reset=earliest`` (a new share
group otherwise starts at the partitions' ends) and ``share.record.lock.duration.ms=15000``
(the lowest the broker allows by default, ``group.share.min.record.lock.duration.ms``; the
default is 30000). The jobs are written once every worker fetches (after 60 s at the latest;
where the cluster refuses the group configs, only then: a new share group starts at the ends).

The last line is ``PASS: ...`` when every record but the poisoned one was accepted exactly once,
the poisoned one rejected and never accepted, and every record the killed worker held was
delivered again to another (delivery count 2 or more); else ``FAIL: ...`` and exit code 1.

Environment: ``RECORDS`` (3000), ``WORKERS`` (12), ``TIMEOUT_S`` (give up after that long, 300).
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from typing import Any

KEYS = 60
SLOW_KEYS = 6  # keys 0-5: 30 ms per record
MAX_POLL_RECORDS = 10


def poisoned(records: int) -> int:
    """The index of the poisoned job among ``records``."""
    return records * 41 // 100


def job(i: int, poison: int) -> tuple[int, bytes, bytes]:
    """Job ``i``: (partition, key, value); the value says how long the work takes, or that it is poisoned."""
    key = i % KEYS
    work_ms = 30 if key < SLOW_KEYS else 1 + (i * 7919) % 10
    value = f"{i}:poison" if i == poison else f"{i}:{work_ms}"
    return key % 3, f"customer-{key}".encode(), value.encode()


# ====================================================================== the worker process
def parse(value: bytes | None) -> tuple[str, str]:
    """A job's value: its index, and its work in ms (or ``poison``)."""
    index, _, work = (value or b"").decode().partition(":")
    return index, work


def worker(number: int, bootstrap: str, group: str, topic: str) -> int:
    """One worker: poll, work, acknowledge, commit; report each outcome the broker answered on stdout."""
    import kgroup
    from kgroup import AcknowledgeType
    from kgroup.errors import FatalGroupError

    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.set())
    crash = threading.Event()  # the demo chose this worker to crash in its next batch

    def listen() -> None:
        for line in sys.stdin:
            if line.strip() == "crash":
                crash.set()

    threading.Thread(target=listen, daemon=True).start()
    consumer: kgroup.ShareConsumer[bytes, bytes] = kgroup.ShareConsumer(
        bootstrap_servers=bootstrap, group_id=group, client_id=f"worker-{number}",
        share_acknowledgement_mode="explicit", share_acquire_mode="record_limit", max_poll_records=MAX_POLL_RECORDS,
    )

    def say(line: str) -> None:
        print(line, flush=True)

    fetching = False
    try:
        consumer.subscribe([topic])
        while not stopping.is_set():
            records = consumer.poll(500)
            if not fetching and consumer.assignment() and consumer.acquisition_lock_timeout_ms() is not None:
                fetching = True
                say(f"fetching lock={consumer.acquisition_lock_timeout_ms()}")
            if not records:
                continue
            done: list[tuple[Any, str, str]] = []
            for n, record in enumerate(records):
                if crash.is_set() and len(records) > 1 and n == len(records) // 2:
                    # mid-batch: what it holds was never acknowledged; wait for the SIGKILL
                    say("held " + " ".join(parse(r.value)[0] for r in records))
                    while True:
                        time.sleep(60)
                index, work = parse(record.value)
                if work == "poison":
                    consumer.acknowledge(record, type=AcknowledgeType.REJECT)
                    done.append((record, index, "R"))
                else:
                    time.sleep(int(work) / 1000)  # the work
                    consumer.acknowledge(record)  # ACCEPT
                    done.append((record, index, "A"))
            outcome = consumer.commit_sync(30000)
            for record, index, kind in done:
                error = outcome.get(kgroup.TopicPartition(record.topic, record.partition))
                if error is None:
                    say(f"{kind} {index} {record.delivery_count}")
                else:  # the lock expired: the broker gives the record to another worker
                    say(f"failed {index} {type(error).__name__}")
    except FatalGroupError as exc:
        say(f"fatal {exc}")
        return 2
    finally:
        consumer.close(timeout_ms=10000)
    return 0


# ====================================================================== the demo
class Worker:
    """A worker process and what it reported (read on a thread of its own)."""

    def __init__(self, number: int, bootstrap: str, group: str, topic: str, report: Any) -> None:
        self.number = number
        self.lines: list[str] = []
        self.held: list[int] = []
        self.fetching = threading.Event()
        self.process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", str(number), bootstrap, group, topic],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
        )
        self._report = report
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            line = line.strip()
            self.lines.append(line)
            if line.startswith("fetching"):
                self.fetching.set()
            elif line.startswith("held "):
                self.held = [int(i) for i in line.split()[1:]]
            self._report(self, line)

    def join(self, timeout_s: float) -> None:
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(5)


def main() -> int:
    from kgroup.testing import alter_group_configs, create_topic, start_broker

    records = int(os.environ.get("RECORDS", "3000"))
    workers_n = int(os.environ.get("WORKERS", "12"))
    timeout_s = float(os.environ.get("TIMEOUT_S", "300"))
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"work-queue-{suffix}", f"work-queue-{suffix}"

    # KGROUP_BOOTSTRAP_SERVERS's cluster when set, else Apache Kafka (Tansu has no share groups)
    broker = start_broker() if os.environ.get("KGROUP_BOOTSTRAP_SERVERS") else start_broker(kind="apache-kafka")
    started = time.monotonic()
    try:
        bootstrap = broker.bootstrap_servers
        print(f"kafka broker: {broker.kind} at {bootstrap}", flush=True)
        if broker.kind == "tansu":
            print("FAIL: Tansu serves no share groups (KIP-932); run this on Apache Kafka 4.1+ "
                  "(unset KGROUP_BROKER, or KGROUP_BOOTSTRAP_SERVERS=<an Apache Kafka 4.1+ cluster>)")
            return 1
        create_topic(bootstrap, topic, partitions=3)
        jobs = [job(i, poisoned(records)) for i in range(records)]
        try:
            alter_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest",
                                                   "share.record.lock.duration.ms": "15000"})
            configured = True
            print(f"group {group}: share.auto.offset.reset=earliest, share.record.lock.duration.ms=15000", flush=True)
        except Exception as exc:
            configured = False
            print(f"group configs not set ({exc}): a new share group starts at the partitions' ends, so the jobs "
                  "wait for every worker to fetch; locks last 30 s", flush=True)
        return run(bootstrap, group, topic, jobs, workers_n, timeout_s, configured, started)
    finally:
        broker.stop()


def run(bootstrap: str, group: str, topic: str, jobs: list[tuple[int, bytes, bytes]], workers_n: int,
        timeout_s: float, configured: bool, started: float) -> int:
    from kgroup.testing import produce

    records = len(jobs)
    poison = poisoned(records)
    lock = threading.Lock()
    accepted: collections.Counter[int] = collections.Counter()
    rejected: collections.Counter[int] = collections.Counter()
    delivery: dict[int, list[tuple[int, int]]] = collections.defaultdict(list)  # index -> [(worker, count)]
    failed: list[str] = []
    fatal: list[str] = []
    progress = threading.Condition(lock)
    victim: list[Worker] = []  # the worker chosen to crash: the first to have records accepted

    def on_line(w: Worker, line: str) -> None:
        kind, _, rest = line.partition(" ")
        with progress:
            if kind in ("A", "R"):
                index, count = (int(x) for x in rest.split())
                (accepted if kind == "A" else rejected)[index] += 1
                delivery[index].append((w.number, count))
                if not victim:
                    victim.append(w)
                    print(f"worker-{w.number} will crash in its next batch", flush=True)
                    assert w.process.stdin is not None
                    w.process.stdin.write("crash\n")
                    w.process.stdin.flush()
            elif kind == "failed":
                failed.append(f"worker-{w.number}: {rest}")
            elif kind == "fatal":
                fatal.append(f"worker-{w.number}: {rest}")
            elif kind == "held":
                print(f"worker-{w.number} holds jobs {rest} mid-batch: SIGKILL", flush=True)
                w.process.kill()
            progress.notify_all()

    workers = [Worker(n, bootstrap, group, topic, on_line) for n in range(workers_n)]
    deadline = started + timeout_s
    try:
        # the jobs go once every worker fetches, so that all twelve share them from the start (with
        # share.auto.offset.reset=earliest a late worker misses nothing: after 60 s they go anyway)
        fetch_deadline = min(deadline, time.monotonic() + 60) if configured else deadline
        while not all(w.fetching.is_set() for w in workers) and not fatal and time.monotonic() < fetch_deadline:
            time.sleep(0.2)
        print(f"{sum(w.fetching.is_set() for w in workers)} of {workers_n} workers fetching after "
              f"{time.monotonic() - started:.0f} s", flush=True)
        produce(bootstrap, topic, jobs, timeout_s=120)
        print(f"{records} jobs over {KEYS} keys in {topic} (3 partitions), job {poison} poisoned", flush=True)
        printed = time.monotonic()
        with progress:
            while len(accepted) + len(rejected) < records and not fatal and time.monotonic() < deadline:
                progress.wait(1.0)
                if time.monotonic() > printed + 5:
                    printed = time.monotonic()
                    print(f"{len(accepted)} accepted, {len(rejected)} rejected of {records} after "
                          f"{printed - started:.0f} s", flush=True)
    finally:
        for w in workers:
            if w.process.poll() is None:
                w.process.send_signal(signal.SIGTERM)
        for w in workers:
            w.join(30)
    elapsed = time.monotonic() - started
    per_worker = collections.Counter(n for index in accepted for n, _ in delivery[index])
    busy = sum(1 for w in workers if per_worker[w.number] > 0)
    redelivered = sorted(i for i, got in delivery.items() if any(count > 1 for _, count in got))

    problems = []
    if fatal:
        problems.append(f"workers failed: {fatal[0]}" + (
            " (this cluster serves no share groups: Apache Kafka 4.1+ with share.version does; Tansu has none)"
            if "UNSUPPORTED_VERSION" in fatal[0] or "share groups" in fatal[0].lower() else ""))
    expected = set(range(records)) - {poison}
    missing = sorted(expected - set(accepted))
    twice = sorted(i for i, n in accepted.items() if n > 1)
    if missing:
        problems.append(f"{len(missing)} records never accepted (first {missing[:5]})")
    if twice:
        problems.append(f"{len(twice)} records accepted more than once (first {twice[:5]})")
    if accepted[poison] or rejected[poison] != 1 or set(rejected) != {poison}:
        problems.append(f"the poisoned record: accepted {accepted[poison]}, rejected {rejected[poison]} times; "
                        f"rejected records {sorted(rejected)[:5]}")
    held = victim[0].held if victim else []
    victim_n = victim[0].number if victim else -1
    if not held:
        problems.append("no worker was killed mid-batch" + (
            f" (worker-{victim_n}, chosen, got no batch of two records or more after)" if victim else ""))
    again = [i for i in held if any(n != victim_n and count >= 2 for n, count in delivery.get(i, []))]
    if held and len(again) != len(held):
        problems.append(f"of the {len(held)} records the killed worker held, {len(held) - len(again)} were not "
                        f"delivered again to another worker with delivery_count 2+")
    if problems:
        print("FAIL: " + "; ".join(problems))
        return 1
    counts = sorted({count for i in held for n, count in delivery[i] if n != victim_n})
    print(f"PASS: {len(accepted)}/{len(expected)} records accepted exactly once by {busy} of {workers_n} workers "
          f"on 3 partitions, 1 poisoned record rejected and never accepted, worker-{victim_n} killed holding "
          f"{len(held)} records: all redelivered to others (delivery_count {'/'.join(map(str, counts))}), "
          f"{len(redelivered)} redelivered in all, {len(failed)} acknowledgements refused, {elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        sys.exit(worker(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]))
    sys.exit(main())
