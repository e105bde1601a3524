"""A group's configs on the wire as kgroup values: DescribeConfigs and IncrementalAlterConfigs of a GROUP resource.

Apache Kafka 3.8+ keeps configs per group (``ConfigResource.Type.GROUP``, resource type 32):
the consumer protocol's (KIP-848: ``consumer.session.timeout.ms``,
``consumer.heartbeat.interval.ms``, ...) and share groups' (KIP-932: ``share.auto.offset.reset``,
``share.record.lock.duration.ms``, ``share.delivery.count.limit``, ``share.isolation.level``, ...),
over the brokers' ``group.consumer.*`` and ``group.share.*`` settings. Java's
``Admin.describeConfigs`` and ``Admin.incrementalAlterConfigs`` on
``new ConfigResource(ConfigResource.Type.GROUP, groupId)`` send these APIs to any broker;
:class:`kgroup.admin.GroupAdmin` does the same. :mod:`kgroup._io.kafka_admin` turns
kafka-python's messages into these values (field names: Apache Kafka's message schemas, in
snake_case).

=========================  ===  ========  =================================================
API                        key  versions  what
=========================  ===  ========  =================================================
DescribeConfigs             32  1-4       every config of the group: value, source, read-only,
                                          sensitive (v4 is the flexible version)
IncrementalAlterConfigs     44  0-1       SET and DELETE operations on the group's own
                                          configs (v1 is the flexible version)
=========================  ===  ========  =================================================
"""

from __future__ import annotations

from typing import Final

import attrs

__all__ = [
    "CONFIG_SOURCES",
    "DESCRIBE_CONFIGS",
    "GROUP_RESOURCE_TYPE",
    "INCREMENTAL_ALTER_CONFIGS",
    "OP_DELETE",
    "OP_SET",
    "ConfigChange",
    "DescribedConfig",
    "GroupConfigsAltered",
    "GroupConfigsDescribed",
    "config_source_name",
]

#: the API keys
DESCRIBE_CONFIGS: Final = 32
INCREMENTAL_ALTER_CONFIGS: Final = 44

#: ``ConfigResource.Type.GROUP``'s id on the wire (KIP-848)
GROUP_RESOURCE_TYPE: Final = 32

#: ``AlterConfigOp.OpType``'s ids: SET a config's value, DELETE it (back to the broker's default)
OP_SET: Final = 0
OP_DELETE: Final = 1

#: DescribeConfigs' ``ConfigSource`` ids, by the names of Java's ``ConfigEntry.ConfigSource``
#: (what ``kafka-configs.sh --describe`` prints): a group's own config is DYNAMIC_GROUP_CONFIG (8),
#: one it does not set DEFAULT_CONFIG (5) or the broker's (STATIC_BROKER_CONFIG, 4, ...)
CONFIG_SOURCES: Final = (
    "UNKNOWN",
    "DYNAMIC_TOPIC_CONFIG",
    "DYNAMIC_BROKER_CONFIG",
    "DYNAMIC_DEFAULT_BROKER_CONFIG",
    "STATIC_BROKER_CONFIG",
    "DEFAULT_CONFIG",
    "DYNAMIC_BROKER_LOGGER_CONFIG",
    "DYNAMIC_CLIENT_METRICS_CONFIG",
    "DYNAMIC_GROUP_CONFIG",
)


def config_source_name(source: int) -> str:
    """The name of a DescribeConfigs ``config_source`` id (Java ``ConfigEntry.ConfigSource``); "UNKNOWN" if new."""
    return CONFIG_SOURCES[source] if 0 <= source < len(CONFIG_SOURCES) else "UNKNOWN"


@attrs.frozen(kw_only=True)
class DescribedConfig:
    """One config of a DescribeConfigs answer.

    Attributes:
        name: the config's name.
        value: its value; None for a sensitive one (or none set).
        read_only: the broker does not let it be altered.
        config_source: where the value comes from (an id of :data:`CONFIG_SOURCES`).
        is_sensitive: a secret (its value is not sent).

    """

    name: str
    value: str | None
    read_only: bool = False
    config_source: int = 0
    is_sensitive: bool = False


@attrs.frozen(kw_only=True)
class GroupConfigsDescribed:
    """A DescribeConfigs answer for one GROUP resource: its error and its configs, in the broker's order."""

    error_code: int
    error_message: str | None = None
    configs: tuple[DescribedConfig, ...] = ()


@attrs.frozen
class ConfigChange:
    """One operation of an IncrementalAlterConfigs: ``OP_SET`` with a value, or ``OP_DELETE`` (value None)."""

    name: str
    operation: int
    value: str | None = None


@attrs.frozen(kw_only=True)
class GroupConfigsAltered:
    """An IncrementalAlterConfigs answer for one GROUP resource: its error code (0: done) and message."""

    error_code: int
    error_message: str | None = None
