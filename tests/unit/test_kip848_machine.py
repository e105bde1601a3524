"""ConsumerGroupMachine, driven with scripted ConsumerGroupHeartbeat responses (no IO, virtual time).

Each test plays the broker's side by hand: it answers the machine's commands with the responses
Apache Kafka gives (docs/kip848.md, and the Apache Kafka test in
tests/integration/test_kip848_apache_kafka.py for the real thing) and checks what the member
sends and hands to the poll thread, against the Java client's ``ConsumerMembershipManager`` /
``ConsumerHeartbeatRequestManager`` behaviour.
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Iterable, Sequence

import pytest

from kgroup._error_codes import (
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    FENCED_INSTANCE_ID,
    FENCED_MEMBER_EPOCH,
    GROUP_AUTHORIZATION_FAILED,
    GROUP_ID_NOT_FOUND,
    GROUP_MAX_SIZE_REACHED,
    INVALID_REQUEST,
    NONE,
    NOT_COORDINATOR,
    TOPIC_AUTHORIZATION_FAILED,
    UNKNOWN_MEMBER_ID,
    UNRELEASED_INSTANCE_ID,
    UNSUPPORTED_ASSIGNOR,
    UNSUPPORTED_VERSION,
)
from kgroup.config import ConsumerConfig
from kgroup.errors import (
    CONSUMER_PROTOCOL_NOT_SUPPORTED,
    TABLE,
    Api,
    BrokerError,
    Disposition,
    FatalGroupError,
    FencedInstanceIdError,
    ProtocolViolation,
    classify,
)
from kgroup.membership.commands import (
    DeliverStep,
    Fail,
    Notify,
    RebalanceStep,
    RequestMetadata,
    SendConsumerGroupHeartbeat,
    SendFindCoordinator,
)
from kgroup.membership.consumer_group import (
    TRANSITIONS,
    ConsumerGroupMachine,
    MemberState,
    generate_member_id,
)
from kgroup.membership.events import (
    ConsumerGroupHeartbeatResponded,
    CoordinatorDead,
    FindCoordinatorResponded,
    Leave,
    LeaveOperation,
    MetadataUpdated,
    Polled,
    RequestFailed,
    StepCompleted,
    Subscribe,
    Unsubscribe,
)
from kgroup.protocol.consumer_group_heartbeat import TopicIdPartitions
from kgroup.types import Generation, TopicPartition

ORDERS = uuid.UUID(int=1)
PAYMENTS = uuid.UUID(int=2)
NAMES = {ORDERS: "orders", PAYMENTS: "payments"}
INTERVAL_MS = 5000
COORDINATOR = 7


def tps(topic: str, *partitions: int) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(topic, p) for p in partitions)


def assignment(**topics: Sequence[int]) -> tuple[TopicIdPartitions, ...]:
    by_name = {name: topic_id for topic_id, name in NAMES.items()}
    return tuple(TopicIdPartitions(by_name[name], partitions) for name, partitions in topics.items())


class Member:
    """One machine, the virtual clock, and the commands it returned, with the broker played by the test."""

    def __init__(self, *, server_assignor: str | None = None, seed: int = 7, **options: object) -> None:
        config = ConsumerConfig(bootstrap_servers="localhost:9092", group_id="g", **options)  # type: ignore[arg-type]
        self.config = config
        self.machine = ConsumerGroupMachine(config, server_assignor=server_assignor, rng=random.Random(seed))
        self.now = 0.0
        self.sent: list[object] = []

    # -- driving
    def handle(self, event: object) -> list[object]:
        out = self.machine.handle(event, self.now)  # type: ignore[arg-type]
        self.sent.extend(out)
        return list(out)

    def tick(self) -> list[object]:
        out = self.machine.tick(self.now)
        self.sent.extend(out)
        return list(out)

    def advance(self, seconds: float) -> list[object]:
        self.now += seconds
        return self.tick()

    def until_next_deadline(self) -> list[object]:
        deadline = self.machine.next_deadline(self.now)
        assert deadline != float("inf")
        self.now = deadline
        return self.tick()

    @property
    def state(self) -> MemberState:
        return self.machine.state

    # -- the broker's side
    def find_coordinator(self, out: Iterable[object]) -> list[object]:
        (find,) = [c for c in out if isinstance(c, SendFindCoordinator)]
        return self.handle(FindCoordinatorResponded(request_id=find.request_id, error_code=NONE, node_id=COORDINATOR,
                                                    host="broker", port=9092))

    def respond(self, heartbeat: SendConsumerGroupHeartbeat, error_code: int = NONE, *, epoch: int | None = None,
                assigned: tuple[TopicIdPartitions, ...] | None = None, interval_ms: int = INTERVAL_MS,
                message: str | None = None) -> list[object]:
        if epoch is None:
            epoch = heartbeat.member_epoch + (1 if heartbeat.member_epoch >= 0 else 0)
        return self.handle(ConsumerGroupHeartbeatResponded(
            request_id=heartbeat.request_id, error_code=error_code, error_message=message,
            member_id=heartbeat.member_id if error_code == NONE else None,
            member_epoch=epoch if error_code == NONE else 0,
            heartbeat_interval_ms=interval_ms if error_code == NONE else 0,
            assignment=assigned if error_code == NONE else None,
        ))

    def complete(self, step: RebalanceStep, **kwargs: object) -> list[object]:
        return self.handle(StepCompleted(step.step_id, **kwargs))  # type: ignore[arg-type]

    def join(self, topics: Iterable[str] = ("orders",)) -> SendConsumerGroupHeartbeat:
        """Subscribe, poll, find the coordinator: the first heartbeat."""
        assert self.handle(Subscribe(frozenset(topics))) == []
        return only(self.find_coordinator(self.handle(Polled())), SendConsumerGroupHeartbeat)

    def stable_with(self, **topics: Sequence[int]) -> SendConsumerGroupHeartbeat:
        """Join with ``topics`` subscribed, take their assignment, acknowledge it: returns the ack."""
        first = self.join(topics)
        self.handle(MetadataUpdated(NAMES))
        out = self.respond(first, epoch=5, assigned=assignment(**topics))
        step = only(out, DeliverStep).step
        ack = only(self.complete(step), SendConsumerGroupHeartbeat)
        assert self.state is MemberState.STABLE
        assert self.respond(ack, epoch=5) == []
        self.settle()
        return ack

    def settle(self, interval_ms: int = INTERVAL_MS) -> None:
        """Answer the prompt heartbeats after a join or a rebalance with nothing new until they end; the
        application polls meanwhile. The last heartbeat was sent, and answered, at ``now``."""
        while self.machine._heartbeat.prompting(self.now):
            hb = only(self.until_next_deadline(), SendConsumerGroupHeartbeat)
            assert self.respond(hb, epoch=hb.member_epoch, interval_ms=interval_ms) == []
            self.handle(Polled())


def only(commands: Iterable[object], kind: type) -> object:
    found = [c for c in commands if isinstance(c, kind)]
    assert len(found) == 1, f"expected one {kind.__name__} in {list(commands)!r}"
    return found[0]


def none_of(commands: Iterable[object], kind: type) -> None:
    assert not [c for c in commands if isinstance(c, kind)], list(commands)


# ==================================================================== member id and joining


def test_the_member_generates_its_id_as_javas_consumer_does() -> None:
    """KIP-1082: a random UUID in Java's text form (URL-safe base64, 22 characters), kept for life."""
    member_id = generate_member_id(random.Random(1))
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", member_id) and not member_id.startswith("-")
    assert generate_member_id(random.Random(1)) == member_id
    assert generate_member_id(random.Random(2)) != member_id
    assert len({generate_member_id(random.Random(seed)) for seed in range(2000)}) == 2000
    machine = ConsumerGroupMachine(ConsumerConfig(bootstrap_servers="b:1", group_id="g"))
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", machine.member_id)


