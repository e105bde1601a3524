"""The ``kgroup`` command line against a real broker.

Group semantics go through ``kafka_cluster`` (the coordinator proxy: Kafka's coordinator on the
wire, Tansu serving the data, ListOffsets LATEST answered with the log end offset). The bare
broker tests show what Tansu itself answers; where it deviates (broker-notes S9e, S11b, S11d,
ListOffsets by time) they are strict xfails naming the row, and those also run on Apache Kafka
(``[apache-kafka]``), where they must pass. ``list``, ``reset-offsets`` and ``delete`` run on
both brokers (``group_coordinator``: Kafka's own coordinator, or the proxy over Tansu).
Consumers are polled from the test thread only; every wait has a deadline.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

import kgroup
from kgroup import TopicPartition
from kgroup.admin import GroupAdmin
from kgroup.cli import ENV_BOOTSTRAP, main
from kgroup.testing import produce

from . import harness
from .harness import BOTH, poll_until, topic_of_records

WAIT_S = 40.0
PER_PARTITION = 10  # N records produced per partition
COMMITTED = 4  # M, the offset committed per partition


def cli(bootstrap: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, [*args, "--bootstrap-servers", bootstrap, "--timeout-ms", "20000"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def describe(bootstrap: str, group: str) -> dict:
    code, out = cli(bootstrap, "describe", group, "--json")
    assert code == 0, out
    return json.loads(out)


def consumer(bootstrap: str, group: str, name: str, **config) -> kgroup.Consumer:
    return harness.consumer(bootstrap, group, name, **{"enable_auto_commit": False, **config})


@contextlib.contextmanager
def member(bootstrap: str, group: str, name: str, topic: str, *, owns: set[TopicPartition] | None = None,
           what: str = "assignment", commit: dict[TopicPartition, int] | None = None) -> Iterator[kgroup.Consumer]:
    """A :func:`consumer` of ``group`` subscribed to ``topic``, polled until it owns ``owns`` (None: any
    partition), that then committed ``commit``; closed (5 s) at the end."""
    c = consumer(bootstrap, group, name)
    try:
        c.subscribe([topic])
        poll_until([c], (lambda: bool(c.assignment())) if owns is None else (lambda: c.assignment() == owns), what)
        if commit is not None:
            c.commit(commit)
        yield c
    finally:
        c.close(5000)


def partitions(topic: str, n: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(n)}


def assigned(doc: dict) -> list[set[tuple[str, int]]]:
    return [{(a["topic"], a["partition"]) for a in m["assignment"]} for m in doc["members"]]


@pytest.fixture
def static_and_dynamic(kafka_cluster, topic_factory, group_id_factory):
    """A Stable group of two kgroup consumers (one static) over a 3-partition topic with N records
    per partition, every record consumed and offset M committed on each partition."""
    bootstrap = kafka_cluster.bootstrap_servers
    topic = topic_factory(3)
    produce(bootstrap, topic, [(p, None, b"%d-%d" % (p, i)) for p in range(3) for i in range(PER_PARTITION)])
    group = group_id_factory()
    instance = f"static-{uuid.uuid4().hex[:8]}"
    # the static member's session outlives the test's steps: only an admin removal takes it out
    static = consumer(bootstrap, group, "static-client", group_instance_id=instance, session_timeout_ms=60000)
    dynamic = consumer(bootstrap, group, "dynamic-client")
    members = [static, dynamic]
    try:
        for c in members:
            c.subscribe([topic])

        def ready() -> bool:
            a, b = static.assignment(), dynamic.assignment()
            return bool(a) and bool(b) and not (a & b) and (a | b) == partitions(topic, 3)

        poll_until(members, ready, "both members assigned")
        poll_until(
            members,
            lambda: all(c.position(tp) == PER_PARTITION for c in members for tp in c.assignment()),
            "every record consumed",
        )
        for c in members:
            c.commit({tp: COMMITTED for tp in c.assignment()})
        yield kafka_cluster, topic, group, instance, static, dynamic
    finally:
        for c in members:
            try:
                c.close(5000)
            except kgroup.KGroupError:
                pass


def test_describe_a_live_group(static_and_dynamic) -> None:
    proxy, topic, group, instance, static, dynamic = static_and_dynamic
    doc = describe(proxy.bootstrap_servers, group)
    assert doc["group_id"] == group
    assert doc["state"] == "Stable"
    assert doc["protocol_type"] == "consumer"
    assert doc["protocol"]  # the assignor both members voted for
    by_id = {m["member_id"]: m for m in doc["members"]}
    assert set(by_id) == {static.group_metadata().member_id, dynamic.group_metadata().member_id}
    s, d = by_id[static.group_metadata().member_id], by_id[dynamic.group_metadata().member_id]
    assert (s["group_instance_id"], s["client_id"]) == (instance, "static-client")
    assert (d["group_instance_id"], d["client_id"]) == (None, "dynamic-client")
    assert s["client_host"] and d["client_host"]
    assert s["subscribed_topics"] == [topic] == d["subscribed_topics"]
    # the decoded assignments are what each consumer owns, and together cover every partition
    mine = {(tp.topic, tp.partition) for tp in static.assignment()}
    theirs = {(tp.topic, tp.partition) for tp in dynamic.assignment()}
    assert assigned(doc) == ([mine, theirs] if doc["members"][0] is s else [theirs, mine])
    assert mine | theirs == {(topic, p) for p in range(3)}
    # committed M, log end N, lag N - M; each row names its owner
    rows = {(o["topic"], o["partition"]): o for o in doc["offsets"]}
    assert set(rows) == {(topic, p) for p in range(3)}
    for key, row in rows.items():
        assert (row["committed_offset"], row["log_end_offset"], row["lag"]) == (
            COMMITTED, PER_PARTITION, PER_PARTITION - COMMITTED), row
        owner = s if key in mine else d
        assert (row["member_id"], row["group_instance_id"]) == (owner["member_id"], owner["group_instance_id"])
    assert doc["total_lag"] == 3 * (PER_PARTITION - COMMITTED)
    # the table says the same
    code, out = cli(proxy.bootstrap_servers, "describe", group)
    assert code == 0
    assert "Stable" in out and instance in out and "LOG-END-OFFSET" in out
    table = [line.split() for line in out.splitlines() if line.startswith(topic)]
    assert sorted(row[:5] for row in table) == [
        [topic, str(p), str(COMMITTED), str(PER_PARTITION), str(PER_PARTITION - COMMITTED)] for p in range(3)]


def test_remove_the_static_member(static_and_dynamic) -> None:
    proxy, topic, group, instance, static, dynamic = static_and_dynamic
    static_id = static.group_metadata().member_id
    # the static member goes away without LeaveGroup (Kafka's static close): it keeps its
    # partitions until its 60 s session ends, unless an admin removes it
    static.close(5000, group_membership="remain")
    assert not [e for e in proxy.model_events(group) if e.kind == "member_removed"]
    code, out = cli(proxy.bootstrap_servers, "remove-members", group, "--instance-id", instance)
    assert code == 0, out
    assert instance in out and static_id in out and "removed" in out
    events = proxy.model_events(group)
    kinds = [e.kind for e in events]
    removed = [i for i, e in enumerate(events) if e.kind == "member_removed" and e.member_id == static_id]
    assert removed, kinds
    assert "removed by an admin" in events[removed[0]].detail
    assert "rebalance_started" in kinds[removed[0]:]
    leave = proxy.requests("LeaveGroup")[-1]
    assert leave.api_version >= 3 and leave.client_id == "kgroup-admin"
    # the remaining member rejoins and gets every partition
    poll_until([dynamic], lambda: dynamic.assignment() == partitions(topic, 3), "all partitions to the survivor")
    doc = describe(proxy.bootstrap_servers, group)
    assert [m["member_id"] for m in doc["members"]] == [dynamic.group_metadata().member_id]
    assert assigned(doc) == [{(topic, p) for p in range(3)}]


def test_remove_an_unknown_instance_id_fails(static_and_dynamic) -> None:
    proxy, _topic, group, _instance, _static, _dynamic = static_and_dynamic
    code, out = cli(proxy.bootstrap_servers, "remove-members", group, "--instance-id", "no-such-instance")
    assert code == 1
    assert "UNKNOWN_MEMBER_ID" in out and "no-such-instance" in out
    assert not [e for e in proxy.model_events(group) if e.kind == "member_removed"]
    assert describe(proxy.bootstrap_servers, group)["state"] == "Stable"


def test_unknown_group(kafka_cluster, group_id_factory) -> None:
    group = group_id_factory()
    code, out = cli(kafka_cluster.bootstrap_servers, "describe", group)
    assert code == 1 and "does not exist" in out
    code, out = cli(kafka_cluster.bootstrap_servers, "remove-members", group, "--instance-id", "x")
    assert code == 1 and "does not exist" in out


def test_remove_members_on_a_broker_without_leave_group_v3(kafka_broker, topic_factory, group_id_factory) -> None:
    """A coordinator advertising LeaveGroup v0-2 only (Kafka < 2.4): a clean error, nothing sent."""
    from kgroup.testing import CoordinatorProxy
    from kgroup.testing.coordinator import CoordinatorConfig

    topic = topic_factory(1)
    group = group_id_factory()
    with CoordinatorProxy(
        kafka_broker.bootstrap_servers,
        config=CoordinatorConfig(group_initial_rebalance_delay_ms=0),
        advertised_versions={"LeaveGroup": (0, 2)},
    ) as old, member(old.bootstrap_servers, group, "old-broker-client", topic):
        code, out = cli(old.bootstrap_servers, "remove-members", group, "--instance-id", "x")
        assert old.requests("LeaveGroup") == []
    assert code == 1
    assert "LeaveGroup v3+" in out and "Traceback" not in out


def test_python_m_kgroup(kafka_cluster, group_id_factory) -> None:
    env_run = subprocess.run([sys.executable, "-m", "kgroup", "--help"], capture_output=True, text=True, timeout=60)
    assert env_run.returncode == 0 and "remove-members" in env_run.stdout
    # the environment variable names the cluster; an unknown group is a clean exit 1
    group = group_id_factory()
    proc = subprocess.run(
        [sys.executable, "-m", "kgroup", "describe", group, "--timeout-ms", "20000"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, ENV_BOOTSTRAP: kafka_cluster.bootstrap_servers},
    )
    assert proc.returncode == 1, proc.stderr
    assert "does not exist" in proc.stderr and "Traceback" not in proc.stderr


# ------------------------------------------------------------------------------ bare broker
S11B = ("broker-notes S11b: DescribeGroups members carry empty client_id, client_host, metadata and "
        "assignment (only member ids are real)")
S9E = "broker-notes S9e: LeaveGroup by group_instance_id alone (member_id '') answers UNKNOWN_MEMBER_ID"


@pytest.fixture
def bare_group(kafka_bootstrap, topic_factory, group_id_factory):
    """One dynamic kgroup consumer in a group on the bare broker; offsets M committed."""
    topic = topic_factory(2)
    group = group_id_factory()
    with member(kafka_bootstrap, group, "bare-client", topic, owns=partitions(topic, 2),
                what="assignment on the bare broker",
                commit={TopicPartition(topic, p): COMMITTED for p in range(2)}) as c:
        yield kafka_bootstrap, topic, group, c


def test_describe_on_the_bare_broker_reports_members_and_commits(bare_group) -> None:
    bootstrap, topic, group, c = bare_group
    doc = describe(bootstrap, group)
    assert doc["state"] == "Stable"
    assert [m["member_id"] for m in doc["members"]] == [c.group_metadata().member_id]
    assert {(o["topic"], o["partition"], o["committed_offset"]) for o in doc["offsets"]} == {
        (topic, 0, COMMITTED), (topic, 1, COMMITTED)}


@BOTH
@pytest.mark.tansu_deviation(S11B)
def test_describe_on_the_bare_broker_decodes_member_details(bare_group) -> None:
    bootstrap, topic, group, _c = bare_group
    doc = describe(bootstrap, group)
    (member,) = doc["members"]
    assert member["client_id"] == "bare-client"
    assert member["subscribed_topics"] == [topic]
    assert assigned(doc) == [{(topic, 0), (topic, 1)}]


@BOTH
@pytest.mark.tansu_deviation(S9E)
def test_remove_static_member_on_the_bare_broker(kafka_bootstrap, topic_factory, group_id_factory) -> None:
    topic = topic_factory(1)
    group = group_id_factory()
    instance = f"static-{uuid.uuid4().hex[:8]}"
    # broker-notes: static members on Tansu need st >= 10000
    c = consumer(kafka_bootstrap, group, "bare-static", group_instance_id=instance, session_timeout_ms=10000)
    try:
        c.subscribe([topic])
        poll_until([c], lambda: bool(c.assignment()), "static assignment on the bare broker")
        code, out = cli(kafka_bootstrap, "remove-members", group, "--instance-id", instance)
        assert code == 0, out
        assert describe(kafka_bootstrap, group)["members"] == []
    finally:
        c.close(5000, group_membership="leave")


# ------------------------------------------------------------------------------ list, reset-offsets, delete
# On both brokers: Kafka's own coordinator on [apache-kafka], the coordinator proxy over Tansu on
# [tansu] (``group_coordinator``: Kafka's answers to ListGroups and the admin's OffsetCommit, and
# ListOffsets LATEST as the log end offset). DeleteGroups is not served by the proxy, so delete
# runs on the bare brokers; where Tansu's DeleteGroups deviates (row S11d) the test is Kafka's only.
S11D = "broker-notes S11d: DeleteGroups deletes a group with members, and answers NONE for an unknown group"
S_LIST_OFFSETS_TIME = ("ListOffsets by a timestamp later than every record answers offset 0, not -1 (no such "
                       "record); the coordinator proxy forwards it unchanged")


def cli_json(bootstrap: str, *args: str) -> tuple[int, dict]:
    code, out = cli(bootstrap, *args, "--json")
    return code, (json.loads(out) if code == 0 else {"output": out})


def committed_of(bootstrap: str, group: str) -> dict[int, int | None]:
    return {row["partition"]: row["committed_offset"] for row in describe(bootstrap, group)["offsets"]}


def listed(bootstrap: str, *args: str) -> dict[str, dict]:
    code, doc = cli_json(bootstrap, "list", *args)
    assert code == 0, doc
    return {g["group_id"]: g for g in doc["groups"]}


@pytest.fixture
def inactive_group(group_coordinator, kafka_bootstrap, topic_factory, group_id_factory):
    """An Empty group: a kgroup consumer consumed a 2-partition topic of N records per partition,
    committed M on each partition and left."""
    bootstrap = group_coordinator.bootstrap_servers
    topic = topic_factory(2)
    produce(kafka_bootstrap, topic, [(p, None, b"%d-%d" % (p, i)) for p in range(2) for i in range(PER_PARTITION)])
    group = group_id_factory()
    with member(bootstrap, group, "reset-client", topic, owns=partitions(topic, 2),
                commit={TopicPartition(topic, p): COMMITTED for p in range(2)}):
        pass
    poll_until([], lambda: describe(bootstrap, group)["state"] == "Empty", "the group to be empty")
    return bootstrap, topic, group


def first_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The offset of the first record a new member of ``group`` gets from each partition."""
    c = consumer(bootstrap, group, "resumed-client")
    first: dict[int, int] = {}
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + WAIT_S
        while len(first) < 2 and time.monotonic() < deadline:
            for record in c.poll(100):
                first.setdefault(record.partition, record.offset)
    finally:
        c.close(5000)
    return first


