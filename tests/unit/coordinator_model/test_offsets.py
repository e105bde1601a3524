"""OffsetCommit validation for classic groups, and OffsetFetch."""

from __future__ import annotations

import pytest

from kgroup import _error_codes as codes
from kgroup.testing.coordinator import (
    CommitPartition,
    CommitPartitionResult,
    CommitTopic,
    CommitTopicResult,
    FetchPartitionResult,
    FetchTopicResult,
)
from kgroup.testing.coordinator import _events as ev
from tests.unit.coordinator_model.helpers import Harness

T0 = {("t", 0): 5}


def test_simple_commit_creates_an_empty_group_and_fetch_round_trips_everything():
    h = Harness()
    response = h.commit(
        [
            CommitTopic(
                name="t",
                partitions=(
                    CommitPartition(
                        partition_index=0, committed_offset=5, committed_leader_epoch=7, committed_metadata="m"
                    ),
                    CommitPartition(partition_index=1, committed_offset=9, committed_metadata=None),
                ),
            )
        ]
    )
    assert response.topics == (
        CommitTopicResult(
            name="t",
            partitions=(
                CommitPartitionResult(partition_index=0, error_code=codes.NONE),
                CommitPartitionResult(partition_index=1, error_code=codes.NONE),
            ),
        ),
    )
    assert h.state() == "Empty"
    assert h.list_groups().groups[0].protocol_type == ""  # a "simple" group has no protocol type
    fetched = h.fetch({"t": (0, 1, 2)})
    assert fetched.error_code == codes.NONE
    assert fetched.topics == (
        FetchTopicResult(
            name="t",
            partitions=(
                FetchPartitionResult(partition_index=0, committed_offset=5, committed_leader_epoch=7, metadata="m"),
                FetchPartitionResult(partition_index=1, committed_offset=9, committed_leader_epoch=-1, metadata=""),
                FetchPartitionResult(partition_index=2, committed_offset=-1, committed_leader_epoch=-1, metadata=""),
            ),
        ),
    )
    assert h.kinds(ev.OFFSETS_COMMITTED) == [("", "t-0@5, t-1@9")]


def test_fetch_all_committed_partitions():
    h = Harness()
    h.commit({("b", 1): 11, ("a", 0): 1, ("b", 0): 10})
    fetched = h.fetch(None)
    assert [(t.name, [(p.partition_index, p.committed_offset) for p in t.partitions]) for t in fetched.topics] == [
        ("b", [(0, 10), (1, 11)]),
        ("a", [(0, 1)]),
    ]
    assert h.fetch(None, group="never").topics == ()


def test_fetch_for_an_unknown_group_returns_minus_one():
    h = Harness()
    fetched = h.fetch({"t": (0,)}, group="never")
    assert fetched.topics[0].partitions == (FetchPartitionResult(partition_index=0),)
    assert fetched.topics[0].partitions[0].committed_offset == -1
    # '' is a group id like any other for OffsetFetch (GroupCoordinatorService.fetchOffsets refuses only null)
    assert h.fetch({"t": (0,)}, group="").error_code == codes.NONE


def test_member_commit_in_stable_and_later_commits_overwrite():
    h = Harness()
    (a, b), gen = h.form_group(2)
    assert h.commit_errors(T0, member_id=a, generation=gen) == {("t", 0): codes.NONE}
    assert h.commit_errors({("t", 0): 8}, member_id=b, generation=gen) == {("t", 0): codes.NONE}
    assert h.fetch({"t": (0,)}).topics[0].partitions[0].committed_offset == 8


def test_commit_without_generation_on_a_live_group_is_unknown_member_id():
    h = Harness()
    h.form_group(1)
    assert h.commit_errors(T0) == {("t", 0): codes.UNKNOWN_MEMBER_ID}


@pytest.mark.parametrize(
    ("member", "generation_delta", "expected"),
    [
        ("ghost", 0, codes.UNKNOWN_MEMBER_ID),
        ("a", -1, codes.ILLEGAL_GENERATION),
        ("a", +1, codes.ILLEGAL_GENERATION),
    ],
)
def test_commit_validation_in_stable(member, generation_delta, expected):
    h = Harness()
    (a,), gen = h.form_group(1)
    member_id = a if member == "a" else member
    assert h.commit_errors(T0, member_id=member_id, generation=gen + generation_delta) == {("t", 0): expected}


def test_commits_during_a_rebalance():
    h = Harness()
    (a, b), gen = h.form_group(2)
    h.join(a, client_id="m0")
    # PreparingRebalance: the current (old) generation may still commit
    assert h.state() == "PreparingRebalance"
    assert h.commit_errors(T0, member_id=b, generation=gen) == {("t", 0): codes.NONE}
    h.join(b, client_id="m1")
    # CompletingRebalance: the new generation gets REBALANCE_IN_PROGRESS, the old ILLEGAL_GENERATION
    assert h.state() == "CompletingRebalance"
    assert h.commit_errors(T0, member_id=b, generation=gen + 1) == {("t", 0): codes.REBALANCE_IN_PROGRESS}
    assert h.commit_errors(T0, member_id=b, generation=gen) == {("t", 0): codes.ILLEGAL_GENERATION}


