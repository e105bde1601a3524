"""The pure parts of ``kgroup.ParallelProcessor`` and ``kgroup.aio.ParallelProcessor``.

No IO, no threads, no clock (time is passed in).

* ``offsets``: one partition's offset tracker (the committed offset is the first record not yet
  completed) and the commit-metadata encoding of the completions above it.
* ``scheduler``: which record runs next under ``ordering`` = "key", "partition" or "unordered",
  with retries held back until their time.
* ``ledger``: the bookkeeping both processors share (what starts, retries, dead letters,
  back-pressure, commit points, rebalances, metrics and stuck records) and their settings.
"""
