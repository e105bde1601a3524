"""The options of Spark's Kafka source, end to end: Trigger.AvailableNow, minPartitions, JSON offsets,
minOffsetsPerTrigger/maxTriggerDelay and failOnDataLoss, each in a query that would read something
else without the option (names, defaults and rules: Spark's "Structured Streaming + Kafka
Integration Guide", docs/spark.md).

The group runs through the coordinator proxy over the embedded broker (``kafka_cluster``);
failOnDataLoss after retention needs DeleteRecords, which only the Apache Kafka broker serves.
"""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

import pytest
from kafka.admin import KafkaAdminClient
from kafka.structs import TopicPartition as KTopicPartition
from pyspark.errors import StreamingQueryException

from tests.spark.conftest import wait_for
from tests.spark.test_spark_source import committed_offsets, produce_exact, stream

TIMEOUT_S = 120


def produce(bootstrap: str, topic: str, partitions: int, prefix: str, count: int) -> set[tuple]:
    """``count`` records round-robin over ``partitions``: the ``(topic, partition, offset, value)`` rows to read."""
    records = [(i % partitions, None, b"%s%d" % (prefix.encode(), i), []) for i in range(count)]
    sent = produce_exact(bootstrap, topic, records)
    return {(topic, p, o, v) for p, o, _, v, _ in sent}


class BatchSink:
    """A ``foreachBatch`` sink in this process: the rows and the input partitions of every batch.

    With ``by_batch_id`` it is idempotent as Spark's documentation asks of a ``foreachBatch``
    sink: a query stopped after a batch ran but before Spark wrote it to the checkpoint's commit
    log runs that batch again on restart, with the same ``batch_id`` and offsets; the sink then
    keeps the rows once and records in ``replayed_differently`` a replay whose rows differ.
    """

    def __init__(self, on_batch: Any = None, *, by_batch_id: bool = False) -> None:
        self.batches: list[list[tuple]] = []
        self.input_partitions: list[int] = []
        self.replayed_differently: list[int] = []
        self._on_batch = on_batch
        self._by_batch_id = by_batch_id
        self._index_of: dict[int, int] = {}
        self._lock = threading.Lock()

    def __call__(self, df: Any, batch_id: int) -> None:
        rows = df.collect()
        with self._lock:
            got = [(r.topic, r.partition, r.offset, bytes(r.value)) for r in rows]
            if self._by_batch_id and batch_id in self._index_of:
                if self.batches[self._index_of[batch_id]] != got:
                    self.replayed_differently.append(batch_id)
            elif rows:
                self._index_of[batch_id] = len(self.batches)
                self.batches.append(got)
                self.input_partitions.append(df.rdd.getNumPartitions())
        if self._on_batch is not None:
            self._on_batch(batch_id, rows)

    @property
    def rows(self) -> list[tuple]:
        with self._lock:
            return [row for batch in self.batches for row in batch]


