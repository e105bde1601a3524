"""The kgroup Spark source on the consumer group protocol (KIP-848), on Apache Kafka 4.4.

A streaming query's driver is the group's member; with ``.option("group.protocol",
"consumer")`` (Java's name, as every Kafka consumer property of the source) it joins with
ConsumerGroupHeartbeat and the broker assigns its partitions. The query reads every produced row
once, Kafka describes the group as a consumer-protocol group with the query's member at an
epoch, and the commits Spark's progress makes (OffsetCommit with the member epoch) reach the
group: its committed offsets are the ends of what was read.
"""

from __future__ import annotations

import pytest

from kgroup.admin import GroupAdmin
from tests.spark.conftest import wait_for
from tests.spark.test_spark_source import committed_offsets
from tests.spark.test_spark_source_options import TIMEOUT_S, BatchSink, produce

pytestmark = pytest.mark.broker_kinds("apache-kafka")


def test_a_stream_on_the_consumer_protocol_reads_every_row_once_and_commits(
    spark, kafka_bootstrap, topic_factory, group_id_factory, tmp_path
):
    topic = topic_factory(2)
    group = group_id_factory()
    rows = produce(kafka_bootstrap, topic, 2, "one", 40)
    sink = BatchSink(by_batch_id=True)
    query = (
        spark.readStream.format("kgroup")
        .option("bootstrap.servers", kafka_bootstrap)
        .option("subscribe", topic)
        .option("group.id", group)
        .option("group.protocol", "consumer")
        .option("startingOffsets", "earliest")
        .load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    admin = GroupAdmin.connect(kafka_bootstrap, timeout_ms=20000)
    try:
        wait_for(lambda: rows <= set(sink.rows), TIMEOUT_S, f"{len(rows)} rows")
        described = admin.describe_group(group)
        assert described.group_type == "consumer", described
        (member,) = described.members
        assert member.member_epoch is not None and member.member_epoch > 0
        wait_for(lambda: committed_offsets(kafka_bootstrap, group, topic, 2) == {0: 20, 1: 20}, TIMEOUT_S,
                 "the group's commits")
        second = produce(kafka_bootstrap, topic, 2, "two", 10)
        wait_for(lambda: rows | second <= set(sink.rows), TIMEOUT_S, "the rows produced while the query ran")
    finally:
        query.stop()
        admin.close()
    assert query.exception() is None
    assert len(sink.rows) == len(set(sink.rows)) == len(rows) + 10, "a row read twice or one missing"
    assert sink.replayed_differently == []
