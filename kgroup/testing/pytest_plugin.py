"""pytest plugin for kgroup's real-broker tests (pytest11 entry point ``kgroup``).

A good citizen: the plugin loads in every pytest run of an environment where kgroup is
installed, so in a project none of whose tests use its fixtures it prints nothing, imports
nothing heavy and asks no Docker engine anything. Header (opt-in: ini option
``kgroup_report_header = true``, or ``$KGROUP_BROKER`` / ``$KGROUP_BOOTSTRAP_SERVERS`` set):
``pytest_report_header`` names the broker that :func:`~kgroup.testing.start_broker`
would select (external address, ``$KGROUP_BROKER``, testcontainers image, or the embedded Tansu
binary and version) without starting it. Brokers are started lazily by the first test that
needs one, at most one per kind for the whole session; their exact addresses, PIDs and log
files, and the time the tests spent on each kind, are printed in the terminal summary.

Broker kinds per test
---------------------
A test (or module, ``pytestmark``; a test's own mark wins over its module's, and a parameter's,
``pytest.param(..., marks=pytest.mark.broker_kinds("tansu"))``, over both) marked
``broker_kinds("tansu", "apache-kafka")`` runs once per kind named, with ids ``[tansu]`` and
``[apache-kafka]``: its ``kafka_broker``,
``kafka_bootstrap``, ``kafka_cluster`` and ``topic_factory`` are that kind's (``broker_kind``
names it). Other tests use the kind :func:`~kgroup.testing.broker.selected_broker_kind` picks
(``$KGROUP_BROKER``, else testcontainers when Docker answers, else Tansu). With
``$KGROUP_BOOTSTRAP_SERVERS`` set the mark is ignored: every test runs once, on that cluster.
The ``[apache-kafka]`` variants need Java 17+ and the jars of
``python -m kgroup.testing.apache_kafka fetch``; without them they are skipped with one line
saying so, or fail with ``KGROUP_REQUIRE_APACHE_KAFKA=1`` (what a CI that must run them sets).
The kinds are a session-scoped parameter, so pytest runs each kind's variants together.

Fixtures:

* ``kafka_brokers`` (session): the session's :class:`BrokerPool`; ``kafka_brokers.get(kind)``
  starts that kind's broker on first use (``None``: the selected kind) and returns its
  :class:`~kgroup.testing.BrokerHandle`. Every broker it started is stopped when the session
  ends; each logs into pytest's ``tmp_path_factory``.
* ``broker_kind`` (session): the kind this test runs on: its ``broker_kinds`` parameter, else
  the selected kind (``"external"`` with ``$KGROUP_BOOTSTRAP_SERVERS``).
* ``kafka_broker`` (session): ``kafka_brokers.get(broker_kind)``. For ``"apache-kafka"`` with
  Java or the Apache Kafka jars missing, every test that needs it is skipped with one line naming
  ``python -m kgroup.testing.apache_kafka fetch`` (with ``KGROUP_REQUIRE_APACHE_KAFKA=1`` they
  fail with :class:`~kgroup.testing.BrokerStartError`). A broker that failed to start is not
  retried: every later test needing that kind fails with the same error.
* ``kafka_bootstrap`` (session): its ``bootstrap_servers`` string.
* ``topic_factory`` (function): ``make_topic(partitions=1, *, prefix="t") -> str`` creates
  a uniquely named topic and returns its name.
* ``group_id_factory`` (function): ``make_group_id(prefix="g") -> str`` returns a unique
  group id containing the test name.
* ``kafka_cluster`` (function): a started :class:`~kgroup.testing.CoordinatorProxy` over the
  test's broker, whose coordinator model uses ``group_initial_rebalance_delay_ms=0`` (Kafka's
  other defaults); stopped after the test. Clients use ``kafka_cluster.bootstrap_servers``;
  the group APIs are then served with Apache Kafka's semantics rather than the broker's, and
  ``kafka_cluster.faults`` injects faults. ``topic_factory`` topics are visible through it.

Markers ``integration``, ``broker_kinds(*kinds)`` and ``tansu_deviation(reason)`` are
registered unless the project configuration already registers them. A test marked
``tansu_deviation(reason)`` cannot pass on the embedded Tansu; on any other broker
(``[apache-kafka]``, ``$KGROUP_BOOTSTRAP_SERVERS``, testcontainers' Apache Kafka) it is an
ordinary test and must pass. On Tansu:

* a ``[tansu]`` variant whose twin on another kind (the same test and parameters, e.g. its
  ``[apache-kafka]`` variant) is also collected is *deselected*: the twin runs the scenario where
  it can pass, and waiting for Tansu to fail it again costs minutes (Tansu's slow joins). The
  terminal summary counts them (``N tansu_deviation variants not run on Tansu: their
  [apache-kafka] twins run``), and pytest's final line includes them in its ``deselected``;
* with ``--tansu-deviations`` those variants run, as strict xfails (below), to check whether
  Tansu still deviates; naming a ``[tansu]`` variant alone (its node id) runs it too, since its
  twin is then not collected (``-k tansu`` does not: ``-k`` matches marker names, so it keeps
  every ``tansu_deviation`` variant, twins included);
* every ``tansu_deviation`` test that does run on Tansu (opted in, without a twin, or every run
  when Tansu is the selected kind and there are no ``broker_kinds`` variants) is a strict xfail:
  it must fail there, so if Tansu ever behaves as Kafka the suite says so.

Tests against the broker must set ``session_timeout_ms`` explicitly (see
:mod:`kgroup.testing.broker`).
"""

