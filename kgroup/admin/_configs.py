"""``GroupAdmin``'s calls for a group's configs (KIP-848, KIP-932): describe them, set and delete them.

``GroupAdmin`` inherits them (``kgroup.admin._client``); they use its deadlines and retries. A
group's configs are a config resource of type GROUP (Apache Kafka 3.8+), as a topic's are of
type TOPIC: DescribeConfigs reads them and IncrementalAlterConfigs changes them, at any broker
(not the group's coordinator: Java's ``KafkaAdminClient.describeConfigs`` and
``incrementalAlterConfigs`` send every resource but a BROKER or BROKER_LOGGER one to the least
loaded broker). The configs are listed in the Kafka documentation's "Group Configs" section
(``consumer.session.timeout.ms``, ``consumer.heartbeat.interval.ms``,
``share.auto.offset.reset``, ``share.record.lock.duration.ms``, ``share.delivery.count.limit``,
``share.isolation.level``, ...); ``docs/share-groups.md``, "Group configs".
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

from kgroup import _error_codes as codes
from kgroup._error_codes import error_name
from kgroup._retry import Deadline
from kgroup.admin._errors import (
    AdminError,
    InvalidConfigError,
    RetryAttempt,
    UnsupportedVersionError,
    left_ms,
)
from kgroup.admin._values import GroupConfigEntry
from kgroup.errors import GROUP_CONFIGS_NOT_SUPPORTED, HINTS, Api, Disposition, classify
from kgroup.protocol.group_configs import OP_DELETE, OP_SET, ConfigChange, config_source_name

if TYPE_CHECKING:
    from kgroup._io.transport import AdminTransport

__all__ = ["GroupConfigCalls"]

T = TypeVar("T")

#: the admin error a group-config code raises (else ``AdminError``)
_CONFIG_ERRORS: Final[Mapping[int, type[AdminError]]] = {
    codes.INVALID_CONFIG: InvalidConfigError,
    codes.INVALID_REQUEST: UnsupportedVersionError,
    codes.UNSUPPORTED_VERSION: UnsupportedVersionError,
}

_NO_CONFIGS: Final[Mapping[str, str | int]] = MappingProxyType({})


def _check(api: Api, group_id: str, code: int, message: str | None) -> None:
    """Raise for a non-zero group-config ``code`` as ``kgroup.errors`` classifies it, with the broker's message."""
    disposition = classify(api, code)
    if disposition is Disposition.OK:
        return
    if disposition in (Disposition.RETRY, Disposition.REDISCOVER):
        raise RetryAttempt(f"{api.value}: {error_name(code)}" + (f": {message}" if message else ""), rediscover=False)
    text = f"{api.value} of the configs of group {group_id!r} failed with {error_name(code)} ({code})"
    text += "".join(f": {part}" for part in (message, HINTS.get((api, code))) if part)
    raise _CONFIG_ERRORS.get(code, AdminError)(text, api=api.value, code=code)


