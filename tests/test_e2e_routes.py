"""Every route Flask-MCP adds to an app, checked alike over HTTP: gunicorn, httpx.

The app is ``tests/_apps/every_route.py``: the MCP endpoint with authorization, the RFC
9728 metadata, the built-in authorization server, the Server Card and AI Catalog, the
probes, the explorer and ``/metrics``. Each test asks the same question of the routes
it concerns (the Host check, CORS, methods, error bodies).
"""

from __future__ import annotations

import http.client
import json
import typing as t

import httpx
import pytest
from harness import ServeFactory
from harness import free_port
from harness import start_server
from wire import ACCEPT
from wire import initialize_request

pytestmark = [pytest.mark.e2e]

ORIGIN = "https://web-client.example"
#: Every route of the app, with a method it takes.
EVERY_ROUTE = [
    ("/mcp", "GET"),
    ("/livez", "GET"),
    ("/readyz", "GET"),
    ("/metrics", "GET"),
    ("/mcp/server-card", "GET"),
    ("/.well-known/ai-catalog.json", "GET"),
    ("/_mcp/explorer/", "GET"),
    ("/.well-known/oauth-protected-resource/mcp", "GET"),
    ("/.well-known/oauth-protected-resource", "GET"),
    ("/.well-known/oauth-authorization-server", "GET"),
    ("/oauth/authorize", "GET"),
    ("/oauth/jwks", "GET"),
    ("/oauth/register", "POST"),
    ("/oauth/token", "POST"),
    ("/oauth/revoke", "POST"),
]


@pytest.fixture(scope="module")
def base() -> t.Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {"OAUTH_APP_BASE": url}
    with start_server("tests._apps.every_route:app", "gthread", env=env, port=port):
        yield url


@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/.well-known/oauth-authorization-server", "GET"),
        ("/oauth/jwks", "GET"),
        ("/oauth/register", "POST"),
        ("/oauth/token", "POST"),
        ("/oauth/revoke", "POST"),
    ],
)
def test_a_browser_client_reaches_the_authorization_servers_endpoints(
    base: str, path: str, method: str
) -> None:
    """RFC 9700 ("Usage of CORS"): a browser-based client (a web inspector, a chat UI)
    reads the metadata and the keys, registers, and exchanges and revokes its tokens
    from its own origin; its preflights ask for ``Content-Type`` (JSON) and
    ``Authorization`` (client authentication, an initial access token)."""
    preflight = httpx.options(
        base + path,
        headers={
            "Origin": ORIGIN,
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": "authorization, content-type, mcp-protocol-version",
        },
    )
    assert preflight.is_success, preflight.text
    assert preflight.headers["Access-Control-Allow-Origin"] == "*"
    assert method in preflight.headers["Access-Control-Allow-Methods"]
    allowed = preflight.headers["Access-Control-Allow-Headers"].lower()
    assert {"authorization", "content-type", "mcp-protocol-version"} <= {
        name.strip() for name in allowed.split(",")
    }
    answer = httpx.request(method, base + path, headers={"Origin": ORIGIN}, data={})
    assert answer.headers["Access-Control-Allow-Origin"] == "*", answer.text
    if answer.status_code == 401:  # the client's authentication failed: it reads why
        assert "WWW-Authenticate" in answer.headers["Access-Control-Expose-Headers"]


def test_the_authorization_endpoint_allows_no_cross_origin_read(base: str) -> None:
    """RFC 9700: CORS MUST NOT be supported at the authorization endpoint, which the
    browser is sent to: no page may read its consent form."""
    preflight = httpx.options(
        base + "/oauth/authorize",
        headers={"Origin": ORIGIN, "Access-Control-Request-Method": "POST"},
    )
    page = httpx.get(base + "/oauth/authorize", headers={"Origin": ORIGIN})
    for answer in (preflight, page):
        assert "Access-Control-Allow-Origin" not in answer.headers


@pytest.mark.parametrize(("path", "method"), EVERY_ROUTE)
def test_a_refused_host_gets_the_same_answer_on_every_route(
    base: str, path: str, method: str
) -> None:
    """Every route refuses a Host that could come from DNS rebinding as the endpoint does:
    421 with a JSON body saying to list the name in ``MCP_ALLOWED_HOSTS`` (the probes,
    ``/metrics``, the card and the explorer answered Werkzeug's HTML page; the RFC 9728
    metadata and the authorization server answered under any name)."""
    refused = httpx.request(
        method, base + path, headers={"Host": "evil.example", "Accept": "*/*"}, data={}
    )
    assert refused.status_code == 421
    assert refused.headers["Content-Type"].startswith("application/json")
    assert "MCP_ALLOWED_HOSTS" in refused.json()["error"]["message"]


