"""The share consumer's poll-thread driver (``kgroup._driver.share_fetch.ShareFetcher``) on a scripted transport.

No broker: the transport answers at once with ShareFetch and ShareAcknowledge values the test
writes, and records what was sent. It shows the wiring the integration tests cannot see from
outside: the first ShareFetch opens the session (epoch 0, no acknowledgements), the next carries
the acknowledgements of what ``poll()`` returned (implicit mode: accepted), a leader with
records still buffered gets a ShareAcknowledge instead, a session error opens a new session,
the close is a ShareAcknowledge with epoch -1, and outcomes reach the commit and the callback.
"""

from __future__ import annotations

import concurrent.futures
import uuid
from typing import Any

from kafka.record.memory_records import MemoryRecordsBuilder

from kgroup._driver.mailbox import Mailbox
from kgroup._driver.share_fetch import ShareFetcher
from kgroup._error_codes import INVALID_RECORD_STATE, SHARE_SESSION_NOT_FOUND
from kgroup._io.share_transport import PartitionLeader
from kgroup.config import ShareConsumerConfig
from kgroup.errors import InvalidRecordStateError
from kgroup.protocol import share_fetch as sf
from kgroup.testing import FakeClock
from kgroup.types import AcknowledgeType, TopicPartition

TOPIC_ID = uuid.UUID(int=7)
T0 = TopicPartition("t", 0)


def batch(first: int, count: int) -> bytes:
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20, offset=first)
    for i in range(count):
        builder.append(timestamp=1, key=None, value=f"v{first + i}".encode(), headers=[])
    builder.close()
    return bytes(builder.buffer())


def done(value: Any) -> concurrent.futures.Future[Any]:
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    future.set_result(value)
    return future


class Script:
    """A transport whose answers the test queues; ``sent`` is every request, in order."""

    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.fetch_answers: list[sf.ShareFetchResponse] = []
        self.ack_answers: list[sf.ShareAcknowledgeResponse] = []

    def share_metadata(self, topics: Any, timeout_ms: int) -> concurrent.futures.Future[Any]:
        return done({T0: PartitionLeader(1, TOPIC_ID)})

    def share_fetch(self, node_id: int, request: sf.ShareFetchRequest, timeout_ms: int) -> Any:
        self.sent.append(request)
        answer = self.fetch_answers.pop(0) if self.fetch_answers else sf.ShareFetchResponse(
            acquisition_lock_timeout_ms=30000)
        return done(answer)

    def share_acknowledge(self, node_id: int, request: sf.ShareAcknowledgeRequest, timeout_ms: int) -> Any:
        self.sent.append(request)
        return done(self.ack_answers.pop(0) if self.ack_answers else sf.ShareAcknowledgeResponse(
            partitions=tuple(sf.ShareAcknowledgePartition(p.topic_id, p.partition) for p in request.partitions)))


def fetched(first: int, count: int, delivery_count: int = 1, ack_error: int = 0) -> sf.ShareFetchResponse:
    return sf.ShareFetchResponse(acquisition_lock_timeout_ms=30000, partitions=(sf.ShareFetchPartitionData(
        TOPIC_ID, 0, records=batch(first, count), acknowledge_error_code=ack_error,
        acquired_records=(sf.AcquiredRecords(first, first + count - 1, delivery_count),)),))


def fetcher(script: Script, mode: str = "implicit") -> ShareFetcher:
    config = ShareConsumerConfig.from_kwargs(bootstrap_servers="h:9092", group_id="g", max_poll_records=2,
                                             share_acknowledgement_mode=mode)
    f = ShareFetcher(config, script, Mailbox(), FakeClock(), "member")
    f.assign(frozenset({T0}))
    return f


def test_the_session_opens_then_the_next_fetch_carries_the_acknowledgements() -> None:
    script = Script()
    script.fetch_answers = [fetched(0, 3), fetched(3, 1)]
    f = fetcher(script)
    called: list[Any] = []
    f.step(fetch=True)
    first = script.sent[0]
    assert isinstance(first, sf.ShareFetchRequest) and first.share_session_epoch == 0
    assert first.partitions == (sf.ShareFetchPartition(TOPIC_ID, 0),) and first.max_records == 2
    f.step(fetch=True)  # the answer: three records buffered, no new fetch while they wait
    assert len(script.sent) == 1 and f.lock_timeout_ms == 30000
    out = f.hand_out(2)
    assert [(r.offset, r.value, r.delivery_count) for r in out] == [(0, b"v0", 1), (1, b"v1", 1)]
    f.take_acknowledgements()
    f.step(fetch=True)  # records still buffered: the acknowledgements go in a ShareAcknowledge
    ack = script.sent[1]
    assert isinstance(ack, sf.ShareAcknowledgeRequest) and ack.share_session_epoch == 1
    assert ack.partitions == (sf.PartitionAcknowledgements(TOPIC_ID, 0, (sf.AcknowledgementBatch(0, 1, (1,)),)),)
    f.step(fetch=True)
    f.run_callbacks(lambda offsets, error: called.append((dict(offsets), error)))
    assert called == [({T0: frozenset({0, 1})}, None)]
    assert [r.offset for r in f.hand_out(2)] == [2]
    f.take_acknowledgements()
    f.step(fetch=True)  # nothing buffered: a ShareFetch with the acknowledgement of offset 2
    again = script.sent[2]
    assert isinstance(again, sf.ShareFetchRequest) and again.share_session_epoch == 2
    assert again.partitions == (sf.ShareFetchPartition(TOPIC_ID, 0, (sf.AcknowledgementBatch(2, 2, (1,)),)),)
    f.step(fetch=False)
    assert f.take_outcomes() == {T0: None}


