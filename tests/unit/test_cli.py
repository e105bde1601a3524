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
    GroupDescription,
    GroupNotFoundError,
    MemberDescription,
    MemberRemoval,
    PartitionLag,
    UnsupportedVersionError,
)
from kgroup.cli import ENV_BOOTSTRAP, describe_json, main
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


class FakeAdmin:
    def __init__(self, description=STABLE, lag=LAG, removals=None, raises=None):
        self.description = description
        self.lag_rows = lag
        self.removals = removals
        self.raises = raises
        self.calls: list[tuple] = []
        self.closed = False

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
    assert "describe" in result.output and "remove-members" in result.output


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
                         "members", "offsets", "total_lag"]
    assert doc["state"] == "Stable" and doc["protocol"] == "range" and doc["generation_id"] is None
    assert doc["coordinator"] == {"node_id": 1, "host": "broker1", "port": 9092}
    assert list(doc["members"][0]) == ["member_id", "group_instance_id", "client_id", "client_host",
                                       "subscribed_topics", "assignment", "decode_error"]
    assert doc["members"][0]["assignment"] == [{"topic": "orders", "partition": 0}, {"topic": "orders", "partition": 1}]
    assert doc["members"][1]["group_instance_id"] is None
    assert list(doc["offsets"][0]) == ["topic", "partition", "committed_offset", "log_end_offset", "lag",
                                       "metadata", "member_id", "group_instance_id"]
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


def test_no_broker_listening_fails_within_the_deadline():
    """The real GroupAdmin against a port nobody listens on: exit 1, bounded by --timeout-ms."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "kgroup", "describe", "g", "-b", f"127.0.0.1:{port}", "--timeout-ms", "1500"],
        capture_output=True, text=True, timeout=60,
    )
    elapsed = time.monotonic() - start
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "127.0.0.1" in proc.stderr
    assert elapsed < 15
