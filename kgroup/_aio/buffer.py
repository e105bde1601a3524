"""The records a ``kgroup.aio.Consumer``'s worker fetched and the application has not received yet.

``poll()`` returns them, ``async for`` yields them one by one; a cancelled ``poll()`` leaves them
here for the next call of its kind. One kind at a time: records (``poll()``) or
``RecordColumns`` (``poll_columns()``). What is buffered counts as not consumed: giving records
back (``pause()``, ``close()``, a call of the other kind) moves the wrapped consumer's position
back to the first of them, and default commit offsets stop before them.

Guarded by the worker's ``cond`` (``kgroup._aio.worker``); the rewinds run on the thread that
owns the wrapped consumer.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kgroup.types import ConsumerRecord, OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:
    from kgroup.columns import RecordColumns
    from kgroup.consumer import Consumer

__all__ = ["RecordBuffer"]


class RecordBuffer:
    """Fetched records (or columns) not handed out yet."""

    def __init__(self, cond: threading.Condition, sync: Consumer[Any, Any]) -> None:
        self._cond = cond
        self._sync = sync
        self._items: collections.deque[Any] = collections.deque()
        #: the kind buffered: True for columns of a poll_columns(), False for records
        self.columns = False

    def __len__(self) -> int:
        return len(self._items)

    def holds(self, columns: bool) -> bool | None:
        """None when empty; else whether what is buffered is of the kind asked for."""
        with self._cond:
            if not self._items:
                return None
            return self.columns == columns

    def extend(self, fetched: list[Any], *, columns: bool) -> None:
        """Keep ``fetched`` (of one kind) for the application."""
        with self._cond:
            self._items.extend(fetched)
            self.columns = columns

    def take_all(self, *, columns: bool) -> list[Any]:
        """Everything buffered if it is of the kind asked for (records or columns), else ``[]``."""
        with self._cond:
            if self.columns != columns:
                return []
            taken = list(self._items)
            self._items.clear()
        return taken

    def take_one(self) -> ConsumerRecord[Any, Any] | None:
        """The first buffered record, if records are buffered."""
        with self._cond:
            if not self._items or self.columns:
                return None
            record: ConsumerRecord[Any, Any] = self._items.popleft()
        return record

    def firsts(self) -> dict[TopicPartition, int]:
        """The first buffered offset of each partition with buffered records."""
        with self._cond:
            firsts: dict[TopicPartition, int] = {}
            for item in self._items:
                tp = item.topic_partition
                if tp not in firsts:
                    firsts[tp] = _first_offset(item)
        return firsts

    def give_back(self, partitions: frozenset[TopicPartition] | None, *, rewind: bool) -> None:
        """Drop buffered records of ``partitions`` (None: all); ``rewind``: seek back to them."""
        with self._cond:
            kept: collections.deque[Any] = collections.deque()
            firsts: dict[TopicPartition, int] = {}
            for item in self._items:
                tp = item.topic_partition
                if partitions is None or tp in partitions:
                    firsts.setdefault(tp, _first_offset(item))
                else:
                    kept.append(item)
            self._items = kept
        if rewind:
            owned = self._sync.assignment()
            for tp, offset in firsts.items():
                if tp in owned:
                    self._sync.seek(tp, offset)

    def offsets_to_commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None
    ) -> Mapping[TopicPartition, OffsetAndMetadata | int] | None:
        """Default offsets that leave out buffered records (``None``: the wrapped consumer's)."""
        if offsets is not None:
            return offsets
        firsts = self.firsts()
        parts = self._sync._parts
        if not firsts or parts is None:
            return None
        consumed: dict[TopicPartition, OffsetAndMetadata | int] = dict(
            parts.consumed_offsets(self._sync.assignment())
        )
        for tp, offset in firsts.items():
            consumed[tp] = OffsetAndMetadata(offset)
        return consumed


def _first_offset(item: ConsumerRecord[Any, Any] | RecordColumns) -> int:
    """The offset of a buffered record, or of the first row of buffered columns."""
    return item.offset if isinstance(item, ConsumerRecord) else item.offsets[0]
