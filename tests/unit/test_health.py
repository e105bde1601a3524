"""``kgroup.health.assess``: the verdicts as a pure function of ``HealthInputs`` (no consumer, no thread)."""

from __future__ import annotations

from typing import Any

import attrs

from kgroup.health import HealthInputs, assess
from kgroup.membership.core import MemberSnapshot
from kgroup.membership.states import MemberState
from kgroup.types import Generation


def snapshot(**fields: Any) -> MemberSnapshot:
    base = MemberSnapshot(MemberState.STABLE, Generation(3, "m"), frozenset(), 1, frozenset({"t"}), None, None)
    return attrs.evolve(base, **fields)


def inputs(**fields: Any) -> HealthInputs:
    base = HealthInputs(
        closed=False, manual=False, snapshot=snapshot(session_timeout_ms=10_000), fatal=None, last_poll=100.0,
        subscribed_at=0.0, max_poll_interval_ms=300_000, session_timeout_ms=45_000, last_group_ok=100.0,
        assigned_partitions=2,
    )
    return attrs.evolve(base, **fields)


def test_a_stable_member_that_heard_from_the_coordinator_is_live_and_ready() -> None:
    report = assess(inputs(), now=101.0)
    assert (report.live, report.ready, report.reasons, report.state) == (True, True, (), MemberState.STABLE)
    assert (report.last_poll_seconds_ago, report.assigned_partitions) == (1.0, 2)


def test_readiness_is_bounded_by_the_session_timeout_in_force_not_the_configured_default() -> None:
    # the consumer protocol: the broker's group session timeout (10 s) is in force, not the 45 s default
    report = assess(inputs(), now=111.0)
    assert report.live and not report.ready
    assert report.reasons == (
        "no successful response from the group coordinator within the session timeout (10000 ms; last: 11.0 s ago)",
    )
    # until the broker's is known, the configured one bounds it
    assert assess(inputs(snapshot=snapshot(session_timeout_ms=None)), now=111.0).ready


def test_a_fatal_error_a_stalled_poll_loop_and_a_closed_consumer_are_not_live() -> None:
    assert not assess(inputs(fatal=RuntimeError("boom")), now=101.0).live
    stalled = assess(inputs(last_poll=0.0), now=301.0)
    assert not stalled.live and "poll() not called for 301.0 s" in stalled.reasons[0]
    closed = assess(inputs(closed=True), now=101.0)
    assert (closed.live, closed.state) == (False, MemberState.CLOSED)


def test_a_manually_assigned_consumer_is_ready_once_the_coordinator_is_known() -> None:
    assert assess(inputs(manual=True, snapshot=None), now=101.0).reasons == (
        "the group's coordinator (for commits) is not known yet",
    )
    assert assess(inputs(manual=True), now=101.0).ready
