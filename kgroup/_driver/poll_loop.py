"""The loop of ``Consumer.poll()`` and ``poll_columns()``, on the application's ("poll") thread.

One pass (the classic protocol's steps as seen from the application):

1. tell the group thread we are polling (resets the max.poll.interval watchdog, KIP-62);
2. run delivered rebalance steps (``kgroup._driver.steps``): *acquiesce* (no record of a
   partition being revoked is handed out once its revocation starts; its buffered records are
   dropped), *commit* (auto-commit on revoke), the listener callbacks, then ``StepCompleted``;
3. *OffsetFetch* positions for newly assigned partitions (auto_offset_reset otherwise),
   bounded by the poll's timeout: an unanswered look-up is reused by the next ``poll()``
   (``kgroup._driver.lookups``);
4. *fetch* through the record fetcher, only owned, unpaused partitions;
5. before returning, steps that arrived meanwhile run first and drop the records of the
   partitions they take away; the records of kept partitions are *held* while those steps
   run, so their commits cannot cover records the application has not received.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol

from kgroup._driver.records import columns_size, deserialize, fetch_columns, records_size
from kgroup.errors import ClusterUnreachableError, IllegalStateError, RecordDeserializationError, WakeupError
from kgroup.membership import events as ev
from kgroup.types import TopicPartition

if TYPE_CHECKING:
    from kgroup._clock import Clock
    from kgroup._driver.mailbox import Mailbox
    from kgroup._driver.partitions import PartitionState
    from kgroup._driver.patterns import PatternSubscription
    from kgroup._driver.port import GroupPort
    from kgroup._driver.records import Decode
    from kgroup._driver.steps import ListenerSteps
    from kgroup._io.kafka_python import KafkaPythonTransport
    from kgroup.config import ConsumerConfig
    from kgroup.metrics import Recorder
    from kgroup.types import ConsumerRecord

__all__ = ["PollHost", "PollLoop"]


class PollHost(Protocol):
    """What the poll loop uses of the consumer (``kgroup.consumer.Consumer``)."""

    _group: GroupPort | None
    _parts: PartitionState | None
    _fatal: Exception | None
    _subscribed_at: float | None
    _manual: bool
    _steps: ListenerSteps
    _patterns: PatternSubscription

    def _check_open(self) -> None: ...

    def _raise_pending(self) -> None: ...

    def _drain_mailbox(self, records: list[Any] | None, *, columns: bool = False) -> list[Any]: ...

    def _drop_taken(self, fetched: list[Any], taken: set[TopicPartition], columns: bool) -> list[Any]: ...

    def _hand_out_on_hold(self) -> bool: ...

    def _maybe_match_pattern(self) -> None: ...

    def _maybe_auto_commit(self) -> None: ...

    def _update_positions(self, deadline: float) -> None: ...


class PollLoop:
    """The poll loop and its own state (poll thread only).

    Args:
        config: the consumer configuration.
        clock: the injected clock.
        mailbox: the poll thread's mailbox (its waits).
        metrics: the consumer's recorder.
        fetch_slice_ms: the longest one fetch wait, in ms (the runtime's).
        key_fn, value_fn: the deserializers (None: raw bytes).

    """

    def __init__(
        self,
        config: ConsumerConfig,
        clock: Clock,
        mailbox: Mailbox,
        metrics: Recorder,
        fetch_slice_ms: int,
        key_fn: Decode | None,
        value_fn: Decode | None,
    ) -> None:
        self._config = config
        self._clock = clock
        self._mailbox = mailbox
        self._metrics = metrics
        self._fetch_slice_ms = fetch_slice_ms
        self._key_fn = key_fn
        self._value_fn = value_fn
        #: a deserialization failure raised by the next poll() while the position is still there
        self._bad_records: dict[TopicPartition, RecordDeserializationError] = {}
        self._last_polled_sent = float("-inf")
        self._missing_topics: frozenset[str] = frozenset()
        #: the network client until its first bootstrap succeeds (ClusterUnreachableError)
        self.bootstrapping: KafkaPythonTransport | None = None

    def run(self, host: PollHost, timeout_ms: int, max_records: int, *, columns: bool) -> list[Any]:
        """The loop of ``poll()`` (``columns`` False: records) and ``poll_columns()`` (True)."""
        host._check_open()
        name = "poll_columns()" if columns else "poll()"
        if host._steps.in_callback:
            raise IllegalStateError(f"{name} must not be called from a rebalance listener callback")
        group = host._group
        if group is None or (host._subscribed_at is None and not host._manual):
            raise IllegalStateError(
                f"{name} before subscribe() or assign(): the consumer is not subscribed to any topic"
            )
        if timeout_ms < 0:
            raise ValueError("timeout_ms must be >= 0")
        deadline = self._clock.monotonic() + timeout_ms / 1000
        parts = host._parts
        assert parts is not None
        self._metrics.polled()
        first = True
        while True:
            self._signal_polled(group, force=first)  # once per poll() resets the watchdog (KIP-62)
            first = False
            host._drain_mailbox(None)
            host._raise_pending()
            if not columns:
                self._raise_bad_record(parts)
            self._raise_if_unreachable(host._subscribed_at)
            host._maybe_match_pattern()
            if self._mailbox.consume_wakeup():
                raise WakeupError(f"{name} interrupted by wakeup()")
            host._maybe_auto_commit()
            host._update_positions(deadline)
            remaining_ms = max(0, math.ceil((deadline - self._clock.monotonic()) * 1000))
            fetched: list[Any] = []
            on_hold = host._hand_out_on_hold()
            if parts.fetchable() and not on_hold:
                wait_ms = min(remaining_ms, self._fetch_slice_ms)
                if columns:
                    fetched = fetch_columns(parts.fetcher, max_records, wait_ms)
                else:
                    fetched = parts.fetcher.fetch(max_records, wait_ms)
            if columns:
                parts.hold_columns(fetched)
            else:
                parts.hold(fetched)
            self._check_missing_topics(host, parts)
            try:
                fetched = host._drain_mailbox(fetched, columns=columns)
                if fetched and host._hand_out_on_hold():
                    # the member may have been removed meanwhile: the positions go back
                    fetched = host._drop_taken(fetched, {item.topic_partition for item in fetched}, columns)
            finally:
                parts.release()
            if fetched:
                # errors that arrived with records wait for the next poll(): no record is lost
                if host._fatal is not None:
                    raise host._fatal
                if columns:
                    self._metrics.consumed(sum(map(len, fetched)), sum(columns_size(c) for c in fetched))
                    return fetched
                size = records_size(fetched)
                if self._key_fn is not None or self._value_fn is not None:
                    fetched = self._deserialize(parts, fetched)
                    if not fetched:
                        self._raise_bad_record(parts)
                self._metrics.consumed(len(fetched), size)
                return fetched
            host._raise_pending()
            now = self._clock.monotonic()
            if now >= deadline:
                return []
            if not parts.fetchable() or on_hold:
                self._mailbox.wait(min(deadline - now, self._fetch_slice_ms / 1000))
            elif parts.fetcher.idle():
                # nothing in flight to wait on (no leader known yet, a reset pending): back off
                self._mailbox.wait(min(deadline - now, self._config.retry_backoff_ms / 1000))

    def _deserialize(self, parts: PartitionState, records: list[ConsumerRecord]) -> list[ConsumerRecord]:
        """Apply the deserializers; a failing record and its partition's later ones stay unread."""
        out, failed = deserialize(records, self._key_fn, self._value_fn)
        for error in failed:
            tp = error.topic_partition
            assert isinstance(tp, TopicPartition)
            parts.seek(tp, error.offset)  # the position stays at the record that failed
            self._bad_records[tp] = error
        return out

    def _raise_bad_record(self, parts: PartitionState) -> None:
        """Raise a deserialization failure whose partition still sits at that record."""
        for tp, error in list(self._bad_records.items()):
            del self._bad_records[tp]
            if tp in parts.assignment and parts.position(tp) == error.offset:
                raise error

    def _raise_if_unreachable(self, subscribed_at: float | None) -> None:
        """Raise why no broker was reached: a refused connection at once, else after the timeout.

        AuthenticationFailedError when a broker refused the TLS handshake or the SASL exchange;
        ClusterUnreachableError once default_api_timeout_ms passed with no broker ever reached.
        """
        kp = self.bootstrapping
        if kp is None:
            return
        if kp.bootstrapped:
            self.bootstrapping = None
            return
        refused = kp.authentication_failure()  # Java's poll() throws AuthenticationException at once
        if refused is not None:
            raise refused
        timeout_ms = self._config.default_api_timeout_ms
        if subscribed_at is not None and self._clock.monotonic() - subscribed_at >= timeout_ms / 1000:
            raise ClusterUnreachableError(
                f"no broker of bootstrap_servers {self._config.bootstrap_servers!r} has answered in "
                f"{timeout_ms} ms (default_api_timeout_ms); still trying: poll() again, or close()"
            )

    def _check_missing_topics(self, host: PollHost, parts: PartitionState) -> None:
        """Tell the group thread once when an assigned topic disappears from metadata.

        As Java's Fetcher, which asks for a metadata update then.
        """
        missing = parts.fetcher.missing_topics()
        if missing and missing != self._missing_topics:
            assert host._group is not None
            host._group.metadata_stale()
            host._patterns.check_soon()  # a deleted topic leaves a pattern subscription
        self._missing_topics = missing

    def _signal_polled(self, group: GroupPort, *, force: bool) -> None:
        now = self._clock.monotonic()
        if force or now - self._last_polled_sent >= 0.5:
            self._last_polled_sent = now
            group.post(ev.Polled())
