"""Spark reading one topic: ``kgroup.spark`` (format ``kgroup``) against Spark's own Kafka source.

Spark's Kafka source (format ``kafka``, the ``spark-sql-kafka-0-10`` connector, see Spark's
"Structured Streaming + Kafka Integration Guide") is the anchor: the JVM reads the records
with Java's ``KafkaConsumer`` in the executors, whereas the kgroup source is a PySpark Python
data source whose executors read through Python. Both read the same topic on the same broker
(Apache Kafka 4.4.0 by default, ``group.initial.rebalance.delay.ms`` 0: Spark's source needs a
real Kafka), in one ``local[2]``
SparkSession, alternately (``--repeat`` rounds, each round runs every mode of both formats):

* ``batch``: ``spark.read.format(...).load()`` from earliest to latest;
* ``micro-batch``: ``spark.readStream.format(...).load()`` from earliest with Spark's default
  trigger (the next micro-batch as soon as the previous one ends), a new checkpoint and a new
  ``group.id`` each run, until every record went through the sink; then the query is stopped;
* ``available-now``: the same stream with ``Trigger.AvailableNow``, which ends by itself once it
  has read what was there at its start (the kgroup source first joins the group and waits for
  its assignment: docs/spark.md, "Trigger.AvailableNow").

Each run computes ``count(*)``, ``sum(length(value))``, ``sum(length(key))`` and ``max(offset)``
over all rows (batch: one aggregation; streams: a ``foreachBatch`` that aggregates its batch),
so every record is read and checked (count and bytes must match what was produced). Neither
source prunes columns. Rows per second = records / wall time from the action's start (for a
stream: ``start()``, so planning and the group join are included) to its last row (batch: the
aggregate's answer; stream: the ``foreachBatch`` call that completed the count); the ratio is
the kgroup median over Spark's median, from the same run. ``kgroup-packed`` is the kgroup source
with ``maxPartitions`` 2 (``local[2]``'s cores): the 12 partition ranges of each read or
micro-batch packed into 2 tasks that read theirs one after another (docs/spark.md, "Options").

    python benchmarks/spark.py                                  # 1,000,000 records of 100 B
    python benchmarks/spark.py --records 200000 --size 1000 --repeat 3
    python benchmarks/spark.py --spark-kafka-version 4.2.0

Spark's Kafka source is added with ``spark.jars.packages`` =
``org.apache.spark:spark-sql-kafka-0-10_2.13:<version>``, ``<version>`` being the installed
PySpark's unless ``--spark-kafka-version`` says otherwise. Maven resolves it into
``~/.m2/repository`` first (``mvn dependency:get``), where Spark's Ivy resolution finds it. When
the connector of PySpark's own version is not published, :func:`resolve_spark_kafka` takes the
newest published release of the same major version that is not newer than PySpark (Maven's
``RELEASE`` metadata) and says so.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ARTIFACT = "org.apache.spark:spark-sql-kafka-0-10_2.13"
#: Maven's dependency plugin with ``get`` that resolves transitively into ~/.m2
_GET = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:get"


# ------------------------------------------------------------------------------ the connector


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def _mvn_get(coordinate: str, *, transitive: bool = True) -> bool:
    mvn = shutil.which("mvn")
    if mvn is None:
        return False
    proc = subprocess.run(
        [mvn, "-q", "-B", _GET, f"-Dartifact={coordinate}", f"-Dtransitive={str(transitive).lower()}"],
        capture_output=True, text=True, timeout=900,
    )
    return proc.returncode == 0


def _published_releases() -> list[str]:
    """Releases of the connector listed in Maven Central's metadata (fetched by resolving RELEASE)."""
    _mvn_get(f"{ARTIFACT}:RELEASE", transitive=False)
    group, artifact = ARTIFACT.split(":")
    directory = Path.home() / ".m2" / "repository" / Path(*group.split(".")) / artifact
    versions: set[str] = set()
    for metadata in directory.glob("maven-metadata*.xml"):
        versions.update(re.findall(r"<version>(\d+\.\d+\.\d+)</version>", metadata.read_text(errors="replace")))
    return sorted(versions, key=_version_key)


