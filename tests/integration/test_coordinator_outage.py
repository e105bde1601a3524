"""A coordinator outage longer than the session timeout costs a member nothing, under both protocols.

One Apache Kafka node of its own (``test_kip848_session_timer.session_broker``, a module-scoped
fixture, so started for this module: the consumer protocol's minimum session timeout lowered to
6 s, 1 s heartbeats), the group's own ``consumer.session.timeout.ms`` set to 6 s. Two kgroup
members (``group_protocol="consumer"``) consume a topic of four partitions that a producer
writes to all along (``test_failover.Producer``), committing after every batch
(``test_failover.Worker``). Once the group is formed and both members know the session timeout
(DescribeConfigs), the node is stopped (SIGTERM), kept down ``DOWN_S`` (10 s, past the session
timeout) and started again on its data. Kafka starts every member's session timer afresh when it
loads the group, so the coordinator still has both members at their epochs.

Checked (docs/kip848.md, "Beyond Java: the session timer"):

* **No rebalance.** No ``on_partitions_revoked``, ``on_partitions_lost`` or
  ``on_partitions_assigned`` after the group formed; each member keeps its member id, its epoch
  and its partitions.
* **Exactly once.** Every record written was handed out, and none twice (no rewind to a
  committed offset, as a loss and rejoin would bring).
* **Nothing handed out in doubt.** No record was handed out between the moment the coordinator
  may have removed a member (the stop's end plus the session timeout: no heartbeat can have
  succeeded after the node went down) and the node's start (no answer before it).

Before, each member gave its partitions up as lost when its session timer ran out with the
coordinator unknown and rejoined: callbacks, a new epoch and records handed out again. The
classic member (its own ``session_timeout_ms`` 6 s, 1 s heartbeats) asks the coordinator found
again with a SyncGroup of its generation, not a Heartbeat: Kafka answers a Heartbeat with no
error while the group loads (docs/protocol.md, "Liveness: the session timer"). Skipped with one line when Java or
the Apache Kafka jars are missing. 36-56 s on the loaded 2-core development machine, the
broker's start included (``-s`` prints the times).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter

import pytest

from kgroup.testing import BrokerHandle

from .harness import EventLog, RecordingListener, all_partitions, wait_until
from .test_failover import PARTITIONS, Producer, Worker, create_replicated_topic
from .test_kip848_session_timer import (  # session_broker: that module's node, shared
    _session_timeout_read,
    _set_group_session_timeout,
    session_broker,  # noqa: F401
)

pytestmark = pytest.mark.broker_kinds("apache-kafka")

ST = 6000  # the group's own session timeout (ms)
DOWN_S = 10.0  # the node stays down this long: past the session timeout
FORM_S = 60.0
RECOVERY_S = 60.0


def _session_timeout_known(worker: Worker) -> bool:
    return _session_timeout_read(worker.consumer) == ST  # what the member learned with DescribeConfigs


def test_a_consumer_protocol_group_rides_out_a_coordinator_restart_longer_than_the_session(
    request: pytest.FixtureRequest
) -> None:
    _rides_out(request, "consumer")


def test_a_classic_group_rides_out_a_coordinator_restart_longer_than_the_session(
    request: pytest.FixtureRequest
) -> None:
    """The classic protocol: past the session timeout with the coordinator gone, each member keeps
    its partitions (held); once the node is back, a SyncGroup of its generation (not a Heartbeat,
    which a loading coordinator answers blindly) confirms it is still in: no rebalance."""
    _rides_out(request, "classic")


def _rides_out(request: pytest.FixtureRequest, group_protocol: str) -> None:
    started = time.monotonic()
    broker: BrokerHandle = request.getfixturevalue("session_broker")
    boot = broker.bootstrap_servers
    topic = f"outage-{uuid.uuid4().hex[:8]}"
    group = f"outage-{uuid.uuid4().hex[:8]}"
    create_replicated_topic(boot, topic, 1)
    _set_group_session_timeout(boot, group, ST)  # the broker's default there is 20 s
    log = EventLog()
    producer = Producer(boot, topic).start()
    workers = []
    for name in ("w1", "w2"):
        timers = {"session_timeout_ms": None, "heartbeat_interval_ms": None} if group_protocol == "consumer" else {
            "session_timeout_ms": ST, "heartbeat_interval_ms": 1000}
        w = Worker(name, boot, group, topic, group_protocol=group_protocol, **timers)
        w.listener = RecordingListener(name, log, lambda w=w: w.consumer)
        workers.append(w.start())

    def describe() -> str:
        return "; ".join(
            f"{w.name} owns {sorted(tp.partition for tp in w.assignment())}, consumed {len(w.consumed)}, "
            f"commits {len(w.commits)}, errors {w.errors[-3:]}, fatal {w.fatal!r}" for w in workers
        ) + f"; callbacks {[(e.member, e.kind, sorted(tp.partition for tp in e.partitions)) for e in log.events]}"

    def split() -> bool:
        owned = [w.assignment() for w in workers]
        return all(owned) and sum(map(len, owned)) == PARTITIONS and frozenset().union(*owned) == all_partitions(
            topic, PARTITIONS)

    try:
        wait_until(split, FORM_S, f"the two members to split the partitions: {describe()}")
        known = _session_timeout_known if group_protocol == "consumer" else (lambda w: True)  # classic: its own
        wait_until(lambda: all(w.commits for w in workers) and all(map(known, workers)),
                   FORM_S, f"both members to commit and to know the session timeout: {describe()}")
        formed_at = time.monotonic()
        callbacks_before = len(log.events)
        identity = {w.name: (w.consumer.group_metadata().member_id, w.consumer.group_metadata().generation_id,
                             w.assignment()) for w in workers}

        (node,) = broker.node_ids
        stop_at = time.monotonic()
        broker.stop_node(node)  # SIGTERM; returns once the JVM exited
        stopped_at = time.monotonic()
        threading.Event().wait(max(0.0, stopped_at + DOWN_S - time.monotonic()))  # the outage itself
        start_at = time.monotonic()
        broker.start_node(node)
        up_at = time.monotonic()

        def consumed_again() -> bool:
            fresh = producer.written_since(up_at)
            seen = {(p, o) for w in workers for _, p, o in list(w.consumed)}
            return {p for (p, o) in fresh if (p, o) in seen} == set(range(PARTITIONS))

        wait_until(consumed_again, RECOVERY_S, f"every partition written and consumed again: {describe()}")
        written = producer.stop()
        expected = {(p, o) for _, p, o in written}
        wait_until(lambda: not expected - {(p, o) for w in workers for _, p, o in list(w.consumed)}, FORM_S,
                   f"every record written to be consumed: {describe()}")
        after = {w.name: (w.consumer.group_metadata().member_id, w.consumer.group_metadata().generation_id,
                          w.assignment()) for w in workers}
        moved = log.events[callbacks_before:]  # before the close's revocations
    finally:
        producer.close()
        for w in workers:
            w.stop()

    assert all(w.fatal is None for w in workers), describe()
    assert moved == [], f"a rebalance callback after the group formed: {moved}"
    assert after == identity, f"member id, epoch or assignment changed: {identity} -> {after}"
    handed_out = Counter((p, o) for w in workers for _, p, o in w.consumed)
    twice = sorted(po for po, n in handed_out.items() if n > 1)
    assert twice == [], f"{len(twice)} records handed out twice, e.g. {twice[:5]}"
    assert not expected - set(handed_out)
    doubt_from = stopped_at + ST / 1000
    in_doubt = sorted((t - stop_at, p, o) for w in workers for t, p, o in w.consumed if doubt_from <= t <= start_at)
    assert in_doubt == [], f"handed out while the coordinator may have removed the member: {in_doubt[:5]}"
    print(f"\nformed after {formed_at - started:.1f} s; stop took {stopped_at - stop_at:.1f} s, down "
          f"{start_at - stopped_at:.1f} s, start took {up_at - start_at:.1f} s; {len(written)} records written, "
          f"each handed out once; member errors: {[e for w in workers for _, e in w.errors][:4]}")
