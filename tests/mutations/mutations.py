"""Realistic small defects put into kgroup one at a time: each must be caught (``run.py``).

Each mutation names its file, the exact original text (found exactly once, or the run stops
with "snippet not found": when the code moves, the list is updated by hand instead of
passing silently), its replacement and what catches it: ``classic`` (CI's classic seed
budget, ``--seeds 2000``), ``consumer`` (``--seeds 500 --group-protocol consumer``), ``parallel``
(``ParallelProcessor`` groups, ``--parallel --seeds 200``), ``share`` (share groups, ``--share
--seeds 150``) or a named pytest node
(``tests/...::test_...``). ``tests/mutations/test_mutations.py`` checks in CI that
every snippet is still there exactly once; the full run is manual (docs/simulation.md).
"""

from __future__ import annotations

import attrs

__all__ = ["MUTATIONS", "Mutation"]


@attrs.frozen
class Mutation:
    """One defect: ``original`` in ``path`` (exactly once) becomes ``replacement``."""

    name: str
    path: str
    original: str
    replacement: str
    #: "classic", "consumer", "parallel", "share" or a pytest node id
    caught_by: str
    what: str


MUTATIONS: tuple[Mutation, ...] = (
    # ------------------------------------------------------------ the classic machine
    Mutation(
        name="classic-session-timer-from-answer",
        path="kgroup/membership/classic_session.py",
        original="        heartbeat.alive_at + config.session_timeout_ms / 1000,",
        replacement="        heartbeat.last_ok + config.session_timeout_ms / 1000,",
        caught_by="classic",
        what="the session timer counts from the last heartbeat's answer, not from its send time",
    ),
    Mutation(
        name="eager-join-before-revoke",
        path="kgroup/membership/machine.py",
        original="        if self._config.protocol is RebalanceProtocol.EAGER:\n            revoked = self._owned\n",
        replacement="        if self._config.protocol is RebalanceProtocol.EAGER:\n            revoked = frozenset()\n",
        caught_by="classic",
        what="an eager member joins without revoking its partitions first (eager revoke-before-join)",
    ),
    Mutation(
        name="cooperative-no-second-join",
        path="kgroup/membership/machine.py",
        original='                self._request_rejoin("cooperative: partitions were revoked; second round")',
        replacement="                pass  # no second round",
        caught_by="classic",
        what="a cooperative member that revoked partitions does not join again (KIP-429's second round)",
    ),
    Mutation(
        name="classic-poll-watchdog-unit",
        path="kgroup/membership/machine.py",
        original="        return self._poll.last + self._config.max_poll_interval_ms / 1000",
        replacement="        return self._poll.last + self._config.max_poll_interval_ms / 100",
        caught_by="classic",
        what="the max.poll.interval watchdog's deadline 10 times too late (a unit slip)",
    ),
    # ------------------------------------------------------------ the KIP-848 machine
    Mutation(
        name="kip848-ack-before-revoke",
        path="kgroup/membership/consumer_group.py",
        original=(
            "        self._steps = attrs.evolve(self._steps, rejoined_while_reconciling=False)\n"
            "        out.append(\n"
            "            self._new_step(\n"
            "                StepKind.RECONCILE,\n"
        ),
        replacement=(
            "        self._steps = attrs.evolve(self._steps, rejoined_while_reconciling=False)\n"
            "        self._rec = attrs.evolve(self._rec, current=resolved)\n"
            "        out.append(\n"
            "            self._new_step(\n"
            "                StepKind.RECONCILE,\n"
        ),
        caught_by="consumer",
        what="the reconciled assignment is acknowledged when the step is handed over, before the "
        "revocation (and on_partitions_assigned) ran",
    ),
    Mutation(
        name="kip848-takes-partitions-during-heartbeat",
        path="kgroup/membership/consumer_group.py",
        original="        if added and (self._requests.heartbeat is not None or self._claim_unanswered()):",
        replacement=(
            "        if added and (self._requests.heartbeat is not None or self._claim_unanswered()) and False:"
        ),
        caught_by="consumer",
        what="a member takes the partitions of a target while a heartbeat that may bring a newer one "
        "is unanswered (Java's client does; kgroup waits for the answer)",
    ),
    Mutation(
        name="kip848-fenced-keeps-partitions",
        path="kgroup/membership/consumer_group.py",
        original='        self._release_lost(f"fenced: {reason}")',
        replacement="        self._lost_released()",
        caught_by="consumer",
        what="a fenced member rejoins at once without releasing its partitions as lost",
    ),
    # ------------------------------------------------------------ the poll thread
    Mutation(
        name="poll-thread-session-deadline",
        path="kgroup/consumer.py",
        original=(
            '        return bool(getattr(snap, "hand_out_on_hold", False)) or self._clock.monotonic() >= hold_at'
        ),
        replacement='        return bool(getattr(snap, "hand_out_on_hold", False))',
        caught_by=(
            "tests/simulation/test_explicit_commits.py::"
            "test_the_poll_thread_holds_its_hand_outs_at_the_session_deadline_when_the_group_thread_is_late"
        ),
        what="the poll thread trusts the group thread to have run at the session deadline (the window is "
        "one network latency after a late group thread's deadline: the 2,000 seeds did not hit it)",
    ),
    Mutation(
        name="acquiesce-keeps-revoked-records",
        path="kgroup/_driver/steps.py",
        original="                taken |= item.lost | item.revoked",
        replacement="                taken |= item.lost",
        caught_by="classic",
        what="records fetched for partitions whose revocation started are still handed out",
    ),
    Mutation(
        name="reset-revoke-loses-only-the-revoked",
        path="kgroup/_driver/steps.py",
        original="            lost = host._assignment | step.revoked",
        replacement="            lost = step.revoked",
        caught_by=(
            "tests/unit/test_listener_steps.py::"
            "test_a_revoke_after_the_generation_was_reset_loses_every_owned_partition_once"
        ),
        what="after the poll watchdog reset the generation during a cooperative revoke, the partitions the "
        "revoke did not name stay owned past that poll() while another member may own them",
    ),
    Mutation(
        name="dropped-records-not-rewound",
        path="kgroup/_driver/partitions.py",
        original=(
            "            # the records were not handed out, so the position goes back\n"
            "            self._fetcher.seek(tp, offset)\n"
        ),
        replacement="            # the records were not handed out, so the position goes back\n",
        caught_by="classic",
        what="records dropped by the acquiesce do not move the position back",
    ),
    Mutation(
        name="leader-watches-own-topics-only",
        path="kgroup/_driver/leader_watch.py",
        original="            topics = topics | frozenset(self._assigned[1]) | self._assigned[2]",
        replacement="            topics = topics | frozenset(self._assigned[1])",
        caught_by="classic",
        what="the leader's metadata watch covers the topics it assigned, not the whole group's subscription "
        "(a topic created later that only a follower subscribes to is never assigned)",
    ),
    # ------------------------------------------------------------ commit ownership
    Mutation(
        name="commit-checks-topic-not-partition",
        path="kgroup/_driver/autocommit.py",
        original="    not_owned = set(prepared) - assignment",
        replacement="    not_owned = {tp for tp in prepared if tp.topic not in {owned.topic for owned in assignment}}",
        caught_by="classic",
        what="an explicit commit is checked against the topics of the owned partitions, not the owned partitions",
    ),
    Mutation(
        name="commit-inside-lost-still-owned",
        path="kgroup/_driver/steps.py",
        original=(
            "            host._set_assignment(host._assignment - lost)\n"
            '            host._invoke("on_partitions_lost", lost)'
        ),
        replacement=(
            '            host._invoke("on_partitions_lost", lost)\n'
            "            host._set_assignment(host._assignment - lost)"
        ),
        caught_by=(
            "tests/simulation/test_explicit_commits.py::"
            "test_inside_on_partitions_lost_the_lost_partitions_are_not_owned_and_a_commit_of_them_is_refused"
        ),
        what="on_partitions_lost runs while the lost partitions still count as owned (commits pass the check; "
        "the reset generation still stops them, so the campaigns cannot see it)",
    ),
    Mutation(
        name="commit-stale-generation",
        path="kgroup/_driver/commits.py",
        original="        if not snap.generation.is_valid():\n            raise CommitFailedError(",
        replacement="        if not snap.generation.member_id:\n            raise CommitFailedError(",
        caught_by="classic",
        what="a commit goes out with a reset generation as long as the member id is kept",
    ),
    Mutation(
        name="commit-sync-ignores-partition-errors",
        path="kgroup/_driver/commits.py",
        original="            self._raise_first(Api.OFFSET_COMMIT, codes.values(), generation)",
        replacement="            pass",
        caught_by="classic",
        what="commit() returns normally when the coordinator refused the offsets",
    ),
    # ------------------------------------------------------------ ParallelProcessor
    Mutation(
        name="parallel-commit-highest-completed",
        path="kgroup/_parallel/offsets.py",
        original="        return offset, metadata\n",
        replacement="        return (max(self._done) + 1 if self._done else offset), metadata\n",
        caught_by="parallel",
        what="the processor commits past its highest completed record instead of its first incomplete one",
    ),
    Mutation(
        name="parallel-key-lanes-ignored",
        path="kgroup/_parallel/scheduler.py",
        original="            return (tp, _hashable(key))",
        replacement='            return (tp, ("record", next(self._sequence)))',
        caught_by="parallel",
        what='ordering="key" runs records of one key at once and out of order (every record its own lane)',
    ),
    Mutation(
        name="parallel-inherited-completions-ignored",
        path="kgroup/_parallel/ledger.py",
        original="PartitionOffsets(om.offset, decode_completed(om.metadata, om.offset))",
        replacement="PartitionOffsets(om.offset)",
        caught_by="parallel",
        what="a new owner ignores the completions the commit metadata reports: records completed twice",
    ),
    Mutation(
        name="parallel-revocation-does-not-wait",
        path="kgroup/parallel.py",
        original="        while self._ledger.running_in(partitions):",
        replacement="        while False:",
        caught_by="parallel",
        what="a revocation commits and hands the partitions on without waiting for their running records",
    ),
    Mutation(
        name="parallel-pause-at-twice-the-bound",
        path="kgroup/_parallel/ledger.py",
        original="        if self.buffered_records >= max_records or self.buffered_bytes >= max_bytes:",
        replacement="        if self.buffered_records >= 2 * max_records or self.buffered_bytes >= max_bytes:",
        caught_by="parallel",
        what="the processor pauses its partitions at twice max_buffered_records",
    ),
    # ------------------------------------------------------------ share groups
    Mutation(
        name="share-explicit-acks-all-accept",
        path="kgroup/_share/acks.py",
        original="            self._acks[key] = {offset: code}\n        else:\n            acks[offset] = code",
        replacement=(
            "            self._acks[key] = {offset: _ACCEPT}\n        else:\n            acks[offset] = _ACCEPT"
        ),
        caught_by="share",
        what="explicit mode sends ACCEPT whatever the application acknowledged (released records are lost)",
    ),
    Mutation(
        name="share-implicit-acks-release",
        path="kgroup/_share/acks.py",
        original="                    acks.setdefault(offset, _ACCEPT)",
        replacement="                    acks.setdefault(offset, int(AcknowledgeType.RELEASE))",
        caught_by="share",
        what="implicit mode releases what the last poll() returned instead of accepting it",
    ),
    Mutation(
        name="share-leave-in-flight-spins",
        path="kgroup/membership/share_group.py",
        original=(
            "        if self._state is _S.LEAVING and self._leave_rid is not None:\n"
            "            return max(now, watchdog)"
        ),
        replacement="        if False:\n            return max(now, watchdog)",
        caught_by="tests/unit/test_share_group_machine.py::test_a_leave_in_flight_has_no_deadline",
        what="a share member's group thread has its deadline now while its leave is in flight (it spins)",
    ),
)
