"""The client's group requests, built by the one mapping (kgroup._io.kafka_messages), encode at every
version kafka-python 3.0.x supports up to kgroup's newest, and the fields each version carries
survive a decode (guards the pin)."""

from __future__ import annotations

import pytest

from kgroup._io.kafka_messages import request_message
from kgroup.membership.commands import SendFindCoordinator, SendHeartbeat, SendJoinGroup, SendLeaveGroup, SendSyncGroup
from kgroup.protocol.group_api import (
    FIND_COORDINATOR,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    NEWEST_VERSIONS,
    SYNC_GROUP,
    LeaveMember,
    SyncGroupAssignment,
)

JOIN = SendJoinGroup(
    request_id=1, node_id=0, timeout_ms=1, group_id="g", member_id="m-1", group_instance_id="pod-0",
    session_timeout_ms=6000, rebalance_timeout_ms=300000, protocols=(("range", b"\x00\x03meta"),), reason="scale-out",
)
SYNC = SendSyncGroup(
    request_id=2, node_id=0, timeout_ms=1, group_id="g", generation_id=7, member_id="m-1", group_instance_id="pod-0",
    protocol_type="consumer", protocol_name="range",
    assignments=(
        SyncGroupAssignment(member_id="m-1", assignment=b"\x00\x03a"),
        SyncGroupAssignment(member_id="m-2", assignment=b"\x00\x03b"),
    ),
)
HEARTBEAT_COMMAND = SendHeartbeat(
    request_id=3, node_id=0, timeout_ms=1, group_id="g", generation_id=7, member_id="m-1", group_instance_id="pod-0"
)
LEAVE = SendLeaveGroup(
    request_id=4, node_id=0, timeout_ms=1, group_id="g",
    members=(LeaveMember(member_id="m-1", group_instance_id="pod-0", reason="closing"),),
)
FIND = SendFindCoordinator(request_id=5, timeout_ms=1, key="g")


def _roundtrip(command, version):
    request = request_message(command)
    assert request._max_version == NEWEST_VERSIONS[command.API_KEY]  # the connection negotiates down from it
    request.API_VERSION = version
    return type(request).decode(request.encode(), version=version)


@pytest.mark.parametrize("version", range(0, NEWEST_VERSIONS[JOIN_GROUP] + 1))
def test_join_group_encodes_at_every_version(version):
    decoded = _roundtrip(JOIN, version)
    assert decoded.group_id == "g"
    assert decoded.member_id == "m-1"
    assert decoded.session_timeout_ms == 6000
    assert decoded.protocol_type == "consumer"
    assert [(p.name, bytes(p.metadata)) for p in decoded.protocols] == [("range", b"\x00\x03meta")]
    if version >= 1:
        assert decoded.rebalance_timeout_ms == 300000
    if version >= 5:
        assert decoded.group_instance_id == "pod-0"
    if version >= 8:
        assert decoded.reason == "scale-out"


@pytest.mark.parametrize("version", range(0, NEWEST_VERSIONS[SYNC_GROUP] + 1))
def test_sync_group_encodes_at_every_version(version):
    decoded = _roundtrip(SYNC, version)
    assert decoded.generation_id == 7
    assert [(a.member_id, bytes(a.assignment)) for a in decoded.assignments] == [
        ("m-1", b"\x00\x03a"), ("m-2", b"\x00\x03b"),
    ]
    if version >= 3:
        assert decoded.group_instance_id == "pod-0"
    if version >= 5:
        assert (decoded.protocol_type, decoded.protocol_name) == ("consumer", "range")


@pytest.mark.parametrize("version", range(0, NEWEST_VERSIONS[HEARTBEAT] + 1))
def test_heartbeat_encodes_at_every_version(version):
    decoded = _roundtrip(HEARTBEAT_COMMAND, version)
    assert (decoded.generation_id, decoded.member_id) == (7, "m-1")
    if version >= 3:
        assert decoded.group_instance_id == "pod-0"


@pytest.mark.parametrize("version", range(0, NEWEST_VERSIONS[LEAVE_GROUP] + 1))
def test_leave_group_encodes_at_every_version(version):
    decoded = _roundtrip(LEAVE, version)
    if version <= 2:
        assert decoded.member_id == "m-1"
    else:
        assert [(m.member_id, m.group_instance_id) for m in decoded.members] == [("m-1", "pod-0")]
    if version >= 5:
        assert decoded.members[0].reason == "closing"


@pytest.mark.parametrize("version", range(0, NEWEST_VERSIONS[FIND_COORDINATOR] + 1))
def test_find_coordinator_encodes_at_every_version(version):
    decoded = _roundtrip(FIND, version)
    keys = [decoded.key] if version <= 3 else list(decoded.coordinator_keys)  # v4+: a batch of keys
    assert keys == ["g"]
