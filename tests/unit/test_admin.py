"""GroupAdmin over a scripted AdminTransport: decoding, retries, deadlines, typed errors."""

from __future__ import annotations

import concurrent.futures
import time

import pytest

from kgroup import _error_codes as codes
from kgroup._io.transport import CommittedOffset, OffsetFetchResult
from kgroup.admin import (
    DEFAULT_REMOVE_REASON,
    AdminError,
    AdminTimeoutError,
    GroupAdmin,
    GroupListing,
    GroupNotEmptyError,
    GroupNotFoundError,
    PartitionLag,
    ResetTarget,
    UnsupportedVersionError,
)
from kgroup.membership import events as ev
from kgroup.protocol.consumer_group_describe import DescribedConsumerGroup
from kgroup.protocol.consumer_protocol import Assignment, Subscription, encode_assignment, encode_subscription
from kgroup.protocol.group_api import (
    DescribedGroup,
    DescribedMember,
    LeaveGroupResponse,
    LeaveMemberResult,
    ListedGroup,
)
from kgroup.protocol.share_group_admin import DescribedShareGroup
from kgroup.testing import FakeClock
from kgroup.types import OffsetAndMetadata, PartitionInfo, TopicPartition

T0, T1, T2 = (TopicPartition("orders", p) for p in range(3))


def done(value):
    f = concurrent.futures.Future()
    f.set_result(value)
    return f


def failed(exc):
    f = concurrent.futures.Future()
    f.set_exception(exc)
    return f


class ScriptedTransport:
    """Answers from queues; each queue's last answer repeats."""

    def __init__(self, **answers):
        self.answers = {k: list(v) for k, v in answers.items()}
        self.calls: list[tuple] = []
        self.closed = False

    def _next(self, name):
        queue = self.answers[name]
        value = queue.pop(0) if len(queue) > 1 else queue[0]
        return value() if callable(value) else value

    def send(self, command, group_id):
        self.calls.append(("find", group_id))
        return self._next("find")

    def describe_groups(self, group_ids, node_id, timeout_ms):
        self.calls.append(("describe", tuple(group_ids), node_id))
        return self._next("describe")

    def offset_fetch_all(self, group_id, node_id, timeout_ms):
        self.calls.append(("fetch_all", group_id, node_id))
        return self._next("fetch_all")

    def list_offsets(self, partitions, spec, timeout_ms):
        self.calls.append(("list_offsets", tuple(partitions), spec))
        return self._next(f"list_offsets_{spec}" if f"list_offsets_{spec}" in self.answers else "list_offsets")

    def offsets_for_times(self, timestamps, timeout_ms):
        self.calls.append(("offsets_for_times", dict(timestamps)))
        return self._next("offsets_for_times")

    def describe_topics(self, topics, timeout_ms):
        self.calls.append(("describe_topics", tuple(topics)))
        return self._next("describe_topics")

    def leave_group_members(self, group_id, instance_ids, reason, node_id, timeout_ms):
        self.calls.append(("leave", group_id, tuple(instance_ids), reason, node_id))
        return self._next("leave")

    def consumer_group_describe(self, group_ids, node_id, timeout_ms):
        """A broker without ConsumerGroupDescribe (API 69), unless answers are scripted (not logged then)."""
        if "consumer_describe" in self.answers:
            self.calls.append(("consumer_describe", tuple(group_ids), node_id))
            return self._next("consumer_describe")
        return done(tuple(DescribedConsumerGroup(error_code=codes.UNSUPPORTED_VERSION, group_id=g, group_state="",
                                                 group_epoch=-1, assignment_epoch=-1, assignor_name="")
                          for g in group_ids))

    def share_group_describe(self, group_ids, node_id, timeout_ms):
        """A broker without share groups (API 77 unsupported), unless answers are scripted (not logged then)."""
        if "share_describe" in self.answers:
            self.calls.append(("share_describe", tuple(group_ids), node_id))
            return self._next("share_describe")
        return done(tuple(DescribedShareGroup(error_code=codes.UNSUPPORTED_VERSION, group_id=g) for g in group_ids))

    def describe_share_group_offsets(self, group_id, node_id, timeout_ms):
        self.calls.append(("share_offsets", group_id, node_id))
        return self._next("share_offsets")

    def alter_share_group_offsets(self, group_id, offsets, node_id, timeout_ms):
        self.calls.append(("alter_share_offsets", group_id, dict(offsets), node_id))
        return self._next("alter_share_offsets")

    def delete_share_group_offsets(self, group_id, topics, node_id, timeout_ms):
        self.calls.append(("delete_share_offsets", group_id, tuple(topics), node_id))
        return self._next("delete_share_offsets")

    def list_groups(self, timeout_ms):
        self.calls.append(("list_groups",))
        return self._next("list_groups")

    def delete_groups(self, group_ids, node_id, timeout_ms):
        self.calls.append(("delete_groups", tuple(group_ids), node_id))
        return self._next("delete_groups")

    def alter_offsets(self, group_id, offsets, node_id, timeout_ms):
        self.calls.append(("alter_offsets", group_id, dict(offsets), node_id))
        return self._next("alter_offsets")

    def describe_group_config_entries(self, group_id, timeout_ms):
        self.calls.append(("describe_configs", group_id))
        return self._next("describe_configs")

    def incremental_alter_group_configs(self, group_id, changes, validate_only, timeout_ms):
        self.calls.append(("alter_configs", group_id, tuple(changes), validate_only))
        return self._next("alter_configs")

    def close(self):
        self.closed = True


