"""One share session with one partition leader (KIP-932; Java's ``ShareSessionHandler``).

A share consumer keeps a share session with every broker that leads a partition it fetches
from. The broker keys it by (group id, member id): ShareFetch and ShareAcknowledge carry no
session id, only the epoch.

Rules:

1. A new session opens with epoch 0 (``INITIAL_EPOCH``), listing every partition of the
   session. It carries no acknowledgements (the broker refuses them at epoch 0): they wait for
   the next request.
2. Every answered request moves the epoch on (1 after the maximum); the next ShareFetch lists
   only the partitions added (and the ones with acknowledgements) and forgets the removed ones.
3. SHARE_SESSION_NOT_FOUND or INVALID_SHARE_SESSION_EPOCH (the broker evicted the session or
   the epochs parted), or no answer at all, start a new session: epoch 0 again, every
   partition listed. Another top-level error moves the epoch on, as an answer does (Java).
4. A ShareAcknowledge needs an open session (epoch above 0); the close is a ShareAcknowledge
   with epoch -1 (``FINAL_EPOCH``), carrying the last acknowledgements. The broker releases the
   records the member still holds when its session closes.
5. One request per session at a time: the caller waits for an answer before the next.
6. Any ShareFetch of an open session may carry acknowledgements (KIP-932): a commit's goes with
   ``max_wait_ms`` 0 and ``min_bytes`` 1 (``immediate``), so the broker applies them and
   answers at once with what it could acquire.
"""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

import attrs

from kgroup._error_codes import INVALID_SHARE_SESSION_EPOCH, NONE, SHARE_SESSION_NOT_FOUND
from kgroup._share.acks import batches
from kgroup.protocol.share_fetch import (
    ACQUIRE_MODE_BATCH_OPTIMIZED,
    FINAL_EPOCH,
    INITIAL_EPOCH,
    PartitionAcknowledgements,
    ShareAcknowledgeRequest,
    ShareFetchPartition,
    ShareFetchRequest,
    next_epoch,
)
from kgroup.types import TopicPartition

__all__ = ["FetchParams", "ShareSession"]

#: the errors after which the session is started again (rule 3)
SESSION_ERRORS = frozenset({SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH})


@attrs.frozen
class FetchParams:
    """What every ShareFetch of a consumer carries (its configuration)."""

    group_id: str
    member_id: str
    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 52428800
    max_records: int = 500
    share_acquire_mode: int = ACQUIRE_MODE_BATCH_OPTIMIZED


class ShareSession:
    """The share session with one node: its epoch and partitions, and the next request.

    Args:
        node_id: the broker.
        params: the consumer's fetch parameters.

    """

    def __init__(self, node_id: int, params: FetchParams) -> None:
        self.node_id = node_id
        self.params = params
        self.epoch = INITIAL_EPOCH
        #: the partitions of the session (as the broker has them once the request is answered)
        self.partitions: dict[TopicPartition, UUID] = {}

    @property
    def is_new(self) -> bool:
        """The next request opens a session (epoch 0)."""
        return self.epoch == INITIAL_EPOCH

    def fetch(
        self, wanted: Mapping[TopicPartition, UUID], acks: Mapping[TopicPartition, Mapping[int, int]],
        *, immediate: bool = False,
    ) -> tuple[ShareFetchRequest, frozenset[TopicPartition]]:
        """The next ShareFetch: fetch ``wanted``, acknowledge ``acks`` (rules 1, 2).

        ``immediate``: ``max_wait_ms`` 0 and ``min_bytes`` 1, so the broker answers at once
        with what it can acquire (a commit's fetch, rule 6).

        Returns:
            The request, and the partitions whose acknowledgements it carries (the rest of
            ``acks`` stays with the caller: a new session carries none, and only partitions
            in ``wanted`` carry theirs).

        """
        parts: list[ShareFetchPartition] = []
        forgotten: list[tuple[UUID, int]] = []
        carried: set[TopicPartition] = set()
        if self.is_new:
            self.partitions = dict(wanted)
            parts = [ShareFetchPartition(topic_id, tp.partition) for tp, topic_id in wanted.items()]
        else:
            for tp, topic_id in list(self.partitions.items()):
                if wanted.get(tp) != topic_id:  # removed, or the topic was recreated
                    forgotten.append((topic_id, tp.partition))
                    del self.partitions[tp]
            for tp, topic_id in wanted.items():
                tp_acks = acks.get(tp)
                if tp in self.partitions and not tp_acks:
                    continue
                self.partitions[tp] = topic_id
                if tp_acks:
                    carried.add(tp)
                parts.append(ShareFetchPartition(topic_id, tp.partition, batches(tp_acks) if tp_acks else ()))
        p = self.params
        request = ShareFetchRequest(
            group_id=p.group_id, member_id=p.member_id, share_session_epoch=self.epoch,
            max_wait_ms=0 if immediate else p.max_wait_ms, min_bytes=1 if immediate else p.min_bytes,
            max_bytes=p.max_bytes,
            max_records=p.max_records, batch_size=p.max_records, share_acquire_mode=p.share_acquire_mode,
            partitions=tuple(parts), forgotten=tuple(forgotten),
        )
        return request, frozenset(carried)

    def acknowledge(
        self, acks: Mapping[TopicPartition, Mapping[int, int]], topic_ids: Mapping[TopicPartition, UUID],
        *, renew: bool = False, close: bool = False,
    ) -> ShareAcknowledgeRequest | None:
        """A ShareAcknowledge of ``acks`` (rule 4); ``close``: with epoch -1. None without an open session."""
        if self.is_new:
            return None
        parts = tuple(
            PartitionAcknowledgements(topic_ids[tp], tp.partition, batches(tp_acks))
            for tp, tp_acks in acks.items() if tp_acks and tp in topic_ids
        )
        p = self.params
        return ShareAcknowledgeRequest(
            group_id=p.group_id, member_id=p.member_id,
            share_session_epoch=FINAL_EPOCH if close else self.epoch, partitions=parts, is_renew_ack=renew,
        )

    def answered(self, error_code: int) -> bool:
        """The request was answered with the top-level ``error_code``; True when the session goes on (rules 2, 3)."""
        if error_code in SESSION_ERRORS:
            self.reset()
            return False
        self.epoch = next_epoch(self.epoch)
        return error_code == NONE

    def failed(self) -> None:
        """The request got no answer (disconnect, timeout): a new session next time (rule 3)."""
        self.reset()

    def reset(self) -> None:
        """Start again with epoch 0 (after an error, or once the session was closed)."""
        self.epoch = INITIAL_EPOCH
        self.partitions = {}
