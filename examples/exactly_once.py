"""Exactly-once consume-transform-produce: kgroup's consumer, kafka-python's transactional producer.

Run it::

    KGROUP_BROKER=apache-kafka PYTHONPATH=. python examples/exactly_once.py        # ~1 min
    KGROUP_BOOTSTRAP_SERVERS=host:9092 PYTHONPATH=. python examples/exactly_once.py

The demo starts an Apache Kafka node of its own (the Apache Kafka jars, ``python -m
kgroup.testing.apache_kafka fetch``) unless ``KGROUP_BOOTSTRAP_SERVERS`` names a cluster,
writes ``RECORDS`` orders to an input topic, runs two worker processes of this program
(``--serve``) that copy each order to an output topic in transactions, kills one of them with
SIGKILL half way, and reads the output with ``isolation_level="read_committed"``: every order
must be there exactly once. The last line is ``PASS: ...`` or ``FAIL: ...``.

A worker (``python examples/exactly_once.py --serve``, configured by the environment: ``INPUT``,
``OUTPUT``, ``GROUP``, ``TRANSACTIONAL_ID``, ``GROUP_PROTOCOL``, ``KGROUP_BOOTSTRAP_SERVERS``)
is the loop docs/exactly-once.md explains (KIP-447):

1. ``records = consumer.poll()`` (``enable_auto_commit=False``, ``isolation_level="read_committed"``);
2. ``producer.begin_transaction()``, ``producer.send(...)`` the transformed records;
3. ``producer.send_offsets_to_transaction(offsets, consumer.group_metadata())``: the next
   offset of each partition, in kgroup's ``TopicPartition``/``OffsetAndMetadata``, committed
   with the transaction, only while this member still holds its generation;
4. ``producer.commit_transaction()``.

On an error the transaction is aborted and the consumer rewound to the committed offsets, so the
aborted batch is processed again (by this member, or by the partition's next owner). A fatal
producer error (``ProducerFencedError``: the transaction coordinator gave the transactional id a
newer epoch, after a transaction timeout or another producer with the same id) cannot be
aborted: the producer is closed and built again (``init_transactions()`` fences the old one).
An ``AuthorizationError`` (an ACL) stops the worker: no retry helps.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import (
    AuthorizationError,
    KafkaError,
    OutOfOrderSequenceNumberError,
    ProducerFencedError,
    UnsupportedVersionError,
)
from kafka.structs import TopicPartition as KafkaTopicPartition

import kgroup

#: the producer cannot go on after these: close it and build a new one (Java's KafkaProducer docs)
FATAL = (ProducerFencedError, OutOfOrderSequenceNumberError, UnsupportedVersionError)

#: ``before_offsets(txn, producer)``: called between the records sent and the offsets sent
Hook = Callable[[int, KafkaProducer], None]


def transform(record: kgroup.ConsumerRecord[bytes, bytes], worker: str, txn: int) -> bytes:
    """The "transform" of consume-transform-produce: the order, and who copied it in which transaction."""
    order = record.value.decode() if record.value is not None else None
    return json.dumps({"order": order, "by": worker, "txn": txn}).encode()


def next_offsets(
    records: Iterable[kgroup.ConsumerRecord[Any, Any]],
) -> dict[kgroup.TopicPartition, kgroup.OffsetAndMetadata]:
    """The offset of the record after the last one of each partition: what the transaction commits."""
    offsets = {}
    for record in records:  # in offset order within each partition
        offsets[kgroup.TopicPartition(record.topic, record.partition)] = kgroup.OffsetAndMetadata(
            record.offset + 1, "", record.leader_epoch
        )
    return offsets


def rewind(consumer: kgroup.Consumer) -> None:
    """Back to the committed offsets (the aborted batch is read again); beginning where none."""
    partitions = consumer.assignment()
    try:
        committed = consumer.committed(partitions)
        for tp in partitions:
            found = committed.get(tp)
            if found is not None:
                consumer.seek(tp, found.offset)
            else:
                consumer.seek_to_beginning([tp])
    except kgroup.KGroupError as exc:
        # the member lost its partitions meanwhile: the next poll() rejoins and the partitions'
        # owners start from the committed offsets anyway
        print(f"rewind skipped: {type(exc).__name__}: {exc}", flush=True)


class Printer(kgroup.RebalanceListener):
    """One line per rebalance callback: what changed and what the worker owns now."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.owned: set[kgroup.TopicPartition] = set()

    def _print(self, what: str, partitions: frozenset[kgroup.TopicPartition]) -> None:
        print(f"{self.name}: {what} {sorted(str(tp) for tp in partitions)}; "
              f"owns {sorted(tp.partition for tp in self.owned)}", flush=True)

    def on_partitions_assigned(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
        self.owned |= partitions
        self._print("assigned", partitions)

    def on_partitions_revoked(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
        self.owned -= partitions
        self._print("revoked", partitions)

    def on_partitions_lost(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
        self.owned -= partitions
        self._print("lost", partitions)


def serve(
    name: str,
    consumer: kgroup.Consumer,
    make_producer: Callable[[], KafkaProducer],
    output: str,
    running: Callable[[], bool],
    *,
    work_s: float = 0.0,
    before_offsets: Hook | None = None,
) -> int:
    """The consume-transform-produce loop; returns the records committed.

    ``before_offsets(txn, producer)`` runs after the batch's records are sent and before its
    offsets are (tests stop the process there: a member frozen in the middle of a transaction).
    """
    producer = make_producer()
    producer.init_transactions()
    committed = txn = 0
    while running():
        try:
            records = consumer.poll(timeout_ms=500)
        except kgroup.WakeupError:
            break
        if not records:
            continue
        txn += 1
        try:
            producer.begin_transaction()
            for record in records:
                time.sleep(work_s)  # the processing
                producer.send(output, key=record.key, value=transform(record, name, txn))
            if before_offsets is not None:
                before_offsets(txn, producer)
            producer.send_offsets_to_transaction(next_offsets(records), consumer.group_metadata())
            producer.commit_transaction()
        except AuthorizationError:  # an ACL refuses the transactional id, the group or a topic
            raise  # no retry helps: stop (the consumer closes and leaves the group)
        except FATAL as exc:
            print(f"{name}: transaction {txn} failed, new producer after {type(exc).__name__}: {exc}", flush=True)
            producer.close(timeout=5)
            producer = make_producer()
            producer.init_transactions()  # a new epoch: the old producer's transaction is aborted
            rewind(consumer)
            continue
        except KafkaError as exc:
            print(f"{name}: transaction {txn} aborted: {type(exc).__name__}: {exc}", flush=True)
            try:
                producer.abort_transaction()
            except KafkaError as fatal:  # the abort itself failed: a producer in a fatal state
                print(f"{name}: abort failed ({type(fatal).__name__}): new producer", flush=True)
                producer.close(timeout=5)
                producer = make_producer()
                producer.init_transactions()
            rewind(consumer)
            continue
        committed += len(records)
        print(f"{name}: committed transaction {txn}: {len(records)} records, {committed} in all", flush=True)
    producer.close(timeout=10)
    return committed


def worker_main(before_offsets: Hook | None = None) -> int:
    """``--serve``: one worker, configured by the environment; SIGTERM stops it cleanly."""
    env = os.environ
    name = env.get("WORKER", f"worker-{os.getpid()}")
    bootstrap = env["KGROUP_BOOTSTRAP_SERVERS"]
    stop = threading.Event()
    protocol = env.get("GROUP_PROTOCOL", "classic")
    # the classic protocol's session is the member's to set; the consumer protocol's, the group's (KIP-848)
    session: dict[str, Any] = {}
    if protocol == "classic" and "SESSION_TIMEOUT_MS" in env:
        session = {"session_timeout_ms": int(env["SESSION_TIMEOUT_MS"]), "heartbeat_interval_ms": 1000}
    consumer: kgroup.Consumer = kgroup.Consumer(
        bootstrap_servers=bootstrap,
        group_id=env.get("GROUP", "exactly-once-example"),
        client_id=name,
        group_protocol=protocol,
        enable_auto_commit=False,  # offsets go with the transactions
        isolation_level="read_committed",  # the input may be another transactional job's output
        auto_offset_reset="earliest",
        max_poll_records=int(env.get("MAX_POLL_RECORDS", "100")),
        **session,
    )

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()
        consumer.wakeup()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def make_producer() -> KafkaProducer:
        return KafkaProducer(
            bootstrap_servers=bootstrap,
            client_id=name,
            transactional_id=env.get("TRANSACTIONAL_ID", f"{name}-{uuid.uuid4().hex[:8]}"),
            transaction_timeout_ms=int(env.get("TRANSACTION_TIMEOUT_MS", "60000")),
            acks="all",
        )

    consumer.subscribe([env["INPUT"]], listener=Printer(name))
    try:
        total = serve(name, consumer, make_producer, env["OUTPUT"], lambda: not stop.is_set(),
                      work_s=float(env.get("WORK_MS", "0")) / 1000, before_offsets=before_offsets)
    finally:
        consumer.close(timeout_ms=10000)
    print(f"{name}: stopped: {total} records committed", flush=True)
    return 0


# ---------------------------------------------------------------- checking the output
def read_output(bootstrap: str, topic: str, isolation_level: str = "read_committed",
                timeout_s: float = 60.0) -> list[dict[str, Any]]:
    """Every record of ``topic`` up to its end (the last stable offset under read_committed)."""
    reader = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation_level,
                           enable_auto_commit=False, group_id=None, consumer_timeout_ms=1000)
    try:
        partitions = [KafkaTopicPartition(topic, p) for p in sorted(reader.partitions_for_topic(topic) or ())]
        reader.assign(partitions)
        reader.seek_to_beginning(*partitions)
        end = reader.end_offsets(partitions)
        out: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout_s
        while any(reader.position(tp) < end[tp] for tp in partitions):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: not read to its end offsets {end} in {timeout_s} s")
            for batch in reader.poll(timeout_ms=500).values():
                out += [json.loads(r.value) for r in batch]
        return out
    finally:
        reader.close()


def exactly_once(orders: Iterable[str], output: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """The orders missing from the output, and the ones there more than once."""
    seen = Counter(record["order"] for record in output)
    expected = list(orders)
    return [o for o in expected if seen[o] == 0], sorted(o for o, n in seen.items() if n > 1)


# ---------------------------------------------------------------- the demo
def demo() -> int:
    from kgroup.testing import create_topic, produce, start_broker

    records = int(os.environ.get("RECORDS", "2000"))
    run_dir = Path(tempfile.mkdtemp(prefix="exactly-once-"))
    kind = None if os.environ.get("KGROUP_BOOTSTRAP_SERVERS") or os.environ.get("KGROUP_BROKER") else "apache-kafka"
    broker = start_broker(kind=kind, log_dir=run_dir)
    workers: list[subprocess.Popen[bytes]] = []
    try:
        bootstrap = broker.bootstrap_servers
        suffix = uuid.uuid4().hex[:8]
        topic_in, topic_out, group = f"orders-{suffix}", f"copies-{suffix}", f"copier-{suffix}"
        create_topic(bootstrap, topic_in, 6)
        create_topic(bootstrap, topic_out, 6)
        orders = [f"order-{i}" for i in range(records)]
        produce(bootstrap, topic_in, ((o.encode(), o.encode()) for o in orders), timeout_s=120)
        print(f"kafka broker: {broker.kind} {broker.version} at {bootstrap}; {records} orders in {topic_in}")
        env = {**os.environ, "KGROUP_BOOTSTRAP_SERVERS": bootstrap, "INPUT": topic_in, "OUTPUT": topic_out,
               "GROUP": group, "WORK_MS": os.environ.get("WORK_MS", "5"), "SESSION_TIMEOUT_MS": "6000",
               "TRANSACTION_TIMEOUT_MS": "10000"}
        for i in range(2):
            log = open(run_dir / f"worker-{i}.log", "wb")  # noqa: SIM115  (the worker's own)
            workers.append(subprocess.Popen([sys.executable, __file__, "--serve"], stdout=log,
                                            stderr=subprocess.STDOUT, env={**env, "WORKER": f"worker-{i}"}))

        def copied() -> int:
            return len(read_output(bootstrap, topic_out))

        deadline = time.monotonic() + 240
        while copied() < records // 3 and time.monotonic() < deadline:
            time.sleep(0.5)  # poll until a third is copied
        workers[0].kill()  # SIGKILL in the middle of a transaction, most likely
        print(f"worker-0 killed with {copied()} orders copied")
        while copied() < records and time.monotonic() < deadline:
            time.sleep(0.5)
        output = read_output(bootstrap, topic_out)
        missing, twice = exactly_once(orders, output)
        aborted = len(read_output(bootstrap, topic_out, "read_uncommitted")) - len(output)
        print(f"logs: {run_dir}")
        if missing or twice:
            print(f"FAIL: {len(missing)} orders missing (first {missing[:5]}), {len(twice)} copied twice "
                  f"(first {twice[:5]})")
            return 1
        print(f"PASS: {records}/{records} orders copied exactly once (read_committed); "
              f"{aborted} copies in aborted transactions not visible")
        return 0
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.terminate()
        for worker in workers:
            try:
                worker.wait(30)
            except subprocess.TimeoutExpired:
                worker.kill()
        broker.stop()


if __name__ == "__main__":
    sys.exit(worker_main() if "--serve" in sys.argv[1:] else demo())
