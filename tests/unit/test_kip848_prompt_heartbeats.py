"""Prompt heartbeats while partitions may be on their way (KIP-848; kgroup, beyond Java).

The coordinator gives a member a partition of its target only once no other member holds it
(``CurrentAssignmentBuilder``: UNRELEASED_PARTITIONS), and the member learns of it only in the
answer to its own next heartbeat. At the broker's interval (5 s by default) a partition released
by one member waits up to a whole interval for the next; Java's consumer waits so. kgroup's
machine heartbeats promptly (``retry_backoff_ms``, doubling to interval / 10) for 1.5 intervals
after an answer that says partitions may still come: the join's, one that moved the member to a
new epoch other than through its own revocation, one that added partitions to the target.
The member that revoked acknowledges at once (as Java's ``shouldHeartbeatNow`` in ACKNOWLEDGING).

The first tests script the broker's answers by hand (``tests/unit/test_kip848_machine.py``'s
``Member``); the last ones run three machines against the coordinator model
(:class:`kgroup.testing.coordinator.ConsumerGroupModel`, Apache Kafka's rules) on one virtual
clock. Time is plain numbers.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable
from itertools import pairwise

import pytest

from kgroup.config import ConsumerConfig
from kgroup.membership.commands import DeliverStep, SendConsumerGroupHeartbeat
from kgroup.membership.consumer_group import ConsumerGroupMachine, MemberState
from kgroup.membership.consumer_group_heartbeat import (
    PROMPT_PER_INTERVAL,
    PROMPT_WINDOW_INTERVALS,
    HeartbeatRequestState,
)
from kgroup.membership.events import (
    ConsumerGroupHeartbeatResponded,
    FindCoordinatorResponded,
    MetadataUpdated,
    Polled,
    RequestFailed,
    StepCompleted,
    Subscribe,
)
from kgroup.testing import FakeClock
from kgroup.testing.coordinator import ConsumerGroupConfig, ConsumerGroupModel
from kgroup.types import TopicPartition
from tests.unit.test_kip848_machine import INTERVAL_MS, NAMES, Member, assignment, only, tps

INTERVAL_S = INTERVAL_MS / 1000
BASE_S = 0.1  # retry_backoff_ms's default
CAP_S = INTERVAL_S / PROMPT_PER_INTERVAL  # 0.5 s


def heartbeat_times(member: Member, until: float, *, epoch: int) -> list[float]:
    """Answer every heartbeat up to ``until`` with nothing new; the times they went."""
    times = []
    while member.machine.next_deadline(member.now) <= until:
        hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
        times.append(member.now)
        assert member.respond(hb, epoch=epoch) == []
        member.handle(Polled())
    return times


# ==================================================================== the timing alone


def test_the_prompt_wait_doubles_from_the_base_to_a_tenth_of_the_interval() -> None:
    state = HeartbeatRequestState(lambda attempts: 1.0, prompt_base_s=BASE_S)
    state.succeeded(0.0, INTERVAL_MS)
    state.prompt(0.0)
    assert state.due(now=False, leaving=False) == pytest.approx(BASE_S)
    now, waits = BASE_S, []
    while state.prompting(now):
        state.sent(now)
        waits.append(round(state.next_at - now, 6))
        now = state.next_at
    assert waits[:4] == [0.1, 0.2, 0.4, CAP_S]
    assert all(w == CAP_S for w in waits[3:])
    assert now == pytest.approx(PROMPT_WINDOW_INTERVALS * INTERVAL_S, abs=CAP_S)
    state.sent(now)  # past the window: the broker's interval again
    assert state.next_at - now == pytest.approx(INTERVAL_S)


def test_the_prompt_wait_never_exceeds_the_interval_nor_goes_below_the_base() -> None:
    short = HeartbeatRequestState(lambda attempts: 1.0, prompt_base_s=0.1)
    short.succeeded(0.0, 500)  # an interval of 0.5 s: a tenth is below the base
    short.prompt(0.0)
    short.sent(0.1)
    short.sent(0.3)
    assert short.next_at - 0.3 == pytest.approx(0.1)
    tiny = HeartbeatRequestState(lambda attempts: 1.0, prompt_base_s=0.1)
    tiny.succeeded(0.0, 50)  # shorter than the base: the interval
    tiny.prompt(0.0)
    assert tiny.next_at == pytest.approx(0.05)


def test_no_interval_known_no_prompt() -> None:
    state = HeartbeatRequestState(lambda attempts: 1.0)
    state.prompt(0.0)
    assert not state.prompting(0.0)


# ==================================================================== the machine, the broker scripted


def test_a_joiner_given_nothing_yet_heartbeats_promptly_and_takes_a_released_partition_within_a_tenth_interval() -> (
    None
):
    """The third member joins: its target (orders 2, 3) is still the others'; they release it at 2.3 s."""
    member = Member()
    join = member.join()
    member.handle(MetadataUpdated(NAMES))
    step = only(member.respond(join, epoch=4, assigned=()), DeliverStep).step  # nothing free yet
    ack = only(member.complete(step), SendConsumerGroupHeartbeat)
    assert member.respond(ack, epoch=4) == []
    times = heartbeat_times(member, 2.3, epoch=4)
    # without prompt heartbeats the next one would go at the interval, 5 s after the join
    assert times[:3] == pytest.approx([0.1, 0.3, 0.7])
    assert all(b - a <= CAP_S + 1e-9 for a, b in pairwise(times))
    # released at 2.3 s: the next heartbeat's answer carries it
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    assert member.now - 2.3 <= CAP_S
    step = only(member.respond(hb, epoch=4, assigned=assignment(orders=[2, 3])), DeliverStep).step
    assert step.assigned == tps("orders", 2, 3)
    ack = only(member.complete(step), SendConsumerGroupHeartbeat)  # acknowledged at once
    assert ack.topic_partitions == assignment(orders=[2, 3])
    assert member.machine.owned == tps("orders", 2, 3)


