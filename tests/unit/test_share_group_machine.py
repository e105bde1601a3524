"""ShareGroupMachine (KIP-932): joining, the assignment by topic id, the heartbeat interval, fencing, leaving,
fatal errors, and the (state, event) table, on plain numbers for time."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from kgroup._error_codes import (
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    FENCED_MEMBER_EPOCH,
    GROUP_AUTHORIZATION_FAILED,
    NOT_COORDINATOR,
    TOPIC_AUTHORIZATION_FAILED,
    UNKNOWN_MEMBER_ID,
    UNSUPPORTED_VERSION,
)
from kgroup.config import ConsumerConfig
from kgroup.errors import (
    SHARE_GROUPS_NOT_SUPPORTED,
    FatalGroupError,
    GroupAuthorizationFailedError,
    ProtocolViolation,
    TopicAuthorizationFailedError,
)
from kgroup.membership import events as ev
from kgroup.membership.commands import DeliverStep, Fail, Notify, RequestMetadata, SendFindCoordinator
from kgroup.membership.coordinator import CoordinatorState
from kgroup.membership.core import Member
from kgroup.membership.share_group import (
    EVENT_TABLE,
    SHARE_STATES,
    STATES,
    SendShareGroupHeartbeat,
    ShareGroupHeartbeatResponded,
    ShareGroupMachine,
    ShareMemberState,
)
from kgroup.membership.states import MemberState, Verdict
from kgroup.protocol.share_group_heartbeat import TopicIdPartitions
from kgroup.types import TopicPartition

S = ShareMemberState
TOPIC_ID = uuid.UUID("5f1c0a43-bb3a-4f63-9c1e-2b9b7a6f0e11")
NAMES = {TOPIC_ID: "queue"}
ALL = (TopicIdPartitions(TOPIC_ID, (0, 1, 2)),)
NODE = 1


def config(**overrides: Any) -> ConsumerConfig:
    return ConsumerConfig(bootstrap_servers="localhost:9092", group_id="share", client_rack="az-1", **overrides)


def machine() -> ShareGroupMachine:
    return ShareGroupMachine(config(), rng=random.Random(7))


def only(commands: list[Any], kind: type) -> Any:
    found = [c for c in commands if isinstance(c, kind)]
    assert len(found) == 1, commands
    return found[0]


def answer(beat: SendShareGroupHeartbeat, *, error: int = 0, epoch: int = 1, assignment: Any = None,
           interval_ms: int = 5000) -> ShareGroupHeartbeatResponded:
    return ShareGroupHeartbeatResponded(
        request_id=beat.request_id, error_code=error, member_id=beat.member_id, member_epoch=epoch,
        heartbeat_interval_ms=interval_ms, assignment=assignment,
    )


def joining(m: ShareGroupMachine, now: float = 0.0) -> SendShareGroupHeartbeat:
    """Subscribe, poll, find the coordinator: the joining heartbeat."""
    assert m.handle(ev.Subscribe({"queue"}), now) == []  # Java joins inside poll()
    find = only(m.handle(ev.Polled(), now), SendFindCoordinator)
    assert find.key == "share"
    beat: SendShareGroupHeartbeat = only(
        m.handle(ev.FindCoordinatorResponded(request_id=find.request_id, node_id=NODE), now), SendShareGroupHeartbeat
    )
    return beat


def stable_with(m: ShareGroupMachine, assignment: Any = ALL, now: float = 0.0) -> SendShareGroupHeartbeat:
    """Joined, the assignment handed to the poll thread; returns the acknowledging heartbeat."""
    m.handle(ev.MetadataUpdated(NAMES), now)
    beat = joining(m, now)
    step = only(m.handle(answer(beat, assignment=assignment), now), DeliverStep).step
    ack: SendShareGroupHeartbeat = only(m.handle(ev.StepCompleted(step.step_id), now), SendShareGroupHeartbeat)
    m.handle(answer(ack), now)
    assert m.state is S.STABLE
    return ack


def tps(*partitions: int) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition("queue", p) for p in partitions)


# ------------------------------------------------------------------ joining and the assignment
def test_the_machine_is_a_member_of_the_core() -> None:
    m: Member = machine()
    assert m.state_name == "UNSUBSCRIBED"
    assert m.session_timeout_ms is None
    assert m.snapshot().state is MemberState.UNJOINED


def test_the_member_id_is_a_uuid_generated_by_the_member_and_kept() -> None:
    """KIP-932 and KIP-1082: the member makes its id (Java: ``Uuid.randomUuid().toString()``)."""
    m = machine()
    beat = joining(m)
    assert beat.member_id == m.member_id and len(m.member_id) == 22
    assert beat.member_id != ShareGroupMachine(config(), rng=random.Random(8)).member_id
    fenced = m.handle(answer(beat, error=UNKNOWN_MEMBER_ID), 1.0)
    assert only(fenced, SendShareGroupHeartbeat).member_id == beat.member_id


def test_joining_sends_epoch_0_with_every_field() -> None:
    beat = joining(machine())
    assert (beat.member_epoch, beat.subscribed_topic_names, beat.rack_id, beat.node_id) == (0, ("queue",), "az-1", NODE)
    assert beat.request().api_version == 1


def test_the_assignment_by_topic_id_is_resolved_to_names_then_handed_out() -> None:
    m = machine()
    beat = joining(m)
    out = m.handle(answer(beat, epoch=3, assignment=ALL), 0.1)
    assert only(out, RequestMetadata).topic_ids == {TOPIC_ID}
    assert m.state is S.RECONCILING and not any(isinstance(c, DeliverStep) for c in out)
    step = only(m.handle(ev.MetadataUpdated(NAMES), 0.2), DeliverStep).step
    assert (step.assigned, step.revoked, step.owned, step.commit, step.invoke_assigned) == (
        tps(0, 1, 2), frozenset(), tps(0, 1, 2), False, False
    )
    assert step.generation.generation_id == 3 and step.generation.member_id == m.member_id
    ack = only(m.handle(ev.StepCompleted(step.step_id), 0.3), SendShareGroupHeartbeat)  # at once: ACKNOWLEDGING
    assert ack.member_epoch == 3 and ack.subscribed_topic_names is None  # nothing changed
    assert m.state is S.STABLE and m.owned == tps(0, 1, 2)
    assert m.snapshot().owned == tps(0, 1, 2) and m.snapshot().generation.generation_id == 3


def test_a_new_assignment_revokes_without_commit_or_callbacks() -> None:
    m = machine()
    stable_with(m)
    beat = only(m.tick(5.0), SendShareGroupHeartbeat)
    step = only(m.handle(answer(beat, epoch=2, assignment=(TopicIdPartitions(TOPIC_ID, (2,)),)), 5.1), DeliverStep).step
    assert (step.revoked, step.assigned, step.owned, step.commit) == (tps(0, 1), frozenset(), tps(2), False)


def test_heartbeats_follow_the_brokers_interval() -> None:
    m = machine()
    stable_with(m)  # answered at 0.0 with 5000 ms
    assert m.heartbeat_interval_ms == 5000
    assert m.next_deadline(1.0) == pytest.approx(5.0)
    assert m.tick(4.9) == []
    beat = only(m.tick(5.0), SendShareGroupHeartbeat)
    assert beat.subscribed_topic_names is None and beat.rack_id is None
    m.handle(answer(beat, interval_ms=2000), 5.5)
    assert m.next_deadline(5.5) == pytest.approx(7.5)


# ------------------------------------------------------------------ fencing
@pytest.mark.parametrize("code", [FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID])
def test_fenced_releases_the_partitions_as_lost_and_rejoins_at_epoch_0(code: int) -> None:
    m = machine()
    stable_with(m)
    beat = only(m.tick(5.0), SendShareGroupHeartbeat)
    out = m.handle(answer(beat, error=code), 5.1)
    step = only(out, DeliverStep).step
    assert (step.lost, step.owned, step.commit) == (tps(0, 1, 2), frozenset(), False)
    assert m.state is S.FENCED and m.member_epoch == 0
    assert not any(isinstance(c, SendShareGroupHeartbeat) for c in out)
    rejoin = only(m.handle(ev.StepCompleted(step.step_id), 5.2), SendShareGroupHeartbeat)  # no backoff
    assert (rejoin.member_epoch, rejoin.subscribed_topic_names, rejoin.member_id) == (0, ("queue",), m.member_id)
    assert m.state is S.JOINING and m.owned == frozenset()


# ------------------------------------------------------------------ leaving
def test_leave_releases_then_sends_epoch_minus_1_then_closes() -> None:
    m = machine()
    stable_with(m)
    step = only(m.handle(ev.Leave(), 1.0), DeliverStep).step
    assert (step.revoked, step.owned, step.commit) == (tps(0, 1, 2), frozenset(), False)
    assert m.state is S.PREPARE_LEAVING
    leave = only(m.handle(ev.StepCompleted(step.step_id), 1.1), SendShareGroupHeartbeat)
    assert leave.member_epoch == -1 and m.state is S.LEAVING
    assert m.handle(answer(leave, epoch=-1), 1.2) == [] and m.state is S.CLOSED
    assert m.next_deadline(2.0) == float("inf")


def test_a_leave_in_flight_has_no_deadline() -> None:
    # found by the simulator (share groups): with the leave in flight the group thread's deadline
    # was "now" until its answer came, so the group thread spun for up to request_timeout_ms
    m = machine()
    stable_with(m)
    step = only(m.handle(ev.Leave(), 1.0), DeliverStep).step
    only(m.handle(ev.StepCompleted(step.step_id), 1.1), SendShareGroupHeartbeat)
    assert m.state is S.LEAVING
    assert m.next_deadline(1.2) == float("inf")
    assert m.tick(1.2) == []


def test_unsubscribe_leaves_and_a_new_subscription_joins_again() -> None:
    m = machine()
    stable_with(m)
    step = only(m.handle(ev.Unsubscribe(), 1.0), DeliverStep).step
    leave = only(m.handle(ev.StepCompleted(step.step_id), 1.1), SendShareGroupHeartbeat)
    m.handle(ShareGroupHeartbeatResponded(request_id=leave.request_id, error_code=0, member_epoch=-1), 1.2)
    assert m.state is S.UNSUBSCRIBED
    m.handle(ev.Subscribe({"queue"}), 2.0)
    beat = only(m.handle(ev.Polled(), 2.0), SendShareGroupHeartbeat)  # the coordinator is still known
    assert beat.member_epoch == 0 and beat.member_id == leave.member_id


def test_a_leave_without_a_coordinator_is_not_sent() -> None:
    m = machine()
    stable_with(m)
    m.handle(ev.CoordinatorDead("disconnected"), 1.0)
    step = only(m.handle(ev.Leave(), 1.0), DeliverStep).step
    assert m.handle(ev.StepCompleted(step.step_id), 1.1) == []
    assert m.state is S.CLOSED


# ------------------------------------------------------------------ errors
def test_not_coordinator_finds_the_coordinator_again() -> None:
    m = machine()
    beat = joining(m)
    assert m.handle(answer(beat, error=NOT_COORDINATOR), 0.1) == []
    assert m.snapshot().coordinator is None
    find = only(m.tick(10.0), SendFindCoordinator)
    again = only(m.handle(ev.FindCoordinatorResponded(request_id=find.request_id, node_id=2), 10.0),
                 SendShareGroupHeartbeat)
    assert (again.node_id, again.member_epoch) == (2, 0)


def test_topic_authorization_failed_is_reported_and_the_member_carries_on() -> None:
    m = machine()
    beat = joining(m)
    out = m.handle(answer(beat, error=TOPIC_AUTHORIZATION_FAILED), 0.1)
    assert isinstance(only(out, Notify).error, TopicAuthorizationFailedError)
    assert m.state is S.JOINING
    assert only(m.tick(m.next_deadline(0.1)), SendShareGroupHeartbeat).member_epoch == 0  # after the backoff


def test_group_authorization_failed_is_fatal_and_the_partitions_are_lost() -> None:
    m = machine()
    stable_with(m)
    beat = only(m.tick(5.0), SendShareGroupHeartbeat)
    out = m.handle(answer(beat, error=GROUP_AUTHORIZATION_FAILED), 5.1)
    assert isinstance(only(out, Fail).error, GroupAuthorizationFailedError)
    assert only(out, DeliverStep).step.lost == tps(0, 1, 2)
    assert m.state is S.FATAL and m.snapshot().fatal is m.fatal_error
    assert m.tick(100.0) == [] and m.next_deadline(100.0) == float("inf")


def test_a_cluster_without_share_groups_is_fatal() -> None:
    m = machine()
    beat = joining(m)
    out = m.handle(ev.RequestFailed(beat.request_id, "no version", unsupported_version=True), 0.1)
    error = only(out, Fail).error
    assert isinstance(error, FatalGroupError) and error.code == UNSUPPORTED_VERSION
    assert SHARE_GROUPS_NOT_SUPPORTED in str(error)


def test_a_stale_answer_is_dropped() -> None:
    m = machine()
    beat = joining(m)
    m.handle(ev.CoordinatorDead("moved"), 0.1)  # the heartbeat in flight no longer counts
    assert m.handle(answer(beat, assignment=ALL), 0.2) == []
    assert m.state is S.JOINING and m.member_epoch == 0


# ------------------------------------------------------------------ the (state, event) table
def _unsubscribed() -> ShareGroupMachine:
    return machine()


def _joining() -> ShareGroupMachine:
    m = machine()
    joining(m)
    return m


def _reconciling() -> ShareGroupMachine:
    m = machine()
    m.handle(ev.MetadataUpdated(NAMES), 0.0)
    m.handle(answer(joining(m), assignment=ALL), 0.0)  # the step is out
    return m


def _acknowledging() -> ShareGroupMachine:
    m = _reconciling()
    step = m._step[0]
    only(m.tick(5.0), SendShareGroupHeartbeat)  # RECONCILING heartbeats at the interval
    m.handle(ev.StepCompleted(step.step_id), 5.1)  # a heartbeat is in flight: it stays ACKNOWLEDGING
    return m


def _stable() -> ShareGroupMachine:
    m = machine()
    stable_with(m)
    return m


def _stable_then_heartbeat_error(error: int) -> Callable[[], ShareGroupMachine]:
    """Reaches the state a STABLE member's next heartbeat, answered with ``error``, leads to."""

    def reach() -> ShareGroupMachine:
        m = _stable()
        m.handle(answer(only(m.tick(5.0), SendShareGroupHeartbeat), error=error), 5.1)
        return m

    return reach


