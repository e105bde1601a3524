"""The one adapter over kafka-python 3.0.x (``kafka.net``, ``kafka.protocol``).

Rules:

1. Only ``kgroup._io`` imports ``kafka`` (``kgroup.testing``'s broker helpers aside): this
   module for the network client and the consumer's transport, :mod:`kgroup._io.kafka_admin`
   for the admin's, :mod:`kgroup._io.kafka_messages` for the group APIs' message classes (the
   one mapping to kgroup's own request and response types, :mod:`kgroup.protocol.group_api`),
   :mod:`kgroup._io.kafka_frames` for the coordinator proxy's frame codec (not loaded by
   ``import kgroup``). A kafka-python upgrade touches this package alone (``tests/compat``
   guards the pin ``>=3.0.12,<3.1``).
2. Group requests go out at most at their ``api_version`` (kgroup's newest,
   ``group_api.NEWEST_VERSIONS``); the connection negotiates ``min(ours, broker's)`` from
   ApiVersions, so JoinGroup goes out at the highest version both sides support (v9 on
   Kafka 4.x and on Tansu).
3. Everything is sent through kafka-python's IO thread (``KafkaConnectionManager.call_soon``,
   thread-safe); results are bridged to ``concurrent.futures.Future``. Group requests go
   over a dedicated coordinator connection (kafka-python's ``coordinator-N`` node), as in
   Java, so heartbeats never queue behind fetches.
4. Records are fetched over a kafka-python ``SubscriptionState`` in manual assignment mode:
   kgroup decides what is assigned (``RecordFetcher.assign``); records of a partition not
   assigned any more are never handed out (acquiesce, the classic protocol's first rebalance
   step). The fetch scheduling is kgroup's own (:mod:`kgroup._io.fetch_pipeline`), the record
   decoding too (:mod:`kgroup._io.record_decoder`).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import uuid
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, TypeVar

from kgroup._io import quiet_kafka  # noqa: F401  (first: kafka-python, without its import-time warning)

# isort: split
import kafka.errors as KErrors
from kafka.net.compat import KafkaNetClient
from kafka.protocol.consumer import ListOffsetsRequest
from kafka.protocol.metadata import MetadataRequest

from kgroup import _error_codes as codes
from kgroup._io import log_limit, receive
from kgroup._io.kafka_messages import request_message, response_values
from kgroup._io.kafka_security import AuthenticationWatch, hide_secrets, token_provider
from kgroup._io.transport import (
    OffsetFetchResult,
    RecordFetcher,
    commit_results,
    fetch_result,
)
from kgroup.config import ConsumerConfig
from kgroup.errors import Api, AuthenticationFailedError, KGroupError, broker_error
from kgroup.membership import commands as cmd
from kgroup.membership import events as ev
from kgroup.membership.commands import SendFindCoordinator, SendLeaveGroup
from kgroup.protocol import group_api
from kgroup.protocol.group_api import (
    DescribedGroup,
    DescribeGroupsRequest,
    FindCoordinatorResponse,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from kgroup.protocol.group_configs import GROUP_RESOURCE_TYPE
from kgroup.types import PartitionInfo, TopicPartition

__all__ = ["KAFKA_PYTHON_VERSION", "KafkaNetwork", "KafkaPythonTransport"]

log = logging.getLogger(__name__)

T = TypeVar("T")

from kafka.version import __version__ as KAFKA_PYTHON_VERSION  # noqa: E402

#: newest versions kgroup builds of the non-group APIs (the group APIs' are
#: ``group_api.NEWEST_VERSIONS``); the connection negotiates down
METADATA_MAX = 9
LIST_OFFSETS_MAX = 9
#: removal by group_instance_id needs the batch form (KIP-345)
LEAVE_GROUP_BATCH_MIN = 3
#: the all-topics OffsetFetch: Tansu answers it malformed before v8 (docs/testing.md)
OFFSET_FETCH_ALL_MIN = 8
#: Metadata carries topic ids from v10 (KIP-516); the consumer protocol's assignments name topics by id
TOPIC_IDS_MIN = 10
#: DescribeConfigs' resource type of a group's configs (``ConfigResource.Type.GROUP``, KIP-848)
GROUP_CONFIG_RESOURCE = GROUP_RESOURCE_TYPE

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


def topic_names(response: Any, *, exclude_internal: bool) -> frozenset[str]:
    """The topics a Metadata response lists without error; without the internal ones with ``exclude_internal``."""
    return frozenset(t.name for t in response.topics
                     if t.error_code == 0 and not (exclude_internal and getattr(t, "is_internal", False)))


def _describe(exc: BaseException) -> str:
    """``Type: message``, the type named once (kafka-python's errors start their text with it)."""
    text, name = str(exc), type(exc).__name__
    return text if text.startswith(name) else f"{name}: {text}"


class KafkaNetwork:
    """kafka-python's ``KafkaNetClient`` and IO thread bridged to futures: what both transports share.

    The group requests (:meth:`send`), topic metadata, ListOffsets and DescribeGroups (the
    ``ClusterPort`` calls); :class:`KafkaPythonTransport` (the consumer's) and
    ``kgroup._io.kafka_admin.KafkaAdminTransport`` (the admin's) add their own calls.

    Args:
        config: the consumer configuration (network, security and fetch settings are used).

    Raises:
        KGroupError subclasses are raised by callers; this class raises kafka-python's
        errors only from ``start()`` (wrapped by the consumer).

    """

    def __init__(self, config: ConsumerConfig) -> None:
        kp_config: dict[str, Any] = {key: getattr(config, key) for key in _PASS_THROUGH}
        fetch_frame = config.fetch_max_bytes + config.max_partition_fetch_bytes
        kp_config["receive_message_max_bytes"] = max(1000000, fetch_frame)
        kp_config["max_poll_records"] = config.max_poll_records
        kp_config["sasl_oauth_token_provider"] = token_provider(config.sasl_oauth_token_provider)
        for secret in (config.sasl_plain_password, config.ssl_password):
            hide_secrets().add_password(secret)  # kafka-python logs SaslAuthenticate's bytes at DEBUG
        self._config = config
        self._kp_config = kp_config
        log_limit.install()  # an unreachable cluster logs a line every few seconds, not a dozen a second
        self._client = KafkaNetClient(**kp_config)
        self._manager = self._client._manager
        receive.install(self._manager)  # each response read once, into one buffer (kgroup's connections only)
        self._authentication = AuthenticationWatch(self._manager, config.sasl_mechanism)
        self._net = self._manager._net
        self._cluster = self._manager.cluster
        # kafka-python's metadata refreshes (the fetcher's topics) ask the broker to create the
        # topics they name unless told otherwise; kgroup never does (``allow.auto.create.topics``
        # false): a deleted topic that is still assigned must stay deleted (KIP-361)
        self._cluster.config["allow_auto_create_topics"] = False
        self._closed = False

    # ------------------------------------------------------------------ lifecycle
    def start(self, timeout_ms: int) -> None:
        """Start the IO thread and bootstrap cluster metadata.

        Raises:
            AuthenticationFailedError: a broker refused the TLS handshake or the SASL exchange
                (at the first refusal, not at the timeout; close the network then).
            kafka.errors.KafkaTimeoutError: no broker answered within ``timeout_ms``.

        """
        self._net.start()
        settled = threading.Event()
        self._authentication.on_refusal(settled.set)
        bootstrap = self._manager.bootstrap_async(timeout_ms)
        bootstrap.add_both(lambda _: settled.set())
        settled.wait(timeout_ms / 1000 + 1)  # the bootstrap's own deadline ends it before this
        if bootstrap.succeeded():
            return
        refused = self.authentication_failure()
        if refused is not None:
            raise refused
        if bootstrap.failed():
            raise bootstrap.exception
        raise KErrors.KafkaTimeoutError(f"Unable to bootstrap from {self._config.bootstrap_servers}")

    def start_async(self) -> None:
        """Start the IO thread and bootstrap in the background, retrying until a broker answers.

        Requests sent before then fail as a node not ready (callers retry); ``bootstrapped``
        says when it is done.
        """
        self._net.start()
        self._manager.bootstrap_async(None)

    @property
    def bootstrapped(self) -> bool:
        """True once a broker of ``bootstrap_servers`` has answered with cluster metadata."""
        return bool(self._manager.bootstrapped)

    def authentication_failure(self) -> AuthenticationFailedError | None:
        """Why the last connection was refused (TLS handshake, SASL), or ``None`` if it was not."""
        return self._authentication.failure()

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
    def _run_on_io(
        self, go: Callable[[], Any], convert: Callable[[Any], T]
    ) -> concurrent.futures.Future[T]:
        """Run the coroutine function ``go`` on kafka-python's IO thread; convert its result.

        The returned future fails with the coroutine's error, or with ``convert``'s (a malformed
        response is a failed request), or with ConnectionError once the transport is closed.
        """
        result: concurrent.futures.Future[T] = concurrent.futures.Future()
        if self._closed:
            result.set_exception(ConnectionError("transport closed"))
            return result

        def on_success(response: Any) -> None:
            try:
                value = convert(response)
            except Exception as exc:
                result.set_exception(exc)
            else:
                result.set_result(value)

        def on_failure(exc: BaseException) -> None:
            if not result.done():
                result.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))

        try:
            kfuture = self._manager.call_soon(go)
        except Exception as exc:
            result.set_exception(exc)
            return result
        kfuture.add_callback(on_success)
        kfuture.add_errback(on_failure)
        return result

    def _bridge(
        self,
        build: Callable[[], Any],
        node_id: Any,
        timeout_ms: int,
        convert: Callable[[Any], T],
    ) -> concurrent.futures.Future[T]:
        """Send ``build()`` to ``node_id`` on the IO thread; convert the response."""
        manager = self._manager

        async def go() -> Any:
            request = build()
            node = node_id() if callable(node_id) else node_id
            if node is None:
                raise KErrors.NodeNotReadyError("no broker available")
            return await manager.wait_for(
                manager.send(request, node_id=node, request_timeout_ms=timeout_ms), timeout_ms + 1000
            )

        return self._run_on_io(go, convert)

    def _coordinator_node(self, node_id: int) -> str:
        return f"coordinator-{node_id}"

    def _leave_node(self, node_id: int) -> Callable[[], Any]:
        """Where a LeaveGroup goes: the coordinator connection, unless a request waits on it.

        A broker reads one request per connection at a time (Kafka's channel muting), so a
        LeaveGroup behind a JoinGroup parked until the rebalance completes would wait for that
        rebalance, up to ``max_poll_interval_ms``, and ``close()`` would give up. Then it goes
        over the broker's other connection (the one fetches use): same broker, not muted, and
        the coordinator takes the member out of the pending join at once. Nothing else is in
        flight on the coordinator connection at that point that the leave could overtake:
        ``close()`` has waited for the commits.
        """
        manager = self._manager
        coordinator = self._coordinator_node(node_id)

        def pick() -> Any:
            conn = manager._conns.get(coordinator)
            busy = conn is not None and len(getattr(conn, "in_flight_requests", ())) > 0
            return node_id if busy else coordinator

        return pick

    # ------------------------------------------------------------------ group requests
    def send(self, command: cmd.SendGroupRequest, group_id: str) -> concurrent.futures.Future[ev.Event]:
        """Send a group request command; the future yields its response event.

        The request goes out at most at ``command.api_version`` (the connection negotiates)
        through the one group-API mapping, :mod:`kgroup._io.kafka_messages`. FindCoordinator
        goes to the least loaded broker and records the coordinator in kafka-python's cluster
        metadata; the others go over the dedicated coordinator connection. Transport failures are
        returned as ``RequestFailed`` events, never raised.
        """
        request = group_api.value_of(command)

        def convert(message: Any) -> ev.Event:
            response = response_values(command.API_KEY, message)[0]  # FindCoordinator v4+: our one key
            if isinstance(response, FindCoordinatorResponse) and response.error_code == codes.NONE:
                node = self._cluster.add_coordinator(response, 0, group_id)
                self._client.maybe_connect(node)
            return ev.responded(command.request_id, response)

        if isinstance(command, SendFindCoordinator):
            node: Any = self._manager.least_loaded_node
        elif isinstance(command, SendLeaveGroup):
            node = self._leave_node(command.node_id)
        else:
            node = self._coordinator_node(command.node_id)
        fut = self._bridge(lambda: request_message(request), node, command.timeout_ms, convert)
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

    # ------------------------------------------------------------------ metadata
    def _metadata_request(self, topics: Iterable[str]) -> Any:
        return MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in sorted(set(topics))],
            allow_auto_topic_creation=False,
            max_version=METADATA_MAX,
        )

    @staticmethod
    def _partition_infos(r: Any) -> dict[str, tuple[PartitionInfo, ...]]:
        """The partitions of each topic the answer lists without an error.

        Raises:
            TopicAuthorizationFailedError: a topic came back TOPIC_AUTHORIZATION_FAILED (Java's
                ``Metadata`` throws ``TopicAuthorizationException``; any other topic error leaves
                the topic out, as unknown).

        """
        unauthorized = sorted(t.name for t in r.topics if t.error_code == codes.TOPIC_AUTHORIZATION_FAILED)
        if unauthorized:
            raise broker_error(Api.METADATA, codes.TOPIC_AUTHORIZATION_FAILED, f"topics {unauthorized}")
        racks = {b.node_id: b.rack for b in r.brokers if getattr(b, "rack", None)}
        out: dict[str, tuple[PartitionInfo, ...]] = {}
        for topic in r.topics:
            if topic.error_code == 0 and topic.partitions:
                out[topic.name] = tuple(
                    PartitionInfo(
                        p.partition_index,
                        p.leader_id,
                        frozenset(racks[n] for n in (p.replica_nodes or ()) if n in racks),
                    )
                    for p in sorted(topic.partitions, key=lambda p: p.partition_index)
                )
        return out

    def describe_topics(
        self, topics: Iterable[str], timeout_ms: int
    ) -> concurrent.futures.Future[dict[str, tuple[PartitionInfo, ...]]]:
        """Partitions of ``topics`` with their leader and replica racks (absent: unknown topic)."""
        wanted = sorted(set(topics))
        return self._bridge(
            lambda: self._metadata_request(wanted), self._manager.least_loaded_node, timeout_ms, self._partition_infos
        )

    def list_offsets(
        self, partitions: Iterable[TopicPartition], spec: str, timeout_ms: int
    ) -> concurrent.futures.Future[dict[TopicPartition, int]]:
        """ListOffsets for ``partitions``: ``spec`` "earliest" (log start) or "latest" (log end).

        One Metadata request finds the leaders, then one ListOffsets per leader (v9 max,
        read_uncommitted unless configured otherwise). Partitions without a leader or with an
        error code are absent from the result.

        Raises (through the future):
            ValueError: ``spec`` is neither "earliest" nor "latest".

        """
        if spec not in ("earliest", "latest"):
            failed: concurrent.futures.Future[dict[TopicPartition, int]] = concurrent.futures.Future()
            failed.set_exception(ValueError(f"spec must be 'earliest' or 'latest', not {spec!r}"))
            return failed
        timestamp = -2 if spec == "earliest" else -1
        return self._run_on_io(
            self._list_offsets({tp: timestamp for tp in partitions}, timeout_ms),
            lambda found: {tp: offset for tp, (offset, _) in found.items()},
        )

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int], timeout_ms: int
    ) -> concurrent.futures.Future[dict[TopicPartition, tuple[int, int]]]:
        """ListOffsets by timestamp: the earliest offset whose record timestamp is >= the one given.

        Yields ``{tp: (offset, timestamp)}``; a partition with no such record (or no leader, or
        an error code) is absent (Java ``KafkaConsumer.offsetsForTimes``: null).
        """
        return self._run_on_io(self._list_offsets(dict(timestamps), timeout_ms), lambda found: found)

    def _list_offsets(
        self, timestamps: Mapping[TopicPartition, int], timeout_ms: int
    ) -> Callable[[], Coroutine[Any, Any, dict[TopicPartition, tuple[int, int]]]]:
        """One Metadata request for the leaders, then one ListOffsets per leader."""
        wanted = sorted(timestamps)
        isolation = 1 if self._config.isolation_level == "read_committed" else 0
        Topic = ListOffsetsRequest.ListOffsetsTopic
        Partition = Topic.ListOffsetsPartition
        manager = self._manager

        async def go() -> dict[TopicPartition, tuple[int, int]]:
            node = manager.least_loaded_node()
            if node is None:
                raise KErrors.NodeNotReadyError("no broker available")
            metadata = await manager.wait_for(
                manager.send(self._metadata_request(tp.topic for tp in wanted), node_id=node,
                             request_timeout_ms=timeout_ms),
                timeout_ms + 1000,
            )
            infos = self._partition_infos(metadata)
            leaders = {TopicPartition(t, p.partition): p.leader for t, ps in infos.items() for p in ps}
            by_leader: dict[int, dict[str, list[int]]] = {}
            for tp in wanted:
                leader = leaders.get(tp, -1)
                if leader >= 0:
                    by_leader.setdefault(leader, {}).setdefault(tp.topic, []).append(tp.partition)
            out: dict[TopicPartition, tuple[int, int]] = {}
            for leader, by_topic in by_leader.items():
                request = ListOffsetsRequest(
                    replica_id=-1,
                    isolation_level=isolation,
                    topics=[
                        Topic(
                            name=t,
                            partitions=[
                                Partition(partition_index=p, timestamp=timestamps[TopicPartition(t, p)]) for p in ps
                            ],
                        )
                        for t, ps in by_topic.items()
                    ],
                    max_version=LIST_OFFSETS_MAX,
                )
                response = await manager.wait_for(
                    manager.send(request, node_id=leader, request_timeout_ms=timeout_ms), timeout_ms + 1000
                )
                for topic in response.topics:
                    for part in topic.partitions:
                        if part.error_code == 0 and part.offset >= 0:
                            out[TopicPartition(topic.name, part.partition_index)] = (part.offset, part.timestamp)
            return out

        return go

    # ------------------------------------------------------------------ calls to a group's coordinator
    def _coordinator_call(
        self,
        request: group_api.GroupRequest,
        node_id: int,
        timeout_ms: int,
        convert: Callable[[Any], T],
        min_version: int | None = None,
    ) -> concurrent.futures.Future[T]:
        """Send a group API request to the coordinator ``node_id``; ``convert`` its response values."""
        return self._bridge(
            lambda: request_message(request, min_version=min_version),
            self._coordinator_node(node_id),
            timeout_ms,
            lambda message: convert(response_values(request.API_KEY, message)),
        )

    @property
    def _read_committed(self) -> bool:
        return self._config.isolation_level == "read_committed"

    def describe_groups(
        self, group_ids: Iterable[str], node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[tuple[DescribedGroup, ...]]:
        """DescribeGroups (v6 max) for ``group_ids`` at the coordinator ``node_id``.

        Yields one ``DescribedGroup`` per group, in response order.
        """
        request = DescribeGroupsRequest(groups=tuple(dict.fromkeys(group_ids)))
        return self._coordinator_call(request, node_id, timeout_ms, lambda r: r[0].groups)


class KafkaPythonTransport(KafkaNetwork):
    """The consumer's ``Transport`` and ``ConsumerGroupTransport`` over kafka-python's network client.

    Args:
        config: the consumer configuration (network, security and fetch settings are used).

    """

    def __init__(self, config: ConsumerConfig) -> None:
        super().__init__(config)
        self._fetcher: RecordFetcher | None = None

    def list_topics(
        self, timeout_ms: int, *, exclude_internal: bool | None = None
    ) -> concurrent.futures.Future[frozenset[str]]:
        """The names of every topic in the cluster (a Metadata request for all).

        For pattern subscriptions and ``Consumer.list_topics``. With ``exclude_internal`` (None:
        the consumer's ``exclude_internal_topics``, Java's ``exclude.internal.topics``, default
        true) without the internal ones (``__consumer_offsets``, ``__transaction_state``, ...).
        """
        request = lambda: MetadataRequest(  # noqa: E731 - built on the IO thread
            topics=None, allow_auto_topic_creation=False, max_version=METADATA_MAX
        )
        if exclude_internal is None:
            exclude_internal = self._config.exclude_internal_topics
        return self._bridge(
            request, self._manager.least_loaded_node, timeout_ms,
            lambda r: topic_names(r, exclude_internal=exclude_internal),
        )

    # ------------------------------------------------------------------ the consumer group protocol (KIP-848)
    def consumer_group_heartbeat(
        self, command: cmd.SendConsumerGroupHeartbeat
    ) -> concurrent.futures.Future[ev.ConsumerGroupHeartbeatResponded | ev.RequestFailed]:
        """ConsumerGroupHeartbeat (API 68) over the coordinator connection.

        Through :mod:`kgroup._io.kafka_messages`; the connection negotiates the
        version (a pattern needs v1). Failures are ``RequestFailed`` events, never raised;
        kafka-python's ``IncompatibleBrokerVersion`` (no version both sides serve) is
        ``RequestFailed(unsupported_version=True)``.
        """
        from kgroup._io import kafka_messages as wire

        request = command.request()
        request_id = command.request_id

        def convert(message: Any) -> ev.ConsumerGroupHeartbeatResponded:
            v = wire.heartbeat_response_value(message)
            return ev.ConsumerGroupHeartbeatResponded(
                request_id=request_id, error_code=v.error_code, error_message=v.error_message,
                member_id=v.member_id, member_epoch=v.member_epoch, heartbeat_interval_ms=v.heartbeat_interval_ms,
                assignment=v.assignment, throttle_time_ms=v.throttle_time_ms,
            )

        return self._heartbeat(lambda: wire.heartbeat_request_message(request), command, convert)

    def _heartbeat(
        self, build: Callable[[], Any], command: Any, convert: Callable[[Any], T]
    ) -> concurrent.futures.Future[T | ev.RequestFailed]:
        """A broker-assigned protocol's heartbeat (Consumer- or ShareGroupHeartbeat) over the coordinator connection.

        Failures are ``RequestFailed`` events, never raised; kafka-python's
        ``IncompatibleBrokerVersion`` (no version both sides serve) is
        ``RequestFailed(unsupported_version=True)``.
        """
        fut = self._bridge(build, self._coordinator_node(command.node_id), command.timeout_ms, convert)
        out: concurrent.futures.Future[T | ev.RequestFailed] = concurrent.futures.Future()
        request_id = command.request_id

        def done(f: concurrent.futures.Future[T]) -> None:
            exc = f.exception()
            if exc is None:
                out.set_result(f.result())
            else:
                out.set_result(ev.RequestFailed(
                    request_id=request_id, reason=_describe(exc),
                    unsupported_version=isinstance(exc, KErrors.IncompatibleBrokerVersion),
                ))

        fut.add_done_callback(done)
        return out

    def topic_ids(self, timeout_ms: int) -> concurrent.futures.Future[dict[uuid.UUID, str]]:
        """Topic id -> name of every topic of the cluster (a Metadata request for all, v10+: topic ids)."""
        request = lambda: MetadataRequest(  # noqa: E731 - built on the IO thread
            topics=None, allow_auto_topic_creation=False, min_version=TOPIC_IDS_MIN
        )
        return self._bridge(
            request, self._manager.least_loaded_node, timeout_ms,
            lambda r: {t.topic_id: t.name for t in r.topics if t.error_code == 0 and t.topic_id is not None},
        )

    def describe_group_configs(
        self, group_id: str, names: Iterable[str], timeout_ms: int
    ) -> concurrent.futures.Future[dict[str, str | None]]:
        """DescribeConfigs (API 32) of a group's configs (resource type GROUP) at the least loaded broker.

        Any broker answers for a group (Kafka's ``ConfigHelper``: the group's own configs over
        the broker's ``group.consumer.*`` defaults). An error code in the answer fails the future
        with a ``KGroupError`` naming it.
        """
        from kafka.protocol.admin import DescribeConfigsRequest

        wanted = list(dict.fromkeys(names))

        def build() -> Any:
            resource = DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=GROUP_CONFIG_RESOURCE, resource_name=group_id, configuration_keys=wanted
            )
            return DescribeConfigsRequest(resources=[resource], include_synonyms=False, include_documentation=False)

        def convert(response: Any) -> dict[str, str | None]:
            for result in response.results:
                if result.resource_type != GROUP_CONFIG_RESOURCE or result.resource_name != group_id:
                    continue
                if result.error_code != codes.NONE:
                    detail = f": {result.error_message}" if result.error_message else ""
                    raise KGroupError(f"DescribeConfigs returned {codes.error_name(result.error_code)}{detail}")
                return {c.name: c.value for c in result.configs}
            raise KGroupError(f"DescribeConfigs answered without the group {group_id!r}")

        return self._bridge(build, self._manager.least_loaded_node, timeout_ms, convert)

    # ------------------------------------------------------------------ offsets
    def offset_commit(
        self, request: OffsetCommitRequest, node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[dict[TopicPartition, int]]:
        """OffsetCommit (v9 max) of ``request``; yields per-partition codes."""
        return self._coordinator_call(request, node_id, timeout_ms, lambda r: commit_results(r[0]))

    def offset_fetch(
        self, request: OffsetFetchRequest, node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[OffsetFetchResult]:
        """OffsetFetch (v9 max) of ``request`` (a consumer-protocol member's id and epoch go in v9, KIP-848)."""
        return self._coordinator_call(request, node_id, timeout_ms, lambda r: fetch_result(r[0]))

    # ------------------------------------------------------------------ fetching
    def fetcher(self) -> RecordFetcher:
        """The record fetcher (created once): kgroup's own pipelined fetcher (:mod:`kgroup._io.fetch_pipeline`)."""
        if self._fetcher is None:
            from kgroup._io.fetch_pipeline import PipelinedFetcher

            self._fetcher = PipelinedFetcher(self._client, self._cluster, self._kp_config, self._config)
        return self._fetcher