def test_prompt_heartbeats_end_a_window_after_the_last_change_then_the_interval() -> None:
    member = Member()
    member.stable_with(orders=[0])  # the join's window, played out
    start = member.now
    times = heartbeat_times(member, start + 3 * INTERVAL_S, epoch=5)
    assert times == pytest.approx([start + INTERVAL_S, start + 2 * INTERVAL_S, start + 3 * INTERVAL_S])


def test_a_window_holds_a_bounded_number_of_heartbeats() -> None:
    """At most 1.5 x 10 at the cap plus the doubling: never a storm, whatever the interval."""
    for interval_ms in (1000, 5000, 30000):
        member = Member()
        join = member.join()
        member.handle(MetadataUpdated(NAMES))
        step = only(member.respond(join, epoch=4, assigned=(), interval_ms=interval_ms), DeliverStep).step
        ack = only(member.complete(step), SendConsumerGroupHeartbeat)
        member.respond(ack, epoch=4, interval_ms=interval_ms)
        window_end = PROMPT_WINDOW_INTERVALS * interval_ms / 1000
        sent = 0
        while member.now < window_end:
            hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
            assert member.respond(hb, epoch=4, interval_ms=interval_ms) == []
            sent += 1
        assert sent <= PROMPT_WINDOW_INTERVALS * PROMPT_PER_INTERVAL + 4, interval_ms
        assert member.machine.next_deadline(member.now) - member.now == pytest.approx(interval_ms / 1000)


def test_a_stable_member_whose_answers_change_nothing_keeps_the_interval() -> None:
    member = Member()
    member.stable_with(orders=[0, 1])
    start = member.now
    assert heartbeat_times(member, start + 20, epoch=5) == pytest.approx([start + 5 * i for i in range(1, 5)])


