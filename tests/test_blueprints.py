"""MCP blueprints, tags, enable and disable: declarations without the server object."""

from __future__ import annotations

import typing as t

import pytest
from flask import Flask

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import MCPBlueprint
from flask_mcp import MCPError
from flask_mcp import signals
from flask_mcp.server.blueprints import prefix_uri
from flask_mcp.testing import MCPTestClient


def billing() -> MCPBlueprint:
    bp = MCPBlueprint("billing", __name__, tags={"billing"})

    @bp.tool(tags={"write"})
    def pay(invoice: int, ctx: Context) -> str:
        """Pay an invoice."""
        return f"paid {invoice}"

    @bp.tool()
    def balance() -> int:
        return 42

    @bp.resource("invoice://{number}", mime_type="text/plain")
    def invoice(number: str) -> str:
        return f"invoice {number}"

    @bp.resource("config://billing")
    def config() -> str:
        return "currency=EUR"

    @bp.prompt()
    def dunning(customer: str) -> str:
        return f"Remind {customer}."

    @bp.completion("prompt", "dunning")
    def customers(argument: str, value: str, context: t.Any) -> list[str]:
        return [name for name in ("acme", "apex", "zeta") if name.startswith(value)]

    @bp.completion("resource", "invoice://{number}")
    def numbers(argument: str, value: str, context: t.Any) -> list[str]:
        return ["100", "101"]

    return bp


def served(mcp: MCP) -> tuple[Flask, MCPTestClient]:
    app = Flask(__name__)
    app.config["MCP_ALLOWED_HOSTS"] = ["localhost"]
    mcp.init_app(app)
    return app, MCPTestClient(app)


def test_prefixes_reach_names_uris_templates_and_completions() -> None:
    mcp = MCP(name="shop", version="1")
    mcp.register_blueprint(billing(), prefix="billing_")
    _, client = served(mcp)
    with client:
        assert sorted(tool["name"] for tool in client.list_tools()) == [
            "billing_balance",
            "billing_pay",
        ]
        result = client.call_tool("billing_pay", {"invoice": 7})
        assert result["content"][0]["text"] == "paid 7" and not result.get("isError")
        assert [r["uri"] for r in client.list_resources()] == ["config://billing/billing"]
        assert [r["uriTemplate"] for r in client.list_resource_templates()] == [
            "invoice://billing/{number}"
        ]
        assert client.read_resource("invoice://billing/12")[0]["text"] == "invoice 12"
        assert [p["name"] for p in client.list_prompts()] == ["billing_dunning"]
        rendered = client.get_prompt("billing_dunning", {"customer": "acme"})
        assert rendered["messages"][0]["content"]["text"] == "Remind acme."
        done = client.complete({"type": "ref/prompt", "name": "billing_dunning"}, "customer", "a")
        assert done["values"] == ["acme", "apex"]
        done = client.complete(
            {"type": "ref/resource", "uri": "invoice://billing/{number}"}, "number", "1"
        )
        assert done["values"] == ["100", "101"]
        with pytest.raises(MCPError):
            client.read_resource("invoice://12")  # the unprefixed template is not served


def test_registration_after_init_app_tells_clients() -> None:
    mcp = MCP(name="shop", version="1")

    @mcp.tool()
    def ping() -> str:
        return "pong"

    _, client = served(mcp)
    with client:
        assert [tool["name"] for tool in client.list_tools()] == ["ping"]
        mcp.register_blueprint(billing(), prefix="b.", uri_prefix="")
        names = [tool["name"] for tool in client.list_tools()]
        assert names == ["ping", "b.pay", "b.balance"]
        assert [r["uri"] for r in client.list_resources()] == ["config://billing"]
        assert client.call_tool("b.balance")["structuredContent"] == {"result": 42}