from __future__ import annotations

import os
import re
import threading
import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

import pytest

from kgroup.testing.broker import (
    BOOTSTRAP_ENV_VAR,
    BROKER_KINDS,
    BrokerHandle,
    create_topic,
    describe_broker_selection,
    selected_broker_kind,
    start_broker,
)

if TYPE_CHECKING:
    # imported by the kafka_cluster fixture: pytest loads this plugin in every project where
    # kgroup is installed, which must not pay for kafka-python and the coordinator model
    from kgroup.testing.proxy import CoordinatorProxy

__all__ = [
    "BrokerPool",
    "GroupIdFactory",
    "TopicFactory",
    "broker_kind",
    "group_id_factory",
    "kafka_bootstrap",
    "kafka_broker",
    "kafka_brokers",
    "kafka_cluster",
    "topic_factory",
]

_MARKERS: Final = {
    "integration": "integration: talks to a real Kafka-protocol broker (embedded Tansu by default)",
    "broker_kinds": (
        "broker_kinds(*kinds): run the test once per broker kind ('tansu', 'apache-kafka', "
        "'testcontainers'); its kafka_broker, kafka_bootstrap, kafka_cluster and topic_factory "
        "are that kind's"
    ),
    "tansu_deviation": (
        "tansu_deviation(reason): cannot pass on Tansu because the broker deviates from "
        "Apache Kafka; the reason names the deviation"
    ),
}
_POOL_KEY: Final = pytest.StashKey["BrokerPool"]()
_KIND_OF_ITEM_KEY: Final = pytest.StashKey[dict[str, str]]()
#: kind -> [seconds, tests] (setup to teardown), for the terminal summary
_SECONDS_KEY: Final = pytest.StashKey[dict[str, list[float]]]()
#: the user property that carries a test's broker kind to its reports
_KIND_PROPERTY: Final = "kgroup_broker_kind"
_UNSAFE_NAME_CHARS: Final = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_TEST_NAME_CHARS: Final = 80
_NO_BROKER: Final = "no broker"
#: the command-line option that runs the ``[tansu]`` variants of ``tansu_deviation`` tests
TANSU_DEVIATIONS_OPTION: Final = "--tansu-deviations"
#: the ini option that turns the broker line of pytest's header on
HEADER_INI: Final = "kgroup_report_header"
#: twin kinds of the ``tansu_deviation`` variants deselected on Tansu -> how many, for the summary
_DESELECTED_DEVIATIONS_KEY: Final = pytest.StashKey[dict[str, int]]()


