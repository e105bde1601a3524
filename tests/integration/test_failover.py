"""Broker faults the embedded Tansu cannot give: Apache Kafka restarted, and its coordinator killed.

Each test starts Apache Kafka of its own (``kgroup.testing.start_broker(kind="apache-kafka")``,
Kafka's defaults: ``group.initial.rebalance.delay.ms`` 3 s, ``broker.session.timeout.ms`` 9 s)
and runs two kgroup members that poll and commit (after every batch, and every 200 ms anyway)
while a producer writes to every partition all along (kafka-python, ``acks=all``; it retries a
send until its 120 s delivery timeout, so every record is acknowledged in the end). A monitor
reads the group's committed offsets (OffsetFetch through ``kgroup.admin.GroupAdmin``) every
200 ms.

1. The single node is restarted with its data (SIGTERM, then started again on the same ports and
   log directory) while the members consume and commit.
2. Three KRaft nodes; the topic and ``__consumer_offsets`` have three replicas, and
   ``min.insync.replicas`` is 2 (``DURABLE``): with Kafka's default 1, a follower that falls out
   of the ISR on a starved machine leaves the leader acknowledging alone, and killing it loses
   acknowledged records and commits (Kafka's documented durability condition: ``acks=all``
   with ``min.insync.replicas`` at least 2 of 3 replicas; seen once in CI as a committed offset
   going back after the kill). The group's
   coordinator (FindCoordinator, ``GroupAdmin.find_coordinator``) is SIGKILLed: the controller
   fences it after ``broker.session.timeout.ms``, the group's ``__consumer_offsets`` partition
   gets a new leader, which loads the group; the members find it and go on.

Checked in both: every acknowledged record is consumed at least once; the committed offset of a
partition never goes backwards (monitor samples, in order; but for a stale read right after the
offsets partition moves, which the next samples undo: Kafka's new leader answers from its high
watermark until its followers catch up, ``CommittedMonitor.backwards``); the offsets committed before the
fault are still there after it; both members commit again, within a bound of the fault
(``RESTART_BOUND_S``, ``FAILOVER_BOUND_S``), and hand out records written after the fault
within ``CONSUME_LAG_BOUND_S`` of the producer getting them acknowledged; every partition has
exactly one owner again; no member's error is fatal. The measured times are printed (``-s``).
kgroup is not told about the fault: it finds out as a real deployment would.

No fixed sleeps: every wait is a condition with a deadline. Skipped with one line when Java or
the Apache Kafka jars are missing (``python -m kgroup.testing.apache_kafka fetch``); with
``KGROUP_REQUIRE_APACHE_KAFKA=1`` that fails instead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import kgroup
from kgroup import TopicPartition
from kgroup.admin import GroupAdmin
from kgroup.errors import ConsumerClosedError, GroupThreadCrashed
from kgroup.testing import BrokerHandle, apache_kafka, start_broker

from .groupcheck import ContinuousProducer
from .harness import Background, all_partitions, wait_until

pytestmark = pytest.mark.broker_kinds("apache-kafka")

PARTITIONS = 4
ST = 6000  # session_timeout_ms: Kafka's minimum
HB = 1000
INTERVAL_S = 0.05  # the producer writes one record to every partition this often
FORM_S = 60.0
#: Kafka's broker.session.timeout.ms: how long the controller waits before fencing a dead node
BROKER_SESSION_TIMEOUT_S = 9.0
#: Asserted bound, from the SIGKILL to each member's first commit accepted by the new coordinator:
#: the controller fences the dead node (9 s), ``__consumer_offsets`` gets a new leader that loads
#: the group, then at most a session timeout (6 s) of the members' backoff and rediscovery, plus
#: 15 s for a busy 2-core machine.
FAILOVER_BOUND_S = BROKER_SESSION_TIMEOUT_S + ST / 1000 + 15.0
#: The same after a graceful restart of the single node, from when it answers again.
RESTART_BOUND_S = ST / 1000 + 15.0
#: Asserted bound on consuming again: from the first acknowledgement of a record written after the
#: fault to a member handing out such a record, per partition. Measured from the acknowledgement
#: because the test's producer (kafka-python) itself sometimes needs 20 s or more to write again
#: after a broker restart; kafka-python's own KafkaConsumer hands such records out within a second.
CONSUME_LAG_BOUND_S = 10.0
#: How long the producer and the members get, in all, to be writing and consuming again.
RECOVERY_S = 60.0


# --------------------------------------------------------------------------- the pieces


def kill_coordinator(cluster: Any, group: str) -> tuple[Any, float]:
    """SIGKILL the node coordinating ``group`` (returns once the JVM is reaped): its FindCoordinator
    answer, and when."""
    with GroupAdmin.connect(cluster.bootstrap_servers, timeout_ms=10000) as admin:
        coordinator = admin.find_coordinator(group)
    assert coordinator.node_id in cluster.node_ids
    cluster.kill(coordinator.node_id)
    return coordinator, time.monotonic()


class Producer(ContinuousProducer):
    """One record to every partition each ``INTERVAL_S`` (``acks=all``), on its own thread; when each
    was sent, and when acknowledged."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(bootstrap, topic, PARTITIONS, INTERVAL_S, acks="all", linger_ms=5)
        self._sent: list[tuple[float, Any]] = []  # (when sent, future)
        #: (partition, offset) -> when its acknowledgement arrived
        self.acked: dict[tuple[int, int], float] = {}

    def _send(self, partition: int, value: bytes) -> None:
        future = self._producer.send(self.topic, value, partition=partition)
        future.add_callback(self._on_ack)
        self._sent.append((time.monotonic(), future))

    def _on_ack(self, md: Any) -> None:
        self.acked[(md.partition, md.offset)] = time.monotonic()

    def written_since(self, since: float) -> dict[tuple[int, int], float]:
        """``(partition, offset) -> when sent`` of the records sent after ``since`` and acknowledged so far."""
        out = {}
        for sent_at, future in list(self._sent):
            if sent_at > since and future.is_done and future.succeeded():
                md = future.value
                out[(md.partition, md.offset)] = sent_at
        return out

    def stop(self) -> list[tuple[float, int, int]]:
        """Stop, flush, and return ``(when sent, partition, offset)`` of every record written."""
        self._stop.set()
        self._thread.join(10)
        self._producer.flush(150)
        written = []
        for sent_at, future in self._sent:
            md = future.get(timeout=150)  # a record that could not be written fails the test here
            written.append((sent_at, md.partition, md.offset))
        self._producer.close(10)
        assert not self.errors, self.errors
        return written

    def close(self) -> None:
        if not self._stop.is_set():
            self._stop.set()
            self._producer.close(0)


