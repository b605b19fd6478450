"""MCP Apps on the wire: both eras in process, the official client over stdio and on gunicorn.

The server is ``tests/_apps/apps_protocol.py``. What a host needs of a server (SEP-1865,
stable 2026-01-26): ``_meta.ui`` on tools (``resourceUri``, ``visibility``), views read as
``text/html;profile=mcp-app`` with ``_meta.ui`` on the content item and the list entry,
the extension in the capabilities (``initialize`` and ``server/discover``), text content
for a client without the extension and ``structuredContent`` for one with it, views left
out of ``resources/list`` on request, blueprint views, and the registration errors.
"""

from __future__ import annotations

import pathlib
import typing as t

import anyio
import jinja2
import mcp_types as types
import pytest
from flask import Flask
from harness import flask_mcp_stdio
from harness import start_server
from mcp import Client
from mcp.client import advertise
from pydantic import TypeAdapter

from flask_mcp import MCP
from flask_mcp import MCPBlueprint
from flask_mcp import MCPError
from flask_mcp.errors import INTERNAL_ERROR
from flask_mcp.extensions.apps import APP_MIME_TYPE
from flask_mcp.extensions.apps import EXTENSION_ID
from flask_mcp.testing import MCPTestClient
from tests._apps import apps_protocol as server

ROOT = pathlib.Path(__file__).resolve().parent.parent
APP = "tests._apps.apps_protocol"
PAGE = "<!DOCTYPE html><html><body>{}</body></html>"
#: What a host that renders views declares: the spec's client settings.
UI_SETTINGS = {"mimeTypes": [APP_MIME_TYPE]}
UI_CLIENT = {"extensions": {EXTENSION_ID: UI_SETTINGS}}
VERSIONS = ["2025-11-25", "2026-07-28"]
MODES = ["legacy", "2026-07-28"]
ANY = TypeAdapter(dict[str, t.Any])

#: tools/list _meta of each tool (the deprecated flat key repeats the URI for older hosts).
TOOL_META = {
    "weather": {"ui": {"resourceUri": server.CARD}, "ui/resourceUri": server.CARD},
    "refresh_weather": {
        "ui": {"resourceUri": server.CARD, "visibility": ["app"]},
        "ui/resourceUri": server.CARD,
    },
    "forecast": {
        "ui": {"resourceUri": server.FORECAST, "visibility": ["model", "app"]},
        "ui/resourceUri": server.FORECAST,
    },
    "radar_show_map": {"ui": {"resourceUri": "ui://radar/map"}, "ui/resourceUri": "ui://radar/map"},
}
#: resources/list entries (the forecast view is unlisted).
LISTED = {
    server.CARD: {
        "uri": server.CARD,
        "name": "weather_card",
        "title": "Weather card",
        "description": "The weather in a city, as a card.",
        "mimeType": APP_MIME_TYPE,
        "_meta": {"ui": server.CARD_UI},
    },
    "ui://radar/map": {
        "uri": "ui://radar/map",
        "name": "radar_map",
        "mimeType": APP_MIME_TYPE,
        "_meta": {"ui": {"prefersBorder": False}},
    },
}


def connect(version: str, capabilities: dict[str, t.Any] | None = None) -> MCPTestClient:
    client = MCPTestClient(server.app, protocol_version=version, capabilities=capabilities)
    client.initialize()  # server/discover at 2026-07-28
    return client


# -- in process, both eras --------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_the_capability_in_initialize_and_server_discover(version: str) -> None:
    client = connect(version, UI_CLIENT)
    assert client.server_result["capabilities"]["extensions"][EXTENSION_ID] == {}
    # a client without the extension is told too: a host decides from the capability
    assert connect(version).server_result["capabilities"]["extensions"] == {EXTENSION_ID: {}}


def test_a_server_without_views_does_not_advertise_it() -> None:
    mcp = MCP(name="plain", version="1")

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    app = Flask("plain")
    mcp.init_app(app)
    for version in VERSIONS:
        client = MCPTestClient(app, protocol_version=version, capabilities=UI_CLIENT)
        assert "extensions" not in client.initialize()["capabilities"]
        assert "_meta" not in client.list_tools()[0]


@pytest.mark.parametrize("version", VERSIONS)
def test_tools_carry_meta_ui(version: str) -> None:
    client = connect(version, UI_CLIENT)
    tools = {tool["name"]: tool for tool in client.list_tools()}
    assert {name: tools[name].get("_meta") for name in TOOL_META} == TOOL_META


