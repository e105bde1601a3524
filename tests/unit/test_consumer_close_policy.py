"""Consumer.close(group_membership=...) validates its policy at the boundary (KIP-1092 names)."""

from __future__ import annotations

import pytest

import kgroup
from kgroup._driver.closing import CLOSE_POLICIES as _CLOSE_POLICIES
from kgroup.errors import ConfigError


def test_close_policies_map_to_leave_group_decisions():
    # None: decided by membership kind (dynamic leaves, static remains, KIP-345)
    assert _CLOSE_POLICIES == {"default": None, "remain": False, "leave": True}


def test_unknown_close_policy_is_a_config_error_naming_the_argument():
    consumer = kgroup.Consumer(bootstrap_servers="127.0.0.1:1", group_id="g")
    with pytest.raises(ConfigError) as info:
        consumer.close(group_membership="stay")
    assert info.value.field == "group_membership"
    consumer.close(timeout_ms=0)