class Worker(Background):
    """A kgroup member on its own thread: poll, then commit what it handed out, until stopped.

    It commits after every non-empty batch and otherwise every ``COMMIT_EVERY_S`` (the same
    positions again: a round trip to the coordinator, so a member's commits show when it reaches
    the coordinator whether or not records are flowing). Records ``(time, partition, offset)`` of
    every record handed out, the time of every commit that succeeded, and every exception
    ``poll()`` or ``commit()`` raised (the member goes on unless the error is fatal).
    """

    COMMIT_EVERY_S = 0.2

    FATAL = (kgroup.FatalGroupError, GroupThreadCrashed, ConsumerClosedError)

    def __init__(self, name: str, bootstrap: str, group: str, topic: str, **config: Any) -> None:
        self.name = name
        settings: dict[str, Any] = {
            "session_timeout_ms": ST, "heartbeat_interval_ms": HB, "enable_auto_commit": False,
            "auto_offset_reset": "earliest", "max_poll_records": 100,
        }
        settings.update(config)  # a setting given as None is left out
        self.consumer = kgroup.Consumer(
            bootstrap_servers=bootstrap, group_id=group, client_id=name,
            **{k: v for k, v in settings.items() if v is not None},
        )
        #: the rebalance listener ``subscribe()`` gets (None: none)
        self.listener: kgroup.RebalanceListener | None = None
        self.topic = topic
        self.consumed: list[tuple[float, int, int]] = []
        self.commits: list[float] = []
        #: (time, partition -> offset) of every commit it started: what a failure report shows
        self.commit_log: list[tuple[float, dict[int, int]]] = []
        self.errors: list[tuple[float, str]] = []
        self.fatal: BaseException | None = None
        super().__init__(f"worker-{name}")

    def _run(self) -> None:
        try:
            self.consumer.subscribe([self.topic], listener=self.listener)
            last_commit = 0.0
            while not self._stop.is_set():
                try:
                    batch = self.consumer.poll(200)
                    now = time.monotonic()
                    self.consumed.extend((now, r.partition, r.offset) for r in batch)
                    if self.consumer.assignment() and (batch or now - last_commit >= self.COMMIT_EVERY_S):
                        last_commit = now
                        self.commit_log.append((now, {tp.partition: om.offset for tp, om in
                                                      self.consumer._prepare_offsets(None).items()}))
                        self.consumer.commit()
                        self.commits.append(time.monotonic())
                except self.FATAL:
                    raise
                except kgroup.KGroupError as exc:
                    self.errors.append((time.monotonic(), f"{type(exc).__name__}: {exc}"))
        except BaseException as exc:
            self.fatal = exc
        finally:
            try:
                self.consumer.close(10000)
            except BaseException as exc:
                self.errors.append((time.monotonic(), f"close: {type(exc).__name__}: {exc}"))

    def assignment(self) -> frozenset[TopicPartition]:
        return self.consumer.assignment()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive(), f"{self.name} did not stop"


