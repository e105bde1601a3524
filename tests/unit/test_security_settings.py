"""Security settings reach kafka-python; refused connections and unauthorized topics become kgroup errors.

No broker here (tests/integration/test_security.py runs them against Apache Kafka): kgroup
accepts every SASL mechanism of kafka-python's registry (``kafka.net.sasl``), AWS_MSK_IAM
among them, and what a consumer is configured with is what kafka-python's network client holds
(and what its SASL mechanism is built from). ``AuthenticationWatch`` tells a refused handshake
(a certificate, a SASL exchange) from a connection that merely dropped.
"""

from __future__ import annotations

import importlib.util
import logging
import ssl
from types import SimpleNamespace
from typing import Any

import kafka.errors as KErrors
import pytest
from kafka.net.sasl import SASL_MECHANISMS, get_sasl_mechanism, register_sasl_mechanism
from kafka.net.sasl.msk import SaslMechanismAwsMskIam
from kafka.net.sasl.oauth import AbstractTokenProvider, SaslMechanismOAuth
from kafka.net.sasl.plain import SaslMechanismPlain

from kgroup import AuthenticationFailedError, ConfigError, ConsumerConfig, TopicAuthorizationFailedError
from kgroup._io.kafka_python import KafkaNetwork
from kgroup._io.kafka_security import (
    AuthenticationWatch,
    _read_before_close,
    _refusal,
    sasl_mechanisms,
    token_provider,
)

BASE: dict[str, Any] = {"bootstrap_servers": "127.0.0.1:9093", "group_id": "g"}


def _settings(mechanism: str) -> dict[str, Any]:
    settings: dict[str, Any] = {**BASE, "security_protocol": "SASL_SSL", "sasl_mechanism": mechanism}
    if mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        settings.update(sasl_plain_username="u", sasl_plain_password="p")
    if mechanism == "OAUTHBEARER":
        settings["sasl_oauth_token_provider"] = _Token()
    return settings


class _Token:
    """A token provider that is not a kafka-python ``AbstractTokenProvider`` (a duck)."""

    def token(self) -> str:
        return "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1In0."


def test_the_accepted_mechanisms_are_kafka_pythons_registry() -> None:
    assert sasl_mechanisms() == tuple(sorted(SASL_MECHANISMS))
    assert {"AWS_MSK_IAM", "GSSAPI", "OAUTHBEARER", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} <= set(sasl_mechanisms())


@pytest.mark.parametrize("mechanism", sorted(SASL_MECHANISMS))
def test_every_registered_mechanism_is_accepted_and_reaches_kafka_python(mechanism: str) -> None:
    config = ConsumerConfig(**_settings(mechanism))
    network = KafkaNetwork(config)  # builds kafka-python's client; connects to nothing
    try:
        held = network._manager.config
        assert held["security_protocol"] == "SASL_SSL"
        assert held["sasl_mechanism"] == mechanism
        assert get_sasl_mechanism(held["sasl_mechanism"]) is SASL_MECHANISMS[mechanism]
    finally:
        network.close()


def test_aws_msk_iam_settings_reach_the_mechanism_kafka_python_builds() -> None:
    network = KafkaNetwork(ConsumerConfig(**_settings("AWS_MSK_IAM")))
    try:
        held = network._manager.config
        assert get_sasl_mechanism(held["sasl_mechanism"]) is SaslMechanismAwsMskIam
        if importlib.util.find_spec("botocore") is None:  # the mechanism's own optional dependency
            with pytest.raises(RuntimeError, match="botocore"):
                SaslMechanismAwsMskIam(host="b-1.example", **held)
        else:  # it checked security_protocol and took the host
            assert SaslMechanismAwsMskIam(host="b-1.example", **held).host == "b-1.example"
    finally:
        network.close()


def test_aws_msk_iam_needs_sasl_ssl() -> None:
    with pytest.raises(ConfigError) as info:
        ConsumerConfig(**{**_settings("AWS_MSK_IAM"), "security_protocol": "SASL_PLAINTEXT"})
    assert info.value.field == "security_protocol"


def test_a_mechanism_registered_with_kafka_python_is_accepted() -> None:
    register_sasl_mechanism("X-TEST", SaslMechanismPlain)
    try:
        assert ConsumerConfig(**{**BASE, "security_protocol": "SASL_SSL", "sasl_mechanism": "X-TEST"})
    finally:
        del SASL_MECHANISMS["X-TEST"]
    with pytest.raises(ConfigError, match="kafka-python's SASL mechanisms"):
        ConsumerConfig(**{**BASE, "security_protocol": "SASL_SSL", "sasl_mechanism": "X-TEST"})


def test_a_duck_typed_token_provider_reaches_kafka_python_as_an_abstract_token_provider() -> None:
    duck = _Token()
    network = KafkaNetwork(ConsumerConfig(**{**_settings("OAUTHBEARER"), "sasl_oauth_token_provider": duck}))
    try:
        provider = network._manager.config["sasl_oauth_token_provider"]
        assert isinstance(provider, AbstractTokenProvider)
        mechanism = SaslMechanismOAuth(**network._manager.config)  # kafka-python refused the duck itself
        assert mechanism.auth_bytes() == f"n,,\x01auth=Bearer {duck.token()}\x01\x01".encode()
    finally:
        network.close()
    real = type("Real", (AbstractTokenProvider,), {"token": lambda self: "t", "extensions": lambda self: {"k": "v"}})()
    assert token_provider(real).token() == "t"
    assert token_provider(real).extensions() == {"k": "v"}
    assert token_provider(None) is None


