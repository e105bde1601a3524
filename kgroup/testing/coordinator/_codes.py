"""Kafka error codes the coordinator model answers with.

Each value was checked against ``clients/src/main/java/org/apache/kafka/common/protocol/Errors.java``
(Apache Kafka) and agrees with kgroup's own table, :data:`kgroup._error_codes.ERROR_CODES`.
The names are Kafka's; ``UNKNOWN_MEMBER_ID`` here is the *error code* 25, not the empty member
id string that :mod:`kgroup.protocol.group_api` also calls ``UNKNOWN_MEMBER_ID``.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "COORDINATOR_LOAD_IN_PROGRESS",
    "COORDINATOR_NOT_AVAILABLE",
    "FENCED_INSTANCE_ID",
    "GROUP_ID_NOT_FOUND",
    "GROUP_MAX_SIZE_REACHED",
    "ILLEGAL_GENERATION",
    "INCONSISTENT_GROUP_PROTOCOL",
    "INVALID_GROUP_ID",
    "INVALID_SESSION_TIMEOUT",
    "MEMBER_ID_REQUIRED",
    "NONE",
    "NON_EMPTY_GROUP",
    "NOT_COORDINATOR",
    "OFFSET_METADATA_TOO_LARGE",
    "REBALANCE_IN_PROGRESS",
    "UNKNOWN_MEMBER_ID",
    "UNKNOWN_SERVER_ERROR",
    "UNKNOWN_TOPIC_OR_PARTITION",
    "UNSTABLE_OFFSET_COMMIT",
]

UNKNOWN_SERVER_ERROR: Final = -1
NONE: Final = 0
UNKNOWN_TOPIC_OR_PARTITION: Final = 3
OFFSET_METADATA_TOO_LARGE: Final = 12
COORDINATOR_LOAD_IN_PROGRESS: Final = 14
COORDINATOR_NOT_AVAILABLE: Final = 15
NOT_COORDINATOR: Final = 16
ILLEGAL_GENERATION: Final = 22
INCONSISTENT_GROUP_PROTOCOL: Final = 23
INVALID_GROUP_ID: Final = 24
UNKNOWN_MEMBER_ID: Final = 25
INVALID_SESSION_TIMEOUT: Final = 26
REBALANCE_IN_PROGRESS: Final = 27
NON_EMPTY_GROUP: Final = 68
GROUP_ID_NOT_FOUND: Final = 69
MEMBER_ID_REQUIRED: Final = 79
GROUP_MAX_SIZE_REACHED: Final = 81
FENCED_INSTANCE_ID: Final = 82
UNSTABLE_OFFSET_COMMIT: Final = 88
"""Never produced: the model has no transactions, so ``require_stable`` has nothing to wait for."""
