"""The extension seam (issue 27): ``flask_mcp.Extension`` and ``mcp.add_extension``.

End to end: the ``Echo`` extension of the issue's sketch (``tests/_apps/echo.py``) is
called with the official ``mcp`` client in both eras, over gunicorn (gevent) and over
stdio; its capability is read from ``initialize`` and ``server/discover``; a caller that
did not declare an extension is served by ``Echo`` (it falls back to nothing: the method
is the extension) and refused with -32021 by a ``declared_only`` method. Unit tests
below check the registration errors, tool options and ``listed=False``.
"""

from __future__ import annotations

import pathlib
import threading
import typing as t

import anyio
import mcp_types as types
import pytest
from flask import Flask
from harness import flask_mcp_stdio
from harness import start_server
from mcp import Client
from mcp.client.extension import advertise
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import Extension
from flask_mcp import MCPBlueprint
from flask_mcp import ToolError
from flask_mcp.testing import MCPTestClient

ROOT = pathlib.Path(__file__).resolve().parent.parent
APP = "tests._apps.echo"
MODES = ["legacy", "2026-07-28"]
ANY = TypeAdapter(dict[str, t.Any])
Request = types.Request[dict[str, t.Any], str]


async def call(client: Client, method: str, **params: t.Any) -> dict[str, t.Any]:
    return await client.session.send_request(Request(method=method, params=params), ANY)


async def check(target: t.Any, mode: str) -> dict[str, t.Any]:
    """Run every seam check through one official client; return what was seen."""
    seen: dict[str, t.Any] = {}
    async with Client(target, mode=mode, read_timeout_seconds=30) as client:
        if mode == "legacy":
            capabilities = client.server_capabilities.model_dump(exclude_none=True)
        else:
            capabilities = (await call(client, "server/discover"))["capabilities"]
        seen["extensions"] = capabilities.get("extensions", {})
        seen["prompts"] = "prompts" in capabilities  # Picky's setup declared one, taken back
        seen["echo"] = await call(client, "echo/ping", x=41)
        with pytest.raises(MCPError) as refused:
            await call(client, "strict/settings")
        seen["undeclared"] = (refused.value.error.code, refused.value.error.data)
        with pytest.raises(MCPError) as failed:
            await call(client, "strict/fail")
        seen["fail"] = (failed.value.error.code, failed.value.error.message)
        tools = await client.list_tools()
        seen["meta"] = tools.tools[0].meta
        seen["tools"] = [tool.name for tool in tools.tools]
        resources = await client.list_resources()
        seen["listed"] = [str(item.uri) for item in resources.resources]
        templates = await client.list_resource_templates()
        seen["templates"] = [item.uri_template for item in templates.resource_templates]
        hidden = await client.read_resource("secret://plan")
        seen["hidden"] = hidden.contents[0].text  # type: ignore[union-attr]
        note = await client.read_resource("secret://notes/a")
        seen["note"] = note.contents[0].text  # type: ignore[union-attr]
    declared = [advertise("com.example/strict", {"level": 2})]
    async with Client(target, mode=mode, read_timeout_seconds=30, extensions=declared) as client:
        seen["declared"] = await call(client, "strict/settings")
    return seen


def expected(mode: str) -> dict[str, t.Any]:
    version = "2025-11-25" if mode == "legacy" else "2026-07-28"
    return {
        "extensions": {"com.example/echo": {"version": 1}, "com.example/strict": {}},
        "echo": {"pong": 41} if mode == "legacy" else {"pong": 41, "resultType": "complete"},
        "undeclared": (
            -32021,
            {"requiredCapabilities": {"extensions": {"com.example/strict": {}}}},
        ),
        "fail": (
            -32603,
            "Internal error in extension method 'strict/fail'. The server log has the details.",
        ),
        "prompts": False,
        "meta": {"com.example/badge": "gold"},
        "tools": ["shout"],
        "listed": ["public://readme"],
        "templates": [],
        "hidden": "the plan",
        "note": "note a",
        "declared": {
            "settings": {"level": 2},
            "version": version,
            "client": "mcp",
            **({} if mode == "legacy" else {"resultType": "complete"}),
        },
    }


