"""Protocol selection by vote, with Kafka's tie-break.

Kafka ``ClassicGroup.selectProtocol``: the candidates are the protocols every member supports;
each member votes for the first candidate in its own preference order; the most votes wins.
Votes are counted in a ``java.util.HashMap<String, Integer>`` and the winner is taken with
``stream().max(comparingInt(getValue))``, which keeps the *first* maximum in the map's iteration
order. A HashMap iterates by bucket (``(h ^ (h >>> 16)) & (capacity - 1)`` of the key's
``String.hashCode``) and, within a bucket, by insertion. :func:`select_protocol` reproduces that
order, so ties break exactly as on a real broker (bins treeified at 8+ collisions are not modelled).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["candidate_protocols", "java_hashmap_order", "java_string_hash", "select_protocol"]


def java_string_hash(value: str) -> int:
    """``String.hashCode()`` of Java: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 units, as a signed int32."""
    h = 0
    data = value.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def java_hashmap_order(keys_in_insertion_order: Sequence[str]) -> list[str]:
    """The iteration order of a default ``java.util.HashMap`` holding these keys (no removals)."""
    capacity = 16
    while len(keys_in_insertion_order) > capacity * 0.75:
        capacity *= 2

    def bucket(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(keys_in_insertion_order, key=bucket)  # stable: insertion order within a bucket


def candidate_protocols(member_protocols: Sequence[Sequence[str]]) -> set[str]:
    """Protocol names supported by every member (Kafka ``ClassicGroup.candidateProtocols``)."""
    counts: dict[str, int] = {}
    for names in member_protocols:
        for name in names:
            counts[name] = counts.get(name, 0) + 1
    return {name for name, count in counts.items() if count == len(member_protocols)}


def select_protocol(member_protocols: Sequence[Sequence[str]]) -> str | None:
    """The protocol the group uses: vote as Kafka ``ClassicGroup.selectProtocol`` does.

    Args:
        member_protocols: each member's protocol names in its preference order, members in
            group iteration order.

    Returns:
        The selected name, or ``None`` when there is no member or no common protocol.

    """
    if not member_protocols:
        return None
    candidates = candidate_protocols(member_protocols)
    votes: dict[str, int] = {}
    for names in member_protocols:
        vote = _first_candidate(names, candidates)
        if vote is None:
            return None
        votes[vote] = votes.get(vote, 0) + 1
    best: str | None = None
    for name in java_hashmap_order(list(votes)):
        if best is None or votes[name] > votes[best]:
            best = name
    return best


def _first_candidate(names: Iterable[str], candidates: set[str]) -> str | None:
    for name in names:
        if name in candidates:
            return name
    return None
