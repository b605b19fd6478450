"""Skills and the Server Card end to end: gunicorn, the official client, stdio, the suite.

The app is ``tests/_apps/skills.py``. Every file of every skill is read back and hashed
against its manifest, in both eras, over HTTP (gunicorn gevent and gthread) and over
stdio; a broken folder stops gunicorn and ``flask mcp stdio`` from starting with every
problem named; the suite's skills scenarios (0.2.0-alpha.12) run in both eras.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import typing as t

import anyio
import jsonschema
import mcp_types as types
import pytest
from harness import flask_mcp_stdio
from harness import free_port
from harness import server_argv
from harness import skip_or_fail
from harness import start_server
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourcesListChanged
from pydantic import TypeAdapter
from skill_folders import skill_md
from skill_folders import touch
from skill_folders import write

pytestmark = pytest.mark.e2e

ROOT = pathlib.Path(__file__).resolve().parent.parent
APP = "tests._apps.skills"
MODES = ["legacy", "2026-07-28"]
ANY = TypeAdapter(dict[str, t.Any])
Request = types.Request[dict[str, t.Any], str]
#: The file defines its types under ``$defs`` and has no root: a card is a ``ServerCard``.
SCHEMA = {
    **json.loads((ROOT / "tests" / "schemas" / "server-card.schema.json").read_text()),
    "$ref": "#/$defs/ServerCard",
}


#: Two skills a page, and caching hints that tell lists from reads at 2026-07-28.
LISTING = {
    "FLASK_MCP_PAGE_SIZE": "2",
    "FLASK_MCP_CACHE_TTL_MS": "300000",
    "FLASK_MCP_CACHE_SCOPE": "public",
    "FLASK_MCP_READ_CACHE_TTL_MS": "60000",
}


async def call(client: Client, method: str, **params: t.Any) -> dict[str, t.Any]:
    return await client.session.send_request(Request(method=method, params=params), ANY)


def raw(contents: t.Any) -> bytes:
    if isinstance(contents, types.TextResourceContents):
        return contents.text.encode("utf-8")
    return base64.b64decode(contents.blob)


async def every_skill(client: Client) -> list[dict[str, t.Any]]:
    entries, cursor, pages = [], None, 0
    while True:
        page = await call(client, "skills/list", **({} if cursor is None else {"cursor": cursor}))
        pages += 1
        entries += page["skills"]
        cursor = page.get("nextCursor")
        if cursor is None:
            return entries


async def tree(client: Client, uri: str) -> set[str]:
    """Every file below the directory ``uri``, through resources/directory/read."""
    found: set[str] = set()
    cursor = None
    while True:
        page = await call(
            client,
            "resources/directory/read",
            uri=uri,
            **({} if cursor is None else {"cursor": cursor}),
        )
        for item in page["resources"]:
            if item["mimeType"] == "inode/directory":
                found |= await tree(client, item["uri"])
            else:
                found.add(item["uri"])
        cursor = page.get("nextCursor")
        if cursor is None:
            return found


async def check_skills(client: Client, mode: str) -> dict[str, int]:
    """List, get, read and walk every skill; return counts of what was checked."""
    counts = {"skills": 0, "files": 0}
    if mode == "legacy":
        extensions = client.server_capabilities.extensions or {}
    else:  # the client sends server/discover only when asked
        extensions = (await call(client, "server/discover"))["capabilities"]["extensions"]
    assert extensions["io.modelcontextprotocol/skills"] == {"directoryRead": True}
    entries = await every_skill(client)
    first = await call(client, "skills/list")
    assert len(first["skills"]) == 2 and "nextCursor" in first  # MCP_PAGE_SIZE = 2
    if mode == "2026-07-28":  # CacheableResult: the list settings, then those of reads
        assert (first["ttlMs"], first["cacheScope"]) == (300000, "public")
    else:
        assert "ttlMs" not in first and "cacheScope" not in first
    assert [entry["uri"] for entry in entries] == [
        "skill://flask-deploy/SKILL.md",
        "skill://ops/incident-triage/SKILL.md",
        "skill://reports/daily/SKILL.md",
    ]
    for entry in entries:
        got = await call(client, "skills/get", uri=entry["uri"])
        if mode == "2026-07-28":  # the skill's own ttl_ms=, else MCP_READ_CACHE_TTL_MS
            ttl = 1000 if entry["resources"] == "dynamic" else 60000
            assert (got["ttlMs"], got["cacheScope"]) == (ttl, "private")
        else:
            assert "ttlMs" not in got and "cacheScope" not in got
        counts["skills"] += 1
        if entry["resources"] == "dynamic":
            assert got["skill"]["resources"] == "dynamic"
            files = await tree(client, entry["uri"].removesuffix("/SKILL.md"))
            assert files == {entry["uri"], "skill://reports/daily/data/summary.csv"}
            for uri in files:
                result = await client.read_resource(uri)
                assert raw(result.contents[0])
            continue
        assert got["skill"] == entry
        root = entry["uri"].removesuffix("/SKILL.md")
        assert await tree(client, root) == {item["uri"] for item in entry["resources"]}
        for item in entry["resources"]:
            result = await client.read_resource(item["uri"])
            data = raw(result.contents[0])
            assert len(data) == item["size"]
            assert "sha256:" + hashlib.sha256(data).hexdigest() == item["digest"]
            counts["files"] += 1
    # Every listed skill's SKILL.md resource carries its frontmatter's name and description
    # (the spec's SHOULD): a dynamic skill's from its declaration, without calling it.
    described, cursor = {}, None
    while True:
        page = await call(
            client, "resources/list", **({} if cursor is None else {"cursor": cursor})
        )
        described |= {
            item["uri"]: (item["name"], item.get("description"))
            for item in page["resources"]
            if item["uri"].endswith("/SKILL.md")
        }
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    assert described == {
        entry["uri"]: (entry["frontmatter"]["name"], entry["frontmatter"]["description"])
        for entry in entries
    }
    hidden = await call(client, "skills/get", uri="skill://internal/ops/incident-triage/SKILL.md")
    for item in hidden["skill"]["resources"]:
        data = raw((await client.read_resource(item["uri"])).contents[0])
        assert "sha256:" + hashlib.sha256(data).hexdigest() == item["digest"]
    for method, params in (
        ("skills/get", {"uri": "skill://nope/SKILL.md"}),
        ("resources/directory/read", {"uri": "skill://flask-deploy/SKILL.md"}),
    ):
        with pytest.raises(MCPError) as caught:
            await call(client, method, **params)
        assert caught.value.error.code == -32602
    return counts


@pytest.fixture(scope="module", params=["gevent", "gthread"])
def server(request: pytest.FixtureRequest) -> t.Iterator[t.Any]:
    env = {"FLASK_MCP_SERVER_CARD": "true", **LISTING}
    with start_server(f"{APP}:app", request.param, env=env) as running:
        yield running


@pytest.mark.parametrize("mode", MODES)
def test_the_official_client_reads_every_skill(server: t.Any, mode: str) -> None:
    async def main() -> dict[str, int]:
        async with Client(server.url, mode=mode) as client:
            return await check_skills(client, mode)

    assert anyio.run(main) == {"skills": 3, "files": 7}


@pytest.mark.parametrize("mode", MODES)
def test_over_stdio(mode: str) -> None:
    async def main() -> dict[str, int]:
        async with Client(stdio_parameters(), mode=mode, read_timeout_seconds=30) as client:
            return await check_skills(client, mode)

    assert anyio.run(main) == {"skills": 3, "files": 7}


def stdio_parameters(env: dict[str, str] | None = None) -> StdioServerParameters:
    """``flask mcp stdio`` of the skills app, as a client spawns it."""
    return t.cast(StdioServerParameters, flask_mcp_stdio(APP, env={**LISTING, **(env or {})}))


async def until_resources_change(client: Client, mode: str, change: t.Callable[[], None]) -> None:
    """Make ``change`` and send requests until the client hears resources/list_changed.

    Debug mode looks at the folders when a request shows them, so the test keeps asking.
    At 2026-07-28 the notification comes on a ``subscriptions/listen`` stream.
    """
    heard = anyio.Event()

    async def poke() -> None:
        while not heard.is_set():
            await call(client, "skills/list")
            await anyio.sleep(0.2)

    with anyio.fail_after(20):
        if mode == "legacy":
            client_handler.append(heard.set)
            change()
            await poke()
            return
        async with client.listen(resources_list_changed=True) as subscription:
            change()
            async with anyio.create_task_group() as group:
                group.start_soon(poke)
                async for event in subscription:
                    if isinstance(event, ResourcesListChanged):
                        heard.set()
                        break


#: What the message handler of a legacy client calls on resources/list_changed.
client_handler: list[t.Callable[[], None]] = []


async def on_message(message: t.Any) -> None:
    if isinstance(message, types.ResourceListChangedNotification):
        while client_handler:
            client_handler.pop()()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transport", ["gevent", "stdio"])
def test_debug_mode_tells_the_client_when_the_folder_changes(transport: str, mode: str) -> None:
    with tempfile.TemporaryDirectory(prefix="skills-watched-") as folder:
        watched = pathlib.Path(folder)
        write(watched, {"notes/SKILL.md": skill_md("notes"), "notes/a.md": "a"})
        write(watched, {"other/SKILL.md": skill_md("other")})
        env = {"SKILLS_DEBUG": "1", "SKILLS_WATCH_FOLDER": folder, "SKILLS_WATCH_INTERVAL": "0"}

        def change() -> None:  # other/app.md takes the URI of a resource of the app
            write(watched, {"other/app.md": "the skill's"})
            touch(watched / "notes" / "b.md", "b")

        async def main(target: t.Any) -> dict[str, t.Any]:
            async with Client(target, mode=mode, message_handler=on_message) as client:
                before = await call(client, "skills/get", uri="skill://watched/notes/SKILL.md")
                assert len(before["skill"]["resources"]) == 2
                await until_resources_change(client, mode, change)
                with pytest.raises(MCPError, match="other/app.md, which is another resource"):
                    await call(client, "skills/get", uri="skill://watched/other/SKILL.md")
                read = await client.read_resource("skill://watched/other/app.md")
                assert read.contents[0].text == "the app's"  # type: ignore[union-attr]
                return await call(client, "skills/get", uri="skill://watched/notes/SKILL.md")

        client_handler.clear()
        if transport == "stdio":  # flask's CLI sets app.debug from FLASK_DEBUG (--debug)
            entry = anyio.run(main, stdio_parameters({**env, "FLASK_DEBUG": "1"}))
        else:
            with start_server(f"{APP}:app", transport, env=env) as running:
                entry = anyio.run(main, running.url)
    uris = [item["uri"] for item in entry["skill"]["resources"]]
    assert uris == [
        "skill://watched/notes/SKILL.md",
        "skill://watched/notes/a.md",
        "skill://watched/notes/b.md",
    ]


@pytest.mark.conformance
@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_the_conformance_suites_skills_scenarios(
    server: t.Any, conformance: t.Any, version: str
) -> None:
    """0.2.0-alpha.12 is the first suite with skills scenarios (0.1.16 has none)."""
    totals = {}
    for scenario in (
        "sep-2640-skills-enumeration",
        "sep-2640-skills-manifest",
        "sep-2640-skills-directory",
    ):
        with tempfile.TemporaryDirectory(prefix="conformance-") as out:
            result = conformance(
                server.url,
                *("--scenario", scenario, "--spec-version", version, "--force", "-o", out),
                next=True,
                timeout=300,
            )
            checks = [
                check
                for path in pathlib.Path(out).glob("*/checks.json")
                for check in json.loads(path.read_text())
            ]
        statuses = {check["id"]: check["status"] for check in checks}
        bad = {key: value for key, value in statuses.items() if value in ("FAILURE", "WARNING")}
        assert result.returncode == 0 and not bad, result.stdout[-3000:]
        totals[scenario] = sum(1 for value in statuses.values() if value == "SUCCESS")
    cached = 32 if version == "2026-07-28" else 30  # the cache checks skip before 2026-07-28
    assert totals == {
        "sep-2640-skills-enumeration": cached,
        "sep-2640-skills-manifest": 6,
        "sep-2640-skills-directory": 7,
    }


def get(server: t.Any, path: str, **headers: str) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", path, headers=headers)
    return connection.getresponse()


CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET",
    "Access-Control-Allow-Headers": "Content-Type, If-None-Match",
    "Access-Control-Expose-Headers": "ETag",
}


def test_the_server_card_headers_etag_and_304(server: t.Any) -> None:
    response = get(server, "/mcp/server-card", Accept="application/mcp-server-card+json")
    body = response.read()
    assert response.status == 200
    assert response.getheader("Content-Type") == "application/mcp-server-card+json"
    assert response.getheader("Cache-Control") == "public, max-age=3600"
    for name, value in CORS.items():
        assert response.getheader(name) == value
    etag = response.getheader("ETag")
    assert etag is not None and etag.startswith('"') and not etag.startswith("W/")
    card = json.loads(body)
    jsonschema.Draft202012Validator(SCHEMA).validate(card)
    assert card["name"] == "com.example/skills-demo" and card["version"] == "1.4.0"
    assert card["remotes"] == [
        {
            "type": "streamable-http",
            "url": f"{server.base_url}/mcp",
            "supportedProtocolVersions": [
                "2026-07-28",
                "2025-11-25",
                "2025-06-18",
                "2025-03-26",
                "2024-11-05",
            ],
        }
    ]
    again = get(server, "/mcp/server-card", **{"If-None-Match": etag})
    assert again.status == 304 and again.read() == b""
    assert again.getheader("ETag") == etag
    assert again.getheader("Cache-Control") == "public, max-age=3600"
    other = get(server, "/mcp/server-card", **{"If-None-Match": '"something-else"'})
    assert other.status == 200 and json.loads(other.read()) == card


def test_the_ai_catalog_points_to_the_card(server: t.Any) -> None:
    response = get(server, "/.well-known/ai-catalog.json")
    catalog = json.loads(response.read())
    assert response.status == 200
    assert response.getheader("Content-Type") == "application/ai-catalog+json"
    assert response.getheader("Access-Control-Allow-Origin") == "*"
    (entry,) = catalog["entries"]
    assert entry == {
        "identifier": "urn:air:example.com:mcp:skills-demo",
        "type": "application/mcp-server-card+json",
        "url": f"{server.base_url}/mcp/server-card",
    }
    card = get(server, entry["url"].removeprefix(server.base_url))
    assert card.status == 200 and json.loads(card.read())["name"] == "com.example/skills-demo"


def test_a_browser_preflight(server: t.Any) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request(
        "OPTIONS",
        "/mcp/server-card",
        headers={
            "Origin": "https://registry.example",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "if-none-match",
        },
    )
    response = connection.getresponse()
    response.read()
    assert response.status == 204
    for name, value in CORS.items():
        assert response.getheader(name) == value


def broken_folder(root: pathlib.Path) -> list[str]:
    """Write a folder with one skill per registration error; return what each error says."""
    write(
        root,
        {
            "renamed/SKILL.md": skill_md("other"),
            "nodesc/SKILL.md": "---\nname: nodesc\n---\n",
            "nofront/SKILL.md": "# No frontmatter\n",
            "lower/skill.md": skill_md("lower"),
            "leaky/SKILL.md": skill_md("leaky"),
            "many/SKILL.md": skill_md("many"),
            "big/SKILL.md": skill_md("big"),
            "big/blob.bin": b"\0" * (16 * 1024 * 1024),
        },
    )
    (root / "leaky" / "passwd").symlink_to("/etc/passwd")
    write(root, {f"many/files/{index}.txt": "x" for index in range(512)})
    return [
        f"{root / 'renamed' / 'SKILL.md'}: 'name' is 'other' but the directory is named 'renamed'",
        f"{root / 'nodesc' / 'SKILL.md'}: the frontmatter has no 'description'",
        f"{root / 'nofront' / 'SKILL.md'}: does not begin with YAML frontmatter",
        f"{root / 'lower' / 'skill.md'}: is named 'skill.md': name it 'SKILL.md' exactly",
        f"{root / 'leaky' / 'passwd'}: is a symbolic link to /etc/passwd, outside {root}",
        f"{root / 'many'}: holds 513 files (nested skills included); a skill may hold at most 512",
        f"{root / 'big'}: holds 16777295 bytes (nested skills included); a skill may hold at "
        "most 16777216 (16 MiB)",
    ]


@pytest.mark.parametrize("how", ["gunicorn-gevent", "stdio"])
def test_a_broken_folder_stops_the_server_with_every_problem_named(how: str) -> None:
    with tempfile.TemporaryDirectory(prefix="skills-broken-") as folder:
        expected = broken_folder(pathlib.Path(folder))
        if how == "stdio":
            argv = [str(pathlib.Path(sys.executable).parent / "flask"), "--app", APP]
            argv += ["mcp", "stdio"]
        else:
            argv = server_argv(f"{APP}:app", "gevent", free_port())
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT / "tests"),
            "SKILLS_WATCH_FOLDER": folder,
        }
        done = subprocess.run(
            argv,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode != 0
    assert "Cannot serve the skills (7 problems):" in done.stderr, done.stderr[-3000:]
    problems = [line[2:] for line in done.stderr.splitlines() if line.startswith(f"- {folder}")]
    for start in expected:
        assert [line for line in problems if line.startswith(start)], (start, problems)


def curl_i(curl: str, url: str, *headers: str) -> tuple[str, dict[str, str], bytes]:
    """Run ``curl -si`` and return the status line, the headers and the body."""
    argv = [curl, "-si", *(part for header in headers for part in ("-H", header)), url]
    out = subprocess.run(argv, capture_output=True, timeout=30, check=True).stdout
    head, _, body = out.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    return status, dict(line.split(": ", 1) for line in lines), body


def test_curl_shows_the_card_headers_and_a_304(server: t.Any) -> None:
    """What `curl -i` shows of the card, then of a request that sends its ETag back."""
    curl = shutil.which("curl")
    if curl is None:
        skip_or_fail("curl is not installed")
    url = f"{server.base_url}/mcp/server-card"
    status, headers, body = curl_i(curl, url, "Accept: application/mcp-server-card+json")
    assert status == "HTTP/1.1 200 OK"
    assert headers["Content-Type"] == "application/mcp-server-card+json"
    assert headers["Cache-Control"] == "public, max-age=3600"
    assert headers["Vary"] == "Accept"
    for name, value in CORS.items():
        assert headers[name] == value
    assert headers["ETag"].startswith('"') and int(headers["Content-Length"]) == len(body)
    jsonschema.Draft202012Validator(SCHEMA).validate(json.loads(body))
    status, again, body = curl_i(curl, url, f"If-None-Match: {headers['ETag']}")
    assert status == "HTTP/1.1 304 Not Modified" and body == b""
    assert again["ETag"] == headers["ETag"]
    assert again["Cache-Control"] == "public, max-age=3600"


@pytest.mark.parametrize("mode", MODES)
def test_the_example_server(mode: str) -> None:
    """examples/skills_server.py on gunicorn: every file as its manifest says, and its card."""

    async def main(url: str) -> tuple[list[str], int]:
        async with Client(url, mode=mode) as client:
            entries, files = await every_skill(client), 0
            for entry in entries:
                for item in entry["resources"]:
                    data = raw((await client.read_resource(item["uri"])).contents[0])
                    assert "sha256:" + hashlib.sha256(data).hexdigest() == item["digest"]
                    files += 1
            return [entry["uri"] for entry in entries], files

    with start_server("examples.skills_server:app", "gevent") as running:
        uris, files = anyio.run(main, running.url)
        response = get(running, "/mcp/server-card")
        card = json.loads(response.read())
    assert uris == ["skill://flask-deploy/SKILL.md", "skill://ops/incident-triage/SKILL.md"]
    assert files == 7
    assert response.status == 200 and card["name"] == "com.example/platform-runbooks"
    jsonschema.Draft202012Validator(SCHEMA).validate(card)


def test_the_card_refuses_a_host_the_endpoint_refuses(server: t.Any) -> None:
    # The card's remote URL is built from Host: a name the endpoint answers 421 (here, from
    # a loopback connection without MCP_ALLOWED_HOSTS) must not be published in a
    # document shared caches keep for an hour.
    endpoint = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    endpoint.request("POST", "/mcp", body=b"{}", headers={"Host": "evil.example"})
    refused = endpoint.getresponse()
    refused.read()
    assert refused.status == 421
    for path in ("/mcp/server-card", "/.well-known/ai-catalog.json"):
        response = get(server, path, Host="evil.example")
        body = response.read()
        assert response.status == 421, body
        assert b"evil.example" in body and b"MCP_ALLOWED_HOSTS" in body
    assert get(server, "/mcp/server-card", Host=f"localhost:{server.port}").status == 200


@pytest.mark.parametrize("mode", MODES)
def test_the_entry_types_frontmatter_scalars_as_yaml_1_2_hosts_read_them(mode: str) -> None:
    # A host parses SKILL.md itself and compares it field by field with the entry: a
    # mismatch is a verification failure and the skill is not loaded. Hosts read YAML 1.2
    # (the JavaScript yaml package): yes, on and 1:30 are strings there, 017 is 17.
    extra = "metadata:\n  reviewed: yes\n  window: 1:30\n  build: 017\n"
    with tempfile.TemporaryDirectory(prefix="skills-yaml-") as folder:
        write(pathlib.Path(folder), {"notes/SKILL.md": skill_md("notes", extra=extra)})

        async def main(url: str) -> dict[str, t.Any]:
            async with Client(url, mode=mode) as client:
                got = await call(client, "skills/get", uri="skill://watched/notes/SKILL.md")
                return t.cast(dict[str, t.Any], got["skill"]["frontmatter"])

        with start_server(f"{APP}:app", "gthread", env={"SKILLS_WATCH_FOLDER": folder}) as running:
            found = anyio.run(main, running.url)
    assert found["metadata"] == {"reviewed": "yes", "window": "1:30", "build": 17}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tool", ["disable_resource", "remove_resource"])
def test_a_skill_file_is_not_taken_away_from_under_its_manifest(mode: str, tool: str) -> None:
    # A skill's entry lists every file with its digest, and a host treats a file of it that
    # cannot be read as a failed verification: the registry's disable and remove_resource
    # must not make a file of a served skill unreadable while the entry still lists it.
    skill_uri = "skill://flask-deploy/SKILL.md"

    async def main(url: str) -> tuple[str, list[str]]:
        async with Client(url, mode=mode) as client:
            answer = await client.call_tool(tool, {"uri": skill_uri})
            entry = (await call(client, "skills/get", uri=skill_uri))["skill"]
            listed = await every_skill(client)
            assert skill_uri in [found["uri"] for found in listed]
            digests = []
            for item in entry["resources"]:
                data = raw((await client.read_resource(item["uri"])).contents[0])
                digests.append("sha256:" + hashlib.sha256(data).hexdigest())
            assert digests == [item["digest"] for item in entry["resources"]]
            text = answer.content[0]
            assert isinstance(text, types.TextContent)
            return text.text, digests

    with start_server(f"{APP}:app", "gthread", env={"SKILLS_ADMIN_TOOLS": "1"}) as running:
        answer, digests = anyio.run(main, running.url)
    assert answer.startswith("refused: ") and skill_uri in answer
    assert len(digests) == 3


@pytest.mark.parametrize("mode", MODES)
def test_a_directory_above_unlisted_skills_does_not_list_them(server: t.Any, mode: str) -> None:
    # The app serves examples/skills again under internal/, unlisted: skills/list and
    # resources/list leave them out, and so must a directory read of the prefix.
    async def main() -> None:
        async with Client(server.url, mode=mode) as client:
            for hidden in ("skill://internal", "skill://internal/ops"):
                with pytest.raises(MCPError) as caught:
                    await call(client, "resources/directory/read", uri=hidden)
                assert caught.value.error.code == -32602
                assert caught.value.error.message == f"No directory resource at {hidden}"
            known = await call(
                client, "resources/directory/read", uri="skill://internal/ops/incident-triage"
            )  # a client that knows the skill's URI reads its directories
            assert "SKILL.md" in [item["name"] for item in known["resources"]]
            top = await call(client, "resources/directory/read", uri="skill://ops")
            assert [item["uri"] for item in top["resources"]] == ["skill://ops/incident-triage"]
            listed = [resource.uri for resource in (await client.list_resources()).resources]
            assert listed and not [uri for uri in listed if uri.startswith("skill://internal")]

    anyio.run(main)


@pytest.mark.parametrize("mode", MODES)
def test_a_failing_dynamic_skill_is_left_out_of_the_listing(mode: str) -> None:
    # The spec lets a listing be partial: one skill whose function raises must not take
    # the others away. The error goes to the log with its traceback; skills/get of that
    # skill is an internal error.
    # So is a dynamic skill past the limits (reports/huge: 513 files): the spec says a server
    # should not serve one, and a folder's is refused when it is declared. So is one whose
    # SKILL.md says another description than the one resources/list has from its declaration.
    async def main(url: str) -> tuple[list[str], MCPError, MCPError]:
        async with Client(url, mode=mode) as client:
            listed = [entry["uri"] for entry in await every_skill(client)]
            with pytest.raises(MCPError) as caught:
                await call(client, "skills/get", uri="skill://reports/broken/SKILL.md")
            with pytest.raises(MCPError) as huge:
                await call(client, "skills/get", uri="skill://reports/huge/SKILL.md")
            with pytest.raises(MCPError) as stale:
                await client.read_resource("skill://reports/stale/SKILL.md")
            assert stale.value.error.code == -32603
            return listed, caught.value, huge.value

    with start_server(f"{APP}:app", "gthread", env={"SKILLS_BROKEN": "1"}) as running:
        listed, error, huge = anyio.run(main, running.url)
        log = running.log()
    assert listed == [
        "skill://flask-deploy/SKILL.md",
        "skill://ops/incident-triage/SKILL.md",
        "skill://reports/daily/SKILL.md",
    ]
    assert error.error.code == -32603 and "server log" in error.error.message
    assert "reports database is down" not in error.error.message
    assert "Traceback" in log and "RuntimeError: the reports database is down" in log
    assert "skills/list leaves it out" in log
    assert huge.error.code == -32603
    assert "the dynamic skill 'reports/huge' returned 513 files" in log
    assert "at most 512, the most every host accepts" in log
    assert (
        "the dynamic skill 'reports/stale' returned a SKILL.md whose description is "
        '"This week\'s report.", not "Last week\'s report." as declared (description=)'
    ) in log


@pytest.mark.redis
@pytest.mark.parametrize("mode", MODES)
def test_every_worker_publishes_the_manifest_of_the_files_on_disk(
    mode: str, redis_url: str
) -> None:
    # Not in debug mode, two workers. After a file changes on disk, a host may fetch the
    # entry from one worker and the file from the other: skills/get on every worker must
    # give the new digest (within the watch interval), not only on one whose read of the
    # file happened to find the change.
    uri = "skill://watched/notes/SKILL.md"
    with tempfile.TemporaryDirectory(prefix="skills-workers-") as folder:
        watched = pathlib.Path(folder)
        write(watched, {"notes/SKILL.md": skill_md("notes"), "notes/a.md": "a"})

        async def digests(url: str) -> set[str]:
            found = set()
            for _ in range(8):  # a client per request: each connection may go to either worker
                async with Client(url, mode=mode) as client:
                    entry = (await call(client, "skills/get", uri=uri))["skill"]
                    found |= {item["digest"] for item in entry["resources"][1:]}
            return found

        env = {"SKILLS_WATCH_FOLDER": folder, "FLASK_MCP_BACKEND": redis_url}
        with start_server(f"{APP}:app", "gthread", workers=2, env=env) as running:
            assert anyio.run(digests, running.url) == {"sha256:" + hashlib.sha256(b"a").hexdigest()}
            touch(watched / "notes" / "a.md", "a, rewritten")
            time.sleep(1.1)  # Skills.watch_interval
            after = anyio.run(digests, running.url)
    assert after == {"sha256:" + hashlib.sha256(b"a, rewritten").hexdigest()}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("breakage", ["frontmatter", "size"])
def test_a_skill_whose_files_no_longer_load_says_why_everywhere(mode: str, breakage: str) -> None:
    # A file edited on disk so that its skill cannot be loaded again: the old entry (old
    # digests) must not go on being published while the file reads as not found, and the
    # error says why, naming the URI once.
    uri = "skill://watched/notes/SKILL.md"
    with tempfile.TemporaryDirectory(prefix="skills-broken-") as folder:
        watched = pathlib.Path(folder)
        write(watched, {"notes/SKILL.md": skill_md("notes"), "notes/a.md": "a"})

        async def main(url: str) -> tuple[MCPError, MCPError, list[str], dict[str, t.Any]]:
            async with Client(url, mode=mode) as client:
                await call(client, "skills/get", uri=uri)
                if breakage == "frontmatter":
                    touch(watched / "notes" / "SKILL.md", "# no frontmatter\n")
                    target = uri
                else:
                    (watched / "notes" / "a.md").write_bytes(b"a" * (16 * 1024 * 1024 + 1))
                    target = "skill://watched/notes/a.md"
                with pytest.raises(MCPError) as read:
                    await client.read_resource(target)
                with pytest.raises(MCPError) as got:
                    await call(client, "skills/get", uri=uri)
                listed = [entry["uri"] for entry in await every_skill(client)]
                touch(watched / "notes" / "SKILL.md", skill_md("notes", "Fixed."))
                (watched / "notes" / "a.md").write_bytes(b"a")
                await anyio.sleep(1.1)  # Skills.watch_interval
                fixed = (await call(client, "skills/get", uri=uri))["skill"]
                return read.value, got.value, listed, fixed

        env = {"SKILLS_WATCH_FOLDER": folder}
        with start_server(f"{APP}:app", "gthread", env=env) as running:
            read, got, listed, fixed = anyio.run(main, running.url)
    why = "does not begin with YAML frontmatter" if breakage == "frontmatter" else "16 MiB"
    assert why in read.error.message and read.error.message.count("skill://") == 1
    assert got.error.code == -32602 and why in got.error.message
    assert uri not in listed and "skill://flask-deploy/SKILL.md" in listed
    assert fixed["frontmatter"]["description"] == "Fixed."
