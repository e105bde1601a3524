"""Parallel processing inside a partition: a slow handler, many records at once, in key order.

Run it::

    KGROUP_BOOTSTRAP_SERVERS=broker:9092 TOPIC=orders GROUP=billing python examples/parallel_service.py

Without ``KGROUP_BOOTSTRAP_SERVERS`` it starts the embedded test broker (with the coordinator
proxy in front of it, which keeps commit metadata as Apache Kafka does), writes ``RECORDS``
records over ``KEYS`` keys and stops once all are processed, so ``python
examples/parallel_service.py`` shows it working on any machine.

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

Environment: ``TOPIC`` (``parallel-orders``), ``GROUP`` (``parallel-example``), ``RECORDS``
(demo mode: how many to write, 2000; else, when set: stop once that many are processed or
dead-lettered), ``KEYS`` (500), ``MAX_CONCURRENCY`` (64). The last line is ``stopped: ...``
with the totals; exit code 0 on a clean stop.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from typing import Any

import kgroup

log = logging.getLogger("parallel-service")


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kafka").setLevel(logging.WARNING)
    topic = os.environ.get("TOPIC", "parallel-orders")
    group = os.environ.get("GROUP", "parallel-example")
    records = int(os.environ.get("RECORDS", "2000"))
    stop_after = records if "RECORDS" in os.environ or not os.environ.get("KGROUP_BOOTSTRAP_SERVERS") else None
    keys = int(os.environ.get("KEYS", "500"))
    max_concurrency = int(os.environ.get("MAX_CONCURRENCY", "64"))

    stack: list[Any] = []
    bootstrap = os.environ.get("KGROUP_BOOTSTRAP_SERVERS")
    demo = not bootstrap
    if demo:  # the embedded broker behind the coordinator proxy, and the records to process
        from kgroup.testing import create_topic, produce, start_broker
        from kgroup.testing.coordinator import CoordinatorConfig
        from kgroup.testing.proxy import CoordinatorProxy

        broker = start_broker()
        stack.append(broker)
        config = CoordinatorConfig(group_initial_rebalance_delay_ms=0)
        proxy = CoordinatorProxy(broker.bootstrap_servers, config=config).start()
        stack.append(proxy)
        bootstrap = proxy.bootstrap_servers
        create_topic(broker.bootstrap_servers, topic, partitions=4)
        values = [b"poison" if i == 7 else b"order %d" % i for i in range(records)]
        produce(broker.bootstrap_servers, topic, [(b"customer-%d" % (i % keys), v) for i, v in enumerate(values)])

    lock = threading.Lock()
    last_offset: dict[tuple[int, bytes | None], int] = {}
    done = [0, 0]  # processed, dead-lettered

    def handle(record: kgroup.ConsumerRecord) -> None:
        """Your business logic: 10 ms of pretend I/O per record."""
        if record.value == b"poison":
            raise ValueError("cannot parse the order")
        time.sleep(0.01)
        with lock:
            previous = last_offset.get((record.partition, record.key), -1)
            assert previous < record.offset, "key order broken"
            last_offset[(record.partition, record.key)] = record.offset
            done[0] += 1

    def dead_letter(record: kgroup.ConsumerRecord, error: BaseException) -> None:
        log.warning("dead letter: %s-%d@%d: %r", record.topic, record.partition, record.offset, error)
        with lock:
            done[1] += 1

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
            processor.run(until=None if stop_after is None else lambda: sum(done) >= stop_after)
            metrics = processor.metrics()
    finally:
        for item in reversed(stack):
            item.stop()
    elapsed = time.monotonic() - started
    print(
        f"stopped: {done[0]} records processed, {done[1]} dead-lettered, "
        f"{metrics['parallel-max-in-flight']:.0f} at most in flight, {done[0] / elapsed:.0f} records/s "
        f"(the group join included)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
