"""A blocking raw Kafka client for integration tests: pipelined requests over kgroup's adapter codec,
plus JoinGroup/SyncGroup/Heartbeat bodies. Not a test module."""

from __future__ import annotations

import itertools
import select
import socket
from collections import deque

from kgroup._io import kafka_frames as frames

from .harness import SESSION_TIMEOUT_MS

JOIN_GROUP, HEARTBEAT, SYNC_GROUP = 11, 12, 14
NONE, MEMBER_ID_REQUIRED = 0, 79


def address_of(bootstrap: str) -> tuple[str, int]:
    host, _, port = bootstrap.rpartition(":")
    return host, int(port)


class RawClient:
    """One blocking Kafka connection: pipelined requests, responses decoded in order."""

    def __init__(self, address: str | tuple[str, int], client_id: str = "raw") -> None:
        host, port = address_of(address) if isinstance(address, str) else address
        self.sock = socket.create_connection((host, port), timeout=10)
        self.client_id = client_id
        self._ids = itertools.count(1)
        self._pending: deque[tuple[int, int, int]] = deque()

    def send(self, api_key: int, version: int, body: dict) -> int:
        correlation_id = next(self._ids)
        self.sock.sendall(frames.encode_request(api_key, version, correlation_id, self.client_id, body))
        self._pending.append((correlation_id, api_key, version))
        return correlation_id

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed by the proxy")
            data += chunk
        return data

    def recv(self, timeout_s: float = 10.0) -> tuple[int, dict]:
        self.sock.settimeout(timeout_s)
        size = int.from_bytes(self._read(4), "big")
        frame = self._read(size)
        expected, api_key, version = self._pending.popleft()
        correlation_id, body = frames.decode_response(api_key, version, frame)
        assert correlation_id == expected, (correlation_id, expected)
        return correlation_id, body

    def request(self, api_key: int, version: int, body: dict, timeout_s: float = 10.0) -> dict:
        self.send(api_key, version, body)
        return self.recv(timeout_s)[1]

    def readable(self) -> bool:
        """Whether any byte (or EOF) is waiting, without blocking."""
        return bool(select.select([self.sock], [], [], 0)[0])

    def close(self) -> None:
        self.sock.close()


def join_body(group_id: str, member_id: str = "", metadata: bytes = b"\x00\x01") -> dict:
    return {
        "group_id": group_id,
        "session_timeout_ms": SESSION_TIMEOUT_MS,
        "rebalance_timeout_ms": 10000,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": metadata}],
        "reason": None,
    }


def join(client: RawClient, group_id: str) -> dict:
    """JoinGroup v9, retrying once with the id MEMBER_ID_REQUIRED hands out."""
    response = client.request(JOIN_GROUP, 9, join_body(group_id))
    if response["error_code"] == MEMBER_ID_REQUIRED:
        response = client.request(JOIN_GROUP, 9, join_body(group_id, response["member_id"]))
    assert response["error_code"] == NONE, response
    return response


def sync(client: RawClient, group_id: str, joined: dict) -> dict:
    me = joined["member_id"]
    assignments = [{"member_id": m["member_id"], "assignment": b"\x00\x01"} for m in joined["members"]]
    response = client.request(
        SYNC_GROUP,
        5,
        {
            "group_id": group_id,
            "generation_id": joined["generation_id"],
            "member_id": me,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocol_name": joined["protocol_name"],
            "assignments": assignments,
        },
    )
    assert response["error_code"] == NONE, response
    return response


def heartbeat_body(group_id: str, joined: dict | None = None) -> dict:
    return {
        "group_id": group_id,
        "generation_id": joined["generation_id"] if joined else -1,
        "member_id": joined["member_id"] if joined else "nobody",
        "group_instance_id": None,
    }