_fenced = _stable_then_heartbeat_error(FENCED_MEMBER_EPOCH)
_fatal = _stable_then_heartbeat_error(GROUP_AUTHORIZATION_FAILED)


def _prepare_leaving() -> ShareGroupMachine:
    m = _stable()
    m.handle(ev.Unsubscribe(), 1.0)  # not Leave: a closing consumer may not subscribe (test_no_subscribe_after_leave)
    return m


def _leaving() -> ShareGroupMachine:
    m = _prepare_leaving()
    m.handle(ev.StepCompleted(m._step[0].step_id), 1.1)
    return m


def _stale() -> ShareGroupMachine:
    m = _stable()
    m.tick(301.0)  # max_poll_interval_ms (300000) without a poll: the leave, the lost partitions out
    return m


def _closed() -> ShareGroupMachine:
    m = machine()
    m.handle(ev.Leave(), 0.0)
    return m


REACH: dict[ShareMemberState, Callable[[], ShareGroupMachine]] = {
    S.UNSUBSCRIBED: _unsubscribed, S.JOINING: _joining, S.RECONCILING: _reconciling,
    S.ACKNOWLEDGING: _acknowledging, S.STABLE: _stable, S.FENCED: _fenced, S.PREPARE_LEAVING: _prepare_leaving,
    S.LEAVING: _leaving, S.STALE: _stale, S.FATAL: _fatal, S.CLOSED: _closed,
}