def found(node=1):
    return lambda: done(ev.FindCoordinatorResponded(request_id=1, error_code=0, node_id=node, host="h", port=9092))


def group(state="Stable", members=(), code=0, protocol_type="consumer"):
    return lambda: done((DescribedGroup(error_code=code, group_id="g", group_state=state, protocol_type=protocol_type,
                                        protocol_data="range" if state == "Stable" else "", members=tuple(members)),))


def member(member_id, instance, partitions, topics=("orders",)):
    return DescribedMember(
        member_id=member_id, group_instance_id=instance, client_id="cid", client_host="/127.0.0.1",
        member_metadata=encode_subscription(Subscription(topics=topics)) if topics is not None else b"",
        member_assignment=encode_assignment(Assignment(partitions=tuple(partitions))),
    )


def test_describe_decodes_assignments_and_subscriptions():
    t = ScriptedTransport(find=[found()], describe=[group(members=[member("a-1", "a", [T0, T1]),
                                                                  member("b-1", None, [T2])])])
    d = GroupAdmin(t).describe_group("g")
    assert d.state == "Stable" and d.protocol == "range" and d.generation_id is None
    assert d.coordinator.node_id == 1
    assert [(m.member_id, m.group_instance_id, m.assignment, m.subscribed_topics) for m in d.members] == [
        ("a-1", "a", (T0, T1), ("orders",)),
        ("b-1", None, (T2,), ("orders",)),
    ]
    assert d.owner_of(T2).member_id == "b-1"


def test_describe_without_metadata_and_with_garbage():
    bad = DescribedMember(client_id="c", client_host="/h", member_id="x", member_metadata=b"",
                          member_assignment=b"\x00\x03\xff")
    t = ScriptedTransport(find=[found()], describe=[group("PreparingRebalance", [member("a", None, [], None), bad])])
    d = GroupAdmin(t).describe_group("g")
    assert d.members[0].subscribed_topics is None and d.members[0].assignment == ()
    assert d.members[1].decode_error is not None and "assignment" in d.members[1].decode_error


def test_not_a_consumer_group_is_refused():
    t = ScriptedTransport(find=[found()], describe=[group(protocol_type="connect")])
    with pytest.raises(AdminError, match="not a consumer group"):
        GroupAdmin(t).describe_group("g")


def test_not_coordinator_rediscovers_and_retries():
    t = ScriptedTransport(find=[found(1), found(2)], describe=[group(code=16), group()])
    d = GroupAdmin(t, retry_backoff_ms=1).describe_group("g")
    assert d.coordinator.node_id == 2
    assert [c[0] for c in t.calls] == ["find", "describe", "find", "describe"]


def test_lost_connection_is_retried_until_the_deadline():
    t = ScriptedTransport(find=[lambda: done(ev.RequestFailed(1, "ConnectionError: refused"))])
    start = time.monotonic()
    with pytest.raises(AdminTimeoutError, match="refused"):
        GroupAdmin(t, timeout_ms=300, retry_backoff_ms=20).describe_group("g")
    assert time.monotonic() - start < 2


