"""Where kgroup's ``ShareConsumer`` spends its time: cProfile of every thread, one consumer in process.

    python benchmarks/share_profile.py --broker apache-kafka --records 20000

Explicit mode, every record ACCEPT, ``commit_sync()`` after each ``poll()`` (what
``benchmarks/share.py`` runs, without the peer process). Prints records/s, wall and CPU seconds,
the time in ``commit_sync()``, the caller thread's profile by cumulative time and each other
thread's by own time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import resource
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.share import produce_chunks  # noqa: E402
from tests.peers.share import start_share_group_at  # noqa: E402


def profile(bootstrap: str, records: int) -> None:
    from kgroup import AcknowledgeType, ShareConsumer
    from kgroup.admin import GroupAdmin
    from kgroup.testing import create_topic
    from kgroup.types import TopicPartition

    topic = f"share-profile-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 3)
    produce_chunks(bootstrap, topic, records, 100)
    with GroupAdmin.connect(bootstrap, timeout_ms=30000) as admin:
        start_share_group_at(admin, topic, [TopicPartition(topic, p) for p in range(3)], 0)
    threads: list[tuple[str, cProfile.Profile]] = []
    run = threading.Thread.run

    def profiled(self: threading.Thread) -> None:
        p = cProfile.Profile()
        threads.append((self.name, p))
        p.enable()
        try:
            run(self)
        finally:
            p.disable()

    threading.Thread.run = profiled  # type: ignore[method-assign]
    consumer: ShareConsumer[bytes, bytes] = ShareConsumer(bootstrap_servers=bootstrap, group_id=topic,
                                                          share_acknowledgement_mode="explicit")
    consumer.subscribe([topic])
    main = cProfile.Profile()
    main.enable()
    got, first, in_commit = 0, None, 0.0
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    while got < records:
        batch = consumer.poll(100)
        if not batch:
            continue
        first = first or time.monotonic()
        for r in batch:
            consumer.acknowledge(r, AcknowledgeType.ACCEPT)
        t = time.monotonic()
        consumer.commit_sync(30000)
        in_commit += time.monotonic() - t
        got += len(batch)
    end, r1 = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF)
    main.disable()
    consumer.close(10000)
    assert first is not None
    cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    print(f"{records / (end - first):,.0f} records/s, wall {end - first:.2f} s, cpu {cpu:.2f} s, "
          f"in commit_sync {in_commit:.2f} s")
    for name, p, key in [("caller", main, "cumulative"), *((n, q, "tottime") for n, q in threads)]:
        out = io.StringIO()
        pstats.Stats(p, stream=out).sort_stats(key).print_stats(15)
        print(f"--- {name} ---\n{out.getvalue()}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--broker", choices=("default", "tansu", "apache-kafka"), default="apache-kafka")
    parser.add_argument("--records", type=int, default=20_000)
    args = parser.parse_args(argv)
    from kgroup.testing import start_broker

    with start_broker(kind=None if args.broker == "default" else args.broker) as broker:
        profile(broker.bootstrap_servers, args.records)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