@pytest.fixture(scope="module")
def proxied_base() -> t.Iterator[str]:
    """The app behind ``ProxyFix``, allowing one ``host:port`` (the proxy forwards the port)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {"OAUTH_APP_BASE": url, "FLASK_MCP_ALLOWED_HOSTS": '["mcp.example.com:443"]'}
    with start_server("tests._apps.every_route:proxied", "gthread", env=env, port=port):
        yield url


@pytest.mark.parametrize(("path", "method"), EVERY_ROUTE)
def test_every_route_checks_the_host_a_proxy_forwards_alike(
    proxied_base: str, path: str, method: str
) -> None:
    """Behind ``ProxyFix``, a forwarded ``host:port`` listed in ``MCP_ALLOWED_HOSTS`` is
    accepted on every route: the endpoint checked the Host header, the other routes
    Werkzeug's ``request.host``, which drops ``:443`` from an ``https`` request's, so they
    answered 421 to a host the endpoint served."""
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "mcp.example.com:443"}
    answer = httpx.request(
        method, proxied_base + path, headers={**forwarded, "Accept": "*/*"}, data={}
    )
    assert answer.status_code != 421, answer.text


@pytest.mark.parametrize("worker", ["gthread", "waitress"])
def test_a_method_the_endpoint_does_not_take_gets_a_json_405(
    serve: ServeFactory, worker: str
) -> None:
    """A method the endpoint does not take (PUT, PATCH, TRACE, a WebDAV or custom one) is
    answered as every other refusal of it is: 405 with a JSON-RPC error body and an
    ``Allow`` naming the methods it takes (they got Werkzeug's HTML page, whose ``Allow``
    offered PUT and PATCH); ``OPTIONS`` and a CORS preflight still offer none of them."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {"OAUTH_APP_BASE": base, "FLASK_MCP_ALLOWED_ORIGINS": f'["{ORIGIN}"]'}
    serve("tests._apps.every_route:app", worker, env=env, port=port)
    refused_methods = ("PUT", "PATCH", "TRACE", "PROPFIND", "PURGE")
    for method in refused_methods:
        refused = httpx.request(
            method, base + "/mcp", json=initialize_request(), headers={"Accept": ACCEPT}
        )
        assert refused.status_code == 405, refused.text
        assert refused.headers["Content-Type"] == "application/json"
        assert method in refused.json()["error"]["message"]
        assert refused.headers["Allow"] == "GET, POST, DELETE"
    preflight = httpx.options(
        base + "/mcp", headers={"Origin": ORIGIN, "Access-Control-Request-Method": "POST"}
    )
    assert preflight.status_code == 200
    offered = {method.strip() for method in preflight.headers["Allow"].split(",")}
    assert {"GET", "POST", "DELETE"} <= offered and not offered & set(refused_methods)
    offered = {name.strip() for name in preflight.headers["Allow"].split(",")}
    assert {"GET", "POST", "DELETE"} <= offered
    assert not offered & {"PUT", "PATCH"}


