"""Share groups' dead-letter topic (KIP-1191) against Apache Kafka 4.4, set up from ``GroupAdmin``.

A share group whose group config ``errors.deadletterqueue.topic.name`` names a topic gets the
records its members reject, and those that reach ``share.delivery.count.limit``, written onto that
topic by the broker when they are archived. Kafka's conditions, all set here as a user would:

* the topic's name starts with the brokers' ``errors.deadletterqueue.topic.name.prefix``
  (``dlq.`` by default) and the topic has the topic config
  ``errors.deadletterqueue.group.enable=true`` (``kgroup.testing.create_topic(configs=...)``);
* the group configs ``errors.deadletterqueue.topic.name`` and, to carry the record's key and
  value as well as the context headers, ``errors.deadletterqueue.copy.record.enable=true``
  (``GroupAdmin.alter_group_configs``).

Checked: a record a ``kgroup.ShareConsumer`` rejects is on the dead-letter topic once, with its
key and value and the headers ``__dlq.errors.topic``, ``__dlq.errors.partition``,
``__dlq.errors.offset``, ``__dlq.errors.group`` and ``__dlq.errors.delivery.count``; the records
it accepted are not; a record released until the delivery count limit (2 here) is written there
with delivery count 2 and, without the copy, no value. Runs on ``broker_kinds("apache-kafka")``:
Tansu has neither group configs nor dead-letter topics.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kgroup import AcknowledgeType, Consumer, ConsumerRecord, ShareConsumer, TopicPartition
from kgroup.admin import GroupAdmin
from kgroup.testing import create_topic, produce
from tests.integration.test_group_configs import described_when
from tests.integration.test_share_consumer import wait_for

pytestmark = pytest.mark.broker_kinds("apache-kafka")

DLQ_TOPIC = "errors.deadletterqueue.topic.name"
DLQ_COPY = "errors.deadletterqueue.copy.record.enable"
LIMIT = "share.delivery.count.limit"
RESET = "share.auto.offset.reset"


@pytest.fixture
def admin(kafka_bootstrap: str) -> Iterator[GroupAdmin]:
    with GroupAdmin.connect(kafka_bootstrap, timeout_ms=30000) as group_admin:
        yield group_admin


def dead_letter_topic(bootstrap: str, topic: str) -> str:
    """``dlq.<topic>``, enabled as a dead-letter topic (KIP-1191's topic config)."""
    name = f"dlq.{topic}"
    create_topic(bootstrap, name, 1, configs={"errors.deadletterqueue.group.enable": "true"})
    return name


def configure(admin: GroupAdmin, group_id: str, configs: dict[str, str | int]) -> None:
    """Set ``configs`` on the group and wait until the broker describes them (they travel through the controller)."""
    admin.alter_group_configs(group_id, set=configs)
    described_when(admin, group_id, lambda entries: all(entries[name].value == str(value)
                                                        for name, value in configs.items()))


def read_all(bootstrap: str, topic: str, count: int) -> list[ConsumerRecord[Any, Any]]:
    """The first ``count`` records of partition 0 of ``topic``, then a poll that must find no more."""
    consumer: Consumer[Any, Any] = Consumer(bootstrap_servers=bootstrap, group_id=f"dlq-reader-{uuid.uuid4().hex[:8]}",
                                            enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition(topic, 0)])
        got: list[ConsumerRecord[Any, Any]] = []
        wait_for(f"{count} records on {topic}", lambda: (got.extend(consumer.poll(500)), len(got) >= count)[1])
        got.extend(consumer.poll(1000))
        return got
    finally:
        consumer.close()


def headers(record: ConsumerRecord[Any, Any]) -> dict[str, bytes | None]:
    return dict(record.headers)


def test_a_rejected_record_is_written_to_the_dead_letter_topic(
    kafka_bootstrap: str, topic_factory: Any, group_id_factory: Any, share_consumers: Any, admin: GroupAdmin
) -> None:
    topic = topic_factory(1)
    dlq = dead_letter_topic(kafka_bootstrap, topic)
    group_id = group_id_factory()
    configure(admin, group_id, {DLQ_TOPIC: dlq, DLQ_COPY: "true", RESET: "earliest"})
    produce(kafka_bootstrap, topic, [(0, b"k%d" % i, b"v%d" % i) for i in range(5)])
    consumer: ShareConsumer[Any, Any] = share_consumers(group_id, topic, share_acknowledgement_mode="explicit")
    seen: list[int] = []
    while len(seen) < 5:
        batch = wait_for("the five records", lambda: consumer.poll(500) or None)
        for record in batch:
            seen.append(record.offset)
            consumer.acknowledge(record, AcknowledgeType.REJECT if record.value == b"v2" else AcknowledgeType.ACCEPT)
        outcome = consumer.commit_sync(30000)
        assert all(error is None for error in outcome.values()), outcome
    assert sorted(seen) == [0, 1, 2, 3, 4]

    written = read_all(kafka_bootstrap, dlq, 1)
    assert [(r.key, r.value) for r in written] == [(b"k2", b"v2")], written  # the rejected one, once
    context = headers(written[0])
    assert context["__dlq.errors.topic"] == topic.encode()
    assert context["__dlq.errors.partition"] == b"0"
    assert context["__dlq.errors.offset"] == b"2"
    assert context["__dlq.errors.group"] == group_id.encode()
    assert context["__dlq.errors.delivery.count"] == b"1"


def test_a_record_at_the_delivery_count_limit_is_written_to_the_dead_letter_topic(
    kafka_bootstrap: str, topic_factory: Any, group_id_factory: Any, share_consumers: Any, admin: GroupAdmin
) -> None:
    topic = topic_factory(1)
    dlq = dead_letter_topic(kafka_bootstrap, topic)
    group_id = group_id_factory()
    configure(admin, group_id, {DLQ_TOPIC: dlq, LIMIT: 2, RESET: "earliest"})
    produce(kafka_bootstrap, topic, [(0, b"poison", b"bad"), (0, b"fine", b"good")])
    consumer: ShareConsumer[Any, Any] = share_consumers(group_id, topic, share_acknowledgement_mode="explicit")
    deliveries: list[tuple[bytes, int]] = []
    accepted: list[bytes] = []

    def step() -> bool:
        for record in consumer.poll(500):
            deliveries.append((record.key, record.delivery_count))
            if record.key == b"poison":
                consumer.acknowledge(record, AcknowledgeType.RELEASE)  # given back: delivered again, up to the limit
            else:
                consumer.acknowledge(record, AcknowledgeType.ACCEPT)
                accepted.append(record.key)
        consumer.commit_sync(30000)
        return (b"poison", 2) in deliveries and accepted == [b"fine"]

    wait_for("the poison record delivered twice", step)
    written = read_all(kafka_bootstrap, dlq, 1)
    assert len(written) == 1, written
    context = headers(written[0])
    assert context["__dlq.errors.offset"] == b"0" and context["__dlq.errors.delivery.count"] == b"2", context
    assert written[0].value is None  # no copy of the record without errors.deadletterqueue.copy.record.enable
    assert consumer.poll(1000) == []  # archived: never delivered a third time
    assert deliveries.count((b"poison", 1)) == 1 and deliveries.count((b"poison", 2)) == 1
