"""GroupAdmin over a scripted Transport: decoding, retries, deadlines, typed errors."""

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
    GroupNotFoundError,
    UnsupportedVersionError,
)
from kgroup.membership import events as ev
from kgroup.protocol.consumer_protocol import Assignment, Subscription, encode_assignment, encode_subscription
from kgroup.protocol.group_api import DescribedGroup, DescribedMember, LeaveGroupResponse, LeaveMemberResult
from kgroup.testing import FakeClock
from kgroup.types import TopicPartition

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
        return self._next("list_offsets")

    def leave_group_members(self, group_id, instance_ids, reason, node_id, timeout_ms):
        self.calls.append(("leave", group_id, tuple(instance_ids), reason, node_id))
        return self._next("leave")

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
