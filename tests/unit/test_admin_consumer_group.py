"""``GroupAdmin.describe_group`` and ``kgroup describe`` for groups of the consumer group protocol (KIP-848).

ConsumerGroupDescribe first, as Java's ``DescribeConsumerGroupsHandler``; DescribeGroups for a
group it does not know as a consumer group (a classic group, or none) and when the broker has
no API 69. Over the scripted transport of ``test_admin``.
"""

from __future__ import annotations

import json
import uuid

import pytest
from click.testing import CliRunner

from kgroup import _error_codes as codes
from kgroup.admin import AdminError, GroupAdmin
from kgroup.cli import describe_json, describe_text, main
from kgroup.protocol.consumer_group_describe import (
    MEMBER_TYPE_CLASSIC,
    MEMBER_TYPE_CONSUMER,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    NamedTopicPartitions,
)
from kgroup.types import TopicPartition
from tests.unit.test_admin import ScriptedTransport, done, found, group, member

T0, T1, T2 = (TopicPartition("orders", p) for p in range(3))
ORDERS = uuid.UUID(int=7)


def consumer_group(state="Reconciling", code=0, members=()):
    return lambda: done((DescribedConsumerGroup(
        error_code=code, group_id="g", group_state=state, group_epoch=5 if code == 0 else -1,
        assignment_epoch=5 if code == 0 else -1, assignor_name="uniform" if code == 0 else "", members=tuple(members),
    ),))


def cmember(member_id, epoch, owned, target, member_type=MEMBER_TYPE_CONSUMER, instance=None):
    return DescribedConsumerMember(
        member_id=member_id, instance_id=instance, member_epoch=epoch, client_id=f"client-{member_id}",
        client_host="/127.0.0.1", subscribed_topic_names=("orders",),
        assignment=(NamedTopicPartitions(ORDERS, "orders", tuple(owned)),),
        target_assignment=(NamedTopicPartitions(ORDERS, "orders", tuple(target)),), member_type=member_type,
    )


RECONCILING = consumer_group(members=[cmember("m1", 4, [2, 0, 1], [0, 1]),
                                      cmember("m2", 5, [], [2], MEMBER_TYPE_CLASSIC, "pod-2")])


def test_a_consumer_group_is_described_with_its_epochs_and_target_assignments() -> None:
    t = ScriptedTransport(find=[found()], consumer_describe=[RECONCILING])
    d = GroupAdmin(t).describe_group("g")
    assert t.calls == [("find", "g"), ("consumer_describe", ("g",), 1)], "no DescribeGroups for a consumer group"
    assert (d.group_type, d.state, d.protocol_type, d.protocol) == ("consumer", "Reconciling", "consumer", "uniform")
    assert (d.group_epoch, d.assignment_epoch, d.generation_id) == (5, 5, None)
    m1, m2 = d.members
    assert (m1.member_id, m1.member_epoch, m1.assignment, m1.target_assignment, m1.member_protocol) == (
        "m1", 4, (T0, T1, T2), (T0, T1), "consumer")
    assert (m2.group_instance_id, m2.assignment, m2.target_assignment, m2.member_protocol) == (
        "pod-2", (), (T2,), "classic")
    assert m1.subscribed_topics == ("orders",) and m1.decode_error is None
    assert d.owner_of(T2) is m1, "the owner is who holds it now, not its target"


@pytest.mark.parametrize("code", [codes.GROUP_ID_NOT_FOUND, codes.UNSUPPORTED_VERSION])
def test_a_group_consumer_group_describe_does_not_know_is_described_with_describe_groups(code: int) -> None:
    t = ScriptedTransport(find=[found()], consumer_describe=[consumer_group(code=code)],
                          describe=[group(members=[member("a-1", None, [T0])])])
    d = GroupAdmin(t).describe_group("g")
    assert [c[0] for c in t.calls] == ["find", "consumer_describe", "describe"]
    assert (d.group_type, d.group_epoch, d.state, d.protocol) == ("classic", None, "Stable", "range")
    assert d.members[0].member_epoch is None and d.members[0].target_assignment is None


def test_a_broker_without_the_api_is_described_with_describe_groups() -> None:
    """``ScriptedTransport`` without ``consumer_describe`` answers: API 69 unsupported, as a broker before 4.0."""
    t = ScriptedTransport(find=[found()], describe=[group(members=[member("a-1", None, [T0])])])
    assert GroupAdmin(t).describe_group("g").group_type == "classic"


def test_a_moved_coordinator_is_found_again_and_other_errors_are_typed() -> None:
    t = ScriptedTransport(find=[found(1), found(2)],
                          consumer_describe=[consumer_group(code=codes.NOT_COORDINATOR), RECONCILING])
    assert GroupAdmin(t).describe_group("g").group_epoch == 5
    assert [c for c in t.calls if c[0] == "consumer_describe"][-1][2] == 2
    refused = consumer_group(code=codes.GROUP_AUTHORIZATION_FAILED)
    denied = ScriptedTransport(find=[found()], consumer_describe=[refused])
    with pytest.raises(AdminError, match="GROUP_AUTHORIZATION_FAILED") as info:
        GroupAdmin(denied).describe_group("g")
    assert info.value.code == codes.GROUP_AUTHORIZATION_FAILED


def described():
    return GroupAdmin(ScriptedTransport(find=[found()], consumer_describe=[RECONCILING])).describe_group("g")


def test_the_table_shows_epochs_assignments_and_targets() -> None:
    text = describe_text(described(), ())
    head = dict(line.split(None, 1) for line in text.split("\n\n")[0].splitlines())
    assert head["STATE"] == "Reconciling" and head["GROUP-TYPE"] == "consumer" and head["ASSIGNOR"] == "uniform"
    assert head["GROUP-EPOCH"] == "5" and head["ASSIGNMENT-EPOCH"] == "5" and "GENERATION" not in head
    members = text.split("\n\n")[1].splitlines()
    assert members[0].split() == ["MEMBER-ID", "GROUP-INSTANCE-ID", "CLIENT-ID", "HOST", "EPOCH", "PROTOCOL",
                                  "TOPICS", "ASSIGNMENT", "TARGET-ASSIGNMENT"]
    assert members[1].split() == ["m1", "-", "client-m1", "/127.0.0.1", "4", "consumer", "orders",
                                  "orders:0,1,2", "orders:0,1"]
    assert members[2].split() == ["m2", "pod-2", "client-m2", "/127.0.0.1", "5", "classic", "orders", "-",
                                  "orders:2"]


def test_the_json_document_carries_the_same() -> None:
    doc = describe_json(described(), ())
    assert (doc["group_type"], doc["group_epoch"], doc["assignment_epoch"], doc["protocol"]) == (
        "consumer", 5, 5, "uniform")
    m1 = doc["members"][0]
    assert m1["member_epoch"] == 4 and m1["member_protocol"] == "consumer"
    assert m1["target_assignment"] == [{"topic": "orders", "partition": 0}, {"topic": "orders", "partition": 1}]
    assert json.loads(json.dumps(doc)) == doc


def test_the_command_describes_a_consumer_group() -> None:
    class Admin:
        def describe_group(self, group_id, timeout_ms=None):
            return described()

        def lag(self, group_id, description, timeout_ms=None):
            return ()

        def close(self):
            pass

    result = CliRunner().invoke(main, ["describe", "g", "-b", "h:1"], obj={"admin_factory": lambda b, t: Admin()})
    assert result.exit_code == 0, result.output
    assert "GROUP-EPOCH" in result.output and "orders:0,1,2" in result.output
