"""instance_id_from_env: stable ids for static members (KIP-345, seed 003)."""

from __future__ import annotations

import warnings

import pytest

from kgroup import ConfigError, UnstableInstanceIdWarning, instance_id_from_env


def test_statefulset_pod_name_from_hostname_is_returned_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert instance_id_from_env(environ={"HOSTNAME": "orders-0\n"}) == "orders-0"


def test_a_named_variable_is_read_instead_of_hostname():
    env = {"HOSTNAME": "ignored", "POD_NAME": "orders-2"}
    assert instance_id_from_env("POD_NAME", environ=env) == "orders-2"


@pytest.mark.parametrize("env", [{}, {"HOSTNAME": ""}, {"HOSTNAME": "   "}])
def test_unset_or_empty_is_a_config_error(env):
    with pytest.raises(ConfigError, match="HOSTNAME is unset or empty") as info:
        instance_id_from_env(environ=env)
    assert info.value.field == "group_instance_id"


@pytest.mark.parametrize("value", ["orders 0", "orders/0", "ordérs-0", "a:b"])
def test_characters_kafka_rejects_are_a_config_error(value):
    with pytest.raises(ConfigError, match="characters Kafka rejects"):
        instance_id_from_env(environ={"HOSTNAME": value})


def test_longer_than_kafkas_249_characters_is_a_config_error():
    assert instance_id_from_env(environ={"HOSTNAME": "a" * 249}) == "a" * 249
    with pytest.raises(ConfigError, match="250 characters"):
        instance_id_from_env(environ={"HOSTNAME": "a" * 250})


@pytest.mark.parametrize("value", ["orders-7d4b9c6f8d-x2k9p", "web-api-5c9f7b8d6-qwz2x"])
def test_deployment_pod_names_warn(value):
    with pytest.warns(UnstableInstanceIdWarning, match="Deployment pod name"):
        assert instance_id_from_env(environ={"HOSTNAME": value}) == value


@pytest.mark.parametrize("value", ["orders-0", "orders-12", "host.example.com", "worker-abcde-fghij"])
def test_stable_looking_names_do_not_warn(value):
    # "abcde" holds vowels, which Kubernetes' random suffix alphabet never produces
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        instance_id_from_env(environ={"HOSTNAME": value})
