"""Campaigns: many seeds, in worker processes, with one summary line."""

from __future__ import annotations

import concurrent.futures
import os
import time
from typing import Any

import attrs

from kgroup.testing.simulation._parallel import run_parallel_seed
from kgroup.testing.simulation._run import VERSION, RunResult, describe, run_seed
from kgroup.testing.simulation._share import run_share_seed

__all__ = ["CampaignResult", "campaign", "replay_command"]


def replay_command(
    seed: int, group_protocol: str = "classic", poll_columns: bool = False, version: int = VERSION,
    parallel: bool = False, share: bool = False,
) -> str:
    """The one-line command that replays ``seed`` exactly, with its trace."""
    if share:
        return f"PYTHONHASHSEED=0 python -m kgroup.testing.simulation --seed {seed} --share --trace"
    protocol = "" if group_protocol == "classic" else f" --group-protocol {group_protocol}"
    columns = " --poll-columns" if poll_columns else ""
    older = "" if version == VERSION else f" --scenario-version {version}"
    processors = " --parallel" if parallel else ""
    return (
        f"PYTHONHASHSEED=0 python -m kgroup.testing.simulation --seed {seed}{protocol}{columns}{older}{processors}"
        " --trace"
    )


@attrs.define
class CampaignResult:
    """What a campaign covered and what it found."""

    seeds: int = 0
    rebalances: int = 0
    faults: int = 0
    records: int = 0
    commits: int = 0
    violations: int = 0
    failed: list[RunResult] = attrs.field(factory=list)
    wall_s: float = 0.0
    virtual_s: float = 0.0
    group_protocol: str = "classic"
    poll_columns: bool = False
    version: int = VERSION
    #: the members are ``ParallelProcessor`` applications (``_parallel.py``)
    parallel: bool = False
    #: the members are ``ShareConsumer``s of a share group (``_share.py``)
    share: bool = False
    #: wall seconds from the campaign's start to the first failed run's report (None: none failed)
    first_failure_s: float | None = None

    def add(self, result: RunResult) -> None:
        """Count one run."""
        self.seeds += 1
        self.rebalances += result.rebalances
        self.faults += result.faults
        self.records += result.records
        self.commits += result.commits
        self.virtual_s += result.virtual_s
        if result.violations:
            self.violations += len(result.violations)
            self.failed.append(result)

    def summary(self) -> str:
        """The one summary line."""
        rate = self.rebalances / self.wall_s if self.wall_s else 0.0
        return (
            f"simulation: {self.seeds} seeds, {self.rebalances} simulated rebalances, {self.faults} faults injected, "
            f"{self.violations} violations, {rate:.0f} simulated rebalances/s "
            f"({self.records} records handed out, {self.commits} offsets committed, "
            f"{self.virtual_s / 3600:.1f} h simulated in {self.wall_s:.1f} s)"
        )

    def reports(self) -> str:
        """A report for every failed seed."""
        return "\n\n".join(
            describe(
                r, lambda s: replay_command(s, self.group_protocol, self.poll_columns, self.version, self.parallel,
                                          self.share)
            )
            for r in self.failed
        )


def _run_many(
    seeds: list[int], group_protocol: str = "classic", poll_columns: bool = False, version: int = VERSION,
    stop_on_violation: bool = False, parallel: bool = False, share: bool = False,
) -> list[RunResult]:
    out = []
    for seed in seeds:
        if share:
            result = run_share_seed(seed)
        elif parallel:
            result = run_parallel_seed(seed, group_protocol)
        else:
            result = run_seed(seed, group_protocol, poll_columns=poll_columns, version=version)
        if not result.violations:
            result.trace = []  # only failed runs carry their trace back
        out.append(result)
        if stop_on_violation and result.violations:
            break
    return out


def campaign(
    seeds: range | list[int],
    *,
    workers: int | None = None,
    minutes: float | None = None,
    stop_on_violation: bool = False,
    group_protocol: str = "classic",
    poll_columns: bool = False,
    version: int = VERSION,
    parallel: bool = False,
    share: bool = False,
) -> CampaignResult:
    """Run ``seeds`` (in ``workers`` processes; default: one per core) within ``minutes``.

    Seeds go to the workers in chunks; with ``minutes`` no new chunk starts after the time is
    up. Each run is deterministic, so the result does not depend on ``workers``.
    ``stop_on_violation``: no new seed starts once a run failed (with one worker, the seeds
    after the first failed one are not run). ``parallel``: the members are ``ParallelProcessor``
    applications (``run_parallel_seed``; ``poll_columns`` and ``version`` do not apply); ``share``:
    the members are ``ShareConsumer``s of a share group (``run_share_seed``; neither do the group
    protocol and ``parallel``).
    """
    seeds = list(seeds)
    workers = workers or os.cpu_count() or 1
    result = CampaignResult(
        group_protocol=group_protocol, poll_columns=poll_columns, version=version, parallel=parallel,
        share=share,
    )
    started = time.monotonic()
    deadline = started + minutes * 60 if minutes else None
    chunk = 25
    chunks = [seeds[i : i + chunk] for i in range(0, len(seeds), chunk)]
    if workers <= 1:
        for part in chunks:
            if deadline is not None and time.monotonic() > deadline:
                break
            for run in _run_many(part, group_protocol, poll_columns, version, stop_on_violation, parallel, share):
                result.add(run)
                if run.violations and result.first_failure_s is None:
                    result.first_failure_s = time.monotonic() - started
            if stop_on_violation and result.failed:
                break
    else:
        with concurrent.futures.ProcessPoolExecutor(workers) as pool:
            pending: set[concurrent.futures.Future[Any]] = set()
            queue = list(chunks)
            while queue or pending:
                while queue and len(pending) < 2 * workers:
                    if deadline is not None and time.monotonic() > deadline:
                        queue = []
                        break
                    pending.add(pool.submit(
                        _run_many, queue.pop(0), group_protocol, poll_columns, version, stop_on_violation, parallel,
                        share))
                if not pending:
                    break
                done, pending = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in done:
                    for run in future.result():
                        result.add(run)
                        if run.violations and result.first_failure_s is None:
                            result.first_failure_s = time.monotonic() - started
                if stop_on_violation and result.failed:
                    for future in pending:
                        future.cancel()
                    break
    result.failed.sort(key=lambda r: r.seed)
    result.wall_s = time.monotonic() - started
    return result
