"""A seek during a rebalance behaves as Java's: it applies while the partition is owned, and a
revoked partition is neither fetched from the seek nor seekable again (deterministic simulator).

Cooperative rebalancing (KIP-429): member ``a`` owns all four partitions and has consumed and
committed everything; while ``b``'s join makes the group rebalance (``a`` is JOINING), ``a``
seeks every partition back to 0. The two partitions ``a`` keeps are read again from 0 (the seek
applied); the two that move to ``b`` start at the committed offset there, not at ``a``'s seek;
and ``a`` can no longer seek them (IllegalStateError).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import kgroup
from kgroup.testing.simulation import SimulatedGroup

TOPIC = "events"


def test_a_seek_during_a_cooperative_rebalance_applies_only_to_partitions_still_owned() -> None:
    group = SimulatedGroup({TOPIC: 4}, seed=21)
    state: dict[str, object] = {"seek": False, "sought": False, "records": {"a": [], "b": []}}

    def app(name: str) -> Callable[[kgroup.Consumer, Callable[[], bool]], None]:
        def run(consumer: kgroup.Consumer, running: Callable[[], bool]) -> None:
            consumer.subscribe([TOPIC])
            while running():
                if name == "a" and state["seek"] and not state["sought"]:
                    for tp in sorted(consumer.assignment()):
                        consumer.seek(tp, 0)
                    state["sought"] = True
                records = consumer.poll(100)
                state["records"][name] += [(r.partition, r.offset) for r in records]  # type: ignore[index]
                if records and not state["sought"]:
                    consumer.commit()
            consumer.close()

        return run

    a = group.add_member("a", app("a"), assignors=("cooperative-sticky",))
    assert group.run_until(lambda: len(a.assignment()) == 4, 30)
    group.produce(TOPIC, 40)
    assert group.run_until(lambda: len(state["records"]["a"]) == 40, 30)  # type: ignore[arg-type]
    group.run_for(1)
    assert group.committed() == {kgroup.TopicPartition(TOPIC, p): 10 for p in range(4)}

    b = group.add_member("b", app("b"), assignors=("cooperative-sticky",))
    assert group.run_until(lambda: a.member_state() is kgroup.MemberState.JOINING, 30)
    state["seek"] = True
    assert group.run_until(lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, 60)
    group.run_for(5)
    assert state["sought"]
    kept, moved = sorted(a.assignment()), sorted(b.assignment())
    again = [(p, o) for p, o in state["records"]["a"][40:]]  # type: ignore[index]
    # the partitions a kept were read again from 0: the seek applied while owned
    assert sorted(again) == sorted((tp.partition, o) for tp in kept for o in range(10)), again
    # the partitions that moved start at the committed offset on b: nothing re-read there
    assert state["records"]["b"] == []
    for tp in moved:
        assert b.position(tp) == 10
        with pytest.raises(kgroup.IllegalStateError, match="not assigned"):
            a.seek(tp, 0)
    group.close()
