"""A second Spark application for test_spark_two_apps.py (run as ``python -m tests.spark.spark_app``).

It reads ``--topic`` as a member of ``--group`` through the kgroup source and writes parquet to
``--out`` until ``--stop-file`` exists. It creates ``--ready-file`` once its query runs.
Exit code 0 on a clean stop, 1 if the query failed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tests.spark.conftest import build_session


def main() -> int:
    parser = argparse.ArgumentParser()
    for name in ("bootstrap", "topic", "group", "out", "checkpoint", "stop-file", "ready-file"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--timeout-s", type=float, default=240)
    args = parser.parse_args()
    spark = build_session("local[1]", "kgroup-tests-second-app")
    try:
        query = (
            spark.readStream.format("kgroup")
            .option("bootstrap.servers", args.bootstrap)
            .option("subscribe", args.topic)
            .option("group.id", args.group)
            .option("startingOffsets", "earliest")
            .option("session.timeout.ms", "6000")
            .option("heartbeat.interval.ms", "1000")
            .load()
            .writeStream.format("parquet")
            .option("path", args.out)
            .option("checkpointLocation", args.checkpoint)
            .trigger(processingTime="200 milliseconds")
            .start()
        )
        Path(args.ready_file).touch()
        deadline = time.monotonic() + args.timeout_s
        while not Path(args.stop_file).exists() and time.monotonic() < deadline and query.isActive:
            time.sleep(0.1)
        failed = query.exception()
        query.stop()
        if failed is not None:
            print(f"query failed: {failed}", file=sys.stderr)
            return 1
        return 0
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
