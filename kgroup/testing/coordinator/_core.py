"""What both coordinator models share: configs, time, timers, the event log, failover and OffsetCommit.

:class:`~kgroup.testing.coordinator.GroupCoordinatorModel` (classic groups) and
:class:`~kgroup.testing.coordinator.ConsumerGroupModel` (KIP-848 consumer groups) run alike: time
comes from the injected :class:`~kgroup._clock.Clock` (``now_ms = round(clock.monotonic() * 1000)``),
timers fire only inside the model's own calls (:meth:`CoordinatorCore.tick`, and around every
request), everything the model does goes to an append-only log, a failover (:meth:`CoordinatorCore.restart`)
loses the timers and answers COORDINATOR_LOAD_IN_PROGRESS until the groups are loaded, and an
OffsetCommit is answered and stored the same way (:mod:`._offsets`). What differs is left to each
model: what a failover loses (``_unload``), what it re-arms (``_on_loaded``), and who may commit to
a group (``_validate_group_offset_commit``: a classic group's generation, a consumer group's member
epochs).
"""

from __future__ import annotations

import abc
import itertools
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

import attrs

from kgroup import _error_codes as codes
from kgroup._clock import Clock
from kgroup.protocol.group_api import OffsetCommitRequest, OffsetCommitResponse
from kgroup.testing.coordinator import _events as ev
from kgroup.testing.coordinator._config import OFFSET_METADATA_MAX_BYTES
from kgroup.testing.coordinator._events import CoordinatorEvent
from kgroup.testing.coordinator._offsets import Committed, CommittedOffsets, commit_answer_order
from kgroup.testing.coordinator._reply import Reply

__all__ = ["CoordinatorCore", "TimerKey"]

ConfigT = TypeVar("ConfigT")
GroupT = TypeVar("GroupT")

TimerKey = tuple[str, ...]


@attrs.define(kw_only=True)
class _Timer:
    deadline_ms: int
    seq: int
    callback: Callable[[], None]


