"""Shared pieces for integration tests: members on threads, a timestamped event log, waits.

Every wait has a deadline; nothing sleeps a fixed time to synchronise.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import attrs
import pytest

import kgroup
from kgroup import TopicPartition
from kgroup.testing import produce

#: Tansu joins take session_timeout_ms / 2 (broker-notes.md S3b); 6000 is Kafka's minimum too
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_MS = 1000

#: The broker kinds of the tests that must hold on both: Tansu (through the coordinator proxy
#: where its coordinator deviates) and Apache Kafka (its own coordinator). ``pytestmark = BOTH``
#: in a module, ``@BOTH`` on a test: ids ``[tansu]`` and ``[apache-kafka]``.
BROKERS: tuple[str, ...] = ("tansu", "apache-kafka")
BOTH = pytest.mark.broker_kinds(*BROKERS)

_B = TypeVar("_B", bound="Background")


class Background:
    """Something a test runs on a daemon thread of its own: ``start()`` runs ``_run``, which goes on
    until ``_stop`` is set."""

    def __init__(self, name: str) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self: _B) -> _B:
        self._thread.start()
        return self

    def _run(self) -> None:
        raise NotImplementedError


def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str | Callable[[], str],
               interval_s: float = 0.05) -> None:
    """Poll ``predicate`` until true; fail the test with ``what`` after ``timeout_s``.

    ``what`` may be a callable, called at the failure: the state then, not when the wait began.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval_s)
    if predicate():
        return
    described = what() if callable(what) else what
    raise AssertionError(f"timed out after {timeout_s} s waiting for {described}")


@attrs.frozen
class Event:
    t_start: float
    t_end: float
    member: str
    kind: str  # assigned | revoked | lost
    partitions: frozenset[TopicPartition]
    generation: int


