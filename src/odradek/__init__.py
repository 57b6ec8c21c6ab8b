"""odradek: a distributed commit log for log processing that speaks Apache Kafka's protocol."""

__version__ = "0.2.0"
