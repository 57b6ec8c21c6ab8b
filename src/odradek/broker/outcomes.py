"""What a handler may return instead of a response body: the two markers.

Kept apart from :mod:`.dispatch` (which imports every handler) so a handler can name them
without importing its own dispatcher.
"""

from __future__ import annotations

from typing import Final

__all__ = ["CLOSE_CONNECTION", "NO_RESPONSE", "Marker"]


class Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


NO_RESPONSE: Final = Marker("NO_RESPONSE")
"""The request gets no response at all (Produce with acks=0)."""

CLOSE_CONNECTION: Final = Marker("CLOSE_CONNECTION")
"""Close the connection instead of answering (Kafka's answer to a failed acks=0 produce)."""
