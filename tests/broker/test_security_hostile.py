"""Hostile input on SASL and TLS listeners: requests before the login, garbage, truncated
and oversized SASL frames, bare v0 tokens, junk instead of a TLS handshake — each gets a
closed connection (and a log line), and the broker keeps serving."""

from __future__ import annotations

import logging
import struct

import pytest

from tests.harness.certs import CertSet

from .inprocess import InProcessBroker
from .security_support import (
    USERS,
    assert_still_serving,
    authenticate_v1,
    closed,
    connect,
    frame,
    handshake_v1,
    read_response,
)


def test_request_before_authentication_closes_the_connection(
        secure_broker: InProcessBroker, certs: CertSet,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="odradek.broker")
    with connect(secure_broker) as sock:
        sock.sendall(frame(3, 1, 7, struct.pack(">i", -1)))  # Metadata v1, all topics
        assert closed(sock)
    assert "before SASL authentication completed" in caplog.text
    assert_still_serving(secure_broker, certs)


@pytest.mark.parametrize("token", [
    b"", b"\xff\xfe\xfd", b"n,,n=alice", b"n,,n=alice,r=", b"y,a=,n=,r=\x00",
    b"n,,n=al=ice,r=abc", b"p=tls-unique,,n=alice,r=abc", b"x" * 70_000,
])
def test_garbage_scram_tokens_fail_authentication(
        secure_broker: InProcessBroker, certs: CertSet, token: bytes,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="odradek.broker")
    with connect(secure_broker) as sock:
        sock.sendall(handshake_v1(b"SCRAM-SHA-256"))
        assert struct.unpack_from(">h", read_response(sock), 4)[0] == 0
        sock.sendall(authenticate_v1(token))
        response = read_response(sock)
        assert struct.unpack_from(">h", response, 4)[0] == 58  # SASL_AUTHENTICATION_FAILED
        assert closed(sock)
    assert "failed authentication" in caplog.text
    assert_still_serving(secure_broker, certs)


def test_truncated_and_oversized_frames_close_the_connection(
        secure_broker: InProcessBroker, certs: CertSet,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="odradek.broker")
    with connect(secure_broker) as sock:  # a SaslAuthenticate whose token overruns the frame
        sock.sendall(handshake_v1(b"PLAIN"))
        read_response(sock)
        header = authenticate_v1(b"")[4:18]  # api key, version, correlation id, client id
        payload = header + struct.pack(">i", 1000) + b"\0al"
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        assert closed(sock)
    with connect(secure_broker) as sock:  # half a frame, then the peer goes away
        sock.sendall(handshake_v1(b"SCRAM-SHA-256")[:9])
    with connect(secure_broker) as sock:  # a size prefix far beyond any request
        sock.sendall(struct.pack(">i", 2**31 - 1) + b"\x00" * 10)
        assert closed(sock)
    with connect(secure_broker) as sock:  # fine once logged in, too big before
        sock.sendall(struct.pack(">i", 600_000) + b"\x00" * 10)
        assert closed(sock)
    assert "frame size 600000 outside 0..524288 (sasl.server.max.receive.size)" in caplog.text
    with connect(secure_broker) as sock:  # v0 handshake, then a bare PLAIN token with junk
        sock.sendall(frame(17, 0, 1, struct.pack(">h", 5) + b"PLAIN"))
        read_response(sock)
        sock.sendall(struct.pack(">i", 9) + b"\xff" * 9)
        assert closed(sock)
    with connect(secure_broker) as sock:  # an unknown mechanism
        sock.sendall(handshake_v1(b"GSSAPI"))
        assert struct.unpack_from(">h", read_response(sock), 4)[0] == 33
        assert closed(sock)
    assert_still_serving(secure_broker, certs)


def test_v0_handshake_with_bare_plain_tokens(secure_broker: InProcessBroker) -> None:
    with connect(secure_broker) as sock:
        sock.sendall(frame(17, 0, 1, struct.pack(">h", 5) + b"PLAIN"))
        read_response(sock)
        token = b"\0bob\0" + USERS["bob"][1].encode()
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert read_response(sock) == b""  # PLAIN's empty server token: authenticated
        sock.sendall(frame(18, 0, 3, b""))  # now any request is answered
        assert struct.unpack_from(">i", read_response(sock))[0] == 3


def test_tls_garbage_instead_of_a_handshake(secure_broker: InProcessBroker,
                                            certs: CertSet) -> None:
    with connect(secure_broker, "SSL") as sock:
        sock.sendall(b"\x16\x03\x01\x00\x05hello" + b"\x00" * 100)
        assert closed(sock)
    assert_still_serving(secure_broker, certs)





def test_broker_survives_random_sasl_exchanges(
        secure_broker: InProcessBroker, certs: CertSet,
        caplog: pytest.LogCaptureFixture) -> None:
    """A valid handshake (v0 or v1, each mechanism), then random or mutated tokens, bare or
    in SaslAuthenticate frames: never a broker error, and the broker keeps serving."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from .test_fuzz import _mutate, send_and_drain

    assert secure_broker.broker is not None
    port = secure_broker.broker.bound_ports["SASL_PLAINTEXT"]
    mechanisms = st.sampled_from([b"PLAIN", b"SCRAM-SHA-256", b"SCRAM-SHA-512"])
    tokens = st.one_of(
        st.binary(max_size=300),
        st.sampled_from([b"n,,n=alice,r=abc", b"\0alice\0alice-secret", b"c=biws,r=x,p=AA=="])
        .flatmap(lambda seed: st.tuples(
            st.just(seed), st.lists(st.tuples(st.integers(0, 40), st.integers(0, 255)),
                                    max_size=4), st.integers(0, 40)))
        .map(lambda t: _mutate(*t)))
    exchanges = st.tuples(st.booleans(), mechanisms, st.lists(tokens, min_size=1, max_size=3))

    def payload(v0: bool, mechanism: bytes, steps: list[bytes]) -> bytes:
        if v0:
            start = frame(17, 0, 1, struct.pack(">h", len(mechanism)) + mechanism)
            return start + b"".join(struct.pack(">i", len(t)) + t for t in steps)
        return handshake_v1(mechanism) + b"".join(authenticate_v1(t) for t in steps)

    @settings(max_examples=150, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(exchange=exchanges)
    def fuzz(exchange: tuple[bool, bytes, list[bytes]]) -> None:
        send_and_drain(port, payload(*exchange))

    with caplog.at_level(logging.WARNING):
        fuzz()
    assert_still_serving(secure_broker, certs)
    errors = [r.getMessage() for r in caplog.records
              if r.levelno >= logging.ERROR and r.name.startswith("odradek")]
    assert not errors, f"bad SASL input was treated as a broker failure: {errors[:3]}"
