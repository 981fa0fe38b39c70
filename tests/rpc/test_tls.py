"""TLS for confidentiality: a server with ``tls_cert``/``tls_key``, clients that verify it."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vta import rpc
from vta.errors import RPCError
from vta.rpc.server import Server

from .mitm import Proxy

REPO = Path(__file__).resolve().parents[2]


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for ``localhost`` and ``127.0.0.1`` and its key."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    openssl = shutil.which("openssl")
    if openssl is not None:
        subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert),
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                       check=True, capture_output=True, timeout=60)
        return cert, key
    x509 = pytest.importorskip("cryptography.x509", reason="neither the openssl command nor the cryptography "
                                                            "package is available to make a test certificate")
    import datetime
    import ipaddress

    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    k = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    c = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(k.public_key())
         .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
         .not_valid_after(now + datetime.timedelta(days=2))
         .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                     x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                        critical=False)
         .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
         .sign(k, hashes.SHA256()))
    cert.write_bytes(c.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
    return cert, key


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[Path, Path]:
    return _self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def tls_server(tmp_path, certificate):
    cert, key = certificate
    d = tmp_path / "sessions"
    d.mkdir()
    with Server("127.0.0.1", 0, workdir=d, secret="s", idle_timeout=20, tls_cert=cert, tls_key=key).start() as s:
        yield s


def _wait_for(pred, what: str, limit: float = 30.0) -> None:
    end = time.monotonic() + limit
    while not pred():
        if time.monotonic() > end:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.01)


def test_tls_session_hides_what_crosses_the_wire(tls_server, certificate):
    marker = b"THE-PLAINTEXT-MARKER-" * 50
    with Proxy(tls_server.address, raw=True) as px:
        with rpc.connect("127.0.0.1", px.port, timeout=20, secret="s", cafile=certificate[0]) as c:
            c.upload(marker, target="m.bin")
            assert c.download("m.bin") == marker
            assert c.ping() == "pong"
        _wait_for(lambda: tls_server.sessions_served == 1, "the session to end")
    wire = bytes(px.recorded["c2s"]) + bytes(px.recorded["s2c"])
    assert len(wire) > 2 * len(marker)  # the file went both ways ...
    assert b"THE-PLAINTEXT-MARKER" not in wire and b"upload" not in wire  # ... and nobody saw it


def test_client_verifies_the_certificate_and_the_host_name(tls_server, certificate, caplog):
    caplog.set_level(logging.WARNING, logger="vta.rpc.server")
    with pytest.raises(RPCError, match="TLS handshake .* failed.*(certificate|CERTIFICATE)"):
        rpc.connect(tls_server.host, tls_server.port, timeout=20, secret="s", tls=True)  # system CAs only
    with pytest.raises(RPCError, match="TLS handshake .* failed.*(hostname|match)"):
        rpc.connect(tls_server.host, tls_server.port, timeout=20, secret="s", cafile=certificate[0],
                    server_hostname="not-this-host.example")
    with rpc.connect("localhost", tls_server.port, timeout=20, secret="s", cafile=certificate[0]) as c:
        assert c.ping() == "pong"
    _wait_for(lambda: tls_server.sessions_served == 3, "the three connections to end")
    assert any("TLS handshake failed" in r.getMessage() for r in caplog.records)


def test_plain_client_cannot_talk_to_a_tls_server(tls_server, caplog):
    caplog.set_level(logging.WARNING, logger="vta.rpc.server")
    with pytest.raises(RPCError):
        c = rpc.connect(tls_server.host, tls_server.port, timeout=20, secret="s")
        c.ping()
    _wait_for(lambda: tls_server.sessions_served == 1, "the connection to end")
    assert any("TLS handshake failed" in r.getMessage() for r in caplog.records)


def test_tls_without_a_secret_on_loopback(tmp_path, certificate):
    with Server("127.0.0.1", 0, workdir=tmp_path, tls_cert=certificate[0], tls_key=certificate[1]).start() as srv:
        with rpc.connect("127.0.0.1", srv.port, timeout=20, cafile=certificate[0]) as c:
            assert c.ping() == "pong"


def test_bad_tls_arguments_are_refused(tmp_path, certificate):
    with pytest.raises(ValueError, match="tls_key"):
        Server("127.0.0.1", 0, workdir=tmp_path, tls_key=certificate[1])
    with pytest.raises(RPCError, match="cannot load the TLS certificate"):
        Server("127.0.0.1", 0, workdir=tmp_path, tls_cert=tmp_path / "missing.pem")
    with pytest.raises(ValueError, match="cafile"):
        rpc.connect("127.0.0.1", 1, tls=False, cafile=certificate[0])
    with pytest.raises(RPCError, match="CA certificates"):
        rpc.connect("127.0.0.1", 1, cafile=tmp_path / "missing.pem")


def test_server_command_line_takes_the_certificate(tmp_path, certificate):
    r = subprocess.run([sys.executable, "-m", "vta.rpc.server", "--port", "0", "--tls-cert", str(tmp_path / "no.pem")],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "cannot load the TLS certificate" in r.stderr
    proc = subprocess.Popen([sys.executable, "-m", "vta.rpc.server", "--port", "0", "--workdir", str(tmp_path),
                             "--tls-cert", str(certificate[0]), "--tls-key", str(certificate[1])],
                            cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("vta.rpc.server listening on 127.0.0.1:") and line.rstrip().endswith("(TLS)")
        port = int(line.split(":")[1].split()[0])
        with rpc.connect("127.0.0.1", port, timeout=20, cafile=certificate[0]) as c:
            assert c.ping() == "pong"
    finally:
        proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()
