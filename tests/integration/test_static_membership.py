"""Static membership (KIP-345, seed 004; seed 000 "Static membership"; seed 003) end to end.

kgroup Consumers are the members; the coordinator is Apache Kafka's, modelled by the
``kafka_cluster`` proxy in front of the embedded broker. Each scenario also runs on the bare
broker (``where="bare"``), on Tansu and on Apache Kafka: on ``[tansu]`` Tansu's own coordinator
answers, and where it deviates from Kafka (broker-notes.md, row named in the mark) the plugin
deselects the bare run, or with ``--tansu-deviations`` makes it a strict xfail, so a Tansu that
starts behaving like Kafka can be noticed (docs/testing.md, "Tansu deviations: deselected, or
strict xfails"); on ``[apache-kafka]`` (and ``KGROUP_BOOTSTRAP_SERVERS``) Kafka's own
coordinator answers and every bare run must pass. The proxy runs are Tansu's only (the model
is the same whatever serves the data).

What is checked, per docs/protocol.md and the Java client:

* a static restart within ``session_timeout_ms`` replaces the member id without a
  rebalance (``static_member_replaced``, no ``rebalance_started``) and keeps the partitions;
  the other members' listeners see nothing;
* a static member closed with the default policy sends no LeaveGroup; its partitions stay
  unowned until its session timeout, then move; when it returns it rebalances in again;
* a second process with the same ``group_instance_id`` fences the first: its ``poll()`` and
  ``commit()`` raise ``FencedInstanceIdError`` naming the instance id, ``on_partitions_lost``
  runs, and the fenced member can never commit once the newcomer owns the partitions;
* a restarted static leader gets ``skip_assignment`` at JoinGroup v9 (KIP-814) and syncs
  without a plan: assignments are unchanged;
* ``close(group_membership=...)``: ``"remain"`` (dynamic) sends no LeaveGroup, ``"leave"``
  (static) sends LeaveGroup v3+ with the instance id and the partitions move at once;
* LeaveGroup by instance id alone (what an admin client sends) removes the static member;
* the static poll watchdog: no LeaveGroup, the partitions stay, and polling again before the
  session timeout rejoins with the same instance id and the same partitions
  (``on_partitions_lost`` then ``on_partitions_assigned``, docs/protocol.md's table).

No fixed sleeps: every wait polls a condition with a deadline; ``stays`` watches that a
condition holds over a window (a negative observation, not synchronisation).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import kgroup
from kgroup import TopicPartition
from kgroup.protocol.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kgroup.protocol.group_api import DescribeGroupsRequest

from .harness import BOTH, Background, EventLog, RecordingListener, all_partitions, stopped_after_the_test, wait_until
from .raw_client import MEMBER_ID_REQUIRED, RawClient

pytestmark = BOTH

ST = 6000  # session_timeout_ms: Kafka's minimum
HB = 1000  # heartbeat_interval_ms
PARTITIONS = 4
FORM_S = 30.0  # to form a group (ms through the proxy; seconds on Tansu or Kafka's 3 s delay)
LEAVE_GROUP = 13
CONSUMER_ERRORS = (kgroup.KGroupError,)


# --------------------------------------------------------------------------- where it runs


class BareBroker:
    """The broker without the proxy: its own coordinator answers (Tansu, or Apache Kafka)."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap_servers = bootstrap


def where(bare_deviation: str | None = None) -> pytest.MarkDecorator:
    """Parametrize over the proxy (Kafka's coordinator) and the bare broker; on bare Tansu the
    run is marked ``tansu_deviation(bare_deviation)`` (a broker-notes.md row), if given:
    deselected, a strict xfail with ``--tansu-deviations``."""
    bare: Any = "bare"
    if bare_deviation is not None:
        bare = pytest.param("bare", marks=pytest.mark.tansu_deviation(bare_deviation))
    return pytest.mark.parametrize("where", ["proxy", bare])


@pytest.fixture
def cluster(request: pytest.FixtureRequest, where: str, kafka_bootstrap: str) -> Any:
    if where == "proxy":
        return request.getfixturevalue("kafka_cluster")
    return BareBroker(kafka_bootstrap)


def is_proxy(cluster: Any) -> bool:
    return not isinstance(cluster, BareBroker)


# --------------------------------------------------------------------------- members


