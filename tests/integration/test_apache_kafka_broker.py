"""``start_broker(kind="apache-kafka")``: Apache Kafka's own KRaft broker as JVM children.

The broker tests skip with one line when Java or the jars are missing (get them with
``python -m kgroup.testing.apache_kafka fetch``), and fail instead when
``KGROUP_REQUIRE_APACHE_KAFKA=1``. Every wait is a condition with a deadline.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

import kgroup
from kgroup.testing import BrokerHandle, BrokerStartError, apache_kafka, create_topic, produce, start_broker
from kgroup.testing._launch import metadata_probe
from kgroup.testing.broker import (
    BOOTSTRAP_ENV_VAR,
    BROKER_ENV_VAR,
    describe_broker_selection,
    selected_broker_kind,
)

SESSION_TIMEOUT_MS = 6000
HEARTBEAT_MS = 1000
DEADLINE_S = 60.0

T = TypeVar("T")


def _wait_for(what: str, probe: Callable[[], T | None], timeout_s: float = DEADLINE_S) -> T:
    """Call ``probe`` until it returns something other than ``None``; fail at the deadline."""
    deadline = time.monotonic() + timeout_s
    last: BaseException | None = None
    while True:
        try:
            result = probe()
        except Exception as exc:  # transient while the cluster settles
            last = exc
            result = None
        if result is not None:
            return result
        if time.monotonic() >= deadline:
            pytest.fail(f"{what}: not true after {timeout_s} s (last error: {last!r})")
        time.sleep(0.05)


class _Phases:
    """Prints each phase's elapsed time: shown with ``-s``, and by pytest when a test fails."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def __call__(self, what: str) -> None:
        print(f"{time.monotonic() - self.started:7.1f} s  {what}", flush=True)


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def _consumer(bootstrap: str, group_id: str) -> kgroup.Consumer:
    return kgroup.Consumer(
        bootstrap_servers=bootstrap,
        group_id=group_id,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=HEARTBEAT_MS,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )


def _consume(consumer: kgroup.Consumer, expected: int) -> list[tuple[int, int, bytes | None]]:
    """Poll until ``expected`` records arrived (partition, offset, value); fail at the deadline."""
    got: list[tuple[int, int, bytes | None]] = []

    def enough() -> bool | None:
        got.extend((r.partition, r.offset, r.value) for r in consumer.poll(timeout_ms=200))
        return True if len(got) >= expected else None

    _wait_for(f"{expected} records consumed (have {len(got)})", enough)
    return got


def _read_from_start(bootstrap: str, topic: str, partitions: int, expected: int) -> list[bytes | None]:
    """Every record of ``topic`` from offset 0, without a group (kafka-python, assign())."""
    reader = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    try:
        reader.assign([KafkaTopicPartition(topic, p) for p in range(partitions)])
        reader.seek_to_beginning()
        values: list[bytes | None] = []

        def enough() -> bool | None:
            for msgs in reader.poll(timeout_ms=200).values():
                values.extend(m.value for m in msgs)
            return True if len(values) >= expected else None

        _wait_for(f"{expected} records read from the start (have {len(values)})", enough)
        return values
    finally:
        reader.close()


def _listed_nodes(handle: BrokerHandle, node: int) -> set[int]:
    host, port = handle.bootstrap_servers.split(",")[handle.node_ids.index(node)].rsplit(":", 1)
    return set(metadata_probe(host, int(port), 1, 2.0))


@pytest.fixture(scope="module")
def jvm_kafka() -> None:
    """Skip (one line for the module) when Java or the jars are missing; fail instead with
    ``KGROUP_REQUIRE_APACHE_KAFKA=1``."""
    apache_kafka.skip_if_unavailable()


@pytest.fixture(scope="module")
def single_node(jvm_kafka: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerHandle]:
    started = time.monotonic()
    handle = start_broker(kind="apache-kafka", log_dir=tmp_path_factory.mktemp("apache-kafka-1"))
    print(f"1 node ready in {time.monotonic() - started:.1f} s")
    try:
        yield handle
    finally:
        handle.stop()