def test_the_member_joins_only_when_the_application_polls() -> None:
    """Java (KAFKA-17154): subscribe() alone sends nothing; the next poll() joins."""
    member = Member()
    assert member.handle(Subscribe(frozenset({"orders"}))) == []
    assert member.state is MemberState.UNSUBSCRIBED
    assert member.advance(60) == []
    out = member.handle(Polled())
    only(out, SendFindCoordinator)
    assert member.state is MemberState.JOINING


def test_the_join_heartbeat_carries_every_field() -> None:
    member = Member(group_instance_id="pod-0", client_rack="rack-a", max_poll_interval_ms=120000,
                    server_assignor="uniform")
    join = member.join(("payments", "orders"))
    assert join.node_id == COORDINATOR
    assert join.member_id == member.machine.member_id
    assert join.member_epoch == 0
    assert join.instance_id == "pod-0"
    assert join.rack_id == "rack-a"
    assert join.rebalance_timeout_ms == 120000
    assert join.subscribed_topic_names == ("orders", "payments")
    assert join.subscribed_topic_regex is None
    assert join.server_assignor == "uniform"
    assert join.topic_partitions == ()  # owns nothing: an empty list, not "unchanged"
    assert join.request().member_epoch == 0 and not hasattr(join.request(), "request_id")