@pytest.mark.parametrize("version", VERSIONS)
def test_views_are_read_with_their_media_type_and_meta_ui(version: str) -> None:
    client = connect(version, UI_CLIENT)
    listed = {item["uri"]: item for item in client.list_resources()}
    assert listed == LISTED  # the forecast view is listed=False
    [card] = client.read_resource(server.CARD)
    assert card == {
        "uri": server.CARD,
        "mimeType": APP_MIME_TYPE,
        "text": PAGE.format("<p id=who>ada</p>"),  # g.user, set by before_request
        "_meta": {"ui": server.CARD_UI},
    }
    [forecast] = client.read_resource(server.FORECAST)  # unlisted, still readable
    assert forecast["uri"] == server.FORECAST and forecast["mimeType"] == APP_MIME_TYPE
    assert '<p id="who">ada</p>' in forecast["text"] and "McpApp" in forecast["text"]
    assert "_meta" not in forecast
    [radar] = client.read_resource("ui://radar/map")  # the blueprint's view, prefixed
    assert radar["uri"] == "ui://radar/map" and radar["_meta"] == {"ui": {"prefersBorder": False}}


@pytest.mark.parametrize("version", VERSIONS)
def test_text_for_every_client_and_structured_content_for_those_with_views(version: str) -> None:
    text = [{"type": "text", "text": "Oslo: 21 °C, sunny."}]
    with_ui = connect(version, UI_CLIENT).call_tool("weather", {"city": "Oslo"})
    assert with_ui["content"] == text
    assert with_ui["structuredContent"] == {"city": "Oslo", "celsius": 21}
    for capabilities in (None, {"extensions": {EXTENSION_ID: {"mimeTypes": ["text/html"]}}}):
        text_only = connect(version, capabilities).call_tool("weather", {"city": "Oslo"})
        assert text_only["content"] == text
        assert "structuredContent" not in text_only
    # an app-only tool is an ordinary tool on the wire: hosts keep it from the model
    assert connect(version).call_tool("refresh_weather", {"city": "Oslo"})["content"]
    assert (
        connect(version)
        .call_tool("radar_show_map", {"region": "west"})["content"][0]["text"]
        .startswith("Radar of west")
    )


# -- the official client: stdio and gunicorn --------------------------------------------


async def check_with_the_official_client(
    client: Client, mode: str, renders_views: bool, user: str = "ada"
) -> dict[str, int]:
    if mode == "legacy":  # the initialize result
        capabilities = client.server_capabilities
        assert capabilities is not None and capabilities.extensions == {EXTENSION_ID: {}}
    else:
        request = types.Request[dict[str, t.Any], str](method="server/discover", params={})
        discovered = await client.session.send_request(request, ANY)
        assert discovered["capabilities"]["extensions"] == {EXTENSION_ID: {}}
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert {name: tools[name].meta for name in TOOL_META} == TOOL_META
    listed = {str(item.uri): item for item in (await client.list_resources()).resources}
    assert set(listed) == set(LISTED)
    assert listed[server.CARD].meta == {"ui": server.CARD_UI}
    assert listed[server.CARD].mime_type == APP_MIME_TYPE
    read = await client.read_resource(server.CARD)
    [card] = read.contents
    assert isinstance(card, types.TextResourceContents)
    assert card.mime_type == APP_MIME_TYPE and card.meta == {"ui": server.CARD_UI}
    assert card.text == PAGE.format(f"<p id=who>{user}</p>")
    [forecast] = (await client.read_resource(server.FORECAST)).contents
    assert forecast.mime_type == APP_MIME_TYPE
    result = await client.call_tool("weather", {"city": "Oslo"})
    assert [block.model_dump(exclude_none=True) for block in result.content] == [
        {"type": "text", "text": "Oslo: 21 °C, sunny."}
    ]
    if renders_views:
        assert result.structured_content == {"city": "Oslo", "celsius": 21}
    else:
        assert result.structured_content is None
    return {"tools": len(tools), "resources": len(listed)}


def extensions(renders_views: bool) -> list[t.Any]:
    return [advertise(EXTENSION_ID, UI_SETTINGS)] if renders_views else []


