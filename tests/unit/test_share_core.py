"""The share consumer's pure core (KIP-932): share sessions, acknowledgement batches and modes, acquired records.

No broker, no threads: ``kgroup._share`` on plain values. The session follows Java's
``ShareSessionHandler`` (epoch 0 opens and lists every partition, the next epochs list what
changed, a session error starts over, -1 closes); the acknowledgements follow
``Acknowledgements.getAcknowledgementBatches`` and the acknowledgement modes of
``KafkaShareConsumer``; the acquired records follow ``ShareCompletedFetch`` (only acquired offsets
are handed out, an acquired offset without a record is a gap).
"""

from __future__ import annotations

import uuid

import pytest

from kgroup._error_codes import INVALID_SHARE_SESSION_EPOCH, NONE, SHARE_SESSION_NOT_FOUND, UNKNOWN_SERVER_ERROR
from kgroup._share.acks import GAP, InFlight, batches
from kgroup._share.acquired import match_acquired
from kgroup._share.session import FetchParams, ShareSession
from kgroup.config import ShareConsumerConfig
from kgroup.errors import ConfigError, IllegalStateError
from kgroup.protocol.share_fetch import (
    ACQUIRE_MODE_RECORD_LIMIT,
    AcknowledgementBatch,
    AcquiredRecords,
    ShareFetchPartition,
    next_epoch,
)
from kgroup.types import AcknowledgeType, ConsumerRecord, ShareConsumerRecord, TopicPartition

A, B = uuid.UUID(int=1), uuid.UUID(int=2)
T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)
ACCEPT, RELEASE, REJECT, RENEW = (int(k) for k in AcknowledgeType)


def session() -> ShareSession:
    return ShareSession(1, FetchParams("g", "m", max_records=7, share_acquire_mode=ACQUIRE_MODE_RECORD_LIMIT))


# --------------------------------------------------------------------------- the share session
def test_a_new_session_opens_with_epoch_0_listing_every_partition_and_no_acknowledgements() -> None:
    s = session()
    request, carried = s.fetch({T0: A, T1: A}, {T0: {5: ACCEPT}})
    assert request.share_session_epoch == 0
    assert request.partitions == (ShareFetchPartition(A, 0), ShareFetchPartition(A, 1))
    assert carried == frozenset()  # the broker refuses acknowledgements at epoch 0: they wait
    assert (request.max_records, request.batch_size, request.share_acquire_mode) == (7, 7, ACQUIRE_MODE_RECORD_LIMIT)
    assert (request.group_id, request.member_id) == ("g", "m")
    assert s.answered(NONE) and s.epoch == 1


def test_the_next_epochs_list_only_what_changed_and_carry_the_acknowledgements() -> None:
    s = session()
    s.fetch({T0: A, T1: A}, {})
    s.answered(NONE)
    request, carried = s.fetch({T0: A, T1: A}, {})
    assert (request.share_session_epoch, request.partitions, request.forgotten) == (1, (), ())
    s.answered(NONE)
    request, carried = s.fetch({T0: A, U0: B}, {T0: {3: ACCEPT, 4: RELEASE}})
    assert request.share_session_epoch == 2
    assert request.partitions == (
        ShareFetchPartition(A, 0, (AcknowledgementBatch(3, 4, (ACCEPT, RELEASE)),)), ShareFetchPartition(B, 0),
    )
    assert request.forgotten == ((A, 1),)
    assert carried == frozenset({T0})
    assert s.partitions == {T0: A, U0: B}


def test_a_recreated_topic_is_forgotten_and_added_again() -> None:
    s = session()
    s.fetch({T0: A}, {})
    s.answered(NONE)
    request, _ = s.fetch({T0: B}, {})
    assert request.forgotten == ((A, 0),) and request.partitions == (ShareFetchPartition(B, 0),)