def test_one_blueprint_registered_twice_under_two_prefixes() -> None:
    mcp = MCP(name="shop", version="1")
    bp = billing()
    mcp.register_blueprint(bp, prefix="eu_")
    mcp.register_blueprint(bp, prefix="us_")
    assert sorted(mcp.registry.tools) == ["eu_balance", "eu_pay", "us_balance", "us_pay"]
    assert sorted(mcp.registry.resources) == ["config://eu/billing", "config://us/billing"]
    assert bp.registrations == [("eu_", "eu"), ("us_", "us")]


def test_clashes_are_refused_clearly_and_add_nothing() -> None:
    mcp = MCP(name="shop", version="1")

    @mcp.tool(name="billing_pay")
    def taken() -> str:
        return "mine"

    before = (dict(mcp.registry.tools), dict(mcp.registry.prompts), dict(mcp.registry.resources))
    with pytest.raises(ValueError) as info:
        mcp.register_blueprint(billing(), prefix="billing_")
    message = str(info.value)
    assert "MCP blueprint 'billing'" in message and "tool 'billing_pay'" in message
    assert "another prefix=" in message
    assert (mcp.registry.tools, mcp.registry.prompts, mcp.registry.resources) == before

    mcp.register_blueprint(billing(), prefix="")
    with pytest.raises(ValueError, match="resource 'config://billing'.*already registered"):
        mcp.register_blueprint(billing(), prefix="", uri_prefix="")


def test_registering_a_blueprint_again_in_an_app_factory_says_to_register_it_once() -> None:
    """``mcp.register_blueprint`` in ``create_app()``, as ``app.register_blueprint`` goes:
    the second app of the factory is refused with the fix, not "choose another prefix"."""
    mcp = MCP(name="shop", version="1")
    bp = billing()

    def create_app() -> Flask:
        app = Flask(__name__)
        mcp.init_app(app)
        mcp.register_blueprint(bp, prefix="billing_")
        return app

    create_app()
    before = dict(mcp.registry.tools)
    with pytest.raises(ValueError) as info:
        create_app()
    assert str(info.value) == (
        "MCP blueprint 'billing' is already registered on this server with prefix='billing_'."
        " The server's declarations are shared by every app it is registered on: call"
        " mcp.register_blueprint() once, at import time beside mcp = MCP(...), not in an app"
        " factory; to serve the blueprint twice, register it with another prefix=."
    )
    assert mcp.registry.tools == before


def test_a_disabled_name_stays_taken_and_a_bad_prefix_is_refused() -> None:
    mcp = MCP(name="shop", version="1")
    mcp.register_blueprint(billing(), prefix="x_")
    mcp.disable("x_pay")
    with pytest.raises(ValueError, match="tool 'x_pay'"):
        mcp.register_blueprint(billing(), prefix="x_")
    with pytest.raises(ValueError, match="invalid"):
        mcp.register_blueprint(billing(), prefix="has space ")


def test_a_registered_blueprint_takes_no_more_declarations() -> None:
    mcp = MCP(name="shop", version="1")
    bp = billing()
    mcp.register_blueprint(bp)
    with pytest.raises(RuntimeError, match="already registered on a server"):

        @bp.tool()
        def late() -> str:
            return "late"


def test_enable_and_disable_by_name_and_tag() -> None:
    mcp = MCP(name="shop", version="1")

    @mcp.tool(tags=["admin"])
    def wipe() -> str:
        return "wiped"

    @mcp.tool(tags="admin")  # one string is one tag
    def audit() -> str:
        return "ok"

    mcp.register_blueprint(billing(), prefix="billing_")
    app, client = served(mcp)
    with client:
        disabled = mcp.disable(tags={"admin"})
        assert sorted(disabled) == [("tools", "audit"), ("tools", "wipe")]
        assert sorted(t["name"] for t in client.list_tools()) == ["billing_balance", "billing_pay"]
        with pytest.raises(MCPError, match="wipe"):
            client.call_tool("wipe")
        mcp.disable(tags=["billing"])
        assert client.list_tools() == [] and client.list_prompts() == []
        assert client.list_resources() == [] and client.list_resource_templates() == []
        mcp.enable("billing_pay", "invoice://billing/{number}")
        assert [t["name"] for t in client.list_tools()] == ["billing_pay"]
        assert client.read_resource("invoice://billing/3")[0]["text"] == "invoice 3"
        mcp.enable(tags=["write", "admin"])
        assert sorted(t["name"] for t in client.list_tools()) == ["audit", "billing_pay", "wipe"]
        assert client.call_tool("wipe")["content"][0]["text"] == "wiped"
    with pytest.raises(LookupError, match="'nope'"):
        mcp.disable("nope")
    with pytest.raises(LookupError, match="'ghost'"):
        mcp.enable(tags=["ghost"])
    assert mcp.remove_tool("wipe") is True