def available_now(spark, cluster, topic: str, group: str, checkpoint: str, sink: BatchSink, **options: str):
    """Run one Trigger.AvailableNow query to its end; return the query (failed or not)."""
    query = (
        stream(spark, cluster, topic, group, **options)
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    try:
        ended = query.awaitTermination(TIMEOUT_S)
    except StreamingQueryException:  # failed: the caller looks at query.exception()
        ended = True
    finally:
        query.stop()
    assert ended, "the Trigger.AvailableNow query did not end by itself"
    return query


# ---------------------------------------------------------------------- Trigger.AvailableNow
def test_available_now_reads_what_is_there_in_capped_batches_then_stops(
    spark, kafka_cluster, topic_factory, group_id_factory, tmp_path
):
    topic = topic_factory(3)
    group = group_id_factory()
    bootstrap = kafka_cluster.bootstrap_servers
    first = produce(bootstrap, topic, 3, "a", 30)
    late: set[tuple] = set()

    def produce_during_the_query(batch_id: int, rows: list) -> None:
        if batch_id == 0:  # after prepareForTriggerAvailableNow: past the query's end offsets
            late.update(produce(bootstrap, topic, 3, "late", 9))

    sink = BatchSink(produce_during_the_query)
    checkpoint = str(tmp_path / "checkpoint")
    query = available_now(spark, kafka_cluster, topic, group, checkpoint, sink, maxOffsetsPerTrigger="5")
    assert query.exception() is None
    assert late, "the first batch did not run"
    # several capped batches (Spark runs a single batch for sources without Trigger.AvailableNow)
    assert [len(b) for b in sink.batches] == [5] * 6
    assert sorted(sink.rows) == sorted(first), "not exactly what was there when the query started"
    assert committed_offsets(bootstrap, group, topic, 3) == {p: 10 for p in range(3)}
    # the next run of the same checkpoint reads what came since, then stops again
    again = BatchSink()
    query = available_now(spark, kafka_cluster, topic, group, checkpoint, again, maxOffsetsPerTrigger="5")
    assert query.exception() is None
    assert sorted(again.rows) == sorted(late)
    assert [len(b) for b in again.batches] == [5, 4]


# ---------------------------------------------------------------------- minPartitions
def test_min_partitions_splits_batch_reads_and_micro_batches(
    spark, kafka_cluster, topic_factory, group_id_factory, tmp_path
):
    topic = topic_factory(1)
    bootstrap = kafka_cluster.bootstrap_servers
    expected = produce(bootstrap, topic, 1, "v", 40)

    def batch(**options: str):
        reader = spark.read.format("kgroup").option("bootstrap.servers", bootstrap).option("subscribe", topic)
        for key, value in {"group.id": group_id_factory(), **options}.items():
            reader = reader.option(key, value)
        return reader.load()

    assert batch().rdd.getNumPartitions() == 1
    split = batch(minPartitions="4")
    assert split.rdd.getNumPartitions() == 4
    rows = split.collect()
    assert sorted((r.topic, r.partition, r.offset, bytes(r.value)) for r in rows) == sorted(expected)
    sink = BatchSink()
    query = available_now(
        spark, kafka_cluster, topic, group_id_factory(), str(tmp_path / "ckpt"), sink, minPartitions="4"
    )
    assert query.exception() is None
    assert sink.input_partitions == [4]
    assert sorted(sink.rows) == sorted(expected)


# ---------------------------------------------------------------------- startingOffsets / endingOffsets
def test_json_starting_offsets_in_a_stream(spark, kafka_cluster, topic_factory, group_id_factory, tmp_path):
    topic = topic_factory(3)
    produced = produce(kafka_cluster.bootstrap_servers, topic, 3, "v", 30)
    sink = BatchSink()
    # t-0 from offset 7, t-1 from its latest (-1), t-2 not named: earliest (Spark's rule for new partitions)
    starting = json.dumps({topic: {"0": 7, "1": -1}})
    query = available_now(
        spark, kafka_cluster, topic, group_id_factory(), str(tmp_path / "ckpt"), sink, startingOffsets=starting
    )
    assert query.exception() is None
    assert sorted(sink.rows) == sorted(r for r in produced if (r[1] == 0 and r[2] >= 7) or r[1] == 2)


def test_json_starting_and_ending_offsets_in_a_batch_read(spark, kafka_cluster, topic_factory, group_id_factory):
    topic = topic_factory(3)
    bootstrap = kafka_cluster.bootstrap_servers
    produced = produce(bootstrap, topic, 3, "v", 30)

    def read(**options: str) -> list[tuple]:
        reader = (
            spark.read.format("kgroup").option("bootstrap.servers", bootstrap).option("subscribe", topic)
            .option("group.id", group_id_factory())
        )
        for key, value in options.items():
            reader = reader.option(key, value)
        return [(r.topic, r.partition, r.offset, bytes(r.value)) for r in reader.load().collect()]

    rows = read(
        startingOffsets=json.dumps({topic: {"0": 2, "1": -2, "2": 5}}),
        endingOffsets=json.dumps({topic: {"0": 4, "1": -1, "2": 5}}),
    )
    assert sorted(rows) == sorted(r for r in produced if (r[1] == 0 and 2 <= r[2] < 4) or r[1] == 1)
    # Spark's batch rules: not from latest, and a JSON names every partition
    for options, named in (
        ({"startingOffsets": "latest"}, "startingOffsets"),
        ({"startingOffsets": json.dumps({topic: {"0": -1, "1": 0, "2": 0}})}, "startingOffsets"),
        ({"endingOffsets": json.dumps({topic: {"0": 3}})}, "endingOffsets"),
    ):
        with pytest.raises(Exception) as info:
            read(**options)
        assert "SourceOptionError" in str(info.value), str(info.value)[-2000:]
        assert f"{named}:" in str(info.value)


def test_ending_offsets_is_rejected_in_a_stream(spark, kafka_cluster, topic_factory, group_id_factory, tmp_path):
    topic = topic_factory(1)
    query = (
        stream(spark, kafka_cluster, topic, group_id_factory(), endingOffsets="latest")
        .writeStream.format("memory").queryName(f"q_{uuid.uuid4().hex[:8]}")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .start()
    )
    try:
        with pytest.raises(StreamingQueryException, match="endingOffsets"):
            query.awaitTermination(TIMEOUT_S)
    finally:
        query.stop()


# ---------------------------------------------------------------------- minOffsetsPerTrigger / maxTriggerDelay
def _group_assigned(cluster, group: str) -> bool:
    return any(e.kind == "group_stable" for e in cluster.model_events(group))


def _driver_list_offsets(cluster) -> list:
    """The ListOffsets requests of the queries' drivers (client id ``kgroup-spark``) so far."""
    return [r for r in cluster.requests("ListOffsets") if r.client_id == "kgroup-spark"]


def _await_a_trigger_after_the_assignment(cluster) -> None:
    """Wait until a trigger ran after the group's assignment (each trigger asks ListOffsets).

    The first trigger is never delayed by minOffsetsPerTrigger (Spark's lastTriggerMillis = 0) and
    runs whatever is there; the reader waits for the assignment when the query starts, so that
    trigger comes right after it: records meant for later batches are produced once it passed.
    """
    assigned_at = len(_driver_list_offsets(cluster))
    wait_for(lambda: len(_driver_list_offsets(cluster)) >= assigned_at + 2, TIMEOUT_S,
             "a trigger after the assignment")


NO_DATA_PROGRESS_INTERVAL = "spark.sql.streaming.noDataProgressEventInterval"


def _processing_time_query(spark, cluster, topic: str, group: str, checkpoint: str, sink: BatchSink, **options: str):
    return (
        stream(spark, cluster, topic, group, **options)
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="200 milliseconds")
        .start()
    )


