"""The scripted sequences (not a test module): each a list of steps played against Kafka and the model.

A script is a name, what it shows (with the Kafka methods it exercises), and its steps: who
sends what (:mod:`tests.conformance.dsl` builders) and, where the script wants to pin it, what
is expected (a subset of the normalised answer). The harness compares *every* answer between
Kafka and the model in full; ``expect`` only documents and guards the script's intent.

Actors are connections: ``a``, ``b``, ... are members (their client id is their name, so their
member ids read ``a#1``, ``b#1`` after normalisation; static members read ``<instance id>#n``);
``x`` is an observer (DescribeGroups, ListGroups, OffsetFetch, DeleteGroups).
"""

from __future__ import annotations

from typing import Any

from .dsl import (
    CLOSED,
    G2,
    MISSING,
    SESSION,
    Await,
    G,
    M,
    T,
    codes,
    commit,
    delete,
    describe,
    err,
    fetch,
    heartbeat,
    join,
    leave,
    list_groups,
    ok,
    rejoin,
    stable_pair,
    state_is,
    sync,
)
from .harness import Group, Script, Send

SCRIPTS: list[Script] = []

FAKE_ID = "nobody-00000000-0000-4000-8000-000000000000"
"""A member id of Kafka's shape that no coordinator handed out."""

SHORT = 1000
"""Session timeout of members meant to expire (group.min.session.timeout.ms here)."""
RT = 1500
"""Rebalance timeout where a script waits for it."""


def script(name: str, doc: str, *steps: Any, difference: str | None = None, broker: str = "default") -> None:
    SCRIPTS.append(Script(name=name, doc=doc, steps=tuple(steps), difference=difference, broker=broker))


def lone_leader() -> list[Any]:
    """Dynamic member ``a`` alone in a new group (JoinGroup v9 twice, KIP-394), its leader at generation 1."""
    return [join("a", expect=err(codes.MEMBER_ID_REQUIRED)), rejoin("a", expect=ok(generation_id=1)),
            sync("a", leader=True)]


def b_rejoins_with_a_second_protocol() -> list[Any]:
    """In the Stable pair of :func:`stable_pair`, ``b`` rejoins listing ``roundrobin`` too: a rebalance to
    generation 3 that ``a`` completes by rejoining."""
    return [rejoin("b", names=("range", "roundrobin"), parked=True), rejoin("a", expect=ok(generation_id=3)),
            Await("b")]


def static_sync(b: str = "b") -> list[Any]:
    """The SyncGroup round of static members ``a`` (instance ``ia``, the leader) and ``b`` (``ib``): ``b``'s
    parked until ``a`` sends the plan."""
    return [sync(b, instance="ib", parked=True), sync("a", leader=True, instance="ia"), Await(b)]


def removed_and_alone(removed: str, leader: str) -> list[Any]:
    """``removed`` is no longer a member; ``leader`` completes the rebalance alone."""
    return [heartbeat(removed, expect=err(codes.UNKNOWN_MEMBER_ID)), sync(leader, leader=True), describe("x")]


def static_pair(v: int = 9, *, b_session: int = SESSION, rejoin_checked: bool = True, **joining: Any) -> list[Any]:
    """Static members ``a`` (instance ``ia``, the leader) and ``b`` (``ib``, session ``b_session``) in a
    Stable group at generation 2: JoinGroup ``v`` with ``joining`` (the rejoin of ``a`` expected at
    generation 2 if ``rejoin_checked``), SyncGroup v5."""
    return [
        join("a", v, instance="ia", **joining, expect=ok(generation_id=1)),
        sync("a", leader=True, instance="ia"),
        join("b", v, instance="ib", **joining, session=b_session, parked=True),
        rejoin("a", v, instance="ia", **joining, expect=ok(generation_id=2) if rejoin_checked else None),
        Await("b"),
        *static_sync(),
    ]


def committed(*codes_: int) -> dict[str, Any]:
    """An OffsetCommit answer of one topic whose partitions got these codes."""
    return {"topics": [{"partitions": [{"error_code": c} for c in codes_]}]}


# ============================================================================ basics


