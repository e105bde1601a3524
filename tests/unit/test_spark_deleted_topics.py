"""The streaming reader's check for deleted topics (``failOnDataLoss``), on a fake clock.

A partition revoked because its topic was deleted is checked on the next trigger; a broker that
has not applied the deletion yet may still describe the topic, so a revoked partition stays a
suspect, checked again each trigger, until it is described as gone or ``metadata_max_age_ms``
has passed. An owned partition leaves the suspects at once (ListOffsets missing it brings it back).
"""

from __future__ import annotations

from concurrent.futures import Future

import pytest

from kgroup.spark import _source
from kgroup.spark._options import parse_options
from kgroup.testing._fake_clock import FakeClock
from kgroup.types import TopicPartition

DOOMED = TopicPartition("doomed", 0)
KEPT = TopicPartition("kept", 0)


class Transport:
    """``describe_topics`` answers from ``topics`` (topic -> partition count) and counts its calls."""

    def __init__(self, topics: dict[str, int]) -> None:
        self.topics = topics
        self.asked: list[set[str]] = []

    def describe_topics(self, topics: set[str], timeout_ms: int) -> Future[dict[str, tuple[int, ...]]]:
        self.asked.append(set(topics))
        future: Future[dict[str, tuple[int, ...]]] = Future()
        future.set_result({t: tuple(range(self.topics[t])) for t in topics if t in self.topics})
        return future


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(_source, "_CLOCK", fake)
    return fake


def reader(transport: Transport, metadata_max_age_ms: int = 300000) -> _source.KGroupStreamReader:
    options = parse_options(
        {"kafka.bootstrap.servers": "localhost:9092", "subscribe": "doomed,kept", "kafka.group.id": "g",
         "kafka.metadata.max.age.ms": str(metadata_max_age_ms)}
    )
    made = _source.KGroupStreamReader(options)
    made._transport = transport  # type: ignore[assignment]
    return made


def test_a_revoked_partition_still_described_is_checked_again_until_its_deletion_shows(clock: FakeClock) -> None:
    transport = Transport({"doomed": 1, "kept": 1})  # this broker has not applied the deletion yet
    made = reader(transport)
    made._forget([DOOMED])  # the rebalance that followed the deletion revoked it
    assert made._deleted([KEPT], {KEPT: 5}) == set()
    clock.advance(1.0)
    assert made._deleted([KEPT], {KEPT: 5}) == set()  # still described: still a suspect
    del transport.topics["doomed"]  # now the broker has applied it
    clock.advance(1.0)
    assert made._deleted([KEPT], {KEPT: 5}) == {DOOMED}
    assert made._deleted([KEPT], {KEPT: 5}) == set()  # reported once: no longer a suspect
    assert transport.asked == [{"doomed"}, {"doomed"}, {"doomed"}]


def test_a_revoked_partition_of_a_live_topic_stops_being_checked_after_metadata_max_age(clock: FakeClock) -> None:
    transport = Transport({"doomed": 1, "kept": 1})
    made = reader(transport, metadata_max_age_ms=10000)
    made._forget([DOOMED])  # moved to another member: the topic lives on
    made._deleted([KEPT], {KEPT: 5})
    clock.advance(11.0)
    assert made._deleted([KEPT], {KEPT: 5}) == set()
    asked = len(transport.asked)
    clock.advance(1.0)
    assert made._deleted([KEPT], {KEPT: 5}) == set()
    assert len(transport.asked) == asked  # no more describes for it


def test_an_owned_partition_leaves_the_suspects_once_described(clock: FakeClock) -> None:
    transport = Transport({"doomed": 1, "kept": 1})
    made = reader(transport)
    made._forget([KEPT])
    assert made._deleted([KEPT], {KEPT: 5}) == set()  # assigned again: owned, described
    assert made._deleted([KEPT], {KEPT: 5}) == set()
    assert transport.asked == [{"kept"}]
