"""Broker configuration of the coordinator model: Kafka's config names, Kafka's defaults.

Defaults are those of ``GroupCoordinatorConfig`` (Apache Kafka 3.x/4.x): ``group.initial.rebalance.delay.ms``
3000 (KIP-134), ``group.min.session.timeout.ms`` 6000, ``group.max.session.timeout.ms`` 1800000,
``group.max.size`` Integer.MAX_VALUE (KIP-389) and ``offsets.retention.minutes`` 7 days.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import attrs

__all__ = ["NEW_MEMBER_JOIN_TIMEOUT_MS", "OFFSET_METADATA_MAX_BYTES", "CoordinatorConfig"]

NEW_MEMBER_JOIN_TIMEOUT_MS: Final = 5 * 60 * 1000
"""How long a *new* member's parked JoinGroup may wait before the member is dropped (Kafka's
``classicGroupNewMemberJoinTimeoutMs``, a constant 5 minutes in GroupMetadataManager)."""

OFFSET_METADATA_MAX_BYTES: Final = 4096
"""``offset.metadata.max.bytes`` default; longer commit metadata gets OFFSET_METADATA_TOO_LARGE."""

_INT32_MAX: Final = 2**31 - 1


def _int_in(minimum: int, maximum: int = _INT32_MAX) -> Callable[[object, attrs.Attribute[int], int], None]:
    """An attrs validator: an int (not a bool) in ``[minimum, maximum]``."""

    def check(_inst: object, attribute: attrs.Attribute[int], value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{attribute.name} must be an int, got {value!r}")
        if not minimum <= value <= maximum:
            raise ValueError(f"{attribute.name} must be in [{minimum}, {maximum}], got {value!r}")

    return check


@attrs.frozen(kw_only=True)
class CoordinatorConfig:
    """Broker configs of the group coordinator (Kafka's names in snake_case, Kafka's defaults).

    ``offsets_retention_ms`` is accepted and validated but not enforced: the model never expires
    committed offsets (tests do not run for a week of fake time).

    Raises:
        ValueError: a value is out of range, or ``group_min_session_timeout_ms`` exceeds
            ``group_max_session_timeout_ms``; the message names the field.
        TypeError: a value is not an int.

    """

    group_initial_rebalance_delay_ms: int = attrs.field(default=3000, validator=_int_in(0))
    group_min_session_timeout_ms: int = attrs.field(default=6000, validator=_int_in(0))
    group_max_session_timeout_ms: int = attrs.field(default=1800000, validator=_int_in(0))
    group_max_size: int = attrs.field(default=_INT32_MAX, validator=_int_in(1))
    offsets_retention_ms: int = attrs.field(default=7 * 24 * 3600 * 1000, validator=_int_in(1, 2**63 - 1))

    def __attrs_post_init__(self) -> None:
        if self.group_min_session_timeout_ms > self.group_max_session_timeout_ms:
            raise ValueError(
                "group_min_session_timeout_ms must not exceed group_max_session_timeout_ms, got "
                f"{self.group_min_session_timeout_ms} > {self.group_max_session_timeout_ms}"
            )
