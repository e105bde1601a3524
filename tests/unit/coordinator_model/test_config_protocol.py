"""CoordinatorConfig validation, protocol voting helpers, the package surface, the default member ids."""

from __future__ import annotations

import re

import pytest

import kgroup.testing.coordinator as pkg
from kgroup.testing import FakeClock
from kgroup.testing.coordinator import CoordinatorConfig, GroupCoordinatorModel, JoinGroupRequest
from kgroup.testing.coordinator._protocol import java_hashmap_order, java_string_hash, select_protocol


def test_config_defaults_are_kafkas():
    config = CoordinatorConfig()
    assert config.group_initial_rebalance_delay_ms == 3000
    assert config.group_min_session_timeout_ms == 6000
    assert config.group_max_session_timeout_ms == 1800000
    assert config.group_max_size == 2**31 - 1
    assert config.offsets_retention_ms == 604_800_000


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("group_initial_rebalance_delay_ms", -1),
        ("group_min_session_timeout_ms", -5),
        ("group_max_session_timeout_ms", 2**31),
        ("group_max_size", 0),
        ("offsets_retention_ms", 0),
    ],
)
def test_config_rejects_out_of_range_values_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        CoordinatorConfig(**{field: value})


def test_config_rejects_min_above_max_and_non_ints():
    with pytest.raises(ValueError, match="group_min_session_timeout_ms"):
        CoordinatorConfig(group_min_session_timeout_ms=10, group_max_session_timeout_ms=9)
    with pytest.raises(TypeError, match="group_max_size"):
        CoordinatorConfig(group_max_size=True)
    with pytest.raises(TypeError, match="group_initial_rebalance_delay_ms"):
        CoordinatorConfig(group_initial_rebalance_delay_ms=1.5)  # type: ignore[arg-type]


@pytest.mark.parametrize(("value", "expected"), [("", 0), ("a", 97), ("hello", 99162322), ("range", 108280125)])
def test_java_string_hash(value, expected):
    assert java_string_hash(value) == expected


def test_java_string_hash_wraps_to_signed_int32():
    assert java_string_hash("roundrobin") == -128548644


def test_java_hashmap_order_is_by_bucket_then_insertion():
    assert java_hashmap_order(["c", "a", "b"]) == ["a", "b", "c"]
    assert java_hashmap_order(["range", "sticky", "roundrobin"]) == ["sticky", "range", "roundrobin"]
    # "a" and "q" share bucket 1 of 16 (97 and 113): insertion order decides
    assert java_hashmap_order(["q", "a"]) == ["q", "a"]
    assert java_hashmap_order(["a", "q"]) == ["a", "q"]


def test_select_protocol():
    assert select_protocol([]) is None
    assert select_protocol([("range",), ("roundrobin",)]) is None
    assert select_protocol([("range", "roundrobin"), ("roundrobin", "range")]) == "range"
    assert select_protocol([("roundrobin", "range"), ("range", "roundrobin"), ("roundrobin",)]) == "roundrobin"


def test_package_all_is_sorted_and_complete():
    exported = set(pkg.__all__)
    # "@py_builtins"/"@pytest_ar": pytest rewrites asserts in kgroup.testing, a registered plugin
    public = {name for name in dir(pkg) if not name.startswith(("_", "@"))}
    assert exported == public
    assert list(pkg.__all__) == sorted(pkg.__all__)


def test_default_member_ids_are_client_id_dash_uuid():
    model = GroupCoordinatorModel(CoordinatorConfig(group_initial_rebalance_delay_ms=0), clock=FakeClock())
    response = model.join_group(
        JoinGroupRequest(
            api_version=9,
            group_id="g",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            client_id="app",
            protocols=(("range", b""),),
        )
    ).response
    assert re.fullmatch(r"app-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", response.member_id)