def strip(seen: dict[str, t.Any]) -> dict[str, t.Any]:
    """Drop what the 2026-07-28 era adds to every result (serverInfo, caching hints)."""
    for key in ("echo", "declared"):
        for extra in ("_meta", "ttlMs", "cacheScope"):
            seen[key].pop(extra, None)
    return seen


@pytest.fixture(scope="module")
def server() -> t.Iterator[t.Any]:
    with start_server(f"{APP}:app", "gevent") as running:
        yield running


@pytest.mark.e2e
@pytest.mark.parametrize("mode", MODES)
def test_echo_over_gunicorn_gevent(server: t.Any, mode: str) -> None:
    seen = anyio.run(check, server.url, mode)
    assert strip(seen) == expected(mode)


@pytest.mark.e2e
@pytest.mark.parametrize("mode", MODES)
def test_echo_over_stdio(mode: str) -> None:
    parameters = flask_mcp_stdio(APP)
    seen = anyio.run(check, parameters, mode)
    assert strip(seen) == expected(mode)


# -- unit ---------------------------------------------------------------------------------


class Echo(Extension):
    id = "com.example/echo"

    def capability(self) -> dict[str, t.Any]:
        return {"version": 1}

    @Extension.method("echo/ping")
    def ping(self, params: dict[str, t.Any], ctx: Context) -> dict[str, t.Any]:
        return {"pong": params.get("x"), "declared": ctx.client_supports(self.id)}


class HandshakeOnly(Extension):
    id = "com.example/old"

    @Extension.method("old/ping", eras=["handshake"])
    def ping(self, params: dict[str, t.Any], ctx: Context) -> dict[str, t.Any]:
        return {}


def test_an_identifier_must_have_a_vendor_prefix() -> None:
    with pytest.raises(TypeError, match="'{vendor-prefix}/{name}'"):

        class Bad(Extension):
            id = "echo"


@pytest.mark.parametrize(
    "identifier",
    ["com.example/echo-", "com.example/echo.", "com.example-/echo", "com.-x/echo", "com.1x/echo"],
)
def test_an_identifier_follows_the_meta_key_rules(identifier: str) -> None:
    # 2026-07-28 basic/versioning: extension identifiers MUST follow the _meta key naming
    # rules: labels start with a letter and end with a letter or digit, and the name
    # begins and ends with an alphanumeric character.
    with pytest.raises(TypeError, match="is not an extension identifier"):
        type("Bad", (Extension,), {"id": identifier})


def test_an_identifier_may_use_capitals_and_inner_punctuation() -> None:
    for identifier in ("com.Example/echo", "io.example-2.x/Echo_v2.1", "a.b/c"):
        assert type("Good", (Extension,), {"id": identifier}).id == identifier


def test_two_claims_name_both() -> None:
    mcp = MCP(name="s", version="1")
    mcp.add_extension(Echo())
    with pytest.raises(ValueError, match="Echo and Echo"):
        mcp.add_extension(Echo())

    class Other(Extension):
        id = "com.example/other"

        @Extension.method("echo/ping")
        def ping(self, params: dict[str, t.Any], ctx: Context) -> dict[str, t.Any]:
            return {}

    with pytest.raises(ValueError, match="com.example/echo and com.example/other"):
        mcp.add_extension(Other())

    class Core(Extension):
        id = "com.example/core"

        @Extension.method("tools/list")
        def tools(self, params: dict[str, t.Any], ctx: Context) -> dict[str, t.Any]:
            return {}

    with pytest.raises(ValueError, match="serves already"):
        mcp.add_extension(Core())

    class Opt(Extension):
        id = "com.example/opt"
        tool_options = ("badge",)

    class Opt2(Extension):
        id = "com.example/opt2"
        tool_options = ("badge",)

    mcp.add_extension(Opt())
    with pytest.raises(ValueError, match="com.example/opt and com.example/opt2"):
        mcp.add_extension(Opt2())
    with pytest.raises(KeyError, match="mcp.add_extension"):
        mcp.extension("com.example/nope")
    assert isinstance(mcp.extension("com.example/echo"), Echo)


