"""One Apache Kafka 4.4.0 broker for the whole conformance session, and the model configured to match it.

Broker settings (Kafka's defaults except these, each mirrored in the model's
:class:`~kgroup.testing.coordinator.CoordinatorConfig`):

* ``group.initial.rebalance.delay.ms=0``: a new group's first JoinGroup completes at once
  (KIP-134's 3 s delay would cost every script 3 s); the delay itself is scripted on a second
  broker started only when those scripts run (``delayed_broker``, 1000 ms).
* ``group.min.session.timeout.ms=1000``: session expiry scripts wait 1-2 s instead of 6 s;
  INVALID_SESSION_TIMEOUT is scripted against this bound and ``group.max.session.timeout.ms``
  (Kafka's default 1800000).
* ``group.max.size=3``: a fourth member gets GROUP_MAX_SIZE_REACHED (KIP-389).
* ``offsets.topic.num.partitions=1``: one coordinator partition, so the broker is ready sooner.

The suite skips with one line when Java or the Apache Kafka jars are missing, and fails
instead with ``KGROUP_REQUIRE_APACHE_KAFKA=1`` (``kgroup.testing.apache_kafka.skip_if_unavailable``).
Every test here is marked ``integration``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from kgroup.testing import apache_kafka, create_topic, start_broker
from kgroup.testing.broker import BrokerHandle
from kgroup.testing.coordinator import CoordinatorConfig

from .harness import Broker, KafkaConnection

_HERE = Path(__file__).parent

BROKER_OVERRIDES: Mapping[str, Any] = {
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 1000,
    "group.max.size": 3,
    "offsets.topic.num.partitions": 1,
}
DELAYED_OVERRIDES: Mapping[str, Any] = {**BROKER_OVERRIDES, "group.initial.rebalance.delay.ms": 1000}


def model_config(overrides: Mapping[str, Any]) -> CoordinatorConfig:
    """The model's configuration mirroring a broker's ``overrides``."""
    return CoordinatorConfig(
        group_initial_rebalance_delay_ms=overrides["group.initial.rebalance.delay.ms"],
        group_min_session_timeout_ms=overrides["group.min.session.timeout.ms"],
        group_max_size=overrides["group.max.size"],
    )


MODEL_CONFIG = model_config(BROKER_OVERRIDES)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(_HERE):
            item.add_marker(pytest.mark.integration)


def _address(handle: BrokerHandle) -> tuple[str, int]:
    host, _, port = handle.bootstrap_servers.split(",")[0].rpartition(":")
    return host, int(port)


READY_TIMEOUT_S = 60.0


def _wait_until_coordinator_ready(address: tuple[str, int]) -> None:
    """FindCoordinator creates ``__consumer_offsets``; wait until a JoinGroup gets a coordinator answer.

    Polls every 100 ms until ``READY_TIMEOUT_S`` (a condition with a deadline).
    """
    deadline = time.monotonic() + READY_TIMEOUT_S
    group = f"warmup-{uuid.uuid4().hex[:8]}"
    last: object = None
    while time.monotonic() < deadline:
        conn = KafkaConnection(address, "warmup", time.monotonic())
        try:
            conn.send(10, 3, {"key": group, "key_type": 0})
            got = conn.receive(10.0)
            if got is not None and isinstance(got[1], dict) and got[1]["error_code"] == 0:
                conn.send(
                    11,
                    9,
                    {
                        "group_id": group,
                        "session_timeout_ms": 10000,
                        "rebalance_timeout_ms": 10000,
                        "member_id": "",
                        "group_instance_id": None,
                        "protocol_type": "consumer",
                        "protocols": [{"name": "range", "metadata": b""}],
                        "reason": None,
                    },
                )
                joined = conn.receive(10.0)
                last = joined[1] if joined is not None else None
                if isinstance(last, dict) and last["error_code"] == 79:  # MEMBER_ID_REQUIRED: the coordinator answers
                    return
            else:
                last = got
        finally:
            conn.close()
        time.sleep(0.1)  # poll interval of a readiness wait bounded by READY_TIMEOUT_S
    raise RuntimeError(f"the group coordinator was not ready in {READY_TIMEOUT_S} s (last answer {last!r})")


def _start(tmp_path_factory: pytest.TempPathFactory, name: str, overrides: Mapping[str, Any]) -> BrokerHandle:
    apache_kafka.skip_if_unavailable()
    handle = start_broker(kind="apache-kafka", overrides=dict(overrides), log_dir=tmp_path_factory.mktemp(name))
    try:
        create_topic(handle.bootstrap_servers, TOPIC_NAME, TOPIC_PARTITIONS)
        _wait_until_coordinator_ready(_address(handle))
    except BaseException:
        handle.stop()
        raise
    return handle


TOPIC_PARTITIONS = 3
TOPIC_NAME = f"cf-topic-{uuid.uuid4().hex[:8]}"
TOPICS = {"t": TOPIC_NAME, "missing": f"cf-missing-{uuid.uuid4().hex[:8]}"}


def _broker(handle: BrokerHandle, config: CoordinatorConfig) -> Broker:
    return Broker(
        address=_address(handle), config=config, topics=TOPICS, partitions={TOPIC_NAME: TOPIC_PARTITIONS}
    )


def _serve(tmp_path_factory: pytest.TempPathFactory, name: str, overrides: Mapping[str, Any]) -> Iterator[Broker]:
    handle = _start(tmp_path_factory, name, overrides)
    try:
        yield _broker(handle, model_config(overrides))
    finally:
        handle.stop()


@pytest.fixture(scope="session")
def conformance_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """Apache Kafka with :data:`BROKER_OVERRIDES`, and the model config that matches it."""
    yield from _serve(tmp_path_factory, "conformance-kafka", BROKER_OVERRIDES)


@pytest.fixture(scope="session")
def delayed_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """A second broker with ``group.initial.rebalance.delay.ms=1000``, for the KIP-134 scripts only."""
    yield from _serve(tmp_path_factory, "conformance-kafka-delayed", DELAYED_OVERRIDES)
