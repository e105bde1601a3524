"""assign() with Java's semantics (deterministic simulator): no membership, commits to the group.

A manually assigned consumer joins nothing (the group's members never see it), reads from the
group's committed offsets, commits with generation -1 (accepted for a group with no members),
and mixing it with subscribe() is refused as in Java.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import kgroup
from kgroup import TopicPartition
from kgroup.testing.simulation import SimulatedGroup

TOPIC = "events"


def test_assign_consumes_commits_and_refuses_subscribe() -> None:
    group = SimulatedGroup({TOPIC: 3}, seed=51)
    group.produce(TOPIC, 30)  # 10 per partition
    seen: list[tuple[int, int]] = []
    mine = [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 2)]

    def app(consumer: kgroup.Consumer, running: Callable[[], bool]) -> None:
        with pytest.raises(kgroup.IllegalStateError, match="not subscribed"):
            consumer.poll(0)
        consumer.assign(mine)
        with pytest.raises(kgroup.IllegalStateError, match="mutually exclusive"):
            consumer.subscribe([TOPIC])
        while running():
            records = consumer.poll(100)
            seen.extend((r.partition, r.offset) for r in records)
            if records:
                consumer.commit()
        consumer.close()

    a = group.add_member("a", app)
    assert group.run_until(lambda: len(seen) == 20, 30)
    assert sorted(seen) == [(p, o) for p in (0, 2) for o in range(10)]
    assert a.assignment() == frozenset(mine)
    assert a.group_metadata().generation_id == -1 and a.group_metadata().member_id == ""
    assert group.run_until(lambda: group.committed() == {mine[0]: 10, mine[1]: 10}, 10)
    assert group.cluster.model._groups.get(group.group_id) is None or not group.cluster.model._groups[
        group.group_id
    ].members  # it never joined
    group.check()


def test_a_second_assigned_consumer_resumes_from_the_commits() -> None:
    group = SimulatedGroup({TOPIC: 1}, seed=52)
    group.produce(TOPIC, 10)
    firsts: list[int] = []
    seconds: list[int] = []
    tp = TopicPartition(TOPIC, 0)

    def app(out: list[int], limit: int) -> Callable[[kgroup.Consumer, Callable[[], bool]], None]:
        def run(consumer: kgroup.Consumer, running: Callable[[], bool]) -> None:
            consumer.assign([tp])
            while running() and len(out) < limit:
                records = consumer.poll(100)[: limit - len(out)]
                if records:
                    out.extend(r.offset for r in records)
                    consumer.commit({tp: records[-1].offset + 1})
            consumer.unsubscribe()
            assert consumer.assignment() == frozenset()
            consumer.close()

        return run

    group.add_member("first", app(firsts, 4), max_poll_records=2)
    assert group.run_until(lambda: len(firsts) == 4 and group.committed().get(tp) == 4, 30)
    group.add_member("second", app(seconds, 6))
    assert group.run_until(lambda: len(seconds) == 6, 30)
    assert firsts == [0, 1, 2, 3] and seconds == [4, 5, 6, 7, 8, 9]
    group.check()
