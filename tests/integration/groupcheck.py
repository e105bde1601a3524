"""Group-wide safety checks from timestamps: who owned which partition when, who consumed what.

For the KIP-429 / interop / migration integration tests. Every member, kgroup ``Member`` or peer
process (``peers.Peer``), is seen through ``Side``: its ownership timeline (listener callbacks
with ``time.monotonic()`` stamps) and the records it handed out with the time ``poll()``
returned them. ``ContinuousProducer`` writes to every partition at a steady rate meanwhile.

Conventions, conservative in both directions so that a violation is real:

* a partition is owned from the *start* of ``on_partitions_assigned`` to the *end* of
  ``on_partitions_revoked`` / ``on_partitions_lost`` (a peer: to its ``closing`` event, when it
  stops calling ``poll()``, if no callback ended it earlier);
* a record is consumed at the time the ``poll()`` that returned it returned.

The checks (seed 000 "Rebalancing", seed 001 "Rebalances as Double Barriers", KIP-429):

* ``overlaps``: no partition is owned by two members at the same instant;
* ``consumed_outside_ownership``: a member hands out a record only while it owns the partition,
  which with the first check means no record is consumed by two members while both hold it;
* ``missing``: every produced record was consumed at least once.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import attrs

from tests.integration.harness import Background, EventLog, Member
from tests.integration.peers import Peer

INF = math.inf


@attrs.frozen
class Change:
    """One ownership change of a member: ``kind`` is assigned, revoked, lost or closing."""

    t: float
    kind: str
    partitions: frozenset[int]


@attrs.frozen
class Interval:
    member: str
    partition: int
    start: float
    end: float  # INF while still owned


class Side(Protocol):
    name: str

    def changes(self) -> list[Change]: ...

    def consumed(self) -> list[tuple[float, int, int]]: ...

    def owned(self) -> frozenset[int]: ...


class KgroupSide:
    """A kgroup ``harness.Member`` as a ``Side`` (its listener events come from the shared log)."""

    def __init__(self, member: Member, log: EventLog, topic: str) -> None:
        self.member = member
        self.name = member.name
        self.log = log
        self.topic = topic

    def changes(self) -> list[Change]:
        out = []
        with self.log._lock:
            events = [e for e in self.log.events if e.member == self.name]
        for e in events:
            ps = frozenset(tp.partition for tp in e.partitions if tp.topic == self.topic)
            # assigned counts from the callback's start, revoked/lost until its end
            out.append(Change(e.t_start if e.kind == "assigned" else e.t_end, e.kind, ps))
        return sorted(out, key=lambda c: c.t)

    def consumed(self) -> list[tuple[float, int, int]]:
        return [
            (t, r.partition, r.offset)
            for t, batch in list(self.member.batches)
            for r in batch
            if r.topic == self.topic
        ]

    def owned(self) -> frozenset[int]:
        return frozenset(tp.partition for tp in self.member.assignment() if tp.topic == self.topic)

    def errors(self) -> list[BaseException]:
        return list(self.member.errors)

    def stop(self) -> None:
        self.member.stop()

    def __repr__(self) -> str:
        return f"{self.name}{sorted(self.owned())}"


class PeerSide:
    """A ``peers.Peer`` process (started with ``record=True``) as a ``Side``."""

    def __init__(self, peer: Peer, topic: str) -> None:
        self.peer = peer
        self.name = peer.name
        self.topic = topic

    def changes(self) -> list[Change]:
        out = []
        with self.peer._lock:
            events = list(self.peer.events)
        for e in events:
            if e["event"] in ("assigned", "revoked", "lost"):
                ps = frozenset(p for t, p in e["partitions"] if t == self.topic)
                out.append(Change(e["t"], e["event"], ps))
            elif e["event"] == "closing":
                out.append(Change(e["t"], "closing", frozenset()))
        return sorted(out, key=lambda c: c.t)

    def consumed(self) -> list[tuple[float, int, int]]:
        with self.peer._lock:
            return list(self.peer.consumed)

    def owned(self) -> frozenset[int]:
        return frozenset(p for t, p in self.peer.owned() if t == self.topic)

    def errors(self) -> list[str]:
        return self.peer.errors()

    def stop(self) -> None:
        self.peer.close()

    def __repr__(self) -> str:
        return f"{self.name}{sorted(self.owned())}"


def intervals(side: Side) -> list[Interval]:
    """Replay a member's changes into ownership intervals (open ones end at INF)."""
    start: dict[int, float] = {}
    out: list[Interval] = []
    for c in side.changes():
        if c.kind == "assigned":
            for p in c.partitions:
                start.setdefault(p, c.t)
        else:
            ended = set(start) if c.kind == "closing" else c.partitions & set(start)
            for p in ended:
                out.append(Interval(side.name, p, start.pop(p), c.t))
    out += [Interval(side.name, p, s, INF) for p, s in start.items()]
    return out


