"""The admin transport's answers from kafka-python's message classes (no broker).

What only ``KafkaAdminTransport`` decides: which ListGroups fields a version carries (state from
v4, KIP-518; type from v5, KIP-848), that the admin's OffsetCommit is sent at v8 at most
with generation -1 and member id "", and a group's configs' DescribeConfigs and
IncrementalAlterConfigs (GROUP resource, at the least loaded broker) against frames written from
Kafka's message schemas.
"""

from __future__ import annotations

import concurrent.futures
import io
from typing import Any

import pytest
from kafka.protocol.admin import DescribeConfigsResponse, IncrementalAlterConfigsResponse, ListGroupsResponse

from kgroup import _error_codes as codes
from kgroup._io import kafka_admin
from kgroup._io.kafka_messages import request_body
from kgroup.protocol.group_api import ListedGroup
from kgroup.protocol.group_configs import (
    OP_DELETE,
    OP_SET,
    ConfigChange,
    DescribedConfig,
    GroupConfigsAltered,
    GroupConfigsDescribed,
)
from kgroup.types import Generation, OffsetAndMetadata, TopicPartition


def _answer(version: int, code: int = 0) -> ListGroupsResponse:
    group = ListGroupsResponse.ListedGroup(group_id="g", protocol_type="consumer", group_state="Stable",
                                           group_type="consumer")
    sent = ListGroupsResponse(version=version, throttle_time_ms=0, error_code=code, groups=[group])
    return ListGroupsResponse.decode(io.BytesIO(sent.encode(version=version)), version=version)


@pytest.mark.parametrize(("version", "state", "group_type"),
                         [(3, "", ""), (4, "Stable", ""), (5, "Stable", "consumer")])
def test_list_groups_keeps_the_fields_the_answers_version_carries(version: int, state: str, group_type: str) -> None:
    assert kafka_admin._listed_groups(_answer(version)) == (
        0, (ListedGroup(group_id="g", protocol_type="consumer", group_state=state, group_type=group_type),))


def test_the_admin_commit_is_an_offset_commit_outside_the_group_at_v8_at_most() -> None:
    request = kafka_admin.admin_offset_commit("g", {TopicPartition("t", 1): OffsetAndMetadata(5, "m")})
    assert request.api_version == kafka_admin.ADMIN_OFFSET_COMMIT_MAX == 8
    assert (request.generation_id, request.member_id, request.group_instance_id) == (
        Generation().generation_id, "", None)
    body = request_body((request,))
    assert body["generation_id_or_member_epoch"] == -1
    assert [(t["name"], [p["committed_offset"] for p in t["partitions"]]) for t in body["topics"]] == [("t", [5])]


# ------------------------------------------------------------------ a group's configs (KIP-848, KIP-932)
# The frames below are written out by hand from Apache Kafka's message schemas
# (``DescribeConfigsRequest.json``/``Response.json``, ``IncrementalAlterConfigsRequest.json``/
# ``Response.json`` in clients/src/main/resources/common/message), field by field; the flexible
# versions (DescribeConfigs v4, IncrementalAlterConfigs v1) write compact arrays and strings
# (length + 1 as an unsigned varint, 0 for null) and a tagged-field count (0) after each struct.
LOCK, RESET = "share.record.lock.duration.ms", "share.auto.offset.reset"


def _compact(text: str) -> str:
    return f"{len(text) + 1:02x}" + text.encode().hex()


def _string(text: str) -> str:
    return f"{len(text):04x}" + text.encode().hex()


DESCRIBE_V4 = (
    "02"  # resources: 1
    "20" + _compact("g")  # resource_type GROUP (32), resource_name
    + "00" "00"  # configuration_keys null (every config), tags
    "00" "00" "00"  # include_synonyms, include_documentation false, tags
)
DESCRIBE_V1 = "00000001" "20" + _string("g") + "ffffffff" "00"  # keys null (int32 -1), include_synonyms false


@pytest.mark.parametrize(("version", "golden"), [(4, DESCRIBE_V4), (1, DESCRIBE_V1)], ids=["v4", "v1"])
def test_describe_group_configs_request_encodes_every_config_of_the_group_resource(version: int, golden: str) -> None:
    assert kafka_admin.describe_group_configs_request("g").encode(version=version).hex() == golden


