"""``kgroup.Consumer``: the public facade, run on the application's ("poll") thread.

Threads (design.md 2.5): the caller's thread runs ``poll()``, listener callbacks, commits and
offset lookups; the group thread (``kgroup._driver.group_thread``) owns the membership
machine and heartbeats; kafka-python's IO thread owns the sockets. They share only the
group thread's inbox, the mailbox and a published snapshot.

The poll loop, one pass (seed 001's steps as seen from the application):

1. tell the group thread we are polling (resets the max.poll.interval watchdog, KIP-62);
2. run delivered rebalance steps: *acquiesce* (no record of a partition being revoked is
   handed out once its revocation starts; its buffered records are dropped), *commit*
   (auto-commit on revoke), the listener callbacks, then ``StepCompleted``;
3. *OffsetFetch* positions for newly assigned partitions (auto_offset_reset otherwise);
4. *fetch* through kafka-python's Fetcher, only owned, unpaused partitions;
5. before returning, steps that arrived meanwhile run first and drop the records of the
   partitions they take away.
"""

from __future__ import annotations

import concurrent.futures
import logging
import random
import threading
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

import tenacity

from kgroup._clock import Clock, MonotonicClock
from kgroup._driver.group_thread import GroupThread
from kgroup._driver.mailbox import Mailbox

# imported with kgroup, not at the first subscribe(): kafka-python and the C record decoder
# take ~0.2 s to import, which a joining member would otherwise add to its JoinGroup
from kgroup._io.kafka_python import KafkaPythonTransport
from kgroup._io.transport import OffsetFetchResult, RecordFetcher, Transport
from kgroup.config import ConsumerConfig
from kgroup.errors import (
    Api,
    CommitFailedError,
    ConfigError,
    ConsumerClosedError,
    CoordinatorUnavailable,
    Disposition,
    FatalGroupError,
    IllegalStateError,
    KGroupError,
    ListenerError,
    NoOffsetForPartitionError,
    RebalanceInProgressError,
    WakeupError,
    broker_error,
    classify,
)
from kgroup.listener import RebalanceListener
from kgroup.membership import events as ev
from kgroup.membership.commands import RebalanceStep
from kgroup.membership.machine import MemberSnapshot
from kgroup.membership.states import MemberState
from kgroup.types import ConsumerRecord, GroupMetadata, OffsetAndMetadata, TopicPartition

__all__ = ["Consumer"]

log = logging.getLogger(__name__)

_REBALANCING = (MemberState.JOINING, MemberState.ASSIGNING, MemberState.SYNCING)
#: longest a single fetch wait blocks before the poll loop looks at its mailbox again: a
#: rebalance step (revoke, assign) posted meanwhile waits at most this long for its callback,
#: and under EAGER the whole group waits for that callback (benchmarks/results.md, rebalances)
_FETCH_SLICE_MS = 20
#: close(group_membership=...) -> Leave.send_leave_group (None: dynamic leaves, static stays)
_CLOSE_POLICIES: dict[str, bool | None] = {"default": None, "remain": False, "leave": True}


class _Retriable(Exception):
    """Internal: a retriable failure inside a tenacity loop."""


