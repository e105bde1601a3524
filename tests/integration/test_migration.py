"""Online migration from eager range to cooperative-sticky (KIP-429's two rolling bounces).

Three kgroup members on ``assignors=("range",)`` are rolled, one at a time (close, restart with
the new configuration), to ``("cooperative-sticky", "range")`` and then to
``("cooperative-sticky",)``, while records are produced to every partition all along.

Which protocols run (Java ``ConsumerCoordinator``: a member's rebalance protocol is the
highest one supported by *every assignor it is configured with*, fixed at construction;
``kgroup.config.select_protocol`` is the same rule; the coordinator picks the *assignor* by
vote among those every member lists, each member voting for its first choice among them):

====================================  ===================  =============================
phase                                 assignor (the vote)  rebalance protocol (clients)
====================================  ===================  =============================
all on ("range",)                     range                EAGER everywhere
roll 1, while a range-only member is  range                EAGER everywhere (a member
left                                                       listing range runs EAGER)
roll 1 done: all on (cs, range)       cooperative-sticky   EAGER everywhere: the group
                                                           runs cooperative-sticky's plan,
                                                           but every member revokes all
roll 2, mixed (cs, range) / (cs,)     cooperative-sticky   EAGER for (cs, range) members,
                                                           COOPERATIVE for (cs,) members
roll 2 done: all on (cs,)             cooperative-sticky   COOPERATIVE everywhere
====================================  ===================  =============================

Checked: no partition is ever owned by two members at once (listener timestamps: per
partition the intervals [assigned, revoked|lost) of different members never overlap), no
member hands out a record of a partition it does not own, every produced record is consumed,
the group never stops for long (each partition is unowned only briefly, during eager
rebalances), the coordinator's chosen protocol per phase as in the table (DescribeGroups each
time the group settles; through the model, every generation too), the eager members revoke
everything on every rebalance and the cooperative ones only what moves.

On Apache Kafka's own coordinator (``[apache-kafka]``) and through the coordinator proxy in
front of the embedded Tansu (``[tansu]``).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kgroup.types import RebalanceProtocol
from tests.integration.groupcheck import (
    ContinuousProducer,
    KgroupSide,
    consumed_offsets,
    consumed_outside_ownership,
    describe,
    generations,
    is_model,
    moved_away,
    overlaps,
    ownership_gaps,
    revocations,
    settled_description,
)
from tests.integration.harness import BOTH, EventLog, Member, wait_until

pytestmark = BOTH

PARTITIONS = 6
ST = 6000
HB = 1000
MPI = 30000
SPLIT_S = 45.0
#: longest a partition may stay unowned during one eager rebalance of the roll (generous:
#: through the proxy a rebalance completes when the last member rejoins, within a heartbeat)
MAX_UNOWNED_S = 10.0
ASSIGNORS = {1: ("range",), 2: ("cooperative-sticky", "range"), 3: ("cooperative-sticky",)}
PROTOCOL = {1: RebalanceProtocol.EAGER, 2: RebalanceProtocol.EAGER, 3: RebalanceProtocol.COOPERATIVE}


def test_rolling_migration_from_range_to_cooperative_sticky_never_shares_a_partition(
    group_coordinator, kafka_bootstrap, topic_factory, group_id_factory, sides, caplog
):
    cluster = group_coordinator
    caplog.set_level(logging.INFO, logger="kgroup.membership.machine")
    topic, group = topic_factory(PARTITIONS), group_id_factory()
    log = EventLog()
    step_of: dict[str, int] = {}
    current: dict[int, KgroupSide] = {}

    def launch(slot: int, step: int) -> None:
        name = f"m{slot}v{step}"
        member = Member(
            name, cluster.bootstrap_servers, group, [topic], log,
            commit_on_revoke=True, commit_each_batch=True, assignors=ASSIGNORS[step],
            session_timeout_ms=ST, heartbeat_interval_ms=HB, max_poll_interval_ms=MPI,
        )
        assert member.consumer.config.protocol is PROTOCOL[step], name
        side = KgroupSide(member.start(), log, topic)
        sides.append(side)
        step_of[name] = step
        current[slot] = side

    chosen: list[str] = []  # the coordinator's protocol each time the group settled

    def split() -> None:
        members = [current[s] for s in sorted(current)]
        seen: list[Any] = []

        def settled_now() -> bool:
            described = settled_description(cluster, group, members, PARTITIONS)
            if described is not None:
                seen.append(described)
            return described is not None

        wait_until(settled_now, SPLIT_S, f"a split among {members}")
        chosen.append(seen[-1].protocol)  # from the answer that showed it settled

    producer = ContinuousProducer(kafka_bootstrap, topic, PARTITIONS, interval_s=0.1).start()
    try:
        for slot in (1, 2, 3):
            launch(slot, 1)
            split()
        # (generations completed, settled points, time) at each mark
        marks = {"formed": (len(generations(cluster, group)) if is_model(cluster) else 0, len(chosen), 0.0)}
        for step in (2, 3):
            for slot in (1, 2, 3):
                if step == 2 and slot == 3:
                    marks["last range-only member leaves"] = (
                        len(generations(cluster, group)) if is_model(cluster) else 0, len(chosen), time.monotonic())
                current.pop(slot).stop()
                split()
                launch(slot, step)
                split()
            marks[f"roll {step - 1} done"] = (
                len(generations(cluster, group)) if is_model(cluster) else 0, len(chosen), time.monotonic())
    finally:
        produced = producer.stop()
    wait_until(lambda: not set(produced) - set(consumed_offsets(sides)), SPLIT_S, "every record to be consumed")
    for side in list(current.values()):
        side.stop()

    # the assignor the coordinator chose, phase by phase: whenever the group settled ...
    cut = marks["last range-only member leaves"][1]
    assert set(chosen[:cut]) == {"range"}, chosen
    assert set(chosen[cut:]) == {"cooperative-sticky"}, chosen
    # ... and, through the model, in every generation
    history = generations(cluster, group) if is_model(cluster) else []
    if is_model(cluster):
        protocols = [g.protocol for g in history]
        cut = marks["last range-only member leaves"][0]
        assert set(protocols[:cut]) == {"range"}, protocols
        assert set(protocols[cut:]) == {"cooperative-sticky"}, protocols
    # ... and kgroup saw it: a roll-2 member's JoinGroup response named cooperative-sticky
    joined = [r.getMessage() for r in caplog.records if "joined generation" in r.getMessage()]
    assert any("'m3v3-" in m and m.endswith("protocol cooperative-sticky") for m in joined), joined

    # never two owners at once; nobody hands out what it does not own; nothing skipped
    assert overlaps(sides) == [], describe(sides)
    for side in sides:
        assert consumed_outside_ownership(side) == [], describe(sides)
        assert [c for c in side.changes() if c.kind == "lost"] == [], describe(sides)
    assert not set(produced) - set(consumed_offsets(sides))

    # the group never stopped for long: every partition found a new owner quickly
    gaps = ownership_gaps(sides, PARTITIONS)
    assert max(gaps.values()) < MAX_UNOWNED_S, (gaps, describe(sides))

    # EAGER members (("range",) and ("cooperative-sticky", "range")) revoke everything they own
    # on every rebalance; COOPERATIVE members (("cooperative-sticky",)) only what moves
    cooperative_partial = 0
    for side in sides:
        if PROTOCOL[step_of[side.name]] is RebalanceProtocol.EAGER:
            for change, held in revocations(side):
                assert change.partitions == held, (side.name, change, held)
        else:
            # the rolling restart changes the membership all along: a revoked partition whose receiver left
            # in the meantime may come back (groupcheck.moved_away)
            assert moved_away(side, sides, unless_membership_changed=True) == [], describe(sides)
            cooperative_partial += sum(
                1 for change, held in revocations(side) if change.partitions and change.partitions < held
            )
    # the last join (m3v3) took one partition each from m1v3 and m2v3, which kept the rest
    assert cooperative_partial >= 2, describe(sides)
    # an eager rebalance after roll 1 still revoked everything: the cooperative-sticky plan ran EAGER
    # (from the model's generation, else from when the group had settled after roll 1)
    roll1_done = history[marks["roll 1 done"][0] - 1].t if is_model(cluster) else marks["roll 1 done"][2]
    m2v2 = next(s for s in sides if s.name == "m2v2")
    eager_after_roll1 = [(c, h) for c, h in revocations(m2v2) if c.t > roll1_done and len(h) > 0]
    assert eager_after_roll1, describe(sides)
    print(f"migration: {len(history) if is_model(cluster) else 'n/a (Kafka)'} generations, "
          f"{len(chosen)} settled points, produced {len(produced)}, "
          f"max unowned per partition {max(gaps.values()):.3f} s")
