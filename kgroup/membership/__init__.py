"""The sans-IO membership core: the client half of Kafka's classic group protocol.

``GroupMachine`` takes events and ``now`` and returns commands; it does no IO, reads no
clock and starts no thread (h11's sans-IO shape). It is the semi-public low-level API:
``kgroup.Consumer`` drives it from one group thread.
"""

from kgroup.membership.machine import GroupMachine
from kgroup.membership.states import MemberState

__all__ = ["GroupMachine", "MemberState"]
