"""examples/custom_assignor.py: the assignor API in use, on the real broker and in pure unit checks."""

from __future__ import annotations

import importlib.util
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import kgroup
from kgroup.assignors.validate import validate_plan
from tests.integration.harness import BOTH

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "custom_assignor.py"


def load_example():
    spec = importlib.util.spec_from_file_location("custom_assignor_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def member(member_id: str, capacity: int | None, topics=("t",), instance: str | None = None):
    data = None if capacity is None else struct.pack(">i", capacity)
    return kgroup.MemberSubscription(member_id=member_id, group_instance_id=instance, topics=topics, user_data=data)


@pytest.mark.parametrize(("capacities", "expected"), [((1, 2), [4, 8]), ((1, 1, 1), [4, 4, 4]), ((3, 1, 1), [7, 3, 2])])
def test_capacity_assignor_apportions_and_its_plans_are_valid(capacities, expected) -> None:
    assignor = load_example().CapacityAssignor(1)
    members = {f"m{i}": member(f"m{i}", c) for i, c in enumerate(capacities)}
    plan = assignor.assign({"t": 12}, members)
    validate_plan(plan, members, {"t": 12}, kgroup.RebalanceProtocol.EAGER)
    assert [len(plan[f"m{i}"]) for i in range(len(capacities))] == expected


def test_a_member_without_capacity_is_a_typed_error_naming_it() -> None:
    assignor = load_example().CapacityAssignor(1)
    with pytest.raises(kgroup.AssignmentError, match="'m1'"):
        assignor.assign({"t": 4}, {"m0": member("m0", 1), "m1": member("m1", None)})


def test_bad_capacity_is_rejected_at_construction() -> None:
    with pytest.raises(ValueError, match="capacity"):
        load_example().CapacityAssignor(0)


@BOTH
def test_example_runs_against_the_broker(kafka_bootstrap: str) -> None:
    """On the bare broker: Tansu's coordinator is enough for this example; Apache Kafka's too."""
    env = dict(os.environ, KGROUP_BOOTSTRAP_SERVERS=kafka_bootstrap, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS" in done.stdout
    assert "light (capacity 1): 4 partitions" in done.stdout
