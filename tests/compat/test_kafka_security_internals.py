"""What kgroup._io.kafka_security reaches for in kafka-python 3.0.x (guards the pin).

``AuthenticationWatch`` wraps ``KafkaConnectionManager._connect`` (a coroutine function taking
the node and the connection, which it awaits to the connection's ``init_future``), and reads
refusals from the errors kafka-python raises: a failed TLS handshake is a
``KafkaConnectionError`` raised while handling the ``ssl`` error; a refused SASL exchange a
``SaslAuthenticationFailedError``. It also wraps ``_build_transport`` to hand on the bytes a
read met with the peer's close (kafka-python drops them). The secret filter sits on the loggers that print requests
and frames. If an upgrade moves any of these, this fails before a refused connection turns
silent again.
"""

from __future__ import annotations

import inspect
import logging

import kafka.errors as KErrors
from kafka.net import connection, manager, transport
from kafka.protocol import parser

from kgroup._io import kafka_security


def test_the_manager_connects_in_a_coroutine_the_watch_can_wrap() -> None:
    connect = manager.KafkaConnectionManager._connect
    assert inspect.iscoroutinefunction(connect)
    assert list(inspect.signature(connect).parameters)[:3] == ["self", "node", "conn"]
    assert isinstance(inspect.getattr_static(connection.KafkaConnection, "init_future"), property)


def test_a_read_that_meets_the_close_drops_its_bytes_so_the_watch_hands_them_on() -> None:
    """kafka-python 3.0.x aborts on the close before handing on what the same pass read."""
    reading = inspect.getsource(transport.KafkaTCPTransport._read_from_sock)
    assert reading.index("return self.abort(error=err)") < reading.index("data_received(recvd_data)")
    for kind in (transport.KafkaTCPTransport, transport.KafkaSSLTransport):
        assert "return recvd_data, err" in inspect.getsource(kind._sock_recv)
    build = manager.KafkaConnectionManager._build_transport
    assert inspect.iscoroutinefunction(build)
    assert list(inspect.signature(build).parameters)[:2] == ["self", "node"]
    assert "self._build_transport(node" in inspect.getsource(manager.KafkaConnectionManager._connect)


def test_a_failed_tls_handshake_is_raised_from_within_the_ssl_error() -> None:
    source = inspect.getsource(manager.KafkaConnectionManager._build_transport)
    assert "await transport.handshake()" in source
    assert "except Exception as e:" in source and "raise Errors.KafkaConnectionError(" in source
    assert "from" not in source.split("raise Errors.KafkaConnectionError(", 1)[1].split("\n", 1)[0]  # context kept


def test_the_sasl_refusals_are_kafka_pythons_errors() -> None:
    for error in (KErrors.SaslAuthenticationFailedError, KErrors.UnsupportedSaslMechanismError,
                  KErrors.IllegalSaslStateError, KErrors.KafkaConfigurationError):
        assert issubclass(error, KErrors.KafkaError)
    assert "SaslAuthenticationFailedError" in inspect.getsource(connection.KafkaConnection._sasl_authenticate)


def test_the_frame_loggers_are_the_modules_that_log_requests_and_frames() -> None:
    assert {parser.log.name, connection.log.name, transport.log.name} == set(kafka_security._FRAME_LOGGERS)
    assert all(isinstance(module.log, logging.Logger) for module in (parser, connection, transport))
