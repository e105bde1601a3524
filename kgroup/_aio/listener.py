"""``kgroup.aio.RebalanceListener``: the listener contract with coroutine callbacks (``kgroup.listener``'s rules).

Apart from ``kgroup/aio.py`` so that ``kgroup._aio.parallel`` (``kgroup.aio.ParallelProcessor``)
subclasses it without importing the module that exports the processor. ``kgroup.aio`` re-exports
both names.
"""

from __future__ import annotations

import inspect
from typing import Any

from kgroup import listener as _sync_listener
from kgroup.types import TopicPartition

__all__ = ["Listener", "RebalanceListener"]


class RebalanceListener:
    """``kgroup.RebalanceListener`` with coroutine callbacks, awaited on the event loop.

    Subclass and override what you need; the defaults do nothing (``on_partitions_lost``
    awaits ``on_partitions_revoked``, as Java's default). Inside a callback, ``await
    consumer.commit()`` and the other calls of the consumer work (not ``poll()``,
    ``unsubscribe()`` or ``close()``); the rebalance waits for the callback, heartbeats do not. A plain
    ``kgroup.RebalanceListener`` works too: its methods are called on the loop.
    """

    async def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        """Partitions this member gives up; commit their offsets here if you commit manually."""

    async def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        """Partitions newly assigned; ``seek()`` here to choose where to start."""

    async def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        """Partitions lost without a clean revoke: they may be someone else's, do not commit."""
        result: Any = self.on_partitions_revoked(partitions)
        if inspect.isawaitable(result):
            await result


Listener = RebalanceListener | _sync_listener.RebalanceListener


RebalanceListener.__module__ = "kgroup.aio"  # its public home
