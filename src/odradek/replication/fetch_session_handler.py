"""The fetching side of an incremental fetch session (KIP-227): what the next Fetch names.

A follower (or any fetcher) keeps one session per leader connection, as Apache Kafka's
``FetchSessionHandler`` does. The first Fetch is full, at epoch 0, and asks for a session;
once the leader answers with an id, each Fetch names only the partitions whose position
changed since the leader last saw them (new fetch offset, log start, leader epoch or size
limit) and, in ``forgotten``, those no longer fetched; the answer holds only partitions with
something new. A session error (FETCH_SESSION_ID_NOT_FOUND: evicted or the leader
restarted; INVALID_FETCH_SESSION_EPOCH) or a broken connection starts over: the next Fetch
is full and names the old id at epoch 0, which closes that session on the leader and opens
a new one.

The wire rules and the leader's side are in :mod:`.fetch_session`. No I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from kio.schema.errors import ErrorCode

from odradek.protocol.fetch_request import FetchPosition
from odradek.types import TopicPartition

from .fetch_session import FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch

__all__ = ["FetchSessionHandler", "SessionRequest"]

T = TypeVar("T")

SESSION_ERRORS = frozenset({ErrorCode.fetch_session_id_not_found,
                            ErrorCode.invalid_fetch_session_epoch})


@dataclass(frozen=True, slots=True)
class SessionRequest:
    """What one Fetch carries of the session: its id and epoch, the partitions to name and
    those to forget, each grouped by topic in the order given."""

    session_id: int
    epoch: int
    topics: list[tuple[str, list[FetchPosition]]]
    forgotten: list[tuple[str, list[int]]]

    @property
    def full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)


@dataclass
class FetchSessionHandler:
    """One fetcher's session with one leader."""

    session_id: int = INVALID_SESSION_ID
    epoch: int = INITIAL_EPOCH
    # The position of each partition as the leader's session holds it.
    _sent: dict[TopicPartition, FetchPosition] = field(default_factory=dict)
    _pending: dict[TopicPartition, FetchPosition] | None = None

    def build(self, positions: Mapping[TopicPartition, FetchPosition]) -> SessionRequest:
        """The next Fetch for ``positions`` (every partition to fetch now, in order)."""
        self._pending = dict(positions)
        named: list[tuple[TopicPartition, FetchPosition]]
        if self.session_id == INVALID_SESSION_ID or self.epoch == INITIAL_EPOCH:
            named = list(positions.items())
            forgotten: list[tuple[str, list[int]]] = []
        else:
            sent = self._sent
            named = [(key, p) for key, p in positions.items() if sent.get(key) != p]
            forgotten = _group((key, key[1]) for key in sent if key not in positions)
        return SessionRequest(self.session_id, self.epoch, _group(named), forgotten)

    def handle_response(self, error_code: int, session_id: int) -> bool:
        """Take the answer to the last :meth:`build`; False when the session failed (the
        answer carries no partitions, and the next Fetch starts over)."""
        pending, self._pending = self._pending, None
        if error_code in SESSION_ERRORS or pending is None:
            self.reset()
            return False
        if self.epoch == INITIAL_EPOCH or self.session_id == INVALID_SESSION_ID:
            self.session_id = session_id
            self.epoch = next_epoch(INITIAL_EPOCH) if session_id else INITIAL_EPOCH
            self._sent = pending if session_id else {}
        elif session_id == INVALID_SESSION_ID:  # the leader closed it (nothing left in it)
            self.session_id, self.epoch, self._sent = INVALID_SESSION_ID, INITIAL_EPOCH, {}
        else:
            self.epoch = next_epoch(self.epoch)
            self._sent = pending
        return True

    def reset(self) -> None:
        """Start over (a session error or a broken connection): the next Fetch is full, and
        names the old session at epoch 0 so that the leader closes it."""
        self.epoch = INITIAL_EPOCH
        self._sent = {}
        self._pending = None


def _group(items: Iterable[tuple[TopicPartition, T]]) -> list[tuple[str, list[T]]]:
    grouped: dict[str, list[T]] = {}
    for key, value in items:
        grouped.setdefault(key[0], []).append(value)
    return list(grouped.items())
