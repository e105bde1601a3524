"""``GroupAdmin`` and the ``kgroup`` CLI for share groups (KIP-932), over the scripted transport of ``test_admin``.

Listing keeps share groups with their type; ``describe_group`` recognises a share group
(ShareGroupDescribe after DescribeGroups found no classic group); the start offsets
(DescribeShareGroupOffsets) stand for committed offsets in lag and reset plans; resets go
through AlterShareGroupOffsets, refused with a typed error while the group has members; the
error codes are classified by ``kgroup.errors``' rows for the four APIs.
"""

from __future__ import annotations

import json
import uuid

import pytest
from click.testing import CliRunner

from kgroup import _error_codes as codes
from kgroup.admin import (
    AdminError,
    GroupAdmin,
    GroupListing,
    GroupNotEmptyError,
    GroupNotFoundError,
    ResetTarget,
    UnsupportedVersionError,
)
from kgroup.cli import describe_json, describe_text, main
from kgroup.protocol.consumer_group_describe import NamedTopicPartitions
from kgroup.protocol.group_api import ListedGroup
from kgroup.protocol.share_group_admin import (
    DescribedShareGroup,
    DescribedShareMember,
    ShareGroupOffsets,
    ShareOffsetsAltered,
    ShareOffsetsDeleted,
    SharePartitionOffset,
)
from kgroup.types import PartitionInfo, TopicPartition
from tests.unit.test_admin import ScriptedTransport, answer, done, found, group

T0, T1, T2 = (TopicPartition("orders", p) for p in range(3))
ORDERS = uuid.UUID(int=7)


def smember(member_id, partitions, epoch=3, rack=None):
    return DescribedShareMember(
        member_id=member_id, rack_id=rack, member_epoch=epoch, client_id=f"client-{member_id}",
        client_host="/127.0.0.1", subscribed_topic_names=("orders",),
        assignment=(NamedTopicPartitions(ORDERS, "orders", tuple(partitions)),),
    )


def share_group(state="Stable", code=0, members=(), message=None):
    return lambda: done((DescribedShareGroup(
        error_code=code, error_message=message, group_id="g", group_state=state, group_epoch=6, assignment_epoch=6,
        assignor_name="simple", members=tuple(members)),))


STABLE = share_group(members=[smember("m1", [2, 0], rack="r1"), smember("m2", [1, 2])])
DEAD = group(state="Dead", protocol_type="")  # DescribeGroups' answer for a group that is not classic


def starts(lag=-1, **by_partition):
    return lambda: done(ShareGroupOffsets(error_code=0, partitions={
        TopicPartition("orders", int(p[1:])): SharePartitionOffset(start_offset=o, leader_epoch=0, lag=lag)
        for p, o in by_partition.items()
    }))


def share_admin(**answers):
    transport = ScriptedTransport(find=[found()], consumer_describe=[lambda: done(())], describe=[DEAD], **answers)
    return GroupAdmin(transport, retry_backoff_ms=1), transport


def test_list_groups_keeps_share_groups_with_their_type() -> None:
    port = ScriptedTransport(list_groups=[answer((0, (
        ListedGroup(group_id="q", protocol_type="share", group_state="Stable", group_type="share"),
        ListedGroup(group_id="c", protocol_type="consumer", group_state="Empty", group_type="consumer"),
        ListedGroup(group_id="connect-x", protocol_type="connect", group_state="Stable", group_type="classic"),
    )))])
    assert GroupAdmin(port).list_groups() == (
        GroupListing("c", "consumer", "Empty", "consumer"), GroupListing("q", "share", "Stable", "share"))


