"""Health of a consumer for liveness and readiness probes, and a tiny HTTP endpoint serving them.

``Consumer.health()`` returns a ``HealthReport``. The verdicts (docs/production.md explains how
to wire them to Kubernetes probes):

* **live** is False when restarting the process is the remedy: the consumer was closed, hit a
  fatal error (``FENCED_INSTANCE_ID``, a crashed group thread, ...), or the application has not
  called ``poll()`` for longer than ``max_poll_interval_ms`` (the poll loop is stuck: the same
  bound after which the member leaves the group, KIP-62).
* **ready** is live and, in addition: the member is ``STABLE`` in a generation (it received an
  assignment, possibly empty) and the coordinator answered a Heartbeat, JoinGroup or SyncGroup
  without error within the session timeout in force. A rebalance, a coordinator outage or a
  consumer that has not joined yet makes it not ready; each failed verdict adds a line to
  ``reasons``.

Under ``group_protocol="consumer"`` (KIP-848) the same verdicts hold with that protocol's terms:
the generation is the member epoch (``STABLE`` needs an epoch from the broker: the target
assignment reconciled and acknowledged; RECONCILING and ACKNOWLEDGING read as ``RECONCILING``), the
coordinator's answer is a ConsumerGroupHeartbeat without error, and the bound is the group's
session timeout as the broker tells it (``consumer.session.timeout.ms``, learned with
DescribeConfigs: docs/kip848.md), or ``session_timeout_ms``'s default, 45000 ms (also the
broker's default ``group.consumer.session.timeout.ms``), until it is known.

The verdicts are a pure function of a ``HealthInputs`` value (``assess``): the member's published
``MemberSnapshot`` (which carries the session timeout in force) and what the poll thread knows.

``serve_health(consumer, port=8080)`` (or ``consumer.serve_health(...)``) starts a daemon HTTP
server answering ``GET /livez`` and ``GET /readyz`` (200 "ok", or 503 with the reasons, one
per line) and, when prometheus-client is installed, ``GET /metrics`` (the consumer's metrics in
Prometheus' text format through ``kgroup.prometheus``). ``Consumer.close()`` stops it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from kgroup.membership.states import MemberState

if TYPE_CHECKING:
    from kgroup._driver.port import GroupView

__all__ = ["HealthInputs", "HealthReport", "HealthServer", "assess", "serve_health"]

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


@attrs.frozen(kw_only=True)
class HealthInputs:
    """What the verdicts are computed from, gathered by ``Consumer.health()`` (any thread)."""

    #: the consumer was closed
    closed: bool
    #: manual assignment (``assign()``): no membership, only the coordinator for commits
    manual: bool
    #: the member's published view (None: no group yet); carries the session timeout in force
    snapshot: GroupView | None
    #: the fatal error, or the group thread's crash (None: neither)
    fatal: BaseException | None
    #: when the application last called ``poll()``, and when it subscribed (clock seconds)
    last_poll: float | None
    subscribed_at: float | None
    max_poll_interval_ms: int
    #: the configured session timeout: the bound until the snapshot carries the one in force
    session_timeout_ms: int
    #: when the group coordinator last answered without error (clock seconds)
    last_group_ok: float | None
    assigned_partitions: int


def assess(inputs: HealthInputs, now: float) -> HealthReport:
    """The liveness and readiness verdicts of ``inputs`` at ``now`` (clock seconds): pure, never blocks."""
    snap = inputs.snapshot
    state = MemberState.CLOSED if inputs.closed else (snap.state if snap is not None else MemberState.UNJOINED)
    reasons: list[str] = []
    live = True
    if inputs.closed:
        live = False
        reasons.append("the consumer is closed")
    if inputs.fatal is not None:
        live = False
        reasons.append(f"fatal error: {inputs.fatal}")
    since = inputs.subscribed_at if inputs.last_poll is None else inputs.last_poll
    if not inputs.closed and since is not None and now - since > inputs.max_poll_interval_ms / 1000:
        live = False
        reasons.append(
            f"poll() not called for {now - since:.1f} s (max_poll_interval_ms is {inputs.max_poll_interval_ms})"
        )
    ready = live
    if live and inputs.manual:
        if snap is None or snap.coordinator is None:
            ready = False
            reasons.append("the group's coordinator (for commits) is not known yet")
    elif live:
        if snap is None or snap.state is not MemberState.STABLE or snap.generation.generation_id < 0:
            ready = False
            reasons.append(f"not a stable member of a generation yet (state {state.name})")
        in_force = snap.session_timeout_ms if snap is not None else None
        session_ms = inputs.session_timeout_ms if in_force is None else in_force
        ok_at = inputs.last_group_ok
        if ok_at is None or now - ok_at > session_ms / 1000:
            ready = False
            ago = "never" if ok_at is None else f"{now - ok_at:.1f} s ago"
            reasons.append(
                f"no successful response from the group coordinator within the session timeout "
                f"({session_ms} ms; last: {ago})"
            )
    return HealthReport(
        state=state,
        live=live,
        ready=ready,
        reasons=tuple(reasons),
        last_poll_seconds_ago=-1.0 if inputs.last_poll is None else now - inputs.last_poll,
        assigned_partitions=inputs.assigned_partitions,
    )


class HealthServer:
    """A running probe endpoint: ``port``, ``url`` and ``close()`` (idempotent).

    Args:
        health: the verdicts, called for each ``/livez`` and ``/readyz`` request.
        host: the address to bind.
        port: the TCP port (0: any free one).
        metrics: the ``/metrics`` body and content type (None: 404, prometheus-client is not
            installed).

    """

    def __init__(
        self, health: Callable[[], HealthReport], host: str, port: int,
        metrics: Callable[[], tuple[str, str]] | None = None,
    ) -> None:
        import http.server  # on first use: ``import kgroup`` does not load the HTTP server

        self._health = health
        self._metrics = metrics
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
            report = self._health()
            ok = report.live if path == "/livez" else report.ready
            if ok:
                return 200, "ok\n", "text/plain; charset=utf-8"
            return 503, "".join(f"{r}\n" for r in report.reasons) or "not ready\n", "text/plain; charset=utf-8"
        if path == "/metrics":
            if self._metrics is None:
                return 404, "install kgroup[prometheus] for /metrics\n", "text/plain; charset=utf-8"
            body, ctype = self._metrics()
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


class _Serves(Protocol):
    def serve_health(self, port: int = ..., host: str = ...) -> HealthServer: ...


def serve_health(consumer: _Serves, port: int = 8080, host: str = "0.0.0.0") -> HealthServer:
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
