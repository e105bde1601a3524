"""DescribeGroups and ListGroups."""

from __future__ import annotations

import pytest

from kgroup import _error_codes as codes
from kgroup.testing.coordinator import DescribedGroup, DescribedMember, DescribeGroupsRequest, LeaveMember, ListedGroup
from tests.unit.coordinator_model.helpers import Harness


def test_describe_unknown_group_is_dead_without_error():
    h = Harness()
    assert h.describe("nope") == DescribedGroup(
        error_code=codes.NONE, group_id="nope", group_state="Dead", protocol_type="", protocol_data="", members=()
    )


def test_describe_stable_group_reports_protocol_and_member_details():
    h = Harness()
    (a, b), _gen = h.form_group(2, protocols=(("range", b"R"), ("roundrobin", b"RR")))
    assert h.describe() == DescribedGroup(
        error_code=codes.NONE,
        group_id="g",
        group_state="Stable",
        protocol_type="consumer",
        protocol_data="range",
        members=(
            *(
                DescribedMember(
                    member_id=member_id,
                    group_instance_id=None,
                    client_id=client_id,
                    client_host="/10.0.0.2",
                    member_metadata=b"R",
                    member_assignment=f"a-{member_id}".encode(),
                )
                for member_id, client_id in ((a, "m0"), (b, "m1"))
            ),
        ),
    )


def test_describe_outside_stable_has_no_protocol_data_nor_metadata():
    h = Harness()
    (a, b), _gen = h.form_group(2)
    h.join(a, client_id="m0")
    described = h.describe()
    assert (described.group_state, described.protocol_type, described.protocol_data) == (
        "PreparingRebalance",
        "consumer",
        "",
    )
    assert [(m.member_metadata, m.member_assignment) for m in described.members] == [
        (b"", f"a-{a}".encode()),
        (b"", f"a-{b}".encode()),
    ]
    h.join(b, client_id="m1")
    described = h.describe()
    assert (described.group_state, described.protocol_data) == ("CompletingRebalance", "")


def test_describe_several_groups_in_request_order():
    h = Harness()
    h.form_group(1)
    h.commit({("t", 0): 1}, group="simple")
    reply = h.model.describe_groups(DescribeGroupsRequest(api_version=5, groups=("simple", "nope", "g")))
    assert [(d.group_id, d.group_state) for d in reply.response.groups] == [
        ("simple", "Empty"),
        ("nope", "Dead"),
        ("g", "Stable"),
    ]


def test_state_names_through_a_group_life():
    h = Harness(group_initial_rebalance_delay_ms=1000)
    seen = [h.state()]
    a = h.join(client_id="a").response.member_id  # MEMBER_ID_REQUIRED: only a pending member
    seen.append(h.state())
    reply = h.join(a, client_id="a")
    seen.append(h.state())
    h.advance(1)
    seen.append(h.state())
    h.sync(a, reply.response.generation_id, {a: b""})
    seen.append(h.state())
    h.join(a, client_id="a")
    seen.append(h.state())
    h.advance(10)
    seen.append(h.state())
    assert seen == [
        "Dead",
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "CompletingRebalance",  # the leader's rejoin completed at once
        "Empty",
    ]


def _listing(h: Harness, states=(), types=()):
    return sorted((g.group_id, g.group_state) for g in h.list_groups(states, types).groups)


def test_list_groups_lists_every_group_including_empty_ones():
    h = Harness()
    h.form_group(1, group="stable")
    h.commit({("t", 0): 1}, group="simple")
    h.join(client_id="p", group="pending-only")
    response = h.list_groups()
    assert response.error_code == codes.NONE
    assert sorted(response.groups, key=lambda g: g.group_id) == [
        ListedGroup(group_id="pending-only", protocol_type="", group_state="Empty", group_type="classic"),
        ListedGroup(group_id="simple", protocol_type="", group_state="Empty", group_type="classic"),
        ListedGroup(group_id="stable", protocol_type="consumer", group_state="Stable", group_type="classic"),
    ]


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        (("Stable",), [("stable", "Stable")]),
        (("stable", "EMPTY"), [("simple", "Empty"), ("stable", "Stable")]),
        ((" preparingrebalance ",), []),
        (("Dead",), []),
    ],
)
def test_list_groups_state_filter_is_case_insensitive(states, expected):
    h = Harness()
    h.form_group(1, group="stable")
    h.commit({("t", 0): 1}, group="simple")
    assert _listing(h, states) == expected


