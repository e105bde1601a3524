"""Pure offset planning for ``kgroup.spark``: no IO, no Spark, no clock.

The stream offset (what Spark writes to ``<checkpoint>/offsets/<batch id>``) is the JSON
object::

    {"offsets": {"<topic>": {"<partition>": <end>}}, "from": {"<topic>": {"<partition>": <start>}}}

``offsets`` holds, for every partition the application owned when it planned the batch, the
offset *after* the batch's last record (exclusive end; the next batch starts there), and for
partitions it owned before, where it stopped in them (carried unchanged: an empty range).
``from`` holds the range start of partitions whose range does **not** start at the previous
batch's end: partitions new to this application (first assignment, or assigned again after
another member of the group moved them on) are based at the group's committed offset. So a
batch's ranges are a function of ``(start, end)`` alone, as Spark requires when it replays a
planned batch after a restart (:func:`plan_ranges`).

Where a partition's next batch starts (:func:`plan_end`): the further of (a) where this
application's previous batch ended (``start``, from Spark's checkpoint) and (b) where the
group says it was committed when it was assigned. (a) is ahead after a restart, because the
group commit of a batch trails Spark's commit of it; (b) is ahead when another application in
the group consumed the partition meanwhile. Either way nothing already processed is read again
and nothing unprocessed is skipped (docs/spark.md, "Which offsets win").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from kgroup.spark._options import EARLIEST, OffsetSpec, PartitionOffsets
from kgroup.types import TopicPartition

__all__ = [
    "OffsetRange",
    "StreamOffset",
    "cap_lags",
    "pack_ranges",
    "plan_batch_ranges",
    "plan_end",
    "plan_ranges",
    "positions_of",
    "resolve_offset",
    "split_ranges",
]


@attrs.frozen
class OffsetRange:
    """Records ``[start, end)`` of one partition (offsets, end exclusive)."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def topic_partition(self) -> TopicPartition:
        """The range's partition."""
        return TopicPartition(self.topic, self.partition)

    @property
    def size(self) -> int:
        """``end - start``: an upper bound of its records (compaction and markers leave gaps)."""
        return self.end - self.start


