"""The adapter's request builders encode at every version kafka-python 3.0.x supports up to
kgroup's maximum, and the fields each version carries survive a decode (guards the pin)."""

from __future__ import annotations

import pytest

from kgroup._io import kafka_python as kp
from kgroup.membership.commands import SendHeartbeat, SendJoinGroup, SendLeaveGroup, SendSyncGroup

JOIN = SendJoinGroup(
    request_id=1, node_id=0, member_id="m-1", group_instance_id="pod-0", session_timeout_ms=6000,
    rebalance_timeout_ms=300000, protocols=(("range", b"\x00\x03meta"),), reason="scale-out", timeout_ms=1,
)
SYNC = SendSyncGroup(
    request_id=2, node_id=0, generation_id=7, member_id="m-1", group_instance_id="pod-0",
    protocol_name="range", assignments=(("m-1", b"\x00\x03a"), ("m-2", b"\x00\x03b")), timeout_ms=1,
)
HEARTBEAT = SendHeartbeat(request_id=3, node_id=0, generation_id=7, member_id="m-1",
                          group_instance_id="pod-0", timeout_ms=1)
LEAVE = SendLeaveGroup(request_id=4, node_id=0, member_id="m-1", group_instance_id="pod-0",
                       reason="closing", timeout_ms=1)


def _versions(request, max_version):
    low, high = type(request).valid_versions
    return range(low, min(high, max_version) + 1)


def _roundtrip(request, version):
    request.API_VERSION = version
    return type(request).decode(request.encode(), version=version)


@pytest.mark.parametrize("version", range(0, kp.JOIN_GROUP_MAX + 1))
def test_join_group_builder_encodes_at_every_version(version):
    request = kp.build_join_group(JOIN, "g")
    assert version in _versions(request, kp.JOIN_GROUP_MAX)
    decoded = _roundtrip(request, version)
    assert decoded.group_id == "g"
    assert decoded.member_id == "m-1"
    assert decoded.session_timeout_ms == 6000
    assert [(p.name, bytes(p.metadata)) for p in decoded.protocols] == [("range", b"\x00\x03meta")]
    if version >= 1:
        assert decoded.rebalance_timeout_ms == 300000
    if version >= 5:
        assert decoded.group_instance_id == "pod-0"
    if version >= 8:
        assert decoded.reason == "scale-out"


@pytest.mark.parametrize("version", range(0, kp.SYNC_GROUP_MAX + 1))
def test_sync_group_builder_encodes_at_every_version(version):
    decoded = _roundtrip(kp.build_sync_group(SYNC, "g"), version)
    assert decoded.generation_id == 7
    assert [(a.member_id, bytes(a.assignment)) for a in decoded.assignments] == [
        ("m-1", b"\x00\x03a"), ("m-2", b"\x00\x03b"),
    ]
    if version >= 3:
        assert decoded.group_instance_id == "pod-0"
    if version >= 5:
        assert decoded.protocol_name == "range"


@pytest.mark.parametrize("version", range(0, kp.HEARTBEAT_MAX + 1))
def test_heartbeat_builder_encodes_at_every_version(version):
    decoded = _roundtrip(kp.build_heartbeat(HEARTBEAT, "g"), version)
    assert (decoded.generation_id, decoded.member_id) == (7, "m-1")
    if version >= 3:
        assert decoded.group_instance_id == "pod-0"


@pytest.mark.parametrize("version", range(0, kp.LEAVE_GROUP_MAX + 1))
def test_leave_group_builder_encodes_at_every_version(version):
    decoded = _roundtrip(kp.build_leave_group(LEAVE, "g"), version)
    if version <= 2:
        assert decoded.member_id == "m-1"
    else:
        assert [(m.member_id, m.group_instance_id) for m in decoded.members] == [("m-1", "pod-0")]
    if version >= 5:
        assert decoded.members[0].reason == "closing"


@pytest.mark.parametrize("version", range(0, kp.FIND_COORDINATOR_MAX + 1))
def test_find_coordinator_builder_encodes_at_every_version(version):
    decoded = _roundtrip(kp.build_find_coordinator("g"), version)
    if version <= 3:
        assert decoded.key == "g"
    else:
        assert list(decoded.coordinator_keys) == ["g"]
