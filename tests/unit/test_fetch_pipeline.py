"""``PipelinedFetcher``'s scheduling and Kafka's fetch rules, on a fake network.

The fake connection manager records every Fetch and the test answers it: which partitions
each Fetch carries and with which ``max_wait_ms`` is the scheduling (rules 1-3 of
``kgroup._io.fetch_pipeline``); what ``fetch()`` returns and raises is the semantics kept from
kafka-python's ``Fetcher`` (positions, pauses, seeks, assignment changes, errors in line).
"""

from __future__ import annotations

import struct
from types import SimpleNamespace
from typing import Any

import pytest
from kafka.future import Future
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.structs import TopicPartition as KTopicPartition

import kgroup
from kgroup import _error_codes as codes
from kgroup._io import fetch_pipeline, fetch_sessions
from kgroup._io.columnar_records import load_columnar_decoder
from kgroup._io.fetch_pipeline import NO_WAIT_MS, PipelinedFetcher
from kgroup._io.kafka_python import _PASS_THROUGH
from kgroup.config import ConsumerConfig
from kgroup.types import TopicPartition

T = "t"
P0, P1, P2 = (TopicPartition(T, p) for p in range(3))
NODE = 1
FOLLOWER = 2


def batch(base: int, n: int) -> bytes:
    """One v2 batch of ``n`` records at ``base``..; record i has value ``b"v<offset>"``."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i in range(n):
        builder.append(i, timestamp=1_700_000_000_000 + i, key=b"k", value=b"v%d" % (base + i), headers=[])
    buf = bytearray(builder.build())
    struct.pack_into(">q", buf, 0, base)
    return bytes(buf)


class FakeManager:
    """kafka-python's connection manager: ``send`` records the request, the test answers it."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, Any, Future]] = []
        self._net = SimpleNamespace(wakeup=lambda: None)
        self.started: list[str] = []

    def call_soon(self, fn: Any, *args: Any) -> Future:
        result = fn(*args)
        if hasattr(result, "close"):  # a coroutine of kafka-python's Fetcher (a reset, a validation)
            self.started.append(result.__qualname__)
            result.close()
        return Future().success(None)

    def send(self, request: Any, node_id: int | None = None, request_timeout_ms: Any = None) -> Future:
        future = Future()
        self.sent.append((node_id if node_id is not None else -1, request, future))
        return future

    def connection_delay(self, node_id: int) -> float:
        return 0


class FakeCluster:
    def __init__(self) -> None:
        self.updates = 0
        self._last_successful_refresh_ms = 1
        self.replicas = {NODE, FOLLOWER}

    def leader_for_partition(self, tp: Any) -> int:
        return NODE

    def leader_epoch_for_partition(self, tp: Any) -> None:
        return None

    def request_update(self) -> Future:
        self.updates += 1
        return Future()

    def set_topics(self, topics: Any) -> None:
        pass

    def topics(self) -> set[str]:
        return {T}

    def update_partition_leader(self, *args: Any) -> bool:
        return False

    def is_replica_node(self, tp: Any, node: int) -> object | None:
        return object() if node in self.replicas else None

    def brokers(self) -> list[Any]:
        return [SimpleNamespace(node_id=node) for node in sorted(self.replicas)]


def make(**overrides: Any) -> tuple[PipelinedFetcher, FakeManager, FakeCluster]:
    config = ConsumerConfig(bootstrap_servers="fake:9092", group_id="g", **overrides)
    manager = FakeManager()
    cluster = FakeCluster()
    manager.cluster = cluster  # type: ignore[attr-defined]
    client = SimpleNamespace(_manager=manager, throttle_delay=lambda node: 0)
    kp_config = {key: getattr(config, key) for key in _PASS_THROUGH}
    return PipelinedFetcher(client, cluster, kp_config, config), manager, cluster


def start(fetcher: PipelinedFetcher, *partitions: TopicPartition, offset: int = 0) -> None:
    fetcher.assign(frozenset(partitions))
    for tp in partitions:
        fetcher.seek(tp, offset)


def fetched(request: Any) -> dict[TopicPartition, int]:
    """The partitions of a Fetch request with their fetch offsets."""
    return {TopicPartition(t.topic, p.partition): p.fetch_offset for t in request.topics for p in t.partitions}


def answer(manager: FakeManager, index: int, parts: dict[TopicPartition, Any], aborted: Any = None,
           preferred: int = -1, diverging: Any = None) -> None:
    """Answer the ``index``-th Fetch: ``{tp: bytes}`` (records) or ``{tp: error code}``.

    ``preferred``: every partition's ``preferred_read_replica`` (KIP-392; -1: none);
    ``diverging``: every partition's ``diverging_epoch`` (Fetch v12; None: none).
    """
    _, request, future = manager.sent[index]
    partitions = []
    for tp in fetched(request):
        value = parts.get(tp, b"")
        error = value if isinstance(value, int) else codes.NONE
        records = value if isinstance(value, bytes) else b""
        partitions.append(SimpleNamespace(partition_index=tp.partition, error_code=error, high_watermark=1000,
                                          records=records, aborted_transactions=aborted, diverging_epoch=diverging,
                                          current_leader=None, preferred_read_replica=preferred))
    response = SimpleNamespace(API_VERSION=12, error_code=codes.NONE, session_id=0,
                               responses=[SimpleNamespace(topic=T, partitions=partitions)])
    future.success(response)


def offsets(records: list[kgroup.ConsumerRecord]) -> list[tuple[int, int]]:
    return [(r.partition, r.offset) for r in records]


