"""The Server Card and the AI Catalog: what they hold, their headers, when they are served.

The card is checked against ``tests/schemas/server-card.schema.json``, a copy of the
draft's generated schema (modelcontextprotocol/experimental-ext-server-card, ``schema.json``
at 8924e08682b4a936e6464b57845ec2ff17dc8776).
"""

from __future__ import annotations

import json
import pathlib
import typing as t

import jsonschema
import pytest
from flask import Flask

from flask_mcp import MCP
from flask_mcp import protocol
from flask_mcp.extensions.server_card import CARD_MEDIA_TYPE
from flask_mcp.extensions.server_card import ServerCard
from flask_mcp.extensions.server_card import build_card
from flask_mcp.extensions.server_card import card_path
from flask_mcp.extensions.server_card import card_problems
from flask_mcp.extensions.server_card import catalog_identifier
from flask_mcp.extensions.server_card import negotiate
from flask_mcp.testing import MCPTestClient

SCHEMA = json.loads(
    (pathlib.Path(__file__).parent / "schemas" / "server-card.schema.json").read_text()
)
#: The file defines its types under ``$defs`` and has no root: a card is a ``ServerCard``.
VALIDATOR = jsonschema.Draft202012Validator(
    {**SCHEMA, "$ref": "#/$defs/ServerCard"}, format_checker=jsonschema.FormatChecker()
)
#: The names the tests reach the app under: the test client connects from 127.0.0.1, where
#: only localhost names pass the Host check without MCP_ALLOWED_HOSTS.
HOSTS = ["localhost", "mcp.example.com", "internal:8000", "example.com", "w.example"]


def make_app(
    card: ServerCard | None = None, authorizer: t.Any = None, **config: t.Any
) -> tuple[Flask, MCP]:
    mcp = MCP(
        authorizer=authorizer,
        name="com.example/weather",
        version="2.1.0",
        title="Weather",
        description="Forecasts and alerts for any city.",
        icons=[{"src": "https://example.com/icon.png", "mimeType": "image/png"}],
        website_url="https://example.com/weather",
    )
    if card is not None:
        mcp.add_extension(card)
    app = Flask(__name__)
    app.config.update({"MCP_ALLOWED_HOSTS": HOSTS, **config})
    mcp.init_app(app)
    return app, mcp


def test_the_card_of_a_server_follows_the_schema() -> None:
    app, mcp = make_app(
        ServerCard(
            repository={"url": "https://github.com/example/weather", "source": "github"},
            meta={"com.example/tier": "free"},
        ),
        MCP_SERVER_CARD=True,
    )
    response = app.test_client().get("/mcp/server-card", base_url="https://mcp.example.com")
    card = response.get_json(force=True)
    VALIDATOR.validate(card)
    assert card == {
        "$schema": "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json",
        "name": "com.example/weather",
        "version": "2.1.0",
        "description": "Forecasts and alerts for any city.",
        "title": "Weather",
        "websiteUrl": "https://example.com/weather",
        "icons": [{"src": "https://example.com/icon.png", "mimeType": "image/png"}],
        "repository": {"url": "https://github.com/example/weather", "source": "github"},
        "remotes": [
            {
                "type": "streamable-http",
                "url": "https://mcp.example.com/mcp",
                "supportedProtocolVersions": [
                    "2026-07-28",
                    "2025-11-25",
                    "2025-06-18",
                    "2025-03-26",
                    "2024-11-05",
                ],
            }
        ],
        "_meta": {"com.example/tier": "free"},
    }
    assert "tools" not in card and "capabilities" not in card  # the draft lists none


def test_off_by_default() -> None:
    app, _ = make_app()
    client = app.test_client()
    assert client.get("/mcp/server-card").status_code == 404
    assert client.get("/.well-known/ai-catalog.json").status_code == 404