script(
    "single_dynamic_member_life",
    "JoinGroup v9 (MEMBER_ID_REQUIRED, KIP-394), SyncGroup v5, Heartbeat v4, OffsetCommit/Fetch v9, "
    "DescribeGroups v5, LeaveGroup v5 with a KIP-800 reason, ListGroups v5.",
    join("a", expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("a", expect=ok(generation_id=1, leader=M("a"), protocol_name="range")),
    sync("a", leader=True, expect=ok(assignment=b"a#1")),
    heartbeat("a", expect=ok()),
    describe("x", expect={"groups": [{"group_state": "Stable"}]}),
    commit("a", generation=1, member=M("a"), expect=committed(codes.NONE)),
    fetch("x", topics={T: [0, 1]}),
    leave("a", members=[(M("a"), None, "bye")]),
    describe("x", expect={"groups": [{"group_state": "Empty"}]}),
    list_groups("x"),
)

script(
    "two_dynamic_members_rebalance",
    "GroupMetadataManager.classicGroupJoinNewMember parks a second member until the leader rejoins "
    "(maybeCompleteJoinPhase); the follower's SyncGroup waits for the leader's (propagateAssignment).",
    *stable_pair(),
    describe("x"),
)


# ============================================================================ every JoinGroup version

SYNC_V = {0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 6: 4, 7: 4, 8: 5, 9: 5}
HEARTBEAT_V = {0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 6: 4, 7: 4, 8: 4, 9: 4}
LEAVE_V = {0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 6: 4, 7: 4, 8: 5, 9: 5}
DESCRIBE_V = {0: 0, 1: 0, 2: 1, 3: 2, 4: 3, 5: 4, 6: 5, 7: 5, 8: 5, 9: 6}


def _first_join(actor: str, v: int, **kwargs: Any) -> list[Any]:
    if v >= 4:
        return [join(actor, v, expect=err(codes.MEMBER_ID_REQUIRED), **kwargs), rejoin(actor, v, **kwargs)]
    return [join(actor, v, **kwargs)]


for _v in range(10):
    _s, _h, _l, _d = SYNC_V[_v], HEARTBEAT_V[_v], LEAVE_V[_v], DESCRIBE_V[_v]
    _b_join = (
        [join("b", _v, expect=err(codes.MEMBER_ID_REQUIRED)), rejoin("b", _v, parked=True)]
        if _v >= 4
        else [join("b", _v, parked=True)]
    )
    _b_leave = (
        leave("b", _l, members=[(M("b"), None, "done")], expect=ok(members=[{"error_code": 0}]))
        if _l >= 3
        else leave("b", _l, expect=ok())
    )
    script(
        f"join_group_v{_v}_two_members",
        f"JoinGroup v{_v} with SyncGroup v{_s}, Heartbeat v{_h}, LeaveGroup v{_l}, DescribeGroups v{_d}: "
        "MEMBER_ID_REQUIRED only from v4 (KIP-394, JoinGroupRequest.requiresKnownMemberId), v0 uses the "
        "session timeout as rebalance timeout, protocol_type in answers from v7, the leader's member list, "
        "a member leaving (classicGroupLeaveToClassicGroup) and the group rebalancing without it.",
        *_first_join("a", _v),
        sync("a", _s, leader=True, expect=ok(assignment=b"a#1")),
        *_b_join,
        heartbeat("a", _h, expect=err(codes.REBALANCE_IN_PROGRESS)),
        rejoin("a", _v, expect=ok(generation_id=2, leader=M("a"))),
        Await("b", expect=ok(generation_id=2, leader=M("a"), members=[])),
        sync("b", _s, parked=True),
        sync("a", _s, leader=True, expect=ok(assignment=b"a#1")),
        Await("b", expect=ok(assignment=b"b#1")),
        heartbeat("b", _h, expect=ok()),
        describe("x", _d, expect={"groups": [{"group_state": "Stable"}]}),
        _b_leave,
        heartbeat("a", _h, expect=err(codes.REBALANCE_IN_PROGRESS)),
        rejoin("a", _v, expect=ok(generation_id=3)),
        sync("a", _s, leader=True),
        describe("x", _d),
    )


# ============================================================================ errors


script(
    "unknown_member_and_illegal_generation",
    "ClassicGroup.validateMember (UNKNOWN_MEMBER_ID), the generation checks of classicGroupSync, "
    "validateClassicGroupHeartbeat and ClassicGroup.validateOffsetCommit (ILLEGAL_GENERATION), and requests "
    "for a group the coordinator does not know (getOrMaybeCreateClassicGroup, classicGroupSync, "
    "classicGroupHeartbeat, classicGroupLeave, OffsetMetadataManager.validateOffsetCommit).",
    *lone_leader(),
    heartbeat("a", member=FAKE_ID, expect=err(codes.UNKNOWN_MEMBER_ID)),
    heartbeat("a", generation=7, expect=err(codes.ILLEGAL_GENERATION)),
    heartbeat("a", 0, generation=0, expect=err(codes.ILLEGAL_GENERATION)),
    sync("a", generation=7, expect=err(codes.ILLEGAL_GENERATION)),
    sync("a", member=FAKE_ID, expect=err(codes.UNKNOWN_MEMBER_ID)),
    commit("a", generation=1, member=FAKE_ID, expect=committed(codes.UNKNOWN_MEMBER_ID)),
    commit("a", generation=7, member=M("a"), expect=committed(codes.ILLEGAL_GENERATION)),
    commit("a", 2, generation=7, member=M("a"), expect=committed(codes.ILLEGAL_GENERATION)),
    join("c", member=FAKE_ID, expect=err(codes.UNKNOWN_MEMBER_ID), note="unknown member id, known group"),
    join("c", member=FAKE_ID, group=G2, expect=err(codes.UNKNOWN_MEMBER_ID), note="unknown group"),
    join("c", 3, member=FAKE_ID, group=G2, expect=err(codes.UNKNOWN_MEMBER_ID)),
    heartbeat("c", group=G2, member=FAKE_ID, generation=1, expect=err(codes.UNKNOWN_MEMBER_ID)),
    sync("c", group=G2, member=FAKE_ID, generation=1, expect=err(codes.UNKNOWN_MEMBER_ID)),
    leave("c", 1, group=G2, members=[(FAKE_ID, None, None)]),
    leave("c", 5, group=G2, members=[(FAKE_ID, None, None)]),
    leave("c", 1, members=[(FAKE_ID, None, None)], expect=err(codes.UNKNOWN_MEMBER_ID)),
    leave("c", 3, members=[(FAKE_ID, None, None), (M("a"), None, None)]),
    describe("x"),
)

script(
    "commit_to_an_unknown_group",
    "OffsetMetadataManager.validateOffsetCommit: a generation >= 0 for a group the coordinator does not know "
    "is ILLEGAL_GENERATION before v9 and GROUP_ID_NOT_FOUND from v9 (KIP-848's OffsetCommit v9); generation "
    "-1 creates a simple group (getOrMaybeCreateClassicGroup) that is Empty.",
    commit("x", 8, group=G2, generation=1, member=FAKE_ID, expect=committed(codes.ILLEGAL_GENERATION)),
    commit("x", 9, group=G2, generation=1, member=FAKE_ID, expect=committed(codes.GROUP_ID_NOT_FOUND)),
    describe("x", groups=[G2], expect={"groups": [{"group_state": "Dead"}]}),
    commit("x", 9, group=G2, expect=committed(codes.NONE)),
    describe("x", groups=[G2], expect={"groups": [{"group_state": "Empty", "protocol_type": ""}]}),
    commit("x", 9, group=G2, generation=3, member=FAKE_ID, expect=committed(codes.UNKNOWN_MEMBER_ID)),
    list_groups("x"),
)

script(
    "invalid_session_timeout",
    "GroupCoordinatorService.joinGroup: a session timeout outside [group.min.session.timeout.ms (1000 here), "
    "group.max.session.timeout.ms (1800000)] is INVALID_SESSION_TIMEOUT at every version, before the group "
    "is looked up; the bounds themselves are accepted.",
    join("a", 0, session=999, expect=err(codes.INVALID_SESSION_TIMEOUT)),
    join("a", 9, session=999, expect=err(codes.INVALID_SESSION_TIMEOUT)),
    join("a", 9, session=1_800_001, expect=err(codes.INVALID_SESSION_TIMEOUT)),
    join("a", 5, session=1_800_001, instance="ia", expect=err(codes.INVALID_SESSION_TIMEOUT)),
    join("a", 9, session=1000, expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("a", 9, session=1_800_000, expect=ok(generation_id=1)),
    rejoin("a", 9, session=999, expect=err(codes.INVALID_SESSION_TIMEOUT), note="existing member"),
    describe("x"),
)

script(
    "empty_group_id",
    "GroupCoordinatorService.isGroupIdNotEmpty: JoinGroup, SyncGroup, Heartbeat and LeaveGroup with group id "
    "'' are INVALID_GROUP_ID; OffsetCommit, OffsetFetch, DescribeGroups and DeleteGroups take '' as a group id "
    "(\"for backwards compatibility\", only null is refused).",
    join("a", group="", expect=err(codes.INVALID_GROUP_ID)),
    join("a", 0, group="", expect=err(codes.INVALID_GROUP_ID)),
    sync("a", group="", member=FAKE_ID, generation=1, expect=err(codes.INVALID_GROUP_ID)),
    heartbeat("a", group="", member=FAKE_ID, generation=1, expect=err(codes.INVALID_GROUP_ID)),
    leave("a", 1, group="", members=[(FAKE_ID, None, None)], expect=err(codes.INVALID_GROUP_ID)),
    leave("a", 5, group="", members=[(FAKE_ID, None, None)]),
    commit("a", group="", expect=committed(codes.NONE)),
    fetch("a", 7, group="", topics={T: [0]}),
    fetch("a", 9, group="", topics={T: [0]}),
    describe("a", groups=[""], expect={"groups": [{"group_state": "Empty"}]}),
    delete("a", groups=[""], expect={"results": [{"error_code": 0}]}, note="leaves the broker as it was"),
    describe("a", groups=[""], expect={"groups": [{"group_state": "Dead"}]}),
)

script(
    "sync_with_inconsistent_protocol",
    "classicGroupSync/validateSyncGroup: from SyncGroup v5 a protocol type or name other than the group's is "
    "INCONSISTENT_GROUP_PROTOCOL (isProtocolInconsistent), and so is a null one, refused before the "
    "coordinator (KafkaApis.handleSyncGroupRequest, SyncGroupRequest.areMandatoryProtocolTypeAndNamePresent), "
    "even for an unknown group; v4 does not carry them.",
    join("a", expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("a", expect=ok(generation_id=1)),
    sync("a", protocol_name="roundrobin", leader=True, expect=err(codes.INCONSISTENT_GROUP_PROTOCOL)),
    sync("a", protocol_type="connect", leader=True, expect=err(codes.INCONSISTENT_GROUP_PROTOCOL)),
    sync("a", 4, protocol_name="roundrobin", leader=True, expect=ok()),
    sync("a", protocol_type=None, expect=err(codes.INCONSISTENT_GROUP_PROTOCOL)),
    sync("a", protocol_name=None, expect=err(codes.INCONSISTENT_GROUP_PROTOCOL)),
    sync("a", group=G2, protocol_name=None, expect=err(codes.INCONSISTENT_GROUP_PROTOCOL)),
    sync("a", group="", protocol_name=None, expect=err(codes.INCONSISTENT_GROUP_PROTOCOL)),
    sync("a", 4, protocol_type=None, protocol_name=None, expect=ok(assignment=b"a#1")),
    sync("a", expect=ok(protocol_type="consumer", protocol_name="range")),
    describe("x"),
)

script(
    "inconsistent_group_protocol_on_join",
    "ClassicGroup.supportsProtocols: a joiner with another protocol type, or no protocol in common with every "
    "member, is INCONSISTENT_GROUP_PROTOCOL (new and existing members alike); an Empty group takes any.",
    *lone_leader(),
    join("b", protocol_type="connect", expect=err(codes.INCONSISTENT_GROUP_PROTOCOL)),
    join("b", names=("roundrobin",), expect=err(codes.INCONSISTENT_GROUP_PROTOCOL)),
    join("b", 3, names=("roundrobin",), expect=err(codes.INCONSISTENT_GROUP_PROTOCOL)),
    rejoin("a", names=("roundrobin",), expect=err(codes.INCONSISTENT_GROUP_PROTOCOL),
           note="its own current protocols count too"),
    rejoin("a", protocol_type="connect", expect=err(codes.INCONSISTENT_GROUP_PROTOCOL)),
    join("b", names=("sticky",), group=G2, protocol_type="", expect=err(codes.INCONSISTENT_GROUP_PROTOCOL),
         note="empty protocol type on an Empty group"),
    describe("x"),
)

script(
    "protocol_chosen_by_vote",
    "ClassicGroup.selectProtocol: candidates are the protocols every member supports, each member votes for "
    "its first candidate, the most votes wins (ties in java.util.HashMap order).",
    join("a", names=("roundrobin", "range"), expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("a", names=("roundrobin", "range"), expect=ok(protocol_name="roundrobin")),
    sync("a", leader=True, protocol_name="roundrobin"),
    join("b", names=("range", "roundrobin"), expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("b", names=("range", "roundrobin"), parked=True),
    rejoin("a", names=("roundrobin", "range"), note="1 vote each: the HashMap order decides"),
    Await("b"),
    sync("b", 4, parked=True),
    sync("a", 4, leader=True),
    Await("b"),
    join("c", names=("range", "sticky"), expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("c", names=("range", "sticky"), parked=True),
    rejoin("a", names=("roundrobin", "range"), parked=True),
    rejoin("b", names=("range", "roundrobin"), expect=ok(protocol_name="range")),
    Await("a", expect=ok(protocol_name="range")),
    Await("c", expect=ok(protocol_name="range")),
    describe("x"),
)


# ============================================================================ rebalance in progress


script(
    "rebalance_in_progress_everywhere",
    "While PreparingRebalance: SyncGroup is REBALANCE_IN_PROGRESS (classicGroupSyncToClassicGroup), Heartbeat "
    "too but it renews the session (classicGroupHeartbeatToClassicGroup), OffsetCommit at the current "
    "generation is accepted (ClassicGroup.validateOffsetCommit). While CompletingRebalance: OffsetCommit is "
    "REBALANCE_IN_PROGRESS, Heartbeat is NONE.",
    *stable_pair(),
    rejoin("a", parked=True, note="the leader's rejoin forces a rebalance"),
    sync("b", expect=err(codes.REBALANCE_IN_PROGRESS)),
    heartbeat("b", expect=err(codes.REBALANCE_IN_PROGRESS)),
    commit("b", generation=2, member=M("b"), expect=committed(codes.NONE)),
    commit("b", generation=3, member=M("b"), expect=committed(codes.ILLEGAL_GENERATION)),
    describe("x", expect={"groups": [{"group_state": "PreparingRebalance", "protocol_data": ""}]}),
    rejoin("b", expect=ok(generation_id=3)),
    Await("a", expect=ok(generation_id=3, leader=M("a"))),
    describe("x", expect={"groups": [{"group_state": "CompletingRebalance"}]}),
    commit("a", generation=3, member=M("a"), expect=committed(codes.REBALANCE_IN_PROGRESS)),
    heartbeat("a", expect=ok()),
    sync("b", parked=True),
    sync("a", leader=True),
    Await("b", expect=ok(assignment=b"b#1")),
    commit("a", generation=3, member=M("a"), expect=committed(codes.NONE)),
)


# ============================================================================ joins in every state


script(
    "joins_during_every_state",
    "classicGroupJoinExistingMember per state: Stable follower with unchanged metadata gets the current "
    "generation at once; changed metadata rebalances; PreparingRebalance parks; CompletingRebalance with "
    "unchanged metadata answers the current generation again (a lost JoinGroup answer), changed metadata "
    "rebalances and answers the parked SyncGroups REBALANCE_IN_PROGRESS (resetAndPropagateAssignmentWithError).",
    *stable_pair(),
    rejoin("b", expect=ok(generation_id=2, members=[]), note="Stable, follower, same metadata"),
    heartbeat("a", expect=ok()),
    rejoin("b", names=("range", "roundrobin"), parked=True, note="Stable, changed metadata"),
    describe("x", expect={"groups": [{"group_state": "PreparingRebalance"}]}),
    join("c", expect=err(codes.MEMBER_ID_REQUIRED), note="new member during PreparingRebalance"),
    rejoin("c", parked=True),
    rejoin("a", expect=ok(generation_id=3)),
    Await("b", expect=ok(generation_id=3)),
    Await("c", expect=ok(generation_id=3)),
    rejoin("b", names=("range", "roundrobin"), expect=ok(generation_id=3), note="CompletingRebalance, same"),
    sync("c", parked=True),
    rejoin("b", parked=True, note="CompletingRebalance, changed metadata"),
    Await("c", expect=err(codes.REBALANCE_IN_PROGRESS)),
    rejoin("a", parked=True),
    rejoin("c", expect=ok(generation_id=4)),
    Await("a"),
    Await("b"),
    describe("x"),
)

script(
    "join_an_empty_group_after_everyone_left",
    "A group whose members all left is Empty with its generation kept (completeClassicGroupJoin with no "
    "member, initNextGeneration); the next JoinGroup starts the next generation (prepareRebalance from Empty).",
    *lone_leader(),
    leave("a"),
    describe("x", expect={"groups": [{"group_state": "Empty"}]}),
    heartbeat("a", expect=err(codes.UNKNOWN_MEMBER_ID)),
    sync("a", expect=err(codes.UNKNOWN_MEMBER_ID)),
    join("b", expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("b", expect=ok(generation_id=3, leader=M("b"))),
    sync("b", leader=True),
    describe("x"),
)


# ============================================================================ group.max.size


script(
    "group_max_size",
    "acceptJoiningMember (KIP-389, group.max.size=3 here): a fourth member is GROUP_MAX_SIZE_REACHED in Stable; "
    "during PreparingRebalance up to max members may be awaiting JoinGroup, so a known member rejoining past "
    "it is refused and removed (classicGroupJoinToClassicGroup calls ClassicGroup.remove). That removal does "
    "not complete the barrier (no maybeCompleteJoinPhase): the join completes at the rebalance timeout.",
    join("a", rebalance=RT, expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("a", rebalance=RT, expect=ok(generation_id=1)),
    sync("a", leader=True),
    join("b", rebalance=RT, expect=err(codes.MEMBER_ID_REQUIRED)),
    join("c", rebalance=RT, expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("b", rebalance=RT, parked=True),
    rejoin("c", rebalance=RT, parked=True),
    rejoin("a", rebalance=RT, expect=ok(generation_id=2)),
    Await("b"),
    Await("c"),
    sync("b", parked=True),
    sync("c", parked=True),
    sync("a", leader=True),
    Await("b"),
    Await("c"),
    join("d", rebalance=RT, expect=err(codes.GROUP_MAX_SIZE_REACHED), note="Stable and full"),
    rejoin("a", rebalance=RT, parked=True),
    join("d", rebalance=RT, expect=err(codes.MEMBER_ID_REQUIRED), note="PreparingRebalance, 1 of 3 awaiting"),
    rejoin("d", rebalance=RT, parked=True),
    rejoin("b", rebalance=RT, parked=True),
    rejoin("c", rebalance=RT, expect=err(codes.GROUP_MAX_SIZE_REACHED), note="3 of 3 awaiting: c is removed"),
    Await("a", after_ms=RT, expect=ok(generation_id=3)),
    Await("d", expect=ok(generation_id=3)),
    Await("b", expect=ok(generation_id=3)),
    heartbeat("c", generation=2, expect=err(codes.UNKNOWN_MEMBER_ID)),
    describe("x"),
)


# ============================================================================ oversize strings

BIG = "x" * 32768
LIMIT = "y" * 32767
BIG_UTF8 = "é" * 16384  # 16384 characters, 32768 bytes


script(
    "oversize_join_reason_closes_the_connection",
    "Kafka reads a STRING longer than 0x7fff bytes as malformed (the generated JoinGroupRequestData.read "
    "throws; RequestContext.parseRequest: InvalidRequestException) and SocketServer closes the connection "
    "without answering; a reason of exactly 0x7fff bytes is accepted. So does the model behind the proxy "
    "(kgroup.testing._model_wire.check_string_lengths). JoinGroup answers MEMBER_ID_REQUIRED before the "
    "record that creates a new group is committed (GroupMetadataManager.classicGroupJoin appends an empty "
    "GroupMetadata record), and DescribeGroups reads at the last committed offset, so the describe waits for a "
    "write to the same group first.",
    join("a", 8, reason=BIG, expect=CLOSED),
    join("a", 8, reason=LIMIT, expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("a", 8, reason=BIG_UTF8, expect=CLOSED, note="the limit counts UTF-8 bytes"),
    join("b", 9, instance=BIG, expect=CLOSED, note="group_instance_id"),
    join("b", 9, group=G2, expect=err(codes.MEMBER_ID_REQUIRED)),
    heartbeat(
        "b",
        group=G2,
        generation=1,
        expect=err(codes.UNKNOWN_MEMBER_ID),
        note="a write: the coordinator answers it only once the new group's record is committed",
    ),
    describe("x", groups=[G2], expect={"groups": [{"group_state": "Empty"}]}),
)

script(
    "oversize_leave_reason_closes_the_connection",
    "LeaveGroup v5's per-member reason (KIP-800) over 0x7fff bytes: Kafka closes the connection "
    "(LeaveGroupRequestData.read); the member stays in the group.",
    *lone_leader(),
    leave("a", members=[(M("a"), None, BIG)], expect=CLOSED),
    heartbeat("a", expect=ok(), note="still a member, on a new connection"),
    leave("a", 4, members=[(M("a"), None, BIG)], expect=ok(), note="v4 has no reason field"),
    describe("x", expect={"groups": [{"group_state": "Empty"}]}),
)


script(
    "instance_id_at_the_limit_makes_an_unserializable_answer",
    "A group instance id of exactly 0x7fff bytes is read, and the static member joins, but its member id "
    "(ClassicGroup.generateMemberId: instance id, '-', UUID) is longer than a STRING may be: the JoinGroup "
    "answer fails to serialize (\"'leader' field is too long to be serialized\") and KafkaApis answers "
    "JoinGroupRequest.getErrorResponse, UNKNOWN_SERVER_ERROR without a member id; DescribeGroups of the group "
    "fails the same way. The group keeps the member.",
    join("a", 9, instance="i" * 0x7FFF, expect=err(codes.UNKNOWN_SERVER_ERROR, member_id="")),
    describe("x", expect={"groups": [{"error_code": codes.UNKNOWN_SERVER_ERROR}]}),
    list_groups("x", expect={"groups": [{"group_state": "CompletingRebalance"}]}),
    join("b", 9, instance="i" * (0x7FFF - 37), expect=ok(), note="member id of exactly 0x7fff bytes: fine", group=G2),
)


# ============================================================================ static membership


script(
    "static_member_restart_in_stable_and_fencing",
    "KIP-345: a static member joins without MEMBER_ID_REQUIRED (classicGroupJoinNewStaticMember); its "
    "restart with an empty member id gets a new id and the cached assignment without a rebalance "
    "(updateStaticMemberThenRebalanceOrCompleteJoin, ClassicGroup.replaceStaticMember); the old id is "
    "FENCED_INSTANCE_ID on Heartbeat, SyncGroup, OffsetCommit, LeaveGroup and JoinGroup (validateMember).",
    join("a", 5, instance="ia", expect=ok(generation_id=1, leader=M("a"))),
    sync("a", 3, leader=True, instance="ia"),
    join("b", 5, instance="ib", parked=True),
    rejoin("a", 5, instance="ia", expect=ok(generation_id=2)),
    Await("b", expect=ok(generation_id=2)),
    sync("b", 3, instance="ib", parked=True),
    sync("a", 3, leader=True, instance="ia"),
    Await("b", expect=ok(assignment=b"ib#1")),
    join("b2", 5, instance="ib", expect=ok(generation_id=2, leader=M("a"), members=[]), note="b restarts"),
    sync("b2", 3, instance="ib", expect=ok(assignment=b"ib#1")),
    heartbeat("a", 3, instance="ia", expect=ok(), note="no rebalance"),
    heartbeat("b", 3, instance="ib", expect=err(codes.FENCED_INSTANCE_ID)),
    sync("b", 3, instance="ib", expect=err(codes.FENCED_INSTANCE_ID)),
    commit("b", 7, generation=2, member=M("b"), instance="ib", expect=committed(codes.FENCED_INSTANCE_ID)),
    rejoin("b", 5, instance="ib", expect=err(codes.FENCED_INSTANCE_ID)),
    leave("b", 3, members=[(M("b"), "ib", None)], expect=ok(members=[{"error_code": codes.FENCED_INSTANCE_ID}])),
    heartbeat("b2", 3, instance="ib", expect=ok()),
    commit("b2", 7, generation=2, member=M("b2"), instance="ib", expect=committed(codes.NONE)),
    heartbeat("x", 3, member=FAKE_ID, generation=2, instance="ib", expect=err(codes.FENCED_INSTANCE_ID)),
    heartbeat("x", 3, member=M("b2"), generation=2, instance="iz", expect=err(codes.UNKNOWN_MEMBER_ID)),
    describe("x", 4),
)

script(
    "static_leader_restart_v9_skip_assignment",
    "KIP-814: a restarted static leader at JoinGroup v9 gets skip_assignment with the member list and is "
    "leader under its new id; its SyncGroup (no assignments) returns the cached assignment, nobody rebalances.",
    *static_pair(),
    join("a2", 9, instance="ia", expect=ok(generation_id=2, skip_assignment=True, leader=M("a2"))),
    sync("a2", instance="ia", assignments=[], expect=ok(assignment=b"ia#1")),
    heartbeat("b", instance="ib", expect=ok()),
    heartbeat("a", instance="ia", expect=err(codes.FENCED_INSTANCE_ID)),
    describe("x"),
)

script(
    "static_leader_restart_v8_names_the_old_leader",
    "Below JoinGroup v9 (no skip_assignment) a restarted static leader's answer names the leader id from "
    "before the replacement (updateStaticMemberThenRebalanceOrCompleteJoin's currentLeader), so the client "
    "acts as a follower and SyncGroup returns the cached assignment.",
    *static_pair(8),
    join("a2", 8, instance="ia", expect=ok(generation_id=2, leader=M("a"), members=[])),
    sync("a2", instance="ia", expect=ok(assignment=b"ia#1")),
    heartbeat("b", instance="ib", expect=ok()),
    describe("x"),
)

script(
    "static_member_rejoins_during_rebalances",
    "A static member replaced while PreparingRebalance joins the barrier (maybeCompleteJoinPhase); while "
    "CompletingRebalance it forces a new rebalance (prepareRebalance) and the fenced id's parked JoinGroup or "
    "SyncGroup gets FENCED_INSTANCE_ID (ClassicGroup.replaceStaticMember).",
    join("a", 9, instance="ia", expect=ok(generation_id=1)),
    sync("a", leader=True, instance="ia"),
    join("b", 9, instance="ib", parked=True),
    join("b2", 9, instance="ib", parked=True, note="b restarts while its JoinGroup is parked"),
    Await("b", expect=err(codes.FENCED_INSTANCE_ID)),
    rejoin("a", 9, instance="ia", expect=ok(generation_id=2)),
    Await("b2", expect=ok(generation_id=2)),
    sync("b2", instance="ib", parked=True),
    join("b3", 9, instance="ib", parked=True, note="CompletingRebalance: a new rebalance"),
    Await("b2", expect=err(codes.FENCED_INSTANCE_ID)),
    rejoin("a", 9, instance="ia", expect=ok(generation_id=3)),
    Await("b3", expect=ok(generation_id=3)),
    *static_sync("b3"),
    describe("x"),
)

script(
    "leave_group_batches_and_admin_removal",
    "classicGroupLeaveToClassicGroup: LeaveGroup v3+ batches identities with a result each; member id '' with "
    "a known instance id removes that static member (KIP-345 admin removal), an unknown one is "
    "UNKNOWN_MEMBER_ID; a pending (MEMBER_ID_REQUIRED) member's leave is a valid leave, so a Stable group "
    "rebalances (maybePrepareRebalanceOrCompleteJoin).",
    *static_pair(rejoin_checked=False),
    join("c", expect=err(codes.MEMBER_ID_REQUIRED)),
    leave("c", 5, members=[(M("c"), None, "pending")], expect=ok(members=[{"error_code": 0}])),
    heartbeat("a", instance="ia", expect=err(codes.REBALANCE_IN_PROGRESS), note="a valid leave: Stable rebalances"),
    leave(
        "x",
        5,
        members=[("", "ib", "admin"), ("", "iz", None), (FAKE_ID, None, None), ("", None, None)],
        expect=ok(members=[{"error_code": 0}, {"error_code": 25}, {"error_code": 25}, {"error_code": 25}]),
    ),
    heartbeat("a", instance="ia", expect=err(codes.REBALANCE_IN_PROGRESS)),
    heartbeat("b", instance="ib", expect=err(codes.UNKNOWN_MEMBER_ID)),
    rejoin("a", 9, instance="ia", expect=ok(generation_id=3)),
    sync("a", leader=True, instance="ia"),
    leave("x", 3, members=[("", "ia", None)], expect=ok(members=[{"error_code": 0}])),
    describe("x", expect={"groups": [{"group_state": "Empty"}]}),
)

script(
    "join_with_a_wrong_member_id_for_a_known_instance",
    "classicGroupJoinExistingMember/validateMember: a known instance id with another member id is "
    "FENCED_INSTANCE_ID; an unknown instance id with a member id is UNKNOWN_MEMBER_ID.",
    join("a", 9, instance="ia", expect=ok(generation_id=1)),
    sync("a", leader=True, instance="ia"),
    join("c", 9, member=FAKE_ID, instance="ia", expect=err(codes.FENCED_INSTANCE_ID)),
    join("c", 9, member=FAKE_ID, instance="ic", expect=err(codes.UNKNOWN_MEMBER_ID)),
    join("c", 9, member=M("a"), instance="ic", expect=err(codes.UNKNOWN_MEMBER_ID)),
    heartbeat("a", instance="ia", expect=ok()),
    describe("x"),
)


script(
    "pending_member_requests",
    "A pending member (MEMBER_ID_REQUIRED id, not rejoined) is not a member yet: its Heartbeat, SyncGroup and "
    "OffsetCommit are UNKNOWN_MEMBER_ID (ClassicGroup.validateMember); rejoining with a group instance id is "
    "refused (classicGroupJoinExistingMember throws IllegalStateException: UNKNOWN_SERVER_ERROR).",
    *lone_leader(),
    join("b", expect=err(codes.MEMBER_ID_REQUIRED)),
    heartbeat("b", generation=1, expect=err(codes.UNKNOWN_MEMBER_ID)),
    sync("b", generation=1, expect=err(codes.UNKNOWN_MEMBER_ID)),
    commit("b", generation=1, member=M("b"), expect=committed(codes.UNKNOWN_MEMBER_ID)),
    rejoin("b", instance="ib"),
    heartbeat("a", expect=ok()),
    describe("x"),
)

script(
    "leader_rejoins_while_completing_rebalance",
    "classicGroupJoinExistingMember in CompletingRebalance with unchanged protocols: the leader, whose JoinGroup "
    "answer was lost, gets it again with the member list; a new member joining then forces a rebalance and "
    "the parked SyncGroups get REBALANCE_IN_PROGRESS.",
    *stable_pair(),
    *b_rejoins_with_a_second_protocol(),
    rejoin("a", expect=ok(generation_id=3, leader=M("a"), members=[{"member_id": M("a")}, {"member_id": M("b")}])),
    sync("b", parked=True),
    join("c", expect=err(codes.MEMBER_ID_REQUIRED), note="new member while CompletingRebalance"),
    describe("x", expect={"groups": [{"group_state": "CompletingRebalance"}]}),
    rejoin("c", parked=True),
    Await("b", expect=err(codes.REBALANCE_IN_PROGRESS)),
    describe("x", expect={"groups": [{"group_state": "PreparingRebalance"}]}),
    heartbeat("a", expect=err(codes.REBALANCE_IN_PROGRESS)),
    rejoin("a", parked=True),
    rejoin("b", names=("range", "roundrobin"), expect=ok(generation_id=4)),
    Await("a", expect=ok(generation_id=4)),
    Await("c", expect=ok(generation_id=4)),
    sync("c", parked=True),
    sync("b", parked=True),
    sync("a", assignments=[], expect=ok(assignment=b""), note="the leader assigns nothing"),
    Await("c", expect=ok(assignment=b"")),
    Await("b", expect=ok(assignment=b"")),
    describe("x"),
)

script(
    "member_leaves_while_its_join_is_parked",
    "LeaveGroup for a member whose JoinGroup is parked (sent on another connection): "
    "removeCurrentMemberFromClassicGroup answers the parked JoinGroup UNKNOWN_MEMBER_ID, and the barrier "
    "completes without it (maybeCompleteJoinPhase). A heartbeat on another connection while parked is "
    "REBALANCE_IN_PROGRESS.",
    *stable_pair(),
    rejoin("b", names=("range", "roundrobin"), parked=True),
    heartbeat("b2", member=M("b"), generation=2, expect=err(codes.REBALANCE_IN_PROGRESS)),
    leave("b2", members=[(M("b"), None, "gone")]),
    Await("b", expect=err(codes.UNKNOWN_MEMBER_ID, member_id="")),
    rejoin("a", expect=ok(generation_id=3, members=[{"member_id": M("a")}])),
    sync("a", leader=True),
)

script(
    "duplicate_sync_while_parked",
    "The same member sends a second SyncGroup while its first is parked: Kafka overwrites the awaiting sync "
    "future (classicGroupSyncToClassicGroup, ClassicGroupMember.setAwaitingSyncFuture).",
    *stable_pair(),
    *b_rejoins_with_a_second_protocol(),
    sync("b", parked=True),
    sync("b2", member=M("b"), generation=3, parked=True),
    sync("a", leader=True),
    Await("b2", expect=ok(assignment=b"b#1")),
    Await("b"),
    difference=(
        "The model answers the superseded SyncGroup REBALANCE_IN_PROGRESS; Kafka's "
        "GroupMetadataManager.classicGroupSyncToClassicGroup replaces the member's awaitingSyncFuture and the "
        "first request is never answered. Kept, as for JoinGroup (documented in the model's module docstring)."
    ),
)

script(
    "static_member_survives_the_rebalance_timeout",
    "completeClassicGroupJoin removes only dynamic members that did not rejoin: a static member stays in the "
    "group (and in the leader's member list) past the rebalance timeout (KIP-345), is told ILLEGAL_GENERATION "
    "on the old generation and gets the current generation's answer when it rejoins during "
    "CompletingRebalance.",
    *static_pair(rebalance=RT),
    rejoin("a", 9, instance="ia", rebalance=RT, parked=True),
    Await("a", after_ms=RT, expect=ok(generation_id=3, members=[{"member_id": M("a")}, {"member_id": M("b")}])),
    heartbeat("b", instance="ib", expect=err(codes.ILLEGAL_GENERATION)),
    rejoin("b", 9, instance="ib", rebalance=RT, expect=ok(generation_id=3)),
    *static_sync(),
    describe("x"),
)

script(
    "static_member_session_expiry",
    "A static member is removed by its session timeout like a dynamic one (expireClassicGroupMemberHeartbeat), "
    "and the group rebalances; its instance id is then unknown.",
    *static_pair(b_session=SHORT),
    state_is("x", "PreparingRebalance", within_ms=3000, note="b's session (1000 ms) expires"),
    heartbeat("b", instance="ib", expect=err(codes.UNKNOWN_MEMBER_ID)),
    leave("x", members=[("", "ib", None)], expect=ok(members=[{"error_code": codes.UNKNOWN_MEMBER_ID}])),
    rejoin("a", 9, instance="ia", expect=ok(generation_id=3, members=[{"member_id": M("a")}])),
)


# ============================================================================ timers



script(
    "pending_member_expiry",
    "KIP-394: a pending member (MEMBER_ID_REQUIRED, never rejoined) holds the join barrier "
    "(ClassicGroup.hasAllMembersJoined) until its session timeout removes it "
    "(classicGroupJoinNewDynamicMember's heartbeat timer, expireClassicGroupMemberHeartbeat).",
    *lone_leader(),
    join("b", session=SHORT, expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("a", parked=True, note="the leader's rejoin starts a rebalance; b is pending"),
    Await("a", expect=ok(generation_id=2, members=[{"member_id": M("a")}])),
    rejoin("b", session=SHORT, expect=err(codes.UNKNOWN_MEMBER_ID), note="b's pending id expired"),
    describe("x"),
)

script(
    "session_expiry_in_stable",
    "expireClassicGroupMemberHeartbeat: a Stable member that stops heartbeating is removed after its own "
    "session timeout and the group rebalances (removeMemberAndUpdateClassicGroup); the other member's "
    "Heartbeat then gets REBALANCE_IN_PROGRESS and it rejoins alone.",
    *lone_leader(),
    join("b", session=SHORT, expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("b", session=SHORT, parked=True),
    rejoin("a", expect=ok(generation_id=2)),
    Await("b"),
    sync("b", parked=True),
    sync("a", leader=True),
    Await("b"),
    state_is("x", "PreparingRebalance", within_ms=3000, note="b's session (1000 ms) expires"),
    heartbeat("a", expect=err(codes.REBALANCE_IN_PROGRESS)),
    rejoin("a", expect=ok(generation_id=3, members=[{"member_id": M("a")}])),
    heartbeat("b", generation=2, expect=err(codes.UNKNOWN_MEMBER_ID)),
)

script(
    "rebalance_timeout_removes_a_member_that_does_not_rejoin",
    "completeClassicGroupJoin at the rebalance timeout (maybeCompleteJoinElseSchedule, the group's rebalance "
    "timeout is its members' largest): a dynamic member that did not rejoin is removed; the JoinGroup parked "
    "since the leader's rejoin completes after exactly that timeout.",
    *stable_pair(rebalance=RT),
    rejoin("a", rebalance=RT, parked=True),
    Await("a", after_ms=RT, expect=ok(generation_id=3, members=[{"member_id": M("a")}])),
    *removed_and_alone("b", "a"),
)

script(
    "leader_that_does_not_rejoin_is_replaced",
    "completeClassicGroupJoin/maybeElectNewJoinedLeader: when the leader does not rejoin before the rebalance "
    "timeout, the member that did becomes leader and the old leader is removed.",
    *stable_pair(rebalance=RT),
    rejoin("b", names=("range", "roundrobin"), rebalance=RT, parked=True, note="changed metadata"),
    Await("b", after_ms=RT, expect=ok(generation_id=3, leader=M("b"), members=[{"member_id": M("b")}])),
    *removed_and_alone("a", "b"),
)

script(
    "pending_sync_timeout",
    "expirePendingSync: after the join phase, a member that does not send SyncGroup within the rebalance "
    "timeout is removed and the group rebalances, even when the leader already synced (Stable).",
    *stable_pair(rebalance=RT),
    rejoin("b", names=("range", "roundrobin"), rebalance=RT, parked=True),
    rejoin("a", rebalance=RT, expect=ok(generation_id=3)),
    Await("b"),
    sync("a", leader=True, expect=ok()),
    state_is("x", "PreparingRebalance", within_ms=3000, note="b never syncs"),
    heartbeat("a", expect=err(codes.REBALANCE_IN_PROGRESS)),
    heartbeat("b", expect=err(codes.UNKNOWN_MEMBER_ID)),
    rejoin("a", rebalance=RT, expect=ok(generation_id=4, members=[{"member_id": M("a")}])),
)

script(
    "leader_leaves_mid_rebalance",
    "The leader leaves while PreparingRebalance (removeCurrentMemberFromClassicGroup, maybeCompleteJoinPhase): "
    "the barrier completes with the rejoined member, which leads (ClassicGroup.remove passes leadership).",
    *stable_pair(),
    rejoin("b", names=("range", "roundrobin"), parked=True),
    leave("a", members=[(M("a"), None, "shutting down")]),
    Await("b", expect=ok(generation_id=3, leader=M("b"), members=[{"member_id": M("b")}])),
    sync("b", leader=True, expect=ok(assignment=b"b#1")),
    describe("x"),
)

script(
    "leader_leaves_while_completing_rebalance",
    "The leader leaves while CompletingRebalance: the follower's parked SyncGroup is answered "
    "REBALANCE_IN_PROGRESS (prepareRebalance, resetAndPropagateAssignmentWithError) and it rejoins as leader.",
    *stable_pair(),
    *b_rejoins_with_a_second_protocol(),
    sync("b", parked=True),
    leave("a"),
    Await("b", expect=err(codes.REBALANCE_IN_PROGRESS)),
    rejoin("b", expect=ok(generation_id=4, leader=M("b"))),
    sync("b", leader=True),
)

script(
    "member_leaves_while_its_sync_is_parked",
    "A follower whose SyncGroup is parked leaves on another connection: Kafka removes it "
    "(removeCurrentMemberFromClassicGroup completes only a parked JoinGroup) and its SyncGroup is never "
    "answered.",
    *stable_pair(),
    *b_rejoins_with_a_second_protocol(),
    sync("b", parked=True),
    leave("b2", members=[(M("b"), None, None)]),
    Await("b"),
    heartbeat("a", expect=err(codes.REBALANCE_IN_PROGRESS)),
    difference=(
        "The model answers the orphaned SyncGroup UNKNOWN_MEMBER_ID at once; Kafka never answers it: "
        "GroupMetadataManager.removeCurrentMemberFromClassicGroup completes the member's awaiting JoinGroup "
        "future only, and ClassicGroup.remove drops the member with its awaiting SyncGroup future. Kept: a "
        "request the client would otherwise only see fail at request.timeout.ms is answered with the error "
        "Kafka's later requests give (documented in the model's module docstring)."
    ),
)

script(
    "duplicate_join_while_parked",
    "The same member sends a second JoinGroup while its first is parked (a client that timed out and retried "
    "on a new connection): Kafka overwrites the awaiting future (ClassicGroup.updateMember) and the first "
    "request is never answered.",
    *stable_pair(),
    rejoin("b", names=("range", "roundrobin"), parked=True),
    join("b2", member=M("b"), names=("range", "roundrobin"), parked=True),
    rejoin("a", expect=ok(generation_id=3)),
    Await("b2", expect=ok(generation_id=3)),
    Await("b"),
    difference=(
        "The model answers the superseded JoinGroup REBALANCE_IN_PROGRESS; Kafka's ClassicGroup.updateMember "
        "replaces the member's awaitingJoinFuture and the first request is never answered. Kept: an answer "
        "beats a hang until request.timeout.ms (documented in the model's module docstring)."
    ),
)


script(
    "parked_member_does_not_expire",
    "ClassicGroupMember.hasSatisfiedHeartbeat: a member parked in JoinGroup (not new) needs no heartbeat, so its "
    "1000 ms session does not end while it waits 1500 ms for a member that never rejoins; its session timer "
    "restarts when the join completes (completeClassicGroupJoin) and, with no SyncGroup, ends the group.",
    join("a", session=SHORT, rebalance=RT, expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("a", session=SHORT, rebalance=RT, expect=ok(generation_id=1)),
    sync("a", leader=True),
    join("b", rebalance=RT, expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("b", rebalance=RT, parked=True),
    rejoin("a", session=SHORT, rebalance=RT, expect=ok(generation_id=2)),
    Await("b", expect=ok(generation_id=2)),
    sync("b", parked=True),
    sync("a", leader=True),
    Await("b"),
    rejoin("a", session=SHORT, rebalance=RT, parked=True, note="a waits with its 1000 ms session"),
    Await("a", after_ms=RT, expect=ok(generation_id=3, members=[{"member_id": M("a")}])),
    state_is("x", "Empty", within_ms=3000, note="a never syncs: its session ends"),
    heartbeat("a", expect=err(codes.UNKNOWN_MEMBER_ID)),
)

script(
    "static_restart_that_changes_the_protocol_rebalances",
    "updateStaticMemberThenRebalanceOrCompleteJoin in Stable: when the restarted static member's protocols "
    "change the group's selected protocol (ClassicGroup.selectProtocol), the group rebalances instead of "
    "answering from the cache.",
    *static_pair(names=("range", "roundrobin")),
    join("a2", 9, instance="ia", names=("roundrobin",), parked=True, note="a restarts with roundrobin only"),
    heartbeat("a", instance="ia", expect=err(codes.FENCED_INSTANCE_ID)),
    heartbeat("b", instance="ib", expect=err(codes.REBALANCE_IN_PROGRESS)),
    rejoin("b", 9, instance="ib", names=("range", "roundrobin"), expect=ok(protocol_name="roundrobin")),
    Await("a2", expect=ok(generation_id=3, protocol_name="roundrobin", leader=M("a2"))),
    sync("b", instance="ib", protocol_name="roundrobin", parked=True),
    sync("a2", leader=True, instance="ia", protocol_name="roundrobin", expect=ok(assignment=b"ia#2")),
    Await("b", expect=ok(assignment=b"ib#1")),
)


# ============================================================================ offsets


script(
    "offset_commit_and_fetch_every_version",
    "Simple commits (generation -1, no member: an Empty simple group, OffsetMetadataManager.commitOffset) at "
    "OffsetCommit v2-v9 and OffsetFetch v1-v9: leader epochs from v6 (OffsetFetch v5), metadata, the "
    "all-partitions form (topics null) from OffsetFetch v2, the batched form from v8 (KIP-709).",
    *[commit("x", v, offsets={(T, v % 3): (100 + v, v, f"meta-v{v}")}, expect=committed(codes.NONE))
      for v in range(2, 10)],
    fetch("x", 1, topics={T: [0, 1, 2]}),
    *[fetch("x", v, topics=None) for v in range(2, 10)],
    *[fetch("x", v, topics={T: [0, 2], MISSING: [0]}) for v in (3, 5, 7, 9)],
    commit("x", 9, offsets={(T, 1): (7, -1, None)}, note="null metadata"),
    fetch("x", 9, topics={T: [1]}),
    fetch("x", 9, topics={}, note="no topics"),
    fetch("x", 5, topics={}),
    Send(
        "x",
        "OffsetFetch",
        9,
        {"groups": [{"group_id": G, "member_id": FAKE_ID, "member_epoch": 3, "topics": None}], "require_stable": False},
        note="a member id and epoch (KIP-848) on a classic group: ClassicGroup.validateOffsetFetch",
    ),
    describe("x", groups=[], note="no groups"),
    list_groups("x", 4, states=["Bogus"]),
)

script(
    "offset_commit_errors",
    "OffsetCommit partition errors: metadata over offset.metadata.max.bytes (4096) is "
    "OFFSET_METADATA_TOO_LARGE (OffsetMetadataManager.commitOffset), unknown topics and partitions "
    "UNKNOWN_TOPIC_OR_PARTITION (KafkaApis.handleOffsetCommitRequest filters them before the coordinator).",
    commit(
        "x",
        offsets={(T, 0): (1, -1, "m" * 4096), (T, 1): (1, -1, "m" * 4097), (T, 7): 1, (MISSING, 0): 1},
    ),
    commit("x", 2, offsets={(T, 2): (1, -1, "m" * 4097)}),
    fetch("x", topics={T: [0, 1, 2, 7], MISSING: [0]}),
    fetch("x", 1, topics={T: [0]}),
)

script(
    "offset_fetch_batches_groups_and_unknown_groups",
    "OffsetFetch v8+ batches groups (KIP-709), each answered on its own; an unknown group answers -1 offsets "
    "(OffsetMetadataManager.fetchOffsets), require_stable (v7+, KIP-447) has no pending transaction to wait for.",
    commit("x", offsets={(T, 0): 11}),
    commit("x", group=G2, offsets={(T, 1): 22}),
    fetch("x", 8, groups={G: {T: [0, 1]}, G2: None}),
    fetch("x", 9, groups={G2: {T: [1]}, G: None}, require_stable=True),
    fetch("x", 7, group=G2, topics=None, require_stable=True),
    fetch("x", 9, groups={G: None}),
    describe("x", groups=[G, G2]),
)

script(
    "member_commits_in_a_group_with_members",
    "ClassicGroup.validateOffsetCommit on a group with members: a member's commit at the current generation "
    "is accepted; generation -1 without a member id is UNKNOWN_MEMBER_ID (only an Empty group takes "
    "anonymous commits), and generation -1 with a member id ILLEGAL_GENERATION, at v5 and v9 alike.",
    *lone_leader(),
    commit("a", generation=1, member=M("a"), offsets={(T, 0): 3, (T, 1): 4}, expect=committed(codes.NONE, codes.NONE)),
    commit("x", 9, offsets={(T, 2): 9}, expect=committed(codes.UNKNOWN_MEMBER_ID)),
    commit("x", 5, offsets={(T, 2): 9}, expect=committed(codes.UNKNOWN_MEMBER_ID)),
    commit("a", 5, generation=-1, member=M("a"), offsets={(T, 2): 10}, expect=committed(codes.ILLEGAL_GENERATION)),
    commit("a", 6, generation=1, member=M("a"), offsets={(T, 2): (11, 4, "m")}, expect=committed(codes.NONE)),
    fetch("x", topics=None),
    fetch("x", 4, topics=None, note="no leader epoch before v5"),
)


# ============================================================================ describe, list, delete


script(
    "describe_groups_in_every_state_and_version",
    "GroupMetadataManager.describeGroups: an unknown group is Dead without error; Stable reports the protocol "
    "and member metadata; other states no protocol and no metadata (describeNoMetadata) but assignments; "
    "group_instance_id from v4; authorized operations only when asked (v3+); DescribeGroups v6 (KIP-1043).",
    *[describe("x", v, groups=[G, G2]) for v in range(7)],
    commit("x", group=G2),
    describe("x", 5, groups=[G2]),
    describe("x", 6, groups=[G2]),
    join("a", 9, instance="ia", expect=ok(generation_id=1)),
    describe("x", 4, note="CompletingRebalance"),
    sync("a", leader=True, instance="ia"),
    *[describe("x", v) for v in (0, 3, 4, 5, 6)],
    join("b", 9, instance="ib", parked=True),
    describe("x", 5, note="PreparingRebalance"),
    rejoin("a", 9, instance="ia"),
    Await("b"),
    describe("x", 5, note="CompletingRebalance, assignments cleared?"),
    Send("x", "DescribeGroups", 5, {"groups": [G, G2, Group("g3")], "include_authorized_operations": True}),
    Send("x", "DescribeGroups", 2, {"groups": [G], "include_authorized_operations": True}),
)

script(
    "list_groups_filters",
    "GroupMetadataManager.listGroups: every group, Empty ones too; states filter from v4 and types filter "
    "from v5, both case-insensitive (GroupType.parse); v0-3 answer no state.",
    commit("x", group=G2),
    join("a", expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("a", expect=ok(generation_id=1)),
    *[list_groups("x", v) for v in range(6)],
    list_groups("x", 4, states=["CompletingRebalance"]),
    list_groups("x", 4, states=["empty", "STABLE"]),
    list_groups("x", 5, types=["classic"]),
    list_groups("x", 5, types=["Consumer"]),
    list_groups("x", 5, types=["CLASSIC"], states=["Empty"]),
    list_groups("x", 5, types=["share"]),
    list_groups("x", 5, states=["Dead"]),
)

script(
    "delete_groups",
    "GroupCoordinatorShard.deleteGroups: a group with members is NON_EMPTY_GROUP (ClassicGroup.validateDeleteGroup), "
    "an unknown one GROUP_ID_NOT_FOUND (GroupMetadataManager.validateDeleteGroup); an Empty group is deleted "
    "with its offsets (OffsetMetadataManager.deleteAllOffsets), then described as Dead, not listed, and a "
    "JoinGroup creates it anew at generation 1.",
    *lone_leader(),
    commit("a", generation=1, member=M("a"), offsets={(T, 0): 5}),
    commit("x", group=G2, offsets={(T, 1): 6}),
    delete("x", 0, groups=[G, G2, Group("g3")]),
    describe("x", groups=[G, G2]),
    fetch("x", groups={G: None, G2: None}),
    list_groups("x"),
    leave("a"),
    delete("x", 1, groups=[G]),
    delete("x", 2, groups=[G, G2]),
    fetch("x", groups={G: None}),
    join("b", expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("b", expect=ok(generation_id=1)),
)


# ============================================================================ KIP-134 initial delay (second broker)


script(
    "initial_rebalance_delay_is_extended_by_new_members",
    "KIP-134 (group.initial.rebalance.delay.ms=1000 on this broker): the first rebalance of a new group waits "
    "the delay, again as long as new members keep joining (tryCompleteInitialRebalanceElseSchedule), and "
    "completes with everyone who joined.",
    join("a", expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("a", parked=True),
    join("b", expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("b", parked=True),
    Await("a", after_ms=2000, expect=ok(generation_id=1)),
    Await("b", expect=ok(generation_id=1)),
    describe("x"),
    broker="delayed",
)

script(
    "initial_rebalance_delay_is_bounded_by_the_rebalance_timeout",
    "KIP-134: the extensions stop when the first member's rebalance timeout (1500 ms) is used up: "
    "remaining = max(rebalance timeout - delay, 0), each extension min(delay, remaining).",
    join("a", rebalance=RT, expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("a", rebalance=RT, parked=True),
    join("b", rebalance=RT, expect=err(codes.MEMBER_ID_REQUIRED)),
    rejoin("b", rebalance=RT, parked=True),
    Await("a", after_ms=RT, expect=ok(generation_id=1)),
    Await("b", expect=ok(generation_id=1)),
    broker="delayed",
)
