"""The examples run end to end as a user would run them: a subprocess, checked by its last line
and exit code, the example itself unchanged.

On ``[tansu]`` an example starts its own embedded broker (``kgroup.testing.start_broker()``
with ``KGROUP_BROKER=tansu``); on ``[apache-kafka]`` the quickstart starts its own Apache Kafka
(``KGROUP_BROKER=apache-kafka python examples/quickstart.py``, as the README says) and the static
membership, exactly-once, parallel-service and work-queue examples are pointed at the session's Apache Kafka with
``KGROUP_BOOTSTRAP_SERVERS``, so that Kafka's own coordinator, not the coordinator proxy the example puts in front of an
embedded broker, serves its group. With ``KGROUP_BOOTSTRAP_SERVERS`` set for the whole run, every
example uses that cluster (inherited from this environment).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kgroup.testing import apache_kafka
from kgroup.testing.broker import BOOTSTRAP_ENV_VAR, BROKER_ENV_VAR

from .harness import BOTH

ROOT = Path(__file__).resolve().parents[2]


def run_example(name: str, timeout_s: float, **env_vars: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.update(env_vars)
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s, check=False,
    )


def broker_env(broker_kind: str) -> dict[str, str]:
    """What selects ``broker_kind`` in a child process (nothing when the run is external)."""
    if broker_kind == "external":
        return {}
    if broker_kind == "apache-kafka":
        apache_kafka.skip_if_unavailable()  # one line naming the fetch command, or fail with REQUIRE
    return {BROKER_ENV_VAR: broker_kind}


def report(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\nstdout:\n{result.stdout[-4000:]}\nstderr:\n{result.stderr[-2000:]}"


@BOTH
def test_static_membership_example_passes(broker_kind, request):
    """examples/static_membership.py: a rolling restart of 3 static members, no rebalance."""
    env = broker_env(broker_kind)
    if broker_kind == "apache-kafka":  # Kafka's own coordinator, not the example's proxy
        env = {BOOTSTRAP_ENV_VAR: request.getfixturevalue("kafka_bootstrap")}
    result = run_example("static_membership.py", timeout_s=120, **env)
    lines = result.stdout.strip().splitlines()
    assert result.returncode == 0, report(result)
    assert lines and lines[-1].startswith("PASS: "), report(result)
    # the timeline names each restart and the generation it came back in
    for i in range(3):
        assert any(f"static-{i}: back as member" in line and "generation" in line for line in lines), report(result)


@pytest.mark.broker_kinds("apache-kafka")
def test_quickstart_passes_on_apache_kafka(broker_kind):
    """``KGROUP_BROKER=apache-kafka python examples/quickstart.py``: the README's quickstart,
    unchanged, on an Apache Kafka node of its own: 100,000 records, 3 members, one leaves and
    one joins, nothing lost, no partition owned twice."""
    started = time.monotonic()
    result = run_example("quickstart.py", timeout_s=240, **broker_env(broker_kind))
    took = time.monotonic() - started
    lines = result.stdout.strip().splitlines()
    assert result.returncode == 0, report(result)
    assert lines and lines[-1].startswith("PASS: 100000/100000 records processed"), report(result)
    # it says how far it got while it runs, not only at the end
    assert sum("records processed; members running:" in line for line in lines) >= 2, report(result)
    if broker_kind == "apache-kafka":
        assert any(line.startswith("kafka broker: apache kafka") for line in lines), report(result)
    print(f"\nquickstart on {broker_kind}: {took:.1f} s; {lines[-1]}")


@pytest.mark.broker_kinds("apache-kafka")
def test_exactly_once_example_passes(broker_kind, request):
    """examples/exactly_once.py's demo on the session's Apache Kafka: two transactional workers,
    one killed with SIGKILL half way; every order in the read_committed output exactly once."""
    env = broker_env(broker_kind)
    if broker_kind == "apache-kafka":  # the session's node, rather than one more of its own
        env = {BOOTSTRAP_ENV_VAR: request.getfixturevalue("kafka_bootstrap")}
    started = time.monotonic()
    result = run_example("exactly_once.py", timeout_s=400, RECORDS="1000", **env)
    lines = result.stdout.strip().splitlines()
    assert result.returncode == 0, report(result)
    assert lines and lines[-1].startswith("PASS: 1000/1000 orders copied exactly once"), report(result)
    assert any(line.startswith("worker-0 killed") for line in lines), report(result)
    print(f"\nexactly_once on {broker_kind}: {time.monotonic() - started:.1f} s; {lines[-1]}")


@pytest.mark.broker_kinds("apache-kafka")
def test_parallel_service_example_passes(broker_kind, request):
    """examples/parallel_service.py's demo on the session's Apache Kafka (its coordinator keeps
    the commit metadata): 2,000 records over 500 keys, 64 at once, every record processed once
    (the poison one dead-lettered), key order held, none lost."""
    env = {**broker_env(broker_kind), "DEMO": "1"}  # the demo and its self-check, on any cluster
    if broker_kind == "apache-kafka":  # the session's node, rather than one more of its own
        env[BOOTSTRAP_ENV_VAR] = request.getfixturevalue("kafka_bootstrap")
    started = time.monotonic()
    result = run_example("parallel_service.py", timeout_s=400, RECORDS="2000", KEYS="500", TIMEOUT_S="300", **env)
    lines = result.stdout.strip().splitlines()
    assert result.returncode == 0, report(result)
    assert lines and lines[-1].startswith("PASS: 2000/2000 records processed (1 dead-lettered), none lost, "
                                          "key order held for 500 keys"), report(result)
    assert "0 processed twice" in lines[-1], report(result)  # one member, no crash: nothing redone
    assert any(line.startswith("stopped: 1999 records processed, 1 dead-lettered") for line in lines), report(result)
    print(f"\nparallel_service on {broker_kind}: {time.monotonic() - started:.1f} s; {lines[-1]}")


@pytest.mark.broker_kinds("apache-kafka")
def test_work_queue_example_passes(broker_kind, request):
    """examples/work_queue.py on the session's Apache Kafka: twelve share-group workers on three
    partitions, the poisoned record rejected and never accepted, a worker SIGKILLed mid-batch and
    what it held redelivered to others with delivery count 2, every other record accepted once."""
    env = broker_env(broker_kind)
    if broker_kind == "apache-kafka":  # the session's node, rather than one more of its own
        env = {BOOTSTRAP_ENV_VAR: request.getfixturevalue("kafka_bootstrap")}
    started = time.monotonic()
    result = run_example("work_queue.py", timeout_s=400, RECORDS="1200", TIMEOUT_S="300", **env)
    lines = result.stdout.strip().splitlines()
    assert result.returncode == 0, report(result)
    assert lines and lines[-1].startswith("PASS: 1199/1199 records accepted exactly once by "), report(result)
    assert "of 12 workers on 3 partitions, 1 poisoned record rejected and never accepted" in lines[-1], report(result)
    assert re.search(r"worker-\d+ killed holding ([1-9]\d*) records: all redelivered to others "
                     r"\(delivery_count 2\)", lines[-1]), report(result)
    busy = int(re.search(r"exactly once by (\d+) of 12", lines[-1]).group(1))
    assert busy > 3, report(result)  # more workers than partitions took records
    assert any(re.match(r"worker-\d+ holds jobs [\d ]+ mid-batch: SIGKILL", line) for line in lines), report(result)
    print(f"\nwork_queue on {broker_kind}: {time.monotonic() - started:.1f} s; {lines[-1]}")
