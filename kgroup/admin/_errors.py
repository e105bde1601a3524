"""The admin's exceptions: ``AdminError`` (a ``KGroupError``) and its subclasses, each naming the Kafka error."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgroup._error_codes import error_name
from kgroup.errors import KGroupError

if TYPE_CHECKING:
    from kgroup._retry import Deadline

__all__ = [
    "AdminError",
    "AdminTimeoutError",
    "GroupNotEmptyError",
    "GroupNotFoundError",
    "InvalidConfigError",
    "UnsupportedVersionError",
]


class AdminError(KGroupError):
    """A group-administration call failed.

    Attributes:
        api: the Kafka API that failed ("DescribeGroups", "LeaveGroup", ...; "" for none).
        code: the Kafka error code the broker answered, or None (no answer, client-side).
        error_name: the code's protocol name ("UNKNOWN_MEMBER_ID"), or None.

    """

    def __init__(self, message: str, *, api: str = "", code: int | None = None) -> None:
        super().__init__(message)
        self.api = api
        self.code = code
        self.error_name = None if code is None else error_name(code)


class GroupNotFoundError(AdminError):
    """The group does not exist.

    State "Dead", GROUP_ID_NOT_FOUND (69; from the share-group APIs too, KIP-932), or a
    whole-request UNKNOWN_MEMBER_ID from LeaveGroup (Kafka's answer for an unknown group).
    """


class UnsupportedVersionError(AdminError):
    """The coordinator cannot speak the version the call needs.

    LeaveGroup v3+ for removal by ``group_instance_id`` (KIP-345, Kafka 2.4+); OffsetFetch v8+
    for all committed offsets; the share-group APIs (KIP-932, Apache Kafka 4.1+); a group's
    configs (ConfigResource type GROUP, Apache Kafka 3.8+: an older broker answers
    INVALID_REQUEST, "Unknown resource type", or describes no config).
    """


class InvalidConfigError(AdminError):
    """The broker refused a group config change: INVALID_CONFIG (40).

    An unknown config name, a value of the wrong type, or one out of the range the brokers
    allow (``share.record.lock.duration.ms`` between ``group.share.min.record.lock.duration.ms``
    and ``group.share.max.record.lock.duration.ms``, ...); the message is the broker's (Java's
    ``InvalidConfigurationException``).
    """


class AdminTimeoutError(AdminError):
    """The call's deadline passed; ``__cause__`` or the message names the last failure."""


class GroupNotEmptyError(AdminError):
    """The group has members (or is rebalancing), and the operation needs it inactive.

    Kafka's ``kafka-consumer-groups.sh`` resets offsets only of an ``Empty`` or ``Dead`` group
    ("Assignments can only be reset if the group ... is inactive"); the coordinator refuses to
    delete a group with members (NON_EMPTY_GROUP, 68), and to alter or delete a share group's
    start offsets while it has members (AlterShareGroupOffsets, DeleteShareGroupOffsets; KIP-932).
    """


class RetryAttempt(Exception):
    """A retriable failure inside one attempt of an admin call (internal; never raised to users).

    ``rediscover``: look the group's coordinator up again before the next attempt.
    """

    def __init__(self, reason: str, *, rediscover: bool = True) -> None:
        super().__init__(reason)
        self.rediscover = rediscover


def left_ms(deadline: Deadline) -> int:
    """What is left of ``deadline`` for the next call (at least 1 ms: it then times out at once)."""
    return deadline.remaining_ms() or 1
