"""``ShareConsumer.metrics()`` and ``health()``: Java's share-consumer metric names, windows and verdicts.

The recorder (``kgroup.metrics.ShareRecorder``) on a fake clock; the fetcher's recording on the
scripted transport of tests/unit/test_share_fetcher.py; the verdicts of a share consumer that
has not joined, and of a closed one.
"""

from __future__ import annotations

import math

from kgroup._error_codes import INVALID_RECORD_STATE
from kgroup._share.acks import InFlight
from kgroup.metrics import SHARE_METRICS, ShareRecorder
from kgroup.share_consumer import ShareConsumer
from kgroup.testing import FakeClock
from kgroup.types import AcknowledgeType, TopicPartition
from tests.unit.test_share_fetcher import T0, Script, fetched, fetcher

#: Java's names (ShareFetchMetricsRegistry, HeartbeatMetricsManager and ShareRebalanceMetricsManager
#: with the "consumer-share" prefix, KafkaShareConsumerMetrics)
JAVA_NAMES = {
    "consumer-share-fetch-manager-metrics": {
        "fetch-size-avg", "fetch-size-max", "bytes-consumed-rate", "bytes-consumed-total",
        "records-per-request-avg", "records-per-request-max", "records-consumed-rate", "records-consumed-total",
        "acknowledgements-send-rate", "acknowledgements-send-total", "acknowledgements-error-rate",
        "acknowledgements-error-total", "fetch-latency-avg", "fetch-latency-max", "fetch-rate", "fetch-total",
        "fetch-throttle-time-avg", "fetch-throttle-time-max",
    },
    "consumer-share-coordinator-metrics": {
        "heartbeat-response-time-max", "heartbeat-rate", "heartbeat-total", "last-heartbeat-seconds-ago",
        "rebalance-total", "rebalance-rate-per-hour",
    },
    "consumer-share-metrics": {
        "last-poll-seconds-ago", "time-between-poll-avg", "time-between-poll-max", "poll-idle-ratio-avg",
    },
}


def test_share_metrics_have_javas_names_and_groups() -> None:
    groups: dict[str, set[str]] = {}
    for name, info in SHARE_METRICS.items():
        groups.setdefault(info.group, set()).add(name)
    assert groups == JAVA_NAMES
    assert set(ShareRecorder(FakeClock()).share_snapshot()) == set(SHARE_METRICS)


def test_heartbeats_reconciliations_and_polls_are_windowed_as_javas() -> None:
    clock = FakeClock()
    rec = ShareRecorder(clock)
    before = rec.share_snapshot()
    assert before["last-heartbeat-seconds-ago"] == -1 and before["last-poll-seconds-ago"] == -1
    assert math.isnan(before["heartbeat-response-time-max"]) and before["heartbeat-total"] == 0
    rec.request_sent("share-heartbeat", 1)
    clock.advance(0.02)
    rec.response(1, 0)
    rec.member_state("JOINING")
    rec.member_state("RECONCILING")
    clock.advance(0.1)
    rec.member_state("ACKNOWLEDGING")
    rec.poll_started()
    clock.advance(0.5)
    rec.poll_ended()
    clock.advance(1.5)
    rec.poll_started()
    rec.poll_ended()
    snap = rec.share_snapshot()
    assert snap["heartbeat-total"] == 1 and math.isclose(snap["heartbeat-response-time-max"], 20.0)
    assert math.isclose(snap["last-heartbeat-seconds-ago"], 2.12)
    assert snap["rebalance-total"] == 1 and snap["rebalance-rate-per-hour"] > 0
    assert math.isclose(snap["time-between-poll-max"], 2000.0) and snap["last-poll-seconds-ago"] == 0
    # the first poll: inside it all along (idle ratio 1); the second: 0 s inside after 1.5 s outside
    assert math.isclose(snap["poll-idle-ratio-avg"], 0.5)
    assert rec.last_group_ok is not None
    clock.advance(61)  # both 30-second samples are over: Java's windowed statistics are NaN again
    later = rec.share_snapshot()
    assert math.isnan(later["heartbeat-response-time-max"]) and later["heartbeat-total"] == 1


def test_the_fetcher_records_fetches_and_acknowledgements() -> None:
    script = Script()
    script.fetch_answers = [fetched(0, 2), fetched(2, 1, ack_error=INVALID_RECORD_STATE)]
    f = fetcher(script, mode="explicit")
    f.step(fetch=True)
    f.step(fetch=True)  # the answer: two records acquired
    snap = f.metrics.share_snapshot()
    assert snap["fetch-total"] == 1 and snap["records-consumed-total"] == 2
    assert snap["records-per-request-max"] == 2 and snap["bytes-consumed-total"] > 0
    assert snap["fetch-size-max"] == snap["bytes-consumed-total"] and snap["fetch-latency-max"] >= 0
    for record in f.hand_out(2):
        f.inflight.acknowledge(T0, record.offset, AcknowledgeType.ACCEPT)
    f.take_acknowledgements()
    f.step(fetch=True)  # a ShareFetch carrying both acknowledgements
    f.step(fetch=True)  # answered with INVALID_RECORD_STATE for them
    snap = f.metrics.share_snapshot()
    assert snap["acknowledgements-send-total"] == 2 and snap["acknowledgements-error-total"] == 2
    assert snap["fetch-total"] == 2 and snap["records-consumed-total"] == 3
    assert snap["acknowledgements-send-rate"] > 0


def test_give_back_acknowledges_records_the_application_never_got() -> None:
    tp = TopicPartition("t", 0)
    inflight = InFlight("implicit")
    inflight.delivered([(tp, 0), (tp, 1)])
    inflight.give_back({tp: {1: int(AcknowledgeType.RELEASE)}})
    assert inflight.take() == {tp: {0: int(AcknowledgeType.ACCEPT), 1: int(AcknowledgeType.RELEASE)}}
    explicit = InFlight("explicit")
    explicit.delivered([(tp, 5)])
    explicit.give_back({tp: {5: int(AcknowledgeType.RELEASE)}})
    explicit.check_all_acknowledged()  # nothing left in flight
    assert explicit.take() == {tp: {5: int(AcknowledgeType.RELEASE)}}


def test_health_of_a_share_member_not_joined_then_closed() -> None:
    clock = FakeClock()
    consumer: ShareConsumer[bytes, bytes] = ShareConsumer(bootstrap_servers="h:9092", group_id="g",
                                                          transport=Script(), clock=clock)
    report = consumer.health()
    assert report.live and not report.ready
    assert any("not a stable member" in r for r in report.reasons)
    assert consumer.metrics()["last-poll-seconds-ago"] == -1
    consumer.close()
    closed = consumer.health()
    assert not closed.live and not closed.ready and "the consumer is closed" in closed.reasons
