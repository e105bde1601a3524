"""ConsumerGroupHeartbeat on the wire: kgroup's kafka-python classes against Apache Kafka's own encoding.

The golden frames are what Apache Kafka 4.4's generated classes write
(``ConsumerGroupHeartbeatRequestData`` / ``ConsumerGroupHeartbeatResponseData`` through
``MessageUtil.toByteBufferAccessor(message, version)``, kafka-clients 4.4.0) for the values below,
so these tests pin the byte layout of both versions: compact strings and arrays, nullable
fields, the UUID, the nullable ``Assignment`` struct and the tagged-field sections.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import attrs
import pytest
from kafka.errors import IncompatibleBrokerVersion
from kafka.protocol.api_header import RequestHeader, ResponseClassRegistry
from kafka.protocol.broker_version_data import BrokerVersionData

from kgroup._error_codes import FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID
from kgroup._io import kafka_messages as wire
from kgroup.protocol.consumer_group_heartbeat import (
    CONSUMER_GROUP_HEARTBEAT,
    NEWEST_VERSION,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicIdPartitions,
)

TOPIC_ID = uuid.UUID("01020304-0506-0708-090a-0b0c0d0e0f10")
R = TypeVar("R")


def full_request(version: int) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id="m",
        member_epoch=3,
        instance_id="i",
        rack_id="r",
        rebalance_timeout_ms=300000,
        subscribed_topic_names=("t1", "t2"),
        subscribed_topic_regex="t.*" if version >= 1 else None,
        server_assignor="uniform",
        topic_partitions=(TopicIdPartitions(TOPIC_ID, (0, 2)),),
    )


LEAVE = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=-1)


def assigned(response: Callable[..., R], assignment: tuple[Any, ...]) -> R:
    """A heartbeat answer with an assignment, as the golden response frames of KIP-848 and KIP-932 have it."""
    return response(throttle_time_ms=7, error_code=0, member_id="m", member_epoch=5, heartbeat_interval_ms=5000,
                    assignment=assignment)


def fenced(response: Callable[..., R]) -> R:
    """A heartbeat answer with FENCED_MEMBER_EPOCH (the same bytes in both protocols)."""
    return response(error_code=FENCED_MEMBER_EPOCH, error_message="fenced", member_epoch=0)


ASSIGNED = assigned(ConsumerGroupHeartbeatResponse, (TopicIdPartitions(TOPIC_ID, (1, 3)),))
FENCED = fenced(ConsumerGroupHeartbeatResponse)

#: (version, value) -> the bytes Apache Kafka's generated classes write
GOLDEN_REQUESTS = {
    0: (
        full_request(0),
        "0267026d0000000302690272000493e00303743103743208756e69666f726d02"
        "0102030405060708090a0b0c0d0e0f100300000000000000020000",
    ),
    1: (
        full_request(1),
        "0267026d0000000302690272000493e00303743103743204742e2a08756e69666f726d02"
        "0102030405060708090a0b0c0d0e0f100300000000000000020000",
    ),
}
GOLDEN_LEAVE = {0: "0267026dffffffff0000ffffffff00000000", 1: "0267026dffffffff0000ffffffff0000000000"}
GOLDEN_ASSIGNED = "00000007000000026d000000050000138801020102030405060708090a0b0c0d0e0f10030000000100000003000000"
GOLDEN_FENCED = "00000000006e0766656e636564000000000000000000ff00"


@pytest.mark.parametrize("version", [0, 1])
def test_requests_encode_as_apache_kafka_encodes_them(version: int) -> None:
    value, golden = GOLDEN_REQUESTS[version]
    assert wire.heartbeat_request_message(value).encode(version=version).hex() == golden
    assert wire.heartbeat_request_message(LEAVE).encode(version=version).hex() == GOLDEN_LEAVE[version]


@pytest.mark.parametrize("version", [0, 1])
def test_apache_kafka_requests_decode_to_the_same_values(version: int) -> None:
    value, golden = GOLDEN_REQUESTS[version]
    message = wire.ConsumerGroupHeartbeatRequest.decode(bytes.fromhex(golden), version=version)
    decoded = wire.heartbeat_request_value(message)
    assert decoded == attrs_evolve(value, api_version=version)
    leave = wire.heartbeat_request_value(
        wire.ConsumerGroupHeartbeatRequest.decode(bytes.fromhex(GOLDEN_LEAVE[version]), version=version)
    )
    assert leave == attrs_evolve(LEAVE, api_version=version)


@pytest.mark.parametrize("version", [0, 1])
def test_responses_match_apache_kafka_both_ways(version: int) -> None:
    for value, golden in ((ASSIGNED, GOLDEN_ASSIGNED), (FENCED, GOLDEN_FENCED)):
        assert wire.heartbeat_response_message(value).encode(version=version).hex() == golden
        message = wire.ConsumerGroupHeartbeatResponse.decode(bytes.fromhex(golden), version=version)
        assert wire.heartbeat_response_value(message) == value


def attrs_evolve(value: ConsumerGroupHeartbeatRequest, **changes: object) -> ConsumerGroupHeartbeatRequest:
    return attrs.evolve(value, **changes)


ROUND_TRIP_REQUESTS = [
    full_request(1),
    LEAVE,
    # a joining member: empty owned partitions (not null), every field
    ConsumerGroupHeartbeatRequest(
        group_id="orders",
        member_id="Zm9vYmFyYmF6cXV4cXV1eA",
        member_epoch=0,
        rebalance_timeout_ms=45000,
        subscribed_topic_names=("orders",),
        topic_partitions=(),
    ),
    # a static member leaving for now
    ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=-2, instance_id="pod-0"),
    # dropping a pattern subscription: the empty regex
    ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=7, subscribed_topic_regex=""),
    ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id="m",
        member_epoch=12,
        topic_partitions=(TopicIdPartitions(uuid.uuid4(), range(100)), TopicIdPartitions(uuid.uuid4(), ())),
    ),
]
ROUND_TRIP_RESPONSES = [
    ASSIGNED,
    FENCED,
    ConsumerGroupHeartbeatResponse(error_code=0, member_id="m", member_epoch=9, heartbeat_interval_ms=3000),
    ConsumerGroupHeartbeatResponse(error_code=0, member_id="m", member_epoch=9, assignment=()),
    ConsumerGroupHeartbeatResponse(error_code=0, member_epoch=-1),
    ConsumerGroupHeartbeatResponse(error_code=UNRELEASED_INSTANCE_ID, error_message="unreleased"),
]


@pytest.mark.parametrize(
    ("value", "version"),
    [(value, version) for value in ROUND_TRIP_REQUESTS for version in (0, 1)
     if version >= 1 or value.subscribed_topic_regex is None],  # a pattern needs v1: test_a_pattern_needs_v1
)
def test_requests_round_trip(value: ConsumerGroupHeartbeatRequest, version: int) -> None:
    data = wire.heartbeat_request_message(value).encode(version=version)
    decoded = wire.heartbeat_request_value(wire.ConsumerGroupHeartbeatRequest.decode(data, version=version))
    assert decoded == attrs_evolve(value, api_version=version)


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("value", ROUND_TRIP_RESPONSES, ids=range(len(ROUND_TRIP_RESPONSES)))
def test_responses_round_trip(value: ConsumerGroupHeartbeatResponse, version: int) -> None:
    data = wire.heartbeat_response_message(value).encode(version=version)
    assert wire.heartbeat_response_value(wire.ConsumerGroupHeartbeatResponse.decode(data, version=version)) == value


def test_unknown_tagged_fields_are_skipped() -> None:
    """A newer broker may add tagged fields; they end the struct's tag section and are ignored."""
    data = bytes.fromhex(GOLDEN_ASSIGNED[:-2] + "010502abcd")  # one tag (5) of 2 bytes
    message = wire.ConsumerGroupHeartbeatResponse.decode(data, version=1)
    assert wire.heartbeat_response_value(message) == ASSIGNED
    assert message.unknown_tags == {"_5": b"\xab\xcd"}


