"""A commit's acknowledgements ride a ShareFetch with ``max_wait_ms`` 0 (KIP-932), on a scripted transport.

``ShareConsumer.commit_sync()`` and ``commit_async()`` send a leader's acknowledgements on a
ShareFetch that waits for nothing when its share session is open, its partitions are still
assigned and nothing fetched from it waits to be handed out: one round trip per batch where a
ShareAcknowledge and then the next ``poll()``'s ShareFetch took two. The records that answer
brings are the next ``poll()``'s, and ``close()`` leaves them to the session's close (the broker
releases them). The consumer here is the real one, its group thread replaced by a stand-in that
keeps what is posted (no heartbeats: the assignment is set on the fetcher).
"""

from __future__ import annotations

import concurrent.futures
from types import SimpleNamespace
from typing import Any

import pytest

from kgroup._driver.mailbox import Mailbox
from kgroup._driver.share_fetch import ShareFetcher
from kgroup._error_codes import TOPIC_AUTHORIZATION_FAILED
from kgroup.errors import WakeupError
from kgroup.membership import events as ev
from kgroup.membership.states import MemberState
from kgroup.protocol import share_fetch as sf
from kgroup.share_consumer import ShareConsumer
from kgroup.types import AcknowledgeType, TopicPartition
from tests.unit.test_share_fetcher import T0, TOPIC_ID, Script, fetched, fetcher

ACCEPT = int(AcknowledgeType.ACCEPT)


class _Group:
    """What ``ShareConsumer`` asks of its group thread: ``post`` (kept), ``snapshot``, ``crashed``."""

    crashed = None

    def __init__(self) -> None:
        self.posted: list[Any] = []
        self.snapshot = SimpleNamespace(state=MemberState.STABLE)

    def post(self, event: Any) -> None:
        self.posted.append(event)
        if isinstance(event, ev.Leave):
            self.snapshot = SimpleNamespace(state=MemberState.CLOSED)


class _Runtime:
    fetch_slice_ms = 20

    def mailbox(self) -> Mailbox:
        return Mailbox()

    def start(self, group: Any) -> None:
        """Nothing to start: ``_Group`` is no thread."""

    def stop(self, group: Any, timeout_s: float) -> None:
        """Nothing to stop."""


def consumer(script: Script, mode: str = "explicit") -> ShareConsumer[bytes, bytes]:
    """A subscribed ``ShareConsumer`` (``max_poll_records=2``) assigned ``t-0``, led by node 1."""
    c: ShareConsumer[bytes, bytes] = ShareConsumer(
        bootstrap_servers="h:9092", group_id="g", share_acknowledgement_mode=mode, max_poll_records=2,
        transport=script, _runtime=_Runtime())
    c._group = _Group()
    c._transport = script
    c._fetcher = ShareFetcher(c.config, script, c._mailbox, c._clock, "member", metrics=c._metrics)
    c._fetcher.assign(frozenset({T0}))
    c._subscription = frozenset({"t"})
    return c


def acks_of(request: Any) -> dict[int, int]:
    """Offset -> type of every acknowledgement ``request`` carries (of partition 0)."""
    out: dict[int, int] = {}
    parts = request.partitions
    for part in parts:
        found = part.acknowledgement_batches if isinstance(request, sf.ShareFetchRequest) else part.batches
        for b in found:
            for i, offset in enumerate(range(b.first_offset, b.last_offset + 1)):
                out[offset] = b.acknowledge_types[0 if len(b.acknowledge_types) == 1 else i]
    return out


def test_commit_sync_after_a_poll_sends_one_share_fetch_with_the_acknowledgements_and_max_wait_0() -> None:
    script = Script()
    script.fetch_answers = [fetched(0, 2), fetched(2, 2)]
    c = consumer(script)
    seen: list[tuple[dict[TopicPartition, frozenset[int]], Any]] = []
    c.set_acknowledgement_commit_callback(lambda offsets, error: seen.append((dict(offsets), error)))
    records = c.poll(5000)
    assert [r.offset for r in records] == [0, 1] and len(script.sent) == 1
    for r in records:
        c.acknowledge(r, AcknowledgeType.ACCEPT)
    assert c.commit_sync(5000) == {T0: None}
    (commit,) = script.sent[1:]  # one request, not a ShareAcknowledge then a ShareFetch
    assert isinstance(commit, sf.ShareFetchRequest)
    assert (commit.share_session_epoch, commit.max_wait_ms, commit.min_bytes, commit.max_records) == (1, 0, 1, 2)
    assert commit.partitions == (sf.ShareFetchPartition(TOPIC_ID, 0, (sf.AcknowledgementBatch(0, 1, (ACCEPT,)),)),)
    assert seen == [({T0: frozenset({0, 1})}, None)]  # the callback, as for a ShareAcknowledge's answer
    assert c.metrics()["acknowledgements-send-total"] == 2