def test_retries_wait_on_the_injected_clock_not_the_real_one():
    # COORDINATOR_NOT_AVAILABLE 9 times: 9 waits of retry_backoff_ms (1 s) on the fake clock
    not_available = ev.FindCoordinatorResponded(request_id=1, error_code=codes.COORDINATOR_NOT_AVAILABLE)
    answers = [lambda: done(not_available)] * 9 + [found()]
    t = ScriptedTransport(find=answers, describe=[group()])
    clock = FakeClock()
    start = time.monotonic()
    d = GroupAdmin(t, timeout_ms=30_000, retry_backoff_ms=1000, clock=clock).describe_group("g")
    assert d.state == "Stable"
    assert clock.monotonic() == 9.0
    assert [c[0] for c in t.calls] == ["find"] * 10 + ["describe"]
    assert time.monotonic() - start < 1.0


def test_the_deadline_is_on_the_injected_clock():
    not_coordinator = ev.FindCoordinatorResponded(request_id=1, error_code=codes.NOT_COORDINATOR)
    t = ScriptedTransport(find=[lambda: done(not_coordinator)])
    clock = FakeClock()
    start = time.monotonic()
    with pytest.raises(AdminTimeoutError, match="NOT_COORDINATOR"):
        GroupAdmin(t, timeout_ms=60_000, retry_backoff_ms=5000, clock=clock).committed_offsets("g")
    # attempts at 0, 5, ..., 55 s; a 13th would start at the deadline (60 s): none is made
    assert len(t.calls) == 12
    assert clock.monotonic() == 55.0
    assert time.monotonic() - start < 1.0


def test_a_future_that_never_completes_hits_the_deadline():
    t = ScriptedTransport(find=[found()], describe=[concurrent.futures.Future])
    start = time.monotonic()
    with pytest.raises(AdminTimeoutError):
        GroupAdmin(t, timeout_ms=200).describe_group("g", timeout_ms=200)
    assert time.monotonic() - start < 10


def test_group_error_is_typed():
    t = ScriptedTransport(find=[found()], describe=[group(code=30)])
    with pytest.raises(AdminError) as info:
        GroupAdmin(t).describe_group("g")
    assert info.value.code == 30 and info.value.error_name == "GROUP_AUTHORIZATION_FAILED"
    t = ScriptedTransport(find=[found()], describe=[group(code=69)])
    with pytest.raises(GroupNotFoundError):
        GroupAdmin(t).describe_group("g")


def test_lag_covers_committed_and_assigned_partitions():
    t = ScriptedTransport(
        find=[found()],
        describe=[group(members=[member("a-1", "a", [T0, T1])])],
        fetch_all=[lambda: done(OffsetFetchResult(0, {T0: CommittedOffset(4, "meta", None, 0),
                                                      T2: CommittedOffset(9, "", None, 0)}))],
        list_offsets=[lambda: done({T0: 10, T1: 3, T2: 8})],
    )
    admin = GroupAdmin(t)
    rows = {r.topic_partition: r for r in admin.lag("g")}
    assert set(rows) == {T0, T1, T2}
    assert (rows[T0].committed_offset, rows[T0].log_end_offset, rows[T0].lag, rows[T0].metadata) == (4, 10, 6, "meta")
    assert (rows[T1].committed_offset, rows[T1].lag, rows[T1].member_id) == (None, None, "a-1")
    assert (rows[T2].lag, rows[T2].member_id) == (0, None)  # committed past the end: lag 0
    assert ("list_offsets", (T0, T1, T2), "latest") in t.calls


def test_unsupported_offset_fetch_is_typed():
    t = ScriptedTransport(find=[found()], fetch_all=[lambda: done(OffsetFetchResult(35, {}))])
    with pytest.raises(UnsupportedVersionError):
        GroupAdmin(t).committed_offsets("g")


def test_remove_members_sends_instance_ids_with_the_default_reason():
    t = ScriptedTransport(find=[found(7)], leave=[lambda: done(LeaveGroupResponse(members=(
        LeaveMemberResult(member_id="", group_instance_id="a", error_code=0),
        LeaveMemberResult(member_id="", group_instance_id="ghost", error_code=25))))])
    results = GroupAdmin(t).remove_members_by_instance_id("g", ["a", "ghost", "a"])
    assert ("leave", "g", ("a", "ghost"), DEFAULT_REMOVE_REASON, 7) in t.calls
    assert [(r.group_instance_id, r.error_code, r.error_name) for r in results] == [
        ("a", 0, None), ("ghost", 25, "UNKNOWN_MEMBER_ID")]


