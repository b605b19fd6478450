"""The explorer's switch, access check, paths and Content-Security-Policy headers.

The page itself is tested in a real browser in ``test_explorer_browser.py``.
"""

from __future__ import annotations

import json
import typing as t
from urllib.parse import quote

import pytest
from flask import Flask

from flask_mcp import MCP
from flask_mcp.explorer.csp import page_policy
from flask_mcp.explorer.csp import view_policy

PAGE = "/_mcp/explorer/"


def make_app(*, debug: bool = False, **config: t.Any) -> Flask:
    app = Flask(__name__)
    app.debug = debug
    app.config.update(config)
    mcp = MCP(name="explorer-unit", version="1.0.0")

    @mcp.tool()
    def ping() -> str:
        """Answer pong."""
        return "pong"

    mcp.init_app(app)
    return app


def test_off_outside_debug_by_default() -> None:
    assert make_app().test_client().get(PAGE).status_code == 404


def test_on_under_debug_with_a_strict_policy() -> None:
    response = make_app(debug=True).test_client().get(PAGE)
    assert response.status_code == 200
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'self';" in policy and "unsafe-inline" not in policy
    assert "connect-src 'self';" in policy and "default-src 'none'" in policy
    assert response.headers["Cache-Control"] == "no-store"
    body = response.get_data(as_text=True)
    assert '<script defer src="/_mcp/explorer/static/explorer.js"></script>' in body
    assert " on" not in body.split("<body", 1)[1].split(">", 1)[0]  # no inline handlers
    config = json.loads(body.split('data-config="', 1)[1].split('"', 1)[0].replace("&#34;", '"'))
    assert config == {
        "endpoint": "/mcp",
        "sandbox": "/_mcp/explorer/sandbox",
        "sandboxSameOrigin": False,
    }


def test_the_assets_ship_with_the_package() -> None:
    client = make_app(debug=True).test_client()
    for name in ("explorer.js", "explorer.css", "sandbox.js", "sandbox.css"):
        response = client.get(f"/_mcp/explorer/static/{name}")
        assert response.status_code == 200, name
        response.close()


def test_debug_is_read_on_each_request() -> None:
    """app.run(debug=True) sets debug after init_app: the page follows it."""
    app = make_app()
    client = app.test_client()
    assert client.get(PAGE).status_code == 404
    app.debug = True
    assert client.get(PAGE).status_code == 200
    assert client.get("/_mcp/explorer/sandbox").status_code == 200
    app.debug = False
    assert client.get("/_mcp/explorer/static/explorer.js").status_code == 404


def test_turned_off_under_debug() -> None:
    assert make_app(debug=True, MCP_EXPLORER=False).test_client().get(PAGE).status_code == 404


def test_outside_debug_it_needs_an_access_check() -> None:
    with pytest.raises(ValueError, match="Set MCP_EXPLORER_ACCESS to a function of the request"):
        make_app(MCP_EXPLORER=True)


def test_on_without_an_access_check_follows_debug_on_each_request() -> None:
    """MCP_EXPLORER = True accepted under debug at init_app: the page needs debug still."""
    app = make_app(debug=True, MCP_EXPLORER=True)
    client = app.test_client()
    assert client.get(PAGE).status_code == 200
    app.debug = False  # app.run(debug=False), or DEBUG from the config of another host
    assert client.get(PAGE).status_code == 404
    assert client.get("/_mcp/explorer/static/explorer.js").status_code == 404


def test_the_access_check_decides() -> None:
    seen: list[str] = []

    def access(request: t.Any) -> bool:
        seen.append(request.path)
        return request.headers.get("X-Admin") == "yes"

    client = make_app(MCP_EXPLORER=True, MCP_EXPLORER_ACCESS=access).test_client()
    refused = client.get(PAGE)
    assert refused.status_code == 403
    assert "MCP_EXPLORER_ACCESS" in refused.get_data(as_text=True)
    assert client.get("/_mcp/explorer/static/explorer.js").status_code == 403
    assert client.get(PAGE, headers={"X-Admin": "yes"}).status_code == 200
    assert seen == [PAGE, "/_mcp/explorer/static/explorer.js", PAGE]


