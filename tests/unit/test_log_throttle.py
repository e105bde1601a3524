"""Repeated failures are logged once per cause and interval (an unreachable cluster's lookups)."""

from __future__ import annotations

import logging

import pytest

from kgroup._io.kafka_python import _describe
from kgroup.membership.log_throttle import LogThrottle


def test_the_first_occurrence_is_logged_repeats_are_held_back_then_counted() -> None:
    throttle = LogThrottle(interval_s=30.0)
    assert throttle.admit("FindCoordinator: no broker", 0.0) == 0
    assert [throttle.admit("FindCoordinator: no broker", t) for t in (0.1, 0.3, 1.0, 29.9)] == [None] * 4
    assert throttle.admit("another cause", 1.0) == 0  # a new cause is news
    assert throttle.admit("FindCoordinator: no broker", 30.0) == 4
    assert throttle.admit("FindCoordinator: no broker", 30.5) is None
    throttle.forget()
    assert throttle.admit("FindCoordinator: no broker", 31.0) == 0


def test_an_error_is_described_with_its_type_named_once() -> None:
    from kafka.errors import NodeNotReadyError

    assert _describe(NodeNotReadyError("no broker available")).count("NodeNotReadyError") == 1
    assert _describe(ValueError("bad")) == "ValueError: bad"


def test_against_an_unreachable_cluster_the_lookup_failure_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    """Four seconds of FindCoordinator retries at every backoff: one INFO line, not one per retry."""
    import kgroup
    from kgroup.errors import ClusterUnreachableError

    caplog.set_level(logging.INFO, logger="kgroup")
    consumer = kgroup.Consumer(bootstrap_servers="127.0.0.1:1", group_id="g", default_api_timeout_ms=3000)
    try:
        consumer.subscribe(["t"])

        def poll_until_it_gives_up() -> None:
            for _ in range(100):
                consumer.poll(200)

        with pytest.raises(ClusterUnreachableError):
            poll_until_it_gives_up()
    finally:
        consumer.close(timeout_ms=1000)
    lines = [r for r in caplog.records if "FindCoordinator request failed" in r.getMessage()]
    assert [r.levelno for r in lines if r.levelno >= logging.INFO] == [logging.INFO], [r.getMessage() for r in lines]