def test_commit_to_an_empty_group_that_had_members():
    h = Harness()
    (a,), gen = h.form_group(1)
    h.commit(T0, member_id=a, generation=gen)
    h.advance(10)  # a expires
    assert h.state() == "Empty"
    assert h.commit_errors({("t", 0): 6}, member_id=a, generation=gen) == {("t", 0): codes.UNKNOWN_MEMBER_ID}
    assert h.commit_errors({("t", 0): 7}) == {("t", 0): codes.NONE}
    # generation -1 with a member id is accepted too while the group is Empty
    assert h.commit_errors({("t", 0): 8}, member_id="whoever") == {("t", 0): codes.NONE}
    assert h.fetch({"t": (0,)}).topics[0].partitions[0].committed_offset == 8


@pytest.mark.parametrize(("version", "expected"), [(8, codes.ILLEGAL_GENERATION), (9, codes.GROUP_ID_NOT_FOUND)])
def test_commit_with_a_generation_to_an_unknown_group(version, expected):
    h = Harness()
    assert h.commit_errors(T0, member_id="m", generation=3, version=version) == {("t", 0): expected}
    assert h.state() == "Dead"


def test_unknown_topic_or_partition_is_per_partition():
    h = Harness(partition_exists=lambda topic, partition: topic == "t" and partition < 2)
    errors = h.commit_errors({("t", 0): 1, ("t", 5): 1, ("nope", 0): 1})
    assert errors == {
        ("t", 0): codes.NONE,
        ("t", 5): codes.UNKNOWN_TOPIC_OR_PARTITION,
        ("nope", 0): codes.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert [t.name for t in h.fetch(None).topics] == ["t"]


def test_unknown_topic_keeps_its_error_when_the_group_rejects_the_rest():
    h = Harness(partition_exists=lambda topic, partition: topic == "t")
    h.form_group(1)
    errors = h.commit_errors({("t", 0): 1, ("nope", 0): 1})
    assert errors == {("t", 0): codes.UNKNOWN_MEMBER_ID, ("nope", 0): codes.UNKNOWN_TOPIC_OR_PARTITION}


def test_commit_metadata_too_large():
    h = Harness()
    response = h.commit(
        [
            CommitTopic(
                name="t",
                partitions=(
                    CommitPartition(partition_index=0, committed_offset=1, committed_metadata="x" * 4097),
                    CommitPartition(partition_index=1, committed_offset=1, committed_metadata="x" * 4096),
                ),
            )
        ]
    )
    assert [p.error_code for p in response.topics[0].partitions] == [codes.OFFSET_METADATA_TOO_LARGE, codes.NONE]


def test_empty_group_id_is_an_ordinary_group_for_offsets():
    # GroupCoordinatorService.commitOffsets/fetchOffsets: "For backwards compatibility, we support offset
    # commits for the empty groupId" (only a null one, which the wire cannot carry, is INVALID_GROUP_ID).
    h = Harness()
    assert h.commit_errors(T0, group="") == {("t", 0): codes.NONE}
    assert h.fetch({"t": (0,)}, group="").topics[0].partitions[0].committed_offset == T0[("t", 0)]
    assert h.model.group_state("") == "Empty"


@pytest.mark.parametrize("in_preparing", [False, True])
def test_member_commit_renews_its_session_in_stable_and_preparing(in_preparing):
    h = Harness()
    (a, b), gen = h.form_group(2, session=10_000, rebalance=60_000)
    if in_preparing:
        h.join(a, client_id="m0", session=10_000, rebalance=60_000)
    for _ in range(4):
        h.advance(5)
        assert h.commit_errors(T0, member_id=b, generation=gen) == {("t", 0): codes.NONE}
    assert b in h.members()


def test_commit_in_completing_rebalance_does_not_renew_the_session():
    h = Harness()
    (a, b), gen = h.form_group(2, session=10_000, rebalance=60_000)
    h.join(a, client_id="m0", session=10_000, rebalance=60_000)
    h.join(b, client_id="m1", session=10_000, rebalance=60_000)
    h.advance(5)
    assert h.commit_errors(T0, member_id=b, generation=gen + 1) == {("t", 0): codes.REBALANCE_IN_PROGRESS}
    h.advance(5)
    assert b not in h.members()


def test_commits_survive_the_group_becoming_empty():
    h = Harness()
    (a,), gen = h.form_group(1)
    h.commit(T0, member_id=a, generation=gen)
    h.advance(60)
    assert h.state() == "Empty"
    assert h.fetch({"t": (0,)}).topics[0].partitions[0].committed_offset == 5


def test_require_stable_is_accepted_and_changes_nothing():
    from kgroup.testing.coordinator import FetchTopic, OffsetFetchRequest

    h = Harness()
    h.commit(T0)
    reply = h.model.offset_fetch(
        OffsetFetchRequest(
            api_version=7, group_id="g", topics=(FetchTopic(name="t", partition_indexes=(0,)),), require_stable=True
        )
    )
    assert reply.response.topics[0].partitions[0] == FetchPartitionResult(partition_index=0, committed_offset=5)


def test_unknown_partitions_come_first_in_the_commit_answer():
    # KafkaApis.handleOffsetCommitRequest answers unknown partitions in an OffsetCommitResponse.Builder and
    # Builder.merge appends the coordinator's answer: unknown partitions first, topics by first appearance.
    h = Harness(partition_exists=lambda topic, partition: topic == "t" and partition < 2)
    response = h.commit({("t", 0): 1, ("t", 5): 1, ("t", 1): 1, ("nope", 0): 1, ("u", 0): 1})
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in response.topics] == [
        ("t", [5, 0, 1]),
        ("nope", [0]),
        ("u", [0]),
    ]
    known_only = h.commit({("t", 1): 2, ("t", 0): 2})
    assert [p.partition_index for p in known_only.topics[0].partitions] == [1, 0]
