"""Consume throughput: kgroup against kafka-python, aiokafka, confluent-kafka and Java's consumer.

One topic is produced once; then each client drains it in its own subprocess (so peak RSS is
per client), as a member of its own consumer group, with CRC checks on. Every client touches
each record's key, value, offset, partition and headers, checks per-partition offset order,
and commits its offsets at the end. The rate is records / (time from the start of the first
poll that returned records to the last record), so group-join time is left out; the wall time
including the join is reported too.

    python benchmarks/throughput.py                       # 1M records x 100 B, 12 partitions
    python benchmarks/throughput.py --records 20000       # quick smoke run
    python benchmarks/throughput.py --clients kgroup,aiokafka --profile
    python benchmarks/throughput.py --broker apache-kafka --repeat 3   # all of them, 3 rounds
    python benchmarks/throughput.py --repeat 3 --work-ms-per-100 1     # a slow consumer
    python benchmarks/throughput.py --repeat 3 --size 1024             # 1 KiB records

``--work-ms-per-100 MS`` makes every client (the Java one too) sleep ``MS`` after each 100
records it touched: processing that waits, as a call to a database would, during which a client
that fetches ahead keeps its next records coming.

A broker is started with ``kgroup.testing.start_broker()`` (``--broker``: the environment's
choice, unless ``KGROUP_BOOTSTRAP_SERVERS`` is set; ``tansu``; or ``apache-kafka`` 4.4.0).

``java`` is Apache Kafka's own ``org.apache.kafka.clients.consumer.KafkaConsumer`` (kafka-clients
4.4.0, classic group protocol, byte-array deserializers, ``check.crcs=true``,
``max.poll.records=500``) in a JVM with HotSpot's defaults, running
``tests/peers/JavaPeer.java --mode throughput`` (compiled once with ``javac``) on the jars of
``python -m kgroup.testing.apache_kafka fetch``; it does per record what the Python clients do.
On Tansu it is kafka-clients 3.9.1 (``--java-clients``): Tansu v0.6.0 closes the connection on
the ApiVersions v5 request of kafka-clients 4.x.
Its wall time leaves out the JVM's start (it starts counting where the Python children do:
before the consumer is built).

``--repeat N`` runs every client N times, the clients interleaved in each round (so a slow
minute of a shared machine hits all of them), on the same topic, each run in a new group; the
table shows the median records/s with [min-max] and the ratio of kgroup's median to each
client's median, all from this one run.

CPU seconds per million records, two ways: ``process``, the user + system CPU of the client's
whole process from start to exit (``getrusage(RUSAGE_CHILDREN)``: start, join, drain, commit
and close; the JVM's start and JIT compilation for ``java``), the same measure for every client;
``drain``, the process's CPU (all its threads, ``time.process_time``) from the first poll that
returned records to the last record, for the Python clients. On a loaded machine CPU per record
says more than records/s: waiting for a core costs time, not CPU.

``kgroup-columns`` is kgroup's ``Consumer.poll_columns()`` (one ``RecordColumns`` per partition
instead of a ``ConsumerRecord`` per record), its records touched one by one as the others do;
``kgroup-columns-bulk`` is ``poll_columns()`` as a columnar reader uses it (``max_poll_records``
10,000, each partition's ``to_arrow()`` batch checked and summed in Arrow's compute kernels, no
Python code per record: the same checks, per column);
``kgroup-no-sessions`` is ``poll()`` with KIP-227 fetch sessions off (every Fetch a full one,
listing every partition, as before them): beside ``kgroup`` at ``--partitions 1000`` it shows
what the sessions save. ``--partitions 1000`` is the many-partitions variant: the same records
spread over 1,000 partitions.

``--profile`` runs the kgroup child under pyinstrument (poll thread) and writes the
text report next to this file (``profile-kgroup.txt``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CLIENTS = ("kgroup", "kgroup-columns", "kgroup-columns-bulk", "kgroup-no-sessions", "kafka-python", "aiokafka",
           "confluent", "java")
PYTHON_CLIENTS = CLIENTS[:-1]
SESSION_TIMEOUT_MS = 6000  # Tansu joins take session_timeout_ms / 2
HEARTBEAT_MS = 2000
MAX_POLL_RECORDS = 500
#: ``max_poll_records`` of the bulk columnar client (``kgroup-columns-bulk``)
BULK_POLL_RECORDS = 10000


# ------------------------------------------------------------------------------ checking
class Tally:
    """What every client does with each record: touch all fields, check per-partition order."""

    #: milliseconds of simulated processing per 100 records (``--work-ms-per-100``; 0: none)
    work_ms_per_100 = 0.0

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.count = 0
        self.value_bytes = 0
        self.headers_seen = 0
        self.last: dict[int, int] = {}
        self.errors = 0
        self.t_first: float | None = None
        self.t_last = 0.0
        self.cpu_first = 0.0

    def add(self, partition: int, offset: int, key: Any, value: Any, headers: Any) -> None:
        if offset <= self.last.get(partition, -1):
            self.errors += 1
        self.last[partition] = offset
        self.value_bytes += len(value) + (len(key) if key is not None else 0)
        if headers:
            self.headers_seen += len(headers)
        self.count += 1
        if self.work_ms_per_100 and self.count % 100 == 0:
            time.sleep(self.work_ms_per_100 / 1000)  # a slow consumer: processing that waits (I/O)

    def started(self, t0: float) -> None:
        if self.t_first is None:
            self.t_first = t0
            self.cpu_first = time.process_time()  # every thread of the process (IO thread too)

    @property
    def done(self) -> bool:
        return self.count >= self.expected

    def result(self, client: str, t_start: float) -> dict[str, Any]:
        assert self.t_first is not None
        elapsed = self.t_last - self.t_first
        return {
            "client": client,
            "records": self.count,
            "order_errors": self.errors,
            "value_bytes": self.value_bytes,
            "headers": self.headers_seen,
            "seconds": elapsed,
            "wall_seconds": time.monotonic() - t_start,
            "rps": self.count / elapsed if elapsed > 0 else float("inf"),
            "drain_cpu_s": time.process_time() - self.cpu_first,
            "peak_rss_mb": peak_rss_mb(),
        }


def peak_rss_mb() -> float:
    """This process's peak RSS in MB.

    ``/proc/self/status`` VmHWM where there is one: it is per address space, whereas
    ``getrusage``'s ``ru_maxrss`` keeps the (larger) peak of the parent that forked us.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ------------------------------------------------------------------------------ consumers
