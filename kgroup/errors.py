"""kgroup's exceptions and the error-code table.

The exception tree::

    KGroupError
    ├── ConfigError(KGroupError, ValueError)      bad configuration, raised at construction
    ├── ProtocolViolation                         a kgroup bug: an illegal input for the machine's state
    ├── MalformedMetadata                         undecodable Subscription/Assignment bytes from a peer
    ├── BrokerError                               a broker error code (.api, .code, .name)
    │   ├── CoordinatorUnavailable                NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, ...
    │   ├── RebalanceInProgressError              a commit refused because the group is rebalancing
    │   ├── UnknownTopicOrPartitionError          an offset request for a partition that does not exist
    │   ├── TopicAuthorizationFailedError         TOPIC_AUTHORIZATION_FAILED: no READ (or DESCRIBE) on a topic
    │   ├── InvalidRecordStateError               INVALID_RECORD_STATE: a share acknowledgement of a record not held
    │   └── FatalGroupError                       the consumer cannot continue (auth, protocol, ...)
    │       ├── GroupAuthorizationFailedError     GROUP_AUTHORIZATION_FAILED: no READ on the group
    │       └── FencedInstanceIdError             FENCED_INSTANCE_ID (KIP-345)
    ├── GroupThreadCrashed                        the group thread stopped (a kgroup bug): the consumer is poisoned
    ├── CommitFailedError                         the generation is gone; the partitions may have moved
    ├── RetriableCommitFailedError                an async commit failed retriably; a later commit supersedes it
    ├── FetchError                                fetching records failed (.topic_partition may name one)
    │   └── OffsetOutOfRangeError                 auto_offset_reset="none" and the position is out of range
    ├── NoOffsetForPartitionError                 auto_offset_reset="none" and no committed offset
    ├── ListenerError                             a RebalanceListener callback raised (__cause__ is it)
    ├── AssignmentError                           an assignor produced an invalid plan
    ├── IllegalStateError(KGroupError, RuntimeError)  a call the consumer's state forbids
    ├── WakeupError                               Consumer.wakeup() interrupted a blocking call
    ├── AuthenticationFailedError                 the broker refused the TLS handshake or the SASL exchange
    ├── KafkaTimeoutError(KGroupError, TimeoutError)  timeout_ms passed before the cluster answered
    │   └── ClusterUnreachableError               no broker of bootstrap_servers ever answered
    ├── RecordDeserializationError                a key/value deserializer raised (.topic_partition, .offset)
    └── ConsumerClosedError                       the consumer is closed

Rule: ``classify(api, code)`` is a data table, distilled from the response handlers of
Apache Kafka's Java client (``AbstractCoordinator`` and ``ConsumerCoordinator``: the
FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit and OffsetFetch
handlers) and, for the consumer protocol's ConsumerGroupHeartbeat (KIP-848), from
``AbstractHeartbeatRequestManager`` and ``ConsumerHeartbeatRequestManager`` (``onErrorResponse``,
``handleSpecificExceptionInResponse``), and for share groups' ShareGroupHeartbeat (KIP-932),
from the same handler as ``ShareHeartbeatRequestManager`` uses it, and for the share consumer's
ShareFetch and ShareAcknowledge from ``ShareConsumeRequestManager`` and ``ShareSessionHandler``.
The membership machines and
the commit path act on the returned ``Disposition``; nothing else interprets error codes. An
error code missing from an API's row takes that API's ``UNLISTED`` disposition, as the Java
handlers' final ``else`` does: OffsetCommit and OffsetFetch
fail that one call (``"Unexpected error in commit"``), a Heartbeat is retried after backoff
(``HeartbeatResponseHandler``: ``failHeartbeat``), LeaveGroup is ignored, and an unexpected
FindCoordinator, JoinGroup or SyncGroup code is raised from ``poll()`` once while the member
tries again after backoff (``"Unexpected error in join group response"``,
``"Unexpected error from SyncGroup"``); an unexpected ConsumerGroupHeartbeat or
ShareGroupHeartbeat code is fatal (Java's ``default`` case). Only the codes a row marks FATAL stop the member.
Share groups' admin APIs (ShareGroupDescribe, Describe-, Alter- and DeleteShareGroupOffsets) have
rows too, from Java's admin handlers: a loading coordinator is retried, a moved one found again,
every other code fails the one call (``kgroup.admin`` raises it as an ``AdminError``). A group's
configs' DescribeConfigs and IncrementalAlterConfigs have rows too (Java's ``KafkaAdminClient``
fails the resource's future with the code's exception): a timed-out request or one the
controller did not take is retried, every other code fails the call.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from kgroup._error_codes import (
    CLUSTER_AUTHORIZATION_FAILED,
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    FENCED_INSTANCE_ID,
    FENCED_LEADER_EPOCH,
    FENCED_MEMBER_EPOCH,
    GROUP_AUTHORIZATION_FAILED,
    GROUP_ID_NOT_FOUND,
    GROUP_MAX_SIZE_REACHED,
    ILLEGAL_GENERATION,
    INCONSISTENT_GROUP_PROTOCOL,
    INVALID_COMMIT_OFFSET_SIZE,
    INVALID_CONFIG,
    INVALID_GROUP_ID,
    INVALID_RECORD_STATE,
    INVALID_REQUEST,
    INVALID_SESSION_TIMEOUT,
    INVALID_SHARE_SESSION_EPOCH,
    KAFKA_STORAGE_ERROR,
    LEADER_NOT_AVAILABLE,
    MEMBER_ID_REQUIRED,
    NETWORK_EXCEPTION,
    NON_EMPTY_GROUP,
    NONE,
    NOT_CONTROLLER,
    NOT_COORDINATOR,
    NOT_LEADER_FOR_PARTITION,
    OFFSET_METADATA_TOO_LARGE,
    POLICY_VIOLATION,
    REBALANCE_IN_PROGRESS,
    REQUEST_TIMED_OUT,
    SHARE_SESSION_LIMIT_REACHED,
    SHARE_SESSION_NOT_FOUND,
    STALE_MEMBER_EPOCH,
    TOPIC_AUTHORIZATION_FAILED,
    UNKNOWN_LEADER_EPOCH,
    UNKNOWN_MEMBER_ID,
    UNKNOWN_TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
    UNRELEASED_INSTANCE_ID,
    UNSTABLE_OFFSET_COMMIT,
    UNSUPPORTED_ASSIGNOR,
    UNSUPPORTED_VERSION,
    error_name,
)

__all__ = [
    "CONSUMER_PROTOCOL_NOT_SUPPORTED",
    "SHARE_GROUPS_NOT_SUPPORTED",
    "Api",
    "AssignmentError",
    "AuthenticationFailedError",
    "BrokerError",
    "ClusterUnreachableError",
    "CommitFailedError",
    "ConfigError",
    "ConsumerClosedError",
    "CoordinatorUnavailable",
    "Disposition",
    "FatalGroupError",
    "FencedInstanceIdError",
    "FetchError",
    "GroupAuthorizationFailedError",
    "GroupThreadCrashed",
    "IllegalStateError",
    "InvalidRecordStateError",
    "KGroupError",
    "KafkaTimeoutError",
    "ListenerError",
    "MalformedMetadata",
    "NoOffsetForPartitionError",
    "OffsetOutOfRangeError",
    "ProtocolViolation",
    "RebalanceInProgressError",
    "RecordDeserializationError",
    "RetriableCommitFailedError",
    "TopicAuthorizationFailedError",
    "UnknownTopicOrPartitionError",
    "WakeupError",
    "broker_error",
    "classify",
    "error_name",
]


class KGroupError(Exception):
    """Base class of every error kgroup raises."""


class ConfigError(KGroupError, ValueError):
    """A configuration value or combination is invalid. ``field`` names the offending key."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class ProtocolViolation(KGroupError):
    """An input the membership machine cannot accept in its state: a bug in kgroup.

    The machine that raised it is poisoned (every later call raises it again).
    """


