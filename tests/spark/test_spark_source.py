"""The kgroup Spark source in local mode, through the coordinator proxy over the real broker.

Batch read with exact contents; a streaming read over exactly 3 micro-batches; a restart from
the checkpoint with the group's offsets rewound (the checkpoint wins); bad options at load().
The two-application test is in test_spark_two_apps.py.
"""

from __future__ import annotations

import json
import uuid

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import CommitFailedError
from kafka.structs import OffsetAndMetadata as KOffsetAndMetadata
from kafka.structs import TopicPartition as KTopicPartition

from tests.spark.conftest import wait_for


def produce_exact(bootstrap: str, topic: str, records: list[tuple[int, bytes | None, bytes, list]]) -> set[tuple]:
    """Produce ``(partition, key, value, headers)`` records; return the rows Spark must read."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        futures = [
            (producer.send(topic, key=k, value=v, partition=p, headers=h), k, v, h) for p, k, v, h in records
        ]
        producer.flush(30)
        return {
            (f.get(30).partition, f.get(30).offset, k, v, tuple((hk, hv) for hk, hv in h)) for f, k, v, h in futures
        }
    finally:
        producer.close(5)


def produce_spread(bootstrap: str, topic: str, partitions: int, prefix: bytes, count: int) -> set[tuple]:
    """:func:`produce_exact` of ``count`` records without key or headers, the i-th valued ``<prefix><i>``
    to partition ``i % partitions``."""
    return produce_exact(bootstrap, topic, [(i % partitions, None, prefix + b"%d" % i, []) for i in range(count)])


def rows_of(collected) -> set[tuple]:
    return {
        (r.partition, r.offset, r.key, r.value, tuple((h.key, h.value) for h in r.headers)) for r in collected
    }


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int | None]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        out = {}
        for p in range(partitions):
            om = consumer.committed(KTopicPartition(topic, p))
            out[p] = om
        return out
    finally:
        consumer.close()


def rewind_group(bootstrap: str, group: str, topic: str, partitions: int) -> bool:
    """Commit offset 0 for every partition outside any generation; False while the group has members."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        consumer.commit({KTopicPartition(topic, p): KOffsetAndMetadata(0, "", -1) for p in range(partitions)})
        return True
    except CommitFailedError:
        return False
    finally:
        consumer.close()


def sink_rows(spark, path: str) -> int:
    """Rows committed to a parquet sink so far (0 before its first batch)."""
    try:
        return spark.read.parquet(path).count()
    except Exception as exc:
        if "UNABLE_TO_INFER_SCHEMA" in str(exc) or "PATH_NOT_FOUND" in str(exc):
            return 0
        raise


def stream(spark, cluster, topic: str, group: str, **options: str):
    reader = (
        spark.readStream.format("kgroup")
        .option("bootstrap.servers", cluster.bootstrap_servers)
        .option("subscribe", topic)
        .option("group.id", group)
        .option("startingOffsets", "earliest")
        .option("session.timeout.ms", "6000")
        .option("heartbeat.interval.ms", "1000")
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_spark_session_startup_is_reported(spark, record_property):
    record_property("spark_session_startup_s", round(spark.startup_seconds, 2))
    print(f"\nSpark local[2] session start-up: {spark.startup_seconds:.1f} s")
    assert spark.version.startswith("4.")


def test_batch_read_returns_exactly_what_was_produced(spark, kafka_cluster, topic_factory, group_id_factory):
    topic = topic_factory(3)
    records = [
        (i % 3, None if i % 5 == 0 else b"k%d" % i, b"v%d" % i, [("h", b"x%d" % i)] if i % 2 else [])
        for i in range(60)
    ]
    expected = produce_exact(kafka_cluster.bootstrap_servers, topic, records)
    df = (
        spark.read.format("kgroup")
        .option("bootstrap.servers", kafka_cluster.bootstrap_servers)
        .option("subscribe", topic)
        .option("group.id", group_id_factory())
        .load()
    )
    assert [f.name for f in df.schema.fields] == [
        "key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"
    ]
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
        "timestampType:int,headers:array<struct<key:string,value:binary>>>"
    )
    collected = df.collect()
    assert len(collected) == 60
    assert rows_of(collected) == expected
    assert {r.topic for r in collected} == {topic}
    assert all(r.timestamp is not None and r.timestampType == 0 for r in collected)
    # assign: exactly one partition
    one = (
        spark.read.format("kgroup")
        .option("bootstrap.servers", kafka_cluster.bootstrap_servers)
        .option("assign", json.dumps({topic: [1]}))
        .option("group.id", group_id_factory())
        .load()
        .collect()
    )
    assert rows_of(one) == {row for row in expected if row[0] == 1}
    # maxPartitions: the three partitions' ranges in two tasks, the same rows
    packed = (
        spark.read.format("kgroup")
        .option("bootstrap.servers", kafka_cluster.bootstrap_servers)
        .option("subscribe", topic)
        .option("group.id", group_id_factory())
        .option("maxPartitions", "2")
        .load()
    )
    assert packed.rdd.getNumPartitions() == 2
    assert rows_of(packed.collect()) == expected


