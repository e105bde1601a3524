"""What the admin's calls answer: frozen values (Java ``Admin``'s result types, field by field where they exist)."""

from __future__ import annotations

import attrs

from kgroup import _error_codes as codes
from kgroup._error_codes import error_name
from kgroup.types import TopicPartition

__all__ = [
    "Coordinator",
    "GroupConfigEntry",
    "GroupDeletion",
    "GroupDescription",
    "GroupListing",
    "MemberDescription",
    "MemberRemoval",
    "PartitionLag",
]


@attrs.frozen
class Coordinator:
    """A group's coordinator broker (a FindCoordinator answer)."""

    node_id: int
    host: str
    port: int


@attrs.frozen
class MemberDescription:
    """One member of a described group, its bytes decoded.

    Attributes:
        member_id: the member id.
        group_instance_id: the static member's id (KIP-345), or None for a dynamic member.
        client_id: its ``client.id``.
        client_host: where the coordinator saw it connect from (``"/127.0.0.1"``).
        assignment: its assigned partitions, sorted (empty before SyncGroup).
        subscribed_topics: the topics of its Subscription, sorted; None when the coordinator
            did not send the subscription (the group is not Stable).
        decode_error: why its assignment or subscription bytes could not be decoded (the
            affected fields are then empty / None), else None.
        member_epoch: its member epoch (a consumer group, KIP-848), else None.
        target_assignment: what the broker's assignor gave it, sorted (a consumer group: it
            differs from ``assignment`` while the member reconciles), else None.
        member_protocol: "consumer" or "classic" for a member of a consumer group (a classic
            member stays in one during an online migration; Java ``MemberDescription.upgraded``,
            KIP-1099), None when the broker did not say or the group is classic.
        rack_id: its ``client.rack`` (a consumer group), else None.
        subscribed_topic_regex: its pattern subscription (a consumer group, RE2J), else None.

    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: tuple[TopicPartition, ...]
    subscribed_topics: tuple[str, ...] | None
    decode_error: str | None = None
    member_epoch: int | None = None
    target_assignment: tuple[TopicPartition, ...] | None = None
    member_protocol: str | None = None
    rack_id: str | None = None
    subscribed_topic_regex: str | None = None


@attrs.frozen
class GroupDescription:
    """A described consumer group (Java ``ConsumerGroupDescription``).

    Attributes:
        group_id: the group id.
        state: Kafka's state name. A classic group: "Empty", "PreparingRebalance",
            "CompletingRebalance", "Stable", or "Dead" (the coordinator does not know the
            group); a consumer group: "Empty", "Assigning", "Reconciling", "Stable".
        protocol_type: "consumer" ("" for a group with no members ever, or Dead).
        protocol: the chosen protocol (the assignor's name, "range", ...) when Stable, else "";
            a consumer group: the broker-side assignor ("uniform", "range", ...).
        generation_id: None: DescribeGroups (v0-v6) does not carry the generation of a classic
            group; kept so a source that has it can fill it.
        coordinator: the coordinator that answered.
        members: the members, in the coordinator's order.
        group_type: "classic" (DescribeGroups answered), "consumer" (ConsumerGroupDescribe
            answered: the group runs the consumer group protocol, KIP-848) or "share"
            (ShareGroupDescribe answered: a share group, KIP-932; states "Empty", "Stable",
            "Dead"; protocol type "share", ``protocol`` the broker's share assignor).
        group_epoch: a consumer or share group's epoch (bumped by every change of members or
            subscriptions; Java ``ConsumerGroupDescription.groupEpoch``), else None.
        assignment_epoch: the group epoch its target assignment was computed at (Java
            ``targetAssignmentEpoch``); equal to ``group_epoch`` once the assignor caught up.

    """

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    generation_id: int | None
    coordinator: Coordinator
    members: tuple[MemberDescription, ...]
    group_type: str = "classic"
    group_epoch: int | None = None
    assignment_epoch: int | None = None

    def owner_of(self, tp: TopicPartition) -> MemberDescription | None:
        """The member whose assignment holds ``tp``, or None."""
        for member in self.members:
            if tp in member.assignment:
                return member
        return None


@attrs.frozen
class PartitionLag:
    """One partition's committed offset, log end offset and lag.

    Attributes:
        topic_partition: the partition.
        committed_offset: the group's committed offset, or None (nothing committed); for a
            share group (KIP-932), its share-partition start offset (None: not initialised yet).
        log_end_offset: the partition's log end offset (ListOffsets LATEST: the high watermark
            under read_uncommitted), or None (unknown: no leader, or the lookup failed).
        lag: ``log_end_offset - committed_offset`` (at least 0) when both are known, else None;
            a share group's: the broker's (DescribeShareGroupOffsets v1, KIP-1226) when it says.
        metadata: the commit's metadata string ("" when none).
        member_id: the member the partition is assigned to, or None; a share group's
            partition may be assigned to several: their ids, comma-separated.
        group_instance_id: that member's static id, or None.

    """

    topic_partition: TopicPartition
    committed_offset: int | None
    log_end_offset: int | None
    lag: int | None
    metadata: str = ""
    member_id: str | None = None
    group_instance_id: str | None = None

    @property
    def committed_beyond_log_end(self) -> bool:
        """True when the committed offset is past the log end offset (both known).

        The partition's log was truncated (records deleted, an unclean leader election) or the
        topic was deleted and recreated: a consumer resuming there gets OFFSET_OUT_OF_RANGE and
        resets by its ``auto_offset_reset``. ``lag`` is then 0.
        """
        return self.committed_offset is not None and self.log_end_offset is not None and (
            self.committed_offset > self.log_end_offset
        )


@attrs.frozen
class MemberRemoval:
    """One static member's removal result (Java ``RemoveMembersFromConsumerGroupResult``).

    Attributes:
        group_instance_id: the instance id asked for.
        member_id: the member id the coordinator answered ("" when it did not say).
        error_code: 0 (removed), or UNKNOWN_MEMBER_ID (25: no such static member),
            FENCED_INSTANCE_ID (82), ...

    """

    group_instance_id: str
    member_id: str
    error_code: int

    @property
    def error_name(self) -> str | None:
        """The error's protocol name, or None when removed."""
        return None if self.error_code == codes.NONE else error_name(self.error_code)


