"""The ``kgroup`` Spark Python data source: Kafka records, partitions from a consumer group.

Driver (the stream reader lives in the one long-lived Python process Spark starts for a
streaming source): a :class:`kgroup.Consumer` makes the application a member of ``group.id``
(cooperative-sticky unless ``partition.assignment.strategy`` says otherwise; static with
``group.instance.id``, KIP-345). Its partitions stay paused, so ``poll()`` never fetches a
record on the driver: it only runs the rebalance callbacks. Each ``latestOffset(start, limit)``:

1. notes ``start`` as processed (Spark calls it only after the batch ending at ``start``
   completed: the batches of a micro-batch query run one at a time);
2. ``poll(0)``: heartbeats run on kgroup's own thread, but rebalance callbacks run here.
   ``on_partitions_revoked`` commits the processed offsets of the revoked partitions to the
   group before the revocation completes, and they are no longer planned;
   ``on_partitions_assigned`` looks up the group's committed offsets of the new partitions
   (``startingOffsets`` where there is none);
3. commits the processed offsets of the partitions still owned (``OffsetCommit`` with the
   member's generation), so lag tools see the application's progress;
4. plans the batch over the owned partitions only: from the previous end (or the assignment
   offset: :mod:`kgroup.spark._planner`) to the log end offset (ListOffsets LATEST), capped by
   ``maxOffsetsPerTrigger``.

``commit(end)`` commits ``end`` to the group as well. Which offsets win on restart: Spark's
checkpoint for every batch it planned (they replay exactly, by batch id); afterwards a
partition continues from the further of the checkpoint and the group's committed offset
(docs/spark.md). ``poll()`` runs only in ``latestOffset``: a micro-batch longer than
``max.poll.interval.ms`` (300000) makes the driver leave the group (KIP-62), so keep batches
shorter with ``maxOffsetsPerTrigger`` or raise that property.

Executors read each planned range ``[start, end)`` of one partition with the kafka-python
adapter's record fetcher (assign, seek, fetch until the position reaches ``end``) and return
Arrow record batches in the schema of Spark's own Kafka source, built from the fetcher's
columnar hand-out (``PipelinedFetcher.fetch_columns``): the columnar decoder's arrays
(``kgroup._io.columnar``: Kafka's record batches decoded into numpy and Arrow columns, no
Python object per record), sliced into Arrow record batches.

The options of Spark's Kafka source behave as there (Spark's "Structured Streaming + Kafka
Integration Guide"): ``Trigger.AvailableNow`` through PySpark's ``SupportsTriggerAvailableNow``
(the reader joins the group and waits for its first assignment before noting the target
offsets), ``minOffsetsPerTrigger``/``maxTriggerDelay`` applied in ``latestOffset`` (PySpark has
no composite read limit), ``minPartitions`` splitting ranges, ``failOnDataLoss`` on the driver
(deleted topics, a log end gone backwards) and on the executors (records deleted by retention).
docs/spark.md has the table and the differences.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from kgroup._clock import MonotonicClock
from kgroup._io.fetch_pipeline import RecordColumns, fetch_columns
from kgroup._io.kafka_python import KafkaPythonTransport
from kgroup._retry import Deadline, retry_until
from kgroup.config import ConsumerConfig
from kgroup.consumer import Consumer
from kgroup.errors import KGroupError, OffsetOutOfRangeError
from kgroup.listener import RebalanceListener
from kgroup.membership.states import MemberState
from kgroup.spark._options import (
    EARLIEST,
    LATEST,
    DataLossError,
    OffsetSpec,
    PartitionOffsets,
    SourceOptionError,
    SourceOptions,
    parse_options,
)
from kgroup.spark._planner import (
    OffsetRange,
    StreamOffset,
    pack_ranges,
    plan_batch_ranges,
    plan_end,
    plan_ranges,
    positions_of,
    split_ranges,
)
from kgroup.spark._pool import POOL
from kgroup.types import TopicPartition

__all__ = ["SCHEMA", "KGroupBatchReader", "KGroupDataSource", "KGroupStreamReader", "RangePartition",
           "input_partitions", "read_range", "read_ranges"]

log = logging.getLogger(__name__)

#: The schema of Spark's Kafka source (``timestamp`` in µs, UTC; ``timestampType`` 0 = CreateTime).
SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
        StructField(
            "headers",
            ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())])),
        ),
    ]
)
#: rows per Arrow record batch an executor hands to Spark
_ARROW_BATCH_ROWS = 10_000
#: records asked of the fetcher per call on an executor
_FETCH_RECORDS = 10_000
#: the fetch deadline and the ListOffsets failure clock (``kgroup._clock``: the one real clock)
_CLOCK = MonotonicClock()
#: seconds an executor's read may make no progress before it checks that its partition still exists
_STALL_CHECK_S = 5.0
#: seconds an executor's read waits when the fetcher has nothing in flight (its partition's leader
#: not known yet, a position being looked up) instead of asking again at once
_IDLE_WAIT_S = 0.005
#: ms of each ``poll`` while the driver waits for the group's first assignment
_JOIN_POLL_MS = 50


class RangePartition(InputPartition):
    """One Spark input partition (one task): ranges ``[start, end)`` of Kafka partitions (picklable).

    One range, unless ``maxPartitions`` packed several into the task; they are read one after
    another (:func:`read_ranges`).
    """

    def __init__(self, ranges: tuple[OffsetRange, ...], options: SourceOptions) -> None:
        super().__init__(ranges)
        self.ranges = ranges
        self.options = options


def input_partitions(ranges: Sequence[OffsetRange], options: SourceOptions) -> list[RangePartition]:
    """The tasks of a batch: ``ranges`` split for ``minPartitions``, then packed for ``maxPartitions``."""
    split = split_ranges(ranges, options.min_partitions)
    return [RangePartition(task, options) for task in pack_ranges(split, options.max_partitions)]


def read_ranges(options: SourceOptions, ranges: Sequence[OffsetRange]) -> Iterator[pa.RecordBatch]:
    """One task's ranges, one after another (:func:`read_range` each; the worker's transport reused)."""
    for rng in ranges:
        yield from read_range(options, rng)


def _executor_config(options: SourceOptions) -> ConsumerConfig:
    return options.consumer_config(
        enable_auto_commit=False, auto_offset_reset="none", client_id="kgroup-spark-executor"
    )


def _decoded_to_batch(tp: TopicPartition, decoded: Any, start: int, stop: int, schema: pa.Schema) -> pa.RecordBatch:
    """Rows ``[start, stop)`` of the columnar decoder's arrays as an Arrow batch of ``schema``.

    ``decoded`` is a ``kgroup._io.columnar.DecodedRecordSet``: its Arrow keys, values and headers
    are sliced (no copy), its numpy offsets, timestamps and timestamp types wrapped (no copy
    either); only the topic and partition columns and the timestamps' cast to Spark's µs are new.
    """
    n = stop - start
    ts_type = schema.field("timestamp").type
    headers_type = schema.field("headers").type
    headers = decoded.headers.slice(start, n)
    if headers.type != headers_type:
        headers = headers.cast(headers_type)
    arrays = [
        decoded.keys.slice(start, n),
        decoded.values.slice(start, n),
        pa.repeat(pa.scalar(tp.topic, pa.string()), n),
        pa.repeat(pa.scalar(tp.partition, pa.int32()), n),
        pa.array(decoded.offsets[start:stop], pa.int64()),
        pa.array(decoded.timestamps[start:stop], pa.int64()).cast(pa.timestamp("ms", tz=ts_type.tz)).cast(ts_type),
        pa.array(decoded.timestamp_types[start:stop], pa.int32()),
        headers,
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _columns_to_batch(columns: RecordColumns, schema: pa.Schema) -> pa.RecordBatch:
    """One partition's fetched columns as an Arrow batch of ``schema`` (``SCHEMA`` in Arrow).

    Decoded columns (``columns.decoded``) through :func:`_decoded_to_batch`; record columns
    (responses the columnar decoder leaves to the record decoder) from their lists.
    """
    if columns.decoded is not None:
        return _decoded_to_batch(columns.topic_partition, columns.decoded, columns.start, columns.stop, schema)
    n = len(columns)
    tp = columns.topic_partition
    ts_type = schema.field("timestamp").type
    headers_type = schema.field("headers").type
    if any(columns.headers):
        headers = pa.array(columns.headers, headers_type)
    else:  # the common case: no record has headers, n empty lists
        headers = pa.ListArray.from_arrays(pa.repeat(pa.scalar(0, pa.int32()), n + 1),
                                           pa.array([], headers_type.value_type), type=headers_type)
    arrays = [
        pa.array(columns.keys, pa.binary()),
        pa.array(columns.values, pa.binary()),
        pa.repeat(pa.scalar(tp.topic, pa.string()), n),
        pa.repeat(pa.scalar(tp.partition, pa.int32()), n),
        pa.array(columns.offsets, pa.int64()),
        pa.array(columns.timestamps, pa.int64()).cast(pa.timestamp("ms", tz=ts_type.tz)).cast(ts_type),
        pa.array(columns.timestamp_types, pa.int32()),
        headers,
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _data_loss(options: SourceOptions, message: str, cause: BaseException | None = None) -> None:
    """``failOnDataLoss``: raise :class:`DataLossError` (true), or log a warning and go on (false)."""
    if options.fail_on_data_loss:
        raise DataLossError(
            f"kgroup.spark: {message}. Some data may have been lost: retention deleted it or its topic was "
            "deleted or recreated before it was read. To go on from what is still there, set the source "
            "option failOnDataLoss to false"
        ) from cause
    log.warning("kgroup.spark: %s. Some data may have been lost; going on (failOnDataLoss is false)", message)


def _resume_after_loss(
    options: SourceOptions, transport: KafkaPythonTransport, rng: OffsetRange, position: int, cause: BaseException
) -> int | None:
    """Where to go on after the fetch position left the log, or None to end the range.

    Spark's ``KafkaDataConsumer`` rules: with ``failOnDataLoss`` true the task fails; else the
    read goes on from the earliest offset still in ``[position, rng.end)``, and ends when none is.
    """
    tp = rng.topic_partition
    _data_loss(options, f"offset {position} of {tp} is out of range while reading [{rng.start}, {rng.end})", cause)
    timeout = options.consumer_config().request_timeout_ms
    earliest = transport.list_offsets([tp], "earliest", timeout).result(timeout / 1000 + 5).get(tp)
    latest = transport.list_offsets([tp], "latest", timeout).result(timeout / 1000 + 5).get(tp)
    if earliest is None or latest is None or position >= latest or earliest >= rng.end:
        log.warning("kgroup.spark: %s: records [%d, %d) skipped (available: [%s, %s))", tp, position, rng.end,
                    earliest, latest)
        return None
    if earliest > position:
        log.warning("kgroup.spark: %s: records [%d, %d) skipped, going on from %d", tp, position, earliest, earliest)
        return earliest
    return position  # the offset came back (a topic recreated and refilled): try again


def _partition_exists(options: SourceOptions, transport: KafkaPythonTransport, tp: TopicPartition) -> bool:
    timeout = options.consumer_config().request_timeout_ms
    described = transport.describe_topics([tp.topic], timeout).result(timeout / 1000 + 5)
    return tp.partition < len(described.get(tp.topic, ()))


def read_range(
    options: SourceOptions, rng: OffsetRange, batch_rows: int = _ARROW_BATCH_ROWS
) -> Iterator[pa.RecordBatch]:
    """Read records ``[rng.start, rng.end)`` of one partition as Arrow batches of ``SCHEMA``.

    Gaps (compacted records, transaction markers, aborted records under read_committed) are
    skipped: the read ends when the fetch position reaches ``rng.end``. Records no longer in
    the log (retention deleted them, the topic was deleted) are data loss: ``failOnDataLoss``
    true fails the task, false skips to what is left of the range (Spark's Kafka source rules).

    Raises:
        DataLossError: records of the range are gone and ``failOnDataLoss`` is true.
        KGroupError: the range was not read within ``fetchTimeoutMs``.

    """
    schema = to_arrow_schema(SCHEMA, timezone="UTC")
    config = _executor_config(options)
    tp = rng.topic_partition

    def create() -> KafkaPythonTransport:
        transport = KafkaPythonTransport(config)
        try:
            transport.start(min(config.default_api_timeout_ms, options.fetch_timeout_ms))
        except BaseException:
            transport.close()
            raise
        return transport

    # the worker's previous task's transport when it read its range to the end (kgroup.spark._pool)
    with POOL.borrow((KafkaPythonTransport, options.properties), create, _fetch_nothing) as transport:
        fetcher = transport.fetcher()
        fetcher.assign(frozenset({tp}))
        fetcher.seek(tp, rng.start)
        fetcher.fetch_until(tp, rng.end)  # nothing left in flight once the range is read
        deadline = Deadline.after_ms(_CLOCK, options.fetch_timeout_ms)
        pending: list[pa.RecordBatch] = []
        pending_rows = 0
        position = rng.start
        progressed_at = _CLOCK.monotonic()
        while position < rng.end:
            if deadline.expired():
                raise KGroupError(
                    f"kgroup.spark: read of {tp} [{rng.start}, {rng.end}) stopped at offset {position} after "
                    f"{options.fetch_timeout_ms} ms (fetchTimeoutMs)"
                )
            try:
                # no more than the next Arrow batch lacks: batches are cut where the fetches ended
                fetched = fetch_columns(fetcher, min(_FETCH_RECORDS, batch_rows - pending_rows), 500)
            except OffsetOutOfRangeError as exc:
                resumed = _resume_after_loss(options, transport, rng, position, exc)
                if resumed is None:
                    break
                fetcher.seek(tp, resumed)
                position = resumed
                continue
            except Exception as exc:
                raise KGroupError(f"kgroup.spark: fetching {tp} at offset {position} failed: {exc!r}") from exc
            last = -1
            for columns in fetched:
                if columns.decoded is not None:  # numpy offsets: no list of them
                    offsets = columns.decoded.offsets[columns.start:columns.stop]
                    last = int(offsets[-1])
                    within = int(offsets.searchsorted(rng.end))  # offsets ascend
                else:
                    last = columns.offsets[-1]
                    within = bisect.bisect_left(columns.offsets, rng.end)
                if within:
                    batch = _columns_to_batch(columns, schema)
                    pending.append(batch if within == len(columns) else batch.slice(0, within))
                    pending_rows += within
            before = position
            current = fetcher.position(tp)
            position = current if current is not None else position
            if last + 1 > position:
                position = last + 1
            if not fetched and fetcher.idle():
                # nothing in flight to wait on (the metadata of a new transport is on its way): the
                # fetch returned at once, so wait a little rather than spin (a Spark task starts so)
                _CLOCK.sleep(_IDLE_WAIT_S)
            now = _CLOCK.monotonic()
            if position > before:
                progressed_at = now
            elif now - progressed_at > _STALL_CHECK_S:
                progressed_at = now
                if not _partition_exists(options, transport, tp):  # deleted: no fetch will ever answer
                    _data_loss(options, f"{tp} no longer exists: records [{position}, {rng.end}) cannot be read")
                    break
            if pending_rows >= batch_rows:
                whole = pending[0] if len(pending) == 1 else pa.concat_batches(pending)
                full = pending_rows - pending_rows % batch_rows
                for start in range(0, full, batch_rows):
                    yield whole.slice(start, batch_rows)
                pending_rows -= full
                pending = [whole.slice(full)] if pending_rows else []
        if pending:
            yield pending[0] if len(pending) == 1 else pa.concat_batches(pending)


def _fetch_nothing(transport: KafkaPythonTransport) -> bool:
    """A transport going back to the pool: its fetcher drops what it buffered and fetches nothing.

    False (close it) when a Fetch is still in flight: its response must not reach the next task.
    """
    fetcher = transport.fetcher()
    fetcher.assign(frozenset())
    return fetcher.reusable()


class _Membership(RebalanceListener):
    """The stream reader's rebalance listener (runs inside ``latestOffset``'s ``poll()``)."""

    def __init__(self, reader: KGroupStreamReader) -> None:
        self._reader = reader

    def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        self._reader._assigned(partitions)

    def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        self._reader._revoked(partitions)

    def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self._reader._lost(partitions)


class _NotReady(Exception):
    """The driver cannot plan yet (offsets unknown, a rebalance in progress): retried."""


class KGroupStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reader: the driver is a member of the group (see the module docstring).

    ``Trigger.AvailableNow`` (PySpark's ``SupportsTriggerAvailableNow``):
    :meth:`prepareForTriggerAvailableNow` joins the group, waits for its first assignment and
    records the log end offset of every partition of the subscribed topics; batches then stop at
    those offsets, and the query ends once the partitions the group assigns to the application
    have reached them.
    """

    def __init__(self, options: SourceOptions) -> None:
        if options.topics is None:
            raise SourceOptionError(
                "assign", "a streaming read takes its partitions from the group: use subscribe (assign is batch-only)"
            )
        if options.ending_offsets is not None:
            raise SourceOptionError("endingOffsets", "is for batch reads only (a stream has no end)")
        self._options = options
        self._config = options.consumer_config(enable_auto_commit=False, auto_offset_reset="earliest")
        self._starting: OffsetSpec = options.starting_offsets or "latest"
        self._consumer: Consumer | None = None
        self._transport: KafkaPythonTransport | None = None
        self._owned: set[TopicPartition] = set()
        self._unresolved: set[TopicPartition] = set()
        self._assigned_from: dict[TopicPartition, int] = {}
        self._processed: dict[TopicPartition, int] = {}
        self._group_committed: dict[TopicPartition, int] = {}
        self._failing_since: float | None = None
        self._joined = False
        #: partitions to check for deletion, each with when it became a suspect (revoked, lost, or in
        #: the restored checkpoint): one not owned and still described stays a suspect for
        #: metadata_max_age_ms, as a broker that has not applied the deletion yet may still describe it
        self._suspects: dict[TopicPartition, float] = {}
        #: partitions found deleted (reported once; not planned until assigned again)
        self._gone: set[TopicPartition] = set()
        self._first_trigger = True
        #: when a micro-batch last ran or was allowed to (maxTriggerDelay); None: never
        self._last_trigger_s: float | None = None
        #: Trigger.AvailableNow: the log end offsets when the query started (None: other triggers)
        self._targets: dict[TopicPartition, int] | None = None

    # ------------------------------------------------------------------ membership
    def _start(self) -> Consumer:
        if self._consumer is not None:
            return self._consumer
        transport = KafkaPythonTransport(self._config)
        try:
            transport.start(self._config.default_api_timeout_ms)
        except Exception as exc:
            transport.close()
            raise KGroupError(f"could not reach the cluster at {self._config.bootstrap_servers!r}: {exc}") from exc
        self._transport = transport
        consumer = Consumer(self._config)
        assert self._options.topics is not None
        consumer.subscribe(self._options.topics, _Membership(self))
        self._consumer = consumer
        log.info("kgroup.spark: group %s: subscribed to %s", self._config.group_id, list(self._options.topics))
        self._await_first_assignment(consumer)
        return consumer

    def _await_first_assignment(self, consumer: Consumer) -> None:
        """Poll until the group's first assignment, at most ``default.api.timeout.ms`` (60000).

        So the query's first batch plans the partitions the group gave the application, as
        Spark's own Kafka source knows its partitions before its first batch: planned before the
        assignment, a new query's first batch would be an empty one (Spark runs batch 0 whatever
        its end offset), and its records would wait for the next trigger. A group that has not
        assigned anything by then (a coordinator not reachable yet) is waited for trigger by
        trigger instead, as before.
        """
        deadline = Deadline.after_ms(_CLOCK, self._config.default_api_timeout_ms)
        while not self._joined and not deadline.expired():
            consumer.poll(min(_JOIN_POLL_MS, max(1, deadline.remaining_ms())))
        if not self._joined:
            log.warning("kgroup.spark: group %s: no assignment within %d ms (default.api.timeout.ms); "
                        "the batches plan nothing until it comes", self._config.group_id,
                        self._config.default_api_timeout_ms)

    def _assigned(self, partitions: frozenset[TopicPartition]) -> None:
        assert self._consumer is not None
        self._joined = True
        self._consumer.pause(partitions)  # poll() never fetches on the driver
        for tp in partitions:
            self._owned.add(tp)
            self._unresolved.add(tp)
            self._gone.discard(tp)
            self._assigned_from.pop(tp, None)
            self._processed.pop(tp, None)
            self._group_committed.pop(tp, None)
        log.info("kgroup.spark: group %s: assigned %s", self._config.group_id, sorted(map(str, partitions)))

    def _revoked(self, partitions: frozenset[TopicPartition]) -> None:
        # the revocation completes when this returns: commit what this application processed
        self._commit_processed(partitions)
        self._forget(partitions)
        log.info("kgroup.spark: group %s: revoked %s", self._config.group_id, sorted(map(str, partitions)))

    def _lost(self, partitions: frozenset[TopicPartition]) -> None:
        self._forget(partitions)  # another member may own them already: no commit
        log.warning("kgroup.spark: group %s: lost %s", self._config.group_id, sorted(map(str, partitions)))

    def _forget(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self._owned.discard(tp)
            self._unresolved.discard(tp)
            self._assigned_from.pop(tp, None)
            self._processed.pop(tp, None)
            self._group_committed.pop(tp, None)
            # a topic deletion also revokes: check from the next trigger
            self._suspects.setdefault(tp, _CLOCK.monotonic())

    def _list_offsets(self, partitions: Sequence[TopicPartition], spec: str) -> dict[TopicPartition, int]:
        assert self._transport is not None
        timeout = self._config.request_timeout_ms
        return self._transport.list_offsets(partitions, spec, timeout).result(timeout / 1000 + 5)

    def _starting_positions(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """``startingOffsets`` of partitions the group has no offset for (a partition a JSON leaves out: earliest)."""
        out: dict[TopicPartition, int] = {}
        wanted: dict[str, list[TopicPartition]] = {"earliest": [], "latest": []}
        named = self._starting.as_dict() if isinstance(self._starting, PartitionOffsets) else {}
        for tp in partitions:
            if isinstance(self._starting, str):
                wanted[self._starting].append(tp)
                continue
            offset = named.get(tp, EARLIEST)
            if offset >= 0:
                out[tp] = offset
            else:
                wanted["earliest" if offset == EARLIEST else "latest"].append(tp)
        for spec, tps in wanted.items():
            if tps:
                out.update(self._list_offsets(tps, spec))
        return out

    def _resolve(self) -> None:
        """Assignment offsets of newly assigned partitions: committed, else startingOffsets."""
        if not self._unresolved:
            return
        assert self._consumer is not None
        wanted = sorted(self._unresolved)
        try:
            committed = self._consumer.committed(wanted, timeout_ms=self._config.request_timeout_ms)
            missing = [tp for tp in wanted if committed.get(tp) is None]
            fallback = self._starting_positions(missing) if missing else {}
        except Exception as exc:  # retried on the next latestOffset
            log.warning("kgroup.spark: group %s: offsets of new partitions not known yet: %r",
                        self._config.group_id, exc)
            return
        for tp in wanted:
            om = committed.get(tp)
            if om is not None:
                offset = om.offset
                self._group_committed[tp] = offset
            elif tp in fallback:
                offset = fallback[tp]
            else:
                continue  # no leader yet
            self._assigned_from[tp] = offset
            self._processed[tp] = offset
            self._unresolved.discard(tp)

    def _note_processed(self, offsets: Mapping[TopicPartition, int]) -> None:
        for tp, offset in offsets.items():
            if tp in self._processed and offset > self._processed[tp]:
                self._processed[tp] = offset

    def _commit_processed(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        consumer = self._consumer
        if consumer is None:
            return
        wanted = self._owned if partitions is None else set(partitions) & self._owned
        offsets = {
            tp: self._processed[tp]
            for tp in sorted(wanted - self._gone)
            if tp in self._processed and self._processed[tp] > self._group_committed.get(tp, -1)
        }
        if not offsets:
            return
        try:
            consumer.commit(offsets, timeout_ms=self._config.request_timeout_ms)
        except KGroupError as exc:  # the checkpoint stays authoritative; retried on the next batch
            log.warning("kgroup.spark: group %s: commit of %d offsets failed: %s", self._config.group_id,
                        len(offsets), exc)
            return
        self._group_committed.update(offsets)

    # ------------------------------------------------------------------ failOnDataLoss
    def _deleted(self, owned: Sequence[TopicPartition], latest: Mapping[TopicPartition, int]) -> set[TopicPartition]:
        """Suspect partitions whose topic (or partition) is gone from the cluster's metadata."""
        suspects = (set(self._suspects) | {tp for tp in owned if tp not in latest}) - self._gone
        if not suspects:
            return set()
        assert self._transport is not None
        timeout = self._config.request_timeout_ms
        described = self._transport.describe_topics({tp.topic for tp in suspects}, timeout).result(timeout / 1000 + 5)
        deleted = {tp for tp in suspects if tp.partition >= len(described.get(tp.topic, ()))}
        # a partition still described: owned ones are checked again whenever ListOffsets misses
        # them; a revoked one only while the brokers' metadata may still disagree about it
        expired = _CLOCK.monotonic() - self._config.metadata_max_age_ms / 1000
        owned_now = set(owned)
        for tp in suspects:
            since = self._suspects.get(tp)
            if tp in deleted or tp in owned_now or since is None or since < expired:
                self._suspects.pop(tp, None)
        return deleted

    def _regressed(
        self, positions: Mapping[TopicPartition, int], latest: dict[TopicPartition, int]
    ) -> dict[TopicPartition, int]:
        """Partitions whose log end offset is below their position: ``{tp: where to go on}``.

        The log end is asked twice more first (a leader change can answer a stale one, as
        Spark's ``fetchLatestOffsets`` allows for); what stays below is data loss (the topic
        was recreated or truncated): the stream goes on from the earliest offset.
        """
        behind = [tp for tp, pos in positions.items() if tp in latest and latest[tp] < pos]
        for _ in range(2):
            if not behind:
                return {}
            _CLOCK.sleep(0.5)
            latest.update(self._list_offsets(behind, "latest"))
            behind = [tp for tp in behind if latest.get(tp, positions[tp]) < positions[tp]]
        if not behind:
            return {}
        for tp in behind:
            _data_loss(self._options, f"the log end offset of {tp} went back from {positions[tp]} to {latest[tp]}")
        earliest = self._list_offsets(behind, "earliest")
        return {tp: earliest.get(tp, latest[tp]) for tp in behind}

    # ------------------------------------------------------------------ Spark's API
    def initialOffset(self) -> dict[str, Any]:
        """The empty offset: every partition starts where the group says (startingOffsets if nowhere)."""
        self._start()
        return StreamOffset().to_json()

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxOffsetsPerTrigger``, else ``minOffsetsPerTrigger``, as a PySpark read limit.

        Spark's Kafka source combines both in a ``CompositeReadLimit``, which PySpark's data
        source API has no class for: with both set this returns ``ReadMaxRows`` and
        :meth:`latestOffset` applies ``minOffsetsPerTrigger`` itself.
        """
        if self._options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self._options.max_offsets_per_trigger)
        if self._options.min_offsets_per_trigger is not None:
            return ReadMinRows(self._options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """``Trigger.AvailableNow``: join the group, then note every partition's log end offset now.

        Waits for the group's first assignment (at most ``max(default.api.timeout.ms,
        max.poll.interval.ms)``): before it the application owns nothing, and a query that planned
        nothing would end at once. The targets cover every partition of the subscribed topics,
        so partitions the group moves here later stop there too.

        Raises:
            KGroupError: the group assigned nothing in time, or the log end offsets could not be read.

        """
        consumer = self._start()
        wait_ms = max(self._config.default_api_timeout_ms,
                      self._config.rebalance_timeout_ms or self._config.max_poll_interval_ms)
        deadline = Deadline.after_ms(_CLOCK, wait_ms)
        while not self._joined:
            if deadline.expired():
                raise KGroupError(
                    f"kgroup.spark: Trigger.AvailableNow: group {self._config.group_id} assigned no partitions "
                    f"within {wait_ms} ms"
                )
            consumer.poll(100)

        def log_ends() -> dict[TopicPartition, int]:
            assert self._transport is not None
            assert self._options.topics is not None
            timeout = self._config.request_timeout_ms
            described = self._transport.describe_topics(self._options.topics, timeout).result(timeout / 1000 + 5)
            tps = [TopicPartition(t, p.partition) for t, parts in described.items() for p in parts]
            ends = self._list_offsets(tps, "latest") if tps else {}
            if set(ends) != set(tps):
                raise _NotReady(f"no log end offset for {sorted(map(str, set(tps) - set(ends)))} (no leader?)")
            return ends

        self._targets = self._retrying(log_ends, "the log end offsets")
        log.info("kgroup.spark: group %s: Trigger.AvailableNow up to %s", self._config.group_id,
                 {str(tp): offset for tp, offset in sorted(self._targets.items())})

    def _retrying(self, attempt: Any, what: str) -> Any:
        deadline = Deadline.after_ms(_CLOCK, self._config.default_api_timeout_ms)
        try:
            return retry_until(attempt, deadline, retry_on=Exception, backoff_s=lambda n: min(0.05 * 2**n, 1.0))
        except Exception as exc:
            raise KGroupError(
                f"kgroup.spark: Trigger.AvailableNow: {what} not known within "
                f"{self._config.default_api_timeout_ms} ms (default.api.timeout.ms): {exc}"
            ) from exc

    def _observe(
        self, consumer: Consumer
    ) -> tuple[list[TopicPartition], dict[TopicPartition, int], set[TopicPartition]]:
        """Run the group's callbacks; the owned partitions, their log end offsets, deleted suspects.

        Raises:
            _NotReady: (Trigger.AvailableNow only) what the plan needs is not known yet.
            Exception: ListOffsets or Metadata failed.

        """
        consumer.poll(0)
        self._resolve()
        owned = sorted(self._owned - self._gone)
        latest = self._list_offsets(owned, "latest") if owned else {}
        deleted = self._deleted(owned, latest)
        if self._targets is not None:
            # ending the query is final: wait out rebalances and unknown offsets instead
            state = consumer.member_state()
            if state.name != MemberState.STABLE.name:  # either protocol's own states call it STABLE
                raise _NotReady(f"the group is rebalancing ({state.value})")
            if self._unresolved:
                raise _NotReady(f"no starting offset yet for {sorted(map(str, self._unresolved))}")
            no_end = [tp for tp in owned if tp not in latest and tp not in deleted]
            if no_end:
                raise _NotReady(f"no log end offset for {sorted(map(str, no_end))} (no leader?)")
        return owned, latest, deleted

    def _delay(self, minimum: int, available: int) -> bool:
        """Spark's ``minOffsetsPerTrigger`` / ``maxTriggerDelay`` rule: True to skip this trigger."""
        now = _CLOCK.monotonic()
        if self._last_trigger_s is None or (now - self._last_trigger_s) * 1000 >= self._options.max_trigger_delay_ms:
            self._last_trigger_s = now
            return False
        if available < minimum:
            return True
        self._last_trigger_s = now
        return False

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """Service the group, commit what is processed, plan the next batch's end offset."""
        consumer = self._start()
        begin = StreamOffset.from_json(start)
        self._note_processed(begin.offsets)
        if self._first_trigger:  # a restored checkpoint: are its partitions' topics still there?
            now = _CLOCK.monotonic()
            for tp in begin.offsets:
                self._suspects.setdefault(tp, now)
            self._first_trigger = False
        if self._targets is not None:
            owned, latest, deleted = self._retrying(lambda: self._observe(consumer), "the partitions' offsets")
        else:
            try:
                owned, latest, deleted = self._observe(consumer)
            except Exception as exc:
                # transient (leader moving, broker restarting): no batch this trigger, unless it lasts
                now = _CLOCK.monotonic()
                self._failing_since = self._failing_since or now
                if now - self._failing_since > self._config.default_api_timeout_ms / 1000:
                    raise KGroupError(
                        f"kgroup.spark: ListOffsets has failed for {now - self._failing_since:.0f} s "
                        f"(default.api.timeout.ms): {exc!r}"
                    ) from exc
                log.warning("kgroup.spark: group %s: ListOffsets failed, retried next trigger: %r",
                            self._config.group_id, exc)
                return start
        self._failing_since = None
        self._note_processed(begin.offsets)
        self._commit_processed()
        for tp in sorted(deleted):
            _data_loss(self._options, f"{tp} no longer exists (its topic was deleted)")
        self._gone |= deleted
        owned = [tp for tp in owned if tp not in deleted]
        positions = positions_of(begin, owned, self._assigned_from)
        if self._config.isolation_level == "read_committed":
            # a group offset committed by a read_uncommitted reader may pass the last stable offset
            positions = {tp: pos for tp, pos in positions.items() if begin.offsets.get(tp) == pos}
        resets = self._regressed(positions, latest)
        for tp, offset in resets.items():
            self._assigned_from[tp] = self._processed[tp] = offset
            self._group_committed.pop(tp, None)  # the group's offset is past the log too: commit the lower one
        if self._targets is not None:
            latest = {tp: min(end, self._targets[tp]) for tp, end in latest.items() if tp in self._targets}
        cap = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        minimum = None
        if self._targets is None and not isinstance(limit, ReadAllAvailable):
            # PySpark has no composite limit: with maxOffsetsPerTrigger the minimum comes from the option
            minimum = limit.min_rows if isinstance(limit, ReadMinRows) else self._options.min_offsets_per_trigger
        if minimum is not None:
            uncapped = plan_end(begin, owned, self._assigned_from, latest, resets=resets, drop=self._gone)
            available = sum(r.size for r in plan_ranges(begin, uncapped))
            if self._delay(minimum, available):
                return start
        end = plan_end(begin, owned, self._assigned_from, latest, cap, resets=resets, drop=self._gone)
        if dict(end.offsets) == dict(begin.offsets):
            return start  # nothing new: the same offset tells Spark not to run a batch
        return end.to_json()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """The tasks of the batch ``(start, end]``: its non-empty ranges, split and packed (``input_partitions``)."""
        ranges = plan_ranges(StreamOffset.from_json(start), StreamOffset.from_json(end))
        return input_partitions(ranges, self._options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Executor: the task's records, range by range (see :func:`read_range`)."""
        assert isinstance(partition, RangePartition)
        return read_ranges(partition.options, partition.ranges)

    def commit(self, end: dict[str, Any]) -> None:
        """Spark finished every batch up to ``end``: commit it to the group (owned partitions)."""
        self._note_processed(StreamOffset.from_json(end).offsets)
        self._commit_processed()

    def stop(self) -> None:
        """Leave the group (a static member stays until its session times out) and close."""
        try:
            if self._consumer is not None:
                # the revoke callback inside close() commits the processed offsets
                self._consumer.close(self._config.request_timeout_ms)
        finally:
            self._consumer = None
            if self._transport is not None:
                self._transport.close()
                self._transport = None


class KGroupBatchReader(DataSourceReader):
    """Batch read: ``startingOffsets`` (default earliest) to ``endingOffsets`` (default latest), now.

    A batch read plans from the partitions' offsets alone; it does not join the group and
    commits nothing.
    """

    def __init__(self, options: SourceOptions) -> None:
        starting = options.starting_offsets
        if starting == "latest" or (
            isinstance(starting, PartitionOffsets) and any(o == LATEST for _, o in starting.offsets)
        ):
            raise SourceOptionError("startingOffsets", "cannot be latest (-1) in a batch read: the read would be empty")
        self._options = options

    def partitions(self) -> Sequence[InputPartition]:
        """A task per non-empty partition range (split for ``minPartitions``, packed for ``maxPartitions``)."""
        config = _executor_config(self._options)
        transport = KafkaPythonTransport(config)
        timeout = config.request_timeout_ms
        try:
            transport.start(config.default_api_timeout_ms)
            if self._options.assign is not None:
                tps = list(self._options.assign)
            else:
                assert self._options.topics is not None
                described = transport.describe_topics(self._options.topics, timeout).result(timeout / 1000 + 5)
                unknown = sorted(set(self._options.topics) - set(described))
                if unknown:
                    raise SourceOptionError("subscribe", f"unknown topics {unknown}")
                tps = [TopicPartition(t, p.partition) for t, parts in described.items() for p in parts]
            earliest = transport.list_offsets(tps, "earliest", timeout).result(timeout / 1000 + 5)
            latest = transport.list_offsets(tps, "latest", timeout).result(timeout / 1000 + 5)
        finally:
            transport.close()
        try:
            ranges = plan_batch_ranges(
                earliest, latest, self._options.starting_offsets or "earliest", self._options.ending_offsets or "latest"
            )
        except ValueError as exc:
            option, _, rest = str(exc).partition(" ")
            if option in ("startingOffsets", "endingOffsets"):
                raise SourceOptionError(option, rest) from None
            raise KGroupError(f"kgroup.spark: {exc}") from None
        return input_partitions(ranges, self._options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Executor: the task's records, range by range (see :func:`read_range`)."""
        assert isinstance(partition, RangePartition)
        return read_ranges(partition.options, partition.ranges)


class KGroupDataSource(DataSource):
    """``spark.readStream.format("kgroup")`` / ``spark.read.format("kgroup")``.

    Options are validated when the source is created (at ``load()``): see
    :func:`kgroup.spark._options.parse_options` and docs/spark.md.

    Raises:
        SourceOptionError: a bad option, naming it.

    """

    def __init__(self, options: Mapping[str, str]) -> None:
        super().__init__(options)  # type: ignore[arg-type]
        self.parsed = parse_options(options)

    @classmethod
    def name(cls) -> str:
        """The format name: ``"kgroup"``."""
        return "kgroup"

    def schema(self) -> StructType:
        """The schema of Spark's Kafka source."""
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        """The batch reader."""
        return KGroupBatchReader(self.parsed)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """The micro-batch reader (a member of the group)."""
        return KGroupStreamReader(self.parsed)
