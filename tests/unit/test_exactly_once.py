"""``producer.send_offsets_to_transaction(offsets, consumer.group_metadata())`` with kafka-python's
``KafkaProducer``, as written, ``offsets`` in kgroup's types (KIP-447; docs/exactly-once.md).

No broker: kafka-python's own ``TransactionManager`` and its AddOffsetsToTxn and TxnOffsetCommit
handlers, fed the broker's answers by hand, and ``Consumer.group_metadata()`` on the simulator
(the real consumer, virtual time) under both group protocols.
"""

from __future__ import annotations

from typing import Any

import pytest
from kafka.errors import CommitFailedError
from kafka.producer.transaction_manager import (
    AddOffsetsToTxnHandler,
    TransactionManager,
    TransactionState,
    TxnOffsetCommitHandler,
)
from kafka.protocol.producer.transaction import AddOffsetsToTxnResponse, TxnOffsetCommitRequest, TxnOffsetCommitResponse
from kafka.structs import ConsumerGroupMetadata
from kafka.structs import MemberState as KafkaMemberState
from kafka.structs import OffsetAndMetadata as KafkaOffsetAndMetadata
from kafka.structs import TopicPartition as KafkaTopicPartition

import kgroup
from kgroup._error_codes import ILLEGAL_GENERATION, NONE
from kgroup._io.kafka_transactions import consumer_group_metadata
from kgroup.config import ConsumerConfig
from kgroup.testing.simulation import SimulatedGroup
from kgroup.testing.simulation._group import _Member
from kgroup.types import OffsetAndMetadata, TopicPartition

TOPIC = "orders"


# ---------------------------------------------------------------- the offsets, in kgroup's types
def test_a_topic_partition_equals_and_hashes_as_kafka_pythons() -> None:
    tp, ktp = TopicPartition("orders", 3), KafkaTopicPartition("orders", 3)
    assert tp == ktp and ktp == tp and hash(tp) == hash(ktp) and tp == ("orders", 3)
    assert tp != KafkaTopicPartition("orders", 4) and tp != ("orders",) and tp != "orders-3"
    # a dict keyed by kgroup's partitions answers kafka-python's keys, and the other way round
    assert {tp: 1}[ktp] == 1 and {ktp: 1}[tp] == 1
    assert len({tp, ktp, TopicPartition("orders", 3)}) == 1
    # still kgroup's value: frozen, ordered, printed as before
    assert sorted([TopicPartition("b", 0), TopicPartition("a", 2), TopicPartition("a", 1)]) == [
        TopicPartition("a", 1), TopicPartition("a", 2), TopicPartition("b", 0)]
    assert str(tp) == "orders-3" and repr(tp) == "TopicPartition(topic='orders', partition=3)"


def test_an_unknown_leader_epoch_is_minus_one_as_on_the_wire() -> None:
    assert OffsetAndMetadata(5).leader_epoch == -1
    assert OffsetAndMetadata(5, "", None) == OffsetAndMetadata(5) == OffsetAndMetadata(5, "", -1)
    assert OffsetAndMetadata(5, "m", 7).leader_epoch == 7
    # kafka-python's own value spells "unknown" the same way
    assert KafkaOffsetAndMetadata(5).leader_epoch == OffsetAndMetadata(5).leader_epoch


def _manager() -> TransactionManager:
    """kafka-python's transaction manager in a transaction (what ``begin_transaction()`` leaves)."""
    manager = TransactionManager(transactional_id="eos-1", transaction_timeout_ms=60000)
    manager.producer_id_and_epoch = type(manager.producer_id_and_epoch)(4000, 2)
    manager._current_state = TransactionState.IN_TRANSACTION
    return manager


def _response(cls: Any, version: int, **fields: Any) -> Any:
    """A response as kafka-python decodes it off the wire (its handlers iterate versioned values)."""
    return cls.decode(bytes(cls(**fields).encode(version=version)), version=version)


def _txn_offset_commit_response(code: int, offsets: dict[TopicPartition, OffsetAndMetadata]) -> Any:
    topic_cls = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
    partition_cls = topic_cls.TxnOffsetCommitResponsePartition
    return _response(
        TxnOffsetCommitResponse, 3, throttle_time_ms=0,
        topics=[topic_cls(name=TOPIC, partitions=[partition_cls(partition_index=tp.partition, error_code=code)
                                                   for tp in offsets])],
    )


OFFSETS = {TopicPartition(TOPIC, 0): OffsetAndMetadata(42), TopicPartition(TOPIC, 1): OffsetAndMetadata(7, "x", 3)}
META = consumer_group_metadata("billing", 5, "member-1", "pod-0", "STABLE")


