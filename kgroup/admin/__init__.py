"""Group administration: list, describe, delete groups; offsets, lag and resets; remove static members; share groups.

``GroupAdmin`` is a small client over the ``AdminTransport`` port (``kgroup._io.transport``; over
kafka-python's network client in ``kgroup._io.kafka_admin``), the kgroup counterpart of the group
parts of Java's ``Admin`` (``describeConsumerGroups``, ``listConsumerGroups``,
``listConsumerGroupOffsets``, ``listOffsets``, ``alterConsumerGroupOffsets``,
``deleteConsumerGroups``, ``removeMembersFromConsumerGroup``; for share groups, KIP-932,
``describeShareGroups``, ``listShareGroupOffsets``, ``alterShareGroupOffsets``,
``deleteShareGroupOffsets``; for a group's configs, KIP-848 and KIP-932, ``describeConfigs`` and
``incrementalAlterConfigs`` of a GROUP config resource). The ``kgroup`` command line
(``kgroup.cli``) is a thin layer over it.

Rules:

1. **Every call has a deadline** (``timeout_ms``, default the admin's ``timeout_ms``): retriable
   answers (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, a lost
   connection) are retried with ``retry_backoff_ms`` after finding the coordinator again, as
   Java's ``AdminApiDriver`` does, until the deadline; then ``AdminTimeoutError``.
2. **Errors are typed** (``AdminError`` and subclasses, all ``KGroupError``) and name the Kafka
   error (``code``, ``error_name``). Per-member results of a removal are values, not errors:
   the caller decides (``MemberRemoval.error_code``).
3. **Bytes are decoded** with kgroup's ConsumerProtocol codec
   (:mod:`kgroup.protocol.consumer_protocol`): a member's assignment always (empty bytes: no
   partitions, as Java's ``DescribeConsumerGroupsHandler``), its subscription when the
   coordinator sends it (only while the group is Stable: Kafka's ``describeNoMetadata``).
4. **Both group protocols are described** as Java's ``Admin.describeConsumerGroups`` does
   (``DescribeConsumerGroupsHandler``): ConsumerGroupDescribe (API 69, KIP-848) first, which
   answers for a consumer group (``group_type`` "consumer": group epoch, assignment epoch, and per
   member its epoch, assignment and target assignment); DescribeGroups for a group it does not
   know as a consumer group (a classic group, or none) and against a broker without API 69.
5. **Share groups** (KIP-932) are listed with ``group_type`` "share" and described by
   ShareGroupDescribe (API 77) when DescribeGroups finds no classic group; their start offsets
   (DescribeShareGroupOffsets, API 90) stand for committed offsets in ``lag`` and reset plans,
   and are set with AlterShareGroupOffsets (API 91) while the group is empty (docs/share-groups.md,
   "Operations"). Their error codes are classified by ``kgroup.errors.classify``.
6. **A group's configs** (``consumer.session.timeout.ms``, ``share.record.lock.duration.ms``,
   ...; Apache Kafka 3.8+) are described with DescribeConfigs and changed with
   IncrementalAlterConfigs (SET, DELETE) at any broker, not the coordinator; INVALID_CONFIG
   raises ``InvalidConfigError`` with the broker's message (docs/share-groups.md, "Group configs").

The package, by job: ``_client`` (``GroupAdmin``), ``_values`` (the answers), ``_errors``,
``_describe`` (described groups to ``GroupDescription``), ``_resets`` (offset reset planning),
``_share`` (share groups' calls) and ``_configs`` (a group's configs).
"""

from __future__ import annotations

from kgroup.admin._client import DEFAULT_REMOVE_REASON, GroupAdmin
from kgroup.admin._errors import (
    AdminError,
    AdminTimeoutError,
    GroupNotEmptyError,
    GroupNotFoundError,
    InvalidConfigError,
    UnsupportedVersionError,
)
from kgroup.admin._resets import INACTIVE_STATES, OffsetResetPlan, PlannedOffset, ResetTarget
from kgroup.admin._values import (
    Coordinator,
    GroupConfigEntry,
    GroupDeletion,
    GroupDescription,
    GroupListing,
    MemberDescription,
    MemberRemoval,
    PartitionLag,
)

__all__ = [
    "DEFAULT_REMOVE_REASON",
    "INACTIVE_STATES",
    "AdminError",
    "AdminTimeoutError",
    "Coordinator",
    "GroupAdmin",
    "GroupConfigEntry",
    "GroupDeletion",
    "GroupDescription",
    "GroupListing",
    "GroupNotEmptyError",
    "GroupNotFoundError",
    "InvalidConfigError",
    "MemberDescription",
    "MemberRemoval",
    "OffsetResetPlan",
    "PartitionLag",
    "PlannedOffset",
    "ResetTarget",
    "UnsupportedVersionError",
]
