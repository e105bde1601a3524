"""The sans-IO membership core: the client half of Kafka's group protocols, classic and consumer (KIP-848).

One core (the events and commands, ``RebalanceStep``, coordinator discovery, the timers, the
``Member`` protocol and ``MemberSnapshot``: docs/protocol.md, "The membership core") and one
machine per protocol: ``GroupMachine`` (classic) and ``ConsumerGroupMachine`` (consumer). Each
takes events and ``now`` and returns commands; it does no IO, reads no clock and starts no
thread (h11's sans-IO shape). ``GroupMachine`` is the semi-public low-level API:
``kgroup.Consumer`` drives either from one group thread.

The names are imported on first use (PEP 562): importing a submodule (``events``,
``commands``, ``states``) does not load the machine.
"""

from typing import TYPE_CHECKING

from kgroup._lazy import lazy_getattr

if TYPE_CHECKING:
    from kgroup.membership.machine import GroupMachine
    from kgroup.membership.states import MemberState

__all__ = ["GroupMachine", "MemberState"]

_MODULE_OF = {"GroupMachine": "kgroup.membership.machine", "MemberState": "kgroup.membership.states"}

if not TYPE_CHECKING:  # type checkers see the imports above
    __getattr__ = lazy_getattr(__name__, _MODULE_OF)
