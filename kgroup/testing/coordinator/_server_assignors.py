"""The consumer group protocol's server-side assignors (KIP-848): ``uniform`` and ``range``.

Apache Kafka's broker computes a consumer group's target assignment with one of its
``group.consumer.assignors`` (``uniform``, the default, then ``range``): the classes
``UniformAssignor`` (with ``UniformHomogeneousAssignmentBuilder`` and
``UniformHeterogeneousAssignmentBuilder``) and ``RangeAssignor`` of the group-coordinator's
``assignor`` package. These are pure functions over plain values, written from the behaviour
those classes document:

* **range**: per topic, the partitions are cut into contiguous ranges, ``n // k`` each and one
  more for the first ``n % k`` members, members sorted with static members first by instance
  id, then the others by member id. Not sticky (Kafka's is not either): the plan depends only
  on the members and the topics, so a homogeneous group is co-partitioned.
* **uniform**, every member subscribed to the same topics (``UniformHomogeneousAssignmentBuilder``):
  sticky. Each member keeps the partitions of its previous target that are still subscribed,
  up to its quota (``total // members``, one more for the first ``total % members`` members
  visited); everything else goes, in partition order, to the members below their quota.
* **uniform**, different subscriptions (``UniformHeterogeneousAssignmentBuilder``): sticky and
  balanced per topic as far as subscriptions allow. The model keeps each member's previous
  partitions of topics it still subscribes to while it is not above the fair share among
  that topic's subscribers, then hands every other partition to the subscriber holding the
  fewest partitions (ties: member id). Kafka's builder balances the heterogeneous case with
  further moves between members; the model's plan can differ from Kafka's there, but it is
  complete, exclusive and only assigns subscribed topics, which is what the client relies on.

Where Kafka visits members in a ``HashMap``'s order, the model visits them sorted by member id
(one of Kafka's possible orders), so plans are deterministic.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Final

import attrs

__all__ = ["ASSIGNORS", "AssignmentSpec", "MemberSpec", "assign"]

Plan = dict[str, dict[uuid.UUID, frozenset[int]]]


@attrs.frozen(kw_only=True)
class MemberSpec:
    """One member as the assignor sees it (Kafka ``MemberSubscriptionAndAssignmentImpl``)."""

    member_id: str
    instance_id: str | None
    subscribed: frozenset[uuid.UUID]
    current: Mapping[uuid.UUID, frozenset[int]]
    """the member's previous *target* assignment"""


@attrs.frozen(kw_only=True)
class AssignmentSpec:
    """The group as the assignor sees it (Kafka ``GroupSpecImpl`` and ``SubscribedTopicDescriber``)."""

    members: tuple[MemberSpec, ...]
    partitions: Mapping[uuid.UUID, int]
    """topic id -> partition count, for the topics some member subscribes to that exist"""


def _range(spec: AssignmentSpec) -> Plan:
    """Kafka ``RangeAssignor.assign``: contiguous ranges per topic, static members first."""
    static = sorted((m for m in spec.members if m.instance_id is not None), key=lambda m: m.instance_id or "")
    dynamic = sorted((m for m in spec.members if m.instance_id is None), key=lambda m: m.member_id)
    ordered = static + dynamic
    plan: Plan = {m.member_id: {} for m in ordered}
    for topic_id in sorted(spec.partitions, key=str):
        count = spec.partitions[topic_id]
        subscribers = [m for m in ordered if topic_id in m.subscribed]
        if not subscribers:
            continue
        quota, extra = divmod(count, len(subscribers))
        start = 0
        for member in subscribers:
            size = quota + (1 if extra > 0 else 0)
            extra -= 1 if extra > 0 else 0
            end = min(start + size, count)
            if start < end:
                plan[member.member_id][topic_id] = frozenset(range(start, end))
            start = end
    return plan


