"""Options of the ``kgroup`` Spark source: parsing and validation, no Spark import.

Spark hands a Python data source its options with lower-cased keys; errors name the option as
documented (``maxOffsetsPerTrigger``, ``group.id``...). Kafka consumer properties are accepted
by their Kafka names, bare (``session.timeout.ms``) or with Spark's Kafka source prefix
(``kafka.session.timeout.ms``), and validated by :class:`kgroup.ConsumerConfig`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

from kgroup.config import ConsumerConfig
from kgroup.errors import ConfigError, KGroupError
from kgroup.types import TopicPartition

__all__ = [
    "EARLIEST",
    "LATEST",
    "DataLossError",
    "OffsetSpec",
    "PartitionOffsets",
    "SourceOptionError",
    "SourceOptions",
    "parse_options",
]

T = TypeVar("T")
D = TypeVar("D")

#: source options (lower case as Spark passes them) -> the documented spelling
_SOURCE_OPTIONS = {
    "subscribe": "subscribe",
    "assign": "assign",
    "maxoffsetspertrigger": "maxOffsetsPerTrigger",
    "minoffsetspertrigger": "minOffsetsPerTrigger",
    "maxtriggerdelay": "maxTriggerDelay",
    "minpartitions": "minPartitions",
    "maxpartitions": "maxPartitions",
    "startingoffsets": "startingOffsets",
    "endingoffsets": "endingOffsets",
    "failondataloss": "failOnDataLoss",
    "fetchtimeoutms": "fetchTimeoutMs",
}
#: Kafka properties the source owns: the reason they cannot be set
_FORBIDDEN = {
    "enable.auto.commit": "the source commits each micro-batch's end offsets itself",
    "auto.offset.reset": "use the startingOffsets option ('earliest', 'latest' or per-partition JSON)",
}
#: Spark's JSON offset sentinels (``KafkaOffsetRangeLimit.EARLIEST`` / ``LATEST``)
EARLIEST = -2
LATEST = -1
#: Spark's default ``maxTriggerDelay`` ("15m")
_DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000
#: Spark's time suffixes (``JavaUtils.timeStringAsMs``; no suffix: milliseconds)
_TIME_UNITS_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_TIME = re.compile(r"^(-?[0-9]+)\s*([a-z]+)?$")
#: ConsumerConfig fields that cannot come from a string option
_NOT_STRINGS = {"ssl_context", "sasl_oauth_token_provider"}
_DEFAULT_FETCH_TIMEOUT_MS = 120_000
_DRIVER_DEFAULTS: dict[str, Any] = {
    "client_id": "kgroup-spark",
    "assignors": ("cooperative-sticky",),
}


class SourceOptionError(ConfigError):
    """A bad option of the ``kgroup`` Spark source; ``field`` is the option's name."""


class DataLossError(KGroupError):
    """Records the source was to read are gone, and ``failOnDataLoss`` is true (the default).

    Retention deleted them before they were read, their topic was deleted, or the log end
    offset went below the position (the topic was recreated). Spark's Kafka source fails the
    query in the same cases; with ``failOnDataLoss`` false both log a warning and go on.
    """


def _kafka_names() -> dict[str, str]:
    names = {
        a.name.replace("_", "."): a.name
        for a in attrs.fields(ConsumerConfig)
        if a.name not in _NOT_STRINGS and a.name != "assignors"
    }
    names["partition.assignment.strategy"] = "assignors"
    return names


@attrs.frozen
class PartitionOffsets:
    """Per-partition offsets of a JSON ``startingOffsets`` / ``endingOffsets`` (Spark's format).

    ``{"t": {"0": 23, "1": -2}}`` parses to ``((TopicPartition("t", 0), 23), (TopicPartition("t", 1), -2))``:
    an offset, or :data:`EARLIEST` (-2) / :data:`LATEST` (-1), sorted by partition (picklable).
    """

    offsets: tuple[tuple[TopicPartition, int], ...]

    def as_dict(self) -> dict[TopicPartition, int]:
        """``{TopicPartition: offset or sentinel}``."""
        return dict(self.offsets)

    @property
    def partitions(self) -> frozenset[TopicPartition]:
        """The partitions named."""
        return frozenset(tp for tp, _ in self.offsets)


