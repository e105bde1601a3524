"""Test your own rebalance listener and commit logic against a simulated group, in milliseconds.

``kgroup.testing.simulation.SimulatedGroup`` runs your application code (a real
``kgroup.Consumer``, your listener, your poll loop, your commits) as members of a group on a
virtual clock, against Kafka's group coordinator model. Here: an application that processes
records into a store and commits its own offsets on revoke (the Java pattern), two members,
one crashed mid-run (kill -9, no close) and a third joining. At the end the group must have
processed every record at least once, committed nothing beyond what it processed, and never
had two members owning one partition at the same time.

Run: python examples/simulated_group.py   (about half a second; no broker needed)
"""

from __future__ import annotations

import contextlib
import sys

import kgroup
from kgroup.testing.simulation import SimulatedGroup

TOPIC = "orders"


class Store:
    """The application's side effects: processed order ids, per partition."""

    def __init__(self) -> None:
        self.processed: dict[tuple[int, int], int] = {}

    def process(self, record: kgroup.ConsumerRecord) -> None:
        key = (record.partition, record.offset)
        self.processed[key] = self.processed.get(key, 0) + 1


class CommitOnRevoke(kgroup.RebalanceListener):
    """Commit what was processed before the partitions go (Java's ConsumerRebalanceListener idiom)."""

    def __init__(self, consumer: kgroup.Consumer) -> None:
        self.consumer = consumer

    def on_partitions_revoked(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
        # if the partitions moved on already, the next owner starts from the last commit
        with contextlib.suppress(kgroup.CommitFailedError, kgroup.RebalanceInProgressError):
            self.consumer.commit()


def make_app(store: Store):
    def app(consumer: kgroup.Consumer, running) -> None:
        consumer.subscribe([TOPIC], listener=CommitOnRevoke(consumer))
        while running():
            records = consumer.poll(200)
            for record in records:
                store.process(record)
            if records:
                with contextlib.suppress(kgroup.CommitFailedError, kgroup.RebalanceInProgressError):
                    consumer.commit()
        consumer.close()

    return app


def main(seed: int = 7) -> int:
    store = Store()
    group = SimulatedGroup({TOPIC: 6}, seed=seed)
    group.produce(TOPIC, 600)
    app = make_app(store)
    group.add_member("a", app, session_timeout_ms=6000, heartbeat_interval_ms=2000, enable_auto_commit=False)
    group.add_member("b", app, session_timeout_ms=6000, heartbeat_interval_ms=2000, enable_auto_commit=False)
    group.run_for(5.0)
    group.crash("a")  # kill -9 in the middle of processing
    group.produce(TOPIC, 300)
    group.add_member("c", app, session_timeout_ms=6000, heartbeat_interval_ms=2000, enable_auto_commit=False)
    group.run_until(lambda: len(store.processed) == 900, timeout_s=60.0)
    group.check()  # no record lost, no commit past processing, one owner per partition
    missing = [(p, o) for p in range(6) for o in range(150) if (p, o) not in store.processed]
    assert not missing, f"records never processed: {missing[:10]}"
    twice = sum(1 for n in store.processed.values() if n > 1)
    print(f"processed {len(store.processed)} records ({twice} twice, after the crash) "
          f"in {group.now:.1f} simulated seconds; committed {sorted(group.committed().values())}")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
