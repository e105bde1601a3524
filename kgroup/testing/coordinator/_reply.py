"""``Reply``: the coordinator model's answer to one request, available at once or later."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Reply"]

R = TypeVar("R")


class Reply(Generic[R]):
    """The answer to one request: available at once, or later (a parked JoinGroup/SyncGroup).

    The model completes a reply exactly once, from inside one of its own method calls
    (another member's request, :meth:`~kgroup.testing.coordinator.GroupCoordinatorModel.tick`,
    ``restart``). Callbacks run synchronously at completion, in registration order; a callback
    added after completion runs at once. Not thread-safe: the model and its replies belong to
    one thread (the proxy's event loop, or a test).
    """

    __slots__ = ("_callbacks", "_done", "_response")

    def __init__(self) -> None:
        self._done = False
        self._response: R | None = None
        self._callbacks: list[Callable[[R], None]] = []

    @classmethod
    def of(cls, response: R) -> Reply[R]:
        """A reply completed with ``response``."""
        reply: Reply[R] = cls()
        reply.complete(response)
        return reply

    @property
    def done(self) -> bool:
        """Whether the response is available."""
        return self._done

    @property
    def response(self) -> R:
        """The response.

        Raises:
            RuntimeError: the reply is still parked.

        """
        if not self._done:
            raise RuntimeError("reply is still parked; no response yet")
        return self._response  # type: ignore[return-value]

    def complete(self, response: R) -> None:
        """Complete the reply (model-internal).

        Raises:
            RuntimeError: it was already completed (a model bug: one request, one response).

        """
        if self._done:
            raise RuntimeError(f"reply completed twice: first {self._response!r}, then {response!r}")
        self._done = True
        self._response = response
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(response)

    def add_done_callback(self, callback: Callable[[R], None]) -> None:
        """Call ``callback(response)`` at completion (at once if already done)."""
        if self._done:
            callback(self._response)  # type: ignore[arg-type]
        else:
            self._callbacks.append(callback)

    def __repr__(self) -> str:
        return f"Reply({self._response!r})" if self._done else "Reply(<parked>)"
