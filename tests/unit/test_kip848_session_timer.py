"""The consumer-protocol member's session timer (kgroup, beyond Java's ``AsyncKafkaConsumer``).

Under KIP-848 the coordinator removes a member it has not heard from for the group's session
timeout (``consumer.session.timeout.ms``, the broker's ``group.consumer.session.timeout.ms``
unless the group overrides it) and one that has not acknowledged a revocation within its
rebalance timeout, and gives its partitions to others. kgroup learns the session timeout with
DescribeConfigs (resource type GROUP) and then, as the classic member's session timer does,
hands nothing out once the coordinator may have removed the member (docs/kip848.md, "Beyond
Java: the session timer").

The machine is driven by hand on a virtual clock (``tests/unit/test_kip848_machine.py``'s
``Member``); the refresh is the group thread's, driven on a ``FakeClock`` with a scripted
transport. No sleeps.
"""

from __future__ import annotations

import concurrent.futures
import logging
from typing import Any

import pytest

from kgroup._driver.group_thread import SESSION_TIMEOUT_CONFIG, GroupThread
from kgroup._driver.mailbox import Mailbox
from kgroup._error_codes import COORDINATOR_LOAD_IN_PROGRESS, FENCED_MEMBER_EPOCH, NONE, UNKNOWN_MEMBER_ID
from kgroup.config import ConsumerConfig
from kgroup.errors import KGroupError
from kgroup.membership import commands as cmd
from kgroup.membership import events as ev
from kgroup.membership import states
from kgroup.membership.commands import DeliverStep, RebalanceStep, SendConsumerGroupHeartbeat, SendFindCoordinator
from kgroup.membership.consumer_group import (
    ConsumerGroupMachine,
    MemberState,
)
from kgroup.membership.core import MemberSnapshot
from kgroup.membership.events import (
    CoordinatorDead,
    MetadataUpdated,
    Polled,
    RequestFailed,
    SessionTimeoutDescribed,
)
from kgroup.protocol.consumer_group_heartbeat import TopicIdPartitions
from kgroup.testing import FakeClock
from kgroup.types import Generation
from tests.unit.group_thread_transport import ImmediateTransport
from tests.unit.test_kip848_machine import NAMES, ORDERS, Member, assignment, none_of, only, tps

SESSION_MS = 10_000
#: a broker heartbeat interval longer than the session: no heartbeat is out when the session runs
#: out unless the test sends one
LONG_INTERVAL_MS = 30_000


def stable(member: Member, *partitions: int, session_ms: int | None = SESSION_MS,
           interval_ms: int = LONG_INTERVAL_MS) -> None:
    """Join, own ``orders`` ``partitions``, learn ``session_ms``; the last success was sent at ``member.now``."""
    first = member.join()
    member.handle(MetadataUpdated(NAMES))
    step = only(member.respond(first, epoch=5, assigned=assignment(orders=list(partitions)), interval_ms=interval_ms),
                DeliverStep).step
    ack = only(member.complete(step), SendConsumerGroupHeartbeat)
    assert member.respond(ack, epoch=5, interval_ms=interval_ms) == []
    member.settle(interval_ms)  # the prompt heartbeats after the join
    assert member.state is MemberState.STABLE and member.machine.owned == tps("orders", *partitions)
    if session_ms is not None:
        member.handle(SessionTimeoutDescribed(session_ms))


def on_hold(member: Member) -> bool:
    return member.machine.snapshot().hand_out_on_hold


def next_heartbeat(member: Member) -> SendConsumerGroupHeartbeat:
    """Advance from deadline to deadline (answering FindCoordinator) until a heartbeat goes out."""
    for _ in range(20):
        out = member.until_next_deadline()
        if any(isinstance(c, cmd.SendFindCoordinator) for c in out):
            out = out + member.find_coordinator(out)
        beats = [c for c in out if isinstance(c, SendConsumerGroupHeartbeat)]
        if beats:
            (hb,) = beats
            return hb
    raise AssertionError("no heartbeat")


