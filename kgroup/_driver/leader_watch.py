"""The classic group leader's watch: metadata against its assignment, and a returning static leader's check.

Java's leader (``ConsumerCoordinator``) keeps the metadata snapshot it assigned from and rejoins
when the metadata of the group's whole subscription no longer matches it
(``rejoinNeededOrPending``, ``updateGroupSubscription``): partitions added, a topic created or
deleted. A static leader that comes back and skips the assignment (KIP-814) takes the metadata
of that moment as its snapshot, and kgroup also checks (one DescribeGroups) that every partition
of the group's topics has an owner. ``LeaderWatch`` does both for the ``GroupThread`` that owns
it: it runs on that thread only, takes its own inbox items (``handle``) and decides nothing
itself: a change becomes a ``RequestRejoin`` event for the machine. Not used under the consumer
protocol, whose coordinator watches the metadata.
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Callable
from typing import Any

import attrs

from kgroup._clock import Clock
from kgroup._driver.metadata import MetadataCache, MetadataFuture
from kgroup._io.transport import Transport
from kgroup.config import ConsumerConfig
from kgroup.membership import events as ev
from kgroup.membership.commands import WatchGroupTopics
from kgroup.membership.core import MemberSnapshot
from kgroup.membership.states import MemberState
from kgroup.protocol.consumer_protocol import decode_assignment
from kgroup.types import TopicPartition, tp_key

__all__ = ["LeaderWatch", "ThreadView"]

log = logging.getLogger(__name__)


@attrs.frozen
class _MetadataRefreshed:
    """A periodic metadata refresh completed (an inbox item of this thread only)."""

    future: MetadataFuture


@attrs.frozen
class _Snapshot:
    """Metadata for a skipped assignment's snapshot arrived (an inbox item of this thread only)."""

    generation_id: int
    future: MetadataFuture
    #: the group's subscribed topics (also any not in the metadata yet)
    topics: frozenset[str]


@attrs.frozen
class _Described:
    """DescribeGroups answered for a returning static leader's ownership check (this thread only)."""

    command: WatchGroupTopics
    future: concurrent.futures.Future[Any]


#: DescribeGroups attempts of one ownership check (a failed one is retried after a backoff)
_OWNERSHIP_ATTEMPTS = 5


@attrs.frozen
class _Coverage:
    """The description and the topics' metadata, both in hand (this thread only)."""

    generation_id: int
    group: Any
    metadata: MetadataFuture


@attrs.frozen
class ThreadView:
    """What the watch sees of its group thread: its inbox and the machine's snapshots."""

    #: puts an item in the group thread's inbox (any thread)
    post: Callable[[object], None]
    #: the snapshot the group thread last published
    published: Callable[[], MemberSnapshot]
    #: the machine's snapshot now
    current: Callable[[], MemberSnapshot]


