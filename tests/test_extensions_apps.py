"""MCP Apps (``flask_mcp.extensions.apps``): views, template helpers, the extension's hooks.

The hooks of the extension (``check_tool``, ``tool_meta``, ``capability``) are called
directly here, the face (``mcp.ui``, ``mcp.ui_template``, ``@mcp.tool(ui=...)``) through the
test client; ``test_apps_protocol.py`` has the wire in both eras, over stdio and on
gunicorn, and the browser tests (``test_apps_browser.py``) run views in a real host.
"""

from __future__ import annotations

import base64
import typing as t
from pathlib import Path

import jinja2
import pytest
from flask import Blueprint
from flask import Flask
from flask import g
from flask import render_template_string

from flask_mcp import MCP
from flask_mcp import MCPError
from flask_mcp.errors import INTERNAL_ERROR
from flask_mcp.extensions.apps import APP_MIME_TYPE
from flask_mcp.extensions.apps import EXTENSION_ID
from flask_mcp.extensions.apps import Apps
from flask_mcp.extensions.apps import View
from flask_mcp.extensions.apps import add_template_helpers
from flask_mcp.extensions.apps import check_html
from flask_mcp.extensions.apps import check_ui_uri
from flask_mcp.extensions.apps import client_supports_ui
from flask_mcp.extensions.apps import helper_source
from flask_mcp.extensions.apps import mcp_app_script
from flask_mcp.extensions.apps import render_view
from flask_mcp.extensions.apps import ui_meta
from flask_mcp.testing import MCPTestClient

#: What a host that renders views declares (the spec's client settings).
UI_CLIENT = {"extensions": {EXTENSION_ID: {"mimeTypes": [APP_MIME_TYPE]}}}
PAGE = "<!DOCTYPE html><html><head><title>t</title></head><body>{}</body></html>"


class Tool(t.NamedTuple):
    name: str
    meta: dict[str, t.Any] | None = None


class Facts:
    """A ``Context`` as far as :func:`client_supports_ui` needs one."""

    def __init__(self, settings: t.Any) -> None:
        self.settings = settings

    def client_extension(self, extension_id: str) -> t.Any:
        return self.settings if extension_id == EXTENSION_ID else None


@pytest.fixture
def site(tmp_path: Path) -> Flask:
    """An app with a static folder and templates of its own, and the template helpers."""
    (tmp_path / "static" / "img").mkdir(parents=True)
    (tmp_path / "templates").mkdir()
    (tmp_path / "static" / "app.js").write_text("const s = '</script><!-- x';\n")
    (tmp_path / "static" / "app.css").write_text("body { color: red } /* </style> */\n")
    (tmp_path / "static" / "img" / "dot.png").write_bytes(b"\x89PNG-not-really")
    (tmp_path / "static" / "blob.unknownext").write_bytes(b"?")
    app = Flask(
        "site", static_folder=str(tmp_path / "static"), template_folder=str(tmp_path / "templates")
    )
    add_template_helpers(app)
    return app


# -- views -----------------------------------------------------------------------------


def test_a_view_uri_is_ui_and_fixed() -> None:
    assert check_ui_uri("ui://weather/card") == "ui://weather/card"
    for bad in ("https://example.com/card", "ui://", None):
        with pytest.raises(ValueError, match="needs a ui:// URI such as 'ui://weather/card'"):
            check_ui_uri(bad)
    with pytest.raises(ValueError, match="has template variables.*fixed URI"):
        check_ui_uri("ui://cards/{city}")