class EventLog:
    """A shared, timestamped log of listener callbacks across members."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[Event] = []

    def add(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)

    def of(self, kind: str, member: str | None = None) -> list[Event]:
        with self._lock:
            return [e for e in self.events if e.kind == kind and (member is None or e.member == member)]


def consumer(bootstrap: str, group_id: str, name: str, **config: Any) -> kgroup.Consumer:
    """A kgroup consumer with client id ``name``, reading from the earliest offset, with the suite's
    session timeout and heartbeat interval unless ``config`` says otherwise.

    A setting given as None is left out: kgroup's default (group_protocol="consumer" refuses
    session_timeout_ms and heartbeat_interval_ms when set: the broker decides them).
    """
    settings: dict[str, Any] = {
        "session_timeout_ms": SESSION_TIMEOUT_MS,
        "heartbeat_interval_ms": HEARTBEAT_MS,
        "auto_offset_reset": "earliest",
        "client_id": name,
        **config,
    }
    settings = {key: value for key, value in settings.items() if value is not None}
    return kgroup.Consumer(bootstrap_servers=bootstrap, group_id=group_id, **settings)


class RecordingListener(kgroup.RebalanceListener):
    """Logs every callback with start/end times; optionally commits on revoke."""

    def __init__(self, name: str, log: EventLog, consumer_ref: Callable[[], kgroup.Consumer],
                 *, commit_on_revoke: bool = False, revoke_delay_s: float = 0.0) -> None:
        self.name = name
        self.log = log
        self.consumer_ref = consumer_ref
        self.commit_on_revoke = commit_on_revoke
        self.revoke_delay_s = revoke_delay_s
        self.threads: set[int] = set()

    def _record(self, kind: str, partitions: frozenset[TopicPartition], body: Callable[[], None]) -> None:
        self.threads.add(threading.get_ident())
        start = time.monotonic()
        generation = self.consumer_ref().group_metadata().generation_id
        body()
        self.log.add(Event(start, time.monotonic(), self.name, kind, partitions, generation))

    def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        def body() -> None:
            if self.revoke_delay_s:
                time.sleep(self.revoke_delay_s)  # simulated slow cleanup, not synchronisation
            if self.commit_on_revoke:
                self.consumer_ref().commit()

        self._record("revoked", partitions, body)

    def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        self._record("assigned", partitions, lambda: None)

    def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self._record("lost", partitions, lambda: None)


class Member(Background):
    """A kgroup consumer polling on its own thread until stopped, of either group protocol.

    It subscribes to ``topics``, or to ``pattern`` when given. A ``ListenerError`` from ``poll()``
    is recorded in ``errors`` and polling goes on, unless ``stop_on_listener_error``: then it
    ends the member's thread as any other error does.
    """

    def __init__(self, name: str, bootstrap: str, group_id: str, topics: list[str] | None, log: EventLog,
                 *, pattern: str | None = None, commit_on_revoke: bool = False, commit_each_batch: bool = False,
                 revoke_delay_s: float = 0.0, stop_on_listener_error: bool = False, **config: Any) -> None:
        self.name = name
        self.consumer = consumer(bootstrap, group_id, name, **config)
        self.listener = RecordingListener(name, log, lambda: self.consumer,
                                          commit_on_revoke=commit_on_revoke, revoke_delay_s=revoke_delay_s)
        self.topics, self.pattern = topics, pattern
        self.commit_each_batch = commit_each_batch
        self.stop_on_listener_error = stop_on_listener_error
        self.records: list[kgroup.ConsumerRecord] = []
        #: (time poll() returned, the batch): when each record was handed out
        self.batches: list[tuple[float, list[kgroup.ConsumerRecord]]] = []
        self.errors: list[BaseException] = []
        #: set: the member stops calling poll() (slow processing), until cleared
        self.stall = threading.Event()
        super().__init__(f"member-{name}")
        self._stopped = threading.Event()
        self.poll_thread: int | None = None

    def _run(self) -> None:
        self.poll_thread = threading.get_ident()
        try:
            if self.pattern is not None:
                self.consumer.subscribe(pattern=self.pattern, listener=self.listener)
            else:
                self.consumer.subscribe(self.topics, listener=self.listener)
            while not self._stop.is_set():
                if self.stall.is_set():
                    self._stop.wait(0.05)  # the condition poll of a stalled member: not synchronisation
                    continue
                try:
                    batch = self.consumer.poll(200)
                except kgroup.ListenerError as exc:
                    if self.stop_on_listener_error:
                        raise
                    self.errors.append(exc)
                    continue
                if batch:
                    self.batches.append((time.monotonic(), batch))
                self.records.extend(batch)
                if batch and self.commit_each_batch:
                    try:
                        self.consumer.commit()
                    except (kgroup.CommitFailedError, kgroup.RebalanceInProgressError):
                        pass  # the next rebalance's commit on revoke covers it
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            try:
                self.consumer.close()
            except BaseException as exc:
                self.errors.append(exc)
            self._stopped.set()

    def assignment(self) -> frozenset[TopicPartition]:
        return self.consumer.assignment()

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        self.stall.clear()
        if not self._stopped.wait(timeout_s):
            raise AssertionError(f"member {self.name} did not stop within {timeout_s} s")


def topic_of_records(bootstrap: str, topic_factory: Any, partitions: int, per_partition: int) -> str:
    """A new topic of ``partitions`` partitions holding ``per_partition`` records (value ``x``) in each."""
    topic: str = topic_factory(partitions)
    produce(bootstrap, topic, [(p, None, b"x") for p in range(partitions) for _ in range(per_partition)])
    return topic


def poll_until(consumers: list[kgroup.Consumer], done: Callable[[], object], what: str,
               timeout_s: float = 40.0) -> int:
    """Poll every consumer (from this thread, 50 ms each) until ``done()``: the number of records
    polled; fail the test with ``what`` after ``timeout_s``."""
    seen = 0

    def step() -> bool:
        nonlocal seen
        for c in consumers:
            seen += len(c.poll(50))
        return bool(done())

    wait_until(step, timeout_s, what, interval_s=0.0)
    return seen


def poll_records(consumer: kgroup.Consumer, count: int, timeout_s: float = 60) -> list[kgroup.ConsumerRecord]:
    """Poll (from this thread) until ``count`` records came, or ``timeout_s`` passed: the records."""
    got: list[kgroup.ConsumerRecord] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        got += consumer.poll(200)
    return got


def stopped_after_the_test() -> Iterator[list[Any]]:
    """For a fixture: the list a test adds the members it starts to; any still running after the
    test is stopped (``_stopped`` unset: ``stop()``)."""
    started: list[Any] = []
    yield started
    for member in started:
        if not member._stopped.is_set():
            member.stop()


def all_partitions(topic: str, n: int) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(topic, p) for p in range(n))


def split_exactly(members: list[Member], expected: frozenset[TopicPartition]) -> bool:
    """True when the members' assignments are disjoint and cover ``expected``."""
    assignments = [m.assignment() for m in members]
    union: set[TopicPartition] = set()
    for a in assignments:
        if union & a:
            return False
        union |= a
    return union == expected


def handed_out_after_revocation(member: Member, log: EventLog) -> list[str]:
    """Records of a partition handed out after its revocation started and before it was
    assigned to ``member`` again: acquiesce violations (seed 001 "Acquiesce")."""
    events = sorted((e for e in log.events if e.member == member.name), key=lambda e: e.t_start)
    violations = []
    for t_out, batch in member.batches:
        for record in batch:
            tp = record.topic_partition
            # the member's last listener event about tp that started before the hand-out
            last = None
            for e in events:
                if e.t_start <= t_out and tp in e.partitions:
                    last = e
            if last is not None and last.kind in ("revoked", "lost"):
                violations.append(
                    f"{member.name} got {tp}@{record.offset} at {t_out:.3f} after {last.kind} at {last.t_start:.3f}"
                )
    return violations