def resolve_spark_kafka(version: str | None = None) -> tuple[str, str]:
    """Resolve Spark's Kafka connector with Maven; return ``(coordinate, note)``.

    ``version`` None means the installed PySpark's version, else the newest published release
    of the same major version not newer than it (the note says which and why).

    Raises:
        RuntimeError: Maven is missing or resolves none (the message names what was tried).

    """
    import pyspark

    if shutil.which("mvn") is None:
        raise RuntimeError("mvn is not on PATH: Spark's Kafka connector is resolved with Maven")
    if version is not None:
        if _mvn_get(f"{ARTIFACT}:{version}"):
            return f"{ARTIFACT}:{version}", f"connector {version} as asked (PySpark {pyspark.__version__})"
        raise RuntimeError(f"Maven cannot resolve {ARTIFACT}:{version}")
    own = pyspark.__version__
    if _mvn_get(f"{ARTIFACT}:{own}"):
        return f"{ARTIFACT}:{own}", f"connector {own}, PySpark's own version"
    major = own.split(".")[0]
    candidates = [v for v in _published_releases()
                  if v.split(".")[0] == major and _version_key(v) <= _version_key(own.split("+")[0])]
    if candidates and _mvn_get(f"{ARTIFACT}:{candidates[-1]}"):
        return (f"{ARTIFACT}:{candidates[-1]}",
                f"connector {candidates[-1]}: {ARTIFACT}:{own} (PySpark's version) does not resolve from "
                f"Maven Central; {candidates[-1]} is the newest release of Spark {major}.x published")
    raise RuntimeError(f"Maven resolves neither {ARTIFACT}:{own} (PySpark's version) nor a published "
                       f"{major}.x release not newer than it (listed: {candidates[-3:]})")