class Runner(Background):
    """A kgroup Consumer polling on its own thread; ``stop(policy)`` closes it with that policy."""

    def __init__(self, name: str, bootstrap: str, group: str, topic: str, log: EventLog,
                 *, instance_id: str | None = None, **config: Any) -> None:
        settings: dict[str, Any] = {
            "session_timeout_ms": ST,
            "heartbeat_interval_ms": HB,
            "auto_offset_reset": "earliest",
            "client_id": name,
            "group_instance_id": instance_id,
        }
        settings.update(config)
        self.name = name
        self.instance_id = instance_id
        self.consumer = kgroup.Consumer(bootstrap_servers=bootstrap, group_id=group, **settings)
        self.listener = RecordingListener(name, log, lambda: self.consumer)
        self.topic = topic
        self.errors: list[BaseException] = []
        self.stall = threading.Event()
        self.policy = "default"
        self.started_at = 0.0
        self.closed_at: float | None = None
        super().__init__(f"runner-{name}")
        self._stopped = threading.Event()

    def start(self) -> Runner:
        self.started_at = time.monotonic()
        return super().start()

    def _run(self) -> None:
        try:
            self.consumer.subscribe([self.topic], listener=self.listener)
            while not self._stop.is_set():
                if self.stall.is_set():
                    self._stop.wait(0.02)  # "processing": no poll() while stalled
                    continue
                self.consumer.poll(100)
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            try:
                self.consumer.close(10000, group_membership=self.policy, reason=f"{self.name} closing")
            except BaseException as exc:
                self.errors.append(exc)
            self.closed_at = time.monotonic()
            self._stopped.set()

    def assignment(self) -> frozenset[TopicPartition]:
        return self.consumer.assignment()

    def member_id(self) -> str:
        return self.consumer.group_metadata().member_id

    def generation_id(self) -> int:
        return self.consumer.group_metadata().generation_id

    def membership_generation(self) -> int:
        """The machine's own generation (-1 once reset); ``group_metadata()`` keeps the last one
        held until the member joins again (KIP-447: a zombie's transaction stays fenced)."""
        snapshot = self.consumer._snapshot()
        return snapshot.generation.generation_id if snapshot is not None else -1

    def stop(self, policy: str = "default", timeout_s: float = 20.0) -> float:
        """Close with ``policy``; returns when close() returned (time.monotonic())."""
        self.policy = policy
        self._stop.set()
        self.stall.clear()
        if not self._stopped.wait(timeout_s):
            raise AssertionError(f"{self.name} did not close within {timeout_s} s")
        assert self.closed_at is not None
        return self.closed_at


@pytest.fixture
def runners() -> Iterator[list[Runner]]:
    yield from stopped_after_the_test()


@pytest.fixture
def consumers() -> Iterator[list[kgroup.Consumer]]:
    """Consumers driven on the test thread; closed (with the default policy) at the end."""
    made: list[kgroup.Consumer] = []
    yield made
    for consumer in made:
        try:
            consumer.close(5000)
        except kgroup.KGroupError:
            pass


def new_group(cluster: Any, topic_factory: Any,
              group_id_factory: Any) -> tuple[str, str, frozenset[TopicPartition], EventLog, str]:
    """A new topic and group id: (topic, group, every partition of the topic, an event log, the bootstrap servers)."""
    topic, group = topic_factory(PARTITIONS), group_id_factory()
    return topic, group, all_partitions(topic, PARTITIONS), EventLog(), cluster.bootstrap_servers


def static_pair(boot: str, group: str, topic: str, log: EventLog, runners: list[Runner],
                everything: frozenset[TopicPartition]) -> tuple[Runner, Runner]:
    """Static members ``a`` (instance ``inst-a``) and ``b`` (``inst-b``) form the group, ``b`` first: ``b`` leads."""
    a = Runner("a", boot, group, topic, log, instance_id="inst-a")
    b = Runner("b", boot, group, topic, log, instance_id="inst-b")
    form(b, a, runners, everything)
    return a, b


def restart(a: Runner, before: frozenset[TopicPartition], what: str, boot: str, group: str, topic: str,
            log: EventLog, runners: list[Runner]) -> tuple[Runner, float]:
    """Static member ``a`` closes (default policy: it stays in the group) and a new process ``a2`` with
    its instance id starts, until it owns ``before`` again: (a2, seconds from the close until then)."""
    closed_at = a.stop()
    a2 = Runner("a2", boot, group, topic, log, instance_id=a.instance_id).start()
    runners.append(a2)
    wait_until(lambda: a2.assignment() == before, 15, what)
    return a2, time.monotonic() - closed_at


def form(first: Runner, second: Runner, runners: list[Runner], everything: frozenset[TopicPartition]) -> None:
    """Start ``first`` alone until it owns ``everything``, then ``second``, until they split it.

    ``first`` is then the leader, on Kafka (the first member to join leads, and stays leader
    while it rejoins) and on Tansu alike, so a scenario does not depend on who leads.
    """
    runners.append(first.start())
    wait_until(lambda: first.assignment() == everything, FORM_S, f"{first.name} to own every partition")
    runners.append(second.start())
    wait_until(lambda: split([first, second], everything), FORM_S,
               f"{first.name} and {second.name} to split the partitions")


def callbacks(log: EventLog, member: str) -> list[tuple[str, frozenset[TopicPartition]]]:
    return [(e.kind, e.partitions) for e in log.events if e.member == member]


def split(members: list[Runner], expected: frozenset[TopicPartition]) -> bool:
    """Every partition owned by exactly one member and every member owning one at least."""
    owned = [m.assignment() for m in members]
    return all(owned) and sum(map(len, owned)) == len(expected) and frozenset().union(*owned) == expected