class CommittedMonitor(Background):
    """Samples the group's committed offsets every 200 ms (OffsetFetch via ``GroupAdmin``)."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self.group = group
        self.admin = GroupAdmin.connect(bootstrap, timeout_ms=10000, client_id="committed-monitor")
        self.samples: list[tuple[float, dict[int, int]]] = []
        self.failures = 0
        super().__init__("committed-monitor")

    def read(self) -> dict[int, int]:
        committed = self.admin.committed_offsets(self.group, timeout_ms=3000)
        return {tp.partition: om.offset for tp, om in committed.items()}

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            try:
                self.samples.append((time.monotonic(), self.read()))
            except kgroup.KGroupError:
                self.failures += 1  # the coordinator is away: nothing to compare

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(15)
        self.admin.close()

    def backwards(self, fault_at: float | None = None) -> tuple[list[str], list[str]]:
        """Samples in which a partition's committed offset is lower than in an earlier one: (defects, stale reads).

        A stale read is one after ``fault_at`` that a later sample undoes (back at or above the
        offset it fell from, within ``STALE_READ_S``): Apache Kafka's reads right after the
        ``__consumer_offsets`` partition moves. The new leader starts from its high watermark as
        a follower knew it, which can lag the old leader's (the last commit records are in its
        log, above that mark); the group coordinator loads every record but answers OffsetFetch
        from its committed snapshot, at the high watermark, until the followers have fetched
        the rest. The commits are not lost: the next samples show them. Any other fall is a
        defect: a commit lost, or an older offset written over a newer one.
        """
        best: dict[int, tuple[float, int]] = {}
        falls: list[tuple[int, float, int, float, int]] = []
        for t, offsets in self.samples:
            for p, offset in sorted(offsets.items()):
                if p in best and offset < best[p][1]:
                    falls.append((p, t, offset, best[p][0], best[p][1]))
                if p not in best or offset > best[p][1]:
                    best[p] = (t, offset)
        bad, stale = [], []
        for p, t, offset, best_t, best_offset in falls:
            line = f"partition {p}: {offset} at {t:.3f} after {best_offset} at {best_t:.3f}"
            undone = any(t < later_t <= t + STALE_READ_S and later.get(p, -1) >= best_offset
                         for later_t, later in self.samples)
            (stale if fault_at is not None and t > fault_at and undone else bad).append(line)
        return bad, stale


class CoordinatorLog(logging.Handler):
    """kgroup's "discovered coordinator N" log lines, with the time they were logged."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.discovered: list[tuple[float, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "discovered coordinator" in message:
            self.discovered.append((time.monotonic(), message))


