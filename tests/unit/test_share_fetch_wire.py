"""ShareFetch (78) and ShareAcknowledge (79) on the wire: kgroup's kafka-python classes against Apache Kafka's encoding.

The golden frames are what Apache Kafka 4.4's generated classes write (``ShareFetchRequestData``,
``ShareFetchResponseData``, ``ShareAcknowledgeRequestData``, ``ShareAcknowledgeResponseData``
through ``MessageUtil.toByteBufferAccessor(message, version)``, kafka-clients 4.4.0) for the
bodies below, at versions 1 and 2: acknowledgement batches with their types, forgotten topics,
acquired records, the record bytes, the current leader and the node endpoints. Each body is
built into a message with :func:`kgroup._io.kafka_messages.build_message`, encoded, compared,
and the golden frame decoded back to the same body.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kafka.protocol.api_header import RequestHeader, ResponseClassRegistry

from kgroup._io import kafka_messages as wire
from kgroup.protocol import share_fetch as sf

TOPIC_ID = uuid.UUID("01020304-0506-0708-090a-0b0c0d0e0f10")
VERSIONS = (1, 2)


def fetch_request(version: int) -> dict[str, Any]:
    body: dict[str, Any] = {
        "group_id": "g", "member_id": "m", "share_session_epoch": 1, "max_wait_ms": 500, "min_bytes": 1,
        "max_bytes": 52428800, "max_records": 500, "batch_size": 500,
        "topics": [{"topic_id": TOPIC_ID, "partitions": [{
            "partition_index": 2,
            "acknowledgement_batches": [{"first_offset": 10, "last_offset": 12, "acknowledge_types": [1, 2, 3]}],
        }]}],
        "forgotten_topics_data": [{"topic_id": TOPIC_ID, "partitions": [0]}],
    }
    if version >= 2:
        body.update(share_acquire_mode=1, is_renew_ack=True)
    return body


def fetch_response(version: int) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None, "acquisition_lock_timeout_ms": 30000,
        "responses": [{"topic_id": TOPIC_ID, "partitions": [{
            "partition_index": 2, "error_code": 0, "error_message": None,
            "acknowledge_error_code": 0, "acknowledge_error_message": None,
            "current_leader": {"leader_id": 1, "leader_epoch": 0},
            "records": b"\x01\x02\x03",
            "acquired_records": [{"first_offset": 10, "last_offset": 12, "delivery_count": 1}],
        }]}],
        "node_endpoints": [{"node_id": 1, "host": "h", "port": 9092, "rack": None}],
    }


def acknowledge_request(version: int) -> dict[str, Any]:
    body: dict[str, Any] = {
        "group_id": "g", "member_id": "m", "share_session_epoch": 2,
        "topics": [{"topic_id": TOPIC_ID, "partitions": [{
            "partition_index": 0,
            "acknowledgement_batches": [{"first_offset": 5, "last_offset": 9, "acknowledge_types": [1]}],
        }]}],
    }
    if version >= 2:
        body["is_renew_ack"] = True
    return body


def acknowledge_response(version: int) -> dict[str, Any]:
    body: dict[str, Any] = {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None,
        "responses": [{"topic_id": TOPIC_ID, "partitions": [{
            "partition_index": 0, "error_code": 0, "error_message": None,
            "current_leader": {"leader_id": -1, "leader_epoch": -1},
        }]}],
        "node_endpoints": [],
    }
    if version >= 2:
        body["acquisition_lock_timeout_ms"] = 30000
    return body


_ID = "0102030405060708090a0b0c0d0e0f10"
#: (message class, body, version) -> the bytes Apache Kafka 4.4's generated classes write
GOLDEN: dict[tuple[str, int], str] = {
    ("fetch_request", 1): (
        f"0267026d00000001000001f40000000103200000000001f4000001f402{_ID}"
        f"020000000202000000000000000a000000000000000c0401020300000002{_ID}02000000000000"
    ),
    ("fetch_request", 2): (
        f"0267026d00000001000001f40000000103200000000001f4000001f4010102{_ID}"
        f"020000000202000000000000000a000000000000000c0401020300000002{_ID}02000000000000"
    ),
    ("fetch_response", 1): (
        f"000000000000000000753002{_ID}"
        "0200000002000000000000000000010000000000040102030200000000000000"
        "0a000000000000000c00010000000200000001026800002384000000"
    ),
    ("fetch_response", 2): (
        f"000000000000000000753002{_ID}"
        "0200000002000000000000000000010000000000040102030200000000000000"
        "0a000000000000000c00010000000200000001026800002384000000"
    ),
    ("acknowledge_request", 1): (
        f"0267026d0000000202{_ID}02000000000200000000000000050000000000000009020100000000"
    ),
    ("acknowledge_request", 2): (
        f"0267026d000000020102{_ID}02000000000200000000000000050000000000000009020100000000"
    ),
    ("acknowledge_response", 1): (
        f"0000000000000002{_ID}0200000000000000ffffffffffffffff0000000100"
    ),
    ("acknowledge_response", 2): (
        f"000000000000000000753002{_ID}0200000000000000ffffffffffffffff0000000100"
    ),
}
MESSAGES = {
    "fetch_request": (wire.ShareFetchRequest, fetch_request),
    "fetch_response": (wire.ShareFetchResponse, fetch_response),
    "acknowledge_request": (wire.ShareAcknowledgeRequest, acknowledge_request),
    "acknowledge_response": (wire.ShareAcknowledgeResponse, acknowledge_response),
}
CASES = [(name, version) for name in MESSAGES for version in VERSIONS]


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
def test_encodes_as_apache_kafka_encodes(name: str, version: int) -> None:
    message_class, body = MESSAGES[name]
    message = wire.build_message(message_class, body(version))
    assert message.encode(version=version).hex() == GOLDEN[name, version]


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
def test_apache_kafka_frames_decode_to_the_same_body(name: str, version: int) -> None:
    message_class, body = MESSAGES[name]
    message = message_class.decode(bytes.fromhex(GOLDEN[name, version]), version=version)
    decoded = wire.plain(message.to_dict(json=False))
    assert decoded == body(version)


def test_version_2_fields_are_left_out_of_version_1() -> None:
    """A v1 frame has no ShareAcquireMode or IsRenewAck: encoding at v1 drops them, decoding gives the defaults."""
    v2_body = fetch_request(2)
    assert wire.build_message(wire.ShareFetchRequest, v2_body).encode(version=1).hex() == GOLDEN["fetch_request", 1]
    v1 = wire.plain(wire.ShareFetchRequest.decode(bytes.fromhex(GOLDEN["fetch_request", 1]), version=1).to_dict(
        json=False
    ))
    assert "share_acquire_mode" not in v1 and "is_renew_ack" not in v1


@pytest.mark.parametrize(("api_key", "response_class"), [(78, "ShareFetchResponse"), (79, "ShareAcknowledgeResponse")])
def test_the_response_classes_are_registered_with_kafka_pythons_parser(api_key: int, response_class: str) -> None:
    header = RequestHeader(request_api_key=api_key, request_api_version=2, correlation_id=1, client_id="kgroup")
    assert ResponseClassRegistry.get_response_class(header) is getattr(wire, response_class)[2]


# ----------------------------------------------------------------------------- the values (kgroup.protocol.share_fetch)
def _fetch_value() -> sf.ShareFetchRequest:
    return sf.ShareFetchRequest(
        group_id="g", member_id="m", share_session_epoch=1, max_wait_ms=500, min_bytes=1, max_bytes=52428800,
        max_records=500, batch_size=500, share_acquire_mode=1, is_renew_ack=True,
        partitions=(sf.ShareFetchPartition(TOPIC_ID, 2, (sf.AcknowledgementBatch(10, 12, (1, 2, 3)),)),),
        forgotten=((TOPIC_ID, 0),),
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_request_values_map_to_apache_kafkas_frames(version: int) -> None:
    """The share consumer's values (``kgroup.protocol.share_fetch``) through ``share_*_request_message``."""
    assert wire.share_fetch_request_message(_fetch_value()).encode(version=version).hex() == GOLDEN[
        "fetch_request", version]
    ack = sf.ShareAcknowledgeRequest(
        group_id="g", member_id="m", share_session_epoch=2, is_renew_ack=True,
        partitions=(sf.PartitionAcknowledgements(TOPIC_ID, 0, (sf.AcknowledgementBatch(5, 9, (1,)),)),),
    )
    assert wire.share_acknowledge_request_message(ack).encode(version=version).hex() == GOLDEN[
        "acknowledge_request", version]


@pytest.mark.parametrize("version", VERSIONS)
def test_apache_kafkas_response_frames_map_to_values(version: int) -> None:
    fetched = wire.share_fetch_response_value(
        wire.ShareFetchResponse.decode(bytes.fromhex(GOLDEN["fetch_response", version]), version=version))
    assert fetched == sf.ShareFetchResponse(
        acquisition_lock_timeout_ms=30000, api_version=version,
        partitions=(sf.ShareFetchPartitionData(
            TOPIC_ID, 2, leader_id=1, leader_epoch=0, records=b"\x01\x02\x03",
            acquired_records=(sf.AcquiredRecords(10, 12, 1),),
        ),),
    )
    acknowledged = wire.share_acknowledge_response_value(
        wire.ShareAcknowledgeResponse.decode(bytes.fromhex(GOLDEN["acknowledge_response", version]), version=version))
    assert acknowledged == sf.ShareAcknowledgeResponse(
        acquisition_lock_timeout_ms=30000 if version >= 2 else None, api_version=version,
        partitions=(sf.ShareAcknowledgePartition(TOPIC_ID, 0),),
    )
