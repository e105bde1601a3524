"""ShareGroupModel: share groups (KIP-932) on a fake clock: heartbeats, share sessions, acquisition, acknowledgement."""

from __future__ import annotations

import uuid

import pytest

from kgroup import _error_codes as codes
from kgroup.protocol.share_group_heartbeat import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse
from kgroup.testing import FakeClock
from kgroup.testing.coordinator import (
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    ShareAcknowledgeRequest,
    ShareAcquireMode,
    ShareFetchRequest,
    ShareFetchResponse,
    ShareGroupConfig,
    ShareGroupModel,
    SharePartitionData,
)
from kgroup.testing.coordinator._share_group import SHARE_SESSION_LIMIT_REACHED, simple_assign
from kgroup.testing.coordinator._share_partition import RecordState

T = uuid.UUID(int=1)
G = "g"
LOCK_MS = 2000
ACCEPT, RELEASE, REJECT, RENEW = (int(t) for t in (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE,
                                                   AcknowledgeType.REJECT, AcknowledgeType.RENEW))


def make(partitions: int = 2, *, owner: bool = True, **config: object) -> tuple[ShareGroupModel, FakeClock]:
    """A model with topic ``t``; ``owner``: a member joined, so the partitions' share state is initialized."""
    clock = FakeClock()
    topics = {"t": (T, partitions)}
    config.setdefault("record_lock_duration_ms", LOCK_MS)
    config.setdefault("delivery_count_limit", 3)
    model = ShareGroupModel(ShareGroupConfig(**config), clock=clock, topics=lambda: topics)  # type: ignore[arg-type]
    model.set_group_config(G, auto_offset_reset="earliest")
    if owner:
        hb(model, "owner", 0)
    return model, clock


def hb(model: ShareGroupModel, member: str, epoch: int, topics: tuple[str, ...] | None = None) -> (
    ShareGroupHeartbeatResponse
):
    if epoch == 0 and topics is None:
        topics = ("t",)
    return model.heartbeat(ShareGroupHeartbeatRequest(group_id=G, member_id=member, member_epoch=epoch,
                                                      subscribed_topic_names=topics)).response


def fetch(model: ShareGroupModel, member: str, epoch: int, partitions: tuple[int, ...] = (0,),
          acks: dict[int, list[tuple[int, int, int]]] | None = None, **kw: object) -> ShareFetchResponse:
    acks = acks or {}
    parts = tuple(SharePartitionData(T, p, tuple(AcknowledgementBatch(f, la, (t,)) for f, la, t in acks.get(p, ())))
                  for p in sorted(set(partitions) | set(acks)))
    return model.share_fetch(ShareFetchRequest(group_id=G, member_id=member, share_session_epoch=epoch,
                                               partitions=parts, **kw)).response  # type: ignore[arg-type]


def ack(model: ShareGroupModel, member: str, epoch: int, batches: list[tuple[int, int, int]], partition: int = 0,
        **kw: object) -> int:
    response = model.share_acknowledge(ShareAcknowledgeRequest(
        group_id=G, member_id=member, share_session_epoch=epoch,
        partitions=(SharePartitionData(T, partition, tuple(AcknowledgementBatch(f, la, (t,)) for f, la, t in batches)),
                    ),
        **kw)).response  # type: ignore[arg-type]
    assert response.error_code == codes.NONE, response
    return response.partitions[0].error_code


def acquired(response: ShareFetchResponse, partition: int = 0) -> list[tuple[int, int, int]]:
    assert response.error_code == codes.NONE, response
    return [(a.first_offset, a.last_offset, a.delivery_count) for p in response.partitions
            if p.partition == partition for a in p.acquired_records]


def state(model: ShareGroupModel, offset: int) -> RecordState | None:
    sp = model.share_partition(G, T, 0)
    rec = sp.record(offset) if sp is not None else None
    return rec.state if rec is not None else None


def advance(model: ShareGroupModel, clock: FakeClock, ms: int) -> None:
    clock.advance(ms / 1000)
    model.tick()


