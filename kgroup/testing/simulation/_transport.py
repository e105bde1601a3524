"""A simulated member's ports: its ``Transport``, ``RecordFetcher``, mailbox and runtime.

The consumer under test is the production ``kgroup.Consumer`` with these swapped in:

* ``SimTransport`` sends group requests over the member's :class:`Connection` to the
  coordinator model and completes ``concurrent.futures.Future``s on the scheduler, as
  kafka-python's IO thread would;
* ``SimFetcher`` fetches from the in-memory partition logs with a round trip per fetch;
* ``SimMailbox`` blocks through the scheduler instead of a condition variable;
* ``SimRuntime`` gives the consumer that mailbox and, instead of starting the group thread,
  registers the thread's loop body (``GroupThread.step``) as a scheduler pump.
"""

from __future__ import annotations

import concurrent.futures
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from kgroup._driver.group_thread import GroupThread
from kgroup._driver.mailbox import Mailbox
from kgroup._error_codes import NONE, error_name
from kgroup._io.transport import (
    OffsetFetchResult,
    commit_results,
    fetch_result,
)
from kgroup.errors import KGroupError
from kgroup.membership import commands as cmd
from kgroup.membership import events as ev
from kgroup.membership.commands import SendFindCoordinator
from kgroup.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from kgroup.protocol.group_api import DescribeGroupsRequest, OffsetCommitRequest, OffsetFetchRequest
from kgroup.testing.simulation._cluster import (
    Connection,
    SimCluster,
    _Pending,
    fail_future,
    request_of,
    topic_id,
)
from kgroup.testing.simulation._scheduler import Scheduler
from kgroup.types import ConsumerRecord, Generation, PartitionInfo, TopicPartition

__all__ = ["SimFetcher", "SimMailbox", "SimRuntime", "SimTransport"]


class SimMailbox(Mailbox):
    """The mailbox, blocking on the scheduler's baton instead of a condition variable."""

    def __init__(self, scheduler: Scheduler) -> None:
        super().__init__()
        self._scheduler = scheduler

    def wait_until(self, ready: Callable[[], bool], timeout_s: float) -> bool:
        """Give the baton back until ``ready()`` or ``timeout_s`` virtual seconds."""
        return self._scheduler.block(ready, timeout_s)


class SimRuntime:
    """The consumer's runtime in a simulation: a ``SimMailbox`` and a pumped group thread.

    The poll loop's fetch waits are not sliced: the simulated fetcher returns as soon as a
    step or an error is posted to the mailbox, which is what production's 20 ms slices
    approximate.
    """

    fetch_slice_ms = 3_600_000

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler
        self.group: GroupThread | None = None
        #: the process died: no group thread of it runs any more
        self.stopped = False
        self._pumps: dict[GroupThread, _GroupPump] = {}

    def mailbox(self) -> Mailbox:
        """A mailbox that blocks on the scheduler."""
        return SimMailbox(self._scheduler)

    def start(self, group: GroupThread) -> None:
        """Register the group thread's loop body with the scheduler instead of a thread."""
        self.group = group
        self._pumps[group] = _GroupPump(self, group, self._scheduler)
        self._scheduler.pumps.append(self._pumps[group])

    def stop(self, group: GroupThread, timeout_s: float) -> None:
        """Stop pumping this group thread (the consumer closed or unsubscribed)."""
        pump = self._pumps.pop(group, None)
        if pump is not None:
            pump.stopped = True


class _GroupPump:
    """Runs ``GroupThread.step`` for posted items and at the machine's deadlines."""

    def __init__(self, runtime: SimRuntime, group: GroupThread, scheduler: Scheduler) -> None:
        self._runtime = runtime
        self._group = group
        self._scheduler = scheduler
        self._alive = True
        self.stopped = False
        self._due = scheduler.now  # the first step runs at once

    def _step(self, item: object) -> None:
        self._alive = self._group.step(item)
        if not self._alive:
            self._due = float("inf")
            return
        due = self._group.next_deadline()
        if self._scheduler.now < due < float("inf"):
            due += self._scheduler.lateness()  # an OS thread wakes a little late at its deadline
        self._due = due

    def pump(self) -> bool:
        if not self._alive or self.stopped or self._runtime.stopped:
            return False
        group = self._group
        worked = False
        if group.has_pending():
            for item in group.take_pending():
                worked = True
                self._step(item)
                if not self._alive:
                    return True
        if self._due <= self._scheduler.now:
            worked = True
            self._step(None)
        return worked

    def deadline(self) -> float:
        if not self._alive or self.stopped or self._runtime.stopped:
            return float("inf")
        return self._due


