"""What ``poll()`` does to fetched records before handing them out: deserialize them, count their bytes.

``poll_columns()`` gets its columns from the fetch pipeline's columnar hand-out
(``kgroup._io.fetch_pipeline.fetch_columns``), imported on first use: kafka-python loads with it.
"""

from __future__ import annotations

from operator import itemgetter
from typing import TYPE_CHECKING, Any

from kgroup.errors import RecordDeserializationError
from kgroup.types import ConsumerRecord as _Record

if TYPE_CHECKING:
    from collections.abc import Callable

    from kgroup.columns import RecordColumns
    from kgroup.deserializers import Headers
    from kgroup.types import ConsumerRecord

    #: a deserializer as ``kgroup.deserializers.as_function`` makes it: (topic, headers, data) -> value
    Decode = Callable[[str, Headers, bytes], Any]

__all__ = ["columns_size", "deserialize", "fetch_columns", "records_size"]

_KEY = itemgetter(_Record._fields.index("key"))
_VALUE = itemgetter(_Record._fields.index("value"))


def fetch_columns(fetcher: Any, max_records: int, timeout_ms: int) -> list[RecordColumns]:
    """The fetcher's columnar hand-out (``kgroup._io.fetch_pipeline.fetch_columns``), imported on first use."""
    from kgroup._io.fetch_pipeline import fetch_columns

    return fetch_columns(fetcher, max_records, timeout_ms)


def records_size(records: list[ConsumerRecord]) -> int:
    """Bytes of keys and values in ``records`` (the ``bytes-consumed`` metric; null ones count 0).

    ``map`` and ``filter`` over the records: no Python code runs per record.
    """
    return sum(map(len, filter(None, map(_KEY, records)))) + sum(map(len, filter(None, map(_VALUE, records))))


def columns_size(columns: RecordColumns) -> int:
    """Bytes of keys and values in ``columns`` (the ``bytes-consumed`` metric)."""
    nbytes = getattr(columns, "nbytes", None)
    if isinstance(nbytes, int):
        return nbytes
    return sum(len(k) for k in columns.keys if k) + sum(len(v) for v in columns.values if v)


def deserialize(
    records: list[ConsumerRecord], key_fn: Decode | None, value_fn: Decode | None
) -> tuple[list[ConsumerRecord], list[RecordDeserializationError]]:
    """Apply the deserializers (None: leave the bytes); null keys and values stay None.

    Returns:
        The records deserialized, and one error per partition whose record failed: that record
        and the partition's later ones are left out.

    """
    out = []
    failed: dict[tuple[str, int], RecordDeserializationError] = {}
    for record in records:
        where = (record.topic, record.partition)
        if where in failed:
            continue
        origin = "key"
        key: Any
        value: Any
        try:
            key = record.key
            if key_fn is not None and key is not None:
                key = key_fn(record.topic, record.headers, key)
            origin = "value"
            value = record.value
            if value_fn is not None and value is not None:
                value = value_fn(record.topic, record.headers, value)
        except Exception as exc:
            error = RecordDeserializationError(record.topic_partition, record.offset, origin, repr(exc))
            error.__cause__ = exc
            failed[where] = error
            continue
        out.append(record._replace(key=key, value=value))
    return out, list(failed.values())