class TopicFactory(Protocol):
    """Type of the ``topic_factory`` fixture."""

    def __call__(self, partitions: int = 1, *, prefix: str = "t") -> str:
        """Create a topic with ``partitions`` partitions and return its unique name."""


class GroupIdFactory(Protocol):
    """Type of the ``group_id_factory`` fixture."""

    def __call__(self, prefix: str = "g") -> str:
        """Return a group id not returned before in this process."""


class BrokerPool:
    """The session's brokers: at most one per kind, started on first use, stopped by :meth:`stop_all`.

    ``kind=None`` (and the selected kind itself) starts what :func:`~kgroup.testing.start_broker`
    picks with ``kind=None``, so ``$KGROUP_BOOTSTRAP_SERVERS`` and testcontainers' auto-detection
    apply to it; a named kind starts exactly that kind. Thread-safe.
    """

    def __init__(self, log_dir_factory: pytest.TempPathFactory | None = None) -> None:
        self._log_dirs = log_dir_factory
        self._lock = threading.Lock()
        self._handles: dict[str, BrokerHandle] = {}
        self._failures: dict[str, BaseException] = {}

    def get(self, kind: str | None = None) -> BrokerHandle:
        """Return the running broker of ``kind``, starting it first if needed.

        Raises:
            ValueError: ``kind`` is not one of ``BROKER_KINDS`` (or ``"external"``).
            pytest.skip.Exception: ``"apache-kafka"`` with Java or the jars missing (one line
                naming the fetch command), unless ``KGROUP_REQUIRE_APACHE_KAFKA=1``.
            kgroup.testing.BrokerStartError: the broker could not be started (also on every later
                call for that kind: a failed start is not retried).

        """
        selected = selected_broker_kind()
        wanted = selected if kind is None else kind
        if wanted not in (*BROKER_KINDS, "external"):
            raise ValueError(f"unknown broker kind {wanted!r}: one of {', '.join(BROKER_KINDS)}")
        if wanted == "apache-kafka":
            from kgroup.testing import apache_kafka

            apache_kafka.skip_if_unavailable()
        with self._lock:
            if wanted in self._handles:
                return self._handles[wanted]
            if wanted in self._failures:
                raise self._failures[wanted]
            log_dir: Path | None = None
            if self._log_dirs is not None:
                log_dir = self._log_dirs.mktemp(f"kafka-broker-{wanted}")
            try:
                if wanted == selected:
                    handle = start_broker(log_dir=log_dir)
                else:
                    handle = start_broker(kind=wanted, log_dir=log_dir)
            except Exception as exc:
                self._failures[wanted] = exc
                raise
            self._handles[wanted] = handle
            return handle

    def started(self) -> dict[str, BrokerHandle]:
        """Kind -> handle of every broker started so far."""
        with self._lock:
            return dict(self._handles)

    def stop_all(self) -> None:
        """Stop every broker this pool started (external brokers are left alone)."""
        with self._lock:
            handles = list(self._handles.values())
        for handle in handles:
            handle.stop()


def _external() -> bool:
    return bool(os.environ.get(BOOTSTRAP_ENV_VAR))


