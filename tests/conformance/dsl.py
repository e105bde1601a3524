"""Short builders for script steps (not a test module): one function per request, Kafka's field names.

Every builder fills the whole request body (all fields of all versions; the codec keeps those
the version has). Defaults: group ``G``; the ``consumer`` protocol type with one ``range``
protocol whose metadata is a subscription to ``t`` with user data ``range-<actor>``; session
timeout :data:`SESSION` and rebalance timeout :data:`REBALANCE` (long enough that nobody
expires unless a script says so); the newest version kgroup sends.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

from kgroup import _error_codes as codes

from .harness import ASSIGN_ALL, CLOSED, Await, Close, Gen, Group, M, Send, Topic, Until

__all__ = [
    "ASSIGN_ALL",
    "CLOSED",
    "G2",
    "REBALANCE",
    "SESSION",
    "Await",
    "Close",
    "G",
    "Gen",
    "M",
    "T",
    "codes",
    "commit",
    "delete",
    "describe",
    "err",
    "fetch",
    "heartbeat",
    "join",
    "leave",
    "list_groups",
    "ok",
    "rejoin",
    "state_is",
    "sync",
]

G = Group("g")
G2 = Group("g2")
T = Topic("t")
MISSING = Topic("missing")

SESSION = 10_000
REBALANCE = 10_000


def ok(**fields: Any) -> dict[str, Any]:
    """Expect error code NONE and these fields."""
    return {"error_code": codes.NONE, **fields}


def err(code: int, **fields: Any) -> dict[str, Any]:
    """Expect this error code and these fields."""
    return {"error_code": code, **fields}


def subscription(user_data: str, topics: Sequence[str] = ("t",)) -> bytes:
    """A ConsumerProtocolSubscription v0 (topics, user data): Kafka 4.x parses classic members' metadata.

    ``ClassicGroup.computeSubscribedTopics`` decodes it at every new generation (and logs a
    warning when it cannot), so the scripts send what a real consumer sends.
    """
    out = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        out += struct.pack(">h", len(topic)) + topic.encode()
    data = user_data.encode()
    return out + struct.pack(">i", len(data)) + data


def protocols(actor: str, *names: str) -> list[dict[str, Any]]:
    """The actor's protocols in preference order, each with a subscription whose user data is ``<name>-<actor>``."""
    return [{"name": name, "metadata": subscription(f"{name}-{actor}")} for name in names or ("range",)]


def _ids(actor: str, group: Group, member: Any, generation: Any, instance: str | None) -> dict[str, Any]:
    """A member's identity fields: the actor's member id and generation unless given."""
    return {
        "group_id": group,
        "generation_id": Gen(actor) if generation is None else generation,
        "member_id": M(actor) if member is None else member,
        "group_instance_id": instance,
    }


def join(actor: str, v: int = 9, *, member: Any = "", group: Group = G, instance: str | None = None,
         session: int = SESSION, rebalance: int = REBALANCE, names: Sequence[str] = ("range",),
         protocol_type: str = "consumer", reason: str | None = None, parked: bool = False, expect: Any = None,
         note: str = "") -> Send:
    """JoinGroup (member id ``""`` unless given: see :func:`rejoin`)."""
    fields = {"group_id": group, "session_timeout_ms": session, "rebalance_timeout_ms": rebalance, "member_id": member,
              "group_instance_id": instance, "protocol_type": protocol_type, "protocols": protocols(actor, *names),
              "reason": reason}
    return Send(actor, "JoinGroup", v, fields, parked=parked, expect=expect, note=note)


def rejoin(actor: str, v: int = 9, **kwargs: Any) -> Send:
    """JoinGroup with the member id the actor holds."""
    return join(actor, v, member=M(actor), **kwargs)


def sync(actor: str, v: int = 5, *, leader: bool = False, group: Group = G, member: Any = None, generation: Any = None,
         instance: str | None = None, protocol_type: str | None = "consumer", protocol_name: str | None = "range",
         assignments: Any = None, parked: bool = False, expect: Any = None, note: str = "") -> Send:
    """SyncGroup; a ``leader`` assigns to every member of its JoinGroup answer (``ASSIGN_ALL``)."""
    fields = {**_ids(actor, group, member, generation, instance), "protocol_type": protocol_type,
              "protocol_name": protocol_name,
              "assignments": (ASSIGN_ALL if leader else []) if assignments is None else assignments}
    return Send(actor, "SyncGroup", v, fields, parked=parked, expect=expect, note=note)


def heartbeat(actor: str, v: int = 4, *, group: Group = G, member: Any = None, generation: Any = None,
              instance: str | None = None, expect: Any = None, note: str = "") -> Send:
    """Heartbeat with the actor's member id and generation unless given."""
    return Send(actor, "Heartbeat", v, _ids(actor, group, member, generation, instance), expect=expect, note=note)


def leave(actor: str, v: int = 5, *, group: Group = G,
          members: Sequence[tuple[Any, str | None, str | None]] | None = None, expect: Any = None,
          note: str = "") -> Send:
    """LeaveGroup: v0-2 send ``members[0]``'s id alone; v3+ the batch of ``(member id, instance id, reason)``."""
    identities = list(members) if members is not None else [(M(actor), None, None)]
    fields = {
        "group_id": group,
        "member_id": identities[0][0] if identities else "",
        "members": [{"member_id": mid, "group_instance_id": iid, "reason": reason} for mid, iid, reason in identities],
    }
    return Send(actor, "LeaveGroup", v, fields, expect=expect, note=note)


