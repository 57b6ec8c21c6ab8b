"""The asyncio broker: listeners, connections, request handlers.

Entry points live in :mod:`odradek.broker.app`: ``run(config)`` (blocking, signal-driven
clean shutdown, uvloop when installed) and ``serve(config)`` (a started :class:`Broker`
in the running loop, for tests). Layout: ``server`` (the Broker object, which builds the
components from the config's typed sections), ``connection`` (per-connection pipeline),
``response_stream`` (ordered writes with ``sendfile``), ``dispatch`` (handler table) and
``outcomes`` (what a handler may answer instead of a body), ``handlers/`` (one module per
API family: decode, call one entry point, encode), ``offsets_log`` (the coordinator's
``__consumer_offsets`` through the replica manager), ``producer_ids`` (ZooKeeper-backed
producer id blocks), ``reconfigure`` (dynamic broker configs: the effective config, cut
into new sections, handed to the components that apply them live). Partitions,
replication and the purgatory are :mod:`odradek.replication`'s.
"""