def test_an_access_check_that_is_not_callable_is_refused() -> None:
    with pytest.raises(ValueError, match="MCP_EXPLORER_ACCESS"):
        make_app(debug=True, MCP_EXPLORER_ACCESS="admins")


@pytest.mark.parametrize("path", ["/mcp", "/mcp/explorer", "/", "/tools"])
def test_a_path_overlapping_the_endpoint_is_refused(path: str) -> None:
    config = {"MCP_PATH": "/tools/mcp"} if path == "/tools" else {}
    with pytest.raises(ValueError, match="overlaps MCP_PATH"):
        make_app(debug=True, MCP_EXPLORER_PATH=path, **config)


def test_an_endpoint_at_the_root_keeps_the_explorer() -> None:
    """``MCP_PATH = "/"`` (a site that is only an MCP server) overlaps no explorer path."""
    client = make_app(MCP_PATH="/").test_client()  # outside debug: no explorer, no error
    assert client.get(PAGE).status_code == 404
    client = make_app(debug=True, MCP_PATH="/").test_client()
    assert client.get(PAGE).status_code == 200
    assert client.post("/", json={}).status_code != 404  # the endpoint answers at "/"


def test_another_path() -> None:
    client = make_app(debug=True, MCP_EXPLORER_PATH="/admin/mcp-explorer").test_client()
    assert client.get("/admin/mcp-explorer/").status_code == 200
    assert client.get(PAGE).status_code == 404


def test_a_foreign_host_is_refused() -> None:
    client = make_app(debug=True).test_client()
    response = client.get(PAGE, headers={"Host": "evil.example"})
    assert response.status_code == 421


def test_the_sandbox_gets_the_views_policy() -> None:
    client = make_app(debug=True).test_client()
    default = client.get("/_mcp/explorer/sandbox").headers["Content-Security-Policy"]
    assert default == view_policy(None)
    csp = {
        "connectDomains": ["https://api.example.com"],
        "resourceDomains": ["https://*.cdn.example"],
    }
    declared = client.get("/_mcp/explorer/sandbox?csp=" + quote(json.dumps(csp)))
    assert declared.headers["Content-Security-Policy"] == view_policy(csp)
    bad = client.get(
        "/_mcp/explorer/sandbox?csp=" + quote(json.dumps({"connectDomains": ["*; script-src *"]}))
    )
    assert bad.status_code == 400
    assert "not an origin" in bad.get_data(as_text=True)


def test_the_sandbox_needs_no_access_check() -> None:
    client = make_app(MCP_EXPLORER=True, MCP_EXPLORER_ACCESS=lambda request: False).test_client()
    assert client.get("/_mcp/explorer/sandbox").status_code == 200


def test_a_sandbox_origin() -> None:
    app = make_app(debug=True, MCP_EXPLORER_SANDBOX_ORIGIN="http://localhost:5000")
    response = app.test_client().get(PAGE)
    assert "frame-src 'self' http://localhost:5000;" in response.headers["Content-Security-Policy"]
    assert "http://localhost:5000/_mcp/explorer/sandbox" in response.get_data(as_text=True)
    with pytest.raises(ValueError, match="must be an origin"):
        make_app(debug=True, MCP_EXPLORER_SANDBOX_ORIGIN="http://localhost:5000/x")


def test_the_restrictive_default_of_the_spec() -> None:
    policy = view_policy(None)
    for directive in (
        "default-src 'none'",
        "script-src 'self' 'unsafe-inline'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "media-src 'self' data:",
        "connect-src 'none'",
        "frame-src 'none'",
        "object-src 'none'",
        "base-uri 'self'",
    ):
        assert directive in policy.split("; "), directive