#: each config: name, value, read_only, config_source, is_sensitive, synonyms (empty: 01),
#: config_type (v3+), documentation (null), tags
DESCRIBED_V4 = (
    "00000000" "02"  # throttle_time_ms, results: 1
    "0000" "00" "20" + _compact("g")  # error_code, error_message null, resource GROUP "g"
    + "03"  # configs: 2
    + _compact(LOCK) + _compact("20000") + "00" "08" "00" "01" "03" "00" "00"  # DYNAMIC_GROUP_CONFIG (8), INT
    + _compact("share.isolation.level") + _compact("read_uncommitted")
    + "00" "05" "00" "01" "02" "00" "00"  # DEFAULT_CONFIG (5), STRING
    + "00" "00"  # the result's tags, the response's
)


def test_describe_group_configs_response_decodes_to_values() -> None:
    message = DescribeConfigsResponse.decode(bytes.fromhex(DESCRIBED_V4), version=4)
    assert kafka_admin.described_group_configs(message, "g") == GroupConfigsDescribed(error_code=0, configs=(
        DescribedConfig(name=LOCK, value="20000", read_only=False, config_source=8, is_sensitive=False),
        DescribedConfig(name="share.isolation.level", value="read_uncommitted", config_source=5),
    ))
    missing = kafka_admin.described_group_configs(message, "other")
    assert missing.error_code == codes.INVALID_REQUEST and "without the group 'other'" in (missing.error_message or "")


ALTER_V1 = (
    "02" "20" + _compact("g")  # resources: 1, GROUP "g"
    + "03"  # configs: 2
    + _compact(LOCK) + "00" + _compact("20000") + "00"  # SET (0) with its value, tags
    + _compact(RESET) + "01" "00" "00"  # DELETE (1), value null, tags
    + "00" "01" "00"  # the resource's tags, validate_only true, tags
)
ALTER_V0 = (
    "00000001" "20" + _string("g") + "00000002"
    + _string(LOCK) + "00" + _string("20000")
    + _string(RESET) + "01" "ffff"  # value null (int16 -1)
    + "01"
)


@pytest.mark.parametrize(("version", "golden"), [(1, ALTER_V1), (0, ALTER_V0)], ids=["v1", "v0"])
def test_alter_group_configs_request_encodes_set_and_delete_ops(version: int, golden: str) -> None:
    changes = (ConfigChange(LOCK, OP_SET, "20000"), ConfigChange(RESET, OP_DELETE))
    request = kafka_admin.alter_group_configs_request("g", changes, validate_only=True)
    assert request.encode(version=version).hex() == golden


def test_alter_group_configs_response_decodes_the_groups_code_and_message() -> None:
    refused = "00000000" "02" "0028" + _compact("lock too low") + "20" + _compact("g") + "00" "00"
    message = IncrementalAlterConfigsResponse.decode(bytes.fromhex(refused), version=1)
    assert kafka_admin.altered_group_configs(message, "g") == GroupConfigsAltered(
        error_code=codes.INVALID_CONFIG, error_message="lock too low")
    assert kafka_admin.altered_group_configs(message, "h").error_code == codes.INVALID_REQUEST


class _Manager:
    """What the transport's calls read of kafka-python's connection manager: the least loaded node."""

    @staticmethod
    def least_loaded_node() -> int:
        return 7


def test_group_config_requests_go_to_the_least_loaded_broker_not_the_coordinator() -> None:
    """Java's ``KafkaAdminClient``: only BROKER and BROKER_LOGGER resources go to a given node."""
    transport = object.__new__(kafka_admin.KafkaAdminTransport)
    sent: list[tuple[Any, Any]] = []
    answers = {
        32: DescribeConfigsResponse.decode(bytes.fromhex(DESCRIBED_V4), version=4),
        44: IncrementalAlterConfigsResponse.decode(bytes.fromhex(
            "00000000" "02" "0000" "00" "20" + _compact("g") + "00" "00"), version=1),
    }

    def bridge(build: Any, node: Any, timeout_ms: int, convert: Any) -> concurrent.futures.Future[Any]:
        request = build()
        sent.append((type(request).__name__, node() if callable(node) else node))
        out: concurrent.futures.Future[Any] = concurrent.futures.Future()
        out.set_result(convert(answers[request.API_KEY]))
        return out

    transport._manager = _Manager()  # type: ignore[assignment]
    transport._bridge = bridge  # type: ignore[method-assign]
    assert transport.describe_group_config_entries("g", 1000).result(1).configs[0].name == LOCK
    assert transport.incremental_alter_group_configs("g", [ConfigChange(LOCK, OP_SET, "1")], False, 1000).result(
        1) == GroupConfigsAltered(error_code=0)
    assert sent == [("DescribeConfigsRequest", 7), ("IncrementalAlterConfigsRequest", 7)]
