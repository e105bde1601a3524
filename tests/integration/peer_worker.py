"""A peer consumer in its own process: kafka-python's KafkaConsumer or confluent-kafka's Consumer.

Run by ``tests/integration/peers.py`` (not a test module), on the peer harness of
:mod:`tests.peers` (its ``PYTHONPATH`` holds the repository root). A separate process makes a crash
real: SIGKILL leaves no LeaveGroup and no heartbeats, as a dead host would.

Argument: one JSON object with ``client`` (``kafka-python`` or ``confluent``), ``bootstrap``,
``group``, ``topic``, ``strategy`` (``range``, ``roundrobin`` or ``cooperative-sticky``; the
assignor, and so the rebalance protocol: eager for the first two, KIP-429 cooperative for the
last; kafka-python also takes a comma-separated list in order of preference, of one rebalance
protocol: kafka-python 3.0 refuses to mix EAGER and COOPERATIVE assignors, as librdkafka does),
``session_timeout_ms``, ``heartbeat_interval_ms``, ``max_poll_interval_ms``, and
optionally ``instance_id`` (KIP-345), ``client_id`` (the prefix of the member id the
coordinator hands out, so a test can tell who leads), ``record`` (report every record
handed out) and ``commit`` (commit synchronously after every non-empty batch, so that a
handed-out record is committed before the next ``poll()``).

Output: one JSON object per line on stdout, flushed at once, each with ``t``, the child's
``time.monotonic()`` (CLOCK_MONOTONIC is system-wide on Linux, so it compares with the
parent's ``time.monotonic()``):

* ``{"event": "assigned", "partitions": [[topic, partition], ...]}``: stamped when the
  callback starts (before the partitions are fetched);
* ``{"event": "revoked"|"lost", "partitions": [...]}``: stamped when the callback has given
  the partitions up (after ``unassign``);
* ``{"event": "records", "records": [[partition, offset], ...]}``: stamped when ``poll()``
  returned them (only with ``record``);
* ``{"event": "commit_failed", "name": ...}`` (only with ``commit``);
* ``{"event": "error", "name": ..., "fatal": bool}``, ``{"event": "ready"}``,
  ``{"event": "closing"}`` (no ``poll()`` after it), ``{"event": "closed"}``.

Apache Kafka's Java consumer speaks the same protocol (``tests/peers/JavaPeer.java``, started
by ``peers.Peer`` with ``client="java"``).

Input: one command per line on stdin: ``pause`` (stop calling poll; kafka-python's heartbeat
thread and librdkafka's background threads keep the member alive until max.poll.interval.ms),
``close`` (close the consumer cleanly and exit).
"""

from __future__ import annotations

import json
import logging
import queue
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from tests.peers.child import commands, dump_stacks_on_signal, emitter
from tests.peers.kafka_python import keep_finished_joins

emit = emitter(time.monotonic)


def parts(tps: object) -> list[list[object]]:
    return sorted([tp.topic, tp.partition] for tp in tps)  # type: ignore[attr-defined]


def poll_turns(cmds: queue.Queue[str], consumer: Any, halted: Callable[[], bool] = lambda: False) -> Iterator[None]:
    """One turn per poll the peer should make, until the ``close`` command (which closes ``consumer``).

    After ``pause``, or once ``halted()`` (a fatal error), there are no more turns: the peer
    only waits for ``close``.
    """
    paused = False
    while True:
        try:
            cmd = cmds.get(timeout=0.05 if paused else 0.0)
        except queue.Empty:
            cmd = ""
        if cmd == "close":
            emit("closing")
            consumer.close()
            emit("closed")
            return
        if cmd == "pause" or halted():
            paused = True
        if not paused:
            yield


