"""Consumer.metrics() and Consumer.health() on the deterministic simulator (virtual time, no waits).

The metrics must move when the group does: a second member joining makes both members
rebalance (rebalance-total, join/sync times, listener latencies, assigned-partitions change),
commits count, records count, lag follows the high watermark. Health must turn not-live when the
poll loop stalls past max_poll_interval_ms and not-ready while the coordinator is unreachable.
"""

from __future__ import annotations

import math
import urllib.error
import urllib.request
from collections.abc import Callable

import pytest

import kgroup
from kgroup.metrics import METRICS, lag_key
from kgroup.testing.simulation import SimulatedGroup

TOPIC = "events"


class _SlowListener(kgroup.RebalanceListener):
    """Listener callbacks that take virtual time, so their latency metrics are non-zero."""

    def __init__(self, group: SimulatedGroup) -> None:
        self.group = group

    def on_partitions_assigned(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
        self.group.cluster.clock.sleep(0.05)

    def on_partitions_revoked(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
        self.group.cluster.clock.sleep(0.02)


def _app(listener: kgroup.RebalanceListener | None = None, stall: Callable[[], bool] = lambda: False):
    def app(consumer: kgroup.Consumer, running: Callable[[], bool]) -> None:
        consumer.subscribe([TOPIC], listener=listener)
        while running():
            if stall():
                # the application is stuck in its own work: no poll()
                consumer._clock.sleep(0.5)
                continue
            if consumer.poll(100):
                consumer.commit()
        consumer.close()

    return app


def test_metrics_follow_rebalances_commits_and_records() -> None:
    group = SimulatedGroup({TOPIC: 4}, seed=3)
    a = group.add_member("a", _app())
    assert group.run_until(lambda: len(a.assignment()) == 4, 30)
    before = a.metrics()
    assert set(METRICS) <= set(before)
    assert before["rebalance-total"] == 1
    assert before["assigned-partitions"] == 4
    assert before["join-total"] >= 1 and before["sync-total"] == 1
    assert before["join-time-avg"] >= 0 and before["sync-time-max"] >= 0
    assert before["rebalance-latency-max"] >= before["rebalance-latency-avg"] > 0
    # a fresh dynamic member's first JoinGroup answers MEMBER_ID_REQUIRED: Java counts it failed
    assert before["failed-rebalance-total"] == 1
    assert 0 <= before["last-rebalance-seconds-ago"] < 30
    assert math.isnan(before["commit-latency-avg"])  # nothing committed yet: no sample

    group.produce(TOPIC, 40)
    assert group.run_until(lambda: a.metrics()["records-consumed-total"] == 40, 30)
    group.run_for(7)  # heartbeats (3 s interval) go on meanwhile
    m = a.metrics()
    assert m["commit-total"] >= 1 and m["commit-latency-avg"] >= 0
    assert m["heartbeat-total"] >= 1 and 0 <= m["last-heartbeat-seconds-ago"] <= 3.5
    assert m["bytes-consumed-total"] > 0
    assert 0 <= m["last-poll-seconds-ago"] < 1
    assert m["time-between-poll-max"] >= m["time-between-poll-avg"] > 0
    for p in range(4):
        assert m[lag_key(TOPIC, p)] == 0  # caught up: position == high watermark
    assert m["records-lag-max"] == 0

    b = group.add_member("b", _app(_SlowListener(group)))
    assert group.run_until(lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, 60)
    group.run_for(1)  # b's on_partitions_assigned (50 ms) has finished
    after = a.metrics()
    assert after["rebalance-total"] == 2
    assert after["assigned-partitions"] == 2
    assert not math.isnan(after["partition-revoked-latency-avg"])  # eager: a revoked all first
    mb = b.metrics()
    assert mb["partition-assigned-latency-max"] == pytest.approx(50, abs=1)
    group.check()


def test_records_lag_is_the_high_watermark_minus_the_position() -> None:
    group = SimulatedGroup({TOPIC: 1}, seed=5)
    paused: list[bool] = []

    def app(consumer: kgroup.Consumer, running: Callable[[], bool]) -> None:
        consumer.subscribe([TOPIC])
        tp = kgroup.TopicPartition(TOPIC, 0)
        while running():
            records = consumer.poll(100)
            if records and not paused:
                consumer.pause([tp])  # stop after the first batch: the rest is lag
                consumer.seek(tp, records[0].offset + 1)
                paused.append(True)
        consumer.close()

    a = group.add_member("a", app, max_poll_records=1)
    assert group.run_until(lambda: len(a.assignment()) == 1, 30)
    group.produce(TOPIC, 10)
    assert group.run_until(lambda: bool(paused), 30)
    group.run_for(1)
    tp = kgroup.TopicPartition(TOPIC, 0)
    assert a.highwater(tp) == 10
    assert a.current_lag(tp) == 9
    assert a.metrics()[lag_key(TOPIC, 0)] == 9
    with pytest.raises(kgroup.IllegalStateError):
        a.current_lag(kgroup.TopicPartition("other", 0))
    group.check()


def test_health_turns_not_live_when_the_poll_loop_stalls() -> None:
    group = SimulatedGroup({TOPIC: 2}, seed=7)
    stalled: list[bool] = []
    a = group.add_member("a", _app(stall=lambda: bool(stalled)), max_poll_interval_ms=5000)
    assert not a.health().live or not a.health().ready  # not joined yet: not ready
    assert group.run_until(lambda: a.health().ready, 30)
    report = a.health()
    assert report.live and report.ready and report.reasons == ()
    assert report.assigned_partitions == 2
    stalled.append(True)
    assert group.run_until(lambda: not a.health().live, 10)
    report = a.health()
    assert not report.ready
    assert any("poll() not called" in r and "max_poll_interval_ms is 5000" in r for r in report.reasons)
    # the stall was past max_poll_interval_ms: at least that long after the last poll
    assert report.last_poll_seconds_ago > 5.0
    stalled.clear()
    assert group.run_until(lambda: a.health().ready, 60)
    group.stop("a")
    group.run_for(5)
    closed = a.health()
    assert not closed.live and "the consumer is closed" in closed.reasons
    group.check()


def test_health_is_not_ready_while_the_coordinator_does_not_answer() -> None:
    group = SimulatedGroup({TOPIC: 2}, seed=11)
    a = group.add_member("a", _app(), session_timeout_ms=6000, heartbeat_interval_ms=1000)
    assert group.run_until(lambda: a.health().ready, 30)
    group.black_hole(20)
    assert group.run_until(lambda: not a.health().ready, 15)
    report = a.health()
    assert report.live  # a restart would not help: the coordinator is the problem
    assert any("group coordinator" in r for r in report.reasons)
    assert group.run_until(lambda: a.health().ready, 60)
    group.check()


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_probe_endpoint_serves_livez_readyz_and_prometheus_metrics() -> None:
    group = SimulatedGroup({TOPIC: 2}, seed=13)
    stalled: list[bool] = []
    a = group.add_member("a", _app(stall=lambda: bool(stalled)), max_poll_interval_ms=5000)
    server = a.serve_health(port=0, host="127.0.0.1")
    assert _get(server.url + "/readyz")[0] == 503  # not joined yet
    assert group.run_until(lambda: a.health().ready, 30)
    group.produce(TOPIC, 4)
    assert group.run_until(lambda: a.metrics()["records-consumed-total"] == 4, 30)
    assert _get(server.url + "/livez") == (200, "ok\n")
    assert _get(server.url + "/readyz") == (200, "ok\n")
    status, text = _get(server.url + "/metrics")
    assert status == 200
    labels = 'client_id="a",group="simulated-group"'
    assert f"kafka_consumer_rebalance_total{{{labels}}} 1.0" in text
    assert f"kafka_consumer_assigned_partitions{{{labels}}} 2.0" in text
    assert f'kafka_consumer_records_lag{{{labels},partition="0",topic="{TOPIC}"}} 0.0' in text
    assert "# HELP kafka_consumer_rebalance_latency_avg" in text and "(ms;" in text
    assert _get(server.url + "/nope")[0] == 404
    stalled.append(True)
    assert group.run_until(lambda: not a.health().live, 10)
    status, body = _get(server.url + "/livez")
    assert status == 503 and "poll() not called" in body
    stalled.clear()
    group.stop("a")
    group.run_for(5)
    with pytest.raises(urllib.error.URLError):  # close() stopped the endpoint
        urllib.request.urlopen(server.url + "/livez", timeout=2)
    group.check()


def test_prometheus_collector_registers_in_a_registry() -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from kgroup.prometheus import register

    group = SimulatedGroup({TOPIC: 1}, seed=17)
    a = group.add_member("a", _app())
    assert group.run_until(lambda: len(a.assignment()) == 1, 30)
    registry = CollectorRegistry()
    register(a, registry)
    assert (
        registry.get_sample_value("kafka_consumer_rebalance_total", {"group": "simulated-group", "client_id": "a"}) == 1
    )
    assert b"kafka_consumer_join_time_avg" in generate_latest(registry)
    group.check()


def test_several_consumers_share_one_registry_and_the_probe_serves_the_default_one() -> None:
    from prometheus_client import REGISTRY, CollectorRegistry, Counter, generate_latest

    from kgroup.prometheus import exposition, register, unregister

    group = SimulatedGroup({TOPIC: 2}, seed=23)
    a = group.add_member("a", _app())
    b = group.add_member("b", _app())
    assert group.run_until(lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1, 60)
    registry = CollectorRegistry()
    register(a, registry)
    register(b, registry)  # a second consumer: no DuplicateTimeseries
    register(a, registry)  # and the same one again
    for name in ("a", "b"):
        labels = {"group": "simulated-group", "client_id": name}
        assert registry.get_sample_value("kafka_consumer_assigned_partitions", labels) == 1, name
    text = generate_latest(registry).decode()
    assert text.count("# TYPE kafka_consumer_assigned_partitions gauge") == 1
    unregister(b, registry)
    assert registry.get_sample_value(
        "kafka_consumer_assigned_partitions", {"group": "simulated-group", "client_id": "b"}
    ) is None
    # the probe's /metrics serves the default registry: the process's own metrics beside the consumers'
    mine = Counter("kgroup_test_app_events", "an application's own metric")
    try:
        mine.inc()
        body, _ctype = exposition(a)
        assert "kgroup_test_app_events_total 1.0" in body
        assert 'kafka_consumer_assigned_partitions{client_id="a",group="simulated-group"} 1.0' in body
    finally:
        REGISTRY.unregister(mine)
        unregister(a)
    group.check()


def test_docs_production_lists_every_metric() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "production.md").read_text()
    for name, info in METRICS.items():
        assert f"| `{name}` | {info.unit} |" in text, name
