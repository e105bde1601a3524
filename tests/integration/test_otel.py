"""``kgroup.otel`` on a real broker: a consumer's spans link to the producers' spans.

Records are produced by kafka-python's ``KafkaProducer`` under OpenTelemetry's own kafka-python
instrumentation (``opentelemetry-instrumentation-kafka-python``), which injects each send span's
context as a ``traceparent`` header; one topic gets records from three send spans' worth of
traces, another a record without headers. A kgroup consumer under ``kgroup.otel.instrument()``
then reads them all: every poll that returned records made one ``poll`` span whose links are
exactly the send spans of its records (a record without headers adds none), and
``process_span`` per record makes a ``process`` span, current inside the block, linked to that
record's send span, with the messaging attributes of OpenTelemetry's conventions. An asyncio
consumer is traced as well, and ``uninstrument()`` stops it all.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kafka import KafkaProducer
from opentelemetry import trace
from opentelemetry.instrumentation.kafka import KafkaInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

import kgroup
import kgroup.aio
import kgroup.otel

from .harness import HEARTBEAT_MS, SESSION_TIMEOUT_MS, wait_until


@pytest.fixture
def spans() -> Any:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    KafkaInstrumentor().instrument(tracer_provider=provider)
    kgroup.otel.instrument(tracer_provider=provider)
    try:
        yield provider, exporter
    finally:
        kgroup.otel.uninstrument()
        KafkaInstrumentor().uninstrument()


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    try:
        for value in values:
            producer.send(topic, value, partition=0).get(timeout=60)
    finally:
        producer.close(10)


def _consumer(bootstrap: str, group: str) -> kgroup.Consumer[Any, Any]:
    return kgroup.Consumer(
        bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=HEARTBEAT_MS, auto_offset_reset="earliest", enable_auto_commit=False,
    )


def test_poll_and_process_spans_link_to_the_producers_spans(
    kafka_bootstrap: str, topic_factory: Any, group_id_factory: Any, spans: Any
) -> None:
    provider, exporter = spans
    topic = topic_factory(1)
    values = [b"v%d" % i for i in range(6)]
    _produce(kafka_bootstrap, topic, values)
    sends = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.PRODUCER]
    assert len(sends) == len(values), [s.name for s in exporter.get_finished_spans()]
    send_contexts = {(s.context.trace_id, s.context.span_id) for s in sends}
    exporter.clear()

    consumer = _consumer(kafka_bootstrap, group_id_factory())
    got: list[Any] = []
    processed: dict[bytes, Any] = {}
    try:
        consumer.subscribe([topic])

        def poll() -> bool:
            for record in consumer.poll(200):
                got.append(record)
                with kgroup.otel.process_span(record, group_id=consumer.config.group_id,
                                              tracer_provider=provider) as span:
                    assert trace.get_current_span() is span  # the work's own spans are its children
                    processed[record.value] = span
            return len(got) >= len(values)

        wait_until(poll, 60, f"{len(values)} records")
    finally:
        consumer.close()

    finished = exporter.get_finished_spans()
    polls = [s for s in finished if s.name == f"poll {topic}"]
    assert polls, [s.name for s in finished]
    linked = set()
    for span in polls:
        assert span.kind is SpanKind.CLIENT
        attrs = dict(span.attributes or {})
        assert attrs["messaging.system"] == "kafka"
        assert attrs["messaging.operation.name"] == "poll"
        assert attrs["messaging.operation.type"] == "receive"
        assert attrs["messaging.destination.name"] == topic
        assert attrs["messaging.consumer.group.name"] == consumer.config.group_id
        assert attrs["messaging.client.id"] == consumer.config.client_id
        assert attrs["messaging.batch.message_count"] == len(span.links)  # one send span per record here
        linked |= {(link.context.trace_id, link.context.span_id) for link in span.links}
    assert sum(dict(s.attributes or {})["messaging.batch.message_count"] for s in polls) == len(values)
    assert linked == send_contexts
    process = [s for s in finished if s.name == f"process {topic}"]
    assert len(process) == len(values)
    for record in got:
        span = processed[record.value]
        assert span.kind is SpanKind.CONSUMER
        attrs = dict(span.attributes or {})
        assert attrs["messaging.kafka.offset"] == record.offset
        assert attrs["messaging.destination.partition.id"] == "0"
        assert len(span.links) == 1
        link = span.links[0].context
        assert (link.trace_id, link.span_id) in send_contexts
    # each record's process span links to its own send span: the links are distinct
    assert len({(s.links[0].context.trace_id, s.links[0].context.span_id) for s in process}) == len(values)


def test_a_record_without_trace_context_and_an_asyncio_consumer(
    kafka_bootstrap: str, topic_factory: Any, group_id_factory: Any, spans: Any
) -> None:
    provider, exporter = spans
    topic = topic_factory(1)
    KafkaInstrumentor().uninstrument()  # this producer sends no traceparent header
    _produce(kafka_bootstrap, topic, [b"plain"])
    exporter.clear()

    async def consume() -> list[Any]:
        consumer: kgroup.aio.Consumer[Any, Any] = kgroup.aio.Consumer(
            bootstrap_servers=kafka_bootstrap, group_id=group_id_factory(), session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_MS, auto_offset_reset="earliest", enable_auto_commit=False,
        )
        try:
            await consumer.subscribe([topic])
            records: list[Any] = []
            deadline = asyncio.get_running_loop().time() + 60
            while not records and asyncio.get_running_loop().time() < deadline:
                records = await consumer.poll(200)
            return records
        finally:
            await consumer.close()

    records = asyncio.run(consume())
    assert [r.value for r in records] == [b"plain"]
    polls = [s for s in exporter.get_finished_spans() if s.name == f"poll {topic}"]
    assert len(polls) == 1 and polls[0].links == ()  # traced, with no link to make
    with kgroup.otel.process_span(records[0], tracer_provider=provider) as span:
        pass
    assert span.links == ()  # type: ignore[attr-defined]

    kgroup.otel.uninstrument()
    assert not kgroup.otel.is_instrumented()
    exporter.clear()
    consumer = _consumer(kafka_bootstrap, group_id_factory())
    try:
        consumer.subscribe([topic])
        got: list[Any] = []
        wait_until(lambda: bool(got.extend(consumer.poll(200)) or got), 60, "the record again")
    finally:
        consumer.close()
    assert not [s for s in exporter.get_finished_spans() if s.name.startswith("poll")]
