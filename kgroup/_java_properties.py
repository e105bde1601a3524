"""Java ``consumer.properties`` files: the file format, and the Java keys kgroup has no field for.

:func:`parse_properties` reads the format of ``java.util.Properties.load(InputStream)`` (what
Kafka's own tools use for ``--consumer.config``); :func:`translate` turns the Java client's keys
into ``ConsumerConfig`` fields, keys kgroup ignores, or a ``ConfigError``. The table in
``docs/configuration.md`` lists the same keys; ``tests/unit/test_config_properties.py`` checks
that the two agree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from kgroup.errors import ConfigError

__all__ = ["IGNORED", "REJECTED", "Translation", "parse_properties", "suggest", "translate"]

_JAVA_CONSUMER = "org.apache.kafka.clients.consumer."
#: Java's assignor classes (partition.assignment.strategy) -> kgroup's assignor names
JAVA_ASSIGNORS: Final = {
    _JAVA_CONSUMER + "RangeAssignor": "range",
    _JAVA_CONSUMER + "RoundRobinAssignor": "roundrobin",
    _JAVA_CONSUMER + "StickyAssignor": "sticky",
    _JAVA_CONSUMER + "CooperativeStickyAssignor": "cooperative-sticky",
}

#: Java keys kgroup accepts and ignores: key -> (values that mean what kgroup does anyway, so
#: they are ignored silently; what kgroup does instead). Any other value is ignored with a
#: warning naming the key. Values compare case-insensitively, after stripping whitespace.
IGNORED: Final[dict[str, tuple[frozenset[str], str]]] = {
    **{
        f"{part}.deserializer": (
            frozenset({"org.apache.kafka.common.serialization.ByteArrayDeserializer"}),
            f"records carry the {part} as bytes; decode it in Python",
        )
        for part in ("key", "value")
    },
    "interceptor.classes": (frozenset({""}), "Java classes cannot run here; wrap poll() and commit() instead"),
    "metric.reporters": (frozenset({""}), "Consumer.metrics() and kgroup.prometheus report the metrics"),
    "auto.include.jmx.reporter": (frozenset({"true", "false"}), "there is no JMX; see Consumer.metrics()"),
    "metrics.num.samples": (frozenset({"2"}), "Consumer.metrics() uses Java's default: 2 samples"),
    "metrics.sample.window.ms": (frozenset({"30000"}), "Consumer.metrics() uses Java's default: 30000 ms"),
    "metrics.recording.level": (frozenset({"info"}), "Consumer.metrics() records the INFO-level metrics"),
    "enable.metrics.push": (frozenset({"false"}), "client telemetry (KIP-714) is not sent"),
    "client.dns.lookup": (
        frozenset({"use_all_dns_ips"}),
        "every address a bootstrap host resolves to is tried (Java's default, use_all_dns_ips)",
    ),
    "allow.auto.create.topics": (
        frozenset({"false"}),
        "kgroup never asks the broker to create a subscribed topic: create topics beforehand",
    ),
    "send.buffer.bytes": (frozenset({"-1"}), "the operating system's socket buffer sizes are used"),
    "receive.buffer.bytes": (frozenset({"-1"}), "the operating system's socket buffer sizes are used"),
    "socket.connection.setup.timeout.ms": (frozenset(), "kafka-python's connection setup timeouts apply"),
    "socket.connection.setup.timeout.max.ms": (frozenset(), "kafka-python's connection setup timeouts apply"),
    "metadata.recovery.strategy": (frozenset({"none"}), "kafka-python's metadata recovery applies"),
    "metadata.recovery.rebootstrap.trigger.ms": (frozenset(), "kafka-python's metadata recovery applies"),
    "bootstrap.resolve.timeout.ms": (
        frozenset({"0"}),
        "bootstrap hosts are resolved when the Consumer is constructed (Java's default, 0)",
    ),
    "security.providers": (frozenset({""}), "Python's ssl module provides TLS"),
    "internal.leave.group.on.close": (
        frozenset({"true"}),
        "use close(group_membership='remain') to close without leaving the group",
    ),
    "internal.throw.on.fetch.stable.offset.unsupported": (frozenset({"false"}), "not applicable"),
    "ssl.protocol": (frozenset({"tlsv1.3", "tlsv1.2"}), "Python's ssl defaults apply; pass ssl_context to choose"),
    "ssl.enabled.protocols": (
        frozenset({"tlsv1.2,tlsv1.3", "tlsv1.2, tlsv1.3", "tlsv1.2"}),
        "Python's ssl defaults apply; pass ssl_context to choose",
    ),
    "ssl.cipher.suites": (frozenset({""}), "Python's ssl defaults apply; pass ssl_context to choose"),
    "ssl.provider": (frozenset({""}), "Python's ssl module provides TLS"),
    "ssl.keymanager.algorithm": (frozenset({"sunx509"}), "Python's ssl module provides TLS"),
    "ssl.trustmanager.algorithm": (frozenset({"pkix"}), "Python's ssl module provides TLS"),
    "ssl.secure.random.implementation": (frozenset({""}), "Python's ssl module provides TLS"),
    "ssl.truststore.password": (frozenset({""}), "a PEM trust store has no password"),
    "ssl.keystore.password": (frozenset({""}), "a PEM key store's key password is ssl.key.password"),
    "sasl.kerberos.kinit.cmd": (frozenset({"/usr/bin/kinit"}), "Kerberos tickets come from the system (kinit)"),
    "sasl.kerberos.ticket.renew.window.factor": (frozenset({"0.8"}), "Kerberos tickets come from the system"),
    "sasl.kerberos.ticket.renew.jitter": (frozenset({"0.05"}), "Kerberos tickets come from the system"),
    "sasl.kerberos.min.time.before.relogin": (frozenset({"60000"}), "Kerberos tickets come from the system"),
    "sasl.login.refresh.window.factor": (frozenset({"0.8"}), "the token provider refreshes its tokens"),
    "sasl.login.refresh.window.jitter": (frozenset({"0.05"}), "the token provider refreshes its tokens"),
    "sasl.login.refresh.min.period.seconds": (frozenset({"60"}), "the token provider refreshes its tokens"),
    "sasl.login.refresh.buffer.seconds": (frozenset({"300"}), "the token provider refreshes its tokens"),
    "sasl.login.connect.timeout.ms": (frozenset(), "the token provider does its own HTTP"),
    "sasl.login.read.timeout.ms": (frozenset(), "the token provider does its own HTTP"),
    "sasl.login.retry.backoff.ms": (frozenset({"100"}), "the token provider does its own HTTP"),
    "sasl.login.retry.backoff.max.ms": (frozenset({"10000"}), "the token provider does its own HTTP"),
}
#: every Java ``sasl.oauthbearer.*`` key configures Java's OAUTHBEARER login, which kgroup
#: replaces with ``sasl_oauth_token_provider``: ignored with a warning
_OAUTHBEARER_PREFIX: Final = "sasl.oauthbearer."

#: Java keys kgroup cannot honour and that change what the client does: key -> why, and what to
#: do instead (``ConfigError``)
REJECTED: Final[dict[str, str]] = {
    "ssl.engine.factory.class": "a Java SSL engine cannot run here; pass ssl_context instead",
    "ssl.keystore.key": "inline PEM is not supported: put the key and its certificate chain in a file (ssl_certfile)",
    "ssl.keystore.certificate.chain": "inline PEM is not supported: put the chain and key in a file (ssl_certfile)",
    "ssl.truststore.certificates": "inline PEM is not supported: put the certificates in a file (ssl_cafile)",
    "sasl.client.callback.handler.class": "a Java callback handler cannot run here",
    "sasl.login.callback.handler.class": (
        "a Java login callback handler cannot run here; for OAUTHBEARER pass sasl_oauth_token_provider"
    ),
    "sasl.login.class": "a Java login class cannot run here",
}

_ESCAPES: Final = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_JAAS_OPTION = re.compile(r'\s*([A-Za-z0-9_.-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s;]+)')


class Translation:
    """What :func:`translate` made of a set of Java properties."""

    def __init__(self) -> None:
        #: ConsumerConfig field -> value (strings not yet converted)
        self.fields: dict[str, Any] = {}
        #: ignored keys that asked for something kgroup does not do -> what it does instead
        self.ignored: dict[str, str] = {}


def parse_properties(text: str) -> dict[str, str]:
    r"""Parse the text of a Java ``.properties`` file (``java.util.Properties.load``'s format).

    Comment lines start with ``#`` or ``!``; a key ends at the first unescaped ``=``, ``:`` or
    whitespace; a line ending in an odd number of backslashes continues on the next line (whose
    leading whitespace is dropped); ``\t``, ``\n``, ``\r``, ``\f``, ``\uXXXX`` and ``\`` before any
    other character are unescaped. The last occurrence of a key wins.
    """
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip(" \t\f")
            i += 1
        if _continues(line):
            line = line[:-1]
        key, value = _split_entry(line)
        out[_unescape(key)] = _unescape(value)
    return out


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split_entry(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":") and (i >= len(line) or line[i] in " \t\f=:"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
            out.append(chr(int(text[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _jaas_credentials(value: str) -> tuple[str, str]:
    """``(username, password)`` from a PlainLoginModule or ScramLoginModule ``sasl.jaas.config``.

    Raises:
        ConfigError: another login module, or no username or password.

    """
    text = value.strip().rstrip(";").strip()
    module, _, options = text.partition(" ")
    if module.rsplit(".", 1)[-1] not in ("PlainLoginModule", "ScramLoginModule"):
        raise ConfigError(
            "sasl.jaas.config",
            f"login module {module!r} is not supported: kgroup reads the username and password of "
            "PlainLoginModule and ScramLoginModule; for OAUTHBEARER pass sasl_oauth_token_provider, for "
            "GSSAPI obtain a ticket with kinit and set sasl.kerberos.service.name",
        )
    flag, _, options = options.strip().partition(" ")
    if flag not in ("required", "requisite", "sufficient", "optional"):
        options = f"{flag} {options}"
    found: dict[str, str] = {}
    for match in _JAAS_OPTION.finditer(options):
        raw = match.group(2)
        if raw.startswith('"'):
            raw = re.sub(r"\\(.)", r"\1", raw[1:-1])
        found[match.group(1)] = raw
    if "username" not in found or "password" not in found:
        raise ConfigError("sasl.jaas.config", f"{module} needs username=\"...\" and password=\"...\"")
    return found["username"], found["password"]


def _store(config_key: str, kind: str, location: str | None) -> str | None:
    """The PEM file of ``ssl.truststore.*`` or ``ssl.keystore.*`` (Java's default type is JKS)."""
    if location is None:
        return None
    if kind.strip().upper() != "PEM":
        raise ConfigError(
            f"{config_key}.type",
            f"{kind.strip() or 'JKS'} stores cannot be read by Python's ssl module: convert the store to PEM "
            f"(keytool -exportcert -rfc, or openssl pkcs12) and set {config_key}.type=PEM",
        )
    return location


def suggest(key: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``known`` to a misspelled ``key``, or ``""``."""
    import difflib

    match = difflib.get_close_matches(key, list(known), n=1, cutoff=0.75)
    return f"; did you mean {match[0]!r}?" if match else ""


def translate(properties: Mapping[str, Any], known_fields: set[str]) -> Translation:
    """Map Java consumer properties onto ``ConsumerConfig`` field names.

    ``known_fields``: ConsumerConfig's field names (``session.timeout.ms`` ->
    ``session_timeout_ms`` when it is one). Keys neither kgroup's nor known Java keys raise
    ``ConfigError`` with the closest known key as a suggestion.
    """
    result = Translation()
    props = {str(k).strip(): v for k, v in properties.items()}

    def text(key: str, default: str = "") -> str:
        value = props.get(key, default)
        return value if isinstance(value, str) else str(value)

    handled: set[str] = set()

    protocol = text("group.protocol", "classic").strip().lower()
    handled.add("group.protocol")
    if protocol not in ("classic", "consumer"):
        raise ConfigError("group.protocol", f"must be classic or consumer (Java's values), got {protocol!r}")
    if "group.protocol" in props:
        result.fields["group_protocol"] = protocol

    handled.add("ssl.endpoint.identification.algorithm")
    if "ssl.endpoint.identification.algorithm" in props:
        algorithm = text("ssl.endpoint.identification.algorithm").strip().lower()
        if algorithm not in ("https", ""):
            raise ConfigError(
                "ssl.endpoint.identification.algorithm", f"must be https or empty (Java's values), got {algorithm!r}"
            )
        result.fields["ssl_check_hostname"] = algorithm == "https"

    handled |= {"ssl.truststore.location", "ssl.truststore.type", "ssl.keystore.location", "ssl.keystore.type"}
    cafile = _store("ssl.truststore", text("ssl.truststore.type", "JKS"), props.get("ssl.truststore.location"))
    if cafile is not None:
        result.fields["ssl_cafile"] = cafile
    certfile = _store("ssl.keystore", text("ssl.keystore.type", "JKS"), props.get("ssl.keystore.location"))
    if certfile is not None:
        result.fields["ssl_certfile"] = certfile
    if "ssl.key.password" in props:
        handled.add("ssl.key.password")
        result.fields["ssl_password"] = text("ssl.key.password")

    if "sasl.jaas.config" in props:
        handled.add("sasl.jaas.config")
        username, password = _jaas_credentials(text("sasl.jaas.config"))
        result.fields["sasl_plain_username"] = username
        result.fields["sasl_plain_password"] = password
    security = text("security.protocol", "PLAINTEXT").strip().upper()
    if security.startswith("SASL_") and "sasl.mechanism" not in props:
        result.fields["sasl_mechanism"] = "GSSAPI"  # Java's default sasl.mechanism

    for key, value in props.items():
        if key in handled:
            continue
        if key in REJECTED:
            raise ConfigError(key, REJECTED[key])
        if key in IGNORED or key.startswith(_OAUTHBEARER_PREFIX):
            harmless, instead = IGNORED.get(key, (frozenset(), "pass sasl_oauth_token_provider instead"))
            if text(key).strip().lower() not in {h.lower() for h in harmless}:
                result.ignored[key] = instead
            continue
        name = key.replace(".", "_")
        if name == "partition_assignment_strategy":
            name = "assignors"
            if isinstance(value, str):
                value = tuple(JAVA_ASSIGNORS.get(v.strip(), v.strip()) for v in value.split(",") if v.strip())
                for item in value:
                    if item.startswith(("org.", "com.", "io.")):
                        raise ConfigError(
                            key,
                            f"{item!r} is a Java class kgroup cannot run; known: {sorted(JAVA_ASSIGNORS)} "
                            "(or kgroup's names); implement kgroup.Assignor for a custom strategy",
                        )
        if name not in known_fields:
            dotted = {f.replace("_", ".") for f in known_fields} | set(IGNORED) | set(REJECTED) | {
                "group.protocol",
                "partition.assignment.strategy",
                "sasl.jaas.config",
                "ssl.endpoint.identification.algorithm",
                "ssl.truststore.location",
                "ssl.truststore.type",
                "ssl.keystore.location",
                "ssl.keystore.type",
                "ssl.key.password",
            }
            raise ConfigError(key, "unknown configuration key" + suggest(key, dotted))
        result.fields[name] = value
    return result
