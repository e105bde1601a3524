"""The poll thread's partition state: ownership, pauses, positions to look up, held records.

Rules:

1. Poll thread only. The group thread decides ownership; this object records what the
   listener last saw (``assignment``), which is what ``poll()`` fetches and hands out.
2. *Acquiesce* (the classic protocol's first step): once a partition's revocation starts, no
   record of it is handed out; records fetched but not returned are dropped and its position
   goes back to the first of them.
3. A commit covers only records handed out to the application. Records fetched by the current
   ``poll()`` and not yet returned are *held*: ``consumed_offsets`` reports their partition at
   the first held offset, so a commit made while they are held (the auto-commit of a revoke
   step, or a ``commit()`` inside ``on_partitions_revoked``) cannot skip them (Java runs
   rebalance callbacks and commits before it collects fetched records:
   ``ConsumerCoordinator.poll`` before ``pollForFetches``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TypeVar

from kgroup._io.transport import FetchedColumns, RecordFetcher
from kgroup.types import ConsumerRecord, OffsetAndMetadata, TopicPartition

__all__ = ["PartitionState"]

log = logging.getLogger(__name__)

C = TypeVar("C", bound=FetchedColumns)


class PartitionState:
    """Assignment, pause state, pending position look-ups and held records (poll thread).

    Args:
        fetcher: the transport's record fetcher (positions and buffers live there).
        group_id: for log messages.

    """

    def __init__(self, fetcher: RecordFetcher, group_id: str) -> None:
        self._fetcher = fetcher
        self._group_id = group_id
        self.assignment: frozenset[TopicPartition] = frozenset()
        self.paused: set[TopicPartition] = set()
        #: assigned partitions whose position must come from OffsetFetch (or the reset policy)
        self.needs_position: set[TopicPartition] = set()
        #: first offset of the records fetched by this poll() and not yet returned, per partition
        #: (``_held_map``: built from ``_held_records`` when first asked for)
        self._held_map: dict[TopicPartition, int] = {}
        #: records held by ``hold`` and not yet walked into ``_held_map`` (None: none)
        self._held_records: list[ConsumerRecord] | None = None

    @property
    def fetcher(self) -> RecordFetcher:
        """The record fetcher."""
        return self._fetcher

    def set_assignment(self, partitions: frozenset[TopicPartition]) -> None:
        """Own exactly ``partitions``: new ones need a position, others stop being fetched."""
        added = partitions - self.assignment
        self.assignment = partitions
        self.needs_position = (self.needs_position & partitions) | set(added)
        self.paused &= partitions
        held = self._held
        for tp in [tp for tp in held if tp not in partitions]:
            del held[tp]
        self._fetcher.assign(partitions)

    def fetchable(self) -> bool:
        """True when some owned partition is unpaused and has a position."""
        if not self.paused and not self.needs_position:  # the common case: no set built per poll()
            return bool(self.assignment)
        return bool(self.assignment - self.paused - self.needs_position)

    # ------------------------------------------------------------------ held records
    @property
    def _held(self) -> dict[TopicPartition, int]:
        """First held offset per partition (the records ``hold`` was given are walked on first use)."""
        if self._held_records is not None:
            self._walk_held()
        return self._held_map

    def _walk_held(self) -> None:
        records, self._held_records = self._held_records or [], None
        held = self._held_map
        topic: str | None = None
        partition = -1
        for record in records:  # a fetch returns each partition's records in one run
            if record.partition != partition or record.topic != topic:
                topic, partition = record.topic, record.partition
                held.setdefault(TopicPartition(topic, partition), record.offset)

    def hold(self, records: list[ConsumerRecord]) -> None:
        """``records`` were fetched and will be returned by this ``poll()`` unless dropped.

        Nothing is done per record here: the first held offset of each partition is found only
        if something asks for it before ``release`` (a position, a commit or a seek made by a
        listener while the records are held, a drop), so a ``poll()`` that returns its records
        untouched walks none of them.
        """
        if records:
            if self._held_records is not None:
                self._walk_held()  # records an earlier fetch of this poll() held come first
            self._held_records = records

    def hold_columns(self, fetched: list[FetchedColumns]) -> None:
        """``hold`` for the columnar hand-out: each partition's columns will be returned unless dropped."""
        held = self._held
        for columns in fetched:
            if columns.topic_partition not in held:
                held[columns.topic_partition] = columns.offsets[0]

    def drop_columns(self, fetched: list[C], taken: set[TopicPartition]) -> list[C]:
        """``drop`` for the columnar hand-out: columns of ``taken`` partitions go, their positions go back."""
        kept = [columns for columns in fetched if columns.topic_partition not in taken]
        if len(kept) == len(fetched):
            return fetched
        first_dropped: dict[TopicPartition, int] = {}
        for columns in fetched:
            if columns.topic_partition in taken:
                first_dropped.setdefault(columns.topic_partition, columns.offsets[0])
        for tp, offset in first_dropped.items():
            self._fetcher.seek(tp, offset)
            self._held.pop(tp, None)
        log.info("group %s: acquiesce: dropped records of %d partitions whose revocation started",
                 self._group_id, len(first_dropped))
        return kept

    def release(self) -> None:
        """The held records were returned to the application (or dropped)."""
        self._held_records = None
        self._held_map.clear()

    def drop(self, records: list[ConsumerRecord], taken: set[TopicPartition]) -> list[ConsumerRecord]:
        """Acquiesce: remove records of ``taken`` partitions; their positions go back."""
        kept: list[ConsumerRecord] = []
        first_dropped: dict[TopicPartition, int] = {}
        for record in records:
            tp = record.topic_partition
            if tp in taken:
                first_dropped.setdefault(tp, record.offset)
            else:
                kept.append(record)
        for tp, offset in first_dropped.items():
            # the records were not handed out, so the position goes back
            self._fetcher.seek(tp, offset)
            self._held.pop(tp, None)
        if first_dropped:
            log.info(
                "group %s: acquiesce: dropped records of %d partitions whose revocation started",
                self._group_id, len(first_dropped),
            )
        return kept

    # ------------------------------------------------------------------ positions
    def position(self, tp: TopicPartition) -> int | None:
        """The offset of the next record to hand to the application, or None while unknown."""
        held = self._held.get(tp)
        if held is not None:
            return held
        if tp in self.needs_position or not self._fetcher.has_position(tp):
            return None
        return self._fetcher.position(tp)

    def consumed_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata]:
        """What a commit with no arguments commits: the position after the last record handed out."""
        out = {}
        for tp in partitions:
            position = self.position(tp)
            if position is not None:
                out[tp] = OffsetAndMetadata(position)
        return out

    def seek(self, tp: TopicPartition, offset: int, leader_epoch: int | None = None) -> None:
        """Fetch ``tp`` from ``offset`` next."""
        self._fetcher.seek(tp, offset, leader_epoch)
        self.needs_position.discard(tp)
        self._held.pop(tp, None)

    def reset(self, tp: TopicPartition, strategy: str) -> None:
        """Fetch ``tp`` from its log start ("earliest") or end ("latest") next (ListOffsets)."""
        self._fetcher.request_reset(tp, strategy)
        self.needs_position.discard(tp)
        self._held.pop(tp, None)

    def pause(self, tp: TopicPartition) -> None:
        """Stop fetching ``tp``."""
        self.paused.add(tp)
        self._fetcher.pause(tp)

    def resume(self, tp: TopicPartition) -> None:
        """Fetch ``tp`` again."""
        self.paused.discard(tp)
        self._fetcher.resume(tp)
