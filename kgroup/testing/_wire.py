"""Wire bodies (dicts) <-> the coordinator model's request and response types.

The proxy (:mod:`kgroup.testing.proxy`) decodes a request frame with the frame codec
(:func:`kgroup._io.kafka_frames.decode_request_body`) into a dict with Kafka's snake_case field
names, maps it here to the model's types (:mod:`kgroup.testing.coordinator._types`), and maps the
model's answer back to a dict for :func:`~kgroup._io.kafka_frames.encode_response`. Nothing here
imports ``kafka``.

Every function takes the ``api_version`` the message travels at. Dicts produced here carry every
field of the message; the encoder drops those outside the version. Version rules applied:

* JoinGroup v0 has no ``rebalance_timeout_ms``: Kafka uses ``session_timeout_ms`` for it.
  ``protocol_name`` is non-nullable before v7 (null goes out as ``""``).
* LeaveGroup v0-2 carries one ``member_id``; it becomes the single entry of ``members``.
* OffsetFetch v8+ (KIP-709) batches groups: one model request per group, answers reassembled in
  request order. Before v2 there is no top-level ``error_code``: a group-level error is copied
  into every partition (taken from the request when the model returned none), as Kafka does.
* The request batch forms always come in as tuples: :func:`requests_from_dict` returns one model
  request for every API except OffsetFetch v8+, which returns one per group.
* DeleteGroups (API 42) is mapped too (:data:`ALL_MODEL_METHODS`), but it is not in
  :data:`MODEL_METHODS`: the proxy does not serve it (it forwards it to the broker).

Kafka's string limit: every STRING field of every request is read by Kafka's generated
``Readable`` code, which throws on a length above ``0x7fff`` bytes ("string field X had invalid
length"); ``RequestContext.parseRequest`` turns that into an ``InvalidRequestException`` and
``SocketServer``'s processor closes the connection without answering. Compact (flexible-version)
strings can carry more on the wire, and kafka-python decodes them; :func:`check_string_lengths`
applies Kafka's limit to a decoded body.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kgroup.testing.coordinator import _codes
from kgroup.testing.coordinator._types import (
    NO_GENERATION,
    CommitPartition,
    CommitPartitionResult,
    CommitTopic,
    CommitTopicResult,
    DeletedGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    FetchPartitionResult,
    FetchTopic,
    FetchTopicResult,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeaveMember,
    LeaveMemberResult,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)

__all__ = [
    "ALL_MODEL_METHODS",
    "DELETE_GROUPS",
    "DESCRIBE_GROUPS",
    "FIND_COORDINATOR",
    "HEARTBEAT",
    "JOIN_GROUP",
    "LEAVE_GROUP",
    "LIST_GROUPS",
    "MAX_STRING_BYTES",
    "MODEL_METHODS",
    "MODEL_VERSIONS",
    "OFFSET_COMMIT",
    "OFFSET_FETCH",
    "SYNC_GROUP",
    "MalformedRequestError",
    "ModelRequest",
    "ModelResponse",
    "check_string_lengths",
    "error_responses",
    "requests_from_dict",
    "requests_to_dict",
    "responses_from_dict",
    "responses_to_dict",
]

OFFSET_COMMIT: Final = 8
OFFSET_FETCH: Final = 9
FIND_COORDINATOR: Final = 10
JOIN_GROUP: Final = 11
HEARTBEAT: Final = 12
LEAVE_GROUP: Final = 13
SYNC_GROUP: Final = 14
DESCRIBE_GROUPS: Final = 15
LIST_GROUPS: Final = 16
DELETE_GROUPS: Final = 42

MAX_STRING_BYTES: Final = 0x7FFF
"""The longest STRING Kafka reads (UTF-8 bytes); a longer one makes it close the connection."""

MODEL_VERSIONS: Final[Mapping[int, tuple[int, int]]] = {
    JOIN_GROUP: (0, 9),
    SYNC_GROUP: (0, 5),
    HEARTBEAT: (0, 4),
    LEAVE_GROUP: (0, 5),
    OFFSET_COMMIT: (2, 9),
    OFFSET_FETCH: (1, 9),
    DESCRIBE_GROUPS: (0, 5),
    LIST_GROUPS: (0, 5),
}
"""The versions the coordinator model serves, per API key (before intersecting with kafka-python's)."""

MODEL_METHODS: Final[Mapping[int, str]] = {
    JOIN_GROUP: "join_group",
    SYNC_GROUP: "sync_group",
    HEARTBEAT: "heartbeat",
    LEAVE_GROUP: "leave_group",
    OFFSET_COMMIT: "offset_commit",
    OFFSET_FETCH: "offset_fetch",
    DESCRIBE_GROUPS: "describe_groups",
    LIST_GROUPS: "list_groups",
}
"""The :class:`~kgroup.testing.coordinator.GroupCoordinatorModel` method serving each API key (the proxy's set)."""

DELETE_GROUPS_VERSIONS: Final = (0, 3)
"""DeleteGroups versions the model answers (v3 only adds the response's ``error_message``)."""

ALL_MODEL_METHODS: Final[Mapping[int, str]] = {**MODEL_METHODS, DELETE_GROUPS: "delete_groups"}
"""Every API the model answers: :data:`MODEL_METHODS` plus DeleteGroups, which the proxy does not serve."""


class MalformedRequestError(ValueError):
    """A request Kafka would not parse: it closes the connection instead of answering."""


def check_string_lengths(body: Mapping[str, Any]) -> None:
    """Apply Kafka's 0x7fff-byte STRING limit to a decoded request body (nested structs included).

    Only ``str`` values are checked: BYTES fields (member metadata, assignments) have no such limit.

    Raises:
        MalformedRequestError: a string is longer; the message names its field and length.

    """
    found = _oversized_string(body)
    if found is not None:
        path, size = found
        raise MalformedRequestError(f"string field {path} had invalid length {size}")


def _oversized_string(value: Any, path: str = "") -> tuple[str, int] | None:
    """The path and UTF-8 size of the first ``str`` over :data:`MAX_STRING_BYTES`, or None."""
    if isinstance(value, str):
        size = len(value.encode("utf-8"))
        return (path, size) if size > MAX_STRING_BYTES else None
    if isinstance(value, Mapping):
        items: Any = ((f"{path}.{key}" if path else str(key), item) for key, item in value.items())
    elif isinstance(value, list | tuple):
        items = ((f"{path}[{index}]", item) for index, item in enumerate(value))
    else:
        return None
    for sub_path, item in items:
        found = _oversized_string(item, sub_path)
        if found is not None:
            return found
    return None


ModelRequest = (
    DeleteGroupsRequest
    | JoinGroupRequest
    | SyncGroupRequest
    | HeartbeatRequest
    | LeaveGroupRequest
    | OffsetCommitRequest
    | OffsetFetchRequest
    | DescribeGroupsRequest
    | ListGroupsRequest
)
ModelResponse = (
    DeleteGroupsResponse
    | JoinGroupResponse
    | SyncGroupResponse
    | HeartbeatResponse
    | LeaveGroupResponse
    | OffsetCommitResponse
    | OffsetFetchResponse
    | DescribeGroupsResponse
    | ListGroupsResponse
)

def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _bytes(value: Any) -> bytes:
    return b"" if value is None else bytes(value)


def _unsupported(api_key: int) -> ValueError:
    return ValueError(f"api key {api_key} is not served by the coordinator model")


# ----------------------------------------------------------------------------- requests: dict -> model


def requests_from_dict(
    api_key: int,
    api_version: int,
    body: Mapping[str, Any],
    *,
    client_id: str = "",
    client_host: str = "/127.0.0.1",
) -> tuple[ModelRequest, ...]:
    """The model request(s) of a decoded request body.

    Args:
        api_key: the request's API key (one of :data:`MODEL_METHODS`).
        api_version: the version it was encoded at.
        body: the body dict from the adapter's ``decode_request_body``.
        client_id: the header's client id (JoinGroup records it for DescribeGroups).
        client_host: ``"/" + ip`` of the connection, as Kafka reports it.

    Returns:
        One request, or one per group for OffsetFetch v8+.

    Raises:
        ValueError: the API is not a model API.

    """
    v = api_version
    if api_key == JOIN_GROUP:
        session = int(body["session_timeout_ms"])
        return (
            JoinGroupRequest(
                api_version=v,
                group_id=body["group_id"],
                session_timeout_ms=session,
                rebalance_timeout_ms=int(body["rebalance_timeout_ms"]) if v >= 1 else session,
                member_id=body["member_id"],
                group_instance_id=_opt_str(body.get("group_instance_id")) if v >= 5 else None,
                protocol_type=body["protocol_type"],
                protocols=tuple((p["name"], _bytes(p["metadata"])) for p in body["protocols"] or ()),
                reason=_opt_str(body.get("reason")) if v >= 8 else None,
                client_id=client_id,
                client_host=client_host,
            ),
        )
    if api_key == SYNC_GROUP:
        return (
            SyncGroupRequest(
                api_version=v,
                group_id=body["group_id"],
                generation_id=int(body["generation_id"]),
                member_id=body["member_id"],
                group_instance_id=_opt_str(body.get("group_instance_id")) if v >= 3 else None,
                protocol_type=_opt_str(body.get("protocol_type")) if v >= 5 else None,
                protocol_name=_opt_str(body.get("protocol_name")) if v >= 5 else None,
                assignments=tuple(
                    SyncGroupAssignment(member_id=a["member_id"], assignment=_bytes(a["assignment"]))
                    for a in body["assignments"] or ()
                ),
            ),
        )
    if api_key == HEARTBEAT:
        return (
            HeartbeatRequest(
                api_version=v,
                group_id=body["group_id"],
                generation_id=int(body["generation_id"]),
                member_id=body["member_id"],
                group_instance_id=_opt_str(body.get("group_instance_id")) if v >= 3 else None,
            ),
        )
    if api_key == LEAVE_GROUP:
        if v < 3:
            members: tuple[LeaveMember, ...] = (LeaveMember(member_id=body["member_id"]),)
        else:
            members = tuple(
                LeaveMember(
                    member_id=m["member_id"],
                    group_instance_id=_opt_str(m.get("group_instance_id")),
                    reason=_opt_str(m.get("reason")) if v >= 5 else None,
                )
                for m in body["members"] or ()
            )
        return (LeaveGroupRequest(api_version=v, group_id=body["group_id"], members=members),)
    if api_key == OFFSET_COMMIT:
        return (
            OffsetCommitRequest(
                api_version=v,
                group_id=body["group_id"],
                generation_id=int(body.get("generation_id_or_member_epoch", NO_GENERATION)),
                member_id=body.get("member_id", ""),
                group_instance_id=_opt_str(body.get("group_instance_id")) if v >= 7 else None,
                topics=tuple(
                    CommitTopic(
                        name=t["name"],
                        partitions=tuple(
                            CommitPartition(
                                partition_index=int(p["partition_index"]),
                                committed_offset=int(p["committed_offset"]),
                                committed_leader_epoch=int(p.get("committed_leader_epoch", -1)) if v >= 6 else -1,
                                committed_metadata=_opt_str(p.get("committed_metadata")),
                            )
                            for p in t["partitions"] or ()
                        ),
                    )
                    for t in body["topics"] or ()
                ),
            ),
        )
    if api_key == OFFSET_FETCH:
        stable = bool(body.get("require_stable", False)) if v >= 7 else False
        if v >= 8:
            return tuple(
                OffsetFetchRequest(
                    api_version=v,
                    group_id=g["group_id"],
                    topics=_fetch_topics(g.get("topics")),
                    require_stable=stable,
                )
                for g in body["groups"] or ()
            )
        topics = body.get("topics")
        return (
            OffsetFetchRequest(
                api_version=v,
                group_id=body["group_id"],
                topics=_fetch_topics(topics if topics is not None or v >= 2 else []),
                require_stable=stable,
            ),
        )
    if api_key == DESCRIBE_GROUPS:
        return (
            DescribeGroupsRequest(
                api_version=v,
                groups=tuple(body["groups"] or ()),
                include_authorized_operations=v >= 3 and bool(body.get("include_authorized_operations", False)),
            ),
        )
    if api_key == LIST_GROUPS:
        return (
            ListGroupsRequest(
                api_version=v,
                states_filter=tuple(body.get("states_filter") or ()) if v >= 4 else (),
                types_filter=tuple(body.get("types_filter") or ()) if v >= 5 else (),
            ),
        )
    if api_key == DELETE_GROUPS:
        return (DeleteGroupsRequest(api_version=v, groups=tuple(body["groups_names"] or ())),)
    raise _unsupported(api_key)


def _fetch_topics(topics: Sequence[Mapping[str, Any]] | None) -> tuple[FetchTopic, ...] | None:
    if topics is None:
        return None
    return tuple(
        FetchTopic(name=t["name"], partition_indexes=tuple(int(p) for p in t["partition_indexes"] or ()))
        for t in topics
    )


# ----------------------------------------------------------------------------- requests: model -> dict


def requests_to_dict(api_key: int, api_version: int, requests: Sequence[ModelRequest]) -> dict[str, Any]:
    """The body dict of model request(s) (the inverse of :func:`requests_from_dict`; for tests and clients).

    Raises:
        ValueError: the API is not a model API, or several requests for an API without a batch form.

    """
    v = api_version
    if api_key == OFFSET_FETCH:
        fetches = [r for r in requests if isinstance(r, OffsetFetchRequest)]
        if v >= 8:
            return {
                "groups": [
                    {"group_id": r.group_id, "member_id": None, "member_epoch": -1, "topics": _fetch_topics_dict(r)}
                    for r in fetches
                ],
                "require_stable": any(r.require_stable for r in fetches),
            }
        if len(fetches) != 1:
            raise ValueError(f"OffsetFetch v{v} carries exactly one group")
        (r,) = fetches
        return {"group_id": r.group_id, "topics": _fetch_topics_dict(r), "require_stable": r.require_stable}
    if len(requests) != 1:
        raise ValueError(f"api key {api_key} carries exactly one request")
    req = requests[0]
    if isinstance(req, JoinGroupRequest):
        return {
            "group_id": req.group_id,
            "session_timeout_ms": req.session_timeout_ms,
            "rebalance_timeout_ms": req.rebalance_timeout_ms,
            "member_id": req.member_id,
            "group_instance_id": req.group_instance_id,
            "protocol_type": req.protocol_type,
            "protocols": [{"name": name, "metadata": metadata} for name, metadata in req.protocols],
            "reason": req.reason,
        }
    if isinstance(req, SyncGroupRequest):
        return {
            "group_id": req.group_id,
            "generation_id": req.generation_id,
            "member_id": req.member_id,
            "group_instance_id": req.group_instance_id,
            "protocol_type": req.protocol_type,
            "protocol_name": req.protocol_name,
            "assignments": [{"member_id": a.member_id, "assignment": a.assignment} for a in req.assignments],
        }
    if isinstance(req, HeartbeatRequest):
        return {
            "group_id": req.group_id,
            "generation_id": req.generation_id,
            "member_id": req.member_id,
            "group_instance_id": req.group_instance_id,
        }
    if isinstance(req, LeaveGroupRequest):
        return {
            "group_id": req.group_id,
            "member_id": req.members[0].member_id if req.members else "",
            "members": [
                {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "reason": m.reason}
                for m in req.members
            ],
        }
    if isinstance(req, OffsetCommitRequest):
        return {
            "group_id": req.group_id,
            "generation_id_or_member_epoch": req.generation_id,
            "member_id": req.member_id,
            "group_instance_id": req.group_instance_id,
            "retention_time_ms": -1,
            "topics": [
                {
                    "name": t.name,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "committed_offset": p.committed_offset,
                            "committed_leader_epoch": p.committed_leader_epoch,
                            "committed_metadata": p.committed_metadata,
                        }
                        for p in t.partitions
                    ],
                }
                for t in req.topics
            ],
        }
    if isinstance(req, DescribeGroupsRequest):
        return {"groups": list(req.groups), "include_authorized_operations": req.include_authorized_operations}
    if isinstance(req, ListGroupsRequest):
        return {"states_filter": list(req.states_filter), "types_filter": list(req.types_filter)}
    if isinstance(req, DeleteGroupsRequest):
        return {"groups_names": list(req.groups)}
    raise _unsupported(api_key)