def test_prefix_uri() -> None:
    assert prefix_uri("a://x/y", "seg") == "a://seg/x/y"
    assert prefix_uri("urn:x", "seg") == "urn:seg/x"
    assert prefix_uri("a://x", "") == "a://x"
    with pytest.raises(ValueError, match="no scheme"):
        prefix_uri("plain", "seg")


def test_a_blueprint_registration_tells_listeners_once_per_kind() -> None:
    mcp = MCP(name="shop", version="1")
    heard: list[str] = []
    mcp.registry.listeners.append(heard.append)
    mcp.register_blueprint(billing(), prefix="b_")
    assert sorted(heard) == ["prompts", "resources", "tools"]  # templates: resources


def test_a_blueprint_with_views_tells_clients_once_per_list() -> None:
    """Its views, resources and templates change one list: the clients are told once."""
    mcp = MCP(name="shop", version="1")
    bp = billing()

    @bp.ui("ui://billing/card")
    def card() -> str:
        return "<html></html>"

    _, client = served(mcp)
    sent: list[str] = []

    def on_sent(sender: object, method: str, session_id: str) -> None:
        sent.append(method)

    each_once = [
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/tools/list_changed",
    ]
    with client, signals.notification_sent.connected_to(on_sent):  # serving: it is told
        mcp.register_blueprint(bp, prefix="b_")
        assert sorted(sent) == each_once
        sent.clear()
        mcp.disable(tags=["billing"])  # a resource and a template: one resource list
        assert sorted(sent) == each_once


def test_removing_the_last_record_keeps_the_capability_the_sessions_were_told() -> None:
    """list_changed asks the session to list again: it gets an empty list, not -32601."""
    mcp = MCP(name="shop", version="1")

    @mcp.tool()
    def ping() -> str:
        return "pong"

    @mcp.prompt()
    def hello() -> str:
        return "hello"

    @mcp.resource("docs://{name}")
    def doc(name: str) -> str:
        return name

    _, client = served(mcp)
    with client:
        capabilities = client.initialize()["capabilities"]
        assert mcp.remove_tool("ping") and mcp.remove_prompt("hello")
        assert mcp.remove_resource("docs://{name}")
        assert client.list_tools() == client.list_prompts() == []
        assert client.list_resource_templates() == []
        assert client.initialize()["capabilities"] == capabilities
        with pytest.raises(MCPError, match="Unknown tool"):
            client.call_tool("ping")


def test_a_record_left_out_of_its_list_changes_no_list() -> None:
    """A resource served with ``listed=False``: its changes send no ``list_changed``."""
    mcp = MCP(name="shop", version="1")

    @mcp.resource("cfg://shown")
    def shown() -> str:
        return "shown"

    _, client = served(mcp)
    sent: list[str] = []

    def on_sent(sender: object, method: str, session_id: str) -> None:
        sent.append(method)

    with client, signals.notification_sent.connected_to(on_sent):
        mcp.add_resource(lambda: "hidden", "cfg://hidden", listed=False)
        mcp.add_resource(lambda name: name, "cfg://hidden/{name}", listed=False)
        mcp.disable("cfg://hidden", "cfg://hidden/{name}")
        mcp.enable("cfg://hidden", "cfg://hidden/{name}")
        assert mcp.remove_resource("cfg://hidden") and mcp.remove_resource("cfg://hidden/{name}")
        assert sent == []
        mcp.disable("cfg://shown")
        assert sent == ["notifications/resources/list_changed"]
