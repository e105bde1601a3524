"""The command line of the Java peer: Apache Kafka's ``KafkaConsumer`` running ``JavaPeer.java``.

``JavaPeer.java`` runs ``org.apache.kafka.clients.consumer.KafkaConsumer`` with
``group.protocol=classic``, or ``consumer`` with ``--group-protocol consumer`` (see its header
for the arguments and its three modes: the cross-check tests' events, ``--mode bench`` and
``--mode throughput``). Its classpath is the
Apache Kafka jars that ``python -m kgroup.testing.apache_kafka fetch`` puts in place, or another
kafka-clients version resolved once with Maven (the benchmarks on Tansu:
:data:`TANSU_JAVA_CLIENTS`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

#: Apache Kafka's consumer as a peer
JAVA_PEER = Path(__file__).with_name("JavaPeer.java")
#: kafka-clients for the Java member on Tansu: Tansu v0.6.0 drops the connection when kafka-clients
#: 4.x sends ApiVersions v5 (its log: "failed to fill whole buffer"), 3.9 speaks v4 (KIP-511)
TANSU_JAVA_CLIENTS = "3.9.1"
_CACHE = Path.home() / ".cache" / "kgroup" / "java-peer"


def java_unavailable_reason() -> str | None:
    """One line naming what is missing to run the Java peer (Java, the Apache Kafka jars), or None."""
    from kgroup.testing import apache_kafka

    return apache_kafka.unavailable_reason()


def java_classpath(clients_version: str | None = None) -> str:
    """The Java peer's classpath: the Apache Kafka jars, or kafka-clients ``clients_version``.

    ``None`` (or the Apache Kafka version) means the jars of ``python -m kgroup.testing.apache_kafka
    fetch``. Another version is resolved once with Maven (``dependency:copy-dependencies`` of a
    throwaway pom naming ``org.apache.kafka:kafka-clients``) into
    ``~/.cache/kgroup/java-peer/kafka-clients-<version>/libs``.

    Raises:
        RuntimeError: the jars or Maven are missing, or Maven fails.

    """
    from kgroup.testing import apache_kafka

    if clients_version is None or clients_version == apache_kafka.KAFKA_VERSION:
        reason = java_unavailable_reason()
        if reason is not None:
            raise RuntimeError(f"the java peer needs {reason}")
        return f"{apache_kafka.libs_dir()}/*"
    home = _CACHE / f"kafka-clients-{clients_version}"
    if not (home / "done").exists():
        mvn = shutil.which("mvn")
        if mvn is None:
            raise RuntimeError(f"kafka-clients {clients_version} is resolved with Maven: mvn is not on PATH")
        home.mkdir(parents=True, exist_ok=True)
        (home / "pom.xml").write_text(
            '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            "<groupId>kgroup.bench</groupId><artifactId>java-peer</artifactId><version>1</version>"
            "<dependencies><dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-clients</artifactId>"
            f"<version>{clients_version}</version></dependency></dependencies></project>"
        )
        proc = subprocess.run([mvn, "-q", "-B", "dependency:copy-dependencies", "-DoutputDirectory=libs"],
                              cwd=home, capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"Maven could not resolve kafka-clients {clients_version}:\n{proc.stdout[-2000:]}")
        (home / "done").touch()
    return f"{home / 'libs'}/*"


def _compiled_java_peer(java: str, classpath: str) -> Path | None:
    """``JavaPeer.java`` compiled once with the JDK's ``javac`` (cached by source and classpath), or None.

    Benchmarks run the compiled class so that a member's process start is the JVM's start, not
    the single-file launcher's in-memory compilation (about 2 s of CPU on two cores). Without
    ``javac`` next to ``java`` the source file is launched as the tests do.
    """
    javac = Path(java).with_name("javac")
    if not javac.exists():
        return None
    digest = hashlib.sha256(JAVA_PEER.read_bytes() + classpath.encode()).hexdigest()[:16]
    out = _CACHE / digest
    if not (out / "JavaPeer.class").exists():
        tmp = out.with_name(out.name + f".tmp{os.getpid()}")
        subprocess.run([str(javac), "-nowarn", "-cp", classpath, "-d", str(tmp), str(JAVA_PEER)],
                       check=True, capture_output=True)
        try:
            tmp.rename(out)
        except OSError:  # another process got there first
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def java_command(
    args: list[str], *, quick_start: bool = False, compiled: bool = False, clients_version: str | None = None
) -> list[str]:
    """``java ... JavaPeer <args>`` on :func:`java_classpath` (``clients_version``).

    Args:
        args: the peer's arguments.
        quick_start: run the JVM with the serial collector and C1 only, which starts sooner on
            a small machine (tests); else HotSpot's defaults (benchmarks).
        compiled: run the class compiled once with ``javac`` (benchmarks: a member's start is
            then the JVM's start); else the single-file source launcher (JEP 330).
        clients_version: see :func:`java_classpath`.

    The JVM's own logging (log4j2's default configuration at ``$KGROUP_JAVA_PEER_LOG_LEVEL``,
    default WARN) goes to stderr; the peer keeps stdout for its events.

    Raises:
        RuntimeError: Java or the jars are missing (the message names the fetch command).

    """
    from kgroup.testing import apache_kafka

    java = apache_kafka.find_java()
    if java is None:
        raise RuntimeError(java_unavailable_reason() or "the java peer needs java 17+ (JAVA_HOME or PATH)")
    libs = java_classpath(clients_version)
    level = os.environ.get("KGROUP_JAVA_PEER_LOG_LEVEL", "WARN")
    flags = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"] if quick_start else []
    head = [java, *flags, f"-Dorg.apache.logging.log4j.level={level}"]
    classes = _compiled_java_peer(java, libs) if compiled else None
    if classes is None:
        return [*head, "-cp", libs, str(JAVA_PEER), *args]
    return [*head, "-cp", f"{classes}{os.pathsep}{libs}", "JavaPeer", *args]