def test_first_assignment_resolve_reconcile_acknowledge() -> None:
    member = Member()
    join = member.join()
    out = member.respond(join, epoch=3, assigned=assignment(orders=[0, 1, 2, 3]))
    # the topic id has no name yet: ask for metadata; as Java does, reconcile the resolvable
    # part meanwhile (nothing: on_partitions_assigned with no partition) and acknowledge it
    assert only(out, RequestMetadata) == RequestMetadata(frozenset({ORDERS}))
    empty = only(out, DeliverStep).step
    assert (empty.assigned, empty.owned, empty.invoke_assigned) == (frozenset(), frozenset(), True)
    assert member.state is MemberState.RECONCILING
    assert member.machine.member_epoch == 3
    assert member.machine.heartbeat_interval_ms == INTERVAL_MS
    ack = only(member.complete(empty), SendConsumerGroupHeartbeat)
    assert ack.topic_partitions == ()
    assert member.state is MemberState.RECONCILING
    member.respond(ack, epoch=3)
    step = only(member.handle(MetadataUpdated(NAMES)), DeliverStep).step
    assert step == RebalanceStep(
        step_id=step.step_id, generation=Generation(3, member.machine.member_id), commit=True,
        assigned=tps("orders", 0, 1, 2, 3), owned=tps("orders", 0, 1, 2, 3), invoke_assigned=True, reason=step.reason,
    )
    # heartbeats go on while the poll thread runs the step (promptly: the member just joined)
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    assert member.now == pytest.approx(member.config.retry_backoff_ms / 1000)
    assert hb.topic_partitions is None and hb.subscribed_topic_names is None and hb.rebalance_timeout_ms == -1
    member.respond(hb, epoch=3)
    # the step completes: acknowledge at once, without waiting
    member.advance(0.1)
    ack = only(member.complete(step), SendConsumerGroupHeartbeat)
    assert ack.topic_partitions == (TopicIdPartitions(ORDERS, (0, 1, 2, 3)),)
    assert member.state is MemberState.STABLE
    assert member.machine.owned == tps("orders", 0, 1, 2, 3)
    assert member.respond(ack, epoch=3) == []
    member.settle()
    acked_at = member.now
    # then only what changed (nothing), one interval after the last heartbeat sent
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    assert (hb.topic_partitions, hb.subscribed_topic_names, hb.rebalance_timeout_ms, hb.instance_id) == (
        None, None, -1, None)
    assert member.now == pytest.approx(acked_at + INTERVAL_MS / 1000)


def test_an_empty_first_assignment_still_runs_on_partitions_assigned() -> None:
    member = Member()
    out = member.respond(member.join(), epoch=1, assigned=())
    step = only(out, DeliverStep).step
    assert step.invoke_assigned and step.assigned == frozenset() and step.owned == frozenset()
    ack = only(member.complete(step), SendConsumerGroupHeartbeat)
    assert ack.topic_partitions == ()


def test_the_heartbeat_follows_the_interval_the_broker_gives() -> None:
    member = Member()
    member.stable_with(orders=[0])
    start = member.now
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    assert member.now - start == pytest.approx(5.0)
    member.respond(hb, epoch=5, interval_ms=2000)  # the group's interval changed
    member.until_next_deadline()
    assert member.now - start == pytest.approx(7.0)


# ==================================================================== reconciliation


def test_revoke_first_then_assign() -> None:
    """A shrinking assignment revokes (after a commit) before anything is assigned; the ack follows."""
    member = Member()
    member.stable_with(orders=[0, 1, 2, 3])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    step = only(member.respond(hb, epoch=6, assigned=assignment(orders=[0, 1])), DeliverStep).step
    assert (step.commit, step.revoked, step.assigned, step.owned) == (
        True, tps("orders", 2, 3), frozenset(), tps("orders", 0, 1))
    assert step.generation.generation_id == 6
    assert member.state is MemberState.RECONCILING
    ack = only(member.complete(step), SendConsumerGroupHeartbeat)
    assert ack.topic_partitions == (TopicIdPartitions(ORDERS, (0, 1)),)
    assert member.machine.owned == tps("orders", 0, 1)


def test_a_newer_assignment_replaces_the_one_waiting() -> None:
    """Java: the reconciliation in progress finishes and is acknowledged; the newest target comes next."""
    member = Member()
    member.stable_with(orders=[0, 1, 2, 3], payments=[0])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    first = only(member.respond(hb, epoch=6, assigned=assignment(orders=[0, 1], payments=[0])), DeliverStep).step
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    assert member.respond(hb, epoch=7, assigned=assignment(orders=[0])) == []
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    assert member.respond(hb, epoch=8, assigned=assignment(orders=[0], payments=[0, 1])) == []
    out = member.complete(first)
    ack = only(out, SendConsumerGroupHeartbeat)
    assert ack.topic_partitions == assignment(orders=[0, 1], payments=[0])
    assert member.state is MemberState.RECONCILING  # the target moved on
    none_of(out, DeliverStep)  # kgroup: the next step adds a partition, so it waits for the ack's answer
    second = only(member.respond(ack, epoch=8), DeliverStep).step
    assert (second.revoked, second.assigned) == (tps("orders", 1), tps("payments", 1))
    ack = only(member.complete(second), SendConsumerGroupHeartbeat)
    assert ack.topic_partitions == assignment(orders=[0], payments=[0, 1])
    assert member.state is MemberState.STABLE


def test_only_partitions_of_known_topics_are_reconciled() -> None:
    member = Member()
    join = member.join(("orders", "payments"))
    member.handle(MetadataUpdated({ORDERS: "orders"}))
    out = member.respond(join, epoch=2, assigned=assignment(orders=[0], payments=[0, 1]))
    assert only(out, RequestMetadata).topic_ids == {PAYMENTS}
    step = only(out, DeliverStep).step
    assert step.owned == tps("orders", 0)
    ack = only(member.complete(step), SendConsumerGroupHeartbeat)
    assert ack.topic_partitions == assignment(orders=[0])  # acknowledges what it reconciled
    assert member.state is MemberState.RECONCILING
    member.respond(ack, epoch=2)
    # asks again after retry_backoff_max_ms while the name is missing (the prompt heartbeats after
    # the join go on meanwhile: answered)
    out = member.advance(member.config.retry_backoff_max_ms / 1000)
    assert only(out, RequestMetadata).topic_ids == {PAYMENTS}
    member.respond(only(out, SendConsumerGroupHeartbeat), epoch=2)
    step = only(member.handle(MetadataUpdated(NAMES)), DeliverStep).step
    assert (step.revoked, step.assigned) == (frozenset(), tps("payments", 0, 1))
    ack = only(member.complete(step), SendConsumerGroupHeartbeat)
    assert ack.topic_partitions == assignment(orders=[0], payments=[0, 1])
    assert member.state is MemberState.STABLE