def test_min_offsets_per_trigger_waits_for_enough_records(
    spark, kafka_cluster, topic_factory, group_id_factory, tmp_path
):
    topic = topic_factory(2)
    group = group_id_factory()
    bootstrap = kafka_cluster.bootstrap_servers
    sink = BatchSink()
    # A trigger that runs no batch enters recentProgress at most once per
    # spark.sql.streaming.noDataProgressEventInterval (Spark's SQLConf, 10 s by default), so
    # "10 more triggers" below would take 100 s of triggers (500 of them); with 0 (read when the
    # query starts) each trigger is one entry: 10 triggers, 2 s
    spark.conf.set(NO_DATA_PROGRESS_INTERVAL, "0")
    try:
        query = _processing_time_query(
            spark, kafka_cluster, topic, group, str(tmp_path / "ckpt"), sink,
            minOffsetsPerTrigger="20", maxOffsetsPerTrigger="100",
        )
    finally:
        spark.conf.unset(NO_DATA_PROGRESS_INTERVAL)
    try:
        wait_for(lambda: _group_assigned(kafka_cluster, group), TIMEOUT_S, "the group's assignment")
        _await_a_trigger_after_the_assignment(kafka_cluster)
        few = produce(bootstrap, topic, 2, "few", 5)
        # 5 < minOffsetsPerTrigger: triggers pass without a batch (maxTriggerDelay: 15 minutes). Each
        # trigger asks the log end offsets (ListOffsets), so the proxy counts them
        seen = len(_driver_list_offsets(kafka_cluster))
        wait_for(lambda: len(_driver_list_offsets(kafka_cluster)) >= seen + 10, TIMEOUT_S, "10 more triggers")
        assert sink.batches == []
        more = produce(bootstrap, topic, 2, "more", 15)
        wait_for(lambda: sink.batches, TIMEOUT_S, "a batch once 20 records are there")
    finally:
        query.stop()
    assert query.exception() is None
    assert [sorted(b) for b in sink.batches] == [sorted(few | more)]


