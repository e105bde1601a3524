"""Assignor benchmark: kgroup's four assignors against kafka-python 3.0.12's.

Every kgroup assignor and its kafka-python counterpart get the SAME logical input (topic
partition counts, member ids, subscriptions, previous ownership and its generation), each in
its own wire form:

* range / roundrobin: member ids and subscribed topics.
* sticky (EAGER): the previous assignment travels in ``user_data`` (a member revoked everything
  before joining); both get the very bytes kafka-python's ``StickyPartitionAssignor._metadata``
  writes (kgroup reads that version-prefixed form too).
* cooperative-sticky: the previous assignment travels in the Subscription's owned partitions with
  its ``generation_id`` (Subscription v2). kafka-python's ``CooperativeStickyAssignor`` gets the
  same; the target compares against kafka-python's ``StickyPartitionAssignor`` (same input, as
  user_data), reported as a second peer.

Scenarios (members x partitions over 10 topics, all members subscribed to all topics; plus one
heterogeneous case where member i subscribes to the 5 topics t(i) .. t(i+4) mod 10):

* ``fresh``: nobody owns anything.
* ``join``: the n members own kgroup's own fresh plan for them (for the sticky family, kgroup's
  sticky plan, given to both clients), generation 1; one member joins whose id sorts in the
  middle (``m{n//2}-j``).
* ``leave``: the same n members own that plan; member ``m{n//2}`` leaves.

For cooperative-sticky a join or leave is two rounds (KIP-429): round one with ``owned`` = the
previous plan; every member then owns what round one gave it (generation 2) and round two runs.
Times are round one (round two's is in the JSON). "moves" = partitions whose owner differs between
the previous plan and the final plan (for cooperative: after round two); "revoked r1" =
partitions revoked in round one. The optimum (identical subscriptions only) is the least number
of moves of any balanced plan: with m members and P partitions every member ends with
q = P // m or q + 1 partitions (P % m members get q + 1); a member keeps at most
min(owned, its target), and giving the q + 1 slots to the members owning the most maximises
what stays, so optimum = P - max kept. "balance" = max - min partitions per member.

Each measurement runs in a forked child (a timeout can stop it): one run, then more runs while
the total stays under ``--budget`` seconds (at most ``--max-runs``); the best is reported.

    python benchmarks/assignors.py                  # 10x100, 100x1000, 1000x10000 (+ hetero 100x1000)
    python benchmarks/assignors.py --quick          # 10x100, 100x1000 only, small budget
    python benchmarks/assignors.py --json out.json  # raw results too
    python benchmarks/assignors.py --profile        # pyinstrument of kgroup cooperative-sticky join at the largest size
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

# peers: benchmarks may import kafka-python directly
import kafka.coordinator.assignors.cooperative_sticky as kp_cooperative  # noqa: E402
import kafka.coordinator.assignors.range as kp_range  # noqa: E402
import kafka.coordinator.assignors.roundrobin as kp_roundrobin  # noqa: E402
import kafka.coordinator.assignors.sticky.sticky_assignor as kp_sticky  # noqa: E402
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription  # noqa: E402
from kafka.structs import TopicPartition as KpTopicPartition  # noqa: E402

from kgroup.assignors import (  # noqa: E402
    CooperativeStickyAssignor,
    MemberSubscription,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
)
from kgroup.types import TopicPartition  # noqa: E402

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
FULL_SIZES = ((10, 100), (100, 1000), (1000, 10000))
QUICK_SIZES = ((10, 100), (100, 1000))
TOPICS = 10
HETERO_TOPICS_PER_MEMBER = 5

PlanDict = dict[str, frozenset[TopicPartition]]


# --- inputs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Member:
    """One member of a logical input: id, topics, previous ownership and its generation."""

    member_id: str
    topics: frozenset[str]
    owned: frozenset[TopicPartition] = frozenset()
    generation: int = -1


@dataclass(frozen=True)
class Case:
    """One logical input, shared by kgroup and kafka-python."""

    partitions_per_topic: dict[str, int]
    members: tuple[Member, ...]


def topic_names(count: int = TOPICS) -> list[str]:
    return [f"t{i}" for i in range(count)]


def partitions_per_topic(total: int, topics: int = TOPICS) -> dict[str, int]:
    names = topic_names(topics)
    base, extra = divmod(total, topics)
    return {t: base + (1 if i < extra else 0) for i, t in enumerate(names)}


def member_ids(n: int) -> list[str]:
    return [f"m{i:04d}" for i in range(n)]


def subscriptions(n: int, subs: str) -> dict[str, frozenset[str]]:
    names = topic_names()
    if subs == "identical":
        return {m: frozenset(names) for m in member_ids(n)}
    return {
        m: frozenset(names[(i + k) % len(names)] for k in range(HETERO_TOPICS_PER_MEMBER))
        for i, m in enumerate(member_ids(n))
    }


def fresh_case(n: int, total: int, subs: str) -> Case:
    topics = partitions_per_topic(total)
    return Case(topics, tuple(Member(m, t) for m, t in subscriptions(n, subs).items()))


def owning_case(base: Case, plan: Mapping[str, frozenset[TopicPartition]], generation: int) -> Case:
    """``base``'s members, each owning its entry of ``plan`` at ``generation``."""
    return Case(
        base.partitions_per_topic,
        tuple(Member(m.member_id, m.topics, frozenset(plan.get(m.member_id, ())), generation) for m in base.members),
    )


