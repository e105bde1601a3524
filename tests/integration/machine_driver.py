"""A test-side driver loop for heartbeat-protocol machines against a real broker.

Not a test module. ``Driver`` executes the commands of ``ConsumerGroupMachine`` (KIP-848) or
``ShareGroupMachine`` (KIP-932) members with kafka-python's ``KafkaNetClient`` on the test's
thread and plays their poll threads: a step is completed one loop turn after it was delivered
(the poll thread runs callbacks between two calls); every turn the application "polls". What
differs between the two protocols (the heartbeat command, its wire functions, the response
event, the CLOSED state, whether a partition may be owned by several members) is a
:class:`HeartbeatWire` and a flag.

Also the wire helpers both tests use: ``wait_for``, ``find_coordinator``, ``topic_ids``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import attrs
import pytest
from kafka.errors import IncompatibleBrokerVersion
from kafka.net.compat import KafkaNetClient
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest

from kgroup._error_codes import COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NONE, NOT_COORDINATOR
from kgroup.membership import commands as cmd
from kgroup.membership import events as ev
from kgroup.types import TopicPartition

DEADLINE_S = 60.0
COORDINATOR_ERRORS = (COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR)
T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float = DEADLINE_S) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        result = probe()
        if result is not None:
            return result
        if time.monotonic() >= deadline:
            pytest.fail(f"{what}: not true after {timeout_s} s")
        time.sleep(0.1)


def any_node(client: KafkaNetClient) -> Any:
    return wait_for("a broker", client._manager.least_loaded_node)


def find_coordinator(client: KafkaNetClient, group_id: str) -> int:
    """FindCoordinator until the group's coordinator is up (the offsets topic is created on first use).

    key_type 0 for share groups too: share groups are groups.
    """

    def probe() -> int | None:
        response = client.send_and_receive(
            any_node(client), FindCoordinatorRequest(key=group_id, key_type=0, coordinator_keys=[group_id])
        )
        found = response.coordinators[0] if getattr(response, "coordinators", None) else response
        if found.error_code in COORDINATOR_ERRORS:
            return None
        assert found.error_code == NONE, found
        return int(found.node_id)

    return wait_for(f"the coordinator of {group_id}", probe)


def topic_ids(client: KafkaNetClient, topics: list[str]) -> dict[uuid.UUID, str]:
    """Topic id -> name from a Metadata response (v10+ carries topic ids)."""
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics])
    response = client.send_and_receive(any_node(client), request)
    return {t.topic_id: t.name for t in response.topics if t.error_code == NONE}


def numbers(partitions: frozenset[TopicPartition]) -> list[int]:
    return sorted(tp.partition for tp in partitions)


@attrs.frozen
class HeartbeatWire:
    """One heartbeat protocol as the driver sees it."""

    command: type  # the machine's heartbeat command (SendConsumerGroupHeartbeat, SendShareGroupHeartbeat)
    request_message: Callable[[Any], Any]  # value -> kafka-python request
    response_value: Callable[[Any], Any]  # kafka-python response -> value (its attrs fields become the event's)
    responded: type  # the machine's response event
    closed: Any  # the machine's CLOSED state


class Member:
    """One machine, what its poll thread owns, the steps it ran and the heartbeats it sent."""

    def __init__(self, name: str, group_id: str, machine: Any) -> None:
        self.name = name
        self.group_id = group_id
        self.machine = machine
        self.steps: list[cmd.RebalanceStep] = []
        self.waiting: cmd.RebalanceStep | None = None
        self.errors: list[Exception] = []
        self.sent: list[Any] = []

    @property
    def owned(self) -> frozenset[TopicPartition]:
        owned: frozenset[TopicPartition] = self.machine.owned
        return owned


class Driver:
    """Executes the machines' commands with kafka-python's client on this thread and plays their poll threads.

    ``exclusive``: after every turn, no partition is owned by two members (the consumer
    protocol); a share group may give a partition to several members.
    """

    def __init__(self, client: KafkaNetClient, topics: list[str], wire: HeartbeatWire, *, exclusive: bool) -> None:
        self.client = client
        self.topics = topics
        self.wire = wire
        self.exclusive = exclusive
        self.in_flight: list[tuple[Member, int, Any]] = []
        self.started = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self.started

    def feed(self, member: Member, event: Any) -> None:
        self.execute(member, member.machine.handle(event, self.now()))

    def execute(self, member: Member, commands: list[Any]) -> None:
        for command in commands:
            if isinstance(command, cmd.SendFindCoordinator):
                node = find_coordinator(self.client, member.group_id)
                self.client.await_ready(node)
                self.feed(member, ev.FindCoordinatorResponded(request_id=command.request_id, error_code=NONE,
                                                               node_id=node))
            elif isinstance(command, self.wire.command):
                member.sent.append(command)
                self.client.await_ready(command.node_id)
                request = self.wire.request_message(command.request())
                self.in_flight.append((member, command.request_id, self.client.send(command.node_id, request)))
            elif isinstance(command, cmd.RequestMetadata):
                self.feed(member, ev.MetadataUpdated(topic_ids(self.client, self.topics)))
            elif isinstance(command, cmd.DeliverStep):
                assert member.waiting is None
                member.waiting = command.step
                member.steps.append(command.step)
            elif isinstance(command, (cmd.Notify, cmd.Fail)):
                member.errors.append(command.error)
            else:
                raise AssertionError(f"unexpected command {command!r}")

    def turn(self, members: list[Member]) -> None:
        self.client.poll(timeout_ms=50)
        for entry in list(self.in_flight):
            member, request_id, future = entry
            if not future.is_done:
                continue
            self.in_flight.remove(entry)
            if future.succeeded():
                value = self.wire.response_value(future.value)
                fields = {f.name: getattr(value, f.name) for f in attrs.fields(type(value))}
                self.feed(member, self.wire.responded(request_id=request_id, **fields))
            else:
                self.feed(member, ev.RequestFailed(
                    request_id=request_id, reason=repr(future.exception),
                    unsupported_version=isinstance(future.exception, IncompatibleBrokerVersion)))
        for member in members:
            if member.waiting is not None:  # the poll thread: no listener to run, the step completes
                step, member.waiting = member.waiting, None
                self.feed(member, ev.StepCompleted(step.step_id))
            if member.machine.state is not self.wire.closed:
                self.feed(member, ev.Polled())
                self.execute(member, member.machine.tick(self.now()))
        if self.exclusive:
            for a in members:
                for b in members:
                    if a is not b:
                        assert not a.owned & b.owned, f"{a.name} and {b.name} both own {sorted(a.owned & b.owned)}"
        assert not [e for m in members for e in m.errors], [e for m in members for e in m.errors]

    def run_until(self, what: str, members: list[Member], done: Callable[[], bool]) -> float:
        started = time.monotonic()
        while not done():
            if time.monotonic() - started > DEADLINE_S:
                states = {m.name: (m.machine.state.name, sorted(m.owned)) for m in members}
                pytest.fail(f"{what}: not after {DEADLINE_S} s; {states}")
            self.turn(members)
        return time.monotonic() - started
