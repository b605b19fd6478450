"""The built-in authorization server end to end: gunicorn gevent, 2 workers, Redis, Chromium.

The official ``mcp`` Python client's OAuth support (``mcp.client.auth``) discovers the
server, registers (by DCR, or with a Client ID Metadata Document this test serves over
HTTPS on 127.0.0.1), and sends the user to the authorization URL; headless Chromium
(``tests/browser.py``) logs in as ``ada`` and clicks Allow on the consent page; the
client gets tokens, calls a scoped tool as ``ada``, refreshes, steps up to a wider scope
(403 ``insufficient_scope``, consent, success), and after revocation the tokens are
refused. The Python client runs in a thread of its own (anyio), the browser in the test's
thread (Playwright's sync API), handing URLs over a queue.
"""

from __future__ import annotations

import json
import queue
import shutil
import sqlite3
import subprocess
import threading
import typing as t
from pathlib import Path

import anyio
import httpx
import pytest
from harness import free_port
from harness import redis_env
from harness import redis_server
from harness import skip_or_fail
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult
from mcp.shared.auth import OAuthClientMetadata
from mcp.shared.auth import OAuthToken
from oauth_hosts import Callback
from oauth_hosts import DocumentHost
from token_storage import MemoryTokenStorage

pytestmark = [pytest.mark.e2e]

APP = "_apps.oauth_notes:app"
WAIT = 60.0


class Session:
    """The official client in a thread (see :meth:`run`); the browser answers its redirects."""

    def __init__(self, mcp_url: str, callback: Callback, document_url: str | None = None) -> None:
        self.mcp_url = mcp_url
        self.callback = callback
        self.redirects: queue.Queue[str] = queue.Queue()
        self.storage = MemoryTokenStorage()
        self.provider = OAuthClientProvider(
            server_url=mcp_url,
            client_metadata=OAuthClientMetadata(
                client_name="Python test client",
                redirect_uris=[callback.url],  # type: ignore[list-item]
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method="none",
            ),
            storage=self.storage,
            redirect_handler=self._redirect,
            callback_handler=self._callback,
            client_metadata_url=document_url,
        )

    async def _redirect(self, url: str) -> None:
        self.redirects.put(url)

    async def _callback(self) -> AuthorizationCodeResult:
        query = await anyio.to_thread.run_sync(lambda: self.callback.queries.get(timeout=WAIT))
        assert "code" in query, f"the authorization was refused: {query}"
        return AuthorizationCodeResult(
            code=query["code"][0],
            state=query.get("state", [None])[0],
            iss=query.get("iss", [None])[0],
        )

    def run(
        self, steps: t.Callable[[Client], t.Awaitable[t.Any]], browser_step: t.Callable[[str], None]
    ) -> t.Any:
        """Run ``steps`` with a connected client; answer each redirect with ``browser_step``."""
        outcome: dict[str, t.Any] = {}

        async def main() -> None:
            import httpx2

            http = httpx2.AsyncClient(auth=self.provider, timeout=30)
            transport = streamable_http_client(self.mcp_url, http_client=http)
            async with http, Client(transport, mode="legacy") as client:
                outcome["result"] = await steps(client)

        def thread() -> None:
            try:
                anyio.run(main)
            except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
                outcome["error"] = exc
            finally:
                self.redirects.put("")

        worker = threading.Thread(target=thread, daemon=True)
        worker.start()
        while True:
            url = self.redirects.get(timeout=WAIT)
            if not url:
                break
            browser_step(url)
        worker.join(WAIT)
        if "error" in outcome:
            raise outcome["error"]
        return outcome["result"]


def log_in_and_allow(browser: t.Any, seen: list[str]) -> t.Callable[[str], None]:
    """A browser step: open the authorization URL, log in if asked, record and allow the consent."""
    page = browser.new_page()

    def step(url: str) -> None:
        page.goto(url)
        if page.locator("#username").count():
            page.fill("#username", "ada")
            page.fill("#password", "pw-ada")
            page.click("#login")
            page.wait_for_load_state()
        if page.locator("#allow").count():
            seen.append(page.locator("body").inner_text())
            page.click("#allow")
        page.wait_for_selector("#done", timeout=WAIT * 1000)

    return step


