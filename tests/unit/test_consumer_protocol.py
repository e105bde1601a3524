"""Golden bytes and malformed-input rules of kgroup.protocol.consumer_protocol.

Every golden byte string below was derived by hand from the ConsumerProtocol schemas
(int16 version; int32 array counts; int16-length strings; int32-length nullable bytes).
"""

from __future__ import annotations

import struct

import pytest

from kgroup.errors import MalformedMetadata
from kgroup.protocol.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kgroup.types import TopicPartition as TP

# --- golden values ---------------------------------------------------------------------------

SUB_V0 = Subscription(topics=("orders", "payments"), version=0)
SUB_V0_BYTES = (
    b"\x00\x00"  # version 0
    b"\x00\x00\x00\x02"  # 2 topics
    b"\x00\x06orders"
    b"\x00\x08payments"
    b"\xff\xff\xff\xff"  # user_data null
)

SUB_V1 = Subscription(
    topics=("t",), user_data=b"\x01\x02", owned_partitions=(TP("t", 0), TP("t", 2)), version=1
)
SUB_V1_BYTES = (
    b"\x00\x01"  # version 1
    b"\x00\x00\x00\x01"  # 1 topic
    b"\x00\x01t"
    b"\x00\x00\x00\x02\x01\x02"  # user_data, 2 bytes
    b"\x00\x00\x00\x01"  # owned: 1 topic
    b"\x00\x01t"
    b"\x00\x00\x00\x02"  # 2 partitions
    b"\x00\x00\x00\x00"
    b"\x00\x00\x00\x02"
)

SUB_V3 = Subscription(
    topics=("a", "b"),
    user_data=b"",
    owned_partitions=(TP("a", 0), TP("b", 1)),
    generation_id=7,
    rack_id="r1",
    version=3,
)
SUB_V3_BYTES = (
    b"\x00\x03"  # version 3
    b"\x00\x00\x00\x02"  # 2 topics
    b"\x00\x01a"
    b"\x00\x01b"
    b"\x00\x00\x00\x00"  # user_data, empty (not null)
    b"\x00\x00\x00\x02"  # owned: 2 topics
    b"\x00\x01a"
    b"\x00\x00\x00\x01"
    b"\x00\x00\x00\x00"  # a-0
    b"\x00\x01b"
    b"\x00\x00\x00\x01"
    b"\x00\x00\x00\x01"  # b-1
    b"\x00\x00\x00\x07"  # generation 7
    b"\x00\x02r1"  # rack "r1"
)

ASG_V0 = Assignment(partitions=(TP("t", 0), TP("t", 1), TP("u", 5)), version=0)
ASG_V0_BYTES = (
    b"\x00\x00"  # version 0
    b"\x00\x00\x00\x02"  # 2 topics
    b"\x00\x01t"
    b"\x00\x00\x00\x02"
    b"\x00\x00\x00\x00"
    b"\x00\x00\x00\x01"
    b"\x00\x01u"
    b"\x00\x00\x00\x01"
    b"\x00\x00\x00\x05"
    b"\xff\xff\xff\xff"  # user_data null
)

ASG_V3 = Assignment(partitions=(), user_data=b"x", version=3)
ASG_V3_BYTES = (
    b"\x00\x03"  # version 3
    b"\x00\x00\x00\x00"  # no topics
    b"\x00\x00\x00\x01x"  # user_data "x"
)

SUBSCRIPTION_GOLDEN = [(SUB_V0, SUB_V0_BYTES), (SUB_V1, SUB_V1_BYTES), (SUB_V3, SUB_V3_BYTES)]
ASSIGNMENT_GOLDEN = [(ASG_V0, ASG_V0_BYTES), (ASG_V3, ASG_V3_BYTES)]


@pytest.mark.parametrize(("value", "wire"), SUBSCRIPTION_GOLDEN, ids=["v0", "v1", "v3"])
def test_encode_subscription_golden_matches_hand_derived_bytes(value, wire):
    assert encode_subscription(value) == wire
    assert encode_subscription(value, value.version) == wire


@pytest.mark.parametrize(("value", "wire"), SUBSCRIPTION_GOLDEN, ids=["v0", "v1", "v3"])
def test_decode_subscription_golden_returns_value(value, wire):
    assert decode_subscription(wire) == value


