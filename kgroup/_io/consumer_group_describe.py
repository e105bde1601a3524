"""ConsumerGroupDescribe (API key 69, KIP-848) as kafka-python message classes, and the mapping to kgroup's values.

kafka-python 3.0.12 has no class for this API. These two are built as
:mod:`kgroup._io.consumer_group_heartbeat` builds ConsumerGroupHeartbeat's: an ``ApiMessage``
subclass that loads its JSON schema, here ``ConsumerGroupDescribeRequest.json`` and
``ConsumerGroupDescribeResponse.json`` beside this module (Apache Kafka's message definitions,
versions 0-1, both flexible; v1 adds each member's ``MemberType``, KIP-1099). Defining the
response class registers it with kafka-python's response parser, so ``KafkaNetClient.send``
decodes the reply like any other. The request leaves its version to the connection (the highest
both sides serve, at most the value's ``api_version``).

The values are :mod:`kgroup.protocol.consumer_group_describe`'s, field by field.
"""

from __future__ import annotations

from typing import Any

from kgroup._io import quiet_kafka  # noqa: F401  (first: kafka-python, without its import-time warning)

# isort: split
from kafka.protocol.api_message import ApiMessage

from kgroup.protocol import consumer_group_describe as api

__all__ = [
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "request_message",
    "request_value",
    "response_message",
    "response_value",
]


# kafka-python loads a message's schema by the class's name: ``<name>.json`` in ``load_json``'s package
class ConsumerGroupDescribeRequest(ApiMessage, load_json=__package__):  # type: ignore[misc,call-arg]
    """kafka-python's message class for the ConsumerGroupDescribe request (its schema: the JSON beside this module)."""


class ConsumerGroupDescribeResponse(ApiMessage, load_json=__package__):  # type: ignore[misc,call-arg]
    """kafka-python's message class for the ConsumerGroupDescribe response (registered with its response parser)."""


def request_message(value: api.ConsumerGroupDescribeRequest) -> Any:
    """The kafka-python request for ``value``, its version left to the connection (at most ``value.api_version``)."""
    message_class: Any = ConsumerGroupDescribeRequest
    return message_class(
        group_ids=list(value.group_ids),
        include_authorized_operations=value.include_authorized_operations,
        max_version=value.api_version,
    )


def request_value(message: Any) -> api.ConsumerGroupDescribeRequest:
    """The value of a decoded kafka-python request (``api_version``: the version it was decoded at)."""
    return api.ConsumerGroupDescribeRequest(
        group_ids=tuple(message.group_ids),
        include_authorized_operations=message.include_authorized_operations,
        api_version=message.API_VERSION,
    )


def response_message(value: api.ConsumerGroupDescribeResponse) -> Any:
    """The kafka-python response for ``value`` (for a coordinator model or a test peer)."""
    response_class: Any = ConsumerGroupDescribeResponse
    group_class = response_class.DescribedGroup
    member_class = group_class.Member
    assignment_class = member_class.Assignment

    topic_class = assignment_class.TopicPartitions

    def assignment(topics: tuple[api.NamedTopicPartitions, ...]) -> Any:
        return assignment_class(topic_partitions=[
            topic_class(topic_id=t.topic_id, topic_name=t.topic_name, partitions=list(t.partitions)) for t in topics
        ])

    return response_class(
        throttle_time_ms=value.throttle_time_ms,
        groups=[
            group_class(
                error_code=g.error_code,
                error_message=g.error_message,
                group_id=g.group_id,
                group_state=g.group_state,
                group_epoch=g.group_epoch,
                assignment_epoch=g.assignment_epoch,
                assignor_name=g.assignor_name,
                members=[
                    member_class(
                        member_id=m.member_id,
                        instance_id=m.instance_id,
                        rack_id=m.rack_id,
                        member_epoch=m.member_epoch,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        subscribed_topic_names=list(m.subscribed_topic_names),
                        subscribed_topic_regex=m.subscribed_topic_regex,
                        assignment=assignment(m.assignment),
                        target_assignment=assignment(m.target_assignment),
                        member_type=m.member_type,
                    )
                    for m in g.members
                ],
                authorized_operations=g.authorized_operations,
            )
            for g in value.groups
        ],
    )


def response_value(message: Any) -> api.ConsumerGroupDescribeResponse:
    """The value of a kafka-python response (``member_type`` -1 at v0, which does not carry it)."""
    return api.ConsumerGroupDescribeResponse(
        throttle_time_ms=message.throttle_time_ms,
        groups=tuple(
            api.DescribedConsumerGroup(
                error_code=g.error_code,
                error_message=g.error_message,
                group_id=g.group_id,
                group_state=g.group_state,
                group_epoch=g.group_epoch,
                assignment_epoch=g.assignment_epoch,
                assignor_name=g.assignor_name,
                members=tuple(_member(m) for m in g.members),
                authorized_operations=g.authorized_operations,
            )
            for g in message.groups
        ),
    )


def _member(m: Any) -> api.DescribedConsumerMember:
    member_type = getattr(m, "member_type", None)
    return api.DescribedConsumerMember(
        member_id=m.member_id,
        instance_id=m.instance_id,
        rack_id=m.rack_id,
        member_epoch=m.member_epoch,
        client_id=m.client_id,
        client_host=m.client_host,
        subscribed_topic_names=tuple(m.subscribed_topic_names),
        subscribed_topic_regex=m.subscribed_topic_regex,
        assignment=_assignment(m.assignment),
        target_assignment=_assignment(m.target_assignment),
        member_type=api.MEMBER_TYPE_UNKNOWN if member_type is None else member_type,
    )


def _assignment(message: Any) -> tuple[api.NamedTopicPartitions, ...]:
    if message is None:
        return ()
    return tuple(
        api.NamedTopicPartitions(t.topic_id, t.topic_name, tuple(t.partitions)) for t in message.topic_partitions
    )
