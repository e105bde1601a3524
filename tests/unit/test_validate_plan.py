"""validate_plan: one test per AssignmentError rule, plus the cases that must pass."""

from __future__ import annotations

import pytest

from kgroup.assignors import MemberSubscription, validate_plan
from kgroup.errors import AssignmentError
from kgroup.types import RebalanceProtocol, TopicPartition

EAGER = RebalanceProtocol.EAGER
COOPERATIVE = RebalanceProtocol.COOPERATIVE
PARTITIONS = {"t": 2, "u": 1}


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def member(member_id: str, topics=("t", "u"), owned=()) -> MemberSubscription:
    return MemberSubscription(member_id=member_id, topics=frozenset(topics), owned=frozenset(owned))


MEMBERS = {"a": member("a"), "b": member("b")}
GOOD = {"a": frozenset({tp("t", 0), tp("u", 0)}), "b": frozenset({tp("t", 1)})}


@pytest.mark.parametrize("protocol", [EAGER, COOPERATIVE])
def test_validate_plan_complete_exclusive_plan_passes(protocol):
    validate_plan(GOOD, MEMBERS, PARTITIONS, protocol)


def test_validate_plan_member_missing_raises():
    with pytest.raises(AssignmentError, match=r"no entry for member\(s\) \['b'\]"):
        validate_plan({"a": GOOD["a"] | GOOD["b"]}, MEMBERS, PARTITIONS, EAGER)


def test_validate_plan_unknown_member_raises():
    plan = {**GOOD, "ghost": frozenset()}
    with pytest.raises(AssignmentError, match=r"unknown member\(s\) \['ghost'\]"):
        validate_plan(plan, MEMBERS, PARTITIONS, EAGER)


def test_validate_plan_partition_assigned_twice_raises():
    plan = {"a": GOOD["a"] | {tp("t", 1)}, "b": GOOD["b"]}
    with pytest.raises(AssignmentError, match="t-1 assigned twice: to 'a' and to 'b'"):
        validate_plan(plan, MEMBERS, PARTITIONS, EAGER)


def test_validate_plan_partition_to_unsubscribed_member_raises():
    members = {"a": member("a"), "b": member("b", topics=("t",))}
    plan = {"a": frozenset({tp("t", 0)}), "b": frozenset({tp("t", 1), tp("u", 0)})}
    with pytest.raises(AssignmentError, match="u-0 assigned to member 'b', which is not"):
        validate_plan(plan, members, PARTITIONS, EAGER)


def test_validate_plan_partition_number_out_of_range_raises():
    plan = {"a": GOOD["a"], "b": GOOD["b"] | {tp("t", 2)}}
    with pytest.raises(AssignmentError, match=r"t-2 .* does not exist \(topic has 2 partitions\)"):
        validate_plan(plan, MEMBERS, PARTITIONS, EAGER)


def test_validate_plan_partition_of_unknown_topic_raises():
    members = {"a": member("a", topics=("t", "u", "gone")), "b": member("b")}
    plan = {"a": GOOD["a"] | {tp("gone", 0)}, "b": GOOD["b"]}
    with pytest.raises(AssignmentError, match=r"gone-0 .* does not exist \(unknown topic\)"):
        validate_plan(plan, members, PARTITIONS, EAGER)


def test_validate_plan_eager_unassigned_partition_raises():
    plan = {"a": GOOD["a"], "b": frozenset()}
    with pytest.raises(AssignmentError, match="t-1 is not assigned to any member"):
        validate_plan(plan, MEMBERS, PARTITIONS, EAGER)


def test_validate_plan_eager_owned_unassigned_partition_still_raises():
    members = {"a": member("a"), "b": member("b", owned=[tp("t", 1)])}
    plan = {"a": GOOD["a"], "b": frozenset()}
    with pytest.raises(AssignmentError, match="t-1 is not assigned"):
        validate_plan(plan, members, PARTITIONS, EAGER)