def test_ui_meta_is_the_wire_shape_checked() -> None:
    meta = ui_meta(
        csp={"connectDomains": ["https://api.example.com", "https://api.example.com"]},
        permissions={"clipboardWrite": {}, "camera": True},
        domain="abc.claudemcpcontent.com",
        prefers_border=False,
    )
    assert meta == {
        "csp": {"connectDomains": ["https://api.example.com"]},
        "permissions": {"clipboardWrite": {}, "camera": {}},
        "domain": "abc.claudemcpcontent.com",
        "prefersBorder": False,
    }
    assert ui_meta() == {}
    assert ui_meta(csp={"resourceDomains": ["https://*.cdn.example.com", "wss://rt.io:8443"]})
    assert ui_meta(csp={"connectDomains": ["https://api.example.com:*", "http://127.0.0.1:5000"]})


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"csp": {"connect_domains": []}}, ValueError, "unknown key.*connectDomains, resource"),
        ({"csp": {"connectDomains": "https://a.io"}}, TypeError, "must be a list of origins"),
        ({"csp": {"connectDomains": ["https://a.io 'unsafe-eval'"]}}, ValueError, "no spaces"),
        ({"csp": {"connectDomains": ["https://a.io;script-src *"]}}, ValueError, "not an origin"),
        ({"csp": {"frameDomains": ["youtube.com"]}}, ValueError, "scheme://host"),
        # sources a browser drops from the policy, and the explorer's sandbox refuses
        ({"csp": {"connectDomains": ["https://api_v2.example.com"]}}, ValueError, "ASCII"),
        ({"csp": {"connectDomains": ["https://[::1]:8443"]}}, ValueError, "IPv6"),
        ({"csp": {"connectDomains": ["https://bücher.example"]}}, ValueError, "punycode"),
        ({"csp": {"connectDomains": ["https://u:p@a.example"]}}, ValueError, "user info"),
        ({"csp": {"connectDomains": ["https://a.example:443:9"]}}, ValueError, "not an origin"),
        # an empty label: Chromium ignores the source ("contains an invalid source")
        ({"csp": {"connectDomains": ["https://.example.com"]}}, ValueError, "empty label"),
        ({"csp": {"resourceDomains": ["https://cdn..example.com"]}}, ValueError, "empty label"),
        ({"csp": {"frameDomains": ["https://*..example.com"]}}, ValueError, "empty label"),
        ({"csp": {"connectDomains": ["ftp://files.example.com"]}}, ValueError, "ws\\(s\\)"),
        ({"csp": ["https://a.io"]}, TypeError, "csp must be a dict"),
        ({"permissions": {"usb": {}}}, ValueError, "unknown key 'usb'.*clipboardWrite"),
        ({"permissions": {"camera": "yes"}}, TypeError, r"must be \{\} \(or True\)"),
        ({"domain": "a b"}, ValueError, "host-specific sandbox domain"),
        ({"prefers_border": "yes"}, TypeError, "True or False"),
    ],
)
def test_ui_meta_refuses_what_a_host_cannot_use(
    kwargs: dict[str, t.Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        ui_meta(**kwargs)


def test_a_view_is_an_html5_document() -> None:
    assert check_html("ui://a", PAGE.format("")) == PAGE.format("")
    assert check_html("ui://a", "\ufeff<!-- hi -->\n<!doctype HTML>\n<html lang=en></html>")
    with pytest.raises(ValueError, match="start it with <!DOCTYPE html>.*starts with '<div>hi"):
        check_html("ui://a", "<div>hi</div>")
    with pytest.raises(ValueError, match=r"put the page in <html>"):
        check_html("ui://a", "<!DOCTYPE html><body></body>")
    with pytest.raises(TypeError, match=r"render_template\('view.html'\).*got bytes"):
        check_html("ui://a", b"<!DOCTYPE html><html></html>")


def test_render_view_gives_the_content_item_with_meta_ui(site: Flask) -> None:
    with site.test_request_context(base_url="https://tools.example.com"):
        plain = render_view("ui://a/b", lambda: PAGE.format("x"))
        assert plain == {"uri": "ui://a/b", "mimeType": APP_MIME_TYPE, "text": PAGE.format("x")}

        def page() -> str:
            icon = render_template_string(
                "{{ mcp_app_asset_url('static', filename='img/dot.png') }}"
                "{{ mcp_app_asset_url('https://cdn.example.net/chart.js') }}"
                "{{ mcp_app_asset_url('https://cdn.example.net/chart.css') }}"
            )
            return PAGE.format(icon)

        declared = ui_meta(csp={"resourceDomains": ["https://cdn.example.net"]})
        item = render_view("ui://a/b", page, declared)
        assert "https://tools.example.com/static/img/dot.png" in item["text"]
        assert item["_meta"] == {
            "ui": {
                "csp": {"resourceDomains": ["https://cdn.example.net", "https://tools.example.com"]}
            }
        }
        assert declared == {"csp": {"resourceDomains": ["https://cdn.example.net"]}}
        with pytest.raises(ValueError, match="must be an HTML5 document"):
            render_view("ui://a/b", lambda: "<p>no</p>")


# -- template helpers -------------------------------------------------------------------


def test_script_and_style_are_inlined_and_cannot_end_early(site: Flask) -> None:
    with site.test_request_context():
        page = render_template_string(
            "{{ mcp_app_script('app.js') }}@@{{ mcp_app_style('app.css') }}@@{{ mcp_app_script() }}"
        )
    script, style, helper = page.split("@@")
    assert script == "<script>\nconst s = '<\\/script><\\!-- x';\n\n</script>"
    assert style == "<style>\nbody { color: red } /* <\\/style> */\n\n</style>"
    assert "window.McpApp" not in helper and "global.McpApp = {" in helper
    assert helper.startswith("<script>\n/*") and helper.count("</script>") == 1
    assert "ui/initialize" in helper_source()


def test_data_uri_and_the_errors_that_say_the_fix(site: Flask) -> None:
    with site.test_request_context():
        uri = render_template_string("{{ mcp_app_data_uri('img/dot.png') }}")
        assert uri == "data:image/png;base64," + base64.b64encode(b"\x89PNG-not-really").decode()
        typed = render_template_string(
            "{{ mcp_app_data_uri('blob.unknownext', mime_type='image/webp') }}"
        )
        assert typed.startswith("data:image/webp;base64,")
        with pytest.raises(ValueError, match="pass it: mcp_app_data_uri"):
            render_template_string("{{ mcp_app_data_uri('blob.unknownext') }}")
        with pytest.raises(FileNotFoundError, match="relative to that folder"):
            render_template_string("{{ mcp_app_script('missing.js') }}")
        with pytest.raises(FileNotFoundError):
            render_template_string("{{ mcp_app_style('../templates/x.css') }}")
        with pytest.raises(LookupError, match="No blueprint 'nope'"):
            render_template_string("{{ mcp_app_script('app.js', blueprint='nope') }}")
        with pytest.raises(ValueError, match="absolute http"):
            render_template_string("{{ mcp_app_asset_url('ftp://files.example.com/x') }}")
        with pytest.raises(ValueError, match="not an IPv6 literal.*or inline it"):
            render_template_string("{{ mcp_app_asset_url('http://[::1]:5000/x.png') }}")


def test_an_asset_urls_origin_is_declared_without_user_info(site: Flask) -> None:
    with site.test_request_context():
        page = "{{ mcp_app_asset_url('https://u:p@cdn.example.net/x.js') }}"
        item = render_view("ui://a/b", lambda: PAGE.format(render_template_string(page)))
    assert item["_meta"] == {"ui": {"csp": {"resourceDomains": ["https://cdn.example.net"]}}}


def test_a_blueprints_static_folder(site: Flask, tmp_path: Path) -> None:
    (tmp_path / "bp").mkdir()
    (tmp_path / "bp" / "board.js").write_text("board();")
    site.register_blueprint(Blueprint("board", __name__, static_folder=str(tmp_path / "bp")))
    site.register_blueprint(Blueprint("bare", __name__))
    with site.test_request_context():
        page = render_template_string("{{ mcp_app_script('board.js', blueprint='board') }}")
        assert page == "<script>\nboard();\n</script>"
        with pytest.raises(LookupError, match="has no static folder"):
            render_template_string("{{ mcp_app_script('board.js', blueprint='bare') }}")


def test_helpers_outside_a_flask_environment() -> None:
    env = jinja2.Environment()
    env.globals["mcp_app_script"] = mcp_app_script
    with pytest.raises(RuntimeError, match=r"add_template_helpers\(app\)"):
        env.from_string("{{ mcp_app_script('x.js') }}").render()


# -- the extension's hooks ----------------------------------------------------------------


def test_capability_and_client_support() -> None:
    apps = Apps()
    assert apps.capability() is None  # nothing to render: not advertised
    apps.ui_template("ui://a", "a.html")
    assert apps.capability() == {}  # the spec defines no server settings
    assert Apps.id == "io.modelcontextprotocol/ui"
    assert Apps.tool_options == ("ui", "visibility")
    assert client_supports_ui(Facts({"mimeTypes": [APP_MIME_TYPE]}))
    assert not client_supports_ui(Facts(None))
    assert not client_supports_ui(Facts({}))
    assert not client_supports_ui(Facts({"mimeTypes": ["text/html"]}))
    assert not client_supports_ui(Facts({"mimeTypes": APP_MIME_TYPE}))


def test_tool_meta_is_meta_ui_and_the_deprecated_flat_key() -> None:
    apps = Apps()
    card = "ui://weather/card"
    assert apps.tool_meta(Tool("w"), {"ui": card}) == {
        "ui": {"resourceUri": card},
        "ui/resourceUri": card,
    }
    assert apps.tool_meta(Tool("r"), {"ui": card, "visibility": ["app"]}) == {
        "ui": {"resourceUri": card, "visibility": ["app"]},
        "ui/resourceUri": card,
    }
    assert apps.tool_meta(Tool("m"), {"visibility": ("model",)}) == {
        "ui": {"visibility": ["model"]}
    }
    assert apps.tool_meta(Tool("n"), {}) is None


@pytest.mark.parametrize(
    ("options", "meta", "error", "message"),
    [
        ({"ui": "https://x"}, None, ValueError, "ui= of tool 't' needs a ui:// URI"),
        ({"visibility": "app"}, None, TypeError, r"must be a list such as \['app'\]"),
        ({"visibility": []}, None, ValueError, r"no one call tool 't'.*\['app'\]"),
        ({"visibility": ["agent"]}, None, ValueError, "'agent'; the entries are 'model'"),
        ({"visibility": ["app", "app"]}, None, ValueError, "repeats an entry"),
        ({"ui": "ui://a"}, {"ui": {"resourceUri": "ui://a"}}, ValueError, "only ui= and vis"),
        ({"visibility": ["app"]}, {"ui/resourceUri": "ui://a"}, ValueError, "through meta="),
    ],
)
def test_check_tool_refuses_bad_options(
    options: dict[str, t.Any], meta: t.Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        Apps().check_tool(Tool("t", meta), options)


def test_check_tool_accepts_good_options() -> None:
    apps = Apps()
    apps.check_tool(Tool("a", {"other": 1}), {"ui": "ui://a", "visibility": ["model", "app"]})
    apps.check_tool(Tool("b"), {"visibility": ["app"]})
    apps.check_tool(Tool("c"), {})


def declared(app_name: str = "apps") -> tuple[MCP, Apps, Flask]:
    mcp = MCP(name=app_name, version="1")
    assert mcp.extension(EXTENSION_ID) is mcp.apps  # every MCP has it, like Tasks
    return mcp, mcp.apps, Flask(app_name)


def test_views_become_resources_with_meta_ui_on_the_list_entry_and_the_content() -> None:
    mcp, apps, app = declared()

    @mcp.ui(
        "ui://weather/card",
        csp={"connectDomains": ["https://api.example.com"]},
        permissions={"clipboardWrite": {}},
        prefers_border=True,
    )
    def weather_card() -> str:
        """The weather as a card.

        More text that is not the summary.
        """
        return PAGE.format(f"<p>{g.city}</p>")

    app.config["TEMPLATES_AUTO_RELOAD"] = True
    board = mcp.ui_template("ui://notes/board", "board.html", name="Notes board")
    assert isinstance(board, View) and board.source == "board.html"
    assert apps.views["ui://notes/board"] is board
    app.jinja_loader = jinja2.DictLoader({"board.html": PAGE.format("{{ mcp_app_script() }}")})
    mcp.init_app(app)

    @app.before_request
    def city() -> None:
        g.city = "Lisbon"

    client = MCPTestClient(app)
    client.initialize()
    listed = {r["uri"]: r for r in client.list_resources()}
    ui = {
        "csp": {"connectDomains": ["https://api.example.com"]},
        "permissions": {"clipboardWrite": {}},
        "prefersBorder": True,
    }
    assert listed["ui://weather/card"] == {
        "uri": "ui://weather/card",
        "name": "weather_card",
        "description": "The weather as a card.",
        "mimeType": APP_MIME_TYPE,
        "_meta": {"ui": ui},
    }
    assert listed["ui://notes/board"]["name"] == "Notes board"
    assert "description" not in listed["ui://notes/board"]
    assert "_meta" not in listed["ui://notes/board"]
    [card] = client.read_resource("ui://weather/card")
    assert card == {
        "uri": "ui://weather/card",
        "mimeType": APP_MIME_TYPE,
        "text": PAGE.format("<p>Lisbon</p>"),
        "_meta": {"ui": ui},
    }
    [notes] = client.read_resource("ui://notes/board")
    assert notes["mimeType"] == APP_MIME_TYPE and "McpApp" in notes["text"]


def test_a_view_that_renders_no_html5_document_is_an_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    mcp, apps, app = declared()
    mcp.ui("ui://broken")(lambda: "<p>fragment</p>")
    mcp.init_app(app)
    client = MCPTestClient(app)
    client.initialize()
    with pytest.raises(MCPError) as raised:
        client.read_resource("ui://broken")
    assert raised.value.code == INTERNAL_ERROR
    assert "must be an HTML5 document: start it with <!DOCTYPE html>" in caplog.text


def test_declaring_a_view_twice_or_badly() -> None:
    apps = Apps()
    apps.ui_template("ui://a", "a.html")
    with pytest.raises(ValueError, match="already declared; give this one another"):
        apps.ui_template("ui://a", "b.html")
    with pytest.raises(ValueError, match="needs a ui:// URI"):
        apps.ui("a")
    with pytest.raises(TypeError, match="needs a template name.*decorate a function"):
        apps.ui_template("ui://b", None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown key"):
        apps.ui("ui://c", csp={"scriptDomains": []})


def test_unlisted_views_ask_the_seam_to_leave_them_out_of_resources_list() -> None:
    apps = Apps()
    shown = apps.ui_template("ui://shown", "a.html")
    hidden = apps.ui_template("ui://hidden", "a.html", listed=False)
    assert "listed" not in shown.resource_options()
    assert hidden.resource_options()["listed"] is False
    assert hidden.resource_options()["mime_type"] == APP_MIME_TYPE


def test_init_app_checks_that_every_tools_view_exists() -> None:
    mcp, apps, app = declared()
    mcp.ui_template("ui://board", "board.html")

    @mcp.resource("ui://plain", mime_type="text/html")
    def plain() -> str:
        return PAGE.format("")

    @mcp.tool(ui="ui://missing")  # a tool may come before its view: checked at init_app
    def show() -> str:
        return "board"

    with pytest.raises(ValueError, match=r"names the view 'ui://missing'.*@mcp.ui\('ui://missing'"):
        mcp.init_app(app)
    assert mcp.remove_tool("show")
    mcp.tool(name="show", ui="ui://plain")(lambda: "board")
    with pytest.raises(ValueError, match="served as 'text/html'; hosts render only"):
        apps.check_app(app, mcp)
    assert mcp.remove_tool("show")
    mcp.tool(name="show", ui="ui://board")(lambda: "board")
    apps.check_tool(Tool("gone"), {"ui": "ui://missing"})  # no such tool: not checked
    apps.check_app(app, mcp)
    apps.init_app(app, mcp)
    assert app.jinja_env.globals["mcp_app_script"].__name__ == "mcp_app_script"
    # once an app is initialised, a tool declared later is checked at once
    with pytest.raises(ValueError, match="is not declared"):
        mcp.tool(ui="ui://missing")(lambda: "late")


def test_a_view_removed_as_a_resource_is_gone() -> None:
    mcp, apps, app = declared()
    mcp.ui("ui://v")(lambda: PAGE.format("one"))
    mcp.init_app(app)
    assert mcp.remove_resource("ui://v")
    client = MCPTestClient(app)
    capabilities = client.initialize()["capabilities"]
    assert EXTENSION_ID not in capabilities.get("extensions", {})  # nothing to render
    mcp.ui("ui://v")(lambda: PAGE.format("two"))  # the URI is free again
    assert client.initialize()["capabilities"]["extensions"] == {EXTENSION_ID: {}}
    assert client.read_resource("ui://v")[0]["text"] == PAGE.format("two")


@pytest.mark.parametrize("remove", ["remove_resource", "remove_view"])
def test_a_view_a_tool_shows_is_not_removed(remove: str) -> None:
    """Removing the view a tool's ``ui=`` names left ``_meta.ui.resourceUri`` in tools/list
    naming a resource that does not exist, which the spec forbids ("Resource MUST exist on
    the server"); the removal is refused now, naming the tools, until they go first."""
    mcp, apps, app = declared()
    mcp.ui("ui://v")(lambda: PAGE.format("one"))
    mcp.tool(name="shown", ui="ui://v")(lambda: "shown")
    mcp.tool(name="hidden", ui="ui://v")(lambda: "hidden")
    mcp.disable("hidden")  # a disabled tool comes back with its view
    mcp.init_app(app)
    owner = mcp if remove == "remove_resource" else apps
    with pytest.raises(ValueError, match=r"'ui://v' is the view of the tools 'hidden', 'shown'"):
        getattr(owner, remove)("ui://v")
    client = MCPTestClient(app)
    client.initialize()
    (tool,) = client.list_tools()
    assert tool["_meta"]["ui"]["resourceUri"] == "ui://v"
    assert client.read_resource("ui://v")[0]["text"] == PAGE.format("one")
    assert mcp.remove_tool("shown") and mcp.remove_tool("hidden")
    assert getattr(owner, remove)("ui://v")
    assert client.list_resources() == []


@pytest.mark.parametrize("again", [{}, {"ui": "ui://w"}, {"ui": "ui://nope"}])
def test_a_refused_redeclaration_keeps_the_tools_view(again: dict[str, t.Any]) -> None:
    """Declaring a tool again under a taken name (or with a ``ui=`` naming no view) is
    refused, but it rebound the view of the tool already registered under that name, so
    its view could then be removed or disabled while tools/list still named it in
    ``_meta.ui.resourceUri`` ("Resource MUST exist on the server"). The tool keeps its
    view now: removing or disabling that view is refused."""
    mcp, apps, app = declared()
    mcp.ui("ui://v")(lambda: PAGE.format("one"))
    mcp.ui("ui://w")(lambda: PAGE.format("two"))
    mcp.tool(name="shown", ui="ui://v")(lambda: "shown")
    mcp.init_app(app)
    with pytest.raises(ValueError, match="'shown' is already registered|not declared"):
        mcp.tool(name="shown", **again)(lambda: "again")
    with pytest.raises(ValueError, match="'ui://v' is the view of the tools 'shown'"):
        mcp.remove_resource("ui://v")
    with pytest.raises(ValueError, match=r"tools 'shown' \('ui://v'\)"):
        mcp.disable("ui://v")
    assert mcp.remove_resource("ui://w")  # no tool names it
    client = MCPTestClient(app)
    client.initialize()
    (tool,) = client.list_tools()
    assert tool["_meta"]["ui"]["resourceUri"] == "ui://v"
    assert client.read_resource("ui://v")[0]["text"] == PAGE.format("one")


def test_a_view_an_enabled_tool_shows_is_not_disabled() -> None:
    """Disabling the view of a listed tool (or enabling a tool whose view is disabled)
    left tools/list naming in ``_meta.ui.resourceUri`` a view that read as not found,
    which the spec forbids ("Resource MUST exist on the server"); it is refused now,
    unless the same call changes both, and nothing moves."""
    mcp, apps, app = declared()
    mcp.ui("ui://v")(lambda: PAGE.format("one"))
    mcp.tool(name="shown", ui="ui://v", tags={"board"})(lambda: "shown")
    mcp.tool(name="hidden", ui="ui://v")(lambda: "hidden")
    mcp.disable("hidden")  # a disabled tool is not listed: it does not hold the view
    mcp.init_app(app)
    client = MCPTestClient(app)
    client.initialize()
    for disable in [lambda: mcp.disable("ui://v"), lambda: mcp.disable("ui://v", "hidden")]:
        with pytest.raises(ValueError, match=r"tools 'shown' \('ui://v'\).*mcp.disable\("):
            disable()
    ((tool,),) = [client.list_tools()]
    assert tool["name"] == "shown" and tool["_meta"]["ui"]["resourceUri"] == "ui://v"
    assert client.read_resource("ui://v")[0]["text"] == PAGE.format("one")
    assert mcp.disable("ui://v", tags=["board"]) == [("tools", "shown"), ("resources", "ui://v")]
    assert client.list_tools() == [] and client.list_resources() == []
    for enable in [lambda: mcp.enable("hidden"), lambda: mcp.enable("shown", "hidden")]:
        with pytest.raises(ValueError, match=r"'hidden' \('ui://v'\).*mcp.enable\("):
            enable()
    assert client.list_tools() == []  # nothing was enabled
    assert mcp.enable("hidden", "ui://v") == [("tools", "hidden"), ("resources", "ui://v")]
    assert [tool["name"] for tool in client.list_tools()] == ["hidden"]
    assert client.read_resource("ui://v")[0]["text"] == PAGE.format("one")
    assert mcp.disable("hidden", "ui://v")
    assert mcp.enable("ui://v", tags=["board"])  # the tool by its tag


@pytest.mark.parametrize("when", ["before init_app", "after init_app"])
def test_a_tool_is_not_declared_on_a_disabled_view(when: str) -> None:
    """A tool declared with ``ui=`` naming a disabled view was accepted, before
    ``init_app`` (which then passed) or after it, and listed with
    ``_meta.ui.resourceUri`` naming a view that read as not found ("Resource MUST
    exist on the server"). It is refused now, saying to enable the view."""
    mcp, apps, app = declared()
    mcp.ui("ui://v")(lambda: PAGE.format("one"))
    if when == "after init_app":
        mcp.init_app(app)
    assert mcp.disable("ui://v") == [("resources", "ui://v")]
    with pytest.raises(ValueError, match=r"'shown' names the view 'ui://v'.*disabled.*enable"):
        mcp.tool(name="shown", ui="ui://v")(lambda: "shown")
        mcp.init_app(Flask("refused"))
    mcp.remove_tool("shown")  # declared before init_app, which refused it
    assert mcp.enable("ui://v")
    mcp.tool(name="hidden", ui="ui://v", tags={"board"})(lambda: "hidden")
    assert mcp.disable("ui://v", tags=["board"])  # a disabled tool may name a disabled view
    if when == "before init_app":
        mcp.init_app(app)
    client = MCPTestClient(app)
    client.initialize()
    assert client.list_tools() == []
    assert mcp.enable("ui://v", tags=["board"])
    (tool,) = client.list_tools()
    assert tool["_meta"]["ui"]["resourceUri"] == "ui://v"
    assert client.read_resource("ui://v")[0]["text"] == PAGE.format("one")


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_plain_resource_view_is_advertised_like_a_declared_one(version: str) -> None:
    mcp, apps, app = declared()

    @mcp.resource("ui://plain/view", mime_type=APP_MIME_TYPE)
    def plain_view() -> dict[str, t.Any]:
        return render_view("ui://plain/view", lambda: PAGE.format(""))

    @mcp.tool(ui="ui://plain/view")
    def show() -> str:
        """Show the view."""
        return "shown"

    mcp.init_app(app)
    assert not apps.views
    client = MCPTestClient(app, protocol_version=version, capabilities=UI_CLIENT)
    capabilities = client.initialize()["capabilities"]  # server/discover at 2026-07-28
    # the tool names the view in _meta.ui, so the server negotiates the extension
    assert capabilities["extensions"][EXTENSION_ID] == {}
    assert client.list_tools()[0]["_meta"]["ui"] == {"resourceUri": "ui://plain/view"}


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", "2026-07-28"])
def test_the_example_board_in_both_eras(version: str) -> None:
    from examples import apps as example

    client = MCPTestClient(example.app, protocol_version=version, capabilities=UI_CLIENT)
    if version != "2026-07-28":
        client.initialize()
    tools = {tool["name"]: tool for tool in client.list_tools()}
    assert tools["show_todos"]["_meta"] == {
        "ui": {"resourceUri": example.BOARD},
        "ui/resourceUri": example.BOARD,
    }
    assert tools["add_todo"]["_meta"]["ui"]["visibility"] == ["app"]
    [board] = client.read_resource(example.BOARD)
    assert board["mimeType"] == APP_MIME_TYPE
    assert board["_meta"] == {"ui": {"prefersBorder": True}}
    assert board["text"].startswith("<!DOCTYPE html>")
    assert "McpApp.connect" in board["text"] and "/static/" not in board["text"]
    assert "data:image/svg+xml;base64," in board["text"]
    shown = client.call_tool("show_todos", {"list_name": "today"})
    assert shown["content"][0]["text"].startswith("Todo list 'today' (")
    assert shown["structuredContent"]["list"] == "today"
    # a client without MCP Apps gets the same text, and no data for a view it cannot show
    plain = MCPTestClient(example.app, protocol_version=version)
    if version != "2026-07-28":
        plain.initialize()
    text_only = plain.call_tool("show_todos", {"list_name": "today"})
    assert text_only["content"] == shown["content"]
    assert "structuredContent" not in text_only
