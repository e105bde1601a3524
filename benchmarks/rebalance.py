"""Rebalances on the real broker: kgroup against kafka-python, confluent-kafka
and Apache Kafka's own Java ``KafkaConsumer``.

The broker is ``kgroup.testing.start_broker()`` (``--broker``: the environment's choice, the
embedded ``tansu`` or ``apache-kafka`` 4.4.0 with ``group.initial.rebalance.delay.ms=0``). On
Tansu a ``kgroup.testing.CoordinatorProxy`` stands in front, which answers the group APIs with
Apache Kafka's coordinator semantics (bare Tansu has no join barrier and cannot replace static
members). On Apache Kafka the members talk to Kafka's own group coordinator (``--proxy`` puts
the proxy in front there too). Without the proxy (Apache Kafka, or ``KGROUP_BOOTSTRAP_SERVERS``)
rebalance counts and the joiner's time parked at the coordinator are "n/a".

The ``java`` client is ``org.apache.kafka.clients.consumer.KafkaConsumer`` (kafka-clients
4.4.0, ``group.protocol=classic``, ``RangeAssignor`` / ``CooperativeStickyAssignor``) run from
``tests/peers/JavaPeer.java`` (compiled once with ``javac``) on the jars of
``python -m kgroup.testing.apache_kafka fetch``. Its "spawn -> start" is the JVM's start. On
Tansu it is kafka-clients 3.9.1 (``--java-clients``): Tansu v0.6.0 closes the connection on
the ApiVersions v5 request of kafka-clients 4.x.

Scenarios, each in three modes (dynamic eager with ``range``, dynamic cooperative with
``cooperative-sticky``, static with ``group_instance_id`` and ``range``) and for each client:

* ``scale-out``: 3 members own a 12-partition topic; a 4th joins.
* ``scale-out-6p-2to3`` and ``scale-out-12p-2to3`` (not in the default ``--scenarios``): 2
  members own a 6- (a 12-) partition topic; a 3rd joins.
* ``rolling``: 4 members; one after the other is closed (a static member without LeaveGroup,
  as Java does), stays down ``--gap`` seconds, and is started again (same instance id when
  static); the next one goes once the group is stable again.
* ``leave`` (not in the default ``--scenarios``): 4 members; one closes (LeaveGroup, or the
  leave heartbeat with epoch -1 under the consumer protocol) and does not come back.
* ``crash`` (not in the default ``--scenarios``): 4 members; one is SIGKILLed (no leave): its
  partitions come back when the coordinator's session timeout expires.

The mode ``consumer`` (not in the default ``--modes``; kgroup and java only, Apache Kafka only)
runs the consumer group protocol of KIP-848 (``group_protocol="consumer"``, Java's
``group.protocol=consumer``): the broker assigns (its default ``uniform`` assignor) and decides
the session timeout and heartbeat interval, so on Apache Kafka the broker is started with
``group.consumer.session.timeout.ms`` = ``--session-timeout-ms`` and
``group.consumer.heartbeat.interval.ms`` = ``--heartbeat-interval-ms`` (and the same minimums),
the classic members' values: both protocols run with a 10 s session and 1 s heartbeats.

Every member is its own process (``benchmarks/_members.py``), all configured alike:
``session_timeout_ms`` 10000, ``heartbeat_interval_ms`` 1000, auto-commit every 1000 ms,
``auto_offset_reset`` earliest. A producer process writes ``--rate`` records/s to each of the
12 partitions all the time (value = its ``time.time()``). The proxy's coordinator model uses
``group_initial_rebalance_delay_ms`` 0 (it only delays the first join of an empty group).

Measured from the members' event logs (listener callbacks with ``time.time()``) between the
scenario's start (the joiner is spawned / the first member is told to close) and its end (the
group is stable again: every partition owned exactly once, equal shares, no callback for
``--quiet`` seconds; the quiet period itself is cut off). A member owns a partition from
``on_partitions_assigned`` until ``on_partitions_revoked``/``lost`` or until it starts closing.

* rebalances: ``rebalance_started`` / ``generation_completed`` events of the proxy's model;
* unowned partition-s: sum over the 12 partitions of the time nobody owned it;
* unmoved partitions: judged per step (the scale-out; each single restart, from its close to
  the group being stable again): the partitions whose owner slot did not change in that step
  (a restarted member is the same slot); their unowned time is split into time while their
  own owner was restarting (closing -> the new process's first assignment: inevitable) and
  time while their owner was up (a pause caused by the rebalance protocol);
* joiner (scale-out): from its ``start`` event (the client library imported, the consumer built
  next; kgroup imports its kafka-python adapter only at ``subscribe``, so ~0.14 s of imports fall
  after ``start`` for kgroup only) to its first non-empty assignment and to its first record;
  and from the process spawn (interpreter, imports) to its first record; "parked at the coordinator" = the time
  its JoinGroup/SyncGroup requests waited in the proxy for the other members (the join barrier
  and the leader's SyncGroup: set by the others' heartbeat phase, not by the joiner); "rest" =
  first record minus parked: the joiner's own work (connect, metadata, coordinator, offsets,
  fetch) plus its own heartbeat waits (under cooperative it learns of round two by heartbeat);
* moved: partitions whose owner slot at the end differs from the start; owner changes: every
  assignment of a partition to a slot other than its previous owner, summed over the steps;
* per restart (rolling): close() duration, process start (spawn -> ``start``: interpreter
  and imports), start -> first assignment, and closing -> first assignment of the new process;
* stop-the-world s: the time within the steps during which no partition had an owner at all
  (an eager rebalance's pause; 0 when partitions that stay keep their owner);
* time to full ownership s: per step, from its start (joiner spawned, member told to close or
  killed) to the last ownership change that left every partition owned exactly once with
  equal shares;
* longest unowned s: the longest single stretch any one partition had no owner (from its
  revocation to its next assignment; the scale-outs' table, ``render_scale_outs``, with the time
  to full ownership beside java's, also counted from the joiner's first listener callback, its
  join answered, which leaves the process start out);
* peak RSS MB: each member process's ``VmHWM`` (``/proc/<pid>/status``, the JVM's whole for
  java), read just before it is closed or killed; the largest member of the run.

``render`` prints the scale-out and rolling tables, then one table of every scenario with the
pauses, the time to full ownership and the peak RSS as min-max over the runs.

Scale-out runs are repeated (``--repeat``, default 3; clients interleaved) and medians are
reported, because the joiner's wait for the others is uniform in the heartbeat phase (0-1 s).

    python benchmarks/rebalance.py                     # everything (~10 min on 2 cores)
    python benchmarks/rebalance.py --quick             # kgroup only, one run each (~2 min)
    python benchmarks/rebalance.py --clients kgroup,confluent --modes cooperative --scenarios scale-out
    python benchmarks/rebalance.py --broker apache-kafka --clients kgroup,java
    python benchmarks/rebalance.py --broker apache-kafka --clients kgroup,java --modes cooperative,consumer \
        --scenarios scale-out,leave,crash,rolling --repeat 1     # the consumer protocol beside classic
    python benchmarks/rebalance.py --broker apache-kafka --clients kgroup,java --modes consumer \
        --scenarios scale-out-6p-2to3,scale-out-12p-2to3,scale-out --repeat 3 \
        --session-timeout-ms 45000 --heartbeat-interval-ms 5000   # KIP-848 at Kafka's default interval
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import attrs

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._members import java_argv  # noqa: E402
from kgroup.testing import CoordinatorProxy, create_topic, start_broker  # noqa: E402
from kgroup.testing.coordinator import CoordinatorConfig  # noqa: E402
from tests.peers.java import TANSU_JAVA_CLIENTS  # noqa: E402
from tests.peers.process import PeerProcess  # noqa: E402

WORKER = HERE / "_members.py"
CLIENTS = ("kgroup", "kafka-python", "confluent", "java")
MODES = {
    "eager": ("range", False),
    "cooperative": ("cooperative-sticky", False),
    "static": ("range", True),
}
#: the consumer group protocol (KIP-848): the broker's assignor; kgroup and java only
CONSUMER_MODE = "consumer"
ALL_MODES = {**MODES, CONSUMER_MODE: ("uniform", False)}
#: clients that speak the consumer group protocol here
CONSUMER_CLIENTS = ("kgroup", "java")
SCENARIOS = ("scale-out", "rolling")
#: more scale-outs, (partitions, members before the joiner): "scale-out" is 12 and 3
SCALE_OUTS = {"scale-out": (12, 3), "scale-out-6p-2to3": (6, 2), "scale-out-12p-2to3": (12, 2)}
ALL_SCENARIOS = (*SCENARIOS, "leave", "crash", "scale-out-6p-2to3", "scale-out-12p-2to3")
PARTITIONS = 12
ROLLING_TITLE = (
    "#### Rolling restart of 4 members (each down --gap s; per-restart columns: medians over the 4 restarts)"
)


class Proc(PeerProcess):
    """One member process (``_members.py``, or the Java member) and its JSON events (``tests.peers``)."""

    def __init__(self, slot: str, cfg: dict[str, Any]) -> None:
        self.slot = slot
        self.cfg = cfg
        super().__init__(java_argv(cfg) if cfg["client"] == "java" else [sys.executable, str(WORKER), json.dumps(cfg)])

    def on_event(self, event: dict[str, Any]) -> bool:
        event["slot"] = self.slot
        return True

    #: the process's peak RSS in MB (``VmHWM``) when last read, else None
    peak_rss_mb: float | None = None

    def close(self, timeout_s: float = 40.0) -> bool:
        """Ask the member to close; True when it exited in time (else it is killed)."""
        self.read_peak_rss()
        return super().close(timeout_s)

    def read_peak_rss(self) -> None:
        """Read the process's ``VmHWM`` (peak resident set) from ``/proc`` while it runs (Linux)."""
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    self.peak_rss_mb = int(line.split()[1]) / 1024
        except (OSError, ValueError):
            pass

    def crash(self) -> float:
        """SIGKILL the member (no leave); its partitions count as unowned from now. Returns the time."""
        self.read_peak_rss()
        at = time.time()
        self.kill()
        with self._lock:
            self.events.append({"event": "closing", "t": at, "slot": self.slot, "killed": True})
        return at


