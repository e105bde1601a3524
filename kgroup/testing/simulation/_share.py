"""Share groups (KIP-932) in the simulator: real ``kgroup.ShareConsumer`` members against ``ShareGroupModel``.

Each member is the production :class:`kgroup.ShareConsumer` (its ``ShareGroupMachine`` on a
pumped group thread, its ``ShareFetcher`` on the application's simulated thread) with three ports
swapped: the runtime (``SimRuntime``: a mailbox on virtual time, the group thread's loop as a
scheduler pump), the clock (virtual) and the transport (:class:`ShareSimTransport`: every
ShareGroupHeartbeat, ShareFetch and ShareAcknowledge goes to one
:class:`~kgroup.testing.coordinator.ShareGroupModel`, which holds the partition logs, after a
drawn latency; an answer may be lost, and then the request times out at ``request_timeout_ms``).
The model's timers (lock expiries, session timeouts) fire as a scheduler pump.

The applications hold each record a drawn virtual time, sometimes longer than the acquisition
lock; in explicit mode they acknowledge each record ACCEPT, RELEASE or REJECT (drawn), in
implicit mode ``poll()`` accepts the last batch. Faults: member crashes (kill: nothing more is
sent, the locks expire), clean closes (and a new incarnation later), joins of new members,
windows of lost answers and of slow answers.

Checked at every request the model answers (:class:`ShareChecker`):

* **one holder at a time**: no record is acquired by a member while another member's lock on
  it is valid (a lock ends at its deadline, or when the model applied its holder's
  acknowledgement or closed its holder's share session);
* **no accepted record delivered again**;
* **delivery counts**: the count each acquisition reports is the number of times the record
  was acquired, and never above the group's delivery count limit;
* **the acknowledgement sent is the application's**: an ACCEPT, RELEASE or REJECT a member
  sends for a record is what its application decided for it (a record the application did
  not decide is only ever released).

Checked at the end (liveness): every record produced is accepted, rejected, or archived at the
delivery count limit, and the model agrees (nothing lost, nothing left in flight).
"""

from __future__ import annotations

import concurrent.futures
import math
import random
import zlib
from collections.abc import Callable
from typing import Any

import attrs

from kgroup._io.share_transport import PartitionLeader, encode_records
from kgroup.errors import FatalGroupError, GroupThreadCrashed, KafkaTimeoutError, KGroupError, WakeupError
from kgroup.membership import events as ev
from kgroup.membership.commands import SendFindCoordinator
from kgroup.protocol import share_fetch as sf
from kgroup.share_consumer import ShareConsumer
from kgroup.testing.coordinator import ShareGroupConfig, ShareGroupModel
from kgroup.testing.coordinator import _share_api as api
from kgroup.testing.coordinator._share_partition import RecordState
from kgroup.testing.simulation._cluster import topic_id
from kgroup.testing.simulation._invariants import Violation
from kgroup.testing.simulation._run import RunResult
from kgroup.testing.simulation._scheduler import Killed, Scheduler, SimClock, SimThread
from kgroup.testing.simulation._transport import SimRuntime
from kgroup.types import AcknowledgeType, ShareConsumerRecord, TopicPartition

__all__ = [
    "ShareChecker",
    "ShareScenario",
    "ShareSimTransport",
    "ShareSimulation",
    "run_share_seed",
    "share_scenario_for",
]

GROUP_ID = "sim-share-group"
LEADER = 1
#: the acknowledgement types an application draws in explicit mode, and their weights
_KINDS = (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT)


@attrs.frozen
class ShareMember:
    """One member process: its name and behaviour."""

    name: str
    #: ``share_acknowledgement_mode``: "implicit" or "explicit"
    mode: str
    poll_timeout_ms: int
    max_poll_records: int
    #: explicit mode: the application commits (``commit_sync``) after this share of its batches
    commit_share: float


@attrs.frozen
class ShareFault:
    """A fault at virtual time ``at``: ``crash``, ``close``, ``join``, ``lose`` or ``slow``."""

    at: float
    kind: str
    member: int = -1
    arg: float = 0.0


@attrs.frozen
class ShareScenario:
    """Everything a share run does, drawn from its seed (``share_scenario_for``)."""

    seed: int
    topics: tuple[tuple[str, int], ...]
    members: tuple[ShareMember, ...]
    session_timeout_ms: int
    heartbeat_interval_ms: int
    lock_ms: int
    delivery_count_limit: int
    request_timeout_ms: int
    produce_every_s: float
    fault_end_s: float
    quiet_s: float
    #: a record's usual holding time (mean, ms), the share held past the lock and by how much
    hold_ms: float
    long_share: float
    #: explicit mode: the weights of ACCEPT, RELEASE, REJECT
    kinds: tuple[float, float, float]
    latency_s: float
    faults: tuple[ShareFault, ...]


