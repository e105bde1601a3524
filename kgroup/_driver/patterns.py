"""Pattern subscription under the classic protocol: the client lists the topics and follows the match.

Java's ``subscribe(Pattern)`` with ``ConsumerCoordinator``'s metadata checks: the poll thread lists
the cluster's topics at ``subscribe()``, then every ``metadata_max_age_ms`` and when a subscribed
topic disappears, and posts the new subscription to the group thread when the match changed (the
member then rejoins). Under the consumer protocol the broker matches instead (KIP-848,
``SubscribedTopicRegex``) and nothing here runs.
"""

from __future__ import annotations

import concurrent.futures
import logging
import re
from typing import TYPE_CHECKING

from kgroup.errors import IllegalStateError
from kgroup.membership import events as ev

if TYPE_CHECKING:
    from kgroup._clock import Clock
    from kgroup._driver.port import GroupPort
    from kgroup._io.transport import Transport
    from kgroup.config import ConsumerConfig

__all__ = ["PatternSubscription", "compile_pattern"]

log = logging.getLogger(__name__)


def compile_pattern(pattern: re.Pattern[str] | str) -> re.Pattern[str]:
    """``pattern`` compiled (Python's ``re``).

    Raises:
        IllegalStateError: it does not compile, or it is neither a str nor an ``re.Pattern``.

    """
    try:
        compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
    except re.error as exc:
        raise IllegalStateError(f"subscribe(): invalid pattern {pattern!r}: {exc}") from exc
    if not isinstance(compiled, re.Pattern):
        raise IllegalStateError(f"subscribe(): pattern must be a str or re.Pattern, got {pattern!r}")
    return compiled


class PatternSubscription:
    """The pattern, the topic listing in flight, and when to list again (poll thread only)."""

    def __init__(self, config: ConsumerConfig, clock: Clock) -> None:
        self._config = config
        self._clock = clock
        self.pattern: re.Pattern[str] | None = None
        self._lookup: concurrent.futures.Future[frozenset[str]] | None = None
        self._check_at = float("-inf")

    def follow(self, pattern: re.Pattern[str] | None) -> None:
        """Follow ``pattern`` (None: a topic list), listing the topics at the next check."""
        self.pattern = pattern
        self._lookup = None
        self._check_at = float("-inf")

    def stop(self) -> None:
        """No pattern any more; an answer in flight is ignored."""
        self.pattern = None
        self._lookup = None

    def check_soon(self) -> None:
        """List the topics at the next check (a subscribed topic was deleted)."""
        self._check_at = float("-inf")

    def maybe_match(self, group: GroupPort, transport: Transport | None) -> None:
        """List the topics when due, and post the subscription when the match changed."""
        pattern = self.pattern
        if pattern is None:
            return
        lookup = self._lookup
        if lookup is not None:
            if not lookup.done():
                return
            self._lookup = None
            if lookup.exception() is None:
                matched = frozenset(t for t in lookup.result() if pattern.fullmatch(t))
                current = group.snapshot.subscription
                if matched != current and (matched or current):
                    log.info("group %s: pattern %r now matches %s", self._config.group_id, pattern.pattern,
                             sorted(matched))
                    group.post(ev.Subscribe(matched))
            else:
                self._check_at = self._clock.monotonic() + self._config.retry_backoff_ms / 1000
                return
        now = self._clock.monotonic()
        if now < self._check_at:
            return
        self._check_at = now + self._config.metadata_max_age_ms / 1000
        assert transport is not None
        self._lookup = transport.list_topics(self._config.request_timeout_ms)