# --- ownership from the event logs ------------------------------------------------------------


def ownership_changes(procs: Iterable[Proc]) -> list[tuple[float, str, int, bool]]:
    """``(t, slot, partition, owned)`` transitions, time-ordered, replaying each process's callbacks."""
    out: list[tuple[float, str, int, bool]] = []
    for p in procs:
        held: set[int] = set()
        for e in p.snapshot():
            kind = e["event"]
            if kind == "assigned":
                for part in e["partitions"]:
                    if part not in held:
                        held.add(part)
                        out.append((e["t"], p.slot, part, True))
            elif kind in ("revoked", "lost"):
                for part in e["partitions"]:
                    if part in held:
                        held.discard(part)
                        out.append((e["t"], p.slot, part, False))
            elif kind == "closing":
                for part in sorted(held):
                    out.append((e["t"], p.slot, part, False))
                held.clear()
    out.sort(key=lambda x: x[0])
    return out


def owners_at(
    changes: Sequence[tuple[float, str, int, bool]], t: float, partitions: int = PARTITIONS
) -> dict[int, set[str]]:
    owners: dict[int, set[str]] = {p: set() for p in range(partitions)}
    for when, slot, part, owned in changes:
        if when > t:
            break
        (owners[part].add if owned else owners[part].discard)(slot)
    return owners