def test_send_offsets_to_transaction_takes_kgroups_offsets_and_group_metadata() -> None:
    """The call the issue names, up to the TxnOffsetCommit on the wire, and its success."""
    manager = _manager()
    result = manager.send_offsets_to_transaction(dict(OFFSETS), META)  # no TypeError
    add_offsets = manager._pending_requests[0][-1]
    assert isinstance(add_offsets, AddOffsetsToTxnHandler) and add_offsets.consumer_group_id == "billing"

    add_offsets.handle_response(_response(AddOffsetsToTxnResponse, 3, throttle_time_ms=0, error_code=NONE))
    commit = next(entry[-1] for entry in manager._pending_requests if isinstance(entry[-1], TxnOffsetCommitHandler))
    # the TxnOffsetCommit v3 on the wire: the member's identity (KIP-447) and the offsets, epoch -1 unknown
    sent = TxnOffsetCommitRequest.decode(bytes(commit.request.encode(version=3)), version=3)
    assert (sent.group_id, sent.generation_id, sent.member_id, sent.group_instance_id) == (
        "billing", 5, "member-1", "pod-0")
    assert (sent.transactional_id, sent.producer_id, sent.producer_epoch) == ("eos-1", 4000, 2)
    [topic] = sent.topics
    assert topic.name == TOPIC and [
        (p.partition_index, p.committed_offset, p.committed_leader_epoch, p.committed_metadata)
        for p in topic.partitions] == [(0, 42, -1, ""), (1, 7, 3, "x")]

    # the coordinator took them: kafka-python drops each pending offset by its own TopicPartition
    commit.handle_response(_txn_offset_commit_response(NONE, OFFSETS))
    assert manager._pending_txn_offset_commits == {}
    assert result.is_done and result.succeeded


def test_a_fenced_generation_fails_the_offsets_and_the_transaction_aborts() -> None:
    """ILLEGAL_GENERATION: kafka-python's CommitFailedError, an abortable error (Java's handler)."""
    manager = _manager()
    result = manager.send_offsets_to_transaction(dict(OFFSETS), META)
    manager._pending_requests[0][-1].handle_response(
        _response(AddOffsetsToTxnResponse, 3, throttle_time_ms=0, error_code=NONE))
    commit = next(entry[-1] for entry in manager._pending_requests if isinstance(entry[-1], TxnOffsetCommitHandler))
    commit.handle_response(_txn_offset_commit_response(ILLEGAL_GENERATION, OFFSETS))
    assert result.is_done and isinstance(result.exception, CommitFailedError)
    assert manager.has_abortable_error() and not manager.has_fatal_error()


def test_consumer_group_metadata_is_kafka_pythons_value() -> None:
    assert isinstance(META, ConsumerGroupMetadata)
    assert ConsumerGroupMetadata("billing", 5, "member-1", "pod-0", KafkaMemberState.STABLE) == META
    assert consumer_group_metadata("g", -1, "", None, "UNJOINED").state == KafkaMemberState.UNJOINED
    assert consumer_group_metadata("g", 3, "m", None, "JOINING").state == KafkaMemberState.REBALANCING


# ---------------------------------------------------------------- Consumer.group_metadata()
def _poll_forever(consumer: kgroup.Consumer, running: Any) -> None:
    consumer.subscribe([TOPIC])
    while running():
        consumer.poll(100)
    consumer.close()


def _add(group: SimulatedGroup, name: str, **config: Any) -> kgroup.Consumer:
    """A member polling all along, with Kafka's timers (the consumer protocol's are the coordinator's)."""
    settings = ConsumerConfig(bootstrap_servers="simulated:9092", group_id=group.group_id, client_id=name,
                              auto_offset_reset="earliest", **config)
    member = _Member(group, name, _poll_forever, settings, {})
    group.members[name] = member
    return member.consumer


