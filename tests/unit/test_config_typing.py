"""A type checker catches bad configuration keywords before the code runs (PEP 692 TypedDicts).

mypy runs on a snippet that uses kgroup as an application would; the lines marked ``# E`` must be
reported, and nothing else.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

SNIPPET = textwrap.dedent(
    """
    import kgroup
    from kgroup import ConsumerConfig

    good = kgroup.Consumer(bootstrap_servers="h:1", group_id="g", session_timeout_ms=6000)
    good.close(group_membership="leave")
    kgroup.Consumer(ConsumerConfig(bootstrap_servers=["h:1", "h:2"], group_id="g", assignors=("range",)))
    kgroup.Consumer(bootstrap_servers="h:1", group_id="g", auto_offset_reset="earliest", client_rack=None)

    kgroup.Consumer(bootstrap_servers="h:1", group_id="g", session_timeout_ms="oops")  # E
    kgroup.Consumer(bootstrap_servers="h:1", group_id="g", sesion_timeout_ms=6000)  # E
    kgroup.Consumer(bootstrap_servers="h:1", group_id="g", auto_offset_reset="smallest")  # E
    kgroup.Consumer(bootstrap_servers="h:1", group_id="g", enable_auto_commit="false")  # E
    ConsumerConfig(bootstrap_servers="h:1", group_id="g", max_poll_records="500")  # E
    ConsumerConfig(bootstrap_servers="h:1", group_id="g", isolation_level="read-committed")  # E
    ConsumerConfig(group_id="g")  # E
    good.close(group_membership="leav")  # E
    """
)


def test_mypy_catches_bad_configuration_keywords_and_close_policies(tmp_path: Path):
    source = tmp_path / "app.py"
    source.write_text(SNIPPET)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",  # kgroup's own modules are checked by kgroup's CI
            "--ignore-missing-imports",
            "--no-error-summary",
            "--cache-dir",
            str(tmp_path / ".mypy_cache"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )
    reported = {int(m.group(1)) for m in re.finditer(r"^app\.py:(\d+): error", proc.stdout, re.M)}
    expected = {number for number, line in enumerate(SNIPPET.splitlines(), start=1) if line.endswith("# E")}
    assert reported == expected, proc.stdout + proc.stderr
