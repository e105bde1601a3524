"""Group API values <-> kafka-python's message classes: the one mapping, for the client and the proxy.

The client adapter (:mod:`kgroup._io.kafka_python`) turns the requests of
:mod:`kgroup.protocol.group_api` into kafka-python request objects with
:func:`request_message` and the responses back with :func:`response_values`; the coordinator
proxy (:mod:`kgroup.testing.proxy`) goes the other way with :func:`requests_from_body` and
:func:`response_body`, on the body dicts of :mod:`kgroup._io.kafka_frames`. Both directions
walk the value types and kafka-python's schema together, so a field is described once, in its
value type; nothing here lists a message's fields.

A body is a dict with Kafka's snake_case field names, as kafka-python's ``to_dict(json=False)``
spells them. A value field maps to the body field of the same name, except
``OffsetCommitRequest.generation_id`` (``generation_id_or_member_epoch`` since KIP-848) and
``DeleteGroupsRequest.groups`` (``groups_names``). ``api_version`` (and JoinGroup's
``client_id``/``client_host``, from the header and the connection) are not body fields.

Version rules. Generic, from kafka-python's schema: a field outside the message version takes
the value type's default when decoding and is left out when encoding; a ``None`` where the
version does not allow null is encoded as the field's default (``""``: JoinGroup's
``protocol_name`` before v7). Per API:

===============  ========  ==================================================================
API              versions  rule
===============  ========  ==================================================================
FindCoordinator  0-6       v4+ batch the keys (``coordinator_keys``, KIP-699): one value per
                           key; before v4 one ``key``
JoinGroup        0-9       v0 has no ``rebalance_timeout_ms``: Kafka uses the session timeout
LeaveGroup       0-5       v0-2 carry one ``member_id``: the single entry of ``members``
OffsetFetch      1-9       v8+ batch the groups (KIP-709): one value per group; v9 adds each
                           group's ``member_id`` and ``member_epoch`` (KIP-848), which the
                           single-group form (v1-7) does not carry; v0-1 have no
                           top-level ``error_code``: a group error is copied onto every
                           partition (the requested ones when the answer lists none)
===============  ========  ==================================================================

Every other classic API (SyncGroup, Heartbeat, OffsetCommit, DescribeGroups, ListGroups,
DeleteGroups) follows the generic rules only. A request body built without a version (the client's, whose
version the connection negotiates) carries the fields of every version, both forms of a batched
API included; kafka-python encodes the ones of the version it picks.

The consumer protocol's APIs (KIP-848), ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe
(69), have no class in kafka-python 3.0.12. Their classes here are built as kafka-python builds
its own (``JoinGroupRequest`` and the rest in ``kafka.protocol.consumer``): an ``ApiMessage``
subclass that loads its JSON schema, ``<class name>.json`` beside this module (Apache Kafka's
message definitions, every version Kafka 4.x serves: 0-1, all flexible). Defining a response
class registers it with kafka-python's response parser, so ``KafkaNetClient.send`` to a broker
that lists the API in its ApiVersions answer decodes the reply like any other. Their values are
:mod:`kgroup.protocol.consumer_group_heartbeat`'s and :mod:`kgroup.protocol.consumer_group_describe`'s,
mapped field by field (``heartbeat_*`` and ``describe_*``). A request leaves its version to the
connection (the highest both sides serve, at most the value's ``api_version``); a heartbeat with
``subscribed_topic_regex`` sets ``min_version=1``, so a broker that serves only v0 fails the send
(kafka-python's ``IncompatibleBrokerVersion``) instead of dropping the pattern silently, as Java's
``ConsumerHeartbeatRequestManager`` fails (an ``UnsupportedVersionException``). A
ConsumerGroupDescribe v0 answer carries no ``member_type``: it reads as ``MEMBER_TYPE_UNKNOWN``.

Share groups' membership API (KIP-932), ShareGroupHeartbeat (76), is built the same way
(``share_heartbeat_*``, the values of :mod:`kgroup.protocol.share_group_heartbeat`): one
version, 1 (Apache Kafka 4.1+), which a request also sets as its ``min_version``, so a broker
that serves only Kafka 4.0's early-access v0, or no share groups at all, fails the send
(``IncompatibleBrokerVersion``), as Java's ``ShareHeartbeatRequestManager`` fails. ShareFetch (78)
and ShareAcknowledge (79), versions 1-2 (2: Kafka 4.4's ``ShareAcquireMode``, ``IsRenewAck`` and
ShareAcknowledge's ``AcquisitionLockTimeoutMs``), have their message classes here too, used as
kafka-python's own are (keyword fields, nested struct classes), and mapped to the values of
:mod:`kgroup.protocol.share_fetch` (``share_fetch_*``, ``share_acknowledge_*``).
"""

from __future__ import annotations

import functools
import types
import typing
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kgroup._io import quiet_kafka  # noqa: F401  (first: kafka-python, without its import-time warning)

# isort: split
import attrs
from kafka.protocol import admin as kafka_admin
from kafka.protocol import consumer as kafka_consumer
from kafka.protocol import metadata as kafka_metadata
from kafka.protocol.api_message import ApiMessage