def test_an_unknown_tool_option_names_the_known_ones() -> None:
    mcp = MCP(name="s", version="1")

    class Opt(Extension):
        id = "com.example/opt"
        tool_options = ("badge",)

    mcp.add_extension(Opt())
    with pytest.raises(TypeError, match=r"'bagde'.*'badge' \(com.example/opt\)"):

        @mcp.tool(bagde="x")
        def f() -> str:
            return ""


def test_setup_and_init_app_hooks_run() -> None:
    calls: list[str] = []

    class Hooked(Extension):
        id = "com.example/hooked"

        def setup(self, mcp: t.Any) -> None:
            calls.append("setup")

        def init_app(self, app: Flask, mcp: t.Any) -> None:
            calls.append(f"init_app {app.name}")

    mcp = MCP(name="s", version="1")
    first = Flask("first")
    mcp.init_app(first)
    mcp.add_extension(Hooked())
    second = Flask("second")
    mcp.init_app(second)
    assert calls == ["setup", "init_app first", "init_app second"]

    # A setup (or an init_app for an app registered already) that raises adds nothing:
    # not listed, not advertised, its methods and tool options unknown; fixed, it is added.
    class Refused(Extension):
        id = "com.example/refused"
        tool_options = ("stamp",)
        fail_in = "setup"

        def capability(self) -> dict[str, t.Any]:
            return {"version": 1}

        @Extension.method("refused/ping")
        def ping(self, params: dict[str, t.Any], ctx: Context) -> dict[str, t.Any]:
            return {}

        def setup(self, mcp: t.Any) -> None:
            @mcp.tool(stamp="x")  # its own options are accepted in setup
            def stamped() -> str:
                return ""

            mcp.remove_tool("stamped")
            if self.fail_in == "setup":
                raise ValueError("refused")

        def init_app(self, app: Flask, mcp: t.Any) -> None:
            if self.fail_in == "init_app":
                raise ValueError("refused")

    for fail_in in ("setup", "init_app", None):
        refused = Refused()
        refused.fail_in = fail_in
        if fail_in is None:
            mcp.add_extension(refused)
            break
        with pytest.raises(ValueError, match="refused"):
            mcp.add_extension(refused)
        assert Refused.id not in mcp.extensions.by_id
        assert "refused/ping" not in mcp.dispatcher.methods
        with pytest.raises(TypeError, match="unknown option"):
            mcp.tool(stamp="y")(lambda: "")
        for version in ("2025-11-25", "2026-07-28"):
            with MCPTestClient(first, protocol_version=version) as client:
                assert Refused.id not in client.server_result["capabilities"]["extensions"]
                with pytest.raises(Exception, match="-32601|not found"):
                    client.request("refused/ping")
    assert mcp.extension(Refused.id) is refused
    with MCPTestClient(first) as client:
        assert client.request("refused/ping") == {}


