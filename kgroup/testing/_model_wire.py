"""The coordinator model on the wire: which model method answers each group API, and Kafka's rules around it.

The proxy (:mod:`kgroup.testing.proxy`) and the conformance tests decode a request frame with
the frame codec (:mod:`kgroup._io.kafka_frames`), map its body to request values with the one
group-API mapping (:func:`kgroup._io.kafka_messages.requests_from_body`), call the model method
:data:`MODEL_METHODS` names, and encode the answer with :func:`answer_body`. This module holds
what a Kafka broker adds around its coordinator:

* the versions the model serves (:data:`MODEL_VERSIONS`; the proxy advertises these, intersected
  with kafka-python's);
* Kafka's string limit: every STRING field of every request is read by Kafka's generated
  ``Readable`` code, which throws on a length above ``0x7fff`` bytes ("string field X had
  invalid length"); ``RequestContext.parseRequest`` turns that into an
  ``InvalidRequestException`` and ``SocketServer``'s processor closes the connection without
  answering. Compact (flexible-version) strings can carry more on the wire, and kafka-python
  decodes them; :func:`check_string_lengths` applies Kafka's limit to a decoded body;
* the answer Kafka gives when it rejects a whole request (:func:`error_responses`) or cannot
  serialize its own answer (:func:`answer_body`).

DeleteGroups (API 42) is answered by the model too (:data:`ALL_MODEL_METHODS`), but it is not in
:data:`MODEL_METHODS`: the proxy does not serve it (it forwards it to the broker).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from kgroup import _error_codes as codes
from kgroup._io.kafka_messages import response_body
from kgroup.protocol import group_api as api

__all__ = [
    "ALL_MODEL_METHODS",
    "DELETE_GROUPS_VERSIONS",
    "MAX_STRING_BYTES",
    "MODEL_METHODS",
    "MODEL_VERSIONS",
    "MalformedRequestError",
    "answer_body",
    "check_string_lengths",
    "error_responses",
]

MAX_STRING_BYTES: Final = 0x7FFF
"""The longest STRING Kafka reads (UTF-8 bytes); a longer one makes it close the connection."""

MODEL_VERSIONS: Final[Mapping[int, tuple[int, int]]] = {
    api.JOIN_GROUP: (0, 9),
    api.SYNC_GROUP: (0, 5),
    api.HEARTBEAT: (0, 4),
    api.LEAVE_GROUP: (0, 5),
    api.OFFSET_COMMIT: (2, 9),
    api.OFFSET_FETCH: (1, 9),
    api.DESCRIBE_GROUPS: (0, 5),
    api.LIST_GROUPS: (0, 5),
}
"""The versions the coordinator model serves, per API key (before intersecting with kafka-python's)."""

MODEL_METHODS: Final[Mapping[int, str]] = {
    api.JOIN_GROUP: "join_group",
    api.SYNC_GROUP: "sync_group",
    api.HEARTBEAT: "heartbeat",
    api.LEAVE_GROUP: "leave_group",
    api.OFFSET_COMMIT: "offset_commit",
    api.OFFSET_FETCH: "offset_fetch",
    api.DESCRIBE_GROUPS: "describe_groups",
    api.LIST_GROUPS: "list_groups",
}
"""The :class:`~kgroup.testing.coordinator.GroupCoordinatorModel` method serving each API key (the proxy's set)."""

DELETE_GROUPS_VERSIONS: Final = (0, 3)
"""DeleteGroups versions the model answers (v3 only adds the response's ``error_message``)."""

ALL_MODEL_METHODS: Final[Mapping[int, str]] = {**MODEL_METHODS, api.DELETE_GROUPS: "delete_groups"}
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


def answer_body(
    api_key: int, api_version: int, responses: Sequence[api.GroupResponse], requests: Sequence[api.GroupRequest]
) -> dict[str, Any]:
    """The body answering ``requests`` with the model's ``responses``, as Kafka would send it.

    A response Kafka could not serialize, because a STRING in it is longer than 0x7fff bytes (a
    member id made of a group instance id near the limit and a UUID), is replaced by the error
    response Kafka sends then: ``"'leader' field is too long to be serialized"`` fails the request
    and ``KafkaApis`` answers it with ``getErrorResponse``, UNKNOWN_SERVER_ERROR (here through
    :func:`error_responses`, so a JoinGroup answer echoes the request's member id).

    Raises:
        ValueError: the response count does not fit (see
            :func:`~kgroup._io.kafka_messages.response_body`).

    """
    body = response_body(api_key, api_version, responses, requests)
    if requests and _oversized_string(body) is not None:
        errors = error_responses(requests, codes.UNKNOWN_SERVER_ERROR)
        body = response_body(api_key, api_version, errors, requests)
    return body


#: the requests whose rejection carries the code alone, and their answers
_CODE_ONLY: Final[tuple[tuple[type[api.GroupRequest], Callable[..., api.GroupResponse]], ...]] = (
    (api.SyncGroupRequest, api.SyncGroupResponse),
    (api.HeartbeatRequest, api.HeartbeatResponse),
    (api.LeaveGroupRequest, api.LeaveGroupResponse),
    (api.OffsetFetchRequest, api.OffsetFetchResponse),
    (api.FindCoordinatorRequest, api.FindCoordinatorResponse),
)


def _code_only(req: api.GroupRequest, error_code: int) -> api.GroupResponse | None:
    """The answer that is ``error_code`` alone, for a request of ``_CODE_ONLY``; else None."""
    for request_type, response_type in _CODE_ONLY:
        if isinstance(req, request_type):
            return response_type(error_code=error_code)
    return None


def error_responses(requests: Sequence[api.GroupRequest], error_code: int) -> tuple[api.GroupResponse, ...]:
    """The responses Kafka's coordinator gives when it rejects ``requests`` with ``error_code`` as a whole.

    Per-partition and per-group answers (OffsetCommit, DescribeGroups, DeleteGroups) carry the
    code on every entry; JoinGroup echoes the request's member id; OffsetFetch uses the
    group-level code (spread over the partitions before v2 by the mapping); FindCoordinator
    names no node.
    """
    out: list[api.GroupResponse] = []
    for req in requests:
        if isinstance(req, api.JoinGroupRequest):
            out.append(api.JoinGroupResponse(error_code=error_code, member_id=req.member_id))
        elif (code_only := _code_only(req, error_code)) is not None:
            out.append(code_only)
        elif isinstance(req, api.OffsetCommitRequest):
            out.append(
                api.OffsetCommitResponse(
                    topics=tuple(
                        api.CommitTopicResult(
                            name=t.name,
                            partitions=tuple(
                                api.CommitPartitionResult(partition_index=p.partition_index, error_code=error_code)
                                for p in t.partitions
                            ),
                        )
                        for t in req.topics
                    )
                )
            )
        elif isinstance(req, api.DeleteGroupsRequest):
            out.append(
                api.DeleteGroupsResponse(
                    results=tuple(api.DeletedGroupResult(group_id=g, error_code=error_code) for g in req.groups)
                )
            )
        elif isinstance(req, api.DescribeGroupsRequest):
            out.append(
                api.DescribeGroupsResponse(
                    groups=tuple(
                        api.DescribedGroup(
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
            out.append(api.ListGroupsResponse(error_code=error_code))
    return tuple(out)
