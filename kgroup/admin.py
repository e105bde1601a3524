"""Consumer-group administration: list, describe, delete groups; offsets, lag and resets; remove static members.

``GroupAdmin`` is a small client over the ``AdminTransport`` port (``kgroup._io.transport``; over
kafka-python's network client in ``kgroup._io.kafka_admin``), the kgroup counterpart of the group
parts of Java's ``Admin`` (``describeConsumerGroups``, ``listConsumerGroups``,
``listConsumerGroupOffsets``, ``listOffsets``, ``alterConsumerGroupOffsets``,
``deleteConsumerGroups``, ``removeMembersFromConsumerGroup``). The ``kgroup`` command line
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
"""

from __future__ import annotations

import concurrent.futures
import itertools
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Final, Literal, TypeVar

import attrs

from kgroup import _error_codes as codes
from kgroup._clock import Clock, MonotonicClock
from kgroup._error_codes import error_name
from kgroup._io.transport import AdminTransport, OffsetFetchResult
from kgroup._retry import Deadline, retry_until
from kgroup.errors import KGroupError, MalformedMetadata
from kgroup.membership.commands import SendFindCoordinator
from kgroup.membership.events import FindCoordinatorResponded
from kgroup.protocol.consumer_group_describe import (
    MEMBER_TYPE_CLASSIC,
    MEMBER_TYPE_CONSUMER,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    NamedTopicPartitions,
)
from kgroup.protocol.consumer_protocol import decode_assignment, decode_subscription
from kgroup.protocol.group_api import DescribedGroup, DescribedMember
from kgroup.types import OffsetAndMetadata, TopicPartition

__all__ = [
    "DEFAULT_REMOVE_REASON",
    "INACTIVE_STATES",
    "AdminError",
    "AdminTimeoutError",
    "Coordinator",
    "GroupAdmin",
    "GroupDeletion",
    "GroupDescription",
    "GroupListing",
    "GroupNotEmptyError",
    "GroupNotFoundError",
    "MemberDescription",
    "MemberRemoval",
    "OffsetResetPlan",
    "PartitionLag",
    "PlannedOffset",
    "ResetTarget",
    "UnsupportedVersionError",
]

T = TypeVar("T")

#: Java ``KafkaAdminClient.DEFAULT_LEAVE_GROUP_REASON`` (KIP-800)
DEFAULT_REMOVE_REASON: Final = "member was removed by an admin"

#: a coordinator moving or loading: find it again and retry (Java ``AdminApiDriver``)
_RETRIABLE: Final = frozenset(
    {codes.COORDINATOR_LOAD_IN_PROGRESS, codes.COORDINATOR_NOT_AVAILABLE, codes.NOT_COORDINATOR}
)
_CONSUMER_PROTOCOL_TYPE: Final = "consumer"
#: the states in which Kafka's kafka-consumer-groups.sh resets offsets (``ConsumerGroupCommand.resetOffsets``)
INACTIVE_STATES: Final = frozenset({"Empty", "Dead"})


# ---------------------------------------------------------------------------------- errors
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

    State "Dead", GROUP_ID_NOT_FOUND (69), or a whole-request UNKNOWN_MEMBER_ID from
    LeaveGroup (Kafka's answer for an unknown group).
    """


class UnsupportedVersionError(AdminError):
    """The coordinator cannot speak the version the call needs.

    LeaveGroup v3+ for removal by ``group_instance_id`` (KIP-345, Kafka 2.4+); OffsetFetch v8+
    for all committed offsets.
    """


class AdminTimeoutError(AdminError):
    """The call's deadline passed; ``__cause__`` or the message names the last failure."""


class GroupNotEmptyError(AdminError):
    """The group has members (or is rebalancing), and the operation needs it inactive.

    Kafka's ``kafka-consumer-groups.sh`` resets offsets only of an ``Empty`` or ``Dead`` group
    ("Assignments can only be reset if the group ... is inactive"); the coordinator refuses to
    delete a group with members (NON_EMPTY_GROUP, 68).
    """


# ---------------------------------------------------------------------------------- values
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
        group_type: "classic" (DescribeGroups answered) or "consumer" (ConsumerGroupDescribe
            answered: the group runs the consumer group protocol, KIP-848).
        group_epoch: a consumer group's epoch (bumped by every change of members or
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
        committed_offset: the group's committed offset, or None (nothing committed).
        log_end_offset: the partition's log end offset (ListOffsets LATEST: the high watermark
            under read_uncommitted), or None (unknown: no leader, or the lookup failed).
        lag: ``log_end_offset - committed_offset`` (at least 0) when both are known, else None.
        metadata: the commit's metadata string ("" when none).
        member_id: the member the partition is assigned to, or None.
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
        protocol_type: "consumer", or "" for a group that only commits offsets (Java's
            ``isSimpleConsumerGroup``: ``assign()`` plus ``commitSync``).
        state: the group's state (ListGroups v4+, KIP-518: "Stable", "Empty", ...), or None
            when the broker did not say.
        group_type: "classic" or "consumer" (ListGroups v5+, KIP-848), or None when the
            broker did not say.

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


ResetKind = Literal["earliest", "latest", "timestamp", "offset", "shift_by"]