from kgroup._error_codes import INVALID_REQUEST
from kgroup._io import quiet_schema_loading
from kgroup.protocol import consumer_group_describe as cgd
from kgroup.protocol import consumer_group_heartbeat as cgh
from kgroup.protocol import group_api
from kgroup.protocol import share_fetch as sf
from kgroup.protocol import share_group_admin as sga
from kgroup.protocol import share_group_heartbeat as sgh
from kgroup.protocol.group_api import (
    FIND_COORDINATOR,
    JOIN_GROUP,
    LEAVE_GROUP,
    OFFSET_FETCH,
    FetchPartitionResult,
    FetchTopicResult,
    GroupRequest,
    GroupResponse,
    LeaveMember,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from kgroup.types import TopicPartition

__all__ = [
    "KAFKA_CLASSES",
    "AlterShareGroupOffsetsRequest",
    "AlterShareGroupOffsetsResponse",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "DeleteShareGroupOffsetsRequest",
    "DeleteShareGroupOffsetsResponse",
    "DescribeShareGroupOffsetsRequest",
    "DescribeShareGroupOffsetsResponse",
    "ShareAcknowledgeRequest",
    "ShareAcknowledgeResponse",
    "ShareFetchRequest",
    "ShareFetchResponse",
    "ShareGroupDescribeRequest",
    "ShareGroupDescribeResponse",
    "ShareGroupHeartbeatRequest",
    "ShareGroupHeartbeatResponse",
    "alter_share_offsets_request_message",
    "alter_share_offsets_response_value",
    "build_message",
    "delete_share_offsets_request_message",
    "delete_share_offsets_response_value",
    "describe_request_message",
    "describe_request_value",
    "describe_response_message",
    "describe_response_value",
    "heartbeat_request_message",
    "heartbeat_request_value",
    "heartbeat_response_message",
    "heartbeat_response_value",
    "plain",
    "request_body",
    "request_message",
    "requests_from_body",
    "response_body",
    "response_values",
    "responses_from_body",
    "share_acknowledge_request_message",
    "share_acknowledge_response_value",
    "share_describe_request_message",
    "share_describe_response_value",
    "share_fetch_request_message",
    "share_fetch_response_value",
    "share_heartbeat_request_message",
    "share_heartbeat_request_value",
    "share_heartbeat_response_message",
    "share_heartbeat_response_value",
    "share_offsets_request_message",
    "share_offsets_response_value",
]

KAFKA_CLASSES: Final[Mapping[int, tuple[Any, Any]]] = types.MappingProxyType(
    {
        group_api.OFFSET_COMMIT: (kafka_consumer.OffsetCommitRequest, kafka_consumer.OffsetCommitResponse),
        group_api.OFFSET_FETCH: (kafka_consumer.OffsetFetchRequest, kafka_consumer.OffsetFetchResponse),
        group_api.FIND_COORDINATOR: (kafka_metadata.FindCoordinatorRequest, kafka_metadata.FindCoordinatorResponse),
        group_api.JOIN_GROUP: (kafka_consumer.JoinGroupRequest, kafka_consumer.JoinGroupResponse),
        group_api.HEARTBEAT: (kafka_consumer.HeartbeatRequest, kafka_consumer.HeartbeatResponse),
        group_api.LEAVE_GROUP: (kafka_consumer.LeaveGroupRequest, kafka_consumer.LeaveGroupResponse),
        group_api.SYNC_GROUP: (kafka_consumer.SyncGroupRequest, kafka_consumer.SyncGroupResponse),
        group_api.DESCRIBE_GROUPS: (kafka_admin.DescribeGroupsRequest, kafka_admin.DescribeGroupsResponse),
        group_api.LIST_GROUPS: (kafka_admin.ListGroupsRequest, kafka_admin.ListGroupsResponse),
        group_api.DELETE_GROUPS: (kafka_admin.DeleteGroupsRequest, kafka_admin.DeleteGroupsResponse),
    }
)
"""kafka-python's ``(request class, response class)`` of each group API."""

_REQUEST_CLASSES: Final[Mapping[int, type]] = {cls.API_KEY: cls for cls in typing.get_args(GroupRequest)}
_RESPONSE_CLASSES: Final[Mapping[int, type]] = {cls.API_KEY: cls for cls in typing.get_args(GroupResponse)}

#: value fields that are not body fields: every request's version, and what the header and the
#: connection tell the coordinator about a joining member
_NOT_IN_BODY: Final = frozenset(
    {(cls, "api_version") for cls in _REQUEST_CLASSES.values()}
    | {(group_api.JoinGroupRequest, "client_id"), (group_api.JoinGroupRequest, "client_host")}
)
#: value field -> body field, where Kafka's name differs
_BODY_NAMES: Final[Mapping[tuple[type, str], str]] = types.MappingProxyType(
    {
        (group_api.OffsetCommitRequest, "generation_id"): "generation_id_or_member_epoch",
        (group_api.DeleteGroupsRequest, "groups"): "groups_names",
    }
)


#: OffsetFetch fields that only the batched form's group entries carry (v9+, KIP-848)
_FETCH_GROUP_ONLY: Final = frozenset({"member_id", "member_epoch"})

#: the batched answers: api key -> (first version, array of entries, the entry's name field, which
#: is the attribute of the same name of the request it answers)
_BATCHED_RESPONSES: Final[Mapping[int, tuple[int, str, str]]] = types.MappingProxyType(
    {FIND_COORDINATOR: (4, "coordinators", "key"), OFFSET_FETCH: (8, "groups", "group_id")}
)


def _batch(api_key: int, version: int) -> tuple[str, str] | None:
    """``(array, name field)`` when the response of ``api_key`` at ``version`` is batched."""
    batched = _BATCHED_RESPONSES.get(api_key)
    if batched is None or version < batched[0]:
        return None
    return batched[1], batched[2]


def _fields(kafka_class: Any, *path: str) -> Mapping[str, Any]:
    """The schema fields of ``kafka_class``, or of the struct at ``path`` inside it."""
    fields: Mapping[str, Any] = kafka_class._struct.fields
    for name in path:
        fields = fields[name].fields
    return fields


# ----------------------------------------------------------------------------- value -> body


def _encode(
    value: Any, fields: Mapping[str, Any], version: int | None, *, leave_out: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """The body of ``value`` (a group API value) against the schema ``fields``."""
    cls = group_api.type_of(value)
    body: dict[str, Any] = {}
    for attribute in attrs.fields(cls):
        if (cls, attribute.name) in _NOT_IN_BODY or attribute.name in leave_out:
            continue
        name = _BODY_NAMES.get((cls, attribute.name), attribute.name)
        body[name] = _encode_field(getattr(value, attribute.name), fields[name], version)
    return body


def _encode_field(value: Any, field: Any, version: int | None) -> Any:
    if value is None:
        if version is not None and field.for_version_q(version) and not field.nullable_for_version_q(version):
            return field.default
        return None
    if field.is_struct_array():
        names = list(field.fields)
        return [
            dict(zip(names, item, strict=True)) if isinstance(item, tuple) else _encode(item, field.fields, version)
            for item in value
        ]
    if field.is_struct():
        return _encode(value, field.fields, version)
    if isinstance(value, frozenset):
        return set(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def request_body(requests: Sequence[GroupRequest], version: int | None = None) -> dict[str, Any]:
    """The body of ``requests`` (several only for a batched API), at ``version`` or for any version.

    Raises:
        ValueError: several requests for an API (or a version) without a batch form.

    """
    api_key = requests[0].API_KEY
    fields = _fields(KAFKA_CLASSES[api_key][0])
    batched = api_key == FIND_COORDINATOR or (api_key == OFFSET_FETCH and (version is None or version >= 8))
    if len(requests) != 1 and not batched:
        raise ValueError(f"{group_api.API_NAMES[api_key]} v{version} carries exactly one request")
    first = requests[0]
    if api_key == FIND_COORDINATOR:
        keys = [r.key for r in requests if isinstance(r, group_api.FindCoordinatorRequest)]
        return {**_encode(first, fields, version), "coordinator_keys": keys}
    if api_key == OFFSET_FETCH:
        fetches = [r for r in requests if isinstance(r, OffsetFetchRequest)]
        groups = _fields(KAFKA_CLASSES[api_key][0], "groups")
        body = {
            "groups": [_encode(r, groups, version, leave_out=frozenset({"require_stable"})) for r in fetches],
            "require_stable": any(r.require_stable for r in fetches),
        }
        if len(fetches) != 1:
            return body
        return {**_encode(first, fields, version, leave_out=_FETCH_GROUP_ONLY), **body}
    body = _encode(first, fields, version)
    if api_key == LEAVE_GROUP and isinstance(first, group_api.LeaveGroupRequest):
        body["member_id"] = first.members[0].member_id if first.members else ""
    return body


def response_body(
    api_key: int, version: int, responses: Sequence[GroupResponse], requests: Sequence[GroupRequest] = ()
) -> dict[str, Any]:
    """The body answering ``requests`` with ``responses`` (one each for a batched API) at ``version``.

    Raises:
        ValueError: the counts do not fit (a batched answer needs its requests: their keys or
            group ids name the entries).

    """
    kafka_class = KAFKA_CLASSES[api_key][1]
    batch = _batch(api_key, version)
    if batch is not None:
        array, name = batch
        if len(requests) != len(responses):
            raise ValueError(f"{group_api.API_NAMES[api_key]}: {len(responses)} answers to {len(requests)} requests")
        entries = _fields(kafka_class, array)
        return {
            array: [
                {name: getattr(q, name), **_encode(r, entries, version)}
                for q, r in zip(requests, responses, strict=True)
            ]
        }
    if len(responses) != 1:
        raise ValueError(f"{group_api.API_NAMES[api_key]} v{version} answers with exactly one response")
    (response,) = responses
    if isinstance(response, OffsetFetchResponse) and version < 2 and response.error_code:
        request = requests[0] if requests and isinstance(requests[0], OffsetFetchRequest) else None
        response = attrs.evolve(response, topics=_spread_fetch_error(response, request))
    return _encode(response, _fields(kafka_class), version)


def _spread_fetch_error(resp: OffsetFetchResponse, req: OffsetFetchRequest | None) -> tuple[FetchTopicResult, ...]:
    """OffsetFetch v0-1 has no top-level error: every partition carries it."""
    code = resp.error_code
    if resp.topics:
        return tuple(
            attrs.evolve(t, partitions=tuple(attrs.evolve(p, error_code=p.error_code or code) for p in t.partitions))
            for t in resp.topics
        )
    if req is None or req.topics is None:
        return ()
    return tuple(
        FetchTopicResult(
            name=t.name,
            partitions=tuple(FetchPartitionResult(partition_index=p, error_code=code) for p in t.partition_indexes),
        )
        for t in req.topics
    )


# ----------------------------------------------------------------------------- body -> value


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _decode(cls: type, body: Mapping[str, Any], fields: Mapping[str, Any], version: int, **known: Any) -> Any:
    """The ``cls`` value of ``body`` at ``version``; ``known`` gives fields the body does not carry."""
    values = dict(known)
    hints = _hints(cls)
    for attribute in attrs.fields(cls):
        if attribute.name in values or (cls, attribute.name) in _NOT_IN_BODY:
            continue
        name = _BODY_NAMES.get((cls, attribute.name), attribute.name)
        field = fields[name]
        if name in body and field.for_version_q(version):
            values[attribute.name] = _decode_field(hints[attribute.name], body[name], field, version)
    return cls(**values)


def _decode_field(hint: Any, value: Any, field: Any, version: int) -> Any:
    args = typing.get_args(hint)
    if isinstance(hint, types.UnionType):  # ``X | None``
        (inner,) = (a for a in args if a is not type(None))
        if inner is frozenset[int]:  # authorized operations: a set of codes, or INT32 MIN for "not asked"
            return None if value is None or isinstance(value, int) else frozenset(int(code) for code in value)
        return None if value is None else _decode_field(inner, value, field, version)
    if typing.get_origin(hint) is tuple:
        item = args[0]
        if attrs.has(item):
            return tuple(_decode(item, entry, field.fields, version) for entry in value or ())
        if typing.get_origin(item) is tuple:  # pairs for a struct's fields, in schema order
            kinds = typing.get_args(item)
            return tuple(
                tuple(_scalar(k, entry[n]) for k, n in zip(kinds, field.fields, strict=True)) for entry in value or ()
            )
        return tuple(_scalar(item, entry) for entry in value or ())
    return _scalar(hint, value)


def _scalar(kind: Any, value: Any) -> Any:
    if kind is bytes:
        return b"" if value is None else bytes(value)
    if kind is str:
        return "" if value is None else str(value)
    return kind(value)


def requests_from_body(
    api_key: int, version: int, body: Mapping[str, Any], *, client_id: str = "", client_host: str = "/127.0.0.1"
) -> tuple[GroupRequest, ...]:
    """The request values of a decoded request body: one, or one per key or group of a batched form.

    ``client_id`` (the header's) and ``client_host`` (``"/" + ip`` of the connection, as Kafka
    reports it) go into a JoinGroup, which DescribeGroups reports.

    Raises:
        KeyError: ``api_key`` is not a group API.

    """
    kafka_class = KAFKA_CLASSES[api_key][0]
    fields = _fields(kafka_class)
    cls = _REQUEST_CLASSES[api_key]
    v = version
    if api_key == FIND_COORDINATOR and v >= 4:
        return tuple(_decode(cls, body, fields, v, api_version=v, key=key) for key in body["coordinator_keys"] or ())
    if api_key == OFFSET_FETCH and v >= 8:
        stable = bool(body.get("require_stable", False))
        groups = _fields(kafka_class, "groups")
        return tuple(
            _decode(cls, group, groups, v, api_version=v, require_stable=stable) for group in body["groups"] or ()
        )
    known: dict[str, Any] = {"api_version": v}
    if api_key == JOIN_GROUP:
        known.update(client_id=client_id, client_host=client_host)
        if v < 1:
            known["rebalance_timeout_ms"] = int(body["session_timeout_ms"])
    if api_key == LEAVE_GROUP and v < 3:
        known["members"] = (LeaveMember(member_id=body["member_id"]),)
    if api_key == OFFSET_FETCH:
        known.update(member_id=None, member_epoch=-1)  # the single-group form has no member
    return (_decode(cls, body, fields, v, **known),)


def responses_from_body(api_key: int, version: int, body: Mapping[str, Any]) -> tuple[GroupResponse, ...]:
    """The response values of a decoded response body: one, or one per entry of a batched form.

    Raises:
        KeyError: ``api_key`` is not a group API.

    """
    kafka_class = KAFKA_CLASSES[api_key][1]
    cls = _RESPONSE_CLASSES[api_key]
    batch = _batch(api_key, version)
    if batch is not None:
        array, _ = batch
        entries = _fields(kafka_class, array)
        return tuple(_decode(cls, entry, entries, version) for entry in body[array] or ())
    return (_decode(cls, body, _fields(kafka_class), version),)


# ----------------------------------------------------------------------------- kafka-python objects


def build_message(data_class: Any, body: Mapping[str, Any], version: int | None = None, **options: Any) -> Any:
    """A kafka-python message (or struct) from a body dict, walking the schema's fields.

    ``options`` go to the top-level constructor (``max_version``/``min_version`` of a request
    whose version the connection negotiates).
    """
    values: dict[str, Any] = {}
    for name, field in data_class._struct.fields.items():
        if name not in body:
            continue
        value = body[name]
        if value is not None and field.is_struct_array():
            value = [build_message(field.data_class, item) for item in value]
        elif value is not None and field.is_struct():
            value = build_message(field.data_class, value)
        values[name] = value
    if version is not None:
        options["version"] = version
    return data_class(**values, **options)


def plain(value: Any) -> Any:
    """A decoded body with kafka-python's buffer types made ``bytes`` (dicts and lists copied)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, (memoryview, bytearray)):
        return bytes(value)
    return value


def request_message(request: GroupRequest, *, min_version: int | None = None) -> Any:
    """The kafka-python request for ``request``, sent at most at ``request.api_version``.

    The connection negotiates the version (the highest both sides speak, at least
    ``min_version``); the body carries the fields of every version.
    """
    kafka_class = KAFKA_CLASSES[request.API_KEY][0]
    body = request_body((request,))
    return build_message(kafka_class, body, max_version=request.api_version, min_version=min_version)


def response_values(api_key: int, message: Any) -> tuple[GroupResponse, ...]:
    """The response values of a kafka-python response ``message`` (decoded at its version)."""
    return responses_from_body(api_key, int(message.API_VERSION), plain(message.to_dict(json=False)))


# ----------------------------------------------------------------------------- the consumer protocol (KIP-848)


def _message_class(name: str) -> Any:
    """kafka-python's message class ``name``, its schema the JSON ``<name>.json`` beside here.

    kafka-python loads a message's schema by the class's name when the class is defined (as
    ``class <name>(ApiMessage, load_json=...)`` would) and registers a response's class with
    its parser.
    """
    with quiet_schema_loading():
        namespace = {"__module__": __name__, "__qualname__": name}
        return types.new_class(name, (ApiMessage,), {"load_json": __package__}, lambda ns: ns.update(namespace))


ConsumerGroupHeartbeatRequest: Final = _message_class("ConsumerGroupHeartbeatRequest")
ConsumerGroupHeartbeatResponse: Final = _message_class("ConsumerGroupHeartbeatResponse")


def _scalars(cls: type, *special: str) -> tuple[str, ...]:
    """The fields of the value type ``cls`` that map one to one to the message's (``special`` ones do not)."""
    return tuple(f.name for f in attrs.fields(cls) if f.name not in special)


def _copy(source: Any, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(source, name) for name in names}


def _optional_list(value: tuple[Any, ...] | None) -> list[Any] | None:
    return None if value is None else list(value)


def _optional_tuple(value: Any) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


_Request = typing.TypeVar("_Request", bound="_Versioned")


class _Versioned(typing.Protocol):
    @property
    def api_version(self) -> int: ...


def _any_version(value: object) -> None:
    return None


@attrs.frozen
class _Requests(typing.Generic[_Request]):
    """A request (ConsumerGroupHeartbeat, ConsumerGroupDescribe, ShareGroupHeartbeat), both ways.

    Fields are copied one to one but ``sequences`` (tuples in the value, lists in the message,
    None kept) and the ones a caller maps itself (``fields``); the message's version is the
    connection's choice, at most ``value.api_version`` and at least ``min_version(value)``.
    """

    #: kafka-python's message class
    message_class: Any
    #: kgroup's value class
    value_class: typing.Callable[..., _Request]
    scalars: tuple[str, ...]
    sequences: tuple[str, ...]
    min_version: typing.Callable[[_Request], int | None] = _any_version

    @classmethod
    def of(
        cls,
        message_class: Any,
        value_class: type[_Request],
        sequences: tuple[str, ...],
        *,
        special: tuple[str, ...] = (),
        min_version: typing.Callable[[_Request], int | None] = _any_version,
    ) -> _Requests[_Request]:
        """The mapping between ``message_class`` and ``value_class``; ``special`` fields are the caller's."""
        scalars = _scalars(value_class, *sequences, *special, "api_version")
        return cls(message_class, value_class, scalars, sequences, min_version)

    def message(self, value: _Request, **fields: Any) -> Any:
        """The kafka-python request for ``value``, its version the connection's (at most ``value.api_version``)."""
        return self.message_class(
            **_copy(value, self.scalars),
            **{name: _optional_list(getattr(value, name)) for name in self.sequences},
            **fields,
            max_version=value.api_version,
            min_version=self.min_version(value),
        )

    def value(self, message: Any, **fields: Any) -> _Request:
        """The value of a decoded kafka-python request (``api_version``: the version it was decoded at)."""
        return self.value_class(
            **_copy(message, self.scalars),
            **{name: _optional_tuple(getattr(message, name)) for name in self.sequences},
            **fields,
            api_version=message.API_VERSION,
        )


def _regex_version(value: cgh.ConsumerGroupHeartbeatRequest) -> int | None:
    return cgh.REGEX_VERSION if value.subscribed_topic_regex is not None else None


_HEARTBEAT_REQUESTS: Final = _Requests.of(
    ConsumerGroupHeartbeatRequest,
    cgh.ConsumerGroupHeartbeatRequest,
    ("subscribed_topic_names",),
    special=("topic_partitions",),
    min_version=_regex_version,
)


def _heartbeat_partitions(struct_class: Any, topics: tuple[cgh.TopicIdPartitions, ...] | None) -> list[Any] | None:
    if topics is None:
        return None
    return [struct_class(topic_id=tp.topic_id, partitions=list(tp.partitions)) for tp in topics]


def _heartbeat_topics(structs: Any) -> tuple[cgh.TopicIdPartitions, ...] | None:
    if structs is None:
        return None
    return tuple(cgh.TopicIdPartitions(tp.topic_id, tuple(tp.partitions)) for tp in structs)


def heartbeat_request_message(value: cgh.ConsumerGroupHeartbeatRequest) -> Any:
    """The kafka-python request for ``value``, its version left to the connection (at most ``value.api_version``)."""
    partitions = _heartbeat_partitions(ConsumerGroupHeartbeatRequest.TopicPartitions, value.topic_partitions)
    return _HEARTBEAT_REQUESTS.message(value, topic_partitions=partitions)


def heartbeat_request_value(message: Any) -> cgh.ConsumerGroupHeartbeatRequest:
    """The value of a decoded kafka-python request (``api_version``: the version it was decoded at)."""
    return _HEARTBEAT_REQUESTS.value(message, topic_partitions=_heartbeat_topics(message.topic_partitions))


class _WithAssignment(typing.Protocol):
    @property
    def assignment(self) -> tuple[cgh.TopicIdPartitions, ...] | None: ...


_Response = typing.TypeVar("_Response", bound=_WithAssignment)


@attrs.frozen
class _AssignmentResponses(typing.Generic[_Response]):
    """A heartbeat response with an assignment (Consumer- or ShareGroupHeartbeat: the same shape), both ways."""

    #: kafka-python's message class
    message_class: Any
    #: kgroup's value class
    value_class: typing.Callable[..., _Response]
    #: the fields that map one to one
    scalars: tuple[str, ...]

    @classmethod
    def of(cls, message_class: Any, value_class: type[_Response]) -> _AssignmentResponses[_Response]:
        """The mapping between ``message_class`` and ``value_class``."""
        return cls(message_class, value_class, _scalars(value_class, "assignment"))

    def message(self, value: _Response) -> Any:
        """The kafka-python response for ``value`` (for a coordinator model or a test peer)."""
        assignment_class = self.message_class.Assignment
        topics = _heartbeat_partitions(assignment_class.TopicPartitions, value.assignment)
        return self.message_class(
            **_copy(value, self.scalars),
            assignment=None if topics is None else assignment_class(topic_partitions=topics),
        )

    def value(self, message: Any) -> _Response:
        """The value of a kafka-python response."""
        assignment = message.assignment
        return self.value_class(
            **_copy(message, self.scalars),
            assignment=None if assignment is None else _heartbeat_topics(assignment.topic_partitions),
        )


_HEARTBEAT_RESPONSES: Final = _AssignmentResponses.of(
    ConsumerGroupHeartbeatResponse, cgh.ConsumerGroupHeartbeatResponse
)
#: the kafka-python response for a ConsumerGroupHeartbeat response value (for a coordinator model or a test peer)
heartbeat_response_message: Final = _HEARTBEAT_RESPONSES.message
#: the value of a kafka-python ConsumerGroupHeartbeat response
heartbeat_response_value: Final = _HEARTBEAT_RESPONSES.value


ConsumerGroupDescribeRequest: Final = _message_class("ConsumerGroupDescribeRequest")
ConsumerGroupDescribeResponse: Final = _message_class("ConsumerGroupDescribeResponse")


_DESCRIBE_REQUESTS: Final = _Requests.of(
    ConsumerGroupDescribeRequest, cgd.ConsumerGroupDescribeRequest, ("group_ids",)
)
#: the kafka-python request for a ConsumerGroupDescribe request value, at most at its ``api_version``
describe_request_message: Final = _DESCRIBE_REQUESTS.message
#: the value of a decoded kafka-python ConsumerGroupDescribe request (``api_version``: the version it was decoded at)
describe_request_value: Final = _DESCRIBE_REQUESTS.value


_DESCRIBED_GROUP: Final = _scalars(cgd.DescribedConsumerGroup, "members")
_DESCRIBED_MEMBER: Final = _scalars(
    cgd.DescribedConsumerMember, "subscribed_topic_names", "assignment", "target_assignment", "member_type"
)


def describe_response_message(value: cgd.ConsumerGroupDescribeResponse) -> Any:
    """The kafka-python response for ``value`` (for a coordinator model or a test peer)."""
    response_class: Any = ConsumerGroupDescribeResponse
    group_class = response_class.DescribedGroup
    member_class = group_class.Member
    assignment_class = member_class.Assignment
    topic_class = assignment_class.TopicPartitions

    def assignment(topics: tuple[cgd.NamedTopicPartitions, ...]) -> Any:
        return assignment_class(topic_partitions=[
            topic_class(topic_id=t.topic_id, topic_name=t.topic_name, partitions=list(t.partitions)) for t in topics
        ])

    def member(m: cgd.DescribedConsumerMember) -> Any:
        return member_class(
            **_copy(m, _DESCRIBED_MEMBER), subscribed_topic_names=list(m.subscribed_topic_names),
            assignment=assignment(m.assignment), target_assignment=assignment(m.target_assignment),
            member_type=m.member_type,
        )

    return response_class(
        throttle_time_ms=value.throttle_time_ms,
        groups=[
            group_class(**_copy(g, _DESCRIBED_GROUP), members=[member(m) for m in g.members]) for g in value.groups
        ],
    )


def describe_response_value(message: Any) -> cgd.ConsumerGroupDescribeResponse:
    """The value of a kafka-python response (``member_type`` -1 at v0, which does not carry it)."""
    return cgd.ConsumerGroupDescribeResponse(
        throttle_time_ms=message.throttle_time_ms,
        groups=tuple(
            cgd.DescribedConsumerGroup(
                **_copy(g, _DESCRIBED_GROUP), members=tuple(_describe_member(m) for m in g.members)
            )
            for g in message.groups
        ),
    )


def _describe_member(m: Any) -> cgd.DescribedConsumerMember:
    member_type = getattr(m, "member_type", None)
    return cgd.DescribedConsumerMember(
        **_copy(m, _DESCRIBED_MEMBER),
        subscribed_topic_names=tuple(m.subscribed_topic_names),
        assignment=_describe_assignment(m.assignment),
        target_assignment=_describe_assignment(m.target_assignment),
        member_type=cgd.MEMBER_TYPE_UNKNOWN if member_type is None else member_type,
    )


def _describe_assignment(message: Any) -> tuple[cgd.NamedTopicPartitions, ...]:
    if message is None:
        return ()
    return tuple(
        cgd.NamedTopicPartitions(t.topic_id, t.topic_name, tuple(t.partitions)) for t in message.topic_partitions
    )


# ----------------------------------------------------------------------------- share groups (KIP-932)


ShareGroupHeartbeatRequest: Final = _message_class("ShareGroupHeartbeatRequest")
ShareGroupHeartbeatResponse: Final = _message_class("ShareGroupHeartbeatResponse")


_SHARE_HEARTBEAT_REQUESTS: Final = _Requests.of(
    ShareGroupHeartbeatRequest,
    sgh.ShareGroupHeartbeatRequest,
    ("subscribed_topic_names",),
    min_version=lambda value: sgh.OLDEST_VERSION,
)
#: the kafka-python request for a ShareGroupHeartbeat request value, at its ``api_version`` and no lower than v1
share_heartbeat_request_message: Final = _SHARE_HEARTBEAT_REQUESTS.message
#: the value of a decoded kafka-python ShareGroupHeartbeat request (``api_version``: the version it was decoded at)
share_heartbeat_request_value: Final = _SHARE_HEARTBEAT_REQUESTS.value


_SHARE_HEARTBEAT_RESPONSES: Final = _AssignmentResponses.of(
    ShareGroupHeartbeatResponse, sgh.ShareGroupHeartbeatResponse
)
#: the kafka-python response for a ShareGroupHeartbeat response value (for a coordinator model or a test peer)
share_heartbeat_response_message: Final = _SHARE_HEARTBEAT_RESPONSES.message
#: the value of a kafka-python ShareGroupHeartbeat response
share_heartbeat_response_value: Final = _SHARE_HEARTBEAT_RESPONSES.value


ShareFetchRequest: Final = _message_class("ShareFetchRequest")
ShareFetchResponse: Final = _message_class("ShareFetchResponse")
ShareAcknowledgeRequest: Final = _message_class("ShareAcknowledgeRequest")
ShareAcknowledgeResponse: Final = _message_class("ShareAcknowledgeResponse")


# ----------------------------------------------------------------------------- share groups' admin APIs (KIP-932)

ShareGroupDescribeRequest: Final = _message_class("ShareGroupDescribeRequest")
ShareGroupDescribeResponse: Final = _message_class("ShareGroupDescribeResponse")
DescribeShareGroupOffsetsRequest: Final = _message_class("DescribeShareGroupOffsetsRequest")
DescribeShareGroupOffsetsResponse: Final = _message_class("DescribeShareGroupOffsetsResponse")
AlterShareGroupOffsetsRequest: Final = _message_class("AlterShareGroupOffsetsRequest")
AlterShareGroupOffsetsResponse: Final = _message_class("AlterShareGroupOffsetsResponse")
DeleteShareGroupOffsetsRequest: Final = _message_class("DeleteShareGroupOffsetsRequest")
DeleteShareGroupOffsetsResponse: Final = _message_class("DeleteShareGroupOffsetsResponse")


def share_describe_request_message(group_ids: Sequence[str]) -> Any:
    """ShareGroupDescribe v1 for ``group_ids`` (no authorized operations asked for)."""
    return ShareGroupDescribeRequest(
        group_ids=list(group_ids), include_authorized_operations=False, min_version=1, max_version=1
    )


def _share_member(m: Any) -> sga.DescribedShareMember:
    topics = () if m.assignment is None else m.assignment.topic_partitions
    return sga.DescribedShareMember(
        member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch, client_id=m.client_id,
        client_host=m.client_host, subscribed_topic_names=tuple(m.subscribed_topic_names),
        assignment=tuple(cgd.NamedTopicPartitions(t.topic_id, t.topic_name, tuple(t.partitions)) for t in topics),
    )


def share_describe_response_value(message: Any) -> tuple[sga.DescribedShareGroup, ...]:
    """The groups of a kafka-python ShareGroupDescribe response, in its order."""
    return tuple(
        sga.DescribedShareGroup(
            error_code=g.error_code, error_message=g.error_message, group_id=g.group_id, group_state=g.group_state,
            group_epoch=g.group_epoch, assignment_epoch=g.assignment_epoch, assignor_name=g.assignor_name,
            members=tuple(_share_member(m) for m in g.members),
        )
        for g in message.groups
    )


def share_offsets_request_message(group_id: str, topics: Mapping[str, Sequence[int]] | None = None) -> Any:
    """DescribeShareGroupOffsets for one group: ``topics`` (name -> partitions), None for all (v0-1)."""
    request: Any = DescribeShareGroupOffsetsRequest
    group_class = request.DescribeShareGroupOffsetsRequestGroup
    wanted = None if topics is None else [
        group_class.DescribeShareGroupOffsetsRequestTopic(topic_name=t, partitions=list(ps))
        for t, ps in sorted(topics.items())
    ]
    return request(groups=[group_class(group_id=group_id, topics=wanted)], max_version=1)


def share_offsets_response_value(message: Any, group_id: str) -> sga.ShareGroupOffsets:
    """``group_id``'s entry of a DescribeShareGroupOffsets response (INVALID_REQUEST, 42, if it has none)."""
    version = int(message.API_VERSION)
    for g in message.groups:
        if g.group_id == group_id:
            return sga.ShareGroupOffsets(
                error_code=g.error_code, error_message=g.error_message,
                partitions={
                    TopicPartition(t.topic_name, p.partition_index): sga.SharePartitionOffset(
                        start_offset=p.start_offset, leader_epoch=p.leader_epoch,
                        lag=p.lag if version >= 1 else -1, error_code=p.error_code, error_message=p.error_message,
                    )
                    for t in g.topics
                    for p in t.partitions
                },
            )
    return sga.ShareGroupOffsets(error_code=INVALID_REQUEST, error_message=f"no entry for group {group_id!r}")


def alter_share_offsets_request_message(group_id: str, offsets: Mapping[TopicPartition, int]) -> Any:
    """AlterShareGroupOffsets v0: each partition's new start offset, grouped by topic."""
    request: Any = AlterShareGroupOffsetsRequest
    topic_class = request.AlterShareGroupOffsetsRequestTopic
    by_topic: dict[str, list[Any]] = {}
    for tp, offset in sorted(offsets.items()):
        by_topic.setdefault(tp.topic, []).append(
            topic_class.AlterShareGroupOffsetsRequestPartition(partition_index=tp.partition, start_offset=offset)
        )
    topics = [topic_class(topic_name=t, partitions=ps) for t, ps in by_topic.items()]
    return request(group_id=group_id, topics=topics, max_version=0)


def alter_share_offsets_response_value(message: Any) -> sga.ShareOffsetsAltered:
    """A kafka-python AlterShareGroupOffsets response as a value."""
    return sga.ShareOffsetsAltered(
        error_code=message.error_code, error_message=message.error_message,
        partitions={
            TopicPartition(t.topic_name, p.partition_index): p.error_code for t in message.responses
            for p in t.partitions
        },
    )


def delete_share_offsets_request_message(group_id: str, topics: Sequence[str]) -> Any:
    """DeleteShareGroupOffsets v0 of whole ``topics``."""
    request: Any = DeleteShareGroupOffsetsRequest
    names = [request.DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in dict.fromkeys(topics)]
    return request(group_id=group_id, topics=names, max_version=0)


def delete_share_offsets_response_value(message: Any) -> sga.ShareOffsetsDeleted:
    """A kafka-python DeleteShareGroupOffsets response as a value."""
    return sga.ShareOffsetsDeleted(
        error_code=message.error_code, error_message=message.error_message,
        topics={t.topic_name: t.error_code for t in message.responses},
    )


def _batches(batches: tuple[sf.AcknowledgementBatch, ...]) -> list[dict[str, Any]]:
    return [{"first_offset": b.first_offset, "last_offset": b.last_offset,
             "acknowledge_types": list(b.acknowledge_types)} for b in batches]


def _by_topic(partitions: typing.Iterable[Any], entry: typing.Callable[[Any], Any]) -> list[dict[str, Any]]:
    topics: dict[uuid.UUID, list[Any]] = {}
    for p in partitions:
        topics.setdefault(p.topic_id, []).append(entry(p))
    return [{"topic_id": topic_id, "partitions": parts} for topic_id, parts in topics.items()]


def share_fetch_request_message(value: sf.ShareFetchRequest) -> Any:
    """The kafka-python ShareFetch request for ``value``, at most at ``value.api_version`` and at least v1.

    A v1 connection drops v2's ``ShareAcquireMode`` and ``IsRenewAck`` (the broker then
    acquires batch-optimized).
    """
    body = {
        "group_id": value.group_id, "member_id": value.member_id, "share_session_epoch": value.share_session_epoch,
        "max_wait_ms": value.max_wait_ms, "min_bytes": value.min_bytes, "max_bytes": value.max_bytes,
        "max_records": value.max_records, "batch_size": value.batch_size,
        "share_acquire_mode": value.share_acquire_mode, "is_renew_ack": value.is_renew_ack,
        "topics": _by_topic(value.partitions, lambda p: {
            "partition_index": p.partition, "acknowledgement_batches": _batches(p.acknowledgement_batches)}),
        "forgotten_topics_data": [
            {"topic_id": topic_id, "partitions": sorted(p for t, p in value.forgotten if t == topic_id)}
            for topic_id in dict.fromkeys(t for t, _ in value.forgotten)
        ],
    }
    return build_message(ShareFetchRequest, body, max_version=value.api_version, min_version=sf.OLDEST_VERSION)


def share_fetch_response_value(message: Any) -> sf.ShareFetchResponse:
    """The value of a decoded kafka-python ShareFetch response (the record bytes copied out)."""
    body = plain(message.to_dict(json=False))
    partitions = tuple(
        sf.ShareFetchPartitionData(
            topic_id=topic["topic_id"], partition=p["partition_index"], error_code=p["error_code"],
            error_message=p["error_message"], acknowledge_error_code=p["acknowledge_error_code"],
            acknowledge_error_message=p["acknowledge_error_message"],
            leader_id=p["current_leader"]["leader_id"], leader_epoch=p["current_leader"]["leader_epoch"],
            records=p["records"],
            acquired_records=tuple(sf.AcquiredRecords(a["first_offset"], a["last_offset"], a["delivery_count"])
                                   for a in p["acquired_records"]),
        )
        for topic in body["responses"] for p in topic["partitions"]
    )
    return sf.ShareFetchResponse(
        error_code=body["error_code"], error_message=body["error_message"],
        acquisition_lock_timeout_ms=body["acquisition_lock_timeout_ms"], throttle_time_ms=body["throttle_time_ms"],
        partitions=partitions, api_version=int(message.API_VERSION),
    )


def share_acknowledge_request_message(value: sf.ShareAcknowledgeRequest) -> Any:
    """The kafka-python ShareAcknowledge request for ``value``, at most at ``value.api_version`` and at least v1."""
    body = {
        "group_id": value.group_id, "member_id": value.member_id, "share_session_epoch": value.share_session_epoch,
        "is_renew_ack": value.is_renew_ack,
        "topics": _by_topic(value.partitions, lambda p: {
            "partition_index": p.partition, "acknowledgement_batches": _batches(p.batches)}),
    }
    min_version = sf.RECORD_LIMIT_VERSION if value.is_renew_ack else sf.OLDEST_VERSION
    return build_message(ShareAcknowledgeRequest, body, max_version=value.api_version, min_version=min_version)


def share_acknowledge_response_value(message: Any) -> sf.ShareAcknowledgeResponse:
    """The value of a decoded kafka-python ShareAcknowledge response."""
    body = plain(message.to_dict(json=False))
    partitions = tuple(
        sf.ShareAcknowledgePartition(
            topic_id=topic["topic_id"], partition=p["partition_index"], error_code=p["error_code"],
            error_message=p["error_message"], leader_id=p["current_leader"]["leader_id"],
            leader_epoch=p["current_leader"]["leader_epoch"],
        )
        for topic in body["responses"] for p in topic["partitions"]
    )
    return sf.ShareAcknowledgeResponse(
        error_code=body["error_code"], error_message=body["error_message"], throttle_time_ms=body["throttle_time_ms"],
        acquisition_lock_timeout_ms=body.get("acquisition_lock_timeout_ms"), partitions=partitions,
        api_version=int(message.API_VERSION),
    )
