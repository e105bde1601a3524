"""The network ports, one per client: what the consumer and the admin need from a Kafka network client.

* :class:`Transport`: the consumer's (the group thread and the poll thread), with
  :class:`ConsumerGroupTransport` for the consumer group protocol (KIP-848) and the
  :class:`RecordFetcher` it hands out;
* :class:`AdminTransport`: ``kgroup.admin.GroupAdmin``'s.

Rule: the rest of kgroup sees only these protocols and kgroup's own types; the implementations
over kafka-python are ``kgroup._io.kafka_python`` (the consumer's) and ``kgroup._io.kafka_admin``
(the admin's), on one network client each (a kafka-python upgrade touches ``kgroup._io`` only).
Every method is thread-safe and returns a ``concurrent.futures.Future`` completed on the
network thread.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from kgroup.membership.commands import SendConsumerGroupHeartbeat, SendFindCoordinator, SendGroupRequest
from kgroup.membership.events import ConsumerGroupHeartbeatResponded, Event, RequestFailed
from kgroup.protocol.group_api import (
    CommitPartition,
    CommitTopic,
    DescribedGroup,
    FetchTopic,
    LeaveGroupResponse,
    ListedGroup,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from kgroup.types import ConsumerRecord, Generation, OffsetAndMetadata, PartitionInfo, TopicPartition

if TYPE_CHECKING:
    from uuid import UUID

    from kgroup.protocol.consumer_group_describe import DescribedConsumerGroup
    from kgroup.protocol.group_configs import ConfigChange, GroupConfigsAltered, GroupConfigsDescribed
    from kgroup.protocol.share_group_admin import (
        DescribedShareGroup,
        ShareGroupOffsets,
        ShareOffsetsAltered,
        ShareOffsetsDeleted,
    )

__all__ = [
    "AdminTransport",
    "ClusterPort",
    "CommittedOffset",
    "ConsumerGroupTransport",
    "FetchedColumns",
    "OffsetFetchResult",
    "PartitionInfo",
    "RecordFetcher",
    "ShareGroupTransport",
    "Transport",
    "commit_results",
    "fetch_result",
    "offset_commit_request",
    "offset_fetch_request",
]

@attrs.frozen
class CommittedOffset:
    """One partition's entry of an OffsetFetch response (offset -1: nothing committed)."""

    offset: int
    metadata: str
    leader_epoch: int | None
    error_code: int


@attrs.frozen
class OffsetFetchResult:
    """An OffsetFetch response keyed by partition: top-level error code and per-partition results."""

    error_code: int
    partitions: Mapping[TopicPartition, CommittedOffset]


# The offset calls' kgroup arguments <-> their group API values (every transport uses these).


def offset_commit_request(
    group_id: str,
    generation: Generation,
    group_instance_id: str | None,
    offsets: Mapping[TopicPartition, OffsetAndMetadata],
) -> OffsetCommitRequest:
    """The OffsetCommit of ``offsets`` for a member of ``generation`` (partitions sorted, grouped by topic)."""
    by_topic: dict[str, list[CommitPartition]] = {}
    for tp, om in sorted(offsets.items()):
        by_topic.setdefault(tp.topic, []).append(
            CommitPartition(
                partition_index=tp.partition,
                committed_offset=om.offset,
                committed_leader_epoch=-1 if om.leader_epoch is None else om.leader_epoch,
                committed_metadata=om.metadata,
            )
        )
    return OffsetCommitRequest(
        group_id=group_id,
        generation_id=generation.generation_id,
        member_id=generation.member_id,
        group_instance_id=group_instance_id,
        topics=tuple(CommitTopic(name=t, partitions=tuple(ps)) for t, ps in by_topic.items()),
    )


