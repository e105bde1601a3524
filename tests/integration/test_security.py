"""TLS, SASL and ACLs against a real Apache Kafka: a SASL_SSL listener, SCRAM-SHA-512, OAUTHBEARER, StandardAuthorizer.

One node for the module (``kgroup.testing.apache_kafka.start_secured_broker``): a CA and a
server certificate for ``IP:127.0.0.1`` made at test time, SCRAM-SHA-512 users added at
format time, OAUTHBEARER on Kafka's unsecured-JWT validator (test-only configuration), KRaft's
``StandardAuthorizer`` with no ACL meaning no access. The set-up (topics, ACLs) goes through
the node's PLAINTEXT listener, whose ``User:ANONYMOUS`` is a super user; every consumer under
test connects over SASL_SSL as an ordinary principal holding only the ACLs its test grants.

* a group consumes and commits over SASL_SSL (SCRAM-SHA-512 under both group protocols, and
  OAUTHBEARER through the token provider);
* a wrong password, a mechanism the listener does not enable (kafka-python's AWS_MSK_IAM), an
  untrusted CA and a hostname mismatch each end in
  ``AuthenticationFailedError`` from ``poll()`` well within ``default_api_timeout_ms``, and the
  consumer closes at once; ``GroupAdmin.connect`` fails as early;
* a principal without READ on the group gets ``GroupAuthorizationFailedError`` (fatal: raised
  again), without READ (or DESCRIBE) on the topic ``TopicAuthorizationFailedError``, whether it
  subscribes or assigns;
* no secret (a password, the token) is in any log line, with every logger at DEBUG.

docs/security.md describes the settings and the errors. Every wait is a condition with a
deadline (``poll(timeout_ms)`` loops).
"""

from __future__ import annotations

import base64
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)

import kgroup
from kgroup.admin import AdminError, GroupAdmin
from kgroup.testing import apache_kafka, create_topic, produce
from kgroup.testing.apache_kafka import SecuredCluster, start_secured_broker
from tests.integration.harness import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.broker_kinds("apache-kafka")]

#: SCRAM-SHA-512 users and their passwords (each test's principal is one of them)
USERS = {
    "admin": "admin-Secret-0",
    "reader": "reader-Secret-1",
    "no-group": "nogroup-Secret-2",
    "no-topic": "notopic-Secret-3",
}
WRONG_PASSWORD = "wrong-Secret-9"
#: the consumers' default_api_timeout_ms here: every failure must come well before it
API_TIMEOUT_MS = 30_000
SESSION_TIMEOUT_MS = 10_000
RECORDS = 5
DEADLINE_S = 60.0


def _unsigned_jwt(subject: str) -> str:
    """An unsecured JWT (``alg: none``), as Kafka's ``OAuthBearerUnsecuredValidatorCallbackHandler`` takes."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    now = int(time.time())  # the token's iat and exp claims, not a timer
    return f"{part({'alg': 'none'})}.{part({'sub': subject, 'iat': now, 'exp': now + 3600})}."


class UnsignedTokens:
    """A token provider (any object with ``token()``) for OAUTHBEARER: one unsigned JWT for ``subject``."""

    def __init__(self, subject: str) -> None:
        self.subject = subject
        self.issued = 0
        self._token = _unsigned_jwt(subject)

    def token(self) -> str:
        self.issued += 1
        return self._token


@pytest.fixture(scope="module")
def secured(broker_kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredCluster]:
    """The module's secured Apache Kafka node (skipped with one line without Java or the jars)."""
    apache_kafka.skip_if_unavailable()
    started = time.monotonic()
    cluster = start_secured_broker(
        users=USERS,
        super_users=("admin",),
        log_dir=tmp_path_factory.mktemp("secured-apache-kafka"),
        # one offsets partition: the first group's coordinator loads at once on a busy machine
        overrides={"group.initial.rebalance.delay.ms": 0, "offsets.topic.num.partitions": 1},
        startup_timeout_s=120,
    )
    print(f"secured node ready in {time.monotonic() - started:.1f} s: {cluster.bootstrap_servers}")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def names(request: pytest.FixtureRequest) -> tuple[str, str]:
    """A fresh topic and group id for the test."""
    suffix = f"{request.node.name.split('[')[0][-40:]}-{uuid.uuid4().hex[:6]}".replace("_", "-")
    return f"t-{suffix}", f"g-{suffix}"


