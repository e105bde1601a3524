"""KIP-227 fetch sessions: the session state of one node's Fetches, for the fetch pipeline.

Fetch sessions (KIP-227; Java's ``FetchSessionHandler``, which kafka-python's mirrors and kgroup
uses): each node's Fetches share one session. The first Fetch to a node is a full one (session
id 0, epoch 0: "create a session"); once the broker answers with a session id, the next Fetches
carry the next epoch and only the partitions added to the node's set or whose fetch position,
epoch or size changed, plus the partitions to forget (no longer fetched from the node: revoked,
paused, holding records, moved to another replica); the broker fetches the unchanged ones at
the positions it keeps, and its response lists only partitions with something to say (records,
a high watermark moved, an error). So a member with a thousand partitions sends and decodes only
what changed. A response the session rejects (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH,
an incremental response naming partitions outside the session, a full response of a session
without all of them) is dropped and the next Fetch is a full one; so is the next after a failed
Fetch. A broker that creates no session (its response's session id 0, as before Fetch v7 or
with the broker's session cache full) gets a full Fetch every time, and such a response is used
whatever partitions it lists (Java would drop a full response that leaves partitions out; Kafka's
brokers never do, the embedded Tansu may, and it creates no sessions). ``PipelinedFetcher.close_sessions``
(called at ``close()``) ends each node's session with epoch -1 (Java ``AbstractFetch.close``),
freeing its slot in the broker's cache (``max.incremental.fetch.session.cache.slots``).
``fetch_sessions()`` counts full and incremental Fetches per node (read by tests and benchmarks).

The rules are kafka-python's ``FetchSessionHandler`` (``kafka.consumer.fetcher``), which
:class:`FetchSession` extends: its ``handle_response``, and its ``build_next`` on tuples.
"""

from __future__ import annotations

from typing import Any

from kgroup._io import quiet_kafka  # noqa: F401  (first: kafka-python, without its import-time warning)

# isort: split
from kafka.consumer.fetcher import FetchMetadata, FetchRequestData, FetchSessionHandler
from kafka.structs import TopicPartition as KTopicPartition

__all__ = ["FETCH_SESSIONS", "FetchSession", "PartitionKey"]

#: KIP-227 fetch sessions on (module docstring); False sends every Fetch full and sessionless
#: (epoch -1), as before them: for comparisons only (the ``kgroup-no-sessions`` client of ``benchmarks/throughput.py``)
FETCH_SESSIONS = True


#: a partition's fetch state in a Fetch: (current leader epoch, fetch offset, last fetched epoch)
PartitionKey = tuple[int, int, int]


class FetchSession(FetchSessionHandler):  # type: ignore[misc]
    """kafka-python's KIP-227 session state of one node, counting its full and incremental Fetches."""

    next_metadata: Any

    def __init__(self, node_id: int) -> None:
        super().__init__(node_id)
        self.full = 0
        self.incremental = 0

    def build_next(self, wanted: dict[KTopicPartition, PartitionKey], make: Any) -> Any:
        """The next Fetch's partitions (kafka-python's ``FetchRequestData``).

        ``wanted``: ``(current leader epoch, fetch offset, last fetched epoch)`` per partition.
        A full Fetch carries every one, an incremental one those added or changed since the
        last, and the ones to forget; ``make(tp, key)`` builds the request's partition entry,
        only for those sent.

        kafka-python's ``build_next`` by the same rules, comparing tuples instead of its
        request objects (whose equality costs microseconds each: a member of a thousand
        partitions compared them on every Fetch).
        """
        if not FETCH_SESSIONS:
            self.full += 1
            return FetchRequestData({tp: make(tp, key) for tp, key in wanted.items()}, None, FetchMetadata.LEGACY)
        if self.next_metadata.is_full:
            self.full += 1
            self.session_partitions = dict(wanted)
            return FetchRequestData({tp: make(tp, key) for tp, key in wanted.items()}, None, self.next_metadata)
        self.incremental += 1
        session = self.session_partitions
        to_send = {}
        for tp, key in wanted.items():
            if session.get(tp) != key:
                session[tp] = key
                to_send[tp] = make(tp, key)
        removed = [tp for tp in session if tp not in wanted] if len(session) > len(wanted) else []
        for tp in removed:
            del session[tp]
        return FetchRequestData(to_send, removed, self.next_metadata)

    def handle_response(self, response: Any) -> bool:
        """Whether ``response`` may be used; moves the session on (kafka-python's rules).

        Except: a full response that created no session (session id 0) is used whatever
        partitions it lists, and the next Fetch is full again (module docstring).
        """
        if not FETCH_SESSIONS or response.API_VERSION < 7:
            return True
        if (response.error_code == 0 and self.next_metadata.is_full
                and getattr(response, "session_id", FetchMetadata.INVALID_SESSION_ID)
                == FetchMetadata.INVALID_SESSION_ID):
            self.next_metadata = FetchMetadata.INITIAL
            return True
        used: bool = super().handle_response(response)
        return used
