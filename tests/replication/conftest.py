"""Replication suites: real ZooKeeper plus 3-5 broker processes (see tests/harness)."""
