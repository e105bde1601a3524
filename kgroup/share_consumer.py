"""``ShareConsumer``: a member of a share group (KIP-932, "Queues for Kafka"; Java's ``KafkaShareConsumer``).

Threads: the group thread (``kgroup._driver.group_thread.GroupThread`` with a
``ShareGroupMachine``) heartbeats and hands the assignment to the poll thread as steps; the
poll thread (the application's, inside ``poll()``, the commits and ``close()``) fetches and
acknowledges through ``kgroup._driver.share_fetch.ShareFetcher`` over the pure core
``kgroup._share``. docs/share-groups.md has the whole picture.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Generic, overload

from kgroup._clock import Clock, MonotonicClock
from kgroup._driver.runtime import Runtime, Threads
from kgroup._typevars import K, V
from kgroup.config import ShareConsumerConfig, resolve_bootstrap_servers
from kgroup.deserializers import DeserializerLike, as_function
from kgroup.errors import (
    ConsumerClosedError,
    FatalGroupError,
    GroupThreadCrashed,
    IllegalStateError,
    KGroupError,
    WakeupError,
)
from kgroup.membership import events as ev
from kgroup.membership.commands import RebalanceStep
from kgroup.membership.states import MemberState
from kgroup.metrics import ShareRecorder
from kgroup.types import AcknowledgeType, ShareConsumerRecord, TopicPartition

if TYPE_CHECKING:
    from kgroup.health import HealthReport

__all__ = ["AcknowledgementCommitCallback", "ShareConsumer"]

log = logging.getLogger(__name__)

#: Java's ``AcknowledgementCommitCallback.onComplete``: the offsets acknowledged, by partition, and
#: None or the error their acknowledgement failed with (``InvalidRecordStateError``: the lock expired)
AcknowledgementCommitCallback = Callable[[Mapping[TopicPartition, frozenset[int]], "KGroupError | None"], None]

#: Kafka's code of each acknowledgement type (``acknowledge()`` looks it up, not converting)
_CODES: dict[AcknowledgeType, int] = {kind: int(kind) for kind in AcknowledgeType}

#: the membership states in which a leave has finished
_LEFT = (MemberState.CLOSED, MemberState.UNJOINED, MemberState.FATAL)


class ShareConsumer(Generic[K, V]):
    """A share group's consumer: records acquired under locks and acknowledged one by one (KIP-932).

    ``ShareConsumer(bootstrap_servers="host:9092", group_id="orders", **config)``: the keywords of
    ``kgroup.config.ShareConsumerConfig.from_kwargs`` (``ConsumerConfig``'s that share groups
    take, plus ``share_acknowledgement_mode`` and ``share_acquire_mode``), or a
    ``ShareConsumerConfig``. Nothing starts before ``subscribe()``.

    Several members of a share group may read the same partition at once: the broker hands each
    ``poll()`` records it acquired for this member (``ShareConsumerRecord.delivery_count``: the
    how-many-th delivery), locked for ``acquisition_lock_timeout_ms()``; a record not acknowledged
    in that time goes to another member. Acknowledgements ride on the next ShareFetch: the next
    ``poll()``'s, or a commit's (``commit_sync``, ``commit_async``: a ShareFetch with
    ``max_wait_ms`` 0 whose records the next ``poll()`` returns); else, and at ``close()``, they
    go in a ShareAcknowledge.

    Args:
        config: a ``ShareConsumerConfig``; or its keywords instead.
        key_deserializer, value_deserializer: as ``Consumer``'s (``kgroup.deserializers``); a record
            that fails to deserialize is released and the error raised from ``poll()``.
        transport: a ``ShareGroupTransport`` (tests); default: kafka-python's network client.
        clock: a ``Clock`` (tests).
        _runtime: how the consumer gets its mailbox and runs its group thread (the deterministic
            simulator's seam, as ``Consumer``'s); default: real threads.

    Raises:
        ConfigError: a bad configuration value, a setting share groups do not take, or no
            resolvable ``bootstrap_servers``.

    Use it from one thread; ``wakeup()`` is the only method safe from another.

    """

    def __init__(
        self,
        config: ShareConsumerConfig | None = None,
        /,
        *,
        key_deserializer: DeserializerLike[K] | None = None,
        value_deserializer: DeserializerLike[V] | None = None,
        transport: Any = None,
        clock: Clock | None = None,
        _runtime: Runtime | None = None,
        **kwargs: Any,
    ) -> None:
        if config is None:
            config = ShareConsumerConfig.from_kwargs(**kwargs)
        elif kwargs:
            raise TypeError("pass either a ShareConsumerConfig or keyword arguments, not both")
        if transport is None:
            resolve_bootstrap_servers(config.consumer.bootstrap_servers)
        self._config = config
        self._clock = clock or MonotonicClock()
        self._transport_arg = transport
        self._transport: Any = None
        self._runtime: Runtime = _runtime or Threads()
        self._mailbox = self._runtime.mailbox()
        self._group: Any = None
        self._fetcher: Any = None
        self._key_fn, self._value_fn = as_function(key_deserializer), as_function(value_deserializer)
        self._callback: AcknowledgementCommitCallback | None = None
        self._subscription: frozenset[str] = frozenset()
        self._fatal: Exception | None = None
        self._closed = False
        self._rng = random.Random()
        #: heartbeats, reconciliations, fetches, acknowledgements and polls (``metrics()``)
        self._metrics = ShareRecorder(self._clock)
        #: when ``subscribe()`` was first called (clock seconds): ``health()``'s poll bound starts there
        self._subscribed_at: float | None = None

    # ------------------------------------------------------------------ properties
    @property
    def config(self) -> ShareConsumerConfig:
        """The share consumer's configuration."""
        return self._config

    @property
    def member_id(self) -> str | None:
        """The member id (a UUID the member generated, KIP-932), from ``subscribe()`` on; else None."""
        return self._group.share_member_id if self._group is not None else None

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions the coordinator assigned this member (others may share them), as last handed over."""
        return self._fetcher.assigned if self._fetcher is not None else frozenset()

    def subscription(self) -> frozenset[str]:
        """The subscribed topic names (empty when not subscribed)."""
        return self._subscription

    def acquisition_lock_timeout_ms(self) -> int | None:
        """The broker's acquisition lock timeout in ms (the group's ``share.record.lock.duration.ms``).

        From the last ShareFetch (or ShareAcknowledge v2) answer; None before the first. Java's
        ``KafkaShareConsumer.acquisitionLockTimeoutMs()``.
        """
        return self._fetcher.lock_timeout_ms if self._fetcher is not None else None

    # ------------------------------------------------------------------ lifecycle
    def _check_open(self) -> None:
        if self._closed:
            raise ConsumerClosedError("the share consumer is closed")
        if self._fatal is not None:
            raise self._fatal.with_traceback(None)

    def _ensure_started(self) -> None:
        if self._group is not None:
            return
        from kgroup._driver.group_thread import GroupThread
        from kgroup._driver.share_fetch import ShareFetcher

        if self._transport_arg is not None:
            self._transport = self._transport_arg
        else:
            from kgroup._io.share_transport import KafkaShareTransport

            self._transport = KafkaShareTransport(self._config.consumer)
            self._transport.start_async()
        group = GroupThread(self._config.consumer, self._transport, self._mailbox, self._clock, self._rng,
                            self._metrics, share=True)
        self._group = group
        member_id = group.share_member_id
        assert member_id is not None
        self._fetcher = ShareFetcher(self._config, self._transport, self._mailbox, self._clock, member_id,
                                     self._key_fn, self._value_fn, self._metrics)
        self._runtime.start(group)

    def __enter__(self) -> ShareConsumer[K, V]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ subscription
    def subscribe(self, topics: Iterable[str]) -> None:
        """Subscribe to ``topics`` by name (replacing the subscription); the member joins at the next ``poll()``.

        Raises:
            TypeError: ``topics`` is a string, or holds something else than strings.
            IllegalStateError: an empty list (use ``unsubscribe()``), or a blank name.
            ConsumerClosedError: the consumer is closed.

        """
        self._check_open()
        if isinstance(topics, str):
            raise TypeError("subscribe() takes a collection of topic names, not one string")
        names = list(topics)
        if any(not isinstance(t, str) for t in names):
            raise TypeError(f"topic names must be str, got {names!r}")
        if not names:
            raise IllegalStateError("subscribe() with no topics: call unsubscribe() instead")
        if any(not t.strip() for t in names):
            raise IllegalStateError(f"topic names must not be blank: {names!r}")
        self._ensure_started()
        if self._subscribed_at is None:
            self._subscribed_at = self._clock.monotonic()
        self._subscription = frozenset(names)
        self._group.post(ev.Subscribe(self._subscription))

    def unsubscribe(self) -> None:
        """Leave the group (epoch -1) and drop the subscription; the consumer stays usable.

        The acknowledgements due are sent first (implicit mode: what the last ``poll()``
        returned is accepted), then the share sessions are closed (the broker releases what the
        member still holds).
        """
        self._check_open()
        if self._group is None or not self._subscription:
            self._subscription = frozenset()
            return
        deadline = self._clock.monotonic() + self._config.consumer.default_api_timeout_ms / 1000
        self._finish_sessions(deadline)
        self._subscription = frozenset()
        self._group.post(ev.Unsubscribe())
        self._wait_left(deadline)
        self._fetcher.assign(frozenset())

    # ------------------------------------------------------------------ poll
    def poll(self, timeout_ms: int) -> list[ShareConsumerRecord[K, V]]:
        """Records acquired for this member, at most ``max_poll_records``; waits up to ``timeout_ms`` for some.

        First the acknowledgements due are taken: in implicit mode every record the last
        ``poll()`` returned is accepted; they go with the next ShareFetch to their leader, or in
        a ShareAcknowledge when no fetch is due for it. The acknowledgement commit callback runs
        here for every answered acknowledgement.

        Raises:
            IllegalStateError: explicit mode and a record the last ``poll()`` returned is not
                acknowledged (Java's ``IllegalStateException``); not subscribed.
            WakeupError: ``wakeup()`` was called.
            FatalGroupError: the member cannot go on (no share groups on the cluster, no
                authorization, ...); raised again by every later call.
            RecordDeserializationError, FetchError, BrokerError: a fetch's error (the records
                it concerns are released or rejected).
            ValueError: a negative ``timeout_ms``.

        """
        self._metrics.poll_started()
        try:
            return self._poll(timeout_ms)
        finally:
            self._metrics.poll_ended()

    def _poll(self, timeout_ms: int) -> list[ShareConsumerRecord[K, V]]:
        self._check_open()
        if timeout_ms < 0:
            raise ValueError(f"timeout_ms must not be negative, got {timeout_ms}")
        if not self._subscription:
            raise IllegalStateError("poll() needs a subscription: call subscribe() first")
        fetcher = self._fetcher
        fetcher.inflight.check_all_acknowledged()
        fetcher.take_acknowledgements()
        self._group.post(ev.Polled())
        fetcher.raise_errors()  # an error of the last poll's records (a deserializer's), before more
        deadline = self._clock.monotonic() + timeout_ms / 1000
        polled_at = self._clock.monotonic()
        while True:
            if self._clock.monotonic() - polled_at >= 0.5:  # a long poll() feeds the poll watchdog (Java's PollEvent)
                polled_at = self._clock.monotonic()
                self._group.post(ev.Polled())
            self._drain_mailbox()
            records = fetcher.hand_out(self._config.consumer.max_poll_records) if fetcher.has_buffered() else []
            fetcher.step(fetch=not records)
            fetcher.run_callbacks(self._callback)
            if not records:
                fetcher.raise_errors()
            if records:
                return records
            if fetcher.has_buffered():
                continue
            remaining = deadline - self._clock.monotonic()
            if self._mailbox.consume_wakeup():
                raise WakeupError("wakeup() interrupted poll()")
            if remaining <= 0:
                return []
            self._mailbox.wait_until(
                lambda: fetcher.ready() or self._mailbox.has_items() or self._mailbox.woken, min(remaining, 1.0)
            )

    def _drain_mailbox(self) -> None:
        for item in self._mailbox.take_all():
            if isinstance(item, RebalanceStep):
                self._fetcher.assign(item.owned)
                self._group.post(ev.StepCompleted(item.step_id))
            else:
                if isinstance(item, (FatalGroupError, GroupThreadCrashed)) or self._group.crashed is not None:
                    self._fatal = item
                raise item

    # ------------------------------------------------------------------ acknowledgements
    @overload
    def acknowledge(self, record: ShareConsumerRecord[Any, Any], type: AcknowledgeType = ...) -> None: ...
    @overload
    def acknowledge(self, record: str, partition: int, offset: int, type: AcknowledgeType = ...) -> None: ...

    def acknowledge(self, record: Any, *args: Any, **kwargs: Any) -> None:
        """Acknowledge a record the last ``poll()`` returned (explicit mode): ``ACCEPT`` unless ``type`` says.

        ``acknowledge(record, type=AcknowledgeType.RELEASE)`` or ``acknowledge(topic, partition,
        offset, type)``. The acknowledgement is sent with the next ``poll()``'s fetch or the
        next commit; ``RENEW`` renews the record's lock and leaves it to acknowledge (KIP-1222).

        Raises:
            IllegalStateError: implicit mode, or the record is not waiting for an acknowledgement.
            TypeError: a bad argument.

        """
        if self._closed or self._fatal is not None:
            self._check_open()
        if type(record) is ShareConsumerRecord and not kwargs and len(args) < 2:  # the usual call: no parsing
            kind = args[0] if args else AcknowledgeType.ACCEPT
            key, offset = record[:2], record[2]
        elif isinstance(record, str):
            if len(args) < 2:
                raise TypeError("acknowledge(topic, partition, offset, type=AcknowledgeType.ACCEPT)")
            key, offset = (record, int(args[0])), int(args[1])
            kind = kwargs.pop("type", args[2] if len(args) > 2 else AcknowledgeType.ACCEPT)
        elif isinstance(record, ShareConsumerRecord):
            key, offset = (record.topic, record.partition), record.offset
            kind = kwargs.pop("type", args[0] if args else AcknowledgeType.ACCEPT)
        else:
            raise TypeError(f"acknowledge() takes a ShareConsumerRecord or (topic, partition, offset), got {record!r}")
        if kwargs:
            raise TypeError(f"unexpected keywords {sorted(kwargs)}")
        code = _CODES.get(kind) if type(kind) is AcknowledgeType else None
        if code is None:
            raise TypeError(f"type must be an AcknowledgeType, got {kind!r}")
        if self._fetcher is None:
            raise IllegalStateError("nothing to acknowledge: poll() returned no records")
        self._fetcher.inflight.acknowledge_record(key, offset, code)

    def set_acknowledgement_commit_callback(self, callback: AcknowledgementCommitCallback | None) -> None:
        """Call ``callback(offsets, error)`` on the poll thread once acknowledgements are answered.

        ``offsets``: the acknowledged offsets by partition; ``error``: None, or the typed error
        their acknowledgement failed with. It runs inside ``poll()``, the commits and ``close()``;
        an exception it raises is raised from that call. Java's ``AcknowledgementCommitCallback``.
        """
        self._callback = callback

    def commit_sync(self, timeout_ms: int | None = None) -> dict[TopicPartition, KGroupError | None]:
        """Send the acknowledgements due now and wait for their answers.

        To a leader whose share session is open, whose partitions they are for are still
        assigned and from which no fetched records wait, they ride a ShareFetch with
        ``max_wait_ms`` 0: the broker applies them and answers at once, and the records it
        acquired with that answer are the next ``poll()``'s (no request of its own). To any
        other leader they go in a ShareAcknowledge.

        Args:
            timeout_ms: how long to wait (None: ``default_api_timeout_ms``).

        Returns:
            Per partition acknowledged: None, or the typed error its acknowledgements failed with
            (``InvalidRecordStateError``: the lock expired and the record went elsewhere); a
            partition still unanswered at the timeout has a ``KafkaTimeoutError``. Empty when
            nothing was due.

        Raises:
            WakeupError: ``wakeup()`` was called.

        """
        from kgroup.errors import KafkaTimeoutError

        self._check_open()
        if self._fetcher is None:
            return {}
        fetcher = self._fetcher
        fetcher.take_outcomes()  # answers of earlier acknowledgements (a poll's): not this commit's
        fetcher.take_acknowledgements()
        timeout_ms = self._config.consumer.default_api_timeout_ms if timeout_ms is None else timeout_ms
        deadline = self._clock.monotonic() + timeout_ms / 1000
        waiting = fetcher.queued()
        results: dict[TopicPartition, KGroupError | None] = {}
        while True:
            self._drain_mailbox()
            fetcher.step(fetch=False, commit=True)
            results.update(fetcher.take_outcomes())
            fetcher.run_callbacks(self._callback)
            if not fetcher.pending() or waiting <= set(results):
                break
            if self._mailbox.consume_wakeup():
                raise WakeupError("wakeup() interrupted commit_sync()")
            remaining = deadline - self._clock.monotonic()
            if remaining <= 0:
                for tp in waiting - set(results):
                    results[tp] = KafkaTimeoutError(
                        f"the acknowledgements of {tp} were not answered in {timeout_ms} ms"
                    )
                break
            self._mailbox.wait_until(lambda: fetcher.ready() or self._mailbox.woken, min(remaining, 1.0))
        return {tp: results[tp] for tp in sorted(results)}

    def commit_async(self) -> None:
        """Send the acknowledgements due now without waiting; the callback reports their outcome in a later call.

        They travel as ``commit_sync()``'s do (a ShareFetch with ``max_wait_ms`` 0 where it can,
        else a ShareAcknowledge); the records that fetch brings are the next ``poll()``'s.
        """
        self._check_open()
        if self._fetcher is None:
            return
        self._fetcher.take_acknowledgements()
        self._fetcher.step(fetch=False, commit=True)
        self._fetcher.run_callbacks(self._callback)

    # ------------------------------------------------------------------ metrics, health
    def metrics(self) -> dict[str, float]:
        """A snapshot of the share consumer's metrics, keyed by Java's ``KafkaShareConsumer`` metric names.

        Returns:
            ``{name: value}`` for every name of ``kgroup.metrics.SHARE_METRICS`` (groups
            ``consumer-share-fetch-manager-metrics``, ``consumer-share-coordinator-metrics`` and
            ``consumer-share-metrics``; its table gives each unit: latencies in ms,
            ``*-seconds-ago`` in s, rates per second or per hour; NaN for a windowed statistic
            with no sample in the last 60 s).

        Safe from any thread; never blocks on the network.

        """
        return self._metrics.share_snapshot()

    def health(self) -> HealthReport:
        """Liveness and readiness verdicts for probes (``kgroup.health``'s, for a share member).

        Live: not closed, no fatal error, ``poll()`` called within ``max_poll_interval_ms``
        (after it the member leaves the group, as Java's share consumer). Ready: live, STABLE
        with a member epoch from the share coordinator, and a ShareGroupHeartbeat answered
        without error within ``session_timeout_ms`` (the broker's
        ``group.share.session.timeout.ms`` defaults to the same 45000 ms).

        Returns:
            A ``kgroup.health.HealthReport``: ``state``, ``live``, ``ready``, ``reasons``.

        Safe from any thread; never blocks.

        """
        from kgroup.health import HealthInputs, assess

        group = self._group
        snap = group.snapshot if group is not None else None
        fatal = self._fatal or (snap.fatal if snap is not None else None)
        if fatal is None and group is not None:
            fatal = group.crashed
        consumer = self._config.consumer
        return assess(
            HealthInputs(
                closed=self._closed, manual=False, snapshot=snap, fatal=fatal,
                last_poll=self._metrics.last_poll(), subscribed_at=self._subscribed_at,
                max_poll_interval_ms=consumer.max_poll_interval_ms, session_timeout_ms=consumer.session_timeout_ms,
                last_group_ok=self._metrics.last_group_ok, assigned_partitions=len(self.assignment()),
            ),
            self._clock.monotonic(),
        )

    # ------------------------------------------------------------------ wakeup, close
    def wakeup(self) -> None:
        """Interrupt a blocking ``poll()`` or ``commit_sync()`` (from any thread): it raises ``WakeupError``."""
        self._mailbox.wake()

    def close(self, timeout_ms: int | None = None) -> None:
        """Acknowledge, close the share sessions, leave the group (epoch -1), stop; at most ``timeout_ms``.

        Implicit mode accepts what the last ``poll()`` returned; in explicit mode what was
        acknowledged is sent and the rest is released by the sessions' close (ShareAcknowledge
        with epoch -1 to each leader). Idempotent. ``timeout_ms`` None: 30000 ms (Java's
        ``KafkaShareConsumer.close()``).
        """
        if self._closed:
            return
        self._closed = True
        timeout_ms = 30000 if timeout_ms is None else timeout_ms
        deadline = self._clock.monotonic() + timeout_ms / 1000
        self._mailbox.disable_wakeups()
        try:
            if self._group is not None:
                if self._fatal is None and self._group.crashed is None:
                    self._finish_sessions(deadline)
                    self._group.post(ev.Leave())
                    self._wait_left(deadline)
                self._runtime.stop(self._group, max(0.0, deadline - self._clock.monotonic()) + 1.0)
        finally:
            if self._transport is not None and self._transport_arg is None:
                self._transport.close()

    def _finish_sessions(self, deadline: float) -> None:
        """Send the acknowledgements due, then close every share session, by ``deadline``."""
        fetcher = self._fetcher
        fetcher.take_acknowledgements()
        while self._clock.monotonic() < deadline:
            try:
                self._drain_mailbox()
            except Exception:
                log.debug("share group %s: an error while closing", self._config.consumer.group_id, exc_info=True)
                if self._fatal is not None:
                    return
            fetcher.step(fetch=False)
            fetcher.discard_buffered()  # fetched, never handed out: the sessions' close releases them
            if fetcher.idle():
                fetcher.close_sessions()
            try:
                fetcher.run_callbacks(self._callback)
            except Exception:
                log.warning("share group %s: the acknowledgement commit callback raised at close",
                            self._config.consumer.group_id, exc_info=True)
            if fetcher.closing_done() and not fetcher.pending():
                return
            self._mailbox.wait_until(fetcher.ready, min(deadline - self._clock.monotonic(), 1.0))

    def _wait_left(self, deadline: float) -> None:
        group = self._group
        while self._clock.monotonic() < deadline:
            for item in self._mailbox.take_all():
                if isinstance(item, RebalanceStep):
                    self._fetcher.assign(item.owned)
                    group.post(ev.StepCompleted(item.step_id))
            if group.snapshot.state in _LEFT or group.crashed is not None:
                return
            self._mailbox.wait_until(
                lambda: self._mailbox.has_items() or group.snapshot.state in _LEFT,
                min(deadline - self._clock.monotonic(), 1.0),
            )
        log.warning("share group %s: the leave was not answered in time; the coordinator removes the member after "
                    "group.share.session.timeout.ms", self._config.consumer.group_id)
