"""Quiet logs during an outage: a repeated message is logged at most once per 10 s per logger.

While a broker is unreachable, kafka-python logs each connection attempt, failure and backoff
(about a dozen lines a second during a bootstrap that cannot succeed). ``RepeatFilter`` on
kafka-python's network loggers lets the first of a kind through, drops the same message
(decimal numbers aside: backoff seconds) for ``window_s``, and then lets it through again with
"(N similar messages suppressed)". Distinct messages are never dropped: a different node id or
port is a different message. A refused connection (ECONNREFUSED: no broker listening there yet,
a broker restarting) is routine for a client that retries: kafka-python logs it at ERROR, the
filter passes it on at WARNING. kgroup's own loggers are not filtered (a coordinator that moved
must always be logged). Installed when the network client is first created; docs/production.md
("An unreachable cluster, and logging") says so.
"""

from __future__ import annotations

import logging
import re
import threading

__all__ = ["RepeatFilter", "install"]

#: the loggers an outage makes chatty
CHATTY = (
    "kafka.net.manager",
    "kafka.net.connection",
    "kafka.net.selector",
    "kafka.cluster",
    "kafka.conn",
    "kafka.client",
)

#: a refused connection, routine while a broker starts or restarts (logged at WARNING, not ERROR)
_REFUSED = re.compile(r"ECONNREFUSED|Connection refused", re.IGNORECASE)

#: what varies between repeats of one message: backoff and wait times in seconds
_DECIMALS = re.compile(r"\d+\.\d+")


class RepeatFilter(logging.Filter):
    """Drop a message seen within ``window_s`` (decimal numbers ignored); count what was dropped."""

    def __init__(self, window_s: float = 10.0) -> None:
        super().__init__()
        self.window_s = window_s
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether ``record`` goes on (a logging hook: any thread)."""
        try:
            key = (record.name, _DECIMALS.sub("#", record.getMessage()))
        except Exception:  # a broken format: let logging report it
            return True
        now = record.created  # the record's own timestamp: no clock of kgroup's is involved
        with self._lock:
            last = self._seen.get(key)
            if last is not None and now - last[0] < self.window_s:
                self._seen[key] = (last[0], last[1] + 1)
                return False
            suppressed = last[1] if last is not None else 0
            self._seen[key] = (now, 0)
            if len(self._seen) > 1000:  # bounded: forget the oldest kinds
                for old in sorted(self._seen, key=lambda k: self._seen[k][0])[:500]:
                    del self._seen[old]
        if suppressed:
            record.msg = f"{record.getMessage()} ({suppressed} similar messages suppressed)"
            record.args = ()
        if record.levelno == logging.ERROR and _REFUSED.search(key[1]):
            record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        return True


_installed: RepeatFilter | None = None


def install(window_s: float = 10.0) -> RepeatFilter:
    """Put one ``RepeatFilter`` on the chatty loggers (idempotent); return it."""
    global _installed
    if _installed is None:
        _installed = RepeatFilter(window_s)
        for name in CHATTY:
            logging.getLogger(name).addFilter(_installed)
    return _installed
