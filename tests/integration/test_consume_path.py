"""The consume path on a real broker (issue 7): every record once, in order, with all its fields.

Runs with both batch decoders (aiokafka's C extension, kafka-python's fallback), over several
batches per partition, a gzip-compressed round, headers, null keys and values, and a small
max_poll_records.
"""

from __future__ import annotations

import pytest
from kafka import KafkaProducer

import kgroup
from kgroup import TopicPartition
from kgroup._io import record_decoder

from .harness import HEARTBEAT_MS, SESSION_TIMEOUT_MS, wait_until

JOIN_BUDGET_S = 30.0
PARTITIONS = 3
ROUNDS = (("none", 40), ("gzip", 30), ("none", 25))  # one flush per round: several batches each


def _produce(bootstrap: str, topic: str) -> dict[tuple[int, int], tuple[bytes | None, bytes | None, list]]:
    """Produce the rounds; return {(partition, offset): (key, value, headers)}."""
    expected: dict[tuple[int, int], tuple[bytes | None, bytes | None, list]] = {}
    next_offset = dict.fromkeys(range(PARTITIONS), 0)
    for compression, per_partition in ROUNDS:
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                                 compression_type=None if compression == "none" else compression)
        try:
            for p in range(PARTITIONS):
                for _ in range(per_partition):
                    n = next_offset[p]
                    key = None if n % 11 == 3 else b"k%d" % n
                    value = None if n % 13 == 5 else b"%d:%d" % (p, n) * (1 + n % 4)
                    headers = [("n", str(n).encode()), ("p", b"")] if n % 2 else []
                    producer.send(topic, value=value, key=key, partition=p, headers=headers)
                    expected[(p, n)] = (key, value, headers)
                    next_offset[p] += 1
            producer.flush(30)
        finally:
            producer.close()
    return expected


@pytest.mark.parametrize("decoder", ["default", "kafka-python"])
def test_every_record_once_in_order_with_its_fields(kafka_bootstrap, topic_factory, group_id_factory,
                                                    monkeypatch, decoder):
    if decoder == "kafka-python":
        monkeypatch.setattr(record_decoder, "load_batch_decoder", lambda: (None, frozenset()))
    topic = topic_factory(PARTITIONS)
    expected = _produce(kafka_bootstrap, topic)
    consumer = kgroup.Consumer(bootstrap_servers=kafka_bootstrap, group_id=group_id_factory(),
                               session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                               auto_offset_reset="earliest", enable_auto_commit=False, max_poll_records=7,
                               check_crcs=True)
    got: list[kgroup.ConsumerRecord] = []
    sizes: list[int] = []

    def poll() -> bool:
        records = consumer.poll(100)
        if records:
            sizes.append(len(records))
            got.extend(records)
        return len(got) >= len(expected)

    try:
        consumer.subscribe([topic])
        wait_until(poll, JOIN_BUDGET_S, f"{len(expected)} records")
        assert consumer.poll(200) == []  # nothing more, nothing twice
        assert max(sizes) <= 7
        for p in range(PARTITIONS):
            offsets = [r.offset for r in got if r.partition == p]
            assert offsets == list(range(len(offsets))), f"partition {p} out of order or with gaps"
        assert {(r.partition, r.offset) for r in got} == set(expected)
        for r in got:
            key, value, headers = expected[(r.partition, r.offset)]
            assert (r.topic, r.key, r.value, r.headers) == (topic, key, value, tuple(headers))
            assert r.timestamp > 0 and r.timestamp_type == 0
        consumer.commit()
        ends = {p: sum(1 for q, _ in expected if q == p) for p in range(PARTITIONS)}
        committed = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)])
        assert {tp.partition: om.offset for tp, om in committed.items() if om is not None} == ends
    finally:
        consumer.close()
