"""The consumer-protocol member's session timer (kgroup, beyond Java; docs/kip848.md, "Beyond Java: the session timer").

Under the consumer protocol the coordinator removes a member it has not heard from for the
group's session timeout (``consumer.session.timeout.ms``, the broker's
``group.consumer.session.timeout.ms`` unless the group overrides it; Kafka's
``GroupMetadataManager``), and one that has not acknowledged a revocation within its rebalance
timeout, and gives its partitions to others. A member cut off from the coordinator goes on
fetching and would hand out records the new owners also process (Java's ``AsyncKafkaConsumer``
does). kgroup learns the session timeout (DescribeConfigs) and counts from the *send* time of
the last successful ConsumerGroupHeartbeat (the coordinator renewed the session no earlier), and
from the revocation clock (``SessionTimer.renewed``). Once either runs out, a member holding
partitions hands nothing out (``hand_out_on_hold``) until it knows (``SessionTimer.settled``):

* a heartbeat goes out at once (or the one in flight is waited for); its success resumes the
  hand-outs, a fencing error releases the partitions as lost as always;
* a pending revocation is settled by the answer to the heartbeat that acknowledges it;
* with the coordinator unknown nothing can be asked yet: the partitions are kept and the
  hand-outs held until the coordinator is found again and answers the heartbeat (a coordinator
  that restarted keeps the member); its fencing errors, or the poll timeout, give them up.

Without a known session timeout (DescribeConfigs not allowed or not answered) only the
revocation clock runs. ``SessionTimer`` is a frozen value ``ConsumerGroupMachine``
(:mod:`kgroup.membership.consumer_group`) replaces on change; no clock, no IO.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from uuid import UUID

import attrs

__all__ = ["SessionTimer"]

_NONE_OUT: Mapping[int, float] = MappingProxyType({})


@attrs.frozen
class SessionTimer:
    """The session and revocation clocks, from the heartbeats sent and answered (seconds on the driver's clock)."""

    #: the group's session timeout in seconds (DescribeConfigs), None while unknown
    timeout_s: float | None = None
    #: the send time of the last heartbeat answered without error: the coordinator renewed
    #: the session no earlier than that
    alive_at: float = 0.0
    #: the heartbeat in flight: when it was sent, and the owned partitions it carried (None: not carried)
    sent_at: float = 0.0
    carried: frozenset[tuple[UUID, int]] | None = None
    #: the send time of the first heartbeat sent since the last one answered without error
    unconfirmed_since: float | None = None
    #: heartbeats whose answer has not come back (abandoned ones too): request id -> send time
    unresolved: Mapping[int, float] = _NONE_OUT
    #: the revocation clock: the earliest moment the coordinator may have started waiting for
    #: this member to revoke partitions (None: no revocation pending as far as it knows)
    revoke_since: float | None = None
    #: hand-outs on hold: the coordinator may have removed the member
    in_doubt: bool = False
    #: in doubt because of the session (a successful heartbeat settles it: one goes out at once)
    doubt_asks: bool = False

    def sent(self, request_id: int, now: float, carried: frozenset[tuple[UUID, int]] | None) -> SessionTimer:
        """A heartbeat (not a leave) went out at ``now``, carrying ``carried`` as the owned partitions."""
        return attrs.evolve(
            self,
            sent_at=now,
            carried=carried,
            unresolved=MappingProxyType({**self.unresolved, request_id: now}),
            unconfirmed_since=now if self.unconfirmed_since is None else self.unconfirmed_since,
        )

    def answered(self, request_id: int) -> SessionTimer:
        """The heartbeat ``request_id`` was answered or failed (whatever it was)."""
        if request_id not in self.unresolved:
            return self
        return attrs.evolve(
            self, unresolved=MappingProxyType({k: v for k, v in self.unresolved.items() if k != request_id})
        )

    def clocks(self, rebalance_timeout_ms: int) -> list[float]:
        """When each clock that runs holds the hand-outs (the session, the revocation, the unanswered heartbeat)."""
        clocks = []
        if self.timeout_s is not None:
            clocks.append(self.alive_at + self.timeout_s)
        if self.revoke_since is not None:
            clocks.append(self.revoke_since + rebalance_timeout_ms / 1000)
        if self.unconfirmed_since is not None:
            clocks.append(self.unconfirmed_since + rebalance_timeout_ms / 1000)
        return clocks

    def renewed(
        self,
        *,
        in_group: bool,
        target: frozenset[tuple[UUID, int]],
        previous_target: frozenset[tuple[UUID, int]],
    ) -> SessionTimer:
        """The current heartbeat was answered without error: move the session and revocation clocks.

        The coordinator re-arms the session timer on every successful heartbeat
        (``GroupMetadataManager.scheduleConsumerGroupSessionTimeout``), no earlier than the
        heartbeat was sent. A member whose reported partitions include some the coordinator takes
        away waits in UNREVOKED_PARTITIONS, and its rebalance timeout (the one it sends) fences it
        unless a heartbeat reporting them released arrives first
        (``CurrentAssignmentBuilder``, ``scheduleConsumerGroupRebalanceTimeout``). That timer starts
        when the coordinator processes the heartbeat that moved the member there, which may be an
        earlier one whose answer was lost: the clock starts at the send time of the first heartbeat
        sent since the last successful one (or still unanswered), a safe lower bound.

        ``in_group``: the member is in the group and not leaving (else no revocation is pending);
        ``target``: the target assignment now, ``previous_target`` before the answer.
        """
        sent_at = self.sent_at
        first = min(
            [sent_at, *self.unresolved.values()]
            + ([self.unconfirmed_since] if self.unconfirmed_since is not None else [])
        )
        timer = attrs.evolve(self, alive_at=max(self.alive_at, sent_at), unconfirmed_since=None)
        if not in_group:
            return attrs.evolve(timer, revoke_since=None)
        if self.carried is not None:
            # the coordinator keeps the member in UNREVOKED_PARTITIONS while what it reports owning
            # includes partitions pending revocation
            pending = not self.carried <= target
        else:
            # no owned partitions reported: the coordinator takes it that the member still owns them
            pending = self.revoke_since is not None or bool(previous_target - target)
        if not pending:
            return attrs.evolve(timer, revoke_since=None)
        return timer if self.revoke_since is not None else attrs.evolve(timer, revoke_since=first)

    def settled(self, now: float, *, holds: bool, rebalance_timeout_ms: int) -> tuple[SessionTimer, str | None]:
        """The timer at ``now``, and why the member is in doubt (None: not in doubt).

        ``holds``: a member in the group holding partitions (the timer watches only those).
        """
        if holds:
            session_late = self.timeout_s is not None and now >= self.alive_at + self.timeout_s
            revoke_late = self.revoke_since is not None and now >= self.revoke_since + rebalance_timeout_ms / 1000
            # a heartbeat whose answer never came may have moved the member to UNREVOKED_PARTITIONS
            # (a newer target took partitions away): its rebalance timeout runs from that heartbeat,
            # and the member cannot know; the first heartbeat sent since the last success bounds it
            unanswered_late = (
                self.unconfirmed_since is not None and now >= self.unconfirmed_since + rebalance_timeout_ms / 1000
            )
            if session_late or revoke_late or unanswered_late:
                why = (
                    f"no successful heartbeat within the session timeout ({round(self.timeout_s * 1000)} ms)"
                    if session_late and self.timeout_s is not None
                    else f"a revocation not acknowledged within the rebalance timeout ({rebalance_timeout_ms} ms)"
                    if revoke_late
                    else f"no heartbeat answered within the rebalance timeout ({rebalance_timeout_ms} ms)"
                )
                return attrs.evolve(self, in_doubt=True, doubt_asks=session_late or unanswered_late), why
        if self.in_doubt or self.doubt_asks:
            return attrs.evolve(self, in_doubt=False, doubt_asks=False), None
        return self, None