@attrs.frozen
class ResetTarget:
    """Where an offset reset moves each partition: ``kafka-consumer-groups.sh``'s scenarios.

    Build one with :meth:`earliest`, :meth:`latest`, :meth:`timestamp` (``--to-datetime``, in
    ms since the epoch), :meth:`offset` (``--to-offset``) or :meth:`shift_by` (``--shift-by``).
    """

    kind: ResetKind
    value: int = 0

    @classmethod
    def earliest(cls) -> ResetTarget:
        """The log start offset (ListOffsets EARLIEST)."""
        return cls("earliest")

    @classmethod
    def latest(cls) -> ResetTarget:
        """The log end offset (ListOffsets LATEST)."""
        return cls("latest")

    @classmethod
    def timestamp(cls, ms: int) -> ResetTarget:
        """The first offset whose record timestamp is at least ``ms``; the log end offset where none is."""
        return cls("timestamp", ms)

    @classmethod
    def offset(cls, offset: int) -> ResetTarget:
        """``offset``, clamped to the log's start and end offsets."""
        return cls("offset", offset)

    @classmethod
    def shift_by(cls, n: int) -> ResetTarget:
        """The committed offset plus ``n`` (negative: back), clamped to the log's start and end offsets."""
        return cls("shift_by", n)


@attrs.frozen
class PlannedOffset:
    """One partition of an offset reset plan.

    Attributes:
        topic_partition: the partition.
        current_offset: the group's committed offset now, or None.
        new_offset: the offset the reset commits.
        note: why ``new_offset`` is not simply the target ("" when it is): clamped to the
            log start or end offset, or no record at or after the timestamp.

    """

    topic_partition: TopicPartition
    current_offset: int | None
    new_offset: int
    note: str = ""


@attrs.frozen
class OffsetResetPlan:
    """What an offset reset would commit (``kafka-consumer-groups.sh --reset-offsets`` without ``--execute``).

    Attributes:
        group_id: the group.
        state: its state when planned ("Empty", or "Dead": a group the coordinator does not
            know yet gets its first committed offsets).
        target: the scenario.
        partitions: one row per partition, sorted.

    """

    group_id: str
    state: str
    target: ResetTarget
    partitions: tuple[PlannedOffset, ...]

    def offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """The offsets to commit (no metadata, no leader epoch: as Kafka's tool commits them)."""
        return {p.topic_partition: OffsetAndMetadata(p.new_offset) for p in self.partitions}


# ---------------------------------------------------------------------------------- retries
class _Retry(Exception):
    """A retriable failure inside an attempt (internal)."""

    def __init__(self, reason: str, *, rediscover: bool = True) -> None:
        super().__init__(reason)
        self.rediscover = rediscover


