"""ConsumerGroupHeartbeat (API key 68, KIP-848) as kafka-python message classes, and the mapping to kgroup's values.

kafka-python 3.0.12 has no class for this API. These two are built as kafka-python builds its
own (``JoinGroupRequest`` and the rest in ``kafka.protocol.consumer``): an ``ApiMessage``
subclass that loads its JSON schema, here ``ConsumerGroupHeartbeatRequest.json`` and
``ConsumerGroupHeartbeatResponse.json`` beside this module (Apache Kafka's message definitions,
every version Kafka 4.x serves: 0-1, all flexible, so compact strings and arrays and an empty
tagged-field section end every struct). Defining the response class registers it with
kafka-python's response parser, so ``KafkaNetClient.send`` to a broker that lists API 68 in its
ApiVersions answer decodes the reply like any other.

The request leaves its version unset: the connection picks the highest both sides serve, capped
by the value's ``api_version``. A request with ``subscribed_topic_regex`` sets ``min_version=1``,
so a broker that serves only v0 fails the send (kafka-python's ``IncompatibleBrokerVersion``)
instead of dropping the pattern silently; Java's ``ConsumerHeartbeatRequestManager`` fails
the same way (an ``UnsupportedVersionException``).

The mapping is field by field: the value types
(:mod:`kgroup.membership.consumer_group_api`, imported as ``api``) use the schema's names in snake_case, as
kafka-python does.
"""

from __future__ import annotations

from typing import Any

from kgroup._io import quiet_kafka  # noqa: F401  (first: kafka-python, without its import-time warning)

# isort: split
from kafka.protocol.api_message import ApiMessage

from kgroup.membership import consumer_group_api as api

__all__ = [
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "request_message",
    "request_value",
    "response_message",
    "response_value",
]


# kafka-python loads a message's schema by the class's name: ``<name>.json`` in ``load_json``'s package
class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=__package__):  # type: ignore[misc,call-arg]
    """kafka-python's message class for the ConsumerGroupHeartbeat request (its schema: the JSON beside this module)."""


class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=__package__):  # type: ignore[misc,call-arg]
    """kafka-python's message class for the ConsumerGroupHeartbeat response (registered with its response parser)."""


def request_message(value: api.ConsumerGroupHeartbeatRequest) -> Any:
    """The kafka-python request for ``value``, its version left to the connection (at most ``value.api_version``)."""
    message_class: Any = ConsumerGroupHeartbeatRequest
    topic_partitions = None
    if value.topic_partitions is not None:
        topic_partitions = [
            message_class.TopicPartitions(topic_id=tp.topic_id, partitions=list(tp.partitions))
            for tp in value.topic_partitions
        ]
    return message_class(
        group_id=value.group_id,
        member_id=value.member_id,
        member_epoch=value.member_epoch,
        instance_id=value.instance_id,
        rack_id=value.rack_id,
        rebalance_timeout_ms=value.rebalance_timeout_ms,
        subscribed_topic_names=None if value.subscribed_topic_names is None else list(value.subscribed_topic_names),
        subscribed_topic_regex=value.subscribed_topic_regex,
        server_assignor=value.server_assignor,
        topic_partitions=topic_partitions,
        max_version=value.api_version,
        min_version=api.REGEX_VERSION if value.subscribed_topic_regex is not None else None,
    )


def request_value(message: Any) -> api.ConsumerGroupHeartbeatRequest:
    """The value of a decoded kafka-python request (``api_version``: the version it was decoded at)."""
    names = message.subscribed_topic_names
    partitions = message.topic_partitions
    return api.ConsumerGroupHeartbeatRequest(
        group_id=message.group_id,
        member_id=message.member_id,
        member_epoch=message.member_epoch,
        instance_id=message.instance_id,
        rack_id=message.rack_id,
        rebalance_timeout_ms=message.rebalance_timeout_ms,
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=message.subscribed_topic_regex,
        server_assignor=message.server_assignor,
        topic_partitions=None if partitions is None else tuple(_topic(tp) for tp in partitions),
        api_version=message.API_VERSION,
    )


def response_message(value: api.ConsumerGroupHeartbeatResponse) -> Any:
    """The kafka-python response for ``value`` (for a coordinator model or a test peer)."""
    message_class: Any = ConsumerGroupHeartbeatResponse
    assignment = None
    if value.assignment is not None:
        assignment_class = message_class.Assignment
        assignment = assignment_class(
            topic_partitions=[
                assignment_class.TopicPartitions(topic_id=tp.topic_id, partitions=list(tp.partitions))
                for tp in value.assignment
            ]
        )
    return message_class(
        throttle_time_ms=value.throttle_time_ms,
        error_code=value.error_code,
        error_message=value.error_message,
        member_id=value.member_id,
        member_epoch=value.member_epoch,
        heartbeat_interval_ms=value.heartbeat_interval_ms,
        assignment=assignment,
    )


def response_value(message: Any) -> api.ConsumerGroupHeartbeatResponse:
    """The value of a kafka-python response."""
    assignment = message.assignment
    return api.ConsumerGroupHeartbeatResponse(
        error_code=message.error_code,
        error_message=message.error_message,
        member_id=message.member_id,
        member_epoch=message.member_epoch,
        heartbeat_interval_ms=message.heartbeat_interval_ms,
        assignment=None if assignment is None else tuple(_topic(tp) for tp in assignment.topic_partitions),
        throttle_time_ms=message.throttle_time_ms,
    )


def _topic(message: Any) -> api.TopicIdPartitions:
    return api.TopicIdPartitions(message.topic_id, tuple(message.partitions))
