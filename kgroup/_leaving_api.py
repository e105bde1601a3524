"""``kgroup.Consumer``'s way out: ``unsubscribe()`` and ``close()``.

``Consumer`` inherits these methods (its facade stays readable); they run on the poll thread, as
every ``Consumer`` method but ``wakeup()``. The revoke-commit-leave sequence itself is
``kgroup._driver.closing``'s (Java ``ConsumerCoordinator.onLeavePrepare`` and
``AbstractCoordinator.maybeLeaveGroup``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

from kgroup.errors import IllegalStateError

if TYPE_CHECKING:
    from kgroup._clock import Clock
    from kgroup._driver.autocommit import AutoCommit
    from kgroup._driver.commits import OffsetsClient
    from kgroup._driver.group_thread import GroupThread
    from kgroup._driver.mailbox import Mailbox
    from kgroup._driver.partitions import PartitionState
    from kgroup._driver.patterns import PatternSubscription
    from kgroup._driver.port import GroupPort
    from kgroup._driver.runtime import Runtime
    from kgroup._driver.steps import ListenerSteps
    from kgroup._io.transport import Transport
    from kgroup.config import ConsumerConfig, GroupMembershipOperation
    from kgroup.health import HealthServer
    from kgroup.types import TopicPartition

__all__ = ["LeavingAPI", "LeavingState"]

log = logging.getLogger("kgroup.consumer")

#: how long close() waits for the group thread to stop once the member left, in seconds
_GROUP_STOP_S = 5.0


class LeavingState(Protocol):
    """What these methods use of the consumer (``kgroup.consumer.Consumer``)."""

    _config: ConsumerConfig
    _clock: Clock
    _mailbox: Mailbox
    _steps: ListenerSteps
    _auto_commit: AutoCommit
    _runtime: Runtime
    _group: GroupPort | None
    _group_thread: GroupThread | None
    _offsets: OffsetsClient | None
    _parts: PartitionState | None
    _patterns: PatternSubscription
    _manual: bool
    _subscribed_at: float | None
    _closed: bool
    _closing: bool
    _fatal: Exception | None
    _errors: list[Exception]
    _health_servers: list[HealthServer]
    _transport: Transport | None
    _transport_arg: Transport | None

    @property
    def _assignment(self) -> frozenset[TopicPartition]: ...

    def _check_open(self) -> None: ...

    def _raise_pending(self) -> None: ...

    def _set_assignment(self, partitions: frozenset[TopicPartition]) -> None: ...

    def _auto_commit_sync(self) -> None: ...

    def _drain_mailbox(self, records: list[Any] | None, *, columns: bool = False) -> list[Any]: ...

    def _leave(
        self, thread: GroupThread, deadline: float, send_leave_group: bool | None, reason: str, what: str,
        timeout_ms: int,
    ) -> None: ...

    def _drop_manual_assignment(self, timeout_ms: int | None) -> None: ...


class LeavingAPI:
    """``Consumer``'s ``unsubscribe()`` and ``close()`` (a mixin: the state is the consumer's)."""

    # what these methods reset, as the consumer declares it
    _offsets: OffsetsClient | None
    _group: GroupPort | None
    _group_thread: GroupThread | None
    _subscribed_at: float | None

    def _leave(
        self: LeavingState, thread: GroupThread, deadline: float, send_leave_group: bool | None, reason: str, what: str,
        timeout_ms: int,
    ) -> None:
        """Revoke (callbacks, commit) and leave or remain as ``send_leave_group`` says (``kgroup._driver.closing``)."""
        from kgroup._driver.closing import leave_group

        assert self._offsets is not None
        leave_group(
            thread, self._offsets, config=self._config, clock=self._clock, mailbox=self._mailbox,
            drain=lambda: self._drain_mailbox(None), deadline=deadline, send_leave_group=send_leave_group,
            reason=reason, what=what, timeout_ms=timeout_ms,
        )

    def unsubscribe(self: LeavingState, timeout_ms: int | None = None) -> None:
        """Stop consuming: revoke the partitions (with callbacks) and leave the group (Java ``unsubscribe``).

        ``on_partitions_revoked`` runs for the owned partitions (``on_partitions_lost`` if the
        generation is gone), after the auto-commit if enabled; a dynamic member then sends
        LeaveGroup, a static one does not (as Java, KIP-345: its session keeps the partitions
        until it subscribes again or the session expires). A later ``subscribe()`` joins the
        group again: under ``group_protocol="classic"`` as a new member for a dynamic consumer;
        under ``"consumer"`` with the same member id, which the consumer keeps for its lifetime
        (KIP-1082), at epoch 0. A no-op when not subscribed.

        Args:
            timeout_ms: the longest to wait for the commit, the callbacks and LeaveGroup, in ms
                (default: default_api_timeout_ms).

        Raises:
            IllegalStateError: called from inside a listener callback.
            ListenerError: a callback raised (the consumer is unsubscribed all the same).
            ConsumerClosedError: after ``close()``.

        """
        self._check_open()
        if self._steps.in_callback:
            raise IllegalStateError("unsubscribe() must not be called from a rebalance listener callback")
        thread = self._group_thread
        if self._manual:
            self._drop_manual_assignment(timeout_ms)
            return
        if thread is None or self._subscribed_at is None:
            return
        timeout = timeout_ms if timeout_ms is not None else self._config.default_api_timeout_ms
        deadline = self._clock.monotonic() + timeout / 1000
        try:
            with self._auto_commit.bounded_by(deadline):
                reason = "the consumer unsubscribed from all topics"
                self._leave(thread, deadline, None, reason, "unsubscribe()", timeout)
        finally:
            self._runtime.stop(thread, _GROUP_STOP_S)
            self._group = self._group_thread = None
            self._offsets = None
            self._subscribed_at = None
            self._patterns.stop()
            if self._parts is not None:
                self._set_assignment(frozenset())
            self._auto_commit.stop()
        self._raise_pending()

    def _drop_manual_assignment(self: LeavingState, timeout_ms: int | None) -> None:
        """End a manual assignment: the auto-commit, if enabled, then nothing is assigned."""
        if self._config.enable_auto_commit and self._assignment:
            timeout = timeout_ms if timeout_ms is not None else self._config.default_api_timeout_ms
            with self._auto_commit.bounded_by(self._clock.monotonic() + timeout / 1000):
                self._auto_commit_sync()
        self._set_assignment(frozenset())
        self._manual = False
        self._group = None
        self._offsets = None
        self._auto_commit.stop()

    def close(
        self: LeavingState,
        timeout_ms: int = 30000,
        *,
        group_membership: GroupMembershipOperation = "default",
        reason: str = "the consumer is being closed",
    ) -> None:
        """Leave the group (or not) and release resources, within ``timeout_ms``.

        Waits for pending async commits, then runs ``on_partitions_revoked`` for owned
        partitions (after the auto-commit, if enabled; ``on_partitions_lost`` if the
        generation is no longer valid), then, depending on ``group_membership`` (KIP-1092's
        ``CloseOptions.GroupMembershipOperation``):

        * ``"default"``: a dynamic member sends LeaveGroup, a static member (``group_instance_id``
          set) does not and stays in the group until its session timeout, so a restart within
          ``session_timeout_ms`` gets its partitions back without a rebalance (KIP-345);
        * ``"remain"``: no LeaveGroup, also for a dynamic member (the coordinator expires it
          after ``session_timeout_ms``);
        * ``"leave"``: LeaveGroup (v3+, with the instance id for a static member): use it when
          scaling a static deployment down, so its partitions move at once.

        Every wait (async commits, the revoke commit, the callbacks' step, LeaveGroup) is
        bounded by ``timeout_ms``; then the group thread gets up to 5 s to stop (it is idle by
        then: milliseconds) and the network client closes. A listener's own work is not bounded
        (as in Java). When the member is still in a rebalance at the deadline, ``close()`` logs a
        warning and returns: the coordinator removes the member after ``session_timeout_ms``. A
        LeaveGroup does not wait behind a JoinGroup parked at the coordinator (it takes the
        broker's other connection). ``wakeup()`` does not interrupt ``close()``. Idempotent.
        docs/production.md explains how to size ``timeout_ms`` against a platform's grace
        period.

        Args:
            timeout_ms: the longest close waits for commits, callbacks and LeaveGroup, in ms.
            group_membership: ``"default"``, ``"remain"`` or ``"leave"``.
            reason: the KIP-800 reason sent with LeaveGroup (cut to 255 characters).

        Raises:
            IllegalStateError: called from inside a listener callback.
            ConfigError: ``group_membership`` is not one of the three values.
            KGroupError: a listener callback raised during close (``__cause__`` is its
                ``ListenerError``); the consumer is closed all the same (Java
                ``KafkaConsumer.close``: "Failed to close kafka consumer").

        """
        from kgroup._driver.closing import close_policy, raise_close_failures

        send_leave_group = close_policy(group_membership)
        if self._steps.in_callback:
            raise IllegalStateError("close() must not be called from a rebalance listener callback")
        if self._closed or self._closing:
            return
        # not yet _closed: commit() must keep working inside the close revoke callback
        self._closing = True
        self._mailbox.disable_wakeups()  # wakeup() does not interrupt close() (Java: disableWakeups)
        thread = self._group_thread
        deadline = self._clock.monotonic() + timeout_ms / 1000
        errors_before = len(self._errors)
        try:
            with self._auto_commit.bounded_by(deadline):
                if self._manual and self._fatal is None:
                    if self._config.enable_auto_commit and self._assignment:
                        self._auto_commit_sync()  # Java's close: maybeAutoCommitOffsetsSync, no group to leave
                elif thread is not None and self._fatal is None:
                    self._leave(thread, deadline, send_leave_group, reason, "close()", timeout_ms)
        finally:
            self._closed = True
            for server in self._health_servers:
                server.close()
            if thread is not None:
                self._runtime.stop(thread, _GROUP_STOP_S)
            if self._transport is not None and self._transport_arg is None:
                if self._parts is not None:  # KIP-227: free the brokers' fetch-session slots
                    remaining_ms = int(max(0.0, deadline - self._clock.monotonic()) * 1000)
                    self._parts.fetcher.close_sessions(remaining_ms)
                self._transport.close()
            log.info("group %s: consumer closed", self._config.group_id)
        raise_close_failures(self._config, self._errors[errors_before:])
