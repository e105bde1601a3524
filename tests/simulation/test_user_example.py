"""examples/simulated_group.py: a user's listener and commit logic tested in a simulated group."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

import kgroup
from kgroup.testing.simulation import SimulatedGroup

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "simulated_group.py"


def _example():
    spec = importlib.util.spec_from_file_location("simulated_group_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("seed", [1, 7, 42])
def test_the_example_passes_in_well_under_a_second_of_real_time(seed):
    started = time.monotonic()
    assert _example().main(seed) == 0
    assert time.monotonic() - started < 30  # generous on a loaded machine; typically ~0.3 s


def test_check_catches_an_application_that_commits_records_it_never_processed():
    """The same harness fails a user bug: committing offsets ahead of processing (at-most-once)."""

    def sloppy(consumer: kgroup.Consumer, running) -> None:
        consumer.subscribe(["t"])
        while running():
            for record in consumer.poll(100):
                tp = record.topic_partition
                consumer.commit({tp: record.offset + 10})  # skips ahead
        consumer.close()

    group = SimulatedGroup({"t": 2}, seed=3)
    group.produce("t", 100)
    group.add_member("a", sloppy, enable_auto_commit=False)
    group.run_for(5.0)
    with pytest.raises(AssertionError, match=r"record lost|commit beyond hand-out"):
        group.check()


def test_check_passes_for_auto_commit_and_a_crash():
    seen: set[tuple[int, int]] = set()

    def app(consumer: kgroup.Consumer, running) -> None:
        consumer.subscribe(["t"])
        while running():
            seen.update((r.partition, r.offset) for r in consumer.poll(100))
        consumer.close()

    group = SimulatedGroup({"t": 3}, seed=5)
    group.produce("t", 300)
    group.add_member("a", app, enable_auto_commit=True, auto_commit_interval_ms=500)
    group.add_member("b", app, enable_auto_commit=True, auto_commit_interval_ms=500)
    group.run_for(4.0)
    group.crash("b")
    group.produce("t", 300)
    assert group.run_until(lambda: len(seen) == 600, timeout_s=60.0)
    group.check()
