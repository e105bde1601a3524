"""GroupMachine poisoning (h11's ERROR state): after a ProtocolViolation or a fatal response,
every later ``handle``/``tick`` raises the stored error."""

from __future__ import annotations

import pytest

from kgroup._error_codes import GROUP_AUTHORIZATION_FAILED
from kgroup.errors import FatalGroupError, ProtocolViolation
from kgroup.membership import MemberState
from kgroup.membership import events as ev
from kgroup.membership.commands import Fail, SendHeartbeat
from tests.unit.machine_script import Script, only, tp

OWNED = frozenset({tp("a", 0)})

LATER_EVENTS = [
    pytest.param(ev.Polled(), id="Polled"),
    pytest.param(ev.Subscribe(frozenset({"b"})), id="Subscribe"),
    pytest.param(ev.RequestRejoin("again"), id="RequestRejoin"),
    pytest.param(ev.Leave(), id="Leave"),
    pytest.param(ev.StepCompleted(1), id="StepCompleted"),
    pytest.param(ev.HeartbeatResponded(request_id=1, error_code=0), id="HeartbeatResponded"),
    pytest.param(ev.RequestFailed(1, "x"), id="RequestFailed"),
]


def _stable():
    t = Script()
    m = t.machine()
    t.bring_to_stable(m, owned=OWNED)
    return t, m


@pytest.mark.parametrize(
    "step_id",
    [
        pytest.param(99, id="never-delivered"),
        pytest.param(1, id="already-completed"),
    ],
)
@pytest.mark.parametrize("later", LATER_EVENTS)
def test_poisoned_step_completed_for_undelivered_step_raises_and_poisons(step_id, later):
    _, m = _stable()
    with pytest.raises(ProtocolViolation) as first:
        m.handle(ev.StepCompleted(step_id), 1.0)
    assert str(step_id) in str(first.value)
    assert m.state is MemberState.FATAL
    with pytest.raises(ProtocolViolation) as again:
        m.handle(later, 2.0)
    assert again.value is first.value
    with pytest.raises(ProtocolViolation) as ticked:
        m.tick(100.0)
    assert ticked.value is first.value


def test_poisoned_step_completed_on_fresh_machine_raises():
    m = Script().machine()
    with pytest.raises(ProtocolViolation):
        m.handle(ev.StepCompleted(1), 0.0)
    with pytest.raises(ProtocolViolation):
        m.tick(1.0)


@pytest.mark.parametrize("later", LATER_EVENTS)
def test_poisoned_after_fatal_response_every_later_call_raises(later):
    t, m = _stable()
    only(t.tick(m, 3.0), SendHeartbeat)
    error = only(t.handle(m, t.heartbeat_response(GROUP_AUTHORIZATION_FAILED), now=3.1), Fail).error
    assert isinstance(error, FatalGroupError)
    assert m.state is MemberState.FATAL
    for now in (3.2, 60.0, 1000.0):
        with pytest.raises(FatalGroupError) as raised:
            m.handle(later, now)
        assert raised.value is error
        with pytest.raises(FatalGroupError) as raised:
            m.tick(now)
        assert raised.value is error
    assert m.next_deadline(3.2) == float("inf")


def test_poisoned_snapshot_carries_the_error():
    t, m = _stable()
    t.tick(m, 3.0)
    error = only(t.handle(m, t.heartbeat_response(GROUP_AUTHORIZATION_FAILED), now=3.1), Fail).error
    assert m.snapshot().fatal is error
    assert m.snapshot().state is MemberState.FATAL
