"""A cluster nobody can reach: every call returns within its timeout, one clear error, quiet logs.

The consumer points at a closed local port (connection refused at once). ``subscribe()`` does
not wait for the cluster (Java's does not); ``poll(timeout_ms)`` returns within its timeout;
once ``default_api_timeout_ms`` has passed with no broker ever reached, ``poll()`` raises
``ClusterUnreachableError``; ``committed()`` and ``end_offsets()`` give up at their timeouts;
``close()`` returns at once; kafka-python's connection chatter is rate-limited.
"""

from __future__ import annotations

import logging
import socket
import time

import pytest

import kgroup
from kgroup._io.log_limit import RepeatFilter


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: connections are refused


class _Count(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


#: what the test waits on is a timeout of kgroup's; its bounds leave a loaded machine room
#: (a call that waited for the cluster instead would take default_api_timeout_ms, 8 s, or more)
SLACK_S = 3.0


def test_every_call_returns_within_its_timeout_and_the_error_says_what_happened() -> None:
    counter = _Count()
    root = logging.getLogger()
    root.addHandler(counter)
    level = root.level
    root.setLevel(logging.INFO)
    try:
        consumer = kgroup.Consumer(
            bootstrap_servers=f"127.0.0.1:{_closed_port()}", group_id="g", default_api_timeout_ms=8000,
        )
        subscribed = time.monotonic()
        consumer.subscribe(["t"])
        assert time.monotonic() - subscribed < SLACK_S  # it does not wait for the cluster
        started = time.monotonic()
        assert consumer.poll(300) == []
        assert 0.25 <= time.monotonic() - started < 0.3 + SLACK_S
        started = time.monotonic()
        with pytest.raises(kgroup.CoordinatorUnavailable, match="gave up after 500 ms"):
            consumer.committed([kgroup.TopicPartition("t", 0)], timeout_ms=500)
        assert time.monotonic() - started < 0.5 + SLACK_S
        with pytest.raises(kgroup.KafkaTimeoutError):
            consumer.end_offsets([kgroup.TopicPartition("t", 0)], timeout_ms=500)
        error = None
        deadline = time.monotonic() + 30
        while error is None and time.monotonic() < deadline:
            try:
                consumer.poll(200)
            except kgroup.ClusterUnreachableError as exc:
                error = exc
        assert error is not None and "no broker of bootstrap_servers" in str(error)
        # default_api_timeout_ms after subscribe(), not before
        assert 8.0 <= time.monotonic() - subscribed < 8.0 + SLACK_S
        with pytest.raises(kgroup.ClusterUnreachableError):
            consumer.poll(0)  # again, until a broker answers
        lines = len(counter.records)
        started = time.monotonic()
        consumer.close()
        assert time.monotonic() - started < SLACK_S
    finally:
        root.removeHandler(counter)
        root.setLevel(level)
    # about 8.5 s of trying: a dozen lines a second without the rate limit
    assert lines < 25, [r.getMessage() for r in counter.records]


def test_repeat_filter_lets_a_message_through_once_per_window_and_counts_the_rest() -> None:
    f = RepeatFilter(window_s=10)

    def record(msg: str, t: float) -> logging.LogRecord:
        r = logging.LogRecord("kafka.net.manager", logging.WARNING, __file__, 1, msg, (), None)
        r.created = t
        return r

    assert f.filter(record("Bootstrap connection to 1 failed (backoff 0.05 secs)", 100.0))
    assert not f.filter(record("Bootstrap connection to 1 failed (backoff 0.11 secs)", 101.0))
    assert not f.filter(record("Bootstrap connection to 1 failed (backoff 0.23 secs)", 102.0))
    assert f.filter(record("Connection refused by something else", 102.5))  # distinct: through
    again = record("Bootstrap connection to 1 failed (backoff 0.95 secs)", 110.5)
    assert f.filter(again)
    assert again.getMessage().endswith("(2 similar messages suppressed)")


def test_repeat_filter_never_hides_another_node_and_leaves_kgroup_alone() -> None:
    from kgroup._io.log_limit import CHATTY

    f = RepeatFilter(window_s=10)

    def record(msg: str, t: float) -> logging.LogRecord:
        r = logging.LogRecord("kafka.net.connection", logging.ERROR, __file__, 1, msg, (), None)
        r.created = t
        return r

    assert f.filter(record("node 2: connection lost", 1.0))
    assert f.filter(record("node 3: connection lost", 1.5))  # another node: another message
    # kgroup's own logs (a coordinator that moved) are never filtered
    assert not any(name.startswith("kgroup") for name in CHATTY)


def test_a_refused_connection_is_passed_on_at_warning_other_errors_stay_errors() -> None:
    """kafka-python logs ECONNREFUSED (no broker listening yet, a broker restarting) at ERROR;
    for a client that retries it is routine: the filter passes it on at WARNING."""
    f = RepeatFilter(window_s=10)

    def record(msg: str, t: float) -> logging.LogRecord:
        r = logging.LogRecord("kafka.net.manager", logging.ERROR, __file__, 1, msg, (), None)
        r.created = t
        return r

    refused = record("Connection failed: KafkaConnectionError: 111 ECONNREFUSED", 1.0)
    assert f.filter(refused)
    assert (refused.levelno, refused.levelname) == (logging.WARNING, "WARNING")
    other = record("Bootstrap failed: KafkaTimeoutError: Unable to bootstrap from 127.0.0.1:1", 1.0)
    assert f.filter(other)
    assert other.levelno == logging.ERROR
