"""The simulator on the consumer group protocol (KIP-848): members against ConsumerGroupModel.

``scenario_for(seed, "consumer")`` makes the same draws as the classic scenario of the seed, so
the classic seeds do not change; the members run ``Consumer(group_protocol="consumer")`` and the
coordinator is the consumer-group model, checked against Apache Kafka by
tests/conformance/test_consumer_group_conformance.py.
"""

from __future__ import annotations

import math
import os

import attrs
import pytest

from kgroup.membership.consumer_group import ConsumerGroupMachine
from kgroup.membership.consumer_group_heartbeat import HeartbeatRequestState
from kgroup.testing.simulation import run_seed, scenario_for
from kgroup.testing.simulation._run import SERVER_ASSIGNORS, Simulation
from tests.simulation.test_simulation import check_campaign


def without_prompt_heartbeats(monkeypatch: pytest.MonkeyPatch) -> None:
    """The heartbeat timing of before the prompt heartbeats (``HeartbeatRequestState.prompt``).

    A seed found before them met its fault at a time that their extra heartbeats move (a fault
    drawn per request lands on another one); the tests that replay such a seed run it with the
    timing it was found with, so the fault and its fix stay the ones the test names. Every seed
    of the campaigns runs with them (``test_ci_seed_budget_on_the_consumer_protocol_...``).
    """
    monkeypatch.setattr(HeartbeatRequestState, "prompt", lambda self, now: None)


def test_the_classic_scenario_of_a_seed_is_unchanged_by_the_protocol_choice() -> None:
    for seed in range(50):
        classic = scenario_for(seed)
        assert classic.group_protocol == "classic"
        assert scenario_for(seed, "classic") == classic
        consumer = scenario_for(seed, "consumer")
        assert consumer.group_protocol == "consumer"
        assert attrs.evolve(consumer, members=classic.members, group_protocol="classic") == classic
        assert [m.assignors for m in consumer.members] == [SERVER_ASSIGNORS[m.assignors] for m in classic.members]


def test_consumer_protocol_seeds_hold_every_property_and_replay_exactly() -> None:
    for seed in (0, 1, 2, 3, 5, 7):
        result = run_seed(seed, "consumer")
        assert result.violations == [], "\n".join(map(str, result.violations))
        assert result.rebalances >= 2  # two members at least joined: group epoch bumps
        assert result.records > 0
    again = run_seed(7, "consumer")
    assert (again.trace, again.records, again.rebalances) == (run_seed(7, "consumer").trace, again.records,
                                                              again.rebalances)


def test_a_consumer_protocol_member_is_assigned_by_the_broker() -> None:
    result = run_seed(0, "consumer")
    assert any("ConsumerGroupHeartbeat <- 0 epoch" in line for line in result.trace)
    assert not any("JoinGroup" in line or "SyncGroup" in line for line in result.trace)


def test_a_member_takes_no_partition_while_its_heartbeat_is_unanswered() -> None:
    """Seeds where a member acknowledged a partial reconciliation (a topic's name unknown), the
    coordinator moved to a newer target meanwhile, and the member then took the older target's
    partitions: two owners, until ConsumerGroupMachine waited for the heartbeat's answer."""
    for seed in (115, 732, 1084):
        result = run_seed(seed, "consumer", version=1)
        assert result.violations == [], "\n".join(map(str, result.violations))


def test_a_member_told_it_is_gone_by_an_abandoned_heartbeat_stops_handing_out() -> None:
    """A seed where a commit's error marked the coordinator unknown while a heartbeat was out; its
    answer (UNKNOWN_MEMBER_ID) was dropped and the member went on handing out after removal."""
    result = run_seed(153, "consumer", version=1)
    assert result.violations == [], "\n".join(map(str, result.violations))


def test_a_close_that_ends_exactly_at_its_timeout_counts_as_giving_up() -> None:
    """A seed whose close() gave up at its deadline to the microsecond (virtual time is a float):
    its last hand-outs were not committed, and their redelivery must be excused."""
    result = run_seed(4903, "consumer", version=1)
    assert result.violations == [], "\n".join(map(str, result.violations))


