"""pause()/resume() in any order never stalls a partition (a real broker, the sync consumer).

kafka-python 3.0's ``Fetcher.fetch_records`` restores a resumed partition's parked records only
when its in-line slot is None, and a drained record set stays in that slot: the resumed
partition was then never handed out nor fetched again. Random pauses and resumes between polls
must still deliver every record exactly once, in order per partition.
"""

from __future__ import annotations

import random
import time

import kgroup
from kgroup import TopicPartition
from kgroup.testing import produce

from .harness import HEARTBEAT_MS, SESSION_TIMEOUT_MS


def test_random_pause_and_resume_deliver_every_record(kafka_bootstrap, topic_factory, group_id_factory):
    topic = topic_factory(partitions=4)
    total = 4000
    produce(kafka_bootstrap, topic, [(i % 4, b"k", b"%d" % i) for i in range(total)])
    rng = random.Random(7)
    tps = [TopicPartition(topic, p) for p in range(4)]
    seen: dict[int, list[int]] = {p: [] for p in range(4)}
    consumer = kgroup.Consumer(
        bootstrap_servers=kafka_bootstrap, group_id=group_id_factory(), auto_offset_reset="earliest",
        session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS, max_poll_records=50,
        enable_auto_commit=False,
    )
    with consumer:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 90
        while sum(map(len, seen.values())) < total and time.monotonic() < deadline:
            for record in consumer.poll(50):
                seen[record.partition].append(record.offset)
            if consumer.assignment() and sum(map(len, seen.values())) < total * 3 // 4:
                consumer.pause(rng.sample(tps, rng.randint(0, 3)))
                consumer.resume(rng.sample(tps, rng.randint(0, 4)))
            else:
                consumer.resume(tps if consumer.assignment() else [])
    for p in range(4):
        assert seen[p] == list(range(total // 4)), (p, len(seen[p]), seen[p][-3:])
