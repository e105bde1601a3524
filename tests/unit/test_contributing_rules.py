"""The rules of CONTRIBUTING.md that reading the source can check, checked.

Each test names the rule it keeps. They parse files (``ast``), they do not run them, except the
pure-machine test, which imports the machine in a fresh interpreter.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgroup import _error_codes

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "kgroup"

#: kgroup.testing code that waits on real processes or reports wall time: real time, on purpose
REAL_TIME_ALLOWED = {
    "kgroup/_clock.py": "MonotonicClock, the one real clock",
    "kgroup/testing/apache_kafka.py": "starts and stops Apache Kafka JVMs and Maven: waits on real processes",
    "kgroup/testing/broker.py": "starts Tansu processes and containers: waits on real processes and ports",
    "kgroup/testing/_launch.py": "the launchers' readiness probe: waits on a real process and port",
    "kgroup/testing/pytest_plugin.py": "reports the wall time spent per broker kind",
    "kgroup/testing/simulation/_campaign.py": "a simulation campaign's wall-clock budget",
}


def _modules(root: Path = PACKAGE) -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(root.rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(), str(path))


def _imported(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


def _int(node: ast.expr) -> int | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _int(node.operand)
        return None if value is None else -value
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def test_kafka_python_is_imported_only_by_the_adapter() -> None:
    """Rule: kafka-python only behind the adapter (``kgroup/_io``)."""
    found = [
        f"{name}:{line} imports {module}"
        for name, tree in _modules()
        if not name.startswith("kgroup/_io/")
        for line, module in _imported(tree)
        if module == "kafka" or module.startswith("kafka.")
    ]
    assert found == []


def test_only_the_clock_reads_real_time() -> None:
    """Rule: injected time. ``time.monotonic``/``time.sleep``/``time.time`` only in ``kgroup._clock``.

    The harness modules of ``REAL_TIME_ALLOWED`` wait on real processes; each says why.
    """
    found = []
    for name, tree in _modules():
        if name in REAL_TIME_ALLOWED:
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "time"
                and node.attr in ("monotonic", "sleep", "time", "perf_counter")
            ):
                found.append(f"{name}:{node.lineno} time.{node.attr}")
            if isinstance(node, ast.ImportFrom) and node.module == "time":
                found.append(f"{name}:{node.lineno} from time import ...")
    assert found == []


def test_error_codes_are_spelled_only_in_the_error_code_module() -> None:
    """Rule: one error table. No module but ``kgroup._error_codes`` writes an error code as a number."""
    names = {name for name in vars(_error_codes) if name.isupper()}
    found = []
    for name, tree in _modules():
        if name == "kgroup/_error_codes.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name) and target.id.lstrip("_") in names and _int(node.value) is not None:
                        found.append(f"{name}:{node.lineno} defines {target.id}")
            elif isinstance(node, ast.Compare) and isinstance(node.left, (ast.Name, ast.Attribute)):
                if "code" in ast.unparse(node.left).lower():
                    for right in node.comparators:
                        values = right.elts if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else [right]
                        if any(_int(v) not in (None, 0) for v in values):
                            found.append(f"{name}:{node.lineno} {ast.unparse(node)}")
            elif (
                isinstance(node, ast.keyword)
                and node.arg in ("code", "error", "error_code")
                and _int(node.value) not in (None, 0)
            ):
                found.append(f"{name}:{node.value.lineno} {node.arg}={ast.unparse(node.value)}")
    assert found == []


#: a pure package -> a module whose import loads the whole of it
_ENTRY = {"membership": "membership.machine", "_share": "_share.session"}


@pytest.mark.parametrize("package", sorted(_ENTRY))
def test_the_membership_machine_does_no_io(package: str) -> None:
    """Rule: pure machine. ``kgroup.membership`` (and the share consumer's core, ``kgroup._share``) imports no IO,
    threads, clock or retry library."""
    forbidden = {"socket", "ssl", "selectors", "asyncio", "threading", "queue", "time", "concurrent",
                 "kafka", "tenacity", "aiokafka"}
    found = [
        f"{name}:{line} imports {module}"
        for name, tree in _modules(PACKAGE / package)
        for line, module in _imported(tree)
        if module.split(".")[0] in forbidden or module.startswith(("kgroup._io", "kgroup._driver", "kgroup._clock"))
    ]
    assert found == []
    loaded = subprocess.run(
        [sys.executable, "-c", f"import sys, kgroup.{_ENTRY[package]}; print(' '.join(sys.modules))"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout.split()
    assert sorted(m for m in loaded if m.split(".")[0] in ("kafka", "tenacity", "aiokafka")) == []


def test_values_are_frozen() -> None:
    """Rule: values frozen. Every attrs class outside ``kgroup.testing`` is ``attrs.frozen``."""
    found = []
    for name, tree in _modules():
        if name.startswith("kgroup/testing/"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for decorator in node.decorator_list:
                    text = ast.unparse(decorator)
                    if text.startswith(("attrs.define", "attrs.mutable", "attr.s", "dataclass", "dataclasses.")):
                        found.append(f"{name}:{node.lineno} {node.name} is @{text}")
    assert found == []


def test_tests_wait_on_conditions_not_sleeps() -> None:
    """Rule: tests wait on conditions, not sleeps.

    ``time.sleep`` in a test is a condition poll's interval (inside a ``while`` loop) or the
    behaviour under test (a slow callback), said so on its line ("not synchronisation").
    """
    found = []
    for name, tree in _modules(ROOT / "tests"):
        lines = (ROOT / name).read_text().splitlines()
        parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "time.sleep":
                ancestor: ast.AST | None = node
                while ancestor is not None and not isinstance(ancestor, ast.While):
                    ancestor = parents.get(ancestor)
                if ancestor is None and "not synchronisation" not in lines[node.lineno - 1]:
                    found.append(f"{name}:{node.lineno}")
    assert found == []


def test_shipped_text_cites_only_public_sources() -> None:
    """Rule: shipped text cites what a user can open (no team notes, issue numbers, local paths)."""
    private = re.compile(r"\bseeds? 00\d\b|\bissues? #?\d+\b|design\.md|\.\./shared|/work/", re.IGNORECASE)
    files = [*PACKAGE.rglob("*.py"), *(ROOT / "docs").rglob("*.md"), ROOT / "README.md"]
    found = [
        f"{path.relative_to(ROOT)}:{number}: {match.group(0)}"
        for path in sorted(files)
        for number, line in enumerate(path.read_text().splitlines(), 1)
        for match in [private.search(line)]
        if match
    ]
    assert found == []


def _contributing_section(title: str) -> str:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _committed(paths: Iterator[Path]) -> list[Path]:
    """``paths`` git tracks (all of them outside a git checkout): work in progress is not checked yet."""
    listed = subprocess.run(["git", "ls-files", "kgroup"], capture_output=True, text=True, cwd=ROOT)
    if listed.returncode != 0:
        return list(paths)
    tracked = set(listed.stdout.split())
    return [path for path in paths if path.relative_to(ROOT).as_posix() in tracked]


def test_the_layout_map_names_every_module() -> None:
    """CONTRIBUTING.md's layout names each module of ``kgroup`` (a package by its folder), nothing else."""
    named = set(re.findall(r"`(kgroup/[\w/]*?(?:\.py|/))`", _contributing_section("Layout")))
    modules = {
        (path.parent.relative_to(ROOT).as_posix() + "/")
        if path.name == "__init__.py" and path.parent != PACKAGE
        else path.relative_to(ROOT).as_posix()
        for path in _committed(PACKAGE.rglob("*.py"))
    }
    assert sorted(modules - named) == [], "modules missing from CONTRIBUTING.md's layout"
    assert sorted(named - modules) == [], "CONTRIBUTING.md's layout names modules that do not exist"


def test_the_test_index_names_existing_tests() -> None:
    """Every test file or folder CONTRIBUTING.md names exists."""
    named = re.findall(r"`(tests/[\w/.]+)`", (ROOT / "CONTRIBUTING.md").read_text())
    assert named
    assert [name for name in named if not (ROOT / name).exists()] == []
