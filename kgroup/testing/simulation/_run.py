"""One simulated run: a scenario drawn from a seed, its members, faults and checks.

A run is fully determined by its seed: the scenario (members, topics, assignors, static or
dynamic, commit modes, timeouts) and every fault and latency come from ``random.Random(seed)``
in a fixed order, time is virtual, and the scheduler draws the order of everything that
happens at one instant from the seed too. ``run_seed(seed)`` twice gives the same trace.

Scenario versions: version 2 (the default) adds, from random generators of their own so that
the version-1 draws do not move, a per-seed turn order among the group threads and application
threads ready at one instant (``Scheduler(tie_order=...)``), explicit-offset commits by the
application (also of partitions it no longer owns, and inside ``on_partitions_lost``: refused
with ``CommitFailedError``, nothing sent) and a fault that delays every answer of the coordinator
into a black hole that follows while fetches go on. Version 1 is the simulator as it was before
those; the regression tests that replay a seed found on it name it. Version 3 adds, from a
generator of its own, a topic that some members subscribe to before it exists and that is
created while the faults run (whoever subscribes to it, the group must assign it), and an
application that hangs for good in processing (the poll watchdog must move its partitions).
"""

from __future__ import annotations

import functools
import logging
import random
from collections.abc import Callable
from typing import Any

import attrs

from kgroup import _error_codes as codes
from kgroup.config import ConsumerConfig
from kgroup.consumer import Consumer
from kgroup.errors import (
    AssignmentError,
    CommitFailedError,
    FatalGroupError,
    GroupThreadCrashed,
    IllegalStateError,
    KGroupError,
    MalformedMetadata,
    ProtocolViolation,
    WakeupError,
)
from kgroup.listener import RebalanceListener
from kgroup.testing.coordinator import ConsumerGroupConfig, CoordinatorConfig
from kgroup.testing.coordinator._consumer_group import GROUP_EPOCH_BUMPED
from kgroup.testing.coordinator._events import MEMBER_REMOVED
from kgroup.testing.simulation._cluster import FaultProfile, SimCluster, topic_id
from kgroup.testing.simulation._invariants import Checker, Violation
from kgroup.testing.simulation._scheduler import Scheduler, SimThread
from kgroup.testing.simulation._transport import SimRuntime, SimTransport
from kgroup.types import ConsumerRecord, Generation, OffsetAndMetadata, TopicPartition

__all__ = ["MemberSpec", "RunResult", "Scenario", "run_scenario", "run_seed", "scenario_for"]

GROUP_ID = "sim-group"
#: the scenario version campaigns run (see the module docstring)
VERSION = 3

#: assignor lists drawn by scenarios: eager, cooperative, and the two-bounce migration's middle
ASSIGNOR_LISTS: tuple[tuple[str, ...], ...] = (
    ("range",),
    ("roundrobin",),
    ("sticky",),
    ("cooperative-sticky",),
    ("cooperative-sticky", "range"),
)
COMMIT_MODES = ("auto", "sync", "async", "mixed")


@attrs.frozen
class MemberSpec:
    """One member process: its name, identity and behaviour."""

    name: str
    static: bool
    assignors: tuple[str, ...]
    commit_mode: str
    poll_timeout_ms: int
    processing_ms: int


@attrs.frozen
class FaultEvent:
    """A fault at virtual time ``at``: kind and its arguments."""

    at: float
    kind: str
    member: int = -1
    arg: float = 0.0


@attrs.frozen
class Scenario:
    """Everything a run does, drawn from its seed."""

    seed: int
    topics: tuple[tuple[str, int], ...]
    members: tuple[MemberSpec, ...]
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    metadata_max_age_ms: int
    rebalance_delay_ms: int
    produce_every_s: float
    fault_end_s: float
    quiet_s: float
    profile: FaultProfile
    faults: tuple[FaultEvent, ...]
    #: "classic", or "consumer": the members run KIP-848 against ConsumerGroupModel, the session
    #: timeout and heartbeat interval are the broker's, ``assignors`` names the server assignor
    group_protocol: str = "classic"
    #: the members take records with ``Consumer.poll_columns()`` instead of ``poll()``
    poll_columns: bool = False
    #: 1: the fixed turn order at one instant, no explicit-offset commits, no slow answers into a
    #: black hole; 2: all three (the module docstring)
    version: int = 1
    #: (version 2) the share of handed-out batches after which the application also commits an
    #: explicit offsets map: its own partitions, or one it no longer owns (which must be refused)
    explicit_commits: float = 0.0
    #: (version 3) a topic (name, partitions) that does not exist when the members subscribe to
    #: it; a ``create_topic`` fault creates it
    later_topic: tuple[str, int] | None = None
    #: (version 3) the indices of the members whose subscription names ``later_topic``
    later_subscribers: tuple[int, ...] = ()


@attrs.define
class RunResult:
    """What a run did and what broke."""

    seed: int
    violations: list[Violation]
    rebalances: int
    faults: int
    trace: list[str]
    records: int
    commits: int
    duplicates: int
    virtual_s: float
    switches: int


#: the server assignor a consumer-protocol member asks for, by the classic assignor list the seed drew
#: (``()``: none, the broker's default)
SERVER_ASSIGNORS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("range",): ("range",),
    ("roundrobin",): (),
    ("sticky",): ("uniform",),
    ("cooperative-sticky",): ("uniform",),
    ("cooperative-sticky", "range"): ("uniform",),
}


def scenario_for(
    seed: int, group_protocol: str = "classic", *, poll_columns: bool = False, version: int = VERSION
) -> Scenario:
    """The scenario of ``seed``: 2 to 4 members, 1 or 2 topics, 2 to 9 timed faults and per-request faults.

    With ``group_protocol="consumer"`` the same draws make a consumer-protocol scenario (KIP-848):
    each member asks for the server assignor :data:`SERVER_ASSIGNORS` maps its assignors to.
    ``version`` 1 is the scenario as the simulator drew it before version 2 (the module docstring).
    """
    scenario = _classic_scenario_for(seed)
    if version >= 2:
        scenario = _version_2(scenario)
    if version >= 3:
        scenario = _version_3(scenario)
    if poll_columns:
        scenario = attrs.evolve(scenario, poll_columns=True)
    if group_protocol == "classic":
        return scenario
    members = tuple(attrs.evolve(m, assignors=SERVER_ASSIGNORS[m.assignors]) for m in scenario.members)
    return attrs.evolve(scenario, members=members, group_protocol=group_protocol)


