"""``GroupAdmin``: the admin's calls over the ``AdminTransport``, with deadlines, retries and typed errors.

The rules are :mod:`kgroup.admin`'s. The coordinator of a group is found with FindCoordinator,
remembered, and found again when an answer says it moved: each group's discovery is kept in the
one pure coordinator unit the membership machines and ``StandaloneGroup`` keep
(``kgroup.membership.coordinator.CoordinatorState``), on the admin's clock, its lookups backing
off ``retry_backoff_ms`` after a failure.
"""

from __future__ import annotations

import concurrent.futures
import itertools
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Final, TypeVar

from kgroup import _error_codes as codes
from kgroup._clock import Clock, MonotonicClock
from kgroup._error_codes import error_name
from kgroup._io.transport import AdminTransport, OffsetFetchResult
from kgroup._retry import Deadline, retry_until
from kgroup.admin._configs import GroupConfigCalls
from kgroup.admin._describe import (
    CONSUMER_PROTOCOL_TYPE,
    SHARE_PROTOCOL_TYPE,
    describe_classic_group,
    describe_consumer_group,
)
from kgroup.admin._errors import (
    AdminError,
    AdminTimeoutError,
    GroupNotEmptyError,
    GroupNotFoundError,
    RetryAttempt,
    UnsupportedVersionError,
    left_ms,
)
from kgroup.admin._resets import (
    INACTIVE_STATES,
    OffsetResetPlan,
    ResetTarget,
    complete,
    plan_rows,
    reset_partitions,
)
from kgroup.admin._share import ShareGroupCalls
from kgroup.admin._values import (
    Coordinator,
    GroupDeletion,
    GroupDescription,
    GroupListing,
    MemberDescription,
    MemberRemoval,
    PartitionLag,
)
from kgroup.errors import KGroupError
from kgroup.membership.commands import SendFindCoordinator
from kgroup.membership.coordinator import CoordinatorState
from kgroup.membership.events import FindCoordinatorResponded
from kgroup.membership.timers import RetryTimer
from kgroup.types import OffsetAndMetadata, TopicPartition

__all__ = ["DEFAULT_REMOVE_REASON", "GroupAdmin"]

T = TypeVar("T")

#: Java ``KafkaAdminClient.DEFAULT_LEAVE_GROUP_REASON`` (KIP-800)
DEFAULT_REMOVE_REASON: Final = "member was removed by an admin"

#: a coordinator moving or loading: find it again and retry (Java ``AdminApiDriver``)
_RETRIABLE: Final = frozenset(
    {codes.COORDINATOR_LOAD_IN_PROGRESS, codes.COORDINATOR_NOT_AVAILABLE, codes.NOT_COORDINATOR}
)

#: the protocol types ``list_groups`` keeps: consumer groups, simple (commit-only) groups, share groups
_LISTED_PROTOCOL_TYPES: Final = frozenset({CONSUMER_PROTOCOL_TYPE, "", SHARE_PROTOCOL_TYPE})

#: a group's coordinator before its first lookup: unknown, FindCoordinator due at once
_UNKNOWN: Final = CoordinatorState(lookup=RetryTimer(float("-inf")))


