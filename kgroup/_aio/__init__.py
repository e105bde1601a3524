"""``kgroup.aio``'s machinery: the worker thread that runs the wrapped consumer, and the record buffer."""
