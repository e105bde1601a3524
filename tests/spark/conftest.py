"""tests/spark: the kgroup Spark source in local mode against the real broker.

One ``local[2]`` SparkSession for the whole test session (a session costs 6-12 s to start on
a 2-core machine). Spark's Python workers must run this interpreter (``PYSPARK_PYTHON``) and
import kgroup from the same place (``PYTHONPATH``). Every test here is ``integration``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# no skip: the test extra installs PySpark and pyarrow, and a missing one must fail loudly
try:
    import pyarrow  # noqa: F401
    import pyspark  # noqa: F401
except ImportError as exc:  # pragma: no cover - only without the test extra
    raise ImportError(f"tests/spark need PySpark and pyarrow: pip install -e '.[test]' ({exc})") from exc

_HERE = Path(__file__).parent
_ROOT = _HERE.parent.parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(_HERE):
            item.add_marker(pytest.mark.integration)


def spark_env() -> dict[str, str]:
    """Environment for Spark's Python workers (and a child Spark application)."""
    env = dict(os.environ)
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(_ROOT) not in paths:
        paths.insert(0, str(_ROOT))
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def build_session(master: str = "local[2]", app_name: str = "kgroup-tests") -> Any:
    """A local SparkSession tuned for small tests, with the kgroup format registered."""
    os.environ.update(spark_env())
    from pyspark.sql import SparkSession

    import kgroup.spark

    spark = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.schemaInference", "false")
        .config("spark.python.worker.reuse", "true")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "1g")
        # the Python worker's handshake with the JVM (15 s by default) outlasted a loaded
        # machine's start of a streaming source's worker: "Python worker failed to connect back"
        .config("spark.python.authenticate.socketTimeout", "120s")
        # Python workers reach the JVM over a Unix domain socket, not a localhost TCP port: a
        # Kafka client of a parallel test reconnecting to a stopped broker's port, reused for
        # the JVM's worker socket, connected first and failed the secret check ("Python worker
        # failed to connect back", caused by "Authentication failed") in a fresh-clone run
        .config("spark.python.unix.domain.socket.enabled", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    kgroup.spark.register(spark)
    return spark


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The session's local[2] SparkSession, with the kgroup format registered."""
    started = time.monotonic()
    session = build_session()
    session.startup_seconds = time.monotonic() - started  # reported by test_spark_source.py
    try:
        yield session
    finally:
        session.stop()


def wait_for(condition: Callable[[], Any], timeout_s: float, what: str, interval_s: float = 0.25) -> Any:
    """Poll ``condition`` until truthy (returned) or fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(interval_s)
    pytest.fail(f"timed out after {timeout_s} s waiting for {what} (last: {last!r})")