def _kgroup_consumer(bootstrap: str, group: str, max_poll_records: int = MAX_POLL_RECORDS) -> Any:
    """The kgroup consumer of every kgroup client: the settings the other clients get too."""
    import kgroup

    return kgroup.Consumer(
        bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
        enable_auto_commit=False, session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS,
        max_poll_records=max_poll_records, check_crcs=True,
    )


def _answers(tally: Tally, fetch: Callable[[int], Any]) -> Iterator[Any]:
    """Each non-empty answer of ``fetch(1000)`` until ``tally`` is done; the first starts its clock."""
    while not tally.done:
        t0 = time.monotonic()
        got = fetch(1000)
        if got:
            tally.started(t0)
            yield got
    tally.t_last = time.monotonic()


def run_kgroup(bootstrap: str, topic: str, expected: int, group: str, name: str = "kgroup") -> dict[str, Any]:
    t_start = time.monotonic()
    tally = Tally(expected)
    consumer = _kgroup_consumer(bootstrap, group)
    try:
        consumer.subscribe([topic])
        add = tally.add
        for records in _answers(tally, consumer.poll):
            assert len(records) <= MAX_POLL_RECORDS
            for r in records:
                add(r.partition, r.offset, r.key, r.value, r.headers)
        consumer.commit()
    finally:
        consumer.close()
    return tally.result(name, t_start)


def run_kgroup_no_sessions(bootstrap: str, topic: str, expected: int, group: str) -> dict[str, Any]:
    """kgroup's ``poll()`` with every Fetch a full one (no KIP-227 fetch session)."""
    from kgroup._io import fetch_sessions

    fetch_sessions.FETCH_SESSIONS = False  # this child process only
    return run_kgroup(bootstrap, topic, expected, group, name="kgroup-no-sessions")


def run_kgroup_columns(bootstrap: str, topic: str, expected: int, group: str) -> dict[str, Any]:
    """kgroup's ``poll_columns()``: each partition's records as columns, touched record by record as the others."""
    t_start = time.monotonic()
    tally = Tally(expected)
    consumer = _kgroup_consumer(bootstrap, group)
    try:
        consumer.subscribe([topic])
        add = tally.add
        for batches in _answers(tally, consumer.poll_columns):
            assert sum(len(c) for c in batches) <= MAX_POLL_RECORDS
            for c in batches:
                partition = c.topic_partition.partition
                for offset, key, value, headers in zip(c.offsets, c.keys, c.values, c.headers, strict=True):
                    add(partition, offset, key, value, headers)
        consumer.commit()
    finally:
        consumer.close()
    return tally.result("kgroup-columns", t_start)