def test_remove_members_on_an_old_broker():
    t = ScriptedTransport(find=[found()], leave=[lambda: done(LeaveGroupResponse(error_code=35))])
    with pytest.raises(UnsupportedVersionError, match="LeaveGroup v3"):
        GroupAdmin(t).remove_members_by_instance_id("g", ["a"])


def test_remove_members_whole_request_unknown_member_means_no_group():
    t = ScriptedTransport(find=[found()], leave=[lambda: done(LeaveGroupResponse(error_code=25))])
    with pytest.raises(GroupNotFoundError):
        GroupAdmin(t).remove_members_by_instance_id("g", ["a"])


def test_remove_members_needs_an_instance_id():
    t = ScriptedTransport(find=[found()])
    with pytest.raises(ValueError):
        GroupAdmin(t).remove_members_by_instance_id("g", [])
    with pytest.raises(ValueError):
        GroupAdmin(t).remove_members_by_instance_id("g", [""])


def test_transport_exception_is_retried_then_times_out():
    t = ScriptedTransport(find=[found()], leave=[lambda: failed(OSError("connection reset"))])
    with pytest.raises(AdminTimeoutError, match="connection reset"):
        GroupAdmin(t, timeout_ms=200, retry_backoff_ms=10).remove_members_by_instance_id("g", ["a"])


def test_close_closes_an_owned_transport_only():
    t = ScriptedTransport()
    GroupAdmin(t).close()
    assert not t.closed
    with GroupAdmin(t, owns_transport=True):
        pass
    assert t.closed


def test_partition_lag_says_when_the_committed_offset_is_past_the_log_end():
    assert PartitionLag(T0, 12, 10, 0).committed_beyond_log_end
    assert not PartitionLag(T0, 10, 10, 0).committed_beyond_log_end
    assert not PartitionLag(T0, None, 10, None).committed_beyond_log_end
    assert not PartitionLag(T0, 12, None, None).committed_beyond_log_end


# ---------------------------------------------------------------------------------- groups and admin commits
def answer(value):
    return lambda: done(value)


def test_list_groups_keeps_consumer_groups_once_sorted():
    port = ScriptedTransport(list_groups=[answer((0, (
        ListedGroup(group_id="b", protocol_type="consumer", group_state="Stable", group_type="classic"),
        ListedGroup(group_id="connect-x", protocol_type="connect", group_state="Stable", group_type="classic"),
        ListedGroup(group_id="a", protocol_type="", group_state="Empty", group_type=""),  # a v4 answer: no type
        ListedGroup(group_id="b", protocol_type="consumer", group_state="Stable", group_type="classic"),  # again
    )))])
    groups = GroupAdmin(port).list_groups()
    assert groups == (GroupListing("a", "", "Empty", None), GroupListing("b", "consumer", "Stable", "classic"))


def test_list_groups_retries_a_loading_coordinator_and_types_other_errors():
    port = ScriptedTransport(list_groups=[answer((codes.COORDINATOR_LOAD_IN_PROGRESS, ())),
                                          answer((0, (ListedGroup(group_id="a", protocol_type="consumer"),)))])
    assert [g.group_id for g in GroupAdmin(port, retry_backoff_ms=1).list_groups()] == ["a"]
    assert len(port.calls) == 2
    port = ScriptedTransport(list_groups=[answer((codes.CLUSTER_AUTHORIZATION_FAILED, ()))])
    with pytest.raises(AdminError) as info:
        GroupAdmin(port).list_groups()
    assert info.value.error_name == "CLUSTER_AUTHORIZATION_FAILED" and info.value.api == "ListGroups"


def test_list_groups_client_side_failures_retry_until_the_deadline():
    port = ScriptedTransport(list_groups=[lambda: failed(OSError("no route to host"))])
    clock = FakeClock()
    with pytest.raises(AdminTimeoutError, match="no route to host"):
        GroupAdmin(port, timeout_ms=1000, retry_backoff_ms=300, clock=clock).list_groups()
    assert len(port.calls) == 4 and clock.monotonic() == pytest.approx(0.9)


