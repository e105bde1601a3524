"""Key and value deserializers: turn a record's bytes into your types inside ``poll()``.

``Consumer(..., key_deserializer=..., value_deserializer=...)`` takes either a callable
``bytes -> T`` (``json.loads``, ``bytes.decode``, a protobuf ``FromString``) or an object with
Java's ``Deserializer.deserialize(topic, headers, data)`` signature (``Deserializer[T]`` below),
which also sees the topic and the headers (a schema id in a header, say). A null key or value (a
tombstone) stays None and reaches no deserializer. A deserializer that raises makes ``poll()``
raise ``RecordDeserializationError`` naming the topic, partition and offset, with the position
left at that record (Java's ``RecordDeserializationException``): seek past it to go on.

``string_deserializer()`` and ``json_deserializer()`` cover the common cases.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = ["Deserializer", "json_deserializer", "string_deserializer"]

T_co = TypeVar("T_co", covariant=True)
T = TypeVar("T")

#: a record's headers as ``poll()`` hands them out
Headers = tuple[tuple[str, bytes | None], ...]


@runtime_checkable
class Deserializer(Protocol[T_co]):
    """Java's ``org.apache.kafka.common.serialization.Deserializer``: topic and headers too."""

    def deserialize(self, topic: str, headers: Headers, data: bytes) -> T_co:
        """Turn ``data`` (never None) into a value; raise to reject the record."""
        ...


#: what ``key_deserializer``/``value_deserializer`` accept
DeserializerLike = Callable[[bytes], T] | Deserializer[T]


def as_function(deserializer: DeserializerLike[T] | None) -> Callable[[str, Headers, bytes], T] | None:
    """One calling convention for both forms (internal)."""
    if deserializer is None:
        return None
    if isinstance(deserializer, Deserializer):
        return deserializer.deserialize
    if not callable(deserializer):
        raise TypeError(
            f"a deserializer must be callable or have deserialize(topic, headers, data), got {deserializer!r}"
        )
    function = deserializer
    return lambda topic, headers, data: function(data)


def string_deserializer(encoding: str = "utf-8") -> Callable[[bytes], str]:
    """Bytes to ``str`` (Java ``StringDeserializer``, UTF-8 by default)."""
    return lambda data: data.decode(encoding)


def json_deserializer(**loads_kwargs: Any) -> Callable[[bytes], Any]:
    """Bytes to the JSON document they hold (``json.loads``)."""
    return lambda data: json.loads(data, **loads_kwargs)
