"""Deserializers inside poll(): typed records, and a failing record surfaced as Java does.

On the deterministic simulator (its records' values are the offset as ASCII digits, keys null):
``value_deserializer=int`` hands out ints, a null key reaches no deserializer, a Java-style
``Deserializer`` object sees the topic and headers, and a deserializer that raises on one
record makes ``poll()`` return the records before it, then raise
``RecordDeserializationError`` (topic, partition, offset) on every call until the application
seeks past it, with nothing skipped and nothing committed past it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import kgroup
from kgroup.deserializers import Headers, json_deserializer, string_deserializer
from kgroup.testing.simulation import SimulatedGroup

TOPIC = "events"


def test_value_deserializer_types_the_records() -> None:
    group = SimulatedGroup({TOPIC: 1}, seed=1)
    seen: list[Any] = []

    def app(consumer: kgroup.Consumer[bytes, int], running: Callable[[], bool]) -> None:
        consumer.subscribe([TOPIC])
        while running():
            seen.extend((r.key, r.value) for r in consumer.poll(100))
        consumer.close()

    group.add_member("a", app, value_deserializer=int)  # type: ignore[arg-type]
    group.produce(TOPIC, 5)
    assert group.run_until(lambda: len(seen) == 5, 30)
    assert seen == [(None, i) for i in range(5)]
    group.check()


class _WithTopic:
    """A Java-style deserializer: deserialize(topic, headers, data)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Headers]] = []

    def deserialize(self, topic: str, headers: Headers, data: bytes) -> str:
        self.calls.append((topic, headers))
        return f"{topic}:{data.decode()}"


def test_a_java_style_deserializer_sees_topic_and_headers() -> None:
    group = SimulatedGroup({TOPIC: 1}, seed=2)
    deserializer = _WithTopic()
    seen: list[Any] = []

    def app(consumer: kgroup.Consumer[bytes, str], running: Callable[[], bool]) -> None:
        consumer.subscribe([TOPIC])
        while running():
            seen.extend(r.value for r in consumer.poll(100))
        consumer.close()

    group.add_member("a", app, value_deserializer=deserializer)  # type: ignore[arg-type]
    group.produce(TOPIC, 2)
    assert group.run_until(lambda: len(seen) == 2, 30)
    assert seen == [f"{TOPIC}:0", f"{TOPIC}:1"]
    assert deserializer.calls == [(TOPIC, ()), (TOPIC, ())]
    group.check()


def test_a_failing_record_is_raised_with_its_offset_and_can_be_skipped() -> None:
    group = SimulatedGroup({TOPIC: 1}, seed=3)
    seen: list[int] = []
    errors: list[kgroup.RecordDeserializationError] = []

    def picky(data: bytes) -> int:
        value = int(data)
        if value == 3:
            raise ValueError("not a valid order")
        return value

    def app(consumer: kgroup.Consumer[bytes, int], running: Callable[[], bool]) -> None:
        consumer.subscribe([TOPIC])
        while running():
            try:
                records = consumer.poll(100)
            except kgroup.RecordDeserializationError as error:
                errors.append(error)
                if len(errors) == 2:  # seen twice: the position stayed at the bad record
                    consumer.seek(error.topic_partition, error.offset + 1)  # type: ignore[arg-type]
                continue
            seen.extend(r.value for r in records if r.value is not None)
            if records:
                consumer.commit()
        consumer.close()

    consumer = group.add_member("a", app, value_deserializer=picky)
    group.produce(TOPIC, 6)
    assert group.run_until(lambda: len(seen) == 5, 30)
    assert seen == [0, 1, 2, 4, 5]
    tp = kgroup.TopicPartition(TOPIC, 0)
    assert [(e.topic_partition, e.offset, e.origin) for e in errors] == [(tp, 3, "value")] * 2
    assert isinstance(errors[0].__cause__, ValueError)
    assert "offset 3" in str(errors[0]) and "value deserializer failed" in str(errors[0])
    group.run_for(2)
    assert consumer.position(tp) == 6
    # the checker sees exactly the one record the application chose to skip, nothing else
    violations = [str(v) for v in group.violations()]
    assert violations and all("offset 3 was never handed to any application" in v for v in violations), violations


def test_ready_made_deserializers() -> None:
    assert string_deserializer()("żółw".encode()) == "żółw"
    assert json_deserializer()(b'{"a": [1, 2]}') == {"a": [1, 2]}
    with pytest.raises(TypeError, match="must be callable"):
        kgroup.Consumer(bootstrap_servers="localhost:9092", group_id="g", value_deserializer=42)  # type: ignore[arg-type]
