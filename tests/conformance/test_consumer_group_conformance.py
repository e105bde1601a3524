"""ConsumerGroupModel against Apache Kafka 4.4: the same ConsumerGroupHeartbeat and offset requests to both.

Each script runs on a broker of its own kind (``group.consumer.*`` lowered so that session and
heartbeat timers take a second or two, the model configured alike), with fresh group and member
ids. A step goes to Kafka first (a connection per member), then, at the same elapsed time (the
model's clock follows the Kafka run, lockstep as the classic suite), to the model; the two answers
are normalised and must be equal:

* ConsumerGroupHeartbeat: error code, member id, member epoch, heartbeat interval and the
  assignment (``None`` when absent; else topic id -> sorted partitions). Error messages are not
  compared. Member ids are the scripts' own (v1: the member makes its id), equal on both sides.
* Where the assignor's choice is Kafka's HashMap order (``uniform`` with several members) only the
  number of partitions per member is compared; the scripts with several members use ``range``,
  whose plan depends only on the sorted member ids, and are compared exactly.
* OffsetCommit: every partition's error code. OffsetFetch: offsets and error codes.
* Inside a ``Wait`` (a coordinator timer under test, the beating members heartbeating) each side
  keeps its own member epochs, and a beat may find the two apart for at most
  ``TIMER_TOLERANCE_MS``: the model starts a timer at the request's send, Kafka when it takes the
  request in, later on a loaded machine (the classic suite's timing tolerance). By the end of the
  ``Wait`` they must agree again; the steps after it compare exactly.

``expect`` pins each script's intent on the normalised answer (a subset), for both sides.
The differences kept are listed in docs/kip848.md, "The coordinator model".
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

import kgroup._io.kafka_messages  # noqa: F401 (registers API 68 with the frame codec before its first use)
from kgroup import _error_codes as codes
from kgroup.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest, TopicIdPartitions
from kgroup.protocol.group_api import CommitPartition, CommitTopic, FetchTopic, OffsetCommitRequest, OffsetFetchRequest
from kgroup.testing import FakeClock
from kgroup.testing.coordinator import ConsumerGroupConfig, ConsumerGroupModel

from . import conftest
from .harness import CLOSED, Broker, KafkaConnection

SESSION_MS = 2000
INTERVAL_MS = 1000
#: how long a beat inside a ``Wait`` may find Kafka and the model apart (ms; module docstring)
TIMER_TOLERANCE_MS = 500
OVERRIDES: Mapping[str, Any] = {
    **conftest.BROKER_OVERRIDES,
    "group.consumer.min.session.timeout.ms": 1000,
    "group.consumer.session.timeout.ms": SESSION_MS,
    "group.consumer.min.heartbeat.interval.ms": 500,
    "group.consumer.heartbeat.interval.ms": INTERVAL_MS,
}
ASSIGNMENT_INTERVAL_MS = 1000  # Kafka 4.4's default group.consumer.assignment.interval.ms
CONFIG = ConsumerGroupConfig(
    session_timeout_ms=SESSION_MS, heartbeat_interval_ms=INTERVAL_MS, assignment_interval_ms=ASSIGNMENT_INTERVAL_MS
)
CGH, OFFSET_COMMIT, OFFSET_FETCH, METADATA = 68, 8, 9, 3


@dataclass(frozen=True)
class HB:
    """A ConsumerGroupHeartbeat from ``actor`` (fields as the request's; ``owned`` partitions of the topic)."""

    actor: str
    epoch: int | None  # None: the actor's epoch from its last answer
    owned: tuple[int, ...] | None = None
    join: bool = False
    instance: str | None = None
    assignor: str | None = "range"
    rebalance_timeout_ms: int = 10000
    expect: Mapping[str, Any] = field(default_factory=dict)
    as_member: str | None = None  # send with another actor's member id
    group: str | None = None  # another group id than the script's


@dataclass(frozen=True)
class Commit:
    """OffsetCommit v9 of ``partition`` at ``offset`` with ``epoch`` (the member epoch) from ``actor``."""

    actor: str
    epoch: int
    offset: int
    partition: int = 0
    expect: int | None = None


@dataclass(frozen=True)
class Fetch:
    """OffsetFetch v8 of partitions 0-2."""

    actor: str


@dataclass(frozen=True)
class Sleep:
    """Let ``ms`` pass on both sides, nothing sent (the assignment interval under test)."""

    ms: int


@dataclass(frozen=True)
class Wait:
    """Let ``ms`` pass on both sides while ``beating`` actors heartbeat every interval (a timer under test)."""

    ms: int
    beating: tuple[tuple[str, tuple[int, ...]], ...] = ()


Step = HB | Commit | Fetch | Sleep | Wait


def _ok(epoch: int, assignment: Any = ...) -> dict[str, Any]:
    out: dict[str, Any] = {"error_code": 0, "member_epoch": epoch}
    if assignment is not ...:
        out["assignment"] = assignment
    return out


def _err(code: int) -> dict[str, Any]:
    return {"error_code": code}


SCRIPTS: dict[str, list[Step]] = {
    "a_lone_member_joins_heartbeats_and_leaves": [
        HB("a", 0, join=True, assignor="uniform", expect=_ok(2, {0: [0, 1, 2]})),
        HB("a", 2, owned=(0, 1, 2), expect=_ok(2, None)),
        HB("a", 2, expect=_ok(2, None)),
        HB("a", -1, expect=_ok(-1)),
        HB("a", 2, expect=_err(codes.UNKNOWN_MEMBER_ID)),
    ],
    "a_second_member_gets_partitions_only_after_they_are_revoked": [
        HB("a", 0, join=True, expect=_ok(2, {0: [0, 1, 2]})),
        HB("a", 2, owned=(0, 1, 2), expect=_ok(2, None)),
        HB("b", 0, join=True, expect=_ok(2, {})),
        Sleep(ASSIGNMENT_INTERVAL_MS + 100),
        HB("a", 2, owned=(0, 1, 2), expect=_ok(2, {0: [0, 1]})),
        HB("b", 2, owned=(), expect=_ok(3, None)),
        HB("a", 2, owned=(0, 1), expect=_ok(3, None)),
        HB("b", 3, owned=(), expect=_ok(3, {0: [2]})),
        HB("a", -1, expect=_ok(-1)),
        Sleep(ASSIGNMENT_INTERVAL_MS + 100),
        HB("b", 3, owned=(2,), expect=_ok(4, {0: [0, 1, 2]})),
    ],
    "epochs_out_of_line_are_fenced": [
        HB("a", 0, join=True, expect=_ok(2)),
        HB("a", 5, owned=(0, 1, 2), expect=_err(codes.FENCED_MEMBER_EPOCH)),
        HB("a", 0, join=True, expect=_ok(2, {0: [0, 1, 2]})),
        HB("a", 2, owned=(0, 1, 2), expect=_ok(2)),
        HB("b", 0, join=True, expect=_ok(2)),
        Sleep(ASSIGNMENT_INTERVAL_MS + 100),
        HB("a", 2, owned=(0, 1, 2), expect=_ok(2, {0: [0, 1]})),
        HB("a", 2, owned=(0, 1), expect=_ok(3)),
        HB("a", 0, join=True, expect=_ok(3, {0: [0, 1]})),
        HB("a", 2, owned=(0, 1), expect=_ok(3, None)),  # still its previous epoch
        HB("a", 1, owned=(0, 1), expect=_err(codes.FENCED_MEMBER_EPOCH)),
        HB("x", 3, owned=(), expect=_err(codes.UNKNOWN_MEMBER_ID)),
        HB("a", 3, owned=(0, 1), group="other"),
    ],
    "invalid_requests": [
        HB("a", 0, join=True, rebalance_timeout_ms=-1, expect=_err(codes.INVALID_REQUEST)),
        HB("a", 0, join=True, assignor="sticky", expect=_err(codes.UNSUPPORTED_ASSIGNOR)),
        HB("a", -3, expect=_err(codes.INVALID_REQUEST)),
        HB("a", -2, expect=_err(codes.INVALID_REQUEST)),
    ],
    "a_static_member_leaves_for_now_and_a_new_process_takes_its_place": [
        HB("a", 0, join=True, instance="i", expect=_ok(2, {0: [0, 1, 2]})),
        HB("a2", 0, join=True, instance="i", expect=_err(codes.UNRELEASED_INSTANCE_ID)),
        HB("a", -2, instance="i", expect=_ok(-2)),
        HB("a2", 0, join=True, instance="i", expect=_ok(2, {0: [0, 1, 2]})),
        HB("a", 2, instance="i", owned=(0, 1, 2), expect=_err(codes.FENCED_INSTANCE_ID)),
        HB("a2", 2, instance="i", owned=(0, 1, 2), expect=_ok(2, None)),
        HB("a2", -1, instance="i", expect=_ok(-1)),
        HB("a2", 2, instance="i", expect=_err(codes.UNKNOWN_MEMBER_ID)),
    ],
    "a_fenced_static_member_cannot_rejoin_until_it_releases_its_instance_id": [
        HB("a", 0, join=True, instance="i", expect=_ok(2, {0: [0, 1, 2]})),
        HB("a", 5, instance="i", owned=(0, 1, 2), expect=_err(codes.FENCED_MEMBER_EPOCH)),
        # the same member id at epoch 0: refused while the instance id is held (Kafka 4.4; Java's
        # consumer takes UNRELEASED_INSTANCE_ID as fatal)
        HB("a", 0, join=True, instance="i", expect=_err(codes.UNRELEASED_INSTANCE_ID)),
        # a static leave is accepted at any epoch: it releases the instance id, the assignment kept
        HB("a", -2, instance="i", expect=_ok(-2)),
        HB("a", 0, join=True, instance="i", expect=_ok(2, {0: [0, 1, 2]})),
        HB("a", 2, instance="i", owned=(0, 1, 2), expect=_ok(2, None)),
        HB("a", 7, instance="i", owned=(0, 1, 2), expect=_err(codes.FENCED_MEMBER_EPOCH)),
        HB("a", -2, instance="i", expect=_ok(-2)),
        HB("a", -2, instance="i", expect=_ok(-2)),
        HB("a", 0, join=True, instance="i", expect=_ok(2, {0: [0, 1, 2]})),
        HB("a", -1, instance="i", expect=_ok(-1)),
        HB("a", -2, instance="i", expect=_err(codes.UNKNOWN_MEMBER_ID)),
        Sleep(ASSIGNMENT_INTERVAL_MS + 100),
        HB("a", 0, join=True, instance="i", expect=_ok(4, {0: [0, 1, 2]})),
    ],
    "commits_carry_the_member_epoch": [
        HB("a", 0, join=True, expect=_ok(2)),
        Commit("a", 2, 7, expect=codes.NONE),
        Commit("a", 1, 8, expect=codes.STALE_MEMBER_EPOCH),
        Commit("a", 3, 8, expect=codes.STALE_MEMBER_EPOCH),
        Commit("x", 2, 8, expect=codes.UNKNOWN_MEMBER_ID),
        Commit("anyone", -1, 8, expect=codes.UNKNOWN_MEMBER_ID),
        HB("b", 0, join=True, expect=_ok(2)),
        Commit("a", 2, 9, expect=codes.NONE),
        Sleep(ASSIGNMENT_INTERVAL_MS + 100),
        HB("a", 2, owned=(0, 1, 2), expect=_ok(2, {0: [0, 1]})),
        Commit("a", 2, 10, expect=codes.NONE),
        Commit("a", 2, 10, partition=2, expect=codes.NONE),
        HB("a", 2, owned=(0, 1), expect=_ok(3)),
        Commit("a", 2, 11, expect=codes.NONE),
        Commit("a", 2, 11, partition=2, expect=codes.STALE_MEMBER_EPOCH),
        Commit("a", 1, 11, expect=codes.STALE_MEMBER_EPOCH),
        Commit("a", 3, 12, expect=codes.NONE),
        Commit("a", 3, 12, partition=2, expect=codes.NONE),
        Fetch("a"),
        HB("a", -1),
        HB("b", -1),
        Commit("anyone", -1, 13, expect=codes.NONE),
        Fetch("a"),
    ],
    "a_silent_member_is_removed_at_its_session_timeout": [
        HB("a", 0, join=True, expect=_ok(2)),
        HB("b", 0, join=True, expect=_ok(2)),
        Sleep(ASSIGNMENT_INTERVAL_MS + 100),
        HB("a", 2, owned=(0, 1, 2), expect=_ok(2, {0: [0, 1]})),
        HB("b", 2, owned=(), expect=_ok(3)),
        Wait(SESSION_MS + 600, beating=(("b", ()),)),
        HB("a", 2, owned=(0, 1), expect=_err(codes.UNKNOWN_MEMBER_ID)),
        HB("b", None, owned=(0, 1, 2), expect=_ok(4, None)),
    ],
    "a_member_that_keeps_revoked_partitions_is_fenced_at_its_rebalance_timeout": [
        HB("a", 0, join=True, rebalance_timeout_ms=1000, expect=_ok(2)),
        HB("b", 0, join=True, expect=_ok(2)),
        Sleep(ASSIGNMENT_INTERVAL_MS + 100),
        HB("a", 2, owned=(0, 1, 2), expect=_ok(2, {0: [0, 1]})),
        Wait(1500, beating=(("b", ()),)),
        HB("a", 2, owned=(0, 1, 2), expect=_err(codes.UNKNOWN_MEMBER_ID)),
        HB("b", None, owned=(), expect={"error_code": 0}),
    ],
}


@pytest.fixture(scope="module")
def consumer_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """Apache Kafka 4.4 with the consumer group protocol's timers lowered (:data:`OVERRIDES`)."""
    yield from conftest._serve(tmp_path_factory, "conformance-kafka-consumer-groups", OVERRIDES)


def _topic_id(address: tuple[str, int]) -> uuid.UUID:
    conn = KafkaConnection(address, "metadata", time.monotonic())
    try:
        conn.send(METADATA, 12, {"topics": [{"topic_id": None, "name": conftest.TOPIC_NAME}],
                                 "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
        got = conn.receive(10.0)
    finally:
        conn.close()
    assert got is not None and isinstance(got[1], dict)
    return uuid.UUID(str(got[1]["topics"][0]["topic_id"]))


class _Run:
    """One script on both sides."""

    def __init__(self, address: tuple[str, int], topic_id: uuid.UUID, name: str) -> None:
        self.started = time.monotonic()
        self.address = address
        self.topic_id = topic_id
        self.group = f"cg-{name[:20]}-{uuid.uuid4().hex[:8]}"
        self.ids: dict[str, str] = {}
        self.conns: dict[str, KafkaConnection] = {}
        self.clock = FakeClock()
        self.model = ConsumerGroupModel(
            CONFIG, clock=self.clock, topics=lambda: {conftest.TOPIC_NAME: (topic_id, conftest.TOPIC_PARTITIONS)},
            partition_exists=lambda t, p: t == conftest.TOPIC_NAME and p < conftest.TOPIC_PARTITIONS,
        )
        self.log: list[str] = []
        self.epochs: dict[str, int] = {}
        #: the model's own member epochs while a ``Wait`` lets the two sides be apart (else ``epochs``)
        self.model_epochs: dict[str, int] = {}

    def member(self, actor: str) -> str:
        return self.ids.setdefault(actor, f"{actor}-{uuid.uuid4()}")

    def conn(self, actor: str) -> KafkaConnection:
        if actor not in self.conns:
            self.conns[actor] = KafkaConnection(self.address, actor, self.started)
        return self.conns[actor]

    def kafka(self, actor: str, api: int, version: int, body: Mapping[str, Any]) -> Any:
        conn = self.conn(actor)
        sent = conn.send(api, version, body)
        self.clock.advance(max(0.0, sent / 1000 - self.clock.monotonic()))
        got = conn.receive(10.0)
        assert got is not None and got[1] is not CLOSED, f"Kafka did not answer {body}"
        return got[1]

    # ---- heartbeats
    def heartbeat(self, step: HB) -> tuple[Any, Any]:
        member_id = self.member(step.as_member or step.actor)
        owned = () if step.join else step.owned
        epoch = self.epochs[step.actor] if step.epoch is None else step.epoch
        model_epoch = self.model_epochs.get(step.actor, epoch) if step.epoch is None else step.epoch
        request = ConsumerGroupHeartbeatRequest(
            group_id=step.group or self.group,
            member_id=member_id,
            member_epoch=model_epoch,
            instance_id=step.instance,
            rebalance_timeout_ms=step.rebalance_timeout_ms if step.join else -1,
            subscribed_topic_names=(conftest.TOPIC_NAME,) if step.join else None,
            server_assignor=step.assignor if step.join else None,
            topic_partitions=None if owned is None else (TopicIdPartitions(self.topic_id, owned),) if owned else (),
        )
        body = {
            "group_id": request.group_id, "member_id": request.member_id, "member_epoch": request.member_epoch,
            "instance_id": request.instance_id, "rack_id": None, "rebalance_timeout_ms": request.rebalance_timeout_ms,
            "subscribed_topic_names": None if request.subscribed_topic_names is None
            else list(request.subscribed_topic_names),
            "subscribed_topic_regex": None, "server_assignor": request.server_assignor,
            "topic_partitions": None if owned is None
            else [{"topic_id": self.topic_id, "partitions": list(owned)}] if owned else [],
        }
        kafka = self.kafka(step.actor, CGH, 1, body)
        model = self.model.heartbeat(request).response
        return self._hb_kafka(kafka), self._hb_model(model)

    def _assignment(self, parts: list[tuple[uuid.UUID, list[int]]] | None) -> dict[int, list[int]] | None:
        if parts is None:
            return None
        out: dict[int, list[int]] = {}
        for topic_id, partitions in parts:
            assert topic_id == self.topic_id
            if partitions:
                out[0] = sorted(partitions)
        return out

    def _hb_kafka(self, answer: Mapping[str, Any]) -> dict[str, Any]:
        assignment = answer.get("assignment")
        parts = None if assignment is None else [
            (uuid.UUID(str(tp["topic_id"])), list(tp["partitions"])) for tp in assignment["topic_partitions"]
        ]
        return {
            "error_code": answer["error_code"], "member_id": answer["member_id"],
            "member_epoch": answer["member_epoch"], "heartbeat_interval_ms": answer["heartbeat_interval_ms"],
            "assignment": self._assignment(parts),
        }

    def _hb_model(self, answer: Any) -> dict[str, Any]:
        parts = None if answer.assignment is None else [(tp.topic_id, list(tp.partitions)) for tp in answer.assignment]
        return {
            "error_code": answer.error_code, "member_id": answer.member_id, "member_epoch": answer.member_epoch,
            "heartbeat_interval_ms": answer.heartbeat_interval_ms, "assignment": self._assignment(parts),
        }

    # ---- offsets
    def commit(self, step: Commit) -> tuple[Any, Any]:
        member_id = "" if step.actor == "anyone" else self.member(step.actor)
        body = {
            "group_id": self.group, "generation_id_or_member_epoch": step.epoch, "member_id": member_id,
            "group_instance_id": None,
            "topics": [{"name": conftest.TOPIC_NAME, "partitions": [
                {"partition_index": step.partition, "committed_offset": step.offset, "committed_leader_epoch": -1,
                 "committed_metadata": ""}]}],
        }
        kafka = self.kafka(step.actor, OFFSET_COMMIT, 9, body)
        request = OffsetCommitRequest(
            api_version=9, group_id=self.group, generation_id=step.epoch, member_id=member_id,
            topics=(CommitTopic(name=conftest.TOPIC_NAME, partitions=(
                CommitPartition(partition_index=step.partition, committed_offset=step.offset),)),),
        )
        model = self.model.offset_commit(request).response
        return (
            [p["error_code"] for t in kafka["topics"] for p in t["partitions"]],
            [p.error_code for t in model.topics for p in t.partitions],
        )

    def fetch(self, step: Fetch) -> tuple[Any, Any]:
        body = {"group_id": self.group, "topics": [{"name": conftest.TOPIC_NAME, "partition_indexes": [0, 1, 2]}],
                "require_stable": False}
        kafka = self.kafka(step.actor, OFFSET_FETCH, 7, body)
        model = self.model.offset_fetch(OffsetFetchRequest(group_id=self.group, topics=(
            FetchTopic(name=conftest.TOPIC_NAME, partition_indexes=(0, 1, 2)),))).response
        return (
            (kafka["error_code"], [(p["committed_offset"], p["error_code"]) for t in kafka["topics"]
                                   for p in t["partitions"]]),
            (model.error_code, [(p.committed_offset, p.error_code) for t in model.topics for p in t.partitions]),
        )

    def sleep(self, step: Sleep) -> None:
        time.sleep(step.ms / 1000)  # the behaviour under test (a timer of the coordinator), not synchronisation
        self.clock.advance(max(0.0, (time.monotonic() - self.started) - self.clock.monotonic()))
        self.model.tick()

    def wait(self, step: Wait) -> None:
        until = time.monotonic() + step.ms / 1000
        apart_since: float | None = None
        while time.monotonic() < until:
            for actor, owned in step.beating:
                k, m = self.heartbeat(HB(actor, None, owned=owned))
                self.log.append(f"{step} beat {actor}: kafka {k} model {m}")
                for epochs, answer in ((self.epochs, k), (self.model_epochs, m)):
                    if answer["error_code"] == 0 and answer["member_epoch"] > 0:
                        epochs[actor] = answer["member_epoch"]
                if k == m:
                    apart_since = None
                    continue
                apart_since = time.monotonic() if apart_since is None else apart_since
                assert (time.monotonic() - apart_since) * 1000 <= TIMER_TOLERANCE_MS, "\n".join(self.log)
            time.sleep(min(INTERVAL_MS / 2000, max(0.0, until - time.monotonic())))  # a poll interval of the wait
        assert apart_since is None, "Kafka and the model still apart at the end of the wait:\n" + "\n".join(self.log)
        self.model_epochs.clear()
        self.clock.advance(max(0.0, (time.monotonic() - self.started) - self.clock.monotonic()))
        self.model.tick()

    def step(self, step: Step) -> Any:
        if isinstance(step, HB):
            k, m = self.heartbeat(step)
        elif isinstance(step, Commit):
            k, m = self.commit(step)
        elif isinstance(step, Fetch):
            k, m = self.fetch(step)
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


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_consumer_group_model_answers_as_apache_kafka(name: str, consumer_broker: Broker) -> None:
    """A script is played once more, with new groups, when it fails: a timer's edge (a heartbeat sent
    within milliseconds of a session or rebalance timeout) can fall on either side on a loaded
    machine; a real difference repeats."""
    address = consumer_broker.address
    topic_id = _topic_id(address)
    try:
        _play(address, topic_id, name)
    except AssertionError:
        _play(address, topic_id, name)


def _play(address: tuple[str, int], topic_id: uuid.UUID, name: str) -> None:
    run = _Run(address, topic_id, name)
    try:
        for step in SCRIPTS[name]:
            if isinstance(step, Sleep):
                run.sleep(step)
                continue
            if isinstance(step, Wait):
                run.wait(step)
                continue
            answer = run.step(step)
            if isinstance(step, HB):
                for key, value in step.expect.items():
                    assert answer[key] == value, f"{step}: {key} {answer[key]!r} != {value!r}\n" + "\n".join(run.log)
            elif isinstance(step, Commit) and step.expect is not None:
                assert answer == [step.expect], f"{step}: {answer}\n" + "\n".join(run.log)
    finally:
        run.close()
