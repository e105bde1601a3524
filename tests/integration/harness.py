"""Shared pieces for integration tests: members on threads, a timestamped event log, waits.

Every wait has a deadline; nothing sleeps a fixed time to synchronise.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import attrs
import pytest

import kgroup
from kgroup import TopicPartition

#: Tansu joins take session_timeout_ms / 2 (broker-notes.md S3b); 6000 is Kafka's minimum too
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_MS = 1000

#: The broker kinds of the tests that must hold on both: Tansu (through the coordinator proxy
#: where its coordinator deviates) and Apache Kafka (its own coordinator). ``pytestmark = BOTH``
#: in a module, ``@BOTH`` on a test: ids ``[tansu]`` and ``[apache-kafka]``.
BROKERS: tuple[str, ...] = ("tansu", "apache-kafka")
BOTH = pytest.mark.broker_kinds(*BROKERS)


def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str, interval_s: float = 0.05) -> None:
    """Poll ``predicate`` until true; fail the test with ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval_s)
    if predicate():
        return
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


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


class Member:
    """A kgroup consumer polling on its own thread until stopped, of either group protocol.

    It subscribes to ``topics``, or to ``pattern`` when given. A ``ListenerError`` from ``poll()``
    is recorded in ``errors`` and polling goes on, unless ``stop_on_listener_error``: then it
    ends the member's thread as any other error does.
    """

    def __init__(self, name: str, bootstrap: str, group_id: str, topics: list[str] | None, log: EventLog,
                 *, pattern: str | None = None, commit_on_revoke: bool = False, commit_each_batch: bool = False,
                 revoke_delay_s: float = 0.0, stop_on_listener_error: bool = False, **config: Any) -> None:
        self.name = name
        settings: dict[str, Any] = {
            "session_timeout_ms": SESSION_TIMEOUT_MS,
            "heartbeat_interval_ms": HEARTBEAT_MS,
            "auto_offset_reset": "earliest",
            "client_id": name,
        }
        settings.update(config)
        # a setting given as None is left out: kgroup's default (group_protocol="consumer" refuses
        # session_timeout_ms and heartbeat_interval_ms when set: the broker decides them)
        settings = {key: value for key, value in settings.items() if value is not None}
        self.consumer = kgroup.Consumer(bootstrap_servers=bootstrap, group_id=group_id, **settings)
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
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self.poll_thread: int | None = None
        self._thread = threading.Thread(target=self._run, name=f"member-{name}", daemon=True)

    def start(self) -> Member:
        self._thread.start()
        return self

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
