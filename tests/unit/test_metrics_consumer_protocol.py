"""Metrics and health under ``group_protocol="consumer"`` (KIP-848), with the Java consumer's names.

Java's ``AsyncKafkaConsumer`` reports, in ``consumer-coordinator-metrics``, what its
``ConsumerRebalanceMetricsManager`` (rebalance-*, failed-rebalance-*, last-rebalance-seconds-ago)
and ``HeartbeatMetricsManager`` (heartbeat-*, last-heartbeat-seconds-ago) measure: a rebalance is a
reconciliation (RECONCILING entered, then left for ACKNOWLEDGING or STABLE), a failed one a
heartbeat answered with an error while it runs; there is no JoinGroup or SyncGroup, so no join-*
or sync-*. First the ``Recorder`` on a fake clock, then the group thread driving a
``ConsumerGroupMember`` against a scripted transport (join, reconcile, acknowledge, fenced), then
``Consumer.health()``'s readiness from the same numbers.
"""

from __future__ import annotations

import concurrent.futures
import math
from typing import Any

import pytest

from kgroup._driver.group_thread import GroupThread
from kgroup._driver.mailbox import Mailbox
from kgroup._error_codes import FENCED_MEMBER_EPOCH, NONE, NOT_COORDINATOR
from kgroup.config import ConsumerConfig
from kgroup.membership import commands as cmd
from kgroup.membership import events as ev
from kgroup.membership.commands import RebalanceStep
from kgroup.membership.states import MemberState
from kgroup.metrics import CLASSIC_ONLY, METRICS, Recorder
from kgroup.protocol.consumer_group_heartbeat import TopicIdPartitions
from kgroup.testing import FakeClock
from kgroup.types import TopicPartition
from tests.unit.group_thread_transport import ORDERS, ImmediateTransport


# ------------------------------------------------------------------ the Recorder
def test_consumer_heartbeats_are_the_heartbeat_metrics() -> None:
    clock = FakeClock()
    r = Recorder(clock, group_protocol="consumer")
    before = r.snapshot(0, {})
    assert before["last-heartbeat-seconds-ago"] == -1.0 and before["heartbeat-total"] == 0
    r.request_sent("consumer-heartbeat", 1)
    clock.advance(0.040)
    r.response(1, NONE)
    r.request_sent("consumer-heartbeat", 2)
    clock.advance(0.010)
    r.response(2, NOT_COORDINATOR)  # an error answer still has a round trip (HeartbeatMetricsManager)
    r.request_sent("consumer-heartbeat", 3)
    r.response(3, None)  # no answer: no round trip
    clock.advance(2.0)
    m = r.snapshot(0, {})
    assert m["heartbeat-total"] == 2
    assert m["heartbeat-response-time-max"] == pytest.approx(40.0)
    assert m["last-heartbeat-seconds-ago"] == pytest.approx(2.0)
    # Java's Rate: 2 answers over the time since the first sample began (0.04 s), padded by one
    # full 30 s window as less than one has passed (Rate.windowSize)
    assert m["heartbeat-rate"] == pytest.approx(2 / (2.05 - 0.04 + 30.0))
    assert r.last_group_ok == pytest.approx(0.040), "only an answer without error proves the coordinator"


def test_a_reconciliation_is_a_rebalance() -> None:
    clock = FakeClock()
    r = Recorder(clock, group_protocol="consumer")
    for state, dt in (("UNSUBSCRIBED", 0.0), ("JOINING", 0.1), ("RECONCILING", 0.2), ("RECONCILING", 0.05),
                      ("ACKNOWLEDGING", 0.1), ("STABLE", 1.0), ("RECONCILING", 0.0), ("STABLE", 0.5)):
        clock.advance(dt)
        r.member_state(state)
    clock.advance(3.0)
    m = r.snapshot(0, {})
    assert m["rebalance-total"] == 2
    assert m["rebalance-latency-max"] == pytest.approx(1000 * 0.5)  # the first: RECONCILING .. ACKNOWLEDGING, 0.15 s
    assert m["rebalance-latency-avg"] == pytest.approx(1000 * (0.15 + 0.5) / 2)
    assert m["rebalance-latency-total"] == pytest.approx(1000 * 0.65)
    assert m["last-rebalance-seconds-ago"] == pytest.approx(3.0)
    assert m["failed-rebalance-total"] == 0