def test_delete_groups_results_are_values_at_each_groups_coordinator():
    port = ScriptedTransport(find=[found(3)], delete_groups=[answer({"a": 0}), answer({"b": codes.NON_EMPTY_GROUP})])
    results = GroupAdmin(port).delete_groups(["a", "b", "a"])
    assert [(d.group_id, d.error_code, d.error_name) for d in results] == [
        ("a", 0, None), ("b", 68, "NON_EMPTY_GROUP")]
    assert [c for c in port.calls if c[0] == "delete_groups"] == [("delete_groups", ("a",), 3),
                                                                  ("delete_groups", ("b",), 3)]


def test_delete_groups_finds_a_moved_coordinator_again():
    port = ScriptedTransport(find=[found(1), found(2)],
                             delete_groups=[answer({"a": codes.NOT_COORDINATOR}), answer({"a": 0})])
    (result,) = GroupAdmin(port, retry_backoff_ms=1).delete_groups(["a"])
    assert result.error_code == 0
    assert port.calls == [("find", "a"), ("delete_groups", ("a",), 1), ("find", "a"), ("delete_groups", ("a",), 2)]


def test_delete_groups_refuses_nothing_and_reports_an_unsupported_coordinator():
    admin = GroupAdmin(ScriptedTransport(find=[found()], delete_groups=[answer({"a": codes.UNSUPPORTED_VERSION})]))
    with pytest.raises(UnsupportedVersionError, match="does not offer DeleteGroups"):
        admin.delete_groups(["a"])
    with pytest.raises(ValueError):
        admin.delete_groups([])
    with pytest.raises(ValueError):
        admin.delete_groups([""])


def test_alter_offsets_commits_as_an_admin_and_retries_a_rebalance():
    port = ScriptedTransport(find=[found(4)], alter_offsets=[answer({T0: codes.REBALANCE_IN_PROGRESS, T1: 0}),
                                                             answer({T0: 0, T1: codes.UNKNOWN_MEMBER_ID})])
    admin = GroupAdmin(port, retry_backoff_ms=1)
    assert admin.alter_offsets("g", {T1: 7, T0: OffsetAndMetadata(3, "m")}) == {T0: 0, T1: 25}
    assert port.calls[-1] == ("alter_offsets", "g", {T0: OffsetAndMetadata(3, "m"), T1: OffsetAndMetadata(7)}, 4)
    assert len([c for c in port.calls if c[0] == "alter_offsets"]) == 2
    assert admin.alter_offsets("g", {}) == {}


def test_alter_offsets_names_a_partition_left_out():
    port = ScriptedTransport(find=[found()], alter_offsets=[answer({T0: 0})])
    with pytest.raises(AdminError, match="orders-1"):
        GroupAdmin(port).alter_offsets("g", {T0: 1, T1: 1})


# ---------------------------------------------------------------------------------- offset reset plans
def committed(**offsets):
    return answer(OffsetFetchResult(0, {TopicPartition("orders", int(p[1:])): CommittedOffset(o, "", None, 0)
                                        for p, o in offsets.items()}))


def planner(state="Empty", fetched=None, starts=None, ends=None, times=None, topics=None):
    describe = group(code=69) if state is None else group(state)
    return ScriptedTransport(
        find=[found()],
        describe=[describe],
        fetch_all=[fetched or committed()],
        list_offsets_earliest=[answer(starts if starts is not None else {T0: 2, T1: 0, T2: 0})],
        list_offsets_latest=[answer(ends if ends is not None else {T0: 10, T1: 10, T2: 5})],
        offsets_for_times=[answer(times or {})],
        describe_topics=[answer(topics if topics is not None else {
            "orders": (PartitionInfo(0, 1), PartitionInfo(1, 1), PartitionInfo(2, 1))})],
    )


def plan_rows(plan):
    return [(p.topic_partition.partition, p.current_offset, p.new_offset, p.note) for p in plan.partitions]


def test_plan_to_earliest_and_latest_covers_every_partition_of_a_topic():
    t = planner(fetched=committed(p0=4, p1=6))
    admin = GroupAdmin(t)
    plan = admin.plan_offset_reset("g", ResetTarget.earliest(), ["orders"])
    assert (plan.group_id, plan.state, plan.target) == ("g", "Empty", ResetTarget("earliest"))
    assert plan_rows(plan) == [(0, 4, 2, ""), (1, 6, 0, ""), (2, None, 0, "")]
    assert plan.offsets() == {T0: OffsetAndMetadata(2), T1: OffsetAndMetadata(0), T2: OffsetAndMetadata(0)}
    assert plan_rows(admin.plan_offset_reset("g", ResetTarget.latest(), [T2])) == [(2, None, 5, "")]
    # nothing was committed
    assert not [c for c in t.calls if c[0] == "alter_offsets"]


