"""Consumer groups on a real broker: each test runs on Apache Kafka's own coordinator
(``[apache-kafka]``) and on the coordinator proxy in front of the embedded Tansu (``[tansu]``),
or once on ``KGROUP_BOOTSTRAP_SERVERS``.

Every test sets session_timeout_ms explicitly (broker-notes.md: a Tansu join costs st/2) and
waits on conditions with deadlines. On Apache Kafka a new group's first join waits
``group.initial.rebalance.delay.ms`` (3 s, Kafka's default) and a rejoin completes when every
member has rejoined (members learn of a rebalance at their next heartbeat).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import kgroup
from kgroup import TopicPartition
from kgroup.testing import produce

from .harness import (
    BOTH,
    HEARTBEAT_MS,
    SESSION_TIMEOUT_MS,
    EventLog,
    Member,
    all_partitions,
    handed_out_after_revocation,
    split_exactly,
    wait_until,
)

JOIN_BUDGET_S = 30.0

pytestmark = BOTH


@pytest.fixture
def bootstrap(group_coordinator) -> str:
    """Apache Kafka itself, or the coordinator proxy (Kafka's coordinator, over the wire) in front
    of the embedded Tansu, which serves the data path; see docs/testing.md."""
    return group_coordinator.bootstrap_servers

def _produce_indexed(bootstrap: str, topic: str, partitions: int, per_partition: int) -> int:
    records = [
        (p, str(i).encode(), f"{p}:{i}".encode()) for p in range(partitions) for i in range(per_partition)
    ]
    return produce(bootstrap, topic, records)


def test_single_member_consumes_everything(bootstrap, topic_factory, group_id_factory):
    topic = topic_factory(4)
    _produce_indexed(bootstrap, topic, 4, 250)
    log = EventLog()
    member = Member("solo", bootstrap, group_id_factory(), [topic], log).start()
    try:
        wait_until(lambda: len(member.records) >= 1000, JOIN_BUDGET_S, "1000 records")
        assert member.assignment() == all_partitions(topic, 4)
        seen = {(r.partition, r.offset) for r in member.records}
        assert seen == {(p, o) for p in range(4) for o in range(250)}
        assert len(member.records) == 1000  # nothing twice
        values = {(r.partition, r.value) for r in member.records}
        assert (2, b"2:17") in values
        # callbacks ran on the polling thread, never on kgroup's or kafka-python's threads
        assert member.listener.threads == {member.poll_thread}
    finally:
        member.stop()
    assert not member.errors


def test_three_members_split_twelve_partitions_exactly(bootstrap, topic_factory, group_id_factory):
    topic = topic_factory(12)
    group = group_id_factory()
    log = EventLog()
    members = [Member(f"m{i}", bootstrap, group, [topic], log).start() for i in range(3)]
    try:
        wait_until(
            lambda: split_exactly(members, all_partitions(topic, 12))
            and all(len(m.assignment()) == 4 for m in members),
            JOIN_BUDGET_S * 2,
            "3 members with 4 partitions each",
        )
        # range over 3 members: contiguous ranges of 4
        ranges = sorted(sorted(tp.partition for tp in m.assignment()) for m in members)
        assert ranges == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    finally:
        for m in members:
            m.stop()
    assert not any(m.errors for m in members)


def test_join_and_graceful_leave_rebalance(bootstrap, topic_factory, group_id_factory):
    topic = topic_factory(6)
    group = group_id_factory()
    log = EventLog()
    expected = all_partitions(topic, 6)
    a = Member("a", bootstrap, group, [topic], log).start()
    try:
        wait_until(lambda: a.assignment() == expected, JOIN_BUDGET_S, "a owns all partitions")
        b = Member("b", bootstrap, group, [topic], log).start()
        try:
            wait_until(lambda: split_exactly([a, b], expected) and len(b.assignment()) == 3,
                       JOIN_BUDGET_S, "a and b split 6 partitions")
        finally:
            b.stop()  # close() sends LeaveGroup: a takes everything back without waiting for st
        left_at = time.monotonic()
        wait_until(lambda: a.assignment() == expected, JOIN_BUDGET_S, "a owns all partitions again")
        # a graceful leave needs no session timeout to pass before the partitions move back:
        # the rebalance costs one Tansu join (st/2) plus heartbeat detection, not st + join
        assert time.monotonic() - left_at < SESSION_TIMEOUT_MS / 1000 + 2
        assert [e.kind for e in log.events if e.member == "b"][-1] == "revoked"
    finally:
        a.stop()
    assert not a.errors


def test_barrier_every_revoke_completes_before_any_assign(bootstrap, topic_factory, group_id_factory):
    """Seed 001 "Rebalances as Double Barriers": revokes of generation g finish before any
    assignment of a later generation starts, across members (eager protocol)."""
    topic = topic_factory(6)
    group = group_id_factory()
    log = EventLog()
    expected = all_partitions(topic, 6)
    # a slow revoke widens the window in which a broken barrier would show
    a = Member("a", bootstrap, group, [topic], log, revoke_delay_s=0.5).start()
    b = Member("b", bootstrap, group, [topic], log, revoke_delay_s=0.5).start()
    members = [a, b]
    try:
        wait_until(lambda: split_exactly(members, expected), JOIN_BUDGET_S, "a and b split")
        c = Member("c", bootstrap, group, [topic], log, revoke_delay_s=0.5).start()
        members.append(c)
        wait_until(lambda: split_exactly(members, expected) and all(m.assignment() for m in members),
                   JOIN_BUDGET_S, "a, b and c split")
    finally:
        for m in members:
            m.stop()
    revokes = log.of("revoked")
    assigns = log.of("assigned")
    assert revokes and assigns
    pairs = 0
    for r in revokes:
        for a_ev in assigns:
            if a_ev.generation > r.generation:
                pairs += 1
                assert r.t_end <= a_ev.t_start, (
                    f"{r.member} finished revoking generation {r.generation} at {r.t_end:.3f} after "
                    f"{a_ev.member} started generation {a_ev.generation} at {a_ev.t_start:.3f}"
                )
    assert pairs > 0


def test_no_record_lost_across_five_rebalances(bootstrap, topic_factory, group_id_factory):
    topic = topic_factory(6)
    group = group_id_factory()
    total = _produce_indexed(bootstrap, topic, 6, 500)
    log = EventLog()
    expected = all_partitions(topic, 6)
    settings = {"enable_auto_commit": False, "max_poll_records": 20}

    def member(name: str) -> Member:
        return Member(name, bootstrap, group, [topic], log, commit_on_revoke=True,
                      commit_each_batch=True, **settings).start()

    active = [member("m0")]
    retired: list[Member] = []
    try:
        wait_until(lambda: split_exactly(active, expected), JOIN_BUDGET_S, "first member assigned")
        # 5 membership changes: join, join, leave, join, leave
        for step, change in enumerate(["join", "join", "leave", "join", "leave"], start=1):
            if change == "join":
                active.append(member(f"m{step}"))
            else:
                leaving = active.pop(0)
                leaving.stop()
                retired.append(leaving)
            wait_until(lambda: split_exactly(active, expected) and all(m.assignment() for m in active),
                       JOIN_BUDGET_S, f"rebalance {step} ({change}) to settle")
        everyone = active + retired
        wait_until(lambda: len({(r.partition, r.offset) for m in everyone for r in m.records}) >= total,
                   JOIN_BUDGET_S, "all records processed")
    finally:
        for m in active:
            m.stop()
    everyone = active + retired
    seen = [(r.partition, r.offset) for m in everyone for r in m.records]
    assert set(seen) == {(p, o) for p in range(6) for o in range(500)}
    # commit on revoke + commit after each batch: a moved partition restarts where its last
    # owner stopped, so nothing is processed twice
    assert len(seen) == len(set(seen))
    assert not any(m.errors for m in everyone)
    # acquiesce: nothing of a partition was handed out once its revocation had started
    assert [v for m in everyone for v in handed_out_after_revocation(m, log)] == []


def _four_partitions(topic_factory, group_id_factory) -> tuple[str, str, EventLog, frozenset[TopicPartition]]:
    """A new 4-partition topic, a new group id, an event log, and every partition of the topic."""
    topic = topic_factory(4)
    return topic, group_id_factory(), EventLog(), all_partitions(topic, 4)


def _steady_and_slow(bootstrap: str, group: str, topic: str, log: EventLog) -> tuple[Member, Member]:
    """Two members started: ``steady``, and ``slow`` whose poll watchdog fires after 4 s without a poll()."""
    steady = Member("steady", bootstrap, group, [topic], log).start()
    return steady, Member("slow", bootstrap, group, [topic], log, max_poll_interval_ms=4000).start()


def test_watchdog_leaves_group_when_poll_stalls(bootstrap, topic_factory, group_id_factory):
    """KIP-62 / seed 000 "Liveness and safety": no poll() within max_poll_interval_ms ->
    LeaveGroup, partitions move; the next poll() reports them lost and rejoins."""
    topic, group, log, expected = _four_partitions(topic_factory, group_id_factory)
    steady, slow = _steady_and_slow(bootstrap, group, topic, log)
    try:
        wait_until(lambda: split_exactly([steady, slow], expected) and slow.assignment(),
                   JOIN_BUDGET_S, "both members assigned")
        owned_by_slow = slow.assignment()
        slow.stall.set()  # the application stops calling poll()
        wait_until(lambda: steady.assignment() == expected, JOIN_BUDGET_S,
                   "the stalled member's partitions move to the steady member")
        assert not log.of("lost", "slow")  # nothing is delivered until slow polls again
        slow.stall.clear()
        wait_until(lambda: bool(log.of("lost", "slow")), JOIN_BUDGET_S, "on_partitions_lost on the next poll")
        assert log.of("lost", "slow")[0].partitions == owned_by_slow
        wait_until(lambda: split_exactly([steady, slow], expected) and slow.assignment(),
                   JOIN_BUDGET_S, "the slow member rejoined")
    finally:
        steady.stop()
        slow.stop()
    assert not steady.errors and not slow.errors


def test_watchdog_firing_while_a_revoke_waits_for_poll_reports_lost_not_revoked(
    bootstrap, topic_factory, group_id_factory
):
    """A rebalance starts while the application is stuck; its revoke step waits for poll();
    then the poll watchdog resets the generation. When poll() finally runs, the partitions can
    no longer be committed: Java's onJoinPrepare decides at that moment and calls
    onPartitionsLost, so kgroup must too (never on_partitions_revoked with a dead generation)."""
    topic, group, log, expected = _four_partitions(topic_factory, group_id_factory)
    steady, slow = _steady_and_slow(bootstrap, group, topic, log)
    joiner = None
    try:
        wait_until(lambda: split_exactly([steady, slow], expected) and slow.assignment(),
                   JOIN_BUDGET_S, "both members assigned")
        owned_by_slow = slow.assignment()
        slow.stall.set()
        joiner = Member("joiner", bootstrap, group, [topic], log).start()  # starts a rebalance now
        wait_until(lambda: split_exactly([steady, joiner], expected), JOIN_BUDGET_S,
                   "steady and the joiner to take over once slow's watchdog made it leave")
        slow.stall.clear()
        wait_until(lambda: bool(log.of("lost", "slow")), JOIN_BUDGET_S, "on_partitions_lost on the next poll")
        assert log.of("lost", "slow")[0].partitions == owned_by_slow
        assert not log.of("revoked", "slow"), "revoked with a generation that was already reset"
    finally:
        for m in (steady, slow, joiner):
            if m is not None:
                m.stop()


_MEMBER_SCRIPT = r"""
import sys, time
import kgroup
bootstrap, group, topic = sys.argv[1:4]
c = kgroup.Consumer(bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=6000,
                    heartbeat_interval_ms=1000, auto_offset_reset="earliest", client_id="victim")
class L(kgroup.RebalanceListener):
    def on_partitions_assigned(self, partitions):
        print("ASSIGNED", ",".join(str(tp.partition) for tp in sorted(partitions)), flush=True)
c.subscribe([topic], listener=L())
while True:
    c.poll(200)
"""


def test_kill_dash_nine_moves_partitions_after_session_timeout(
    bootstrap, topic_factory, group_id_factory, tmp_path: Path
):
    topic, group, log, expected = _four_partitions(topic_factory, group_id_factory)
    script = tmp_path / "member.py"
    script.write_text(_MEMBER_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, str(script), bootstrap, group, topic],
                            stdout=subprocess.PIPE, text=True, env=env)
    survivor = None
    try:
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)  # type: ignore[arg-type]
        reader.start()
        wait_until(lambda: any(line.startswith("ASSIGNED") for line in lines), JOIN_BUDGET_S, "victim assigned")
        survivor = Member("survivor", bootstrap, group, [topic], log).start()
        wait_until(lambda: survivor.assignment() and len(survivor.assignment()) == 2,
                   JOIN_BUDGET_S, "survivor and victim split 4 partitions")
        os.kill(proc.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        proc.wait(10)
        wait_until(lambda: survivor.assignment() == expected, SESSION_TIMEOUT_MS / 1000 + JOIN_BUDGET_S,
                   "the dead member's partitions move to the survivor")
        elapsed = time.monotonic() - killed_at
        # no LeaveGroup was sent: the coordinator had to wait for the session timeout
        assert elapsed >= SESSION_TIMEOUT_MS / 1000 - HEARTBEAT_MS / 1000
    finally:
        if proc.poll() is None:
            proc.kill()
        if survivor is not None:
            survivor.stop()
    assert not survivor.errors


def test_mixed_group_with_kafka_python_consumer_splits_without_overlap(
    bootstrap, topic_factory, group_id_factory
):
    from kafka import KafkaConsumer  # the peer client: kafka-python's own group member

    from tests.peers.kafka_python import keep_finished_joins

    topic = topic_factory(6)
    group = group_id_factory()
    log = EventLog()
    member = Member("kgroup", bootstrap, group, [topic], log).start()
    peer_assignment: set[TopicPartition] = set()
    stop = threading.Event()
    peer_errors: list[BaseException] = []

    undo_guard = keep_finished_joins()  # kafka-python 3.0.12 can drop a join done between polls

    def run_peer() -> None:
        consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                 session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                                 auto_offset_reset="earliest", client_id="kafka-python-peer")
        try:
            while not stop.is_set():
                consumer.poll(200)
                current = {TopicPartition(tp.topic, tp.partition) for tp in consumer.assignment()}
                peer_assignment.clear()
                peer_assignment.update(current)
        except BaseException as exc:
            peer_errors.append(exc)
        finally:
            consumer.close()

    peer = threading.Thread(target=run_peer, daemon=True)
    peer.start()
    try:
        def split() -> bool:
            mine, theirs = member.assignment(), frozenset(peer_assignment)
            return bool(mine) and bool(theirs) and not (mine & theirs) and mine | theirs == all_partitions(topic, 6)

        wait_until(split, JOIN_BUDGET_S * 2, "kgroup and kafka-python members split 6 partitions")
        assert len(member.assignment()) == 3
    finally:
        stop.set()
        peer.join(30)
        undo_guard()
        member.stop()
    assert not peer_errors and not member.errors


def test_commit_for_partition_not_owned_raises_and_writes_nothing(bootstrap, topic_factory, group_id_factory):
    topic = topic_factory(2)
    other = topic_factory(1)
    group = group_id_factory()
    consumer = kgroup.Consumer(bootstrap_servers=bootstrap, group_id=group,
                               session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS)
    try:
        consumer.subscribe([topic])
        wait_until(lambda: bool(consumer.poll(100)) or len(consumer.assignment()) == 2, JOIN_BUDGET_S, "assignment")
        not_mine = TopicPartition(other, 0)
        with pytest.raises(kgroup.CommitFailedError):
            consumer.commit({not_mine: 5, TopicPartition(topic, 0): 1})
        committed = consumer.committed([not_mine, TopicPartition(topic, 0)])
        assert committed == {not_mine: None, TopicPartition(topic, 0): None}
        consumer.commit({TopicPartition(topic, 0): 1})
        assert consumer.committed([TopicPartition(topic, 0)])[TopicPartition(topic, 0)].offset == 1
    finally:
        consumer.close()


class _Exploding(kgroup.RebalanceListener):
    def __init__(self) -> None:
        self.assigned: list[frozenset[TopicPartition]] = []

    def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        self.assigned.append(partitions)
        raise KeyError("boom in on_partitions_assigned")


@pytest.mark.broker_kinds("tansu")  # the client alone: the coordinator plays no part
def test_listener_exception_surfaces_from_poll_and_rebalance_completes(
    bootstrap, topic_factory, group_id_factory
):
    topic = topic_factory(2)
    _produce_indexed(bootstrap, topic, 2, 10)
    listener = _Exploding()
    consumer = kgroup.Consumer(bootstrap_servers=bootstrap, group_id=group_id_factory(),
                               session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                               auto_offset_reset="earliest")
    try:
        consumer.subscribe([topic], listener=listener)
        raised: list[kgroup.ListenerError] = []

        def poll_until_error() -> bool:
            try:
                consumer.poll(100)
            except kgroup.ListenerError as exc:
                raised.append(exc)
            return bool(raised)

        wait_until(poll_until_error, JOIN_BUDGET_S, "ListenerError from poll()")
        assert isinstance(raised[0].__cause__, KeyError)
        # the rebalance completed: the member owns its partitions and consumes them
        assert consumer.assignment() == all_partitions(topic, 2)
        records: list[kgroup.ConsumerRecord] = []
        wait_until(lambda: bool(records.extend(consumer.poll(100))) or len(records) >= 20,
                   JOIN_BUDGET_S, "records after the failed callback")
        assert len(records) == 20
    finally:
        consumer.close()


class _SlowAssign(kgroup.RebalanceListener):
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.lost: list[frozenset[TopicPartition]] = []
        self.done = threading.Event()

    def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        if partitions and not self.done.is_set():
            time.sleep(self.seconds)  # a slow callback (the thing under test), not synchronisation
            self.done.set()

    def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self.lost.append(partitions)


def test_heartbeats_continue_while_a_callback_runs(bootstrap, topic_factory, group_id_factory):
    """A callback longer than session_timeout_ms must not get the member evicted: the group
    thread heartbeats independently of the poll thread (Java semantics)."""
    topic = topic_factory(2)
    group = group_id_factory()
    log = EventLog()
    other = Member("other", bootstrap, group, [topic], log).start()
    slow_listener = _SlowAssign(SESSION_TIMEOUT_MS / 1000 + 2)
    slow = kgroup.Consumer(bootstrap_servers=bootstrap, group_id=group,
                           session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS)
    try:
        wait_until(lambda: len(other.assignment()) == 2, JOIN_BUDGET_S, "other owns both partitions")
        slow.subscribe([topic], listener=slow_listener)
        deadline = time.monotonic() + JOIN_BUDGET_S + 10
        while not slow_listener.done.is_set() and time.monotonic() < deadline:
            slow.poll(100)
        assert slow_listener.done.is_set()
        generation = slow.group_metadata().generation_id
        owned = slow.assignment()
        # keep polling a few heartbeat intervals: an evicted member would now see its
        # partitions lost (UNKNOWN_MEMBER_ID / REBALANCE_IN_PROGRESS and a new generation)
        settle = time.monotonic() + 3 * HEARTBEAT_MS / 1000
        while time.monotonic() < settle:
            slow.poll(100)
        assert slow_listener.lost == []
        assert owned and slow.assignment() == owned
        assert slow.group_metadata().generation_id == generation
        assert split_exactly([other], all_partitions(topic, 2) - owned)
    finally:
        slow.close()
        other.stop()


def test_auto_commit_on_revoke_hands_over_exact_positions(bootstrap, topic_factory, group_id_factory):
    """Seed 001 step 2 (commit): with enable_auto_commit the revoke commits the positions of
    the records handed out, so the next owner starts exactly there (no periodic commit here)."""
    topic = topic_factory(2)
    group = group_id_factory()
    _produce_indexed(bootstrap, topic, 2, 50)
    log = EventLog()
    a = Member("a", bootstrap, group, [topic], log, enable_auto_commit=True,
               auto_commit_interval_ms=3_600_000).start()
    try:
        wait_until(lambda: len(a.records) == 100, JOIN_BUDGET_S, "a consumed all 100 records")
        b = Member("b", bootstrap, group, [topic], log, enable_auto_commit=True,
                   auto_commit_interval_ms=3_600_000).start()
        try:
            wait_until(lambda: len(b.assignment()) == 1 and len(a.assignment()) == 1, JOIN_BUDGET_S, "split")
            moved = next(iter(b.assignment()))
            committed = b.consumer.committed([moved])[moved]
            assert committed is not None
            assert committed.offset == 50
            _produce_indexed(bootstrap, topic, 2, 1)  # one more record per partition
            wait_until(lambda: len(b.records) >= 1, JOIN_BUDGET_S, "b got the new record")
            assert [(r.partition, r.offset) for r in b.records] == [(moved.partition, 50)]
        finally:
            b.stop()
    finally:
        a.stop()


class _CallsTheConsumer(kgroup.RebalanceListener):
    """A listener that calls its consumer from a callback and keeps what the call raised."""

    def __init__(self, consumer_ref):
        self.consumer_ref = consumer_ref
        self.raised: list[BaseException] = []

    def _call(self, method: str) -> None:
        try:
            getattr(self.consumer_ref(), method)()
        except BaseException as exc:
            self.raised.append(exc)


class _ClosesInCallback(_CallsTheConsumer):
    def on_partitions_assigned(self, partitions):
        self._call("close")


@pytest.mark.broker_kinds("tansu")  # the client alone: the coordinator plays no part
def test_close_inside_callback_raises_instead_of_deadlocking(bootstrap, topic_factory, group_id_factory):
    topic = topic_factory(1)
    consumer = kgroup.Consumer(bootstrap_servers=bootstrap, group_id=group_id_factory(),
                               session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS)
    listener = _ClosesInCallback(lambda: consumer)
    try:
        consumer.subscribe([topic], listener=listener)
        wait_until(lambda: consumer.poll(100) is not None and bool(listener.raised), JOIN_BUDGET_S, "callback ran")
        assert isinstance(listener.raised[0], kgroup.IllegalStateError)
        consumer.poll(0)  # still usable
    finally:
        consumer.close()


class _CommitsOnRevoke(_CallsTheConsumer):
    def __init__(self, consumer_ref):
        super().__init__(consumer_ref)
        self.revoked: list[frozenset[TopicPartition]] = []

    def on_partitions_revoked(self, partitions):
        self.revoked.append(partitions)
        self._call("commit")


def test_commit_inside_revoke_during_close_is_written(bootstrap, topic_factory, group_id_factory):
    topic = topic_factory(1)
    group = group_id_factory()
    _produce_indexed(bootstrap, topic, 1, 10)
    consumer = kgroup.Consumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                               session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                               auto_offset_reset="earliest")
    listener = _CommitsOnRevoke(lambda: consumer)
    records: list[kgroup.ConsumerRecord] = []
    try:
        consumer.subscribe([topic], listener=listener)
        wait_until(lambda: bool(records.extend(consumer.poll(100))) or len(records) >= 10, JOIN_BUDGET_S, "10 records")
    finally:
        consumer.close()
    assert listener.revoked == [frozenset({TopicPartition(topic, 0)})]
    assert listener.raised == []
    checker = kgroup.Consumer(bootstrap_servers=bootstrap, group_id=group,
                              session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS)
    try:
        checker.subscribe([topic])
        committed = checker.committed([TopicPartition(topic, 0)])[TopicPartition(topic, 0)]
    finally:
        checker.close()
    assert committed is not None
    assert committed.offset == 10
