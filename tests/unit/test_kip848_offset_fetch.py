"""OffsetFetch under the consumer protocol (KIP-848): the member id and epoch, and what its errors mean.

OffsetFetch v9 gives each group of the batched form (KIP-709) a ``MemberId`` and a
``MemberEpoch``; Java's ``CommitRequestManager`` sends them for a member that has an epoch
(``OffsetFetchRequestState.toUnsentRequest``, from its ``MemberInfo``), and takes the answers so
(``OffsetFetchRequestState.onFailure``, ``isStaleEpochErrorAndValidEpochAvailable``):
STALE_MEMBER_EPOCH is retried, until the fetch's deadline, with the member's latest epoch while
it has one, else raised; UNKNOWN_MEMBER_ID is raised, never retried. Classic members and
consumers outside the group send none (null and -1), which the coordinator does not check.

The wire through kafka-python's OffsetFetch schema; the offsets client with a scripted transport,
a stand-in group thread and a mailbox on a ``FakeClock`` (its waits advance the clock).
"""

from __future__ import annotations

import concurrent.futures
import random
from collections.abc import Callable
from typing import Any, Literal

import pytest

from kgroup._driver.commits import OffsetsClient
from kgroup._error_codes import (
    COORDINATOR_LOAD_IN_PROGRESS,
    NONE,
    STALE_MEMBER_EPOCH,
    UNKNOWN_MEMBER_ID,
)
from kgroup._io import kafka_frames as frames
from kgroup._io import kafka_messages
from kgroup._io.transport import CommittedOffset, OffsetFetchResult, offset_fetch_request
from kgroup.config import ConsumerConfig
from kgroup.errors import Api, BrokerError, CoordinatorUnavailable, Disposition, classify
from kgroup.membership import events as ev
from kgroup.membership.core import MemberSnapshot
from kgroup.membership.states import MemberState
from kgroup.protocol import group_api
from kgroup.protocol.group_api import FetchTopic, OffsetFetchRequest
from kgroup.testing import FakeClock
from kgroup.types import Generation, OffsetAndMetadata, TopicPartition
from tests.unit import test_kip848_commits as commits_tests
from tests.unit.test_kip848_commits import ClockMailbox

TP = TopicPartition("orders", 0)
MEMBER = "m-1"
OFFSET_FETCH = group_api.OFFSET_FETCH


# ==================================================================== the wire


def fetch(**member: object) -> OffsetFetchRequest:
    return OffsetFetchRequest(group_id="g", topics=(FetchTopic(name="orders", partition_indexes=(0, 1)),),
                              **member)  # type: ignore[arg-type]


def through_the_wire(request: OffsetFetchRequest, version: int) -> dict[str, Any]:
    """The body a broker decodes from the client's kafka-python request sent at ``version``."""
    message = kafka_messages.request_message(request)
    message.with_header(correlation_id=1, client_id="c")
    body: dict[str, Any] = frames.decode_request_body(OFFSET_FETCH, version, message.encode(version=version,
                                                                                              header=True))
    return body


def test_v9_carries_the_member_id_and_epoch_in_the_group() -> None:
    body = through_the_wire(fetch(member_id=MEMBER, member_epoch=5), 9)
    (group,) = body["groups"]
    assert (group["group_id"], group["member_id"], group["member_epoch"]) == ("g", MEMBER, 5)


def test_without_a_member_v9_sends_null_and_minus_one() -> None:
    body = through_the_wire(fetch(), 9)
    (group,) = body["groups"]
    assert (group["member_id"], group["member_epoch"]) == (None, -1)


@pytest.mark.parametrize("version", [9, 8, 7, 1])
def test_the_member_round_trips_where_the_version_has_it(version: int) -> None:
    request = OffsetFetchRequest(api_version=version, group_id="g", member_id=MEMBER, member_epoch=5,
                                 topics=(FetchTopic(name="orders", partition_indexes=(0,)),))
    frame = frames.encode_request(OFFSET_FETCH, version, 1, "c", kafka_messages.request_body((request,), version))
    body = frames.decode_request_body(OFFSET_FETCH, version, frame[4:])
    (back,) = kafka_messages.requests_from_body(OFFSET_FETCH, version, body)
    assert isinstance(back, OffsetFetchRequest)
    expected = (MEMBER, 5) if version >= 9 else (None, -1)  # v8 and the single-group form have none
    assert (back.member_id, back.member_epoch) == expected
    assert back.topics == request.topics


def test_the_request_value_takes_the_members_generation() -> None:
    request = offset_fetch_request("g", [TP], member=Generation(5, MEMBER))
    assert (request.member_id, request.member_epoch) == (MEMBER, 5)
    request = offset_fetch_request("g", [TP])
    assert (request.member_id, request.member_epoch) == (None, -1)


def test_stale_member_epoch_has_a_row_in_the_offset_fetch_table() -> None:
    assert classify(Api.OFFSET_FETCH, STALE_MEMBER_EPOCH) is Disposition.RESET_MEMBER


# ==================================================================== the offsets client


class Group(commits_tests.Group):
    """The group thread as the offsets client sees it; ``manual``: a consumer of ``assign()``."""

    def __init__(self, epoch: int, *, manual: bool = False) -> None:
        super().__init__(epoch)
        self.manual = manual

    @staticmethod
    def at(epoch: int) -> MemberSnapshot:
        generation = Generation(epoch, MEMBER) if epoch > 0 else Generation()
        state = MemberState.STABLE if epoch > 0 else MemberState.JOINING
        return MemberSnapshot(state, generation, frozenset({TP}), 1, frozenset({"orders"}), None, None)


