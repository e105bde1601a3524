"""The ``kgroup`` command line over a fake GroupAdmin: parsing, environment, output, exit codes."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from kgroup.admin import (
    AdminError,
    AdminTimeoutError,
    Coordinator,
    GroupDeletion,
    GroupDescription,
    GroupListing,
    GroupNotEmptyError,
    GroupNotFoundError,
    MemberDescription,
    MemberRemoval,
    OffsetResetPlan,
    PartitionLag,
    PlannedOffset,
    ResetTarget,
    UnsupportedVersionError,
)
from kgroup.cli import ENV_BOOTSTRAP, describe_json, main, parse_datetime_ms
from kgroup.errors import ConfigError
from kgroup.types import TopicPartition

T0, T1, T2 = (TopicPartition("orders", p) for p in range(3))

STABLE = GroupDescription(
    group_id="g",
    state="Stable",
    protocol_type="consumer",
    protocol="range",
    generation_id=None,
    coordinator=Coordinator(1, "broker1", 9092),
    members=(
        MemberDescription("static-a-1", "a", "client-a", "/10.0.0.1", (T0, T1), ("orders",)),
        MemberDescription("dyn-2", None, "client-b", "/10.0.0.2", (T2,), ("orders",)),
    ),
)
LAG = (
    PartitionLag(T0, 5, 10, 5, "", "static-a-1", "a"),
    PartitionLag(T1, None, 7, None, "", "static-a-1", "a"),
    PartitionLag(T2, 3, 3, 0, "m", "dyn-2", None),
)


GROUPS = (
    GroupListing("orders-app", "consumer", "Stable", "classic"),
    GroupListing("audit", "", "Empty", None),
    GroupListing("old-broker-group", "consumer"),
)


def plan_for(target, rows=((T0, 5, 0, ""), (T1, None, 0, ""))):
    planned = tuple(PlannedOffset(tp, current, new, note) for tp, current, new, note in rows)
    return OffsetResetPlan("g", "Empty", target, planned)


class FakeAdmin:
    def __init__(self, description=STABLE, lag=LAG, removals=None, raises=None, groups=GROUPS, deletions=None,
                 plan=None, altered=None):
        self.description = description
        self.lag_rows = lag
        self.removals = removals
        self.raises = raises
        self.groups = groups
        self.deletions = deletions
        self.plan = plan
        self.altered = altered
        self.calls: list[tuple] = []
        self.closed = False

    def list_groups(self, timeout_ms=None):
        self.calls.append(("list_groups", timeout_ms))
        if self.raises is not None:
            raise self.raises
        return self.groups

    def delete_groups(self, group_ids, timeout_ms=None):
        self.calls.append(("delete_groups", tuple(group_ids), timeout_ms))
        if self.raises is not None:
            raise self.raises
        if self.deletions is not None:
            return self.deletions
        return tuple(GroupDeletion(g, 0) for g in group_ids)

    def plan_offset_reset(self, group_id, target, topics=None, timeout_ms=None):
        self.calls.append(("plan", group_id, target, None if topics is None else tuple(topics), timeout_ms))
        if self.raises is not None:
            raise self.raises
        return self.plan if self.plan is not None else plan_for(target)

    def alter_offsets(self, group_id, offsets, timeout_ms=None):
        self.calls.append(("alter", group_id, dict(offsets), timeout_ms))
        if self.altered is not None:
            return self.altered
        return dict.fromkeys(offsets, 0)

    def describe_group(self, group_id, timeout_ms=None):
        self.calls.append(("describe_group", group_id, timeout_ms))
        if self.raises is not None:
            raise self.raises
        return self.description

    def lag(self, group_id, description=None, timeout_ms=None):
        self.calls.append(("lag", group_id, timeout_ms))
        return self.lag_rows

    def remove_members_by_instance_id(self, group_id, instance_ids, reason=None, timeout_ms=None):
        self.calls.append(("remove", group_id, tuple(instance_ids), reason))
        if self.removals is not None:
            return self.removals
        return tuple(MemberRemoval(i, "", 0) for i in instance_ids)

    def close(self):
        self.closed = True


def run(args, admin=None, env=None, factory_error=None):
    opened: list[tuple[str, int]] = []

    def factory(bootstrap, timeout_ms):
        opened.append((bootstrap, timeout_ms))
        if factory_error is not None:
            raise factory_error
        return admin

    result = CliRunner().invoke(main, args, obj={"admin_factory": factory}, env=env or {})
    return result, opened


def test_help_lists_commands():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for command in ("list", "describe", "reset-offsets", "delete", "delete-offsets", "remove-members"):
        assert command in result.output


def test_missing_bootstrap_is_a_usage_error_naming_option_and_env():
    result, opened = run(["describe", "g"], FakeAdmin(), env={ENV_BOOTSTRAP: ""})
    assert result.exit_code == 2
    assert "--bootstrap-servers" in result.output and ENV_BOOTSTRAP in result.output
    assert opened == []


def test_bootstrap_from_env_and_timeout_option():
    admin = FakeAdmin()
    result, opened = run(["describe", "g", "--timeout-ms", "5000"], admin, env={ENV_BOOTSTRAP: "h:1"})
    assert result.exit_code == 0, result.output
    assert opened == [("h:1", 5000)]
    assert admin.closed
    # every call got what was left of the command's deadline
    assert all(0 < call[2] <= 5000 for call in admin.calls)


def test_option_wins_over_env():
    result, opened = run(["describe", "g", "--bootstrap-servers", "opt:1"], FakeAdmin(), env={ENV_BOOTSTRAP: "env:1"})
    assert result.exit_code == 0
    assert opened[0][0] == "opt:1"


def test_default_timeout_is_30000():
    _, opened = run(["describe", "g", "-b", "h:1"], FakeAdmin())
    assert opened == [("h:1", 30000)]


@pytest.mark.parametrize("value", ["0", "-5", "soon"])
def test_bad_timeout_is_a_usage_error(value):
    result, _ = run(["describe", "g", "-b", "h:1", "--timeout-ms", value], FakeAdmin())
    assert result.exit_code == 2


def test_describe_table_shows_members_assignments_and_lag():
    result, _ = run(["describe", "g", "-b", "h:1"], FakeAdmin())
    assert result.exit_code == 0, result.output
    out = result.output
    for text in ("Stable", "range", "consumer", "static-a-1", "client-a", "/10.0.0.1", "orders:0,1", "orders:2",
                 "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "TOTAL-LAG"):
        assert text in out, text
    lines = {line.split()[0] + ":" + line.split()[1]: line.split() for line in out.splitlines()
             if line.startswith("orders ")}
    assert lines["orders:0"][2:5] == ["5", "10", "5"]
    assert lines["orders:1"][2:5] == ["-", "7", "-"]


def test_describe_json_schema_is_stable():
    result, _ = run(["describe", "g", "-b", "h:1", "--json"], FakeAdmin())
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert list(doc) == ["group_id", "state", "protocol_type", "protocol", "generation_id", "coordinator",
                         "members", "offsets", "total_lag", "group_type", "group_epoch", "assignment_epoch"]
    assert (doc["group_type"], doc["group_epoch"], doc["assignment_epoch"]) == ("classic", None, None)
    assert doc["state"] == "Stable" and doc["protocol"] == "range" and doc["generation_id"] is None
    assert doc["coordinator"] == {"node_id": 1, "host": "broker1", "port": 9092}
    assert list(doc["members"][0]) == ["member_id", "group_instance_id", "client_id", "client_host",
                                       "subscribed_topics", "assignment", "decode_error", "member_epoch",
                                       "target_assignment", "member_protocol", "rack_id", "subscribed_topic_regex"]
    assert doc["members"][0]["member_epoch"] is None and doc["members"][0]["target_assignment"] is None
    assert doc["members"][0]["assignment"] == [{"topic": "orders", "partition": 0}, {"topic": "orders", "partition": 1}]
    assert doc["members"][1]["group_instance_id"] is None
    assert list(doc["offsets"][0]) == ["topic", "partition", "committed_offset", "log_end_offset", "lag",
                                       "metadata", "member_id", "group_instance_id", "committed_beyond_log_end"]
    assert doc["offsets"][1]["committed_offset"] is None
    assert doc["total_lag"] == 5
    assert doc == describe_json(STABLE, LAG)


def test_describe_dead_group_exits_1():
    dead = GroupDescription("g", "Dead", "", "", None, Coordinator(1, "h", 1), ())
    result, _ = run(["describe", "g", "-b", "h:1"], FakeAdmin(description=dead))
    assert result.exit_code == 1
    assert "does not exist" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "error",
    [
        AdminTimeoutError("DescribeGroups for group 'g' did not complete in time"),
        AdminError("DescribeGroups failed with GROUP_AUTHORIZATION_FAILED (30)", code=30),
        GroupNotFoundError("gone", code=69),
    ],
)
def test_broker_errors_exit_1_without_traceback(error):
    result, _ = run(["describe", "g", "-b", "h:1"], FakeAdmin(raises=error))
    assert result.exit_code == 1
    assert str(error) in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_unreachable_cluster_exits_1():
    result, _ = run(["describe", "g", "-b", "h:1"], None, factory_error=AdminError("could not reach the cluster"))
    assert result.exit_code == 1
    assert "could not reach the cluster" in result.output


def test_bad_bootstrap_is_a_usage_error():
    error = ConfigError("bootstrap_servers", "bad address")
    result, _ = run(["describe", "g", "-b", "nonsense"], None, factory_error=error)
    assert result.exit_code == 2
    assert "bad address" in result.output


def test_remove_members_requires_an_instance_id():
    result, _ = run(["remove-members", "g", "-b", "h:1"], FakeAdmin())
    assert result.exit_code == 2
    assert "--instance-id" in result.output


def test_remove_members_passes_every_instance_id_and_reason():
    admin = FakeAdmin()
    result, _ = run(
        ["remove-members", "g", "-b", "h:1", "--instance-id", "a", "--instance-id", "b", "--reason", "decommissioned"],
        admin,
    )
    assert result.exit_code == 0, result.output
    assert ("remove", "g", ("a", "b"), "decommissioned") in admin.calls
    assert "removed" in result.output
    # the member id comes from the describe made first
    assert "static-a-1" in result.output


def test_remove_members_per_member_error_exits_1_and_names_it():
    removals = (MemberRemoval("a", "static-a-1", 0), MemberRemoval("ghost", "", 25))
    result, _ = run(["remove-members", "g", "-b", "h:1", "--instance-id", "a", "--instance-id", "ghost"],
                    FakeAdmin(removals=removals))
    assert result.exit_code == 1
    assert "UNKNOWN_MEMBER_ID" in result.output and "ghost" in result.output


def test_remove_members_json():
    removals = (MemberRemoval("a", "static-a-1", 0), MemberRemoval("b", "", 82))
    result, _ = run(["remove-members", "g", "-b", "h:1", "--instance-id", "a", "--instance-id", "b", "--json"],
                    FakeAdmin(removals=removals))
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc == {
        "group_id": "g",
        "members": [
            {"group_instance_id": "a", "member_id": "static-a-1", "error_code": 0, "error": None},
            {"group_instance_id": "b", "member_id": None, "error_code": 82, "error": "FENCED_INSTANCE_ID"},
        ],
    }


def test_remove_members_unsupported_broker_exits_1():
    class OldBroker(FakeAdmin):
        def remove_members_by_instance_id(self, *args, **kwargs):
            raise UnsupportedVersionError("LeaveGroup v3+ (Kafka 2.4+, KIP-345) is needed", code=35)

    result, _ = run(["remove-members", "g", "-b", "h:1", "--instance-id", "a"], OldBroker())
    assert result.exit_code == 1
    assert "LeaveGroup v3+" in result.output


def test_remove_members_unknown_group_exits_1():
    dead = GroupDescription("g", "Dead", "", "", None, Coordinator(1, "h", 1), ())
    admin = FakeAdmin(description=dead)
    result, _ = run(["remove-members", "g", "-b", "h:1", "--instance-id", "a"], admin)
    assert result.exit_code == 1
    assert "does not exist" in result.output
    assert not any(c[0] == "remove" for c in admin.calls)


def test_empty_instance_id_is_a_usage_error():
    result, _ = run(["remove-members", "g", "-b", "h:1", "--instance-id", ""], FakeAdmin())
    assert result.exit_code == 2


@pytest.mark.parametrize("command", [["describe", "g"], ["list"]])
def test_no_broker_listening_fails_within_the_deadline(command):
    """The real GroupAdmin against a port nobody listens on: exit 1, bounded by --timeout-ms."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "kgroup", *command, "-b", f"127.0.0.1:{port}", "--timeout-ms", "1500"],
        capture_output=True, text=True, timeout=60,
    )
    elapsed = time.monotonic() - start
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "127.0.0.1" in proc.stderr
    assert elapsed < 15


