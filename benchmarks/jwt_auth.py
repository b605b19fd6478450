"""Authenticated ``tools/call`` (JWT access tokens) next to the same server without auth.

The benchmark process makes an RSA key, serves its JWKS on 127.0.0.1 and mints one
access token; both servers get the same ``Authorization: Bearer`` header on every
request (a server without an authorizer ignores it), so the requests are the same
bytes. ``jwt/gevent`` checks the token with ``MCP_AUTH_JWT_JWKS_URL``. The verdict:
at least 0.85x the unauthenticated server in req/s at c=16.
"""

from __future__ import annotations

import http.server
import json
import os
import threading
import time
import typing as t

from . import report
from . import wrk
from .options import Options
from .servers import start_all
from .targets import flask_mcp
from .throughput import compare_add
from .throughput import cpu_ratio
from .throughput import field_ratio

ISSUER = "https://auth.bench.example"
RESOURCE = "https://bench.example/mcp"
CONCURRENCY = (16,)


def _keys() -> tuple[t.Any, dict[str, t.Any]]:
    import jwt  # the test extra installs PyJWT[crypto]
    from cryptography.hazmat.primitives.asymmetric import rsa

    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key()))
    jwk.update(kid="bench", alg="RS256", use="sig")
    return private, jwk


def _serve_jwks(jwk: dict[str, t.Any]) -> http.server.ThreadingHTTPServer:
    body = json.dumps({"keys": [jwk]}).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: t.Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def verdicts(results: dict[tuple[str, int], wrk.WrkResult]) -> list[report.Verdict]:
    """The issue's JWT target."""
    value = field_ratio(results, "jwt/gevent", "plain/gevent", 16, "rps")
    cpu = cpu_ratio(results, "jwt/gevent", "plain/gevent", 16)
    return [
        report.Verdict(
            "JWT-authenticated req/s vs unauthenticated, c=16",
            ">= 0.85x",
            f"{report.fmt_ratio(value)} (CPU/req {report.fmt_ratio(cpu)})",
            None if value is None else value >= 0.85,
        )
    ]


def run(options: Options) -> dict[str, t.Any]:
    """Run the JWT benchmark; print and return its figures."""
    print(report.banner("JWT-authenticated tools/call vs unauthenticated (gevent -w 1)"))
    import jwt

    private, jwk = _keys()
    httpd = _serve_jwks(jwk)
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": RESOURCE, "sub": "bench", "iat": now, "exp": now + 86400}
    token = jwt.encode(claims, private, algorithm="RS256", headers={"kid": "bench"})
    os.environ["BENCH_AUTHORIZATION"] = f"Bearer {token}"
    env = {
        "FLASK_MCP_AUTH_JWT_JWKS_URL": f"http://127.0.0.1:{httpd.server_address[1]}/jwks",
        "FLASK_MCP_AUTH_RESOURCE": RESOURCE,
        "FLASK_MCP_AUTH_AUTHORIZATION_SERVERS": json.dumps([ISSUER]),
    }
    specs = [flask_mcp("gevent", name="plain/gevent"), flask_mcp("gevent", env, name="jwt/gevent")]
    specs = [s for s in specs if options.wanted(s.name)]
    try:
        servers = start_all(specs, options.server_core)
        try:
            return compare_add(servers, options, CONCURRENCY, verdicts)
        finally:
            for server in servers:
                server.stop()
    finally:
        os.environ.pop("BENCH_AUTHORIZATION", None)
        httpd.shutdown()
