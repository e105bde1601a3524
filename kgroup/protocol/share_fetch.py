"""ShareFetch (API key 78) and ShareAcknowledge (79) request and response values (KIP-932).

kgroup's own types for the share consumer's two record APIs, versions 1-2 (Apache Kafka 4.1+;
v2, Kafka 4.4: ``ShareAcquireMode``, KIP-1206's strict record limit, and ``IsRenewAck``,
KIP-1222's lock renewal). :mod:`kgroup._io.kafka_messages` maps them to kafka-python's message
classes field by field; the share consumer's pure core (:mod:`kgroup._share`) builds the requests
and reads the responses.

The schemas are Kafka's ``ShareFetchRequest.json``, ``ShareFetchResponse.json``,
``ShareAcknowledgeRequest.json`` and ``ShareAcknowledgeResponse.json``. A response's topics are
flattened here: every partition carries its ``topic_id``.
"""

from __future__ import annotations

from typing import ClassVar, Final
from uuid import UUID

import attrs

__all__ = [
    "ACQUIRE_MODE_BATCH_OPTIMIZED",
    "ACQUIRE_MODE_RECORD_LIMIT",
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "NEWEST_VERSION",
    "OLDEST_VERSION",
    "RECORD_LIMIT_VERSION",
    "SHARE_ACKNOWLEDGE",
    "SHARE_FETCH",
    "AcknowledgementBatch",
    "AcquiredRecords",
    "PartitionAcknowledgements",
    "ShareAcknowledgePartition",
    "ShareAcknowledgeRequest",
    "ShareAcknowledgeResponse",
    "ShareFetchPartition",
    "ShareFetchPartitionData",
    "ShareFetchRequest",
    "ShareFetchResponse",
    "next_epoch",
]