#: ``"earliest"``, ``"latest"`` or per-partition offsets
OffsetSpec = str | PartitionOffsets


@attrs.frozen
class SourceOptions:
    """The parsed options (picklable: sent to the executors with every input partition).

    Attributes:
        properties: the Kafka consumer properties, Kafka names (``(("bootstrap.servers", "h:9092"), ...)``).
        topics: ``subscribe``'s topics, or None.
        assign: ``assign``'s partitions, or None.
        max_offsets_per_trigger: the cap per micro-batch, or None.
        starting_offsets: "earliest", "latest", per-partition offsets, or None for the mode's default.
        fetch_timeout_ms: longest an executor waits for the records of one range (ms).
        ending_offsets: a batch read's end: "latest" or per-partition offsets (None: not given, latest).
        min_offsets_per_trigger: the fewest offsets a micro-batch waits for, or None.
        max_trigger_delay_ms: the longest a micro-batch waits for ``min_offsets_per_trigger`` (ms).
        min_partitions: the fewest Spark input partitions a batch is split into, or None.
        max_partitions: the most Spark input partitions (tasks) a batch's ranges are packed into,
            or None (one per range, as Spark's own Kafka source).
        fail_on_data_loss: fail (True) or log and go on (False) when records to read are gone.

    """

    properties: tuple[tuple[str, str], ...]
    topics: tuple[str, ...] | None
    assign: tuple[TopicPartition, ...] | None
    max_offsets_per_trigger: int | None
    starting_offsets: OffsetSpec | None
    fetch_timeout_ms: int
    ending_offsets: OffsetSpec | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = _DEFAULT_MAX_TRIGGER_DELAY_MS
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    max_partitions: int | None = None

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
        if str(kwargs.get("group_protocol", "classic")).strip().lower() == "consumer" and not any(
            names[key] == "assignors" for key, _ in self.properties
        ):
            # the driver's default assignor is the classic protocol's; under the consumer protocol
            # the broker assigns (KIP-848) and Java rejects a client-side strategy
            kwargs.pop("assignors", None)
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


def _option(source: Mapping[str, str], option: str, parse: Callable[[str, str], T], default: D) -> T | D:
    """``parse(option, value)`` of the option when it is given, else ``default``."""
    return parse(option, source[option]) if option in source else default


