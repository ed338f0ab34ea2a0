"""Test certificates made with the ``openssl`` command (Debian's ``openssl`` package; the test
command installs it): a CA, a server certificate for localhost/127.0.0.1 and a client certificate
the CA signed, as PEM files named as in a Kubernetes TLS Secret (``ca.crt``, ``tls.crt``,
``tls.key``) plus ``client.crt``/``client.key``. ECDSA P-256, valid for two days unless asked
for longer.

Use as a module: ``from certs import make_pki; make_pki(directory)``.
"""

from __future__ import annotations

import os
import subprocess

EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def _openssl(directory: str, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)


def _signed(directory: str, name: str, subject: str, extensions: str, days: int) -> None:
    """``name.key`` and ``name.crt`` for ``subject``, signed by the CA in ``directory``."""
    _openssl(directory, "req", *EC_KEY, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject)
    with open(os.path.join(directory, f"{name}.ext"), "w", encoding="ascii") as f:
        f.write(extensions)
    _openssl(directory, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", f"{name}.crt", "-days", str(days), "-extfile", f"{name}.ext")


def make_pki(directory: str, names: tuple[str, ...] = (), days: int = 2) -> str:
    """Writes the CA, server and client files into ``directory`` (created if needed); returns it.

    The server certificate is for localhost, 127.0.0.1 and the DNS ``names`` given, and serves for
    client authentication too (as a Secret's certificate does when a benchmark Job presents it).
    Every certificate is valid for ``days`` days."""
    os.makedirs(directory, exist_ok=True)
    _openssl(directory, "req", "-x509", *EC_KEY, "-keyout", "ca.key", "-out", "ca.crt", "-days", str(days),
             "-subj", "/CN=cairn test CA")
    alt_names = ",".join(["DNS:localhost", "IP:127.0.0.1", *(f"DNS:{n}" for n in names)])
    _signed(directory, "tls", "/CN=localhost",
            f"subjectAltName={alt_names}\nextendedKeyUsage=serverAuth,clientAuth\n", days)
    _signed(directory, "client", "/CN=cairn test client", "extendedKeyUsage=clientAuth\n", days)
    return directory
