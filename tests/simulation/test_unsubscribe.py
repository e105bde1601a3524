"""unsubscribe() with Java's semantics (deterministic simulator): revoke with callbacks, commit,
LeaveGroup for a dynamic member (the others get its partitions at once), none for a static one;
poll() then says the consumer is not subscribed; subscribe() again joins as a member anew."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import kgroup
from kgroup.testing.simulation import SimulatedGroup

TOPIC = "events"


class _Log(kgroup.RebalanceListener):
    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []

    def on_partitions_revoked(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
        self.events.append(("revoked", len(partitions)))

    def on_partitions_assigned(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
        self.events.append(("assigned", len(partitions)))


def _app(listener: _Log, plan: list[str]) -> Callable[[kgroup.Consumer, Callable[[], bool]], None]:
    def run(consumer: kgroup.Consumer, running: Callable[[], bool]) -> None:
        consumer.subscribe([TOPIC], listener=listener)
        while running():
            if plan and plan[0] == "unsubscribe":
                plan.pop(0)
                consumer.unsubscribe()
                with pytest.raises(kgroup.IllegalStateError, match="not subscribed"):
                    consumer.poll(0)
                plan.append("unsubscribed")
                continue
            if plan and plan[0] == "unsubscribed":
                consumer._clock.sleep(0.1)
                continue
            if plan and plan[0] == "subscribe":
                plan.pop(0)
                consumer.subscribe([TOPIC], listener=listener)
            if consumer.poll(100):
                consumer.commit()
        consumer.close()

    return run


@pytest.mark.parametrize("static", [False, True])
def test_unsubscribe_revokes_leaves_and_subscribe_joins_again(static: bool) -> None:
    group = SimulatedGroup({TOPIC: 4}, seed=31)
    log_a, plan_a = _Log(), []
    extra = {"group_instance_id": "a-0", "session_timeout_ms": 10000} if static else {}
    a = group.add_member("a", _app(log_a, plan_a), **extra)
    b = group.add_member("b", _app(_Log(), []))
    assert group.run_until(lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, 30)
    group.produce(TOPIC, 40)
    group.run_for(3)
    member_id = a.group_metadata().member_id
    plan_a.append("unsubscribe")
    assert group.run_until(lambda: "unsubscribed" in plan_a, 30)
    assert a.assignment() == frozenset() and a.subscription() == frozenset()
    assert log_a.events[-1] == ("revoked", 2)
    if static:
        # no LeaveGroup: the coordinator keeps a's partitions for it until its session expires
        group.run_for(5)
        assert len(b.assignment()) == 2
        assert group.run_until(lambda: len(b.assignment()) == 4, 15)  # session_timeout_ms passed
    else:
        # LeaveGroup: b gets everything without waiting for a session timeout
        assert group.run_until(lambda: len(b.assignment()) == 4, 5)
    plan_a[:] = ["subscribe"]
    assert group.run_until(lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, 60)
    assert (a.group_metadata().member_id == member_id) is False  # a member anew (static: a new member id too)
    group.produce(TOPIC, 40)
    group.run_for(5)
    group.check()  # nothing lost, nothing committed beyond what was handed out
