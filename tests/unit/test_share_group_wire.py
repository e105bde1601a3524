"""ShareGroupHeartbeat on the wire: kgroup's kafka-python classes against Apache Kafka's own encoding.

The golden frames are what Apache Kafka 4.4's generated classes write
(``ShareGroupHeartbeatRequestData`` / ``ShareGroupHeartbeatResponseData`` through
``MessageUtil.toByteBufferAccessor(message, (short) 1)``, kafka-clients 4.4.0) for the values
below, so these tests pin the byte layout of version 1, the one Kafka 4.1+ serves: compact
strings and arrays, the nullable rack and subscription, the UUID, the nullable ``Assignment``
struct and the tagged-field sections.
"""

from __future__ import annotations

import uuid

import attrs
import pytest
from kafka.errors import IncompatibleBrokerVersion
from kafka.protocol.api_header import RequestHeader, ResponseClassRegistry
from kafka.protocol.broker_version_data import BrokerVersionData

from kgroup._error_codes import UNKNOWN_MEMBER_ID
from kgroup._io import kafka_messages as wire
from kgroup.protocol.share_group_heartbeat import (
    NEWEST_VERSION,
    SHARE_GROUP_HEARTBEAT,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    TopicIdPartitions,
)
from tests.unit.test_kip848_wire import TOPIC_ID, assigned, fenced

JOIN = ShareGroupHeartbeatRequest(
    group_id="g", member_id="m", member_epoch=0, rack_id="r", subscribed_topic_names=("t1", "t2")
)
LEAVE = ShareGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=-1)
ASSIGNED = assigned(ShareGroupHeartbeatResponse, (TopicIdPartitions(TOPIC_ID, (0, 1, 2)),))
FENCED = fenced(ShareGroupHeartbeatResponse)

#: value -> the bytes Apache Kafka 4.4's generated classes write at version 1
GOLDEN_REQUESTS = (
    (JOIN, "0267026d0000000002720303743103743200"),
    (LEAVE, "0267026dffffffff000000"),
)
GOLDEN_RESPONSES = (
    (
        ASSIGNED,
        "00000007000000026d000000050000138801020102030405060708090a0b0c0d0e0f10"
        "04000000000000000100000002000000",
    ),
    (FENCED, "00000000006e0766656e636564000000000000000000ff00"),
)


@pytest.mark.parametrize(("value", "golden"), GOLDEN_REQUESTS, ids=["join", "leave"])
def test_requests_encode_as_apache_kafka_encodes_them(value: ShareGroupHeartbeatRequest, golden: str) -> None:
    assert wire.share_heartbeat_request_message(value).encode(version=1).hex() == golden


@pytest.mark.parametrize(("value", "golden"), GOLDEN_REQUESTS, ids=["join", "leave"])
def test_apache_kafka_requests_decode_to_the_same_values(value: ShareGroupHeartbeatRequest, golden: str) -> None:
    message = wire.ShareGroupHeartbeatRequest.decode(bytes.fromhex(golden), version=1)
    assert wire.share_heartbeat_request_value(message) == value


@pytest.mark.parametrize(("value", "golden"), GOLDEN_RESPONSES, ids=["assigned", "fenced"])
def test_responses_match_apache_kafka_both_ways(value: ShareGroupHeartbeatResponse, golden: str) -> None:
    assert wire.share_heartbeat_response_message(value).encode(version=1).hex() == golden
    message = wire.ShareGroupHeartbeatResponse.decode(bytes.fromhex(golden), version=1)
    assert wire.share_heartbeat_response_value(message) == value


ROUND_TRIP_REQUESTS = [
    JOIN,
    LEAVE,
    # a heartbeat with nothing changed: every optional field null
    ShareGroupHeartbeatRequest(group_id="queue", member_id=str(uuid.uuid4()), member_epoch=12),
    # an empty subscription is not "unchanged"
    ShareGroupHeartbeatRequest(group_id="queue", member_id="m", member_epoch=3, subscribed_topic_names=()),
]
ROUND_TRIP_RESPONSES = [
    ASSIGNED,
    FENCED,
    ShareGroupHeartbeatResponse(error_code=0, member_id="m", member_epoch=9, heartbeat_interval_ms=5000),
    ShareGroupHeartbeatResponse(error_code=0, member_id="m", member_epoch=9, assignment=()),
    ShareGroupHeartbeatResponse(
        error_code=0,
        member_id="m",
        member_epoch=2,
        assignment=(TopicIdPartitions(uuid.uuid4(), range(50)), TopicIdPartitions(uuid.uuid4(), ())),
    ),
    ShareGroupHeartbeatResponse(error_code=0, member_epoch=-1),
    ShareGroupHeartbeatResponse(error_code=UNKNOWN_MEMBER_ID, error_message="unknown"),
]


@pytest.mark.parametrize("value", ROUND_TRIP_REQUESTS, ids=range(len(ROUND_TRIP_REQUESTS)))
def test_requests_round_trip(value: ShareGroupHeartbeatRequest) -> None:
    data = wire.share_heartbeat_request_message(value).encode(version=1)
    decoded = wire.share_heartbeat_request_value(wire.ShareGroupHeartbeatRequest.decode(data, version=1))
    assert decoded == attrs.evolve(value, api_version=1)


@pytest.mark.parametrize("value", ROUND_TRIP_RESPONSES, ids=range(len(ROUND_TRIP_RESPONSES)))
def test_responses_round_trip(value: ShareGroupHeartbeatResponse) -> None:
    data = wire.share_heartbeat_response_message(value).encode(version=1)
    assert wire.share_heartbeat_response_value(wire.ShareGroupHeartbeatResponse.decode(data, version=1)) == value


def test_only_v1_is_sent() -> None:
    """Kafka 4.0's early-access v0 is not spoken: a broker without v1 fails the send, as Java's does."""
    message = wire.share_heartbeat_request_message(LEAVE)
    assert BrokerVersionData(api_versions={SHARE_GROUP_HEARTBEAT: (1, 1)}).api_version(message) == 1
    assert BrokerVersionData(api_versions={SHARE_GROUP_HEARTBEAT: (1, 3)}).api_version(message) == NEWEST_VERSION
    for served in ({SHARE_GROUP_HEARTBEAT: (0, 0)}, {}):
        with pytest.raises(IncompatibleBrokerVersion):
            BrokerVersionData(api_versions=served).api_version(message)


def test_the_response_class_is_registered_with_kafka_pythons_parser() -> None:
    header = RequestHeader(
        request_api_key=SHARE_GROUP_HEARTBEAT, request_api_version=1, correlation_id=1, client_id="kgroup"
    )
    assert ResponseClassRegistry.get_response_class(header) is wire.ShareGroupHeartbeatResponse[1]
    assert wire.ShareGroupHeartbeatRequest.API_KEY == SHARE_GROUP_HEARTBEAT
    assert wire.ShareGroupHeartbeatRequest.max_version == NEWEST_VERSION
    assert wire.ShareGroupHeartbeatRequest.flexible_version_q(1)
