"""asyncio members in a simulation: an event loop that blocks on the scheduler's baton.

An asyncio application (``async def app(consumer, running)``) runs in its member's simulated
thread on :class:`SimEventLoop`, a ``SelectorEventLoop`` with two changes: ``time()`` is the
scheduler's virtual time (so ``asyncio.sleep``, ``wait_for`` and ``call_later`` run on the
virtual clock) and its selector's wait gives the baton back (``Scheduler.block``) until a
file descriptor is ready or the timeout passes, instead of blocking the OS thread while
holding the baton. The ``kgroup.aio.Consumer``'s worker thread is spawned as a simulated
thread of the same member, so it too runs only with the baton; its results reach the loop
through the loop's self-pipe, whose readiness the scheduler checks like any thread's
condition. Everything still happens in an order the seed fixes.
"""

from __future__ import annotations

import asyncio
import math
import selectors
from collections.abc import Coroutine
from typing import Any

from kgroup.testing.simulation._scheduler import Scheduler

__all__ = ["SimEventLoop", "run_coroutine"]


class _SimSelector(selectors.DefaultSelector):
    """The default selector, waiting on the scheduler instead of in the kernel."""

    def __init__(self, scheduler: Scheduler) -> None:
        super().__init__()
        self._scheduler = scheduler

    def _ready_now(self) -> list[tuple[selectors.SelectorKey, int]]:
        return super().select(0)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._ready_now()
        if ready or (timeout is not None and timeout <= 0):
            return ready
        self._scheduler.block(lambda: bool(self._ready_now()), math.inf if timeout is None else timeout)
        return self._ready_now()


class SimEventLoop(asyncio.SelectorEventLoop):
    """An event loop on the scheduler's virtual clock, for a simulated thread."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler
        super().__init__(_SimSelector(scheduler))

    def time(self) -> float:
        """Virtual seconds."""
        return self._scheduler.now


def run_coroutine(scheduler: Scheduler, main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` to completion on a new :class:`SimEventLoop` (as ``asyncio.run`` does)."""
    loop = SimEventLoop(scheduler)
    try:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(main)
    finally:
        try:
            tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in tasks:
                task.cancel()
            if tasks:
                loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()
