"""Consumer configuration: one attrs class, Kafka's names in snake_case, Java's defaults.

Rules:

1. Every duration is an int in milliseconds with a ``_ms`` suffix, as in Kafka.
2. Defaults are the Java ``KafkaConsumer``'s (Kafka 3.x/4.x ``ConsumerConfig``).
3. A bad value or combination raises ``kgroup.ConfigError`` naming the field, at construction.
   Unknown keys are rejected (contrast kafka-python, which silently drops them).
4. ``rebalance_timeout_ms`` defaults to ``max_poll_interval_ms`` (Java sends
   ``max.poll.interval.ms`` as the JoinGroup rebalance timeout).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from typing import Any

import attrs

from kgroup.assignors import ASSIGNORS, Assignor
from kgroup.errors import ConfigError
from kgroup.types import RebalanceProtocol

__all__ = ["ConsumerConfig", "select_protocol"]

_INSTANCE_ID = re.compile(r"^[A-Za-z0-9._-]+$")
_OFFSET_RESET = ("earliest", "latest", "none")
_SECURITY = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def _positive(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(attribute.name, f"must be a positive int (ms or count), got {value!r}")


def _non_negative(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(attribute.name, f"must be an int >= 0, got {value!r}")


def _optional_positive(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None:
        _positive(inst, attribute, value)


def _bool(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise ConfigError(attribute.name, f"must be True or False, got {value!r}")


def _non_empty_str(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(attribute.name, f"must be a non-empty string, got {value!r}")


def _one_of(choices: tuple[str, ...]) -> Any:
    def check(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value not in choices:
            raise ConfigError(attribute.name, f"must be one of {choices}, got {value!r}")

    return check


def _bootstrap(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        value = ",".join(str(v) for v in value)
    return value  # type: ignore[no-any-return]


def _instance_id(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, str) or not value:
        raise ConfigError(attribute.name, f"must be a non-empty string or None, got {value!r}")
    if len(value) > 249 or value in (".", "..") or not _INSTANCE_ID.match(value):
        raise ConfigError(
            attribute.name,
            f"{value!r} is not a legal instance id (ASCII letters, digits, '.', '_', '-'; "
            "at most 249 characters; not '.' or '..')",
        )


def _client_rack(value: Any) -> str | None:
    """Java's ``client.rack`` default is ""; kgroup keeps None for "no rack" and maps "" to it."""
    return None if value in (None, "") else value


