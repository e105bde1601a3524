"""Parallel processing benchmark: ``ParallelProcessor`` against the plain poll loop.

One topic (``--partitions``, 4) of ``--records`` (20,000) records over ``--keys`` (1,000)
keys on the embedded Tansu broker (or ``KGROUP_BOOTSTRAP_SERVERS``). The handler sleeps
``--handler-ms`` (10) ms, standing for I/O. Reported:

* the plain loop (``poll()``, the handler per record, one at a time) over ``--plain-records``
  (300) records;
* ``ParallelProcessor`` with ``ordering`` = ``--ordering`` ("key") at each ``--concurrency``
  (1, 16, 64), every record, in its own consumer group, checking the order of every key;

records/s = records / (first handler start → last handler end), so the group join is left out,
and the ratio to the plain loop. The machine's load matters (threads waking up late): the load
average is printed with the results.

    python benchmarks/parallel.py
    python benchmarks/parallel.py --records 50000 --concurrency 64 128 --handler-ms 20
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import kgroup  # noqa: E402
from kgroup.testing import create_topic, produce, start_broker  # noqa: E402


class Span:
    """The first start and the last end of the handlers, and the records of each key in order."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.first = float("inf")
        self.last = 0.0
        self.count = 0
        self.order_broken = 0
        self.last_offset: dict[tuple[int, bytes | None], int] = {}

    def record(self, record: kgroup.ConsumerRecord, started: float) -> None:
        with self.lock:
            self.first = min(self.first, started)
            self.last = max(self.last, time.monotonic())
            self.count += 1
            key = (record.partition, record.key)
            if self.last_offset.get(key, -1) > record.offset:
                self.order_broken += 1
            self.last_offset[key] = record.offset

    def rate(self) -> float:
        return self.count / (self.last - self.first) if self.count > 1 else 0.0


def _consumer(bootstrap: str) -> kgroup.Consumer:
    return kgroup.Consumer(
        bootstrap_servers=bootstrap, group_id=f"bench-{uuid.uuid4().hex[:8]}", enable_auto_commit=False,
        auto_offset_reset="earliest", max_poll_records=500,
    )


def plain(bootstrap: str, topic: str, records: int, handler_s: float) -> float:
    span = Span()
    with _consumer(bootstrap) as consumer:
        consumer.subscribe([topic])
        while span.count < records:
            for record in consumer.poll(100):
                started = time.monotonic()
                time.sleep(handler_s)
                span.record(record, started)
                if span.count >= records:
                    break
    return span.rate()


def parallel(bootstrap: str, topic: str, records: int, handler_s: float, concurrency: int, ordering: str) -> Span:
    span = Span()

    def handler(record: kgroup.ConsumerRecord) -> None:
        started = time.monotonic()
        time.sleep(handler_s)
        span.record(record, started)

    processor = kgroup.ParallelProcessor(
        _consumer(bootstrap), handler, ordering=ordering, max_concurrency=concurrency  # type: ignore[arg-type]
    )
    with processor:
        processor.subscribe([topic])
        processor.run(until=lambda: span.count >= records)
    return span


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--plain-records", type=int, default=300)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--handler-ms", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--ordering", choices=["key", "partition", "unordered"], default="key")
    args = parser.parse_args(argv)

    broker = None
    bootstrap = os.environ.get("KGROUP_BOOTSTRAP_SERVERS")
    if not bootstrap:
        broker = start_broker()
        bootstrap = broker.bootstrap_servers
    try:
        topic = f"bench-parallel-{uuid.uuid4().hex[:8]}"
        create_topic(bootstrap, topic, partitions=args.partitions)
        produce(
            bootstrap, topic,
            [(i % args.partitions, b"key-%d" % (i % args.keys), b"x" * 100) for i in range(args.records)],
        )
        handler_s = args.handler_ms / 1000
        base = plain(bootstrap, topic, args.plain_records, handler_s)
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.records} records, "
              f"{args.keys} keys, {args.partitions} partitions, {args.handler_ms:g} ms handler")
        print("| loop | records/s | x plain |")
        print("|---|---:|---:|")
        print(f"| plain poll loop | {base:,.0f} | 1.0 |")
        for concurrency in args.concurrency:
            span = parallel(bootstrap, topic, args.records, handler_s, concurrency, args.ordering)
            assert span.order_broken == 0, "key order broken"
            rate = span.rate()
            print(f"| ParallelProcessor(ordering={args.ordering!r}, max_concurrency={concurrency}) "
                  f"| {rate:,.0f} | {rate / base:.1f} |")
    finally:
        if broker is not None:
            broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
