"""A minimal blocking Kafka wire client for tests: send kio requests, read kio responses,
or send raw bytes to see what the broker does with them."""

from __future__ import annotations

import socket
from typing import Any

from odradek.protocol.messages import decode_response, encode_request


class WireClient:
    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self._correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, body: Any, client_id: str | None = "wire-test") -> int:
        self._correlation_id += 1
        self.sock.sendall(encode_request(body, self._correlation_id, client_id))
        return self._correlation_id

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        size = int.from_bytes(self._read_exactly(4), "big", signed=True)
        return self._read_exactly(size)

    def receive(self, api_key: int, version: int) -> tuple[int, Any]:
        return decode_response(self.read_frame(), api_key, version)

    def request(self, body: Any) -> Any:
        correlation_id = self.send(body)
        got_id, response = self.receive(body.__api_key__, body.__version__)
        assert got_id == correlation_id, f"correlation id {got_id} != {correlation_id}"
        return response

    def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True when the broker closed the connection (EOF or reset) within ``timeout``."""
        self.sock.settimeout(timeout)
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    def _read_exactly(self, size: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < size:
            data = self.sock.recv(size - len(chunks))
            if not data:
                raise ConnectionError(f"connection closed after {len(chunks)} of {size} bytes")
            chunks += data
        return bytes(chunks)


def sasl_login(client: WireClient, mechanism: str, user: str, password: str) -> Any:
    """SaslHandshake then SaslAuthenticate (PLAIN: one token; SCRAM: both rounds, as far as
    the broker lets them go); the last SaslAuthenticate response."""
    from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
    from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

    from odradek.security.plain import plain_token
    from odradek.security.scram import ScramClient, ScramMechanism

    handshake = client.request(SaslHandshakeRequest(mechanism=mechanism))
    assert handshake.error_code == 0, handshake
    if mechanism == "PLAIN":
        return client.request(SaslAuthenticateRequest(auth_bytes=plain_token(user, password)))
    scram = ScramClient(ScramMechanism.named(mechanism), user, password)
    first = client.request(SaslAuthenticateRequest(auth_bytes=scram.first()))
    if first.error_code != 0:
        return first
    return client.request(SaslAuthenticateRequest(auth_bytes=scram.final(first.auth_bytes)))
