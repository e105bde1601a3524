"""The admin's ``AdminTransport`` over kafka-python's network client (``kgroup.admin.GroupAdmin``'s port).

Every call goes through the one ``KafkaNetClient`` of :class:`~kgroup._io.kafka_python.KafkaNetwork`
and runs on its IO thread, as the consumer's calls do; none starts a thread of its own. The
group APIs are kgroup's own values (:mod:`kgroup.protocol.group_api`, through the one mapping
:mod:`kgroup._io.kafka_messages`): FindCoordinator, DescribeGroups and ListOffsets as the consumer
sends them, and the admin's own calls here:

* ListGroups at every broker (Java ``Admin.listConsumerGroups`` asks each broker for the groups
  it coordinates), stopping at the first broker that answers an error code;
* DeleteGroups at the group's coordinator;
* OffsetCommit as an admin (generation -1, member id "", v8 max) at the group's coordinator;
* OffsetFetch of every committed partition (``topics=null``), ConsumerGroupDescribe (KIP-848)
  and LeaveGroup removing static members (KIP-345);
* share groups' (KIP-932) ShareGroupDescribe, DescribeShareGroupOffsets, AlterShareGroupOffsets
  and DeleteShareGroupOffsets at the group's coordinator (:mod:`kgroup.protocol.share_group_admin`);
* a group's configs (``ConfigResource.Type.GROUP``, KIP-848 and KIP-932): DescribeConfigs and
  IncrementalAlterConfigs at the least loaded broker, not the coordinator, as Java's
  ``KafkaAdminClient.describeConfigs`` and ``incrementalAlterConfigs`` send every resource but a
  BROKER or BROKER_LOGGER one (:mod:`kgroup.protocol.group_configs`).

Rules:

1. Broker error codes are values in the result; what they mean is decided in ``kgroup.admin``.
   Client-side failures (no connection, no answer) are the future's exception.
2. A broker or coordinator without a version of the call that kgroup can send answers
   UNSUPPORTED_VERSION as a result (for each group or partition asked for), not an exception.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from kgroup._io import quiet_kafka  # noqa: F401  (first: kafka-python, without its import-time warning)

# isort: split
import attrs
import kafka.errors as KErrors
from kafka.protocol.admin import (
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

from kgroup import _error_codes as codes
from kgroup._io import kafka_messages as wire
from kgroup._io.kafka_messages import request_message, response_values
from kgroup._io.kafka_python import KafkaNetwork
from kgroup._io.transport import OffsetFetchResult, commit_results, fetch_result, offset_commit_request
from kgroup.protocol import group_api
from kgroup.protocol.consumer_group_describe import ConsumerGroupDescribeRequest, DescribedConsumerGroup
from kgroup.protocol.group_api import (
    DeleteGroupsRequest,
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeaveMember,
    ListedGroup,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from kgroup.protocol.group_configs import (
    GROUP_RESOURCE_TYPE,
    ConfigChange,
    DescribedConfig,
    GroupConfigsAltered,
    GroupConfigsDescribed,
)
from kgroup.protocol.share_group_admin import (
    DescribedShareGroup,
    ShareGroupOffsets,
    ShareOffsetsAltered,
    ShareOffsetsDeleted,
)
from kgroup.types import Generation, OffsetAndMetadata, TopicPartition

__all__ = [
    "KafkaAdminTransport",
    "admin_offset_commit",
    "alter_group_configs_request",
    "altered_group_configs",
    "describe_group_configs_request",
    "described_group_configs",
]

T = TypeVar("T")

#: removal by group_instance_id needs the batch form (KIP-345)
LEAVE_GROUP_BATCH_MIN = 3
#: the all-topics OffsetFetch: Tansu answers it malformed before v8 (docs/testing.md)
OFFSET_FETCH_ALL_MIN = 8
#: the admin's OffsetCommit carries no field of v9 (KIP-848's member epoch): v8 at most
ADMIN_OFFSET_COMMIT_MAX = 8
#: the ListGroups versions that carry each group's state (KIP-518) and type (KIP-848)
LIST_GROUPS_STATE_MIN = 4
LIST_GROUPS_TYPE_MIN = 5


def _unsupported_as(inner: concurrent.futures.Future[T], fallback: T) -> concurrent.futures.Future[T]:
    """``inner``, except that "no version both sides speak" becomes ``fallback`` (an error-code result)."""
    out: concurrent.futures.Future[T] = concurrent.futures.Future()

    def done(f: concurrent.futures.Future[T]) -> None:
        exc = f.exception()
        if isinstance(exc, KErrors.IncompatibleBrokerVersion):
            out.set_result(fallback)
        elif exc is not None:
            out.set_exception(exc)
        else:
            out.set_result(f.result())

    inner.add_done_callback(done)
    return out


def _listed_groups(message: Any) -> tuple[int, tuple[ListedGroup, ...]]:
    """One broker's ListGroups answer: its error code and groups (state and type "" where not carried)."""
    version = int(message.API_VERSION)
    (answer,) = response_values(group_api.LIST_GROUPS, message)
    if not isinstance(answer, group_api.ListGroupsResponse):  # pragma: no cover - the mapping's contract
        raise TypeError(f"ListGroups answered {type(answer).__name__}")
    return answer.error_code, tuple(
        attrs.evolve(
            g,
            group_state=g.group_state if version >= LIST_GROUPS_STATE_MIN else "",
            group_type=g.group_type if version >= LIST_GROUPS_TYPE_MIN else "",
        )
        for g in answer.groups
    )