def test_validate_plan_cooperative_unowned_unassigned_partition_raises():
    plan = {"a": GOOD["a"], "b": frozenset()}
    with pytest.raises(AssignmentError, match=r"t-1 is not assigned to any member .*COOPERATIVE"):
        validate_plan(plan, MEMBERS, PARTITIONS, COOPERATIVE)


def test_validate_plan_cooperative_revoked_partition_left_unassigned_passes():
    # b owns t-1 and gives it up this round; it is assigned to a in the next round (KIP-429)
    members = {"a": member("a"), "b": member("b", owned=[tp("t", 1)])}
    plan = {"a": GOOD["a"], "b": frozenset()}
    validate_plan(plan, members, PARTITIONS, COOPERATIVE)


def test_validate_plan_cooperative_direct_transfer_raises():
    members = {"a": member("a", owned=[tp("t", 1)]), "b": member("b")}
    plan = {"a": GOOD["a"], "b": GOOD["b"]}  # t-1 moves a -> b in one round
    with pytest.raises(AssignmentError, match=r"t-1 moves directly from owner\(s\) \['a'\] to"):
        validate_plan(plan, members, PARTITIONS, COOPERATIVE)


def test_validate_plan_eager_direct_transfer_passes():
    members = {"a": member("a", owned=[tp("t", 1)]), "b": member("b")}
    validate_plan(GOOD, members, PARTITIONS, EAGER)


def test_validate_plan_cooperative_owner_keeps_partition_passes():
    members = {"a": member("a", owned=[tp("t", 0)]), "b": member("b", owned=[tp("t", 1)])}
    validate_plan(GOOD, members, PARTITIONS, COOPERATIVE)


def test_validate_plan_cooperative_two_stale_owners_one_keeps_passes():
    # Java validateCooperativeAssignment: added ∩ revoked is empty when a claimant keeps it
    members = {"a": member("a", owned=[tp("t", 1)]), "b": member("b", owned=[tp("t", 1)])}
    validate_plan(GOOD, members, PARTITIONS, COOPERATIVE)


def test_validate_plan_topic_nobody_subscribes_may_stay_unassigned():
    validate_plan(GOOD, MEMBERS, {**PARTITIONS, "other": 3}, EAGER)


def test_validate_plan_subscribed_topic_missing_from_metadata_passes():
    members = {"a": member("a", topics=("t", "u", "gone")), "b": member("b")}
    validate_plan(GOOD, members, PARTITIONS, EAGER)


# ----------------------------------------------------------------------------- which rules apply
def test_an_eager_leader_checks_cooperative_rules_when_members_report_owned_partitions():
    """Mid-migration: an EAGER leader (on ("cooperative-sticky", "range")) plans for a member
    already on ("cooperative-sticky",), which keeps t-1 through the rebalance. Cooperative-sticky
    leaves t-1 out this round; that plan is right, and a direct transfer is still refused."""
    from kgroup.assignors.validate import validation_protocol
    from kgroup.errors import AssignmentError
    from kgroup.types import RebalanceProtocol as RP

    eager = MemberSubscription(member_id="eager", topics={"t"})
    coop = MemberSubscription(member_id="coop", topics={"t"}, owned={TopicPartition("t", 0), TopicPartition("t", 1)})
    members = {"eager": eager, "coop": coop}
    assert validation_protocol(RP.EAGER, members) is RP.COOPERATIVE
    assert validation_protocol(RP.EAGER, {"eager": eager}) is RP.EAGER
    assert validation_protocol(RP.COOPERATIVE, {"eager": eager}) is RP.COOPERATIVE
    revoking = {"eager": frozenset(), "coop": frozenset({TopicPartition("t", 0)})}
    validate_plan(revoking, members, {"t": 2}, validation_protocol(RP.EAGER, members))
    with pytest.raises(AssignmentError, match="not assigned"):
        validate_plan(revoking, members, {"t": 2}, RP.EAGER)
    direct = {"eager": frozenset({TopicPartition("t", 1)}), "coop": frozenset({TopicPartition("t", 0)})}
    with pytest.raises(AssignmentError, match="moves directly"):
        validate_plan(direct, members, {"t": 2}, validation_protocol(RP.EAGER, members))
