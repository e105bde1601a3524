"""ConsumerGroupMachine as a ``Member`` of the shared membership core (kgroup.membership.core).

The group thread and the poll thread run ``group_protocol="consumer"`` on the shared vocabulary
with no translation between; these tests drive the machine with plain numbers for time and
check what the group thread and the poll thread get: the shared ``SendFindCoordinator``,
``RebalanceStep`` values whose generation is the member epoch, the heartbeat commands, the leave
epochs of each close operation, and the states as the poll thread reads them (its own by name).
"""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from kgroup.config import ConsumerConfig
from kgroup.errors import ProtocolViolation
from kgroup.membership import commands as cmd
from kgroup.membership import consumer_group as cg
from kgroup.membership import events as ev
from kgroup.membership.consumer_group import STATES, ConsumerGroupMachine
from kgroup.membership.core import Member
from kgroup.membership.machine import GroupMachine
from kgroup.membership.states import MemberState
from kgroup.protocol.consumer_group_heartbeat import TopicIdPartitions
from kgroup.types import Generation, TopicPartition

ORDERS = uuid.UUID(int=1)
COORDINATOR = 3


def member(**config: Any) -> ConsumerGroupMachine:
    settings: dict[str, Any] = {"bootstrap_servers": "k:9092", "group_id": "g", "group_protocol": "consumer"}
    settings.update(config)
    consumer_config = ConsumerConfig(**settings)
    return ConsumerGroupMachine(
        consumer_config, server_assignor=consumer_config.group_remote_assignor, rng=random.Random(7)
    )


def one(commands: list[Any], kind: type) -> Any:
    found = [c for c in commands if isinstance(c, kind)]
    assert len(found) == 1, commands
    return found[0]


def joined(m: ConsumerGroupMachine, now: float = 0.0) -> cmd.SendConsumerGroupHeartbeat:
    """Subscribe, poll, find the coordinator: the join heartbeat."""
    m.handle(ev.Subscribe({"orders"}), now)
    find = one(m.handle(ev.Polled(), now), cmd.SendFindCoordinator)
    assert find.key == "g"
    out = m.handle(
        ev.FindCoordinatorResponded(request_id=find.request_id, error_code=0, node_id=COORDINATOR, host="h", port=1),
        now,
    )
    return one(out, cmd.SendConsumerGroupHeartbeat)  # type: ignore[no-any-return]


def answer(m: ConsumerGroupMachine, sent: cmd.SendConsumerGroupHeartbeat, epoch: int, *partitions: int,
           now: float = 0.0) -> list[Any]:
    assignment = (TopicIdPartitions(ORDERS, partitions),) if partitions else None
    return m.handle(
        ev.ConsumerGroupHeartbeatResponded(
            request_id=sent.request_id, error_code=0, member_id=sent.member_id, member_epoch=epoch,
            heartbeat_interval_ms=5000, assignment=assignment,
        ),
        now,
    )


def stable(m: ConsumerGroupMachine, epoch: int, *partitions: int) -> cmd.RebalanceStep:
    """Join and reconcile ``partitions``; return the step the poll thread ran."""
    m.handle(ev.MetadataUpdated({ORDERS: "orders"}), 0.0)  # the group thread's topic ids, known already
    sent = joined(m)
    step = one(answer(m, sent, epoch, *partitions), cmd.DeliverStep).step
    ack = one(m.handle(ev.StepCompleted(step.step_id), 0.0), cmd.SendConsumerGroupHeartbeat)
    answer(m, ack, epoch)
    assert m.snapshot().state is MemberState.STABLE
    return step  # type: ignore[no-any-return]


def test_both_machines_are_members():
    members: list[Member] = [member(), GroupMachine(ConsumerConfig(bootstrap_servers="k:9092", group_id="g"))]
    assert all(isinstance(m.snapshot().state, MemberState) for m in members)
    assert [m.state_name for m in members] == ["UNSUBSCRIBED", "UNJOINED"]
    assert [m.snapshot().state_name for m in members] == ["UNSUBSCRIBED", "UNJOINED"]


