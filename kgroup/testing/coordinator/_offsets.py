"""Committed offsets, shared by both coordinator models (Kafka ``OffsetMetadataManager``'s store and answers).

The classic model (:class:`~kgroup.testing.coordinator.GroupCoordinatorModel`) and the consumer-group
model (:class:`~kgroup.testing.coordinator.ConsumerGroupModel`) keep committed offsets alike and
answer OffsetCommit and OffsetFetch in the same shape; only who may commit or fetch differs (a
classic group's generation, a consumer group's member epochs), and each model decides that itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from kgroup.protocol.group_api import (
    CommitPartitionResult,
    CommitTopicResult,
    FetchPartitionResult,
    FetchTopic,
    FetchTopicResult,
    OffsetCommitRequest,
    OffsetFetchResponse,
)

__all__ = ["Committed", "CommittedOffsets", "commit_answer_order", "fetch_answer", "fetch_result"]


@attrs.frozen(kw_only=True)
class Committed:
    """One committed offset (Kafka ``OffsetAndMetadata``)."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_time_ms: int


CommittedOffsets = dict[str, dict[tuple[str, int], Committed]]
"""Group id -> (topic, partition) -> its committed offset, partitions in first-commit order."""


def commit_answer_order(
    request: OffsetCommitRequest, verdict: dict[tuple[int, int], int], to_coordinator: list[tuple[int, int]]
) -> tuple[CommitTopicResult, ...]:
    """The OffsetCommit answer as ``KafkaApis.handleOffsetCommitRequest`` assembles it.

    KafkaApis answers the unknown partitions itself, in an ``OffsetCommitResponse.Builder``
    (topics in order of first appearance, partitions in request order), and ``Builder.merge``
    then adds the coordinator's answer: when the builder is empty it *is* the coordinator's
    answer (request order); otherwise each coordinator topic's partitions are appended to the
    builder's topic of that name, or the topic is appended. So unknown partitions come first.
    """
    answer: dict[str, list[CommitPartitionResult]] = {}
    for t, topic in enumerate(request.topics):
        for p, partition in enumerate(topic.partitions):
            if (t, p) not in to_coordinator:
                answer.setdefault(topic.name, []).append(
                    CommitPartitionResult(partition_index=partition.partition_index, error_code=verdict[t, p])
                )
    for t, p in to_coordinator:
        topic = request.topics[t]
        answer.setdefault(topic.name, []).append(
            CommitPartitionResult(partition_index=topic.partitions[p].partition_index, error_code=verdict[t, p])
        )
    return tuple(CommitTopicResult(name=name, partitions=tuple(parts)) for name, parts in answer.items())


def fetch_result(partition_index: int, value: Committed | None) -> FetchPartitionResult:
    """One partition of an OffsetFetch answer: its commit, or offset -1, leader epoch -1, metadata ``""``."""
    if value is None:
        return FetchPartitionResult(partition_index=partition_index)
    return FetchPartitionResult(
        partition_index=partition_index,
        committed_offset=value.offset,
        committed_leader_epoch=value.leader_epoch,
        metadata=value.metadata,
    )


def fetch_answer(
    committed: Mapping[tuple[str, int], Committed], topics: Sequence[FetchTopic] | None
) -> OffsetFetchResponse:
    """Kafka ``OffsetMetadataManager.fetchOffsets`` / ``fetchAllOffsets`` over one group's commits.

    ``topics=None`` lists every committed partition, topics in first-commit order and partitions
    sorted; otherwise each asked partition in request order, a partition without a commit as
    :func:`fetch_result` answers it.
    """
    if topics is None:
        by_topic: dict[str, list[FetchPartitionResult]] = {}
        for (topic_name, partition_index), value in committed.items():
            by_topic.setdefault(topic_name, []).append(fetch_result(partition_index, value))
        return OffsetFetchResponse(
            topics=tuple(
                FetchTopicResult(name=name, partitions=tuple(sorted(parts, key=lambda r: r.partition_index)))
                for name, parts in by_topic.items()
            )
        )
    return OffsetFetchResponse(
        topics=tuple(
            FetchTopicResult(
                name=topic.name,
                partitions=tuple(
                    fetch_result(index, committed.get((topic.name, index))) for index in topic.partition_indexes
                ),
            )
            for topic in topics
        )
    )
