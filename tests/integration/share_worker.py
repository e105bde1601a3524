"""A share consumer in its own process, for a test to kill (``test_share_consumer.py``).

Not a test module. ``python -m tests.integration.share_worker BOOTSTRAP GROUP TOPIC COUNT``:
subscribes in explicit mode, prints ``fetching`` once it has partitions and a ShareFetch answered,
then polls until it holds ``COUNT`` records without acknowledging them, prints ``held <values>``
and sleeps until killed.
"""

from __future__ import annotations

import sys
import time

from kgroup import ShareConsumer


def main(bootstrap: str, group_id: str, topic: str, count: int) -> None:
    consumer: ShareConsumer[bytes, bytes] = ShareConsumer(
        bootstrap_servers=bootstrap, group_id=group_id, share_acknowledgement_mode="explicit"
    )
    consumer.subscribe([topic])
    held = []
    while not consumer.assignment() or consumer.acquisition_lock_timeout_ms() is None:
        held.extend(consumer.poll(200))
    print("fetching", flush=True)
    while len(held) < count:
        held.extend(consumer.poll(500))
    print("held " + " ".join(sorted(r.value.decode() for r in held if r.value is not None)), flush=True)
    while True:
        time.sleep(60)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
