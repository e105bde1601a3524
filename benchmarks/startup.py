"""Startup benchmark: what importing kgroup costs, against the other Python Kafka clients.

Each statement runs in a fresh interpreter, ``--runs`` times, the statements interleaved round
by round (a burst of load on the machine hits every client alike). Reported per statement:

* wall: spawn of ``python -c STATEMENT`` to its exit (interpreter start-up included; the
  ``pass`` row is that floor);
* import: ``time.perf_counter()`` around the statement inside the child (no start-up);
* cpu: ``time.process_time()`` around it (the child's CPU time: steadier than wall time on a
  loaded machine);

as medians, and the ratio of each client's median import to kgroup's ``from kgroup import
Consumer`` (what an application writes). ``import kgroup`` alone loads only the package's lazy
names (PEP 562). A client that is not installed is skipped.

``--before PATH`` adds the same kgroup statements run from another checkout (e.g. a ``git
worktree`` of an older commit: ``git worktree add /tmp/kgroup-before <commit>``), for before and
after figures in one run. ``--importtime`` prints the slowest modules of ``python -X importtime
-c "from kgroup import Consumer"`` (minimum over 3 runs, per module).

    python benchmarks/startup.py                       # 20 runs per statement
    python benchmarks/startup.py --runs 40 --json out.json
    python benchmarks/startup.py --before /tmp/kgroup-before --importtime
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (label, statement, module that must be importable)
STATEMENTS: list[tuple[str, str, str | None]] = [
    ("python (start-up only)", "pass", None),
    ("import kgroup", "import kgroup", "kgroup"),
    ("from kgroup import Consumer", "from kgroup import Consumer", "kgroup"),
    ("import confluent_kafka", "import confluent_kafka", "confluent_kafka"),
    ("import aiokafka", "import aiokafka", "aiokafka"),
    ("import kafka (kafka-python)", "import kafka", "kafka"),
]
KGROUP_REFERENCE = "from kgroup import Consumer"

_CHILD = """\
import time
_w, _c = time.perf_counter(), time.process_time()
{statement}
print(time.perf_counter() - _w, time.process_time() - _c)
"""


def _run_once(statement: str, cwd: Path) -> tuple[float, float, float]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", _CHILD.format(statement=statement)],
        cwd=cwd, env=env, check=True, capture_output=True, text=True, timeout=120,
    )
    wall = time.perf_counter() - start
    imported, cpu = (float(x) for x in out.stdout.split())
    return wall, imported, cpu


def measure(runs: int, before: Path | None) -> list[dict[str, object]]:
    rows: list[tuple[str, str, Path]] = [
        (label, statement, ROOT)
        for label, statement, module in STATEMENTS
        if module is None or importlib.util.find_spec(module) is not None
    ]
    if before is not None:
        rows += [
            (f"{label} (before: {before.name})", statement, before)
            for label, statement, module in STATEMENTS
            if module == "kgroup"
        ]
    samples: dict[int, list[tuple[float, float, float]]] = {i: [] for i in range(len(rows))}
    for _ in range(runs):
        for i, (_label, statement, cwd) in enumerate(rows):
            samples[i].append(_run_once(statement, cwd))
    out = []
    for i, (label, statement, cwd) in enumerate(rows):
        walls, imports, cpus = zip(*samples[i], strict=True)
        out.append({
            "label": label, "statement": statement, "checkout": str(cwd), "runs": runs,
            "wall_ms": statistics.median(walls) * 1000, "import_ms": statistics.median(imports) * 1000,
            "cpu_ms": statistics.median(cpus) * 1000, "import_min_ms": min(imports) * 1000,
        })
    return out


def importtime(statement: str, top: int) -> list[tuple[int, int, str]]:
    """The slowest modules of ``-X importtime`` (minimum self and cumulative us over 3 runs)."""
    best: dict[str, tuple[int, int]] = {}
    for _ in range(3):
        err = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", statement],
            cwd=ROOT, check=True, capture_output=True, text=True,
        ).stderr
        for line in err.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            self_us, cumulative, name = line.split(":", 1)[1].split("|")
            old = best.get(name.rstrip(), (1 << 62, 1 << 62))
            best[name.rstrip()] = (min(old[0], int(self_us)), min(old[1], int(cumulative)))
    ranked = sorted(best.items(), key=lambda kv: -kv[1][1])[:top]
    return [(s, c, name) for name, (s, c) in ranked]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="fresh interpreters per statement (default 20)")
    parser.add_argument("--before", type=Path, help="another kgroup checkout to measure beside this one")
    parser.add_argument("--importtime", action="store_true", help="print the slowest modules of the kgroup import")
    parser.add_argument("--json", type=Path, help="write the rows as JSON")
    args = parser.parse_args(argv)

    rows = measure(args.runs, args.before)
    reference = next(r for r in rows if r["statement"] == KGROUP_REFERENCE and r["checkout"] == str(ROOT))
    print(f"Python {sys.version.split()[0]}; {args.runs} fresh interpreters per statement, interleaved; medians")
    print()
    print("| statement | wall ms | import ms | cpu ms | import / kgroup's |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        ratio = float(r["import_ms"]) / float(reference["import_ms"])  # type: ignore[arg-type]
        print(f"| `{r['label']}` | {r['wall_ms']:.0f} | {r['import_ms']:.0f} | {r['cpu_ms']:.0f} | {ratio:.2f} |")
    if args.importtime:
        print()
        print(f"Slowest modules of `python -X importtime -c \"{KGROUP_REFERENCE}\"` (us, min of 3):")
        for self_us, cumulative, name in importtime(KGROUP_REFERENCE, 25):
            print(f"{cumulative:>9} {self_us:>9}  {name}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