def test_refused_init_app_takes_back_what_setup_declared() -> None:
    # setup succeeded, then init_app refused an app registered already: what setup
    # declared on the server (records, completions, middleware, hooks) goes too.
    class Declaring(Extension):
        id = "com.example/declaring"
        refuse = True

        def setup(self, mcp: t.Any) -> None:
            mcp.add_tool(lambda: "", name="declared_tool")
            mcp.add_resource(lambda: "", "declared://static", name="static")
            mcp.add_resource(lambda x: x, "declared://items/{x}", name="items")
            mcp.add_prompt(lambda: "", name="declared_prompt")
            mcp.completion("prompt", "declared_prompt")(lambda argument, value, context: [])
            mcp.middleware(lambda call, call_next: call_next(call))
            mcp.on_roots_changed(lambda session_id: None)
            mcp.registry.removal_checks.append(self.keep)
            mcp.registry.enable_checks.append(lambda enabled, moving: None)
            mcp.dispatcher.core.refuse_arguments = lambda tool_call, refused: {}

        def keep(self, kind: str, key: str) -> None:
            if key.startswith("declared"):
                raise ValueError("declared by the extension")

        def init_app(self, app: Flask, mcp: t.Any) -> None:
            if self.refuse:
                raise ValueError("refused")

    mcp = MCP(name="s", version="1")
    app = Flask("declaring")
    mcp.init_app(app)
    registry = mcp.registry

    def server() -> t.Any:
        return (
            {kind: sorted(registry._table(kind)) for kind in ("tools", "resources")},
            sorted(registry.templates),
            sorted(registry.prompts),
            dict(registry.completions),
            sorted(registry.removed),
            list(mcp.dispatcher.middleware.items),
            list(mcp.roots_changed_hooks),
            list(registry.removal_checks),
            list(registry.enable_checks),
            mcp.dispatcher.core.refuse_arguments,
            [mcp.capabilities(era) for era in ("handshake", "stateless")],
        )

    before = server()
    with pytest.raises(ValueError, match="refused"):
        mcp.add_extension(Declaring())
    assert server() == before
    fixed = Declaring()
    fixed.refuse = False
    assert mcp.add_extension(fixed) is fixed  # nothing of the refused one is in the way
    with MCPTestClient(app) as client:
        assert [tool["name"] for tool in client.request("tools/list")["tools"]] == ["declared_tool"]


def test_a_refused_app_leaves_nothing_on_the_other_apps() -> None:
    # check_app refuses an app before any init_app adds to one: add_extension leaves
    # no route on the apps it accepted, MCP.init_app none of an extension added before.
    class Routed(Extension):
        id = "com.example/routed"

        def check_app(self, app: Flask, mcp: t.Any) -> None:
            if app.config.get("REFUSE_ROUTED"):
                raise ValueError(f"Routed refuses {app.name}")

        def init_app(self, app: Flask, mcp: t.Any) -> None:
            app.add_url_rule("/routed", "routed", lambda: "routed")

    def rules(app: Flask) -> list[str]:
        return sorted(rule.rule for rule in app.url_map.iter_rules())

    mcp = MCP(name="com.example/s", version="1", description="A server.")
    first, second = Flask("first"), Flask("second")
    first.config["MCP_SERVER_CARD"] = True  # the Server Card comes before Routed
    second.config["REFUSE_ROUTED"] = True
    mcp.init_app(first)
    mcp.init_app(second)
    before = rules(first)
    with pytest.raises(ValueError, match="Routed refuses second"):
        mcp.add_extension(Routed())
    assert rules(first) == before
    second.config["REFUSE_ROUTED"] = False
    mcp.add_extension(Routed())  # fixed, added again: its routes on both apps
    assert "/routed" in rules(first) and "/routed" in rules(second)

    # An app Routed refuses keeps no Server Card route nor MCP Apps template helper
    # (their init_app runs once every check passed), and is accepted once fixed.
    third = Flask("third")
    third.config.update(MCP_SERVER_CARD=True, REFUSE_ROUTED=True)
    with pytest.raises(ValueError, match="Routed refuses third"):
        mcp.init_app(third)
    assert rules(third) == ["/static/<path:filename>"]
    assert "mcp_app_script" not in third.jinja_env.globals
    third.config["REFUSE_ROUTED"] = False
    mcp.init_app(third)
    assert {"/mcp/server-card", "/routed"} <= set(rules(third))


