"""The poll thread's offset look-ups: positions (OffsetFetch), ListOffsets and ``offsets_for_times``.

* Positions of newly assigned partitions come from the group's committed offsets (OffsetFetch,
  sent by ``kgroup._driver.commits.OffsetsClient``), else ``auto_offset_reset``; one look-up is in
  flight at a time and is reused across polls (Java ``ConsumerCoordinator.refreshCommittedOffsetsIfNeeded``
  with its pending OffsetFetch). ``position()`` retries until its deadline.
* ``beginning_offsets``, ``end_offsets`` and ``offsets_for_times`` send ListOffsets through the
  transport and retry partitions without an answer (no leader yet, a disconnect) until theirs.
* ``list_topics`` and ``partitions_for`` send Metadata (Java ``TopicMetadataFetcher``) and retry
  a request without an answer until theirs.

Every wait goes through the mailbox (``wakeup()`` ends it) and every retry through
``kgroup._retry``, on the injected clock; running out of time raises ``KafkaTimeoutError``.
"""

from __future__ import annotations

import concurrent.futures
import random
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Protocol, TypeVar

from kgroup._retry import Deadline
from kgroup.errors import Api, KafkaTimeoutError, NoOffsetForPartitionError
from kgroup.membership import events as ev
from kgroup.membership.timers import exponential_backoff
from kgroup.types import OffsetAndTimestamp, PartitionInfo, TopicPartition

if TYPE_CHECKING:
    from kgroup._clock import Clock
    from kgroup._driver.commits import OffsetsClient
    from kgroup._driver.mailbox import Mailbox
    from kgroup._driver.partitions import PartitionState
    from kgroup._driver.port import GroupPort
    from kgroup._io.transport import OffsetFetchResult, Transport
    from kgroup.config import ConsumerConfig

__all__ = ["OffsetLookups", "PositionLookup", "Positions"]

T = TypeVar("T")

#: how long ``position()`` waits before it looks again for a position still unknown, in seconds
_POSITION_RETRY_S = 0.02


class PositionLookup:
    """The OffsetFetch in flight for positions, reused across polls (Java's pending request)."""

    __slots__ = ("future", "partitions")

    def __init__(
        self, partitions: tuple[TopicPartition, ...], future: concurrent.futures.Future[OffsetFetchResult]
    ) -> None:
        self.partitions = partitions
        self.future = future


class Positions(Protocol):
    """Where ``position()`` reads a partition's position (``PartitionState``)."""

    def position(self, tp: TopicPartition) -> int | None: ...


class _LookupRetriable(Exception):
    """Internal: an offset look-up to try again until its deadline."""


class _OffsetsMissing(_LookupRetriable):
    """Internal: a ListOffsets look-up left these partitions without an offset (retried)."""


class _TransportFailed(_LookupRetriable):
    """Internal: the request failed on the way (no broker yet, a disconnect): retried."""


class _PositionUnknown(Exception):
    """Internal: ``position()`` has no position yet (looked for again until its deadline)."""