@pytest.fixture
def no_secret_in_logs(caplog: pytest.LogCaptureFixture) -> Iterator[list[str]]:
    """Every logger at DEBUG for the test; afterwards no line it logged may hold a secret.

    Yields the secrets looked for (the passwords); a test adds its own (a token).
    """
    caplog.set_level(logging.DEBUG)
    secrets = [*USERS.values(), WRONG_PASSWORD]
    yield secrets
    records = caplog.get_records("setup") + caplog.get_records("call")
    assert records, "nothing was logged: the check would be vacuous"
    leaks = [
        f"{record.name}: {text[:200]}"
        for record in records
        for text in [record.getMessage() + (record.exc_text or "")]
        for secret in secrets
        if secret in text
    ]
    assert leaks == []


def _acl(user: str, kind: int, name: str, operation: int = ACLOperation.READ) -> ACL:
    return ACL(
        principal=f"User:{user}",
        host="*",
        operation=operation,
        permission_type=ACLPermissionType.ALLOW,
        resource_pattern=ResourcePattern(kind, name, ACLResourcePatternType.LITERAL),
    )


def _grant(cluster: SecuredCluster, acls: list[ACL]) -> None:
    """Create ``acls`` (as the PLAINTEXT super user) and wait until the authorizer lists them."""
    admin = KafkaAdminClient(bootstrap_servers=cluster.plaintext_bootstrap_servers, request_timeout_ms=20_000)
    try:
        result = admin.create_acls(acls)
        assert not result["failed"], result["failed"]
        wanted = {(a.principal, a.resource_pattern.resource_type, a.resource_pattern.resource_name, a.operation)
                  for a in acls}

        def listed() -> bool:
            found, _ = admin.describe_acls(
                ACLFilter(
                    principal=None, host="*", operation=ACLOperation.ANY, permission_type=ACLPermissionType.ANY,
                    resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
                )
            )
            have = {(a.principal, a.resource_pattern.resource_type, a.resource_pattern.resource_name, a.operation)
                    for a in found}
            return wanted <= have

        wait_until(listed, DEADLINE_S, f"the authorizer to list {len(acls)} new ACLs")
    finally:
        admin.close()


def _topic_with_records(cluster: SecuredCluster, topic: str) -> None:
    create_topic(cluster.plaintext_bootstrap_servers, topic, 1)
    produce(cluster.plaintext_bootstrap_servers, topic, [(b"k", b"v%d" % i) for i in range(RECORDS)])


def _consumer(settings: dict[str, Any], group: str, group_protocol: str = "classic") -> kgroup.Consumer[bytes, bytes]:
    if group_protocol == "classic":  # the broker owns the session timeout under "consumer" (KIP-848)
        settings = {**settings, "session_timeout_ms": SESSION_TIMEOUT_MS}
    return kgroup.Consumer(
        **settings,
        group_id=group,
        group_protocol=group_protocol,
        auto_offset_reset="earliest",
        default_api_timeout_ms=API_TIMEOUT_MS,
    )


def _consume_and_commit(consumer: kgroup.Consumer[bytes, bytes], topic: str) -> None:
    consumer.subscribe([topic])
    values: list[bytes | None] = []
    deadline = time.monotonic() + DEADLINE_S
    while len(values) < RECORDS and time.monotonic() < deadline:
        values += [record.value for record in consumer.poll(timeout_ms=500)]
    assert values == [b"v%d" % i for i in range(RECORDS)]
    consumer.commit()
    tp = kgroup.TopicPartition(topic, 0)
    committed = consumer.committed([tp], timeout_ms=API_TIMEOUT_MS)
    assert committed[tp] is not None and committed[tp].offset == RECORDS


