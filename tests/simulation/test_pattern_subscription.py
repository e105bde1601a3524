"""subscribe(pattern=...) as Java's: the matching topics, created and deleted ones joining and
leaving the subscription on the next metadata refresh (deterministic simulator)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

import kgroup
from kgroup import TopicPartition
from kgroup.testing.simulation import SimulatedGroup


def _topics(consumer: kgroup.Consumer) -> set[str]:
    return {tp.topic for tp in consumer.assignment()}


def test_a_pattern_follows_created_and_deleted_topics() -> None:
    group = SimulatedGroup({"orders-eu": 2, "orders-us": 2, "audit": 1}, seed=41)
    seen: list[TopicPartition] = []

    def app(consumer: kgroup.Consumer, running: Callable[[], bool]) -> None:
        with pytest.raises(kgroup.IllegalStateError, match="either topics or a pattern"):
            consumer.subscribe(["audit"], pattern="orders-.*")
        with pytest.raises(kgroup.IllegalStateError, match="invalid pattern"):
            consumer.subscribe(pattern="orders-(")
        consumer.subscribe(pattern=re.compile(r"orders-\w+"))
        while running():
            records = consumer.poll(100)
            seen.extend(r.topic_partition for r in records)
            if records:
                try:
                    consumer.commit()
                except kgroup.UnknownTopicOrPartitionError:
                    pass  # a commit covering the deleted topic's partitions (as in Java): the next one won't
        consumer.close()

    a = group.add_member("a", app, metadata_max_age_ms=2000)
    assert group.run_until(lambda: _topics(a) == {"orders-eu", "orders-us"}, 30)
    assert a.subscription() == frozenset({"orders-eu", "orders-us"})  # "audit" does not match

    group.create_topic("orders-asia", 2)
    assert group.run_until(lambda: _topics(a) == {"orders-eu", "orders-us", "orders-asia"}, 15)
    group.produce("orders-asia", 6)
    assert group.run_until(lambda: sum(tp.topic == "orders-asia" for tp in seen) == 6, 10)

    group.delete_topic("orders-eu")
    assert group.run_until(lambda: _topics(a) == {"orders-us", "orders-asia"}, 15)
    assert a.subscription() == frozenset({"orders-us", "orders-asia"})
    group.check()


def test_a_pattern_that_matches_nothing_yet_joins_when_a_topic_appears() -> None:
    group = SimulatedGroup({"audit": 1}, seed=42)

    def app(consumer: kgroup.Consumer, running: Callable[[], bool]) -> None:
        consumer.subscribe(pattern="events-.*")
        while running():
            consumer.poll(100)
        consumer.close()

    a = group.add_member("a", app, metadata_max_age_ms=1000)
    group.run_for(5)
    assert a.assignment() == frozenset() and a.group_metadata().generation_id == -1  # not joined
    group.create_topic("events-1", 3)
    assert group.run_until(lambda: len(a.assignment()) == 3, 15)
    group.check()
