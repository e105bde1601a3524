"""ConsumerConfig.from_properties: a Java consumer.properties, Java's keys, the table in the docs."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

from kgroup import ConfigError, ConsumerConfig
from kgroup._java_properties import IGNORED, JAVA_ASSIGNORS, REJECTED, parse_properties

DATA = Path(__file__).parent / "data"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
BASE = {"bootstrap.servers": "h:1", "group.id": "g"}


@pytest.fixture
def java_properties_file(tmp_path: Path) -> Path:
    truststore = tmp_path / "ca.pem"
    truststore.write_text("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
    text = (DATA / "consumer.properties").read_text(encoding="iso-8859-1").replace("${TRUSTSTORE}", str(truststore))
    path = tmp_path / "consumer.properties"
    path.write_text(text, encoding="iso-8859-1")
    return path


def test_a_real_java_consumer_properties_file_loads(java_properties_file: Path):
    with pytest.warns(UserWarning, match="Java consumer properties ignored") as record:
        cfg = ConsumerConfig.from_properties(java_properties_file)
    assert cfg.bootstrap_servers == "broker-1.example.internal:9093,broker-2.example.internal:9093"
    assert cfg.group_id == "billing-events"
    assert cfg.client_id == "billing-consumer"
    assert cfg.group_instance_id is None  # "group.instance.id=" is Java's "not set"
    assert [a.name for a in cfg.assignors] == ["cooperative-sticky"]
    assert cfg.max_poll_records == 200
    assert cfg.enable_auto_commit is False
    assert cfg.auto_offset_reset == "earliest"
    assert cfg.isolation_level == "read_committed"
    assert cfg.security_protocol == "SASL_SSL"
    assert cfg.sasl_mechanism == "SCRAM-SHA-512"
    assert cfg.sasl_plain_username == "billing"
    # \u00e9 unescaped by the properties format, \" by the JAAS one
    assert cfg.sasl_plain_password == 's3cr\u00e9t="quoted"'
    assert cfg.ssl_cafile == str(java_properties_file.parent / "ca.pem")
    assert cfg.ssl_check_hostname is True
    # one warning, naming only the key whose value asks for something kgroup does not do
    (warning,) = record.list
    message = str(warning.message)
    assert "key.deserializer" in message
    for quiet in ("value.deserializer", "interceptor.classes", "allow.auto.create.topics", "client.dns.lookup"):
        assert quiet not in message
    assert "s3cr" not in repr(cfg)


def test_properties_format_follows_java_util_properties():
    text = (
        "# comment\n"
        "! also a comment\n"
        "  a = 1\n"
        "b:2\n"
        "c 3\n"
        "d=\n"
        "e=x\\\n"
        "    y\\\n"
        "   z\n"
        "f\\=g=h\n"
        "tab=\\tT\\u0041\\\\\n"
        "a=last wins\n"
    )
    assert parse_properties(text) == {
        "a": "last wins",
        "b": "2",
        "c": "3",
        "d": "",
        "e": "xyz",
        "f=g": "h",
        "tab": "\tTA\\",
    }


@pytest.mark.parametrize(("java", "name"), sorted(JAVA_ASSIGNORS.items()))
def test_java_assignor_class_names_map_to_kgroup_assignors(java, name):
    cfg = ConsumerConfig.from_properties({**BASE, "partition.assignment.strategy": java})
    assert [a.name for a in cfg.assignors] == [name]


def test_java_default_assignor_list_with_spaces():
    cfg = ConsumerConfig.from_properties(
        {
            **BASE,
            "partition.assignment.strategy": "org.apache.kafka.clients.consumer.RangeAssignor, "
            "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
        }
    )
    assert [a.name for a in cfg.assignors] == ["range", "cooperative-sticky"]


def test_custom_java_assignor_class_is_a_config_error():
    with pytest.raises(ConfigError, match=r"Java class kgroup cannot run") as info:
        ConsumerConfig.from_properties({**BASE, "partition.assignment.strategy": "com.example.MyAssignor"})
    assert info.value.field == "partition.assignment.strategy"


def test_group_protocol_is_javas_any_case():
    assert ConsumerConfig.from_properties({**BASE, "group.protocol": "consumer"}).group_protocol == "consumer"
    assert ConsumerConfig.from_properties({**BASE, "group.protocol": "CLASSIC"}).group_protocol == "classic"
    with pytest.raises(ConfigError, match=r"group\.remote\.assignor cannot be set|cannot be set when"):
        ConsumerConfig.from_properties({**BASE, "group.remote.assignor": "uniform"})


@pytest.mark.parametrize(
    ("key", "value", "warns"),
    [
        ("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer", False),
        ("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer", True),
        ("allow.auto.create.topics", "false", False),
        ("allow.auto.create.topics", "true", True),
        ("client.dns.lookup", "use_all_dns_ips", False),
        ("client.dns.lookup", "resolve_canonical_bootstrap_servers_only", True),
        ("interceptor.classes", "", False),
        ("interceptor.classes", "com.example.AuditInterceptor", True),
        ("metric.reporters", "org.apache.kafka.common.metrics.JmxReporter", True),
        ("sasl.oauthbearer.token.endpoint.url", "https://idp.example/token", True),
    ],
)
def test_java_client_side_keys_are_ignored_with_a_warning_only_when_it_matters(key, value, warns):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        ConsumerConfig.from_properties({**BASE, key: value})
    ignored = [w for w in record if "ignored by kgroup" in str(w.message)]
    assert bool(ignored) is warns
    if warns:
        assert key in str(ignored[0].message)


@pytest.mark.parametrize("key", sorted(REJECTED))
def test_java_keys_kgroup_cannot_honour_are_config_errors(key):
    with pytest.raises(ConfigError) as info:
        ConsumerConfig.from_properties({**BASE, key: "something"})
    assert info.value.field == key


def test_jks_trust_store_is_a_config_error_saying_convert_to_pem(tmp_path: Path):
    with pytest.raises(ConfigError, match="PEM") as info:
        ConsumerConfig.from_properties({**BASE, "ssl.truststore.location": str(tmp_path / "t.jks")})
    assert info.value.field == "ssl.truststore.type"


def test_jaas_of_another_login_module_is_a_config_error():
    with pytest.raises(ConfigError, match=r"OAuthBearerLoginModule.*not supported") as info:
        ConsumerConfig.from_properties(
            {
                **BASE,
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "OAUTHBEARER",
                "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
            }
        )
    assert info.value.field == "sasl.jaas.config"


def test_sasl_without_mechanism_gets_javas_default_gssapi():
    cfg = ConsumerConfig.from_properties({**BASE, "security.protocol": "SASL_PLAINTEXT"})
    assert cfg.sasl_mechanism == "GSSAPI"


def test_misspelled_property_suggests_the_known_key():
    with pytest.raises(ConfigError, match=r"did you mean 'max\.poll\.records'\?") as info:
        ConsumerConfig.from_properties({**BASE, "max.pol.records": "10"})
    assert info.value.field == "max.pol.records"


def test_docs_table_lists_every_java_key_kgroup_translates_ignores_or_rejects():
    text = DOCS.read_text()
    documented = set(re.findall(r"^\| `([a-z0-9.]+)`", text, re.M))
    expected = set(IGNORED) | set(REJECTED) | {
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
    assert expected <= documented, sorted(expected - documented)
