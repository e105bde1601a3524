"""A consumer service you can copy: SIGTERM, commit errors, probes, metrics, static membership.

Run it::

    KGROUP_BOOTSTRAP_SERVERS=broker:9092 TOPIC=orders GROUP=billing python examples/service.py

Without ``KGROUP_BOOTSTRAP_SERVERS`` it starts the embedded test broker and feeds the topic
itself, so ``python examples/service.py`` shows it working on any machine (Ctrl-C stops it).

What it does, and why (docs/kubernetes.md has the deployment side):

* **Static membership from the pod name** when ``STATIC=1``: ``group_instance_id`` is the
  StatefulSet pod name (``HOSTNAME``, ``kgroup.instance_id_from_env``), so a restart within
  ``session_timeout_ms`` gets the same partitions back without a rebalance (KIP-345).
* **SIGTERM and Ctrl-C**: the handler only sets a flag and calls ``consumer.wakeup()``, the one
  method safe from another thread; the blocked ``poll()`` raises ``WakeupError`` and the loop
  ends. ``close(timeout_ms=...)`` then commits, runs ``on_partitions_revoked`` and leaves
  the group within the time Kubernetes grants (``terminationGracePeriodSeconds``, 30 s by
  default): keep ``CLOSE_TIMEOUT_MS`` below it.
* **Commit errors**: ``CommitFailedError`` after a slow batch means the group rebalanced
  without this member (it missed ``max_poll_interval_ms``) or the generation moved on; the
  partitions may belong to someone else now, so the batch's offsets are dropped and the loop
  goes on polling, which rejoins (Java's ``KafkaConsumer`` users do the same).
  ``RebalanceInProgressError``: the next ``poll()`` completes the rebalance.
* **Probes and metrics**: ``consumer.serve_health(port)`` answers ``/livez``, ``/readyz`` and
  ``/metrics`` (Prometheus' text format when ``kgroup[prometheus]`` is installed).
* **Progress**: one line per ``PROGRESS_S`` seconds with the records processed, the assigned
  partitions and the lag, read from ``consumer.metrics()``.

Environment: ``TOPIC`` (default ``orders``), ``GROUP`` (``service-example``), ``HEALTH_PORT``
(8080; 0 picks a free one, printed), ``STATIC`` (0), ``CLOSE_TIMEOUT_MS`` (20000),
``PROGRESS_S`` (5), ``SESSION_TIMEOUT_MS`` (Kafka's default, 45000), ``AUTO_OFFSET_RESET``
(``latest``, Java's default: where a partition with no committed offset starts). The last line is
``stopped: ...`` with the totals; exit code 0 on a clean stop.
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

log = logging.getLogger("service")


class Commits(kgroup.RebalanceListener):
    """Commit what was processed before partitions go (Java's ConsumerRebalanceListener idiom)."""

    def __init__(self, consumer: kgroup.Consumer) -> None:
        self.consumer = consumer

    def on_partitions_revoked(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
        try:
            self.consumer.commit()
        except (kgroup.CommitFailedError, kgroup.RebalanceInProgressError) as exc:
            log.warning("commit on revoke failed, the next owner re-reads from the last commit: %s", exc)

    def on_partitions_assigned(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
        log.info("assigned %s", sorted(map(str, partitions)))


def process(record: kgroup.ConsumerRecord) -> None:
    """Your business logic (here: nothing)."""


def feed(bootstrap: str, topic: str, stop: threading.Event) -> None:
    """Demo mode: a few records per second into ``topic``."""
    from kgroup.testing import produce

    n = 0
    while not stop.wait(0.2):
        produce(bootstrap, topic, [(str(i).encode(), b"order %d" % i) for i in range(n, n + 10)])
        n += 10


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kafka").setLevel(logging.WARNING)  # kafka-python's connection chatter
    topic = os.environ.get("TOPIC", "orders")
    group = os.environ.get("GROUP", "service-example")
    close_timeout_ms = int(os.environ.get("CLOSE_TIMEOUT_MS", "20000"))
    progress_s = float(os.environ.get("PROGRESS_S", "5"))

    stack: list[Any] = []
    stop_feed = threading.Event()
    bootstrap = os.environ.get("KGROUP_BOOTSTRAP_SERVERS")
    if not bootstrap:  # demo mode: an embedded broker and a feeder thread
        from kgroup.testing import create_topic, start_broker

        broker = start_broker()
        stack.append(broker)
        bootstrap = broker.bootstrap_servers
        create_topic(bootstrap, topic, partitions=6)
        threading.Thread(target=feed, args=(bootstrap, topic, stop_feed), daemon=True).start()

    config: dict[str, Any] = {
        "bootstrap_servers": bootstrap, "group_id": group, "enable_auto_commit": False,
        # where a partition with no committed offset starts: Java's default is "latest"
        "auto_offset_reset": os.environ.get("AUTO_OFFSET_RESET", "latest"),
    }
    if "SESSION_TIMEOUT_MS" in os.environ:
        config["session_timeout_ms"] = int(os.environ["SESSION_TIMEOUT_MS"])
    if os.environ.get("STATIC") == "1":
        config["group_instance_id"] = kgroup.instance_id_from_env("HOSTNAME")
    consumer = kgroup.Consumer(**config)

    stopping = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        log.info("signal %d: stopping", signum)
        stopping.set()
        consumer.wakeup()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    server = consumer.serve_health(port=int(os.environ.get("HEALTH_PORT", "8080")))
    print(f"health: {server.url}/livez {server.url}/readyz {server.url}/metrics", flush=True)
    consumer.subscribe([topic], listener=Commits(consumer))
    processed = commit_failures = 0
    next_progress = time.monotonic() + progress_s
    try:
        while not stopping.is_set():
            try:
                records = consumer.poll(timeout_ms=1000)
                for record in records:
                    process(record)
                processed += len(records)
                if records:
                    consumer.commit()
            except kgroup.WakeupError:
                # a signal (poll() or commit() interrupted): the loop condition decides;
                # close() commits what was processed (the listener's revoke commit)
                continue
            except kgroup.CommitFailedError as exc:
                # the group moved on without us: keep polling, which rejoins
                commit_failures += 1
                log.warning("commit failed, continuing: %s", exc)
            except kgroup.RebalanceInProgressError:
                pass  # the next poll() completes the rebalance; its revoke step commits
            if time.monotonic() >= next_progress:
                next_progress = time.monotonic() + progress_s
                m = consumer.metrics()
                lag = m["records-lag-max"]
                print(
                    f"progress: {processed} records, {int(m['assigned-partitions'])} partitions, "
                    f"lag {'?' if lag != lag else int(lag)}, {int(m['rebalance-total'])} rebalances",
                    flush=True,
                )
    finally:
        stop_feed.set()
        started = time.monotonic()
        consumer.close(timeout_ms=close_timeout_ms)
        took = time.monotonic() - started
        for resource in stack:
            resource.stop()
    print(f"stopped: {processed} records processed, {commit_failures} failed commits, closed in {took:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
