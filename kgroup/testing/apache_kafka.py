"""Apache Kafka's own broker for kgroup's tests: jars from Maven Central, KRaft nodes as JVM children.

Getting it
----------
One command, which needs ``mvn`` (Maven 3.8+) and ``java`` (17+) on ``PATH`` and Maven Central
reachable::

    python -m kgroup.testing.apache_kafka fetch

It writes a throwaway ``pom.xml`` into a temporary directory and runs Maven's
``dependency:copy-dependencies`` on it, which resolves ``org.apache.kafka:kafka_2.13`` and
``org.apache.kafka:kafka-clients`` at :data:`KAFKA_VERSION` with every runtime dependency into
``<home>/<version>/libs``. ``<home>`` is ``$KGROUP_APACHE_KAFKA_HOME`` if set, else
``~/.cache/kgroup/apache-kafka``. The Maven artifacts carry no SLF4J binding (the release tarball
adds one), so a second, non-transitive copy adds ``org.apache.logging.log4j:log4j-slf4j-impl``
(or ``log4j-slf4j2-impl`` for SLF4J 2) at the version of the ``log4j-api`` that Kafka resolved:
without it the broker starts with "SLF4J: Defaulting to no-operation (NOP) logger" and logs
nothing. A manifest (``kgroup-manifest.txt``) is written last and the directory is moved into
place in one rename, so a second run finds every jar and returns at once. Maven's own cache
(``~/.m2/repository``) is used as usual. The log4j2 configuration the nodes use
(``<home>/<version>/config/log4j2.properties``: everything at INFO to stdout, which the node's
log file receives) is written by the same command and rewritten when it is missing.

Other commands: ``python -m kgroup.testing.apache_kafka path`` prints the libs directory (exit
status 1 when it is not fetched), ``... check`` prints what is missing (exit status 1) or
``ok``.

Running it
----------
:func:`kgroup.testing.start_broker` with ``kind="apache-kafka"`` (or ``KGROUP_BROKER=apache-kafka``)
starts ``nodes`` KRaft *combined* nodes (``process.roles=broker,controller``, every node a
controller voter of a static quorum, ``controller.quorum.voters``), each a child JVM::

    java -Xmx512m -Djava.awt.headless=true -Dlog4j2.configurationFile=<config>
         -cp '<libs>/*' kafka.Kafka <node dir>/server.properties

after formatting its log directory with a random cluster id through the main class of
``kafka-storage.sh`` (``kafka.tools.StorageTool format -t <cluster id> -c server.properties``).
See Apache Kafka's KRaft documentation (https://kafka.apache.org/documentation/#kraft) and the
broker's main class ``kafka.Kafka`` (``core/src/main/scala/kafka/Kafka.scala`` in
https://github.com/apache/kafka).

Every setting is Kafka's default except those in :func:`node_properties` (listeners on free
``127.0.0.1`` ports, the quorum, the data directory, and internal topics' replication factor
capped at the node count) and the caller's ``overrides``. ``group.initial.rebalance.delay.ms``
stays at Kafka's 3000 ms unless overridden, so the first join of a new group takes about 3 s.
Share groups (KIP-932) need nothing more: a cluster formatted at Kafka 4.4's default metadata
version has the ``share.version`` feature on, so it serves ShareGroupHeartbeat v1 and the other
share-group APIs (docs/share-groups.md, "The broker").

A secured node
--------------
:func:`start_secured_broker` starts one node with a ``SASL_SSL`` listener beside the PLAINTEXT
one: TLS with a certificate made at start (:mod:`kgroup.testing._certs`), SCRAM-SHA-512 users
added at format time (``--add-scram``), OAUTHBEARER on Kafka's unsecured-JWT validator, and
KRaft's ``StandardAuthorizer`` with ACLs enforced; see docs/security.md.

Each node's data is on disk under a temporary directory (``kgroup-apache-kafka-*``, deleted by
:meth:`~kgroup.testing.BrokerHandle.stop`); its stdout, stderr and log4j2 output go to
``apache-kafka-node-<id>.log`` in the caller's ``log_dir`` (else that temporary directory), kept
and appended to across restarts. Each JVM runs in its own session and process group and is
stopped by PID (SIGTERM, then SIGKILL after 10 s); an :mod:`atexit` hook stops the nodes if the
test run does not. If the Python process dies by a signal, atexit hooks do not run and the JVMs
stay (about 0.5 GB each): find them with ``pgrep -f 'kafka.Kafka .*kgroup-apache-kafka-'``.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final
from xml.sax.saxutils import escape as _xml_escape

from kgroup.testing._launch import (
    PORT_ATTEMPTS,
    PROBE_IO_TIMEOUT_S,
    STOP_TIMEOUT_S,
    BrokerExited,
    BrokerNotReady,
    BrokerStartError,
    free_port,
    log_tail,
    metadata_probe,
    spawn,
    wait_until_ready,
)

if TYPE_CHECKING:
    from kgroup.testing._certs import TlsFiles

__all__ = [
    "FETCH_COMMAND",
    "HOME_ENV_VAR",
    "KAFKA_VERSION",
    "REQUIRE_ENV_VAR",
    "SECURED_MECHANISMS",
    "STANDARD_AUTHORIZER",
    "FetchError",
    "SecuredCluster",
    "fetch",
    "find_java",
    "home_dir",
    "installed_jars",
    "libs_dir",
    "log4j2_config",
    "main",
    "missing",
    "node_properties",
    "require_apache_kafka",
    "skip_if_unavailable",
    "start_secured_broker",
    "unavailable_reason",
]

#: The Apache Kafka release whose jars :func:`fetch` resolves and the broker runs.
KAFKA_VERSION: Final = "4.4.0"
#: Scala binary version of the broker artifact (``kafka_2.13``); Kafka 4.x ships only 2.13.
SCALA_BINARY_VERSION: Final = "2.13"
#: Environment variable replacing the cache root ``~/.cache/kgroup/apache-kafka``.
HOME_ENV_VAR: Final = "KGROUP_APACHE_KAFKA_HOME"
#: Environment variable: when ``1`` (or ``true``/``yes``), a missing Java or missing jars fail
#: instead of skipping the tests that need Apache Kafka.
REQUIRE_ENV_VAR: Final = "KGROUP_REQUIRE_APACHE_KAFKA"
#: The one command that fetches the jars.
FETCH_COMMAND: Final = "python -m kgroup.testing.apache_kafka fetch"

_DEFAULT_HOME: Final = Path("~/.cache/kgroup/apache-kafka")
_MANIFEST: Final = "kgroup-manifest.txt"
_DEPENDENCY_PLUGIN: Final = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
_FETCH_TIMEOUT_S: Final = 900.0
_HEAP: Final = "-Xmx512m"
_FORMAT_TIMEOUT_S: Final = 60.0
_POLL_INTERVAL_S: Final = 0.05
_HOST: Final = "127.0.0.1"
_BIND_ERRORS: Final = ("Address already in use", "BindException")
#: Keys :func:`node_properties` manages per node; ``overrides`` may not set them.
_MANAGED_KEYS: Final = frozenset(
    {
        "process.roles",
        "node.id",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
        "listeners",
        "advertised.listeners",
        "controller.listener.names",
        "listener.security.protocol.map",
        "inter.broker.listener.name",
        "log.dir",
        "log.dirs",
        "metadata.log.dir",
    }
)
_LOG4J2_PROPERTIES: Final = """\
# Written by kgroup.testing.apache_kafka: Apache Kafka's broker logs through log4j2 (Kafka 4.x).
# Everything goes to stdout, which kgroup redirects, with stderr, to the node's log file.
status = warn
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.target = SYSTEM_OUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.zk.name = org.apache.zookeeper
logger.zk.level = WARN
"""


class FetchError(RuntimeError):
    """:func:`fetch` could not resolve the jars (no ``mvn``/``java``, or Maven failed)."""


# --------------------------------------------------------------------------- locations


def home_dir() -> Path:
    """Return the cache root: ``$KGROUP_APACHE_KAFKA_HOME`` or ``~/.cache/kgroup/apache-kafka``.

    Each Kafka version lives below it in ``<version>/`` (``libs/``, ``config/``).
    """
    configured = os.environ.get(HOME_ENV_VAR, "").strip()
    return Path(configured).expanduser() if configured else _DEFAULT_HOME.expanduser()


def libs_dir(version: str = KAFKA_VERSION) -> Path:
    """Return ``<home>/<version>/libs``, where :func:`fetch` puts the jars (may not exist)."""
    return home_dir() / version / "libs"


def installed_jars(version: str = KAFKA_VERSION) -> list[Path] | None:
    """Return the fetched jars of ``version``, or ``None`` if they are not all there.

    Reads the manifest :func:`fetch` writes last and checks that every jar it names exists, so a
    half-finished or damaged fetch reads as "not fetched". Never raises.
    """
    libs = libs_dir(version)
    try:
        names = (libs / _MANIFEST).read_text(encoding="utf-8").split()
    except OSError:
        return None
    jars = [libs / name for name in names]
    if not jars or not all(jar.is_file() for jar in jars):
        return None
    return jars


def log4j2_config(version: str = KAFKA_VERSION) -> Path:
    """Return the log4j2 configuration file for the nodes, writing it if missing or stale.

    The file is ``<home>/<version>/config/log4j2.properties``; it sends every logger at INFO
    (``kafka.request.logger`` at WARN) to stdout, which the node's log file receives. Log4j2's
    properties format is built into ``log4j-core``, so no YAML or XML parser is needed.

    Raises:
        OSError: the directory cannot be created or the file cannot be written.

    """
    path = home_dir() / version / "config" / "log4j2.properties"
    with contextlib.suppress(OSError):
        if path.read_text(encoding="utf-8") == _LOG4J2_PROPERTIES:
            return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(_LOG4J2_PROPERTIES, encoding="utf-8")
    os.replace(tmp, path)
    return path


def find_java() -> str | None:
    """Return the ``java`` executable: ``$JAVA_HOME/bin/java`` if it exists, else ``java`` on ``PATH``.

    Returns ``None`` when neither exists. Kafka 4.x brokers need Java 17 or newer; the version is
    not checked here (an older JVM fails at start with ``UnsupportedClassVersionError``, which the
    start error's log tail shows).
    """
    java_home = os.environ.get("JAVA_HOME", "").strip()
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("java")


def require_apache_kafka() -> bool:
    """``True`` when ``$KGROUP_REQUIRE_APACHE_KAFKA`` is ``1``, ``true`` or ``yes`` (any case)."""
    return os.environ.get(REQUIRE_ENV_VAR, "").strip().lower() in {"1", "true", "yes"}


def missing(version: str = KAFKA_VERSION) -> list[str]:
    """Return what is missing to run Apache Kafka ``version`` here (empty when nothing is).

    Each entry is a short phrase, e.g. ``"java (set JAVA_HOME or put java 17+ on PATH)"`` or
    ``"the Apache Kafka 4.4.0 jars (not in ~/.cache/kgroup/apache-kafka/4.4.0/libs)"``. Costs a
    ``PATH`` lookup and a few ``stat`` calls; never raises.
    """
    problems: list[str] = []
    if find_java() is None:
        problems.append("java (set JAVA_HOME or put java 17+ on PATH)")
    if installed_jars(version) is None:
        problems.append(f"the Apache Kafka {version} jars (not in {libs_dir(version)})")
    return problems


def unavailable_reason(version: str = KAFKA_VERSION) -> str | None:
    """One line naming what is missing and how to get it, or ``None`` if Apache Kafka can run.

    Example: ``"Apache Kafka 4.4.0 unavailable: missing the Apache Kafka 4.4.0 jars (not in
    /home/u/.cache/kgroup/apache-kafka/4.4.0/libs); get them with: python -m
    kgroup.testing.apache_kafka fetch"``. Never raises.
    """
    problems = missing(version)
    if not problems:
        return None
    how = f"get them with: {FETCH_COMMAND}"
    if find_java() is None:
        how = f"install Java 17+ (and Maven), then: {FETCH_COMMAND}"
    return f"Apache Kafka {version} unavailable: missing {' and '.join(problems)}; {how}"


def skip_if_unavailable(version: str = KAFKA_VERSION) -> None:
    """In a pytest test or fixture: skip with one line if Java or the jars are missing.

    With ``KGROUP_REQUIRE_APACHE_KAFKA=1`` it raises instead of skipping.

    Raises:
        BrokerStartError: something is missing and ``KGROUP_REQUIRE_APACHE_KAFKA`` is set.
        pytest.skip.Exception: something is missing otherwise (pytest reports a skip).

    """
    reason = unavailable_reason(version)
    if reason is None:
        return
    if require_apache_kafka():
        raise BrokerStartError(f"{reason} (and {REQUIRE_ENV_VAR} is set)")
    import pytest

    pytest.skip(reason)


# --------------------------------------------------------------------------- fetch


def _pom(dependencies: Sequence[tuple[str, str, str]]) -> str:
    deps = "\n".join(
        "    <dependency><groupId>{}</groupId><artifactId>{}</artifactId>"
        "<version>{}</version></dependency>".format(*(_xml_escape(part) for part in dep))
        for dep in dependencies
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- Throwaway pom written by kgroup.testing.apache_kafka fetch: resolves jars, builds nothing. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.kgroup</groupId>
  <artifactId>apache-kafka-jars</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <dependencies>
{deps}
  </dependencies>
</project>
"""


