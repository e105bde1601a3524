"""The classic member's requests and the ConsumerProtocol bytes it reads, as pure functions.

What ``GroupMachine`` puts in its ``Send*`` commands (Java's ``AbstractCoordinator`` and
``ConsumerCoordinator`` build the same requests): JoinGroup with one Subscription per assignor
(``metadata()``), SyncGroup, Heartbeat and LeaveGroup, with the ``reason`` cut as Java cuts it
(KIP-800); and what it reads from the answers: the members' Subscriptions in the leader's
JoinGroup response and the Assignment of a SyncGroup response. The machine decides when; these
functions only say what.
"""

from __future__ import annotations

from collections.abc import Iterable

from kgroup.assignors.base import MemberSubscription
from kgroup.errors import MalformedMetadata
from kgroup.membership.commands import SendFindCoordinator, SendHeartbeat, SendJoinGroup, SendLeaveGroup, SendSyncGroup
from kgroup.membership.machine_config import MachineConfig
from kgroup.protocol.consumer_protocol import (
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_subscription,
)
from kgroup.protocol.group_api import JoinGroupMember, LeaveMember, SyncGroupAssignment
from kgroup.types import Generation, TopicPartition

__all__ = [
    "MAX_REASON_LENGTH",
    "assigned_partitions",
    "find_coordinator",
    "group_topics",
    "heartbeat",
    "join_group",
    "join_protocols",
    "leave_group",
    "member_subscriptions",
    "sync_group",
    "truncate_reason",
]

#: the longest JoinGroup/LeaveGroup ``reason`` sent (Java ``JoinGroupRequest.maybeTruncateReason``);
#: Kafka rejects any string over 32,767 bytes, and a reason built from a large subscription
#: would make every JoinGroup fail (KIP-800)
MAX_REASON_LENGTH = 255


def truncate_reason(reason: str) -> str:
    """``reason`` cut to ``MAX_REASON_LENGTH`` characters, as the Java client sends it."""
    return reason if len(reason) <= MAX_REASON_LENGTH else reason[:MAX_REASON_LENGTH]


def find_coordinator(config: MachineConfig, request_id: int) -> SendFindCoordinator:
    """FindCoordinator for the group."""
    return SendFindCoordinator(request_id=request_id, key=config.group_id, timeout_ms=config.request_timeout_ms)


def join_protocols(
    config: MachineConfig,
    subscription: frozenset[str],
    owned: frozenset[TopicPartition],
    generation_id: int,
    last_assigned: tuple[int, frozenset[TopicPartition]],
) -> tuple[tuple[str, bytes], ...]:
    """JoinGroup's protocols: each assignor's name and the Subscription it sends (Java ``metadata()``).

    ``last_assigned`` is the generation and partitions of the last assignment, for the sticky
    assignors' ``user_data``.
    """
    protocols = []
    for assignor in config.assignors:
        user_data = assignor.subscription_user_data(subscription, *last_assigned)
        sub = Subscription(
            topics=tuple(sorted(subscription)),
            user_data=user_data,
            owned_partitions=tuple(sorted(owned)),
            generation_id=generation_id,
            rack_id=config.client_rack,
        )
        protocols.append((assignor.name, encode_subscription(sub)))
    return tuple(protocols)


def join_group(
    config: MachineConfig, request_id: int, node_id: int, member_id: str,
    protocols: tuple[tuple[str, bytes], ...], reason: str,
) -> SendJoinGroup:
    """JoinGroup; it may wait for the whole rebalance, so its timeout covers the rebalance timeout."""
    rebalance_ms = config.rebalance_timeout_ms
    return SendJoinGroup(
        request_id=request_id, node_id=node_id, group_id=config.group_id, member_id=member_id,
        group_instance_id=config.group_instance_id, session_timeout_ms=config.session_timeout_ms,
        rebalance_timeout_ms=rebalance_ms, protocols=protocols, reason=reason,
        timeout_ms=max(config.request_timeout_ms, rebalance_ms + 5000),
    )


def sync_group(
    config: MachineConfig, request_id: int, node_id: int, generation: Generation,
    assignments: tuple[tuple[str, bytes], ...],
) -> SendSyncGroup:
    """SyncGroup of ``generation``; the leader's carries every member's ``assignments``."""
    return SendSyncGroup(
        request_id=request_id, node_id=node_id, group_id=config.group_id, generation_id=generation.generation_id,
        member_id=generation.member_id, group_instance_id=config.group_instance_id,
        protocol_type="consumer", protocol_name=generation.protocol,
        assignments=tuple(SyncGroupAssignment(member_id=m, assignment=a) for m, a in assignments),
        timeout_ms=config.request_timeout_ms,
    )


def heartbeat(config: MachineConfig, request_id: int, node_id: int, generation: Generation) -> SendHeartbeat:
    """Heartbeat of ``generation``."""
    return SendHeartbeat(
        request_id=request_id, node_id=node_id, group_id=config.group_id, generation_id=generation.generation_id,
        member_id=generation.member_id, group_instance_id=config.group_instance_id,
        timeout_ms=config.request_timeout_ms,
    )


def leave_group(config: MachineConfig, request_id: int, node_id: int, member_id: str, reason: str) -> SendLeaveGroup:
    """LeaveGroup of this one member, with ``reason`` cut (KIP-800)."""
    member = LeaveMember(member_id=member_id, group_instance_id=config.group_instance_id,
                         reason=truncate_reason(reason))
    return SendLeaveGroup(request_id=request_id, node_id=node_id, group_id=config.group_id, members=(member,),
                          timeout_ms=config.request_timeout_ms)


def member_subscriptions(members: Iterable[JoinGroupMember]) -> tuple[MemberSubscription, ...]:
    """The leader's JoinGroup members, each with its Subscription decoded, for the assignor.

    Raises:
        MalformedMetadata: a member's Subscription does not decode (the message names it).

    """
    out = []
    for member in members:
        try:
            sub = decode_subscription(member.metadata)
        except MalformedMetadata as exc:
            raise MalformedMetadata(f"member {member.member_id!r} sent an undecodable Subscription: {exc}") from exc
        out.append(
            MemberSubscription(
                member_id=member.member_id,
                group_instance_id=member.group_instance_id,
                topics=frozenset(sub.topics),
                owned=frozenset(sub.owned_partitions),
                generation_id=sub.generation_id,
                rack=sub.rack_id,
                user_data=sub.user_data,
            )
        )
    return tuple(out)


def group_topics(subscription: frozenset[str], members: Iterable[JoinGroupMember]) -> frozenset[str]:
    """``subscription`` and every topic the ``members`` subscribe to (undecodable subscriptions skipped)."""
    topics: set[str] = set(subscription)
    for member in members:
        try:
            topics.update(decode_subscription(member.metadata).topics)
        except MalformedMetadata:
            continue
    return frozenset(topics)


def assigned_partitions(assignment: bytes) -> frozenset[TopicPartition]:
    """The partitions of a SyncGroup response's Assignment.

    Raises:
        MalformedMetadata: the bytes are no Assignment (the leader's assignor is broken).

    """
    try:
        if len(assignment) < 2:
            # Java's ConsumerCoordinator.onJoinComplete rejects an assignment shorter
            # than its version field: the leader's assignor is broken
            raise MalformedMetadata(f"{len(assignment)} bytes, too short for an Assignment")
        return frozenset(decode_assignment(assignment).partitions)
    except MalformedMetadata as exc:
        raise MalformedMetadata(f"the leader sent an undecodable Assignment: {exc}") from exc
