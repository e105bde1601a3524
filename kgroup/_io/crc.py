"""CRC-32C of record batches (Kafka's v2 batch checksum), for both record decoders.

The ``crc32c`` package's (kgroup's dependency; SSE 4.2 or ARMv8 instructions where the CPU has
them), else aiokafka's C extension's, else kafka-python's ``calc_crc32c``.

The ``crc32c`` package is called with ``gil_release_mode=0``. By default it lets go of the GIL
for every buffer past 32 KiB, and the poll thread, checking batch after batch, took the GIL
back each time before the network thread was scheduled: CPython asks a holder to switch only
when the GIL has not changed hands for a switch interval, and it had, so the network thread
waited up to 220 ms for it with a Fetch to send (1,000 partitions, ``benchmarks/results.md``).
A batch's CRC takes microseconds; holding the GIL through it costs the other threads no more.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

from kgroup._io import quiet_kafka  # noqa: F401  (first: kafka-python, without its import-time warning)

__all__ = ["ATTRIBUTES_OFFSET", "crc32c", "crc_matches"]

#: where a v2 batch's CRC'd bytes start: the attributes (Java ``DefaultRecordBatch.ATTRIBUTES_OFFSET``)
ATTRIBUTES_OFFSET = 21


def _load() -> Callable[[Any], int]:
    try:
        import crc32c as package
    except ImportError:
        pass
    else:
        held: Callable[[Any], int] = functools.partial(package.crc32c, gil_release_mode=0)
        return held
    try:
        cython: Callable[[Any], int] = importlib.import_module("aiokafka.record._crecords").crc32c_cython
        return cython
    except (ImportError, AttributeError):
        pass
    from kafka.record.util import calc_crc32c

    fallback: Callable[[Any], int] = calc_crc32c
    return fallback


#: CRC-32C of a buffer (bytes, memoryview): ``crc32c(data) -> int``
crc32c = _load()


def crc_matches(batch: Any) -> bool:
    """Whether a v2 batch's CRC-32C matches its bytes (kafka-python's ``DefaultRecordBatch.validate_crc``)."""
    return int(batch.crc) == crc32c(memoryview(batch._buffer)[ATTRIBUTES_OFFSET:])