# ==================================================================== the session clock


def test_the_hold_starts_a_session_timeout_after_the_send_time_of_the_last_successful_heartbeat() -> None:
    member = Member()
    stable(member, 0, 1, interval_ms=5000)
    assert member.machine.session_timeout_ms == SESSION_MS
    start = member.now
    hb = next_heartbeat(member)
    sent_at = member.now
    assert sent_at == pytest.approx(start + 5.0)
    member.advance(4.0)  # its answer takes 4 s
    assert member.respond(hb, epoch=5, interval_ms=5000) == []
    # the session counts from the send (5.0), not from the answer (9.0)
    assert member.machine.next_deadline(member.now) == pytest.approx(sent_at + 5.0)  # the next heartbeat first
    next_heartbeat(member)  # at 10.0, and never answered
    assert member.machine.next_deadline(member.now) == pytest.approx(sent_at + SESSION_MS / 1000)
    member.now = sent_at + SESSION_MS / 1000 - 0.001
    member.tick()
    assert not on_hold(member)
    member.now = sent_at + SESSION_MS / 1000
    out = member.tick()
    assert on_hold(member), "the coordinator may have removed the member"
    none_of(out, SendConsumerGroupHeartbeat)  # one is in flight: its answer is waited for
    assert member.machine.snapshot().session_timeout_ms == SESSION_MS
    assert member.machine.owned == tps("orders", 0, 1)  # not lost: the coordinator can still answer


def test_the_snapshot_carries_the_hold_deadline_for_the_poll_thread() -> None:
    """The poll thread holds at ``hold_at`` itself, whether or not the group thread has ticked by then
    (a busy process): the deadline is the session's from the last success's send time, inf when
    the member holds nothing or knows no session timeout and has no clock running."""
    member = Member()
    stable(member, 0, 1, interval_ms=5000)
    hb = next_heartbeat(member)
    sent_at = member.now
    assert member.respond(hb, epoch=5, interval_ms=5000) == []
    assert member.machine.snapshot().hold_at == pytest.approx(sent_at + SESSION_MS / 1000)
    hb = next_heartbeat(member)  # unanswered: the session still counts from the last success
    assert member.machine.snapshot().hold_at == pytest.approx(sent_at + SESSION_MS / 1000)
    assert member.respond(hb, epoch=5, interval_ms=5000) == []
    assert member.machine.snapshot().hold_at == pytest.approx(member.now + SESSION_MS / 1000)
    empty = Member()
    stable(empty, session_ms=SESSION_MS)
    assert empty.machine.snapshot().hold_at == float("inf")  # holds no partition


def test_the_consumer_holds_at_the_deadline_before_the_group_thread_ticks() -> None:
    import kgroup

    clock = FakeClock()
    consumer: kgroup.Consumer[bytes, bytes] = kgroup.Consumer(
        bootstrap_servers="localhost:9092", group_id="g", group_protocol="consumer", clock=clock,
    )
    snap = MemberSnapshot(
        states.MemberState.STABLE, Generation(5, "m"), tps("orders", 0), 1, frozenset({"orders"}), None, None,
        hand_out_on_hold=False, session_timeout_ms=SESSION_MS, hold_at=clock.monotonic() + 1.0,
    )
    consumer._snapshot = lambda: snap  # type: ignore[method-assign]
    assert not consumer._hand_out_on_hold()
    clock.advance(1.0)
    assert consumer._hand_out_on_hold(), "past hold_at the poll thread must hold without the group thread"


