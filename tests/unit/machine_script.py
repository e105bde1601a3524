"""Script: drives a ``GroupMachine`` through public events only (design.md 2.7, tier 1).

Not a test module. ``Script`` owns a config and a fake ``now`` (plain float seconds; no clock,
no sleeps), records every command the machine returns and remembers the last command of each
kind, so a test can answer "the last JoinGroup" without juggling request ids:

    t = Script()
    m = t.machine()
    t.bring_to_stable(m, owned={tp("a", 0)}, leader=True)
    t.now += t.heartbeat_interval_s
    t.tick(m)                                   # -> [SendHeartbeat]
    t.handle(m, t.heartbeat_response(REBALANCE_IN_PROGRESS))

Response builders (``coordinator_found``, ``join_response``, ``sync_response`` ...) answer the
last command of the matching kind; pass ``request_id=`` to answer another one.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from kgroup._error_codes import MEMBER_ID_REQUIRED
from kgroup.config import ConsumerConfig
from kgroup.membership import GroupMachine, MemberState
from kgroup.membership import events as ev
from kgroup.membership.commands import (
    ComputeAssignment,
    DeliverStep,
    SendFindCoordinator,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
)
from kgroup.protocol.consumer_protocol import Assignment, encode_assignment
from kgroup.protocol.group_api import JoinGroupMember
from kgroup.types import TopicPartition

C = TypeVar("C")

#: the member id the fake coordinator hands out (KIP-394 MEMBER_ID_REQUIRED)
MEMBER_ID = "m-1"
#: the coordinator's node id
NODE_ID = 7

BASE_CONFIG: Mapping[str, Any] = {
    "bootstrap_servers": "x:1",
    "group_id": "g",
    "session_timeout_ms": 10000,
    "heartbeat_interval_ms": 3000,
    "max_poll_interval_ms": 60000,
    "request_timeout_ms": 30000,
    "retry_backoff_ms": 100,
    "retry_backoff_max_ms": 1000,
    "assignors": ("range",),
}


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def make_config(**overrides: Any) -> ConsumerConfig:
    """The tier-1 config: explicit timeouts (session 10 s, heartbeat 3 s, poll 60 s)."""
    return ConsumerConfig(**{**BASE_CONFIG, **overrides})


def kinds(cmds: Iterable[object]) -> list[type]:
    return [type(c) for c in cmds]


def of_kind(cmds: Iterable[object], kind: type[C]) -> list[C]:
    return [c for c in cmds if isinstance(c, kind)]


def only(cmds: Sequence[object], kind: type[C]) -> C:
    """The single command of ``cmds``, which must be a ``kind``."""
    assert kinds(cmds) == [kind], f"expected exactly [{kind.__name__}], got {list(cmds)!r}"
    return cmds[0]  # type: ignore[return-value]


class Script:
    """Tracks ``now``, the commands a machine emitted and the last command of each kind."""

    def __init__(self, config: ConsumerConfig | None = None, *, now: float = 0.0, **overrides: Any) -> None:
        self.config = config if config is not None else make_config(**overrides)
        self.now = now
        self.log: list[object] = []
        self.last: dict[type, object] = {}

    # ------------------------------------------------------------------ driving
    def machine(self, seed: int = 0) -> GroupMachine:
        return GroupMachine(self.config, rng=random.Random(seed))

    def record(self, cmds: list[Any]) -> list[Any]:
        for cmd in cmds:
            self.log.append(cmd)
            self.last[type(cmd)] = cmd
        return cmds

    def handle(self, m: GroupMachine, event: object, now: float | None = None) -> list[Any]:
        return self.record(m.handle(event, self.now if now is None else now))  # type: ignore[arg-type]

    def tick(self, m: GroupMachine, now: float | None = None) -> list[Any]:
        return self.record(m.tick(self.now if now is None else now))

    def last_of(self, kind: type[C]) -> C:
        cmd = self.last.get(kind)
        assert cmd is not None, f"no {kind.__name__} was emitted so far"
        return cmd  # type: ignore[return-value]

    @staticmethod
    def kinds(cmds: Iterable[object]) -> list[type]:
        return kinds(cmds)

    # ------------------------------------------------------------------ timers
    @property
    def heartbeat_interval_s(self) -> float:
        return self.config.heartbeat_interval_ms / 1000

    @property
    def session_timeout_s(self) -> float:
        return self.config.session_timeout_ms / 1000

    @property
    def max_poll_interval_s(self) -> float:
        return self.config.max_poll_interval_ms / 1000

    # ------------------------------------------------------------------ responses
    def _rid(self, kind: type, request_id: int | None) -> int:
        if request_id is not None:
            return request_id
        return self.last_of(kind).request_id  # type: ignore[attr-defined, no-any-return]

    def coordinator_found(
        self, error_code: int = 0, *, node_id: int = NODE_ID, request_id: int | None = None
    ) -> ev.FindCoordinatorResponded:
        rid = self._rid(SendFindCoordinator, request_id)
        if error_code:
            return ev.FindCoordinatorResponded(request_id=rid, error_code=error_code)
        return ev.FindCoordinatorResponded(request_id=rid, error_code=0, node_id=node_id, host="x", port=1)

    def member_id_required(self, member_id: str = MEMBER_ID, *, request_id: int | None = None) -> ev.JoinGroupResponded:
        rid = self._rid(SendJoinGroup, request_id)
        return ev.JoinGroupResponded(request_id=rid, error_code=MEMBER_ID_REQUIRED, member_id=member_id)

    def join_response(
        self,
        error_code: int = 0,
        *,
        generation_id: int = 1,
        member_id: str = MEMBER_ID,
        leader: str | None = None,
        members: Sequence[JoinGroupMember] | None = None,
        protocol: str | None = None,
        skip_assignment: bool = False,
        request_id: int | None = None,
    ) -> ev.JoinGroupResponded:
        """A JoinGroup response; by default this member leads and is the only member."""
        rid = self._rid(SendJoinGroup, request_id)
        if error_code:
            return ev.JoinGroupResponded(request_id=rid, error_code=error_code)
        join = self.last_of(SendJoinGroup)
        name, metadata = join.protocols[0]
        if members is None:
            members = [
                JoinGroupMember(member_id=member_id, group_instance_id=join.group_instance_id, metadata=metadata)
            ]
        return ev.JoinGroupResponded(
            request_id=rid,
            generation_id=generation_id,
            protocol_name=protocol if protocol is not None else name,
            leader=member_id if leader is None else leader,
            member_id=member_id,
            members=tuple(members),
            skip_assignment=skip_assignment,
        )

    def assignment_computed(
        self, plan: Mapping[str, Iterable[TopicPartition]], *, request_id: int | None = None
    ) -> ev.AssignmentComputed:
        assignments = tuple(
            (member, encode_assignment(Assignment(partitions=tuple(sorted(parts)))))
            for member, parts in sorted(plan.items())
        )
        return ev.AssignmentComputed(self._rid(ComputeAssignment, request_id), assignments)

    def sync_response(
        self,
        partitions: Iterable[TopicPartition] = (),
        error_code: int = 0,
        *,
        assignment: bytes | None = None,
        request_id: int | None = None,
    ) -> ev.SyncGroupResponded:
        rid = self._rid(SendSyncGroup, request_id)
        if error_code:
            return ev.SyncGroupResponded(request_id=rid, error_code=error_code)
        if assignment is None:
            assignment = encode_assignment(Assignment(partitions=tuple(sorted(partitions))))
        return ev.SyncGroupResponded(request_id=rid, error_code=0, assignment=assignment)

    def heartbeat_response(self, error_code: int = 0, *, request_id: int | None = None) -> ev.HeartbeatResponded:
        return ev.HeartbeatResponded(request_id=self._rid(SendHeartbeat, request_id), error_code=error_code)

    def leave_response(self, error_code: int = 0, *, request_id: int | None = None) -> ev.LeaveGroupResponded:
        return ev.LeaveGroupResponded(request_id=self._rid(SendLeaveGroup, request_id), error_code=error_code)

    def step_completed(self) -> ev.StepCompleted:
        return ev.StepCompleted(self.last_of(DeliverStep).step.step_id)

    # ------------------------------------------------------------------ whole flows
    def join_and_sync(
        self,
        m: GroupMachine,
        owned: Iterable[TopicPartition] = (),
        *,
        leader: bool = True,
        generation_id: int = 1,
        member_id: str = MEMBER_ID,
    ) -> DeliverStep:
        """Answer the outstanding JoinGroup with success and finish the round up to the step."""
        owned = frozenset(owned)
        cmds = self.handle(
            m,
            self.join_response(
                generation_id=generation_id,
                member_id=member_id,
                leader=member_id if leader else "someone-else",
            ),
        )
        if leader:
            only(cmds, ComputeAssignment)
            cmds = self.handle(m, self.assignment_computed({member_id: owned}))
        only(cmds, SendSyncGroup)
        return only(self.handle(m, self.sync_response(owned)), DeliverStep)

    def bring_to_stable(
        self,
        m: GroupMachine,
        owned: Iterable[TopicPartition] = (),
        *,
        leader: bool = True,
        topics: Iterable[str] | None = None,
        generation_id: int = 1,
        member_id: str = MEMBER_ID,
    ) -> None:
        """Subscribe a fresh machine and take it to STABLE owning ``owned`` at ``self.now``.

        FindCoordinator -> JoinGroup("") -> MEMBER_ID_REQUIRED -> JoinGroup(member_id) ->
        (leader: ComputeAssignment -> AssignmentComputed) -> SyncGroup -> DeliverStep ->
        StepCompleted.
        """
        owned = frozenset(owned)
        if topics is None:
            topics = {p.topic for p in owned} or {"a"}
        only(self.handle(m, ev.Subscribe(frozenset(topics))), SendFindCoordinator)
        first = only(self.handle(m, self.coordinator_found()), SendJoinGroup)
        assert first.member_id == ""
        second = only(self.handle(m, self.member_id_required(member_id)), SendJoinGroup)
        assert second.member_id == member_id
        step = self.join_and_sync(m, owned, leader=leader, generation_id=generation_id, member_id=member_id)
        assert step.step.assigned == owned
        assert self.handle(m, self.step_completed()) == []
        assert m.state is MemberState.STABLE
        assert m.owned == owned
        assert m.generation.generation_id == generation_id
