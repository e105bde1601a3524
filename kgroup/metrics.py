"""Consumer metrics: the Java consumer's names, units and windows, as a plain snapshot.

``Consumer.metrics()`` returns ``dict[str, float]``: one entry per name in ``METRICS`` (the
names of the Java ``KafkaConsumer``'s metrics, documented in the Kafka documentation's
"Monitoring" section, groups ``consumer-coordinator-metrics``, ``consumer-fetch-manager-metrics``
and ``consumer-metrics``), plus one ``records-lag{topic=T,partition=P}`` entry per assigned
partition whose lag is known. Units are in the table: latencies in ms, ``*-seconds-ago`` in s,
``*-rate`` per second, ``*-rate-per-hour`` per hour, ``*-total`` counts since the consumer
started. A windowed statistic (``-avg``, ``-max``, ``-rate``) covers the last two 30-second
samples, as Java's defaults (``metrics.num.samples`` = 2, ``metrics.sample.window.ms`` =
30000); with no sample in the window it is NaN (Java's ``Avg``/``Max`` likewise). A
``*-seconds-ago`` value is -1 before the first event (Java's ``last-rebalance-seconds-ago``).

Both group protocols report the names Java's consumer reports for them. Under
``group_protocol="classic"`` (Java's ``ConsumerCoordinator``) a rebalance runs from the first
JoinGroup to the SyncGroup answer; under ``group_protocol="consumer"`` (KIP-848; Java's
``AsyncKafkaConsumer`` with ``ConsumerRebalanceMetricsManager`` and ``HeartbeatMetricsManager``)
it runs from the member entering RECONCILING to its leaving it for ACKNOWLEDGING or STABLE (a
reconciliation, Java's ``AbstractMembershipManager.transitionTo``), a failed rebalance is a
ConsumerGroupHeartbeat answered with an error while one runs (Java's ``onHeartbeatFailure``),
and the heartbeat names count ConsumerGroupHeartbeat. The JoinGroup and SyncGroup names
(``CLASSIC_ONLY``) exist only under ``classic``, as in Java.

Where kgroup measures differently from Java, the table says so. docs/production.md shows the
Prometheus collector (``kgroup.prometheus``) and an OpenTelemetry bridge.

Threads: the group thread records group requests and rebalances, the poll thread records
polls, records, listener callbacks and commits; a lock makes ``snapshot()`` safe from any
thread (a probe's HTTP thread included).
"""

from __future__ import annotations

import collections
import math
import threading
from collections.abc import Mapping

import attrs

from kgroup._clock import Clock

__all__ = ["CLASSIC_ONLY", "METRICS", "SHARE_METRICS", "MetricInfo"]

#: Java's defaults: ``metrics.sample.window.ms`` and ``metrics.num.samples``
_WINDOW_S = 30.0
_SAMPLES = 2


@attrs.frozen
class MetricInfo:
    """One metric: its Java group, unit and meaning."""

    group: str
    unit: str
    description: str


_COORD = "consumer-coordinator-metrics"
_FETCH = "consumer-fetch-manager-metrics"
_CONSUMER = "consumer-metrics"