def test_every_consumer_protocol_state_has_a_classic_one():
    assert set(STATES) == set(cg.MemberState)
    assert STATES[cg.MemberState.FATAL] is MemberState.FATAL
    assert STATES[cg.MemberState.CLOSED] is MemberState.CLOSED


def test_the_join_heartbeat_carries_the_server_assignor_and_the_instance_id():
    sent = joined(member(group_remote_assignor="range", group_instance_id="i-1"))
    assert (sent.member_epoch, sent.server_assignor, sent.instance_id) == (0, "range", "i-1")
    assert sent.subscribed_topic_names == ("orders",)
    assert sent.node_id == COORDINATOR


def test_the_step_is_a_rebalance_step_in_the_member_epoch():
    m = member()
    step = stable(m, 4, 0, 1)
    assert step.generation == Generation(4, m.member_id)
    assert step.assigned == step.owned == frozenset({TopicPartition("orders", 0), TopicPartition("orders", 1)})
    assert step.invoke_assigned and not step.revoked
    snap = m.snapshot()
    assert snap.generation == Generation(4, m.member_id)  # commits carry the epoch and the id
    assert snap.state is MemberState.STABLE and snap.coordinator == COORDINATOR
    assert snap.state_name == "STABLE"


def test_without_an_epoch_there_is_no_generation_to_commit_with():
    m = member()
    joined(m)
    assert m.snapshot().generation == Generation()
    assert m.snapshot().state is MemberState.JOINING
    assert m.snapshot().state_name == "JOINING"


@pytest.mark.parametrize(
    ("instance_id", "send_leave_group", "epoch"),
    [(None, None, -1), ("i-1", None, -2), ("i-1", True, -1), ("i-1", False, -2)],
)
def test_close_sends_javas_leave_epoch(instance_id, send_leave_group, epoch):
    m = member(group_instance_id=instance_id)
    stable(m, 2, 0)
    out = m.handle(ev.Leave("closing", send_leave_group=send_leave_group), 1.0)
    step = one(out, cmd.DeliverStep).step
    assert step.revoked == frozenset({TopicPartition("orders", 0)})
    leave = one(m.handle(ev.StepCompleted(step.step_id), 1.0), cmd.SendConsumerGroupHeartbeat)
    assert leave.member_epoch == epoch
    m.handle(ev.ConsumerGroupHeartbeatResponded(request_id=leave.request_id, error_code=0, member_id=leave.member_id,
                                   member_epoch=epoch, heartbeat_interval_ms=0), 1.0)
    assert m.snapshot().state is MemberState.CLOSED


def test_a_dynamic_member_remaining_in_the_group_sends_nothing():
    m = member()
    stable(m, 2, 0)
    step = one(m.handle(ev.Leave("closing", send_leave_group=False), 1.0), cmd.DeliverStep).step
    assert m.handle(ev.StepCompleted(step.step_id), 1.0) == []
    assert m.snapshot().state is MemberState.CLOSED


def test_a_rejoin_request_and_a_commit_error_change_nothing():
    m = member()
    stable(m, 2, 0)
    before = m.snapshot()
    # (before the first prompt heartbeat after the join, retry_backoff_ms later: no heartbeat is due)
    assert m.handle(ev.RequestRejoin("user"), 0.05) == []
    assert m.handle(ev.CommitErrorObserved(before.generation, 22), 0.05) == []
    assert m.snapshot() == before


def test_a_pattern_subscription_passes_through():
    m = member()
    m.handle(ev.Subscribe(frozenset(), pattern="orders-.*"), 0.0)
    find = one(m.handle(ev.Polled(), 0.0), cmd.SendFindCoordinator)
    out = m.handle(ev.FindCoordinatorResponded(request_id=find.request_id, error_code=0, node_id=1), 0.0)
    sent = one(out, cmd.SendConsumerGroupHeartbeat)
    assert sent.subscribed_topic_regex == "orders-.*"


def test_a_classic_response_is_a_bug():
    m = member()
    with pytest.raises(ProtocolViolation, match="unknown event"):
        m.handle(ev.AssignmentFailed(1, RuntimeError("x")), 0.0)