class MalformedMetadata(KGroupError):
    """ConsumerProtocol bytes (a Subscription or an Assignment) from a peer cannot be decoded."""


class BrokerError(KGroupError):
    """A broker answered with an error code.

    Attributes:
        api: the API that failed (``Api``).
        code: the Kafka error code (int).
        name: its protocol name, e.g. ``"NOT_COORDINATOR"``.

    """

    def __init__(self, api: Api, code: int, message: str = "") -> None:
        self.api = api
        self.code = code
        self.name = error_name(code)
        text = f"{api.value} failed with {self.name} ({code})"
        super().__init__(f"{text}: {message}" if message else text)


class CoordinatorUnavailable(BrokerError):
    """The group coordinator is unknown, moving or loading; the call may be retried."""


class RebalanceInProgressError(BrokerError):
    """The group is rebalancing; call ``poll()`` to complete the rebalance, then retry."""


class UnknownTopicOrPartitionError(BrokerError):
    """An offset request named a topic or partition that does not exist."""


class TopicAuthorizationFailedError(BrokerError):
    """TOPIC_AUTHORIZATION_FAILED: the principal may not read (or describe) a topic it asked for.

    Java's ``TopicAuthorizationException``. Raised by the call that met it (``poll()`` for a
    subscribed or assigned topic, ``commit()``, ``committed()``, ...); the consumer is not
    poisoned: once an ACL grants ``READ`` (docs/security.md), the next call succeeds.
    """


class InvalidRecordStateError(BrokerError):
    """A share acknowledgement failed: the member does not hold the record (INVALID_RECORD_STATE, KIP-932).

    Its acquisition lock expired (``acquisition_lock_timeout_ms``) and it went to another
    member, or it was acknowledged already. Java's ``InvalidRecordStateException``.
    """


class FatalGroupError(BrokerError):
    """The consumer cannot continue: authorization, protocol, or configuration rejected.

    After this error the consumer is poisoned: ``poll()`` and ``commit()`` raise it again.
    """


class GroupAuthorizationFailedError(FatalGroupError):
    """GROUP_AUTHORIZATION_FAILED: the principal has no ``READ`` on ``group_id``.

    Java's ``GroupAuthorizationException``; fatal for the member, as in Java's
    ``AbstractCoordinator`` (docs/security.md lists the ACLs a consumer needs).
    """


