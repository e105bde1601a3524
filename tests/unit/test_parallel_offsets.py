"""The parallel processor's offset tracker and commit-metadata encoding (``kgroup._parallel.offsets``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup._parallel.offsets import PartitionOffsets, decode_completed, encode_completed


def test_nothing_completed_above_is_empty_metadata():
    assert encode_completed(10, []) == ""
    assert decode_completed("", 10) == frozenset()


def test_a_documented_example():
    # base 100; 102, 103 and 106 completed: bits 1, 2 and 5 of one byte (0x26), shorter than
    # the run lengths (incomplete 2, complete 2, incomplete 2, complete 1: four bytes)
    text = encode_completed(100, [102, 103, 106])
    assert text == "kgp1:100:bJg"
    assert decode_completed(text, 100) == {102, 103, 106}
    # 101 to 200 completed: runs (incomplete 1, complete 100), bytes 0x01 0x64
    text = encode_completed(100, range(101, 201))
    assert text == "kgp1:100:rAWQ"
    assert decode_completed(text, 100) == set(range(101, 201))


def test_the_shorter_kind_is_chosen():
    alternating = list(range(1001, 1400, 2))  # a bit set beats run lengths
    assert encode_completed(1000, alternating).startswith("kgp1:1000:b")
    one_run = list(range(1001, 5000))  # one run: two varints
    assert encode_completed(1000, one_run).startswith("kgp1:1000:r")


def test_metadata_for_another_base_or_another_client_is_ignored():
    text = encode_completed(100, [105])
    assert decode_completed(text, 101) == frozenset()
    for foreign in ("processed by app v2", "kgp1:", "kgp1:100", "kgp1:100:", "kgp1:100:x", "kgp1:x:rAQ",
                    "kgp1:100:r!!", "kgp1:100:r_w", "kgp1:100:rAA"):
        assert decode_completed(foreign, 100) == frozenset(), foreign


def test_a_completed_offset_not_above_the_base_is_refused():
    with pytest.raises(ValueError):
        encode_completed(100, [100])


def test_too_long_keeps_the_lowest_completions_that_fit():
    completed = list(range(1, 200_000, 2))  # 100,000 alternating: a 16 KiB bit set
    text = encode_completed(0, completed, max_chars=4096)
    assert len(text) <= 4096
    kept = sorted(decode_completed(text, 0))
    assert kept == completed[: len(kept)]
    assert len(kept) > 12_000  # a 4 KiB bit set: about 24,000 offsets
    assert encode_completed(0, [1], max_chars=5) == ""


@settings(max_examples=300)
@given(
    base=st.integers(min_value=0, max_value=2**62),
    relative=st.sets(st.integers(min_value=1, max_value=5000), max_size=300),
    max_chars=st.integers(min_value=1, max_value=4096),
)
def test_encoding_round_trips_or_keeps_a_prefix(base, relative, max_chars):
    completed = sorted(base + r for r in relative)
    text = encode_completed(base, completed, max_chars)
    assert len(text) <= max_chars
    assert text.isascii()
    decoded = sorted(decode_completed(text, base))
    assert decoded == completed[: len(decoded)]  # never an offset that is not completed
    if len(encode_completed(base, completed)) <= max_chars:
        assert decoded == completed


def test_tracker_commits_the_first_incomplete_record():
    offsets = PartitionOffsets(committed=10)
    assert offsets.commit_point() == (10, "")
    for o in (10, 11, 12, 14):  # 13 does not exist
        assert offsets.take(o)
    offsets.complete(11)
    offsets.complete(14)
    assert offsets.commit_point() == (10, encode_completed(10, [11, 14]))
    offsets.complete(10)
    assert offsets.commit_offset() == 12
    offsets.complete(12)
    assert offsets.commit_point() == (15, "")
    assert offsets.pending() == 0


def test_tracker_skips_what_the_previous_owner_completed_and_keeps_reporting_it():
    offsets = PartitionOffsets(committed=100, inherited=decode_completed(encode_completed(100, [102, 103, 106]), 100))
    assert offsets.take(100)
    assert offsets.commit_point() == (100, encode_completed(100, [102, 103, 106]))
    assert offsets.take(101)
    assert not offsets.take(102)
    assert not offsets.take(103)
    assert offsets.take(104)  # 105 was compacted away
    assert not offsets.take(106)
    offsets.complete(100)
    offsets.complete(101)
    assert offsets.commit_point() == (104, encode_completed(104, [106]))
    offsets.complete(104)
    assert offsets.commit_point() == (107, "")


def test_tracker_without_a_committed_offset_starts_at_the_first_record():
    offsets = PartitionOffsets()
    assert offsets.commit_point() is None
    offsets.take(500)
    assert offsets.commit_point() == (500, "")
    with pytest.raises(ValueError):
        offsets.take(500)


@settings(max_examples=300)
@given(data=st.data())
def test_committed_offset_is_never_past_an_incomplete_record(data):
    start = data.draw(st.integers(min_value=0, max_value=1000), label="start")
    gaps = data.draw(st.lists(st.integers(min_value=1, max_value=3), min_size=1, max_size=80), label="gaps")
    offsets_taken = []
    o = start
    for gap in gaps:
        offsets_taken.append(o)
        o += gap
    inherited = set(data.draw(st.sets(st.sampled_from(offsets_taken[1:] or [start + 1])), label="inherited"))
    inherited.discard(start)
    tracker = PartitionOffsets(committed=start, inherited=inherited)
    incomplete: set[int] = set()
    completed: set[int] = set(inherited)
    steps = data.draw(st.lists(st.booleans(), max_size=200), label="steps")
    queue = list(offsets_taken)
    for take in steps:
        if take and queue:
            offset = queue.pop(0)
            if tracker.take(offset):
                incomplete.add(offset)
            else:
                assert offset in inherited
        elif incomplete:
            offset = data.draw(st.sampled_from(sorted(incomplete)))
            tracker.complete(offset)
            incomplete.discard(offset)
            completed.add(offset)
        point = tracker.commit_point(data.draw(st.integers(min_value=1, max_value=4096), label="max_chars"))
        assert point is not None
        commit, metadata = point
        assert all(commit <= o for o in incomplete)  # never ahead of unfinished work
        claimed = decode_completed(metadata, commit)
        assert claimed <= completed  # the metadata claims only completed records
        assert not claimed & incomplete
        # every record below the committed offset was completed (or never existed)
        assert all(o in completed for o in offsets_taken if o < commit)