@pytest.mark.parametrize(("value", "wire"), ASSIGNMENT_GOLDEN, ids=["v0", "v3"])
def test_encode_assignment_golden_matches_hand_derived_bytes(value, wire):
    assert encode_assignment(value) == wire


@pytest.mark.parametrize(("value", "wire"), ASSIGNMENT_GOLDEN, ids=["v0", "v3"])
def test_decode_assignment_golden_returns_value(value, wire):
    assert decode_assignment(wire) == value


def test_encode_subscription_unsorted_input_writes_sorted_grouped_bytes():
    messy = Subscription(
        topics=("b", "a", "b"),
        user_data=b"",
        owned_partitions=(TP("b", 1), TP("a", 0), TP("b", 1)),
        generation_id=7,
        rack_id="r1",
    )
    assert encode_subscription(messy) == SUB_V3_BYTES


def test_encode_assignment_unsorted_input_writes_grouped_bytes():
    messy = Assignment(partitions=(TP("u", 5), TP("t", 1), TP("t", 0)))
    assert encode_assignment(messy, version=0) == ASG_V0_BYTES


def test_encode_subscription_default_version_is_three():
    assert encode_subscription(Subscription(topics=()))[:2] == b"\x00\x03"


def test_encode_subscription_v0_drops_v1_plus_fields():
    s = Subscription(
        topics=("orders", "payments"),
        owned_partitions=(TP("orders", 1),),
        generation_id=3,
        rack_id="r",
    )
    assert encode_subscription(s, version=0) == SUB_V0_BYTES


def test_encode_subscription_v2_writes_generation_but_not_rack():
    s = Subscription(topics=(), generation_id=9, rack_id="r")
    assert encode_subscription(s, version=2) == (
        b"\x00\x02"  # version 2
        b"\x00\x00\x00\x00"  # no topics
        b"\xff\xff\xff\xff"  # user_data null
        b"\x00\x00\x00\x00"  # no owned partitions
        b"\x00\x00\x00\x09"  # generation 9; no rack at v2
    )


def test_encode_subscription_version_above_three_writes_three():
    assert encode_subscription(SUB_V3, version=7) == SUB_V3_BYTES


def test_encode_subscription_negative_version_raises_value_error():
    with pytest.raises(ValueError, match="version"):
        encode_subscription(SUB_V3, version=-1)


def test_encode_assignment_negative_version_raises_value_error():
    with pytest.raises(ValueError, match="version"):
        encode_assignment(ASG_V3, version=-1)


def test_encode_subscription_topic_too_long_raises_value_error():
    with pytest.raises(ValueError, match="32767"):
        encode_subscription(Subscription(topics=("x" * 32768,)))


def test_encode_assignment_partition_outside_int32_raises_value_error():
    with pytest.raises(ValueError, match="int32"):
        encode_assignment(Assignment(partitions=(TP("t", 2**31),)))


# --- forward compatibility -------------------------------------------------------------------


def test_decode_subscription_v4_with_extra_fields_parses_as_v3():
    extra = b"\x00\x00\x00\x2a" + b"\x00\x05extra" + b"\xff"  # fields a v4 might add
    wire = b"\x00\x04" + SUB_V3_BYTES[2:] + extra
    assert decode_subscription(wire) == SUB_V3


def test_decode_subscription_max_int16_version_parses_as_v3():
    assert decode_subscription(b"\x7f\xff" + SUB_V3_BYTES[2:]) == SUB_V3


def test_decode_assignment_v4_with_extra_fields_parses_as_v3():
    wire = b"\x00\x04" + ASG_V3_BYTES[2:] + b"\x00\x01\x02\x03"
    assert decode_assignment(wire) == ASG_V3


def test_decode_subscription_v0_trailing_bytes_ignored():
    assert decode_subscription(SUB_V0_BYTES + b"\x00\x00\x00\x01") == SUB_V0


def test_decode_subscription_v0_fields_absent_come_back_as_defaults():
    s = decode_subscription(SUB_V0_BYTES)
    assert s.owned_partitions == ()
    assert s.generation_id == -1
    assert s.rack_id is None
    assert s.version == 0


def test_decode_subscription_accepts_bytearray_and_memoryview():
    assert decode_subscription(bytearray(SUB_V1_BYTES)) == SUB_V1
    assert decode_subscription(memoryview(SUB_V1_BYTES)) == SUB_V1


