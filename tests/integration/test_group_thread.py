"""The leader's assignor runs on the group thread, never on kafka-python's IO thread.

The metadata the assignor needs may arrive on the IO thread (a Metadata response); the group
thread's rule is that user-supplied assignors, plan validation and encoding run on its own
thread (docs/protocol.md: one owner per piece of state), so a slow assignor cannot stall
heartbeats and fetches on the IO thread. Real broker, real threads.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

import kgroup
from kgroup.assignors import RangeAssignor

pytestmark = pytest.mark.integration


class _Recording(RangeAssignor):
    """Range, recording the thread each assignment ran on."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[str] = []

    def assign_partitions(self, partitions, members):  # type: ignore[no-untyped-def]
        self.threads.append(threading.current_thread().name)
        return super().assign_partitions(partitions, members)


def test_the_assignor_runs_on_the_group_thread(kafka_bootstrap: str, topic_factory) -> None:
    topic = topic_factory(partitions=3)
    group = f"g-{uuid.uuid4().hex[:8]}"
    assignor = _Recording()
    consumer = kgroup.Consumer(
        bootstrap_servers=kafka_bootstrap, group_id=group, session_timeout_ms=6000,
        heartbeat_interval_ms=1000, assignors=[assignor], metadata_max_age_ms=100,
    )
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(consumer.assignment()) < 3:
            consumer.poll(100)
            assert time.monotonic() < deadline, "no assignment within 60 s"
        assert assignor.threads, "the assignor never ran"
        assert set(assignor.threads) == {f"kgroup-{group}"}
        assert consumer._group is not None
        assert consumer._group.assignor_thread == consumer._group.ident
    finally:
        consumer.close()