def _first_error(consumer: kgroup.Consumer[bytes, bytes], timeout_s: float) -> tuple[BaseException, float]:
    """Poll until ``poll()`` raises; return the error and the seconds it took."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        try:
            consumer.poll(timeout_ms=200)
        except kgroup.KGroupError as exc:
            return exc, time.monotonic() - started
    raise AssertionError(f"poll() raised nothing within {timeout_s} s")


def _reader_acls(user: str, topic: str, group: str) -> list[ACL]:
    return [_acl(user, ResourceType.TOPIC, topic), _acl(user, ResourceType.GROUP, group)]


def _prepared(
    cluster: SecuredCluster, names: tuple[str, str], acls: Callable[[str, str], list[ACL]]
) -> tuple[str, str]:
    """The test's topic with its records, and ``acls(topic, group)`` granted; returns (topic, group)."""
    topic, group = names
    _topic_with_records(cluster, topic)
    _grant(cluster, acls(topic, group))
    return topic, group


# --------------------------------------------------------------------------- it works


@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
def test_a_group_consumes_and_commits_over_sasl_ssl_with_scram(
    secured: SecuredCluster, names: tuple[str, str], no_secret_in_logs: list[str], group_protocol: str
) -> None:
    topic, group = _prepared(secured, names, lambda topic, group: _reader_acls("reader", topic, group))
    with _consumer(secured.scram_settings("reader"), group, group_protocol) as consumer:
        _consume_and_commit(consumer, topic)


def test_oauthbearer_through_the_token_provider(
    secured: SecuredCluster, names: tuple[str, str], no_secret_in_logs: list[str]
) -> None:
    # the token's sub is the principal
    topic, group = _prepared(secured, names, lambda topic, group: _reader_acls("oauth-reader", topic, group))
    tokens = UnsignedTokens("oauth-reader")
    settings: dict[str, object] = {
        "bootstrap_servers": secured.bootstrap_servers,
        "security_protocol": "SASL_SSL",
        "ssl_cafile": str(secured.tls.ca_file),
        "sasl_mechanism": "OAUTHBEARER",
        "sasl_oauth_token_provider": tokens,
    }
    no_secret_in_logs.append(tokens.token())
    with _consumer(settings, group) as consumer:
        _consume_and_commit(consumer, topic)
    assert tokens.issued >= 2  # the check above, and at least one connection


# --------------------------------------------------------------------------- refused connections


def _wrong_password(cluster: SecuredCluster) -> dict[str, object]:
    return cluster.scram_settings("reader", password=WRONG_PASSWORD)


def _untrusted_ca(cluster: SecuredCluster) -> dict[str, object]:
    return {**cluster.scram_settings("reader"), "ssl_cafile": str(cluster.tls.stranger_ca_file)}


def _hostname_mismatch(cluster: SecuredCluster) -> dict[str, object]:
    # the certificate names IP:127.0.0.1 only; "localhost" reaches the same listener
    servers = cluster.bootstrap_servers.replace("127.0.0.1", "localhost")
    return {**cluster.scram_settings("reader"), "bootstrap_servers": servers}


