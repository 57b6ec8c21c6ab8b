"""SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677): credentials and both ends of the
exchange, sans-IO.

Why our own: the broker must verify clients against *stored* keys only (salt, StoredKey,
ServerKey, iterations — never a password), exactly as Kafka stores them under
``/config/users/<user>``, and odradek's client must speak the same exchange to a secured
broker. Both ends are small pure state machines: feed the peer's message, get the next one
or a :class:`ScramError` (the caller turns it into SASL_AUTHENTICATION_FAILED).

Every parse is defensive: messages are untrusted bytes from the network.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "MAX_ITERATIONS",
    "MIN_ITERATIONS",
    "ScramClient",
    "ScramCredential",
    "ScramError",
    "ScramMechanism",
    "ScramServer",
    "parse_attributes",
]

MIN_ITERATIONS = 4096  # Kafka's ScramMechanism.minIterations
MAX_ITERATIONS = 16384  # Kafka's ScramMechanism.maxIterations (bounds the broker's CPU)
_MAX_MESSAGE = 4096  # no legitimate SCRAM message comes near this


class ScramError(Exception):
    """The exchange failed: malformed message, unknown user, or wrong proof."""


class ScramMechanism(Enum):
    """The mechanisms Kafka supports; ``kafka_type`` is the int8 of the
    Alter/DescribeUserScramCredentials APIs."""

    SCRAM_SHA_256 = ("SCRAM-SHA-256", "sha256", 1)
    SCRAM_SHA_512 = ("SCRAM-SHA-512", "sha512", 2)

    def __init__(self, mechanism_name: str, hash_name: str, kafka_type: int) -> None:
        self.mechanism_name = mechanism_name
        self.hash_name = hash_name
        self.kafka_type = kafka_type

    @classmethod
    def named(cls, name: str) -> ScramMechanism:
        for mechanism in cls:
            if mechanism.mechanism_name == name.upper():
                return mechanism
        raise ValueError(f"unknown SCRAM mechanism {name!r}")

    @classmethod
    def of_type(cls, kafka_type: int) -> ScramMechanism:
        for mechanism in cls:
            if mechanism.kafka_type == kafka_type:
                return mechanism
        raise ValueError(f"unknown SCRAM mechanism type {kafka_type}")

    def hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self.hash_name).digest()

    def digest(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        """Hi(Normalize(password), salt, i) — PBKDF2 with HMAC of this hash."""
        return hashlib.pbkdf2_hmac(self.hash_name, password.encode(), salt, iterations)


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the broker stores for one user and mechanism (never the password)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(cls, mechanism: ScramMechanism, salted: bytes, salt: bytes,
                             iterations: int) -> ScramCredential:
        client_key = mechanism.hmac(salted, b"Client Key")
        return cls(salt, mechanism.digest(client_key), mechanism.hmac(salted, b"Server Key"),
                   iterations)

    @classmethod
    def from_password(cls, mechanism: ScramMechanism, password: str,
                      iterations: int = MIN_ITERATIONS, salt: bytes | None = None
                      ) -> ScramCredential:
        salt = salt if salt is not None else secrets.token_bytes(32)
        salted = mechanism.salted_password(password, salt, iterations)
        return cls.from_salted_password(mechanism, salted, salt, iterations)

    def to_kafka_string(self) -> str:
        """Kafka's ``ScramCredentialUtils.credentialToString`` layout."""
        b64 = base64.b64encode
        return (f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
                f"server_key={b64(self.server_key).decode()},iterations={self.iterations}")

    @classmethod
    def from_kafka_string(cls, text: str) -> ScramCredential:
        attributes = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
        try:
            return cls(_b64(attributes["salt"]), _b64(attributes["stored_key"]),
                       _b64(attributes["server_key"]), int(attributes["iterations"]))
        except (KeyError, ValueError) as exc:
            raise ValueError(f"not a SCRAM credential: {exc}") from None


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"invalid base64 {text[:40]!r}") from None


def parse_attributes(message: str) -> list[tuple[str, str]]:
    """``a=1,b=2`` → [("a", "1"), ("b", "2")]. RFC 5802 attributes are one letter; Kafka's
    extensions (``tokenauth=true``) are longer names, so any alphanumeric name is accepted."""
    pairs = []
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.isascii() or not key.isalnum():
            raise ScramError(f"malformed SCRAM attribute {part[:20]!r}")
        pairs.append((key, value))
    return pairs


def _decode(message: bytes) -> str:
    if len(message) > _MAX_MESSAGE:
        raise ScramError("SCRAM message too long")
    try:
        return message.decode("utf-8")
    except UnicodeDecodeError:
        raise ScramError("SCRAM message is not UTF-8") from None


def _saslname(name: str) -> str:
    """RFC 5802 saslname: ``=2C`` is ``,`` and ``=3D`` is ``=``; any other ``=`` is invalid."""
    if "=" in name.replace("=2C", "").replace("=3D", ""):
        raise ScramError("invalid escape in SCRAM user name")
    return name.replace("=2C", ",").replace("=3D", "=")