@BOTH
def test_reset_offsets_dry_run_then_execute(inactive_group) -> None:
    bootstrap, topic, group = inactive_group
    # the dry run (the default) prints the plan and commits nothing
    code, out = cli(bootstrap, "reset-offsets", group, "--topic", topic, "--to-earliest")
    assert code == 0, out
    rows = [line.split() for line in out.splitlines() if line.startswith(group)]
    assert sorted(rows) == [[group, topic, str(p), "0", str(COMMITTED)] for p in range(2)]
    assert "Dry run" in out and "--execute" in out
    assert committed_of(bootstrap, group) == {0: COMMITTED, 1: COMMITTED}
    # --execute commits it
    code, doc = cli_json(bootstrap, "reset-offsets", group, "--topic", topic, "--to-earliest", "--execute")
    assert code == 0, doc
    assert doc["executed"] and doc["state"] == "Empty"
    assert [(r["partition"], r["current_offset"], r["new_offset"], r["error"]) for r in doc["offsets"]] == [
        (0, COMMITTED, 0, None), (1, COMMITTED, 0, None)]
    assert committed_of(bootstrap, group) == {0: 0, 1: 0}
    # --shift-by on one partition; --to-offset past the log end is clamped to it (dry run)
    code, out = cli(bootstrap, "reset-offsets", group, "--topic", f"{topic}:1", "--shift-by", "3", "--execute")
    assert code == 0, out
    assert committed_of(bootstrap, group) == {0: 0, 1: 3}
    code, doc = cli_json(bootstrap, "reset-offsets", group, "--all-topics", "--to-offset", "100")
    assert code == 0, doc
    assert [(r["new_offset"], r["note"]) for r in doc["offsets"]] == [
        (PER_PARTITION, f"100 is past the log end offset: set to {PER_PARTITION}")] * 2
    # --to-datetime before every record: the first one
    code, doc = cli_json(bootstrap, "reset-offsets", group, "--topic", topic, "--to-datetime", "2000-01-01T00:00:00Z")
    assert code == 0, doc
    assert [r["new_offset"] for r in doc["offsets"]] == [0, 0]
    # --to-latest, then one partition back to 2: a new member resumes exactly there
    code, out = cli(bootstrap, "reset-offsets", group, "--all-topics", "--to-latest", "--execute")
    assert code == 0, out
    assert committed_of(bootstrap, group) == {0: PER_PARTITION, 1: PER_PARTITION}
    code, out = cli(bootstrap, "reset-offsets", group, "--topic", f"{topic}:0", "--to-offset", "2", "--execute")
    assert code == 0, out
    produce(bootstrap, topic, [(1, None, b"after-reset")])
    assert first_offsets(bootstrap, group, topic) == {0: 2, 1: PER_PARTITION}