def join_case(owning: Case, joiner_topics: frozenset[str]) -> Case:
    n = len(owning.members)
    joiner = Member(f"m{n // 2:04d}-j", joiner_topics)
    return Case(owning.partitions_per_topic, (*owning.members, joiner))


def leave_case(owning: Case) -> Case:
    leaver = f"m{len(owning.members) // 2:04d}"
    return Case(owning.partitions_per_topic, tuple(m for m in owning.members if m.member_id != leaver))


# --- clients ----------------------------------------------------------------------------------


class FakeCluster:
    """The ``ClusterMetadata`` methods kafka-python's assignors call."""

    def __init__(self, counts: Mapping[str, int]) -> None:
        self._counts = dict(counts)

    def topics(self) -> set[str]:
        return set(self._counts)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        count = self._counts.get(topic)
        return None if count is None else set(range(count))


def _grouped(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    out: dict[str, list[int]] = {}
    for tp in sorted(partitions, key=lambda p: (p.topic, p.partition)):
        out.setdefault(tp.topic, []).append(tp.partition)
    return list(out.items())


def _kp_sticky_user_data(m: Member) -> bytes:
    owned = [KpTopicPartition(tp.topic, tp.partition) for tp in sorted(m.owned, key=lambda p: (p.topic, p.partition))]
    sub = kp_sticky.StickyPartitionAssignor._metadata(
        sorted(m.topics), owned if m.generation >= 0 else None, m.generation
    )
    data: bytes = ConsumerProtocolSubscription.decode(sub.encode()).user_data
    return data


@dataclass
class Client:
    """How one client turns a ``Case`` into its own input (untimed) and runs its assignor (timed)."""

    name: str
    prepare: Callable[[Case], Any]
    run: Callable[[Any], Any]
    to_plan: Callable[[Any], PlanDict]


def _kgroup_client(assignor_name: str) -> Client:
    assignor = {
        "range": RangeAssignor,
        "roundrobin": RoundRobinAssignor,
        "sticky": StickyAssignor,
        "cooperative-sticky": CooperativeStickyAssignor,
    }[assignor_name]()

    def prepare(case: Case) -> Any:
        members: dict[str, MemberSubscription] = {}
        for m in case.members:
            if assignor_name == "sticky":
                sub = MemberSubscription(member_id=m.member_id, topics=m.topics, user_data=_kp_sticky_user_data(m))
            elif assignor_name == "cooperative-sticky":
                sub = MemberSubscription(
                    member_id=m.member_id,
                    topics=m.topics,
                    owned=m.owned,
                    generation_id=m.generation,
                    user_data=assignor.subscription_user_data(m.topics, m.generation, m.owned),
                )
            else:
                sub = MemberSubscription(member_id=m.member_id, topics=m.topics)
            members[m.member_id] = sub
        return (dict(case.partitions_per_topic), members)

    def run(prepared: Any) -> Any:
        return assignor.assign(*prepared)

    return Client("kgroup", prepare, run, lambda plan: dict(plan))


def _kafka_python_client(assignor_name: str) -> Client:
    cls: Any = {
        "range": kp_range.RangePartitionAssignor,
        "roundrobin": kp_roundrobin.RoundRobinPartitionAssignor,
        "sticky": kp_sticky.StickyPartitionAssignor,
        "cooperative-sticky": kp_cooperative.CooperativeStickyAssignor,
    }[assignor_name]

    def prepare(case: Case) -> Any:
        members = []
        for m in case.members:
            metadata: Any
            if assignor_name == "sticky":
                sub = kp_sticky.StickyPartitionAssignor._metadata(
                    sorted(m.topics),
                    [
                        KpTopicPartition(tp.topic, tp.partition)
                        for tp in sorted(m.owned, key=lambda p: (p.topic, p.partition))
                    ]
                    if m.generation >= 0
                    else None,
                    m.generation,
                )
                metadata = ConsumerProtocolSubscription.decode(sub.encode())
            elif assignor_name == "cooperative-sticky":
                metadata = ConsumerProtocolSubscription(
                    version=2,
                    topics=sorted(m.topics),
                    user_data=b"",
                    owned_partitions=[
                        ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=ps)
                        for t, ps in _grouped(m.owned)
                    ],
                    generation_id=m.generation,
                )
            else:
                metadata = SimpleNamespace(topics=sorted(m.topics))
            members.append(SimpleNamespace(member_id=m.member_id, group_instance_id=None, metadata=metadata))
        return (FakeCluster(case.partitions_per_topic), members)

    def run(prepared: Any) -> Any:
        # a new object per call: kafka-python's sticky assignors keep per-instance state
        return cls().assign(*prepared)

    def to_plan(result: Any) -> PlanDict:
        return {
            member_id: frozenset(TopicPartition(tp.topic, tp.partition) for tp in a.partitions())
            for member_id, a in result.items()
        }

    return Client(f"kafka-python {cls.name}", prepare, run, to_plan)


