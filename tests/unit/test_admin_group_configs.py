"""A group's configs (KIP-848, KIP-932) in ``GroupAdmin`` and ``kgroup configs``, over a scripted transport.

``describe_group_configs`` turns a DescribeConfigs answer into ``GroupConfigEntry`` values (the
sources by Java's ``ConfigEntry.ConfigSource`` names); ``alter_group_configs`` sends one
IncrementalAlterConfigs with a SET per value and a DELETE per name, checks its input before
anything is sent, retries what ``kgroup.errors.TABLE[Api.INCREMENTAL_ALTER_CONFIGS]`` retries and
raises the rest typed, with the broker's message. ``kgroup.testing.alter_group_configs`` is a
wrapper over it.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kgroup import _error_codes as codes
from kgroup.admin import (
    AdminError,
    AdminTimeoutError,
    GroupAdmin,
    GroupConfigEntry,
    InvalidConfigError,
    UnsupportedVersionError,
)
from kgroup.cli import configs_json, main
from kgroup.protocol.group_configs import (
    OP_DELETE,
    OP_SET,
    ConfigChange,
    DescribedConfig,
    GroupConfigsAltered,
    GroupConfigsDescribed,
)
from kgroup.testing import FakeClock
from tests.unit.test_admin import ScriptedTransport, done, failed

LOCK = "share.record.lock.duration.ms"
RESET = "share.auto.offset.reset"
SESSION = "consumer.session.timeout.ms"

DESCRIBED = GroupConfigsDescribed(error_code=0, configs=(
    DescribedConfig(name=SESSION, value="45000", config_source=5),
    DescribedConfig(name=LOCK, value="20000", config_source=8),
    DescribedConfig(name=RESET, value="earliest", config_source=8),
    DescribedConfig(name="share.secret", value=None, read_only=True, config_source=4, is_sensitive=True),
))


def described(code=0, message=None, configs=DESCRIBED.configs):
    return lambda: done(GroupConfigsDescribed(error_code=code, error_message=message, configs=configs))


def altered(code=0, message=None):
    return lambda: done(GroupConfigsAltered(error_code=code, error_message=message))


def admin_over(**answers):
    transport = ScriptedTransport(**answers)
    return GroupAdmin(transport, retry_backoff_ms=1), transport


# ------------------------------------------------------------------ describe
def test_describe_turns_each_config_into_an_entry_sorted_by_name() -> None:
    admin, t = admin_over(describe_configs=[described()])
    entries = admin.describe_group_configs("g")
    assert list(entries) == [SESSION, RESET, LOCK, "share.secret"]
    assert entries[LOCK] == GroupConfigEntry(LOCK, "20000", "DYNAMIC_GROUP_CONFIG")
    assert not entries[LOCK].is_default
    assert entries[SESSION] == GroupConfigEntry(SESSION, "45000", "DEFAULT_CONFIG") and entries[SESSION].is_default
    secret = entries["share.secret"]
    assert (secret.value, secret.source, secret.read_only, secret.sensitive, secret.is_default) == (
        None, "STATIC_BROKER_CONFIG", True, True, False)
    assert t.calls == [("describe_configs", "g")], "any broker: no FindCoordinator"


def test_describe_errors_are_typed_with_the_brokers_message() -> None:
    admin, _ = admin_over(describe_configs=[described(codes.GROUP_AUTHORIZATION_FAILED, "denied")])
    with pytest.raises(AdminError, match=r"GROUP_AUTHORIZATION_FAILED \(30\): denied: .*DESCRIBE_CONFIGS") as info:
        admin.describe_group_configs("g")
    assert (info.value.api, info.value.code) == ("DescribeConfigs", codes.GROUP_AUTHORIZATION_FAILED)
    assert type(info.value) is AdminError
    # Apache Kafka before 3.8: "Unknown resource type"; a broker without DescribeConfigs; a broker
    # that describes no config of a group (it keeps none)
    for answer in (described(codes.INVALID_REQUEST, "Unknown resource type UNKNOWN"),
                   described(codes.UNSUPPORTED_VERSION), described(configs=())):
        admin, _ = admin_over(describe_configs=[answer])
        with pytest.raises(UnsupportedVersionError, match=r"Apache Kafka 3\.8\+"):
            admin.describe_group_configs("g")
    with pytest.raises(ValueError, match="group_id"):
        admin.describe_group_configs("")


def test_describe_retries_a_timed_out_request_and_a_lost_connection() -> None:
    admin, t = admin_over(describe_configs=[described(codes.REQUEST_TIMED_OUT),
                                            lambda: failed(ConnectionError("reset by peer")), described()])
    assert LOCK in admin.describe_group_configs("g")
    assert [c[0] for c in t.calls] == ["describe_configs"] * 3


# ------------------------------------------------------------------ alter
def test_alter_sends_one_request_with_a_set_per_value_and_a_delete_per_name() -> None:
    admin, t = admin_over(alter_configs=[altered()])
    assert admin.alter_group_configs("g", set={LOCK: 20000, RESET: "earliest", "x.flag": True},
                                     delete=[SESSION, SESSION]) is None
    assert t.calls == [("alter_configs", "g", (
        ConfigChange(LOCK, OP_SET, "20000"),
        ConfigChange(RESET, OP_SET, "earliest"),
        ConfigChange("x.flag", OP_SET, "true"),
        ConfigChange(SESSION, OP_DELETE, None),
    ), False)]
    admin.alter_group_configs("g", delete=[RESET], validate_only=True)
    assert t.calls[-1] == ("alter_configs", "g", (ConfigChange(RESET, OP_DELETE),), True)


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({}, ValueError, "no config to set or delete"),
    ({"set": {}, "delete": []}, ValueError, "no config to set or delete"),
    ({"set": {LOCK: 1}, "delete": [LOCK]}, ValueError, "both set and deleted: share.record.lock.duration.ms"),
    ({"set": {"": "1"}}, ValueError, "non-empty"),
    ({"delete": [" "]}, ValueError, "non-empty"),
    ({"delete": RESET}, TypeError, "not a str"),
    ({"set": {LOCK: 1.5}}, TypeError, "str or an int"),
], ids=["nothing", "empty", "both", "empty-set-name", "blank-delete-name", "delete-str", "float"])
def test_bad_input_is_refused_before_anything_is_sent(kwargs, error, message) -> None:
    admin, t = admin_over(alter_configs=[altered()])
    with pytest.raises(error, match=message):
        admin.alter_group_configs("g", **kwargs)
    with pytest.raises(ValueError, match="group_id"):
        admin.alter_group_configs("", set={LOCK: 20000})
    assert t.calls == []


def test_invalid_config_raises_invalid_config_error_with_the_brokers_message() -> None:
    message = ("Invalid value 1000 for configuration share.record.lock.duration.ms: Value must be at least 15000")
    admin, t = admin_over(alter_configs=[altered(codes.INVALID_CONFIG, message)])
    with pytest.raises(InvalidConfigError) as info:
        admin.alter_group_configs("g", set={LOCK: 1000})
    assert message in str(info.value) and "'g'" in str(info.value)
    assert (info.value.api, info.value.code, info.value.error_name) == (
        "IncrementalAlterConfigs", codes.INVALID_CONFIG, "INVALID_CONFIG")
    assert len(t.calls) == 1, "a refusal is not retried"


def test_other_refusals_are_typed() -> None:
    admin, _ = admin_over(alter_configs=[altered(codes.INVALID_REQUEST, "Unknown resource type UNKNOWN")])
    with pytest.raises(UnsupportedVersionError, match=r"Unknown resource type UNKNOWN: .*group configs"):
        admin.alter_group_configs("g", set={LOCK: 20000})
    admin, _ = admin_over(alter_configs=[altered(codes.UNSUPPORTED_VERSION)])
    with pytest.raises(UnsupportedVersionError):
        admin.alter_group_configs("g", set={LOCK: 20000})
    admin, _ = admin_over(alter_configs=[altered(codes.GROUP_AUTHORIZATION_FAILED)])
    with pytest.raises(AdminError, match="ALTER_CONFIGS on the group") as info:
        admin.alter_group_configs("g", delete=[LOCK])
    assert info.value.code == codes.GROUP_AUTHORIZATION_FAILED
    admin, _ = admin_over(alter_configs=[altered(codes.POLICY_VIOLATION, "no")])
    with pytest.raises(AdminError, match=r"POLICY_VIOLATION \(44\): no"):
        admin.alter_group_configs("g", delete=[LOCK])


def test_a_retriable_answer_is_retried_within_the_deadline() -> None:
    admin, t = admin_over(alter_configs=[altered(codes.NOT_CONTROLLER), altered(codes.REQUEST_TIMED_OUT), altered()])
    admin.alter_group_configs("g", set={LOCK: 20000})
    assert [c[0] for c in t.calls] == ["alter_configs"] * 3
    # until the deadline: 2 s of 500 ms backoffs on the fake clock, then AdminTimeoutError naming the last answer
    clock = FakeClock()
    t = ScriptedTransport(alter_configs=[altered(codes.NOT_CONTROLLER, "moved")])
    with pytest.raises(AdminTimeoutError, match="NOT_CONTROLLER: moved"):
        GroupAdmin(t, timeout_ms=2000, retry_backoff_ms=500, clock=clock).alter_group_configs("g", set={LOCK: 1})
    assert 2 <= len(t.calls) <= 5


# ------------------------------------------------------------------ kgroup.testing
def test_testing_helper_goes_through_group_admin(monkeypatch: pytest.MonkeyPatch) -> None:
    from kgroup.testing import alter_group_configs

    admin, t = admin_over(alter_configs=[altered()])
    connected = []
    admins = [admin]

    def connect(bootstrap_servers, **kwargs):
        connected.append((bootstrap_servers, kwargs))
        return admins[-1]

    monkeypatch.setattr(GroupAdmin, "connect", staticmethod(connect))
    alter_group_configs("h:9092", "g", {RESET: "earliest", LOCK: 15000}, timeout_s=5)
    assert connected == [("h:9092", {"timeout_ms": 5000, "client_id": "kgroup-testing"})]
    assert t.calls == [("alter_configs", "g", (ConfigChange(RESET, OP_SET, "earliest"),
                                                ConfigChange(LOCK, OP_SET, "15000")), False)]
    with pytest.raises(ValueError, match="at least one"):
        alter_group_configs("h:9092", "g", {})
    with pytest.raises(ValueError, match="positive"):
        alter_group_configs("h:9092", "g", {RESET: "earliest"}, timeout_s=0)
    admins.append(admin_over(alter_configs=[altered(codes.INVALID_CONFIG, "bad")])[0])
    with pytest.raises(InvalidConfigError, match="bad"):
        alter_group_configs("h:9092", "g", {LOCK: 1})


# ------------------------------------------------------------------ the CLI
def invoke(admin: GroupAdmin, *args: str):
    return CliRunner().invoke(main, [*args, "-b", "h:9092"], obj={"admin_factory": lambda servers, ms: admin})


def test_cli_configs_shows_every_config_with_its_source() -> None:
    admin, _ = admin_over(describe_configs=[described()])
    result = invoke(admin, "configs", "g")
    assert result.exit_code == 0, result.output
    lines = [line.split() for line in result.output.splitlines()]
    assert lines[0] == ["NAME", "VALUE", "SOURCE"]
    assert lines[1:] == [
        [SESSION, "45000", "DEFAULT_CONFIG"],
        [RESET, "earliest", "DYNAMIC_GROUP_CONFIG"],
        [LOCK, "20000", "DYNAMIC_GROUP_CONFIG"],
        ["share.secret", "(sensitive)", "STATIC_BROKER_CONFIG"],
    ]


def test_cli_configs_json() -> None:
    admin, _ = admin_over(describe_configs=[described()])
    result = invoke(admin, "configs", "g", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    again = GroupAdmin(ScriptedTransport(describe_configs=[described()])).describe_group_configs("g")
    assert doc == configs_json("g", again)
    assert doc["group_id"] == "g"
    assert doc["configs"][1] == {"name": RESET, "value": "earliest", "source": "DYNAMIC_GROUP_CONFIG",
                                 "is_default": False, "read_only": False, "sensitive": False}
    assert doc["configs"][0]["is_default"] is True


def test_cli_configs_set_and_delete() -> None:
    admin, t = admin_over(alter_configs=[altered()])
    result = invoke(admin, "configs", "g", "--set", f"{LOCK}=20000", "--set", "x.list=a=b", "--delete", RESET)
    assert result.exit_code == 0, result.output
    sent = (ConfigChange(LOCK, OP_SET, "20000"), ConfigChange("x.list", OP_SET, "a=b"), ConfigChange(RESET, OP_DELETE))
    assert t.calls == [("alter_configs", "g", sent, False)]
    assert f"{LOCK}  set to 20000" in result.output and "deleted" in result.output
    result = invoke(admin, "configs", "g", "--delete", RESET, "--validate-only", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"group_id": "g", "validate_only": True, "set": {}, "deleted": [RESET]}
    assert t.calls[-1][-1] is True


def test_cli_configs_refused_change_exits_1_with_the_brokers_message() -> None:
    admin, _ = admin_over(alter_configs=[altered(codes.INVALID_CONFIG, "Value must be at least 15000")])
    result = invoke(admin, "configs", "g", "--set", f"{LOCK}=1000")
    assert result.exit_code == 1
    assert "INVALID_CONFIG (40): Value must be at least 15000" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(("args", "message"), [
    (["--set", "novalue"], "expected NAME=VALUE"),
    (["--set", "=1"], "expected NAME=VALUE"),
    (["--set", "a=1", "--set", "a=2"], "given twice"),
    (["--set", "a=1", "--delete", "a"], "both set and deleted: a"),
    (["--delete", ""], "must not be empty"),
    (["--validate-only"], "--validate-only needs --set or --delete"),
], ids=["no-equals", "no-name", "twice", "both", "empty-delete", "validate-nothing"])
def test_cli_configs_usage_errors(args, message) -> None:
    admin, t = admin_over(alter_configs=[altered()])
    result = invoke(admin, "configs", "g", *args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert t.calls == []
