"""examples/service.py as Kubernetes runs it: probes turn ready, metrics count, SIGTERM stops it cleanly.

The example runs unchanged in a subprocess against the session's broker (``[tansu]`` and
``[apache-kafka]``): ``/readyz`` answers 503 until the member has its partitions, then 200;
``/metrics`` counts the records it processed; SIGTERM (what the kubelet sends first) makes it
commit, leave and exit 0 well within its close timeout, and the group's committed offsets cover
every record.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

from kgroup.admin import GroupAdmin
from kgroup.testing import produce

from .harness import BOTH, SESSION_TIMEOUT_MS, wait_until

ROOT = Path(__file__).resolve().parents[2]


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except OSError as error:
        return -1, str(error)


@BOTH
def test_service_example_probes_metrics_and_sigterm(kafka_bootstrap, topic_factory, group_id_factory):
    topic = topic_factory(partitions=3)
    group = group_id_factory("svc")
    env = dict(os.environ)
    env.update(
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p),
        KGROUP_BOOTSTRAP_SERVERS=kafka_bootstrap, TOPIC=topic, GROUP=group, HEALTH_PORT="0",
        PROGRESS_S="1", CLOSE_TIMEOUT_MS="15000", SESSION_TIMEOUT_MS=str(SESSION_TIMEOUT_MS),
        # /readyz turns 200 once the member is stable in a generation, which can be before its
        # first poll() resolved the new partitions' positions: under "latest" a record produced
        # in between would be skipped (as Java's consumer skips it), so read from the start
        AUTO_OFFSET_RESET="earliest",
    )
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "service.py")],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        wait_until(lambda: any(line.startswith("health: ") for line in lines), 30, "the health endpoint")
        base = next(line for line in lines if line.startswith("health: ")).split()[1].rsplit("/", 1)[0]
        base = base.replace("0.0.0.0", "127.0.0.1")
        assert _get(base + "/livez")[0] == 200
        wait_until(lambda: _get(base + "/readyz")[0] == 200, 60, "/readyz to answer 200")
        produce(kafka_bootstrap, topic, [(p, b"k", b"v%d" % i) for i in range(60) for p in (i % 3,)])
        wait_until(
            lambda: f'kafka_consumer_records_consumed_total{{client_id="kgroup",group="{group}"}} 60.0'
            in _get(base + "/metrics")[1],
            60, "/metrics to count 60 records",
        )
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, "".join(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(5)
    last = lines[-1] if lines else ""
    assert last.startswith("stopped: 60 records processed, 0 failed commits"), "".join(lines)
    closed_in = float(last.rsplit("closed in ", 1)[1].split()[0])
    assert closed_in < 15.0, last
    with GroupAdmin.connect(kafka_bootstrap) as admin:
        committed = admin.committed_offsets(group)
    assert sum(om.offset for tp, om in committed.items() if tp.topic == topic) == 60, committed