def test_with_authorization_the_card_names_the_canonical_url() -> None:
    app, _ = make_app(
        authorizer=lambda token, request: "invalid_token",
        MCP_SERVER_CARD=True,
        MCP_AUTH_RESOURCE="https://mcp.example.com/weather/mcp",
        MCP_AUTH_AUTHORIZATION_SERVERS=["https://auth.example.com"],
    )
    client = app.test_client()
    card = client.get("/mcp/server-card", base_url="http://internal:8000").get_json(force=True)
    assert card["remotes"][0]["url"] == "https://mcp.example.com/weather/mcp"
    catalog = client.get("/.well-known/ai-catalog.json").get_json(force=True)
    assert catalog["entries"][0]["url"] == "https://mcp.example.com/weather/mcp/server-card"
    VALIDATOR.validate(card)
    assert client.post("/mcp").status_code == 401  # the endpoint is protected, the card is not


def test_the_card_follows_mcp_path_and_the_script_root() -> None:
    app, _ = make_app(MCP_SERVER_CARD=True, MCP_PATH="/api/mcp")
    client = app.test_client()
    response = client.get(
        "/api/mcp/server-card", base_url="https://example.com/prefix", headers={"Accept": "*/*"}
    )
    assert response.status_code == 200
    assert (
        response.get_json(force=True)["remotes"][0]["url"] == "https://example.com/prefix/api/mcp"
    )
    assert card_path("/") == "/server-card" and card_path("/mcp/") == "/mcp/server-card"


def test_headers_etag_and_not_modified() -> None:
    app, _ = make_app(MCP_SERVER_CARD=True)
    client = app.test_client()
    first = client.get("/mcp/server-card")
    assert first.status_code == 200
    assert first.headers["Content-Type"] == CARD_MEDIA_TYPE
    assert first.headers["Cache-Control"] == "public, max-age=3600"
    assert first.headers["Access-Control-Allow-Origin"] == "*"
    assert first.headers["Access-Control-Expose-Headers"] == "ETag"
    etag = first.headers["ETag"]
    assert etag.startswith('"') and etag.endswith('"')  # strong
    again = client.get("/mcp/server-card", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.data == b"" and again.headers["ETag"] == etag
    star = client.get("/mcp/server-card", headers={"If-None-Match": "*"})
    assert star.status_code == 304
    weak = client.get("/mcp/server-card", headers={"If-None-Match": f"W/{etag}"})
    assert weak.status_code == 304  # If-None-Match compares weakly (RFC 9110)
    other = client.get("/mcp/server-card", headers={"If-None-Match": '"other"'})
    assert other.status_code == 200 and other.data == first.data
    head = client.head("/mcp/server-card")
    assert head.status_code == 200 and head.data == b"" and head.headers["ETag"] == etag


def test_json_for_a_client_that_asks_for_json_only() -> None:
    app, _ = make_app(MCP_SERVER_CARD=True)
    client = app.test_client()
    card = client.get("/mcp/server-card", headers={"Accept": "application/json"})
    plain = client.get("/mcp/server-card")
    assert card.headers["Content-Type"] == "application/json"
    assert card.headers["ETag"] != plain.headers["ETag"]  # another representation
    assert card.headers["Vary"] == "Accept"
    assert negotiate(
        "application/mcp-server-card+json, application/json;q=0.5", CARD_MEDIA_TYPE
    ) == (CARD_MEDIA_TYPE)
    assert negotiate("text/html, */*;q=0.8", CARD_MEDIA_TYPE) == CARD_MEDIA_TYPE


def test_the_catalog() -> None:
    app, _ = make_app(MCP_SERVER_CARD=True)
    response = app.test_client().get("/.well-known/ai-catalog.json", base_url="https://w.example")
    assert response.headers["Content-Type"] == "application/ai-catalog+json"
    assert response.get_json(force=True) == {
        "specVersion": "1.0",
        "entries": [
            {
                "identifier": "urn:air:example.com:mcp:weather",
                "type": "application/mcp-server-card+json",
                "url": "https://w.example/mcp/server-card",
            }
        ],
    }
    assert catalog_identifier("io.github.someone/tool") == "urn:air:someone.github.io:mcp:tool"


def test_no_catalog_when_the_site_has_its_own() -> None:
    app, _ = make_app(ServerCard(catalog=False), MCP_SERVER_CARD=True)
    assert app.test_client().get("/.well-known/ai-catalog.json").status_code == 404
    assert app.test_client().get("/mcp/server-card").status_code == 200


def test_a_preflight() -> None:
    app, _ = make_app(MCP_SERVER_CARD=True)
    response = app.test_client().options(
        "/mcp/server-card",
        headers={"Origin": "https://x.example", "Access-Control-Request-Method": "GET"},
    )
    assert response.status_code == 204
    assert response.headers["Access-Control-Allow-Headers"] == "Content-Type, If-None-Match"
    assert response.headers["Access-Control-Allow-Methods"] == "GET"


def test_a_server_name_that_is_not_reverse_dns_fails_at_init_app() -> None:
    mcp = MCP(name="weather", version="1", description="Forecasts.")
    app = Flask(__name__)
    app.config["MCP_SERVER_CARD"] = True
    with pytest.raises(ValueError) as caught:
        mcp.init_app(app)  # adds the ServerCard extension, which checks the card
    assert str(caught.value) == (
        "MCP_SERVER_CARD is on, but the Server Card cannot be built: its name 'weather' is not "
        "a reverse-DNS server name with one '/' (such as 'com.example/weather'): name the MCP "
        "server so, or add mcp.add_extension(ServerCard(name='com.example/...')) before "
        "init_app."
    )
    other = MCP(name="weather", version="1", description="Forecasts.")
    other.add_extension(ServerCard(name="com.example/weather"))
    app = Flask(__name__)
    app.config["MCP_SERVER_CARD"] = True
    other.init_app(app)
    card_json = app.test_client().get("/mcp/server-card").get_json(force=True)
    assert card_json["name"] == "com.example/weather"
    VALIDATOR.validate(card_json)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"name": "a/b", "version": "1"}, "it needs a description: pass MCP(description=...)"),
        (
            {"name": "a/b", "version": "1", "description": "d" * 101},
            "its description is 101 characters long; a card's is at most 100",
        ),
        ({"name": "a/b/c", "version": "1", "description": "d"}, "is not a reverse-DNS"),
        (
            {"name": "a/b", "version": "1", "description": "d", "title": "t" * 101},
            "its title is 101 characters long",
        ),
        (
            {"name": "a/b", "version": "1", "description": "d", "websiteUrl": "example.com"},
            "its websiteUrl 'example.com' is not an absolute http(s) URL",
        ),
        (
            {"name": "a/b", "version": "1", "description": "d", "icons": [{"src": "/icon.png"}]},
            "the icon {'src': '/icon.png'} has no src that is an http(s) or data: URI",
        ),
    ],
)
def test_card_problems(fields: dict[str, t.Any], expected: str) -> None:
    problems = card_problems(build_card(fields, "https://example.com/mcp"))
    assert len(problems) == 1 and expected in problems[0]