def test_the_revoking_member_acknowledges_at_once_and_does_not_prompt_after() -> None:
    """Java's ``shouldHeartbeatNow`` in ACKNOWLEDGING; a member giving partitions up takes none in that epoch."""
    member = Member()
    member.stable_with(orders=[0, 1, 2])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    told_at = member.now
    # UNREVOKED_PARTITIONS: the same epoch, the assignment shrunk
    step = only(member.respond(hb, epoch=5, assigned=assignment(orders=[0, 1])), DeliverStep).step
    assert step.revoked == tps("orders", 2)
    member.advance(0.05)  # the revocation's commit and callback
    ack = only(member.complete(step), SendConsumerGroupHeartbeat)
    assert member.now == pytest.approx(told_at + 0.05)  # at once, not at the next interval
    assert ack.topic_partitions == assignment(orders=[0, 1])
    assert member.respond(ack, epoch=6) == []  # to the new epoch: no more to take
    assert member.state is MemberState.STABLE
    assert member.machine.next_deadline(member.now) == pytest.approx(member.now + INTERVAL_S)


def test_a_new_epoch_and_a_grown_target_each_start_a_window() -> None:
    member = Member()
    member.stable_with(orders=[0, 1])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    assert member.respond(hb, epoch=6) == []  # a rebalance moved the member on: partitions may come
    assert member.machine.next_deadline(member.now) == pytest.approx(member.now + BASE_S)
    member.settle()
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    step = only(member.respond(hb, epoch=6, assigned=assignment(orders=[0, 1, 4])), DeliverStep).step
    ack = only(member.complete(step), SendConsumerGroupHeartbeat)  # a released partition came
    member.respond(ack, epoch=6)
    assert member.machine.next_deadline(member.now) == pytest.approx(member.now + BASE_S)


def test_a_failure_while_prompting_still_backs_off() -> None:
    member = Member(retry_backoff_ms=100, retry_backoff_max_ms=1000)
    join = member.join()
    member.handle(MetadataUpdated(NAMES))
    step = only(member.respond(join, epoch=4, assigned=()), DeliverStep).step
    member.respond(only(member.complete(step), SendConsumerGroupHeartbeat), epoch=4)
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    member.handle(RequestFailed(request_id=hb.request_id, reason="timed out"))
    assert member.machine.coordinator is None  # found again first, after its backoff
    assert member.machine.next_deadline(member.now) > member.now


# ==================================================================== against the coordinator model

TOPIC = uuid.UUID(int=7)


class Group:
    """Machines and the coordinator model on one virtual clock; answers and steps are instant."""

    def __init__(self, partitions: int) -> None:
        self.clock = FakeClock()
        self.model = ConsumerGroupModel(
            ConsumerGroupConfig(heartbeat_interval_ms=INTERVAL_MS, assignment_interval_ms=0),
            clock=self.clock, topics=lambda: {"t": (TOPIC, partitions)},
        )
        self.members: dict[str, ConsumerGroupMachine] = {}
        self.heartbeats: dict[str, list[float]] = {}
        #: (time, member, partition, owned)
        self.changes: list[tuple[float, str, int, bool]] = []

    def add(self, name: str, seed: int) -> None:
        config = ConsumerConfig(bootstrap_servers="b:1", group_id="g", group_protocol="consumer")
        machine = ConsumerGroupMachine(config, rng=random.Random(seed))
        self.members[name] = machine
        self.heartbeats[name] = []
        now = self.clock.monotonic()
        machine.handle(MetadataUpdated({TOPIC: "t"}), now)
        machine.handle(Subscribe(frozenset({"t"})), now)
        self.run_commands(name, machine.handle(Polled(), now))

    def run_commands(self, name: str, commands: Iterable[object]) -> None:
        machine = self.members[name]
        pending = list(commands)
        while pending:
            command = pending.pop(0)
            now = self.clock.monotonic()
            if type(command).__name__ == "SendFindCoordinator":
                pending += machine.handle(FindCoordinatorResponded(
                    request_id=command.request_id, error_code=0, node_id=1, host="b", port=1), now)  # type: ignore[attr-defined]
            elif isinstance(command, SendConsumerGroupHeartbeat):
                self.heartbeats[name].append(now)
                answer = self.model.heartbeat(command.request()).response
                pending += machine.handle(ConsumerGroupHeartbeatResponded(
                    request_id=command.request_id, error_code=answer.error_code, error_message=answer.error_message,
                    member_id=answer.member_id, member_epoch=answer.member_epoch,
                    heartbeat_interval_ms=answer.heartbeat_interval_ms, assignment=answer.assignment), now)
            elif isinstance(command, DeliverStep):
                step = command.step
                for tp in step.revoked | step.lost:
                    self.changes.append((now, name, tp.partition, False))
                for tp in step.assigned:
                    self.changes.append((now, name, tp.partition, True))
                pending += machine.handle(StepCompleted(step.step_id), now)
                pending += machine.handle(Polled(), now)

    def run_until(self, until: float) -> None:
        """Every member ticks (and its application polls) at each deadline up to ``until``."""
        while True:
            now = self.clock.monotonic()
            for name, machine in self.members.items():
                self.run_commands(name, machine.tick(now) + machine.handle(Polled(), now))
            at = min(m.next_deadline(now) for m in self.members.values())
            if at > until:
                self.clock.advance(until - now)
                return
            self.clock.advance(at - now)

    def owned(self, name: str) -> frozenset[TopicPartition]:
        return self.members[name].owned

    def unowned_gaps(self, since: float) -> list[float]:
        """For each partition released after ``since``: seconds until its next owner took it."""
        gaps = []
        released: dict[int, float] = {}
        for t, _, partition, owned in sorted(self.changes, key=lambda c: (c[0], c[3])):
            if t < since:
                continue
            if not owned:
                released[partition] = t
            elif partition in released:
                gaps.append(t - released.pop(partition))
        assert not released, f"never taken again: {released}"
        return gaps


