"""tests/simulation: the longest campaign starts first.

The classic seed budget (``test_ci_seed_budget_finds_no_violation``) runs the simulator in one
process for several minutes. Collected late, it started when the other workers were nearly done
and ran alone at the end of the suite (the last 7 minutes of a 24-minute run); first in the
collection order, pytest-xdist hands it to a worker at the start, beside tests that mostly wait
on brokers.
"""

from __future__ import annotations

import pytest

#: the campaigns moved to the front of the collection, in this order
FIRST = ("test_ci_seed_budget_finds_no_violation",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    first = [item for name in FIRST for item in items if getattr(item, "originalname", item.name) == name]
    if first:
        rest = [item for item in items if item not in first]
        items[:] = first + rest


@pytest.fixture
def every_poll_posts_polled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The schedule of a seed recorded when every ``poll()`` posted a ``Polled`` event.

    A seed replays one interleaving of the real client with the coordinator model. Coalescing
    ``Polled`` (``kgroup._driver.group_thread.POLLED_COALESCE_S``) moves the group thread's steps,
    so a seed that reproduced a defect may take another path. The interleaving a test below
    was written for is still one a member meets (polls further apart than the window post
    every time); the campaigns run with the coalescing.
    """
    from kgroup._driver import group_thread

    monkeypatch.setattr(group_thread, "POLLED_COALESCE_S", 0.0)
