"""The offsets client: OffsetCommit and OffsetFetch for the poll thread.

Rules:

1. One place decides what a commit or offset-fetch error code means for the caller and for
   the group (:meth:`OffsetsClient.error_for`), after Java's ``ConsumerCoordinator``
   ``OffsetCommitResponseHandler`` / ``OffsetFetchResponseHandler``: which error is raised,
   and whether the group thread is told (coordinator dead, rejoin, generation reset, fatal).
2. A synchronous call retries retriable errors until its deadline, never past it
   (``kgroup._retry.retry_until``: no attempt starts that the next backoff would push past the
   deadline); every wait is interrupted by ``wakeup()`` (Java ``commitSync(timeout)``,
   ``committed(timeout)``). Waits go through the mailbox, so the deterministic simulator runs
   this code on its virtual clock.
3. ``commit_async`` sends one OffsetCommit with the generation the member holds *at send
   time* and never retries (Java ``commitAsync``): a retry could land after a later commit
   and move the committed offset back, or commit for partitions another member owns by then.
   A retriable failure completes the future with ``RetriableCommitFailedError``.
4. Nothing here imports the consumer: the consumer composes this object.
"""

from __future__ import annotations

import concurrent.futures
import logging
import random
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from kgroup import _error_codes as codes
from kgroup._clock import Clock
from kgroup._driver.mailbox import Mailbox
from kgroup._driver.port import GroupPort, GroupView
from kgroup._io.transport import OffsetFetchResult, Transport, offset_commit_request, offset_fetch_request
from kgroup._retry import Deadline
from kgroup.config import ConsumerConfig
from kgroup.errors import (
    Api,
    CommitFailedError,
    CoordinatorUnavailable,
    Disposition,
    GroupThreadCrashed,
    KGroupError,
    RebalanceInProgressError,
    RetriableCommitFailedError,
    broker_error,
    classify,
    error_name,
)
from kgroup.membership import events as ev
from kgroup.membership.states import MemberState
from kgroup.membership.timers import exponential_backoff
from kgroup.metrics import Recorder
from kgroup.types import Generation, OffsetAndMetadata, TopicPartition