# ------------------------------------------------------------------------------ describe: log end below commit
def test_describe_says_when_the_committed_offset_is_past_the_log_end():
    lag = (PartitionLag(T0, 12, 10, 0), PartitionLag(T1, 3, 7, 4))
    result, _ = run(["describe", "g", "-b", "h:1"], FakeAdmin(lag=lag))
    assert result.exit_code == 0, result.output
    notes = [line for line in result.output.splitlines() if line.startswith("NOTE:")]
    assert notes == [
        "NOTE: orders-0: the committed offset 12 is past the log end offset 10 (the log was truncated, or the "
        "topic deleted and recreated): a consumer resuming there gets OFFSET_OUT_OF_RANGE and resets by its "
        "auto.offset.reset"
    ]
    result, _ = run(["describe", "g", "-b", "h:1", "--json"], FakeAdmin(lag=lag))
    assert [o["committed_beyond_log_end"] for o in json.loads(result.output)["offsets"]] == [True, False]


# ------------------------------------------------------------------------------ list
def test_list_table():
    admin = FakeAdmin()
    result, _ = run(["list", "-b", "h:1", "--timeout-ms", "4000"], admin)
    assert result.exit_code == 0, result.output
    assert [line.split() for line in result.output.splitlines()] == [
        ["GROUP", "TYPE", "STATE", "PROTOCOL-TYPE"],
        ["orders-app", "classic", "Stable", "consumer"],
        ["audit", "-", "Empty", "-"],
        ["old-broker-group", "-", "-", "consumer"],
    ]
    assert admin.closed and 0 < admin.calls[0][1] <= 4000


