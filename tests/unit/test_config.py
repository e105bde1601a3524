"""ConsumerConfig: Java's defaults, validation at construction naming the field."""

from __future__ import annotations

import pytest

import kgroup
from kgroup import ConfigError, ConsumerConfig
from kgroup.types import RebalanceProtocol

BASE = {"bootstrap_servers": "localhost:9092", "group_id": "g"}


def test_config_defaults_match_java_consumer():
    cfg = ConsumerConfig(**BASE)
    assert cfg.session_timeout_ms == 45000
    assert cfg.heartbeat_interval_ms == 3000
    assert cfg.max_poll_interval_ms == 300000
    assert cfg.rebalance_timeout_ms is None
    assert cfg.effective_rebalance_timeout_ms == 300000
    # ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY default since Kafka 3.0: range, then cooperative-sticky
    assert [a.name for a in cfg.assignors] == ["range", "cooperative-sticky"]
    assert cfg.protocol is RebalanceProtocol.EAGER
    assert cfg.enable_auto_commit is True
    assert cfg.auto_commit_interval_ms == 5000
    assert cfg.auto_offset_reset == "latest"
    assert cfg.max_poll_records == 500
    assert cfg.request_timeout_ms == 30000
    assert cfg.retry_backoff_ms == 100
    assert cfg.group_instance_id is None
    assert cfg.protocol is RebalanceProtocol.EAGER


def test_config_rebalance_timeout_follows_max_poll_interval_unless_set():
    assert ConsumerConfig(**BASE, max_poll_interval_ms=1234).effective_rebalance_timeout_ms == 1234
    assert ConsumerConfig(**BASE, rebalance_timeout_ms=999).effective_rebalance_timeout_ms == 999


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"heartbeat_interval_ms": 6000, "session_timeout_ms": 6000}, "heartbeat_interval_ms"),
        ({"heartbeat_interval_ms": 7000, "session_timeout_ms": 6000}, "heartbeat_interval_ms"),
        ({"session_timeout_ms": 0}, "session_timeout_ms"),
        ({"session_timeout_ms": -1}, "session_timeout_ms"),
        ({"max_poll_interval_ms": 0}, "max_poll_interval_ms"),
        ({"rebalance_timeout_ms": -5}, "rebalance_timeout_ms"),
        ({"request_timeout_ms": 0}, "request_timeout_ms"),
        ({"auto_commit_interval_ms": 0}, "auto_commit_interval_ms"),
        ({"max_poll_records": 0}, "max_poll_records"),
        ({"session_timeout_ms": "6000"}, "session_timeout_ms"),
        ({"session_timeout_ms": True}, "session_timeout_ms"),
        ({"assignors": ("range", "nope")}, "assignors"),
        ({"assignors": ()}, "assignors"),
        ({"assignors": ("range", "range")}, "assignors"),
        ({"assignors": (42,)}, "assignors"),
        ({"auto_offset_reset": "smallest"}, "auto_offset_reset"),
        ({"enable_auto_commit": "yes"}, "enable_auto_commit"),
        ({"group_instance_id": ""}, "group_instance_id"),
        ({"group_instance_id": "pod 1"}, "group_instance_id"),
        ({"group_instance_id": "x" * 250}, "group_instance_id"),
        ({"group_id": ""}, "group_id"),
        ({"bootstrap_servers": ""}, "bootstrap_servers"),
        ({"security_protocol": "TLS"}, "security_protocol"),
        ({"fetch_max_wait_ms": 40000}, "fetch_max_wait_ms"),
    ],
    ids=lambda v: v if isinstance(v, str) else "-".join(map(str, v)),
)
def test_config_bad_value_raises_config_error_naming_field(overrides, field):
    with pytest.raises(ConfigError) as info:
        ConsumerConfig(**{**BASE, **overrides})
    assert info.value.field == field
    assert field in str(info.value)


def test_config_unknown_key_raises_config_error_naming_key():
    with pytest.raises(ConfigError) as info:
        kgroup.Consumer(bootstrap_servers="x:1", group_id="g", sesion_timeout_ms=6000)
    assert info.value.field == "sesion_timeout_ms"


def test_config_missing_group_id_raises_config_error():
    with pytest.raises(ConfigError) as info:
        kgroup.Consumer(bootstrap_servers="x:1")
    assert info.value.field == "group_id"


def test_config_heartbeat_above_a_third_of_session_warns():
    with pytest.warns(UserWarning, match="a third"):
        ConsumerConfig(**BASE, session_timeout_ms=6000, heartbeat_interval_ms=3000)


def test_config_from_properties_maps_kafka_names_and_rejects_unknown():
    cfg = ConsumerConfig.from_properties(
        {
            "bootstrap.servers": "h:1",
            "group.id": "g",
            "session.timeout.ms": "6000",
            "heartbeat.interval.ms": "1000",
            "enable.auto.commit": "false",
            "partition.assignment.strategy": "roundrobin,range",
        }
    )
    assert cfg.session_timeout_ms == 6000
    assert cfg.enable_auto_commit is False
    assert [a.name for a in cfg.assignors] == ["roundrobin", "range"]
    with pytest.raises(ConfigError) as info:
        ConsumerConfig.from_properties({**{"bootstrap.servers": "h:1", "group.id": "g"}, "fetch.foo": 1})
    assert info.value.field == "fetch.foo"


def test_config_accepts_assignor_objects_and_list_of_servers():
    cfg = ConsumerConfig(bootstrap_servers=["a:1", "b:2"], group_id="g",
                         assignors=(kgroup.RoundRobinAssignor(), "range"))
    assert cfg.bootstrap_servers == "a:1,b:2"
    assert [a.name for a in cfg.assignors] == ["roundrobin", "range"]


def test_consumer_constructor_starts_no_thread():
    import threading

    before = {t.name for t in threading.enumerate()}
    consumer = kgroup.Consumer(bootstrap_servers="127.0.0.1:1", group_id="g")
    assert {t.name for t in threading.enumerate()} == before
    consumer.close()
