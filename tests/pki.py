# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Throwaway TLS material for tests: a CA, a server certificate for 127.0.0.1 and a client certificate."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

FILES = ("ca.crt", "server.crt", "server.key", "client.crt", "client.key")


def make_pki(directory: Path) -> Path:
    """Write ``FILES`` (PEM, EC P-256 keys, valid for an hour) into ``directory`` and return it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)

    def name(common_name):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])

    def certificate(subject, public_key, ca, san=None):
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_name).public_key(public_key)
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
                   .not_valid_after(now + datetime.timedelta(hours=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        # key identifiers: Python 3.13 verifies strictly (VERIFY_X509_STRICT) and refuses a chain without them
        builder = (builder.add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                                  critical=False))
        if ca:
            builder = builder.add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                                            critical=True)
        if san:
            builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return builder.sign(ca_key, hashes.SHA256())

    def write_key(path, key):
        path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))

    ca_key, server_key, client_key = (ec.generate_private_key(ec.SECP256R1()) for _key in range(3))
    ca_name = name("phasekit test CA")
    issued = {"ca.crt": certificate(ca_name, ca_key.public_key(), True),
              "server.crt": certificate(name("127.0.0.1"), server_key.public_key(), False,
                                        [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
              "client.crt": certificate(name("phasekit-test-user"), client_key.public_key(), False)}
    for file_name, cert in issued.items():
        (directory / file_name).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    write_key(directory / "server.key", server_key)
    write_key(directory / "client.key", client_key)
    return directory
