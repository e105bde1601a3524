"""Manual assignment: a consumer with no group membership that still commits to its group.

``Consumer.assign(partitions)`` (Java ``KafkaConsumer.assign`` with a ``group.id``) needs the
group's coordinator for OffsetCommit and OffsetFetch, and nothing else of the group: no
JoinGroup, no heartbeats, no listener. ``StandaloneGroup`` stands where the group thread stands
for the poll thread (``snapshot``, ``post``, ``crashed``): it finds the coordinator when asked
(FindCoordinator, again after a failure or a ``CoordinatorDead``, with ``retry_backoff_ms``
between attempts), keeping it in the machines' ``CoordinatorState``, and reports generation -1
with an empty member id, which is what Kafka takes from a consumer outside the group (Java
``ConsumerCoordinator.sendOffsetCommitRequest`` with ``Generation.NO_GENERATION``). Its state is
always STABLE: there is no rebalance to wait for.

Threads: the poll thread reads ``snapshot`` and posts; the FindCoordinator answer arrives on
the network thread and only replaces the ``CoordinatorState`` value.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import logging

import attrs

from kgroup._clock import Clock
from kgroup._io.transport import Transport
from kgroup.config import ConsumerConfig
from kgroup.errors import Api, Disposition, classify, error_name
from kgroup.membership import events as ev
from kgroup.membership.commands import SendFindCoordinator
from kgroup.membership.coordinator import CoordinatorState
from kgroup.membership.states import MemberState
from kgroup.membership.timers import RetryTimer
from kgroup.types import Generation, TopicPartition

__all__ = ["StandaloneGroup", "StandaloneSnapshot"]

log = logging.getLogger(__name__)


@attrs.frozen
class StandaloneSnapshot:
    """What the offsets client and the consumer read of a group they are not a member of."""

    coordinator: int | None
    generation: Generation = attrs.field(factory=Generation)
    state: MemberState = MemberState.STABLE
    fatal: Exception | None = None
    owned: frozenset[TopicPartition] = frozenset()
    subscription: frozenset[str] = frozenset()
    #: no membership, no session
    session_timeout_ms: int | None = None


class StandaloneGroup:
    """The group's coordinator for a manually assigned consumer (``snapshot``, ``post``, ``crashed``)."""

    #: OffsetsClient: commit with generation -1 and an empty member id, no rebalance checks
    manual = True

    def __init__(self, config: ConsumerConfig, transport: Transport, clock: Clock) -> None:
        self._config = config
        self._transport = transport
        self._clock = clock
        self._coordinator = CoordinatorState(lookup=RetryTimer(float("-inf")))
        self._lookup: concurrent.futures.Future[ev.Event] | None = None
        self._ids = itertools.count(1)

    @property
    def snapshot(self) -> StandaloneSnapshot:
        """The coordinator if known (a FindCoordinator goes out when it is not)."""
        if self._coordinator.node_id is None:
            self._find()
        return StandaloneSnapshot(coordinator=self._coordinator.node_id)

    @property
    def crashed(self) -> Exception | None:
        """Never: there is no group thread."""
        return None

    def post(self, event: object) -> None:
        """``CoordinatorDead`` and a commit error that means the coordinator moved forget the coordinator.

        Everything else means nothing here: there is no membership to rejoin or reset.
        """
        reason = None
        if isinstance(event, ev.CoordinatorDead):
            reason = event.reason
        elif isinstance(event, ev.CommitErrorObserved) and (
            classify(Api(event.api), event.code) is Disposition.REDISCOVER
        ):
            reason = f"{event.api} returned {error_name(event.code)}"
        if reason is not None:
            log.info("group %s: coordinator %s marked unknown: %s", self._config.group_id,
                     self._coordinator.node_id, reason)
            self._coordinator = self._coordinator.lost(float("-inf"))

    def metadata_stale(self) -> None:
        """No assignment to recompute: the application chose the partitions."""

    def stop(self, timeout_s: float) -> None:
        """Nothing runs."""

    def _find(self) -> None:
        lookup = self._lookup
        if lookup is not None and not lookup.done():
            return
        now = self._clock.monotonic()
        if not self._coordinator.due(now):
            return
        # the next lookup waits retry_backoff_ms (no jitter), whatever this one's answer
        self._coordinator = self._coordinator.lost(now + self._config.retry_backoff_ms / 1000)
        command = SendFindCoordinator(
            request_id=next(self._ids), key=self._config.group_id, timeout_ms=self._config.request_timeout_ms
        )
        self._lookup = self._transport.send(command, self._config.group_id)
        self._lookup.add_done_callback(self._found)

    def _found(self, future: concurrent.futures.Future[ev.Event]) -> None:
        event = future.result()
        if isinstance(event, ev.FindCoordinatorResponded) and event.error_code == 0:
            self._coordinator = self._coordinator.found(event.node_id)