def admin_offset_commit(group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> OffsetCommitRequest:
    """The admin's OffsetCommit: outside the group (no generation, member id ""), at v8 at most."""
    request = offset_commit_request(group_id, Generation(), None, offsets)
    return attrs.evolve(request, api_version=ADMIN_OFFSET_COMMIT_MAX)


def describe_group_configs_request(group_id: str) -> DescribeConfigsRequest:
    """DescribeConfigs of every config of ``group_id`` (GROUP resource, ``configuration_keys`` null), no synonyms."""
    resource = DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=GROUP_RESOURCE_TYPE, resource_name=group_id, configuration_keys=None
    )
    return DescribeConfigsRequest(resources=[resource], include_synonyms=False, include_documentation=False)


def described_group_configs(message: DescribeConfigsResponse, group_id: str) -> GroupConfigsDescribed:
    """The answer's entry for the GROUP resource ``group_id``; none: INVALID_REQUEST, as a value."""
    for result in message.results:
        if result.resource_type == GROUP_RESOURCE_TYPE and result.resource_name == group_id:
            return GroupConfigsDescribed(
                error_code=result.error_code,
                error_message=result.error_message,
                configs=tuple(
                    DescribedConfig(
                        name=c.name, value=c.value, read_only=bool(c.read_only),
                        config_source=int(getattr(c, "config_source", 0)), is_sensitive=bool(c.is_sensitive),
                    )
                    for c in result.configs or ()
                ),
            )
    return GroupConfigsDescribed(
        error_code=codes.INVALID_REQUEST, error_message=f"DescribeConfigs answered without the group {group_id!r}"
    )


def alter_group_configs_request(
    group_id: str, changes: Iterable[ConfigChange], validate_only: bool
) -> IncrementalAlterConfigsRequest:
    """IncrementalAlterConfigs of the GROUP resource ``group_id``: each change a SET or DELETE, in order."""
    Resource = IncrementalAlterConfigsRequest.AlterConfigsResource
    Config = Resource.AlterableConfig
    resource = Resource(
        resource_type=GROUP_RESOURCE_TYPE,
        resource_name=group_id,
        configs=[Config(name=c.name, config_operation=c.operation, value=c.value) for c in changes],
    )
    return IncrementalAlterConfigsRequest(resources=[resource], validate_only=validate_only)


def altered_group_configs(message: IncrementalAlterConfigsResponse, group_id: str) -> GroupConfigsAltered:
    """The answer's code and message for the GROUP resource ``group_id``; none: INVALID_REQUEST, as a value."""
    for response in message.responses:
        if response.resource_type == GROUP_RESOURCE_TYPE and response.resource_name == group_id:
            return GroupConfigsAltered(error_code=response.error_code, error_message=response.error_message)
    return GroupConfigsAltered(
        error_code=codes.INVALID_REQUEST,
        error_message=f"IncrementalAlterConfigs answered without the group {group_id!r}",
    )


