"""enforce_rebalance (KIP-568): the member rejoins on its next poll, its reason travels with the
JoinGroup (KIP-800) and the listeners of that rebalance read it (deterministic simulator)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import kgroup
from kgroup.testing.simulation import SimulatedGroup

TOPIC = "events"


class _Reasons(kgroup.RebalanceListener):
    def __init__(self) -> None:
        self.consumer: kgroup.Consumer | None = None
        self.seen: list[tuple[str, str]] = []

    def on_partitions_revoked(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
        assert self.consumer is not None
        self.seen.append(("revoked", self.consumer.rebalance_reason))

    def on_partitions_assigned(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
        assert self.consumer is not None
        self.seen.append(("assigned", self.consumer.rebalance_reason))


def test_enforce_rebalance_rejoins_with_its_reason() -> None:
    group = SimulatedGroup({TOPIC: 2}, seed=4)
    listener = _Reasons()
    enforce: list[bool] = []

    def app(consumer: kgroup.Consumer, running: Callable[[], bool]) -> None:
        listener.consumer = consumer
        with pytest.raises(kgroup.IllegalStateError, match="only supported for subscribed consumers"):
            consumer.enforce_rebalance()
        consumer.subscribe([TOPIC], listener=listener)
        while running():
            if enforce and enforce.pop():
                consumer.enforce_rebalance("the pricing model changed")
            consumer.poll(100)
        consumer.close()

    a = group.add_member("a", app)
    assert group.run_until(lambda: a.metrics()["rebalance-total"] == 1, 30)
    generation = a.group_metadata().generation_id
    enforce.append(True)
    assert group.run_until(lambda: a.metrics()["rebalance-total"] == 2, 30)
    assert a.group_metadata().generation_id == generation + 1
    assert ("revoked", "the pricing model changed") in listener.seen
    assert any(kind == "assigned" and reason.endswith("after: the pricing model changed")
               for kind, reason in listener.seen), listener.seen
    started = [e.detail for e in group.cluster.model.events if "pricing" in e.detail]
    assert started, "the reason did not reach the coordinator"
    group.check()
