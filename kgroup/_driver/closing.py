"""Leaving the group: what ``close()`` and ``unsubscribe()`` wait for, and how long.

Java's ``ConsumerCoordinator.close`` (``onLeavePrepare``, then LeaveGroup) and KIP-1092's
``CloseOptions.GroupMembershipOperation``: the pending async commits are waited for, the group
thread is asked to ``Leave``, and the poll thread runs the revoke step that comes back (the
auto-commit, ``on_partitions_revoked``) until the member is CLOSED or the deadline passes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from kgroup.errors import ConfigError, KGroupError, ListenerError
from kgroup.membership import events as ev
from kgroup.membership.states import MemberState

if TYPE_CHECKING:
    from kgroup._clock import Clock
    from kgroup._driver.commits import OffsetsClient
    from kgroup._driver.mailbox import Mailbox
    from kgroup._driver.port import GroupPort
    from kgroup.config import ConsumerConfig

__all__ = ["CLOSE_POLICIES", "close_policy", "leave_group", "raise_close_failures"]

log = logging.getLogger(__name__)

#: close(group_membership=...) -> Leave.send_leave_group (None: dynamic leaves, static stays)
CLOSE_POLICIES: dict[str, bool | None] = {"default": None, "remain": False, "leave": True}

_SETTLED = (MemberState.CLOSED, MemberState.FATAL)


def close_policy(group_membership: str) -> bool | None:
    """``CLOSE_POLICIES[group_membership]``.

    Raises:
        ConfigError: ``group_membership`` is not "default", "remain" or "leave".

    """
    if group_membership not in CLOSE_POLICIES:
        raise ConfigError("group_membership", f"must be one of {sorted(CLOSE_POLICIES)}, got {group_membership!r}")
    return CLOSE_POLICIES[group_membership]


def raise_close_failures(config: ConsumerConfig, failures: list[Exception]) -> None:
    """Log the errors ``close()`` met; raise the first listener callback's (Java: "Failed to close kafka consumer").

    Raises:
        KGroupError: a listener callback raised (its ``ListenerError`` is the ``__cause__``).

    """
    for error in failures:
        log.warning("group %s: error during close: %s", config.group_id, error)
    listener_errors = [e for e in failures if isinstance(e, ListenerError)]
    if listener_errors:
        raise KGroupError(f"failed to close the consumer: {listener_errors[0]}") from listener_errors[0]


def leave_group(
    group: GroupPort,
    offsets: OffsetsClient,
    *,
    config: ConsumerConfig,
    clock: Clock,
    mailbox: Mailbox,
    drain: Callable[[], object],
    deadline: float,
    send_leave_group: bool | None,
    reason: str,
    what: str,
    timeout_ms: int,
) -> None:
    """Revoke (callbacks, commit) and leave or remain as ``send_leave_group`` says, by ``deadline``.

    Args:
        group: the group thread.
        offsets: the offsets client (its async commits are waited for first).
        config: the consumer configuration (for the log).
        clock: the injected clock (``deadline`` is on it, in seconds).
        mailbox: the poll thread's mailbox.
        drain: runs the steps delivered to the mailbox (the revoke step's callbacks).
        deadline: when to give up.
        send_leave_group: ``CLOSE_POLICIES``' value for the ``Leave`` event.
        reason: the KIP-800 reason sent with LeaveGroup.
        what: the caller, for the log (``close()``, ``unsubscribe()``).
        timeout_ms: the caller's timeout, for the log.

    """
    offsets.wait_async(deadline)
    group.post(ev.Leave(reason, send_leave_group=send_leave_group))

    def settled() -> bool:
        return mailbox.has_items() or group.snapshot.state in _SETTLED

    while clock.monotonic() < deadline:
        drain()
        if group.snapshot.state in _SETTLED or group.crashed:
            return
        mailbox.wait_until(settled, deadline - clock.monotonic())
    log.warning(
        "group %s: %s gave up after %d ms with the member still %s (a request to the coordinator, "
        "such as a JoinGroup parked until the rebalance completes, had not been answered); the "
        "coordinator removes the member after session_timeout_ms (%d ms)",
        config.group_id, what, timeout_ms, group.snapshot.state.name, config.session_timeout_ms,
    )