def test_a_failed_acknowledgement_is_its_partitions_outcome() -> None:
    script = Script()
    script.fetch_answers = [fetched(0, 1), fetched(1, 1, ack_error=INVALID_RECORD_STATE)]
    f = fetcher(script, mode="explicit")
    f.step(fetch=True)
    f.step(fetch=True)
    (record,) = f.hand_out(2)
    f.inflight.acknowledge(T0, record.offset, AcknowledgeType.RELEASE)
    f.take_acknowledgements()
    f.step(fetch=True)
    assert script.sent[-1].partitions[0].acknowledgement_batches == (sf.AcknowledgementBatch(0, 0, (2,)),)
    f.step(fetch=True)
    outcome = f.take_outcomes()
    assert isinstance(outcome[T0], InvalidRecordStateError)


def test_a_session_error_opens_a_new_session_and_the_close_is_epoch_minus_1() -> None:
    script = Script()
    script.fetch_answers = [fetched(0, 1), sf.ShareFetchResponse(error_code=SHARE_SESSION_NOT_FOUND)]
    f = fetcher(script)
    f.step(fetch=True)
    f.step(fetch=True)
    f.hand_out(2)
    f.step(fetch=True)  # epoch 1 (the acknowledgement is taken only at the next poll)
    assert script.sent[-1].share_session_epoch == 1
    f.step(fetch=True)  # SHARE_SESSION_NOT_FOUND, then at once a new session
    assert script.sent[-1].share_session_epoch == 0
    assert script.sent[-1].partitions == (sf.ShareFetchPartition(TOPIC_ID, 0),)
    f.step(fetch=False)
    f.take_acknowledgements()
    f.close_sessions()
    close = script.sent[-1]
    assert isinstance(close, sf.ShareAcknowledgeRequest) and close.share_session_epoch == -1
    assert close.partitions == (sf.PartitionAcknowledgements(TOPIC_ID, 0, (sf.AcknowledgementBatch(0, 0, (1,)),)),)
    f.step(fetch=False)
    assert f.closing_done()


class MovingLeader(Script):
    """Node 1 leads T0 and dies (its requests fail: no answer); the next Metadata answer names node 2."""

    def __init__(self) -> None:
        super().__init__()
        self.leaders = [1, 2]
        self.metadata_asked = 0
        self.nodes: list[int] = []

    def share_metadata(self, topics: Any, timeout_ms: int) -> concurrent.futures.Future[Any]:
        leader = self.leaders[min(self.metadata_asked, len(self.leaders) - 1)]
        self.metadata_asked += 1
        return done({T0: PartitionLeader(leader, TOPIC_ID)})

    def share_fetch(self, node_id: int, request: sf.ShareFetchRequest, timeout_ms: int) -> Any:
        self.nodes.append(node_id)
        if node_id == 1 and self.fetch_answers == []:
            self.sent.append(request)
            failed: concurrent.futures.Future[Any] = concurrent.futures.Future()
            failed.set_exception(ConnectionError("socket disconnected"))
            return failed
        return super().share_fetch(node_id, request, timeout_ms)

    def share_acknowledge(self, node_id: int, request: sf.ShareAcknowledgeRequest, timeout_ms: int) -> Any:
        self.nodes.append(node_id)
        if node_id == 1:
            self.sent.append(request)
            failed: concurrent.futures.Future[Any] = concurrent.futures.Future()
            failed.set_exception(ConnectionError("socket disconnected"))
            return failed
        return super().share_acknowledge(node_id, request, timeout_ms)


def test_a_leader_that_stops_answering_is_looked_up_again_and_its_records_acknowledged_as_failed() -> None:
    script = MovingLeader()
    script.fetch_answers = [fetched(0, 1)]
    f = fetcher(script, mode="explicit")
    clock = f._clock
    f.step(fetch=True)  # metadata: node 1; the first fetch to node 1 brings offset 0
    f.step(fetch=True)
    (record,) = f.hand_out(2)
    f.inflight.acknowledge(T0, record.offset, AcknowledgeType.ACCEPT)
    f.take_acknowledgements()
    f.step(fetch=True)  # node 1 is dead: the fetch carrying the acknowledgement gets no answer
    f.step(fetch=False)
    outcome = f.take_outcomes()
    assert T0 in outcome and outcome[T0] is not None, "an acknowledgement that got no answer is not a success"
    for _ in range(5):  # past the retry backoff: Metadata again, which names node 2
        clock.advance(1.0)
        f.step(fetch=True)
    assert script.metadata_asked >= 2
    assert script.nodes[-1] == 2, f"still fetching from the dead leader: {script.nodes}"


def test_an_acknowledgement_without_a_topic_id_fails_rather_than_reads_as_sent() -> None:
    script = Script()
    script.fetch_answers = [fetched(0, 2)]
    f = fetcher(script, mode="explicit")
    f.step(fetch=True)
    f.step(fetch=True)
    (first, _second) = f.hand_out(2)[:2]
    f.inflight.acknowledge(T0, first.offset, AcknowledgeType.ACCEPT)
    f.take_acknowledgements()
    f._leaders.clear()  # as if the partition's topic id were lost
    f.step(fetch=False)
    outcome = f.take_outcomes()
    assert T0 in outcome and outcome[T0] is not None