class Consumer:
    """A member of a Kafka consumer group (the Java ``KafkaConsumer``'s group semantics).

    ``Consumer(bootstrap_servers="host:9092", group_id="billing", **config)`` or
    ``Consumer(ConsumerConfig(...))``. Keyword names and defaults are ``ConsumerConfig``'s.
    The constructor starts nothing: threads start on ``subscribe()``.

    Args:
        config: a ``ConsumerConfig``; or pass its fields as keywords instead.
        transport: a ``Transport`` (tests); default: kafka-python's network client.
        clock: a ``Clock`` (tests); default: the monotonic clock.
        **kwargs: ``ConsumerConfig`` fields.

    Raises:
        ConfigError: a bad or unknown configuration value, naming the field.

    Use it from one thread (the "poll thread"); ``wakeup()`` is the only method safe to call
    from another thread.

    """

    def __init__(
        self,
        config: ConsumerConfig | None = None,
        /,
        *,
        transport: Transport | None = None,
        clock: Clock | None = None,
        **kwargs: Any,
    ) -> None:
        if config is None:
            config = ConsumerConfig.from_kwargs(**kwargs)
        elif kwargs:
            raise TypeError("pass either a ConsumerConfig or keyword arguments, not both")
        self._config = config
        self._clock = clock or MonotonicClock()
        self._transport_arg = transport
        self._transport: Transport | None = None
        self._fetcher: RecordFetcher | None = None
        self._mailbox = Mailbox()
        self._group: GroupThread | None = None
        self._listener: RebalanceListener = RebalanceListener()
        self._assignment: frozenset[TopicPartition] = frozenset()
        self._needs_position: set[TopicPartition] = set()
        self._paused: set[TopicPartition] = set()
        self._errors: list[Exception] = []
        self._fatal: Exception | None = None
        self._closed = False
        self._closing = False
        self._in_callback = False
        self._poll_thread: int | None = None
        self._last_polled_sent = float("-inf")
        self._next_auto_commit = float("inf")
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._rng = random.Random()

    # ------------------------------------------------------------------ properties
    @property
    def config(self) -> ConsumerConfig:
        """The consumer's configuration."""
        return self._config

    def _snapshot(self) -> MemberSnapshot | None:
        return self._group.snapshot if self._group is not None else None

    # ------------------------------------------------------------------ lifecycle
    def _ensure_started(self) -> None:
        if self._group is not None:
            return
        if self._transport_arg is not None:
            transport: Transport = self._transport_arg
        else:
            kp = KafkaPythonTransport(self._config)
            try:
                kp.start(self._config.default_api_timeout_ms)
            except Exception as exc:
                kp.close()
                raise KGroupError(
                    f"could not reach the cluster at {self._config.bootstrap_servers!r}: {exc}"
                ) from exc
            transport = kp
        self._transport = transport
        self._fetcher = transport.fetcher()
        self._group = GroupThread(self._config, transport, self._mailbox, self._clock, self._rng)
        self._group.start()
        if self._config.enable_auto_commit:
            self._next_auto_commit = self._clock.monotonic() + self._config.auto_commit_interval_ms / 1000

    def _check_open(self) -> None:
        if self._closed:
            raise ConsumerClosedError("the consumer is closed")
        if self._fatal is not None:
            raise self._fatal

    def __enter__(self) -> Consumer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ subscription
    def subscribe(self, topics: Iterable[str], listener: RebalanceListener | None = None) -> None:
        """Join the group for ``topics`` (replacing an earlier subscription).

        Args:
            topics: topic names (an iterable of str; a bare str is one topic).
            listener: a ``RebalanceListener`` subclass instance; callbacks run on the thread
                that calls ``poll()``/``close()``.

        Raises:
            IllegalStateError: empty topic list, or a bad listener.
            ConsumerClosedError: after ``close()``.

        """
        self._check_open()
        if isinstance(topics, str):
            topics = (topics,)
        wanted = frozenset(topics)
        if not wanted or not all(isinstance(t, str) and t for t in wanted):
            raise IllegalStateError(f"subscribe() needs a non-empty list of topic names, got {topics!r}")
        if listener is not None:
            if not isinstance(listener, RebalanceListener):
                raise IllegalStateError("listener must be a kgroup.RebalanceListener instance")
            self._listener = listener
        self._ensure_started()
        assert self._group is not None
        self._group.post(ev.Subscribe(wanted))

    def subscription(self) -> frozenset[str]:
        """The subscribed topics (empty before ``subscribe``)."""
        snap = self._snapshot()
        return snap.subscription if snap is not None else frozenset()

    # ------------------------------------------------------------------ poll
    def poll(self, timeout_ms: int = 0) -> list[ConsumerRecord]:
        """Run due rebalance callbacks and return records of owned partitions.

        Args:
            timeout_ms: the longest to wait for records, in ms (>= 0).

        Returns:
            Up to ``max_poll_records`` ``ConsumerRecord``s, in offset order per partition.

        Raises:
            ListenerError: a rebalance callback raised (the rebalance still completed).
            FatalGroupError / FencedInstanceIdError: the member cannot continue.
            NoOffsetForPartitionError: auto_offset_reset="none" and no committed offset.
            WakeupError: ``wakeup()`` was called.
            IllegalStateError: not subscribed, or called from a listener callback.
            ConsumerClosedError: after ``close()``.

        """
        self._check_open()
        if self._in_callback:
            raise IllegalStateError("poll() must not be called from a rebalance listener callback")
        if self._group is None:
            raise IllegalStateError("poll() before subscribe(): the consumer is not subscribed to any topic")
        if timeout_ms < 0:
            raise ValueError("timeout_ms must be >= 0")
        self._poll_thread = threading.get_ident()
        deadline = self._clock.monotonic() + timeout_ms / 1000
        assert self._fetcher is not None
        first = True
        while True:
            self._signal_polled(force=first)  # once per poll() resets the watchdog (KIP-62)
            first = False
            self._drain_mailbox(records=None)
            self._raise_pending()
            if self._mailbox.consume_wakeup():
                raise WakeupError("poll() interrupted by wakeup()")
            self._maybe_auto_commit()
            self._update_positions()
            remaining_ms = max(0, int((deadline - self._clock.monotonic()) * 1000))
            records: list[ConsumerRecord] = []
            if self._fetchable():
                records = self._fetcher.fetch(self._config.max_poll_records, min(remaining_ms, _FETCH_SLICE_MS))
            records = self._drain_mailbox(records)
            if records:
                # errors that arrived with records wait for the next poll(): no record is lost
                if self._fatal is not None:
                    raise self._fatal
                return records
            self._raise_pending()
            if self._clock.monotonic() >= deadline:
                return []
            if not self._fetchable():
                self._mailbox.wait(min(deadline - self._clock.monotonic(), _FETCH_SLICE_MS / 1000))
            elif self._fetcher.idle():
                # nothing in flight to wait on (no leader known yet, a reset pending): back off
                self._mailbox.wait(min(deadline - self._clock.monotonic(), self._config.retry_backoff_ms / 1000))

    def _fetchable(self) -> bool:
        return bool(self._assignment - self._paused - self._needs_position)

    def _signal_polled(self, *, force: bool = False) -> None:
        now = self._clock.monotonic()
        if force or now - self._last_polled_sent >= 0.5:
            self._last_polled_sent = now
            assert self._group is not None
            self._group.post(ev.Polled())

    def _raise_pending(self) -> None:
        if self._fatal is not None:
            raise self._fatal
        if self._errors:
            error = self._errors.pop(0)
            raise error

    def _drain_mailbox(self, records: list[ConsumerRecord] | None) -> list[ConsumerRecord]:
        """Run every delivered step; drop records of partitions taken away (acquiesce)."""
        items = self._mailbox.take_all()
        kept = records or []
        if not items:
            return kept
        taken: set[TopicPartition] = set()
        for item in items:
            if isinstance(item, RebalanceStep):
                taken |= item.lost | item.revoked
                if item.invoke_assigned:
                    taken |= self._assignment - item.owned
        if kept and taken:
            kept = self._drop_records(kept, taken)
        for item in items:
            if isinstance(item, RebalanceStep):
                self._run_step(item)
            else:
                self._on_error(item)
        return kept

    def _drop_records(self, records: list[ConsumerRecord], taken: set[TopicPartition]) -> list[ConsumerRecord]:
        kept: list[ConsumerRecord] = []
        first_dropped: dict[TopicPartition, int] = {}
        for record in records:
            tp = record.topic_partition
            if tp in taken:
                first_dropped.setdefault(tp, record.offset)
            else:
                kept.append(record)
        assert self._fetcher is not None
        for tp, offset in first_dropped.items():
            # acquiesce: the records were not handed out, so the position goes back
            self._fetcher.seek(tp, offset)
        if first_dropped:
            log.info(
                "group %s: acquiesce: dropped records of %d partitions whose revocation started",
                self._config.group_id, len(first_dropped),
            )
        return kept

    def _on_error(self, error: Exception) -> None:
        snap = self._snapshot()
        if isinstance(error, FatalGroupError) or (snap is not None and snap.state is MemberState.FATAL):
            self._fail(error)
        else:
            self._errors.append(error)

    def _fail(self, error: Exception) -> None:
        """A fatal error: lost callbacks for everything owned, then poison the consumer."""
        if self._fatal is not None:
            return
        self._fatal = error
        lost = self._assignment
        self._set_assignment(frozenset())
        if lost:
            self._invoke("on_partitions_lost", lost)

    # ------------------------------------------------------------------ rebalance steps
    def _set_assignment(self, partitions: frozenset[TopicPartition]) -> None:
        assert self._fetcher is not None
        added = partitions - self._assignment
        self._assignment = partitions
        self._needs_position = (self._needs_position & partitions) | set(added)
        self._paused &= partitions
        self._fetcher.assign(partitions)

    def _invoke(self, callback: str, partitions: frozenset[TopicPartition]) -> None:
        self._in_callback = True
        try:
            getattr(self._listener, callback)(partitions)
        except Exception as exc:
            log.exception("group %s: %s raised", self._config.group_id, callback)
            error = ListenerError(f"{type(self._listener).__name__}.{callback} raised {exc!r}")
            error.__cause__ = exc
            self._errors.append(error)
        finally:
            self._in_callback = False

    def _run_step(self, step: RebalanceStep) -> None:
        group_id = self._config.group_id
        if step.lost:
            log.info("group %s: partitions lost (%s): %s", group_id, step.reason, sorted(map(str, step.lost)))
            self._set_assignment(self._assignment - step.lost)
            self._invoke("on_partitions_lost", step.lost)
        if step.revoked and not self._generation_still(step):
            # The step was made while the generation was valid, but the group thread reset it
            # before this thread ran the step (e.g. the poll watchdog fired while a rebalance
            # waited for this poll). Java decides revoke-or-lose when onJoinPrepare runs, not
            # when the rebalance was noticed: the partitions can no longer be committed, so
            # they are lost, not revoked (ConsumerCoordinator.onJoinPrepare/onLeavePrepare).
            log.info(
                "group %s: partitions lost (generation %d was reset before the revoke ran): %s",
                group_id, step.generation.generation_id, sorted(map(str, step.revoked)),
            )
            self._set_assignment(self._assignment - step.revoked)
            self._invoke("on_partitions_lost", step.revoked)
        elif step.revoked:
            log.info("group %s: acquiesce: revoking %d partitions (%s)", group_id, len(step.revoked), step.reason)
            if self._config.enable_auto_commit:
                self._auto_commit_sync("commit: auto-commit on revoke", step)
            self._invoke("on_partitions_revoked", step.revoked)
            self._set_assignment(self._assignment - step.revoked)
        if step.invoke_assigned:
            self._set_assignment(step.owned)
            log.info(
                "group %s: generation %d: assigned %s",
                group_id, step.generation.generation_id, sorted(map(str, step.assigned)),
            )
            self._invoke("on_partitions_assigned", step.assigned)
        assert self._group is not None
        self._group.post(ev.StepCompleted(step.step_id))

    def _generation_still(self, step: RebalanceStep) -> bool:
        """Whether the member still holds the generation ``step`` was made in."""
        snap = self._snapshot()
        if snap is None:
            return False
        current = snap.generation
        return (
            current.is_valid()
            and current.generation_id == step.generation.generation_id
            and current.member_id == step.generation.member_id
        )

    # ------------------------------------------------------------------ positions
    def _update_positions(self, timeout_ms: int | None = None) -> None:
        """Step 6 (OffsetFetch): positions for assigned partitions that have none."""
        if not self._needs_position or self._fatal is not None:
            return
        assert self._fetcher is not None
        wanted = sorted(self._needs_position)
        committed = self._fetch_committed(wanted, timeout_ms or self._config.default_api_timeout_ms)
        missing: list[TopicPartition] = []
        for tp in wanted:
            om = committed.get(tp)
            if om is not None:
                self._fetcher.seek(tp, om.offset, om.leader_epoch)
            elif self._config.auto_offset_reset == "none":
                missing.append(tp)
                continue
            else:
                self._fetcher.request_reset(tp, self._config.auto_offset_reset)
            self._needs_position.discard(tp)
        if missing:
            raise NoOffsetForPartitionError(frozenset(missing))

    def _fetch_committed(
        self, partitions: Iterable[TopicPartition], timeout_ms: int
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        parts = list(partitions)

        def attempt() -> dict[TopicPartition, OffsetAndMetadata]:
            node = self._coordinator_or_retry()
            assert self._transport is not None
            try:
                result: OffsetFetchResult = self._transport.offset_fetch(
                    self._config.group_id, parts, node, self._config.request_timeout_ms
                ).result(timeout=self._config.request_timeout_ms / 1000 + 1)
            except (concurrent.futures.TimeoutError, ConnectionError, OSError) as exc:
                self._coordinator_dead(f"OffsetFetch failed: {exc}")
                raise _Retriable(str(exc)) from exc
            except Exception as exc:
                if isinstance(exc, KGroupError):
                    raise
                self._coordinator_dead(f"OffsetFetch failed: {exc}")
                raise _Retriable(str(exc)) from exc
            codes = [result.error_code] + [c.error_code for c in result.partitions.values()]
            for code in codes:
                self._handle_offset_code(Api.OFFSET_FETCH, code)
            return {
                tp: OffsetAndMetadata(c.offset, c.metadata, c.leader_epoch)
                for tp, c in result.partitions.items()
                if c.offset >= 0
            }

        found: dict[TopicPartition, OffsetAndMetadata] = self._retrying(attempt, timeout_ms)
        return found

    def _coordinator_or_retry(self) -> int:
        snap = self._snapshot()
        if snap is None:
            raise IllegalStateError("not subscribed")
        if snap.fatal is not None:
            raise snap.fatal
        if snap.coordinator is None:
            raise _Retriable("coordinator unknown")
        return snap.coordinator

    def _coordinator_dead(self, reason: str) -> None:
        if self._group is not None:
            self._group.post(ev.CoordinatorDead(reason))

    def _handle_offset_code(self, api: Api, code: int, generation: Any = None) -> None:
        """Act on an OffsetCommit/OffsetFetch error code per ``kgroup.errors.TABLE``."""
        if code == 0:
            return
        disposition = classify(api, code)
        assert self._group is not None
        if disposition is Disposition.RETRY:
            raise _Retriable(f"{api.value}: error {code}")
        if disposition is Disposition.REDISCOVER:
            self._coordinator_dead(f"{api.value} returned error {code}")
            raise _Retriable(f"{api.value}: coordinator moved ({code})")
        if disposition is Disposition.REJOIN:
            self._group.post(ev.RequestRejoin(f"{api.value} returned REBALANCE_IN_PROGRESS"))
            raise broker_error(api, code, "the group is rebalancing; poll() and retry")
        if disposition in (Disposition.RESET_GENERATION, Disposition.RESET_MEMBER):
            if generation is not None:
                self._group.post(ev.CommitErrorObserved(generation, code, api.value))
            raise CommitFailedError(
                f"{api.value} failed: the member's generation is no longer valid ({broker_error(api, code).name}); "
                "the partitions may now belong to another member. No offsets were written."
            )
        if disposition is Disposition.FATAL:
            if generation is not None:
                self._group.post(ev.CommitErrorObserved(generation, code, api.value))
            # name the instance id: FENCED_INSTANCE_ID means another process uses it (KIP-345)
            raise broker_error(
                api, code,
                f"group_id={self._config.group_id!r}, group_instance_id={self._config.group_instance_id!r}",
            )
        raise broker_error(api, code, f"group_id={self._config.group_id!r}")

    def _retrying(self, fn: Any, timeout_ms: int) -> Any:
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_delay(timeout_ms / 1000),
            wait=tenacity.wait_exponential(
                multiplier=self._config.retry_backoff_ms / 1000,
                max=self._config.retry_backoff_max_ms / 1000,
            )
            + tenacity.wait_random(0, self._config.retry_backoff_ms / 1000 / 5),
            retry=tenacity.retry_if_exception_type(_Retriable),
            sleep=self._clock.sleep,
            reraise=True,
        )
        try:
            return retrying(fn)
        except _Retriable as exc:
            raise CoordinatorUnavailable(
                Api.OFFSET_COMMIT, 15, f"gave up after {timeout_ms} ms: {exc}"
            ) from exc

    # ------------------------------------------------------------------ commits
    def _consumed_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata]:
        assert self._fetcher is not None
        out = {}
        for tp in partitions:
            if tp in self._needs_position or not self._fetcher.has_position(tp):
                continue
            position = self._fetcher.position(tp)
            if position is not None:
                out[tp] = OffsetAndMetadata(position)
        return out

    def _maybe_auto_commit(self) -> None:
        if not self._config.enable_auto_commit:
            return
        now = self._clock.monotonic()
        if now < self._next_auto_commit:
            return
        self._next_auto_commit = now + self._config.auto_commit_interval_ms / 1000
        snap = self._snapshot()
        if snap is None or snap.state is not MemberState.STABLE or not self._assignment:
            return
        offsets = self._consumed_offsets(self._assignment)
        if offsets:
            future = self.commit_async(offsets)
            future.add_done_callback(self._log_async_commit)

    def _log_async_commit(self, future: concurrent.futures.Future[None]) -> None:
        exc = future.exception()
        if exc is not None:
            log.warning("group %s: auto-commit failed: %s", self._config.group_id, exc)

    def _auto_commit_sync(self, reason: str, step: RebalanceStep) -> None:
        offsets = self._consumed_offsets(self._assignment)
        if not offsets:
            return
        log.info("group %s: %s (%d partitions)", self._config.group_id, reason, len(offsets))
        try:
            self._commit(offsets, self._config.default_api_timeout_ms)
        except KGroupError as exc:
            log.warning("group %s: auto-commit on revoke failed: %s", self._config.group_id, exc)

    def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> None:
        """Commit offsets synchronously (OffsetCommit with this member's generation).

        Args:
            offsets: ``{TopicPartition: OffsetAndMetadata | int}``, the offset of the next
                record to read; default: the positions of the records handed out by poll().
            timeout_ms: how long to retry retriable errors (default_api_timeout_ms).

        Raises:
            CommitFailedError: a partition is not owned by this member, or the generation
                was reset (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID); no offset was written.
            RebalanceInProgressError: the group is rebalancing; call poll() then retry.
            FatalGroupError / FencedInstanceIdError: the member cannot continue.
            BrokerError: OFFSET_METADATA_TOO_LARGE, TOPIC_AUTHORIZATION_FAILED and the like.

        """
        self._check_open()
        if self._group is None:
            raise IllegalStateError("commit() before subscribe()")
        prepared = self._prepare_offsets(offsets)
        if prepared:
            self._commit(prepared, timeout_ms or self._config.default_api_timeout_ms)

    def commit_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None
    ) -> concurrent.futures.Future[None]:
        """Commit in the background; the future completes with None or the commit's error.

        The offsets are taken when called (default: positions of records handed out). Errors
        are those of ``commit()``, set on the future instead of raised.
        """
        self._check_open()
        if self._group is None:
            raise IllegalStateError("commit_async() before subscribe()")
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        try:
            prepared = self._prepare_offsets(offsets)
        except KGroupError as exc:
            future.set_exception(exc)
            return future
        if not prepared:
            future.set_result(None)
            return future
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="kgroup-commit")
        return self._executor.submit(self._commit, prepared, self._config.default_api_timeout_ms)

    def _prepare_offsets(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        if offsets is None:
            return self._consumed_offsets(self._assignment)
        prepared: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, value in offsets.items():
            if not isinstance(tp, TopicPartition):
                raise TypeError(f"commit() keys must be kgroup.TopicPartition, got {tp!r}")
            om = OffsetAndMetadata(value) if isinstance(value, int) else value
            if not isinstance(om, OffsetAndMetadata) or om.offset < 0:
                raise ValueError(f"bad offset for {tp}: {value!r}")
            prepared[tp] = om
        not_owned = set(prepared) - self._assignment
        if not_owned:
            raise CommitFailedError(
                f"cannot commit partitions this member does not own: {sorted(map(str, not_owned))}; "
                "they may belong to another member after a rebalance. No offsets were written."
            )
        return prepared

    def _commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata], timeout_ms: int) -> None:
        def attempt() -> None:
            snap = self._snapshot()
            assert snap is not None
            assert self._transport is not None
            if snap.fatal is not None:
                raise snap.fatal
            if snap.state in _REBALANCING:
                raise RebalanceInProgressError(
                    Api.OFFSET_COMMIT, 27, "the group is rebalancing; call poll() to complete it, then retry"
                )
            if not snap.generation.is_valid():
                raise CommitFailedError(
                    "the member has no valid generation (it was reset or left the group); "
                    "no offsets were written"
                )
            node = self._coordinator_or_retry()
            try:
                codes = self._transport.offset_commit(
                    self._config.group_id, snap.generation, self._config.group_instance_id,
                    offsets, node, self._config.request_timeout_ms,
                ).result(timeout=self._config.request_timeout_ms / 1000 + 1)
            except Exception as exc:
                if isinstance(exc, KGroupError):
                    raise
                self._coordinator_dead(f"OffsetCommit failed: {exc}")
                raise _Retriable(str(exc)) from exc
            for code in sorted(set(codes.values()), key=lambda c: classify(Api.OFFSET_COMMIT, c) is Disposition.RETRY):
                self._handle_offset_code(Api.OFFSET_COMMIT, code, snap.generation)
            log.debug("group %s: committed %d offsets", self._config.group_id, len(offsets))

        self._retrying(attempt, timeout_ms)

    def committed(
        self, partitions: Iterable[TopicPartition], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (OffsetFetch), None where nothing is committed.

        Raises:
            CoordinatorUnavailable: no answer within ``timeout_ms`` (default_api_timeout_ms).
            FatalGroupError: authorization failures.

        """
        self._check_open()
        if self._group is None:
            raise IllegalStateError("committed() before subscribe()")
        parts = list(partitions)
        found = self._fetch_committed(parts, timeout_ms or self._config.default_api_timeout_ms)
        return {tp: found.get(tp) for tp in parts}

    # ------------------------------------------------------------------ positions API
    def _require_assigned(self, tp: TopicPartition) -> None:
        if tp not in self._assignment:
            raise IllegalStateError(f"partition {tp} is not assigned to this consumer")

    def position(self, tp: TopicPartition, *, timeout_ms: int | None = None) -> int:
        """The offset of the next record ``poll()`` will return for ``tp``.

        Raises:
            IllegalStateError: ``tp`` is not assigned.
            NoOffsetForPartitionError: auto_offset_reset="none" and nothing committed.
            KGroupError: the position could not be found within ``timeout_ms``.

        """
        self._check_open()
        self._require_assigned(tp)
        assert self._fetcher is not None
        timeout = timeout_ms or self._config.default_api_timeout_ms
        deadline = self._clock.monotonic() + timeout / 1000
        self._update_positions(timeout)
        while True:
            if self._fetcher.has_position(tp):
                position = self._fetcher.position(tp)
                if position is not None:
                    return position
            if self._clock.monotonic() >= deadline:
                raise KGroupError(f"position of {tp} unknown after {timeout} ms")
            self._mailbox.wait(0.02)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Fetch ``tp`` from ``offset`` on the next ``poll()`` (>= 0).

        Raises:
            IllegalStateError: ``tp`` is not assigned.
            ValueError: a negative offset.

        """
        self._check_open()
        self._require_assigned(tp)
        if offset < 0:
            raise ValueError("offset must be >= 0")
        assert self._fetcher is not None
        self._fetcher.seek(tp, offset)
        self._needs_position.discard(tp)

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop fetching ``partitions`` (they stay assigned; no rebalance)."""
        self._check_open()
        assert self._fetcher is not None or not partitions
        for tp in partitions:
            self._require_assigned(tp)
            self._paused.add(tp)
            self._fetcher.pause(tp)  # type: ignore[union-attr]

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        """Fetch ``partitions`` again."""
        self._check_open()
        for tp in partitions:
            self._require_assigned(tp)
            self._paused.discard(tp)
            self._fetcher.resume(tp)  # type: ignore[union-attr]

    def paused(self) -> frozenset[TopicPartition]:
        """Paused partitions."""
        return frozenset(self._paused)

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions this consumer currently owns (as its listener last saw them)."""
        return self._assignment

    def group_metadata(self) -> GroupMetadata:
        """group_id, generation_id, member_id and group_instance_id (Java ``groupMetadata()``)."""
        snap = self._snapshot()
        generation_id = snap.generation.generation_id if snap else -1
        member_id = snap.generation.member_id if snap else ""
        return GroupMetadata(self._config.group_id, generation_id, member_id, self._config.group_instance_id)

    def member_state(self) -> MemberState:
        """The membership machine's state (for diagnostics)."""
        snap = self._snapshot()
        return snap.state if snap is not None else MemberState.UNJOINED

    def wakeup(self) -> None:
        """Make a blocked or the next ``poll()`` raise ``WakeupError``. Safe from any thread."""
        self._mailbox.wake()
        if self._fetcher is not None:
            self._fetcher.wakeup()

    # ------------------------------------------------------------------ close
    def close(
        self,
        timeout_ms: int = 30000,
        *,
        group_membership: str = "default",
        reason: str = "the consumer is being closed",
    ) -> None:
        """Leave the group (or not) and release resources.

        Runs ``on_partitions_revoked`` for owned partitions (after the auto-commit, if
        enabled; ``on_partitions_lost`` if the generation is no longer valid), then, depending
        on ``group_membership`` (KIP-1092's ``CloseOptions.GroupMembershipOperation``):

        * ``"default"``: a dynamic member sends LeaveGroup, a static member (``group_instance_id``
          set) does not and stays in the group until its session timeout, so a restart within
          ``session_timeout_ms`` gets its partitions back without a rebalance (KIP-345, seed 004);
        * ``"remain"``: no LeaveGroup, also for a dynamic member (the coordinator expires it
          after ``session_timeout_ms``);
        * ``"leave"``: LeaveGroup (v3+, with the instance id for a static member): use it when
          scaling a static deployment down, so its partitions move at once.

        Waits up to ``timeout_ms`` (ms) for the callbacks and the LeaveGroup, then stops the
        threads. Idempotent.

        Args:
            timeout_ms: how long to wait for the revoke callback and LeaveGroup, in ms.
            group_membership: ``"default"``, ``"remain"`` or ``"leave"``.
            reason: the KIP-800 reason sent with LeaveGroup and logged by the coordinator.

        Raises:
            IllegalStateError: called from inside a listener callback.
            ConfigError: ``group_membership`` is not one of the three values.

        """
        if group_membership not in _CLOSE_POLICIES:
            raise ConfigError(
                "group_membership", f"must be one of {sorted(_CLOSE_POLICIES)}, got {group_membership!r}"
            )
        if self._in_callback:
            raise IllegalStateError("close() must not be called from a rebalance listener callback")
        if self._closed or self._closing:
            return
        # not yet _closed: commit() must keep working inside the close revoke callback
        self._closing = True
        group = self._group
        try:
            if group is not None and self._fatal is None:
                group.post(ev.Leave(reason, send_leave_group=_CLOSE_POLICIES[group_membership]))
                deadline = self._clock.monotonic() + timeout_ms / 1000
                while self._clock.monotonic() < deadline:
                    self._drain_mailbox(None)
                    snap = group.snapshot
                    if snap.state in (MemberState.CLOSED, MemberState.FATAL):
                        break
                    self._mailbox.wait(0.05)
        finally:
            self._closed = True
            for error in self._errors:
                log.warning("group %s: error during close: %s", self._config.group_id, error)
            if group is not None:
                group.stop(5.0)
            if self._executor is not None:
                self._executor.shutdown(wait=True)
            if self._transport is not None and self._transport_arg is None:
                self._transport.close()
            log.info("group %s: consumer closed", self._config.group_id)