def _fetch_topics_dict(req: OffsetFetchRequest) -> list[dict[str, Any]] | None:
    if req.topics is None:
        return None
    return [{"name": t.name, "partition_indexes": list(t.partition_indexes)} for t in req.topics]


# ----------------------------------------------------------------------------- responses: model -> dict


def responses_to_dict(
    api_key: int,
    api_version: int,
    responses: Sequence[ModelResponse],
    requests: Sequence[ModelRequest] = (),
) -> dict[str, Any]:
    """The body dict answering model request(s).

    A response Kafka could not serialize, because a STRING in it is longer than 0x7fff bytes (a
    member id made of a group instance id near the limit and a UUID), is replaced by the error
    response Kafka sends then: ``"'leader' field is too long to be serialized"`` fails the request
    and ``KafkaApis`` answers it with ``getErrorResponse``, UNKNOWN_SERVER_ERROR (a JoinGroup with
    no member id). This needs ``requests``.

    Args:
        api_key: the API key.
        api_version: the version of the request being answered.
        responses: one response, or one per group for OffsetFetch v8+ (in request order).
        requests: the matching requests; OffsetFetch needs them for the group ids of v8+ and to
            spread a group-level error over the requested partitions before v2.

    Raises:
        ValueError: the API is not a model API, or the response count does not fit.

    """
    body = _responses_to_dict(api_key, api_version, responses, requests)
    if requests and _oversized_string(body) is not None:
        errors = tuple(
            JoinGroupResponse(error_code=_codes.UNKNOWN_SERVER_ERROR) if isinstance(r, JoinGroupRequest) else r
            for r in error_responses(requests, _codes.UNKNOWN_SERVER_ERROR)
        )
        body = _responses_to_dict(api_key, api_version, errors, requests)
    return body


