"""The in-process broker fixtures of the broker tests, for the metrics wiring tests."""

from tests.broker.conftest import start_broker, topic_name

__all__ = ["start_broker", "topic_name"]