def test_with_no_heartbeat_out_one_goes_at_once_and_its_success_resumes_the_hand_outs() -> None:
    member = Member()
    stable(member, 0, 1)
    start = member.now
    member.now = start + SESSION_MS / 1000
    hb = only(member.tick(), SendConsumerGroupHeartbeat)  # at once, long before the 30 s interval
    assert on_hold(member)
    member.advance(0.5)
    assert member.tick() == [], "the heartbeat in flight is waited for, not sent again"
    assert on_hold(member)
    assert member.respond(hb, epoch=5, interval_ms=LONG_INTERVAL_MS) == []
    assert not on_hold(member)
    assert member.machine.owned == tps("orders", 0, 1)
    assert member.machine.next_deadline(member.now) == pytest.approx(member.now - 0.5 + SESSION_MS / 1000)


def test_a_retriable_error_keeps_the_hold_and_asks_again_after_the_backoff() -> None:
    member = Member()
    stable(member, 0, 1)
    member.now += SESSION_MS / 1000
    hb = only(member.tick(), SendConsumerGroupHeartbeat)
    failed_at = member.now
    assert member.respond(hb, COORDINATOR_LOAD_IN_PROGRESS) == []
    assert on_hold(member)
    again = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    assert member.now - failed_at <= member.config.retry_backoff_max_ms / 1000, "at once after the backoff"
    assert on_hold(member)
    member.respond(again, epoch=5, interval_ms=LONG_INTERVAL_MS)
    assert not on_hold(member)


def assert_fenced_loses_both_and_rejoins(member: Member, hb: SendConsumerGroupHeartbeat, code: int,
                                         member_id: str | None) -> None:
    """The coordinator's fencing ``code`` for ``hb``: orders-0 and orders-1 released as lost, FENCED,
    then the rejoin at epoch 0 under the same member id, no longer on hold."""
    lost = only(member.respond(hb, code), DeliverStep).step
    assert lost.lost == tps("orders", 0, 1) and lost.owned == frozenset()
    assert member.state is MemberState.FENCED
    join = only(member.complete(lost), SendConsumerGroupHeartbeat)
    assert (join.member_epoch, join.member_id) == (0, member_id)
    assert not on_hold(member)


def test_a_fencing_answer_while_held_releases_the_partitions_as_lost_and_rejoins() -> None:
    member = Member()
    stable(member, 0, 1)
    member_id = member.machine.member_id
    member.now += SESSION_MS / 1000
    hb = only(member.tick(), SendConsumerGroupHeartbeat)
    assert on_hold(member)
    assert_fenced_loses_both_and_rejoins(member, hb, UNKNOWN_MEMBER_ID, member_id)


def held_with_the_coordinator_unknown(member: Member) -> list[object]:
    """The coordinator lost a second after the last success, the FindCoordinator unanswered past the
    session: held, the partitions kept (no answer is not the coordinator's word). Returns the lookup."""
    deadline = member.now + SESSION_MS / 1000
    member.advance(1.0)
    find = member.handle(CoordinatorDead("a commit returned NOT_COORDINATOR"))  # unanswered for now
    only(find, SendFindCoordinator)
    member.now = deadline - 0.001
    member.tick()
    assert not on_hold(member) and member.state is MemberState.STABLE
    member.now = deadline
    none_of(member.tick(), DeliverStep)
    assert on_hold(member), "the coordinator may have removed the member: nothing handed out"
    assert member.state is MemberState.STABLE and member.machine.member_epoch == 5
    assert member.machine.owned == tps("orders", 0, 1)
    member.now += 5.0  # the coordinator's node restarting
    none_of(member.tick(), DeliverStep)
    assert on_hold(member)
    return find


