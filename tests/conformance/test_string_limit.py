"""Kafka's 0x7fff-byte STRING limit on the wire: Apache Kafka and ``CoordinatorProxy`` both close the connection.

Kafka's generated readers (e.g. ``JoinGroupRequestData.read``) throw on a STRING longer than 0x7fff
bytes, ``RequestContext.parseRequest`` turns that into an ``InvalidRequestException`` and
``SocketServer``'s processor closes the connection without answering. Flexible versions (compact
strings) can carry longer strings, and kafka-python decodes them, so the proxy checks decoded
coordinator requests with ``kgroup.testing._model_wire.check_string_lengths`` and closes the connection
too. The same requests, one byte shorter, are answered by both.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kgroup.testing import CoordinatorProxy

from .conftest import MODEL_CONFIG
from .harness import CLOSED, Broker, Closed, KafkaConnection

JOIN_GROUP, LEAVE_GROUP = 11, 13


def _join(group: str, reason: str | None, instance: str | None = None) -> dict[str, Any]:
    return {
        "group_id": group,
        "session_timeout_ms": 10000,
        "rebalance_timeout_ms": 10000,
        "member_id": "",
        "group_instance_id": instance,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
        "reason": reason,
    }


def _leave(group: str, reason: str) -> dict[str, Any]:
    member = f"a-{uuid.uuid4()}"
    return {"group_id": group, "member_id": member, "members": [{"member_id": member, "reason": reason}]}


def _answer(address: tuple[str, int], api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any] | Closed:
    conn = KafkaConnection(address, "limit", 0.0)
    try:
        conn.send(api_key, version, body)
        got = conn.receive(10.0)
        assert got is not None, "neither an answer nor a close within 10 s"
        return got[1]
    finally:
        conn.close()


CASES = [
    pytest.param(JOIN_GROUP, 8, lambda g, s: _join(g, s), 79, id="JoinGroup-v8-reason"),  # MEMBER_ID_REQUIRED
    # A static member id is the instance id, '-' and a UUID: at the limit, the answer cannot be serialized
    # and Kafka answers UNKNOWN_SERVER_ERROR (JoinGroupRequest.getErrorResponse).
    pytest.param(JOIN_GROUP, 9, lambda g, s: _join(g, None, instance=s), -1, id="JoinGroup-v9-group_instance_id"),
    pytest.param(LEAVE_GROUP, 5, _leave, 0, id="LeaveGroup-v5-reason"),  # per member: UNKNOWN_MEMBER_ID
]


@pytest.fixture(scope="module")
def proxy(conformance_broker: Broker) -> Any:
    host, port = conformance_broker.address
    with CoordinatorProxy(f"{host}:{port}", config=MODEL_CONFIG) as started:
        yield started


def _address(bootstrap: str) -> tuple[str, int]:
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    return host, int(port)


@pytest.mark.parametrize(("api_key", "version", "body", "error_at_limit"), CASES)
@pytest.mark.parametrize("where", ["kafka", "proxy"])
def test_a_string_over_0x7fff_bytes_closes_the_connection(
    where: str,
    api_key: int,
    version: int,
    body: Any,
    error_at_limit: int,
    conformance_broker: Broker,
    proxy: CoordinatorProxy,
) -> None:
    address = conformance_broker.address if where == "kafka" else _address(proxy.bootstrap_servers)
    group = f"limit-{uuid.uuid4().hex[:8]}"
    before = len(proxy.requests(api_key))
    assert _answer(address, api_key, version, body(group, "é" * 16384)) is CLOSED  # 32768 UTF-8 bytes
    at_limit = _answer(address, api_key, version, body(group, "y" * 0x7FFF))
    assert isinstance(at_limit, dict)
    assert at_limit["error_code"] == error_at_limit
    if where == "proxy":
        first, second = proxy.requests(api_key)[before:]
        assert (first.handled_by, first.ready_at) == ("proxy", None)  # never answered
        assert (second.handled_by, second.ready_at is not None) == ("model", True)