class FencedInstanceIdError(FatalGroupError):
    """FENCED_INSTANCE_ID (KIP-345): another process uses the same ``group_instance_id``."""


class GroupThreadCrashed(KGroupError):
    """The group thread stopped: a kgroup bug or an illegal input poisoned the membership machine.

    The consumer is poisoned: it reports its partitions lost, stops fetching, and every later
    call raises this error (no heartbeats means the group reassigns the partitions).
    """


class RetriableCommitFailedError(KGroupError):
    """An asynchronous commit failed with a retriable error (Java ``RetriableCommitFailedException``).

    ``commit_async`` never retries: a retry could land after a later commit and move the
    committed offset back. Commit again (a later commit covers the same partitions).
    """


class FetchError(KGroupError):
    """Fetching records failed (corrupt batch, record too large, topic authorization, ...).

    Attributes:
        topic_partition: the partition concerned, when the client reported one (else None).

    """

    def __init__(self, message: str, topic_partition: object = None) -> None:
        super().__init__(message)
        self.topic_partition = topic_partition


class OffsetOutOfRangeError(FetchError):
    """The fetch position is out of range and ``auto_offset_reset`` is ``"none"``.

    Java ``OffsetOutOfRangeException``: ``seek()`` to a valid offset, then ``poll()`` again.
    """


class CommitFailedError(KGroupError):
    """A commit could not complete because this member no longer owns the partitions.

    The member's generation was reset (or the partitions are not assigned to it); the
    partitions may already belong to another member, so no offset was written for them.
    """


class NoOffsetForPartitionError(KGroupError):
    """``auto_offset_reset="none"`` and a partition has no committed offset.

    Attributes:
        partitions: frozenset of ``TopicPartition`` without a committed offset.

    """

    def __init__(self, partitions: frozenset[object]) -> None:
        self.partitions = partitions
        names = ", ".join(sorted(str(p) for p in partitions))
        super().__init__(f"no committed offset and auto_offset_reset='none' for: {names}")


class ListenerError(KGroupError):
    """A ``RebalanceListener`` callback raised; ``__cause__`` is the user's exception.

    The rebalance still completed (Java semantics); the error surfaces from ``poll()``.
    """


class AssignmentError(KGroupError):
    """An assignor returned an invalid plan (incomplete, overlapping, or not a subscriber's)."""


class IllegalStateError(KGroupError, RuntimeError):
    """A call the consumer's state forbids.

    For example poll() without a subscription, seek() of a partition not assigned, or close()
    from inside a listener callback.
    """


class WakeupError(KGroupError):
    """``Consumer.wakeup()`` interrupted ``poll()`` (Java ``WakeupException``)."""


class RecordDeserializationError(KGroupError):
    """A key or value deserializer raised (Java ``RecordDeserializationException``).

    The position of ``topic_partition`` stays at ``offset``: every ``poll()`` raises this again
    until the application seeks past the record (``consumer.seek(e.topic_partition, e.offset +
    1)``). Records of the same ``poll()`` before it were returned first; ``__cause__`` is the
    deserializer's exception.

    Attributes:
        topic_partition: the record's ``TopicPartition``.
        offset: the record's offset.
        origin: ``"key"`` or ``"value"``: which deserializer failed.

    """

    def __init__(self, topic_partition: object, offset: int, origin: str, message: str) -> None:
        super().__init__(f"{topic_partition} offset {offset}: the {origin} deserializer failed: {message}")
        self.topic_partition = topic_partition
        self.offset = offset
        self.origin = origin


class AuthenticationFailedError(KGroupError):
    """The broker refused the connection: the TLS handshake failed or the SASL exchange was refused.

    Java's ``AuthenticationException`` (``SslAuthenticationException``,
    ``SaslAuthenticationException``): a certificate the client does not trust, a certificate
    for another host name, a wrong password, a mechanism the listener does not enable. Raised
    by ``poll()`` as soon as a connection is refused, before ``default_api_timeout_ms``; the
    message says why (never the secret). The consumer keeps trying with backoff, as Java's
    does: a later ``poll()`` succeeds once the credentials or the certificates are fixed.
    See docs/security.md.
    """


class KafkaTimeoutError(KGroupError, TimeoutError):
    """A call's ``timeout_ms`` passed before the cluster answered it (Java ``TimeoutException``)."""


class ClusterUnreachableError(KafkaTimeoutError):
    """No broker of ``bootstrap_servers`` has answered since the consumer started.

    ``poll()`` raises it once ``default_api_timeout_ms`` has passed after ``subscribe()`` with
    the cluster never reached (a wrong address, a firewall, the cluster down at deploy time),
    and again at each ``poll()`` until a broker answers; the consumer keeps trying in the
    background, so polling on is fine. Once connected, a later outage raises nothing from
    ``poll()`` (as in Java): ``health()`` turns not ready and blocking calls time out.
    """


class ConsumerClosedError(KGroupError):
    """The consumer was closed; it cannot be used again."""


