"""kgroup's own fetch pipeline: Fetch requests over kafka-python's network client.

``PipelinedFetcher`` is a ``RecordFetcher`` that schedules, sends and buffers Fetch requests
itself (Java's ``Fetcher``/``FetchCollector`` are the reference) instead of kafka-python's
``Fetcher``, whose rule "send the next fetch only when every buffered response was handed out"
leaves the poll loop waiting a whole round trip after each response. What it keeps from
kafka-python: the network client (``KafkaConnectionManager.send`` on the IO thread), the
``FetchRequest``/``FetchResponse`` message classes (read by :mod:`kgroup._io.receive`: each
response once, into one buffer), ``MemoryRecords`` (its first batch checked), and the
``SubscriptionState`` with kafka-python's offset reset (ListOffsets, ``auto_offset_reset``) and
KIP-320 position validation (OffsetForLeaderEpoch).

Scheduling (poll thread; the IO thread only queues responses and wakes it):

1. **One response per partition.** A partition is put in a Fetch only when it is fetchable
   (assigned, not paused, position known and validated), holds no fetched records and has no
   fetch in flight (Java ``AbstractFetch.fetchablePartitions``). A partition whose records ran
   dry is fetched again at once, whatever the others hold.
2. **Pipelining, bounded.** At most one Fetch is in flight per node. A Fetch goes to a node
   while at most one earlier response of that node still holds records of unpaused partitions:
   the next response is on its way while the previous one is handed out.
3. **No long poll behind buffered records.** A Fetch sent while the node still holds records
   asks the broker not to wait (``max_wait_ms`` 1 ms); only a node whose records were all handed
   out long-polls for ``fetch_max_wait_ms``/``fetch_min_bytes``. So caught-up partitions never
   hold the others for ``fetch_max_wait_ms``. After such a no-wait Fetch came back without
   records, the node is not asked again until some buffered records were handed out or dropped
   (no busy loop of empty fetches). While an assigned, unpaused partition waits for its position
   (a look-up or a KIP-320 validation), a long poll lasts at most ``retry_backoff_ms``: that
   partition's first Fetch would wait behind it (up to ``fetch_max_wait_ms`` at a member's start).

Memory bound: per node at most two responses with records (the one being handed out and the
next one, in flight or arrived), each asked for at most half of ``fetch_max_bytes``
(:func:`request_max_bytes`: the two together fit in it), and at most one response per
partition, of at most ``max_partition_fetch_bytes``; a single record batch larger than these
limits is returned whole (KIP-74) and counts once. Paused partitions keep their one response
aside (Java keeps paused partitions' completed fetches too). So the buffered bytes are at most
``min(fetch_max_bytes * nodes, partitions * max_partition_fetch_bytes)`` plus oversized
batches, when the broker honours the limits: flat past 50 partitions with Java's defaults, and
never growing with the record size (Java asks each Fetch for all of ``fetch.max.bytes``).

Semantics kept from kafka-python's ``Fetcher._parse_fetched_data``: a
response is used only if its partition is still fetchable and its position still equals the
fetch offset (responses for partitions revoked, re-assigned, seeked or reset meanwhile are
dropped); NOT_LEADER_OR_FOLLOWER, REPLICA_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION and
KAFKA_STORAGE_ERROR refresh metadata (and apply a KIP-951 leader hint); FENCED_LEADER_EPOCH,
UNKNOWN_LEADER_EPOCH and a diverging epoch (Fetch v12) mark the position for KIP-320
validation; OFFSET_OUT_OF_RANGE resets the position by ``auto_offset_reset`` or raises with
``"none"``; TOPIC_AUTHORIZATION_FAILED and unexpected codes raise. Errors are raised in line:
records handed out before them first. Records are decoded (below, "Decoding") with the CRC
check of ``check_crcs``, compression, and control batches and, under read_committed, aborted
transactions skipped. One difference: a response without records leaves the position's leader
epoch as it was (Java's ``FetchCollector``), where kafka-python sets it to -1.

Follower fetching (KIP-392; Java's ``AbstractFetch.selectReadReplica`` and
``FetchCollector`` are the reference): every Fetch carries ``client_rack`` as its rack id, and a
partition whose leader names a ``preferred_read_replica`` is fetched from that replica for a
while (:mod:`kgroup._io.read_replicas`). The leader serves the partition again after
NOT_LEADER_OR_FOLLOWER, REPLICA_NOT_AVAILABLE, KAFKA_STORAGE_ERROR, FENCED_LEADER_EPOCH,
OFFSET_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION, after a Fetch that failed (a disconnect),
and after OFFSET_OUT_OF_RANGE from the replica, which is then retried on the leader before the
position is reset (a follower may not have the leader's newest records yet).
``fetches_by_node`` counts the Fetches and record bytes per node.

Fetch sessions (KIP-227; :mod:`kgroup._io.fetch_sessions`): after a full first Fetch, a node's
Fetch lists only the partitions added or changed and the ones to forget (revoked, paused,
holding records, moved to another replica); ``close_sessions`` (at ``close()``) ends them.

Decoding. ``fetch`` (``poll()``) decodes with the record decoder
(:class:`kgroup._io.record_decoder.PartitionRecords`, aiokafka's C decoder when installed) until
a bulk reader first calls ``fetch_columns`` (``poll_columns()``, the Spark source's executors).
From then on each response is decoded, when its first records are handed out, by the columnar
decoder (:mod:`kgroup._io.columnar`: CRC, decompression, control batches and aborted
transactions skipped, numpy and Arrow columns, no Python code per record), stepped through
batch by batch exactly as the record decoder steps (:mod:`kgroup._io.columnar_records`), for
both hand-outs: ``fetch`` then decodes each response a window of whole batches at a time (about
``DECODE_WINDOW_BYTES``, the next window when the first batch of it is reached, so only one
window's columns are held) and builds its ``ConsumerRecord`` s from those columns in bulk;
``fetch_columns`` takes the same hand-out as one :class:`RecordColumns` per partition instead of
one list of records, by the same code (``_take``/``_hand_out``), so every rule above holds for
both. ``poll()`` alone stays on the record decoder because, measured (``benchmarks/results.md``,
"poll() from the columnar decoder"), building records from columns costs it the same CPU per
record at 100 B and its process about four times the memory (numpy and pyarrow loaded, columns
held). The record decoder also takes what the columnar decoder does not: every response when
numpy or pyarrow is not installed, legacy message sets (magic 0 and 1, from brokers before
0.11), and a response the columnar decoder failed on itself (logged as a warning).
"""

