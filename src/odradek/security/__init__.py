"""Authentication without I/O: SCRAM (RFC 5802/7677) and PLAIN (RFC 4616) state machines,
the stored credential format Kafka keeps in ZooKeeper, and TLS contexts from Kafka's
``ssl.*`` settings. The broker's connection code and odradek's client drive these; nothing
here touches a socket."""