def all_intervals(sides: Iterable[Side]) -> list[Interval]:
    return [i for s in sides for i in intervals(s)]


def overlaps(sides: Iterable[Side]) -> list[str]:
    """Pairs of intervals of different members on one partition that overlap in time."""
    by_partition: dict[int, list[Interval]] = defaultdict(list)
    for i in all_intervals(sides):
        by_partition[i.partition].append(i)
    bad = []
    for p, ivs in sorted(by_partition.items()):
        for a, b in itertools.combinations(sorted(ivs, key=lambda i: i.start), 2):
            if a.member != b.member and a.start < b.end and b.start < a.end:
                bad.append(f"partition {p}: {a.member} [{a.start:.3f}, {a.end:.3f}) overlaps "
                           f"{b.member} [{b.start:.3f}, {b.end:.3f})")
    return bad


def consumed_outside_ownership(side: Side) -> list[str]:
    """Records a member handed out while it did not own their partition."""
    ivs: dict[int, list[Interval]] = defaultdict(list)
    for i in intervals(side):
        ivs[i.partition].append(i)
    bad = []
    for t, p, offset in side.consumed():
        if not any(i.start <= t <= i.end for i in ivs[p]):
            bad.append(f"{side.name} consumed {p}@{offset} at {t:.3f} outside its ownership {ivs[p]}")
    return bad


def consumed_offsets(sides: Iterable[Side]) -> dict[tuple[int, int], list[str]]:
    """(partition, offset) -> the members that handed it out, in order."""
    out: dict[tuple[int, int], list[str]] = defaultdict(list)
    for s in sides:
        for _, p, offset in s.consumed():
            out[(p, offset)].append(s.name)
    return out


def split_exactly(sides: Sequence[Side], partitions: int) -> bool:
    """Every partition owned by exactly one of ``sides``, and each side owns one at least."""
    owned = [s.owned() for s in sides]
    return (
        sum(map(len, owned)) == partitions
        and frozenset().union(*owned) == frozenset(range(partitions))
        and all(owned)
    )


def consumption_gaps(times: Sequence[float], start: float, end: float) -> float:
    """The longest gap between consecutive times in ``[start, end]``, counting the edges."""
    inside = sorted(t for t in times if start <= t <= end)
    points = [start, *inside, end]
    return max(b - a for a, b in itertools.pairwise(points))


class ContinuousProducer(Background):
    """Writes one record to every partition of ``topic`` each ``interval_s`` on its own thread.

    ``produced()`` (after ``stop()``) lists every acknowledged ``(partition, offset)``.
    """

    def __init__(self, bootstrap: str, topic: str, partitions: int, interval_s: float = 0.1, **config: Any) -> None:
        """``config``: the KafkaProducer's settings other than ``linger_ms=0, acks=1``."""
        from kafka import KafkaProducer  # the test's own producer (a peer client)

        self.topic = topic
        self.partitions = partitions
        self.interval_s = interval_s
        self._producer: Any = KafkaProducer(bootstrap_servers=bootstrap, **{"linger_ms": 0, "acks": 1, **config})
        self._futures: list[Any] = []
        super().__init__("producer")
        self.errors: list[BaseException] = []

    def _run(self) -> None:
        seq = 0
        next_at = time.monotonic()
        try:
            while not self._stop.is_set():
                for p in range(self.partitions):
                    self._send(p, f"{p}:{seq}".encode())
                seq += 1
                next_at += self.interval_s
                self._stop.wait(max(0.0, next_at - time.monotonic()))  # pacing, not synchronisation
        except BaseException as exc:
            self.errors.append(exc)

    def _send(self, partition: int, value: bytes) -> None:
        self._futures.append(self._producer.send(self.topic, value, partition=partition))

    def count(self) -> int:
        return len(self._futures)

    def stop(self) -> list[tuple[int, int]]:
        """Stop, flush, and return every ``(partition, offset)`` written.

        The deadlines are the producer's own delivery timeout (120 s): a request lost on a loaded
        machine is retried only after its 30 s request timeout, so a flush can outlast 30 s.
        """
        self._stop.set()
        self._thread.join(10)
        self._producer.flush(120)
        produced = []
        for f in self._futures:
            md = f.get(timeout=120)
            produced.append((md.partition, md.offset))
        self._producer.close(10)
        assert not self.errors, self.errors
        return produced

    def close(self) -> None:
        if not self._stop.is_set():
            try:
                self.stop()
            except Exception:
                pass


