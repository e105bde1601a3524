"""Private core of the sticky assignors: Java's ``AbstractStickyAssignor`` algorithm.

Source: Apache Kafka ``clients/.../consumer/internals/AbstractStickyAssignor.java`` (3.x/4.0
line: KIP-54 sticky assignment, KIP-341 generation tie-breaking, KIP-792 generation in the
Subscription, the ``ConstrainedAssignmentBuilder`` fast path of KAFKA-9987 and the
``GeneralAssignmentBuilder``). Re-expressed, not translated; differences from Java:

* Java iterates ``HashMap``s in several places; kgroup iterates members in member-id order
  (the order Java itself sorts its "unfilled members" lists in) so the plan is deterministic.
* A claim on a partition is settled by one order-independent rule: the single claimant with
  the highest generation owns it; two or more claimants at that generation invalidate it (no
  one keeps it). This is what Java's pairwise scan computes; Java compares the claimant's
  member-data generation with the *other* claimant's Subscription generation, kgroup uses the
  member-data generation for both.
* Owned partitions that do not exist (a number at or above the topic's count) are dropped.
* The general path moves a partition back to its previous (lower-generation) owner only when
  that member still subscribes to the topic.
* Rack awareness (KIP-881) follows Java's ``RackInfo``: it is used only when some member has
  a rack, some partition has a replica in one of those racks, and not every partition has the
  same replica racks (Java's ``useRackAwareAssignment`` with ``preferRackAwareLogic`` off).
  Then an owned partition is kept only by a member in one of its replicas' racks; new
  partitions go first to a member in a matching rack (constrained path: round-robin within
  racks up to the quotas, partitions with the fewest same-rack members first; general path: the
  least-loaded matching member), and the rest as without racks. Balance always wins over racks.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping

import attrs

from kgroup.assignors.base import MemberSubscription
from kgroup.types import TopicPartition
from kgroup.types import tp_key as _tp_key

__all__ = ["MemberData", "RackInfo", "StickyResult", "cooperative_adjust", "sticky_assign"]


@attrs.frozen
class MemberData:
    """What a member claims to have owned: its partitions and their generation (-1: unknown)."""

    partitions: tuple[TopicPartition, ...]
    generation: int


@attrs.frozen
class StickyResult:
    """The balanced sticky plan, and the partitions Java marks as "transferring ownership".

    Attributes:
        plan: member id -> set of partitions.
        transferring: the constrained path's ``partitionsTransferringOwnership`` (partitions
            given to a member other than the one that kept them in the previous generation, and
            partitions claimed by several members of one generation); None after the general
            path, where Java computes it afterwards from the owned partitions.

    """

    plan: dict[str, set[TopicPartition]]
    transferring: frozenset[TopicPartition] | None


class RackInfo:
    """Java's ``AbstractStickyAssignor.RackInfo``: member racks and partition replica racks.

    ``active`` is False (and every query answers as if there were no racks) unless rack-aware
    assignment applies (see the module docstring).
    """

    def __init__(
        self,
        members: Mapping[str, MemberSubscription],
        partition_racks: Mapping[TopicPartition, frozenset[str]],
    ) -> None:
        by_rack: dict[str, int] = {}
        racks: dict[str, str] = {}
        for member_id, m in members.items():
            if m.rack:
                racks[member_id] = m.rack
                by_rack[m.rack] = by_rack.get(m.rack, 0) + 1
        all_partition_racks = set().union(*partition_racks.values()) if partition_racks else set()
        self.active = bool(
            racks
            and not set(by_rack).isdisjoint(all_partition_racks)
            and any(r != all_partition_racks for r in partition_racks.values())
        )
        self.member_racks: dict[str, str] = racks if self.active else {}
        self.partition_racks: Mapping[TopicPartition, frozenset[str]] = partition_racks if self.active else {}
        self.members_by_partition: dict[TopicPartition, int] = (
            {tp: sum(by_rack.get(r, 0) for r in rs) for tp, rs in partition_racks.items()} if self.active else {}
        )

    def mismatch(self, member_id: str, tp: TopicPartition) -> bool:
        """True when the member has a rack and none of ``tp``'s replicas is in it."""
        rack = self.member_racks.get(member_id)
        return rack is not None and rack not in self.partition_racks.get(tp, frozenset())

    def matches(self, member_id: str, tp: TopicPartition) -> bool:
        """True when the member has a rack holding one of ``tp``'s replicas."""
        rack = self.member_racks.get(member_id)
        return rack is not None and rack in self.partition_racks.get(tp, frozenset())

    def next_match(self, tp: TopicPartition, candidates: list[str], first: int) -> int:
        """Index of the first candidate from ``first`` (wrapping) in a rack of ``tp``, or -1."""
        if not self.partition_racks.get(tp):
            return -1
        n = len(candidates)
        for i in range(n):
            index = (first + i) % n
            if self.matches(candidates[index], tp):
                return index
        return -1