def stable(procs: Sequence[Proc], alive: int, quiet_s: float, partitions: int = PARTITIONS) -> float | None:
    """The time of the last ownership change if the group is stable now (see module doc), else None."""
    changes = ownership_changes(procs)
    owners = owners_at(changes, float("inf"), partitions)
    if any(len(s) != 1 for s in owners.values()):
        return None
    counts: dict[str, int] = {}
    for s in owners.values():
        slot = next(iter(s))
        counts[slot] = counts.get(slot, 0) + 1
    q, r = divmod(partitions, alive)
    if len(counts) != alive or sorted(counts.values()) != sorted([q + 1] * r + [q] * (alive - r)):
        return None
    last = max((c[0] for c in changes), default=0.0)
    last_callback = max(
        (e["t"] for p in procs for e in p.snapshot() if e["event"] in ("assigned", "revoked", "lost")), default=0.0
    )
    last = max(last, last_callback)
    return last if time.time() - last >= quiet_s else None


def wait_stable(
    procs: Sequence[Proc], alive: int, quiet_s: float, deadline_s: float, partitions: int = PARTITIONS
) -> float | None:
    deadline = time.time() + deadline_s
    while time.time() < deadline:
        t = stable(procs, alive, quiet_s, partitions)
        if t is not None:
            return t
        time.sleep(0.1)
    return None


def _intervals_unowned(
    changes: Sequence[tuple[float, str, int, bool]], part: int, t0: float, t1: float
) -> list[tuple[float, float]]:
    holders = owners_at(changes, t0)[part]
    out: list[tuple[float, float]] = []
    since = t0 if not holders else None
    for when, slot, p, owned in changes:
        if p != part or when <= t0:
            continue
        if when > t1:
            break
        was = bool(holders)
        (holders.add if owned else holders.discard)(slot)
        if was and not holders:
            since = when
        elif not was and holders and since is not None:
            out.append((since, when))
            since = None
    if since is not None:
        out.append((since, t1))
    return out


def _nothing_owned(changes: Sequence[tuple[float, str, int, bool]], t0: float, t1: float) -> float:
    """Seconds within [t0, t1] during which no partition had an owner (a stop-the-world pause)."""
    holders = owners_at(changes, t0)
    owned = sum(1 for slots in holders.values() if slots)
    since = t0 if owned == 0 else None
    total = 0.0
    for when, slot, part, is_owned in changes:
        if when <= t0:
            continue
        if when > t1:
            break
        was = bool(holders[part])
        (holders[part].add if is_owned else holders[part].discard)(slot)
        if was == bool(holders[part]):
            continue
        owned += -1 if was else 1
        if owned == 0:
            since = when
        elif since is not None:
            total += when - since
            since = None
    if since is not None:
        total += t1 - since
    return total


def _overlap(a: tuple[float, float], windows: Iterable[tuple[float, float]]) -> float:
    return sum(max(0.0, min(a[1], w[1]) - max(a[0], w[0])) for w in windows)


@dataclass
class Step:
    """A part of the scenario: [start, end]; for a restart, the slot and its down window."""

    start: float
    end: float
    slot: str | None = None
    down: tuple[float, float] | None = None  # closing -> the restarted process's first assignment


@dataclass
class Metrics:
    """One run's figures (see the module docstring); times in seconds."""

    unowned_ps: float = 0.0
    unmoved_pause_ps: float = 0.0  # unmoved partitions, unowned while their owner was up
    unmoved_restarting_ps: float = 0.0  # unmoved partitions, unowned while their owner restarted
    unmoved_partition_steps: int = 0
    moved: int = 0
    owner_changes: int = 0
    rebalances_started: int | None = None
    generations: int | None = None
    joiner_first_record_s: float | None = None
    joiner_first_assignment_s: float | None = None
    joiner_group_wait_s: float | None = None  # joiner's JoinGroup/SyncGroup parked at the coordinator
    joiner_spawn_to_start_s: float | None = None  # interpreter start and the client's imports
    restarts: list[dict[str, float | None]] = field(default_factory=list)
    stop_the_world_s: float = 0.0  # no partition owned at all
    full_ownership_s: list[float] = field(default_factory=list)  # per step: start -> every partition owned once
    longest_unowned_s: float = 0.0  # the longest single stretch any partition had no owner
    joined_to_full_s: float | None = None  # scale-out: the joiner's first callback -> full ownership
    peak_rss_mb: float | None = None  # the largest member process's VmHWM
    duration_s: float = 0.0
    stabilised: bool = True
    errors: list[str] = field(default_factory=list)


