"""KIP-227 fetch sessions on a real broker: incremental Fetches, every record once, in order.

A consumer of 60 partitions reads records produced before it joined, then records of 6 of them. On Apache
Kafka its Fetches after the first carry a session id and only the partitions that changed; on
Tansu, which creates no fetch sessions, every Fetch is a full one. On both every record arrives
once, in offset order per partition. The broker answers the session's closing Fetch (epoch -1)
at ``close()`` without an error.
"""

from __future__ import annotations

from typing import Any

from kafka import KafkaProducer

import kgroup

from .harness import BOTH, HEARTBEAT_MS, SESSION_TIMEOUT_MS, wait_until

pytestmark = BOTH

PARTITIONS = 60
PER_ROUND = 5  # records per partition and round
SECOND = range(6)  # the second round's partitions: the other 54 stay idle


def _produce(bootstrap: str, topic: str, round_: int, partitions: range) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        for p in partitions:
            for i in range(PER_ROUND):
                producer.send(topic, value=b"%d:%d:%d" % (round_, p, i), partition=p)
        producer.flush(30)
    finally:
        producer.close()


def test_a_consumer_of_many_partitions_fetches_incrementally_and_reads_every_record_once(
        kafka_bootstrap, broker_kind, topic_factory, group_id_factory):
    topic = topic_factory(PARTITIONS)
    _produce(kafka_bootstrap, topic, 0, range(PARTITIONS))
    consumer = kgroup.Consumer(bootstrap_servers=kafka_bootstrap, group_id=group_id_factory(),
                               session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                               auto_offset_reset="earliest", enable_auto_commit=False, fetch_max_wait_ms=100)
    transport: Any = consumer._ensure_transport()
    listed: list[tuple[int, int, int, int]] = []  # per Fetch: (session id, epoch, partitions listed, forgotten)
    closes: list[Any] = []
    manager = transport._manager
    send = manager.send

    def recording_send(request: Any, *args: Any, **kwargs: Any) -> Any:
        future = send(request, *args, **kwargs)
        if type(request).__name__.startswith("FetchRequest"):
            count = sum(len(t.partitions) for t in request.topics)
            gone = sum(len(t.partitions) for t in request.forgotten_topics_data)
            listed.append((request.session_id, request.session_epoch, count, gone))
            if request.session_epoch == -1 and request.session_id:
                future.add_both(closes.append)
        return future

    manager.send = recording_send
    got: list[kgroup.ConsumerRecord] = []
    try:
        consumer.subscribe([topic])
        wait_until(lambda: got.extend(consumer.poll(100)) or len(got) >= PARTITIONS * PER_ROUND, 60.0,
                   lambda: f"the first round ({len(got)} of {PARTITIONS * PER_ROUND})")
        _produce(kafka_bootstrap, topic, 1, SECOND)
        total = (PARTITIONS + len(SECOND)) * PER_ROUND
        wait_until(lambda: got.extend(consumer.poll(100)) or len(got) >= total, 60.0,
                   lambda: f"the second round ({len(got)} of {total})")
        got.extend(consumer.poll(200))
        sessions = transport.fetcher().fetch_sessions()
    finally:
        consumer.close()

    seen = [(r.partition, r.offset) for r in got]
    assert len(seen) == len(set(seen)) == total
    for p in range(PARTITIONS):
        values = [r.value for r in got if r.partition == p]
        rounds = 2 if p in SECOND else 1
        assert values == [b"%d:%d:%d" % (n // PER_ROUND, p, n % PER_ROUND) for n in range(rounds * PER_ROUND)]
    fetches = [entry for entry in listed if entry[1] != -1]
    if broker_kind == "apache-kafka":
        (full, incremental), = sessions.values()
        assert incremental > full >= 1, sessions
        first = fetches[0]
        assert first[:3] == (0, 0, PARTITIONS)  # full: every partition, asking for a session
        later = fetches[1:]
        assert all(session_id != 0 for session_id, _, _, _ in later), later
        # incremental Fetches list what changed only: the partitions whose position moved. All 60
        # after the first round's records (once, or twice if they came in two responses), then at
        # most the second round's 6, and none while the consumer long-polls idle partitions
        assert sum(1 for _, _, count, _ in later if count > len(SECOND)) <= 2, later
        assert any(count == 0 for _, _, count, _ in later), later
        assert len(closes) == 1 and closes[0].error_code == 0, closes  # the close at close()
    else:
        assert all(session_id == 0 and epoch == 0 for session_id, epoch, _, _ in fetches), fetches
        assert closes == []
