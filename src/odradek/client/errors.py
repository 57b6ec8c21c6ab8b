"""Client-side errors: one hierarchy, so applications catch ``KafkaClientError`` and branch on
``retriable``.

A broker answers with an error *code*; :func:`raise_for_code` turns it into
:class:`BrokerResponseError` carrying that code (``exc.code`` is kio's ``ErrorCode``, which also
knows whether the code is retriable). Errors that never crossed the wire — a closed connection,
a deadline, bad arguments — have their own classes.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = [
    "AuthenticationError",
    "BrokerResponseError",
    "ClientClosed",
    "ConnectionFailed",
    "DeliveryTimeout",
    "ErrorCode",
    "KafkaClientError",
    "NoOffsetForPartition",
    "UnsupportedByBroker",
    "raise_for_code",
]


class KafkaClientError(Exception):
    """Base class of everything the client raises on purpose."""

    retriable = False


class ConnectionFailed(KafkaClientError):
    """The TCP connection to a broker could not be opened or broke while requests were pending.

    Retriable: the request may or may not have reached the broker (idempotence makes a retry
    of a produce safe).
    """

    retriable = True


class AuthenticationError(KafkaClientError):
    """SASL authentication failed (wrong credentials, or a mechanism the broker refuses).
    Not retriable: the same credentials fail again."""


class ClientClosed(KafkaClientError):
    """The producer/consumer/admin client was closed while the operation was pending."""


class DeliveryTimeout(KafkaClientError):
    """A record could not be delivered within ``delivery.timeout.ms`` (retries exhausted)."""


class UnsupportedByBroker(KafkaClientError):
    """The broker does not implement an API version this client can speak."""


class NoOffsetForPartition(KafkaClientError):
    """``auto.offset.reset=none`` and a partition has no valid position."""


class BrokerResponseError(KafkaClientError):
    """A non-zero error code in a broker response."""

    def __init__(self, code: int, context: str = "", message: str | None = None) -> None:
        self.code = ErrorCode(code)
        detail = f": {message}" if message else ""
        where = f" ({context})" if context else ""
        super().__init__(f"{self.code.name.upper()} [{int(self.code)}]{where}{detail}")

    @property
    def retriable(self) -> bool:  # type: ignore[override]
        return bool(self.code.retriable)


def raise_for_code(code: int, context: str = "", message: str | None = None) -> None:
    """Raise :class:`BrokerResponseError` unless ``code`` is 0 (NONE)."""
    if code:
        raise BrokerResponseError(code, context, message)
