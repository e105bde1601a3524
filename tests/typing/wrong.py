"""Must NOT type-check: a JSON consumer's value read as bytes (tests/test_typing.py)."""

from __future__ import annotations

from typing import Any

import kgroup


def parse(data: bytes) -> dict[str, Any]:
    return {}


def wrong() -> None:
    consumer = kgroup.Consumer(bootstrap_servers="localhost:9092", group_id="g", value_deserializer=parse)
    for record in consumer.poll(0):
        data: bytes | None = record.value
        print(data)
