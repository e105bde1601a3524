"""The simulated cluster: Kafka's group coordinator model, partition logs and a faulty network.

Rules:

1. The coordinator is :class:`~kgroup.testing.coordinator.GroupCoordinatorModel`, the same
   model the coordinator proxy serves on the wire, on the scheduler's virtual clock.
2. Each member has one coordinator connection with Kafka's channel muting: the broker reads
   the next request of a connection only after it answered the previous one (a parked
   JoinGroup holds the member's commits behind it, as on a real broker). A request that
   outlives its client timeout closes the connection: every request in flight on it fails,
   and the ones the broker had not read yet never reach it.
3. Faults are drawn from the run's random generator in a fixed order, so a seed replays
   exactly: an injected error code instead of the model's answer, a lost response, a delayed
   response, a closed connection, a black hole, a coordinator move or restart, a stretch of
   slow answers (every response delayed) overlapping a black hole while fetches go on.
4. Strings longer than Kafka's 32,767-byte limit make the broker close the connection, as
   Kafka's generated request readers do ("string field ... had invalid length").
5. With ``group_protocol="consumer"`` the group's coordinator is
   :class:`~kgroup.testing.coordinator.ConsumerGroupModel` (KIP-848): ConsumerGroupHeartbeat,
   OffsetCommit and OffsetFetch go to it; topics have ids (a UUID derived from the name).
"""

from __future__ import annotations

import concurrent.futures
import itertools
import random
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from kgroup import _error_codes as codes
from kgroup.protocol import group_api as mt
from kgroup.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse
from kgroup.testing._model_wire import error_responses
from kgroup.testing.coordinator import ConsumerGroupConfig, ConsumerGroupModel, CoordinatorConfig, GroupCoordinatorModel
from kgroup.testing.simulation._scheduler import Scheduler, SimClock
from kgroup.types import TopicPartition

__all__ = ["API_ERRORS", "CLOSE", "Connection", "FaultProfile", "SimCluster", "topic_id"]

#: Kafka's limit for a protocol string (int16 length prefix)
MAX_STRING_BYTES = 0x7FFF