def run_kafka_python(opts: dict[str, Any], cmds: queue.Queue[str]) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.errors import FencedInstanceIdError, KafkaError

    strategy = opts["strategy"]
    instance_id = opts.get("instance_id")
    known = {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "cooperative-sticky": CooperativeStickyAssignor,
    }
    assignors = [known[name.strip()] for name in strategy.split(",") if name.strip()]

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: object) -> None:
            emit("revoked", partitions=parts(revoked))

        def on_partitions_assigned(self, assigned: object) -> None:
            emit("assigned", partitions=parts(assigned))

        def on_partitions_lost(self, lost: object) -> None:
            emit("lost", partitions=parts(lost))

    keep_finished_joins()
    consumer = KafkaConsumer(
        bootstrap_servers=opts["bootstrap"],
        group_id=opts["group"],
        group_instance_id=instance_id,
        client_id=opts.get("client_id") or f"kafka-python-{instance_id or 'dynamic'}",
        session_timeout_ms=opts["session_timeout_ms"],
        heartbeat_interval_ms=opts["heartbeat_interval_ms"],
        max_poll_interval_ms=opts["max_poll_interval_ms"],
        partition_assignment_strategy=assignors,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    consumer.subscribe([opts["topic"]], listener=Listener())
    emit("ready")
    for _ in poll_turns(cmds, consumer):
        try:
            batches = consumer.poll(timeout_ms=100)
            returned = time.monotonic()
            if batches and opts.get("record"):
                emit("records", t=returned, records=[[r.partition, r.offset] for rs in batches.values() for r in rs])
            if batches and opts.get("commit"):
                try:
                    consumer.commit()
                except KafkaError as exc:
                    emit("commit_failed", name=type(exc).__name__)
        except FencedInstanceIdError as exc:
            emit("error", name="FENCED_INSTANCE_ID", fatal=True, message=str(exc))
            return
        except KafkaError as exc:
            emit("error", name=type(exc).__name__, fatal=False, message=str(exc))


def run_confluent(opts: dict[str, Any], cmds: queue.Queue[str]) -> None:
    from confluent_kafka import Consumer, KafkaError, KafkaException

    strategy = opts["strategy"]
    instance_id = opts.get("instance_id")
    config: dict[str, object] = {
        "bootstrap.servers": opts["bootstrap"],
        "group.id": opts["group"],
        "client.id": opts.get("client_id") or f"confluent-{instance_id or 'dynamic'}",
        "session.timeout.ms": opts["session_timeout_ms"],
        "heartbeat.interval.ms": opts["heartbeat_interval_ms"],
        "max.poll.interval.ms": opts["max_poll_interval_ms"],
        "partition.assignment.strategy": strategy,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    if instance_id:
        config["group.instance.id"] = instance_id
    fatal: list[KafkaError] = []

    def on_error(err: KafkaError) -> None:
        is_fatal = err.fatal()
        name = err.name()
        if is_fatal:
            # librdkafka reports a fenced static member as a fatal error wrapping FENCED_INSTANCE_ID
            fatal.append(err)
            if "FENCED" in str(err).upper():
                name = "FENCED_INSTANCE_ID"
        emit("error", name=name, fatal=is_fatal, message=err.str())

    config["error_cb"] = on_error
    consumer = Consumer(config)
    cooperative = strategy == "cooperative-sticky"  # librdkafka mixes no eager and cooperative assignors

    def on_assign(c: Consumer, tps: list[object]) -> None:
        emit("assigned", partitions=parts(tps))
        if cooperative:
            c.incremental_assign(tps)
        else:
            c.assign(tps)

    def giving_up(kind: str) -> Callable[[Consumer, list[object]], None]:
        """on_revoke ("revoked") or on_lost ("lost"): unassign, then report."""

        def callback(c: Consumer, tps: list[object]) -> None:
            if cooperative:
                c.incremental_unassign(tps)
            else:
                c.unassign()
            emit(kind, partitions=parts(tps))

        return callback

    consumer.subscribe([opts["topic"]], on_assign=on_assign, on_revoke=giving_up("revoked"), on_lost=giving_up("lost"))
    emit("ready")
    for _ in poll_turns(cmds, consumer, halted=lambda: bool(fatal)):
        try:
            msgs = consumer.consume(num_messages=500, timeout=0.1)
        except KafkaException as exc:
            emit("error", name=str(exc), fatal=True)
            return
        returned = time.monotonic()
        good = []
        for msg in msgs:
            err = msg.error()
            if err is None:
                good.append(msg)
            elif err.code() != KafkaError._PARTITION_EOF:
                text = err.str()
                if err.code() == KafkaError._FATAL:
                    # librdkafka surfaces a fatal error as a _FATAL message error whose text names
                    # the underlying broker error ("Static consumer fenced by other consumer ...")
                    fatal.append(err)
                    name = "FENCED_INSTANCE_ID" if "fenced" in text.lower() else err.name()
                    emit("error", name=name, fatal=True, message=text)
                else:
                    emit("error", name=err.name(), fatal=err.fatal(), message=text)
        if good and opts.get("record"):
            records = [[m.partition(), m.offset()] for m in good]
            emit("records", t=returned, records=records)
        if good and opts.get("commit"):
            try:
                consumer.commit(asynchronous=False)
            except KafkaException as exc:
                emit("commit_failed", name=str(exc.args[0].name() if exc.args else exc))


def log_to_stderr() -> None:
    """The client's own log on stderr (the parent keeps it only with ``log_path``): kafka-python's
    coordinator at DEBUG, stamped with ``time.monotonic()`` as the events are."""

    class Monotonic(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            record.mono = time.monotonic()
            return True

    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(Monotonic())
    handler.setFormatter(logging.Formatter("%(mono).3f %(threadName)s %(name)s %(levelname)s %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    logging.getLogger("kafka.coordinator").setLevel(logging.DEBUG)


def main() -> None:
    opts = json.loads(sys.argv[1])
    dump_stacks_on_signal()
    log_to_stderr()
    cmds = commands()
    if opts["client"] == "kafka-python":
        run_kafka_python(opts, cmds)
    elif opts["client"] == "confluent":
        run_confluent(opts, cmds)
    else:
        raise SystemExit(f"unknown client {opts['client']!r}")


if __name__ == "__main__":
    main()