class OffsetLookups:
    """The consumer's look-ups (poll thread only).

    Args:
        config: the consumer configuration (timeouts, backoff, ``auto_offset_reset``).
        clock: the injected clock.
        mailbox: the poll thread's mailbox: every wait goes through it.
        rng: jitter for retry backoff.

    """

    def __init__(self, config: ConsumerConfig, clock: Clock, mailbox: Mailbox, rng: random.Random) -> None:
        self._config = config
        self._clock = clock
        self._mailbox = mailbox
        self._rng = rng
        #: the OffsetFetch in flight for positions
        self.pending: PositionLookup | None = None

    def assignment_changed(self, partitions: frozenset[TopicPartition]) -> None:
        """Forget the look-up in flight when it asks for a partition no longer in ``partitions``."""
        if self.pending is not None and not set(self.pending.partitions) <= partitions:
            self.pending = None

    # ------------------------------------------------------------------ positions
    def update_positions(
        self, parts: PartitionState, offsets: OffsetsClient, group: GroupPort, deadline: float
    ) -> None:
        """Positions for assigned partitions that have none (OffsetFetch, else ``auto_offset_reset``).

        Bounded by ``deadline`` (clock seconds): a look-up still unanswered then is kept and
        reused by the next call, so ``poll(0)`` loops still get their positions.

        Raises:
            NoOffsetForPartitionError: ``auto_offset_reset="none"`` and nothing committed.

        """
        if not parts.needs_position:
            return
        wanted = tuple(sorted(parts.needs_position))
        lookup = self.pending
        if lookup is None or lookup.partitions != wanted:
            snap = group.snapshot
            if snap.coordinator is None or snap.fatal is not None:
                return
            # under the consumer protocol it carries the member id and epoch (OffsetFetch v9+, KIP-848)
            lookup = PositionLookup(wanted, offsets.send_fetch(wanted, snap, snap.coordinator))
            self.pending = lookup
        if not self._mailbox.wait_future(lookup.future, deadline - self._clock.monotonic()):
            return
        self.pending = None
        exc = lookup.future.exception()
        if exc is not None:
            group.post(ev.CoordinatorDead(f"OffsetFetch failed: {exc}"))
            return
        result = lookup.future.result()
        from kgroup._driver.commits import Retriable  # loaded with the OffsetsClient that sent it

        try:
            offsets._raise_first(
                Api.OFFSET_FETCH, [result.error_code] + [c.error_code for c in result.partitions.values()], None
            )
        except Retriable:
            return
        missing: list[TopicPartition] = []
        for tp in wanted:
            if tp not in parts.needs_position:
                continue  # sought meanwhile
            found = result.partitions.get(tp)
            if found is not None and found.offset >= 0:
                parts.seek(tp, found.offset, found.leader_epoch)
                continue
            if self._config.auto_offset_reset == "none":
                missing.append(tp)
                continue
            parts.fetcher.request_reset(tp, self._config.auto_offset_reset)
            parts.needs_position.discard(tp)
        if missing:
            raise NoOffsetForPartitionError(frozenset(missing))

    def position(
        self, tp: TopicPartition, parts: Positions, update: Callable[[float], None], timeout_ms: int | None
    ) -> int:
        """The position of ``tp``, looked up with ``update(deadline)`` until known or ``timeout_ms`` passes.

        Raises:
            KafkaTimeoutError: still unknown after ``timeout_ms``.
            WakeupError: ``wakeup()`` interrupted the call.
            what ``update`` raises (``NoOffsetForPartitionError``).

        """
        timeout = timeout_ms if timeout_ms is not None else self._config.default_api_timeout_ms
        deadline = Deadline.after_ms(self._clock, timeout)

        def attempt() -> int:
            update(deadline.at)
            position = parts.position(tp)
            if position is None:
                raise _PositionUnknown
            return position

        try:
            return self._mailbox.retry(
                attempt, deadline, retry_on=_PositionUnknown, backoff_s=lambda _n: _POSITION_RETRY_S,
                what="position()",
            )
        except _PositionUnknown:
            raise KafkaTimeoutError(f"position of {tp} unknown after {timeout} ms") from None

    # ------------------------------------------------------------------ ListOffsets
    def offsets_for_times(
        self, transport: Transport, timestamps: Mapping[TopicPartition, int], timeout_ms: int | None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """``Consumer.offsets_for_times`` once its arguments are checked (not empty)."""
        wanted = dict(timestamps)
        timeout = timeout_ms if timeout_ms is not None else self._config.default_api_timeout_ms
        deadline = Deadline.after_ms(self._clock, timeout)

        def attempt() -> dict[TopicPartition, tuple[int, int]]:
            return self._await(
                "offsets_for_times", lambda ms: transport.offsets_for_times(wanted, ms), deadline.remaining_ms()
            )

        try:
            found = self._retry(attempt, deadline, "offsets_for_times")
        except _TransportFailed as failed:
            raise KafkaTimeoutError(f"offsets_for_times: no answer within {timeout} ms ({failed})") from None
        return {
            tp: OffsetAndTimestamp(*found[tp]) if tp in found else None for tp in wanted
        }

    def list_offsets(
        self, transport: Transport, partitions: Iterable[TopicPartition], spec: str, timeout_ms: int | None
    ) -> dict[TopicPartition, int]:
        """``beginning_offsets`` (``spec`` "earliest") and ``end_offsets`` ("latest")."""
        wanted = set(partitions)
        if not wanted:
            return {}
        timeout = timeout_ms if timeout_ms is not None else self._config.default_api_timeout_ms
        deadline = Deadline.after_ms(self._clock, timeout)
        out: dict[TopicPartition, int] = {}

        def attempt() -> dict[TopicPartition, int]:
            asked = frozenset(wanted - set(out))
            found: dict[TopicPartition, int] = self._await(
                f"{spec} offsets", lambda ms: transport.list_offsets(asked, spec, ms), deadline.remaining_ms()
            )
            out.update(found)
            missing = wanted - set(out)
            if missing:
                raise _OffsetsMissing(sorted(map(str, missing)))
            return {tp: out[tp] for tp in wanted}

        try:
            return self._retry(attempt, deadline, f"{spec} offsets")
        except _TransportFailed as failed:
            raise KafkaTimeoutError(f"{spec} offsets: no answer within {timeout} ms ({failed})") from None
        except _OffsetsMissing as missing:
            raise KafkaTimeoutError(
                f"{spec} offsets of {missing.args[0]} not found within {timeout} ms "
                "(no leader, or the topic or partition does not exist)"
            ) from None

    # ------------------------------------------------------------------ Metadata
    def list_topics(self, transport: Transport, timeout_ms: int | None) -> dict[str, list[PartitionInfo]]:
        """``Consumer.list_topics``: every topic's partitions, internal ones too (Java ``listTopics``)."""
        timeout = timeout_ms if timeout_ms is not None else self._config.default_api_timeout_ms
        deadline = Deadline.after_ms(self._clock, timeout)

        def attempt() -> dict[str, list[PartitionInfo]]:
            names: frozenset[str] = self._await(
                "list_topics", lambda ms: transport.list_topics(ms, exclude_internal=False), deadline.remaining_ms()
            )
            if not names:
                return {}
            found = self._await(
                "list_topics", lambda ms: transport.describe_topics(names, ms), deadline.remaining_ms()
            )
            return {topic: sorted(parts, key=lambda p: p.partition) for topic, parts in sorted(found.items())}

        return self._metadata(attempt, deadline, "list_topics", timeout)

    def partitions_for(self, transport: Transport, topic: str, timeout_ms: int | None) -> list[PartitionInfo]:
        """``Consumer.partitions_for``: the topic's partitions, [] for a topic that does not exist."""
        timeout = timeout_ms if timeout_ms is not None else self._config.default_api_timeout_ms
        deadline = Deadline.after_ms(self._clock, timeout)

        def attempt() -> list[PartitionInfo]:
            found = self._await(
                "partitions_for", lambda ms: transport.describe_topics((topic,), ms), deadline.remaining_ms()
            )
            return sorted(found.get(topic, ()), key=lambda p: p.partition)

        return self._metadata(attempt, deadline, f"partitions_for({topic!r})", timeout)

    def _metadata(self, attempt: Callable[[], T], deadline: Deadline, what: str, timeout: int) -> T:
        try:
            return self._retry(attempt, deadline, what)
        except _TransportFailed as failed:
            raise KafkaTimeoutError(f"{what}: no answer within {timeout} ms ({failed})") from None

    def _retry(self, attempt: Callable[[], T], deadline: Deadline, what: str) -> T:
        backoff = exponential_backoff(self._config.retry_backoff_ms, self._config.retry_backoff_max_ms, self._rng)
        return self._mailbox.retry(attempt, deadline, retry_on=_LookupRetriable, backoff_s=backoff, what=what)

    def _await(self, what: str, send: Callable[[int], concurrent.futures.Future[T]], timeout_ms: int) -> T:
        """Send a lookup with ``timeout_ms`` and wait for it, honouring ``wakeup()``."""
        future = send(max(1, timeout_ms))
        if not self._mailbox.await_answer(future, timeout_ms / 1000, what):
            raise KafkaTimeoutError(f"{what}: no answer within {timeout_ms} ms")
        exc = future.exception()
        if exc is not None:
            raise _TransportFailed(f"{what} failed: {exc}") from exc
        return future.result()