def _responses_to_dict(
    api_key: int,
    api_version: int,
    responses: Sequence[ModelResponse],
    requests: Sequence[ModelRequest],
) -> dict[str, Any]:
    v = api_version
    if api_key == OFFSET_FETCH:
        fetches = [r for r in responses if isinstance(r, OffsetFetchResponse)]
        reqs = [r for r in requests if isinstance(r, OffsetFetchRequest)]
        if v >= 8:
            if len(reqs) != len(fetches):
                raise ValueError("OffsetFetch v8+ needs the requests to name the groups")
            return {
                "throttle_time_ms": 0,
                "groups": [
                    {"group_id": q.group_id, "topics": _fetch_results_dict(r.topics), "error_code": r.error_code}
                    for q, r in zip(reqs, fetches, strict=True)
                ],
            }
        if len(fetches) != 1:
            raise ValueError(f"OffsetFetch v{v} answers exactly one group")
        (fetched,) = fetches
        topics = fetched.topics
        if v < 2 and fetched.error_code != 0:
            topics = _spread_fetch_error(fetched, reqs[0] if reqs else None)
        return {"throttle_time_ms": 0, "topics": _fetch_results_dict(topics), "error_code": fetched.error_code}
    if len(responses) != 1:
        raise ValueError(f"api key {api_key} answers with exactly one response")
    resp = responses[0]
    if isinstance(resp, JoinGroupResponse):
        return {
            "throttle_time_ms": 0,
            "error_code": resp.error_code,
            "generation_id": resp.generation_id,
            "protocol_type": resp.protocol_type,
            "protocol_name": resp.protocol_name if v >= 7 else (resp.protocol_name or ""),
            "leader": resp.leader,
            "skip_assignment": resp.skip_assignment,
            "member_id": resp.member_id,
            "members": [
                {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "metadata": m.metadata}
                for m in resp.members
            ],
        }
    if isinstance(resp, SyncGroupResponse):
        return {
            "throttle_time_ms": 0,
            "error_code": resp.error_code,
            "protocol_type": resp.protocol_type,
            "protocol_name": resp.protocol_name,
            "assignment": resp.assignment,
        }
    if isinstance(resp, HeartbeatResponse):
        return {"throttle_time_ms": 0, "error_code": resp.error_code}
    if isinstance(resp, LeaveGroupResponse):
        return {
            "throttle_time_ms": 0,
            "error_code": resp.error_code,
            "members": [
                {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "error_code": m.error_code}
                for m in resp.members
            ],
        }
    if isinstance(resp, OffsetCommitResponse):
        return {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": t.name,
                    "partitions": [
                        {"partition_index": p.partition_index, "error_code": p.error_code} for p in t.partitions
                    ],
                }
                for t in resp.topics
            ],
        }
    if isinstance(resp, DescribeGroupsResponse):
        return {
            "throttle_time_ms": 0,
            "groups": [
                {
                    "error_code": g.error_code,
                    "error_message": g.error_message,
                    "group_id": g.group_id,
                    "group_state": g.group_state,
                    "protocol_type": g.protocol_type,
                    "protocol_data": g.protocol_data,
                    "members": [
                        {
                            "member_id": m.member_id,
                            "group_instance_id": m.group_instance_id,
                            "client_id": m.client_id,
                            "client_host": m.client_host,
                            "member_metadata": m.member_metadata,
                            "member_assignment": m.member_assignment,
                        }
                        for m in g.members
                    ],
                    # None: left to the schema default, INT32 MIN, "not requested"
                    **_operations_dict(g.authorized_operations),
                }
                for g in resp.groups
            ],
        }
    if isinstance(resp, ListGroupsResponse):
        return {
            "throttle_time_ms": 0,
            "error_code": resp.error_code,
            "groups": [
                {
                    "group_id": g.group_id,
                    "protocol_type": g.protocol_type,
                    "group_state": g.group_state,
                    "group_type": g.group_type,
                }
                for g in resp.groups
            ],
        }
    if isinstance(resp, DeleteGroupsResponse):
        return {
            "throttle_time_ms": 0,
            "results": [
                {"group_id": r.group_id, "error_code": r.error_code, "error_message": None} for r in resp.results
            ],
        }
    raise _unsupported(api_key)


