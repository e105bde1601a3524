"""A ``kgroup.aio.ParallelProcessor`` in a process of its own, for ``test_aio_parallel.py``'s kill -9.

``python tests/integration/aio_parallel_worker.py BOOTSTRAP TOPIC GROUP OUT``: processes
``TOPIC`` with a 10 ms ``async`` handler, ``ordering="key"``, ``max_concurrency=16``, and appends
``<partition> <offset>`` to ``OUT`` (flushed) as each handler returns, until killed.
"""

from __future__ import annotations

import asyncio
import sys

import kgroup
import kgroup.aio

MAX_CONCURRENCY = 16
COMMIT_INTERVAL_MS = 20


async def main() -> None:
    bootstrap, topic, group, out_path = sys.argv[1:5]
    with open(out_path, "a", buffering=1) as out:

        async def handle(record: kgroup.ConsumerRecord[bytes, bytes]) -> None:
            await asyncio.sleep(0.01)  # the work: not synchronisation
            out.write(f"{record.partition} {record.offset}\n")
            out.flush()

        consumer: kgroup.aio.Consumer[bytes, bytes] = kgroup.aio.Consumer(
            bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False, auto_offset_reset="earliest",
            session_timeout_ms=6000, heartbeat_interval_ms=1000,
        )
        processor = kgroup.aio.ParallelProcessor(
            consumer, handle, max_concurrency=MAX_CONCURRENCY, commit_interval_ms=COMMIT_INTERVAL_MS
        )
        async with processor:
            await processor.subscribe([topic])
            await processor.run()


if __name__ == "__main__":
    asyncio.run(main())