def _default_kind() -> str:
    try:
        return selected_broker_kind()
    except ValueError:
        return "invalid"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--tansu-deviations`` and the ``kgroup_report_header`` ini option."""
    parser.addini(
        HEADER_INI,
        type="bool",
        default=False,
        help="print which broker kgroup's fixtures would use in pytest's header (off: the plugin is silent)",
    )
    parser.getgroup("kgroup").addoption(
        TANSU_DEVIATIONS_OPTION,
        action="store_true",
        default=False,
        help=(
            "run the [tansu] variants of tansu_deviation tests (as strict xfails) even when their "
            "twin on another broker kind (e.g. [apache-kafka]) runs; by default they are deselected"
        ),
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register kgroup's markers unless the project configuration already has them."""
    registered = {
        line.split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")
    }
    for name, line in _MARKERS.items():
        if name not in registered:
            config.addinivalue_line("markers", line)
    config.stash[_SECONDS_KEY] = defaultdict(lambda: [0.0, 0.0])
    config.pluginmanager.register(_KindTimer(config), "kgroup-kind-timer")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``broker_kind`` over the kinds a ``broker_kinds`` mark names (session scope)."""
    if "broker_kind" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("broker_kinds")  # a test's own mark wins
    if marker is None or _external():
        return
    kinds = list(dict.fromkeys(marker.args))
    unknown = [kind for kind in kinds if kind not in BROKER_KINDS]
    if unknown or not kinds:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid}: broker_kinds{tuple(marker.args)!r}: name one or more of "
            f"{', '.join(BROKER_KINDS)}"
        )
    metafunc.parametrize("broker_kind", kinds, indirect=True, scope="session", ids=kinds)


def _item_kind(item: pytest.Item, default: str) -> str:
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "broker_kind" in callspec.params:
        return str(callspec.params["broker_kind"])
    return default


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect variants their parameter's ``broker_kinds`` mark leaves out; mark ``tansu_deviation``.

    A ``tansu_deviation(reason)`` test that runs on the embedded Tansu becomes a strict xfail.
    """
    kinds: dict[str, str] = {}
    if not any("broker_kind" in getattr(item, "fixturenames", ()) for item in items):
        # no test here uses kgroup's brokers (a project that merely has kgroup installed): nothing
        # to select, deselect or mark, and no Docker engine to ask which broker would be used
        config.stash[_KIND_OF_ITEM_KEY] = {item.nodeid: _NO_BROKER for item in items}
        return
    default = _default_kind()  # once: it may ping a Docker engine
    kept: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        closest = item.get_closest_marker("broker_kinds")  # a parameter's mark comes first
        if callspec is not None and "broker_kind" in callspec.params and closest is not None:
            (kept if callspec.params["broker_kind"] in closest.args else deselected).append(item)
        else:
            kept.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
    for item in items:
        fixturenames = getattr(item, "fixturenames", ())
        kind = _item_kind(item, default) if "broker_kind" in fixturenames else _NO_BROKER
        kinds[item.nodeid] = kind
        marker = item.get_closest_marker("tansu_deviation")
        if marker is None:
            continue
        reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "")
        if not reason:
            raise pytest.UsageError(f"{item.nodeid}: tansu_deviation needs a reason naming the deviation")
        if _item_kind(item, default) == "tansu":
            item.add_marker(pytest.mark.xfail(reason=f"Tansu deviates: {reason}", strict=True))
    config.stash[_KIND_OF_ITEM_KEY] = kinds
    parallel = config.pluginmanager.hasplugin("xdist")
    for item in items:
        kind = kinds[item.nodeid]
        # the report carries the kind: with pytest-xdist the summary is made from reports
        item.user_properties.append((_KIND_PROPERTY, kind))
        if parallel and kind == "apache-kafka":
            # one worker runs every test on the session's Apache Kafka node (``--dist loadgroup``):
            # one JVM broker per run, the other workers take the rest
            item.add_marker(pytest.mark.xdist_group("apache-kafka"))


