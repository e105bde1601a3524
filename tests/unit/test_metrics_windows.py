"""The metric windows are Java's sampled statistics: fixed memory, Java's Avg, Max and Rate.

Java's ``SampledStat`` with the consumer's defaults (``metrics.num.samples`` = 2,
``metrics.sample.window.ms`` = 30000): an event lands in the current sample or starts the next
one, a sample whose last event is 60 s old is dropped when read, and ``Rate`` divides by the
time since the oldest sample began, at least one full window. Values here were worked out by
hand from Java's ``SampledStat``, ``Avg``, ``Max`` and ``Rate.windowSize``.
"""

from __future__ import annotations

import math
import sys

import pytest

from kgroup.metrics import _Windowed


def test_memory_stays_fixed_however_many_events() -> None:
    stat = _Windowed()
    for i in range(100_000):
        stat.record(i * 0.01, 1.0)  # 1,000 s of 100 events a second
    assert len(stat._samples) <= 3  # samples + 1, as Java keeps
    assert sys.getsizeof(stat._samples) < 200
    assert stat.count == 100_000 and stat.total == 100_000.0


def test_max_and_avg_cover_the_samples_still_in_the_window() -> None:
    stat = _Windowed()
    stat.record(0.0, 500.0)  # sample 1 starts at 0
    stat.record(10.0, 100.0)
    stat.record(31.0, 200.0)  # sample 1 is 30 s old: sample 2 starts
    assert stat.max(40.0) == 500.0
    assert stat.avg(40.0) == pytest.approx((500 + 100 + 200) / 3)
    # at 70 s sample 1's last event (10 s) is 60 s old: dropped; sample 2's (31 s) is not
    assert stat.max(70.0) == 200.0
    assert stat.avg(70.0) == 200.0
    assert math.isnan(stat.max(91.0)) and math.isnan(stat.avg(91.0))  # everything is older than 60 s
    assert stat.count == 3 and stat.total == 800.0  # the cumulative ones keep everything


def test_the_maximum_is_the_windows_not_the_latest() -> None:
    stat = _Windowed()
    for t, value in ((0.0, 7.0), (5.0, 900.0), (20.0, 3.0), (45.0, 2.0)):
        stat.record(t, value)
    assert stat.max(50.0) == 900.0  # a spike 45 s ago still shows, as in Java's records-lag-max


def test_rate_divides_by_at_least_one_full_window() -> None:
    stat = _Windowed()
    stat.record(0.0, 1.0)
    stat.record(1.0, 1.0)
    # 2 s since the oldest sample began: less than one full window, so one is added (Rate.windowSize)
    assert stat.rate(2.0) == pytest.approx(2 / 32.0)
    for t in range(2, 50):
        stat.record(float(t), 1.0)
    # samples began at 0 s and 30 s: 50 s elapsed, one full window, no padding
    assert stat.rate(50.0) == pytest.approx(50 / 50.0)
    assert stat.rate(50.0, 3600.0) == pytest.approx(3600.0)


def test_rate_of_values_sums_them() -> None:
    stat = _Windowed()
    stat.record(0.0, 100.0)
    stat.record(40.0, 300.0)
    assert stat.rate(45.0, of_values=True) == pytest.approx(400 / 45.0)
