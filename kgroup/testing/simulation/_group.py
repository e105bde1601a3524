"""``SimulatedGroup``: run *your* consumer code against a simulated group in milliseconds.

Each member runs your application function with a real ``kgroup.Consumer`` (your listener,
your poll loop, your commits) on the simulator's virtual clock, against Kafka's group
coordinator model and in-memory partitions. Faults are yours to place: crash a member, stop
it, restart it, black-hole the coordinator. ``check()`` then verifies the group-level
properties (no record lost, commits only within hand-outs and ownership, never two unfenced
owners, liveness) and raises with the trace when one breaks. See ``docs/simulation.md``.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kgroup import aio
from kgroup.config import ConsumerConfig
from kgroup.consumer import Consumer
from kgroup.testing.coordinator import CoordinatorConfig
from kgroup.testing.simulation._aio import run_coroutine
from kgroup.testing.simulation._cluster import SimCluster
from kgroup.testing.simulation._invariants import Checker, Violation
from kgroup.testing.simulation._run import _as_records
from kgroup.testing.simulation._scheduler import Scheduler, SimThread
from kgroup.testing.simulation._transport import SimRuntime, SimTransport
from kgroup.types import ConsumerRecord, TopicPartition

__all__ = ["App", "AsyncApp", "SimulatedGroup"]

#: your application: ``app(consumer, running)``; loop while ``running()``, then return
App = Callable[[Consumer, Callable[[], bool]], None]
#: an asyncio application: ``async def app(consumer, running)`` with a ``kgroup.aio.Consumer``
AsyncApp = Callable[["aio.Consumer[Any, Any]", Callable[[], bool]], Awaitable[None]]

_DEFAULTS: Mapping[str, Any] = {
    "session_timeout_ms": 10000,
    "heartbeat_interval_ms": 3000,
    "auto_offset_reset": "earliest",
    "request_timeout_ms": 30000,
}


class _Member:
    def __init__(
        self, group: SimulatedGroup, name: str, app: App | AsyncApp, config: ConsumerConfig, extra: Mapping[str, Any]
    ) -> None:
        self.name = name
        self.scheduler = group.scheduler
        self.transport = SimTransport(group.cluster, name, config.client_id)
        self.runtime = SimRuntime(group.scheduler)
        self.consumer: Consumer[Any, Any] = Consumer(
            config, transport=self.transport, clock=group.cluster.clock, _runtime=self.runtime, **extra
        )
        self.consumer._rng.seed(group.rng.random())
        self.transport.fetcher().mailbox = self.consumer._mailbox
        self.running = True
        self.alive = True
        #: the asyncio member's consumer; its worker thread is a simulated thread of this member
        self.aio: aio.Consumer[Any, Any] | None = None
        self.threads: list[SimThread] = []
        if inspect.iscoroutinefunction(app):
            self.aio = aio.Consumer._wrapping(self.consumer, self._spawn)
        self._instrument(group.checker)
        self.thread: SimThread = group.scheduler.spawn(name, lambda: self._main(app))

    def _spawn(self, what: str, target: Callable[[], None]) -> None:
        self.threads.append(self.scheduler.spawn(f"{self.name}:{what}", target))

    def _instrument(self, checker: Checker) -> None:
        consumer, name = self.consumer, self.name
        poll, invoke = consumer.poll, consumer._invoke

        def recorded_poll(timeout_ms: int = 0) -> list[ConsumerRecord]:
            records = poll(timeout_ms)
            checker.handed_out(name, records)
            return records

        def recorded_invoke(callback: str, partitions: frozenset[TopicPartition]) -> None:
            if callback == "on_partitions_lost":
                checker.excuse(name, partitions, "lost")
            invoke(callback, partitions)

        if self.aio is not None:
            # what the asyncio application receives, not what the worker fetched for it
            self.aio._handed_out = lambda records: checker.handed_out(name, records)  # type: ignore[method-assign]
            self.aio._handed_out_columns = (  # type: ignore[method-assign]
                lambda columns: checker.handed_out(name, _as_records(columns))
            )
        else:
            consumer.poll = recorded_poll  # type: ignore[method-assign]
        consumer._invoke = recorded_invoke  # type: ignore[method-assign]

    def _main(self, app: App | AsyncApp) -> None:
        try:
            if self.aio is not None:
                run_coroutine(self.scheduler, app(self.aio, lambda: self.running))  # type: ignore[arg-type]
            else:
                app(self.consumer, lambda: self.running)  # type: ignore[arg-type, unused-ignore]
        finally:
            self.alive = False


class SimulatedGroup:
    """A simulated cluster and group for your own consumer code (virtual time, one seed).

    Args:
        topics: topic name -> partition count.
        seed: fixes every latency and fault (same seed, same run).
        group_id: the group's id.
        rebalance_delay_ms: the coordinator's ``group.initial.rebalance.delay.ms`` (Kafka: 3000).

    Example::

        group = SimulatedGroup({"orders": 4}, seed=1)
        group.produce("orders", 200)
        group.add_member("a", my_app)
        group.add_member("b", my_app)
        group.run_for(20.0)          # virtual seconds: milliseconds of real time
        group.crash("a")
        group.run_for(30.0)
        group.check()                # raises AssertionError with the trace on a violation

    """

    def __init__(
        self,
        topics: Mapping[str, int],
        *,
        seed: int = 0,
        group_id: str = "simulated-group",
        rebalance_delay_ms: int = 0,
    ) -> None:
        self.group_id = group_id
        self.rng = random.Random(seed)
        self.scheduler = Scheduler()
        self.lines: list[str] = []
        self.checker = Checker(lambda: self.scheduler.now)
        self.cluster = SimCluster(
            self.scheduler, self.rng, dict(topics),
            CoordinatorConfig(group_initial_rebalance_delay_ms=rebalance_delay_ms), self._trace,
        )
        self.cluster.on_commit = lambda owner, req, resp: self.checker.committed(req, resp, owner)
        self.cluster.on_sync = lambda owner, gen, mid, assignment: self._synced(owner, gen, mid, assignment)
        self.members: dict[str, _Member] = {}
        self._closed = False

    def _trace(self, line: str) -> None:
        if len(self.lines) < 20000:
            self.lines.append(f"{self.scheduler.now:9.3f} {line}")

    def _synced(self, owner: str, generation_id: int, member_id: str, assignment: bytes) -> None:
        self.checker.member_is(member_id, owner)
        self.checker.synced(generation_id, member_id, assignment)

    @property
    def now(self) -> float:
        """Virtual seconds since the start."""
        return self.scheduler.now

    # ------------------------------------------------------------------ workload
    def produce(self, topic: str, count: int) -> None:
        """Append ``count`` records to ``topic``, spread over its partitions round-robin."""
        partitions = self.cluster.topics[topic]
        for i in range(count):
            self.cluster.produce(TopicPartition(topic, i % partitions))

    def create_topic(self, topic: str, partitions: int) -> None:
        """Create ``topic`` (or grow it) with ``partitions`` partitions (Kafka ``CreateTopics``)."""
        self._trace(f"topic {topic} created with {partitions} partitions")
        self.cluster.add_partitions(topic, partitions)

    def delete_topic(self, topic: str) -> None:
        """Delete ``topic`` and its records (Kafka ``DeleteTopics``)."""
        self._trace(f"topic {topic} deleted")
        self.cluster.delete_topic(topic)

    def add_member(self, name: str, app: App | AsyncApp, **config: Any) -> Consumer:
        """Start a member process running ``app(consumer, running)`` (``ConsumerConfig`` keywords).

        An ``async def`` app gets a ``kgroup.aio.Consumer`` and runs on an event loop on the
        virtual clock (``docs/asyncio.md``); its hand-outs are the records it receives.

        ``key_deserializer``/``value_deserializer`` go to the ``Consumer`` as in production.

        Defaults differ from Kafka's where a test wants speed: session 10 s, heartbeat 3 s,
        ``auto_offset_reset="earliest"``. Returns the member's consumer (for assertions).

        Raises:
            ValueError: a member called ``name`` is alive already.

        """
        existing = self.members.get(name)
        if existing is not None and existing.alive:
            raise ValueError(f"member {name!r} is alive; crash() or stop() it first")
        settings = {**_DEFAULTS, "bootstrap_servers": "simulated:9092", "group_id": self.group_id,
                    "client_id": name.split("#")[0], **config}
        extra: dict[str, Any] = {
            k: settings.pop(k) for k in ("key_deserializer", "value_deserializer") if k in settings
        }
        member = _Member(self, name, app, ConsumerConfig.from_kwargs(**settings), extra)
        self.members[name] = member
        self._trace(f"{name}: started")
        return member.consumer

    def crash(self, name: str) -> None:
        """Kill the member like kill -9: no close, no LeaveGroup, its connections close."""
        member = self.members[name]
        self._trace(f"{name}: crashed")
        member.alive = False
        self.checker.excuse(name, None, "crash")
        self.scheduler.kill(member.thread)
        for thread in member.threads:
            self.scheduler.kill(thread)
        member.runtime.stopped = True
        member.transport.dead = True
        member.transport.disconnect("process crashed")

    def stop(self, name: str) -> None:
        """Ask the member's application to stop: ``running()`` turns False."""
        self.members[name].running = False

    def black_hole(self, seconds: float) -> None:
        """The coordinator answers nothing for ``seconds`` (requests time out)."""
        self.cluster.black_hole_until = self.scheduler.now + seconds

    def move_coordinator(self, load_ms: int = 0) -> None:
        """The group's coordinator moves to another broker, which loads the group for ``load_ms``."""
        self.cluster.move_coordinator(load_ms)

    def call_at(self, seconds: float, action: Callable[[], None]) -> None:
        """Run ``action`` (e.g. ``lambda: group.crash("a")``) at virtual time ``seconds``."""
        self.scheduler.call_at(seconds, action)

    # ------------------------------------------------------------------ running
    def run_for(self, seconds: float) -> None:
        """Advance the simulation by ``seconds`` of virtual time."""
        self.scheduler.run_until(self.scheduler.now + seconds)

    def run_until(self, condition: Callable[[], bool], timeout_s: float) -> bool:
        """Advance until ``condition()`` holds (checked at every instant) or ``timeout_s`` passes."""
        self.scheduler.run_until(self.scheduler.now + timeout_s, stop=condition)
        return condition()

    def committed(self) -> dict[TopicPartition, int]:
        """The coordinator's committed offsets of this group."""
        out = {}
        for (topic, partition), value in self.cluster.model._offsets.get(self.group_id, {}).items():
            out[TopicPartition(topic, partition)] = value.offset
        return out

    def close(self) -> None:
        """Stop every member and unwind their threads (``check()`` does it too)."""
        if self._closed:
            return
        for member in self.members.values():
            member.running = False
        self.scheduler.run_until(self.scheduler.now + 60.0, stop=lambda: not any(
            m.alive for m in self.members.values()))
        self.scheduler.shutdown()
        self._closed = True

    def violations(self) -> list[Violation]:
        """Stop the group and return every broken property (also each member thread's error)."""
        self.close()
        self.checker.check_end(((m.name, m.thread.error) for m in self.members.values()), "application raised")
        return list(self.checker.violations)

    def check(self) -> None:
        """Stop the group and raise ``AssertionError`` (with the trace's tail) on any violation."""
        found = self.violations()
        if found:
            lines = [str(v) for v in found[:20]] + ["trace:"] + self.lines[-80:]
            raise AssertionError("\n".join(lines))