def _value_text(name: str, value: object) -> str:
    """A config value as Kafka takes it: a string, an int's digits, a bool as "true"/"false"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int)):
        return str(value)
    raise TypeError(f"the value of {name!r} must be a str or an int, not {type(value).__name__}")


def config_changes(set_: Mapping[str, str | int], delete: Iterable[str]) -> tuple[ConfigChange, ...]:
    """The IncrementalAlterConfigs operations: each SET (in ``set_``'s order), then each DELETE (duplicates once).

    Raises:
        ValueError: no change, an empty name, or a name both set and deleted.
        TypeError: ``delete`` is a single string, or a value is neither a str nor an int.

    """
    if isinstance(delete, str):
        raise TypeError("delete must be an iterable of config names, not a str")
    deleted = list(dict.fromkeys(delete))
    if not set_ and not deleted:
        raise ValueError("no config to set or delete")
    if any(not isinstance(name, str) or not name.strip() for name in [*set_, *deleted]):
        raise ValueError("a config name must be a non-empty string")
    both = sorted(name for name in deleted if name in set_)
    if both:
        raise ValueError(f"configs both set and deleted: {', '.join(both)}")
    sets = [ConfigChange(name, OP_SET, _value_text(name, value)) for name, value in set_.items()]
    return (*sets, *(ConfigChange(name, OP_DELETE) for name in deleted))


class _Admin(Protocol):
    """What these calls use of ``GroupAdmin``."""

    _transport: AdminTransport

    def _deadline(self, timeout_ms: int | None) -> Deadline: ...

    def _wait(self, future: concurrent.futures.Future[T], deadline: Deadline, what: str) -> T: ...

    def _retry(self, attempt: Callable[[], T], deadline: Deadline, failed: str) -> T: ...


class GroupConfigCalls:
    """The group-config calls of ``GroupAdmin`` (a mixin)."""

    def describe_group_configs(
        self: _Admin, group_id: str, timeout_ms: int | None = None
    ) -> dict[str, GroupConfigEntry]:
        """Every config of the group ``group_id``: its own and the brokers' defaults (Java ``Admin.describeConfigs``).

        One DescribeConfigs (API 32) of ``ConfigResource(GROUP, group_id)`` at the least loaded
        broker, as ``kafka-configs.sh --entity-type groups --entity-name GROUP --describe --all``.
        A config the group sets has source "DYNAMIC_GROUP_CONFIG"; one it does not, the broker's
        value (source "DEFAULT_CONFIG", ``is_default``, or a broker setting's source). The group
        need not exist. Values are strings (the ``*.ms`` configs in milliseconds). A request that
        timed out (REQUEST_TIMED_OUT) or a lost connection is retried until the deadline.

        Args:
            group_id: the group (a consumer group's or a share group's id).
            timeout_ms: the deadline (ms); default the admin's ``timeout_ms``.

        Returns:
            Config name -> ``GroupConfigEntry``, sorted by name.

        Raises:
            ValueError: an empty ``group_id``.
            UnsupportedVersionError: the cluster keeps no group configs (Apache Kafka before 3.8
                answers INVALID_REQUEST; a broker that describes no config of the group is taken
                as one without them) or has no DescribeConfigs.
            AdminError: another error (GROUP_AUTHORIZATION_FAILED: the principal lacks
                DESCRIBE_CONFIGS on the group, ...), with the broker's message.
            AdminTimeoutError: no answer before the deadline.

        """
        if not group_id:
            raise ValueError("group_id must not be empty")
        deadline = self._deadline(timeout_ms)
        api = Api.DESCRIBE_CONFIGS

        def attempt() -> dict[str, GroupConfigEntry]:
            answer = self._wait(
                self._transport.describe_group_config_entries(group_id, left_ms(deadline)), deadline, api.value
            )
            _check(api, group_id, answer.error_code, answer.error_message)
            if not answer.configs:
                raise UnsupportedVersionError(
                    f"{api.value} of the configs of group {group_id!r} answered none: {GROUP_CONFIGS_NOT_SUPPORTED}",
                    api=api.value,
                )
            entries = (
                GroupConfigEntry(
                    name=c.name, value=c.value, source=config_source_name(c.config_source), read_only=c.read_only,
                    sensitive=c.is_sensitive,
                )
                for c in answer.configs
            )
            return {entry.name: entry for entry in sorted(entries, key=lambda e: e.name)}

        return self._retry(attempt, deadline, f"{api.value} for group {group_id!r}")

    def alter_group_configs(
        self: _Admin,
        group_id: str,
        set: Mapping[str, str | int] = _NO_CONFIGS,  # the operation's name, as in kafka-configs.sh
        delete: Iterable[str] = (),
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> None:
        """Set and delete the group's own configs (Java ``Admin.incrementalAlterConfigs``, SET and DELETE).

        One IncrementalAlterConfigs (API 44) of ``ConfigResource(GROUP, group_id)`` at the least
        loaded broker, as ``kafka-configs.sh --entity-type groups --entity-name GROUP --alter
        --add-config k=v --delete-config k``: each config of ``set`` gets its value, each of
        ``delete`` goes back to the brokers' default; the other configs of the group stay as they
        are. The group need not exist (its configs wait for it). The broker validates every
        value (INVALID_CONFIG for an unknown name or a value out of range: ``share.record.lock.duration.ms``
        within ``group.share.min.record.lock.duration.ms`` and ``group.share.max.record.lock.duration.ms``,
        15000 to 60000 ms by default) and applies all or none. Members see a change at their next
        heartbeat or fetch (a share group's lock duration with the next records acquired).
        A request that timed out (REQUEST_TIMED_OUT), one the controller did not take
        (NOT_CONTROLLER) or a lost connection is retried until the deadline (the operations are
        idempotent).

        Args:
            group_id: the group.
            set: config name -> new value (a str, or an int written in decimal: ms for the
                ``*.ms`` configs), e.g. ``{"share.record.lock.duration.ms": 20000,
                "share.auto.offset.reset": "earliest"}``.
            delete: names of configs to delete (back to the broker's default).
            timeout_ms: the deadline (ms); default the admin's ``timeout_ms``.
            validate_only: the broker checks the change and applies nothing.

        Raises:
            ValueError: an empty ``group_id``, no change, an empty config name, or a name both
                set and deleted.
            TypeError: ``delete`` is a single str, or a value is neither a str nor an int.
            InvalidConfigError: INVALID_CONFIG, with the broker's message naming the config and why.
            UnsupportedVersionError: the cluster keeps no group configs (Apache Kafka before 3.8
                answers INVALID_REQUEST) or has no IncrementalAlterConfigs.
            AdminError: another error (GROUP_AUTHORIZATION_FAILED: the principal lacks
                ALTER_CONFIGS on the group; POLICY_VIOLATION, ...), with the broker's message.
            AdminTimeoutError: no answer before the deadline.

        """
        if not group_id:
            raise ValueError("group_id must not be empty")
        changes = config_changes(set, delete)
        deadline = self._deadline(timeout_ms)
        api = Api.INCREMENTAL_ALTER_CONFIGS

        def attempt() -> None:
            answer = self._wait(
                self._transport.incremental_alter_group_configs(group_id, changes, validate_only, left_ms(deadline)),
                deadline,
                api.value,
            )
            _check(api, group_id, answer.error_code, answer.error_message)

        self._retry(attempt, deadline, f"{api.value} for group {group_id!r}")