class KafkaAdminTransport(KafkaNetwork):
    """``AdminTransport`` over kafka-python's ``KafkaNetClient`` (see the module docstring).

    Args:
        config: the network and security settings (``bootstrap_servers``, ``client_id``,
            ``request_timeout_ms``, ``security_protocol``, ``ssl_*``, ``sasl_*``, ...).

    """

    def offset_fetch_all(
        self, group_id: str, node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[OffsetFetchResult]:
        """OffsetFetch with ``topics=null``: every partition ``group_id`` committed.

        Sent at v8+ only (``min_version=8``; the connection negotiates the rest): Tansu answers
        the all-topics form malformed before v8 (the embedded Tansu broker, docs/testing.md), and
        Kafka 3.0+ speaks v8. Partitions never committed are absent; the top-level error is the
        group's.

        A coordinator without v8 yields ``OffsetFetchResult(35, {})`` (UNSUPPORTED_VERSION).
        """
        request = OffsetFetchRequest(group_id=group_id, topics=None, require_stable=self._read_committed)
        inner = self._coordinator_call(
            request, node_id, timeout_ms, lambda r: fetch_result(r[0]), min_version=OFFSET_FETCH_ALL_MIN
        )
        return _unsupported_as(inner, OffsetFetchResult(codes.UNSUPPORTED_VERSION, {}))

    def consumer_group_describe(
        self, group_ids: Iterable[str], node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[tuple[DescribedConsumerGroup, ...]]:
        """ConsumerGroupDescribe (API 69, v1 max) at the coordinator ``node_id``.

        Through :mod:`kgroup._io.kafka_messages`; a broker without the API yields
        each group with error UNSUPPORTED_VERSION.
        """
        from kgroup._io import kafka_messages as wire

        ids = tuple(dict.fromkeys(group_ids))
        inner = self._bridge(
            lambda: wire.describe_request_message(ConsumerGroupDescribeRequest(group_ids=ids)),
            self._coordinator_node(node_id), timeout_ms, lambda message: wire.describe_response_value(message).groups,
        )
        unsupported = tuple(DescribedConsumerGroup(
            error_code=codes.UNSUPPORTED_VERSION, group_id=g, group_state="", group_epoch=-1, assignment_epoch=-1,
            assignor_name="") for g in ids)
        return _unsupported_as(inner, unsupported)

    def leave_group_members(
        self, group_id: str, instance_ids: Iterable[str], reason: str | None, node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[LeaveGroupResponse]:
        """LeaveGroup v3-v5 removing static members by ``group_instance_id`` (KIP-345 admin removal).

        Each identity is ``member_id=""`` with the instance id, as Java's
        ``Admin.removeMembersFromConsumerGroup`` sends it; ``reason`` goes out from v5
        (KIP-800). A coordinator without v3 yields ``LeaveGroupResponse(error_code=35)``
        (UNSUPPORTED_VERSION) instead of sending the request.
        """
        ids = dict.fromkeys(instance_ids)
        members = tuple(LeaveMember(member_id="", group_instance_id=i, reason=reason) for i in ids)
        request = LeaveGroupRequest(group_id=group_id, members=members)
        inner = self._coordinator_call(request, node_id, timeout_ms, lambda r: r[0], min_version=LEAVE_GROUP_BATCH_MIN)
        return _unsupported_as(inner, LeaveGroupResponse(error_code=codes.UNSUPPORTED_VERSION))

    def list_groups(self, timeout_ms: int) -> concurrent.futures.Future[tuple[int, tuple[ListedGroup, ...]]]:
        """ListGroups at every broker of the cluster metadata, one after the other: ``(error_code, groups)``.

        The first broker error code ends the call (with no groups), UNSUPPORTED_VERSION too for
        a broker without ListGroups; a group listed twice is returned twice (``GroupAdmin``
        keeps it once).
        """
        manager = self._manager
        cluster = self._cluster

        async def go() -> tuple[int, tuple[ListedGroup, ...]]:
            groups: list[ListedGroup] = []
            for broker in sorted(cluster.brokers(), key=lambda b: b.node_id):
                message = await manager.wait_for(
                    manager.send(request_message(ListGroupsRequest()), node_id=broker.node_id,
                                 request_timeout_ms=timeout_ms),
                    timeout_ms + 1000,
                )
                code, listed = _listed_groups(message)
                if code != codes.NONE:
                    return code, ()
                groups.extend(listed)
            return codes.NONE, tuple(groups)

        return _unsupported_as(self._run_on_io(go, lambda found: found), (codes.UNSUPPORTED_VERSION, ()))

    def delete_groups(
        self, group_ids: Iterable[str], node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[dict[str, int]]:
        """DeleteGroups at the coordinator ``node_id``: each group's code (UNSUPPORTED_VERSION: no DeleteGroups)."""
        request = DeleteGroupsRequest(groups=tuple(dict.fromkeys(group_ids)))
        inner = self._coordinator_call(
            request, node_id, timeout_ms,
            lambda r: {result.group_id: result.error_code for result in r[0].results},
        )
        return _unsupported_as(inner, dict.fromkeys(request.groups, codes.UNSUPPORTED_VERSION))

    def alter_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata], node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[dict[TopicPartition, int]]:
        """OffsetCommit as an admin (generation -1, member id "", v8 max) at ``node_id``: each partition's code."""
        request = admin_offset_commit(group_id, offsets)
        inner = self._coordinator_call(request, node_id, timeout_ms, lambda r: commit_results(r[0]))
        return _unsupported_as(inner, dict.fromkeys(offsets, codes.UNSUPPORTED_VERSION))

    # ------------------------------------------------------------------ share groups (KIP-932)
    def _share_call(
        self, build: Callable[[], Any], node_id: int, timeout_ms: int, convert: Callable[[Any], T], fallback: T
    ) -> concurrent.futures.Future[T]:
        """One share-group admin request at the coordinator ``node_id``; no version both speak: ``fallback``."""
        return _unsupported_as(self._bridge(build, self._coordinator_node(node_id), timeout_ms, convert), fallback)

    def share_group_describe(
        self, group_ids: Iterable[str], node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[tuple[DescribedShareGroup, ...]]:
        """ShareGroupDescribe (API 77, v1) at the coordinator ``node_id``: one entry per group.

        A broker without v1 (no share groups, or Kafka 4.0's early access) yields each group
        with error UNSUPPORTED_VERSION.
        """
        ids = tuple(dict.fromkeys(group_ids))
        unsupported = tuple(DescribedShareGroup(error_code=codes.UNSUPPORTED_VERSION, group_id=g) for g in ids)
        return self._share_call(
            lambda: wire.share_describe_request_message(ids), node_id, timeout_ms,
            wire.share_describe_response_value, unsupported,
        )

    def describe_share_group_offsets(
        self, group_id: str, node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[ShareGroupOffsets]:
        """DescribeShareGroupOffsets (API 90, v0-1) of every partition ``group_id`` has a start offset for."""
        return self._share_call(
            lambda: wire.share_offsets_request_message(group_id), node_id, timeout_ms,
            lambda message: wire.share_offsets_response_value(message, group_id),
            ShareGroupOffsets(error_code=codes.UNSUPPORTED_VERSION),
        )

    def alter_share_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int], node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[ShareOffsetsAltered]:
        """AlterShareGroupOffsets (API 91, v0): set each partition's start offset (an empty group only)."""
        wanted = dict(offsets)
        return self._share_call(
            lambda: wire.alter_share_offsets_request_message(group_id, wanted), node_id, timeout_ms,
            wire.alter_share_offsets_response_value, ShareOffsetsAltered(error_code=codes.UNSUPPORTED_VERSION),
        )

    def delete_share_group_offsets(
        self, group_id: str, topics: Iterable[str], node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[ShareOffsetsDeleted]:
        """DeleteShareGroupOffsets (API 92, v0): delete the start offsets of whole ``topics`` (an empty group only)."""
        names = tuple(dict.fromkeys(topics))
        return self._share_call(
            lambda: wire.delete_share_offsets_request_message(group_id, names), node_id, timeout_ms,
            wire.delete_share_offsets_response_value, ShareOffsetsDeleted(error_code=codes.UNSUPPORTED_VERSION),
        )

    # ------------------------------------------------------------------ a group's configs (KIP-848, KIP-932)
    def describe_group_config_entries(
        self, group_id: str, timeout_ms: int
    ) -> concurrent.futures.Future[GroupConfigsDescribed]:
        """DescribeConfigs (API 32, v1-4) of every config of the GROUP resource ``group_id`` at the least loaded broker.

        Any broker answers for a group (Java sends every resource but a BROKER or BROKER_LOGGER
        one to the least loaded node). A broker without DescribeConfigs yields
        ``GroupConfigsDescribed(error_code=35)`` (UNSUPPORTED_VERSION).
        """
        return _unsupported_as(
            self._bridge(
                lambda: describe_group_configs_request(group_id), self._manager.least_loaded_node, timeout_ms,
                lambda message: described_group_configs(message, group_id),
            ),
            GroupConfigsDescribed(error_code=codes.UNSUPPORTED_VERSION),
        )

    def incremental_alter_group_configs(
        self, group_id: str, changes: Iterable[ConfigChange], validate_only: bool, timeout_ms: int
    ) -> concurrent.futures.Future[GroupConfigsAltered]:
        """IncrementalAlterConfigs (API 44, v0-1) of the GROUP resource ``group_id`` at the least loaded broker.

        The broker forwards it to the controller, which validates and records it. A broker
        without IncrementalAlterConfigs (Kafka before 2.3) yields ``GroupConfigsAltered(error_code=35)``.
        """
        wanted = tuple(changes)
        return _unsupported_as(
            self._bridge(
                lambda: alter_group_configs_request(group_id, wanted, validate_only),
                self._manager.least_loaded_node, timeout_ms,
                lambda message: altered_group_configs(message, group_id),
            ),
            GroupConfigsAltered(error_code=codes.UNSUPPORTED_VERSION),
        )
