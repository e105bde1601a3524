"""Share groups (KIP-932) in the simulator: CI's seed budget, replay, and that each check bites.

The campaign runs ``python -m kgroup.testing.simulation --share`` in a subprocess (no violation,
faults and group epoch bumps in every run). The defect tests put one deliberate defect into the
client or the share-group model at a time and require the simulator to report the property it
breaks within a few seeds: a check that cannot see its defect is not a safety net.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from kgroup import share_consumer as share_consumer_module
from kgroup.testing.coordinator import _share_partition as partition_module
from kgroup.testing.coordinator._share_partition import InFlightRecord, RecordState
from kgroup.testing.simulation._share import run_share_seed, share_scenario_for
from kgroup.types import AcknowledgeType

#: CI's seed budget (about 40 s on two loaded cores)
SEEDS = int(os.environ.get("KGROUP_SIM_SHARE_SEEDS", "150"))
SUMMARY = re.compile(r"simulation: (\d+) seeds, (\d+) simulated rebalances, (\d+) faults injected, (\d+) violations")


@pytest.mark.timeout(600)
def test_share_seed_budget_finds_no_violation(capsys: pytest.CaptureFixture[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kgroup.testing.simulation", "--share", "--seeds", str(SEEDS), "--workers", "1"],
        capture_output=True, text=True, timeout=600, check=False,
    )
    output = proc.stdout + proc.stderr
    summary = [line for line in output.splitlines() if line.startswith("simulation:")]
    with capsys.disabled():
        print("\n" + (summary[-1] if summary else output[-2000:]))
    assert proc.returncode == 0, output[-20000:]
    match = SUMMARY.search(summary[-1])
    assert match is not None, summary
    ran, epochs, faults, violations = map(int, match.groups())
    assert (ran, violations) == (SEEDS, 0)
    assert epochs >= 4 * SEEDS and faults >= 3 * SEEDS  # every run joins, moves partitions and breaks things


def test_a_share_seed_replays_exactly() -> None:
    first, second = run_share_seed(5), run_share_seed(5)
    assert first.trace == second.trace
    assert (first.records, first.commits, first.rebalances) == (second.records, second.commits, second.rebalances)
    assert first.records > 20 and not first.violations


def test_the_scenarios_cover_modes_faults_and_lock_expiries() -> None:
    scenarios = [share_scenario_for(seed) for seed in range(100)]
    assert {m.mode for s in scenarios for m in s.members} == {"implicit", "explicit"}
    assert {f.kind for s in scenarios for f in s.faults} == {"crash", "close", "join", "lose", "slow"}
    assert any(s.long_share for s in scenarios)  # handlers that hold records past their lock
    assert {s.delivery_count_limit for s in scenarios} >= {2, 5}
    assert any(s.kinds[1] and s.kinds[2] for s in scenarios)  # releases and rejects


def _rules(seeds: range) -> Iterator[set[str]]:
    for seed in seeds:
        yield {v.rule for v in run_share_seed(seed).violations}


def _caught(rule: str, seeds: range = range(12)) -> bool:
    return any(rule in rules for rules in _rules(seeds))


def test_a_client_that_accepts_what_it_released_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    acknowledge = share_consumer_module.ShareConsumer.acknowledge

    def wrong(self: Any, record: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("type", args[0] if args else None) is AcknowledgeType.RELEASE:
            args, kwargs = (), {"type": AcknowledgeType.ACCEPT}
        acknowledge(self, record, *args, **kwargs)

    monkeypatch.setattr(share_consumer_module.ShareConsumer, "acknowledge", wrong)
    assert _caught("acknowledgement the application did not make")


def test_a_model_that_lets_two_members_acquire_one_record_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    acquire = partition_module.SharePartition.acquire

    def steal(self: Any, member_id: str, *args: Any, **kwargs: Any) -> Any:
        for offset, rec in list(self._records.items()):
            if rec.state is RecordState.ACQUIRED and rec.member_id != member_id:
                self._records[offset] = InFlightRecord(RecordState.AVAILABLE, rec.delivery_count)
        return acquire(self, member_id, *args, **kwargs)

    monkeypatch.setattr(partition_module.SharePartition, "acquire", steal)
    assert _caught("record held by two members")


def test_a_model_that_delivers_accepted_records_again_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    acknowledge = partition_module.SharePartition.acknowledge

    def forget(self: Any, member_id: str, batches: Any, now_ms: int, *, renew: bool) -> int:
        code = acknowledge(self, member_id, batches, now_ms, renew=renew)
        for offset, rec in list(self._records.items()):
            if rec.state is RecordState.ACKNOWLEDGED:
                self._records[offset] = InFlightRecord(RecordState.AVAILABLE, rec.delivery_count)
        return code

    monkeypatch.setattr(partition_module.SharePartition, "acknowledge", forget)
    assert _caught("accepted record delivered again")


def test_a_model_that_ignores_the_delivery_count_limit_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    released = partition_module.SharePartition._released_state

    def never_archive(self: Any, offset: int, rec: Any) -> RecordState:
        state = released(self, offset, rec)
        return RecordState.AVAILABLE if state is RecordState.ARCHIVED else state

    monkeypatch.setattr(partition_module.SharePartition, "_released_state", never_archive)
    assert _caught("delivery count over the limit", range(30))


def test_a_model_that_loses_records_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    acquire = partition_module.SharePartition.acquire

    def drop(self: Any, member_id: str, *args: Any, **kwargs: Any) -> Any:
        ranges = acquire(self, member_id, *args, **kwargs)
        for r in ranges[1:]:  # every range after the first is archived behind the member's back
            for offset in range(r.first_offset, r.last_offset + 1):
                self._records[offset] = InFlightRecord(RecordState.ARCHIVED, 1)
        return ranges[:1]

    monkeypatch.setattr(partition_module.SharePartition, "acquire", drop)
    assert _caught("record lost", range(20)) or _caught("records not done at the end", range(20))