def _rack(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (not isinstance(value, str) or len(value.encode()) > 32767):
        raise ConfigError(attribute.name, f"must be a rack id string or None, got {value!r}")


def _resolve_assignors(value: Any) -> tuple[Assignor, ...]:
    if isinstance(value, (str, Assignor)):
        value = (value,)
    try:
        items = tuple(value)
    except TypeError:
        raise ConfigError("assignors", f"must be a sequence of names or Assignor objects, got {value!r}") from None
    out: list[Assignor] = []
    for item in items:
        if isinstance(item, Assignor):
            out.append(item)
        elif isinstance(item, str):
            factory = ASSIGNORS.get(item)
            if factory is None:
                raise ConfigError(
                    "assignors", f"unknown assignor name {item!r}; known: {sorted(ASSIGNORS)}"
                )
            out.append(factory())
        else:
            raise ConfigError("assignors", f"{item!r} is neither an assignor name nor an Assignor")
    return tuple(out)


def select_protocol(assignors: tuple[Assignor, ...]) -> RebalanceProtocol:
    """The rebalance protocol a member runs: the highest one every assignor supports.

    This is the Java client's rule (``ConsumerCoordinator``, KIP-429): with
    ``("cooperative-sticky", "range")`` the member runs EAGER.

    Raises:
        ConfigError: no protocol is common to all assignors.

    """
    common = set(RebalanceProtocol)
    for assignor in assignors:
        common &= set(assignor.supported_protocols)
    if not common:
        raise ConfigError("assignors", "no rebalance protocol is supported by every assignor")
    return max(common)


@attrs.frozen(kw_only=True)
class ConsumerConfig:
    """Configuration of a ``kgroup.Consumer`` (names and defaults of Java's ConsumerConfig).

    Group membership (the Kafka documentation's consumer configs, KIP-62, KIP-345):
        group_id: the consumer group (required).
        group_instance_id: a static member's stable id (KIP-345), or None for a dynamic member.
        session_timeout_ms: the coordinator evicts a member silent this long (45000).
        heartbeat_interval_ms: time between heartbeats; must be < session_timeout_ms (3000).
        max_poll_interval_ms: longest allowed gap between ``poll()`` calls (300000).
        rebalance_timeout_ms: JoinGroup rebalance timeout; defaults to max_poll_interval_ms.
        assignors: assignor names ("range", "roundrobin", "sticky", "cooperative-sticky") or
            ``Assignor`` objects, in order of preference; Java's default since Kafka 3.0
            (("range", "cooperative-sticky"), which runs EAGER until every member drops range).
        client_rack: the rack (availability zone) this consumer runs in, or None (Java
            ``client.rack``, default ""). Sent in the Subscription (v3, KIP-881) so that the
            range and sticky assignors prefer partitions with a replica in the same rack.

    Offsets:
        enable_auto_commit (True), auto_commit_interval_ms (5000),
        auto_offset_reset: "earliest", "latest" or "none" ("latest").

    Fetching (passed to kafka-python's Fetcher):
        max_poll_records (500), fetch_min_bytes (1), fetch_max_wait_ms (500),
        fetch_max_bytes (52428800), max_partition_fetch_bytes (1048576), check_crcs (True),
        isolation_level ("read_uncommitted").

    Network: bootstrap_servers, client_id ("kgroup"), request_timeout_ms (30000),
        default_api_timeout_ms (60000), retry_backoff_ms (100), retry_backoff_max_ms (1000),
        reconnect_backoff_ms (50), reconnect_backoff_max_ms (1000), metadata_max_age_ms (300000),
        connections_max_idle_ms (540000), and kafka-python's security settings
        (security_protocol, ssl_*, sasl_*), passed through unchanged.

    Raises:
        ConfigError: a bad value or combination, naming the field.

    """

    bootstrap_servers: str = attrs.field(converter=_bootstrap, validator=_non_empty_str)
    group_id: str = attrs.field(validator=_non_empty_str)
    client_id: str = attrs.field(default="kgroup", validator=_non_empty_str)
    group_instance_id: str | None = attrs.field(default=None, validator=_instance_id)
    session_timeout_ms: int = attrs.field(default=45000, validator=_positive)
    heartbeat_interval_ms: int = attrs.field(default=3000, validator=_positive)
    max_poll_interval_ms: int = attrs.field(default=300000, validator=_positive)
    rebalance_timeout_ms: int | None = attrs.field(default=None, validator=_optional_positive)
    assignors: tuple[Assignor, ...] = attrs.field(
        default=("range", "cooperative-sticky"), converter=_resolve_assignors
    )
    client_rack: str | None = attrs.field(default=None, converter=_client_rack, validator=_rack)
    enable_auto_commit: bool = attrs.field(default=True, validator=_bool)
    auto_commit_interval_ms: int = attrs.field(default=5000, validator=_positive)
    auto_offset_reset: str = attrs.field(default="latest", validator=_one_of(_OFFSET_RESET))
    max_poll_records: int = attrs.field(default=500, validator=_positive)
    fetch_min_bytes: int = attrs.field(default=1, validator=_positive)
    fetch_max_wait_ms: int = attrs.field(default=500, validator=_non_negative)
    fetch_max_bytes: int = attrs.field(default=52428800, validator=_positive)
    max_partition_fetch_bytes: int = attrs.field(default=1048576, validator=_positive)
    check_crcs: bool = attrs.field(default=True, validator=_bool)
    isolation_level: str = attrs.field(
        default="read_uncommitted", validator=_one_of(("read_uncommitted", "read_committed"))
    )
    request_timeout_ms: int = attrs.field(default=30000, validator=_positive)
    default_api_timeout_ms: int = attrs.field(default=60000, validator=_positive)
    retry_backoff_ms: int = attrs.field(default=100, validator=_positive)
    retry_backoff_max_ms: int = attrs.field(default=1000, validator=_positive)
    reconnect_backoff_ms: int = attrs.field(default=50, validator=_positive)
    reconnect_backoff_max_ms: int = attrs.field(default=1000, validator=_positive)
    metadata_max_age_ms: int = attrs.field(default=300000, validator=_positive)
    connections_max_idle_ms: int = attrs.field(default=540000, validator=_positive)
    security_protocol: str = attrs.field(default="PLAINTEXT", validator=_one_of(_SECURITY))
    ssl_context: Any = None
    ssl_check_hostname: bool = True
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_password: str | None = None
    ssl_crlfile: str | None = None
    sasl_mechanism: str | None = None
    sasl_plain_username: str | None = None
    sasl_plain_password: str | None = None
    sasl_kerberos_name: str | None = None
    sasl_kerberos_service_name: str = "kafka"
    sasl_kerberos_domain_name: str | None = None
    sasl_oauth_token_provider: Any = None

    def __attrs_post_init__(self) -> None:
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ConfigError(
                "heartbeat_interval_ms",
                f"must be lower than session_timeout_ms ({self.heartbeat_interval_ms} >= "
                f"{self.session_timeout_ms})",
            )
        if self.heartbeat_interval_ms * 3 > self.session_timeout_ms:
            warnings.warn(
                f"heartbeat_interval_ms ({self.heartbeat_interval_ms}) is above a third of "
                f"session_timeout_ms ({self.session_timeout_ms}); the Kafka documentation "
                "(heartbeat.interval.ms) recommends at most a third",
                stacklevel=3,
            )
        if not self.assignors:
            raise ConfigError("assignors", "at least one assignor is required")
        names = [a.name for a in self.assignors]
        if len(set(names)) != len(names) or not all(names):
            raise ConfigError("assignors", f"assignor names must be unique and non-empty: {names}")
        select_protocol(self.assignors)
        if self.fetch_max_wait_ms >= self.request_timeout_ms:
            raise ConfigError(
                "fetch_max_wait_ms", "must be lower than request_timeout_ms"
            )
        if self.retry_backoff_max_ms < self.retry_backoff_ms:
            raise ConfigError("retry_backoff_max_ms", "must be >= retry_backoff_ms")

    @property
    def effective_rebalance_timeout_ms(self) -> int:
        """The JoinGroup rebalance timeout in ms: ``rebalance_timeout_ms`` or max_poll_interval_ms."""
        return self.rebalance_timeout_ms or self.max_poll_interval_ms

    @property
    def protocol(self) -> RebalanceProtocol:
        """The rebalance protocol this member runs (``select_protocol(assignors)``)."""
        return select_protocol(self.assignors)

    @classmethod
    def from_kwargs(cls, **config: Any) -> ConsumerConfig:
        """Build a config from keyword arguments, rejecting unknown keys with ``ConfigError``."""
        known = {a.name for a in attrs.fields(cls)}
        for key in config:
            if key not in known:
                raise ConfigError(key, "unknown configuration key")
        missing = [k for k in ("bootstrap_servers", "group_id") if k not in config]
        if missing:
            raise ConfigError(missing[0], "is required")
        return cls(**config)

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> ConsumerConfig:
        """Build a config from Kafka property names (``{"session.timeout.ms": "45000"}``).

        Numeric strings are converted for ``*_ms`` and count fields; unknown keys raise
        ``ConfigError``.
        """
        fields = {a.name: a for a in attrs.fields(cls)}
        kwargs: dict[str, Any] = {}
        for key, value in properties.items():
            name = key.replace(".", "_")
            if name == "partition_assignment_strategy":
                name = "assignors"
                value = tuple(v.strip() for v in str(value).split(",")) if isinstance(value, str) else value
            if name not in fields:
                raise ConfigError(key, "unknown configuration key")
            if isinstance(value, str) and fields[name].type in ("int", "int | None"):
                try:
                    value = int(value)
                except ValueError:
                    raise ConfigError(name, f"must be an int, got {value!r}") from None
            if isinstance(value, str) and fields[name].type == "bool":
                value = {"true": True, "false": False}.get(value.lower(), value)
            kwargs[name] = value
        return cls.from_kwargs(**kwargs)
