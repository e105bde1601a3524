"""A share-group member (KIP-932) as a peer process: kgroup's ``ShareConsumer`` or confluent-kafka's.

Run as ``python -m tests.peers.share_peer --client kgroup|confluent --bootstrap HOST:PORT --group G
--topic T [--work-ms MS] [--max-poll-records N] [--acquire-mode M] [--gate]`` (``--gate``: after ``ready``, wait for the
command ``go`` before the first poll). It speaks the share mode of ``JavaPeer.java`` (``--mode share``,
Apache Kafka's ``KafkaShareConsumer``), so a test or a benchmark drives the three clients alike:
explicit acknowledgement mode; each record, after ``--work-ms`` ms of sleep (I/O-like work), is
acknowledged ACCEPT, then ``commit_sync()`` sends the acknowledgements and waits for the answer.

Events (one JSON line each, ``"t"`` = ``time.monotonic()``, the clock of ``System.nanoTime()``):
``ready`` (subscribed), ``fetching`` (``lock_timeout_ms``: the first answered ShareFetch; kgroup
only, confluent-kafka 2.16 does not tell it), ``records`` (``values``, ``partitions``,
``deliveries``; stamped when ``poll()`` returned), ``committed`` (``polled``: that poll's ``t``,
``count``, ``failed``: ``[topic, partition, error]`` per partition whose acknowledgement failed;
stamped when ``commit_sync()`` returned), ``error``, ``closing``, ``closed``. Input: ``close``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from tests.peers.child import commands, emitter

emit = emitter(time.monotonic)


def run_kgroup(args: argparse.Namespace) -> None:
    from kgroup import AcknowledgeType, ShareConsumer

    consumer: ShareConsumer[bytes, bytes] = ShareConsumer(
        bootstrap_servers=args.bootstrap, group_id=args.group, client_id="kgroup-share",
        share_acknowledgement_mode="explicit", max_poll_records=args.max_poll_records,
        share_acquire_mode=args.acquire_mode)
    consumer.subscribe([args.topic])
    loop(consumer, args,
         poll=lambda: consumer.poll(100),
         lock=consumer.acquisition_lock_timeout_ms,
         fields=lambda r: (r.value, r.partition, r.delivery_count),
         ack=lambda r: consumer.acknowledge(r, AcknowledgeType.ACCEPT),
         commit=lambda: [[tp.topic, tp.partition, type(e).__name__]
                         for tp, e in consumer.commit_sync(30000).items() if e is not None],
         close=lambda: consumer.close(30000))


def run_confluent(args: argparse.Namespace) -> None:
    import confluent_kafka

    consumer = confluent_kafka.ShareConsumer({
        "bootstrap.servers": args.bootstrap, "group.id": args.group, "client.id": "confluent-share",
        "share.acknowledgement.mode": "explicit", "max.poll.records": args.max_poll_records})
    consumer.subscribe([args.topic])

    def poll() -> list[Any]:
        got = []
        for m in consumer.poll(0.1):
            if m.error() is not None:
                emit("error", name=m.error().name(), fatal=False, message=str(m.error())[:300])
            else:
                got.append(m)
        return got

    loop(consumer, args,
         poll=poll,
         lock=lambda: None,
         fields=lambda m: (m.value(), m.partition(), getattr(m, "delivery_count", lambda: None)()),
         ack=lambda m: consumer.acknowledge(m, confluent_kafka.AcknowledgeType.ACCEPT),
         commit=lambda: [[tp.topic, tp.partition, str(e)[:100]]
                         for tp, e in consumer.commit_sync(30).items() if e is not None],
         close=consumer.close)


def loop(consumer: Any, args: argparse.Namespace, *, poll: Any, lock: Any, fields: Any, ack: Any, commit: Any,
         close: Any) -> None:
    cmds = commands()
    work_s = args.work_ms / 1000.0
    emit("ready")
    if args.gate and cmds.get() == "close":  # wait for "go"
        emit("closing")
        close()
        emit("closed")
        return
    fetching = False
    while True:
        if not cmds.empty() and cmds.get() == "close":
            emit("closing")
            close()
            emit("closed")
            return
        try:
            records = poll()
            polled = time.monotonic()
            if not fetching and lock() is not None:
                fetching = True
                emit("fetching", lock_timeout_ms=lock())
            if not records:
                continue
            values, partitions, deliveries = [], [], []
            for r in records:
                v, p, d = fields(r)
                values.append(None if v is None else v.decode())
                partitions.append(p)
                deliveries.append(d)
            emit("records", t=polled, values=values, partitions=partitions, deliveries=deliveries)
            for r in records:
                if work_s:
                    time.sleep(work_s)
                ack(r)
            failed = commit()
            emit("committed", polled=polled, count=len(records), failed=failed)
        except Exception as e:  # reported to the parent, the member goes on
            emit("error", name=type(e).__name__, fatal=False, message=str(e)[:300])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--client", choices=("kgroup", "confluent"), required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--work-ms", type=float, default=0.0)
    parser.add_argument("--max-poll-records", type=int, default=500)
    parser.add_argument("--acquire-mode", choices=("batch_optimized", "record_limit"), default="batch_optimized",
                        help="kgroup's share_acquire_mode (confluent-kafka 2.16 has no share.acquire.mode)")
    parser.add_argument("--gate", action="store_true", help='after "ready", wait for "go" before the first poll')
    args = parser.parse_args(argv)
    (run_kgroup if args.client == "kgroup" else run_confluent)(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
