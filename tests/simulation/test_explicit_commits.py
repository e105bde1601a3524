"""Explicit-offset commits of partitions a member does not own: refused, and nothing sent.

The campaigns' application commits explicit offsets too, of partitions it was revoked or lost and
inside ``on_partitions_lost`` (docs/simulation.md, "Scenarios and faults"); these tests pin the
rule on one small group each.
"""

from __future__ import annotations

from typing import Any

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