def _event(m: ShareGroupMachine, kind: type) -> Any:
    """An event of ``kind`` that names what is in flight or out (so the table, not staleness, decides)."""
    beat = m._heartbeat_rid or m._leave_rid or 999
    find = m._find_rid or 999
    step_id = m._step[0].step_id if m._step is not None else 999
    return {
        ev.Subscribe: ev.Subscribe({"queue", "other"}),
        ev.Unsubscribe: ev.Unsubscribe(),
        ev.Polled: ev.Polled(),
        ev.Leave: ev.Leave(),
        ev.MetadataUpdated: ev.MetadataUpdated(NAMES),
        ev.CoordinatorDead: ev.CoordinatorDead("gone"),
        ev.StepCompleted: ev.StepCompleted(step_id),
        ev.FindCoordinatorResponded: ev.FindCoordinatorResponded(request_id=find, node_id=NODE),
        ShareGroupHeartbeatResponded: ShareGroupHeartbeatResponded(request_id=beat, error_code=0, member_epoch=1),
        ev.RequestFailed: ev.RequestFailed(min(beat, find), "timeout"),
    }[kind]


def test_every_state_is_reached_and_read_by_the_poll_thread() -> None:
    for state, reach in REACH.items():
        assert reach().state is state
        assert state in STATES
    assert STATES[S.FATAL] is MemberState.FATAL and STATES[S.ACKNOWLEDGING] is MemberState.RECONCILING