#: Every member-level name ``Consumer.metrics()`` returns, with its group, unit and meaning.
METRICS: Mapping[str, MetricInfo] = {
    "rebalance-total": MetricInfo(
        _COORD, "count", "rebalances this member completed (classic: SyncGroup succeeded; consumer: a reconciliation)"
    ),
    "rebalance-latency-avg": MetricInfo(
        _COORD,
        "ms",
        "average time from the first JoinGroup of a rebalance to its SyncGroup response (classic), "
        "from entering RECONCILING to leaving it for ACKNOWLEDGING or STABLE (consumer)",
    ),
    "rebalance-latency-max": MetricInfo(_COORD, "ms", "longest rebalance, as above"),
    "rebalance-latency-total": MetricInfo(_COORD, "ms", "time spent in completed rebalances"),
    "rebalance-rate-per-hour": MetricInfo(_COORD, "1/h", "completed rebalances per hour"),
    "failed-rebalance-total": MetricInfo(
        _COORD,
        "count",
        "classic: JoinGroup/SyncGroup attempts that failed (an error code or no response); "
        "as in Java, a new dynamic member's MEMBER_ID_REQUIRED round counts. consumer: "
        "ConsumerGroupHeartbeat answers with an error while a reconciliation runs",
    ),
    "failed-rebalance-rate-per-hour": MetricInfo(_COORD, "1/h", "failed rebalance attempts per hour"),
    "last-rebalance-seconds-ago": MetricInfo(_COORD, "s", "since the last completed rebalance; -1 before the first"),
    "last-heartbeat-seconds-ago": MetricInfo(
        _COORD, "s", "since the last Heartbeat (consumer: ConsumerGroupHeartbeat) was sent; -1 before the first"
    ),
    "heartbeat-response-time-max": MetricInfo(
        _COORD, "ms", "longest Heartbeat (consumer: ConsumerGroupHeartbeat) round trip"
    ),
    "heartbeat-rate": MetricInfo(_COORD, "1/s", "Heartbeat (consumer: ConsumerGroupHeartbeat) responses per second"),
    "heartbeat-total": MetricInfo(_COORD, "count", "Heartbeat (consumer: ConsumerGroupHeartbeat) responses"),
    "join-time-avg": MetricInfo(
        _COORD, "ms", "average JoinGroup round trip (a parked JoinGroup waits for the other members)"
    ),
    "join-time-max": MetricInfo(_COORD, "ms", "longest JoinGroup round trip"),
    "join-rate": MetricInfo(_COORD, "1/s", "JoinGroup responses per second"),
    "join-total": MetricInfo(_COORD, "count", "JoinGroup responses"),
    "sync-time-avg": MetricInfo(_COORD, "ms", "average SyncGroup round trip"),
    "sync-time-max": MetricInfo(_COORD, "ms", "longest SyncGroup round trip"),
    "sync-rate": MetricInfo(_COORD, "1/s", "SyncGroup responses per second"),
    "sync-total": MetricInfo(_COORD, "count", "SyncGroup responses"),
    "commit-latency-avg": MetricInfo(_COORD, "ms", "average OffsetCommit round trip (sync, async and auto commits)"),
    "commit-latency-max": MetricInfo(_COORD, "ms", "longest OffsetCommit round trip"),
    "commit-rate": MetricInfo(_COORD, "1/s", "OffsetCommit responses per second"),
    "commit-total": MetricInfo(_COORD, "count", "OffsetCommit responses"),
    "partition-assigned-latency-avg": MetricInfo(_COORD, "ms", "average time on_partitions_assigned took"),
    "partition-assigned-latency-max": MetricInfo(_COORD, "ms", "longest on_partitions_assigned"),
    "partition-revoked-latency-avg": MetricInfo(_COORD, "ms", "average time on_partitions_revoked took"),
    "partition-revoked-latency-max": MetricInfo(_COORD, "ms", "longest on_partitions_revoked"),
    "partition-lost-latency-avg": MetricInfo(_COORD, "ms", "average time on_partitions_lost took"),
    "partition-lost-latency-max": MetricInfo(_COORD, "ms", "longest on_partitions_lost"),
    "assigned-partitions": MetricInfo(_COORD, "count", "partitions this member owns now"),
    "records-consumed-total": MetricInfo(_FETCH, "count", "records poll() returned"),
    "records-consumed-rate": MetricInfo(_FETCH, "1/s", "records poll() returned per second"),
    "bytes-consumed-total": MetricInfo(
        _FETCH, "bytes", "key and value bytes of the records poll() returned (Java counts batch bytes)"
    ),
    "bytes-consumed-rate": MetricInfo(_FETCH, "bytes/s", "as above, per second"),
    "records-lag-max": MetricInfo(
        _FETCH, "count", "the largest records-lag of an assigned partition now (Java: the maximum over the window)"
    ),
    "last-poll-seconds-ago": MetricInfo(_CONSUMER, "s", "since the last poll() call; -1 before the first"),
    "time-between-poll-avg": MetricInfo(_CONSUMER, "ms", "average time between poll() calls"),
    "time-between-poll-max": MetricInfo(_CONSUMER, "ms", "longest time between poll() calls"),
}

#: The names only ``group_protocol="classic"`` reports: the consumer protocol has no JoinGroup
#: or SyncGroup (Java's ``AsyncKafkaConsumer`` does not register them).
CLASSIC_ONLY: frozenset[str] = frozenset(
    f"{api}-{stat}" for api in ("join", "sync") for stat in ("time-avg", "time-max", "rate", "total")
)