def client(kind: str, assignor_name: str) -> Client:
    """``kind``: "kgroup" or "kafka-python"; ``assignor_name``: one of ``ASSIGNORS``."""
    return _kgroup_client(assignor_name) if kind == "kgroup" else _kafka_python_client(assignor_name)


# --- measuring ------------------------------------------------------------------------------


@dataclass
class Timing:
    best_s: float | None = None
    runs: int = 0
    error: str | None = None
    timed_out: float | None = None  # the timeout, if hit
    plan: PlanDict | None = None


def _time_in_child(c: Client, prepared: Any, budget: float, max_runs: int) -> tuple[float, int, PlanDict]:
    gc.collect()
    start = time.perf_counter()
    result = c.run(prepared)
    best = time.perf_counter() - start
    total = best
    runs = 1
    while runs < max_runs and total + best <= budget:
        gc.collect()
        start = time.perf_counter()
        c.run(prepared)
        elapsed = time.perf_counter() - start
        total += elapsed
        best = min(best, elapsed)
        runs += 1
    return best, runs, c.to_plan(result)


def _child(conn: Any, c: Client, prepared: Any, budget: float, max_runs: int) -> None:
    try:
        best, runs, plan = _time_in_child(c, prepared, budget, max_runs)
        conn.send(("ok", best, runs, {m: sorted((tp.topic, tp.partition) for tp in tps) for m, tps in plan.items()}))
    except Exception as e:  # a peer's bug is a result, not a crash of the benchmark
        conn.send(("error", f"{type(e).__name__}: {e}"[:120], 0, None))
    finally:
        conn.close()