# --- malformed input -------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "wire"), SUBSCRIPTION_GOLDEN, ids=["v0", "v1", "v3"])
def test_decode_subscription_every_truncation_raises_malformed(value, wire):
    for cut in range(len(wire)):
        with pytest.raises(MalformedMetadata, match="subscription"):
            decode_subscription(wire[:cut])


@pytest.mark.parametrize(("value", "wire"), ASSIGNMENT_GOLDEN, ids=["v0", "v3"])
def test_decode_assignment_every_truncation_raises_malformed(value, wire):
    for cut in range(1, len(wire)):  # cut 0 is b"", the empty assignment
        with pytest.raises(MalformedMetadata, match="assignment"):
            decode_assignment(wire[:cut])


def test_decode_subscription_empty_bytes_raises_malformed():
    with pytest.raises(MalformedMetadata, match="version"):
        decode_subscription(b"")


def test_decode_subscription_negative_version_raises_malformed():
    with pytest.raises(MalformedMetadata, match="unsupported version -1"):
        decode_subscription(b"\xff\xff" + SUB_V0_BYTES[2:])


def test_decode_assignment_negative_version_raises_malformed():
    with pytest.raises(MalformedMetadata, match="unsupported version -2"):
        decode_assignment(b"\xff\xfe" + ASG_V3_BYTES[2:])


def test_decode_subscription_null_topics_array_raises_malformed():
    with pytest.raises(MalformedMetadata, match="topics"):
        decode_subscription(b"\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff")


def test_decode_subscription_huge_array_count_raises_malformed_without_allocating():
    with pytest.raises(MalformedMetadata, match="cannot fit"):
        decode_subscription(b"\x00\x00\x7f\xff\xff\xff\x00\x01a")


def test_decode_subscription_null_topic_string_raises_malformed():
    wire = b"\x00\x00\x00\x00\x00\x01\xff\xff\xff\xff\xff\xff"
    with pytest.raises(MalformedMetadata, match="non-nullable string"):
        decode_subscription(wire)


def test_decode_subscription_bad_user_data_length_raises_malformed():
    wire = b"\x00\x00\x00\x00\x00\x00" + struct.pack(">i", -5)
    with pytest.raises(MalformedMetadata, match="user_data"):
        decode_subscription(wire)


def test_decode_subscription_bad_rack_length_raises_malformed():
    wire = SUB_V3_BYTES[: -len(b"\x00\x02r1")] + b"\xff\xfe"
    with pytest.raises(MalformedMetadata, match="rack_id"):
        decode_subscription(wire)


def test_decode_subscription_invalid_utf8_raises_malformed():
    wire = b"\x00\x00\x00\x00\x00\x01\x00\x02\xc3\x28\xff\xff\xff\xff"
    with pytest.raises(MalformedMetadata, match="UTF-8"):
        decode_subscription(wire)


def test_decode_assignment_garbled_partition_count_raises_malformed():
    wire = b"\x00\x00\x00\x00\x00\x01\x00\x01t\x40\x00\x00\x00\x00\x00\x00\x01"
    with pytest.raises(MalformedMetadata, match="partitions"):
        decode_assignment(wire)


# --- null vs empty user data; empty assignment -----------------------------------------------


def test_subscription_null_and_empty_user_data_are_distinct_on_the_wire():
    null = encode_subscription(Subscription(topics=(), user_data=None), version=0)
    empty = encode_subscription(Subscription(topics=(), user_data=b""), version=0)
    assert null == b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"
    assert empty == b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    assert decode_subscription(null).user_data is None
    assert decode_subscription(empty).user_data == b""


def test_assignment_null_and_empty_user_data_are_distinct_on_the_wire():
    null = encode_assignment(Assignment(partitions=(), user_data=None))
    empty = encode_assignment(Assignment(partitions=(), user_data=b""))
    assert null.endswith(b"\xff\xff\xff\xff")
    assert empty.endswith(b"\x00\x00\x00\x00")
    assert decode_assignment(null).user_data is None
    assert decode_assignment(empty).user_data == b""


def test_decode_assignment_empty_bytes_returns_empty_assignment():
    a = decode_assignment(b"")
    assert a == Assignment(partitions=())
    assert a.partitions == ()
    assert a.user_data is None
