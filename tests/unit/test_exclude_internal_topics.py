"""``exclude_internal_topics`` (Java ``exclude.internal.topics``): what a pattern subscription can match.

A classic-protocol pattern subscription matches the topic names ``KafkaPythonTransport.list_topics``
returns (a Metadata request for every topic): the internal topics are left out unless
``exclude_internal_topics=False``.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

from kgroup._io.kafka_python import topic_names
from kgroup.config import ConsumerConfig

BASE = {"bootstrap.servers": "b:9092", "group.id": "g"}


def _response() -> SimpleNamespace:
    topic = lambda name, internal=False, error=0: SimpleNamespace(name=name, is_internal=internal,  # noqa: E731
                                                                  error_code=error)
    return SimpleNamespace(topics=[topic("orders"), topic("__consumer_offsets", internal=True),
                                   topic("__transaction_state", internal=True), topic("gone", error=3)])


def test_internal_topics_are_listed_only_when_not_excluded() -> None:
    assert topic_names(_response(), exclude_internal=True) == {"orders"}
    assert topic_names(_response(), exclude_internal=False) == {"orders", "__consumer_offsets",
                                                                  "__transaction_state"}


def test_the_java_property_sets_the_field_without_a_warning() -> None:
    assert ConsumerConfig(bootstrap_servers="b:9092", group_id="g").exclude_internal_topics is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = ConsumerConfig.from_properties({**BASE, "exclude.internal.topics": "false"})
        assert config.exclude_internal_topics is False
        assert ConsumerConfig.from_properties({**BASE, "exclude.internal.topics": "true"}).exclude_internal_topics