@BOTH
@pytest.mark.tansu_deviation(S_LIST_OFFSETS_TIME)
def test_reset_offsets_to_a_datetime_after_every_record_is_the_log_end(inactive_group) -> None:
    """No record that late: ListOffsets answers -1, and Kafka's tool falls back to the log end offset."""
    bootstrap, topic, group = inactive_group
    code, doc = cli_json(bootstrap, "reset-offsets", group, "--topic", topic, "--to-datetime", "2999-01-01T00:00:00Z")
    assert code == 0, doc
    assert [(r["new_offset"], r["note"]) for r in doc["offsets"]] == [
        (PER_PARTITION, "no record at or after the time: the log end offset")] * 2


@BOTH
def test_reset_offsets_refuses_a_group_with_members(group_coordinator, topic_factory, group_id_factory) -> None:
    bootstrap = group_coordinator.bootstrap_servers
    topic = topic_factory(1)
    group = group_id_factory()
    with member(bootstrap, group, "live-client", topic, commit={TopicPartition(topic, 0): 0}):
        for extra in ((), ("--execute",)):
            code, out = cli(bootstrap, "reset-offsets", group, "--topic", topic, "--to-latest", *extra)
            assert code == 1, out
            assert (f"Assignments can only be reset if the group '{group}' is inactive, but the current state is "
                    "Stable.") in out
            assert "Traceback" not in out
        assert committed_of(bootstrap, group) == {0: 0}


