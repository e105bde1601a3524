"""``group_protocol`` and ``group_remote_assignor``: Java's ``ConsumerConfig`` rules (KIP-848).

Java 4.x (``ConsumerConfig.checkUnsupportedConfigsPostProcess``) rejects, with a
``ConfigException``, ``partition.assignment.strategy``, ``heartbeat.interval.ms`` and
``session.timeout.ms`` set explicitly (even to their default) under ``group.protocol=consumer``,
and ``group.remote.assignor`` under ``classic``; a blank value counts as not set.
"""

from __future__ import annotations

import warnings

import pytest

from kgroup import ConfigError, ConsumerConfig

BASE = {"bootstrap_servers": "localhost:9092", "group_id": "g"}


def test_the_default_is_classic_with_no_remote_assignor():
    config = ConsumerConfig(**BASE)
    assert config.group_protocol == "classic"
    assert config.group_remote_assignor is None


@pytest.mark.parametrize("value", ["consumer", "CONSUMER", " Consumer "])
def test_consumer_is_accepted_in_any_case(value):
    config = ConsumerConfig(**BASE, group_protocol=value)  # type: ignore[arg-type]
    assert config.group_protocol == "consumer"


def test_an_unknown_protocol_is_rejected():
    with pytest.raises(ConfigError, match=r"classic.*consumer") as info:
        ConsumerConfig(**BASE, group_protocol="eager")  # type: ignore[arg-type]
    assert info.value.field == "group_protocol"


@pytest.mark.parametrize(
    ("field", "value", "java"),
    [
        ("session_timeout_ms", 45000, "session.timeout.ms"),  # the default value, set: still rejected
        ("session_timeout_ms", 10000, "session.timeout.ms"),
        ("heartbeat_interval_ms", 3000, "heartbeat.interval.ms"),
        ("assignors", ("range", "cooperative-sticky"), "partition.assignment.strategy"),
        ("assignors", "range", "partition.assignment.strategy"),
    ],
)
def test_the_settings_the_broker_owns_are_rejected_under_consumer(field, value, java):
    with pytest.raises(ConfigError, match=rf"cannot be set when group_protocol='consumer'.*{java}") as info:
        ConsumerConfig(**BASE, group_protocol="consumer", **{field: value})
    assert info.value.field == field


def test_every_offending_setting_is_named_in_javas_order():
    with pytest.raises(ConfigError) as info:
        ConsumerConfig(
            **BASE, group_protocol="consumer", session_timeout_ms=10000, heartbeat_interval_ms=1000, assignors="range"
        )
    assert info.value.field == "assignors"
    assert "partition.assignment.strategy, heartbeat.interval.ms, session.timeout.ms cannot be set when " \
        "group.protocol=CONSUMER" in str(info.value)


def test_the_same_settings_are_fine_under_classic():
    config = ConsumerConfig(**BASE, session_timeout_ms=10000, heartbeat_interval_ms=1000, assignors="range")
    assert config.session_timeout_ms == 10000


def test_under_consumer_the_rest_is_accepted_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = ConsumerConfig(
            **BASE,
            group_protocol="consumer",
            group_remote_assignor="uniform",
            group_instance_id="i-1",
            max_poll_interval_ms=60000,
            rebalance_timeout_ms=30000,
            client_rack="az1",
        )
    assert config.group_remote_assignor == "uniform"
    assert config.effective_rebalance_timeout_ms == 30000


def test_a_remote_assignor_is_rejected_under_classic():
    match = r"group\.remote\.assignor cannot be set when group\.protocol=CLASSIC"
    with pytest.raises(ConfigError, match=match) as info:
        ConsumerConfig(**BASE, group_remote_assignor="uniform")
    assert info.value.field == "group_remote_assignor"


@pytest.mark.parametrize("blank", ["", "  ", None])
def test_a_blank_remote_assignor_is_not_set(blank):
    assert ConsumerConfig(**BASE, group_remote_assignor=blank).group_remote_assignor is None
    assert ConsumerConfig(**BASE, group_protocol="consumer", group_remote_assignor=blank).group_remote_assignor is None


def test_java_properties_follow_the_same_rules():
    config = ConsumerConfig.from_properties({**BASE, "group.protocol": "CONSUMER", "group.remote.assignor": "range"})
    assert (config.group_protocol, config.group_remote_assignor) == ("consumer", "range")
    for key, value in [
        ("session.timeout.ms", "45000"),
        ("heartbeat.interval.ms", "3000"),
        ("partition.assignment.strategy", "org.apache.kafka.clients.consumer.RangeAssignor"),
    ]:
        with pytest.raises(ConfigError, match=rf"{key} cannot be set when group\.protocol=CONSUMER"):
            ConsumerConfig.from_properties({**BASE, "group.protocol": "consumer", key: value})
    with pytest.raises(ConfigError, match=r"group\.remote\.assignor cannot be set when group\.protocol=CLASSIC"):
        ConsumerConfig.from_properties({**BASE, "group.remote.assignor": "uniform"})
    # blank is unset, as in Java
    assert ConsumerConfig.from_properties({**BASE, "group.remote.assignor": ""}).group_remote_assignor is None
    with pytest.raises(ConfigError) as info:
        ConsumerConfig.from_properties({**BASE, "group.protocol": "eager"})
    assert info.value.field == "group.protocol"
