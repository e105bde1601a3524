"""A share group (KIP-932) rides out its coordinator and two partition leaders SIGKILLed, on 3 Apache Kafka nodes.

Three KRaft nodes; the topic's four partitions and ``__consumer_offsets`` and
``__share_group_state`` with three replicas, ``min.insync.replicas`` 2. The topic is created
with partitions 0 and 1 led by the node that coordinates the group (FindCoordinator names it
before the group exists), 2 and 3 by the other two. Two kgroup ``ShareConsumer``s in explicit
mode acknowledge every record ACCEPT and ``commit_sync()`` each batch, while a producer writes to
every partition. Then that node is SIGKILLed: in one fault the group's coordinator moves (the
members find the new one and heartbeat to it, Java's ``ShareHeartbeatRequestManager`` over
``CoordinatorRequestManager``) and partitions 0 and 1 get new leaders (the members' ShareFetch
and ShareAcknowledge answer NOT_LEADER_OR_FOLLOWER or go unanswered; they refresh metadata and
open share sessions at the new leaders, which load the share-partition state from the share
coordinator, as Java's ``ShareConsumeRequestManager`` does).

Checked: no member error is fatal; both members heartbeat to the new coordinator within
``FAILOVER_BOUND_S`` of the kill; every partition (0 and 1 from their new leaders) hands out a
record written after the kill within ``FAILOVER_BOUND_S``; every record written is delivered and,
at the end, the group has nothing left to deliver (lag 0 on every partition,
DescribeShareGroupOffsets v1); and **no record whose ACCEPT was confirmed is delivered again**
(a record may come again only after a delivery whose acknowledgement was not confirmed: the
acknowledgement went to the dead leader, or the lock ran out).

Run with ``-s`` for the figures. No fixed sleeps: every wait is a condition with a deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kgroup import AcknowledgeType, ShareConsumer
from kgroup.admin import GroupAdmin
from kgroup.errors import ConsumerClosedError, FatalGroupError, GroupThreadCrashed, KGroupError
from kgroup.testing import start_broker
from kgroup.testing.broker import alter_group_configs
from kgroup.types import TopicPartition
from tests.integration.harness import Background, wait_until
from tests.integration.test_failover import (
    BROKER_SESSION_TIMEOUT_S,
    DURABLE,
    FORM_S,
    PARTITIONS,
    Producer,
    jvm_kafka,  # noqa: F401 (a fixture)
    topic_name,  # noqa: F401 (a fixture)
)
from tests.integration.test_kip848_failover import HeartbeatWatch

pytestmark = pytest.mark.broker_kinds("apache-kafka")

T = TypeVar("T")

#: the broker's ``group.share.heartbeat.interval.ms`` (Kafka's default is 5000)
HB_MS = 1000
OVERRIDES = {
    "group.share.heartbeat.interval.ms": HB_MS,
    "group.share.min.heartbeat.interval.ms": HB_MS,
    **DURABLE,
}
#: Asserted bound, from the SIGKILL to each member's first heartbeat answered by the new
#: coordinator and to each partition's first record written after the kill handed out: the
#: controller fences the dead node (9 s), ``__consumer_offsets`` and the topic get new leaders,
#: the new coordinator loads the group, the members rediscover it (retries doubling to
#: ``retry_backoff_max_ms``, 1 s) and the new leaders (a metadata refresh), plus 20 s for a busy
#: 2-core machine.
FAILOVER_BOUND_S = BROKER_SESSION_TIMEOUT_S + 1.0 + HB_MS / 1000 + 20.0
#: from the end of production to every record delivered and the group's lag 0: a record whose
#: acknowledgement was lost at the dead leader comes back when its lock (30 s) runs out at most
FINISH_S = 120.0


class ShareWorker(Background):
    """A kgroup ``ShareConsumer`` (explicit mode) on its own thread: poll, ACCEPT each record, ``commit_sync()``.

    ``delivered``: ``(time, partition, offset, delivery_count)`` of every record ``poll()``
    returned; ``confirmed``: ``(partition, offset) -> delivery_count`` of the deliveries whose
    ACCEPT ``commit_sync()`` answered without error; ``errors``: every ``KGroupError`` raised or
    answered (the member goes on unless the error is fatal).
    """

    FATAL = (FatalGroupError, GroupThreadCrashed, ConsumerClosedError)

    def __init__(self, name: str, bootstrap: str, group: str, topic: str) -> None:
        self.name = name
        self.topic = topic
        self.consumer: ShareConsumer[Any, Any] = ShareConsumer(
            bootstrap_servers=bootstrap, group_id=group, client_id=name,
            share_acknowledgement_mode="explicit", max_poll_records=100,
        )
        self.delivered: list[tuple[float, int, int, int]] = []
        self.confirmed: dict[tuple[int, int], int] = {}
        self.errors: list[tuple[float, str]] = []
        self.fatal: BaseException | None = None
        super().__init__(f"share-worker-{name}")

    def _run(self) -> None:
        try:
            self.consumer.subscribe([self.topic])
            while not self._stop.is_set():
                try:
                    batch = self.consumer.poll(200)
                    now = time.monotonic()
                    for r in batch:
                        self.delivered.append((now, r.partition, r.offset, r.delivery_count))
                        self.consumer.acknowledge(r, AcknowledgeType.ACCEPT)
                    if not batch:
                        continue
                    outcome = self.consumer.commit_sync(30000)
                    for tp, error in outcome.items():
                        if error is not None:
                            self.errors.append((time.monotonic(), f"{tp}: {type(error).__name__}: {error}"))
                    for r in batch:
                        tp = TopicPartition(r.topic, r.partition)
                        if tp in outcome and outcome[tp] is None:
                            self.confirmed[(r.partition, r.offset)] = r.delivery_count
                    unanswered = sorted({r.partition for r in batch} - {tp.partition for tp in outcome})
                    if unanswered:
                        self.errors.append((time.monotonic(), f"commit_sync answered nothing for {unanswered}"))
                except self.FATAL:
                    raise
                except KGroupError as exc:
                    self.errors.append((time.monotonic(), f"{type(exc).__name__}: {exc}"))
        except BaseException as exc:
            self.fatal = exc
        finally:
            try:
                self.consumer.close(10000)
            except BaseException as exc:
                self.errors.append((time.monotonic(), f"close: {type(exc).__name__}: {exc}"))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(40)
        assert not self._thread.is_alive(), f"{self.name} did not stop"


def wait_for(probe: Callable[[], T | None], timeout_s: float, what: str) -> T:
    """``probe()``'s first result that is not None, polled every 0.2 s until ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = probe()
        if result is not None:
            return result
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s} s"
        time.sleep(0.2)  # the polling interval of a condition with a deadline


