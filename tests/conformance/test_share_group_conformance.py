"""ShareGroupModel against Apache Kafka 4.4: the same ShareGroupHeartbeat, ShareFetch and ShareAcknowledge to both.

Each script runs on one broker (``group.share.*`` lowered so that sessions, heartbeats and
acquisition locks take a second or two, the model configured alike) with a topic of its own
(2 partitions) and a group of its own. A step goes to Kafka first (a connection per actor, raw
requests encoded with kgroup's codec over :mod:`kgroup._io.kafka_messages`' message classes), then,
at the time it was sent to Kafka (the model's clock follows the Kafka run), to the model; the two
answers are normalised and must be equal:

* ShareGroupHeartbeat: error code, member id, member epoch, heartbeat interval and the assignment
  (``None`` when absent, else sorted partitions). Where the simple assignor's choice among members
  is Kafka's own (several members: its hash maps' order), the assignment is left out of the step
  (``count_only``) and a ``Counts`` step compares the sorted numbers of partitions the members hold.
* ShareFetch: the request error, the lock duration, and for each partition that has acquired
  records or an error: its error, its acknowledgement error and the acquired ranges with their
  delivery counts (partitions answered empty are dropped on both sides).
* ShareAcknowledge: the request error and every partition's error.

Records are produced to Kafka (``kgroup.testing.produce``, one call per batch, to one partition)
and appended to the model's log alike (``ShareGroupModel.produce``). Scripts start at
``share.auto.offset.reset=earliest`` (a group config, IncrementalAlterConfigs) unless they test
the default. ``expect`` pins each step's intent on the normalised answer, for both sides. The
differences found are listed in docs/simulation.md, "Share-group model".
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import attrs
import pytest

import kgroup._io.kafka_messages  # noqa: F401 (registers the share-group APIs with the frame codec)
from kgroup import _error_codes as codes
from kgroup.protocol.share_group_heartbeat import ShareGroupHeartbeatRequest
from kgroup.testing import FakeClock, create_topic, produce
from kgroup.testing.coordinator import (
    AcknowledgementBatch,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupConfig,
    ShareGroupModel,
    SharePartitionData,
)
from tests.integration.harness import wait_until

from . import conftest
from .harness import CLOSED, Broker, KafkaConnection

SESSION_MS = 3000
INTERVAL_MS = 1000
LOCK_MS = 2000
LIMIT = 3
MAX_SIZE = 3
ASSIGNMENT_INTERVAL_MS = 1000  # Kafka 4.4's default group.share.assignment.interval.ms
OVERRIDES: Mapping[str, Any] = {
    **conftest.BROKER_OVERRIDES,
    "group.share.min.session.timeout.ms": 1000,
    "group.share.session.timeout.ms": SESSION_MS,
    "group.share.min.heartbeat.interval.ms": 500,
    "group.share.heartbeat.interval.ms": INTERVAL_MS,
    "group.share.min.record.lock.duration.ms": 1000,
    "group.share.record.lock.duration.ms": LOCK_MS,
    "group.share.delivery.count.limit": LIMIT,
    "group.share.max.size": MAX_SIZE,
    # the assignment on the heartbeat's own thread, as the model computes it (Kafka 4.4 offloads it by default)
    "group.share.assignor.offload.enable": "false",
}
CONFIG = ShareGroupConfig(
    session_timeout_ms=SESSION_MS, heartbeat_interval_ms=INTERVAL_MS, record_lock_duration_ms=LOCK_MS,
    delivery_count_limit=LIMIT, max_size=MAX_SIZE, assignment_interval_ms=ASSIGNMENT_INTERVAL_MS,
)
PARTITIONS = 2
SGH, SHARE_FETCH, SHARE_ACK, METADATA, ALTER_CONFIGS = 76, 78, 79, 3, 44
GROUP_RESOURCE = 32
ACCEPT, RELEASE, REJECT, RENEW = 1, 2, 3, 4
MAX_WAIT_MS = 300

Acks = Mapping[int, tuple[tuple[int, int, tuple[int, ...]], ...]]


@dataclass(frozen=True)
class HB:
    """A ShareGroupHeartbeat from ``actor`` (``epoch`` None: its epoch from its last answer)."""

    actor: str
    epoch: int | None
    join: bool = False
    subscribe: bool | None = None  # None: on a join only
    count_only: bool = False
    group: str | None = None
    expect: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Fetch:
    """A ShareFetch from ``actor`` at share session ``epoch`` (None: the session's next), of ``partitions``."""

    actor: str
    epoch: int | None = None
    partitions: tuple[int, ...] = (0,)
    acks: Acks = field(default_factory=dict)
    max_records: int = 500
    version: int = 1
    record_limit: bool = False
    forgotten: tuple[int, ...] = ()
    renew: bool = False  # v2's is_renew_ack
    zeros: bool = False  # max_wait_ms, min_bytes, max_bytes and max_records 0 (what a renewing fetch must send)
    expect: Any = None  # the acquired ranges of partition 0, or an error code


@dataclass(frozen=True)
class Ack:
    """A ShareAcknowledge from ``actor`` at ``epoch`` (None: the session's next) of partition 0."""

    actor: str
    epoch: int | None
    batches: tuple[tuple[int, int, tuple[int, ...]], ...]
    version: int = 1
    renew: bool = False
    expect: int | None = None  # the partition's error code (a request error: its code)


@dataclass(frozen=True)
class Produce:
    """One batch of ``count`` records to ``partition``."""

    count: int
    partition: int = 0


@dataclass(frozen=True)
class Sleep:
    """Let ``ms`` pass on both sides, nothing sent (a timer under test)."""

    ms: int


@dataclass(frozen=True)
class Wait:
    """Let ``ms`` pass while the ``beating`` actors heartbeat every interval (a session timer under test)."""

    ms: int
    beating: tuple[str, ...] = ()


@dataclass(frozen=True)
class AwaitAssignment:
    """``actor`` heartbeats on both sides until Kafka assigns it ``partitions``; then the model's epoch and
    assignment must be Kafka's (how long Kafka's share coordinator takes to initialize partitions
    is the broker's: the model takes no time)."""

    actor: str
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class Counts:
    """How many partitions each of ``actors`` holds, sorted, equal on both sides (who holds which is Kafka's)."""

    actors: tuple[str, ...]
    expect: tuple[int, ...] | None = None


Step = HB | Fetch | Ack | Produce | Sleep | Wait | Counts | AwaitAssignment


def _ok(epoch: int, assignment: Any = ...) -> dict[str, Any]:
    out: dict[str, Any] = {"error_code": 0, "member_epoch": epoch}
    if assignment is not ...:
        out["assignment"] = assignment
    return out


def _err(code: int) -> dict[str, Any]:
    return {"error_code": code}


def _b(first: int, last: int, *types: int) -> tuple[int, int, tuple[int, ...]]:
    return (first, last, types)


JOINED = Sleep(ASSIGNMENT_INTERVAL_MS + 500)
#: a member joins and gets the partitions: their share state is initialized (a ShareFetch before that
#: answers UNKNOWN_SERVER_ERROR for the partition); it stays silent afterwards (its session runs out)
INITIALIZED = (HB("owner", 0, join=True), AwaitAssignment("owner", (0, 1)))

SCRIPTS: dict[str, tuple[Step, ...]] = {
    "a_first_member_gets_its_partitions_once_they_are_initialized_then_leaves": (
        HB("a", 0, join=True, expect=_ok(2, [])),
        HB("a", 2, expect=_ok(2, None)),
        AwaitAssignment("a", (0, 1)),
        HB("a", 3, expect=_ok(3, None)),
        HB("a", 7, expect=_err(codes.FENCED_MEMBER_EPOCH)),
        HB("a", 2, expect=_ok(3, None)),  # its previous epoch
        HB("a", 1, expect=_err(codes.FENCED_MEMBER_EPOCH)),
        HB("a", 0, join=True, expect=_ok(3)),
        HB("x", 3, expect=_err(codes.UNKNOWN_MEMBER_ID)),
        HB("x", -1, expect=_err(codes.UNKNOWN_MEMBER_ID)),
        HB("a", 3, group="other", expect=_err(codes.GROUP_ID_NOT_FOUND)),
        HB("b", 0, subscribe=False, expect=_err(codes.INVALID_REQUEST)),
        HB("a", -2, expect=_err(codes.INVALID_REQUEST)),
        HB("a", -1, expect={"error_code": 0, "member_epoch": -1, "heartbeat_interval_ms": 0}),
        HB("a", 3, expect=_err(codes.UNKNOWN_MEMBER_ID)),
    ),
    "more_members_than_partitions_share_them": (
        HB("a", 0, join=True),
        AwaitAssignment("a", (0, 1)),
        HB("b", 0, join=True, count_only=True, expect=_ok(3)),
        HB("c", 0, join=True, count_only=True, expect=_ok(3)),
        JOINED,
        HB("a", None, count_only=True, expect=_ok(5)),
        HB("b", None, count_only=True, expect=_ok(5)),
        HB("c", None, count_only=True, expect=_ok(5)),
        Counts(("a", "b", "c"), expect=(1, 1, 2)),
        HB("d", 0, join=True, expect=_err(codes.GROUP_MAX_SIZE_REACHED)),
    ),
    "a_second_member_splits_the_partitions": (
        HB("a", 0, join=True),
        AwaitAssignment("a", (0, 1)),
        HB("b", 0, join=True, expect=_ok(3, [])),
        JOINED,
        HB("a", None, count_only=True, expect=_ok(4)),
        HB("b", None, count_only=True, expect=_ok(4)),
        Counts(("a", "b"), expect=(1, 1)),
    ),
    "a_silent_member_is_removed_at_its_session_timeout": (
        HB("a", 0, join=True),
        AwaitAssignment("a", (0, 1)),
        HB("b", 0, join=True, expect=_ok(3, [])),
        JOINED,
        HB("a", None, count_only=True, expect=_ok(4)),
        HB("b", None, count_only=True, expect=_ok(4)),
        Wait(SESSION_MS + 600 + ASSIGNMENT_INTERVAL_MS, beating=("b",)),
        HB("a", None, expect=_err(codes.UNKNOWN_MEMBER_ID)),
        HB("b", None, count_only=True, expect=_ok(5)),
        Counts(("b",), expect=(2,)),
    ),
    "share_session_epochs": (
        *INITIALIZED,
        Fetch("a", 1, expect=codes.SHARE_SESSION_NOT_FOUND),
        Fetch("a", -1, expect=codes.SHARE_SESSION_NOT_FOUND),
        Fetch("a", 0, acks={0: (_b(0, 0, ACCEPT),)}, expect=codes.INVALID_REQUEST),
        Ack("a", 0, (_b(0, 0, ACCEPT),), expect=codes.INVALID_SHARE_SESSION_EPOCH),
        Fetch("a", 0, expect=[]),
        Fetch("a", 5, expect=codes.INVALID_SHARE_SESSION_EPOCH),
        Fetch("a", 1, expect=[]),
        Ack("x", 1, (_b(0, 0, ACCEPT),), expect=codes.SHARE_SESSION_NOT_FOUND),
        Ack("a", 2, (_b(0, 0, ACCEPT),), expect=codes.INVALID_RECORD_STATE),  # nothing in flight
        Ack("a", 2, (_b(0, 0, ACCEPT),), expect=codes.INVALID_SHARE_SESSION_EPOCH),
        Fetch("a", -1, expect=[]),
        Fetch("a", -1, expect=codes.SHARE_SESSION_NOT_FOUND),
        Fetch("a", 4, expect=codes.SHARE_SESSION_NOT_FOUND),
        Fetch("a", 0, expect=[]),
    ),
    "lock_expiry_redelivers_and_the_limit_archives": (
        *INITIALIZED,
        Produce(5),
        Fetch("a", 0, expect=[(0, 4, 1)]),
        Fetch("b", 0, expect=[]),
        Sleep(LOCK_MS + 300),
        Fetch("b", expect=[(0, 4, 2)]),
        Sleep(LOCK_MS + 300),
        Fetch("b", expect=[(0, 0, 3)]),
        Fetch("b", expect=[(1, 1, 3)]),
        Ack("b", None, (_b(1, 1, ACCEPT),), expect=0),
        Sleep(LOCK_MS + 300),
        Fetch("a", expect=[(2, 2, 3)]),
        Ack("a", None, (_b(0, 0, ACCEPT),), expect=0),
        Ack("a", None, (_b(2, 2, RELEASE),), expect=0),
        Fetch("a", expect=[(3, 3, 3)]),
    ),
    "acknowledgements_and_their_errors": (
        *INITIALIZED,
        Produce(5),
        Fetch("a", 0, expect=[(0, 4, 1)]),
        Fetch("b", 0, expect=[]),
        Ack("a", None, (_b(0, 0, ACCEPT),), expect=0),
        Ack("b", None, (_b(1, 1, ACCEPT),), expect=codes.INVALID_RECORD_STATE),
        Ack("a", None, (_b(1, 2, RELEASE),), expect=0),
        Fetch("b", expect=[(1, 2, 2)]),
        Ack("a", None, (_b(7, 8, ACCEPT),), expect=codes.INVALID_REQUEST),
        Ack("a", None, (_b(4, 3, ACCEPT),), expect=codes.INVALID_REQUEST),
        Ack("a", None, (_b(3, 4, ACCEPT, RELEASE, REJECT),), expect=codes.INVALID_REQUEST),
        Ack("a", None, (_b(0, 0, ACCEPT),), expect=0),
        Ack("a", None, (_b(3, 4, ACCEPT), _b(2, 2, ACCEPT)), expect=codes.INVALID_REQUEST),  # out of order
        Ack("a", None, (_b(3, 4, REJECT, ACCEPT),), expect=0),
        Fetch("b", acks={0: (_b(1, 2, ACCEPT),)}, expect=[]),
        Produce(3),
        Fetch("a", expect=[(5, 7, 1)]),
        Ack("a", None, (_b(5, 5, RENEW),), version=2, expect=codes.INVALID_REQUEST),
        Ack("a", None, (_b(5, 5, RENEW),), version=2, renew=True, expect=0),
        Ack("a", None, (_b(5, 7, ACCEPT, RELEASE, REJECT),), version=2, expect=0),
        Fetch("b", expect=[(6, 6, 2)]),
    ),
    "max_records_is_soft_for_batches_and_strict_in_record_limit_mode": (
        *INITIALIZED,
        Produce(5),
        Produce(5),
        Fetch("a", 0, max_records=3, expect=[(0, 4, 1)]),
        Fetch("b", 0, max_records=3, version=2, record_limit=True, expect=[(5, 7, 1)]),
        Fetch("c", 0, max_records=1, version=2, expect=[(8, 9, 1)]),
        Produce(4),
        Fetch("c", max_records=2, version=2, record_limit=True, expect=[(10, 11, 1)]),
        Fetch("c", max_records=2, version=1, expect=[(12, 13, 1)]),
    ),
    "closing_the_session_releases_records_leaving_the_group_does_not": (
        *INITIALIZED,
        HB("a", 0, join=True),
        Produce(3),
        Fetch("a", 0, expect=[(0, 2, 1)]),
        HB("a", -1),
        Fetch("b", 0, expect=[]),
        Fetch("a", expect=[]),
        Sleep(LOCK_MS + 300),
        Fetch("b", expect=[(0, 2, 2)]),
        Fetch("b", -1, expect=[]),
        Fetch("c", 0, expect=[(0, 0, 3)]),
    ),
    "a_share_session_adds_and_forgets_partitions_and_renews": (
        *INITIALIZED,
        Produce(2),
        Produce(3, partition=1),
        Fetch("a", 0, partitions=(0,), expect=[(0, 1, 1)]),
        Fetch("a", partitions=(1,), expect=[]),  # partition 1's records come too (compared in full)
        Produce(2),
        Fetch("a", partitions=(), forgotten=(0,), expect=[]),
        Produce(1, partition=1),
        Fetch("a", partitions=(), version=2, renew=True, acks={1: (_b(0, 2, RENEW),)}, expect=codes.INVALID_REQUEST),
        Fetch("a", partitions=(), version=2, renew=True, zeros=True, acks={1: (_b(0, 2, RENEW),)}, expect=[]),
        Fetch("a", partitions=(0,), version=2, expect=[(2, 3, 1)]),
        Fetch("b", 0, partitions=(1,), expect=[]),
    ),
    "redeliveries_are_throttled_from_half_the_delivery_count_limit": (
        *INITIALIZED,
        Produce(10),
        Fetch("a", 0, expect=[(0, 9, 1)]),
        Sleep(LOCK_MS + 300),
        Fetch("a", expect=[(0, 9, 2)]),
        Sleep(LOCK_MS + 300),
        Fetch("a", expect=[(0, 9, 3)]),
        Sleep(LOCK_MS + 300),
        Fetch("a", expect=[(0, 4, 4)]),
        Sleep(LOCK_MS + 300),
        Fetch("a", expect=[(0, 0, 5)]),
        Fetch("a", expect=[(1, 1, 5)]),
    ),
    "share_auto_offset_reset_latest_starts_at_the_first_fetch": (
        *INITIALIZED,
        Produce(3),
        Fetch("a", 0, partitions=(0, 1), expect=[]),
        Produce(2),
        Fetch("a", expect=[(3, 4, 1)]),
    ),
}
LATEST = {"share_auto_offset_reset_latest_starts_at_the_first_fetch"}
#: the scripts of lock expiry run at the broker's 2 s lock; the others at a group lock of 15 s, which a
#: step on a loaded machine does not outlast
LOCK_SCRIPTS = {"lock_expiry_redelivers_and_the_limit_archives",
                "closing_the_session_releases_records_leaving_the_group_does_not",
                "redeliveries_are_throttled_from_half_the_delivery_count_limit"}
#: the group's share.delivery.count.limit where a script needs another than the broker's
DELIVERY_LIMITS = {"redeliveries_are_throttled_from_half_the_delivery_count_limit": 5}
LONG_LOCK_MS = 15000
AWAIT_S = 30.0


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """Apache Kafka 4.4 with the share groups' timers lowered (:data:`OVERRIDES`)."""
    yield from conftest._serve(tmp_path_factory, "conformance-kafka-share-groups", OVERRIDES)


class _Run:
    """One script on both sides."""

    def __init__(self, address: tuple[str, int], name: str) -> None:
        self.address = address
        self.bootstrap = f"{address[0]}:{address[1]}"
        self.topic = f"sg-{uuid.uuid4().hex[:10]}"
        create_topic(self.bootstrap, self.topic, PARTITIONS)
        self.started = time.monotonic()
        self.group = f"sg-{name[:20]}-{uuid.uuid4().hex[:8]}"
        self.conns: dict[str, KafkaConnection] = {}
        self.clock = FakeClock()
        self.topic_id = self._topic_id()
        topics = {self.topic: (self.topic_id, PARTITIONS)}
        self.model = ShareGroupModel(CONFIG, clock=self.clock, topics=lambda: topics)
        self.ids: dict[str, str] = {}
        self.epochs: dict[str, int] = {}
        self.sessions: dict[str, int] = {}
        self.counts: tuple[dict[str, int], dict[str, int]] = ({}, {})
        self.log: list[str] = []
        self._group_configs(name)

    def member(self, actor: str) -> str:
        return self.ids.setdefault(actor, str(uuid.uuid4()))

    def conn(self, actor: str) -> KafkaConnection:
        if actor not in self.conns:
            self.conns[actor] = KafkaConnection(self.address, actor, self.started)
        return self.conns[actor]

    def kafka(self, actor: str, api: int, version: int, body: Mapping[str, Any]) -> Any:
        conn = self.conn(actor)
        sent = conn.send(api, version, body)
        self.clock.advance(max(0.0, sent / 1000 - self.clock.monotonic()))
        got = conn.receive(15.0)
        assert got is not None and got[1] is not CLOSED, f"Kafka did not answer {body}"
        return got[1]

    def _topic_id(self) -> uuid.UUID:
        body = {"topics": [{"topic_id": None, "name": self.topic}], "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False}
        answer = self.kafka("admin", METADATA, 12, body)
        return uuid.UUID(str(answer["topics"][0]["topic_id"]))

    def _group_configs(self, name: str) -> None:
        configs = []
        if name not in LATEST:
            configs.append({"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"})
            self.model.set_group_config(self.group, auto_offset_reset="earliest")
        if name in DELIVERY_LIMITS:
            limit = DELIVERY_LIMITS[name]
            configs.append({"name": "share.delivery.count.limit", "config_operation": 0, "value": str(limit)})
            self.model.set_group_config(self.group, delivery_count_limit=limit)
        if name not in LOCK_SCRIPTS:
            configs.append({"name": "share.record.lock.duration.ms", "config_operation": 0, "value": str(LONG_LOCK_MS)})
            self.model.set_group_config(self.group, record_lock_duration_ms=LONG_LOCK_MS)
        body = {"resources": [{"resource_type": GROUP_RESOURCE, "resource_name": self.group, "configs": configs}],
                "validate_only": False}
        answer = self.kafka("admin", ALTER_CONFIGS, 1, body)
        assert answer["responses"][0]["error_code"] == 0, answer

    def await_assignment(self, step: AwaitAssignment) -> None:
        """Kafka first, alone, until it assigns ``step.partitions``; then the model, alone, until it does.

        Heartbeating both at once let the two compute the assignment at different moments when
        Kafka's share coordinator took long to initialize the partitions (a loaded machine): the
        model assigned first, its assignment interval then ran out before Kafka's, and the next
        member's join got a new assignment from the model only. Driven one after the other, both
        compute it at about the same moment.
        """
        k: dict[str, Any] = {}

        def holds_them(side: str) -> bool:
            nonlocal k
            answer = self.heartbeat(HB(step.actor, None), side=side)[0 if side == "kafka" else 1]
            self.log.append(f"{step}: {side} {answer}")
            assert answer["error_code"] == 0, "\n".join(self.log)
            if side == "kafka":
                k = answer
                self.epochs[step.actor] = answer["member_epoch"]
            return answer["assignment"] == list(step.partitions)

        for side in ("kafka", "model"):
            wait_until(lambda side=side: holds_them(side), AWAIT_S, lambda: "\n".join(self.log), interval_s=0.2)
        epoch, assigned = self.model.members(self.group)[self.member(step.actor)]
        held = sorted(assigned.get(self.topic_id, ()))
        assert (epoch, held) == (k["member_epoch"], list(step.partitions)), "\n".join(self.log)

    # ---- steps

    def heartbeat(self, step: HB, side: str = "both") -> tuple[Any, Any]:
        """``step`` to Kafka and the model (``side``: "both", or only "kafka" or "model"; the other's answer None)."""
        epoch = self.epochs.get(step.actor, 0) if step.epoch is None else step.epoch
        subscribe = step.join if step.subscribe is None else step.subscribe
        request = ShareGroupHeartbeatRequest(
            group_id=step.group or self.group, member_id=self.member(step.actor), member_epoch=epoch,
            subscribed_topic_names=(self.topic,) if subscribe else None,
        )
        body = {"group_id": request.group_id, "member_id": request.member_id, "member_epoch": epoch,
                "rack_id": None, "subscribed_topic_names": [self.topic] if subscribe else None}
        if side == "model":  # the model's clock to now, the member's epoch the model's own
            self.clock.advance(max(0.0, (time.monotonic() - self.started) - self.clock.monotonic()))
            known = self.model.members(self.group).get(self.member(step.actor))
            if step.epoch is None and known is not None:
                request = attrs.evolve(request, member_epoch=known[0])
            model = self.model.heartbeat(request).response
            m_only = None if model.assignment is None else [
                (tp.topic_id, list(tp.partitions)) for tp in model.assignment]
            m = self._hb(model.error_code, model.member_id, model.member_epoch, model.heartbeat_interval_ms, m_only)
            if m["assignment"] is not None:
                self.counts[1][step.actor] = len(m["assignment"])
            return None, m
        kafka = self.kafka(step.actor, SGH, 1, body)
        if side == "kafka":
            k_only = None if kafka.get("assignment") is None else [
                (uuid.UUID(str(tp["topic_id"])), list(tp["partitions"]))
                for tp in kafka["assignment"]["topic_partitions"]]
            k = self._hb(kafka["error_code"], kafka["member_id"], kafka["member_epoch"], kafka["heartbeat_interval_ms"],
                         k_only)
            if k["assignment"] is not None:
                self.counts[0][step.actor] = len(k["assignment"])
            return k, None
        model = self.model.heartbeat(request).response
        k_parts = None if kafka.get("assignment") is None else [
            (uuid.UUID(str(tp["topic_id"])), list(tp["partitions"])) for tp in kafka["assignment"]["topic_partitions"]]
        m_parts = None if model.assignment is None else [(tp.topic_id, list(tp.partitions)) for tp in model.assignment]
        k = self._hb(kafka["error_code"], kafka["member_id"], kafka["member_epoch"], kafka["heartbeat_interval_ms"],
                     k_parts)
        m = self._hb(model.error_code, model.member_id, model.member_epoch, model.heartbeat_interval_ms, m_parts)
        for side, answer in enumerate((k, m)):
            if answer["assignment"] is not None:
                self.counts[side][step.actor] = len(answer["assignment"])
            if step.count_only:  # which partitions, and whether they changed, is the assignor's choice
                answer["assignment"] = "?"
        return k, m

    def _hb(self, error: int, member_id: Any, epoch: int, interval: int, parts: Any) -> dict[str, Any]:
        assignment: Any = None
        if parts is not None:
            assignment = sorted(p for topic_id, ps in parts for p in ps if topic_id == self.topic_id)
        return {"error_code": error, "member_id": member_id, "member_epoch": epoch,
                "heartbeat_interval_ms": interval, "assignment": assignment}

    def compare_counts(self, step: Counts) -> None:
        k, m = (tuple(sorted(side.get(a, 0) for a in step.actors)) for side in self.counts)
        self.log.append(f"{step}: kafka {k} model {m}")
        assert k == m, "\n".join(self.log)
        assert step.expect is None or k == step.expect, "\n".join(self.log)

    def _session_epoch(self, actor: str, epoch: int | None) -> int:
        return self.sessions.get(actor, 0) if epoch is None else epoch

    def _after(self, actor: str, epoch: int, error: int) -> None:
        if error in (codes.NONE,):
            if epoch == -1:
                self.sessions.pop(actor, None)
            else:
                self.sessions[actor] = epoch + 1

    def fetch(self, step: Fetch) -> tuple[Any, Any]:
        epoch = self._session_epoch(step.actor, step.epoch)
        partitions = sorted(set(step.partitions) | set(step.acks))
        body: dict[str, Any] = {
            "group_id": self.group, "member_id": self.member(step.actor), "share_session_epoch": epoch,
            "max_wait_ms": 0 if step.zeros else MAX_WAIT_MS, "min_bytes": 0 if step.zeros else 1,
            "max_bytes": 0 if step.zeros else 1 << 20, "max_records": 0 if step.zeros else step.max_records,
            "batch_size": step.max_records,
            "topics": [{"topic_id": self.topic_id, "partitions": [
                {"partition_index": p, "acknowledgement_batches": [
                    {"first_offset": f, "last_offset": la, "acknowledge_types": list(ts)}
                    for f, la, ts in step.acks.get(p, ())]} for p in partitions]}] if partitions else [],
            "forgotten_topics_data": [{"topic_id": self.topic_id, "partitions": list(step.forgotten)}]
            if step.forgotten else [],
        }
        if step.version >= 2:
            body.update(share_acquire_mode=1 if step.record_limit else 0, is_renew_ack=step.renew)
        kafka = self.kafka(step.actor, SHARE_FETCH, step.version, body)
        request = ShareFetchRequest(
            group_id=self.group, member_id=self.member(step.actor), share_session_epoch=epoch,
            partitions=tuple(SharePartitionData(self.topic_id, p, tuple(
                AcknowledgementBatch(f, la, ts) for f, la, ts in step.acks.get(p, ()))) for p in partitions),
            forgotten=tuple((self.topic_id, p) for p in step.forgotten),
            max_wait_ms=body["max_wait_ms"], min_bytes=body["min_bytes"], max_bytes=body["max_bytes"],
            max_records=body["max_records"], batch_size=step.max_records, api_version=step.version,
            share_acquire_mode=1 if step.record_limit else 0, is_renew_ack=step.renew,
        )
        model = self.model.share_fetch(request).response
        k = self._fetch(kafka["error_code"], kafka.get("acquisition_lock_timeout_ms"), [
            (p["partition_index"], p["error_code"], p["acknowledge_error_code"],
             [(a["first_offset"], a["last_offset"], a["delivery_count"]) for a in p["acquired_records"]])
            for t in kafka["responses"] for p in t["partitions"]])
        m = self._fetch(model.error_code, model.acquisition_lock_timeout_ms, [
            (p.partition, p.error_code, p.acknowledge_error_code,
             [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records])
            for p in model.partitions])
        self._after(step.actor, epoch, k["error_code"])
        return k, m

    @staticmethod
    def _fetch(error: int, lock_ms: Any, partitions: list[tuple[int, int, int, list[Any]]]) -> dict[str, Any]:
        kept = sorted(p for p in partitions if p[1] or p[2] or p[3])
        return {"error_code": error, "acquisition_lock_timeout_ms": lock_ms, "partitions": kept}

    def ack(self, step: Ack) -> tuple[Any, Any]:
        epoch = self._session_epoch(step.actor, step.epoch)
        batches = [{"first_offset": f, "last_offset": la, "acknowledge_types": list(ts)} for f, la, ts in step.batches]
        body: dict[str, Any] = {
            "group_id": self.group, "member_id": self.member(step.actor), "share_session_epoch": epoch,
            "topics": [{"topic_id": self.topic_id,
                        "partitions": [{"partition_index": 0, "acknowledgement_batches": batches}]}],
        }
        if step.version >= 2:
            body["is_renew_ack"] = step.renew
        kafka = self.kafka(step.actor, SHARE_ACK, step.version, body)
        model = self.model.share_acknowledge(ShareAcknowledgeRequest(
            group_id=self.group, member_id=self.member(step.actor), share_session_epoch=epoch,
            partitions=(SharePartitionData(self.topic_id, 0, tuple(
                AcknowledgementBatch(f, la, ts) for f, la, ts in step.batches)),),
            is_renew_ack=step.renew, api_version=step.version,
        )).response
        k = {"error_code": kafka["error_code"], "acquisition_lock_timeout_ms": kafka.get("acquisition_lock_timeout_ms"),
             "partitions": sorted((p["partition_index"], p["error_code"]) for t in kafka["responses"]
                                  for p in t["partitions"])}
        m = {"error_code": model.error_code,
             "acquisition_lock_timeout_ms": model.acquisition_lock_timeout_ms if step.version >= 2 else None,
             "partitions": sorted((p.partition, p.error_code) for p in model.partitions)}
        self._after(step.actor, epoch, k["error_code"])
        return k, m

    def produce(self, step: Produce) -> None:
        produce(self.bootstrap, self.topic, [(step.partition, b"k", b"v%d" % i) for i in range(step.count)])
        self.model.produce(self.topic_id, step.partition, step.count)

    def catch_up(self) -> None:
        self.clock.advance(max(0.0, (time.monotonic() - self.started) - self.clock.monotonic()))
        self.model.tick()

    def sleep(self, step: Sleep) -> None:
        time.sleep(step.ms / 1000)  # the behaviour under test (a timer), not synchronisation
        self.catch_up()

    def wait(self, step: Wait) -> None:
        until = time.monotonic() + step.ms / 1000
        while time.monotonic() < until:
            for actor in step.beating:
                self.step(HB(actor, None))
            time.sleep(min(INTERVAL_MS / 2000, max(0.0, until - time.monotonic())))  # a poll interval of the wait
        self.catch_up()

    def step(self, step: Step) -> Any:
        if isinstance(step, HB):
            k, m = self.heartbeat(step)
        elif isinstance(step, Fetch):
            k, m = self.fetch(step)
        elif isinstance(step, Ack):
            k, m = self.ack(step)
        else:
            raise AssertionError(step)
        self.log.append(f"{step}: kafka {k} model {m}")
        assert k == m, "\n".join(self.log)
        if isinstance(step, HB) and k["error_code"] == 0 and k["member_epoch"] > 0:
            self.epochs[step.actor] = k["member_epoch"]
        return k

    def close(self) -> None:
        for conn in self.conns.values():
            conn.close()


def _expected(step: Step, answer: Any) -> None:
    if isinstance(step, HB):
        for key, value in step.expect.items():
            assert answer[key] == value, f"{step}: {key} {answer[key]!r} != {value!r}"
    elif isinstance(step, Fetch) and step.expect is not None:
        if isinstance(step.expect, int):
            assert answer["error_code"] == step.expect, f"{step}: {answer}"
        else:
            ranges = [r for p in answer["partitions"] if p[0] == 0 for r in p[3]]
            assert (answer["error_code"], ranges) == (0, step.expect), f"{step}: {answer}"
    elif isinstance(step, Ack) and step.expect is not None:
        code = answer["error_code"] or (answer["partitions"][0][1] if answer["partitions"] else None)
        assert code == step.expect, f"{step}: {answer}"


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_share_group_model_answers_as_apache_kafka(name: str, share_broker: Broker) -> None:
    """A script is played once more, with a new topic and group, when it fails: a timer's edge (a
    request within milliseconds of a lock or session expiry) can fall on either side on a loaded
    machine; a real difference repeats."""
    try:
        _play(share_broker.address, name)
    except AssertionError:
        _play(share_broker.address, name)


def _play(address: tuple[str, int], name: str) -> None:
    run = _Run(address, name)
    try:
        for step in SCRIPTS[name]:
            if isinstance(step, Sleep):
                run.sleep(step)
            elif isinstance(step, Wait):
                run.wait(step)
            elif isinstance(step, Produce):
                run.produce(step)
            elif isinstance(step, Counts):
                run.compare_counts(step)
            elif isinstance(step, AwaitAssignment):
                run.await_assignment(step)
            else:
                answer = run.step(step)
                try:
                    _expected(step, answer)
                except AssertionError as exc:
                    raise AssertionError(f"{exc}\n" + "\n".join(run.log)) from None
    finally:
        run.close()
