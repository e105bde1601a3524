"""The child side of a peer process: emit events on stdout, read commands from stdin."""

from __future__ import annotations

import faulthandler
import json
import queue
import signal
import sys
import threading
from collections.abc import Callable


def emitter(clock: Callable[[], float]) -> Callable[..., None]:
    """``emit(event, **fields)``: one JSON line on stdout, stamped ``t`` = ``clock()``, flushed."""

    def emit(event: str, **fields: object) -> None:
        sys.stdout.write(json.dumps({"event": event, "t": clock(), **fields}) + "\n")
        sys.stdout.flush()

    return emit


def commands() -> queue.Queue[str]:
    """Commands from stdin, one a line, read on a thread; end of stdin counts as ``close``."""
    q: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in sys.stdin:
            q.put(line.strip())
        q.put("close")

    threading.Thread(target=read, daemon=True).start()
    return q


def dump_stacks_on_signal() -> None:
    """On SIGUSR1, write every thread's stack to stderr (``PeerProcess.log_tail`` asks for it when
    a test fails: a peer stuck in its client shows where)."""
    faulthandler.register(signal.SIGUSR1, all_threads=True)
