"""The group-API mapping (kgroup._io.kafka_messages) and the frame codec: round trips through kafka-python.

Each request/response value is mapped to a body dict, encoded by kafka-python's own message
classes (through ``kgroup._io.kafka_frames``), decoded again and mapped back, at every version
the coordinator model serves; the result must be the original projected onto what that version
carries. The projections below are written out by hand, independently of the mapping's
schema-driven rules, so they check them.
"""

from __future__ import annotations

import re

import attrs
import pytest

from kgroup._io import kafka_frames as frames
from kgroup._io import kafka_messages
from kgroup.membership import events as ev
from kgroup.membership.commands import SendHeartbeat, SendJoinGroup, SendLeaveGroup, SendSyncGroup
from kgroup.protocol import group_api
from kgroup.protocol.group_api import (
    CommitPartition,
    CommitPartitionResult,
    CommitTopic,
    CommitTopicResult,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    FetchPartitionResult,
    FetchTopic,
    FetchTopicResult,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
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
from kgroup.testing import _model_wire

CLIENT = "client-1"
HOST = "/127.0.0.1"


def served_versions(api_key):
    low, high = _model_wire.MODEL_VERSIONS[api_key]
    kp_low, kp_high = frames.api_version_range(api_key)
    return list(range(max(low, kp_low), min(high, kp_high) + 1))


def versions_of(api_key):
    return [pytest.param(api_key, v, id=f"{frames.api_name(api_key)}-v{v}") for v in served_versions(api_key)]


ALL_VERSIONS = [p for key in sorted(_model_wire.MODEL_VERSIONS) for p in versions_of(key)]


# ----------------------------------------------------------------------------- samples and projections


def sample_requests(api_key, v):
    if api_key == group_api.JOIN_GROUP:
        return (
            JoinGroupRequest(
                api_version=v,
                group_id="g",
                session_timeout_ms=10000,
                rebalance_timeout_ms=45000,
                member_id="m-1",
                group_instance_id="static-1",
                protocol_type="consumer",
                protocols=(("cooperative-sticky", b"\x00\x01meta"), ("range", b"")),
                reason="rebalance: because",
                client_id=CLIENT,
                client_host=HOST,
            ),
        )
    if api_key == group_api.SYNC_GROUP:
        return (
            SyncGroupRequest(
                api_version=v,
                group_id="g",
                generation_id=7,
                member_id="m-1",
                group_instance_id="static-1",
                protocol_type="consumer",
                protocol_name="range",
                assignments=(
                    SyncGroupAssignment(member_id="m-1", assignment=b"\x00\x03a"),
                    SyncGroupAssignment(member_id="m-2", assignment=b""),
                ),
            ),
        )
    if api_key == group_api.HEARTBEAT:
        return (HeartbeatRequest(api_version=v, group_id="g", generation_id=3, member_id="m", group_instance_id="s"),)
    if api_key == group_api.LEAVE_GROUP:
        members = (LeaveMember(member_id="m-1", group_instance_id=None, reason="closing"),)
        if v >= 3:
            members += (LeaveMember(member_id="", group_instance_id="static-2", reason=None),)
        return (LeaveGroupRequest(api_version=v, group_id="g", members=members),)
    if api_key == group_api.OFFSET_COMMIT:
        return (
            OffsetCommitRequest(
                api_version=v,
                group_id="g",
                generation_id=4,
                member_id="m",
                group_instance_id="s",
                topics=(
                    CommitTopic(
                        name="t",
                        partitions=(
                            CommitPartition(
                                partition_index=0, committed_offset=42, committed_leader_epoch=3, committed_metadata="x"
                            ),
                            CommitPartition(partition_index=2, committed_offset=0, committed_metadata=None),
                        ),
                    ),
                    CommitTopic(name="u", partitions=(CommitPartition(partition_index=1, committed_offset=9),)),
                ),
            ),
        )
    if api_key == group_api.OFFSET_FETCH:
        first = OffsetFetchRequest(
            api_version=v,
            group_id="g",
            topics=(FetchTopic(name="t", partition_indexes=(0, 2)), FetchTopic(name="u", partition_indexes=(1,))),
            require_stable=True,
        )
        if v < 8:
            return (first,)
        return (first, OffsetFetchRequest(api_version=v, group_id="h", topics=None, require_stable=True))
    if api_key == group_api.DESCRIBE_GROUPS:
        return (DescribeGroupsRequest(api_version=v, groups=("g", "h")),)
    if api_key == group_api.LIST_GROUPS:
        return (ListGroupsRequest(api_version=v, states_filter=("Stable", "Empty"), types_filter=("classic",)),)
    raise AssertionError(api_key)


def project_request(req, v):
    """What survives a trip at version ``v``."""
    if isinstance(req, JoinGroupRequest):
        return attrs.evolve(
            req,
            rebalance_timeout_ms=req.rebalance_timeout_ms if v >= 1 else req.session_timeout_ms,
            group_instance_id=req.group_instance_id if v >= 5 else None,
            reason=req.reason if v >= 8 else None,
        )
    if isinstance(req, SyncGroupRequest):
        return attrs.evolve(
            req,
            group_instance_id=req.group_instance_id if v >= 3 else None,
            protocol_type=req.protocol_type if v >= 5 else None,
            protocol_name=req.protocol_name if v >= 5 else None,
        )
    if isinstance(req, HeartbeatRequest):
        return attrs.evolve(req, group_instance_id=req.group_instance_id if v >= 3 else None)
    if isinstance(req, LeaveGroupRequest):
        if v < 3:
            return attrs.evolve(req, members=(LeaveMember(member_id=req.members[0].member_id),))
        return attrs.evolve(
            req, members=tuple(attrs.evolve(m, reason=m.reason if v >= 5 else None) for m in req.members)
        )
    if isinstance(req, OffsetCommitRequest):
        return attrs.evolve(
            req,
            group_instance_id=req.group_instance_id if v >= 7 else None,
            topics=tuple(
                attrs.evolve(
                    t,
                    partitions=tuple(
                        attrs.evolve(p, committed_leader_epoch=p.committed_leader_epoch if v >= 6 else -1)
                        for p in t.partitions
                    ),
                )
                for t in req.topics
            ),
        )
    if isinstance(req, OffsetFetchRequest):
        return attrs.evolve(req, require_stable=req.require_stable if v >= 7 else False)
    if isinstance(req, ListGroupsRequest):
        return attrs.evolve(
            req,
            states_filter=req.states_filter if v >= 4 else (),
            types_filter=req.types_filter if v >= 5 else (),
        )
    return req


def sample_responses(api_key, v):
    if api_key == group_api.JOIN_GROUP:
        return (
            JoinGroupResponse(
                error_code=0,
                generation_id=5,
                protocol_type="consumer",
                protocol_name="range",
                leader="m-1",
                skip_assignment=True,
                member_id="m-1",
                members=(
                    JoinGroupMember(member_id="m-1", group_instance_id="static-1", metadata=b"\x00\x01"),
                    JoinGroupMember(member_id="m-2", group_instance_id=None, metadata=b""),
                ),
            ),
        )
    if api_key == group_api.SYNC_GROUP:
        return (SyncGroupResponse(error_code=0, protocol_type="consumer", protocol_name="range", assignment=b"\x01"),)
    if api_key == group_api.HEARTBEAT:
        return (HeartbeatResponse(error_code=27),)
    if api_key == group_api.LEAVE_GROUP:
        return (
            LeaveGroupResponse(
                error_code=0,
                members=(
                    LeaveMemberResult(member_id="m-1", group_instance_id=None, error_code=0),
                    LeaveMemberResult(member_id="", group_instance_id="static-2", error_code=25),
                ),
            ),
        )
    if api_key == group_api.OFFSET_COMMIT:
        return (
            OffsetCommitResponse(
                topics=(
                    CommitTopicResult(
                        name="t",
                        partitions=(
                            CommitPartitionResult(partition_index=0, error_code=0),
                            CommitPartitionResult(partition_index=2, error_code=3),
                        ),
                    ),
                )
            ),
        )
    if api_key == group_api.OFFSET_FETCH:
        first = OffsetFetchResponse(
            error_code=0,
            topics=(
                FetchTopicResult(
                    name="t",
                    partitions=(
                        FetchPartitionResult(
                            partition_index=0, committed_offset=42, committed_leader_epoch=3, metadata="x"
                        ),
                        FetchPartitionResult(partition_index=2, metadata=None, error_code=0),
                    ),
                ),
            ),
        )
        if v < 8:
            return (first,)
        return (first, OffsetFetchResponse(error_code=14))
    if api_key == group_api.DESCRIBE_GROUPS:
        return (
            DescribeGroupsResponse(
                groups=(
                    DescribedGroup(
                        error_code=0,
                        group_id="g",
                        group_state="Stable",
                        protocol_type="consumer",
                        protocol_data="range",
                        members=(
                            DescribedMember(
                                member_id="m-1",
                                group_instance_id="static-1",
                                client_id=CLIENT,
                                client_host=HOST,
                                member_metadata=b"\x00",
                                member_assignment=b"\x01\x02",
                            ),
                        ),
                    ),
                    DescribedGroup(
                        error_code=0, group_id="h", group_state="Dead", protocol_type="", protocol_data="", members=()
                    ),
                )
            ),
        )
    if api_key == group_api.LIST_GROUPS:
        return (
            ListGroupsResponse(
                error_code=0,
                groups=(
                    ListedGroup(group_id="g", protocol_type="consumer", group_state="Stable", group_type="classic"),
                    ListedGroup(group_id="h", protocol_type="", group_state="Empty"),
                ),
            ),
        )
    raise AssertionError(api_key)


def project_response(resp, v):
    if isinstance(resp, JoinGroupResponse):
        return attrs.evolve(
            resp,
            protocol_type=resp.protocol_type if v >= 7 else None,
            protocol_name=resp.protocol_name if v >= 7 else (resp.protocol_name or ""),
            skip_assignment=resp.skip_assignment if v >= 9 else False,
            members=tuple(
                attrs.evolve(m, group_instance_id=m.group_instance_id if v >= 5 else None) for m in resp.members
            ),
        )
    if isinstance(resp, SyncGroupResponse):
        return attrs.evolve(
            resp,
            protocol_type=resp.protocol_type if v >= 5 else None,
            protocol_name=resp.protocol_name if v >= 5 else None,
        )
    if isinstance(resp, LeaveGroupResponse):
        return resp if v >= 3 else attrs.evolve(resp, members=())
    if isinstance(resp, OffsetFetchResponse):
        return attrs.evolve(
            resp,
            error_code=resp.error_code if v >= 2 else 0,
            topics=tuple(
                attrs.evolve(
                    t,
                    partitions=tuple(
                        attrs.evolve(p, committed_leader_epoch=p.committed_leader_epoch if v >= 5 else -1)
                        for p in t.partitions
                    ),
                )
                for t in resp.topics
            ),
        )
    if isinstance(resp, DescribeGroupsResponse):
        return attrs.evolve(
            resp,
            groups=tuple(
                attrs.evolve(
                    g,
                    members=tuple(
                        attrs.evolve(m, group_instance_id=m.group_instance_id if v >= 4 else None) for m in g.members
                    ),
                )
                for g in resp.groups
            ),
        )
    if isinstance(resp, ListGroupsResponse):
        return attrs.evolve(
            resp,
            groups=tuple(
                attrs.evolve(
                    g,
                    group_state=g.group_state if v >= 4 else "",
                    group_type=g.group_type if v >= 5 else "classic",
                )
                for g in resp.groups
            ),
        )
    return resp


# ----------------------------------------------------------------------------- round trips


@pytest.mark.parametrize(("api_key", "version"), ALL_VERSIONS)
def test_request_round_trip_through_kafka_python(api_key, version):
    requests = sample_requests(api_key, version)
    frame = frames.encode_request(api_key, version, 123, CLIENT, kafka_messages.request_body(requests, version))
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    header = frames.peek_request_header(frame[4:])
    assert header == (api_key, version, 123, CLIENT)
    assert frames.request_expects_response(frame[4:])
    body = frames.decode_request_body(api_key, version, frame[4:])
    back = kafka_messages.requests_from_body(api_key, version, body, client_id=CLIENT, client_host=HOST)
    assert back == tuple(project_request(r, version) for r in requests)


@pytest.mark.parametrize(("api_key", "version"), ALL_VERSIONS)
def test_response_round_trip_through_kafka_python(api_key, version):
    requests = sample_requests(api_key, version)
    responses = sample_responses(api_key, version)
    body = kafka_messages.response_body(api_key, version, responses, requests)
    frame = frames.encode_response(api_key, version, 77, body)
    correlation_id, decoded = frames.decode_response(api_key, version, frame[4:])
    assert correlation_id == 77
    back = kafka_messages.responses_from_body(api_key, version, decoded)
    assert back == tuple(project_response(r, version) for r in responses)


@pytest.mark.parametrize(("api_key", "version"), ALL_VERSIONS)
def test_error_responses_encode_at_every_version(api_key, version):
    requests = sample_requests(api_key, version)
    responses = _model_wire.error_responses(requests, 16)
    body = kafka_messages.response_body(api_key, version, responses, requests)
    frame = frames.encode_response(api_key, version, 5, body)
    _, decoded = frames.decode_response(api_key, version, frame[4:])
    back = kafka_messages.responses_from_body(api_key, version, decoded)
    codes = set()
    for resp in back:
        if isinstance(resp, OffsetCommitResponse):
            codes |= {p.error_code for t in resp.topics for p in t.partitions}
        elif isinstance(resp, DescribeGroupsResponse):
            codes |= {g.error_code for g in resp.groups}
        elif isinstance(resp, OffsetFetchResponse) and version < 2:
            codes |= {p.error_code for t in resp.topics for p in t.partitions}
        else:
            codes.add(resp.error_code)
    assert codes == {16}
    if api_key == group_api.JOIN_GROUP:
        assert back[0].member_id == "m-1"


def test_offset_fetch_v1_spreads_a_group_error_over_the_requested_partitions():
    (req,) = sample_requests(group_api.OFFSET_FETCH, 1)
    body = kafka_messages.response_body(group_api.OFFSET_FETCH, 1, (OffsetFetchResponse(error_code=14),), (req,))
    _, decoded = frames.decode_response(group_api.OFFSET_FETCH, 1, frames.encode_response(9, 1, 1, body)[4:])
    assert "error_code" not in decoded
    spread = [(t["name"], [(p["partition_index"], p["error_code"]) for p in t["partitions"]]) for t in body["topics"]]
    assert spread == [("t", [(0, 14), (2, 14)]), ("u", [(1, 14)])]


def test_offset_fetch_v2_all_topics_is_none():
    req = OffsetFetchRequest(api_version=2, group_id="g", topics=None)
    frame = frames.encode_request(9, 2, 1, CLIENT, kafka_messages.request_body((req,), 2))
    assert kafka_messages.requests_from_body(9, 2, frames.decode_request_body(9, 2, frame[4:])) == (req,)


CLIENT_COMMANDS = {
    group_api.JOIN_GROUP: SendJoinGroup(
        request_id=1, node_id=0, timeout_ms=1000, group_id="g", member_id="m", group_instance_id="static",
        session_timeout_ms=6000, rebalance_timeout_ms=30000, protocols=(("range", b"\x00\x01"),), reason="why",
    ),
    group_api.SYNC_GROUP: SendSyncGroup(
        request_id=1, node_id=0, timeout_ms=1000, group_id="g", generation_id=3, member_id="m",
        protocol_type="consumer", protocol_name="range",
        assignments=(SyncGroupAssignment(member_id="m", assignment=b"\x01"),),
    ),
    group_api.HEARTBEAT: SendHeartbeat(
        request_id=1, node_id=0, timeout_ms=1, group_id="g", generation_id=3, member_id="m"
    ),
    group_api.LEAVE_GROUP: SendLeaveGroup(
        request_id=1, node_id=0, timeout_ms=1, group_id="g", members=(LeaveMember(member_id="m", reason="bye"),)
    ),
}


@pytest.mark.parametrize(
    ("api_key", "version"), [p for key in sorted(CLIENT_COMMANDS) for p in versions_of(key)]
)
def test_the_client_request_arrives_as_the_model_expects(api_key, version):
    """What the adapter sends for a command (request_message) is what the proxy hands the model."""
    command = CLIENT_COMMANDS[api_key]
    request = kafka_messages.request_message(command)
    assert request._max_version == command.api_version == group_api.NEWEST_VERSIONS[api_key]
    request.with_header(correlation_id=9, client_id=CLIENT)
    frame = request.encode(version=version, header=True)
    body = frames.decode_request_body(api_key, version, frame)
    (got,) = kafka_messages.requests_from_body(api_key, version, body, client_id=CLIENT)
    expected = attrs.evolve(group_api.value_of(command), api_version=version)
    if api_key == group_api.JOIN_GROUP:
        expected = attrs.evolve(expected, client_id=CLIENT)
    assert got == project_request(expected, version)


@pytest.mark.parametrize(("api_key", "version"), ALL_VERSIONS)
def test_the_model_response_arrives_as_the_client_reads_it(api_key, version):
    """What the proxy encodes for a model answer is what the adapter's response_values reads back."""
    requests = sample_requests(api_key, version)
    responses = sample_responses(api_key, version)
    body = kafka_messages.response_body(api_key, version, responses, requests)
    frame = frames.encode_response(api_key, version, 3, body)
    message = kafka_messages.KAFKA_CLASSES[api_key][1].decode(frame[4:], version=version, header=True)
    assert kafka_messages.response_values(api_key, message) == tuple(project_response(r, version) for r in responses)


def test_a_response_becomes_the_event_of_its_request():
    response = JoinGroupResponse(generation_id=2, protocol_name="range", leader="a", member_id="a")
    event = ev.responded(7, response)
    assert isinstance(event, ev.JoinGroupResponded) and isinstance(event, JoinGroupResponse)
    assert event.request_id == 7
    assert group_api.value_of(event) == response


@pytest.mark.parametrize("version", range(0, 7))
def test_find_coordinator_round_trip(version):
    keys = ("g", "h") if version >= 4 else ("g",)
    requests = tuple(FindCoordinatorRequest(api_version=version, key=k) for k in keys)
    frame = frames.encode_request(10, version, 1, CLIENT, kafka_messages.request_body(requests, version))
    decoded_request = frames.decode_request_body(10, version, frame[4:])
    assert kafka_messages.requests_from_body(10, version, decoded_request) == requests
    responses = tuple(FindCoordinatorResponse(node_id=3, host="127.0.0.1", port=9) for _ in keys)
    body = kafka_messages.response_body(10, version, responses, requests)
    _, decoded = frames.decode_response(10, version, frames.encode_response(10, version, 1, body)[4:])
    if version >= 4:
        assert [c["key"] for c in decoded["coordinators"]] == list(keys)
    assert kafka_messages.responses_from_body(10, version, decoded) == responses


# ----------------------------------------------------------------------------- adapter codec


@pytest.mark.parametrize("version", range(3, 14))
def test_produce_acks_zero_expects_no_response(version):
    for acks, transactional_id in ((0, None), (0, "tx-1"), (1, None), (-1, "tx")):
        frame = frames.encode_request(
            0,
            version,
            1,
            CLIENT,
            {"transactional_id": transactional_id, "acks": acks, "timeout_ms": 100, "topic_data": []},
        )
        assert frames.request_expects_response(frame[4:]) is (acks != 0)


def test_api_versions_response_header_is_never_flexible():
    body = {"error_code": 0, "api_keys": [{"api_key": 11, "min_version": 0, "max_version": 9}], "throttle_time_ms": 0}
    frame = frames.encode_response(18, 3, 42, body)
    # size, correlation id, then straight into the body's error_code (no tagged-field byte in the header)
    assert frame[4:8] == (42).to_bytes(4, "big")
    assert frame[8:10] == b"\x00\x00"
    correlation_id, decoded = frames.decode_response(18, 3, frame[4:])
    assert correlation_id == 42
    assert decoded["api_keys"] == [{"api_key": 11, "min_version": 0, "max_version": 9}]


def test_api_versions_error_is_encoded_as_v0():
    body = {"error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 3}]}
    version = frames.response_version_of(18, 4, body)
    assert version == 0
    _, decoded = frames.decode_response(18, 4, frames.encode_response(18, version, 1, body)[4:])
    assert decoded["error_code"] == 35


def test_api_names_and_ranges():
    assert frames.api_name(12) == "Heartbeat"
    assert frames.api_key_of("JoinGroup") == 11
    assert frames.api_name(9999) == "Api9999"
    with pytest.raises(ValueError):
        frames.api_key_of("NoSuchApi")
    assert frames.api_version_range(8)[0] == 2
    assert frames.api_version_range(10) == (0, 6)
    assert frames.response_has_field(12, 0, "error_code")
    assert not frames.response_has_field(0, 9, "error_code")


# ----------------------------------------------------------------------------- DeleteGroups, DescribeGroups v6


@pytest.mark.parametrize("version", range(0, 3))
def test_delete_groups_round_trip(version):
    from kgroup.testing.coordinator import DeletedGroupResult, DeleteGroupsRequest, DeleteGroupsResponse

    assert group_api.DELETE_GROUPS not in _model_wire.MODEL_METHODS  # the proxy forwards DeleteGroups
    assert _model_wire.ALL_MODEL_METHODS[group_api.DELETE_GROUPS] == "delete_groups"
    req = DeleteGroupsRequest(api_version=version, groups=("a", "", "b"))
    frame = frames.encode_request(42, version, 1, CLIENT, kafka_messages.request_body((req,), version))
    assert kafka_messages.requests_from_body(42, version, frames.decode_request_body(42, version, frame[4:])) == (req,)
    resp = DeleteGroupsResponse(
        results=(DeletedGroupResult(group_id="a", error_code=68), DeletedGroupResult(group_id="b"))
    )
    body = kafka_messages.response_body(42, version, (resp,), (req,))
    _, decoded = frames.decode_response(42, version, frames.encode_response(42, version, 1, body)[4:])
    assert kafka_messages.responses_from_body(42, version, decoded) == (resp,)
    (errors,) = _model_wire.error_responses((req,), 14)
    assert [r.error_code for r in errors.results] == [14, 14, 14]


def test_describe_groups_v6_error_message_and_authorized_operations_round_trip():
    req = DescribeGroupsRequest(api_version=6, groups=("g",), include_authorized_operations=True)
    frame = frames.encode_request(15, 6, 1, CLIENT, kafka_messages.request_body((req,), 6))
    assert kafka_messages.requests_from_body(15, 6, frames.decode_request_body(15, 6, frame[4:])) == (req,)
    group = DescribedGroup(
        error_code=69,
        error_message="Group g not found.",
        group_id="g",
        group_state="Dead",
        protocol_type="",
        protocol_data="",
        members=(),
        authorized_operations=frozenset({3, 8}),
    )
    for version, expected in (
        (6, group),
        (5, attrs.evolve(group, error_message=None)),
        (2, attrs.evolve(group, error_message=None, authorized_operations=None)),
    ):
        body = kafka_messages.response_body(15, version, (DescribeGroupsResponse(groups=(group,)),))
        _, decoded = frames.decode_response(15, version, frames.encode_response(15, version, 1, body)[4:])
        assert kafka_messages.responses_from_body(15, version, decoded) == (DescribeGroupsResponse(groups=(expected,)),)


# ----------------------------------------------------------------------------- Kafka's STRING limit


def test_strings_up_to_0x7fff_utf8_bytes_pass():
    body = {"group_id": "g" * 0x7FFF, "members": [{"reason": "é" * 16383}], "metadata": b"x" * 70000}
    _model_wire.check_string_lengths(body)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"group_id": "g", "reason": "r" * 0x8000}, "reason"),
        ({"members": [{"member_id": "m", "reason": "é" * 16384}]}, "members[0].reason"),
        ({"groups": [{"topics": [{"name": "t" * 40000}]}]}, "groups[0].topics[0].name"),
    ],
)
def test_a_longer_string_is_a_malformed_request(body, field):
    with pytest.raises(_model_wire.MalformedRequestError, match=re.escape(f"string field {field} had invalid length")):
        _model_wire.check_string_lengths(body)


