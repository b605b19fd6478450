"""``tools/call`` with the built-in authorization server's tokens next to no authentication.

The server runs ``flask_mcp.contrib.oauth_server`` (``BENCH_OAUTH_SERVER=1``): the
benchmark registers a client, consents and redeems the code over HTTP, as a client would,
then sends that access token on every request. Each request is a JWT check (cached after
the first, as for any JWT) plus the revocation check: a dict in memory, or with ``--backend
redis`` none once the worker knows the token's family live and hears the revocations on
the backend's pub/sub (``flask_mcp.contrib.oauth_server.revocations``). Both
servers get the same ``Authorization`` header (the one without auth ignores it), the same
backend and the same ``SECRET_KEY``. The verdict: at least 0.9x the unauthenticated server
in req/s at c=16.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import typing as t

from . import report
from . import wrk
from .options import Options
from .servers import Server
from .servers import start_all
from .targets import flask_mcp
from .throughput import compare_add
from .throughput import cpu_ratio
from .throughput import field_ratio

RESOURCE = "https://bench.example/mcp"
REDIRECT = "http://127.0.0.1:9/callback"
CONCURRENCY = (16,)
#: The labels of the two servers.
PLAIN, OAUTH = "plain/gevent", "oauth/gevent"


def access_token(mcp_url: str) -> str:
    """Register, consent and redeem a code at the server of ``mcp_url``; return the token."""
    import httpx

    base = mcp_url.rsplit("/mcp", 1)[0]
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    with httpx.Client(base_url=base, timeout=30) as http:
        client_id = http.post("/oauth/register", json={"redirect_uris": [REDIRECT]}).json()[
            "client_id"
        ]
        params = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "code_challenge": challenge.rstrip(b"=").decode(),
            "code_challenge_method": "S256",
            "resource": RESOURCE,
        }
        page = http.get("/oauth/authorize", params=params).text
        found = re.search(r'name="csrf_token" value="([^"]+)"', page)
        if found is None:
            raise RuntimeError(f"no consent page: {page[:300]}")
        allowed = http.post(
            "/oauth/authorize",
            params=params,
            data={"csrf_token": found.group(1), "decision": "allow"},
        )
        code = dict(httpx.URL(allowed.headers["Location"]).params)["code"]
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "client_id": client_id,
            "code_verifier": verifier,
        }
        return str(http.post("/oauth/token", data=form).json()["access_token"])


def verdicts(results: dict[tuple[str, int], wrk.WrkResult]) -> list[report.Verdict]:
    """The issue's target for the built-in authorization server's tokens."""
    value = field_ratio(results, OAUTH, PLAIN, 16, "rps")
    cpu = cpu_ratio(results, OAUTH, PLAIN, 16)
    return [
        report.Verdict(
            "tools/call with the built-in server's tokens vs unauthenticated, c=16",
            ">= 0.9x",
            f"{report.fmt_ratio(value)} (CPU/req {report.fmt_ratio(cpu)})",
            None if value is None else value >= 0.9,
        )
    ]


def specs(options: Options, backend: str | None = None) -> list[t.Any]:
    """The two servers: the same app without authorization and with the built-in server."""
    # the same app on both sides: a Flask-Login app has a SECRET_KEY (Flask then opens a
    # signed session on every request), so the server without tokens gets one too
    common = {
        "FLASK_SECRET_KEY": "benchmark",
        **({"FLASK_MCP_BACKEND": backend} if backend else {}),
    }
    env = {
        **common,
        "BENCH_OAUTH_SERVER": "1",
        "FLASK_MCP_AUTH_RESOURCE": RESOURCE,
        "FLASK_MCP_AUTH_AUTHORIZATION_SERVERS": json.dumps(["https://bench.example"]),
    }
    found = [flask_mcp("gevent", common, name=PLAIN), flask_mcp("gevent", env, name=OAUTH)]
    return [s for s in found if options.wanted(s.name)]


def authorize(servers: t.Sequence[Server]) -> None:
    """Get a token from the OAuth server of ``servers``; every wrk request then sends it
    (the server without authorization ignores the header)."""
    oauth = next(s for s in servers if s.spec.name == OAUTH)
    os.environ["BENCH_AUTHORIZATION"] = f"Bearer {access_token(oauth.url)}"


def forget_token() -> None:
    """Stop sending the token."""
    os.environ.pop("BENCH_AUTHORIZATION", None)


def side_by_side_verdicts(medians: dict[str, tuple[float, float]]) -> list[report.Verdict]:
    """The issue's target on the median of simultaneous rounds (:mod:`benchmarks.side_by_side`)."""
    found = medians.get(f"{OAUTH}@16")
    return [
        report.Verdict(
            "tools/call with the built-in server's tokens vs unauthenticated, c=16, side by side",
            ">= 0.9x",
            "–" if found is None else f"{found[0]:.3f}x (CPU/req {found[1]:.3f}x)",
            None if found is None else found[0] >= 0.9,
        )
    ]


def run(options: Options, backend: str | None = None) -> dict[str, t.Any]:
    """Run the benchmark; print and return its figures."""
    where = backend or "memory://"
    print(report.banner(f"tools/call with OAuth server tokens vs none (gevent -w 1, {where})"))
    servers = start_all(specs(options, backend), options.server_core)
    try:
        authorize(servers)
        return compare_add(servers, options, CONCURRENCY, verdicts)
    finally:
        forget_token()
        for server in servers:
            server.stop()