@BOTH
def test_reset_offsets_of_a_group_not_known_yet(group_coordinator, kafka_bootstrap, topic_factory,
                                                group_id_factory) -> None:
    """A group the coordinator does not know (Dead) gets its first offsets, as with Kafka's tool."""
    bootstrap = group_coordinator.bootstrap_servers
    topic = topic_of_records(kafka_bootstrap, topic_factory, 2, 3)
    group = group_id_factory()
    code, doc = cli_json(bootstrap, "reset-offsets", group, "--topic", topic, "--to-latest", "--execute")
    assert code == 0, doc
    assert doc["state"] == "Dead"
    assert committed_of(bootstrap, group) == {0: 3, 1: 3}
    # nothing committed, nothing to shift
    other = group_id_factory()
    code, out = cli(bootstrap, "reset-offsets", other, "--topic", topic, "--shift-by", "-1")
    assert code == 1 and "no current committed offset" in out


@BOTH
def test_list_shows_groups_with_state_and_protocol_type(inactive_group, group_id_factory) -> None:
    bootstrap, topic, empty = inactive_group
    active = group_id_factory()
    with member(bootstrap, active, "listed-client", topic, commit={TopicPartition(topic, 0): 1}) as c:
        poll_until([c], lambda: describe(bootstrap, active)["state"] == "Stable", "a Stable group")
        groups = listed(bootstrap)
        assert {k: (groups[k]["state"], groups[k]["protocol_type"]) for k in (empty, active)} == {
            empty: ("Empty", "consumer"), active: ("Stable", "consumer")}
        assert groups[active]["group_type"] in ("classic", None)
        assert set(listed(bootstrap, "--state", "stable")) & {empty, active} == {active}
        code, out = cli(bootstrap, "list")
        assert code == 0
        table = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:]}
        assert table[active][1:] == ["Stable", "consumer"] and table[empty][1:] == ["Empty", "consumer"]


