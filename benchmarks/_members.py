"""One group member in its own process, for ``benchmarks/rebalance.py`` (not a benchmark itself).

    python benchmarks/_members.py '{"client": "kgroup"|"kafka-python"|"confluent"|"java", "bootstrap": ...,
        "group": ..., "topic": ..., "assignor": "range"|"cooperative-sticky",
        "instance_id": null|"...", "client_id": "...", "session_timeout_ms": 10000,
        "heartbeat_interval_ms": 1000, "auto_commit_interval_ms": 1000, "group_protocol": "classic"|"consumer"}'

``"group_protocol": "consumer"`` (kgroup and java only) runs the consumer group protocol of
KIP-848: the session timeout, heartbeat interval and assignor are then the broker's
(``group.consumer.*``), and the member sets none of them, as Java requires.

Every client is configured alike: the given session timeout and heartbeat interval, auto-commit
every ``auto_commit_interval_ms``, ``auto_offset_reset="earliest"``, Kafka's default
``max_poll_interval_ms`` (300 s, also the rebalance timeout), a 100 ms poll loop.

Output: one JSON object per line on stdout, flushed at once, each with ``"t"`` = ``time.time()``:

* ``{"event": "start"}``: just before the consumer object is built (imports done);
* ``{"event": "assigned"|"revoked"|"lost", "partitions": [p, ...]}``: from the rebalance
  listener (EAGER: revoked = everything, assigned = everything; COOPERATIVE: only the change);
* ``{"event": "record", "partition": p, "offset": o, "produced": t}``: the first record of a
  partition after it was (re)assigned (``produced`` is the producer's ``time.time()`` in the value);
* ``{"event": "closing"}`` before ``close()`` (the member stops processing), ``{"event": "closed"}``;
* ``{"event": "error", "message": ...}``.

Input: ``close`` on stdin (or end of stdin) closes the consumer. A static member
(``instance_id``) closes without LeaveGroup in all four clients (Java's default, KIP-345).

``"client": "java"`` is Apache Kafka's own ``KafkaConsumer`` (classic protocol), a JVM running
``tests/peers/JavaPeer.java --mode bench`` with the same configuration and the same events
(:func:`java_argv` builds its command with :mod:`tests.peers.java`; this module does not run
it). ``"start"`` then comes after the JVM started and loaded the class, so "spawn -> start"
includes the JVM's start.
``"java_clients"`` names the kafka-clients version (default: the Apache Kafka jars, 4.4.0; on
Tansu the benchmarks pass ``tests.peers.java.TANSU_JAVA_CLIENTS``).

The line protocol and its helpers are the peer harness's (:mod:`tests.peers`), which the tests'
peers use too; ``PYTHONPATH`` must hold the repository root (``benchmarks/rebalance.py`` sets it).
"""

from __future__ import annotations

import json
import os
import queue
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

from tests.peers.child import commands, emitter
from tests.peers.java import java_command

emit = emitter(time.time)


class Tracker:
    """Emits listener events and the first record of each partition after each assignment."""

    def __init__(self) -> None:
        self.fresh: set[int] = set()  # assigned, no record seen yet since

    def assigned(self, partitions: Iterable[int]) -> None:
        ps = sorted(partitions)
        self.fresh.update(ps)
        emit("assigned", partitions=ps)

    def revoked(self, partitions: Iterable[int], kind: str = "revoked") -> None:
        ps = sorted(partitions)
        self.fresh.difference_update(ps)
        emit(kind, partitions=ps)

    def record(self, partition: int, offset: int, value: bytes | None) -> None:
        if partition in self.fresh:
            self.fresh.discard(partition)
            try:
                produced = float(value.decode()) if value else None
            except ValueError:
                produced = None
            emit("record", partition=partition, offset=offset, produced=produced)


def _loop(cmds: queue.Queue[str], poll: Callable[[], None], close: Callable[[], None]) -> None:
    while True:
        try:
            cmd = cmds.get_nowait()
        except queue.Empty:
            cmd = ""
        if cmd == "close":
            emit("closing")
            close()
            emit("closed")
            return
        try:
            poll()
        except Exception as exc:  # reported, the member goes on (a fatal one repeats)
            emit("error", message=f"{type(exc).__name__}: {exc}"[:300])
            time.sleep(0.1)


