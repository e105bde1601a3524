"""A fetched partition's records matched with what the member acquired (Java's ``ShareCompletedFetch``).

A ShareFetch answer's record batches may hold records the member did not acquire (other members
hold them, or they were acknowledged): only the offsets of its ``AcquiredRecords`` ranges are
the member's, each with the range's delivery count. An acquired offset with no record among the
decoded ones (compacted away, a transaction marker, an aborted record) is a gap: it is
acknowledged with type 0 without the application seeing it.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Sequence

from kgroup._share.acks import GAP
from kgroup.protocol.share_fetch import AcquiredRecords
from kgroup.types import ConsumerRecord, ShareConsumerRecord

__all__ = ["acquired_offsets", "match_acquired"]

_offset = operator.itemgetter(2)
_new = tuple.__new__


def acquired_offsets(ranges: Iterable[AcquiredRecords]) -> dict[int, int]:
    """Offset -> delivery count of every acquired offset."""
    return {offset: r.delivery_count for r in ranges for offset in range(r.first_offset, r.last_offset + 1)}


def match_acquired(
    records: Sequence[ConsumerRecord], ranges: Iterable[AcquiredRecords]
) -> tuple[list[ShareConsumerRecord], dict[int, int]]:
    """The acquired records, in offset order, and the gaps (``offset -> GAP``).

    The usual answer, records at consecutive offsets and ranges apart from each other, is
    matched by slicing per range; anything else offset by offset.
    """
    given = tuple(ranges)
    ordered = sorted(given, key=operator.attrgetter("first_offset"))
    if not records or not _apart(ordered):
        return _match_each(records, given)
    base, count = records[0][2], len(records)
    if records[-1][2] - base != count - 1 or list(map(_offset, records)) != list(range(base, base + count)):
        return _match_each(records, given)
    end = base + count
    out: list[ShareConsumerRecord] = []
    gaps: dict[int, int] = {}
    for r in ordered:
        first, stop, delivery = r.first_offset, r.last_offset + 1, (r.delivery_count,)
        lo, hi = max(first, base), min(stop, end)
        if lo < hi:
            out.extend([_new(ShareConsumerRecord, rec + delivery) for rec in records[lo - base:hi - base]])
        gaps.update(dict.fromkeys(range(first, min(lo, stop)), GAP))  # before the first record
        gaps.update(dict.fromkeys(range(max(hi, first), stop), GAP))  # after the last
    return out, gaps


def _apart(ordered: Sequence[AcquiredRecords]) -> bool:
    """The ranges (by first offset) overlap nowhere."""
    return all(a.last_offset < b.first_offset for a, b in itertools.pairwise(ordered))


def _match_each(
    records: Sequence[ConsumerRecord], ranges: Iterable[AcquiredRecords]
) -> tuple[list[ShareConsumerRecord], dict[int, int]]:
    acquired = acquired_offsets(ranges)
    out: list[ShareConsumerRecord] = []
    seen: set[int] = set()
    for record in records:
        count = acquired.get(record.offset)
        if count is None or record.offset in seen:
            continue
        seen.add(record.offset)
        out.append(_new(ShareConsumerRecord, (*record, count)))
    out.sort(key=_offset)
    gaps = {offset: GAP for offset in acquired if offset not in seen}
    return out, gaps
