"""The adapter's Metadata and ListOffsets calls against the real broker.

``describe_topics`` feeds rack-aware assignment (KIP-881) and ``list_offsets`` feeds lag
(``kgroup describe``) and offset planning (``kgroup.spark``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kgroup._io.kafka_python import KafkaPythonTransport
from kgroup.config import ConsumerConfig
from kgroup.testing import produce
from kgroup.types import TopicPartition
from tests.integration.harness import BOTH

LISTOFFSETS_LATEST = (
    "ListOffsets with timestamp -1 (LATEST) answers the base offset of the partition's last "
    "record batch + 1, not the log end offset (Fetch's high watermark is right)"
)


@pytest.fixture
def transport(kafka_bootstrap: str) -> Iterator[KafkaPythonTransport]:
    t = KafkaPythonTransport(ConsumerConfig(bootstrap_servers=kafka_bootstrap, group_id="unused"))
    t.start(10_000)
    yield t
    t.close()


def test_describe_topics_lists_every_partition_with_its_leader(transport, topic_factory) -> None:
    topic = topic_factory(3)
    described = transport.describe_topics([topic, "no-such-topic-kgroup"], 10_000).result(15)
    assert set(described) == {topic}
    parts = described[topic]
    assert [p.partition for p in parts] == [0, 1, 2]
    assert all(p.leader >= 0 for p in parts)


def test_earliest_offsets_of_a_new_topic_are_zero(transport, topic_factory, kafka_bootstrap) -> None:
    topic = topic_factory(2)
    produce(kafka_bootstrap, topic, [(0, None, b"a"), (1, None, b"b")])
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1), TopicPartition("no-such-topic-kgroup", 0)]
    assert transport.list_offsets(tps, "earliest", 10_000).result(15) == {tps[0]: 0, tps[1]: 0}


def test_bad_spec_is_a_typed_error(transport) -> None:
    with pytest.raises(ValueError, match="earliest"):
        transport.list_offsets([TopicPartition("t", 0)], "newest", 1000).result(5)


@BOTH
@pytest.mark.tansu_deviation(LISTOFFSETS_LATEST)
def test_latest_offset_is_the_log_end_offset_on_the_bare_broker(transport, topic_factory, kafka_bootstrap) -> None:
    topic = topic_factory(1)
    produce(kafka_bootstrap, topic, [(0, None, b"x%d" % i) for i in range(7)])  # one batch of 7
    tp = TopicPartition(topic, 0)
    assert transport.list_offsets([tp], "latest", 10_000).result(15) == {tp: 7}


# ------------------------------------------------------------------ through the coordinator proxy
# CoordinatorProxy answers ListOffsets LATEST with the log end offset (the high watermark Tansu's
# Fetch reports), so lag and "latest" resets have Kafka's semantics through ``kafka_cluster``.


def _proxy_transport(bootstrap: str, **config) -> KafkaPythonTransport:
    t = KafkaPythonTransport(ConsumerConfig(bootstrap_servers=bootstrap, group_id="unused", **config))
    t.start(10_000)
    return t


def test_latest_offset_is_the_log_end_offset_through_the_proxy(kafka_cluster, topic_factory, kafka_bootstrap) -> None:
    topic = topic_factory(3)
    produce(kafka_bootstrap, topic, [(0, None, b"x%d" % i) for i in range(7)])  # one batch of 7
    produce(kafka_bootstrap, topic, [(0, None, b"y%d" % i) for i in range(3)])  # then one of 3
    produce(kafka_bootstrap, topic, [(1, None, b"z")])  # a single record
    tps = [TopicPartition(topic, p) for p in range(3)]  # partition 2 stays empty
    for isolation in ("read_uncommitted", "read_committed"):  # no transactions: LSO == HW
        t = _proxy_transport(kafka_cluster.bootstrap_servers, isolation_level=isolation)
        try:
            assert t.list_offsets(tps, "latest", 10_000).result(15) == {tps[0]: 10, tps[1]: 1, tps[2]: 0}
            assert t.list_offsets(tps, "earliest", 10_000).result(15) == {tps[0]: 0, tps[1]: 0, tps[2]: 0}
        finally:
            t.close()
    handled = [r.handled_by for r in kafka_cluster.requests("ListOffsets")]
    assert handled.count("upstream-fixed") == 2  # the LATEST ones; EARLIEST is forwarded untouched
    assert handled.count("upstream") == 2


def test_the_fix_can_be_switched_off(kafka_broker, topic_factory, kafka_bootstrap) -> None:
    from kgroup.testing import CoordinatorProxy

    topic = topic_factory(1)
    produce(kafka_bootstrap, topic, [(0, None, b"x%d" % i) for i in range(7)])
    tp = TopicPartition(topic, 0)
    with CoordinatorProxy(kafka_broker.bootstrap_servers, fix_list_offsets=False) as proxy:
        t = _proxy_transport(proxy.bootstrap_servers)
        try:
            latest = t.list_offsets([tp], "latest", 10_000).result(15)
        finally:
            t.close()
        assert {r.handled_by for r in proxy.requests("ListOffsets")} == {"upstream"}
    # forwarded as the broker answered it: the log end offset on Kafka, 0 + 1 on Tansu (LISTOFFSETS_LATEST)
    assert latest[tp] == (1 if kafka_broker.kind == "tansu" else 7)
