"""The safety and liveness properties every simulated run is checked against.

Checked as they happen (each names the first step that breaks it):

* **no record lost**: an offset committed for a partition is never above the lowest offset
  no member's application has received yet;
* **no commit beyond hand-out**: a member commits at most the position after the last record
  it handed out (or the offset already committed);
* **committed offsets never go backwards** (the workloads never seek back);
* **no commit for a partition the committer does not own in that generation**: the coordinator
  accepted an OffsetCommit from member M in generation G only for partitions assigned to M in
  G, or still held by M from its earlier assignment and assigned to nobody else in G (the
  cooperative revoke commits with the new generation, as Java's does);
* **at most one unfenced owner per partition**: among members that are in the coordinator's
  current generation, no two hold the same partition in their assignment;
* **no hand-out after removal** (checked by the run, which reads the coordinator's events): no
  member hands out a record once the coordinator has removed its member id;
* **bounded calls**: ``poll(timeout)`` returns within its timeout plus the time its rebalance
  steps took plus 100 ms; ``commit(timeout_ms)``, ``close(timeout_ms)`` within theirs plus 100 ms.

Checked at the end of a run:

* **liveness**: once faults stop, within the stated bound, every partition is owned by one
  live member and every produced record has been handed out;
* **no unexplained duplicate**: a record handed out twice was first handed out by a member
  that later crashed, was stopped, lost the partition, or failed a commit; or handed out again
  by a zombie: a member that later lost that partition or crashed (its ownership was stale).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import attrs

from kgroup.protocol import group_api as mt
from kgroup.protocol.consumer_protocol import decode_assignment
from kgroup.testing.simulation._scheduler import Killed
from kgroup.types import ConsumerRecord, TopicPartition

__all__ = ["Checker", "Violation"]


@attrs.frozen
class Violation:
    """A broken property: which, when (virtual seconds) and the details."""

    rule: str
    at: float
    detail: str

    def __str__(self) -> str:
        return f"[t={self.at:.3f}] {self.rule}: {self.detail}"


class _Handed:
    """Offsets of one partition handed to some application: a bitmap and its low-water mark."""

    __slots__ = ("bits", "low")

    def __init__(self) -> None:
        self.bits = 0
        self.low = 0

    def add(self, offset: int) -> bool:
        """Record ``offset``; True if it was handed out before."""
        mask = 1 << offset
        seen = bool(self.bits & mask)
        self.bits |= mask
        while self.bits >> self.low & 1:
            self.low += 1
        return seen


class Checker:
    """Collects hand-outs, commits and ownership and reports violations."""

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self.violations: list[Violation] = []
        self._handed: dict[TopicPartition, _Handed] = {}
        #: (incarnation, partition) -> the position after the last record it handed out
        self._next: dict[tuple[str, TopicPartition], int] = {}
        #: first hand-out of each offset that was handed out again: (tp, offset) -> (who, when)
        self._first: dict[tuple[TopicPartition, int], tuple[str, float]] = {}
        self._duplicates: list[tuple[TopicPartition, int, str, float, str]] = []
        self._committed: dict[TopicPartition, int] = {}
        #: member_id -> generation_id -> assigned partitions (from SyncGroup responses)
        self._assigned: dict[str, dict[int, frozenset[TopicPartition]]] = {}
        #: member_id -> incarnation name
        self._incarnation_of: dict[str, str] = {}
        #: incarnation -> list of (time, partitions or None for all) that excuse duplicates
        self._excuses: dict[str, list[tuple[float, frozenset[TopicPartition] | None]]] = {}
        self._kinds: dict[str, list[tuple[float, frozenset[TopicPartition] | None, str]]] = {}
        self.commits_accepted = 0
        self.records_handed = 0
        #: check "no commit beyond hand-out" (a ``ParallelProcessor`` may commit past the completions
        #: its partition's previous owner reported, not fetched yet: its checks are its own)
        self.hand_out_bound = True

    def fail(self, rule: str, detail: str) -> None:
        """Record a violation now."""
        self.violations.append(Violation(rule, self._now(), detail))

    # ------------------------------------------------------------------ hand-outs
    def handed_out(self, who: str, records: list[ConsumerRecord]) -> None:
        """``who`` (an incarnation) returned ``records`` from ``poll()``."""
        now = self._now()
        for record in records:
            tp = TopicPartition(record.topic, record.partition)
            handed = self._handed.get(tp)
            if handed is None:
                handed = self._handed[tp] = _Handed()
            if handed.add(record.offset):
                first = self._first.get((tp, record.offset))
                if first is not None:
                    self._duplicates.append((tp, record.offset, first[0], first[1], who))
            else:
                # remember who had it first only while it may be handed out again
                self._first[(tp, record.offset)] = (who, now)
            key = (who, tp)
            if record.offset + 1 > self._next.get(key, -1):
                self._next[key] = record.offset + 1
        self.records_handed += len(records)

    def excuse(self, who: str, partitions: frozenset[TopicPartition] | None, kind: str = "commit") -> None:
        """``who`` crashed, lost ``partitions`` or failed a commit (None: all partitions).

        ``kind`` is "commit" (a failed commit), "lost" or "crash" (also fatal errors).
        """
        self._excuses.setdefault(who, []).append((self._now(), partitions))
        self._kinds.setdefault(who, []).append((self._now(), partitions, kind))

    def _zombie(self, who: str) -> list[tuple[float, frozenset[TopicPartition] | None, str]]:
        return self._kinds.get(who, [])

    def handed_next(self, who: str, tp: TopicPartition) -> int:
        """The position after the last record of ``tp`` that ``who`` handed out (0: none)."""
        return max(self._next.get((who, tp), 0), 0)

    def handed_low(self, tp: TopicPartition) -> int:
        """The lowest offset of ``tp`` no application has received."""
        handed = self._handed.get(tp)
        return handed.low if handed is not None else 0

    # ------------------------------------------------------------------ coordinator side
    def member_is(self, member_id: str, who: str) -> None:
        """Member id ``member_id`` belongs to incarnation ``who``."""
        self._incarnation_of[member_id] = who

    def assigned(self, generation_id: int, member_id: str, partitions: frozenset[TopicPartition]) -> None:
        """``member_id`` was given ``partitions`` in ``generation_id`` (the consumer protocol: its epoch).

        Under the consumer protocol a revocation keeps the epoch: what the member held at that
        epoch is the union of what it was given at it (a revoke commit is for a partition it held).
        """
        plans = self._assigned.setdefault(member_id, {})
        plans[generation_id] = plans.get(generation_id, frozenset()) | partitions

    def synced(self, generation_id: int, member_id: str, assignment: bytes) -> None:
        """The coordinator answered ``member_id``'s SyncGroup of ``generation_id``."""
        try:
            parts = frozenset(decode_assignment(assignment).partitions) if len(assignment) >= 2 else frozenset()
        except Exception:
            parts = frozenset()
        self._assigned.setdefault(member_id, {})[generation_id] = parts

    def _owned_in(self, member_id: str, generation_id: int, tp: TopicPartition) -> bool:
        plans = self._assigned.get(member_id, {})
        if tp in plans.get(generation_id, frozenset()):
            return True
        earlier = [g for g in plans if g < generation_id]
        if not earlier or tp not in plans[max(earlier)]:
            return False
        # held from its earlier assignment: only if nobody else got it in this generation
        return not any(
            tp in gens.get(generation_id, frozenset()) for mid, gens in self._assigned.items() if mid != member_id
        )

    def committed(
        self, request: mt.OffsetCommitRequest, response: mt.OffsetCommitResponse, owner: str | None = None
    ) -> None:
        """The coordinator answered an OffsetCommit; check every accepted partition.

        ``owner`` names the process that sent it: the one way to know who committed when the
        request carries no member id (a manually assigned consumer, outside the group).
        """
        codes = {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}
        who = self._incarnation_of.get(request.member_id, request.member_id)
        if not request.member_id and owner is not None:
            who = owner
        for topic in request.topics:
            for part in topic.partitions:
                if codes.get((topic.name, part.partition_index)) != 0:
                    continue
                tp = TopicPartition(topic.name, part.partition_index)
                offset = part.committed_offset
                self.commits_accepted += 1
                previous = self._committed.get(tp, 0)
                if offset < previous:
                    self.fail("committed offset went backwards", f"{tp}: {previous} -> {offset} by {who}")
                if offset > self.handed_low(tp):
                    self.fail(
                        "record lost",
                        f"{tp} committed at {offset} by {who}, but offset {self.handed_low(tp)} "
                        "was never handed to any application",
                    )
                if self.hand_out_bound and offset > max(self._next.get((who, tp), 0), previous):
                    self.fail(
                        "commit beyond hand-out",
                        f"{who} committed {tp} at {offset}; it handed out up to {self._next.get((who, tp), 0)}",
                    )
                if request.generation_id >= 0 and not self._owned_in(request.member_id, request.generation_id, tp):
                    self.fail(
                        "commit for a partition not owned in its generation",
                        f"{who} ({request.member_id}) committed {tp} in generation {request.generation_id}",
                    )
                self._committed[tp] = max(previous, offset)

    # ------------------------------------------------------------------ end of run
    def check_end(self, thread_errors: Iterable[tuple[str, BaseException | None]], rule: str) -> None:
        """At a run's end: each application thread's error (as ``rule``; a kill is none), then the duplicates."""
        for name, error in thread_errors:
            if error is not None and not isinstance(error, Killed):
                self.fail(rule, f"{name}: {error!r}")
        self.check_duplicates()

    def check_duplicates(self) -> None:
        """Every duplicate hand-out must be explained by its first holder's later trouble."""
        for tp, offset, first_who, first_at, again_who in self._duplicates:
            if self.explained(tp, first_who, first_at, again_who):
                continue
            self.fail(
                "unexplained duplicate",
                f"{tp}@{offset} handed out by {first_who} at {first_at:.3f} and again by {again_who}; "
                f"{first_who} never crashed, lost {tp} or failed a commit afterwards",
            )

    def explained(self, tp: TopicPartition, first_who: str, first_at: float, again_who: str) -> bool:
        """Whether ``tp``'s record, ``first_who``'s at ``first_at``, may be ``again_who``'s again.

        Yes when ``first_who`` later crashed, lost ``tp`` or failed a commit, or when ``again_who``
        was a zombie: it lost ``tp`` or crashed at some point (its ownership was stale).
        """
        excuses = self._excuses.get(first_who, [])
        if any(at >= first_at and (parts is None or tp in parts) for at, parts in excuses):
            return True
        return any(kind != "commit" and (parts is None or tp in parts) for _, parts, kind in self._zombie(again_who))

    @property
    def duplicates(self) -> int:
        """Records handed out more than once."""
        return len(self._duplicates)
