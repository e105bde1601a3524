"""The group thread's view of the cluster metadata: the subscribed topics' partitions.

``MetadataCache`` keeps them as Java's consumer keeps cluster metadata: the leader assigns from
it, and its watch compares it with the last assignment (``GroupThread``). Thread-safe: the IO
thread completes the requests.
"""

from __future__ import annotations

import concurrent.futures
import threading

from kgroup._clock import Clock
from kgroup._io.transport import Transport
from kgroup.config import ConsumerConfig
from kgroup.types import PartitionInfo

__all__ = ["MetadataCache", "MetadataFuture"]

#: a Metadata answer: topic -> its partitions
MetadataFuture = concurrent.futures.Future[dict[str, tuple[PartitionInfo, ...]]]


class MetadataCache:
    """The subscribed topics' partitions, as Java's consumer keeps cluster metadata.

    A value is reused for ``metadata_max_age_ms`` (Java ``metadata.max.age.ms``) when it covers
    the topics asked for; a request in flight is shared. Thread-safe (the IO thread completes
    requests).
    """

    def __init__(self, transport: Transport, config: ConsumerConfig, clock: Clock) -> None:
        self._transport = transport
        self._config = config
        self._clock = clock
        self._lock = threading.Lock()
        self._value: tuple[frozenset[str], float, dict[str, tuple[PartitionInfo, ...]]] | None = None
        self._pending: tuple[frozenset[str], MetadataFuture] | None = None

    def _fresh(self, value: tuple[frozenset[str], float, dict[str, tuple[PartitionInfo, ...]]],
               topics: frozenset[str]) -> bool:
        """``value`` answers for ``topics`` and is young enough.

        Young enough: ``metadata_max_age_ms``; but while a subscribed topic is unknown, only
        ``retry_backoff_max_ms`` (Java refreshes metadata for missing topics with backoff), so a
        topic created after the group formed is noticed at once.
        """
        covered, at, result = value
        if not topics <= covered:
            return False
        age_ms = (self._clock.monotonic() - at) * 1000
        if not topics <= set(result):
            return age_ms < self._config.retry_backoff_max_ms
        return age_ms < self._config.metadata_max_age_ms

    def invalidate(self) -> None:
        """Forget the cached value: the next ``due``/``get`` asks the cluster."""
        with self._lock:
            self._value = None

    def due(self, topics: frozenset[str]) -> bool:
        """True when nothing fresh covers ``topics`` and no request for them is in flight."""
        with self._lock:
            if self._pending is not None and topics <= self._pending[0]:
                return False
            value = self._value
        return value is None or not self._fresh(value, topics)

    def refresh(self, topics: frozenset[str]) -> MetadataFuture:
        """Request ``topics`` now; the answer replaces the cached value."""
        sent_at = self._clock.monotonic()
        future = self._transport.describe_topics(topics, self._config.request_timeout_ms)
        with self._lock:
            self._pending = (topics, future)

        def done(f: MetadataFuture) -> None:
            with self._lock:
                if self._pending is not None and self._pending[1] is f:
                    self._pending = None
                if f.exception() is None:
                    self._value = (topics, sent_at, f.result())

        future.add_done_callback(done)
        return future

    def get(self, topics: frozenset[str]) -> MetadataFuture:
        """The partitions of ``topics``: cached if fresh, the request in flight, or a new one."""
        with self._lock:
            value, pending = self._value, self._pending
        if value is not None and self._fresh(value, topics):
            done: MetadataFuture = concurrent.futures.Future()
            done.set_result({t: parts for t, parts in value[2].items() if t in topics})
            return done
        if pending is not None and topics <= pending[0]:
            return pending[1]
        return self.refresh(topics)
