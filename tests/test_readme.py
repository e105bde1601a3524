"""The README's Quickstart commands and CI stay in sync."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _quickstart_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```\n(.+?)\n```", section)


def test_readme_quickstart_has_exactly_two_commands():
    commands = _quickstart_commands()
    assert len(commands) == 2
    assert commands[0].endswith("python examples/quickstart.py")
    assert commands[1].endswith("python -m pytest -n 3 --dist loadgroup")


def test_ci_runs_exactly_the_readme_test_command():
    ci_lines = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    test_command = _quickstart_commands()[1]
    assert ci_lines[-1] == test_command


def test_ci_fetches_apache_kafka_and_requires_it_before_the_test_command():
    """CI runs the [apache-kafka] variants for real: jars fetched with the venv's kgroup, and a
    missing Java or jar fails those tests instead of skipping them."""
    ci_lines = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    fetch = ci_lines.index("python -m kgroup.testing.apache_kafka fetch")
    install = next(i for i, line in enumerate(ci_lines) if "pip install" in line and "'.[test]'" in line)
    assert install < fetch < len(ci_lines) - 1
    assert "export KGROUP_REQUIRE_APACHE_KAFKA=1" in ci_lines[fetch:-1]


def _using_it_snippet() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Using it", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.+?)\n```", section, re.S)
    return code


def test_readme_loop_survives_commit_failures_and_stops_on_sigterm(monkeypatch):
    """The README's loop, run against a stand-in consumer: a commit that fails after a slow batch
    (CommitFailedError, then RebalanceInProgressError) is logged and polling goes on; SIGTERM's
    handler wakes the consumer up and the loop ends; ``with`` closes the consumer."""
    import signal

    import kgroup
    from kgroup.errors import Api

    calls: list[str] = []

    class StandIn:
        def __init__(self, **config):
            self.polls = 0
            self.commits = 0

        def __enter__(self):
            return self

        def __exit__(self, *exc_info):
            calls.append("close")

        def subscribe(self, topics, listener=None):
            calls.append(f"subscribe {topics}")

        def poll(self, timeout_ms=0):
            self.polls += 1
            calls.append(f"poll {self.polls}")
            if self.polls == 4:
                signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)  # as the kernel would
            if self.polls >= 4:
                raise kgroup.WakeupError("woken up")
            return [object()]

        def commit(self):
            self.commits += 1
            if self.commits == 1:
                raise kgroup.CommitFailedError("the member has no valid generation (the group rebalanced)")
            if self.commits == 2:
                raise kgroup.RebalanceInProgressError(Api.OFFSET_COMMIT, 27)
            calls.append("committed")

        def wakeup(self):
            calls.append("wakeup")

    monkeypatch.setattr(kgroup, "Consumer", StandIn)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        exec(compile(_using_it_snippet(), "README.md", "exec"), {"__name__": "readme"})
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert calls == [
        "subscribe ['orders']",
        "poll 1",  # its commit fails: CommitFailedError, logged
        "poll 2",  # its commit fails: RebalanceInProgressError, logged
        "poll 3",
        "committed",
        "poll 4",
        "wakeup",
        "close",
    ]
