"""``Consumer.position()`` and the other offset look-ups retry on ``kgroup._retry``, on the injected clock.

``position()`` looks again every 20 ms until its ``timeout_ms`` and then raises
``KafkaTimeoutError``, as ``beginning_offsets``, ``end_offsets`` and ``offsets_for_times`` do
(Java's ``KafkaConsumer.position`` throws ``TimeoutException``); ``wakeup()`` ends the wait with
``WakeupError``. The mailbox's waits run on a ``FakeClock`` here, as the simulator runs them.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from kgroup._driver.lookups import OffsetLookups
from kgroup._driver.mailbox import Mailbox
from kgroup.config import ConsumerConfig
from kgroup.errors import KafkaTimeoutError, KGroupError, WakeupError
from kgroup.testing import FakeClock
from kgroup.types import TopicPartition

TP = TopicPartition("events", 0)


class ClockMailbox(Mailbox):
    """A mailbox whose waits pass on a ``FakeClock`` (no real waiting)."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock = clock

    def wait_until(self, ready: Callable[[], bool], timeout_s: float) -> bool:
        if not ready():
            self.clock.sleep(timeout_s)
        return ready()


class Positions:
    """The partition state's ``position``: unknown until ``known_at`` (clock seconds)."""

    def __init__(self, clock: FakeClock, known_at: float) -> None:
        self.clock = clock
        self.known_at = known_at

    def position(self, tp: TopicPartition) -> int | None:
        return 42 if self.clock.monotonic() >= self.known_at else None


def lookups(clock: FakeClock) -> tuple[OffsetLookups, ClockMailbox]:
    config = ConsumerConfig(bootstrap_servers="localhost:9092", group_id="g", default_api_timeout_ms=1000)
    mailbox = ClockMailbox(clock)
    return OffsetLookups(config, clock, mailbox, random.Random(0)), mailbox


def test_position_unknown_at_the_deadline_raises_kafka_timeout_error() -> None:
    clock = FakeClock()
    looked_up: list[float] = []
    subject, _ = lookups(clock)
    with pytest.raises(KafkaTimeoutError, match="position of events-0 unknown after 300 ms") as raised:
        subject.position(TP, Positions(clock, float("inf")), looked_up.append, 300)
    assert isinstance(raised.value, KGroupError)  # callers catching the old KGroupError still do
    assert 0.28 <= clock.monotonic() <= 0.3  # it gave up when the next look would start too late
    assert len(looked_up) >= 14  # looked every 20 ms
    assert set(looked_up) == {0.3}  # each look-up is bounded by the call's deadline


def test_position_default_timeout_is_default_api_timeout_ms() -> None:
    clock = FakeClock()
    subject, _ = lookups(clock)
    with pytest.raises(KafkaTimeoutError, match="after 1000 ms"):
        subject.position(TP, Positions(clock, float("inf")), lambda _deadline: None, None)


def test_position_found_while_retrying() -> None:
    clock = FakeClock()
    subject, _ = lookups(clock)
    assert subject.position(TP, Positions(clock, 0.1), lambda _deadline: None, 300) == 42
    assert clock.monotonic() == pytest.approx(0.1, abs=0.021)


def test_position_wakeup_ends_the_wait() -> None:
    clock = FakeClock()
    subject, mailbox = lookups(clock)
    mailbox.wake()
    with pytest.raises(WakeupError, match="position"):
        subject.position(TP, Positions(clock, float("inf")), lambda _deadline: None, 300)
    assert not mailbox.woken  # consumed
