"""SCRAM (RFC 5802/7677) both ends: the RFC 7677 test vector, round trips, Kafka's stored
credential format, and hostile client messages (hypothesis) that must fail cleanly."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.security.plain import parse_plain, plain_token, verify_plain
from odradek.security.scram import (
    ScramClient,
    ScramCredential,
    ScramError,
    ScramMechanism,
    ScramServer,
)

SHA256 = ScramMechanism.SCRAM_SHA_256
SHA512 = ScramMechanism.SCRAM_SHA_512

# RFC 7677 section 3: user "user", password "pencil".
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
RFC_CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_credential() -> ScramCredential:
    return ScramCredential.from_password(SHA256, "pencil", 4096, RFC_SALT)


def test_server_matches_rfc7677_vector() -> None:
    server = ScramServer(SHA256, nonce=RFC_SERVER_NONCE)
    assert ScramServer.user_of(RFC_CLIENT_FIRST) == "user"
    assert server.first(RFC_CLIENT_FIRST, rfc_credential()) == RFC_SERVER_FIRST
    assert server.final(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.complete and server.username == "user"


def test_client_matches_rfc7677_vector() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    assert client.first() == RFC_CLIENT_FIRST
    assert client.final(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    client.verify(RFC_SERVER_FINAL)


def test_client_rejects_a_forged_server_signature() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    client.final(RFC_SERVER_FIRST)
    with pytest.raises(ScramError):
        client.verify(b"v=" + base64.b64encode(b"\0" * 32))


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
@pytest.mark.parametrize("user", ["alice", "we,ird=name", "ünïcode"])
def test_round_trip(mechanism: ScramMechanism, user: str) -> None:
    credential = ScramCredential.from_password(mechanism, "s3cret")
    client = ScramClient(mechanism, user, "s3cret")
    server = ScramServer(mechanism)
    first = client.first()
    assert ScramServer.user_of(first) == user
    client.verify(server.final(client.final(server.first(first, credential))))
    assert server.username == user


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_wrong_password_is_refused(mechanism: ScramMechanism) -> None:
    credential = ScramCredential.from_password(mechanism, "right")
    client = ScramClient(mechanism, "alice", "wrong")
    server = ScramServer(mechanism)
    server_first = server.first(client.first(), credential)
    with pytest.raises(ScramError, match="invalid credentials"):
        server.final(client.final(server_first))
    assert not server.complete
    with pytest.raises(ScramError):  # one exchange per server: no second guess
        server.final(client.final(server_first))


def test_unknown_user_and_nonce_tampering_are_refused() -> None:
    with pytest.raises(ScramError, match="unknown user"):
        ScramServer(SHA256).first(RFC_CLIENT_FIRST, None)
    server = ScramServer(SHA256, nonce=RFC_SERVER_NONCE)
    server.first(RFC_CLIENT_FIRST, rfc_credential())
    with pytest.raises(ScramError, match="nonce"):
        server.final(RFC_CLIENT_FINAL.replace(b"k0,p=", b"k1,p="))


def test_kafka_credential_string_round_trip() -> None:
    credential = rfc_credential()
    text = credential.to_kafka_string()
    assert text.startswith("salt=W22ZaJ0SNY7soEsUEjb6gQ==,stored_key=")
    assert text.endswith(",iterations=4096")
    assert ScramCredential.from_kafka_string(text) == credential
    with pytest.raises(ValueError):
        ScramCredential.from_kafka_string("salt=%%%,stored_key=a,server_key=b,iterations=1")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_garbage_client_first_never_crashes(message: bytes) -> None:
    server = ScramServer(SHA256)
    try:
        ScramServer.user_of(message)
        server.first(message, rfc_credential())
    except ScramError:
        return


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300) | st.text(max_size=200).map(str.encode))
def test_garbage_client_final_never_crashes(message: bytes) -> None:
    server = ScramServer(SHA256, nonce=RFC_SERVER_NONCE)
    server.first(RFC_CLIENT_FIRST, rfc_credential())
    with pytest.raises(ScramError):
        server.final(message)


def test_plain_is_checked_against_the_scram_credential() -> None:
    credential = ScramCredential.from_password(SHA512, "pw")
    _authzid, user, password = parse_plain(plain_token("carol", "pw"))
    assert user == "carol"
    verify_plain(SHA512, credential, password)
    with pytest.raises(ScramError):
        verify_plain(SHA512, credential, "nope")
    with pytest.raises(ScramError):
        verify_plain(SHA512, None, "pw")


@pytest.mark.parametrize("token", [b"", b"\0\0", b"a\0b", b"x\0carol\0pw", b"\0carol\0",
                                   b"\0\xff\0pw", b"\0a\0b\0c", b"\0a\0" + b"p" * 2000])
def test_malformed_plain_tokens(token: bytes) -> None:
    with pytest.raises(ScramError):
        parse_plain(token)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_garbage_plain_never_crashes(token: bytes) -> None:
    try:
        parse_plain(token)
    except ScramError:
        return


def test_authorization_id_must_be_the_user() -> None:
    credential = ScramCredential.from_password(SHA256, "pw")
    ScramServer(SHA256).first(b"n,a=alice,n=alice,r=abc", credential)
    with pytest.raises(ScramError, match="authorization id"):
        ScramServer(SHA256).first(b"n,a=admin,n=alice,r=abc", credential)
