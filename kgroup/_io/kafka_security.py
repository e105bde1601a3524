"""kafka-python's SASL and TLS, as kgroup sees them: the mechanisms, the token provider, refused connections.

* :func:`sasl_mechanisms`: the names kafka-python's SASL registry knows
  (``kafka.net.sasl.SASL_MECHANISMS``: ``AWS_MSK_IAM``, ``GSSAPI``, ``OAUTHBEARER``, ``PLAIN``,
  ``SCRAM-SHA-256``, ``SCRAM-SHA-512`` in kafka-python 3.0, and any a program registers with
  ``kafka.net.sasl.register_sasl_mechanism``): what ``ConsumerConfig.sasl_mechanism`` accepts.
* :func:`token_provider`: ``ConsumerConfig.sasl_oauth_token_provider`` is any object with a
  ``token()`` method (and optionally ``extensions()``); kafka-python's OAUTHBEARER accepts only a
  ``kafka.net.sasl.oauth.AbstractTokenProvider``, so another object is wrapped in one.
* :class:`AuthenticationWatch`: kafka-python retries a refused connection with backoff and logs
  why; the watch keeps the last refusal's reason (a TLS handshake that failed on the certificate,
  a SASL exchange the broker refused, a SASL mechanism that cannot start), so the consumer can
  raise it as :class:`kgroup.errors.AuthenticationFailedError`, as Java's ``NetworkClient``
  surfaces an ``AuthenticationException`` (``SslAuthenticationException``,
  ``SaslAuthenticationException``) from ``poll()``. A connection that succeeds clears it.
* :func:`hide_secrets`: kafka-python logs every request and every frame at DEBUG
  (``kafka.protocol.parser``, ``kafka.net.connection``), SaslAuthenticate's too, which carry a
  PLAIN password or an OAUTHBEARER token in the clear. A filter on those loggers replaces each
  secret kgroup handed kafka-python (the passwords, the tokens its provider returned; four
  characters or more) with ``[hidden]``, as Java never logs them.
"""

from __future__ import annotations

import collections
import functools
import logging
import ssl
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from kgroup._io import quiet_kafka  # noqa: F401  (first: kafka-python, without its import-time warning)

# isort: split
import kafka.errors as KErrors
from kafka.net.sasl import SASL_MECHANISMS
from kafka.net.sasl.oauth import AbstractTokenProvider

from kgroup.errors import AuthenticationFailedError

__all__ = ["AuthenticationWatch", "SecretFilter", "hide_secrets", "sasl_mechanisms", "token_provider"]

#: kafka-python's errors that mean the broker refused the SASL exchange, or that the client's
#: SASL mechanism could not start (Java: ``SaslAuthenticationException``,
#: ``UnsupportedSaslMechanismException``, ``IllegalSaslStateException``)
_SASL_REFUSALS = (
    KErrors.SaslAuthenticationFailedError,
    KErrors.UnsupportedSaslMechanismError,
    KErrors.IllegalSaslStateError,
    KErrors.KafkaConfigurationError,
)
#: TLS errors that say the connection closed mid-handshake, not that the handshake was refused
_TLS_TRANSIENT = (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLSyscallError)
#: kafka-python's loggers that print requests (SaslAuthenticate's auth bytes) and raw frames at DEBUG
_FRAME_LOGGERS = ("kafka.protocol.parser", "kafka.net.connection", "kafka.net.transport")
_HIDDEN = "[hidden]"
#: tokens remembered per process (a provider may return a new one per connection)
_TOKENS_KEPT = 64
#: shorter secrets are not looked for: replacing every "ab" would garble every line
_SHORTEST_SECRET = 4


def sasl_mechanisms() -> tuple[str, ...]:
    """The SASL mechanism names kafka-python's registry knows now, sorted."""
    return tuple(sorted(SASL_MECHANISMS))


class SecretFilter(logging.Filter):
    """Replace known secrets in a log record's message with ``[hidden]`` (a logging hook: any thread)."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._passwords: set[str] = set()
        self._tokens: collections.deque[str] = collections.deque(maxlen=_TOKENS_KEPT)

    @staticmethod
    def _forms(secret: str) -> set[str]:
        """The secret as text and as it shows inside a logged ``bytes`` repr."""
        return {secret, repr(secret.encode("utf-8"))[2:-1]}

    def add_password(self, secret: str | None) -> None:
        if secret and len(secret) >= _SHORTEST_SECRET:
            with self._lock:
                self._passwords |= self._forms(secret)

    def add_token(self, token: str) -> None:
        with self._lock:
            if len(token) >= _SHORTEST_SECRET and token not in self._tokens:
                self._tokens.append(token)

    def filter(self, record: logging.LogRecord) -> bool:
        """Always ``True``; the message loses every secret it held."""
        with self._lock:
            secrets = [*self._passwords, *self._tokens]
        if not secrets:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a broken format: let logging report it
            return True
        hidden = message
        for secret in secrets:
            hidden = hidden.replace(secret, _HIDDEN)
        if hidden != message:
            record.msg, record.args = hidden, ()
        return True


_secret_filter: SecretFilter | None = None
_install_lock = threading.Lock()


def hide_secrets() -> SecretFilter:
    """The one :class:`SecretFilter`, put on kafka-python's frame loggers on first use."""
    global _secret_filter
    with _install_lock:
        if _secret_filter is None:
            _secret_filter = SecretFilter()
            for name in _FRAME_LOGGERS:
                logging.getLogger(name).addFilter(_secret_filter)
        return _secret_filter


