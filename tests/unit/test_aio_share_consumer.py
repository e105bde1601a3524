"""``kgroup.aio.ShareConsumer`` around a scripted share consumer: the worker, cancellation, wakeup, callbacks.

No broker: ``FakeShare`` stands for ``kgroup.ShareConsumer`` (its poll waits on the mailbox as
the real one does, hands out the records it has before it looks at a wakeup, and keeps the
implicit acknowledgements in a real ``InFlight``). It shows what the integration test cannot
provoke on purpose: a poll cancelled while its records arrive keeps them for the next poll
(which does not poll again), and a commit or close releases records nobody received.
"""

from __future__ import annotations

import asyncio
import collections
import threading
from typing import Any

import pytest

import kgroup.aio
from kgroup._aio.share import ShareConsumer as AioShareConsumer
from kgroup._clock import MonotonicClock
from kgroup._driver.mailbox import Mailbox
from kgroup._share.acks import InFlight
from kgroup.config import ShareConsumerConfig
from kgroup.errors import ConsumerClosedError, WakeupError
from kgroup.types import AcknowledgeType, ShareConsumerRecord, TopicPartition

TP = TopicPartition("t", 0)


def record(offset: int) -> ShareConsumerRecord[bytes, bytes]:
    return ShareConsumerRecord("t", 0, offset, None, b"v")


class _Fetcher:
    def __init__(self, mode: str) -> None:
        self.inflight = InFlight(mode)