def share_scenario_for(seed: int) -> ShareScenario:
    """The scenario of ``seed``: 2 to 4 members (implicit or explicit), 1 or 2 topics, 3 to 8 faults."""
    rng = random.Random(seed * 7919 + 11)
    topics = tuple((f"s{i}", rng.randint(1, 4)) for i in range(rng.choice((1, 1, 2))))
    n = rng.randint(2, 4)
    members = tuple(
        ShareMember(
            name=f"m{i}", mode=rng.choice(("implicit", "explicit", "explicit")),
            poll_timeout_ms=rng.choice((100, 500)), max_poll_records=rng.choice((5, 20, 100)),
            commit_share=rng.choice((0.0, 0.2, 1.0)),
        )
        for i in range(n)
    )
    fault_end = rng.uniform(10.0, 20.0)
    kinds = ("crash", "crash", "close", "join", "lose", "slow")
    faults = tuple(sorted(
        (ShareFault(at=rng.uniform(2.0, fault_end), kind=rng.choice(kinds), member=rng.randrange(n), arg=rng.random())
         for _ in range(rng.randint(3, 8))),
        key=lambda f: f.at,
    ))
    session = rng.choice((4000, 6000))
    lock = rng.choice((1000, 2000, 4000))
    request_timeout = rng.choice((1500, 3000))
    scenario = ShareScenario(
        seed=seed, topics=topics, members=members, session_timeout_ms=session,
        heartbeat_interval_ms=rng.choice((500, 1000)), lock_ms=lock,
        delivery_count_limit=rng.choice((2, 3, 5)), request_timeout_ms=request_timeout,
        produce_every_s=rng.choice((0.1, 0.2, 0.5)), fault_end_s=fault_end,
        # crashed members' locks expire, sessions time out, a lost answer times out; then a few
        # deliveries at most per record
        quiet_s=(session + 3 * request_timeout + 6 * lock) / 1000 + 10.0,
        hold_ms=rng.choice((1.0, 5.0, 20.0)), long_share=rng.choice((0.0, 0.005, 0.02)),
        kinds=rng.choice(((1.0, 0.0, 0.0), (0.8, 0.15, 0.05), (0.5, 0.4, 0.1))),
        latency_s=rng.choice((0.001, 0.005, 0.02)), faults=faults,
    )
    # the records come at a third at most of what one member alone gets through (a record is
    # delivered 1 / (1 - the share released) times on average): the backlog of the faults is
    # gone well within the quiet time
    cost_s = (scenario.hold_ms / 1000 + scenario.long_share * 1.5 * lock / 1000) / (1 - scenario.kinds[1])
    slowest = 3 / (0.3 / cost_s)  # 3 records a production on average
    if scenario.produce_every_s < slowest:
        scenario = attrs.evolve(scenario, produce_every_s=round(slowest, 3))
    return scenario


def _draw(*parts: object) -> float:
    """A number in [0, 1) fixed by ``parts`` (the same in every process and run)."""
    return zlib.crc32("/".join(map(str, parts)).encode()) / 2**32


def _offsets(batches: Any) -> list[tuple[int, int]]:
    """(offset, type) of acknowledgement batches (one type for all, or one per offset)."""
    out = []
    for batch in batches:
        types = tuple(batch.acknowledge_types)
        for i, offset in enumerate(range(batch.first_offset, batch.last_offset + 1)):
            out.append((offset, types[0] if len(types) == 1 else types[i]))
    return out


# ---------------------------------------------------------------------- the checks
@attrs.define
class _Lock:
    """A member's acquisition of a record: who (incarnation, member id) and the lock deadline (ms)."""

    who: str
    member_id: str
    deadline_ms: int
    ended: bool = False