def test_max_trigger_delay_runs_a_small_batch_after_the_delay(
    spark, kafka_cluster, topic_factory, group_id_factory, tmp_path
):
    topic = topic_factory(1)
    group = group_id_factory()
    sink = BatchSink()
    query = _processing_time_query(
        spark, kafka_cluster, topic, group, str(tmp_path / "ckpt"), sink,
        minOffsetsPerTrigger="1000", maxTriggerDelay="3s",
    )
    try:
        wait_for(lambda: _group_assigned(kafka_cluster, group), TIMEOUT_S, "the group's assignment")
        _await_a_trigger_after_the_assignment(kafka_cluster)
        few = produce(kafka_cluster.bootstrap_servers, topic, 1, "few", 5)
        wait_for(lambda: sink.batches, TIMEOUT_S, "the 5 records once maxTriggerDelay passed")
    finally:
        query.stop()
    assert query.exception() is None
    assert [sorted(b) for b in sink.batches] == [sorted(few)]


# ---------------------------------------------------------------------- failOnDataLoss
class _Direct:
    """``stream()``'s cluster argument for a broker used without the coordinator proxy."""

    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = bootstrap_servers


@pytest.mark.broker_kinds("apache-kafka")
@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_records_deleted_by_retention_before_they_were_read(
    spark, kafka_bootstrap, topic_factory, group_id_factory, tmp_path, fail_on_data_loss
):
    topic = topic_factory(1)
    group = group_id_factory()
    cluster = _Direct(kafka_bootstrap)  # Apache Kafka's own coordinator and ListOffsets
    checkpoint = str(tmp_path / "ckpt")
    first = produce(kafka_bootstrap, topic, 1, "a", 10)
    sink = BatchSink()
    query = available_now(spark, cluster, topic, group, checkpoint, sink, failOnDataLoss=fail_on_data_loss)
    assert query.exception() is None
    assert sorted(sink.rows) == sorted(first)
    # while the query is stopped: 10 more records, then offsets 0-14 go (DeleteRecords, as retention)
    second = produce(kafka_bootstrap, topic, 1, "b", 10)
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    try:
        admin.delete_records({KTopicPartition(topic, 0): 15})
    finally:
        admin.close()
    sink = BatchSink()
    query = available_now(spark, cluster, topic, group, checkpoint, sink, failOnDataLoss=fail_on_data_loss)
    if fail_on_data_loss == "true":
        failure = str(query.exception())
        assert "DataLossError" in failure, failure[-3000:]
        assert "failOnDataLoss" in failure
        assert sink.rows == []
    else:
        assert query.exception() is None
        assert sorted(sink.rows) == sorted(r for r in second if r[2] >= 15)


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_a_topic_deleted_mid_stream(
    spark, kafka_cluster, topic_factory, group_id_factory, tmp_path, fail_on_data_loss
):
    doomed, kept = topic_factory(1), topic_factory(1)
    group = group_id_factory()
    bootstrap = kafka_cluster.bootstrap_servers
    produce(bootstrap, doomed, 1, "d", 5)
    produce(bootstrap, kept, 1, "k", 5)
    sink = BatchSink()
    query = _processing_time_query(
        spark, kafka_cluster, f"{doomed},{kept}", group, str(tmp_path / "ckpt"), sink,
        failOnDataLoss=fail_on_data_loss,
    )
    try:
        wait_for(lambda: len(sink.rows) >= 10, TIMEOUT_S, "both topics' records")
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.delete_topics([doomed])
        finally:
            admin.close()
        later = produce(bootstrap, kept, 1, "later", 5)
        if fail_on_data_loss == "true":
            wait_for(lambda: query.exception() is not None, TIMEOUT_S, "the query to fail")
            failure = str(query.exception())
            assert "DataLossError" in failure, failure[-3000:]
            assert f"{doomed}-0" in failure
        else:
            wait_for(lambda: later <= set(sink.rows), TIMEOUT_S, "the kept topic's later records")

            def stream_offset() -> dict:
                progress = query.lastProgress
                return json.loads(progress["sources"][0]["endOffset"])["offsets"] if progress else {}

            # the deleted topic leaves the stream offset (a trigger or two after the deletion)
            wait_for(lambda: doomed not in stream_offset(), TIMEOUT_S, "the deleted topic to leave the offset")
            assert kept in stream_offset()
            assert query.isActive
            assert query.exception() is None
    finally:
        query.stop()