class CoordinatorCore(abc.ABC, Generic[ConfigT, GroupT]):
    """The machinery of a coordinator model, around its groups (``GroupT``) and broker configs (``ConfigT``).

    Args:
        config: the broker configs.
        clock: the time source; only ``monotonic()`` is used.
        partition_exists: ``(topic, partition) -> bool``; OffsetCommit answers
            UNKNOWN_TOPIC_OR_PARTITION for a partition it rejects. ``None``: every partition exists.

    """

    _max_timer_firings: int | None = None
    """A runaway-loop guard: more timer firings than this in one instant is a model bug (``None``: no guard)."""

    def __init__(
        self, config: ConfigT, *, clock: Clock, partition_exists: Callable[[str, int], bool] | None
    ) -> None:
        self._config = config
        self._clock = clock
        self._partition_exists = partition_exists
        self._groups: dict[str, GroupT] = {}
        self._offsets: CommittedOffsets = {}
        self._timers: dict[TimerKey, _Timer] = {}
        self._timer_seq = 0
        self._events: list[CoordinatorEvent] = []
        self._loading_until_ms: int | None = None
        self._firing_at_ms: int | None = None

    # ==========================================================================================
    # public surface
    # ==========================================================================================

    @property
    def config(self) -> ConfigT:
        """The broker configs in use."""
        return self._config

    @property
    def events(self) -> Sequence[CoordinatorEvent]:
        """Everything the model did, oldest first (a read-only view of an append-only log)."""
        return tuple(self._events)

    def next_deadline(self) -> float | None:
        """Clock seconds of the earliest armed timer, or ``None``: sleep until then and call :meth:`tick`."""
        if not self._timers:
            return None
        return min(timer.deadline_ms for timer in self._timers.values()) / 1000.0

    def tick(self) -> None:
        """Fire every timer due at ``clock.monotonic()`` (session, rebalance, join/sync timeouts, the load...)."""
        self._fire_due_timers()

    def offset_commit(self, request: OffsetCommitRequest) -> Reply[OffsetCommitResponse]:
        """Handle OffsetCommit (v2-v9): the group's validation, then the commit.

        ``generation_id`` is a classic group's generation, or a consumer group member's epoch.
        """
        self._fire_due_timers()
        reply = Reply.of(self._offset_commit(request))
        self._fire_due_timers()
        return reply

    def restart(self, *, load_ms: int = 0) -> None:
        """Simulate a coordinator failover: the groups are unloaded and reloaded from ``__consumer_offsets``.

        What the reload loses is the model's (``_unload``); every timer is lost. Until ``load_ms``
        have passed, requests are answered COORDINATOR_LOAD_IN_PROGRESS; then the timers are armed
        afresh (``_on_loaded``: Kafka ``GroupMetadataManager.onLoaded``). Committed offsets are kept.

        Raises:
            ValueError: ``load_ms`` is negative.

        """
        if load_ms < 0:
            raise ValueError(f"load_ms must be >= 0, got {load_ms!r}")
        self._fire_due_timers()
        self._unload()
        self._timers.clear()
        self._loading_until_ms = self._now_ms() + load_ms
        self._event("", ev.COORDINATOR_RESTARTED, detail=f"load_ms={load_ms}")
        self._schedule(("load",), load_ms, self._on_loaded)
        self._fire_due_timers()

    @abc.abstractmethod
    def _unload(self) -> None:
        """A failover's unload and replay, before the timers are dropped: what the groups lose."""

    @abc.abstractmethod
    def _on_loaded(self) -> None:
        """Kafka ``GroupMetadataManager.onLoaded``: the load is over, arm the timers again."""

    # ==========================================================================================
    # time
    # ==========================================================================================

    def _now_ms(self) -> int:
        """The model's time: the clock, or while a timer fires, that timer's deadline (it fired "on time")."""
        if self._firing_at_ms is not None:
            return self._firing_at_ms
        return round(self._clock.monotonic() * 1000)

    def _loading(self) -> bool:
        return self._loading_until_ms is not None and self._now_ms() < self._loading_until_ms

    def _schedule(self, key: TimerKey, delay_ms: int, callback: Callable[[], None]) -> None:
        """Arm (or re-arm: same key replaces) a timer, like Kafka's coordinator ``timer.schedule``."""
        self._timer_seq += 1
        deadline = self._now_ms() + max(delay_ms, 0)
        self._timers[key] = _Timer(deadline_ms=deadline, seq=self._timer_seq, callback=callback)

    def _cancel(self, key: TimerKey) -> None:
        self._timers.pop(key, None)

    def _fire_due_timers(self) -> None:
        """Fire due timers, earliest first (ties in arming order), including ones armed while firing."""
        now = self._now_ms()
        limit = self._max_timer_firings
        try:
            for _ in itertools.count() if limit is None else range(limit):
                due = [(t.deadline_ms, t.seq, key) for key, t in self._timers.items() if t.deadline_ms <= now]
                if not due:
                    return
                deadline, _, key = min(due)
                # A timer fires at its own deadline even when tick() comes late: what it arms is
                # measured from there, as on a broker whose timer thread never sleeps in.
                self._firing_at_ms = deadline
                self._timers.pop(key).callback()
            raise RuntimeError("coordinator model: runaway timers (a model bug)")
        finally:
            self._firing_at_ms = None

    def _event(self, group_id: str, kind: str, member_id: str = "", detail: str = "") -> None:
        self._events.append(
            CoordinatorEvent(time_ms=self._now_ms(), group_id=group_id, kind=kind, member_id=member_id, detail=detail)
        )

    # ==========================================================================================
    # OffsetCommit
    # ==========================================================================================

    def _offset_commit(self, request: OffsetCommitRequest) -> OffsetCommitResponse:
        """KafkaApis OffsetCommit + ``OffsetMetadataManager.commitOffset``.

        Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION (KafkaApis filters them before
        the coordinator); the rest share the coordinator's verdict (``_validate_offset_commit``).
        Accepted commits store offset, leader epoch and metadata (OFFSET_METADATA_TOO_LARGE past
        4096 chars). The answer lists partitions in Kafka's order (:func:`._offsets.commit_answer_order`).
        """
        verdict: dict[tuple[int, int], int] = {}
        to_coordinator: list[tuple[int, int]] = []
        for t_index, topic in enumerate(request.topics):
            for p_index, partition in enumerate(topic.partitions):
                if self._partition_exists is not None and not self._partition_exists(
                    topic.name, partition.partition_index
                ):
                    verdict[t_index, p_index] = codes.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    to_coordinator.append((t_index, p_index))
        if to_coordinator:
            error = self._validate_offset_commit(request)
            stored: list[str] = []
            for t_index, p_index in to_coordinator:
                topic = request.topics[t_index]
                partition = topic.partitions[p_index]
                code = error
                metadata = partition.committed_metadata if partition.committed_metadata is not None else ""
                if code == codes.NONE and len(metadata) > OFFSET_METADATA_MAX_BYTES:
                    code = codes.OFFSET_METADATA_TOO_LARGE
                if code == codes.NONE:
                    self._offsets.setdefault(request.group_id, {})[topic.name, partition.partition_index] = Committed(
                        offset=partition.committed_offset,
                        leader_epoch=partition.committed_leader_epoch,
                        metadata=metadata,
                        commit_time_ms=self._now_ms(),
                    )
                    stored.append(f"{topic.name}-{partition.partition_index}@{partition.committed_offset}")
                verdict[t_index, p_index] = code
            if stored:
                self._event(request.group_id, ev.OFFSETS_COMMITTED, request.member_id, ", ".join(stored))
        return OffsetCommitResponse(topics=commit_answer_order(request, verdict, to_coordinator))

    def _validate_offset_commit(self, request: OffsetCommitRequest) -> int:
        """Kafka ``OffsetMetadataManager.validateOffsetCommit``, then the group's own ``validateOffsetCommit``.

        While the coordinator loads: COORDINATOR_LOAD_IN_PROGRESS. An unknown group: a commit
        without a generation or member epoch (< 0: the admin client, a consumer assigning its own
        partitions) is accepted (``_create_simple_group``); otherwise GROUP_ID_NOT_FOUND from v9,
        ILLEGAL_GENERATION before. A known group: ``_validate_group_offset_commit``. The empty
        group id is a group like any other ("for backwards compatibility",
        GroupCoordinatorService.commitOffsets refuses only a null one, which the wire format cannot carry).
        """
        if self._loading():
            return codes.COORDINATOR_LOAD_IN_PROGRESS
        if request.group_id not in self._groups:
            if request.generation_id >= 0:
                return codes.GROUP_ID_NOT_FOUND if request.api_version >= 9 else codes.ILLEGAL_GENERATION
            self._create_simple_group(request.group_id)
            return codes.NONE
        return self._validate_group_offset_commit(request)

    @abc.abstractmethod
    def _create_simple_group(self, group_id: str) -> None:
        """An OffsetCommit without generation to an unknown group: Kafka creates a "simple" classic group."""

    @abc.abstractmethod
    def _validate_group_offset_commit(self, request: OffsetCommitRequest) -> int:
        """The known group's ``validateOffsetCommit``: the error code for the whole request."""
