"""The share consumer's poll-thread driver: ShareFetch and ShareAcknowledge over the pure core (KIP-932).

Runs :mod:`kgroup._share` (share sessions, acknowledgements, acquired records) against the
network port (``ShareGroupTransport``) on the poll thread, as Java's ``ShareConsumeRequestManager``
does on its background thread. Rules:

1. One request per partition leader at a time (its share session's epochs are sequential);
   answers complete on kafka-python's IO thread and only wake the poll thread (the mailbox),
   which handles them.
2. In ``poll()`` a leader gets a ShareFetch when the member is assigned partitions it leads and
   no records fetched from it wait to be handed out; the acknowledgements due for its
   partitions ride on it. Acknowledgements for a leader that gets no fetch (records still
   buffered, partitions no longer assigned) go in a ShareAcknowledge; lock renewals always do
   (``IsRenewAck``), ahead of the leader's other acknowledgements.
3. A commit (``commit_sync``, ``commit_async``) sends a leader's acknowledgements on a ShareFetch
   with ``max_wait_ms`` 0 (KIP-932 lets any ShareFetch of an open session carry them) when its
   share session is open, every partition they are for is still assigned and led by it, no
   records fetched from it wait to be handed out, and no renewal waits for it; else in a
   ShareAcknowledge. The broker applies them, then answers at once with what it could acquire:
   the answer's per-partition acknowledge error codes are the commit's outcomes, and its
   records are buffered for the next ``poll()`` (one round trip per batch, where a
   ShareAcknowledge and then the next poll's ShareFetch took two). A top-level error of that
   fetch is only its acknowledgements' outcome, as a ShareAcknowledge's is. Beyond Java, whose
   ``ShareConsumeRequestManager.commitSync`` always sends a ShareAcknowledge: the outcomes are
   the same, the next batch is acquired at the commit instead of the next ``poll()``.
4. Each answered acknowledgement is an outcome per partition (None, or the typed error of its
   code): the commit returns them, the acknowledgement commit callback gets them on the poll
   thread.
5. Leaders and topic ids come from Metadata; a leader error (REDISCOVER in
   ``kgroup.errors.TABLE[Api.SHARE_FETCH]``) or a request to a leader that got no answer (a lost
   connection, a timeout: the node may be dead) refreshes them.
6. ``close_sessions`` sends every open session its ShareAcknowledge with epoch -1 (the last
   acknowledgements); the broker releases what the member still holds, the records fetched and
   never handed out included (``discard_buffered`` forgets them first; a commit's fetch's too).
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import operator
from collections.abc import Callable, Mapping
from typing import Any
from uuid import UUID

import attrs

from kgroup._clock import Clock
from kgroup._driver.mailbox import Mailbox
from kgroup._driver.records import deserialize
from kgroup._share.acks import InFlight, merge
from kgroup._share.acquired import acquired_offsets, match_acquired
from kgroup._share.session import FetchParams, ShareSession
from kgroup.config import ShareConsumerConfig
from kgroup.errors import Api, Disposition, FatalGroupError, FetchError, KGroupError, broker_error, classify
from kgroup.metrics import ShareRecorder
from kgroup.protocol.share_fetch import (
    ACQUIRE_MODE_BATCH_OPTIMIZED,
    ACQUIRE_MODE_RECORD_LIMIT,
)
from kgroup.types import AcknowledgeType, ShareConsumerRecord, TopicPartition

__all__ = ["AckOutcomes", "ShareFetcher"]

log = logging.getLogger(__name__)

#: per partition: None (acknowledged) or the error its acknowledgements failed with
AckOutcomes = dict[TopicPartition, KGroupError | None]
#: the acknowledgement types that end a record's delivery (the callback reports these)
_FINAL = frozenset({int(AcknowledgeType.ACCEPT), int(AcknowledgeType.RELEASE), int(AcknowledgeType.REJECT)})
#: a record's offset (its third field)
_offset = operator.itemgetter(2)
#: the acknowledgement commit callback, as the fetcher calls it: (offsets by partition, error or None)
Callback = Callable[[Mapping[TopicPartition, frozenset[int]], KGroupError | None], None]


@attrs.frozen
class _Request:
    """A request out to a leader, and the acknowledgements it carries (rule 4)."""

    node: int
    future: concurrent.futures.Future[Any]
    session: ShareSession
    carried: dict[TopicPartition, dict[int, int]]
    fetch: bool
    close: bool = False
    #: a commit's ShareFetch (rule 3): a top-level error is its acknowledgements' outcome only
    commit: bool = False
    #: when it left (clock seconds): the fetch latency metric
    sent_at: float = 0.0


class ShareFetcher:
    """Share sessions, fetches and acknowledgements of one share consumer (the poll thread's only).

    Args:
        config: the share consumer's configuration.
        transport: a ``ShareGroupTransport``.
        mailbox: the poll thread's mailbox (answers notify it).
        clock: the injected clock.
        member_id: the member's id (the share sessions' key at the brokers).
        key_fn, value_fn: the deserializers (``kgroup.deserializers.as_function``'s form).
        metrics: where fetches and acknowledgements are recorded (``ShareConsumer.metrics()``).

    """

    def __init__(self, config: ShareConsumerConfig, transport: Any, mailbox: Mailbox, clock: Clock,
                 member_id: str, key_fn: Any = None, value_fn: Any = None,
                 metrics: ShareRecorder | None = None) -> None:
        consumer = config.consumer
        self.metrics = metrics if metrics is not None else ShareRecorder(clock)
        self._config = config
        self._transport = transport
        self._mailbox = mailbox
        self._clock = clock
        self._key_fn, self._value_fn = key_fn, value_fn
        record_limit = config.share_acquire_mode == "record_limit"
        self._params = FetchParams(
            group_id=consumer.group_id, member_id=member_id, max_wait_ms=consumer.fetch_max_wait_ms,
            min_bytes=consumer.fetch_min_bytes, max_bytes=consumer.fetch_max_bytes,
            max_records=consumer.max_poll_records,
            share_acquire_mode=ACQUIRE_MODE_RECORD_LIMIT if record_limit else ACQUIRE_MODE_BATCH_OPTIMIZED,
        )
        self.inflight = InFlight(config.share_acknowledgement_mode)
        self._sessions: dict[int, ShareSession] = {}
        self._out: dict[int, _Request] = {}
        #: records fetched and not handed out yet: (partition, leader, records)
        self._buffer: collections.deque[tuple[TopicPartition, int, list[ShareConsumerRecord]]] = collections.deque()
        #: acknowledgements taken from ``inflight`` and not sent yet
        self._acks: dict[TopicPartition, dict[int, int]] = {}
        self._renewals: dict[TopicPartition, dict[int, int]] = {}
        #: the leader each partition's records were acquired from (its acknowledgements go there)
        self._acquired_from: dict[TopicPartition, int] = {}
        self._leaders: dict[TopicPartition, Any] = {}
        self._names: dict[UUID, str] = {}
        self._metadata: concurrent.futures.Future[Any] | None = None
        self._metadata_topics: frozenset[str] = frozenset()
        self._metadata_at = 0.0
        self.assigned: frozenset[TopicPartition] = frozenset()
        #: the broker's acquisition lock timeout, from the last answer (None: none yet)
        self.lock_timeout_ms: int | None = None
        self._errors: list[Exception] = []
        self._callbacks: list[tuple[dict[TopicPartition, frozenset[int]], KGroupError | None]] = []
        #: outcomes of acknowledgements answered since the last ``take_outcomes``
        self._outcomes: AckOutcomes = {}
        self._backoff_until: dict[int, float] = {}

    # ------------------------------------------------------------------ the assignment
    def assign(self, partitions: frozenset[TopicPartition]) -> None:
        """The member's partitions now (from the group thread's steps); records of the others are dropped."""
        self.assigned = partitions
        kept: collections.deque[tuple[TopicPartition, int, list[ShareConsumerRecord]]] = collections.deque()
        for entry in self._buffer:
            if entry[0] in partitions:
                kept.append(entry)
            else:  # acquired, never handed out: released for the members that have the partition now
                self.inflight.add(entry[0], {r.offset: int(AcknowledgeType.RELEASE) for r in entry[2]})
        self._buffer = kept

    # ------------------------------------------------------------------ acknowledgements
    def take_acknowledgements(self) -> None:
        """Move what the application acknowledged (implicit mode: everything returned) to the send queue."""
        merge(self._acks, self.inflight.take())
        merge(self._renewals, self.inflight.take_renewals())

    def queued(self) -> frozenset[TopicPartition]:
        """The partitions with acknowledgements queued or out (what a commit waits for)."""
        out = set(self._acks) | set(self._renewals)
        for request in self._out.values():
            out.update(request.carried)
        return frozenset(out)

    def pending(self) -> bool:
        """Acknowledgements are queued or out."""
        return bool(self._acks) or bool(self._renewals) or any(r.carried for r in self._out.values())

    def take_outcomes(self) -> AckOutcomes:
        """The acknowledgement outcomes answered since the last call."""
        out, self._outcomes = self._outcomes, {}
        return out

    def run_callbacks(self, callback: Callback | None) -> None:
        """Call the acknowledgement commit callback with each answered outcome (poll thread).

        An exception it raises propagates to the caller of ``poll()``/``commit_*()``/``close()``
        once the queue is emptied (Java's ``AcknowledgementCommitCallbackHandler``).
        """
        queued, self._callbacks = self._callbacks, []
        if callback is None:
            return
        failure: Exception | None = None
        for offsets, error in queued:
            try:
                callback(offsets, error)
            except Exception as exc:  # the first one is raised, after the others ran
                failure = failure or exc
        if failure is not None:
            raise failure

    # ------------------------------------------------------------------ the loop body
    def step(self, *, fetch: bool, commit: bool = False) -> None:
        """Handle every answer that arrived, then send what is due (rules 1, 2, 3); never blocks.

        ``fetch``: leaders due a fetch get one (``poll()``). ``commit`` (without ``fetch``): the
        acknowledgements due ride a ShareFetch that waits for nothing where rule 3 allows.
        """
        for node, request in list(self._out.items()):
            if request.future.done():
                del self._out[node]
                self._answered(request)
        self._maybe_refresh_metadata()
        now = self._clock.monotonic()
        fetching: set[int] = set()
        if fetch:
            for node, wanted in self._wanted().items():
                if node in self._out or self._buffered_from(node) or self._backoff_until.get(node, 0.0) > now:
                    continue
                self._send_fetch(node, wanted)
                fetching.add(node)
        elif commit:
            fetching = self._send_commit_fetches(now)
        self._send_acknowledgements(fetching)

    def raise_errors(self) -> None:
        """Raise the first error a fetch produced (the others next time)."""
        if self._errors:
            raise self._errors.pop(0)

    def hand_out(self, max_records: int) -> list[ShareConsumerRecord]:
        """Up to ``max_records`` buffered records (deserialized), marked in flight."""
        out: list[ShareConsumerRecord] = []
        while self._buffer and len(out) < max_records:
            tp, node, records = self._buffer[0]
            room = max_records - len(out)
            if len(records) > room:
                take = records[:room]
                self._buffer[0] = (tp, node, records[room:])
            else:
                take = records
                self._buffer.popleft()
            given = self._deserialize(tp, take)
            self.inflight.deliver(tp, map(_offset, given))
            out.extend(given)
        return out

    def has_buffered(self) -> bool:
        """Records wait to be handed out."""
        return bool(self._buffer)

    def idle(self) -> bool:
        """No request is out."""
        return not self._out

    def ready(self) -> bool:
        """Something to do for the poll thread: an answer arrived (for ``Mailbox.wait_until``)."""
        return any(r.future.done() for r in self._out.values()) or (
            self._metadata is not None and self._metadata.done()
        )

    # ------------------------------------------------------------------ close
    def close_sessions(self) -> None:
        """ShareAcknowledge with epoch -1 to every open session idle now, with its last acknowledgements (rule 6)."""
        for node, session in list(self._sessions.items()):
            if node in self._out:
                continue
            acks = self._acks_for(node, self._acks)
            if session.is_new:
                self._fail_unsendable(acks, "its share session is not open")
                del self._sessions[node]
                continue
            request = session.acknowledge(acks, self._topic_ids(), close=True)
            del self._sessions[node]
            if request is not None:
                self._send_acknowledge(node, session, request, acks, close=True)

    def discard_buffered(self) -> None:
        """Forget the records fetched and not handed out (before the sessions' close, which releases them)."""
        self._buffer.clear()

    def closing_done(self) -> bool:
        """Every session is closed and no request is out."""
        return not self._sessions and not self._out

    # ------------------------------------------------------------------ internals
    def _topic_ids(self) -> dict[TopicPartition, UUID]:
        return {tp: leader.topic_id for tp, leader in self._leaders.items()}

    def _wanted(self) -> dict[int, dict[TopicPartition, UUID]]:
        by_node: dict[int, dict[TopicPartition, UUID]] = {}
        for tp in sorted(self.assigned):
            leader = self._leaders.get(tp)
            if leader is None or leader.leader < 0:
                continue
            by_node.setdefault(leader.leader, {})[tp] = leader.topic_id
        # a leader whose session holds partitions no longer assigned still gets the request that forgets them
        for node, session in self._sessions.items():
            if session.partitions and node not in by_node and not session.is_new:
                by_node[node] = {}
        return by_node

    def _buffered_from(self, node: int) -> bool:
        return any(entry[1] == node for entry in self._buffer)

    def _acks_for(
        self, node: int, source: dict[TopicPartition, dict[int, int]]
    ) -> dict[TopicPartition, dict[int, int]]:
        return {tp: acks for tp, acks in source.items() if self._acquired_from.get(tp) == node}

    def _send_fetch(self, node: int, wanted: dict[TopicPartition, UUID], *, commit: bool = False) -> None:
        session = self._sessions.setdefault(node, ShareSession(node, self._params))
        acks = self._acks_for(node, self._acks)
        request, carried = session.fetch(wanted, acks, immediate=commit)
        carried_acks = {tp: self._acks.pop(tp) for tp in carried}
        future = self._transport.share_fetch(node, request, self._config.consumer.request_timeout_ms)
        self.metrics.acknowledgements(sent=_count(carried_acks))
        self._track(_Request(node, future, session, carried_acks, fetch=True, sent_at=self._clock.monotonic(),
                             commit=commit))

    def _send_commit_fetches(self, now: float) -> set[int]:
        """A commit's acknowledgements on a ShareFetch with ``max_wait_ms`` 0 to each leader rule 3 allows."""
        sent: set[int] = set()
        if not self._acks:
            return sent
        wanted = self._wanted()
        renewing = {self._acquired_from.get(tp) for tp in self._renewals}
        for node in sorted({n for tp in self._acks if (n := self._acquired_from.get(tp)) is not None}):
            partitions = wanted.get(node)
            session = self._sessions.get(node)
            if (not partitions or session is None or session.is_new or node in self._out or node in renewing
                    or self._buffered_from(node) or self._backoff_until.get(node, 0.0) > now):
                continue
            if any(tp not in partitions for tp in self._acks_for(node, self._acks)):
                continue  # a partition no longer assigned, or led elsewhere now: all go in a ShareAcknowledge
            self._send_fetch(node, partitions, commit=True)
            sent.add(node)
        return sent

    def _send_acknowledgements(self, fetching: set[int]) -> None:
        for source, renew in ((self._renewals, True), (self._acks, False)):
            for node in sorted({n for tp in source if (n := self._acquired_from.get(tp)) is not None}):
                if node in self._out or node in fetching:
                    continue
                session = self._sessions.get(node)
                acks = self._acks_for(node, source)
                if session is None or session.is_new:
                    if session is None or not self._buffered_from(node):
                        for tp in acks:
                            del source[tp]
                        self._fail_unsendable(acks, "its share session was closed")
                    continue
                topic_ids = self._topic_ids()
                nameless = {tp: source.pop(tp) for tp in list(acks) if tp not in topic_ids}
                if nameless:  # never silently left out (its outcome would read as acknowledged)
                    self._fail_unsendable(nameless, "its topic id is unknown")
                    acks = {tp: a for tp, a in acks.items() if tp in topic_ids}
                request = session.acknowledge(acks, topic_ids, renew=renew)
                if request is None:
                    continue
                for tp in acks:
                    del source[tp]
                self._send_acknowledge(node, session, request, acks)
        for tp in [tp for tp in self._acks if tp not in self._acquired_from]:
            self._fail_unsendable({tp: self._acks.pop(tp)}, "no leader acquired its records")

    def _send_acknowledge(self, node: int, session: ShareSession, request: Any,
                          acks: dict[TopicPartition, dict[int, int]], *, close: bool = False) -> None:
        future = self._transport.share_acknowledge(node, request, self._config.consumer.request_timeout_ms)
        self.metrics.acknowledgements(sent=_count(acks))
        self._track(_Request(node, future, session, acks, fetch=False, close=close))

    def _track(self, request: _Request) -> None:
        self._out[request.node] = request
        request.future.add_done_callback(lambda _f: self._mailbox.notify())

    def _fail_unsendable(self, acks: Mapping[TopicPartition, Mapping[int, int]], why: str) -> None:
        for tp, tp_acks in acks.items():
            error = KGroupError(f"the acknowledgements of {tp.topic}-{tp.partition} cannot be sent: {why}")
            self._outcome(tp, tp_acks, error)

    def _outcome(self, tp: TopicPartition, acks: Mapping[int, int], error: KGroupError | None) -> None:
        """One partition's acknowledgements answered: the commit's outcome; the callback's, but for renewals."""
        if not any(kind for kind in acks.values()):  # gaps alone are nobody's business
            return
        if tp not in self._outcomes or error is not None:
            self._outcomes[tp] = error
        if error is not None:
            self.metrics.acknowledgements(failed=len(acks))
        offsets = frozenset(o for o, kind in acks.items() if kind in _FINAL)
        if offsets:
            self._callbacks.append(({tp: offsets}, error))

    def _answered(self, request: _Request) -> None:
        api = Api.SHARE_FETCH if request.fetch else Api.SHARE_ACKNOWLEDGE
        exc = request.future.exception()
        session = request.session
        if exc is not None:
            session.failed()
            log.debug("group %s: %s to node %d failed: %r", self._params.group_id, api.value, request.node, exc)
            error = exc if isinstance(exc, KGroupError) else KGroupError(f"{api.value} to node {request.node} "
                                                                         f"got no answer: {exc!r}")
            for tp, acks in request.carried.items():
                self._outcome(tp, acks, error)
            self._backoff_until[request.node] = self._clock.monotonic() + self._config.consumer.retry_backoff_ms / 1000
            self._forget_leader(request.node)
            return
        response = request.future.result()
        if response.acquisition_lock_timeout_ms:
            self.lock_timeout_ms = response.acquisition_lock_timeout_ms
        if not request.close:
            session.answered(response.error_code)
        if response.error_code:
            error = broker_error(api, response.error_code, response.error_message or "")
            for tp, acks in request.carried.items():
                self._outcome(tp, acks, error)
            disposition = classify(api, response.error_code)
            if disposition is Disposition.FATAL:
                self._errors.append(FatalGroupError(api, response.error_code, str(error)))
            elif disposition is Disposition.REDISCOVER:
                for tp in list(self._leaders):
                    self._leader_unknown(tp)
            elif disposition is Disposition.RAISE and request.fetch and not request.commit:
                self._errors.append(error)
            if disposition is not Disposition.RETRY_NOW:
                self._backoff_until[request.node] = (
                    self._clock.monotonic() + self._config.consumer.retry_backoff_ms / 1000
                )
            return
        names = {leader.topic_id: tp.topic for tp, leader in self._leaders.items()}
        if request.fetch:  # Java's ShareFetchMetricsManager: per answer, over its partitions
            size = sum(len(part.records or b"") for part in response.partitions)
            acquired = sum(r.last_offset - r.first_offset + 1 for part in response.partitions
                           for r in part.acquired_records or ())
            self.metrics.fetched(self._clock.monotonic() - request.sent_at, size, acquired,
                                 response.throttle_time_ms or 0)
        reported: set[TopicPartition] = set()
        for part in response.partitions:
            topic = names.get(part.topic_id)
            if topic is None:
                continue
            tp = TopicPartition(topic, part.partition)
            code = part.acknowledge_error_code if request.fetch else part.error_code
            if tp in request.carried:
                reported.add(tp)
                message = (part.acknowledge_error_message if request.fetch else part.error_message) or ""
                self._outcome(tp, request.carried[tp], broker_error(api, code, message) if code else None)
            if request.fetch:
                self._fetched(request.node, tp, part)
            elif code and classify(api, code) is Disposition.REDISCOVER:
                self._leader_unknown(tp)
        for tp, acks in request.carried.items():  # a partition the answer did not list: acknowledged
            if tp not in reported:
                self._outcome(tp, acks, None)

    def _forget_leader(self, node: int) -> None:
        """No answer from ``node`` (lost connection, timeout): its partitions' leaders are looked up again (rule 4).

        The node may be gone for good (killed, fenced by the controller): the next Metadata answer
        names the new leaders, and until the controller fences it, the same node again (Java's
        ``ShareConsumeRequestManager`` asks for a metadata update on a failed request).
        """
        for tp, leader in list(self._leaders.items()):
            if leader.leader == node:
                self._leader_unknown(tp)

    def _leader_unknown(self, tp: TopicPartition) -> None:
        """Look ``tp``'s leader up again; its topic id stays (acknowledgements of its records still name it)."""
        leader = self._leaders.get(tp)
        if leader is not None and leader.leader >= 0:
            self._leaders[tp] = attrs.evolve(leader, leader=-1)

    def _fetched(self, node: int, tp: TopicPartition, part: Any) -> None:
        if part.error_code:
            disposition = classify(Api.SHARE_FETCH, part.error_code)
            if disposition is Disposition.REDISCOVER:
                self._leader_unknown(tp)
            elif disposition in (Disposition.RAISE, Disposition.FATAL):
                self._errors.append(broker_error(Api.SHARE_FETCH, part.error_code, part.error_message or "",
                                                 f"partition {tp.topic}-{tp.partition}"))
            return
        if not part.acquired_records:
            return
        self._acquired_from[tp] = node
        try:
            from kgroup._io.share_transport import decode_records

            decoded = decode_records(tp, part.records, check_crcs=self._config.consumer.check_crcs)
        except Exception as exc:  # a corrupt batch: reject what was acquired (Java's ShareCompletedFetch)
            self.inflight.add(tp, {o: int(AcknowledgeType.REJECT) for o in acquired_offsets(part.acquired_records)})
            self._errors.append(FetchError(f"fetched records of {tp.topic}-{tp.partition} are corrupt: {exc}", tp))
            return
        records, gaps = match_acquired(decoded, part.acquired_records)
        if gaps:
            self.inflight.add(tp, gaps)
        if records and tp not in self.assigned:  # the partition went while the fetch was out: release them
            self.inflight.add(tp, {r.offset: int(AcknowledgeType.RELEASE) for r in records})
        elif records:
            self._buffer.append((tp, node, records))

    def _deserialize(self, tp: TopicPartition, records: list[ShareConsumerRecord]) -> list[ShareConsumerRecord]:
        if self._key_fn is None and self._value_fn is None:
            return records
        out: list[ShareConsumerRecord] = []
        for record in records:  # one by one: a failed record is released, the others go on (Java)
            done, failed = deserialize([record], self._key_fn, self._value_fn)  # type: ignore[list-item]
            if failed:
                self.inflight.add(tp, {record.offset: int(AcknowledgeType.RELEASE)})
                self._errors.append(failed[0])
            out.extend(done)  # type: ignore[arg-type]
        return out

    def _maybe_refresh_metadata(self) -> None:
        """Ask for the assigned partitions' leaders and topic ids when some are unknown (rule 5); take an answer."""
        topics = frozenset(tp.topic for tp in self.assigned)
        missing = any(tp not in self._leaders or self._leaders[tp].leader < 0 for tp in self.assigned)
        now = self._clock.monotonic()
        due = now >= self._metadata_at
        if self._metadata is None and topics and due and (missing or not topics <= self._metadata_topics):
            self._metadata_topics = topics
            self._metadata_at = now + self._config.consumer.retry_backoff_ms / 1000
            self._metadata = self._transport.share_metadata(topics, self._config.consumer.request_timeout_ms)
            self._metadata.add_done_callback(lambda _f: self._mailbox.notify())
        future = self._metadata
        if future is not None and future.done():
            self._metadata = None
            if future.exception() is None:
                self._leaders.update(future.result())
            else:
                log.debug("group %s: metadata for share fetching failed: %r", self._params.group_id,
                          future.exception())


def _count(acks: Mapping[TopicPartition, Mapping[int, int]]) -> int:
    """How many record acknowledgements ``acks`` holds (Java's ``Acknowledgements.size()``)."""
    return sum(len(tp_acks) for tp_acks in acks.values())
