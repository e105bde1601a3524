"""A peer consumer in its own process: kafka-python's KafkaConsumer or confluent-kafka's Consumer.

Run by ``tests/integration/peers.py`` (not a test module). A separate process makes a crash
real: SIGKILL leaves no LeaveGroup and no heartbeats, as a dead host would.

Arguments: ``CLIENT BOOTSTRAP GROUP TOPIC STRATEGY SESSION_TIMEOUT_MS MAX_POLL_INTERVAL_MS
[INSTANCE_ID]`` with CLIENT ``kafka-python`` or ``confluent`` and STRATEGY ``range``,
``roundrobin`` or ``cooperative-sticky``.

Output: one JSON object per line on stdout, flushed at once:
``{"event": "assigned"|"revoked"|"lost", "partitions": [[topic, partition], ...]}``,
``{"event": "error", "name": ..., "fatal": bool}``, ``{"event": "ready"}``, ``{"event": "closed"}``.

Input: one command per line on stdin: ``pause`` (stop calling poll; kafka-python's heartbeat
thread and librdkafka's background threads keep the member alive until max.poll.interval.ms),
``close`` (close the consumer cleanly and exit).
"""

from __future__ import annotations

import json
import queue
import sys
import threading


def emit(event: str, **fields: object) -> None:
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


def parts(tps: object) -> list[list[object]]:
    return sorted([tp.topic, tp.partition] for tp in tps)  # type: ignore[attr-defined]


def commands() -> queue.Queue[str]:
    q: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in sys.stdin:
            q.put(line.strip())
        q.put("close")

    threading.Thread(target=read, daemon=True).start()
    return q


def run_kafka_python(args: list[str], cmds: queue.Queue[str]) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.errors import FencedInstanceIdError, KafkaError

    bootstrap, group, topic, strategy, st, mpi = args[:6]
    instance_id = args[6] if len(args) > 6 else None
    assignor = {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "cooperative-sticky": CooperativeStickyAssignor,
    }[strategy]

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: object) -> None:
            emit("revoked", partitions=parts(revoked))

        def on_partitions_assigned(self, assigned: object) -> None:
            emit("assigned", partitions=parts(assigned))

        def on_partitions_lost(self, lost: object) -> None:
            emit("lost", partitions=parts(lost))

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        group_instance_id=instance_id,
        client_id=f"kafka-python-{instance_id or 'dynamic'}",
        session_timeout_ms=int(st),
        heartbeat_interval_ms=max(100, int(st) // 6),
        max_poll_interval_ms=int(mpi),
        partition_assignment_strategy=[assignor],
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    consumer.subscribe([topic], listener=Listener())
    emit("ready")
    paused = False
    while True:
        try:
            cmd = cmds.get(timeout=0.05 if paused else 0.0)
        except queue.Empty:
            cmd = ""
        if cmd == "close":
            consumer.close()
            emit("closed")
            return
        if cmd == "pause":
            paused = True
        if paused:
            continue
        try:
            consumer.poll(timeout_ms=100)
        except FencedInstanceIdError as exc:
            emit("error", name="FENCED_INSTANCE_ID", fatal=True, message=str(exc))
            return
        except KafkaError as exc:
            emit("error", name=type(exc).__name__, fatal=False, message=str(exc))


def run_confluent(args: list[str], cmds: queue.Queue[str]) -> None:
    from confluent_kafka import Consumer, KafkaError, KafkaException

    bootstrap, group, topic, strategy, st, mpi = args[:6]
    instance_id = args[6] if len(args) > 6 else None
    config: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": f"confluent-{instance_id or 'dynamic'}",
        "session.timeout.ms": int(st),
        "heartbeat.interval.ms": max(100, int(st) // 6),
        "max.poll.interval.ms": int(mpi),
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

    def on_assign(c: Consumer, tps: list[object]) -> None:
        emit("assigned", partitions=parts(tps))
        if strategy == "cooperative-sticky":
            c.incremental_assign(tps)
        else:
            c.assign(tps)

    def on_revoke(c: Consumer, tps: list[object]) -> None:
        emit("revoked", partitions=parts(tps))
        if strategy == "cooperative-sticky":
            c.incremental_unassign(tps)
        else:
            c.unassign()

    def on_lost(c: Consumer, tps: list[object]) -> None:
        emit("lost", partitions=parts(tps))
        if strategy == "cooperative-sticky":
            c.incremental_unassign(tps)
        else:
            c.unassign()

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    emit("ready")
    paused = False
    while True:
        try:
            cmd = cmds.get(timeout=0.05 if paused else 0.0)
        except queue.Empty:
            cmd = ""
        if cmd == "close":
            consumer.close()
            emit("closed")
            return
        if cmd == "pause":
            paused = True
        if paused or fatal:
            if fatal and not paused:
                paused = True
            continue
        try:
            msg = consumer.poll(0.1)
        except KafkaException as exc:
            emit("error", name=str(exc), fatal=True)
            return
        err = msg.error() if msg is not None else None
        if err is not None and err.code() != KafkaError._PARTITION_EOF:
            text = err.str()
            if err.code() == KafkaError._FATAL:
                # librdkafka surfaces a fatal error as a _FATAL message error whose text names
                # the underlying broker error ("Static consumer fenced by other consumer ...")
                fatal.append(err)
                name = "FENCED_INSTANCE_ID" if "fenced" in text.lower() else err.name()
                emit("error", name=name, fatal=True, message=text)
            else:
                emit("error", name=err.name(), fatal=err.fatal(), message=text)


def main() -> None:
    client, *args = sys.argv[1:]
    cmds = commands()
    if client == "kafka-python":
        run_kafka_python(args, cmds)
    elif client == "confluent":
        run_confluent(args, cmds)
    else:
        raise SystemExit(f"unknown client {client!r}")


if __name__ == "__main__":
    main()