def _uniform_homogeneous(spec: AssignmentSpec) -> Plan:
    """Kafka ``UniformHomogeneousAssignmentBuilder.build``: keep up to the quota, fill the rest."""
    members = sorted(spec.members, key=lambda m: m.member_id)
    topics = sorted(members[0].subscribed & set(spec.partitions), key=str)
    if not topics:
        return {m.member_id: {} for m in members}
    total = sum(spec.partitions[t] for t in topics)
    owned = {(t, p) for m in members for t, ps in m.current.items() if t in spec.partitions for p in ps}
    unassigned = [(t, p) for t in topics for p in range(spec.partitions[t]) if (t, p) not in owned]
    minimum, extra = divmod(total, len(members))
    plan: Plan = {}
    unfilled: list[tuple[str, int]] = []
    for member in members:
        quota = minimum + (1 if extra > 0 else 0)
        extra -= 1 if extra > 0 else 0
        kept: dict[uuid.UUID, set[int]] = {}
        for topic_id in sorted(member.current, key=str):
            partitions = sorted(member.current[topic_id])
            if topic_id not in topics:
                continue
            valid = [p for p in partitions if p < spec.partitions[topic_id]]
            for partition in valid:
                if quota > 0:
                    quota -= 1
                    kept.setdefault(topic_id, set()).add(partition)
                else:
                    unassigned.append((topic_id, partition))
        if quota > 0:
            unfilled.append((member.member_id, quota))
        plan[member.member_id] = {t: frozenset(ps) for t, ps in kept.items()}
    index = 0
    for member_id, quota in unfilled:
        grown = {t: set(ps) for t, ps in plan[member_id].items()}
        for _ in range(quota):
            if index >= len(unassigned):
                break
            topic_id, partition = unassigned[index]
            index += 1
            grown.setdefault(topic_id, set()).add(partition)
        plan[member_id] = {t: frozenset(ps) for t, ps in grown.items()}
    if index < len(unassigned):
        raise AssertionError("uniform assignor left partitions unassigned (a model bug)")
    return plan


def _uniform_heterogeneous(spec: AssignmentSpec) -> Plan:
    """A sticky, greedy stand-in for Kafka ``UniformHeterogeneousAssignmentBuilder`` (see the module doc)."""
    members = sorted(spec.members, key=lambda m: m.member_id)
    plan: dict[str, dict[uuid.UUID, set[int]]] = {m.member_id: {} for m in members}
    counts = {m.member_id: 0 for m in members}
    free: list[tuple[uuid.UUID, int]] = []
    for topic_id in sorted(spec.partitions, key=str):
        count = spec.partitions[topic_id]
        subscribers = [m for m in members if topic_id in m.subscribed]
        if not subscribers:
            continue
        share = -(-count // len(subscribers))
        taken: set[int] = set()
        for member in subscribers:
            kept = 0
            for partition in sorted(member.current.get(topic_id, frozenset())):
                if partition < count and partition not in taken and kept < share:
                    kept += 1
                    taken.add(partition)
                    plan[member.member_id].setdefault(topic_id, set()).add(partition)
                    counts[member.member_id] += 1
        free.extend((topic_id, p) for p in range(count) if p not in taken)
    for topic_id, partition in free:
        candidates = [m.member_id for m in members if topic_id in m.subscribed]
        chosen = min(candidates, key=lambda mid: (len(plan[mid].get(topic_id, ())), counts[mid], mid))
        plan[chosen].setdefault(topic_id, set()).add(partition)
        counts[chosen] += 1
    return {mid: {t: frozenset(ps) for t, ps in topics.items()} for mid, topics in plan.items()}


def _uniform(spec: AssignmentSpec) -> Plan:
    """Kafka ``UniformAssignor.assign``: the homogeneous builder when all subscriptions are equal."""
    if len({m.subscribed for m in spec.members}) <= 1:
        return _uniform_homogeneous(spec)
    return _uniform_heterogeneous(spec)


ASSIGNORS: Final = {"uniform": _uniform, "range": _range}
"""The server assignors by name (Kafka's ``group.consumer.assignors`` default: ``uniform``, ``range``)."""


def assign(name: str, spec: AssignmentSpec) -> Plan:
    """The target assignment ``name`` computes for ``spec``: member id -> topic id -> partitions.

    Raises:
        KeyError: no assignor of that name.

    """
    if not spec.members:
        return {}
    return ASSIGNORS[name](spec)
