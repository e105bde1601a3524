"""Regression tests for the consumer defects of the correctness review, in the simulator.

Each test drives production ``kgroup.Consumer`` code in a ``SimulatedGroup`` (virtual time,
Kafka's coordinator model) and fails on the behaviour before its fix. D1 and D2 are also shown
by the mutation tests in ``test_simulation.py``; D5, D7's truncation, D8 and D9 have unit tests
on the machine as well (``tests/unit``).
"""

from __future__ import annotations

import pytest

import kgroup
from kgroup._driver.commits import OffsetsClient
from kgroup.errors import (
    Api,
    CommitFailedError,
    CoordinatorUnavailable,
    GroupThreadCrashed,
    RebalanceInProgressError,
    WakeupError,
)
from kgroup.membership.machine import GroupMachine
from kgroup.testing.simulation import SimulatedGroup
from kgroup.types import Generation, TopicPartition

FAST = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000}


def _consume(topics, listener=None, log=None, timeout_ms=100):
    def app(consumer: kgroup.Consumer, running) -> None:
        consumer.subscribe(topics, listener=listener)
        while running():
            try:
                records = consumer.poll(timeout_ms)
            except kgroup.KGroupError as exc:
                if log is not None:
                    log.append(exc)
                if isinstance(exc, (kgroup.FatalGroupError, GroupThreadCrashed)):
                    return
                continue
            if log is not None:
                log.extend(records)
        consumer.close()

    return app


def _stable(group: SimulatedGroup, *consumers: kgroup.Consumer, partitions: int) -> None:
    assert group.run_until(
        lambda: sum(len(c.assignment()) for c in consumers) == partitions
        and all(c.member_state() is kgroup.MemberState.STABLE for c in consumers),
        timeout_s=30.0,
    )


# ------------------------------------------------------------------------------ D3, D4, D10a
def test_d4_blocking_calls_honour_their_timeouts_with_the_coordinator_unreachable():
    group = SimulatedGroup({"t": 2}, seed=1)
    results: dict[str, object] = {}

    def app(consumer: kgroup.Consumer, running) -> None:
        consumer.subscribe(["t"])
        while len(consumer.assignment()) < 2:
            consumer.poll(100)
        group.black_hole(60.0)
        clock = consumer._clock
        start = clock.monotonic()
        consumer.poll(100)
        results["poll"] = clock.monotonic() - start
        start = clock.monotonic()
        with pytest.raises(CoordinatorUnavailable):
            consumer.commit({TopicPartition("t", 0): 0}, timeout_ms=500)
        results["commit"] = clock.monotonic() - start
        start = clock.monotonic()
        with pytest.raises(CoordinatorUnavailable):
            consumer.committed([TopicPartition("t", 0)], timeout_ms=700)
        results["committed"] = clock.monotonic() - start
        start = clock.monotonic()
        consumer.close(timeout_ms=2000)
        results["close"] = clock.monotonic() - start

    group.add_member("a", app, enable_auto_commit=False, request_timeout_ms=30000, **FAST)
    group.run_until(lambda: "close" in results, timeout_s=120.0)
    # before the fix: poll blocked default_api_timeout_ms in OffsetFetch, commit waited a whole
    # request timeout per attempt, close waited for queued commits without a bound
    assert results["poll"] <= 0.2
    assert results["commit"] <= 0.6
    assert results["committed"] <= 0.8
    assert results["close"] <= 2.1
    group.check()


def test_d4_wakeup_interrupts_a_blocked_commit_and_poll():
    group = SimulatedGroup({"t": 1}, seed=2)
    outcome: list[str] = []

    def app(consumer: kgroup.Consumer, running) -> None:
        consumer.subscribe(["t"])
        while not consumer.assignment():
            consumer.poll(100)
        group.black_hole(30.0)
        group.call_at(group.now + 0.2, consumer.wakeup)
        clock = consumer._clock
        start = clock.monotonic()
        try:
            consumer.commit({TopicPartition("t", 0): 0}, timeout_ms=10000)
        except WakeupError:
            outcome.append(f"commit woken after {clock.monotonic() - start:.2f}")
        group.call_at(group.now + 0.2, consumer.wakeup)
        start = clock.monotonic()
        try:
            consumer.poll(10000)
        except WakeupError:
            outcome.append(f"poll woken after {clock.monotonic() - start:.2f}")
        consumer.close(timeout_ms=1000)

    group.add_member("a", app, enable_auto_commit=False, **FAST)
    group.run_until(lambda: len(outcome) == 2, timeout_s=60.0)
    assert outcome == ["commit woken after 0.20", "poll woken after 0.20"]