class Badges(Extension):
    """Serves a badge resource for each badge a blueprint carries (``bp.carry``)."""

    id = "com.example/badges"

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, list[str]]] = []

    def register_blueprint(
        self, mcp: t.Any, blueprint: MCPBlueprint, prefix: str, uri_prefix: str
    ) -> t.Callable[[], None] | None:
        # called before the blueprint's own tools are added
        self.seen.append((prefix, uri_prefix, sorted(mcp.registry.tools)))
        added = []
        for badge in blueprint.carried.get(self.id, ()):
            uri = f"badge://{uri_prefix}/{badge}"
            mcp.add_resource(lambda badge=badge: badge, uri, name=prefix + badge)
            added.append(uri)

        def undo() -> None:
            for uri in added:
                mcp.remove_resource(uri)

        return undo


def badge_blueprint() -> MCPBlueprint:
    bp = MCPBlueprint("shop", __name__)
    bp.carry(Badges.id, "gold")

    @bp.tool()
    def buy() -> str:
        """Buy."""
        return "bought"

    return bp


def resources_of(mcp: MCP) -> list[str]:
    return sorted([*mcp.registry.resources, *mcp.registry.templates])


def test_an_extension_declares_what_a_blueprint_carries_under_its_prefixes() -> None:
    mcp = MCP(name="s", version="1")
    badges = mcp.add_extension(Badges())
    bp = badge_blueprint()
    mcp.register_blueprint(bp, prefix="shop_")
    mcp.register_blueprint(bp, prefix="store_", uri_prefix="")
    assert badges.seen == [("shop_", "shop", []), ("store_", "", ["shop_buy"])]
    assert resources_of(mcp) == ["badge:///gold", "badge://shop/gold"]
    assert sorted(mcp.registry.tools) == ["shop_buy", "store_buy"]
    with pytest.raises(RuntimeError, match="already registered"):
        bp.carry(Badges.id, "silver")


def test_a_failed_registration_undoes_what_the_extensions_added() -> None:
    mcp = MCP(name="s", version="1")
    badges = mcp.add_extension(Badges())

    class Broken(Extension):
        id = "com.example/broken"

        def register_blueprint(
            self, mcp: t.Any, blueprint: MCPBlueprint, prefix: str, uri_prefix: str
        ) -> t.Callable[[], None] | None:
            raise ValueError("broken on purpose")

    @mcp.tool()
    def shop_buy() -> str:
        """Taken: the blueprint's tool clashes with it."""
        return ""

    with pytest.raises(ValueError, match="'shop_buy' is already registered"):
        mcp.register_blueprint(badge_blueprint(), prefix="shop_")
    assert len(badges.seen) == 1  # the hook ran, and its badge was taken away again
    assert resources_of(mcp) == [] and sorted(mcp.registry.tools) == ["shop_buy"]
    mcp.add_extension(Broken())  # added after Badges: it runs after it
    with pytest.raises(ValueError, match="broken on purpose"):
        mcp.register_blueprint(badge_blueprint(), prefix="store_")
    assert len(badges.seen) == 2
    assert resources_of(mcp) == [] and sorted(mcp.registry.tools) == ["shop_buy"]


def test_a_blueprint_carrying_for_an_extension_not_added_is_refused() -> None:
    mcp = MCP(name="s", version="1")
    with pytest.raises(LookupError, match="'com.example/badges', which this server has not"):
        mcp.register_blueprint(badge_blueprint(), prefix="shop_")
    assert not mcp.registry.tools


def test_methods_in_both_eras_and_era_limits() -> None:
    mcp = MCP(name="s", version="1")
    mcp.add_extension(Echo())
    mcp.add_extension(HandshakeOnly())
    app = Flask(__name__)
    mcp.init_app(app)
    with MCPTestClient(app) as client:
        assert client.request("echo/ping", {"x": 1}) == {"pong": 1, "declared": False}
        assert client.request("old/ping") == {}
    with MCPTestClient(app, protocol_version="2026-07-28") as client:
        result = client.request("echo/ping", {"x": 2})
        assert (result["pong"], result["declared"]) == (2, False)
        with pytest.raises(Exception, match="-32601|Method not found"):
            client.request("old/ping")


