"""The mutation list cannot rot: every mutation's snippet is in its file exactly once.

The mutations themselves are run by hand (``python tests/mutations/run.py``, docs/simulation.md):
each takes up to a seed budget of the simulator.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mutations.mutations import MUTATIONS, Mutation

ROOT = Path(__file__).resolve().parents[2]


def test_there_are_enough_mutations_and_their_names_are_unique() -> None:
    names = [m.name for m in MUTATIONS]
    assert len(names) >= 12
    assert len(set(names)) == len(names)
    paths = {m.path for m in MUTATIONS}
    assert {"kgroup/membership/machine.py", "kgroup/membership/consumer_group.py", "kgroup/consumer.py",
            "kgroup/_driver/commits.py"} <= paths


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.name)
def test_the_snippet_is_in_its_file_exactly_once(mutation: Mutation) -> None:
    text = (ROOT / mutation.path).read_text()
    assert text.count(mutation.original) == 1, f"{mutation.name}: snippet not found once in {mutation.path}"
    assert mutation.original != mutation.replacement
    caught_by = mutation.caught_by
    if caught_by not in ("classic", "consumer", "parallel", "share"):
        file, _, test = caught_by.partition("::")
        assert test and test in (ROOT / file).read_text(), f"{mutation.name}: no test {caught_by}"
