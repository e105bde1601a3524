"""Differential test: kgroup's ConsumerProtocol codec against kafka-python's generated classes.

kafka-python 3.0.x generates ``kafka.protocol.consumer.metadata.ConsumerProtocolSubscription``
and ``ConsumerProtocolAssignment`` from Apache Kafka's JSON schemas (valid versions 0-3, not
flexible); ``kafka.protocol.old.consumer_protocol`` keeps the hand-written v0 structs. Bytes
either side writes must decode on the other side to the same values, and for canonical input
(sorted, unique) both must write identical bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# plain imports: if a kafka-python upgrade moves these, the compat tier must fail, not skip
import kafka.protocol.consumer.metadata as metadata
import kafka.protocol.old.consumer_protocol as old
import pytest
from hypothesis import given, settings

from kgroup.protocol.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kgroup.types import TopicPartition, partitions_by_topic
from tests.strategies import as_decoded, assignments, subscriptions

KpSubscription = metadata.ConsumerProtocolSubscription
KpAssignment = metadata.ConsumerProtocolAssignment

VERSIONS = [0, 1, 2, 3]


def test_kafka_python_supports_versions_zero_to_three():
    assert KpSubscription.max_version == 3
    assert KpAssignment.max_version == 3


def at_every_version(**strategies: Any) -> Callable[[Callable[..., None]], Any]:
    """A property test run at every version of :data:`VERSIONS`, 100 examples of ``strategies`` each."""

    def wrap(test: Callable[..., None]) -> Any:
        return pytest.mark.parametrize("version", VERSIONS)(settings(max_examples=100)(given(**strategies)(test)))

    return wrap


def _kp_subscription(s: Subscription, version: int):
    owned = [
        KpSubscription.TopicPartition(topic=topic, partitions=parts)
        for topic, parts in partitions_by_topic(s.owned_partitions).items()
    ]
    fields = {"topics": list(s.topics), "user_data": s.user_data}
    if version >= 1:
        fields["owned_partitions"] = owned
    if version >= 2:
        fields["generation_id"] = s.generation_id
    if version >= 3:
        fields["rack_id"] = s.rack_id
    return KpSubscription(version=version, **fields)


def _kp_assignment(a: Assignment, version: int):
    parts = [
        KpAssignment.TopicPartition(topic=topic, partitions=numbers)
        for topic, numbers in partitions_by_topic(a.partitions).items()
    ]
    return KpAssignment(version=version, assigned_partitions=parts, user_data=a.user_data)


def _from_kp_subscription(kp, version: int) -> Subscription:
    return Subscription(
        topics=tuple(kp.topics),
        user_data=kp.user_data,
        owned_partitions=tuple(
            TopicPartition(tp.topic, p) for tp in kp.owned_partitions for p in tp.partitions
        ),
        generation_id=kp.generation_id,
        rack_id=kp.rack_id,
        version=version,
    )


@at_every_version(s=subscriptions())
def test_subscription_kafka_python_bytes_decode_with_kgroup(version, s):
    wire = _kp_subscription(s, version).encode(version=version)
    assert decode_subscription(wire) == as_decoded(s, version)


@at_every_version(s=subscriptions())
def test_subscription_kgroup_bytes_decode_with_kafka_python(version, s):
    kp = KpSubscription.decode(encode_subscription(s, version))
    assert kp.version == version
    assert _from_kp_subscription(kp, version) == as_decoded(s, version)


@at_every_version(s=subscriptions())
def test_subscription_canonical_input_identical_bytes(version, s):
    assert encode_subscription(s, version) == _kp_subscription(s, version).encode(version=version)


@at_every_version(a=assignments())
def test_assignment_kafka_python_bytes_decode_with_kgroup(version, a):
    wire = _kp_assignment(a, version).encode(version=version)
    assert decode_assignment(wire) == Assignment(
        partitions=a.partitions, user_data=a.user_data, version=version
    )


@at_every_version(a=assignments())
def test_assignment_kgroup_bytes_decode_with_kafka_python(version, a):
    kp = KpAssignment.decode(encode_assignment(a, version))
    assert kp.version == version
    assert tuple(TopicPartition(tp.topic, tp.partition) for tp in kp.partitions()) == a.partitions
    assert kp.user_data == a.user_data


@at_every_version(a=assignments())
def test_assignment_canonical_input_identical_bytes(version, a):
    assert encode_assignment(a, version) == _kp_assignment(a, version).encode(version=version)


@settings(max_examples=100)
@given(s=subscriptions(version=0))
def test_subscription_v0_matches_kafka_python_hand_written_struct(s):
    kp = old.ConsumerProtocolMemberMetadata_v0(0, list(s.topics), s.user_data)
    assert encode_subscription(s, 0) == kp.encode()
    decoded = old.ConsumerProtocolMemberMetadata_v0.decode(encode_subscription(s, 0))
    assert tuple(decoded.topics) == s.topics
    assert decoded.user_data == s.user_data


@settings(max_examples=100)
@given(a=assignments(version=0))
def test_assignment_v0_matches_kafka_python_hand_written_struct(a):
    kp = old.ConsumerProtocolMemberAssignment_v0(
        0, sorted(partitions_by_topic(a.partitions).items()), a.user_data
    )
    assert encode_assignment(a, 0) == kp.encode()
    decoded = old.ConsumerProtocolMemberAssignment_v0.decode(encode_assignment(a, 0))
    assert tuple(TopicPartition(tp.topic, tp.partition) for tp in decoded.partitions()) == (
        a.partitions
    )


@settings(max_examples=100)
@given(s=subscriptions(version=3))
def test_subscription_newer_version_both_parse_as_v3(s):
    wire = b"\x00\x05" + encode_subscription(s)[2:] + b"\x00\x00\x00\x01"
    kp = KpSubscription.decode(wire)
    assert _from_kp_subscription(kp, 3) == decode_subscription(wire)