def _version_2(scenario: Scenario) -> Scenario:
    """Version 2's draws, from a generator of their own: explicit commits and a slow coordinator."""
    rng = random.Random(scenario.seed * 65537 + 3)
    faults = list(scenario.faults)
    if rng.random() < 0.4:
        # answers trail behind for a while, into a black hole that begins meanwhile
        faults.append(FaultEvent(at=rng.uniform(3.0, scenario.fault_end_s), kind="slow_into_black_hole",
                                 arg=rng.random()))
        faults.sort(key=lambda f: f.at)
    return attrs.evolve(
        scenario, version=2, explicit_commits=rng.choice((0.0, 0.05, 0.2)), faults=tuple(faults)
    )


def _version_3(scenario: Scenario) -> Scenario:
    """Version 3's draws, from a generator of their own: a subscribed topic created later."""
    rng = random.Random(scenario.seed * 9973 + 5)
    n_members = len(scenario.members)
    faults = list(scenario.faults)
    if rng.random() < 0.15:
        # one member's application hangs for good: the poll watchdog must move its partitions
        faults.append(FaultEvent(at=rng.uniform(3.0, scenario.fault_end_s), kind="hang",
                                 member=rng.randrange(n_members)))
    later: tuple[str, int] | None = None
    subscribers: tuple[int, ...] = ()
    if rng.random() < 0.3:
        subscribers = tuple(sorted(rng.sample(range(n_members), rng.randint(1, n_members))))
        later = (f"t{len(scenario.topics)}", rng.randint(1, 4))
        faults.append(FaultEvent(at=rng.uniform(3.0, scenario.fault_end_s), kind="create_topic"))
    faults.sort(key=lambda f: f.at)
    return attrs.evolve(
        scenario, version=3, later_topic=later, later_subscribers=subscribers, faults=tuple(faults)
    )


def _as_records(fetched: list[Any]) -> list[ConsumerRecord]:
    """``Consumer.poll_columns()``'s columns as the records ``poll()`` would have returned (for the checker)."""
    out: list[ConsumerRecord] = []
    for columns in fetched:
        tp = columns.topic_partition
        out += [
            ConsumerRecord(tp.topic, tp.partition, offset, key, value, headers, timestamp, timestamp_type, None)
            for offset, key, value, headers, timestamp, timestamp_type in zip(
                columns.offsets, columns.keys, columns.values, columns.headers, columns.timestamps,
                columns.timestamp_types, strict=True,
            )
        ]
    return out


def _classic_scenario_for(seed: int) -> Scenario:
    rng = random.Random(seed)
    n_topics = rng.choice((1, 1, 2))
    topics = tuple((f"t{i}", rng.randint(2, 6)) for i in range(n_topics))
    n_members = rng.randint(2, 4)
    protocol = rng.choice(ASSIGNOR_LISTS)
    # the online eager -> cooperative migration's middle step: some members still on range only
    migrate = protocol == ("cooperative-sticky", "range") and rng.random() < 0.5
    members = []
    for i in range(n_members):
        assignors = ("range",) if migrate and i % 2 == 1 else protocol
        members.append(
            MemberSpec(
                name=f"m{i}",
                static=rng.random() < 0.3,
                assignors=assignors,
                commit_mode=rng.choice(COMMIT_MODES),
                poll_timeout_ms=rng.choice((50, 100, 500, 1000)),
                processing_ms=rng.choice((0, 5, 20, 100)),
            )
        )
    session = rng.choice((6000, 10000))
    heartbeat = rng.choice((1000, 2000))
    max_poll = rng.choice((8000, 15000, 30000))
    metadata_max_age = rng.choice((3000, 10000))
    fault_end = rng.uniform(12.0, 25.0)
    profile = FaultProfile(
        error=rng.choice((0.0, 0.01, 0.03, 0.08)),
        fatal=rng.choice((0.0, 0.0, 0.0, 0.002)),
        drop=rng.choice((0.0, 0.0, 0.005, 0.02)),
        delay=rng.choice((0.0, 0.02, 0.1)),
        max_delay_s=rng.choice((0.2, 1.0, 3.0)),
    )
    kinds = (
        "crash", "restart", "close", "slow", "zombie", "move", "coordinator_restart", "black_hole",
        "disconnect", "subscribe", "add_partitions", "wakeup", "commit_burst", "delete_topic",
    )
    faults = []
    for _ in range(rng.randint(2, 8)):
        faults.append(
            FaultEvent(
                at=rng.uniform(3.0, fault_end),
                kind=rng.choice(kinds),
                member=rng.randrange(n_members),
                arg=rng.random(),
            )
        )
    faults.sort(key=lambda f: f.at)
    return Scenario(
        seed=seed,
        topics=topics,
        members=tuple(members),
        session_timeout_ms=session,
        heartbeat_interval_ms=heartbeat,
        max_poll_interval_ms=max_poll,
        metadata_max_age_ms=metadata_max_age,
        rebalance_delay_ms=rng.choice((0, 0, 3000)),
        produce_every_s=rng.choice((0.02, 0.05, 0.2)),
        fault_end_s=fault_end,
        quiet_s=liveness_bound_s(session, max_poll, metadata_max_age),
        profile=profile,
        faults=tuple(faults),
    )


def liveness_bound_s(session_timeout_ms: int, max_poll_interval_ms: int, metadata_max_age_ms: int) -> float:
    """How long after the faults stop every partition must be owned and consumed again.

    A member stopped or fenced is noticed within one session timeout; the rebalance that
    follows waits at most one rebalance timeout (``max_poll_interval_ms``) for slow members,
    plus Kafka's initial delay (3 s) for an empty group; added partitions are seen within
    ``metadata_max_age_ms``; 10 s more cover the retries' backoff.
    """
    return (
        2 * session_timeout_ms / 1000 + max_poll_interval_ms / 1000 + metadata_max_age_ms / 1000 + 3.0 + 10.0
    )


class _Listener(RebalanceListener):
    """Records ownership changes; commits on revoke in the manual commit modes (Java's pattern)."""

    def __init__(self, incarnation: _Incarnation) -> None:
        self._inc = incarnation

    def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        inc = self._inc
        inc.trace(f"revoked {sorted(map(str, partitions))}")
        if inc.spec.commit_mode != "auto" and partitions:
            inc.commit_sync(owned_only=True)
        inc.released |= partitions

    def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        self._inc.trace(f"assigned {sorted(map(str, partitions))}")
        self._inc.released -= partitions

    def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        inc = self._inc
        inc.trace(f"lost {sorted(map(str, partitions))}")
        inc.sim.checker.excuse(inc.name, frozenset(partitions), "lost")
        inc.released |= partitions
        if partitions and inc.sim.scenario.version >= 2 and inc.sim.app_rng.random() < 0.5:
            inc.commit_not_owned(frozenset(partitions), "inside on_partitions_lost")


