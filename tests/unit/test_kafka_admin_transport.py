"""The admin transport's answers from kafka-python's message classes (no broker).

What only ``KafkaAdminTransport`` decides: which ListGroups fields a version carries (state from
v4, KIP-518; type from v5, KIP-848), and that the admin's OffsetCommit is sent at v8 at most
with generation -1 and member id "".
"""

from __future__ import annotations

import io

import pytest
from kafka.protocol.admin import ListGroupsResponse

from kgroup._io import kafka_admin
from kgroup._io.kafka_messages import request_body
from kgroup.protocol.group_api import ListedGroup
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
