"""The group coordinator SIGKILLed under the consumer group protocol (KIP-848), on 3 Apache Kafka nodes.

``tests/integration/test_failover.py``'s coordinator kill, with two
``Consumer(group_protocol="consumer")`` members (its ``Scenario``, ``Producer``,
``CommittedMonitor`` and checks): three KRaft nodes, the topic and ``__consumer_offsets`` with
three replicas; the members consume and commit (after every batch, every 200 ms anyway, and
inside ``on_partitions_revoked``) while a producer writes to every partition. The group's
coordinator (FindCoordinator) is SIGKILLed. The controller fences the dead node after
``broker.session.timeout.ms`` (9 s), the group's ``__consumer_offsets`` partition gets a new
leader, which loads the consumer group (its members, epochs and assignments) and the offsets;
the members rediscover the coordinator (Java's ``CoordinatorRequestManager``) and heartbeat
to it with the epochs they hold (Java's ``ConsumerHeartbeatRequestManager``).

Checked: every acknowledged record is consumed; the committed offsets never go backwards (but for
stale reads right after the offsets partition moves, undone by the next samples:
``CommittedMonitor.backwards``) and those committed before the kill survive it; both members
heartbeat to the new coordinator (an answer without error while their snapshot names it) and commit to it within
``FAILOVER_BOUND_S`` of the kill; records written after the kill are handed out within
``CONSUME_LAG_BOUND_S`` of their acknowledgement; no partition is owned by two members at once
(from the listener callbacks' times) and every partition has one owner again; no member error
is fatal. The broker's consumer-group heartbeat interval is 1000 ms (as the classic test's
``heartbeat_interval_ms``), the session timeout Kafka's 45 s.

Run with ``-s`` for the figures. No fixed sleeps: every wait is a condition with a deadline.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from kgroup.admin import GroupAdmin
from kgroup.testing import start_broker
from tests.integration.harness import Background, EventLog, RecordingListener, wait_until
from tests.integration.test_failover import (
    BROKER_SESSION_TIMEOUT_S,
    CONSUME_LAG_BOUND_S,
    DURABLE,
    FORM_S,
    Scenario,
    Worker,
    create_replicated_topic,
    jvm_kafka,  # noqa: F401 (a fixture)
    kill_coordinator,
    topic_name,  # noqa: F401 (a fixture)
)
from tests.integration.test_kip848_consumer import owners_never_overlap

pytestmark = pytest.mark.broker_kinds("apache-kafka")

#: the broker's ``group.consumer.heartbeat.interval.ms`` (Kafka's default is 5000)
HB_MS = 1000
OVERRIDES = {
    "group.consumer.heartbeat.interval.ms": HB_MS,
    "group.consumer.min.heartbeat.interval.ms": HB_MS,
    **DURABLE,  # min.insync.replicas 2, as the classic failover test (its module docstring says why)
}
#: Asserted bound, from the SIGKILL to each member's first heartbeat answered by the new
#: coordinator and its first commit accepted by it: the controller fences the dead node (9 s),
#: ``__consumer_offsets`` gets a new leader that loads the group, then the members' rediscovery
#: (FindCoordinator retried with ``retry_backoff_ms`` doubling to ``retry_backoff_max_ms``, 1 s)
#: and a heartbeat interval, plus 15 s for a busy 2-core machine (as the classic test allows).
FAILOVER_BOUND_S = BROKER_SESSION_TIMEOUT_S + 1.0 + HB_MS / 1000 + 15.0


class HeartbeatWatch(Background):
    """Every 50 ms: each member's coordinator (its group thread's snapshot) and its last error-free heartbeat answer."""

    def __init__(self, workers: list[Worker]) -> None:
        self.workers = workers
        #: (time, member, coordinator node id or None, when the coordinator last answered without error)
        self.samples: list[tuple[float, str, int | None, float | None]] = []
        super().__init__("heartbeat-watch")

    def _run(self) -> None:
        while not self._stop.wait(0.05):  # the sampling interval, not synchronisation
            for w in self.workers:
                group = w.consumer._group
                if group is not None:
                    self.samples.append(
                        (time.monotonic(), w.name, group.snapshot.coordinator, w.consumer._metrics.last_group_ok)
                    )

    def first_heartbeat_to(self, node_id: int, since: float) -> dict[str, float | None]:
        """Per member, seconds from ``since`` to the first sample naming ``node_id`` with an answer after ``since``."""
        out: dict[str, float | None] = {w.name: None for w in self.workers}
        for t, name, coordinator, ok_at in list(self.samples):
            if out[name] is None and t > since and coordinator == node_id and ok_at is not None and ok_at > since:
                out[name] = ok_at - since
        return out

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def test_coordinator_killed_consumer_protocol_members_move_to_the_new_one(
    jvm_kafka: None, tmp_path: Path, topic_name: str, group_id_factory: Any  # noqa: F811
) -> None:
    started = time.monotonic()
    log = EventLog()

    def make_worker(name: str, bootstrap: str, group: str, topic: str) -> Worker:
        worker = Worker(name, bootstrap, group, topic, group_protocol="consumer", session_timeout_ms=None,
                        heartbeat_interval_ms=None)
        worker.listener = RecordingListener(name, log, lambda: worker.consumer, commit_on_revoke=True)
        return worker

    with start_broker(kind="apache-kafka", nodes=3, log_dir=tmp_path, overrides=OVERRIDES,
                      startup_timeout_s=120) as cluster:
        ready_s = time.monotonic() - started
        create_replicated_topic(cluster.bootstrap_servers, topic_name, 3)
        group = group_id_factory()
        scenario = Scenario(cluster, topic_name, group, make_worker)
        watch = HeartbeatWatch(scenario.workers).start()
        try:
            before = scenario.steady()
            coordinator, killed_at = kill_coordinator(cluster, group)
            resumed = scenario.resumed(killed_at, FAILOVER_BOUND_S)
            with GroupAdmin.connect(cluster.bootstrap_servers, timeout_ms=10000) as admin:
                now_coordinator = admin.find_coordinator(group)
            assert now_coordinator.node_id != coordinator.node_id
            wait_until(lambda: None not in watch.first_heartbeat_to(now_coordinator.node_id, killed_at).values(),
                       FORM_S, f"both members to heartbeat to node {now_coordinator.node_id}: {scenario.describe()}")
            heartbeats = watch.first_heartbeat_to(now_coordinator.node_id, killed_at)
            wait_until(scenario.split, FORM_S, f"every partition owned once again: {scenario.describe()}")
            written, final = scenario.finish()
        finally:
            watch.stop()
            scenario.stop()
    assert max(v for v in heartbeats.values() if v is not None) <= FAILOVER_BOUND_S, heartbeats
    try:
        scenario.check(before, killed_at, final)
    except AssertionError as exc:  # the listener callbacks say who owned what when
        raise AssertionError(f"{exc}; killed at {killed_at:.3f}; callbacks: " + "; ".join(
            f"{e.t_start:.3f}-{e.t_end:.3f} {e.member} {e.kind} {sorted(tp.partition for tp in e.partitions)} "
            f"epoch {e.generation}"
            for e in log.events)) from None
    assert owners_never_overlap(log) == [], owners_never_overlap(log)
    assert not log.of("lost"), [(e.member, sorted(tp.partition for tp in e.partitions)) for e in log.of("lost")]
    print(
        f"\n3 nodes ready in {ready_s:.1f} s; killed coordinator node {coordinator.node_id}, new coordinator node "
        f"{now_coordinator.node_id}; after the kill: "
        + ", ".join(f"{k} heartbeat answered {v:.1f} s" for k, v in sorted(heartbeats.items()) if v is not None)
        + ", " + ", ".join(f"{k} {v:.1f} s" for k, v in sorted(resumed.items()))
        + f" (bounds: heartbeat and commits {FAILOVER_BOUND_S:.0f} s, consumed {CONSUME_LAG_BOUND_S:.0f} s after "
        f"acknowledged); {len(written)} records written, {scenario.monitor.failures} monitor reads failed meanwhile; "
        f"member errors: {[e for w in scenario.workers for _, e in w.errors][:6]}; callbacks: "
        + "; ".join(f"{e.member} {e.kind} {sorted(tp.partition for tp in e.partitions)} epoch {e.generation}"
                    for e in log.events)
    )