class GroupAdmin(ShareGroupCalls, GroupConfigCalls):
    """Group administration over an ``AdminTransport`` (the rules: :mod:`kgroup.admin`).

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
        #: each group's coordinator discovery (node id, FindCoordinator retry timer)
        self._discovery: dict[str, CoordinatorState] = {}
        #: the address FindCoordinator answered for each group whose coordinator is known
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
        """The future's value; its exception as ``RetryAttempt`` (a lost connection is retriable)."""
        try:
            return future.result(deadline.remaining_ms() / 1000 + 2.0)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise RetryAttempt(f"{what}: no answer before the deadline") from None
        except KGroupError:
            raise
        except Exception as exc:
            raise RetryAttempt(f"{what}: {type(exc).__name__}: {exc}") from exc

    def _retry(self, attempt: Callable[[], T], deadline: Deadline, failed: str) -> T:
        """Run ``attempt()`` until it returns or raises an AdminError; ``RetryAttempt`` is retried.

        Waits ``retry_backoff_ms`` on the admin's clock between attempts; ``AdminTimeoutError``
        (naming ``failed`` and the last failure) once the deadline would pass.
        """
        try:
            return retry_until(attempt, deadline, retry_on=RetryAttempt, backoff_s=lambda _: self._backoff_s)
        except RetryAttempt as last:
            raise AdminTimeoutError(f"{failed} did not complete in time; last: {last}") from None

    def _ask(self, call: Callable[[int], concurrent.futures.Future[T]], deadline: Deadline, what: str) -> T:
        """``call(timeout_ms)``'s answer, any broker's (no coordinator), retried until the deadline."""
        return self._retry(lambda: self._wait(call(max(deadline.remaining_ms(), 1)), deadline, what), deadline, what)

    def _retrying(self, group_id: str, what: str, deadline: Deadline, attempt: Callable[[Coordinator], T]) -> T:
        """Run ``attempt(coordinator)`` until it returns, raises an AdminError, or time runs out."""

        def on_coordinator() -> T:
            try:
                return attempt(self._coordinator(group_id, deadline))
            except RetryAttempt as retry:
                if retry.rediscover:
                    self._lost(group_id)
                raise

        return self._retry(on_coordinator, deadline, f"{what} for group {group_id!r}")

    def _lost(self, group_id: str) -> None:
        """The coordinator of ``group_id`` moved or failed: look it up again (from now)."""
        state = self._discovery.get(group_id, _UNKNOWN)
        self._discovery[group_id] = state.lost(self._clock.monotonic())
        self._coordinators.pop(group_id, None)

    def _coordinator(self, group_id: str, deadline: Deadline) -> Coordinator:
        """The coordinator of ``group_id``: remembered, else looked up (and remembered)."""
        state = self._discovery.get(group_id, _UNKNOWN)
        known = self._coordinators.get(group_id)
        if state.node_id is not None and known is not None:
            return known
        now = self._clock.monotonic()
        if not state.due(now):
            raise RetryAttempt("FindCoordinator: backing off after a failed lookup")
        try:
            known = self._find_coordinator(group_id, deadline)
        except RetryAttempt:
            self._discovery[group_id] = state.lookup_failed(now, lambda _: self._backoff_s)
            raise
        self._discovery[group_id] = state.found(known.node_id)
        self._coordinators[group_id] = known
        return known

    def _find_coordinator(self, group_id: str, deadline: Deadline) -> Coordinator:
        """One FindCoordinator for ``group_id``: the coordinator, ``RetryAttempt`` (no answer) or AdminError."""
        command = SendFindCoordinator(
            request_id=next(self._request_ids), key=group_id, timeout_ms=max(deadline.remaining_ms(), 1)
        )
        event = self._wait(self._transport.send(command, group_id), deadline, "FindCoordinator")
        if not isinstance(event, FindCoordinatorResponded):
            raise RetryAttempt(f"FindCoordinator: {getattr(event, 'reason', event)}")
        if event.error_code in _RETRIABLE:
            raise RetryAttempt(f"FindCoordinator: {error_name(event.error_code)}")
        if event.error_code != codes.NONE:
            raise AdminError(
                f"FindCoordinator for group {group_id!r} failed with {error_name(event.error_code)} "
                f"({event.error_code})",
                api="FindCoordinator",
                code=event.error_code,
            )
        return Coordinator(event.node_id, event.host, event.port)

    @staticmethod
    def _check(api: str, group_id: str, code: int) -> None:
        """Raise for a non-zero group-level ``code``: ``RetryAttempt`` for coordinator moves."""
        if code == codes.NONE:
            return
        if code in _RETRIABLE:
            raise RetryAttempt(f"{api}: {error_name(code)}")
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
            return describe_consumer_group(described, coordinator)

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
            return describe_classic_group(described, coordinator)

        if consumer_group is not None:
            # an empty consumer group, or a broker that answers ConsumerGroupDescribe for every
            # group (the embedded Tansu): a classic group's members come from DescribeGroups
            try:
                classic = self._retrying(group_id, "DescribeGroups", deadline, attempt)
            except KGroupError:
                return consumer_group
            return classic if classic.members else consumer_group
        try:
            classic = self._retrying(group_id, "DescribeGroups", deadline, attempt)
        except GroupNotFoundError:
            share = self._share_described(group_id, deadline)
            if share is None:
                raise
            return share
        if classic.state == "Dead" and not classic.members:
            # not a classic group: a share group (KIP-932), or none
            return self._share_described(group_id, deadline) or classic
        return classic

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
                    raise RetryAttempt(f"OffsetFetch: UNSTABLE_OFFSET_COMMIT for {tp}", rediscover=False)
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
        return self._log_offsets(partitions, "latest", timeout_ms)

    def _log_offsets(
        self, partitions: Iterable[TopicPartition], spec: str, timeout_ms: int | None
    ) -> dict[TopicPartition, int]:
        """ListOffsets ``spec`` ("earliest", "latest") at each leader, retried until the deadline."""
        wanted = sorted(set(partitions))
        if not wanted:
            return {}
        deadline = self._deadline(timeout_ms)
        return self._ask(lambda ms: self._transport.list_offsets(wanted, spec, ms), deadline, "ListOffsets")

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
        if description.group_type == SHARE_PROTOCOL_TYPE:
            return self._share_lag(group_id, description, deadline)
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
        """Every consumer group and share group of the cluster, sorted by group id (Java ``Admin.listGroups``).

        ListGroups at every broker (each one lists the groups it coordinates). Kept: groups of
        protocol type "consumer" or "" (offsets committed without group membership), as Java's
        ``Admin.listConsumerGroups``, and share groups (KIP-932: protocol type and
        ``group_type`` "share", as Java's ``Admin.listShareGroups`` finds them); not Kafka
        Connect's or other protocols' groups. COORDINATOR_LOAD_IN_PROGRESS and
        COORDINATOR_NOT_AVAILABLE are retried, as Java does.

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
                raise RetryAttempt(f"ListGroups: {error_name(code)}", rediscover=False)
            if code != codes.NONE:
                kind = UnsupportedVersionError if code == codes.UNSUPPORTED_VERSION else AdminError
                raise kind(f"ListGroups failed with {error_name(code)} ({code})", api="ListGroups", code=code)
            unique: dict[str, GroupListing] = {}
            for listed in groups:
                if listed.protocol_type in _LISTED_PROTOCOL_TYPES or listed.group_type == SHARE_PROTOCOL_TYPE:
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
                    raise RetryAttempt(f"DeleteGroups: {error_name(code)}")
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
                raise RetryAttempt(f"OffsetCommit: {', '.join(sorted(error_name(c) for c in seen if c))}")
            if seen & {codes.COORDINATOR_LOAD_IN_PROGRESS, codes.REBALANCE_IN_PROGRESS}:
                failed = ", ".join(sorted(error_name(c) for c in seen if c))
                raise RetryAttempt(f"OffsetCommit: {failed}", rediscover=False)
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
        return self._log_offsets(partitions, "earliest", timeout_ms)

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
        group_type = "classic"
        try:
            description = self.describe_group(group_id, left_ms(deadline))
            state, group_type = description.state, description.group_type
        except GroupNotFoundError:
            state = "Dead"  # Kafka 4's answer for a group it does not know: GROUP_ID_NOT_FOUND
        if state not in INACTIVE_STATES:
            raise GroupNotEmptyError(
                f"Assignments can only be reset if the group '{group_id}' is inactive, but the current state is "
                f"{state}.",
                api="DescribeGroups",
            )
        committed: Mapping[TopicPartition, OffsetAndMetadata]
        if group_type == SHARE_PROTOCOL_TYPE:
            share_starts = self.share_group_offsets(group_id, left_ms(deadline))
            committed = {tp: OffsetAndMetadata(found.start_offset) for tp, found in share_starts.items()}
        else:
            try:
                committed = self.committed_offsets(group_id, left_ms(deadline))
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
        found: dict[TopicPartition, tuple[int, int]] = {}
        if target.kind in ("earliest", "offset", "shift_by"):
            starts = complete(self.beginning_offsets(partitions, left_ms(deadline)), partitions, "start")
        if target.kind == "timestamp":
            stamps = {tp: target.value for tp in partitions}
            found = self._ask(lambda ms: self._transport.offsets_for_times(stamps, ms), deadline, "ListOffsets")
        if target.kind in ("latest", "offset", "shift_by") or (
            target.kind == "timestamp" and any(tp not in found for tp in partitions)
        ):
            ends = complete(self.end_offsets(partitions, left_ms(deadline)), partitions, "end")
        rows = plan_rows(target, partitions, current, starts, ends, found)
        return OffsetResetPlan(group_id, state, target, rows, group_type)

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
        known = self._ask(lambda ms: self._transport.describe_topics(names, ms), deadline, "Metadata")
        return reset_partitions(scope, known)
