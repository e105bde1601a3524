"""ConsumerGroupDescribe on the wire: kgroup's kafka-python classes against Apache Kafka's own encoding.

The golden frames are what Apache Kafka 4.4's generated classes write
(``ConsumerGroupDescribeRequestData`` / ``ConsumerGroupDescribeResponseData`` through
``MessageUtil.toByteBufferAccessor(message, version)``, kafka-clients 4.4.0) for the values below:
a described consumer group with one static member whose assignment (partitions 0 and 2) is still
short of its target (0, 1 and 2), and a classic group answered with GROUP_ID_NOT_FOUND. They pin
both versions' layout: compact strings and arrays, the nullable strings, the UUID, the two
``Assignment`` structs, v1's ``MemberType`` (KIP-1099) and the tagged-field sections.
"""

from __future__ import annotations

import uuid

import attrs
import pytest
from kafka.protocol.api_header import RequestHeader, ResponseClassRegistry
from kafka.protocol.broker_version_data import BrokerVersionData

from kgroup._error_codes import GROUP_ID_NOT_FOUND
from kgroup._io import kafka_messages as wire
from kgroup.protocol.consumer_group_describe import (
    CONSUMER_GROUP_DESCRIBE,
    MEMBER_TYPE_CLASSIC,
    MEMBER_TYPE_CONSUMER,
    MEMBER_TYPE_UNKNOWN,
    NEWEST_VERSION,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    NamedTopicPartitions,
)

TOPIC_ID = uuid.UUID("01020304-0506-0708-090a-0b0c0d0e0f10")

REQUEST = ConsumerGroupDescribeRequest(group_ids=("g1", "g2"), include_authorized_operations=True)
GOLDEN_REQUEST = "030367310367320100"  # the same at v0 and v1


def response(member_type: int) -> ConsumerGroupDescribeResponse:
    member = DescribedConsumerMember(
        member_id="m", instance_id="i", rack_id=None, member_epoch=5, client_id="c", client_host="/h",
        subscribed_topic_names=("t",), subscribed_topic_regex=None,
        assignment=(NamedTopicPartitions(TOPIC_ID, "t", (0, 2)),),
        target_assignment=(NamedTopicPartitions(TOPIC_ID, "t", (0, 1, 2)),),
        member_type=member_type,
    )
    return ConsumerGroupDescribeResponse(
        throttle_time_ms=7,
        groups=(
            DescribedConsumerGroup(error_code=0, group_id="g1", group_state="Stable", group_epoch=4,
                                   assignment_epoch=3, assignor_name="uniform", members=(member,)),
            DescribedConsumerGroup(error_code=GROUP_ID_NOT_FOUND, error_message="Group g2 is not a consumer group.",
                                   group_id="g2", group_state="", group_epoch=-1, assignment_epoch=-1,
                                   assignor_name=""),
        ),
    )


_HEAD = (
    "000000070300000003673107537461626c65000000040000000308756e69666f726d02026d026900000000050263032f680202"
    "7400020102030405060708090a0b0c0d0e0f1002740300000000000000020000020102030405060708090a0b0c0d0e0f1002"
    "74040000000000000001000000020000"
)
_TAIL = (
    "00800000000000452247726f7570206732206973206e6f74206120636f6e73756d65722067726f75702e03673201ffffffff"
    "ffffffff0101800000000000"
)
#: version -> the bytes Apache Kafka writes for ``response(MEMBER_TYPE_CONSUMER)``
GOLDEN_RESPONSE = {0: _HEAD + _TAIL, 1: _HEAD + "01" + _TAIL}


@pytest.mark.parametrize("version", [0, 1])
def test_the_request_matches_apache_kafka_both_ways(version: int) -> None:
    assert wire.describe_request_message(REQUEST).encode(version=version).hex() == GOLDEN_REQUEST
    decoded = wire.describe_request_value(wire.ConsumerGroupDescribeRequest.decode(bytes.fromhex(GOLDEN_REQUEST),
                                                                         version=version))
    assert decoded == attrs.evolve(REQUEST, api_version=version)


def test_the_v1_response_matches_apache_kafka_both_ways() -> None:
    value = response(MEMBER_TYPE_CONSUMER)
    assert wire.describe_response_message(value).encode(version=1).hex() == GOLDEN_RESPONSE[1]
    decoded = wire.ConsumerGroupDescribeResponse.decode(bytes.fromhex(GOLDEN_RESPONSE[1]), version=1)
    assert wire.describe_response_value(decoded) == value


def test_v0_has_no_member_type() -> None:
    """v0 does not carry MemberType: written without it, read back as unknown (-1)."""
    assert wire.describe_response_message(response(MEMBER_TYPE_CONSUMER)).encode(version=0).hex() == GOLDEN_RESPONSE[0]
    decoded = wire.ConsumerGroupDescribeResponse.decode(bytes.fromhex(GOLDEN_RESPONSE[0]), version=0)
    assert wire.describe_response_value(decoded) == response(MEMBER_TYPE_UNKNOWN)


@pytest.mark.parametrize("member_type", [MEMBER_TYPE_CLASSIC, MEMBER_TYPE_CONSUMER, MEMBER_TYPE_UNKNOWN])
def test_responses_round_trip(member_type: int) -> None:
    empty = ConsumerGroupDescribeResponse(groups=(DescribedConsumerGroup(
        error_code=0, group_id="empty", group_state="Empty", group_epoch=9, assignment_epoch=9,
        assignor_name="range", authorized_operations=0b1100),))
    for value in (response(member_type), empty):
        data = wire.describe_response_message(value).encode(version=1)
        assert wire.describe_response_value(wire.ConsumerGroupDescribeResponse.decode(data, version=1)) == value


def test_unknown_tagged_fields_are_skipped() -> None:
    data = bytes.fromhex(GOLDEN_RESPONSE[1][:-2] + "010502abcd")  # one tag (5) of 2 bytes at the top level
    message = wire.ConsumerGroupDescribeResponse.decode(data, version=1)
    assert wire.describe_response_value(message) == response(MEMBER_TYPE_CONSUMER)


def test_the_connection_negotiates_the_version() -> None:
    request = wire.describe_request_message(REQUEST)
    assert request.API_VERSION is None
    assert BrokerVersionData(api_versions={CONSUMER_GROUP_DESCRIBE: (0, 1)}).api_version(request) == 1
    assert BrokerVersionData(api_versions={CONSUMER_GROUP_DESCRIBE: (0, 0)}).api_version(request) == 0
    assert BrokerVersionData(api_versions={CONSUMER_GROUP_DESCRIBE: (0, 5)}).api_version(request) == NEWEST_VERSION


def test_the_response_class_is_registered_with_kafka_pythons_parser() -> None:
    header = RequestHeader(request_api_key=CONSUMER_GROUP_DESCRIBE, request_api_version=1, correlation_id=1,
                           client_id="kgroup")
    assert ResponseClassRegistry.get_response_class(header) is wire.ConsumerGroupDescribeResponse[1]
    assert wire.ConsumerGroupDescribeRequest.API_KEY == CONSUMER_GROUP_DESCRIBE
    assert wire.ConsumerGroupDescribeRequest.max_version == NEWEST_VERSION
