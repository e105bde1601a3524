"""Manual assignment (``Consumer.assign()``, Java ``KafkaConsumer.assign``): the partitions, the group to commit to.

No membership: a ``StandaloneGroup`` (``kgroup._driver.standalone``) stands for the group thread,
finding the coordinator for the offsets client's commits and look-ups, which carry generation -1
and no member id.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kgroup._driver.commits import OffsetsClient
from kgroup._driver.standalone import StandaloneGroup
from kgroup.errors import IllegalStateError
from kgroup.types import TopicPartition

if TYPE_CHECKING:
    from kgroup._clock import Clock
    from kgroup._driver.mailbox import Mailbox
    from kgroup._io.transport import Transport
    from kgroup.config import ConsumerConfig
    from kgroup.metrics import Recorder

__all__ = ["checked_partitions", "standalone_group"]


def checked_partitions(partitions: Iterable[TopicPartition]) -> frozenset[TopicPartition]:
    """``partitions`` as a set.

    Raises:
        IllegalStateError: an element is not a ``TopicPartition``.

    """
    wanted = frozenset(partitions)
    if not all(isinstance(tp, TopicPartition) for tp in wanted):
        raise IllegalStateError(f"assign() takes TopicPartitions, got {sorted(map(repr, wanted))}")
    return wanted


def standalone_group(
    config: ConsumerConfig,
    transport: Transport,
    mailbox: Mailbox,
    clock: Clock,
    rng: random.Random,
    metrics: Recorder,
) -> tuple[StandaloneGroup, OffsetsClient]:
    """The group a manually assigned consumer commits to, and its offsets client."""
    group = StandaloneGroup(config, transport, clock)
    return group, OffsetsClient(config, transport, group, mailbox, clock, rng, metrics)
