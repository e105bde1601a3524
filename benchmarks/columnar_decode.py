"""Decoding one fetch response's records: the columnar decoder against the record decoder.

Offline (no broker): a record set like one partition's Fetch response (v2 record batches of
about ``--batch-bytes`` each, as a producer with that ``batch.size`` writes them, up to
``--fetch-bytes`` in all) is built with kafka-python's ``DefaultRecordBatchBuilder``, records
without key and with random values of ``--sizes`` bytes (half random, half zeros, so lz4 has
something to do), then decoded over and over by:

* ``columnar``: :func:`kgroup._io.columnar.decode_record_set` (CRC, decompression, columns);
* ``columnar + arrow``: the same, then the Arrow record batch of the Spark source's schema
  (``kgroup.spark._source._decoded_to_batch`` when it exists);
* ``records``: ``kgroup._io.record_decoder.PartitionRecords.take`` (aiokafka's C decoder when installed):
  one ``ConsumerRecord`` per record;
* ``records + arrow``: that, then ``RecordColumns`` and ``_columns_to_batch`` as the Spark
  source builds its Arrow batches from them.

Each figure is the best of ``--repeat`` timings of ``--rounds`` decodes, in records per second
on one core.

    python benchmarks/columnar_decode.py
    python benchmarks/columnar_decode.py --sizes 100,1024 --codecs none,lz4 --repeat 5
"""

from __future__ import annotations

import argparse
import os
import struct
import time
from collections.abc import Callable
from typing import Any

import kgroup._io.quiet_kafka  # noqa: F401  (kafka-python without its import-time warning)

# isort: split
import kafka.codec as kcodec
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from kafka.structs import TopicPartition as KTopicPartition

from kgroup._io import record_decoder
from kgroup._io.columnar import decode_record_set
from kgroup._io.fetch_pipeline import RecordColumns
from kgroup.types import TopicPartition

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
TP = KTopicPartition("bench", 0)


def record_set(size: int, codec: int, batch_bytes: int, fetch_bytes: int) -> tuple[bytes, int]:
    """Batches of records of ``size`` bytes, as a producer with ``batch.size`` = ``batch_bytes`` writes them."""
    out: list[bytes] = []
    total = 0
    offset = 0
    records = 0
    per_batch = max(1, batch_bytes // (size + 8))
    ts = 1_700_000_000_000
    while total < fetch_bytes:
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                            producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                            batch_size=1 << 30)
        for i in range(per_batch):
            value = os.urandom(size // 2) + bytes(size - size // 2)
            builder.append(i, timestamp=ts + (offset + i) // 10, key=None, value=value, headers=[])
        data = bytearray(builder.build())
        struct.pack_into(">q", data, 0, offset)
        out.append(bytes(data))
        total += len(data)
        offset += per_batch
        records += per_batch
    return b"".join(out), records


def best_rate(run: Callable[[], Any], records: int, rounds: int, repeat: int) -> float:
    run()  # warm up
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(rounds):
            run()
        best = min(best, (time.perf_counter() - start) / rounds)
    return records / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1024", help="value sizes in bytes, comma-separated")
    parser.add_argument("--codecs", default="none,lz4", help=f"of {','.join(CODECS)}, comma-separated")
    parser.add_argument("--batch-bytes", type=int, default=16384, help="bytes per record batch (batch.size)")
    parser.add_argument("--fetch-bytes", type=int, default=1 << 20, help="bytes per record set (one fetch)")
    parser.add_argument("--rounds", type=int, default=10, help="decodes per timing")
    parser.add_argument("--repeat", type=int, default=3, help="timings per figure (the best is shown)")
    args = parser.parse_args()

    from pyspark.sql.pandas.types import to_arrow_schema

    from kgroup.spark import _source

    schema = to_arrow_schema(_source.SCHEMA, timezone="UTC")
    to_batch = getattr(_source, "_decoded_to_batch", None)
    decoder = record_decoder.load_batch_decoder()
    tp = TopicPartition(TP.topic, TP.partition)
    print(f"record decoder: {'aiokafka (C)' if decoder[0] is not None else 'kafka-python'}; "
          f"batches of ~{args.batch_bytes} B, record sets of ~{args.fetch_bytes} B; records/s, best of {args.repeat}")
    print("| value B | codec | records/set | columnar | columnar + arrow | records | records + arrow | "
          "columnar + arrow / records + arrow |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        for name in args.codecs.split(","):
            if name != "none" and not getattr(kcodec, f"has_{name}")():
                print(f"| {size} | {name} | (kafka.codec has no {name} library installed) |")
                continue
            data, n = record_set(size, CODECS[name], args.batch_bytes, args.fetch_bytes)

            def columnar(data: bytes = data, n: int = n) -> Any:
                decoded = decode_record_set(data, 0, topic_partition=TP)
                assert decoded is not None
                assert decoded.error is None
                assert len(decoded) == n
                return decoded

            def columnar_arrow(data: bytes = data) -> Any:
                decoded = columnar(data)
                return to_batch(tp, decoded, 0, len(decoded), schema) if to_batch else None

            def records(data: bytes = data, n: int = n) -> Any:
                part = record_decoder.PartitionRecords(decoder, 0, TP, MemoryRecords(data))
                taken = part.take(None)
                assert len(taken) == n
                return taken

            def records_arrow(data: bytes = data) -> Any:
                return _source._columns_to_batch(RecordColumns(tp, records(data)), schema)

            rates = [best_rate(f, n, args.rounds, args.repeat) if f is not columnar_arrow or to_batch else 0.0
                     for f in (columnar, columnar_arrow, records, records_arrow)]
            ratio = rates[1] / rates[3] if rates[1] else rates[0] / rates[3]
            print(f"| {size} | {name} | {n:,} | {rates[0]:,.0f} | {rates[1]:,.0f} | {rates[2]:,.0f} | "
                  f"{rates[3]:,.0f} | {ratio:.1f} |", flush=True)


if __name__ == "__main__":
    main()
