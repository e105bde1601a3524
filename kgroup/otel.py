"""OpenTelemetry tracing for kgroup consumers (``kgroup[otel]``: ``opentelemetry-api``).

OpenTelemetry's Kafka instrumentations patch kafka-python's, aiokafka's and confluent-kafka's
consumers, so they never see kgroup's. This module is kgroup's own, after OpenTelemetry's
messaging semantic conventions (the "Semantic conventions for messaging spans" and "for Kafka"
pages of the OpenTelemetry specification):

* :func:`instrument` patches ``kgroup.Consumer.poll`` (which ``kgroup.aio.Consumer`` runs on its
  worker thread, so asyncio consumers are traced too): a poll that returned records gets one
  span, ``poll {topic}`` (``poll`` when the records come from several topics), kind ``CLIENT``,
  from the call to its return, with
  ``messaging.system = "kafka"``, ``messaging.operation.name = "poll"``,
  ``messaging.operation.type = "receive"``, ``messaging.consumer.group.name``,
  ``messaging.client.id``, ``messaging.batch.message_count`` and ``messaging.destination.name``
  (one topic). It links to the context each record's producer sent in its ``traceparent``
  header (W3C Trace Context, through the globally configured propagator), one link per distinct
  producer span. A poll that returned nothing makes no span. :func:`uninstrument` undoes it.
* :func:`process_span` is a context manager for a span per record processed:
  ``process {topic}``, kind ``CONSUMER``, linked to the record's producer context, with the
  record's partition (``messaging.destination.partition.id``), offset
  (``messaging.kafka.offset``), key (``messaging.kafka.message.key``, when it is text) and
  ``messaging.consumer.group.name`` when given. It becomes the current span, so the work's own
  spans are its children.

``poll_columns()`` is not traced (bulk readers read columns, not records).
Tracing costs nothing when no tracer provider is configured (OpenTelemetry's no-op tracer).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import propagate, trace
from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace import Link, Span, SpanKind, Tracer, TracerProvider

from kgroup._clock import wall_time_ns
from kgroup._version import __version__
from kgroup.types import ConsumerRecord

if TYPE_CHECKING:
    from kgroup.consumer import Consumer

__all__ = ["instrument", "is_instrumented", "process_span", "uninstrument"]

_SCOPE = "kgroup"
_ORIGINAL = "_kgroup_otel_original"


class _HeaderGetter(Getter[Sequence[tuple[str, bytes | None]]]):
    """Reads W3C Trace Context (or any propagator's) fields from a record's headers."""

    def get(self, carrier: Sequence[tuple[str, bytes | None]], key: str) -> list[str] | None:
        values = [v.decode("utf-8", "replace") for k, v in carrier if k == key and v is not None]
        return values or None

    def keys(self, carrier: Sequence[tuple[str, bytes | None]]) -> list[str]:
        return [k for k, _ in carrier]


_GETTER = _HeaderGetter()


def producer_link(record: ConsumerRecord[Any, Any]) -> Link | None:
    """The link to the span that produced ``record`` (from its headers), or None."""
    if not record.headers:
        return None
    context = propagate.extract(record.headers, getter=_GETTER)
    span_context = trace.get_current_span(context).get_span_context()
    return Link(span_context) if span_context.is_valid else None


def _links(records: Sequence[ConsumerRecord[Any, Any]]) -> list[Link]:
    links: list[Link] = []
    seen: set[tuple[int, int]] = set()
    for record in records:
        link = producer_link(record)
        if link is not None:
            key = (link.context.trace_id, link.context.span_id)
            if key not in seen:
                seen.add(key)
                links.append(link)
    return links


def _poll_span(tracer: Tracer, consumer: Any, records: Sequence[ConsumerRecord[Any, Any]], start_ns: int) -> None:
    topics = sorted({record.topic for record in records})
    attributes: dict[str, Any] = {
        "messaging.system": "kafka",
        "messaging.operation.name": "poll",
        "messaging.operation.type": "receive",
        "messaging.batch.message_count": len(records),
        "messaging.client.id": consumer.config.client_id,
    }
    if consumer.config.group_id:
        attributes["messaging.consumer.group.name"] = consumer.config.group_id
    if len(topics) == 1:
        attributes["messaging.destination.name"] = topics[0]
    name = f"poll {topics[0]}" if len(topics) == 1 else "poll"
    span = tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes, links=_links(records),
                             start_time=start_ns)
    span.end()


def _tracer(tracer_provider: TracerProvider | None) -> Tracer:
    return trace.get_tracer(_SCOPE, __version__, tracer_provider=tracer_provider)


def _target() -> type[Consumer[Any, Any]]:
    from kgroup.consumer import Consumer

    return Consumer


def is_instrumented() -> bool:
    """True between :func:`instrument` and :func:`uninstrument`."""
    return hasattr(_target().poll, _ORIGINAL)


def instrument(tracer_provider: TracerProvider | None = None) -> None:
    """Trace every ``poll()`` that returns records, of every kgroup consumer (sync and asyncio alike).

    Args:
        tracer_provider: where the spans go; default: the global one
            (``opentelemetry.trace.set_tracer_provider``).

    Instrumenting twice is a no-op (the first provider stays); :func:`uninstrument` undoes it.

    """
    if is_instrumented():
        return
    tracer = _tracer(tracer_provider)
    consumer_cls = _target()
    original = consumer_cls.poll

    @functools.wraps(original)
    def poll(self: Any, timeout_ms: int = 0) -> Any:
        start_ns = wall_time_ns()  # a span's start is wall-clock time (OpenTelemetry's)
        records = original(self, timeout_ms)
        if records:
            _poll_span(tracer, self, records, start_ns)
        return records

    setattr(poll, _ORIGINAL, original)
    setattr(consumer_cls, "poll", poll)  # noqa: B010 (a patch: mypy refuses assigning a method)


def uninstrument() -> None:
    """Undo :func:`instrument` (a no-op when not instrumented)."""
    cls = _target()
    original: Callable[..., Any] | None = getattr(cls.poll, _ORIGINAL, None)
    if original is not None:
        setattr(cls, "poll", original)  # noqa: B010


@contextlib.contextmanager
def process_span(
    record: ConsumerRecord[Any, Any],
    *,
    group_id: str | None = None,
    tracer_provider: TracerProvider | None = None,
) -> Iterator[Span]:
    """A ``process {topic}`` span around the work on one record, linked to its producer's span.

    Args:
        record: a record ``poll()`` returned.
        group_id: the consumer's group, recorded as ``messaging.consumer.group.name``.
        tracer_provider: default: the global one.

    Yields:
        The span, current while the block runs (an exception in the block is recorded on it
        and re-raised, and the span's status set to error).

    """
    attributes: dict[str, Any] = {
        "messaging.system": "kafka",
        "messaging.operation.name": "process",
        "messaging.operation.type": "process",
        "messaging.destination.name": record.topic,
        "messaging.destination.partition.id": str(record.partition),
        "messaging.kafka.offset": record.offset,
    }
    if group_id:
        attributes["messaging.consumer.group.name"] = group_id
    if isinstance(record.key, str):
        attributes["messaging.kafka.message.key"] = record.key
    elif isinstance(record.key, bytes):
        with contextlib.suppress(UnicodeDecodeError):  # a binary key is left out, as the conventions advise
            attributes["messaging.kafka.message.key"] = record.key.decode("utf-8")
    link = producer_link(record)
    with _tracer(tracer_provider).start_as_current_span(
        f"process {record.topic}", kind=SpanKind.CONSUMER, attributes=attributes,
        links=[link] if link is not None else None,
    ) as span:
        yield span