class SimTransport:
    """kgroup's ``Transport`` for one simulated member (futures complete on the scheduler)."""

    def __init__(self, cluster: SimCluster, owner: str, client_id: str) -> None:
        self._cluster = cluster
        self.owner = owner
        self._client_id = client_id
        self._connection: Connection | None = None
        self._fetcher = SimFetcher(cluster, self)
        self.dead = False
        #: partitions the application commits while it does not own them (set for that call; the
        #: checker's business: kgroup must refuse the commit before sending anything)
        self.forbidden: frozenset[TopicPartition] = frozenset()
        #: a hook told of every OffsetCommit the member sends: its generation and partitions
        self.on_commit_sent: Callable[[Generation, frozenset[TopicPartition]], None] | None = None

    def _conn(self) -> Connection:
        if self._connection is None or not self._connection.open:
            self._connection = Connection(self._cluster, self.owner)
        return self._connection

    def disconnect(self, reason: str) -> None:
        """Close the coordinator connection (a fault, or the process dying)."""
        if self._connection is not None:
            self._connection.close(reason)

    def _send(
        self, api: str, node: int, request: Any, timeout_ms: int,
        answer: Callable[[Any], None], fail: Callable[[str], None],
    ) -> None:
        if self.dead:
            return
        cluster = self._cluster

        def run(reply: Callable[[Any], None]) -> None:
            cluster.run_request(self.owner, node, api, request, reply)

        self._conn().send(_Pending(api, run, answer, fail, timeout_ms / 1000, cluster.scheduler.now))

    # ------------------------------------------------------------------ group requests
    def send(self, command: cmd.SendGroupRequest, group_id: str) -> concurrent.futures.Future[ev.Event]:
        """A group request; the future yields its response event (``RequestFailed`` on failure)."""
        future: concurrent.futures.Future[ev.Event] = concurrent.futures.Future()
        cluster = self._cluster
        if self.dead:
            return future
        if isinstance(command, SendFindCoordinator):

            def found() -> None:
                if not self.dead:
                    code, node = cluster.find_coordinator()
                    future.set_result(
                        ev.FindCoordinatorResponded(
                            request_id=command.request_id, error_code=code, node_id=node, host="sim", port=node
                        )
                    )

            cluster.scheduler.call_later(2 * cluster.latency(), found)
            return future
        api, request = request_of(command, self._client_id)
        trace = cluster.trace

        def answer(response: Any) -> None:
            event = ev.responded(command.request_id, response)
            trace(f"{self.owner}: {api} <- {_brief(event)}")
            if isinstance(event, ev.SyncGroupResponded) and event.error_code == 0 and cluster.on_sync is not None:
                # what the member received (a lost response assigns it nothing)
                cluster.on_sync(self.owner, request.generation_id, request.member_id, event.assignment)
            future.set_result(event)

        def fail(reason: str) -> None:
            trace(f"{self.owner}: {api} failed: {reason}")
            future.set_result(ev.RequestFailed(command.request_id, reason))

        if api != "Heartbeat":
            trace(f"{self.owner}: {api} -> node {command.node_id} gen {getattr(command, 'generation_id', '')}")
        self._send(api, command.node_id, request, command.timeout_ms, answer, fail)
        return future

    # ------------------------------------------------------------------ the consumer protocol (KIP-848)
    def consumer_group_heartbeat(
        self, command: cmd.SendConsumerGroupHeartbeat
    ) -> concurrent.futures.Future[ev.ConsumerGroupHeartbeatResponded | ev.RequestFailed]:
        """ConsumerGroupHeartbeat on the coordinator connection (``ConsumerGroupTransport``)."""
        future: concurrent.futures.Future[ev.ConsumerGroupHeartbeatResponded | ev.RequestFailed]
        future = concurrent.futures.Future()
        if self.dead:
            return future
        cluster = self._cluster
        fields = {f.name for f in attrs.fields(ConsumerGroupHeartbeatRequest)}
        request = ConsumerGroupHeartbeatRequest(**{name: getattr(command, name) for name in fields})
        trace = cluster.trace
        owned = "-" if request.topic_partitions is None else sum(len(t.partitions) for t in request.topic_partitions)
        trace(f"{self.owner}: ConsumerGroupHeartbeat -> epoch {request.member_epoch} owned {owned}")

        def answer(response: Any) -> None:
            parts = "-" if response.assignment is None else sorted(
                f"{self._names.get(t.topic_id, t.topic_id)}-{p}" for t in response.assignment for p in t.partitions
            )
            trace(f"{self.owner}: ConsumerGroupHeartbeat <- {response.error_code} "
                  f"epoch {response.member_epoch} {parts}")
            if cluster.on_heartbeat is not None:
                cluster.on_heartbeat(self.owner, request, response)
            values = attrs.asdict(response, recurse=False)
            future.set_result(ev.ConsumerGroupHeartbeatResponded(request_id=command.request_id, **values))

        def fail(reason: str) -> None:
            trace(f"{self.owner}: ConsumerGroupHeartbeat failed: {reason}")
            future.set_result(ev.RequestFailed(request_id=command.request_id, reason=reason))

        self._send("ConsumerGroupHeartbeat", command.node_id, request, command.timeout_ms, answer, fail)
        return future

    @property
    def _names(self) -> dict[uuid.UUID, str]:
        return {topic_id(t): t for t in self._cluster.topics}

    def topic_ids(self, timeout_ms: int) -> concurrent.futures.Future[dict[uuid.UUID, str]]:
        """Topic id -> name of every topic of the simulated cluster (Metadata v10+)."""
        return self._later(lambda: dict(self._names))

    def describe_group_configs(
        self, group_id: str, names: Iterable[str], timeout_ms: int
    ) -> concurrent.futures.Future[dict[str, str | None]]:
        """DescribeConfigs of the group's configs at any node: the consumer-group model's session timeout.

        Fails as the cluster says (``describe_configs_error``: every request; ``describe_configs_loss``:
        some go unanswered, failing at ``timeout_ms``), with draws from the cluster's ``config_rng``.
        """
        future: concurrent.futures.Future[dict[str, str | None]] = concurrent.futures.Future()
        if self.dead:
            return future
        cluster = self._cluster
        rng = cluster.config_rng
        wanted = tuple(names)
        lost = cluster.faults.enabled and rng.random() < cluster.describe_configs_loss
        delay = timeout_ms / 1000 if lost else rng.uniform(0.001, 0.006)

        def complete() -> None:
            if self.dead:
                return
            code = cluster.describe_configs_error
            config = cluster.consumer_group_config
            if lost:
                cluster.trace(f"{self.owner}: DescribeConfigs failed: timed out")
                future.set_exception(TimeoutError(f"DescribeConfigs timed out after {timeout_ms} ms"))
            elif code != NONE:
                cluster.trace(f"{self.owner}: DescribeConfigs <- {error_name(code)}")
                future.set_exception(KGroupError(f"DescribeConfigs returned {error_name(code)}"))
            else:
                values = {} if config is None else {"consumer.session.timeout.ms": str(config.session_timeout_ms)}
                answer: dict[str, str | None] = {n: values[n] for n in wanted if n in values}
                cluster.trace(f"{self.owner}: DescribeConfigs <- {answer}")
                future.set_result(answer)

        cluster.scheduler.call_later(delay, complete)
        return future

    def describe_topics(
        self, topics: Iterable[str], timeout_ms: int
    ) -> concurrent.futures.Future[dict[str, tuple[PartitionInfo, ...]]]:
        """Partitions of ``topics`` (a Metadata request to any node)."""
        wanted = set(topics)

        def answer() -> dict[str, tuple[PartitionInfo, ...]]:
            return {
                t: tuple(PartitionInfo(p, 1) for p in range(n)) for t, n in self._cluster.topics.items() if t in wanted
            }

        return self._later(answer)

    def list_offsets(
        self, partitions: Iterable[TopicPartition], spec: str, timeout_ms: int
    ) -> concurrent.futures.Future[dict[TopicPartition, int]]:
        """Earliest (0) or latest (log end) offsets."""
        parts = list(partitions)
        return self._later(lambda: {tp: 0 if spec == "earliest" else self._cluster.log_end.get(tp, 0) for tp in parts})

    def list_topics(
        self, timeout_ms: int, *, exclude_internal: bool | None = None
    ) -> concurrent.futures.Future[frozenset[str]]:
        """The simulated cluster's topics (it has no internal ones)."""
        return self._later(lambda: frozenset(self._cluster.topics))

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int], timeout_ms: int
    ) -> concurrent.futures.Future[dict[TopicPartition, tuple[int, int]]]:
        """Simulated records carry no timestamp: no partition has a record that late."""
        return self._later(dict)

    def _later(self, value: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def complete() -> None:
            if not self.dead:
                future.set_result(value())

        self._cluster.scheduler.call_later(2 * self._cluster.latency(), complete)
        return future

    def offset_commit(
        self, request: OffsetCommitRequest, node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[dict[TopicPartition, int]]:
        """OffsetCommit v9 on the coordinator connection."""
        future: concurrent.futures.Future[dict[TopicPartition, int]] = concurrent.futures.Future()
        generation = Generation(request.generation_id, request.member_id)
        offsets = {TopicPartition(t.name, p.partition_index): p.committed_offset
                   for t in request.topics for p in t.partitions}
        if self.on_commit_sent is not None:
            self.on_commit_sent(generation, frozenset(offsets))

        trace = self._cluster.trace
        brief = ", ".join(f"{tp}={offset}" for tp, offset in sorted(offsets.items()))
        trace(f"{self.owner}: OffsetCommit -> gen {generation.generation_id} {brief}")

        def answer(response: Any) -> None:
            codes = commit_results(response)
            trace(f"{self.owner}: OffsetCommit <- {sorted(set(codes.values()))}")
            future.set_result(codes)

        self._send("OffsetCommit", node_id, request, timeout_ms, answer, lambda r: fail_future(future, r))
        return future

    def offset_fetch(
        self, request: OffsetFetchRequest, node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[OffsetFetchResult]:
        """OffsetFetch v9 on the coordinator connection (with the member's id and epoch, KIP-848)."""
        future: concurrent.futures.Future[OffsetFetchResult] = concurrent.futures.Future()

        def answer(response: Any) -> None:
            result = fetch_result(response)
            self._cluster.trace(
                f"{self.owner}: OffsetFetch <- {response.error_code} "
                + ", ".join(f"{tp}={c.offset}" for tp, c in sorted(result.partitions.items()))
            )
            future.set_result(result)

        self._send("OffsetFetch", node_id, request, timeout_ms, answer, lambda r: fail_future(future, r))
        return future

    def offset_fetch_all(self, group_id: str, node_id: int, timeout_ms: int) -> Any:
        """Not used by the consumer."""
        raise NotImplementedError

    def describe_groups(self, group_ids: Iterable[str], node_id: int, timeout_ms: int) -> Any:
        """DescribeGroups on the coordinator connection (a returning static leader's ownership check)."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        request = DescribeGroupsRequest(groups=tuple(dict.fromkeys(group_ids)))

        def answer(response: Any) -> None:
            self._cluster.trace(
                f"{self.owner}: DescribeGroups <- "
                + ", ".join(f"{g.error_code} {g.group_state} {len(g.members)} members" for g in response.groups)
            )
            future.set_result(response.groups)

        self._send("DescribeGroups", node_id, request, timeout_ms, answer, lambda r: fail_future(future, r))
        return future

    def leave_group_members(self, *args: Any) -> Any:
        """Not used by the consumer."""
        raise NotImplementedError

    def fetcher(self) -> SimFetcher:
        """The member's record fetcher."""
        return self._fetcher

    def close(self) -> None:
        """Close the coordinator connection."""
        self.disconnect("transport closed")


def _brief(event: Any) -> str:
    """A short trace form of a response event."""
    code = getattr(event, "error_code", 0)
    if isinstance(event, ev.JoinGroupResponded) and code == 0:
        return f"gen {event.generation_id} {event.member_id} leader={event.leader == event.member_id}"
    if isinstance(event, ev.HeartbeatResponded) and code == 0:
        return "ok"
    return f"{type(event).__name__}({code})"


class SimFetcher:
    """kgroup's ``RecordFetcher`` over the in-memory logs: a round trip per fetch, then records."""

    def __init__(self, cluster: SimCluster, transport: SimTransport) -> None:
        self._cluster = cluster
        self._transport = transport
        self._assigned: frozenset[TopicPartition] = frozenset()
        self._positions: dict[TopicPartition, int] = {}
        self._paused: set[TopicPartition] = set()
        self._woken = False
        self._rotate = 0
        self.mailbox: Mailbox | None = None
        self._fetchable_key: object = None
        self._fetchable_cache: list[TopicPartition] = []

    def assign(self, partitions: frozenset[TopicPartition]) -> None:
        self._fetchable_key = None
        self._assigned = frozenset(partitions)
        self._positions = {tp: p for tp, p in self._positions.items() if tp in partitions}
        self._paused &= set(partitions)

    def seek(self, tp: TopicPartition, offset: int, leader_epoch: int | None = None) -> None:
        self._positions[tp] = offset

    def request_reset(self, tp: TopicPartition, strategy: str) -> None:
        self._positions[tp] = 0 if strategy == "earliest" else self._cluster.log_end.get(tp, 0)

    def position(self, tp: TopicPartition) -> int | None:
        return self._positions.get(tp)

    def highwater(self, tp: TopicPartition) -> int | None:
        # the simulated log has no replication lag: its end is the high watermark
        return self._cluster.log_end.get(tp) if tp in self._assigned else None

    def has_position(self, tp: TopicPartition) -> bool:
        return tp in self._positions

    def pause(self, tp: TopicPartition) -> None:
        self._paused.add(tp)
        self._fetchable_key = None

    def resume(self, tp: TopicPartition) -> None:
        self._paused.discard(tp)
        self._fetchable_key = None

    def _fetchable(self) -> list[TopicPartition]:
        key = (self._assigned, len(self._positions), len(self._paused))
        if key != self._fetchable_key:
            positions, paused = self._positions, self._paused
            self._fetchable_cache = sorted(tp for tp in self._assigned if tp not in paused and tp in positions)
            self._fetchable_key = key
        return self._fetchable_cache

    def _available(self) -> bool:
        log_end = self._cluster.log_end
        return any(self._positions[tp] < log_end.get(tp, 0) for tp in self._fetchable())

    def _stirred(self) -> bool:
        mailbox = self.mailbox
        return self._woken or (mailbox is not None and (mailbox.woken or mailbox.has_items()))

    def fetch(self, max_records: int, timeout_ms: int) -> list[ConsumerRecord]:
        """Up to ``max_records`` records after a fetch round trip, waiting up to ``timeout_ms``.

        Returns early, empty, when a step or error is posted to the mailbox or on ``wakeup()``.
        """
        sched = self._cluster.scheduler
        if not self._available():
            sched.block(lambda: self._stirred() or self._available(), timeout_ms / 1000)
            if not self._available():
                self._woken = False
                return []
        sched.block(lambda: False, 2 * self._cluster.latency())  # the fetch round trip
        self._woken = False
        out: list[ConsumerRecord] = []
        parts = self._fetchable()
        if not parts:
            return out
        self._rotate = (self._rotate + 1) % len(parts)
        log_end = self._cluster.log_end
        for tp in parts[self._rotate:] + parts[: self._rotate]:
            start = self._positions[tp]
            end = min(log_end.get(tp, 0), start + max_records - len(out))
            for offset in range(start, end):
                out.append(ConsumerRecord(tp.topic, tp.partition, offset, None, b"%d" % offset))
            self._positions[tp] = max(start, end)
            if len(out) >= max_records:
                break
        return out

    def idle(self) -> bool:
        return False

    def fetch_until(self, tp: TopicPartition, end_offset: int | None) -> None:
        """Not used by the simulated members (a bounded reader's call: ``kgroup.spark``)."""
        raise NotImplementedError("the simulator's fetcher serves Consumer members only")

    def reusable(self) -> bool:
        """Never: the simulator does not pool transports."""
        return False

    def close_sessions(self, timeout_ms: int) -> None:
        """No fetch sessions in the simulated cluster (its fetches are not Fetch requests)."""

    def missing_topics(self) -> frozenset[str]:
        topics = self._cluster.topics
        return frozenset(tp.topic for tp in self._assigned if tp.topic not in topics)

    def wakeup(self) -> None:
        self._woken = True
