"""CoordinatorProxy on the real broker: forwarding, rewriting, ordering, the model, every fault kind.

Raw requests go through a small blocking socket client (``RawClient``) built on the adapter's
codec; kgroup's own ``Consumer`` is used where a real client is the point. Every wait has a deadline.
"""

from __future__ import annotations

import contextlib
import time

import pytest

import kgroup
from kgroup import TopicPartition
from kgroup._io import kafka_frames as frames
from kgroup.testing import CoordinatorProxy, FakeClock, produce
from kgroup.testing.coordinator import CoordinatorConfig

from .harness import SESSION_TIMEOUT_MS, consumer, wait_until
from .raw_client import RawClient, address_of, heartbeat_body, join, join_body, sync

FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, SYNC_GROUP = 10, 11, 12, 14
OFFSET_COMMIT, OFFSET_FETCH, METADATA, API_VERSIONS = 8, 9, 3, 18
NONE, UNKNOWN_TOPIC_OR_PARTITION, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR = 0, 3, 14, 16
UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS, MEMBER_ID_REQUIRED = 25, 27, 79
WAIT_S = 20.0
API_VERSIONS_BODY = {"client_software_name": "raw", "client_software_version": "1"}


def metadata_body(topics: list[str] | None = None) -> dict:
    return {
        "topics": None if topics is None else [{"name": t} for t in topics],
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }


def commit_body(group_id: str, topic: str, offset: int, partition: int = 0) -> dict:
    return {
        "group_id": group_id,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": partition,
                        "committed_offset": offset,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ],
    }


def fetch_body(group_id: str, topic: str) -> dict:
    return {"group_id": group_id, "topics": [{"name": topic, "partition_indexes": [0]}], "require_stable": False}


def poll_until(c: kgroup.Consumer, predicate, timeout_s: float, what: str) -> list:
    records: list = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        records.extend(c.poll(100))
        if predicate(records):
            return records
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


# ----------------------------------------------------------------------------- forwarding and rewriting


def test_singleton_consumer_group_forms_fast_and_consumes_through_the_proxy(
    kafka_cluster, topic_factory, group_id_factory
):
    topic = topic_factory(2)
    records = [(p, b"k", f"v{p}-{i}".encode()) for p in (0, 1) for i in range(5)]
    assert produce(kafka_cluster.bootstrap_servers, topic, records) == 10
    group = group_id_factory()
    c = consumer(kafka_cluster.bootstrap_servers, group, "solo")
    try:
        c.subscribe([topic])
        records = poll_until(c, lambda r: len(r) >= 10, WAIT_S, "10 records")
        assert sorted((r.partition, r.value) for r in records) == sorted(
            (p, f"v{p}-{i}".encode()) for p in (0, 1) for i in range(5)
        )
        assert c.assignment() == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
        assert kafka_cluster.call(lambda m: m.group_state(group)) == "Stable"
        joins = [r for r in kafka_cluster.requests("JoinGroup") if r.client_id == "solo"]
        syncs = [r for r in kafka_cluster.requests("SyncGroup") if r.client_id == "solo"]
        assert {r.handled_by for r in joins + syncs} == {"model"}
        formation_ms = (syncs[0].answered_at - joins[0].received_at) * 1000
        print(f"\nsingleton group formation through the proxy (first JoinGroup in -> SyncGroup out): "
              f"{formation_ms:.1f} ms over {len(joins)} JoinGroup + {len(syncs)} SyncGroup")
        assert formation_ms < 1000
        # the group APIs never reached the broker; records did (a Fetch still waiting behind the
        # one before it on its connection, pipelined, has no handler yet: only answered ones count)
        answered = [r for r in kafka_cluster.requests("Fetch") if r.ready_at is not None]
        assert answered and {r.handled_by for r in answered} == {"upstream"}
    finally:
        c.close()


def test_metadata_names_only_proxy_listeners(kafka_cluster, kafka_broker):
    upstream_port = address_of(kafka_broker.bootstrap_servers.split(",")[0])[1]
    client = RawClient(kafka_cluster.bootstrap_servers)
    try:
        for version in (1, 9, 12):
            body = client.request(METADATA, version, metadata_body([]))
            listeners = kafka_cluster.listeners()
            assert body["brokers"], body
            for broker in body["brokers"]:
                assert broker["host"] == "127.0.0.1"
                assert broker["port"] == listeners[broker["node_id"]]
                assert broker["port"] != upstream_port
    finally:
        client.close()