#: ``Recorder.request_sent``'s name for a ConsumerGroupHeartbeat. Every answer with an error
#: during a reconciliation is a failed rebalance (Java's ``AbstractHeartbeatRequestManager``
#: calls ``onHeartbeatFailure(false)`` for each error answer); a request without an answer (a
#: disconnect, a timeout: a ``RetriableException`` in Java) is not.
_CONSUMER_HEARTBEAT = "consumer-heartbeat"
#: ``Recorder.request_sent``'s name for a ShareGroupHeartbeat: measured as a ConsumerGroupHeartbeat
#: (Java's ``ShareHeartbeatRequestManager`` uses the same ``HeartbeatMetricsManager``)
_SHARE_HEARTBEAT = "share-heartbeat"
_HEARTBEATS = ("heartbeat", _CONSUMER_HEARTBEAT, _SHARE_HEARTBEAT)

#: The per-partition metric: ``records-lag{topic=T,partition=P}`` (the fetch high watermark
#: minus the position, from the last fetch response of that partition).
RECORDS_LAG = MetricInfo(_FETCH, "count", "high watermark of the last fetch minus the position")


class _Sample:
    """One window of a sampled statistic: when it began, its last event, its events' count, sum and maximum."""

    __slots__ = ("count", "last", "maximum", "start", "total")

    def __init__(self, start: float) -> None:
        self.reset(start)

    def reset(self, start: float) -> None:
        self.start = self.last = start
        self.count = 0
        self.total = 0.0
        self.maximum = -math.inf


