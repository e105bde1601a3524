"""The member id under the consumer protocol is the consumer's, for its lifetime (KIP-1082).

Java 4.x's ``AbstractMembershipManager`` generates the member id once, when the consumer is
created (``Uuid.randomUuid()``, a final field), and joins with it every time: after fencing
(FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID), after the poll timeout, and after ``unsubscribe()``
then ``subscribe()``. kgroup's ``Consumer(group_protocol="consumer")`` keeps the id it joined with
first across subscriptions; the machine keeps it across fencing (``test_kip848_machine.py``).

The real ``Consumer`` on the deterministic simulator (virtual time, no sleeps) against the
consumer-group coordinator model: the heartbeats the model received, and the OffsetFetch the
consumer sent for its positions, which carries the member id and epoch (OffsetFetch v9+, KIP-848).
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any

import pytest

import kgroup
from kgroup._driver.group_thread import GroupThread
from kgroup._driver.mailbox import Mailbox
from kgroup.config import ConsumerConfig
from kgroup.membership.consumer_group import ConsumerGroupMachine
from kgroup.protocol.group_api import OffsetFetchRequest
from kgroup.testing import FakeClock
from kgroup.testing.coordinator import ConsumerGroupConfig, CoordinatorConfig
from kgroup.testing.simulation import SimulatedGroup
from kgroup.testing.simulation._cluster import SimCluster
from kgroup.testing.simulation._group import _Member
from kgroup.types import Generation

TOPIC = "events"
PARTITIONS = 4


class ConsumerProtocolGroup:
    """A ``SimulatedGroup`` whose coordinator runs the consumer protocol, recording heartbeats and fetches."""

    def __init__(self, seed: int) -> None:
        self.group = SimulatedGroup({TOPIC: PARTITIONS}, seed=seed)
        self.group.cluster = SimCluster(
            self.group.scheduler, self.group.rng, {TOPIC: PARTITIONS}, CoordinatorConfig(), self.group._trace,
            consumer_group_config=ConsumerGroupConfig(session_timeout_ms=10000, heartbeat_interval_ms=1000),
        )
        #: (member id, member epoch) of every ConsumerGroupHeartbeat the coordinator answered
        self.heartbeats: list[tuple[str, int]] = []
        self.group.cluster.on_heartbeat = lambda owner, request, response: self.heartbeats.append(
            (request.member_id, request.member_epoch))
        #: the member each OffsetFetch carried (None: none)
        self.fetches: list[Generation | None] = []

    def add(self, name: str, app: Callable[[kgroup.Consumer, Callable[[], bool]], None],
            **config: Any) -> kgroup.Consumer:
        settings = ConsumerConfig(bootstrap_servers="simulated:9092", group_id=self.group.group_id, client_id=name,
                                  group_protocol="consumer", auto_offset_reset="earliest", **config)
        member = _Member(self.group, name, app, settings, {})
        self.group.members[name] = member
        sent, fetches = member.transport.offset_fetch, self.fetches

        def recorded(request: OffsetFetchRequest, node_id: int, timeout_ms: int) -> concurrent.futures.Future[Any]:
            member = request.member_id
            fetches.append(None if member is None else Generation(request.member_epoch, member))
            return sent(request, node_id, timeout_ms)

        member.transport.offset_fetch = recorded  # type: ignore[method-assign]
        return member.consumer

    def owns_everything(self, consumer: kgroup.Consumer) -> bool:
        return len(consumer.assignment()) == PARTITIONS and consumer.group_metadata().generation_id > 0


def app_with_plan(plan: list[str]) -> Callable[[kgroup.Consumer, Callable[[], bool]], None]:
    """Subscribe and poll; ``"unsubscribe"`` in ``plan``: unsubscribe, poll nothing a while, subscribe again."""

    def run(consumer: kgroup.Consumer, running: Callable[[], bool]) -> None:
        consumer.subscribe([TOPIC])
        while running():
            if plan and plan[0] == "unsubscribe":
                consumer.unsubscribe()
                consumer._clock.sleep(2.0)  # virtual time: the coordinator sees the member gone
                plan[0] = "subscribed again"
                consumer.subscribe([TOPIC])
            consumer.poll(100)
        consumer.close()

    return run


@pytest.mark.parametrize("static", [False, True], ids=["dynamic", "static"])
def test_unsubscribe_then_subscribe_rejoins_with_the_same_member_id(static: bool) -> None:
    sim = ConsumerProtocolGroup(seed=5)
    plan: list[str] = []
    a = sim.add("a", app_with_plan(plan), **({"group_instance_id": "a-0"} if static else {}))
    assert sim.group.run_until(lambda: sim.owns_everything(a), 30)
    member_id = a.group_metadata().member_id
    assert sim.heartbeats[0] == (member_id, 0)

    plan.append("unsubscribe")
    seen = len(sim.heartbeats)
    assert sim.group.run_until(lambda: plan == ["subscribed again"] and sim.owns_everything(a), 30)
    leave_and_join = [epoch for _, epoch in sim.heartbeats[seen:] if epoch <= 0]
    assert leave_and_join[:2] == [-2 if static else -1, 0], sim.heartbeats[seen:]  # left, then joined again
    assert {mid for mid, _ in sim.heartbeats} == {member_id}  # one member id for the consumer's lifetime
    assert a.group_metadata().member_id == member_id
    sim.group.close()


def test_the_position_lookup_carries_the_member_id_and_epoch() -> None:
    sim = ConsumerProtocolGroup(seed=3)
    plan: list[str] = []
    a = sim.add("a", app_with_plan(plan))
    assert sim.group.run_until(lambda: sim.owns_everything(a) and bool(sim.fetches), 30)
    first = a.group_metadata()
    assert sim.fetches[0] == Generation(first.generation_id, first.member_id)

    plan.append("unsubscribe")
    fetched = len(sim.fetches)
    assert sim.group.run_until(lambda: plan == ["subscribed again"] and sim.owns_everything(a)
                               and len(sim.fetches) > fetched, 30)
    again = a.group_metadata()
    assert sim.fetches[fetched] == Generation(again.generation_id, first.member_id)
    sim.group.close()


# ==================================================================== the pieces that carry it


def test_the_group_thread_joins_with_the_member_id_it_is_given() -> None:
    config = ConsumerConfig(bootstrap_servers="k:9092", group_id="g", group_protocol="consumer")
    thread = GroupThread(config, None, Mailbox(), FakeClock(), member_id="kept-id")  # type: ignore[arg-type]
    assert thread.consumer_member_id == "kept-id"
    fresh = GroupThread(config, None, Mailbox(), FakeClock())  # type: ignore[arg-type]
    assert fresh.consumer_member_id not in (None, "kept-id")
    classic = ConsumerConfig(bootstrap_servers="k:9092", group_id="g")
    assert GroupThread(classic, None, Mailbox(), FakeClock()).consumer_member_id is None  # type: ignore[arg-type]


def test_the_machine_keeps_the_member_id_it_is_given() -> None:
    config = ConsumerConfig(bootstrap_servers="k:9092", group_id="g", group_protocol="consumer")
    assert ConsumerGroupMachine(config, member_id="kept-id").member_id == "kept-id"
