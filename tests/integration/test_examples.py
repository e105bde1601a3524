"""The examples run end to end as a user would run them: a subprocess, checked by its last line
and exit code. They start their own broker (``kgroup.testing.start_broker()``), or use
``KGROUP_BOOTSTRAP_SERVERS`` when it is set (inherited from this environment)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_example(name: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s, check=False,
    )


def test_static_membership_example_passes():
    """examples/static_membership.py: a rolling restart of 3 static members, no rebalance."""
    result = run_example("static_membership.py", timeout_s=120)
    lines = result.stdout.strip().splitlines()
    report = f"stdout:\n{result.stdout[-4000:]}\nstderr:\n{result.stderr[-2000:]}"
    assert result.returncode == 0, report
    assert lines and lines[-1].startswith("PASS: "), report
    # the timeline names each restart and the generation it came back in
    for i in range(3):
        assert any(f"static-{i}: back as member" in line and "generation" in line for line in lines), report
