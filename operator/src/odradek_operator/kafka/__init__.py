"""The Kafka side: observing and changing a cluster through the admin protocol."""
