"""What the poll thread commits: the periodic auto-commit, the revoke step's commit, ``commit()``'s offsets.

Java's ``ConsumerCoordinator``: ``maybeAutoCommitOffsetsAsync`` once per
``auto_commit_interval_ms`` (never queued behind an unanswered one), and
``maybeAutoCommitOffsetsSync`` before ``on_partitions_revoked`` (``onJoinPrepare``,
``onLeavePrepare``), bounded by ``close()``'s deadline while it runs. The requests themselves
are ``kgroup._driver.commits.OffsetsClient``'s.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from kgroup.errors import CommitFailedError, KGroupError
from kgroup.membership.states import MemberState
from kgroup.types import OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:
    from kgroup._clock import Clock
    from kgroup._driver.commits import OffsetsClient
    from kgroup._driver.partitions import PartitionState
    from kgroup._driver.port import GroupView
    from kgroup.config import ConsumerConfig

__all__ = ["AutoCommit", "prepare_offsets"]

log = logging.getLogger(__name__)


def prepare_offsets(
    offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None,
    parts: PartitionState,
    assignment: frozenset[TopicPartition],
) -> dict[TopicPartition, OffsetAndMetadata]:
    """The offsets ``commit()`` and ``commit_async()`` send (None: the positions of the records handed out).

    Raises:
        TypeError: a key is not a ``TopicPartition``.
        ValueError: a negative or malformed offset.
        CommitFailedError: a partition this member does not own.

    """
    if offsets is None:
        return parts.consumed_offsets(assignment)
    prepared: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, value in offsets.items():
        if not isinstance(tp, TopicPartition):
            raise TypeError(f"commit() keys must be kgroup.TopicPartition, got {tp!r}")
        om = OffsetAndMetadata(value) if isinstance(value, int) else value
        if not isinstance(om, OffsetAndMetadata) or om.offset < 0:
            raise ValueError(f"bad offset for {tp}: {value!r}")
        prepared[tp] = om
    not_owned = set(prepared) - assignment
    if not_owned:
        raise CommitFailedError(
            f"cannot commit partitions this member does not own: {sorted(map(str, not_owned))}; "
            "they may belong to another member after a rebalance. No offsets were written."
        )
    return prepared


class AutoCommit:
    """The auto-commit's timing and the revoke step's commit (poll thread only)."""

    def __init__(self, config: ConsumerConfig, clock: Clock) -> None:
        self._config = config
        self._clock = clock
        #: when the next auto-commit is due (clock seconds; never before ``start``)
        self.next_at = float("inf")
        self._pending: concurrent.futures.Future[None] | None = None
        #: while close() or unsubscribe() runs: the deadline the revoke-step commit must respect
        self.close_deadline: float | None = None

    def start(self) -> None:
        """The first auto-commit is due one interval from now (if enabled)."""
        if self._config.enable_auto_commit:
            self.next_at = self._clock.monotonic() + self._config.auto_commit_interval_ms / 1000

    def stop(self) -> None:
        """No auto-commit until ``start`` again."""
        self.next_at = float("inf")

    @contextlib.contextmanager
    def bounded_by(self, deadline: float) -> Iterator[None]:
        """Within the block, the revoke step's commit ends by ``deadline`` (``close()``, ``unsubscribe()``)."""
        self.close_deadline = deadline
        try:
            yield
        finally:
            self.close_deadline = None

    def maybe_commit(
        self,
        snap: GroupView | None,
        assignment: frozenset[TopicPartition],
        parts: PartitionState,
        offsets: OffsetsClient,
    ) -> None:
        """Java ``maybeAutoCommitOffsetsAsync``: one async commit per interval, never queued.

        While the coordinator is unknown the commit is skipped and tried again after
        ``retry_backoff_ms``; while the previous auto-commit is unanswered, nothing is sent.
        """
        if not self._config.enable_auto_commit:
            return
        now = self._clock.monotonic()
        if now < self.next_at:
            return
        if snap is None or snap.state is not MemberState.STABLE or not assignment:
            self.next_at = now + self._config.auto_commit_interval_ms / 1000
            return
        if snap.coordinator is None or (self._pending is not None and not self._pending.done()):
            self.next_at = now + self._config.retry_backoff_ms / 1000
            return
        self.next_at = now + self._config.auto_commit_interval_ms / 1000
        consumed = parts.consumed_offsets(assignment)
        if consumed:
            self._pending = offsets.commit_async(consumed)
            self._pending.add_done_callback(self._log_failure)

    def _log_failure(self, future: concurrent.futures.Future[None]) -> None:
        exc = future.exception()
        if exc is not None:
            log.warning("group %s: auto-commit failed: %s", self._config.group_id, exc)

    def commit_sync(self, assignment: frozenset[TopicPartition], parts: PartitionState, offsets: OffsetsClient) -> None:
        """The revoke step's commit (Java ``onJoinPrepare``/``onLeavePrepare``: ``maybeAutoCommitOffsetsSync``)."""
        consumed = parts.consumed_offsets(assignment)
        if not consumed:
            return
        timeout_ms = self._config.default_api_timeout_ms
        if self.close_deadline is not None:
            timeout_ms = max(0, int((self.close_deadline - self._clock.monotonic()) * 1000))
        log.info("group %s: commit: auto-commit on revoke (%d partitions)", self._config.group_id, len(consumed))
        try:
            offsets.commit_sync(consumed, timeout_ms)
        except KGroupError as exc:
            log.warning("group %s: auto-commit on revoke failed: %s", self._config.group_id, exc)