def test_describe_group_recognises_a_share_group() -> None:
    admin, t = share_admin(share_describe=[STABLE])
    d = admin.describe_group("g")
    assert [c[0] for c in t.calls] == ["find", "consumer_describe", "describe", "share_describe"]
    assert (d.group_type, d.protocol_type, d.protocol, d.state) == ("share", "share", "simple", "Stable")
    assert (d.group_epoch, d.assignment_epoch, d.generation_id) == (6, 6, None)
    m1, m2 = d.members
    assert (m1.member_id, m1.member_epoch, m1.rack_id, m1.client_id, m1.client_host) == (
        "m1", 3, "r1", "client-m1", "/127.0.0.1")
    assert (m1.assignment, m2.assignment, m1.subscribed_topics) == ((T0, T2), (T1, T2), ("orders",))
    assert m1.group_instance_id is None and m1.target_assignment is None
    assert admin.describe_share_group("g") == d


def test_a_group_that_is_no_share_group_stays_dead_and_a_classic_one_is_not_asked_about() -> None:
    admin, _ = share_admin(share_describe=[share_group(code=codes.GROUP_ID_NOT_FOUND)])
    assert admin.describe_group("g").state == "Dead"
    assert admin.describe_share_group("g").state == "Dead", "Java's describeShareGroups: an unknown group is Dead"
    classic = ScriptedTransport(find=[found()], describe=[group()], share_describe=[STABLE])
    assert GroupAdmin(classic).describe_group("g").group_type == "classic"
    assert "share_describe" not in [c[0] for c in classic.calls]
    # a broker without share groups: the Dead answer stands
    plain = ScriptedTransport(find=[found()], describe=[DEAD])
    assert GroupAdmin(plain).describe_group("g").state == "Dead"


def test_share_group_describe_errors_are_classified_and_typed() -> None:
    admin, _ = share_admin(share_describe=[share_group(code=codes.COORDINATOR_LOAD_IN_PROGRESS), STABLE])
    assert admin.describe_share_group("g").state == "Stable", "a loading coordinator is retried"
    admin, _ = share_admin(share_describe=[share_group(code=codes.GROUP_AUTHORIZATION_FAILED, message="denied")])
    with pytest.raises(AdminError, match=r"GROUP_AUTHORIZATION_FAILED.*denied") as info:
        admin.describe_share_group("g")
    assert (info.value.api, info.value.code) == ("ShareGroupDescribe", codes.GROUP_AUTHORIZATION_FAILED)
    admin, _ = share_admin(share_describe=[share_group(code=codes.UNSUPPORTED_VERSION)])
    with pytest.raises(UnsupportedVersionError):
        admin.describe_share_group("g")


def test_lag_of_a_share_group_is_from_its_start_offsets() -> None:
    admin, t = share_admin(share_describe=[STABLE], share_offsets=[starts(o0=4, o1=2)],
                           list_offsets=[answer({T0: 10, T1: 2, T2: 7})])
    rows = {p.topic_partition: p for p in admin.lag("g")}
    assert {tp: (p.committed_offset, p.log_end_offset, p.lag) for tp, p in rows.items()} == {
        T0: (4, 10, 6), T1: (2, 2, 0), T2: (None, 7, None)}
    assert rows[T2].member_id == "m1,m2", "a share partition is every member's that has it"
    assert "fetch_all" not in [c[0] for c in t.calls], "no OffsetFetch: a share group commits nothing"
    admin, _ = share_admin(share_describe=[STABLE], share_offsets=[starts(lag=3, o0=4)],
                           list_offsets=[answer({T0: 10, T1: 2, T2: 7})])
    assert {p.topic_partition: p.lag for p in admin.lag("g")}[T0] == 3, "the broker's lag (v1) wins"


def test_share_group_offsets_skip_uninitialised_partitions_and_type_errors() -> None:
    admin, _ = share_admin(share_offsets=[starts(o0=4, o1=-1)])
    assert set(admin.share_group_offsets("g")) == {T0}
    admin, _ = share_admin(share_offsets=[lambda: done(ShareGroupOffsets(error_code=codes.GROUP_ID_NOT_FOUND))])
    with pytest.raises(GroupNotFoundError):
        admin.share_group_offsets("g")
    bad = ShareGroupOffsets(error_code=0, partitions={T0: SharePartitionOffset(
        start_offset=-1, error_code=codes.TOPIC_AUTHORIZATION_FAILED, error_message="no READ")})
    admin, _ = share_admin(share_offsets=[lambda: done(bad)])
    with pytest.raises(AdminError, match=r"TOPIC_AUTHORIZATION_FAILED.*orders-0"):
        admin.share_group_offsets("g")