#: Versions and whether schema.ts's "Version ranges are rejected" refuses them: every
#: range form (a comparator, a wildcard part, a hyphen range, a union), and versions that
#: are none, with the same characters inside a pre-release or build metadata, or no semver.
VERSIONS = [
    ("^1.2.3", True),
    ("~1.2.3", True),
    ("~>1.2", True),
    (">=1.2.3", True),
    ("<=2", True),
    (">1", True),
    ("<2", True),
    ("=1.0", True),
    (">=1.2.3 <2.0.0", True),
    ("1.2.3 <2", True),
    ("1.x", True),
    ("1.*", True),
    ("1.2.X", True),
    ("1.x.0", True),
    ("*", True),
    ("x", True),
    ("v1.x", True),
    ("1.x-rc.1", True),
    ("1.2 - 1.3", True),
    ("1.0.0-rc.1 - 2.0.0", True),
    ("1.2.3 || 2.x", True),
    ("1||2", True),
    ("1.0.2", False),
    ("2.1.0-alpha", False),
    ("1.0.0-rc.x", False),
    ("1.0.0-x", False),
    ("1.0.0-x.1", False),
    ("1.0.0-alpha-1.X", False),
    ("1.0.0+build.x", False),
    ("1.0.0-rc.1+x.7", False),
    ("1.0.0-beta-2", False),
    ("2024.06", False),
    ("2024-06-01", False),
    ("v3", False),
    ("nightly", False),
]


