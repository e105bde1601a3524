"""The classic member's session timer: what a member that heard nothing from its coordinator does.

The coordinator removes a member it has not heard from for ``session_timeout_ms`` and gives its
partitions to others; a member cut off from it (the coordinator unreachable, its requests lost)
goes on fetching and would hand out records the new owners also process. Java's
``HeartbeatThread`` only marks the coordinator unknown at that point; librdkafka
(``rd_kafka_cgrp_session_timeout_check`` in ``rdkafka_cgrp.c``) drops the assignment as lost.
kgroup counts from the *send* time of the last Heartbeat that succeeded (or the JoinGroup that
completed a rebalance): the coordinator renewed the session no earlier than that, so the member
stops before the coordinator can have expired it (``session_deadline``). A rebalance the member
never heard of (its heartbeats lost) removes it after ``rebalance_timeout_ms``, which may be the
shorter: that clock starts at the send time of the last Heartbeat answered without
REBALANCE_IN_PROGRESS. ``session_verdict`` says what the member does then.

The probe (``GroupMachine._maybe_probe``): past the session timeout with the coordinator unknown,
the member keeps its partitions on hold and, once the coordinator is found, sends a SyncGroup of
its generation without assignments: a question Kafka's coordinator cannot answer blindly. While it
loads the group it says COORDINATOR_LOAD_IN_PROGRESS (a Heartbeat gets no error then, for any
member); once loaded it validates member and generation (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION)
and in a Stable group returns the member's assignment without changing anything
(``GroupMetadataManager.classicGroupSyncToClassicGroup``); REBALANCE_IN_PROGRESS also says the
member is still in. A SyncGroup renews no session, so the heartbeat timer goes on deciding the
hold: a Heartbeat sent at T and answered (blindly or not) means the coordinator expires the
member no earlier than T + ``session_timeout_ms``, since a loading coordinator starts every
session timer afresh once the group is loaded.
docs/protocol.md ("Liveness: the session timer").
"""

from __future__ import annotations

import enum

from kgroup.membership.machine_config import MachineConfig
from kgroup.membership.timers import HeartbeatTimer

__all__ = ["SessionVerdict", "java_session_deadline", "session_deadline", "session_verdict"]


class SessionVerdict(enum.Enum):
    """What the session timer asks of the member now."""

    #: the session may still be alive (or nothing is watched): nothing to do
    ALIVE = enum.auto()
    #: hand nothing out until the coordinator answers a request in flight or about to go
    ASK = enum.auto()
    #: nobody to ask: keep the partitions on hold and ask the coordinator once it is found
    LOST = enum.auto()
    #: holding no partitions: look for the coordinator again, keep the generation (Java)
    REDISCOVER = enum.auto()


def session_deadline(heartbeat: HeartbeatTimer, config: MachineConfig) -> float:
    """The first moment the coordinator may have removed the member (session or rebalance timeout)."""
    return min(
        heartbeat.alive_at + config.session_timeout_ms / 1000,
        heartbeat.calm_at + config.rebalance_timeout_ms / 1000,
    )


def java_session_deadline(heartbeat: HeartbeatTimer, config: MachineConfig) -> float:
    """Java's session timer: ``session_timeout_ms`` after the last successful Heartbeat's answer."""
    return heartbeat.last_ok + config.session_timeout_ms / 1000


def session_verdict(
    now: float, *, holds: bool, deadline: float, can_ask: bool, heartbeats: bool, java_deadline: float
) -> SessionVerdict:
    """The session timer's verdict at ``now``.

    A member that ``holds`` partitions under a generation and is past its ``deadline``
    (``session_deadline``) hands nothing out (``hand_out_on_hold``; the poll thread also checks
    the deadline itself, ``MemberSnapshot.hold_at``) until it knows:

    * with a request to wait for (``can_ask``), ASK: a JoinGroup or SyncGroup in flight is
      waited for (Kafka keeps a member whose join or sync is parked alive,
      ``ClassicGroupMember.hasSatisfiedHeartbeat``), and so is the JoinGroup of a rejoin about
      to go out (a SyncGroup answered REBALANCE_IN_PROGRESS: the coordinator still knew the
      member; its JoinGroup is the question, and UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION loses
      the partitions as always); otherwise a Heartbeat goes out at once (or the one in flight is
      waited for): its success resumes the hand-outs, its error is handled as always
      (UNKNOWN_MEMBER_ID: the partitions are lost);
    * with the coordinator unknown, nothing can be asked yet, LOST: the machine keeps the
      partitions and the hold, looks for the coordinator, and asks it with a SyncGroup of its
      generation (``GroupMachine._maybe_probe``). Not with a Heartbeat: Kafka answers one with no
      error while the group is still loading (``GroupCoordinatorService.heartbeat``), also for a
      member a group written Empty no longer has; a SyncGroup gets COORDINATOR_LOAD_IN_PROGRESS
      then, and once the group is loaded UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION if the member is
      out. Only that word, or the poll timeout, gives the partitions up.

    A member holding no partitions, with ``heartbeats`` due and past ``java_deadline``
    (``java_session_deadline``), only looks for the coordinator again, as Java: REDISCOVER.
    """
    if holds:
        if now < deadline:
            return SessionVerdict.ALIVE
        return SessionVerdict.ASK if can_ask else SessionVerdict.LOST
    if heartbeats and now >= java_deadline:
        return SessionVerdict.REDISCOVER
    return SessionVerdict.ALIVE