def test_declared_domains_widen_only_their_directives() -> None:
    policy = view_policy(
        {
            "connectDomains": ["wss://live.example.com"],
            "resourceDomains": ["https://cdn.example.com"],
            "frameDomains": ["https://www.youtube.com"],
            "baseUriDomains": ["https://base.example.com"],
        },
        frame_ancestors=None,
    ).split("; ")
    assert "connect-src 'self' wss://live.example.com" in policy
    for directive in ("script-src", "style-src", "font-src"):
        assert any(
            d.startswith(directive) and d.endswith("https://cdn.example.com") for d in policy
        )
    assert "img-src 'self' data: https://cdn.example.com" in policy
    assert "frame-src https://www.youtube.com" in policy
    assert "base-uri https://base.example.com" in policy
    assert not any(d.startswith("frame-ancestors") for d in policy)


@pytest.mark.parametrize(
    "csp",
    [
        {"connectDomains": "https://a.example"},
        {"connectDomains": ["https://a.example; script-src *"]},
        {"resourceDomains": ["'unsafe-eval'"]},
        {"frameDomains": ["javascript:alert(1)"]},
        {"connectDomains": ["https://a.example"] * 51},
        ["https://a.example"],
    ],
)
def test_a_malformed_csp_is_refused(csp: t.Any) -> None:
    with pytest.raises(ValueError):
        view_policy(csp)


@pytest.mark.parametrize(
    "origin",
    [
        "https://api_v2.example.com",
        "https://[::1]:8443",
        "https://u:p@cdn.example.com",
        "ftp://files.example.com",
        "https://api.example.com:*",
        "HTTPS://API.example.com/v1/",
    ],
)
def test_the_sandbox_renders_what_the_server_lets_a_view_declare(origin: str) -> None:
    app = Flask(__name__)
    app.debug = True
    mcp = MCP(name="explorer-views", version="1.0.0")
    declared = True
    try:
        mcp.ui("ui://view", csp={"connectDomains": [origin]})(
            lambda: "<!DOCTYPE html><html></html>"
        )
    except ValueError:
        declared = False
    mcp.init_app(app)
    csp = quote(json.dumps({"connectDomains": [origin]}))
    sandbox = app.test_client().get(f"/_mcp/explorer/sandbox?csp={csp}")
    # what the server accepts the explorer renders, and what it refuses the explorer does
    assert sandbox.status_code == (200 if declared else 400)


def test_the_page_policy() -> None:
    assert "frame-src 'self';" in page_policy(None)
    assert "frame-src 'self' http://localhost:5000;" in page_policy("http://localhost:5000")


def test_under_a_prefix_the_page_points_below_it() -> None:
    client = make_app(debug=True).test_client()
    response = client.get(PAGE, environ_overrides={"SCRIPT_NAME": "/api"})
    body = response.get_data(as_text=True)
    config = json.loads(body.split('data-config="', 1)[1].split('"', 1)[0].replace("&#34;", '"'))
    assert config["endpoint"] == "/api/mcp"
    assert config["sandbox"] == "/api/_mcp/explorer/sandbox"
    assert 'src="/api/_mcp/explorer/static/explorer.js"' in body


def test_with_url_variables_the_page_explores_one_named_endpoint() -> None:
    """``MCP_PATH = "/t/<tenant>/mcp"``: the query string names the tenant whose endpoint
    the page talks to; without it, a form asks for it (the literal ``/t/<tenant>/mcp``
    would be a tenant named ``<tenant>``)."""
    client = make_app(debug=True, MCP_PATH="/t/<tenant>/mcp").test_client()
    response = client.get(PAGE + "?tenant=acme", environ_overrides={"SCRIPT_NAME": "/api"})
    assert response.status_code == 200
    body = response.get_data(as_text=True)
    config = json.loads(body.split('data-config="', 1)[1].split('"', 1)[0].replace("&#34;", '"'))
    assert config["endpoint"] == "/api/t/acme/mcp"
    assert config["cliPath"] == "/t/acme/mcp"  # "Copy as flask mcp call" names it (--path)
    asked = client.get(PAGE)
    assert asked.status_code == 400
    text = asked.get_data(as_text=True)
    assert '<input name="tenant"' in text and "data-config" not in text
    assert "form-action 'self'" in asked.headers["Content-Security-Policy"]