def test_with_the_coordinator_unknown_the_partitions_are_kept_and_the_member_asks_once_it_is_found() -> None:
    """A broker restart longer than the session: the coordinator that loads the group again starts
    its session timers afresh and still knows the member; its answer resumes the hand-outs, no rejoin."""
    member = Member()
    stable(member, 0, 1)
    find = held_with_the_coordinator_unknown(member)
    hb = only(member.find_coordinator(find), SendConsumerGroupHeartbeat)  # at once, not at the interval
    assert (hb.member_epoch, hb.topic_partitions) == (5, (TopicIdPartitions(ORDERS, (0, 1)),))
    assert on_hold(member)
    assert member.respond(hb, epoch=5, interval_ms=LONG_INTERVAL_MS) == []
    assert not on_hold(member)
    assert member.state is MemberState.STABLE and member.machine.member_epoch == 5
    assert member.machine.owned == tps("orders", 0, 1)


@pytest.mark.parametrize("code", [UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH])
def test_with_the_coordinator_unknown_the_partitions_are_lost_on_the_coordinators_word(code: int) -> None:
    member = Member()
    stable(member, 0, 1)
    member_id = member.machine.member_id
    find = held_with_the_coordinator_unknown(member)
    hb = only(member.find_coordinator(find), SendConsumerGroupHeartbeat)
    assert_fenced_loses_both_and_rejoins(member, hb, code, member_id)


def test_with_the_coordinator_unknown_the_poll_timeout_still_loses_the_partitions() -> None:
    """As Java's consumer, the poll timer is checked once the coordinator is known again."""
    member = Member(max_poll_interval_ms=20_000)
    stable(member, 0, 1)
    polled_at = member.now
    find = held_with_the_coordinator_unknown(member)
    member.now = polled_at + 25.0  # no poll since
    member.find_coordinator(find)
    out = member.tick()
    leave = only(out, SendConsumerGroupHeartbeat)
    assert leave.member_epoch == -1
    lost = only(out, DeliverStep).step
    assert lost.lost == tps("orders", 0, 1)
    assert member.state is MemberState.STALE and member.machine.owned == frozenset()


def test_a_static_member_with_nobody_to_ask_keeps_its_partitions_and_asks_with_its_epoch() -> None:
    """Nothing to release in place any more: the static member keeps its epoch and its partitions,
    and its heartbeat once the coordinator is found reports them."""
    member = Member(group_instance_id="pod-0")
    stable(member, 0, 1)
    find = held_with_the_coordinator_unknown(member)
    hb = only(member.find_coordinator(find), SendConsumerGroupHeartbeat)
    assert (hb.member_epoch, hb.instance_id, hb.topic_partitions) == (5, "pod-0", (TopicIdPartitions(ORDERS, (0, 1)),))
    assert member.respond(hb, epoch=5, assigned=assignment(orders=[0, 1]), interval_ms=LONG_INTERVAL_MS) == []
    assert not on_hold(member)
    assert member.state is MemberState.STABLE and member.machine.owned == tps("orders", 0, 1)


def test_a_static_member_with_nobody_to_ask_and_since_removed_loses_its_partitions_and_rejoins() -> None:
    member = Member(group_instance_id="pod-0")
    stable(member, 0, 1)
    member_id = member.machine.member_id
    find = held_with_the_coordinator_unknown(member)
    hb = only(member.find_coordinator(find), SendConsumerGroupHeartbeat)
    lost = only(member.respond(hb, UNKNOWN_MEMBER_ID), DeliverStep).step
    assert lost.lost == tps("orders", 0, 1)
    assert member.state is MemberState.FENCED
    join = only(member.complete(lost), SendConsumerGroupHeartbeat)
    assert (join.member_epoch, join.member_id, join.instance_id) == (0, member_id, "pod-0")