def measure(procs: Sequence[Proc], steps: Sequence[Step], partitions: int = PARTITIONS) -> Metrics:
    """Unowned time, moves and unmoved-partition pauses over ``steps`` (each step judged alone)."""
    changes = ownership_changes(procs)
    t0, t1 = steps[0].start, steps[-1].end
    start, end = owners_at(changes, t0, partitions), owners_at(changes, t1, partitions)
    m = Metrics(duration_s=t1 - t0)
    for part in range(partitions):
        gaps = _intervals_unowned(changes, part, t0, t1)
        m.unowned_ps += sum(b - a for a, b in gaps)
        m.longest_unowned_s = max([m.longest_unowned_s, *(b - a for a, b in gaps)])
        if start[part] != end[part]:
            m.moved += 1
    for step in steps:
        m.stop_the_world_s += _nothing_owned(changes, step.start, step.end)
        m.full_ownership_s.append(step.end - step.start)
        before = owners_at(changes, step.start, partitions)
        for part in range(partitions):
            last = set(before[part])
            changed = 0
            for when, slot, p, owned in changes:
                if p != part or not (step.start < when <= step.end) or not owned:
                    continue
                if slot not in last:
                    changed += 1
                last = {slot}
            m.owner_changes += changed
            if changed:
                continue
            m.unmoved_partition_steps += 1
            gaps = _intervals_unowned(changes, part, step.start, step.end)
            unowned = sum(b - a for a, b in gaps)
            restarting = 0.0
            if step.down is not None and step.slot in before[part]:
                restarting = sum(_overlap(g, [step.down]) for g in gaps)
            m.unmoved_restarting_ps += restarting
            m.unmoved_pause_ps += unowned - restarting
    return m


# --- one run -----------------------------------------------------------------------------------


@dataclass
class Env:
    bootstrap: str  # what members use (the proxy, or the external cluster)
    upstream: str  # the real broker (topics, producer)
    proxy: CoordinatorProxy | None


def _first(events: Sequence[dict[str, Any]], kind: str, *, nonempty: bool = False) -> float | None:
    for e in events:
        if e["event"] == kind and (not nonempty or e.get("partitions")):
            return float(e["t"])
    return None


def group_wait(env: Env, client_id: str, start: float, until: float) -> float | None:
    """Seconds the member's JoinGroup and SyncGroup requests were parked at the coordinator in [start, until]."""
    if env.proxy is None:
        return None
    offset = time.time() - time.monotonic()
    total = 0.0
    for api in ("JoinGroup", "SyncGroup"):
        for r in env.proxy.requests(api):
            if r.client_id != client_id or r.answered_at is None:
                continue
            a, b = r.received_at + offset, r.answered_at + offset
            total += max(0.0, min(b, until) - max(a, start))
    return total