def test_a_single_node_serves_a_kgroup_consumer(single_node: BrokerHandle) -> None:
    handle = single_node
    assert handle.kind == "apache-kafka"
    assert apache_kafka.KAFKA_VERSION in handle.version
    assert handle.node_ids == (1,)
    assert handle.pid is not None
    assert handle.pids == {1: handle.pid}
    assert handle.log_path is not None
    log_path = handle.log_path
    # the broker answers before its log says it started: wait for the line
    _wait_for("the log to say the server started",
              lambda: "Kafka Server started" in log_path.read_text(encoding="utf-8", errors="replace") or None)
    assert "NOP" not in handle.log_path.read_text(encoding="utf-8", errors="replace")  # SLF4J bound
    assert handle.bootstrap_servers in handle.describe()
    assert _listed_nodes(handle, 1) == {1}

    topic = _unique("ak-single")
    create_topic(handle.bootstrap_servers, topic, 3)
    records = [(i % 3, b"k%d" % i, b"v%d" % i) for i in range(30)]
    assert produce(handle.bootstrap_servers, topic, records) == 30

    with _consumer(handle.bootstrap_servers, _unique("g-single")) as consumer:
        consumer.subscribe([topic])
        got = _consume(consumer, 30)
        consumer.commit()
        committed = consumer.committed([kgroup.TopicPartition(topic, p) for p in range(3)])
    assert sorted(value for _, _, value in got) == sorted(value for _, _, value in records)
    assert {tp.partition: c.offset for tp, c in committed.items() if c is not None} == {0: 10, 1: 10, 2: 10}


def test_restart_keeps_records_and_committed_offsets(single_node: BrokerHandle) -> None:
    handle = single_node
    topic = _unique("ak-restart")
    group_id = _unique("g-restart")
    partitions = [kgroup.TopicPartition(topic, p) for p in range(2)]
    create_topic(handle.bootstrap_servers, topic, 2)
    assert produce(handle.bootstrap_servers, topic, [(i % 2, None, b"before-%d" % i) for i in range(20)]) == 20
    with _consumer(handle.bootstrap_servers, group_id) as consumer:
        consumer.subscribe([topic])
        _consume(consumer, 20)
        consumer.commit()
    pid_before = handle.pid
    bootstrap_before = handle.bootstrap_servers

    handle.restart()

    assert handle.pid is not None
    assert handle.pid != pid_before
    assert handle.bootstrap_servers == bootstrap_before  # same ports
    log_path = handle.log_paths[1]
    _wait_for("the log to say the server started twice (one log across the restart)",
              lambda: log_path.read_text(encoding="utf-8", errors="replace").count("Kafka Server started") >= 2 or None)
    # Records are on disk: all 20 are there to read from offset 0.
    assert sorted(_read_from_start(handle.bootstrap_servers, topic, 2, 20)) == sorted(
        b"before-%d" % i for i in range(20)
    )
    # Committed offsets are on disk: the group resumes after them.
    assert produce(handle.bootstrap_servers, topic, [(i % 2, None, b"after-%d" % i) for i in range(4)]) == 4
    with _consumer(handle.bootstrap_servers, group_id) as consumer:
        consumer.subscribe([topic])
        committed = consumer.committed(partitions)
        assert {tp.partition: c.offset for tp, c in committed.items() if c is not None} == {0: 10, 1: 10}
        got = _consume(consumer, 4)
    assert sorted(value for _, _, value in got) == [b"after-%d" % i for i in range(4)]


def test_three_nodes_keep_serving_when_one_is_killed(jvm_kafka: None, tmp_path: Path) -> None:
    phase = _Phases()
    with start_broker(kind="apache-kafka", nodes=3, log_dir=tmp_path) as handle:
        phase("3 nodes ready")
        assert handle.node_ids == (1, 2, 3)
        assert all(pid is not None for pid in handle.pids.values())
        assert len(handle.bootstrap_servers.split(",")) == 3
        for node in handle.node_ids:
            assert _listed_nodes(handle, node) == {1, 2, 3}

        handle.kill(2)
        phase("node 2 killed")

        assert handle.pids[2] is None
        with pytest.raises(ValueError, match="not running"):
            handle.kill(2)
        # The surviving quorum (2 of 3 voters) fences the dead broker: Metadata drops it.
        for node in (1, 3):
            _wait_for(
                f"node {node}'s Metadata lists only the survivors",
                lambda node=node: True if _listed_nodes(handle, node) == {1, 3} else None,
            )
        phase("node 2 fenced: Metadata lists nodes 1 and 3")
        survivors = ",".join(
            address for n, address in zip(handle.node_ids, handle.bootstrap_servers.split(","), strict=True)
            if n != 2
        )
        # ... and serves a group: the offsets topic has 3 replicas, min.insync.replicas is 1.
        topic = _unique("ak-three")
        create_topic(survivors, topic, 2)
        assert produce(survivors, topic, [(i % 2, None, b"v%d" % i) for i in range(10)]) == 10
        phase("topic created and produced to")
        with _consumer(survivors, _unique("g-three")) as consumer:
            consumer.subscribe([topic])
            assert len(_consume(consumer, 10)) == 10
            consumer.commit()
            phase("consumed and committed")
        phase("consumer closed")

        handle.start_node(2)
        phase("node 2 started again")

        assert handle.pids[2] is not None
        for node in handle.node_ids:
            assert _listed_nodes(handle, node) == {1, 2, 3}
        pids = handle.pids

        handle.restart(1)
        phase("node 1 restarted")

        assert handle.pids[1] not in (None, pids[1])
        assert handle.pids[2] == pids[2]
        assert handle.pids[3] == pids[3]
        for node in handle.node_ids:
            assert _listed_nodes(handle, node) == {1, 2, 3}
    phase("cluster stopped")
    assert handle.pids == {1: None, 2: None, 3: None}


