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
    assert commands[1].endswith("python -m pytest")


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
