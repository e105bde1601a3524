"""The consumer-protocol machine's event table: every (state, event) pair has a verdict, and an
illegal one raises ``ProtocolViolation`` before anything changes (``ConsumerGroupMachine._admit``).

The table is ``kgroup.membership.consumer_group_states.EVENT_TABLE``; the states are Java's
``MemberState`` (``org.apache.kafka.clients.consumer.internals.MemberState``) plus CLOSED.
"""

from __future__ import annotations

from typing import Any, get_args

import pytest

from kgroup.errors import ProtocolViolation
from kgroup.membership import events as ev
from kgroup.membership.commands import DeliverStep
from kgroup.membership.consumer_group import ConsumerGroupMachine
from kgroup.membership.consumer_group_states import EVENT_TABLE, TRANSITIONS, MemberState
from kgroup.membership.events import (
    ConsumerGroupHeartbeatResponded,
    Leave,
    Polled,
    RequestFailed,
    StepCompleted,
    Subscribe,
    Unsubscribe,
)
from kgroup.membership.states import Verdict
from kgroup.types import Generation
from tests.unit.test_kip848_machine import NAMES, Member, assignment, only

EVENT_TYPES = get_args(ev.ConsumerGroupEvent)

#: one event of each type the machine takes
SAMPLES: dict[type, Any] = {
    ev.Subscribe: Subscribe(frozenset({"orders"})),
    ev.Unsubscribe: Unsubscribe(),
    ev.Polled: Polled(),
    ev.StepCompleted: StepCompleted(1),
    ev.Leave: Leave("closing"),
    ev.RequestRejoin: ev.RequestRejoin("asked"),
    ev.CommitErrorObserved: ev.CommitErrorObserved(Generation(), 16),
    ev.MetadataUpdated: ev.MetadataUpdated({}),
    ev.CoordinatorDead: ev.CoordinatorDead("disconnected"),
    ev.FindCoordinatorResponded: ev.FindCoordinatorResponded(request_id=99, error_code=0, node_id=7, host="b",
                                                             port=9092),
    ev.ConsumerGroupHeartbeatResponded: ConsumerGroupHeartbeatResponded(request_id=99, error_code=0, member_epoch=3,
                                                                        heartbeat_interval_ms=5000),
    ev.RequestFailed: RequestFailed(request_id=99, reason="connection reset"),
    ev.SessionTimeoutDescribed: ev.SessionTimeoutDescribed(45000),
}


def machine_state(machine: ConsumerGroupMachine) -> dict[str, Any]:
    """Everything the machine holds (its sub-states are frozen values; the heartbeat timing is copied)."""
    held = {k: v for k, v in vars(machine).items() if k not in ("_out", "_poisoned")}
    timing = vars(machine._heartbeat)
    held["_heartbeat"] = {k: dict(vars(v)) if k == "_sent" else v for k, v in timing.items() if k != "_backoff"}
    return held


def closed() -> Member:
    """A member closed before it joined: CLOSED at once."""
    member = Member()
    assert member.handle(Subscribe(frozenset({"orders"}))) == []
    member.handle(Leave("closing"))
    assert member.state is MemberState.CLOSED
    return member


def test_every_state_has_a_verdict_for_every_event() -> None:
    assert list(EVENT_TABLE) == list(MemberState)
    assert set(SAMPLES) == set(EVENT_TYPES)
    for state in MemberState:
        assert set(EVENT_TABLE[state]) == set(EVENT_TYPES), state
        assert all(isinstance(verdict, Verdict) for verdict in EVENT_TABLE[state].values())