def test_find_coordinator_names_the_coordinator_listener(kafka_cluster):
    node = kafka_cluster.coordinator_node_id
    port = kafka_cluster.listeners()[node]
    client = RawClient(kafka_cluster.bootstrap_servers)
    try:
        for version in range(0, 4):
            body = client.request(FIND_COORDINATOR, version, {"key": "g1", "key_type": 0})
            assert (body["error_code"], body["node_id"], body["host"], body["port"]) == (0, node, "127.0.0.1", port)
        for version in range(4, 7):
            body = client.request(FIND_COORDINATOR, version, {"key_type": 0, "coordinator_keys": ["g1", "g2"]})
            assert [(c["key"], c["node_id"], c["port"], c["error_code"]) for c in body["coordinators"]] == [
                ("g1", node, port, 0),
                ("g2", node, port, 0),
            ]
        # a transaction key is the broker's business: forwarded, and any node named is rewritten
        body = client.request(FIND_COORDINATOR, 3, {"key": "tx-1", "key_type": 1})
        if body["error_code"] == 0:
            assert body["port"] in kafka_cluster.listeners().values()
        txn = [r for r in kafka_cluster.requests("FindCoordinator") if r.api_version == 3][-1]
        assert txn.handled_by == "upstream"
    finally:
        client.close()


def test_api_versions_advertise_what_the_model_serves(kafka_cluster):
    client = RawClient(kafka_cluster.bootstrap_servers)
    try:
        for version in (0, 3):
            body = client.request(API_VERSIONS, version, API_VERSIONS_BODY)
            assert body["error_code"] == 0
            ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
            assert ranges[FIND_COORDINATOR] == (0, 6)
            assert ranges[JOIN_GROUP] == (0, 9)
            assert ranges[SYNC_GROUP] == (0, 5)
            assert ranges[HEARTBEAT] == (0, 4)
            assert ranges[13] == (0, 5)
            assert ranges[OFFSET_COMMIT] == (2, 9)
            assert ranges[OFFSET_FETCH] == (1, 9)
            assert ranges[15] == (0, 5)
            assert ranges[16] == (0, 5)
            assert not {42, 47, 68, 69} & ranges.keys()
            assert ranges[METADATA][1] <= frames.api_version_range(METADATA)[1]
            assert 0 in ranges and 1 in ranges  # Produce and Fetch come from the broker
    finally:
        client.close()


def test_produce_with_acks_0_does_not_block_later_responses(kafka_cluster, topic_factory):
    from kafka import KafkaProducer  # a real acks=0 client

    first, second = topic_factory(1), topic_factory(1)
    producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap_servers, acks=0, client_id="acks0")
    try:
        for i in range(5):
            producer.send(first, value=f"v{i}".encode())
        producer.flush(10)
        producer.send(second, value=b"later")  # needs a Metadata on the same connection
        producer.flush(10)
    finally:
        producer.close(5)
    def acks0_produces() -> list:
        return [r for r in kafka_cluster.requests("Produce") if r.client_id == "acks0"]

    # an acks=0 send is done once written to the socket: the proxy's thread may log it later
    # (seen on a loaded machine: the log read at once held none of them)
    wait_until(lambda: len(acks0_produces()) >= 2, WAIT_S, "the proxy to log both topics' Produce requests")
    produces = acks0_produces()
    assert all(r.answered_at is None and r.ready_at is None for r in produces)
    later = [
        r
        for r in kafka_cluster.requests()
        if r.connection_id == produces[0].connection_id and r.received_at > produces[0].received_at
    ]
    wait_until(lambda: all(r.answered_at is not None for r in later if r.api_name != "Produce"), 5, "answers")
    c = consumer(kafka_cluster.bootstrap_servers, "acks0-check", "acks0-check")
    try:
        c.subscribe([first])
        records = poll_until(c, lambda r: len(r) >= 5, WAIT_S, "the acks=0 records")
        assert sorted(r.value for r in records) == [f"v{i}".encode() for i in range(5)]
    finally:
        c.close()


