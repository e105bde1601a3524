"""A ``ParallelProcessor`` in a process of its own, for ``test_parallel.py``'s kill -9.

``python tests/integration/parallel_worker.py BOOTSTRAP TOPIC GROUP OUT``: processes ``TOPIC``
with a 10 ms handler, ``ordering="key"``, ``max_concurrency=16``, and appends
``<partition> <offset>`` to ``OUT`` (flushed) as each handler returns, until killed.
"""

from __future__ import annotations

import sys
import threading
import time

import kgroup

MAX_CONCURRENCY = 16
COMMIT_INTERVAL_MS = 20


def main() -> None:
    bootstrap, topic, group, out_path = sys.argv[1:5]
    lock = threading.Lock()
    with open(out_path, "a", buffering=1) as out:

        def handler(record: kgroup.ConsumerRecord) -> None:
            time.sleep(0.01)  # the work: not synchronisation
            with lock:
                out.write(f"{record.partition} {record.offset}\n")
                out.flush()

        consumer = kgroup.Consumer(
            bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False, auto_offset_reset="earliest",
            session_timeout_ms=6000, heartbeat_interval_ms=1000,
        )
        processor = kgroup.ParallelProcessor(
            consumer, handler, max_concurrency=MAX_CONCURRENCY, commit_interval_ms=COMMIT_INTERVAL_MS
        )
        with processor:
            processor.subscribe([topic])
            processor.run()


if __name__ == "__main__":
    main()