class ShareChecker:
    """The share-group properties (the module docstring), fed by the transport and the applications."""

    def __init__(self, now: Callable[[], float], delivery_count_limit: int) -> None:
        self._now = now
        self.limit = delivery_count_limit
        self.violations: list[Violation] = []
        #: (tp, offset) -> acquisitions so far
        self.deliveries: dict[tuple[TopicPartition, int], int] = {}
        self._locks: dict[tuple[TopicPartition, int], _Lock] = {}
        #: (tp, offset) -> "accepted", "rejected" or "archived"
        self.fate: dict[tuple[TopicPartition, int], str] = {}
        #: (incarnation, tp, offset) -> the application's decision
        self._decided: dict[tuple[str, TopicPartition, int], int] = {}
        self.handed = 0
        self.acknowledged = 0

    def fail(self, rule: str, detail: str) -> None:
        """Record a violation (at most 50 a run)."""
        if len(self.violations) < 50:
            self.violations.append(Violation(rule, self._now(), detail))

    def _now_ms(self) -> int:
        return round(self._now() * 1000)

    # ---- the applications
    def decided(self, who: str, record: ShareConsumerRecord[Any, Any], kind: AcknowledgeType) -> None:
        """``who``'s application decided ``kind`` for ``record``."""
        self._decided[(who, TopicPartition(record.topic, record.partition), record.offset)] = int(kind)

    # ---- the model's answers
    def acquired(self, who: str, member_id: str, tp: TopicPartition, offset: int, delivery_count: int,
                 deadline_ms: int | None) -> None:
        """The model acquired ``tp@offset`` for ``who`` (an answer it gave, lost or not)."""
        key = (tp, offset)
        now = self._now_ms()
        held = self._locks.get(key)
        if held is not None and not held.ended and now < held.deadline_ms and held.member_id != member_id:
            self.fail("record held by two members",
                      f"{tp}@{offset} acquired by {who} while {held.who} holds its lock until {held.deadline_ms} ms")
        if key in self.fate and self.fate[key] == "accepted":
            self.fail("accepted record delivered again", f"{tp}@{offset} acquired by {who} after it was accepted")
        self._decided.pop((who, tp, offset), None)  # a new delivery: not decided yet
        count = self.deliveries[key] = self.deliveries.get(key, 0) + 1
        if delivery_count != count:
            self.fail("delivery count wrong", f"{tp}@{offset} acquired by {who} with delivery count "
                      f"{delivery_count}; it is its acquisition number {count}")
        if delivery_count > self.limit or count > self.limit:
            self.fail("delivery count over the limit", f"{tp}@{offset} delivered {count} times to {who} "
                      f"(reported {delivery_count}; the limit is {self.limit})")
        self._locks[key] = _Lock(who, member_id, deadline_ms if deadline_ms is not None else now)

    def acknowledgements_sent(self, who: str, tp: TopicPartition, acks: list[tuple[int, int]]) -> None:
        """``who`` sends ``acks`` ((offset, type)) for ``tp``: each must be its application's decision."""
        for offset, kind in acks:
            if kind in (api.AcknowledgeType.GAP, api.AcknowledgeType.RENEW):
                continue
            decided = self._decided.get((who, tp, offset))
            if decided is None and kind != AcknowledgeType.RELEASE:
                self.fail("acknowledgement the application did not make",
                          f"{who} sends {api.AcknowledgeType(kind).name} for {tp}@{offset}, never decided by "
                          "its application")
            elif decided is not None and decided != kind:
                self.fail("acknowledgement the application did not make",
                          f"{who} sends {api.AcknowledgeType(kind).name} for {tp}@{offset}; its application decided "
                          f"{api.AcknowledgeType(decided).name}")

    def settled(self, who: str, member_id: str, tp: TopicPartition, offset: int, kind: int | None, ok: bool,
                state: RecordState | None, deadline_ms: int | None) -> None:
        """The model answered ``who``'s acknowledgement ``kind`` (None: its session's close) of ``tp@offset``.

        ``ok``: the answer reported no error for it (a partition's acknowledgements are all or
        nothing); ``state`` and ``deadline_ms``: the record's after.
        """
        key = (tp, offset)
        held = self._locks.get(key)
        mine = held is not None and held.member_id == member_id and not held.ended
        if kind is not None and ok and mine and kind in (AcknowledgeType.ACCEPT, AcknowledgeType.REJECT):
            self.fate.setdefault(key, "accepted" if kind == AcknowledgeType.ACCEPT else "rejected")
            self.acknowledged += 1
        if state is RecordState.ACQUIRED and mine and (kind is None or not ok or kind == AcknowledgeType.RENEW):
            if deadline_ms is not None and held is not None:
                held.deadline_ms = deadline_ms  # renewed, or the acknowledgement failed
            return
        if mine and held is not None and (ok or state is not RecordState.ACQUIRED):
            held.ended = True
        if state is not None and state.terminal:
            self.fate.setdefault(key, "archived")

    def expired(self, tp: TopicPartition, offset: int, state: RecordState | None) -> None:
        """The model expired the lock of ``tp@offset``; ``state`` after."""
        if state is None or state.terminal:
            self.fate.setdefault((tp, offset), "archived")

    def check_end(self, model: ShareGroupModel, log_end: dict[TopicPartition, int]) -> None:
        """Every record accepted, rejected or archived at the limit, and the model agrees."""
        for tp, end in sorted(log_end.items()):
            share = model.share_partition(GROUP_ID, topic_id(tp.topic), tp.partition)
            lost = []
            for offset in range(end):
                key = (tp, offset)
                state = None if share is None or offset < share.start_offset else share.record(offset)
                model_done = share is not None and (offset < share.start_offset or (
                    state is not None and state.state.terminal))
                fate = self.fate.get(key)
                if not model_done:
                    lost.append(offset)
                    continue
                if fate is None:
                    fate = "archived" if self.deliveries.get(key, 0) >= self.limit else None
                    if fate is None:
                        self.fail("record lost", f"{tp}@{offset} done in the model after "
                                  f"{self.deliveries.get(key, 0)} deliveries, never accepted or rejected")
                elif fate == "archived" and self.deliveries.get(key, 0) < self.limit and state is not None:
                    self.fail("record archived early", f"{tp}@{offset} archived after "
                              f"{self.deliveries.get(key, 0)} deliveries (the limit is {self.limit})")
            if lost:
                self.fail("records not done at the end",
                          f"{tp}: {len(lost)} records neither accepted, rejected nor archived, from {lost[:5]}")


