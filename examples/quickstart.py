"""kgroup quickstart: a consumer group that rebalances under load and loses nothing.

Run it with ``python examples/quickstart.py`` (``PYTHONPATH`` must reach ``kgroup``). It uses
the cluster named by ``KGROUP_BOOTSTRAP_SERVERS`` if that is set, and otherwise starts the
embedded test broker (``kgroup.testing.start_broker()``) and stops it at the end.

What it demonstrates
--------------------
1. A 12-partition topic with 100,000 records (key = the record's index, value ~100 bytes
   containing the index), produced with ``kgroup.testing.produce``.
2. Three consumer *processes* (``multiprocessing``, "spawn" context) in one group with
   manual commits: each polls with a short timeout, "processes" a record by writing
   ``(partition, offset)`` to its own JSON-lines file (after a simulated 0.7 ms of work per
   record, ``--work-us``), and commits synchronously after every poll batch. Its
   ``RebalanceListener`` commits in ``on_partitions_revoked`` and logs every ``assigned`` /
   ``revoked`` / ``lost`` event with a ``time.time()`` timestamp.
3. Once about a third of the records are processed, one member closes cleanly
   (``consumer.close()``, which revokes and sends LeaveGroup); once it has gone, a fourth
   member joins.
4. Once every record is processed, all members close. The parent prints a per-member
   rebalance timeline and verifies:

   * every produced record was processed at least once (distinct ``(partition, offset)``
     == 100,000, and every key index seen), and how many duplicates there were;
   * no partition was owned by two members at once: per member and partition, the
     ownership interval ``[assigned, revoked | lost | closed)`` taken from the listener
     timestamps must not overlap another member's interval for the same partition;
   * every record was processed while its member owned the partition (acquiesce).

   It prints ``PASS``/``FAIL`` and exits non-zero on a lost record, double ownership, a
   member that crashed or had to be killed, or the global deadline.

Why revoke-before-assign means no double ownership
--------------------------------------------------
"Kafka consumer rebalances in excruciating detail" (a guide for client library authors),
section "Rebalances as Double Barriers": a rebalance acts like ZooKeeper's double barrier.
Members *enter* the barrier with
JoinGroup, and no JoinGroup response is sent until every member has rejoined; they *leave*
it with SyncGroup, and no one gets its new assignment before the leader's SyncGroup. An eager
member revokes (and commits) everything it owns *before* it sends JoinGroup, so by the time
any member learns its new assignment, every previous owner has already finished
``on_partitions_revoked`` and committed. The new owner's ``assigned`` timestamp therefore
comes after the old owner's ``revoked`` timestamp, and its OffsetFetch sees the old owner's
last commit. This script checks that property from the outside, with wall-clock timestamps
written by separate processes on the same host.

The embedded Tansu broker does not enforce the JoinGroup half of the barrier (each JoinGroup
simply returns after session_timeout_ms / 2; docs/testing.md, row S4a), so there
the property rests on timing: members revoke within about a heartbeat interval of the
rebalance starting, while every join takes ~3 s. On Apache Kafka the broker guarantees it.

Duplicates are legitimate (at-least-once): a batch that was processed but whose commit
failed because a rebalance had already begun is re-delivered to the next owner.

Everything is bounded: members poll with 500 ms timeouts and stop at a deadline of their
own, ``close()`` has a timeout, and the parent kills stragglers at a global deadline and
reports FAIL. Files (member logs, record/event JSON lines, broker log) stay in a temporary
directory whose path is printed.
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import kgroup
from kgroup.testing import create_topic, produce, start_broker

NUM_PARTITIONS = 12
NUM_RECORDS = 100_000
VALUE_SIZE = 100

SESSION_TIMEOUT_MS = 6000  # Tansu: every join takes session_timeout_ms / 2 (docs/testing.md)
HEARTBEAT_INTERVAL_MS = 1000
POLL_TIMEOUT_MS = 500
COMMIT_TIMEOUT_MS = 10_000
# Simulated processing cost. Recording a record alone takes ~10 us, so 100,000 records would be
# done in about a second: quicker than a single join on the test broker (~3 s), and the
# member leaving/joining would change nothing. 0.7 ms per record keeps records flowing for
# ~30 s, so both rebalances happen in the middle of the stream.
DEFAULT_WORK_US = 700
CLOSE_TIMEOUT_MS = 10_000

GLOBAL_DEADLINE_S = 110.0  # whole run, from start to verdict (must stay under 2 minutes)
CHURN_FRACTION = 1 / 3  # one member leaves and one joins at this progress
CHURN_DEADLINE_S = 40.0  # ... or at this many seconds after the members start, whichever first
JOIN_GRACE_S = 15.0  # how long members get to close after being told to stop
MEMBER_MARGIN_S = 20.0  # members stop on their own this long before the global deadline
CHECK_INTERVAL_S = 0.2
#: seconds between the progress lines printed while the members work
PROGRESS_EVERY_S = 5.0

FIRST_MEMBERS = ("member-1", "member-2", "member-3")
LEAVING_MEMBER = "member-2"
JOINING_MEMBER = "member-4"


# ======================================================================= member process


class LoggingListener(kgroup.RebalanceListener):
    """Logs every rebalance callback and commits the revoked partitions' offsets."""

    def __init__(self, member: Member) -> None:
        self._member = member

    def on_partitions_assigned(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
        self._member.event("assigned", partitions)

    def on_partitions_revoked(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
        # The member owns the partitions until this callback returns (it commits them
        # first), so the end of its ownership interval is timestamped after the commit.
        self._member.commit("on_partitions_revoked")
        self._member.event("revoked", partitions)

    def on_partitions_lost(self, partitions: frozenset[kgroup.TopicPartition]) -> None:
        # Lost partitions may already belong to someone else: never commit them.
        self._member.event("lost", partitions)


class Member:
    """One group member: poll, record, commit; write everything to a JSON-lines file."""

    def __init__(self, name: str, out_path: Path) -> None:
        self.name = name
        self._out = out_path.open("w", encoding="utf-8")
        self.consumer: kgroup.Consumer | None = None

    def _write(self, obj: dict[str, Any]) -> None:
        self._out.write(json.dumps(obj, separators=(",", ":")) + "\n")

    def event(self, kind: str, partitions: frozenset[kgroup.TopicPartition] = frozenset(), **extra: Any) -> None:
        self._write(
            {
                "t": time.time(),
                "m": self.name,
                "kind": "event",
                "event": kind,
                "partitions": sorted(tp.partition for tp in partitions),
                **extra,
            }
        )
        self._out.flush()

    def record(self, rec: kgroup.ConsumerRecord, now: float) -> None:
        key = int(rec.key) if rec.key is not None else -1
        self._write({"t": now, "kind": "rec", "p": rec.partition, "o": rec.offset, "k": key})

    def commit(self, where: str) -> None:
        """Commit the positions of everything handed out; log (don't raise) a failed commit."""
        assert self.consumer is not None
        try:
            self.consumer.commit(timeout_ms=COMMIT_TIMEOUT_MS)
        except (
            kgroup.CommitFailedError,
            kgroup.RebalanceInProgressError,
            kgroup.CoordinatorUnavailable,
            kgroup.ConsumerClosedError,
        ) as exc:
            # At-least-once: the batch will be re-delivered to whoever owns the partition next.
            self.event("commit_failed", where=where, error=f"{type(exc).__name__}: {exc}")

    def run(
        self, bootstrap: str, group_id: str, topic: str, stop: Event, deadline_epoch: float, work_s_per_record: float
    ) -> int:
        self.event("started")
        self.consumer = kgroup.Consumer(
            bootstrap_servers=bootstrap,
            group_id=group_id,
            client_id=self.name,
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        reason = "deadline"
        try:
            self.consumer.subscribe([topic], LoggingListener(self))
            while time.time() < deadline_epoch:
                if stop.is_set():
                    reason = "stop requested"
                    break
                records = self.consumer.poll(POLL_TIMEOUT_MS)
                if not records:
                    continue
                time.sleep(len(records) * work_s_per_record)  # the "work"
                now = time.time()
                for rec in records:
                    self.record(rec, now)
                self._out.flush()
                self.commit("after poll batch")
        finally:
            self.event("closing", reason=reason)
            self.consumer.close(timeout_ms=CLOSE_TIMEOUT_MS)
            # Anything still open in this member's timeline ends here at the latest.
            self.event("closed")
            self._out.close()
        return 0 if reason == "stop requested" else 3


def member_main(
    name: str,
    bootstrap: str,
    group_id: str,
    topic: str,
    run_dir: str,
    stop: Event,
    deadline_epoch: float,
    work_s_per_record: float,
) -> None:
    """Entry point of a member process (spawned, so it re-imports this module)."""
    run = Path(run_dir)
    logging.basicConfig(
        filename=run / f"{name}.log",
        level=logging.INFO,
        format="%(asctime)s.%(msecs)03d %(levelname)s %(threadName)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    logging.getLogger("kafka").setLevel(logging.WARNING)
    try:
        code = Member(name, run / f"{name}.jsonl").run(
            bootstrap, group_id, topic, stop, deadline_epoch, work_s_per_record
        )
    except BaseException:
        logging.getLogger("quickstart").exception("member %s crashed", name)
        raise
    sys.exit(code)


# ======================================================================= parent: progress


class OutputTailer:
    """Reads the members' JSON-lines files incrementally (only complete lines)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._pos = 0
        self._partial = b""

    def new_lines(self) -> list[dict[str, Any]]:
        try:
            with self.path.open("rb") as f:
                f.seek(self._pos)
                data = f.read()
        except FileNotFoundError:
            return []
        self._pos += len(data)
        data = self._partial + data
        *complete, self._partial = data.split(b"\n")
        return [json.loads(line) for line in complete if line]


@dataclass
class MemberOutput:
    name: str
    events: list[dict[str, Any]] = field(default_factory=list)
    records: list[tuple[float, int, int, int]] = field(default_factory=list)  # (t, p, o, key)


class Progress:
    """Everything the members have written so far."""

    def __init__(self, run_dir: Path) -> None:
        self._run_dir = run_dir
        self._tailers: dict[str, OutputTailer] = {}
        self.members: dict[str, MemberOutput] = {}
        self.distinct: set[tuple[int, int]] = set()

    def add_member(self, name: str) -> None:
        self._tailers[name] = OutputTailer(self._run_dir / f"{name}.jsonl")
        self.members[name] = MemberOutput(name)

    def refresh(self) -> int:
        for name, tailer in self._tailers.items():
            out = self.members[name]
            for obj in tailer.new_lines():
                if obj["kind"] == "rec":
                    out.records.append((obj["t"], obj["p"], obj["o"], obj["k"]))
                    self.distinct.add((obj["p"], obj["o"]))
                else:
                    out.events.append(obj)
        return len(self.distinct)


# ======================================================================= parent: verification


@dataclass
class Interval:
    member: str
    partition: int
    start: float
    end: float


def ownership_intervals(out: MemberOutput, end_of_process: float) -> list[Interval]:
    """[assigned, revoked | lost | closed) per partition, from one member's listener events."""
    opened: dict[int, float] = {}
    intervals: list[Interval] = []

    def close(partition: int, t: float) -> None:
        intervals.append(Interval(out.name, partition, opened.pop(partition), t))

    for ev in out.events:
        if ev["event"] == "assigned":
            for p in ev["partitions"]:
                opened.setdefault(p, ev["t"])
        elif ev["event"] in ("revoked", "lost"):
            for p in ev["partitions"]:
                if p in opened:
                    close(p, ev["t"])
        elif ev["event"] == "closed":
            for p in list(opened):
                close(p, ev["t"])
    for p in list(opened):  # the process never logged "closed": it owned p until it died
        close(p, end_of_process)
    return intervals


def find_overlaps(intervals: list[Interval]) -> list[tuple[Interval, Interval]]:
    by_partition: dict[int, list[Interval]] = defaultdict(list)
    for iv in intervals:
        by_partition[iv.partition].append(iv)
    overlaps = []
    for ivs in by_partition.values():
        ivs.sort(key=lambda iv: iv.start)
        for i, a in enumerate(ivs):
            for b in ivs[i + 1 :]:
                if b.start >= a.end:
                    break
                if b.member != a.member:
                    overlaps.append((a, b))
    return overlaps


def records_outside_ownership(progress: Progress, intervals: list[Interval]) -> int:
    owned: dict[tuple[str, int], list[tuple[float, float]]] = defaultdict(list)
    for iv in intervals:
        owned[(iv.member, iv.partition)].append((iv.start, iv.end))
    bad = 0
    for name, out in progress.members.items():
        for t, p, _o, _k in out.records:
            if not any(s <= t < e for s, e in owned[(name, p)]):
                bad += 1
    return bad


def print_timeline(progress: Progress, t0: float, marks: list[tuple[float, str]]) -> None:
    print("\nRebalance timeline (seconds since start; 'owns' = partitions after the event)")
    for t, what in marks:
        print(f"  {t - t0:7.2f}s  parent    {what}")
    for name, out in progress.members.items():
        print(f"  {name}:")
        owns: set[int] = set()
        for ev in out.events:
            kind = ev["event"]
            parts = ev.get("partitions", [])
            if kind == "assigned":
                owns |= set(parts)
            elif kind in ("revoked", "lost"):
                owns -= set(parts)
            elif kind == "closed":
                owns = set()
            detail = f"{parts}" if kind in ("assigned", "revoked", "lost") else ""
            if kind == "commit_failed":
                detail = f"({ev['where']}) {ev['error']}"
            elif kind == "closing":
                detail = f"({ev['reason']})"
            print(f"    {ev['t'] - t0:7.2f}s  {kind:<13} {detail:<40} owns {sorted(owns)}")
        print(f"    records processed: {len(out.records)}")


# ======================================================================= parent: orchestration


def make_records() -> Any:
    for i in range(NUM_RECORDS):
        key = str(i).encode()
        value = f"record {i:06d} ".encode().ljust(VALUE_SIZE, b".")
        yield key, value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--work-us",
        type=float,
        default=DEFAULT_WORK_US,
        help=f"simulated processing time per record, in microseconds (default {DEFAULT_WORK_US})",
    )
    args = parser.parse_args()
    t0 = time.time()
    deadline = t0 + GLOBAL_DEADLINE_S
    run_dir = Path(tempfile.mkdtemp(prefix="kgroup-quickstart-"))
    print(f"run directory: {run_dir}")
    failures: list[str] = []
    marks: list[tuple[float, str]] = []

    broker = start_broker(log_dir=run_dir)
    print(broker.describe())
    procs: dict[str, multiprocessing.process.BaseProcess] = {}
    stops: dict[str, Event] = {}
    ctx = multiprocessing.get_context("spawn")
    try:
        topic = f"quickstart-{uuid.uuid4().hex[:12]}"
        group_id = f"quickstart-group-{uuid.uuid4().hex[:12]}"
        create_topic(broker.bootstrap_servers, topic, NUM_PARTITIONS)
        t = time.time()
        n = produce(broker.bootstrap_servers, topic, make_records(), timeout_s=60)
        print(f"produced {n} records to {topic} ({NUM_PARTITIONS} partitions) in {time.time() - t:.1f}s")
        marks.append((time.time(), f"produced {n} records"))

        progress = Progress(run_dir)
        member_deadline = deadline - MEMBER_MARGIN_S
        last_report = [time.time()]

        def report(force: bool = False) -> None:
            """A progress line every few seconds while the members work."""
            now = time.time()
            if force or now - last_report[0] >= PROGRESS_EVERY_S:
                last_report[0] = now
                alive = [name for name, proc in procs.items() if proc.is_alive()]
                print(
                    f"  {now - t0:6.1f}s  {len(progress.distinct):>7,}/{NUM_RECORDS:,} records processed; "
                    f"members running: {', '.join(alive) or 'none'}",
                    flush=True,
                )

        def start_member(name: str) -> None:
            stops[name] = ctx.Event()
            progress.add_member(name)
            procs[name] = ctx.Process(
                target=member_main,
                name=name,
                args=(
                    name,
                    broker.bootstrap_servers,
                    group_id,
                    topic,
                    str(run_dir),
                    stops[name],
                    member_deadline,
                    args.work_us / 1e6,
                ),
            )
            procs[name].start()
            marks.append((time.time(), f"started {name} (pid {procs[name].pid})"))

        for name in FIRST_MEMBERS:
            start_member(name)
        members_started = time.time()

        # Phase 1: wait for ~1/3 of the records, then one member leaves and one joins.
        churn_at = min(members_started + CHURN_DEADLINE_S, member_deadline)
        while progress.refresh() < NUM_RECORDS * CHURN_FRACTION and time.time() < churn_at:
            if not all(p.is_alive() for p in procs.values()):
                break
            report()
            time.sleep(CHECK_INTERVAL_S)
        report(force=True)
        print(f"  {LEAVING_MEMBER} closes (LeaveGroup); {JOINING_MEMBER} joins once it has gone", flush=True)
        done = len(progress.distinct)
        stops[LEAVING_MEMBER].set()
        marks.append((time.time(), f"{done} records processed: asked {LEAVING_MEMBER} to close"))
        # The newcomer is started only once the leaver has gone. Apache Kafka doesn't care
        # about the order, but the embedded Tansu broker does: if the group *leader* sends
        # LeaveGroup while a rebalance is already under way (e.g. started by the newcomer's
        # JoinGroup), Tansu keeps the departed member as leader, nobody gets an assignment,
        # and every SyncGroup fails with REBALANCE_IN_PROGRESS after 0.8 x session timeout,
        # forever. A LeaveGroup into a stable group picks a new leader correctly.
        procs[LEAVING_MEMBER].join(max(0.0, min(time.time() + JOIN_GRACE_S, member_deadline) - time.time()))
        marks.append((time.time(), f"{LEAVING_MEMBER} exited (code {procs[LEAVING_MEMBER].exitcode})"))
        start_member(JOINING_MEMBER)

        # Phase 2: wait until every record has been processed, then stop everybody.
        while progress.refresh() < NUM_RECORDS and time.time() < member_deadline:
            if not any(procs[m].is_alive() for m in procs if m != LEAVING_MEMBER):
                break
            report()
            time.sleep(CHECK_INTERVAL_S)
        report(force=True)
        marks.append((time.time(), f"{len(progress.distinct)} records processed: asking all members to close"))
        for stop in stops.values():
            stop.set()
    except BaseException:
        for stop in stops.values():
            stop.set()
        raise
    finally:
        # Bounded shutdown: wait for the members, then kill stragglers.
        join_until = min(time.time() + JOIN_GRACE_S, deadline)
        for proc in procs.values():
            proc.join(max(0.0, join_until - time.time()))
        for name, proc in procs.items():
            if proc.is_alive():
                failures.append(f"{name} did not exit in time: killed")
                proc.kill()
                proc.join(5)
            elif proc.exitcode != 0:
                failures.append(f"{name} exited with code {proc.exitcode} (see {run_dir / (name + '.log')})")
        end_of_processes = time.time()
        broker.stop()

    # ------------------------------------------------------------------ verification
    progress.refresh()
    print_timeline(progress, t0, marks)

    total = sum(len(out.records) for out in progress.members.values())
    distinct = len(progress.distinct)
    keys = {k for out in progress.members.values() for _t, _p, _o, k in out.records}
    missing_keys = NUM_RECORDS - len(keys & set(range(NUM_RECORDS)))
    intervals = [iv for out in progress.members.values() for iv in ownership_intervals(out, end_of_processes)]
    overlaps = find_overlaps(intervals)
    outside = records_outside_ownership(progress, intervals)
    commit_failures = [
        (out.name, ev) for out in progress.members.values() for ev in out.events if ev["event"] == "commit_failed"
    ]

    print("\nVerification")
    print(
        f"  records processed: {total}, distinct (partition, offset): {distinct} "
        f"of {NUM_RECORDS}, duplicates: {total - distinct}"
    )
    print(f"  key indices missing: {missing_keys}")
    print(f"  ownership intervals: {len(intervals)}, overlapping across members: {len(overlaps)}")
    for a, b in overlaps[:10]:
        print(
            f"    partition {a.partition}: {a.member} [{a.start - t0:.3f}, {a.end - t0:.3f}) "
            f"overlaps {b.member} [{b.start - t0:.3f}, {b.end - t0:.3f})"
        )
    print(f"  records processed outside the member's ownership interval: {outside}")
    print(f"  failed commits: {len(commit_failures)}")
    for name, ev in commit_failures:
        print(f"    {name} at {ev['t'] - t0:.2f}s ({ev['where']}): {ev['error']}")

    if distinct < NUM_RECORDS or missing_keys:
        failures.append(f"lost records: {NUM_RECORDS - distinct} offsets and {missing_keys} keys never processed")
    if overlaps:
        failures.append(f"double ownership: {len(overlaps)} overlapping intervals")
    if outside:
        failures.append(f"{outside} records processed by a member not owning the partition")
    elapsed = time.time() - t0
    if elapsed > GLOBAL_DEADLINE_S:
        failures.append(f"global deadline of {GLOBAL_DEADLINE_S:.0f}s exceeded")

    print(f"\nelapsed: {elapsed:.1f}s")
    if failures:
        print("FAIL: " + "; ".join(failures))
        print(f"  logs: {run_dir}")
        return 1
    print(
        f"PASS: {distinct}/{NUM_RECORDS} records processed, {total - distinct} duplicates, "
        f"no partition owned by two members at once"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
