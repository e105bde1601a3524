"""The error table (design.md 2.4), row by row: ``classify``/``broker_error`` as data, and the
machine's observable reaction to every row of FindCoordinator, JoinGroup, SyncGroup and
Heartbeat, each fed in the state where that response is expected."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kgroup._error_codes import FENCED_INSTANCE_ID, MEMBER_ID_REQUIRED
from kgroup.errors import (
    TABLE,
    Api,
    BrokerError,
    CoordinatorUnavailable,
    Disposition,
    FatalGroupError,
    FencedInstanceIdError,
    GroupAuthorizationFailedError,
    InvalidRecordStateError,
    RebalanceInProgressError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
    broker_error,
    classify,
    error_name,
)
from kgroup.membership import GroupMachine, MemberState
from kgroup.membership import events as ev
from kgroup.membership.commands import (
    DeliverStep,
    Fail,
    Notify,
    SendFindCoordinator,
    SendHeartbeat,
    SendJoinGroup,
    SendSyncGroup,
)
from tests.unit.machine_script import MEMBER_ID, NODE_ID, Script, kinds, of_kind, only, tp

D = Disposition
OWNED = frozenset({tp("a", 0), tp("a", 1)})
NEW = frozenset({tp("a", 2)})
INSTANCE_ID = "inst-1"
T = 5.0  # when the response under test arrives

#: the rows Java's AbstractHeartbeatRequestManager gives both the consumer protocol (KIP-848)
#: and share groups (KIP-932)
HEARTBEAT_848 = {
    "NONE": D.OK,
    "COORDINATOR_NOT_AVAILABLE": D.REDISCOVER,
    "NOT_COORDINATOR": D.REDISCOVER,
    "COORDINATOR_LOAD_IN_PROGRESS": D.RETRY,
    "FENCED_MEMBER_EPOCH": D.RESET_GENERATION,
    "UNKNOWN_MEMBER_ID": D.RESET_GENERATION,
    "TOPIC_AUTHORIZATION_FAILED": D.RAISE,
    "GROUP_AUTHORIZATION_FAILED": D.FATAL,
    "INVALID_REQUEST": D.FATAL,
    "GROUP_MAX_SIZE_REACHED": D.FATAL,
    "UNSUPPORTED_ASSIGNOR": D.FATAL,
    "UNSUPPORTED_VERSION": D.FATAL,
}
AFTER_BACKOFF = T + 1.3  # retry_backoff_max_ms=1000 with +20% jitter is 1.2 s
UNKNOWN_CODE = 9999

# --------------------------------------------------------------------------- classify: data

#: Written out independently of kgroup.errors.TABLE (design.md 2.4 and Java's handlers), so a
#: change to the table fails here until this copy is updated on purpose.
SHARE_RECORDS = {
    "NONE": D.OK,
    "SHARE_SESSION_NOT_FOUND": D.RETRY_NOW,
    "INVALID_SHARE_SESSION_EPOCH": D.RETRY_NOW,
    "NOT_LEADER_FOR_PARTITION": D.REDISCOVER,
    "FENCED_LEADER_EPOCH": D.REDISCOVER,
    "UNKNOWN_LEADER_EPOCH": D.REDISCOVER,
    "LEADER_NOT_AVAILABLE": D.REDISCOVER,
    "UNKNOWN_TOPIC_OR_PARTITION": D.REDISCOVER,
    "UNKNOWN_TOPIC_ID": D.REDISCOVER,
    "KAFKA_STORAGE_ERROR": D.REDISCOVER,
    "SHARE_SESSION_LIMIT_REACHED": D.RETRY,
    "REQUEST_TIMED_OUT": D.RETRY,
    "NETWORK_EXCEPTION": D.RETRY,
    "COORDINATOR_NOT_AVAILABLE": D.RETRY,
    "COORDINATOR_LOAD_IN_PROGRESS": D.RETRY,
    "INVALID_RECORD_STATE": D.RAISE,
    "TOPIC_AUTHORIZATION_FAILED": D.RAISE,
    "GROUP_AUTHORIZATION_FAILED": D.FATAL,
    "INVALID_REQUEST": D.FATAL,
    "UNSUPPORTED_VERSION": D.FATAL,
}

EXPECTED: dict[Api, dict[str, Disposition]] = {
    Api.FIND_COORDINATOR: {
        "NONE": D.OK,
        "COORDINATOR_NOT_AVAILABLE": D.RETRY,
        "COORDINATOR_LOAD_IN_PROGRESS": D.RETRY,
        "NOT_COORDINATOR": D.RETRY,
        "REQUEST_TIMED_OUT": D.RETRY,
        "GROUP_AUTHORIZATION_FAILED": D.FATAL,
        "INVALID_REQUEST": D.FATAL,
        "UNSUPPORTED_VERSION": D.FATAL,
    },
    Api.JOIN_GROUP: {
        "NONE": D.OK,
        "COORDINATOR_LOAD_IN_PROGRESS": D.RETRY,
        "COORDINATOR_NOT_AVAILABLE": D.REDISCOVER,
        "NOT_COORDINATOR": D.REDISCOVER,
        "UNKNOWN_MEMBER_ID": D.RESET_MEMBER,
        "ILLEGAL_GENERATION": D.RESET_GENERATION,
        "MEMBER_ID_REQUIRED": D.ADOPT_MEMBER_ID,
        "REBALANCE_IN_PROGRESS": D.RETRY_NOW,
        "FENCED_INSTANCE_ID": D.FATAL,
        "INCONSISTENT_GROUP_PROTOCOL": D.FATAL,
        "INVALID_SESSION_TIMEOUT": D.FATAL,
        "INVALID_GROUP_ID": D.FATAL,
        "GROUP_AUTHORIZATION_FAILED": D.FATAL,
        "GROUP_MAX_SIZE_REACHED": D.FATAL,
        "UNSUPPORTED_VERSION": D.FATAL,
    },
    Api.SYNC_GROUP: {
        "NONE": D.OK,
        "REBALANCE_IN_PROGRESS": D.REJOIN,
        "COORDINATOR_NOT_AVAILABLE": D.REDISCOVER,
        "NOT_COORDINATOR": D.REDISCOVER,
        "ILLEGAL_GENERATION": D.RESET_GENERATION,
        "UNKNOWN_MEMBER_ID": D.RESET_MEMBER,
        "FENCED_INSTANCE_ID": D.FATAL,
        "GROUP_AUTHORIZATION_FAILED": D.FATAL,
        "INCONSISTENT_GROUP_PROTOCOL": D.FATAL,
    },
    Api.HEARTBEAT: {
        "NONE": D.OK,
        "COORDINATOR_NOT_AVAILABLE": D.REDISCOVER,
        "NOT_COORDINATOR": D.REDISCOVER,
        "REBALANCE_IN_PROGRESS": D.REJOIN,
        "ILLEGAL_GENERATION": D.RESET_GENERATION,
        "UNKNOWN_MEMBER_ID": D.RESET_MEMBER,
        "FENCED_INSTANCE_ID": D.FATAL,
        "GROUP_AUTHORIZATION_FAILED": D.FATAL,
    },
    Api.LEAVE_GROUP: {
        "NONE": D.OK,
        **{
            name: D.IGNORE
            for name in (
                "COORDINATOR_NOT_AVAILABLE",
                "NOT_COORDINATOR",
                "COORDINATOR_LOAD_IN_PROGRESS",
                "UNKNOWN_MEMBER_ID",
                "FENCED_INSTANCE_ID",
                "REBALANCE_IN_PROGRESS",
                "ILLEGAL_GENERATION",
                "GROUP_ID_NOT_FOUND",
                "GROUP_AUTHORIZATION_FAILED",
                "REQUEST_TIMED_OUT",
            )
        },
    },
    Api.OFFSET_COMMIT: {
        "NONE": D.OK,
        "COORDINATOR_LOAD_IN_PROGRESS": D.RETRY,
        "UNKNOWN_TOPIC_OR_PARTITION": D.RAISE,
        "COORDINATOR_NOT_AVAILABLE": D.REDISCOVER,
        "NOT_COORDINATOR": D.REDISCOVER,
        "REQUEST_TIMED_OUT": D.REDISCOVER,
        "REBALANCE_IN_PROGRESS": D.REJOIN,
        "ILLEGAL_GENERATION": D.RESET_GENERATION,
        "UNKNOWN_MEMBER_ID": D.RESET_MEMBER,
        "STALE_MEMBER_EPOCH": D.RESET_MEMBER,  # KIP-848 (OffsetCommit v9+)
        "FENCED_MEMBER_EPOCH": D.RESET_MEMBER,
        "OFFSET_METADATA_TOO_LARGE": D.RAISE,
        "INVALID_COMMIT_OFFSET_SIZE": D.RAISE,
        "TOPIC_AUTHORIZATION_FAILED": D.RAISE,
        "FENCED_INSTANCE_ID": D.FATAL,
        "GROUP_AUTHORIZATION_FAILED": D.FATAL,
    },
    Api.OFFSET_FETCH: {
        "NONE": D.OK,
        "COORDINATOR_LOAD_IN_PROGRESS": D.RETRY,
        "UNSTABLE_OFFSET_COMMIT": D.RETRY,
        "COORDINATOR_NOT_AVAILABLE": D.REDISCOVER,
        "NOT_COORDINATOR": D.REDISCOVER,
        "UNKNOWN_TOPIC_OR_PARTITION": D.RAISE,
        "TOPIC_AUTHORIZATION_FAILED": D.RAISE,
        "GROUP_AUTHORIZATION_FAILED": D.FATAL,
        "UNKNOWN_MEMBER_ID": D.RESET_MEMBER,
        "STALE_MEMBER_EPOCH": D.RESET_MEMBER,  # KIP-848 (OffsetFetch v9+)
        "ILLEGAL_GENERATION": D.RESET_GENERATION,
        "FENCED_INSTANCE_ID": D.FATAL,
    },
    # the consumer protocol (KIP-848): Java's ConsumerHeartbeatRequestManager
    Api.CONSUMER_GROUP_HEARTBEAT: {
        **HEARTBEAT_848,
        "UNRELEASED_INSTANCE_ID": D.FATAL,
        "FENCED_INSTANCE_ID": D.FATAL,
    },
    # share groups (KIP-932): Java's AbstractHeartbeatRequestManager as ShareHeartbeatRequestManager uses it
    # (UNSUPPORTED_ASSIGNOR is the handler's shared case; a share coordinator never sends it)
    Api.SHARE_GROUP_HEARTBEAT: HEARTBEAT_848,
    # the share consumer's ShareFetch and ShareAcknowledge (KIP-932): Java's ShareSessionHandler
    # (a session error opens a new session at once) and ShareConsumeRequestManager (a leader error
    # refreshes metadata; INVALID_RECORD_STATE fails the acknowledgements)
    Api.SHARE_FETCH: SHARE_RECORDS,
    Api.SHARE_ACKNOWLEDGE: SHARE_RECORDS,
    # a topic's error in a Metadata answer: Java's Metadata throws TopicAuthorizationException
    # from poll() (checkUnauthorizedTopics); other topic errors leave the topic out until later
    Api.METADATA: {
        "NONE": D.OK,
        "TOPIC_AUTHORIZATION_FAILED": D.RAISE,
    },
    # share groups' admin calls: Java's DescribeShareGroupsHandler and the ShareGroupOffsets
    # handlers retry a loading coordinator, unmap a moved one, and fail on the rest
    **{
        api: {
            "NONE": D.OK,
            "COORDINATOR_LOAD_IN_PROGRESS": D.RETRY,
            "COORDINATOR_NOT_AVAILABLE": D.REDISCOVER,
            "NOT_COORDINATOR": D.REDISCOVER,
            **dict.fromkeys(("GROUP_ID_NOT_FOUND", "NON_EMPTY_GROUP", "GROUP_AUTHORIZATION_FAILED",
                             "TOPIC_AUTHORIZATION_FAILED", "UNKNOWN_TOPIC_OR_PARTITION", "INVALID_REQUEST",
                             "UNSUPPORTED_VERSION"), D.RAISE),
        }
        for api in (Api.SHARE_GROUP_DESCRIBE, Api.DESCRIBE_SHARE_GROUP_OFFSETS, Api.ALTER_SHARE_GROUP_OFFSETS,
                    Api.DELETE_SHARE_GROUP_OFFSETS)
    },
    # a group's configs: Java's KafkaAdminClient fails the resource's future on its code; a timed-out
    # forward or a moved controller is retried (SET and DELETE are idempotent)
    **{
        api: {
            "NONE": D.OK,
            "REQUEST_TIMED_OUT": D.RETRY,
            "NOT_CONTROLLER": D.RETRY,
            **dict.fromkeys(("INVALID_CONFIG", "POLICY_VIOLATION", "GROUP_AUTHORIZATION_FAILED",
                             "CLUSTER_AUTHORIZATION_FAILED", "INVALID_REQUEST", "UNSUPPORTED_VERSION"), D.RAISE),
        }
        for api in (Api.DESCRIBE_CONFIGS, Api.INCREMENTAL_ALTER_CONFIGS)
    },
}


def _rows(apis: tuple[Api, ...]) -> list[pytest.param]:
    return [
        pytest.param(api, code, disposition, id=f"{api.value}-{error_name(code)}")
        for api in apis
        for code, disposition in TABLE[api].items()
    ]


ALL_ROWS = _rows(tuple(Api))
ERROR_ROWS = [row for row in ALL_ROWS if row.values[1] != 0]
MACHINE_APIS = (Api.FIND_COORDINATOR, Api.JOIN_GROUP, Api.SYNC_GROUP, Api.HEARTBEAT)
MACHINE_ROWS = _rows(MACHINE_APIS)


def test_classify_table_has_exactly_the_expected_rows():
    actual = {api: {error_name(code): d for code, d in rows.items()} for api, rows in TABLE.items()}
    assert actual == EXPECTED


@pytest.mark.parametrize(("api", "code", "disposition"), ALL_ROWS)
def test_classify_row_returns_expected_disposition(api, code, disposition):
    assert classify(api, code) is EXPECTED[api][error_name(code)]
    assert classify(api, code) is disposition


#: the Java response handlers' final ``else`` for a code they do not expect: OffsetCommit and
#: OffsetFetch fail that call ("Unexpected error in commit"), Heartbeat retries after backoff
#: (failHeartbeat), LeaveGroup ignores it; FindCoordinator/JoinGroup/SyncGroup raise it from
#: poll() once and try again ("Unexpected error in join group response")
EXPECTED_UNLISTED = {
    Api.FIND_COORDINATOR: D.RAISE,
    Api.JOIN_GROUP: D.RAISE,
    Api.SYNC_GROUP: D.RAISE,
    Api.HEARTBEAT: D.RETRY,
    Api.LEAVE_GROUP: D.IGNORE,
    Api.OFFSET_COMMIT: D.RAISE,
    Api.OFFSET_FETCH: D.RAISE,
    Api.CONSUMER_GROUP_HEARTBEAT: D.FATAL,  # Java's default case
    Api.SHARE_GROUP_HEARTBEAT: D.FATAL,  # Java's default case
    Api.SHARE_FETCH: D.RAISE,  # the fetch's error, raised from poll()
    Api.SHARE_ACKNOWLEDGE: D.RAISE,  # the acknowledgements failed
    Api.METADATA: D.IGNORE,
    Api.SHARE_GROUP_DESCRIBE: D.RAISE,  # Java's admin handlers: the call fails
    Api.DESCRIBE_SHARE_GROUP_OFFSETS: D.RAISE,
    Api.ALTER_SHARE_GROUP_OFFSETS: D.RAISE,
    Api.DELETE_SHARE_GROUP_OFFSETS: D.RAISE,
    Api.DESCRIBE_CONFIGS: D.RAISE,  # a group config call fails
    Api.INCREMENTAL_ALTER_CONFIGS: D.RAISE,
}


@pytest.mark.parametrize("api", list(Api), ids=[a.value for a in Api])
@pytest.mark.parametrize("code", [UNKNOWN_CODE, 1, -1], ids=["9999", "OFFSET_OUT_OF_RANGE", "UNKNOWN_SERVER_ERROR"])
def test_classify_code_not_in_row_takes_the_apis_unlisted_disposition(api, code):
    assert classify(api, code) is EXPECTED_UNLISTED[api]
    err = broker_error(api, code)
    assert type(err) is (FatalGroupError if EXPECTED_UNLISTED[api] is D.FATAL else BrokerError)
    assert "unexpected" in str(err)
    assert str(code) in str(err)
    assert err.name in str(err)


def _expected_type(code: int, disposition: Disposition) -> type[BrokerError]:
    """broker_error's documented mapping, most specific first."""
    name = error_name(code)
    if name == "FENCED_INSTANCE_ID":
        return FencedInstanceIdError
    if name in ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS"):
        return CoordinatorUnavailable
    if name == "REBALANCE_IN_PROGRESS":
        return RebalanceInProgressError
    if name == "UNKNOWN_TOPIC_OR_PARTITION":
        return UnknownTopicOrPartitionError
    if name == "TOPIC_AUTHORIZATION_FAILED":
        return TopicAuthorizationFailedError
    if name == "INVALID_RECORD_STATE":
        return InvalidRecordStateError
    if disposition is D.FATAL:
        return GroupAuthorizationFailedError if name == "GROUP_AUTHORIZATION_FAILED" else FatalGroupError
    return BrokerError