def test_a_static_member_with_nobody_to_ask_behind_a_running_step_holds_and_keeps_that_step() -> None:
    member = Member(group_instance_id="pod-0")
    stable(member, 0, 1, interval_ms=5000)
    hb = next_heartbeat(member)
    step = only(member.respond(hb, epoch=6, assigned=assignment(orders=[0, 1, 2]), interval_ms=LONG_INTERVAL_MS),
                DeliverStep).step  # the poll thread runs it (assigns 2)
    find = member.handle(CoordinatorDead("disconnected"))
    member.now = hb_sent_at(member) + SESSION_MS / 1000
    none_of(member.tick(), DeliverStep)
    assert member.machine.member_epoch == 6
    assert on_hold(member), "the coordinator may have removed the member: hand nothing out meanwhile"
    none_of(member.complete(step), DeliverStep)  # the step's partitions are kept too
    assert on_hold(member) and member.machine.owned == tps("orders", 0, 1, 2)
    ack = only(member.find_coordinator(find), SendConsumerGroupHeartbeat)
    assert (ack.member_epoch, ack.topic_partitions) == (6, (TopicIdPartitions(ORDERS, (0, 1, 2)),))
    assert member.respond(ack, epoch=6, interval_ms=LONG_INTERVAL_MS) == []
    assert not on_hold(member)
    assert member.state is MemberState.STABLE and member.machine.owned == tps("orders", 0, 1, 2)


def hb_sent_at(member: Member) -> float:
    return member.machine._session.sent_at


def test_a_heartbeat_that_fails_while_held_keeps_the_partitions_and_asks_the_coordinator_found_again() -> None:
    member = Member()
    stable(member, 0, 1)
    member.now += SESSION_MS / 1000
    hb = only(member.tick(), SendConsumerGroupHeartbeat)
    out = member.handle(RequestFailed(request_id=hb.request_id, reason="connection reset"))
    none_of(out, DeliverStep)
    assert member.state is MemberState.STABLE and member.machine.owned == tps("orders", 0, 1)
    assert on_hold(member)
    member.now += 1.0
    again = only(member.find_coordinator(out), SendConsumerGroupHeartbeat)
    assert again.member_epoch == 5
    assert member.respond(again, epoch=5, interval_ms=LONG_INTERVAL_MS) == []
    assert not on_hold(member) and member.machine.owned == tps("orders", 0, 1)


def test_no_hold_while_the_session_timeout_is_unknown_and_a_failure_keeps_the_value_learned() -> None:
    member = Member()
    stable(member, 0, 1, session_ms=None)
    member.handle(SessionTimeoutDescribed(None))  # DescribeConfigs failed: no timer, as Java
    member.now += 10 * SESSION_MS / 1000
    out = member.handle(Polled()) + member.tick()
    none_of(out, DeliverStep)
    hb = only(out, SendConsumerGroupHeartbeat)  # the interval's: not answered yet
    assert not on_hold(member) and member.machine.session_timeout_ms is None
    # learned now: the last success was sent long before the session timeout
    member.advance(1.0)
    member.handle(SessionTimeoutDescribed(SESSION_MS))
    assert on_hold(member)
    member.respond(hb, epoch=5, interval_ms=LONG_INTERVAL_MS)
    assert not on_hold(member)
    member.handle(SessionTimeoutDescribed(None))  # a refresh failed: the value learned stays
    assert member.machine.session_timeout_ms == SESSION_MS


def test_a_member_without_partitions_is_never_held() -> None:
    member = Member()
    stable(member)  # assigned nothing
    member.now += 3 * SESSION_MS / 1000
    member.handle(Polled())
    member.tick()
    assert not on_hold(member)


def test_fenced_while_a_step_runs_holds_until_the_loss_is_delivered() -> None:
    """The epoch is gone but the partitions' loss waits behind the step the poll thread runs."""
    member = Member()
    stable(member, 0, 1, session_ms=None, interval_ms=5000)
    hb = next_heartbeat(member)
    step = only(member.respond(hb, epoch=6, assigned=assignment(orders=[0, 1, 2])), DeliverStep).step
    hb2 = next_heartbeat(member)
    assert member.respond(hb2, UNKNOWN_MEMBER_ID) == []  # the loss waits for the step
    assert on_hold(member), "no epoch, partitions still owned: hand nothing out"
    lost = only(member.complete(step), DeliverStep).step
    assert lost.lost == tps("orders", 0, 1, 2)
    assert not on_hold(member)