def test_the_table_has_every_state_and_event() -> None:
    kinds = {ev.Subscribe, ev.Unsubscribe, ev.Polled, ev.Leave, ev.MetadataUpdated, ev.CoordinatorDead,
             ev.StepCompleted, ev.FindCoordinatorResponded, ShareGroupHeartbeatResponded, ev.RequestFailed}
    assert set(EVENT_TABLE) == SHARE_STATES == set(S)
    assert all(set(row) == kinds for row in EVENT_TABLE.values())
    # written out independently: the cells that carry the rules
    assert EVENT_TABLE[S.STABLE][ev.StepCompleted] is Verdict.ILLEGAL  # no step out
    assert EVENT_TABLE[S.CLOSED][ev.Subscribe] is Verdict.ILLEGAL  # a closed consumer cannot subscribe
    assert EVENT_TABLE[S.FATAL][ev.Leave] is Verdict.HANDLE  # closing a failed consumer
    assert EVENT_TABLE[S.UNSUBSCRIBED][ShareGroupHeartbeatResponded] is Verdict.ILLEGAL  # none in flight
    assert EVENT_TABLE[S.FENCED][ShareGroupHeartbeatResponded] is Verdict.ILLEGAL
    assert EVENT_TABLE[S.LEAVING][ShareGroupHeartbeatResponded] is Verdict.HANDLE  # the leave's answer
    assert EVENT_TABLE[S.LEAVING][ev.FindCoordinatorResponded] is Verdict.ILLEGAL
    assert EVENT_TABLE[S.STALE][ShareGroupHeartbeatResponded] is Verdict.ILLEGAL  # the leave is not waited for
    assert EVENT_TABLE[S.STALE][ev.StepCompleted] is Verdict.HANDLE  # the lost partitions
    assert EVENT_TABLE[S.STALE][ev.Polled] is Verdict.HANDLE  # rejoins


