r"""What every membership machine is to its driver: the ``Member`` protocol and the published ``MemberSnapshot``.

kgroup's membership core is shared by every group protocol; each protocol has a machine of its
own, with its own state table and small config:

* the vocabulary: one set of events (:mod:`kgroup.membership.events`) and commands
  (:mod:`kgroup.membership.commands`), with one ``RebalanceStep`` (a ``commit`` flag, the member
  identity as a ``Generation``: member id plus generation or member epoch) for the poll thread;
* coordinator discovery (:mod:`kgroup.membership.coordinator`) and the timers and backoff
  (:mod:`kgroup.membership.timers`);
* this module: the protocol the group thread (``kgroup._driver.group_thread``) drives and the
  snapshot other threads read.

``GroupMachine`` (:mod:`kgroup.membership.machine`, the classic protocol) and
``ConsumerGroupMachine`` (:mod:`kgroup.membership.consumer_group`, KIP-848) are ``Member``\ s as
they are: no adapter translates between them and the driver. A share-group machine (KIP-932,
ShareGroupHeartbeat) joins the same way (docs/protocol.md, "The membership core").
"""

from __future__ import annotations

import abc
import base64
import logging
import math
import operator
import random
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NoReturn, Protocol, TypeVar, overload

import attrs

from kgroup.membership import consumer_group_states as broker_assigned
from kgroup.membership.commands import SendFindCoordinator
from kgroup.membership.states import MemberState
from kgroup.protocol.consumer_group_heartbeat import JOIN_GROUP_MEMBER_EPOCH
from kgroup.types import Generation, TopicPartition

if TYPE_CHECKING:
    from kgroup.config import ConsumerConfig
    from kgroup.membership.coordinator import CoordinatorState

__all__ = ["BrokerAssignedMember", "Member", "MemberSnapshot", "View", "generate_member_id"]

_T = TypeVar("_T")


@attrs.frozen(repr=False)
class MemberSnapshot:
    """An immutable view of the machine, published to other threads after every call."""

    state: MemberState
    generation: Generation
    owned: frozenset[TopicPartition]
    coordinator: int | None
    subscription: frozenset[str]
    group_instance_id: str | None
    fatal: Exception | None
    #: the member may no longer own its partitions (no successful heartbeat for
    #: session_timeout_ms while its JoinGroup or SyncGroup is unanswered, or its generation is
    #: gone and their loss waits behind a running step): hand nothing out
    hand_out_on_hold: bool = False
    #: from this moment (seconds on the driver's clock) the session timer holds the hand-out
    #: whether or not the group thread has run by then: the poll thread checks it itself (inf:
    #: no session clock running)
    hold_at: float = math.inf
    #: the machine's own state, by name (the consumer protocol's are Java's ``MemberState``:
    #: JOINING, RECONCILING, ACKNOWLEDGING, FENCED, ...); ``state`` is its poll-thread view
    state_name: str = ""
    #: the session timeout in force: the configured one (classic), or the group's as the broker
    #: told it (the consumer protocol; None while unknown)
    session_timeout_ms: int | None = None

    def __repr__(self) -> str:
        return (
            f"MemberSnapshot(state={self.state.value}, generation={self.generation.generation_id}, "
            f"member_id={self.generation.member_id!r}, owned={len(self.owned)})"
        )


class Member(Protocol):
    """A membership machine as the group thread drives it (``GroupMachine``, ``ConsumerGroupMachine``)."""

    @property
    def member_id(self) -> str:
        """The member id ("" before the coordinator or the member gave one)."""
        ...

    @property
    def state_name(self) -> str:
        """The machine's own state, by name."""
        ...

    @property
    def session_timeout_ms(self) -> int | None:
        """The session timeout in force (None: not known yet)."""
        ...

    def handle(self, event: Any, now: float) -> Sequence[Any]:
        """Process one event at ``now`` (seconds); the commands to execute, in order."""
        ...

    def tick(self, now: float) -> Sequence[Any]:
        """Fire the timers due at ``now``."""
        ...

    def next_deadline(self, now: float) -> float:
        """When ``tick`` next has work (clock seconds; inf: none)."""
        ...

    def snapshot(self) -> MemberSnapshot:
        """An immutable view for other threads."""
        ...