__all__ = ["OffsetsClient", "Retriable"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: states in which the member is between JoinGroup and the end of SyncGroup
REBALANCING = (MemberState.JOINING, MemberState.ASSIGNING, MemberState.SYNCING)
#: Java's PREPARING_REBALANCE: the member is on its way into a new generation
_REJOINING = (MemberState.PREPARING, MemberState.UNJOINED, *REBALANCING)


class Retriable(Exception):
    """Internal: a retriable failure inside a retry loop (the last error code, if any)."""

    def __init__(self, message: str, code: int = codes.COORDINATOR_NOT_AVAILABLE) -> None:
        super().__init__(message)
        self.code = code


class OffsetsClient:
    """OffsetCommit (sync and async) and OffsetFetch against the group coordinator.

    Args:
        config: the consumer configuration.
        transport: the network port.
        group: the group thread (its snapshot: generation, state, coordinator; ``post``).
        mailbox: the poll thread's mailbox (every blocking wait goes through it).
        clock: the injected clock.
        rng: jitter for retry backoff.

    """

    def __init__(
        self,
        config: ConsumerConfig,
        transport: Transport,
        group: GroupPort,
        mailbox: Mailbox,
        clock: Clock,
        rng: random.Random,
        metrics: Recorder | None = None,
    ) -> None:
        self._config = config
        self._metrics = metrics
        self._transport = transport
        self._group = group
        self._mailbox = mailbox
        self._clock = clock
        self._rng = rng
        #: async commits sent and not answered, oldest first (a dict: ordered, unlike a set)
        self._pending_async: dict[concurrent.futures.Future[None], None] = {}

    # ------------------------------------------------------------------ state
    def _snapshot(self) -> GroupView:
        snap = self._group.snapshot
        if snap.fatal is not None:
            raise snap.fatal
        if self._group.crashed is not None:
            raise GroupThreadCrashed(f"the group thread stopped: {self._group.crashed}")
        return snap

    def _coordinator(self, snap: GroupView) -> int:
        if snap.coordinator is None:
            raise Retriable("coordinator unknown")
        return snap.coordinator

    def pending_async(self) -> int:
        """Asynchronous commits sent and not answered yet."""
        return len(self._pending_async)

    def wait_async(self, deadline: float) -> None:
        """Wait until every pending async commit completed, or ``deadline`` (clock seconds)."""
        while self._pending_async:
            remaining = deadline - self._clock.monotonic()
            if remaining <= 0:
                return
            pending = list(self._pending_async)  # the network thread discards completed ones
            if not pending:
                return
            future = pending[0]
            if not self._mailbox.wait_future(future, remaining, interruptible=False):
                return

    # ------------------------------------------------------------------ errors, one place
    def error_for(self, api: Api, code: int, sent: Generation | None) -> Exception | None:
        """What error code ``code`` of ``api`` means; tells the group thread what it must know.

        Args:
            api: ``Api.OFFSET_COMMIT`` or ``Api.OFFSET_FETCH``.
            code: the Kafka error code.
            sent: the generation the request carried (OffsetCommit), else None.

        Returns:
            None for success, ``Retriable`` for a retriable failure, else the error to raise.

        """
        if code == 0:
            return None
        disposition = classify(api, code)
        if disposition is Disposition.RETRY:
            return Retriable(f"{api.value} returned {error_name(code)}", code)
        if disposition in (Disposition.REDISCOVER, Disposition.REJOIN):
            # the group's side (find the coordinator again, rejoin) is the machine's to decide
            self._group.post(ev.CommitErrorObserved(sent if sent is not None else Generation(), code, api.value))
            if disposition is Disposition.REDISCOVER:
                return Retriable(f"{api.value}: coordinator moved ({error_name(code)})", code)
            return broker_error(api, code, "the group is rebalancing; call poll() to complete it, then retry")
        if self._config.group_protocol == "consumer" and disposition is Disposition.RESET_MEMBER:
            return self._member_epoch_error(api, code, sent)
        if disposition in (Disposition.RESET_GENERATION, Disposition.RESET_MEMBER, Disposition.FATAL):
            snap = self._group.snapshot
            if sent is not None and sent != snap.generation:
                # Java: the commit's generation is already gone (the member rejoined meanwhile):
                # nothing to reset or to poison; retriable while the member is rejoining
                if snap.state in _REJOINING:
                    return RebalanceInProgressError(
                        api, code,
                        f"sent in generation {sent.generation_id}, which the member left for a rebalance; "
                        "call poll() to complete it, then retry",
                    )
                return CommitFailedError(
                    f"{api.value} failed with {error_name(code)}: generation {sent.generation_id} is gone; "
                    "the partitions may now belong to another member. No offsets were written."
                )
            if sent is not None:
                self._group.post(ev.CommitErrorObserved(sent, code, api.value))
            if disposition is Disposition.FATAL:
                # name the instance id: FENCED_INSTANCE_ID means another process uses it (KIP-345)
                return broker_error(
                    api, code,
                    f"group_id={self._config.group_id!r}, group_instance_id={self._config.group_instance_id!r}",
                )
            return CommitFailedError(
                f"{api.value} failed: the member's generation is no longer valid ({error_name(code)}); "
                "the partitions may now belong to another member. No offsets were written."
            )
        return broker_error(api, code, f"group_id={self._config.group_id!r}")

    def _member_epoch_error(self, api: Api, code: int, sent: Generation | None) -> Exception:
        """UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH, FENCED_MEMBER_EPOCH under the consumer protocol (KIP-848).

        OffsetFetch (v9+, which carries the member id and epoch): :meth:`_fetch_member_error`.

        STALE_MEMBER_EPOCH while the member has an epoch: the broker bumped the epoch (a new
        assignment) before this member's heartbeat brought it. Retriable, as in Java's
        ``CommitRequestManager`` (``maybeRetryOnGroupError``): a synchronous commit's loop
        (``commit()``, the commit before a revocation, the one on close) sends again, within its
        timeout, with the epoch the next heartbeat brings; an asynchronous commit is never
        retried (rule 3) and fails with ``RetriableCommitFailedError``. UNKNOWN_MEMBER_ID,
        FENCED_MEMBER_EPOCH, and STALE_MEMBER_EPOCH without an epoch (joining, fenced, left)
        fail with ``CommitFailedError``: the partitions may belong to another member by now.
        The heartbeat, not the commit, tells the member it was fenced.
        """
        if api is Api.OFFSET_FETCH:
            return self._fetch_member_error(code)
        snap = self._group.snapshot
        name = error_name(code)
        epoch = sent.generation_id if sent is not None else -1
        if code == codes.STALE_MEMBER_EPOCH and snap.generation.is_valid():
            return Retriable(f"{api.value} returned {name} for member epoch {epoch}: retrying with the member's "
                             "next epoch", code)
        return CommitFailedError(
            f"{api.value} failed with {name}: the member is no longer in the group with member epoch {epoch}; "
            "the partitions may now belong to another member. No offsets were written."
        )

    def _fetch_member_error(self, code: int) -> Exception:
        """An OffsetFetch's UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH, as Java's ``CommitRequestManager`` takes them.

        STALE_MEMBER_EPOCH while the member has an epoch is retriable: the fetch goes again, within
        its timeout, with the epoch the member holds then (Java's
        ``isStaleEpochErrorAndValidEpochAvailable``). UNKNOWN_MEMBER_ID, and STALE_MEMBER_EPOCH
        once the member has no epoch (fenced, left, rejoining), fail the fetch with a
        ``BrokerError`` naming the code (Java's ``UnknownMemberIdException`` /
        ``StaleMemberEpochException``, not retried); the group is not told: the heartbeat, not
        the fetch, tells the member it was fenced.
        """
        if code == codes.STALE_MEMBER_EPOCH and self._group.snapshot.generation.is_valid():
            return Retriable(f"OffsetFetch returned {error_name(code)}: retrying with the member's latest epoch",
                             code)
        return broker_error(
            Api.OFFSET_FETCH, code,
            f"group_id={self._config.group_id!r}: the member id and epoch the fetch carried are no longer "
            "the group's (the member was fenced, left or is rejoining)",
        )

    # ------------------------------------------------------------------ retry loop
    def _retrying(self, api: Api, fn: Callable[[float], T], timeout_ms: int) -> T:
        """Run ``fn(deadline)`` until it stops raising ``Retriable`` or ``timeout_ms`` passes."""
        deadline = Deadline.after_ms(self._clock, timeout_ms)
        # Java's ExponentialBackoff (KIP-580) on the injected random generator
        backoff = exponential_backoff(self._config.retry_backoff_ms, self._config.retry_backoff_max_ms, self._rng)
        try:
            return self._mailbox.retry(
                lambda: fn(deadline.at), deadline, retry_on=Retriable, backoff_s=backoff, what=api.value
            )
        except Retriable as exc:
            raise CoordinatorUnavailable(api, exc.code, f"gave up after {timeout_ms} ms: {exc}") from exc

    def _await(self, api: Api, future: concurrent.futures.Future[T], deadline: float) -> T:
        """The result of a request future, waiting until ``deadline`` at the most."""
        bound = min(deadline, self._clock.monotonic() + self._config.request_timeout_ms / 1000 + 1)
        if not self._mailbox.await_answer(future, bound - self._clock.monotonic(), api.value):
            raise Retriable(f"{api.value}: no response in time")
        exc = future.exception()
        if exc is not None:
            self._group.post(ev.CoordinatorDead(f"{api.value} failed: {exc}"))
            raise Retriable(f"{api.value} failed: {exc}") from exc
        return future.result()

    # ------------------------------------------------------------------ OffsetCommit
    def _commit_generation(self, snap: GroupView) -> Generation:
        if getattr(self._group, "manual", False):
            return Generation()  # a consumer outside the group: generation -1, no member id (Java)
        if snap.state in REBALANCING:
            raise RebalanceInProgressError(
                Api.OFFSET_COMMIT, codes.REBALANCE_IN_PROGRESS,
                "the group is rebalancing; call poll() to complete it, then retry",
            )
        if not snap.generation.is_valid():
            raise CommitFailedError(
                "the member has no valid generation (it was reset or left the group); no offsets were written"
            )
        return snap.generation

    def commit_sync(self, offsets: Mapping[TopicPartition, OffsetAndMetadata], timeout_ms: int) -> None:
        """OffsetCommit, retrying retriable errors until ``timeout_ms`` (ms) passes.

        Raises:
            CommitFailedError, RebalanceInProgressError, FatalGroupError, BrokerError: as
                ``Consumer.commit`` documents; CoordinatorUnavailable at the timeout;
                WakeupError when ``wakeup()`` interrupts it.

        """

        def attempt(deadline: float) -> None:
            snap = self._snapshot()
            generation = self._commit_generation(snap)
            node = self._coordinator(snap)
            codes = self._await(Api.OFFSET_COMMIT, self._send_commit(generation, offsets, node), deadline)
            self._raise_first(Api.OFFSET_COMMIT, codes.values(), generation)
            log.debug("group %s: committed %d offsets", self._config.group_id, len(offsets))

        self._retrying(Api.OFFSET_COMMIT, attempt, timeout_ms)

    def _send_commit(
        self, generation: Generation, offsets: Mapping[TopicPartition, OffsetAndMetadata], node: int
    ) -> concurrent.futures.Future[dict[TopicPartition, int]]:
        """Send one OffsetCommit; its round trip is recorded as ``commit-latency``."""
        sent = self._clock.monotonic()
        request = offset_commit_request(self._config.group_id, generation, self._config.group_instance_id, offsets)
        future = self._transport.offset_commit(request, node, self._config.request_timeout_ms)
        metrics = self._metrics
        if metrics is not None:

            def timed(f: concurrent.futures.Future[dict[TopicPartition, int]]) -> None:
                if f.exception() is None:  # a response arrived (Java times responses only)
                    metrics.commit(self._clock.monotonic() - sent)

            future.add_done_callback(timed)
        return future

    def _raise_first(self, api: Api, codes: Iterable[int], sent: Generation | None) -> None:
        """Raise the error of the first non-retriable code, else of a retriable one."""
        errors = [e for e in (self.error_for(api, c, sent) for c in sorted(set(codes))) if e is not None]
        errors.sort(key=lambda e: isinstance(e, Retriable))
        if errors:
            raise errors[0]

    def commit_async(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> concurrent.futures.Future[None]:
        """One OffsetCommit with the current generation; the future completes with its outcome.

        Never retried. Errors set on the future: those of ``commit_sync``, with
        ``RetriableCommitFailedError`` for a retriable failure (coordinator unknown or moving,
        a timeout, COORDINATOR_LOAD_IN_PROGRESS).
        """
        result: concurrent.futures.Future[None] = concurrent.futures.Future()
        try:
            snap = self._snapshot()
            generation = self._commit_generation(snap)
            node = self._coordinator(snap)
        except Retriable as exc:
            result.set_exception(RetriableCommitFailedError(f"async commit not sent: {exc}"))
            return result
        except KGroupError as exc:
            result.set_exception(exc)
            return result
        request = self._send_commit(generation, offsets, node)
        self._pending_async[result] = None

        def done(f: concurrent.futures.Future[dict[TopicPartition, int]]) -> None:
            # runs on the network thread: only the group thread's inbox and this future
            self._pending_async.pop(result, None)
            exc = f.exception()
            if exc is not None:
                if not isinstance(exc, KGroupError):
                    self._group.post(ev.CoordinatorDead(f"OffsetCommit failed: {exc}"))
                    exc = RetriableCommitFailedError(f"async commit failed: {exc}")
                result.set_exception(exc)
                return
            try:
                self._raise_first(Api.OFFSET_COMMIT, f.result().values(), generation)
            except Retriable as retriable:
                result.set_exception(RetriableCommitFailedError(f"async commit failed: {retriable}"))
            except Exception as error:
                result.set_exception(error)
            else:
                result.set_result(None)
            self._mailbox.notify()

        request.add_done_callback(done)
        return result

    # ------------------------------------------------------------------ OffsetFetch
    def fetch_member(self, snap: GroupView) -> Generation | None:
        """The member id and epoch an OffsetFetch carries now (OffsetFetch v9+, KIP-848), or None.

        Under the consumer protocol, a member with an epoch sends its member id and epoch, as
        Java's ``CommitRequestManager`` does (its ``MemberInfo``, updated at every epoch change);
        without an epoch (joining, fenced, left), a classic member and a consumer outside the
        group (``assign()``) send none, which the coordinator does not check.
        """
        if self._config.group_protocol != "consumer" or getattr(self._group, "manual", False):
            return None
        return snap.generation if snap.generation.is_valid() else None

    def send_fetch(
        self, partitions: Iterable[TopicPartition], snap: GroupView, node: int
    ) -> concurrent.futures.Future[OffsetFetchResult]:
        """Send one OffsetFetch of ``partitions`` to ``node``, carrying :meth:`fetch_member` of ``snap``."""
        member = self.fetch_member(snap)
        if member is not None:
            log.debug("group %s: OffsetFetch with member %s epoch %d", self._config.group_id,
                      member.member_id, member.generation_id)
        request = offset_fetch_request(
            self._config.group_id, partitions,
            require_stable=self._config.isolation_level == "read_committed", member=member,
        )
        return self._transport.offset_fetch(request, node, self._config.request_timeout_ms)

    def fetch_committed(
        self, partitions: Iterable[TopicPartition], timeout_ms: int
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Committed offsets of ``partitions`` (absent: nothing committed).

        Raises:
            CoordinatorUnavailable: no answer within ``timeout_ms`` (ms).
            WakeupError: ``wakeup()`` interrupted the call.
            FatalGroupError, BrokerError: per the error table.

        """
        parts = sorted(partitions)

        def attempt(deadline: float) -> dict[TopicPartition, OffsetAndMetadata]:
            snap = self._snapshot()
            node = self._coordinator(snap)
            future = self.send_fetch(parts, snap, node)  # each attempt: the member's latest epoch
            result: OffsetFetchResult = self._await(Api.OFFSET_FETCH, future, deadline)
            self._raise_first(
                Api.OFFSET_FETCH, [result.error_code] + [c.error_code for c in result.partitions.values()], None
            )
            return {
                tp: OffsetAndMetadata(c.offset, c.metadata, c.leader_epoch)
                for tp, c in result.partitions.items()
                if c.offset >= 0
            }

        if not parts:
            return {}
        return self._retrying(Api.OFFSET_FETCH, attempt, timeout_ms)
