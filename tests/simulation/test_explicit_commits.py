"""Explicit-offset commits of partitions a member does not own: refused, and nothing sent.

The campaigns' application commits explicit offsets too, of partitions it was revoked or lost and
inside ``on_partitions_lost`` (docs/simulation.md, "Scenarios and faults"); these tests pin the
rule on one small group each.
"""

from __future__ import annotations

from typing import Any

import pytest

import kgroup
from kgroup.errors import CommitFailedError
from kgroup.testing.simulation import SimulatedGroup
from kgroup.types import OffsetAndMetadata, TopicPartition


class _LostListener(kgroup.RebalanceListener):
    """Inside on_partitions_lost: what the consumer owns, and a commit of the lost partitions."""

    def __init__(self) -> None:
        self.consumer: kgroup.Consumer | None = None
        self.seen: list[tuple[frozenset[TopicPartition], frozenset[TopicPartition], BaseException | None]] = []

    def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        consumer = self.consumer
        assert consumer is not None
        owned = consumer.assignment()
        error: BaseException | None = None
        try:
            consumer.commit({tp: OffsetAndMetadata(1) for tp in partitions}, timeout_ms=2000)
        except kgroup.KGroupError as exc:
            error = exc
        self.seen.append((frozenset(partitions), owned, error))


def test_inside_on_partitions_lost_the_lost_partitions_are_not_owned_and_a_commit_of_them_is_refused() -> None:
    """Cut off from the coordinator past its session timeout, the member loses its partitions; in
    on_partitions_lost they no longer count as owned (``assignment()``) and committing them raises
    CommitFailedError without an OffsetCommit going out."""
    group = SimulatedGroup({"t": 2}, seed=3)
    group.produce("t", 20)
    listener = _LostListener()
    sent: list[frozenset[TopicPartition]] = []

    def app(consumer: kgroup.Consumer, running: Any) -> None:
        listener.consumer = consumer
        consumer.subscribe(["t"], listener=listener)
        while running():
            try:
                consumer.poll(100)
            except kgroup.KGroupError:
                continue
        consumer.close()

    consumer = group.add_member("a", app, session_timeout_ms=6000, heartbeat_interval_ms=1000,
                                enable_auto_commit=False)
    transport = group.members["a"].transport
    transport.on_commit_sent = lambda generation, partitions: sent.append(partitions & transport.forbidden)
    assert group.run_until(lambda: len(consumer.assignment()) == 2, timeout_s=30.0)
    transport.forbidden = frozenset(consumer.assignment())  # none of them may be committed from now on
    group.black_hole(20.0)
    assert group.run_until(lambda: bool(listener.seen), timeout_s=40.0)
    lost, owned, error = listener.seen[0]
    assert lost == {TopicPartition("t", 0), TopicPartition("t", 1)}
    assert not (lost & owned), f"on_partitions_lost ran while {sorted(map(str, lost & owned))} still counted as owned"
    assert isinstance(error, CommitFailedError), repr(error)
    assert not any(sent), sent
    group.close()


# ------------------------------------------------------------------------------ the poll thread's own look
def test_the_poll_thread_holds_its_hand_outs_at_the_session_deadline_when_the_group_thread_is_late(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A member cut off from the coordinator right after a heartbeat was answered, while records
    flow every 5 ms; its group thread wakes 40 ms late at every timed step. The coordinator removes
    it one network latency after its session deadline (counted from that heartbeat's send time);
    the poll thread looks at that deadline itself (``MemberSnapshot.hold_at``) and hands nothing
    out from then on, whether the group thread has run or not."""
    from kgroup.testing.coordinator._events import MEMBER_REMOVED
    from kgroup.testing.simulation._scheduler import Scheduler

    monkeypatch.setattr(Scheduler, "lateness", lambda self: 0.04)
    group = SimulatedGroup({"t": 1}, seed=5)
    handed: list[float] = []

    def app(consumer: kgroup.Consumer, running: Any) -> None:
        consumer.subscribe(["t"])
        while running():
            try:
                if consumer.poll(100):
                    handed.append(group.now)
            except kgroup.KGroupError:
                continue
        consumer.close()

    def produce() -> None:
        group.produce("t", 1)
        group.scheduler.call_later(0.005, produce)

    consumer = group.add_member("a", app, session_timeout_ms=6000, heartbeat_interval_ms=1000)
    produce()
    assert group.run_until(lambda: bool(consumer.assignment()) and bool(handed), timeout_s=30.0)
    group.run_for(2.5)  # heartbeats answered: the coordinator's session clock is the member's, one latency on
    group.black_hole(12.0)
    group.run_for(10.0)
    removed = [e.time_ms / 1000 for e in group.cluster.model.events if e.kind == MEMBER_REMOVED]
    assert removed, "the coordinator did not remove the member: the test lost its point"
    late = [t for t in handed if t >= removed[0]]
    assert not late, f"records handed out at {late[:5]} after the coordinator removed the member at {removed[0]}"
    group.close()
