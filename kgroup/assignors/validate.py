"""``validate_plan``: refuse an assignor's plan that would break partition exclusivity.

The leader runs it after every ``assign``, and every property test runs it.
Java checks only the cooperative rule, and only for non-builtin cooperative assignors
(``ConsumerCoordinator.validateCooperativeAssignment``); kgroup checks every rule for every
assignor, because a plan that drops or doubles a partition is never right.

Rules, each an ``AssignmentError`` naming the member and partition:

1. The plan has an entry for every member, and no entry for anyone else.
2. Every assigned partition exists (its topic is in ``partitions_per_topic`` and its number
   is in ``0..n-1``) and is assigned to a member subscribed to its topic.
3. No partition is assigned twice.
4. Completeness: every partition of every topic some member subscribes to is assigned. Under
   COOPERATIVE a partition may be left out only while it is being revoked: some member owns
   it now (``MemberSubscription.owned``) and, as nobody gets it, gives it up this round.
5. COOPERATIVE only (KIP-429): no partition moves directly from one member to another. If a
   member that does not own a partition is given it while another member owns it, the plan
   is refused; the owner must revoke it in one round and it moves in the next. This is Java's
   ``validateCooperativeAssignment``: the partitions added to someone must not overlap the
   partitions revoked from someone (two stale owners, one of which keeps it, is allowed).

Which protocol's rules apply is ``validation_protocol``: the leader's own protocol, except that
an EAGER leader planning for members that report owned partitions checks the COOPERATIVE
rules. An EAGER member revokes everything before JoinGroup and reports nothing; a member that
reports partitions runs COOPERATIVE and keeps consuming them through the rebalance. That
happens in the middle of an online migration (KIP-429 "upgrade"): members on
``("cooperative-sticky", "range")`` run EAGER, members already on ``("cooperative-sticky",)``
run COOPERATIVE, and the group's cooperative-sticky plan correctly leaves out partitions such
members are giving up. Java's EAGER leader checks nothing there; kgroup still refuses a
direct transfer away from a cooperative owner.
"""

from __future__ import annotations

from collections.abc import Mapping

from kgroup.assignors.base import MemberSubscription, Plan
from kgroup.errors import AssignmentError
from kgroup.types import RebalanceProtocol, TopicPartition
from kgroup.types import tp_key as _tp_key

__all__ = ["validate_plan", "validation_protocol"]


def validation_protocol(
    leader_protocol: RebalanceProtocol, members: Mapping[str, MemberSubscription]
) -> RebalanceProtocol:
    """The rules a leader checks its plan under (see the module docstring).

    Args:
        leader_protocol: the protocol the leader runs (``ConsumerConfig.protocol``).
        members: the group's subscriptions, as the leader decoded them.

    Returns:
        COOPERATIVE when the leader runs it or some member reports owned partitions, else EAGER.

    """
    if leader_protocol is RebalanceProtocol.COOPERATIVE or any(m.owned for m in members.values()):
        return RebalanceProtocol.COOPERATIVE
    return RebalanceProtocol.EAGER


def validate_plan(
    plan: Plan,
    members: Mapping[str, MemberSubscription],
    partitions_per_topic: Mapping[str, int],
    protocol: RebalanceProtocol,
) -> None:
    """Check that ``plan`` is a valid assignment of ``partitions_per_topic`` to ``members``.

    Source: KIP-429 (cooperative rebalancing) and Java
    ``ConsumerCoordinator.validateCooperativeAssignment``.

    Args:
        plan: member id -> frozenset[TopicPartition], as an ``Assignor.assign`` returned it.
        members: member id -> ``MemberSubscription`` (topics and currently owned partitions).
        partitions_per_topic: topic -> partition count (int) for the topics that exist.
        protocol: the group's ``RebalanceProtocol``; COOPERATIVE adds the no-direct-transfer
            rule and allows partitions being revoked to stay unassigned.

    Returns:
        None when the plan is valid.

    Raises:
        AssignmentError: the first violated rule (see the module docstring), naming the
            member and partition.

    """
    missing = sorted(set(members) - set(plan))
    if missing:
        raise AssignmentError(f"plan has no entry for member(s) {missing}")
    unknown = sorted(set(plan) - set(members))
    if unknown:
        raise AssignmentError(f"plan names unknown member(s) {unknown}")

    assigned: dict[TopicPartition, str] = {}
    for member_id in sorted(plan):
        subscription = members[member_id]
        for tp in sorted(plan[member_id], key=_tp_key):
            count = partitions_per_topic.get(tp.topic)
            if count is None or not 0 <= tp.partition < count:
                known = "unknown topic" if count is None else f"topic has {count} partitions"
                raise AssignmentError(
                    f"partition {tp} assigned to member {member_id!r} does not exist ({known})"
                )
            if tp.topic not in subscription.topics:
                raise AssignmentError(
                    f"partition {tp} assigned to member {member_id!r}, which is not "
                    f"subscribed to topic {tp.topic!r}"
                )
            previous = assigned.get(tp)
            if previous is not None:
                raise AssignmentError(
                    f"partition {tp} assigned twice: to {previous!r} and to {member_id!r}"
                )
            assigned[tp] = member_id

    owners: dict[TopicPartition, list[str]] = {}
    for member_id in sorted(members):
        for tp in members[member_id].owned:
            owners.setdefault(tp, []).append(member_id)

    cooperative = protocol == RebalanceProtocol.COOPERATIVE
    subscribed = sorted({t for m in members.values() for t in m.topics})
    for topic in subscribed:
        for partition in range(max(partitions_per_topic.get(topic, 0), 0)):
            tp = TopicPartition(topic, partition)
            if tp in assigned:
                continue
            if cooperative and tp in owners:
                continue  # being revoked from its owner this round (KIP-429)
            hint = (
                " (under COOPERATIVE only a partition being revoked from its owner may be left out)"
                if cooperative
                else ""
            )
            raise AssignmentError(f"partition {tp} is not assigned to any member{hint}")

    if cooperative:
        for tp, member_id in sorted(assigned.items(), key=lambda item: _tp_key(item[0])):
            holders = owners.get(tp, [])
            if holders and member_id not in holders:
                raise AssignmentError(
                    f"partition {tp} moves directly from owner(s) {holders} to member "
                    f"{member_id!r}; under COOPERATIVE it must be revoked in one round and "
                    "assigned in the next (KIP-429)"
                )