def test_d3_auto_commit_is_never_queued_while_the_coordinator_is_unreachable():
    group = SimulatedGroup({"t": 2}, seed=3)
    group.produce("t", 50)
    pending: list[int] = []
    original = OffsetsClient.commit_async

    def counting(self, offsets):
        future = original(self, offsets)
        pending.append(self.pending_async())
        return future

    OffsetsClient.commit_async = counting  # type: ignore[method-assign]
    try:
        consumer = group.add_member(
            "a", _consume(["t"]), enable_auto_commit=True, auto_commit_interval_ms=100, **FAST
        )
        _stable(group, consumer, partitions=2)
        group.run_for(2.0)  # positions known, records consumed: auto-commits flow
        flowing = len(pending)
        group.black_hole(10.0)
        group.run_for(10.0)
    finally:
        OffsetsClient.commit_async = original  # type: ignore[method-assign]
    # before the fix: one job queued per interval, each retrying for default_api_timeout_ms
    assert flowing > 5, "auto-commit never ran"
    assert max(pending) <= 1
    group.check()


def test_d10a_close_after_an_unconsumed_wakeup_does_not_spin():
    group = SimulatedGroup({"t": 1}, seed=4)
    switches: list[int] = []

    def app(consumer: kgroup.Consumer, running) -> None:
        consumer.subscribe(["t"])
        while not consumer.assignment():
            consumer.poll(100)
        consumer.wakeup()  # never consumed by a poll()
        group.black_hole(5.0)  # the LeaveGroup goes unanswered: close waits its timeout
        before = group.scheduler.switches
        consumer.close(timeout_ms=3000)
        switches.append(group.scheduler.switches - before)

    group.add_member("a", app, enable_auto_commit=False, **FAST)
    group.run_until(lambda: bool(switches), timeout_s=30.0)
    assert switches[0] < 50  # before the fix: a busy loop until the timeout


def test_a_pending_wakeup_does_not_fail_the_commit_of_close_s_revocation():
    """A SIGTERM handler's ``wakeup()`` that no ``poll()`` consumed made the commit inside
    ``on_partitions_revoked`` during ``close()`` raise WakeupError, and ``close()`` failed
    (``examples/service.py`` in CI). Java's ``ConsumerCoordinator.close`` disables wakeups first."""
    group = SimulatedGroup({"t": 1}, seed=4)
    outcome: list[object] = []

    class CommitOnRevoke(kgroup.RebalanceListener):
        def __init__(self) -> None:
            self.consumer: kgroup.Consumer | None = None

        def on_partitions_revoked(self, partitions) -> None:
            assert self.consumer is not None
            self.consumer.commit()

    listener = CommitOnRevoke()

    def app(consumer: kgroup.Consumer, running) -> None:
        listener.consumer = consumer
        consumer.subscribe(["t"], listener=listener)
        while not consumer.assignment():
            consumer.poll(100)
        consumer.wakeup()  # never consumed by a poll()
        try:
            consumer.close(timeout_ms=3000)
            outcome.append("closed")
        except kgroup.KGroupError as exc:
            outcome.append(exc)

    group.add_member("a", app, enable_auto_commit=False, **FAST)
    group.run_until(lambda: bool(outcome), timeout_s=30.0)
    assert outcome == ["closed"]


# ------------------------------------------------------------------------------ D6, D7
def test_d6_a_group_with_mixed_subscriptions_does_not_rebalance_without_a_change():
    group = SimulatedGroup({"a": 2, "b": 2}, seed=5)
    leader = group.add_member("leader", _consume(["a"]), metadata_max_age_ms=1000, **FAST)
    group.run_for(1.0)
    other = group.add_member("other", _consume(["a", "b"]), metadata_max_age_ms=1000, **FAST)
    _stable(group, leader, other, partitions=4)
    before = sum(1 for e in group.cluster.model.events if e.kind == "rebalance_started")
    group.run_for(15.0)
    after = sum(1 for e in group.cluster.model.events if e.kind == "rebalance_started")
    # before the fix: the leader saw topic "b" as changed at every metadata refresh
    assert after == before
    group.cluster.add_partitions("b", 3)
    assert group.run_until(lambda: TopicPartition("b", 2) in leader.assignment() | other.assignment(), 10.0)
    group.check()


