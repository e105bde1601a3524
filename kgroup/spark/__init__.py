"""``kgroup.spark``: a PySpark data source whose partitions come from a consumer group.

Install with ``pip install 'kgroup[spark]'`` (PySpark 4.2+, pyarrow). Then::

    import kgroup.spark
    kgroup.spark.register(spark)
    df = (spark.readStream.format("kgroup")
          .option("bootstrap.servers", "host:9092")
          .option("subscribe", "t1,t2")
          .option("group.id", "g")
          .load())

The Spark application is a member of the group ``group.id``: several applications with one
group id share the topics' partitions, and the group's committed offsets show their progress.
The schema is that of Spark's Kafka source (key, value, topic, partition, offset, timestamp,
timestampType, headers). Semantics, options and restart rules: docs/spark.md.

Importing this package does not import PySpark; ``register`` and ``KGroupDataSource`` do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kgroup.spark._options import DataLossError, SourceOptionError, SourceOptions, parse_options

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

    from kgroup.spark._source import SCHEMA, KGroupDataSource

__all__ = [
    "SCHEMA",
    "DataLossError",
    "KGroupDataSource",
    "SourceOptionError",
    "SourceOptions",
    "parse_options",
    "register",
]


def register(spark: SparkSession) -> None:
    """Register the ``kgroup`` format with ``spark`` (``spark.dataSource.register``).

    Raises:
        ImportError: PySpark or pyarrow is not installed (``pip install 'kgroup[spark]'``).

    """
    from kgroup.spark._source import KGroupDataSource

    spark.dataSource.register(KGroupDataSource)


def __getattr__(name: str) -> Any:
    if name in ("SCHEMA", "KGroupDataSource"):
        from kgroup.spark import _source

        return getattr(_source, name)
    raise AttributeError(f"module 'kgroup.spark' has no attribute {name!r}")