# ---------------------------------------------------------------------------- heartbeats


def test_a_first_member_gets_its_partitions_once_their_share_state_is_initialized() -> None:
    model, clock = make(owner=False)
    first = hb(model, "a", 0)
    assert (first.error_code, first.member_epoch, first.assignment) == (codes.NONE, 2, ())
    assert hb(model, "a", 2).assignment is None  # within the assignment interval
    advance(model, clock, 1000)
    later = hb(model, "a", 2)
    assert later.member_epoch == 3
    assert later.assignment is not None and [tuple(tp.partitions) for tp in later.assignment] == [(0, 1)]
    assert later.heartbeat_interval_ms == 5000


@pytest.mark.parametrize(("epoch", "code"), [(7, codes.FENCED_MEMBER_EPOCH), (1, codes.FENCED_MEMBER_EPOCH)])
def test_an_epoch_other_than_the_members_is_fenced(epoch: int, code: int) -> None:
    model, _ = make(owner=False)
    hb(model, "a", 0)
    assert hb(model, "a", epoch).error_code == code


def test_unknown_members_groups_and_invalid_requests() -> None:
    model, _ = make(owner=False)
    assert hb(model, "a", 2).error_code == codes.GROUP_ID_NOT_FOUND
    assert hb(model, "a", -1).error_code == codes.GROUP_ID_NOT_FOUND
    hb(model, "a", 0)
    assert hb(model, "x", 2).error_code == codes.UNKNOWN_MEMBER_ID
    assert hb(model, "x", -1).error_code == codes.UNKNOWN_MEMBER_ID
    assert model.heartbeat(ShareGroupHeartbeatRequest(group_id=G, member_id="b", member_epoch=0)).response.error_code \
        == codes.INVALID_REQUEST
    assert hb(model, "", 0).error_code == codes.INVALID_REQUEST
    assert hb(model, "a", -2).error_code == codes.INVALID_REQUEST


def test_leave_answers_epoch_minus_one_and_a_left_member_is_unknown() -> None:
    model, _ = make(owner=False)
    hb(model, "a", 0)
    left = hb(model, "a", -1)
    assert (left.error_code, left.member_epoch, left.heartbeat_interval_ms) == (codes.NONE, -1, 0)
    assert hb(model, "a", 2).error_code == codes.UNKNOWN_MEMBER_ID


def test_a_silent_member_is_removed_at_its_session_timeout() -> None:
    model, clock = make(session_timeout_ms=3000, owner=False)
    hb(model, "a", 0)
    advance(model, clock, 2999)
    assert hb(model, "a", 2).error_code == codes.NONE
    advance(model, clock, 3000)
    assert hb(model, "a", 2).error_code == codes.UNKNOWN_MEMBER_ID


def test_the_group_is_full_at_max_size() -> None:
    model, _ = make(max_size=2, owner=False)
    hb(model, "a", 0)
    hb(model, "b", 0)
    assert hb(model, "c", 0).error_code == codes.GROUP_MAX_SIZE_REACHED


def test_more_members_than_partitions_share_them() -> None:
    model, clock = make(partitions=2, owner=False)
    for m in "abcde":
        hb(model, m, 0)
    advance(model, clock, 1000)
    got = {m: hb(model, m, 0).assignment for m in "abcde"}
    per_member = {m: [p for tp in a for p in tp.partitions] for m, a in got.items() if a is not None}
    assert sorted(len(ps) for ps in per_member.values()) == [1, 1, 1, 1, 2]  # 3 sharers each, 6 in all
    shared = sorted(p for ps in per_member.values() for p in ps)
    assert shared.count(0) == 3 and shared.count(1) == 3


