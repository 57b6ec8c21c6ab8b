"""SASL/PLAIN (RFC 4616), verified against the stored SCRAM credential.

Why no password store of its own: PLAIN sends the password (over TLS, one hopes), and the
broker checks it by deriving the SCRAM keys from it with the stored salt and iterations —
so one salted credential per user serves both mechanisms and no plaintext password is
ever kept anywhere.
"""

from __future__ import annotations

import hmac

from .scram import ScramCredential, ScramError, ScramMechanism

__all__ = ["MAX_PLAIN_TOKEN", "parse_plain", "plain_token", "verify_plain"]

MAX_PLAIN_TOKEN = 1024


def parse_plain(token: bytes) -> tuple[str, str, str]:
    """``authzid NUL authcid NUL passwd`` → (authzid, user, password)."""
    if len(token) > MAX_PLAIN_TOKEN:
        raise ScramError("PLAIN token too long")
    parts = token.split(b"\0")
    if len(parts) != 3:
        raise ScramError("invalid PLAIN token (expected authzid NUL user NUL password)")
    try:
        authzid, user, password = (part.decode("utf-8") for part in parts)
    except UnicodeDecodeError:
        raise ScramError("PLAIN token is not UTF-8") from None
    if not user or not password:
        raise ScramError("PLAIN token without user or password")
    if authzid and authzid != user:
        raise ScramError("PLAIN authorization id must be empty or the user itself")
    return authzid, user, password


def verify_plain(mechanism: ScramMechanism, credential: ScramCredential | None,
                 password: str) -> None:
    """Raise :class:`ScramError` unless ``password`` matches ``credential``."""
    if credential is None:
        raise ScramError("invalid credentials")
    salted = mechanism.salted_password(password, credential.salt, credential.iterations)
    derived = ScramCredential.from_salted_password(mechanism, salted, credential.salt,
                                                   credential.iterations)
    if not hmac.compare_digest(derived.stored_key, credential.stored_key):
        raise ScramError("invalid credentials")


def plain_token(user: str, password: str) -> bytes:
    return b"\0" + user.encode() + b"\0" + password.encode()
