"""The consumer-protocol member's heartbeats, apart from its membership (KIP-848).

Java keeps them apart too: ``ConsumerHeartbeatRequestManager`` (when a heartbeat goes, what it
carries, the backoff after a failure) beside ``ConsumerMembershipManager`` (states, target and
current assignment). ``ConsumerGroupMachine`` (:mod:`kgroup.membership.consumer_group`) owns
one ``HeartbeatRequestState`` and asks it:

* when the next heartbeat is due (``due``): at the broker's interval after the last one, at once
  in the states that heartbeat now (JOINING, ACKNOWLEDGING, LEAVING), and never before the
  backoff after a failed attempt (Java's ``HeartbeatRequestState``, exponential with jitter);
  sooner while partitions may be on their way to the member (``prompt``, kgroup beyond Java:
  the prompt heartbeats below);
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

__all__ = [
    "NO_ASSIGNMENT",
    "PROMPT_PER_INTERVAL",
    "PROMPT_WINDOW_INTERVALS",
    "HeartbeatRequestState",
    "LocalAssignment",
]

#: prompt heartbeats go on for this many heartbeat intervals after the answer that started them:
#: the members giving partitions up learn of it at their next heartbeat (within one interval of
#: the new target), revoke, and acknowledge at once; half an interval more for their revocation
PROMPT_WINDOW_INTERVALS: Final = 1.5
#: the longest wait between two prompt heartbeats is the heartbeat interval divided by this
#: (0.5 s at Kafka's default 5 s): a partition released meanwhile waits at most that long
PROMPT_PER_INTERVAL: Final = 10


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

    Prompt heartbeats (kgroup, beyond Java): the coordinator gives a member a partition of its
    target only once no other member holds it (``CurrentAssignmentBuilder``, the member's state
    UNRELEASED_PARTITIONS), and a member learns of it only in the answer to its own next
    heartbeat; at the interval a released partition waits up to a whole interval for its new
    owner. The answer does not say that the member waits (it carries the assigned partitions, not
    the target), so the machine calls ``prompt`` on the answers after which partitions may still
    be on their way (``ConsumerGroupMachine._on_heartbeat_success``): then, for
    ``PROMPT_WINDOW_INTERVALS`` intervals, the next heartbeat goes ``prompt_base_s`` after the
    last one, the wait doubling each time up to the interval / ``PROMPT_PER_INTERVAL`` (never
    below ``prompt_base_s``). Bounded: one window is at most some
    ``PROMPT_WINDOW_INTERVALS * PROMPT_PER_INTERVAL`` heartbeats (15, whatever the interval),
    plus the few of the doubling, the first ``prompt_base_s`` apart, and only after such an
    answer; a member whose answers change nothing heartbeats at the broker's interval, which
    stays the steady one.

    Args:
        backoff: seconds to wait after ``attempts`` failed attempts in a row (the machine's
            ``next_backoff_s`` with its randomness).
        prompt_base_s: the first wait of the prompt heartbeats (seconds; the machine gives
            ``retry_backoff_ms``, the shortest wait Java's ``RequestState`` keeps between two
            requests after an answer).

    """

    def __init__(self, backoff: Callable[[int], float], prompt_base_s: float = 0.1) -> None:
        self._backoff = backoff
        self._prompt_base_s = prompt_base_s
        #: prompt heartbeats go on until then (seconds on the driver's clock; 0: none)
        self.prompt_until = 0.0
        #: prompt heartbeats sent since ``prompt`` (the wait doubles with each)
        self._prompts_sent = 0
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
        """A heartbeat went out at ``now``: the next is due an interval later, or the prompt wait while prompting."""
        if self.prompting(now):
            self.next_at = now + self._prompt_wait()
            self._prompts_sent += 1
        else:
            self.next_at = now + self.interval_s

    def prompting(self, now: float) -> bool:
        """Whether prompt heartbeats go on at ``now`` (``prompt``)."""
        return now < self.prompt_until

    def prompt(self, now: float) -> None:
        """Partitions may be on their way to the member: prompt heartbeats for a while (see the class).

        The next heartbeat goes ``prompt_base_s`` after ``now`` (or at its interval, if sooner);
        a later call starts the window and the doubling again.
        """
        if self.interval_s <= 0:
            return
        self.prompt_until = now + PROMPT_WINDOW_INTERVALS * self.interval_s
        self._prompts_sent = 0
        self.next_at = min(self.next_at, now + self._prompt_wait())

    def end_prompt(self) -> None:
        """No more prompt heartbeats (the member left, or joins again)."""
        self.prompt_until = 0.0
        self._prompts_sent = 0

    def _prompt_wait(self) -> float:
        cap = max(self._prompt_base_s, self.interval_s / PROMPT_PER_INTERVAL)
        doubled: float = self._prompt_base_s * 2.0 ** min(self._prompts_sent, 30)
        return min(self.interval_s, cap, doubled)

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
            self.next_at = now + (self._prompt_wait() if self.prompting(now) else interval_s)
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