def text(result: t.Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


@pytest.fixture
def callback() -> t.Iterator[Callback]:
    server = Callback()
    yield server
    server.close()


def start(serve: t.Any, redis_url: str, **env: str) -> str:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    environment = {
        **redis_env(redis_url),
        "OAUTH_APP_BASE": base,
        # the resource metadata offers notes:read only: add_note needs a step-up
        "FLASK_MCP_AUTH_SCOPES_SUPPORTED": '["notes:read"]',
        **env,
    }
    serve(APP, "gevent", workers=2, env=environment, port=port)
    return base


def full_flow(session: Session, base: str, browser: t.Any) -> tuple[list[str], dict[str, t.Any]]:
    """Log in, consent, call, refresh, step up, revoke: the consent pages seen and the results."""
    consents: list[str] = []
    results: dict[str, t.Any] = {}

    async def steps(client: Client) -> None:
        results["whoami"] = (await client.call_tool("whoami", {})).structured_content
        results["notes"] = text(await client.call_tool("list_notes", {}))
        first = session.provider.context.current_tokens
        assert first is not None and first.refresh_token
        session.provider.context.token_expiry_time = 1  # expired: the next call refreshes
        results["after_refresh"] = (await client.call_tool("whoami", {})).structured_content
        second = session.provider.context.current_tokens
        assert second is not None and second.access_token != first.access_token
        assert second.refresh_token != first.refresh_token
        results["first"], results["second"] = first, second
        results["add"] = text(await client.call_tool("add_note", {"text": "from the client"}))
        results["third"] = session.provider.context.current_tokens

    session.run(steps, log_in_and_allow(browser, consents))
    return consents, results


def check_revocation(base: str, token: OAuthToken, client_id: str) -> None:
    """Revoke ``token`` (RFC 7009); both workers then refuse it, and its refresh token too."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "whoami", "arguments": {}},
    }
    headers = {
        "Authorization": f"Bearer {token.access_token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    with httpx.Client(timeout=30) as http:
        for _ in range(4):  # new connections: both workers know the family live, in memory
            with httpx.Client(timeout=30) as fresh:
                assert fresh.post(f"{base}/mcp", json=body, headers=headers).status_code != 401
        revoked = http.post(
            f"{base}/oauth/revoke", data={"token": token.access_token, "client_id": client_id}
        )
        assert revoked.status_code == 200
        for _ in range(4):  # new connections: both workers answer
            with httpx.Client(timeout=30) as fresh:
                refused = fresh.post(f"{base}/mcp", json=body, headers=headers)
            assert refused.status_code == 401
            assert 'error="invalid_token"' in refused.headers["WWW-Authenticate"]
        refresh = http.post(
            f"{base}/oauth/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": token.refresh_token,
                "client_id": client_id,
            },
        )
        assert refresh.status_code == 400 and refresh.json()["error"] == "invalid_grant"


@pytest.mark.redis
@pytest.mark.browser
def test_python_client_with_dynamic_registration(
    serve: t.Any, redis_url: str, browser: t.Any, callback: Callback
) -> None:
    base = start(serve, redis_url)
    session = Session(f"{base}/mcp", callback)
    consents, results = full_flow(session, base, browser)
    client_info = session.storage.client_info
    assert client_info is not None and client_info.client_id.startswith("mcp-")
    assert results["whoami"] == {"sub": "ada", "current_user": "ada", "scopes": ["notes:read"]}
    assert results["notes"] == '{"result":[]}'
    assert results["after_refresh"]["sub"] == "ada"
    assert results["add"] == "saved for ada"
    # two consent pages: notes:read first, then the step-up to notes:write
    assert len(consents) == 2, consents
    assert "Python test client" in consents[0] and "notes:read" in consents[0]
    assert "notes:write" in consents[1]
    third = results["third"]
    assert third is not None and "notes:write" in (third.scope or "").split()
    check_revocation(base, third, client_info.client_id)


@pytest.mark.redis
@pytest.mark.browser
def test_python_client_with_a_client_id_metadata_document(
    serve: t.Any, redis_url: str, browser: t.Any, callback: Callback, tmp_path: Path
) -> None:
    host = DocumentHost(tmp_path, callback.url)
    try:
        base = start(
            serve,
            redis_url,
            FLASK_MCP_OAUTH_CLIENT_METADATA_ALLOW_PRIVATE="true",
            FLASK_MCP_OAUTH_CLIENT_METADATA_CA_BUNDLE=str(host.cert),
        )
        session = Session(f"{base}/mcp", callback, document_url=host.url)
        consents, results = full_flow(session, base, browser)
    finally:
        host.close()
    client_info = session.storage.client_info
    assert client_info is not None and client_info.client_id == host.url
    assert "Document Client" in consents[0]
    assert results["whoami"]["current_user"] == "ada"
    assert results["add"] == "saved for ada"
    assert host.fetches == 1  # cached in Redis for both workers, per its Cache-Control
    check_revocation(base, results["third"], host.url)


@pytest.mark.redis
def test_a_document_on_loopback_is_refused_without_the_dev_option(
    serve: t.Any, redis_url: str, callback: Callback, tmp_path: Path
) -> None:
    host = DocumentHost(tmp_path, callback.url)
    try:
        base = start(serve, redis_url, FLASK_MCP_OAUTH_CLIENT_METADATA_CA_BUNDLE=str(host.cert))
        params = {
            "response_type": "code",
            "client_id": host.url,
            "redirect_uri": callback.url,
            "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
            "code_challenge_method": "S256",
        }
        with httpx.Client(timeout=30) as http:
            page = http.get(f"{base}/oauth/authorize", params=params)
    finally:
        host.close()
    assert page.status_code == 400
    assert "invalid_client" in page.text and "loopback" in page.text
    assert host.fetches == 0


def test_the_example_on_two_workers_with_sqlite_storage(serve: t.Any, tmp_path: Path) -> None:
    """examples/authorization_server.py as its docstring runs it; no browser: plain HTTP.

    With ``MCP_OAUTH_MAX_GRANTS`` at 2, a third redemption of a code by the same user and
    client revokes the first family: its refresh and access tokens stop working, its
    records leave the tables, and the consent stays.
    """
    import base64
    import hashlib
    import re
    import secrets

    import jwt

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        "PUBLIC_URL": base,
        "NOTES_DB": str(tmp_path / "notes.db"),
        "SECRET_KEY": "k" * 32,
        "FLASK_MCP_OAUTH_MAX_GRANTS": "2",
    }
    serve("examples.authorization_server:create_app()", "gevent", workers=2, env=env, port=port)
    redirect_uri = "http://127.0.0.1:9/cb"
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    params = {
        "response_type": "code",
        "redirect_uri": redirect_uri,
        "code_challenge": challenge.rstrip(b"=").decode(),
        "code_challenge_method": "S256",
        "scope": "notes:read notes:write",
        "resource": f"{base}/mcp",
        "state": "s",
    }
    with httpx.Client(base_url=base, timeout=30) as http:
        registered = http.post("/oauth/register", json={"redirect_uris": [redirect_uri]}).json()
        params["client_id"] = registered["client_id"]
        # the login page's next= stays on the app: a browser drops the tab and reads
        # "/\t/evil.example" as "//evil.example", "/\\evil.example" as well
        for hostile in [
            "/\t/evil.example",
            "/\\evil.example",
            "//evil.example",
            "/\n/evil.example",
        ]:
            login = {"username": "ada", "password": "ada-password"}
            went = http.post("/login", params={"next": hostile}, data=login)
            assert http.base_url.join(went.headers["Location"]).host == "127.0.0.1", hostile
        page = http.get("/oauth/authorize", params=params)
        assert page.status_code == 200, page.text
        token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert token
        allowed = http.post(
            "/oauth/authorize",
            params=params,
            data={"csrf_token": token.group(1), "decision": "allow"},
        )
        code = dict(httpx.URL(allowed.headers["Location"]).params)["code"]
        tokens = http.post(
            "/oauth/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect_uri,
                "client_id": registered["client_id"],
                "code_verifier": verifier,
            },
        ).json()
        assert "notes:write" in tokens["scope"].split()
        accounts = http.get("/").text
        assert "notes:read, notes:write" in accounts
    headers = {
        "Authorization": f"Bearer {tokens['access_token']}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "whoami",
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "whoami",
            "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    for _ in range(4):  # new connections: both workers verify with the shared keys
        with httpx.Client(timeout=30) as fresh:
            answer = fresh.post(f"{base}/mcp", json=body, headers=headers).json()
        assert answer["result"]["content"][0]["text"] == "You are ada."
    check_keys_sealed(tmp_path / "notes.db", env["SECRET_KEY"], tokens["access_token"])

    def redeem(http: httpx.Client) -> dict[str, t.Any]:
        """Authorize again (another device) and redeem the code."""
        again = secrets.token_urlsafe(48)
        digest = base64.urlsafe_b64encode(hashlib.sha256(again.encode()).digest())
        asked = {**params, "code_challenge": digest.rstrip(b"=").decode()}
        page = http.get("/oauth/authorize", params=asked)
        form = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert form, page.text
        went = http.post(
            "/oauth/authorize", params=asked, data={"csrf_token": form[1], "decision": "allow"}
        )
        answer = http.post(
            "/oauth/token",
            data={
                "grant_type": "authorization_code",
                "code": dict(httpx.URL(went.headers["Location"]).params)["code"],
                "redirect_uri": redirect_uri,
                "client_id": registered["client_id"],
                "code_verifier": again,
            },
        )
        assert answer.status_code == 200, answer.text
        return t.cast(dict[str, t.Any], answer.json())

    def refreshed(token: dict[str, t.Any]) -> httpx.Response:
        form = {"grant_type": "refresh_token", "refresh_token": token["refresh_token"]}
        return httpx.post(f"{base}/oauth/token", data={**form, "client_id": params["client_id"]})

    def whoami(token: dict[str, t.Any]) -> httpx.Response:
        sent = {**headers, "Authorization": f"Bearer {token['access_token']}"}
        return httpx.post(f"{base}/mcp", json=body, headers=sent, timeout=30)

    with httpx.Client(base_url=base, timeout=30) as http:
        http.post("/login", data={"username": "ada", "password": "ada-password"})
        second, third = redeem(http), redeem(http)
        assert "notes:read, notes:write" in http.get("/").text  # the consent stays
    refused = refreshed(tokens)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
    assert whoami(tokens).status_code == 401
    for kept in (second, third):
        assert whoami(kept).json()["result"]["content"][0]["text"] == "You are ada."
    assert refreshed(second).status_code == 200 and refreshed(third).status_code == 200
    first = jwt.decode(tokens["access_token"], options={"verify_signature": False})["fid"]
    with sqlite3.connect(tmp_path / "notes.db") as db:
        live = db.execute(
            "SELECT family FROM mcp_oauth_token_families WHERE user_id = 'ada' "
            "AND revoked_at IS NULL AND expires_at > datetime('now')"
        ).fetchall()
        left = db.execute(
            "SELECT count(*) FROM mcp_oauth_refresh_tokens WHERE family = ? AND used_at IS NULL",
            (first,),
        ).fetchone()
    assert first not in {row[0] for row in live} and len(live) == 2
    assert left == (0,)  # the revoked family's refresh token is deleted, not kept to expire


def check_keys_sealed(database: Path, secret: str, access_token: str) -> None:
    """The workers stored no private key in clear: ``SECRET_KEY`` unseals the token's own."""
    import sqlite3

    import jwt
    from cryptography.hazmat.primitives.asymmetric import ec
    from jwt.algorithms import ECAlgorithm

    from flask_mcp.contrib.oauth_server.keys import SEALED_FIELD
    from flask_mcp.contrib.oauth_server.keys import SEALING_PURPOSE
    from flask_mcp.server.sealing import StateSealer

    with sqlite3.connect(database) as db:
        rows = [
            json.loads(r[0]) for r in db.execute("SELECT private_jwk FROM mcp_oauth_signing_keys")
        ]
    assert rows and not any("d" in row for row in rows)
    kid = jwt.get_unverified_header(access_token)["kid"]
    record = next(row for row in rows if row["kid"] == kid)
    sealer = StateSealer(secret, max_age=None, purpose=SEALING_PURPOSE, encrypt=True)
    private = ECAlgorithm.from_jwk({**record, "d": sealer.unseal(record[SEALED_FIELD], bind=kid)})
    assert isinstance(private, ec.EllipticCurvePrivateKey)
    public = ECAlgorithm.to_jwk(private.public_key(), as_dict=True)
    assert (public["x"], public["y"]) == (record["x"], record["y"])
    wrong = StateSealer("another secret", max_age=None, purpose=SEALING_PURPOSE, encrypt=True)
    with pytest.raises(ValueError):
        wrong.unseal(record[SEALED_FIELD], bind=kid)


TS_CLIENT = Path(__file__).resolve().parent / "oauth_ts_client"


@pytest.fixture(scope="module")
def ts_client() -> Path:
    """``tests/oauth_ts_client`` with its pinned ``@modelcontextprotocol/sdk`` (npm ci)."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        skip_or_fail(
            "needs Node.js and npm for the TypeScript SDK client (apt-get install nodejs npm)"
        )
    lock = TS_CLIENT / "package-lock.json"
    stamp = TS_CLIENT / "node_modules" / ".package-lock.json"
    if not stamp.exists() or stamp.stat().st_mtime < lock.stat().st_mtime:
        subprocess.run(
            ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=TS_CLIENT, check=True, timeout=600, capture_output=True,
        )  # fmt: skip
    return TS_CLIENT


@pytest.mark.redis
@pytest.mark.browser
def test_typescript_client(
    serve: t.Any, redis_url: str, browser: t.Any, callback: Callback, ts_client: Path
) -> None:
    base = start(serve, redis_url)
    consents: list[str] = []
    step = log_in_and_allow(browser, consents)
    node = subprocess.Popen(
        [str(shutil.which("node")), "client.mjs", f"{base}/mcp", callback.url],
        cwd=ts_client, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, bufsize=1,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in node.stdout or ():
            lines.put(line)
        lines.put("")  # the client ended

    threading.Thread(target=read, daemon=True).start()
    result: dict[str, t.Any] | None = None
    try:
        while result is None:
            line = lines.get(timeout=WAIT)
            assert line, "the TypeScript client ended without a result"
            message = json.loads(line) if line.startswith("{") else {}
            if "authorize" in message:
                step(message["authorize"])
                query = callback.queries.get(timeout=WAIT)
                assert "code" in query, f"the authorization was refused: {query}"
                assert query["iss"] == [base]  # RFC 9207
                assert node.stdin is not None
                node.stdin.write(query["code"][0] + "\n")
                node.stdin.flush()
            elif "result" in message:
                result = message["result"]
        assert node.wait(WAIT) == 0
    finally:
        if node.poll() is None:
            node.kill()
        node.wait(WAIT)
        if result is None:
            print(node.stderr.read() if node.stderr else "")
    assert result["whoami"] == {"sub": "ada", "current_user": "ada", "scopes": ["notes:read"]}
    assert result["notes"] == '{"result":[]}'
    assert result["refresh"] == "AUTHORIZED" and result["rotated"] is True
    assert result["afterRefresh"]["current_user"] == "ada"
    assert result["add"] == "saved for ada"
    assert len(consents) == 2 and "TypeScript test client" in consents[0]
    assert "notes:write" in consents[1]
    tokens = result["tokens"]
    check_revocation(
        base,
        OAuthToken(access_token=tokens["access_token"], refresh_token=tokens["refresh_token"]),
        result["clientId"],
    )


def assert_unavailable(http: httpx.Client, client_id: str, redirect_uri: str, hidden: str) -> None:
    """Registration, the token endpoint and the authorization page answer 503
    ``temporarily_unavailable`` with ``Retry-After``; the reason (``hidden``) goes to the
    log only."""
    token = {
        "grant_type": "authorization_code",
        "code": "x",
        "redirect_uri": redirect_uri,
        "client_id": client_id,
        "code_verifier": "v" * 43,
    }
    for answer in [
        http.post("/oauth/register", json={"redirect_uris": [redirect_uri]}),
        http.post("/oauth/token", data=token),
    ]:
        assert answer.status_code == 503, answer.text
        assert answer.headers["Retry-After"] == "2"
        assert answer.json()["error"] == "temporarily_unavailable", answer.text
        assert "retry" in answer.json()["error_description"]
        assert hidden not in answer.text
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": "c" * 43,
        "code_challenge_method": "S256",
        "state": "s",
    }
    page = http.get("/oauth/authorize", params=params)
    assert page.status_code == 503, page.text
    assert "temporarily_unavailable" in page.text


@pytest.mark.redis
def test_the_endpoints_answer_503_while_their_redis_is_down(serve: t.Any) -> None:
    """Redis killed: registration, the token endpoint and the authorization page answer
    503 ``temporarily_unavailable`` with ``Retry-After`` (they answered a bare 500 page);
    once Redis is back on its port they serve again, without a restart."""
    port = free_port()
    redirect_uri = "http://127.0.0.1:9/cb"
    missing = "needs redis-server for the Redis fault tests"
    with redis_server(port, missing=missing) as proc:
        base = start(serve, f"redis://127.0.0.1:{port}/0")
        with httpx.Client(base_url=base, timeout=WAIT) as http:
            registered = http.post("/oauth/register", json={"redirect_uris": [redirect_uri]})
            assert registered.status_code == 201, registered.text
            client_id = registered.json()["client_id"]
            http.post("/login", data={"username": "ada", "password": "pw-ada"})
            proc.kill()
            proc.wait(10)
            assert_unavailable(http, client_id, redirect_uri, hidden="6379")
    with redis_server(port, missing=missing), httpx.Client(base_url=base, timeout=WAIT) as http:
        again = http.post("/oauth/register", json={"redirect_uris": [redirect_uri]})
        assert again.status_code == 201, again.text


def test_the_endpoints_answer_503_while_their_sql_database_is_locked(
    serve: t.Any, tmp_path: Path
) -> None:
    """The SQL storage's database refusing every statement (an SQLite file another process
    holds locked: SQLAlchemy's ``OperationalError``, as a database server gone gives):
    registration, the token endpoint and the authorization page answer 503
    ``temporarily_unavailable`` with ``Retry-After``, as with Redis (they answered a bare
    500 page); once the lock is let go they serve again."""
    database = tmp_path / "oauth.db"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {"OAUTH_APP_BASE": base, "FLASK_MCP_OAUTH_STORAGE": f"sqlite:///{database}?timeout=0.2"}
    serve(APP, "gthread", workers=1, env=env, port=port)
    redirect_uri = "http://127.0.0.1:9/cb"
    with httpx.Client(base_url=base, timeout=WAIT) as http:
        registered = http.post("/oauth/register", json={"redirect_uris": [redirect_uri]})
        assert registered.status_code == 201, registered.text
        client_id = registered.json()["client_id"]
        http.post("/login", data={"username": "ada", "password": "pw-ada"})
        lock = sqlite3.connect(database, isolation_level=None)
        try:
            lock.execute("BEGIN EXCLUSIVE")  # nobody else reads or writes it now
            assert_unavailable(http, client_id, redirect_uri, hidden="locked")
        finally:
            lock.close()
        again = http.post("/oauth/register", json={"redirect_uris": [redirect_uri]})
        assert again.status_code == 201, again.text
