"""kafka-python as a peer: a guard against a race in its group join (kafka-python 3.0.12).

Used by the peer worker (``tests/integration/peer_worker.py``) and by tests that run
kafka-python's ``KafkaConsumer`` in the test process; ``tests/unit/test_peer_worker_joins.py``
checks it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class _FinishedJoin:
    """A finished join attempt that reads as still running (``is_done`` False) and hands out its
    result at once to whoever awaits it: see :func:`keep_finished_joins`."""

    is_done = False

    def __init__(self, task: Any) -> None:
        self._task = task

    def add_callback(self, f: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self._task.add_callback(f, *args, **kwargs)

    def add_errback(self, f: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self._task.add_errback(f, *args, **kwargs)

    def __await__(self) -> Any:
        return self._task.__await__()


def keep_finished_joins() -> Callable[[], None]:
    """Work around two kafka-python 3.0.12 races that drop a completed rebalance.

    ``BaseCoordinator.join_group_async`` keeps the JoinGroup+SyncGroup attempt in ``_join_task``
    across polls (a ``poll(timeout_ms=100)`` gives up while the attempt is in flight), and loops
    only ``while self.need_rejoin()``. The attempt's result is lost when it finishes between two
    polls and either

    * the next poll finds the task ``is_done`` and sends a fresh JoinGroup instead of taking the
      assignment (a leader's JoinGroup starts yet another rebalance), or
    * ``need_rejoin()`` is False by then: a leader rejoining because the metadata changed
      (its assignment snapshot differs from the metadata's) makes them equal again when it
      computes the new assignment, before the attempt is awaited; the loop is skipped, the
      member never takes its assignment and its heartbeats stay disabled for good.

    Seen in the peer cross-checks on Apache Kafka and on the proxy alike: a laggard removed by a
    rebalance nobody needed, a leader that never took its half. Java loops on
    ``rejoinNeededOrPending()`` (``AbstractCoordinator``: a join in flight counts), and so does
    the guard: ``need_rejoin()`` is also true while kafka-python's ``rejoining`` flag (set when the
    attempt starts, cleared when its result is taken) is set, and a successful attempt reads as
    not done until the join loop has awaited it (a failed one is replaced, as kafka-python does).

    Installs the guard on kafka-python's coordinator classes (process-wide) and returns a
    function that removes it; coordinators created before it lose their attempt in flight.
    """
    from kafka.coordinator.base import BaseCoordinator
    from kafka.coordinator.consumer import ConsumerCoordinator

    def get(self: Any) -> Any:
        task = self.__dict__.get("_join_task_kept")
        if task is not None and task.is_done and task.exception is None:
            return _FinishedJoin(task)
        return task

    def set_(self: Any, task: Any) -> None:
        self.__dict__["_join_task_kept"] = task

    need_rejoin = ConsumerCoordinator.need_rejoin

    def need_rejoin_or_pending(self: Any) -> bool:
        return bool(getattr(self, "rejoining", False)) or need_rejoin(self)

    BaseCoordinator._join_task = property(get, set_)  # type: ignore[attr-defined]
    ConsumerCoordinator.need_rejoin = need_rejoin_or_pending  # type: ignore[method-assign]

    def undo() -> None:
        del BaseCoordinator._join_task  # type: ignore[attr-defined]
        ConsumerCoordinator.need_rejoin = need_rejoin  # type: ignore[method-assign]

    return undo