def test_a_failed_listener_is_not_acknowledged_and_runs_again_at_the_next_poll() -> None:
    member = Member()
    member.stable_with(orders=[0, 1])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    step = only(member.respond(hb, epoch=6, assigned=assignment(orders=[0])), DeliverStep).step
    out = member.complete(step, error=RuntimeError("on_partitions_revoked failed"), applied=False)
    none_of(out, SendConsumerGroupHeartbeat)
    none_of(out, DeliverStep)
    assert member.state is MemberState.RECONCILING and member.machine.owned == tps("orders", 0, 1)
    again = only(member.handle(Polled()), DeliverStep).step
    assert again.revoked == tps("orders", 1)
    only(member.complete(again), SendConsumerGroupHeartbeat)


def test_a_subscription_change_goes_with_the_next_heartbeat() -> None:
    member = Member()
    member.stable_with(orders=[0])
    assert member.handle(Subscribe(frozenset({"orders", "payments"}))) == []
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    assert hb.subscribed_topic_names == ("orders", "payments")
    member.respond(hb, epoch=5)
    member.handle(Subscribe(frozenset({"orders"}), pattern="pay.*"))
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    assert (hb.subscribed_topic_names, hb.subscribed_topic_regex) == (("orders",), "pay.*")
    member.respond(hb, epoch=5)
    member.handle(Subscribe(frozenset({"orders"})))
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    assert (hb.subscribed_topic_names, hb.subscribed_topic_regex) == (None, "")  # "" drops the pattern


# ==================================================================== fencing


@pytest.mark.parametrize("code", [FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID])
def test_a_fenced_member_loses_its_partitions_then_rejoins_with_epoch_0(code: int) -> None:
    member = Member()
    member.stable_with(orders=[0, 1])
    member_id = member.machine.member_id
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    out = member.respond(hb, code)
    step = only(out, DeliverStep).step
    assert (step.lost, step.revoked, step.commit, step.owned) == (tps("orders", 0, 1), frozenset(), False, frozenset())
    none_of(out, SendConsumerGroupHeartbeat)
    assert member.state is MemberState.FENCED and member.machine.member_epoch == 0
    assert member.advance(30) == []  # no heartbeat while the partitions are released
    rejoin = only(member.complete(step), SendConsumerGroupHeartbeat)  # at once: no backoff
    assert member.state is MemberState.JOINING
    assert (rejoin.member_id, rejoin.member_epoch, rejoin.topic_partitions, rejoin.subscribed_topic_names) == (
        member_id, 0, (), ("orders",))
    step = only(member.respond(rejoin, epoch=9, assigned=assignment(orders=[1])), DeliverStep).step
    assert (step.assigned, step.owned) == (tps("orders", 1), tps("orders", 1))


def test_a_static_member_fenced_at_a_held_epoch_releases_its_instance_id_then_rejoins() -> None:
    """Kafka 4.4 keeps a member it answered FENCED_MEMBER_EPOCH at its old epoch and refuses a
    join with its instance id (UNRELEASED_INSTANCE_ID, fatal in Java's consumer); a -2 heartbeat
    releases it (the conformance script checks both against Apache Kafka)."""
    member = Member(group_instance_id="pod-0")
    member.stable_with(orders=[0, 1])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    step = only(member.respond(hb, FENCED_MEMBER_EPOCH), DeliverStep).step
    assert step.lost == tps("orders", 0, 1)
    release = only(member.complete(step), SendConsumerGroupHeartbeat)
    assert (release.member_epoch, release.instance_id, release.member_id) == (-2, "pod-0", hb.member_id)
    assert (release.subscribed_topic_names, release.topic_partitions) == (None, None)
    assert member.state is MemberState.JOINING
    rejoin = only(member.respond(release, epoch=-2), SendConsumerGroupHeartbeat)  # at once
    assert (rejoin.member_epoch, rejoin.instance_id, rejoin.topic_partitions) == (0, "pod-0", ())
    assert rejoin.subscribed_topic_names == ("orders",)
    step = only(member.respond(rejoin, epoch=5, assigned=assignment(orders=[0, 1])), DeliverStep).step
    assert step.assigned == tps("orders", 0, 1) and member.machine.member_epoch == 5
    # fenced again: released again (each fencing at a held epoch needs its own release)
    ack = only(member.complete(step), SendConsumerGroupHeartbeat)
    step = only(member.respond(ack, FENCED_MEMBER_EPOCH), DeliverStep).step
    assert only(member.complete(step), SendConsumerGroupHeartbeat).member_epoch == -2