def test_the_records_a_commits_fetch_brings_come_out_of_the_next_poll_without_a_request() -> None:
    script = Script()
    script.fetch_answers = [fetched(0, 2), fetched(2, 2, delivery_count=3)]
    c = consumer(script)
    for r in c.poll(5000):
        c.acknowledge(r)
    c.commit_sync(5000)
    sent = len(script.sent)
    again = c.poll(5000)
    assert [(r.offset, r.value, r.delivery_count) for r in again] == [(2, b"v2", 3), (3, b"v3", 3)]
    assert len(script.sent) == sent  # handed out from the buffer: no request
    for r in again:
        c.acknowledge(r, AcknowledgeType.RELEASE)
    assert c.commit_sync(5000) == {T0: None}  # and the next commit rides a ShareFetch again
    assert isinstance(script.sent[-1], sf.ShareFetchRequest) and script.sent[-1].max_wait_ms == 0
    assert acks_of(script.sent[-1]) == {2: int(AcknowledgeType.RELEASE), 3: int(AcknowledgeType.RELEASE)}


def test_a_leader_with_records_still_buffered_gets_a_share_acknowledge() -> None:
    script = Script()
    script.fetch_answers = [fetched(0, 3), fetched(3, 1)]
    c = consumer(script)
    for r in c.poll(5000):  # two of the three: offset 2 waits in the buffer
        c.acknowledge(r)
    assert c.commit_sync(5000) == {T0: None}
    ack = script.sent[1]
    assert isinstance(ack, sf.ShareAcknowledgeRequest) and acks_of(ack) == {0: ACCEPT, 1: ACCEPT}
    assert len(script.sent) == 2  # no fetch: records from that leader still wait
    (last,) = c.poll(5000)
    assert last.offset == 2 and len(script.sent) == 2
    c.acknowledge(last)
    c.commit_sync(5000)  # nothing buffered now: the acknowledgement rides a ShareFetch
    assert isinstance(script.sent[2], sf.ShareFetchRequest) and script.sent[2].max_wait_ms == 0
    assert acks_of(script.sent[2]) == {2: ACCEPT} and len(script.sent) == 3


def test_close_releases_the_records_a_commits_fetch_brought() -> None:
    script = Script()
    script.fetch_answers = [fetched(0, 2), fetched(2, 2)]
    c = consumer(script, mode="implicit")
    assert [r.offset for r in c.poll(5000)] == [0, 1]
    assert c.commit_sync(5000) == {T0: None}  # implicit mode: 0 and 1 accepted, 2 and 3 acquired
    commit = script.sent[1]
    assert isinstance(commit, sf.ShareFetchRequest) and acks_of(commit) == {0: ACCEPT, 1: ACCEPT}
    assert c._fetcher.has_buffered()
    c.close(5000)
    after = script.sent[2:]
    assert all(isinstance(r, sf.ShareAcknowledgeRequest) for r in after)
    assert after[-1].share_session_epoch == -1  # the session's close: the broker releases 2 and 3
    assert not any(acks_of(r).keys() & {2, 3} for r in after)  # never handed out, so never accepted
    assert not c._fetcher.has_buffered() and c._fetcher.closing_done()


