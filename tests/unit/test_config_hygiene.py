"""ConsumerConfig hygiene: secrets redacted, "did you mean", bootstrap servers and security checked."""

from __future__ import annotations

import logging
import ssl
from pathlib import Path

import pytest

import kgroup
from kgroup import ConfigError, ConsumerConfig
from kgroup.config import resolve_bootstrap_servers

BASE = {"bootstrap_servers": "localhost:9092", "group_id": "g"}
SASL = {"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_plain_username": "u"}


class _TokenProvider:
    def token(self) -> str:
        return "eyJ-secret-token"

    def __repr__(self) -> str:
        return "_TokenProvider(token='eyJ-secret-token')"


# ---------------------------------------------------------------- secrets


def test_repr_hides_passwords_and_the_token_provider(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    key = tmp_path / "client.pem"
    key.write_text("pem")
    cfg = ConsumerConfig(
        **BASE, **SASL, sasl_plain_password="hunter2", ssl_password="sslpass", ssl_certfile=str(key)
    )
    oauth = ConsumerConfig(
        **BASE, security_protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=_TokenProvider()
    )
    for text in (repr(cfg), str(cfg), repr(oauth)):
        assert "hunter2" not in text
        assert "sslpass" not in text
        assert "eyJ-secret-token" not in text
    assert "sasl_plain_password='[hidden]'" in repr(cfg)
    assert "ssl_password='[hidden]'" in repr(cfg)
    assert "sasl_oauth_token_provider='[hidden]'" in repr(oauth)
    assert "ssl_password=None" in repr(oauth)  # unset stays visibly unset
    assert cfg.sasl_plain_password == "hunter2"  # the value itself is still there
    # logging the config (a common habit) leaks nothing either
    with caplog.at_level(logging.INFO):
        logging.getLogger("app").info("starting with %s", cfg)
    assert "hunter2" not in caplog.text and "[hidden]" in caplog.text


def test_a_bad_secret_is_reported_without_its_value():
    with pytest.raises(ConfigError) as info:
        ConsumerConfig(**BASE, **SASL, sasl_plain_password=12345678)  # type: ignore[arg-type]
    assert info.value.field == "sasl_plain_password"
    assert "12345678" not in str(info.value)


# ---------------------------------------------------------------- did you mean


@pytest.mark.parametrize(
    ("key", "suggestion"),
    [
        ("sesion_timeout_ms", "session_timeout_ms"),
        ("max_poll_record", "max_poll_records"),
        ("auto_offset_rest", "auto_offset_reset"),
        ("groupid", "group_id"),
    ],
)
def test_misspelled_key_suggests_the_known_one_on_every_path(key, suggestion):
    for build in (
        lambda: ConsumerConfig(**BASE, **{key: 1}),
        lambda: ConsumerConfig.from_kwargs(**BASE, **{key: 1}),
        lambda: kgroup.Consumer(**BASE, **{key: 1}),
    ):
        with pytest.raises(ConfigError, match=rf"did you mean '{suggestion}'\?") as info:
            build()
        assert info.value.field == key


def test_unrelated_unknown_key_has_no_suggestion():
    with pytest.raises(ConfigError) as info:
        ConsumerConfig(**BASE, colour="blue")  # type: ignore[call-arg]
    assert str(info.value) == "colour: unknown configuration key"


def test_missing_required_key_is_a_config_error_not_a_type_error():
    with pytest.raises(ConfigError) as info:
        ConsumerConfig(group_id="g")  # type: ignore[call-arg]
    assert info.value.field == "bootstrap_servers"


# ---------------------------------------------------------------- bootstrap servers


@pytest.mark.parametrize(
    "servers",
    ["localhost", "http://x:y:z", "broker:", ":9092", "a:1,localhost", "host:99999", "host:port", "", " , "],
)
def test_malformed_bootstrap_servers_are_rejected_at_construction_naming_the_entry(servers):
    with pytest.raises(ConfigError) as info:
        ConsumerConfig(bootstrap_servers=servers, group_id="g")
    assert info.value.field == "bootstrap_servers"
    bad = [e.strip() for e in servers.split(",") if e.strip() and e.strip() != "a:1"]
    if bad:
        assert repr(bad[0]) in str(info.value)


@pytest.mark.parametrize(
    ("servers", "normalised"),
    [
        ("a:1, b:2", "a:1,b:2"),
        ("a:1,", "a:1"),
        (["a:1", " b:2 "], "a:1,b:2"),
        ("SASL_SSL://a:9093", "SASL_SSL://a:9093"),  # Java and kafka-python drop the scheme
        ("[::1]:9092", "[::1]:9092"),
        ("10.0.0.1:9092", "10.0.0.1:9092"),
    ],
)
def test_well_formed_bootstrap_servers_are_accepted(servers, normalised):
    assert ConsumerConfig(bootstrap_servers=servers, group_id="g").bootstrap_servers == normalised


def test_consumer_construction_fails_like_java_when_no_bootstrap_host_resolves():
    with pytest.raises(ConfigError, match=r"No resolvable bootstrap urls given in bootstrap\.servers") as info:
        kgroup.Consumer(bootstrap_servers="nosuchhost.invalid:9092,other.invalid:9092", group_id="g")
    assert info.value.field == "bootstrap_servers"


def test_an_unresolvable_bootstrap_host_among_good_ones_is_logged_and_skipped(caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.WARNING, logger="kgroup.config"):
        resolved = resolve_bootstrap_servers("nosuchhost.invalid:9092,127.0.0.1:9092")
    assert resolved == [("127.0.0.1", 9092)]
    assert "Couldn't resolve server nosuchhost.invalid:9092" in caplog.text
    consumer = kgroup.Consumer(bootstrap_servers="nosuchhost.invalid:9092,127.0.0.1:9092", group_id="g")
    consumer.close()


def test_the_config_alone_does_no_dns(monkeypatch: pytest.MonkeyPatch):
    """A config can be built (and tested) anywhere; the Consumer resolves, as Java's does."""
    import socket

    def no_dns(*args, **kwargs):
        raise AssertionError("ConsumerConfig must not resolve hosts")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    assert ConsumerConfig(bootstrap_servers="nosuchhost.invalid:9092", group_id="g").group_id == "g"


# ---------------------------------------------------------------- security pass-through


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"sasl_mechanism": "BOGUS", "security_protocol": "SASL_SSL"}, "sasl_mechanism"),
        ({"security_protocol": "SASL_SSL"}, "sasl_mechanism"),
        ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256"}, "sasl_plain_username"),
        ({**SASL}, "sasl_plain_password"),
        ({"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER"}, "sasl_oauth_token_provider"),
        (
            {"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": "tok"},
            "sasl_oauth_token_provider",
        ),
        ({"ssl_check_hostname": "no"}, "ssl_check_hostname"),
        ({"security_protocol": "SSL", "ssl_cafile": "/no/such/ca.pem"}, "ssl_cafile"),
        ({"security_protocol": "SSL", "ssl_context": "ctx"}, "ssl_context"),
        ({"sasl_kerberos_service_name": ""}, "sasl_kerberos_service_name"),
    ],
    ids=lambda v: v if isinstance(v, str) else "-".join(f"{k}={v}" for k, v in v.items()),
)
def test_security_settings_are_validated(overrides, field):
    with pytest.raises(ConfigError) as info:
        ConsumerConfig(**{**BASE, **overrides})
    assert info.value.field == field


def test_security_settings_that_the_protocol_does_not_use_warn():
    with pytest.warns(UserWarning, match=r"sasl_mechanism, sasl_plain_username.*PLAINTEXT"):
        ConsumerConfig(**BASE, sasl_mechanism="PLAIN", sasl_plain_username="u")
    with pytest.warns(UserWarning, match=r"ssl_context set but security_protocol is 'SASL_PLAINTEXT'"):
        ConsumerConfig(
            **BASE,
            **{**SASL, "security_protocol": "SASL_PLAINTEXT"},
            sasl_plain_password="p",
            ssl_context=ssl.create_default_context(),
        )


def test_valid_security_settings_pass(tmp_path: Path):
    ca = tmp_path / "ca.pem"
    ca.write_text("pem")
    ConsumerConfig(**BASE, security_protocol="SSL", ssl_cafile=str(ca), ssl_check_hostname=False)
    ConsumerConfig(**BASE, **SASL, sasl_plain_password="p")
    ConsumerConfig(**BASE, security_protocol="SASL_SSL", sasl_mechanism="GSSAPI")
    ConsumerConfig(**BASE, security_protocol="SSL", ssl_context=ssl.create_default_context())