@pytest.mark.parametrize(
    ("code", "outcome"),
    [(UNKNOWN_MEMBER_ID, "join"), (NOT_COORDINATOR, "find"), (FENCED_INSTANCE_ID, "fatal")],
)
def test_the_answer_to_an_instance_release(code: int, outcome: str) -> None:
    member = Member(group_instance_id="pod-0")
    member.stable_with(orders=[0])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    step = only(member.respond(hb, FENCED_MEMBER_EPOCH), DeliverStep).step
    release = only(member.complete(step), SendConsumerGroupHeartbeat)
    out = member.respond(release, code)
    if outcome == "join":  # the coordinator no longer has the member: the instance id is free
        assert only(out, SendConsumerGroupHeartbeat).member_epoch == 0
    elif outcome == "find":  # the release is sent again to the coordinator found next
        again = only(member.find_coordinator(out), SendConsumerGroupHeartbeat)
        assert again.member_epoch == -2
        assert only(member.respond(again, epoch=-2), SendConsumerGroupHeartbeat).member_epoch == 0
    else:  # another process holds the instance id
        assert isinstance(only(out, Fail).error, FencedInstanceIdError)
        assert member.state is MemberState.FATAL


@pytest.mark.parametrize("instance_id", [None, "pod-0"])
def test_unknown_member_id_needs_no_release(instance_id: str | None) -> None:
    member = Member(group_instance_id=instance_id)
    member.stable_with(orders=[0])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    step = only(member.respond(hb, UNKNOWN_MEMBER_ID), DeliverStep).step
    assert only(member.complete(step), SendConsumerGroupHeartbeat).member_epoch == 0


def test_fenced_while_a_reconciliation_is_out() -> None:
    member = Member()
    member.stable_with(orders=[0, 1])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    step = only(member.respond(hb, epoch=6, assigned=assignment(orders=[0, 1, 2])), DeliverStep).step
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    assert member.respond(hb, FENCED_MEMBER_EPOCH) == []  # waits for the step in progress
    out = member.complete(step)
    none_of(out, SendConsumerGroupHeartbeat)  # the reconciliation is not acknowledged
    lost = only(out, DeliverStep).step
    assert lost.lost == tps("orders", 0, 1, 2)
    rejoin = only(member.complete(lost), SendConsumerGroupHeartbeat)
    assert rejoin.member_epoch == 0 and rejoin.topic_partitions == ()


def test_a_member_without_partitions_rejoins_at_once_when_fenced() -> None:
    member = Member()
    first = member.join()
    hb = only(member.respond(first, epoch=1, assigned=None), SendConsumerGroupHeartbeat)  # JOINING: at once
    rejoin = only(member.respond(hb, UNKNOWN_MEMBER_ID), SendConsumerGroupHeartbeat)
    assert rejoin.member_epoch == 0


def test_a_stale_response_is_dropped() -> None:
    member = Member()
    member.stable_with(orders=[0])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    member.handle(CoordinatorDead("disconnected"))
    assert member.respond(hb, epoch=9, assigned=assignment(orders=[0, 1])) == []
    assert member.state is MemberState.STABLE


@pytest.mark.parametrize("code", [FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID])
def test_a_fencing_answer_to_a_heartbeat_dropped_with_its_coordinator_still_fences(code: int) -> None:
    """Java handles every heartbeat answer; found by the simulator on the consumer protocol: a
    commit's NOT_COORDINATOR marked the coordinator unknown while a heartbeat was out, whose answer
    said the member was gone, and the member went on handing out its partitions."""
    member = Member()
    member.stable_with(orders=[0])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    member.handle(CoordinatorDead("a commit returned NOT_COORDINATOR"))
    step = only(member.respond(hb, code), DeliverStep).step
    assert step.lost == tps("orders", 0)
    assert member.state is MemberState.FENCED


# ==================================================================== leaving


@pytest.mark.parametrize(
    ("instance_id", "operation", "epoch"),
    [
        (None, LeaveOperation.DEFAULT, -1),
        ("pod-0", LeaveOperation.DEFAULT, -2),
        (None, LeaveOperation.LEAVE_GROUP, -1),
        ("pod-0", LeaveOperation.LEAVE_GROUP, -1),
        ("pod-0", LeaveOperation.REMAIN_IN_GROUP, -2),
        (None, LeaveOperation.REMAIN_IN_GROUP, None),
    ],
)
def test_close_revokes_then_leaves_with_the_leave_epoch(
    instance_id: str | None, operation: LeaveOperation, epoch: int | None
) -> None:
    """-1 leaves; a static member's -2 keeps its assignment until the session times out (KIP-848)."""
    member = Member(group_instance_id=instance_id)
    member.stable_with(orders=[0, 1])
    send_leave_group = {LeaveOperation.DEFAULT: None, LeaveOperation.LEAVE_GROUP: True,
                        LeaveOperation.REMAIN_IN_GROUP: False}[operation]
    leave_event = Leave("shutting down", send_leave_group=send_leave_group)
    assert leave_event.operation is operation
    step = only(member.handle(leave_event), DeliverStep).step
    assert (step.revoked, step.commit, step.owned) == (tps("orders", 0, 1), True, frozenset())
    assert member.state is MemberState.PREPARE_LEAVING
    out = member.complete(step)
    if epoch is None:
        assert out == [] and member.state is MemberState.CLOSED
        return
    leave = only(out, SendConsumerGroupHeartbeat)
    assert (leave.member_epoch, leave.instance_id) == (epoch, instance_id)
    assert member.state is MemberState.UNSUBSCRIBED
    assert member.respond(leave, epoch=epoch) == []
    assert member.state is MemberState.CLOSED
    assert member.machine.next_deadline(member.now) == float("inf")


