"""The parent side of a peer process: spawn it, read its JSON events, send it commands."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

#: the repository root: children get it on ``PYTHONPATH`` to import ``tests.peers.child``
ROOT = Path(__file__).resolve().parents[2]


class PeerProcess:
    """One child process speaking the peer line protocol (see :mod:`tests.peers`).

    Args:
        argv: the command line.
        log_path: where the child's stderr goes (appended); default nowhere.
        env: extra environment variables.

    Events are read on a daemon thread; :meth:`on_event` sees each one first (a subclass stamps
    or diverts it) and returns whether to keep it in :attr:`events`.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        log_path: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self.events: list[dict[str, Any]] = []
        self._log_path = log_path
        self._log: IO[str] | None = open(log_path, "a") if log_path is not None else None  # noqa: SIM115
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log if self._log is not None else subprocess.DEVNULL,
            text=True,
            env={**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1", **(env or {})},
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def on_event(self, event: dict[str, Any]) -> bool:
        """Called on the reader thread (under the lock) for each event; True keeps it in ``events``."""
        return True

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                if self.on_event(event):
                    self.events.append(event)

    def dump_stacks(self) -> None:
        """Ask a live child to write every thread's stack to its stderr log (SIGUSR1, answered by
        ``tests.peers.child.dump_stacks_on_signal``); the dump ends with "most recent call first"
        blocks in :meth:`log_text`."""
        if self.alive():
            try:
                self.proc.send_signal(signal.SIGUSR1)
            except OSError:
                pass

    def log_text(self) -> str:
        """The child's stderr log so far ("" without ``log_path``)."""
        if self._log_path is None or not Path(self._log_path).exists():
            return ""
        return Path(self._log_path).read_text(errors="replace")

    def snapshot(self) -> list[dict[str, Any]]:
        """The events so far (a copy)."""
        with self._lock:
            return list(self.events)

    def of(self, kind: str) -> list[dict[str, Any]]:
        """The events of one kind so far."""
        return [e for e in self.snapshot() if e["event"] == kind]

    def alive(self) -> bool:
        """True while the child runs."""
        return self.proc.poll() is None

    def send(self, command: str) -> None:
        """Write one command line to the child (ignored once it is gone)."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def close(self, timeout_s: float = 30.0) -> bool:
        """Ask the child to close (``close``); True when it exited in time, else it is killed."""
        ok = True
        if self.alive():
            self.send("close")
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                ok = False
                self.kill()
        self._reader.join(5)
        self._close_log()
        return ok

    def kill(self) -> None:
        """SIGKILL: no LeaveGroup, no more heartbeats."""
        if self.alive():
            self.proc.kill()
            self.proc.wait(10)
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
