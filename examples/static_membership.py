"""kgroup static membership (KIP-345): a rolling restart of three consumers without a rebalance.

Run it with ``python examples/static_membership.py`` (``PYTHONPATH`` must reach ``kgroup``).

Where it runs
-------------
* ``KGROUP_BOOTSTRAP_SERVERS`` set: that cluster, directly (Apache Kafka 2.3+; JoinGroup v9
  from Kafka 3.0 gives the restarted leader ``skip_assignment``, KIP-814).
* Otherwise: the embedded test broker (``kgroup.testing.start_broker()``) behind a
  ``kgroup.testing.CoordinatorProxy``, which answers the group APIs with Apache Kafka's
  coordinator semantics. The proxy is needed because the embedded broker (Tansu) cannot
  replace a static member: it parks a static rejoin for session_timeout_ms / 2 and can
  rebalance on it (``docs/testing.md``, rows S9a-S9g). The proxy's model
  also logs what the coordinator did, which this script prints.

What it does
------------
1. Creates a 6-partition topic, produces 50 records per partition, then keeps producing
   one record per partition every 100 ms while the scenario runs.
2. Starts three consumers with ``group_instance_id`` ``static-0``, ``static-1``,
   ``static-2`` (``session_timeout_ms=10000``: sized for the longest restart to ride out,
   KIP-345; "Kafka Static Membership" in the field report "Solving My Weird Kafka
   Rebalancing Problems"). Each polls on its own thread, "processes" each record
   for 2 ms and commits automatically (every 500 ms, and on revoke, so at close()).
3. Once the group is stable and every member has consumed, restarts them one at a time,
   like a rolling deploy: ``close()`` with the default policy (a static member sends no
   LeaveGroup and stays in the group), 2 s "down", then a new ``Consumer`` with the same
   instance id. The coordinator replaces the member id and hands back the cached assignment
   at the same generation; the other members notice nothing.
4. Prints the timeline (restarts, member ids, generation ids, assignments, the time from
   restart to assignment and to the first record) and the coordinator's events, then checks:

   * no rebalance started after the group first became stable (coordinator events, proxy
     mode), and one ``static_member_replaced`` per restart;
   * each restart got a new member id, and its partitions well within the session timeout;
   * the generation id never changed and each instance id got back exactly its partitions;
   * the members that were not restarting saw no listener callback during the restarts;
   * per partition, the processed offsets are contiguous from 0 (the restarted member
     resumed from the committed offset: nothing skipped; re-delivery is allowed).

   The last line is ``PASS: ...`` or ``FAIL: ...``; the exit code is 0 or 1. Everything is
   bounded (a 60 s global deadline).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import uuid
from typing import Any

import kgroup
from kgroup import TopicPartition
from kgroup.testing import CoordinatorProxy, create_topic, produce, start_broker
from kgroup.testing.coordinator import CoordinatorConfig

PARTITIONS = 6
RECORDS_PER_PARTITION = 50  # produced up front; then one per partition every PRODUCE_EVERY_S
PRODUCE_EVERY_S = 0.1
MEMBERS = 3
SESSION_TIMEOUT_MS = 10000
HEARTBEAT_INTERVAL_MS = 1000
WORK_S = 0.002  # simulated processing time per record
DOWN_S = 2.0  # how long each member is "down" during its restart (well within the session timeout)
GLOBAL_DEADLINE_S = 60.0

T0 = time.monotonic()


def now() -> float:
    return time.monotonic() - T0


def say(message: str) -> None:
    print(f"{now():7.2f}s  {message}", flush=True)


def parts(partitions: frozenset[TopicPartition]) -> str:
    return "[" + ",".join(str(tp.partition) for tp in sorted(partitions)) + "]"


class Listener(kgroup.RebalanceListener):
    """Records every callback with its time; the timeline and the checks read them."""

    def __init__(self, member: Member) -> None:
        self.member = member

    def _log(self, kind: str, partitions: frozenset[TopicPartition]) -> None:
        self.member.callbacks.append((time.monotonic(), kind, partitions))

    def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        self._log("assigned", partitions)

    def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        self._log("revoked", partitions)

    def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self._log("lost", partitions)


class Member:
    """One incarnation of a static consumer, polling on its own thread."""

    def __init__(self, instance_id: str, bootstrap: str, group: str, topic: str) -> None:
        self.instance_id = instance_id
        self.consumer = kgroup.Consumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            group_instance_id=instance_id,
            client_id=instance_id,
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            auto_offset_reset="earliest",
            max_poll_records=20,
            auto_commit_interval_ms=500,
        )
        self.topic = topic
        self.callbacks: list[tuple[float, str, frozenset[TopicPartition]]] = []
        self.offsets: list[tuple[int, int]] = []  # (partition, offset) processed
        self.first_record_at: float | None = None
        self.error: BaseException | None = None
        self.started_at = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=instance_id, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.consumer.subscribe([self.topic], listener=Listener(self))
            while not self._stop.is_set():
                for record in self.consumer.poll(100):
                    if self.first_record_at is None:
                        self.first_record_at = time.monotonic()
                    time.sleep(WORK_S)  # "processing"
                    self.offsets.append((record.partition, record.offset))
        except BaseException as exc:  # reported by the checks
            self.error = exc

    def assignment(self) -> frozenset[TopicPartition]:
        return self.consumer.assignment()

    def metadata(self) -> kgroup.GroupMetadata:
        return self.consumer.group_metadata()

    def close(self) -> None:
        """Stop polling, then close with the default policy: a static member stays in the group."""
        self._stop.set()
        self._thread.join(10)
        self.consumer.close(10000)


def wait_for(predicate: Any, timeout_s: float, what: str) -> None:
    deadline = min(time.monotonic() + timeout_s, T0 + GLOBAL_DEADLINE_S)
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    if not predicate():
        raise TimeoutError(f"timed out waiting for {what}")


def run(bootstrap: str, proxy: CoordinatorProxy | None) -> list[str]:
    """The scenario; returns the failed checks (empty: PASS)."""
    run_id = uuid.uuid4().hex[:8]
    topic, group = f"static-demo-{run_id}", f"static-demo-{run_id}"
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, [
        (p, str(i).encode(), f"{p}:{i}".encode()) for p in range(PARTITIONS) for i in range(RECORDS_PER_PARTITION)
    ])
    say(f"topic {topic}: {PARTITIONS} partitions x {RECORDS_PER_PARTITION} records, then 1 per partition "
        f"every {PRODUCE_EVERY_S * 1000:.0f} ms; group {group}")
    producing = threading.Event()
    producing.set()

    def keep_producing() -> None:
        i = RECORDS_PER_PARTITION
        while producing.is_set():
            produce(bootstrap, topic, [(p, str(i).encode(), f"{p}:{i}".encode()) for p in range(PARTITIONS)])
            i += 1
            time.sleep(PRODUCE_EVERY_S)  # the production rate

    producer = threading.Thread(target=keep_producing, name="producer", daemon=True)
    producer.start()
    try:
        return scenario(bootstrap, proxy, topic, group)
    finally:
        producing.clear()
        producer.join(10)


def scenario(bootstrap: str, proxy: CoordinatorProxy | None, topic: str, group: str) -> list[str]:

    members = {f"static-{i}": Member(f"static-{i}", bootstrap, group, topic) for i in range(MEMBERS)}
    every = frozenset(TopicPartition(topic, p) for p in range(PARTITIONS))

    def stable() -> bool:
        owned = [m.assignment() for m in members.values()]
        return all(owned) and sum(map(len, owned)) == PARTITIONS and frozenset().union(*owned) == every and all(
            m.first_record_at is not None for m in members.values()
        )

    wait_for(stable, 30, "the group to form and every member to consume")
    generation = {iid: m.metadata().generation_id for iid, m in members.items()}
    plan = {iid: m.assignment() for iid, m in members.items()}
    leader = ""
    if proxy is not None:  # the coordinator's last completed generation names the leader
        completed = [e for e in proxy.model_events(group) if e.kind == "generation_completed"]
        leader = completed[-1].detail.split("leader ", 1)[1].split(",", 1)[0]
    for iid, m in members.items():
        meta = m.metadata()
        role = " (leader: it gets skip_assignment when it rejoins, KIP-814)" if meta.member_id == leader else ""
        say(f"{iid}: member {meta.member_id[:20]}..., generation {meta.generation_id}, "
            f"partitions {parts(plan[iid])}{role}")
    stable_mark = len(proxy.model_events(group)) if proxy is not None else 0
    incarnations: list[Member] = list(members.values())
    failures: list[str] = []

    say(f"rolling restart: close() each member (default policy: no LeaveGroup), restart it {DOWN_S:.1f} s later")
    for iid in list(members):
        others = [m for other, m in members.items() if other != iid]
        seen = {m.instance_id: len(m.callbacks) for m in others}
        old = members[iid]
        closing_at = time.monotonic()
        old_member_id = old.metadata().member_id
        say(f"{iid}: restarting (member {old_member_id[:20]}...)")
        old.close()
        time.sleep(DOWN_S)  # the process is down (simulated); not a synchronisation
        new = Member(iid, bootstrap, group, topic)
        members[iid] = new
        incarnations.append(new)
        wait_for(lambda n=new, want=plan[iid]: n.assignment() == want and n.first_record_at is not None, 20,
                 f"{iid} to get its partitions back and consume")
        assigned_at = new.callbacks[-1][0]
        assert new.first_record_at is not None
        meta = new.metadata()
        say(
            f"{iid}: back as member {meta.member_id[:20]}..., generation {meta.generation_id}, partitions "
            f"{parts(new.assignment())}; new consumer to assignment {assigned_at - new.started_at:.2f} s, "
            f"to first record {new.first_record_at - new.started_at:.2f} s "
            f"(close() to first record {new.first_record_at - closing_at:.2f} s)"
        )
        if meta.member_id == old_member_id:
            failures.append(f"{iid}: the coordinator re-issued member id {old_member_id}; KIP-345 replaces it")
        if assigned_at - new.started_at > SESSION_TIMEOUT_MS / 1000 / 2:
            failures.append(f"{iid}: the restart took {assigned_at - new.started_at:.1f} s to get its partitions, "
                            f"not well within session_timeout_ms ({SESSION_TIMEOUT_MS} ms)")
        if meta.generation_id != generation[iid]:
            failures.append(f"{iid}: generation {generation[iid]} -> {meta.generation_id} (a rebalance happened)")
        for m in others:
            extra = m.callbacks[seen[m.instance_id]:]
            if extra:
                failures.append(f"{m.instance_id} saw callbacks during {iid}'s restart: {[k for _, k, _ in extra]}")

    final = {iid: m.assignment() for iid, m in members.items()}
    for iid in members:
        if final[iid] != plan[iid]:
            failures.append(f"{iid}: partitions {parts(plan[iid])} -> {parts(final[iid])}")
    for m in members.values():
        m.close()
    for m in incarnations:
        if m.error is not None:
            failures.append(f"{m.instance_id}: {type(m.error).__name__}: {m.error}")
    processed: dict[int, set[int]] = {p: set() for p in range(PARTITIONS)}
    for m in incarnations:
        for p, offset in m.offsets:
            processed[p].add(offset)
    for p, offsets in processed.items():
        if offsets and offsets != set(range(max(offsets) + 1)):
            missing = sorted(set(range(max(offsets) + 1)) - offsets)
            failures.append(f"partition {p}: offsets skipped {missing[:5]}...")
    total = sum(len(o) for o in processed.values())
    say(f"processed {total} distinct records, {sum(len(m.offsets) for m in incarnations) - total} re-deliveries")

    if proxy is not None:
        print("\ncoordinator events (the proxy's model of Kafka's coordinator; on a static restart the old "
              "member id is\n'member_removed ... fenced' and the new one 'static_member_replaced': no rebalance):")
        events = proxy.model_events(group)
        for event in events:
            print(f"  {event.time_ms / 1000 - T0:7.2f}s  {event.kind:24} {event.member_id[:28]:28} {event.detail[:90]}")
        after = events[stable_mark:]
        rebalances = [e for e in after if e.kind == "rebalance_started"]
        replaced = [e for e in after if e.kind == "static_member_replaced"]
        if rebalances:
            failures.append(f"{len(rebalances)} rebalance(s) after the group was stable: {rebalances[0].detail}")
        if len(replaced) != MEMBERS:
            failures.append(f"{len(replaced)} static_member_replaced events, expected {MEMBERS}")
        leaves = proxy.requests("LeaveGroup")
        if leaves:
            failures.append(f"{len(leaves)} LeaveGroup request(s): a static member's close() must not leave")
    return failures


def main() -> int:
    argparse.ArgumentParser(description=__doc__.split("\n")[0]).parse_args()
    external = os.environ.get("KGROUP_BOOTSTRAP_SERVERS")
    broker = start_broker()
    proxy: CoordinatorProxy | None = None
    try:
        if external:
            bootstrap = broker.bootstrap_servers
            say(f"cluster {bootstrap} (KGROUP_BOOTSTRAP_SERVERS)")
        else:
            proxy = CoordinatorProxy(
                broker.bootstrap_servers, config=CoordinatorConfig(group_initial_rebalance_delay_ms=0)
            ).start()
            bootstrap = proxy.bootstrap_servers
            say(f"embedded broker at {broker.bootstrap_servers}, Kafka's coordinator (CoordinatorProxy) at {bootstrap}")
        failures = run(bootstrap, proxy)
    except Exception as exc:
        failures = [f"{type(exc).__name__}: {exc}"]
    finally:
        if proxy is not None:
            proxy.stop()
        broker.stop()
    took = now()
    if failures:
        for failure in failures:
            print(f"  - {failure}")
        print(f"FAIL: {len(failures)} check(s) failed ({took:.1f} s)")
        return 1
    print(f"PASS: {MEMBERS} static members restarted one by one with no rebalance, same generation and "
          f"partitions ({took:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
