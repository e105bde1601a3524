"""A worker of ``examples/exactly_once.py`` (its ``--serve``, unchanged) that can freeze itself
in the middle of a transaction, for ``test_exactly_once.py``.

``python tests/integration/eos_worker.py``, with the example's environment and
``STOP_IN_TRANSACTION`` (a transaction number, counted from 1): that transaction sends its
records, flushes them to the broker (an open transaction with data in it), prints
``<name>: stopping itself in transaction <n>`` and sends itself SIGSTOP. (A number, not a signal
from the test: on a loaded machine a worker may have consumed its whole share before the test
gets to send one.) After SIGCONT it goes on as the example does: it sends the offsets with
the group metadata it had, which the group coordinator must fence.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def load_example() -> Any:
    spec = importlib.util.spec_from_file_location("exactly_once_example", ROOT / "examples" / "exactly_once.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    example = load_example()
    stop_at = int(os.environ.get("STOP_IN_TRANSACTION", "0"))
    name = os.environ.get("WORKER", "worker")
    stopped: list[int] = []

    def before_offsets(txn: int, producer: Any) -> None:
        if stop_at and not stopped and txn >= stop_at:
            stopped.append(txn)
            producer.flush()
            print(f"{name}: stopping itself in transaction {txn}", flush=True)
            os.kill(os.getpid(), signal.SIGSTOP)
            print(f"{name}: resumed in transaction {txn}", flush=True)

    code: int = example.worker_main(before_offsets=before_offsets)
    return code


if __name__ == "__main__":
    sys.exit(main())
