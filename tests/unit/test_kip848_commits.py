"""OffsetCommit under the consumer protocol (KIP-848): the member epoch, and what its errors mean.

The offsets client with a scripted transport, a stand-in group thread and a mailbox on a
``FakeClock`` (its waits advance the clock; no real time). Java's ``CommitRequestManager``:
commits carry the member id and the member epoch (OffsetCommit v9+, ``GenerationIdOrMemberEpoch``);
STALE_MEMBER_EPOCH is retried with the epoch the next heartbeat brings while the member has one
(``maybeRetryOnGroupError``), synchronous commits only; UNKNOWN_MEMBER_ID and FENCED_MEMBER_EPOCH
fail the commit with ``CommitFailedError``.
"""

from __future__ import annotations

import concurrent.futures
import random
from collections.abc import Callable
from typing import Any

import pytest

from kgroup._driver.commits import OffsetsClient
from kgroup._driver.mailbox import Mailbox
from kgroup._error_codes import FENCED_MEMBER_EPOCH, NONE, STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID
from kgroup.config import ConsumerConfig
from kgroup.errors import CommitFailedError, RetriableCommitFailedError
from kgroup.membership.core import MemberSnapshot
from kgroup.membership.states import MemberState
from kgroup.protocol.group_api import OffsetCommitRequest
from kgroup.testing import FakeClock
from kgroup.types import Generation, OffsetAndMetadata, TopicPartition

TP = TopicPartition("orders", 0)
OFFSETS = {TP: OffsetAndMetadata(42)}
MEMBER = "m-1"


class ClockMailbox(Mailbox):
    """A mailbox whose waits advance the fake clock and run ``on_wait`` (the group thread's heartbeat)."""

    def __init__(self, clock: FakeClock, on_wait: Callable[[], None]) -> None:
        super().__init__()
        self.clock, self.on_wait = clock, on_wait

    def wait_until(self, ready: Callable[[], bool], timeout_s: float) -> bool:
        if not ready() and timeout_s > 0:
            self.clock.sleep(timeout_s)
            self.on_wait()
        return ready()


class Group:
    """The group thread as the offsets client sees it: a snapshot in the member epoch."""

    def __init__(self, epoch: int) -> None:
        self.snapshot = self.at(epoch)
        self.crashed = None
        self.posted: list[object] = []

    @staticmethod
    def at(epoch: int) -> MemberSnapshot:
        generation = Generation(epoch, MEMBER) if epoch > 0 else Generation()
        return MemberSnapshot(MemberState.STABLE, generation, frozenset({TP}), 1, frozenset({"orders"}), None, None)

    def post(self, event: object) -> None:
        self.posted.append(event)


class Transport:
    """Answers OffsetCommit with the scripted codes, recording the generation each one carried."""

    def __init__(self, *codes: int) -> None:
        self.codes = list(codes)
        self.sent: list[Generation] = []

    def offset_commit(self, request: OffsetCommitRequest, node: int,
                      timeout_ms: int) -> concurrent.futures.Future[dict[TopicPartition, int]]:
        self.sent.append(Generation(request.generation_id, request.member_id))
        future: concurrent.futures.Future[dict[TopicPartition, int]] = concurrent.futures.Future()
        future.set_result({TopicPartition(t.name, p.partition_index): self.codes.pop(0)
                           for t in request.topics for p in t.partitions})
        return future


def client(transport: Transport, group: Group, on_wait: Callable[[], None] = lambda: None) -> OffsetsClient:
    config = ConsumerConfig(bootstrap_servers="k:9092", group_id="g", group_protocol="consumer")
    clock = FakeClock()
    return OffsetsClient(config, transport, group, ClockMailbox(clock, on_wait), clock,  # type: ignore[arg-type]
                         random.Random(1))


def test_a_commit_carries_the_member_id_and_epoch():
    transport = Transport(NONE)
    client(transport, Group(5)).commit_sync(OFFSETS, 5000)
    assert transport.sent == [Generation(5, MEMBER)]


def test_stale_member_epoch_is_retried_with_the_epoch_the_next_heartbeat_brings():
    transport, group = Transport(STALE_MEMBER_EPOCH, STALE_MEMBER_EPOCH, NONE), Group(5)
    waits: list[Any] = []

    def heartbeat() -> None:
        waits.append(1)
        if len(waits) == 2:
            group.snapshot = Group.at(6)

    client(transport, group, heartbeat).commit_sync(OFFSETS, 5000)
    assert transport.sent == [Generation(5, MEMBER), Generation(5, MEMBER), Generation(6, MEMBER)]


def test_stale_member_epoch_gives_up_at_the_timeout():
    transport = Transport(*[STALE_MEMBER_EPOCH] * 50)
    with pytest.raises(Exception, match="STALE_MEMBER_EPOCH"):
        client(transport, Group(5)).commit_sync(OFFSETS, 2000)
    assert 2 <= len(transport.sent) < 50


def test_stale_member_epoch_after_the_member_lost_its_epoch_fails():
    transport, group = Transport(STALE_MEMBER_EPOCH), Group(5)

    def fenced() -> None:
        group.snapshot = Group.at(0)

    with pytest.raises(CommitFailedError):
        client(transport, group, fenced).commit_sync(OFFSETS, 5000)
    assert transport.sent == [Generation(5, MEMBER)]


@pytest.mark.parametrize("code", [UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH])
def test_unknown_member_and_fenced_epoch_fail_the_commit_at_once(code):
    transport = Transport(code, NONE)
    with pytest.raises(CommitFailedError, match="member epoch 5"):
        client(transport, Group(5)).commit_sync(OFFSETS, 5000)
    assert transport.sent == [Generation(5, MEMBER)]


def test_an_async_commit_is_not_retried():
    transport = Transport(STALE_MEMBER_EPOCH, NONE)
    future = client(transport, Group(5)).commit_async(OFFSETS)
    with pytest.raises(RetriableCommitFailedError, match="STALE_MEMBER_EPOCH"):
        future.result(0)
    assert transport.sent == [Generation(5, MEMBER)]


def test_without_an_epoch_nothing_is_sent():
    transport = Transport(NONE)
    with pytest.raises(CommitFailedError, match="no valid generation"):
        client(transport, Group(0)).commit_sync(OFFSETS, 5000)
    assert transport.sent == []