def commit_results(response: OffsetCommitResponse) -> dict[TopicPartition, int]:
    """Each partition's error code in an OffsetCommit answer."""
    return {TopicPartition(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def offset_fetch_request(
    group_id: str,
    partitions: Iterable[TopicPartition],
    *,
    require_stable: bool = False,
    member: Generation | None = None,
) -> OffsetFetchRequest:
    """The OffsetFetch of ``partitions`` (sorted, grouped by topic; ``require_stable`` under read_committed).

    ``member`` is a consumer-protocol member's id and epoch (``Generation(member_epoch,
    member_id)``), sent in OffsetFetch v9+ (KIP-848); None sends none (null and -1).
    """
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(set(partitions)):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    topics = tuple(FetchTopic(name=t, partition_indexes=tuple(ps)) for t, ps in by_topic.items())
    if member is None:
        return OffsetFetchRequest(group_id=group_id, topics=topics, require_stable=require_stable)
    return OffsetFetchRequest(
        group_id=group_id, member_id=member.member_id, member_epoch=member.generation_id,
        topics=topics, require_stable=require_stable,
    )


def fetch_result(response: OffsetFetchResponse) -> OffsetFetchResult:
    """An OffsetFetch answer keyed by partition (metadata None -> "", leader epoch -1 -> None)."""
    return OffsetFetchResult(
        response.error_code,
        {
            TopicPartition(t.name, p.partition_index): CommittedOffset(
                p.committed_offset,
                p.metadata or "",
                None if p.committed_leader_epoch < 0 else p.committed_leader_epoch,
                p.error_code,
            )
            for t in response.topics
            for p in t.partitions
        },
    )


class FetchedColumns(Protocol):
    """What the poll thread reads of one partition's columnar hand-out (``RecordColumns``)."""

    @property
    def topic_partition(self) -> TopicPartition:
        """The partition of every row."""
        ...

    @property
    def offsets(self) -> Sequence[int]:
        """The rows' offsets, ascending (at least one)."""
        ...

    def __len__(self) -> int: ...


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

    def fetch_until(self, tp: TopicPartition, end_offset: int | None) -> None:
        """Send no Fetch for ``tp`` once its position reaches ``end_offset`` (None: no end).

        A reader of a bounded range (a Spark task's offsets) so leaves nothing in flight past it.
        """
        ...

    def reusable(self) -> bool:
        """True when nothing fetched so far can reach a later, unrelated read: no Fetch in flight."""
        ...

    def close_sessions(self, timeout_ms: int) -> None:
        """End what the fetcher holds open on the brokers (KIP-227 fetch sessions).

        Waits at most ``timeout_ms``; best effort, never raises. Called by ``close()``.
        """
        ...

    def missing_topics(self) -> frozenset[str]:
        """Topics of assigned partitions that cluster metadata no longer knows (deleted).

        Fetch errors such as UNKNOWN_TOPIC_OR_PARTITION make the client refresh its metadata;
        a topic still missing then was deleted (Java's Fetcher: ``metadata.requestUpdate``).
        """
        ...


class ClusterPort(Protocol):
    """The calls both clients make: topic metadata, log offsets, DescribeGroups."""

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

    def describe_groups(
        self, group_ids: Iterable[str], node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[tuple[DescribedGroup, ...]]:
        """DescribeGroups for ``group_ids`` at their coordinator ``node_id``."""
        ...


class Transport(ClusterPort, Protocol):
    """The consumer's network port: the group thread's and the poll thread's."""

    def send(self, command: SendGroupRequest, group_id: str) -> concurrent.futures.Future[Event]:
        """Send a group request; the future yields the matching response event."""
        ...

    def list_topics(
        self, timeout_ms: int, *, exclude_internal: bool | None = None
    ) -> concurrent.futures.Future[frozenset[str]]:
        """The cluster's topic names, for pattern subscriptions (without the internal ones by default).

        The internal topics are left out if ``exclude_internal`` says so (None: unless the
        consumer's ``exclude_internal_topics`` is False).
        """
        ...

    def offset_commit(
        self, request: OffsetCommitRequest, node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[dict[TopicPartition, int]]:
        """Send ``request`` (:func:`offset_commit_request`); the future yields each partition's error code."""
        ...

    def offset_fetch(
        self, request: OffsetFetchRequest, node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[OffsetFetchResult]:
        """Send ``request`` (:func:`offset_fetch_request`) to the coordinator ``node_id``."""
        ...

    def fetcher(self) -> RecordFetcher:
        """The record fetcher (one per transport)."""
        ...

    def close(self) -> None:
        """Close connections and stop the network thread."""
        ...


class ConsumerGroupTransport(Protocol):
    """What the consumer group protocol (KIP-848) needs beyond ``Transport`` (kafka-python's adapter has it)."""

    def consumer_group_heartbeat(
        self, command: SendConsumerGroupHeartbeat
    ) -> concurrent.futures.Future[ConsumerGroupHeartbeatResponded | RequestFailed]:
        """ConsumerGroupHeartbeat (API 68) to the coordinator ``command.node_id``.

        The future yields ``HeartbeatResponded``, or ``RequestFailed`` (never an exception):
        ``unsupported_version=True`` when the broker does not serve the API at a version the
        request can use.
        """
        ...

    def topic_ids(self, timeout_ms: int) -> concurrent.futures.Future[dict[UUID, str]]:
        """Topic id -> name of every topic in the cluster (Metadata v10+)."""
        ...

    def describe_group_configs(
        self, group_id: str, names: Iterable[str], timeout_ms: int
    ) -> concurrent.futures.Future[dict[str, str | None]]:
        """DescribeConfigs (API 32) of the group's configs ``names`` (resource type GROUP, KIP-848) at any broker.

        The future yields the name -> value of each config the broker answered with (a group
        without its own config answers with the broker's ``group.consumer.*`` value); it fails
        (a ``KGroupError``, or the transport's error) on an error code (GROUP_AUTHORIZATION_FAILED
        without DESCRIBE_CONFIGS on the group, INVALID_REQUEST on a broker without group
        configs), an unsupported request or no answer.
        """
        ...


class ShareGroupTransport(Protocol):
    """What a share consumer (KIP-932) needs (``kgroup._io.share_transport.KafkaShareTransport`` has it).

    Besides these, the group thread uses ``send`` (FindCoordinator) and ``topic_ids``.
    """

    def share_group_heartbeat(self, command: Any) -> concurrent.futures.Future[Any]:
        """ShareGroupHeartbeat (API 76) to the coordinator: ``ShareGroupHeartbeatResponded`` or ``RequestFailed``."""
        ...

    def share_fetch(self, node_id: int, request: Any, timeout_ms: int) -> concurrent.futures.Future[Any]:
        """ShareFetch (API 78) to a partition leader: a ``ShareFetchResponse``; fails on no answer."""
        ...

    def share_acknowledge(self, node_id: int, request: Any, timeout_ms: int) -> concurrent.futures.Future[Any]:
        """ShareAcknowledge (API 79) to a partition leader: a ``ShareAcknowledgeResponse``; fails on no answer."""
        ...

    def share_metadata(self, topics: Iterable[str], timeout_ms: int) -> concurrent.futures.Future[Any]:
        """Each partition of ``topics``: its leader and topic id (``PartitionLeader``)."""
        ...

    def share_fetch_version(self) -> int | None:
        """The newest ShareFetch version the cluster serves, if known."""
        ...


class AdminTransport(ClusterPort, Protocol):
    """The network port of ``kgroup.admin.GroupAdmin``: one network client, no thread of its own.

    Broker error codes are values in each result (what they mean is decided in ``kgroup.admin``);
    client-side failures (no connection, no answer) are the future's exception.
    """

    def send(self, command: SendFindCoordinator, group_id: str) -> concurrent.futures.Future[Event]:
        """FindCoordinator for ``command.key``; the future yields the response event (``RequestFailed``: no answer)."""
        ...

    def offset_fetch_all(
        self, group_id: str, node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[OffsetFetchResult]:
        """OffsetFetch with ``topics=null``: every partition the group committed (v2+; v8+ on Tansu)."""
        ...

    def consumer_group_describe(
        self, group_ids: Iterable[str], node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[tuple[DescribedConsumerGroup, ...]]:
        """ConsumerGroupDescribe (API 69) for ``group_ids`` at their coordinator ``node_id``.

        One ``DescribedConsumerGroup`` per group, in response order; a broker without API 69
        yields each group with error UNSUPPORTED_VERSION instead of failing.
        """
        ...

    def leave_group_members(
        self, group_id: str, instance_ids: Iterable[str], reason: str | None, node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[LeaveGroupResponse]:
        """LeaveGroup v3+ removing static members by ``group_instance_id`` (member id "", KIP-345)."""
        ...

    def list_groups(self, timeout_ms: int) -> concurrent.futures.Future[tuple[int, tuple[ListedGroup, ...]]]:
        """ListGroups at every broker: ``(error_code, groups)``, the first broker error if any.

        A group's ``group_state`` and ``group_type`` are "" where the answer's version does not
        carry them (state: v4+, KIP-518; type: v5+, KIP-848).
        """
        ...

    def delete_groups(
        self, group_ids: Iterable[str], node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[dict[str, int]]:
        """DeleteGroups at the coordinator ``node_id``: each group's error code."""
        ...

    def alter_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata], node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[dict[TopicPartition, int]]:
        """OffsetCommit as an admin (generation -1, member id "") at ``node_id``: each partition's error code."""
        ...

    def share_group_describe(
        self, group_ids: Iterable[str], node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[tuple[DescribedShareGroup, ...]]:
        """ShareGroupDescribe (API 77, KIP-932): one entry per group (UNSUPPORTED_VERSION: no such API)."""
        ...

    def describe_share_group_offsets(
        self, group_id: str, node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[ShareGroupOffsets]:
        """DescribeShareGroupOffsets (API 90): every partition's start offset (and lag, v1+)."""
        ...

    def alter_share_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int], node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[ShareOffsetsAltered]:
        """AlterShareGroupOffsets (API 91): new start offsets; the request's and each partition's error code."""
        ...

    def delete_share_group_offsets(
        self, group_id: str, topics: Iterable[str], node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[ShareOffsetsDeleted]:
        """DeleteShareGroupOffsets (API 92): delete whole topics' start offsets; the request's and each topic's code."""
        ...

    def describe_group_config_entries(
        self, group_id: str, timeout_ms: int
    ) -> concurrent.futures.Future[GroupConfigsDescribed]:
        """DescribeConfigs (API 32) of every config of the GROUP resource ``group_id``, at any broker.

        The answer's error code and configs (UNSUPPORTED_VERSION: no DescribeConfigs).
        """
        ...

    def incremental_alter_group_configs(
        self, group_id: str, changes: Iterable[ConfigChange], validate_only: bool, timeout_ms: int
    ) -> concurrent.futures.Future[GroupConfigsAltered]:
        """IncrementalAlterConfigs (API 44) of the GROUP resource ``group_id``, at any broker: its error code.

        ``changes`` are SET and DELETE operations, sent in order; ``validate_only``: the broker
        checks them and changes nothing. UNSUPPORTED_VERSION: no IncrementalAlterConfigs.
        """
        ...

    def close(self) -> None:
        """Close connections and stop the network thread. Idempotent."""
        ...
