"""DescribeGroups and ListGroups."""

from __future__ import annotations

import pytest

from kgroup.testing.coordinator import DescribedGroup, DescribedMember, DescribeGroupsRequest, ListedGroup
from kgroup.testing.coordinator import _codes as codes
from tests.unit.coordinator.helpers import Harness


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
            DescribedMember(
                member_id=a,
                group_instance_id=None,
                client_id="m0",
                client_host="/10.0.0.2",
                member_metadata=b"R",
                member_assignment=f"a-{a}".encode(),
            ),
            DescribedMember(
                member_id=b,
                group_instance_id=None,
                client_id="m1",
                client_host="/10.0.0.2",
                member_metadata=b"R",
                member_assignment=f"a-{b}".encode(),
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