def test_kafka_pythons_debug_lines_hold_no_password_and_no_token(caplog: pytest.LogCaptureFixture) -> None:
    password, token = "pl\u00e4in-Secret", "header.payload-Secret."
    network = KafkaNetwork(ConsumerConfig(**{**_settings("PLAIN"), "sasl_plain_password": password}))
    network.close()
    provider = token_provider(type("P", (), {"token": lambda self: token})())
    auth_bytes = SaslMechanismOAuth(sasl_oauth_token_provider=provider).auth_bytes()
    plain = f"\x00u\x00{password}".encode()
    caplog.set_level(logging.DEBUG)
    logging.getLogger("kafka.protocol.parser").debug("node Sending request 3 %s", auth_bytes)
    logging.getLogger("kafka.protocol.parser").debug("node Send: %r", bytearray(plain))
    logging.getLogger("kafka.net.connection").debug("conn Request %d: %s", 3, f"auth_bytes={plain!r}")
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert len(caplog.records) == 3 and text.count("[hidden]") == 3, text
    assert token not in text and "Secret" not in text, text


def _handshake_failure(cause: BaseException) -> KErrors.KafkaConnectionError:
    try:
        try:
            raise cause
        except Exception as exc:
            raise KErrors.KafkaConnectionError(f"Handshake failed: {exc}")  # noqa: B904 - as kafka-python does
    except KErrors.KafkaConnectionError as error:
        return error


@pytest.mark.parametrize(
    ("error", "refused"),
    [
        (KErrors.SaslAuthenticationFailedError("invalid credentials"), "SASL authentication (SCRAM-SHA-512)"),
        (KErrors.UnsupportedSaslMechanismError("enabled: PLAIN"), "SASL authentication (SCRAM-SHA-512)"),
        (RuntimeError('AWS_MSK_IAM requires the "botocore" package'), "SASL authentication (SCRAM-SHA-512)"),
        (_handshake_failure(ssl.SSLCertVerificationError("certificate verify failed")), "TLS handshake failed"),
        (_handshake_failure(ssl.SSLError("wrong version number")), "TLS handshake failed"),
        (_handshake_failure(ssl.SSLEOFError("EOF occurred")), None),
        (_handshake_failure(ConnectionResetError("reset")), None),
        (KErrors.KafkaConnectionError("connection refused"), None),
        (KErrors.KafkaTimeoutError("timed out"), None),
    ],
)
def test_a_refusal_is_told_from_a_dropped_connection(error: Exception, refused: str | None) -> None:
    reason = _refusal(error, "SCRAM-SHA-512")
    assert (reason is None) if refused is None else (reason is not None and reason.startswith(refused))
    if isinstance(error, RuntimeError):
        assert _refusal(error, None) is None  # without SASL, not a refusal


class _Future:
    def __init__(self, exception: BaseException | None) -> None:
        self.exception = exception

    def succeeded(self) -> bool:
        return self.exception is None

    def failed(self) -> bool:
        return self.exception is not None


def test_the_watch_keeps_the_last_refusal_until_a_connection_succeeds() -> None:
    import asyncio

    async def connect(node: Any, conn: Any, *args: Any, **kwargs: Any) -> None:
        return None

    manager = SimpleNamespace(_connect=connect, _build_transport=connect)
    watch = AuthenticationWatch(manager, "SCRAM-SHA-512")
    node = SimpleNamespace(host="127.0.0.1", port=9093)

    def attempt(exception: BaseException | None) -> None:
        asyncio.run(manager._connect(node, SimpleNamespace(init_future=_Future(exception))))

    assert watch.failure() is None
    attempt(KErrors.KafkaConnectionError("refused"))
    assert watch.failure() is None
    attempt(KErrors.SaslAuthenticationFailedError("invalid credentials"))
    failure = watch.failure()
    assert isinstance(failure, AuthenticationFailedError)
    assert "127.0.0.1:9093" in str(failure) and "invalid credentials" in str(failure)
    attempt(KErrors.KafkaConnectionError("refused"))
    assert str(watch.failure()) == str(failure)  # a dropped connection says nothing new
    assert watch.failure() is not watch.failure()  # a fresh exception for each raise
    attempt(None)
    assert watch.failure() is None


def test_an_unauthorized_topic_in_a_metadata_answer_is_a_topic_authorization_error() -> None:
    topic = SimpleNamespace
    answer = SimpleNamespace(
        brokers=[],
        topics=[topic(name="ok", error_code=0, partitions=[]), topic(name="secret", error_code=29, partitions=[])],
    )
    with pytest.raises(TopicAuthorizationFailedError, match=r"Metadata failed with TOPIC_AUTHORIZATION_FAILED.*secret"):
        KafkaNetwork._partition_infos(answer)
    answer.topics = [topic(name="gone", error_code=3, partitions=[])]
    assert KafkaNetwork._partition_infos(answer) == {}  # unknown: absent, as before


def test_bytes_that_came_with_the_close_are_handed_on_before_the_close() -> None:
    """A broker answers a refused SASL exchange and closes: the answer must not be dropped."""
    closed = KErrors.KafkaConnectionError("socket disconnected")
    reads = [(b"", None), (b"the answer", closed), (b"", closed)]
    transport = SimpleNamespace(_sock_recv=lambda: reads.pop(0))
    _read_before_close(transport)
    assert transport._sock_recv() == (b"", None)
    assert transport._sock_recv() == (b"the answer", None)  # kafka-python aborted here, answer unread
    assert transport._sock_recv() == (b"", closed)  # the close, on the next pass
    assert transport._sock_recv() == (b"", closed)
