"""Two Spark applications (two processes) with one group.id split a topic's partitions.

Application A (this process's SparkSession) reads phase 1 alone; application B (a child
process with its own local SparkSession) joins; the group moves half the partitions to B
(cooperative-sticky: A commits what it processed when it revokes them). Phase 2 is produced
once the group is stable with both: each application reads a disjoint set of partitions, and
together they write every record exactly once.
"""

from __future__ import annotations

import subprocess
import sys

from tests.spark.conftest import _ROOT, spark_env, wait_for
from tests.spark.test_spark_source import produce_spread, sink_rows, stream


def _rows(spark, path: str) -> list[tuple[int, int]]:
    if sink_rows(spark, path) == 0:
        return []
    return [(r.partition, r.offset) for r in spark.read.parquet(path).select("partition", "offset").collect()]


def _both_members_assigned(cluster, group: str) -> bool:
    events = cluster.model_events(group)
    added = [i for i, e in enumerate(events) if e.kind == "member_added"]
    if len(added) < 2:
        return False
    after = events[added[1]:]
    completed = [e for e in after if e.kind == "generation_completed"]
    # cooperative: one rebalance where A gives partitions up, a second one where B gets them
    return len(completed) >= 2 and after[-1].kind in ("group_stable", "offsets_committed")


def test_two_applications_split_the_partitions_and_write_every_record_once(
    spark, kafka_cluster, topic_factory, group_id_factory, tmp_path
):
    bootstrap = kafka_cluster.bootstrap_servers
    topic, group = topic_factory(4), group_id_factory()
    phase1 = produce_spread(bootstrap, topic, 4, b"one-", 200)
    out_a, out_b = str(tmp_path / "a"), str(tmp_path / "b")
    stop_file, ready_file = tmp_path / "stop", tmp_path / "ready"
    query = (
        stream(spark, kafka_cluster, topic, group)
        .writeStream.format("parquet")
        .option("path", out_a)
        .option("checkpointLocation", str(tmp_path / "ckpt-a"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    child = None
    log = (tmp_path / "b.log").open("wb")
    try:
        wait_for(lambda: sink_rows(spark, out_a) >= 200, 120, "application A to read phase 1")
        child = subprocess.Popen(
            [
                sys.executable, "-m", "tests.spark.spark_app", "--bootstrap", bootstrap, "--topic", topic,
                "--group", group, "--out", out_b, "--checkpoint", str(tmp_path / "ckpt-b"),
                "--stop-file", str(stop_file), "--ready-file", str(ready_file),
            ],
            cwd=_ROOT, env=spark_env(), stdout=subprocess.DEVNULL, stderr=log,
        )
        wait_for(lambda: ready_file.exists() or child.poll() is not None, 120, "application B to start")
        assert child.poll() is None, (tmp_path / "b.log").read_text()[-3000:]
        wait_for(lambda: _both_members_assigned(kafka_cluster, group) or child.poll() is not None, 120,
                 "the group to split between A and B")
        assert child.poll() is None, (tmp_path / "b.log").read_text()[-3000:]
        phase2 = produce_spread(bootstrap, topic, 4, b"two-", 200)
        wait_for(
            lambda: len(_rows(spark, out_a)) + len(_rows(spark, out_b)) >= 400, 120, "A and B to read phase 2"
        )
    finally:
        stop_file.touch()
        query.stop()
        if child is not None:
            try:
                child.wait(120)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait(10)
        log.close()
    assert query.exception() is None
    assert child.returncode == 0, (tmp_path / "b.log").read_text()[-3000:]
    rows_a, rows_b = _rows(spark, out_a), _rows(spark, out_b)
    everything = rows_a + rows_b
    assert len(everything) == len(set(everything)) == 400, "a record was written twice or lost"
    assert set(everything) == {(p, o) for p, o, *_ in phase1 | phase2}
    phase2_offsets = {(p, o) for p, o, *_ in phase2}
    parts_a = {p for p, o in rows_a if (p, o) in phase2_offsets}
    parts_b = {p for p, o in rows_b if (p, o) in phase2_offsets}
    assert parts_a and parts_b, (parts_a, parts_b)
    assert parts_a.isdisjoint(parts_b)
    assert parts_a | parts_b == {0, 1, 2, 3}
