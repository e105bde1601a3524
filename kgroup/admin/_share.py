"""``GroupAdmin``'s calls for share groups (KIP-932): describe, start offsets, lag, alter and delete.

``GroupAdmin`` inherits them (``kgroup.admin._client``); they use its deadlines, retries and
coordinator lookup. A share group commits no offsets: its coordinator keeps each partition's
share-partition start offset, which DescribeShareGroupOffsets, AlterShareGroupOffsets and
DeleteShareGroupOffsets read and change (Java ``Admin.listShareGroupOffsets``,
``alterShareGroupOffsets``, ``deleteShareGroupOffsets``; ``docs/share-groups.md``, "Operations").
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

from kgroup import _error_codes as codes
from kgroup._error_codes import error_name
from kgroup._retry import Deadline
from kgroup.admin._describe import describe_share_group
from kgroup.admin._errors import (
    AdminError,
    GroupNotEmptyError,
    GroupNotFoundError,
    RetryAttempt,
    UnsupportedVersionError,
    left_ms,
)
from kgroup.admin._values import Coordinator, GroupDescription, MemberDescription, PartitionLag
from kgroup.errors import HINTS, Api, Disposition, classify
from kgroup.protocol.share_group_admin import DescribedShareGroup, SharePartitionOffset
from kgroup.types import TopicPartition

if TYPE_CHECKING:
    from kgroup._io.transport import AdminTransport

__all__ = ["ShareGroupCalls"]

T = TypeVar("T")

#: the admin error a share-group admin code raises (else ``AdminError``)
_SHARE_ERRORS: Final[Mapping[int, type[AdminError]]] = {
    codes.GROUP_ID_NOT_FOUND: GroupNotFoundError,
    codes.NON_EMPTY_GROUP: GroupNotEmptyError,
    codes.UNSUPPORTED_VERSION: UnsupportedVersionError,
}


def _check(api: Api, group_id: str, code: int, message: str | None) -> None:
    """Raise for a non-zero share-group admin ``code`` as ``kgroup.errors`` classifies it."""
    disposition = classify(api, code)
    if disposition is Disposition.OK:
        return
    if disposition is Disposition.RETRY:
        raise RetryAttempt(f"{api.value}: {error_name(code)}", rediscover=False)
    if disposition is Disposition.REDISCOVER:
        raise RetryAttempt(f"{api.value}: {error_name(code)}")
    text = f"{api.value} for share group {group_id!r} failed with {error_name(code)} ({code})"
    hint = HINTS.get((api, code))
    text += "".join(f": {part}" for part in (message, hint) if part)
    kind = _SHARE_ERRORS.get(code, AdminError)
    raise kind(text, api=api.value, code=code)


class _Admin(Protocol):
    """What these calls use of ``GroupAdmin``."""

    _transport: AdminTransport

    def _deadline(self, timeout_ms: int | None) -> Deadline: ...

    def _wait(self, future: concurrent.futures.Future[T], deadline: Deadline, what: str) -> T: ...

    def _retrying(
        self, group_id: str, what: str, deadline: Deadline, attempt: Callable[[Coordinator], T]
    ) -> T: ...

    def end_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]: ...

    def share_group_offsets(
        self, group_id: str, timeout_ms: int | None = None
    ) -> dict[TopicPartition, SharePartitionOffset]: ...

    def _share_described(self, group_id: str, deadline: Deadline) -> GroupDescription | None: ...


class ShareGroupCalls:
    """The share-group calls of ``GroupAdmin`` (a mixin)."""

    def _share_described(self: _Admin, group_id: str, deadline: Deadline) -> GroupDescription | None:
        """ShareGroupDescribe's description of ``group_id``; None: not a share group, or no such API."""

        def attempt(coordinator: Coordinator) -> GroupDescription | None:
            groups: tuple[DescribedShareGroup, ...] = self._wait(
                self._transport.share_group_describe([group_id], coordinator.node_id, left_ms(deadline)),
                deadline,
                "ShareGroupDescribe",
            )
            described = next((g for g in groups if g.group_id == group_id), None)
            if described is None or described.error_code in (codes.GROUP_ID_NOT_FOUND, codes.UNSUPPORTED_VERSION):
                return None
            _check(Api.SHARE_GROUP_DESCRIBE, group_id, described.error_code, described.error_message)
            return describe_share_group(described, coordinator)

        return self._retrying(group_id, "ShareGroupDescribe", deadline, attempt)

    def describe_share_group(self: _Admin, group_id: str, timeout_ms: int | None = None) -> GroupDescription:
        """Describe the share group ``group_id`` (ShareGroupDescribe v1, KIP-932; Java ``Admin.describeShareGroups``).

        The description has ``group_type`` and ``protocol_type`` "share", ``protocol`` the
        broker's share assignor ("simple"), the group and assignment epochs, state "Empty",
        "Stable" or "Dead", and per member its member epoch, client id, host, rack, subscribed
        topics and assignment (topic names as the broker gives them; no ``group_instance_id``:
        share groups have no static members). A group that is not a share group, or none, is
        returned with state "Dead" and no members, as Java's admin does.

        Raises:
            UnsupportedVersionError: the coordinator has no ShareGroupDescribe v1 (Kafka 4.1+).
            AdminError: another group error (GROUP_AUTHORIZATION_FAILED, ...).
            AdminTimeoutError: no answer before the deadline.

        """
        deadline = self._deadline(timeout_ms)

        def attempt(coordinator: Coordinator) -> GroupDescription:
            groups: tuple[DescribedShareGroup, ...] = self._wait(
                self._transport.share_group_describe([group_id], coordinator.node_id, left_ms(deadline)),
                deadline,
                "ShareGroupDescribe",
            )
            described = next((g for g in groups if g.group_id == group_id), None)
            if described is None:
                raise AdminError(f"ShareGroupDescribe answered no entry for group {group_id!r}",
                                 api="ShareGroupDescribe")
            if described.error_code == codes.GROUP_ID_NOT_FOUND:
                described = DescribedShareGroup(error_code=codes.NONE, group_id=group_id, group_state="Dead")
            _check(Api.SHARE_GROUP_DESCRIBE, group_id, described.error_code, described.error_message)
            return describe_share_group(described, coordinator)

        return self._retrying(group_id, "ShareGroupDescribe", deadline, attempt)

    def share_group_offsets(
        self: _Admin, group_id: str, timeout_ms: int | None = None
    ) -> dict[TopicPartition, SharePartitionOffset]:
        """The share group's start offsets (DescribeShareGroupOffsets; Java ``Admin.listShareGroupOffsets``).

        A share group (KIP-932) commits no offsets: per partition its coordinator keeps the
        share-partition start offset, the first offset not yet delivered and acknowledged.
        Partitions without one (start offset -1: never fetched by the group) are absent. From
        Kafka 4.2 (v1, KIP-1226) each entry carries the partition's lag (else -1).

        Returns:
            Each partition's ``SharePartitionOffset``, sorted by partition.

        Raises:
            GroupNotFoundError: GROUP_ID_NOT_FOUND.
            UnsupportedVersionError: the coordinator has no DescribeShareGroupOffsets.
            AdminError: another group error, or a partition's error (TOPIC_AUTHORIZATION_FAILED, ...).
            AdminTimeoutError: no answer before the deadline.

        """
        deadline = self._deadline(timeout_ms)
        api = Api.DESCRIBE_SHARE_GROUP_OFFSETS

        def attempt(coordinator: Coordinator) -> dict[TopicPartition, SharePartitionOffset]:
            answer = self._wait(
                self._transport.describe_share_group_offsets(group_id, coordinator.node_id, left_ms(deadline)),
                deadline,
                api.value,
            )
            _check(api, group_id, answer.error_code, answer.error_message)
            out: dict[TopicPartition, SharePartitionOffset] = {}
            for tp, found in sorted(answer.partitions.items()):
                detail = f"{tp}: {found.error_message or ''}".rstrip(": ")
                _check(api, group_id, found.error_code, detail)
                if found.start_offset >= 0:
                    out[tp] = found
            return out

        return self._retrying(group_id, api.value, deadline, attempt)

    def alter_share_group_offsets(
        self: _Admin, group_id: str, offsets: Mapping[TopicPartition, int], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """Set a share group's start offsets (AlterShareGroupOffsets; Java ``Admin.alterShareGroupOffsets``).

        Kafka takes it only while the group has no members (NON_EMPTY_GROUP otherwise, raised
        as ``GroupNotEmptyError``); the next member to fetch a partition starts delivering at
        its new start offset. A loading coordinator is retried and a moved one found again;
        partition codes (UNKNOWN_TOPIC_OR_PARTITION, ...) are results.

        Args:
            group_id: the share group.
            offsets: each partition's new start offset (at least 0).
            timeout_ms: the deadline (ms).

        Returns:
            Each partition's error code (0: set), sorted by partition.

        Raises:
            ValueError: a negative offset.
            GroupNotEmptyError: the group has members.
            GroupNotFoundError: GROUP_ID_NOT_FOUND.
            UnsupportedVersionError: the coordinator has no AlterShareGroupOffsets (Kafka 4.1+).
            AdminError: another error, or an answer that leaves a partition out.
            AdminTimeoutError: no answer before the deadline.

        """
        wanted = dict(sorted(offsets.items()))
        if any(offset < 0 for offset in wanted.values()):
            raise ValueError("a share group's start offset must be at least 0")
        if not wanted:
            return {}
        deadline = self._deadline(timeout_ms)
        api = Api.ALTER_SHARE_GROUP_OFFSETS

        def attempt(coordinator: Coordinator) -> dict[TopicPartition, int]:
            answer = self._wait(
                self._transport.alter_share_group_offsets(group_id, wanted, coordinator.node_id, left_ms(deadline)),
                deadline,
                api.value,
            )
            _check(api, group_id, answer.error_code, answer.error_message)
            missing = [str(tp) for tp in wanted if tp not in answer.partitions]
            if missing:
                raise AdminError(
                    f"{api.value} for group {group_id!r} answered nothing for {', '.join(missing)}", api=api.value
                )
            return {tp: answer.partitions[tp] for tp in wanted}

        return self._retrying(group_id, api.value, deadline, attempt)

    def delete_share_group_offsets(
        self: _Admin, group_id: str, topics: Iterable[str], timeout_ms: int | None = None
    ) -> dict[str, int]:
        """Delete a share group's start offsets of whole topics (Java ``Admin.deleteShareGroupOffsets``).

        One DeleteShareGroupOffsets (API 92) at the group's coordinator.

        The group must have no members (NON_EMPTY_GROUP: ``GroupNotEmptyError``). A topic's
        code (UNKNOWN_TOPIC_OR_PARTITION, ...) is a result.

        Returns:
            Each topic's error code (0: deleted), in the order given (duplicates once).

        Raises:
            ValueError: no topic, or an empty name.
            GroupNotEmptyError: the group has members.
            GroupNotFoundError: GROUP_ID_NOT_FOUND.
            UnsupportedVersionError: the coordinator has no DeleteShareGroupOffsets (Kafka 4.1+).
            AdminError: another error, or an answer that leaves a topic out.
            AdminTimeoutError: no answer before the deadline.

        """
        names = list(dict.fromkeys(topics))
        if not names or any(not t for t in names):
            raise ValueError("at least one non-empty topic name is required")
        deadline = self._deadline(timeout_ms)
        api = Api.DELETE_SHARE_GROUP_OFFSETS

        def attempt(coordinator: Coordinator) -> dict[str, int]:
            answer = self._wait(
                self._transport.delete_share_group_offsets(group_id, names, coordinator.node_id, left_ms(deadline)),
                deadline,
                api.value,
            )
            _check(api, group_id, answer.error_code, answer.error_message)
            missing = [t for t in names if t not in answer.topics]
            if missing:
                raise AdminError(
                    f"{api.value} for group {group_id!r} answered nothing for {', '.join(missing)}", api=api.value
                )
            return {t: answer.topics[t] for t in names}

        return self._retrying(group_id, api.value, deadline, attempt)

    def _share_lag(
        self: _Admin, group_id: str, description: GroupDescription, deadline: Deadline
    ) -> tuple[PartitionLag, ...]:
        """A share group's partitions: start offset, log end offset, lag (the broker's from v1, else end - start)."""
        starts = {} if description.state == "Dead" else self.share_group_offsets(group_id, left_ms(deadline))
        owners: dict[TopicPartition, list[MemberDescription]] = {}
        for member in description.members:
            for tp in member.assignment:
                owners.setdefault(tp, []).append(member)  # a share partition can be every member's
        partitions = sorted(set(starts) | set(owners))
        ends = self.end_offsets(partitions, left_ms(deadline)) if partitions else {}
        out: list[PartitionLag] = []
        for tp in partitions:
            start = starts.get(tp)
            end = ends.get(tp)
            lag: int | None = None
            if start is not None and start.lag >= 0:
                lag = start.lag
            elif start is not None and end is not None:
                lag = max(0, end - start.start_offset)
            holders = owners.get(tp, [])
            out.append(PartitionLag(
                topic_partition=tp,
                committed_offset=None if start is None else start.start_offset,
                log_end_offset=end,
                lag=lag,
                member_id=",".join(m.member_id for m in holders) or None,
            ))
        return tuple(out)
