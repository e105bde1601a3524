"""The Transport port: everything kgroup needs from a Kafka network client.

Rule: the rest of kgroup sees only this protocol and kgroup's own types; the one
implementation over kafka-python is ``kgroup._io.kafka_python`` (a kafka-python upgrade
touches that file only). Every method is thread-safe and returns a
``concurrent.futures.Future`` completed on the network thread.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterable, Mapping
from typing import Protocol

import attrs

from kgroup.membership.commands import (
    SendFindCoordinator,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
)
from kgroup.membership.events import Event
from kgroup.types import ConsumerRecord, Generation, OffsetAndMetadata, PartitionInfo, TopicPartition

__all__ = [
    "CommittedOffset",
    "DescribedGroup",
    "DescribedMember",
    "LeaveGroupResult",
    "MemberLeaveResult",
    "OffsetFetchResult",
    "PartitionInfo",
    "RecordFetcher",
    "Transport",
]

GroupRequest = SendFindCoordinator | SendJoinGroup | SendSyncGroup | SendHeartbeat | SendLeaveGroup


@attrs.frozen
class CommittedOffset:
    """One partition's entry of an OffsetFetch response (offset -1: nothing committed)."""

    offset: int
    metadata: str
    leader_epoch: int | None
    error_code: int


@attrs.frozen
class OffsetFetchResult:
    """An OffsetFetch response: top-level error code and per-partition results."""

    error_code: int
    partitions: Mapping[TopicPartition, CommittedOffset]


