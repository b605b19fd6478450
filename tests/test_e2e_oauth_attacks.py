"""The built-in authorization server attacked over HTTP: gunicorn, one gthread worker.

Each test plays a hostile client (or a hostile page) against ``tests/_apps/oauth_notes.py``
with ``httpx``: registrations, authorization and token requests a well-behaved client
would never send, and what the user is shown on the consent page.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import secrets
import typing as t
from urllib.parse import parse_qs
from urllib.parse import urlsplit

import httpx
import pytest
from harness import free_port
from harness import start_server

from flask_mcp.contrib.oauth_server.clients import redirect_host

pytestmark = [pytest.mark.e2e]

CALLBACK = "http://127.0.0.1:9/callback"


@pytest.fixture(scope="module")
def base() -> t.Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        "OAUTH_APP_BASE": url,
        # every test registers clients: the limits would refuse some
        "FLASK_MCP_OAUTH_REGISTRATION_RATE_LIMIT": "null",
        "FLASK_MCP_OAUTH_TOKEN_RATE_LIMIT": "null",
    }
    with start_server("tests._apps.oauth_notes:app", "gthread", env=env, port=port):
        yield url


def challenge() -> tuple[str, str]:
    """A PKCE verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(40)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def register(base: str, redirect_uris: list[str], **metadata: t.Any) -> httpx.Response:
    body = {"redirect_uris": redirect_uris, "client_name": "Attacker", **metadata}
    return httpx.post(f"{base}/oauth/register", json=body)


@contextlib.contextmanager
def logged_in(base: str, user: str = "ada") -> t.Iterator[httpx.Client]:
    """A browser with ``user`` signed in to the app (its session cookie)."""
    with httpx.Client(base_url=base) as browser:
        answer = browser.post("/login", data={"username": user, "password": f"pw-{user}"})
        assert answer.status_code == 302, answer.text
        yield browser


def authorize_params(client_id: str, redirect_uri: str = CALLBACK, **extra: str) -> dict[str, str]:
    return {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "scope": "notes:read",
        "state": "s",
        "code_challenge": challenge()[1],
        "code_challenge_method": "S256",
        **extra,
    }


def redirected_error(answer: httpx.Response) -> str:
    assert answer.status_code == 302, answer.text
    return parse_qs(urlsplit(answer.headers["Location"]).query)["error"][0]


def test_what_the_client_sent_in_an_error_description_is_no_500(base: str) -> None:
    """A quote in a redirect URI, scope, resource or client_id is quoted back, not a crash.

    Authlib refuses an ``error_description`` holding ``"`` (RFC 6749 allows no ``"``,
    ``\\`` or non-ASCII there): an attacker could answer every such request with a 500.
    So did Werkzeug a redirect to a port past 65535.
    """
    for unsafe in ["http://evil.example/it's", "https://app.example:99999/cb"]:
        refused = register(base, [unsafe])
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"] == "invalid_redirect_uri"

    client_id = register(base, [CALLBACK]).json()["client_id"]
    with logged_in(base) as browser:
        quoted_resource = authorize_params(client_id, resource='https://evil.example/"x')
        assert redirected_error(browser.get("/oauth/authorize", params=quoted_resource)) == (
            "invalid_target"
        )
        quoted_scope = authorize_params(client_id, scope='notes:read "x\\')
        assert redirected_error(browser.get("/oauth/authorize", params=quoted_scope)) == (
            "invalid_scope"
        )
        # a loopback port past 65535: its consent made a code, then the redirect a 500
        no_port = authorize_params(client_id, redirect_uri="http://127.0.0.1:99999/callback")
        page = browser.get("/oauth/authorize", params=no_port)
        assert page.status_code == 400, page.text
        assert "invalid_request" in page.text
        document = authorize_params("https://a'b.example/client.json")
        page = browser.get("/oauth/authorize", params=document)
        assert page.status_code == 400, page.text
        assert "invalid_client" in page.text

    token = httpx.post(
        f"{base}/oauth/token",
        data={
            "grant_type": "authorization_code",
            "client_id": "https://a'b.example/client.json",
            "code": "x",
            "code_verifier": "v" * 43,
        },
    )
    assert token.status_code in (400, 401), token.text
    assert token.json()["error"] == "invalid_client"


def test_a_redirect_uri_with_user_info_is_refused(base: str) -> None:
    """``https://trusted.example@evil.example/cb`` sends the code to ``evil.example``.

    The consent page said "It sends you back to trusted.example@evil.example", while
    the MCP authorization spec has the server clearly display the redirect URI's host.
    Registration refuses such a URI, and the page shows the host alone. So it does a
    URI with characters RFC 3986 has none of, which browsers and Python read apart.
    """
    lookalike = "https://claude.ai@evil.example/callback"
    refused = register(base, [lookalike])
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"] == "invalid_redirect_uri"
    assert "user info" in refused.json()["error_description"]
    # a browser reads a backslash as "/" (the host is evil.example), Python as part of
    # the host: the page showed "evil.example\\.claude.ai". A URI holds no "\\" nor space.
    for disguised in ["https://evil.example\\.claude.ai/callback", "https://evil.example/c b"]:
        refused = register(base, [disguised])
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"] == "invalid_redirect_uri"

    assert redirect_host(lookalike) == "evil.example"
    assert redirect_host("http://[::1]:8123/cb") == "[::1]:8123"
    assert redirect_host("com.example.app:/cb") == "com.example.app:/cb"
    client_id = register(base, [CALLBACK]).json()["client_id"]
    with logged_in(base) as browser:
        page = browser.get("/oauth/authorize", params=authorize_params(client_id))
    assert page.status_code == 200, page.text
    assert "sends you back to\n    <code>127.0.0.1:9</code>" in page.text


