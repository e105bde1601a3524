"""Random interleavings of several clients against the model: invariants hold, every parked reply completes.

Strategies are local to this file: they script the model's own request types and are of no use
elsewhere (``tests/strategies.py`` holds the codec strategies shared across the suite).
"""

from __future__ import annotations

import attrs
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kgroup import _error_codes as codes
from kgroup.testing.coordinator import JoinGroupResponse, LeaveMember, Reply, SyncGroupResponse
from kgroup.testing.coordinator._group import GroupState
from tests.unit.coordinator_model.helpers import G, Harness

N_CLIENTS = 3
SESSION = 10_000


@attrs.define
class Client:
    """A scripted consumer: it remembers its member id, generation and whether it leads."""

    name: str
    member_id: str = ""
    generation: int = -1
    members: tuple[str, ...] = ()
    leader: bool = False
    join: Reply[JoinGroupResponse] | None = None
    sync: Reply[SyncGroupResponse] | None = None
    replies: list[Reply[JoinGroupResponse] | Reply[SyncGroupResponse]] = attrs.Factory(list)


ACTIONS = ["join"] * 4 + ["sync"] * 4 + ["heartbeat"] * 2 + ["advance"] * 2 + ["leave", "commit", "rejoin_meta"]
actions = st.lists(
    st.tuples(
        st.sampled_from(ACTIONS),
        st.integers(0, N_CLIENTS - 1),
        st.one_of(st.integers(0, 4_000), st.integers(0, 20_000)),
    ),
    min_size=15,
    max_size=60,
)


def _absorb(client: Client) -> None:
    """Read the client's completed replies into its view of the group."""
    if client.join is not None and client.join.done:
        response = client.join.response
        client.join = None
        if response.error_code == codes.NONE:
            client.member_id = response.member_id
            client.generation = response.generation_id
            client.leader = response.leader == response.member_id
            client.members = tuple(m.member_id for m in response.members)
        elif response.error_code == codes.MEMBER_ID_REQUIRED:
            client.member_id = response.member_id
        elif response.error_code == codes.UNKNOWN_MEMBER_ID:
            client.member_id, client.generation = "", -1
    if client.sync is not None and client.sync.done:
        client.sync = None


def _check_invariants(h: Harness, leaders_by_generation: dict[int, str], last_generation: list[int]) -> None:
    group = h.model._groups.get(G)
    if group is None:
        return
    # generation never goes back
    assert group.generation_id >= last_generation[0]
    last_generation[0] = group.generation_id
    # one leader, and it is a member
    if group.members:
        assert group.leader_id in group.members
    else:
        assert group.leader_id is None
    # static map and member map agree
    assert all(group.members[mid].group_instance_id == iid for iid, mid in group.static_members.items())
    # every member is either parked (its reply will re-arm it) or has a session timer
    for mid, member in group.members.items():
        assert member.awaiting_join or member.awaiting_sync or ("heartbeat", G, mid) in h.model._timers
    # a parked JoinGroup only exists while preparing; a parked SyncGroup only while completing
    for member in group.members.values():
        if member.awaiting_join:
            assert group.state is GroupState.PREPARING_REBALANCE
        if member.awaiting_sync:
            assert group.state is GroupState.COMPLETING_REBALANCE
    # each barrier has a timer that will close it
    if group.state is GroupState.PREPARING_REBALANCE:
        assert ("join", G) in h.model._timers
    if group.state is GroupState.COMPLETING_REBALANCE:
        assert ("sync", G) in h.model._timers
    # Stable: everybody was in the leader's list and got non-empty bytes
    if group.state is GroupState.STABLE:
        assert all(member.assignment for member in group.members.values())
    # every member answered for one generation agrees on its leader
    for member in group.members.values():
        assert member.member_id  # ids are never empty
    assert len(set(leaders_by_generation.values())) <= len(leaders_by_generation)


def run_script(script: list[tuple[str, int, int]], initial_delay: int, rebalance: int) -> set[str]:
    """Play ``script`` against a fresh model, checking the invariants after every step.

    Returns:
        What was observed (group states, whether a SyncGroup was ever parked), for coverage.

    """
    h = Harness(group_initial_rebalance_delay_ms=initial_delay)
    clients = [Client(name=f"c{i}") for i in range(N_CLIENTS)]
    leaders_by_generation: dict[int, str] = {}
    last_generation = [0]
    observed: set[str] = set()

    def record_leader(reply: Reply[JoinGroupResponse]) -> None:
        def callback(response: JoinGroupResponse) -> None:
            if response.error_code == codes.NONE:
                seen = leaders_by_generation.setdefault(response.generation_id, response.leader)
                assert seen == response.leader, (response.generation_id, seen, response.leader)

        reply.add_done_callback(callback)

    for action, index, amount in script:
        client = clients[index]
        for c in clients:
            _absorb(c)
        if action in ("join", "rejoin_meta") and client.join is None:
            protocols = (("range", b"v2" if action == "rejoin_meta" else b"v1"),)
            reply = h.join(
                client.member_id, client_id=client.name, session=SESSION, rebalance=rebalance, protocols=protocols
            )
            record_leader(reply)
            client.join = reply
            client.replies.append(reply)
        elif action == "sync" and client.generation >= 0 and client.sync is None and client.join is None:
            assignments = {m: f"x:{m}".encode() for m in client.members} if client.leader else None
            reply = h.sync(client.member_id, client.generation, assignments)
            client.sync = reply
            client.replies.append(reply)
            if not reply.done:
                observed.add("a SyncGroup parked")
        elif action == "heartbeat" and client.member_id:
            code = h.heartbeat(client.member_id, client.generation)
            assert code in (codes.NONE, codes.REBALANCE_IN_PROGRESS, codes.ILLEGAL_GENERATION, codes.UNKNOWN_MEMBER_ID)
        elif action == "leave" and client.member_id and client.join is None and client.sync is None:
            h.leave(LeaveMember(member_id=client.member_id))
            client.member_id, client.generation = "", -1
        elif action == "commit" and client.member_id:
            h.commit({("t", 0): amount}, member_id=client.member_id, generation=client.generation)
        elif action == "advance":
            h.advance(amount / 1000)
        _check_invariants(h, leaders_by_generation, last_generation)
        observed.add(f"state {h.model.group_state(G)}")

    # left alone, the coordinator answers everything: join/sync/session timers all run out
    for _ in range(40):
        h.advance(10)
        _check_invariants(h, leaders_by_generation, last_generation)
    for client in clients:
        for reply in client.replies:
            assert reply.done, (client, reply)
    assert h.model.group_state(G) in ("Empty", "Dead")
    assert h.model.next_deadline() is None
    return observed


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=actions, initial_delay=st.sampled_from([0, 3000]), rebalance=st.sampled_from([6_000, 15_000]))
def test_random_interleavings_keep_the_invariants_and_complete_every_reply(script, initial_delay, rebalance):
    for what in run_script(script, initial_delay, rebalance):
        event(what)