def test_list_json_and_state_filter():
    result, _ = run(["list", "-b", "h:1", "--json", "--state", "stable,EMPTY"], FakeAdmin())
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"groups": [
        {"group_id": "orders-app", "group_type": "classic", "state": "Stable", "protocol_type": "consumer"},
        {"group_id": "audit", "group_type": None, "state": "Empty", "protocol_type": ""},
    ]}


@pytest.mark.parametrize("states", ["Running", ",", "Stable,bogus"])
def test_list_invalid_state_is_a_usage_error(states):
    admin = FakeAdmin()
    result, opened = run(["list", "-b", "h:1", "--state", states], admin)
    assert result.exit_code == 2
    assert "PreparingRebalance" in result.output
    assert opened == []


def test_list_error_exits_1():
    result, _ = run(["list", "-b", "h:1"], FakeAdmin(raises=AdminError("ListGroups failed with X", code=31)))
    assert result.exit_code == 1 and "ListGroups failed" in result.output


# ------------------------------------------------------------------------------ reset-offsets
def reset(*args, admin=None):
    admin = admin if admin is not None else FakeAdmin()
    result, _ = run(["reset-offsets", "g", "-b", "h:1", *args], admin)
    return result, admin


@pytest.mark.parametrize(
    ("args", "target"),
    [
        (["--to-earliest"], ResetTarget.earliest()),
        (["--to-latest"], ResetTarget.latest()),
        (["--to-offset", "42"], ResetTarget.offset(42)),
        (["--shift-by", "-5"], ResetTarget.shift_by(-5)),
        (["--to-datetime", "2024-05-01T10:00:00Z"], ResetTarget.timestamp(1714557600000)),
        (["--to-datetime", "2024-05-01T12:00:00.250+02:00"], ResetTarget.timestamp(1714557600250)),
    ],
)
def test_reset_offsets_scenarios(args, target):
    result, admin = reset("--topic", "orders", *args)
    assert result.exit_code == 0, result.output
    assert admin.calls[0][:4] == ("plan", "g", target, ("orders",))