@pytest.mark.parametrize(("partitions", "before"), [(6, 2), (12, 2), (12, 3)])
def test_scale_out_a_released_partition_is_taken_within_a_tenth_interval(partitions: int, before: int) -> None:
    """The joiner heartbeats promptly: a partition released waits at most interval / 10 (0.5 s), not an interval."""
    group = Group(partitions)
    for i in range(before):
        group.add(f"m{i}", seed=i)
        group.run_until(group.clock.monotonic() + 2 * INTERVAL_S * (i + 1) + 0.37 * i)  # phases apart
    assert sum(len(group.owned(n)) for n in group.members) == partitions
    group.run_until(group.clock.monotonic() + 3 * INTERVAL_S)  # every window over
    # the joiner comes just before an owner's heartbeat: that owner releases at once, and at the
    # interval the joiner would ask again only an interval after its join
    while True:
        now = group.clock.monotonic()
        due = min(m.next_deadline(now) for m in group.members.values())
        if due - now > 0.3:
            break
        group.run_until(due + 0.01)
    group.run_until(due - 0.3)
    joined_at = group.clock.monotonic()
    group.add("new", seed=99)
    group.run_until(joined_at + 3 * INTERVAL_S)
    share = partitions // (before + 1)
    assert len(group.owned("new")) == share
    assert sum(len(group.owned(n)) for n in group.members) == partitions
    gaps = group.unowned_gaps(joined_at)
    assert len(gaps) == share
    assert max(gaps) <= CAP_S + 1e-6, gaps
    # bounded: the joiner's heartbeats in the window, and the interval after it
    beats = [t for t in group.heartbeats["new"] if t >= joined_at]
    assert len(beats) <= 2 * (PROMPT_WINDOW_INTERVALS * PROMPT_PER_INTERVAL + 4)
    tail = [t for t in beats if t > joined_at + 2 * PROMPT_WINDOW_INTERVALS * INTERVAL_S]
    assert all(b - a == pytest.approx(INTERVAL_S) for a, b in pairwise(tail))


def test_the_members_that_give_partitions_up_do_not_prompt() -> None:
    group = Group(6)
    group.add("a", seed=1)
    group.run_until(3 * INTERVAL_S)
    group.add("b", seed=2)
    group.run_until(group.clock.monotonic() + 4 * INTERVAL_S)
    start = group.clock.monotonic()
    group.add("c", seed=3)
    group.run_until(start + 4 * INTERVAL_S)
    for giver in ("a", "b"):
        beats = [t for t in group.heartbeats[giver] if t > start]
        # the interval's heartbeats and the acknowledgement: nothing prompt
        assert len(beats) <= 4 * 2 + 1, (giver, beats)