@pytest.mark.parametrize(("api", "code", "disposition"), ERROR_ROWS)
def test_broker_error_row_has_type_of_its_disposition(api, code, disposition):
    err = broker_error(api, code, "ctx")
    assert type(err) is _expected_type(code, disposition)
    assert err.api is api
    assert err.code == code
    assert err.name == error_name(code)
    assert f"{error_name(code)} ({code})" in str(err)
    assert "ctx" in str(err)
    assert "unexpected" not in str(err)  # every row is a known code for its API
    if disposition is D.FATAL:
        assert isinstance(err, FatalGroupError)
    elif code != FENCED_INSTANCE_ID:  # LeaveGroup ignores FENCED; the type is still Fenced*
        assert not isinstance(err, FatalGroupError)


def test_broker_error_join_unsupported_version_hints_at_static_membership():
    err = broker_error(Api.JOIN_GROUP, 35)
    assert isinstance(err, FatalGroupError)
    assert "JoinGroup v5" in str(err)


# --------------------------------------------------------------------------- the machine


class Case:
    """A machine waiting for ``api``'s response, and how to build that response."""

    def __init__(self, api: Api, *, static: bool) -> None:
        self.api = api
        self.t = Script(group_instance_id=INSTANCE_ID if static else None)
        self.m: GroupMachine = self.t.machine()
        self.owned_before: frozenset = frozenset()
        t, m = self.t, self.m
        if api is Api.FIND_COORDINATOR:
            only(t.handle(m, ev.Subscribe(frozenset({"a"})), now=0.0), SendFindCoordinator)
            return
        t.bring_to_stable(m, owned=OWNED)  # generation 1, member MEMBER_ID, at 0.0
        if api is Api.HEARTBEAT:
            only(t.tick(m, 3.0), SendHeartbeat)
            self.owned_before = OWNED
            return
        # an eager rejoin: revoke everything, then JoinGroup with the member id
        only(t.handle(m, ev.RequestRejoin("test"), now=1.0), DeliverStep)
        only(t.handle(m, t.step_completed(), now=1.0), SendJoinGroup)
        if api is Api.SYNC_GROUP:
            only(t.handle(m, t.join_response(generation_id=2, leader="other"), now=2.0), SendSyncGroup)

    def response(self, code: int) -> ev.Event:
        t = self.t
        if self.api is Api.FIND_COORDINATOR:
            return t.coordinator_found(code)
        if self.api is Api.JOIN_GROUP:
            if code == MEMBER_ID_REQUIRED:
                return t.member_id_required("m-new")
            return t.join_response(code, generation_id=2, leader="other")
        if self.api is Api.SYNC_GROUP:
            return t.sync_response(NEW, code)
        return t.heartbeat_response(code)

    def feed(self, code: int) -> list:
        return self.t.handle(self.m, self.response(code), now=T)

    def next_join(self, cmds: list) -> tuple[list[DeliverStep], SendJoinGroup]:
        """Complete any step in ``cmds``, tick past the backoff: the one JoinGroup that follows."""
        t, m = self.t, self.m
        steps = of_kind(cmds, DeliverStep)
        later = list(cmds)
        for step in steps:
            later += t.handle(m, ev.StepCompleted(step.step.step_id), now=T)
        later += t.tick(m, AFTER_BACKOFF)
        joins = of_kind(later, SendJoinGroup)
        assert len(joins) == 1, later
        return steps, joins[0]


