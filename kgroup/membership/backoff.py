"""Exponential backoff with jitter: pure, the randomness injected (KIP-580).

``next_backoff_s(attempts, initial_ms, max_ms, rng)`` is ``initial * 2**(attempts-1)`` capped
at ``max``, times a jitter factor in [0.8, 1.2] (Java ``ExponentialBackoff`` with
``retry.backoff.ms`` and ``retry.backoff.max.ms``). ``exponential_backoff(initial_ms, max_ms, rng)``
is the same as a function of the attempt count, for ``kgroup._retry.retry_until``.
"""

from __future__ import annotations

import random
from collections.abc import Callable

__all__ = ["exponential_backoff", "next_backoff_s"]


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