@pytest.mark.e2e
@pytest.mark.parametrize("renders_views", [True, False], ids=["ui-client", "text-client"])
@pytest.mark.parametrize("mode", MODES)
def test_over_stdio(mode: str, renders_views: bool) -> None:
    parameters = flask_mcp_stdio(APP)

    async def main() -> dict[str, int]:
        async with Client(
            parameters, mode=mode, read_timeout_seconds=30, extensions=extensions(renders_views)
        ) as client:
            return await check_with_the_official_client(client, mode, renders_views, user="stdio")

    assert anyio.run(main) == {"tools": 4, "resources": 2}


@pytest.fixture(scope="module")
def gevent_server() -> t.Iterator[t.Any]:
    with start_server(f"{APP}:app", "gevent") as running:
        yield running


@pytest.mark.e2e
@pytest.mark.parametrize("renders_views", [True, False], ids=["ui-client", "text-client"])
@pytest.mark.parametrize("mode", MODES)
def test_on_gunicorn_gevent(gevent_server: t.Any, mode: str, renders_views: bool) -> None:
    async def main() -> dict[str, int]:
        async with Client(
            gevent_server.url, mode=mode, extensions=extensions(renders_views)
        ) as client:
            return await check_with_the_official_client(client, mode, renders_views)

    assert anyio.run(main) == {"tools": 4, "resources": 2}


# -- registration errors ---------------------------------------------------------------


def fresh() -> tuple[MCP, Flask]:
    app = Flask("errors")
    app.jinja_loader = jinja2.DictLoader({"frag.html": "<div>not a page</div>"})
    return MCP(name="errors", version="1"), app


def test_a_view_needs_a_ui_uri_and_one_of_its_own() -> None:
    mcp, _ = fresh()
    with pytest.raises(ValueError, match=r"needs a ui:// URI such as 'ui://weather/card'.*'https"):
        mcp.ui_template("https://example.com/card", "card.html")
    with pytest.raises(ValueError, match="has template variables.*fixed URI"):
        mcp.ui("ui://cards/{city}")
    mcp.ui_template("ui://card", "card.html")
    with pytest.raises(ValueError, match="already declared; give this one another ui:// URI"):
        mcp.ui_template("ui://card", "other.html")

    @mcp.resource("ui://taken")
    def taken() -> str:
        return PAGE.format("")

    with pytest.raises(ValueError, match="already a resource of this server"):
        mcp.ui_template("ui://taken", "card.html")
    with pytest.raises(
        ValueError, match=r"template 'ui://cards/\{city\}' is served as.*fixed URI with @mcp\.ui"
    ):
        mcp.resource("ui://cards/{city}", mime_type=APP_MIME_TYPE)(lambda city: PAGE)
    assert not mcp.registry.templates
    with pytest.raises(ValueError, match=r"csp has unknown key\(s\) 'scriptDomains'"):
        mcp.ui("ui://bad", csp={"scriptDomains": ["https://a.io"]})
    with pytest.raises(ValueError, match="permissions has the unknown key 'usb'"):
        mcp.ui_template("ui://bad", "card.html", permissions={"usb": {}})
    with pytest.raises(TypeError, match="prefers_border must be True or False"):
        mcp.ui_template("ui://bad", "card.html", prefers_border="yes")  # type: ignore[arg-type]
    assert "ui://bad" not in mcp.apps.views


def test_tool_options_are_checked_when_the_tool_is_declared() -> None:
    mcp, _ = fresh()
    with pytest.raises(ValueError, match="ui= of tool 'a' needs a ui:// URI"):
        mcp.tool(name="a", ui="https://example.com")(lambda: "x")
    with pytest.raises(TypeError, match=r"visibility of tool 'b' must be a list such as \['app'\]"):
        mcp.tool(name="b", visibility="app")(lambda: "x")
    with pytest.raises(ValueError, match=r"visibility=\[\] would let no one call tool 'c'"):
        mcp.tool(name="c", visibility=[])(lambda: "x")
    with pytest.raises(ValueError, match="'agent'; the entries are 'model'"):
        mcp.tool(name="d", visibility=["agent"])(lambda: "x")
    with pytest.raises(ValueError, match="use only ui= and visibility="):
        mcp.tool(name="e", ui="ui://card", meta={"ui": {"resourceUri": "ui://card"}})(lambda: "x")
    # _meta.ui through meta= alone went unchecked: no ui:// check, no view at init_app, the
    # view removable while the tool named it
    for meta in [{"ui": {"resourceUri": "https://example.com"}}, {"ui/resourceUri": "ui://v"}]:
        with pytest.raises(ValueError, match=r"_meta.ui through meta=.*ui= and visibility="):
            mcp.tool(name="g", meta=meta)(lambda: "x")
    mcp.tool(name="h", meta={"other": 1})(lambda: "x")  # the rest of _meta is the tool's
    with pytest.raises(TypeError, match=r"unknown option\(s\) 'view'.*'ui' \(io.modelcontext"):
        mcp.tool(name="f", view="ui://card")(lambda: "x")


