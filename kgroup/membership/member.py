"""``Member``: what the group thread runs, whichever the group protocol; ``ConsumerGroupMember`` for KIP-848.

The group thread (``kgroup._driver.group_thread``) and the poll thread (``kgroup.consumer``)
speak the classic machine's vocabulary: events of :mod:`kgroup.membership.events` in, commands
of :mod:`kgroup.membership.commands` out, a published ``MemberSnapshot``, ``RebalanceStep`` values
for the poll thread. ``GroupMachine`` (the classic protocol) is a ``Member`` as it is.
``ConsumerGroupMember`` wraps ``ConsumerGroupMachine`` (the consumer protocol, KIP-848) and
translates, so both machines run under the same owner rules: the group thread owns the
machine, listener callbacks run on the poll thread from steps, revoke before assign.

What the translation keeps (docs/kip848.md, "The Consumer"):

* a ``RebalanceStep``'s ``generation`` is ``Generation(member_epoch, member_id)``: commits carry
  the member epoch in OffsetCommit's ``generation_id`` field (its name since KIP-848 is
  ``GenerationIdOrMemberEpoch``) and the member id, as Java's ``CommitRequestManager`` does;
  with no epoch (joining, fenced, left) it is ``Generation()``, and a commit fails;
* the states map onto the classic ones the poll thread reads (``STATES``);
* ``Leave.send_leave_group`` None / True / False is Java's ``CloseOptions``
  ``DEFAULT`` / ``LEAVE_GROUP`` / ``REMAIN_IN_GROUP``;
* ``RequestRejoin`` is ignored with a log line: the consumer protocol has no client-side
  rebalance (Java's ``AsyncKafkaConsumer.enforceRebalance`` does nothing either);
* ``CommitErrorObserved`` is ignored: the next heartbeat learns of a fencing itself.

The consumer-protocol events (``kgroup.membership.consumer_group``'s ``Subscribe`` with a
pattern, ``HeartbeatResponded``, ``RequestFailed``, ``MetadataUpdated``, ``StepCompleted``,
``SessionTimeoutDescribed``) pass
through; so do its ``SendConsumerGroupHeartbeat`` and ``RequestMetadata`` commands, which the
group thread executes itself. Pure, as the machines are: no IO, no clock, no threads.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, Protocol

from kgroup.config import ConsumerConfig
from kgroup.errors import ProtocolViolation
from kgroup.membership import commands as cmd
from kgroup.membership import consumer_group as cg
from kgroup.membership import events as ev
from kgroup.membership.machine import MemberSnapshot
from kgroup.membership.states import MemberState
from kgroup.types import Generation

__all__ = ["STATES", "ConsumerGroupMember", "Member"]

log = logging.getLogger(__name__)


class Member(Protocol):
    """The membership machine as the group thread uses it (``GroupMachine``, ``ConsumerGroupMember``)."""

    @property
    def state(self) -> MemberState:
        """The member state, in the classic machine's terms."""
        ...

    def handle(self, event: Any, now: float) -> Sequence[Any]:
        """Process one event at ``now`` (seconds); the commands to execute, in order."""
        ...

    def tick(self, now: float) -> Sequence[Any]:
        """Fire the timers due at ``now``."""
        ...

    def next_deadline(self, now: float) -> float:
        """When ``tick`` next has work (clock seconds; inf: none)."""
        ...

    def snapshot(self) -> MemberSnapshot:
        """An immutable view for other threads."""
        ...


_C = cg.MemberState
_M = MemberState

#: the consumer-protocol states as the classic states the poll thread reads
STATES: Final[Mapping[cg.MemberState, MemberState]] = MappingProxyType(
    {
        _C.UNSUBSCRIBED: _M.UNJOINED,
        _C.JOINING: _M.JOINING,
        _C.RECONCILING: _M.RECONCILING,
        _C.ACKNOWLEDGING: _M.RECONCILING,
        _C.STABLE: _M.STABLE,
        _C.FENCED: _M.UNJOINED,
        _C.PREPARE_LEAVING: _M.LEAVING,
        _C.LEAVING: _M.LEAVING,
        _C.STALE: _M.UNJOINED,
        _C.FATAL: _M.FATAL,
        _C.CLOSED: _M.CLOSED,
    }
)

_LEAVE_OPERATIONS: Final = {
    None: cg.LeaveOperation.DEFAULT,
    True: cg.LeaveOperation.LEAVE_GROUP,
    False: cg.LeaveOperation.REMAIN_IN_GROUP,
}

#: consumer-protocol events that go to the machine as they are
_PASS_THROUGH: Final = (
    cg.Subscribe, cg.Unsubscribe, cg.StepCompleted, cg.MetadataUpdated, cg.HeartbeatResponded, cg.RequestFailed,
    cg.SessionTimeoutDescribed,
)