def test_the_simple_assignor_balances_and_sticks() -> None:
    topics = {"t": (T, 4)}
    first = simple_assign({"a": frozenset({"t"}), "b": frozenset({"t"})}, topics, lambda t, p: True, {})
    assert sorted(len(a[T]) for a in first.values()) == [2, 2]
    second = simple_assign({"a": frozenset({"t"}), "b": frozenset({"t"}), "c": frozenset({"t"})}, topics,
                           lambda t, p: True, first)
    assert sorted(len(a.get(T, ())) for a in second.values()) == [1, 1, 2]
    assert second["a"][T] <= first["a"][T] and second["b"][T] <= first["b"][T]
    assert simple_assign({"a": frozenset({"t"})}, topics, lambda t, p: p < 1, {}) == {"a": {T: frozenset({0})}}


# ---------------------------------------------------------------------------- share sessions


def test_share_session_epochs_open_increment_and_close() -> None:
    model, _ = make()
    assert fetch(model, "a", 1).error_code == codes.SHARE_SESSION_NOT_FOUND
    assert fetch(model, "a", -1).error_code == codes.SHARE_SESSION_NOT_FOUND
    assert fetch(model, "a", 0, acks={0: [(0, 0, ACCEPT)]}).error_code == codes.INVALID_REQUEST
    opened = fetch(model, "a", 0)
    assert opened.error_code == codes.NONE and opened.acquisition_lock_timeout_ms == LOCK_MS
    assert fetch(model, "a", 5).error_code == codes.INVALID_SHARE_SESSION_EPOCH
    assert fetch(model, "a", 1).error_code == codes.NONE
    assert fetch(model, "a", 2).error_code == codes.NONE
    assert model.share_session_epoch(G, "a") == 3
    assert fetch(model, "a", -1).error_code == codes.NONE
    assert fetch(model, "a", 3).error_code == codes.SHARE_SESSION_NOT_FOUND


def test_share_acknowledge_cannot_open_a_session() -> None:
    model, _ = make()
    response = model.share_acknowledge(ShareAcknowledgeRequest(group_id=G, member_id="a", share_session_epoch=0))
    assert response.response.error_code == codes.INVALID_SHARE_SESSION_EPOCH


def test_the_share_session_limit() -> None:
    model, _ = make(max_share_sessions=1)
    fetch(model, "a", 0)
    assert fetch(model, "b", 0).error_code == SHARE_SESSION_LIMIT_REACHED
    assert fetch(model, "a", 0).error_code == codes.NONE  # replacing its own session is no new one


# ---------------------------------------------------------------------------- acquisition and locks


def test_no_record_is_acquired_by_two_members_while_its_lock_is_valid() -> None:
    model, clock = make()
    model.produce(T, 0, 5)
    assert acquired(fetch(model, "a", 0)) == [(0, 4, 1)]
    assert acquired(fetch(model, "b", 0)) == []
    advance(model, clock, LOCK_MS - 1)
    assert acquired(fetch(model, "b", 1)) == []
    model.produce(T, 0, 2)
    assert acquired(fetch(model, "b", 2)) == [(5, 6, 1)]


def test_lock_expiry_redelivers_with_the_delivery_count_plus_one() -> None:
    model, clock = make()
    model.produce(T, 0, 5)
    fetch(model, "a", 0)
    advance(model, clock, LOCK_MS)
    assert state(model, 0) is RecordState.AVAILABLE
    assert acquired(fetch(model, "b", 0)) == [(0, 4, 2)]


def test_archiving_at_the_delivery_count_limit_and_the_last_attempt_goes_alone() -> None:
    model, clock = make(delivery_count_limit=3, dead_letter_topic="dlq.g")
    model.produce(T, 0, 3)
    fetch(model, "a", 0)
    advance(model, clock, LOCK_MS)
    assert acquired(fetch(model, "a", 1)) == [(0, 2, 2)]
    advance(model, clock, LOCK_MS)
    assert acquired(fetch(model, "a", 2)) == [(0, 0, 3)]  # its last attempt, alone
    assert acquired(fetch(model, "a", 3)) == [(1, 1, 3)]
    advance(model, clock, LOCK_MS)
    sp = model.share_partition(G, T, 0)
    assert sp is not None
    assert state(model, 2) is RecordState.AVAILABLE
    assert sp.start_offset == 2  # 0 and 1 archived at the limit
    assert sp.dead_lettered == [(0, "delivery count limit"), (1, "delivery count limit")]