def test_the_connection_negotiates_the_version() -> None:
    """kafka-python picks the highest version both sides serve; a pattern needs v1 (KIP-848)."""
    both = BrokerVersionData(api_versions={CONSUMER_GROUP_HEARTBEAT: (0, 1)})
    old = BrokerVersionData(api_versions={CONSUMER_GROUP_HEARTBEAT: (0, 0)})
    newer = BrokerVersionData(api_versions={CONSUMER_GROUP_HEARTBEAT: (0, 7)})
    plain = wire.heartbeat_request_message(LEAVE)
    assert plain.API_VERSION is None
    assert both.api_version(plain) == 1
    assert newer.api_version(plain) == NEWEST_VERSION
    assert old.api_version(plain) == 0
    capped = wire.heartbeat_request_message(attrs_evolve(LEAVE, api_version=0))
    assert both.api_version(capped) == 0


def test_a_pattern_needs_v1() -> None:
    """Java fails such a request on a v0-only broker instead of dropping the pattern; so does kafka-python here."""
    pattern = wire.heartbeat_request_message(full_request(1))
    assert BrokerVersionData(api_versions={CONSUMER_GROUP_HEARTBEAT: (0, 1)}).api_version(pattern) == 1
    with pytest.raises(IncompatibleBrokerVersion):
        BrokerVersionData(api_versions={CONSUMER_GROUP_HEARTBEAT: (0, 0)}).api_version(pattern)
    with pytest.raises(IncompatibleBrokerVersion):
        BrokerVersionData(api_versions={}).api_version(wire.heartbeat_request_message(LEAVE))


def test_the_response_class_is_registered_with_kafka_pythons_parser() -> None:
    header = RequestHeader(request_api_key=CONSUMER_GROUP_HEARTBEAT, request_api_version=1, correlation_id=1,
                           client_id="kgroup")
    response_class = ResponseClassRegistry.get_response_class(header)
    assert response_class is wire.ConsumerGroupHeartbeatResponse[1]
    assert wire.ConsumerGroupHeartbeatRequest.API_KEY == CONSUMER_GROUP_HEARTBEAT
    assert wire.ConsumerGroupHeartbeatRequest.max_version == NEWEST_VERSION
    assert wire.ConsumerGroupHeartbeatRequest.flexible_version_q(0)