CELLS = [(state, kind) for state in EVENT_TABLE for kind in EVENT_TABLE[state]]


@pytest.mark.parametrize(("state", "kind"), CELLS, ids=[f"{s.name}-{k.__name__}" for s, k in CELLS])
def test_each_cell_does_what_the_table_says(state: ShareMemberState, kind: type) -> None:
    m = REACH[state]()
    event = _event(m, kind)
    in_flight = {m._heartbeat_rid, m._leave_rid, m._find_rid} - {None}
    stale = isinstance(event, (ev.FindCoordinatorResponded, ShareGroupHeartbeatResponded, ev.RequestFailed)) and (
        event.request_id not in in_flight
    )
    verdict = EVENT_TABLE[state][kind]
    if stale:
        assert m.handle(event, 6.0) == [] and m.state is state  # dropped before the table
    elif verdict is Verdict.ILLEGAL:
        with pytest.raises(ProtocolViolation):
            m.handle(event, 302.0)
        assert m.state is state  # nothing changed
        with pytest.raises(ProtocolViolation):  # poisoned
            m.tick(303.0)
    elif verdict is Verdict.IGNORE:
        before = m.snapshot()
        assert m.handle(event, 302.0) == []
        assert m.snapshot() == before
    else:
        m.handle(event, 302.0)