def _expect_ok(case: Case, cmds: list) -> None:
    m = case.m
    if case.api is Api.FIND_COORDINATOR:
        assert only(cmds, SendJoinGroup).member_id == ""
        assert m.coordinator == NODE_ID
    elif case.api is Api.JOIN_GROUP:
        assert only(cmds, SendSyncGroup).generation_id == 2
        assert m.state is MemberState.SYNCING
    elif case.api is Api.SYNC_GROUP:
        steps = of_kind(cmds, DeliverStep)  # (a heartbeat falls due at T as well)
        assert [s.step.assigned for s in steps] == [NEW]
        assert m.owned == NEW
    else:
        assert cmds == []
        assert m.state is MemberState.STABLE
        # the session timer restarted at the Heartbeat's send time (3.0), not at the join
        # (0.0): nothing at 12.9; at 13.0 (session_timeout_ms=10000 since the send) the member
        # is in doubt: it holds its hand-outs and asks with a Heartbeat at once
        early = case.t.tick(m, 12.9)
        assert of_kind(early, DeliverStep) == [] and of_kind(early, SendFindCoordinator) == []
        assert not m.snapshot().hand_out_on_hold
        lapsed = case.t.tick(m, 13.0)
        assert of_kind(lapsed, DeliverStep) == []
        assert m.snapshot().hand_out_on_hold
        assert m.coordinator == NODE_ID