@BOTH
def test_describe_says_when_the_log_end_is_below_the_committed_offset(inactive_group) -> None:
    bootstrap, topic, group = inactive_group
    # a commit past the log end: what a truncated, or deleted and recreated, topic leaves behind
    with GroupAdmin.connect(bootstrap, timeout_ms=20000) as admin:
        assert admin.alter_offsets(group, {TopicPartition(topic, 1): PER_PARTITION + 5}) == {
            TopicPartition(topic, 1): 0}
    doc = describe(bootstrap, group)
    rows = {r["partition"]: r for r in doc["offsets"]}
    assert (rows[1]["committed_offset"], rows[1]["log_end_offset"], rows[1]["lag"]) == (PER_PARTITION + 5,
                                                                                         PER_PARTITION, 0)
    assert rows[1]["committed_beyond_log_end"] and not rows[0]["committed_beyond_log_end"]
    code, out = cli(bootstrap, "describe", group)
    assert code == 0
    assert (f"NOTE: {topic}-1: the committed offset {PER_PARTITION + 5} is past the log end offset "
            f"{PER_PARTITION}") in out
    assert f"{topic}-0:" not in out


@BOTH
def test_delete_an_empty_group(kafka_bootstrap, topic_factory, group_id_factory) -> None:
    topic = topic_factory(1)
    group = group_id_factory()
    with member(kafka_bootstrap, group, "deleted-client", topic, commit={TopicPartition(topic, 0): 0}):
        pass
    assert group in listed(kafka_bootstrap)
    code, out = cli(kafka_bootstrap, "delete", group)
    assert code == 0, out
    assert [line.split() for line in out.splitlines()[1:]] == [[group, "deleted"]]
    assert group not in listed(kafka_bootstrap)
    # its committed offsets went with it
    code, out = cli(kafka_bootstrap, "describe", group, "--json")
    assert code == 1 or json.loads(out)["offsets"] == [], out


