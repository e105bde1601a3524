"""Options of the ``kgroup`` Spark source: parsing and validation, no Spark import.

Spark hands a Python data source its options with lower-cased keys; errors name the option as
documented (``maxOffsetsPerTrigger``, ``group.id``...). Kafka consumer properties are accepted
by their Kafka names, bare (``session.timeout.ms``) or with Spark's Kafka source prefix
(``kafka.session.timeout.ms``), and validated by :class:`kgroup.ConsumerConfig`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from kgroup.config import ConsumerConfig
from kgroup.errors import ConfigError
from kgroup.types import TopicPartition

__all__ = ["SourceOptionError", "SourceOptions", "parse_options"]

#: source options (lower case as Spark passes them) -> the documented spelling
_SOURCE_OPTIONS = {
    "subscribe": "subscribe",
    "assign": "assign",
    "maxoffsetspertrigger": "maxOffsetsPerTrigger",
    "startingoffsets": "startingOffsets",
    "endingoffsets": "endingOffsets",
    "fetchtimeoutms": "fetchTimeoutMs",
}
#: Kafka properties the source owns: the reason they cannot be set
_FORBIDDEN = {
    "enable.auto.commit": "the source commits each micro-batch's end offsets itself",
    "auto.offset.reset": "use the startingOffsets option ('earliest' or 'latest')",
}
#: ConsumerConfig fields that cannot come from a string option
_NOT_STRINGS = {"ssl_context", "sasl_oauth_token_provider"}
_DEFAULT_FETCH_TIMEOUT_MS = 120_000
_DRIVER_DEFAULTS: dict[str, Any] = {
    "client_id": "kgroup-spark",
    "assignors": ("cooperative-sticky",),
}


class SourceOptionError(ConfigError):
    """A bad option of the ``kgroup`` Spark source; ``field`` is the option's name."""


def _kafka_names() -> dict[str, str]:
    names = {
        a.name.replace("_", "."): a.name
        for a in attrs.fields(ConsumerConfig)
        if a.name not in _NOT_STRINGS and a.name != "assignors"
    }
    names["partition.assignment.strategy"] = "assignors"
    return names


@attrs.frozen
class SourceOptions:
    """The parsed options (picklable: sent to the executors with every input partition).

    Attributes:
        properties: the Kafka consumer properties, Kafka names (``(("bootstrap.servers", "h:9092"), ...)``).
        topics: ``subscribe``'s topics, or None.
        assign: ``assign``'s partitions, or None.
        max_offsets_per_trigger: the cap per micro-batch, or None.
        starting_offsets: "earliest" / "latest", or None for the mode's default.
        fetch_timeout_ms: longest an executor waits for the records of one range (ms).

    """

    properties: tuple[tuple[str, str], ...]
    topics: tuple[str, ...] | None
    assign: tuple[TopicPartition, ...] | None
    max_offsets_per_trigger: int | None
    starting_offsets: str | None
    fetch_timeout_ms: int

    @property
    def group_id(self) -> str:
        """The ``group.id`` option."""
        return dict(self.properties)["group.id"]

    def consumer_config(self, **overrides: Any) -> ConsumerConfig:
        """A ``ConsumerConfig`` from the properties; the driver's defaults, then ``overrides``.

        Raises:
            SourceOptionError: a property is invalid (naming it).

        """
        names = _kafka_names()
        kwargs: dict[str, Any] = dict(_DRIVER_DEFAULTS)
        fields = {a.name: a for a in attrs.fields(ConsumerConfig)}
        for key, value in self.properties:
            name = names[key]
            converted: Any = value
            if name == "assignors":
                converted = tuple(v.strip() for v in value.split(",") if v.strip())
            elif str(fields[name].type) in ("int", "int | None"):
                try:
                    converted = int(value)
                except ValueError:
                    raise SourceOptionError(key, f"must be an integer, got {value!r}") from None
            elif str(fields[name].type) == "bool":
                lowered = value.strip().lower()
                if lowered not in ("true", "false"):
                    raise SourceOptionError(key, f"must be true or false, got {value!r}")
                converted = lowered == "true"
            kwargs[name] = converted
        kwargs.update(overrides)
        try:
            return ConsumerConfig(**kwargs)
        except ConfigError as exc:
            option = next((k for k, n in names.items() if n == exc.field), exc.field)
            raise SourceOptionError(option, str(exc).split(": ", 1)[-1]) from exc


