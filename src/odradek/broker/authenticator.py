"""Who is on the other end of a connection, and the SASL exchange that establishes it.

A :class:`ConnectionSession` belongs to one connection: its listener's security protocol,
the principal (``User:ANONYMOUS``; ``User:<subject DN>`` for a client certificate on an SSL
listener; ``User:<name>`` after SASL) — the one place the authorizer and quotas will read —
and, on SASL listeners, the :class:`SaslAuthenticator`.

Kafka's order of things on a SASL listener: ApiVersions (optional), SaslHandshake naming the
mechanism, then the mechanism's tokens — inside SaslAuthenticate requests after a v1
handshake, or as bare size-prefixed frames after a v0 one — and only then other requests.
The mechanisms themselves are the sans-IO machines of :mod:`odradek.security`; this module
only sequences them and fetches the stored credential (``lookup``, a coroutine: the broker
reads ``/config/users/<user>``).
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import Awaitable, Callable, Mapping

from odradek.config_sections import SecurityConfig
from odradek.config_security import uses_sasl
from odradek.protocol.api_versions import ApiKey
from odradek.security.plain import parse_plain, verify_plain
from odradek.security.scram import ScramCredential, ScramError, ScramMechanism, ScramServer

__all__ = [
    "ANONYMOUS",
    "AuthenticationFailed",
    "ConnectionSession",
    "CredentialLookup",
    "SaslAuthenticator",
    "SaslState",
]

ANONYMOUS = "User:ANONYMOUS"
PRE_AUTH_APIS = frozenset({int(ApiKey.API_VERSIONS), int(ApiKey.SASL_HANDSHAKE),
                           int(ApiKey.SASL_AUTHENTICATE)})
_MAX_TOKEN = 64 * 1024
DEFAULT_MAX_RECEIVE_SIZE = 524288  # Kafka's sasl.server.max.receive.size

CredentialLookup = Callable[[str], Awaitable[Mapping[str, str]]]
"""user name -> its ``/config/users`` config (``{"SCRAM-SHA-256": "salt=..,..."}``)."""


class AuthenticationFailed(Exception):
    """Wrong credentials or a broken exchange: SASL_AUTHENTICATION_FAILED, then close."""


class SaslState(enum.Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    COMPLETE = "complete"
    FAILED = "failed"


class SaslAuthenticator:
    def __init__(self, enabled: tuple[str, ...], lookup: CredentialLookup) -> None:
        self.enabled = enabled
        self._lookup = lookup
        self.state = SaslState.HANDSHAKE
        self.mechanism: str | None = None
        self.raw_tokens = False  # after a v0 handshake: tokens come as bare frames
        self.user: str | None = None
        self._scram: ScramServer | None = None

    def handshake(self, mechanism: str, version: int) -> bool:
        """True when ``mechanism`` is enabled; then the exchange may start. After a
        completed exchange this starts a re-authentication (KIP-368): same mechanism, and
        only with SaslAuthenticate requests (v1 handshake)."""
        if self.state is SaslState.COMPLETE:
            allowed = mechanism == self.mechanism and version >= 1
        else:
            allowed = self.state is SaslState.HANDSHAKE and mechanism in self.enabled
        if not allowed:
            self.state = SaslState.FAILED
            return False
        self.mechanism = mechanism
        self.raw_tokens = version == 0
        self.state = SaslState.AUTHENTICATE
        if mechanism != "PLAIN":
            self._scram = ScramServer(ScramMechanism.named(mechanism))
        return True

    async def step(self, token: bytes) -> bytes:
        """The next server token; raises :class:`AuthenticationFailed`. ``state`` becomes
        COMPLETE (``user`` set) when the exchange succeeded."""
        if self.state is not SaslState.AUTHENTICATE:
            self.state = SaslState.FAILED
            raise AuthenticationFailed("unexpected SASL token")
        try:
            if len(token) > _MAX_TOKEN:
                raise ScramError("SASL token too large")
            if self._scram is None:
                return await self._plain(token)
            return await self._scram_step(self._scram, token)
        except ScramError as exc:
            self.state = SaslState.FAILED
            raise AuthenticationFailed(str(exc)) from None

    async def _plain(self, token: bytes) -> bytes:
        _authzid, user, password = parse_plain(token)
        config = await self._lookup(user)
        for mechanism in ScramMechanism:
            stored = config.get(mechanism.mechanism_name)
            if stored is not None:
                # PBKDF2 (thousands of HMACs) off the event loop; hashlib releases the GIL.
                await asyncio.to_thread(verify_plain, mechanism, _credential(stored),
                                        password)
                return self._complete(user)
        raise ScramError("invalid credentials")

    async def _scram_step(self, server: ScramServer, token: bytes) -> bytes:
        if server.username is None:
            user = ScramServer.user_of(token)
            stored = (await self._lookup(user)).get(server.mechanism.mechanism_name)
            return server.first(token, _credential(stored) if stored else None)
        final = server.final(token)
        assert server.username is not None
        self._complete(server.username)
        return final

    def _complete(self, user: str) -> bytes:
        self.user = user
        self.state = SaslState.COMPLETE
        return b""


def _credential(stored: str) -> ScramCredential:
    try:
        return ScramCredential.from_kafka_string(stored)
    except ValueError:
        raise ScramError("stored credential is unreadable") from None


class ConnectionSession:
    """The peer of one connection, as far as authentication goes."""

    def __init__(self, protocol: str = "PLAINTEXT", *, principal: str = ANONYMOUS,
                 sasl: SaslAuthenticator | None = None,
                 max_receive_size: int = DEFAULT_MAX_RECEIVE_SIZE, reauth_ms: int = 0) -> None:
        self.protocol = protocol
        self.principal = principal
        self.sasl = sasl
        self.max_receive_size = max_receive_size  # largest frame before authentication
        self.reauth_ms = reauth_ms  # connections.max.reauth.ms; 0: sessions never expire
        self.expires_at: float | None = None  # monotonic deadline of this SASL session
        self.reauthenticating = False
        self.close_reason: str | None = None  # set: close once this response is written

    @classmethod
    def for_listener(cls, protocol: str, security: SecurityConfig, lookup: CredentialLookup,
                     principal: str | None = None) -> ConnectionSession:
        sasl = None
        if uses_sasl(protocol):
            sasl = SaslAuthenticator(security.sasl_enabled_mechanisms, lookup)
        return cls(protocol, principal=principal or ANONYMOUS, sasl=sasl,
                   max_receive_size=security.sasl_server_max_receive_size,
                   reauth_ms=security.connections_max_reauth_ms)

    @property
    def authenticated(self) -> bool:
        """Logged in (a re-authentication in progress keeps the session until it expires:
        requests may still be in flight while the client re-authenticates)."""
        sasl = self.sasl
        return sasl is None or sasl.state is SaslState.COMPLETE or (
            self.reauthenticating and sasl.state is SaslState.AUTHENTICATE
            and not self.expired())

    def expired(self) -> bool:
        """The SASL session outlived connections.max.reauth.ms without re-authenticating."""
        return self.expires_at is not None and time.monotonic() >= self.expires_at

    @property
    def expects_raw_token(self) -> bool:
        sasl = self.sasl
        return sasl is not None and sasl.raw_tokens and sasl.state is SaslState.AUTHENTICATE

    def allows(self, api_key: int) -> bool:
        """Whether a request may be answered now (before SASL completes: only the three)."""
        return self.authenticated or api_key in PRE_AUTH_APIS

    def completed(self) -> int:
        """The SASL exchange succeeded: from now on the peer is ``User:<name>``. Returns the
        session lifetime in ms (0: unlimited). A re-authentication must name the same user."""
        assert self.sasl is not None and self.sasl.user is not None
        principal = f"User:{self.sasl.user}"
        if self.reauthenticating and principal != self.principal:
            self.sasl.state = SaslState.FAILED
            raise AuthenticationFailed(f"re-authentication as {principal} on a connection of "
                                       f"{self.principal}")
        self.principal = principal
        self.reauthenticating = False
        if self.reauth_ms > 0:
            self.expires_at = time.monotonic() + self.reauth_ms / 1000
        return self.reauth_ms
