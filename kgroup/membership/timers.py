"""Timers and backoff, shared by every membership machine: pure values, the clock and the randomness injected.

``next_backoff_s(attempts, initial_ms, max_ms, rng)`` is ``initial * 2**(attempts-1)`` capped
at ``max``, times a jitter factor in [0.8, 1.2] (Java ``ExponentialBackoff`` with
``retry.backoff.ms`` and ``retry.backoff.max.ms``, KIP-580). ``exponential_backoff(initial_ms,
max_ms, rng)`` is the same as a function of the attempt count, for ``kgroup._retry.retry_until``.

The timers are frozen values a machine replaces on change: ``RetryTimer`` (a retry with
exponential backoff: FindCoordinator, JoinGroup, the metadata watch), ``HeartbeatTimer`` (the
classic member's heartbeat and session marks) and ``PollTimer`` (the max.poll.interval watchdog,
KIP-62). Times are seconds on the driver's monotonic clock.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import attrs

__all__ = ["HeartbeatTimer", "PollTimer", "RetryTimer", "exponential_backoff", "next_backoff_s"]


def next_backoff_s(attempts: int, initial_ms: int, max_ms: int, rng: random.Random) -> float:
    """Seconds to wait before retry number ``attempts`` (0 means no wait).

    Args:
        attempts: how many attempts failed so far (0 -> 0.0 s).
        initial_ms: the first backoff in ms (``retry_backoff_ms``).
        max_ms: the cap in ms (``retry_backoff_max_ms``).
        rng: source of jitter.

    """
    if attempts <= 0:
        return 0.0
    base = min(max_ms, initial_ms * 2 ** min(attempts - 1, 30))
    return float(base * rng.uniform(0.8, 1.2)) / 1000.0


def exponential_backoff(initial_ms: int, max_ms: int, rng: random.Random) -> Callable[[int], float]:
    """``attempts -> next_backoff_s(attempts, initial_ms, max_ms, rng)``."""
    return lambda attempts: next_backoff_s(attempts, initial_ms, max_ms, rng)


@attrs.frozen
class RetryTimer:
    """A retry with exponential backoff: failed attempts in a row, and when the next may go."""

    at: float = 0.0
    attempts: int = 0

    def failed(self, now: float, backoff: Callable[[int], float]) -> RetryTimer:
        """One more attempt failed at ``now``: the next waits ``backoff(attempts)``."""
        attempts = self.attempts + 1
        return RetryTimer(now + backoff(attempts), attempts)

    def succeeded(self) -> RetryTimer:
        """The attempt succeeded: the count starts over."""
        return RetryTimer(self.at, 0)

    def allow_from(self, at: float) -> RetryTimer:
        """The next attempt may go at ``at`` (the count is kept)."""
        return RetryTimer(at, self.attempts)


@attrs.frozen
class HeartbeatTimer:
    """When the next Heartbeat is due, and the two session marks."""

    next_at: float = 0.0
    #: the latest moment the coordinator is known to have renewed the session: the send time
    #: of the last successful Heartbeat, or of the JoinGroup that completed a rebalance. The
    #: coordinator cannot have expired the member before this plus ``session_timeout_ms``.
    alive_at: float = 0.0
    #: Java's session timer (``Heartbeat.sessionTimer``): the last successful response, join
    #: or coordinator discovery; past it plus ``session_timeout_ms`` the coordinator is
    #: rediscovered
    last_ok: float = 0.0
    #: the latest moment the group is known to have had no rebalance under way: the send time
    #: of the last Heartbeat answered without error, or of the JoinGroup that completed a
    #: rebalance. A rebalance the member never heard of began after it, so its rebalance
    #: timeout cannot remove the member before this plus ``rebalance_timeout_ms``.
    calm_at: float = 0.0

    def confirmed(self, sent_at: float, now: float, *, calm: bool) -> HeartbeatTimer:
        """A request sent at ``sent_at`` succeeded at ``now`` (the marks never go back)."""
        return HeartbeatTimer(
            self.next_at, max(self.alive_at, sent_at), now, max(self.calm_at, sent_at) if calm else self.calm_at
        )

    def reset(self, now: float) -> HeartbeatTimer:
        """Restart Java's session timer at ``now`` (the other marks stay)."""
        return HeartbeatTimer(self.next_at, self.alive_at, now, self.calm_at)

    def due_at(self, at: float) -> HeartbeatTimer:
        """The next Heartbeat goes at ``at``."""
        return HeartbeatTimer(at, self.alive_at, self.last_ok, self.calm_at)


@attrs.frozen
class PollTimer:
    """The max.poll.interval watchdog (KIP-62): when the application last called ``poll()``."""

    last: float = 0.0
    #: the clock runs from the machine's first call
    started: bool = False
    #: the watchdog fired: the member does not rejoin before the application polls again
    expired: bool = False

    def polled(self, now: float) -> PollTimer:
        """The application polled at ``now``."""
        return PollTimer(now, True, False)

    def expire(self) -> PollTimer:
        """The watchdog fired."""
        return PollTimer(self.last, self.started, True)
