"""Exactly-once consume-transform-produce on Apache Kafka, through a crash and a zombie (KIP-447).

Three worker processes of ``examples/exactly_once.py`` (``tests/integration/eos_worker.py``: the
example's ``--serve`` loop, able to freeze itself mid-transaction) copy every order of a
6-partition input topic to an output topic, each batch in one transaction of kafka-python's
``KafkaProducer`` with its offsets (``send_offsets_to_transaction(offsets,
consumer.group_metadata())``, offsets in kgroup's types). While they run:

Under both group protocols: the classic one on the session's Apache Kafka, the member's own
``session_timeout_ms`` 6 s; the consumer protocol (KIP-848) on the node of
``test_kip848_session_timer.session_broker`` (the group's session timeout lowered to 6 s), its
member epoch in ``group_metadata()``'s generation.

* ``crashed`` is killed with SIGKILL (an open transaction left to the transaction timeout, its
  partitions' next owner waiting for it: the OffsetFetch of a read_committed consumer asks for
  stable offsets);
* ``zombie`` commits one transaction, then in its second sends a batch's records, flushes them
  to the broker and stops itself (SIGSTOP) before its offsets; it stays stopped until the group coordinator removed it
  (its session timeout passed) and ``survivor`` owns every partition, then gets SIGCONT and
  goes on with the generation it had: the coordinator must refuse its offsets (the member is
  gone: UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION, kafka-python's ``CommitFailedError``), and the
  example aborts the transaction and rewinds.

Checked: a read_committed read of the output holds every order exactly once; the zombie's
transaction was refused (its log says so) and none of its records is visible to read_committed,
while read_uncommitted shows they were written. Skipped with one line when Java or the Apache
Kafka jars are missing. ``-s`` prints the timings.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from kgroup.testing import create_topic, produce

from .eos_worker import load_example
from .harness import wait_until
from .test_kip848_session_timer import (  # session_broker: that module's node, shared
    _set_group_session_timeout,
    session_broker,  # noqa: F401
)

pytestmark = pytest.mark.broker_kinds("apache-kafka")

ROOT = Path(__file__).resolve().parents[2]
ORDERS = 3000
PARTITIONS = 6
SESSION_TIMEOUT_MS = 6000
#: the coordinator refused the zombie's offsets (its generation), or the transaction coordinator its
#: producer (had the transaction outlived its timeout): fenced either way, never committed
FENCED = re.compile(
    r"zombie: transaction (\d+) (aborted: CommitFailedError|failed, new producer after ProducerFencedError)"
)


class Worker:
    def __init__(self, name: str, log_dir: Path, env: dict[str, str]) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "integration" / "eos_worker.py")],
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env={**env, "WORKER": name},
        )
        log.close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def commits(self) -> int:
        return self.log().count(f"{self.name}: committed transaction")

    def owns(self) -> list[int] | None:
        """The partitions its listener last said it owns."""
        found = re.findall(rf"{self.name}: \w+ \[[^\]]*\]; owns \[([\d, ]*)\]", self.log())
        return [int(p) for p in found[-1].split(",") if p.strip()] if found else None

    def stopped(self) -> bool:
        """SIGSTOPped (state T in /proc)."""
        try:
            return Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
        except OSError:
            return False

    def tail(self) -> str:
        return f"--- {self.name} (exit {self.proc.poll()}):\n{self.log()[-3000:]}"


@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
def test_every_order_once_through_a_crash_and_a_zombie(
    group_protocol: str, broker_kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    example = load_example()
    started = time.monotonic()
    suffix = uuid.uuid4().hex[:8]
    topic_in, topic_out, group = f"eos-in-{suffix}", f"eos-out-{suffix}", f"eos-{suffix}"
    if group_protocol == "classic":  # the member's session_timeout_ms (SESSION_TIMEOUT_MS below)
        kafka_bootstrap: str = request.getfixturevalue("kafka_bootstrap")
    else:  # the group's session timeout, on a node that allows 6 s (KIP-848: the broker's to set)
        kafka_bootstrap = request.getfixturevalue("session_broker").bootstrap_servers
        _set_group_session_timeout(kafka_bootstrap, group, SESSION_TIMEOUT_MS)
    create_topic(kafka_bootstrap, topic_in, PARTITIONS)
    create_topic(kafka_bootstrap, topic_out, PARTITIONS)
    orders = [f"order-{i}" for i in range(ORDERS)]
    produce(kafka_bootstrap, topic_in, ((o.encode(), o.encode()) for o in orders), timeout_s=120)
    marks: list[str] = []

    def mark(what: str) -> None:
        marks.append(f"{time.monotonic() - started:6.1f} s  {what}")

    mark(f"{ORDERS} orders in {topic_in} ({group_protocol} protocol)")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
        "KGROUP_BOOTSTRAP_SERVERS": kafka_bootstrap, "INPUT": topic_in, "OUTPUT": topic_out, "GROUP": group,
        "GROUP_PROTOCOL": group_protocol, "SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS), "WORK_MS": "4",
        "MAX_POLL_RECORDS": "50", "TRANSACTION_TIMEOUT_MS": "15000",
    }
    workers = {
        "crashed": Worker("crashed", tmp_path, env),
        # its transaction must outlive its stop, so that the group's fencing is what refuses it
        # it stops itself in its second transaction: after one commit, with work left
        "zombie": Worker("zombie", tmp_path, {**env, "STOP_IN_TRANSACTION": "2",
                                              "TRANSACTION_TIMEOUT_MS": "300000"}),
        "survivor": Worker("survivor", tmp_path, env),
    }
    crashed, zombie, survivor = workers["crashed"], workers["zombie"], workers["survivor"]
    try:
        wait_until(lambda: all(w.commits() >= 1 for w in workers.values()), 180,
                   "every worker committing transactions")
        mark("all three committing")
        crashed.proc.kill()  # SIGKILL: no close, its open transaction left behind
        crashed.proc.wait(30)
        mark("crashed: SIGKILL")

        wait_until(lambda: "zombie: stopping itself" in zombie.log() and zombie.stopped(), 120,
                   "the zombie stopped in the middle of a transaction")
        mark("zombie: SIGSTOP with its records flushed, before its offsets")
        # past its session timeout: the coordinator removed it (it owned partitions, which the
        # survivor can only get after that) and the survivor owns everything
        wait_until(lambda: survivor.owns() == list(range(PARTITIONS)), 180,
                   "the survivor owning every partition")
        mark("survivor owns all partitions")
        os.kill(zombie.proc.pid, signal.SIGCONT)
        mark("zombie: SIGCONT")
        wait_until(lambda: FENCED.search(zombie.log()) is not None, 120, "the zombie's transaction refused")
        fenced = FENCED.search(zombie.log())
        assert fenced is not None
        zombie_txn = int(fenced.group(1))
        mark(f"zombie: {fenced.group(2)}")

        def copied() -> int:
            return len(example.read_output(kafka_bootstrap, topic_out, timeout_s=120))

        wait_until(lambda: copied() >= ORDERS, 300, "every order copied", interval_s=1.0)
        mark("every order in the read_committed output")
    except BaseException:
        print("\n".join(marks))
        print("\n".join(w.tail() for w in workers.values()))
        raise
    finally:
        for w in workers.values():
            if w.proc.poll() is None:
                w.proc.send_signal(signal.SIGCONT)
                w.proc.terminate()
        for w in workers.values():
            try:
                w.proc.wait(60)
            except subprocess.TimeoutExpired:
                w.proc.kill()

    committed: list[dict[str, Any]] = example.read_output(kafka_bootstrap, topic_out, timeout_s=120)
    everything: list[dict[str, Any]] = example.read_output(kafka_bootstrap, topic_out, "read_uncommitted",
                                                           timeout_s=120)
    missing, twice = example.exactly_once(orders, committed)
    report = "\n".join(marks) + "\n" + "\n".join(w.tail() for w in workers.values())
    assert not missing and not twice, f"{len(missing)} missing {missing[:5]}, {len(twice)} twice {twice[:5]}\n{report}"
    assert len(committed) == ORDERS
    in_doubt = [r for r in everything if r["by"] == "zombie" and r["txn"] == zombie_txn]
    assert in_doubt, f"the zombie's transaction {zombie_txn} wrote nothing\n{report}"
    assert not [r for r in committed if r["by"] == "zombie" and r["txn"] == zombie_txn], report
    assert survivor.proc.returncode == 0 and zombie.proc.returncode == 0, report
    mark(f"checked: {ORDERS} orders once; the zombie's {len(in_doubt)} records aborted; "
         f"{len(everything) - len(committed)} records in aborted transactions in all")
    print("\n" + "\n".join(marks))
