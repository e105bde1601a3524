"""A Spark Structured Streaming pipeline reading a topic as a member of a consumer group.

    PYTHONPATH=. python examples/spark_pipeline.py                # embedded broker, ~1 min
    KGROUP_BOOTSTRAP_SERVERS=host:9092 PYTHONPATH=. python examples/spark_pipeline.py

Needs ``pip install 'kgroup[spark,broker]'`` and Java 17+. It produces ``--events`` events
(key ``user-<n>``, value = the event time in ms) to a 4-partition topic, then runs on
``local[2]``: ``spark.readStream.format("kgroup")`` (the driver joins group ``--group``) →
counts per key per 10-second event-time window (watermark 1 hour) → parquet, in append mode.
``maxOffsetsPerTrigger`` splits the events over ``--batches`` micro-batches; once they are
processed, one late "flush" event per partition moves the watermark past every window so the
last windows are written too. Then it stops the query, reads the parquet output back and checks
every (key, window) count against what was produced, and that the group's committed offsets
reached the end of every partition. The last line is ``PASS: ...`` or ``FAIL: ...``.

Printed figures: the SparkSession start-up time and the pipeline's records/s (events read,
aggregated and written, from the query's start to the last data batch).

Without ``KGROUP_BOOTSTRAP_SERVERS`` it starts the embedded broker (``kgroup.testing``) and
puts ``kgroup.testing.CoordinatorProxy`` in front of it, which answers the group APIs with
Apache Kafka's coordinator semantics (and ListOffsets LATEST with the log end offset).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack

import kgroup
from kgroup.testing import CoordinatorProxy, create_topic, produce, start_broker
from kgroup.testing.coordinator import CoordinatorConfig

BASE_MS = 1_700_000_000_000  # event times start here (2023-11-14T22:13:20Z)
SPAN_MS = 120_000  # events cover two minutes of event time: 12 windows of 10 s
WINDOW_MS = 10_000
FLUSH_MS = BASE_MS + SPAN_MS + 2 * 3600_000  # beyond the 1-hour watermark of every window
PARTITIONS = 4


def events(n: int, keys: int) -> list[tuple[int, bytes, bytes]]:
    """(partition, key, value): event i belongs to user-(i % keys), at BASE + i * SPAN / n ms."""
    out = []
    for i in range(n):
        user = i % keys
        event_ms = BASE_MS + i * SPAN_MS // n
        out.append((user % PARTITIONS, b"user-%d" % user, b"%d" % event_ms))
    return out


def expected_counts(produced: list[tuple[int, bytes, bytes]]) -> Counter[tuple[str, int]]:
    """{(key, window start ms): count}."""
    counts: Counter[tuple[str, int]] = Counter()
    for _, key, value in produced:
        event_ms = int(value)
        counts[(key.decode(), event_ms - event_ms % WINDOW_MS)] += 1
    return counts


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int | None]:
    """The group's committed offset per partition (a short-lived member asks the coordinator)."""
    consumer = kgroup.Consumer(
        bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=6000, heartbeat_interval_ms=1000,
        enable_auto_commit=False,
    )
    try:
        consumer.subscribe([topic])  # committed() needs the coordinator; nothing is polled
        tps = [kgroup.TopicPartition(topic, p) for p in range(PARTITIONS)]
        found = consumer.committed(tps, timeout_ms=30_000)
        return {tp.partition: (om.offset if om is not None else None) for tp, om in found.items()}
    finally:
        consumer.close(group_membership="leave")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=16)
    parser.add_argument("--batches", type=int, default=5, help="micro-batches the events are split over")
    parser.add_argument("--group", default=f"spark-pipeline-{os.getpid()}")
    parser.add_argument("--timeout-s", type=float, default=300)
    args = parser.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable  # Spark's Python workers: this interpreter
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    run_dir = tempfile.mkdtemp(prefix="kgroup-spark-pipeline-")
    print(f"run directory: {run_dir}")

    with ExitStack() as stack:
        bootstrap = os.environ.get("KGROUP_BOOTSTRAP_SERVERS")
        if not bootstrap:
            broker = start_broker(log_dir=run_dir)
            stack.callback(broker.stop)
            proxy = CoordinatorProxy(
                broker.bootstrap_servers, config=CoordinatorConfig(group_initial_rebalance_delay_ms=0)
            ).start()
            stack.callback(proxy.stop)
            bootstrap = proxy.bootstrap_servers
            print(f"broker: {broker.describe()}, through CoordinatorProxy at {bootstrap}")
        topic = f"events-{os.getpid()}-{int(time.time())}"
        create_topic(bootstrap, topic, PARTITIONS)
        produced = events(args.events, args.keys)
        started = time.monotonic()
        produce(bootstrap, topic, produced, timeout_s=100)
        print(f"produced {len(produced)} events to {topic} in {time.monotonic() - started:.1f} s")

        started = time.monotonic()
        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F

        import kgroup.spark

        spark = (
            SparkSession.builder.master("local[2]")
            .appName("kgroup-spark-pipeline")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate()
        )
        stack.callback(spark.stop)
        spark.sparkContext.setLogLevel("ERROR")
        kgroup.spark.register(spark)
        startup_s = time.monotonic() - started
        print(f"SparkSession local[2] start-up: {startup_s:.1f} s")

        source = (
            spark.readStream.format("kgroup")
            .option("bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("group.id", args.group)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", str(math.ceil(len(produced) / args.batches)))
            .option("session.timeout.ms", "10000")
            .option("heartbeat.interval.ms", "1000")
            .load()
        )
        counts = (
            source.select(
                F.col("key").cast("string").alias("key"),
                F.timestamp_millis(F.col("value").cast("string").cast("long")).alias("event_time"),
            )
            .withWatermark("event_time", "1 hour")
            .groupBy(F.window("event_time", "10 seconds"), "key")
            .count()
            .select("key", (F.col("window.start").cast("double") * 1000).cast("long").alias("window_ms"), "count")
        )
        out, checkpoint = os.path.join(run_dir, "counts"), os.path.join(run_dir, "checkpoint")
        started = time.monotonic()
        query = (
            counts.writeStream.format("parquet")
            .outputMode("append")
            .option("path", out)
            .option("checkpointLocation", checkpoint)
            .start()
        )
        stack.callback(query.stop)

        def read_rows() -> int:
            return sum(p["numInputRows"] for p in query.recentProgress)

        deadline = time.monotonic() + args.timeout_s
        while read_rows() < len(produced) and time.monotonic() < deadline and query.isActive:
            time.sleep(0.05)
        pipeline_s = time.monotonic() - started
        rows_read = read_rows()
        data_batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
        print(
            f"pipeline: {rows_read} events in {len(data_batches)} micro-batches, {pipeline_s:.1f} s from query "
            f"start to the last event written: {rows_read / pipeline_s:,.0f} records/s"
        )
        steady = [p["processedRowsPerSecond"] for p in data_batches[1:] if p.get("processedRowsPerSecond")]
        if steady:
            print(f"micro-batches after the first: {sum(steady) / len(steady):,.0f} records/s "
                  "(Spark's processedRowsPerSecond, mean)")
        # one late event per partition: the watermark passes every window, the last ones are written
        produce(bootstrap, topic, [(p, b"flush", b"%d" % FLUSH_MS) for p in range(PARTITIONS)])
        expected = expected_counts(produced)
        written: dict[tuple[str, int], int] = {}
        while time.monotonic() < deadline and query.isActive:
            try:
                rows = spark.read.parquet(out).collect()
            except Exception:  # no file committed yet
                rows = []
            # (the flush events' own window stays open: the watermark never passes it)
            written = {(r.key, r.window_ms): r["count"] for r in rows}
            if len(written) >= len(expected):
                break
            time.sleep(0.5)
        batches = len(query.recentProgress)
        query.stop()
        failure = query.exception()
        if failure is not None:
            print(f"FAIL: the query failed: {failure}")
            return 1
        print(f"micro-batches run: {batches} ({len(data_batches)} with events, then the flush and its output)")
        committed = committed_offsets(bootstrap, args.group, topic)
        ends = Counter(p for p, _, _ in produced)
        print(f"group {args.group} committed offsets: {committed}")

        problems = []
        if rows_read < len(produced):
            problems.append(f"only {rows_read} of {len(produced)} events were read")
        if written != dict(expected):
            missing = set(expected) - set(written)
            wrong = {k: (written[k], expected[k]) for k in set(written) & set(expected) if written[k] != expected[k]}
            extra = set(written) - set(expected)
            problems.append(f"counts differ: {len(missing)} missing, {len(wrong)} wrong, {len(extra)} unexpected")
        short = {p: c for p, c in committed.items() if c is None or c < ends[p]}
        if short:
            problems.append(f"group offsets short of the events: {short}")
        if problems:
            print("FAIL: " + "; ".join(problems))
            return 1
        print(
            f"PASS: {len(expected)} (key, window) counts of {len(produced)} events match what was produced; "
            f"the group committed every event"
        )
        return 0


if __name__ == "__main__":
    sys.exit(main())