@pytest.mark.parametrize("state", [S.PREPARE_LEAVING, S.LEAVING, S.CLOSED])
def test_no_subscribe_after_leave(state: ShareMemberState) -> None:
    m = _stable()
    step = only(m.handle(ev.Leave(), 1.0), DeliverStep).step
    if state is not S.PREPARE_LEAVING:
        leave = only(m.handle(ev.StepCompleted(step.step_id), 1.1), SendShareGroupHeartbeat)
        if state is S.CLOSED:
            m.handle(answer(leave, epoch=-1), 1.2)
    assert m.state is state
    with pytest.raises(ProtocolViolation):
        m.handle(ev.Subscribe({"queue"}), 2.0)
    assert m.state is state
    with pytest.raises(ProtocolViolation):
        m.tick(3.0)


def test_an_answer_of_the_wrong_kind_is_illegal() -> None:
    m = _joining()  # a heartbeat in flight, no FindCoordinator
    with pytest.raises(ProtocolViolation):
        m.handle(ev.FindCoordinatorResponded(request_id=m._heartbeat_rid or 0, node_id=NODE), 1.0)


def test_which_cells_see_a_live_answer() -> None:
    """The table test above feeds answers to what is in flight: these states have one."""
    assert _joining()._heartbeat_rid is not None
    assert _leaving()._leave_rid is not None
    m = machine()
    m.handle(ev.Subscribe({"queue"}), 0.0)
    m.handle(ev.Polled(), 0.0)
    assert m._find_rid is not None and m.state is S.JOINING
    m.handle(ev.FindCoordinatorResponded(request_id=m._find_rid, node_id=NODE), 0.0)
    assert m.snapshot().coordinator == NODE


def test_coordinator_state_takes_a_find_coordinator_answer() -> None:
    """``CoordinatorState.answered``: the core's one reading of a FindCoordinator answer, which the machine uses."""
    backoff = {1: 0.1, 2: 0.2}.__getitem__
    found, disposition = CoordinatorState().answered(0, 3, 10.0, backoff)
    assert (found.node_id, found.lookup.at, disposition.name) == (3, pytest.approx(10.1), "OK")
    failed, disposition = CoordinatorState().answered(COORDINATOR_NOT_AVAILABLE, -1, 10.0, backoff)
    assert (failed.node_id, failed.lookup.at, failed.lookup.attempts, disposition.name) == (None, 10.1, 1, "RETRY")
    same, disposition = failed.answered(GROUP_AUTHORIZATION_FAILED, -1, 11.0, backoff)
    assert same is failed and disposition.name == "FATAL"


def test_a_changed_subscription_goes_in_the_next_heartbeat_and_every_field_after_an_error() -> None:
    m = machine()
    stable_with(m)
    m.handle(ev.Subscribe({"queue", "more"}), 1.0)
    beat = only(m.tick(5.0), SendShareGroupHeartbeat)
    assert beat.subscribed_topic_names == ("more", "queue")
    m.handle(answer(beat), 5.1)
    beat = only(m.tick(10.1), SendShareGroupHeartbeat)
    assert beat.subscribed_topic_names is None  # unchanged since
    find = only(m.handle(ev.RequestFailed(beat.request_id, "timeout"), 10.2), SendFindCoordinator)  # looked up again
    again = only(m.handle(ev.FindCoordinatorResponded(request_id=find.request_id, node_id=NODE), 11.0),
                 SendShareGroupHeartbeat)
    assert again.subscribed_topic_names == ("more", "queue")  # Java: after an error, every field again


def test_a_failed_leave_heartbeat_still_ends_the_membership() -> None:
    m = machine()
    stable_with(m)
    step = only(m.handle(ev.Leave(), 1.0), DeliverStep).step
    leave = only(m.handle(ev.StepCompleted(step.step_id), 1.1), SendShareGroupHeartbeat)
    assert m.handle(ev.RequestFailed(leave.request_id, "disconnected"), 1.2) == []
    assert m.state is S.CLOSED