#: error codes a coordinator can answer per API (plus UNKNOWN_SERVER_ERROR and an unknown code,
#: 9999), from Kafka's classic group coordinator and OffsetMetadataManager
_UNKNOWN_CODE = 9999
API_ERRORS: Mapping[str, tuple[int, ...]] = {
    "FindCoordinator": (codes.COORDINATOR_NOT_AVAILABLE, codes.UNKNOWN_SERVER_ERROR),
    "DescribeGroups": (codes.COORDINATOR_LOAD_IN_PROGRESS, codes.COORDINATOR_NOT_AVAILABLE, codes.NOT_COORDINATOR),
    "JoinGroup": (
        codes.COORDINATOR_LOAD_IN_PROGRESS, codes.COORDINATOR_NOT_AVAILABLE, codes.NOT_COORDINATOR,
        codes.UNKNOWN_MEMBER_ID, codes.REBALANCE_IN_PROGRESS,
    ),
    "SyncGroup": (
        codes.COORDINATOR_NOT_AVAILABLE, codes.NOT_COORDINATOR, codes.ILLEGAL_GENERATION,
        codes.UNKNOWN_MEMBER_ID, codes.REBALANCE_IN_PROGRESS,
    ),
    "Heartbeat": (
        codes.COORDINATOR_NOT_AVAILABLE, codes.NOT_COORDINATOR, codes.ILLEGAL_GENERATION,
        codes.UNKNOWN_MEMBER_ID, codes.REBALANCE_IN_PROGRESS, codes.UNKNOWN_SERVER_ERROR, _UNKNOWN_CODE,
    ),
    "LeaveGroup": (
        codes.COORDINATOR_NOT_AVAILABLE, codes.NOT_COORDINATOR, codes.UNKNOWN_MEMBER_ID, codes.UNKNOWN_SERVER_ERROR,
    ),
    "OffsetCommit": (
        codes.UNKNOWN_TOPIC_OR_PARTITION, codes.REQUEST_TIMED_OUT, codes.OFFSET_METADATA_TOO_LARGE,
        codes.COORDINATOR_LOAD_IN_PROGRESS, codes.COORDINATOR_NOT_AVAILABLE, codes.NOT_COORDINATOR,
        codes.ILLEGAL_GENERATION, codes.UNKNOWN_MEMBER_ID, codes.REBALANCE_IN_PROGRESS, codes.GROUP_ID_NOT_FOUND,
        codes.UNKNOWN_SERVER_ERROR, _UNKNOWN_CODE,
    ),
    "OffsetFetch": (
        codes.COORDINATOR_LOAD_IN_PROGRESS, codes.COORDINATOR_NOT_AVAILABLE, codes.NOT_COORDINATOR,
        codes.UNKNOWN_SERVER_ERROR, _UNKNOWN_CODE,
    ),
    # the codes Kafka's consumer-group coordinator answers a heartbeat with that a member survives
    # (an unexpected code is fatal to Java's client and kgroup's, as a fatal fault is)
    "ConsumerGroupHeartbeat": (
        codes.COORDINATOR_LOAD_IN_PROGRESS, codes.COORDINATOR_NOT_AVAILABLE, codes.NOT_COORDINATOR,
        codes.FENCED_MEMBER_EPOCH, codes.UNKNOWN_MEMBER_ID,
    ),
}
#: codes that stop a member for good when injected (FATAL per the Java handlers)
FATAL_ERRORS: Mapping[str, tuple[int, ...]] = {
    "JoinGroup": (
        codes.INCONSISTENT_GROUP_PROTOCOL, codes.INVALID_SESSION_TIMEOUT, codes.GROUP_AUTHORIZATION_FAILED,
        codes.GROUP_MAX_SIZE_REACHED,
    ),
    "SyncGroup": (codes.GROUP_AUTHORIZATION_FAILED,),
    "Heartbeat": (codes.GROUP_AUTHORIZATION_FAILED,),
    "OffsetCommit": (codes.GROUP_AUTHORIZATION_FAILED,),
    "ConsumerGroupHeartbeat": (codes.GROUP_AUTHORIZATION_FAILED,),
}


@attrs.define
class FaultProfile:
    """Per-request fault probabilities (0 to 1) and the on/off switch."""

    error: float = 0.0
    fatal: float = 0.0
    drop: float = 0.0
    delay: float = 0.0
    max_delay_s: float = 2.0
    enabled: bool = True


@attrs.frozen(eq=False)
class _Pending:
    """One request on a connection: how to run it at the broker and how to answer the client."""

    api: str
    run: Callable[[Callable[[Any], None]], None]
    answer: Callable[[Any], None]
    fail: Callable[[str], None]
    timeout_s: float
    sent_at: float