class LeaderWatch:
    """The leader's metadata watch and the returning static leader's ownership check (group thread only).

    Args:
        config: the consumer's settings (group id, ``metadata_max_age_ms``, backoffs, timeouts).
        transport: for DescribeGroups.
        metadata: the group thread's metadata cache.
        clock: the group thread's clock.
        thread: the group thread's inbox and snapshots.

    """

    def __init__(
        self,
        config: ConsumerConfig,
        transport: Transport,
        metadata: MetadataCache,
        clock: Clock,
        thread: ThreadView,
    ) -> None:
        self._config, self._transport, self._metadata, self._clock = config, transport, metadata, clock
        self._post, self._published, self._current = thread.post, thread.published, thread.current
        #: (generation id, partition counts, the group's subscribed topics) of the last
        #: assignment this member made as leader: a subscribed topic missing then has no count
        self._assigned: tuple[int, dict[str, int], frozenset[str]] | None = None
        #: a returning static leader's ownership check waiting for the member to be STABLE
        self._coverage: _Coverage | None = None
        #: an ownership check whose DescribeGroups failed: (command, attempts so far, not before)
        self._ownership_retry: tuple[WatchGroupTopics, int, float] | None = None

    def assigned(self, generation_id: int, counts: dict[str, int], topics: frozenset[str]) -> None:
        """Record what this member assigned as leader: ``counts`` (partitions per topic) for the group's ``topics``."""
        self._assigned = (generation_id, counts, topics)

    def handle(self, item: object) -> bool:
        """Take one of this watch's inbox items; False for any other item."""
        if isinstance(item, _MetadataRefreshed):
            self._on_metadata_refreshed(item)
        elif isinstance(item, _Snapshot):
            self._on_snapshot(item)
        elif isinstance(item, _Described):
            self._on_described(item)
        elif isinstance(item, _Coverage):
            self._on_coverage(item)
        else:
            return False
        return True

    def after_step(self) -> None:
        """What is due after each step of the group thread: a refresh, a retried check, a verdict."""
        self._maybe_refresh_metadata()
        self._maybe_retry_ownership()
        self._maybe_check_coverage()

    def group_topics(self) -> frozenset[str]:
        """The topics whose metadata this member watches.

        Its subscription, and as leader every topic any member subscribes to, also one that did
        not exist when it assigned (Java ``ConsumerCoordinator.updateGroupSubscription``: the
        leader's metadata covers the group's subscription, so a topic that appears changes the
        metadata snapshot and the leader rejoins).
        """
        topics = self._published().subscription
        if self._assigned is not None and self._assigned[0] == self._published().generation.generation_id:
            topics = topics | frozenset(self._assigned[1]) | self._assigned[2]
        return topics

    def _maybe_refresh_metadata(self) -> None:
        """Refresh the watched topics' metadata every ``metadata_max_age_ms``.

        The leader rejoins when a partition count differs from what it assigned (Java
        ``ConsumerCoordinator.rejoinNeededOrPending``: the assignment snapshot no longer matches
        the metadata snapshot, e.g. partitions were added to a topic). It watches the whole
        group's subscription, not only its own topics, so a group whose members subscribe to
        different topics is not rebalanced when nothing changed.
        """
        snapshot = self._published()
        if snapshot.state is not MemberState.STABLE or not snapshot.subscription:
            return
        topics = self.group_topics()
        if not self._metadata.due(topics):
            return
        future = self._metadata.refresh(topics)
        # completed on the IO thread: only hand the result over to this thread
        future.add_done_callback(lambda f: self._post(_MetadataRefreshed(f)))

    def _on_metadata_refreshed(self, item: _MetadataRefreshed) -> None:
        assigned = self._assigned
        if item.future.exception() is not None or assigned is None:
            return
        generation_id, counts, topics = assigned
        if self._published().generation.generation_id != generation_id:
            return
        now_counts = {topic: len(parts) for topic, parts in item.future.result().items()}
        watched = set(counts) | topics
        changed = sorted(t for t in watched if counts.get(t) != now_counts.get(t))
        if changed:
            self._post(ev.RequestRejoin(f"metadata changed since the last assignment (topics {changed})"))

    def watch(self, command: WatchGroupTopics) -> None:
        """A static leader skipped the assignment: watch metadata against a snapshot.

        A leader that assigned before (this process) keeps the partition counts it assigned
        from, so a change it had not acted on yet still makes it rejoin; a restarted one takes
        the current metadata, as Java's ``onLeaderElected`` does with ``skipAssignment``
        (``assignmentSnapshot = metadataSnapshot``).
        """
        self._ownership_retry = None
        self._check_ownership(command)
        if self._assigned is not None:
            self._assigned = (command.generation_id, self._assigned[1], command.topics)
            return
        future = self._metadata.get(command.topics)
        future.add_done_callback(lambda f: self._post(_Snapshot(command.generation_id, f, command.topics)))

    def _check_ownership(self, command: WatchGroupTopics) -> None:
        """After a skipped assignment, make sure every partition of the group's topics has an owner.

        The group keeps the assignment of its last rebalance when a static leader returns
        (KIP-814), and three things can leave partitions without an owner there, Java's
        client noticing none of them: a cooperative rebalance's second round that the leader's
        previous process never joined (it revoked, then crashed); partitions created before
        this process started; topics only this process's new subscription names. One
        DescribeGroups shows the group's assignment; a partition no member holds makes the
        leader rejoin (``_on_coverage``). Best effort: any failure leaves things as Java would.
        """
        snap = self._current()
        if snap.coordinator is None or not command.topics:
            return
        try:
            future = self._transport.describe_groups(
                (self._config.group_id,), snap.coordinator, self._config.request_timeout_ms
            )
        except Exception:  # a transport without DescribeGroups: skip the check
            log.debug("group %s: ownership check skipped", self._config.group_id, exc_info=True)
            return
        future.add_done_callback(lambda f: self._post(_Described(command, f)))

    def _on_described(self, item: _Described) -> None:
        group = None
        if item.future.exception() is None:
            group = next((g for g in item.future.result() if g.group_id == self._config.group_id), None)
        if group is None or group.error_code != 0:
            # a lost request or a coordinator moving (NOT_COORDINATOR, ...): ask again after a
            # backoff, a few times, while the generation lasts
            command = item.command
            attempts = 1 if self._ownership_retry is None else self._ownership_retry[1] + 1
            if attempts <= _OWNERSHIP_ATTEMPTS:
                backoff_s = min(self._config.retry_backoff_ms * 2 ** (attempts - 1), self._config.retry_backoff_max_ms)
                self._ownership_retry = (command, attempts, self._clock.monotonic() + backoff_s / 1000)
            else:
                self._ownership_retry = None
            return
        self._ownership_retry = None
        metadata = self._metadata.get(item.command.topics)
        metadata.add_done_callback(lambda f: self._post(_Coverage(item.command.generation_id, group, f)))

    def _maybe_retry_ownership(self) -> None:
        """Send a failed ownership check's DescribeGroups again once its backoff passed."""
        pending = self._ownership_retry
        if pending is None:
            return
        command, _, not_before = pending
        snap = self._current()
        if snap.generation.generation_id != command.generation_id:
            self._ownership_retry = None  # a newer generation: its rebalance settled ownership anew
            return
        if self._clock.monotonic() >= not_before and snap.coordinator is not None:
            self._ownership_retry = (command, pending[1], float("inf"))  # one in flight
            self._check_ownership(command)

    def _on_coverage(self, item: _Coverage) -> None:
        self._coverage = item
        self._maybe_check_coverage()

    def _maybe_check_coverage(self) -> None:
        """Evaluate a pending ownership check once the member is STABLE in its generation."""
        item = self._coverage
        if item is None:
            return
        snap = self._current()
        if snap.generation.generation_id != item.generation_id or item.metadata.exception() is not None:
            self._coverage = None  # a newer generation: its rebalance settled ownership anew
            return
        if snap.state is not MemberState.STABLE:
            return  # the SyncGroup answer is still on its way: look again after the next step
        self._coverage = None
        owners: dict[str, frozenset[TopicPartition]] = {}
        for member in item.group.members:
            try:
                owners[member.member_id] = frozenset(decode_assignment(member.member_assignment).partitions)
            except Exception:
                owners[member.member_id] = frozenset()
        # trust the description only where it agrees with this member's own assignment (a broker
        # that leaves assignments out of DescribeGroups would otherwise look like an empty group)
        if owners.get(snap.generation.member_id) != snap.owned:
            return
        owned = frozenset().union(*owners.values())
        partitions = (
            TopicPartition(topic, info.partition) for topic, infos in item.metadata.result().items() for info in infos
        )
        missing = sorted((tp for tp in partitions if tp not in owned), key=tp_key)
        if missing:
            shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
            self._post(ev.RequestRejoin(f"no member owns {shown} after the static leader returned"))

    def _on_snapshot(self, item: _Snapshot) -> None:
        if item.future.exception() is None:
            self._assigned = (item.generation_id, {t: len(p) for t, p in item.future.result().items()}, item.topics)