@pytest.mark.parametrize("code", [SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH])
def test_a_session_error_starts_a_new_session(code: int) -> None:
    s = session()
    s.fetch({T0: A}, {})
    s.answered(NONE)
    s.fetch({T0: A}, {})
    assert not s.answered(code)
    assert s.epoch == 0 and s.partitions == {}
    request, _ = s.fetch({T0: A}, {})
    assert request.share_session_epoch == 0 and request.partitions == (ShareFetchPartition(A, 0),)


def test_another_error_moves_the_epoch_on_and_no_answer_starts_over() -> None:
    s = session()
    s.fetch({T0: A}, {})
    assert not s.answered(UNKNOWN_SERVER_ERROR)
    assert s.epoch == 1  # Java's ShareSessionHandler: nextEpoch
    s.failed()
    assert s.epoch == 0 and s.is_new


def test_share_acknowledge_needs_an_open_session_and_closes_with_epoch_minus_1() -> None:
    s = session()
    assert s.acknowledge({T0: {1: ACCEPT}}, {T0: A}) is None
    s.fetch({T0: A}, {})
    s.answered(NONE)
    request = s.acknowledge({T0: {1: ACCEPT, 2: ACCEPT}}, {T0: A})
    assert request is not None and request.share_session_epoch == 1 and not request.is_renew_ack
    assert [(p.topic_id, p.partition, p.batches) for p in request.partitions] == [
        (A, 0, (AcknowledgementBatch(1, 2, (ACCEPT,)),))
    ]
    renew = s.acknowledge({T0: {1: RENEW}}, {T0: A}, renew=True)
    assert renew is not None and renew.is_renew_ack
    close = s.acknowledge({}, {T0: A}, close=True)
    assert close is not None and close.share_session_epoch == -1 and close.partitions == ()


def test_the_epoch_wraps_to_1_and_the_final_epoch_stays() -> None:
    assert next_epoch(0) == 1 and next_epoch(41) == 42
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(-1) == -1


# --------------------------------------------------------------------------- acknowledgement batches
def test_batches_group_consecutive_offsets_one_type_when_all_share_it() -> None:
    assert batches({}) == ()
    assert batches({5: ACCEPT}) == (AcknowledgementBatch(5, 5, (ACCEPT,)),)
    assert batches({3: ACCEPT, 1: ACCEPT, 2: ACCEPT}) == (AcknowledgementBatch(1, 3, (ACCEPT,)),)
    assert batches({1: ACCEPT, 2: GAP, 3: REJECT, 7: RELEASE, 8: RELEASE}) == (
        AcknowledgementBatch(1, 3, (ACCEPT, GAP, REJECT)), AcknowledgementBatch(7, 8, (RELEASE,)),
    )


# --------------------------------------------------------------------------- acknowledgement modes
def test_implicit_mode_accepts_what_poll_returned_and_refuses_acknowledge() -> None:
    f = InFlight("implicit")
    f.delivered([(T0, 1), (T0, 2), (T1, 9)])
    f.add(T0, {3: GAP})
    with pytest.raises(IllegalStateError, match="explicit"):
        f.acknowledge(T0, 1, AcknowledgeType.RELEASE)
    f.check_all_acknowledged()  # nothing to check in implicit mode
    assert f.take() == {T0: {1: ACCEPT, 2: ACCEPT, 3: GAP}, T1: {9: ACCEPT}}
    assert f.take() == {} and f.unacknowledged() == 0


def test_explicit_mode_needs_every_record_acknowledged_before_the_next_poll() -> None:
    f = InFlight("explicit")
    f.delivered([(T0, 1), (T0, 2)])
    f.acknowledge(T0, 1, AcknowledgeType.REJECT)
    with pytest.raises(IllegalStateError, match="explicit acknowledgement mode"):
        f.check_all_acknowledged()
    assert f.take() == {T0: {1: REJECT}}  # a commit sends what was acknowledged so far
    assert f.unacknowledged() == 1
    with pytest.raises(IllegalStateError, match="cannot be acknowledged"):
        f.acknowledge(T0, 1, AcknowledgeType.ACCEPT)  # twice
    with pytest.raises(IllegalStateError, match="cannot be acknowledged"):
        f.acknowledge(T1, 2, AcknowledgeType.ACCEPT)  # never returned
    f.acknowledge(T0, 2, AcknowledgeType.RELEASE)
    f.check_all_acknowledged()
    assert f.take() == {T0: {2: RELEASE}}