def test_responses_keep_request_order_behind_a_parked_join(kafka_cluster, group_id_factory):
    group = group_id_factory()
    a = RawClient(kafka_cluster.bootstrap_servers, "member-a")
    b = RawClient(kafka_cluster.bootstrap_servers, "member-b")
    try:
        joined_a = join(a, group)
        sync(a, group, joined_a)
        first = b.request(JOIN_GROUP, 9, join_body(group))
        assert first["error_code"] == MEMBER_ID_REQUIRED
        join_id = b.send(JOIN_GROUP, 9, join_body(group, first["member_id"]))
        metadata_id = b.send(METADATA, 12, metadata_body([]))
        def records():
            return [r for r in kafka_cluster.requests() if r.client_id == "member-b"]

        wait_until(lambda: records()[-1].api_name == "Metadata" and records()[-1].ready_at is not None,
                   WAIT_S, "the broker's Metadata answer")
        parked_join, metadata = records()[-2], records()[-1]
        assert (parked_join.api_name, metadata.api_name) == ("JoinGroup", "Metadata")
        assert parked_join.ready_at is None and metadata.answered_at is None
        assert not b.readable()
        assert kafka_cluster.call(lambda m: m.group_state(group)) == "PreparingRebalance"
        # A learns of the rebalance and rejoins: the parked join completes, then Metadata follows it
        assert a.request(HEARTBEAT, 4, heartbeat_body(group, joined_a))["error_code"] == REBALANCE_IN_PROGRESS
        a.send(JOIN_GROUP, 9, join_body(group, joined_a["member_id"]))
        assert b.recv()[0] == join_id
        assert b.recv()[0] == metadata_id
        assert a.recv()[1]["error_code"] == NONE
        metadata = [r for r in records() if r.api_name == "Metadata"][-1]
        assert metadata.ready_at < metadata.answered_at
    finally:
        a.close()
        b.close()


def test_offset_commit_learns_new_topics_and_rejects_unknown_ones(kafka_cluster, topic_factory, group_id_factory):
    group = group_id_factory()
    topic = topic_factory(1)  # created on the broker directly: the proxy has not seen it yet
    client = RawClient(kafka_cluster.bootstrap_servers)
    try:
        ok = client.request(OFFSET_COMMIT, 9, commit_body(group, topic, 7))
        assert ok["topics"][0]["partitions"][0]["error_code"] == NONE
        bad = client.request(OFFSET_COMMIT, 9, commit_body(group, topic, 7, partition=5))
        assert bad["topics"][0]["partitions"][0]["error_code"] == UNKNOWN_TOPIC_OR_PARTITION
        gone = client.request(OFFSET_COMMIT, 9, commit_body(group, "no-such-topic-" + group, 1))
        assert gone["topics"][0]["partitions"][0]["error_code"] == UNKNOWN_TOPIC_OR_PARTITION
        fetched = client.request(OFFSET_FETCH, 7, fetch_body(group, topic))
        assert fetched["topics"][0]["partitions"][0]["committed_offset"] == 7
    finally:
        client.close()


def test_describe_and_list_groups_come_from_the_model(kafka_cluster, group_id_factory):
    group = group_id_factory()
    with contextlib.closing(RawClient(kafka_cluster.bootstrap_servers, "describer")) as client:
        joined = join(client, group)
        sync(client, group, joined)
        (described,) = client.request(15, 5, {"groups": [group], "include_authorized_operations": False})["groups"]
        assert (described["error_code"], described["group_state"], described["protocol_data"]) == (0, "Stable", "range")
        (member,) = described["members"]
        assert (member["member_id"], member["client_id"], member["client_host"]) == (
            joined["member_id"], "describer", "/127.0.0.1"
        )
        listed = client.request(16, 4, {"states_filter": ["Stable"]})
        assert {"group_id": group, "protocol_type": "consumer", "group_state": "Stable"} in listed["groups"]


def test_model_timers_expire_a_silent_member(kafka_cluster, group_id_factory):
    """Kafka's coordinator removes a silent member by timer (Tansu only notices on the next request)."""
    group = group_id_factory()
    with contextlib.closing(RawClient(kafka_cluster.bootstrap_servers, "silent")) as client:
        sync(client, group, join(client, group))
        started = time.monotonic()
        wait_until(lambda: kafka_cluster.call(lambda m: m.group_state(group)) == "Empty", WAIT_S, "the expiry")
        assert time.monotonic() - started >= SESSION_TIMEOUT_MS / 1000 - 0.5


def test_fake_clock_drives_the_model_through_tick(kafka_broker, group_id_factory):
    clock = FakeClock(100.0)
    config = CoordinatorConfig(group_initial_rebalance_delay_ms=0)
    with CoordinatorProxy(kafka_broker.bootstrap_servers, config=config, clock=clock) as proxy:
        group = group_id_factory()
        client = RawClient(proxy.bootstrap_servers)
        try:
            sync(client, group, join(client, group))
            assert proxy.call(lambda m: m.next_deadline()) == pytest.approx(100.0 + SESSION_TIMEOUT_MS / 1000)
            clock.advance(SESSION_TIMEOUT_MS / 1000 + 1)
            assert proxy.call(lambda m: m.group_state(group)) == "Stable"  # nothing fires until tick()
            proxy.tick()
            assert proxy.call(lambda m: m.group_state(group)) == "Empty"
        finally:
            client.close()


