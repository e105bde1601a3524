"""A fetched partition's records matched with what the member acquired (Java's ``ShareCompletedFetch``).

A ShareFetch answer's record batches may hold records the member did not acquire (other members
hold them, or they were acknowledged): only the offsets of its ``AcquiredRecords`` ranges are
the member's, each with the range's delivery count. An acquired offset with no record among the
decoded ones (compacted away, a transaction marker, an aborted record) is a gap: it is
acknowledged with type 0 without the application seeing it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kgroup._share.acks import GAP
from kgroup.protocol.share_fetch import AcquiredRecords
from kgroup.types import ConsumerRecord, ShareConsumerRecord

__all__ = ["acquired_offsets", "match_acquired"]


def acquired_offsets(ranges: Iterable[AcquiredRecords]) -> dict[int, int]:
    """Offset -> delivery count of every acquired offset."""
    return {offset: r.delivery_count for r in ranges for offset in range(r.first_offset, r.last_offset + 1)}


def match_acquired(
    records: Sequence[ConsumerRecord], ranges: Iterable[AcquiredRecords]
) -> tuple[list[ShareConsumerRecord], dict[int, int]]:
    """The acquired records, in offset order, and the gaps (``offset -> GAP``)."""
    acquired = acquired_offsets(ranges)
    out: list[ShareConsumerRecord] = []
    seen: set[int] = set()
    for record in records:
        count = acquired.get(record.offset)
        if count is None or record.offset in seen:
            continue
        seen.add(record.offset)
        out.append(ShareConsumerRecord(*record, delivery_count=count))
    gaps = {offset: GAP for offset in acquired if offset not in seen}
    return out, gaps