def test_the_consent_page_warns_of_a_loopback_redirect(base: str) -> None:
    """Any local program may listen on a loopback port and claim to be any client.

    The MCP authorization spec ("Localhost Redirect URI Risks") has the server SHOULD
    warn of loopback redirect URIs: a Client ID Metadata Document proves nothing there,
    as an attacker can use the legitimate client's URL with a port of its own.
    """
    loopback = register(base, [CALLBACK]).json()["client_id"]
    remote = register(base, ["https://app.example/callback"]).json()["client_id"]
    with logged_in(base) as browser:
        warned = browser.get("/oauth/authorize", params=authorize_params(loopback))
        params = authorize_params(remote, redirect_uri="https://app.example/callback")
        plain = browser.get("/oauth/authorize", params=params)
    assert warned.status_code == plain.status_code == 200
    assert 'id="loopback-warning"' in warned.text
    assert "127.0.0.1:9" in warned.text.split('id="loopback-warning"')[1]
    assert 'id="loopback-warning"' not in plain.text


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("not json", "application/json"),  # Flask's HTML 400 page
        ('"a string"', "application/json"),  # a 500
        ("[1]", "application/json"),  # a 500
        ("7", "application/json"),  # a 500
        ('{"redirect_uris": ["https://app.example/cb"]}', "text/plain"),  # Flask's HTML 415
        ('{"redirect_uris": ["https://app.example/cb"], "response_types": [1]}', None),
        (
            '{"redirect_uris": ["https://app.example/cb"], "grant_types": "authorization_code"}',
            None,
        ),
        ('{"redirect_uris": ["https://app.example/cb"], "jwks_uri": 5}', None),
        ('{"redirect_uris": ["https://app.example/cb"], "logo_uri": {}}', None),
        ('{"redirect_uris": ["https://app.example/cb"], "scope": 5}', None),  # was stored
        ('{"redirect_uris": ["https://app.example/cb"], "jwks": "keys"}', None),
    ],
)
def test_a_registration_of_the_wrong_shape_gets_an_oauth_error(
    base: str, body: str, content_type: str | None
) -> None:
    """RFC 7591 answers a registration it refuses with a JSON error: never an HTML page, a
    500, or a client stored with a member no other code expects."""
    headers = {"Content-Type": content_type or "application/json"}
    answer = httpx.post(f"{base}/oauth/register", content=body, headers=headers)
    assert answer.status_code == 400, answer.text
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.headers["Cache-Control"] == "no-store"
    assert answer.json()["error"] == "invalid_client_metadata", answer.json()
    assert "RFC 7591" in answer.json()["error_description"]


def test_slow_client_metadata_documents_cannot_take_every_thread(tmp_path: t.Any) -> None:
    """Anyone may name a slow host as a ``client_id``: each fetch of its document holds a
    server thread (and a socket) until its timeout. Past
    ``MCP_OAUTH_CLIENT_METADATA_MAX_FETCHES`` fetches at once the request is refused at
    once, with ``temporarily_unavailable`` and ``Retry-After``, instead of taking another
    thread; a registered client is still served meanwhile."""
    import threading

    from oauth_hosts import DocumentHost

    host = DocumentHost(tmp_path, CALLBACK, trickle=0.05)  # its headers never end
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        "OAUTH_APP_BASE": url,
        "FLASK_MCP_OAUTH_REGISTRATION_RATE_LIMIT": "null",
        "FLASK_MCP_OAUTH_CLIENT_METADATA_ALLOW_PRIVATE": "true",
        "FLASK_MCP_OAUTH_CLIENT_METADATA_CA_BUNDLE": str(host.cert),
        "FLASK_MCP_OAUTH_CLIENT_METADATA_TIMEOUT": "4",
        "FLASK_MCP_OAUTH_CLIENT_METADATA_MAX_FETCHES": "2",
    }
    slow: list[httpx.Response] = []

    def authorize_slow() -> None:
        slow.append(httpx.get(f"{url}/oauth/authorize", params=authorize_params(host.url)))

    try:
        with start_server("tests._apps.oauth_notes:app", "gthread", env=env, port=port):
            fetching = [threading.Thread(target=authorize_slow) for _ in range(2)]
            for thread in fetching:
                thread.start()
            for _ in range(100):  # a bound on the wait for both fetches to be under way
                if host.fetches == 2:
                    break
                threading.Event().wait(0.05)
            assert host.fetches == 2
            refused = httpx.get(f"{url}/oauth/authorize", params=authorize_params(host.url))
            registered = register(url, [CALLBACK]).json()["client_id"]
            served = httpx.get(f"{url}/oauth/authorize", params=authorize_params(registered))
            for thread in fetching:
                thread.join(30)
    finally:
        host.close()
    assert host.fetches == 2  # the third was refused before fetching
    assert refused.status_code == 503, refused.text
    assert '<code id="error">temporarily_unavailable</code>' in refused.text
    assert "retry" in refused.text and refused.headers["Retry-After"] == "4"
    assert "Location" not in refused.headers
    assert served.status_code in (200, 302)  # the login page, for a known client
    assert [answer.status_code for answer in slow] == [400, 400]
    assert all("longer than 4 s" in answer.text for answer in slow)