def test_reset_offsets_is_a_dry_run_by_default():
    result, admin = reset("--topic", "orders", "--to-earliest")
    assert result.exit_code == 0, result.output
    assert not [c for c in admin.calls if c[0] == "alter"]
    assert [line.split() for line in result.stdout.splitlines()] == [
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET", "CURRENT-OFFSET", "NOTE"],
        ["g", "orders", "0", "0", "5"],
        ["g", "orders", "1", "0", "-"],
    ]
    assert "Dry run: nothing committed" in result.stderr
    result, admin = reset("--topic", "orders", "--to-earliest", "--dry-run")
    assert result.exit_code == 0 and not [c for c in admin.calls if c[0] == "alter"]


def test_reset_offsets_execute_commits_the_plan():
    plan = plan_for(ResetTarget.offset(9), ((T0, 5, 9, ""), (T1, 12, 10, "12 is past the log end offset: set to 10")))
    result, admin = reset("--topic", "orders:0,1", "--to-offset", "9", "--execute", "--timeout-ms", "3000",
                          admin=FakeAdmin(plan=plan))
    assert result.exit_code == 0, result.output
    plan_call, alter_call = admin.calls
    assert plan_call[3] == (T0, T1)
    assert alter_call[:3] == ("alter", "g", plan.offsets())
    assert 0 < plan_call[4] <= 3000 and 0 < alter_call[3] <= 3000
    lines = [line.split(maxsplit=6) for line in result.stdout.splitlines()]
    assert lines[0] == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET", "CURRENT-OFFSET", "RESULT", "NOTE"]
    assert lines[2] == ["g", "orders", "1", "10", "12", "committed", "12 is past the log end offset: set to 10"]
    assert "Dry run" not in result.output