def test_every_ui_names_an_existing_view_at_init_app() -> None:
    mcp, app = fresh()

    @mcp.tool(ui="ui://nowhere")
    def lost() -> str:
        return "x"

    with pytest.raises(ValueError, match=r"names the view 'ui://nowhere' \(ui=\), which is not"):
        mcp.init_app(app)
    mcp.remove_tool("lost")
    mcp.ui_template("ui://card", "frag.html")
    later = Flask("later")
    later.jinja_loader = app.jinja_loader
    mcp.init_app(later)
    # after init_app a tool naming no view is refused at once, and not added
    with pytest.raises(ValueError, match="is not declared: declare it with @mcp.ui"):
        mcp.tool(name="late", ui="ui://nowhere")(lambda: "x")
    assert "late" not in mcp.registry.tools


def test_a_view_that_is_no_html5_document_fails_its_read(caplog: pytest.LogCaptureFixture) -> None:
    mcp, app = fresh()
    mcp.ui_template("ui://frag", "frag.html")
    mcp.init_app(app)
    with MCPTestClient(app) as client, pytest.raises(MCPError) as raised:
        client.read_resource("ui://frag")
    assert raised.value.code == INTERNAL_ERROR
    assert "must be an HTML5 document: start it with <!DOCTYPE html>" in caplog.text


def test_blueprint_views_and_their_errors() -> None:
    mcp, app = fresh()
    bp = MCPBlueprint("shop", __name__)
    with pytest.raises(ValueError, match="needs a ui:// URI"):
        bp.ui_template("cart", "cart.html")
    bp.ui_template("ui://cart", "cart.html", name="cart", csp={"connectDomains": ["https://a.io"]})
    with pytest.raises(ValueError, match="already declared on the MCP blueprint 'shop'"):
        bp.ui_template("ui://cart", "other.html")

    @bp.tool(ui="ui://cart", visibility=["app"])  # checked when registered
    def add_item(item: str) -> str:
        return item

    @bp.tool(ui="ui://elsewhere")  # not the blueprint's view: kept as written
    def show_elsewhere() -> str:
        return "x"

    mcp.ui_template("ui://elsewhere", "frag.html")
    mcp.register_blueprint(bp, prefix="shop_")
    assert mcp.registry.tools["shop_add_item"].meta == {
        "ui": {"resourceUri": "ui://shop/cart", "visibility": ["app"]},
        "ui/resourceUri": "ui://shop/cart",
    }
    assert mcp.registry.tools["shop_show_elsewhere"].meta["ui"] == {"resourceUri": "ui://elsewhere"}
    assert mcp.apps.views["ui://shop/cart"].name == "shop_cart"
    assert mcp.registry.resources["ui://shop/cart"].meta == {
        "ui": {"csp": {"connectDomains": ["https://a.io"]}}
    }
    # registered twice under one prefix: the view clashes, nothing of the second is added
    with pytest.raises(ValueError, match="'ui://shop/cart' is already declared"):
        mcp.register_blueprint(bp, prefix="shop_")
    # a clash of the rest (the same tools again) takes back the views it added
    with pytest.raises(ValueError, match="already registered on this server with prefix='shop_'"):
        mcp.register_blueprint(bp, prefix="shop_", uri_prefix="store")
    assert "ui://store/cart" not in mcp.apps.views
    assert "ui://store/cart" not in mcp.registry.resources
    # options no extension defines are refused at registration, before anything is added
    odd = MCPBlueprint("odd", __name__)
    odd.ui_template("ui://odd", "frag.html")

    @odd.tool(shape="round")
    def thing() -> str:
        return "x"

    with pytest.raises(TypeError, match=r"A tool of the MCP blueprint 'odd' got unknown option"):
        mcp.register_blueprint(odd)
    assert "ui://odd" not in mcp.apps.views and "thing" not in mcp.registry.tools
    # a bad option value of a blueprint view is refused at registration too
    bad = MCPBlueprint("bad", __name__)
    bad.ui_template("ui://bad", "frag.html", csp={"connectDomains": "https://a.io"})
    with pytest.raises(TypeError, match="must be a list of origins"):
        mcp.register_blueprint(bad)