def create_topic_led_by(bootstrap: str, name: str, leaders: list[int], nodes: list[int]) -> None:
    """A ``PARTITIONS``-partition topic, three replicas, partition ``p``'s preferred leader ``leaders[p]``."""
    from kafka.admin import KafkaAdminClient, NewTopic

    assignments = {p: [leader] + [n for n in nodes if n != leader] for p, leader in enumerate(leaders)}
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="share-failover-admin")
    try:
        admin.create_topics([NewTopic(name, replica_assignments=assignments)], timeout_ms=30000)

        def ready() -> bool:
            described = admin.describe_topics([name])
            parts = described[0].get("partitions") or [] if described else []
            return len(parts) == PARTITIONS and all(
                p["leader_id"] == leaders[p["partition_index"]] and len(p["isr_nodes"]) == len(nodes) for p in parts
            )

        wait_until(ready, 60, f"{name}: partitions led by {leaders}, every replica in sync")
    finally:
        admin.close()


def test_share_group_rides_out_its_coordinator_and_two_partition_leaders_killed(
    jvm_kafka: None, tmp_path: Path, topic_name: str, group_id_factory: Any  # noqa: F811
) -> None:
    started = time.monotonic()
    group = group_id_factory()
    with start_broker(kind="apache-kafka", nodes=3, log_dir=tmp_path, overrides=OVERRIDES,
                      startup_timeout_s=120) as cluster:
        ready_s = time.monotonic() - started
        boot = cluster.bootstrap_servers
        with GroupAdmin.connect(boot, timeout_ms=30000) as admin:
            coordinator = admin.find_coordinator(group).node_id
        others = sorted(n for n in cluster.node_ids if n != coordinator)
        create_topic_led_by(boot, topic_name, [coordinator, coordinator, others[0], others[1]],
                            sorted(cluster.node_ids))
        # the group reads every partition from its start (Kafka's default for a share group is latest)
        alter_group_configs(boot, group, {"share.auto.offset.reset": "earliest"})
        producer = Producer(boot, topic_name).start()
        workers = [ShareWorker(f"s{i}", boot, group, topic_name).start() for i in (1, 2)]
        watch = HeartbeatWatch(workers).start()  # type: ignore[arg-type]  # it reads .name and .consumer
        try:
            def delivered_partitions(since: float) -> set[int]:
                fresh = producer.written_since(since)
                return {p for w in workers for t, p, o, _ in list(w.delivered) if (p, o) in fresh}

            before = time.monotonic()
            wait_until(lambda: all(w.confirmed for w in workers) and delivered_partitions(before) == set(
                range(PARTITIONS)), FORM_S, f"both members accepting, every partition delivered: {describe(workers)}")
            cluster.kill(coordinator)
            killed_at = time.monotonic()

            def moved() -> int | None:  # FindCoordinator names the dead node until the controller fences it
                try:  # a new admin each time: one remembers the coordinator it found
                    with GroupAdmin.connect(boot, timeout_ms=5000) as admin:
                        node = admin.find_coordinator(group).node_id
                except KGroupError:
                    return None
                return node if node != coordinator else None

            new_coordinator = wait_for(moved, FAILOVER_BOUND_S + 30, "FindCoordinator to name another node")
            try:
                wait_until(lambda: delivered_partitions(killed_at) == set(range(PARTITIONS)), FAILOVER_BOUND_S + 30,
                           "every partition to hand out a record written after the kill")
            except AssertionError as exc:
                raise AssertionError(f"{exc}: only {sorted(delivered_partitions(killed_at))} did; "
                                     f"{describe(workers)}") from None
            first_fresh = {
                p: min(t for w in workers for t, q, o, _ in list(w.delivered)
                       if q == p and (q, o) in producer.written_since(killed_at)) - killed_at
                for p in range(PARTITIONS)
            }
            wait_until(lambda: None not in watch.first_heartbeat_to(new_coordinator, killed_at).values(),
                       FORM_S, f"both members to heartbeat to node {new_coordinator}: {describe(workers)}")
            heartbeats = watch.first_heartbeat_to(new_coordinator, killed_at)
            written = producer.stop()
            expected = {(p, o) for _, p, o in written}

            def delivered() -> set[tuple[int, int]]:
                return {(p, o) for w in workers for _, p, o, _ in list(w.delivered)}

            wait_until(lambda: not expected - delivered(), FINISH_S,
                       f"every record written delivered: {len(expected - delivered())} not yet; {describe(workers)}")
            with GroupAdmin.connect(boot, timeout_ms=30000) as admin:
                def drained() -> bool:
                    offsets = admin.share_group_offsets(group)
                    return len(offsets) == PARTITIONS and all(o.lag == 0 for o in offsets.values())

                wait_until(drained, FINISH_S, f"the group's lag 0 on every partition: {describe(workers)}")
        finally:
            watch.stop()
            producer.close()
            for w in workers:
                w.stop()
    assert all(w.fatal is None for w in workers), describe(workers)
    confirmed: dict[tuple[int, int], list[int]] = {}
    for w in workers:
        for key, count in w.confirmed.items():
            confirmed.setdefault(key, []).append(count)
    deliveries: dict[tuple[int, int], list[int]] = {}
    for w in workers:
        for _, p, o, count in w.delivered:
            deliveries.setdefault((p, o), []).append(count)
    accepted_twice = {k: v for k, v in confirmed.items() if len(v) > 1}
    assert accepted_twice == {}, accepted_twice
    again = {k: sorted(deliveries[k]) for k, (count,) in confirmed.items() if max(deliveries[k]) > count}
    assert again == {}, f"delivered again after a confirmed ACCEPT: {again}"
    assert max(heartbeats.values(), default=None) is not None
    assert max(v for v in heartbeats.values() if v is not None) <= FAILOVER_BOUND_S, heartbeats
    assert max(first_fresh.values()) <= FAILOVER_BOUND_S, first_fresh
    redelivered = sum(1 for v in deliveries.values() if len(v) > 1)
    print(
        f"\n3 nodes ready in {ready_s:.1f} s; killed node {coordinator} (the group's coordinator, leading "
        f"partitions 0 and 1); new coordinator node {new_coordinator}; after the kill: "
        + ", ".join(f"{k} heartbeat answered {v:.1f} s" for k, v in sorted(heartbeats.items()) if v is not None)
        + "; first fresh record per partition "
        + ", ".join(f"p{p} {v:.1f} s" for p, v in sorted(first_fresh.items()))
        + f" (bound {FAILOVER_BOUND_S:.0f} s); {len(written)} records written, {redelivered} delivered more than "
        f"once (their earlier acknowledgement unconfirmed); member errors: "
        f"{[e for w in workers for _, e in w.errors][:6]}"
    )


def describe(workers: list[ShareWorker]) -> str:
    return "; ".join(
        f"{w.name} owns {sorted(tp.partition for tp in w.consumer.assignment())}, delivered {len(w.delivered)}, "
        f"confirmed {len(w.confirmed)}, errors {w.errors[-3:]}, fatal {w.fatal!r}"
        for w in workers
    )
