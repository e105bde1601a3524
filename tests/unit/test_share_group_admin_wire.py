"""Share groups' admin APIs on the wire (KIP-932): kgroup's kafka-python classes against Apache Kafka's encoding.

The golden frames are what Apache Kafka 4.4's generated classes write
(``ShareGroupDescribeRequestData``, ``DescribeShareGroupOffsetsRequestData`` and the rest, through
``MessageUtil.toByteBufferAccessor(message, version)``, kafka-clients 4.4.0) for the values
below: ShareGroupDescribe v1 (77), DescribeShareGroupOffsets v0 and v1 (90; v1 adds ``Lag``),
AlterShareGroupOffsets v0 (91) and DeleteShareGroupOffsets v0 (92), the versions the Kafka 4.4
broker lists in ApiVersions. Requests must encode to those bytes; responses must decode from
them to kgroup's values.
"""

from __future__ import annotations

import pytest

from kgroup import _error_codes as codes
from kgroup._io import kafka_messages as wire
from kgroup.protocol.consumer_group_describe import NamedTopicPartitions
from kgroup.protocol.share_group_admin import (
    DescribedShareGroup,
    DescribedShareMember,
    ShareGroupOffsets,
    ShareOffsetsAltered,
    ShareOffsetsDeleted,
    SharePartitionOffset,
)
from kgroup.types import TopicPartition
from tests.unit.test_kip848_wire import TOPIC_ID

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))


def test_share_group_describe_request_encodes_as_apache_kafka_does() -> None:
    message = wire.share_describe_request_message(["g", "h"])
    assert message.encode(version=1).hex() == "03026702680000"


def test_share_group_describe_response_decodes_members_and_assignments_by_topic_name() -> None:
    golden = bytes.fromhex(
        "0000000003000000026707537461626c6500000004000000040773696d706c6502026d0272000000030263032f68020274"
        "020102030405060708090a0b0c0d0e0f10027403000000000000000200000080000000000045036e6f0268010000000000"
        "0000000101800000000000"
    )
    groups = wire.share_describe_response_value(wire.ShareGroupDescribeResponse.decode(golden, version=1))
    assert groups == (
        DescribedShareGroup(
            error_code=0, group_id="g", group_state="Stable", group_epoch=4, assignment_epoch=4,
            assignor_name="simple",
            members=(DescribedShareMember(
                member_id="m", rack_id="r", member_epoch=3, client_id="c", client_host="/h",
                subscribed_topic_names=("t",), assignment=(NamedTopicPartitions(TOPIC_ID, "t", (0, 2)),),
            ),),
        ),
        DescribedShareGroup(error_code=codes.GROUP_ID_NOT_FOUND, error_message="no", group_id="h", group_epoch=0,
                            assignment_epoch=0),
    )


@pytest.mark.parametrize(("topics", "version", "golden"), [
    (None, 1, "020267000000"),
    ({"t": [0, 2]}, 0, "020267020274030000000000000002000000"),
], ids=["all-partitions", "some"])
def test_describe_share_group_offsets_request_encodes_as_apache_kafka_does(topics, version, golden) -> None:
    assert wire.share_offsets_request_message("g", topics).encode(version=version).hex() == golden


OFFSETS_V0 = (
    "000000000202670202740102030405060708090a0b0c0d0e0f1003000000000000000000000005000000000000000000000002"
    "ffffffffffffffffffffffff000305676f6e6500000000000000"
)
OFFSETS_V1 = (
    "000000000202670202740102030405060708090a0b0c0d0e0f10030000000000000000000000050000000000000000000000020000"
    "000000000002ffffffffffffffffffffffffffffffffffffffff000305676f6e6500000000000000"
)


@pytest.mark.parametrize(("version", "golden", "lag"), [(0, OFFSETS_V0, -1), (1, OFFSETS_V1, 2)], ids=["v0", "v1"])
def test_describe_share_group_offsets_response_decodes_start_offsets_and_lag(version, golden, lag) -> None:
    message = wire.DescribeShareGroupOffsetsResponse.decode(bytes.fromhex(golden), version=version)
    assert wire.share_offsets_response_value(message, "g") == ShareGroupOffsets(error_code=0, partitions={
        T0: SharePartitionOffset(start_offset=5, leader_epoch=0, lag=lag),
        T2: SharePartitionOffset(start_offset=-1, leader_epoch=-1, lag=-1, error_code=3, error_message="gone"),
    })
    missing = wire.share_offsets_response_value(message, "other")
    assert missing.error_code == codes.INVALID_REQUEST and not missing.partitions


def test_alter_share_group_offsets_encodes_and_decodes_as_apache_kafka_does() -> None:
    request = wire.alter_share_offsets_request_message("g", {T1: 0, T0: 5})
    assert request.encode(version=0).hex() == "02670202740300000000000000000000000500000000010000000000000000000000"
    answer = wire.AlterShareGroupOffsetsResponse.decode(bytes.fromhex(
        "000000000000000202740102030405060708090a0b0c0d0e0f1003000000000000000000000001000305676f6e65000000"
    ), version=0)
    assert wire.alter_share_offsets_response_value(answer) == ShareOffsetsAltered(
        error_code=0, partitions={T0: 0, T1: codes.UNKNOWN_TOPIC_OR_PARTITION})
    refused = wire.AlterShareGroupOffsetsResponse.decode(bytes.fromhex("000000000044086d656d626572730100"), version=0)
    assert wire.alter_share_offsets_response_value(refused) == ShareOffsetsAltered(
        error_code=codes.NON_EMPTY_GROUP, error_message="members")


def test_delete_share_group_offsets_encodes_and_decodes_as_apache_kafka_does() -> None:
    assert wire.delete_share_offsets_request_message("g", ["t", "t"]).encode(version=0).hex() == "02670202740000"
    answer = wire.DeleteShareGroupOffsetsResponse.decode(
        bytes.fromhex("000000000000000202740102030405060708090a0b0c0d0e0f100000000000"), version=0)
    assert wire.delete_share_offsets_response_value(answer) == ShareOffsetsDeleted(error_code=0, topics={"t": 0})
