"""Consumer configuration: one attrs class, Kafka's names in snake_case, Java's defaults.

Rules:

1. Every duration is an int in milliseconds with a ``_ms`` suffix, as in Kafka.
2. Defaults are the Java ``KafkaConsumer``'s (Kafka 3.x/4.x ``ConsumerConfig``).
3. A bad value or combination raises ``kgroup.ConfigError`` naming the field, at construction.
   Unknown keys are rejected, with the closest known key as a suggestion (kafka-python 3.0
   rejects them too; Java only logs them). ``bootstrap_servers`` entries must be ``host:port``
   (Java's ``ClientUtils.parseAndValidateAddresses``); the ``Consumer`` resolves them when it
   is constructed, as Java's does.
4. ``rebalance_timeout_ms`` defaults to ``max_poll_interval_ms`` (Java sends
   ``max.poll.interval.ms`` as the JoinGroup rebalance timeout).
5. Secrets (``ssl_password``, ``sasl_plain_password``, ``sasl_oauth_token_provider``) print as
   ``[hidden]`` in ``repr()`` and in error messages, as Java prints password-type configs.

``ConsumerConfig.from_properties`` reads Java's dotted names, from a mapping or from a Java
``consumer.properties`` file: Java's assignor class names, its SSL and SASL keys, and its
client-side-only keys (ignored, with a warning when they ask for something kgroup does not do).
``docs/configuration.md`` has the table.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import sys
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict

import attrs

from kgroup._java_properties import parse_properties, suggest, translate
from kgroup.assignors import ASSIGNORS, Assignor
from kgroup.errors import ConfigError
from kgroup.types import RebalanceProtocol

if TYPE_CHECKING:
    import ssl  # imported where used (~5 ms, not needed by a config without ssl_context)

    if sys.version_info >= (3, 11):
        from typing import Required, Unpack
    else:
        from typing_extensions import Required, Unpack

__all__ = [
    "ConsumerArgs",
    "ConsumerConfig",
    "ConsumerConfigArgs",
    "GroupMembershipOperation",
    "ShareConsumerConfig",
    "check_group_protocol_settings",
    "resolve_bootstrap_servers",
    "select_protocol",
    "suggest",
]

log = logging.getLogger(__name__)

_INSTANCE_ID = re.compile(r"^[A-Za-z0-9._-]+$")
_OFFSET_RESET = ("earliest", "latest", "none")
_GROUP_PROTOCOLS = ("classic", "consumer")
#: settings the broker owns under ``group_protocol="consumer"`` -> Java's name, in the order of
#: Java's ``ConsumerConfig.CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS`` (set explicitly: ``ConfigError``)
_CONSUMER_PROTOCOL_UNSUPPORTED = {
    "assignors": "partition.assignment.strategy",
    "heartbeat_interval_ms": "heartbeat.interval.ms",
    "session_timeout_ms": "session.timeout.ms",
}
_SECURITY = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: the SASL mechanisms that take sasl_plain_username and sasl_plain_password
_USER_PASSWORD_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: Java's ``Utils.HOST_PORT_PATTERN``: an optional ``scheme://``, a host (IPv6 in brackets), a port
_HOST_PORT = re.compile(r"^(?:[0-9a-zA-Z\-%._]*://)?\[?([0-9a-zA-Z\-%._:]*)]?:([0-9]+)$")
_SASL_FIELDS = ("sasl_mechanism", "sasl_plain_username", "sasl_plain_password", "sasl_oauth_token_provider")
_SSL_FIELDS = ("ssl_context", "ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_password", "ssl_crlfile")
#: how secrets print (Java prints password-type configs as ``[hidden]``)
HIDDEN = "[hidden]"

#: what ``Consumer.close(group_membership=...)`` accepts (KIP-1092's GroupMembershipOperation)
GroupMembershipOperation = Literal["default", "remain", "leave"]


def _hidden_repr(value: Any) -> str:
    return "None" if value is None else repr(HIDDEN)


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
    """A list of ``host:port`` strings, or a comma-separated string, as one string (spaces dropped)."""
    if isinstance(value, (list, tuple)):
        value = ",".join(str(v) for v in value)
    if isinstance(value, str):
        value = ",".join(entry.strip() for entry in value.split(",") if entry.strip())
    return value  # type: ignore[no-any-return]


def _bootstrap_entries(value: str) -> list[tuple[str, str, int]]:
    """``(entry, host, port)`` for each entry, as Java's ``ClientUtils.parseAndValidateAddresses``.

    Raises:
        ConfigError: an entry that is not ``host:port`` (an optional ``scheme://`` prefix is
            allowed, as in Java), or a port outside 0-65535.

    """
    out = []
    for entry in value.split(","):
        entry = entry.strip()
        if not entry:
            continue
        match = _HOST_PORT.match(entry)
        if match is None or not match.group(1):
            raise ConfigError(
                "bootstrap_servers",
                f"invalid url {entry!r}: expected host:port, e.g. 'broker1:9092' "
                "(Java: Invalid url in bootstrap.servers)",
            )
        port = int(match.group(2))
        if port > 65535:
            raise ConfigError(
                "bootstrap_servers", f"invalid port in {entry!r} (Java: Invalid port in bootstrap.servers)"
            )
        out.append((entry, match.group(1), port))
    return out


def _bootstrap_servers(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    _non_empty_str(inst, attribute, value)
    _bootstrap_entries(value)


def resolve_bootstrap_servers(bootstrap_servers: str) -> list[tuple[str, int]]:
    """Resolve each ``host:port`` entry, as Java's consumer does at construction.

    Java's ``ClientUtils.parseAndValidateAddresses`` (with ``bootstrap.resolve.timeout.ms=0``,
    its default): an entry whose host does not resolve is logged with a warning and skipped;
    if none resolves, construction fails.

    Returns:
        ``(host, port)`` of the entries whose host resolved.

    Raises:
        ConfigError: an entry is malformed, or no entry resolves ("No resolvable bootstrap urls
            given in bootstrap.servers", Java's message).

    """
    resolved: list[tuple[str, int]] = []
    failed: list[str] = []
    for entry, host, port in _bootstrap_entries(bootstrap_servers):
        try:
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            log.warning(
                "Couldn't resolve server %s from bootstrap_servers as DNS resolution failed for %s: %s",
                entry,
                host,
                exc,
            )
            failed.append(entry)
            continue
        resolved.append((host, port))
    if not resolved:
        raise ConfigError(
            "bootstrap_servers",
            f"No resolvable bootstrap urls given in bootstrap.servers (unresolvable: {', '.join(failed)})",
        )
    return resolved


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


def _group_protocol(value: Any) -> Any:
    """Java's ``group.protocol`` is case-insensitive (``CLASSIC``, ``consumer``, ...)."""
    return value.strip().lower() if isinstance(value, str) else value


def _blank_to_none(value: Any) -> Any:
    """Java treats a blank string setting as not set (``Utils.isBlank``)."""
    return None if isinstance(value, str) and not value.strip() else value


def _is_set(value: Any) -> bool:
    """Whether a keyword counts as explicitly set (Java: ``originals()`` has it, not null, not blank)."""
    return value is not None and not (isinstance(value, str) and not value.strip())


def check_group_protocol_settings(config: Mapping[str, Any]) -> None:
    """Reject the settings a group protocol does not use, as Java's ``ConsumerConfig`` does.

    ``config`` is the keywords as given (explicitly set ones only: a default is never an
    error). Java 4.x's ``ConsumerConfig.checkUnsupportedConfigsPostProcess``:

    * ``group_protocol="consumer"``: ``assignors`` (``partition.assignment.strategy``),
      ``heartbeat_interval_ms`` (``heartbeat.interval.ms``) and ``session_timeout_ms``
      (``session.timeout.ms``) set explicitly, even to their default, are rejected: the broker
      owns them (KIP-848: ``group.consumer.assignors``, ``group.consumer.heartbeat.interval.ms``,
      ``group.consumer.session.timeout.ms``).
    * ``group_protocol="classic"``: ``group_remote_assignor`` set is rejected.

    A value that is ``None`` or a blank string counts as not set, as in Java. docs/kip848.md,
    "Configuration", has the table.

    Raises:
        ConfigError: naming the first offending setting; the message lists all of them with
            Java's names.

    """
    protocol = _group_protocol(config.get("group_protocol", "classic"))
    if protocol not in _GROUP_PROTOCOLS:
        raise ConfigError("group_protocol", f"must be one of {_GROUP_PROTOCOLS} (any case), got {protocol!r}")
    if protocol == "consumer":
        invalid = [name for name in _CONSUMER_PROTOCOL_UNSUPPORTED if _is_set(config.get(name))]
        java = [_CONSUMER_PROTOCOL_UNSUPPORTED[name] for name in invalid]
        owner = "the broker's group.consumer.* configs decide them (KIP-848)"
    else:
        invalid = ["group_remote_assignor"] if _is_set(config.get("group_remote_assignor")) else []
        java = ["group.remote.assignor"]
        owner = "only the consumer protocol has a server-side assignor"
    if invalid:
        raise ConfigError(
            invalid[0],
            f"{', '.join(invalid)} cannot be set when group_protocol={protocol!r}; {owner} "
            f"(Java: {', '.join(java)} cannot be set when group.protocol={protocol.upper()})",
        )


def _optional_str(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, str):
        raise ConfigError(attribute.name, f"must be a string or None, got {type(value).__name__}")


def _optional_file(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A PEM file kafka-python will load when it connects: it must exist now (Java checks too)."""
    _optional_str(inst, attribute, value)
    if value is not None and not os.path.isfile(value):
        raise ConfigError(attribute.name, f"no such file: {value!r}")


def _optional_secret(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, str):
        raise ConfigError(attribute.name, f"must be a string or None, got {type(value).__name__} (value hidden)")


def _ssl_context(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    import ssl

    if not isinstance(value, ssl.SSLContext):
        raise ConfigError(attribute.name, f"must be an ssl.SSLContext or None, got {type(value).__name__}")


def _sasl_mechanisms() -> tuple[str, ...]:
    """The mechanisms of kafka-python's SASL registry (``kafka.net.sasl``), every one kgroup accepts.

    Loads kafka-python (through the adapter, ``kgroup._io.kafka_security``) on first use: only a
    configuration that names a SASL mechanism pays for it, and it connects with kafka-python anyway.
    """
    from kgroup._io.kafka_security import sasl_mechanisms

    return sasl_mechanisms()


def _sasl_mechanism(inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    known = _sasl_mechanisms()
    if value not in known:
        raise ConfigError(
            attribute.name, f"must be one of {known} (kafka-python's SASL mechanisms) or None, got {value!r}"
        )


@attrs.frozen(kw_only=True, init=False)
class ConsumerConfig:
    """Configuration of a ``kgroup.Consumer`` (names and defaults of Java's ConsumerConfig).

    Group membership (the Kafka documentation's consumer configs, KIP-62, KIP-345):
        group_id: the consumer group (required).
        group_instance_id: a static member's stable id (KIP-345), or None for a dynamic member.
        session_timeout_ms: the coordinator evicts a member silent this long (45000); a member
            holding partitions that had no successful heartbeat this long hands nothing out
            until the coordinator confirms it (or counts them lost) (docs/protocol.md,
            "Liveness: the session timer").
        heartbeat_interval_ms: time between heartbeats; must be < session_timeout_ms (3000).
        max_poll_interval_ms: longest allowed gap between ``poll()`` calls (300000).
        rebalance_timeout_ms: JoinGroup rebalance timeout; defaults to max_poll_interval_ms.
        assignors: assignor names ("range", "roundrobin", "sticky", "cooperative-sticky") or
            ``Assignor`` objects, in order of preference; Java's default since Kafka 3.0
            (("range", "cooperative-sticky"), which runs EAGER until every member drops range).
        client_rack: the rack (availability zone) this consumer runs in, or None (Java
            ``client.rack``, default ""). Sent in the Subscription (v3, KIP-881) so that the
            range and sticky assignors prefer partitions with a replica in the same rack, and
            as every Fetch's rack id: a broker with ``replica.selector.class`` (e.g.
            ``RackAwareReplicaSelector``) then names a replica in that rack, which serves the
            partition's fetches (follower fetching, KIP-392).
        group_protocol: "classic" (the JoinGroup/SyncGroup protocol; Java's default) or
            "consumer" (KIP-848: ConsumerGroupHeartbeat, the broker assigns; Apache Kafka 4.0+).
            Java ``group.protocol``, any case. Under "consumer", ``session_timeout_ms``,
            ``heartbeat_interval_ms`` and ``assignors`` set explicitly raise ``ConfigError``
            (Java's ``ConsumerConfig`` rejects them: the broker owns them); under "classic",
            ``group_remote_assignor`` does. Table: docs/kip848.md, "Configuration".
        group_remote_assignor: the broker-side assignor the member asks for under "consumer"
            ("uniform" or "range" on Apache Kafka; an unknown name fails at the broker with
            UNSUPPORTED_ASSIGNOR, a ``FatalGroupError``), or None for the broker's default
            (Java ``group.remote.assignor``, default null; a blank string is None).
        exclude_internal_topics: a pattern subscription never matches the internal topics
            (``__consumer_offsets``, ``__transaction_state``, ...), as Java's
            ``exclude.internal.topics`` (True); False lets it match them. Under
            ``group_protocol="consumer"`` the broker matches the pattern, so it has no effect.

    Offsets:
        enable_auto_commit (True), auto_commit_interval_ms (5000),
        auto_offset_reset: "earliest", "latest" or "none" ("latest").

    Fetching (passed to kafka-python's Fetcher):
        max_poll_records (500), fetch_min_bytes (1), fetch_max_wait_ms (500),
        fetch_max_bytes (52428800), max_partition_fetch_bytes (1048576), check_crcs (True),
        isolation_level ("read_uncommitted"). ``fetch_max_bytes`` bounds what a node's fetched
        responses hold at once: each Fetch asks for half of it, and a node holds at most two
        (``docs/protocol.md``, step 7, "Fetch"); Java asks each Fetch for all of it.

    Network: bootstrap_servers (``"host:port,host:port"`` or a list of ``host:port``),
        client_id ("kgroup"), request_timeout_ms (30000),
        default_api_timeout_ms (60000), retry_backoff_ms (100), retry_backoff_max_ms (1000),
        reconnect_backoff_ms (50), reconnect_backoff_max_ms (1000), metadata_max_age_ms (300000),
        connections_max_idle_ms (540000).

    Security (kafka-python's settings, checked here and passed through): security_protocol
        ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"); ssl_context (an ``ssl.SSLContext``,
        or kafka-python builds one from ssl_check_hostname, ssl_cafile, ssl_certfile,
        ssl_keyfile, ssl_password, ssl_crlfile, PEM files that must exist); sasl_mechanism
        (any mechanism kafka-python's SASL registry knows: "PLAIN", "SCRAM-SHA-256",
        "SCRAM-SHA-512" with sasl_plain_username and sasl_plain_password; "OAUTHBEARER" with
        sasl_oauth_token_provider, an object with ``token()`` (and optionally ``extensions()``),
        e.g. a kafka-python ``AbstractTokenProvider``; "GSSAPI" with sasl_kerberos_service_name
        ("kafka"), sasl_kerberos_name, sasl_kerberos_domain_name; "AWS_MSK_IAM" with
        security_protocol "SASL_SSL" and AWS credentials botocore finds; a mechanism registered
        with ``kafka.net.sasl.register_sasl_mechanism``). ssl_password, sasl_plain_password and
        sasl_oauth_token_provider print as ``[hidden]``. docs/security.md shows each.

    Raises:
        ConfigError: a bad value or combination, or an unknown key, naming the field.

    """

    bootstrap_servers: str = attrs.field(converter=_bootstrap, validator=_bootstrap_servers)
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
    group_protocol: str = attrs.field(
        default="classic", converter=_group_protocol, validator=_one_of(_GROUP_PROTOCOLS)
    )
    group_remote_assignor: str | None = attrs.field(
        default=None, converter=_blank_to_none, validator=_optional_str
    )
    exclude_internal_topics: bool = attrs.field(default=True, validator=_bool)
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
    ssl_context: ssl.SSLContext | None = attrs.field(default=None, validator=_ssl_context)
    ssl_check_hostname: bool = attrs.field(default=True, validator=_bool)
    ssl_cafile: str | None = attrs.field(default=None, validator=_optional_file)
    ssl_certfile: str | None = attrs.field(default=None, validator=_optional_file)
    ssl_keyfile: str | None = attrs.field(default=None, validator=_optional_file)
    ssl_password: str | None = attrs.field(default=None, validator=_optional_secret, repr=_hidden_repr)
    ssl_crlfile: str | None = attrs.field(default=None, validator=_optional_file)
    sasl_mechanism: str | None = attrs.field(default=None, validator=_sasl_mechanism)
    sasl_plain_username: str | None = attrs.field(default=None, validator=_optional_str)
    sasl_plain_password: str | None = attrs.field(default=None, validator=_optional_secret, repr=_hidden_repr)
    #: a str, or a gssapi.Name (kafka-python accepts both)
    sasl_kerberos_name: Any = None
    sasl_kerberos_service_name: str = attrs.field(default="kafka", validator=_non_empty_str)
    sasl_kerberos_domain_name: str | None = attrs.field(default=None, validator=_optional_str)
    sasl_oauth_token_provider: Any = attrs.field(default=None, repr=_hidden_repr)

    def __init__(self, **config: Unpack[ConsumerConfigArgs]) -> None:
        """Validate the keys (unknown or missing ones raise ``ConfigError``), then the values."""
        known = _FIELD_NAMES
        for key in config:
            if key not in known:
                raise ConfigError(key, "unknown configuration key" + suggest(key, known))
        for key in ("bootstrap_servers", "group_id"):
            if key not in config:
                raise ConfigError(key, "is required")
        check_group_protocol_settings(config)
        self.__attrs_init__(**config)

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
        self._check_security()

    def _check_security(self) -> None:
        """What kafka-python would reject (or silently not use) when it connects, now."""
        sasl = self.security_protocol.startswith("SASL_")
        mechanism = self.sasl_mechanism
        if sasl and mechanism is None:
            raise ConfigError(
                "sasl_mechanism",
                f"is required with security_protocol={self.security_protocol!r}: one of {_sasl_mechanisms()}",
            )
        if sasl and mechanism == "AWS_MSK_IAM" and self.security_protocol != "SASL_SSL":
            raise ConfigError("security_protocol", "must be 'SASL_SSL' with sasl_mechanism='AWS_MSK_IAM'")
        if sasl and mechanism in _USER_PASSWORD_MECHANISMS:
            for name in ("sasl_plain_username", "sasl_plain_password"):
                if not getattr(self, name):
                    raise ConfigError(name, f"is required with sasl_mechanism={mechanism!r}")
        provider = self.sasl_oauth_token_provider
        if sasl and mechanism == "OAUTHBEARER" and not callable(getattr(provider, "token", None)):
            raise ConfigError(
                "sasl_oauth_token_provider",
                "is required with sasl_mechanism='OAUTHBEARER': an object with a token() method "
                "(kafka-python's kafka.net.sasl.oauth.AbstractTokenProvider)",
            )
        unused = []
        if not sasl:
            unused += [name for name in _SASL_FIELDS if getattr(self, name) is not None]
        if self.security_protocol in ("PLAINTEXT", "SASL_PLAINTEXT"):
            unused += [name for name in _SSL_FIELDS if getattr(self, name) is not None]
        if unused:
            warnings.warn(
                f"{', '.join(unused)} set but security_protocol is {self.security_protocol!r}, which does not "
                "use them: did you mean SASL_SSL, SSL or SASL_PLAINTEXT?",
                stacklevel=4,
            )

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
        """Build a config from keyword arguments, rejecting unknown keys with ``ConfigError``.

        The same as ``ConsumerConfig(**config)``, for callers whose keywords are not typed.
        """
        return cls(**config)

    @classmethod
    def from_properties(cls, source: Mapping[str, Any] | str | os.PathLike[str]) -> ConsumerConfig:
        """Build a config from Java's property names, or from a Java ``consumer.properties`` file.

        ``source`` is a mapping (``{"session.timeout.ms": "45000"}``) or the path of a
        ``.properties`` file (``java.util.Properties`` format, ISO-8859-1, as Kafka's tools read
        it). Numbers and booleans may be strings. Beyond kgroup's own names:

        * ``partition.assignment.strategy`` takes Java's class names
          (``org.apache.kafka.clients.consumer.CooperativeStickyAssignor``, ...) or kgroup's;
        * ``group.protocol`` (``classic`` or ``consumer``, any case) and ``group.remote.assignor``
          are ``group_protocol`` and ``group_remote_assignor``, with Java's rules
          (:func:`check_group_protocol_settings`);
        * Java's SSL and SASL keys are translated where kafka-python can do the same
          (``ssl.truststore.location`` with ``ssl.truststore.type=PEM`` -> ``ssl_cafile``,
          ``sasl.jaas.config`` of PlainLoginModule/ScramLoginModule -> username and password,
          ``ssl.endpoint.identification.algorithm`` -> ``ssl_check_hostname``, ...) and raise
          ``ConfigError`` where it cannot (a JKS store, a Java login class);
        * Java's client-side-only keys (``key.deserializer``, ``interceptor.classes``,
          ``metric.reporters``, ``allow.auto.create.topics``, ``client.dns.lookup``, ...) are
          ignored; one warning names those whose value asks for something kgroup does not do.

        ``docs/configuration.md`` lists every key.

        Raises:
            ConfigError: an unknown key (with the closest known one), or a value kgroup cannot
                honour, naming the key.

        """
        from pathlib import Path

        if isinstance(source, (str, os.PathLike)):
            properties: Mapping[str, Any] = parse_properties(Path(source).read_text(encoding="iso-8859-1"))
        else:
            properties = source
        fields = {a.name: a for a in attrs.fields(cls)}
        translated = translate(properties, set(fields))
        if translated.ignored:
            listed = "; ".join(f"{key}: {why}" for key, why in sorted(translated.ignored.items()))
            warnings.warn(f"Java consumer properties ignored by kgroup: {listed}", stacklevel=2)
        kwargs: dict[str, Any] = {}
        for name, value in translated.fields.items():
            kwargs[name] = _from_property(name, str(fields[name].type), value)
        return cls(**kwargs)


def _from_property(name: str, annotation: str, value: Any) -> Any:
    """A property's value as the field's type: ``int`` and ``bool`` from strings, strings trimmed.

    As Java's ``ConfigDef``: values are trimmed; an empty value of an optional field is "unset".
    """
    if not isinstance(value, str):
        return value
    text = value.strip()
    kind = annotation.replace("Optional[int]", "int | None").replace(" ", "")
    if kind.endswith("|None") and text == "":
        return None
    if kind in ("int", "int|None"):
        try:
            return int(text)
        except ValueError:
            raise ConfigError(name, f"must be an int, got {value!r}") from None
    if kind == "bool":
        return {"true": True, "false": False}.get(text.lower(), value)
    return text


_FIELD_NAMES: frozenset[str] = frozenset(a.name for a in attrs.fields(ConsumerConfig))


class _ConfigOptions(TypedDict, total=False):
    """The optional ``ConsumerConfig`` keywords, with the types they accept."""

    client_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    rebalance_timeout_ms: int | None
    assignors: str | Assignor | Sequence[str | Assignor]
    client_rack: str | None
    group_protocol: Literal["classic", "consumer"]
    group_remote_assignor: str | None
    exclude_internal_topics: bool
    enable_auto_commit: bool
    auto_commit_interval_ms: int
    auto_offset_reset: Literal["earliest", "latest", "none"]
    max_poll_records: int
    fetch_min_bytes: int
    fetch_max_wait_ms: int
    fetch_max_bytes: int
    max_partition_fetch_bytes: int
    check_crcs: bool
    isolation_level: Literal["read_uncommitted", "read_committed"]
    request_timeout_ms: int
    default_api_timeout_ms: int
    retry_backoff_ms: int
    retry_backoff_max_ms: int
    reconnect_backoff_ms: int
    reconnect_backoff_max_ms: int
    metadata_max_age_ms: int
    connections_max_idle_ms: int
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
    ssl_context: ssl.SSLContext | None
    ssl_check_hostname: bool
    ssl_cafile: str | None
    ssl_certfile: str | None
    ssl_keyfile: str | None
    ssl_password: str | None
    ssl_crlfile: str | None
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI", "AWS_MSK_IAM"] | None
    sasl_plain_username: str | None
    sasl_plain_password: str | None
    sasl_kerberos_name: Any
    sasl_kerberos_service_name: str
    sasl_kerberos_domain_name: str | None
    sasl_oauth_token_provider: Any


class ConsumerConfigArgs(_ConfigOptions):
    """``ConsumerConfig``'s keywords (PEP 692): ``bootstrap_servers`` and ``group_id`` required."""

    bootstrap_servers: Required[str | Sequence[str]]
    group_id: Required[str]


class ConsumerArgs(_ConfigOptions, total=False):
    """``Consumer``'s configuration keywords: ``ConsumerConfig``'s, none required by the type.

    (``Consumer(config)`` passes none; without a config, missing ones raise ``ConfigError``.)
    """

    bootstrap_servers: str | Sequence[str]
    group_id: str


#: ``share_acknowledgement_mode``'s values (Java's ``share.acknowledgement.mode``)
SHARE_ACKNOWLEDGEMENT_MODES = ("implicit", "explicit")
#: ``share_acquire_mode``'s values (Java's ``share.acquire.mode``, KIP-1206)
SHARE_ACQUIRE_MODES = ("batch_optimized", "record_limit")
#: ``ConsumerConfig`` settings a share consumer does not take -> Java's name (Java's
#: ``ShareConsumerConfig.SHARE_GROUP_UNSUPPORTED_CONFIGS``: the broker's share-group configs decide
#: them, or share groups have no such thing)
_SHARE_UNSUPPORTED = {
    "auto_offset_reset": "auto.offset.reset",
    "enable_auto_commit": "enable.auto.commit",
    "group_instance_id": "group.instance.id",
    "isolation_level": "isolation.level",
    "assignors": "partition.assignment.strategy",
    "session_timeout_ms": "session.timeout.ms",
    "heartbeat_interval_ms": "heartbeat.interval.ms",
    "group_protocol": "group.protocol",
    "group_remote_assignor": "group.remote.assignor",
}


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


@attrs.frozen
class ShareConsumerConfig:
    """A share consumer's configuration (KIP-932; Java's ``ShareConsumerConfig``).

    ``ShareConsumerConfig.from_kwargs(bootstrap_servers=..., group_id=..., **more)``: the
    ``ConsumerConfig`` fields a share consumer uses (network, security, ``client_id``,
    ``client_rack``, ``max_poll_records``, ``fetch_*``, ``check_crcs``, ``request_timeout_ms``,
    ``default_api_timeout_ms``, ``retry_backoff*``, ...), with their defaults, plus:

    Attributes:
        consumer: the ``ConsumerConfig`` of those fields.
        share_acknowledgement_mode: ``"implicit"`` (default: the records a ``poll()`` returned are
            accepted by the next ``poll()``, commit or ``close()``) or ``"explicit"`` (each is
            acknowledged with ``acknowledge()`` before the next ``poll()``); Java's
            ``share.acknowledgement.mode``.
        share_acquire_mode: ``"batch_optimized"`` (default: the broker acquires whole record
            batches, so a fetch may hold more than ``max_poll_records``; the records beyond stay
            acquired for the next ``poll()``) or ``"record_limit"`` (at most ``max_poll_records``
            records are acquired per fetch, KIP-1206, ShareFetch v2, Apache Kafka 4.4+; a broker
            serving only v1 acquires batch-optimized); Java's ``share.acquire.mode``.

    Raises:
        ConfigError: a bad value, or a setting share groups do not take (``auto_offset_reset``:
            the group's ``share.auto.offset.reset``; ``isolation_level``: the group's
            ``share.isolation.level``; ``session_timeout_ms``, ``heartbeat_interval_ms``: the
            broker's ``group.share.*``; ``group_instance_id``, ``enable_auto_commit``,
            ``assignors``, ``group_protocol``, ``group_remote_assignor``), as Java's
            ``ShareConsumerConfig`` rejects them.

    """

    consumer: ConsumerConfig
    share_acknowledgement_mode: str = attrs.field(
        default="implicit", converter=_lower,
        validator=_one_of(SHARE_ACKNOWLEDGEMENT_MODES),
    )
    share_acquire_mode: str = attrs.field(
        default="batch_optimized", converter=_lower,
        validator=_one_of(SHARE_ACQUIRE_MODES),
    )

    @classmethod
    def from_kwargs(cls, **config: Any) -> ShareConsumerConfig:
        """Build the config from keyword arguments (``ConsumerConfig``'s plus the two above).

        Raises:
            ConfigError: as the class says; unknown keys as ``ConsumerConfig`` rejects them.

        """
        unsupported = [name for name in _SHARE_UNSUPPORTED if _is_set(config.get(name))]
        if unsupported:
            java = ", ".join(_SHARE_UNSUPPORTED[name] for name in unsupported)
            raise ConfigError(
                unsupported[0],
                f"{', '.join(unsupported)} cannot be set on a share consumer: share groups have no such setting, "
                f"or the broker's share-group configs decide it (Java's ShareConsumerConfig rejects {java})",
            )
        share = {name: config.pop(name) for name in ("share_acknowledgement_mode", "share_acquire_mode")
                 if name in config}
        return cls(ConsumerConfig(**config), **share)