@pytest.mark.parametrize(("version", "is_range"), VERSIONS)
def test_a_version_range_is_refused(version: str, is_range: bool) -> None:
    """schema.ts: "Version ranges are rejected": a card names the version it serves."""
    fields = {"name": "a.b/c", "version": version, "description": "d"}
    problems = card_problems(build_card(fields, "https://example.com/mcp"))
    refusal = (
        f"its version {version!r} is a range; a card's is the one version served (such "
        "as '1.0.2'): pass MCP(version=...)"
    )
    assert problems == ([refusal] if is_range else [])


def test_a_repository_without_url_or_source_is_refused() -> None:
    """The schema requires both; a relative url would send registries nowhere."""
    fields = {"name": "a.b/c", "version": "1", "description": "d"}
    for repository in ({"url": "https://github.com/o/r"}, {"url": "o/r", "source": "github"}):
        problems = card_problems(build_card(fields, "http://x/mcp", repository=repository))
        assert len(problems) == 1 and "needs an absolute url and a source" in problems[0]
    good = {"url": "https://github.com/o/r", "source": "github"}
    card = build_card(fields, "http://x/mcp", repository=good)
    assert card_problems(card) == []
    VALIDATOR.validate(card)
    icons = [{"src": "data:image/png;base64,AAAA"}, {"src": "https://example.com/i.svg"}]
    card = build_card({**fields, "icons": icons}, "http://x/mcp")
    assert card_problems(card) == []
    VALIDATOR.validate(card)


def test_a_card_without_problems_validates() -> None:
    card = build_card({"name": "a.b/c", "version": "1", "description": "d"}, "http://x/mcp")
    assert card_problems(card) == []
    VALIDATOR.validate(card)


def test_a_path_with_url_variables_is_refused() -> None:
    """A card describes one endpoint; /t/<tenant>/mcp is one per tenant (issue 32)."""
    with pytest.raises(ValueError, match=r"MCP_PATH = '/t/<tenant>/mcp' has URL variables"):
        make_app(MCP_SERVER_CARD=True, MCP_PATH="/t/<tenant>/mcp")


def test_mcp_server_card_adds_the_extension() -> None:
    app, mcp = make_app(MCP_SERVER_CARD=True)
    assert isinstance(mcp.extension("io.modelcontextprotocol/server-card"), ServerCard)
    app, mcp = make_app()
    with pytest.raises(KeyError):
        mcp.extension("io.modelcontextprotocol/server-card")


def test_what_the_server_declares_at_runtime_stays_out_of_the_card() -> None:
    """SEP-2127 leaves primitives, capabilities and extensions to runtime listing."""
    app, mcp = make_app(MCP_SERVER_CARD=True)
    before = app.test_client().get("/mcp/server-card").get_json(force=True)

    @mcp.tool()
    def forecast(city: str) -> str:
        """Tomorrow's weather."""
        return city

    mcp.skills_folder("../examples/skills")
    after = app.test_client().get("/mcp/server-card").get_json(force=True)
    assert after == before
    assert set(after) == {
        "$schema", "name", "version", "description", "title", "websiteUrl", "icons", "remotes"
    }  # fmt: skip


def test_headers_a_client_sends_go_into_the_remote() -> None:
    api_key = {
        "name": "X-Api-Key",
        "description": "The key from https://example.com/weather/keys",
        "isRequired": True,
        "isSecret": True,
    }
    tenant = {"name": "X-Tenant", "value": "{tenant}", "variables": {"tenant": {"default": "eu"}}}
    app, _ = make_app(ServerCard(headers=[api_key, tenant]), MCP_SERVER_CARD=True)
    card = app.test_client().get("/mcp/server-card").get_json(force=True)
    VALIDATOR.validate(card)
    assert card["remotes"][0]["headers"] == [api_key, tenant]
    with pytest.raises(ValueError, match=r"the header \{'isRequired': True\} has no name"):
        make_app(ServerCard(headers=[{"isRequired": True}]), MCP_SERVER_CARD=True)


