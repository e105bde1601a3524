"""``kgroup.Consumer``'s positions and offsets: where each partition is read from, and what the log holds.

``Consumer`` inherits these methods (its facade stays readable); they run on the poll thread, as
every ``Consumer`` method but ``wakeup()``. The look-ups themselves are ``kgroup._driver.lookups``';
the positions are ``kgroup._driver.partitions.PartitionState``'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

from kgroup.errors import IllegalStateError

if TYPE_CHECKING:
    from kgroup._driver.commits import OffsetsClient
    from kgroup._driver.lookups import OffsetLookups
    from kgroup._driver.partitions import PartitionState
    from kgroup._driver.port import GroupPort
    from kgroup._io.transport import Transport
    from kgroup.config import ConsumerConfig
    from kgroup.types import OffsetAndMetadata, OffsetAndTimestamp, PartitionInfo, TopicPartition

__all__ = ["ConsumerState", "PositionsAPI"]


class ConsumerState(Protocol):
    """What these methods use of the consumer (``kgroup.consumer.Consumer``)."""

    _config: ConsumerConfig
    _parts: PartitionState | None
    _group: GroupPort | None
    _offsets: OffsetsClient | None
    _lookups: OffsetLookups

    @property
    def _assignment(self) -> frozenset[TopicPartition]: ...

    def _check_open(self) -> None: ...

    def _require_assigned(self, tp: TopicPartition) -> None: ...

    def _update_positions(self, deadline: float) -> None: ...

    def _ensure_transport(self) -> Transport: ...


class PositionsAPI:
    """``Consumer``'s positions and offsets methods (a mixin: the state is the consumer's)."""

    def committed(
        self: ConsumerState, partitions: Iterable[TopicPartition], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (OffsetFetch), None where nothing is committed.

        Under ``group_protocol="consumer"`` a member with an epoch sends its member id and member
        epoch (OffsetFetch v9+, KIP-848), as Java's ``CommitRequestManager`` does; a
        STALE_MEMBER_EPOCH answer is retried, within ``timeout_ms``, with the member's latest epoch.

        Args:
            partitions: the partitions to look up.
            timeout_ms: the longest to wait, in ms (default: default_api_timeout_ms).

        Raises:
            CoordinatorUnavailable: no answer within ``timeout_ms``.
            WakeupError: ``wakeup()`` interrupted the call.
            FatalGroupError: authorization failures.
            BrokerError: under ``group_protocol="consumer"``, UNKNOWN_MEMBER_ID, or
                STALE_MEMBER_EPOCH once the member has no epoch (fenced or left; not retried, as in Java).

        """
        self._check_open()
        if self._group is None:
            raise IllegalStateError("committed() before subscribe()")
        assert self._offsets is not None
        parts = list(partitions)
        found = self._offsets.fetch_committed(
            parts, timeout_ms if timeout_ms is not None else self._config.default_api_timeout_ms
        )
        return {tp: found.get(tp) for tp in parts}

    def position(self: ConsumerState, tp: TopicPartition, *, timeout_ms: int | None = None) -> int:
        """The offset of the next record ``poll()`` will return for ``tp``.

        Raises:
            IllegalStateError: ``tp`` is not assigned.
            NoOffsetForPartitionError: auto_offset_reset="none" and nothing committed.
            WakeupError: ``wakeup()`` interrupted the call.
            KafkaTimeoutError: the position could not be found within ``timeout_ms`` (ms;
                default: default_api_timeout_ms).

        """
        self._check_open()
        self._require_assigned(tp)
        assert self._parts is not None
        return self._lookups.position(tp, self._parts, self._update_positions, timeout_ms)

    def seek(self: ConsumerState, tp: TopicPartition, offset: int) -> None:
        """Fetch ``tp`` from ``offset`` on the next ``poll()`` (>= 0).

        Raises:
            IllegalStateError: ``tp`` is not assigned.
            ValueError: a negative offset.

        """
        self._check_open()
        self._require_assigned(tp)
        if offset < 0:
            raise ValueError("offset must be >= 0")
        assert self._parts is not None
        self._parts.seek(tp, offset)

    def seek_to_beginning(self: ConsumerState, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Fetch each of ``partitions`` from its log start on the next ``poll()``/``position()``.

        Lazy, as Java's ``seekToBeginning``: the ListOffsets request goes out now and the
        position is known once it answers. A later ``seek`` or rebalance overrides it; a
        partition revoked meanwhile is not fetched again (the seek applies only while owned).

        Args:
            partitions: assigned partitions (default: every assigned partition).

        Raises:
            IllegalStateError: a partition is not assigned to this consumer.
            ConsumerClosedError: after ``close()``.

        """
        _reset(self, partitions, "earliest")

    def seek_to_end(self: ConsumerState, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Fetch each of ``partitions`` from its log end on the next ``poll()`` (Java ``seekToEnd``).

        The log end is the high watermark, or the last stable offset with
        ``isolation_level="read_committed"``. Same rules as ``seek_to_beginning``.

        Raises:
            IllegalStateError: a partition is not assigned to this consumer.
            ConsumerClosedError: after ``close()``.

        """
        _reset(self, partitions, "latest")

    def beginning_offsets(
        self: ConsumerState, partitions: Iterable[TopicPartition], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """The first offset of each partition's log (ListOffsets, Java ``beginningOffsets``).

        Any partition, assigned or not. Retries partitions whose leader is unknown or moving
        until ``timeout_ms``.

        Args:
            partitions: the partitions to look up.
            timeout_ms: the longest to wait, in ms (default: default_api_timeout_ms).

        Returns:
            ``{TopicPartition: offset}`` for every partition asked for.

        Raises:
            KafkaTimeoutError: not every offset was found within ``timeout_ms`` (an unknown
                topic or partition ends here too, as in Java).
            WakeupError: ``wakeup()`` interrupted the call.
            ConsumerClosedError: after ``close()``.

        """
        return _list_offsets(self, partitions, "earliest", timeout_ms)

    def end_offsets(
        self: ConsumerState, partitions: Iterable[TopicPartition], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """The log end offset of each partition (the high watermark; Java ``endOffsets``).

        With ``isolation_level="read_committed"`` the last stable offset. Same rules and
        errors as ``beginning_offsets``.
        """
        return _list_offsets(self, partitions, "latest", timeout_ms)

    def offsets_for_times(
        self: ConsumerState, timestamps: Mapping[TopicPartition, int], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """For each partition, the earliest offset whose record timestamp is >= the one given.

        ListOffsets by timestamp (Java ``offsetsForTimes``); no position changes.

        Args:
            timestamps: ``{TopicPartition: timestamp in ms since the epoch (>= 0)}``.
            timeout_ms: the longest to wait, in ms (default: default_api_timeout_ms).

        Returns:
            ``{TopicPartition: OffsetAndTimestamp | None}``: None where no record is that late.

        Raises:
            ValueError: a negative timestamp.
            KafkaTimeoutError: no answer within ``timeout_ms``.
            WakeupError: ``wakeup()`` interrupted the call.
            ConsumerClosedError: after ``close()``.

        """
        self._check_open()
        wanted = dict(timestamps)
        for tp, ts in wanted.items():
            if not isinstance(ts, int) or ts < 0:
                raise ValueError(f"the target time for partition {tp} must be an int >= 0, got {ts!r}")
        if not wanted:
            return {}
        return self._lookups.offsets_for_times(self._ensure_transport(), wanted, timeout_ms)

    def list_topics(self: ConsumerState, *, timeout_ms: int | None = None) -> dict[str, list[PartitionInfo]]:
        """Every topic in the cluster with its partitions (Metadata; Java ``listTopics``).

        Internal topics (``__consumer_offsets``, ...) are listed too, as Java's are; no
        subscription is needed. Partitions in ascending order, each with its leader (-1 while
        it has none) and its replicas' racks.

        Args:
            timeout_ms: the longest to wait, in ms (default: default_api_timeout_ms).

        Returns:
            ``{topic: [PartitionInfo, ...]}``.

        Raises:
            KafkaTimeoutError: no answer within ``timeout_ms``.
            TopicAuthorizationFailedError: the broker refused to describe a topic.
            WakeupError: ``wakeup()`` interrupted the call.
            ConsumerClosedError: after ``close()``.

        """
        self._check_open()
        return self._lookups.list_topics(self._ensure_transport(), timeout_ms)

    def partitions_for(self: ConsumerState, topic: str, *, timeout_ms: int | None = None) -> list[PartitionInfo]:
        """The partitions of ``topic`` (Metadata; Java ``partitionsFor``).

        Args:
            topic: a topic name (any topic, subscribed or not).
            timeout_ms: the longest to wait, in ms (default: default_api_timeout_ms).

        Returns:
            ``[PartitionInfo, ...]`` in partition order; ``[]`` when the topic does not exist
            (no topic is created).

        Raises:
            TypeError: ``topic`` is not a non-empty ``str``.
            KafkaTimeoutError: no answer within ``timeout_ms``.
            TopicAuthorizationFailedError: the broker refused to describe the topic.
            WakeupError: ``wakeup()`` interrupted the call.
            ConsumerClosedError: after ``close()``.

        """
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"partitions_for() takes a topic name (a non-empty str), got {topic!r}")
        self._check_open()
        return self._lookups.partitions_for(self._ensure_transport(), topic, timeout_ms)

    def highwater(self: ConsumerState, tp: TopicPartition) -> int | None:
        """The high watermark of ``tp`` from its last fetch response, or None before one.

        No request is sent (as Java's ``currentLag`` and franz-go's per-partition high
        watermark): the value is as fresh as the last fetch of ``tp``.

        Raises:
            IllegalStateError: ``tp`` is not assigned to this consumer.

        """
        self._require_assigned(tp)
        assert self._parts is not None
        return self._parts.fetcher.highwater(tp)

    def current_lag(self: ConsumerState, tp: TopicPartition) -> int | None:
        """``highwater(tp)`` minus the position of ``tp``, or None while either is unknown.

        Java ``KafkaConsumer.currentLag`` (KIP-695): no request is sent.

        Raises:
            IllegalStateError: ``tp`` is not assigned to this consumer.

        """
        self._require_assigned(tp)
        assert self._parts is not None
        fetcher = self._parts.fetcher
        high, position = fetcher.highwater(tp), fetcher.position(tp)
        if high is None or position is None:
            return None
        return max(0, high - position)



    def _lags(self: ConsumerState) -> dict[tuple[str, int], int]:
        """The lag of each assigned partition whose high watermark and position are known (``metrics()``)."""
        if self._parts is None:
            return {}
        fetcher = self._parts.fetcher
        lags = {}
        for tp in self._assignment:
            high, position = fetcher.highwater(tp), fetcher.position(tp)
            if high is not None and position is not None:
                lags[(tp.topic, tp.partition)] = max(0, high - position)
        return lags


def _reset(consumer: ConsumerState, partitions: Iterable[TopicPartition] | None, strategy: str) -> None:
    """``seek_to_beginning`` (``strategy`` "earliest") and ``seek_to_end`` ("latest")."""
    consumer._check_open()
    chosen = sorted(consumer._assignment if partitions is None else set(partitions))
    for tp in chosen:
        consumer._require_assigned(tp)
    if chosen:
        assert consumer._parts is not None
        for tp in chosen:
            consumer._parts.reset(tp, strategy)


def _list_offsets(
    consumer: ConsumerState, partitions: Iterable[TopicPartition], spec: str, timeout_ms: int | None
) -> dict[TopicPartition, int]:
    """``beginning_offsets`` (``spec`` "earliest") and ``end_offsets`` ("latest")."""
    consumer._check_open()
    wanted = set(partitions)
    if not wanted:
        return {}
    return consumer._lookups.list_offsets(consumer._ensure_transport(), wanted, spec, timeout_ms)