@pytest.fixture
def coordinator_log() -> Iterator[CoordinatorLog]:
    logger = logging.getLogger("kgroup.membership.machine")
    handler = CoordinatorLog()
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.fixture
def jvm_kafka(broker_kind: str) -> None:
    """Skip (one line) when Java or the jars are missing; fail instead with KGROUP_REQUIRE_APACHE_KAFKA=1.

    These tests always start Apache Kafka of their own, also when the run is external.
    """
    apache_kafka.skip_if_unavailable()


#: The 3-node cluster's one override: an acknowledged write is on two replicas at least
DURABLE = {"min.insync.replicas": 2}
#: how soon a stale read of the committed offsets after the fault must be undone (CommittedMonitor.backwards)
STALE_READ_S = 30.0


def create_replicated_topic(bootstrap: str, name: str, replicas: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="failover-admin")
    try:
        admin.create_topics([NewTopic(name, PARTITIONS, replicas)], timeout_ms=30000)
        expected = all_partitions(name, PARTITIONS)

        def ready() -> bool:
            described = admin.describe_topics([name])
            parts = described[0].get("partitions") or [] if described else []
            return (
                {TopicPartition(name, p["partition_index"]) for p in parts} == expected
                and all(p["leader_id"] >= 0 and len(p["isr_nodes"]) == replicas for p in parts)
            )

        wait_until(ready, 60, f"{name}: every partition with a leader and {replicas} in-sync replicas")
    finally:
        admin.close()