def test_alter_share_group_offsets_needs_an_empty_group() -> None:
    refused = ShareOffsetsAltered(error_code=codes.NON_EMPTY_GROUP, error_message="Group g is not empty.")
    admin, t = share_admin(alter_share_offsets=[lambda: done(refused)])
    with pytest.raises(GroupNotEmptyError, match="NON_EMPTY_GROUP") as info:
        admin.alter_share_group_offsets("g", {T0: 0})
    assert info.value.api == "AlterShareGroupOffsets" and info.value.error_name == "NON_EMPTY_GROUP"
    moved = ShareOffsetsAltered(error_code=codes.NOT_COORDINATOR)
    ok = ShareOffsetsAltered(error_code=0, partitions={T0: 0, T1: codes.UNKNOWN_TOPIC_OR_PARTITION})
    admin, t = share_admin(alter_share_offsets=[lambda: done(moved), lambda: done(ok)])
    assert admin.alter_share_group_offsets("g", {T1: 5, T0: 0}) == {T0: 0, T1: codes.UNKNOWN_TOPIC_OR_PARTITION}
    assert [c[0] for c in t.calls].count("find") == 2, "NOT_COORDINATOR: found again"
    with pytest.raises(ValueError, match="at least 0"):
        admin.alter_share_group_offsets("g", {T0: -1})
    admin, _ = share_admin(alter_share_offsets=[lambda: done(ShareOffsetsAltered(error_code=0, partitions={T0: 0}))])
    with pytest.raises(AdminError, match="answered nothing for orders-1"):
        admin.alter_share_group_offsets("g", {T0: 0, T1: 0})


def test_delete_share_group_offsets_of_topics() -> None:
    admin, t = share_admin(delete_share_offsets=[lambda: done(ShareOffsetsDeleted(error_code=0, topics={"orders": 0}))])
    assert admin.delete_share_group_offsets("g", ["orders", "orders"]) == {"orders": 0}
    assert t.calls[-1] == ("delete_share_offsets", "g", ("orders",), 1)
    admin, _ = share_admin(delete_share_offsets=[
        lambda: done(ShareOffsetsDeleted(error_code=codes.NON_EMPTY_GROUP))])
    with pytest.raises(GroupNotEmptyError):
        admin.delete_share_group_offsets("g", ["orders"])
    with pytest.raises(ValueError):
        admin.delete_share_group_offsets("g", [])


def reset_admin(state="Empty"):
    return share_admin(
        share_describe=[share_group(state=state, members=[] if state == "Empty" else [smember("m1", [0, 1, 2])])],
        share_offsets=[starts(o0=4, o1=4, o2=4)],
        describe_topics=[answer({"orders": tuple(PartitionInfo(p, 1) for p in range(3))})],
        list_offsets_earliest=[answer({T0: 0, T1: 1, T2: 0})],
        alter_share_offsets=[lambda: done(ShareOffsetsAltered(error_code=0, partitions={T0: 0, T1: 0, T2: 0}))],
    )


def test_a_reset_plan_of_a_share_group_starts_from_its_start_offsets() -> None:
    admin, _ = reset_admin()
    plan = admin.plan_offset_reset("g", ResetTarget.earliest(), ["orders"])
    assert plan.group_type == "share" and plan.state == "Empty"
    assert [(p.topic_partition, p.current_offset, p.new_offset) for p in plan.partitions] == [
        (T0, 4, 0), (T1, 4, 1), (T2, 4, 0)]
    admin, _ = reset_admin(state="Stable")
    with pytest.raises(GroupNotEmptyError, match="inactive"):
        admin.plan_offset_reset("g", ResetTarget.earliest(), ["orders"])


class _Factory:
    def __init__(self, admin: GroupAdmin) -> None:
        self.admin = admin

    def __call__(self, bootstrap_servers: str, timeout_ms: int) -> GroupAdmin:
        return self.admin