def _run_maven(
    mvn: str,
    work: Path,
    name: str,
    dependencies: Sequence[tuple[str, str, str]],
    output: Path,
    *,
    transitive: bool,
    verbose: bool,
    deadline: float,
) -> None:
    pom = work / f"{name}.xml"
    pom.write_text(_pom(dependencies), encoding="utf-8")
    command = [
        mvn,
        "--batch-mode",
        "--no-transfer-progress",
        "-f",
        str(pom),
        f"{_DEPENDENCY_PLUGIN}:copy-dependencies",
        f"-DoutputDirectory={output}",
        "-DincludeScope=runtime",
        f"-DexcludeTransitive={'false' if transitive else 'true'}",
    ]
    if not verbose:
        command.insert(1, "--quiet")
    log = work / f"{name}.log"
    remaining = max(1.0, deadline - time.monotonic())
    with open(log, "wb") as out:
        try:
            result = subprocess.run(
                command,
                cwd=work,
                stdin=subprocess.DEVNULL,
                stdout=None if verbose else out,
                stderr=None if verbose else subprocess.STDOUT,
                timeout=remaining,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise FetchError(
                f"Maven did not finish within the fetch timeout (command: {' '.join(command)})"
            ) from None
    if result.returncode != 0:
        tail = "(see the output above)" if verbose else log_tail(log)
        raise FetchError(
            f"Maven failed with exit status {result.returncode} "
            f"(command: {' '.join(command)}):\n{tail}"
        )


_JAR_VERSION = re.compile(r"^(?P<name>.+?)-(?P<version>\d[^-]*(?:-[A-Za-z0-9.]+)?)\.jar$")


def _jar_versions(directory: Path) -> dict[str, str]:
    versions: dict[str, str] = {}
    for jar in directory.glob("*.jar"):
        match = _JAR_VERSION.match(jar.name)
        if match:
            versions[match["name"]] = match["version"]
    return versions


def fetch(
    version: str = KAFKA_VERSION,
    *,
    force: bool = False,
    verbose: bool = False,
    timeout_s: float = _FETCH_TIMEOUT_S,
) -> Path:
    """Resolve Apache Kafka ``version``'s broker jars with Maven into :func:`libs_dir`.

    Idempotent: when the manifest and every jar are there (and ``force`` is false) it returns at
    once without running Maven. Otherwise it runs ``mvn dependency:copy-dependencies`` (plugin
    3.8.1) on a generated ``pom.xml`` in a temporary directory: ``kafka_2.13`` and
    ``kafka-clients`` at ``version``, runtime scope, transitively; then adds the log4j2 SLF4J
    binding at the resolved ``log4j-api`` version; then moves the directory into place.
    Artifacts come from Maven Central through Maven (``~/.m2`` and ``settings.xml`` apply).

    Args:
        version: An Apache Kafka 4.x release, e.g. ``"4.4.0"`` (:data:`KAFKA_VERSION`).
        force: Resolve again even if the jars are there.
        verbose: Let Maven print to this process's stdout/stderr instead of a temporary log.
        timeout_s: Deadline in seconds for all Maven runs together (default 900 s).

    Returns:
        The libs directory, ``<home>/<version>/libs``.

    Raises:
        FetchError: ``mvn`` or ``java`` is not on ``PATH``, Maven failed or timed out (the
            message carries the end of Maven's output), or the expected jars are absent.
        OSError: the cache directory cannot be written.

    """
    if not force and installed_jars(version) is not None:
        log4j2_config(version)
        return libs_dir(version)
    mvn = shutil.which("mvn")
    if mvn is None:
        raise FetchError("mvn not found on PATH: install Maven 3.8+ (e.g. apt-get install maven)")
    if find_java() is None:
        raise FetchError("java not found: install Java 17+ or set JAVA_HOME")
    deadline = time.monotonic() + timeout_s
    libs = libs_dir(version)
    libs.parent.mkdir(parents=True, exist_ok=True)
    kafka = [
        ("org.apache.kafka", f"kafka_{SCALA_BINARY_VERSION}", version),
        ("org.apache.kafka", "kafka-clients", version),
    ]
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=libs.parent) as tmp:
        work = Path(tmp)
        staging = work / "libs"
        _run_maven(
            mvn, work, "kafka", kafka, staging, transitive=True, verbose=verbose, deadline=deadline
        )
        versions = _jar_versions(staging)
        for _, artifact, _ in kafka:
            if versions.get(artifact) != version:
                raise FetchError(f"Maven finished but {artifact}-{version}.jar is not in {staging}")
        if not {"log4j-slf4j-impl", "log4j-slf4j2-impl"} & versions.keys():
            log4j = versions.get("log4j-api")
            slf4j = versions.get("slf4j-api", "1")
            if log4j is None:
                raise FetchError(f"Kafka {version} resolved without log4j-api; cannot pick a binding")
            binding = "log4j-slf4j2-impl" if not slf4j.startswith("1.") else "log4j-slf4j-impl"
            _run_maven(
                mvn,
                work,
                "logging",
                [("org.apache.logging.log4j", binding, log4j)],
                staging,
                transitive=False,
                verbose=verbose,
                deadline=deadline,
            )
        jars = sorted(jar.name for jar in staging.glob("*.jar"))
        (staging / _MANIFEST).write_text("\n".join(jars) + "\n", encoding="utf-8")
        if libs.exists():
            shutil.rmtree(libs)
        try:
            os.replace(staging, libs)
        except OSError:
            if installed_jars(version) is None:  # not a concurrent fetch that won the race
                raise
    log4j2_config(version)
    return libs


