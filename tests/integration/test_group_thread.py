"""The leader's assignor runs on the group thread, never on the thread that delivers metadata.

The metadata the assignor needs arrives on kafka-python's IO thread (a Metadata response). The
group thread's rule (docs/protocol.md: one owner per piece of state) is that assignors, plan
validation and encoding run on its own thread, so a slow assignor cannot stall heartbeats and
fetches on the IO thread. Two cases: the metadata is already cached when the JoinGroup response
makes this member leader, and it is not (it arrives later, from another thread). Real broker,
real threads.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
import uuid
from typing import Any

import pytest

import kgroup
from kgroup._io.kafka_python import KafkaPythonTransport
from kgroup.assignors import RangeAssignor
from kgroup.membership.states import MemberState

pytestmark = pytest.mark.integration


class _Recording(RangeAssignor):
    """Range, recording the thread (name, ident) each assignment ran on."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[tuple[str, int]] = []

    def assign_partitions(self, partitions, members):  # type: ignore[no-untyped-def]
        self.threads.append((threading.current_thread().name, threading.get_ident()))
        return super().assign_partitions(partitions, members)


class _LateMetadata:
    """A transport whose Metadata answers are held until the member is assigning.

    Each answer is then delivered from a thread of its own, as kafka-python's IO thread
    delivers it: the leader got the JoinGroup response with no metadata cached.
    """

    def __init__(self, inner: KafkaPythonTransport) -> None:
        self._inner = inner
        self.state = lambda: MemberState.UNJOINED
        #: how many answers were delivered while the member was assigning
        self.late = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def describe_topics(self, topics: Any, timeout_ms: int) -> concurrent.futures.Future[Any]:
        answer = self._inner.describe_topics(topics, timeout_ms)
        held: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def deliver() -> None:
            deadline = time.monotonic() + 60
            while self.state() is not MemberState.ASSIGNING and time.monotonic() < deadline:
                time.sleep(0.01)
            if self.state() is MemberState.ASSIGNING:
                self.late += 1
            try:
                held.set_result(answer.result(30))
            except Exception as exc:
                held.set_exception(exc)

        threading.Thread(target=deliver, name="late-metadata", daemon=True).start()
        return held


@pytest.mark.parametrize("metadata", ["cached", "late"])
def test_the_assignor_runs_on_the_group_thread(kafka_bootstrap: str, topic_factory, metadata: str) -> None:
    topic = topic_factory(partitions=3)
    group = f"g-{uuid.uuid4().hex[:8]}"
    assignor = _Recording()
    config = kgroup.ConsumerConfig(
        bootstrap_servers=kafka_bootstrap, group_id=group, session_timeout_ms=6000,
        heartbeat_interval_ms=1000, assignors=(assignor,),
    )
    late: _LateMetadata | None = None
    inner: KafkaPythonTransport | None = None
    if metadata == "late":
        inner = KafkaPythonTransport(config)
        inner.start(30_000)
        late = _LateMetadata(inner)
    consumer = kgroup.Consumer(config, transport=late)
    if late is not None:
        late.state = consumer.member_state
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(consumer.assignment()) < 3:
            consumer.poll(100)
            assert time.monotonic() < deadline, "no assignment within 60 s"
        assert assignor.threads, "the assignor never ran"
        assert {name for name, _ in assignor.threads} == {f"kgroup-{group}"}
        assert consumer._group is not None
        assert consumer._group.assignor_thread == assignor.threads[-1][1]
        if late is not None:
            assert late.late >= 1, "the metadata was not late: the case under test did not happen"
    finally:
        consumer.close()
        if inner is not None:
            inner.close()