def test_a_member_whose_session_may_have_expired_hands_nothing_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 129: m1's last answered heartbeat was sent at 3.025 s; its next one went into a
    coordinator black hole, and the coordinator removed it for its session timeout (6000 ms, which
    the member read with DescribeConfigs) at 9.029 s. With the session timer the member held back
    its records from 9.025 s and, its heartbeat failing, released its partitions as lost. Without it
    (as Java's consumer) it handed out 50 records of t0-1 at 9.646 s, already another member's: the
    zombie hand-out the simulator excused on the consumer protocol before kgroup had the timer."""
    result = run_seed(129, "consumer", version=1)
    assert result.violations == [], "\n".join(map(str, result.violations))
    assert any("m1#1: DescribeConfigs <- {'consumer.session.timeout.ms': '6000'}" in line for line in result.trace)
    assert not any("zombie hand-out" in line for line in result.trace)
    monkeypatch.setattr(ConsumerGroupMachine, "_settle_session", lambda self, now: None)  # no timer
    monkeypatch.setattr(ConsumerGroupMachine, "_hold_at", lambda self: math.inf)  # nor its deadline
    without = run_seed(129, "consumer", version=1)
    assert [v.rule for v in without.violations] == ["hand-out after removal"], without.violations
    assert "m1#1" in without.violations[0].detail and "(session timeout)" in without.violations[0].detail


def test_a_static_member_whose_session_may_have_expired_keeps_its_epoch_and_its_partitions() -> None:
    """Seed 232: static m0#1's heartbeats met a coordinator loading (COORDINATOR_LOAD_IN_PROGRESS) and
    then a lost answer; 10 s after its last successful one was sent the coordinator was unknown. The
    coordinator still held it (its timers start afresh once loaded): rejoining with epoch 0 was
    UNRELEASED_INSTANCE_ID, fatal; releasing t0-0 as lost and asking with its epoch got it back after
    a needless loss. Now the member keeps t0-0 (hand-outs held) and its next heartbeat, with its epoch
    and t0-0, resumes them."""
    result = run_seed(232, "consumer", version=1)
    assert result.violations == [], "\n".join(map(str, result.violations))
    assert not any("m0#1: fatal" in line for line in result.trace)
    assert not any("m0#1: lost" in line for line in result.trace)
    loading = next(i for i, line in enumerate(result.trace) if "m0#1: ConsumerGroupHeartbeat <- 14" in line)
    assert any("m0#1: ConsumerGroupHeartbeat <- 0 epoch 5 ['t0-0']" in line for line in result.trace[loading:])


def test_a_static_member_fenced_at_its_epoch_releases_its_instance_id_before_rejoining(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seed 285 (first): static m0#1's heartbeat got FENCED_MEMBER_EPOCH (injected) while the
    coordinator still held it at epoch 6. Rejoining with epoch 0 was UNRELEASED_INSTANCE_ID, fatal
    (Apache Kafka 4.4 answers so; Java's consumer stops), and a supervisor had to restart the
    process; with a -2 heartbeat first, the member gets its partitions back at once. Seed 285 no
    longer meets that fault since a member keeps its partitions with the coordinator unknown;
    seed 218 does (static m0#1 fenced at 2.056), with the heartbeat timing it was found with."""
    without_prompt_heartbeats(monkeypatch)
    result = run_seed(218, "consumer", version=1)
    assert result.violations == [], "\n".join(map(str, result.violations))
    assert not any("m0#1: fatal" in line for line in result.trace)
    fenced = next(i for i, line in enumerate(result.trace) if "m0#1: ConsumerGroupHeartbeat <- 110" in line)
    after = result.trace[fenced:fenced + 8]
    assert any("m0#1: ConsumerGroupHeartbeat -> epoch -2" in line for line in after), after
    assert any("m0#1: assigned ['t0-0', 't0-1']" in line for line in after), after

    send = ConsumerGroupMachine._send_heartbeat

    def join_at_once(self: ConsumerGroupMachine, now: float, out: list[object]) -> None:
        self._requests = attrs.evolve(self._requests, release_instance=False)  # Java's rejoin
        send(self, now, out)  # type: ignore[arg-type]

    monkeypatch.setattr(ConsumerGroupMachine, "_send_heartbeat", join_at_once)
    without = run_seed(218, "consumer", version=1)
    assert any("m0#1: fatal" in line and "UNRELEASED_INSTANCE_ID" in line for line in without.trace)


def test_a_static_member_reports_its_partitions_until_the_poll_thread_released_them() -> None:
    """Seed 519: static m0#1's poll thread was stuck in processing when its session timer released
    its partitions in place (no coordinator to ask). Its next heartbeat reported owning none while
    the poll thread had not run on_partitions_lost yet, and the coordinator gave t0-0 to m1#2: two
    owners, until the heartbeats reported the partitions until the release completed. The session
    timer no longer releases them with the coordinator unknown (it keeps them, hand-outs held); the
    seed stays clean."""
    result = run_seed(519, "consumer", version=1)
    assert result.violations == [], "\n".join(map(str, result.violations))
    assert any("m0#1: ConsumerGroupHeartbeat -> epoch 4 owned 3" in line for line in result.trace)


def test_a_zombie_that_left_the_group_explains_the_redelivery_of_what_it_handed_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seed 874 (first): static m1#1 handed out t0-2@702-711, then its processing stalled past
    max_poll_interval_ms (a "zombie" fault) before its auto-commit; its group thread left the group
    (-2) and m2#1 was given t0-2 and handed those records out again. The run ended, liveness
    holding, before m1#1's application came back to run on_partitions_lost: the redelivery is that
    loss's, not an unexplained duplicate. Seed 874 no longer meets that fault since a member keeps
    its partitions with the coordinator unknown, and no seed of 0-2,199 re-found so far has the
    redelivery too; seed 706 still has the pending loss (m0#1), which the run must report and excuse."""
    result = run_seed(706, "consumer", version=1)
    assert result.violations == [], "\n".join(map(str, result.violations))
    assert any("m0#1: lost ['t1-0', 't1-1'] (left the group; the callback has not run yet)" in line
               for line in result.trace)
    monkeypatch.setattr(Simulation, "_pending_losses", lambda self: None)
    without = run_seed(706, "consumer", version=1)
    assert not any("(left the group; the callback has not run yet)" in line for line in without.trace)


def test_a_heartbeat_sent_while_partitions_are_being_taken_leaves_the_owned_set_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seed 5267: m0's join answer (all three partitions, epoch 2) came 2.9 s late; its next
    heartbeat failed (NOT_COORDINATOR) and the one after it, sent with every field while the poll
    thread was taking the three partitions, reported owning none. The coordinator, whose newer
    target gave t0-1 and t0-2 to m1, released them to m1 at once: two owners. Without the fix
    (``ConsumerGroupMachine._taking_partitions``) the seed fails again (with the heartbeat timing it
    was found with), once the later rule that also covers it is off too (``_claim_unanswered``: no
    partition is taken after a heartbeat that carried the owned set went unanswered, until one is
    answered)."""
    without_prompt_heartbeats(monkeypatch)
    result = run_seed(5267, "consumer", version=1)
    assert result.violations == [], "\n".join(map(str, result.violations))
    monkeypatch.setattr(ConsumerGroupMachine, "_claim_unanswered", lambda self: False)
    assert run_seed(5267, "consumer", version=1).violations == []  # either rule alone keeps it safe
    monkeypatch.setattr(ConsumerGroupMachine, "_taking_partitions", lambda self: False)
    without = run_seed(5267, "consumer", version=1)
    assert {v.rule for v in without.violations} == {"two unfenced owners"}, without.violations


def test_heartbeats_unanswered_for_the_rebalance_timeout_hold_the_hand_outs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seed 5310: DescribeConfigs is refused (no session timer); m0's heartbeat, delayed, reached
    the coordinator after a newer target took t0-1 away, and its answer was lost. The coordinator
    removed m0 a rebalance timeout later, for the revocation it never heard of. Holding the
    hand-outs once heartbeats went unanswered for the rebalance timeout keeps m0 from handing out
    t0-0 after that; without it the seed fails again (with the heartbeat timing it was found with)."""
    without_prompt_heartbeats(monkeypatch)
    result = run_seed(5310, "consumer", version=1)
    assert result.violations == [], "\n".join(map(str, result.violations))
    original = ConsumerGroupMachine._settle_session
    original_hold_at = ConsumerGroupMachine._hold_at

    def without_the_unanswered_clock(self: ConsumerGroupMachine, now: float) -> None:
        since = self._session.unconfirmed_since
        self._session = attrs.evolve(self._session, unconfirmed_since=None)
        try:
            original(self, now)
        finally:
            if self._session.unconfirmed_since is None:
                self._session = attrs.evolve(self._session, unconfirmed_since=since)

    def hold_at_without_it(self: ConsumerGroupMachine) -> float:
        since = self._session.unconfirmed_since
        self._session = attrs.evolve(self._session, unconfirmed_since=None)
        try:
            return original_hold_at(self)
        finally:
            self._session = attrs.evolve(self._session, unconfirmed_since=since)

    monkeypatch.setattr(ConsumerGroupMachine, "_settle_session", without_the_unanswered_clock)
    monkeypatch.setattr(ConsumerGroupMachine, "_hold_at", hold_at_without_it)
    without = run_seed(5310, "consumer", version=1)
    assert [v.rule for v in without.violations] == ["hand-out after removal"], without.violations
    assert "(rebalance timeout)" in without.violations[0].detail


#: CI's seed budget on the consumer protocol (beside the classic protocol's in test_simulation.py)
CI_CONSUMER_SEEDS = int(os.environ.get("KGROUP_SIM_CONSUMER_SEEDS", "500"))


@pytest.mark.timeout(900)
def test_ci_seed_budget_on_the_consumer_protocol_finds_no_violation(capsys: pytest.CaptureFixture[str]) -> None:
    check_campaign(capsys, CI_CONSUMER_SEEDS, "--group-protocol", "consumer")


@pytest.mark.usefixtures("every_poll_posts_polled")
def test_no_partition_is_taken_after_an_acknowledgement_went_unanswered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 1651: m0's join answer (all four partitions, epoch 2) came 2.7 s late, before the
    topic's name was known: m0 reconciled nothing, acknowledged the empty set at once (a prompt
    heartbeat) and the answer was lost. The coordinator, whose newer target gave t0-2 and t0-3
    to m1, read the acknowledgement and released them to m1; when m0's request timed out and the
    name arrived, m0 took the older target's four: two owners. Without the rule
    (``ConsumerGroupMachine._claim_unanswered``) the seed fails again."""
    result = run_seed(1651, "consumer")
    assert result.violations == [], "\n".join(map(str, result.violations))
    monkeypatch.setattr(ConsumerGroupMachine, "_claim_unanswered", lambda self: False)
    without = run_seed(1651, "consumer")
    assert {v.rule for v in without.violations} == {"two unfenced owners"}, without.violations
