"""kgroup._io.crc: the batch CRC-32C, computed without letting go of the GIL."""

from __future__ import annotations

import os
import sys
import threading

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from kafka.record.util import calc_crc32c

from kgroup._io.crc import crc32c, crc_matches


def test_the_crc_is_kafka_pythons() -> None:
    for size in (0, 1, 100, 40_000, 1 << 20):
        data = os.urandom(size)
        assert crc32c(data) == calc_crc32c(memoryview(data))


def test_a_batch_matches_its_crc_until_a_byte_changes() -> None:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i in range(50):
        builder.append(i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=b"v" * 100, headers=[])
    raw = bytes(builder.build())
    assert crc_matches(MemoryRecords(raw).next_batch())
    corrupted = bytearray(raw)
    corrupted[-1] ^= 0xFF
    assert not crc_matches(MemoryRecords(bytes(corrupted)).next_batch())


def test_the_gil_is_held_through_the_crc_of_a_large_buffer() -> None:
    """While another thread waits for the GIL, the CRC of 32 MiB lets it run not even once.

    The ``crc32c`` package lets go of the GIL past 32 KiB by default; a thread that checks batch
    after batch then takes it back before the waiting network thread runs, and CPython never asks
    it to switch (docs in ``kgroup._io.crc``). With a switch interval of a second the waiting
    thread runs only if the call lets go.
    """
    data = os.urandom(32 << 20)
    stop = threading.Event()
    spins = [0]

    def spin() -> None:
        while not stop.is_set():
            spins[0] += 1

    interval = sys.getswitchinterval()
    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        while spins[0] == 0:  # it runs (the main thread waits for its turn here)
            pass
        sys.setswitchinterval(1.0)
        before = spins[0]
        crc32c(data)
        during = spins[0] - before
    finally:
        sys.setswitchinterval(interval)
        stop.set()
        spinner.join(10)
    assert during == 0


@pytest.mark.parametrize("size", [64, 1 << 16])
def test_crc_of_memoryview_slices(size: int) -> None:
    data = os.urandom(size + 21)
    assert crc32c(memoryview(data)[21:]) == calc_crc32c(memoryview(data)[21:])
