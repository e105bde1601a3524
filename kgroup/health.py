"""Health of a consumer for liveness and readiness probes, and a tiny HTTP endpoint serving them.

``Consumer.health()`` returns a ``HealthReport``. The verdicts (docs/production.md explains how
to wire them to Kubernetes probes):

* **live** is False when restarting the process is the remedy: the consumer was closed, hit a
  fatal error (``FENCED_INSTANCE_ID``, a crashed group thread, ...), or the application has not
  called ``poll()`` for longer than ``max_poll_interval_ms`` (the poll loop is stuck: the same
  bound after which the member leaves the group, KIP-62).
* **ready** is live and, in addition: the member is ``STABLE`` in a generation (it received an
  assignment, possibly empty) and the coordinator answered a Heartbeat, JoinGroup or SyncGroup
  without error within ``session_timeout_ms``. A rebalance, a coordinator outage or a
  consumer that has not joined yet makes it not ready; each failed verdict adds a line to
  ``reasons``.

Under ``group_protocol="consumer"`` (KIP-848) the same verdicts hold with that protocol's terms:
the generation is the member epoch (``STABLE`` needs an epoch from the broker: the target
assignment reconciled and acknowledged; RECONCILING and ACKNOWLEDGING read as ``RECONCILING``), the
coordinator's answer is a ConsumerGroupHeartbeat without error, and the bound is
``session_timeout_ms``'s default, 45000 ms, which is also the broker's default
``group.consumer.session.timeout.ms`` (the broker owns the session timeout under this protocol
and does not tell the member).

``serve_health(consumer, port=8080)`` (or ``consumer.serve_health(...)``) starts a daemon HTTP
server answering ``GET /livez`` and ``GET /readyz`` (200 "ok", or 503 with the reasons, one
per line) and, when prometheus-client is installed, ``GET /metrics`` (the consumer's metrics in
Prometheus' text format through ``kgroup.prometheus``). ``Consumer.close()`` stops it.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

import attrs

from kgroup.membership.states import MemberState

if TYPE_CHECKING:
    from kgroup.consumer import Consumer

__all__ = ["HealthReport", "HealthServer", "serve_health"]

log = logging.getLogger("kgroup.health")


@attrs.frozen
class HealthReport:
    """A consumer's health (``Consumer.health()``).

    Attributes:
        state: the membership state (``MemberState``: UNJOINED, JOINING, ..., STABLE, FATAL,
            CLOSED).
        live: False when only a restart helps (closed, fatal error, poll loop stalled past
            ``max_poll_interval_ms``).
        ready: live, STABLE with an assignment, and the coordinator answered within
            ``session_timeout_ms`` (the consumer protocol: the module docstring).
        reasons: why ``live`` or ``ready`` is False, one sentence each (empty when both hold).
        last_poll_seconds_ago: since the last ``poll()`` (-1 before the first).
        assigned_partitions: how many partitions the member owns.

    """

    state: MemberState
    live: bool
    ready: bool
    reasons: tuple[str, ...] = ()
    last_poll_seconds_ago: float = -1.0
    assigned_partitions: int = 0


class HealthServer:
    """A running probe endpoint: ``port``, ``url`` and ``close()`` (idempotent)."""

    def __init__(self, consumer: Consumer[Any, Any], host: str, port: int) -> None:
        import http.server  # on first use: ``import kgroup`` does not load the HTTP server

        self._consumer = consumer
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, body, ctype = owner._answer(self.path.split("?", 1)[0])
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("health endpoint: %s", format % args)

        self._server = http.server.ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="kgroup-health", kwargs={"poll_interval": 0.2}, daemon=True
        )
        self._thread.start()
        self._closed = False

    @property
    def port(self) -> int:
        """The TCP port it listens on (useful with ``port=0``)."""
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """``http://host:port``."""
        host = self._server.server_address[0]
        if isinstance(host, bytes):
            host = host.decode()
        return f"http://{host}:{self.port}"

    def _answer(self, path: str) -> tuple[int, str, str]:
        if path in ("/livez", "/readyz"):
            report = self._consumer.health()
            ok = report.live if path == "/livez" else report.ready
            if ok:
                return 200, "ok\n", "text/plain; charset=utf-8"
            return 503, "".join(f"{r}\n" for r in report.reasons) or "not ready\n", "text/plain; charset=utf-8"
        if path == "/metrics":
            try:
                from kgroup.prometheus import exposition
            except ImportError:
                return 404, "install kgroup[prometheus] for /metrics\n", "text/plain; charset=utf-8"
            body, ctype = exposition(self._consumer)
            return 200, body, ctype
        return 404, "not found: try /livez, /readyz or /metrics\n", "text/plain; charset=utf-8"

    def close(self) -> None:
        """Stop serving and release the port."""
        if self._closed:
            return
        self._closed = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)


def serve_health(consumer: Consumer[Any, Any], port: int = 8080, host: str = "0.0.0.0") -> HealthServer:
    """Serve ``/livez``, ``/readyz`` and ``/metrics`` for ``consumer`` until it closes.

    Args:
        consumer: the consumer to report on.
        port: TCP port (0: any free one; read ``HealthServer.port``).
        host: the address to bind (default all interfaces, as probes come from the kubelet).

    Returns:
        The running ``HealthServer``; ``consumer.close()`` closes it too.

    Raises:
        OSError: the port is taken.

    """
    return consumer.serve_health(port=port, host=host)