def run_kgroup_columns_bulk(bootstrap: str, topic: str, expected: int, group: str) -> dict[str, Any]:
    """kgroup's ``poll_columns()`` read as a columnar reader reads it: each partition's Arrow batch at once.

    ``max_poll_records`` 10,000; per ``RecordColumns`` its ``to_arrow()`` batch, whose every
    column is touched in Arrow's compute kernels, no Python code per record: the offsets checked
    ascending and above the partition's last, the key and value bytes summed, the headers counted.
    """
    import pyarrow.compute as pc

    t_start = time.monotonic()
    tally = Tally(expected)
    consumer = _kgroup_consumer(bootstrap, group, BULK_POLL_RECORDS)
    try:
        consumer.subscribe([topic])
        last = tally.last
        for batches in _answers(tally, consumer.poll_columns):
            for c in batches:
                partition = c.topic_partition.partition
                rb = c.to_arrow()
                offsets = rb.column("offset")
                first, final = offsets[0].as_py(), offsets[-1].as_py()
                if first <= last.get(partition, -1) or (
                        len(offsets) > 1 and not pc.all(pc.greater(offsets[1:], offsets[:-1])).as_py()):
                    tally.errors += 1
                last[partition] = final
                for name in ("key", "value"):
                    tally.value_bytes += pc.sum(pc.binary_length(rb.column(name))).as_py() or 0
                tally.headers_seen += pc.sum(pc.list_value_length(rb.column("headers"))).as_py() or 0
                tally.count += len(rb)
        consumer.commit()
    finally:
        consumer.close()
    return tally.result("kgroup-columns-bulk", t_start)


def run_kafka_python(bootstrap: str, topic: str, expected: int, group: str) -> dict[str, Any]:
    from kafka import KafkaConsumer

    t_start = time.monotonic()
    tally = Tally(expected)
    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
        enable_auto_commit=False, session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS,
        max_poll_records=MAX_POLL_RECORDS, check_crcs=True,
    )
    try:
        add = tally.add
        while not tally.done:
            t0 = time.monotonic()
            batches = consumer.poll(timeout_ms=1000)
            if not batches:
                continue
            tally.started(t0)
            for records in batches.values():
                for r in records:
                    add(r.partition, r.offset, r.key, r.value, r.headers)
        tally.t_last = time.monotonic()
        consumer.commit()
    finally:
        consumer.close()
    return tally.result("kafka-python", t_start)


def run_aiokafka(bootstrap: str, topic: str, expected: int, group: str) -> dict[str, Any]:
    from aiokafka import AIOKafkaConsumer

    t_start = time.monotonic()
    tally = Tally(expected)

    async def go() -> None:
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
            enable_auto_commit=False, session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_MS, max_poll_records=MAX_POLL_RECORDS, check_crcs=True,
        )
        await consumer.start()
        try:
            add = tally.add
            while not tally.done:
                t0 = time.monotonic()
                batches = await consumer.getmany(timeout_ms=1000, max_records=MAX_POLL_RECORDS)
                if not batches:
                    continue
                tally.started(t0)
                for records in batches.values():
                    for r in records:
                        add(r.partition, r.offset, r.key, r.value, r.headers)
            tally.t_last = time.monotonic()
            await consumer.commit()
        finally:
            await consumer.stop()

    asyncio.run(go())
    return tally.result("aiokafka", t_start)


def run_confluent(bootstrap: str, topic: str, expected: int, group: str) -> dict[str, Any]:
    from confluent_kafka import Consumer

    t_start = time.monotonic()
    tally = Tally(expected)
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
        "enable.auto.commit": False, "session.timeout.ms": SESSION_TIMEOUT_MS,
        "heartbeat.interval.ms": HEARTBEAT_MS, "check.crcs": True,
    })
    try:
        consumer.subscribe([topic])
        add = tally.add
        while not tally.done:
            t0 = time.monotonic()
            messages = consumer.consume(MAX_POLL_RECORDS, 1.0)
            if not messages:
                continue
            tally.started(t0)
            for m in messages:
                if m.error():
                    continue  # partition EOF and the like
                add(m.partition(), m.offset(), m.key(), m.value(), m.headers())
        tally.t_last = time.monotonic()
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return tally.result("confluent", t_start)


RUNNERS: dict[str, Callable[[str, str, int, str], dict[str, Any]]] = {
    "kgroup": run_kgroup,
    "kgroup-columns": run_kgroup_columns,
    "kgroup-columns-bulk": run_kgroup_columns_bulk,
    "kgroup-no-sessions": run_kgroup_no_sessions,
    "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka,
    "confluent": run_confluent,
}