_NO_RACKS: Mapping[TopicPartition, frozenset[str]] = {}


def sticky_assign(
    partitions_per_topic: Mapping[str, int],
    members: Mapping[str, MemberSubscription],
    member_data: Mapping[str, MemberData],
    partition_racks: Mapping[TopicPartition, frozenset[str]] = _NO_RACKS,
) -> StickyResult:
    """Run the sticky algorithm (Java ``AbstractStickyAssignor.assignPartitions``).

    Args:
        partitions_per_topic: topic -> partition count for the topics that exist.
        members: member id -> subscription (its ``topics`` and ``rack`` are used).
        member_data: member id -> its previous ownership claim.
        partition_racks: partition -> racks of its replicas (KIP-881); empty: no rack info.

    Returns:
        The plan (every member present) and the constrained path's transferring partitions.

    """
    ids = sorted(members)
    subscribed = {t for m in members.values() for t in m.topics}
    counts = {t: n for t, n in partitions_per_topic.items() if t in subscribed and n > 0}
    owned, multi, max_generation = _resolve_claims(ids, counts, member_data)
    racks = RackInfo(members, {tp: r for tp, r in partition_racks.items() if tp.topic in counts})
    first = members[ids[0]].topics if ids else frozenset()
    if all(members[m].topics == first for m in ids):
        return _constrained(ids, counts, owned, multi, racks)
    prev = _previous_owners(ids, member_data, max_generation)
    return StickyResult(_General(ids, counts, members, owned, prev, racks).build(), None)


def _resolve_claims(
    ids: list[str], counts: Mapping[str, int], member_data: Mapping[str, MemberData]
) -> tuple[dict[str, list[TopicPartition]], set[TopicPartition], int]:
    """Settle who owns what: highest generation wins, a tie at the top invalidates the claim."""
    claims: dict[TopicPartition, list[tuple[int, str]]] = {}
    max_generation = -1
    for member_id in ids:
        data = member_data[member_id]
        max_generation = max(max_generation, data.generation)
        for tp in sorted(set(data.partitions), key=_tp_key):
            if 0 <= tp.partition < counts.get(tp.topic, 0):
                claims.setdefault(tp, []).append((data.generation, member_id))
    owned: dict[str, list[TopicPartition]] = {m: [] for m in ids}
    multi: set[TopicPartition] = set()
    for tp, claimants in claims.items():
        top = max(generation for generation, _ in claimants)
        winners = [member_id for generation, member_id in claimants if generation == top]
        if len(winners) == 1:
            owned[winners[0]].append(tp)
        else:
            multi.add(tp)
    return owned, multi, max_generation


def _previous_owners(
    ids: list[str], member_data: Mapping[str, MemberData], max_generation: int
) -> dict[TopicPartition, str]:
    """Java's ``prevAssignment``: per partition, its claimant of highest generation below the max."""
    best: dict[TopicPartition, tuple[int, str]] = {}
    for member_id in ids:
        data = member_data[member_id]
        if data.generation >= max_generation:
            continue
        for tp in data.partitions:
            seen = best.get(tp)
            if seen is None or data.generation > seen[0]:
                best[tp] = (data.generation, member_id)
    return {tp: member_id for tp, (_, member_id) in best.items()}