def test_an_error_answer_during_a_reconciliation_is_a_failed_rebalance() -> None:
    clock = FakeClock()
    r = Recorder(clock, group_protocol="consumer")
    r.request_sent("consumer-heartbeat", 1)
    r.response(1, FENCED_MEMBER_EPOCH)  # no rebalance running: not counted (maybeRecordRebalanceFailed)
    r.member_state("RECONCILING")
    r.request_sent("consumer-heartbeat", 2)
    r.response(2, None)  # no answer: retriable, not counted
    r.request_sent("consumer-heartbeat", 3)
    r.response(3, FENCED_MEMBER_EPOCH)
    r.member_state("FENCED")
    r.member_state("JOINING")
    assert r.snapshot(0, {})["failed-rebalance-total"] == 1
    assert r.snapshot(0, {})["rebalance-total"] == 0, "a fenced reconciliation did not complete"
    r.member_state("RECONCILING")
    clock.advance(0.3)
    r.member_state("STABLE")
    assert r.snapshot(0, {})["rebalance-total"] == 1
    assert r.snapshot(0, {})["rebalance-latency-max"] == pytest.approx(300.0)


def test_the_consumer_protocol_reports_the_java_names_and_no_join_or_sync() -> None:
    consumer = Recorder(FakeClock(), group_protocol="consumer").snapshot(3, {("orders", 0): 5})
    classic = Recorder(FakeClock()).snapshot(3, {("orders", 0): 5})
    assert set(METRICS) <= set(classic)
    assert set(consumer) == set(classic) - CLASSIC_ONLY
    expected = {"join-time-avg", "join-time-max", "join-rate", "join-total",
                "sync-time-avg", "sync-time-max", "sync-rate", "sync-total"}
    assert expected == CLASSIC_ONLY
    for name in ("heartbeat-rate", "heartbeat-response-time-max", "last-heartbeat-seconds-ago", "rebalance-total",
                 "rebalance-latency-avg", "failed-rebalance-total", "assigned-partitions", "commit-latency-avg"):
        assert name in consumer
    assert consumer["assigned-partitions"] == 3 and consumer["records-lag{topic=orders,partition=0}"] == 5
    assert math.isnan(consumer["rebalance-latency-avg"])


def test_classic_member_states_change_nothing() -> None:
    """The classic protocol's rebalances are JoinGroup to SyncGroup; a state report alone counts none."""
    r = Recorder(FakeClock())
    r.request_sent("join", 1)
    r.response(1, NONE)
    r.request_sent("sync", 2)
    r.response(2, NONE)
    assert r.snapshot(0, {})["rebalance-total"] == 1 and r.snapshot(0, {})["join-total"] == 1


def test_the_prometheus_collector_skips_names_the_protocol_does_not_report() -> None:
    pytest.importorskip("prometheus_client")
    from kgroup.prometheus import ConsumerCollector

    class Stub:
        config = ConsumerConfig(bootstrap_servers="h:1", group_id="g", group_protocol="consumer")

        def metrics(self) -> dict[str, float]:
            return Recorder(FakeClock(), group_protocol="consumer").snapshot(0, {})

        def assignment(self) -> frozenset[TopicPartition]:
            return frozenset()

    names = {family.name for family in ConsumerCollector(Stub()).collect()}  # type: ignore[arg-type]
    assert "kafka_consumer_heartbeat_rate" in names and "kafka_consumer_rebalance_latency_avg" in names
    assert not any("join" in n or "sync" in n for n in names)


