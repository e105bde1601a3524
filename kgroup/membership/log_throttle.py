"""One log line per cause and interval: the group machines' repeated failures, throttled.

Against an unreachable cluster a lookup fails at every backoff (``retry_backoff_ms``, growing to
``retry_backoff_max_ms``): logged each time, the same line fills the log several times a
second. kafka-python throttles its own connection lines by their backoff; this does the same
for kgroup's: the first occurrence of a cause is logged, repeats within ``interval_s`` go to
DEBUG, and the next one after it says how many were held back. Pure: the caller passes the
clock's time.
"""

from __future__ import annotations

import logging

__all__ = ["LogThrottle"]


class LogThrottle:
    """Decides which occurrences of a repeated log line are logged at their level.

    Args:
        interval_s: how long repeats of one cause stay quiet after it was logged, in seconds.

    """

    __slots__ = ("_interval_s", "_seen")

    def __init__(self, interval_s: float = 30.0) -> None:
        self._interval_s = interval_s
        #: cause -> (when it was last logged, repeats held back since)
        self._seen: dict[object, tuple[float, int]] = {}

    def admit(self, cause: object, now: float) -> int | None:
        """Whether this occurrence of ``cause`` is logged now.

        Returns:
            None: hold it back (log it at DEBUG at the most); else the number of repeats held
            back since the last time it was logged (0 the first time).

        """
        last = self._seen.get(cause)
        if last is not None and now - last[0] < self._interval_s:
            self._seen[cause] = (last[0], last[1] + 1)
            return None
        self._seen[cause] = (now, 0)
        return 0 if last is None else last[1]

    def log(self, logger: logging.Logger, cause: object, now: float, msg: str, *args: object) -> None:
        """``msg % args`` at INFO if ``admit`` lets it through (with the count held back), else at DEBUG."""
        held = self.admit(cause, now)
        if held is None:
            logger.debug(msg, *args)
        else:
            logger.info(msg + (f" ({held} more since it was last logged)" if held else ""), *args)

    def forget(self) -> None:
        """Start afresh (a success: the next failure is news again)."""
        self._seen.clear()