def test_the_next_fetch_is_in_flight_while_a_response_is_handed_out() -> None:
    fetcher, manager, _ = make()
    start(fetcher, P0, P1)
    assert fetcher.fetch(3, 0) == []
    assert len(manager.sent) == 1
    assert fetched(manager.sent[0][1]) == {P0: 0, P1: 0}
    assert manager.sent[0][1].max_wait_ms == 500  # nothing held: the broker may long-poll
    answer(manager, 0, {P0: batch(0, 10)})  # P1 had nothing
    assert offsets(fetcher.fetch(3, 0)) == [(0, 0), (0, 1), (0, 2)]
    # P1 is fetched again at once, and without long-polling: P0 still holds records
    assert len(manager.sent) == 2
    assert fetched(manager.sent[1][1]) == {P1: 0}
    assert manager.sent[1][1].max_wait_ms == NO_WAIT_MS
    answer(manager, 1, {P1: batch(0, 4)})
    got = []
    for _ in range(6):
        got += offsets(fetcher.fetch(3, 0))
    assert got == [(0, i) for i in range(3, 10)] + [(1, i) for i in range(4)]
    assert fetcher.position(P0) == 10 and fetcher.position(P1) == 4
    assert fetcher.highwater(P0) == 1000


def test_caught_up_partitions_are_not_asked_again_until_records_are_handed_out() -> None:
    fetcher, manager, _ = make()
    start(fetcher, P0, P1)
    fetcher.fetch(3, 0)
    answer(manager, 0, {P0: batch(0, 10)})
    fetcher.fetch(3, 0)
    answer(manager, 1, {})  # the no-wait Fetch of P1: still nothing
    fetcher.fetch(3, 0)
    fetcher.fetch(3, 0)
    assert len(manager.sent) == 2, "an empty no-wait Fetch is not repeated while P0 is handed out"
    for _ in range(4):
        fetcher.fetch(3, 0)
    assert fetcher.position(P0) == 10
    # P0 ran dry: both are fetched, and the broker may long-poll again
    assert len(manager.sent) == 3
    assert fetched(manager.sent[2][1]) == {P0: 10, P1: 0}
    assert manager.sent[2][1].max_wait_ms == 500


def test_a_node_holds_at_most_two_responses() -> None:
    fetcher, manager, _ = make()
    start(fetcher, P0, P1, P2)
    fetcher.fetch(1, 0)
    answer(manager, 0, {P0: batch(0, 5)})
    fetcher.fetch(1, 0)
    assert fetched(manager.sent[1][1]) == {P1: 0, P2: 0}
    answer(manager, 1, {P1: batch(0, 5)})
    fetcher.fetch(1, 0)
    assert len(manager.sent) == 2, "P2 waits: the node holds two responses with records"
    assert sorted((tp.partition, size > 0) for tp, size in fetcher.buffered()) == [(0, True), (1, True)]
    for _ in range(4):
        fetcher.fetch(1, 0)
    assert fetcher.position(P0) == 5
    assert fetched(manager.sent[2][1]) == {P0: 5, P2: 0}