# ==================================================================== the revocation clock


def test_the_revocation_clock_starts_at_the_first_heartbeat_since_the_last_success() -> None:
    """The answer to the heartbeat that moved the member to UNREVOKED_PARTITIONS may have been lost:
    the coordinator's rebalance timeout then runs from that earlier heartbeat's arrival."""
    member = Member(max_poll_interval_ms=20_000)
    rebalance_s = 20.0
    stable(member, 0, 1, session_ms=None, interval_ms=1000)  # the revocation clock needs no session timeout
    lost_answer = next_heartbeat(member)
    first_sent = member.now
    member.advance(0.5)
    out = member.handle(RequestFailed(request_id=lost_answer.request_id, reason="connection reset"))
    out = member.find_coordinator(out)  # the coordinator is looked up again at once
    hb = only(out, SendConsumerGroupHeartbeat) if out else next_heartbeat(member)
    assert member.now > first_sent and hb.topic_partitions is not None  # after a failure: every field
    out = member.respond(hb, epoch=6, assigned=assignment(orders=[0]), interval_ms=LONG_INTERVAL_MS)
    step = only(out, DeliverStep).step
    assert step.revoked == tps("orders", 1)
    member.handle(Polled())  # (the poll watchdog restarts)
    assert member.machine.next_deadline(member.now) == pytest.approx(first_sent + rebalance_s)
    member.now = first_sent + rebalance_s - 0.001
    member.handle(Polled())
    assert not on_hold(member)
    member.now = first_sent + rebalance_s
    out = member.handle(Polled())
    assert on_hold(member), "the coordinator may have fenced the member for not revoking in time"
    none_of(out, SendConsumerGroupHeartbeat)  # only the acknowledgement can settle it
    # the poll thread finishes the revocation: the acknowledgement goes at once; its answer resumes
    ack = only(member.complete(step), SendConsumerGroupHeartbeat)
    assert ack.topic_partitions == (TopicIdPartitions(ORDERS, (0,)),)
    assert on_hold(member)
    member.respond(ack, epoch=6, interval_ms=LONG_INTERVAL_MS)
    assert not on_hold(member) and member.machine.owned == tps("orders", 0)


def test_an_acknowledged_revocation_stops_the_revocation_clock() -> None:
    member = Member(max_poll_interval_ms=20_000)
    stable(member, 0, 1, session_ms=None, interval_ms=1000)
    hb = next_heartbeat(member)
    step = only(member.respond(hb, epoch=6, assigned=assignment(orders=[0]), interval_ms=LONG_INTERVAL_MS),
                DeliverStep).step
    ack = only(member.complete(step), SendConsumerGroupHeartbeat)
    member.respond(ack, epoch=6, interval_ms=LONG_INTERVAL_MS)
    member.now += 25.0
    member.handle(Polled())
    assert not on_hold(member)


def test_the_consumer_group_machine_publishes_the_hold_in_its_snapshot() -> None:
    """``Consumer.poll`` reads ``hand_out_on_hold`` from the group thread's ``MemberSnapshot``."""
    config = ConsumerConfig(bootstrap_servers="b:1", group_id="g", group_protocol="consumer")
    member = ConsumerGroupMachine(config)
    member.handle(ev.Subscribe(frozenset({"orders"})), 0.0)
    member.handle(ev.MetadataUpdated({ORDERS: "orders"}), 0.0)
    (find,) = member.handle(ev.Polled(), 0.0)
    (hb,) = member.handle(ev.FindCoordinatorResponded(request_id=find.request_id, error_code=NONE, node_id=1,
                                                      host="h", port=1), 0.0)
    out = member.handle(ev.ConsumerGroupHeartbeatResponded(
        request_id=hb.request_id, error_code=NONE, member_id=None, member_epoch=3,
        heartbeat_interval_ms=LONG_INTERVAL_MS, assignment=(TopicIdPartitions(ORDERS, (0,)),),
    ), 0.0)
    (deliver,) = [c for c in out if isinstance(c, DeliverStep)]
    member.handle(ev.StepCompleted(deliver.step.step_id), 0.0)
    member.handle(SessionTimeoutDescribed(SESSION_MS), 0.0)
    assert member.snapshot().owned == tps("orders", 0)
    assert not member.snapshot().hand_out_on_hold
    member.tick(SESSION_MS / 1000)
    assert member.snapshot().hand_out_on_hold


