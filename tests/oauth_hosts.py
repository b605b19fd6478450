"""Servers the OAuth tests run on 127.0.0.1: a client's loopback redirect URI, and an HTTPS
host for Client ID Metadata Documents with a self-signed certificate (which the app under
test is given as its CA bundle).
"""

from __future__ import annotations

import datetime
import http.server
import ipaddress
import json
import queue
import ssl
import threading
import time
import typing as t
from pathlib import Path
from urllib.parse import parse_qs
from urllib.parse import urlsplit


class Callback:
    """The client's loopback redirect URI: an HTTP server on 127.0.0.1 keeping each query."""

    def __init__(self) -> None:
        self.queries: queue.Queue[dict[str, list[str]]] = queue.Queue()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                parts = urlsplit(self.path)
                if parts.path != "/callback":  # the browser asks for /favicon.ico too
                    self.send_error(404)
                    return
                outer.queries.put(parse_qs(parts.query))
                body = b"<p id='done'>You may close this window.</p>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: t.Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/callback"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (and its key), which the app trusts as its CA bundle."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


class DocumentHost:
    """An HTTPS server on 127.0.0.1 serving one Client ID Metadata Document."""

    def __init__(
        self,
        directory: Path,
        redirect_uri: str,
        *,
        padding: int = 0,
        delay: float = 0.0,
        chunked: bool = False,
        cache_control: str = "max-age=3600",
        trickle: float = 0.0,
    ) -> None:
        self.cert, key = self_signed(directory)
        self.fetches = 0
        #: Set by :meth:`close`: a trickling answer stops.
        self.stopping = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                outer.fetches += 1
                if trickle:  # the head a byte at a time, ``trickle`` seconds apart, no end
                    head = b"HTTP/1.1 200 OK\r\nX-Padding: " + b"x" * 60000
                    for byte in head:
                        if outer.stopping.wait(trickle):
                            return
                        self.wfile.write(bytes([byte]))
                    return
                document = (
                    {**outer.document, "padding": "x" * padding} if padding else outer.document
                )
                body = json.dumps(document).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Cache-Control", cache_control)
                if chunked:  # no Content-Length: the size shows only while reading
                    self.send_header("Transfer-Encoding", "chunked")
                else:
                    self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                if delay:  # headers now, the body late: a slow document
                    self.wfile.flush()
                    time.sleep(delay)
                if chunked:
                    for start in range(0, len(body), 1024):
                        piece = body[start : start + 1024]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.wfile.write(body)

            def log_message(self, *args: t.Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}/oauth/client.json"
        self.document = {
            "client_id": self.url,
            "client_name": "Document Client",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
