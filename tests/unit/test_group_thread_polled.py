"""``GroupThread.post`` coalesces ``Polled``: one wake of the group thread per window, not per ``poll()``.

A ``Polled`` posted within ``POLLED_COALESCE_S`` of the last one, with no other event posted
between them, is dropped; any other event, or the window passing, lets the next one through.
"""

from __future__ import annotations

import queue

from kgroup._driver.group_thread import POLLED_COALESCE_S, GroupThread
from kgroup._driver.mailbox import Mailbox
from kgroup.config import ConsumerConfig
from kgroup.membership import events as ev
from kgroup.testing import FakeClock


def queued(thread: GroupThread) -> list[str]:
    out: list[str] = []
    while True:
        try:
            out.append(type(thread._inbox.get_nowait()).__name__)
        except queue.Empty:
            return out


def test_polled_is_coalesced_until_another_event_or_the_window_passes() -> None:
    clock = FakeClock()
    config = ConsumerConfig(bootstrap_servers="k:9092", group_id="g")
    thread = GroupThread(config, None, Mailbox(), clock)  # type: ignore[arg-type]
    for _ in range(100):  # a poll() loop handing out records: one Polled
        thread.post(ev.Polled())
    assert queued(thread) == ["Polled"]
    thread.post(ev.RequestRejoin("user"))  # another event: the next Polled goes through at once
    thread.post(ev.Polled())
    thread.post(ev.Polled())
    assert queued(thread) == ["RequestRejoin", "Polled"]
    clock.advance(POLLED_COALESCE_S * 0.9)
    thread.post(ev.Polled())
    assert queued(thread) == []
    clock.advance(POLLED_COALESCE_S * 0.2)  # the window after the last Polled posted passed
    thread.post(ev.Polled())
    assert queued(thread) == ["Polled"]
    assert 0 < POLLED_COALESCE_S <= 0.1, "the watchdog (max_poll_interval_ms) hears of a poll at most this late"