# --------------------------------------------------------------------------- cluster


def _cluster_id() -> str:
    """A random Kafka cluster id: 16 random bytes, URL-safe base64 without padding (22 chars)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):  # Kafka's Uuid.randomUuid avoids these too (CLI parsing)
            return text


def _format_value(value: object) -> str:
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    if "\n" in text or "\r" in text:
        raise ValueError(f"property values must be single-line, got {text!r}")
    return text.replace("\\", "\\\\")


def node_properties(
    node_id: int,
    *,
    broker_ports: Mapping[int, int],
    controller_ports: Mapping[int, int],
    data_dir: str | os.PathLike[str],
    overrides: Mapping[str, object] | None = None,
) -> dict[str, str]:
    """Return the ``server.properties`` of one KRaft combined node, in file order.

    These are the only settings that differ from Apache Kafka's defaults
    (https://kafka.apache.org/documentation/#brokerconfigs):

    * ``process.roles=broker,controller``, ``node.id``, ``controller.quorum.voters`` (every node
      a voter: ``1@127.0.0.1:<port>,2@...``), ``controller.listener.names=CONTROLLER``;
    * ``listeners=PLAINTEXT://127.0.0.1:<port>,CONTROLLER://127.0.0.1:<port>``,
      ``advertised.listeners=PLAINTEXT://127.0.0.1:<port>``,
      ``listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT``,
      ``inter.broker.listener.name=PLAINTEXT``;
    * ``log.dirs=<data_dir>``;
    * with fewer than 3 nodes only: ``offsets.topic.replication.factor``,
      ``transaction.state.log.replication.factor`` and
      ``share.coordinator.state.topic.replication.factor`` = the node count (Kafka's default
      3 cannot be met), ``transaction.state.log.min.isr`` and
      ``share.coordinator.state.topic.min.isr`` = min(2, node count);
    * then ``overrides``, as given (booleans as ``true``/``false``); a value that is a mapping
      of node id -> value sets the property per node, e.g.
      ``{"broker.rack": {1: "az-1", 2: "az-2", 3: "az-3"}}``.

    Args:
        node_id: This node's id, a key of ``broker_ports``.
        broker_ports: Node id -> PLAINTEXT port on 127.0.0.1, for every node.
        controller_ports: Node id -> CONTROLLER port on 127.0.0.1, for every node.
        data_dir: This node's log (data) directory.
        overrides: Extra broker properties, e.g. ``{"group.initial.rebalance.delay.ms": 0}``.

    Raises:
        ValueError: an override names a managed key (listeners, quorum, node id, log
            directories), a key is empty or has whitespace or ``=``, or a value spans lines.

    """
    nodes = sorted(broker_ports)
    props = {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "controller.quorum.voters": ",".join(
            f"{n}@{_HOST}:{controller_ports[n]}" for n in nodes
        ),
        "controller.listener.names": "CONTROLLER",
        "listeners": f"PLAINTEXT://{_HOST}:{broker_ports[node_id]},"
        f"CONTROLLER://{_HOST}:{controller_ports[node_id]}",
        "advertised.listeners": f"PLAINTEXT://{_HOST}:{broker_ports[node_id]}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": _format_value(os.fspath(data_dir)),
    }
    if len(nodes) < 3:
        replicas, min_isr = str(len(nodes)), str(min(2, len(nodes)))
        props["offsets.topic.replication.factor"] = replicas
        props["transaction.state.log.replication.factor"] = replicas
        props["transaction.state.log.min.isr"] = min_isr
        props["share.coordinator.state.topic.replication.factor"] = replicas
        props["share.coordinator.state.topic.min.isr"] = min_isr
    for key, value in (overrides or {}).items():
        if not isinstance(key, str) or not key or re.search(r"[\s=:]", key):
            raise ValueError(f"invalid broker property name {key!r}")
        if key in _MANAGED_KEYS:
            raise ValueError(
                f"{key} is set by kgroup.testing for every node and cannot be overridden"
            )
        if isinstance(value, Mapping):
            value = _per_node_value(key, value, node_id)
            if value is None:
                continue
        props[key] = _format_value(value)
    return props


def _per_node_value(key: str, values: Mapping[object, object], node_id: int) -> object | None:
    """Node ``node_id``'s value of a per-node override (``{node id: value}``), or None: not set on it.

    Raises:
        ValueError: a key of ``values`` is not a positive int.

    """
    for node in values:
        if not isinstance(node, int) or isinstance(node, bool) or node < 1:
            raise ValueError(f"{key}: per-node values are keyed by node id (1, 2, ...), got {node!r}")
    return values.get(node_id)


def _validate(nodes: int, overrides: Mapping[str, object] | None) -> None:
    """Raise ``ValueError`` for a bad node count or override, before anything is started."""
    if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 1:
        raise ValueError(f"nodes must be a positive int, got {nodes!r}")
    node_properties(1, broker_ports={1: 1}, controller_ports={1: 1}, data_dir=".", overrides=overrides)
    for key, value in (overrides or {}).items():
        if isinstance(value, Mapping) and not set(value) <= set(range(1, nodes + 1)):
            raise ValueError(f"{key}: per-node values for nodes {sorted(value)}, of nodes 1..{nodes}")


class _Node:
    def __init__(self, node_id: int, directory: Path, log_path: Path) -> None:
        self.node_id = node_id
        self.directory = directory
        self.data_dir = directory / "data"
        self.config_path = directory / "server.properties"
        self.log_path = log_path
        self.broker_port = 0
        self.controller_port = 0
        self.sasl_ssl_port = 0  # only with a SASL_SSL listener (start_secured_broker)
        self.proc: subprocess.Popen[bytes] | None = None
        self.command: list[str] = []

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def _append_log(path: Path, line: str) -> None:
    with open(path, "a", encoding="utf-8") as log:
        log.write(f"=== kgroup {time.strftime('%Y-%m-%d %H:%M:%S')}: {line}\n")


def _log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _log_since(path: Path, offset: int) -> str:
    try:
        with open(path, "rb") as log:
            log.seek(offset)
            return log.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _signal_and_reap(procs: Sequence[subprocess.Popen[bytes]], timeout_s: float) -> None:
    """SIGTERM every live process, wait up to ``timeout_s`` in all, SIGKILL what is left; reap."""
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for proc in procs:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait()


class _KraftCluster:
    """The processes of a KRaft cluster of combined nodes; driven by :class:`BrokerHandle`."""

    def __init__(
        self,
        *,
        nodes: int,
        overrides: Mapping[str, object] | None,
        log_dir: str | os.PathLike[str] | None,
        version: str = KAFKA_VERSION,
        sasl_ssl: _SaslSslListener | None = None,
    ) -> None:
        _validate(nodes, overrides)
        self.sasl_ssl = sasl_ssl
        self.version = version
        self.overrides = dict(overrides or {})
        self.base_dir = Path(tempfile.mkdtemp(prefix="kgroup-apache-kafka-"))
        logs = Path(log_dir) if log_dir is not None else self.base_dir
        logs.mkdir(parents=True, exist_ok=True)
        self.nodes = {
            n: _Node(n, self.base_dir / f"node-{n}", logs / f"apache-kafka-node-{n}.log")
            for n in range(1, nodes + 1)
        }
        self.cluster_id = _cluster_id()
        self._lock = threading.RLock()
        self._java = ""
        self._libs = Path()
        self._log_config = Path()

    # ----------------------------------------------------------------- queries

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{_HOST}:{node.broker_port}" for node in self.nodes.values())

    def pids(self) -> dict[int, int | None]:
        with self._lock:
            return {
                n: (node.proc.pid if node.running and node.proc is not None else None)
                for n, node in self.nodes.items()
            }

    def _node(self, node_id: int) -> _Node:
        if isinstance(node_id, bool) or node_id not in self.nodes:
            raise ValueError(f"no node {node_id!r}: node ids are {sorted(self.nodes)}")
        return self.nodes[node_id]

    # ----------------------------------------------------------------- start

    def start(self, startup_timeout_s: float) -> None:
        """Format and start every node, retrying with new ports if one was taken meanwhile."""
        deadline = time.monotonic() + startup_timeout_s
        reason = unavailable_reason(self.version)
        java = find_java()
        if reason is not None or java is None:
            self.stop_all()
            raise BrokerStartError(reason or "java not found")
        self._java = java
        self._libs = libs_dir(self.version)
        try:
            self._log_config = log4j2_config(self.version)
        except OSError as exc:
            self.stop_all()
            raise BrokerStartError(f"cannot write the log4j2 configuration: {exc}") from exc
        for attempt in range(1, PORT_ATTEMPTS + 1):
            self._assign_ports()
            offsets = {n: _log_size(node.log_path) for n, node in self.nodes.items()}
            try:
                self._format_all(deadline)
                for node in self.nodes.values():
                    self._launch(node)
                self._wait_ready(deadline, startup_timeout_s, list(self.nodes.values()))
            except BrokerStartError:
                self.stop_all()  # data and configs go; the logs stay
                taken = any(
                    any(err in _log_since(node.log_path, offsets[n]) for err in _BIND_ERRORS)
                    for n, node in self.nodes.items()
                )
                if attempt < PORT_ATTEMPTS and taken and time.monotonic() < deadline:
                    for node in self.nodes.values():
                        _append_log(node.log_path, "a port was taken; retrying with new ports")
                    continue
                raise
            except BaseException:
                self.stop_all()
                raise
            return

    def _assign_ports(self) -> None:
        ports: set[int] = set()
        while len(ports) < 2 * len(self.nodes):
            ports.add(free_port())
        ordered = sorted(ports)
        for i, node in enumerate(self.nodes.values()):
            node.broker_port, node.controller_port = ordered[2 * i], ordered[2 * i + 1]
        if self.sasl_ssl is not None:
            self._assign_sasl_ssl_ports(ports)
        broker_ports = {n: node.broker_port for n, node in self.nodes.items()}
        controller_ports = {n: node.controller_port for n, node in self.nodes.items()}
        for n, node in self.nodes.items():
            node.directory.mkdir(parents=True, exist_ok=True)
            props = node_properties(
                n,
                broker_ports=broker_ports,
                controller_ports=controller_ports,
                data_dir=node.data_dir,
                overrides=self.overrides,
            )
            if self.sasl_ssl is not None:
                props.update(self.sasl_ssl.properties(props, node.sasl_ssl_port))
            lines = [
                "# Written by kgroup.testing (start_broker(kind='apache-kafka')):",
                "# Apache Kafka's defaults except these lines.",
                *(f"{key}={value}" for key, value in props.items()),
            ]
            node.config_path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def _assign_sasl_ssl_ports(self, taken: set[int]) -> None:
        for node in self.nodes.values():
            port = free_port()
            while port in taken:
                port = free_port()
            taken.add(port)
            node.sasl_ssl_port = port

    @property
    def sasl_ssl_bootstrap_servers(self) -> str:
        return ",".join(f"{_HOST}:{node.sasl_ssl_port}" for node in self.nodes.values())

    def _jvm(self, *extra: str) -> list[str]:
        return [
            self._java,
            _HEAP,
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self._log_config}",
            "-cp",
            f"{self._libs}{os.sep}*",
            *extra,
        ]

    def _format_all(self, deadline: float) -> None:
        """``kafka-storage format`` for every node, in parallel, via ``kafka.tools.StorageTool``."""
        running: list[tuple[_Node, list[str], subprocess.Popen[bytes]]] = []
        try:
            for node in self.nodes.values():
                command = self._jvm(
                    "-XX:TieredStopAtLevel=1",  # a one-second tool: C1 alone starts ~40% faster
                    "kafka.tools.StorageTool",
                    "format",
                    "-t",
                    self.cluster_id,
                    "-c",
                    str(node.config_path),
                    *(self.sasl_ssl.format_arguments() if self.sasl_ssl is not None else ()),
                )
                shown = self.sasl_ssl.redact(command) if self.sasl_ssl is not None else command
                _append_log(node.log_path, f"formatting: {' '.join(shown)}")
                proc = spawn(command, node.log_path)
                running.append((node, command, proc))
            for node, command, proc in running:
                timeout = min(_FORMAT_TIMEOUT_S, max(0.1, deadline - time.monotonic()))
                try:
                    code = proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    raise BrokerStartError(
                        f"formatting node {node.node_id} did not finish in time "
                        f"(command: {' '.join(command)}); last lines of {node.log_path}:\n"
                        f"{log_tail(node.log_path)}"
                    ) from None
                if code != 0:
                    raise BrokerStartError(
                        f"formatting node {node.node_id} failed with exit status {code} "
                        f"(command: {' '.join(command)}); last lines of {node.log_path}:\n"
                        f"{log_tail(node.log_path)}"
                    )
        finally:
            _signal_and_reap([proc for _, _, proc in running], 0.0)

    def _launch(self, node: _Node) -> None:
        node.command = self._jvm("kafka.Kafka", str(node.config_path))
        _append_log(
            node.log_path,
            f"starting node {node.node_id} (broker 127.0.0.1:{node.broker_port}, controller "
            f"127.0.0.1:{node.controller_port}): {' '.join(node.command)}",
        )
        node.proc = spawn(node.command, node.log_path)

    def _wait_ready(self, deadline: float, timeout_s: float, probed: Sequence[_Node]) -> None:
        """Wait for ApiVersions from each node in ``probed``, then for Metadata to list all.

        "All" is every running node, in the Metadata answer of every running node.
        """
        for node in probed:
            assert node.proc is not None
            try:
                wait_until_ready(node.proc, _HOST, node.broker_port, deadline)
            except BrokerExited:
                raise BrokerStartError(
                    f"Apache Kafka node {node.node_id} exited with code {node.proc.returncode} "
                    f"during startup (command: {' '.join(node.command)}); last lines of "
                    f"{node.log_path}:\n{log_tail(node.log_path)}"
                ) from None
            except BrokerNotReady as exc:
                raise BrokerStartError(
                    f"Apache Kafka node {node.node_id} did not answer ApiVersions on "
                    f"127.0.0.1:{node.broker_port} within {timeout_s} s (last error: {exc}; "
                    f"command: {' '.join(node.command)}); last lines of {node.log_path}:\n"
                    f"{log_tail(node.log_path)}"
                ) from None
        self._wait_metadata(deadline, timeout_s)

    def _wait_metadata(self, deadline: float, timeout_s: float) -> None:
        correlation_id = 0
        last = "no attempt made"
        while True:
            running = [node for node in self.nodes.values() if node.running]
            expected = {node.node_id for node in running}
            lagging: list[str] = []
            for node in running:
                correlation_id += 1
                io_timeout = min(PROBE_IO_TIMEOUT_S, max(0.05, deadline - time.monotonic()))
                try:
                    listed = set(metadata_probe(_HOST, node.broker_port, correlation_id, io_timeout))
                except (OSError, ValueError) as exc:
                    lagging.append(f"node {node.node_id}: {type(exc).__name__}: {exc}")
                    continue
                if not expected <= listed:
                    lagging.append(
                        f"node {node.node_id} lists nodes {sorted(listed)}, not all of "
                        f"{sorted(expected)}"
                    )
            if not lagging:
                return
            last = "; ".join(lagging)
            if time.monotonic() >= deadline:
                tails = "\n".join(
                    f"--- last lines of {node.log_path}:\n{log_tail(node.log_path, 15)}"
                    for node in self.nodes.values()
                )
                raise BrokerStartError(
                    f"Apache Kafka's Metadata did not list every running node within "
                    f"{timeout_s} s ({last})\n{tails}"
                )
            time.sleep(_POLL_INTERVAL_S)

    # ----------------------------------------------------------------- node control

    def stop_all(self, *, remove_data: bool = True) -> None:
        with self._lock:
            procs = [node.proc for node in self.nodes.values() if node.proc is not None]
            _signal_and_reap(procs, STOP_TIMEOUT_S)
            for node in self.nodes.values():
                if node.proc is not None:
                    _append_log(node.log_path, f"node {node.node_id} stopped "
                                f"(exit status {node.proc.returncode})")
                node.proc = None
            if remove_data:  # data and configs; the log files stay
                for node in self.nodes.values():
                    shutil.rmtree(node.directory, ignore_errors=True)
                with contextlib.suppress(OSError):
                    self.base_dir.rmdir()  # only if empty: the logs went to a log_dir elsewhere

    def stop_node(self, node_id: int, timeout_s: float) -> None:
        with self._lock:
            node = self._node(node_id)
            if node.proc is not None:
                _signal_and_reap([node.proc], timeout_s)
                _append_log(node.log_path, f"node {node_id} stopped "
                            f"(exit status {node.proc.returncode})")
                node.proc = None

    def kill(self, node_id: int) -> None:
        with self._lock:
            node = self._node(node_id)
            if not node.running:
                raise ValueError(f"node {node_id} is not running")
            assert node.proc is not None
            node.proc.kill()
            node.proc.wait()
            _append_log(node.log_path, f"node {node_id} killed with SIGKILL by kgroup")
            node.proc = None

    def start_node(self, node_id: int, timeout_s: float) -> None:
        with self._lock:
            node = self._node(node_id)
            if node.running:
                raise ValueError(f"node {node_id} is already running")
            deadline = time.monotonic() + timeout_s
            self._launch(node)
            self._wait_ready(deadline, timeout_s, [node])

    def restart(self, node_id: int | None, timeout_s: float) -> None:
        with self._lock:
            if node_id is None:
                deadline = time.monotonic() + timeout_s
                self.stop_all(remove_data=False)
                for node in self.nodes.values():
                    self._launch(node)
                self._wait_ready(deadline, timeout_s, list(self.nodes.values()))
                return
            node = self._node(node_id)
            self.stop_node(node_id, STOP_TIMEOUT_S)
            self.start_node(node.node_id, timeout_s)


# --------------------------------------------------------------------------- secured cluster

#: The SASL mechanisms the secured cluster's SASL_SSL listener enables.
SECURED_MECHANISMS: Final = ("SCRAM-SHA-512", "OAUTHBEARER")
#: Kafka's KRaft authorizer (``authorizer.class.name``), which keeps ACLs in the metadata log.
STANDARD_AUTHORIZER: Final = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
_SASL_SSL: Final = "SASL_SSL"
_SCRAM_LOGIN: Final = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
#: The broker's own login for OAUTHBEARER (unused by a broker that only serves it) and, with no
#: ``sasl.server.callback.handler.class``, Kafka's unsecured-JWT validator
#: (``OAuthBearerUnsecuredValidatorCallbackHandler``): tokens signed by nobody, for tests only.
_OAUTHBEARER_LOGIN: Final = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
    'unsecuredLoginStringClaim_sub="kafka";'
)
_USER_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


class _SaslSslListener:
    """What a SASL_SSL client listener adds to a node's properties and to its storage format."""

    def __init__(self, tls: TlsFiles, users: Mapping[str, str], super_users: Sequence[str]) -> None:
        for name, password in users.items():
            if not _USER_NAME.match(name):
                raise ValueError(f"user names are letters, digits, '.', '_' and '-', got {name!r}")
            if not password or re.search(r"[\s,\[\]=]", password):
                raise ValueError(f"user {name!r}: a password must be non-empty, without spaces, ',', '[', ']' or '='")
        for name in super_users:
            if not _USER_NAME.match(name):
                raise ValueError(f"super user names are like user names, got {name!r}")
        self.tls = tls
        self.users = dict(users)
        self.super_users = tuple(super_users)

    def properties(self, props: Mapping[str, str], port: int) -> dict[str, str]:
        prefix = f"listener.name.{_SASL_SSL.lower()}."
        # the PLAINTEXT and CONTROLLER listeners carry User:ANONYMOUS: the broker's own requests
        # to itself and the quorum, and the test's set-up, which must pass the authorizer
        supers = ["User:ANONYMOUS", *(f"User:{name}" for name in self.super_users)]
        return {
            "listeners": f"{props['listeners']},{_SASL_SSL}://{_HOST}:{port}",
            "advertised.listeners": f"{props['advertised.listeners']},{_SASL_SSL}://{_HOST}:{port}",
            "listener.security.protocol.map": f"{props['listener.security.protocol.map']},{_SASL_SSL}:{_SASL_SSL}",
            f"{prefix}sasl.enabled.mechanisms": ",".join(SECURED_MECHANISMS),
            f"{prefix}scram-sha-512.sasl.jaas.config": _SCRAM_LOGIN,
            f"{prefix}oauthbearer.sasl.jaas.config": _OAUTHBEARER_LOGIN,
            f"{prefix}ssl.keystore.type": "PKCS12",
            f"{prefix}ssl.keystore.location": _format_value(os.fspath(self.tls.keystore)),
            f"{prefix}ssl.keystore.password": self.tls.keystore_password,
            f"{prefix}ssl.key.password": self.tls.keystore_password,
            "authorizer.class.name": STANDARD_AUTHORIZER,
            "super.users": ";".join(supers),
            "allow.everyone.if.no.acl.found": "false",
        }

    def format_arguments(self) -> list[str]:
        """``kafka-storage format --add-scram``: each user's SCRAM-SHA-512 credential (KIP-900)."""
        arguments: list[str] = []
        for name, password in self.users.items():
            arguments += ["--add-scram", f"SCRAM-SHA-512=[name={name},password={password}]"]
        return arguments

    def redact(self, command: Sequence[str]) -> list[str]:
        """``command`` with every password replaced, for the node's log."""
        shown = list(command)
        for password in self.users.values():
            shown = [arg.replace(f"password={password}]", "password=[hidden]]") for arg in shown]
        return shown


class SecuredCluster:
    """A running Apache Kafka with a SASL_SSL client listener; made by :func:`start_secured_broker`.

    Attributes:
        bootstrap_servers: The SASL_SSL listener of every node (``127.0.0.1:<port>``), TLS with
            the server certificate of :attr:`tls`, SASL ``SCRAM-SHA-512`` or ``OAUTHBEARER``.
        plaintext_bootstrap_servers: The PLAINTEXT listener, whose principal ``User:ANONYMOUS``
            is a super user: for a test's set-up (topics, ACLs), not for the clients under test.
        tls: The CA, the server's key store and a stranger CA (:class:`kgroup.testing._certs.TlsFiles`).
        users: SCRAM-SHA-512 user name -> password, as given.
        log_paths: Node id -> the node's log file.

    """

    def __init__(self, cluster: _KraftCluster, listener: _SaslSslListener) -> None:
        self._cluster = cluster
        self.bootstrap_servers = cluster.sasl_ssl_bootstrap_servers
        self.plaintext_bootstrap_servers = cluster.bootstrap_servers
        self.tls = listener.tls
        self.users = dict(listener.users)
        self.log_paths = {n: node.log_path for n, node in cluster.nodes.items()}
        self._stopped = False
        self._lock = threading.Lock()
        atexit.register(self.stop)

    def scram_settings(self, user: str, password: str | None = None) -> dict[str, object]:
        """``ConsumerConfig`` keyword arguments for ``user`` over SASL_SSL with SCRAM-SHA-512.

        ``password`` defaults to the user's own; ``ssl_cafile`` is the CA that signed the server.
        """
        return {
            "bootstrap_servers": self.bootstrap_servers,
            "security_protocol": _SASL_SSL,
            "ssl_cafile": str(self.tls.ca_file),
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": user,
            "sasl_plain_password": self.users[user] if password is None else password,
        }

    def stop(self) -> None:
        """Stop every node and remove its data; the log files stay. Idempotent."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._cluster.stop_all()
        atexit.unregister(self.stop)

    def __enter__(self) -> SecuredCluster:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def start_secured_broker(
    *,
    users: Mapping[str, str],
    super_users: Sequence[str] = (),
    log_dir: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, object] | None = None,
    startup_timeout_s: float = 60.0,
) -> SecuredCluster:
    """Start a one-node Apache Kafka whose clients connect over SASL_SSL, with ACLs enforced.

    Besides :func:`node_properties`' PLAINTEXT and CONTROLLER listeners the node has a
    ``SASL_SSL`` listener: TLS with a server certificate for ``IP:127.0.0.1`` signed by a CA
    made now (:mod:`kgroup.testing._certs`; the files go to ``log_dir``'s ``tls/``), SASL
    ``SCRAM-SHA-512`` (each of ``users`` gets a credential at format time, ``kafka-storage
    format --add-scram``) and ``OAUTHBEARER`` validated by Kafka's unsecured-JWT validator (an
    unsigned token's ``sub`` is the principal: test-only configuration). The authorizer is
    KRaft's ``StandardAuthorizer`` with ``allow.everyone.if.no.acl.found=false``; its
    ``super.users`` are ``User:ANONYMOUS`` (the PLAINTEXT and CONTROLLER listeners: the node's
    own requests and the test's set-up) and ``super_users``. Everyone else needs ACLs. See
    docs/security.md and Kafka's documentation, "Security".

    Args:
        users: SCRAM-SHA-512 user name -> password (letters, digits, ``._-`` in names; no
            spaces, ``,``, ``[``, ``]`` or ``=`` in passwords).
        super_users: User names (without ``User:``) the authorizer lets do everything.
        log_dir: Directory for the node's log and the TLS files (default: a temporary one).
        overrides: Extra broker properties, as for :func:`node_properties`.
        startup_timeout_s: Seconds for formatting and the node's first answers.

    Raises:
        ValueError: a bad user name or password, or a bad override.
        BrokerStartError: Java or the jars are missing, or the node did not start.

    """
    from kgroup.testing._certs import make_tls_files

    reason = unavailable_reason()
    if reason is not None:
        raise BrokerStartError(reason)
    logs = Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="kgroup-secured-"))
    listener = _SaslSslListener(make_tls_files(logs / "tls"), users, super_users)
    cluster = _KraftCluster(nodes=1, overrides=overrides, log_dir=logs, sasl_ssl=listener)
    cluster.start(startup_timeout_s)  # stops what it started if it raises
    return SecuredCluster(cluster, listener)


# --------------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``fetch [--version V] [--force] [--verbose]``, ``path``, ``check``.

    Returns:
        The exit status: 0 on success, 1 when ``path``/``check`` find the jars or Java missing,
        2 when ``fetch`` fails (its error is printed to stderr).

    """
    parser = argparse.ArgumentParser(
        prog="python -m kgroup.testing.apache_kafka",
        description="Apache Kafka's broker jars for kgroup's tests (resolved with Maven).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    fetch_cmd = commands.add_parser(
        "fetch", help=f"resolve the jars with mvn into {_DEFAULT_HOME} or ${HOME_ENV_VAR} (idempotent)"
    )
    fetch_cmd.add_argument("--version", default=KAFKA_VERSION, help="Kafka release (%(default)s)")
    fetch_cmd.add_argument("--force", action="store_true", help="resolve again even if present")
    fetch_cmd.add_argument("--verbose", action="store_true", help="show Maven's output")
    for name, text in (("path", "print the libs directory"), ("check", "print what is missing")):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("--version", default=KAFKA_VERSION, help="Kafka release (%(default)s)")
    args = parser.parse_args(argv)
    if args.command == "fetch":
        started = time.monotonic()
        try:
            libs = fetch(args.version, force=args.force, verbose=args.verbose)
        except (FetchError, OSError) as exc:
            print(f"fetch failed: {exc}", file=sys.stderr)
            return 2
        jars = installed_jars(args.version) or []
        print(
            f"Apache Kafka {args.version}: {len(jars)} jars in {libs} "
            f"({time.monotonic() - started:.1f} s)"
        )
        return 0
    if args.command == "path":
        print(libs_dir(args.version))
        return 0 if installed_jars(args.version) is not None else 1
    reason = unavailable_reason(args.version)
    print(reason or f"ok: Apache Kafka {args.version} in {libs_dir(args.version)}")
    return 0 if reason is None else 1


if __name__ == "__main__":
    sys.exit(main())
