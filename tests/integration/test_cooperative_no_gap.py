"""KIP-429: under cooperative-sticky, partitions that do not move keep being consumed during a
rebalance, and only the partitions that move are revoked.

Three kgroup members on ``assignors=("cooperative-sticky",)`` consume 8 partitions while a
producer writes one record to every partition each 100 ms. The group scales out to four
members, then back in to three. Through ``kafka_cluster``, with every SyncGroup held
``SYNC_DELAY_MS`` by the proxy (a slow coordinator, as in a large group), so that each
rebalance lasts well over a second (two rounds for the scale-out: the revoking one, then the
one that hands the moved partitions over).

Checked from timestamps, for every partition whose owner did not change: the longest gap
between consecutive records handed out during the rebalance (from the coordinator's first
``rebalance_started`` to its last ``group_stable``, the window's edges included) stays below
``MAX_GAP_S`` = 1 s, while the rebalance itself took longer than that. Under eager the same
partitions would be revoked and stopped for the whole rebalance. And ``on_partitions_revoked``
is called only with partitions that moved to another member (the scale-in revokes nothing
from the members that stay).

On Tansu only (``[tansu]``): the check needs a rebalance longer than ``MAX_GAP_S``, which the
proxy guarantees by holding SyncGroup; on Apache Kafka's own coordinator a scale-in can complete
in under a second (measured: 0.997 s), too fast for a gap to tell cooperative from eager. Kafka's
cooperative rebalances are checked by ``test_interop.py`` and ``test_migration.py`` there
(members revoke only what moves) and by ``test_java_interop.py``.
"""

from __future__ import annotations

import pytest

from tests.integration.groupcheck import (
    ContinuousProducer,
    KgroupSide,
    consumed_offsets,
    consumed_outside_ownership,
    consumption_gaps,
    describe,
    overlaps,
    rebalance_starts,
    settled,
    stable_times,
)
from tests.integration.harness import EventLog, Member, wait_until

pytestmark = pytest.mark.broker_kinds("tansu")

PARTITIONS = 8
ST = 6000
HB = 1000
MPI = 30000
SETTLE_S = 45.0
INTERVAL_S = 0.1  # one record per partition every 100 ms
SYNC_DELAY_MS = 1500
MAX_GAP_S = 1.0


def owners(sides: list[KgroupSide]) -> dict[int, str]:
    return {p: s.name for s in sides for p in s.owned()}


def check_rebalance(cluster, group, sides, before, after, since, what) -> tuple[float, float, float]:
    """The window of the rebalance that started after ``since``; assert the unmoved partitions'
    gaps and the revocations. Returns (window length, worst unmoved gap, worst baseline gap)."""
    starts = [t for t in rebalance_starts(cluster, group) if t >= since]
    assert starts, f"{what}: no rebalance started"
    window = (starts[0], stable_times(cluster, group)[-1])
    length = window[1] - window[0]
    assert length > MAX_GAP_S, f"{what}: the rebalance took only {length:.3f} s; the check would be vacuous"

    moved = {p for p in range(PARTITIONS) if before.get(p) != after.get(p)}
    unmoved = {p for p in range(PARTITIONS) if before.get(p) == after.get(p)}
    assert unmoved, f"{what}: everything moved"
    by_name = {s.name: s for s in sides}
    worst = baseline = 0.0
    for p in sorted(unmoved):
        times = [t for t, q, _ in by_name[after[p]].consumed() if q == p]
        gap = consumption_gaps(times, *window)
        assert gap < MAX_GAP_S, (
            f"{what}: partition {p} (stayed with {after[p]}) had a {gap:.3f} s gap during the "
            f"{length:.3f} s rebalance\n{describe(sides)}"
        )
        worst = max(worst, gap)
        baseline = max(baseline, consumption_gaps(times, since - 2.0, since))
    # revoked only what moved away from that member
    for s in sides:
        revoked = {p for c in s.changes() if c.kind == "revoked" and c.t >= since for p in c.partitions}
        lost_by_it = {p for p in moved if before.get(p) == s.name}
        assert revoked <= lost_by_it, f"{what}: {s.name} revoked {sorted(revoked)}, moved away {sorted(lost_by_it)}"
    return length, worst, baseline


def test_cooperative_scale_out_and_in_keep_unmoved_partitions_flowing(
    kafka_cluster, kafka_bootstrap, topic_factory, group_id_factory, sides
):
    topic, group = topic_factory(PARTITIONS), group_id_factory()
    log = EventLog()

    def launch(name: str) -> KgroupSide:
        member = Member(
            name, kafka_cluster.bootstrap_servers, group, [topic], log,
            assignors=("cooperative-sticky",), session_timeout_ms=ST, heartbeat_interval_ms=HB,
            max_poll_interval_ms=MPI, fetch_max_wait_ms=100,
        )
        side = KgroupSide(member.start(), log, topic)
        sides.append(side)
        return side

    producer = ContinuousProducer(kafka_bootstrap, topic, PARTITIONS, interval_s=INTERVAL_S).start()
    try:
        three = [launch(f"c{i}") for i in (1, 2, 3)]
        wait_until(lambda: settled(kafka_cluster, group, three, PARTITIONS), SETTLE_S, f"a split: {three}")
        # steady state: every partition flowing for a while before the rebalance
        mark = max(t for s in three for t, _, _ in s.consumed()) if any(s.consumed() for s in three) else 0.0
        wait_until(
            lambda: all(
                sum(1 for s in three for t, q, _ in s.consumed() if q == p and t > mark) >= 20
                for p in range(PARTITIONS)
            ),
            SETTLE_S, "every partition to be consumed steadily",
        )
        kafka_cluster.faults.delay(api="SyncGroup", ms=SYNC_DELAY_MS)

        before = owners(three)
        since = kafka_cluster.call(lambda m: m._now_ms()) / 1000
        fourth = launch("c4")
        four = [*three, fourth]
        wait_until(lambda: settled(kafka_cluster, group, four, PARTITIONS), SETTLE_S, f"a split: {four}")
        after = owners(four)
        out = check_rebalance(kafka_cluster, group, four, before, after, since, "scale-out 3->4")
        assert set(fourth.owned()) == {p for p in after if before[p] != after[p]}

        before = after
        since = kafka_cluster.call(lambda m: m._now_ms()) / 1000
        fourth.stop()
        wait_until(lambda: settled(kafka_cluster, group, three, PARTITIONS), SETTLE_S, f"a split: {three}")
        after = owners(three)
        inn = check_rebalance(kafka_cluster, group, three, before, after, since, "scale-in 4->3")
        for s in three:  # the members that stay revoke nothing on a scale-in
            assert not [c for c in s.changes() if c.kind == "revoked" and c.t >= since], describe(sides)
    finally:
        produced = producer.stop()

    wait_until(lambda: not set(produced) - set(consumed_offsets(sides)), SETTLE_S, "every record to be consumed")
    assert overlaps(sides) == [], describe(sides)
    for s in sides:
        assert consumed_outside_ownership(s) == [], describe(sides)
    print(
        f"scale-out: rebalance {out[0]:.3f} s, worst unmoved gap {out[1]:.3f} s (baseline {out[2]:.3f} s); "
        f"scale-in: rebalance {inn[0]:.3f} s, worst unmoved gap {inn[1]:.3f} s (baseline {inn[2]:.3f} s)"
    )