def test_streaming_read_runs_three_micro_batches_with_exact_counts(
    spark, kafka_cluster, topic_factory, group_id_factory
):
    topic = topic_factory(3)
    group = group_id_factory()
    expected = produce_exact(
        kafka_cluster.bootstrap_servers, topic, [(i % 3, b"k%d" % (i % 4), b"v%d" % i, []) for i in range(30)]
    )
    name = f"q_{uuid.uuid4().hex[:8]}"
    query = (
        stream(spark, kafka_cluster, topic, group, maxOffsetsPerTrigger="10")
        .writeStream.format("memory")
        .queryName(name)
        .start()
    )
    try:
        wait_for(lambda: spark.sql(f"select count(*) c from {name}").collect()[0].c >= 30, 120, "30 rows")
        # a batch's progress is reported once the batch has ended, after its rows reached the sink
        wait_for(lambda: sum(p["numInputRows"] for p in query.recentProgress) >= 30, 60, "the progress of 30 rows")
        progress = [p for p in query.recentProgress if p["numInputRows"] > 0]
        assert [p["numInputRows"] for p in progress] == [10, 10, 10]
        assert rows_of(spark.sql(f"select * from {name}").collect()) == expected
        # every batch's end is committed to the group (lag tools see the application's progress)
        wait_for(
            lambda: all(
                v == 10 for v in committed_offsets(kafka_cluster.bootstrap_servers, group, topic, 3).values()
            ),
            60,
            "group commits of every partition's end offset",
        )
    finally:
        query.stop()
    assert query.exception() is None


def test_a_new_querys_first_batch_reads_the_groups_first_assignment(
    spark, kafka_cluster, topic_factory, group_id_factory, tmp_path
):
    """The query starts after the group's first assignment: batch 0 is not an empty one.

    A trigger-once query runs exactly one batch; planned before the group assigned anything it
    would end having read nothing.
    """
    topic = topic_factory(3)
    group = group_id_factory()
    expected = produce_exact(
        kafka_cluster.bootstrap_servers, topic, [(i % 3, b"k%d" % i, b"v%d" % i, []) for i in range(12)]
    )
    batches: list[tuple[int, set[tuple]]] = []

    def per_batch(batch, batch_id: int) -> None:
        batches.append((batch_id, rows_of(batch.collect())))

    query = (
        stream(spark, kafka_cluster, topic, group)
        .writeStream.foreachBatch(per_batch)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(once=True)
        .start()
    )
    try:
        assert query.awaitTermination(180), "the trigger-once query did not end within 180 s"
    finally:
        query.stop()
    assert query.exception() is None
    assert batches == [(0, expected)]


def test_restart_from_the_checkpoint_loses_and_repeats_nothing(
    spark, kafka_cluster, topic_factory, group_id_factory, tmp_path
):
    topic = topic_factory(2)
    group = group_id_factory()
    bootstrap = kafka_cluster.bootstrap_servers
    first = produce_spread(bootstrap, topic, 2, b"a", 40)
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")

    def run_until(total: int) -> None:
        query = (
            stream(spark, kafka_cluster, topic, group, maxOffsetsPerTrigger="15")
            .writeStream.format("parquet")
            .option("path", out)
            .option("checkpointLocation", checkpoint)
            .trigger(processingTime="200 milliseconds")
            .start()
        )
        try:
            wait_for(lambda: sink_rows(spark, out) >= total, 120, f"{total} rows in the sink")
        finally:
            query.stop()
        assert query.exception() is None

    run_until(40)
    # rewind the group to 0: the checkpoint (ahead) must win, nothing is read twice
    # (a simple commit: accepted once the stopped query's member has left the group)
    assert wait_for(lambda: rewind_group(bootstrap, group, topic, 2), 30, "the group to accept a rewind")
    second = produce_spread(bootstrap, topic, 2, b"b", 40)
    run_until(80)
    rows = spark.read.parquet(out).collect()
    assert len(rows) == 80, "a record was read twice or lost across the restart"
    assert rows_of(rows) == first | second


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"subscribe": "t", "group.id": "g"}, "bootstrap.servers"),
        ({"bootstrap.servers": "localhost:1", "subscribe": "t"}, "group.id"),
        ({"bootstrap.servers": "localhost:1", "subscribe": "t", "group.id": "g", "colour": "blue"}, "colour"),
        ({"bootstrap.servers": "localhost:1", "subscribe": "t", "assign": '{"t": [0]}', "group.id": "g"}, "assign"),
    ],
)
@pytest.mark.parametrize("mode", ["stream", "batch"])
def test_bad_options_fail_at_load_naming_the_option(spark, options, named, mode):
    reader = spark.readStream if mode == "stream" else spark.read
    reader = reader.format("kgroup")
    for key, value in options.items():
        reader = reader.option(key, value)
    with pytest.raises(Exception) as info:
        reader.load()
    message = str(info.value)
    assert "SourceOptionError" in message
    assert f"{named}:" in message
