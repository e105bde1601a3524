"""What the two broker launchers share: readiness probes, free ports, log tails, their errors.

:mod:`kgroup.testing.broker` (Tansu, containers, and :func:`~kgroup.testing.broker.start_broker`)
and :mod:`kgroup.testing.apache_kafka` (Apache Kafka as JVM children) both start a broker
process and wait until it answers: :func:`wait_until_ready` polls it with a hand-encoded
ApiVersions v0 request, :func:`metadata_probe` asks a node which brokers it knows (Metadata
v4), and a failure quotes the end of the broker's log (:func:`log_tail`). Neither needs a Kafka
client library.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

__all__ = [
    "CLIENT_ID",
    "PORT_ATTEMPTS",
    "PROBE_IO_TIMEOUT_S",
    "STOP_TIMEOUT_S",
    "BrokerExited",
    "BrokerNotReady",
    "BrokerStartError",
    "api_versions_probe",
    "free_port",
    "log_tail",
    "metadata_probe",
    "recv_exact",
    "spawn",
    "wait_until_ready",
]

#: the ``client.id`` of the probes and of the test helpers' clients
CLIENT_ID: Final = "kgroup-testing"
#: how long a broker process gets to stop after SIGTERM before SIGKILL (s)
STOP_TIMEOUT_S: Final = 10.0
_READY_RETRY_INTERVAL_S: Final = 0.02
#: how long one probe may wait for its connection and answer (s)
PROBE_IO_TIMEOUT_S: Final = 1.0
#: ports tried when another process takes the free port first
PORT_ATTEMPTS: Final = 3
#: log lines quoted when a broker fails to start
LOG_TAIL_LINES: Final = 30
_API_VERSIONS_KEY: Final = 18
_METADATA_KEY: Final = 3
_METADATA_VERSION: Final = 4


class BrokerStartError(RuntimeError):
    """The test broker could not be started, or did not answer before the deadline."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def spawn(command: Sequence[str], log_path: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start ``command`` in its own session (signals reach its process group), output appended to ``log_path``."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of the log at ``path`` (or why it could not be read)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"<could not read {path}: {exc}>"
    tail = text.splitlines()[-lines:]
    return "\n".join(tail) if tail else "<log is empty>"


class BrokerExited(Exception):
    """The broker process exited while it was being waited for."""


class BrokerNotReady(Exception):
    """The broker did not answer before the deadline (the message is the last probe error)."""


def wait_until_ready(proc: subprocess.Popen[bytes], host: str, port: int, deadline: float) -> None:
    """Poll with ApiVersions v0 until the broker answers, it exits, or the deadline passes."""
    last_error = "no attempt made"
    correlation_id = 0
    while True:
        if proc.poll() is not None:
            raise BrokerExited
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BrokerNotReady(last_error)
        correlation_id += 1
        try:
            api_versions_probe(host, port, correlation_id, min(PROBE_IO_TIMEOUT_S, remaining))
        except (OSError, ValueError) as exc:
            last_error = f"{type(exc).__name__}: {exc}"
        else:
            # Guard against answering for a foreign listener that grabbed the port.
            if proc.poll() is not None:
                raise BrokerExited
            return
        time.sleep(min(_READY_RETRY_INTERVAL_S, max(0.0, deadline - time.monotonic())))


def _exchange(
    host: str, port: int, header: tuple[int, int, int], body: bytes, timeout_s: float, api: str, min_size: int
) -> bytes:
    """Send one request over a fresh connection; return the response after its size field.

    ``header`` is ``(api_key, api_version, correlation_id)``; kgroup's client id follows it.

    Raises:
        OSError: connection refused/reset, timeout, or the broker closed the connection.
        ValueError: the response size is below ``min_size`` or over 1 MiB.

    """
    client_id = CLIENT_ID.encode()
    payload = struct.pack(">hhih", *header, len(client_id)) + client_id + body
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        sock.settimeout(timeout_s)
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        (size,) = struct.unpack(">i", recv_exact(sock, 4))
        if not min_size <= size <= 1 << 20:
            raise ValueError(f"implausible {api} response size {size}")
        return recv_exact(sock, size)


def api_versions_probe(host: str, port: int, correlation_id: int, timeout_s: float) -> None:
    """Send one ApiVersions v0 request over a fresh connection and check the answer.

    The request is encoded by hand (it is 24 bytes): size, api_key=18, api_version=0,
    correlation_id, client_id (int16-length string), empty body.

    Raises:
        OSError: connection refused/reset, timeout, or the broker closed the connection.
        ValueError: the response is malformed or carries a non-zero error code.

    """
    body = _exchange(host, port, (_API_VERSIONS_KEY, 0, correlation_id), b"", timeout_s, "ApiVersions", 6)
    got_correlation_id, error_code = struct.unpack_from(">ih", body)
    if got_correlation_id != correlation_id:
        raise ValueError(f"correlation id {got_correlation_id} != {correlation_id}")
    if error_code != 0:
        raise ValueError(f"ApiVersions error code {error_code}")


def metadata_probe(
    host: str, port: int, correlation_id: int, timeout_s: float
) -> dict[int, tuple[str, int]]:
    """Send one Metadata v4 request for no topics and return the brokers it lists.

    Encoded by hand like :func:`api_versions_probe`: header (api_key=3, api_version=4,
    correlation_id, client_id), then an empty topic array (v1+: no topics, brokers only) and
    ``allow_auto_topic_creation=false``. The response (v4, not flexible) is
    ``throttle_time_ms, [node_id, host, port, rack], cluster_id, controller_id, [topics]``.

    Returns:
        Node id -> ``(host, port)`` for every broker the answering node knows as alive.

    Raises:
        OSError: connection refused/reset, timeout, or the broker closed the connection.
        ValueError: the response is malformed.

    """
    header = (_METADATA_KEY, _METADATA_VERSION, correlation_id)
    body = _exchange(host, port, header, struct.pack(">ib", 0, 0), timeout_s, "Metadata", 12)
    try:
        got_correlation_id, _throttle, count = struct.unpack_from(">iii", body)
        if got_correlation_id != correlation_id:
            raise ValueError(f"correlation id {got_correlation_id} != {correlation_id}")
        offset = 12
        brokers: dict[int, tuple[str, int]] = {}
        for _ in range(count):
            node_id, host_len = struct.unpack_from(">ih", body, offset)
            offset += 6
            node_host = body[offset : offset + host_len].decode("utf-8")
            offset += host_len
            node_port, rack_len = struct.unpack_from(">ih", body, offset)
            offset += 6 + max(rack_len, 0)
            brokers[node_id] = (node_host, node_port)
    except struct.error as exc:
        raise ValueError(f"malformed Metadata response: {exc}") from None
    return brokers


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Exactly ``n`` bytes from ``sock`` (ConnectionResetError when it closes first)."""
    chunks: list[bytes] = []
    remaining = n
    while remaining:
        chunk = sock.recv(remaining)
        if not chunk:
            raise ConnectionResetError("broker closed the connection")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