def _constrained(
    ids: list[str],
    counts: Mapping[str, int],
    owned: Mapping[str, list[TopicPartition]],
    multi: set[TopicPartition],
    racks: RackInfo,
) -> StickyResult:
    """Java's ``ConstrainedAssignmentBuilder``: every member subscribes to the same topics.

    Keep owned partitions up to the quota (``maxQuota`` for the first members that can, else
    ``minQuota``; owned partitions ordered by partition number, then topic; with racks, only
    those in the member's rack), then (with racks) deal new partitions round-robin to members
    in a matching rack up to the quotas, then deal the rest round-robin: first to members under
    ``minQuota``, then one each to members at ``minQuota`` until ``total % members`` members
    hold ``maxQuota``.
    """
    total = sum(counts.values())
    plan: dict[str, set[TopicPartition]] = {m: set() for m in ids}
    if not ids:
        return StickyResult(plan, frozenset())
    min_quota, expected_over = divmod(total, len(ids))
    max_quota = min_quota + (1 if expected_over else 0)
    current_over = 0
    under: list[str] = []
    exact: list[str] = []
    maybe_revoked: dict[TopicPartition, str] = {}
    assigned: set[TopicPartition] = set()

    for member_id in ids:
        mine = []
        for tp in sorted(owned[member_id], key=lambda tp: (tp.partition, tp.topic)):
            if racks.mismatch(member_id, tp):
                maybe_revoked[tp] = member_id
            else:
                mine.append(tp)
        if len(mine) < min_quota:
            keep = len(mine)
            under.append(member_id)
        elif len(mine) >= max_quota and current_over < expected_over:
            keep = max_quota
            current_over += 1
            if current_over == expected_over:
                exact.clear()
        else:
            keep = min_quota
            if current_over < expected_over:
                exact.append(member_id)
        plan[member_id].update(mine[:keep])
        assigned.update(mine[:keep])
        for tp in mine[keep:]:
            maybe_revoked[tp] = member_id

    transferring: set[TopicPartition] = set()

    def give(tp: TopicPartition, member_id: str) -> int:
        plan[member_id].add(tp)
        revoked_from = maybe_revoked.get(tp)
        if (revoked_from is not None and revoked_from != member_id) or tp in multi:
            transferring.add(tp)
        return len(plan[member_id])

    unassigned = [
        TopicPartition(topic, number)
        for topic in sorted(counts)
        for number in range(counts[topic])
        if TopicPartition(topic, number) not in assigned
    ]
    if racks.active:
        unassigned.sort(key=lambda tp: racks.members_by_partition.get(tp, 0))
        unassigned, current_over = _rack_round_robin(
            unassigned, racks, give, under, exact, plan, min_quota, max_quota, expected_over, current_over
        )

    under_queue = deque(under)
    exact_queue = deque(exact)
    for tp in unassigned:
        if under_queue:
            member_id = under_queue.popleft()
            if give(tp, member_id) == min_quota:
                exact_queue.append(member_id)
            else:
                under_queue.append(member_id)
        elif exact_queue:
            give(tp, exact_queue.popleft())
        else:  # pragma: no cover - the quotas account for every partition
            raise RuntimeError(f"sticky assignor: no member left for {tp}")
    return StickyResult(plan, frozenset(transferring))


def _rack_round_robin(
    unassigned: list[TopicPartition],
    racks: RackInfo,
    give: Callable[[TopicPartition, str], int],
    under: list[str],
    exact: list[str],
    plan: Mapping[str, set[TopicPartition]],
    min_quota: int,
    max_quota: int,
    expected_over: int,
    current_over: int,
) -> tuple[list[TopicPartition], int]:
    """Java's ``assignRackAwareRoundRobin``: fill members within racks up to the quotas.

    Updates ``under`` and ``exact`` in place; returns the partitions still unassigned (in
    order) and the new count of members above ``min_quota``.
    """
    left: list[TopicPartition] = []
    next_index = 0
    for tp in unassigned:
        member_id: str | None = None
        index = racks.next_match(tp, under, next_index)
        if index >= 0:
            member_id = under[index]
            count = len(plan[member_id]) + 1
            if count >= min_quota:
                under.pop(index)
                if count < max_quota and current_over < expected_over:
                    exact.append(member_id)
            else:
                index += 1
            next_index = index % len(under) if under else 0
        elif exact:
            first = racks.next_match(tp, exact, 0)
            if first >= 0:
                member_id = exact[first]
                if len(plan[member_id]) + 1 == max_quota:
                    exact.pop(first)
                    current_over += 1
                    if current_over == expected_over:
                        exact.clear()
        if member_id is None:
            left.append(tp)
        else:
            give(tp, member_id)
    return left, current_over