def run_kgroup(cfg: dict[str, Any], cmds: queue.Queue[str]) -> None:
    import kgroup

    tracker = Tracker()

    class Listener(kgroup.RebalanceListener):
        def on_partitions_assigned(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
            tracker.assigned(tp.partition for tp in partitions)

        def on_partitions_revoked(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
            tracker.revoked(tp.partition for tp in partitions)

        def on_partitions_lost(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
            tracker.revoked((tp.partition for tp in partitions), "lost")

    emit("start")
    if cfg.get("group_protocol", "classic") == "consumer":
        # KIP-848: the broker decides the session timeout, the heartbeat interval and the assignor
        protocol: dict[str, Any] = {"group_protocol": "consumer"}
    else:
        protocol = {
            "session_timeout_ms": cfg["session_timeout_ms"],
            "heartbeat_interval_ms": cfg["heartbeat_interval_ms"],
            "assignors": (cfg["assignor"],),
        }
    consumer = kgroup.Consumer(
        bootstrap_servers=cfg["bootstrap"],
        group_id=cfg["group"],
        group_instance_id=cfg.get("instance_id"),
        client_id=cfg.get("client_id", "bench"),
        **protocol,
        enable_auto_commit=True,
        auto_commit_interval_ms=cfg["auto_commit_interval_ms"],
        auto_offset_reset="earliest",
    )
    consumer.subscribe([cfg["topic"]], Listener())

    def poll() -> None:
        for r in consumer.poll(timeout_ms=100):
            tracker.record(r.partition, r.offset, r.value)

    _loop(cmds, poll, lambda: consumer.close())


def run_kafka_python(cfg: dict[str, Any], cmds: queue.Queue[str]) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    tracker = Tracker()

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            tracker.revoked(tp.partition for tp in revoked)

        def on_partitions_assigned(self, assigned: Any) -> None:
            tracker.assigned(tp.partition for tp in assigned)

        def on_partitions_lost(self, lost: Any) -> None:
            tracker.revoked((tp.partition for tp in lost), "lost")

    assignor = {"range": RangePartitionAssignor, "cooperative-sticky": CooperativeStickyAssignor}[cfg["assignor"]]
    emit("start")
    consumer = KafkaConsumer(
        bootstrap_servers=cfg["bootstrap"],
        group_id=cfg["group"],
        group_instance_id=cfg.get("instance_id"),
        client_id=cfg.get("client_id", "bench"),
        session_timeout_ms=cfg["session_timeout_ms"],
        heartbeat_interval_ms=cfg["heartbeat_interval_ms"],
        partition_assignment_strategy=[assignor],
        enable_auto_commit=True,
        auto_commit_interval_ms=cfg["auto_commit_interval_ms"],
        auto_offset_reset="earliest",
    )
    consumer.subscribe([cfg["topic"]], listener=Listener())

    def poll() -> None:
        for records in consumer.poll(timeout_ms=100).values():
            for r in records:
                tracker.record(r.partition, r.offset, r.value)

    _loop(cmds, poll, lambda: consumer.close())


def run_confluent(cfg: dict[str, Any], cmds: queue.Queue[str]) -> None:
    from confluent_kafka import Consumer, KafkaError

    tracker = Tracker()
    cooperative = cfg["assignor"] == "cooperative-sticky"
    config: dict[str, Any] = {
        "bootstrap.servers": cfg["bootstrap"],
        "group.id": cfg["group"],
        "client.id": cfg.get("client_id", "bench"),
        "session.timeout.ms": cfg["session_timeout_ms"],
        "heartbeat.interval.ms": cfg["heartbeat_interval_ms"],
        "partition.assignment.strategy": cfg["assignor"],
        "enable.auto.commit": True,
        "auto.commit.interval.ms": cfg["auto_commit_interval_ms"],
        "auto.offset.reset": "earliest",
        "error_cb": lambda err: emit("error", message=str(err)[:300]),
    }
    if cfg.get("instance_id"):
        config["group.instance.id"] = cfg["instance_id"]
    emit("start")
    consumer = Consumer(config)

    def on_assign(c: Any, tps: list[Any]) -> None:
        tracker.assigned(tp.partition for tp in tps)
        if cooperative:
            c.incremental_assign(tps)
        else:
            c.assign(tps)

    def on_revoke(c: Any, tps: list[Any]) -> None:
        tracker.revoked(tp.partition for tp in tps)
        if cooperative:
            c.incremental_unassign(tps)
        else:
            c.unassign()

    def on_lost(c: Any, tps: list[Any]) -> None:
        tracker.revoked((tp.partition for tp in tps), "lost")
        if cooperative:
            c.incremental_unassign(tps)
        else:
            c.unassign()

    consumer.subscribe([cfg["topic"]], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)

    def poll() -> None:
        msg = consumer.poll(0.1)
        if msg is None:
            return
        err = msg.error()
        if err is not None:
            if err.code() != KafkaError._PARTITION_EOF:
                emit("error", message=err.str()[:300])
            return
        tracker.record(msg.partition(), msg.offset(), msg.value())

    _loop(cmds, poll, lambda: consumer.close())


def run_producer(cfg: dict[str, Any], cmds: queue.Queue[str]) -> None:
    """``{"client": "producer", "bootstrap", "topic", "partitions", "rate"}``: ``rate`` records/s per
    partition, every partition in turn, value = ``time.time()`` as text; emits ``sent`` every second."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cfg["bootstrap"], "linger.ms": 5, "acks": "all"})
    partitions = int(cfg["partitions"])
    interval = 1.0 / float(cfg["rate"])
    sent = 0
    emit("start")
    next_tick = time.monotonic()
    next_report = next_tick + 1.0
    while True:
        try:
            if cmds.get_nowait() == "close":
                break
        except queue.Empty:
            pass
        now = time.monotonic()
        if now < next_tick:
            time.sleep(min(next_tick - now, 0.05))
            continue
        next_tick += interval
        for p in range(partitions):
            producer.produce(cfg["topic"], value=repr(time.time()).encode(), partition=p)
        sent += partitions
        producer.poll(0)
        if now >= next_report:
            next_report += 1.0
            emit("sent", count=sent)
    producer.flush(10)
    emit("closed", count=sent)


def java_argv(cfg: dict[str, Any]) -> list[str]:
    """The Java member's command for ``cfg`` (the JSON object this module takes)."""
    consumer = cfg.get("group_protocol", "classic") == "consumer"  # the broker assigns: no --assignors
    args = [
        "--mode", "bench", "--bootstrap", cfg["bootstrap"], "--group", cfg["group"], "--topic", cfg["topic"],
        *([] if consumer else ["--assignors", cfg["assignor"]]), "--client-id", cfg.get("client_id", "bench"),
        "--session-timeout-ms", str(cfg["session_timeout_ms"]),
        "--heartbeat-interval-ms", str(cfg["heartbeat_interval_ms"]),
        "--auto-commit-interval-ms", str(cfg["auto_commit_interval_ms"]),
        "--group-protocol", cfg.get("group_protocol", "classic"),
    ]
    if cfg.get("instance_id"):
        args += ["--instance-id", cfg["instance_id"]]
    return java_command(args, compiled=True, clients_version=cfg.get("java_clients"))


def main() -> None:
    cfg = json.loads(sys.argv[1])
    log_dir = os.environ.get("KGROUP_BENCH_LOG")
    if log_dir:  # each member's own log, for a run's post-mortem (the clients' INFO lines)
        import logging

        logging.basicConfig(
            filename=os.path.join(log_dir, f"{cfg.get('slot', 'member')}-{os.getpid()}.log"), level=logging.INFO,
            format="%(asctime)s.%(msecs)03d %(threadName)s %(name)s %(levelname)s %(message)s", datefmt="%H:%M:%S",
        )
    cmds = commands()
    runner = {
        "kgroup": run_kgroup,
        "kafka-python": run_kafka_python,
        "confluent": run_confluent,
        "producer": run_producer,
    }[cfg["client"]]
    try:
        runner(cfg, cmds)
    except Exception as exc:
        emit("error", message=f"fatal {type(exc).__name__}: {exc}"[:300])
        raise


if __name__ == "__main__":
    main()
