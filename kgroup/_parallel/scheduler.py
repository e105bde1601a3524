"""Which record runs next: ordering by key, by partition or none, and retries held back.

A *lane* is what must run one record at a time, in offset order: ``(partition, key)`` under
``ordering="key"``, the partition under ``"partition"``, each record on its own under
``"unordered"``. A lane is busy from ``take()`` until ``finish()``; a record to retry keeps its
lane busy until its time comes (``retry()``), so nothing behind it in its lane overtakes it.
Pure: time is a number passed in.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Collection, Hashable
from typing import Generic, Literal, TypeVar

from kgroup.types import TopicPartition

__all__ = ["ORDERINGS", "Lane", "Ordering", "Scheduler"]

Ordering = Literal["key", "partition", "unordered"]
ORDERINGS: tuple[Ordering, ...] = ("key", "partition", "unordered")

#: (partition, what orders within it)
Lane = tuple[TopicPartition, Hashable]
T = TypeVar("T")


def _hashable(key: object) -> Hashable:
    try:
        hash(key)
    except TypeError:
        return ("repr", repr(key))  # a deserialized key such as a dict: equal keys, equal reprs
    return key


class Scheduler(Generic[T]):
    """Records waiting to run, per lane, and the lanes ready to run one.

    Args:
        ordering: "key" (records with equal keys in one partition one at a time, in offset
            order; a null key is one key), "partition" (a partition's records one at a time)
            or "unordered".

    """

    def __init__(self, ordering: Ordering) -> None:
        if ordering not in ORDERINGS:
            raise ValueError(f"ordering must be one of {ORDERINGS}, not {ordering!r}")
        self._ordering = ordering
        #: the waiting records of every lane with records waiting or running
        self._lanes: dict[Lane, deque[T]] = {}
        #: lanes not busy, with a record waiting, in the order they became ready
        self._ready: deque[Lane] = deque()
        #: (due, sequence, lane, record): retries waiting for their time, their lanes busy
        self._retries: list[tuple[float, int, Lane, T]] = []
        self._sequence = itertools.count()
        self._waiting = 0

    def lane(self, tp: TopicPartition, key: object) -> Lane:
        """The lane of a record of ``tp`` with ``key``."""
        if self._ordering == "key":
            return (tp, _hashable(key))
        if self._ordering == "partition":
            return (tp, None)
        return (tp, ("record", next(self._sequence)))

    def add(self, lane: Lane, record: T) -> None:
        """Queue ``record`` at the end of ``lane``."""
        queue = self._lanes.get(lane)
        if queue is None:
            self._lanes[lane] = deque((record,))
            self._ready.append(lane)
        else:
            queue.append(record)  # the lane is busy or ready already
        self._waiting += 1

    def take(self, now: float) -> tuple[Lane, T] | None:
        """The next record to run (a retry that is due first), its lane busy from now on."""
        if self._retries and self._retries[0][0] <= now:
            _, _, lane, record = heapq.heappop(self._retries)
            return lane, record
        if not self._ready:
            return None
        lane = self._ready.popleft()
        self._waiting -= 1
        return lane, self._lanes[lane].popleft()

    def finish(self, lane: Lane) -> None:
        """The running record of ``lane`` is done: its next record may run."""
        queue = self._lanes.get(lane)
        if queue is None:
            return  # its partition was dropped meanwhile
        if queue:
            self._ready.append(lane)
        else:
            del self._lanes[lane]

    def retry(self, lane: Lane, record: T, due: float) -> None:
        """Run ``record`` again at ``due`` (its lane stays busy until then)."""
        if lane in self._lanes:
            heapq.heappush(self._retries, (due, next(self._sequence), lane, record))

    def drop(self, partitions: Collection[TopicPartition]) -> list[T]:
        """Forget the waiting records and retries of ``partitions``; return them."""
        dropped: list[T] = []
        for lane in [lane for lane in self._lanes if lane[0] in partitions]:
            queue = self._lanes.pop(lane)
            self._waiting -= len(queue)
            dropped.extend(queue)
        self._ready = deque(lane for lane in self._ready if lane[0] not in partitions)
        kept = [entry for entry in self._retries if entry[2][0] not in partitions]
        dropped.extend(entry[3] for entry in self._retries if entry[2][0] in partitions)
        heapq.heapify(kept)
        self._retries = kept
        return dropped

    def waiting(self) -> int:
        """Records queued and not running (retries not counted)."""
        return self._waiting

    def retrying(self) -> int:
        """Records waiting for a retry."""
        return len(self._retries)

    def ready(self, now: float) -> bool:
        """Whether ``take(now)`` would return a record."""
        return bool(self._ready) or bool(self._retries and self._retries[0][0] <= now)

    def next_retry(self) -> float | None:
        """When the earliest retry is due."""
        return self._retries[0][0] if self._retries else None