class ByEra(Extension):
    id = "com.example/by-era"

    def capability(self, era: str) -> dict[str, t.Any] | None:
        return {"era": era}


class WasCore(Extension):
    id = "com.example/was-core"
    handshake_capability = "wasCore"

    def capability(self, era: str = "handshake") -> dict[str, t.Any] | None:
        return {"v": 2} if era == "stateless" else {"v": 1}


def test_a_capability_may_take_the_era() -> None:
    mcp = MCP(name="s", version="1")
    mcp.add_extension(Echo())  # capability(self): the same in both eras
    mcp.add_extension(ByEra())
    mcp.add_extension(WasCore())
    handshake = mcp.capabilities()
    assert handshake["extensions"] == {
        "com.example/echo": {"version": 1},
        "com.example/by-era": {"era": "handshake"},
    }
    assert handshake["wasCore"] == {"v": 1}
    stateless = mcp.capabilities("stateless")
    assert stateless["extensions"] == {
        "com.example/echo": {"version": 1},
        "com.example/by-era": {"era": "stateless"},
        "com.example/was-core": {"v": 2},
    }
    assert "wasCore" not in stateless


def test_tasks_capability_comes_from_the_extension_in_each_era() -> None:
    mcp = MCP(name="s", version="1")
    assert "tasks" not in mcp.capabilities()
    assert "extensions" not in mcp.capabilities("stateless")

    @mcp.tool(task="optional")
    def slow() -> str:
        return "done"

    assert mcp.extension("io.modelcontextprotocol/tasks").capability("stateless") == {}
    assert list(mcp.capabilities()) == ["logging", "tools", "tasks"]
    assert mcp.capabilities()["tasks"] == {
        "list": {},
        "cancel": {},
        "requests": {"tools": {"call": {}}},
    }
    assert mcp.capabilities("stateless")["extensions"] == {"io.modelcontextprotocol/tasks": {}}


class Gate(Extension):
    """Refuses the tool ``closed`` with a ``ToolError``."""

    id = "com.example/gate"

    def intercept_tool_call(self, tool_call: t.Any, call_next: t.Any) -> dict[str, t.Any]:
        if tool_call.tool.name == "closed":
            raise ToolError("closed today")
        return t.cast(dict[str, t.Any], call_next(tool_call))


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize("with_middleware", [False, True])
def test_a_tool_error_of_an_interceptor_is_an_is_error_result(
    version: str, with_middleware: bool
) -> None:
    """With or without middleware, in the request or in a task's run.

    Without middleware it was -32603 "Internal error"; registering any middleware
    (``PrometheusMetrics``) turned it into the ``isError`` result, and in a task's
    run it was a failed task.
    """
    mcp = MCP(name="s", version="1")
    mcp.add_extension(Gate())
    if with_middleware:
        mcp.middleware(lambda call, call_next: call_next(call))

    @mcp.tool(task="optional")
    def closed() -> str:
        return "open"

    app = Flask(__name__)
    mcp.init_app(app)
    refused = {"content": [{"type": "text", "text": "closed today"}], "isError": True}
    with MCPTestClient(app, protocol_version=version) as client:
        result = client.call_tool("closed", {})
        assert {k: v for k, v in result.items() if k in refused} == refused
        task = client.call_tool_as_task("closed", {})
        done = client.wait_for_task(task)
        assert done["status"] in ("completed", "failed")
        answer = done.get("result") or client.task_result(task)
        assert {k: v for k, v in answer.items() if k in refused} == refused