from __future__ import annotations

import collections
import itertools
import logging
import math
import threading
from typing import Any

from kgroup._io import quiet_kafka  # noqa: F401  (first: kafka-python, without its import-time warning)

# isort: split
import kafka.errors as KErrors
from kafka.consumer.fetcher import Fetcher, FetchMetadata
from kafka.consumer.subscription_state import SubscriptionState
from kafka.protocol.consumer import FetchRequest, IsolationLevel, OffsetResetStrategy
from kafka.record import MemoryRecords
from kafka.structs import OffsetAndMetadata as KOffsetAndMetadata
from kafka.structs import TopicPartition as KTopicPartition

from kgroup._clock import MonotonicClock
from kgroup._io import record_decoder
from kgroup._io.columnar_records import ColumnarRecords, ColumnSlice, ColumnSlices, exhausted, load_columnar_decoder
from kgroup._io.fetch_sessions import FetchSession, PartitionKey
from kgroup._io.read_replicas import ReadReplicas
from kgroup._io.record_decoder import PartitionRecords, fetch_error, kafka_tp
from kgroup.columns import RecordColumns
from kgroup.config import ConsumerConfig
from kgroup.types import ConsumerRecord, TopicPartition

__all__ = ["PipelinedFetcher", "RecordColumns", "fetch_columns", "request_max_bytes"]

log = logging.getLogger(__name__)

_FetchTopic = FetchRequest.FetchTopic
_FetchPartition = _FetchTopic.FetchPartition

#: bytes of record batches ``fetch()`` decodes at a time (whole batches; a larger batch is one window):
#: large enough for the columnar decoder's arrays to pay, small enough to hold one window's columns
DECODE_WINDOW_BYTES = 256 * 1024
#: newest Fetch version sent (as kafka-python's Fetcher: topic ids, v13+, are not used)
FETCH_MAX_VERSION = 12
#: responses of a node that may still hold records when the next Fetch goes to it
MAX_HELD_RESPONSES_PER_NODE = 1
#: ``max_wait_ms`` of a Fetch sent while the node still holds records (rule 3): 1, not 0, as the
#: embedded Tansu broker (docs/testing.md) answers a 0 ms Fetch without any records
NO_WAIT_MS = 1



