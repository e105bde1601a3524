"""Round-trip properties of the ConsumerProtocol codec, versions 0-3."""

from __future__ import annotations

import contextlib

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.errors import MalformedMetadata
from kgroup.protocol.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from tests.strategies import as_decoded, assignments, subscriptions, wire_versions

VERSIONS = [0, 1, 2, 3]


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=150)
@given(s=subscriptions())
def test_subscription_roundtrip_each_version_absent_fields_default(version, s):
    wire = encode_subscription(s, version)
    assert decode_subscription(wire) == as_decoded(s, version)


@settings(max_examples=150)
@given(s=subscriptions())
def test_subscription_roundtrip_own_version_is_identity(s):
    assert decode_subscription(encode_subscription(s)) == as_decoded(s, s.version)


@settings(max_examples=150)
@given(s=subscriptions(), version=wire_versions())
def test_subscription_reencode_decoded_bytes_identical(s, version):
    wire = encode_subscription(s, version)
    assert encode_subscription(decode_subscription(wire)) == wire


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=150)
@given(a=assignments())
def test_assignment_roundtrip_each_version_equal(version, a):
    assert decode_assignment(encode_assignment(a, version)) == attrs.evolve(a, version=version)


@settings(max_examples=150)
@given(a=assignments(), version=wire_versions())
def test_assignment_versions_share_layout_after_header(a, version):
    assert encode_assignment(a, version)[2:] == encode_assignment(a, 0)[2:]


@settings(max_examples=150)
@given(
    s=subscriptions(version=3),
    tail=st.binary(max_size=16),
    wire_version=st.integers(4, 2**15 - 1),
)
def test_subscription_newer_version_with_tail_parses_as_v3(s, tail, wire_version):
    wire = encode_subscription(s)
    newer = wire_version.to_bytes(2, "big") + wire[2:] + tail
    assert decode_subscription(newer) == as_decoded(s, 3)


@settings(max_examples=200)
@given(data=st.binary(max_size=64))
def test_decode_subscription_arbitrary_bytes_only_malformed_metadata(data):
    with contextlib.suppress(MalformedMetadata):
        decode_subscription(data)


@settings(max_examples=200)
@given(data=st.binary(max_size=64))
def test_decode_assignment_arbitrary_bytes_only_malformed_metadata(data):
    with contextlib.suppress(MalformedMetadata):
        decode_assignment(data)


@settings(max_examples=100)
@given(s=subscriptions(), version=wire_versions(), data=st.data())
def test_decode_subscription_truncated_valid_encoding_raises_malformed(s, version, data):
    wire = encode_subscription(s, version)
    cut = data.draw(st.integers(0, len(wire) - 1))
    with pytest.raises(MalformedMetadata):
        decode_subscription(wire[:cut])