# ------------------------------------------------------------------ the group thread
class Transport(ImmediateTransport):
    """FindCoordinator, ConsumerGroupHeartbeat (scripted answers) and topic ids, answered at once."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = answers
        self.heartbeats: list[cmd.SendConsumerGroupHeartbeat] = []

    def consumer_group_heartbeat(self, command: cmd.SendConsumerGroupHeartbeat) -> concurrent.futures.Future[Any]:
        self.heartbeats.append(command)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return self.done(ev.ConsumerGroupHeartbeatResponded(request_id=command.request_id, **answer))


def pump(thread: GroupThread, mailbox: Mailbox, clock: FakeClock, rounds: int = 30,
         held: list[RebalanceStep] | None = None) -> None:
    """Run the loop body as the thread would, and the poll thread's side: each step's callbacks
    take 200 ms, or the steps wait in ``held`` (a listener still running)."""
    for _ in range(rounds):
        items = thread.take_pending()
        for item in items or [None]:
            thread.step(item)
        for message in mailbox.take_all():
            if isinstance(message, RebalanceStep):
                if held is not None:
                    held.append(message)
                    continue
                clock.advance(0.2)
                thread.post(ev.StepCompleted(message.step_id))
        if not thread.has_pending():
            clock.advance(0.1)
            thread.step(None)


ASSIGNED = {"error_code": NONE, "member_id": None, "member_epoch": 2, "heartbeat_interval_ms": 5000,
            "assignment": (TopicIdPartitions(ORDERS, (0, 1)),)}
ACKNOWLEDGED = {"error_code": NONE, "member_id": None, "member_epoch": 2, "heartbeat_interval_ms": 5000}


def test_the_group_thread_measures_a_join_and_a_fencing_as_java_does() -> None:
    clock = FakeClock()
    # (retry_backoff_ms past the listener's 200 ms: no prompt heartbeat is out when the step ends)
    config = ConsumerConfig(bootstrap_servers="h:1", group_id="g", group_protocol="consumer", retry_backoff_ms=1000)
    recorder = Recorder(clock, group_protocol="consumer")
    mailbox = Mailbox()
    transport = Transport([ASSIGNED, ACKNOWLEDGED])
    thread = GroupThread(config, transport, mailbox, clock, metrics=recorder)  # type: ignore[arg-type]
    thread.post(ev.Subscribe(frozenset({"orders"})))
    thread.post(ev.Polled())
    pump(thread, mailbox, clock)
    assert thread.snapshot.state is MemberState.STABLE
    assert thread.snapshot.owned == {TopicPartition("orders", 0), TopicPartition("orders", 1)}
    m = recorder.snapshot(2, {})
    assert m["rebalance-total"] == 1, "joining with an assignment is one reconciliation"
    assert m["rebalance-latency-max"] >= 200.0, "it lasted at least the listener's 200 ms"
    assert m["heartbeat-total"] == len(transport.heartbeats) >= 2
    assert m["failed-rebalance-total"] == 0 and m["last-heartbeat-seconds-ago"] >= 0
    assert recorder.last_group_ok is not None
    assert not set(m) & CLASSIC_ONLY

    # a new target; its listener is still running when the broker fences the member
    fenced = {"error_code": FENCED_MEMBER_EPOCH, "member_epoch": 0, "heartbeat_interval_ms": 0}
    transport.answers[:] = [
        {**ACKNOWLEDGED, "member_epoch": 3, "assignment": (TopicIdPartitions(ORDERS, (0, 1, 2)),)}, fenced,
    ]
    held: list[RebalanceStep] = []
    clock.advance(5.0)  # the heartbeat interval: the new target arrives
    pump(thread, mailbox, clock, rounds=3, held=held)
    assert held and recorder.snapshot(2, {})["failed-rebalance-total"] == 0
    clock.advance(5.0)  # the next heartbeat: fenced
    pump(thread, mailbox, clock, rounds=3, held=held)
    m = recorder.snapshot(2, {})
    assert m["failed-rebalance-total"] == 1, "fenced during a reconciliation"
    assert m["rebalance-total"] == 1, "the fenced reconciliation never completed"
    # the poll thread finishes the old step and releases the partitions as lost; the member rejoins
    transport.answers[:] = [ASSIGNED, ACKNOWLEDGED]
    for step in held:
        thread.post(ev.StepCompleted(step.step_id))
    pump(thread, mailbox, clock)
    assert thread.snapshot.state is MemberState.STABLE
    m = recorder.snapshot(2, {})
    assert (m["rebalance-total"], m["failed-rebalance-total"]) == (2, 1), "the rejoin is the next rebalance"