def test_d7_a_subscription_of_1500_topics_still_joins():
    topics = [f"t-{i:04d}-" + "x" * 20 for i in range(1500)]
    group = SimulatedGroup({topics[0]: 2}, seed=6)
    consumer = group.add_member("a", _consume(topics), **FAST)
    # before the fix the reason ("subscription changed to [...]", 38 kB) made Kafka close the
    # connection on every JoinGroup: the member never joined
    assert group.run_until(lambda: len(consumer.assignment()) == 2, timeout_s=30.0)
    group.check()


# ------------------------------------------------------------------------------ D10c, S1, S6
class _Raising(kgroup.RebalanceListener):
    def __init__(self, error: BaseException, callback: str) -> None:
        self.error, self.callback, self.raised = error, callback, 0

    def on_partitions_assigned(self, partitions):
        if self.callback == "assigned" and not self.raised:
            self.raised += 1
            raise self.error

    def on_partitions_revoked(self, partitions):
        if self.callback == "revoked" and not self.raised:
            self.raised += 1
            raise self.error


def test_d10c_close_raises_when_the_revoke_callback_raised():
    group = SimulatedGroup({"t": 1}, seed=7)
    errors: list[BaseException] = []

    def app(consumer: kgroup.Consumer, running) -> None:
        consumer.subscribe(["t"], listener=_Raising(ValueError("boom"), "revoked"))
        while not consumer.assignment():
            consumer.poll(100)
        try:
            consumer.close()
        except kgroup.KGroupError as exc:
            errors.append(exc)

    group.add_member("a", app, **FAST)
    group.run_until(lambda: bool(errors), timeout_s=30.0)
    assert isinstance(errors[0].__cause__, kgroup.ListenerError)
    assert isinstance(errors[0].__cause__.__cause__, ValueError)


def test_s6_a_keyboard_interrupt_in_a_listener_does_not_wedge_the_member():
    group = SimulatedGroup({"t": 2}, seed=8)
    seen: list[object] = []

    def app(consumer: kgroup.Consumer, running) -> None:
        consumer.subscribe(["t"], listener=_Raising(KeyboardInterrupt(), "assigned"))
        while running():
            try:
                consumer.poll(100)
            except KeyboardInterrupt:
                seen.append("interrupted")
        consumer.close()

    consumer = group.add_member("a", app, **FAST)
    group.run_for(3.0)
    other = group.add_member("b", _consume(["t"]), **FAST)
    # before the fix StepCompleted was never posted: the member never rejoined and "b" never
    # got a partition
    _stable(group, consumer, other, partitions=2)
    assert seen == ["interrupted"]
    group.check()


def test_s1_a_crashed_group_thread_poisons_the_consumer(monkeypatch):
    group = SimulatedGroup({"t": 2}, seed=9)
    log: list[object] = []
    consumer = group.add_member("a", _consume(["t"], log=log), **FAST)
    _stable(group, consumer, partitions=2)
    original = GroupMachine.tick

    def broken(self, now):
        if now > 5.0:
            raise RuntimeError("a kgroup bug")
        return original(self, now)

    monkeypatch.setattr(GroupMachine, "tick", broken)
    group.run_for(5.0)
    # before the fix poll() raised once and went on fetching with no heartbeats
    errors = [e for e in log if isinstance(e, BaseException)]
    assert [type(e) for e in errors] == [GroupThreadCrashed]
    assert consumer.assignment() == frozenset()  # reported lost, fetching stopped


# ------------------------------------------------------------------------------ S3, S4
class _Port:
    def __init__(self, generation: Generation, state: kgroup.MemberState) -> None:
        from kgroup.membership.core import MemberSnapshot

        self.snapshot = MemberSnapshot(state, generation, frozenset(), 1, frozenset({"t"}), "i", None)
        self.crashed = None
        self.posted: list[object] = []

    def post(self, event: object) -> None:
        self.posted.append(event)