class Connection:
    """A member's coordinator connection: FIFO, one request at a time at the broker (muting)."""

    def __init__(self, cluster: SimCluster, owner: str) -> None:
        self.id = next(cluster.connection_ids)
        self._cluster = cluster
        self.owner = owner
        self._queue: list[_Pending] = []
        self._busy = False
        self._open = True
        self._in_flight: list[_Pending] = []
        self._last_reply_at = 0.0
        self._last_arrival = 0.0

    @property
    def open(self) -> bool:
        """False once closed (a timeout, a fault or the member's crash)."""
        return self._open

    def send(self, pending: _Pending) -> None:
        """Queue ``pending``; arm its client-side timeout."""
        sched = self._cluster.scheduler
        self._in_flight.append(pending)
        sched.call_later(pending.timeout_s, lambda: self._timed_out(pending))
        # TCP: requests reach the broker in the order they were sent
        at = max(sched.now + self._cluster.latency(), self._last_arrival)
        self._last_arrival = at
        sched.call_at(at, lambda: self._arrive(pending))

    def _arrive(self, pending: _Pending) -> None:
        if not self._open:
            return
        self._queue.append(pending)
        self._next()

    def _next(self) -> None:
        if self._busy or not self._queue or not self._open:
            return
        pending = self._queue.pop(0)
        self._busy = True
        pending.run(lambda response: self._reply(pending, response))

    def _reply(self, pending: _Pending, response: Any) -> None:
        """The broker answered (``None``: the response is lost on the way)."""
        if not self._open:
            return
        if response is CLOSE:
            self.close(f"the broker could not read {pending.api} (a string over {MAX_STRING_BYTES} bytes)")
            return
        sched = self._cluster.scheduler
        cluster = self._cluster
        delay = cluster.latency()
        if response is not None and cluster.draw("delay"):
            delay += cluster.rng.uniform(0.0, cluster.faults.max_delay_s)
        if response is not None and sched.now < cluster.slow_answers_until:
            # a slow coordinator: its answers trail behind, into the black hole that follows
            delay += cluster.rng.uniform(0.0, cluster.slow_answers_s)
        # muting: the next request is read once this response is on the wire
        at = max(sched.now + delay, self._last_reply_at)
        self._last_reply_at = at

        def unmute() -> None:
            self._busy = False
            self._next()

        sched.call_at(at, unmute)
        if response is None:
            cluster.trace(f"{self.owner}: {pending.api} response lost")
            return

        def deliver() -> None:
            if self._open and pending in self._in_flight:
                self._in_flight.remove(pending)
                pending.answer(response)

        sched.call_at(at, deliver)

    def _timed_out(self, pending: _Pending) -> None:
        if pending in self._in_flight and self._open:
            self.close(f"{pending.api} timed out after {pending.timeout_s:.1f} s")

    def close(self, reason: str) -> None:
        """Close: every request in flight fails; unread ones never reach the broker."""
        if not self._open:
            return
        self._open = False
        self._cluster.trace(f"{self.owner}: connection {self.id} closed: {reason}")
        failed, self._in_flight, self._queue = self._in_flight, [], []
        for pending in failed:
            pending.fail(reason)


