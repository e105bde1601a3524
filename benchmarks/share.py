"""Share groups (KIP-932): kgroup's ``ShareConsumer`` beside Java's ``KafkaShareConsumer`` and confluent-kafka's.

Each run is one share group of 1, 4 or 12 members of one client on a 3-partition topic of
``--records`` records (``--work-records`` with work), every member its own process
(``tests/peers/share_peer.py`` for kgroup and confluent-kafka 2.16's preview ``ShareConsumer``,
``tests/peers/JavaPeer.java --mode share`` for Apache Kafka 4.4's ``KafkaShareConsumer``, compiled
once, HotSpot's defaults). Every member runs explicit acknowledgement: each record, after
``--work-ms`` ms of sleep (I/O-like work; 0 and 10 by default), is acknowledged ACCEPT, then
``commitSync()`` sends the batch's acknowledgements and waits for the broker's answer.

    python benchmarks/share.py --broker apache-kafka                 # 1, 4, 12 members; 0 and 10 ms
    python benchmarks/share.py --broker apache-kafka --repeat 3 --records 20000 --work-records 2000

Without work the records are produced before the group exists, in chunks of ``--chunk`` records
a partition, the group's start offsets are set to 0 with AlterShareGroupOffsets, the members
start, each says ``ready`` (client built, subscribed), and all get ``go`` at once. With work each
run has a new empty topic, produced to (in chunks of ``--work-chunk``: one producer batch each, as
the broker acquires whole batches) once every member has partitions (ShareGroupDescribe), and
every member asks for ``--max-poll-records`` (``--work-max-poll-records`` with work, default 10,
and ``share.acquire.mode=record_limit`` with work (kgroup's ``share_acquire_mode``; confluent-kafka
2.16 has no such setting), so that 12 members on 3 partitions each get a piece). Reported per run:

* accepted records/s: records / (the first ``poll()`` that returned records, in any member, to
  the last ``commitSync()`` answer that completed the set), group join left out;
* acknowledgement latency: per record, its ``poll()``'s return to the return of the
  ``commitSync()`` that acknowledged it (median and p99, ms);
* duplicates: records accepted more than once (0 unless a lock expired: the lock is 30 s).

``--repeat N`` interleaves the clients in every round (a slow minute of a shared machine hits all
of them); the table shows medians [min-max] and the ratios of kgroup's median to Java's and to
confluent-kafka's, from the same run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.peers.share import SHARE_CLIENTS, ShareMember, share_command, start_share_group_at  # noqa: E402


def produce_chunks(bootstrap: str, topic: str, records: int, chunk: int) -> None:
    """``records`` values ``r<i>`` to partition ``i % 3``, ``chunk`` a partition per producer batch.

    One confluent-kafka producer, flushed after every chunk (a batch is what a chunk made).
    """
    import confluent_kafka

    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "acks": "all"})
    for start in range(0, records, chunk * 3):
        for i in range(start, min(records, start + chunk * 3)):
            producer.produce(topic, f"r{i}".encode(), partition=i % 3)
        producer.flush(30)
    if producer.flush(30):
        raise RuntimeError(f"records not acknowledged on {topic}")


def one_run(bootstrap: str, topic: str, client: str, members: int, work_ms: float, records: int,
            max_poll_records: int, acquire_mode: str, log_dir: Path, produce_after: int | None) -> dict[str, Any]:
    """One group of ``members`` of ``client``; ``produce_after``: the topic is empty, produce in
    chunks of that many once every member has partitions, else the records are there already."""
    from kgroup.admin import GroupAdmin
    from kgroup.testing import create_topic
    from kgroup.types import TopicPartition

    group = f"share-bench-{uuid.uuid4().hex[:8]}"
    if produce_after is not None:
        create_topic(bootstrap, topic, 3)
    admin = GroupAdmin.connect(bootstrap, timeout_ms=30000)
    start_share_group_at(admin, group, [TopicPartition(topic, p) for p in range(3)], 0)
    procs = [ShareMember(client, share_command(client, bootstrap, group, topic, work_ms=work_ms,
                                               max_poll_records=max_poll_records, acquire_mode=acquire_mode,
                                               gate=True, compiled=True),
                         log_path=log_dir / f"{client}-{members}-{i}.log") for i in range(members)]
    try:
        deadline = time.monotonic() + 180
        while not all(p.of("ready") for p in procs):
            if time.monotonic() > deadline or not all(p.alive() for p in procs):
                raise RuntimeError(f"{client}: a member did not start (logs in {log_dir})")
            time.sleep(0.05)
        for p in procs:
            p.send("go")
        if produce_after is not None:
            while True:
                d = admin.describe_share_group(group)
                if len(d.members) == members and all(m.assignment for m in d.members):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{client}: {len(d.members)} of {members} members with partitions")
                time.sleep(0.1)
            produce_chunks(bootstrap, topic, records, produce_after)
        limit = time.monotonic() + 60 + records * work_ms / 1000.0
        while sum(len(p.accepted()) for p in procs) < records:
            if time.monotonic() > limit:
                raise RuntimeError(f"{client}: {sum(len(p.accepted()) for p in procs)} of {records} accepted")
            time.sleep(0.05)
    finally:
        admin.close()
        for p in procs:
            p.close(30)
    first = min(e["t"] for p in procs for e in p.of("records"))
    commits = sorted((e for p in procs for e in p.of("committed")), key=lambda e: e["t"])
    done, last = 0, commits[-1]["t"]
    for e in commits:
        done += e["count"]
        if done >= records:
            last = e["t"]
            break
    latencies = sorted(ms for e in commits for ms in [1000.0 * (e["t"] - e["polled"])] * e["count"])
    accepted = Counter(v for p in procs for v in p.accepted())
    return {
        "rps": records / (last - first),
        "p50_ms": latencies[len(latencies) // 2],
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "duplicates": sum(n - 1 for n in accepted.values() if n > 1),
        "missing": records - len(accepted),
        "busy_members": sum(1 for p in procs if p.accepted()),
        "errors": sum(len(p.errors()) for p in procs),
    }


def spread(values: list[float], digits: int = 0) -> str:
    fmt = f"{{:,.{digits}f}}"
    med = statistics.median(values)
    return fmt.format(med) + (f" [{fmt.format(min(values))}-{fmt.format(max(values))}]" if len(values) > 1 else "")


def table(results: dict[tuple[str, int, float], list[dict[str, Any]]], clients: Sequence[str]) -> str:
    rows = ["| work per record | members | client | accepted records/s | ack latency p50 ms | p99 ms "
            "| members with records | duplicates | errors | kgroup/Java | kgroup/confluent |",
            "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for work, members in sorted({(w, m) for _, m, w in results}):
        med = {c: statistics.median(r["rps"] for r in results[(c, members, work)])
               for c in clients if (c, members, work) in results}
        for c in clients:
            runs = results.get((c, members, work))
            if not runs:
                continue
            ratio_java = f"{med['kgroup'] / med['java']:.2f}" if c == "kgroup" and "java" in med else ""
            ratio_cf = f"{med['kgroup'] / med['confluent']:.2f}" if c == "kgroup" and "confluent" in med else ""
            rows.append(f"| {work:g} ms | {members} | {c} | {spread([r['rps'] for r in runs])} "
                        f"| {spread([r['p50_ms'] for r in runs], 1)} | {spread([r['p99_ms'] for r in runs], 1)} "
                        f"| {max(r['busy_members'] for r in runs)} | {sum(r['duplicates'] + r['missing'] for r in runs)} "
                        f"| {sum(r['errors'] for r in runs)} | {ratio_java} | {ratio_cf} |")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--broker", choices=("default", "tansu", "apache-kafka"), default="apache-kafka")
    parser.add_argument("--records", type=int, default=20_000, help="records of a run without work")
    parser.add_argument("--work-records", type=int, default=2_000, help="records of a run with work")
    parser.add_argument("--members", type=int, nargs="+", default=[1, 4, 12])
    parser.add_argument("--work-ms", type=float, nargs="+", default=[0.0, 10.0])
    parser.add_argument("--clients", default=",".join(SHARE_CLIENTS))
    parser.add_argument("--max-poll-records", type=int, default=500, help="without work")
    parser.add_argument("--work-max-poll-records", type=int, default=10, help="with work")
    parser.add_argument("--chunk", type=int, default=100, help="records per partition in one producer batch")
    parser.add_argument("--work-chunk", type=int, default=5, help="the same, with work")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--log-dir", type=Path, default=Path("/tmp/kgroup-share-bench"))
    args = parser.parse_args(argv)
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    args.log_dir.mkdir(parents=True, exist_ok=True)

    from kgroup.testing import create_topic, start_broker

    with start_broker(kind=None if args.broker == "default" else args.broker) as broker:
        bootstrap = broker.bootstrap_servers
        print(broker.describe(), flush=True)
        topic = f"share-bench-{uuid.uuid4().hex[:8]}"
        create_topic(bootstrap, topic, 3)
        produce_chunks(bootstrap, topic, args.records, args.chunk)
        print(f"produced {args.records:,} records for the runs without work", flush=True)
        results: dict[tuple[str, int, float], list[dict[str, Any]]] = {}
        for round_no in range(args.repeat):
            for work in args.work_ms:
                for members in args.members:
                    for client in clients:
                        r = one_run(bootstrap, f"share-bench-{uuid.uuid4().hex[:8]}" if work else topic, client,
                                    members, work, args.work_records if work else args.records,
                                    args.work_max_poll_records if work else args.max_poll_records,
                                    "record_limit" if work else "batch_optimized", args.log_dir,
                                    args.work_chunk if work else None)
                        results.setdefault((client, members, work), []).append(r)
                        print(f"[{round_no + 1}/{args.repeat}] {work:g} ms x {members} {client}: "
                              f"{r['rps']:,.0f} records/s, ack p50 {r['p50_ms']:.1f} ms p99 {r['p99_ms']:.1f} ms, "
                              f"{r['busy_members']} members with records, dup {r['duplicates']} "
                              f"missing {r['missing']} errors {r['errors']}", flush=True)
        print()
        print(table(results, clients))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
