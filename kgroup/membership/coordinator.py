"""Coordinator discovery: one pure unit for every client of a group's coordinator.

Java's ``CoordinatorRequestManager`` is one object, injected into the commit and heartbeat
request managers. Here ``CoordinatorState`` is that unit as a frozen value: the coordinator's
node id as far as the client knows, and the FindCoordinator retry timer. The classic machine
(``kgroup.membership.machine``), the consumer-protocol machine (``kgroup.membership.consumer_group``)
and ``StandaloneGroup`` (``kgroup._driver.standalone``, a manually assigned consumer) keep one
and replace it on change; the group admin can keep one the same way. No IO, no clock: the caller
passes ``now`` and its backoff (``kgroup.membership.timers.next_backoff_s``).

* ``due(now)``: no coordinator known and the next FindCoordinator may go;
* ``found(node_id)``: FindCoordinator answered; ``not_before`` makes the next lookup wait even so
  (Java's ``RequestState.onSuccessfulAttempt``: a coordinator that answers NOT_COORDINATOR while
  it loads is not asked again in a tight loop);
* ``lookup_failed(now, backoff)``: the lookup failed, the next one backs off exponentially;
* ``lost(not_before)``: the coordinator failed (NOT_COORDINATOR, a disconnect, a commit's error);
  look again from ``not_before``;
* ``answered(error_code, node_id, now, backoff)``: a FindCoordinator answer as a whole: what its
  code means (``kgroup.errors.classify``) and the state after it (used by the share-group
  machine; the same steps the other machines spell out).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from kgroup.errors import Api, Disposition, classify
from kgroup.membership.timers import RetryTimer

__all__ = ["CoordinatorState"]


@attrs.frozen
class CoordinatorState:
    """The group's coordinator as far as the member knows, and the FindCoordinator retry timer."""

    #: the coordinator's node id; None while unknown (FindCoordinator is due at ``lookup.at``)
    node_id: int | None = None
    lookup: RetryTimer = attrs.field(factory=RetryTimer)

    def due(self, now: float) -> bool:
        """No coordinator is known and the next FindCoordinator may go at ``now``."""
        return self.node_id is None and now >= self.lookup.at

    def found(self, node_id: int, not_before: float | None = None) -> CoordinatorState:
        """FindCoordinator answered ``node_id``; the next lookup may go from ``not_before`` (default: as before)."""
        lookup = self.lookup.succeeded()
        return CoordinatorState(node_id, lookup if not_before is None else lookup.allow_from(not_before))

    def lookup_failed(self, now: float, backoff: Callable[[int], float]) -> CoordinatorState:
        """FindCoordinator failed at ``now``: look again after a longer backoff."""
        return CoordinatorState(None, self.lookup.failed(now, backoff))

    def lost(self, not_before: float) -> CoordinatorState:
        """The coordinator is unknown from now on; look for it again from ``not_before``."""
        return CoordinatorState(None, self.lookup.allow_from(max(self.lookup.at, not_before)))

    def answered(
        self, error_code: int, node_id: int, now: float, backoff: Callable[[int], float]
    ) -> tuple[CoordinatorState, Disposition]:
        """A FindCoordinator answer at ``now``: the state after it, and what its code means.

        OK: ``node_id`` is the coordinator, and the next lookup waits ``backoff(1)`` even so
        (Java's ``RequestState.onSuccessfulAttempt``: a coordinator that answers NOT_COORDINATOR
        while it loads is not asked again in a tight loop); FATAL: unchanged, the caller fails;
        any other code: the lookup failed and the next backs off.
        """
        disposition = classify(Api.FIND_COORDINATOR, error_code)
        if disposition is Disposition.OK:
            return self.found(node_id, now + backoff(1)), disposition
        if disposition is Disposition.FATAL:
            return self, disposition
        return self.lookup_failed(now, backoff), disposition
