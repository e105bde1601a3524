"""Offset resets, planned as Kafka's ``kafka-consumer-groups.sh --reset-offsets`` plans them (``ConsumerGroupCommand``).

The scenarios (:class:`ResetTarget`), the plan (:class:`OffsetResetPlan`, one
:class:`PlannedOffset` per partition) and the pure steps of planning: which partitions a reset
covers (:func:`reset_partitions`), and each one's new offset from the log start and end offsets
and the offsets found by time (:func:`plan_rows`). ``GroupAdmin.plan_offset_reset`` looks those
up and checks the group is inactive (:data:`INACTIVE_STATES`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Literal

import attrs

from kgroup import _error_codes as codes
from kgroup.admin._errors import AdminError
from kgroup.types import OffsetAndMetadata, PartitionInfo, TopicPartition

__all__ = [
    "INACTIVE_STATES",
    "OffsetResetPlan",
    "PlannedOffset",
    "ResetKind",
    "ResetTarget",
    "clamp",
    "complete",
    "plan_rows",
    "reset_partitions",
]

#: the states in which Kafka's kafka-consumer-groups.sh resets offsets (``ConsumerGroupCommand.resetOffsets``)
INACTIVE_STATES: Final = frozenset({"Empty", "Dead"})


ResetKind = Literal["earliest", "latest", "timestamp", "offset", "shift_by"]


@attrs.frozen
class ResetTarget:
    """Where an offset reset moves each partition: ``kafka-consumer-groups.sh``'s scenarios.

    Build one with :meth:`earliest`, :meth:`latest`, :meth:`timestamp` (``--to-datetime``, in
    ms since the epoch), :meth:`offset` (``--to-offset``) or :meth:`shift_by` (``--shift-by``).
    """

    kind: ResetKind
    value: int = 0

    @classmethod
    def earliest(cls) -> ResetTarget:
        """The log start offset (ListOffsets EARLIEST)."""
        return cls("earliest")

    @classmethod
    def latest(cls) -> ResetTarget:
        """The log end offset (ListOffsets LATEST)."""
        return cls("latest")

    @classmethod
    def timestamp(cls, ms: int) -> ResetTarget:
        """The first offset whose record timestamp is at least ``ms``; the log end offset where none is."""
        return cls("timestamp", ms)

    @classmethod
    def offset(cls, offset: int) -> ResetTarget:
        """``offset``, clamped to the log's start and end offsets."""
        return cls("offset", offset)

    @classmethod
    def shift_by(cls, n: int) -> ResetTarget:
        """The committed offset plus ``n`` (negative: back), clamped to the log's start and end offsets."""
        return cls("shift_by", n)


@attrs.frozen
class PlannedOffset:
    """One partition of an offset reset plan.

    Attributes:
        topic_partition: the partition.
        current_offset: the group's committed offset now, or None.
        new_offset: the offset the reset commits.
        note: why ``new_offset`` is not simply the target ("" when it is): clamped to the
            log start or end offset, or no record at or after the timestamp.

    """

    topic_partition: TopicPartition
    current_offset: int | None
    new_offset: int
    note: str = ""


@attrs.frozen
class OffsetResetPlan:
    """What an offset reset would commit (``kafka-consumer-groups.sh --reset-offsets`` without ``--execute``).

    Attributes:
        group_id: the group.
        state: its state when planned ("Empty", or "Dead": a group the coordinator does not
            know yet gets its first committed offsets).
        target: the scenario.
        partitions: one row per partition, sorted.
        group_type: "classic" or "consumer" (committed offsets: :meth:`GroupAdmin.alter_offsets`
            commits the plan), or "share" (a share group's start offsets, KIP-932:
            :meth:`GroupAdmin.alter_share_group_offsets` sets them).

    """

    group_id: str
    state: str
    target: ResetTarget
    partitions: tuple[PlannedOffset, ...]
    group_type: str = "classic"

    def offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """The offsets to commit (no metadata, no leader epoch: as Kafka's tool commits them)."""
        return {p.topic_partition: OffsetAndMetadata(p.new_offset) for p in self.partitions}


def complete(
    found: Mapping[TopicPartition, int], partitions: Iterable[TopicPartition], which: str
) -> Mapping[TopicPartition, int]:
    """``found``, or an AdminError naming the partitions whose log ``which`` offset is unknown."""
    missing = [str(tp) for tp in partitions if tp not in found]
    if missing:
        raise AdminError(
            f"could not look up the log {which} offset of {', '.join(missing)} (no leader?)", api="ListOffsets"
        )
    return found


def clamp(asked: int, start: int, end: int) -> tuple[int, str]:
    """``asked`` within ``[start, end]``, and a note when it was not (Kafka's ``checkOffsetsRange``)."""
    if asked > end:
        return end, f"{asked} is past the log end offset: set to {end}"
    if asked < start:
        return start, f"{asked} is before the log start offset: set to {start}"
    return asked, ""


def reset_partitions(
    scope: Sequence[str | TopicPartition], known: Mapping[str, tuple[PartitionInfo, ...]]
) -> list[TopicPartition]:
    """The partitions ``scope`` names (a topic: all its partitions), sorted, against the topics ``known``.

    Raises:
        AdminError: an unknown topic, or a partition its topic does not have.

    """
    names = sorted({item if isinstance(item, str) else item.topic for item in scope})
    unknown = [name for name in names if not known.get(name)]
    if unknown:
        raise AdminError(
            f"unknown topic{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}",
            api="Metadata",
            code=codes.UNKNOWN_TOPIC_OR_PARTITION,
        )
    out: set[TopicPartition] = set()
    for item in scope:
        if isinstance(item, str):
            out.update(TopicPartition(item, info.partition) for info in known[item])
            continue
        numbers = sorted(info.partition for info in known[item.topic])
        if item.partition not in numbers:
            raise AdminError(
                f"topic {item.topic!r} has no partition {item.partition} (its partitions: "
                f"{', '.join(map(str, numbers))})",
                api="Metadata",
                code=codes.UNKNOWN_TOPIC_OR_PARTITION,
            )
        out.add(item)
    return sorted(out)


def plan_rows(
    target: ResetTarget,
    partitions: Iterable[TopicPartition],
    current: Mapping[TopicPartition, int],
    starts: Mapping[TopicPartition, int],
    ends: Mapping[TopicPartition, int],
    found: Mapping[TopicPartition, tuple[int, int]],
) -> tuple[PlannedOffset, ...]:
    """Each partition's new offset under ``target``.

    ``current``: the committed offsets; ``starts`` and ``ends``: the log start and end offsets
    (those ``target`` needs); ``found``: the offsets by time (a "timestamp" target).
    """
    rows = []
    for tp in partitions:
        note = ""
        if target.kind == "earliest":
            new = starts[tp]
        elif target.kind == "latest":
            new = ends[tp]
        elif target.kind == "timestamp":
            hit = found.get(tp)
            if hit is None:
                new, note = ends[tp], "no record at or after the time: the log end offset"
            else:
                new = hit[0]
        else:
            asked = target.value if target.kind == "offset" else current[tp] + target.value
            new, note = clamp(asked, starts[tp], ends[tp])
        rows.append(PlannedOffset(tp, current.get(tp), new, note))
    return tuple(rows)
