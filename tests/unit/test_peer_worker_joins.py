"""The kafka-python peers' guard against a dropped rebalance (``tests.peers.kafka_python``).

kafka-python 3.0.12 loses a join attempt that finished between two polls: it starts a new
JoinGroup when the attempt it kept is done, even a successful one, and skips the join loop when
``need_rejoin()`` turned false meanwhile. The guard makes a successful attempt read as still
running and a pending attempt count as a reason to rejoin (Java's ``rejoinNeededOrPending``).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import pytest
from kafka.coordinator.base import BaseCoordinator
from kafka.coordinator.consumer import ConsumerCoordinator
from kafka.errors import RebalanceInProgressError
from kafka.future import Future

from tests.peers.kafka_python import keep_finished_joins


@pytest.fixture
def guarded() -> Iterator[ConsumerCoordinator]:
    """A bare (never initialised) consumer coordinator with the guard installed (removed afterwards)."""
    assert "_join_task" not in BaseCoordinator.__dict__
    original_need_rejoin = ConsumerCoordinator.need_rejoin
    undo = keep_finished_joins()
    try:
        yield ConsumerCoordinator.__new__(ConsumerCoordinator)
    finally:
        undo()
    assert "_join_task" not in BaseCoordinator.__dict__
    assert ConsumerCoordinator.need_rejoin is original_need_rejoin


def test_kafka_python_still_replaces_a_join_task_that_is_done():
    """The race the guard answers: if kafka-python changes this check, look at the guard again."""
    source = inspect.getsource(BaseCoordinator.join_group_async)
    assert "self._join_task is None or self._join_task.is_done" in source
    assert "while self.need_rejoin():" in source
    assert "self.rejoining = False" in source  # cleared only once the result is taken


def test_a_successful_join_reads_as_running_and_hands_out_its_assignment(guarded):
    guarded._join_task = Future().success(b"assignment")
    task = guarded._join_task
    assert task.is_done is False  # the join loop awaits it instead of sending a new JoinGroup
    got: list[bytes] = []
    task.add_callback(got.append)
    assert got == [b"assignment"]


def test_a_failed_join_is_left_to_be_replaced(guarded):
    failed = Future().failure(RebalanceInProgressError())
    guarded._join_task = failed
    assert guarded._join_task is failed and failed.is_done


def test_a_join_in_flight_and_none_are_passed_through(guarded):
    running = Future()
    guarded._join_task = running
    assert guarded._join_task is running
    guarded._join_task = None
    assert guarded._join_task is None


def test_a_join_attempt_in_progress_counts_as_a_reason_to_rejoin(guarded):
    """The leader's case: its new assignment makes the metadata check false before the attempt's
    result is taken; the pending attempt keeps the join loop running."""
    guarded.rejoining = True
    assert guarded.need_rejoin() is True
    guarded.rejoining = False
    guarded._subscription = _NotAutoAssigned()
    assert guarded.need_rejoin() is False  # otherwise kafka-python's own answer


class _NotAutoAssigned:
    def partitions_auto_assigned(self) -> bool:
        return False