# ==================================================================== the group thread's DescribeConfigs


class Transport(ImmediateTransport):
    """FindCoordinator and ConsumerGroupHeartbeat answered at once; DescribeConfigs as scripted."""

    def __init__(self, configs: list[object]) -> None:
        #: each DescribeConfigs' answer in turn: a dict, or an exception to fail with
        self.configs = configs
        self.described: list[tuple[str, tuple[str, ...], float]] = []
        self.clock: FakeClock | None = None

    def consumer_group_heartbeat(self, command: SendConsumerGroupHeartbeat) -> concurrent.futures.Future[Any]:
        return self.done(ev.ConsumerGroupHeartbeatResponded(
            request_id=command.request_id, error_code=NONE, member_id=None, member_epoch=2,
            heartbeat_interval_ms=5000, assignment=() if command.member_epoch == 0 else None,
        ))

    def describe_group_configs(self, group_id: str, names: Any, timeout_ms: int) -> concurrent.futures.Future[Any]:
        assert self.clock is not None
        self.described.append((group_id, tuple(names), self.clock.monotonic()))
        return self.done(self.configs.pop(0) if len(self.configs) > 1 else self.configs[0])


def run(thread: GroupThread, mailbox: Mailbox, clock: FakeClock, seconds: float, tick: float = 0.5) -> None:
    """The loop body as the thread runs it, the poll thread completing steps at once."""
    end = clock.monotonic() + seconds
    while True:
        for item in thread.take_pending() or [None]:
            thread.step(item)
        for message in mailbox.take_all():
            if isinstance(message, RebalanceStep):
                thread.post(ev.StepCompleted(message.step_id))
        if thread.has_pending():
            continue
        if clock.monotonic() >= end:
            return
        clock.advance(min(tick, end - clock.monotonic()))
        thread.post(ev.Polled())


def group_thread(configs: list[object], **options: Any) -> tuple[GroupThread, Mailbox, FakeClock, Transport]:
    clock = FakeClock()
    config = ConsumerConfig(bootstrap_servers="h:1", group_id="g", group_protocol="consumer", **options)
    transport = Transport(configs)
    transport.clock = clock
    mailbox = Mailbox()
    thread = GroupThread(config, transport, mailbox, clock)  # type: ignore[arg-type]
    return thread, mailbox, clock, transport


def test_the_group_thread_asks_once_joined_then_every_metadata_max_age() -> None:
    thread, mailbox, clock, transport = group_thread([{SESSION_TIMEOUT_CONFIG: "20000"}], metadata_max_age_ms=60_000)
    assert thread.consumer_session_timeout_ms is None
    run(thread, mailbox, clock, 0.0)
    assert transport.described == [], "not before the member has joined"
    thread.post(ev.Subscribe(frozenset({"orders"})))
    thread.post(ev.Polled())
    run(thread, mailbox, clock, 1.0)
    assert thread.snapshot.generation.generation_id == 2
    assert transport.described == [("g", (SESSION_TIMEOUT_CONFIG,), 0.0)]
    assert thread.consumer_session_timeout_ms == 20_000
    run(thread, mailbox, clock, 58.5)
    assert len(transport.described) == 1
    assert thread.next_deadline() <= 60.0
    run(thread, mailbox, clock, 1.0)
    assert [at for _, _, at in transport.described] == [0.0, 60.0]