def test_after_an_error_the_next_heartbeat_waits_for_the_backoff_not_the_interval() -> None:
    """Java's ``onFailedAttempt`` resets the interval timer; a moved coordinator resets the backoff too."""
    m = machine()
    stable_with(m)
    beat = only(m.tick(5.0), SendShareGroupHeartbeat)
    assert m.handle(answer(beat, error=COORDINATOR_LOAD_IN_PROGRESS), 5.1) == []
    assert 5.1 < m.next_deadline(5.1) < 5.1 + 0.2  # retry_backoff_ms 100, jitter: not the 5 s interval
    beat = only(m.tick(m.next_deadline(5.1)), SendShareGroupHeartbeat)
    find = only(m.handle(answer(beat, error=NOT_COORDINATOR), 5.3), SendFindCoordinator)
    again = only(m.handle(ev.FindCoordinatorResponded(request_id=find.request_id, node_id=2), 5.4),
                 SendShareGroupHeartbeat)  # at once
    assert (again.node_id, again.member_epoch, again.subscribed_topic_names) == (2, 1, ("queue",))


# ------------------------------------------------------------------ the poll watchdog
def watched(max_poll_interval_ms: int = 10000) -> ShareGroupMachine:
    m = ShareGroupMachine(config(max_poll_interval_ms=max_poll_interval_ms), rng=random.Random(7))
    stable_with(m)  # polled at 0.0
    return m


def test_no_poll_within_max_poll_interval_leaves_then_releases_the_partitions_as_lost() -> None:
    """Java's ``AbstractHeartbeatRequestManager.poll`` with an expired poll timer: the leave, then STALE."""
    m = watched()
    assert m.next_deadline(0.0) == 5.0  # the heartbeat first
    m.handle(answer(only(m.tick(5.0), SendShareGroupHeartbeat)), 5.0)
    assert m.next_deadline(5.0) == 10.0  # then the watchdog, before the heartbeat at 10.0 + interval
    m.handle(ev.Polled(), 9.0)  # a poll moves the watchdog on
    assert m.tick(15.0) and m.state is S.STABLE  # the heartbeat at 15.0, no leave
    assert m.next_deadline(15.0) == 19.0  # the heartbeat is in flight: the watchdog
    out = m.tick(19.0)
    leave = only(out, SendShareGroupHeartbeat)
    assert (leave.member_epoch, leave.member_id, leave.node_id) == (-1, m.member_id, NODE)
    step = only(out, DeliverStep).step
    assert (step.lost, step.owned, step.assigned) == (tps(0, 1, 2), frozenset(), frozenset())
    assert m.state is S.STALE and m.member_epoch == 0
    assert m.snapshot().state is MemberState.UNJOINED
    assert m.next_deadline(19.0) == float("inf")  # no heartbeats, no watchdog while STALE
    assert m.tick(100.0) == []
    assert m.handle(answer(leave, epoch=-1), 19.5) == []  # the leave's answer is not waited for: dropped
    m.handle(ev.StepCompleted(step.step_id), 20.0)
    assert m.state is S.STALE and m.owned == frozenset()  # until the application polls again


def test_the_next_poll_rejoins_with_epoch_0_and_the_same_member_id() -> None:
    """Java's ``maybeRejoinStaleMember``: JOINING once the lost partitions are released."""
    m = watched()
    step = only(m.tick(10.0), DeliverStep).step
    assert m.state is S.STALE
    assert m.handle(ev.Polled(), 11.0) == []  # the lost partitions are still out: no join yet
    assert m.state is S.STALE
    beat = only(m.handle(ev.StepCompleted(step.step_id), 11.5), SendShareGroupHeartbeat)
    assert m.state is S.JOINING
    assert (beat.member_epoch, beat.member_id, beat.subscribed_topic_names) == (0, m.member_id, ("queue",))
    again = only(m.handle(answer(beat, epoch=5, assignment=ALL), 11.6), DeliverStep).step
    assert again.assigned == tps(0, 1, 2)
    ack = only(m.handle(ev.StepCompleted(again.step_id), 11.7), SendShareGroupHeartbeat)
    assert m.state is S.STABLE and m.member_epoch == 5
    assert m.next_deadline(11.7) == 21.0  # the watchdog runs from the poll at 11.0 again
    m.handle(answer(ack, epoch=5), 11.8)
    assert m.next_deadline(11.8) == pytest.approx(16.8)  # the heartbeat first
    only(m.tick(16.8), SendShareGroupHeartbeat)
    assert m.next_deadline(16.8) == 21.0