def measure(c: Client, case: Case, *, budget: float, max_runs: int, timeout: float) -> Timing:
    """Best-of-N wall time of ``c`` on ``case`` in a forked child, and the plan of the first run."""
    prepared = c.prepare(case)
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, c, prepared, budget, max_runs), daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout + budget + 5):
            return Timing(timed_out=timeout)
        status, best, runs, plan = parent.recv()
    except EOFError:
        return Timing(error="child died")
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        parent.close()
    if status != "ok":
        return Timing(error=str(best))
    return Timing(
        best_s=best,
        runs=runs,
        plan={m: frozenset(TopicPartition(t, p) for t, p in tps) for m, tps in plan.items()},
    )


# --- plan statistics ------------------------------------------------------------------------


def owners(plan: Mapping[str, Iterable[TopicPartition]]) -> dict[TopicPartition, str]:
    return {tp: m for m, tps in plan.items() for tp in tps}


def moves(before: Mapping[str, Iterable[TopicPartition]], after: Mapping[str, Iterable[TopicPartition]]) -> int:
    """Partitions whose owner differs between ``before`` and ``after`` (unowned after counts too)."""
    was, now = owners(before), owners(after)
    return sum(1 for tp in set(was) | set(now) if was.get(tp) != now.get(tp))


def revoked(before: Mapping[str, Iterable[TopicPartition]], after: Mapping[str, Iterable[TopicPartition]]) -> int:
    """Partitions a member of ``after`` owned in ``before`` and lost."""
    return sum(len(set(before.get(m, ())) - set(tps)) for m, tps in after.items())


def balance(plan: Mapping[str, Iterable[TopicPartition]]) -> int:
    sizes = [len(list(tps)) for tps in plan.values()]
    return max(sizes) - min(sizes) if sizes else 0


def optimum_moves(owned_counts: Sequence[int], total: int) -> int:
    """Least owner changes of a balanced plan, identical subscriptions (see module docstring).

    Args:
        owned_counts: for every member of the new group, how many partitions it owns now
            (0 for a joiner); partitions owned by departed members are simply absent.
        total: partition count P.

    """
    q, r = divmod(total, len(owned_counts))
    ranked = sorted(owned_counts, reverse=True)
    kept = sum(min(o, q + 1) for o in ranked[:r]) + sum(min(o, q) for o in ranked[r:])
    return total - kept


def complete(plan: Mapping[str, Iterable[TopicPartition]], case: Case) -> bool:
    """Every partition of a subscribed topic assigned exactly once, to a subscriber."""
    subscribed = {m.member_id: m.topics for m in case.members}
    seen: list[TopicPartition] = [tp for tps in plan.values() for tp in tps]
    want = {
        TopicPartition(t, p)
        for t, n in case.partitions_per_topic.items()
        if any(t in s for s in subscribed.values())
        for p in range(n)
    }
    ok_members = all(tp.topic in subscribed.get(m, ()) for m, tps in plan.items() for tp in tps)
    return ok_members and len(seen) == len(set(seen)) and set(seen) == want


# --- one rebalance (one or two rounds) ----------------------------------------------------


@dataclass
class Outcome:
    """One client's result on one scenario."""

    time_s: float | None = None
    runs: int = 0
    error: str | None = None
    timed_out: float | None = None
    round2_s: float | None = None
    moves: int | None = None
    revoked_round1: int | None = None
    revoked_round2: int | None = None
    balance: int | None = None
    complete: bool | None = None
    plan: PlanDict | None = field(default=None, repr=False)