class FakeShare:
    """The parts of ``kgroup.ShareConsumer`` the asyncio twin drives."""

    def __init__(self, mode: str = "implicit") -> None:
        self._mailbox = Mailbox()
        self._clock = MonotonicClock()
        self.config = ShareConsumerConfig.from_kwargs(bootstrap_servers="h:9092", group_id="g",
                                                      share_acknowledgement_mode=mode)
        self._fetcher = _Fetcher(mode)
        self.available: collections.deque[ShareConsumerRecord[bytes, bytes]] = collections.deque()
        self.polls = 0
        self.in_poll = threading.Event()
        self.sent: dict[TopicPartition, dict[int, int]] = {}
        self.callback: Any = None
        self.closed = False
        self.topics: frozenset[str] = frozenset()

    def _take(self) -> None:
        for tp, acks in self._fetcher.inflight.take().items():
            self.sent.setdefault(tp, {}).update(acks)

    def subscribe(self, topics: list[str]) -> None:
        self.topics = frozenset(topics)

    def subscription(self) -> frozenset[str]:
        return self.topics

    def poll(self, timeout_ms: int) -> list[ShareConsumerRecord[bytes, bytes]]:
        self.polls += 1
        self._fetcher.inflight.check_all_acknowledged()
        self._take()
        deadline = self._clock.monotonic() + timeout_ms / 1000
        self.in_poll.set()
        try:
            while True:
                if self.available:  # records first, as the real poll(): a wakeup never loses them
                    out = list(self.available)
                    self.available.clear()
                    self._fetcher.inflight.delivered((r.topic_partition, r.offset) for r in out)
                    return out
                if self._mailbox.consume_wakeup():
                    raise WakeupError("wakeup() interrupted poll()")
                remaining = deadline - self._clock.monotonic()
                if remaining <= 0:
                    return []
                self._mailbox.wait_until(lambda: self._mailbox.woken, min(remaining, 1.0))
        finally:
            self.in_poll.clear()

    def acknowledge(self, rec: ShareConsumerRecord[Any, Any], type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        self._fetcher.inflight.acknowledge(rec.topic_partition, rec.offset, type)

    def set_acknowledgement_commit_callback(self, callback: Any) -> None:
        self.callback = callback

    def commit_sync(self, timeout_ms: int | None = None) -> dict[TopicPartition, None]:
        self._take()
        if self.callback is not None and TP in self.sent:
            self.callback({TP: frozenset(self.sent[TP])}, None)
        return dict.fromkeys(self.sent)

    def commit_async(self) -> None:
        self._take()

    def wakeup(self) -> None:
        self._mailbox.wake()

    def close(self, timeout_ms: int | None = None) -> None:
        self._take()
        self.closed = True
        self._mailbox.disable_wakeups()

    def metrics(self) -> dict[str, float]:
        return {"fetch-total": 0.0}


def wrap(fake: FakeShare) -> AioShareConsumer[bytes, bytes]:
    return AioShareConsumer._wrapping(fake)  # type: ignore[arg-type]


async def until(condition: Any, timeout_s: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.005)


def test_kgroup_aio_exports_the_share_consumer() -> None:
    assert kgroup.aio.ShareConsumer is AioShareConsumer
    assert "ShareConsumer" in kgroup.aio.__all__


def test_a_cancelled_poll_keeps_its_records_for_the_next_poll() -> None:
    async def main() -> None:
        fake = FakeShare()
        consumer = wrap(fake)
        await consumer.subscribe(["t"])
        task = asyncio.ensure_future(consumer.poll(30000))
        await until(fake.in_poll.is_set)
        fake.available.extend([record(0), record(1)])  # arrive as the poll is cancelled
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await until(lambda: not fake.in_poll.is_set())
        polls = fake.polls
        got = await consumer.poll(0)
        assert [r.offset for r in got] == [0, 1]
        assert fake.polls == polls  # handed out from the buffer: still the last poll's records
        assert fake.sent == {}  # implicit mode has accepted nothing yet
        assert await consumer.poll(0) == []
        assert fake.sent == {TP: {0: 1, 1: 1}}  # accepted by the poll after the one that returned them
        await consumer.close()

    asyncio.run(main())


def test_commit_and_close_release_records_nobody_received() -> None:
    async def main() -> None:
        fake = FakeShare()
        consumer = wrap(fake)
        seen: list[tuple[Any, int]] = []
        loop_thread = threading.get_ident()

        async def on_ack(offsets: Any, error: Any) -> None:
            seen.append((dict(offsets), threading.get_ident()))

        consumer.set_acknowledgement_commit_callback(on_ack)
        await consumer.subscribe(["t"])
        task = asyncio.ensure_future(consumer.poll(30000))
        await until(fake.in_poll.is_set)
        fake.available.append(record(7))
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        result = await consumer.commit_sync()
        assert result == {TP: None}
        assert fake.sent == {TP: {7: int(AcknowledgeType.RELEASE)}}  # never received: released, not accepted
        await until(lambda: bool(seen))
        assert seen == [({TP: frozenset({7})}, loop_thread)]  # the callback ran on the loop
        assert await consumer.poll(0) == []
        await consumer.close()
        assert fake.closed

    asyncio.run(main())


def test_explicit_acknowledge_then_poll_and_wakeup() -> None:
    async def main() -> None:
        fake = FakeShare("explicit")
        consumer = wrap(fake)
        await consumer.subscribe(["t"])
        fake.available.append(record(3))
        (got,) = await consumer.poll(1000)
        consumer.acknowledge(got, AcknowledgeType.RELEASE)
        assert await consumer.poll(0) == []
        assert fake.sent == {TP: {3: int(AcknowledgeType.RELEASE)}}
        consumer.wakeup()
        with pytest.raises(WakeupError):
            await consumer.poll(30000)
        assert consumer.metrics() == {"fetch-total": 0.0}
        assert consumer.subscription() == frozenset({"t"})

    asyncio.run(main())


def test_close_ends_a_running_poll_and_async_with_closes() -> None:
    async def main() -> None:
        fake = FakeShare()
        async with wrap(fake) as consumer:
            await consumer.subscribe(["t"])
            task = asyncio.ensure_future(consumer.poll(30000))
            await until(fake.in_poll.is_set)
            await consumer.close()
            with pytest.raises(ConsumerClosedError):
                await task
            with pytest.raises(ConsumerClosedError):
                await consumer.poll(0)
        assert fake.closed

    asyncio.run(main())
