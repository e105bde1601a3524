"""A typed user program: mypy --strict must accept it (tests/test_typing.py runs it)."""

from __future__ import annotations

import json
from typing import Any

import kgroup
from kgroup.deserializers import Headers, string_deserializer


def parse(data: bytes) -> dict[str, Any]:
    value = json.loads(data)
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


class Schema:
    """A Java-style deserializer that reads a header."""

    def deserialize(self, topic: str, headers: Headers, data: bytes) -> int:
        return int(data) + len(headers)


def typed() -> None:
    consumer = kgroup.Consumer(
        bootstrap_servers="localhost:9092", group_id="orders",
        key_deserializer=string_deserializer(), value_deserializer=parse,
    )
    annotated: kgroup.Consumer[str, dict[str, Any]] = consumer
    annotated.subscribe(["orders"])
    for record in annotated.poll(100):
        key: str | None = record.key
        value: dict[str, Any] | None = record.value
        print(key, value, record.offset)


def java_style() -> None:
    consumer = kgroup.Consumer(bootstrap_servers="localhost:9092", group_id="g", value_deserializer=Schema())
    for record in consumer.poll(0):
        number: int | None = record.value
        print(number)


def raw() -> None:
    with kgroup.Consumer(bootstrap_servers="localhost:9092", group_id="g") as consumer:
        for record in consumer.poll(0):
            data: bytes | None = record.value
            print(data, record.topic_partition)