@attrs.frozen
class Generation:
    """A ``generation_completed`` event of the coordinator model, parsed."""

    t: float  # seconds, comparable with time.monotonic()
    generation_id: int
    leader: str
    protocol: str


def generations(cluster: Any, group: str) -> list[Generation]:
    """The group's completed generations (not the Empty ones), oldest first."""
    out = []
    for e in cluster.model_events(group):
        if e.kind != "generation_completed" or ", leader " not in e.detail:
            continue
        fields = dict(part.split(" ", 1) for part in e.detail.split(", members")[0].split(", "))
        out.append(Generation(e.time_ms / 1000, int(fields["generation"]), fields["leader"], fields["protocol"]))
    return out


def led_by(generation: Generation, name: str) -> bool:
    """Whether the member named ``name`` (its client id, the prefix of its member id) led it."""
    return generation.leader.startswith(name + "-")


def stable_times(cluster: Any, group: str) -> list[float]:
    return [e.time_ms / 1000 for e in cluster.model_events(group) if e.kind == "group_stable"]


def rebalance_starts(cluster: Any, group: str) -> list[float]:
    return [e.time_ms / 1000 for e in cluster.model_events(group) if e.kind == "rebalance_started"]


def describe(sides: Iterable[Side]) -> str:
    """Every member's ownership changes and consumption count, for assertion messages."""
    lines = []
    for s in sides:
        changes = ", ".join(f"{c.t:.3f} {c.kind} {sorted(c.partitions)}" for c in s.changes())
        lines.append(f"{s.name} (consumed {len(s.consumed())}): {changes}")
    return "\n".join(lines)


def moved_away(side: Side, everyone: Iterable[Side], *, unless_membership_changed: bool = False) -> list[str]:
    """Partitions ``side`` revoked (outside close) that it owned again next instead of another
    member: a cooperative member revokes only what moves (KIP-429); an eager one revokes
    everything, also what it gets back.

    ``unless_membership_changed``: a partition that comes back after another member joined or
    left between the revocation and the return is not counted. The follow-up rebalance plans
    again for the members it has: when the member meant to receive the partition has left (a
    rolling restart), the assignor may give it back, as Java's ``CooperativeStickyAssignor`` does.
    """
    sides = list(everyone)
    following = sorted((i for s in sides for i in intervals(s)), key=lambda i: i.start)
    moments = []  # when another member joined (its first change) or left (its close, else its last change)
    for other in sides:
        changes = other.changes()
        if other.name == side.name or not changes:
            continue
        closing = [c.t for c in changes if c.kind == "closing"]
        moments += [changes[0].t, closing[0] if closing else changes[-1].t]
    bad = []
    for change in side.changes():
        if change.kind != "revoked":
            continue
        for p in sorted(change.partitions):
            nxt = next((i for i in following if i.partition == p and i.start >= change.t), None)
            if nxt is None or nxt.member != side.name:
                continue
            if unless_membership_changed and any(change.t < t <= nxt.start for t in moments):
                continue
            bad.append(f"{side.name} revoked {p} at {change.t:.3f} and got it back")
    return bad


def revocations(side: Side) -> list[tuple[Change, frozenset[int]]]:
    """Each revoke of ``side`` with what it owned just before."""
    held: set[int] = set()
    out = []
    for c in side.changes():
        if c.kind == "assigned":
            held |= c.partitions
        elif c.kind in ("revoked", "lost"):
            if c.kind == "revoked":
                out.append((c, frozenset(held)))
            held -= c.partitions
    return out