def _nested(values: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(values):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(values[tp])
    return out


def _flat(value: Any, what: str) -> dict[TopicPartition, int]:
    if not isinstance(value, Mapping):
        raise ValueError(f"stream offset field {what!r} must be an object, got {value!r}")
    out: dict[TopicPartition, int] = {}
    for topic, parts in value.items():
        if not isinstance(topic, str) or not isinstance(parts, Mapping):
            raise ValueError(f"stream offset field {what!r}: bad entry {topic!r}: {parts!r}")
        for partition, offset in parts.items():
            try:
                number = int(partition)
            except (TypeError, ValueError):
                raise ValueError(f"stream offset field {what!r}: bad partition {partition!r}") from None
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0 or number < 0:
                raise ValueError(f"stream offset field {what!r}: bad offset {topic}-{partition}: {offset!r}")
            out[TopicPartition(topic, number)] = offset
    return out


@attrs.frozen
class StreamOffset:
    """One Spark stream offset of the kgroup source (see the module docstring).

    Attributes:
        offsets: ``{TopicPartition: end}``: exclusive end per owned partition.
        starts: ``{TopicPartition: start}``: range starts that are not the previous end.

    """

    offsets: Mapping[TopicPartition, int] = attrs.field(factory=dict)
    starts: Mapping[TopicPartition, int] = attrs.field(factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The JSON-able dict Spark stores (topics and partitions sorted)."""
        return {"offsets": _nested(self.offsets), "from": _nested(self.starts)}

    @classmethod
    def from_json(cls, value: Mapping[str, Any] | None) -> StreamOffset:
        """Parse what :meth:`to_json` produced (``None`` or ``{}``: the empty offset).

        Raises:
            ValueError: not an offset of this source (e.g. a checkpoint of another source).

        """
        if not value:
            return cls()
        if not isinstance(value, Mapping) or set(value) - {"offsets", "from"}:
            raise ValueError(
                f"not a kgroup stream offset (expected keys 'offsets' and 'from'): {value!r}; "
                "was the checkpoint written by another source?"
            )
        return cls(_flat(value.get("offsets", {}), "offsets"), _flat(value.get("from", {}), "from"))


def cap_lags(lags: Mapping[TopicPartition, int], limit: int | None) -> dict[TopicPartition, int]:
    """How many offsets each partition may advance when at most ``limit`` may be read in total.

    Shares are proportional to lag (Spark's Kafka source prorates ``maxOffsetsPerTrigger`` the
    same way), rounded down, and the offsets left by rounding go to the largest remainders
    (ties: partition order), so the total is exactly ``min(limit, sum(lags))`` and every
    partition gets at most its lag. ``limit`` None: no cap.

    Raises:
        ValueError: ``limit`` < 1 or a negative lag.

    """
    if any(lag < 0 for lag in lags.values()):
        raise ValueError(f"negative lag in {dict(lags)!r}")
    total = sum(lags.values())
    if limit is None or total <= limit:
        return dict(lags)
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    shares = {tp: lag * limit // total for tp, lag in lags.items()}
    left = limit - sum(shares.values())
    by_remainder = sorted(lags, key=lambda tp: (-((lags[tp] * limit) % total), tp))
    for tp in by_remainder[:left]:
        shares[tp] += 1
    return shares


def plan_end(
    start: StreamOffset,
    owned: Iterable[TopicPartition],
    assigned_from: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    limit: int | None = None,
    *,
    resets: Mapping[TopicPartition, int] | None = None,
    drop: Iterable[TopicPartition] = (),
) -> StreamOffset:
    """The end offset of the next micro-batch.

    Args:
        start: the previous batch's end (Spark's ``start``; empty for the first batch).
        owned: the partitions the group assigns to this application now; only these are planned.
        assigned_from: ``{tp: offset}``: the group's committed offset (or the startingOffsets
            position) of each owned partition when it was assigned; a partition absent from
            both this and ``start`` is not planned yet.
        latest: ``{tp: log end offset}`` (ListOffsets LATEST); a partition absent from it does
            not advance.
        limit: at most this many offsets in total (maxOffsetsPerTrigger), or None.
        resets: ``{tp: offset}``: owned partitions whose range starts there whatever ``start``
            and ``assigned_from`` say (``failOnDataLoss=false`` after the log end went below the
            position: the topic was recreated or truncated); recorded in ``starts``.
        drop: partitions left out of the end offset altogether (``failOnDataLoss=false`` after
            their topic was deleted).

    Returns:
        The end offset: ``offsets`` for every plannable owned partition, and unchanged (an empty
        range) for the partitions of ``start`` not owned now, so the checkpoint keeps where this
        application stopped in them (after a restart, until the group assigns them again, and if
        it assigns them back later); ``starts`` where an owned partition's range does not begin
        at ``start``'s end (the partition is new, or the group moved past it: see the module
        docstring).

    """
    positions: dict[TopicPartition, int] = {}
    starts: dict[TopicPartition, int] = {}
    resets = resets or {}
    dropped = set(drop)
    for tp in owned:
        if tp in dropped:
            continue
        if tp in resets:
            positions[tp] = starts[tp] = resets[tp]
            continue
        previous = start.offsets.get(tp)
        base = assigned_from.get(tp)
        if previous is None and base is None:
            continue
        if previous is not None and (base is None or base <= previous):
            positions[tp] = previous
        else:
            assert base is not None
            positions[tp] = base
            starts[tp] = base
    lags = {tp: max(0, latest.get(tp, pos) - pos) for tp, pos in positions.items()}
    advance = cap_lags(lags, limit)
    # partitions not owned now keep their position (see Returns)
    ends = {tp: offset for tp, offset in start.offsets.items() if tp not in dropped}
    ends.update({tp: pos + advance[tp] for tp, pos in positions.items()})
    return StreamOffset(ends, starts)


def positions_of(
    start: StreamOffset, owned: Iterable[TopicPartition], assigned_from: Mapping[TopicPartition, int]
) -> dict[TopicPartition, int]:
    """Where each plannable owned partition's next range starts (the rule of :func:`plan_end`)."""
    out: dict[TopicPartition, int] = {}
    for tp in owned:
        candidates = [x for x in (start.offsets.get(tp), assigned_from.get(tp)) if x is not None]
        if candidates:
            out[tp] = max(candidates)
    return out


def plan_ranges(start: StreamOffset, end: StreamOffset) -> list[OffsetRange]:
    """The non-empty ranges of the batch ``(start, end]``, sorted by partition.

    A partition's range starts at ``end.starts[tp]`` if present, else ``start.offsets[tp]``.

    Raises:
        ValueError: a partition of ``end`` has no start in either (the offsets do not belong
            together), or a range would go backwards.

    """
    ranges: list[OffsetRange] = []
    for tp in sorted(end.offsets):
        stop = end.offsets[tp]
        begin = end.starts.get(tp, start.offsets.get(tp))
        if begin is None:
            raise ValueError(f"partition {tp} of the end offset has no start offset")
        if stop < begin:
            raise ValueError(f"partition {tp}: end offset {stop} is before start offset {begin}")
        if stop > begin:
            ranges.append(OffsetRange(tp.topic, tp.partition, begin, stop))
    return ranges


def resolve_offset(
    spec: OffsetSpec, tp: TopicPartition, earliest: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int]
) -> int:
    """The offset ``spec`` names for ``tp``: earliest / latest (also -2 / -1 in JSON) or the number given.

    A partition a JSON spec leaves out starts at the earliest offset (Spark's rule for partitions
    discovered after a streaming query started).
    """
    if isinstance(spec, PartitionOffsets):
        value = spec.as_dict().get(tp, EARLIEST)
        if value >= 0:
            return value
        spec = "earliest" if value == EARLIEST else "latest"
    return earliest[tp] if spec == "earliest" else latest[tp]