class _Windowed:
    """Java's sampled statistics: ``_SAMPLES`` windows of ``_WINDOW_S`` each, in fixed memory.

    As Java's ``SampledStat`` (``org.apache.kafka.common.metrics.stats``): an event goes to the
    current sample, or starts the next one (reusing the oldest of ``_SAMPLES + 1``) once the
    current one is a window old; a sample whose last event is ``_SAMPLES * _WINDOW_S`` old or
    more is reset when read (``purgeObsoleteSamples``).
    ``Avg`` is the samples' sum over their count, ``Max`` their maximum (NaN with no event), and
    ``Rate`` their count or sum over the time they span (Java's ``Rate.windowSize``: at least
    ``_SAMPLES - 1`` full windows). ``count`` and ``total`` (Java's ``CumulativeCount`` and
    ``CumulativeSum``) cover every event since the consumer started.
    """

    __slots__ = ("_current", "_samples", "count", "total")

    def __init__(self) -> None:
        self._samples: list[_Sample] = []
        self._current = 0
        self.count = 0
        self.total = 0.0

    def record(self, now: float, value: float) -> None:
        self.count += 1
        self.total += value
        if not self._samples:
            self._samples.append(_Sample(now))
        sample = self._samples[self._current]
        if now - sample.start >= _WINDOW_S:  # complete: the next sample (SampledStat.advance)
            self._current = (self._current + 1) % (_SAMPLES + 1)
            if self._current >= len(self._samples):
                self._samples.append(_Sample(now))
            sample = self._samples[self._current]
            sample.reset(now)
        sample.count += 1
        sample.last = now
        sample.total += value
        sample.maximum = max(sample.maximum, value)

    def _live(self, now: float) -> list[_Sample]:
        """The samples still in the window (SampledStat.purgeObsoleteSamples resets the others)."""
        for sample in self._samples:
            if now - sample.last >= _WINDOW_S * _SAMPLES:
                sample.reset(now)
        return [sample for sample in self._samples if sample.count]

    def avg(self, now: float) -> float:
        live = self._live(now)
        count = sum(sample.count for sample in live)
        return sum(sample.total for sample in live) / count if count else math.nan

    def max(self, now: float) -> float:
        live = self._live(now)
        return max((sample.maximum for sample in live), default=math.nan)

    def rate(self, now: float, per: float = 1.0, *, of_values: bool = False) -> float:
        """Events (or summed values) per ``per`` seconds over the window (Java's ``Rate``).

        The elapsed time runs from the oldest sample's start and is at least ``_SAMPLES - 1``
        full windows (Java's ``Rate.windowSize``).
        """
        self._live(now)
        amount = sum(sample.total if of_values else sample.count for sample in self._samples)
        oldest = min((sample.start for sample in self._samples), default=now)
        elapsed = now - oldest
        full = int(elapsed // _WINDOW_S)
        if full < _SAMPLES - 1:
            elapsed += (_SAMPLES - 1 - full) * _WINDOW_S
        return amount * per / elapsed


class Recorder:
    """Where the consumer's threads record what the metrics are computed from (internal).

    ``group_protocol`` (``"classic"`` or ``"consumer"``) decides how a rebalance is measured
    and which names the snapshot has (the module docstring).
    """

    def __init__(self, clock: Clock, group_protocol: str = "classic") -> None:
        self._clock = clock
        self._group_protocol = group_protocol
        #: the consumer-protocol member's last state (``member_state``)
        self._member_state: str | None = None
        self._lock = threading.Lock()
        self._sent: dict[int, tuple[str, float]] = {}
        self._rebalance_started: float | None = None
        self._last_rebalance: float | None = None
        self._last_heartbeat_sent: float | None = None
        #: when the coordinator last answered a Heartbeat/JoinGroup/SyncGroup without error
        self.last_group_ok: float | None = None
        self._last_poll: float | None = None
        self._stats: dict[str, _Windowed] = collections.defaultdict(_Windowed)

    # ------------------------------------------------------------------ group thread
    def request_sent(self, api: str, request_id: int) -> None:
        """A group request (``"join"``, ``"sync"``, ``"heartbeat"``, ``"consumer-heartbeat"``, ...) left."""
        now = self._clock.monotonic()
        with self._lock:
            self._sent[request_id] = (api, now)
            if api in _HEARTBEATS:
                self._last_heartbeat_sent = now
            elif api == "join" and self._rebalance_started is None:
                self._rebalance_started = now

    def response(self, request_id: int, error_code: int | None) -> None:
        """The response of a group request; ``error_code`` None: no response (disconnect, timeout)."""
        now = self._clock.monotonic()
        with self._lock:
            sent = self._sent.pop(request_id, None)
            if sent is None:
                return
            api, at = sent
            if api in (_CONSUMER_HEARTBEAT, _SHARE_HEARTBEAT):
                self._consumer_heartbeat_answered(now, at, error_code)
                return
            # Java records a heartbeat's round trip for every response, a JoinGroup's and a
            # SyncGroup's only for a successful one (AbstractCoordinator's response handlers)
            if (api == "heartbeat" and error_code is not None) or (api in ("join", "sync") and error_code == 0):
                self._stats[api].record(now, (now - at) * 1000)
            if error_code == 0 and api in ("join", "sync", "heartbeat"):
                self.last_group_ok = now
            if api in ("join", "sync") and error_code != 0:
                self._stats["failed-rebalance"].record(now, 1)
            elif api == "sync" and self._rebalance_started is not None:
                self._stats["rebalance"].record(now, (now - self._rebalance_started) * 1000)
                self._rebalance_started = None
                self._last_rebalance = now

    def _consumer_heartbeat_answered(self, now: float, sent_at: float, error_code: int | None) -> None:
        """Java's ``HeartbeatMetricsManager`` (every answer's round trip) and ``onHeartbeatFailure``."""
        if error_code is None:
            return  # no answer: retriable, neither a round trip nor a failed rebalance
        self._stats["heartbeat"].record(now, (now - sent_at) * 1000)
        if error_code == 0:
            self.last_group_ok = now
        elif self._rebalance_started is not None:
            # ConsumerRebalanceMetricsManager.maybeRecordRebalanceFailed: only while one runs
            self._stats["failed-rebalance"].record(now, 1)

    def member_state(self, state: str) -> None:
        """The consumer-protocol member's state (``ConsumerGroupMachine``'s, by name) as the group thread publishes it.

        A rebalance starts when the member enters RECONCILING from another state and ends when it
        leaves RECONCILING for ACKNOWLEDGING or STABLE (Java ``AbstractMembershipManager``'s
        ``isStartingRebalance`` / ``isCompletingRebalance``); its latency is the time between.
        States are sampled when the group thread publishes its snapshot, after each event.
        """
        now = self._clock.monotonic()
        with self._lock:
            previous, self._member_state = self._member_state, state
            if previous == state:
                return
            if previous == "RECONCILING" and state in ("ACKNOWLEDGING", "STABLE"):
                if self._rebalance_started is not None:
                    self._stats["rebalance"].record(now, (now - self._rebalance_started) * 1000)
                self._rebalance_started = None
                self._last_rebalance = now
            if state == "RECONCILING":
                self._rebalance_started = now

    # ------------------------------------------------------------------ poll thread
    def polled(self) -> None:
        now = self._clock.monotonic()
        with self._lock:
            if self._last_poll is not None:
                self._stats["time-between-poll"].record(now, (now - self._last_poll) * 1000)
            self._last_poll = now

    def consumed(self, records: int, size: int) -> None:
        now = self._clock.monotonic()
        with self._lock:
            self._stats["records-consumed"].record(now, records)
            self._stats["bytes-consumed"].record(now, size)

    def listener(self, callback: str, seconds: float) -> None:
        """``callback``: ``on_partitions_assigned`` / ``revoked`` / ``lost``."""
        name = {"on_partitions_assigned": "partition-assigned", "on_partitions_revoked": "partition-revoked"}.get(
            callback, "partition-lost"
        )
        with self._lock:
            self._stats[name].record(self._clock.monotonic(), seconds * 1000)

    def commit(self, seconds: float) -> None:
        """An OffsetCommit response arrived ``seconds`` after its request left (any thread)."""
        with self._lock:
            self._stats["commit"].record(self._clock.monotonic(), seconds * 1000)

    def last_poll(self) -> float | None:
        with self._lock:
            return self._last_poll

    # ------------------------------------------------------------------ the snapshot
    def snapshot(self, assigned: int, lags: Mapping[tuple[str, int], int]) -> dict[str, float]:
        """Every name of ``METRICS``, plus ``records-lag{topic=T,partition=P}`` per known lag.

        Under the consumer protocol the names of ``CLASSIC_ONLY`` are left out.
        """
        now = self._clock.monotonic()
        hour = 3600.0
        with self._lock:
            s = self._stats

            def ago(at: float | None) -> float:
                return -1.0 if at is None else now - at

            def window(stat: str, latency: str) -> dict[str, float]:
                """Java's latency avg and max, with the rate and total of the same sensor."""
                return {
                    f"{latency}-avg": s[stat].avg(now),
                    f"{latency}-max": s[stat].max(now),
                    f"{stat}-rate": s[stat].rate(now),
                    f"{stat}-total": float(s[stat].count),
                }

            def listener(stat: str) -> dict[str, float]:
                """A rebalance listener callback's latency avg and max."""
                return {f"{stat}-latency-avg": s[stat].avg(now), f"{stat}-latency-max": s[stat].max(now)}

            out: dict[str, float] = {
                "rebalance-total": float(s["rebalance"].count),
                "rebalance-latency-avg": s["rebalance"].avg(now),
                "rebalance-latency-max": s["rebalance"].max(now),
                "rebalance-latency-total": s["rebalance"].total,
                "rebalance-rate-per-hour": s["rebalance"].rate(now, hour),
                "failed-rebalance-total": float(s["failed-rebalance"].count),
                "failed-rebalance-rate-per-hour": s["failed-rebalance"].rate(now, hour),
                "last-rebalance-seconds-ago": ago(self._last_rebalance),
                "last-heartbeat-seconds-ago": ago(self._last_heartbeat_sent),
                "heartbeat-response-time-max": s["heartbeat"].max(now),
                "heartbeat-rate": s["heartbeat"].rate(now),
                "heartbeat-total": float(s["heartbeat"].count),
                **window("join", "join-time"),
                **window("sync", "sync-time"),
                **window("commit", "commit-latency"),
                **listener("partition-assigned"),
                **listener("partition-revoked"),
                **listener("partition-lost"),
                "assigned-partitions": float(assigned),
                "records-consumed-total": s["records-consumed"].total,
                "records-consumed-rate": s["records-consumed"].rate(now, of_values=True),
                "bytes-consumed-total": s["bytes-consumed"].total,
                "bytes-consumed-rate": s["bytes-consumed"].rate(now, of_values=True),
                "records-lag-max": float(max(lags.values())) if lags else math.nan,
                "last-poll-seconds-ago": ago(self._last_poll),
                "time-between-poll-avg": s["time-between-poll"].avg(now),
                "time-between-poll-max": s["time-between-poll"].max(now),
            }
        if self._group_protocol == "consumer":
            for name in CLASSIC_ONLY:
                del out[name]
        for (topic, partition), lag in sorted(lags.items()):
            out[lag_key(topic, partition)] = float(lag)
        return out


def lag_key(topic: str, partition: int) -> str:
    """The ``Consumer.metrics()`` key of one partition's ``records-lag``."""
    return f"records-lag{{topic={topic},partition={partition}}}"


# ---------------------------------------------------------------------- share groups (KIP-932)
_SHARE_FETCH = "consumer-share-fetch-manager-metrics"
_SHARE_COORD = "consumer-share-coordinator-metrics"
_SHARE_CONSUMER = "consumer-share-metrics"

#: Every name ``ShareConsumer.metrics()`` returns: Java's ``KafkaShareConsumer`` metrics
#: (``ShareFetchMetricsRegistry``, ``ShareRebalanceMetricsManager``, ``HeartbeatMetricsManager``
#: with the ``consumer-share`` prefix, ``KafkaShareConsumerMetrics``), with group, unit, meaning.
SHARE_METRICS: Mapping[str, MetricInfo] = {
    "fetch-size-avg": MetricInfo(_SHARE_FETCH, "bytes", "average record-batch bytes of a ShareFetch answer"),
    "fetch-size-max": MetricInfo(_SHARE_FETCH, "bytes", "largest record-batch bytes of a ShareFetch answer"),
    "bytes-consumed-rate": MetricInfo(_SHARE_FETCH, "bytes/s", "record-batch bytes fetched per second"),
    "bytes-consumed-total": MetricInfo(_SHARE_FETCH, "bytes", "record-batch bytes fetched"),
    "records-per-request-avg": MetricInfo(_SHARE_FETCH, "count", "average records acquired per ShareFetch"),
    "records-per-request-max": MetricInfo(_SHARE_FETCH, "count", "most records acquired by one ShareFetch"),
    "records-consumed-rate": MetricInfo(_SHARE_FETCH, "1/s", "records acquired per second"),
    "records-consumed-total": MetricInfo(_SHARE_FETCH, "count", "records acquired"),
    "acknowledgements-send-rate": MetricInfo(
        _SHARE_FETCH, "1/s", "record acknowledgements sent (on a ShareFetch or a ShareAcknowledge) per second"
    ),
    "acknowledgements-send-total": MetricInfo(_SHARE_FETCH, "count", "record acknowledgements sent"),
    "acknowledgements-error-rate": MetricInfo(
        _SHARE_FETCH, "1/s", "record acknowledgements that failed (an error code, no answer, unsendable) per second"
    ),
    "acknowledgements-error-total": MetricInfo(_SHARE_FETCH, "count", "record acknowledgements that failed"),
    "fetch-latency-avg": MetricInfo(_SHARE_FETCH, "ms", "average ShareFetch round trip"),
    "fetch-latency-max": MetricInfo(_SHARE_FETCH, "ms", "longest ShareFetch round trip"),
    "fetch-rate": MetricInfo(_SHARE_FETCH, "1/s", "ShareFetch answers per second"),
    "fetch-total": MetricInfo(_SHARE_FETCH, "count", "ShareFetch answers"),
    "fetch-throttle-time-avg": MetricInfo(_SHARE_FETCH, "ms", "average throttle time of a ShareFetch answer"),
    "fetch-throttle-time-max": MetricInfo(_SHARE_FETCH, "ms", "longest throttle time of a ShareFetch answer"),
    "heartbeat-response-time-max": MetricInfo(_SHARE_COORD, "ms", "longest ShareGroupHeartbeat round trip"),
    "heartbeat-rate": MetricInfo(_SHARE_COORD, "1/s", "ShareGroupHeartbeat answers per second"),
    "heartbeat-total": MetricInfo(_SHARE_COORD, "count", "ShareGroupHeartbeat answers"),
    "last-heartbeat-seconds-ago": MetricInfo(
        _SHARE_COORD, "s", "since the last ShareGroupHeartbeat was sent; -1 before the first"
    ),
    "rebalance-total": MetricInfo(
        _SHARE_COORD, "count", "reconciliations completed (RECONCILING left for ACKNOWLEDGING or STABLE)"
    ),
    "rebalance-rate-per-hour": MetricInfo(_SHARE_COORD, "1/h", "reconciliations completed per hour"),
    "last-poll-seconds-ago": MetricInfo(_SHARE_CONSUMER, "s", "since the last poll() call; -1 before the first"),
    "time-between-poll-avg": MetricInfo(_SHARE_CONSUMER, "ms", "average time between poll() calls"),
    "time-between-poll-max": MetricInfo(_SHARE_CONSUMER, "ms", "longest time between poll() calls"),
    "poll-idle-ratio-avg": MetricInfo(
        _SHARE_CONSUMER, "ratio", "average share of time inside poll() (poll time over it plus the time since the last)"
    ),
}


class ShareRecorder(Recorder):
    """A share consumer's recorder (internal): heartbeats, reconciliations, fetches, acknowledgements, polls.

    The group thread records heartbeats and reconciliations as ``Recorder`` does under the
    consumer protocol; the poll thread records fetches, acknowledgements and polls.
    """

    def __init__(self, clock: Clock) -> None:
        super().__init__(clock, group_protocol="consumer")
        self._poll_started: float | None = None
        self._since_last_poll = 0.0

    def poll_started(self) -> None:
        """``poll()`` was called (Java's ``KafkaShareConsumerMetrics.recordPollStart``)."""
        now = self._clock.monotonic()
        with self._lock:
            self._since_last_poll = 0.0 if self._last_poll is None else now - self._last_poll
            self._poll_started = now
        self.polled()

    def poll_ended(self) -> None:
        """``poll()`` returned or raised (``recordPollEnd``: the idle ratio)."""
        now = self._clock.monotonic()
        with self._lock:
            if self._poll_started is None:
                return
            inside = now - self._poll_started
            total = inside + self._since_last_poll
            self._stats["poll-idle"].record(now, inside / total if total > 0 else 1.0)
            self._poll_started = None

    def fetched(self, seconds: float, size: int, records: int, throttle_ms: int) -> None:
        """A ShareFetch answer: its round trip, record-batch bytes, records acquired and throttle time."""
        now = self._clock.monotonic()
        with self._lock:
            self._stats["fetch-latency"].record(now, seconds * 1000)
            self._stats["fetch-size"].record(now, size)
            self._stats["records-fetched"].record(now, records)
            self._stats["fetch-throttle"].record(now, throttle_ms)

    def acknowledgements(self, sent: int = 0, failed: int = 0) -> None:
        """``sent`` record acknowledgements left; ``failed`` ones were answered with an error."""
        now = self._clock.monotonic()
        with self._lock:
            if sent:
                self._stats["ack-sent"].record(now, sent)
            if failed:
                self._stats["ack-failed"].record(now, failed)

    def share_snapshot(self) -> dict[str, float]:
        """Every name of ``SHARE_METRICS`` now."""
        now = self._clock.monotonic()
        with self._lock:
            s = self._stats

            def ago(at: float | None) -> float:
                return -1.0 if at is None else now - at

            def meter(stat: str, name: str) -> dict[str, float]:
                """Java's ``Meter``: the values' rate and cumulative sum."""
                return {f"{name}-rate": s[stat].rate(now, of_values=True), f"{name}-total": s[stat].total}

            return {
                "fetch-size-avg": s["fetch-size"].avg(now),
                "fetch-size-max": s["fetch-size"].max(now),
                **meter("fetch-size", "bytes-consumed"),
                "records-per-request-avg": s["records-fetched"].avg(now),
                "records-per-request-max": s["records-fetched"].max(now),
                **meter("records-fetched", "records-consumed"),
                **meter("ack-sent", "acknowledgements-send"),
                **meter("ack-failed", "acknowledgements-error"),
                "fetch-latency-avg": s["fetch-latency"].avg(now),
                "fetch-latency-max": s["fetch-latency"].max(now),
                "fetch-rate": s["fetch-latency"].rate(now),
                "fetch-total": float(s["fetch-latency"].count),
                "fetch-throttle-time-avg": s["fetch-throttle"].avg(now),
                "fetch-throttle-time-max": s["fetch-throttle"].max(now),
                "heartbeat-response-time-max": s["heartbeat"].max(now),
                "heartbeat-rate": s["heartbeat"].rate(now),
                "heartbeat-total": float(s["heartbeat"].count),
                "last-heartbeat-seconds-ago": ago(self._last_heartbeat_sent),
                "rebalance-total": float(s["rebalance"].count),
                "rebalance-rate-per-hour": s["rebalance"].rate(now, 3600.0),
                "last-poll-seconds-ago": ago(self._last_poll),
                "time-between-poll-avg": s["time-between-poll"].avg(now),
                "time-between-poll-max": s["time-between-poll"].max(now),
                "poll-idle-ratio-avg": s["poll-idle"].avg(now),
            }