def _expect_retry(case: Case, cmds: list) -> None:
    kind = SendFindCoordinator if case.api is Api.FIND_COORDINATOR else SendJoinGroup
    assert of_kind(cmds, kind) == []
    assert of_kind(case.t.tick(case.m, T + 0.079), kind) == []  # first backoff >= 80 ms
    resent = of_kind(case.t.tick(case.m, T + 0.121), kind)  # ... and <= 120 ms
    assert len(resent) == 1
    if kind is SendJoinGroup:
        assert resent[0].member_id == MEMBER_ID


def _expect_rediscover(case: Case, cmds: list) -> None:
    t, m = case.t, case.m
    assert m.coordinator is None
    assert of_kind(cmds, SendJoinGroup) + of_kind(cmds, SendSyncGroup) + of_kind(cmds, SendHeartbeat) == []
    finds = of_kind(cmds + t.tick(m, AFTER_BACKOFF), SendFindCoordinator)
    assert len(finds) == 1
    found = t.handle(m, t.coordinator_found(), now=AFTER_BACKOFF)
    if case.api is Api.HEARTBEAT:  # the generation is kept: heartbeats resume, no rejoin
        assert of_kind(found, SendJoinGroup) == []
        assert m.generation.generation_id == 1
        assert m.owned == OWNED
        assert m.state is MemberState.STABLE
    else:
        assert only(found, SendJoinGroup).member_id == MEMBER_ID


