"""pytest plugin for kgroup's real-broker tests (pytest11 entry point ``kgroup``).

Header: ``pytest_report_header`` names the broker that :func:`~kgroup.testing.start_broker`
would select (external address, testcontainers image, or the embedded Tansu binary and
version) without starting it. The broker is started lazily by the first test that needs
the ``kafka_broker`` fixture; its exact address, PID and log file are printed in the
terminal summary.

Fixtures:

* ``kafka_broker`` (session): the :class:`~kgroup.testing.BrokerHandle`; stopped at the
  end of the session. The embedded broker's log goes to pytest's ``tmp_path_factory``. With
  ``KGROUP_BROKER=apache-kafka`` and Java or the Apache Kafka jars missing, every test that
  needs it is skipped with one line naming ``python -m kgroup.testing.apache_kafka fetch``
  (with ``KGROUP_REQUIRE_APACHE_KAFKA=1`` they fail with :class:`~kgroup.testing.BrokerStartError`).
* ``kafka_bootstrap`` (session): its ``bootstrap_servers`` string.
* ``topic_factory`` (function): ``make_topic(partitions=1, *, prefix="t") -> str`` creates
  a uniquely named topic and returns its name.
* ``group_id_factory`` (function): ``make_group_id(prefix="g") -> str`` returns a unique
  group id containing the test name.
* ``kafka_cluster`` (function): a started :class:`~kgroup.testing.CoordinatorProxy` over the
  session broker, whose coordinator model uses ``group_initial_rebalance_delay_ms=0`` (Kafka's
  other defaults); stopped after the test. Clients use ``kafka_cluster.bootstrap_servers``;
  the group APIs are then served with Apache Kafka's semantics rather than the broker's, and
  ``kafka_cluster.faults`` injects faults. ``topic_factory`` topics are visible through it.

Markers ``integration`` and ``tansu_deviation(reason)`` are registered unless the project
configuration already registers them. A test marked ``tansu_deviation(reason)`` becomes a
strict xfail when the session's broker is the embedded Tansu (it must fail there: if Tansu
ever behaves as Kafka, the suite says so) and an ordinary test against any other broker
(``KGROUP_BOOTSTRAP_SERVERS``, ``KGROUP_BROKER=apache-kafka`` or testcontainers' Apache
Kafka), where it must pass. Tests against the broker must set
``session_timeout_ms`` explicitly (see :mod:`kgroup.testing.broker`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Final, Protocol

import pytest

from kgroup.testing.broker import (
    BrokerHandle,
    create_topic,
    describe_broker_selection,
    selected_broker_kind,
    start_broker,
)
from kgroup.testing.coordinator import CoordinatorConfig
from kgroup.testing.proxy import CoordinatorProxy

__all__ = [
    "GroupIdFactory",
    "TopicFactory",
    "group_id_factory",
    "kafka_bootstrap",
    "kafka_broker",
    "kafka_cluster",
    "topic_factory",
]

_MARKERS: Final = {
    "integration": "integration: talks to a real Kafka-protocol broker (embedded Tansu by default)",
    "tansu_deviation": (
        "tansu_deviation(reason): cannot pass on Tansu because the broker deviates from "
        "Apache Kafka; the reason names the deviation"
    ),
}
_BROKER_KEY: Final = pytest.StashKey[BrokerHandle]()
_UNSAFE_NAME_CHARS: Final = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_TEST_NAME_CHARS: Final = 80


class TopicFactory(Protocol):
    """Type of the ``topic_factory`` fixture."""

    def __call__(self, partitions: int = 1, *, prefix: str = "t") -> str:
        """Create a topic with ``partitions`` partitions and return its unique name."""


class GroupIdFactory(Protocol):
    """Type of the ``group_id_factory`` fixture."""

    def __call__(self, prefix: str = "g") -> str:
        """Return a group id not returned before in this process."""


def pytest_configure(config: pytest.Config) -> None:
    """Register kgroup's markers unless the project configuration already has them."""
    registered = {
        line.split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")
    }
    for name, line in _MARKERS.items():
        if name not in registered:
            config.addinivalue_line("markers", line)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the embedded Tansu, ``tansu_deviation(reason)`` tests are strict xfails."""
    marked: list[tuple[pytest.Item, pytest.Mark]] = []
    for item in items:
        marker = item.get_closest_marker("tansu_deviation")
        if marker is not None:
            marked.append((item, marker))
    if not marked or selected_broker_kind() != "tansu":
        return
    for item, marker in marked:
        reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "")
        if not reason:
            raise pytest.UsageError(f"{item.nodeid}: tansu_deviation needs a reason naming the deviation")
        item.add_marker(pytest.mark.xfail(reason=f"Tansu deviates: {reason}", strict=True))


def pytest_report_header(config: pytest.Config) -> str:
    """Name the broker the integration fixtures would use, without starting it."""
    return describe_broker_selection()


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    """Print the exact broker used, if a test started one."""
    handle = config.stash.get(_BROKER_KEY, None)
    if handle is not None:
        terminalreporter.write_line(f"{handle.describe()} [used by this session]")


@pytest.fixture(scope="session")
def kafka_broker(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrokerHandle]:
    """Start the session's broker on first use and stop it when the session ends.

    Raises:
        kgroup.testing.BrokerStartError: the embedded broker failed to start, or
            ``KGROUP_BROKER=apache-kafka`` with Java or the jars missing and
            ``KGROUP_REQUIRE_APACHE_KAFKA=1``.
        pytest.skip.Exception: ``KGROUP_BROKER=apache-kafka`` with Java or the jars missing.

    """
    if selected_broker_kind() == "apache-kafka":
        from kgroup.testing import apache_kafka

        apache_kafka.skip_if_unavailable()
    handle = start_broker(log_dir=tmp_path_factory.mktemp("kafka-broker"))
    request.config.stash[_BROKER_KEY] = handle
    try:
        yield handle
    finally:
        handle.stop()


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
    proxy = CoordinatorProxy(
        kafka_broker.bootstrap_servers, config=CoordinatorConfig(group_initial_rebalance_delay_ms=0)
    )
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()
