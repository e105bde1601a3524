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
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Callable, Coroutine
from typing import Any

from kgroup._io import quiet_kafka  # noqa: F401  (first: kafka-python, without its import-time warning)

# isort: split
import kafka.errors as KErrors
from kafka.net.sasl import SASL_MECHANISMS
from kafka.net.sasl.oauth import AbstractTokenProvider

from kgroup.errors import AuthenticationFailedError

__all__ = ["AuthenticationWatch", "sasl_mechanisms", "token_provider"]

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


def sasl_mechanisms() -> tuple[str, ...]:
    """The SASL mechanism names kafka-python's registry knows now, sorted."""
    return tuple(sorted(SASL_MECHANISMS))


class _TokenProvider:
    """kafka-python's ``AbstractTokenProvider`` (a registered virtual subclass) around any object with ``token()``."""

    def __init__(self, provider: Any) -> None:
        self._provider = provider

    def token(self) -> Any:
        return self._provider.token()

    def extensions(self) -> Any:
        extensions = getattr(self._provider, "extensions", None)
        return extensions() if callable(extensions) else {}


AbstractTokenProvider.register(_TokenProvider)


def token_provider(provider: Any) -> Any:
    """``provider`` as kafka-python's OAUTHBEARER takes it (``None`` stays ``None``)."""
    if provider is None or isinstance(provider, AbstractTokenProvider):
        return provider
    return _TokenProvider(provider)


def _refusal(exc: BaseException, mechanism: str | None) -> str | None:
    """Why ``exc`` (a failed connection's error) is a refusal, or ``None`` if it is not one."""
    if isinstance(exc, _SASL_REFUSALS):
        return f"SASL authentication ({mechanism}) failed: {exc}"
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, ssl.SSLError) and not isinstance(cause, _TLS_TRANSIENT):
        return f"TLS handshake failed: {cause}"
    return None


class AuthenticationWatch:
    """The last refused connection of a kafka-python connection manager, as a kgroup error.

    Wraps the manager's connect coroutine (``KafkaConnectionManager._connect``, which catches
    and logs every failure) to look at each connection's outcome; nothing else changes.
    """

    def __init__(self, manager: Any, mechanism: str | None) -> None:
        self._mechanism = mechanism
        self._failure: AuthenticationFailedError | None = None
        connect: Callable[..., Coroutine[Any, Any, Any]] = manager._connect

        @functools.wraps(connect)
        async def watched(node: Any, conn: Any, *args: Any, **kwargs: Any) -> Any:
            result = await connect(node, conn, *args, **kwargs)
            outcome = conn.init_future
            if outcome.succeeded():
                self._failure = None
            elif outcome.failed():
                reason = _refusal(outcome.exception, self._mechanism)
                if reason is not None:
                    self._failure = AuthenticationFailedError(f"broker {node.host}:{node.port}: {reason}")
            return result

        manager._connect = watched

    def failure(self) -> AuthenticationFailedError | None:
        """The last connection's refusal, or ``None`` (no refusal, or a connection succeeded since)."""
        return self._failure