def test_reset_offsets_partition_errors_exit_1():
    admin = FakeAdmin(altered={T0: 0, T1: 25})
    result, _ = reset("--all-topics", "--to-latest", "--execute", admin=admin)
    assert result.exit_code == 1
    assert admin.calls[0][3] is None  # --all-topics: the group's committed partitions
    assert "orders-1: UNKNOWN_MEMBER_ID (25)" in result.output and "inactive" in result.output
    assert "UNKNOWN_MEMBER_ID (25)" in result.stdout  # the RESULT column


def test_reset_offsets_json():
    plan = plan_for(ResetTarget.shift_by(2), ((T0, 5, 7, ""), (T2, 9, 9, "11 is past the log end offset: set to 9")))
    result, _ = reset("--topic", "orders", "--shift-by", "2", "--json", admin=FakeAdmin(plan=plan))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "group_id": "g",
        "state": "Empty",
        "group_type": "classic",
        "executed": False,
        "target": {"kind": "shift_by", "value": 2},
        "offsets": [
            {"topic": "orders", "partition": 0, "current_offset": 5, "new_offset": 7, "note": None,
             "error_code": None, "error": None},
            {"topic": "orders", "partition": 2, "current_offset": 9, "new_offset": 9,
             "note": "11 is past the log end offset: set to 9", "error_code": None, "error": None},
        ],
    }
    result, _ = reset("--topic", "orders", "--shift-by", "2", "--json", "--execute",
                      admin=FakeAdmin(plan=plan, altered={T0: 0, T2: 25}))
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["executed"] is True
    assert [(o["error_code"], o["error"]) for o in doc["offsets"]] == [(0, None), (25, "UNKNOWN_MEMBER_ID")]