def test_a_failed_describe_leaves_no_timer_is_logged_once_and_is_retried(caplog: pytest.LogCaptureFixture) -> None:
    denied = KGroupError("DescribeConfigs returned GROUP_AUTHORIZATION_FAILED")
    thread, mailbox, clock, transport = group_thread(
        [denied, TimeoutError("no answer"), {SESSION_TIMEOUT_CONFIG: "15000"}], metadata_max_age_ms=10_000
    )
    caplog.set_level(logging.DEBUG, logger="kgroup._driver.group_thread")
    thread.post(ev.Subscribe(frozenset({"orders"})))
    thread.post(ev.Polled())
    run(thread, mailbox, clock, 1.0)
    assert thread.consumer_session_timeout_ms is None
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "DescribeConfigs" in r.getMessage()]
    assert len(warnings) == 1 and "GROUP_AUTHORIZATION_FAILED" in warnings[0].getMessage()
    assert "DESCRIBE_CONFIGS" in warnings[0].getMessage()
    run(thread, mailbox, clock, 10.0)
    assert len(transport.described) == 2 and thread.consumer_session_timeout_ms is None
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "DescribeConfigs" in r.getMessage()]
    assert len(warnings) == 1, "logged once"
    run(thread, mailbox, clock, 10.0)
    assert len(transport.described) == 3 and thread.consumer_session_timeout_ms == 15_000


def test_a_transport_without_describe_configs_runs_without_the_timer() -> None:
    thread, mailbox, clock, _ = group_thread([{}])
    del Transport.describe_group_configs
    try:
        thread.post(ev.Subscribe(frozenset({"orders"})))
        thread.post(ev.Polled())
        run(thread, mailbox, clock, 2.0)
        assert thread.crashed is None and thread.snapshot.state.name == "STABLE"
        assert thread.consumer_session_timeout_ms is None
    finally:
        Transport.describe_group_configs = _describe  # type: ignore[method-assign]


_describe = Transport.describe_group_configs


def test_classic_members_never_ask() -> None:
    clock = FakeClock()
    config = ConsumerConfig(bootstrap_servers="h:1", group_id="g")
    transport = Transport([{SESSION_TIMEOUT_CONFIG: "1"}])
    transport.clock = clock
    thread = GroupThread(config, transport, Mailbox(), clock)  # type: ignore[arg-type]
    thread._maybe_describe_session_timeout()
    assert transport.described == [] and thread.consumer_session_timeout_ms is None


def test_a_heartbeat_never_answered_holds_the_hand_outs_a_rebalance_timeout_after_it_was_sent() -> None:
    """Found by the simulator on the consumer protocol (seed 5310), with no session timeout known.

    A heartbeat the coordinator processed, whose answer was lost, may have moved the member to
    UNREVOKED_PARTITIONS (a newer target takes partitions away); the coordinator then removes it
    a rebalance timeout later unless the revocation is acknowledged, and the member cannot know.
    So a member whose heartbeats have gone unanswered for its rebalance timeout, counted from the
    first one sent since the last success, holds its hand-outs and asks; DescribeConfigs or not.
    """
    member = Member(rebalance_timeout_ms=20_000)
    stable(member, 0, 1, session_ms=None, interval_ms=5000)
    hb = next_heartbeat(member)  # its answer never comes
    sent_at = member.now
    assert member.machine.next_deadline(member.now) <= sent_at + 20.0
    member.now = sent_at + 20.0 - 0.001
    member.tick()
    assert not on_hold(member)
    member.now = sent_at + 20.0
    member.tick()
    assert on_hold(member), "the coordinator may have fenced the member for an unacknowledged revocation"
    assert member.machine.owned == tps("orders", 0, 1)
    member.respond(hb, epoch=5, interval_ms=5000)  # late, but a success: the member is still there
    assert not on_hold(member)
