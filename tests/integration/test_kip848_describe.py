"""``kgroup describe`` of a consumer-protocol group (ConsumerGroupDescribe, KIP-848), on Apache Kafka 4.4.

A static ``Consumer(group_protocol="consumer")`` member owns a 4-partition topic and commits;
``kgroup describe --json`` and the table report the group as ConsumerGroupDescribe answers it:
group type ``consumer``, state ``Stable``, the broker's assignor, the group epoch equal to the
assignment epoch, and for the member its member id (the consumer's own), instance id, member
epoch, assignment equal to its target assignment and to what the consumer owns, and the
committed offsets and lag. A classic group on the same broker is still described with
DescribeGroups (group type ``classic``). On the way, both consumers' ``health()`` is ready and
their ``metrics()`` carry the Java consumer's names for their protocol (no ``join-*`` under the
consumer protocol). About 5 s on the session broker: 1.2 s until the
consumer-protocol member owns the topic, 3 s for the classic group's first join
(``group.initial.rebalance.delay.ms``); each describe takes 65-85 ms.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from click.testing import CliRunner

import kgroup
from kgroup.cli import main
from tests.integration.harness import all_partitions, poll_until, topic_of_records

pytestmark = pytest.mark.broker_kinds("apache-kafka")

WAIT_S = 40.0


def cli(bootstrap: str, *args: str) -> str:
    result = CliRunner().invoke(main, [*args, "--bootstrap-servers", bootstrap, "--timeout-ms", "20000"])
    assert result.exit_code == 0, result.output
    return result.output


def test_describe_a_consumer_protocol_group_and_a_classic_one(
    kafka_bootstrap: str, topic_factory: Any, group_id_factory: Any
) -> None:
    topic = topic_of_records(kafka_bootstrap, topic_factory, 4, 3)
    group = group_id_factory()
    settings: dict[str, Any] = {"group_protocol": "consumer", "auto_offset_reset": "earliest",
                                "enable_auto_commit": False}
    static = kgroup.Consumer(bootstrap_servers=kafka_bootstrap, group_id=group, client_id="cgd-static",
                             group_instance_id="pod-0", **settings)
    classic_group = group_id_factory("classic")
    classic = kgroup.Consumer(bootstrap_servers=kafka_bootstrap, group_id=classic_group, client_id="cgd-classic",
                              auto_offset_reset="earliest", session_timeout_ms=6000, heartbeat_interval_ms=1000)
    members = [static]
    started = time.monotonic()
    try:
        for c in members:
            c.subscribe([topic])
        poll_until(members, lambda: static.assignment() == all_partitions(topic, 4), "the assignment")
        for c in members:
            c.commit({tp: kgroup.OffsetAndMetadata(1) for tp in c.assignment()})
        print(f"\nassigned and committed: {time.monotonic() - started:.1f} s")
        # health and metrics under the consumer protocol: Java's names, no JoinGroup/SyncGroup ones.
        # The assignment is handed out while the member still reconciles: it is ready (STABLE) once
        # the coordinator answered the heartbeat that acknowledged it, a round trip later.
        poll_until(members, lambda: static.health().ready, "the member ready (STABLE)")
        health = static.health()
        assert health.live and health.ready, health.reasons
        metrics = static.metrics()
        assert metrics["rebalance-total"] >= 1 and metrics["rebalance-latency-max"] >= 0
        assert metrics["heartbeat-total"] >= 1 and metrics["last-heartbeat-seconds-ago"] >= 0
        assert metrics["assigned-partitions"] == 4 and metrics["commit-total"] >= 1
        assert "join-total" not in metrics and "sync-time-avg" not in metrics

        described = time.monotonic()
        doc = json.loads(cli(kafka_bootstrap, "describe", group, "--json"))
        print(f"describe: {(time.monotonic() - described) * 1000:.0f} ms")
        assert (doc["group_type"], doc["state"], doc["protocol_type"], doc["protocol"]) == (
            "consumer", "Stable", "consumer", "uniform")
        assert doc["group_epoch"] == doc["assignment_epoch"] and doc["group_epoch"] >= 2
        by_client = {m["client_id"]: m for m in doc["members"]}
        assert set(by_client) == {"cgd-static"}
        for c, name in ((static, "cgd-static"),):
            m = by_client[name]
            owned = [{"topic": tp.topic, "partition": tp.partition} for tp in sorted(c.assignment())]
            assert m["member_id"] == c.group_metadata().member_id
            assert m["member_epoch"] == c.group_metadata().generation_id > 0
            assert m["assignment"] == m["target_assignment"] == owned
            assert m["member_protocol"] == "consumer" and m["subscribed_topics"] == [topic]
        assert by_client["cgd-static"]["group_instance_id"] == "pod-0"
        lags = {(o["partition"], o["committed_offset"], o["lag"]) for o in doc["offsets"]}
        assert lags == {(p, 1, 2) for p in range(4)}

        table = cli(kafka_bootstrap, "describe", group)
        head = dict(line.split(None, 1) for line in table.split("\n\n")[0].splitlines())
        epoch = str(doc["group_epoch"])
        assert (head["GROUP-TYPE"], head["STATE"], head["GROUP-EPOCH"]) == ("consumer", "Stable", epoch)
        assert "TARGET-ASSIGNMENT" in table and static.group_metadata().member_id in table

        classic.subscribe([topic])
        poll_until([classic, *members], lambda: classic.assignment() == all_partitions(topic, 4), "the classic group")
        assert classic.health().ready and classic.metrics()["join-total"] >= 1
        old = json.loads(cli(kafka_bootstrap, "describe", classic_group, "--json"))
        assert (old["group_type"], old["state"], old["group_epoch"]) == ("classic", "Stable", None)
        assert old["protocol"] in ("range", "cooperative-sticky")
        assert old["members"][0]["member_epoch"] is None and old["members"][0]["client_id"] == "cgd-classic"
        assert {(a["topic"], a["partition"]) for a in old["members"][0]["assignment"]} == {
            (tp.topic, tp.partition) for tp in all_partitions(topic, 4)}
    finally:
        for c in (*members, classic):
            c.close()
