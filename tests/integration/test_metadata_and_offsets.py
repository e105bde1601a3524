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
    assert transport.partitions_for([topic], 10_000).result(15) == {topic: 3}


def test_earliest_offsets_of_a_new_topic_are_zero(transport, topic_factory, kafka_bootstrap) -> None:
    topic = topic_factory(2)
    produce(kafka_bootstrap, topic, [(0, None, b"a"), (1, None, b"b")])
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1), TopicPartition("no-such-topic-kgroup", 0)]
    assert transport.list_offsets(tps, "earliest", 10_000).result(15) == {tps[0]: 0, tps[1]: 0}


def test_bad_spec_is_a_typed_error(transport) -> None:
    with pytest.raises(ValueError, match="earliest"):
        transport.list_offsets([TopicPartition("t", 0)], "newest", 1000).result(5)


@pytest.mark.tansu_deviation(LISTOFFSETS_LATEST)
def test_latest_offset_is_the_log_end_offset_on_the_bare_broker(transport, topic_factory, kafka_bootstrap) -> None:
    topic = topic_factory(1)
    produce(kafka_bootstrap, topic, [(0, None, b"x%d" % i) for i in range(7)])  # one batch of 7
    tp = TopicPartition(topic, 0)
    assert transport.list_offsets([tp], "latest", 10_000).result(15) == {tp: 7}
