"""The kgroup source and Spark's own Kafka source read the same rows, on Apache Kafka.

Spark's Kafka source (format ``kafka``, ``org.apache.spark:spark-sql-kafka-0-10_2.13``, Spark's
"Structured Streaming + Kafka Integration Guide") is the reference the kgroup source copies
its schema from. A small topic (3 partitions, keys with a null among them, an empty value) on
an Apache Kafka 4.4.0 broker is read by both formats, as a batch and as a stream through
``foreachBatch``; every read must give exactly the produced records, as ``(key, value, topic,
partition, offset)`` rows, none twice. Both streams run with ``Trigger.AvailableNow`` and end by
themselves (the kgroup source joins the group and waits for its assignment first).

Spark's connector comes through ``spark.jars.packages``, which must be set before the JVM
starts: the reads run in a child Spark application (this module run as a script), not in the
shared ``spark`` fixture's session. The connector's version is resolved with Maven first
(``benchmarks.spark.resolve_spark_kafka``: PySpark's own version, else the newest published
release of its major version not newer than it; ``KGROUP_SPARK_KAFKA_VERSION`` overrides).

Skipped with one line when Java or the Apache Kafka jars are missing (``python -m
kgroup.testing.apache_kafka fetch``) or Maven resolves no connector; with
``KGROUP_REQUIRE_APACHE_KAFKA=1`` these fail instead.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

_ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 3
CHILD_TIMEOUT_S = 600


def _skip_or_fail(reason: str) -> None:
    from kgroup.testing import apache_kafka

    if apache_kafka.require_apache_kafka():
        pytest.fail(f"{reason} (and {apache_kafka.REQUIRE_ENV_VAR} is set)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def connector() -> str:
    """The connector's Maven coordinate, resolved into ~/.m2 (skip or fail when none resolves)."""
    from benchmarks.spark import resolve_spark_kafka

    try:
        coordinate, note = resolve_spark_kafka(os.environ.get("KGROUP_SPARK_KAFKA_VERSION") or None)
    except RuntimeError as exc:
        _skip_or_fail(f"Spark's Kafka source unavailable: {exc}")
    print(f"Spark's Kafka source: {coordinate} ({note})")
    return coordinate


@pytest.fixture(scope="module")
def apache_bootstrap(kafka_brokers: Any) -> str:
    """The session's Apache Kafka broker (kgroup's pytest plugin; skip or fail when unavailable)."""
    return kafka_brokers.get("apache-kafka").bootstrap_servers


def produce_rows(bootstrap: str, topic: str) -> set[tuple[Any, ...]]:
    """Write 60 records over 3 partitions; return them as (key hex, value hex, topic, partition, offset)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        sent = []
        for i in range(60):
            key = None if i % 7 == 0 else f"key-{i}".encode()
            value = b"" if i == 5 else f"value-{i}-{'x' * (i % 13)}".encode()
            sent.append((producer.send(topic, key=key, value=value, partition=i % PARTITIONS), key, value))
        producer.flush(30)
        return {
            (None if k is None else k.hex(), v.hex(), topic, f.get(30).partition, f.get(30).offset)
            for f, k, v in sent
        }
    finally:
        producer.close(5)


def test_kgroup_and_spark_kafka_source_read_the_same_rows(apache_bootstrap, connector, tmp_path):
    topic = f"t-spark-kafka-{uuid.uuid4().hex[:10]}"
    from kgroup.testing import create_topic

    create_topic(apache_bootstrap, topic, PARTITIONS)
    produced = produce_rows(apache_bootstrap, topic)
    out = tmp_path / "rows.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_ROOT), env.get("PYTHONPATH", "")]))
    with (tmp_path / "child.log").open("w") as log:
        child = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--bootstrap", apache_bootstrap, "--topic", topic,
             "--connector", connector, "--out", str(out), "--workdir", str(tmp_path),
             "--expected", str(len(produced))],
            cwd=_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=CHILD_TIMEOUT_S,
        )
    assert child.returncode == 0, (tmp_path / "child.log").read_text(errors="replace")[-4000:]
    reads = json.loads(out.read_text())
    assert set(reads) == {"kafka/batch", "kgroup/batch", "kafka/micro-batch", "kgroup/micro-batch"}
    for name, rows in reads.items():
        as_tuples = [tuple(r) for r in rows]
        assert len(as_tuples) == len(set(as_tuples)), f"{name} read a record twice"
        assert set(as_tuples) == produced, (
            f"{name}: missing {sorted(produced - set(as_tuples), key=repr)[:5]}, "
            f"extra {sorted(set(as_tuples) - produced, key=repr)[:5]}"
        )


# ------------------------------------------------------------------------------ the child application


def _rows(df: Any) -> list[list[Any]]:
    return [
        [None if r["key"] is None else bytes(r["key"]).hex(), bytes(r["value"]).hex(), r["topic"], r["partition"],
         r["offset"]]
        for r in df.select("key", "value", "topic", "partition", "offset").collect()
    ]


def _child(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    for name in ("bootstrap", "topic", "connector", "out", "workdir"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--expected", type=int, required=True)
    args = parser.parse_args(argv)
    from benchmarks.spark import build_session, source_options

    spark = build_session(args.connector, app_name="kgroup-tests-spark-kafka-source")
    reads: dict[str, list[list[Any]]] = {}
    try:
        for fmt in ("kafka", "kgroup"):
            group = f"g-spark-kafka-{uuid.uuid4().hex[:10]}"
            options = source_options(fmt, args.bootstrap, args.topic, group)
            reads[f"{fmt}/batch"] = _rows(spark.read.format(fmt).options(**options).load())
            collected: list[list[Any]] = []
            writer = (
                spark.readStream.format(fmt).options(**options).load()
                .writeStream.foreachBatch(lambda batch, _id, out=collected: out.extend(_rows(batch)))
                .option("checkpointLocation", str(Path(args.workdir) / f"checkpoint-{fmt}"))
            )
            query = writer.trigger(availableNow=True).start()
            try:
                ended = query.awaitTermination(300)
            finally:
                query.stop()
            if query.exception() is not None:
                raise SystemExit(f"{fmt}: the query failed: {query.exception()}")
            if not ended:
                raise SystemExit(f"{fmt}: the Trigger.AvailableNow stream did not end within 300 s: "
                                 f"{len(collected)} rows")
            reads[f"{fmt}/micro-batch"] = collected
    finally:
        spark.stop()
    Path(args.out).write_text(json.dumps(reads))
    return 0


if __name__ == "__main__":
    sys.exit(_child())
