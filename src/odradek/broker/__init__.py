"""The asyncio broker: listeners, connections, request handlers, replica manager.

Entry points live in :mod:`odradek.broker.app`: ``run(config)`` (blocking, signal-driven
clean shutdown, uvloop when installed) and ``serve(config)`` (a started :class:`Broker`
in the running loop, for tests). Layout: ``server`` (the Broker object), ``connection``
(per-connection pipeline), ``socket_channel`` (ordered writes with ``sendfile``),
``dispatch`` (handler table), ``handlers/`` (one module per API family), ``delayed``
(purgatory for long-poll Fetch and acks=-1 Produce), ``replica_manager`` (leader
partitions, high watermark), ``producer_ids`` (ZooKeeper-backed producer id blocks).
"""