class Api(enum.Enum):
    """The group and offset APIs kgroup classifies errors for."""

    FIND_COORDINATOR = "FindCoordinator"
    JOIN_GROUP = "JoinGroup"
    SYNC_GROUP = "SyncGroup"
    HEARTBEAT = "Heartbeat"
    LEAVE_GROUP = "LeaveGroup"
    OFFSET_COMMIT = "OffsetCommit"
    OFFSET_FETCH = "OffsetFetch"
    #: the consumer protocol's one membership API (KIP-848)
    CONSUMER_GROUP_HEARTBEAT = "ConsumerGroupHeartbeat"
    #: share groups' membership API (KIP-932)
    SHARE_GROUP_HEARTBEAT = "ShareGroupHeartbeat"
    #: the share consumer's record APIs (KIP-932)
    SHARE_FETCH = "ShareFetch"
    SHARE_ACKNOWLEDGE = "ShareAcknowledge"
    #: a topic's error in a Metadata answer (the consumer's subscribed or assigned topics)
    METADATA = "Metadata"
    #: share groups' admin APIs (KIP-932), :class:`kgroup.admin.GroupAdmin`'s
    SHARE_GROUP_DESCRIBE = "ShareGroupDescribe"
    DESCRIBE_SHARE_GROUP_OFFSETS = "DescribeShareGroupOffsets"
    ALTER_SHARE_GROUP_OFFSETS = "AlterShareGroupOffsets"
    DELETE_SHARE_GROUP_OFFSETS = "DeleteShareGroupOffsets"
    #: a group's configs (ConfigResource type GROUP; KIP-848, KIP-932), :class:`kgroup.admin.GroupAdmin`'s
    DESCRIBE_CONFIGS = "DescribeConfigs"
    INCREMENTAL_ALTER_CONFIGS = "IncrementalAlterConfigs"


class Disposition(enum.Enum):
    """What to do about a response's error code."""

    OK = "ok"
    #: back off (retry_backoff_ms, exponential), then retry the same request
    RETRY = "retry"
    #: mark the coordinator unknown, back off, find it again, then retry
    REDISCOVER = "rediscover"
    #: send the request again at once (JoinGroup REBALANCE_IN_PROGRESS / UNKNOWN_MEMBER_ID)
    RETRY_NOW = "retry_now"
    #: adopt the member id the broker handed out and rejoin at once (KIP-394)
    ADOPT_MEMBER_ID = "adopt_member_id"
    #: rejoin the group; the generation (and owned partitions) stay valid until then
    REJOIN = "rejoin"
    #: drop the generation but keep the member id; owned partitions are lost; rejoin
    RESET_GENERATION = "reset_generation"
    #: drop generation and member id; owned partitions are lost; rejoin
    RESET_MEMBER = "reset_member"
    #: raise a typed error to the caller of the blocking call; the consumer carries on
    RAISE = "raise"
    #: log and carry on (LeaveGroup is best effort)
    IGNORE = "ignore"
    #: the consumer cannot continue: raise a FatalGroupError and poison the consumer
    FATAL = "fatal"


_COORDINATOR_MOVED = {COORDINATOR_NOT_AVAILABLE: Disposition.REDISCOVER, NOT_COORDINATOR: Disposition.REDISCOVER}

#: what SyncGroup and Heartbeat share (Java ``SyncGroupResponseHandler``, ``HeartbeatResponseHandler``):
#: the requests of a member inside a generation
_IN_GENERATION = {
    NONE: Disposition.OK,
    **_COORDINATOR_MOVED,
    REBALANCE_IN_PROGRESS: Disposition.REJOIN,
    ILLEGAL_GENERATION: Disposition.RESET_GENERATION,
    UNKNOWN_MEMBER_ID: Disposition.RESET_MEMBER,
    FENCED_INSTANCE_ID: Disposition.FATAL,
    GROUP_AUTHORIZATION_FAILED: Disposition.FATAL,
}

#: what Java's ``AbstractHeartbeatRequestManager.onErrorResponse`` does for every heartbeat of the
#: broker-assigned protocols (ConsumerGroupHeartbeat, KIP-848; ShareGroupHeartbeat, KIP-932).
#: REDISCOVER: find the coordinator again and heartbeat at once; RETRY: back off, then heartbeat;
#: RESET_GENERATION: fenced, the epoch is gone (the member id stays, KIP-1082), the partitions are
#: lost, rejoin with epoch 0; RAISE: report to the application and carry on (missing topic ACLs
#: may be added later).
_GROUP_HEARTBEAT = {
    NONE: Disposition.OK,
    **_COORDINATOR_MOVED,
    COORDINATOR_LOAD_IN_PROGRESS: Disposition.RETRY,
    FENCED_MEMBER_EPOCH: Disposition.RESET_GENERATION,
    UNKNOWN_MEMBER_ID: Disposition.RESET_GENERATION,
    TOPIC_AUTHORIZATION_FAILED: Disposition.RAISE,
    GROUP_AUTHORIZATION_FAILED: Disposition.FATAL,
    INVALID_REQUEST: Disposition.FATAL,
    GROUP_MAX_SIZE_REACHED: Disposition.FATAL,
    UNSUPPORTED_ASSIGNOR: Disposition.FATAL,
    UNSUPPORTED_VERSION: Disposition.FATAL,
}

