"""The one adapter over kafka-python 3.0.x (``kafka.net``, ``kafka.protocol``, ``Fetcher``).

Rules:

1. This is the only kgroup module that imports ``kafka``. It turns kgroup commands into
   kafka-python request objects and responses into kgroup events, so a kafka-python upgrade
   touches this file alone (``tests/compat`` guards the pin ``>=3.0.12,<3.1``).
2. Requests are built with ``max_version`` = the newest version kgroup understands; the
   connection negotiates ``min(ours, broker's)`` from ApiVersions, so JoinGroup goes out at
   the highest version both sides support (v9 on Kafka 4.x and on Tansu).
3. Everything is sent through kafka-python's IO thread (``KafkaConnectionManager.call_soon``,
   thread-safe); results are bridged to ``concurrent.futures.Future``. Group requests go
   over a dedicated coordinator connection (kafka-python's ``coordinator-N`` node), as in
   Java, so heartbeats never queue behind fetches.
4. Records are fetched by kafka-python's ``Fetcher`` over a ``SubscriptionState`` in manual
   assignment mode: kgroup decides what is assigned (``KafkaFetcher.assign``); records of a
   partition not assigned any more are never handed out (acquiesce, seed 001).
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import kafka.errors as KErrors
from kafka.consumer.fetcher import Fetcher
from kafka.consumer.subscription_state import SubscriptionState
from kafka.net.compat import KafkaNetClient
from kafka.protocol.consumer import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OffsetResetStrategy,
    SyncGroupRequest,
)
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest
from kafka.structs import OffsetAndMetadata as KOffsetAndMetadata
from kafka.structs import TopicPartition as KTopicPartition

from kgroup._io.transport import CommittedOffset, GroupRequest, OffsetFetchResult
from kgroup.config import ConsumerConfig
from kgroup.membership import events as ev
from kgroup.membership.commands import (
    SendFindCoordinator,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
)
from kgroup.types import ConsumerRecord, Generation, OffsetAndMetadata, TopicPartition

__all__ = ["KAFKA_PYTHON_VERSION", "KafkaFetcher", "KafkaPythonTransport"]

log = logging.getLogger(__name__)

T = TypeVar("T")

from kafka.version import __version__ as KAFKA_PYTHON_VERSION  # noqa: E402

#: newest versions kgroup builds (the connection negotiates down)
JOIN_GROUP_MAX = 9
SYNC_GROUP_MAX = 5
HEARTBEAT_MAX = 4
LEAVE_GROUP_MAX = 5
OFFSET_COMMIT_MAX = 9
OFFSET_FETCH_MAX = 9
FIND_COORDINATOR_MAX = 6

_PASS_THROUGH = (
    "bootstrap_servers", "client_id", "request_timeout_ms", "retry_backoff_ms",
    "reconnect_backoff_ms", "reconnect_backoff_max_ms", "metadata_max_age_ms",
    "connections_max_idle_ms", "security_protocol", "ssl_context", "ssl_check_hostname",
    "ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_password", "ssl_crlfile",
    "sasl_mechanism", "sasl_plain_username", "sasl_plain_password", "sasl_kerberos_name",
    "sasl_kerberos_service_name", "sasl_kerberos_domain_name", "sasl_oauth_token_provider",
    "fetch_min_bytes", "fetch_max_wait_ms", "fetch_max_bytes", "max_partition_fetch_bytes",
    "check_crcs", "isolation_level",
)


def _ktp(tp: TopicPartition) -> KTopicPartition:
    return KTopicPartition(tp.topic, tp.partition)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


# ---------------------------------------------------------------------- request builders
# Module-level so tests/compat can encode each one at every version kafka-python supports.


def build_find_coordinator(group_id: str) -> Any:
    """FindCoordinator for a group: ``key`` for v0-3, ``coordinator_keys`` for v4+ (KIP-699)."""
    return FindCoordinatorRequest(
        key=group_id, key_type=0, coordinator_keys=[group_id], max_version=FIND_COORDINATOR_MAX
    )


def build_join_group(cmd: SendJoinGroup, group_id: str) -> Any:
    """JoinGroup up to v9: group_instance_id from v5 (KIP-345), reason from v8 (KIP-800)."""
    return JoinGroupRequest(
        group_id=group_id,
        session_timeout_ms=cmd.session_timeout_ms,
        rebalance_timeout_ms=cmd.rebalance_timeout_ms,
        member_id=cmd.member_id,
        group_instance_id=cmd.group_instance_id,
        protocol_type="consumer",
        protocols=[
            JoinGroupRequest.JoinGroupRequestProtocol(name=name, metadata=metadata) for name, metadata in cmd.protocols
        ],
        reason=cmd.reason,
        max_version=JOIN_GROUP_MAX,
    )


def build_sync_group(cmd: SendSyncGroup, group_id: str) -> Any:
    """SyncGroup up to v5 (protocol type and name from v5, KIP-559)."""
    return SyncGroupRequest(
        group_id=group_id,
        generation_id=cmd.generation_id,
        member_id=cmd.member_id,
        group_instance_id=cmd.group_instance_id,
        protocol_type="consumer",
        protocol_name=cmd.protocol_name,
        assignments=[
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in cmd.assignments
        ],
        max_version=SYNC_GROUP_MAX,
    )


def build_heartbeat(cmd: SendHeartbeat, group_id: str) -> Any:
    """Heartbeat up to v4."""
    return HeartbeatRequest(
        group_id=group_id,
        generation_id=cmd.generation_id,
        member_id=cmd.member_id,
        group_instance_id=cmd.group_instance_id,
        max_version=HEARTBEAT_MAX,
    )


def build_leave_group(cmd: SendLeaveGroup, group_id: str) -> Any:
    """LeaveGroup: ``member_id`` for v0-2, the ``members`` batch form for v3+ (KIP-345, KIP-800)."""
    return LeaveGroupRequest(
        group_id=group_id,
        member_id=cmd.member_id,
        members=[
            LeaveGroupRequest.MemberIdentity(
                member_id=cmd.member_id, group_instance_id=cmd.group_instance_id, reason=cmd.reason
            )
        ],
        max_version=LEAVE_GROUP_MAX,
    )


class KafkaPythonTransport:
    """``Transport`` over kafka-python's ``KafkaNetClient`` and IO thread.

    Args:
        config: the consumer configuration (network, security and fetch settings are used).
        bootstrap_timeout_ms: how long ``start()`` waits for the first metadata.

    Raises:
        KGroupError subclasses are raised by callers; this class raises kafka-python's
        errors only from ``start()`` (wrapped by the consumer).

    """

    def __init__(self, config: ConsumerConfig) -> None:
        kp_config: dict[str, Any] = {key: getattr(config, key) for key in _PASS_THROUGH}
        fetch_frame = config.fetch_max_bytes + config.max_partition_fetch_bytes
        kp_config["receive_message_max_bytes"] = max(1000000, fetch_frame)
        kp_config["max_poll_records"] = config.max_poll_records
        self._config = config
        self._kp_config = kp_config
        self._client = KafkaNetClient(**kp_config)
        self._manager = self._client._manager
        self._net = self._manager._net
        self._cluster = self._manager.cluster
        self._tracked_topics: set[str] = set()
        self._fetcher: KafkaFetcher | None = None
        self._closed = False

    # ------------------------------------------------------------------ lifecycle
    def start(self, timeout_ms: int) -> None:
        """Start the IO thread and bootstrap cluster metadata.

        Raises:
            kafka.errors.KafkaTimeoutError: no broker answered within ``timeout_ms``.

        """
        self._net.start()
        self._manager.bootstrap(timeout_ms)

    def close(self) -> None:
        """Close every connection and stop kafka-python's IO thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._client.close()
        except Exception:  # pragma: no cover - best effort on shutdown
            log.debug("error closing kafka-python client", exc_info=True)

    # ------------------------------------------------------------------ bridging
    def _bridge(
        self,
        build: Callable[[], Any],
        node_id: Any,
        timeout_ms: int,
        convert: Callable[[Any], T],
    ) -> concurrent.futures.Future[T]:
        """Send ``build()`` to ``node_id`` on the IO thread; convert the response."""
        result: concurrent.futures.Future[T] = concurrent.futures.Future()
        if self._closed:
            result.set_exception(ConnectionError("transport closed"))
            return result
        manager = self._manager

        async def go() -> Any:
            request = build()
            node = node_id() if callable(node_id) else node_id
            if node is None:
                raise KErrors.NodeNotReadyError("no broker available")
            return await manager.wait_for(
                manager.send(request, node_id=node, request_timeout_ms=timeout_ms), timeout_ms + 1000
            )

        def on_success(response: Any) -> None:
            try:
                value = convert(response)
            except Exception as exc:  # a malformed response is a failed request
                result.set_exception(exc)
            else:
                result.set_result(value)

        def on_failure(exc: BaseException) -> None:
            if not result.done():
                result.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))

        try:
            kfuture = manager.call_soon(go)
        except Exception as exc:
            result.set_exception(exc)
            return result
        kfuture.add_callback(on_success)
        kfuture.add_errback(on_failure)
        return result

    def _coordinator_node(self, node_id: int) -> str:
        return f"coordinator-{node_id}"

    # ------------------------------------------------------------------ group requests
    def send(self, command: GroupRequest, group_id: str) -> concurrent.futures.Future[ev.Event]:
        """Send a group request command; the future yields its response event.

        Transport failures are returned as ``RequestFailed`` events, never raised.
        """
        if isinstance(command, SendFindCoordinator):
            fut = self._find_coordinator(command, group_id)
        elif isinstance(command, SendJoinGroup):
            fut = self._join_group(command, group_id)
        elif isinstance(command, SendSyncGroup):
            fut = self._sync_group(command, group_id)
        elif isinstance(command, SendHeartbeat):
            fut = self._heartbeat(command, group_id)
        else:
            fut = self._leave_group(command, group_id)
        out: concurrent.futures.Future[ev.Event] = concurrent.futures.Future()
        request_id = command.request_id

        def done(f: concurrent.futures.Future[Any]) -> None:
            exc = f.exception()
            if exc is not None:
                out.set_result(ev.RequestFailed(request_id, _describe(exc)))
            else:
                out.set_result(f.result())

        fut.add_done_callback(done)
        return out

    def _find_coordinator(self, cmd: SendFindCoordinator, group_id: str) -> concurrent.futures.Future[ev.Event]:
        def build() -> Any:
            return build_find_coordinator(group_id)

        def convert(response: Any) -> ev.Event:
            result = response.coordinators[0] if getattr(response, "coordinators", None) else response
            if result.error_code == 0:
                node = self._cluster.add_coordinator(result, 0, group_id)
                self._client.maybe_connect(node)
            return ev.FindCoordinatorResponded(
                cmd.request_id, result.error_code, result.node_id, result.host, result.port
            )

        return self._bridge(build, self._manager.least_loaded_node, cmd.timeout_ms, convert)

    def _join_group(self, cmd: SendJoinGroup, group_id: str) -> concurrent.futures.Future[ev.Event]:
        def build() -> Any:
            return build_join_group(cmd, group_id)

        def convert(r: Any) -> ev.Event:
            members = tuple(
                ev.JoinedMember(m.member_id, getattr(m, "group_instance_id", None), bytes(m.metadata))
                for m in (r.members or ())
            )
            return ev.JoinGroupResponded(
                request_id=cmd.request_id,
                error_code=r.error_code,
                generation_id=r.generation_id,
                protocol_name=r.protocol_name,
                leader=r.leader or "",
                member_id=r.member_id or "",
                members=members,
                skip_assignment=bool(getattr(r, "skip_assignment", False)),
            )

        return self._bridge(build, self._coordinator_node(cmd.node_id), cmd.timeout_ms, convert)

    def _sync_group(self, cmd: SendSyncGroup, group_id: str) -> concurrent.futures.Future[ev.Event]:
        def build() -> Any:
            return build_sync_group(cmd, group_id)

        def convert(r: Any) -> ev.Event:
            return ev.SyncGroupResponded(cmd.request_id, r.error_code, bytes(r.assignment or b""))

        return self._bridge(build, self._coordinator_node(cmd.node_id), cmd.timeout_ms, convert)

    def _heartbeat(self, cmd: SendHeartbeat, group_id: str) -> concurrent.futures.Future[ev.Event]:
        def build() -> Any:
            return build_heartbeat(cmd, group_id)

        def convert(r: Any) -> ev.Event:
            return ev.HeartbeatResponded(cmd.request_id, r.error_code)

        return self._bridge(build, self._coordinator_node(cmd.node_id), cmd.timeout_ms, convert)

    def _leave_group(self, cmd: SendLeaveGroup, group_id: str) -> concurrent.futures.Future[ev.Event]:
        def build() -> Any:
            return build_leave_group(cmd, group_id)

        def convert(r: Any) -> ev.Event:
            code = r.error_code
            if code == 0 and getattr(r, "members", None):
                code = r.members[0].error_code
            return ev.LeaveGroupResponded(cmd.request_id, code)

        return self._bridge(build, self._coordinator_node(cmd.node_id), cmd.timeout_ms, convert)

    # ------------------------------------------------------------------ metadata
    def partitions_for(self, topics: Iterable[str], timeout_ms: int) -> concurrent.futures.Future[dict[str, int]]:
        """Partition counts of ``topics`` from a fresh Metadata request (absent: unknown topic)."""
        wanted = sorted(set(topics))
        self._tracked_topics.update(wanted)

        def build() -> Any:
            return MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in wanted],
                allow_auto_topic_creation=False,
                max_version=9,
            )

        def convert(r: Any) -> dict[str, int]:
            out: dict[str, int] = {}
            for topic in r.topics:
                if topic.error_code == 0 and topic.partitions:
                    out[topic.name] = len(topic.partitions)
            return out

        return self._bridge(build, self._manager.least_loaded_node, timeout_ms, convert)

    # ------------------------------------------------------------------ offsets
    def offset_commit(
        self,
        group_id: str,
        generation: Generation,
        group_instance_id: str | None,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        node_id: int,
        timeout_ms: int,
    ) -> concurrent.futures.Future[dict[TopicPartition, int]]:
        """OffsetCommit (v9 max) with the member's generation; yields per-partition codes."""
        by_topic: dict[str, list[tuple[int, OffsetAndMetadata]]] = {}
        for tp, om in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append((tp.partition, om))
        Topic = OffsetCommitRequest.OffsetCommitRequestTopic
        Partition = Topic.OffsetCommitRequestPartition

        def build() -> Any:
            return OffsetCommitRequest(
                group_id=group_id,
                generation_id_or_member_epoch=generation.generation_id,
                member_id=generation.member_id,
                group_instance_id=group_instance_id,
                topics=[
                    Topic(
                        name=topic,
                        partitions=[
                            Partition(
                                partition_index=p,
                                committed_offset=om.offset,
                                committed_leader_epoch=-1 if om.leader_epoch is None else om.leader_epoch,
                                committed_metadata=om.metadata,
                            )
                            for p, om in parts
                        ],
                    )
                    for topic, parts in by_topic.items()
                ],
                max_version=OFFSET_COMMIT_MAX,
            )

        def convert(r: Any) -> dict[TopicPartition, int]:
            out: dict[TopicPartition, int] = {}
            for topic in r.topics:
                for part in topic.partitions:
                    out[TopicPartition(topic.name, part.partition_index)] = part.error_code
            return out

        return self._bridge(build, self._coordinator_node(node_id), timeout_ms, convert)

    def offset_fetch(
        self, group_id: str, partitions: Iterable[TopicPartition], node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[OffsetFetchResult]:
        """OffsetFetch (v9 max) for ``partitions``."""
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(set(partitions)):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        Topic = OffsetFetchRequest.OffsetFetchRequestTopic
        Group = OffsetFetchRequest.OffsetFetchRequestGroup
        GroupTopic = Group.OffsetFetchRequestTopics

        def build() -> Any:
            return OffsetFetchRequest(
                group_id=group_id,
                topics=[Topic(name=t, partition_indexes=p) for t, p in by_topic.items()],
                groups=[
                    Group(
                        group_id=group_id,
                        topics=[GroupTopic(name=t, partition_indexes=p) for t, p in by_topic.items()],
                    )
                ],
                require_stable=self._config.isolation_level == "read_committed",
                max_version=OFFSET_FETCH_MAX,
            )

        def convert(r: Any) -> OffsetFetchResult:
            if r.API_VERSION >= 8:
                group = r.groups[0]
                top, topics = group.error_code, group.topics
            else:
                top, topics = (r.error_code if r.API_VERSION >= 2 else 0), r.topics
            parts: dict[TopicPartition, CommittedOffset] = {}
            for topic in topics or ():
                for p in topic.partitions:
                    epoch = getattr(p, "committed_leader_epoch", -1)
                    parts[TopicPartition(topic.name, p.partition_index)] = CommittedOffset(
                        p.committed_offset,
                        p.metadata or "",
                        None if epoch is None or epoch < 0 else epoch,
                        p.error_code,
                    )
            return OffsetFetchResult(top, parts)

        return self._bridge(build, self._coordinator_node(node_id), timeout_ms, convert)

    # ------------------------------------------------------------------ fetching
    def fetcher(self) -> KafkaFetcher:
        """The record fetcher over kafka-python's ``Fetcher`` (created once)."""
        if self._fetcher is None:
            self._fetcher = KafkaFetcher(self._client, self._cluster, self._kp_config, self._config)
        return self._fetcher


class KafkaFetcher:
    """kgroup's ``RecordFetcher`` over kafka-python's ``Fetcher`` and ``SubscriptionState``.

    Used only from the poll thread (kafka-python's own IO thread fills its buffers).
    """

    def __init__(self, client: Any, cluster: Any, kp_config: dict[str, Any], config: ConsumerConfig) -> None:
        strategy = config.auto_offset_reset if config.auto_offset_reset != "none" else "none"
        self._subscription = SubscriptionState(strategy)
        self._fetcher = Fetcher(client, self._subscription, **kp_config)
        self._cluster = cluster
        self._net = client._net
        self._topics: set[str] = set()
        self._idle = True

    def idle(self) -> bool:
        """True when the last ``fetch`` had nothing buffered and nothing in flight to wait on."""
        return self._idle

    def assign(self, partitions: frozenset[TopicPartition]) -> None:
        """Fetch exactly ``partitions``; records buffered for others are never handed out."""
        self._subscription.assign_from_user([_ktp(tp) for tp in sorted(partitions)])
        topics = {tp.topic for tp in partitions}
        if not topics <= self._topics:
            self._topics |= topics
            self._cluster.set_topics(sorted(self._topics))

    def assigned(self) -> frozenset[TopicPartition]:
        """Partitions being fetched."""
        return frozenset(TopicPartition(tp.topic, tp.partition) for tp in self._subscription.assigned_partitions())

    def seek(self, tp: TopicPartition, offset: int, leader_epoch: int | None = None) -> None:
        """Fetch ``tp`` from ``offset`` next."""
        self._subscription.seek(_ktp(tp), KOffsetAndMetadata(offset, "", -1 if leader_epoch is None else leader_epoch))

    def request_reset(self, tp: TopicPartition, strategy: str) -> None:
        """Find ``tp``'s position with ListOffsets: "earliest" or "latest"."""
        value = OffsetResetStrategy.EARLIEST if strategy == "earliest" else OffsetResetStrategy.LATEST
        self._subscription.request_offset_reset(_ktp(tp), value)
        self._fetcher.reset_offsets_if_needed()

    def position(self, tp: TopicPartition) -> int | None:
        """Offset of the next record, or None while unknown."""
        pos = self._subscription.assignment[_ktp(tp)].position
        return None if pos is None else int(pos.offset)

    def has_position(self, tp: TopicPartition) -> bool:
        """True when the position is known."""
        return bool(self._subscription.has_valid_position(_ktp(tp)))

    def pause(self, tp: TopicPartition) -> None:
        """Stop fetching ``tp``."""
        self._subscription.pause(_ktp(tp))

    def resume(self, tp: TopicPartition) -> None:
        """Fetch ``tp`` again."""
        self._subscription.resume(_ktp(tp))

    def paused(self) -> frozenset[TopicPartition]:
        """Paused partitions."""
        return frozenset(TopicPartition(tp.topic, tp.partition) for tp in self._subscription.paused_partitions())

    def fetch(self, max_records: int, timeout_ms: int) -> list[ConsumerRecord]:
        """Up to ``max_records`` records, waiting at most ``timeout_ms`` for a fetch response."""
        if not self._subscription.assignment:
            self._idle = True
            return []
        self._fetcher.reset_offsets_if_needed()
        drained, self._idle = self._fetcher.fetch_records(max_records, update_offsets=True, timeout_ms=timeout_ms)
        out: list[ConsumerRecord] = []
        for ktp, records in drained.items():
            for r in records:
                out.append(
                    ConsumerRecord(
                        topic=ktp.topic,
                        partition=ktp.partition,
                        offset=r.offset,
                        key=r.key,
                        value=r.value,
                        headers=tuple(r.headers or ()),
                        timestamp=r.timestamp,
                        timestamp_type=r.timestamp_type,
                        leader_epoch=None if r.leader_epoch is None or r.leader_epoch < 0 else r.leader_epoch,
                    )
                )
        return out

    def wakeup(self) -> None:
        """Interrupt a blocked ``fetch`` (any thread)."""
        self._net.wakeup()
