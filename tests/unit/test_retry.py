"""``kgroup._retry``: deadlines and the one retry loop, on a FakeClock (no real waiting)."""

from __future__ import annotations

import pytest

from kgroup._retry import Deadline, retry_until
from kgroup.testing import FakeClock


class Flaky(Exception):
    pass


def failing(times: int, clock: FakeClock, calls: list[float]):
    def attempt() -> str:
        calls.append(clock.monotonic())
        if len(calls) <= times:
            raise Flaky(f"failure {len(calls)}")
        return "done"

    return attempt


def test_deadline_counts_down_on_its_clock():
    clock = FakeClock(10.0)
    deadline = Deadline.after_ms(clock, 1500)
    assert (deadline.remaining_s(), deadline.remaining_ms(), deadline.expired()) == (1.5, 1500, False)
    clock.advance(2.0)
    assert (deadline.remaining_s(), deadline.remaining_ms(), deadline.expired()) == (0.0, 0, True)


def test_retries_with_the_backoff_on_the_injected_clock():
    clock = FakeClock()
    calls: list[float] = []
    result = retry_until(
        failing(3, clock, calls), Deadline.after_ms(clock, 10_000), retry_on=Flaky, backoff_s=lambda n: n * 0.5
    )
    assert result == "done"
    assert calls == [0.0, 0.5, 1.5, 3.0]  # waits 0.5, 1.0, 1.5: slept on the fake clock


def test_gives_up_when_the_next_wait_would_pass_the_deadline():
    clock = FakeClock()
    calls: list[float] = []
    with pytest.raises(Flaky, match="failure 3"):
        retry_until(failing(99, clock, calls), Deadline.after_ms(clock, 2_500), retry_on=Flaky, backoff_s=lambda n: 1.0)
    assert calls == [0.0, 1.0, 2.0]  # a third wait would end at 3.0 > 2.5: no fourth attempt
    assert clock.monotonic() == 2.0


def test_runs_once_even_when_the_deadline_has_passed():
    clock = FakeClock()
    deadline = Deadline.after_ms(clock, 0)
    calls: list[float] = []
    with pytest.raises(Flaky):
        retry_until(failing(99, clock, calls), deadline, retry_on=Flaky, backoff_s=lambda n: 0.1)
    assert calls == [0.0]


def test_other_errors_and_interrupted_sleeps_end_at_once():
    clock = FakeClock()

    def broken() -> None:
        raise KeyError("not retriable")

    with pytest.raises(KeyError):
        retry_until(broken, Deadline.after_ms(clock, 10_000), retry_on=Flaky, backoff_s=lambda n: 1.0)

    def interrupted(seconds: float) -> None:
        raise InterruptedError("wakeup")

    calls: list[float] = []
    with pytest.raises(InterruptedError):
        retry_until(failing(99, clock, calls), Deadline.after_ms(clock, 10_000), retry_on=Flaky,
                    backoff_s=lambda n: 1.0, sleep=interrupted)
    assert len(calls) == 1


def test_each_wait_is_drawn_once():
    clock = FakeClock()
    drawn: list[int] = []

    def backoff(n: int) -> float:
        drawn.append(n)
        return 0.25

    retry_until(failing(2, clock, []), Deadline.after_ms(clock, 10_000), retry_on=Flaky, backoff_s=backoff)
    assert drawn == [1, 2]