# ---------------------------------------------------------------------- the transport
class ShareSimTransport:
    """A member's ``ShareGroupTransport``: its requests go to the model after a drawn latency."""

    def __init__(self, sim: ShareSimulation, who: str) -> None:
        self._sim = sim
        self.who = who
        self.dead = False
        self.member_id = ""

    def _later(self, value: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def complete() -> None:
            if not self.dead:
                future.set_result(value())

        self._sim.scheduler.call_later(2 * self._sim.latency(), complete)
        return future

    def _request(self, api_name: str, handle: Callable[[], Any], timeout_ms: int,
                 on_lost: Callable[[concurrent.futures.Future[Any]], None],
                 wait: Callable[[Any], float] = lambda answer: 0.0) -> concurrent.futures.Future[Any]:
        """Run ``handle`` on the model after a latency; answer after another, or lose it (``on_lost`` at the timeout).

        ``wait(answer)``: how long the leader holds the answer back (an empty ShareFetch waits up to
        ``max_wait_ms`` for records, as a broker does; the model answers at once).
        """
        sim = self._sim
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        if self.dead:
            return future

        def arrive() -> None:
            if self.dead:
                return
            answer = handle()
            if sim.lost():
                sim.trace(f"{self.who}: {api_name} answer lost")
                if getattr(answer, "assignment", None) is not None:
                    sim.stale.add(self.member_id)
                sim.scheduler.call_later(
                    timeout_ms / 1000, lambda: None if self.dead or future.done() else on_lost(future))
                return

            def deliver() -> None:
                if not self.dead and not future.done():
                    future.set_result(answer)

            sim.scheduler.call_later(wait(answer) + sim.latency(), deliver)

        sim.scheduler.call_later(sim.latency(), arrive)
        return future

    # ---- the group thread's
    def send(self, command: Any, group_id: str) -> concurrent.futures.Future[ev.Event]:
        """FindCoordinator only (a share group's other requests are ShareGroupHeartbeats)."""
        assert isinstance(command, SendFindCoordinator), command
        return self._later(lambda: ev.FindCoordinatorResponded(
            request_id=command.request_id, error_code=0, node_id=LEADER, host="sim", port=LEADER))

    def topic_ids(self, timeout_ms: int) -> concurrent.futures.Future[dict[Any, str]]:
        return self._later(lambda: {topic_id(t): t for t, _ in self._sim.scenario.topics})

    def share_group_heartbeat(self, command: Any) -> concurrent.futures.Future[Any]:
        request = command.request()
        sim = self._sim
        self.member_id = request.member_id

        def handle() -> Any:
            response = sim.model.heartbeat(request).response
            sim.trace(f"{self.who}: ShareGroupHeartbeat epoch {request.member_epoch} <- {response.error_code} "
                      f"epoch {response.member_epoch}")
            fields = {f.name: getattr(response, f.name) for f in attrs.fields(type(response))}
            return ev.ShareGroupHeartbeatResponded(request_id=command.request_id, **fields)

        def lost(future: concurrent.futures.Future[Any]) -> None:
            future.set_result(ev.RequestFailed(request_id=command.request_id, reason="timed out"))

        return self._request("ShareGroupHeartbeat", handle, command.timeout_ms, lost)

    # ---- the poll thread's
    def share_metadata(self, topics: Any, timeout_ms: int) -> concurrent.futures.Future[Any]:
        wanted = set(topics)
        return self._later(lambda: {
            TopicPartition(t, p): PartitionLeader(LEADER, topic_id(t))
            for t, count in self._sim.scenario.topics if t in wanted for p in range(count)
        })

    def share_fetch_version(self) -> int | None:
        return 2

    def _timed_out(self, future: concurrent.futures.Future[Any]) -> None:
        future.set_exception(KafkaTimeoutError(f"{self.who}: no answer in time"))

    def share_fetch(self, node_id: int, request: sf.ShareFetchRequest, timeout_ms: int) -> Any:
        sim = self._sim
        model_request = api.ShareFetchRequest(
            group_id=request.group_id, member_id=request.member_id, share_session_epoch=request.share_session_epoch,
            partitions=[api.SharePartitionData(p.topic_id, p.partition, [
                api.AcknowledgementBatch(b.first_offset, b.last_offset, b.acknowledge_types)
                for b in p.acknowledgement_batches]) for p in request.partitions],
            forgotten=request.forgotten, max_wait_ms=request.max_wait_ms, min_bytes=request.min_bytes,
            max_bytes=request.max_bytes, max_records=request.max_records, batch_size=request.batch_size,
            share_acquire_mode=request.share_acquire_mode, is_renew_ack=request.is_renew_ack,
            api_version=request.api_version,
        )

        def handle() -> sf.ShareFetchResponse:
            acks = {sim.tp_of(p.topic_id, p.partition): _offsets(p.acknowledgement_batches)
                    for p in model_request.partitions if p.acknowledgement_batches}
            for tp, offsets in acks.items():
                sim.checker.acknowledgements_sent(self.who, tp, offsets)
            closing = request.share_session_epoch == api.FINAL_SHARE_SESSION_EPOCH
            held = sim.held_by(request.member_id) if closing else {}
            response = sim.model.share_fetch(model_request).response
            errors = {tp: response.error_code for tp in acks} if response.error_code else {
                sim.tp_of(p.topic_id, p.partition): p.acknowledge_error_code for p in response.partitions}
            sim.settle(self.who, request.member_id, acks, held, errors)
            parts = []
            got = 0
            for part in response.partitions:
                tp = sim.tp_of(part.topic_id, part.partition)
                share = sim.model.share_partition(GROUP_ID, part.topic_id, part.partition)
                for acquired in part.acquired_records:
                    for offset in range(acquired.first_offset, acquired.last_offset + 1):
                        rec = share.record(offset) if share is not None else None
                        sim.checker.acquired(self.who, request.member_id, tp, offset, acquired.delivery_count,
                                             rec.lock_deadline_ms if rec is not None else None)
                        got += 1
                raw = b"".join(
                    encode_records(a.first_offset, [b"%s/%d/%d" % (tp.topic.encode(), tp.partition, o)
                                                    for o in range(a.first_offset, a.last_offset + 1)])
                    for a in part.acquired_records
                )
                parts.append(sf.ShareFetchPartitionData(
                    topic_id=part.topic_id, partition=part.partition, error_code=part.error_code,
                    acknowledge_error_code=part.acknowledge_error_code, leader_id=LEADER, leader_epoch=0,
                    records=raw or None,
                    acquired_records=tuple(sf.AcquiredRecords(a.first_offset, a.last_offset, a.delivery_count)
                                           for a in part.acquired_records),
                ))
            sim.trace(f"{self.who}: ShareFetch epoch {request.share_session_epoch} acks "
                      f"{sum(len(v) for v in acks.values())} <- {response.error_code} acquired {got}")
            return sf.ShareFetchResponse(error_code=response.error_code,
                                         acquisition_lock_timeout_ms=response.acquisition_lock_timeout_ms,
                                         partitions=tuple(parts))

        def wait(answer: sf.ShareFetchResponse) -> float:
            empty = not answer.error_code and not any(p.acquired_records or p.error_code for p in answer.partitions)
            quick = request.is_renew_ack or request.share_session_epoch == api.FINAL_SHARE_SESSION_EPOCH
            return request.max_wait_ms / 1000 if empty and not quick else 0.0

        return self._request("ShareFetch", handle, timeout_ms, self._timed_out, wait)

    def share_acknowledge(self, node_id: int, request: sf.ShareAcknowledgeRequest, timeout_ms: int) -> Any:
        sim = self._sim
        model_request = api.ShareAcknowledgeRequest(
            group_id=request.group_id, member_id=request.member_id, share_session_epoch=request.share_session_epoch,
            partitions=[api.SharePartitionData(p.topic_id, p.partition, [
                api.AcknowledgementBatch(b.first_offset, b.last_offset, b.acknowledge_types) for b in p.batches])
                for p in request.partitions],
            is_renew_ack=request.is_renew_ack, api_version=request.api_version,
        )

        def handle() -> sf.ShareAcknowledgeResponse:
            acks = {sim.tp_of(p.topic_id, p.partition): _offsets(p.acknowledgement_batches)
                    for p in model_request.partitions}
            for tp, offsets in acks.items():
                sim.checker.acknowledgements_sent(self.who, tp, offsets)
            closing = request.share_session_epoch == api.FINAL_SHARE_SESSION_EPOCH
            held = sim.held_by(request.member_id) if closing else {}
            response = sim.model.share_acknowledge(model_request).response
            errors = {tp: response.error_code for tp in acks} if response.error_code else {
                sim.tp_of(p.topic_id, p.partition): p.error_code for p in response.partitions}
            sim.settle(self.who, request.member_id, acks, held, errors)
            sim.trace(f"{self.who}: ShareAcknowledge epoch {request.share_session_epoch} acks "
                      f"{sum(len(v) for v in acks.values())} <- {response.error_code}")
            return sf.ShareAcknowledgeResponse(
                error_code=response.error_code, acquisition_lock_timeout_ms=response.acquisition_lock_timeout_ms,
                partitions=tuple(sf.ShareAcknowledgePartition(topic_id=p.topic_id, partition=p.partition,
                                                              error_code=p.error_code) for p in response.partitions),
            )

        return self._request("ShareAcknowledge", handle, timeout_ms, self._timed_out)

    def close(self) -> None:
        """Nothing to close (the simulator owns the transport)."""


# ---------------------------------------------------------------------- the members
class _ShareIncarnation:
    """One process of a member: its consumer, its application thread."""

    def __init__(self, sim: ShareSimulation, spec: ShareMember, number: int) -> None:
        self.sim = sim
        self.spec = spec
        self.name = f"{spec.name}#{number}"
        self.transport = ShareSimTransport(sim, self.name)
        self.runtime = SimRuntime(sim.scheduler)
        scenario = sim.scenario
        self.consumer: ShareConsumer[Any, Any] = ShareConsumer(
            bootstrap_servers="sim:9092", group_id=GROUP_ID, share_acknowledgement_mode=spec.mode,
            max_poll_records=spec.max_poll_records, request_timeout_ms=scenario.request_timeout_ms,
            default_api_timeout_ms=2 * scenario.request_timeout_ms, retry_backoff_ms=100,
            transport=self.transport, clock=sim.clock, _runtime=self.runtime,
        )
        self.consumer._rng.seed(zlib.crc32(f"{scenario.seed}/{self.name}".encode()))
        self.stopping = False
        self.alive = True
        self.batches = 0
        self.thread: SimThread = sim.scheduler.spawn(self.name, self._app)

    def crash(self) -> None:
        """The process dies: no more requests, no answers; its locks expire at the broker."""
        self.sim.trace(f"{self.name}: crash")
        self.alive = False
        self.transport.dead = True
        self.runtime.stopped = True
        self.sim.scheduler.kill(self.thread)

    def _hold(self, record: ShareConsumerRecord[Any, Any]) -> None:
        scenario = self.sim.scenario
        parts = (scenario.seed, self.name, record.topic, record.partition, record.offset, record.delivery_count)
        seconds = -math.log(1.0 - _draw("hold", *parts)) * scenario.hold_ms / 1000
        if _draw("long", *parts) < scenario.long_share:
            seconds += scenario.lock_ms * 1.5 / 1000  # past the lock: another member gets it
        if seconds > 0:
            self.sim.clock.sleep(seconds)

    def _decide(self, record: ShareConsumerRecord[Any, Any]) -> AcknowledgeType:
        scenario = self.sim.scenario
        u = _draw("kind", scenario.seed, self.name, record.topic, record.partition, record.offset,
                  record.delivery_count)
        weights = scenario.kinds
        if u < weights[0]:
            return _KINDS[0]
        return _KINDS[1] if u < weights[0] + weights[1] else _KINDS[2]

    def _app(self) -> None:
        sim, consumer, checker = self.sim, self.consumer, self.sim.checker
        try:
            consumer.subscribe([t for t, _ in sim.scenario.topics])
            while not self.stopping:
                try:
                    records = consumer.poll(self.spec.poll_timeout_ms)
                except WakeupError:
                    continue
                except (FatalGroupError, GroupThreadCrashed) as exc:
                    checker.fail("fatal error", f"{self.name}: poll() raised {exc!r}")
                    break
                except KGroupError as exc:
                    sim.trace(f"{self.name}: poll raised {type(exc).__name__}: {exc}")
                    sim.clock.sleep(0.05)
                    continue
                if not records:
                    continue
                self.batches += 1
                checker.handed += len(records)
                sim.trace(f"{self.name}: poll -> {len(records)} records: "
                          + " ".join(f"{r.topic}-{r.partition}@{r.offset}/{r.delivery_count}" for r in records[:8]))
                for record in records:
                    if self.spec.mode == "implicit":
                        checker.decided(self.name, record, AcknowledgeType.ACCEPT)
                    self._hold(record)
                    if self.spec.mode == "explicit":
                        kind = self._decide(record)
                        checker.decided(self.name, record, kind)
                        if kind is not AcknowledgeType.ACCEPT:
                            sim.trace(f"{self.name}: {kind.name} {record.topic}-{record.partition}@{record.offset}")
                        consumer.acknowledge(record, kind)
                if self.spec.mode == "explicit" and _draw("commit", sim.scenario.seed, self.name,
                                                          self.batches) < self.spec.commit_share:
                    outcome = consumer.commit_sync()
                    outcomes = sorted((str(tp), type(e).__name__) for tp, e in outcome.items())
                    sim.trace(f"{self.name}: commit_sync -> {outcomes}")
            consumer.close(2 * sim.scenario.request_timeout_ms)
            sim.trace(f"{self.name}: closed")
        except Killed:
            raise
        except Exception as exc:
            checker.fail("application error", f"{self.name}: {type(exc).__name__}: {exc}")
            sim.trace(f"{self.name}: raised {exc!r}")
        finally:
            self.alive = False


class _ModelPump:
    """The model's timers (lock expiries, session timeouts) fired at their deadlines."""

    def __init__(self, sim: ShareSimulation) -> None:
        self._sim = sim

    def pump(self) -> bool:
        due = self._sim.model.next_deadline()
        if due is None or due > self._sim.scheduler.now:
            return False
        before = self._sim.held_by(None)
        self._sim.model.tick()
        self._sim.expired(before)
        return True

    def deadline(self) -> float:
        due = self._sim.model.next_deadline()
        return float("inf") if due is None else due


class ShareSimulation:
    """A simulated share group: the model, the members, the faults and the checks (the module docstring)."""

    def __init__(self, scenario: ShareScenario, *, trace_limit: int = 4000,
                 model_factory: Callable[..., ShareGroupModel] = ShareGroupModel) -> None:
        self.scenario = scenario
        self.scheduler = Scheduler(tie_order=random.Random(scenario.seed * 131 + 1))
        self.clock = SimClock(self.scheduler)
        self._rng = random.Random(scenario.seed)
        topics = {t: (topic_id(t), n) for t, n in scenario.topics}
        self.model = model_factory(
            ShareGroupConfig(session_timeout_ms=scenario.session_timeout_ms,
                             heartbeat_interval_ms=scenario.heartbeat_interval_ms,
                             record_lock_duration_ms=scenario.lock_ms,
                             delivery_count_limit=scenario.delivery_count_limit, auto_offset_reset="earliest"),
            clock=self.clock, topics=lambda: topics,
        )
        self._names = {topic_id(t): t for t, _ in scenario.topics}
        self.checker = ShareChecker(lambda: self.scheduler.now, scenario.delivery_count_limit)
        self.scheduler.pumps.append(_ModelPump(self))
        self.incarnations: list[_ShareIncarnation] = []
        self._count: dict[str, int] = {}
        self.members: list[ShareMember] = list(scenario.members)
        self._trace: list[str] = []
        self._trace_limit = trace_limit
        self.loss = 0.0
        self.slow = 0.0
        #: member ids that lost a heartbeat answer carrying their assignment: Apache Kafka's
        #: coordinator sends an assignment only on a join or when it changed, so such a member
        #: keeps its old one until the next change (the model does the same)
        self.stale: set[str] = set()
        self.faults = 0
        self.log_end: dict[TopicPartition, int] = {
            TopicPartition(t, p): 0 for t, n in scenario.topics for p in range(n)
        }

    # ---- the cluster
    def trace(self, line: str) -> None:
        self._trace.append(f"{self.scheduler.now:9.3f} {line}")
        if len(self._trace) > 2 * self._trace_limit:
            del self._trace[: self._trace_limit]

    def latency(self) -> float:
        base = self.scenario.latency_s * (1 + self._rng.random())
        return base + (self._rng.uniform(0.0, self.slow) if self.slow else 0.0)

    def lost(self) -> bool:
        return self.loss > 0 and self._rng.random() < self.loss

    def tp_of(self, tid: Any, partition: int) -> TopicPartition:
        return TopicPartition(self._names[tid], partition)

    def held_by(self, member_id: str | None) -> dict[tuple[TopicPartition, int], str]:
        """(tp, offset) -> holder of every record the model has acquired (by ``member_id``, or by anyone)."""
        out = {}
        for tid, name in self._names.items():
            for p in range(dict(self.scenario.topics)[name]):
                share = self.model.share_partition(GROUP_ID, tid, p)
                if share is None:
                    continue
                for offset, rec in share.in_flight().items():
                    if rec.state is RecordState.ACQUIRED and (member_id is None or rec.member_id == member_id):
                        out[(TopicPartition(name, p), offset)] = rec.member_id or ""
        return out

    def _state(self, tp: TopicPartition, offset: int) -> tuple[RecordState | None, str | None, int | None]:
        share = self.model.share_partition(GROUP_ID, topic_id(tp.topic), tp.partition)
        if share is None:
            return None, None, None
        rec = share.record(offset)
        if rec is None:
            return None, None, None
        return rec.state, rec.member_id, rec.lock_deadline_ms

    def settle(self, who: str, member_id: str, acks: dict[TopicPartition, list[tuple[int, int]]],
               held: dict[tuple[TopicPartition, int], str], errors: dict[TopicPartition, int]) -> None:
        """After the model answered ``who``'s request: its acknowledgements (``errors``: by partition) and its close."""
        for tp, offsets in acks.items():
            for offset, kind in offsets:
                state, _holder, deadline = self._state(tp, offset)
                self.checker.settled(who, member_id, tp, offset, kind, not errors.get(tp, 0), state, deadline)
        acked = {(tp, o) for tp, offsets in acks.items() for o, _ in offsets}
        for (tp, offset) in held:
            if (tp, offset) not in acked:
                state, _, deadline = self._state(tp, offset)
                self.checker.settled(who, member_id, tp, offset, None, True, state, deadline)

    def expired(self, before: dict[tuple[TopicPartition, int], str]) -> None:
        for (tp, offset) in before:
            state, _, _ = self._state(tp, offset)
            if state is not RecordState.ACQUIRED:
                self.checker.expired(tp, offset, state)

    def produce(self) -> None:
        tp = self._rng.choice(sorted(self.log_end))
        count = self._rng.randint(1, 5)
        self.model.produce(topic_id(tp.topic), tp.partition, count)
        self.log_end[tp] += count

    # ---- members and faults
    def _start(self, index: int) -> _ShareIncarnation:
        spec = self.members[index]
        self._count[spec.name] = self._count.get(spec.name, 0) + 1
        inc = _ShareIncarnation(self, spec, self._count[spec.name])
        self.trace(f"{inc.name}: start ({spec.mode})")
        self.incarnations.append(inc)
        return inc

    def _current(self, index: int) -> _ShareIncarnation | None:
        name = self.members[index].name
        live = [i for i in self.incarnations if i.spec.name == name and i.alive and not i.stopping]
        return live[-1] if live else None

    def _fault(self, fault: ShareFault) -> None:
        self.faults += 1
        index = fault.member % len(self.members)
        inc = self._current(index)
        self.trace(f"fault {fault.kind} m{index} ({fault.arg:.2f})")
        if fault.kind == "crash" and inc is not None:
            inc.crash()
            self.scheduler.call_later(0.5 + 3 * fault.arg, lambda: self._restart(index))
        elif fault.kind == "close" and inc is not None:
            inc.stopping = True
            self.scheduler.call_later(1.0 + 3 * fault.arg, lambda: self._restart(index))
        elif fault.kind == "join":
            spec = self.members[index]
            self.members.append(attrs.evolve(spec, name=f"j{len(self.members)}"))
            self._start(len(self.members) - 1)
        elif fault.kind == "lose":
            self.loss = 0.3 + 0.5 * fault.arg
            self.scheduler.call_later(1.0 + 2 * fault.arg, self._unlose)
        elif fault.kind == "slow":
            self.slow = 0.2 + fault.arg
            self.scheduler.call_later(1.0 + 3 * fault.arg, self._unslow)

    def _unlose(self) -> None:
        self.loss = 0.0

    def _unslow(self) -> None:
        self.slow = 0.0

    def _restart(self, index: int) -> None:
        if self._current(index) is None and self.scheduler.now < self.scenario.fault_end_s + 5:
            self._start(index)

    def _done(self) -> bool:
        return all(
            (share := self.model.share_partition(GROUP_ID, topic_id(tp.topic), tp.partition)) is not None
            and share.start_offset >= end
            for tp, end in self.log_end.items() if end
        )

    def _stale(self, tp: TopicPartition) -> bool:
        """Only members that lost the answer with their assignment are assigned ``tp`` (and do not know it)."""
        tid = topic_id(tp.topic)
        holders = [m for m, (_, assigned) in self.model.members(GROUP_ID).items()
                   if tp.partition in assigned.get(tid, frozenset())]
        live = {i.consumer.member_id: i for i in self.incarnations if i.alive}
        stale = bool(holders) and all(
            m in self.stale and m in live and tp not in live[m].consumer.assignment() for m in holders)
        if stale:
            self.trace(f"{tp}: assigned only to members that lost the heartbeat answer with it; not checked")
        return stale

    def run(self) -> RunResult:
        scenario = self.scenario
        scheduler = self.scheduler
        for i in range(len(scenario.members)):
            self._start(i)
        t = 0.2
        while t < scenario.fault_end_s:
            scheduler.call_at(t, self.produce)
            t += scenario.produce_every_s
        for fault in scenario.faults:
            scheduler.call_at(fault.at, lambda f=fault: self._fault(f))  # type: ignore[misc]
        try:
            scheduler.run_until(scenario.fault_end_s, stop=lambda: bool(self.checker.violations))
            end = scenario.fault_end_s + scenario.quiet_s
            while scheduler.now < end and not self.checker.violations and not self._done():
                scheduler.run_until(min(end, scheduler.now + 1.0), stop=lambda: bool(self.checker.violations))
            if not self.checker.violations:
                self.checker.check_end(self.model, {tp: e for tp, e in self.log_end.items() if not self._stale(tp)})
            for inc in self.incarnations:
                inc.stopping = True
            scheduler.run_until(scheduler.now + 3 * scenario.request_timeout_ms / 1000,
                                stop=lambda: not any(i.alive for i in self.incarnations))
        finally:
            scheduler.shutdown()
        epochs = self.model.group_epoch(GROUP_ID) if self.model.group_state(GROUP_ID) != "dead" else 0
        return RunResult(
            seed=scenario.seed, violations=list(self.checker.violations), rebalances=epochs,
            faults=self.faults, trace=self._trace[-self._trace_limit:], records=self.checker.handed,
            commits=self.checker.acknowledged, duplicates=sum(max(0, c - 1) for c in self.checker.deliveries.values()),
            virtual_s=scheduler.now, switches=scheduler.switches,
        )


def run_share_seed(seed: int) -> RunResult:
    """Run the share-group scenario of ``seed`` (``share_scenario_for``)."""
    return ShareSimulation(share_scenario_for(seed)).run()
