"""Time, injected.

Rule: nothing in kgroup calls ``time.monotonic()`` or ``time.sleep()`` except ``MonotonicClock``
here, and nothing reads the wall clock except ``wall_time_ns`` (timestamps for tracing spans).
The membership machine never sees a clock at all: it is handed ``now`` (seconds, float) by its
driver. Tests use ``kgroup.testing.FakeClock``.
"""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "MonotonicClock", "wall_time_ns"]


class Clock(Protocol):
    """A source of monotonic time in seconds (float) and a way to sleep."""

    def monotonic(self) -> float:
        """Seconds on a monotonic clock."""
        ...

    def sleep(self, seconds: float) -> None:
        """Block the calling thread for ``seconds``."""
        ...


class MonotonicClock:
    """The real clock: ``time.monotonic`` and ``time.sleep``."""

    def monotonic(self) -> float:
        """Seconds on ``time.monotonic``."""
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        """``time.sleep(seconds)``."""
        time.sleep(max(0.0, seconds))


def wall_time_ns() -> int:
    """Nanoseconds since the epoch (``time.time_ns``): a tracing span's start time, never a deadline."""
    return time.time_ns()
