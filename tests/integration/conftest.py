"""Everything under tests/integration talks to a real broker: mark it ``integration``.

Which broker each test runs on (docs/testing.md, "One suite, two brokers"): the modules about
group semantics and the examples, and every test with a ``tansu_deviation`` mark, carry
``harness.BOTH`` (``broker_kinds(*harness.BROKERS)``) and run once on the embedded Tansu
and once on Apache Kafka (``[tansu]`` and ``[apache-kafka]`` test ids); the rest (the data path,
the proxy itself, the CLI, the broker helpers) run on the selected broker only, Tansu by
default. On ``[apache-kafka]`` the coordinator under test is Kafka's own: ``group_coordinator``
is the bare broker there (and the coordinator proxy over Tansu on ``[tansu]``), the
``where="proxy"`` variants of a scenario (checks of the coordinator model itself, which its
``[tansu]`` run covers) are deselected, and tests that need the proxy's fault injection or
request log are marked ``broker_kinds("tansu")``. A ``tansu_deviation`` test's ``[tansu]``
variant is deselected by the plugin, its ``[apache-kafka]`` twin runs; ``--tansu-deviations``
runs it as a strict xfail (docs/testing.md, "Tansu deviations: deselected, or strict xfails").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kgroup import ShareConsumer
from kgroup.testing.broker import BOOTSTRAP_ENV_VAR

from .groupcheck import BareCoordinator, PeerSide, Side

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test here ``integration``; deselect the ``where="proxy"`` variants on Apache
    Kafka; refuse a ``tansu_deviation`` test that would not also run on Apache Kafka."""
    external = bool(os.environ.get(BOOTSTRAP_ENV_VAR))
    kept, deselected = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        params = callspec.params if callspec is not None else {}
        if params.get("broker_kind") == "apache-kafka" and params.get("where") == "proxy":
            deselected.append(item)  # the model's own checks: its [tansu] run covers them
        else:
            kept.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
    for item in items:
        if not item.path.is_relative_to(_HERE):
            continue
        item.add_marker(pytest.mark.integration)
        if external or item.get_closest_marker("tansu_deviation") is None:
            continue
        marked = {kind for m in item.iter_markers("broker_kinds") for kind in m.args}
        if "apache-kafka" not in marked:
            raise pytest.UsageError(
                f"{item.nodeid}: a tansu_deviation test must also run on Apache Kafka: "
                f"mark it (or its module) with harness.BOTH"
            )


@pytest.fixture
def group_coordinator(broker_kind: str, kafka_bootstrap: str, request: pytest.FixtureRequest):
    """The group coordinator under test: Apache Kafka's own on ``[apache-kafka]`` (and on an
    external cluster or testcontainers); on Tansu, whose coordinator deviates from Kafka's
    (broker-notes.md), the ``kafka_cluster`` proxy (Kafka's coordinator modelled) in front of it.

    Either has ``bootstrap_servers``; ``groupcheck.describe_group`` and ``groupcheck.settled``
    read the group from either (the model, or DescribeGroups).
    """
    if broker_kind == "tansu":
        yield request.getfixturevalue("kafka_cluster")
        return
    coordinator = BareCoordinator(kafka_bootstrap)
    try:
        yield coordinator
    finally:
        coordinator.close()


@pytest.fixture
def sides() -> Iterator[list[Side]]:
    """The group members a test started, kgroup's and peers: after the test a peer is SIGKILLed,
    a kgroup member stopped (one that does not stop in time is left as it is)."""
    started: list[Side] = []
    yield started
    for side in started:
        if isinstance(side, PeerSide):
            side.peer.kill()
        else:
            try:
                side.stop()  # type: ignore[attr-defined]
            except AssertionError:
                pass


@pytest.fixture
def share_consumers(kafka_bootstrap: str) -> Iterator[Callable[..., ShareConsumer[Any, Any]]]:
    """``make(group_id, topic, **config) -> ShareConsumer`` subscribed to ``topic``; each closed after the test."""
    made: list[ShareConsumer[Any, Any]] = []

    def make(group_id: str, topic: str, **config: Any) -> ShareConsumer[Any, Any]:
        consumer: ShareConsumer[Any, Any] = ShareConsumer(bootstrap_servers=kafka_bootstrap, group_id=group_id,
                                                          **config)
        consumer.subscribe([topic])
        made.append(consumer)
        return consumer

    yield make
    for consumer in made:
        consumer.close(timeout_ms=10000)