def invoke(admin: GroupAdmin, *args: str):
    return CliRunner().invoke(main, [*args, "-b", "h:9092"], obj={"admin_factory": _Factory(admin)})


def test_cli_reset_offsets_of_a_share_group_sets_its_start_offsets() -> None:
    admin, t = reset_admin()
    result = invoke(admin, "reset-offsets", "g", "--topic", "orders", "--to-earliest", "--execute", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["group_type"] == "share" and doc["executed"]
    assert [c for c in t.calls if c[0] == "alter_share_offsets"] == [
        ("alter_share_offsets", "g", {T0: 0, T1: 1, T2: 0}, 1)]
    assert "alter_offsets" not in [c[0] for c in t.calls], "no OffsetCommit for a share group"


def test_cli_describe_shows_a_share_groups_members_and_start_offsets() -> None:
    admin, _ = share_admin(share_describe=[STABLE], share_offsets=[starts(o0=4, o1=2)],
                           list_offsets=[answer({T0: 10, T1: 2, T2: 7})])
    description = admin.describe_group("g")
    text = describe_text(description, admin.lag("g", description))
    head, members, offsets = text.split("\n\n")
    fields = dict(line.split(None, 1) for line in head.splitlines())
    assert (fields["GROUP-TYPE"], fields["ASSIGNOR"], fields["GROUP-EPOCH"], fields["MEMBERS"]) == (
        "share", "simple", "6", "2")
    assert members.splitlines()[0].split() == ["MEMBER-ID", "CLIENT-ID", "HOST", "RACK", "EPOCH", "TOPICS",
                                               "ASSIGNMENT"]
    assert members.splitlines()[1].split() == ["m1", "client-m1", "/127.0.0.1", "r1", "3", "orders", "orders:0,2"]
    assert offsets.splitlines()[0].split() == ["TOPIC", "PARTITION", "START-OFFSET", "LOG-END-OFFSET", "LAG",
                                               "MEMBER-IDS"]
    assert offsets.splitlines()[1].split() == ["orders", "0", "4", "10", "6", "m1"]
    doc = describe_json(description, ())
    assert doc["group_type"] == "share" and doc["members"][0]["rack_id"] == "r1"
    result = invoke(share_admin(share_describe=[STABLE], share_offsets=[starts(o0=4)],
                                list_offsets=[answer({T0: 10, T1: 2, T2: 7})])[0], "describe", "g")
    assert result.exit_code == 0 and "START-OFFSET" in result.output, result.output


def test_cli_delete_offsets_of_a_share_group() -> None:
    deleted = ShareOffsetsDeleted(error_code=0, topics={"orders": 0, "gone": codes.UNKNOWN_TOPIC_OR_PARTITION})
    admin, t = share_admin(share_describe=[share_group(state="Empty")], delete_share_offsets=[lambda: done(deleted)])
    result = invoke(admin, "delete-offsets", "g", "--topic", "orders", "--topic", "gone", "--json")
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["topics"] == [{"topic": "orders", "error_code": 0, "error": None},
                             {"topic": "gone", "error_code": 3, "error": "UNKNOWN_TOPIC_OR_PARTITION"}]
    assert "gone: UNKNOWN_TOPIC_OR_PARTITION (3)" in result.output
    assert ("delete_share_offsets", "g", ("orders", "gone"), 1) in t.calls
    refused = ShareOffsetsDeleted(error_code=codes.NON_EMPTY_GROUP)
    admin, _ = share_admin(share_describe=[STABLE], delete_share_offsets=[lambda: done(refused)])
    result = invoke(admin, "delete-offsets", "g", "--topic", "orders")
    assert result.exit_code == 1 and "NON_EMPTY_GROUP" in result.output and "stop them first" in result.output
    classic = ScriptedTransport(find=[found()], describe=[group()])
    result = invoke(GroupAdmin(classic), "delete-offsets", "g", "--topic", "orders")
    assert result.exit_code == 1 and "share group's start offsets only" in result.output
