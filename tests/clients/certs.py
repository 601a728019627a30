"""A throwaway certificate authority for the TLS tests, made at test time with
the ``cryptography`` package: a CA, a server certificate for localhost and
127.0.0.1, and a client certificate whose subject MONGODB-X509 logs in as."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# In certificate order (most general first); RFC 4514 writes it the other way round.
CLIENT_NAME = (("O", "FolioDB"), ("OU", "apps"), ("CN", "reporting"))
CLIENT_SUBJECT = "CN=reporting,OU=apps,O=FolioDB"
_OIDS = {"O": NameOID.ORGANIZATION_NAME, "OU": NameOID.ORGANIZATIONAL_UNIT_NAME, "CN": NameOID.COMMON_NAME}


@dataclass(frozen=True)
class Certificates:
    ca: Path  # the CA certificate (--tlsCAFile, and the clients' tlsCAFile)
    server: Path  # the server's certificate and key (--tlsCertificateKeyFile)
    client: Path  # a client certificate and key (the clients' tlsCertificateKeyFile)
    stranger: Path  # a client certificate from another CA


def _name(parts: tuple[tuple[str, str], ...]) -> x509.Name:
    return x509.Name([x509.NameAttribute(_OIDS[key], value) for key, value in parts])


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem(key: ec.EllipticCurvePrivateKey, cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _authority(name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = _key()
    subject = _name((("O", "FolioDB tests"), ("CN", name)))
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
        )  # digitalSignature, keyCertSign, cRLSign
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _issue(
    ca_key: ec.EllipticCurvePrivateKey,
    ca: x509.Certificate,
    subject: x509.Name,
    usage: x509.ObjectIdentifier,
    server: bool,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = _key()
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
    return key, builder.sign(ca_key, hashes.SHA256())


def make_certificates(directory: Path) -> Certificates:
    ca_key, ca = _authority("test CA")
    server_key, server = _issue(ca_key, ca, _name((("CN", "localhost"),)), ExtendedKeyUsageOID.SERVER_AUTH, True)
    client_key, client = _issue(ca_key, ca, _name(CLIENT_NAME), ExtendedKeyUsageOID.CLIENT_AUTH, False)
    other_key, other = _authority("another CA")
    stranger_key, stranger = _issue(other_key, other, _name(CLIENT_NAME), ExtendedKeyUsageOID.CLIENT_AUTH, False)
    paths = Certificates(
        directory / "ca.pem", directory / "server.pem", directory / "client.pem", directory / "stranger.pem"
    )
    paths.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths.server.write_bytes(_pem(server_key, server))
    paths.client.write_bytes(_pem(client_key, client))
    paths.stranger.write_bytes(_pem(stranger_key, stranger))
    return paths
