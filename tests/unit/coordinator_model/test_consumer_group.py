"""ConsumerGroupModel: the broker side of ConsumerGroupHeartbeat (KIP-848), on a fake clock."""

from __future__ import annotations

import uuid

import pytest

from kgroup import _error_codes as codes
from kgroup.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest as Req
from kgroup.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse, TopicIdPartitions
from kgroup.protocol.group_api import CommitPartition, CommitTopic, OffsetCommitRequest, OffsetFetchRequest
from kgroup.testing import FakeClock
from kgroup.testing.coordinator import ConsumerGroupConfig, ConsumerGroupModel
from kgroup.testing.coordinator._server_assignors import AssignmentSpec, MemberSpec, assign

T = uuid.UUID(int=1)
U = uuid.UUID(int=2)
G = "g"


Topics = dict[str, tuple[uuid.UUID, int]]


def make(partitions: int = 4, **config: object) -> tuple[ConsumerGroupModel, FakeClock, Topics]:
    clock = FakeClock()
    topics = {"t": (T, partitions)}
    config.setdefault("assignment_interval_ms", 0)
    model = ConsumerGroupModel(ConsumerGroupConfig(**config), clock=clock, topics=lambda: topics)  # type: ignore[arg-type]
    return model, clock, topics


def join(model: ConsumerGroupModel, member: str, *, instance: str | None = None, topics: tuple[str, ...] = ("t",),
         assignor: str | None = None) -> ConsumerGroupHeartbeatResponse:
    return model.heartbeat(Req(group_id=G, member_id=member, member_epoch=0, instance_id=instance,
                               rebalance_timeout_ms=10000, subscribed_topic_names=topics, server_assignor=assignor,
                               topic_partitions=())).response


def beat(model: ConsumerGroupModel, member: str, epoch: int, owned: dict[uuid.UUID, list[int]] | None = None,
         instance: str | None = None) -> ConsumerGroupHeartbeatResponse:
    parts = None if owned is None else tuple(TopicIdPartitions(t, tuple(ps)) for t, ps in owned.items())
    return model.heartbeat(Req(group_id=G, member_id=member, member_epoch=epoch, instance_id=instance,
                               topic_partitions=parts)).response


def parts(response: ConsumerGroupHeartbeatResponse) -> dict[uuid.UUID, list[int]] | None:
    if response.assignment is None:
        return None
    return {tp.topic_id: list(tp.partitions) for tp in response.assignment}


def test_a_first_member_gets_everything_at_epoch_2() -> None:
    model, _, _ = make()
    r = join(model, "a")
    assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (0, "a", 2, 5000)
    assert parts(r) == {T: [0, 1, 2, 3]}
    assert model.group_state(G) == "Stable"


def test_a_second_member_waits_for_the_revocation_then_gets_its_share() -> None:
    model, _, _ = make()
    join(model, "a")
    b = join(model, "b")
    assert (b.member_epoch, parts(b)) == (3, {})  # its partitions are still a's
    a = beat(model, "a", 2, {T: [0, 1, 2, 3]})
    assert a.member_epoch == 2 and parts(a) == {T: [0, 1]}  # revoke 2, 3 first, same epoch
    b = beat(model, "b", 3)
    assert b.member_epoch == 3 and b.assignment is None  # still unreleased
    a = beat(model, "a", 2, {T: [0, 1]})
    assert a.member_epoch == 3
    b = beat(model, "b", 3, {})
    assert parts(b) == {T: [2, 3]}
    assert model.group_state(G) == "Stable"


def test_epochs_fence_and_unknown_members() -> None:
    model, _, _ = make()
    join(model, "a")
    assert beat(model, "a", 5).error_code == codes.FENCED_MEMBER_EPOCH
    assert beat(model, "x", 2).error_code == codes.UNKNOWN_MEMBER_ID
    # the previous epoch with a subset of the assignment: the bumped answer was lost, accepted
    assert join(model, "a").member_epoch == 2
    assert model.heartbeat(Req(group_id="other", member_id="a", member_epoch=3)).response.error_code == (
        codes.GROUP_ID_NOT_FOUND
    )


def test_session_timeout_removes_the_member_and_frees_its_partitions() -> None:
    model, clock, _ = make(session_timeout_ms=3000)
    join(model, "a")
    join(model, "b")
    clock.advance(2.0)
    beat(model, "b", 3, {})
    clock.advance(1.5)
    model.tick()
    assert "a" not in model.members(G)
    b = beat(model, "b", 3, {})
    assert (b.member_epoch, parts(b)) == (4, {T: [0, 1, 2, 3]})


def test_rebalance_timeout_fences_a_member_that_keeps_its_revoked_partitions() -> None:
    model, clock, _ = make()
    model.heartbeat(Req(group_id=G, member_id="a", member_epoch=0, rebalance_timeout_ms=2000,
                        subscribed_topic_names=("t",), topic_partitions=()))
    join(model, "b")
    beat(model, "a", 2, {T: [0, 1, 2, 3]})  # now pending revocation of 2, 3
    clock.advance(1.0)
    beat(model, "a", 2, {T: [0, 1, 2, 3]})  # still holding them
    clock.advance(1.0)
    model.tick()
    assert "a" not in model.members(G)
    assert any(e.kind == "member_removed" and e.detail == "rebalance timeout" for e in model.events)