def rebalance(
    c: Client,
    assignor_name: str,
    case: Case,
    previous: Mapping[str, frozenset[TopicPartition]],
    *,
    budget: float,
    max_runs: int,
    timeout: float,
) -> Outcome:
    """Run ``c`` on ``case`` (members owning ``previous``); cooperative: round one and round two."""
    first = measure(c, case, budget=budget, max_runs=max_runs, timeout=timeout)
    out = Outcome(time_s=first.best_s, runs=first.runs, error=first.error, timed_out=first.timed_out)
    if first.plan is None:
        return out
    final = first.plan
    if assignor_name == "cooperative-sticky":
        out.revoked_round1 = revoked(previous, first.plan)
        round2 = owning_case(case, first.plan, max([m.generation for m in case.members] + [0]) + 1)
        second = measure(c, round2, budget=budget, max_runs=max_runs, timeout=timeout)
        out.round2_s = second.best_s
        if second.plan is None:
            out.error = second.error or (f"round 2 > {second.timed_out:g} s" if second.timed_out else None)
            return out
        out.revoked_round2 = revoked(first.plan, second.plan)
        final = second.plan
    out.moves = moves(previous, final)
    out.balance = balance(final)
    out.complete = complete(final, case)
    out.plan = final
    return out


# --- the whole benchmark ------------------------------------------------------------------


