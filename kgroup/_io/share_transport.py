"""The share consumer's network port over kafka-python (KIP-932): ShareGroupHeartbeat, ShareFetch, ShareAcknowledge.

:class:`KafkaShareTransport` is the consumer's transport (:class:`KafkaPythonTransport`: the
network client, FindCoordinator, topic ids) plus what a share consumer needs:

* ``share_group_heartbeat``: the group thread's heartbeat, over the coordinator connection, as
  ``consumer_group_heartbeat`` (a broker without share groups: ``RequestFailed`` with
  ``unsupported_version=True``);
* ``share_fetch`` and ``share_acknowledge``: to a partition leader (the broker's ordinary
  connection), through :mod:`kgroup._io.kafka_messages`, at most v2 and at least v1;
* ``share_metadata``: the leader and topic id of every partition of some topics (Metadata v10+);
* :func:`decode_records`: a partition's record bytes decoded by kgroup's record decoder
  (:mod:`kgroup._io.record_decoder`), every record of every batch (the caller keeps the
  acquired ones); :func:`encode_records` the other way (the simulator's partition leader).
"""

from __future__ import annotations

import concurrent.futures
import uuid
from collections.abc import Iterable
from typing import Any

from kgroup._io import quiet_kafka  # noqa: F401  (first: kafka-python, without its import-time warning)

# isort: split
import attrs
from kafka.protocol.metadata import MetadataRequest
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from kgroup._io import kafka_messages as wire
from kgroup._io.kafka_python import TOPIC_IDS_MIN, KafkaPythonTransport
from kgroup._io.record_decoder import PartitionRecords, kafka_tp, load_batch_decoder
from kgroup.membership import events as ev
from kgroup.membership.commands import SendShareGroupHeartbeat
from kgroup.protocol.share_fetch import (
    SHARE_FETCH,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchRequest,
    ShareFetchResponse,
)
from kgroup.types import ConsumerRecord, TopicPartition

__all__ = ["KafkaShareTransport", "PartitionLeader", "decode_records", "encode_records"]


@attrs.frozen
class PartitionLeader:
    """Where a partition is fetched from: its leader (-1: none now) and its topic's id."""

    leader: int
    topic_id: uuid.UUID


def decode_records(tp: TopicPartition, raw: bytes | None, *, check_crcs: bool = True) -> list[ConsumerRecord]:
    """Every record of the record batches ``raw`` (control batches skipped), in offset order.

    Raises:
        kafka.errors.CorruptRecordError: a batch failed its CRC check (the records before it
            are lost with it; the caller rejects what it acquired of them, as Java does).

    """
    if not raw:
        return []
    records = PartitionRecords(load_batch_decoder(), 0, kafka_tp(tp), MemoryRecords(raw), check_crcs=check_crcs)
    out: list[ConsumerRecord] = records.take()
    return out


def encode_records(first_offset: int, values: Iterable[bytes], timestamp_ms: int = 0) -> bytes:
    """One v2 record batch of ``values`` (no keys, no headers) from offset ``first_offset``, as a leader sends it."""
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 24, offset=first_offset)
    for value in values:
        builder.append(timestamp=timestamp_ms, key=None, value=value, headers=[])
    builder.close()
    return bytes(builder.buffer())


class KafkaShareTransport(KafkaPythonTransport):
    """The share consumer's transport: ``ShareGroupTransport`` over kafka-python's network client."""

    def share_group_heartbeat(
        self, command: SendShareGroupHeartbeat
    ) -> concurrent.futures.Future[ev.ShareGroupHeartbeatResponded | ev.RequestFailed]:
        """ShareGroupHeartbeat (API 76, v1) over the coordinator connection; failures are ``RequestFailed``."""
        request = command.request()
        request_id = command.request_id

        def convert(message: Any) -> ev.ShareGroupHeartbeatResponded:
            value = wire.share_heartbeat_response_value(message)
            fields = {f.name: getattr(value, f.name) for f in attrs.fields(type(value))}
            return ev.ShareGroupHeartbeatResponded(request_id=request_id, **fields)

        return self._heartbeat(lambda: wire.share_heartbeat_request_message(request), command, convert)

    def share_fetch(
        self, node_id: int, request: ShareFetchRequest, timeout_ms: int
    ) -> concurrent.futures.Future[ShareFetchResponse]:
        """ShareFetch (API 78) to the leader ``node_id``; the future fails on no answer (disconnect, timeout)."""
        return self._bridge(
            lambda: wire.share_fetch_request_message(request), node_id, timeout_ms + request.max_wait_ms,
            wire.share_fetch_response_value,
        )

    def share_acknowledge(
        self, node_id: int, request: ShareAcknowledgeRequest, timeout_ms: int
    ) -> concurrent.futures.Future[ShareAcknowledgeResponse]:
        """ShareAcknowledge (API 79) to the leader ``node_id``; the future fails on no answer."""
        return self._bridge(
            lambda: wire.share_acknowledge_request_message(request), node_id, timeout_ms,
            wire.share_acknowledge_response_value,
        )

    def share_metadata(
        self, topics: Iterable[str], timeout_ms: int
    ) -> concurrent.futures.Future[dict[TopicPartition, PartitionLeader]]:
        """The leader and topic id of every partition of ``topics`` (Metadata v10+; a topic in error is left out)."""
        names = sorted(set(topics))
        request = lambda: MetadataRequest(  # noqa: E731 - built on the IO thread
            topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in names],
            allow_auto_topic_creation=False, min_version=TOPIC_IDS_MIN,
        )

        def convert(response: Any) -> dict[TopicPartition, PartitionLeader]:
            return {
                TopicPartition(t.name, p.partition_index): PartitionLeader(p.leader_id, t.topic_id)
                for t in response.topics if t.error_code == 0 and t.topic_id is not None
                for p in t.partitions
            }

        return self._bridge(request, self._manager.least_loaded_node, timeout_ms, convert)

    def share_fetch_version(self) -> int | None:
        """The newest ShareFetch version the cluster serves (None: not known yet, or not served)."""
        versions = getattr(self._manager.broker_version_data, "api_versions", None) or {}
        served = versions.get(SHARE_FETCH)
        return None if served is None else int(served[1])
