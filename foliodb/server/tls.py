"""TLS for ``foliodb serve``, with the standard library's :mod:`ssl`, in mongod's
modes and option names:

    --tlsMode disabled | allowTLS | preferTLS | requireTLS
    --tlsCertificateKeyFile PEM      the server's certificate and private key, in one file
    --tlsCAFile PEM                  CAs that sign client certificates; with it, a client must
                                     present a valid certificate (MONGODB-X509 can then log in as
                                     its subject) unless --tlsAllowConnectionsWithoutCertificates

``allowTLS`` and ``preferTLS`` accept TLS and plain connections on one port
(they differ only for outgoing connections, which FolioDB never makes): the
first bytes tell them apart, a TLS ClientHello starting with the handshake
record type 0x16 and a 3.x version. A plain MongoDB message whose length
happens to start with those bytes (exactly 0x0?0316 + 65536k bytes) would be
taken for TLS; the first message of a driver is a hello of a few hundred
bytes. ``requireTLS`` refuses plain connections by closing them.

TLS 1.2 is the minimum, as with mongod 8 (which disables TLS 1.0 and 1.1).

Manual: https://www.mongodb.com/docs/manual/tutorial/configure-ssl/,
https://www.mongodb.com/docs/manual/reference/program/mongod/#tls-options
"""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MODES = ("disabled", "allowTLS", "preferTLS", "requireTLS")

# X.500 attribute names as OpenSSL's RFC 2253 printing abbreviates them (what mongod shows).
_SHORT_NAMES = {
    "commonName": "CN",
    "countryName": "C",
    "stateOrProvinceName": "ST",
    "localityName": "L",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
    "surname": "SN",
    "givenName": "GN",
}


class TLSError(Exception):
    """The TLS options do not make a usable configuration."""


@dataclass(frozen=True)
class TLSConfig:
    mode: str = "disabled"
    certificate_key_file: str | None = None
    ca_file: str | None = None
    allow_connections_without_certificates: bool = False

    @property
    def enabled(self) -> bool:
        return self.mode != "disabled"

    def context(self) -> ssl.SSLContext | None:
        """The server context, or None when TLS is disabled; TLSError for bad options or files."""
        if self.mode not in MODES:
            raise TLSError(f"--tlsMode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if not self.enabled:
            return None
        if not self.certificate_key_file:
            raise TLSError(f"--tlsMode {self.mode} needs --tlsCertificateKeyFile")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(self.certificate_key_file)
            if self.ca_file:
                context.load_verify_locations(self.ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise TLSError(f"cannot load the TLS certificates: {exc}") from None
        if self.ca_file:
            context.verify_mode = (
                ssl.CERT_OPTIONAL if self.allow_connections_without_certificates else ssl.CERT_REQUIRED
            )
        return context


def looks_like_tls(sock: socket.socket, deadline: float) -> bool | None:
    """Whether the peer's first bytes are a TLS handshake record; None if it sent nothing
    before ``deadline`` or closed."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        sock.settimeout(remaining)
        try:
            head = sock.recv(3, socket.MSG_PEEK)
        except TimeoutError:
            return None
        if not head:
            return None
        if head[0] != 0x16:
            return False
        if len(head) >= 3:
            return head[1] == 0x03 and head[2] <= 0x04
        time.sleep(0.01)  # fewer than 3 bytes so far, and MSG_PEEK returns at once: wait for more


def subject_name(peercert: Mapping[str, Any]) -> str | None:
    """A verified client certificate's subject as an RFC 4514 string, most specific RDN first
    (``CN=client,OU=apps,O=Example``): the user name MONGODB-X509 logs in as."""
    subject = peercert.get("subject")
    if not subject:
        return None
    rdns = []
    for rdn in reversed(subject):
        rdns.append("+".join(f"{_SHORT_NAMES.get(name, name)}={_escape(value)}" for name, value in rdn))
    return ",".join(rdns)


def _escape(value: str) -> str:
    out = []
    for i, char in enumerate(value):
        if char in ',+"\\<>;' or (i == 0 and char in "# ") or (i == len(value) - 1 and char == " "):
            out.append("\\" + char)
        elif char == "\x00":
            out.append("\\00")
        else:
            out.append(char)
    return "".join(out)
