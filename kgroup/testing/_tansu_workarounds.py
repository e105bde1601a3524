"""Workarounds for the embedded test broker (Tansu), applied by the coordinator proxy to responses it forwards.

Tansu stores and serves records well, but two of its answers differ from Apache Kafka's in ways
a Kafka client notices. :class:`~kgroup.testing.CoordinatorProxy` forwards these APIs to the
broker and, unless told not to, rewrites the answer into Kafka's (the request is then recorded
with ``handled_by == "upstream-fixed"``). Each deviation is listed in ``docs/testing.md``.

* **ListOffsets LATEST** (timestamp -1; ``fix_list_offsets``): Kafka answers the log end offset
  (the high watermark under read_uncommitted, the last stable offset under read_committed; Kafka
  ``UnifiedLog.fetchOffsetByTimestamp``); Tansu answers "base offset of the last batch + 1". The
  proxy forwards the request, then reads the high watermark / last stable offset, which Tansu
  reports correctly, with a Fetch of those partitions (max 1 byte, 1 ms wait) on a side
  connection to the same broker, and rewrites the response.
* **Fetch byte limits** (``fix_fetch_limits``): Kafka's ``ReplicaManager`` honours the request's
  limits (KIP-74): each partition gets at most ``partition_max_bytes``, the response at most
  ``max_bytes``, cut at record-batch boundaries, except that the first non-empty partition
  always keeps its first batch so a consumer makes progress. Tansu ignores both limits and
  returns whole segments.

Both functions return None when there is nothing to change or the message cannot be decoded;
the proxy then forwards Tansu's answer unchanged. Against Apache Kafka they change nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from kgroup._io import kafka_frames as frames

__all__ = ["FETCH", "LIST_OFFSETS", "fix_latest_offsets", "trim_fetch"]

log = logging.getLogger(__name__)

FETCH: Final = 1
LIST_OFFSETS: Final = 2
_LATEST_TIMESTAMP: Final = -1
_FETCH_NAMED_MAX: Final = 12  # Fetch v13+ names topics by id

SideFetch = Callable[[int, Mapping[str, Any]], Awaitable[dict[str, Any]]]
"""``fetch(version, body) -> response body``: a Fetch the proxy sends to the same broker on a side connection."""


def _whole_batches(records: bytes, budget: int, *, keep_first: bool) -> int:
    """Length of the longest prefix of whole record batches within ``budget`` bytes.

    Batches (and legacy message sets) start with an int64 offset and an int32 length of the
    rest. ``keep_first``: the first batch counts even when larger than ``budget`` (KIP-74).
    """
    pos = 0
    while pos + 12 <= len(records):
        size = 12 + int.from_bytes(records[pos + 8 : pos + 12], "big", signed=True)
        if pos + size > len(records) or (pos + size > budget and not (keep_first and pos == 0)):
            break
        pos += size
    return pos


def trim_fetch(version: int, frame: bytes, raw: bytes) -> bytes | None:
    """A Fetch response cut to the request's byte limits (Kafka ``ReplicaManager.readFromLog``).

    Per partition, in response order: at most ``min(partition_max_bytes, what is left of
    max_bytes)`` bytes of whole record batches; the first partition with data keeps its
    first batch even when it is larger (``minOneMessage``, KIP-74). ``frame`` is the request
    (size prefix excluded), ``raw`` the broker's response (size prefix included). None: nothing
    to cut, or a version kafka-python cannot decode (forwarded unchanged).
    """
    kp_range = frames.api_version_range(FETCH)
    if kp_range is None or not kp_range[0] <= version <= kp_range[1] or version < 3:
        return None
    try:
        request = frames.decode_request_body(FETCH, version, frame)
        correlation_id, body = frames.decode_response(FETCH, version, raw[4:])
    except Exception:
        log.warning("cannot decode Fetch v%s; forwarded unchanged", version, exc_info=True)
        return None
    limits: dict[tuple[Any, int], int] = {}
    for topic in request.get("topics") or ():
        key = topic.get("topic", topic.get("topic_id"))
        for part in topic.get("partitions") or ():
            limits[(key, part["partition"])] = int(part.get("partition_max_bytes", 0))
    remaining = int(request.get("max_bytes", 0x7FFFFFFF))
    first = True
    changed = False
    for topic in body.get("responses") or ():
        key = topic.get("topic", topic.get("topic_id"))
        for part in topic.get("partitions") or ():
            records = part.get("records")
            if not records:
                continue
            budget = max(0, min(limits.get((key, part["partition_index"]), 0x7FFFFFFF), remaining))
            cut = _whole_batches(bytes(records), budget, keep_first=first)
            if cut < len(records):
                part["records"] = bytes(records[:cut])
                changed = True
            if cut:
                first = False
                remaining -= cut
    return frames.encode_response(FETCH, version, correlation_id, body) if changed else None


async def fix_latest_offsets(
    version: int, frame: bytes, raw: bytes, fetch: SideFetch, upstream_fetch_versions: tuple[int, int]
) -> bytes | None:
    """A ListOffsets response with Kafka's LATEST answers.

    Each LATEST partition answered without error gets the log end offset the broker's Fetch
    reports (Kafka ``UnifiedLog.fetchOffsetByTimestamp`` for ``LATEST_TIMESTAMP``: the high
    watermark, or the last stable offset under read_committed). ``fetch`` sends that Fetch;
    ``upstream_fetch_versions`` is the broker's Fetch range. None: nothing to fix, or the lookup
    failed (the answer is forwarded).
    """
    kp_range = frames.api_version_range(LIST_OFFSETS)
    if kp_range is None or not kp_range[0] <= version <= kp_range[1]:
        return None
    try:
        request = frames.decode_request_body(LIST_OFFSETS, version, frame)
        latest = {
            (topic["name"], part["partition_index"])
            for topic in request.get("topics") or ()
            for part in topic.get("partitions") or ()
            if part.get("timestamp") == _LATEST_TIMESTAMP
        }
        if not latest:
            return None
        correlation_id, body = frames.decode_response(LIST_OFFSETS, version, raw[4:])
    except Exception:
        log.warning("cannot decode ListOffsets v%s; forwarded unchanged", version, exc_info=True)
        return None
    entries: dict[tuple[str, int], dict[str, Any]] = {}
    for topic in body.get("topics") or ():
        for part in topic.get("partitions") or ():
            key = (topic["name"], part["partition_index"])
            if key in latest and part.get("error_code", 0) == 0 and part.get("offset", -1) >= 0:
                entries[key] = part
    if not entries:
        return None
    isolation = int(request.get("isolation_level", 0) or 0)
    try:
        offsets = {k: e["offset"] for k, e in entries.items()}
        ends = await _log_end_offsets(offsets, isolation, fetch, upstream_fetch_versions)
    except Exception:
        log.warning("high watermark lookup for ListOffsets LATEST failed; Tansu's answer forwarded", exc_info=True)
        return None
    if not ends:
        return None
    for key, end in ends.items():
        entries[key]["offset"] = end
    return frames.encode_response(LIST_OFFSETS, version, correlation_id, body)


async def _log_end_offsets(
    offsets: Mapping[tuple[str, int], int], isolation: int, fetch: SideFetch, upstream_fetch_versions: tuple[int, int]
) -> dict[tuple[str, int], int]:
    """``(topic, partition) -> log end offset`` from one Fetch (max 1 byte, 1 ms wait) at ``offsets``."""
    up_low, up_high = upstream_fetch_versions
    kp_range = frames.api_version_range(FETCH) or (0, -1)
    version = min(up_high, kp_range[1], _FETCH_NAMED_MAX)
    if version < max(up_low, kp_range[0]):
        return {}
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        by_topic.setdefault(topic, []).append((partition, offset))
    request = {
        "replica_id": -1,
        # Tansu answers a Fetch with max_wait_ms=0 with no partitions at all; 1 ms is the least wait
        "max_wait_ms": 1,
        "min_bytes": 0,
        "max_bytes": 1,
        "isolation_level": isolation,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1,
                    }
                    for partition, offset in parts
                ],
            }
            for topic, parts in by_topic.items()
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    response = await fetch(version, request)
    out: dict[tuple[str, int], int] = {}
    for topic in response.get("responses") or ():
        for part in topic.get("partitions") or ():
            if part.get("error_code", 0) != 0:
                continue
            end = part.get("high_watermark", -1)
            stable = part.get("last_stable_offset", -1)
            if isolation == 1 and stable is not None and stable >= 0:
                end = stable
            if end is not None and end >= 0:
                out[(topic["topic"], part["partition_index"])] = int(end)
    return out
