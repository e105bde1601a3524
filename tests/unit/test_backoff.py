"""next_backoff_s: exponential, capped, jittered in [0.8, 1.2], deterministic per seed (KIP-580)."""

from __future__ import annotations

import random

import pytest

from kgroup.membership.timers import next_backoff_s


class MidJitter(random.Random):
    """Jitter factor fixed at the middle of the range (1.0), to read the base value."""

    def uniform(self, a: float, b: float) -> float:
        return (a + b) / 2


@pytest.mark.parametrize(
    ("attempts", "expected_s"),
    [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.8), (5, 1.0), (6, 1.0), (50, 1.0), (10_000, 1.0)],
)
def test_backoff_grows_exponentially_up_to_the_cap(attempts, expected_s):
    assert next_backoff_s(attempts, 100, 1000, MidJitter()) == pytest.approx(expected_s)


@pytest.mark.parametrize("attempts", [0, -1])
def test_backoff_no_failed_attempt_waits_nothing(attempts):
    assert next_backoff_s(attempts, 100, 1000, random.Random(0)) == 0.0


def test_backoff_jitter_within_20_percent_and_actually_spread():
    rng = random.Random(1234)
    for attempts, base in ((1, 0.1), (3, 0.4), (20, 1.0)):
        factors = [next_backoff_s(attempts, 100, 1000, rng) / base for _ in range(500)]
        assert min(factors) >= 0.8
        assert max(factors) <= 1.2
        assert min(factors) < 0.85
        assert max(factors) > 1.15


def test_backoff_deterministic_with_a_seeded_rng():
    def series(seed: int) -> list[float]:
        rng = random.Random(seed)
        return [next_backoff_s(n, 100, 1000, rng) for n in range(1, 10)]

    assert series(7) == series(7)
    assert series(7) != series(8)


def test_backoff_each_attempt_is_longer_until_the_cap_despite_jitter():
    # with +-20 % jitter a doubling still strictly grows: 1.2 * b < 0.8 * 2b
    rng = random.Random(3)
    values = [next_backoff_s(n, 100, 100_000, rng) for n in range(1, 10)]
    assert values == sorted(values)
    assert len(set(values)) == len(values)