def _parse_assign(value: str) -> tuple[TopicPartition, ...]:
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or not parsed:
        raise SourceOptionError("assign", f'must be a JSON object like {{"topic": [0, 1]}}, got {value!r}')
    out: list[TopicPartition] = []
    for topic, parts in parsed.items():
        if not isinstance(parts, list) or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 0
                                                  for p in parts):
            raise SourceOptionError("assign", f"topic {topic!r}: partitions must be a list of ints >= 0")
        out.extend(TopicPartition(topic, p) for p in parts)
    if not out:
        raise SourceOptionError("assign", "names no partition")
    return tuple(sorted(set(out)))


def _positive_int(option: str, value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise SourceOptionError(option, f"must be a positive integer, got {value!r}")
    return number


def parse_options(options: Mapping[str, str]) -> SourceOptions:
    """Validate the options of ``spark.read[Stream].format("kgroup")``.

    Args:
        options: option name -> string value (any case; Spark lower-cases them).

    Returns:
        The parsed ``SourceOptions``.

    Raises:
        SourceOptionError: naming the option: ``bootstrap.servers`` or ``group.id`` missing,
            an unknown option, ``subscribe`` and ``assign`` both or neither given, a bad value.

    """
    names = _kafka_names()
    properties: dict[str, str] = {}
    source: dict[str, str] = {}
    for raw_key, raw_value in options.items():
        key = str(raw_key).lower()
        value = str(raw_value)
        if key in _SOURCE_OPTIONS:
            source[_SOURCE_OPTIONS[key]] = value
            continue
        kafka_key = key[len("kafka."):] if key.startswith("kafka.") else key
        if kafka_key in _FORBIDDEN:
            raise SourceOptionError(raw_key, f"cannot be set: {_FORBIDDEN[kafka_key]}")
        if kafka_key not in names:
            raise SourceOptionError(
                raw_key,
                "unknown option of the kgroup source; known: subscribe, assign, maxOffsetsPerTrigger, "
                "startingOffsets, endingOffsets, fetchTimeoutMs and Kafka consumer properties "
                "(bootstrap.servers, group.id, group.instance.id, session.timeout.ms, ...)",
            )
        if kafka_key in properties:
            raise SourceOptionError(raw_key, f"given twice (as {kafka_key!r} and 'kafka.{kafka_key}')")
        properties[kafka_key] = value
    for required in ("bootstrap.servers", "group.id"):
        if not properties.get(required, "").strip():
            raise SourceOptionError(required, "is required: .option(" + repr(required) + ", ...)")
    if "subscribe" in source and "assign" in source:
        raise SourceOptionError("assign", "give either subscribe or assign, not both")
    topics: tuple[str, ...] | None = None
    assign: tuple[TopicPartition, ...] | None = None
    if "subscribe" in source:
        topics = tuple(sorted({t.strip() for t in source["subscribe"].split(",") if t.strip()}))
        if not topics:
            raise SourceOptionError("subscribe", f"names no topic: {source['subscribe']!r}")
    elif "assign" in source:
        assign = _parse_assign(source["assign"])
    else:
        raise SourceOptionError("subscribe", "one of subscribe (topics) or assign (partitions) is required")
    max_offsets = None
    if "maxOffsetsPerTrigger" in source:
        max_offsets = _positive_int("maxOffsetsPerTrigger", source["maxOffsetsPerTrigger"])
    starting = source.get("startingOffsets")
    if starting is not None:
        starting = starting.strip().lower()
        if starting not in ("earliest", "latest"):
            raise SourceOptionError(
                "startingOffsets", f"must be 'earliest' or 'latest', got {source['startingOffsets']!r}"
            )
    ending = source.get("endingOffsets", "latest").strip().lower()
    if ending != "latest":
        raise SourceOptionError("endingOffsets", f"only 'latest' is supported, got {source['endingOffsets']!r}")
    fetch_timeout = _DEFAULT_FETCH_TIMEOUT_MS
    if "fetchTimeoutMs" in source:
        fetch_timeout = _positive_int("fetchTimeoutMs", source["fetchTimeoutMs"])
    parsed = SourceOptions(
        properties=tuple(sorted(properties.items())),
        topics=topics,
        assign=assign,
        max_offsets_per_trigger=max_offsets,
        starting_offsets=starting,
        fetch_timeout_ms=fetch_timeout,
    )
    parsed.consumer_config()  # every Kafka property is checked now, at load()
    return parsed
