"""kgroup's receive path on a real broker, beside a plain kafka-python consumer in the same process.

kgroup's connections read whole responses into one buffer each (``kgroup._io.receive``) and its
fetch responses' records are views of that buffer; a ``kafka.KafkaConsumer`` started in the same
process reads with kafka-python's own transport and parser, and both read every record.
"""

from __future__ import annotations

from kafka import KafkaConsumer, KafkaProducer
from kafka.net.transport import KafkaSSLTransport, KafkaTCPTransport
from kafka.protocol.parser import KafkaProtocol

import kgroup
from kgroup._io import receive

from .harness import BOTH, HEARTBEAT_MS, SESSION_TIMEOUT_MS, wait_until

pytestmark = BOTH

RECORDS = 600


def test_kgroup_reads_by_frames_and_a_plain_kafka_consumer_beside_it_does_not(kafka_bootstrap, topic_factory,
                                                                                group_id_factory):
    topic = topic_factory(2)
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all", linger_ms=5)
    try:
        for n in range(RECORDS):
            producer.send(topic, value=b"v%d" % n * 40, key=b"k%d" % n, partition=n % 2,
                          headers=[("n", str(n).encode())])
        producer.flush(30)
    finally:
        producer.close()
    ours = kgroup.Consumer(bootstrap_servers=kafka_bootstrap, group_id=group_id_factory(),
                           session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                           auto_offset_reset="earliest", enable_auto_commit=False)
    # the same group timings for both: Tansu answers a JoinGroup after half the session timeout,
    # 22.5 s at kafka-python's default
    plain = KafkaConsumer(topic, bootstrap_servers=kafka_bootstrap, group_id=group_id_factory(),
                          session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                          auto_offset_reset="earliest", enable_auto_commit=False)
    got: list[kgroup.ConsumerRecord] = []
    plain_got: list[object] = []
    try:
        ours.subscribe([topic])

        def ours_read() -> bool:
            got.extend(ours.poll(100))
            return len(got) >= RECORDS

        def plain_read() -> bool:
            for batch in plain.poll(timeout_ms=100).values():
                plain_got.extend(batch)
            return len(plain_got) >= RECORDS

        # one consumer at a time, each with its own deadline (room on a loaded machine)
        wait_until(ours_read, 60.0, lambda: f"{RECORDS} records read by kgroup's consumer (got {len(got)})")
        wait_until(plain_read, 60.0, lambda: f"{RECORDS} records read by kafka-python's (got {len(plain_got)})")
        assert sorted((r.partition, r.offset) for r in got) == sorted((r.partition, r.offset) for r in plain_got)
        for r in got:
            n = int(r.key[1:])
            assert (r.value, r.headers) == (b"v%d" % n * 40, (("n", str(n).encode()),))

        manager = ours._transport._manager
        conns = [c for c in manager._conns.values() if c.transport is not None]
        assert conns and all(type(c.transport) is receive.FrameTCPTransport for c in conns)
        assert all(type(c.parser) is receive.FrameParser for c in conns)
        plain_conns = [c for c in plain._client._manager._conns.values() if c.transport is not None]
        assert plain_conns
        assert all(type(c.transport) in (KafkaTCPTransport, KafkaSSLTransport) for c in plain_conns)
        assert all(type(c.parser) is KafkaProtocol for c in plain_conns)
    finally:
        ours.close()
        plain.close()
