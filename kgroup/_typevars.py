"""The record key and value type variables, ``K`` and ``V`` (``Consumer[K, V]``, ``ConsumerRecord[K, V]``).

Their own module, re-exported by ``kgroup.types``: ``kgroup.consumer`` declares
``Consumer(Generic[K, V])`` when it is imported, and ``from kgroup import Consumer`` must not
load ``kgroup.types``'s attrs classes for that (they are imported by the first ``Consumer(...)``).
"""

from typing_extensions import TypeVar

__all__ = ["K", "V"]

#: the types of a record's key and value (``Consumer[K, V]``); raw bytes without a deserializer
K = TypeVar("K", default=bytes)
V = TypeVar("V", default=bytes)