def _client(port: _Port) -> OffsetsClient:
    import random

    from kgroup._driver.mailbox import Mailbox
    from kgroup.config import ConsumerConfig
    from kgroup.testing import FakeClock

    config = ConsumerConfig(bootstrap_servers="x:1", group_id="g", group_instance_id="i")
    return OffsetsClient(config, None, port, Mailbox(), FakeClock(), random.Random(0))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("code", "name"), [(82, "FENCED_INSTANCE_ID"), (22, "ILLEGAL_GENERATION"), (25, "UNKNOWN_MEMBER_ID")]
)
def test_s3_s4_a_commit_error_of_an_older_generation_while_rejoining_is_retriable(code, name):
    """Java: only an unchanged generation resets or poisons; while rejoining it is
    RebalanceInProgressException, otherwise CommitFailedException (KAFKA-8421)."""
    old = Generation(3, "m-1", "range")
    rejoining = _Port(Generation(4, "m-2", "range"), kgroup.MemberState.JOINING)
    error = _client(rejoining).error_for(Api.OFFSET_COMMIT, code, old)
    assert isinstance(error, RebalanceInProgressError)
    assert rejoining.posted == []  # nothing reset, nothing poisoned
    stable = _Port(Generation(4, "m-2", "range"), kgroup.MemberState.STABLE)
    error = _client(stable).error_for(Api.OFFSET_COMMIT, code, old)
    assert isinstance(error, CommitFailedError)
    assert stable.posted == []
    current = _Port(old, kgroup.MemberState.STABLE)
    error = _client(current).error_for(Api.OFFSET_COMMIT, code, old)
    assert type(error).__name__ in ("FencedInstanceIdError", "CommitFailedError")
    assert len(current.posted) == 1  # the group thread resets or poisons


# ------------------------------------------------------------------------------ D5, D10b
@pytest.mark.parametrize("code", [-1, 69, 9999])
def test_d5_an_unexpected_commit_error_fails_that_commit_only(code):
    """Java OffsetCommitResponseHandler, final else: "Unexpected error in commit"; before the
    fix the consumer was poisoned (FatalGroupError, partitions lost)."""
    port = _Port(Generation(4, "m-2", "range"), kgroup.MemberState.STABLE)
    error = _client(port).error_for(Api.OFFSET_COMMIT, code, port.snapshot.generation)
    assert type(error) is kgroup.BrokerError
    assert "unexpected" in str(error)
    assert port.posted == []  # the group thread is not told: nothing is reset or poisoned


def test_d10b_fetch_errors_are_kgroup_errors():
    """kafka-python's Fetcher errors escaped poll() as kafka.errors.*; now kgroup's types.

    The fetcher raises what ``record_decoder.fetch_error`` makes of kafka-python's errors.
    """
    import kafka.errors as kerrors

    from kgroup._io.record_decoder import fetch_error

    raised = fetch_error(kerrors.OffsetOutOfRangeError({kafka_tp("t", 3): 10}))
    assert isinstance(raised, kgroup.OffsetOutOfRangeError)
    assert raised.topic_partition == TopicPartition("t", 3)
    for error in (kerrors.CorruptRecordError("crc"), kerrors.TopicAuthorizationFailedError({"t"}),
                  kerrors.MessageSizeTooLargeError("big")):
        assert isinstance(fetch_error(error), kgroup.FetchError)


def kafka_tp(topic: str, partition: int):
    from kafka.structs import TopicPartition as KafkaTopicPartition

    return KafkaTopicPartition(topic, partition)


# ------------------------------------------------------------------------------ S5
def test_s5_a_deleted_topic_is_noticed_at_once_not_after_metadata_max_age():
    """Java's Fetcher requests a metadata update on UNKNOWN_TOPIC_OR_PARTITION and the leader
    rejoins; before the fix kgroup's leader waited for metadata_max_age_ms (here 5 minutes)."""
    group = SimulatedGroup({"a": 2, "b": 2}, seed=10)
    group.produce("a", 20)
    group.produce("b", 20)
    members = [group.add_member(n, _consume(["a", "b"]), metadata_max_age_ms=300000, **FAST) for n in "xy"]
    _stable(group, *members, partitions=4)
    group.run_for(2.0)
    group.cluster.delete_topic("b")
    deleted_at = group.now
    assert group.run_until(
        lambda: all(tp.topic == "a" for m in members for tp in m.assignment())
        and sum(len(m.assignment()) for m in members) == 2,
        timeout_s=20.0,
    )
    assert group.now - deleted_at < 10.0
    group.check()