class Scenario:
    """A topic, the producer, two workers and the monitor on one cluster; the test brings the fault."""

    def __init__(self, broker: BrokerHandle, topic: str, group: str,
                 make_worker: Callable[[str, str, str, str], Worker] = Worker) -> None:
        self.broker = broker
        self.topic, self.group = topic, group
        boot = broker.bootstrap_servers
        self.producer = Producer(boot, topic).start()
        self.workers = [make_worker(f"w{i}", boot, group, topic).start() for i in (1, 2)]
        self.monitor = CommittedMonitor(boot, group).start()

    def split(self) -> bool:
        owned = [w.assignment() for w in self.workers]
        return all(owned) and sum(map(len, owned)) == PARTITIONS and frozenset().union(*owned) == all_partitions(
            self.topic, PARTITIONS)

    def steady(self) -> dict[int, int]:
        """Wait until both own partitions and have committed, then return the committed offsets."""
        wait_until(self.split, FORM_S, f"the two members to split the partitions: {self.describe()}")
        wait_until(lambda: all(w.commits for w in self.workers), FORM_S, "both members to commit")
        wait_until(lambda: len(self.monitor.samples) >= 3 and len(self.monitor.samples[-1][1]) == PARTITIONS,
                   FORM_S, "committed offsets for every partition")
        return self.monitor.samples[-1][1]

    def progress(self, since: float) -> dict[str, float | None]:
        """Seconds from ``since`` to each worker's first commit completed after it and, per
        partition, to the first acknowledgement of a record sent after it and to the first such
        record handed out (``None``: not yet)."""
        out: dict[str, float | None] = {}
        for w in self.workers:
            commit = next((t for t in list(w.commits) if t > since), None)
            out[f"{w.name} commit"] = None if commit is None else commit - since
        fresh = self.producer.written_since(since)
        acked: dict[int, float] = {}
        for (p, o) in fresh:
            t = self.producer.acked.get((p, o))
            if t is not None and (p not in acked or t < acked[p]):
                acked[p] = t
        consumed: dict[int, float] = {}
        for w in self.workers:
            for t, p, o in list(w.consumed):
                if (p, o) in fresh and (p not in consumed or t < consumed[p]):
                    consumed[p] = t
        for p in range(PARTITIONS):
            out[f"p{p} acked"] = acked[p] - since if p in acked else None
            out[f"p{p} consumed"] = consumed[p] - since if p in consumed else None
        return out

    def resumed(self, since: float, commit_bound_s: float) -> dict[str, float]:
        """Wait until both workers committed and every partition was written and consumed again
        after ``since``; assert the bounds (commits within ``commit_bound_s`` of ``since``, each
        partition consumed within ``CONSUME_LAG_BOUND_S`` of its first acknowledgement)."""
        wait_until(lambda: None not in self.progress(since).values(), RECOVERY_S,
                   f"both members to commit and every partition to be written and consumed again: "
                   f"{self.progress(since)}; {self.describe()}")
        figures = {k: v for k, v in self.progress(since).items() if v is not None}
        commits = {k: v for k, v in figures.items() if k.endswith("commit")}
        assert max(commits.values()) <= commit_bound_s, figures
        lags = {p: figures[f"p{p} consumed"] - figures[f"p{p} acked"] for p in range(PARTITIONS)}
        assert max(lags.values()) <= CONSUME_LAG_BOUND_S, (lags, figures)
        return figures

    def finish(self) -> tuple[list[tuple[float, int, int]], dict[int, int]]:
        """Stop producing, wait until every record written was consumed, stop everything.

        Returns every ``(sent at, partition, offset)`` written and the final committed offsets.
        """
        written = self.producer.stop()
        expected = {(p, o) for _, p, o in written}
        wait_until(lambda: not expected - self.consumed(), FORM_S,
                   "every record written to be consumed")
        ends = {p: max(o for _, q, o in written if q == p) + 1 for p in range(PARTITIONS)}
        wait_until(lambda: self.monitor.read() == ends, FORM_S, f"the commits to reach the log ends {ends}")
        final = self.monitor.read()
        self.stop()
        return written, final

    def consumed(self) -> set[tuple[int, int]]:
        return {(p, o) for w in self.workers for _, p, o in list(w.consumed)}

    def stop(self) -> None:
        self.producer.close()
        for w in self.workers:
            w.stop()
        self.monitor.stop()

    def describe(self) -> str:
        return f"producer: {len(self.producer.acked)} of {len(self.producer._sent)} acknowledged; " + "; ".join(
            f"{w.name} owns {sorted(tp.partition for tp in w.assignment())}, consumed {len(w.consumed)}, "
            f"commits {len(w.commits)}, errors {w.errors[-3:]}, fatal {w.fatal!r}"
            for w in self.workers
        )

    def commits_of(self, backwards: list[str]) -> str:
        """What each worker committed to the partitions ``backwards`` names (each change of value once), and its
        errors: a failure's report."""
        named = {int(line.split()[1].rstrip(":")) for line in backwards}
        out = []
        for w in self.workers:
            changes, last = [], {}
            for t, offsets in w.commit_log:
                for p, o in sorted(offsets.items()):
                    if p in named and last.get(p) != o:
                        changes.append(f"{t:.3f} p{p}={o}")
                        last[p] = o
            out.append(f"{w.name} committed {', '.join(changes)}; errors {w.errors}")
        return "; ".join(out)

    def check(self, before: dict[int, int], fault_at: float, final: dict[int, int]) -> None:
        assert all(w.fatal is None for w in self.workers), self.describe()
        backwards, stale = self.monitor.backwards(fault_at)
        assert backwards == [], f"{backwards}; {self.commits_of(backwards)}"
        if stale:  # Kafka's, after the offsets partition moved (CommittedMonitor.backwards): shown, not failed
            print(f"\nstale committed offsets read after the fault, then read again: {stale}")
        after = [offsets for t, offsets in self.monitor.samples if t > fault_at and offsets]
        assert after, "no committed offsets were read after the fault"
        for p, offset in before.items():  # the offsets committed before the fault survived it
            assert after[0].get(p, -1) >= offset, (p, offset, after[0])
            assert final[p] >= offset