def run_one(env: Env, client: str, mode: str, scenario: str, args: argparse.Namespace) -> Metrics:
    assignor, static = ALL_MODES[mode]
    tag = uuid.uuid4().hex[:8]
    topic = f"bench-rebalance-{tag}"
    group = f"bench-{client}-{mode}-{scenario}-{tag}"
    partitions, initial = SCALE_OUTS.get(scenario, (PARTITIONS, 4))
    create_topic(env.upstream, topic, partitions)
    producer = Proc(
        "producer",
        {"client": "producer", "bootstrap": env.upstream, "topic": topic, "partitions": partitions, "rate": args.rate},
    )
    spawned: dict[int, float] = {}

    def member(slot: str, incarnation: int = 0) -> Proc:
        cfg = {
            "client": client,
            "bootstrap": env.bootstrap,
            "group": group,
            "topic": topic,
            "assignor": assignor,
            "instance_id": f"{group}-{slot}" if static else None,
            "client_id": f"bench-{tag}-{slot}-{incarnation}",
            "session_timeout_ms": args.session_timeout_ms,
            "heartbeat_interval_ms": args.heartbeat_interval_ms,
            "auto_commit_interval_ms": 1000,
            "java_clients": args.java_clients,
            "group_protocol": "consumer" if mode == CONSUMER_MODE else "classic",
        }
        before = time.time()
        p = Proc(slot, cfg)
        spawned[id(p)] = before
        return p

    procs: list[Proc] = []
    current: dict[str, Proc] = {}
    errors: list[str] = []
    steps: list[Step] = []
    restarts: list[dict[str, float | None]] = []
    try:
        for i in range(initial):
            p = member(f"m{i}")
            procs.append(p)
            current[p.slot] = p
        if wait_stable(procs, initial, args.quiet, args.deadline, partitions) is None:
            errors.append("initial group did not stabilise")
        time.sleep(args.quiet)  # commits of every partition are in before the scenario starts
        end: float | None = None
        joiner: Proc | None = None
        if scenario in SCALE_OUTS:
            t0 = time.time()
            joiner = member(f"m{initial}")
            procs.append(joiner)
            current[joiner.slot] = joiner
            end = wait_stable(procs, initial + 1, args.quiet, args.deadline, partitions)
            if end is None:
                errors.append("scale-out did not stabilise")
            steps.append(Step(t0, end if end is not None else time.time()))
        elif scenario in ("leave", "crash"):
            victim = current.pop("m3")
            t0 = time.time()
            if scenario == "crash":
                victim.crash()  # SIGKILL: no leave, the coordinator's session timeout frees its partitions
            elif not victim.close():
                errors.append("m3 did not close in time (killed)")
            end = wait_stable(procs, 3, args.quiet, args.deadline)  # the victim's "closing" released its partitions
            if end is None:
                errors.append(f"{scenario} did not stabilise")
            steps.append(Step(t0, end if end is not None else time.time()))
        else:
            for i in range(4):
                slot = f"m{i}"
                old = current[slot]
                closing_at = time.time()
                if not old.close():
                    errors.append(f"{slot} did not close in time (killed)")
                exited_at = time.time()
                time.sleep(args.gap)
                new = member(slot, 1)
                procs.append(new)
                current[slot] = new
                end = wait_stable(procs, 4, args.quiet, args.deadline)
                ev = new.snapshot()
                started = _first(ev, "start")
                assigned = _first(ev, "assigned", nonempty=True)
                record = _first(ev, "record")
                restarts.append(
                    {
                        "close_s": exited_at - closing_at,
                        "process_start_s": None if started is None else started - spawned[id(new)],
                        "first_assignment_s": None if started is None or assigned is None else assigned - started,
                        "first_record_s": None if started is None or record is None else record - started,
                        "down_s": None if assigned is None else assigned - closing_at,
                    }
                )
                steps.append(
                    Step(
                        closing_at, end if end is not None else time.time(), slot, (closing_at, assigned or time.time())
                    )
                )
                if end is None:
                    errors.append(f"restart of {slot} did not stabilise")
                    break
        for p in current.values():
            p.read_peak_rss()
        metrics = measure(procs, steps, partitions)
        metrics.restarts = restarts
        rss = [p.peak_rss_mb for p in procs if p.peak_rss_mb is not None]
        metrics.peak_rss_mb = max(rss) if rss else None
        metrics.stabilised = end is not None
        t0, t1 = steps[0].start, steps[-1].end
        if env.proxy is not None:
            offset = time.time() - time.monotonic()
            events = [e for e in env.proxy.model_events(group) if t0 <= e.time_ms / 1000 + offset <= t1 + 0.001]
            metrics.rebalances_started = sum(1 for e in events if e.kind == "rebalance_started")
            metrics.generations = sum(1 for e in events if e.kind == "generation_completed")
        if joiner is not None:
            ev = joiner.snapshot()
            started, first = _first(ev, "start"), _first(ev, "record")
            assigned = _first(ev, "assigned", nonempty=True)
            if started is not None and first is not None:
                metrics.joiner_first_record_s = first - started
                metrics.joiner_group_wait_s = group_wait(env, joiner.cfg["client_id"], started, first)
            if started is not None and assigned is not None:
                metrics.joiner_first_assignment_s = assigned - started
            joined = _first(ev, "assigned")  # its join answered: on_partitions_assigned, maybe empty
            if joined is not None and end is not None:
                metrics.joined_to_full_s = end - joined
            if started is not None:
                metrics.joiner_spawn_to_start_s = started - spawned[id(joiner)]
        for p in procs:
            errors.extend(f"{p.slot}: {e['message']}" for e in p.snapshot() if e["event"] == "error")
        metrics.errors = errors
        if args.events:
            dump = {
                "group": group,
                "steps": [s.__dict__ for s in steps],
                "members": [{"slot": p.slot, "client_id": p.cfg["client_id"], "events": p.snapshot()} for p in procs],
                "model_events": [attrs.asdict(e) for e in env.proxy.model_events(group)] if env.proxy else [],
                "requests": [
                    attrs.asdict(r)
                    for r in (env.proxy.requests() if env.proxy else [])
                    if r.client_id.startswith(f"bench-{tag}-")
                ],
                "clock_offset": time.time() - time.monotonic(),
            }
            Path(args.events).mkdir(parents=True, exist_ok=True)
            (Path(args.events) / f"{scenario}-{mode}-{client}-{tag}.json").write_text(json.dumps(dump, indent=1))
        return metrics
    finally:
        for p in current.values():
            if p.proc.poll() is None:
                p.close(20)
        for p in procs:
            p.kill()
        producer.close(15)


# --- report ------------------------------------------------------------------------------------


def _values(runs: Sequence[dict[str, Any]], key: str) -> list[float]:
    return [float(r[key]) for r in runs if r.get(key) is not None]


def _med(values: Sequence[float], digits: int = 2, spread: bool = False) -> str:
    if not values:
        return "n/a"
    med = statistics.median(values)
    text = f"{med:.{digits}f}"
    if spread and len(values) > 1:
        text += f" [{min(values):.{digits}f}-{max(values):.{digits}f}]"
    return text


def _restart_values(runs: Sequence[dict[str, Any]], key: str) -> list[float]:
    return [float(x[key]) for r in runs for x in r["restarts"] if x.get(key) is not None]


def grouped(results: Sequence[dict[str, Any]]) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    out: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in results:
        out.setdefault((r["scenario"], r["mode"], r["client"]), []).append(r["metrics"])
    return out


