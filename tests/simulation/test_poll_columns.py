"""``Consumer.poll_columns()`` under the simulator: the same invariants as ``poll()``.

The members of these campaigns take their records with ``poll_columns()`` (the simulator turns
the columns back into records for its checker), so the columnar hand-out is held to every rule
``poll()`` is: no record handed out twice unexplained, none lost, commits only of what was handed
out, nothing handed out after a revocation started. The mutation test takes away the acquiesce
step of the columnar path and requires the simulator to see it.
"""

from __future__ import annotations

import os

import pytest

from kgroup._driver.partitions import PartitionState
from kgroup.testing.simulation import run_seed, scenario_for
from tests.simulation.test_simulation import check_campaign

#: seeds per protocol in CI
CI_COLUMNS_SEEDS = int(os.environ.get("KGROUP_SIM_COLUMNS_SEEDS", "150"))


@pytest.mark.timeout(900)
@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
def test_poll_columns_keeps_every_invariant(capsys: pytest.CaptureFixture[str], group_protocol: str) -> None:
    check_campaign(capsys, CI_COLUMNS_SEEDS, "--poll-columns", "--group-protocol", group_protocol)


def test_the_option_changes_only_the_hand_out() -> None:
    plain, columns = scenario_for(12), scenario_for(12, poll_columns=True)
    assert (plain.poll_columns, columns.poll_columns) == (False, True)
    assert plain.members == columns.members and plain.faults == columns.faults


def test_the_simulator_sees_columns_handed_out_after_their_revocation_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seed 12: without the columnar acquiesce (columns of a partition whose revocation started
    are dropped and its position goes back), records fetched before the revocation are handed
    out and processed again by the partition's next owner."""
    assert run_seed(12, poll_columns=True, version=1).violations == []
    monkeypatch.setattr(PartitionState, "drop_columns", lambda self, fetched, taken: fetched)
    broken = run_seed(12, poll_columns=True, version=1)
    assert "unexplained duplicate" in {v.rule for v in broken.violations}, broken.violations