def test_close_without_a_coordinator_does_not_wait_for_one() -> None:
    member = Member()
    member.stable_with(orders=[0])
    member.handle(CoordinatorDead("gone"))
    step = only(member.handle(Leave()), DeliverStep).step
    assert member.complete(step) == []
    assert member.state is MemberState.CLOSED


def test_close_before_joining_is_immediate() -> None:
    member = Member()
    assert member.handle(Leave()) == []
    assert member.state is MemberState.CLOSED


def test_unsubscribe_leaves_and_a_new_subscription_rejoins_with_epoch_0() -> None:
    member = Member()
    member.stable_with(orders=[0])
    step = only(member.handle(Unsubscribe()), DeliverStep).step
    leave = only(member.complete(step), SendConsumerGroupHeartbeat)
    assert leave.member_epoch == -1 and member.state is MemberState.UNSUBSCRIBED
    member.respond(leave, epoch=-1)
    assert member.advance(60) == []
    member.handle(Subscribe(frozenset({"payments"})))
    join = only(member.handle(Polled()), SendConsumerGroupHeartbeat)
    assert (join.member_epoch, join.subscribed_topic_names, join.topic_partitions) == (0, ("payments",), ())


def test_a_member_fenced_while_releasing_for_close_sends_no_leave() -> None:
    member = Member()
    member.stable_with(orders=[0])
    step = only(member.handle(Leave()), DeliverStep).step
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)  # still heartbeating
    assert member.respond(hb, FENCED_MEMBER_EPOCH) == []
    assert member.complete(step) == []
    assert member.state is MemberState.CLOSED


# ==================================================================== the poll watchdog


@pytest.mark.parametrize(("instance_id", "epoch"), [(None, -1), ("pod-0", -2)])
def test_the_poll_watchdog_leaves_releases_as_lost_and_rejoins_at_the_next_poll(
    instance_id: str | None, epoch: int
) -> None:
    member = Member(group_instance_id=instance_id, max_poll_interval_ms=60000)
    member.stable_with(orders=[0, 1])
    polled_at = member.now
    out: list[object] = []
    while not out or not any(isinstance(c, DeliverStep) for c in out):
        out = member.until_next_deadline()
        for hb in [c for c in out if isinstance(c, SendConsumerGroupHeartbeat) and c.member_epoch > 0]:
            member.respond(hb, epoch=5)
    assert member.now == pytest.approx(polled_at + 60)
    leave = only(out, SendConsumerGroupHeartbeat)
    assert leave.member_epoch == epoch
    lost = only(out, DeliverStep).step
    assert (lost.lost, lost.commit) == (tps("orders", 0, 1), False)
    assert member.state is MemberState.STALE
    member.respond(leave, epoch=epoch)
    assert member.complete(lost) == []
    assert member.advance(3600) == []  # stale: nothing until the application polls
    join = only(member.handle(Polled()), SendConsumerGroupHeartbeat)
    assert (join.member_epoch, join.topic_partitions) == (0, ())
    assert member.state is MemberState.JOINING


def test_polling_in_time_keeps_the_member() -> None:
    member = Member(max_poll_interval_ms=60000)
    member.stable_with(orders=[0])
    for _ in range(30):
        for hb in member.advance(5):
            assert isinstance(hb, SendConsumerGroupHeartbeat) and hb.member_epoch == 5
            member.respond(hb, epoch=5)
        member.handle(Polled())
    assert member.state is MemberState.STABLE


# ==================================================================== errors


def test_every_error_the_java_client_names_has_an_action() -> None:
    row = TABLE[Api.CONSUMER_GROUP_HEARTBEAT]
    assert row[NOT_COORDINATOR] is row[COORDINATOR_NOT_AVAILABLE] is Disposition.REDISCOVER
    assert row[COORDINATOR_LOAD_IN_PROGRESS] is Disposition.RETRY
    # fenced: the epoch is gone, the member id stays (KIP-1082)
    assert row[FENCED_MEMBER_EPOCH] is row[UNKNOWN_MEMBER_ID] is Disposition.RESET_GENERATION
    assert row[TOPIC_AUTHORIZATION_FAILED] is Disposition.RAISE
    fatal = {GROUP_AUTHORIZATION_FAILED, INVALID_REQUEST, GROUP_MAX_SIZE_REACHED, UNSUPPORTED_ASSIGNOR,
             UNSUPPORTED_VERSION, UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID}
    assert {code for code, action in row.items() if action is Disposition.FATAL} == fatal
    # Java's default case: an unexpected code (INVALID_REGULAR_EXPRESSION among them) is fatal
    assert classify(Api.CONSUMER_GROUP_HEARTBEAT, 9999) is Disposition.FATAL


