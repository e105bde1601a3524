"""Pin the simulator's behaviour across a refactor: record every seed's trace, then compare two recordings.

Record (one ``python -m kgroup.testing.simulation --seed N --trace`` per seed and protocol, exactly the
replay command a violation report prints)::

    PYTHONPATH=$PWD python tests/simulation/trace_compare.py record /tmp/traces-before --seeds 200
    ... change the code ...
    PYTHONPATH=$PWD python tests/simulation/trace_compare.py record /tmp/traces-after --seeds 200
    python tests/simulation/trace_compare.py compare /tmp/traces-before /tmp/traces-after

``compare`` exits 1 and prints the first differing lines of each file that differs. A structural
change must leave every file byte-identical; ``--normalise OLD=NEW`` (repeatable) rewrites a name a
trace prints (for example a renamed class) before comparing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PROTOCOLS = ("classic", "consumer")


def _record_one(out: Path, protocol: str, seed: int) -> int:
    cmd = [sys.executable, "-m", "kgroup.testing.simulation", "--seed", str(seed), "--trace"]
    if protocol != "classic":
        cmd += ["--group-protocol", protocol]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    with (out / f"{protocol}-{seed}.txt").open("wb") as f:
        return subprocess.run(cmd, stdout=f, stderr=subprocess.DEVNULL, env=env, check=False).returncode


def record(out: Path, seeds: int, first: int, workers: int) -> int:
    """Write ``{classic,consumer}-{seed}.txt`` into ``out``; the number of seeds with a violation."""
    out.mkdir(parents=True, exist_ok=True)
    jobs = [(p, s) for p in PROTOCOLS for s in range(first, first + seeds)]
    with ThreadPoolExecutor(workers) as pool:
        codes = list(pool.map(lambda job: _record_one(out, *job), jobs))
    return sum(1 for c in codes if c != 0)


def compare(before: Path, after: Path, normalise: list[tuple[str, str]]) -> int:
    """Print each differing file's first differing lines; the number of files that differ."""
    differ = 0
    names = sorted({p.name for p in before.glob("*.txt")} | {p.name for p in after.glob("*.txt")})
    for name in names:
        a, b = before / name, after / name
        if not a.exists() or not b.exists():
            print(f"{name}: only in {'after' if not a.exists() else 'before'}")
            differ += 1
            continue
        ta, tb = a.read_text(), b.read_text()
        for old, new in normalise:
            ta, tb = ta.replace(old, new), tb.replace(old, new)
        if ta == tb:
            continue
        differ += 1
        la, lb = ta.splitlines(), tb.splitlines()
        first = next((i for i, (x, y) in enumerate(zip(la, lb, strict=False)) if x != y), min(len(la), len(lb)))
        print(f"{name}: differs from line {first + 1}")
        print(f"  before: {la[first] if first < len(la) else '<end>'}")
        print(f"  after:  {lb[first] if first < len(lb) else '<end>'}")
    print(f"{len(names) - differ} of {len(names)} traces identical")
    return differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out", type=Path)
    rec.add_argument("--seeds", type=int, default=200)
    rec.add_argument("--first", type=int, default=0)
    rec.add_argument("--workers", type=int, default=2)
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("before", type=Path)
    cmp_.add_argument("after", type=Path)
    cmp_.add_argument("--normalise", action="append", default=[], metavar="OLD=NEW")
    args = parser.parse_args()
    if args.command == "record":
        failed = record(args.out, args.seeds, args.first, args.workers)
        print(f"recorded {2 * args.seeds} traces into {args.out} ({failed} with a violation)")
        sys.exit(0)
    pairs = [(old, new) for old, _, new in (n.partition("=") for n in args.normalise)]
    sys.exit(1 if compare(args.before, args.after, pairs) else 0)


if __name__ == "__main__":
    main()
