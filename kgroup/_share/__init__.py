"""The share consumer's pure core (KIP-932): share sessions, acknowledgements, acquired records.

No IO, no threads, no clock: values in, values out, as the membership machines are. The poll
thread's driver (:mod:`kgroup._driver.share_fetch`) runs them against the network port, and
``kgroup.ShareConsumer`` (:mod:`kgroup.share_consumer`) is the facade over both; an asyncio
wrapper or a simulator can drive the same core.

* :mod:`kgroup._share.acks`: what the application acknowledged (``InFlight``: the records the
  last ``poll()`` returned, implicit and explicit modes) and the acknowledgement batches the
  requests carry (``batches``, Java's ``Acknowledgements.getAcknowledgementBatches``).
* :mod:`kgroup._share.session`: one share session per partition leader (``ShareSession``,
  Java's ``ShareSessionHandler``): its epoch, its partitions, the next request.
* :mod:`kgroup._share.acquired`: a fetched partition's decoded records matched with the
  offsets the member acquired (Java's ``ShareCompletedFetch``).
"""
