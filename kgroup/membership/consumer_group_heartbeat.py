"""The consumer-protocol member's heartbeats, apart from its membership (KIP-848).

Java keeps them apart too: ``ConsumerHeartbeatRequestManager`` (when a heartbeat goes, what it
carries, the backoff after a failure) beside ``ConsumerMembershipManager`` (states, target and
current assignment). ``ConsumerGroupMachine`` (:mod:`kgroup.membership.consumer_group`) owns
one ``HeartbeatRequestState`` and asks it:

* when the next heartbeat is due (``due``): at the broker's interval after the last one, at once
  in the states that heartbeat now (JOINING, ACKNOWLEDGING, LEAVING), and never before the
  backoff after a failed attempt (Java's ``HeartbeatRequestState``, exponential with jitter);
* which fields the next one carries (``fields``): all of them when joining or after an error,
  otherwise only what changed since the last one sent (Java's ``HeartbeatState`` and its
  ``SentFields``);

and tells it what happened (``sent``, ``succeeded``, ``failed``, ``reset_backoff``). What an error
code means is a row of :func:`kgroup.errors.classify` (``Api.CONSUMER_GROUP_HEARTBEAT``). Pure, as
the machine is: the backoff (and its randomness) is the machine's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final
from uuid import UUID

import attrs

from kgroup.protocol.consumer_group_heartbeat import TopicIdPartitions

__all__ = ["NO_ASSIGNMENT", "HeartbeatRequestState", "LocalAssignment"]


@attrs.frozen
class LocalAssignment:
    """An assignment by topic ids, with a local epoch bumped on every change (Java's ``LocalAssignment``).

    Two assignments with the same partitions but different local epochs differ: the member
    acknowledges each reconciled assignment once, even when it equals an earlier one.
    """

    local_epoch: int
    partitions: frozenset[tuple[UUID, int]]

    def by_topic(self) -> tuple[TopicIdPartitions, ...]:
        """The partitions grouped by topic id, as the request sends them."""
        grouped: dict[UUID, list[int]] = {}
        for topic_id, partition in self.partitions:
            grouped.setdefault(topic_id, []).append(partition)
        return tuple(TopicIdPartitions(t, sorted(ps)) for t, ps in sorted(grouped.items()))


#: no assignment (not in a group, or nothing reconciled yet)
NO_ASSIGNMENT: Final = LocalAssignment(-1, frozenset())


class _SentFields:
    """What the last heartbeat carried, so the next one sends only what changed (Java's ``SentFields``)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.rebalance_timeout_ms = -1
        self.topics: tuple[str, ...] | None = None
        self.pattern: str | None = None
        self.server_assignor: str | None = None
        self.assignment: LocalAssignment | None = None


class HeartbeatRequestState:
    """When the member's next ConsumerGroupHeartbeat goes and what it carries. One owner: the machine.

    Args:
        backoff: seconds to wait after ``attempts`` failed attempts in a row (the machine's
            ``next_backoff_s`` with its randomness).

    """

    def __init__(self, backoff: Callable[[int], float]) -> None:
        self._backoff = backoff
        #: the broker's heartbeat interval in seconds (0 before the first answer)
        self.interval_s = 0.0
        #: when the next heartbeat is due at the interval (seconds on the driver's clock)
        self.next_at = 0.0
        #: no heartbeat before this: the backoff after a failed attempt
        self.backoff_until = 0.0
        self._failed_attempts = 0
        self._sent = _SentFields()

    @property
    def interval_ms(self) -> int:
        """The heartbeat interval the broker gave (0 before the first answer)."""
        return round(self.interval_s * 1000)

    def due(self, *, now: bool, leaving: bool) -> float:
        """When the next heartbeat goes: the interval, or at once if ``now`` (after the backoff unless leaving)."""
        if now:
            return 0.0 if leaving else self.backoff_until
        return max(self.next_at, self.backoff_until)

    def sent(self, now: float) -> None:
        """A heartbeat went out at ``now``: the next is due an interval later."""
        self.next_at = now + self.interval_s

    def ask_now(self) -> None:
        """The next heartbeat goes at once (after any backoff)."""
        self.next_at = 0.0

    def resend_all(self) -> None:
        """The next heartbeat carries every field (Java ``HeartbeatState.reset``)."""
        self._sent.reset()

    def failed(self, now: float) -> None:
        """A heartbeat failed at ``now``: back off, then send at once with every field (Java ``onFailedAttempt``)."""
        self._failed_attempts += 1
        self.backoff_until = now + self._backoff(self._failed_attempts)
        self.next_at = now
        self._sent.reset()

    def reset_backoff(self) -> None:
        """No backoff: the next heartbeat goes at once."""
        self._failed_attempts = 0
        self.backoff_until = 0.0
        self.next_at = 0.0

    def succeeded(self, now: float, interval_ms: int) -> None:
        """A heartbeat was answered without error (Java ``onResponse``): take the interval, end the backoff."""
        interval_s = interval_ms / 1000
        if interval_s != self.interval_s:
            self.interval_s = interval_s
            self.next_at = now + interval_s
        self._failed_attempts = 0
        self.backoff_until = 0.0

    def fields(
        self,
        *,
        send_all: bool,
        rebalance_timeout_ms: int,
        topics: tuple[str, ...],
        pattern: str | None,
        rack_id: str | None,
        server_assignor: str | None,
        owned: LocalAssignment | None,
    ) -> dict[str, Any]:
        """The request fields the next heartbeat carries (Java's ``HeartbeatState.buildRequestData``).

        Every field when ``send_all`` (joining), else only what changed since the last one sent.
        ``owned``: the reconciled assignment to report, or None to leave ``topic_partitions`` out
        whatever it is.
        """
        sent = self._sent
        fields: dict[str, Any] = {}
        if send_all or sent.rebalance_timeout_ms != rebalance_timeout_ms:
            fields["rebalance_timeout_ms"] = rebalance_timeout_ms
            sent.rebalance_timeout_ms = rebalance_timeout_ms
        if send_all or topics != sent.topics:
            fields["subscribed_topic_names"] = topics
            sent.topics = topics
        if (send_all and pattern is not None) or pattern != sent.pattern:
            fields["subscribed_topic_regex"] = pattern if pattern is not None else ""
            sent.pattern = pattern
        if send_all and rack_id is not None:
            fields["rack_id"] = rack_id
        if server_assignor is not None and (send_all or server_assignor != sent.server_assignor):
            fields["server_assignor"] = server_assignor
            sent.server_assignor = server_assignor
        if owned is not None and (send_all or owned != sent.assignment):
            fields["topic_partitions"] = owned.by_topic()
            sent.assignment = owned
        return fields
