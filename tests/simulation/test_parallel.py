"""``ParallelProcessor`` groups in the simulator: CI's seed budget, determinism, and that each check bites.

The campaigns run ``python -m kgroup.testing.simulation --parallel`` in a subprocess, one per
group protocol (``check_campaign``: no violation, and rebalances and faults in every run). The
defect tests put one deliberate defect into the processor (or its pure parts) at a time and
require the simulator to report the property it breaks within a few seeds: a check that cannot
see its defect is not a safety net.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from kgroup import parallel as parallel_module
from kgroup._parallel import ledger as ledger_module
from kgroup._parallel import offsets as offsets_module
from kgroup._parallel import scheduler as scheduler_module
from kgroup.testing.simulation._parallel import (
    ParallelSimulation,
    parallel_scenario_for,
    run_parallel_seed,
)
from tests.simulation.test_simulation import check_campaign

#: CI's seed budget per group protocol
SEEDS = int(os.environ.get("KGROUP_SIM_PARALLEL_SEEDS", "200"))


@pytest.mark.timeout(900)
def test_parallel_seed_budget_classic(capsys: pytest.CaptureFixture[str]) -> None:
    check_campaign(capsys, SEEDS, "--parallel")


@pytest.mark.timeout(900)
def test_parallel_seed_budget_consumer(capsys: pytest.CaptureFixture[str]) -> None:
    check_campaign(capsys, SEEDS, "--parallel", "--group-protocol", "consumer")


def test_a_parallel_seed_replays_exactly() -> None:
    first, second = run_parallel_seed(11), run_parallel_seed(11)
    assert first.trace == second.trace
    assert (first.records, first.commits, first.rebalances) == (second.records, second.commits, second.rebalances)
    assert len(first.trace) > 50


def test_the_scenarios_cover_orderings_bounds_and_faults() -> None:
    scenarios = [parallel_scenario_for(seed) for seed in range(200)]
    assert {s.ordering for s in scenarios} == {"key", "partition", "unordered"}
    assert {f.kind for s in scenarios for f in s.base.faults} == {"crash", "restart", "close"}
    assert {s.max_concurrency for s in scenarios} >= {1, 8}
    assert any(s.revoke_timeout_ms < 1000 for s in scenarios)  # revocations that give up waiting
    assert any(s.fail_share for s in scenarios) and any(s.max_buffered_records <= 20 for s in scenarios)
    assert parallel_scenario_for(3, "consumer").base.group_protocol == "consumer"


def test_a_run_exercises_the_processor() -> None:
    """Records run on the simulated pool, several at once, and complete; commits carry metadata."""
    seeds = [seed for seed in range(40) if parallel_scenario_for(seed).max_concurrency > 1][:3]
    for seed in seeds:
        sim = ParallelSimulation(parallel_scenario_for(seed))
        result = sim.run()
        assert result.violations == []
        assert sim.checker.completed >= result.records // 2 > 0
        assert result.commits > 0
        in_flight = max(
            (inc.processor._ledger.counts["max-in-flight"] for inc in sim.incarnations.values()  # type: ignore[attr-defined]
             if getattr(inc, "processor", None) is not None), default=0
        )
        assert in_flight > 1


# ---------------------------------------------------------------------- each check catches its defect
def _commit_highest_completed(self: Any, max_chars: int = offsets_module.DEFAULT_MAX_METADATA_CHARS) -> Any:
    offset = self.commit_offset()
    if offset is None:
        return None
    metadata, self.truncated = offsets_module._encode_fitting(offset, self.completed_above(), max_chars)
    return (max(self._done) + 1 if self._done else offset), metadata


def _claim_every_taken(self: Any) -> list[int]:
    return sorted(set(self._order) - {self._order[0]}) if self._order else []


_lane = scheduler_module.Scheduler.lane


def _key_lanes_ignored(self: Any, tp: Any, key: object) -> Any:
    if self._ordering == "key":
        return (tp, ("record", next(self._sequence)))
    return _lane(self, tp, key)


_assigned = parallel_module.ParallelProcessor._assigned


def _inherited_completions_ignored(self: Any, partitions: Any) -> None:
    _assigned(self, partitions)
    for tp in partitions:
        self._offsets[tp] = offsets_module.PartitionOffsets(self._offsets[tp]._next)


def _no_wait_on_revocation(self: Any, partitions: Any) -> None:
    self._commit_now(partitions)
    self._forget(partitions)


_backpressure = ledger_module.Ledger.backpressure


def _pause_at_triple_the_bound(self: Any, assigned: Any) -> Any:
    settings = self.settings
    self.settings = attrs.evolve(settings, max_buffered_records=3 * settings.max_buffered_records)
    try:
        return _backpressure(self, assigned)
    finally:
        self.settings = settings


def _dropped_bytes_still_counted(self: Any, partitions: Any) -> None:
    self.buffered_records -= len(self.scheduler.drop(partitions))


_encode_fitting = offsets_module._encode_fitting


def _metadata_limit_ignored(base: int, completed: Any, max_chars: int) -> Any:
    return _encode_fitting(base, completed, 1 << 20)


def _dropped_records_still_counted(self: Any, partitions: Any) -> None:
    self.scheduler.drop(partitions)


DEFECTS: dict[str, tuple[object, str, Callable[..., Any], str]] = {
    "commit-highest-completed": (
        offsets_module.PartitionOffsets, "commit_point", _commit_highest_completed, "commit past an incomplete record"
    ),
    "metadata-claims-every-taken-record": (
        offsets_module.PartitionOffsets, "completed_above", _claim_every_taken,
        "commit metadata claims records not completed",
    ),
    "key-lanes-ignored": (
        scheduler_module.Scheduler, "lane", _key_lanes_ignored, "records of one lane",
    ),
    "inherited-completions-ignored": (
        parallel_module.ParallelProcessor, "_assigned", _inherited_completions_ignored, "record completed twice",
    ),
    "revocation-does-not-wait": (
        parallel_module.ParallelProcessor, "_finish_in_flight", _no_wait_on_revocation,
        "revocation returned with records running",
    ),
    "pause-at-triple-the-bound": (
        ledger_module.Ledger, "backpressure", _pause_at_triple_the_bound, "buffer over its bound",
    ),
    "metadata-limit-ignored": (
        offsets_module, "_encode_fitting", _metadata_limit_ignored, "commit metadata too long",
    ),
    "dropped-bytes-still-counted": (
        ledger_module.Ledger, "drop_waiting", _dropped_bytes_still_counted, "buffered bytes miscounted",
    ),
    "dropped-records-still-counted": (
        ledger_module.Ledger, "drop_waiting", _dropped_records_still_counted,
        "buffered records miscounted",
    ),
}


#: seeds each defect must be caught within (the first that catches it ends the test)
DEFECT_SEEDS = 60


@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_each_check_catches_its_defect(
    monkeypatch: pytest.MonkeyPatch, defect: str, group_protocol: str
) -> None:
    owner, name, replacement, rule = DEFECTS[defect]
    monkeypatch.setattr(owner, name, replacement)
    for seed in range(DEFECT_SEEDS):
        violations = run_parallel_seed(seed, group_protocol).violations
        if violations:
            assert rule in violations[0].rule, violations[:3]
            return
    pytest.fail(f"{defect} was not caught in {DEFECT_SEEDS} seeds")


def test_partitions_assigned_while_the_buffer_is_full_are_paused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 38 (consumer protocol): m2's buffer was full, so the back-pressure before its
    ``poll()`` had paused every partition it owned; inside that ``poll()`` the rebalance callback
    assigned t1-1, unpaused, and the same ``poll()`` handed out its records: 97 buffered where 69
    is the bound. The processor now applies the back-pressure in ``on_partitions_assigned``;
    without it the seed fails again."""
    assert run_parallel_seed(38, "consumer").violations == []
    assigned = parallel_module.ParallelProcessor._assigned

    def assigned_unpaused(self: Any, partitions: Any) -> None:
        monkeypatch.setattr(self, "_backpressure", lambda: None)
        try:
            assigned(self, partitions)
        finally:
            monkeypatch.delattr(self, "_backpressure")

    monkeypatch.setattr(parallel_module.ParallelProcessor, "_assigned", assigned_unpaused)
    violations = run_parallel_seed(38, "consumer").violations
    assert [v.rule for v in violations[:1]] == ["buffer over its bound"], violations[:3]