class Transport:
    """Answers OffsetFetch with the scripted group-level codes, recording the member each one carried."""

    def __init__(self, *codes: int, in_flight: Callable[[], None] = lambda: None) -> None:
        self.codes = list(codes)
        self.sent: list[Generation | None] = []
        #: what happens to the member while a fetch is out (before its answer is read)
        self.in_flight = in_flight

    def offset_fetch(self, request: OffsetFetchRequest, node: int,
                     timeout_ms: int) -> concurrent.futures.Future[OffsetFetchResult]:
        member = request.member_id
        self.sent.append(None if member is None else Generation(request.member_epoch, member))
        self.in_flight()
        code = self.codes.pop(0)
        future: concurrent.futures.Future[OffsetFetchResult] = concurrent.futures.Future()
        partitions = [TopicPartition(t.name, p) for t in request.topics or () for p in t.partition_indexes]
        committed = {} if code else {tp: CommittedOffset(42, "", None, NONE) for tp in partitions}
        future.set_result(OffsetFetchResult(code, committed))
        return future


def client(transport: Transport, group: Group, on_wait: Callable[[], None] = lambda: None, *,
           protocol: Literal["classic", "consumer"] = "consumer") -> OffsetsClient:
    config = ConsumerConfig(bootstrap_servers="k:9092", group_id="g", group_protocol=protocol)
    clock = FakeClock()
    return OffsetsClient(config, transport, group, ClockMailbox(clock, on_wait), clock,  # type: ignore[arg-type]
                         random.Random(1))


def test_a_fetch_carries_the_member_id_and_epoch() -> None:
    transport = Transport(NONE)
    assert client(transport, Group(5)).fetch_committed([TP], 5000) == {TP: OffsetAndMetadata(42)}
    assert transport.sent == [Generation(5, MEMBER)]


@pytest.mark.parametrize(("group", "protocol"), [
    (Group(0), "consumer"),  # joining, fenced or left: no epoch, no member (Java: MemberInfo without epoch)
    (Group(5, manual=True), "consumer"),  # assign(): outside the group
    (Group(5), "classic"),  # classic members send what they always sent
], ids=["no-epoch", "manual", "classic"])
def test_who_sends_no_member(group: Group, protocol: Literal["classic", "consumer"]) -> None:
    transport = Transport(NONE)
    client(transport, group, protocol=protocol).fetch_committed([TP], 5000)
    assert transport.sent == [None]


def test_stale_member_epoch_is_retried_with_the_members_latest_epoch() -> None:
    transport, group = Transport(STALE_MEMBER_EPOCH, STALE_MEMBER_EPOCH, NONE), Group(5)
    waits: list[int] = []

    def heartbeat() -> None:
        waits.append(1)
        if len(waits) == 2:
            group.snapshot = Group.at(6)

    assert client(transport, group, heartbeat).fetch_committed([TP], 5000) == {TP: OffsetAndMetadata(42)}
    assert transport.sent == [Generation(5, MEMBER), Generation(5, MEMBER), Generation(6, MEMBER)]
    assert group.posted == []  # the heartbeat, not the fetch, moves the member


def test_stale_member_epoch_gives_up_at_the_timeout() -> None:
    transport = Transport(*[STALE_MEMBER_EPOCH] * 50)
    with pytest.raises(CoordinatorUnavailable, match="STALE_MEMBER_EPOCH"):
        client(transport, Group(5)).fetch_committed([TP], 2000)
    assert 2 <= len(transport.sent) < 50


def test_stale_member_epoch_once_the_member_has_no_epoch_fails() -> None:
    group = Group(5)

    def fenced() -> None:
        group.snapshot = Group.at(0)

    transport = Transport(STALE_MEMBER_EPOCH, NONE, in_flight=fenced)
    with pytest.raises(BrokerError) as info:
        client(transport, group).fetch_committed([TP], 5000)
    assert (info.value.api, info.value.name) == (Api.OFFSET_FETCH, "STALE_MEMBER_EPOCH")
    assert transport.sent == [Generation(5, MEMBER)]


def test_unknown_member_id_fails_at_once_and_is_not_retried() -> None:
    transport, group = Transport(UNKNOWN_MEMBER_ID, NONE), Group(5)
    with pytest.raises(BrokerError) as info:
        client(transport, group).fetch_committed([TP], 5000)
    assert (info.value.api, info.value.name) == (Api.OFFSET_FETCH, "UNKNOWN_MEMBER_ID")
    assert type(info.value) is BrokerError  # not fatal: the consumer carries on, the heartbeat fences it
    assert transport.sent == [Generation(5, MEMBER)]
    assert group.posted == []


def test_other_retriable_errors_retry_with_the_latest_epoch_too() -> None:
    transport, group = Transport(COORDINATOR_LOAD_IN_PROGRESS, NONE), Group(5)

    def heartbeat() -> None:
        group.snapshot = Group.at(7)

    client(transport, group, heartbeat).fetch_committed([TP], 5000)
    assert transport.sent == [Generation(5, MEMBER), Generation(7, MEMBER)]


def test_a_coordinator_move_is_still_told_to_the_group() -> None:
    from kgroup._error_codes import NOT_COORDINATOR

    transport, group = Transport(NOT_COORDINATOR, NONE), Group(5)
    client(transport, group).fetch_committed([TP], 5000)
    # the machine decides what the code means for the group (here: find the coordinator again)
    assert group.posted == [ev.CommitErrorObserved(Generation(), NOT_COORDINATOR, "OffsetFetch")]
    assert transport.sent == [Generation(5, MEMBER), Generation(5, MEMBER)]
