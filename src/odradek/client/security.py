"""How odradek's client reaches a secured listener: TLS, then SASL, before any request.

:class:`ClientSecurity` holds kafka-python's settings (``security_protocol``,
``ssl_cafile``, ``sasl_mechanism``, ``sasl_plain_username``/``password``), or Kafka's client
properties (``--command-config``: ``security.protocol``, ``sasl.mechanism``,
``sasl.jaas.config`` or ``sasl.username``/``sasl.password``, ``ssl.truststore.location``;
:func:`settings_from_properties`).
:func:`open_stream` connects and authenticates (SaslHandshake v1 + SaslAuthenticate v1 with
the sans-IO machines of :mod:`odradek.security`); the caller then speaks Kafka as usual.
Brokers use the same path to reach each other on the inter-broker listener.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from odradek.config_security import PROTOCOLS, SASL_MECHANISMS, parse_jaas, uses_sasl, uses_tls
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import build, millis
from odradek.protocol.messages import decode_response, encode_request, request_type
from odradek.security.plain import plain_token
from odradek.security.scram import ScramClient, ScramError, ScramMechanism
from odradek.security.tls import TlsSettings, client_context

from .errors import AuthenticationError, ConnectionFailed

__all__ = ["PLAINTEXT", "ClientSecurity", "Stream", "open_stream", "settings_from_properties"]

_SIZE = struct.Struct(">i")
_SASL_VERSION = 1
_MAX_SASL_FRAME = 1 << 20


@dataclass(frozen=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanism: str = "PLAIN"
    username: str | None = None
    password: str | None = None

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"security protocol must be one of {', '.join(PROTOCOLS)}")
        if uses_sasl(self.protocol):
            if self.sasl_mechanism not in SASL_MECHANISMS:
                raise ValueError(f"sasl mechanism must be one of {', '.join(SASL_MECHANISMS)}")
            if not self.username or self.password is None:
                raise ValueError(f"{self.protocol} needs a user name and password")

    @classmethod
    def create(cls, security_protocol: str = "PLAINTEXT", *, ssl_cafile: str | None = None,
               ssl_certfile: str | None = None, ssl_keyfile: str | None = None,
               ssl_check_hostname: bool = True, ssl_context: ssl.SSLContext | None = None,
               sasl_mechanism: str = "PLAIN", sasl_plain_username: str | None = None,
               sasl_plain_password: str | None = None) -> ClientSecurity:
        """From kafka-python's keyword names."""
        protocol = security_protocol.upper()
        if uses_tls(protocol) and ssl_context is None:
            ssl_context = client_context(TlsSettings({
                "ssl.truststore.location": ssl_cafile,
                "ssl.keystore.location": None if ssl_keyfile else ssl_certfile,
                "ssl.endpoint.identification.algorithm": "https" if ssl_check_hostname else "",
            }))
            if ssl_keyfile and ssl_certfile:  # a key in its own file (kafka-python's way)
                ssl_context.load_cert_chain(ssl_certfile, ssl_keyfile)
        return cls(protocol, ssl_context, sasl_mechanism.upper(), sasl_plain_username,
                   sasl_plain_password)



_PROPERTIES = {"security.protocol", "sasl.mechanism", "sasl.jaas.config", "sasl.username",
               "sasl.password", "ssl.truststore.location", "ssl.keystore.location",
               "ssl.key.location", "ssl.endpoint.identification.algorithm",
               "ssl.truststore.type", "ssl.keystore.type"}