def run(
    sizes: Sequence[tuple[int, int]] = FULL_SIZES,
    hetero: Sequence[tuple[int, int]] = ((100, 1000),),
    *,
    assignors: Sequence[str] = ASSIGNORS,
    budget: float = 2.0,
    max_runs: int = 7,
    timeout: float = 120.0,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Measure every assignor on every case; returns ``{"rows": [...], "seed000": [...]}``.

    Each row: assignor, size ("nxP"), members, partitions, subs, scenario, optimum (or None),
    and per client ("kgroup", "kafka-python", and for cooperative-sticky "kafka-python sticky")
    an ``Outcome`` as a dict (without the plan).
    """
    rows: list[dict[str, Any]] = []
    cases = [(n, p, "identical") for n, p in sizes] + [(n, p, "heterogeneous") for n, p in hetero]
    for n, total, subs in cases:
        base = fresh_case(n, total, subs)
        # previous plans: each assignor's own kgroup plan; the sticky family shares kgroup's sticky plan
        prev_by_assignor: dict[str, PlanDict] = {}
        kp_sticky_cache: dict[str, Outcome] = {}
        for assignor_name in assignors:
            source = "sticky" if assignor_name == "cooperative-sticky" else assignor_name
            if source not in prev_by_assignor:
                kg = client("kgroup", source)
                prev_by_assignor[source] = dict(kg.run(kg.prepare(base)))
            previous = prev_by_assignor[source]
            owning = owning_case(base, previous, 1)
            scenarios = {
                "fresh": (base, {}),
                "join": (
                    join_case(
                        owning,
                        base.members[0].topics
                        if subs == "identical"
                        else frozenset(topic_names()[:HETERO_TOPICS_PER_MEMBER]),
                    ),
                    previous,
                ),
                "leave": (leave_case(owning), previous),
            }
            for scenario, (case, prev) in scenarios.items():
                row: dict[str, Any] = {
                    "assignor": assignor_name,
                    "size": f"{n}x{total}",
                    "members": n,
                    "partitions": total,
                    "subs": subs,
                    "scenario": scenario,
                    "optimum": None,
                }
                if subs == "identical" and scenario != "fresh":
                    counts = [len(m.owned) for m in case.members]
                    row["optimum"] = optimum_moves(counts, total)
                peers: list[tuple[str, Client, str]] = [
                    ("kgroup", client("kgroup", assignor_name), assignor_name),
                    ("kafka-python", client("kafka-python", assignor_name), assignor_name),
                ]
                if assignor_name == "cooperative-sticky":
                    peers.append(("kafka-python sticky", client("kafka-python", "sticky"), "sticky"))
                for label, c, mode in peers:
                    if progress:
                        progress(f"{assignor_name} {n}x{total} {subs} {scenario} {label}")
                    if label == "kafka-python sticky" and scenario in kp_sticky_cache:
                        outcome = kp_sticky_cache[scenario]
                    else:
                        outcome = rebalance(c, mode, case, prev, budget=budget, max_runs=max_runs, timeout=timeout)
                        if label == "kafka-python" and assignor_name == "sticky":
                            kp_sticky_cache[scenario] = outcome
                    d = {k: v for k, v in outcome.__dict__.items() if k != "plan"}
                    row[label] = d
                rows.append(row)
    return {"rows": rows, "seed000": seed000()}


def seed000() -> list[dict[str, Any]]:
    """The worked example of the book chapter "Group Membership and Partition Assignment": one topic "T" of 8
    partitions, consumers C0.. grown 1 -> 4.

    Every assignor chains its own plans (the plan at k consumers is the previous plan at k + 1).
    The chapter gives the optimum for each step (4, 2, 2 moves); it is recomputed here. The
    shrink 4 -> 1 (the highest consumer leaves) is not in the chapter.
    """
    topics = {"T": 8}
    out: list[dict[str, Any]] = []
    steps = [(1, 2), (2, 3), (3, 4), (4, 3), (3, 2), (2, 1)]
    for kind in ("kgroup", "kafka-python"):
        for assignor_name in ASSIGNORS:
            c = client(kind, assignor_name)
            generation = 0
            case = Case(topics, (Member("C0", frozenset({"T"})),))
            plan: PlanDict = c.to_plan(c.run(c.prepare(case)))
            for before_n, after_n in steps:
                generation += 1
                ids = [f"C{i}" for i in range(after_n)]
                case = Case(
                    topics,
                    tuple(
                        Member(m, frozenset({"T"}), plan.get(m, frozenset()), generation if m in plan else -1)
                        for m in ids
                    ),
                )
                previous = plan
                row: dict[str, Any] = {
                    "client": kind,
                    "assignor": assignor_name,
                    "step": f"{before_n}→{after_n}",
                    "optimum": optimum_moves([len(m.owned) for m in case.members], 8),
                }
                try:
                    result = c.to_plan(c.run(c.prepare(case)))
                    if assignor_name == "cooperative-sticky":
                        row["revoked_round1"] = revoked(previous, result)
                        generation += 1
                        case2 = owning_case(case, result, generation)
                        result2 = c.to_plan(c.run(c.prepare(case2)))
                        row["revoked_round2"] = revoked(result, result2)
                        result = result2
                    row["moves"] = moves(previous, result)
                    row["balance"] = balance(result)
                    row["plan"] = {m: sorted(tp.partition for tp in tps) for m, tps in sorted(result.items())}
                    plan = result
                except Exception as e:
                    row["error"] = f"{type(e).__name__}: {e}"[:120]
                    break
                finally:
                    out.append(row)
    return out


# --- rendering ------------------------------------------------------------------------------


def _ms(o: Mapping[str, Any] | None) -> str:
    if o is None:
        return "-"
    if o.get("timed_out") is not None:
        return f"> {o['timed_out']:g} s"
    if o.get("error"):
        return f"error: {o['error'].split(':')[0]}"
    t = o.get("time_s")
    if t is None:
        return "-"
    return f"{t * 1000:,.1f} ({o['runs']})" if t < 10 else f"{t:,.1f} s ({o['runs']})"


def _ratio(ours: Mapping[str, Any], theirs: Mapping[str, Any] | None) -> str:
    if theirs is None or ours.get("time_s") is None:
        return "-"
    if theirs.get("timed_out") is not None:
        return f"< {ours['time_s'] / theirs['timed_out']:.4f} (> {theirs['timed_out'] / ours['time_s']:,.0f}x)"
    if theirs.get("time_s") is None:
        return "-"
    r = ours["time_s"] / theirs["time_s"]
    return f"{r:.3g} ({1 / r:,.1f}x faster)" if r <= 1 else f"{r:.3g} ({r:,.1f}x slower)"


def _num(o: Mapping[str, Any] | None, key: str) -> str:
    if o is None or o.get(key) is None:
        return "-"
    return str(o[key])


def render_markdown(result: Mapping[str, Any]) -> str:
    """The timing table, the moves/balance table and the worked-example table, as Markdown."""
    lines = [
        "### Wall time of one `assign` (ms, best of N; N in parentheses)",
        "",
        "| assignor | members x partitions | subscriptions | scenario | kgroup | kafka-python | kgroup ÷ kafka-python "
        "| kafka-python sticky (same input) | kgroup ÷ kafka-python sticky |",
        "|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in result["rows"]:
        ours, theirs, kps = row["kgroup"], row["kafka-python"], row.get("kafka-python sticky")
        lines.append(
            f"| {row['assignor']} | {row['size']} | {row['subs']} | {row['scenario']} | {_ms(ours)} | {_ms(theirs)} | "
            f"{_ratio(ours, theirs)} | {_ms(kps) if kps else ''} | {_ratio(ours, kps) if kps else ''} |"
        )
    lines += [
        "",
        "### Partitions moved and balance (cooperative-sticky: after both rounds)",
        "",
        "| assignor | members x partitions | subscriptions | scenario | optimum | kgroup moves | kafka-python moves "
        "| kgroup revoked r1 / r2 | kafka-python revoked r1 / r2 | kgroup balance | kafka-python balance "
        "| complete (kgroup / kafka-python) |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in result["rows"]:
        if row["scenario"] == "fresh":
            continue
        ours, theirs = row["kgroup"], row["kafka-python"]
        coop = row["assignor"] == "cooperative-sticky"

        def rv(o: Mapping[str, Any], coop: bool = coop) -> str:
            return f"{_num(o, 'revoked_round1')} / {_num(o, 'revoked_round2')}" if coop else ""

        def done(o: Mapping[str, Any]) -> str:
            return "-" if o.get("complete") is None else ("yes" if o["complete"] else "NO")

        lines.append(
            f"| {row['assignor']} | {row['size']} | {row['subs']} | {row['scenario']} | "
            f"{'-' if row['optimum'] is None else row['optimum']} | {_num(ours, 'moves')} | {_num(theirs, 'moves')} | "
            f"{rv(ours)} | {rv(theirs)} | {_num(ours, 'balance')} | {_num(theirs, 'balance')} | "
            f"{done(ours)} / {done(theirs)} |"
        )
    lines += [
        "",
        "### The worked example of the book chapter \"Group Membership and Partition Assignment\": topic T, "
        "8 partitions, consumers grown 1 → 4 (then shrunk, not in the chapter)",
        "",
        "| client | assignor | step | optimum | moves | revoked r1 / r2 | balance | plan after |",
        "|---|---|---|---:|---:|---:|---:|---|",
    ]
    for row in result["seed000"]:
        if "error" in row:
            lines.append(
                f"| {row['client']} | {row['assignor']} | {row['step']} | {row['optimum']} "
                f"| error: {row['error']} | | | |"
            )
            continue
        rv = f"{row['revoked_round1']} / {row['revoked_round2']}" if "revoked_round1" in row else ""
        plan = "; ".join(f"{m}: {','.join(map(str, ps))}" for m, ps in row["plan"].items())
        lines.append(
            f"| {row['client']} | {row['assignor']} | {row['step']} | {row['optimum']} | {row['moves']} | {rv} "
            f"| {row['balance']} | {plan} |"
        )
    return "\n".join(lines)


def targets(result: Mapping[str, Any]) -> list[str]:
    """The speed targets, met or not, with the measured figures."""
    out: list[str] = []
    big = [
        r
        for r in result["rows"]
        if r["assignor"] == "cooperative-sticky"
        and r["subs"] == "identical"
        and r["members"] == 1000
        and r["partitions"] == 10000
    ]
    for r in big:
        t = r["kgroup"].get("time_s")
        kps = r.get("kafka-python sticky") or {}
        under = t is not None and t < 1.0
        out.append(
            f"cooperative-sticky 1000x10000 {r['scenario']}: {t if t is None else f'{t:.3f}'} s "
            f"-> under 1 s: {'met' if under else 'NOT met'}"
        )
        if kps.get("timed_out") is not None and t is not None:
            out.append(
                f"  vs kafka-python sticky: > {kps['timed_out'] / t:,.0f}x faster "
                f"(peer timed out at {kps['timed_out']:g} s) -> >=10x: met"
            )
        elif kps.get("time_s") is not None and t is not None:
            ratio = kps["time_s"] / t
            verdict = "met" if ratio >= 10 else "NOT met"
            out.append(f"  vs kafka-python sticky: {ratio:,.1f}x faster -> at least 10x: {verdict}")
    seed_rows = [
        r for r in result["seed000"] if r["client"] == "kgroup" and r["assignor"] in ("sticky", "cooperative-sticky")
    ]
    bad = [r for r in seed_rows if r.get("moves") != r["optimum"]]
    out.append(
        "the chapter's worked examples, kgroup sticky and cooperative-sticky moves == optimum: "
        + (
            "met"
            if not bad
            else "NOT met: " + ", ".join(f"{r['assignor']} {r['step']} {r.get('moves')} vs {r['optimum']}" for r in bad)
        )
    )
    return out


def profile(n: int = 1000, total: int = 10000) -> str:
    """pyinstrument text report of kgroup's cooperative-sticky join round one at ``n``x``total``."""
    from pyinstrument import Profiler

    base = fresh_case(n, total, "identical")
    kg = client("kgroup", "cooperative-sticky")
    previous = dict(kg.run(kg.prepare(base)))
    case = join_case(owning_case(base, previous, 1), base.members[0].topics)
    prepared = kg.prepare(case)
    profiler = Profiler(interval=0.0005)
    profiler.start()
    for _ in range(5):
        kg.run(prepared)
    profiler.stop()
    text: str = profiler.output_text(unicode=False, color=False, show_all=False)
    return text


def _parse_sizes(text: str) -> list[tuple[int, int]]:
    out = []
    for item in text.split(","):
        if item.strip():
            n, p = item.lower().replace("x", "x").split("x")
            out.append((int(n), int(p)))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="sizes 10x100,100x1000; hetero 10x100; budget 0.3 s")
    parser.add_argument("--sizes", help="comma list of MEMBERSxPARTITIONS (identical subscriptions)")
    parser.add_argument("--hetero", help="comma list of MEMBERSxPARTITIONS (heterogeneous subscriptions)")
    parser.add_argument("--assignors", default=",".join(ASSIGNORS))
    parser.add_argument("--budget", type=float, help="seconds of repeats per measurement (default 2, quick 0.3)")
    parser.add_argument("--max-runs", type=int, default=7)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before one assign is given up")
    parser.add_argument("--json", help="also write the raw results here")
    parser.add_argument("--profile", action="store_true", help="profile kgroup cooperative-sticky join at 1000x10000")
    args = parser.parse_args(argv)
    if args.profile:
        print(profile())
        return 0
    sizes = _parse_sizes(args.sizes) if args.sizes else list(QUICK_SIZES if args.quick else FULL_SIZES)
    hetero = _parse_sizes(args.hetero) if args.hetero is not None else ([(10, 100)] if args.quick else [(100, 1000)])
    budget = args.budget if args.budget is not None else (0.3 if args.quick else 2.0)
    started = time.monotonic()
    result = run(
        sizes,
        hetero,
        assignors=[a for a in args.assignors.split(",") if a],
        budget=budget,
        max_runs=args.max_runs,
        timeout=args.timeout,
        progress=lambda s: print(f"[{time.monotonic() - started:6.1f}s] {s}", file=sys.stderr, flush=True),
    )
    print(render_markdown(result))
    print()
    for line in targets(result):
        print(line)
    print(f"\n(total {time.monotonic() - started:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
