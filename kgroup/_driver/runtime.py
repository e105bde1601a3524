"""How a consumer gets its mailbox and runs its group thread: real threads, or the simulator's turns.

``Threads`` is production's: a ``Mailbox`` on a ``threading.Condition`` and the group thread on its
own OS thread. The deterministic simulator (``kgroup.testing.simulation``) passes its own
``Runtime`` to ``Consumer(_runtime=...)``: a mailbox that blocks on virtual time and a group
thread whose loop body the scheduler pumps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kgroup._driver.mailbox import Mailbox

if TYPE_CHECKING:
    from kgroup._driver.group_thread import GroupThread

__all__ = ["FETCH_SLICE_MS", "Runtime", "Threads"]

#: longest a single fetch wait blocks before the poll loop looks at its mailbox again: a
#: rebalance step (revoke, assign) posted meanwhile waits at most this long for its callback,
#: and under EAGER the whole group waits for that callback (benchmarks/results.md, rebalances)
FETCH_SLICE_MS = 20


class Runtime(Protocol):
    """How a consumer gets its mailbox and runs its group thread (the simulator swaps it)."""

    def mailbox(self) -> Mailbox: ...

    def start(self, group: GroupThread) -> None: ...

    def stop(self, group: GroupThread, timeout_s: float) -> None: ...

    #: longest one fetch wait of the poll loop, in ms (the loop looks at its mailbox between)
    fetch_slice_ms: int


class Threads:
    """Production: a real mailbox and the group thread's own OS thread."""

    fetch_slice_ms = FETCH_SLICE_MS

    def mailbox(self) -> Mailbox:
        return Mailbox()

    def start(self, group: GroupThread) -> None:
        group.start()

    def stop(self, group: GroupThread, timeout_s: float) -> None:
        group.stop(timeout_s)