@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
def test_group_metadata_is_the_members_generation_or_epoch(group_protocol: str) -> None:
    group = SimulatedGroup({TOPIC: 4}, seed=11)
    if group_protocol == "consumer":
        from kgroup.testing.coordinator import ConsumerGroupConfig, CoordinatorConfig
        from kgroup.testing.simulation._cluster import SimCluster

        group.cluster = SimCluster(
            group.scheduler, group.rng, {TOPIC: 4}, CoordinatorConfig(), group._trace,
            consumer_group_config=ConsumerGroupConfig(session_timeout_ms=10000, heartbeat_interval_ms=1000),
        )
    consumer = _add(group, "a", group_protocol=group_protocol, group_instance_id="pod-a")
    # before the member joined: Java's ConsumerGroupMetadata of a new consumer
    before = consumer.group_metadata()
    assert isinstance(before, ConsumerGroupMetadata)
    assert (before.group_id, before.generation_id, before.member_id, before.group_instance_id) == (
        group.group_id, -1, "", "pod-a")
    assert group.run_until(lambda: len(consumer.assignment()) == 4, 30)
    meta = consumer.group_metadata()
    snap = consumer._snapshot()
    assert snap is not None and meta.generation_id == snap.generation.generation_id > 0  # the epoch, under KIP-848
    assert meta.member_id == snap.generation.member_id != "" and meta.group_instance_id == "pod-a"
    assert meta.state == KafkaMemberState.STABLE

    # a second member: a new generation (classic) or epoch (consumer), and group_metadata() follows it
    b = _add(group, "b", group_protocol=group_protocol)
    assert group.run_until(lambda: len(consumer.assignment()) == 2 and len(b.assignment()) == 2, 60)
    assert group.run_until(lambda: consumer.group_metadata().generation_id > meta.generation_id, 30)
    group.close()


def test_group_metadata_keeps_the_generation_the_member_lost() -> None:
    """A member whose generation was reset reports the one it held, which the coordinator fences,
    not -1 (no member: a TxnOffsetCommit the coordinator would take unchecked)."""
    group = SimulatedGroup({TOPIC: 2}, seed=3)
    stalled = []

    def app(consumer: kgroup.Consumer, running: Any) -> None:
        consumer.subscribe([TOPIC])
        while running():
            consumer.poll(100)
            if len(consumer.assignment()) == 2 and not stalled:
                stalled.append(consumer.group_metadata())
                consumer._clock.sleep(8.0)  # virtual time: past max_poll_interval_ms, no poll
        consumer.close()

    consumer = group.add_member("a", app, max_poll_interval_ms=5000, session_timeout_ms=6000,
                                 heartbeat_interval_ms=2000)
    assert group.run_until(lambda: bool(stalled), 30)
    held = stalled[0]
    # the poll timer ran out: the member left the group and its generation is gone
    assert group.run_until(lambda: not consumer._snapshot().generation.is_valid(), 8)  # type: ignore[union-attr]
    now = consumer.group_metadata()
    assert (now.generation_id, now.member_id) == (held.generation_id, held.member_id) and now.generation_id > 0
    # polling again rejoins: a new generation
    assert group.run_until(lambda: consumer.group_metadata().generation_id > held.generation_id, 60)
    group.close()


def test_the_asyncio_consumer_gives_the_same_group_metadata() -> None:
    """``kgroup.aio.Consumer.group_metadata()``: the wrapped consumer's, kafka-python's value."""
    from kgroup import aio

    group = SimulatedGroup({TOPIC: 2}, seed=5)
    seen: list[Any] = []

    async def app(consumer: aio.Consumer[bytes, bytes], running: Any) -> None:
        seen.append(consumer.group_metadata())  # before joining
        await consumer.subscribe([TOPIC])
        while running():
            await consumer.poll(100)
            if len(consumer.assignment()) == 2 and len(seen) == 1:
                seen.append(consumer.group_metadata())
        await consumer.close()

    group.add_member("a", app)
    assert group.run_until(lambda: len(seen) == 2, 30)
    before, joined = seen
    assert isinstance(before, ConsumerGroupMetadata) and isinstance(joined, ConsumerGroupMetadata)
    assert (before.generation_id, before.member_id) == (-1, "")
    assert joined.generation_id > 0 and joined.member_id and joined.group_id == group.group_id
    group.close()


def test_group_metadata_under_assign_is_no_member_even_after_a_subscription() -> None:
    """``assign()`` after ``unsubscribe()``: no membership, generation -1 and no member id (the
    coordinator takes the TxnOffsetCommit as a simple consumer's), not the generation left."""
    group = SimulatedGroup({TOPIC: 2}, seed=7)
    seen: list[Any] = []

    def app(consumer: kgroup.Consumer, running: Any) -> None:
        consumer.subscribe([TOPIC])
        while running() and len(consumer.assignment()) < 2:
            consumer.poll(100)
        seen.append(consumer.group_metadata())
        consumer.unsubscribe()
        consumer.assign([TopicPartition(TOPIC, 0)])
        consumer.poll(100)
        seen.append(consumer.group_metadata())
        while running():
            consumer.poll(100)
        consumer.close()

    group.add_member("a", app)
    assert group.run_until(lambda: len(seen) == 2, 60)
    joined, assigned = seen
    assert joined.generation_id > 0 and joined.member_id
    assert (assigned.generation_id, assigned.member_id) == (-1, "")
    group.close()
