"""Partition assignors: pure functions of subscriptions (see ``kgroup.assignors.base``).

``ASSIGNORS`` maps the protocol names shared with the Java client to their classes, so a
config may name them: ``assignors=("range",)``, ``("cooperative-sticky",)``.
"""

from __future__ import annotations

from collections.abc import Callable

from kgroup.assignors.base import (
    Assignor,
    MemberSubscription,
    Plan,
    member_sort_key,
    sorted_members,
)
from kgroup.assignors.range import RangeAssignor
from kgroup.assignors.roundrobin import RoundRobinAssignor
from kgroup.assignors.sticky import CooperativeStickyAssignor, StickyAssignor
from kgroup.assignors.validate import validate_plan

__all__ = [
    "ASSIGNORS",
    "Assignor",
    "CooperativeStickyAssignor",
    "MemberSubscription",
    "Plan",
    "RangeAssignor",
    "RoundRobinAssignor",
    "StickyAssignor",
    "member_sort_key",
    "sorted_members",
    "validate_plan",
]

#: protocol name -> assignor factory
ASSIGNORS: dict[str, Callable[[], Assignor]] = {
    RangeAssignor.name: RangeAssignor,
    RoundRobinAssignor.name: RoundRobinAssignor,
    StickyAssignor.name: StickyAssignor,
    CooperativeStickyAssignor.name: CooperativeStickyAssignor,
}
