"""Certificates made at test time for a TLS listener: a CA, a server certificate it signs, a stranger CA.

Made with the ``cryptography`` package (the ``test`` extra), nothing written but PEM and PKCS#12
files in the caller's directory: Apache Kafka reads the server's key and chain from a PKCS#12 key
store (``ssl.keystore.type=PKCS12``, Kafka's documentation, "Encryption and Authentication using
SSL"); a client trusts the CA through its PEM file (kafka-python's ``ssl_cafile``). The server
certificate names only the addresses given (``IP:127.0.0.1`` by default), so a client that
connects by another name (``localhost``) sees a hostname mismatch; the stranger CA signed nothing
the server presents, so a client trusting only it sees an untrusted certificate.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import attrs
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["TlsFiles", "make_tls_files"]

_VALID_FOR: Final = datetime.timedelta(days=2)
_BACKDATE: Final = datetime.timedelta(hours=1)  # a clock a little behind still accepts them


@attrs.frozen
class TlsFiles:
    """The files :func:`make_tls_files` wrote.

    Attributes:
        ca_file: The CA's certificate (PEM): what a client trusts.
        keystore: The server's PKCS#12 key store: its key, its certificate and the CA's.
        keystore_password: The key store's (and its key's) password.
        stranger_ca_file: Another CA's certificate (PEM), which signed nothing the server presents.

    """

    ca_file: Path
    keystore: Path
    keystore_password: str = attrs.field(repr=False)
    stranger_ca_file: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _ca(common_name: str, now: datetime.datetime) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + _VALID_FOR)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _general_name(address: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(address))
    except ValueError:
        return x509.DNSName(address)


def make_tls_files(
    directory: Path, *, addresses: Sequence[str] = ("127.0.0.1",), password: str = "kgroup-keystore"
) -> TlsFiles:
    """Write a CA, a server key store it signs for ``addresses``, and a stranger CA into ``directory``.

    Args:
        directory: Where the files go (created if missing): ``ca.pem``, ``server.p12``,
            ``stranger-ca.pem``.
        addresses: The server certificate's subject alternative names: IP addresses as
            ``IPAddress`` entries, anything else as ``DNSName``.
        password: The key store's password.

    Returns:
        The files' paths and the key store's password.

    """
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)  # certificates' validity, not a timer
    ca_key, ca_cert = _ca("kgroup test CA", now)
    _, stranger_cert = _ca("kgroup stranger CA", now)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(_name(addresses[0]))
        .issuer_name(ca_cert.subject)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + _VALID_FOR)
        .add_extension(x509.SubjectAlternativeName([_general_name(a) for a in addresses]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    files = TlsFiles(
        ca_file=directory / "ca.pem",
        keystore=directory / "server.p12",
        keystore_password=password,
        stranger_ca_file=directory / "stranger-ca.pem",
    )
    files.ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    files.stranger_ca_file.write_bytes(stranger_cert.public_bytes(serialization.Encoding.PEM))
    files.keystore.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"server", server_key, server_cert, [ca_cert],
            serialization.BestAvailableEncryption(password.encode()),
        )
    )
    return files
