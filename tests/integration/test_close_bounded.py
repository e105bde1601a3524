"""close() while the member's JoinGroup is parked at the coordinator returns at once, not at its timeout.

On Apache Kafka: member ``a`` owns the partitions and its application stalls (no poll), so the
rebalance that ``b``'s arrival starts waits for ``a`` (up to its rebalance timeout,
``max_poll_interval_ms``) and ``b``'s JoinGroup stays parked. A broker reads one request per
connection at a time, so a LeaveGroup behind that JoinGroup would wait as long, and ``close()``
would give up at its timeout; kgroup sends it over the broker's other connection, and the
coordinator takes ``b`` out of the pending join. (Tansu answers every JoinGroup after a fixed
delay instead of parking it, so there is nothing to show there.)
"""

from __future__ import annotations

import time

import pytest

import kgroup
from kgroup.admin import GroupAdmin

from .harness import EventLog, Member, all_partitions, wait_until


@pytest.mark.broker_kinds("apache-kafka")
def test_close_during_a_parked_join_group_returns_promptly(kafka_bootstrap, topic_factory, group_id_factory):
    topic = topic_factory(partitions=2)
    group = group_id_factory("parked")
    log = EventLog()
    a = Member("a", kafka_bootstrap, group, [topic], log, max_poll_interval_ms=60000).start()
    wait_until(lambda: a.assignment() == all_partitions(topic, 2), 60, "a's assignment")
    a.stall.set()  # a's application stops polling: it cannot rejoin before max_poll_interval_ms
    b = Member("b", kafka_bootstrap, group, [topic], log).start()
    with GroupAdmin.connect(kafka_bootstrap) as admin:
        # b's JoinGroup (with its member id) put the group into PreparingRebalance: it is parked
        wait_until(
            lambda: admin.describe_group(group).state == "PreparingRebalance"
            and b.consumer.member_state() is kgroup.MemberState.JOINING,
            30, "b's JoinGroup parked at the coordinator",
        )
    started = time.monotonic()
    b.stop(timeout_s=40)  # its poll loop returns, then close() with the default 30 s
    took = time.monotonic() - started
    print(f"close() during a parked JoinGroup took {took:.2f} s")
    assert took < 5.0, took
    a.stall.clear()
    # b is gone from the group: a alone completes the rebalance and keeps everything
    wait_until(lambda: a.assignment() == all_partitions(topic, 2) and not a.stall.is_set(), 60, "a alone")
    a.stop()
    assert not a.errors and not b.errors, (a.errors, b.errors)