def test_a_partition_no_longer_assigned_or_a_renewal_keeps_the_share_acknowledge() -> None:
    script = Script()
    script.fetch_answers = [fetched(0, 2)]
    f = fetcher(script)
    f.step(fetch=True)
    f.step(fetch=True)
    f.hand_out(2)
    f.assign(frozenset())  # revoked before the commit
    f.take_acknowledgements()
    f.step(fetch=False, commit=True)
    assert isinstance(script.sent[-1], sf.ShareAcknowledgeRequest) and acks_of(script.sent[-1]) == {0: 1, 1: 1}

    script = Script()
    script.fetch_answers = [fetched(0, 2)]
    f = fetcher(script, mode="explicit")
    f.step(fetch=True)
    f.step(fetch=True)
    first, second = f.hand_out(2)
    f.inflight.acknowledge(T0, first.offset, AcknowledgeType.RENEW)
    f.inflight.acknowledge(T0, second.offset, AcknowledgeType.ACCEPT)
    f.take_acknowledgements()
    f.step(fetch=False, commit=True)  # the renewal first, in its own ShareAcknowledge (IsRenewAck)
    renew = script.sent[-1]
    assert isinstance(renew, sf.ShareAcknowledgeRequest) and renew.is_renew_ack
    assert acks_of(renew) == {0: int(AcknowledgeType.RENEW)}
    f.step(fetch=False, commit=True)  # then the acceptance rides a ShareFetch
    assert isinstance(script.sent[-1], sf.ShareFetchRequest) and script.sent[-1].max_wait_ms == 0
    assert acks_of(script.sent[-1]) == {1: ACCEPT} and not script.sent[-1].is_renew_ack


def test_a_top_level_error_of_a_commits_fetch_is_the_acknowledgements_outcome_only() -> None:
    script = Script()
    script.fetch_answers = [fetched(0, 2), sf.ShareFetchResponse(error_code=TOPIC_AUTHORIZATION_FAILED)]
    c = consumer(script)
    for r in c.poll(5000):
        c.acknowledge(r)
    outcome = c.commit_sync(5000)
    assert isinstance(script.sent[1], sf.ShareFetchRequest) and outcome[T0] is not None
    c._fetcher.raise_errors()  # nothing for poll() to raise: the commit reported it


class _Held(Script):
    """A transport whose ShareFetch answers from the second on wait until the test releases them."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[tuple[concurrent.futures.Future[Any], sf.ShareFetchResponse]] = []

    def share_fetch(self, node_id: int, request: sf.ShareFetchRequest, timeout_ms: int) -> Any:
        answered = super().share_fetch(node_id, request, timeout_ms)
        if len(self.sent) == 1:
            return answered
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.held.append((future, answered.result()))
        return future

    def release(self) -> None:
        for future, answer in self.held:
            future.set_result(answer)
        self.held.clear()


def test_commit_async_then_poll_and_commit_sync_timeout_and_wakeup_as_before() -> None:
    script = _Held()
    script.fetch_answers = [fetched(0, 2), fetched(2, 2), fetched(4, 2), fetched(6, 2)]
    c = consumer(script)
    seen: list[Any] = []
    c.set_acknowledgement_commit_callback(lambda offsets, error: seen.append((dict(offsets), error)))
    for r in c.poll(5000):
        c.acknowledge(r)
    c.commit_async()  # out on a ShareFetch with max_wait 0; nothing waits for it
    assert isinstance(script.sent[-1], sf.ShareFetchRequest) and script.sent[-1].max_wait_ms == 0 and not seen
    script.release()
    records = c.poll(5000)  # the answer: the callback runs in poll(), which returns its records
    assert [r.offset for r in records] == [2, 3] and seen == [({T0: frozenset({0, 1})}, None)]
    assert len(script.sent) == 2
    for r in records:
        c.acknowledge(r)
    outcome = c.commit_sync(50)  # unanswered: a timeout per partition, the fetch stays out
    assert type(outcome[T0]).__name__ == "KafkaTimeoutError" and len(seen) == 1
    script.release()
    for r in c.poll(5000):  # the late answer: its outcome to the callback, its records handed out
        c.acknowledge(r)
    assert seen[1] == ({T0: frozenset({2, 3})}, None)
    c.wakeup()
    with pytest.raises(WakeupError):
        c.commit_sync(5000)
    assert isinstance(script.sent[-1], sf.ShareFetchRequest) and acks_of(script.sent[-1]) == {4: ACCEPT, 5: ACCEPT}
    script.release()
    assert [r.offset for r in c.poll(5000)] == [6, 7] and seen[2] == ({T0: frozenset({4, 5})}, None)