@attrs.frozen
class GroupListing:
    """One group of a ListGroups answer (Java ``ConsumerGroupListing``).

    Attributes:
        group_id: the group id.
        protocol_type: "consumer", "share" (a share group), or "" for a group that only
            commits offsets (Java's ``isSimpleConsumerGroup``: ``assign()`` plus ``commitSync``).
        state: the group's state (ListGroups v4+, KIP-518: "Stable", "Empty", ...), or None
            when the broker did not say.
        group_type: "classic", "consumer" (ListGroups v5+, KIP-848) or "share" (a share
            group, KIP-932; its ``protocol_type`` is "share" too), or None when the broker did
            not say.

    """

    group_id: str
    protocol_type: str
    state: str | None = None
    group_type: str | None = None


@attrs.frozen
class GroupDeletion:
    """One group's DeleteGroups result (Java ``DeleteConsumerGroupsResult``).

    Attributes:
        group_id: the group.
        error_code: 0 (deleted), NON_EMPTY_GROUP (68: it has members), GROUP_ID_NOT_FOUND
            (69), GROUP_AUTHORIZATION_FAILED (30), ...

    """

    group_id: str
    error_code: int

    @property
    def error_name(self) -> str | None:
        """The error's protocol name, or None when deleted."""
        return None if self.error_code == codes.NONE else error_name(self.error_code)


@attrs.frozen
class GroupConfigEntry:
    """One config of a group, as DescribeConfigs gives it (Java ``ConfigEntry``).

    Attributes:
        name: the config's name (``consumer.session.timeout.ms``, ``share.record.lock.duration.ms``, ...).
        value: its value as the broker writes it (``"45000"``; milliseconds for the ``*.ms``
            configs), or None (a sensitive config, or none set).
        source: where the value comes from, by the names of Java's ``ConfigEntry.ConfigSource``:
            "DYNAMIC_GROUP_CONFIG" (set on the group), "DEFAULT_CONFIG" (the broker's default),
            "STATIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG", ..., or "UNKNOWN".
        read_only: the broker does not let it be altered.
        sensitive: a secret (its value is not sent).

    """

    name: str
    value: str | None
    source: str
    read_only: bool = False
    sensitive: bool = False

    @property
    def is_default(self) -> bool:
        """True when the group does not set it and the broker's default applies (Java ``ConfigEntry.isDefault``)."""
        return self.source == "DEFAULT_CONFIG"