def commit(actor: str, v: int = 9, *, group: Group = G,
           offsets: Mapping[tuple[Topic, int], int | tuple[int, int, str | None]] | None = None,
           generation: Any = -1, member: Any = "", instance: str | None = None, expect: Any = None,
           note: str = "") -> Send:
    """OffsetCommit of ``{(topic, partition): offset | (offset, leader epoch, metadata)}``."""
    by_topic: dict[Topic, list[dict[str, Any]]] = {}
    for (topic, partition), value in (offsets or {(T, 0): 5}).items():
        offset, epoch, metadata = value if isinstance(value, tuple) else (value, -1, "")
        by_topic.setdefault(topic, []).append({"partition_index": partition, "committed_offset": offset,
                                               "committed_leader_epoch": epoch, "committed_metadata": metadata})
    fields = {"group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
              "group_instance_id": instance, "retention_time_ms": -1,
              "topics": [{"name": topic, "partitions": parts} for topic, parts in by_topic.items()]}
    return Send(actor, "OffsetCommit", v, fields, expect=expect, note=note)


def _fetch_topics(topics: Mapping[Topic, Sequence[int]] | None) -> list[dict[str, Any]] | None:
    if topics is None:
        return None
    return [{"name": topic, "partition_indexes": list(parts)} for topic, parts in topics.items()]


def fetch(actor: str, v: int = 9, *, group: Group = G, topics: Mapping[Topic, Sequence[int]] | None = None,
          groups: Mapping[Group, Mapping[Topic, Sequence[int]] | None] | None = None, require_stable: bool = False,
          expect: Any = None, note: str = "") -> Send:
    """OffsetFetch of ``topics`` (``None``: every committed partition, v2+); v8+ may batch ``groups``."""
    batch = groups if groups is not None else {group: topics}
    fields = {
        "group_id": group,
        "topics": _fetch_topics(topics),
        "groups": [{"group_id": gid, "member_id": None, "member_epoch": -1, "topics": _fetch_topics(parts)}
                   for gid, parts in batch.items()],
        "require_stable": require_stable,
    }
    return Send(actor, "OffsetFetch", v, fields, expect=expect, note=note)


def _describe_fields(groups: Sequence[Group]) -> dict[str, Any]:
    return {"groups": list(groups), "include_authorized_operations": False}


def describe(actor: str, v: int = 5, *, groups: Sequence[Group] = (G,), expect: Any = None, note: str = "") -> Send:
    """DescribeGroups."""
    return Send(actor, "DescribeGroups", v, _describe_fields(groups), expect=expect, note=note)


def list_groups(actor: str, v: int = 5, *, states: Sequence[str] = (), types: Sequence[str] = (), expect: Any = None,
                note: str = "") -> Send:
    """ListGroups (answers restricted to the script's own groups by the harness)."""
    fields = {"states_filter": list(states), "types_filter": list(types)}
    return Send(actor, "ListGroups", v, fields, expect=expect, note=note)


def delete(actor: str, v: int = 2, *, groups: Sequence[Group] = (G,), expect: Any = None, note: str = "") -> Send:
    """DeleteGroups."""
    return Send(actor, "DeleteGroups", v, {"groups_names": list(groups)}, expect=expect, note=note)


def state_of(answer: Mapping[str, Any]) -> str:
    """The first group's state in a normalised DescribeGroups answer."""
    return str(answer["groups"][0]["group_state"])


def state_is(actor: str, state: str, *, within_ms: int, after_ms: int | None = None, group: Group = G, v: int = 5,
             expect: Any = None, note: str = "") -> Until:
    """Poll DescribeGroups until ``group`` is in ``state``."""
    return Until(actor, "DescribeGroups", v, _describe_fields([group]),
                 predicate=lambda answer: state_of(answer) == state, within_ms=within_ms, after_ms=after_ms,
                 expect=expect, note=note)


def stable_pair(a: str = "a", b: str = "b", **kwargs: Any) -> list[Any]:
    """Two dynamic members (JoinGroup v9, SyncGroup v5) in a Stable group at generation 2, ``a`` the leader."""
    return [
        join(a, expect=err(codes.MEMBER_ID_REQUIRED), **kwargs),
        rejoin(a, expect=ok(generation_id=1, leader=M(a)), **kwargs),
        sync(a, leader=True, expect=ok()),
        join(b, expect=err(codes.MEMBER_ID_REQUIRED), **kwargs),
        rejoin(b, parked=True, **kwargs),
        heartbeat(a, expect=err(codes.REBALANCE_IN_PROGRESS)),
        rejoin(a, expect=ok(generation_id=2, leader=M(a)), **kwargs),
        Await(b, expect=ok(generation_id=2, leader=M(a), members=[])),
        sync(b, parked=True),
        sync(a, leader=True, expect=ok()),
        Await(b, expect=ok()),
    ]