def settings_from_properties(properties: Mapping[str, str]) -> dict[str, Any]:
    """Kafka client properties (a ``--command-config`` file) as the keyword arguments of
    odradek's clients (kafka-python's names). Unknown keys are an error, not ignored."""
    unknown = sorted(set(properties) - _PROPERTIES)
    if unknown:
        raise ValueError(f"unsupported client properties: {', '.join(unknown)} (supported: "
                         f"{', '.join(sorted(_PROPERTIES))})")
    for kind in ("ssl.truststore.type", "ssl.keystore.type"):
        if properties.get(kind, "PEM").strip().upper() != "PEM":
            raise ValueError(f"{kind}: only PEM files are supported")
    settings: dict[str, Any] = {
        "security_protocol": properties.get("security.protocol", "PLAINTEXT").strip().upper(),
        "sasl_mechanism": properties.get("sasl.mechanism", "PLAIN").strip().upper(),
        "ssl_cafile": properties.get("ssl.truststore.location"),
        "ssl_certfile": properties.get("ssl.keystore.location"),
        "ssl_keyfile": properties.get("ssl.key.location"),
        "ssl_check_hostname": properties.get("ssl.endpoint.identification.algorithm",
                                             "https").lower() == "https",
        "sasl_plain_username": properties.get("sasl.username"),
        "sasl_plain_password": properties.get("sasl.password"),
    }
    jaas = properties.get("sasl.jaas.config")
    if jaas:
        settings["sasl_plain_username"], settings["sasl_plain_password"] = parse_jaas(jaas)
    return settings


PLAINTEXT = ClientSecurity()


@dataclass(frozen=True, slots=True)
class Stream:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    session_lifetime_ms: int = 0  # the broker's connections.max.reauth.ms; 0: unlimited


async def open_stream(host: str, port: int, security: ClientSecurity = PLAINTEXT,
                      client_id: str = "odradek") -> Stream:
    """A connected (TLS) and authenticated (SASL) stream to ``host:port``. A SASL session
    with a lifetime must not be used beyond it (odradek does not re-authenticate, it
    reconnects: :class:`~odradek.client.connection.Connection` retires such connections)."""
    tls: Any = security.ssl_context if uses_tls(security.protocol) else None
    reader, writer = await asyncio.open_connection(
        host, port, limit=1 << 20, ssl=tls, server_hostname=host if tls else None)
    if not uses_sasl(security.protocol):
        return Stream(reader, writer)
    try:
        lifetime_ms = await _authenticate(reader, writer, security, client_id)
    except BaseException:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
        raise
    return Stream(reader, writer, lifetime_ms)


async def _authenticate(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                        security: ClientSecurity, client_id: str) -> int:
    mechanism = security.sasl_mechanism
    handshake = await _call(reader, writer, ApiKey.SASL_HANDSHAKE, {"mechanism": mechanism},
                            client_id, 0)
    if handshake.error_code != 0:
        raise AuthenticationError(f"broker does not accept SASL mechanism {mechanism} "
                                  f"(it offers {', '.join(handshake.mechanisms)})")
    assert security.username is not None and security.password is not None
    if mechanism == "PLAIN":
        _reply, lifetime_ms = await _token(
            reader, writer, plain_token(security.username, security.password), client_id, 1)
        return lifetime_ms
    scram = ScramClient(ScramMechanism.named(mechanism), security.username, security.password)
    try:
        server_first, _ = await _token(reader, writer, scram.first(), client_id, 1)
        server_final, lifetime_ms = await _token(reader, writer, scram.final(server_first),
                                                 client_id, 2)
        scram.verify(server_final)
    except ScramError as exc:
        raise AuthenticationError(f"SCRAM authentication failed: {exc}") from None
    return lifetime_ms


async def _token(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, token: bytes,
                 client_id: str, correlation_id: int) -> tuple[bytes, int]:
    response = await _call(reader, writer, ApiKey.SASL_AUTHENTICATE, {"auth_bytes": token},
                           client_id, correlation_id)
    if response.error_code != 0:
        raise AuthenticationError(response.error_message or "SASL authentication failed")
    return bytes(response.auth_bytes), millis(response.session_lifetime)


async def _call(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, api_key: ApiKey,
                body: Mapping[str, Any], client_id: str, correlation_id: int) -> Any:
    request = build(request_type(api_key, _SASL_VERSION), body)
    writer.write(encode_request(request, correlation_id, client_id))
    await writer.drain()
    try:
        (size,) = _SIZE.unpack(await reader.readexactly(4))
        if not 0 < size <= _MAX_SASL_FRAME:
            raise ConnectionFailed(f"invalid {api_key.name} response size {size}")
        frame = await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        raise AuthenticationError(f"the broker closed the connection during "
                                  f"{api_key.name}") from None
    return decode_response(frame, api_key, _SASL_VERSION)[1]