def test_a_poll_after_the_release_rejoins_at_once() -> None:
    m = watched()
    step = only(m.tick(10.0), DeliverStep).step
    assert m.handle(ev.StepCompleted(step.step_id), 10.1) == []
    beat = only(m.handle(ev.Polled(), 30.0), SendShareGroupHeartbeat)
    assert beat.member_epoch == 0 and m.state is S.JOINING


def test_the_watchdog_waits_for_the_coordinator_and_ignores_the_heartbeat_in_flight() -> None:
    """Java skips the heartbeat manager's poll without a coordinator: the leave goes once it is found."""
    m = watched()
    beat = only(m.tick(5.0), SendShareGroupHeartbeat)  # in flight
    out = m.tick(10.0)
    assert only(out, SendShareGroupHeartbeat).member_epoch == -1 and m.state is S.STALE
    assert m.handle(answer(beat, assignment=ALL), 10.1) == []  # its answer no longer counts
    m2 = watched()
    find = only(m2.handle(ev.CoordinatorDead("moved"), 1.0) + m2.tick(12.0), SendFindCoordinator)
    assert m2.tick(12.0) == []  # no coordinator: the watchdog waits
    assert m2.state is S.STABLE
    out = m2.handle(ev.FindCoordinatorResponded(request_id=find.request_id, node_id=NODE), 12.1)
    assert only(out, SendShareGroupHeartbeat).member_epoch == -1 and m2.state is S.STALE


def test_a_member_leaving_or_not_in_the_group_has_no_watchdog() -> None:
    m = watched()
    step = only(m.handle(ev.Unsubscribe(), 1.0), DeliverStep).step  # PREPARE_LEAVING
    assert not any(isinstance(c, SendShareGroupHeartbeat) and c.member_epoch == -1 for c in m.tick(20.0))
    assert m.state is S.PREPARE_LEAVING
    leave = only(m.handle(ev.StepCompleted(step.step_id), 21.0), SendShareGroupHeartbeat)
    m.handle(answer(leave, epoch=-1), 21.1)
    assert m.state is S.UNSUBSCRIBED and m.next_deadline(21.1) == float("inf") and m.tick(100.0) == []


def test_close_or_unsubscribe_while_stale_sends_no_second_leave() -> None:
    m = watched()
    step = only(m.tick(10.0), DeliverStep).step
    assert m.handle(ev.Leave(), 11.0) == []  # the lost partitions are still out; no heartbeat at epoch 0
    assert m.state is S.PREPARE_LEAVING and m.next_deadline(11.0) == float("inf")
    assert m.handle(ev.StepCompleted(step.step_id), 11.1) == [] and m.state is S.CLOSED
    m2 = watched()
    m2.handle(ev.StepCompleted(only(m2.tick(10.0), DeliverStep).step.step_id), 10.1)
    assert m2.handle(ev.Unsubscribe(), 11.0) == [] and m2.state is S.UNSUBSCRIBED
    assert m2.handle(ev.Polled(), 12.0) == [] and m2.state is S.UNSUBSCRIBED  # no subscription: no join


def test_a_step_out_when_the_watchdog_fires_completes_then_is_released_as_lost() -> None:
    m = ShareGroupMachine(config(max_poll_interval_ms=10000), rng=random.Random(7))
    m.handle(ev.MetadataUpdated(NAMES), 0.0)
    step = only(m.handle(answer(joining(m), assignment=ALL), 0.0), DeliverStep).step  # RECONCILING, step out
    out = m.tick(10.0)
    assert only(out, SendShareGroupHeartbeat).member_epoch == -1 and m.state is S.STALE
    assert not any(isinstance(c, DeliverStep) for c in out)  # one step out at a time
    lost = only(m.handle(ev.StepCompleted(step.step_id), 10.1), DeliverStep).step
    assert lost.lost == tps(0, 1, 2) and m.state is S.STALE