def request_max_bytes(fetch_max_bytes: int) -> int:
    """Every Fetch's ``max_bytes``: half of ``fetch_max_bytes`` (>= 1), so a node's two responses fit in it.

    A larger first batch still comes whole (KIP-74): progress never depends on it.
    """
    return max(1, fetch_max_bytes // 2)


_LEADER_ERRORS = (
    KErrors.NotLeaderForPartitionError,
    KErrors.ReplicaNotAvailableError,
    KErrors.UnknownTopicOrPartitionError,
    KErrors.KafkaStorageError,
)
_EPOCH_ERRORS = (KErrors.FencedLeaderEpochError, KErrors.UnknownLeaderEpochError)
#: errors after which the leader serves the partition again, not its preferred read replica
#: (Java ``FetchCollector.handleInitializeErrors``; OFFSET_OUT_OF_RANGE apart)
_REPLICA_ERRORS = (
    KErrors.NotLeaderForPartitionError,
    KErrors.ReplicaNotAvailableError,
    KErrors.KafkaStorageError,
    KErrors.FencedLeaderEpochError,
    KErrors.OffsetNotAvailableError,
    KErrors.UnknownTopicOrPartitionError,
)


class _Held:
    """One partition's fetched response: raw (parked while paused), parsed records, or an error."""

    __slots__ = ("aborted", "counted", "data", "error", "fetch_offset", "node", "raw", "records", "response_id", "tp",
                 "version")

    def __init__(self, tp: KTopicPartition, node: int, response_id: int, fetch_offset: int, data: Any,
                 version: int) -> None:
        self.tp = tp
        self.node = node
        self.response_id = response_id
        self.fetch_offset = fetch_offset
        self.data = data
        self.version = version
        self.records: Any = None
        self.error: Exception | None = None
        # the response's record bytes and aborted transactions, until the columnar decoder took them
        self.raw: bytes | None = None
        self.aborted: Any = None
        self.counted = False  # in the pipeline's ``_holds``

    def size(self) -> int:
        if isinstance(self.records, ColumnarRecords):
            return self.records.size_in_bytes
        if self.records is not None:
            batches = getattr(self.records, "_batches", None)
            return int(batches.size_in_bytes()) if batches is not None else 0
        raw = getattr(self.data, "records", None)
        return len(raw or b"")


def fetch_columns(fetcher: Any, max_records: int, timeout_ms: int) -> list[RecordColumns]:
    """``fetcher.fetch_columns``, or the columns of ``fetcher.fetch`` for a fetcher without it.

    A fetcher without a columnar hand-out (the simulator's) has its records grouped by partition
    here. Same arguments, results and errors as
    :meth:`PipelinedFetcher.fetch_columns`.
    """
    if isinstance(fetcher, PipelinedFetcher):
        return fetcher.fetch_columns(max_records, timeout_ms)
    groups = itertools.groupby(fetcher.fetch(max_records, timeout_ms), key=lambda r: (r.topic, r.partition))
    return [RecordColumns(TopicPartition(*tp), list(records)) for tp, records in groups]


class PipelinedFetcher:
    """``RecordFetcher`` with kgroup's own fetch scheduling (module docstring: rules and bounds).

    Args:
        client: kafka-python's ``KafkaNetClient`` (its connection manager sends the Fetches).
        cluster: its cluster metadata (leaders, leader epochs).
        kp_config: the kafka-python settings ``KafkaPythonTransport`` built (resets and validation).
        config: the consumer configuration (``fetch_*``, ``max_partition_fetch_bytes``,
            ``check_crcs``, ``isolation_level``, ``retry_backoff_ms`` in ms).

    Used from the poll thread; ``wakeup`` from any thread.

    """

    def __init__(self, client: Any, cluster: Any, kp_config: dict[str, Any], config: ConsumerConfig) -> None:
        strategy = config.auto_offset_reset if config.auto_offset_reset != "none" else "none"
        self._subscription = SubscriptionState(strategy)
        # kafka-python's Fetcher runs the offset resets and KIP-320 validations only; it never fetches
        self._offsets = Fetcher(client, self._subscription, **kp_config)
        self._decoder: Any = None  # record_decoder.load_batch_decoder(), at the first response
        self._client = client
        self._manager = client._manager
        self._cluster = cluster
        self._clock = MonotonicClock()
        self._config = config
        self._isolation = IsolationLevel.build_from(config.isolation_level)
        self._min_version = FetchRequest.min_version_for_isolation_level(self._isolation)
        self._topics: set[str] = set()
        self._idle = True
        # poll thread
        self._held: dict[KTopicPartition, _Held] = {}
        # per node, per response id: how many partitions of ``_held`` without an error and not
        # paused hold its records (rules 2 and 3), kept as ``_held`` changes
        self._holds: dict[int, collections.Counter[int]] = {}
        self._order: collections.deque[KTopicPartition] = collections.deque()
        self._in_flight_nodes: set[int] = set()
        self._in_flight_tps: set[KTopicPartition] = set()
        self._quiet: set[int] = set()
        self._backoff_until: dict[int, float] = {}
        self._ends: dict[KTopicPartition, int] = {}  # fetch_until
        self._next_response_id = 0
        # KIP-392: client_rack as the Fetch's rack id; each partition's preferred read replica
        # (node, monotonic expiry) as the leader named it (Java ``SubscriptionState.preferredReadReplica``)
        self._rack = config.client_rack or ""
        self._preferred = ReadReplicas(cluster, config.metadata_max_age_ms)
        # Fetch requests sent and record bytes received, per node (read by tests: ``fetches_by_node``)
        self._sent_to: collections.Counter[int] = collections.Counter()
        self._sessions: dict[int, FetchSession] = {}  # KIP-227, per node
        self._bytes_from: collections.Counter[int] = collections.Counter()
        self._inline: tuple[KTopicPartition, int, Exception] | None = None
        # the columnar decoder (decode_record_set) of both hand-outs once fetch_columns was called
        # (None: not yet; False: numpy/pyarrow missing); poll() alone keeps the record decoder
        self._columnar: Any = None
        self._windowed = False  # the hand-out under way is fetch()'s: decode by windows
        self._hooked: list[Any] = []
        # IO thread -> poll thread
        self._arrivals: collections.deque[tuple[int, int, dict[KTopicPartition, int], int, Any, Any]] = (
            collections.deque()
        )
        self._woken = threading.Event()
        self._dirty = True
        # when kafka-python's reset and validation steps run next (``_prepare``)
        self._positions_dirty = True
        self._positions_refreshed: Any = None
        self._positions_due = 0.0
        self._assigned_topics: frozenset[str] = frozenset()  # the topics of ``assign``'s partitions

    # ------------------------------------------------------------------ RecordFetcher
    def idle(self) -> bool:
        """True when the last ``fetch`` had nothing buffered and nothing in flight to wait on."""
        return self._idle

    def assign(self, partitions: frozenset[TopicPartition]) -> None:
        """Fetch exactly ``partitions``; what is buffered for others is dropped."""
        self._subscription.assign_from_user([kafka_tp(tp) for tp in sorted(partitions)])
        for ktp in [ktp for ktp in self._held if not self._subscription.is_assigned(ktp)]:
            self._drop(ktp)
        self._recount()
        for ktp in [ktp for ktp in self._ends if not self._subscription.is_assigned(ktp)]:
            del self._ends[ktp]
        self._preferred.retain(self._subscription.is_assigned)
        topics = {tp.topic for tp in partitions}
        self._assigned_topics = frozenset(topics)
        if not topics <= self._topics:
            self._topics |= topics
            self._cluster.set_topics(sorted(self._topics))
        self._changed()

    def seek(self, tp: TopicPartition, offset: int, leader_epoch: int | None = None) -> None:
        """Fetch ``tp`` from ``offset`` next (what is buffered for ``tp`` is dropped)."""
        ktp = kafka_tp(tp)
        self._subscription.seek(ktp, KOffsetAndMetadata(offset, "", -1 if leader_epoch is None else leader_epoch))
        self._drop(ktp)
        self._changed()

    def request_reset(self, tp: TopicPartition, strategy: str) -> None:
        """Find ``tp``'s position with ListOffsets: "earliest" or "latest"."""
        ktp = kafka_tp(tp)
        value = OffsetResetStrategy.EARLIEST if strategy == "earliest" else OffsetResetStrategy.LATEST
        self._subscription.request_offset_reset(ktp, value)
        self._drop(ktp)
        self._hook(self._offsets.reset_offsets_if_needed())
        self._changed()

    def position(self, tp: TopicPartition) -> int | None:
        """Offset of the next record, or None while unknown."""
        pos = self._subscription.assignment[kafka_tp(tp)].position
        return None if pos is None else int(pos.offset)

    def highwater(self, tp: TopicPartition) -> int | None:
        """The high watermark from ``tp``'s last fetch response, or None before one."""
        state = self._subscription.assignment.get(kafka_tp(tp))
        return None if state is None or state.highwater is None else int(state.highwater)

    def has_position(self, tp: TopicPartition) -> bool:
        """True when the position is known."""
        return bool(self._subscription.has_valid_position(kafka_tp(tp)))

    def pause(self, tp: TopicPartition) -> None:
        """Stop fetching ``tp`` (its buffered response is kept)."""
        ktp = kafka_tp(tp)
        self._subscription.pause(ktp)
        if (held := self._held.get(ktp)) is not None:
            self._uncount(held)
        self._changed()

    def resume(self, tp: TopicPartition) -> None:
        """Fetch ``tp`` again."""
        ktp = kafka_tp(tp)
        self._subscription.resume(ktp)
        if (held := self._held.get(ktp)) is not None:
            self._count(held)
        self._changed()

    def wakeup(self) -> None:
        """Interrupt a blocked ``fetch`` (any thread)."""
        self._woken.set()

    def fetch_until(self, tp: TopicPartition, end_offset: int | None) -> None:
        """Send no Fetch for ``tp`` while its position is at or past ``end_offset`` (None: no end).

        Records past the end that a Fetch sent earlier brought are still handed out; the bound
        only keeps a reader of a range from leaving a Fetch in flight once the range is read.
        """
        ktp = kafka_tp(tp)
        if end_offset is None:
            self._ends.pop(ktp, None)
        else:
            self._ends[ktp] = end_offset
        self._changed()

    def reusable(self) -> bool:
        """True when no Fetch is in flight and no response waits to be taken in.

        Then nothing fetched so far can reach a later read once ``assign`` dropped the buffers:
        the transport may serve an unrelated read (``kgroup.spark``'s pool of transports).
        """
        return not self._in_flight_nodes and not self._arrivals and not self._resetting()

    def missing_topics(self) -> frozenset[str]:
        """Assigned topics kafka-python's cluster metadata does not know (after its refresh)."""
        if self._cluster._last_successful_refresh_ms <= 0:
            return frozenset()  # no metadata yet: nothing is known missing
        known = self._cluster.topics()
        return frozenset(topic for topic in self._assigned_topics if topic not in known)

    def buffered(self) -> list[tuple[TopicPartition, int]]:
        """Fetched responses not fully handed out: ``(partition, record bytes)`` each (read by tests)."""
        return [(TopicPartition(ktp.topic, ktp.partition), held.size()) for ktp, held in list(self._held.items())
                if held.error is None]

    def fetches_by_node(self) -> dict[int, tuple[int, int]]:
        """Per node: ``(Fetch requests sent, record bytes received)`` so far (read by tests).

        Shows which replica served the fetches (KIP-392 follower fetching).
        """
        return {node: (self._sent_to[node], self._bytes_from[node]) for node in sorted(self._sent_to)}

    def fetch_sessions(self) -> dict[int, tuple[int, int]]:
        """Per node: ``(full Fetches, incremental Fetches)`` sent so far (KIP-227; read by tests)."""
        return {node: (s.full, s.incremental) for node, s in sorted(self._sessions.items())}

    def close_sessions(self, timeout_ms: int) -> None:
        """End each node's open fetch session: a Fetch with epoch -1 and no partitions.

        Java ``AbstractFetch.close``. Waits at most ``timeout_ms`` for the answers. Best effort:
        a broker evicts a session it does not hear from; nothing here raises.
        """
        pending: list[threading.Event] = []
        for node, session in list(self._sessions.items()):
            metadata = session.next_metadata
            if metadata.session_id == FetchMetadata.INVALID_SESSION_ID:
                continue  # no session on that node
            # a Fetch in flight to the node is answered first: the broker serves a connection in order
            request = FetchRequest(
                max_wait_ms=0, min_bytes=1, max_bytes=self._config.fetch_max_bytes,
                isolation_level=self._isolation, session_id=metadata.session_id,
                session_epoch=FetchMetadata.FINAL_EPOCH, topics=[], forgotten_topics_data=[],
                rack_id=self._rack, min_version=7, max_version=FETCH_MAX_VERSION,
            )
            answered = threading.Event()
            pending.append(answered)

            def go(request: Any = request, node: int = node, answered: threading.Event = answered) -> None:
                future = self._manager.send(request, node_id=node)
                future.add_both(lambda _: answered.set())

            try:
                self._manager.call_soon(go).add_errback(lambda _, answered=answered: answered.set())
            except Exception:  # the network thread is closed
                answered.set()
        self._sessions.clear()
        deadline = self._clock.monotonic() + timeout_ms / 1000
        for answered in pending:
            answered.wait(max(0.0, deadline - self._clock.monotonic()))

    def preferred_read_replica(self, tp: TopicPartition) -> int | None:
        """The node ``tp`` is fetched from instead of its leader (KIP-392), or None: the leader."""
        return self._preferred.current(kafka_tp(tp), self._clock.monotonic())

    def fetch(self, max_records: int, timeout_ms: int) -> list[ConsumerRecord]:
        """Up to ``max_records`` records, waiting at most ``timeout_ms`` (ms) for a fetch response.

        Raises:
            OffsetOutOfRangeError: out of range with ``auto_offset_reset="none"``.
            FetchError: any other fetch failure (CRC, authorization, truncation, ...).

        """
        self._windowed = True
        taken = [(ktp, part.records(ktp) if isinstance(part, (ColumnSlice, ColumnSlices)) else part)
                 for ktp, part in self._take(max_records, timeout_ms)]
        if len(taken) == 1:
            return taken[0][1]
        out: list[ConsumerRecord] = []
        for _, records in taken:
            out += records
        return out

    def fetch_columns(self, max_records: int, timeout_ms: int) -> list[RecordColumns]:
        """What :meth:`fetch` returns, as one :class:`RecordColumns` per partition (for bulk readers).

        The same records, in the same order, with the same positions, waits, rules and errors as
        ``fetch(max_records, timeout_ms)`` (it is the same hand-out): up to ``max_records``
        records in all, at most one ``RecordColumns`` per partition, partitions in hand-out order.
        Responses handed out from here on (by this call and by ``fetch``) are decoded by the
        columnar decoder (:func:`kgroup._io.columnar.decode_record_set`, when numpy and pyarrow
        are installed):
        decoded columns without a Python object per record; the responses it leaves to the record
        decoder (module docstring) come as record columns (:class:`RecordColumns`).

        Raises:
            OffsetOutOfRangeError: out of range with ``auto_offset_reset="none"``.
            FetchError: any other fetch failure (CRC, authorization, truncation, ...).

        """
        self._windowed = False
        if self._columnar is None:
            self._columnar = load_columnar_decoder() or False
        out: list[RecordColumns] = []
        for ktp, part in self._take(max_records, timeout_ms):
            tp = TopicPartition(ktp.topic, ktp.partition)
            if isinstance(part, ColumnSlice):
                out.append(RecordColumns.of_decoded(tp, part.decoded, part.start, part.stop))
            elif isinstance(part, ColumnSlices):  # a response fetch() began decoding by windows
                out.append(RecordColumns(tp, part.records(ktp)))
            else:
                out.append(RecordColumns(tp, part))
        return out

    def _take(self, max_records: int, timeout_ms: int) -> list[tuple[KTopicPartition, Any]]:
        """``fetch``'s records, per partition (``_hand_out``)."""
        if not self._subscription.assignment:
            self._idle = True
            return []
        try:
            self._prepare()
            taken = self._hand_out(max_records)
            self._maybe_send()
            if taken:
                self._idle = False
                return taken
            if not self._in_flight_nodes and not self._resetting():
                self._idle = True
                return []
            self._idle = False
            self._woken.clear()
            if not self._arrivals and timeout_ms > 0:
                self._woken.wait(timeout_ms / 1000)
            self._prepare()
            taken = self._hand_out(max_records)
            self._maybe_send()
            return taken
        except KErrors.KafkaError as exc:
            raise fetch_error(exc) from exc

    # ------------------------------------------------------------------ offsets: resets, KIP-320
    def _prepare(self) -> None:
        """Take in responses, then start the position look-ups and validations they call for.

        kafka-python's reset and KIP-320 validation steps walk every assigned partition; they
        run when something may have changed what they find (a partition's error or diverging
        epoch in a response, an assignment, seek, reset, pause or resume, a finished look-up or
        validation, new metadata) and, while a position awaits a look-up or a validation, every
        ``retry_backoff_ms`` (their own retries); not on every ``fetch``: a member of a
        thousand partitions spent most of its ``poll()`` in them.
        """
        self._ingest()
        now = self._clock.monotonic()
        refreshed = self._cluster._last_successful_refresh_ms
        if not self._positions_dirty and refreshed == self._positions_refreshed and now < self._positions_due:
            return
        self._positions_dirty = False  # before the steps: an event meanwhile sets it again
        self._positions_refreshed = refreshed
        self._positions_due = now + self._config.retry_backoff_ms / 1000
        self._hook(self._offsets.reset_offsets_if_needed())
        # KIP-320: positions whose leader epoch moved are validated with OffsetForLeaderEpoch
        # before fetching resumes (a truncation raises from here)
        self._offsets.maybe_validate_positions()
        self._hook(self._offsets.validate_offsets_if_needed())
        if not any(state.awaiting_reset or state.awaiting_validation
                   for state in self._subscription.assignment.values()):
            self._positions_due = math.inf  # nothing for kafka-python to retry: only an event runs the steps

    def _resetting(self) -> bool:
        task = self._offsets._reset_task
        return task is not None and not task.is_done

    def _hook(self, task: Any) -> None:
        """Wake the poll thread when a reset or validation task ends (positions change)."""
        if task is None or any(task is t for t in self._hooked):
            return
        self._hooked = [t for t in self._hooked if not t.is_done]
        self._hooked.append(task)
        task.add_both(self._io_event)

    def _io_event(self, _: Any = None) -> None:
        self._dirty = True
        self._positions_dirty = True
        self._woken.set()

    def _arrived(self) -> None:
        """A Fetch response came (IO thread): what it calls for in positions ``_parse`` marks."""
        self._dirty = True
        self._woken.set()

    def _changed(self) -> None:
        self._dirty = True
        self._positions_dirty = True
        self._quiet.clear()

    # ------------------------------------------------------------------ sending
    def _maybe_send(self) -> None:
        if self._dirty:
            self._dirty = False
            self._send_fetches()

    def _send_fetches(self) -> None:
        """One Fetch per node that may take one (module docstring, rules 1-3)."""
        sub = self._subscription
        cluster = self._cluster
        manager = self._manager
        now = self._clock.monotonic()
        # nodes that take no Fetch now; each of them sets _dirty when that changes (a response
        # arrives, records are handed out or dropped)
        blocked = self._in_flight_nodes | self._quiet
        if blocked and self._all_blocked(blocked):
            return  # nothing to send anywhere (the common case): skip the walks over the partitions
        holding = self._holds
        blocked.update(node for node, held in holding.items() if len(held) > MAX_HELD_RESPONSES_PER_NODE)
        if blocked and self._all_blocked(blocked):
            return
        by_node: dict[int, dict[KTopicPartition, PartitionKey]] = {}
        skipped: set[int] = set(blocked)
        ends = self._ends
        held_tps = self._held
        in_flight_tps = self._in_flight_tps
        assignment = sub.assignment
        for ktp in sub.fetchable_partitions():
            if ktp in held_tps or ktp in in_flight_tps:
                continue
            if ends and ktp in ends and assignment[ktp].position.offset >= ends[ktp]:
                continue  # fetch_until: the range is read
            node = cluster.leader_for_partition(ktp)
            if node is None or node == -1:
                log.debug("no leader known for %s: metadata update requested", ktp)
                cluster.request_update()
                self._dirty = True  # look again at the next fetch(): no event says when metadata came
                continue
            if self._preferred:
                node = self._preferred.select(ktp, node, now)
            if node in skipped:
                continue
            if node not in by_node and (self._backoff_until.get(node, 0.0) > now or manager.connection_delay(node) > 0
                                        or self._client.throttle_delay(node) > 0):
                skipped.add(node)
                self._dirty = True  # a wait in time: look again at the next fetch()
                continue
            position = assignment[ktp].position
            epoch = cluster.leader_epoch_for_partition(ktp)
            by_node.setdefault(node, {})[ktp] = (
                -1 if epoch is None else epoch, position.offset, position.leader_epoch)
        long_poll = self._config.fetch_max_wait_ms
        if by_node.keys() - holding.keys() and self._positions_pending():
            long_poll = min(long_poll, self._config.retry_backoff_ms)
        for node, partitions in by_node.items():
            self._send(node, partitions, NO_WAIT_MS if node in holding else long_poll)

    def _positions_pending(self) -> bool:
        """An assigned, unpaused partition waits for its position (a reset, a validation)."""
        return any(not state.paused and (not state.has_valid_position or state.awaiting_validation)
                   for state in self._subscription.assignment.values())

    def _all_blocked(self, blocked: set[int]) -> bool:
        """Every node a partition may be fetched from (the brokers, preferred replicas) is in ``blocked``."""
        nodes = {broker.node_id for broker in self._cluster.brokers()}
        nodes.update(self._preferred.nodes())
        return bool(nodes) and nodes <= blocked

    def _make_partition(self, ktp: KTopicPartition, key: PartitionKey) -> Any:
        return _FetchPartition(partition=ktp.partition, current_leader_epoch=key[0], fetch_offset=key[1],
                               last_fetched_epoch=key[2], partition_max_bytes=self._config.max_partition_fetch_bytes)

    def _count(self, held: _Held) -> None:
        """Count ``held`` in ``_holds`` if it holds records of an unpaused partition."""
        state = self._subscription.assignment.get(held.tp)  # without kafka-python's lock, as _parse_or_raise
        if held.counted or held.error is not None or (state is not None and state.paused):
            return
        held.counted = True
        self._holds.setdefault(held.node, collections.Counter())[held.response_id] += 1

    def _uncount(self, held: _Held) -> None:
        if not held.counted:
            return
        held.counted = False
        counts = self._holds[held.node]
        counts[held.response_id] -= 1
        if counts[held.response_id] <= 0:
            del counts[held.response_id]
            if not counts:
                del self._holds[held.node]

    def _recount(self) -> None:
        """``_holds`` from ``_held`` again (a new assignment)."""
        self._holds.clear()
        for held in self._held.values():
            held.counted = False
            self._count(held)

    def _send(self, node: int, partitions: dict[KTopicPartition, PartitionKey], wait_ms: int) -> None:
        session = self._sessions.get(node)
        if session is None:
            session = self._sessions[node] = FetchSession(node)
        data = session.build_next(partitions, self._make_partition)
        request = FetchRequest(
            max_wait_ms=wait_ms,
            min_bytes=self._config.fetch_min_bytes,
            max_bytes=request_max_bytes(self._config.fetch_max_bytes),
            isolation_level=self._isolation,
            session_id=data.id,
            session_epoch=data.epoch,
            topics=data.to_send,
            forgotten_topics_data=data.to_forget,
            rack_id=self._rack,
            min_version=self._min_version,
            max_version=FETCH_MAX_VERSION,
        )
        offsets = {ktp: key[1] for ktp, key in partitions.items()}
        response_id = self._next_response_id
        self._next_response_id += 1
        arrivals = self._arrivals
        wake = self._arrived
        done: list[bool] = []

        def arrived(response: Any, exc: Any) -> None:  # IO thread (or here, when sending failed)
            if done:
                return
            done.append(True)
            arrivals.append((node, response_id, offsets, wait_ms, response, exc))
            wake()

        manager = self._manager

        def go() -> None:  # IO thread
            future = manager.send(request, node_id=node)
            future.add_callback(lambda response: arrived(response, None))
            future.add_errback(lambda exc: arrived(None, exc))

        self._in_flight_nodes.add(node)
        self._in_flight_tps.update(offsets)
        self._sent_to[node] += 1
        log.debug("Fetch %d to node %s (max_wait_ms %d): %s", response_id, node, wait_ms, offsets)
        try:
            scheduled = manager.call_soon(go)
        except Exception as exc:  # the network thread is closed
            arrived(None, exc)
            return
        scheduled.add_errback(lambda exc: arrived(None, exc))

    # ------------------------------------------------------------------ receiving
    def _ingest(self) -> None:
        """Take in the responses the IO thread queued: parse, buffer, note errors."""
        arrivals = self._arrivals
        sub = self._subscription
        while arrivals:
            node, response_id, offsets, wait_ms, response, exc = arrivals.popleft()
            self._in_flight_nodes.discard(node)
            self._in_flight_tps.difference_update(offsets)
            self._dirty = True
            session = self._sessions.get(node)
            if exc is not None:
                log.debug("Fetch to node %s failed: %s", node, exc)
                if session is not None:
                    session.handle_error(exc)  # the next Fetch is a full one
                self._backoff(node)
                for ktp in offsets:
                    self._preferred.clear(ktp, f"the Fetch to node {node} failed")  # Java handleFetchFailure
                continue
            top_error = getattr(response, "error_code", 0)
            if session is not None and not session.handle_response(response) and not top_error:
                continue  # a response the session rejects: dropped, the next Fetch is a full one
            if top_error:
                log.info("node %s refused a Fetch: %s", node, KErrors.for_code(top_error).__name__)
                self._backoff(node)
                continue
            got_records = False
            version = response.API_VERSION
            assignment = sub.assignment
            for topic_data in response.responses:
                for data in topic_data.partitions:
                    ktp = KTopicPartition(topic_data.topic, data.partition_index)
                    fetch_offset = offsets.get(ktp)
                    if fetch_offset is None or ktp in self._held:
                        continue
                    self._bytes_from[node] += len(data.records or b"")
                    held = _Held(ktp, node, response_id, fetch_offset, data, version)
                    state = assignment.get(ktp)  # without the lock, as ``_parse_or_raise``
                    if state is not None and state.paused:
                        # parked raw until resumed (kafka-python and Java keep paused partitions' data)
                        if data.error_code or data.records:
                            self._keep(held)
                        continue
                    if self._parse(held):
                        self._keep(held)
                        got_records = got_records or held.records is not None
            if wait_ms == NO_WAIT_MS and not got_records and node in self._holds:
                self._quiet.add(node)  # rule 3: not asked again until records are handed out

    def _backoff(self, node: int) -> None:
        self._backoff_until[node] = self._clock.monotonic() + self._config.retry_backoff_ms / 1000

    def _keep(self, held: _Held) -> None:
        self._held[held.tp] = held
        self._order.append(held.tp)
        self._count(held)

    def _drop(self, ktp: KTopicPartition) -> None:
        held = self._held.pop(ktp, None)
        if held is None:
            return
        self._uncount(held)
        if held.records is not None:
            held.records.drain()
        self._dirty = True
        self._quiet.clear()

    def _parse(self, held: _Held) -> bool:
        """Kafka's rules for one partition's response (kafka-python's ``_parse_fetched_data``).

        Returns True when ``held`` keeps records (or an error to raise in line), False when
        nothing of it is left to hand out.
        """
        try:
            return self._parse_or_raise(held)
        except Exception as exc:
            held.error = exc
            self._uncount(held)
            return True

    def _parse_or_raise(self, held: _Held) -> bool:
        tp, fetch_offset, data = held.tp, held.fetch_offset, held.data
        sub = self._subscription
        cluster = self._cluster
        error_type = KErrors.for_code(data.error_code)
        try:
            state = sub.assignment.get(tp)  # without kafka-python's lock: only this thread adds or removes
            if state is None or not state.is_fetchable():
                return False  # revoked, paused or being validated meanwhile
            if error_type is KErrors.NoError:
                position = state.position
                if position is None or position.offset != fetch_offset:
                    return False  # the position moved (seek, reset) while the fetch was in flight
                diverging = getattr(data, "diverging_epoch", None)
                if diverging is not None and diverging.end_offset >= 0:
                    log.info("Fetch for %s diverged at epoch %s offset %s: validating the position",
                             tp, diverging.epoch, diverging.end_offset)
                    sub.request_position_validation(tp)
                    cluster.request_update()
                    self._positions_dirty = True
                    return False
                records = MemoryRecords(data.records)
                size = records.size_in_bytes()
                if size > 0 and not records.has_next():
                    raise KErrors.KafkaError(
                        f"Failed to make progress reading messages at {tp}={fetch_offset}: a non-empty fetch "
                        "response without a complete record batch"
                    )
                if data.high_watermark >= 0:
                    state.highwater = data.high_watermark
                if (replica := getattr(data, "preferred_read_replica", -1)) is not None and replica >= 0:
                    self._preferred.note(tp, replica, self._clock.monotonic())
                if size == 0:
                    return False
                self._decoder = self._decoder or record_decoder.load_batch_decoder()
                held.records = PartitionRecords(
                    self._decoder, fetch_offset, tp, records,
                    check_crcs=self._config.check_crcs,
                    isolation_level=self._isolation,
                    aborted_transactions=data.aborted_transactions,
                    on_drain=self._on_drain,
                )
                held.raw, held.aborted = data.records, data.aborted_transactions
                held.data = None
                return True
            if error_type in _REPLICA_ERRORS:
                self._preferred.clear(tp, error_type.__name__)  # Java FetchCollector.handleInitializeErrors
            if error_type in _LEADER_ERRORS:
                log.debug("Error fetching partition %s: %s", tp, error_type.__name__)
                self._leader_hint(tp, data)
                cluster.request_update()
            elif error_type in _EPOCH_ERRORS:
                log.debug("Fetch for %s returned %s: validating the position", tp, error_type.__name__)
                self._leader_hint(tp, data)
                sub.request_position_validation(tp)
                cluster.request_update()
            elif error_type is KErrors.OffsetNotAvailableError:
                log.debug("Error fetching partition %s: %s", tp, error_type.__name__)
                cluster.request_update()
            elif error_type is KErrors.OffsetOutOfRangeError:
                if self._preferred.clear(tp, "out of range on a follower") is not None:
                    return False  # the leader decides whether the offset is out of range (KIP-392)
                position = sub.assignment[tp].position
                if position is None or position.offset != fetch_offset:
                    return False
                if sub.has_default_offset_reset_policy():
                    log.info("Fetch offset %s is out of range for topic-partition %s", fetch_offset, tp)
                    sub.request_offset_reset(tp)
                else:
                    raise KErrors.OffsetOutOfRangeError({tp: fetch_offset})
            elif error_type is KErrors.TopicAuthorizationFailedError:
                log.warning("Not authorized to read from topic %s.", tp.topic)
                raise KErrors.TopicAuthorizationFailedError({tp.topic})
            elif issubclass(error_type, KErrors.RetriableError):
                log.debug("Retriable error fetching partition %s: %s", tp, error_type.__name__)
                if issubclass(error_type, KErrors.InvalidMetadataError):
                    cluster.request_update()
            else:
                raise error_type("Unexpected error while fetching data")
            return False
        finally:
            if error_type is not KErrors.NoError:
                sub.move_partition_to_end(tp)  # healthier partitions first in the next Fetch
                self._positions_dirty = True  # a reset or a validation requested above runs at once

    def _leader_hint(self, tp: KTopicPartition, data: Any) -> None:
        """A KIP-951 ``current_leader`` hint of a Fetch v12+ response."""
        leader = getattr(data, "current_leader", None)
        if leader is None or leader.leader_epoch < 0:
            return
        moved = self._cluster.update_partition_leader(tp, leader.leader_id, leader.leader_epoch)
        if moved and self._cluster.broker_metadata(leader.leader_id) is None:
            self._cluster.request_update()  # a leader whose address is not known yet

    def _on_drain(self, records: Any) -> None:
        if records.bytes_read > 0:
            self._subscription.move_partition_to_end(records.topic_partition)  # round-robin fairness

    def _decode_columns(self, held: _Held) -> None:
        """Give ``held``'s response to the columnar decoder, if nothing of it was handed out yet.

        The record decoder (``PartitionRecords``) keeps the responses the columnar
        decoder does not handle (``decode_record_set`` returns None: legacy message sets)
        and, logged, any it fails on itself.
        """
        raw, held.raw = held.raw, None
        part = held.records
        if (raw is None or not isinstance(part, PartitionRecords) or part.records_read
                or part._last_batch is not None or part._next_inline_exception is not None):
            return
        read_committed = self._isolation == IsolationLevel.READ_COMMITTED
        windows: list[Any] = []
        decode_window: Any = None
        try:
            if self._windowed:  # fetch(): a window at a time (module docstring, "Decoding")
                from kgroup._io.columnar import AbortedTransactions, split_batches

                windows = split_batches(raw, DECODE_WINDOW_BYTES) or [raw]
                transactions = AbortedTransactions(held.aborted) if read_committed and held.aborted else None

                def decode_window(window: Any, offset: int = held.fetch_offset, tp: Any = held.tp) -> Any:
                    return self._columnar(window, offset, check_crcs=self._config.check_crcs,
                                          read_committed=read_committed, transactions=transactions,
                                          topic_partition=tp)

                decoded = decode_window(windows.pop(0))
            else:
                decoded = self._columnar(raw, held.fetch_offset, check_crcs=self._config.check_crcs,
                                         read_committed=read_committed, aborted_transactions=held.aborted or (),
                                         topic_partition=held.tp)
        except Exception:  # not the data's errors (those come in line): the decoder's own failure
            log.warning("the columnar decoder failed on %s at offset %d; the record decoder takes the response",
                        held.tp, held.fetch_offset, exc_info=True)
            return
        if decoded is None:
            return
        held.records = ColumnarRecords(decoded, held.fetch_offset, held.tp, len(raw), self._on_drain,
                                       windows=windows, decode_window=decode_window)

    # ------------------------------------------------------------------ handing out
    def _hand_out(self, max_records: int) -> list[tuple[KTopicPartition, Any]]:
        """Records of the buffered responses, oldest response first (Java's ``FetchCollector``).

        One ``(partition, records)`` per partition that handed out records: a list of
        ``ConsumerRecord`` s, or a ``ColumnSlice`` for a response the columnar decoder took
        (``fetch_columns`` was called: ``_columnar``).
        """
        sub = self._subscription
        inline, self._inline = self._inline, None
        if inline is not None:
            tp, offset, exc = inline
            position = sub.assignment[tp].position if sub.is_fetchable(tp) else None
            if position is not None and position.offset == offset:
                raise exc
        out: list[tuple[KTopicPartition, Any]] = []
        remaining = max_records
        order = self._order
        parked: list[KTopicPartition] = []
        tp = None
        offset = -1
        try:
            while remaining > 0 and order:
                tp = order[0]
                held = self._held.get(tp)
                if held is None:
                    order.popleft()  # dropped meanwhile (seek, assignment)
                    continue
                if sub.is_paused(tp):
                    parked.append(order.popleft())
                    continue
                if held.records is None and held.error is None and not self._parse(held):
                    order.popleft()  # parked while paused, nothing left of it now
                    self._drop(tp)
                    continue
                offset = held.fetch_offset
                if held.error is not None:
                    position = sub.assignment[tp].position if sub.is_fetchable(tp) else None
                    order.popleft()
                    self._drop(tp)
                    if position is not None and position.offset == held.fetch_offset:
                        raise held.error
                    continue
                if held.raw is not None and self._columnar:
                    self._decode_columns(held)
                part = held.records
                state = sub.assignment[tp] if sub.is_fetchable(tp) else None
                if state is None or part.next_fetch_offset != state.position.offset:
                    order.popleft()  # revoked, awaiting validation, or the position moved
                    self._drop(tp)
                    continue
                offset = part.next_fetch_offset
                taken = part.take(remaining)
                if taken:
                    out.append((tp, taken))
                    remaining -= len(taken)
                    if not remaining and exhausted(part):
                        part.take(1)  # nothing left: drained now, so tp is fetched again at once
                epoch = part.leader_epoch
                state.position = KOffsetAndMetadata(
                    part.next_fetch_offset, "", epoch if epoch >= 0 else state.position.leader_epoch
                )
                if not part:
                    order.popleft()
                    self._drop(tp)
        except Exception as exc:
            if not out:
                raise
            assert tp is not None
            self._inline = (tp, offset, exc)  # raised by the next fetch, if the position is still there
        finally:
            if parked:
                order.extendleft(reversed(parked))
        return out
