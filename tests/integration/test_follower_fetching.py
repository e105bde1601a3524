"""Follower fetching (KIP-392) on a 3-node Apache Kafka cluster: which node serves the fetches.

The cluster (``kgroup.testing.start_broker(kind="apache-kafka", nodes=3)``) gives each node its
own ``broker.rack`` (node ``n`` in ``az-n``: a per-node override) and every node
``replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector`` (Kafka's
documentation, "Follower fetching"). Each test creates a topic of one partition on all three
nodes, picks a follower of it, and consumes with ``client_rack`` = the follower's rack
(``assign()``: no group). The consumer's fetcher counts the Fetch requests and record bytes per
node (``PipelinedFetcher.fetches_by_node``), which show who served the records:

1. The leader names the follower its preferred read replica; every record comes from the follower,
   none from the leader (nor the third node).
2. The follower is stopped while the consumer reads: the consumer goes back to the leader and
   reads on, every record once and in order.

The records are written with kafka-python's producer (``acks=all``). No fixed sleeps: every wait
is a condition with a deadline. Skipped with one line when Java or the Apache Kafka jars are
missing (``python -m kgroup.testing.apache_kafka fetch``); with ``KGROUP_REQUIRE_APACHE_KAFKA=1``
that fails instead.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kgroup
from kgroup import TopicPartition
from kgroup.testing import BrokerHandle, apache_kafka, produce, start_broker

from .harness import consumer, poll_records, wait_until

pytestmark = pytest.mark.broker_kinds("apache-kafka")

NODES = (1, 2, 3)
RACKS = {n: f"az-{n}" for n in NODES}
OVERRIDES: dict[str, object] = {
    "broker.rack": RACKS,
    "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
}
RECORDS = 300
#: how long consuming a batch of records may take (a loaded 2-core machine, three JVMs)
READ_S = 60.0


@pytest.fixture(scope="module")
def cluster(broker_kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerHandle]:
    """Three racked nodes with the rack-aware replica selector, for the module's tests."""
    apache_kafka.skip_if_unavailable()
    with start_broker(kind="apache-kafka", nodes=3, overrides=OVERRIDES, startup_timeout_s=120,
                      log_dir=tmp_path_factory.mktemp("follower-fetching")) as broker:
        yield broker


def create_topic(bootstrap: str) -> tuple[str, int, list[int]]:
    """A topic of one partition on every node; returns it, its leader and its followers."""
    from kafka.admin import KafkaAdminClient, NewTopic

    name = f"follower-fetching-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="follower-fetching-admin")
    try:
        admin.create_topics([NewTopic(name, 1, len(NODES))], timeout_ms=30000)
        found: dict[str, Any] = {}

        def ready() -> bool:
            described = admin.describe_topics([name])
            parts = (described[0].get("partitions") or []) if described else []
            if len(parts) == 1 and parts[0]["leader_id"] >= 0 and len(parts[0]["isr_nodes"]) == len(NODES):
                found.update(parts[0])
                return True
            return False

        wait_until(ready, 60, f"{name}: a leader and {len(NODES)} in-sync replicas")
    finally:
        admin.close()
    leader = int(found["leader_id"])
    return name, leader, sorted(n for n in NODES if n != leader)


def produce_values(bootstrap: str, topic: str, start: int, count: int) -> None:
    """Records ``b"<i>"`` for i in ``start``, ``start + count``, to partition 0 (``acks=all``)."""
    assert produce(bootstrap, topic, [(0, None, b"%d" % i) for i in range(start, start + count)]) == count


def consumer_in(rack: str, bootstrap: str, topic: str) -> kgroup.Consumer:
    """A consumer of the topic's partition (``assign()``) in ``rack``."""
    reader = consumer(bootstrap, f"g-{uuid.uuid4().hex[:8]}", f"reader-{rack}", client_rack=rack,
                      enable_auto_commit=False)
    reader.assign([TopicPartition(topic, 0)])
    return reader


