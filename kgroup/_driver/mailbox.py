"""The poll-thread mailbox: steps and errors from the group thread; the poll thread's one way to block.

Rules:

1. The group thread only ``post``s; the poll thread only ``take``s. A ``threading.Condition``
   around a deque is the whole synchronisation; no lock is held while user code runs.
2. Every blocking wait of the poll thread (``poll()`` between fetches, ``commit()`` and
   ``committed()`` waiting for a response, retry backoff (:meth:`Mailbox.retry`), ``close()``)
   goes through :meth:`Mailbox.wait_until`. Whatever can end such a wait (a posted step, a completed
   request future, ``wakeup()``) calls :meth:`Mailbox.notify`. The deterministic simulator
   (``kgroup.testing.simulation``) replaces this one method to run the same poll-side code on
   a virtual clock.
"""

from __future__ import annotations

import collections
import concurrent.futures
import threading
from collections.abc import Callable
from typing import TypeVar

from kgroup._retry import Deadline, retry_until
from kgroup.errors import KGroupError, WakeupError
from kgroup.membership.commands import RebalanceStep

__all__ = ["Mailbox", "Message"]

Message = RebalanceStep | Exception
T = TypeVar("T")


class Mailbox:
    """A FIFO of steps and errors, with the poll thread's blocking wait."""

    def __init__(self) -> None:
        self._items: collections.deque[Message] = collections.deque()
        self._cond = threading.Condition()
        self._woken = False
        self._wakeups_disabled = False

    def post(self, item: Message) -> None:
        """Add ``item`` and wake the poll thread (any thread)."""
        with self._cond:
            self._items.append(item)
            self._cond.notify_all()

    def notify(self) -> None:
        """Wake a waiting poll thread so it re-checks its condition (any thread)."""
        with self._cond:
            self._cond.notify_all()

    def wake(self) -> None:
        """Wake a waiting poll thread without a message (``Consumer.wakeup``); sticky until consumed.

        Ignored once :meth:`disable_wakeups` was called.
        """
        with self._cond:
            if not self._wakeups_disabled:
                self._woken = True
            self._cond.notify_all()

    def disable_wakeups(self) -> None:
        """From now on ``wake()`` interrupts nothing, and a pending one is dropped (``close()``).

        Java's ``ConsumerCoordinator.close`` calls ``ConsumerNetworkClient.disableWakeups`` first:
        a ``wakeup()`` that no ``poll()`` consumed (a SIGTERM handler's, say) must not make the
        commit of the close's revocation fail.
        """
        with self._cond:
            self._wakeups_disabled = True
            self._woken = False

    def take_all(self) -> list[Message]:
        """Everything posted so far, oldest first (poll thread)."""
        with self._cond:
            items = list(self._items)
            self._items.clear()
            return items

    def has_items(self) -> bool:
        """True when something was posted and not taken yet."""
        return bool(self._items)

    @property
    def woken(self) -> bool:
        """True when ``wake()`` was called and not consumed yet."""
        return self._woken

    def consume_wakeup(self) -> bool:
        """True (once) if ``wake()`` was called since the last check."""
        with self._cond:
            woken, self._woken = self._woken, False
            return woken

    def wait_until(self, ready: Callable[[], bool], timeout_s: float) -> bool:
        """Block until ``ready()`` is true or ``timeout_s`` seconds pass; return ``ready()``.

        ``ready`` is evaluated with the mailbox's lock held and after every ``post``,
        ``notify`` or ``wake``: it must be quick and must not call back into the mailbox.
        """
        with self._cond:
            return self._cond.wait_for(ready, max(0.0, timeout_s))

    # ------------------------------------------------------------------ built on wait_until
    def wait(self, timeout_s: float) -> None:
        """Block until something is posted, ``wake()`` is called, or ``timeout_s`` passes."""
        self.wait_until(lambda: bool(self._items) or self._woken, timeout_s)

    def sleep(self, timeout_s: float) -> bool:
        """Sleep ``timeout_s`` unless ``wake()`` interrupts it; True when woken (flag kept)."""
        return self.wait_until(lambda: self._woken, timeout_s)

    def wait_future(
        self, future: concurrent.futures.Future[T], timeout_s: float, *, interruptible: bool = True
    ) -> bool:
        """Wait for ``future`` (completed on another thread) for at most ``timeout_s``.

        Returns True when it is done; False on timeout or, with ``interruptible``, when
        ``wake()`` was called (the flag is kept for the caller to consume).
        """
        if not future.done():
            future.add_done_callback(lambda _f: self.notify())
            if interruptible:
                self.wait_until(lambda: future.done() or self._woken, timeout_s)
            else:
                self.wait_until(future.done, timeout_s)
        return future.done()

    def await_answer(self, future: concurrent.futures.Future[T], timeout_s: float, what: str) -> bool:
        """Wait for a request's ``future`` at most ``timeout_s``, ending early on ``wake()``.

        Returns True when it completed (with a result or an exception other than a
        ``KGroupError``), False when the time ran out.

        Raises:
            WakeupError: ``wakeup()`` interrupted the wait (the flag is consumed).
            KGroupError: the future's own, as it is.

        """
        if not self.wait_future(future, timeout_s):
            if self.consume_wakeup():
                raise WakeupError(f"{what} interrupted by wakeup()")
            return False
        exc = future.exception()
        if isinstance(exc, KGroupError):
            raise exc
        return True

    def retry(
        self,
        attempt: Callable[[], T],
        deadline: Deadline,
        *,
        retry_on: type[Exception],
        backoff_s: Callable[[int], float],
        what: str,
    ) -> T:
        """``kgroup._retry.retry_until`` with its backoff waits here (poll thread).

        Raises:
            WakeupError: ``wake()`` interrupted a wait (the flag is consumed); ``what`` names the call.
            What ``retry_until`` raises otherwise.

        """

        def sleep(seconds: float) -> None:
            if self.sleep(seconds):
                self.consume_wakeup()
                raise WakeupError(f"{what} interrupted by wakeup()")

        return retry_until(attempt, deadline, retry_on=retry_on, backoff_s=backoff_s, sleep=sleep)
