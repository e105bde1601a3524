"""``Consumer.member_state()`` names the membership machine's own states: the classic machine's
under ``group_protocol="classic"``, the consumer protocol's (Java's ``MemberState``: UNSUBSCRIBED,
JOINING, RECONCILING, ACKNOWLEDGING, STABLE, FENCED, ...) under ``"consumer"``. Both call the
settled member STABLE by name, which the Spark source's readiness check relies on
(``kgroup/spark/_source.py``: it waits while ``member_state().name != "STABLE"``).

The consumer reads the group thread's published snapshot; here the snapshot is the machine's,
driven by hand (``tests/unit/test_kip848_machine.py``'s ``Member``), and no broker is needed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import kgroup
from kgroup._driver.standalone import StandaloneSnapshot
from kgroup.membership import consumer_group
from kgroup.membership.commands import DeliverStep
from kgroup.membership.core import MemberSnapshot
from kgroup.membership.events import MetadataUpdated
from kgroup.membership.states import MemberState
from tests.unit.test_kip848_machine import NAMES, Member, assignment

CG = consumer_group.MemberState


class _Published:
    """The group port as ``member_state()`` reads it: the published snapshot."""

    def __init__(self, snapshot: object) -> None:
        self.snapshot = snapshot


@pytest.fixture(params=["classic", "consumer"])
def consumer(request: pytest.FixtureRequest) -> Iterator[kgroup.Consumer[bytes, bytes]]:
    c: kgroup.Consumer[bytes, bytes] = kgroup.Consumer(
        bootstrap_servers="localhost:9092", group_id="g", group_protocol=request.param
    )
    yield c
    c._group = None
    c.close()


def published(c: kgroup.Consumer[bytes, bytes], snapshot: object) -> None:
    c._group = _Published(snapshot)  # type: ignore[assignment]


def consumer_protocol_snapshots() -> list[tuple[consumer_group.MemberState, MemberSnapshot]]:
    """A consumer-protocol machine's snapshots as it joins, reconciles, acknowledges and is stable."""
    member = Member()
    seen = [(member.state, member.machine.snapshot())]
    first = member.join()
    seen.append((member.state, member.machine.snapshot()))
    member.handle(MetadataUpdated(NAMES))
    out = member.respond(first, epoch=5, assigned=assignment(orders=[0]))
    step = next(c.step for c in out if isinstance(c, DeliverStep))
    seen.append((member.state, member.machine.snapshot()))
    ack = member.complete(step)
    seen.append((member.state, member.machine.snapshot()))
    assert ack and member.state is CG.STABLE
    return seen


def test_before_subscribe(consumer: kgroup.Consumer[bytes, bytes]) -> None:
    expected = CG.UNSUBSCRIBED if consumer.config.group_protocol == "consumer" else MemberState.UNJOINED
    assert consumer.member_state() is expected


def test_the_consumer_protocol_reports_its_own_states() -> None:
    c: kgroup.Consumer[bytes, bytes] = kgroup.Consumer(
        bootstrap_servers="localhost:9092", group_id="g", group_protocol="consumer"
    )
    try:
        states = []
        for state, snapshot in consumer_protocol_snapshots():
            published(c, snapshot)
            assert c.member_state() is state
            states.append(state)
        assert states == [CG.UNSUBSCRIBED, CG.JOINING, CG.RECONCILING, CG.STABLE]
        # the poll thread's own view stays the classic one (hand-outs, commits and close are written against it)
        assert snapshot.state is MemberState.STABLE
        published(c, StandaloneSnapshot(coordinator=None))  # assign(): no membership, as Java's
        assert c.member_state() is CG.UNSUBSCRIBED
    finally:
        c._group = None
        c.close()


def test_the_classic_protocol_reports_the_classic_states() -> None:
    c: kgroup.Consumer[bytes, bytes] = kgroup.Consumer(bootstrap_servers="localhost:9092", group_id="g")
    try:
        for _, snapshot in consumer_protocol_snapshots():  # any snapshot: classic reads its ``state``
            published(c, snapshot)
            assert c.member_state() is snapshot.state
            assert isinstance(c.member_state(), MemberState)
        published(c, StandaloneSnapshot(coordinator=None))
        assert c.member_state() is MemberState.STABLE
    finally:
        c._group = None
        c.close()


def test_stable_is_stable_by_name_under_either_protocol(consumer: kgroup.Consumer[bytes, bytes]) -> None:
    """What the Spark source checks: ``member_state().name == "STABLE"`` once the member settled."""
    snapshots = consumer_protocol_snapshots()
    published(consumer, snapshots[-1][1])
    assert consumer.member_state().name == "STABLE"
    published(consumer, snapshots[2][1])  # reconciling
    assert consumer.member_state().name != "STABLE"
