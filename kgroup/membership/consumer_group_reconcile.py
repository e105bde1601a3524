"""The consumer-protocol member's assignment and the steps it sends the poll thread (KIP-848).

Java's ``AbstractMembershipManager`` keeps a target assignment (the broker's, by topic id), a
current one (the last reconciled) and resolves topic ids to names from metadata before it
reconciles. Here they are frozen values that ``ConsumerGroupMachine``
(:mod:`kgroup.membership.consumer_group`) replaces on change:

* ``Reconciliation``: the target and current assignments, the names known, the ids asked for;
* ``Steps``: the step out to the poll thread (``PendingStep``), the partitions the poll thread
  owns as far as the steps delivered go, and a release waiting behind the step.

The machine decides when a step goes and what it holds (``_maybe_reconcile``); these values
answer what the assignment is.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from uuid import UUID

import attrs

from kgroup.membership.commands import RebalanceStep
from kgroup.membership.consumer_group_heartbeat import NO_ASSIGNMENT, LocalAssignment
from kgroup.protocol.consumer_group_heartbeat import TopicIdPartitions
from kgroup.types import TopicPartition

__all__ = ["PendingStep", "Reconciliation", "StepKind", "Steps", "flatten"]

_NO_NAMES: Mapping[UUID, str] = MappingProxyType({})


def flatten(topics: Iterable[TopicIdPartitions]) -> frozenset[tuple[UUID, int]]:
    """The (topic id, partition) pairs of an assignment as the broker sends it."""
    return frozenset((tp.topic_id, p) for tp in topics for p in tp.partitions)


@attrs.frozen
class Reconciliation:
    """The target and current assignments, and the topic names that resolve them."""

    #: the last target assignment received from the broker
    target: LocalAssignment = NO_ASSIGNMENT
    #: the last reconciled assignment, the one the heartbeats acknowledge
    current: LocalAssignment = NO_ASSIGNMENT
    #: the topic names metadata gave last (``MetadataUpdated``)
    metadata_names: Mapping[UUID, str] = _NO_NAMES
    #: the names of the target's topics, kept while they are assigned (a deleted topic keeps its name)
    assigned_names: Mapping[UUID, str] = _NO_NAMES
    #: the topic ids asked for (``RequestMetadata``), and when
    requested_ids: frozenset[UUID] = frozenset()
    metadata_requested_at: float = 0.0

    def resolve(self) -> tuple[frozenset[tuple[UUID, int]], frozenset[UUID], Reconciliation]:
        """The target's partitions whose topic names are known, the topic ids that are not, and the names kept."""
        names = dict(self.assigned_names)
        resolved = set()
        unresolved = set()
        for topic_id, partition in self.target.partitions:
            name = self.metadata_names.get(topic_id)
            if name is not None:
                names[topic_id] = name
            elif topic_id in names:
                name = names[topic_id]
            if name is None:
                unresolved.add(topic_id)
            else:
                resolved.add((topic_id, partition))
        return frozenset(resolved), frozenset(unresolved), attrs.evolve(self, assigned_names=MappingProxyType(names))

    def named(self, partitions: Iterable[tuple[UUID, int]]) -> frozenset[TopicPartition]:
        """``partitions`` by topic name (every id resolved by ``resolve``)."""
        return frozenset(TopicPartition(self.assigned_names[t], p) for t, p in partitions)

    def received(self, assignment: tuple[TopicIdPartitions, ...]) -> Reconciliation:
        """Java ``processAssignmentReceived``: a newer target replaces the one waiting (a new local epoch)."""
        partitions = flatten(assignment)
        if self.target == NO_ASSIGNMENT or partitions != self.target.partitions:
            return attrs.evolve(self, target=LocalAssignment(self.target.local_epoch + 1, partitions))
        return self

    def metadata(self, names: Mapping[UUID, str]) -> Reconciliation:
        """New metadata: the names, and no ids asked for once all those asked for are known."""
        requested = self.requested_ids
        if requested and not (requested - set(names)):
            requested = frozenset()
        return attrs.evolve(self, metadata_names=names, requested_ids=requested)

    def rejoining(self) -> Reconciliation:
        """Joining again: no target, no names kept, nothing asked for (the current one stays)."""
        return attrs.evolve(self, target=NO_ASSIGNMENT, assigned_names=_NO_NAMES, requested_ids=frozenset())

    def cleared(self) -> Reconciliation:
        """The partitions were released: no target, no current assignment."""
        return attrs.evolve(self.rejoining(), current=NO_ASSIGNMENT)


class StepKind(enum.Enum):
    """What a step out to the poll thread does."""

    RECONCILE = "reconcile"
    RELEASE_LOST = "lost"  # fenced, stale or fatal: the partitions are lost
    RELEASE_LEAVE = "leave"  # leaving: revoked (epoch > 0) or lost


@attrs.frozen
class PendingStep:
    """The step out to the poll thread, and the assignment it reconciles (RECONCILE)."""

    step: RebalanceStep
    kind: StepKind
    resolved: LocalAssignment | None = None


@attrs.frozen
class Steps:
    """The poll thread's side: its partitions, the step out, and what waits for it."""

    #: the id the next step gets
    next_id: int = 1
    pending: PendingStep | None = None
    #: the partitions the poll thread owns, as far as the steps delivered so far go
    owned: frozenset[TopicPartition] = frozenset()
    #: the member rejoined while a reconciliation's step was out: its completion changes nothing
    rejoined_while_reconciling: bool = False
    #: a rebalance listener failed: reconcile again at the next ``Polled``
    retry_at_poll: bool = False
    #: a release that waits for the step in progress, and its reason
    release_after: StepKind | None = None
    release_reason: str = ""

    @property
    def taking_partitions(self) -> bool:
        """A reconciliation that adds partitions is out: the owned set is about to grow.

        kgroup, beyond Java: a heartbeat sent meanwhile leaves ``topic_partitions`` out (null:
        "unchanged", on which the coordinator keeps assuming the member owns what it was given,
        ``CurrentAssignmentBuilder``) instead of reporting the owned set from before the step.
        Reporting it (Java resends every field after an error, ``HeartbeatState.reset``) tells a
        coordinator with a newer target that the member owns none of the partitions it is taking,
        so it releases them to another member at once: two owners (the simulator on the consumer
        protocol, seed 5267). The acknowledgement after the step reports the new owned set.
        """
        return self.pending is not None and bool(self.pending.step.assigned)