def _positive_int(option: str, value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise SourceOptionError(option, f"must be a positive integer, got {value!r}")
    return number


def _parse_bool(option: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise SourceOptionError(option, f"must be true or false, got {value!r}")
    return lowered == "true"


def _parse_duration_ms(option: str, value: str) -> int:
    """Spark's time strings (``JavaUtils.timeStringAsMs``): "15m", "30s", "500ms", "1h"; bare: ms."""
    match = _TIME.match(value.strip().lower())
    unit = match.group(2) if match else None
    if match is None or (unit is not None and unit not in _TIME_UNITS_MS) or int(match.group(1)) < 0:
        raise SourceOptionError(
            option, f"must be a duration like '15m', '30s' or '500ms' (us, ms, s, m, min, h, d), got {value!r}"
        )
    return int(int(match.group(1)) * _TIME_UNITS_MS[unit or "ms"])


def _parse_offsets(option: str, value: str) -> OffsetSpec:
    """``earliest``, ``latest``, or Spark's JSON ``{"topic": {"partition": offset}}`` (-2 earliest, -1 latest)."""
    word = value.strip().lower()
    if word in ("earliest", "latest"):
        return word
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise SourceOptionError(
            option,
            f"must be 'earliest', 'latest' or JSON like {{\"topic\": {{\"0\": 23, \"1\": -2}}}} "
            f"(-2: earliest, -1: latest), got {value!r}",
        )
    out: list[tuple[TopicPartition, int]] = []
    for topic, parts in parsed.items():
        if not isinstance(parts, dict) or not parts:
            raise SourceOptionError(option, f"topic {topic!r}: must map partitions to offsets, got {parts!r}")
        for partition, offset in parts.items():
            try:
                number = int(partition)
            except ValueError:
                number = -1
            if number < 0:
                raise SourceOptionError(option, f"topic {topic!r}: bad partition {partition!r}")
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                raise SourceOptionError(
                    option, f"{topic}-{partition}: the offset must be an integer >= 0, -2 (earliest) or "
                    f"-1 (latest), got {offset!r}"
                )
            out.append((TopicPartition(topic, number), offset))
    if not out:
        raise SourceOptionError(option, "names no partition")
    return PartitionOffsets(tuple(sorted(out)))


def _check_offset_ranges(starting: OffsetSpec | None, ending: OffsetSpec | None) -> None:
    """Spark's ``checkOffsetLimitValidity``: two JSON specs name the same partitions, start <= end."""
    if not isinstance(starting, PartitionOffsets) or not isinstance(ending, PartitionOffsets):
        return
    if starting.partitions != ending.partitions:
        raise SourceOptionError(
            "endingOffsets",
            f"names partitions {sorted(map(str, ending.partitions))} but startingOffsets names "
            f"{sorted(map(str, starting.partitions))}: they must name the same ones",
        )
    ends = ending.as_dict()
    for tp, begin in starting.offsets:
        if begin >= 0 and ends[tp] >= 0 and begin > ends[tp]:
            raise SourceOptionError(
                "endingOffsets", f"{tp}: the ending offset {ends[tp]} is before the starting offset {begin}"
            )


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
                "unknown option of the kgroup source; known: subscribe, assign, startingOffsets, endingOffsets, "
                "maxOffsetsPerTrigger, minOffsetsPerTrigger, maxTriggerDelay, minPartitions, maxPartitions, "
                "failOnDataLoss, "
                "fetchTimeoutMs and Kafka consumer properties (bootstrap.servers, group.id, group.instance.id, "
                "session.timeout.ms, ...)",
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
    max_offsets = _option(source, "maxOffsetsPerTrigger", _positive_int, None)
    min_offsets = _option(source, "minOffsetsPerTrigger", _positive_int, None)
    if max_offsets is not None and min_offsets is not None and min_offsets > max_offsets:
        raise SourceOptionError(
            "minOffsetsPerTrigger", f"{min_offsets} is higher than maxOffsetsPerTrigger ({max_offsets})"
        )
    max_delay = _option(source, "maxTriggerDelay", _parse_duration_ms, _DEFAULT_MAX_TRIGGER_DELAY_MS)
    min_partitions = _option(source, "minPartitions", _positive_int, None)
    max_partitions = _option(source, "maxPartitions", _positive_int, None)
    if min_partitions is not None and max_partitions is not None and min_partitions > max_partitions:
        raise SourceOptionError("minPartitions", f"{min_partitions} is higher than maxPartitions ({max_partitions})")
    starting = _option(source, "startingOffsets", _parse_offsets, None)
    ending = _option(source, "endingOffsets", _parse_offsets, None)
    if ending == "earliest":
        raise SourceOptionError("endingOffsets", "cannot be 'earliest' (the read would be empty): 'latest' or JSON")
    if isinstance(ending, PartitionOffsets) and any(o == EARLIEST for _, o in ending.offsets):
        raise SourceOptionError("endingOffsets", "-2 (earliest) is not allowed as an ending offset")
    _check_offset_ranges(starting, ending)
    wanted_topics = set(topics) if topics is not None else {tp.topic for tp in assign or ()}
    for option, spec in (("startingOffsets", starting), ("endingOffsets", ending)):
        if isinstance(spec, PartitionOffsets):
            foreign = sorted({tp.topic for tp in spec.partitions} - wanted_topics)
            if foreign:
                raise SourceOptionError(option, f"names topics {foreign} that are not read (subscribe/assign)")
    fail_on_data_loss = _option(source, "failOnDataLoss", _parse_bool, True)
    fetch_timeout = _option(source, "fetchTimeoutMs", _positive_int, _DEFAULT_FETCH_TIMEOUT_MS)
    parsed = SourceOptions(
        properties=tuple(sorted(properties.items())),
        topics=topics,
        assign=assign,
        max_offsets_per_trigger=max_offsets,
        starting_offsets=starting,
        fetch_timeout_ms=fetch_timeout,
        ending_offsets=ending,
        min_offsets_per_trigger=min_offsets,
        max_trigger_delay_ms=max_delay,
        min_partitions=min_partitions,
        fail_on_data_loss=fail_on_data_loss,
        max_partitions=max_partitions,
    )
    parsed.consumer_config()  # every Kafka property is checked now, at load()
    return parsed