#: what Java's admin handlers of share groups do (``DescribeShareGroupsHandler``,
#: ``ListShareGroupOffsetsHandler``, ``AlterShareGroupOffsetsHandler``,
#: ``DeleteShareGroupOffsetsHandler``): retry a loading coordinator, find a moved one again, and
#: fail the call on every other code (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, the authorization
#: failures, UNSUPPORTED_VERSION: a cluster without share groups, ...)
_SHARE_GROUP_ADMIN = {
    NONE: Disposition.OK,
    COORDINATOR_LOAD_IN_PROGRESS: Disposition.RETRY,
    **_COORDINATOR_MOVED,
    GROUP_ID_NOT_FOUND: Disposition.RAISE,
    NON_EMPTY_GROUP: Disposition.RAISE,
    GROUP_AUTHORIZATION_FAILED: Disposition.RAISE,
    TOPIC_AUTHORIZATION_FAILED: Disposition.RAISE,
    UNKNOWN_TOPIC_OR_PARTITION: Disposition.RAISE,
    INVALID_REQUEST: Disposition.RAISE,
    UNSUPPORTED_VERSION: Disposition.RAISE,
}

#: a group's configs (Java ``KafkaAdminClient.describeConfigs``, ``incrementalAlterConfigs``):
#: the resource's code fails its future, except a request that timed out (REQUEST_TIMED_OUT: the
#: broker's forward to the controller got no answer) or reached a broker that is no longer the
#: controller's (NOT_CONTROLLER): both retried, the operations being idempotent (SET, DELETE).
#: INVALID_CONFIG: an unknown config, a value of the wrong type or out of range; INVALID_REQUEST:
#: a cluster without group configs (before Apache Kafka 3.8: "Unknown resource type")
_GROUP_CONFIGS = {
    NONE: Disposition.OK,
    REQUEST_TIMED_OUT: Disposition.RETRY,
    NOT_CONTROLLER: Disposition.RETRY,
    INVALID_CONFIG: Disposition.RAISE,
    POLICY_VIOLATION: Disposition.RAISE,
    GROUP_AUTHORIZATION_FAILED: Disposition.RAISE,
    CLUSTER_AUTHORIZATION_FAILED: Disposition.RAISE,
    INVALID_REQUEST: Disposition.RAISE,
    UNSUPPORTED_VERSION: Disposition.RAISE,
}

#: what Java's ``ShareConsumeRequestManager`` and ``ShareSessionHandler`` do for a ShareFetch or
#: ShareAcknowledge error, top-level or a partition's (fetch or acknowledgement): RETRY_NOW: the
#: share session is gone or its epoch parted, open a new one (epoch 0) at once; REDISCOVER: the
#: partition's leader moved, refresh metadata and go to the new one; RETRY: back off, then again;
#: RAISE: the acknowledgements failed, reported to the commit's caller and the acknowledgement
#: commit callback (INVALID_RECORD_STATE: the lock expired), or the fetch's error raised from
#: poll(); FATAL: the consumer cannot go on.
_SHARE_RECORDS = {
    NONE: Disposition.OK,
    SHARE_SESSION_NOT_FOUND: Disposition.RETRY_NOW,
    INVALID_SHARE_SESSION_EPOCH: Disposition.RETRY_NOW,
    NOT_LEADER_FOR_PARTITION: Disposition.REDISCOVER,  # NOT_LEADER_OR_FOLLOWER since Kafka 2.7
    FENCED_LEADER_EPOCH: Disposition.REDISCOVER,
    UNKNOWN_LEADER_EPOCH: Disposition.REDISCOVER,
    LEADER_NOT_AVAILABLE: Disposition.REDISCOVER,
    UNKNOWN_TOPIC_OR_PARTITION: Disposition.REDISCOVER,
    UNKNOWN_TOPIC_ID: Disposition.REDISCOVER,
    KAFKA_STORAGE_ERROR: Disposition.REDISCOVER,
    SHARE_SESSION_LIMIT_REACHED: Disposition.RETRY,
    REQUEST_TIMED_OUT: Disposition.RETRY,
    NETWORK_EXCEPTION: Disposition.RETRY,
    COORDINATOR_NOT_AVAILABLE: Disposition.RETRY,
    COORDINATOR_LOAD_IN_PROGRESS: Disposition.RETRY,
    INVALID_RECORD_STATE: Disposition.RAISE,
    TOPIC_AUTHORIZATION_FAILED: Disposition.RAISE,
    GROUP_AUTHORIZATION_FAILED: Disposition.FATAL,
    INVALID_REQUEST: Disposition.FATAL,
    UNSUPPORTED_VERSION: Disposition.FATAL,
}

