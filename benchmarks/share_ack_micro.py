"""The share consumer's per-record bookkeeping, offline: acknowledging, handing out, matching acquired offsets.

No broker, no network: what ``ShareConsumer`` does per record on the application's thread,
timed over ``--records`` records of 3 partitions (explicit mode):

* ``acknowledge``: ``ShareConsumer.acknowledge(record, AcknowledgeType.ACCEPT)`` for each
  record an ``InFlight`` was told ``poll()`` returned (the facade's checks and
  ``InFlight.acknowledge``), then ``InFlight.take()``;
* ``InFlight.acknowledge``: the core alone, given each record's ``TopicPartition`` and offset;
* ``hand_out``: ``ShareFetcher.hand_out`` of every record, ``max_poll_records`` (500) at a
  time (what ``poll()`` does per record: taken from the buffer, marked in flight);
* ``match_acquired``: a fetched partition's decoded records matched with one acquired range
  (what a ShareFetch answer costs per record, after decoding).

Each figure is the best of ``--repeat`` timings, in microseconds per record on one core (the
objects the benchmark set up are frozen out of the garbage collector's way first).

    python benchmarks/share_ack_micro.py
    python benchmarks/share_ack_micro.py --records 20000 --repeat 9
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kgroup._clock import MonotonicClock
from kgroup._driver.mailbox import Mailbox
from kgroup._driver.share_fetch import ShareFetcher
from kgroup._share.acks import InFlight
from kgroup._share.acquired import match_acquired
from kgroup.config import ShareConsumerConfig
from kgroup.protocol.share_fetch import AcquiredRecords
from kgroup.share_consumer import ShareConsumer
from kgroup.types import AcknowledgeType, ConsumerRecord, ShareConsumerRecord, TopicPartition

PARTITIONS = 3


class _Fetcher:
    """What ``ShareConsumer.acknowledge`` needs of its fetcher: the ``InFlight``."""

    def __init__(self) -> None:
        self.inflight = InFlight("explicit")


def _records(count: int) -> list[ShareConsumerRecord[bytes, bytes]]:
    return [ShareConsumerRecord("bench", i % PARTITIONS, i // PARTITIONS, None, b"v", (), 0, 0, 0, 1)
            for i in range(count)]


def _best(repeat: int, setup: Callable[[], Any], run: Callable[[Any], None]) -> float:
    best = float("inf")
    for _ in range(repeat):
        state = setup()
        gc.collect()
        gc.freeze()  # the benchmark's own records are no work of the collector's during the timing
        start = time.perf_counter()
        run(state)
        best = min(best, time.perf_counter() - start)
        gc.unfreeze()
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    records = _records(args.records)
    n = len(records)
    consumer: ShareConsumer[bytes, bytes] = ShareConsumer(
        bootstrap_servers="bench:9092", group_id="bench", share_acknowledgement_mode="explicit", transport=object())

    def delivered() -> _Fetcher:
        fetcher = _Fetcher()
        fetcher.inflight.delivered((r.topic_partition, r.offset) for r in records)
        return fetcher

    def facade(fetcher: _Fetcher) -> None:
        consumer._fetcher = fetcher
        acknowledge, accept = consumer.acknowledge, AcknowledgeType.ACCEPT
        for r in records:
            acknowledge(r, accept)
        fetcher.inflight.take()

    def core(fetcher: _Fetcher) -> None:
        acknowledge, accept = fetcher.inflight.acknowledge, AcknowledgeType.ACCEPT
        for r in records:
            acknowledge(r.topic_partition, r.offset, accept)
        fetcher.inflight.take()

    config = ShareConsumerConfig.from_kwargs(bootstrap_servers="bench:9092", group_id="bench",
                                             share_acknowledgement_mode="explicit")

    def buffered() -> ShareFetcher:
        fetcher = ShareFetcher(config, None, Mailbox(), MonotonicClock(), "bench")
        for p in range(PARTITIONS):
            fetcher._buffer.append((TopicPartition("bench", p), 1, [r for r in records if r.partition == p]))
        return fetcher

    def hand_out(fetcher: ShareFetcher) -> None:
        while fetcher.has_buffered():
            fetcher.hand_out(500)

    decoded = [ConsumerRecord("bench", 0, i, None, b"v", (), 0, 0, 0) for i in range(n)]
    ranges = (AcquiredRecords(0, n - 1, 1),)

    def match(_state: None) -> None:
        match_acquired(decoded, ranges)

    rows = [
        ("acknowledge (ShareConsumer)", _best(args.repeat, delivered, facade)),
        ("InFlight.acknowledge", _best(args.repeat, delivered, core)),
        ("hand_out (ShareFetcher)", _best(args.repeat, buffered, hand_out)),
        ("match_acquired", _best(args.repeat, lambda: None, match)),
    ]
    print(f"{n:,} records, {PARTITIONS} partitions, best of {args.repeat}:")
    for name, seconds in rows:
        print(f"  {name:<28} {seconds / n * 1e6:6.2f} us/record  ({seconds:.3f} s)")


if __name__ == "__main__":
    main()