def test_renew_keeps_the_record_in_flight_and_is_sent_apart() -> None:
    f = InFlight("explicit")
    f.delivered([(T0, 4)])
    f.acknowledge(T0, 4, AcknowledgeType.RENEW)
    assert f.take_renewals() == {T0: {4: RENEW}}
    assert f.take() == {} and f.unacknowledged() == 1
    f.acknowledge(T0, 4, AcknowledgeType.RENEW)
    f.acknowledge(T0, 4, AcknowledgeType.ACCEPT)  # the final type supersedes the renewal
    assert f.take_renewals() == {} and f.take() == {T0: {4: ACCEPT}}


def test_a_bad_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="mode"):
        InFlight("sometimes")


# --------------------------------------------------------------------------- acquired records
def record(offset: int) -> ConsumerRecord:
    return ConsumerRecord("t", 0, offset, None, f"v{offset}".encode())


def test_only_acquired_offsets_are_handed_out_with_their_delivery_count_and_the_rest_are_gaps() -> None:
    records = [record(o) for o in (10, 11, 12, 14, 15)]
    acquired = (AcquiredRecords(11, 13, 1), AcquiredRecords(15, 16, 3))
    out, gaps = match_acquired(records, acquired)
    assert [(r.offset, r.delivery_count) for r in out] == [(11, 1), (12, 1), (15, 3)]
    assert all(isinstance(r, ShareConsumerRecord) and r.value == f"v{r.offset}".encode() for r in out)
    assert gaps == {13: GAP, 16: GAP}  # no record at 13 (compacted), 16 (past the batches)


# --------------------------------------------------------------------------- the configuration
def test_the_config_takes_the_share_settings_and_refuses_what_share_groups_do_not_have() -> None:
    config = ShareConsumerConfig.from_kwargs(bootstrap_servers="h:9092", group_id="g", max_poll_records=10,
                                             share_acknowledgement_mode="EXPLICIT",
                                             share_acquire_mode="record_limit")
    assert (config.share_acknowledgement_mode, config.share_acquire_mode) == ("explicit", "record_limit")
    assert config.consumer.max_poll_records == 10
    defaults = ShareConsumerConfig.from_kwargs(bootstrap_servers="h:9092", group_id="g")
    assert (defaults.share_acknowledgement_mode, defaults.share_acquire_mode) == ("implicit", "batch_optimized")
    for name, value in (("auto_offset_reset", "earliest"), ("isolation_level", "read_committed"),
                        ("group_instance_id", "i"), ("enable_auto_commit", False), ("group_protocol", "consumer"),
                        ("session_timeout_ms", 45000)):
        with pytest.raises(ConfigError, match=name) as info:
            ShareConsumerConfig.from_kwargs(bootstrap_servers="h:9092", group_id="g", **{name: value})
        assert info.value.field == name
    with pytest.raises(ConfigError, match="share_acknowledgement_mode"):
        ShareConsumerConfig.from_kwargs(bootstrap_servers="h:9092", group_id="g", share_acknowledgement_mode="auto")
    with pytest.raises(ConfigError, match="share_acquire_mode"):
        ShareConsumerConfig.from_kwargs(bootstrap_servers="h:9092", group_id="g", share_acquire_mode="all")


def test_acknowledge_types_are_kafkas_codes() -> None:
    assert [(k.name, k.value) for k in AcknowledgeType] == [("ACCEPT", 1), ("RELEASE", 2), ("REJECT", 3),
                                                            ("RENEW", 4)]
