"""``from kgroup import Consumer`` stays fast: what it loads, checked by module name (no timing here).

It loads ``kgroup.consumer``, ``kgroup.errors`` and the ``K``/``V`` type variables. The attrs
classes (the configuration and its assignors, the membership's events, commands and states, the
group API messages, the transport port, metrics, health, the value types) and attrs itself are
imported by the first ``Consumer(...)`` (``kgroup.consumer._DEFERRED``, bound by ``_import_deferred``); kafka-python and
the group thread at ``subscribe()``/``assign()``/a look-up (``test_import_footprint.py``). The
figures are ``benchmarks/startup.py``'s and ``python -X importtime -c "from kgroup import
Consumer"``'s. Checked in fresh interpreters, since this process has imported everything already.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import kgroup
import kgroup.consumer
from tests.unit.test_import_footprint import modules_after

#: loaded by ``Consumer(...)`` or later, never by ``from kgroup import Consumer``
HEAVY = (
    "attr",
    "attrs",
    "kafka",  # kafka-python
    "aiokafka",
    "tenacity",
    "kgroup.types",
    "kgroup.config",
    "kgroup.assignors",
    "kgroup.assignors.sticky",
    "kgroup.protocol.group_api",
    "kgroup.membership.commands",
    "kgroup.membership.events",
    "kgroup.membership.states",
    "kgroup.membership.machine",
    "kgroup._driver.mailbox",
    "kgroup._driver.group_thread",
    "kgroup._io.transport",
    "kgroup._io.kafka_python",
    "kgroup._retry",
    "kgroup.health",
    "kgroup.metrics",
    "kgroup.listener",
)

#: every kgroup module ``from kgroup import Consumer`` may load: a new one must be as light
#: (no attrs class, no kafka-python) or be listed in ``kgroup.consumer._DEFERRED`` instead
ALLOWED_KGROUP = {
    "kgroup",
    "kgroup._error_codes",
    "kgroup._lazy",
    "kgroup._leaving_api",
    "kgroup._observability_api",
    "kgroup._positions_api",
    "kgroup._typevars",
    "kgroup._version",
    "kgroup.consumer",
    "kgroup.errors",
}


def test_from_kgroup_import_consumer_loads_no_heavy_module():
    loaded = modules_after("from kgroup import Consumer")
    assert "kgroup.consumer" in loaded  # sanity
    heavy = sorted(m for m in loaded if m in HEAVY or m.split(".")[0] in HEAVY)
    assert heavy == [], f"imported with `from kgroup import Consumer`, defer them: {heavy}"
    ours = {m for m in loaded if m.split(".")[0] == "kgroup"}
    assert ours <= ALLOWED_KGROUP, sorted(ours - ALLOWED_KGROUP)


def test_the_constructor_loads_them_and_still_no_network_client():
    """The modules above are the facade's (else the test above is vacuous), loaded by ``Consumer(...)``."""
    loaded = modules_after(
        "from kgroup import Consumer\nConsumer(bootstrap_servers='127.0.0.1:1', group_id='g').close(timeout_ms=0)"
    )
    assert {
        "attrs",
        "kgroup.types",
        "kgroup.config",
        "kgroup.assignors",
        "kgroup.protocol.group_api",
        "kgroup.membership.commands",
        "kgroup.membership.events",
        "kgroup.membership.states",
        "kgroup._driver.mailbox",
        "kgroup._io.transport",
        "kgroup.health",
        "kgroup.metrics",
    } <= loaded
    # as before: the constructor starts nothing; kafka-python and the group thread come with subscribe()
    assert loaded.isdisjoint({"kafka", "kgroup._io.kafka_python", "kgroup._driver.group_thread"})


class _RunTimeNames(ast.NodeVisitor):
    """Names a module reads when its code runs: not annotations, not names a function imports itself."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        self._local: list[set[str]] = [set()]

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for expr in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]:
            if expr is not None:
                self.visit(expr)
        imported = {
            (alias.asname or alias.name).split(".")[0]
            for inner in ast.walk(node)
            if isinstance(inner, (ast.Import, ast.ImportFrom))
            for alias in inner.names
        }
        self._local.append(self._local[-1] | imported)
        for stmt in node.body:
            self.visit(stmt)
        self._local.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.visit(node.target)
        if node.value is not None:
            self.visit(node.value)

    def visit_If(self, node: ast.If) -> None:
        if isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.orelse:
                self.visit(stmt)
        else:
            self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and node.id not in self._local[-1]:
            self.used.add(node.id)


def test_every_deferred_name_the_consumer_uses_is_bound_by_the_constructor():
    """A name imported only under TYPE_CHECKING and read at run time must be in ``_DEFERRED``.

    Else the first method that reads it raises NameError: the one hazard of binding the
    facade's names at construction instead of at import. Each ``_DEFERRED`` entry is one of the
    TYPE_CHECKING imports (``from module import name``), so what type checkers see and what runs
    are the same objects.
    """
    tree = ast.parse(Path(kgroup.consumer.__file__).read_text(encoding="utf-8"))
    type_checking = {
        alias.asname or alias.name: (node.module, alias.name)
        for block in tree.body
        if isinstance(block, ast.If) and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module is not None
        for alias in node.names
    }
    visitor = _RunTimeNames()
    visitor.visit(tree)
    needed = visitor.used & set(type_checking)
    assert {"ConsumerConfig", "Threads", "ListenerSteps", "PollLoop", "MemberState", "Subscribe"} <= needed  # sanity
    deferred = kgroup.consumer._MODULE_OF
    assert needed <= set(deferred), f"read at run time but never bound: {sorted(needed - set(deferred))}"
    for name, module in deferred.items():
        assert type_checking.get(name) == (module, name), f"{name}: not the TYPE_CHECKING import from {module}"


def test_the_deferred_names_resolve_on_attribute_access() -> None:
    """PEP 562: ``kgroup.consumer.X`` imports X on first access; an unknown name is an AttributeError."""
    from kgroup.membership.events import Subscribe

    assert kgroup.consumer.Subscribe is Subscribe
    assert kgroup.consumer.MemberState is kgroup.MemberState
    with pytest.raises(AttributeError, match="NotAName"):
        kgroup.consumer.NotAName  # noqa: B018
