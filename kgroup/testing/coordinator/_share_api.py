"""The ShareFetch (78) and ShareAcknowledge (79) requests and answers of the share-group model, as values.

The model's own ``attrs.frozen`` types, field for field those of Apache Kafka's message schemas
(``ShareFetchRequest.json``, ``ShareFetchResponse.json``, ``ShareAcknowledgeRequest.json``,
``ShareAcknowledgeResponse.json``, versions 1-2, KIP-932 and KIP-1222) without what the model
does not carry: the record bytes (the model answers offsets; the caller reads the records of
its own log), the current leader and node endpoints.
Topic partitions are ``(topic id, partition)``; offsets are Kafka offsets, first and last inclusive.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable
from typing import Final

import attrs

__all__ = [
    "FINAL_SHARE_SESSION_EPOCH",
    "INITIAL_SHARE_SESSION_EPOCH",
    "AcknowledgeType",
    "AcknowledgementBatch",
    "AcquiredRecords",
    "ShareAcknowledgePartition",
    "ShareAcknowledgeRequest",
    "ShareAcknowledgeResponse",
    "ShareAcquireMode",
    "ShareFetchPartition",
    "ShareFetchRequest",
    "ShareFetchResponse",
    "SharePartitionData",
]

INITIAL_SHARE_SESSION_EPOCH: Final = 0
"""``ShareRequestMetadata.INITIAL_EPOCH``: the request opens a share session."""
FINAL_SHARE_SESSION_EPOCH: Final = -1
"""``ShareRequestMetadata.FINAL_EPOCH``: the request closes the share session."""


class AcknowledgeType(enum.IntEnum):
    """A record's acknowledgement on the wire (Kafka ``AcknowledgeType`` ids; 0 is a gap in the log)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4
    """KIP-1222 (ShareFetch/ShareAcknowledge v2 with ``is_renew_ack``): extend the acquisition lock."""


class ShareAcquireMode(enum.IntEnum):
    """ShareFetch v2's ``share_acquire_mode`` (KIP-1206)."""

    BATCH_OPTIMIZED = 0
    """``max_records`` is a soft limit: whole log batches are acquired (the only mode of v1)."""
    RECORD_LIMIT = 1
    """``max_records`` is a strict limit: batches are split so that no more records are acquired."""


def _ints(value: Iterable[int]) -> tuple[int, ...]:
    return tuple(value)


def _batches(value: Iterable[AcknowledgementBatch]) -> tuple[AcknowledgementBatch, ...]:
    return tuple(value)


def _partitions(value: Iterable[SharePartitionData]) -> tuple[SharePartitionData, ...]:
    return tuple(value)


def _topic_partitions(value: Iterable[tuple[uuid.UUID, int]]) -> tuple[tuple[uuid.UUID, int], ...]:
    return tuple(value)


@attrs.frozen
class AcknowledgementBatch:
    """Offsets ``first_offset..last_offset`` acknowledged with one type each, or one type for all."""

    first_offset: int
    last_offset: int
    acknowledge_types: tuple[int, ...] = attrs.field(converter=_ints)


@attrs.frozen
class SharePartitionData:
    """One partition of a request: fetch it (ShareFetch) and/or acknowledge its ``acknowledgement_batches``."""

    topic_id: uuid.UUID
    partition: int
    acknowledgement_batches: tuple[AcknowledgementBatch, ...] = attrs.field(default=(), converter=_batches)


@attrs.frozen(kw_only=True)
class ShareFetchRequest:
    """A ShareFetch request (v1-v2).

    ``partitions`` are added to the share session (an incremental request lists only the
    partitions it adds or acknowledges); ``forgotten`` leave it. ``max_records`` caps the records
    acquired by the whole request, ``batch_size`` the records per acquired range handed out at once
    (Kafka's ``BatchSize``); ``share_acquire_mode`` and ``is_renew_ack`` are v2's (a renewing
    request must set ``max_wait_ms``, ``min_bytes``, ``max_bytes`` and ``max_records`` to 0).
    ``max_wait_ms``, ``min_bytes`` and ``max_bytes`` are checked, not applied: the model answers at once.
    """

    group_id: str
    member_id: str
    share_session_epoch: int
    partitions: tuple[SharePartitionData, ...] = attrs.field(default=(), converter=_partitions)
    forgotten: tuple[tuple[uuid.UUID, int], ...] = attrs.field(default=(), converter=_topic_partitions)
    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 52428800
    max_records: int = 500
    batch_size: int = 500
    share_acquire_mode: int = ShareAcquireMode.BATCH_OPTIMIZED
    is_renew_ack: bool = False
    api_version: int = 2


@attrs.frozen
class AcquiredRecords:
    """Offsets ``first_offset..last_offset`` acquired by the fetcher, each delivered ``delivery_count`` times."""

    first_offset: int
    last_offset: int
    delivery_count: int


@attrs.frozen(kw_only=True)
class ShareFetchPartition:
    """One partition of a ShareFetch answer: its fetch error, its acknowledgement error, what was acquired."""

    topic_id: uuid.UUID
    partition: int
    error_code: int = 0
    acknowledge_error_code: int = 0
    acquired_records: tuple[AcquiredRecords, ...] = ()


@attrs.frozen(kw_only=True)
class ShareFetchResponse:
    """A ShareFetch answer: a request-level error, the lock duration (ms; 0 on an error) and the partitions."""

    error_code: int = 0
    acquisition_lock_timeout_ms: int = 0
    partitions: tuple[ShareFetchPartition, ...] = ()


@attrs.frozen(kw_only=True)
class ShareAcknowledgeRequest:
    """A ShareAcknowledge request (v1-v2): acknowledgements of records acquired in the share session."""

    group_id: str
    member_id: str
    share_session_epoch: int
    partitions: tuple[SharePartitionData, ...] = attrs.field(default=(), converter=_partitions)
    is_renew_ack: bool = False
    api_version: int = 2


@attrs.frozen(kw_only=True)
class ShareAcknowledgePartition:
    """One partition of a ShareAcknowledge answer."""

    topic_id: uuid.UUID
    partition: int
    error_code: int = 0


@attrs.frozen(kw_only=True)
class ShareAcknowledgeResponse:
    """A ShareAcknowledge answer: a request-level error, the lock duration (v2, ms) and the partitions."""

    error_code: int = 0
    acquisition_lock_timeout_ms: int = 0
    partitions: tuple[ShareAcknowledgePartition, ...] = ()