@pytest.mark.parametrize("code", [NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE])
def test_a_moved_coordinator_is_found_again_and_the_heartbeat_resent_at_once(code: int) -> None:
    member = Member()
    member.stable_with(orders=[0])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    out = member.respond(hb, code)
    only(out, SendFindCoordinator)
    assert member.machine.coordinator is None
    again = only(member.find_coordinator(out), SendConsumerGroupHeartbeat)
    # after an error every field goes again
    assert again.topic_partitions == assignment(orders=[0]) and again.subscribed_topic_names == ("orders",)
    assert again.member_epoch == 5 and member.state is MemberState.STABLE


def test_a_loading_coordinator_is_retried_with_exponential_backoff() -> None:
    member = Member(retry_backoff_ms=100, retry_backoff_max_ms=1000)
    member.stable_with(orders=[0])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    waits = []
    for _ in range(6):
        start = member.now
        assert member.respond(hb, COORDINATOR_LOAD_IN_PROGRESS) == []
        hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
        waits.append(member.now - start)
    for wait, base in zip(waits, [0.1, 0.2, 0.4, 0.8, 1.0, 1.0], strict=True):
        assert base * 0.8 <= wait <= base * 1.2
    assert hb.topic_partitions is not None  # full fields after an error
    member.respond(hb, epoch=5)
    start = member.now
    member.until_next_deadline()
    assert member.now - start == pytest.approx(5.0)  # success resets the backoff


def test_topic_authorization_failed_is_reported_and_the_member_carries_on() -> None:
    member = Member()
    member.stable_with(orders=[0])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    out = member.respond(hb, TOPIC_AUTHORIZATION_FAILED, message="not authorized for payments")
    error = only(out, Notify).error
    assert isinstance(error, BrokerError) and not isinstance(error, FatalGroupError)
    assert error.code == TOPIC_AUTHORIZATION_FAILED and "payments" in str(error)
    assert member.state is MemberState.STABLE and member.machine.owned == tps("orders", 0)
    again = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    assert again.member_epoch == 5


@pytest.mark.parametrize(
    "code",
    [GROUP_AUTHORIZATION_FAILED, INVALID_REQUEST, GROUP_MAX_SIZE_REACHED, UNSUPPORTED_ASSIGNOR,
     UNSUPPORTED_VERSION, UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID, GROUP_ID_NOT_FOUND],
)
def test_fatal_errors_end_the_member_and_release_its_partitions_as_lost(code: int) -> None:
    member = Member(group_instance_id="pod-0")
    member.stable_with(orders=[0, 1])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    out = member.respond(hb, code, message="broker says no")
    error = only(out, Fail).error
    assert isinstance(error, FatalGroupError) and error.code == code and "broker says no" in str(error)
    assert isinstance(error, FencedInstanceIdError) == (code == FENCED_INSTANCE_ID)
    assert error.api.value == "ConsumerGroupHeartbeat"
    lost = only(out, DeliverStep).step
    assert lost.lost == tps("orders", 0, 1)
    assert member.state is MemberState.FATAL
    assert member.machine.fatal_error is error
    assert member.complete(lost) == []
    assert member.advance(3600) == [] and member.handle(Polled()) == []
    assert member.machine.next_deadline(member.now) == float("inf")
    assert member.handle(Leave()) == [] and member.state is MemberState.CLOSED


def test_unreleased_instance_id_says_what_it_means() -> None:
    member = Member(group_instance_id="pod-0")
    join = member.join()
    error = only(member.respond(join, UNRELEASED_INSTANCE_ID), Fail).error
    assert "group.instance.id" in str(error) and "'pod-0'" in str(error)
    assert member.state is MemberState.FATAL


def test_a_broker_without_the_consumer_protocol_is_fatal() -> None:
    member = Member()
    join = member.join()
    out = member.handle(RequestFailed(request_id=join.request_id, reason="IncompatibleBrokerVersion",
                                      unsupported_version=True))
    error = only(out, Fail).error
    assert isinstance(error, FatalGroupError) and CONSUMER_PROTOCOL_NOT_SUPPORTED in str(error)


def test_a_failed_request_finds_the_coordinator_again_after_a_backoff() -> None:
    member = Member(retry_backoff_ms=100)
    member.stable_with(orders=[0])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    out = member.handle(RequestFailed(request_id=hb.request_id, reason="disconnected"))
    out = member.find_coordinator(out)
    none_of(out, SendConsumerGroupHeartbeat)  # backing off
    start = member.now
    again = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    assert 0.08 <= member.now - start <= 0.12
    assert again.member_epoch == 5 and again.topic_partitions is not None


# ==================================================================== bugs are loud


def test_a_step_that_is_not_pending_is_a_protocol_violation() -> None:
    member = Member()
    member.stable_with(orders=[0])
    with pytest.raises(ProtocolViolation):
        member.handle(StepCompleted(999))
    with pytest.raises(ProtocolViolation):
        member.handle(Polled())  # poisoned


