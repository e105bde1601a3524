"""Kafka protocol error codes: one named constant per code, the only place kgroup spells one.

The names are those of the Kafka protocol guide's error table
(https://kafka.apache.org/protocol#protocol_error_codes, Java's ``org.apache.kafka.common.protocol.Errors``)
as kafka-python 3.0 spells them; ``NONE`` and ``UNKNOWN_SERVER_ERROR`` are Java's names for
kafka-python's ``NO_ERROR`` and ``UNKNOWN``.

Rules:

1. Code elsewhere in kgroup (client, admin, coordinator model, proxy, simulator) imports these
   names; it never writes an error code as a number (``codes.FENCED_INSTANCE_ID``, not ``82``).
2. This module is data only: no kafka-python import, so the pure membership machine can use
   it. A compatibility test checks every constant against kafka-python's ``kafka.errors``
   (``<Error>.errno``) and that no code kafka-python knows is missing.
3. What a code *means* for each API is decided in one place, ``kgroup.errors.classify``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

UNKNOWN_SERVER_ERROR: Final = -1
NONE: Final = 0
OFFSET_OUT_OF_RANGE: Final = 1
CORRUPT_MESSAGE: Final = 2
UNKNOWN_TOPIC_OR_PARTITION: Final = 3
INVALID_FETCH_SIZE: Final = 4
LEADER_NOT_AVAILABLE: Final = 5
NOT_LEADER_FOR_PARTITION: Final = 6
REQUEST_TIMED_OUT: Final = 7
BROKER_NOT_AVAILABLE: Final = 8
REPLICA_NOT_AVAILABLE: Final = 9
MESSAGE_SIZE_TOO_LARGE: Final = 10
STALE_CONTROLLER_EPOCH: Final = 11
OFFSET_METADATA_TOO_LARGE: Final = 12
NETWORK_EXCEPTION: Final = 13
COORDINATOR_LOAD_IN_PROGRESS: Final = 14
COORDINATOR_NOT_AVAILABLE: Final = 15
NOT_COORDINATOR: Final = 16
INVALID_TOPIC: Final = 17
RECORD_LIST_TOO_LARGE: Final = 18
NOT_ENOUGH_REPLICAS: Final = 19
NOT_ENOUGH_REPLICAS_AFTER_APPEND: Final = 20
INVALID_REQUIRED_ACKS: Final = 21
ILLEGAL_GENERATION: Final = 22
INCONSISTENT_GROUP_PROTOCOL: Final = 23
INVALID_GROUP_ID: Final = 24
UNKNOWN_MEMBER_ID: Final = 25
INVALID_SESSION_TIMEOUT: Final = 26
REBALANCE_IN_PROGRESS: Final = 27
INVALID_COMMIT_OFFSET_SIZE: Final = 28
TOPIC_AUTHORIZATION_FAILED: Final = 29
GROUP_AUTHORIZATION_FAILED: Final = 30
CLUSTER_AUTHORIZATION_FAILED: Final = 31
INVALID_TIMESTAMP: Final = 32
UNSUPPORTED_SASL_MECHANISM: Final = 33
ILLEGAL_SASL_STATE: Final = 34
UNSUPPORTED_VERSION: Final = 35
TOPIC_ALREADY_EXISTS: Final = 36
INVALID_PARTITIONS: Final = 37
INVALID_REPLICATION_FACTOR: Final = 38
INVALID_REPLICATION_ASSIGNMENT: Final = 39
INVALID_CONFIG: Final = 40
NOT_CONTROLLER: Final = 41
INVALID_REQUEST: Final = 42
UNSUPPORTED_FOR_MESSAGE_FORMAT: Final = 43
POLICY_VIOLATION: Final = 44
OUT_OF_ORDER_SEQUENCE_NUMBER: Final = 45
DUPLICATE_SEQUENCE_NUMBER: Final = 46
INVALID_PRODUCER_EPOCH: Final = 47
INVALID_TXN_STATE: Final = 48
INVALID_PRODUCER_ID_MAPPING: Final = 49
INVALID_TRANSACTION_TIMEOUT: Final = 50
CONCURRENT_TRANSACTIONS: Final = 51
TRANSACTION_COORDINATOR_FENCED: Final = 52
TRANSACTIONAL_ID_AUTHORIZATION_FAILED: Final = 53
SECURITY_DISABLED: Final = 54
OPERATION_NOT_ATTEMPTED: Final = 55
KAFKA_STORAGE_ERROR: Final = 56
LOG_DIR_NOT_FOUND: Final = 57
SASL_AUTHENTICATION_FAILED: Final = 58
UNKNOWN_PRODUCER_ID: Final = 59
REASSIGNMENT_IN_PROGRESS: Final = 60
DELEGATION_TOKEN_AUTH_DISABLED: Final = 61
DELEGATION_TOKEN_NOT_FOUND: Final = 62
DELEGATION_TOKEN_OWNER_MISMATCH: Final = 63
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: Final = 64
DELEGATION_TOKEN_AUTHORIZATION_FAILED: Final = 65
DELEGATION_TOKEN_EXPIRED: Final = 66
INVALID_PRINCIPAL_TYPE: Final = 67
NON_EMPTY_GROUP: Final = 68
GROUP_ID_NOT_FOUND: Final = 69
FETCH_SESSION_ID_NOT_FOUND: Final = 70
INVALID_FETCH_SESSION_EPOCH: Final = 71
LISTENER_NOT_FOUND: Final = 72
TOPIC_DELETION_DISABLED: Final = 73
FENCED_LEADER_EPOCH: Final = 74
UNKNOWN_LEADER_EPOCH: Final = 75
UNSUPPORTED_COMPRESSION_TYPE: Final = 76
STALE_BROKER_EPOCH: Final = 77
OFFSET_NOT_AVAILABLE: Final = 78
MEMBER_ID_REQUIRED: Final = 79
PREFERRED_LEADER_NOT_AVAILABLE: Final = 80
GROUP_MAX_SIZE_REACHED: Final = 81
FENCED_INSTANCE_ID: Final = 82
ELIGIBLE_LEADERS_NOT_AVAILABLE: Final = 83
ELECTION_NOT_NEEDED: Final = 84
NO_REASSIGNMENT_IN_PROGRESS: Final = 85
GROUP_SUBSCRIBED_TO_TOPIC: Final = 86
INVALID_RECORD: Final = 87
UNSTABLE_OFFSET_COMMIT: Final = 88
THROTTLING_QUOTA_EXCEEDED: Final = 89
PRODUCER_FENCED: Final = 90
RESOURCE_NOT_FOUND: Final = 91
DUPLICATE_RESOURCE: Final = 92
UNACCEPTABLE_CREDENTIAL: Final = 93
INCONSISTENT_VOTER_SET: Final = 94
INVALID_UPDATE_VERSION: Final = 95
FEATURE_UPDATE_FAILED: Final = 96
PRINCIPAL_DESERIALIZATION_FAILURE: Final = 97
SNAPSHOT_NOT_FOUND: Final = 98
POSITION_OUT_OF_RANGE: Final = 99
UNKNOWN_TOPIC_ID: Final = 100
DUPLICATE_BROKER_REGISTRATION: Final = 101
BROKER_ID_NOT_REGISTERED: Final = 102
INCONSISTENT_TOPIC_ID: Final = 103
INCONSISTENT_CLUSTER_ID: Final = 104
TRANSACTIONAL_ID_NOT_FOUND: Final = 105
FETCH_SESSION_TOPIC_ID_ERROR: Final = 106
INELIGIBLE_REPLICA: Final = 107
NEW_LEADER_ELECTED: Final = 108
OFFSET_MOVED_TO_TIERED_STORAGE: Final = 109
FENCED_MEMBER_EPOCH: Final = 110
UNRELEASED_INSTANCE_ID: Final = 111
UNSUPPORTED_ASSIGNOR: Final = 112
STALE_MEMBER_EPOCH: Final = 113
MISMATCHED_ENDPOINT_TYPE: Final = 114
UNSUPPORTED_ENDPOINT_TYPE: Final = 115
UNKNOWN_CONTROLLER_ID: Final = 116
UNKNOWN_SUBSCRIPTION_ID: Final = 117
TELEMETRY_TOO_LARGE: Final = 118
INVALID_REGISTRATION: Final = 119
TRANSACTION_ABORTABLE: Final = 120
INVALID_RECORD_STATE: Final = 121
SHARE_SESSION_NOT_FOUND: Final = 122
INVALID_SHARE_SESSION_EPOCH: Final = 123
FENCED_STATE_EPOCH: Final = 124
INVALID_VOTER_KEY: Final = 125
DUPLICATE_VOTER: Final = 126
VOTER_NOT_FOUND: Final = 127
#: Kafka 4.0 (KIP-848): a ConsumerGroupHeartbeat's ``SubscribedTopicRegex`` the broker cannot compile
#: (RE2J); newer than kafka-python 3.0.12's table
INVALID_REGULAR_EXPRESSION: Final = 128
#: Kafka 4.1 (KIP-932): the broker holds as many share sessions as ``group.share.max.share.sessions``
#: allows; newer than kafka-python 3.0.12's table
SHARE_SESSION_LIMIT_REACHED: Final = 133


def _by_code() -> dict[int, str]:
    return {value: name for name, value in globals().items() if name.isupper() and type(value) is int}


#: code -> name, for every constant above
ERROR_NAMES: Final[Mapping[int, str]] = MappingProxyType(_by_code())


def error_name(code: int) -> str:
    """The protocol name of an error code, e.g. ``error_name(27) == "REBALANCE_IN_PROGRESS"``.

    A code this table does not know is named ``UNKNOWN_ERROR_CODE_<code>``.
    """
    return ERROR_NAMES.get(code, f"UNKNOWN_ERROR_CODE_{code}")