@BOTH
@pytest.mark.tansu_deviation(S11D)
def test_delete_refuses_a_group_with_members(bare_group) -> None:
    bootstrap, _topic, group, c = bare_group
    code, out = cli(bootstrap, "delete", group)
    assert code == 1, out
    assert "NON_EMPTY_GROUP (68)" in out and "Traceback" not in out
    doc = describe(bootstrap, group)
    assert doc["state"] == "Stable" and [m["member_id"] for m in doc["members"]] == [c.group_metadata().member_id]
    code, doc = cli_json(bootstrap, "delete", group)
    assert code == 1


@BOTH
@pytest.mark.tansu_deviation(S11D)
def test_delete_an_unknown_group_fails(kafka_bootstrap, group_id_factory) -> None:
    group = group_id_factory()
    code, out = cli(kafka_bootstrap, "delete", group)
    assert code == 1
    assert "GROUP_ID_NOT_FOUND (69)" in out and "does not exist" in out


def test_delete_through_a_coordinator_without_delete_groups(kafka_cluster, group_id_factory) -> None:
    """The proxy does not offer DeleteGroups: a clean error, exit 1."""
    code, out = cli(kafka_cluster.bootstrap_servers, "delete", group_id_factory())
    assert code == 1
    assert "does not offer DeleteGroups" in out and "Traceback" not in out
