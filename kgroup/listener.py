"""Rebalance listeners: the callbacks a consumer runs when its partitions change.

The contract (Java's ``ConsumerRebalanceListener``, stated as franz-go states its callbacks):

* Callbacks run **only on the thread that calls** ``Consumer.poll()`` or ``Consumer.close()``,
  never on kgroup's group (heartbeat) thread or kafka-python's IO thread, and never
  concurrently with each other.
* Heartbeats keep flowing while a callback runs (up to the rebalance timeout): the group
  thread is independent of the poll thread.
* Within one step the order is lost, then revoked, then assigned.
* EAGER (the classic protocol: Rebalancing): ``on_partitions_revoked(everything owned)`` runs before
  JoinGroup; ``on_partitions_assigned(everything assigned)`` runs after SyncGroup, also when
  the assignment is empty. COOPERATIVE (KIP-429): ``on_partitions_revoked`` only for
  partitions that really go away (and only when non-empty); ``on_partitions_assigned`` for the
  new ones, always.
* Across members, every revoke of a rebalance completes before any assign of it: nobody
  passes JoinGroup before everybody finished revoking (the classic protocol: Rebalances as Double Barriers).
* ``commit()`` works inside ``on_partitions_revoked`` (the generation is still valid) and inside
  ``on_partitions_assigned``; inside ``on_partitions_lost`` it raises ``CommitFailedError``,
  because the partitions may already belong to someone else.
* No record of a partition is handed out once its revocation starts (acquiesce).
* If a callback raises, the rebalance still completes and the exception surfaces from that
  ``poll()`` as ``ListenerError`` with the user's exception as ``__cause__``.
* ``close()`` from inside a callback raises ``IllegalStateError`` instead of deadlocking.
"""

from __future__ import annotations

from kgroup.types import TopicPartition

__all__ = ["RebalanceListener"]


class RebalanceListener:
    """Subclass and override the callbacks you need; the defaults do nothing.

    Every callback receives a ``frozenset[TopicPartition]``. See the module docstring for
    threads, ordering and errors.
    """

    def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        """Partitions this member gives up; commit their offsets here if you commit manually."""

    def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        """Partitions newly assigned; ``seek()`` here to choose where to start."""

    def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        """Partitions lost without a clean revoke (generation reset, poll timeout, fencing).

        They may already be owned by another member: do not commit. The default calls
        ``on_partitions_revoked`` (Java's default).
        """
        self.on_partitions_revoked(partitions)