def test_leave_and_static_leave() -> None:
    model, _, _ = make()
    join(model, "a", instance="i")
    r = model.heartbeat(Req(group_id=G, member_id="a", member_epoch=-2, instance_id="i")).response
    assert (r.error_code, r.member_epoch) == (0, -2)
    # a new process with the instance id takes over the same partitions at the same epoch
    again = join(model, "a2", instance="i")
    assert again.error_code == 0 and again.member_epoch == 2 and parts(again) == {T: [0, 1, 2, 3]}
    assert join(model, "a3", instance="i").error_code == codes.UNRELEASED_INSTANCE_ID
    wrong = model.heartbeat(Req(group_id=G, member_id="zz", member_epoch=-1, instance_id="i")).response
    assert wrong.error_code == codes.FENCED_INSTANCE_ID
    gone = model.heartbeat(Req(group_id=G, member_id="a2", member_epoch=-1, instance_id="i")).response
    assert (gone.error_code, gone.member_epoch) == (0, -1)
    assert "a2" not in model.members(G)


def test_invalid_requests_and_assignors() -> None:
    model, _, _ = make()
    assert model.heartbeat(Req(group_id=G, member_id="a", member_epoch=0, subscribed_topic_names=("t",),
                               topic_partitions=())).response.error_code == codes.INVALID_REQUEST
    assert join(model, "a", topics=()).error_code == codes.INVALID_REQUEST
    assert join(model, "a", assignor="sticky").error_code == codes.UNSUPPORTED_ASSIGNOR
    assert model.heartbeat(Req(group_id=G, member_id="a", member_epoch=-3)).response.error_code == (
        codes.INVALID_REQUEST
    )


def test_offset_commit_needs_the_current_member_epoch() -> None:
    model, _, _ = make()
    join(model, "a")

    def commit(member: str, epoch: int) -> int:
        request = OffsetCommitRequest(group_id=G, generation_id=epoch, member_id=member, topics=(
            CommitTopic(name="t", partitions=(CommitPartition(partition_index=0, committed_offset=5),)),))
        return model.offset_commit(request).response.topics[0].partitions[0].error_code

    assert commit("a", 2) == codes.NONE
    assert commit("a", 1) == codes.STALE_MEMBER_EPOCH
    assert commit("b", 2) == codes.UNKNOWN_MEMBER_ID
    assert commit("", -1) == codes.UNKNOWN_MEMBER_ID  # the group has members
    fetched = model.offset_fetch(OffsetFetchRequest(group_id=G, topics=None)).response
    assert fetched.topics[0].partitions[0].committed_offset == 5
    assert model.offset_fetch(OffsetFetchRequest(group_id=G), member_id="a", member_epoch=0).response.error_code == (
        codes.STALE_MEMBER_EPOCH
    )


def test_partitions_added_bump_the_group_epoch() -> None:
    model, _, topics = make(partitions=2)
    join(model, "a")
    topics["t"] = (T, 3)
    r = beat(model, "a", 2, {T: [0, 1]})
    assert (r.member_epoch, parts(r)) == (3, {T: [0, 1, 2]})


def test_restart_loads_then_rearms_the_session() -> None:
    model, clock, _ = make(session_timeout_ms=5000)
    join(model, "a")
    model.restart(load_ms=1000)
    assert beat(model, "a", 2, {T: [0, 1, 2, 3]}).error_code == codes.COORDINATOR_LOAD_IN_PROGRESS
    clock.advance(1.0)
    model.tick()
    clock.advance(4.9)
    model.tick()
    assert "a" in model.members(G)
    clock.advance(0.2)
    model.tick()
    assert "a" not in model.members(G)


@pytest.mark.parametrize("name", ["uniform", "range"])
def test_assignors_are_complete_and_exclusive(name: str) -> None:
    members = tuple(MemberSpec(member_id=m, instance_id=None, subscribed=frozenset({T, U}), current={})
                    for m in ("c", "a", "b"))
    plan = assign(name, AssignmentSpec(members=members, partitions={T: 4, U: 3}))
    seen = [(t, p) for a in plan.values() for t, ps in a.items() for p in ps]
    assert sorted(seen) == sorted([(T, p) for p in range(4)] + [(U, p) for p in range(3)])
    sizes = sorted(sum(len(ps) for ps in a.values()) for a in plan.values())
    assert sizes[-1] - sizes[0] <= (1 if name == "uniform" else 2)


def test_range_orders_static_members_first_and_uniform_is_sticky() -> None:
    members = (MemberSpec(member_id="a", instance_id=None, subscribed=frozenset({T}), current={}),
               MemberSpec(member_id="z", instance_id="s", subscribed=frozenset({T}), current={}))
    assert assign("range", AssignmentSpec(members=members, partitions={T: 4}))["z"] == {T: frozenset({0, 1})}
    sticky = (MemberSpec(member_id="a", instance_id=None, subscribed=frozenset({T}), current={T: frozenset({3})}),
              MemberSpec(member_id="b", instance_id=None, subscribed=frozenset({T}), current={}))
    plan = assign("uniform", AssignmentSpec(members=sticky, partitions={T: 4}))
    assert 3 in plan["a"][T] and len(plan["a"][T]) == 2


def test_a_new_target_waits_for_the_assignment_interval() -> None:
    model, clock, _ = make(assignment_interval_ms=1000)
    join(model, "a")
    assert join(model, "b").member_epoch == 2  # group epoch 3, target still epoch 2
    clock.advance(0.5)
    assert parts(beat(model, "a", 2, {T: [0, 1, 2, 3]})) is None
    clock.advance(0.5)
    assert parts(beat(model, "a", 2, {T: [0, 1, 2, 3]})) == {T: [0, 1]}
    assert model.assignment_epoch(G) == 3
