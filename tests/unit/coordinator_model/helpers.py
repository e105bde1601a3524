"""Scripted requests for the coordinator model's unit tests.

:class:`Harness` wraps one :class:`GroupCoordinatorModel` on a :class:`FakeClock`, with
deterministic member ids (``"<client or instance id>-<n>"``) and short builders for every request.
Defaults: group ``"g"``, JoinGroup v9 with session 10 s and rebalance timeout 30 s, the
``consumer`` protocol type with a single ``range`` protocol, and *no* initial rebalance delay
(``group_initial_rebalance_delay_ms=0``, as test brokers are usually configured) unless a test
asks for one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kgroup import _error_codes as codes
from kgroup.testing import FakeClock
from kgroup.testing.coordinator import (
    CommitPartition,
    CommitTopic,
    CoordinatorConfig,
    DeleteGroupsRequest,
    DescribedGroup,
    DescribeGroupsRequest,
    FetchTopic,
    GroupCoordinatorModel,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeaveMember,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Reply,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)

G = "g"
RANGE = (("range", b"range-meta"),)


class _Default:
    """The protocol name of the group's last successful JoinGroup answer (SyncGroup v5 must carry it)."""


DEFAULT = _Default()


class Harness:
    """A model, its fake clock and request builders."""

    def __init__(
        self,
        *,
        partition_exists: Callable[[str, int], bool] | None = None,
        **config: int,
    ) -> None:
        config.setdefault("group_initial_rebalance_delay_ms", 0)
        self.clock = FakeClock(1000.0)
        self._counter = 0
        self._protocols: dict[str, str | None] = {}
        self.model = GroupCoordinatorModel(
            CoordinatorConfig(**config),
            clock=self.clock,
            partition_exists=partition_exists,
            member_id_factory=self._next_id,
        )

    def _next_id(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}-{self._counter}"

    # --- time ---------------------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        """Move the clock and fire due timers."""
        self.clock.advance(seconds)
        self.model.tick()

    def now_ms(self) -> int:
        return round(self.clock.monotonic() * 1000)

    # --- requests -----------------------------------------------------------------------------

    def join(
        self,
        member_id: str = "",
        *,
        group: str = G,
        version: int = 9,
        session: int = 10_000,
        rebalance: int = 30_000,
        instance: str | None = None,
        protocols: tuple[tuple[str, bytes], ...] = RANGE,
        protocol_type: str = "consumer",
        client_id: str = "c",
        reason: str | None = None,
    ) -> Reply[JoinGroupResponse]:
        reply = self.model.join_group(
            JoinGroupRequest(
                api_version=version,
                group_id=group,
                session_timeout_ms=session,
                rebalance_timeout_ms=rebalance,
                member_id=member_id,
                group_instance_id=instance,
                protocol_type=protocol_type,
                protocols=protocols,
                reason=reason,
                client_id=client_id,
                client_host=f"/10.0.0.{len(client_id)}",
            )
        )
        reply.add_done_callback(lambda response: self._remember_protocol(group, response))
        return reply

    def _remember_protocol(self, group: str, response: JoinGroupResponse) -> None:
        if response.error_code == codes.NONE:
            self._protocols[group] = response.protocol_name

    def new_member(self, client_id: str = "c", **kwargs: object) -> tuple[str, Reply[JoinGroupResponse]]:
        """A dynamic member's first join: MEMBER_ID_REQUIRED, then the join with the given id."""
        first = self.join(client_id=client_id, **kwargs).response  # type: ignore[arg-type]
        assert first.error_code == codes.MEMBER_ID_REQUIRED, first
        assert first.member_id
        return first.member_id, self.join(first.member_id, client_id=client_id, **kwargs)  # type: ignore[arg-type]

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        group: str = G,
        instance: str | None = None,
        version: int = 5,
        protocol_type: str | None = "consumer",
        protocol_name: str | _Default | None = DEFAULT,
    ) -> Reply[SyncGroupResponse]:
        """SyncGroup; v5 carries the protocol type and, unless given, the protocol of the last JoinGroup answer."""
        if isinstance(protocol_name, _Default):
            protocol_name = self._protocols.get(group)
        return self.model.sync_group(
            SyncGroupRequest(
                api_version=version,
                group_id=group,
                generation_id=generation,
                member_id=member_id,
                group_instance_id=instance,
                protocol_type=protocol_type,
                protocol_name=protocol_name,
                assignments=tuple(
                    SyncGroupAssignment(member_id=mid, assignment=data) for mid, data in (assignments or {}).items()
                ),
            )
        )

    def heartbeat(self, member_id: str, generation: int, *, group: str = G, instance: str | None = None) -> int:
        reply = self.model.heartbeat(
            HeartbeatRequest(
                api_version=4,
                group_id=group,
                generation_id=generation,
                member_id=member_id,
                group_instance_id=instance,
            )
        )
        assert reply.done
        return reply.response.error_code

    def leave(self, *members: LeaveMember, group: str = G, version: int = 5) -> LeaveGroupResponse:
        reply = self.model.leave_group(LeaveGroupRequest(api_version=version, group_id=group, members=members))
        assert reply.done
        return reply.response

    def commit(
        self,
        offsets: dict[tuple[str, int], int] | Iterable[CommitTopic],
        *,
        member_id: str = "",
        generation: int = -1,
        instance: str | None = None,
        group: str = G,
        version: int = 9,
    ) -> OffsetCommitResponse:
        if isinstance(offsets, dict):
            topics: dict[str, list[CommitPartition]] = {}
            for (topic, partition), offset in offsets.items():
                topics.setdefault(topic, []).append(CommitPartition(partition_index=partition, committed_offset=offset))
            commit_topics = tuple(CommitTopic(name=name, partitions=tuple(parts)) for name, parts in topics.items())
        else:
            commit_topics = tuple(offsets)
        reply = self.model.offset_commit(
            OffsetCommitRequest(
                api_version=version,
                group_id=group,
                generation_id=generation,
                member_id=member_id,
                group_instance_id=instance,
                topics=commit_topics,
            )
        )
        assert reply.done
        return reply.response

    def commit_errors(self, offsets: dict[tuple[str, int], int], **kwargs: object) -> dict[tuple[str, int], int]:
        response = self.commit(offsets, **kwargs)  # type: ignore[arg-type]
        return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}

    def fetch(
        self, topics: dict[str, tuple[int, ...]] | None = None, *, group: str = G, version: int = 8
    ) -> OffsetFetchResponse:
        request_topics = (
            None
            if topics is None
            else tuple(FetchTopic(name=name, partition_indexes=parts) for name, parts in topics.items())
        )
        reply = self.model.offset_fetch(OffsetFetchRequest(api_version=version, group_id=group, topics=request_topics))
        assert reply.done
        return reply.response

    def describe(self, group: str = G) -> DescribedGroup:
        reply = self.model.describe_groups(DescribeGroupsRequest(api_version=5, groups=(group,)))
        assert reply.done
        (described,) = reply.response.groups
        return described

    def delete(self, *groups: str, version: int = 2) -> dict[str, int]:
        """DeleteGroups: ``{group id: error code}``."""
        reply = self.model.delete_groups(DeleteGroupsRequest(api_version=version, groups=groups))
        assert reply.done
        return {r.group_id: r.error_code for r in reply.response.results}

    def list_groups(self, states: tuple[str, ...] = (), types: tuple[str, ...] = ()) -> ListGroupsResponse:
        reply = self.model.list_groups(ListGroupsRequest(api_version=5, states_filter=states, types_filter=types))
        assert reply.done
        return reply.response

    # --- composite steps ----------------------------------------------------------------------

    def members(self, group: str = G) -> list[str]:
        return [m.member_id for m in self.describe(group).members]

    def state(self, group: str = G) -> str:
        return self.model.group_state(group)

    def kinds(self, kind: str, group: str = G) -> list[tuple[str, str]]:
        """``(member_id, detail)`` of every event of ``kind`` for ``group``."""
        return [(e.member_id, e.detail) for e in self.model.events if e.kind == kind and e.group_id == group]

    def form_group(self, n: int, *, group: str = G, **join_kwargs: object) -> tuple[list[str], int]:
        """Form a Stable group of ``n`` dynamic members (delay must be 0): ids in join order, generation.

        Member i joins; the members already in the group rejoin; everybody syncs, the leader
        assigning ``b"a-<member id>"``.
        """
        ids: list[str] = []
        generation = 0
        for i in range(n):
            mid, reply = self.new_member(client_id=f"m{i}", group=group, **join_kwargs)
            replies = {mid: reply}
            for other in ids:
                replies[other] = self.join(other, client_id=other.split("-")[0], group=group, **join_kwargs)  # type: ignore[arg-type]
            ids.append(mid)
            for r in replies.values():
                assert r.done, "join barrier did not complete"
                assert r.response.error_code == codes.NONE, r.response
            responses = {m: r.response for m, r in replies.items()}
            generation = responses[mid].generation_id
            leader = responses[mid].leader
            syncs = {m: self.sync(m, generation, group=group) for m in ids if m != leader}
            syncs[leader] = self.sync(leader, generation, {m: f"a-{m}".encode() for m in ids}, group=group)
            for m, s in syncs.items():
                assert s.done and s.response.error_code == codes.NONE, s
                assert s.response.assignment == f"a-{m}".encode()
        assert self.state(group) == "Stable"
        return ids, generation