def render(results: Sequence[dict[str, Any]]) -> str:
    """Scale-out and rolling-restart tables (medians over the runs, [min-max] where useful); "" without either."""
    groups = grouped(results)
    if not any(scenario in SCENARIOS for scenario, _, _ in groups):
        return ""
    lines = [
        "#### Scale-out 3 -> 4 (medians over N runs, [min-max])",
        "",
        "| mode | client | N | rebalances started / generations | unowned partition-s | unmoved partitions: "
        "unowned s | moved / owner changes | joiner: spawn -> start s | joiner: start -> first assignment s "
        "| joiner: start -> first record s | of which parked at the coordinator s | rest s "
        "| joiner: spawn -> first record s | notes |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    notes_for: dict[tuple[str, str, str], str] = {}
    for key, runs in groups.items():
        notes = []
        bad = sum(1 for r in runs if not r["stabilised"])
        if bad:
            notes.append(f"{bad} run(s) did not stabilise")
        errs = sorted({e for r in runs for e in r["errors"]})
        if errs:
            notes.append(f"{sum(len(r['errors']) for r in runs)} error events: " + "; ".join(errs[:2])[:160])
        notes_for[key] = " ".join(notes).replace("|", "/")
    for (scenario, mode, client), runs in groups.items():
        if scenario != "scale-out":
            continue
        own = [
            r["joiner_first_record_s"] - r["joiner_group_wait_s"]
            for r in runs
            if r.get("joiner_first_record_s") is not None and r.get("joiner_group_wait_s") is not None
        ]
        spawn = [
            r["joiner_first_record_s"] + r["joiner_spawn_to_start_s"]
            for r in runs
            if r.get("joiner_first_record_s") is not None and r.get("joiner_spawn_to_start_s") is not None
        ]
        lines.append(
            f"| {mode} | {client} | {len(runs)} | {_med(_values(runs, 'rebalances_started'), 0)} / "
            f"{_med(_values(runs, 'generations'), 0)} | {_med(_values(runs, 'unowned_ps'), 2, True)} | "
            f"{_med(_values(runs, 'unmoved_pause_ps'), 2, True)} | {_med(_values(runs, 'moved'), 0)} / "
            f"{_med(_values(runs, 'owner_changes'), 0)} | "
            f"{_med(_values(runs, 'joiner_spawn_to_start_s'), 2, True)} | "
            f"{_med(_values(runs, 'joiner_first_assignment_s'), 2, True)} | "
            f"{_med(_values(runs, 'joiner_first_record_s'), 2, True)} | "
            f"{_med(_values(runs, 'joiner_group_wait_s'), 2, True)} "
            f"| {_med(own, 2, True)} | {_med(spawn, 2, True)} | {notes_for[(scenario, mode, client)]} |"
        )
    lines += [
        "",
        ROLLING_TITLE,
        "",
        "| mode | client | N | rebalances started / generations | unowned partition-s | unmoved partitions: unowned s "
        "while their owner was up / while it restarted | owner changes | per restart: close s | process start s "
        "| start -> first assignment s | partition down s (closing -> reassigned) | notes |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for (scenario, mode, client), runs in groups.items():
        if scenario != "rolling":
            continue
        lines.append(
            f"| {mode} | {client} | {len(runs)} | {_med(_values(runs, 'rebalances_started'), 0)} / "
            f"{_med(_values(runs, 'generations'), 0)} | {_med(_values(runs, 'unowned_ps'))} | "
            f"{_med(_values(runs, 'unmoved_pause_ps'))} / {_med(_values(runs, 'unmoved_restarting_ps'))} | "
            f"{_med(_values(runs, 'owner_changes'), 0)} | {_med(_restart_values(runs, 'close_s'))} | "
            f"{_med(_restart_values(runs, 'process_start_s'))} | {_med(_restart_values(runs, 'first_assignment_s'))} | "
            f"{_med(_restart_values(runs, 'down_s'))} | {notes_for[(scenario, mode, client)]} |"
        )
    if not any(scenario == "rolling" for scenario, _, _ in groups):
        lines = lines[: lines.index(ROLLING_TITLE) - 1]
    if not any(scenario == "scale-out" for scenario, _, _ in groups):
        lines = lines[lines.index(ROLLING_TITLE) :]
    return "\n".join(lines)


def _span(values: Sequence[float], digits: int = 2) -> str:
    """``min-max`` (one value: itself; none: n/a)."""
    if not values:
        return "n/a"
    lo, hi = min(values), max(values)
    return f"{lo:.{digits}f}" if f"{lo:.{digits}f}" == f"{hi:.{digits}f}" else f"{lo:.{digits}f}-{hi:.{digits}f}"


PAUSES_TITLE = "#### Pauses, time to full ownership and peak RSS, every scenario (min-max over N runs)"


def render_pauses(results: Sequence[dict[str, Any]]) -> str:
    """One row per scenario, mode and client: the pauses, the time to full ownership, the peak RSS (min-max)."""
    lines = [
        PAUSES_TITLE,
        "",
        "| scenario | mode | client | N | stop-the-world s | unmoved partitions: unowned s while their owner was up "
        "| unowned partition-s | time to full ownership s (per step) | owner changes | peak RSS MB (largest member) "
        "| notes |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for (scenario, mode, client), runs in sorted(grouped(results).items(),
                                                 key=lambda kv: (ALL_SCENARIOS.index(kv[0][0]), kv[0][1], kv[0][2])):
        notes = []
        bad = sum(1 for r in runs if not r["stabilised"])
        if bad:
            notes.append(f"{bad} run(s) did not stabilise")
        errs = sorted({e for r in runs for e in r["errors"]})
        if errs:
            notes.append(f"{sum(len(r['errors']) for r in runs)} error events: " + "; ".join(errs[:2])[:160])
        full = [float(v) for r in runs for v in r.get("full_ownership_s", [])]
        lines.append(
            f"| {scenario} | {mode} | {client} | {len(runs)} | {_span(_values(runs, 'stop_the_world_s'))} | "
            f"{_span(_values(runs, 'unmoved_pause_ps'))} | {_span(_values(runs, 'unowned_ps'))} | {_span(full)} | "
            f"{_span(_values(runs, 'owner_changes'), 0)} | {_span(_values(runs, 'peak_rss_mb'), 0)} | "
            + " ".join(notes).replace("|", "/") + " |"
        )
    return "\n".join(lines)


SCALE_OUT_TITLE = (
    "#### Scale-outs: the longest time a partition had no owner, and the time to full ownership "
    "(medians over N runs, [min-max])"
)


def _full_ownership(runs: Sequence[dict[str, Any]]) -> list[float]:
    return [float(r["full_ownership_s"][0]) for r in runs if r.get("full_ownership_s") and r["stabilised"]]


def render_scale_outs(results: Sequence[dict[str, Any]]) -> str:
    """Every scale-out and mode, each client: the longest unowned stretch, the time to full ownership, vs java."""
    groups = grouped(results)
    keys = sorted((k for k in groups if k[0] in SCALE_OUTS), key=lambda k: (list(SCALE_OUTS).index(k[0]), k[1], k[2]))
    if not keys:
        return ""
    lines = [
        SCALE_OUT_TITLE,
        "",
        "| scenario | partitions: members | mode | client | N | longest unowned s | time to full ownership s "
        "| full ownership / java's (medians) | joiner's first callback -> full ownership s | the same / java's "
        "| notes |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for scenario, mode, client in keys:
        runs = groups[(scenario, mode, client)]
        partitions, before = SCALE_OUTS[scenario]
        full = _full_ownership(runs)
        java = _full_ownership(groups.get((scenario, mode, "java"), []))
        ratio = f"{statistics.median(full) / statistics.median(java):.2f}x" if full and java else "n/a"
        joined = _values(runs, "joined_to_full_s")
        java_joined = _values(groups.get((scenario, mode, "java"), []), "joined_to_full_s")
        joined_ratio = (
            f"{statistics.median(joined) / statistics.median(java_joined):.2f}x" if joined and java_joined else "n/a"
        )
        bad = sum(1 for r in runs if not r["stabilised"])
        lines.append(
            f"| {scenario} | {partitions}: {before} -> {before + 1} | {mode} | {client} | {len(runs)} | "
            f"{_med(_values(runs, 'longest_unowned_s'), 2, True)} | {_med(full, 2, True)} | "
            f"{ratio if client != 'java' else ''} | {_med(joined, 2, True)} | "
            f"{joined_ratio if client != 'java' else ''} | {f'{bad} run(s) did not stabilise' if bad else ''} |"
        )
    return "\n".join(lines)


def targets(results: Sequence[dict[str, Any]]) -> list[str]:
    """The speed targets, met or not, with the measured figures (medians)."""
    groups = grouped(results)
    out: list[str] = []
    for (scenario, mode, client), runs in groups.items():
        if mode == CONSUMER_MODE and client == "kgroup" and scenario in SCALE_OUTS:
            longest = max(_values(runs, "longest_unowned_s") or [float("nan")])
            out.append(f"kgroup consumer {scenario}: longest unowned, worst run {longest:.2f} s -> <= 1.0 s: "
                       f"{'met' if longest <= 1.0 else 'NOT met'}")
            full, java = _full_ownership(runs), _full_ownership(groups.get((scenario, mode, "java"), []))
            if full and java:
                ratio = statistics.median(full) / statistics.median(java)
                out.append(f"kgroup consumer {scenario}: time to full ownership {statistics.median(full):.2f} s vs "
                           f"java {statistics.median(java):.2f} s = {ratio:.2f}x -> <= 0.5x: "
                           f"{'met' if ratio <= 0.5 else 'NOT met'}")
        if mode == "cooperative" and client == "kgroup":
            worst = max(_values(runs, "unmoved_pause_ps") or [float("nan")])
            out.append(
                f"kgroup cooperative {scenario}: unmoved partitions unowned while their owner was up, worst run "
                f"{worst:.3f} s -> 0 s: {'met' if worst < 0.001 else 'NOT met'}"
            )

    def spawn_to_record(r: dict[str, Any]) -> float | None:
        a, b = r.get("joiner_first_record_s"), r.get("joiner_spawn_to_start_s")
        return None if a is None or b is None else float(a) + float(b)

    for mode in MODES:
        for label, get in (
            ("start -> first record", lambda r: r.get("joiner_first_record_s")),
            ("spawn -> first record", spawn_to_record),
        ):
            medians = {}
            for (scenario, m, client), runs in groups.items():
                values = [float(v) for r in runs if (v := get(r)) is not None]
                if scenario == "scale-out" and m == mode and values:
                    medians[client] = statistics.median(values)
            ours = medians.pop("kgroup", None)
            if ours is not None and medians:
                peer, best = min(medians.items(), key=lambda kv: kv[1])
                out.append(
                    f"joiner {label}, {mode}: kgroup {ours:.2f} s vs best peer ({peer}) {best:.2f} s = "
                    f"{ours / best:.2f}x -> <= 0.9x: {'met' if ours <= 0.9 * best else 'NOT met'}"
                )
    for (scenario, mode, client), runs in groups.items():
        if scenario == "rolling" and mode == "static":
            counts = _values(runs, "rebalances_started")
            if counts:
                verdict = "met" if max(counts) == 0 else "NOT met"
                out.append(f"static rolling restart, {client}: {counts} rebalances -> 0: {verdict}")
            else:  # no proxy: no rebalance count; no partition changing owner is what shows instead
                changes = _values(runs, "owner_changes")
                verdict = "met" if changes and max(changes) == 0 else "NOT met"
                out.append(f"static rolling restart, {client}: rebalances n/a (no proxy), owner changes {changes}"
                           f" -> 0: {verdict}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="kgroup only, one run each")
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"of {', '.join(ALL_MODES)} ({CONSUMER_MODE}: KIP-848, kgroup and java on Apache Kafka)")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"of {', '.join(ALL_SCENARIOS)}")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each scale-out combination")
    parser.add_argument("--repeat-rolling", type=int, default=1, help="runs of each rolling-restart combination")
    parser.add_argument("--session-timeout-ms", type=int, default=10000)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=1000)
    parser.add_argument("--gap", type=float, default=2.0, help="seconds a restarted member stays down")
    parser.add_argument("--rate", type=float, default=20.0, help="records/s per partition")
    parser.add_argument("--quiet", type=float, default=2.0, help="seconds without callbacks that count as stable")
    parser.add_argument("--deadline", type=float, default=60.0, help="seconds to wait for a stable group")
    parser.add_argument("--broker", choices=("default", "tansu", "apache-kafka"), default="default",
                        help="the broker kind (default: kgroup.testing's selection from the environment)")
    parser.add_argument("--proxy", action=argparse.BooleanOptionalAction, default=None,
                        help="the coordinator proxy in front (default: on Tansu yes, on Apache Kafka no)")
    parser.add_argument("--java-clients", help="kafka-clients version of the java member (default: the Apache "
                        f"Kafka jars, 4.4.0; on Tansu {TANSU_JAVA_CLIENTS}, which speaks ApiVersions v4)")
    parser.add_argument("--json", help="also write the raw results here")
    parser.add_argument("--events", help="write every run's member and model events into this directory")
    args = parser.parse_args(argv)
    clients = ["kgroup"] if args.quick else [c for c in args.clients.split(",") if c]
    modes = [m for m in args.modes.split(",") if m]
    scenarios = [s for s in args.scenarios.split(",") if s]
    if args.quick:
        args.repeat = args.repeat_rolling = 1
    unknown = sorted(set(modes) - set(ALL_MODES)) + sorted(set(scenarios) - set(ALL_SCENARIOS))
    if unknown:
        parser.error(f"unknown modes or scenarios: {unknown}")

    if args.broker == "apache-kafka":
        # the consumer protocol's session and heartbeat are the broker's: the classic members' values
        overrides: dict[str, Any] = {
            "group.initial.rebalance.delay.ms": 0,
            "group.consumer.session.timeout.ms": args.session_timeout_ms,
            "group.consumer.min.session.timeout.ms": args.session_timeout_ms,
            "group.consumer.heartbeat.interval.ms": args.heartbeat_interval_ms,
            "group.consumer.min.heartbeat.interval.ms": args.heartbeat_interval_ms,
        }
        broker = start_broker(kind="apache-kafka", overrides=overrides, startup_timeout_s=120)
    else:
        broker = start_broker(kind=None if args.broker == "default" else args.broker)
    if args.java_clients is None and broker.kind == "tansu":
        args.java_clients = TANSU_JAVA_CLIENTS
    proxy: CoordinatorProxy | None = None
    use_proxy = args.proxy if args.proxy is not None else broker.kind not in ("external", "apache-kafka")
    try:
        if not use_proxy:
            env = Env(broker.bootstrap_servers, broker.bootstrap_servers, None)
        else:
            proxy = CoordinatorProxy(
                broker.bootstrap_servers, config=CoordinatorConfig(group_initial_rebalance_delay_ms=0)
            ).start()
            env = Env(proxy.bootstrap_servers, broker.bootstrap_servers, proxy)
        print(f"broker: {broker.describe()}; proxy: {'yes' if proxy else 'no'}", file=sys.stderr)
        print(f"broker: {broker.kind} {broker.version}; coordinator: "
              f"{'the proxy model' if proxy else 'the broker'}; clients {','.join(clients)}"
              + (f" (java: kafka-clients {args.java_clients or '4.4.0'})" if "java" in clients else ""))
        results: list[dict[str, Any]] = []
        started = time.monotonic()
        for scenario in scenarios:
            repeat = args.repeat if scenario != "rolling" else args.repeat_rolling
            for n in range(repeat):  # clients interleaved, so a slow minute hits all of them
                for mode in modes:
                    for client in clients:
                        if mode == CONSUMER_MODE and (client not in CONSUMER_CLIENTS or broker.kind != "apache-kafka"):
                            print(f"skipped: {mode} {client} (the consumer protocol: {', '.join(CONSUMER_CLIENTS)} "
                                  "on Apache Kafka)", file=sys.stderr)
                            continue
                        elapsed = time.monotonic() - started
                        print(f"[{elapsed:6.1f}s] {scenario} {mode} {client} #{n}", file=sys.stderr, flush=True)
                        m = run_one(env, client, mode, scenario, args)
                        results.append(
                            {"scenario": scenario, "mode": mode, "client": client, "run": n, "metrics": m.__dict__}
                        )
        print(render(results))
        print()
        print(render_scale_outs(results))
        print()
        print(render_pauses(results))
        print()
        for line in targets(results):
            print(line)
        print(f"\n(total {time.monotonic() - started:.0f} s)")
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1))
    finally:
        if proxy is not None:
            proxy.stop()
        broker.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
