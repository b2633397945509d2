"""Servers on loopback that fail in one way each, for the tests of what a failure is called
(issue 42 item 1): nothing listening (refused), a connection reset, one closed without an
answer, one never answered, a TLS server whose certificate no one trusts; and a switch, a
TCP proxy in front of a real server that can be made to fail in each of those ways."""

from __future__ import annotations

import datetime
import socket
import ssl
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

BEHAVIOURS = ("reset", "close", "silent", "tls")


def refused_port() -> int:
    """A loopback port nothing listens on (bound a moment, never listened on)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by itself, and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def fail(conn: socket.socket, behaviour: str, tls: ssl.SSLContext | None) -> None:
    """Fail one accepted connection as ``behaviour`` says."""
    if behaviour == "reset":
        conn.recv(65536)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()  # linger 0: the peer gets RST
    elif behaviour == "close":
        _drain(conn)  # the whole request: a close with unread bytes would be a reset
        conn.shutdown(socket.SHUT_WR)  # FIN after the request, with no answer
        _drain(conn)
        conn.close()
    elif behaviour == "silent":
        conn.recv(65536)
        threading.Event().wait(60)  # holds the connection, never answers
        conn.close()
    elif behaviour == "tls" and tls is not None:
        with suppress(OSError), tls.wrap_socket(conn, server_side=True) as wrapped:
            wrapped.recv(65536)  # the client refuses the certificate first
        conn.close()


def _drain(conn: socket.socket) -> None:
    """Read what the client sends until it pauses (0.3 s) or closes."""
    conn.settimeout(0.3)
    with suppress(OSError):
        while conn.recv(65536):
            pass


class Failing:
    """One server that fails every connection as ``behaviour`` says (``tls``: a real TLS
    server with a self-signed certificate)."""

    def __init__(self, behaviour: str, folder: Path) -> None:
        self.behaviour = behaviour
        self.tls: ssl.SSLContext | None = None
        if behaviour == "tls":
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.load_cert_chain(*self_signed(folder))
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with suppress(OSError):
            fail(conn, self.behaviour, self.tls)


@contextmanager
def failing(behaviour: str, folder: Path) -> Iterator[int]:
    """A server failing as ``behaviour`` says; yields its port."""
    server = Failing(behaviour, folder)
    threading.Thread(target=server.serve, daemon=True).start()
    try:
        yield server.port
    finally:
        _close(server.sock)


class Switch:
    """A TCP proxy to ``target`` whose ``mode`` the test sets: ``pass``, or one of
    ``BEHAVIOURS`` but ``tls`` for each new connection; ``stop()`` closes it (refused)."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.mode = "pass"
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self._open: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def set(self, mode: str) -> None:
        """Fail new connections as ``mode`` says, and cut the ones open."""
        self.mode = mode
        for conn in self._open:
            with suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._open.clear()

    def stop(self) -> None:
        self.set("stopped")
        _close(self.sock)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        if self.mode != "pass":
            with suppress(OSError):
                fail(conn, self.mode, None)
            return
        upstream = socket.create_connection(("127.0.0.1", self.target))
        self._open += [conn, upstream]
        threading.Thread(target=_pump, args=(upstream, conn), daemon=True).start()
        _pump(conn, upstream)


def _close(listener: socket.socket) -> None:
    """Stop listening at once (a bare close leaves a blocked accept() holding the port, and
    new connections queue there, then are reset)."""
    with suppress(OSError):
        listener.shutdown(socket.SHUT_RDWR)
    listener.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with suppress(OSError):
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    for sock in (source, sink):
        with suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
