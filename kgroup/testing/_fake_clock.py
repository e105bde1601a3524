"""A fake ``Clock`` for tests: time moves only when a test (or a sleeper) moves it.

Rule 1: ``monotonic()`` never goes backwards; ``advance`` refuses a negative step.
Rule 2: ``sleep(seconds)`` returns at once after advancing the clock by ``seconds``, so a
        component that sleeps through its injected clock runs at full speed in tests.
Rule 3: every method is thread-safe (one lock, never held while calling out), so a driver
        thread and a test thread may share one clock.
"""

from __future__ import annotations

import threading
import typing

__all__ = ["FakeClock"]


@typing.final
class FakeClock:
    """A manually driven implementation of kgroup's ``Clock`` protocol.

    Args:
        start: the initial reading of ``monotonic()`` in seconds.

    Example::

        clock = FakeClock()
        clock.advance(3.0)
        assert clock.monotonic() == 3.0

    """

    def __init__(self, start: float = 0.0) -> None:
        self._lock = threading.Lock()
        self._now = float(start)

    def monotonic(self) -> float:
        """Return the current fake time in seconds. Callable from any thread."""
        with self._lock:
            return self._now

    def sleep(self, seconds: float) -> None:
        """Advance the clock by ``seconds`` (negative counts as 0) and return at once.

        Callable from any thread.
        """
        with self._lock:
            self._now += max(0.0, float(seconds))

    def advance(self, seconds: float) -> float:
        """Move the clock forward by ``seconds`` and return the new time.

        Callable from any thread.

        Raises:
            ValueError: ``seconds`` is negative (a monotonic clock cannot go back).

        """
        if seconds < 0:
            raise ValueError(f"a monotonic clock cannot go back: advance({seconds!r})")
        with self._lock:
            self._now += float(seconds)
            return self._now

    def __repr__(self) -> str:
        return f"FakeClock(now={self.monotonic()!r})"
