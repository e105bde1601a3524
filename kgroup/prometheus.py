"""``Consumer.metrics()`` as Prometheus metrics, through prometheus-client (``kgroup[prometheus]``).

``register(consumer)`` adds the consumer to prometheus-client's default registry (or the one you
pass). Any number of consumers of one process share a registry: each registry gets one
collector, which at every scrape reads ``metrics()`` of each consumer registered in it and gives
one sample per consumer under each name, told apart by the labels ``group`` and ``client_id``
(give consumers of one group in one process distinct ``client_id`` values, as Java's generated
``client.id`` are distinct). A consumer leaves the registry when it closes, when it is garbage
collected, or with ``unregister(consumer)``. Names follow Prometheus' conventions: the Java name
with ``-`` as ``_`` under the ``kafka_consumer_`` prefix, ``*-total`` metrics as counters
(``kafka_consumer_rebalance_total``), the rest as gauges with the unit in the help text
(``kafka_consumer_rebalance_latency_avg``, ms), and ``records-lag`` per partition as
``kafka_consumer_records_lag{topic=...,partition=...}``. A NaN gauge (no sample in the window) is
exported as NaN, which Prometheus accepts.

``exposition()`` is what the probe server's ``/metrics`` answers (``kgroup.health``): the default
registry, so the process's other metrics are served beside the consumers'.

Raises ImportError on import when prometheus-client is not installed.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from kgroup.errors import KGroupError
from kgroup.metrics import METRICS, RECORDS_LAG, lag_key

if TYPE_CHECKING:
    from kgroup.config import ConsumerConfig
    from kgroup.types import TopicPartition

__all__ = ["ConsumerCollector", "exposition", "register", "unregister"]

PREFIX = "kafka_consumer_"


class Collected(Protocol):
    """What the collector reads of a consumer (``kgroup.Consumer`` is one)."""

    @property
    def config(self) -> ConsumerConfig:
        """The consumer's configuration (its ``group_id`` and ``client_id`` label the samples)."""
        ...

    def metrics(self) -> dict[str, float]:
        """``Consumer.metrics()``."""
        ...

    def assignment(self) -> frozenset[TopicPartition]:
        """``Consumer.assignment()``."""
        ...


class ConsumerCollector:
    """A prometheus-client collector of the consumers registered in one registry.

    Made by ``register()`` (one per registry); ``ConsumerCollector(consumer)`` alone collects
    that one consumer.
    """

    def __init__(self, *consumers: Collected) -> None:
        self._lock = threading.Lock()
        self._pinned = consumers  # given here: collected for the collector's life
        self._consumers: weakref.WeakSet[Collected] = weakref.WeakSet(consumers)

    def add(self, consumer: Collected) -> None:
        """Collect ``consumer`` too (held weakly: a consumer garbage collected drops out)."""
        with self._lock:
            self._consumers.add(consumer)

    def discard(self, consumer: Collected) -> None:
        """Stop collecting ``consumer`` (no error if it was not collected)."""
        with self._lock:
            self._consumers.discard(consumer)

    def consumers(self) -> list[Collected]:
        """The consumers collected, in a stable order (by group, then client id)."""
        with self._lock:
            live = [c for c in self._consumers if not getattr(c, "_closed", False)]  # closed ones leave
        return sorted(live, key=lambda c: (c.config.group_id or "", c.config.client_id))

    def collect(self) -> Iterator[Metric]:
        """The consumers' metrics now (prometheus-client calls it on every scrape)."""
        labels = ["group", "client_id"]
        read: list[tuple[Collected, list[str], dict[str, float]]] = []
        for consumer in self.consumers():
            try:
                values = consumer.metrics()
            except KGroupError:
                continue  # closed between the listing and the read
            read.append((consumer, [consumer.config.group_id or "", consumer.config.client_id], values))
        for name, info in METRICS.items():
            help_text = f"{info.description} ({info.unit}; Java {info.group} {name})"
            family: Metric
            if name.endswith("-total"):
                family = CounterMetricFamily(
                    PREFIX + name[: -len("-total")].replace("-", "_"), help_text, labels=labels
                )
            else:
                family = GaugeMetricFamily(PREFIX + name.replace("-", "_"), help_text, labels=labels)
            reported = False
            for _consumer, label_values, values in read:
                if name in values:  # not a name the consumer's protocol leaves out (metrics.CLASSIC_ONLY)
                    family.add_metric(label_values, values[name])
                    reported = True
            if reported:
                yield family
        lag = GaugeMetricFamily(
            PREFIX + "records_lag",
            f"{RECORDS_LAG.description} ({RECORDS_LAG.unit}; Java {RECORDS_LAG.group} records-lag)",
            labels=[*labels, "topic", "partition"],
        )
        for consumer, label_values, values in read:
            for tp in sorted(consumer.assignment()):
                value = values.get(lag_key(tp.topic, tp.partition))
                if value is not None:
                    lag.add_metric([*label_values, tp.topic, str(tp.partition)], value)
        yield lag


_collectors: weakref.WeakKeyDictionary[CollectorRegistry, ConsumerCollector] = weakref.WeakKeyDictionary()
_collectors_lock = threading.Lock()


def register(consumer: Collected, registry: CollectorRegistry = REGISTRY) -> ConsumerCollector:
    """Add ``consumer`` to ``registry`` (prometheus-client's default one unless given).

    Registering a second consumer, or the same one again, is fine: the registry's one kgroup
    collector serves them all. Returns that collector.
    """
    with _collectors_lock:
        collector = _collectors.get(registry)
        if collector is None:
            collector = ConsumerCollector()
            registry.register(collector)
            _collectors[registry] = collector
    collector.add(consumer)
    return collector


def unregister(consumer: Collected, registry: CollectorRegistry = REGISTRY) -> None:
    """Take ``consumer`` out of ``registry`` (a closed consumer leaves it by itself)."""
    with _collectors_lock:
        collector = _collectors.get(registry)
    if collector is not None:
        collector.discard(consumer)


def exposition(consumer: Collected) -> tuple[str, str]:
    """The default registry in Prometheus' text format, ``consumer`` registered in it, and its content type."""
    register(consumer)
    return generate_latest(REGISTRY).decode(), CONTENT_TYPE_LATEST