def _escape(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


class ScramServer:
    """The broker's side of one exchange. ``lookup(user)`` returns the stored credential
    (or None); it is called once, with the user named in the client-first message, so the
    caller may fetch it (e.g. from ZooKeeper) between :meth:`user_of` and :meth:`first`."""

    def __init__(self, mechanism: ScramMechanism, nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self._nonce = nonce or secrets.token_urlsafe(24)
        self._state = "first"
        self.username: str | None = None
        self._bare = self._server_first = self._full_nonce = self._gs2 = ""
        self._credential: ScramCredential | None = None

    @staticmethod
    def user_of(client_first: bytes) -> str:
        """The user a client-first message names (for fetching its credential)."""
        _gs2, bare = _split_gs2(_decode(client_first))
        for key, value in parse_attributes(bare)[:1]:
            if key == "n":
                return _saslname(value)
        raise ScramError("client-first message has no user name")

    def first(self, client_first: bytes, credential: ScramCredential | None) -> bytes:
        if self._state != "first":
            raise ScramError("unexpected SCRAM message")
        self._state = "failed"
        text = _decode(client_first)
        gs2, bare = _split_gs2(text)
        attributes = parse_attributes(bare)
        if len(attributes) < 2 or attributes[0][0] != "n" or attributes[1][0] != "r":
            raise ScramError("client-first message must start with n= and r=")
        if any(key == "m" for key, _ in attributes[2:]):  # other extensions are ignored
            raise ScramError("mandatory SCRAM extension not supported")
        self.username = _saslname(attributes[0][1])
        authzid = gs2.split(",")[1]
        if authzid and _saslname(authzid[2:]) != self.username:
            raise ScramError("authorization id differs from the user name")
        client_nonce = attributes[1][1]
        if not client_nonce or not client_nonce.isprintable() or "," in client_nonce:
            raise ScramError("invalid client nonce")
        if credential is None:
            raise ScramError(f"unknown user {self.username!r}")
        self._credential = credential
        self._bare = bare
        self._full_nonce = client_nonce + self._nonce
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._full_nonce},s={salt},i={credential.iterations}"
        self._gs2 = text[: len(text) - len(bare)]
        self._state = "final"
        return self._server_first.encode()

    def final(self, client_final: bytes) -> bytes:
        if self._state != "final" or self._credential is None:
            raise ScramError("unexpected SCRAM message")
        self._state = "failed"
        text = _decode(client_final)
        attributes = parse_attributes(text)
        if len(attributes) < 3 or attributes[0][0] != "c" or attributes[1][0] != "r":
            raise ScramError("client-final message must be c=,r=,...,p=")
        if attributes[-1][0] != "p":
            raise ScramError("client-final message must end with the proof")
        try:
            binding = base64.b64decode(attributes[0][1], validate=True)
            proof = base64.b64decode(attributes[-1][1], validate=True)
        except (binascii.Error, ValueError):
            raise ScramError("invalid base64 in client-final message") from None
        if binding.decode("utf-8", "replace") != self._gs2:
            raise ScramError("channel binding does not match")
        if attributes[1][1] != self._full_nonce:
            raise ScramError("nonce does not match")
        without_proof = text[: text.rindex(",p=")]
        auth_message = f"{self._bare},{self._server_first},{without_proof}".encode()
        mechanism, credential = self.mechanism, self._credential
        signature = mechanism.hmac(credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("invalid client proof")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(mechanism.digest(client_key), credential.stored_key):
            raise ScramError("invalid credentials")
        self._state = "done"
        server_signature = mechanism.hmac(credential.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)

    @property
    def complete(self) -> bool:
        return self._state == "done"


def _split_gs2(text: str) -> tuple[str, str]:
    """Split ``gs2-header`` from ``client-first-message-bare``; only ``n`` (no channel
    binding) and ``y`` are accepted, with an optional ``a=`` authzid."""
    parts = text.split(",", 2)
    if len(parts) != 3 or parts[0] not in ("n", "y"):
        raise ScramError("invalid GS2 header (channel binding is not supported)")
    if parts[1] and not parts[1].startswith("a="):
        raise ScramError("invalid GS2 authzid")
    return f"{parts[0]},{parts[1]},", parts[2]


class ScramClient:
    """The client's side (odradek's client, inter-broker connections)."""

    def __init__(self, mechanism: ScramMechanism, username: str, password: str,
                 nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self._password = password
        self._nonce = nonce or secrets.token_urlsafe(24)
        self._bare = f"n={_escape(username)},r={self._nonce}"
        self._expected_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = _decode(server_first)
        attributes = dict(parse_attributes(text))
        try:
            nonce, salt, iterations = attributes["r"], _b64(attributes["s"]), int(attributes["i"])
        except (KeyError, ValueError) as exc:
            raise ScramError(f"invalid server-first message: {exc}") from None
        if not nonce.startswith(self._nonce) or iterations < 1 or iterations > 10 * MAX_ITERATIONS:
            raise ScramError("invalid server-first message")
        mechanism = self.mechanism
        salted = mechanism.salted_password(self._password, salt, iterations)
        client_key = mechanism.hmac(salted, b"Client Key")
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._bare},{text},{without_proof}".encode()
        signature = mechanism.hmac(mechanism.digest(client_key), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = mechanism.hmac(salted, b"Server Key")
        self._expected_signature = mechanism.hmac(server_key, auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        attributes = dict(parse_attributes(_decode(server_final)))
        if "e" in attributes:
            raise ScramError(f"server rejected the credentials: {attributes['e']}")
        try:
            signature = _b64(attributes["v"])
        except (KeyError, ValueError):
            raise ScramError("invalid server-final message") from None
        if not hmac.compare_digest(signature, self._expected_signature):
            raise ScramError("server signature does not match (not the real server?)")