def _spread_fetch_error(resp: OffsetFetchResponse, req: OffsetFetchRequest | None) -> tuple[FetchTopicResult, ...]:
    """OffsetFetch v0-1 has no top-level error: every partition carries it."""
    code = resp.error_code
    if resp.topics:
        return tuple(
            FetchTopicResult(
                name=t.name,
                partitions=tuple(
                    FetchPartitionResult(
                        partition_index=p.partition_index,
                        committed_offset=p.committed_offset,
                        committed_leader_epoch=p.committed_leader_epoch,
                        metadata=p.metadata,
                        error_code=p.error_code or code,
                    )
                    for p in t.partitions
                ),
            )
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


def _fetch_results_dict(topics: Sequence[FetchTopicResult]) -> list[dict[str, Any]]:
    return [
        {
            "name": t.name,
            "partitions": [
                {
                    "partition_index": p.partition_index,
                    "committed_offset": p.committed_offset,
                    "committed_leader_epoch": p.committed_leader_epoch,
                    "metadata": p.metadata,
                    "error_code": p.error_code,
                }
                for p in t.partitions
            ],
        }
        for t in topics
    ]


# ----------------------------------------------------------------------------- responses: dict -> model


def responses_from_dict(api_key: int, api_version: int, body: Mapping[str, Any]) -> tuple[ModelResponse, ...]:
    """The model response(s) in a decoded response body (for tests and raw clients).

    Returns:
        One response, or one per group for OffsetFetch v8+.

    Raises:
        ValueError: the API is not a model API.

    """
    v = api_version
    if api_key == JOIN_GROUP:
        return (
            JoinGroupResponse(
                error_code=int(body["error_code"]),
                generation_id=int(body["generation_id"]),
                protocol_type=_opt_str(body.get("protocol_type")) if v >= 7 else None,
                protocol_name=_opt_str(body.get("protocol_name")),
                leader=body["leader"],
                skip_assignment=bool(body.get("skip_assignment", False)) if v >= 9 else False,
                member_id=body["member_id"],
                members=tuple(
                    JoinGroupMember(
                        member_id=m["member_id"],
                        group_instance_id=_opt_str(m.get("group_instance_id")) if v >= 5 else None,
                        metadata=_bytes(m["metadata"]),
                    )
                    for m in body["members"] or ()
                ),
            ),
        )
    if api_key == SYNC_GROUP:
        return (
            SyncGroupResponse(
                error_code=int(body["error_code"]),
                protocol_type=_opt_str(body.get("protocol_type")) if v >= 5 else None,
                protocol_name=_opt_str(body.get("protocol_name")) if v >= 5 else None,
                assignment=_bytes(body["assignment"]),
            ),
        )
    if api_key == HEARTBEAT:
        return (HeartbeatResponse(error_code=int(body["error_code"])),)
    if api_key == LEAVE_GROUP:
        return (
            LeaveGroupResponse(
                error_code=int(body["error_code"]),
                members=tuple(
                    LeaveMemberResult(
                        member_id=m["member_id"],
                        group_instance_id=_opt_str(m.get("group_instance_id")),
                        error_code=int(m["error_code"]),
                    )
                    for m in (body.get("members") or ())
                )
                if v >= 3
                else (),
            ),
        )
    if api_key == OFFSET_COMMIT:
        return (
            OffsetCommitResponse(
                topics=tuple(
                    CommitTopicResult(
                        name=t["name"],
                        partitions=tuple(
                            CommitPartitionResult(
                                partition_index=int(p["partition_index"]), error_code=int(p["error_code"])
                            )
                            for p in t["partitions"] or ()
                        ),
                    )
                    for t in body["topics"] or ()
                ),
            ),
        )
    if api_key == OFFSET_FETCH:
        if v >= 8:
            return tuple(
                OffsetFetchResponse(error_code=int(g.get("error_code", 0)), topics=_fetch_results(g["topics"], v))
                for g in body["groups"] or ()
            )
        return (
            OffsetFetchResponse(
                error_code=int(body.get("error_code", 0)) if v >= 2 else 0, topics=_fetch_results(body["topics"], v)
            ),
        )
    if api_key == DESCRIBE_GROUPS:
        return (
            DescribeGroupsResponse(
                groups=tuple(
                    DescribedGroup(
                        error_code=int(g["error_code"]),
                        error_message=_opt_str(g.get("error_message")) if v >= 6 else None,
                        authorized_operations=_operations(g.get("authorized_operations")) if v >= 3 else None,
                        group_id=g["group_id"],
                        group_state=g["group_state"],
                        protocol_type=g["protocol_type"],
                        protocol_data=g["protocol_data"],
                        members=tuple(
                            DescribedMember(
                                member_id=m["member_id"],
                                group_instance_id=_opt_str(m.get("group_instance_id")) if v >= 4 else None,
                                client_id=m["client_id"],
                                client_host=m["client_host"],
                                member_metadata=_bytes(m["member_metadata"]),
                                member_assignment=_bytes(m["member_assignment"]),
                            )
                            for m in g["members"] or ()
                        ),
                    )
                    for g in body["groups"] or ()
                )
            ),
        )
    if api_key == LIST_GROUPS:
        return (
            ListGroupsResponse(
                error_code=int(body["error_code"]),
                groups=tuple(
                    ListedGroup(
                        group_id=g["group_id"],
                        protocol_type=g["protocol_type"],
                        group_state=g.get("group_state", "") if v >= 4 else "",
                        group_type=g.get("group_type", "classic") if v >= 5 else "classic",
                    )
                    for g in body["groups"] or ()
                ),
            ),
        )
    if api_key == DELETE_GROUPS:
        return (
            DeleteGroupsResponse(
                results=tuple(
                    DeletedGroupResult(group_id=r["group_id"], error_code=int(r["error_code"]))
                    for r in body["results"] or ()
                )
            ),
        )
    raise _unsupported(api_key)


def _operations_dict(operations: frozenset[int] | None) -> dict[str, Any]:
    return {} if operations is None else {"authorized_operations": set(operations)}


def _operations(value: Any) -> frozenset[int] | None:
    """kafka-python decodes the authorized-operations bitfield to a set of codes; INT32 MIN to None."""
    if value is None or isinstance(value, int):
        return None
    return frozenset(int(code) for code in value)


def _fetch_results(topics: Sequence[Mapping[str, Any]] | None, v: int) -> tuple[FetchTopicResult, ...]:
    return tuple(
        FetchTopicResult(
            name=t["name"],
            partitions=tuple(
                FetchPartitionResult(
                    partition_index=int(p["partition_index"]),
                    committed_offset=int(p["committed_offset"]),
                    committed_leader_epoch=int(p.get("committed_leader_epoch", -1)) if v >= 5 else -1,
                    metadata=_opt_str(p.get("metadata")),
                    error_code=int(p["error_code"]),
                )
                for p in t["partitions"] or ()
            ),
        )
        for t in topics or ()
    )


# ----------------------------------------------------------------------------- injected errors


def error_responses(requests: Sequence[ModelRequest], error_code: int) -> tuple[ModelResponse, ...]:
    """The responses Kafka's coordinator gives when it rejects ``requests`` with ``error_code`` as a whole.

    Per-partition and per-group answers (OffsetCommit, DescribeGroups) carry the code on every
    entry; JoinGroup echoes the request's member id; OffsetFetch uses the group-level code (spread
    over the partitions for v0-1 by :func:`responses_to_dict`).
    """
    out: list[ModelResponse] = []
    for req in requests:
        if isinstance(req, JoinGroupRequest):
            out.append(JoinGroupResponse(error_code=error_code, member_id=req.member_id))
        elif isinstance(req, SyncGroupRequest):
            out.append(SyncGroupResponse(error_code=error_code))
        elif isinstance(req, HeartbeatRequest):
            out.append(HeartbeatResponse(error_code=error_code))
        elif isinstance(req, LeaveGroupRequest):
            out.append(LeaveGroupResponse(error_code=error_code))
        elif isinstance(req, OffsetCommitRequest):
            out.append(
                OffsetCommitResponse(
                    topics=tuple(
                        CommitTopicResult(
                            name=t.name,
                            partitions=tuple(
                                CommitPartitionResult(partition_index=p.partition_index, error_code=error_code)
                                for p in t.partitions
                            ),
                        )
                        for t in req.topics
                    )
                )
            )
        elif isinstance(req, OffsetFetchRequest):
            out.append(OffsetFetchResponse(error_code=error_code))
        elif isinstance(req, DeleteGroupsRequest):
            out.append(
                DeleteGroupsResponse(
                    results=tuple(DeletedGroupResult(group_id=g, error_code=error_code) for g in req.groups)
                )
            )
        elif isinstance(req, DescribeGroupsRequest):
            out.append(
                DescribeGroupsResponse(
                    groups=tuple(
                        DescribedGroup(
                            error_code=error_code,
                            group_id=g,
                            group_state="",
                            protocol_type="",
                            protocol_data="",
                            members=(),
                        )
                        for g in req.groups
                    )
                )
            )
        else:
            out.append(ListGroupsResponse(error_code=error_code))
    return tuple(out)
