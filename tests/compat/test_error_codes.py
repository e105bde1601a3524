"""kgroup's error-code constants (``kgroup._error_codes``) against kafka-python's ``kafka.errors``.

Every constant equals the ``errno`` of the kafka-python error of the same protocol name, and
every code kafka-python knows has a constant, so a typo or a missing code fails here.
"""

from __future__ import annotations

import inspect

import kafka.errors
import pytest

from kgroup import _error_codes as codes

#: where Java's name (kgroup's) differs from kafka-python's ``message``
KAFKA_PYTHON_NAME = {"NONE": "NO_ERROR", "UNKNOWN_SERVER_ERROR": "UNKNOWN"}

BROKER_ERRORS = {
    cls.message: cls
    for cls in vars(kafka.errors).values()
    if inspect.isclass(cls) and issubclass(cls, kafka.errors.BrokerResponseError) and cls.errno is not None
}
#: codes newer than kafka-python 3.0.12's table, with Apache Kafka's value (``Errors`` in kafka-clients 4.x)
NEWER_THAN_KAFKA_PYTHON = {"INVALID_REGULAR_EXPRESSION": 128, "SHARE_SESSION_LIMIT_REACHED": 133}
CONSTANTS = {
    name: value
    for name, value in vars(codes).items()
    if name.isupper() and type(value) is int and name not in NEWER_THAN_KAFKA_PYTHON
}


@pytest.mark.parametrize("name", sorted(CONSTANTS))
def test_each_constant_is_kafka_pythons_errno(name: str) -> None:
    error = BROKER_ERRORS[KAFKA_PYTHON_NAME.get(name, name)]
    assert CONSTANTS[name] == error.errno, f"{name} = {CONSTANTS[name]}, kafka.errors.{error.__name__}.errno"


def test_codes_newer_than_kafka_python_have_kafkas_values() -> None:
    for name, value in NEWER_THAN_KAFKA_PYTHON.items():
        assert getattr(codes, name) == value
        assert name not in BROKER_ERRORS, f"kafka-python knows {name} now: check it like the others"


def test_every_kafka_python_code_has_a_constant() -> None:
    assert {cls.errno for cls in BROKER_ERRORS.values()} <= set(codes.ERROR_NAMES)


def test_names_and_unknown_codes() -> None:
    assert codes.error_name(codes.FENCED_INSTANCE_ID) == "FENCED_INSTANCE_ID"
    assert codes.error_name(-1) == "UNKNOWN_SERVER_ERROR"
    assert codes.error_name(9999) == "UNKNOWN_ERROR_CODE_9999"
    assert len(codes.ERROR_NAMES) == len(CONSTANTS) + len(NEWER_THAN_KAFKA_PYTHON), "two constants share a code"