#: The table. Rows: API -> {error code -> disposition}. Sources are Java's response handlers
#: (``AbstractCoordinator.FindCoordinatorResponseHandler``, ``JoinGroupResponseHandler``,
#: ``SyncGroupResponseHandler``, ``HeartbeatResponseHandler``, ``LeaveGroupResponseHandler``;
#: ``ConsumerCoordinator.OffsetCommitResponseHandler`` and ``OffsetFetchResponseHandler``;
#: ``ConsumerHeartbeatRequestManager`` for ConsumerGroupHeartbeat).
TABLE: Mapping[Api, Mapping[int, Disposition]] = {
    Api.FIND_COORDINATOR: {
        NONE: Disposition.OK,
        COORDINATOR_NOT_AVAILABLE: Disposition.RETRY,
        COORDINATOR_LOAD_IN_PROGRESS: Disposition.RETRY,
        NOT_COORDINATOR: Disposition.RETRY,
        REQUEST_TIMED_OUT: Disposition.RETRY,
        GROUP_AUTHORIZATION_FAILED: Disposition.FATAL,
        INVALID_REQUEST: Disposition.FATAL,
        UNSUPPORTED_VERSION: Disposition.FATAL,
    },
    Api.JOIN_GROUP: {
        NONE: Disposition.OK,
        COORDINATOR_LOAD_IN_PROGRESS: Disposition.RETRY,
        **_COORDINATOR_MOVED,
        UNKNOWN_MEMBER_ID: Disposition.RESET_MEMBER,
        ILLEGAL_GENERATION: Disposition.RESET_GENERATION,
        MEMBER_ID_REQUIRED: Disposition.ADOPT_MEMBER_ID,
        REBALANCE_IN_PROGRESS: Disposition.RETRY_NOW,
        FENCED_INSTANCE_ID: Disposition.FATAL,
        INCONSISTENT_GROUP_PROTOCOL: Disposition.FATAL,
        INVALID_SESSION_TIMEOUT: Disposition.FATAL,
        INVALID_GROUP_ID: Disposition.FATAL,
        GROUP_AUTHORIZATION_FAILED: Disposition.FATAL,
        GROUP_MAX_SIZE_REACHED: Disposition.FATAL,
        UNSUPPORTED_VERSION: Disposition.FATAL,
    },
    Api.SYNC_GROUP: {**_IN_GENERATION, INCONSISTENT_GROUP_PROTOCOL: Disposition.FATAL},
    # REBALANCE_IN_PROGRESS: REJOIN when Stable; while already rebalancing the machine treats it as a success.
    Api.HEARTBEAT: _IN_GENERATION,
    Api.LEAVE_GROUP: {
        NONE: Disposition.OK,
        **{code: Disposition.IGNORE for code in (
            COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
            UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION,
            GROUP_ID_NOT_FOUND, GROUP_AUTHORIZATION_FAILED, REQUEST_TIMED_OUT,
        )},
    },
    Api.OFFSET_COMMIT: {
        NONE: Disposition.OK,
        COORDINATOR_LOAD_IN_PROGRESS: Disposition.RETRY,
        UNKNOWN_TOPIC_OR_PARTITION: Disposition.RAISE,  # Java: "Topic or Partition ... does not exist"
        **_COORDINATOR_MOVED,
        REQUEST_TIMED_OUT: Disposition.REDISCOVER,
        REBALANCE_IN_PROGRESS: Disposition.REJOIN,
        ILLEGAL_GENERATION: Disposition.RESET_GENERATION,
        UNKNOWN_MEMBER_ID: Disposition.RESET_MEMBER,
        # the consumer protocol (KIP-848, OffsetCommit v9+): the epoch sent is older than the
        # member's (retried with the current one while the member has one: Java
        # CommitRequestManager.maybeRetryOnGroupError), or the member was fenced
        STALE_MEMBER_EPOCH: Disposition.RESET_MEMBER,
        FENCED_MEMBER_EPOCH: Disposition.RESET_MEMBER,
        OFFSET_METADATA_TOO_LARGE: Disposition.RAISE,
        INVALID_COMMIT_OFFSET_SIZE: Disposition.RAISE,
        TOPIC_AUTHORIZATION_FAILED: Disposition.RAISE,
        FENCED_INSTANCE_ID: Disposition.FATAL,
        GROUP_AUTHORIZATION_FAILED: Disposition.FATAL,
    },
    Api.OFFSET_FETCH: {
        NONE: Disposition.OK,
        COORDINATOR_LOAD_IN_PROGRESS: Disposition.RETRY,
        UNSTABLE_OFFSET_COMMIT: Disposition.RETRY,
        **_COORDINATOR_MOVED,
        UNKNOWN_TOPIC_OR_PARTITION: Disposition.RAISE,
        TOPIC_AUTHORIZATION_FAILED: Disposition.RAISE,
        GROUP_AUTHORIZATION_FAILED: Disposition.FATAL,
        UNKNOWN_MEMBER_ID: Disposition.RESET_MEMBER,
        # the consumer protocol (KIP-848, OffsetFetch v9+ with the member id and epoch): retried
        # with the member's latest epoch while it has one, else raised (Java CommitRequestManager)
        STALE_MEMBER_EPOCH: Disposition.RESET_MEMBER,
        ILLEGAL_GENERATION: Disposition.RESET_GENERATION,
        FENCED_INSTANCE_ID: Disposition.FATAL,
    },
    # The consumer protocol's member (KIP-848): the heartbeat row above, and static membership's codes.
    Api.CONSUMER_GROUP_HEARTBEAT: {
        **_GROUP_HEARTBEAT,
        UNRELEASED_INSTANCE_ID: Disposition.FATAL,
        FENCED_INSTANCE_ID: Disposition.FATAL,
    },
    # A share group's member (KIP-932): the same handler as ``ShareHeartbeatRequestManager`` uses
    # it (UNSUPPORTED_VERSION: the cluster has no share groups, ``handleSpecificExceptionInResponse``).
    Api.SHARE_GROUP_HEARTBEAT: _GROUP_HEARTBEAT,
    Api.SHARE_FETCH: _SHARE_RECORDS,
    Api.SHARE_ACKNOWLEDGE: _SHARE_RECORDS,
    # a topic's error code in a Metadata answer (Java's ``Metadata``: an unauthorized topic is
    # thrown from poll() as ``TopicAuthorizationException``, checkUnauthorizedTopics; the
    # others, e.g. UNKNOWN_TOPIC_OR_PARTITION or LEADER_NOT_AVAILABLE, leave the topic out of
    # the answer until a later refresh)
    Api.METADATA: {
        NONE: Disposition.OK,
        TOPIC_AUTHORIZATION_FAILED: Disposition.RAISE,
    },
    # share groups' admin calls (KIP-932): an admin call fails, it poisons nothing
    Api.SHARE_GROUP_DESCRIBE: _SHARE_GROUP_ADMIN,
    Api.DESCRIBE_SHARE_GROUP_OFFSETS: _SHARE_GROUP_ADMIN,
    Api.ALTER_SHARE_GROUP_OFFSETS: _SHARE_GROUP_ADMIN,
    Api.DELETE_SHARE_GROUP_OFFSETS: _SHARE_GROUP_ADMIN,
    # a group's configs: an admin call fails, it poisons nothing
    Api.DESCRIBE_CONFIGS: _GROUP_CONFIGS,
    Api.INCREMENTAL_ALTER_CONFIGS: _GROUP_CONFIGS,
}


