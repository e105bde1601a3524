"""Kafka frames <-> message bodies for any API, over kafka-python's message classes.

The codec of :class:`~kgroup.testing.CoordinatorProxy`, its fault rules and the conformance
tests; ``import kgroup`` does not load it (only :mod:`kgroup.testing` does). Bodies are nested
dicts with Kafka's snake_case field names, exactly as kafka-python's ``to_dict(json=False)``
spells them; fields outside the message version are absent on decode and ignored on encode
(missing ones take the schema default). Frames passed in here exclude the 4-byte size prefix;
frames returned include it.

Unlike the client adapter, which knows the group APIs only, this codec serves every API
kafka-python has classes for (the proxy rewrites Metadata, ApiVersions, Fetch and ListOffsets
responses it forwards), so it registers them all.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any, NamedTuple

from kgroup._io import quiet_kafka  # noqa: F401  (first: kafka-python, without its import-time warning)

# isort: split
# importing these modules defines (and registers) every request/response class kafka-python has
import kafka.protocol.admin
import kafka.protocol.consumer
import kafka.protocol.metadata
import kafka.protocol.producer  # noqa: F401
from kafka.protocol.api_key import ApiKey
from kafka.protocol.api_message import ApiMessage

from kgroup._io.kafka_messages import build_message, plain

__all__ = [
    "RequestHeaderInfo",
    "api_key_of",
    "api_name",
    "api_version_range",
    "decode_request_body",
    "decode_response",
    "encode_request",
    "encode_response",
    "peek_request_header",
    "request_expects_response",
    "response_has_field",
    "response_version_of",
]

_MESSAGE_CLASSES: dict[tuple[int, str], Any] = {}


def _message_classes() -> dict[tuple[int, str], Any]:
    """``(api_key, "request"|"response") -> kafka-python primary message class``, built once."""
    if not _MESSAGE_CLASSES:
        todo: list[Any] = list(ApiMessage.__subclasses__())
        while todo:
            cls = todo.pop()
            todo.extend(cls.__subclasses__())
            if getattr(cls, "_class_version", None) is None and getattr(cls, "_json", None) is not None:
                _MESSAGE_CLASSES.setdefault((int(cls.API_KEY), str(cls.type)), cls)
    return _MESSAGE_CLASSES


def _message_class(api_key: int, kind: str) -> Any:
    try:
        return _message_classes()[(api_key, kind)]
    except KeyError:
        raise ValueError(f"kafka-python has no {kind} class for api key {api_key}") from None


class RequestHeaderInfo(NamedTuple):
    """The fixed part of a request header."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def peek_request_header(frame: bytes) -> RequestHeaderInfo:
    """Parse the request header fields every version shares (key, version, correlation id, client id).

    Raises:
        ValueError: the frame is too short.

    """
    if len(frame) < 10:
        raise ValueError(f"request frame of {len(frame)} bytes is too short for a header")
    api_key, api_version, correlation_id, n = struct.unpack_from(">hhih", frame, 0)
    client_id = None if n < 0 else bytes(frame[10 : 10 + n]).decode("utf-8", "replace")
    return RequestHeaderInfo(api_key, api_version, correlation_id, client_id)


def _read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _request_body_offset(frame: bytes, api_key: int, api_version: int) -> int:
    (n,) = struct.unpack_from(">h", frame, 8)
    pos: int = 10 + max(int(n), 0)
    if _message_class(api_key, "request").flexible_version_q(api_version):  # header v2: tagged fields
        count, pos = _read_uvarint(frame, pos)
        for _ in range(count):
            _tag, pos = _read_uvarint(frame, pos)
            size, pos = _read_uvarint(frame, pos)
            pos += size
    return pos


def request_expects_response(frame: bytes) -> bool:
    """False only for a Produce request with ``acks=0`` (the broker sends nothing back)."""
    api_key, api_version, _, _ = peek_request_header(frame)
    if api_key != ApiKey.Produce:
        return True
    try:
        pos = _request_body_offset(frame, api_key, api_version)
        if api_version >= 3:  # transactional_id: nullable (compact from v9) string
            if _message_class(api_key, "request").flexible_version_q(api_version):
                length, pos = _read_uvarint(frame, pos)
                pos += max(length - 1, 0)
            else:
                (length,) = struct.unpack_from(">h", frame, pos)
                pos += 2 + max(length, 0)
        (acks,) = struct.unpack_from(">h", frame, pos)
    except (IndexError, struct.error, ValueError):
        return True
    return bool(acks != 0)


def api_name(api_key: int) -> str:
    """Kafka's name of an API (``"JoinGroup"``), or ``"Api<key>"`` for keys kafka-python does not know."""
    try:
        return str(ApiKey(api_key).name)
    except ValueError:
        return f"Api{api_key}"


def api_key_of(name: str) -> int:
    """The key of an API given its Kafka name (``"Heartbeat"`` -> 12).

    Raises:
        ValueError: unknown name.

    """
    try:
        return int(ApiKey[name])
    except KeyError:
        raise ValueError(f"unknown Kafka API name {name!r}") from None


def api_version_range(api_key: int) -> tuple[int, int] | None:
    """The request versions kafka-python can encode and decode for ``api_key`` (None: no class)."""
    try:
        cls = _message_class(api_key, "request")
    except ValueError:
        return None
    low, high = cls.valid_versions
    return int(low), int(high)


def decode_request_body(api_key: int, api_version: int, frame: bytes) -> dict[str, Any]:
    """Decode a whole request frame (header included) to its body dict.

    Raises:
        ValueError: no kafka-python class, or the version is outside its range.
        Exception: whatever kafka-python raises on malformed bytes.

    """
    cls = _message_class(api_key, "request")
    message = cls.decode(frame, version=api_version, header=True)
    return dict(plain(message.to_dict(json=False)))


def encode_request(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: Mapping[str, Any]
) -> bytes:
    """Encode a request (header and 4-byte size prefix included) from its body dict."""
    cls = _message_class(api_key, "request")
    message = build_message(cls, body, api_version)
    message.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(message.encode(header=True, framed=True))


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Mapping[str, Any]) -> bytes:
    """Encode a response (header and 4-byte size prefix included) from its body dict.

    kafka-python's quirks are kept: an ApiVersions response header is never flexible.
    """
    cls = _message_class(api_key, "response")
    message = build_message(cls, body, api_version)
    message.with_header(correlation_id=correlation_id)
    return bytes(message.encode(header=True, framed=True))


def decode_response(api_key: int, api_version: int, frame: bytes) -> tuple[int, dict[str, Any]]:
    """Decode a response frame (header included, size prefix excluded) to ``(correlation_id, body)``.

    An ApiVersions response carrying an error has a v0 body whatever was asked (kafka-python's rule).
    """
    cls = _message_class(api_key, "response")
    message = cls.decode(frame, version=api_version, header=True)
    return int(message.header.correlation_id), dict(plain(message.to_dict(json=False)))


def response_version_of(api_key: int, api_version: int, body: Mapping[str, Any]) -> int:
    """The version to encode a response body at: ApiVersions errors go back as v0 (KIP-511)."""
    if api_key == ApiKey.ApiVersions and body.get("error_code", 0) != 0:
        return 0
    return api_version


def response_has_field(api_key: int, api_version: int, name: str) -> bool:
    """Whether the response of ``api_key`` at ``api_version`` has a top-level field ``name``."""
    try:
        cls = _message_class(api_key, "response")
    except ValueError:
        return False
    field = cls._struct.fields.get(name)
    return field is not None and bool(field.for_version_q(api_version))