def _expect_retry_now(case: Case, cmds: list) -> None:
    join = only(cmds, SendJoinGroup)
    assert join.member_id == MEMBER_ID
    assert case.m.state is MemberState.JOINING


def _expect_adopt(case: Case, cmds: list) -> None:
    assert only(cmds, SendJoinGroup).member_id == "m-new"
    assert case.m.state is MemberState.JOINING


def _expect_rejoin(case: Case, cmds: list) -> None:
    steps, join = case.next_join(cmds)
    if case.owned_before:  # eager: a clean revoke first, with the generation still valid
        assert [s.step.revoked for s in steps] == [case.owned_before]
        assert steps[0].step.generation.is_valid()
        assert steps[0].step.lost == frozenset()
    else:
        assert steps == []
    assert join.member_id == MEMBER_ID


def _expect_reset(member_id_after: str) -> Callable[[Case, list], None]:
    def check(case: Case, cmds: list) -> None:
        assert not case.m.generation.is_valid()
        assert case.m.generation.member_id == member_id_after
        steps, join = case.next_join(cmds)
        if case.owned_before:
            assert [s.step.lost for s in steps] == [case.owned_before]
            assert steps[0].step.revoked == frozenset()
        else:
            assert steps == []
        assert join.member_id == member_id_after
        assert case.m.owned == frozenset()

    return check


