"""The listener invoker: the poll thread runs each delivered ``RebalanceStep``, callbacks included.

The group thread posts a ``RebalanceStep`` to the mailbox (``kgroup._driver.mailbox``); the poll
thread takes it inside ``poll()``, ``unsubscribe()`` or ``close()`` and runs it here, in the
order Java's ``ConsumerCoordinator`` does (``onJoinPrepare``, ``onJoinComplete``):

1. *acquiesce*: records of partitions the step takes away, fetched but not handed out yet, are
   dropped (their positions go back);
2. lost partitions: ``on_partitions_lost``;
3. revoked partitions: the auto-commit (if enabled), then ``on_partitions_revoked``; a revoke
   whose generation was reset meanwhile is a loss instead, of every partition owned (Java's
   ``onJoinPrepare`` without a generation);
4. the new assignment: ``on_partitions_assigned``;
5. ``StepCompleted`` goes back to the group thread, whatever a callback raised.

A callback's ``Exception`` is kept as a ``ListenerError`` for the caller to raise once the step
completed; a ``BaseException`` (``KeyboardInterrupt``) is raised after the step completed, so the
member never wedges half-way through a rebalance. ``kgroup.listener`` states the callbacks' contract.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

from kgroup.errors import IllegalStateError, ListenerError
from kgroup.listener import RebalanceListener
from kgroup.membership import events as ev
from kgroup.membership.commands import RebalanceStep

if TYPE_CHECKING:
    from kgroup._clock import Clock
    from kgroup._driver.mailbox import Mailbox
    from kgroup._driver.port import GroupPort
    from kgroup.config import ConsumerConfig
    from kgroup.metrics import Recorder
    from kgroup.types import TopicPartition

__all__ = ["ListenerSteps", "StepHost"]

log = logging.getLogger(__name__)


class StepHost(Protocol):
    """What running a step uses of the consumer (``kgroup.consumer.Consumer``).

    ``_invoke`` and ``_run_step`` are called through the consumer, so the simulator's
    instrumentation of them (``kgroup.testing.simulation``) sees every callback and step.
    """

    _group: GroupPort | None
    _mailbox: Mailbox

    @property
    def _assignment(self) -> frozenset[TopicPartition]: ...

    def _set_assignment(self, partitions: frozenset[TopicPartition]) -> None: ...

    def _auto_commit_sync(self) -> None: ...

    def _generation_still(self, step: RebalanceStep) -> bool: ...

    def _invoke(self, callback: str, partitions: frozenset[TopicPartition]) -> None: ...

    def _run_step(self, step: RebalanceStep) -> None: ...

    def _drop_taken(self, fetched: list[Any], taken: set[TopicPartition], columns: bool) -> list[Any]: ...

    def _on_error(self, error: Exception) -> None: ...


class ListenerSteps:
    """The poll thread's listener and the steps it runs (poll thread only).

    Args:
        config: the consumer configuration (``group_id`` for logs, ``enable_auto_commit``).
        clock: the injected clock (callback durations for the metrics).
        metrics: the consumer's recorder.
        errors: the consumer's list of errors for the caller to raise; a callback's goes there.

    """

    def __init__(self, config: ConsumerConfig, clock: Clock, metrics: Recorder, errors: list[Exception]) -> None:
        self._config = config
        self._clock = clock
        self._metrics = metrics
        self._errors = errors
        self.listener: RebalanceListener = RebalanceListener()
        #: a callback runs now: poll(), close() and the like refuse to run inside it
        self.in_callback = False
        #: why the step being run (or the last one) happened
        self.reason = ""
        self._interrupt: BaseException | None = None

    def set_listener(self, listener: RebalanceListener | None) -> None:
        """Take ``listener`` (None: keep the current one).

        Raises:
            IllegalStateError: it is not a ``RebalanceListener``.

        """
        if listener is None:
            return
        if not isinstance(listener, RebalanceListener):
            raise IllegalStateError("listener must be a kgroup.RebalanceListener instance")
        self.listener = listener

    def drain(self, host: StepHost, records: list[Any] | None, *, columns: bool = False) -> list[Any]:
        """Run every delivered step; drop records (``columns``: RecordColumns) of partitions taken away (acquiesce)."""
        items = host._mailbox.take_all()
        kept = records or []
        if not items:
            return kept
        taken: set[TopicPartition] = set()
        for item in items:
            if isinstance(item, RebalanceStep):
                taken |= item.lost | item.revoked
                if item.revoked and not host._generation_still(item):
                    taken |= host._assignment  # every owned partition is lost (``_apply``)
                if item.invoke_assigned:
                    taken |= host._assignment - item.owned
        if kept and taken:
            kept = host._drop_taken(kept, taken, columns)
        for item in items:
            if isinstance(item, RebalanceStep):
                host._run_step(item)
            else:
                host._on_error(item)
        return kept

    def invoke(self, callback: str, partitions: frozenset[TopicPartition]) -> None:
        """Call the listener's ``callback``; keep what it raises (see the module docstring)."""
        self.in_callback = True
        started = self._clock.monotonic()
        try:
            getattr(self.listener, callback)(partitions)
        except Exception as exc:
            log.exception("group %s: %s raised", self._config.group_id, callback)
            error = ListenerError(f"{type(self.listener).__name__}.{callback} raised {exc!r}")
            error.__cause__ = exc
            self._errors.append(error)
        except BaseException as exc:
            # KeyboardInterrupt, SystemExit: finish the step (the member must not wedge),
            # then let it through
            if self._interrupt is None:
                self._interrupt = exc
        finally:
            self.in_callback = False
            self._metrics.listener(callback, self._clock.monotonic() - started)

    def raise_interrupt(self) -> None:
        """Raise the ``BaseException`` a callback raised, once."""
        interrupt, self._interrupt = self._interrupt, None
        if interrupt is not None:
            raise interrupt

    def run(self, host: StepHost, step: RebalanceStep) -> None:
        """Run ``step``'s callbacks, then tell the group thread it completed."""
        self.reason = step.reason
        try:
            self._apply(host, step)
        finally:
            assert host._group is not None
            host._group.post(ev.StepCompleted(step.step_id))
        self.raise_interrupt()

    def _apply(self, host: StepHost, step: RebalanceStep) -> None:
        group_id = self._config.group_id
        # partitions already given up (below: with a revoke whose generation was reset) are not lost twice
        lost = step.lost & host._assignment
        if lost:
            log.info("group %s: partitions lost (%s): %s", group_id, step.reason, sorted(map(str, lost)))
            host._set_assignment(host._assignment - lost)
            host._invoke("on_partitions_lost", lost)
        if step.revoked and not host._generation_still(step):
            # The step was made while the generation was valid, but the group thread reset it
            # before this thread ran the step (e.g. the poll watchdog fired while a rebalance
            # waited for this poll). Java decides revoke-or-lose when onJoinPrepare runs, not
            # when the rebalance was noticed: without a generation nothing can be committed, and
            # every partition the member owns, not only those the step revokes, is lost at once
            # (ConsumerCoordinator.onJoinPrepare: onPartitionsLost of the whole assignment), so
            # none of them is used past this poll while another member may own it already. The
            # group thread's own step for the rest then finds them given up.
            lost = host._assignment | step.revoked
            log.info(
                "group %s: partitions lost (generation %d was reset before the revoke ran): %s",
                group_id, step.generation.generation_id, sorted(map(str, lost)),
            )
            host._set_assignment(frozenset())
            host._invoke("on_partitions_lost", lost)
        elif step.revoked:
            log.info("group %s: acquiesce: revoking %d partitions (%s)", group_id, len(step.revoked), step.reason)
            if self._config.enable_auto_commit:
                host._auto_commit_sync()
            host._invoke("on_partitions_revoked", step.revoked)
            host._set_assignment(host._assignment - step.revoked)
        if step.invoke_assigned:
            host._set_assignment(step.owned)
            log.info(
                "group %s: generation %d: assigned %s",
                group_id, step.generation.generation_id, sorted(map(str, step.assigned)),
            )
            host._invoke("on_partitions_assigned", step.assigned)