# --------------------------------------------------------------------------- the tests


def test_single_broker_restart_keeps_records_and_commits_and_members_resume(
    jvm_kafka: None, tmp_path: Path, topic_name: str, group_id_factory
) -> None:
    with start_broker(kind="apache-kafka", log_dir=tmp_path) as broker:
        create_replicated_topic(broker.bootstrap_servers, topic_name, 1)
        scenario = Scenario(broker, topic_name, group_id_factory())
        try:
            before = scenario.steady()
            restart_at = time.monotonic()
            broker.restart()  # SIGTERM, wait for exit, start again on the same ports and data
            back_at = time.monotonic()
            resumed = scenario.resumed(back_at, RESTART_BOUND_S)
            wait_until(scenario.split, FORM_S, f"every partition owned once again: {scenario.describe()}")
            written, final = scenario.finish()
        finally:
            scenario.stop()
    scenario.check(before, restart_at, final)
    print(f"\nrestart (stop and start) took {back_at - restart_at:.1f} s; after it: "
          + ", ".join(f"{k} {v:.1f} s" for k, v in sorted(resumed.items()))
          + f" (bounds: commits {RESTART_BOUND_S:.0f} s, consumed {CONSUME_LAG_BOUND_S:.0f} s after acknowledged); "
          f"{len(written)} records written, "
          f"{scenario.monitor.failures} monitor reads failed meanwhile; member errors: "
          f"{[e for w in scenario.workers for _, e in w.errors][:6]}")


def test_coordinator_killed_in_a_three_node_cluster_members_move_to_the_new_one(
    jvm_kafka: None, tmp_path: Path, topic_name: str, group_id_factory, coordinator_log: CoordinatorLog
) -> None:
    started = time.monotonic()
    with start_broker(kind="apache-kafka", nodes=3, log_dir=tmp_path, overrides=DURABLE,
                      startup_timeout_s=120) as cluster:
        ready_s = time.monotonic() - started
        create_replicated_topic(cluster.bootstrap_servers, topic_name, 3)
        group = group_id_factory()
        scenario = Scenario(cluster, topic_name, group)
        try:
            before = scenario.steady()
            coordinator, killed_at = kill_coordinator(cluster, group)
            resumed = scenario.resumed(killed_at, FAILOVER_BOUND_S)
            wait_until(scenario.split, FORM_S, f"every partition owned once again: {scenario.describe()}")
            found = [(t - killed_at, m) for t, m in coordinator_log.discovered if t > killed_at and group in m]
            new = [(dt, m) for dt, m in found if f"coordinator {coordinator.node_id} " not in m]
            with GroupAdmin.connect(cluster.bootstrap_servers, timeout_ms=10000) as admin:
                now_coordinator = admin.find_coordinator(group)
            written, final = scenario.finish()
        finally:
            scenario.stop()
    assert now_coordinator.node_id != coordinator.node_id
    assert new, f"no member logged discovering a new coordinator: {found}"
    scenario.check(before, killed_at, final)
    print(
        f"\n3 nodes ready in {ready_s:.1f} s; killed coordinator node {coordinator.node_id}, new coordinator node "
        f"{now_coordinator.node_id}; first discovery of it {new[0][0]:.1f} s after the kill; after the kill: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in sorted(resumed.items()))
        + f" (bounds: commits {FAILOVER_BOUND_S:.0f} s, consumed {CONSUME_LAG_BOUND_S:.0f} s after acknowledged); "
        f"{len(written)} records written, "
        f"{scenario.monitor.failures} monitor reads failed meanwhile; member errors: "
        f"{[e for w in scenario.workers for _, e in w.errors][:6]}"
    )


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    import uuid

    return f"failover-{request.node.originalname}-{uuid.uuid4().hex[:8]}"
