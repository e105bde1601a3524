"""The failover tests' reading of committed offsets that go back (``CommittedMonitor.backwards``).

A fall after the fault that a later sample undoes is Kafka's stale read right after the offsets
partition moves; any other fall (before the fault, or never undone) is a defect the tests fail on.
"""

from __future__ import annotations

from types import SimpleNamespace

from tests.integration.test_failover import STALE_READ_S, CommittedMonitor


def falls(samples: list[tuple[float, dict[int, int]]], fault_at: float | None) -> tuple[list[str], list[str]]:
    return CommittedMonitor.backwards(SimpleNamespace(samples=samples), fault_at)  # type: ignore[arg-type]


def test_a_fall_after_the_fault_that_a_later_sample_undoes_is_a_stale_read() -> None:
    samples = [(1.0, {0: 193}), (2.0, {0: 199}), (12.0, {0: 193}), (13.0, {0: 205})]
    assert falls(samples, fault_at=5.0) == ([], ["partition 0: 193 at 12.000 after 199 at 2.000"])


def test_a_fall_before_the_fault_or_never_undone_is_a_defect() -> None:
    assert falls([(1.0, {0: 199}), (2.0, {0: 193}), (3.0, {0: 300})], fault_at=5.0)[0] == [
        "partition 0: 193 at 2.000 after 199 at 1.000"]
    never = [(1.0, {0: 199}), (12.0, {0: 193}), (13.0, {0: 198}), (12.0 + STALE_READ_S + 1, {0: 300})]
    bad, stale = falls(never, fault_at=5.0)
    assert bad == ["partition 0: 193 at 12.000 after 199 at 1.000"]  # not undone within STALE_READ_S
    assert stale == ["partition 0: 198 at 13.000 after 199 at 1.000"]  # undone by the sample 30 s later
    assert falls([(1.0, {0: 199}), (12.0, {0: 193}), (13.0, {0: 300})], fault_at=None)[1] == []
