"""The poll thread's listener steps (``kgroup._driver.steps.ListenerSteps``) against a fake consumer.

A revoke whose generation was reset before the poll thread ran it (the poll watchdog fired while
a cooperative rebalance waited for ``poll()``) loses every partition the member owns at once, as
Java's ``ConsumerCoordinator.onJoinPrepare`` does without a generation: none of them is used
past that ``poll()`` while another member may own it already. The group thread's own step for
the rest then finds them given up and calls nothing twice.
"""

from __future__ import annotations

from typing import Any

from kgroup._clock import MonotonicClock
from kgroup._driver.steps import ListenerSteps
from kgroup.config import ConsumerConfig
from kgroup.listener import RebalanceListener
from kgroup.membership.commands import RebalanceStep
from kgroup.metrics import Recorder
from kgroup.types import ConsumerRecord, Generation, TopicPartition

P0, P1, P2 = (TopicPartition("t", p) for p in range(3))
OLD = Generation(4, "m-1", None)


class Calls(RebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, frozenset[TopicPartition]]] = []

    def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        self.calls.append(("revoked", partitions))

    def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        self.calls.append(("assigned", partitions))

    def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self.calls.append(("lost", partitions))


class Mailbox:
    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def take_all(self) -> list[Any]:
        items, self.items = self.items, []
        return items


class Group:
    def __init__(self) -> None:
        self.posted: list[Any] = []

    def post(self, event: Any) -> None:
        self.posted.append(event)


class Host:
    """The consumer's side of a step: its assignment, the generation it still holds, its callbacks."""

    def __init__(self, steps: ListenerSteps, owned: frozenset[TopicPartition], generation_valid: bool) -> None:
        self.steps = steps
        self.owned = owned
        self.generation_valid = generation_valid
        self._group = Group()
        self._mailbox = Mailbox([])
        self.dropped: set[TopicPartition] = set()

    @property
    def _assignment(self) -> frozenset[TopicPartition]:
        return self.owned

    def _set_assignment(self, partitions: frozenset[TopicPartition]) -> None:
        self.owned = partitions

    def _auto_commit_sync(self) -> None:
        pass

    def _generation_still(self, step: RebalanceStep) -> bool:
        return self.generation_valid

    def _invoke(self, callback: str, partitions: frozenset[TopicPartition]) -> None:
        self.steps.invoke(callback, partitions)

    def _run_step(self, step: RebalanceStep) -> None:
        self.steps.run(self, step)

    def _drop_taken(self, fetched: list[Any], taken: set[TopicPartition], columns: bool) -> list[Any]:
        self.dropped |= taken
        return [r for r in fetched if TopicPartition(r.topic, r.partition) not in taken]

    def _on_error(self, error: Exception) -> None:
        raise error


def make(owned: frozenset[TopicPartition], *, generation_valid: bool) -> tuple[Host, Calls]:
    config = ConsumerConfig(bootstrap_servers="fake:9092", group_id="g")
    clock = MonotonicClock()
    steps = ListenerSteps(config, clock, Recorder(clock), [])
    listener = Calls()
    steps.set_listener(listener)
    return Host(steps, owned, generation_valid), listener


def record(tp: TopicPartition, offset: int) -> ConsumerRecord:
    return ConsumerRecord(tp.topic, tp.partition, offset, None, b"v", (), 0, 0, None)


def test_a_revoke_after_the_generation_was_reset_loses_every_owned_partition_once() -> None:
    host, listener = make(frozenset({P0, P1}), generation_valid=False)
    revoke = RebalanceStep(step_id=1, generation=OLD, revoked=frozenset({P1}), owned=frozenset({P0}),
                           reason="cooperative")
    host._mailbox.items = [revoke]
    kept = host.steps.drain(host, [record(P0, 7), record(P1, 3)])
    assert kept == [], "records of every lost partition are dropped, not handed out"
    assert listener.calls == [("lost", frozenset({P0, P1}))]
    assert host.owned == frozenset()
    # the group thread's step for the rest: nothing is lost twice
    host._mailbox.items = [RebalanceStep(step_id=2, generation=Generation(), lost=frozenset({P0}),
                                         reason="generation reset")]
    host.steps.drain(host, None)
    assert listener.calls == [("lost", frozenset({P0, P1}))]
    assert [e.step_id for e in host._group.posted] == [1, 2]


def test_a_revoke_in_a_valid_generation_revokes_only_its_partitions() -> None:
    host, listener = make(frozenset({P0, P1}), generation_valid=True)
    host._mailbox.items = [RebalanceStep(step_id=1, generation=OLD, revoked=frozenset({P1}), owned=frozenset({P0}))]
    kept = host.steps.drain(host, [record(P0, 7), record(P1, 3)])
    assert kept == [record(P0, 7)]
    assert listener.calls == [("revoked", frozenset({P1}))]
    assert host.owned == frozenset({P0})


def test_lost_partitions_are_lost_once_and_only_those_owned() -> None:
    host, listener = make(frozenset({P0, P1}), generation_valid=False)
    host._mailbox.items = [RebalanceStep(step_id=1, generation=Generation(), lost=frozenset({P1, P2}),
                                         reason="poll timeout")]
    host.steps.drain(host, None)
    assert listener.calls == [("lost", frozenset({P1}))]
    assert host.owned == frozenset({P0})