def _kind_and_twin_key(item: pytest.Item) -> tuple[str, tuple[str, tuple[tuple[str, str], ...]]] | None:
    """Return the item's ``broker_kind`` parameter and what its twins share, or ``None``.

    Twins share the test and every other parameter; ``None``: no ``broker_kind`` parameter.
    """
    callspec = getattr(item, "callspec", None)
    if callspec is None or "broker_kind" not in callspec.params:
        return None
    params = tuple(sorted((k, repr(v)) for k, v in callspec.params.items() if k != "broker_kind"))
    return str(callspec.params["broker_kind"]), (item.nodeid.split("[", 1)[0], params)


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_tansu_deviations(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect ``[tansu]`` variants of ``tansu_deviation`` tests whose twin also runs.

    The twin is the same test with the same parameters on another broker kind (e.g. its
    ``[apache-kafka]`` variant); nothing is deselected with ``--tansu-deviations`` or
    ``$KGROUP_BOOTSTRAP_SERVERS`` (see the module docstring). A ``pytest_collection_modifyitems``
    of its own that runs last, after every other deselection (``-k``, ``-m``, conftest hooks, the
    ``broker_kinds`` one above): a twin counts only if it runs.
    """
    if config.getoption(TANSU_DEVIATIONS_OPTION) or _external():
        return
    keyed = [(item, _kind_and_twin_key(item)) for item in items]
    twins: dict[tuple[str, tuple[tuple[str, str], ...]], set[str]] = defaultdict(set)
    for _item, kind_key in keyed:
        if kind_key is not None and kind_key[0] != "tansu":
            twins[kind_key[1]].add(kind_key[0])
    kept: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    counts: dict[str, int] = defaultdict(int)
    for item, kind_key in keyed:
        if (
            kind_key is not None
            and kind_key[0] == "tansu"
            and kind_key[1] in twins
            and item.get_closest_marker("tansu_deviation") is not None
        ):
            deselected.append(item)
            counts[", ".join(f"[{kind}]" for kind in sorted(twins[kind_key[1]]))] += 1
        else:
            kept.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
    config.stash[_DESELECTED_DEVIATIONS_KEY] = dict(counts)


class _KindTimer:
    """Times each test (setup, call, teardown) for the per-kind totals in the terminal summary.

    From the reports, so the totals add up on pytest-xdist's controller too.
    """

    def __init__(self, config: pytest.Config) -> None:
        self._totals = config.stash[_SECONDS_KEY]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        kind = str(dict(report.user_properties).get(_KIND_PROPERTY, _NO_BROKER))
        totals = self._totals[kind]
        totals[0] += report.duration
        if report.when == "teardown":
            totals[1] += 1


def pytest_report_header(config: pytest.Config) -> str | None:
    """Name the broker the integration fixtures would use, without starting it.

    Only with the ini option ``kgroup_report_header = true`` (or a ``KGROUP_BROKER`` /
    ``KGROUP_BOOTSTRAP_SERVERS`` environment variable): in other projects the plugin prints nothing.
    """
    if not (config.getini(HEADER_INI) or _external() or os.environ.get("KGROUP_BROKER")):
        return None
    line = describe_broker_selection()
    if _external():
        return f"{line}; broker_kinds marks ignored (every test runs once, on it)"
    return f"{line}; tests marked broker_kinds run on each kind they name"


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    """Print the brokers used, the time spent per kind, the deselected Tansu deviations."""
    pool = config.stash.get(_POOL_KEY, None)
    if pool is not None:
        for kind, handle in sorted(pool.started().items()):
            terminalreporter.write_line(f"{handle.describe()} [used by this session as {kind!r}]")
    totals = config.stash.get(_SECONDS_KEY, {})
    if any(kind != _NO_BROKER for kind in totals):
        parts = [
            f"{kind} {seconds:.1f} s ({int(count)} tests)"
            for kind, (seconds, count) in sorted(totals.items(), key=lambda kv: -kv[1][0])
        ]
        terminalreporter.write_line("time per broker kind (setup+call+teardown): " + ", ".join(parts))
    for twin_kinds, count in sorted(config.stash.get(_DESELECTED_DEVIATIONS_KEY, {}).items()):
        if count == 1:
            line = f"1 tansu_deviation variant not run on Tansu: its {twin_kinds} twin runs"
            opt_in = f"{TANSU_DEVIATIONS_OPTION} runs it as a strict xfail"
        else:
            line = f"{count} tansu_deviation variants not run on Tansu: their {twin_kinds} twins run"
            opt_in = f"{TANSU_DEVIATIONS_OPTION} runs them as strict xfails"
        terminalreporter.write_line(f"{line} ({opt_in})")


@pytest.fixture(scope="session")
def kafka_brokers(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrokerPool]:
    """The session's :class:`BrokerPool`; every broker it started is stopped when the session ends."""
    pool = BrokerPool(tmp_path_factory)
    request.config.stash[_POOL_KEY] = pool
    try:
        yield pool
    finally:
        pool.stop_all()


@pytest.fixture(scope="session")
def broker_kind(request: pytest.FixtureRequest) -> str:
    """The broker kind of this test: its ``broker_kinds`` parameter, else the selected kind."""
    param = getattr(request, "param", None)
    return str(param) if param is not None else selected_broker_kind()


@pytest.fixture(scope="session")
def kafka_broker(kafka_brokers: BrokerPool, broker_kind: str) -> BrokerHandle:
    """The running broker of ``broker_kind`` (started on first use, stopped at session end).

    Raises:
        kgroup.testing.BrokerStartError: the broker failed to start, or ``"apache-kafka"``
            with Java or the jars missing and ``KGROUP_REQUIRE_APACHE_KAFKA=1``.
        pytest.skip.Exception: ``"apache-kafka"`` with Java or the jars missing.

    """
    return kafka_brokers.get(None if broker_kind == "external" else broker_kind)


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_broker: BrokerHandle) -> str:
    """Return the session broker's ``host:port[,host:port...]`` bootstrap string."""
    return kafka_broker.bootstrap_servers