def test_plan_to_offset_and_shift_by_clamp_to_the_log():
    admin = GroupAdmin(planner(fetched=committed(p0=4, p1=6, p2=5)))
    assert plan_rows(admin.plan_offset_reset("g", ResetTarget.offset(7), ["orders"])) == [
        (0, 4, 7, ""), (1, 6, 7, ""), (2, 5, 5, "7 is past the log end offset: set to 5")]
    assert plan_rows(admin.plan_offset_reset("g", ResetTarget.shift_by(-3), [T0, T1])) == [
        (0, 4, 2, "1 is before the log start offset: set to 2"), (1, 6, 3, "")]
    assert plan_rows(admin.plan_offset_reset("g", ResetTarget.offset(-1), [T1])) == [
        (1, 6, 0, "-1 is before the log start offset: set to 0")]


def test_plan_shift_by_needs_a_committed_offset():
    with pytest.raises(AdminError, match="no current committed offset"):
        GroupAdmin(planner(fetched=committed(p0=4))).plan_offset_reset("g", ResetTarget.shift_by(1), [T0, T1])


def test_plan_to_a_timestamp_falls_back_to_the_log_end():
    t = planner(times={T0: (3, 1_700_000_000_500)})
    plan = GroupAdmin(t).plan_offset_reset("g", ResetTarget.timestamp(1_700_000_000_000), [T0, T1])
    assert plan_rows(plan) == [(0, None, 3, ""), (1, None, 10, "no record at or after the time: the log end offset")]
    assert ("offsets_for_times", {T0: 1_700_000_000_000, T1: 1_700_000_000_000}) in t.calls


def test_plan_all_topics_is_what_the_group_committed():
    admin = GroupAdmin(planner(fetched=committed(p2=1)))
    assert plan_rows(admin.plan_offset_reset("g", ResetTarget.latest())) == [(2, 1, 5, "")]
    with pytest.raises(AdminError, match="no committed offsets"):
        GroupAdmin(planner()).plan_offset_reset("g", ResetTarget.latest())


@pytest.mark.parametrize("state", ["Stable", "PreparingRebalance", "CompletingRebalance"])
def test_plan_refuses_a_group_with_members(state):
    t = planner(state=state)
    with pytest.raises(GroupNotEmptyError) as info:
        GroupAdmin(t).plan_offset_reset("g", ResetTarget.earliest(), ["orders"])
    assert str(info.value) == (
        f"Assignments can only be reset if the group 'g' is inactive, but the current state is {state}.")
    assert [c[0] for c in t.calls] == ["find", "describe"]


@pytest.mark.parametrize("state", ["Dead", None])  # None: GROUP_ID_NOT_FOUND, Kafka 4's answer
def test_plan_for_a_group_not_known_yet(state):
    plan = GroupAdmin(planner(state=state)).plan_offset_reset("g", ResetTarget.earliest(), [T0])
    assert plan.state == "Dead" and plan_rows(plan) == [(0, None, 2, "")]


def test_plan_names_unknown_topics_and_partitions():
    with pytest.raises(AdminError, match="unknown topic: nope") as info:
        GroupAdmin(planner()).plan_offset_reset("g", ResetTarget.earliest(), ["orders", "nope"])
    assert info.value.error_name == "UNKNOWN_TOPIC_OR_PARTITION"
    with pytest.raises(AdminError, match=r"topic 'orders' has no partition 9 \(its partitions: 0, 1, 2\)"):
        GroupAdmin(planner()).plan_offset_reset("g", ResetTarget.earliest(), [TopicPartition("orders", 9)])
    with pytest.raises(ValueError):
        GroupAdmin(planner()).plan_offset_reset("g", ResetTarget.earliest(), [])


def test_plan_names_a_partition_without_a_log_offset():
    with pytest.raises(AdminError, match="log start offset of orders-1"):
        GroupAdmin(planner(starts={T0: 0})).plan_offset_reset("g", ResetTarget.earliest(), [T0, T1])
