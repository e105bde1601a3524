"""Deadlines and retries on the injected clock: the one retry loop kgroup has (tenacity underneath).

The consumer's offset calls (``kgroup._driver.commits``), its offset look-ups, the admin client
and the command line all retry through :func:`retry_until` and bound their work with a
:class:`Deadline`, as Java's clients do with a ``Timer`` (``ConsumerCoordinator.commitOffsetsSync``,
``KafkaAdminClient``'s per-call deadline).

Rules:

1. Time comes from a ``Clock`` (``kgroup._clock``): a deadline is a point on its caller's clock,
   and every wait between attempts goes through the caller's ``sleep`` (the clock's by default),
   so a ``FakeClock`` or the simulator's virtual clock runs retries without real waiting.
2. The attempt runs at least once. After its n-th retriable failure the wait is
   ``backoff_s(n)``; when the deadline would pass during that wait, the last retriable failure
   is raised at once: no attempt starts that could not finish in time.
3. An exception that is not retriable ends the retrying unchanged, as does one raised by
   ``sleep`` (``wakeup()`` interrupting a wait).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import attrs

from kgroup._clock import Clock

if TYPE_CHECKING:
    import tenacity

__all__ = ["Deadline", "retry_until"]

T = TypeVar("T")


@attrs.frozen
class Deadline:
    """A point in time on ``clock`` (seconds of ``clock.monotonic()``)."""

    clock: Clock
    at: float

    @classmethod
    def after_ms(cls, clock: Clock, timeout_ms: float) -> Deadline:
        """The deadline ``timeout_ms`` milliseconds from now on ``clock``."""
        return cls(clock, clock.monotonic() + timeout_ms / 1000)

    def remaining_s(self) -> float:
        """Seconds left (0.0 once passed)."""
        return max(0.0, self.at - self.clock.monotonic())

    def remaining_ms(self) -> int:
        """Whole milliseconds left (0 once passed)."""
        return int(self.remaining_s() * 1000)

    def expired(self) -> bool:
        """True once the clock reached the deadline."""
        return self.clock.monotonic() >= self.at


def retry_until(
    attempt: Callable[[], T],
    deadline: Deadline,
    *,
    retry_on: type[BaseException] | tuple[type[BaseException], ...],
    backoff_s: Callable[[int], float],
    sleep: Callable[[float], None] | None = None,
) -> T:
    """Call ``attempt()`` until it returns, raises a non-retriable error, or time runs out.

    Args:
        attempt: the work; raising a ``retry_on`` exception asks for another try.
        deadline: when to stop trying.
        retry_on: the retriable exception type(s).
        backoff_s: seconds to wait after the n-th failed attempt (n counts from 1), e.g.
            ``kgroup.membership.timers.next_backoff_s`` (Java's ``ExponentialBackoff``).
        sleep: how to wait (default ``deadline.clock.sleep``); it may raise to stop early.

    Returns:
        What ``attempt()`` returned.

    Raises:
        The last retriable exception when the deadline would pass before the next attempt;
        any other exception of ``attempt`` or ``sleep`` at once.

    """
    import tenacity  # on first use: ~10 ms that ``from kgroup import Consumer`` does not need

    waits: dict[int, float] = {}

    def wait_s(state: tenacity.RetryCallState) -> float:
        # stop and wait both ask, in an order tenacity leaves open: draw each wait once
        n = state.attempt_number
        if n not in waits:
            waits[n] = max(0.0, backoff_s(n))
        return waits[n]

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(retry_on),
        stop=lambda state: wait_s(state) >= deadline.remaining_s(),
        wait=wait_s,
        sleep=sleep if sleep is not None else deadline.clock.sleep,
        reraise=True,
    )
    return retrying(attempt)