def test_the_state_table_is_javas() -> None:
    s = MemberState
    assert TRANSITIONS[s.ACKNOWLEDGING] == {s.RECONCILING}
    assert TRANSITIONS[s.LEAVING] == {s.PREPARE_LEAVING}
    assert TRANSITIONS[s.STALE] == {s.LEAVING}
    assert TRANSITIONS[s.JOINING] == {s.FENCED, s.UNSUBSCRIBED, s.STALE}
    assert TRANSITIONS[s.CLOSED] == set(MemberState)
    assert set(TRANSITIONS) == set(MemberState)


def test_no_partition_is_taken_while_a_heartbeat_is_unanswered() -> None:
    """kgroup, beyond Java (found by the simulator on the consumer protocol).

    The member acknowledges the part of its target it could resolve (a new topic's name is
    unknown) and the ack claims only that. If the coordinator has a newer target by then, it
    releases what the ack did not claim and may give it to another member: taking the older
    target's partitions when the name arrives, before the ack's answer, would make two owners.
    """
    refunds = uuid.UUID(int=3)
    member = Member()
    member.stable_with(orders=[0])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    out = member.respond(hb, epoch=6, assigned=(*assignment(orders=[0]), TopicIdPartitions(refunds, (0, 1))))
    none_of(out, DeliverStep)
    ack = only(out, SendConsumerGroupHeartbeat)  # the resolvable part, acknowledged at once
    assert ack.topic_partitions == assignment(orders=[0])
    # the name arrives while the ack is unanswered: nothing is taken yet
    none_of(member.handle(MetadataUpdated({**NAMES, refunds: "refunds"})), DeliverStep)
    # its answer: the coordinator moved on, refunds-1 went elsewhere
    out = member.respond(ack, epoch=7, assigned=(*assignment(orders=[0]), TopicIdPartitions(refunds, (0,))))
    step = only(out, DeliverStep).step
    assert (step.revoked, step.assigned) == (frozenset(), tps("refunds", 0))


def test_no_partition_is_taken_after_the_acknowledgement_went_unanswered() -> None:
    """kgroup, beyond Java (found by the simulator on the consumer protocol, seed 1651).

    As above, but the acknowledgement's answer never comes (the request times out): the
    coordinator may have read the ack and released what it did not claim all the same. The
    older target's other partitions wait for the answer to a later heartbeat, which brings the
    newer target.
    """
    refunds = uuid.UUID(int=3)
    member = Member(retry_backoff_ms=100)
    member.stable_with(orders=[0])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    out = member.respond(hb, epoch=6, assigned=(*assignment(orders=[0]), TopicIdPartitions(refunds, (0, 1))))
    ack = only(out, SendConsumerGroupHeartbeat)
    assert ack.topic_partitions == assignment(orders=[0])
    out = member.handle(RequestFailed(request_id=ack.request_id, reason="ConsumerGroupHeartbeat timed out"))
    none_of(out, DeliverStep)
    # the name arrives once no heartbeat is out: still nothing is taken
    none_of(member.handle(MetadataUpdated({**NAMES, refunds: "refunds"})), DeliverStep)
    out = member.find_coordinator(out)
    none_of(out, DeliverStep)
    again = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    assert again.topic_partitions == assignment(orders=[0])  # every field again, the same claim
    out = member.respond(again, epoch=7, assigned=(*assignment(orders=[0]), TopicIdPartitions(refunds, (0,))))
    step = only(out, DeliverStep).step
    assert (step.revoked, step.assigned) == (frozenset(), tps("refunds", 0))


def test_a_heartbeat_sent_while_partitions_are_being_taken_does_not_report_the_old_owned_set() -> None:
    """kgroup, beyond Java (found by the simulator on the consumer protocol, seed 5267).

    A heartbeat with an error answer makes the member resend every field (Java's
    ``HeartbeatState.reset``), the owned partitions too. Sent while the poll thread is taking the
    partitions of the member's target, it would report the owned set from before: a coordinator
    with a newer target then finds the member owns none of the partitions it is to give up, and
    gives them to another member at once. So such a heartbeat leaves the owned partitions out
    ("unchanged": the coordinator goes on assuming the member has what it was given); the
    acknowledgement after the step reports them.
    """
    member = Member()
    first = member.join()
    member.handle(MetadataUpdated(NAMES))
    step = only(member.respond(first, epoch=5, assigned=assignment(orders=[0, 1, 2])), DeliverStep).step
    assert step.assigned == tps("orders", 0, 1, 2)
    # while the poll thread takes them, the coordinator moves: the member finds it again and
    # heartbeats with every field
    out = member.handle(CoordinatorDead("a commit returned NOT_COORDINATOR"))
    beats: list[SendConsumerGroupHeartbeat] = []
    for _ in range(10):
        if any(isinstance(c, SendFindCoordinator) for c in out):
            out = out + member.find_coordinator(out)
        beats = [c for c in out if isinstance(c, SendConsumerGroupHeartbeat)]
        if beats:
            break
        out = member.until_next_deadline()
    (hb,) = beats
    assert hb.member_epoch == 5
    assert hb.topic_partitions is None, "the owned set from before the step must not be reported"
    none_of(member.respond(hb, epoch=5), SendConsumerGroupHeartbeat)
    ack = only(member.complete(step), SendConsumerGroupHeartbeat)
    assert ack.topic_partitions == assignment(orders=[0, 1, 2])