def _mechanism_not_enabled(cluster: SecuredCluster) -> dict[str, object]:
    # kafka-python's AWS_MSK_IAM reaches the broker, whose listener enables SCRAM and OAUTHBEARER only
    return {
        "bootstrap_servers": cluster.bootstrap_servers,
        "security_protocol": "SASL_SSL",
        "ssl_cafile": str(cluster.tls.ca_file),
        "sasl_mechanism": "AWS_MSK_IAM",
    }


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        pytest.param(_wrong_password, "invalid credentials", id="wrong-password"),
        pytest.param(_mechanism_not_enabled, "(AWS_MSK_IAM) failed: [Error 33]", id="mechanism-not-enabled"),
        pytest.param(_untrusted_ca, "certificate verify failed", id="untrusted-ca"),
        pytest.param(_hostname_mismatch, "not valid for 'localhost'", id="hostname-mismatch"),
    ],
)
def test_a_refused_connection_is_an_authentication_error_before_the_api_timeout(
    secured: SecuredCluster,
    names: tuple[str, str],
    no_secret_in_logs: list[str],
    settings: Callable[[SecuredCluster], dict[str, object]],
    says: str,
) -> None:
    topic, group = names
    consumer = _consumer(settings(secured), group)
    try:
        consumer.subscribe([topic])
        error, seconds = _first_error(consumer, API_TIMEOUT_MS / 1000)
        assert isinstance(error, kgroup.AuthenticationFailedError), repr(error)
        assert says in str(error)
        assert seconds < API_TIMEOUT_MS / 1000 / 2  # at the first refusal, not at the timeout
        again, _ = _first_error(consumer, API_TIMEOUT_MS / 1000)  # raised while the refusal lasts
        assert isinstance(again, kgroup.AuthenticationFailedError), repr(again)
    finally:
        started = time.monotonic()
        consumer.close()
        assert time.monotonic() - started < 5.0


def test_the_admin_fails_at_the_first_refusal_too(
    secured: SecuredCluster, no_secret_in_logs: list[str]
) -> None:
    settings = _wrong_password(secured)
    servers = str(settings.pop("bootstrap_servers"))
    started = time.monotonic()
    with pytest.raises(AdminError, match="invalid credentials") as info:
        GroupAdmin.connect(servers, timeout_ms=API_TIMEOUT_MS, **settings)
    assert isinstance(info.value.__cause__, kgroup.AuthenticationFailedError)
    assert time.monotonic() - started < API_TIMEOUT_MS / 1000 / 2  # not at the bootstrap's deadline


# --------------------------------------------------------------------------- authorization


@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
def test_no_read_on_the_group_is_a_group_authorization_error(
    secured: SecuredCluster, names: tuple[str, str], no_secret_in_logs: list[str], group_protocol: str
) -> None:
    topic, group = _prepared(secured, names, lambda topic, group: [_acl("no-group", ResourceType.TOPIC, topic)])
    with _consumer(secured.scram_settings("no-group"), group, group_protocol) as consumer:
        consumer.subscribe([topic])
        error, seconds = _first_error(consumer, API_TIMEOUT_MS / 1000)
        assert isinstance(error, kgroup.GroupAuthorizationFailedError), repr(error)
        assert isinstance(error, kgroup.FatalGroupError)
        assert error.name == "GROUP_AUTHORIZATION_FAILED"
        assert seconds < API_TIMEOUT_MS / 1000
        with pytest.raises(kgroup.GroupAuthorizationFailedError):
            consumer.poll(timeout_ms=0)  # fatal: the consumer stays poisoned, nothing is retried


@pytest.mark.parametrize(
    ("how", "group_protocol"), [("subscribe", "classic"), ("subscribe", "consumer"), ("assign", "classic")]
)
def test_no_read_on_the_topic_is_a_topic_authorization_error(
    secured: SecuredCluster, names: tuple[str, str], no_secret_in_logs: list[str], how: str, group_protocol: str
) -> None:
    topic, group = _prepared(secured, names, lambda topic, group: [_acl("no-topic", ResourceType.GROUP, group)])
    with _consumer(secured.scram_settings("no-topic"), group, group_protocol) as consumer:
        if how == "subscribe":
            consumer.subscribe([topic])
        else:
            consumer.assign([kgroup.TopicPartition(topic, 0)])
        error, seconds = _first_error(consumer, API_TIMEOUT_MS / 1000)
        assert isinstance(error, kgroup.TopicAuthorizationFailedError), repr(error)
        assert error.name == "TOPIC_AUTHORIZATION_FAILED"
        assert seconds < API_TIMEOUT_MS / 1000