# ----------------------------------------------------------------------------- faults


def test_injected_error_answers_without_calling_the_model(kafka_cluster, group_id_factory):
    group = group_id_factory()
    kafka_cluster.faults.inject(api="Heartbeat", error=REBALANCE_IN_PROGRESS, times=1, client_id="victim")
    victim, other = RawClient(kafka_cluster.bootstrap_servers, "victim-1"), RawClient(kafka_cluster.bootstrap_servers)
    try:
        joined = join(victim, group)
        sync(victim, group, joined)
        assert other.request(HEARTBEAT, 4, heartbeat_body(group))["error_code"] == UNKNOWN_MEMBER_ID  # not matched
        assert victim.request(HEARTBEAT, 4, heartbeat_body(group, joined))["error_code"] == REBALANCE_IN_PROGRESS
        assert victim.request(HEARTBEAT, 4, heartbeat_body(group, joined))["error_code"] == NONE  # times=1 used up
        assert kafka_cluster.call(lambda m: m.group_state(group)) == "Stable"  # the model never saw it
        codes = [(r.handled_by, r.error_code) for r in kafka_cluster.requests("Heartbeat")]
        assert codes == [("model", UNKNOWN_MEMBER_ID), ("proxy", REBALANCE_IN_PROGRESS), ("model", NONE)]
        fired = kafka_cluster.faults.history
        assert [(f.kind, f.api_name, f.client_id) for f in fired] == [("error", "Heartbeat", "victim-1")]
        # errors on other APIs too: a group-level code spread per partition, FindCoordinator per key
        kafka_cluster.faults.inject(api="OffsetCommit", error=NOT_COORDINATOR, times=1)
        body = victim.request(OFFSET_COMMIT, 9, commit_body(group, "any", 1))
        assert body["topics"][0]["partitions"][0]["error_code"] == NOT_COORDINATOR
        kafka_cluster.faults.inject(api=FIND_COORDINATOR, error=15, times=1)
        body = victim.request(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["a", "b"]})
        assert [c["error_code"] for c in body["coordinators"]] == [15, 15]
        with pytest.raises(ValueError):
            kafka_cluster.faults.inject(api="Produce", error=1)
    finally:
        victim.close()
        other.close()


def test_delay_holds_the_request(kafka_cluster, group_id_factory):
    kafka_cluster.faults.delay(api="Heartbeat", ms=400, times=1)
    client = RawClient(kafka_cluster.bootstrap_servers)
    try:
        started = time.monotonic()
        client.send(HEARTBEAT, 4, heartbeat_body(group_id_factory()))
        client.send(API_VERSIONS, 3, API_VERSIONS_BODY)
        assert client.recv()[1]["error_code"] == UNKNOWN_MEMBER_ID
        assert client.recv()[1]["error_code"] == NONE  # in order, behind the delayed one
        elapsed = time.monotonic() - started
        assert elapsed >= 0.4
        started = time.monotonic()
        client.request(HEARTBEAT, 4, heartbeat_body(group_id_factory()))
        assert time.monotonic() - started < 0.4  # times=1
        record = kafka_cluster.requests("Heartbeat")[0]
        assert record.fault == "delay 400 ms"
        assert record.answered_at - record.received_at >= 0.4
    finally:
        client.close()


def test_dropped_response_holds_later_responses(kafka_cluster, group_id_factory):
    kafka_cluster.faults.drop(api="Heartbeat", times=1)
    client = RawClient(kafka_cluster.bootstrap_servers, "dropper")
    try:
        client.send(HEARTBEAT, 4, heartbeat_body(group_id_factory()))
        client.send(API_VERSIONS, 3, API_VERSIONS_BODY)
        wait_until(lambda: len(kafka_cluster.requests("ApiVersions")) == 1
                   and kafka_cluster.requests("ApiVersions")[0].ready_at is not None, WAIT_S, "ApiVersions answer")
        assert not client.readable()  # the ApiVersions answer waits behind the dropped Heartbeat
        heartbeat, api_versions = kafka_cluster.requests("Heartbeat")[0], kafka_cluster.requests("ApiVersions")[0]
        assert heartbeat.fault == "drop" and heartbeat.ready_at is None
        assert api_versions.answered_at is None
        # a new connection is not affected
        fresh = RawClient(kafka_cluster.bootstrap_servers)
        assert fresh.request(HEARTBEAT, 4, heartbeat_body(group_id_factory()))["error_code"] == UNKNOWN_MEMBER_ID
        fresh.close()
    finally:
        client.close()