def test_the_transitions_are_javas_member_state_table() -> None:
    """Java's ``MemberState.previousValidStates``; kgroup adds FATAL from FENCED and STALE, and CLOSED."""
    s = MemberState
    java = {
        s.STABLE: {s.JOINING, s.ACKNOWLEDGING, s.RECONCILING},
        s.RECONCILING: {s.STABLE, s.JOINING, s.ACKNOWLEDGING, s.RECONCILING},
        s.ACKNOWLEDGING: {s.RECONCILING},
        s.FATAL: {s.JOINING, s.STABLE, s.RECONCILING, s.ACKNOWLEDGING, s.PREPARE_LEAVING, s.LEAVING, s.UNSUBSCRIBED},
        s.JOINING: {s.FENCED, s.UNSUBSCRIBED, s.STALE},
        s.PREPARE_LEAVING: {s.JOINING, s.STABLE, s.RECONCILING, s.ACKNOWLEDGING, s.UNSUBSCRIBED},
        s.LEAVING: {s.PREPARE_LEAVING},
        s.UNSUBSCRIBED: {s.PREPARE_LEAVING, s.LEAVING, s.FENCED},
        s.STALE: {s.LEAVING},
    }
    for state, previous in java.items():
        assert previous <= TRANSITIONS[state], state
    assert TRANSITIONS[s.FATAL] - java[s.FATAL] == {s.FENCED, s.STALE}
    assert TRANSITIONS[s.CLOSED] == frozenset(MemberState)


ILLEGAL = [(state, kind) for state in MemberState for kind in EVENT_TYPES
           if EVENT_TABLE[state][kind] is Verdict.ILLEGAL]
IGNORED = [(state, kind) for state in MemberState for kind in EVENT_TYPES
           if EVENT_TABLE[state][kind] is Verdict.IGNORE]


def test_the_illegal_and_ignored_pairs_are_those_of_a_closed_member() -> None:
    """The member in every other state takes every event (a response's request id decides, in its handler)."""
    assert ILLEGAL and {state for state, _ in ILLEGAL} == {MemberState.CLOSED}
    assert {kind for _, kind in ILLEGAL} == {ev.Subscribe, ev.Unsubscribe, ev.StepCompleted}
    assert {state for state, _ in IGNORED} == {MemberState.CLOSED}


@pytest.mark.parametrize(("state", "kind"), ILLEGAL, ids=lambda x: getattr(x, "__name__", getattr(x, "name", x)))
def test_an_illegal_event_raises_before_anything_changes_and_poisons(state: MemberState, kind: type) -> None:
    member = closed()
    assert member.state is state
    before = machine_state(member.machine)
    with pytest.raises(ProtocolViolation, match=f"{kind.__name__} is illegal in state {state.name}"):
        member.handle(SAMPLES[kind])
    assert machine_state(member.machine) == before
    with pytest.raises(ProtocolViolation):  # poisoned: every later call raises it again
        member.handle(Polled())
    with pytest.raises(ProtocolViolation):
        member.tick()


@pytest.mark.parametrize(("state", "kind"), IGNORED, ids=lambda x: getattr(x, "__name__", getattr(x, "name", x)))
def test_an_ignored_event_changes_nothing(state: MemberState, kind: type) -> None:
    member = closed()
    before = machine_state(member.machine)
    assert member.handle(SAMPLES[kind]) == []
    assert machine_state(member.machine) == before
    assert member.machine.next_deadline(member.now) == float("inf")


def test_a_step_completion_must_name_the_step_that_is_out_whatever_the_state() -> None:
    member = Member()
    first = member.join()
    member.handle(ev.MetadataUpdated(NAMES))
    out = member.respond(first, epoch=5, assigned=assignment(orders=[0]))
    step = next(c for c in out if isinstance(c, DeliverStep))
    assert member.state is MemberState.RECONCILING
    before = machine_state(member.machine)
    with pytest.raises(ProtocolViolation, match=r"StepCompleted\(99\) but the pending step is"):
        member.handle(StepCompleted(99))
    assert machine_state(member.machine) == before
    assert step.step.step_id != 99


def test_subscribing_while_closing_is_illegal_in_any_state() -> None:
    member = Member()
    member.stable_with(orders=[0])
    only(member.handle(Leave("closing")), DeliverStep)  # the revocation is out: PREPARE_LEAVING
    assert member.state is MemberState.PREPARE_LEAVING
    before = machine_state(member.machine)
    with pytest.raises(ProtocolViolation, match="subscribe after close"):
        member.handle(Subscribe(frozenset({"payments"})))
    assert machine_state(member.machine) == before


def test_a_second_leave_is_ignored() -> None:
    member = Member()
    member.stable_with(orders=[0])
    member.handle(Leave("closing"))
    before = machine_state(member.machine)
    assert member.handle(Leave("again")) == []
    assert machine_state(member.machine) == before