class _Movements:
    """Java's ``PartitionMovements``: net moves per partition, indexed by topic and member pair.

    Used to avoid shuffling partitions of one topic back and forth between two members: when a
    partition is to move from A to B and some partition of the same topic already moved from B
    to A (net, from its original owner), that one moves back instead.
    """

    def __init__(self) -> None:
        self._by_partition: dict[TopicPartition, tuple[str, str]] = {}
        self._by_topic: dict[str, dict[tuple[str, str], set[TopicPartition]]] = {}

    def _remove(self, tp: TopicPartition) -> tuple[str, str]:
        pair = self._by_partition.pop(tp)
        topic_moves = self._by_topic[tp.topic]
        topic_moves[pair].discard(tp)
        if not topic_moves[pair]:
            del topic_moves[pair]
        if not topic_moves:
            del self._by_topic[tp.topic]
        return pair

    def _add(self, tp: TopicPartition, pair: tuple[str, str]) -> None:
        self._by_partition[tp] = pair
        self._by_topic.setdefault(tp.topic, {}).setdefault(pair, set()).add(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp in self._by_partition:
            source, _ = self._remove(tp)
            if source != new:
                self._add(tp, (source, new))
        else:
            self._add(tp, (old, new))

    def partition_to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        topic_moves = self._by_topic.get(tp.topic)
        if not topic_moves:
            return tp
        if tp in self._by_partition:
            old = self._by_partition[tp][0]
        reverse = topic_moves.get((new, old))
        if not reverse:
            return tp
        return min(reverse)


def _balance_score(sizes: Iterable[int]) -> int:
    """Sum over member pairs of the difference of their sizes (0 is perfectly balanced)."""
    ordered = sorted(sizes)
    n = len(ordered)
    return sum(size * (2 * i - n + 1) for i, size in enumerate(ordered))


class _General:
    """Java's ``GeneralAssignmentBuilder``: subscriptions differ.

    1. Keep every valid owned partition (dropping those whose owner no longer subscribes to the
       topic, which makes a "revocation required").
    2. Give each unowned partition (topics with the fewest potential consumers first) to the
       least-loaded member subscribed to its topic (ties: member id).
    3. While some partition's owner has at least two more partitions than another member that
       could take it, move it: back to its previous owner if that one is two behind, else to the
       least-loaded eligible member. Newly assigned partitions are tried first unless a
       revocation was required. If the moves did not lower the balance score (and it is not the
       first assignment), they are undone.
    """

    def __init__(
        self,
        ids: list[str],
        counts: Mapping[str, int],
        members: Mapping[str, MemberSubscription],
        owned: Mapping[str, list[TopicPartition]],
        prev: dict[TopicPartition, str],
        racks: RackInfo,
    ) -> None:
        self.ids = ids
        self.racks = racks
        self.counts = counts
        self.prev = prev
        self.potential: dict[str, list[str]] = {t: [] for t in counts}
        self.topics: dict[str, frozenset[str]] = {}
        for member_id in ids:
            mine = frozenset(t for t in members[member_id].topics if t in counts)
            self.topics[member_id] = mine
            for topic in sorted(mine):
                self.potential[topic].append(member_id)
        self.current: dict[str, set[TopicPartition]] = {m: set() for m in ids}
        self.owner: dict[TopicPartition, str] = {}
        self.revocation_required = False
        for member_id in ids:
            for tp in owned[member_id]:
                if tp.topic in self.topics[member_id] and not racks.mismatch(member_id, tp):
                    self.current[member_id].add(tp)
                    self.owner[tp] = member_id
                else:
                    self.revocation_required = True
        self.movements = _Movements()

    def _least_loaded(self, topic: str) -> str:
        return min(self.potential[topic], key=lambda m: (len(self.current[m]), m))

    def build(self) -> dict[str, set[TopicPartition]]:
        counts = self.counts
        ordered_topics = sorted(counts, key=lambda t: (len(self.potential[t]), t))
        all_partitions = [TopicPartition(t, p) for t in ordered_topics for p in range(counts[t])]
        initializing = not self.owner
        unassigned = [tp for tp in all_partitions if tp not in self.owner]
        remaining = unassigned
        if self.racks.active:  # first to the least-loaded member not in another rack
            remaining = []
            for tp in unassigned:
                matching = [m for m in self.potential[tp.topic] if not self.racks.mismatch(m, tp)]
                if matching:
                    member_id = min(matching, key=lambda m: (len(self.current[m]), m))
                    self.current[member_id].add(tp)
                    self.owner[tp] = member_id
                else:
                    remaining.append(tp)
        for tp in remaining:
            member_id = self._least_loaded(tp.topic)
            self.current[member_id].add(tp)
            self.owner[tp] = member_id

        fixed_topics = {t for t, consumers in self.potential.items() if len(consumers) < 2}
        reassignable = [tp for tp in all_partitions if tp.topic not in fixed_topics]
        new_reassignable = [tp for tp in unassigned if tp.topic not in fixed_topics]
        participating = [
            m
            for m in self.ids
            if len(self.current[m]) < sum(counts[t] for t in self.topics[m])
            or any(tp.topic not in fixed_topics for tp in self.current[m])
        ]
        before = {m: set(self.current[m]) for m in participating}
        before_owner = dict(self.owner)

        if not self.revocation_required:
            self._perform_reassignments(new_reassignable)
        performed = self._perform_reassignments(reassignable)

        if (
            not initializing
            and performed
            and _balance_score(len(self.current[m]) for m in participating)
            >= _balance_score(len(before[m]) for m in participating)
        ):
            self.current.update(before)
            self.owner = before_owner
        return self.current

    def _perform_reassignments(self, partitions: list[TopicPartition]) -> bool:
        performed = False
        modified = True
        while modified:
            modified = False
            for tp in partitions:
                owner_size = len(self.current[self.owner[tp]])
                previous = self.prev.get(tp)
                if (
                    previous is not None
                    and tp.topic in self.topics[previous]
                    and owner_size > len(self.current[previous]) + 1
                ):
                    self._reassign(tp, previous)
                    performed = modified = True
                    continue
                if any(owner_size > len(self.current[m]) + 1 for m in self.potential[tp.topic]):
                    self._reassign(tp, self._least_loaded(tp.topic))
                    performed = modified = True
        return performed

    def _reassign(self, tp: TopicPartition, new: str) -> None:
        actual = self.movements.partition_to_move(tp, self.owner[tp], new)
        old = self.owner[actual]
        self.movements.move(actual, old, new)
        self.current[old].discard(actual)
        self.current[new].add(actual)
        self.owner[actual] = new


def cooperative_adjust(
    plan: dict[str, set[TopicPartition]],
    members: Mapping[str, MemberSubscription],
    transferring: frozenset[TopicPartition] | None,
) -> None:
    """Remove, in place, every partition that would move directly from one owner to another.

    This is Java's ``CooperativeStickyAssignor.adjustAssignment`` (KIP-429): the balanced plan is
    computed first, then partitions "transferring ownership" are taken out of their new owner's
    assignment, so the old owner revokes them this round and the follow-up rebalance assigns
    them. Removed: the constrained path's ``transferring`` set, and (Java's
    ``computePartitionsTransferringOwnership``, applied always as the rule itself) every
    partition given to a member that does not own it while some other member owns it.
    """
    owners: dict[TopicPartition, set[str]] = {}
    for member_id, subscription in members.items():
        for tp in subscription.owned:
            owners.setdefault(tp, set()).add(member_id)
    moving = transferring or frozenset()
    for member_id, tps in plan.items():
        drop = {tp for tp in tps if tp in moving or (tp in owners and member_id not in owners[tp])}
        tps -= drop
