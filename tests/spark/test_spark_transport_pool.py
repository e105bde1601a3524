"""An executor's transport serves the worker's next task (``kgroup.spark._pool``), on a real broker.

Spark runs task after task in one Python worker; each ``read_range`` used to open and close its
own transport. Now a range read to its end gives its transport back to the worker's pool and
the next range of the same source takes it: the same object, nothing left over from the task
before (a different partition, or the same one read again from an earlier offset), and a task
abandoned midway closes its transport instead of giving it back.
"""

from __future__ import annotations

from kgroup.spark import parse_options
from kgroup.spark._planner import OffsetRange
from kgroup.spark._pool import POOL
from kgroup.spark._source import read_range
from tests.spark.test_spark_source import produce_exact


def rows(batches) -> list[tuple[int, int, bytes]]:
    return [(r["partition"], r["offset"], r["value"]) for b in batches for r in b.to_pylist()]


def idle_transports() -> list:
    return [transport for _, _, transport in POOL._idle]


def test_ranges_read_one_after_another_share_one_transport(kafka_bootstrap, topic_factory):
    topic = topic_factory(2)
    produce_exact(kafka_bootstrap, topic, [(i % 2, None, b"v%d" % i, []) for i in range(400)])
    options = parse_options({"bootstrap.servers": kafka_bootstrap, "group.id": "unused", "subscribe": topic})
    POOL.close_all()

    first = rows(read_range(options, OffsetRange(topic, 0, 10, 150), batch_rows=64))
    assert first == [(0, o, b"v%d" % (2 * o)) for o in range(10, 150)]
    [transport] = idle_transports()
    assert not transport._closed

    second = rows(read_range(options, OffsetRange(topic, 1, 0, 200)))
    assert second == [(1, o, b"v%d" % (2 * o + 1)) for o in range(200)], "only the new partition's range"
    assert idle_transports() == [transport], "the second task took the first one's transport and gave it back"

    again = rows(read_range(options, OffsetRange(topic, 0, 5, 20)))
    assert again == [(0, o, b"v%d" % (2 * o)) for o in range(5, 20)], "an earlier offset of a partition read before"
    assert idle_transports() == [transport]

    other = parse_options({"bootstrap.servers": kafka_bootstrap, "group.id": "unused", "subscribe": topic,
                           "request.timeout.ms": "30001"})
    assert rows(read_range(other, OffsetRange(topic, 1, 0, 3))) == [(1, o, b"v%d" % (2 * o + 1)) for o in range(3)]
    assert len(idle_transports()) == 2 and idle_transports()[0] is transport, "other properties: a transport of its own"

    abandoned = read_range(options, OffsetRange(topic, 0, 0, 200), batch_rows=8)
    assert len(next(abandoned)) == 8
    assert transport not in idle_transports(), "borrowed by the running task"
    abandoned.close()  # Spark stops reading (a LIMIT reached)
    assert transport._closed and transport not in idle_transports(), "closed, not given back"
    POOL.close_all()
