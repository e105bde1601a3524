"""Follower fetching (KIP-392): each partition's preferred read replica, for the fetch pipeline.

Java's ``AbstractFetch.selectReadReplica`` and ``SubscriptionState.updatePreferredReadReplica``
are the reference. When a partition's leader names a ``preferred_read_replica`` in a Fetch
response (a broker with ``replica.selector.class``, e.g. ``RackAwareReplicaSelector``, and a
replica in the client's rack), the partition is fetched from that replica until
``metadata_max_age_ms`` has passed (naming the same replica again does not extend it), while the
metadata lists the replica as an online replica of the partition. The fetch pipeline
(:mod:`kgroup._io.fetch_pipeline`) forgets a partition's replica, so that the leader serves it
again, after the errors and failures its module docstring lists.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kafka.structs import TopicPartition as KTopicPartition

__all__ = ["ReadReplicas"]

log = logging.getLogger(__name__)


class ReadReplicas:
    """The preferred read replica of each partition that has one, with its expiry.

    Args:
        cluster: kafka-python's cluster metadata (``is_replica_node``, its partitions'
            ``offline_replicas``, ``request_update``).
        max_age_ms: how long a named replica serves its partition (``metadata_max_age_ms``, ms).

    Times are the caller's monotonic clock, in seconds. Used from the poll thread.

    """

    def __init__(self, cluster: Any, max_age_ms: int) -> None:
        self._cluster = cluster
        self._max_age_s = max_age_ms / 1000
        self._entries: dict[KTopicPartition, tuple[int, float]] = {}  # node, expiry

    def __bool__(self) -> bool:
        return bool(self._entries)

    def nodes(self) -> set[int]:
        """The nodes named as some partition's replica (expired or not)."""
        return {node for node, _ in self._entries.values()}

    def retain(self, keep: Callable[[KTopicPartition], bool]) -> None:
        """Forget the replicas of the partitions ``keep`` rejects (no longer assigned)."""
        for ktp in [ktp for ktp in self._entries if not keep(ktp)]:
            del self._entries[ktp]

    def current(self, ktp: KTopicPartition, now: float) -> int | None:
        """``ktp``'s replica while it has not expired, else None (the leader)."""
        entry = self._entries.get(ktp)
        return None if entry is None or now > entry[1] else entry[0]

    def select(self, ktp: KTopicPartition, leader: int, now: float) -> int:
        """The node to fetch ``ktp`` from: its preferred read replica, else ``leader`` (Java ``selectReadReplica``).

        The preferred replica is used while it has not expired and the metadata lists it as an
        online replica of ``ktp``; one that is not is forgotten (and, when not online, the
        metadata refreshed).
        """
        entry = self._entries.get(ktp)
        if entry is None:
            return leader
        node, expires = entry
        if now > expires:
            del self._entries[ktp]
            log.debug("the preferred read replica %s of %s expired: fetching from the leader %s", node, ktp, leader)
            return leader
        if not self._online_replica(ktp, node):
            del self._entries[ktp]
            log.debug("the preferred read replica %s of %s is not an online replica: fetching from the leader %s",
                      node, ktp, leader)
            self._cluster.request_update()
            return leader
        return node

    def _online_replica(self, ktp: KTopicPartition, node: int) -> bool:
        """The metadata knows ``node`` and lists it as a replica of ``ktp``, not an offline one."""
        if not self._cluster.is_replica_node(ktp, node):
            return False
        partitions = getattr(self._cluster, "_partitions", {}).get(ktp.topic, {})
        return node not in (getattr(partitions.get(ktp.partition), "offline_replicas", None) or ())

    def clear(self, ktp: KTopicPartition, why: str) -> int | None:
        """Forget ``ktp``'s preferred read replica (the leader serves its next Fetch); the one forgotten."""
        entry = self._entries.pop(ktp, None)
        if entry is None:
            return None
        log.debug("%s: fetching %s from its leader again instead of the preferred read replica %s", why, ktp, entry[0])
        return entry[0]

    def note(self, ktp: KTopicPartition, node: int | None, now: float) -> None:
        """Fetch ``ktp`` from ``node`` (a response's ``preferred_read_replica``) for ``max_age_ms``.

        -1 or None (none named) changes nothing, and naming the same replica again does not
        extend its expiry.
        """
        if node is None or node < 0:
            return
        entry = self._entries.get(ktp)
        if entry is not None and entry[0] == node:
            return
        self._entries[ktp] = (node, now + self._max_age_s)
        log.debug("fetching %s from its preferred read replica %s (KIP-392)", ktp, node)
