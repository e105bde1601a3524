"""subscribe(pattern=...) on a real broker: a topic created later joins the subscription and is consumed."""

from __future__ import annotations

import re
import uuid

import kgroup
from kgroup.testing import create_topic, produce

from .harness import BOTH, HEARTBEAT_MS, SESSION_TIMEOUT_MS, wait_until

pytestmark = BOTH


def test_a_topic_created_later_joins_a_pattern_subscription(kafka_bootstrap, group_id_factory):
    prefix = f"pat-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, f"{prefix}-a", partitions=2)
    create_topic(kafka_bootstrap, f"other-{prefix}", partitions=1)  # does not match
    consumer = kgroup.Consumer(
        bootstrap_servers=kafka_bootstrap, group_id=group_id_factory(), auto_offset_reset="earliest",
        session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS, metadata_max_age_ms=2000,
    )
    seen: list[kgroup.ConsumerRecord] = []
    with consumer:
        consumer.subscribe(pattern=re.compile(re.escape(prefix) + r"-\w+"))

        def topics() -> set[str]:
            seen.extend(consumer.poll(100))
            return {tp.topic for tp in consumer.assignment()}

        wait_until(lambda: topics() == {f"{prefix}-a"}, 60, "the matching topic assigned")
        create_topic(kafka_bootstrap, f"{prefix}-b", partitions=2)
        wait_until(lambda: topics() == {f"{prefix}-a", f"{prefix}-b"}, 60, "the new topic assigned")
        produce(kafka_bootstrap, f"{prefix}-b", [(p, b"k", b"v") for p in (0, 1)])
        wait_until(lambda: topics() and sum(r.topic == f"{prefix}-b" for r in seen) == 2, 60, "its records")
        assert consumer.subscription() == frozenset({f"{prefix}-a", f"{prefix}-b"})
