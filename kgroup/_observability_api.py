"""``kgroup.Consumer``'s observability: metrics, health verdicts and the probe server.

``Consumer`` inherits these methods (its facade stays readable). Unlike the rest of
``Consumer`` they are safe from any thread (a probe's, a metrics exporter's): they read the
metrics recorder and the snapshots the poll and group threads publish, and never block on the
network (docs/protocol.md says where the threads meet).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from kgroup.errors import ConsumerClosedError

if TYPE_CHECKING:
    from kgroup._clock import Clock
    from kgroup._driver.port import GroupPort, GroupView
    from kgroup.config import ConsumerConfig
    from kgroup.health import HealthReport, HealthServer
    from kgroup.metrics import Recorder
    from kgroup.types import TopicPartition

__all__ = ["ObservabilityAPI", "ObservedState"]


class ObservedState(Protocol):
    """What these methods read of the consumer (``kgroup.consumer.Consumer``)."""

    _config: ConsumerConfig
    _clock: Clock
    _metrics: Recorder
    _group: GroupPort | None
    _fatal: Exception | None
    _closed: bool
    _manual: bool
    _subscribed_at: float | None
    _health_servers: list[HealthServer]

    @property
    def _assignment(self) -> frozenset[TopicPartition]: ...

    def _snapshot(self) -> GroupView | None: ...

    def _lags(self) -> dict[tuple[str, int], int]: ...

    def health(self) -> HealthReport: ...

    # what ``kgroup.prometheus`` reads of a consumer it exposes (its ``Collected``)
    @property
    def config(self) -> ConsumerConfig: ...

    def metrics(self) -> dict[str, float]: ...

    def assignment(self) -> frozenset[TopicPartition]: ...


class ObservabilityAPI:
    """``Consumer``'s metrics and health methods (a mixin: the state is the consumer's)."""

    def metrics(self: ObservedState) -> dict[str, float]:
        """A snapshot of the consumer's metrics, keyed by the Java consumer's metric names.

        Returns:
            ``{name: value}`` for every name of ``kgroup.metrics.METRICS`` (its table gives
            each metric's unit: latencies in ms, ``*-seconds-ago`` in s, rates per second or
            per hour; NaN for a windowed statistic with no sample in the last 60 s), plus
            ``records-lag{topic=T,partition=P}`` for each assigned partition whose lag is known.

        Safe from any thread (a probe's or a metrics exporter's). Never blocks on the network.

        """
        return self._metrics.snapshot(len(self._assignment), self._lags())

    def health(self: ObservedState) -> HealthReport:
        """Liveness and readiness verdicts for probes (``kgroup.health`` explains each).

        Returns:
            A ``HealthReport``: ``state``, ``live``, ``ready``, ``reasons`` (why not).

        Safe from any thread; never blocks.

        """
        from kgroup.health import HealthInputs, assess

        snap = self._snapshot()
        fatal = self._fatal or (snap.fatal if snap is not None else None)
        crashed = self._group.crashed if self._group is not None else None
        return assess(
            HealthInputs(
                closed=self._closed,
                manual=self._manual,
                snapshot=snap,
                fatal=fatal if fatal is not None else crashed,
                last_poll=self._metrics.last_poll(),
                subscribed_at=self._subscribed_at,
                max_poll_interval_ms=self._config.max_poll_interval_ms,
                session_timeout_ms=self._config.session_timeout_ms,
                last_group_ok=self._metrics.last_group_ok,
                assigned_partitions=len(self._assignment),
            ),
            self._clock.monotonic(),
        )

    def serve_health(self: ObservedState, port: int = 8080, host: str = "0.0.0.0") -> HealthServer:
        """Serve ``/livez``, ``/readyz`` and ``/metrics`` over HTTP until ``close()``.

        Args:
            port: TCP port (0: any free one; read ``HealthServer.port``).
            host: the address to bind (default all interfaces, as probes come from the kubelet).

        Returns:
            The running ``HealthServer`` (``kgroup.health`` documents the answers).

        Raises:
            OSError: the port is taken.
            ConsumerClosedError: after ``close()``.

        """
        if self._closed:
            raise ConsumerClosedError("the consumer is closed")
        metrics: Callable[[], tuple[str, str]] | None = None
        try:
            from kgroup.prometheus import exposition
        except ImportError:  # /metrics answers 404: prometheus-client is not installed
            pass
        else:
            metrics = functools.partial(exposition, self)
        from kgroup.health import HealthServer

        server = HealthServer(self.health, host, port, metrics)
        self._health_servers.append(server)
        return server
