"""TLS contexts from Kafka's ``ssl.*`` settings, and the principal of a client certificate.

PEM only (``ssl.keystore.type=PEM``): the key store is a PEM file with the private key and
the certificate chain, or the two as PEM text (``ssl.keystore.certificate.chain`` and
``ssl.keystore.key``, which :mod:`ssl` can only load from a file, so they pass through a
private temporary file that is removed at once).
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["TlsSettings", "client_context", "principal_of_certificate", "server_context"]

_VERIFY = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


class TlsSettings:
    """The ``ssl.*`` values a context is built from (a broker config section or a client's
    properties use the same names)."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.keystore_location: str | None = values.get("ssl.keystore.location")
        self.keystore_password: str | None = (values.get("ssl.keystore.password")
                                              or values.get("ssl.key.password"))
        self.certificate_chain: str | None = values.get("ssl.keystore.certificate.chain")
        self.key: str | None = values.get("ssl.keystore.key")
        self.truststore_location: str | None = values.get("ssl.truststore.location")
        self.truststore_certificates: str | None = values.get("ssl.truststore.certificates")
        self.client_auth: str = values.get("ssl.client.auth") or "none"
        self.check_hostname: bool = (values.get("ssl.endpoint.identification.algorithm")
                                     or "").lower() == "https"

    @property
    def has_keystore(self) -> bool:
        return bool(self.keystore_location or (self.certificate_chain and self.key))

    def load_keystore(self, context: ssl.SSLContext) -> None:
        password = self.keystore_password
        if self.keystore_location:
            context.load_cert_chain(self.keystore_location, password=password)
            return
        if self.certificate_chain and self.key:
            with _private_file(self.key + "\n" + self.certificate_chain) as path:
                context.load_cert_chain(path, password=password)

    def load_truststore(self, context: ssl.SSLContext) -> bool:
        if self.truststore_location:
            context.load_verify_locations(cafile=self.truststore_location)
            return True
        if self.truststore_certificates:
            context.load_verify_locations(cadata=self.truststore_certificates)
            return True
        return False


@contextlib.contextmanager
def _private_file(text: str) -> Iterator[str]:
    fd, path = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        yield path
    finally:
        os.unlink(path)


def server_context(settings: TlsSettings) -> ssl.SSLContext:
    """The context of the broker's TLS listeners (TLS 1.2 and newer)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    settings.load_keystore(context)
    if settings.load_truststore(context):
        context.verify_mode = _VERIFY[settings.client_auth]
    return context


def client_context(settings: TlsSettings) -> ssl.SSLContext:
    """A client's context: the trust store (else the system's CAs), optionally our own
    certificate (mutual TLS), and host name checks unless switched off."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if not settings.load_truststore(context):
        context.load_default_certs()
    if settings.has_keystore:
        settings.load_keystore(context)
    context.check_hostname = settings.check_hostname
    return context


# Short names Java's X500Principal.getName() (RFC 2253) prints for the usual attributes.
_RDN_NAMES = {
    "commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU",
    "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
    "streetAddress": "STREET", "domainComponent": "DC", "userId": "UID",
}


def _escape(value: str) -> str:
    escaped = "".join(f"\\{c}" if c in ',+"\\<>;=' else c for c in value)
    if escaped.startswith(("#", " ")):
        escaped = "\\" + escaped
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    return escaped


def principal_of_certificate(certificate: Mapping[str, Any] | None) -> str | None:
    """``User:<subject DN>`` as Kafka's default principal builder names a client that
    authenticated with a certificate (RFC 2253: most specific RDN first), or None."""
    if not certificate or not certificate.get("subject"):
        return None
    rdns = []
    for rdn in reversed(certificate["subject"]):
        rdns.append("+".join(f"{_RDN_NAMES.get(key, key)}={_escape(value)}"
                             for key, value in rdn))
    return "User:" + ",".join(rdns)