#: what a code missing from an API's row does (the Java response handlers' final ``else``)
UNLISTED: Mapping[Api, Disposition] = {
    Api.FIND_COORDINATOR: Disposition.RAISE,
    Api.JOIN_GROUP: Disposition.RAISE,
    Api.SYNC_GROUP: Disposition.RAISE,
    Api.HEARTBEAT: Disposition.RETRY,
    Api.LEAVE_GROUP: Disposition.IGNORE,
    Api.OFFSET_COMMIT: Disposition.RAISE,
    Api.OFFSET_FETCH: Disposition.RAISE,
    Api.CONSUMER_GROUP_HEARTBEAT: Disposition.FATAL,  # INVALID_REGULAR_EXPRESSION among them
    Api.SHARE_GROUP_HEARTBEAT: Disposition.FATAL,  # Java's ``default`` case, as above
    Api.SHARE_FETCH: Disposition.RAISE,  # a partition's unexpected error: raised from poll()
    Api.SHARE_ACKNOWLEDGE: Disposition.RAISE,  # the acknowledgements failed
    Api.METADATA: Disposition.IGNORE,
    Api.SHARE_GROUP_DESCRIBE: Disposition.RAISE,
    Api.DESCRIBE_SHARE_GROUP_OFFSETS: Disposition.RAISE,
    Api.ALTER_SHARE_GROUP_OFFSETS: Disposition.RAISE,
    Api.DELETE_SHARE_GROUP_OFFSETS: Disposition.RAISE,
    Api.DESCRIBE_CONFIGS: Disposition.RAISE,
    Api.INCREMENTAL_ALTER_CONFIGS: Disposition.RAISE,
}

#: the message of the fatal error when the cluster does not serve the consumer protocol (Java's
#: ``AbstractHeartbeatRequestManager.CONSUMER_PROTOCOL_NOT_SUPPORTED_MSG``, in other words)
CONSUMER_PROTOCOL_NOT_SUPPORTED = (
    "the cluster does not support the consumer group protocol (KIP-848; Apache Kafka 4.0+ serves it "
    "by default): use the classic protocol until the cluster is upgraded"
)

#: the message of the fatal error when the cluster does not serve share groups (Java's
#: ``ShareHeartbeatRequestManager.SHARE_PROTOCOL_NOT_SUPPORTED_MSG``, in other words)
SHARE_GROUPS_NOT_SUPPORTED = (
    "the cluster does not support share groups (KIP-932): ShareGroupHeartbeat v1 needs Apache Kafka 4.1+ "
    "with the share.version feature enabled (docs/share-groups.md)"
)

#: what a group-config error says when the cluster has no group configs
GROUP_CONFIGS_NOT_SUPPORTED = (
    "the cluster does not keep group configs (ConfigResource type GROUP: Apache Kafka 3.8+, KIP-848)"
)