def test_close_connection_on_a_matching_request(kafka_cluster):
    kafka_cluster.faults.close_connection(api="Metadata", client_id="doomed", times=1)
    survivor = RawClient(kafka_cluster.bootstrap_servers, "ok")
    doomed = RawClient(kafka_cluster.bootstrap_servers, "doomed")
    try:
        assert survivor.request(METADATA, 12, metadata_body([]))["brokers"]
        doomed.send(METADATA, 12, metadata_body([]))
        with pytest.raises(ConnectionError):
            doomed.recv()
        assert survivor.request(METADATA, 12, metadata_body([]))["brokers"]
        assert [r.fault for r in kafka_cluster.requests("Metadata")] == [None, "close", None]
    finally:
        survivor.close()
        doomed.close()


def test_black_hole_swallows_everything_for_a_while(kafka_cluster):
    before = RawClient(kafka_cluster.bootstrap_servers, "before")
    assert before.request(API_VERSIONS, 3, API_VERSIONS_BODY)
    hole = kafka_cluster.faults.black_hole(1.0)
    during = RawClient(kafka_cluster.bootstrap_servers, "during")  # the connection is accepted
    try:
        during.send(API_VERSIONS, 3, API_VERSIONS_BODY)
        before.send(METADATA, 12, metadata_body([]))
        def swallowed():
            return {r.client_id for r in kafka_cluster.requests() if r.fault == "black_hole"}

        wait_until(lambda: swallowed() == {"before", "during"}, WAIT_S, "both requests swallowed")
        assert not during.readable() and not before.readable()
        wait_until(lambda: time.monotonic() > hole.end, 5, "the end of the black hole")
        after = RawClient(kafka_cluster.bootstrap_servers, "after")
        assert after.request(METADATA, 12, metadata_body([]))["brokers"]
        after.close()
        assert not during.readable()  # touched connections stay silent
        assert {f.kind for f in kafka_cluster.faults.history} == {"black_hole"}
    finally:
        before.close()
        during.close()


