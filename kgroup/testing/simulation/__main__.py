"""``python -m kgroup.testing.simulation``: run a campaign, or replay one seed."""

from __future__ import annotations

import os
import sys

import click

from kgroup.testing.simulation._campaign import campaign, replay_command
from kgroup.testing.simulation._parallel import parallel_scenario_for, run_parallel_seed
from kgroup.testing.simulation._run import VERSION, describe, run_seed, scenario_for
from kgroup.testing.simulation._share import run_share_seed, share_scenario_for


@click.command()
@click.option("--seeds", type=click.IntRange(min=1), default=200, show_default=True, help="How many seeds to run.")
@click.option("--first", type=int, default=0, show_default=True, help="The first seed of the campaign.")
@click.option("--minutes", type=float, default=None, help="Start no new seeds after this many minutes.")
@click.option("--seed", type=int, default=None, help="Replay this one seed (and print its report).")
@click.option("--trace", is_flag=True, help="With --seed: print the whole trace.")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Worker processes (default: cores).")
@click.option(
    "--group-protocol", type=click.Choice(["classic", "consumer"]), default="classic", show_default=True,
    help="The members' group protocol (consumer: KIP-848 against the consumer-group coordinator model).",
)
@click.option("--poll-columns", is_flag=True, help="The members take records with Consumer.poll_columns().")
@click.option(
    "--scenario-version", "version", type=click.IntRange(1, VERSION), default=VERSION, show_default=True,
    help="1: the scenarios as drawn before per-seed turn orders, explicit-offset commits and slow answers "
    "into a black hole (the seeds of older regression tests).",
)
@click.option(
    "--parallel", is_flag=True,
    help="The members run kgroup.ParallelProcessor (handlers on a simulated pool; its own checks).",
)
@click.option(
    "--share", is_flag=True,
    help="The members are kgroup.ShareConsumers of a share group (KIP-932) against the share-group model.",
)
@click.option("--fail-fast", is_flag=True, help="Start no new seed once one has failed (a mutation's first catch).")
def main(
    seeds: int, first: int, minutes: float | None, seed: int | None, trace: bool, workers: int | None,
    group_protocol: str, poll_columns: bool, version: int, parallel: bool, share: bool, fail_fast: bool,
) -> None:
    """Simulate consumer groups deterministically; exit 1 on any violation."""
    if os.environ.get("PYTHONHASHSEED") != "0":
        # set iteration order must not depend on the process: re-run with a fixed hash seed
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, "-m", "kgroup.testing.simulation", *sys.argv[1:]])
    if seed is not None:
        if share:
            result = run_share_seed(seed)
            scenario: object = share_scenario_for(seed)
        elif parallel:
            result = run_parallel_seed(seed, group_protocol)
            scenario = parallel_scenario_for(seed, group_protocol)
        else:
            result = run_seed(seed, group_protocol, poll_columns=poll_columns, version=version)
            scenario = scenario_for(seed, group_protocol, poll_columns=poll_columns, version=version)
        if trace:
            click.echo(repr(scenario))
            click.echo("\n".join(result.trace))
        if result.violations:
            click.echo(describe(
                result, lambda s: replay_command(s, group_protocol, poll_columns, version, parallel, share)))
            sys.exit(1)
        click.echo(
            f"seed {seed}: no violation ({result.rebalances} rebalances, {result.faults} faults, "
            f"{result.records} records, {result.virtual_s:.1f} s simulated)"
        )
        return
    outcome = campaign(
        range(first, first + seeds), workers=workers, minutes=minutes, group_protocol=group_protocol,
        poll_columns=poll_columns, version=version, stop_on_violation=fail_fast, parallel=parallel,
        share=share,
    )
    if outcome.failed:
        click.echo(outcome.reports())
        click.echo(f"first violation reported after {outcome.first_failure_s:.1f} s")
    click.echo(outcome.summary())
    sys.exit(1 if outcome.failed else 0)


if __name__ == "__main__":
    main()