@attrs.frozen
class DescribedMember:
    """One member of a DescribeGroups response (bytes as the coordinator sent them).

    Attributes:
        member_id: the member id the coordinator assigned.
        group_instance_id: the static member's id (KIP-345; DescribeGroups v4+), else None.
        client_id: the member's ``client.id``.
        client_host: the address the coordinator saw it connect from (``"/127.0.0.1"``).
        member_metadata: its ConsumerProtocol Subscription for the chosen protocol; empty
            unless the group is Stable (Kafka's ``describeNoMetadata``).
        member_assignment: its ConsumerProtocol Assignment; empty before SyncGroup.

    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@attrs.frozen
class DescribedGroup:
    """One group of a DescribeGroups response.

    Attributes:
        error_code: the group's error code (0: described; an unknown group is state "Dead",
            error 0, on Apache Kafka).
        group_id: the group id.
        group_state: Kafka's state name ("Empty", "PreparingRebalance",
            "CompletingRebalance", "Stable", "Dead").
        protocol_type: "consumer" for consumer groups ("" when unknown).
        protocol_data: the chosen protocol (the assignor's name) when Stable, else "".
        members: the members.

    """

    error_code: int
    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str
    members: tuple[DescribedMember, ...]


@attrs.frozen
class MemberLeaveResult:
    """One member identity's result in a LeaveGroup v3+ response (KIP-345)."""

    member_id: str
    group_instance_id: str | None
    error_code: int


@attrs.frozen
class LeaveGroupResult:
    """A LeaveGroup v3+ response: the top-level error code and one result per identity.

    ``error_code`` is 35 (UNSUPPORTED_VERSION) with no members when the coordinator cannot
    do LeaveGroup v3+ (Kafka < 2.4): removal by ``group_instance_id`` needs the batch form.
    """

    error_code: int
    members: tuple[MemberLeaveResult, ...]


class RecordFetcher(Protocol):
    """Fetch state and buffers for the partitions this member owns. Poll thread only."""

    def assign(self, partitions: frozenset[TopicPartition]) -> None:
        """Fetch exactly ``partitions`` from now on; buffered records of others are dropped."""
        ...

    def seek(self, tp: TopicPartition, offset: int, leader_epoch: int | None = None) -> None:
        """Fetch ``tp`` from ``offset`` next."""
        ...

    def request_reset(self, tp: TopicPartition, strategy: str) -> None:
        """Look up ``tp``'s position by ``strategy`` ("earliest" / "latest")."""
        ...

    def position(self, tp: TopicPartition) -> int | None:
        """The offset of the next record to hand out, or None while unknown."""
        ...

    def highwater(self, tp: TopicPartition) -> int | None:
        """The high watermark of ``tp`` from its last fetch response, or None before one."""
        ...

    def has_position(self, tp: TopicPartition) -> bool:
        """True when ``tp``'s position is known (not awaiting a reset)."""
        ...

    def pause(self, tp: TopicPartition) -> None:
        """Stop fetching ``tp`` (its buffered records are kept)."""
        ...

    def resume(self, tp: TopicPartition) -> None:
        """Fetch ``tp`` again."""
        ...

    def fetch(self, max_records: int, timeout_ms: int) -> list[ConsumerRecord]:
        """Up to ``max_records`` records of fetchable partitions, waiting at most ``timeout_ms``."""
        ...

    def idle(self) -> bool:
        """True when the last ``fetch`` returned without waiting: nothing was in flight."""
        ...

    def wakeup(self) -> None:
        """Interrupt a blocked ``fetch`` (any thread)."""
        ...

    def missing_topics(self) -> frozenset[str]:
        """Topics of assigned partitions that cluster metadata no longer knows (deleted).

        Fetch errors such as UNKNOWN_TOPIC_OR_PARTITION make the client refresh its metadata;
        a topic still missing then was deleted (Java's Fetcher: ``metadata.requestUpdate``).
        """
        ...


class Transport(Protocol):
    """The network port of the group thread and the poll thread."""

    def send(self, command: GroupRequest, group_id: str) -> concurrent.futures.Future[Event]:
        """Send a group request; the future yields the matching response event."""
        ...

    def describe_topics(
        self, topics: Iterable[str], timeout_ms: int
    ) -> concurrent.futures.Future[dict[str, tuple[PartitionInfo, ...]]]:
        """Partitions of ``topics`` with leaders and replica racks (absent: unknown topic)."""
        ...

    def list_offsets(
        self, partitions: Iterable[TopicPartition], spec: str, timeout_ms: int
    ) -> concurrent.futures.Future[dict[TopicPartition, int]]:
        """ListOffsets from each leader: ``spec`` "earliest" or "latest" (the log end offset)."""
        ...

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int], timeout_ms: int
    ) -> concurrent.futures.Future[dict[TopicPartition, tuple[int, int]]]:
        """ListOffsets by timestamp (ms): ``{tp: (offset, timestamp)}``, absent where no record is that late."""
        ...

    def offset_commit(
        self,
        group_id: str,
        generation: Generation,
        group_instance_id: str | None,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        node_id: int,
        timeout_ms: int,
    ) -> concurrent.futures.Future[dict[TopicPartition, int]]:
        """OffsetCommit; the future yields each partition's error code."""
        ...

    def offset_fetch(
        self, group_id: str, partitions: Iterable[TopicPartition], node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[OffsetFetchResult]:
        """OffsetFetch for ``partitions`` from the coordinator ``node_id``."""
        ...

    def offset_fetch_all(
        self, group_id: str, node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[OffsetFetchResult]:
        """OffsetFetch with ``topics=null``: every partition the group committed (v2+; v8+ on Tansu)."""
        ...

    def describe_groups(
        self, group_ids: Iterable[str], node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[tuple[DescribedGroup, ...]]:
        """DescribeGroups for ``group_ids`` at their coordinator ``node_id``."""
        ...

    def leave_group_members(
        self, group_id: str, instance_ids: Iterable[str], reason: str | None, node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[LeaveGroupResult]:
        """LeaveGroup v3+ removing static members by ``group_instance_id`` (member id "", KIP-345)."""
        ...

    def fetcher(self) -> RecordFetcher:
        """The record fetcher (one per transport)."""
        ...

    def close(self) -> None:
        """Close connections and stop the network thread."""
        ...
