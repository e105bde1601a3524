"""A Python worker's idle Kafka connections, kept for the worker's next task.

Spark reuses a Python worker process for task after task (``spark.python.worker.reuse``, true
by default), and every task of the ``kgroup`` source reads one offset range. Opening a transport
for each (bootstrap, cluster metadata, a connection to the leader) cost a task 0.07 s of CPU and
about 0.12 s before its first record on the machine ``benchmarks/results.md`` describes; a
micro-batch pays it once per partition per trigger. Spark's own Kafka source keeps its consumers
for the same reason (``KafkaDataConsumer`` and its pool, ``spark.kafka.consumer.cache.capacity``
and ``spark.kafka.consumer.cache.timeout`` in the Structured Streaming + Kafka Integration
Guide); this pool follows it:

* a transport is borrowed for one task and returned when the task read its whole range;
  a task that fails or is cancelled (its generator closed early) closes its transport instead,
  so the next task never inherits a connection in an unknown state;
* a task's reads are bounded by its range's end, so a finished task leaves no Fetch in flight;
  a returned transport's fetcher drops what it buffered, and one that still has a Fetch in
  flight is closed: no record fetched for one task can reach the next;
* transports are kept per key (the source's Kafka properties): different clusters or
  credentials never share one;
* a transport idle for ``idle_close_s`` (Spark's cache timeout: 5 minutes) is closed at the next
  return or borrow, and at most ``capacity`` (Spark's cache capacity: 64) are kept idle;
* the worker's exit closes what is left (``atexit``).
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Protocol, TypeVar

from kgroup._clock import Clock, MonotonicClock

log = logging.getLogger(__name__)

#: seconds a returned transport may stay idle before it is closed (Spark's
#: ``spark.kafka.consumer.cache.timeout`` default)
IDLE_CLOSE_S = 300.0
#: idle transports kept per worker process (Spark's ``spark.kafka.consumer.cache.capacity`` default)
CAPACITY = 64


class PooledTransport(Protocol):
    """What the pool needs of a transport: ``close()``."""

    def close(self) -> None: ...


T = TypeVar("T", bound=PooledTransport)


class TransportPool:
    """Idle transports by key, borrowed one task at a time (thread-safe).

    Args:
        clock: monotonic seconds (injected in tests).
        idle_close_s: seconds an idle transport is kept.
        capacity: idle transports kept in all; the longest idle is closed first.

    """

    def __init__(
        self, clock: Clock | None = None, idle_close_s: float = IDLE_CLOSE_S, capacity: int = CAPACITY
    ) -> None:
        if capacity < 0 or idle_close_s < 0:
            raise ValueError("capacity and idle_close_s must be >= 0")
        self._clock = clock if clock is not None else MonotonicClock()
        self._idle_close_s = idle_close_s
        self._capacity = capacity
        self._lock = threading.Lock()
        #: (returned at, key, transport), oldest first
        self._idle: list[tuple[float, Hashable, PooledTransport]] = []

    def __len__(self) -> int:
        with self._lock:
            return len(self._idle)

    @contextmanager
    def borrow(
        self,
        key: Hashable,
        create: Callable[[], T],
        reset: Callable[[T], bool],
    ) -> Iterator[T]:
        """A transport for ``key``: the most recently returned idle one, else ``create()``.

        The block's normal end runs ``reset(transport)`` and keeps the transport idle when it
        returns True; False, an exception from ``reset``, or one from the block (a generator
        closed early included) closes it. Errors of ``create`` propagate.
        """
        taken = self._take(key)
        transport: T = create() if taken is None else taken  # type: ignore[assignment]
        try:
            yield transport
        except BaseException:
            _close(transport)
            raise
        try:
            kept = reset(transport)
        except Exception:
            log.debug("kgroup.spark: a transport failed to reset; closing it", exc_info=True)
            kept = False
        if kept:
            self._give_back(key, transport)
        else:
            _close(transport)

    def close_all(self) -> None:
        """Close every idle transport (the worker is exiting)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for _, _, transport in idle:
            _close(transport)

    def _take(self, key: Hashable) -> PooledTransport | None:
        stale = self._expire()
        found = None
        with self._lock:
            for i in range(len(self._idle) - 1, -1, -1):
                if self._idle[i][1] == key:
                    found = self._idle.pop(i)[2]
                    break
        for transport in stale:
            _close(transport)
        return found

    def _give_back(self, key: Hashable, transport: PooledTransport) -> None:
        with self._lock:
            self._idle.append((self._clock.monotonic(), key, transport))
            extra = len(self._idle) - self._capacity
            evicted = [t for _, _, t in self._idle[:extra]] if extra > 0 else []
            del self._idle[: max(extra, 0)]
        for old in evicted + self._expire():
            _close(old)

    def _expire(self) -> list[PooledTransport]:
        cutoff = self._clock.monotonic() - self._idle_close_s
        with self._lock:
            stale = [t for returned, _, t in self._idle if returned < cutoff]
            self._idle = [entry for entry in self._idle if entry[0] >= cutoff]
        return stale


def _close(transport: PooledTransport) -> None:
    try:
        transport.close()
    except Exception:  # pragma: no cover - best effort
        log.debug("kgroup.spark: error closing a transport", exc_info=True)


#: this worker process's pool (read by the source's executors)
POOL = TransportPool()
atexit.register(POOL.close_all)
