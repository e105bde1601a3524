"""ConsumerGroupMachine when the group coordinator moves or dies (KIP-848), on virtual time.

What Java's ``ConsumerHeartbeatRequestManager`` and ``CoordinatorRequestManager`` do, and the
machine must too: NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE make the member find the
coordinator again and heartbeat as soon as it is found; FindCoordinator itself is never sent
sooner than ``retry_backoff_ms`` after the previous answer (``RequestState.onSuccessfulAttempt``
keeps the minimal backoff), so a coordinator that answers NOT_COORDINATOR while it loads is not
asked in a tight loop; a disconnect backs the heartbeat off; through all of it the member keeps
its epoch and its partitions, and heartbeats to the new coordinator with every field. The
3-node Apache Kafka test of the same is ``tests/integration/test_kip848_failover.py``.
"""

from __future__ import annotations

import pytest

from kgroup._error_codes import COORDINATOR_NOT_AVAILABLE, NONE, NOT_COORDINATOR
from kgroup.membership.commands import (
    DeliverStep,
    SendConsumerGroupHeartbeat,
    SendFindCoordinator,
)
from kgroup.membership.consumer_group import (
    MemberState,
)
from kgroup.membership.events import (
    FindCoordinatorResponded,
    RequestFailed,
)
from tests.unit.test_kip848_machine import COORDINATOR, Member, assignment, none_of, only, tps

NEW_COORDINATOR = 8


def found(member: Member, find: SendFindCoordinator, node_id: int = COORDINATOR) -> list[object]:
    return member.handle(FindCoordinatorResponded(request_id=find.request_id, error_code=NONE, node_id=node_id,
                                                  host="broker", port=9092))


@pytest.mark.parametrize("code", [NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE])
def test_find_coordinator_waits_retry_backoff_after_the_last_answer(code: int) -> None:
    """A coordinator that names itself but answers ``code`` (still loading) is asked again only after the backoff."""
    member = Member(retry_backoff_ms=100, retry_backoff_max_ms=1000)
    member.stable_with(orders=[0])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    find = only(member.respond(hb, code), SendFindCoordinator)
    hb = only(found(member, find), SendConsumerGroupHeartbeat)  # at once once found: no heartbeat backoff
    answered = member.now
    out = member.respond(hb, code)  # at the same instant
    none_of(out, SendFindCoordinator)
    assert member.machine.coordinator is None
    again = only(member.until_next_deadline(), SendFindCoordinator)
    assert again.request_id != find.request_id
    assert 0.08 <= member.now - answered <= 0.12  # retry_backoff_ms, jittered
    hb = only(found(member, again), SendConsumerGroupHeartbeat)
    assert hb.member_epoch == 5 and hb.topic_partitions == assignment(orders=[0])


def test_a_coordinator_answering_not_coordinator_is_not_asked_in_a_tight_loop() -> None:
    """Every request answered at once with NOT_COORDINATOR: FindCoordinator at most once per ``retry_backoff_ms``."""
    member = Member(retry_backoff_ms=100, retry_backoff_max_ms=1000)
    member.stable_with(orders=[0])
    out = member.until_next_deadline()
    start = member.now
    finds = 0
    for _ in range(1000):  # the answers the broker gives, each at once; time moves only between deadlines
        if not out:
            if member.now - start >= 2.0:
                break
            out = member.until_next_deadline()
            continue
        command, out = out[0], out[1:]
        if isinstance(command, SendFindCoordinator):
            finds += 1
            out += found(member, command)
        elif isinstance(command, SendConsumerGroupHeartbeat):
            out += member.respond(command, NOT_COORDINATOR)
    assert member.now - start >= 2.0, f"{finds} FindCoordinator requests without time moving on"
    assert 2.0 / 0.12 <= finds <= 2.0 / 0.08 + 1
    assert member.state is MemberState.STABLE and member.machine.owned == tps("orders", 0)


def test_a_dead_coordinator_is_left_for_the_new_one_with_the_same_epoch_and_partitions() -> None:
    """The coordinator's node dies: disconnects, FindCoordinator names it until it is fenced, then the new one."""
    member = Member(retry_backoff_ms=100, retry_backoff_max_ms=1000)
    member.stable_with(orders=[0, 1])
    hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
    waits = []
    for _ in range(5):  # the dead node is still the partition leader: named again, and refuses connections
        failed_at = member.now
        out = member.handle(RequestFailed(request_id=hb.request_id, reason="KafkaConnectionError: 111 ECONNREFUSED"))
        assert member.machine.coordinator is None
        out = found(member, only(out or member.until_next_deadline(), SendFindCoordinator))
        none_of(out, SendConsumerGroupHeartbeat)  # the heartbeat backs off after a failure
        hb = only(member.until_next_deadline(), SendConsumerGroupHeartbeat)
        waits.append(member.now - failed_at)
        assert hb.node_id == COORDINATOR
    for wait, base in zip(waits, [0.1, 0.2, 0.4, 0.8, 1.0], strict=True):
        assert base * 0.8 - 0.001 <= wait <= base * 1.2 + 0.001
    out = member.respond(hb, NOT_COORDINATOR)  # fenced by the controller; a survivor leads the partition now
    moved = only(found(member, only(out or member.until_next_deadline(), SendFindCoordinator), NEW_COORDINATOR),
                 SendConsumerGroupHeartbeat)
    assert moved.node_id == NEW_COORDINATOR and moved.member_epoch == 5
    assert moved.topic_partitions == assignment(orders=[0, 1]) and moved.subscribed_topic_names == ("orders",)
    assert member.respond(moved, epoch=5) == []
    assert member.state is MemberState.STABLE and member.machine.owned == tps("orders", 0, 1)
    steps = [c.step for c in member.sent if isinstance(c, DeliverStep)]
    assert len(steps) == 1 and steps[0].assigned == tps("orders", 0, 1)  # the first assignment only: nothing lost