def plan_batch_ranges(
    earliest: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    starting: OffsetSpec,
    ending: OffsetSpec = "latest",
) -> list[OffsetRange]:
    """Ranges of a batch (non-streaming) read: from ``starting`` to ``ending`` in every partition.

    ``starting``: "earliest", "latest" or per-partition offsets; ``ending``: "latest" or
    per-partition offsets (-1: latest). A JSON spec must name every partition of the read, as
    Spark's Kafka source requires of a batch query.

    Raises:
        ValueError: a partition is missing from ``earliest`` or ``latest`` (no leader: a batch
            read must not silently skip a partition); a JSON spec does not name exactly the
            read's partitions; a starting offset is after its ending offset; an ending offset
            is past the log end offset.

    """
    missing = sorted(set(earliest) ^ set(latest))
    if missing:
        raise ValueError(f"no offsets for partitions {[str(tp) for tp in missing]} (no leader?)")
    for option, spec in (("startingOffsets", starting), ("endingOffsets", ending)):
        if isinstance(spec, PartitionOffsets) and spec.partitions != set(latest):
            raise ValueError(
                f"{option} names partitions {sorted(map(str, spec.partitions))} but the read has "
                f"{sorted(map(str, latest))}: name every partition (-2: earliest, -1: latest)"
            )
    ranges = []
    for tp in sorted(latest):
        begin = resolve_offset(starting, tp, earliest, latest)
        stop = resolve_offset(ending, tp, earliest, latest)
        if stop > latest[tp]:
            raise ValueError(f"endingOffsets of {tp}: {stop} is past the log end offset {latest[tp]}")
        if begin > stop:
            raise ValueError(f"{tp}: the starting offset {begin} is after the ending offset {stop}")
        if stop > begin:
            ranges.append(OffsetRange(tp.topic, tp.partition, begin, stop))
    return ranges


def split_ranges(ranges: Iterable[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Split large ranges so that there are about ``min_partitions`` of them (Spark's ``minPartitions``).

    Spark's ``KafkaOffsetRangeCalculator.getRanges``: empty ranges are dropped; with
    ``min_partitions`` None or no more than the ranges there are, nothing is split. Otherwise a
    range gets ``max(1, round(size / total * min_partitions))`` parts; the ranges left whole are
    taken out of the proportion (the others share ``min_partitions`` minus their count), and
    each split range is cut into near-equal consecutive pieces (the last takes the rounding).
    The result is *about* ``min_partitions`` ranges, as Spark's documentation says; it covers
    exactly the same offsets.

    Raises:
        ValueError: ``min_partitions`` < 1.

    """
    kept = [r for r in ranges if r.size > 0]
    if min_partitions is None or len(kept) >= min_partitions:
        return kept
    if min_partitions < 1:
        raise ValueError(f"min_partitions must be >= 1, got {min_partitions}")

    def parts_of(size: int, total: int, parts: int) -> int:
        return max(math.floor(size / total * parts + 0.5), 1)  # Scala's math.round

    total = sum(r.size for r in kept)
    whole = [r for r in kept if parts_of(r.size, total, min_partitions) == 1]
    whole_partitions = {r.topic_partition for r in whole}
    split_total = total - sum(r.size for r in whole)
    split_parts = max(min_partitions - len(whole), 1)
    out: list[OffsetRange] = []
    for r in kept:
        parts = 1 if r.topic_partition in whole_partitions else parts_of(r.size, split_total, split_parts)
        remaining = r.size
        begin = r.start
        for part in range(parts):
            this = remaining // (parts - part)
            remaining -= this
            stop = min(begin + this, r.end)
            if stop > begin:
                out.append(OffsetRange(r.topic, r.partition, begin, stop))
            begin = stop
    return out


def pack_ranges(ranges: Sequence[OffsetRange], max_partitions: int | None) -> list[tuple[OffsetRange, ...]]:
    """Group ``ranges`` into at most ``max_partitions`` tasks of near-equal size (the ``maxPartitions`` option).

    With ``max_partitions`` None or no fewer than the ranges, each range is its own task (Spark's
    Kafka source: one input partition per range). Otherwise the ranges, largest first, go one by
    one to the task with the fewest offsets so far (the lowest-numbered on a tie: the greedy
    longest-processing-time rule), and each task reads its ranges in (topic, partition, start)
    order. Every range is in exactly one task; packed, the result depends on the ranges alone, not
    on their order.

    Raises:
        ValueError: ``max_partitions`` < 1.

    """
    if max_partitions is not None and max_partitions < 1:
        raise ValueError(f"max_partitions must be >= 1, got {max_partitions}")
    if max_partitions is None or len(ranges) <= max_partitions:
        return [(r,) for r in ranges]
    tasks: list[list[OffsetRange]] = [[] for _ in range(max_partitions)]
    loads = [0] * max_partitions
    for r in sorted(ranges, key=lambda r: (-r.size, r.topic, r.partition, r.start)):
        lightest = min(range(max_partitions), key=lambda i: (loads[i], i))
        tasks[lightest].append(r)
        loads[lightest] += r.size
    return [tuple(sorted(task, key=lambda r: (r.topic, r.partition, r.start))) for task in tasks if task]