def _expect_fatal(case: Case, cmds: list, code: int) -> None:
    fails = of_kind(cmds, Fail)
    assert kinds(cmds)[-1:] == [Fail]
    assert len(fails) == 1
    error = fails[0].error
    assert isinstance(error, FatalGroupError)
    assert error.api is case.api
    assert error.code == code
    assert error_name(code) in str(error)
    if code == FENCED_INSTANCE_ID:
        assert isinstance(error, FencedInstanceIdError)
        assert INSTANCE_ID in str(error)
    if code == UNKNOWN_CODE:
        assert "9999" in str(error)
        assert "unexpected" in str(error)
    assert case.m.state is MemberState.FATAL
    with pytest.raises(FatalGroupError) as raised:
        case.m.handle(ev.Polled(), T + 1)
    assert raised.value is error
    with pytest.raises(FatalGroupError) as raised:
        case.m.tick(T + 100)
    assert raised.value is error


CHECKS: dict[Disposition, Callable[[Case, list], None]] = {
    D.OK: _expect_ok,
    D.RETRY: _expect_retry,
    D.REDISCOVER: _expect_rediscover,
    D.RETRY_NOW: _expect_retry_now,
    D.ADOPT_MEMBER_ID: _expect_adopt,
    D.REJOIN: _expect_rejoin,
    D.RESET_GENERATION: _expect_reset(MEMBER_ID),
    D.RESET_MEMBER: _expect_reset(""),
}