def _protocol_settings(scenario: Scenario, spec: MemberSpec) -> dict[str, Any]:
    """The settings the group protocol owns (under "consumer", Java's rules forbid the classic ones)."""
    if scenario.group_protocol == "consumer":
        return {"group_protocol": "consumer", "group_remote_assignor": spec.assignors[0] if spec.assignors else None}
    return {
        "session_timeout_ms": scenario.session_timeout_ms,
        "heartbeat_interval_ms": scenario.heartbeat_interval_ms,
        "assignors": spec.assignors,
    }


#: errors ``poll()`` raises only when kgroup breaks its own rules (the machine saw an event its
#: state does not take, the leader's plan moved a partition its owner had not revoked, ...):
#: reported as violations (version 2)
_CLIENT_ERRORS = (ProtocolViolation, AssignmentError, IllegalStateError, MalformedMetadata)


class _Incarnation:
    """One process of a member: a Consumer, its transport, runtime and application thread."""

    def __init__(self, sim: Simulation, spec: MemberSpec, number: int) -> None:
        self.sim = sim
        self.spec = spec
        self.name = f"{spec.name}#{number}"
        self.transport = SimTransport(sim.cluster, self.name, spec.name)
        self.runtime = SimRuntime(sim.scheduler)
        scenario = sim.scenario
        config = ConsumerConfig(
            bootstrap_servers="sim:9092",
            group_id=GROUP_ID,
            client_id=spec.name,
            group_instance_id=spec.name if spec.static else None,
            **_protocol_settings(scenario, spec),
            max_poll_interval_ms=scenario.max_poll_interval_ms,
            metadata_max_age_ms=scenario.metadata_max_age_ms,
            request_timeout_ms=5000,
            default_api_timeout_ms=10000,
            enable_auto_commit=spec.commit_mode == "auto",
            auto_commit_interval_ms=1000,
            auto_offset_reset="earliest",
            max_poll_records=50,
        )
        self.consumer = Consumer(config, transport=self.transport, clock=sim.cluster.clock, _runtime=self.runtime)
        self.consumer._rng.seed(sim.rng.random())
        self.transport.fetcher().mailbox = self.consumer._mailbox
        self.stopping = False
        self.stop_timeout_ms = 10000
        self.slow_until = 0.0
        self.wake_at: list[float] = []
        self.pending_topics: tuple[str, ...] | None = None
        self.burst = 0
        self.step_time = 0.0
        self.alive = True
        #: stuck in processing for good (a "hang" fault): only its group thread runs
        self.hung = False
        self.started_at = sim.scheduler.now
        self.previous_subscription: frozenset[str] | None = None
        self.generation_at_start: int | None = None
        #: partitions this process was revoked or lost and not given back since
        self.released: frozenset[TopicPartition] = frozenset()
        self.transport.on_commit_sent = self._commit_sent
        self.thread: SimThread = sim.scheduler.spawn(self.name, self._app)
        sim.trace(f"{self.name}: started ({'static' if spec.static else 'dynamic'}, {spec.assignors}, "
                  f"{spec.commit_mode} commits)")

    def trace(self, line: str) -> None:
        self.sim.trace(f"{self.name}: {line}")

    # ------------------------------------------------------------------ the application
    def _instrument(self) -> None:
        """Time the rebalance steps poll() runs (they are not bounded by its timeout)."""
        consumer = self.consumer
        run_step = consumer._run_step
        clock = self.sim.cluster.clock

        def timed(step: Any) -> None:
            start = clock.monotonic()
            try:
                run_step(step)
            finally:
                self.step_time += clock.monotonic() - start

        consumer._run_step = timed  # type: ignore[method-assign]
        offsets = consumer._offsets
        assert offsets is not None
        commit_sync = offsets.commit_sync
        commit_async = offsets.commit_async

        def checked_sync(*args: Any, **kwargs: Any) -> None:
            try:
                commit_sync(*args, **kwargs)
            except BaseException:
                self.sim.checker.excuse(self.name, None)
                raise

        def checked_async(*args: Any, **kwargs: Any) -> Any:
            future = commit_async(*args, **kwargs)
            def excuse_a_failure(f: Any) -> None:
                if f.exception() is not None:
                    self.sim.checker.excuse(self.name, None)

            future.add_done_callback(excuse_a_failure)
            return future

        offsets.commit_sync = checked_sync  # type: ignore[method-assign]
        offsets.commit_async = checked_async  # type: ignore[method-assign]

    def _bounded(self, what: str, started: float, timeout_ms: int, extra: float = 0.0) -> None:
        elapsed = self.sim.scheduler.now - started
        if elapsed > timeout_ms / 1000 + extra + 0.1:
            self.sim.checker.fail(
                "call overran its timeout", f"{self.name}: {what} took {elapsed:.3f} s (timeout {timeout_ms} ms)"
            )

    def _commit_sent(self, generation: Generation, partitions: frozenset[TopicPartition]) -> None:
        """An OffsetCommit leaves this member: never for partitions it does not own, never without a generation."""
        not_owned = self.transport.forbidden & partitions
        if not_owned:
            self.sim.checker.fail(
                "commit for a partition not owned was sent",
                f"{self.name} sent an OffsetCommit for {sorted(map(str, not_owned))}, which it does not own "
                "(kgroup must refuse it with CommitFailedError and write nothing)",
            )
        if not generation.is_valid() and self.sim.scenario.version >= 2:
            # a subscribed member commits only in a generation (Java: CommitFailedException, or
            # RebalanceInProgressException while it rejoins): its partitions are lost by then
            self.sim.checker.fail(
                "commit sent without a generation",
                f"{self.name} sent an OffsetCommit for {sorted(map(str, partitions))} with generation "
                f"{generation.generation_id} (member {generation.member_id!r})",
            )

    def _explicit_offsets(self, partitions: frozenset[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata]:
        """The position after this process's last hand-out of each partition (as an application tracks it)."""
        checker = self.sim.checker
        return {tp: OffsetAndMetadata(checker.handed_next(self.name, tp)) for tp in sorted(partitions)}

    def commit_explicit(self, records: list[ConsumerRecord]) -> None:
        """Commit the offset after each owned partition's last record in ``records`` (an offsets map)."""
        owned = self.consumer.assignment()
        offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        for record in records:
            tp = TopicPartition(record.topic, record.partition)
            if tp in owned:
                offsets[tp] = OffsetAndMetadata(record.offset + 1)
        if not offsets:
            return
        if self.sim.app_rng.random() < 0.5:
            self.trace(f"commit_async(offsets) {sorted(map(str, offsets))}")
            self.consumer.commit_async(offsets)
            return
        self.trace(f"commit(offsets) {sorted(map(str, offsets))}")
        started = self.sim.scheduler.now
        try:
            self.consumer.commit(offsets, timeout_ms=5000)
        except WakeupError:
            pass
        except KGroupError as exc:
            self.trace(f"commit(offsets) failed: {type(exc).__name__}")
        self._bounded("commit(offsets, timeout_ms=5000)", started, 5000)

    def commit_not_owned(self, partitions: frozenset[TopicPartition], where: str) -> None:
        """Commit partitions this process does not own: kgroup must raise CommitFailedError and send nothing.

        Java's rule for a member that lost or gave up partitions: they may be another member's by
        now (``CommitFailedException``). A consumer that failed for good raises its fatal error.
        """
        offsets = self._explicit_offsets(partitions)
        use_async = self.sim.app_rng.random() < 0.5
        self.trace(f"{'commit_async' if use_async else 'commit'}(offsets) of {sorted(map(str, offsets))}, "
                   f"not owned ({where})")
        self.transport.forbidden = frozenset(offsets)
        error: BaseException | None = None
        try:
            if use_async:
                future = self.consumer.commit_async(offsets)
                error = future.exception(timeout=0) if future.done() else None
                if not future.done():
                    error = AssertionError("the future is pending: the commit was sent")
            else:
                self.consumer.commit(offsets, timeout_ms=5000)
        except KGroupError as exc:
            error = exc
        finally:
            self.transport.forbidden = frozenset()
        if isinstance(error, CommitFailedError) or (
            self.consumer._fatal is not None and isinstance(error, (FatalGroupError, GroupThreadCrashed))
        ):
            return
        self.sim.checker.fail(
            "commit for a partition not owned was not refused",
            f"{self.name} committed {sorted(map(str, offsets))} ({where}): "
            f"{'no error' if error is None else repr(error)} instead of CommitFailedError",
        )

    def commit_sync(self, *, owned_only: bool = False) -> None:
        started = self.sim.scheduler.now
        try:
            self.consumer.commit(timeout_ms=5000)
        except WakeupError:
            pass
        except KGroupError as exc:
            self.trace(f"commit failed: {type(exc).__name__}")
        self._bounded("commit(timeout_ms=5000)", started, 5000)

    def _app(self) -> None:
        sim = self.sim
        topics = tuple(t for t, _ in sim.scenario.topics)
        later = sim.scenario.later_topic
        if later is not None and sim.scenario.members.index(self.spec) in sim.scenario.later_subscribers:
            topics += (later[0],)  # a topic that may not exist yet
        consumer = self.consumer
        consumer.subscribe(topics, listener=_Listener(self))
        self._instrument()
        try:
            self._loop(consumer, topics)
        finally:
            self.alive = False

    def _loop(self, consumer: Consumer, topics: tuple[str, ...]) -> None:
        sim = self.sim
        clock = sim.cluster.clock
        while not self.stopping:
            if self.pending_topics is not None:
                topics, self.pending_topics = self.pending_topics, None
                consumer.subscribe(topics)
                self.trace(f"subscribed to {topics}")
            now = sim.scheduler.now
            if self.slow_until > now:
                clock.sleep(self.slow_until - now)  # a stuck process: no poll() meanwhile
                continue
            started, self.step_time = now, 0.0
            timeout = self.spec.poll_timeout_ms
            try:
                if sim.scenario.poll_columns:
                    records = _as_records(consumer.poll_columns(timeout))
                else:
                    records = consumer.poll(timeout)
            except WakeupError:
                records = []
            except (FatalGroupError, GroupThreadCrashed) as exc:
                self.trace(f"fatal: {exc!r}")
                sim.checker.excuse(self.name, None, "crash")
                if sim.scenario.group_protocol == "consumer":
                    # a supervisor restarts the process (UNRELEASED_INSTANCE_ID is fatal until the
                    # previous process's session has run out)
                    index = sim.scenario.members.index(self.spec)
                    sim.scheduler.call_later(1.0, lambda i=index: sim._restart(i))  # type: ignore[misc]
                break
            except KGroupError as exc:
                self.trace(f"poll raised {type(exc).__name__}: {exc}")
                if sim.scenario.version >= 2 and isinstance(exc, _CLIENT_ERRORS):
                    # kgroup caught itself, or the leader refused its own plan: a defect, never a fault
                    sim.checker.fail("client error", f"{self.name}: poll() raised {type(exc).__name__}: {exc}")
                records = []
                if sim.scheduler.now == started:
                    clock.sleep(0.01)  # an application loop retrying a failed poll()
            self._bounded(f"poll({timeout})", started, timeout, self.step_time)
            if records:
                self._process(records)
        if self.hung:
            # it hung inside the poll() its stop found it in: it never gets to close(), whose
            # commit would take the positions past what it returned but never processed
            self.trace("hung: never gets to close()")
            clock.sleep(self.slow_until - sim.scheduler.now)
            return
        self._close()

    def _process(self, records: list[ConsumerRecord]) -> None:
        sim = self.sim
        if self.hung:
            return  # it hung inside the poll() that returned them: they never reach the application
        sim.check_revoked_first(self, records)
        sim.checker.handed_out(self.name, records)
        thread = self.consumer._group_thread
        if thread is not None:
            member_id = thread.snapshot.generation.member_id
            removed = sim.removed(member_id) if member_id else None
            if (
                removed is not None
                and removed[1] == "session timeout"
                and not sim.told_since(self.name, removed[0])
                and thread.consumer_session_timeout_ms is None
            ):
                # the consumer protocol, a member whose DescribeConfigs failed: without the group's
                # session timeout it has no session timer, and only a heartbeat answer can tell it it
                # was removed; until one comes, it hands out as Java's client does, a zombie whose
                # duplicates its loss explains (docs/simulation.md)
                self.trace(f"zombie hand-out: removed at {removed[0]:.3f} ({removed[1]}), not told yet, "
                           "session timeout unknown")
            elif removed is not None:
                # the coordinator gave this member's partitions away: a zombie hand-out
                parts = sorted({f"{r.topic}-{r.partition}" for r in records})
                sim.checker.fail(
                    "hand-out after removal",
                    f"{self.name} ({member_id}) handed out {len(records)} records of {parts}; the "
                    f"coordinator removed it at {removed[0]:.3f} ({removed[1]})",
                )
        if self.spec.processing_ms:
            sim.cluster.clock.sleep(self.spec.processing_ms / 1000)
        mode = self.spec.commit_mode
        if mode == "mixed":
            mode = sim.rng.choice(("sync", "async", "none"))
        if self.burst:
            for _ in range(self.burst):
                self.consumer.commit_async()
            self.burst = 0
        if mode == "sync":
            self.commit_sync()
        elif mode == "async":
            self.consumer.commit_async()
        if sim.scenario.explicit_commits and sim.app_rng.random() < sim.scenario.explicit_commits:
            stale = self.released - self.consumer.assignment()
            if stale and sim.app_rng.random() < 0.4:
                self.commit_not_owned(frozenset(sim.app_rng.sample(sorted(stale), 1)), "no longer owned")
            else:
                self.commit_explicit(records)

    def _close(self) -> None:
        started, self.step_time = self.sim.scheduler.now, 0.0
        timeout = self.stop_timeout_ms
        try:
            self.consumer.close(timeout)
        except KGroupError as exc:
            self.trace(f"close raised {exc!r}")
            self.sim.checker.excuse(self.name, None)
        else:
            if self.sim.scheduler.now - started >= timeout / 1000 - 1e-6:  # (virtual time is a float)
                # close() gave up at its deadline (it logs a warning and returns, as Java's):
                # the final commit may not have been made, so the next owner re-reads from the
                # last commit that was (at-least-once, not a defect)
                self.trace("close gave up at its timeout")
                self.sim.checker.excuse(self.name, None)
        # the revoke callback is user code: close's timeout bounds kgroup's waits, not it (Java)
        self._bounded(f"close({timeout})", started, timeout, self.step_time)
        self.alive = False
        self.trace("closed")

    # ------------------------------------------------------------------ faults
    def hang(self) -> None:
        """The application thread never comes back from processing (a hung process).

        Its group thread goes on: the ``max_poll_interval_ms`` watchdog must take the member out
        of the group (LeaveGroup, or for a static member no more heartbeats until the session
        timeout removes it) so that its partitions move. To the checks it is as good as dead.
        """
        self.trace("hung: stuck in processing for good")
        self.hung = True
        self.slow_until = 1e9
        self.sim.checker.excuse(self.name, None, "hang")

    def crash(self) -> None:
        """Kill the process like kill -9: it stops where it is; its connections close."""
        self.trace("crashed")
        self.alive = False
        self.sim.checker.excuse(self.name, None, "crash")
        self.sim.scheduler.kill(self.thread)
        self.runtime.stopped = True
        self.transport.dead = True
        self.transport.disconnect("process crashed")


class Simulation:
    """A group of simulated members on a simulated cluster, as one scenario says."""

    def __init__(self, scenario: Scenario, *, trace_limit: int = 4000) -> None:
        self.scenario = scenario
        self.rng = random.Random(scenario.seed * 7919 + 1)
        tie_order = random.Random(scenario.seed * 7717 + 11) if scenario.version >= 2 else None
        self.scheduler = Scheduler(tie_order=tie_order)
        #: the application's own choices (version 2): explicit commits, sync or async
        self.app_rng = random.Random(scenario.seed * 7727 + 29)
        self.lines: list[str] = []
        self._trace_limit = trace_limit
        self.checker = Checker(lambda: self.scheduler.now)
        self.cluster = SimCluster(
            self.scheduler,
            self.rng,
            dict(scenario.topics),
            CoordinatorConfig(group_initial_rebalance_delay_ms=scenario.rebalance_delay_ms),
            self.trace,
            consumer_group_config=ConsumerGroupConfig(
                session_timeout_ms=scenario.session_timeout_ms, heartbeat_interval_ms=scenario.heartbeat_interval_ms
            ) if scenario.group_protocol == "consumer" else None,
        )
        self._consumer = scenario.group_protocol == "consumer"
        # DescribeConfigs (the consumer protocol's session timeout) draws from its own generator, so
        # the rest of a run draws as it did before members asked: one scenario in ten denies it
        # (no DESCRIBE_CONFIGS permission: the members run without a session timer, as Java's),
        # and while faults are on some requests go unanswered
        self.cluster.config_rng = random.Random(scenario.seed * 104729 + 17)
        if self._consumer and self.cluster.config_rng.random() < 0.1:
            self.cluster.describe_configs_error = codes.GROUP_AUTHORIZATION_FAILED
        self.cluster.describe_configs_loss = 0.05
        #: member id -> the partitions of its last assignment (consumer protocol)
        self._last_assignment: dict[str, frozenset[TopicPartition]] = {}
        #: incarnation -> when it last received a ConsumerGroupHeartbeat answer that told it where it stands
        self._answered_at: dict[str, float] = {}
        self.cluster.on_heartbeat = self._heartbeat_answered
        self.cluster.faults = attrs.evolve(scenario.profile, enabled=True)
        self.cluster.on_commit = lambda owner, req, resp: self.checker.committed(req, resp, owner)
        self.cluster.on_sync = lambda owner, gen, mid, assignment: self.checker.synced(gen, mid, assignment)
        self.incarnations: dict[int, _Incarnation] = {}
        self._numbers: dict[int, int] = {}
        self._settled = False
        self._added_at: dict[TopicPartition, float] = {}
        #: member ids the coordinator removed (session or rebalance timeout, fenced, left): when, why
        self._removed: dict[str, tuple[float, str]] = {}
        self._events_read = 0

    def told_since(self, owner: str, at: float) -> bool:
        """Whether incarnation ``owner`` received a heartbeat answer after ``at`` (always, under classic)."""
        return not self._consumer or self._answered_at.get(owner, -1.0) > at

    def _heartbeat_answered(self, owner: str, request: Any, response: Any) -> None:
        """A member received a ConsumerGroupHeartbeat answer: what it is assigned at which epoch."""
        if response.error_code in (0, codes.FENCED_MEMBER_EPOCH, codes.UNKNOWN_MEMBER_ID):
            self._answered_at[owner] = self.scheduler.now  # an answer that tells the member where it stands
        if response.error_code != 0 or response.member_epoch <= 0:
            return
        member_id = request.member_id
        if response.assignment is not None:
            names = {topic_id(t): t for t in self.cluster.topics}
            self._last_assignment[member_id] = frozenset(
                TopicPartition(names[t.topic_id], p) for t in response.assignment if t.topic_id in names
                for p in t.partitions
            )
        parts = self._last_assignment.get(member_id, frozenset())
        self.checker.assigned(response.member_epoch, member_id, parts)

    def _consumer_members(self) -> dict[str, tuple[int, str, Any]] | None:
        """The consumer-protocol group's members at the model (None: a classic scenario)."""
        if not self._consumer:
            return None
        return dict(self.cluster.consumer_model.members(GROUP_ID))

    def removed(self, member_id: str) -> tuple[float, str] | None:
        """When and why the coordinator removed ``member_id`` from the group (None: it did not)."""
        if self._consumer:
            return self._consumer_removed(member_id)
        events = self.cluster.model.events
        for event in events[self._events_read:]:
            if event.kind == MEMBER_REMOVED and event.group_id == GROUP_ID:
                self._removed.setdefault(event.member_id, (event.time_ms / 1000, event.detail))
        self._events_read = len(events)
        removed = self._removed.get(member_id)
        group = self.cluster.model._groups.get(GROUP_ID)
        if removed is not None and group is not None and member_id in group.members:
            return None  # a coordinator restart reloaded the group as last written, with it
        return removed

    def _consumer_removed(self, member_id: str) -> tuple[float, str] | None:
        events = self.cluster.consumer_model.events
        for event in events[self._events_read:]:
            if event.kind == MEMBER_REMOVED and event.group_id == GROUP_ID:
                self._removed[event.member_id] = (event.time_ms / 1000, event.detail)
        self._events_read = len(events)
        members = self._consumer_members() or {}
        return None if member_id in members else self._removed.get(member_id)

    def trace(self, line: str) -> None:
        """Add a line to the run's trace (virtual time first)."""
        if len(self.lines) < self._trace_limit:
            self.lines.append(f"{self.scheduler.now:9.3f} {line}")

    def _start(self, index: int) -> _Incarnation:
        number = self._numbers.get(index, 0) + 1
        self._numbers[index] = number
        before = self.incarnations.get(index)
        inc = self._incarnation(self.scenario.members[index], number)
        if before is not None and inc.spec.static:
            # What the previous process of this static member last subscribed to, and the
            # group's generation when this one started (see _static_subscription_gap).
            inc.previous_subscription = frozenset(before.consumer.subscription())
            group = self.cluster.model._groups.get(GROUP_ID)
            inc.generation_at_start = group.generation_id if group is not None else None
        self.incarnations[index] = inc
        return inc

    def _incarnation(self, spec: MemberSpec, number: int) -> _Incarnation:
        """A new process of member ``spec`` (``kgroup.testing.simulation._parallel`` runs its own)."""
        return _Incarnation(self, spec, number)

    def _live(self) -> list[_Incarnation]:
        return [inc for inc in self.incarnations.values() if inc.alive and not inc.hung]

    # ------------------------------------------------------------------ workload
    def _produce(self) -> None:
        if self.scheduler.now >= self.scenario.fault_end_s:
            return
        tps = sorted(self.cluster.log_end)
        self.cluster.produce(self.rng.choice(tps), self.rng.randint(1, 5))
        self.scheduler.call_later(self.scenario.produce_every_s, self._produce)

    def _fault(self, fault: FaultEvent) -> None:
        index = fault.member
        inc = self.incarnations.get(index)
        kind = fault.kind
        cluster = self.cluster
        self.trace(f"FAULT {kind} member={index} arg={fault.arg:.2f}")
        if kind == "crash" and inc is not None and inc.alive:
            inc.crash()
            if fault.arg < 0.7:  # restart after a while (a static member within its session or not)
                delay = fault.arg * self.scenario.session_timeout_ms / 1000 * 2
                self.scheduler.call_later(delay, lambda: self._restart(index))
        elif kind == "restart" and inc is not None and inc.alive:
            inc.crash()
            self._restart(index)
        elif kind == "close" and inc is not None and inc.alive:
            inc.stopping = True
            inc.stop_timeout_ms = int(500 + fault.arg * 10000)
            self.scheduler.call_later(1.0 + fault.arg * 5, lambda: self._restart(index))
        elif kind == "slow" and inc is not None and inc.alive and not inc.hung:
            inc.slow_until = self.scheduler.now + fault.arg * 3.0  # within max_poll_interval
        elif kind == "zombie" and inc is not None and inc.alive and not inc.hung:
            # stuck past max.poll.interval.ms (and, with its heartbeats, past nothing else)
            inc.slow_until = self.scheduler.now + self.scenario.max_poll_interval_ms / 1000 + 1 + fault.arg * 5
        elif kind == "move":
            cluster.move_coordinator(int(fault.arg * 3000))
        elif kind == "coordinator_restart":
            cluster.restart_coordinator(int(fault.arg * 3000))
        elif kind == "black_hole":
            cluster.black_hole_until = self.scheduler.now + 1 + fault.arg * 8
        elif kind == "slow_into_black_hole":
            # every answer trails by up to 0.5-3 s for 2-6 s; 0.3-2 s in, the coordinator goes
            # silent for 1-7 s: answers sent before arrive in the black hole; fetches go on
            now = self.scheduler.now
            cluster.slow_answers_until = now + 2 + fault.arg * 4
            cluster.slow_answers_s = 0.5 + fault.arg * 2.5
            start = now + 0.3 + fault.arg * 1.7

            def black_hole(until: float = start + 1 + fault.arg * 6) -> None:
                cluster.black_hole_until = max(cluster.black_hole_until, until)

            self.scheduler.call_at(start, black_hole)
        elif kind == "disconnect" and inc is not None:
            inc.transport.disconnect("connection reset (fault)")
        elif kind == "subscribe" and inc is not None and inc.alive and len(self.scenario.topics) > 1:
            all_topics = tuple(t for t, _ in self.scenario.topics)
            inc.pending_topics = all_topics[:1] if fault.arg < 0.5 else all_topics
        elif kind == "add_partitions":
            if not self._leader_alive():
                # a static leader away (closed without leaving, or crashed) comes back with
                # skip_assignment (KIP-814) and takes the metadata of that moment as its snapshot,
                # as Java's onLeaderElected does: partitions added meanwhile wait for the next
                # rebalance. That is Java's behaviour too, so the run does not add them then.
                self.trace("add_partitions skipped: the group's leader is away (KIP-814 snapshot)")
                return
            topic, _ = self.scenario.topics[0]
            cluster.add_partitions(topic, cluster.topics[topic] + 1)
            self._added_at[TopicPartition(topic, cluster.topics[topic] - 1)] = self.scheduler.now
        elif kind == "delete_topic" and len(cluster.topics) > 1:
            topic = sorted(cluster.topics)[-1]
            cluster.delete_topic(topic)
            self.trace(f"topic {topic} deleted")
        elif kind == "hang" and inc is not None and inc.alive:
            inc.hang()
        elif kind == "create_topic" and self.scenario.later_topic is not None:
            topic, partitions = self.scenario.later_topic
            if topic not in cluster.topics:
                cluster.add_partitions(topic, partitions)
                for p in range(partitions):
                    self._added_at[TopicPartition(topic, p)] = self.scheduler.now
                self.trace(f"topic {topic} created ({partitions} partitions)")
        elif kind == "wakeup" and inc is not None and inc.alive:
            inc.consumer.wakeup()
        elif kind == "commit_burst" and inc is not None and inc.alive:
            inc.burst = 2 + int(fault.arg * 5)

    def _leader_alive(self) -> bool:
        if self._consumer:
            return True  # the broker assigns: no leader
        group = self.cluster.model._groups.get(GROUP_ID)
        if group is None or group.leader_id is None:
            return True
        return any(inc.consumer.group_metadata().member_id == group.leader_id for inc in self._live())

    def _restart(self, index: int) -> None:
        inc = self.incarnations.get(index)
        if inc is not None and inc.alive:
            return
        if self.scheduler.now >= self.scenario.fault_end_s + self.scenario.quiet_s:
            return
        self._start(index)

    def _end_faults(self) -> None:
        self.trace("faults stop")
        self.cluster.faults.enabled = False
        self.cluster.black_hole_until = 0.0
        self.cluster.slow_answers_until = 0.0
        for index in range(len(self.scenario.members)):
            inc = self.incarnations.get(index)
            if inc is None or not inc.alive:
                self._start(index)
            elif not inc.hung:
                inc.slow_until = 0.0

    # ------------------------------------------------------------------ run
    def run(self) -> RunResult:
        """Run the scenario and check every property; never raises for a violation."""
        scenario = self.scenario
        sched = self.scheduler
        for index in range(len(scenario.members)):
            sched.call_at(0.01 * index, functools.partial(self._start, index))
        sched.call_at(0.5, self._produce)
        for fault in scenario.faults:
            sched.call_at(fault.at, functools.partial(self._fault, fault))
        sched.call_at(scenario.fault_end_s, self._end_faults)
        sched.call_at(scenario.fault_end_s + 1.0, self._settled_check)
        end = scenario.fault_end_s + scenario.quiet_s
        logger = logging.getLogger("kgroup")
        level = logger.level
        logger.setLevel(logging.CRITICAL)
        try:
            sched.run_until(end, stop=self._check_step)
            self._pending_losses()
            if not self.checker.violations:
                self._check_end()
        except Exception as exc:  # a simulator or client bug: report it as a violation
            self.checker.fail("exception", repr(exc))
        finally:
            logger.setLevel(level)
            sched.shutdown()
        self.checker.check_end(
            ((inc.name, inc.thread.error) for inc in self.incarnations.values()), "application thread raised"
        )
        rebalances = sum(1 for e in self.cluster.model.events if e.kind == "rebalance_started")
        if self._consumer:
            rebalances = sum(1 for e in self.cluster.consumer_model.events if e.kind == GROUP_EPOCH_BUMPED)
        return RunResult(
            seed=scenario.seed,
            violations=self.checker.violations,
            rebalances=rebalances,
            faults=self.cluster.faults_injected + len(scenario.faults),
            trace=self.lines,
            records=self.checker.records_handed,
            commits=self.checker.commits_accepted,
            duplicates=self.checker.duplicates,
            virtual_s=sched.now,
            switches=sched.switches,
        )

    def _pending_losses(self) -> None:
        """Partitions a live member still holds after its group thread lost or left its generation.

        A member stuck in processing (a "zombie" fault) leaves the group past
        ``max_poll_interval_ms`` (consumer protocol: epoch -1, or -2 if static), or is told it is
        out (classic: UNKNOWN_MEMBER_ID after its session ran out in a black hole, generation
        reset); its partitions are released as lost once its application calls ``poll()`` again,
        which may be after the run ended (it ends as soon as liveness holds). Its uncommitted
        hand-outs are handed out again by the next owner then, as they are when the callback has
        run: the same at-least-once redelivery, explained by that loss.
        """
        for inc in self._live():
            thread = inc.consumer._group
            held = inc.consumer.assignment()
            if thread is None or not held or thread.snapshot.generation.generation_id > 0:
                continue
            inc.trace(f"lost {sorted(map(str, held))} (left the group; the callback has not run yet)")
            self.checker.excuse(inc.name, frozenset(held), "lost")

    def _settled_check(self) -> None:
        """After the faults: end the run early once liveness holds (it is a bound, not a wait)."""
        if not self._liveness_problems():
            self._settled = True
            return
        self.scheduler.call_later(1.0, self._settled_check)

    def _check_step(self) -> bool:
        """After every instant: at most one unfenced owner per partition. True stops the run."""
        if self._settled:
            return True
        if self._consumer:
            self._check_consumer_owners()
            return bool(self.checker.violations)
        group = self.cluster.model._groups.get(GROUP_ID)
        if group is not None:
            owners: dict[TopicPartition, str] = {}
            members, generation_id = group.members, group.generation_id
            for inc in self._live():
                thread = inc.consumer._group
                if thread is None:
                    continue
                generation = thread.snapshot.generation
                if generation.member_id not in members or generation.generation_id != generation_id:
                    continue
                self.checker.member_is(generation.member_id, inc.name)
                for tp in inc.consumer.assignment():
                    other = owners.get(tp)
                    if other is not None:
                        self.checker.fail(
                            "two unfenced owners",
                            f"{tp} owned by {other} and {inc.name} in generation {group.generation_id}",
                        )
                    owners[tp] = inc.name
        else:
            for inc in self._live():
                meta = inc.consumer.group_metadata()
                if meta.member_id:
                    self.checker.member_is(meta.member_id, inc.name)
        return bool(self.checker.violations)

    def check_revoked_first(self, inc: _Incarnation, records: list[ConsumerRecord]) -> None:
        """Revoke before assign: no hand-out of a partition another member still holds in the group.

        A partition moves to a new owner only once its previous owner's revocation completed
        (eager: it revoked before it joined; cooperative: it revoked in the first round and the
        partition is assigned in the second; the consumer protocol: it acknowledged the revocation
        after ``on_partitions_revoked`` returned). So when ``inc`` hands out a record, no other live
        process may still have that partition in its assignment while the coordinator still
        counts both as members: one that was removed (session or rebalance timeout, left) is the
        business of "no hand-out after removal", and one whose hand-outs are on hold (in doubt
        about its session) hands nothing out until the coordinator answers.
        """
        if self._settled:
            return
        own = inc.consumer._group
        if own is None or not self._in_group(own.snapshot.generation.member_id):
            return  # a member the coordinator removed: "no hand-out after removal" judges it
        partitions = {TopicPartition(r.topic, r.partition) for r in records}
        for other in self._live():
            if other is inc:
                continue
            held = partitions & other.consumer.assignment()
            if not held:
                continue
            thread = other.consumer._group
            member_id = thread.snapshot.generation.member_id if thread is not None else ""
            if other.consumer._hand_out_on_hold():
                # in doubt (no heartbeat answered for its session or rebalance timeout): it hands
                # nothing out until the coordinator tells it where it stands (a static member the
                # coordinator keeps but left out of the new generation, KIP-345)
                continue
            if thread is not None and self._left_out(member_id, thread.snapshot.generation.generation_id):
                # a static member stuck past the rebalance timeout (KIP-345 keeps it): the
                # coordinator completed the generation without it and the leader handed its
                # partitions on; nothing in either client can stop that, and what it hands out
                # itself once back is judged by this same check
                continue
            if member_id and self._in_group(member_id):
                self.checker.fail(
                    "hand-out before the previous owner's revocation",
                    f"{inc.name} handed out records of {sorted(map(str, held))} while {other.name} "
                    f"({member_id}), still a member of the group, had not revoked them",
                )

    def _left_out(self, member_id: str, generation_id: int) -> bool:
        """Whether the coordinator completed its current generation without ``member_id`` (classic).

        A static member that had not rejoined when the rebalance timeout passed stays a member
        (KIP-345) but is not in the generation, until it rejoins.
        """
        if self._consumer:
            return False
        group = self.cluster.model._groups.get(GROUP_ID)
        return group is not None and member_id in group.left_out and generation_id < group.generation_id

    def _in_group(self, member_id: str) -> bool:
        """Whether the coordinator counts ``member_id`` as a member now."""
        if self._consumer:
            return member_id in (self._consumer_members() or {})
        group = self.cluster.model._groups.get(GROUP_ID)
        return group is not None and member_id in group.members

    def _check_consumer_owners(self) -> None:
        """At most one owner per partition among live members the consumer-group model still has."""
        members = self._consumer_members() or {}
        owners: dict[TopicPartition, str] = {}
        for inc in self._live():
            thread = inc.consumer._group
            if thread is None:
                continue
            member_id = thread.snapshot.generation.member_id
            if not member_id:
                continue
            self.checker.member_is(member_id, inc.name)
            if member_id not in members:
                continue
            for tp in inc.consumer.assignment():
                other = owners.get(tp)
                if other is not None:
                    self.checker.fail(
                        "two unfenced owners", f"{tp} owned by {other} and {inc.name} (consumer protocol)"
                    )
                owners[tp] = inc.name

    def _check_end(self) -> None:
        """Liveness: every partition owned by one live member and every record handed out."""
        bound = self.scenario.quiet_s
        for problem in self._liveness_problems():
            self.checker.fail("liveness", f"{problem} {bound:.0f} s after the faults stopped")

    def _liveness_problems(self) -> list[str]:
        owned: dict[TopicPartition, list[str]] = {}
        for inc in self._live():
            for tp in inc.consumer.assignment():
                owned.setdefault(tp, []).append(inc.name)
        problems = []
        subscribed = self._subscribed_topics()
        for tp, end in sorted(self.cluster.log_end.items()):
            if tp.topic not in subscribed or self._java_gap(tp, owned) or self._static_subscription_gap(tp, owned):
                continue
            if len(owned.get(tp, [])) != 1:
                problems.append(f"{tp} owned by {owned.get(tp, [])}")
            low = self.checker.handed_low(tp)
            if low < end:
                problems.append(f"{tp}: records {low}..{end - 1} not handed out")
        return problems

    def _java_gap(self, tp: TopicPartition, owned: dict[TopicPartition, list[str]]) -> bool:
        """Whether ``tp`` is unowned only because of a gap Java's client shares.

        A partition added before the group's leader process started, when that process has
        never assigned (it came back as a static leader with skip_assignment, KIP-814): Java's
        ``onLeaderElected`` then takes the metadata of that moment as its snapshot, so the
        partition waits for the next rebalance. kgroup does the same; not a violation.
        """
        added = self._added_at.get(tp)
        if added is None or tp in owned:
            return False
        group = self.cluster.model._groups.get(GROUP_ID)
        if group is None:
            return False
        for inc in self._live():
            if inc.consumer.group_metadata().member_id == group.leader_id:
                thread = inc.consumer._group_thread
                return inc.started_at > added and thread is not None and thread.assignor_thread is None
        return False

    def _static_subscription_gap(self, tp: TopicPartition, owned: dict[TopicPartition, list[str]]) -> bool:
        """Whether ``tp`` is unowned only because a static member came back with a new subscription.

        A static member whose process restarts with a subscription other than its previous
        process's rejoins a Stable group without a rebalance: Kafka's coordinator keeps the
        group's assignment when the selected protocol does not change
        (``GroupMetadataManager.updateStaticMemberThenRebalanceOrCompleteJoin``), and no client
        notices (Java's ``ConsumerCoordinator`` compares a member's subscription only with its own
        last join in the same process). A topic only such members added stays unassigned until
        the next rebalance. kgroup does the same; not a violation. docs/simulation.md says so.
        """
        if tp in owned:
            return False
        group = self.cluster.model._groups.get(GROUP_ID)
        if group is None:
            return False
        subscribers = [inc for inc in self._live() if tp.topic in inc.consumer.subscription()]
        return bool(subscribers) and all(
            inc.previous_subscription is not None
            and tp.topic not in inc.previous_subscription
            and inc.generation_at_start == group.generation_id
            for inc in subscribers
        )

    def _subscribed_topics(self) -> set[str]:
        topics: set[str] = set()
        for inc in self._live():
            topics |= inc.consumer.subscription()
        return topics


def run_scenario(scenario: Scenario) -> RunResult:
    """Run one scenario."""
    return Simulation(scenario).run()


def run_seed(
    seed: int, group_protocol: str = "classic", *, poll_columns: bool = False, version: int = VERSION
) -> RunResult:
    """Run the scenario of ``seed`` (``version``: the scenario version, see the module docstring).

    ``group_protocol``: classic or consumer; ``poll_columns``: the columnar hand-out.
    """
    return run_scenario(scenario_for(seed, group_protocol, poll_columns=poll_columns, version=version))


def describe(result: RunResult, replay: Callable[[int], str]) -> str:
    """A violation report: the seed, the replay command, the violations and the trace's tail."""
    lines = [f"seed {result.seed}: {len(result.violations)} violation(s)", f"replay: {replay(result.seed)}"]
    lines += [f"  {v}" for v in result.violations[:10]]
    lines.append("trace (last 60 lines):")
    lines += result.trace[-60:]
    return "\n".join(lines)
