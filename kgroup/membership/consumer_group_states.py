"""The consumer-protocol member's states, which events each state takes, and its small sub-states (KIP-848).

``MemberState`` is Java's ``org.apache.kafka.clients.consumer.internals.MemberState`` (plus
kgroup's CLOSED), and ``TRANSITIONS`` its table of valid previous states. ``EVENT_TABLE`` says,
for every state and every event type ``ConsumerGroupMachine``
(:mod:`kgroup.membership.consumer_group`) takes, whether it handles the event, ignores it on
purpose, or rejects it as illegal, as ``kgroup.membership.states.EVENT_TABLE`` does for the
classic machine; the machine consults it in one place (``_admit``), before anything changes.

Besides ``MemberState`` the machine keeps small sub-states, each a frozen value replaced on
change: the subscription (``Subscription``), the requests it waits for (``Requests``), the
application's side of its life (``Lifecycle``), the coordinator
(``kgroup.membership.coordinator.CoordinatorState``), the assignment and the steps out to the
poll thread (``kgroup.membership.consumer_group_reconcile``) and the session timer
(``kgroup.membership.consumer_group_session``). The heartbeat timing and sent fields are apart
(``kgroup.membership.consumer_group_heartbeat``), as Java's ``ConsumerHeartbeatRequestManager``
is apart from its ``ConsumerMembershipManager``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, get_args

import attrs

from kgroup.membership import events as ev
from kgroup.membership import states
from kgroup.membership.states import Verdict, parse_event_table

__all__ = [
    "EVENT_TABLE",
    "STATES",
    "TRANSITIONS",
    "Lifecycle",
    "MemberState",
    "Requests",
    "Subscription",
]


class MemberState(enum.Enum):
    """Where a member of a consumer-protocol group stands (Java's ``MemberState``, plus CLOSED)."""

    #: not in the group: no subscription yet, or it left; no heartbeats
    UNSUBSCRIBED = "unsubscribed"
    #: heartbeating with epoch 0 (without waiting for the interval) until the broker gives an epoch
    JOINING = "joining"
    #: a target assignment differs from the current one: resolving names, or a step is out
    RECONCILING = "reconciling"
    #: a reconciliation completed: the next heartbeat (at once) acknowledges it
    ACKNOWLEDGING = "acknowledging"
    #: in the group, the target assignment reconciled; heartbeats at the interval
    STABLE = "stable"
    #: the broker fenced the member: its partitions are being released as lost, then it rejoins
    FENCED = "fenced"
    #: leaving: the partitions are being released (still heartbeating)
    PREPARE_LEAVING = "prepare_leaving"
    #: the heartbeat with the leave epoch goes out next (at once)
    LEAVING = "leaving"
    #: left because ``poll()`` was not called in time: partitions released as lost; rejoins at the next poll
    STALE = "stale"
    #: a fatal error; no more requests
    FATAL = "fatal"
    #: closed (kgroup's terminal state: the consumer closed)
    CLOSED = "closed"


_S = MemberState

#: state -> the states it may be entered from (Java's ``MemberState`` table; CLOSED from any)
TRANSITIONS: Final[Mapping[MemberState, frozenset[MemberState]]] = MappingProxyType(
    {
        _S.STABLE: frozenset({_S.JOINING, _S.ACKNOWLEDGING, _S.RECONCILING}),
        _S.RECONCILING: frozenset({_S.STABLE, _S.JOINING, _S.ACKNOWLEDGING, _S.RECONCILING}),
        _S.ACKNOWLEDGING: frozenset({_S.RECONCILING}),
        # kgroup adds FENCED and STALE: a FindCoordinator error (authorization) ends those members too
        _S.FATAL: frozenset(
            {_S.JOINING, _S.STABLE, _S.RECONCILING, _S.ACKNOWLEDGING, _S.PREPARE_LEAVING, _S.LEAVING, _S.UNSUBSCRIBED,
             _S.FENCED, _S.STALE}
        ),
        _S.FENCED: frozenset({_S.JOINING, _S.STABLE, _S.RECONCILING, _S.ACKNOWLEDGING}),
        _S.JOINING: frozenset({_S.FENCED, _S.UNSUBSCRIBED, _S.STALE}),
        _S.PREPARE_LEAVING: frozenset({_S.JOINING, _S.STABLE, _S.RECONCILING, _S.ACKNOWLEDGING, _S.UNSUBSCRIBED}),
        _S.LEAVING: frozenset({_S.PREPARE_LEAVING}),
        _S.UNSUBSCRIBED: frozenset({_S.PREPARE_LEAVING, _S.LEAVING, _S.FENCED}),
        _S.STALE: frozenset({_S.LEAVING}),
        _S.CLOSED: frozenset(MemberState),
    }
)

#: states in which the member is not in the group and sends no heartbeat
NOT_IN_GROUP: Final = frozenset({_S.UNSUBSCRIBED, _S.FENCED, _S.FATAL, _S.STALE, _S.CLOSED})
#: states in which the member is leaving (the partitions released, then the leave heartbeat)
LEAVING: Final = frozenset({_S.PREPARE_LEAVING, _S.LEAVING})
#: states that take a new target assignment (Java's ``canHandleNewAssignment``)
TAKES_ASSIGNMENT: Final = TRANSITIONS[_S.RECONCILING]
#: states in which a member in the group may hold partitions (the session timer watches them)
HOLDING: Final = frozenset({_S.STABLE, _S.RECONCILING, _S.ACKNOWLEDGING})

_C = states.MemberState

#: each state as the poll thread reads it (``MemberSnapshot.state``): the classic protocol's
#: states, which the poll thread's decisions (hand-outs, commits, close) are written against;
#: ``MemberSnapshot.state_name`` keeps the member's own
STATES: Final[Mapping[MemberState, states.MemberState]] = MappingProxyType(
    {
        _S.UNSUBSCRIBED: _C.UNJOINED,
        _S.JOINING: _C.JOINING,
        _S.RECONCILING: _C.RECONCILING,
        _S.ACKNOWLEDGING: _C.RECONCILING,
        _S.STABLE: _C.STABLE,
        _S.FENCED: _C.UNJOINED,
        _S.PREPARE_LEAVING: _C.LEAVING,
        _S.LEAVING: _C.LEAVING,
        _S.STALE: _C.UNJOINED,
        _S.FATAL: _C.FATAL,
        _S.CLOSED: _C.CLOSED,
    }
)


# ==================================================================== the event table
_EVENT_TABLE = """
                                unsubscribed joining reconciling acknowledging stable fenced
Subscribe                       handle       handle  handle      handle        handle handle
Unsubscribe                     handle       handle  handle      handle        handle handle
Polled                          handle       handle  handle      handle        handle handle
StepCompleted                   handle       handle  handle      handle        handle handle
Leave                           handle       handle  handle      handle        handle handle
RequestRejoin                   handle       handle  handle      handle        handle handle
CommitErrorObserved             handle       handle  handle      handle        handle handle
MetadataUpdated                 handle       handle  handle      handle        handle handle
CoordinatorDead                 handle       handle  handle      handle        handle handle
SessionTimeoutDescribed         handle       handle  handle      handle        handle handle
FindCoordinatorResponded        handle       handle  handle      handle        handle handle
ConsumerGroupHeartbeatResponded handle       handle  handle      handle        handle handle
RequestFailed                   handle       handle  handle      handle        handle handle

                                prepare_leaving leaving stale  fatal  closed
Subscribe                       handle          handle  handle handle illegal
Unsubscribe                     handle          handle  handle handle illegal
Polled                          handle          handle  handle handle ignore
StepCompleted                   handle          handle  handle handle illegal
Leave                           handle          handle  handle handle ignore
RequestRejoin                   handle          handle  handle handle ignore
CommitErrorObserved             handle          handle  handle handle ignore
MetadataUpdated                 handle          handle  handle handle ignore
CoordinatorDead                 handle          handle  handle handle ignore
SessionTimeoutDescribed         handle          handle  handle handle ignore
FindCoordinatorResponded        handle          handle  handle handle ignore
ConsumerGroupHeartbeatResponded handle          handle  handle handle ignore
RequestFailed                   handle          handle  handle handle ignore
"""
# How to read the table, row by row:
#
# - A response is matched to its request by the handler (the machine's Rule 4): one whose
#   request id is no longer in flight is dropped there, in every state the table lets it in.
#   FATAL sends nothing more (Java: "won't send any requests to the broker") but still takes
#   the answer to a leave heartbeat sent before (a close waits for it). CLOSED ignores every
#   answer: the member has left (a close waits for its leave heartbeat's answer first).
# - ``StepCompleted``: a step may be out in every state but CLOSED (a reconciliation's step
#   outlives a fencing, a leave or a fatal error, which wait for it; the member closes only once
#   no step is out). It must name the step that is out, whatever the state (``_admit``).
# - ``Subscribe`` and ``Unsubscribe`` are illegal once the application closed the consumer
#   (``Leave``), whatever the state (``_admit``); in CLOSED the table says so. A second ``Leave``
#   is ignored.
# - CLOSED ignores what the application and the poll thread say: the member has left for good.
# - FATAL still takes the application's calls: the lost step completes, ``Leave`` closes.


#: state -> event type -> ``Verdict``: every pair, written out above as a grid
EVENT_TABLE: Final[Mapping[MemberState, Mapping[type, Verdict]]] = parse_event_table(
    _EVENT_TABLE, MemberState, get_args(ev.ConsumerGroupEvent)
)


# ==================================================================== sub-states
@attrs.frozen
class Subscription:
    """What the application subscribed to, and whether the next ``Polled`` joins with it."""

    topics: frozenset[str] = frozenset()
    pattern: str | None = None
    #: subscribed while UNSUBSCRIBED: the next ``Polled`` joins (Java joins only inside ``poll()``)
    updated: bool = False


@attrs.frozen
class Requests:
    """The requests the member waits for, by request id (None: none out)."""

    #: the id the next request gets
    next_id: int = 1
    find: int | None = None
    heartbeat: int | None = None
    #: the heartbeat whose answer stopped counting when the coordinator was marked unknown, and
    #: the epoch it was sent with: a fencing answer to it still fences (Java handles every answer)
    abandoned: tuple[int, int] | None = None
    leave: int | None = None
    #: a static member fenced at an epoch the coordinator still holds: release the instance id
    #: (-2) before the epoch-0 join (``_send_instance_release``); the release heartbeat in flight
    release_instance: bool = False
    release: int | None = None
    #: a heartbeat that carried the owned partitions has had no answer without error since: no
    #: partition is taken until one comes (``ConsumerGroupMachine._maybe_reconcile``)
    claim_unconfirmed: bool = False

    def issued(self) -> tuple[int, Requests]:
        """A new request id, and these requests with it taken."""
        return self.next_id, attrs.evolve(self, next_id=self.next_id + 1)


@attrs.frozen
class Lifecycle:
    """The application's side: closing, and the poll watchdog's clock."""

    #: the close in progress (``Leave``), if any
    closing: ev.Leave | None = None
    #: the poll watchdog fired: the member left (STALE) and rejoins at the next ``Polled``
    poll_expired: bool = False
    started: bool = False
    #: the last ``Polled`` (seconds on the driver's clock)
    last_poll: float = 0.0
