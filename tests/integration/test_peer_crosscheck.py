"""Peer cross-checks: other clients' consumers through kgroup's coordinator proxy.

kafka-python's ``KafkaConsumer`` and confluent-kafka's (librdkafka) ``Consumer``, each in its
own process, form groups through ``kgroup.testing.CoordinatorProxy`` (the ``kafka_cluster``
fixture) in front of the embedded broker. If the proxy's coordinator model behaves as Apache
Kafka's does, these mature clients behave as they do against Kafka. Every scenario here is
one that bare Tansu gets wrong (broker-notes.md row in each docstring).

The scenarios with a ``bare`` variant also run on Apache Kafka's own coordinator
(``[apache-kafka]``), where they must pass; the proxy runs, checks of the model, are Tansu's only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgroup.protocol.consumer_protocol import Subscription, encode_subscription
from tests.integration.groupcheck import ContinuousProducer
from tests.integration.harness import BOTH, wait_until
from tests.integration.peers import Peer as _Peer
from tests.integration.raw_client import RawClient, heartbeat_body, join_body

pytestmark = BOTH

CLIENTS = ["kafka-python", "confluent"]
PARTITIONS = 4
ST = 6000  # Kafka's minimum session timeout


class BareBroker:
    """The broker without the proxy: its own coordinator answers (Tansu's, broker-notes.md, or
    Apache Kafka's)."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap_servers = bootstrap

    def model_events(self, group: str) -> list[object]:
        pytest.fail("a bare broker has no coordinator model to inspect")


def on_bare_tansu_fails(deviation: str):
    """Run a scenario with both peers through the proxy, and with kafka-python on the bare broker,
    where on Apache Kafka it must pass and on Tansu it must fail: its ``[tansu]`` variant is
    deselected, and with ``--tansu-deviations`` the plugin makes it a strict xfail (if Tansu ever
    behaves as Kafka, the suite says so)."""
    return pytest.mark.parametrize(
        ("client", "where"),
        [
            ("kafka-python", "proxy"),
            ("confluent", "proxy"),
            pytest.param(
                "kafka-python",
                "bare",
                marks=[pytest.mark.tansu_deviation(deviation)],
            ),
        ],
    )


@pytest.fixture
def cluster(request, where, kafka_bootstrap):
    """The proxy (Kafka's coordinator semantics) or the bare broker (its own coordinator)."""
    if where == "proxy":
        return request.getfixturevalue("kafka_cluster")
    return BareBroker(kafka_bootstrap)


def is_proxy(cluster) -> bool:
    return not isinstance(cluster, BareBroker)


_logs: dict[str, Path] = {}


@pytest.fixture(autouse=True)
def peer_logs(tmp_path: Path) -> Iterator[None]:
    """Each peer's stderr (its client's coordinator log, stack dumps) goes to ``tmp_path``."""
    _logs["dir"] = tmp_path
    yield
    _logs.clear()


def Peer(client: str, *args: object, name: str | None = None, **kwargs: object) -> _Peer:
    """A peer whose stderr goes to this test's ``tmp_path`` (``history`` shows its tail)."""
    label = name or kwargs.get("instance_id") or client
    return _Peer(client, *args, name=name, log_path=_logs["dir"] / f"{label}.log", **kwargs)


@pytest.fixture
def peers() -> Iterator[list[_Peer]]:
    started: list[_Peer] = []
    yield started
    for peer in started:
        peer.kill()


def all_of(topic: str) -> frozenset[tuple[str, int]]:
    return frozenset((topic, p) for p in range(PARTITIONS))


def split(members: list[_Peer], topic: str) -> bool:
    """Every partition owned by exactly one member, every member owning one at least."""
    owned = [m.owned() for m in members]
    union = frozenset().union(*owned)
    return union == all_of(topic) and sum(map(len, owned)) == PARTITIONS and all(owned)


def one_then_another(peers: list[_Peer], client: str, cluster, group: str, topic: str, strategy: str,
                     split_s: float) -> tuple[_Peer, _Peer]:
    """Peer ``a`` joins and owns every partition, then ``b`` joins and the two split them."""
    boot = cluster.bootstrap_servers
    a = Peer(client, boot, group, topic, strategy=strategy, session_timeout_ms=ST, name="a")
    peers.append(a)
    wait_until(lambda: a.owned() == all_of(topic), 60, "a to own every partition")
    b = Peer(client, boot, group, topic, strategy=strategy, session_timeout_ms=ST, name="b")
    peers.append(b)
    wait_until(lambda: split([a, b], topic), split_s,
               lambda: f"a and b to split the partitions: {a} {b}\n{history(cluster, group, a, b)}")
    return a, b


def history(cluster_or_boot: object, group: str, *members: _Peer) -> str:
    """The members' callbacks and errors (child clock, s) and, through the proxy, the model's
    events for ``group``: what a failed wait shows."""
    lines = []
    for m in members:
        with m._lock:
            events = [e for e in m.events if e["event"] != "records"]
        lines.append(f"{m.name} (exit {m.proc.poll()}):")
        lines += [f"  {e['t']:.3f} {e['event']} {e.get('partitions', e.get('name', ''))}" for e in events]
    if is_proxy(cluster_or_boot):
        lines.append("model:")
        lines += [f"  {e.time_ms} {e.kind} {e.member_id} {e.detail}" for e in cluster_or_boot.model_events(group)]
        lines.append("proxy (the last group requests: connection, api, received, ready, answered, error):")
        group_apis = ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit")
        for r in [r for r in cluster_or_boot.requests() if r.api_name in group_apis][-80:]:
            lines.append(f"  c{r.connection_id} {r.api_name} {r.received_at:.3f} {r.ready_at} {r.answered_at} "
                             f"{r.error_code} {r.fault or ''}")
    for m in members:
        lines.append(f"{m.name}'s log (tail, after a stack dump):")
        lines += [f"  {line}" for line in log_tail(m)]
    return "\n".join(lines)


def log_tail(member: _Peer, lines: int = 120, timeout_s: float = 5.0) -> list[str]:
    """The last ``lines`` of a peer's stderr log, after its threads' stacks (waited for up to
    ``timeout_s``; a dead or stuck child's log is shown as it is)."""
    before = len(member.log_text())
    member.dump_stacks()
    try:
        wait_until(lambda: not member.alive() or "most recent call first" in member.log_text()[before:],
                   timeout_s, f"{member.name}'s stack dump")
    except AssertionError:
        pass
    return member.log_text().splitlines()[-lines:]


def static_pair(peers: list[_Peer], client: str, cluster, group: str, topic: str) -> tuple[_Peer, _Peer]:
    """Static peers ``ia`` and ``ib`` join together and split the partitions."""
    boot = cluster.bootstrap_servers
    a = Peer(client, boot, group, topic, session_timeout_ms=ST, instance_id="ia")
    b = Peer(client, boot, group, topic, session_timeout_ms=ST, instance_id="ib")
    peers += [a, b]
    wait_until(lambda: split([a, b], topic) and quiet_for(QUIET_S, a, b), 60,
               lambda: f"a and b to split the partitions and stay so for {QUIET_S} s: {a} {b}\n"
               f"{history(cluster, group, a, b)}")
    return a, b


#: how long a split must last without a callback before a test disturbs it: a kafka-python leader
#: whose metadata changed since it assigned rejoins at once (ConsumerCoordinator's snapshot check,
#: as Java's), typically when the topic's metadata lands just after the first assignment
QUIET_S = 2.0


def quiet_for(quiet_s: float, *members: _Peer) -> bool:
    """No member has had a callback in the last ``quiet_s`` seconds."""
    last = max((e["t_read"] for m in members for e in m.snapshot() if e["event"] != "records"), default=0.0)
    return time.monotonic() - last >= quiet_s


def removals(cluster, group: str) -> list[object]:
    return [e for e in cluster.model_events(group) if e.kind == "member_removed"]


def generations(cluster, group: str) -> int:
    return len([e for e in cluster.model_events(group) if e.kind == "generation_completed"])


@pytest.mark.broker_kinds("tansu")  # a check of the coordinator model
@pytest.mark.parametrize("client", CLIENTS)
def test_eager_group_forms_splits_and_takes_over_after_a_leave(client, kafka_cluster, topic_factory, group_id_factory,
                                                               peers):
    """broker-notes S3/S4a: on Tansu each join costs st/2 and the barrier is missing."""
    topic, group = topic_factory(PARTITIONS), group_id_factory()
    a, b = one_then_another(peers, client, kafka_cluster, group, topic, "range", split_s=60)
    b.close()
    wait_until(lambda: a.owned() == all_of(topic), 20, lambda: f"a to take every partition back: {a}")
    assert a.errors() == [] or client == "confluent", a.errors()


@pytest.mark.broker_kinds("tansu")  # a check of the coordinator model
@pytest.mark.parametrize("client", CLIENTS)
def test_cooperative_sticky_group_moves_only_what_changes_owner(client, kafka_cluster, topic_factory,
                                                                group_id_factory, peers):
    """broker-notes S12b/S3c: Tansu locks protocol selection and ignores a leader's rejoin, so
    the KIP-429 second round cannot run there."""
    topic, group = topic_factory(PARTITIONS), group_id_factory()
    a, b = one_then_another(peers, client, kafka_cluster, group, topic, "cooperative-sticky", split_s=60)
    # incremental: a gave up only the partitions that moved to b, never everything at once
    revoked = [frozenset(map(tuple, e["partitions"])) for e in a.of("revoked")]
    assert revoked, "a never revoked anything"
    assert all(r != all_of(topic) for r in revoked), revoked
    assert frozenset().union(*revoked) == b.owned()
    # two rounds: the one that revoked from a, then the one that assigned to b
    assert generations(kafka_cluster, group) >= 3


@on_bare_tansu_fails("broker-notes S9a/S9g: a static restart at st=6000 rebalances, the member id is not replaced")
def test_static_member_restart_keeps_its_partitions_without_a_rebalance(client, cluster, topic_factory,
                                                                        group_id_factory, peers):
    """KIP-345; broker-notes S9a/S9g: on Tansu the restart rebalances (and at st=6000 always)."""
    topic, group = topic_factory(PARTITIONS), group_id_factory()
    boot = cluster.bootstrap_servers
    a, b = static_pair(peers, client, cluster, group, topic)
    before_a, before_b = a.owned(), b.owned()
    settled = generations(cluster, group) if is_proxy(cluster) else 0
    b_events = len(b.events)
    a.close()  # a static member sends no LeaveGroup
    a2 = Peer(client, boot, group, topic, session_timeout_ms=ST, instance_id="ia", name="ia-restarted")
    peers.append(a2)
    wait_until(lambda: a2.owned() == before_a, 15, lambda: f"the restarted a to get its old partitions: {a2}")
    assert b.owned() == before_b
    assert [e["event"] for e in b.events[b_events:]] == [], f"b saw callbacks: {b.events[b_events:]}"
    if is_proxy(cluster):
        assert generations(cluster, group) == settled, "the static restart caused a rebalance"
        assert any(e.kind == "static_member_replaced" for e in cluster.model_events(group))


@on_bare_tansu_fails("broker-notes S9b/S9f: FENCED_INSTANCE_ID is never returned; the imposter joins as a new member")
def test_duplicate_instance_id_is_fenced(client, cluster, kafka_bootstrap, topic_factory, group_id_factory, peers):
    """KIP-345 fencing; broker-notes S9b/S9f: Tansu never returns FENCED_INSTANCE_ID.

    The members consume and commit what they consume, as a real application does: kafka-python's
    heartbeat thread logs the FENCED_INSTANCE_ID a heartbeat gets and goes on, and only the next
    OffsetCommit raises it to the application (from ``commit()``; Java's ``poll()`` would raise it
    at once). Either counts as the first being told it was fenced.
    """

    def told_fenced(peer: Peer) -> bool:
        return "FENCED_INSTANCE_ID" in peer.errors() or any(
            e["name"] == "FencedInstanceIdError" for e in peer.of("commit_failed"))

    topic, group = topic_factory(PARTITIONS), group_id_factory()
    boot = cluster.bootstrap_servers
    producer = ContinuousProducer(kafka_bootstrap, topic, PARTITIONS, interval_s=0.2).start()
    try:
        first = Peer(client, boot, group, topic, session_timeout_ms=ST, instance_id="dup", name="first", commit=True)
        peers.append(first)
        wait_until(lambda: first.owned() == all_of(topic), 20, "the first to own every partition")
        second = Peer(client, boot, group, topic, session_timeout_ms=ST, instance_id="dup", name="second",
                      commit=True)
        peers.append(second)
        wait_until(lambda: told_fenced(first), 20, lambda: f"the first to report it was fenced: {first}")
        wait_until(lambda: second.owned() == all_of(topic), 20, lambda: f"the second to own every partition: {second}")
        assert not told_fenced(second)
    finally:
        producer.close()


@on_bare_tansu_fails("broker-notes S9c: a dead static member's partitions stay orphaned at the same generation")
def test_dead_static_members_partitions_move_after_its_session_timeout(client, cluster, topic_factory,
                                                                       group_id_factory, peers):
    """KIP-345; broker-notes S9c: on Tansu a dead static member's partitions are orphaned."""
    topic, group = topic_factory(PARTITIONS), group_id_factory()
    a, b = static_pair(peers, client, cluster, group, topic)
    b.kill()
    killed_at = time.monotonic()
    wait_until(lambda: a.owned() == all_of(topic), ST / 1000 + 30, lambda: f"a to take b's partitions: {a}")
    took = time.monotonic() - killed_at
    # Not at once, as a LeaveGroup would move them: only the session timeout removes b. The
    # timeout runs from b's last heartbeat, which on a loaded machine can be seconds before the
    # kill (its heartbeat thread starved), so the bound leaves half the timeout for that; the
    # proxy's coordinator model names the cause exactly (below).
    assert took >= ST / 2000, f"moved after {took:.1f} s, well before the session timeout"
    if is_proxy(cluster):
        assert any("session timeout" in e.detail for e in removals(cluster, group))


class HeartbeatOnlyMember:
    """A raw member that joins once, then only heartbeats: it never rejoins a rebalance.

    Real clients cannot be made to do this (their poll watchdog leaves the group first), so it
    speaks the protocol itself: JoinGroup v9 with a real Subscription, a follower SyncGroup,
    then a Heartbeat every second until the coordinator answers UNKNOWN_MEMBER_ID.
    """

    def __init__(self, bootstrap: str, group: str, topic: str, rebalance_timeout_ms: int) -> None:
        self.bootstrap, self.group, self.topic = bootstrap, group, topic
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.errors: list[int] = []
        #: what ended the member's thread early (an exception's repr), if anything did
        self.failure: str | None = None
        self.removed = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._member()
        except BaseException as exc:  # shown by the test's wait, which would otherwise just time out
            self.failure = repr(exc)
            raise

    def _member(self) -> None:
        finder = RawClient(self.bootstrap, client_id="laggard")
        found = finder.request(10, 3, {"key": self.group, "key_type": 0})
        finder.close()
        client = RawClient((found["host"], found["port"]), client_id="laggard")
        metadata = encode_subscription(Subscription(topics=(self.topic,)))
        body = {**join_body(self.group, metadata=metadata), "rebalance_timeout_ms": self.rebalance_timeout_ms}
        joined = client.request(11, 9, body, timeout_s=60)
        if joined["error_code"] == 79:
            joined = client.request(11, 9, {**body, "member_id": joined["member_id"]}, timeout_s=60)
        assert joined["error_code"] == 0, joined
        sync_body = {
            "group_id": self.group, "generation_id": joined["generation_id"], "member_id": joined["member_id"],
            "group_instance_id": None, "protocol_type": "consumer", "protocol_name": joined["protocol_name"],
            "assignments": [],
        }
        synced = client.request(14, 5, sync_body, timeout_s=60)
        assert synced["error_code"] == 0, synced
        while not self._stop.wait(1.0):
            code = client.request(12, 4, heartbeat_body(self.group, joined))["error_code"]
            self.errors.append(code)
            if code == 25:  # UNKNOWN_MEMBER_ID: the coordinator removed it
                self.removed.set()
                break
        client.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


@on_bare_tansu_fails("broker-notes S4a/S7a: no join barrier; a member that never rejoins is never removed")
def test_member_that_never_rejoins_is_removed_when_the_rebalance_timeout_ends_the_barrier(
    client, where, cluster, topic_factory, group_id_factory, peers
):
    """Kafka's join barrier (GroupMetadataManager: the join completes at the rebalance timeout
    and dynamic members that did not rejoin are removed).

    a (a peer) leads; the laggard joins and then only heartbeats; c's join starts a rebalance.
    The coordinator must park a's and c's JoinGroup until the rebalance timeout (the largest
    rebalance_timeout_ms of the members: 8 s, a's and c's max.poll.interval.ms), then complete
    without the laggard, whose next heartbeat gets UNKNOWN_MEMBER_ID. a and c split the topic.
    """
    topic, group = topic_factory(PARTITIONS), group_id_factory()
    boot = cluster.bootstrap_servers
    mpi = 8000
    a = Peer(client, boot, group, topic, session_timeout_ms=ST, max_poll_interval_ms=mpi, name="a")
    peers.append(a)
    wait_until(lambda: a.owned() == all_of(topic), 60, "a to own every partition")
    laggard = HeartbeatOnlyMember(boot, group, topic, rebalance_timeout_ms=5000)
    try:
        shared = lambda: len(a.owned()) == PARTITIONS // 2 and bool(laggard.errors)  # noqa: E731
        wait_until(shared, 60, lambda: f"a to share with the laggard: {a}; the laggard's errors {laggard.errors}, "
                   f"failure {laggard.failure}\n{history(cluster, group, a)}")
        c = Peer(client, boot, group, topic, session_timeout_ms=ST, max_poll_interval_ms=mpi, name="c")
        peers.append(c)
        started = time.monotonic()
        wait_until(lambda: split([a, c], topic), mpi / 1000 + 20,
                   lambda: f"a and c to split the partitions: {a} {c}\n{history(cluster, group, a, c)}")
        took = time.monotonic() - started
        assert took >= mpi / 1000 - 2.0, f"the barrier completed after {took:.1f} s, before the rebalance timeout"
        wait_until(laggard.removed.is_set, 10, lambda: f"the laggard to be removed: heartbeats {laggard.errors}")
        if is_proxy(cluster):
            details = [e.detail for e in removals(cluster, group) if e.member_id.startswith("laggard")]
            assert details == ["rebalance timeout"], details
    finally:
        laggard.stop()
