"""The reads other threads make (``paused()``, ``assignment()``, ``health()``) use a published snapshot.

``PartitionState`` belongs to the poll thread (``kgroup._driver.partitions``): its ``paused`` is a
``set`` the poll thread mutates, which another thread cannot even iterate safely. The consumer
publishes the assignment and the paused partitions as one immutable value whenever the poll
thread changes them; ``kgroup.aio.Consumer.paused()`` and ``health()`` run on the event loop and
read only that.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest

from kgroup import Consumer, TopicPartition

T0, T1, T2 = (TopicPartition("events", p) for p in range(3))


class PollThreadOnly:
    """Stands for the partition state while another thread reads: any use fails the test."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"PartitionState.{name} read off the poll thread")


@pytest.fixture
def consumer() -> Any:
    consumer: Consumer[bytes, bytes] = Consumer(
        bootstrap_servers="localhost:9092", group_id="g", enable_auto_commit=False, transport=mock.MagicMock()
    )
    yield consumer
    consumer.close(timeout_ms=0)


def test_paused_assignment_and_health_read_the_published_snapshot(consumer: Any) -> None:
    consumer.assign([T0, T1, T2])
    consumer.pause([T0, T1])
    consumer.resume([T1])
    parts, consumer._parts = consumer._parts, PollThreadOnly()
    try:
        assert consumer.paused() == frozenset({T0})
        assert consumer.assignment() == frozenset({T0, T1, T2})
        assert consumer.health().assigned_partitions == 3
    finally:
        consumer._parts = parts


def test_the_snapshot_follows_every_change(consumer: Any) -> None:
    consumer.assign([T0, T1])
    consumer.pause([T0, T1])
    consumer.assign([T1, T2])  # a partition no longer assigned is no longer paused
    assert consumer.paused() == frozenset({T1})
    assert consumer.assignment() == frozenset({T1, T2})
    with pytest.raises(Exception, match="not assigned"):
        consumer.pause([T2, T0])  # T2 was paused before T0 failed: published all the same
    assert consumer.paused() == frozenset({T1, T2})
    assert consumer.paused() == frozenset(consumer._parts.paused)