# ------------------------------------------------------------------------------ producing
def produce(bootstrap: str, topic: str, records: int, partitions: int, size: int, headers: int = 0) -> float:
    """Write ``records`` values of ``size`` bytes round-robin over ``partitions``; seconds taken.

    Keys are ``b"k%08d"``; each record carries ``headers`` headers ``("h<i>", b"1")``.
    """
    t0 = time.monotonic()
    value = (b"0123456789abcdef" * (size // 16 + 1))[:size]
    header_list = [(f"h{i}", b"1") for i in range(headers)] or None
    try:
        from confluent_kafka import Producer
    except ImportError:  # pragma: no cover - confluent is optional
        Producer = None
    if Producer is not None:
        producer = Producer({
            "bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000,
            "batch.num.messages": 10000, "queue.buffering.max.messages": 1_000_000,
            "compression.type": "none", "acks": "all", "enable.idempotence": False,
        })
        failed: list[Any] = []

        def report(err: Any, _msg: Any) -> None:
            if err is not None:
                failed.append(err)

        for i in range(records):
            while True:
                try:
                    producer.produce(topic, value, key=b"k%08d" % i, partition=i % partitions,
                                     headers=header_list, on_delivery=report)
                    break
                except BufferError:
                    producer.poll(0.05)
            if i % 10000 == 0:
                producer.poll(0)
        left = producer.flush(120)
        if left or failed:
            raise RuntimeError(f"produce failed: {left} unflushed, errors {failed[:3]}")
    else:  # pragma: no cover
        from kgroup.testing import produce as kproduce

        if headers:
            raise SystemExit("--headers needs confluent-kafka for producing")
        kproduce(bootstrap, topic, ((i % partitions, b"k%08d" % i, value) for i in range(records)), timeout_s=600)
    return time.monotonic() - t0


# ------------------------------------------------------------------------------ driver
def child(args: argparse.Namespace) -> None:
    runner = RUNNERS[args.child]
    Tally.work_ms_per_100 = args.work_ms_per_100
    group = f"bench-{args.child}-{uuid.uuid4().hex[:8]}"
    if args.profile and args.child.startswith("kgroup"):
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.001)
        profiler.start()
        result = runner(args.bootstrap, args.topic, args.records, group)
        profiler.stop()
        out = Path(args.profile_out)
        out.write_text(profiler.output_text(unicode=False, color=False, show_all=True))
        result["profile"] = str(out)
    else:
        result = runner(args.bootstrap, args.topic, args.records, group)
    print("RESULT " + json.dumps(result), flush=True)


def run_child(client: str, bootstrap: str, topic: str, args: argparse.Namespace) -> dict[str, Any]:
    if client == "java":
        from tests.peers.java import java_command

        group = f"bench-java-{uuid.uuid4().hex[:8]}"
        cmd = java_command(["--mode", "throughput", "--bootstrap", bootstrap, "--group", group, "--topic", topic,
                            "--records", str(args.records), "--max-poll-records", str(MAX_POLL_RECORDS),
                            "--session-timeout-ms", str(SESSION_TIMEOUT_MS),
                            "--heartbeat-interval-ms", str(HEARTBEAT_MS),
                            "--work-ms-per-100", str(args.work_ms_per_100)],
                           compiled=True, clients_version=args.java_clients)
    else:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", client, "--bootstrap", bootstrap,
               "--topic", topic, "--records", str(args.records), "--work-ms-per-100", str(args.work_ms_per_100)]
    if args.profile and client == args.profile_client:
        cmd += ["--profile", "--profile-out", str(args.profile_out)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.child_timeout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            result: dict[str, Any] = json.loads(line[len("RESULT "):])
            # user + system CPU of the whole child process, start to exit (the JVM's start, JIT included)
            result["cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            return result
    raise RuntimeError(f"{client} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")


def table(results: list[dict[str, Any]]) -> str:
    """Median records/s per client ([min-max] over the rounds) and kgroup's median / the client's."""
    by_client: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by_client.setdefault(r["client"], []).append(r)

    def med(runs: list[dict[str, Any]], key: str) -> float:
        return statistics.median(r[key] for r in runs)

    base = med(by_client["kgroup"], "rps") if "kgroup" in by_client else None
    lines = [
        "| client | N | records/s (median [min-max]) | kgroup / client | seconds | wall s (incl. join) "
        "| CPU s / 1M records (process) | CPU s / 1M records (drain) | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for client, runs in by_client.items():
        rps = [r["rps"] for r in runs]
        spread = f" [{min(rps):,.0f}-{max(rps):,.0f}]" if len(runs) > 1 else ""
        ratio = f"{base / med(runs, 'rps'):.2f}" if base else "-"
        per_million = statistics.median(r["cpu_s"] / r["records"] * 1e6 for r in runs)
        drain = [r["drain_cpu_s"] / r["records"] * 1e6 for r in runs if "drain_cpu_s" in r]
        drain_text = f"{statistics.median(drain):.2f}" if drain else "-"
        lines.append(
            f"| {client} | {len(runs)} | {med(runs, 'rps'):,.0f}{spread} | {ratio} | {med(runs, 'seconds'):.2f} "
            f"| {med(runs, 'wall_seconds'):.1f} | {per_million:.2f} | {drain_text} | {med(runs, 'peak_rss_mb'):.0f} |"
        )
    return "\n".join(lines)


def parse(argv: Iterable[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--partitions", type=int, default=12)
    p.add_argument("--size", type=int, default=100, help="value size in bytes")
    p.add_argument("--headers", type=int, default=0, help="headers per record")
    p.add_argument("--work-ms-per-100", type=float, default=0.0,
                   help="a slow consumer: every client sleeps this many ms after each 100 records (e.g. 1)")
    p.add_argument("--clients", default=",".join(CLIENTS), help=f"comma-separated subset of {','.join(CLIENTS)}")
    p.add_argument("--profile", action="store_true", help="run kgroup under pyinstrument")
    p.add_argument("--profile-client", default="kgroup", choices=[c for c in CLIENTS if c.startswith("kgroup")],
                   help="the client --profile runs under pyinstrument")
    p.add_argument("--profile-out", default=str(HERE / "profile-kgroup.txt"))
    p.add_argument("--json", help="also write the results as JSON to this file")
    p.add_argument("--child-timeout", type=float, default=1800)
    p.add_argument("--broker", choices=("default", "tansu", "apache-kafka"), default="default",
                   help="the broker kind (default: kgroup.testing's selection from the environment)")
    p.add_argument("--repeat", type=int, default=1, help="rounds; each runs every client once")
    p.add_argument("--java-clients", help="kafka-clients version of the java client (default: the Apache Kafka "
                   "jars, 4.4.0; on Tansu 3.9.1, which speaks ApiVersions v4)")
    p.add_argument("--child", choices=PYTHON_CLIENTS, help=argparse.SUPPRESS)
    p.add_argument("--bootstrap", help=argparse.SUPPRESS)
    p.add_argument("--topic", help=argparse.SUPPRESS)
    return p.parse_args(None if argv is None else list(argv))


def main(argv: Iterable[str] | None = None) -> int:
    args = parse(argv)
    if args.child:
        child(args)
        return 0
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    unknown = set(clients) - set(CLIENTS)
    if unknown:
        raise SystemExit(f"unknown clients: {sorted(unknown)}")
    sys.path.insert(0, str(ROOT))
    from kgroup.testing import create_topic, start_broker

    if args.broker == "apache-kafka":
        broker_cm = start_broker(kind="apache-kafka", startup_timeout_s=120)
    else:
        broker_cm = start_broker(kind=None if args.broker == "default" else args.broker)
    with broker_cm as broker:
        print(broker.describe(), flush=True)
        if args.java_clients is None and broker.kind == "tansu" and "java" in clients:
            from tests.peers.java import TANSU_JAVA_CLIENTS

            args.java_clients = TANSU_JAVA_CLIENTS
        if "java" in clients:
            print(f"java: kafka-clients {args.java_clients or '4.4.0'}", flush=True)
        topic = f"bench-{uuid.uuid4().hex[:8]}"
        create_topic(broker.bootstrap_servers, topic, args.partitions)
        seconds = produce(broker.bootstrap_servers, topic, args.records, args.partitions, args.size, args.headers)
        print(f"produced {args.records:,} records of {args.size} B ({args.headers} headers) "
              f"to {args.partitions} partitions "
              f"in {seconds:.1f} s", flush=True)
        results = []
        for round_no in range(args.repeat):
            for client in clients:
                result = run_child(client, broker.bootstrap_servers, topic, args)
                if result["records"] != args.records or result["order_errors"]:
                    raise SystemExit(f"{client}: wrong delivery: {result}")
                print(f"[{round_no + 1}/{args.repeat}] {client}: {result['rps']:,.0f} records/s "
                      f"({result['seconds']:.2f} s, {result['cpu_s']:.1f} CPU s, "
                      f"peak RSS {result['peak_rss_mb']:.0f} MB)", flush=True)
                result["round"] = round_no
                results.append(result)
    print()
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
