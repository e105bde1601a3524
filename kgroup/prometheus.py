"""``Consumer.metrics()`` as Prometheus metrics, through prometheus-client (``kgroup[prometheus]``).

``register(consumer)`` adds a collector to prometheus-client's default registry (or the one you
pass); every scrape reads ``consumer.metrics()``. Names follow Prometheus' conventions: the
Java name with ``-`` as ``_`` under the ``kafka_consumer_`` prefix, ``*-total`` metrics as
counters (``kafka_consumer_rebalance_total``), the rest as gauges with the unit in the help
text (``kafka_consumer_rebalance_latency_avg``, ms), and ``records-lag`` per partition as
``kafka_consumer_records_lag{topic=...,partition=...}``. Every sample carries the labels
``group`` and ``client_id``. A NaN gauge (no sample in the window) is exported as NaN, which
Prometheus accepts.

Raises ImportError on import when prometheus-client is not installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from kgroup.metrics import METRICS, RECORDS_LAG, lag_key

if TYPE_CHECKING:
    from kgroup.consumer import Consumer

__all__ = ["ConsumerCollector", "exposition", "register"]

PREFIX = "kafka_consumer_"


class ConsumerCollector:
    """A prometheus-client collector reading one consumer's ``metrics()`` at each scrape."""

    def __init__(self, consumer: Consumer[Any, Any]) -> None:
        self._consumer = consumer

    def collect(self) -> Iterator[Metric]:
        """The consumer's metrics now (prometheus-client calls it on every scrape)."""
        consumer = self._consumer
        values = consumer.metrics()
        labels = ["group", "client_id"]
        label_values = [consumer.config.group_id, consumer.config.client_id]
        for name, info in METRICS.items():
            if name not in values:
                continue  # a name the consumer's group protocol does not report (metrics.CLASSIC_ONLY)
            help_text = f"{info.description} ({info.unit}; Java {info.group} {name})"
            family: Metric
            if name.endswith("-total"):
                family = CounterMetricFamily(
                    PREFIX + name[: -len("-total")].replace("-", "_"), help_text, labels=labels
                )
            else:
                family = GaugeMetricFamily(PREFIX + name.replace("-", "_"), help_text, labels=labels)
            family.add_metric(label_values, values[name])
            yield family
        lag = GaugeMetricFamily(
            PREFIX + "records_lag",
            f"{RECORDS_LAG.description} ({RECORDS_LAG.unit}; Java {RECORDS_LAG.group} records-lag)",
            labels=[*labels, "topic", "partition"],
        )
        for tp in sorted(consumer.assignment()):
            value = values.get(lag_key(tp.topic, tp.partition))
            if value is not None:
                lag.add_metric([*label_values, tp.topic, str(tp.partition)], value)
        yield lag


def register(consumer: Consumer[Any, Any], registry: CollectorRegistry = REGISTRY) -> ConsumerCollector:
    """Register a ``ConsumerCollector`` for ``consumer`` (unregister it after ``close()``)."""
    collector = ConsumerCollector(consumer)
    registry.register(collector)
    return collector


def exposition(consumer: Consumer[Any, Any]) -> tuple[str, str]:
    """``consumer``'s metrics in Prometheus' text format, and its content type."""
    registry = CollectorRegistry()
    registry.register(ConsumerCollector(consumer))
    return generate_latest(registry).decode(), CONTENT_TYPE_LATEST