class SimCluster:
    """The coordinator model, partition logs, node ids and faults of one simulated cluster.

    Args:
        scheduler: the virtual clock and callbacks.
        rng: the run's random generator (faults, latency).
        topics: topic name -> partition count.
        coordinator_config: the model's broker configs.
        trace: where trace lines go.

    """

    def __init__(
        self,
        scheduler: Scheduler,
        rng: random.Random,
        topics: Mapping[str, int],
        coordinator_config: CoordinatorConfig,
        trace: Callable[[str], None],
        consumer_group_config: ConsumerGroupConfig | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.clock = SimClock(scheduler)
        self.rng = rng
        self.trace = trace
        self.topics: dict[str, int] = dict(topics)
        self.log_end: dict[TopicPartition, int] = {
            TopicPartition(t, p): 0 for t, n in self.topics.items() for p in range(n)
        }
        ids = itertools.count(1)
        self.model = GroupCoordinatorModel(
            coordinator_config,
            clock=self.clock,
            partition_exists=lambda topic, partition: TopicPartition(topic, partition) in self.log_end,
            member_id_factory=lambda prefix: f"{prefix}-{next(ids)}",
        )
        #: "consumer": the group runs the consumer protocol (KIP-848) against ``consumer_model``
        self.group_protocol = "classic" if consumer_group_config is None else "consumer"
        self.consumer_model = ConsumerGroupModel(
            consumer_group_config,
            clock=self.clock,
            topics=lambda: {t: (topic_id(t), n) for t, n in self.topics.items()},
            partition_exists=lambda topic, partition: TopicPartition(topic, partition) in self.log_end,
        )
        #: a hook the run sets: (owner, request, response) of every ConsumerGroupHeartbeat a member received
        self.on_heartbeat: Callable[[str, Any, ConsumerGroupHeartbeatResponse], None] | None = None
        #: the consumer-group model's broker configs (DescribeConfigs answers its session timeout)
        self.consumer_group_config = consumer_group_config
        #: DescribeConfigs of a group's configs: the error code every request gets (0: none, the
        #: value; GROUP_AUTHORIZATION_FAILED: no DESCRIBE_CONFIGS permission), the share of requests
        #: that go unanswered while faults are on, and its own random generator (so that runs
        #: which never send one draw as before)
        self.describe_configs_error = codes.NONE
        self.describe_configs_loss = 0.0
        self.config_rng = random.Random(0)
        self.coordinator_node = 1
        self.faults = FaultProfile()
        self.black_hole_until = 0.0
        #: until then every answer of the coordinator is delayed by up to ``slow_answers_s`` more
        self.slow_answers_until = 0.0
        self.slow_answers_s = 0.0
        #: hooks the invariant checker sets
        self.on_commit: Callable[[str, mt.OffsetCommitRequest, mt.OffsetCommitResponse], None] | None = None
        self.on_sync: Callable[[str, int, str, bytes], None] | None = None
        self.faults_injected = 0
        self.connection_ids = itertools.count(1)
        scheduler.pumps.append(self)

    # ------------------------------------------------------------------ the model's timers
    def _group_model(self) -> GroupCoordinatorModel | ConsumerGroupModel:
        return self.consumer_model if self.group_protocol == "consumer" else self.model

    def pump(self) -> bool:
        """Fire the coordinator model's due timers (session expiry, join and sync timeouts)."""
        model = self._group_model()
        due = model.next_deadline()
        if due is not None and due <= self.scheduler.now:
            model.tick()
            return True
        return False

    def deadline(self) -> float:
        """When the model's next timer is due (inf: none)."""
        due = self._group_model().next_deadline()
        return float("inf") if due is None else due

    # ------------------------------------------------------------------ randomness
    def latency(self) -> float:
        """One network hop, 0.5 to 3 ms."""
        return self.rng.uniform(0.0005, 0.003)

    def draw(self, kind: str) -> bool:
        """Whether a fault of ``kind`` ("error", "fatal", "drop", "delay") hits this request."""
        profile = self.faults
        if not profile.enabled:
            return False
        p: float = getattr(profile, kind)
        if p <= 0.0:
            return False
        hit = self.rng.random() < p
        if hit:
            self.faults_injected += 1
        return hit

    def black_holed(self) -> bool:
        """True while the coordinator answers nothing."""
        return self.scheduler.now < self.black_hole_until

    # ------------------------------------------------------------------ producing
    def produce(self, tp: TopicPartition, count: int = 1) -> None:
        """Append ``count`` records to ``tp``."""
        if tp in self.log_end:
            self.log_end[tp] += count

    def delete_topic(self, topic: str) -> None:
        """Delete ``topic``: its partitions and records are gone (Kafka ``DeleteTopics``)."""
        self.topics.pop(topic, None)
        for tp in [tp for tp in self.log_end if tp.topic == topic]:
            del self.log_end[tp]

    def add_partitions(self, topic: str, total: int) -> None:
        """Grow ``topic`` to ``total`` partitions (Kafka ``CreatePartitions``)."""
        for p in range(self.topics.get(topic, 0), total):
            self.log_end[TopicPartition(topic, p)] = 0
        self.topics[topic] = max(total, self.topics.get(topic, 0))

    # ------------------------------------------------------------------ coordinator moves
    def move_coordinator(self, load_ms: int) -> None:
        """The group's coordinator moves to another node, which loads the group for ``load_ms``."""
        self.coordinator_node = self.coordinator_node % 3 + 1
        self.trace(f"coordinator moved to node {self.coordinator_node} (load {load_ms} ms)")
        self._group_model().restart(load_ms=load_ms)

    def restart_coordinator(self, load_ms: int) -> None:
        """The coordinator's node restarts in place and loads the group for ``load_ms``."""
        self.trace(f"coordinator restarted (load {load_ms} ms)")
        self._group_model().restart(load_ms=load_ms)

    # ------------------------------------------------------------------ broker side
    def run_request(
        self, owner: str, node: int, api: str, request: Any, answer: Callable[[Any], None]
    ) -> None:
        """Process ``request`` at the broker (model, or a fault) and ``answer`` it (None: lost)."""
        if self.black_holed():
            return  # no answer: the client times out
        if api == "ConsumerGroupHeartbeat":
            self._run_heartbeat(owner, node, request, answer)
            return
        if node != self.coordinator_node:
            answer(error_responses((request,), codes.NOT_COORDINATOR)[0])
            return
        if api in ("JoinGroup", "LeaveGroup") and _too_long(request):
            answer(CLOSE)
            return
        fatal = FATAL_ERRORS.get(api, ())
        if fatal and self.draw("fatal"):
            answer(error_responses((request,), self.rng.choice(fatal))[0])
            return
        if self.draw("error"):
            answer(error_responses((request,), self.rng.choice(API_ERRORS[api]))[0])
            return
        lost = self.draw("drop")
        if self.group_protocol == "consumer" and api in _CONSUMER_MODEL_CALLS:
            reply = _CONSUMER_MODEL_CALLS[api](self.consumer_model, request)
        else:
            reply = _MODEL_CALLS[api](self.model, request)

        def done(response: Any) -> None:
            if api == "OffsetCommit" and self.on_commit is not None:
                self.on_commit(owner, request, response)
            answer(None if lost else response)

        reply.add_done_callback(done)

    def _run_heartbeat(self, owner: str, node: int, request: Any, answer: Callable[[Any], None]) -> None:
        """ConsumerGroupHeartbeat at the broker: the consumer-group model, or a fault."""
        if node != self.coordinator_node:
            answer(ConsumerGroupHeartbeatResponse(error_code=codes.NOT_COORDINATOR))
            return
        if self.draw("fatal"):
            answer(ConsumerGroupHeartbeatResponse(
                error_code=self.rng.choice(FATAL_ERRORS["ConsumerGroupHeartbeat"])))
            return
        if self.draw("error"):
            answer(ConsumerGroupHeartbeatResponse(error_code=self.rng.choice(API_ERRORS["ConsumerGroupHeartbeat"])))
            return
        lost = self.draw("drop")
        response = self.consumer_model.heartbeat(request, client_id=owner.split("#")[0]).response
        answer(None if lost else response)

    def find_coordinator(self) -> tuple[int, int]:
        """(error code, node id) of a FindCoordinator answered now."""
        if self.black_holed():
            return 15, -1
        if self.draw("error"):
            return self.rng.choice(API_ERRORS["FindCoordinator"]), -1
        return 0, self.coordinator_node


#: the broker's answer to a request it cannot read: it closes the connection
CLOSE = object()


def _too_long(request: Any) -> bool:
    for value in attrs.astuple(request, recurse=True):
        if isinstance(value, str) and len(value.encode()) > MAX_STRING_BYTES:
            return True
    return False


_MODEL_CALLS: Mapping[str, Callable[[GroupCoordinatorModel, Any], Any]] = {
    "JoinGroup": GroupCoordinatorModel.join_group,
    "SyncGroup": GroupCoordinatorModel.sync_group,
    "Heartbeat": GroupCoordinatorModel.heartbeat,
    "LeaveGroup": GroupCoordinatorModel.leave_group,
    "OffsetCommit": GroupCoordinatorModel.offset_commit,
    "OffsetFetch": GroupCoordinatorModel.offset_fetch,
    "DescribeGroups": GroupCoordinatorModel.describe_groups,
}

_CONSUMER_MODEL_CALLS: Mapping[str, Callable[[ConsumerGroupModel, Any], Any]] = {
    "OffsetCommit": ConsumerGroupModel.offset_commit,
    "OffsetFetch": ConsumerGroupModel.offset_fetch,
}


def topic_id(name: str) -> uuid.UUID:
    """A topic's id in the simulated cluster: derived from its name (a deleted topic is never recreated)."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"kgroup-sim-topic:{name}")


# ---------------------------------------------------------------------- client commands -> model requests


def request_of(command: Any, client_id: str) -> tuple[str, Any]:
    """The API name and the model request of a group command (its request part, as the adapter sends it)."""
    request = mt.value_of(command)
    if isinstance(request, mt.JoinGroupRequest):
        request = attrs.evolve(request, client_id=client_id)
    return mt.API_NAMES[request.API_KEY], request


def fail_future(future: concurrent.futures.Future[Any], reason: str) -> None:
    """Fail a request future as kafka-python does for a closed connection."""
    if not future.done():
        future.set_exception(ConnectionError(reason))