def test_a_compact_string_over_the_limit_decodes_and_is_then_refused():
    """kafka-python decodes what Kafka's reader refuses, so the proxy must check after decoding."""
    req = JoinGroupRequest(
        api_version=8, group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000, reason="x" * 40000
    )
    frame = frames.encode_request(11, 8, 1, CLIENT, kafka_messages.request_body((req,), 8))
    body = frames.decode_request_body(11, 8, frame[4:])
    assert len(body["reason"]) == 40000
    with pytest.raises(_model_wire.MalformedRequestError, match="reason had invalid length 40000"):
        _model_wire.check_string_lengths(body)


def test_an_answer_kafka_could_not_serialize_becomes_unknown_server_error():
    """A member id over 0x7fff bytes ('leader' field is too long to be serialized): KafkaApis' error response."""
    long_id = "i" * 0x7FFF + "-00000000-0000-4000-8000-000000000000"
    req = JoinGroupRequest(api_version=9, group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000)
    answer = JoinGroupResponse(generation_id=1, protocol_name="range", leader=long_id, member_id=long_id)
    body = _model_wire.answer_body(group_api.JOIN_GROUP, 9, (answer,), (req,))
    assert (body["error_code"], body["member_id"], body["leader"], body["generation_id"]) == (-1, "", "", -1)
    described = DescribeGroupsResponse(
        groups=(
            DescribedGroup(
                error_code=0,
                group_id="g",
                group_state="Stable",
                protocol_type="consumer",
                protocol_data="range",
                members=(DescribedMember(member_id=long_id, group_instance_id="i", client_id="c",
                                         client_host=HOST, member_metadata=b"", member_assignment=b""),),
            ),
        )
    )
    body = _model_wire.answer_body(
        group_api.DESCRIBE_GROUPS, 5, (described,), (DescribeGroupsRequest(api_version=5, groups=("g",)),)
    )
    assert [(g["error_code"], g["members"]) for g in body["groups"]] == [(-1, [])]