def test_a_rejected_record_is_dead_lettered_only_where_the_group_has_a_dead_letter_topic() -> None:
    for topic, listed in (("dlq.g", [(1, "rejected")]), ("", [])):
        model, _ = make(dead_letter_topic=topic)
        model.produce(T, 0, 3)
        fetch(model, "a", 0)
        assert ack(model, "a", 1, [(0, 0, ACCEPT), (1, 1, REJECT), (2, 2, ACCEPT)]) == codes.NONE
        sp = model.share_partition(G, T, 0)
        assert sp is not None and sp.start_offset == 3
        assert sp.dead_lettered == listed  # Apache Kafka 4.4 writes the rejected one, not the accepted ones


def test_released_records_go_to_the_next_fetch() -> None:
    model, _ = make()
    model.produce(T, 0, 5)
    fetch(model, "a", 0)
    assert ack(model, "a", 1, [(1, 2, RELEASE)]) == codes.NONE
    assert acquired(fetch(model, "b", 0)) == [(1, 2, 2)]


def test_the_start_offset_moves_only_over_terminal_records() -> None:
    model, _ = make()
    model.produce(T, 0, 5)
    fetch(model, "a", 0)
    sp = model.share_partition(G, T, 0)
    assert sp is not None and (sp.start_offset, sp.end_offset) == (0, 5)
    assert ack(model, "a", 1, [(1, 2, ACCEPT)]) == codes.NONE
    assert sp.start_offset == 0  # offset 0 is still acquired
    assert ack(model, "a", 2, [(0, 0, RELEASE)]) == codes.NONE
    assert sp.start_offset == 0  # available is not terminal
    fetch(model, "a", 3, partitions=())
    assert ack(model, "a", 4, [(0, 0, REJECT)]) == codes.NONE
    assert sp.start_offset == 3 and state(model, 3) is RecordState.ACQUIRED


def test_invalid_acknowledgements() -> None:
    model, _ = make()
    model.produce(T, 0, 5)
    fetch(model, "a", 0)
    fetch(model, "b", 0)
    assert ack(model, "b", 1, [(0, 0, ACCEPT)]) == codes.INVALID_RECORD_STATE  # a's
    assert ack(model, "a", 1, [(7, 8, ACCEPT)]) == codes.INVALID_REQUEST  # past the SPEO
    assert ack(model, "a", 2, [(3, 2, ACCEPT)]) == codes.INVALID_REQUEST
    assert ack(model, "a", 3, [(0, 0, RENEW)]) == codes.INVALID_REQUEST  # without is_renew_ack
    assert ack(model, "a", 4, [(0, 0, ACCEPT), (1, 1, 9)]) == codes.INVALID_REQUEST
    assert state(model, 0) is RecordState.ACQUIRED  # all or nothing
    assert ack(model, "a", 5, [(0, 4, ACCEPT)]) == codes.NONE
    assert ack(model, "a", 6, [(0, 1, ACCEPT)]) == codes.NONE  # before the SPSO: skipped


def test_renew_extends_the_lock() -> None:
    model, clock = make()
    model.produce(T, 0, 2)
    fetch(model, "a", 0)
    advance(model, clock, LOCK_MS - 500)
    assert ack(model, "a", 1, [(0, 1, RENEW)], is_renew_ack=True) == codes.NONE
    advance(model, clock, 1000)
    assert acquired(fetch(model, "b", 0)) == []
    advance(model, clock, LOCK_MS)
    assert acquired(fetch(model, "b", 1)) == [(0, 1, 2)]


def test_max_records_is_soft_in_batch_mode_and_strict_in_record_limit_mode() -> None:
    model, _ = make()
    model.produce(T, 0, 5)
    model.produce(T, 0, 5)
    assert acquired(fetch(model, "a", 0, max_records=3)) == [(0, 4, 1)]
    assert acquired(fetch(model, "b", 0, max_records=3, share_acquire_mode=ShareAcquireMode.RECORD_LIMIT)) == [
        (5, 7, 1)
    ]


