"""isolation_level="read_committed" on Apache Kafka: aborted transactions and markers never reach poll().

A transactional producer commits one transaction and aborts another on each partition, then
writes plain records; the consumer must hand out exactly the committed and the plain
records, in order, and end at the log end (past the transaction markers). Apache Kafka only:
the embedded Tansu broker's transactions are not what this checks.
"""

from __future__ import annotations

import pytest
from kafka import KafkaProducer

import kgroup
from kgroup import TopicPartition

from .harness import HEARTBEAT_MS, SESSION_TIMEOUT_MS, wait_until

pytestmark = pytest.mark.broker_kinds("apache-kafka")

PARTITIONS = 2


def test_read_committed_hands_out_only_committed_records(kafka_bootstrap, topic_factory, group_id_factory):
    topic = topic_factory(partitions=PARTITIONS)
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, transactional_id=f"tx-{topic}", acks="all")
    producer.init_transactions()
    expected: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    for outcome in ("commit", "abort", "commit"):
        producer.begin_transaction()
        for p in range(PARTITIONS):
            for i in range(5):
                value = b"%s-%d-%d" % (outcome.encode(), p, i)
                producer.send(topic, value=value, partition=p)
                if outcome == "commit":
                    expected[p].append(value)
        producer.flush(30)
        if outcome == "commit":
            producer.commit_transaction()
        else:
            producer.abort_transaction()
    producer.close(5)
    plain = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
    for p in range(PARTITIONS):
        plain.send(topic, value=b"plain-%d" % p, partition=p)
        expected[p].append(b"plain-%d" % p)
    plain.flush(30)
    plain.close(5)
    consumer = kgroup.Consumer(
        bootstrap_servers=kafka_bootstrap, group_id=group_id_factory(), auto_offset_reset="earliest",
        session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS, enable_auto_commit=False,
        isolation_level="read_committed", max_poll_records=3,
    )
    got: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    with consumer:
        consumer.subscribe([topic])

        def done() -> bool:
            for record in consumer.poll(100):
                got[record.partition].append(record.value)
            return all(len(got[p]) >= len(expected[p]) for p in range(PARTITIONS))

        wait_until(done, 60, "every committed record")
        for _ in range(5):  # nothing more comes: the aborted records stay out
            for record in consumer.poll(100):
                got[record.partition].append(record.value)
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in range(PARTITIONS)])
        positions = {tp: consumer.position(tp) for tp in ends}
    assert got == expected
    assert positions == ends, "the position ends past the last transaction marker"