# ---------------------------------------------------------------------------------- admin
class GroupAdmin:
    """Group administration over an ``AdminTransport`` (see the module docstring).

    Args:
        transport: the network port (``KafkaAdminTransport`` in production, started).
        timeout_ms: the default deadline of each call (ms).
        retry_backoff_ms: the pause before retrying a retriable failure (ms).
        owns_transport: close the transport in :meth:`close`.
        clock: the ``Clock`` deadlines and retry waits run on (tests inject a ``FakeClock``);
            default the monotonic clock.

    Use :meth:`connect` to build one over kafka-python from ``bootstrap_servers``.

    """

    def __init__(
        self,
        transport: AdminTransport,
        *,
        timeout_ms: int = 30000,
        retry_backoff_ms: int = 100,
        owns_transport: bool = False,
        clock: Clock | None = None,
    ) -> None:
        if timeout_ms <= 0:
            raise ValueError("timeout_ms must be positive")
        self._transport = transport
        self.timeout_ms = timeout_ms
        self._backoff_s = retry_backoff_ms / 1000
        self._owns = owns_transport
        self._clock: Clock = clock if clock is not None else MonotonicClock()
        self._request_ids = itertools.count(1)
        self._coordinators: dict[str, Coordinator] = {}
        self._closed = False

    @classmethod
    def connect(
        cls, bootstrap_servers: str, *, timeout_ms: int = 30000, client_id: str = "kgroup-admin", **config: Any
    ) -> GroupAdmin:
        """A ``GroupAdmin`` over a new kafka-python transport, bootstrapped within ``timeout_ms``.

        Args:
            bootstrap_servers: ``host:port[,host:port...]``.
            timeout_ms: bootstrap deadline and each call's default deadline (ms).
            client_id: the ``client.id`` the brokers see.
            config: other :class:`~kgroup.config.ConsumerConfig` fields (security settings, ...).

        Raises:
            kgroup.errors.ConfigError: an invalid setting (``bootstrap_servers`` included).
            AdminError: no broker answered within ``timeout_ms``.

        """
        from kgroup._io.kafka_admin import KafkaAdminTransport  # the only kafka-python door
        from kgroup.config import ConsumerConfig

        settings: dict[str, Any] = {
            "request_timeout_ms": max(timeout_ms, 1000),
            "enable_auto_commit": False,
            **config,
        }
        consumer_config = ConsumerConfig(
            bootstrap_servers=bootstrap_servers, group_id="kgroup-admin", client_id=client_id, **settings
        )
        transport = KafkaAdminTransport(consumer_config)
        try:
            transport.start(timeout_ms)
        except Exception as exc:
            transport.close()
            raise AdminError(f"could not reach the cluster at {bootstrap_servers!r} within {timeout_ms} ms: "
                             f"{type(exc).__name__}: {exc}") from exc
        return cls(transport, timeout_ms=timeout_ms, owns_transport=True)

    def close(self) -> None:
        """Close the transport if this admin owns it. Idempotent."""
        if not self._closed:
            self._closed = True
            if self._owns:
                self._transport.close()

    def __enter__(self) -> GroupAdmin:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ plumbing
    def _deadline(self, timeout_ms: int | None) -> Deadline:
        return Deadline.after_ms(self._clock, self.timeout_ms if timeout_ms is None else timeout_ms)

    def _wait(self, future: concurrent.futures.Future[T], deadline: Deadline, what: str) -> T:
        """The future's value; its exception as ``_Retry`` (a lost connection is retriable)."""
        try:
            return future.result(deadline.remaining_ms() / 1000 + 2.0)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise _Retry(f"{what}: no answer before the deadline") from None
        except KGroupError:
            raise
        except Exception as exc:
            raise _Retry(f"{what}: {type(exc).__name__}: {exc}") from exc

    def _retry(self, attempt: Callable[[], T], deadline: Deadline, failed: str) -> T:
        """Run ``attempt()`` until it returns or raises an AdminError; ``_Retry`` is retried.

        Waits ``retry_backoff_ms`` on the admin's clock between attempts; ``AdminTimeoutError``
        (naming ``failed`` and the last failure) once the deadline would pass.
        """
        try:
            return retry_until(attempt, deadline, retry_on=_Retry, backoff_s=lambda _: self._backoff_s)
        except _Retry as last:
            raise AdminTimeoutError(f"{failed} did not complete in time; last: {last}") from None

    def _retrying(self, group_id: str, what: str, deadline: Deadline, attempt: Callable[[Coordinator], T]) -> T:
        """Run ``attempt(coordinator)`` until it returns, raises an AdminError, or time runs out."""

        def on_coordinator() -> T:
            try:
                return attempt(self._coordinator(group_id, deadline))
            except _Retry as retry:
                if retry.rediscover:
                    self._coordinators.pop(group_id, None)
                raise

        return self._retry(on_coordinator, deadline, f"{what} for group {group_id!r}")

    def _coordinator(self, group_id: str, deadline: Deadline) -> Coordinator:
        known = self._coordinators.get(group_id)
        if known is not None:
            return known
        command = SendFindCoordinator(
            request_id=next(self._request_ids), key=group_id, timeout_ms=max(deadline.remaining_ms(), 1)
        )
        event = self._wait(self._transport.send(command, group_id), deadline, "FindCoordinator")
        if not isinstance(event, FindCoordinatorResponded):
            raise _Retry(f"FindCoordinator: {getattr(event, 'reason', event)}")
        if event.error_code in _RETRIABLE:
            raise _Retry(f"FindCoordinator: {error_name(event.error_code)}")
        if event.error_code != codes.NONE:
            raise AdminError(
                f"FindCoordinator for group {group_id!r} failed with {error_name(event.error_code)} "
                f"({event.error_code})",
                api="FindCoordinator",
                code=event.error_code,
            )
        coordinator = Coordinator(event.node_id, event.host, event.port)
        self._coordinators[group_id] = coordinator
        return coordinator

    @staticmethod
    def _check(api: str, group_id: str, code: int) -> None:
        """Raise for a non-zero group-level ``code``: ``_Retry`` for coordinator moves."""
        if code == codes.NONE:
            return
        if code in _RETRIABLE:
            raise _Retry(f"{api}: {error_name(code)}")
        text = f"{api} for group {group_id!r} failed with {error_name(code)} ({code})"
        if code == codes.GROUP_ID_NOT_FOUND:
            raise GroupNotFoundError(f"{text}: the group does not exist", api=api, code=code)
        if code == codes.UNSUPPORTED_VERSION:
            raise UnsupportedVersionError(text, api=api, code=code)
        raise AdminError(text, api=api, code=code)

    # ------------------------------------------------------------------ public API
    def find_coordinator(self, group_id: str, timeout_ms: int | None = None) -> Coordinator:
        """The coordinator of ``group_id`` (FindCoordinator; remembered until it moves).

        Raises:
            AdminError: a non-retriable FindCoordinator error (GROUP_AUTHORIZATION_FAILED, ...).
            AdminTimeoutError: not found before the deadline.

        """
        return self._retrying(group_id, "FindCoordinator", self._deadline(timeout_ms), lambda c: c)

    def describe_group(self, group_id: str, timeout_ms: int | None = None) -> GroupDescription:
        """Describe ``group_id``, whichever group protocol it runs (Java ``Admin.describeConsumerGroups``).

        ConsumerGroupDescribe (API 69, KIP-848) first: a consumer group comes back with
        ``group_type`` "consumer", its group and assignment epochs, and each member's epoch,
        assignment and target assignment (topic names as the broker gives them). For a group
        that API does not know as a consumer group (GROUP_ID_NOT_FOUND: a classic group, or no
        group), and against a broker or transport without API 69, DescribeGroups, with each
        member's bytes decoded (``group_type`` "classic"). An unknown group is returned with
        state "Dead" and no members (Kafka's answer; Java's admin does the same); the CLI
        reports it as not existing.

        Raises:
            GroupNotFoundError: GROUP_ID_NOT_FOUND from DescribeGroups.
            AdminError: another group error, or a group that is not a consumer group
                (protocol type other than "consumer", as Java's admin refuses it).
            AdminTimeoutError: no answer before the deadline.

        """
        deadline = self._deadline(timeout_ms)

        def consumer_attempt(coordinator: Coordinator) -> GroupDescription | None:
            groups = self._wait(
                self._transport.consumer_group_describe(
                    [group_id], coordinator.node_id, max(deadline.remaining_ms(), 1)
                ),
                deadline,
                "ConsumerGroupDescribe",
            )
            described = next((g for g in groups if g.group_id == group_id), None)
            if described is None or described.error_code in (codes.GROUP_ID_NOT_FOUND, codes.UNSUPPORTED_VERSION):
                return None  # a classic group, none, or no API 69: DescribeGroups says which
            self._check("ConsumerGroupDescribe", group_id, described.error_code)
            return _describe_consumer_group(described, coordinator)

        consumer_group = self._retrying(group_id, "ConsumerGroupDescribe", deadline, consumer_attempt)
        if consumer_group is not None and consumer_group.members:
            return consumer_group

        def attempt(coordinator: Coordinator) -> GroupDescription:
            groups = self._wait(
                self._transport.describe_groups([group_id], coordinator.node_id, max(deadline.remaining_ms(), 1)),
                deadline,
                "DescribeGroups",
            )
            described = next((g for g in groups if g.group_id == group_id), None)
            if described is None:
                raise AdminError(f"DescribeGroups answered no entry for group {group_id!r}", api="DescribeGroups")
            self._check("DescribeGroups", group_id, described.error_code)
            return _describe(described, coordinator)

        if consumer_group is not None:
            # an empty consumer group, or a broker that answers ConsumerGroupDescribe for every
            # group (the embedded Tansu): a classic group's members come from DescribeGroups
            try:
                classic = self._retrying(group_id, "DescribeGroups", deadline, attempt)
            except KGroupError:
                return consumer_group
            return classic if classic.members else consumer_group
        return self._retrying(group_id, "DescribeGroups", deadline, attempt)

    def committed_offsets(
        self, group_id: str, timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Every partition ``group_id`` has committed an offset for (OffsetFetch, ``topics=null``).

        Raises:
            UnsupportedVersionError: the coordinator has no OffsetFetch v8+.
            AdminError: a group error or a partition error other than UNSTABLE_OFFSET_COMMIT
                (retried, as Java does).
            AdminTimeoutError: no answer before the deadline.

        """
        deadline = self._deadline(timeout_ms)

        def attempt(coordinator: Coordinator) -> dict[TopicPartition, OffsetAndMetadata]:
            result: OffsetFetchResult = self._wait(
                self._transport.offset_fetch_all(group_id, coordinator.node_id, max(deadline.remaining_ms(), 1)),
                deadline,
                "OffsetFetch",
            )
            self._check("OffsetFetch", group_id, result.error_code)
            out: dict[TopicPartition, OffsetAndMetadata] = {}
            for tp, committed in sorted(result.partitions.items()):
                if committed.error_code == codes.UNSTABLE_OFFSET_COMMIT:
                    raise _Retry(f"OffsetFetch: UNSTABLE_OFFSET_COMMIT for {tp}", rediscover=False)
                if committed.error_code != codes.NONE:
                    raise AdminError(
                        f"OffsetFetch for group {group_id!r} failed for {tp} with "
                        f"{error_name(committed.error_code)} ({committed.error_code})",
                        api="OffsetFetch",
                        code=committed.error_code,
                    )
                if committed.offset >= 0:
                    out[tp] = OffsetAndMetadata(committed.offset, committed.metadata, committed.leader_epoch)
            return out

        return self._retrying(group_id, "OffsetFetch", deadline, attempt)

    def end_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """Log end offsets (ListOffsets LATEST at each leader); partitions without one are absent.

        Raises:
            AdminTimeoutError: the lookup failed or timed out (the message names why).

        """
        wanted = sorted(set(partitions))
        if not wanted:
            return {}
        deadline = self._deadline(timeout_ms)
        return self._retry(
            lambda: self._wait(
                self._transport.list_offsets(wanted, "latest", max(deadline.remaining_ms(), 1)), deadline, "ListOffsets"
            ),
            deadline,
            "ListOffsets",
        )

    def lag(
        self,
        group_id: str,
        description: GroupDescription | None = None,
        timeout_ms: int | None = None,
    ) -> tuple[PartitionLag, ...]:
        """Committed offset, log end offset and lag of the group's partitions.

        The partitions are those the group committed or is assigned (``description`` supplies
        the assignments; the group is described afresh when None).

        Returns:
            One ``PartitionLag`` per partition, sorted by topic and partition.

        Raises:
            What :meth:`describe_group`, :meth:`committed_offsets` and :meth:`end_offsets` raise.

        """
        deadline = self._deadline(timeout_ms)
        if description is None:
            description = self.describe_group(group_id, deadline.remaining_ms() or 1)
        committed = self.committed_offsets(group_id, deadline.remaining_ms() or 1)
        owners: dict[TopicPartition, MemberDescription] = {}
        for member in description.members:
            for tp in member.assignment:
                owners.setdefault(tp, member)
        partitions = sorted(set(committed) | set(owners))
        ends = self.end_offsets(partitions, deadline.remaining_ms() or 1) if partitions else {}
        out: list[PartitionLag] = []
        for tp in partitions:
            om = committed.get(tp)
            end = ends.get(tp)
            owner = owners.get(tp)
            out.append(
                PartitionLag(
                    topic_partition=tp,
                    committed_offset=None if om is None else om.offset,
                    log_end_offset=end,
                    lag=None if om is None or end is None else max(0, end - om.offset),
                    metadata="" if om is None else om.metadata,
                    member_id=None if owner is None else owner.member_id,
                    group_instance_id=None if owner is None else owner.group_instance_id,
                )
            )
        return tuple(out)

    def remove_members_by_instance_id(
        self,
        group_id: str,
        instance_ids: Iterable[str],
        reason: str | None = None,
        timeout_ms: int | None = None,
    ) -> tuple[MemberRemoval, ...]:
        """Remove static members by ``group_instance_id`` (KIP-345).

        Java's ``Admin.removeMembersFromConsumerGroup``: one LeaveGroup v3+ whose identities
        are ``member_id=""`` plus the instance id. The group rebalances without them.

        Args:
            group_id: the group.
            instance_ids: the static members' ``group_instance_id`` values (non-empty).
            reason: the KIP-800 reason (LeaveGroup v5+); default :data:`DEFAULT_REMOVE_REASON`.
            timeout_ms: the deadline (ms).

        Returns:
            One ``MemberRemoval`` per instance id, in the order given (duplicates once).

        Raises:
            ValueError: no instance id, or an empty one.
            UnsupportedVersionError: the coordinator has no LeaveGroup v3+ (Kafka < 2.4).
            GroupNotFoundError: GROUP_ID_NOT_FOUND, or UNKNOWN_MEMBER_ID for the whole request
                (Kafka 4's answer for a group it does not know).
            AdminError: another whole-request error.
            AdminTimeoutError: no answer before the deadline.

        """
        ids = list(dict.fromkeys(instance_ids))
        if not ids or any(not i for i in ids):
            raise ValueError("at least one non-empty group_instance_id is required")
        deadline = self._deadline(timeout_ms)
        why = reason if reason else DEFAULT_REMOVE_REASON

        def attempt(coordinator: Coordinator) -> tuple[MemberRemoval, ...]:
            result = self._wait(
                self._transport.leave_group_members(
                    group_id, ids, why, coordinator.node_id, max(deadline.remaining_ms(), 1)
                ),
                deadline,
                "LeaveGroup",
            )
            if result.error_code == codes.UNSUPPORTED_VERSION:
                raise UnsupportedVersionError(
                    f"the coordinator of group {group_id!r} cannot remove members by group_instance_id: "
                    "LeaveGroup v3+ (Kafka 2.4+, KIP-345) is needed",
                    api="LeaveGroup",
                    code=codes.UNSUPPORTED_VERSION,
                )
            if result.error_code == codes.UNKNOWN_MEMBER_ID:
                raise GroupNotFoundError(
                    f"LeaveGroup for group {group_id!r} failed with UNKNOWN_MEMBER_ID ({result.error_code}) "
                    "for the whole request: the group does not exist",
                    api="LeaveGroup",
                    code=codes.UNKNOWN_MEMBER_ID,
                )
            self._check("LeaveGroup", group_id, result.error_code)
            answered: Mapping[str | None, Any] = {m.group_instance_id: m for m in result.members}
            out: list[MemberRemoval] = []
            for instance_id in ids:
                member = answered.get(instance_id)
                if member is None:
                    raise AdminError(
                        f"LeaveGroup for group {group_id!r} answered nothing for instance {instance_id!r}",
                        api="LeaveGroup",
                    )
                out.append(MemberRemoval(instance_id, member.member_id, member.error_code))
            return tuple(out)

        return self._retrying(group_id, "LeaveGroup", deadline, attempt)

    # ------------------------------------------------------------------ groups and admin commits
    def list_groups(self, timeout_ms: int | None = None) -> tuple[GroupListing, ...]:
        """Every consumer group of the cluster, sorted by group id (Java ``Admin.listConsumerGroups``).

        ListGroups at every broker (each one lists the groups it coordinates). As Java's admin,
        only groups of protocol type "consumer" or "" (offsets committed without group
        membership) are kept: not Kafka Connect's, nor share groups. COORDINATOR_LOAD_IN_PROGRESS
        and COORDINATOR_NOT_AVAILABLE are retried, as Java does.

        Raises:
            UnsupportedVersionError: a broker cannot answer ListGroups.
            AdminError: another error (CLUSTER_AUTHORIZATION_FAILED, ...).
            AdminTimeoutError: no complete answer before the deadline.

        """
        deadline = self._deadline(timeout_ms)

        def attempt() -> tuple[GroupListing, ...]:
            code, groups = self._wait(
                self._transport.list_groups(max(deadline.remaining_ms(), 1)), deadline, "ListGroups"
            )
            if code in (codes.COORDINATOR_LOAD_IN_PROGRESS, codes.COORDINATOR_NOT_AVAILABLE):
                raise _Retry(f"ListGroups: {error_name(code)}", rediscover=False)
            if code != codes.NONE:
                kind = UnsupportedVersionError if code == codes.UNSUPPORTED_VERSION else AdminError
                raise kind(f"ListGroups failed with {error_name(code)} ({code})", api="ListGroups", code=code)
            unique: dict[str, GroupListing] = {}
            for listed in groups:
                if listed.protocol_type in (_CONSUMER_PROTOCOL_TYPE, ""):
                    unique.setdefault(listed.group_id, GroupListing(
                        group_id=listed.group_id,
                        protocol_type=listed.protocol_type,
                        state=listed.group_state or None,
                        group_type=listed.group_type or None,
                    ))
            return tuple(unique[group_id] for group_id in sorted(unique))

        return self._retry(attempt, deadline, "ListGroups")

    def delete_groups(self, group_ids: Iterable[str], timeout_ms: int | None = None) -> tuple[GroupDeletion, ...]:
        """Delete groups and their committed offsets (DeleteGroups; Java ``Admin.deleteConsumerGroups``).

        The coordinator deletes only a group without members: NON_EMPTY_GROUP (68) otherwise,
        GROUP_ID_NOT_FOUND (69) for a group it does not know. Those are results, not errors (the
        caller decides). COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE and
        NOT_COORDINATOR are retried, as Java's ``DeleteConsumerGroupsHandler`` does.

        Returns:
            One ``GroupDeletion`` per group id, in the order given (duplicates once).

        Raises:
            ValueError: no group id, or an empty one.
            UnsupportedVersionError: the coordinator does not offer DeleteGroups.
            AdminError: FindCoordinator failed.
            AdminTimeoutError: no answer before the deadline.

        """
        ids = list(dict.fromkeys(group_ids))
        if not ids or any(not g for g in ids):
            raise ValueError("at least one non-empty group id is required")
        deadline = self._deadline(timeout_ms)

        def deleting(group_id: str) -> Callable[[Coordinator], GroupDeletion]:
            def attempt(coordinator: Coordinator) -> GroupDeletion:
                answered = self._wait(
                    self._transport.delete_groups([group_id], coordinator.node_id, max(deadline.remaining_ms(), 1)),
                    deadline,
                    "DeleteGroups",
                )
                code = answered.get(group_id)
                if code is None:
                    raise AdminError(f"DeleteGroups answered nothing for group {group_id!r}", api="DeleteGroups")
                if code in _RETRIABLE:
                    raise _Retry(f"DeleteGroups: {error_name(code)}")
                if code == codes.UNSUPPORTED_VERSION:
                    raise UnsupportedVersionError(
                        f"the coordinator of group {group_id!r} does not offer DeleteGroups",
                        api="DeleteGroups",
                        code=code,
                    )
                return GroupDeletion(group_id, code)

            return attempt

        return tuple(self._retrying(g, "DeleteGroups", deadline, deleting(g)) for g in ids)

    def alter_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, int]:
        """Commit offsets for a group as an admin (Java ``Admin.alterConsumerGroupOffsets``).

        One OffsetCommit with generation -1 and member id "" at the coordinator. Kafka accepts
        it only while the group has no members (UNKNOWN_MEMBER_ID for each partition
        otherwise); a group it does not know gets these as its first commits.
        COORDINATOR_LOAD_IN_PROGRESS, REBALANCE_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE and
        NOT_COORDINATOR are retried, as Java's ``AlterConsumerGroupOffsetsHandler`` does;
        other codes are results.

        Returns:
            Each partition's error code (0: committed), sorted by partition.

        Raises:
            UnsupportedVersionError: the coordinator cannot take the commit.
            AdminError: FindCoordinator failed, or the answer left a partition out.
            AdminTimeoutError: no answer before the deadline.

        """
        wanted = {
            tp: om if isinstance(om, OffsetAndMetadata) else OffsetAndMetadata(om) for tp, om in sorted(offsets.items())
        }
        if not wanted:
            return {}
        deadline = self._deadline(timeout_ms)

        def attempt(coordinator: Coordinator) -> dict[TopicPartition, int]:
            answered = self._wait(
                self._transport.alter_offsets(group_id, wanted, coordinator.node_id, max(deadline.remaining_ms(), 1)),
                deadline,
                "OffsetCommit",
            )
            seen = set(answered.values())
            if seen & {codes.COORDINATOR_NOT_AVAILABLE, codes.NOT_COORDINATOR}:
                raise _Retry(f"OffsetCommit: {', '.join(sorted(error_name(c) for c in seen if c))}")
            if seen & {codes.COORDINATOR_LOAD_IN_PROGRESS, codes.REBALANCE_IN_PROGRESS}:
                raise _Retry(f"OffsetCommit: {', '.join(sorted(error_name(c) for c in seen if c))}", rediscover=False)
            if codes.UNSUPPORTED_VERSION in seen:
                raise UnsupportedVersionError(
                    f"the coordinator of group {group_id!r} cannot take an admin OffsetCommit",
                    api="OffsetCommit",
                    code=codes.UNSUPPORTED_VERSION,
                )
            missing = [str(tp) for tp in wanted if tp not in answered]
            if missing:
                raise AdminError(
                    f"OffsetCommit for group {group_id!r} answered nothing for {', '.join(missing)}", api="OffsetCommit"
                )
            return {tp: answered[tp] for tp in wanted}

        return self._retrying(group_id, "OffsetCommit", deadline, attempt)

    # ------------------------------------------------------------------ offset resets
    def beginning_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """Log start offsets (ListOffsets EARLIEST at each leader); partitions without one are absent.

        Raises:
            AdminTimeoutError: the lookup failed or timed out (the message names why).

        """
        wanted = sorted(set(partitions))
        if not wanted:
            return {}
        deadline = self._deadline(timeout_ms)
        return self._retry(
            lambda: self._wait(
                self._transport.list_offsets(wanted, "earliest", max(deadline.remaining_ms(), 1)),
                deadline,
                "ListOffsets",
            ),
            deadline,
            "ListOffsets",
        )

    def plan_offset_reset(
        self,
        group_id: str,
        target: ResetTarget,
        topics: Iterable[str | TopicPartition] | None = None,
        timeout_ms: int | None = None,
    ) -> OffsetResetPlan:
        """What an offset reset would commit, planned as ``kafka-consumer-groups.sh --reset-offsets`` does.

        Kafka's ``ConsumerGroupCommand``: the group must be inactive (state Empty, or Dead: a
        group the coordinator does not know yet); "earliest" and "latest" are the log start and
        end offsets (ListOffsets EARLIEST, LATEST); "timestamp" is ListOffsets by time, and the
        log end offset for a partition with no record that late (Kafka's tool: "Falling back to
        latest known offset"); "offset" and "shift_by" are clamped to the log start and end
        offsets (``checkOffsetsRange``), and "shift_by" needs a committed offset. Nothing is
        committed: pass :meth:`OffsetResetPlan.offsets` to :meth:`alter_offsets` for that.

        Args:
            group_id: the group.
            target: where to move each partition (:class:`ResetTarget`).
            topics: the partitions: a topic name (all its partitions) or a ``TopicPartition``
                each; None: every partition the group has committed offsets for
                (``--all-topics``).
            timeout_ms: the deadline (ms).

        Raises:
            ValueError: an empty ``topics``.
            GroupNotEmptyError: the group is neither Empty nor Dead.
            AdminError: an unknown topic or partition, no committed offset to shift (or none at
                all with ``topics=None``), a log offset that could not be looked up; what
                :meth:`describe_group` and :meth:`committed_offsets` raise.
            AdminTimeoutError: no answer before the deadline.

        """
        scope = None if topics is None else list(topics)
        if scope is not None and not scope:
            raise ValueError("no topic or partition to reset")
        deadline = self._deadline(timeout_ms)
        try:
            state = self.describe_group(group_id, _left(deadline)).state
        except GroupNotFoundError:
            state = "Dead"  # Kafka 4's answer for a group it does not know: GROUP_ID_NOT_FOUND
        if state not in INACTIVE_STATES:
            raise GroupNotEmptyError(
                f"Assignments can only be reset if the group '{group_id}' is inactive, but the current state is "
                f"{state}.",
                api="DescribeGroups",
            )
        try:
            committed = self.committed_offsets(group_id, _left(deadline))
        except GroupNotFoundError:
            committed = {}
        partitions = self._reset_scope(group_id, scope, committed, deadline)
        current = {tp: committed[tp].offset for tp in partitions if tp in committed}
        if target.kind == "shift_by":
            unshiftable = [str(tp) for tp in partitions if tp not in current]
            if unshiftable:
                raise AdminError(
                    f"Cannot shift offset for partition {', '.join(unshiftable)} of group {group_id!r} since there "
                    "is no current committed offset"
                )
        starts: Mapping[TopicPartition, int] = {}
        ends: Mapping[TopicPartition, int] = {}
        found: Mapping[TopicPartition, tuple[int, int]] = {}
        if target.kind in ("earliest", "offset", "shift_by"):
            starts = _complete(self.beginning_offsets(partitions, _left(deadline)), partitions, "start")
        if target.kind == "timestamp":
            stamps = {tp: target.value for tp in partitions}
            found = self._retry(
                lambda: self._wait(
                    self._transport.offsets_for_times(stamps, max(deadline.remaining_ms(), 1)), deadline, "ListOffsets"
                ),
                deadline,
                "ListOffsets",
            )
        if target.kind in ("latest", "offset", "shift_by") or (
            target.kind == "timestamp" and any(tp not in found for tp in partitions)
        ):
            ends = _complete(self.end_offsets(partitions, _left(deadline)), partitions, "end")
        rows = []
        for tp in partitions:
            note = ""
            if target.kind == "earliest":
                new = starts[tp]
            elif target.kind == "latest":
                new = ends[tp]
            elif target.kind == "timestamp":
                hit = found.get(tp)
                if hit is None:
                    new, note = ends[tp], "no record at or after the time: the log end offset"
                else:
                    new = hit[0]
            else:
                asked = target.value if target.kind == "offset" else current[tp] + target.value
                new, note = _clamp(asked, starts[tp], ends[tp])
            rows.append(PlannedOffset(tp, current.get(tp), new, note))
        return OffsetResetPlan(group_id, state, target, tuple(rows))

    def _reset_scope(
        self,
        group_id: str,
        scope: list[str | TopicPartition] | None,
        committed: Mapping[TopicPartition, OffsetAndMetadata],
        deadline: Deadline,
    ) -> list[TopicPartition]:
        """The partitions an offset reset covers: ``scope`` resolved against cluster metadata."""
        if scope is None:
            if not committed:
                raise AdminError(f"group {group_id!r} has no committed offsets: name the topics to reset")
            return sorted(committed)
        names = sorted({item if isinstance(item, str) else item.topic for item in scope})
        known = self._retry(
            lambda: self._wait(
                self._transport.describe_topics(names, max(deadline.remaining_ms(), 1)), deadline, "Metadata"
            ),
            deadline,
            "Metadata",
        )
        unknown = [name for name in names if not known.get(name)]
        if unknown:
            raise AdminError(
                f"unknown topic{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}",
                api="Metadata",
                code=codes.UNKNOWN_TOPIC_OR_PARTITION,
            )
        out: set[TopicPartition] = set()
        for item in scope:
            if isinstance(item, str):
                out.update(TopicPartition(item, info.partition) for info in known[item])
                continue
            numbers = sorted(info.partition for info in known[item.topic])
            if item.partition not in numbers:
                raise AdminError(
                    f"topic {item.topic!r} has no partition {item.partition} (its partitions: "
                    f"{', '.join(map(str, numbers))})",
                    api="Metadata",
                    code=codes.UNKNOWN_TOPIC_OR_PARTITION,
                )
            out.add(item)
        return sorted(out)


def _left(deadline: Deadline) -> int:
    """What is left of ``deadline`` for the next call (at least 1 ms: it then times out at once)."""
    return deadline.remaining_ms() or 1


def _complete(
    found: Mapping[TopicPartition, int], partitions: Iterable[TopicPartition], which: str
) -> Mapping[TopicPartition, int]:
    """``found``, or an AdminError naming the partitions whose log ``which`` offset is unknown."""
    missing = [str(tp) for tp in partitions if tp not in found]
    if missing:
        raise AdminError(
            f"could not look up the log {which} offset of {', '.join(missing)} (no leader?)", api="ListOffsets"
        )
    return found


def _clamp(asked: int, start: int, end: int) -> tuple[int, str]:
    """``asked`` within ``[start, end]``, and a note when it was not (Kafka's ``checkOffsetsRange``)."""
    if asked > end:
        return end, f"{asked} is past the log end offset: set to {end}"
    if asked < start:
        return start, f"{asked} is before the log start offset: set to {start}"
    return asked, ""


def _describe(described: DescribedGroup, coordinator: Coordinator) -> GroupDescription:
    if described.protocol_type not in (_CONSUMER_PROTOCOL_TYPE, ""):
        raise AdminError(
            f"group {described.group_id!r} is not a consumer group (protocol type {described.protocol_type!r})",
            api="DescribeGroups",
        )
    return GroupDescription(
        group_id=described.group_id,
        state=described.group_state,
        protocol_type=described.protocol_type,
        protocol=described.protocol_data,
        generation_id=None,
        coordinator=coordinator,
        members=tuple(_member(m) for m in described.members),
    )


def _describe_consumer_group(described: DescribedConsumerGroup, coordinator: Coordinator) -> GroupDescription:
    return GroupDescription(
        group_id=described.group_id,
        state=described.group_state,
        protocol_type=_CONSUMER_PROTOCOL_TYPE,
        protocol=described.assignor_name,
        generation_id=None,
        coordinator=coordinator,
        members=tuple(_consumer_member(m) for m in described.members),
        group_type="consumer",
        group_epoch=described.group_epoch,
        assignment_epoch=described.assignment_epoch,
    )


_MEMBER_PROTOCOLS: Final = {MEMBER_TYPE_CLASSIC: "classic", MEMBER_TYPE_CONSUMER: "consumer"}


def _partitions(topics: tuple[NamedTopicPartitions, ...]) -> tuple[TopicPartition, ...]:
    return tuple(sorted(TopicPartition(t.topic_name, p) for t in topics for p in t.partitions))


def _consumer_member(m: DescribedConsumerMember) -> MemberDescription:
    return MemberDescription(
        member_id=m.member_id,
        group_instance_id=m.instance_id,
        client_id=m.client_id,
        client_host=m.client_host,
        assignment=_partitions(m.assignment),
        subscribed_topics=tuple(sorted(m.subscribed_topic_names)),
        member_epoch=m.member_epoch,
        target_assignment=_partitions(m.target_assignment),
        member_protocol=_MEMBER_PROTOCOLS.get(m.member_type),
        rack_id=m.rack_id,
        subscribed_topic_regex=m.subscribed_topic_regex,
    )


def _member(m: DescribedMember) -> MemberDescription:
    problems: list[str] = []
    assignment: tuple[TopicPartition, ...] = ()
    topics: tuple[str, ...] | None = None
    try:
        assignment = tuple(sorted(decode_assignment(m.member_assignment).partitions))
    except MalformedMetadata as exc:
        problems.append(f"assignment: {exc}")
    if m.member_metadata:
        try:
            topics = tuple(sorted(decode_subscription(m.member_metadata).topics))
        except MalformedMetadata as exc:
            problems.append(f"subscription: {exc}")
    return MemberDescription(
        member_id=m.member_id,
        group_instance_id=m.group_instance_id,
        client_id=m.client_id,
        client_host=m.client_host,
        assignment=assignment,
        subscribed_topics=topics,
        decode_error="; ".join(problems) or None,
    )