@pytest.mark.parametrize(("types", "count"), [(("Classic",), 2), (("consumer",), 0), (("classic", "share"), 2)])
def test_list_groups_type_filter(types, count):
    h = Harness()
    h.form_group(1, group="stable")
    h.commit({("t", 0): 1}, group="simple")
    assert len(_listing(h, types=types)) == count


def test_describe_v6_unknown_group_is_group_id_not_found_with_a_message():
    # KIP-1043 (DescribeGroups v6): GroupMetadataManager.describeGroups answers an unknown group with
    # GROUP_ID_NOT_FOUND and "Group <id> not found."; still Dead, no members.
    h = Harness()
    reply = h.model.describe_groups(DescribeGroupsRequest(api_version=6, groups=("nope",)))
    assert reply.response.groups == (
        DescribedGroup(
            error_code=codes.GROUP_ID_NOT_FOUND,
            error_message="Group nope not found.",
            group_id="nope",
            group_state="Dead",
            protocol_type="",
            protocol_data="",
            members=(),
        ),
    )
    h.form_group(1)
    (known,) = h.model.describe_groups(DescribeGroupsRequest(api_version=6, groups=("g",))).response.groups
    assert (known.error_code, known.error_message, known.group_state) == (codes.NONE, None, "Stable")


@pytest.mark.parametrize("version", [3, 5, 6])
def test_authorized_operations_only_when_asked(version):
    # KafkaApis.handleDescribeGroupsRequest adds AuthHelper.authorizedOperations for every group, known or not;
    # without an authorizer that is every operation a GROUP supports (AclEntry.supportedOperations).
    h = Harness()
    h.form_group(1)
    asked = DescribeGroupsRequest(api_version=version, groups=("g", "nope"), include_authorized_operations=True)
    assert [g.authorized_operations for g in h.model.describe_groups(asked).response.groups] == [
        frozenset({3, 6, 8, 10, 11})
    ] * 2
    not_asked = DescribeGroupsRequest(api_version=version, groups=("g",))
    assert h.model.describe_groups(not_asked).response.groups[0].authorized_operations is None
    before_v3 = DescribeGroupsRequest(api_version=2, groups=("g",), include_authorized_operations=True)
    assert h.model.describe_groups(before_v3).response.groups[0].authorized_operations is None


def test_delete_groups_refuses_groups_with_members_and_unknown_groups():
    # GroupCoordinatorShard.deleteGroups: ClassicGroup.validateDeleteGroup (NON_EMPTY_GROUP) and
    # GroupMetadataManager.validateDeleteGroup (GROUP_ID_NOT_FOUND), one result per group.
    h = Harness()
    (a,), gen = h.form_group(1)
    h.commit({("t", 0): 5}, member_id=a, generation=gen)
    assert h.delete("g", "nope") == {"g": codes.NON_EMPTY_GROUP, "nope": codes.GROUP_ID_NOT_FOUND}
    assert h.state() == "Stable"
    assert h.fetch({"t": (0,)}).topics[0].partitions[0].committed_offset == 5


def test_delete_an_empty_group_removes_it_and_its_offsets():
    # OffsetMetadataManager.deleteAllOffsets and a GroupMetadata tombstone: afterwards the group is unknown.
    h = Harness()
    h.commit({("t", 0): 5})
    h.commit({("t", 1): 6}, group="other")
    assert h.state() == "Empty"
    assert h.delete("g", "") == {"g": codes.NONE, "": codes.GROUP_ID_NOT_FOUND}
    assert h.state() == "Dead"
    assert h.describe().group_state == "Dead"
    assert [listed.group_id for listed in h.list_groups().groups] == ["other"]
    assert h.fetch({"t": (0,)}).topics[0].partitions[0].committed_offset == -1
    assert h.fetch(None).topics == ()
    assert h.delete("g") == {"g": codes.GROUP_ID_NOT_FOUND}
    # A JoinGroup creates it anew, from generation 0.
    (_a,), gen = h.form_group(1)
    assert gen == 1


def test_delete_after_every_member_left():
    h = Harness()
    (a, b), _gen = h.form_group(2)
    h.leave(LeaveMember(member_id=a), LeaveMember(member_id=b))
    assert h.state() == "Empty"
    assert h.delete("g") == {"g": codes.NONE}
    assert h.model.next_deadline() is None  # no timer of the deleted group is left
