"""The poll-thread mailbox: rebalance steps and errors from the group thread.

Rule: the group thread only ``post``s; the poll thread only ``take``s. A ``threading.Condition``
around a deque is the whole synchronisation; no lock is held while user code runs.
"""

from __future__ import annotations

import collections
import threading

from kgroup.membership.commands import RebalanceStep

__all__ = ["Mailbox", "Message"]

Message = RebalanceStep | Exception


class Mailbox:
    """A FIFO of steps and errors, with a blocking wait (poll thread side)."""

    def __init__(self) -> None:
        self._items: collections.deque[Message] = collections.deque()
        self._cond = threading.Condition()
        self._woken = False

    def post(self, item: Message) -> None:
        """Add ``item`` and wake the poll thread (any thread)."""
        with self._cond:
            self._items.append(item)
            self._cond.notify_all()

    def wake(self) -> None:
        """Wake a waiting poll thread without a message (``Consumer.wakeup``)."""
        with self._cond:
            self._woken = True
            self._cond.notify_all()

    def take_all(self) -> list[Message]:
        """Everything posted so far, oldest first (poll thread)."""
        with self._cond:
            items = list(self._items)
            self._items.clear()
            return items

    def consume_wakeup(self) -> bool:
        """True (once) if ``wake()`` was called since the last check."""
        with self._cond:
            woken, self._woken = self._woken, False
            return woken

    def wait(self, timeout_s: float) -> None:
        """Block until something is posted, ``wake()`` is called, or ``timeout_s`` passes."""
        with self._cond:
            if not self._items and not self._woken:
                self._cond.wait(max(0.0, timeout_s))
