"""The member id kept for life (KIP-1082), OffsetFetch with the member epoch (KIP-848): Apache Kafka 4.4.

1. A ``Consumer(group_protocol="consumer")`` owns a topic; ``unsubscribe()`` takes it out of the
   group (ConsumerGroupDescribe shows no member) and ``subscribe()`` brings it back with the
   member id it had, which ConsumerGroupDescribe reports, at a new epoch: Java 4.x's consumer
   does the same (the member id is generated once, when the consumer is created).
2. OffsetFetch v9 with the member id and epoch: the consumer's ``committed()`` carries them and
   the broker answers the committed offset; the same fetch with a member id the group does not
   know is refused with UNKNOWN_MEMBER_ID and with an epoch the member does not have with
   STALE_MEMBER_EPOCH (so the broker reads both fields), and one without a member is not checked.

About 3 s on the session broker.
"""

from __future__ import annotations

from typing import Any

import pytest

import kgroup
from kgroup._error_codes import NONE, STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID
from kgroup._io.transport import offset_fetch_request
from kgroup.admin import GroupAdmin
from kgroup.protocol.group_api import OffsetFetchRequest
from kgroup.types import Generation, TopicPartition
from tests.integration.harness import all_partitions, poll_until, topic_of_records, wait_until

pytestmark = pytest.mark.broker_kinds("apache-kafka")

WAIT_S = 40.0


def test_unsubscribe_then_subscribe_keeps_the_member_id(
    kafka_bootstrap: str, topic_factory: Any, group_id_factory: Any
) -> None:
    topic = topic_factory(2)
    group = group_id_factory()
    consumer: kgroup.Consumer[bytes, bytes] = kgroup.Consumer(
        bootstrap_servers=kafka_bootstrap, group_id=group, group_protocol="consumer", client_id="kip1082",
        auto_offset_reset="earliest",
    )
    admin = GroupAdmin.connect(kafka_bootstrap, timeout_ms=20000)
    try:
        consumer.subscribe([topic])
        poll_until([consumer], lambda: consumer.assignment() == all_partitions(topic, 2), "the assignment")
        (first,) = admin.describe_group(group).members
        assert first.member_id == consumer.group_metadata().member_id and first.member_epoch

        consumer.unsubscribe()  # the leave heartbeat (-1): the broker removes the member
        wait_until(lambda: not admin.describe_group(group).members, WAIT_S, "the member left", interval_s=0.1)

        consumer.subscribe([topic])
        poll_until([consumer], lambda: consumer.assignment() == all_partitions(topic, 2), "the assignment again")
        (again,) = admin.describe_group(group).members
        assert again.member_id == first.member_id, "a new member id after unsubscribe()/subscribe()"
        assert again.member_epoch is not None and first.member_epoch is not None
        assert again.member_epoch > first.member_epoch
        assert consumer.group_metadata().member_id == first.member_id
    finally:
        consumer.close()
        admin.close()


def test_offset_fetch_carries_the_member_epoch_and_the_broker_checks_it(
    kafka_bootstrap: str, topic_factory: Any, group_id_factory: Any
) -> None:
    topic = topic_of_records(kafka_bootstrap, topic_factory, 2, 3)
    group = group_id_factory()
    tp = TopicPartition(topic, 0)
    consumer: kgroup.Consumer[bytes, bytes] = kgroup.Consumer(
        bootstrap_servers=kafka_bootstrap, group_id=group, group_protocol="consumer", client_id="kip848-fetch",
        auto_offset_reset="earliest", enable_auto_commit=False,
    )
    admin = GroupAdmin.connect(kafka_bootstrap, timeout_ms=20000)
    try:
        consumer.subscribe([topic])
        poll_until([consumer], lambda: consumer.assignment() == all_partitions(topic, 2), "the assignment")
        consumer.commit({tp: kgroup.OffsetAndMetadata(2)})

        # committed(): the consumer's own fetch, with its member id and epoch (recorded on the way out)
        transport = consumer._transport
        assert transport is not None
        sent: list[Generation | None] = []
        fetch = transport.offset_fetch

        def recorded(request: OffsetFetchRequest, *args: Any) -> Any:
            sent.append(None if request.member_id is None else Generation(request.member_epoch, request.member_id))
            return fetch(request, *args)

        transport.offset_fetch = recorded  # type: ignore[method-assign, assignment]
        try:
            found = consumer.committed([tp])
        finally:
            del transport.offset_fetch  # the bound method again
        meta = consumer.group_metadata()
        assert found[tp] is not None and found[tp].offset == 2  # type: ignore[union-attr]
        assert sent == [Generation(meta.generation_id, meta.member_id)] and meta.generation_id > 0

        # the same OffsetFetch v9, by hand: the broker reads the member id and the epoch
        node = admin.find_coordinator(group).node_id

        def answer(member: Generation | None) -> tuple[int, int | None]:
            result = transport.offset_fetch(offset_fetch_request(group, [tp], member=member), node, 10000).result(20)
            committed = result.partitions.get(tp)
            return result.error_code, committed.offset if committed is not None and not result.error_code else None

        epoch, member_id = meta.generation_id, meta.member_id
        assert answer(Generation(epoch, member_id)) == (NONE, 2)
        assert answer(None) == (NONE, 2)  # no member (classic members, admin clients): not checked
        assert answer(Generation(epoch, "not-a-member-of-this-group"))[0] == UNKNOWN_MEMBER_ID
        assert answer(Generation(epoch + 1, member_id))[0] == STALE_MEMBER_EPOCH
    finally:
        consumer.close()
        admin.close()