def _test_name(request: pytest.FixtureRequest) -> str:
    name = _UNSAFE_NAME_CHARS.sub("_", request.node.name).strip("._-")
    return name[:_MAX_TEST_NAME_CHARS] or "test"


@pytest.fixture
def topic_factory(kafka_bootstrap: str, request: pytest.FixtureRequest) -> TopicFactory:
    """Return ``make_topic(partitions=1, *, prefix="t") -> str``.

    Each call creates a new topic named ``<prefix>-<test name>-<12 hex digits>`` with
    ``partitions`` partitions, waits until every partition has a leader, and returns the
    name. Raises what :func:`kgroup.testing.create_topic` raises (``ValueError`` for
    ``partitions < 1``, ``TimeoutError`` after 30 s, kafka-python errors).
    """
    test_name = _test_name(request)

    def make_topic(partitions: int = 1, *, prefix: str = "t") -> str:
        name = f"{prefix}-{test_name}-{uuid.uuid4().hex[:12]}"
        create_topic(kafka_bootstrap, name, partitions)
        return name

    return make_topic


@pytest.fixture
def group_id_factory(request: pytest.FixtureRequest) -> GroupIdFactory:
    """Return ``make_group_id(prefix="g") -> str``: ``<prefix>-<test name>-<12 hex digits>``.

    Every call returns a fresh id, so groups never interfere across tests or calls.
    """
    test_name = _test_name(request)

    def make_group_id(prefix: str = "g") -> str:
        return f"{prefix}-{test_name}-{uuid.uuid4().hex[:12]}"

    return make_group_id


@pytest.fixture
def kafka_cluster(kafka_broker: BrokerHandle) -> Iterator[CoordinatorProxy]:
    """Yield a started :class:`~kgroup.testing.CoordinatorProxy` over the session broker.

    Its coordinator model has ``group_initial_rebalance_delay_ms=0``; the proxy is stopped
    after the test.
    """
    from kgroup.testing.coordinator import CoordinatorConfig
    from kgroup.testing.proxy import CoordinatorProxy

    proxy = CoordinatorProxy(
        kafka_broker.bootstrap_servers, config=CoordinatorConfig(group_initial_rebalance_delay_ms=0)
    )
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()