def stays(predicate: Callable[[], bool], seconds: float, what: str) -> None:
    """Assert ``predicate`` holds throughout ``seconds`` (watched every 20 ms)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        assert predicate(), f"{what} stopped holding"
        time.sleep(0.02)


# --------------------------------------------------------------------------- the coordinator's view


def events(cluster: Any, group: str, kind: str | None = None) -> list[Any]:
    return [e for e in cluster.model_events(group) if kind is None or e.kind == kind]


def coordinator_assignment(cluster: Any, group: str) -> dict[str, frozenset[TopicPartition]]:
    """``{group_instance_id or member_id: partitions}`` as the coordinator model stores them."""

    def read(model: Any) -> Any:
        return model.describe_groups(DescribeGroupsRequest(api_version=5, groups=(group,))).response.groups[0]

    described = cluster.call(read)
    return {
        m.group_instance_id or m.member_id: frozenset(decode_assignment(m.member_assignment).partitions)
        for m in described.members
    }


class ModelSpy:
    """Records every JoinGroup/SyncGroup/LeaveGroup of ``group`` the proxy's model handles,
    with its reply (wraps the model's methods; the proxy looks them up per request)."""

    def __init__(self, cluster: Any, group: str) -> None:
        self.cluster = cluster
        self._calls: list[tuple[str, Any, Any]] = []

        def install(model: Any) -> None:
            for name in ("join_group", "sync_group", "leave_group"):
                original = getattr(model, name)

                def spy(request: Any, _original: Any = original, _name: str = name) -> Any:
                    reply = _original(request)
                    if request.group_id == group:
                        self._calls.append((_name, request, reply))
                    return reply

                setattr(model, name, spy)

        cluster.call(install)

    def calls(self, name: str) -> list[tuple[Any, Any]]:
        """``[(request, response or None while parked)]``, read on the proxy's loop thread."""
        return self.cluster.call(
            lambda _m: [(req, rep.response if rep.done else None) for n, req, rep in self._calls if n == name]
        )


# =========================================================================== 1. restart in time


@where("broker-notes S9a/S9d/S9g: a static rejoin is parked st/2, its SyncGroup 3 s more (at st=6000 it may even "
       "rebalance); the member id is not replaced")
def test_static_restart_within_session_timeout_keeps_partitions_without_a_rebalance(
    cluster, topic_factory, group_id_factory, runners
):
    topic, group, everything, log, boot = new_group(cluster, topic_factory, group_id_factory)
    a, b = static_pair(boot, group, topic, log, runners, everything)  # b leads; a is the follower the scenario is about
    before_a, before_b = a.assignment(), b.assignment()
    generation, old_member_id = a.generation_id(), a.member_id()
    b_seen = len(callbacks(log, "b"))
    mark = len(events(cluster, group)) if is_proxy(cluster) else 0

    a2, took = restart(a, before_a, "the restarted a to get its old partitions", boot, group, topic, log, runners)
    # nothing else happens afterwards either (a rebalance would reach b within a heartbeat)
    stays(lambda: a2.assignment() == before_a and b.assignment() == before_b, 2 * HB / 1000,
          "the assignment after the restart")
    assert callbacks(log, "b")[b_seen:] == [], "b's listener saw the restart"
    assert callbacks(log, "a2") == [("assigned", before_a)]
    assert a2.generation_id() == generation, "the restart changed the generation"
    # Kafka answers a known instance id from its cache at once: the restart costs the client's
    # startup, nowhere near the session timeout
    assert took < ST / 1000 / 2, f"restart to assignment took {took:.1f} s"
    if is_proxy(cluster):
        assert cluster.requests("LeaveGroup") == []
        new = events(cluster, group)[mark:]
        assert [e for e in new if e.kind == "rebalance_started"] == [], new
        replaced = [e for e in new if e.kind == "static_member_replaced"]
        assert len(replaced) == 1, new
        assert replaced[0].member_id == a2.member_id() != old_member_id
        assert "inst-a" in replaced[0].detail and old_member_id in replaced[0].detail
        assert coordinator_assignment(cluster, group) == {"inst-a": before_a, "inst-b": before_b}
    assert not a.errors and not a2.errors and not b.errors, (a.errors, a2.errors, b.errors)


# =========================================================================== 2. restart too late


@pytest.mark.parametrize(
    ("where", "departs"),
    [
        ("proxy", "follower"),
        ("proxy", "leader"),
        ("bare", "follower"),
        pytest.param("bare", "leader", marks=pytest.mark.tansu_deviation(
            "broker-notes S7b/S9c: a departed static leader stays leader, the group wedges and its partitions "
            "stay orphaned")),
    ],
)
def test_static_close_stays_until_session_timeout_and_a_late_restart_rebalances(
    cluster, departs, topic_factory, group_id_factory, runners
):
    """close() with the default policy (static: no LeaveGroup), then back after the session
    timeout. When the departed member led the group, Kafka picks a new leader among the
    members that rejoined (seed 001); Tansu keeps the departed one (S7b)."""
    topic, group, everything, log, boot = new_group(cluster, topic_factory, group_id_factory)
    a = Runner("a", boot, group, topic, log, instance_id="inst-a")
    b = Runner("b", boot, group, topic, log, instance_id="inst-b")
    if departs == "leader":
        form(a, b, runners, everything)
    else:
        form(b, a, runners, everything)
    before_b, a_member_id = b.assignment(), a.member_id()
    b_seen = len(callbacks(log, "b"))

    closed_at = a.stop()  # default: stays
    wait_until(lambda: b.assignment() == everything, ST / 1000 + 15, "b to take a's partitions")
    moved = time.monotonic() - closed_at
    # a's last heartbeat was at most one interval before its close returned
    assert moved >= ST / 1000 - HB / 1000 - 0.5, f"a's partitions moved {moved:.1f} s after close: too early"
    assert any(kind == "assigned" and p == everything for kind, p in callbacks(log, "b")[b_seen:])
    if is_proxy(cluster):
        assert cluster.requests("LeaveGroup") == [], "a static member's close sent LeaveGroup"
        removed = [e for e in events(cluster, group, "member_removed") if e.member_id == a_member_id]
        assert [e.detail for e in removed] == ["session timeout"]
        kinds = [e.kind for e in events(cluster, group)]
        assert "rebalance_started" in kinds[kinds.index("member_removed"):]
    assert before_b != everything

    mark = len(events(cluster, group)) if is_proxy(cluster) else 0
    a2 = Runner("a2", boot, group, topic, log, instance_id="inst-a").start()
    runners.append(a2)
    wait_until(lambda: split([a2, b], everything), FORM_S, "the returning a to get partitions again")
    if is_proxy(cluster):
        new = events(cluster, group)[mark:]
        assert any(e.kind == "member_added" and e.detail == "static inst-a" for e in new), new
        assert any(e.kind == "rebalance_started" for e in new), new
        assert not any(e.kind == "static_member_replaced" for e in new), new
    assert not a.errors and not a2.errors and not b.errors, (a.errors, a2.errors, b.errors)


# =========================================================================== 3. duplicate instance id


@where("broker-notes S9b/S9f: FENCED_INSTANCE_ID is never returned; the duplicate joins as a new member")
def test_duplicate_instance_id_fences_the_first_member_and_never_two_owners(
    cluster, topic_factory, group_id_factory, consumers
):
    topic, group = topic_factory(PARTITIONS), group_id_factory()
    everything, log = all_partitions(topic, PARTITIONS), EventLog()

    def consumer(name: str, instance_id: str) -> kgroup.Consumer:
        c = kgroup.Consumer(
            bootstrap_servers=cluster.bootstrap_servers, group_id=group, group_instance_id=instance_id,
            session_timeout_ms=ST, heartbeat_interval_ms=HB, client_id=name, enable_auto_commit=False,
        )
        consumers.append(c)
        c.subscribe([topic], listener=RecordingListener(name, log, lambda: c))
        return c

    a, b = consumer("a", "orders-7"), consumer("b", "inst-b")
    deadline = time.monotonic() + FORM_S
    while not (a.assignment() and b.assignment() and a.assignment() | b.assignment() == everything):
        assert time.monotonic() < deadline, "a and b did not split the partitions"
        a.poll(50)
        b.poll(50)
    before_a = a.assignment()
    a.commit({tp: 0 for tp in before_a})  # a working member: its commits go through

    a2 = consumer("a2", "orders-7")  # a second process with a's instance id
    fenced: list[tuple[str, kgroup.FencedInstanceIdError]] = []
    commits: list[tuple[float, bool]] = []  # a's commits of its partitions: (when, accepted)
    a2_owner_since: float | None = None
    samples = 0
    deadline = time.monotonic() + 15  # Kafka: within a heartbeat interval of a2's JoinGroup
    while not (fenced and a2.assignment() == before_a):
        assert time.monotonic() < deadline, f"not fenced in time: fenced={fenced} a2={a2.assignment()}"
        a2.poll(50)
        b.poll(50)
        if a2.assignment() and a2_owner_since is None:
            a2_owner_since = time.monotonic()
        if not fenced:
            try:
                a.poll(20)
                if a.assignment():
                    a.commit({tp: 0 for tp in a.assignment()})
                    commits.append((time.monotonic(), True))
            except kgroup.FencedInstanceIdError as exc:
                fenced.append(("poll/commit", exc))
                commits.append((time.monotonic(), False))
        # the members that can still act never overlap, and the coordinator has one plan
        assert not (b.assignment() & a2.assignment())
        assert not (b.assignment() & (a.assignment() if not fenced else frozenset()))
        if is_proxy(cluster):
            plan = coordinator_assignment(cluster, group)
            assert sum(map(len, plan.values())) == len(frozenset().union(*plan.values())), plan
        samples += 1

    error = fenced[0][1]
    assert "orders-7" in str(error), str(error)
    assert error.code == 82
    # a never committed once a2 owned its partitions
    assert a2_owner_since is not None
    accepted_late = [t for t, ok in commits if ok and t >= a2_owner_since]
    assert accepted_late == [], "the fenced member committed while the newcomer owned the partitions"
    # fatal from now on, from poll() and from commit(), and the partitions were reported lost
    with pytest.raises(kgroup.FencedInstanceIdError, match="orders-7"):
        a.poll(10)
    with pytest.raises(kgroup.FencedInstanceIdError, match="orders-7"):
        a.commit({next(iter(before_a)): 1})
    assert a.assignment() == frozenset()
    assert callbacks(log, "a")[-2:] == [("assigned", before_a), ("lost", before_a)]
    assert [k for k, _ in callbacks(log, "a2")] == ["assigned"]
    # the newcomer and b go on: a few more rounds, nobody else fenced, nothing moves
    for _ in range(5):
        a2.poll(50)
        b.poll(50)
    assert a2.assignment() == before_a and b.assignment() == everything - before_a
    if is_proxy(cluster):
        assert coordinator_assignment(cluster, group) == {"orders-7": before_a, "inst-b": everything - before_a}
        assert [e.detail for e in events(cluster, group, "member_removed")] == ["fenced"]


@pytest.mark.broker_kinds("tansu")  # the coordinator proxy's fault injection
def test_fenced_offset_commit_raises_from_commit_names_the_instance_id_and_poisons(
    kafka_cluster, topic_factory, group_id_factory, consumers
):
    """FENCED_INSTANCE_ID first seen by an OffsetCommit (the zombie committing before its next
    heartbeat): commit() raises it, then poll() does, after on_partitions_lost. Proxy only: the
    error is injected (a fault rule), which bare brokers do not offer."""
    topic, group, log = topic_factory(2), group_id_factory(), EventLog()
    c = kgroup.Consumer(
        bootstrap_servers=kafka_cluster.bootstrap_servers, group_id=group, group_instance_id="zombie-0",
        session_timeout_ms=ST, heartbeat_interval_ms=HB, client_id="zombie", enable_auto_commit=False,
    )
    consumers.append(c)
    c.subscribe([topic], listener=RecordingListener("zombie", log, lambda: c))
    wait_until(lambda: c.poll(50) is not None and c.assignment() == all_partitions(topic, 2), FORM_S,
               "the consumer to own both partitions")
    owned = c.assignment()
    kafka_cluster.faults.inject(api="OffsetCommit", error=82, times=1, client_id="zombie")
    with pytest.raises(kgroup.FencedInstanceIdError, match="zombie-0") as raised:
        c.commit({tp: 1 for tp in owned})
    assert raised.value.code == 82
    with pytest.raises(kgroup.FencedInstanceIdError, match="zombie-0"):
        wait_until(lambda: c.poll(50) is None, 10, "poll() to raise")
    assert callbacks(log, "zombie") == [("assigned", owned), ("lost", owned)]
    with pytest.raises(kgroup.FencedInstanceIdError, match="zombie-0"):
        c.commit({tp: 1 for tp in owned})
    heartbeats = len(kafka_cluster.requests("Heartbeat"))
    stays(lambda: len(kafka_cluster.requests("Heartbeat")) == heartbeats, 1.5 * HB / 1000,
          "no group request after the fatal error")
    assert kafka_cluster.requests("LeaveGroup") == []


# =========================================================================== 4. the leader restarts


@where("broker-notes S9a/S9d: no skip_assignment; a static rejoin is parked st/2 and its SyncGroup 3 s more")
def test_static_leader_restart_gets_skip_assignment_and_keeps_every_assignment(
    cluster, topic_factory, group_id_factory, runners
):
    topic, group, everything, log, boot = new_group(cluster, topic_factory, group_id_factory)
    spy = ModelSpy(cluster, group) if is_proxy(cluster) else None
    # the first member becomes the leader (Kafka: the first to join; it stays leader while it rejoins)
    a = Runner("a", boot, group, topic, log, instance_id="leader")
    b = Runner("b", boot, group, topic, log, instance_id="follower")
    form(a, b, runners, everything)
    before_a, before_b, generation = a.assignment(), b.assignment(), a.generation_id()
    b_seen = len(callbacks(log, "b"))
    mark = len(events(cluster, group)) if is_proxy(cluster) else 0
    if spy is not None:
        completed = events(cluster, group, "generation_completed")[-1]
        assert f"leader {a.member_id()}" in completed.detail, completed
        plan_before = coordinator_assignment(cluster, group)
        joins_before, syncs_before = len(spy.calls("join_group")), len(spy.calls("sync_group"))

    a2, took = restart(a, before_a, "the restarted leader to get its partitions", boot, group, topic, log, runners)
    stays(lambda: a2.assignment() == before_a and b.assignment() == before_b, 2 * HB / 1000,
          "the assignment after the leader's restart")
    assert callbacks(log, "b")[b_seen:] == [], "the follower's listener saw the leader restart"
    assert a2.generation_id() == generation
    assert took < ST / 1000 / 2, f"restart to assignment took {took:.1f} s"  # no assignor round, no barrier
    if spy is not None:
        joins = spy.calls("join_group")[joins_before:]
        assert len(joins) == 1, joins  # one JoinGroup: no MEMBER_ID_REQUIRED round for a static member
        request, response = joins[0]
        assert request.api_version == 9
        assert request.member_id == "" and request.group_instance_id == "leader"
        assert response.error_code == 0
        assert response.skip_assignment is True
        assert response.leader == response.member_id == a2.member_id()
        assert response.generation_id == generation
        assert {m.group_instance_id for m in response.members} == {"leader", "follower"}
        syncs = spy.calls("sync_group")[syncs_before:]
        assert [(r.member_id, r.assignments) for r, _ in syncs] == [(a2.member_id(), ())], \
            "the restarted leader sent a new plan"
        assert syncs[0][1].error_code == 0
        assert decode_assignment(syncs[0][1].assignment).partitions == tuple(sorted(before_a))
        new = events(cluster, group)[mark:]
        assert [e.kind for e in new if e.kind in ("rebalance_started", "generation_completed")] == [], new
        assert [e.kind for e in new if e.kind == "static_member_replaced"] == ["static_member_replaced"]
        assert coordinator_assignment(cluster, group) == plan_before
    assert not a.errors and not a2.errors and not b.errors, (a.errors, a2.errors, b.errors)


# =========================================================================== 5. close policies


@where()  # a silent dynamic member expires on Tansu too while the other member heartbeats (S6b)
def test_close_remain_for_a_dynamic_member_sends_no_leave_group(cluster, topic_factory, group_id_factory, runners):
    topic, group, everything, log, boot = new_group(cluster, topic_factory, group_id_factory)
    a = Runner("a", boot, group, topic, log)
    b = Runner("b", boot, group, topic, log)
    form(b, a, runners, everything)  # b leads; a is the follower the scenario is about
    a_member_id = a.member_id()

    closed_at = a.stop("remain")
    wait_until(lambda: b.assignment() == everything, ST / 1000 + 15, "b to take a's partitions")
    moved = time.monotonic() - closed_at
    # LeaveGroup would have moved them at once (seconds on Tansu, ms on Kafka)
    assert moved >= ST / 1000 - HB / 1000 - 0.5, f"moved {moved:.1f} s after close(remain): a left the group"
    assert callbacks(log, "a")[-1][0] == "revoked"  # the close still revoked (and committed)
    if is_proxy(cluster):
        assert cluster.requests("LeaveGroup") == []
        removed = [e for e in events(cluster, group, "member_removed") if e.member_id == a_member_id]
        assert [e.detail for e in removed] == ["session timeout"]
    assert not a.errors and not b.errors, (a.errors, b.errors)


@where("broker-notes S3b: every (re)join is parked session_timeout_ms/2, so nothing moves 'at once'")
def test_close_leave_for_a_static_member_sends_leave_group_with_its_instance_id(
    cluster, topic_factory, group_id_factory, runners
):
    topic, group, everything, log, boot = new_group(cluster, topic_factory, group_id_factory)
    spy = ModelSpy(cluster, group) if is_proxy(cluster) else None
    a, b = static_pair(boot, group, topic, log, runners, everything)  # b leads; a is the follower the scenario is about
    a_member_id = a.member_id()

    a.stop("leave")
    # at once: b hears of the rebalance at its next heartbeat and rejoins alone (no barrier to wait for)
    wait_until(lambda: b.assignment() == everything, ST / 1000 / 2, "b to take a's partitions well before a's "
               "session timeout")
    if spy is not None:
        records = cluster.requests("LeaveGroup")
        assert len(records) == 1 and records[0].api_version >= 3, records
        ((request, response),) = spy.calls("leave_group")
        assert [(m.member_id, m.group_instance_id, m.reason) for m in request.members] == [
            (a_member_id, "inst-a", "a closing")
        ]
        assert response.error_code == 0 and [m.error_code for m in response.members] == [0]
        removed = [e for e in events(cluster, group, "member_removed") if e.member_id == a_member_id]
        assert [e.detail for e in removed] == ["left: a closing"]
        assert coordinator_assignment(cluster, group) == {"inst-b": everything}
    assert not a.errors and not b.errors, (a.errors, b.errors)


# =========================================================================== 6. admin removal


@where("broker-notes S9e: LeaveGroup by group_instance_id alone answers UNKNOWN_MEMBER_ID; the member stays")
def test_leave_group_by_instance_id_removes_the_static_member_and_rebalances(
    cluster, topic_factory, group_id_factory, runners
):
    """What an admin client's removeMembersFromConsumerGroup sends: LeaveGroup v5 with member id
    "" and the instance id (KIP-345). The removed process learns it at its next heartbeat
    (UNKNOWN_MEMBER_ID): its partitions are lost, and it rejoins as a new static member."""
    topic, group, everything, log, boot = new_group(cluster, topic_factory, group_id_factory)
    a, b = static_pair(boot, group, topic, log, runners, everything)  # b leads; a is the follower the scenario is about
    before_a, a_member_id, generation = a.assignment(), a.member_id(), a.generation_id()
    mark = len(events(cluster, group)) if is_proxy(cluster) else 0

    admin = RawClient(boot, client_id="admin")
    try:
        response = admin.request(LEAVE_GROUP, 5, {
            "group_id": group,
            "members": [{"member_id": "", "group_instance_id": "inst-a", "reason": "removed by the operator"}],
        })
    finally:
        admin.close()
    assert response["error_code"] == 0, response
    assert [m["error_code"] for m in response["members"]] == [0], response

    wait_until(lambda: ("lost", before_a) in callbacks(log, "a"), 15, "a to learn it was removed")
    wait_until(lambda: split([a, b], everything) and a.generation_id() > generation, FORM_S,
               "a to rejoin and the group to split again")
    assert a.member_id() != a_member_id
    if is_proxy(cluster):
        new = events(cluster, group)[mark:]
        removed = [e for e in new if e.kind == "member_removed"]
        assert [(e.member_id, e.detail) for e in removed] == [(a_member_id, "left: removed by the operator")]
        kinds = [e.kind for e in new]
        assert kinds.index("rebalance_started") > kinds.index("member_removed"), kinds
        assert any(e.kind == "member_added" and e.detail == "static inst-a" for e in new), new
    assert not a.errors and not b.errors, (a.errors, b.errors)


# =========================================================================== 7. the static watchdog


@where("broker-notes S9a/S9d/S9g: a static rejoin is parked st/2 and its SyncGroup 3 s more; at st=6000 the "
       "static JoinGroup does not refresh liveness, so it may rebalance")
def test_static_poll_watchdog_keeps_partitions_and_rejoins_with_the_same_instance_id(
    cluster, topic_factory, group_id_factory, runners
):
    """docs/protocol.md "Liveness": a static member that misses max_poll_interval_ms sends no
    LeaveGroup and stops heartbeating; the coordinator keeps its partitions for it. Polling
    again before session_timeout_ms rejoins with the same instance id and gets the same
    partitions without a rebalance; its listener gets on_partitions_lost, then
    on_partitions_assigned; the other member sees nothing."""
    topic, group, everything, log, boot = new_group(cluster, topic_factory, group_id_factory)
    max_poll_s = 2.0
    a = Runner("a", boot, group, topic, log, instance_id="inst-a", max_poll_interval_ms=int(max_poll_s * 1000),
               rebalance_timeout_ms=30000)
    b = Runner("b", boot, group, topic, log, instance_id="inst-b")
    form(b, a, runners, everything)
    before_a, before_b, generation = a.assignment(), b.assignment(), a.generation_id()
    a_seen, b_seen = len(callbacks(log, "a")), len(callbacks(log, "b"))
    mark = len(events(cluster, group)) if is_proxy(cluster) else 0

    a.stall.set()
    stalled_at = time.monotonic()
    # the watchdog fires max_poll_interval_ms after the last poll: the generation is dropped
    wait_until(lambda: a.membership_generation() == -1, max_poll_s + 5, "a's poll watchdog to fire")
    fired = time.monotonic() - stalled_at
    assert fired >= max_poll_s - 0.3, f"watchdog fired after {fired:.1f} s"
    if is_proxy(cluster):
        assert cluster.requests("LeaveGroup") == [], "a static member's watchdog sent LeaveGroup"
        assert [e for e in events(cluster, group)[mark:] if e.kind == "member_removed"] == []
    assert b.assignment() == before_b
    assert callbacks(log, "a")[a_seen:] == []  # nothing runs on a's thread while it does not poll

    a.stall.clear()  # well within the session timeout: heartbeats stopped under ~1 s ago
    # the rejoin must complete before the coordinator's session timer (started by the last
    # heartbeat, before the watchdog fired) runs out: Kafka answers from its cache at once
    wait_until(lambda: len(callbacks(log, "a")) >= a_seen + 2 and a.assignment() == before_a, ST / 1000 / 2,
               "a to rejoin with its partitions soon after the stall")
    stays(lambda: a.assignment() == before_a and b.assignment() == before_b, 2 * HB / 1000,
          "the assignment after the rejoin")
    assert callbacks(log, "a")[a_seen:] == [("lost", before_a), ("assigned", before_a)]
    assert callbacks(log, "b")[b_seen:] == [], "b's listener saw a's stall"
    assert a.generation_id() == generation
    if is_proxy(cluster):
        new = events(cluster, group)[mark:]
        assert [e for e in new if e.kind == "rebalance_started"] == [], new
        replaced = [e for e in new if e.kind == "static_member_replaced"]
        assert len(replaced) == 1 and "inst-a" in replaced[0].detail, new
        assert cluster.requests("LeaveGroup") == []
    assert not a.errors and not b.errors, (a.errors, b.errors)


@where("broker-notes S4a/S7a: no join barrier; a member that never rejoins is never left out of a generation")
def test_a_static_member_that_does_not_rejoin_in_time_stays_with_its_old_subscription(
    cluster: Any, where: str, topic_factory: Any, group_id_factory: Any
) -> None:
    """Kafka ends a join phase at the rebalance timeout and removes only the *dynamic* members
    that did not rejoin (``GroupMetadataManager.completeClassicGroupJoin``): a static member stays,
    and the new generation's leader assigns it from its previous JoinGroup's subscription. Its
    late JoinGroup, sent in its old generation, is answered two generations on. This is what
    kgroup's cooperative member acts on (docs/protocol.md, "A static member that missed a
    generation"); the simulator's coordinator model must do the same.

    Raw members (a real client rejoins at the first REBALANCE_IN_PROGRESS): static ``a`` forms
    generation 1 alone and owns every partition, then stops rejoining; dynamic ``b`` joins."""
    topic, group = topic_factory(PARTITIONS), group_id_factory()
    boot = cluster.bootstrap_servers
    everything = tuple(TopicPartition(topic, p) for p in range(PARTITIONS))
    clients: list[RawClient] = []

    def body(member_id: str, instance: str | None, subscription: Subscription) -> dict[str, Any]:
        return {
            "group_id": group, "session_timeout_ms": 30000, "rebalance_timeout_ms": 3000,
            "member_id": member_id, "group_instance_id": instance, "protocol_type": "consumer",
            "protocols": [{"name": "cooperative-sticky", "metadata": encode_subscription(subscription)}],
            "reason": None,
        }

    def sync(client: RawClient, joined: dict[str, Any], instance: str | None,
             plan: dict[str, tuple[TopicPartition, ...]]) -> dict[str, Any]:
        assignments = [{"member_id": m, "assignment": encode_assignment(Assignment(partitions=ps))}
                       for m, ps in plan.items()]
        return client.request(14, 5, {
            "group_id": group, "generation_id": joined["generation_id"], "member_id": joined["member_id"],
            "group_instance_id": instance, "protocol_type": "consumer",
            "protocol_name": joined["protocol_name"], "assignments": assignments,
        }, timeout_s=60)

    def heartbeat(client: RawClient, joined: dict[str, Any], instance: str | None) -> int:
        return client.request(12, 4, {
            "group_id": group, "generation_id": joined["generation_id"], "member_id": joined["member_id"],
            "group_instance_id": instance,
        })["error_code"]

    first = Subscription(topics=(topic,))
    answers: list[dict[str, Any]] = []

    def a_joined() -> bool:
        """FindCoordinator, then a's first JoinGroup, until the coordinator is loaded (a fresh broker
        creates the offsets topic first: COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR)."""
        finder = RawClient(boot, client_id="finder")
        found = finder.request(10, 3, {"key": group, "key_type": 0})
        finder.close()
        answers.append(found)
        if found["error_code"]:
            return False
        client = RawClient((found["host"], found["port"]), client_id="a")
        clients.append(client)
        answers.append(client.request(11, 9, body("", "inst-a", first), timeout_s=60))
        return answers[-1]["error_code"] not in (14, 15, 16)

    try:
        wait_until(a_joined, FORM_S, lambda: f"the coordinator to answer a's JoinGroup: {answers[-1]}", interval_s=0.2)
        a_client, a1 = clients[-1], answers[-1]
        b_client = RawClient(a_client.sock.getpeername()[:2], client_id="b")
        clients.append(b_client)
        assert a1["error_code"] == 0 and a1["leader"] == a1["member_id"], a1
        assert sync(a_client, a1, "inst-a", {a1["member_id"]: everything})["error_code"] == 0
        # b joins: the group rebalances, and a only heartbeats (REBALANCE_IN_PROGRESS meanwhile)
        b1 = b_client.request(11, 9, body("", None, first), timeout_s=60)
        if b1["error_code"] == MEMBER_ID_REQUIRED:
            b1 = b_client.request(11, 9, body(b1["member_id"], None, first), timeout_s=60)
        assert b1["error_code"] == 0, b1
        # the join phase ended at the rebalance timeout without a, and kept it, with the
        # subscription of its first JoinGroup (no owned partitions); b leads
        assert b1["generation_id"] == a1["generation_id"] + 1, (a1, b1)
        assert b1["leader"] == b1["member_id"], b1
        members = {m["member_id"]: m for m in b1["members"]}
        assert set(members) == {a1["member_id"], b1["member_id"]}, b1
        assert members[a1["member_id"]]["group_instance_id"] == "inst-a"
        assert decode_subscription(members[a1["member_id"]]["metadata"]).owned_partitions == ()
        assert sync(b_client, b1, None, {b1["member_id"]: everything, a1["member_id"]: ()})["error_code"] == 0
        # a's generation is over but a is still a member: ILLEGAL_GENERATION, not UNKNOWN_MEMBER_ID
        assert heartbeat(a_client, a1, "inst-a") == 22
        # a joins late, claiming what it owned in generation 1; the answer is generation 3
        late = Subscription(topics=(topic,), owned_partitions=everything, generation_id=a1["generation_id"])
        a_client.send(11, 9, body(a1["member_id"], "inst-a", late))
        # a's JoinGroup starts a rebalance; it travels on another connection, so b's heartbeats
        # may reach the coordinator first (NONE) until it has
        seen: list[int] = []
        wait_until(lambda: seen.append(heartbeat(b_client, b1, None)) or seen[-1] == 27, FORM_S,
                   lambda: f"b's heartbeat to answer REBALANCE_IN_PROGRESS: {seen[-5:]}", interval_s=0.05)
        assert set(seen) <= {0, 27}, seen
        b2 = b_client.request(11, 9, body(b1["member_id"], None, first), timeout_s=60)
        a2 = a_client.recv(60)[1]
        assert a2["error_code"] == 0 and a2["member_id"] == a1["member_id"], a2
        assert a2["generation_id"] == a1["generation_id"] + 2 == b2["generation_id"], (a1, a2, b2)
    finally:
        for client in clients:
            client.close()
