"""Where a share consumer's time goes per batch: the poll/acknowledge/commit cycle of kgroup and confluent-kafka.

``benchmarks/share.py`` measures accepted records/s of whole groups; this one takes its
no-work, one-member case apart. One process drains ``--records`` records (3 partitions, chunks
of 100 a partition per producer batch, as there) in explicit acknowledgement mode with
``--max-poll-records`` (500): ``poll()``, ``acknowledge(ACCEPT)`` each record, ``commit_sync()``
per batch, the loop of ``tests/peers/share_peer.py`` in one process for each client in turn
(confluent-kafka 2.16's preview ``ShareConsumer``, then kgroup's), a new share group each round.
Reported per client, medians over ``--repeat`` rounds: records/s, records per batch, the
cycle (ms per batch), the ``commit_sync()`` wait (p50, ms) and, for kgroup, the ShareFetch round
trip (``fetch-latency-avg`` of ``ShareConsumer.metrics()``, ms). The records of a batch cannot
be accepted faster than one commit's round trip to the partition leader per batch: a share
session has one request out at a time (KIP-932), so the batch over that round trip is the
ceiling of this loop for any client.

    python benchmarks/share_cycle.py --broker apache-kafka --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.share import produce_chunks
from tests.peers.share import start_share_group_at


def drain(client: str, bootstrap: str, group: str, topic: str, records: int, max_poll_records: int) -> dict[str, Any]:
    """One member of a new share group drains ``topic``; the cycle's figures."""
    if client == "kgroup":
        from kgroup import AcknowledgeType, ShareConsumer

        consumer: Any = ShareConsumer(bootstrap_servers=bootstrap, group_id=group,
                                      share_acknowledgement_mode="explicit", max_poll_records=max_poll_records)
        poll = lambda: consumer.poll(100)  # noqa: E731
        accept = lambda r: consumer.acknowledge(r, AcknowledgeType.ACCEPT)  # noqa: E731
        commit = lambda: consumer.commit_sync(30000)  # noqa: E731
        close = lambda: consumer.close(30000)  # noqa: E731
    else:
        import confluent_kafka

        consumer = confluent_kafka.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                                                  "share.acknowledgement.mode": "explicit",
                                                  "max.poll.records": max_poll_records})
        poll = lambda: [m for m in consumer.poll(0.1) if m.error() is None]  # noqa: E731
        accept = lambda m: consumer.acknowledge(m, confluent_kafka.AcknowledgeType.ACCEPT)  # noqa: E731
        commit = lambda: consumer.commit_sync(30)  # noqa: E731
        close = consumer.close
    consumer.subscribe([topic])
    got, batches, first, waits = 0, 0, None, []
    deadline = time.monotonic() + 120
    try:
        while got < records:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{client}: {got} of {records} records in 120 s")
            batch = poll()
            if not batch:
                continue
            first = first if first is not None else time.monotonic()
            for record in batch:
                accept(record)
            started = time.monotonic()
            commit()
            waits.append(1000 * (time.monotonic() - started))
            batches += 1
            got += len(batch)
        elapsed = time.monotonic() - first  # type: ignore[operator]
        rtt = consumer.metrics().get("fetch-latency-avg") if client == "kgroup" else None
    finally:
        close()
    return {"rps": got / elapsed, "per_batch": got / batches, "cycle_ms": 1000 * elapsed / batches,
            "commit_ms": statistics.median(waits), "rtt_ms": rtt}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--broker", choices=("default", "tansu", "apache-kafka"), default="apache-kafka")
    parser.add_argument("--records", type=int, default=60_000)
    parser.add_argument("--max-poll-records", type=int, default=500)
    parser.add_argument("--clients", default="confluent,kgroup")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]

    from kgroup.admin import GroupAdmin
    from kgroup.testing import create_topic, start_broker
    from kgroup.types import TopicPartition

    results: dict[str, list[dict[str, Any]]] = {c: [] for c in clients}
    with start_broker(kind=None if args.broker == "default" else args.broker) as broker:
        bootstrap = broker.bootstrap_servers
        print(broker.describe(), flush=True)
        topic = f"share-cycle-{uuid.uuid4().hex[:8]}"
        create_topic(bootstrap, topic, 3)
        produce_chunks(bootstrap, topic, args.records, 100)
        for round_no in range(args.repeat):
            for client in clients:
                group = f"share-cycle-{uuid.uuid4().hex[:8]}"
                admin = GroupAdmin.connect(bootstrap, timeout_ms=30000)
                try:
                    start_share_group_at(admin, group, [TopicPartition(topic, p) for p in range(3)], 0)
                finally:
                    admin.close()
                r = drain(client, bootstrap, group, topic, args.records, args.max_poll_records)
                results[client].append(r)
                print(f"[{round_no + 1}/{args.repeat}] {client}: {r}", flush=True)
    print("\n| client | records/s | records per batch | cycle ms per batch | commit_sync wait p50 ms "
          "| ShareFetch round trip ms (avg) |")
    print("|---|---:|---:|---:|---:|---:|")
    for client in clients:
        runs = results[client]

        def med(key: str, runs: list[dict[str, Any]] = runs) -> float:
            return statistics.median(r[key] for r in runs)

        rtt = f"{med('rtt_ms'):.2f}" if runs[0]["rtt_ms"] is not None else "-"
        print(f"| {client} | {med('rps'):,.0f} | {med('per_batch'):.0f} | {med('cycle_ms'):.2f} "
              f"| {med('commit_ms'):.2f} | {rtt} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