def test_a_refused_extension_puts_back_what_its_setup_replaced_or_disabled() -> None:
    # setup wrapped a user's tool (removed it, declared its own under the name), removed
    # a prompt and disabled a resource, then init_app refused: the user's records are
    # back, the same objects in the same order and state, and the wrapper is gone.
    class Wrapping(Extension):
        id = "com.example/wrapping"

        def setup(self, mcp: t.Any) -> None:
            mcp.remove_tool("first")
            mcp.add_tool(lambda: "wrapped", name="first")
            mcp.remove_prompt("greet")
            mcp.disable("doc://readme")

        def init_app(self, app: Flask, mcp: t.Any) -> None:
            raise ValueError("refused")

    mcp = MCP(name="s", version="1")
    mcp.add_tool(lambda: "first", name="first")
    mcp.add_tool(lambda: "second", name="second")
    mcp.add_prompt(lambda: "hello", name="greet")
    mcp.add_resource(lambda: "read me", "doc://readme", name="readme")
    app = Flask("wrapping")
    mcp.init_app(app)
    registry = mcp.registry
    before = [
        (dict(registry._table(kind)), dict(registry.disabled[kind]))
        for kind in ("tools", "resources", "prompts")
    ]
    with pytest.raises(ValueError, match="refused"):
        mcp.add_extension(Wrapping())
    after = [
        (dict(registry._table(kind)), dict(registry.disabled[kind]))
        for kind in ("tools", "resources", "prompts")
    ]
    assert [[list(table.items()) for table in pair] for pair in after] == [
        [list(table.items()) for table in pair] for pair in before
    ]
    with MCPTestClient(app) as client:
        assert [tool["name"] for tool in client.request("tools/list")["tools"]] == [
            "first",
            "second",
        ]
        result = client.request("tools/call", {"name": "first", "arguments": {}})
        assert result["content"][0]["text"] == "first"
        assert [p["name"] for p in client.request("prompts/list")["prompts"]] == ["greet"]
        assert client.request("resources/read", {"uri": "doc://readme"})


def test_a_refused_extension_leaves_what_another_thread_declared_meanwhile() -> None:
    # While a slow setup runs, another thread adds a tool and a middleware (at runtime,
    # or a second add_extension); then init_app refuses: the undo takes back what the
    # setup declared, not the other thread's. The other thread's changes either wait
    # for add_extension (a probe around the server's lock tells setup so) or were made.
    in_setup, moved = threading.Event(), threading.Event()

    class Slow(Extension):
        id = "com.example/slow"

        def setup(self, mcp: t.Any) -> None:
            mcp.add_tool(lambda: "", name="slow_tool")
            in_setup.set()
            moved.wait(10)  # the other thread's changes are made, or waiting

        def init_app(self, app: Flask, mcp: t.Any) -> None:
            raise ValueError("refused")

    class Probe:
        """The server's lock, telling ``moved`` when another thread would wait for it."""

        def __init__(self, lock: t.Any) -> None:
            self.lock = lock

        def __enter__(self) -> None:
            if not self.lock.acquire(blocking=False):
                moved.set()
                self.lock.acquire()

        def __exit__(self, *exc: object) -> None:
            self.lock.release()

    def runtime_middleware(call: t.Any, call_next: t.Any) -> t.Any:
        return call_next(call)

    mcp = MCP(name="s", version="1")
    app = Flask("slow")
    mcp.init_app(app)
    mcp.registry.changing = Probe(getattr(mcp.registry, "changing", threading.RLock()))

    def other() -> None:
        in_setup.wait(10)
        mcp.add_tool(lambda: "", name="runtime_tool")
        mcp.middleware(runtime_middleware)
        moved.set()

    thread = threading.Thread(target=other)
    thread.start()
    with pytest.raises(ValueError, match="refused"):
        mcp.add_extension(Slow())
    thread.join(10)
    assert not thread.is_alive()
    assert sorted(mcp.registry.tools) == ["runtime_tool"]
    assert runtime_middleware in mcp.dispatcher.middleware.items