def generation_of(member_id: str, member_epoch: int) -> Generation:
    """The generation commits carry under the consumer protocol: the member epoch, or none without one."""
    return Generation(member_epoch, member_id) if member_epoch > 0 else Generation()


class ConsumerGroupMember:
    """``ConsumerGroupMachine`` behind the classic machine's events, commands and snapshot.

    Args:
        config: the consumer's configuration (``group_remote_assignor`` is the server assignor).
        rng: randomness for the member id and the backoff jitter.
        member_id: the member id to use (the consumer keeps one for its lifetime, KIP-1082);
            None generates one.

    Not thread-safe: the group thread owns it.

    """

    def __init__(
        self, config: ConsumerConfig, *, rng: random.Random | None = None, member_id: str | None = None
    ) -> None:
        self._config = config
        self.machine = cg.ConsumerGroupMachine(
            config, server_assignor=config.group_remote_assignor, rng=rng, member_id=member_id
        )

    @property
    def state(self) -> MemberState:
        """The machine's state as a classic ``MemberState`` (``STATES``)."""
        return STATES[self.machine.state]

    def next_deadline(self, now: float) -> float:
        """When ``tick`` next has work (clock seconds; inf: none)."""
        return self.machine.next_deadline(now)

    def snapshot(self) -> MemberSnapshot:
        """The machine's view in the classic shape: the generation is the member epoch and id."""
        m = self.machine
        snap = m.snapshot()
        return MemberSnapshot(
            STATES[snap.state],
            generation_of(snap.member_id, snap.member_epoch),
            snap.owned,
            snap.coordinator,
            snap.subscription,
            snap.group_instance_id,
            snap.fatal,
            snap.hand_out_on_hold,
            snap.hold_at,
        )

    def handle(self, event: Any, now: float) -> list[Any]:
        """Translate ``event``, let the machine handle it, translate its commands.

        Raises:
            ProtocolViolation: an event the consumer protocol has no use for (a classic
                response or the leader's assignment: a bug), or what the machine raises.

        """
        translated = self._event(event)
        if translated is None:
            return self.tick(now)
        return self._commands(self.machine.handle(translated, now))

    def tick(self, now: float) -> list[Any]:
        """Fire the machine's due timers and translate its commands."""
        return self._commands(self.machine.tick(now))

    # ---------------------------------------------------------------- translation
    def _event(self, event: Any) -> Any:
        if isinstance(event, _PASS_THROUGH):
            return event
        if isinstance(event, ev.Subscribe):
            return cg.Subscribe(event.topics)
        if isinstance(event, ev.Polled):
            return cg.Polled()
        if isinstance(event, ev.StepCompleted):
            return cg.StepCompleted(event.step_id)
        if isinstance(event, ev.Leave):
            return cg.Leave(event.reason, _LEAVE_OPERATIONS[event.send_leave_group])
        if isinstance(event, ev.CoordinatorDead):
            return cg.CoordinatorDead(event.reason)
        if isinstance(event, ev.FindCoordinatorResponded):
            return cg.FindCoordinatorResponded(
                request_id=event.request_id, error_code=event.error_code, node_id=event.node_id,
                host=event.host, port=event.port,
            )
        if isinstance(event, ev.RequestFailed):
            return cg.RequestFailed(request_id=event.request_id, reason=event.reason)
        if isinstance(event, ev.RequestRejoin):
            log.info(
                "group %s: a rebalance was asked for (%s); under the consumer protocol the broker decides "
                "when to rebalance: nothing to do", self._config.group_id, event.reason,
            )
            return None
        if isinstance(event, ev.CommitErrorObserved):
            log.info("group %s: a commit returned error %d; the next heartbeat will tell", self._config.group_id,
                     event.code)
            return None
        raise ProtocolViolation(f"the consumer group protocol has no use for {event!r}")

    def _commands(self, commands: Sequence[cg.Command]) -> list[Any]:
        out: list[Any] = []
        for command in commands:
            if isinstance(command, cg.SendFindCoordinator):
                out.append(cmd.SendFindCoordinator(
                    request_id=command.request_id, key=self._config.group_id, timeout_ms=command.timeout_ms
                ))
            elif isinstance(command, cg.DeliverStep):
                out.append(cmd.DeliverStep(self._step(command.step)))
            elif isinstance(command, cg.Notify):
                out.append(cmd.Notify(command.error))
            elif isinstance(command, cg.Fail):
                out.append(cmd.Fail(command.error))
            else:  # SendConsumerGroupHeartbeat, RequestMetadata: the group thread's own
                out.append(command)
        return out

    def _step(self, step: cg.ReconcileStep) -> cmd.RebalanceStep:
        return cmd.RebalanceStep(
            step_id=step.step_id,
            generation=generation_of(self.machine.member_id, step.member_epoch),
            lost=step.lost,
            revoked=step.revoked,
            assigned=step.assigned,
            owned=step.owned,
            invoke_assigned=step.invoke_assigned,
            reason=step.reason,
        )
