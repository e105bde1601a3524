"""Share groups' administration (KIP-932) against Apache Kafka 4.4: ``GroupAdmin`` and the ``kgroup`` CLI.

Two :class:`ShareGroupMachine` members, run by the driver loop of
``tests/integration/machine_driver.py``, hold a share group on a 3-partition topic that already
has records. Then, on Kafka's own coordinator:

* ``list_groups()`` and ``kgroup list`` show the group with type "share";
* ``describe_group()`` (ShareGroupDescribe) and ``kgroup describe`` show both members, their
  epochs and their assignments by topic name, covering every partition, with the log end offsets
  (the start offsets, DescribeShareGroupOffsets, once the coordinator initialised them);
* AlterShareGroupOffsets is refused while the members are there (NON_EMPTY_GROUP, as Kafka
  requires); once both left and the group is Empty, ``kgroup reset-offsets --to-earliest
  --execute`` sets every start offset to 0 (AlterShareGroupOffsets), and ``share_group_offsets``
  and ``lag`` then show 0 and the records produced;
* ``kgroup delete-offsets`` deletes its start offsets of the topic (DeleteShareGroupOffsets);
* ``kgroup delete`` deletes it (DeleteGroups), and it is listed no more.

Runs on ``broker_kinds("apache-kafka")``: kgroup.testing's Apache Kafka 4.4 serves share groups
as it is (docs/share-groups.md).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from kafka.net.compat import KafkaNetClient

from kgroup._io import kafka_messages as wire
from kgroup.admin import GroupAdmin, GroupNotEmptyError
from kgroup.cli import main
from kgroup.config import ConsumerConfig
from kgroup.membership import events as ev
from kgroup.membership.share_group import (
    SendShareGroupHeartbeat,
    ShareGroupHeartbeatResponded,
    ShareGroupMachine,
    ShareMemberState,
)
from kgroup.testing import produce
from kgroup.types import TopicPartition
from tests.integration.machine_driver import Driver, HeartbeatWire, Member, wait_for

pytestmark = pytest.mark.broker_kinds("apache-kafka")

PER_PARTITION = 4  # records produced to each partition before the group exists

SHARE_WIRE = HeartbeatWire(
    command=SendShareGroupHeartbeat,
    request_message=wire.share_heartbeat_request_message,
    response_value=wire.share_heartbeat_response_value,
    responded=ShareGroupHeartbeatResponded,
    closed=ShareMemberState.CLOSED,
)


def cli(bootstrap: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, [*args, "--bootstrap-servers", bootstrap, "--timeout-ms", "30000"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def cli_json(bootstrap: str, *args: str) -> Any:
    code, out = cli(bootstrap, *args, "--json")
    assert code == 0, out
    return json.loads(out)


@pytest.fixture
def net(kafka_bootstrap: str) -> Iterator[KafkaNetClient]:
    client = KafkaNetClient(bootstrap_servers=kafka_bootstrap, client_id="kgroup-share-admin-test")
    client.check_version()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def admin(kafka_bootstrap: str) -> Iterator[GroupAdmin]:
    with GroupAdmin.connect(kafka_bootstrap, timeout_ms=30000) as group_admin:
        yield group_admin


def member(name: str, group_id: str, seed: int) -> Member:
    config = ConsumerConfig(bootstrap_servers="unused:9092", group_id=group_id)
    return Member(name, group_id, ShareGroupMachine(config, rng=random.Random(seed)))


def test_a_share_group_is_listed_described_reset_once_empty_and_deleted(
    net: KafkaNetClient, admin: GroupAdmin, kafka_bootstrap: str, topic_factory: Any, group_id_factory: Any
) -> None:
    served = net._manager.broker_version_data.api_versions or {}
    versions = {key: served.get(key) for key in (77, 90, 91, 92)}
    print(f"\nApiVersions of the share-group admin APIs (key: min, max): {versions}")
    # the versions kgroup's schemas carry: ShareGroupDescribe 1, DescribeShareGroupOffsets 0-1, Alter/Delete 0
    assert versions == {77: (1, 1), 90: (0, 1), 91: (0, 0), 92: (0, 0)}
    topic = topic_factory(3)
    group_id = group_id_factory()
    everything = frozenset(TopicPartition(topic, p) for p in range(3))
    produce(kafka_bootstrap, topic, [(p, None, b"%d-%d" % (p, i)) for p in range(3) for i in range(PER_PARTITION)])
    driver = Driver(net, [topic], SHARE_WIRE, exclusive=False)
    a, b = member("a", group_id, seed=1), member("b", group_id, seed=2)
    stable = ShareMemberState.STABLE
    for m in (a, b):
        driver.feed(m, ev.Subscribe(frozenset({topic})))
    driver.run_until(
        "a and b both have partitions, together all of them", [a, b],
        lambda: bool(a.owned) and bool(b.owned) and a.owned | b.owned == everything
        and a.machine.state is stable and b.machine.state is stable,
    )

    listed = {g.group_id: g for g in admin.list_groups()}
    assert group_id in listed, sorted(listed)
    assert (listed[group_id].group_type, listed[group_id].protocol_type) == ("share", "share")
    rows = {g["group_id"]: g for g in cli_json(kafka_bootstrap, "list")["groups"]}
    assert rows[group_id]["group_type"] == "share"

    def described() -> Any:
        d = admin.describe_group(group_id)
        ids = {m.member_id for m in d.members}
        held = frozenset(tp for m in d.members for tp in m.assignment)
        return d if ids == {a.machine.member_id, b.machine.member_id} and held == everything else None

    description = driver_wait(driver, [a, b], "the coordinator describes both members", described)
    assert (description.group_type, description.protocol_type, description.state) == ("share", "share", "Stable")
    assert description.group_epoch is not None and description.group_epoch > 0
    assert description.assignment_epoch == description.group_epoch
    by_id = {m.member_id: m for m in description.members}
    assert frozenset(by_id[a.machine.member_id].assignment) == a.owned
    assert by_id[a.machine.member_id].subscribed_topics == (topic,)
    assert by_id[a.machine.member_id].member_epoch == a.machine.member_epoch
    assert admin.describe_share_group(group_id).members == description.members

    # members that never fetched: the coordinator may not have initialised the share partitions
    # yet (no start offset: "-"); the log end offsets are known, every partition is listed
    shown = cli_json(kafka_bootstrap, "describe", group_id)
    print(f"start offsets while the members are there: {[o['committed_offset'] for o in shown['offsets']]}")
    assert shown["group_type"] == "share" and len(shown["members"]) == 2
    assert {(o["partition"], o["log_end_offset"]) for o in shown["offsets"]} == {(p, PER_PARTITION) for p in range(3)}
    assert {o["committed_offset"] for o in shown["offsets"]} <= {None, PER_PARTITION}, shown["offsets"]
    code, text = cli(kafka_bootstrap, "describe", group_id)
    assert code == 0 and "START-OFFSET" in text and "share" in text, text

    with pytest.raises(GroupNotEmptyError) as refused:
        admin.alter_share_group_offsets(group_id, dict.fromkeys(everything, 0))
    assert refused.value.error_name == "NON_EMPTY_GROUP"
    code, out = cli(kafka_bootstrap, "reset-offsets", group_id, "--topic", topic, "--to-earliest", "--execute")
    assert code == 1 and "inactive" in out, out

    for m in (a, b):
        driver.feed(m, ev.Leave())
    driver.run_until("both left", [a, b], lambda: a.machine.state is b.machine.state is ShareMemberState.CLOSED)
    wait_for("the group is Empty", lambda: admin.describe_group(group_id).state == "Empty" or None)

    plan = cli_json(kafka_bootstrap, "reset-offsets", group_id, "--topic", topic, "--to-earliest", "--execute")
    assert plan["group_type"] == "share" and plan["executed"]
    assert {(o["partition"], o["new_offset"], o["error"]) for o in plan["offsets"]} == {(p, 0, None) for p in range(3)}
    after = admin.share_group_offsets(group_id)
    assert {tp: s.start_offset for tp, s in after.items()} == dict.fromkeys(everything, 0)
    lag = {p.topic_partition: p.lag for p in admin.lag(group_id)}
    assert lag == dict.fromkeys(everything, PER_PARTITION)

    deleted = cli_json(kafka_bootstrap, "delete-offsets", group_id, "--topic", topic)
    assert deleted["topics"] == [{"topic": topic, "error_code": 0, "error": None}]
    assert admin.share_group_offsets(group_id) == {}, "DeleteShareGroupOffsets took the start offsets away"

    assert cli_json(kafka_bootstrap, "delete", group_id)["groups"] == [
        {"group_id": group_id, "error_code": 0, "error": None}]
    assert group_id not in {g.group_id for g in admin.list_groups()}
    assert admin.describe_share_group(group_id).state == "Dead", "Java's describeShareGroups: gone is Dead"
    code, out = cli(kafka_bootstrap, "describe", group_id)
    assert code == 1 and "does not exist" in out, out


def driver_wait(driver: Driver, members: list[Member], what: str, probe: Any) -> Any:
    """``probe()``'s first non-None value, the members heartbeating meanwhile."""
    found: list[Any] = []

    def done() -> bool:
        value = probe()
        if value is not None:
            found.append(value)
        return bool(found)

    driver.run_until(what, members, done)
    return found[0]
