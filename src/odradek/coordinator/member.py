"""One member of a classic group, as the coordinator sees it.

A member holds at most one parked JoinGroup and one parked SyncGroup, each represented by
the *token* the caller handed in; the group answers a token exactly once (with a result or
an error), which is what lets the asyncio adapter map tokens to futures without leaks.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["JoinRequest", "Member", "Protocols"]

Protocols = tuple[tuple[str, bytes], ...]
"""(protocol name, member metadata) in the member's order of preference."""


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """A JoinGroup, version-independent (the handler fills v0's rebalance timeout with the
    session timeout and sets ``require_known_member_id`` from v4)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    require_known_member_id: bool = True


@dataclass(eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    join_token: int | None = None
    sync_token: int | None = None
    # A member that joined without an id cannot heartbeat yet; it is expired by the new
    # member join timeout instead of its session timeout.
    is_new: bool = False
    heartbeat_deadline_ms: int | None = None

    @classmethod
    def joining(
        cls, member_id: str, request: JoinRequest, token: int, heartbeat_deadline_ms: int
    ) -> Member:
        """A new member, its JoinGroup parked under ``token``."""
        return cls(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client_id=request.client_id,
            client_host=request.client_host,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            session_timeout_ms=request.session_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=request.protocols,
            join_token=token,
            is_new=True,
            heartbeat_deadline_ms=heartbeat_deadline_ms,
        )

    def rejoin(self, request: JoinRequest) -> None:
        """A known member joins again: its protocols, timeouts and client may have changed."""
        self.protocols = request.protocols
        self.rebalance_timeout_ms = request.rebalance_timeout_ms
        self.session_timeout_ms = request.session_timeout_ms
        self.client_id = request.client_id
        self.client_host = request.client_host

    def touch(self, now_ms: int) -> None:
        """The member showed it is alive (a heartbeat, a join or sync answered, an offset
        commit): its session timeout starts over."""
        self.heartbeat_deadline_ms = now_ms + self.session_timeout_ms

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def awaiting_join(self) -> bool:
        return self.join_token is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_token is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata_for(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def matches(self, protocols: Protocols) -> bool:
        """Same protocols with the same metadata in the same order (a repeated JoinGroup)."""
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")
