"""Put each mutation of ``mutations.py`` into a copy of the tree and run what must catch it.

    python tests/mutations/run.py                  # every mutation, one after another
    python tests/mutations/run.py --only NAME      # one (repeatable)
    python tests/mutations/run.py --list

Each mutation is applied to a fresh copy of ``kgroup/`` and ``tests/`` in a temporary
directory (the working tree is never touched), then its catcher runs there: CI's seed budget
with ``--fail-fast`` (the campaign stops at the first failed seed) on one worker, or the named
pytest node. A table follows: the mutation, whether it was caught, the seconds to the first
detection (the campaign's own count, from its start to the first failed seed's report; a
test's whole run) and the first violation. Exit status 1 when a mutation survives, 2 when a
snippet is not found exactly once (the code moved: update the list).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.mutations.mutations import MUTATIONS, Mutation  # noqa: E402

#: CI's seed budgets (tests/simulation/test_simulation.py, tests/simulation/test_consumer_protocol.py,
#: tests/simulation/test_parallel.py, tests/simulation/test_share.py)
BUDGETS = {
    "classic": ["--seeds", "2000"],
    "consumer": ["--seeds", "500", "--group-protocol", "consumer"],
    "parallel": ["--parallel", "--seeds", "200"],
    "share": ["--share", "--seeds", "150"],
}
_FIRST = re.compile(r"first violation reported after ([0-9.]+) s")
_RULE = re.compile(r"^\s+\[t=[0-9.]+\] (.+)$", re.MULTILINE)


class SnippetNotFound(Exception):
    """A mutation's original text is not in its file exactly once."""


def apply(mutation: Mutation, root: Path) -> None:
    """Replace the mutation's snippet in ``root``'s copy of its file (exactly one occurrence)."""
    path = root / mutation.path
    text = path.read_text()
    count = text.count(mutation.original)
    if count != 1:
        raise SnippetNotFound(f"{mutation.name}: snippet not found exactly once in {mutation.path} ({count} found)")
    path.write_text(text.replace(mutation.original, mutation.replacement))


def _copy_tree(into: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for name in ("kgroup", "tests", "examples"):
        shutil.copytree(ROOT / name, into / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "CONTRIBUTING.md"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, into / name)


def run_one(mutation: Mutation, workers: int, timeout_s: float) -> dict[str, object]:
    """Apply ``mutation`` in a temporary copy and run its catcher; the row of the table."""
    with tempfile.TemporaryDirectory(prefix="kgroup-mutation-") as tmp:
        root = Path(tmp)
        _copy_tree(root)
        apply(mutation, root)
        env = dict(os.environ, PYTHONPATH=str(root), PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
        if mutation.caught_by in BUDGETS:
            command = [
                sys.executable, "-m", "kgroup.testing.simulation", *BUDGETS[mutation.caught_by],
                "--workers", str(workers), "--fail-fast",
            ]
        else:
            command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", mutation.caught_by]
        where = subprocess.run([sys.executable, "-c", "import kgroup; print(kgroup.__file__)"], cwd=root, env=env,
                               capture_output=True, text=True, check=True).stdout.strip()
        if not Path(where).resolve().is_relative_to(root.resolve()):
            raise RuntimeError(f"the copy is not what runs: kgroup is imported from {where}")
        started = time.monotonic()
        try:
            proc = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=timeout_s,
                                  check=False)
            output, code = proc.stdout + proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as exc:
            output, code = f"timed out after {timeout_s:.0f} s: {exc}", -1
        wall = time.monotonic() - started
        caught = code not in (0, -1)
        first = _FIRST.search(output)
        seconds = float(first.group(1)) if first else wall
        rule = _RULE.search(output)
        detail = rule.group(1) if rule else (output.strip().splitlines() or [""])[-1]
        return {
            "name": mutation.name, "caught": caught, "seconds": seconds, "by": mutation.caught_by,
            "detail": detail[:160], "output": output,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", default=[], help="run only this mutation (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--workers", type=int, default=1, help="simulator worker processes (default 1)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per mutation (default 1800)")
    parser.add_argument("--verbose", action="store_true", help="print each catcher's output tail")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    unknown = set(args.only) - {m.name for m in MUTATIONS}
    if unknown:
        print(f"unknown mutation(s): {sorted(unknown)}", file=sys.stderr)
        return 2
    if args.list:
        for m in MUTATIONS:
            print(f"{m.name:40} {m.path:40} {m.caught_by}: {m.what}")
        return 0
    for m in chosen:  # all snippets first: a moved one stops the run before any campaign
        text = (ROOT / m.path).read_text()
        if text.count(m.original) != 1:
            print(f"{m.name}: snippet not found exactly once in {m.path}", file=sys.stderr)
            return 2
    rows = []
    for m in chosen:
        row = run_one(m, args.workers, args.timeout)
        rows.append(row)
        status = "caught" if row["caught"] else "SURVIVED"
        print(f"{m.name}: {status} in {row['seconds']:.1f} s ({m.caught_by}): {row['detail']}", flush=True)
        if args.verbose or not row["caught"]:
            print("\n".join(str(row["output"]).splitlines()[-30:]), flush=True)
    print()
    print("| mutation | file | caught by | caught | seconds to first detection | first violation |")
    print("|---|---|---|---|---|---|")
    for m, row in zip(chosen, rows, strict=True):
        print(f"| `{m.name}` | `{m.path}` | {row['by']} | {'yes' if row['caught'] else 'NO'} | "
              f"{row['seconds']:.1f} | {row['detail']} |")
    return 0 if all(row["caught"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