@pytest.mark.parametrize(
    ("card", "expected"),
    [
        (
            ServerCard(headers=[{"name": "X-Api-Key", "isRequired": "yes"}]),
            "at remotes/0/headers/0/isRequired: 'yes' is not of type 'boolean'",
        ),
        (
            ServerCard(headers=[{"name": "X-Api-Key", "format": "date"}]),
            "at remotes/0/headers/0/format: 'date' is not one of",
        ),
        (
            ServerCard(variables={"tenant": {"choices": "eu"}}),
            "at remotes/0/variables/tenant/choices: 'eu' is not of type 'array'",
        ),
        (ServerCard(meta=["x"]), "at _meta: ['x'] is not of type 'object'"),  # type: ignore[arg-type]
        (
            ServerCard(repository={"url": "https://github.com/o/r", "source": "gh", "id": 7}),
            "at repository/id: 7 is not of type 'string'",
        ),
    ],
)
def test_a_card_the_schema_refuses_fails_at_init_app(card: ServerCard, expected: str) -> None:
    """Every rule of the schema is checked before the card is served, not only the common ones."""
    with pytest.raises(ValueError, match="MCP_SERVER_CARD is on, but the Server Card") as caught:
        make_app(card, MCP_SERVER_CARD=True)
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("card", "where"),
    [
        (
            ServerCard(headers=[{"name": "X-Api-Key", "isSecret": True, "value": "k-123"}]),
            "X-Api-Key",
        ),
        (
            ServerCard(headers=[{"name": "X-Api-Key", "isSecret": True, "default": "k-1"}]),
            "X-Api-Key",
        ),
        (
            ServerCard(
                headers=[
                    {
                        "name": "Authorization",
                        "value": "Bearer {token}",
                        "variables": {"token": {"isSecret": True, "default": "t-1"}},
                    }
                ]
            ),
            "token",
        ),
        (ServerCard(variables={"key": {"isSecret": True, "value": "k-1"}}), "key"),
    ],
)
def test_a_secret_value_is_refused(card: ServerCard, where: str) -> None:
    """discovery.md: public cards MUST NOT include credentials; isSecret marks one."""
    with pytest.raises(ValueError, match="MCP_SERVER_CARD is on") as caught:
        make_app(card, MCP_SERVER_CARD=True)
    assert f"{where!r} is a secret (isSecret) with a value" in str(caught.value)
    assert "a Server Card is public" in str(caught.value)


def test_a_secret_asked_of_the_user_is_taken() -> None:
    header = {
        "name": "Authorization",
        "value": "Bearer {token}",
        "isSecret": True,
        "variables": {"token": {"isSecret": True, "isRequired": True}},
    }
    app, _ = make_app(ServerCard(headers=[header]), MCP_SERVER_CARD=True)
    card = app.test_client().get("/mcp/server-card").get_json(force=True)
    VALIDATOR.validate(card)
    assert card["remotes"][0]["headers"] == [header]


def test_an_icon_the_schema_refuses_fails_at_init_app() -> None:
    mcp = MCP(
        name="com.example/w",
        version="1",
        description="d",
        icons=[{"src": "https://example.com/i.png", "theme": "blue"}],
    )
    app = Flask(__name__)
    app.config["MCP_SERVER_CARD"] = True
    with pytest.raises(ValueError, match=r"at icons/0/theme: 'blue' is not one of"):
        mcp.init_app(app)


def test_the_card_lists_the_versions_of_server_discover_then_the_handshake_ones() -> None:
    app, _ = make_app(MCP_SERVER_CARD=True)
    card = app.test_client().get("/mcp/server-card").get_json(force=True)
    with MCPTestClient(app, protocol_version="2026-07-28") as client:
        discovered = client.request("server/discover")["supportedVersions"]
    (remote,) = card["remotes"]
    versions = remote["supportedProtocolVersions"]
    assert versions[: len(discovered)] == discovered
    assert versions[len(discovered) :] == list(protocol.HANDSHAKE_VERSIONS)
