"""Test certificates made with the ``openssl`` command: a CA, a broker certificate for
127.0.0.1/localhost, and a client certificate (mutual TLS), all PEM."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["CertSet", "make_certs"]


@dataclass(frozen=True)
class CertSet:
    ca: Path  # the trust store (PEM CA certificate)
    broker_keystore: Path  # key + certificate chain, what ssl.keystore.location names
    broker_cert: Path
    broker_key: Path
    client_cert: Path
    client_key: Path
    client_subject: str  # as Kafka prints it (RFC 2253)


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _issue(directory: Path, name: str, subject: str, extensions: str) -> None:
    (directory / f"{name}.ext").write_text(extensions)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
             f"{name}.csr", "-subj", subject, cwd=directory)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-sha256",
             "-extfile", f"{name}.ext", cwd=directory)


def make_certs(directory: Path) -> CertSet:
    if shutil.which("openssl") is None:
        pytest.fail("the security tests make certificates with the openssl command: "
                    "apt-get install openssl (.ci/run does)")
    directory.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
             "ca.pem", "-days", "2", "-subj", "/CN=odradek test CA", cwd=directory)
    _issue(directory, "broker", "/CN=localhost",
           "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n")
    _issue(directory, "client", "/C=DE/O=odradek/OU=tests/CN=client-one",
           "extendedKeyUsage=clientAuth\n")
    keystore = directory / "broker-keystore.pem"
    keystore.write_text((directory / "broker.key").read_text()
                        + (directory / "broker.pem").read_text()
                        + (directory / "ca.pem").read_text())
    return CertSet(ca=directory / "ca.pem", broker_keystore=keystore,
                     broker_cert=directory / "broker.pem", broker_key=directory / "broker.key",
                     client_cert=directory / "client.pem", client_key=directory / "client.key",
                     client_subject="CN=client-one,OU=tests,O=odradek,C=DE")