def ownership_gaps(sides: Iterable[Side], partitions: int) -> dict[int, float]:
    """Per partition, the longest time between one owner's end and the next owner's start."""
    by_partition: dict[int, list[Interval]] = defaultdict(list)
    for i in all_intervals(sides):
        by_partition[i.partition].append(i)
    out = {}
    for p in range(partitions):
        ivs = sorted(by_partition[p], key=lambda i: i.start)
        out[p] = max((b.start - a.end for a, b in itertools.pairwise(ivs)), default=0.0)
    return out


class BareCoordinator:
    """A broker's own group coordinator, no proxy in between (Apache Kafka's, or bare Tansu's).

    ``describe(group)`` is DescribeGroups through ``kgroup.admin.GroupAdmin`` (Java
    ``Admin.describeConsumerGroups``); it knows no generation and no leader (DescribeGroups
    v0-v5 carries neither), so checks that need them run through the coordinator model only.
    """

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap_servers = bootstrap
        self._admin: Any = None

    def describe(self, group: str) -> Any:
        from kgroup.admin import GroupAdmin

        if self._admin is None:
            self._admin = GroupAdmin.connect(self.bootstrap_servers, timeout_ms=10000, client_id="groupcheck")
        return self._admin.describe_group(group, timeout_ms=10000)

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    def __repr__(self) -> str:
        return f"BareCoordinator({self.bootstrap_servers})"


def is_model(cluster: Any) -> bool:
    """Whether ``cluster`` is a ``CoordinatorProxy`` (the coordinator model, inspectable)."""
    return not isinstance(cluster, BareCoordinator)


@attrs.frozen
class Described:
    """A group as its coordinator describes it, from the model or from DescribeGroups."""

    state: str
    protocol: str
    #: (member id, group instance id, assigned partitions as (topic, partition))
    members: tuple[tuple[str, str | None, frozenset[tuple[str, int]]], ...]


def describe_group(cluster: Any, group: str) -> Described:
    """``group`` as the coordinator under test describes it: the proxy's model, or the broker's
    own DescribeGroups answer (``BareCoordinator``)."""
    from kgroup.protocol.consumer_protocol import decode_assignment
    from kgroup.testing.coordinator import DescribeGroupsRequest

    if not is_model(cluster):
        d = cluster.describe(group)
        return Described(d.state, d.protocol, tuple(
            (m.member_id, m.group_instance_id, frozenset((tp.topic, tp.partition) for tp in m.assignment))
            for m in d.members
        ))
    request = DescribeGroupsRequest(api_version=5, groups=(group,))
    d = cluster.call(lambda model: model.describe_groups(request).response.groups[0])
    members = []
    for m in d.members:
        given = decode_assignment(m.member_assignment).partitions if m.member_assignment else ()
        members.append((m.member_id, m.group_instance_id, frozenset((tp.topic, tp.partition) for tp in given)))
    return Described(d.group_state, d.protocol_data, tuple(members))


def settled(cluster: Any, group: str, sides: Sequence[Side], partitions: int) -> bool:
    """The group is Stable with exactly ``sides`` as members, each owns exactly what the
    coordinator's last assignment gave it, and together they own every partition once.

    ``split_exactly`` alone can hold for an instant in the middle of a cooperative rebalance
    (the first round's assignment arrived, the revoke it calls for has not run yet).
    """
    return settled_description(cluster, group, sides, partitions) is not None


def settled_description(cluster: Any, group: str, sides: Sequence[Side], partitions: int) -> Any:
    """The DescribeGroups answer that showed the group settled (see ``settled``), else None.

    Read what a settled group looked like from this answer, not from a second DescribeGroups:
    by then the next rebalance may have begun, and Kafka describes a group that is not Stable
    with an empty protocol name (``GroupMetadataManager.describeGroups``).
    """
    if not split_exactly(sides, partitions):
        return None
    described = describe_group(cluster, group)
    if described.state != "Stable" or len(described.members) != len(sides):
        return None
    for side in sides:
        mine = [given for member_id, _, given in described.members if member_id.startswith(side.name + "-")]
        if len(mine) != 1:
            return None
        if frozenset(p for _, p in mine[0]) != side.owned():
            return None
    return described
