"""assign() on a real broker: no membership, commits with generation -1 to the group, resumed by the next."""

from __future__ import annotations

import pytest

import kgroup
from kgroup import TopicPartition
from kgroup.testing import produce

from .harness import BOTH, poll_records

pytestmark = BOTH


def test_assigned_consumers_share_the_groups_offsets(kafka_bootstrap, topic_factory, group_id_factory):
    topic = topic_factory(partitions=3)
    group = group_id_factory("manual")
    produce(kafka_bootstrap, topic, [(p, b"k", b"%d" % i) for i in range(10) for p in range(3)])
    mine = [TopicPartition(topic, 0), TopicPartition(topic, 2)]
    settings = {"bootstrap_servers": kafka_bootstrap, "group_id": group, "auto_offset_reset": "earliest",
                "enable_auto_commit": False}
    with kgroup.Consumer(**settings) as first:
        first.assign(mine)
        with pytest.raises(kgroup.IllegalStateError, match="mutually exclusive"):
            first.subscribe([topic])
        got = poll_records(first, 20)
        assert sorted((r.partition, r.offset) for r in got) == [(p, o) for p in (0, 2) for o in range(10)]
        first.commit({mine[0]: 4, mine[1]: 7})
        assert first.committed(mine) == {mine[0]: kgroup.OffsetAndMetadata(4), mine[1]: kgroup.OffsetAndMetadata(7)}
        assert first.group_metadata().generation_id == -1
    with kgroup.Consumer(**settings) as second:
        second.assign(mine)
        got = poll_records(second, 9)
        assert sorted((r.partition, r.offset) for r in got) == [(0, o) for o in range(4, 10)] + [(2, 7), (2, 8), (2, 9)]