def build_session(coordinate: str, master: str = "local[2]", app_name: str = "kgroup-spark-bench") -> Any:
    """A local SparkSession with Spark's Kafka connector and the ``kgroup`` format registered."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(ROOT) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *paths])
    from pyspark.sql import SparkSession

    import kgroup.spark

    spark = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.jars.packages", coordinate)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.python.worker.reuse", "true")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    kgroup.spark.register(spark)
    return spark


#: the formats compared: Spark's source, the kgroup source, and the kgroup source packing its ranges into
#: as many tasks as the session has cores (``maxPartitions``: ``local[2]`` -> 2)
FORMATS = ("kafka", "kgroup", "kgroup-packed")
PACKED_TASKS = 2


def spark_format(fmt: str) -> str:
    """The Spark format name of a compared format."""
    return "kafka" if fmt == "kafka" else "kgroup"


def source_options(fmt: str, bootstrap: str, topic: str, group: str) -> dict[str, str]:
    """The options that make the formats read the same thing: ``topic`` from earliest."""
    if fmt == "kafka":
        return {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "earliest"}
    options = {"bootstrap.servers": bootstrap, "subscribe": topic, "group.id": group, "startingOffsets": "earliest",
               "session.timeout.ms": "10000", "heartbeat.interval.ms": "1000"}
    if fmt == "kgroup-packed":
        options["maxPartitions"] = str(PACKED_TASKS)
    return options


# ------------------------------------------------------------------------------ runs

MODES = ("batch", "micro-batch", "available-now")
AGGREGATE = ("count(*) AS n", "coalesce(sum(length(value)), 0) AS value_bytes",
             "coalesce(sum(length(key)), 0) AS key_bytes", "max(offset) AS max_offset")


def run_batch(spark: Any, fmt: str, bootstrap: str, topic: str) -> dict[str, Any]:
    group = f"bench-spark-{uuid.uuid4().hex[:8]}"
    t0 = time.monotonic()
    df = spark.read.format(spark_format(fmt)).options(**source_options(fmt, bootstrap, topic, group)).load()
    row = df.selectExpr(*AGGREGATE).collect()[0]
    seconds = time.monotonic() - t0
    return {"rows": row["n"], "value_bytes": row["value_bytes"], "key_bytes": row["key_bytes"], "seconds": seconds}


def run_stream(spark: Any, fmt: str, bootstrap: str, topic: str, records: int, available_now: bool,
               workdir: Path, timeout_s: float = 1800) -> dict[str, Any]:
    """One streaming read from earliest until ``records`` rows went through the sink."""
    group = f"bench-spark-{uuid.uuid4().hex[:8]}"
    totals: dict[str, Any] = {"rows": 0, "value_bytes": 0, "key_bytes": 0, "batches": 0, "t_done": None}

    def per_batch(batch: Any, batch_id: int) -> None:
        row = batch.selectExpr(*AGGREGATE).collect()[0]
        totals["rows"] += row["n"]
        totals["value_bytes"] += row["value_bytes"]
        totals["key_bytes"] += row["key_bytes"]
        totals["batches"] += 1
        if totals["rows"] >= records and totals["t_done"] is None:
            totals["t_done"] = time.monotonic()

    t0 = time.monotonic()
    stream = spark.readStream.format(spark_format(fmt)).options(**source_options(fmt, bootstrap, topic, group)).load()
    writer = stream.writeStream.foreachBatch(per_batch).option(
        "checkpointLocation", str(workdir / f"checkpoint-{fmt}-{uuid.uuid4().hex[:8]}"))
    if available_now:
        writer = writer.trigger(availableNow=True)
    query = writer.start()
    deadline = t0 + timeout_s
    while totals["t_done"] is None and query.isActive and time.monotonic() < deadline:
        query.awaitTermination(0.1)
    query.stop()
    failed = query.exception()
    if failed is not None:
        raise RuntimeError(f"{fmt} stream failed: {failed}")
    if totals["t_done"] is None:
        raise RuntimeError(f"{fmt} stream read {totals['rows']} of {records} rows")
    return {**{k: v for k, v in totals.items() if k != "t_done"}, "seconds": totals["t_done"] - t0}


def render(results: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| mode | format | N | rows/s (median [min-max]) | seconds (median) | kgroup / Spark's kafka |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for mode in MODES:
        medians: dict[str, float] = {}
        rows: dict[str, list[dict[str, Any]]] = {}
        for fmt in FORMATS:
            rows[fmt] = [r for r in results if r["mode"] == mode and r["format"] == fmt]
            if rows[fmt]:
                medians[fmt] = statistics.median(r["rps"] for r in rows[fmt])
        for fmt in FORMATS:
            runs = rows[fmt]
            if not runs:
                continue
            rps = [r["rps"] for r in runs]
            ratio = f"{medians[fmt] / medians['kafka']:.2f}" if fmt != "kafka" and "kafka" in medians else ""
            label = {"kafka": "Spark's kafka", "kgroup-packed": f"kgroup, maxPartitions={PACKED_TASKS}"}.get(fmt, fmt)
            lines.append(f"| {mode} | {label} | {len(runs)} | {statistics.median(rps):,.0f} "
                         f"[{min(rps):,.0f}-{max(rps):,.0f}] | {statistics.median(r['seconds'] for r in runs):.2f} "
                         f"| {ratio} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100, help="value size in bytes")
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=3, help="rounds; each runs every mode of both formats")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--formats", default="kafka,kgroup,kgroup-packed", help=f"of {', '.join(FORMATS)}")
    parser.add_argument("--broker", choices=("apache-kafka", "default"), default="apache-kafka")
    parser.add_argument("--spark-kafka-version", help="the connector's version (default: PySpark's, see above)")
    parser.add_argument("--json", help="also write the raw results here")
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    formats = [f for f in args.formats.split(",") if f]
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        parser.error(f"unknown formats {unknown}; known: {', '.join(FORMATS)}")

    import pyspark

    from benchmarks.throughput import produce
    from kgroup.testing import create_topic, start_broker

    coordinate, note = resolve_spark_kafka(args.spark_kafka_version)
    print(f"PySpark {pyspark.__version__}; Spark's Kafka source: {coordinate} ({note})", flush=True)
    if args.broker == "apache-kafka":  # a new group's first join is not held 3 s (Kafka's default)
        broker = start_broker(kind="apache-kafka", overrides={"group.initial.rebalance.delay.ms": 0},
                              startup_timeout_s=120)
    else:
        broker = start_broker()
    workdir = Path(tempfile.mkdtemp(prefix="kgroup-spark-bench-"))
    try:
        print(broker.describe(), flush=True)
        topic = f"bench-spark-{uuid.uuid4().hex[:8]}"
        create_topic(broker.bootstrap_servers, topic, args.partitions)
        seconds = produce(broker.bootstrap_servers, topic, args.records, args.partitions, args.size)
        print(f"produced {args.records:,} records of {args.size} B to {args.partitions} partitions in {seconds:.1f} s",
              flush=True)
        t0 = time.monotonic()
        spark = build_session(coordinate)
        print(f"SparkSession local[2] in {time.monotonic() - t0:.1f} s", flush=True)
        expected_value_bytes = args.records * args.size
        results: list[dict[str, Any]] = []
        try:
            # one untimed warm-up read of each format: Spark's Python workers, the connector's classes
            for fmt in formats:
                run_batch(spark, fmt, broker.bootstrap_servers, topic)
            for round_no in range(args.repeat):
                for mode in modes:
                    for fmt in formats:
                        if mode == "batch":
                            r = run_batch(spark, fmt, broker.bootstrap_servers, topic)
                        else:
                            r = run_stream(spark, fmt, broker.bootstrap_servers, topic, args.records,
                                           mode == "available-now", workdir)
                        if r["rows"] != args.records or r["value_bytes"] != expected_value_bytes:
                            raise SystemExit(f"{fmt} {mode}: read {r} but {args.records} records of {args.size} B "
                                             f"were produced")
                        r.update(mode=mode, format=fmt, round=round_no, rps=args.records / r["seconds"])
                        results.append(r)
                        print(f"[{round_no + 1}/{args.repeat}] {mode} {fmt}: {r['rps']:,.0f} rows/s "
                              f"({r['seconds']:.2f} s)", flush=True)
        finally:
            spark.stop()
        print()
        print(render(results))
        if args.json:
            Path(args.json).write_text(json.dumps({"coordinate": coordinate, "note": note, "results": results},
                                                  indent=1))
    finally:
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