class View(Generic[_T]):
    """A machine's read-only view of one of its fields, written once: ``state = View[MemberState]("_state", doc)``.

    ``path`` names the field, dotted through a sub-state (``"_coordinator.node_id"``); ``doc`` is
    the view's docstring. Both machines give their plain views this way (a ``property`` each,
    without the boilerplate).
    """

    def __init__(self, path: str, doc: str) -> None:
        self._get = operator.attrgetter(path)
        self.__doc__ = doc

    @overload
    def __get__(self, machine: None, owner: type | None = None) -> View[_T]: ...

    @overload
    def __get__(self, machine: object, owner: type | None = None) -> _T: ...

    def __get__(self, machine: object | None, owner: type | None = None) -> View[_T] | _T:
        if machine is None:
            return self
        value: _T = self._get(machine)
        return value

    def __set__(self, machine: object, value: object) -> NoReturn:
        raise AttributeError("a machine's view is read-only")


_Heartbeat = TypeVar("_Heartbeat")


def generate_member_id(rng: random.Random) -> str:
    """A member id as Java's consumer makes one (``Uuid.randomUuid().toString()``: URL-safe base64, 22 characters).

    Like Java's ``Uuid``, an id that would start with ``-`` is drawn again (it would read as an
    option on a command line).
    """
    while True:
        text = base64.urlsafe_b64encode(rng.getrandbits(128).to_bytes(16, "big")).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class BrokerAssignedMember(abc.ABC):
    """What the machines of the broker-assigned protocols share (KIP-848's consumer protocol, KIP-932's share groups).

    Java's ``AbstractHeartbeatRequestManager``: the drive loop (``poll``) looks for the
    coordinator or, with one, lets the machine reconcile and heartbeat; a heartbeat goes to the
    coordinator with the member's group, member id and epoch.
    """

    #: what the logs call the group ("group", "share group")
    _group_kind: ClassVar[str] = "group"

    _coordinator: CoordinatorState

    def __init__(self, config: ConsumerConfig, rng: random.Random | None, member_id: str | None) -> None:
        """The member's identity: its group, its member id (``member_id``, else one it generates, KIP-1082)."""
        self._config = config
        self._group_id = config.group_id
        self._rng = rng or random.Random()
        self._member_id = member_id if member_id is not None else generate_member_id(self._rng)
        self._epoch = JOIN_GROUP_MEMBER_EPOCH
        self._state = broker_assigned.MemberState.UNSUBSCRIBED

    def _drive(self, now: float, out: list[Any]) -> None:
        """Issue whatever the state calls for: find the coordinator, or the machine's ``_drive_with_coordinator``.

        Without a coordinator the leave heartbeat is not sent (Java's ``onHeartbeatRequestSkipped``:
        the member leaves all the same, ``_leave_not_sent``), and a FindCoordinator goes when the
        machine looks for one (``_looks_for_coordinator``).
        """
        state = self._state
        if state in (broker_assigned.MemberState.CLOSED, broker_assigned.MemberState.FATAL):
            return
        if self._coordinator.node_id is not None:
            self._drive_with_coordinator(now, out)
        elif state is broker_assigned.MemberState.LEAVING:
            logging.getLogger(type(self).__module__).warning(
                "%s %s: no coordinator; the leave heartbeat is not sent", self._group_kind, self._group_id
            )
            self._leave_not_sent()
        elif self._looks_for_coordinator(now):
            request_id = self._find_coordinator_sent()
            out.append(SendFindCoordinator(
                request_id=request_id, key=self._group_id, timeout_ms=self._config.request_timeout_ms
            ))

    @abc.abstractmethod
    def _drive_with_coordinator(self, now: float, out: list[Any]) -> None:
        """Reconcile and heartbeat, as the state calls for (the coordinator is known)."""

    @abc.abstractmethod
    def _leave_not_sent(self) -> None:
        """The leave heartbeat cannot go (no coordinator): end the membership without it."""

    @abc.abstractmethod
    def _looks_for_coordinator(self, now: float) -> bool:
        """Whether a FindCoordinator goes at ``now``: none in flight, the state wants one, the lookup is due."""

    @abc.abstractmethod
    def _find_coordinator_sent(self) -> int:
        """Record a FindCoordinator as in flight; its request id."""

    def _heartbeat_to_coordinator(
        self, command: Callable[..., _Heartbeat], request_id: int, epoch: int, fields: Mapping[str, Any]
    ) -> _Heartbeat:
        """``command`` (a ``Send*Heartbeat``) to the coordinator: the member's identity, ``epoch`` and ``fields``."""
        assert self._coordinator.node_id is not None
        return command(
            request_id=request_id,
            node_id=self._coordinator.node_id,
            timeout_ms=self._config.request_timeout_ms,
            group_id=self._group_id,
            member_id=self._member_id,
            member_epoch=epoch,
            **fields,
        )