# ----------------------------------------------------------------- selection, no JVM needed


def test_kgroup_broker_selects_apache_kafka_but_bootstrap_servers_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BOOTSTRAP_ENV_VAR, raising=False)
    monkeypatch.setenv(BROKER_ENV_VAR, "apache-kafka")
    assert selected_broker_kind() == "apache-kafka"
    assert describe_broker_selection().startswith("kafka broker: ")
    monkeypatch.setenv(BROKER_ENV_VAR, "Tansu")
    assert selected_broker_kind() == "tansu"
    monkeypatch.setenv(BOOTSTRAP_ENV_VAR, "127.0.0.1:1")
    assert selected_broker_kind() == "external"
    monkeypatch.delenv(BOOTSTRAP_ENV_VAR)
    monkeypatch.setenv(BROKER_ENV_VAR, "zookeeper")
    with pytest.raises(ValueError, match="KGROUP_BROKER"):
        selected_broker_kind()
    assert "not one of" in describe_broker_selection()


def test_missing_jars_raise_naming_the_fetch_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(apache_kafka.HOME_ENV_VAR, str(tmp_path / "empty"))
    assert apache_kafka.installed_jars() is None
    reason = apache_kafka.unavailable_reason()
    assert reason is not None
    assert "\n" not in reason
    assert apache_kafka.FETCH_COMMAND in reason
    with pytest.raises(BrokerStartError, match=r"kgroup\.testing\.apache_kafka fetch"):
        start_broker(kind="apache-kafka", log_dir=tmp_path)
    monkeypatch.setenv(apache_kafka.REQUIRE_ENV_VAR, "1")
    with pytest.raises(BrokerStartError, match="KGROUP_REQUIRE_APACHE_KAFKA"):
        apache_kafka.skip_if_unavailable()
    monkeypatch.delenv(apache_kafka.REQUIRE_ENV_VAR)
    with pytest.raises(pytest.skip.Exception, match="fetch"):
        apache_kafka.skip_if_unavailable()


def test_overrides_and_nodes_are_checked_before_anything_starts(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot be overridden"):
        start_broker(kind="apache-kafka", overrides={"listeners": "PLAINTEXT://:9092"})
    with pytest.raises(ValueError, match="nodes must be"):
        start_broker(kind="apache-kafka", nodes=0)
    with pytest.raises(ValueError, match="need kind='apache-kafka'"):
        start_broker(kind="tansu", nodes=3)
    with pytest.raises(ValueError, match="kind must be"):
        start_broker(kind="zookeeper")
    props = apache_kafka.node_properties(
        2,
        broker_ports={1: 9001, 2: 9002, 3: 9003},
        controller_ports={1: 9101, 2: 9102, 3: 9103},
        data_dir=tmp_path,
        overrides={"group.initial.rebalance.delay.ms": 0, "auto.create.topics.enable": False},
    )
    assert props["process.roles"] == "broker,controller"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:9101,2@127.0.0.1:9102,3@127.0.0.1:9103"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9002"
    assert "offsets.topic.replication.factor" not in props  # Kafka's default 3 with 3 nodes
    assert props["group.initial.rebalance.delay.ms"] == "0"
    assert props["auto.create.topics.enable"] == "false"
    single = apache_kafka.node_properties(1, broker_ports={1: 1}, controller_ports={1: 2}, data_dir=tmp_path)
    assert single["offsets.topic.replication.factor"] == "1"
    assert single["transaction.state.log.min.isr"] == "1"
    assert "group.initial.rebalance.delay.ms" not in single  # Kafka's default 3000 ms


def test_node_controls_need_apache_kafka() -> None:
    handle = BrokerHandle(bootstrap_servers="127.0.0.1:1", kind="external", version="external")
    assert handle.node_ids == ()
    assert handle.pids == {}
    with pytest.raises(NotImplementedError, match="apache-kafka"):
        handle.restart()
    with pytest.raises(NotImplementedError):
        handle.kill(1)