@pytest.mark.parametrize("get_stream", [True, False])
@pytest.mark.parametrize("worker", ["gthread", "waitress"])
def test_the_endpoint_offers_exactly_the_methods_it_takes(
    serve: ServeFactory, worker: str, get_stream: bool
) -> None:
    """``OPTIONS`` and every 405 of the endpoint name the same methods, those it takes:
    ``OPTIONS`` offered ``HEAD`` (always refused with 405) and, with
    ``MCP_ENABLE_GET_STREAM = False``, ``GET`` (refused too), and a ``HEAD``'s 405
    offered ``GET`` in that configuration."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        "OAUTH_APP_BASE": base,
        "FLASK_MCP_ENABLE_GET_STREAM": str(get_stream).lower(),
        "FLASK_MCP_ALLOWED_ORIGINS": f'["{ORIGIN}"]',  # the preflight's
    }
    serve("tests._apps.every_route:app", worker, env=env, port=port)
    taken = ["GET", "POST", "DELETE"] if get_stream else ["POST", "DELETE"]
    preflight = httpx.options(
        base + "/mcp", headers={"Origin": ORIGIN, "Access-Control-Request-Method": "POST"}
    )
    assert preflight.status_code == 200
    assert _methods(preflight.headers["Allow"]) == {*taken, "OPTIONS"}
    for method in ("HEAD", "PUT"):
        refused = httpx.request(method, base + "/mcp", headers={"Accept": ACCEPT})
        assert refused.status_code == 405, (method, refused.text)
        assert _methods(refused.headers["Allow"]) == set(taken), method


def _methods(allow: str) -> set[str]:
    """The methods an ``Allow`` header names."""
    return {method.strip() for method in allow.split(",")}


@pytest.mark.parametrize("worker", ["gthread", "waitress"])
def test_options_on_the_endpoint_checks_the_host_and_the_origin(
    serve: ServeFactory, worker: str
) -> None:
    """``OPTIONS`` (a CORS preflight) and the methods the endpoint refuses are checked as
    ``POST``, ``GET`` and ``DELETE`` are: a ``Host`` outside ``MCP_ALLOWED_HOSTS`` gets 421
    and an ``Origin`` outside ``MCP_ALLOWED_ORIGINS`` 403 (the spec: servers MUST validate
    the ``Origin`` of every incoming connection). Both were answered 200 with an ``Allow``,
    as if allowed; a preflight of an allowed origin still is."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {"OAUTH_APP_BASE": base, "FLASK_MCP_ALLOWED_ORIGINS": f'["{ORIGIN}"]'}
    serve("tests._apps.every_route:app", worker, env=env, port=port)
    preflight = {"Access-Control-Request-Method": "POST"}
    for method in ("OPTIONS", "PUT"):
        rebound = httpx.request(
            method, base + "/mcp", headers={**preflight, "Host": f"evil.example:{port}"}
        )
        assert rebound.status_code == 421, (method, rebound.text)
        assert "MCP_ALLOWED_HOSTS" in rebound.json()["error"]["message"]
        stranger = httpx.request(
            method, base + "/mcp", headers={**preflight, "Origin": "https://evil.example"}
        )
        assert stranger.status_code == 403, (method, stranger.text)
        assert "MCP_ALLOWED_ORIGINS" in stranger.json()["error"]["message"]
    allowed = httpx.options(base + "/mcp", headers={**preflight, "Origin": ORIGIN})
    assert allowed.status_code == 200, allowed.text
    assert {"GET", "POST", "DELETE"} <= _methods(allowed.headers["Allow"])
    assert httpx.options(base + "/mcp").status_code == 200  # no Origin: not a browser


def _post_chunked(port: int, path: str, body: bytes, content_type: str) -> tuple[int, t.Any]:
    """POST ``body`` with ``Transfer-Encoding: chunked`` (no ``Content-Length``), in two
    chunks; return the status and the JSON answer."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest("POST", path)
        conn.putheader("Content-Type", content_type)
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        for part in (body[: len(body) // 2], body[len(body) // 2 :]):
            conn.send(b"%x\r\n%s\r\n" % (len(part), part))
        conn.send(b"0\r\n\r\n")
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


@pytest.mark.parametrize("worker", ["gthread", "uwsgi", "uwsgi-router"])
def test_the_authorization_server_reads_a_chunked_body_on_every_server(
    serve: ServeFactory, worker: str
) -> None:
    """A registration and a token request sent chunked (no ``Content-Length``) are read
    as the endpoint's own chunked POSTs are, and one past the bound is refused with 413:
    uWSGI gives the app an empty ``wsgi.input`` for a chunked body, so its registration
    was answered 400 ("the body must be a JSON object") there and only there."""
    port = free_port()
    serve(
        "tests._apps.every_route:app",
        worker,
        env={"OAUTH_APP_BASE": f"http://127.0.0.1:{port}"},
        port=port,
    )
    metadata = {"redirect_uris": ["http://127.0.0.1:9/cb"], "token_endpoint_auth_method": "none"}
    status, registered = _post_chunked(
        port, "/oauth/register", json.dumps(metadata).encode(), "application/json"
    )
    assert status == 201, registered
    form = f"grant_type=authorization_code&code=nope&client_id={registered['client_id']}"
    status, refused = _post_chunked(
        port, "/oauth/token", form.encode(), "application/x-www-form-urlencoded"
    )
    assert (status, refused["error"]) == (400, "invalid_grant"), refused
    padded = {**metadata, "client_name": "x" * 70_000}
    status, too_large = _post_chunked(
        port, "/oauth/register", json.dumps(padded).encode(), "application/json"
    )
    assert (status, too_large["error"]) == (413, "invalid_request"), too_large