class _TokenProvider:
    """kafka-python's ``AbstractTokenProvider`` (a registered virtual subclass) around any object with ``token()``.

    Each token it hands kafka-python is hidden from kafka-python's DEBUG lines (:func:`hide_secrets`).
    """

    def __init__(self, provider: Any) -> None:
        self._provider = provider

    def token(self) -> Any:
        token = self._provider.token()
        if isinstance(token, str):
            hide_secrets().add_token(token)
        return token

    def extensions(self) -> Any:
        extensions = getattr(self._provider, "extensions", None)
        return extensions() if callable(extensions) else {}


AbstractTokenProvider.register(_TokenProvider)


def token_provider(provider: Any) -> Any:
    """``provider`` as kafka-python's OAUTHBEARER takes it, its tokens kept out of logs (``None`` stays)."""
    return None if provider is None else _TokenProvider(provider)


def _refusal(exc: BaseException, mechanism: str | None) -> str | None:
    """Why ``exc`` (a failed connection's error) is a refusal, or ``None`` if it is not one."""
    if isinstance(exc, _SASL_REFUSALS) or (mechanism is not None and isinstance(exc, RuntimeError)):
        # a RuntimeError: the mechanism could not start (kafka-python's GSSAPI and AWS_MSK_IAM
        # without their packages), which no retry mends
        return f"SASL authentication ({mechanism}) failed: {exc}"
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, ssl.SSLError) and not isinstance(cause, _TLS_TRANSIENT):
        return f"TLS handshake failed: {cause}"
    return None


def _read_before_close(transport: Any) -> None:
    """Hand on the bytes that arrived with the peer's close before reporting the close.

    kafka-python's transport reads until the socket says EOF and, when it does, drops what it
    read in that pass (``_read_from_sock`` aborts on the error before ``data_received``). A
    broker answers a refused SASL exchange and closes at once (Java's ``Selector``:
    ``completeCloseOnAuthenticationFailure``, then close), so a client that reads late gets
    the answer and the close together and lost the answer: "socket disconnected" instead of
    SASL_AUTHENTICATION_FAILED. Here such a pass returns its bytes; the next returns the close.
    """
    receive: Callable[[], tuple[bytes, BaseException | None]] = transport._sock_recv
    closed: list[BaseException] = []

    def sock_recv() -> tuple[bytes, BaseException | None]:
        if closed:
            return b"", closed.pop()
        data, error = receive()
        if error is not None and data:
            closed.append(error)  # the socket stays readable at EOF: the next pass comes at once
            return data, None
        return data, error

    transport._sock_recv = sock_recv


class AuthenticationWatch:
    """The last refused connection of a kafka-python connection manager, as a kgroup error.

    Wraps the manager's connect coroutine (``KafkaConnectionManager._connect``, which catches
    and logs every failure) to look at each connection's outcome, and its transport factory
    (``_build_transport``) so that a broker's last answer before it closes is read
    (:func:`_read_before_close`); nothing else changes.
    """

    def __init__(self, manager: Any, mechanism: str | None) -> None:
        self._mechanism = mechanism
        self._failure: str | None = None
        self._listeners: list[Callable[[], None]] = []
        connect: Callable[..., Coroutine[Any, Any, Any]] = manager._connect
        build: Callable[..., Coroutine[Any, Any, Any]] = manager._build_transport

        @functools.wraps(build)
        async def built(node: Any, *args: Any, **kwargs: Any) -> Any:
            transport = await build(node, *args, **kwargs)
            _read_before_close(transport)
            return transport

        manager._build_transport = built

        @functools.wraps(connect)
        async def watched(node: Any, conn: Any, *args: Any, **kwargs: Any) -> Any:
            result = await connect(node, conn, *args, **kwargs)
            outcome = conn.init_future
            if outcome.succeeded():
                self._failure = None
            elif outcome.failed():
                reason = _refusal(outcome.exception, self._mechanism)
                if reason is not None:
                    self._failure = f"broker {node.host}:{node.port}: {reason}"
                    for listener in list(self._listeners):
                        listener()
            return result

        manager._connect = watched

    def on_refusal(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` (on kafka-python's IO thread) at each refused connection from now on."""
        self._listeners.append(listener)

    def failure(self) -> AuthenticationFailedError | None:
        """The last refusal as a new exception (each raise its own), or ``None`` (none, or one connected since)."""
        failure = self._failure
        return None if failure is None else AuthenticationFailedError(failure)
