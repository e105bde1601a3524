"""Parallel processing inside a partition: a slow handler, many records at once, in key order.

Run it::

    KGROUP_BOOTSTRAP_SERVERS=broker:9092 TOPIC=orders GROUP=billing python examples/parallel_service.py

Without ``KGROUP_BOOTSTRAP_SERVERS`` (or with ``DEMO=1``, on that cluster) it is a demo with a
self-check: it starts the embedded test broker (with the coordinator proxy in front of it,
which keeps commit metadata as Apache Kafka does; on a cluster of ``KGROUP_BOOTSTRAP_SERVERS``,
that cluster's own coordinator), writes ``RECORDS`` records over ``KEYS`` keys to a new topic,
processes them and checks that every record was processed (or dead-lettered), that the records
of each key ran one at a time in offset order, and that none was lost. Its last line is
``PASS: ...`` or ``FAIL: ...`` (exit code 1), so ``python examples/parallel_service.py`` shows
it working on any machine.

What it shows (``docs/parallel.md`` is the guide):

* **``kgroup.ParallelProcessor``** runs ``handle`` (10 ms of pretend I/O) for up to
  ``MAX_CONCURRENCY`` records at once; ``ordering="key"`` keeps the records of one key in
  offset order, one at a time (checked here for every key).
* **Safe commits**: the processor commits each partition's first record not completed, with
  the completed records above it in the commit's metadata; after a crash or a rebalance the next
  owner skips those.
* **Failures**: a record whose value is ``poison`` fails every attempt (``retries=2``, with
  backoff), then goes to ``dead_letter`` (here: a log line; in a service, a dead-letter topic).
* **SIGTERM and Ctrl-C** call ``processor.stop()`` (safe from any thread); ``close()`` then
  lets in-flight records finish (``revoke_timeout_ms``), commits and leaves the group.
* **Health**: ``processor.health()`` is not live while a handler runs past ``stuck_after_ms``.

Environment: ``TOPIC`` (``parallel-orders``; a new ``parallel-orders-<random>`` in the demo),
``GROUP`` (``parallel-example``; likewise), ``RECORDS`` (demo mode: how many to write, 2000;
else, when set: stop once that many are processed or dead-lettered), ``KEYS`` (500),
``MAX_CONCURRENCY`` (64), ``TIMEOUT_S`` (demo mode: give up after that long, 300). The service
mode's last line is ``stopped: ...`` with the totals; exit code 0 on a clean stop.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
import uuid
from typing import Any

import kgroup

log = logging.getLogger("parallel-service")


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kafka").setLevel(logging.WARNING)
    bootstrap = os.environ.get("KGROUP_BOOTSTRAP_SERVERS")
    demo = not bootstrap or os.environ.get("DEMO") == "1"
    suffix = f"-{uuid.uuid4().hex[:8]}" if demo else ""
    topic = os.environ.get("TOPIC", "parallel-orders" + suffix)
    group = os.environ.get("GROUP", "parallel-example" + suffix)
    records = int(os.environ.get("RECORDS", "2000"))
    stop_after = records if "RECORDS" in os.environ or demo else None
    keys = int(os.environ.get("KEYS", "500"))
    max_concurrency = int(os.environ.get("MAX_CONCURRENCY", "64"))
    timeout_s = float(os.environ.get("TIMEOUT_S", "300"))

    stack: list[Any] = []
    if demo:  # a broker (the embedded one behind the coordinator proxy), and the records to process
        from kgroup.testing import create_topic, produce, start_broker
        from kgroup.testing.coordinator import CoordinatorConfig
        from kgroup.testing.proxy import CoordinatorProxy

        broker = start_broker()  # KGROUP_BOOTSTRAP_SERVERS's cluster when set
        stack.append(broker)
        bootstrap = broker.bootstrap_servers
        if broker.kind == "tansu":  # Tansu drops commit metadata: the proxy keeps it
            config = CoordinatorConfig(group_initial_rebalance_delay_ms=0)
            proxy = CoordinatorProxy(broker.bootstrap_servers, config=config).start()
            stack.append(proxy)
            bootstrap = proxy.bootstrap_servers
        create_topic(broker.bootstrap_servers, topic, partitions=4)
        values = [b"poison" if i == 7 else b"order %d" % i for i in range(records)]
        produce(broker.bootstrap_servers, topic, [(b"customer-%d" % (i % keys), v) for i, v in enumerate(values)],
                timeout_s=120)
        print(f"kafka broker: {broker.kind} at {broker.bootstrap_servers}; {records} records over {keys} keys"
              f" in {topic}", flush=True)

    lock = threading.Lock()
    last_offset: dict[tuple[int, bytes | None], int] = {}
    running: set[tuple[int, bytes | None]] = set()  # keys whose handler runs now
    seen: dict[tuple[int, int], int] = {}  # (partition, offset) -> times processed or dead-lettered
    values_seen: set[bytes] = set()
    broken: list[str] = []  # key-order violations (kept, not raised: a raise would be retried)
    done = [0, 0]  # processed, dead-lettered

    def handle(record: kgroup.ConsumerRecord) -> None:
        """Your business logic: 10 ms of pretend I/O per record."""
        if record.value == b"poison":
            raise ValueError("cannot parse the order")
        lane = (record.partition, record.key)
        with lock:
            if lane in running or last_offset.get(lane, -1) > record.offset:
                broken.append(f"{record.key!r}@{record.partition}-{record.offset}")
            running.add(lane)
        time.sleep(0.01)
        with lock:
            running.discard(lane)
            last_offset[lane] = record.offset
            seen[(record.partition, record.offset)] = seen.get((record.partition, record.offset), 0) + 1
            values_seen.add(record.value)
            done[0] += 1

    def dead_letter(record: kgroup.ConsumerRecord, error: BaseException) -> None:
        log.warning("dead letter: %s-%d@%d: %r", record.topic, record.partition, record.offset, error)
        with lock:
            last_offset[(record.partition, record.key)] = record.offset
            seen[(record.partition, record.offset)] = seen.get((record.partition, record.offset), 0) + 1
            values_seen.add(record.value)
            done[1] += 1

    deadline = time.monotonic() + timeout_s

    def finished() -> bool:
        if stop_after is None:
            return False
        if demo:
            return len(seen) >= stop_after or time.monotonic() > deadline
        return sum(done) >= stop_after

    assert bootstrap is not None
    consumer = kgroup.Consumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    processor = kgroup.ParallelProcessor(
        consumer, handle, ordering="key", max_concurrency=max_concurrency,
        retries=2, retry_backoff_ms=50, on_dead_letter=dead_letter,
    )

    def on_signal(signum: int, frame: object) -> None:
        log.info("signal %d: stopping", signum)
        processor.stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    started = time.monotonic()
    try:
        with processor:
            processor.subscribe([topic])
            processor.run(until=finished)
            metrics = processor.metrics()
    finally:
        for item in reversed(stack):
            item.stop()
    elapsed = time.monotonic() - started
    print(
        f"stopped: {done[0]} records processed, {done[1]} dead-lettered, "
        f"{metrics['parallel-max-in-flight']:.0f} at most in flight, {done[0] / elapsed:.0f} records/s "
        f"(the group join included)", flush=True,
    )
    if not demo:
        return 0
    expected = {b"poison" if i == 7 else b"order %d" % i for i in range(records)}
    lost = sorted(expected - values_seen)
    twice = sum(1 for n in seen.values() if n > 1)
    problems = []
    if lost:
        problems.append(f"{len(lost)} records lost (first {lost[:3]})")
    if broken:
        problems.append(f"key order broken {len(broken)} times (first {broken[:3]})")
    if done[1] != 1:
        problems.append(f"{done[1]} records dead-lettered, not 1 (the poison record)")
    if problems:
        print("FAIL: " + "; ".join(problems))
        return 1
    print(f"PASS: {len(seen)}/{records} records processed ({done[1]} dead-lettered), none lost, "
          f"key order held for {len(last_offset)} keys, {metrics['parallel-max-in-flight']:.0f} at most in flight, "
          f"{twice} processed twice")
    return 0


if __name__ == "__main__":
    sys.exit(main())