@pytest.mark.parametrize(("api", "code", "disposition"), MACHINE_ROWS)
def test_machine_response_row_has_outcome_of_its_disposition(api, code, disposition):
    case = Case(api, static=code == FENCED_INSTANCE_ID)
    cmds = case.feed(code)
    if disposition is D.FATAL:
        _expect_fatal(case, cmds, code)
    else:
        assert of_kind(cmds, Fail) == []
        CHECKS[disposition](case, cmds)


@pytest.mark.parametrize("api", [Api.JOIN_GROUP, Api.SYNC_GROUP], ids=["JoinGroup", "SyncGroup"])
def test_machine_join_or_sync_unknown_code_is_raised_once_and_the_member_joins_again(api):
    """Java: "Unexpected error in join group response" / "from SyncGroup" is thrown from poll();
    the member is not poisoned and joins again after backoff, keeping its generation."""
    case = Case(api, static=False)
    cmds = case.feed(UNKNOWN_CODE)
    assert of_kind(cmds, Fail) == []
    notified = only(cmds, Notify).error
    assert "9999" in str(notified)
    assert "unexpected" in str(notified)
    assert case.m.state is MemberState.UNJOINED
    assert len(of_kind(case.t.tick(case.m, T + 5.0), SendJoinGroup)) == 1


def test_machine_heartbeat_unknown_code_retries_after_backoff():
    """Java HeartbeatResponseHandler: an unexpected code fails that heartbeat only."""
    case = Case(Api.HEARTBEAT, static=False)
    cmds = case.feed(UNKNOWN_CODE)
    assert of_kind(cmds, Fail) == []
    assert case.m.state is MemberState.STABLE
    assert case.m.generation.generation_id == 1
    assert case.m.owned == OWNED
    assert of_kind(case.t.tick(case.m, T + 0.099), SendHeartbeat) == []
    assert len(of_kind(case.t.tick(case.m, T + 0.101), SendHeartbeat)) == 1


def test_machine_fenced_dynamic_member_error_is_still_fenced_type():
    case = Case(Api.HEARTBEAT, static=False)
    error = only(case.feed(FENCED_INSTANCE_ID), Fail).error
    assert isinstance(error, FencedInstanceIdError)