SHARE_FETCH: Final = 78
SHARE_ACKNOWLEDGE: Final = 79
#: the versions kgroup speaks (v0 was Kafka 4.0's early-access form, removed in 4.1)
OLDEST_VERSION: Final = 1
NEWEST_VERSION: Final = 2
#: the first version with ``ShareAcquireMode`` (KIP-1206) and ``IsRenewAck`` (KIP-1222)
RECORD_LIMIT_VERSION: Final = 2
#: ``ShareAcquireMode``: acquire whole batches, up to about ``MaxRecords`` (the default)
ACQUIRE_MODE_BATCH_OPTIMIZED: Final = 0
#: ``ShareAcquireMode``: acquire at most ``MaxRecords`` records, splitting batches (KIP-1206)
ACQUIRE_MODE_RECORD_LIMIT: Final = 1
#: the share session epoch that opens a session (Java's ``ShareRequestMetadata.INITIAL_EPOCH``)
INITIAL_EPOCH: Final = 0
#: the share session epoch that closes a session (``ShareRequestMetadata.FINAL_EPOCH``)
FINAL_EPOCH: Final = -1
_MAX_INT32: Final = 2**31 - 1


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch`` (Java's ``ShareRequestMetadata.nextEpoch``): 1 after the maximum, -1 stays -1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _MAX_INT32 else epoch + 1


@attrs.frozen
class AcknowledgementBatch:
    """Offsets ``first_offset..last_offset`` acknowledged with ``acknowledge_types``.

    One type for the whole range, or one per offset; the types are Kafka's: 0 gap (no record
    at the offset), 1 accept, 2 release, 3 reject, 4 renew (KIP-1222).
    """

    first_offset: int
    last_offset: int
    acknowledge_types: tuple[int, ...]


@attrs.frozen
class PartitionAcknowledgements:
    """One partition's acknowledgement batches, by topic id."""

    topic_id: UUID
    partition: int
    batches: tuple[AcknowledgementBatch, ...] = ()


@attrs.frozen
class ShareFetchPartition:
    """A partition of a ShareFetch request: fetched from (added to the session) and/or acknowledged."""

    topic_id: UUID
    partition: int
    acknowledgement_batches: tuple[AcknowledgementBatch, ...] = ()


@attrs.frozen
class ShareFetchRequest:
    """A ShareFetch request to one partition leader.

    Attributes:
        group_id, member_id: the share group and the member (the share session's key at the broker).
        share_session_epoch: 0 opens a share session (every partition listed), the next epoch
            continues it (only what changed listed), -1 closes it.
        max_wait_ms, min_bytes, max_bytes: as a Fetch's (``fetch_max_wait_ms``, ...).
        max_records: the most records to acquire (``max_poll_records``).
        batch_size: the optimal size of an acquired batch (``max_poll_records``, as Java sends).
        share_acquire_mode: ``ACQUIRE_MODE_*`` (v2; a v1 request leaves it out: batch-optimized).
        is_renew_ack: the acknowledgements only renew locks (v2, KIP-1222).
        partitions: the partitions added to the session or acknowledged.
        forgotten: partitions dropped from the session.
        api_version: the most the request may be sent at.

    """

    group_id: str
    member_id: str
    share_session_epoch: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    max_records: int
    batch_size: int
    share_acquire_mode: int = ACQUIRE_MODE_BATCH_OPTIMIZED
    is_renew_ack: bool = False
    partitions: tuple[ShareFetchPartition, ...] = ()
    forgotten: tuple[tuple[UUID, int], ...] = ()
    api_version: int = NEWEST_VERSION

    API_KEY: ClassVar[int] = SHARE_FETCH


@attrs.frozen
class AcquiredRecords:
    """Offsets ``first_offset..last_offset`` acquired by this member, delivered ``delivery_count`` times."""

    first_offset: int
    last_offset: int
    delivery_count: int


@attrs.frozen
class _PartitionAnswer:
    """What every partition of a ShareFetch or ShareAcknowledge answer has: its error and its current leader."""

    topic_id: UUID
    partition: int
    error_code: int = 0
    error_message: str | None = None
    leader_id: int = -1
    leader_epoch: int = -1


@attrs.frozen
class ShareFetchPartitionData(_PartitionAnswer):
    """One partition of a ShareFetch response.

    ``error_code``: the fetch's. ``records``: the record batches' bytes (they may hold records
    not acquired: only the ``acquired_records`` offsets are this member's).
    ``acknowledge_error_code``: the outcome of the acknowledgements the request carried for the
    partition.
    """

    acknowledge_error_code: int = 0
    acknowledge_error_message: str | None = None
    records: bytes | None = None
    acquired_records: tuple[AcquiredRecords, ...] = ()


@attrs.frozen
class ShareFetchResponse:
    """A ShareFetch response: the top-level error, the acquisition lock timeout, the partitions."""

    error_code: int = 0
    error_message: str | None = None
    acquisition_lock_timeout_ms: int = 0
    throttle_time_ms: int = 0
    partitions: tuple[ShareFetchPartitionData, ...] = ()
    api_version: int = NEWEST_VERSION


@attrs.frozen
class ShareAcknowledgeRequest:
    """A ShareAcknowledge request: acknowledgements without a fetch (commit, close)."""

    group_id: str
    member_id: str
    share_session_epoch: int
    partitions: tuple[PartitionAcknowledgements, ...] = ()
    is_renew_ack: bool = False
    api_version: int = NEWEST_VERSION

    API_KEY: ClassVar[int] = SHARE_ACKNOWLEDGE


@attrs.frozen
class ShareAcknowledgePartition(_PartitionAnswer):
    """One partition's outcome in a ShareAcknowledge response (``error_code``: its acknowledgements')."""


@attrs.frozen
class ShareAcknowledgeResponse:
    """A ShareAcknowledge response (v2: with the acquisition lock timeout)."""

    error_code: int = 0
    error_message: str | None = None
    throttle_time_ms: int = 0
    acquisition_lock_timeout_ms: int | None = None
    partitions: tuple[ShareAcknowledgePartition, ...] = ()
    api_version: int = NEWEST_VERSION
