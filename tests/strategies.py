"""Hypothesis strategies shared by kgroup's tests (design.md 2.7: all strategies live here).

Conventions: a strategy is a plain function returning a ``SearchStrategy``; values are kgroup's
own attrs types. Codec strategies produce *canonical* values (topics sorted and unique,
partitions sorted and unique) so that ``decode(encode(x)) == x`` holds exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hypothesis import strategies as st

from kgroup.assignors.base import MemberSubscription
from kgroup.protocol.consumer_protocol import Assignment, Subscription
from kgroup.types import NO_GENERATION, TopicPartition

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

#: Kafka's legal topic characters.
TOPIC_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"


# --- wire values -----------------------------------------------------------------------------


def wire_strings(max_size: int = 12) -> st.SearchStrategy[str]:
    """Any Unicode text (no surrogates) short enough for an int16-length string."""
    return st.text(max_size=max_size)


def topic_names() -> st.SearchStrategy[str]:
    """Kafka-legal topic names, 1-12 characters."""
    return st.text(alphabet=TOPIC_ALPHABET, min_size=1, max_size=12)


def user_data() -> st.SearchStrategy[bytes | None]:
    """None, empty bytes, or a few bytes (null and empty are different on the wire)."""
    return st.none() | st.just(b"") | st.binary(max_size=32)


def topic_partitions(
    topics: st.SearchStrategy[str] | None = None,
    partitions: st.SearchStrategy[int] | None = None,
) -> st.SearchStrategy[TopicPartition]:
    """``TopicPartition`` values; wire-level by default (any text topic, any int32 partition)."""
    return st.builds(
        TopicPartition,
        topics if topics is not None else wire_strings(),
        partitions if partitions is not None else st.integers(INT32_MIN, INT32_MAX),
    )


def canonical_partitions(max_size: int = 12) -> st.SearchStrategy[tuple[TopicPartition, ...]]:
    """Sorted, unique partitions: the order the codec writes and so reads back."""
    return st.frozensets(topic_partitions(), max_size=max_size).map(lambda s: tuple(sorted(s)))


def canonical_topics(max_size: int = 8) -> st.SearchStrategy[tuple[str, ...]]:
    """Sorted, unique topic names (wire-level text)."""
    return st.frozensets(wire_strings(), max_size=max_size).map(lambda s: tuple(sorted(s)))


def wire_versions() -> st.SearchStrategy[int]:
    """ConsumerProtocol versions kgroup writes: 0-3."""
    return st.integers(0, 3)


def subscriptions(version: int | None = None) -> st.SearchStrategy[Subscription]:
    """Canonical ``Subscription`` values with every field set, at ``version`` (default: 0-3)."""
    return st.builds(
        Subscription,
        topics=canonical_topics(),
        user_data=user_data(),
        owned_partitions=canonical_partitions(),
        generation_id=st.integers(INT32_MIN, INT32_MAX),
        rack_id=st.none() | wire_strings(),
        version=st.just(version) if version is not None else wire_versions(),
    )


def assignments(version: int | None = None) -> st.SearchStrategy[Assignment]:
    """Canonical ``Assignment`` values, at ``version`` (default: 0-3)."""
    return st.builds(
        Assignment,
        partitions=canonical_partitions(),
        user_data=user_data(),
        version=st.just(version) if version is not None else wire_versions(),
    )


def as_decoded(s: Subscription, version: int) -> Subscription:
    """What ``decode_subscription(encode_subscription(s, version))`` must return.

    Fields a version cannot carry come back as their defaults.
    """
    return Subscription(
        topics=s.topics,
        user_data=s.user_data,
        owned_partitions=s.owned_partitions if version >= 1 else (),
        generation_id=s.generation_id if version >= 2 else NO_GENERATION,
        rack_id=s.rack_id if version >= 3 else None,
        version=min(version, 3),
    )


# --- assignor inputs -------------------------------------------------------------------------


def topics_with_counts(
    min_topics: int = 1, max_topics: int = 5, max_partitions: int = 12
) -> st.SearchStrategy[dict[str, int]]:
    """``partitions_per_topic``: topic -> partition count (0..max_partitions)."""
    return st.dictionaries(
        topic_names(), st.integers(0, max_partitions), min_size=min_topics, max_size=max_topics
    )


@st.composite
def member_subscriptions(
    draw: st.DrawFn,
    topics: Sequence[str] | Mapping[str, int],
    *,
    min_members: int = 1,
    max_members: int = 8,
    static: bool = True,
    identical: bool = False,
    missing_topics: bool = True,
) -> dict[str, MemberSubscription]:
    """member id -> ``MemberSubscription`` over ``topics``.

    Args:
        topics: the topics that exist (a list, or ``partitions_per_topic``).
        static: some members get a (unique) ``group_instance_id`` (KIP-345).
        identical: every member subscribes to the same topics (for balance properties).
        missing_topics: subscriptions may name a topic that does not exist.
    """
    existing = sorted(topics)
    universe = existing + (["no-such-topic"] if missing_topics else [])
    member_ids = draw(
        st.lists(
            st.text(alphabet="abcdefghij0123456789-", min_size=1, max_size=8),
            min_size=min_members,
            max_size=max_members,
            unique=True,
        )
    )
    shared = draw(st.sets(st.sampled_from(universe), min_size=1)) if identical else None
    instance_ids = draw(st.permutations([f"i-{n}" for n in range(len(member_ids))]))
    out: dict[str, MemberSubscription] = {}
    for member_id, instance_id in zip(member_ids, instance_ids, strict=True):
        subscribed = (
            shared if shared is not None else draw(st.sets(st.sampled_from(universe), min_size=1))
        )
        is_static = static and draw(st.booleans())
        out[member_id] = MemberSubscription(
            member_id=member_id,
            group_instance_id=instance_id if is_static else None,
            topics=frozenset(subscribed),
        )
    return out