#: what a broker error's message adds, by API and code
HINTS: Mapping[tuple[Api, int], str] = {
    (Api.JOIN_GROUP, UNSUPPORTED_VERSION): "static membership (group_instance_id) needs JoinGroup v5+ (Kafka 2.3+)",
    (Api.CONSUMER_GROUP_HEARTBEAT, UNSUPPORTED_VERSION): CONSUMER_PROTOCOL_NOT_SUPPORTED,
    (Api.CONSUMER_GROUP_HEARTBEAT, UNRELEASED_INSTANCE_ID): (
        "the group.instance.id is still held by a member that has not left the group yet "
        "(another process uses it, or the previous one has not timed out)"
    ),
    (Api.CONSUMER_GROUP_HEARTBEAT, FENCED_INSTANCE_ID): (
        "another member joined with the same group.instance.id (an admin removed this member, "
        "or two processes share the id)"
    ),
    (Api.CONSUMER_GROUP_HEARTBEAT, GROUP_MAX_SIZE_REACHED): (
        "the group has as many members as the broker allows (group.consumer.max.size)"
    ),
    (Api.SHARE_GROUP_HEARTBEAT, UNSUPPORTED_VERSION): SHARE_GROUPS_NOT_SUPPORTED,
    **{
        (api, code): hint
        for api in (Api.SHARE_GROUP_DESCRIBE, Api.DESCRIBE_SHARE_GROUP_OFFSETS, Api.ALTER_SHARE_GROUP_OFFSETS,
                    Api.DELETE_SHARE_GROUP_OFFSETS)
        for code, hint in (
            (GROUP_ID_NOT_FOUND, "the share group does not exist"),
            (NON_EMPTY_GROUP, "the share group has members: stop them first (its start offsets change only "
                              "while it is empty)"),
            (UNSUPPORTED_VERSION, "the cluster does not serve share groups' admin APIs (Apache Kafka 4.1+)"),
        )
    },
    (Api.DESCRIBE_CONFIGS, GROUP_AUTHORIZATION_FAILED): "the principal needs DESCRIBE_CONFIGS on the group",
    (Api.INCREMENTAL_ALTER_CONFIGS, GROUP_AUTHORIZATION_FAILED): "the principal needs ALTER_CONFIGS on the group",
    **{
        (api, code): GROUP_CONFIGS_NOT_SUPPORTED
        for api in (Api.DESCRIBE_CONFIGS, Api.INCREMENTAL_ALTER_CONFIGS)
        for code in (INVALID_REQUEST, UNSUPPORTED_VERSION)
    },
    (Api.SHARE_GROUP_HEARTBEAT, GROUP_MAX_SIZE_REACHED): (
        "the share group has as many members as the broker allows (group.share.max.size)"
    ),
    (Api.SHARE_FETCH, INVALID_RECORD_STATE): "the record's acquisition lock expired, or it was acknowledged already",
    (Api.SHARE_ACKNOWLEDGE, INVALID_RECORD_STATE): (
        "the record's acquisition lock expired, or it was acknowledged already"
    ),
    (Api.CONSUMER_GROUP_HEARTBEAT, UNSUPPORTED_ASSIGNOR): (
        "the broker has no server-side assignor of that name (group.consumer.assignors)"
    ),
}


def classify(api: Api, code: int) -> Disposition:
    """Classify an error code returned by ``api``.

    Args:
        api: the API whose response carried the code.
        code: the Kafka error code (0 is success).

    Returns:
        The ``Disposition`` from the table; a code not listed for ``api`` gets ``UNLISTED[api]``.

    """
    return TABLE[api].get(code, UNLISTED[api])


def broker_error(api: Api, code: int, message: str = "", context: str = "") -> BrokerError:
    """Build the typed exception for an error code.

    Args:
        api: the API that failed.
        code: the Kafka error code.
        message: extra context (group id, member id; a response's ``error_message``).
        context: the member, after the hint (``HINTS``) the message gets.

    Returns:
        ``FencedInstanceIdError`` for FENCED_INSTANCE_ID, ``TopicAuthorizationFailedError``,
        ``InvalidRecordStateError`` (INVALID_RECORD_STATE, a share acknowledgement),
        ``GroupAuthorizationFailedError`` (a FATAL GROUP_AUTHORIZATION_FAILED), ``FatalGroupError``
        for other FATAL codes (unknown codes included, with "unexpected" in the message), ``CoordinatorUnavailable``
        for coordinator moves, ``RebalanceInProgressError`` for REBALANCE_IN_PROGRESS,
        ``UnknownTopicOrPartitionError``, else ``BrokerError``.

    """
    text = "; ".join(part for part in (message, HINTS.get((api, code), ""), context) if part)
    if code not in TABLE[api]:
        text = f"unexpected error code for {api.value}" + (f"; {text}" if text else "")
    if code == FENCED_INSTANCE_ID:
        return FencedInstanceIdError(api, code, text)
    if code == TOPIC_AUTHORIZATION_FAILED:
        return TopicAuthorizationFailedError(api, code, text)
    if code == INVALID_RECORD_STATE:
        return InvalidRecordStateError(api, code, text)
    if classify(api, code) is Disposition.FATAL:
        if code == GROUP_AUTHORIZATION_FAILED:
            return GroupAuthorizationFailedError(api, code, text)
        return FatalGroupError(api, code, text)
    if code in (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS):
        return CoordinatorUnavailable(api, code, text)
    if code == REBALANCE_IN_PROGRESS:
        return RebalanceInProgressError(api, code, text)
    if code == UNKNOWN_TOPIC_OR_PARTITION:
        return UnknownTopicOrPartitionError(api, code, text)
    return BrokerError(api, code, text)