def read(reader: kgroup.Consumer, count: int) -> list[bytes | None]:
    """The values of the next ``count`` records (``READ_S`` at most)."""
    return [r.value for r in poll_records(reader, count, READ_S)]


def fetcher(reader: kgroup.Consumer) -> Any:
    """The consumer's ``PipelinedFetcher``."""
    transport: Any = reader._transport
    return transport.fetcher()


def served(reader: kgroup.Consumer) -> dict[int, tuple[int, int]]:
    """Per node: (Fetch requests sent, record bytes received) by the consumer's fetcher."""
    result: dict[int, tuple[int, int]] = fetcher(reader).fetches_by_node()
    return result


def test_the_follower_in_the_consumers_rack_serves_the_records(cluster: BrokerHandle) -> None:
    boot = cluster.bootstrap_servers
    topic, leader, followers = create_topic(boot)
    follower, other = followers
    produce_values(boot, topic, 0, RECORDS)
    reader = consumer_in(RACKS[follower], boot, topic)
    try:
        values = read(reader, RECORDS)
        counts = served(reader)
        preferred = fetcher(reader).preferred_read_replica(TopicPartition(topic, 0))
    finally:
        reader.close()
    print(f"leader {leader}, follower {follower} in the consumer's rack; (fetches, record bytes) per node: {counts}")
    assert values == [b"%d" % i for i in range(RECORDS)]
    assert preferred == follower
    assert counts[leader][0] >= 1, "the first Fetch goes to the leader, which names the follower"
    assert counts[follower][1] > 0
    assert counts[leader][1] == 0, f"the leader served records: {counts}"
    assert counts.get(other, (0, 0)) == (0, 0), f"the third node was fetched from: {counts}"


def test_the_leader_serves_the_records_when_the_follower_stops(cluster: BrokerHandle) -> None:
    boot = cluster.bootstrap_servers
    topic, leader, followers = create_topic(boot)
    follower = followers[0]
    produce_values(boot, topic, 0, RECORDS)
    reader = consumer_in(RACKS[follower], boot, topic)
    try:
        values = read(reader, RECORDS)
        before = served(reader)
        assert before[follower][1] > 0 and before[leader][1] == 0, before
        cluster.stop_node(follower, timeout_s=30)
        produce_values(boot, topic, RECORDS, RECORDS)
        values += read(reader, RECORDS)
        after = served(reader)
        preferred = fetcher(reader).preferred_read_replica(TopicPartition(topic, 0))
    finally:
        reader.close()  # the follower stays stopped: this is the module's last test on the cluster
    print(f"leader {leader}, follower {follower} stopped; (fetches, record bytes) per node: {before} -> {after}")
    assert values == [b"%d" % i for i in range(2 * RECORDS)], "every record once, in order"
    assert after[leader][1] > 0, f"the leader served no records after the follower stopped: {after}"
    assert after[follower][1] == before[follower][1], "the stopped follower served nothing more"
    assert preferred != follower


def test_per_node_overrides(tmp_path: Path) -> None:
    """``broker.rack`` per node: a mapping of node id -> value; nodes it leaves out do not get the key."""
    ports = {1: 9001, 2: 9002, 3: 9003}
    props = [apache_kafka.node_properties(n, broker_ports=ports, controller_ports=ports, data_dir=tmp_path,
                                          overrides={"broker.rack": {1: "a", 2: "b"}, "num.io.threads": 4})
             for n in NODES]
    assert [p.get("broker.rack") for p in props] == ["a", "b", None]
    assert all(p["num.io.threads"] == "4" for p in props)
    with pytest.raises(ValueError, match="node id"):
        apache_kafka.node_properties(1, broker_ports=ports, controller_ports=ports, data_dir=tmp_path,
                                     overrides={"broker.rack": {"1": "a"}})
    with pytest.raises(ValueError, match="per-node"):
        start_broker(kind="apache-kafka", nodes=2, overrides={"broker.rack": {3: "c"}})
