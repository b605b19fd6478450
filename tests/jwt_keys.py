"""Signing keys and JWTs for the authorization tests (``test_auth``, ``test_e2e_auth``).

:class:`Keys` is an RSA key that mints RS256 tokens and publishes its JWK; :class:`JWKSServer`
serves that JWK over HTTP on 127.0.0.1 for a server in another process; :func:`unsigned`
and :func:`tampered` turn a good token into the two classic forgeries.
"""

from __future__ import annotations

import base64
import http.server
import json
import threading
import time
import typing as t

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

#: The protected resource and the issuer the tokens of :meth:`Keys.mint` name by default.
RESOURCE = "http://localhost/mcp"
ISSUER = "https://auth.example.com"


class Keys:
    """An RSA signing key and its JWKS."""

    def __init__(self, kid: str = "key-1") -> None:
        self.kid = kid
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def jwk(self) -> dict[str, t.Any]:
        data = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.private.public_key()))
        return {**data, "kid": self.kid, "use": "sig", "alg": "RS256"}

    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def mint(
        self,
        *,
        audience: str = RESOURCE,
        issuer: str = ISSUER,
        subject: str = "alice",
        scope: str = "",
        expires_in: float = 300,
        **claims: t.Any,
    ) -> str:
        now = int(time.time())
        payload = {"iss": issuer, "sub": subject, "aud": audience, "iat": now,
                   "exp": now + int(expires_in), "scope": scope, **claims}  # fmt: skip
        return jwt.encode(payload, self.private, algorithm="RS256", headers={"kid": self.kid})


class JWKSServer:
    """A JWKS document of ``keys`` served on 127.0.0.1 by a tiny ``http.server`` thread.

    :attr:`keys` may change while it serves; :attr:`hits` counts the fetches.
    """

    def __init__(self, *keys: Keys) -> None:
        self.keys = list(keys)
        self.hits = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                outer.hits += 1
                body = json.dumps({"keys": [k.jwk() for k in outer.keys]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: t.Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/jwks.json"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> JWKSServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def unsigned(token: str) -> str:
    """The token re-headed with ``alg: none`` and no signature."""
    header = base64.urlsafe_b64encode(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    return header.rstrip(b"=").decode() + "." + token.split(".")[1] + "."


def tampered(token: str) -> str:
    """The token with its payload changed (``sub`` → ``mallory``) and the signature kept."""
    head, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["sub"] = "mallory"
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{head}.{body}.{signature}"