def test_closing_the_session_releases_the_members_records_leaving_the_group_does_not() -> None:
    model, _ = make(delivery_count_limit=5)
    model.produce(T, 0, 3)
    fetch(model, "a", 0)
    hb(model, "a", -1)
    assert acquired(fetch(model, "b", 0)) == []
    assert fetch(model, "a", -1).error_code == codes.NONE
    assert acquired(fetch(model, "c", 0)) == [(0, 2, 2)]


def test_a_partition_without_initialized_share_state_answers_unknown_server_error() -> None:
    clock = FakeClock()
    model = ShareGroupModel(clock=clock, topics=lambda: {"t": (T, 1)})
    model.produce(T, 0, 1)
    first = fetch(model, "a", 0)
    assert [(p.partition, p.error_code) for p in first.partitions] == [(0, codes.UNKNOWN_SERVER_ERROR)]
    hb(model, "a", 0)
    assert fetch(model, "a", 1).partitions == ()  # no error, nothing to acquire


def test_latest_auto_offset_reset_starts_at_the_log_end_at_the_first_fetch() -> None:
    clock = FakeClock()
    model = ShareGroupModel(clock=clock, topics=lambda: {"t": (T, 1)})
    hb(model, "owner", 0)
    model.produce(T, 0, 5)
    first = fetch(model, "a", 0)
    assert [(p.partition, p.acquired_records) for p in first.partitions] == [(0, ())]
    model.produce(T, 0, 2)
    assert fetch(model, "a", 1).partitions[0].acquired_records == (AcquiredRecords(5, 6, 1),)


def test_the_event_log_records_acquisition_and_expiry() -> None:
    model, clock = make()
    model.produce(T, 0, 1)
    fetch(model, "a", 0)
    advance(model, clock, LOCK_MS)
    kinds = [e.kind for e in model.events]
    assert "records_acquired" in kinds and "acquisition_locks_expired" in kinds
    expired = next(e for e in model.events if e.kind == "acquisition_locks_expired")
    assert expired.time_ms == LOCK_MS


def test_the_previous_epoch_is_taken_an_older_one_is_fenced() -> None:
    model, clock = make(owner=False)
    hb(model, "a", 0)
    advance(model, clock, 1000)
    assert hb(model, "a", 2).member_epoch == 3
    again = hb(model, "a", 2)  # the answer that moved it to 3 was lost
    assert (again.error_code, again.member_epoch) == (codes.NONE, 3)
    assert hb(model, "a", 1).error_code == codes.FENCED_MEMBER_EPOCH


def test_a_renewing_share_fetch_acquires_nothing_and_must_zero_its_fetch_parameters() -> None:
    model, _ = make()
    model.produce(T, 0, 2)
    fetch(model, "a", 0)
    model.produce(T, 0, 1)
    assert fetch(model, "a", 1, acks={0: [(0, 1, RENEW)]}, is_renew_ack=True).error_code == codes.INVALID_REQUEST
    renewed = fetch(model, "a", 1, acks={0: [(0, 1, RENEW)]}, is_renew_ack=True, max_wait_ms=0, min_bytes=0,
                    max_bytes=0, max_records=0)
    assert [(p.acknowledge_error_code, p.acquired_records) for p in renewed.partitions] == [(codes.NONE, ())]


def test_redeliveries_are_throttled_from_half_the_delivery_count_limit() -> None:
    model, clock = make(delivery_count_limit=5)
    model.produce(T, 0, 10)
    got = []
    for epoch in range(7):
        got.append(acquired(fetch(model, "a", epoch)))
        advance(model, clock, LOCK_MS)
    # deliveries 1-3 whole; the 4th (3 >= max(2, ceil(5 / 2))) takes 10 >> 1; the 5th, the last, goes alone
    assert got == [[(0, 9, 1)], [(0, 9, 2)], [(0, 9, 3)], [(0, 4, 4)], [(0, 0, 5)], [(1, 1, 5)], [(2, 2, 5)]]