def test_reset_offsets_refused_for_a_group_with_members():
    error = GroupNotEmptyError("Assignments can only be reset if the group 'g' is inactive, but the current state is "
                               "Stable.")
    result, admin = reset("--topic", "orders", "--to-earliest", "--execute", admin=FakeAdmin(raises=error))
    assert result.exit_code == 1
    assert str(error) in result.output and "Traceback" not in result.output
    assert admin.closed and not [c for c in admin.calls if c[0] == "alter"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--topic", "orders"], "choose exactly one of"),
        (["--topic", "orders", "--to-earliest", "--to-latest"], "given: --to-earliest, --to-latest"),
        (["--to-earliest"], "--topic (repeatable) or --all-topics"),
        (["--topic", "orders", "--all-topics", "--to-earliest"], "--topic (repeatable) or --all-topics"),
        (["--topic", "orders", "--to-earliest", "--execute", "--dry-run"], "exclude each other"),
        (["--topic", "orders:x", "--to-earliest"], "invalid partition"),
        (["--topic", "orders:-1", "--to-earliest"], "invalid partition"),
        (["--topic", ":0", "--to-earliest"], "invalid topic"),
        (["--topic", "orders", "--to-datetime", "yesterday"], "--to-datetime"),
        (["--topic", "orders", "--to-datetime", "2024-05-01"], "a date and a time"),
        (["--topic", "orders", "--to-offset", "x"], "--to-offset"),
    ],
)
def test_reset_offsets_usage_errors(args, message):
    result, admin = reset(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert admin.calls == []


def test_to_datetime_without_a_zone_is_local_time():
    import datetime

    local = datetime.datetime(2024, 5, 1, 12, 0, 0, 500000).astimezone()
    assert parse_datetime_ms("2024-05-01T12:00:00.500") == int(local.timestamp() * 1000)
    assert parse_datetime_ms("2024-05-01T10:00:00z") == 1714557600000


# ------------------------------------------------------------------------------ delete
def test_delete_groups():
    result, _ = run(["delete", "a", "b", "-b", "h:1"], admin := FakeAdmin())
    assert result.exit_code == 0, result.output
    assert admin.calls[0][:2] == ("delete_groups", ("a", "b"))
    assert [line.split() for line in result.output.splitlines()] == [["GROUP", "RESULT"], ["a", "deleted"],
                                                                     ["b", "deleted"]]


def test_delete_a_group_with_members_exits_1_with_kafkas_error():
    deletions = (GroupDeletion("a", 0), GroupDeletion("live", 68), GroupDeletion("ghost", 69))
    result, _ = run(["delete", "a", "live", "ghost", "-b", "h:1"], FakeAdmin(deletions=deletions))
    assert result.exit_code == 1
    assert "live   NON_EMPTY_GROUP (68): the group has members: stop its consumers first" in result.stdout
    assert "ghost  GROUP_ID_NOT_FOUND (69): the group does not exist" in result.stdout
    assert "2 of 3 groups not deleted" in result.output


def test_delete_json():
    deletions = (GroupDeletion("a", 0), GroupDeletion("live", 68))
    result, _ = run(["delete", "a", "live", "-b", "h:1", "--json"], FakeAdmin(deletions=deletions))
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {"groups": [
        {"group_id": "a", "error_code": 0, "error": None},
        {"group_id": "live", "error_code": 68, "error": "NON_EMPTY_GROUP"},
    ]}


def test_delete_usage_and_broker_errors():
    result, _ = run(["delete", "-b", "h:1"], FakeAdmin())
    assert result.exit_code == 2
    result, _ = run(["delete", " ", "-b", "h:1"], FakeAdmin())
    assert result.exit_code == 2
    error = UnsupportedVersionError("the coordinator of group 'a' does not offer DeleteGroups", code=35)
    result, _ = run(["delete", "a", "-b", "h:1"], FakeAdmin(raises=error))
    assert result.exit_code == 1 and "does not offer DeleteGroups" in result.output
