"""A group's configs (KIP-848, KIP-932) against Apache Kafka 4.4: ``GroupAdmin`` and the ``kgroup configs`` CLI.

On Kafka's own brokers (``ConfigResource.Type.GROUP``; Java's ``Admin.incrementalAlterConfigs``
and ``Admin.describeConfigs``, ``kafka-configs.sh --entity-type groups``):

* a fresh share group's ``share.record.lock.duration.ms`` and ``share.auto.offset.reset`` are set
  (IncrementalAlterConfigs SET), described with source DYNAMIC_GROUP_CONFIG (DescribeConfigs);
  one deleted (DELETE) is back to the default (DEFAULT_CONFIG); a ``validate_only`` change
  applies nothing;
* an out-of-range lock duration (1000 ms, under ``group.share.min.record.lock.duration.ms``) is
  refused with INVALID_CONFIG as ``InvalidConfigError``, with the broker's message, and nothing
  changes;
* a ``kgroup.ShareConsumer`` of the group is given the group's lock duration
  (``acquisition_lock_timeout_ms()``: 20000, not the brokers' 30000);
* a consumer-protocol group's ``consumer.session.timeout.ms`` is set and deleted the same way;
* ``kgroup configs GROUP --set ... --delete ...`` and ``kgroup configs GROUP --json`` do the same
  from the command line.

Runs on ``broker_kinds("apache-kafka")``: Tansu keeps no group configs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from kgroup import ShareConsumer
from kgroup._error_codes import INVALID_CONFIG
from kgroup.admin import GroupAdmin, GroupConfigEntry, InvalidConfigError
from kgroup.cli import main
from kgroup.testing import alter_group_configs
from tests.integration.test_share_consumer import wait_for

pytestmark = pytest.mark.broker_kinds("apache-kafka")

LOCK = "share.record.lock.duration.ms"
RESET = "share.auto.offset.reset"
SESSION = "consumer.session.timeout.ms"
DYNAMIC = "DYNAMIC_GROUP_CONFIG"


@pytest.fixture
def admin(kafka_bootstrap: str) -> Iterator[GroupAdmin]:
    with GroupAdmin.connect(kafka_bootstrap, timeout_ms=30000) as group_admin:
        yield group_admin


def own(entries: dict[str, GroupConfigEntry]) -> dict[str, str | None]:
    """The configs the group sets itself (source DYNAMIC_GROUP_CONFIG)."""
    return {name: e.value for name, e in entries.items() if e.source == DYNAMIC}


def described_when(admin: GroupAdmin, group_id: str,
                   ok: Callable[[dict[str, GroupConfigEntry]], bool]) -> dict[str, GroupConfigEntry]:
    """The group's configs once ``ok`` holds for them: a change reaches the brokers through the controller's
    metadata, so a DescribeConfigs at once may still show the old value (seen on a loaded machine)."""
    def probe() -> dict[str, GroupConfigEntry] | None:
        entries = admin.describe_group_configs(group_id)
        return entries if ok(entries) else None
    return wait_for("the change described", probe)


def cli(bootstrap: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, [*args, "--bootstrap-servers", bootstrap, "--timeout-ms", "30000"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def test_share_group_configs_are_set_described_and_deleted(admin: GroupAdmin, group_id_factory: Any) -> None:
    group_id = group_id_factory()
    before = admin.describe_group_configs(group_id)
    assert own(before) == {}, "a fresh group sets nothing"
    assert before[LOCK].is_default and before[RESET].is_default
    assert before[RESET].value == "latest"
    print(f"\n{len(before)} configs of a fresh group, e.g. {before[LOCK]}")

    admin.alter_group_configs(group_id, set={LOCK: 20000, RESET: "earliest"})
    after = described_when(admin, group_id, lambda d: own(d) == {LOCK: "20000", RESET: "earliest"})
    assert own(after) == {LOCK: "20000", RESET: "earliest"}
    assert after[LOCK] == GroupConfigEntry(LOCK, "20000", DYNAMIC) and not after[LOCK].is_default

    admin.alter_group_configs(group_id, set={LOCK: 25000}, validate_only=True)
    assert admin.describe_group_configs(group_id)[LOCK].value == "20000", "validate_only applies nothing"

    admin.alter_group_configs(group_id, delete=[RESET])
    deleted = described_when(admin, group_id, lambda d: RESET not in own(d))
    assert own(deleted) == {LOCK: "20000"}
    assert deleted[RESET].is_default and deleted[RESET].value == before[RESET].value


def test_an_out_of_range_value_is_refused_with_the_brokers_message(admin: GroupAdmin, group_id_factory: Any) -> None:
    group_id = group_id_factory()
    with pytest.raises(InvalidConfigError) as info:
        admin.alter_group_configs(group_id, set={LOCK: 1000, RESET: "earliest"})
    print(f"\n{info.value}")
    assert (info.value.code, info.value.api) == (INVALID_CONFIG, "IncrementalAlterConfigs")
    assert LOCK in str(info.value), "the broker's message names the config"
    assert own(admin.describe_group_configs(group_id)) == {}, "all or nothing: the valid one was not applied either"
    with pytest.raises(InvalidConfigError):
        admin.alter_group_configs(group_id, set={"share.no.such.config": "1"})


def test_a_share_consumer_gets_the_groups_lock_duration(
    kafka_bootstrap: str, topic_factory: Any, group_id_factory: Any
) -> None:
    topic = topic_factory(1)
    group_id = group_id_factory()
    alter_group_configs(kafka_bootstrap, group_id, {LOCK: 20000, RESET: "earliest"})
    consumer: ShareConsumer[Any, Any] = ShareConsumer(bootstrap_servers=kafka_bootstrap, group_id=group_id)
    try:
        consumer.subscribe([topic])

        def fetching() -> int | None:
            consumer.poll(200)
            return consumer.acquisition_lock_timeout_ms() if consumer.assignment() else None

        assert wait_for("a ShareFetch answered", fetching) == 20000, "the group's, not the brokers' 30000"
    finally:
        consumer.close(timeout_ms=10000)


def test_a_consumer_group_config_is_set_and_deleted(admin: GroupAdmin, group_id_factory: Any) -> None:
    group_id = group_id_factory()
    default = admin.describe_group_configs(group_id)[SESSION]
    assert default.is_default
    wanted = "50000"  # within group.consumer.min.session.timeout.ms (45000) and ...max... (60000)
    assert default.value != wanted
    admin.alter_group_configs(group_id, set={SESSION: wanted})
    wait_for("the change described", lambda: admin.describe_group_configs(group_id)[SESSION]
             == GroupConfigEntry(SESSION, wanted, DYNAMIC))
    admin.alter_group_configs(group_id, delete=[SESSION])
    wait_for("the delete described", lambda: admin.describe_group_configs(group_id)[SESSION] == default)


def test_the_cli_sets_describes_and_deletes(kafka_bootstrap: str, group_id_factory: Any) -> None:
    group_id = group_id_factory()
    code, out = cli(kafka_bootstrap, "configs", group_id, "--set", f"{LOCK}=20000", "--set", f"{RESET}=earliest")
    assert code == 0, out
    code, out = cli(kafka_bootstrap, "configs", group_id, "--json")
    assert code == 0, out
    rows = {row["name"]: row for row in json.loads(out)["configs"]}
    assert (rows[LOCK]["value"], rows[LOCK]["source"], rows[LOCK]["is_default"]) == ("20000", DYNAMIC, False)
    assert rows[RESET]["value"] == "earliest"
    code, out = cli(kafka_bootstrap, "configs", group_id, "--delete", LOCK)
    assert code == 0, out
    code, out = cli(kafka_bootstrap, "configs", group_id)
    assert code == 0, out
    table = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:]}
    assert table[RESET] == ["earliest", DYNAMIC]
    assert table[LOCK][1] == "DEFAULT_CONFIG"
    code, out = cli(kafka_bootstrap, "configs", group_id, "--set", f"{LOCK}=1000")
    assert code == 1 and "INVALID_CONFIG (40)" in out and LOCK in out, out