@pytest.mark.parametrize("fetch_max_bytes", [1, 3, 1_000_000, 52_428_800])
def test_each_fetch_asks_for_half_of_fetch_max_bytes_so_a_nodes_two_responses_fit_in_it(
        fetch_max_bytes: int) -> None:
    fetcher, manager, _ = make(fetch_max_bytes=fetch_max_bytes)
    start(fetcher, P0, P1)
    fetcher.fetch(1, 0)
    answer(manager, 0, {P0: batch(0, 5)})
    fetcher.fetch(1, 0)  # P0's response held: P1's Fetch goes out beside it
    assert len(manager.sent) == 2
    expected = max(1, fetch_max_bytes // 2)
    assert [request.max_bytes for _, request, _ in manager.sent] == [expected, expected]
    assert 2 * expected <= max(fetch_max_bytes, 2)


def test_responses_for_moved_positions_and_revoked_partitions_are_dropped() -> None:
    fetcher, manager, _ = make()
    start(fetcher, P0, P1)
    fetcher.fetch(5, 0)
    fetcher.seek(P0, 3)  # while the Fetch of offset 0 is in flight
    answer(manager, 0, {P0: batch(0, 10), P1: batch(0, 10)})
    got = offsets(fetcher.fetch(20, 0))
    assert got == [(1, i) for i in range(10)], "P0's records of offset 0 are not handed out after a seek to 3"
    assert fetcher.position(P0) == 3
    assert fetched(manager.sent[-1][1]).get(P0) == 3
    # a buffered response of a partition no longer assigned is dropped with the assignment
    answer(manager, len(manager.sent) - 1, {P0: batch(3, 5), P1: batch(10, 5)})
    assert offsets(fetcher.fetch(2, 0)) == [(0, 3), (0, 4)]
    fetcher.assign(frozenset({P1}))
    assert [tp for tp, _ in fetcher.buffered()] == [P1]
    assert {r.partition for r in fetcher.fetch(20, 0)} == {1}


def test_paused_partitions_keep_their_records_and_are_not_fetched() -> None:
    fetcher, manager, _ = make()
    start(fetcher, P0, P1)
    fetcher.fetch(5, 0)
    answer(manager, 0, {P0: batch(0, 4), P1: batch(0, 4)})
    fetcher.pause(P0)
    assert {r.partition for r in fetcher.fetch(20, 0)} == {1}
    assert all(P0 not in fetched(request) for _, request, _ in manager.sent[1:])
    assert [tp for tp, _ in fetcher.buffered()] == [P0]
    fetcher.resume(P0)
    assert offsets(fetcher.fetch(20, 0)) == [(0, i) for i in range(4)]


def test_a_long_poll_is_short_while_a_partition_waits_for_its_position() -> None:
    fetcher, manager, _ = make(retry_backoff_ms=100, fetch_max_wait_ms=500)
    fetcher.assign(frozenset({P0, P1}))
    fetcher.seek(P0, 0)  # P1's position is still being looked up
    fetcher.fetch(1, 0)
    assert fetched(manager.sent[0][1]) == {P0: 0}
    assert manager.sent[0][1].max_wait_ms == 100, "P1's first Fetch waits behind this one: at most retry_backoff_ms"
    answer(manager, 0, {})
    fetcher.seek(P1, 0)
    fetcher.fetch(1, 0)
    assert fetched(manager.sent[1][1]) == {P0: 0, P1: 0}
    assert manager.sent[1][1].max_wait_ms == 500, "every position known: the broker may long-poll"
    fetcher.pause(P1)
    fetcher.request_reset(P1, "earliest")  # a paused partition is not fetched either way: no short polls for it
    answer(manager, 1, {})
    fetcher.fetch(1, 0)
    assert fetched(manager.sent[2][1]) == {P0: 0} and manager.sent[2][1].max_wait_ms == 500


def test_a_paused_partition_holds_nothing_back_and_holds_again_once_resumed() -> None:
    fetcher, manager, _ = make()
    start(fetcher, P0, P1)
    fetcher.fetch(1, 0)
    answer(manager, 0, {P0: batch(0, 4)})
    assert offsets(fetcher.fetch(1, 0)) == [(0, 0)]
    assert fetched(manager.sent[1][1]) == {P1: 0} and manager.sent[1][1].max_wait_ms == NO_WAIT_MS  # rule 3
    fetcher.pause(P0)  # its records are kept aside: they hold nothing back (rules 2 and 3)
    answer(manager, 1, {})
    assert fetcher.fetch(1, 0) == []
    assert len(manager.sent) == 3 and fetched(manager.sent[2][1]) == {P1: 0}
    assert manager.sent[2][1].max_wait_ms == 500, "no records held: the broker may long-poll"
    fetcher.resume(P0)  # its records are to be handed out again: the node holds records
    answer(manager, 2, {})
    assert offsets(fetcher.fetch(1, 0)) == [(0, 1)]
    assert len(manager.sent) == 4 and manager.sent[3][1].max_wait_ms == NO_WAIT_MS


def test_a_response_parked_for_a_paused_partition_holds_nothing_back() -> None:
    fetcher, manager, _ = make()
    start(fetcher, P0, P1)
    fetcher.fetch(1, 0)
    fetcher.pause(P0)  # while its Fetch is in flight: its records are parked raw when they come
    answer(manager, 0, {P0: batch(0, 4)})
    assert fetcher.fetch(1, 0) == []
    assert [tp for tp, _ in fetcher.buffered()] == [P0]
    assert len(manager.sent) == 2 and fetched(manager.sent[1][1]) == {P1: 0}
    assert manager.sent[1][1].max_wait_ms == 500, "no records to hand out: the broker may long-poll"


def test_leader_errors_refresh_metadata_and_out_of_range_resets() -> None:
    fetcher, manager, cluster = make(auto_offset_reset="earliest")
    start(fetcher, P0, P1, P2)
    fetcher.fetch(5, 0)
    updates = cluster.updates
    answer(manager, 0, {P0: codes.NOT_LEADER_FOR_PARTITION, P1: codes.OFFSET_OUT_OF_RANGE, P2: batch(0, 2)})
    assert offsets(fetcher.fetch(5, 0)) == [(2, 0), (2, 1)]
    assert cluster.updates > updates
    assert not fetcher.has_position(P1), "out of range: the position is looked up again (auto_offset_reset)"
    assert any("reset" in name for name in manager.started)


def test_fenced_leader_epoch_validates_the_position() -> None:
    fetcher, manager, _ = make()
    fetcher.assign(frozenset({P0}))
    fetcher.seek(P0, 7, leader_epoch=2)
    fetcher.fetch(5, 0)
    answer(manager, 0, {P0: codes.FENCED_LEADER_EPOCH})
    assert fetcher.fetch(5, 0) == []
    assert fetcher._subscription.assignment[KTopicPartition(T, 0)].awaiting_validation
    assert any("validate" in name for name in manager.started)


def test_errors_are_raised_after_the_records_before_them() -> None:
    fetcher, manager, _ = make(auto_offset_reset="none")
    start(fetcher, P0, P1)
    fetcher.fetch(5, 0)
    answer(manager, 0, {P0: batch(0, 3), P1: codes.OFFSET_OUT_OF_RANGE})
    assert offsets(fetcher.fetch(10, 0)) == [(0, 0), (0, 1), (0, 2)]
    with pytest.raises(kgroup.OffsetOutOfRangeError) as raised:
        fetcher.fetch(10, 0)
    assert raised.value.topic_partition == P1


def test_a_corrupt_batch_raises_until_the_position_moves_past_it() -> None:
    fetcher, manager, _ = make(check_crcs=True)
    start(fetcher, P0)
    fetcher.fetch(5, 0)
    bad = bytearray(batch(0, 3))
    bad[-1] ^= 0xFF
    answer(manager, 0, {P0: bytes(bad)})
    for _ in range(2):
        with pytest.raises(kgroup.FetchError, match="crc"):
            fetcher.fetch(5, 0)
    fetcher.seek(P0, 3)
    assert fetcher.fetch(5, 0) == []
    assert fetched(manager.sent[-1][1]) == {P0: 3}


def test_read_committed_skips_aborted_transactions_and_their_markers() -> None:
    from tests.compat.test_partition_records import batch as transactional_batch
    from tests.compat.test_partition_records import control_batch

    fetcher, manager, _ = make(isolation_level="read_committed")
    start(fetcher, P0)
    fetcher.fetch(10, 0)
    assert manager.sent[0][1].isolation_level == 1
    data = (transactional_batch(0, 2, transactional=True, producer_id=7) + control_batch(2, 7, abort=True)
            + transactional_batch(3, 2, transactional=True, producer_id=8) + control_batch(5, 8, abort=False))
    answer(manager, 0, {P0: data}, aborted=[SimpleNamespace(producer_id=7, first_offset=0)])
    assert offsets(fetcher.fetch(10, 0)) == [(0, 3), (0, 4)]
    fetcher.fetch(10, 0)
    assert fetcher.position(P0) == 6, "the position moves past the commit marker"


def test_topic_authorization_failure_is_a_fetch_error() -> None:
    fetcher, manager, _ = make()
    start(fetcher, P0)
    fetcher.fetch(5, 0)
    answer(manager, 0, {P0: codes.TOPIC_AUTHORIZATION_FAILED})
    with pytest.raises(kgroup.FetchError):
        fetcher.fetch(5, 0)


def test_a_failed_fetch_is_retried_after_retry_backoff_ms(monkeypatch: pytest.MonkeyPatch) -> None:
    fetcher, manager, _ = make(retry_backoff_ms=100)
    now = [1000.0]
    monkeypatch.setattr(fetcher, "_clock", SimpleNamespace(monotonic=lambda: now[0]))
    start(fetcher, P0)
    fetcher.fetch(5, 0)
    manager.sent[0][2].failure(ConnectionError("reset by peer"))
    fetcher.fetch(5, 0)
    assert len(manager.sent) == 1
    now[0] += 0.2
    fetcher.fetch(5, 0)
    assert len(manager.sent) == 2 and fetched(manager.sent[1][1]) == {P0: 0}


def test_idle_when_nothing_is_in_flight() -> None:
    fetcher, _, _ = make()
    assert fetcher.fetch(5, 0) == [] and fetcher.idle()
    start(fetcher, P0)
    fetcher.fetch(5, 0)
    assert not fetcher.idle()
    assert fetch_pipeline.FETCH_MAX_VERSION == 12


def test_fetch_until_leaves_nothing_in_flight_once_the_range_is_read() -> None:
    fetcher, manager, _ = make()
    start(fetcher, P0, P1, offset=5)
    fetcher.fetch_until(P0, 10)
    fetcher.fetch(3, 0)
    assert fetched(manager.sent[0][1]) == {P0: 5, P1: 5} and not fetcher.reusable()
    answer(manager, 0, {P0: batch(5, 8), P1: batch(5, 2)})  # P0: 5-12, past its end
    got = []
    for _ in range(4):
        got += offsets(fetcher.fetch(3, 0))
    assert got == [(0, 5), (0, 6), (0, 7), (0, 8), (0, 9), (0, 10), (0, 11), (0, 12), (1, 5), (1, 6)], (
        "records past the end that came with the range are handed out"
    )
    assert [fetched(r) for _, r, _ in manager.sent[1:]] == [{P1: 7}], "P0 at 13 >= 10: not fetched"
    fetcher.fetch_until(P1, 7)
    assert not fetcher.reusable(), "P1's Fetch is still in flight"
    answer(manager, 1, {})
    fetcher.fetch(3, 0)
    assert len(manager.sent) == 2 and fetcher.reusable(), "both at their end: nothing in flight"
    fetcher.fetch_until(P0, None)
    fetcher.fetch(3, 0)
    assert fetched(manager.sent[2][1]) == {P0: 13} and not fetcher.reusable(), "no end: fetched again"
    fetcher.assign(frozenset({P0}))
    fetcher.assign(frozenset({P0, P1}))
    fetcher.seek(P1, 7)
    answer(manager, 2, {})
    fetcher.fetch(3, 0)
    assert fetched(manager.sent[3][1]) == {P0: 13, P1: 7}, "an end goes with the partition's assignment"


# ---------------------------------------------------------------------- fetch_columns: the same hand-out as fetch
def _rows(records: list[kgroup.ConsumerRecord]) -> list[tuple[Any, ...]]:
    return [(r.partition, r.offset, r.key, r.value, r.headers, r.timestamp, r.timestamp_type) for r in records]


def _column_rows(columns: list[fetch_pipeline.RecordColumns]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for c in columns:
        assert c.topic_partition.topic == T and len(c) > 0
        assert c.offsets == sorted(c.offsets)
        out += [(c.topic_partition.partition, *row)
                for row in zip(c.offsets, c.keys, c.values, c.headers, c.timestamps, c.timestamp_types, strict=True)]
    return out


def _positions(fetcher: Any) -> Any:
    return fetcher.position(P0), fetcher.position(P1)


def _outcomes(columnar: bool | str, decoder: Any, steps: list[Any], positions: Any = _positions,
              **config: Any) -> list[Any]:
    """Run ``steps`` on a new fetcher: ``("fetch", n)``, ``("answer", i, parts, aborted)``, ``("seek", tp, o)``.

    ``columnar``: False, ``fetch`` with the record decoder ``decoder`` alone; True, ``fetch_columns``;
    ``"poll"``, ``fetch`` from the columnar decoder (``poll()``'s path). Each fetch's rows (or the
    error it raised) and every position after it (``positions(fetcher)``), in order.
    """
    fetcher, manager, _ = make(**config)
    fetcher._decoder = decoder
    if columnar is False:
        fetcher._columnar = False
    elif columnar == "poll":  # what a consumer's fetcher holds once poll_columns() was called
        fetcher._columnar = load_columnar_decoder() or False
    start(fetcher, P0, P1)
    seen: list[Any] = []
    for step in steps:
        if step[0] == "answer":
            answer(manager, step[1], step[2], aborted=step[3])
            continue
        if step[0] == "seek":
            fetcher.seek(step[1], step[2])
            continue
        try:
            if columnar is True:
                columns = fetcher.fetch_columns(step[1], 0)
                assert len({c.topic_partition for c in columns}) == len(columns), "one per partition"
                seen.append(_column_rows(columns))
            else:
                seen.append(_rows(fetcher.fetch(step[1], 0)))
        except kgroup.KGroupError as exc:
            seen.append((type(exc).__name__, exc.topic_partition))  # type: ignore[attr-defined]
        sent = [sorted(fetched(request).items()) for _, request, _ in manager.sent]
        seen.append((positions(fetcher), sent))
    return seen


def _differential_cases() -> list[Any]:
    from tests.compat.test_partition_records import batch as full_batch
    from tests.compat.test_partition_records import control_batch

    headers = [("trace", b"abc"), ("empty", None)]
    plain = full_batch(0, 3, headers=headers) + full_batch(3, 4, key=None) + full_batch(7, 2, attrs_bits=0x08)
    transactional = (full_batch(0, 2, transactional=True, producer_id=7) + control_batch(2, 7, abort=True)
                     + full_batch(3, 2, transactional=True, producer_id=8) + control_batch(5, 8, abort=False)
                     + full_batch(6, 2, headers=headers))
    corrupt = bytearray(batch(0, 3))
    corrupt[-1] ^= 0xFF
    return [
        pytest.param({}, [("fetch", 5), ("answer", 0, {P0: plain, P1: batch(0, 6)}, None)]
                     + [("fetch", 4)] * 6, id="headers-nulls-log-append-time-max-records"),
        pytest.param({"isolation_level": "read_committed"},
                     [("fetch", 5), ("answer", 0, {P0: transactional, P1: transactional},
                                     [SimpleNamespace(producer_id=7, first_offset=0)])] + [("fetch", 3)] * 5,
                     id="read-committed-aborted-and-control-batches"),
        pytest.param({"auto_offset_reset": "none"},
                     [("fetch", 5), ("answer", 0, {P0: batch(0, 3), P1: codes.OFFSET_OUT_OF_RANGE}, None)]
                     + [("fetch", 10)] * 3, id="error-in-line-after-records"),
        pytest.param({"check_crcs": True},
                     [("fetch", 5), ("answer", 0, {P0: bytes(corrupt), P1: batch(0, 2)}, None)]
                     + [("fetch", 5)] * 3 + [("seek", P0, 3), ("fetch", 5)], id="corrupt-batch"),
        pytest.param({}, [("seek", P0, 2), ("seek", P1, 4), ("fetch", 5),
                          ("answer", 0, {P0: batch(0, 5), P1: batch(0, 3) + batch(3, 3)}, None)]
                     + [("fetch", 2)] * 4, id="batches-starting-before-the-fetch-offset"),
    ]


@pytest.mark.parametrize(("config", "steps"), _differential_cases())
@pytest.mark.parametrize("decoder", ["kafka-python", "aiokafka-c"])
def test_fetch_columns_hands_out_exactly_what_fetch_does(config: dict[str, Any], steps: list[Any],
                                                         decoder: str) -> None:
    """Differential: same records (every field), same errors, same positions, same next Fetches."""
    from tests.compat.test_partition_records import C_DECODER

    chosen = C_DECODER if decoder == "aiokafka-c" else (None, frozenset())
    if chosen[0] is None and decoder == "aiokafka-c":
        pytest.skip("aiokafka's C extension not installed")
    expected = _outcomes(False, chosen, steps, **config)
    assert any(isinstance(o, list) and o for o in expected), "the case hands out records"
    assert _outcomes(True, chosen, steps, **config) == expected
    assert _outcomes("poll", chosen, steps, **config) == expected  # poll()'s records from the columnar decoder


def test_fetch_columns_of_a_fetcher_without_it_groups_fetch_by_partition() -> None:
    """A fetcher without ``fetch_columns`` (the simulator's): its records, one ``RecordColumns`` per partition."""
    records = [kgroup.ConsumerRecord(T, p, o, b"k", b"v%d" % o, (("h", None),) if o == 1 else (), 10 + o, 1)
               for p, o in ((0, 0), (0, 1), (1, 5))]
    plain = SimpleNamespace(fetch=lambda max_records, timeout_ms: records[:max_records])
    columns = fetch_pipeline.fetch_columns(plain, 10, 0)
    assert [c.topic_partition for c in columns] == [P0, P1]
    assert _column_rows(columns) == _rows(records)
    assert fetch_pipeline.fetch_columns(SimpleNamespace(fetch=lambda max_records, timeout_ms: []), 10, 0) == []


# --------------------------------------------------------------------------- follower fetching (KIP-392)


def _to_follower(monkeypatch: pytest.MonkeyPatch | None = None, **config: Any) -> tuple[
        PipelinedFetcher, FakeManager, FakeCluster, list[float]]:
    """P0 at offset 5, whose leader named ``FOLLOWER`` its preferred read replica; the Fetch to it is sent."""
    fetcher, manager, cluster = make(client_rack="az-2", **config)
    now = [1000.0]
    if monkeypatch is not None:
        monkeypatch.setattr(fetcher, "_clock", SimpleNamespace(monotonic=lambda: now[0]))
    fetcher.assign(frozenset({P0}))
    fetcher.seek(P0, 5, leader_epoch=3)
    fetcher.fetch(5, 0)
    assert manager.sent[0][0] == NODE
    answer(manager, 0, {}, preferred=FOLLOWER)  # the leader names the replica, without records
    assert fetcher.fetch(5, 0) == []
    assert fetcher.preferred_read_replica(P0) == FOLLOWER
    assert [node for node, _, _ in manager.sent] == [NODE, FOLLOWER]
    assert fetched(manager.sent[1][1]) == {P0: 5}
    return fetcher, manager, cluster, now


def test_client_rack_is_the_fetch_rack_id() -> None:
    fetcher, manager, _ = make(client_rack="az-1")
    start(fetcher, P0)
    fetcher.fetch(5, 0)
    assert manager.sent[0][1].rack_id == "az-1"
    fetcher, manager, _ = make()
    start(fetcher, P0)
    fetcher.fetch(5, 0)
    assert manager.sent[0][1].rack_id == ""


def test_the_preferred_read_replica_serves_the_fetches() -> None:
    fetcher, manager, _, _ = _to_follower()
    answer(manager, 1, {P0: batch(5, 3)})  # a follower names no replica (-1): nothing changes
    assert offsets(fetcher.fetch(5, 0)) == [(0, 5), (0, 6), (0, 7)]
    assert [node for node, _, _ in manager.sent] == [NODE, FOLLOWER, FOLLOWER]
    assert fetched(manager.sent[2][1]) == {P0: 8}
    assert manager.sent[2][1].rack_id == "az-2"
    counts = fetcher.fetches_by_node()
    assert counts[NODE] == (1, 0) and counts[FOLLOWER][0] == 2 and counts[FOLLOWER][1] > 0


def test_the_preferred_read_replica_expires_after_metadata_max_age_ms(monkeypatch: pytest.MonkeyPatch) -> None:
    fetcher, manager, _, now = _to_follower(monkeypatch, metadata_max_age_ms=10000)
    now[0] += 6
    answer(manager, 1, {P0: batch(5, 1)}, preferred=FOLLOWER)  # named again: the expiry is not extended
    assert offsets(fetcher.fetch(5, 0)) == [(0, 5)]
    assert manager.sent[2][0] == FOLLOWER
    now[0] += 4.5
    answer(manager, 2, {P0: batch(6, 1)})
    assert offsets(fetcher.fetch(5, 0)) == [(0, 6)]
    assert manager.sent[3][0] == NODE and fetched(manager.sent[3][1]) == {P0: 7}
    assert fetcher.preferred_read_replica(P0) is None


@pytest.mark.parametrize("error", [codes.NOT_LEADER_FOR_PARTITION, codes.REPLICA_NOT_AVAILABLE,
                                   codes.KAFKA_STORAGE_ERROR, codes.OFFSET_NOT_AVAILABLE,
                                   codes.UNKNOWN_TOPIC_OR_PARTITION])
def test_an_error_of_the_replica_sends_the_next_fetch_to_the_leader(error: int) -> None:
    fetcher, manager, cluster, _ = _to_follower()
    updates = cluster.updates
    answer(manager, 1, {P0: error})
    assert fetcher.fetch(5, 0) == []
    assert fetcher.preferred_read_replica(P0) is None
    assert cluster.updates > updates, "the metadata is refreshed"
    assert manager.sent[2][0] == NODE and fetched(manager.sent[2][1]) == {P0: 5}


def test_fenced_leader_epoch_from_the_replica_validates_then_fetches_from_the_leader() -> None:
    fetcher, manager, _, _ = _to_follower()
    answer(manager, 1, {P0: codes.FENCED_LEADER_EPOCH})
    assert fetcher.fetch(5, 0) == []
    assert fetcher.preferred_read_replica(P0) is None
    assert fetcher._subscription.assignment[KTopicPartition(T, 0)].awaiting_validation


def test_a_failed_fetch_to_the_replica_goes_back_to_the_leader(monkeypatch: pytest.MonkeyPatch) -> None:
    fetcher, manager, _, _ = _to_follower(monkeypatch)
    manager.sent[1][2].failure(ConnectionError("the replica went away"))
    assert fetcher.fetch(5, 0) == []
    assert fetcher.preferred_read_replica(P0) is None
    assert manager.sent[2][0] == NODE, "the leader is not backed off: the failed node was the replica"
    answer(manager, 2, {P0: batch(5, 2)})
    assert offsets(fetcher.fetch(5, 0)) == [(0, 5), (0, 6)]


def test_out_of_range_on_the_replica_is_retried_on_the_leader_before_resetting() -> None:
    fetcher, manager, _, _ = _to_follower(auto_offset_reset="earliest")
    answer(manager, 1, {P0: codes.OFFSET_OUT_OF_RANGE})
    assert fetcher.fetch(5, 0) == []
    assert fetcher.has_position(P0) and fetcher.position(P0) == 5, "no reset: the leader is asked first"
    assert not any("reset" in name for name in manager.started)
    assert manager.sent[2][0] == NODE and fetched(manager.sent[2][1]) == {P0: 5}
    answer(manager, 2, {P0: codes.OFFSET_OUT_OF_RANGE})  # the leader says so too: reset
    fetcher.fetch(5, 0)
    assert not fetcher.has_position(P0)
    assert any("reset" in name for name in manager.started)


def test_a_replica_the_metadata_no_longer_lists_is_not_fetched_from() -> None:
    fetcher, manager, cluster, _ = _to_follower()
    cluster.replicas.discard(FOLLOWER)
    answer(manager, 1, {P0: batch(5, 1)})
    updates = cluster.updates
    assert offsets(fetcher.fetch(5, 0)) == [(0, 5)]
    assert manager.sent[2][0] == NODE and fetched(manager.sent[2][1]) == {P0: 6}
    assert fetcher.preferred_read_replica(P0) is None and cluster.updates > updates


def test_the_preferred_read_replica_is_forgotten_with_the_partition() -> None:
    fetcher, _, _, _ = _to_follower()
    fetcher.assign(frozenset({P1}))
    fetcher.assign(frozenset({P0, P1}))
    assert fetcher.preferred_read_replica(P0) is None


def test_poll_alone_keeps_the_record_decoder_and_poll_columns_turns_the_columnar_one_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``fetch`` (``poll()``) decodes with the record decoder until ``fetch_columns`` is first called.

    Measured, the columns cost ``poll()`` the same CPU per record and about four times the memory
    (``benchmarks/results.md``); a bulk reader's fetcher decodes both hand-outs by columns.
    """
    from kgroup._io import columnar

    taken: list[int] = []
    decode = columnar.decode_record_set

    def counting(*args: Any, **kwargs: Any) -> Any:
        taken.append(1)
        return decode(*args, **kwargs)

    monkeypatch.setattr(columnar, "decode_record_set", counting)
    fetcher, manager, _ = make()
    start(fetcher, P0, P1)
    assert fetcher.fetch(3, 0) == []
    answer(manager, 0, {P0: batch(0, 10)})
    assert offsets(fetcher.fetch(3, 0)) == [(0, 0), (0, 1), (0, 2)]
    assert taken == [] and fetcher._columnar is None  # numpy and pyarrow not even loaded
    fetcher.fetch_columns(3, 0)  # the rest of that response: already with the record decoder
    answer(manager, 1, {P1: batch(0, 4)})
    got = fetcher.fetch(10, 0)
    assert [(r.partition, r.offset) for r in got][-4:] == [(1, 0), (1, 1), (1, 2), (1, 3)]
    assert taken, "after fetch_columns the columnar decoder takes the responses of fetch too"


# ------------------------------------------------------------------ KIP-227 fetch sessions


def session_answer(manager: FakeManager, index: int, session_id: int, parts: dict[TopicPartition, bytes],
                   error: int = codes.NONE) -> None:
    """Answer the ``index``-th Fetch as a broker with fetch sessions: ``session_id`` and only ``parts``
    (an incremental response leaves out the partitions with nothing new)."""
    _, _, future = manager.sent[index]
    partitions = [SimpleNamespace(partition_index=tp.partition, error_code=codes.NONE, high_watermark=1000,
                                  records=records, aborted_transactions=None, diverging_epoch=None,
                                  current_leader=None, preferred_read_replica=-1)
                  for tp, records in parts.items()]
    future.success(SimpleNamespace(API_VERSION=12, error_code=error, session_id=session_id,
                                   responses=[SimpleNamespace(topic=T, partitions=partitions)] if partitions else []))


def forgotten(request: Any) -> set[TopicPartition]:
    return {TopicPartition(t.topic, p) for t in request.forgotten_topics_data for p in t.partitions}


def test_fetches_after_the_first_send_only_what_changed_in_the_session() -> None:
    fetcher, manager, _ = make()
    start(fetcher, P0, P1, P2)
    fetcher.fetch(100, 0)
    first = manager.sent[0][1]
    assert (first.session_id, first.session_epoch) == (0, 0)  # full: "create a session"
    assert fetched(first) == {P0: 0, P1: 0, P2: 0}
    session_answer(manager, 0, 77, {P0: batch(0, 5), P1: b"", P2: b""})
    assert offsets(fetcher.fetch(100, 0)) == [(0, i) for i in range(5)]
    # P0 holds nothing now and moved to 5; P1 and P2 are unchanged: implied, not listed
    fetcher.fetch(100, 0)
    second = manager.sent[1][1]
    assert (second.session_id, second.session_epoch) == (77, 1)
    assert fetched(second) == {P0: 5} and forgotten(second) == set()
    # the broker sends records of an implied partition: used, at the session's offset
    session_answer(manager, 1, 77, {P2: batch(0, 3)})
    assert offsets(fetcher.fetch(100, 0)) == [(2, 0), (2, 1), (2, 2)]
    fetcher.fetch(100, 0)
    third = manager.sent[2][1]
    assert (third.session_id, third.session_epoch) == (77, 2)
    assert fetched(third) == {P2: 3}
    assert fetcher.fetch_sessions() == {NODE: (1, 2)}


def test_a_partition_holding_records_or_revoked_is_forgotten_by_the_session() -> None:
    fetcher, manager, _ = make()
    start(fetcher, P0, P1, P2)
    fetcher.fetch(2, 0)
    session_answer(manager, 0, 9, {P0: batch(0, 10), P1: b"", P2: b""})
    fetcher.fetch(2, 0)  # P0 is handed out: the next Fetch leaves it out of the session
    second = manager.sent[1][1]
    assert (second.session_id, second.session_epoch) == (9, 1)
    assert fetched(second) == {} and forgotten(second) == {P0}
    session_answer(manager, 1, 9, {})
    fetcher.assign(frozenset({P0, P1}))  # P2 revoked
    for _ in range(5):
        fetcher.fetch(2, 0)
    third = manager.sent[2][1]
    assert fetched(third) == {P0: 10} and forgotten(third) == {P2}


@pytest.mark.parametrize(("end", "session_id"), [
    (codes.FETCH_SESSION_ID_NOT_FOUND, 0),  # the broker lost it: a new session
    (codes.INVALID_FETCH_SESSION_EPOCH, 5),  # out of step: the same one, re-created (kafka-python's and Java's rule)
    ("failed", 5),  # the Fetch failed (a disconnect): the same one, re-created
])
def test_after_a_session_error_or_a_failed_fetch_the_next_fetch_is_full(
        end: int | str, session_id: int, monkeypatch: pytest.MonkeyPatch) -> None:
    fetcher, manager, _ = make(retry_backoff_ms=100)
    now = [1000.0]
    monkeypatch.setattr(fetcher, "_clock", SimpleNamespace(monotonic=lambda: now[0]))
    start(fetcher, P0, P1)
    fetcher.fetch(100, 0)
    session_answer(manager, 0, 5, {P0: b"", P1: b""})
    fetcher.fetch(100, 0)
    assert manager.sent[1][1].session_epoch == 1
    if end == "failed":
        manager.sent[1][2].failure(ConnectionError("reset by peer"))
    else:
        session_answer(manager, 1, 0, {}, error=int(end))
    fetcher.fetch(100, 0)
    now[0] += 0.2  # past retry_backoff_ms
    fetcher.fetch(100, 0)
    again = manager.sent[2][1]
    assert (again.session_id, again.session_epoch) == (session_id, 0)
    assert fetched(again) == {P0: 0, P1: 0}


def test_an_incremental_response_naming_a_partition_outside_the_session_is_dropped() -> None:
    fetcher, manager, _ = make()
    start(fetcher, P0)
    fetcher.fetch(100, 0)
    session_answer(manager, 0, 5, {P0: b""})
    fetcher.fetch(100, 0)
    session_answer(manager, 1, 5, {P1: batch(0, 3)})  # P1 is not in the session
    assert fetcher.fetch(100, 0) == []
    assert fetcher.position(P0) == 0
    again = manager.sent[2][1]
    assert (again.session_id, again.session_epoch) == (5, 0) and fetched(again) == {P0: 0}


def test_a_broker_without_sessions_gets_full_fetches_and_its_partial_answers_are_used() -> None:
    fetcher, manager, _ = make()
    start(fetcher, P0, P1)
    fetcher.fetch(100, 0)
    session_answer(manager, 0, 0, {P1: batch(0, 2)})  # no session, and P0 left out (Tansu)
    assert offsets(fetcher.fetch(100, 0)) == [(1, 0), (1, 1)]
    fetcher.fetch(100, 0)
    again = manager.sent[1][1]
    assert (again.session_id, again.session_epoch) == (0, 0) and fetched(again) == {P0: 0, P1: 2}
    assert fetcher.fetch_sessions() == {NODE: (2, 0)}


def test_close_sessions_ends_each_open_session_with_epoch_minus_one() -> None:
    fetcher, manager, _ = make()
    start(fetcher, P0)
    fetcher.fetch(100, 0)
    session_answer(manager, 0, 42, {P0: b""})
    fetcher.fetch(100, 0)  # the incremental Fetch 1 is in flight
    assert len(manager.sent) == 2
    fetcher.close_sessions(0)
    assert len(manager.sent) == 3
    closing = manager.sent[2][1]
    assert (closing.session_id, closing.session_epoch) == (42, -1)
    assert closing.topics == [] and closing.forgotten_topics_data == []
    assert fetcher.fetch_sessions() == {}
    fetcher.close_sessions(0)
    assert len(manager.sent) == 3  # nothing left to close


def test_close_sessions_sends_nothing_to_a_node_without_a_session() -> None:
    fetcher, manager, _ = make()
    start(fetcher, P0)
    fetcher.fetch(100, 0)
    session_answer(manager, 0, 0, {P0: b""})
    fetcher.fetch(100, 0)
    sent = len(manager.sent)
    fetcher.close_sessions(0)
    assert len(manager.sent) == sent


def test_without_fetch_sessions_every_fetch_is_full_and_sessionless(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetch_sessions, "FETCH_SESSIONS", False)
    fetcher, manager, _ = make()
    start(fetcher, P0)
    fetcher.fetch(100, 0)
    session_answer(manager, 0, 0, {P0: b""})
    fetcher.fetch(100, 0)
    assert [(r.session_id, r.session_epoch) for _, r, _ in manager.sent] == [(0, -1), (0, -1)]


# ------------------------------------------------------------------ per-poll work at many partitions


def test_the_reset_and_validation_steps_run_on_changes_and_while_awaited_not_every_fetch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    fetcher, manager, _ = make(retry_backoff_ms=100)
    now = [1000.0]
    monkeypatch.setattr(fetcher, "_clock", SimpleNamespace(monotonic=lambda: now[0]))
    walks: list[float] = []
    validate = fetcher._offsets.maybe_validate_positions
    monkeypatch.setattr(fetcher._offsets, "maybe_validate_positions", lambda: (walks.append(now[0]), validate()))
    tasks: list[Future] = []  # kafka-python's look-ups and validations, left running until the test ends them

    def call_soon(fn: Any, *args: Any) -> Future:
        result = fn(*args)
        if not hasattr(result, "close"):
            return Future().success(None)  # a Fetch sent
        manager.started.append(result.__qualname__)
        result.close()
        tasks.append(Future())
        return tasks[-1]

    start(fetcher, P0, P1)
    monkeypatch.setattr(manager, "call_soon", call_soon)
    fetcher.fetch(1, 0)
    answer(manager, 0, {P0: batch(0, 50)})
    walks.clear()
    for _ in range(20):  # taking in and handing out records: nothing changes the positions' checks
        assert len(fetcher.fetch(1, 0)) == 1
    now[0] += 0.2  # nothing awaits a look-up or a validation: no retry to run
    fetcher.fetch(1, 0)
    assert walks == []
    fetcher.seek(P1, 7, leader_epoch=3)  # a change: at the next fetch
    fetcher.fetch(1, 0)
    fetcher.fetch(1, 0)
    assert len(walks) == 1
    fetcher._cluster._last_successful_refresh_ms += 1  # new metadata (leader epochs): at the next fetch
    fetcher.fetch(1, 0)
    fetcher.fetch(1, 0)
    assert len(walks) == 2
    assert P1 in fetched(manager.sent[-1][1])
    answer(manager, len(manager.sent) - 1, {P1: codes.FENCED_LEADER_EPOCH})  # an error: at the next fetch
    fetcher.fetch(1, 0)
    assert len(walks) == 3
    assert fetcher._subscription.assignment[KTopicPartition(T, 1)].awaiting_validation
    assert "Fetcher._validate_offsets_async" in " ".join(manager.started), manager.started
    fetcher.fetch(1, 0)  # the validation is under way: nothing new
    assert len(walks) == 3
    tasks[-1].success(None)  # it ended: an event
    fetcher.fetch(1, 0)
    fetcher.fetch(1, 0)
    assert len(walks) == 4
    now[0] += 0.2  # a validation still awaited: retry_backoff_ms later once more (kafka-python's own retries)
    fetcher.fetch(1, 0)
    fetcher.fetch(1, 0)
    assert len(walks) == 5


def test_a_diverging_epoch_starts_the_validation_at_the_next_fetch(monkeypatch: pytest.MonkeyPatch) -> None:
    fetcher, manager, _ = make(retry_backoff_ms=100)
    now = [1000.0]
    monkeypatch.setattr(fetcher, "_clock", SimpleNamespace(monotonic=lambda: now[0]))
    fetcher.assign(frozenset({P0}))
    fetcher.seek(P0, 5, leader_epoch=2)
    fetcher.fetch(1, 0)
    manager.started.clear()
    answer(manager, 0, {P0: batch(5, 3)}, diverging=SimpleNamespace(epoch=2, end_offset=4))
    assert fetcher.fetch(1, 0) == []  # the records after the divergence are not handed out
    assert fetcher._subscription.assignment[KTopicPartition(T, 0)].awaiting_validation
    assert "Fetcher._validate_offsets_async" in " ".join(manager.started), manager.started


def test_no_walk_over_the_partitions_while_every_node_is_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    fetcher, manager, cluster = make()
    cluster.replicas = {NODE}
    start(fetcher, P0, P1, P2)
    fetcher.fetch(1, 0)
    answer(manager, 0, {P0: batch(0, 50)})
    fetcher.fetch(1, 0)  # Fetch 1 (P1, P2) goes out while P0 is handed out
    assert len(manager.sent) == 2
    walked: list[int] = []
    fetchable = fetcher._subscription.fetchable_partitions
    monkeypatch.setattr(fetcher._subscription, "fetchable_partitions",
                        lambda: (walked.append(1), fetchable())[1])
    for _ in range(10):  # every hand-out drops nothing and the only node has a Fetch in flight
        fetcher.fetch(1, 0)
        fetcher._dirty = True
    assert walked == [] and len(manager.sent) == 2
    answer(manager, 1, {})  # nothing for P1 and P2: the node is quiet until P0 is handed out (rule 3)
    fetcher.fetch(1, 0)
    assert walked == []
    fetcher.fetch(100, 0)  # P0 runs dry: the node is free, the partitions are walked, a Fetch goes out
    assert walked and len(manager.sent) == 3
