"""Smoke test of benchmarks/assignors.py on tiny sizes: structure and plan statistics, no timing.

Nothing here asserts a duration: the benchmark's numbers live in benchmarks/results.md.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_assignors", ROOT / "benchmarks" / "assignors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_assignors"] = module
    spec.loader.exec_module(module)
    return module


def test_optimum_moves_matches_seed000_optimum_tables(bench):
    # seed 000: 8 partitions, 1 -> 2 -> 3 -> 4 consumers: 4, 2, 2 moves at best
    assert bench.optimum_moves([8, 0], 8) == 4
    assert bench.optimum_moves([4, 4, 0], 8) == 2
    assert bench.optimum_moves([3, 3, 2, 0], 8) == 2
    # a leave: the leaver's partitions must move, nothing else need
    assert bench.optimum_moves([10] * 9, 100) == 10  # 10 members of 10, one left
    assert bench.optimum_moves([10] * 10 + [0], 100) == 9  # one joined: 100 // 11 = 9


def test_moves_revoked_balance_helpers(bench):
    tp = bench.TopicPartition
    before = {"a": frozenset({tp("t", 0), tp("t", 1)}), "b": frozenset({tp("t", 2)})}
    after = {"a": frozenset({tp("t", 0)}), "b": frozenset({tp("t", 2)}), "c": frozenset({tp("t", 1)})}
    assert bench.moves(before, after) == 1
    assert bench.revoked(before, after) == 1
    assert bench.balance(after) == 0
    assert bench.balance(before) == 1


def test_quick_run_on_tiny_sizes_has_every_row_and_renders(bench):
    result = bench.run([(3, 12)], [(3, 12)], budget=0.01, max_runs=1, timeout=20)
    rows = result["rows"]
    # 4 assignors x 3 scenarios x (identical, heterogeneous)
    assert len(rows) == 4 * 3 * 2
    for row in rows:
        assert set(row) >= {"assignor", "size", "subs", "scenario", "optimum", "kgroup", "kafka-python"}
        ours = row["kgroup"]
        assert ours["error"] is None and ours["timed_out"] is None
        assert ours["time_s"] is not None and ours["time_s"] >= 0
        assert ours["complete"] is True
        if row["assignor"] == "cooperative-sticky":
            assert "kafka-python sticky" in row
            assert ours["revoked_round2"] == 0  # two rounds finish the move
        if (
            row["subs"] == "identical"
            and row["assignor"] in ("sticky", "cooperative-sticky")
            and row["scenario"] != "fresh"
        ):
            assert ours["moves"] == row["optimum"]
            assert ours["balance"] <= 1
    # kafka-python's round-robin skip bug shows up as an error, not a crash
    hetero_rr = [r for r in rows if r["assignor"] == "roundrobin" and r["subs"] == "heterogeneous"]
    assert all(r["kafka-python"]["error"] for r in hetero_rr)
    seed = result["seed000"]
    assert {r["step"] for r in seed} >= {"1→2", "2→3", "3→4"}
    text = bench.render_markdown(result)
    assert "| cooperative-sticky | 3x12 | identical | join |" in text
    targets = bench.targets(result)
    assert any(line.startswith("the chapter's worked examples") and line.endswith("met") for line in targets)
