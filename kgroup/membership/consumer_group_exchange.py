"""The consumer-protocol member's ConsumerGroupHeartbeat exchange, apart from its membership (KIP-848).

Java splits the member in two: ``ConsumerHeartbeatRequestManager`` sends the heartbeat (when,
with which fields, to which coordinator) and handles its answer (``onResponse``,
``onErrorResponse``: what each error code means), and calls ``ConsumerMembershipManager`` for
what the member does about it (``onHeartbeatSuccess``, ``transitionToFenced``,
``transitionToFatal``, ``onHeartbeatRequestGenerated``). ``HeartbeatExchange`` is the first half
for ``ConsumerGroupMachine`` (:mod:`kgroup.membership.consumer_group`, the second half, which
inherits it): building and sending the heartbeat and the instance-id release, finding the
coordinator, and the answers to both, matched to the requests in flight (``Requests``; an
answer no longer waited for is dropped). The timing and the sent fields are
``HeartbeatRequestState``'s (:mod:`kgroup.membership.consumer_group_heartbeat`); what an error
code means is a row of :func:`kgroup.errors.classify`. Pure, as the machine is.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from typing import Any, Final
from uuid import UUID

import attrs

from kgroup._error_codes import NONE, UNKNOWN_MEMBER_ID, UNSUPPORTED_VERSION, error_name
from kgroup.config import ConsumerConfig
from kgroup.errors import CONSUMER_PROTOCOL_NOT_SUPPORTED, Api, Disposition, broker_error, classify
from kgroup.membership.commands import Command, Notify, SendConsumerGroupHeartbeat
from kgroup.membership.consumer_group_heartbeat import HeartbeatRequestState
from kgroup.membership.consumer_group_reconcile import Reconciliation, Steps
from kgroup.membership.consumer_group_session import SessionTimer
from kgroup.membership.consumer_group_states import HOLDING, NOT_IN_GROUP, MemberState, Requests, Subscription
from kgroup.membership.coordinator import CoordinatorState
from kgroup.membership.core import BrokerAssignedMember
from kgroup.membership.events import ConsumerGroupHeartbeatResponded, FindCoordinatorResponded, RequestFailed
from kgroup.membership.timers import next_backoff_s
from kgroup.protocol.consumer_group_heartbeat import LEAVE_GROUP_STATIC_MEMBER_EPOCH

__all__ = ["HeartbeatExchange"]

#: the machine's logger: one logger for the member, whichever half speaks
log = logging.getLogger("kgroup.membership.consumer_group")

_HEARTBEAT: Final = Api.CONSUMER_GROUP_HEARTBEAT


class HeartbeatExchange(BrokerAssignedMember):
    """The heartbeat half of ``ConsumerGroupMachine``: requests out, answers in (Java's heartbeat request manager).

    The machine's state it reads and replaces is declared here; the membership's side of each
    answer is the machine's (the methods at the end, which it overrides).
    """

    _config: ConsumerConfig
    _group_id: str
    _instance_id: str | None
    _server_assignor: str | None
    _rebalance_timeout_ms: int
    _rng: random.Random
    _member_id: str
    _epoch: int
    _state: MemberState
    _subscription: Subscription
    _coordinator: CoordinatorState
    _requests: Requests
    _rec: Reconciliation
    _steps: Steps
    _session: SessionTimer
    _heartbeat: HeartbeatRequestState

    # ---------------------------------------------------------------- helpers
    def _context(self) -> str:
        return (
            f"group_id={self._group_id!r}, member_id={self._member_id!r}, member_epoch={self._epoch}, "
            f"group_instance_id={self._instance_id!r}"
        )

    def _request_id(self) -> int:
        rid, self._requests = self._requests.issued()
        return rid

    def _backoff(self, attempts: int) -> float:
        return next_backoff_s(attempts, self._config.retry_backoff_ms, self._config.retry_backoff_max_ms, self._rng)

    # ---------------------------------------------------------------- when, and to whom
    def _heartbeats(self) -> bool:
        """Whether the member heartbeats in its state (Java's ``shouldSkipHeartbeat``, negated)."""
        return self._state not in NOT_IN_GROUP

    def _heartbeat_now(self) -> bool:
        """States that heartbeat without waiting for the interval (Java's ``shouldHeartbeatNow``)."""
        return self._state in (MemberState.ACKNOWLEDGING, MemberState.JOINING, MemberState.LEAVING)

    def _heartbeat_due(self) -> float:
        # in doubt about the session: ask at once (after a failed attempt's backoff)
        return self._heartbeat.due(
            now=self._heartbeat_now() or (self._session.in_doubt and self._session.doubt_asks),
            leaving=self._state is MemberState.LEAVING,
        )

    def _wants_coordinator(self) -> bool:
        return self._heartbeats() or self._requests.leave is not None

    def _taking_partitions(self) -> bool:
        """A reconciliation that adds partitions is out: heartbeats leave the owned set out (``Steps``)."""
        return self._steps.taking_partitions

    def _mark_coordinator_unknown(self, reason: str, now: float) -> None:
        if self._coordinator.node_id is not None:
            log.info("group %s: coordinator %s marked unknown: %s", self._group_id, self._coordinator.node_id, reason)
        rid = self._requests.heartbeat
        # its answer (from the old coordinator) no longer counts
        self._requests = attrs.evolve(
            self._requests, heartbeat=None, abandoned=self._requests.abandoned if rid is None else (rid, self._epoch)
        )
        self._coordinator = self._coordinator.lost(now + self._backoff(self._coordinator.lookup.attempts))
        self._heartbeat.resend_all()

    # ---------------------------------------------------------------- requests out
    def _send_heartbeat(self, now: float, out: list[Command]) -> None:
        """Build the heartbeat (only what changed, Java's ``HeartbeatState.buildRequestData``) and send it."""
        assert self._coordinator.node_id is not None
        if self._state is MemberState.JOINING and self._requests.release_instance:
            self._send_instance_release(now, out)
            return
        current = self._rec.current
        fields = self._heartbeat.fields(
            send_all=self._state is MemberState.JOINING,
            rebalance_timeout_ms=self._rebalance_timeout_ms,
            topics=tuple(sorted(self._subscription.topics)),
            pattern=self._subscription.pattern,
            rack_id=self._config.client_rack,
            server_assignor=self._server_assignor,
            owned=None if self._taking_partitions() else current,
        )
        rid = self._request_id()
        if self._state is MemberState.LEAVING:
            # an answer to an earlier heartbeat no longer matters
            self._requests = attrs.evolve(self._requests, leave=rid, heartbeat=None)
        else:
            carried = None if fields.get("topic_partitions") is None else current.partitions
            self._requests = attrs.evolve(
                self._requests, heartbeat=rid, claim_unconfirmed=self._requests.claim_unconfirmed or carried is not None
            )
            self._session = self._session.sent(rid, now, carried)
        out.append(self._heartbeat_command(rid, self._epoch, fields))
        self._heartbeat.sent(now)
        self._on_heartbeat_sent()

    def _heartbeat_command(self, rid: int, epoch: int, fields: Mapping[str, Any]) -> SendConsumerGroupHeartbeat:
        """A ConsumerGroupHeartbeat to the coordinator: the member's identity and instance id, ``epoch``, ``fields``."""
        return self._heartbeat_to_coordinator(
            SendConsumerGroupHeartbeat, rid, epoch, {"instance_id": self._instance_id, **fields}
        )

    def _send_instance_release(self, now: float, out: list[Command]) -> None:
        """A fenced static member releases its instance id (epoch -2) before it rejoins with epoch 0.

        The coordinator (Apache Kafka 4.4's ``GroupMetadataManager``) keeps a member it fenced with
        FENCED_MEMBER_EPOCH, at its old epoch, and refuses a join (epoch 0) with an instance id a
        member holds at any epoch but -2, even from the same member id: UNRELEASED_INSTANCE_ID,
        which Java's consumer takes as fatal. A static leave (-2) is accepted at any epoch from
        the member id that holds the instance id; it keeps the member's assignment, which the
        epoch-0 join then takes over (the conformance script
        ``a_fenced_static_member_cannot_rejoin_until_it_releases_its_instance_id`` checks both
        against Apache Kafka). The answer is handled by ``_on_instance_released``.
        """
        assert self._coordinator.node_id is not None
        rid = self._request_id()
        self._requests = attrs.evolve(self._requests, heartbeat=rid, release=rid)
        log.info("group %s member %s: fenced static member: releasing instance id %s (epoch -2) before rejoining",
                 self._group_id, self._member_id, self._instance_id)
        out.append(self._heartbeat_command(rid, LEAVE_GROUP_STATIC_MEMBER_EPOCH, {}))
        self._heartbeat.sent(now)

    def _on_instance_released(self, event: ConsumerGroupHeartbeatResponded) -> bool:
        """The answer to ``_send_instance_release``: True when handled (the join goes out next).

        NONE (released) and UNKNOWN_MEMBER_ID (the coordinator no longer has the member, so the
        instance id is free) end the release; any other code is handled as a heartbeat's
        (coordinator errors retry the release; FENCED_INSTANCE_ID, another process with the same
        ``group_instance_id``, is fatal).
        """
        if event.error_code not in (NONE, UNKNOWN_MEMBER_ID):
            return False
        log.info("group %s member %s: instance id %s %s; rejoining", self._group_id, self._member_id,
                 self._instance_id, "released" if event.error_code == NONE else "no longer held")
        self._requests = attrs.evolve(self._requests, release_instance=False)
        self._heartbeat.ask_now()
        self._heartbeat.reset_backoff()
        return True

    # ---------------------------------------------------------------- answers in
    def _on_find_coordinator(self, event: FindCoordinatorResponded, now: float, out: list[Command]) -> None:
        if event.request_id != self._requests.find:
            return
        self._requests = attrs.evolve(self._requests, find=None)
        disposition = classify(Api.FIND_COORDINATOR, event.error_code)
        if disposition is Disposition.OK:
            self._coordinator = self._coordinator.found(event.node_id, now + self._backoff(1))
            # Java's CoordinatorRequestManager (RequestState.onSuccessfulAttempt): the next
            # FindCoordinator waits retry_backoff_ms after this answer even so, so a coordinator
            # that answers NOT_COORDINATOR while it loads is not asked again in a tight loop
            log.info("group %s: coordinator %s at %s:%s", self._group_id, event.node_id, event.host, event.port)
        elif disposition is Disposition.FATAL:
            self._transition_to_fatal(
                broker_error(Api.FIND_COORDINATOR, event.error_code, self._context()), out
            )
        else:
            self._coordinator = self._coordinator.lookup_failed(now, self._backoff)
            log.info("group %s: FindCoordinator failed: %s", self._group_id, error_name(event.error_code))

    def _on_heartbeat(self, event: ConsumerGroupHeartbeatResponded, now: float, out: list[Command]) -> None:
        self._session = self._session.answered(event.request_id)
        if event.request_id == self._requests.leave:
            if event.error_code != NONE:
                log.info("group %s: the leave heartbeat returned %s", self._group_id, error_name(event.error_code))
            self._finish_leave()
            return
        if event.request_id != self._requests.heartbeat:
            self._on_other_heartbeat(event, now)
            return
        self._requests = attrs.evolve(self._requests, heartbeat=None)
        if event.request_id == self._requests.release:
            self._requests = attrs.evolve(self._requests, release=None)
            if self._on_instance_released(event):
                return
        action = classify(_HEARTBEAT, event.error_code)
        if action is Disposition.OK:
            self._requests = attrs.evolve(self._requests, claim_unconfirmed=False)
            previous_target = self._rec.target.partitions
            self._on_heartbeat_success(event, now)
            self._session_renewed(previous_target)
            return
        self._heartbeat.failed(now)  # back off, then send at once (Java ``HeartbeatRequestState.onFailedAttempt``)
        name = error_name(event.error_code)
        detail = f"ConsumerGroupHeartbeat returned {name}" + (f": {event.error_message}" if event.error_message else "")
        if action is Disposition.REDISCOVER:
            self._mark_coordinator_unknown(detail, now)
            self._heartbeat.reset_backoff()
        elif action is Disposition.RETRY:
            log.info("group %s: %s; retrying after a backoff", self._group_id, detail)
        elif action is Disposition.RESET_GENERATION:
            self._transition_to_fenced(detail, now, event.error_code)
            self._heartbeat.reset_backoff()
        elif action is Disposition.RAISE:
            log.error("group %s member %s: %s", self._group_id, self._member_id, detail)
            out.append(Notify(broker_error(_HEARTBEAT, event.error_code, event.error_message or "", self._context())))
        else:
            error = broker_error(_HEARTBEAT, event.error_code, event.error_message or "", self._context())
            self._transition_to_fatal(error, out)

    def _on_other_heartbeat(self, event: ConsumerGroupHeartbeatResponded, now: float) -> None:
        """An answer to a heartbeat no longer waited for: stale, unless it fences the member at its epoch."""
        abandoned = self._requests.abandoned
        if abandoned is not None and abandoned[0] == event.request_id:
            self._requests = attrs.evolve(self._requests, abandoned=None)
        if (
            abandoned == (event.request_id, self._epoch)
            and classify(_HEARTBEAT, event.error_code) is Disposition.RESET_GENERATION
            and self._state in HOLDING
        ):
            # the coordinator removed or fenced the member at this very epoch: as authoritative
            # as the answer to the current heartbeat (Java's handler takes it too)
            self._transition_to_fenced(f"ConsumerGroupHeartbeat returned {error_name(event.error_code)}", now,
                                       event.error_code)
            self._heartbeat.reset_backoff()
            return
        log.debug("group %s: dropping a stale heartbeat response %d", self._group_id, event.request_id)

    def _on_request_failed(self, event: RequestFailed, now: float, out: list[Command]) -> None:
        rid = event.request_id
        self._session = self._session.answered(rid)
        if rid == self._requests.find:
            self._requests = attrs.evolve(self._requests, find=None)
            self._coordinator = self._coordinator.lookup_failed(now, self._backoff)
            log.info("group %s: FindCoordinator failed: %s", self._group_id, event.reason)
            return
        if rid == self._requests.leave:
            log.info("group %s: the leave heartbeat failed: %s", self._group_id, event.reason)
            self._finish_leave()
            return
        if rid != self._requests.heartbeat:
            return
        self._requests = attrs.evolve(self._requests, heartbeat=None)
        self._heartbeat.failed(now)
        if event.unsupported_version:
            self._transition_to_fatal(
                broker_error(_HEARTBEAT, UNSUPPORTED_VERSION, f"{event.reason}; {CONSUMER_PROTOCOL_NOT_SUPPORTED}",
                             self._context()),
                out,
            )
            return
        log.info("group %s: ConsumerGroupHeartbeat failed: %s; finding the coordinator again", self._group_id,
                 event.reason)
        self._mark_coordinator_unknown(f"ConsumerGroupHeartbeat failed: {event.reason}", now)

    # ---------------------------------------------------------------- the membership's side (the machine's)
    def _on_heartbeat_sent(self) -> None:
        """The states a heartbeat ends (Java ``onHeartbeatRequestGenerated``)."""
        raise NotImplementedError

    def _on_heartbeat_success(self, event: ConsumerGroupHeartbeatResponded, now: float) -> None:
        """Java ``ConsumerMembershipManager.onHeartbeatSuccess``."""
        raise NotImplementedError

    def _session_renewed(self, previous_target: frozenset[tuple[UUID, int]]) -> None:
        """The current heartbeat was answered without error (the session timer)."""
        raise NotImplementedError

    def _finish_leave(self) -> None:
        """The leave heartbeat was answered or failed."""
        raise NotImplementedError

    def _transition_to_fenced(self, reason: str, now: float, error_code: int | None = None) -> None:
        """Java ``transitionToFenced``."""
        raise NotImplementedError

    def _transition_to_fatal(self, error: Exception, out: list[Command]) -> None:
        """Java ``transitionToFatal``."""
        raise NotImplementedError