def test_move_coordinator(kafka_cluster, topic_factory, group_id_factory):
    topic = topic_factory(1)
    produce(kafka_cluster.bootstrap_servers, topic, [(b"k", b"before")])
    group = group_id_factory()
    c = consumer(kafka_cluster.bootstrap_servers, group, "mover")
    try:
        c.subscribe([topic])
        poll_until(c, lambda r: len(r) >= 1, WAIT_S, "the first record")
        old_node = kafka_cluster.coordinator_node_id
        new_node = kafka_cluster.move_coordinator()
        assert new_node != old_node and kafka_cluster.coordinator_node_id == new_node
        new_port = kafka_cluster.listeners()[new_node]
        raw = RawClient(("127.0.0.1", kafka_cluster.listeners()[old_node]))
        body = raw.request(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
        assert (body["coordinators"][0]["node_id"], body["coordinators"][0]["port"]) == (new_node, new_port)
        assert raw.request(HEARTBEAT, 4, heartbeat_body(group))["error_code"] == NOT_COORDINATOR
        assert raw.request(16, 4, {"states_filter": []})["groups"] == []  # coordinates no group
        raw.close()
        # the consumer hits NOT_COORDINATOR, rediscovers and heartbeats on the new listener, keeping its partitions
        wait_until(lambda: any(r.node_id == new_node and r.client_id == "mover" and r.answered_at
                               for r in kafka_cluster.requests("Heartbeat")), WAIT_S, "a heartbeat on the new node")
        produce(kafka_cluster.bootstrap_servers, topic, [(b"k", b"after")])
        records = poll_until(c, lambda r: len(r) >= 1, WAIT_S, "a record after the move")
        assert records[0].value == b"after"
        assert c.assignment() == {TopicPartition(topic, 0)}
        assert kafka_cluster.call(lambda m: m.group_state(group)) == "Stable"
    finally:
        c.close()


def test_restart_coordinator_keeps_committed_offsets(kafka_cluster, topic_factory, group_id_factory):
    topic = topic_factory(1)
    group = group_id_factory()
    client = RawClient(kafka_cluster.bootstrap_servers, "restarter")
    committed = client.request(OFFSET_COMMIT, 9, commit_body(group, topic, 11))
    assert committed["topics"][0]["partitions"][0]["error_code"] == NONE
    kafka_cluster.restart_coordinator(load_ms=1000)
    with pytest.raises(ConnectionError):  # group connections are closed
        client.request(OFFSET_FETCH, 7, fetch_body(group, topic))
    client.close()
    client = RawClient(kafka_cluster.bootstrap_servers, "restarter-2")
    try:
        assert client.request(OFFSET_FETCH, 7, fetch_body(group, topic))["error_code"] == COORDINATOR_LOAD_IN_PROGRESS

        def loaded() -> bool:
            return client.request(OFFSET_FETCH, 7, fetch_body(group, topic))["error_code"] == NONE

        wait_until(loaded, WAIT_S, "the coordinator to load")
        body = client.request(OFFSET_FETCH, 7, fetch_body(group, topic))
        assert body["topics"][0]["partitions"][0]["committed_offset"] == 11
    finally:
        client.close()


def test_restart_coordinator_with_a_consumer(kafka_cluster, topic_factory, group_id_factory):
    topic = topic_factory(1)
    produce(kafka_cluster.bootstrap_servers, topic, [(b"k", b"one")])
    group = group_id_factory()
    c = consumer(kafka_cluster.bootstrap_servers, group, "survivor", enable_auto_commit=False)
    try:
        c.subscribe([topic])
        poll_until(c, lambda r: len(r) >= 1, WAIT_S, "the first record")
        c.commit()
        kafka_cluster.restart_coordinator(load_ms=500)
        produce(kafka_cluster.bootstrap_servers, topic, [(b"k", b"two")])
        records = poll_until(c, lambda r: len(r) >= 1, WAIT_S, "a record after the restart")
        assert [r.value for r in records] == [b"two"]
        committed = c.committed([TopicPartition(topic, 0)])[TopicPartition(topic, 0)]
        assert committed is not None and committed.offset == 1
        events = kafka_cluster.call(lambda m: [e.kind for e in m.events])
        assert "coordinator_restarted" in events
    finally:
        c.close()


# ----------------------------------------------------------------------------- barrier timing


def test_rejoin_of_a_stable_group_completes_when_the_last_member_rejoins(
    kafka_cluster, topic_factory, group_id_factory
):
    """Kafka's join barrier releases every parked JoinGroup as soon as all members have rejoined:
    no initial delay for a non-empty group, no waiting for the rebalance timeout."""
    topic, group = topic_factory(4), group_id_factory()
    boot = kafka_cluster.bootstrap_servers
    a, b = consumer(boot, group, "a"), consumer(boot, group, "b")
    members = [a, b]
    try:
        for c in members:
            c.subscribe([topic])
        split = lambda: sum(len(c.assignment()) for c in members) == 4 and all(c.assignment() for c in members)  # noqa: E731
        deadline = time.monotonic() + WAIT_S
        while not split():
            assert time.monotonic() < deadline, "a and b never split the topic"
            for c in members:
                c.poll(50)
        generation = a.group_metadata().generation_id
        c3 = consumer(boot, group, "c")
        members.append(c3)
        c3.subscribe([topic])
        deadline = time.monotonic() + WAIT_S
        while not (split() and a.group_metadata().generation_id > generation):
            assert time.monotonic() < deadline, "the third member never got its share"
            for c in members:
                c.poll(50)
        final = a.group_metadata().generation_id
        # the JoinGroup requests (one per member, after MEMBER_ID_REQUIRED) that formed the last generation
        joins = [r for r in kafka_cluster.requests("JoinGroup") if r.error_code == NONE and r.answered_at]
        last_round = sorted(joins, key=lambda r: r.answered_at)[-3:]
        assert sorted(r.client_id for r in last_round) == ["a", "b", "c"], last_round
        last_in = max(r.received_at for r in last_round)
        held = [(r.client_id, round((r.answered_at - last_in) * 1000, 1)) for r in last_round]
        print(f"\nrejoin of generation {final}: JoinGroup answers after the last rejoin arrived (ms): {held}")
        assert all(r.answered_at - last_in < 0.25 for r in last_round), held
        # and the first arrival really was parked until then: the barrier held it
        first_in = min(r.received_at for r in last_round)
        assert all(r.answered_at >= last_in for r in last_round)
        assert last_in > first_in
    finally:
        for c in members:
            c.close(timeout_ms=5000)
