"""Which context handlers run in: one request environment with or without ``Context``.

Every handler (in the view or spawned, both eras, MRTR retries included) sees the
request, ``g``, the session and Flask-Login's ``current_user`` of the request
that carries its call; ``Context`` is found by class; ``current_context()``;
``async def`` handlers run through ``app.ensure_sync``; generators are refused.
"""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
import types
import typing as t

import pytest
from flask import Flask
from flask import g
from flask import request
from flask import session
from flask_login import LoginManager
from flask_login import UserMixin
from flask_login import current_user
from wire import Wire

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import current_context
from flask_mcp.server.handlers import context_parameter
from flask_mcp.testing import MCPTestClient

ASK = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class User(UserMixin):
    def __init__(self, name: str) -> None:
        self.id = name


def facts() -> dict[str, t.Any]:
    """What a handler sees of the request it serves."""
    return {
        "g.user": g.get("user"),
        "header": request.headers.get("X-User"),
        "method": request.method,
        "path": request.path,
        "args": request.args.get("tenant"),
        "remote_addr": request.remote_addr,
        "session": session.get("user"),
        "current_user": current_user.get_id() if current_user.is_authenticated else None,
    }


class Recorder:
    """What the app's hooks saw."""

    def __init__(self) -> None:
        self.loads: list[str | None] = []
        self.teardowns: list[tuple[t.Any, t.Any]] = []


def make_app(mcp: MCP, recorder: Recorder) -> Flask:
    """An app whose before_request sets g.user and the session from X-User."""
    app = Flask("environment_test")
    app.config.update(TESTING=True, SECRET_KEY="environment-secret")
    login = LoginManager(app)

    @login.request_loader
    def load(req: t.Any) -> User | None:
        name = req.headers.get("X-User")
        recorder.loads.append(name)
        return User(name) if name else None

    @app.before_request
    def identify() -> None:
        g.user = request.headers.get("X-User")
        if current_user.is_authenticated:  # loads the user into g once
            session["user"] = g.user

    @app.teardown_request
    def teardown(exc: BaseException | None) -> None:
        recorder.teardowns.append((g.get("user"), g.get("opened")))

    mcp.init_app(app)
    return app


def build_server() -> MCP:
    mcp = MCP(name="environment", version="1.0.0")

    @mcp.tool()
    def inline_facts() -> str:
        """No Context: runs in the view."""
        return json.dumps(facts())

    @mcp.tool()
    def ctx_facts(ctx: Context) -> str:
        """A Context: runs in a greenlet or thread of its own."""
        ctx.progress(1, 2)
        g.opened = "in-handler"
        return json.dumps(facts())

    @mcp.tool()
    def ask_facts(ctx: Context) -> str:
        """Elicits: on 2026-07-28 the retry runs it again, in the retry's request."""
        name = ctx.elicit("Name?", ASK)["content"]["name"]
        return json.dumps({**facts(), "name": name})

    @mcp.resource("env://static")
    def static_facts() -> str:
        return json.dumps(facts())

    @mcp.resource("env://by/{who}")
    def template_facts(who: str) -> str:
        return json.dumps({**facts(), "who": who})

    @mcp.prompt()
    def prompt_facts(ctx: Context) -> str:
        return json.dumps(facts())

    @mcp.prompt()
    def topic(name: str) -> str:
        return name

    @mcp.completion("prompt", "topic")
    def complete_topic(argument: str, value: str, context: dict[str, str]) -> list[str]:
        return [json.dumps(facts())]

    @mcp.completion("prompt", "topic", "other")
    def complete_with_context(
        argument: str, value: str, context: dict[str, str], ctx: Context
    ) -> list[str]:
        """Declares a Context: it gets one, as a tool would."""
        ctx.info("completing")
        return [type(ctx).__name__, json.dumps([current_context() is ctx, ctx.request_id])]

    @mcp.tool()
    def inline_context() -> str:
        """current_context() without a Context parameter: facts, no messages."""
        ctx = current_context()
        refused = []
        for call in (
            lambda: ctx.progress(1),
            lambda: ctx.info("x"),
            lambda: ctx.elicit("Name?", ASK),
            lambda: ctx.create_message([], 10),
            lambda: ctx.list_roots(),
        ):
            try:
                call()
            except RuntimeError as exc:
                refused.append(str(exc))
        return json.dumps({
            "request_id": ctx.request_id,
            "session_id": ctx.session_id,
            "client": ctx.client_info.get("name"),
            "version": ctx.protocol_version,
            "cancelled": ctx.cancelled,
            "auth": ctx.auth,
            "refused": refused,
        })  # fmt: skip

    @mcp.resource("env://context/{x}")
    def template_context(x: str) -> str:
        """Spawned (a template), but declares no Context: current_context() sends nothing."""
        ctx = current_context()
        try:
            ctx.log("info", x)
        except RuntimeError as exc:
            return json.dumps([ctx.request_id, ctx.cancelled, str(exc)])
        return "sent"

    @mcp.tool()
    def same_context(ctx: Context) -> str:
        return json.dumps([current_context() is ctx, ctx.request_id])

    @mcp.tool()
    async def async_add(a: int, b: int) -> int:
        await asyncio.sleep(0)
        return a + b

    @mcp.tool()
    async def async_ctx(ctx: Context) -> str:
        await asyncio.sleep(0)
        ctx.progress(1)
        return json.dumps({**facts(), "same": current_context() is ctx})

    @mcp.resource("env://async/{name}")
    async def async_resource(name: str) -> str:
        await asyncio.sleep(0)
        return f"async {name}"

    @mcp.prompt()
    async def async_prompt(name: str) -> str:
        await asyncio.sleep(0)
        return f"async {name}"

    @mcp.completion("prompt", "async_prompt")
    async def complete_async(argument: str, value: str, context: dict[str, str]) -> list[str]:
        await asyncio.sleep(0)
        return [value + "1", value + "2"]

    return mcp


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def env_app(recorder: Recorder) -> Flask:
    return make_app(build_server(), recorder)


def UserClient(app: Flask, **options: t.Any) -> MCPTestClient:
    """The test client, sending the X-User header of the user "ada"."""
    return MCPTestClient(app, headers={"X-User": "ada"}, **options)


EXPECTED = {
    "g.user": "ada",
    "header": "ada",
    "method": "POST",
    "path": "/mcp",
    "args": "acme",
    "remote_addr": "127.0.0.1",
    "session": "ada",
    "current_user": "ada",
}


def text(result: dict[str, t.Any]) -> t.Any:
    assert not result.get("isError"), result
    return json.loads(result["content"][0]["text"])


# -- one environment, handshake era -------------------------------------------------


def test_handlers_with_and_without_context_see_the_same_request(env_app: Flask) -> None:
    with UserClient(env_app, path="/mcp?tenant=acme", elicitation=lambda p: {}) as client:
        assert text(client.call_tool("inline_facts")) == EXPECTED
        assert text(client.call_tool("ctx_facts")) == EXPECTED
        assert json.loads(client.read_resource("env://static")[0]["text"]) == EXPECTED
        template = json.loads(client.read_resource("env://by/bo")[0]["text"])
        assert template == {**EXPECTED, "who": "bo"}
        prompt = client.get_prompt("prompt_facts")["messages"][0]["content"]["text"]
        assert json.loads(prompt) == EXPECTED
        completion = client.complete({"type": "ref/prompt", "name": "topic"}, "name", "")
        assert json.loads(completion["values"][0]) == EXPECTED


def test_spawned_handler_reuses_the_loaded_user_and_tears_down_its_copy(
    env_app: Flask, recorder: Recorder
) -> None:
    with UserClient(env_app, path="/mcp?tenant=acme") as client:
        recorder.loads.clear()
        recorder.teardowns.clear()
        assert text(client.call_tool("ctx_facts"))["current_user"] == "ada"
        # current_user came from the copied g (loaded in before_request), not loaded again.
        assert recorder.loads == ["ada"]
    # Both the view's context and the handler's copy were torn down; the copy's g is
    # a shallow copy: what the handler set stays in it.
    assert ("ada", "in-handler") in recorder.teardowns
    assert ("ada", None) in recorder.teardowns


# -- one environment, 2026-07-28 ----------------------------------------------------


def call_2026(wire: Wire, user: str, name: str, **params: t.Any) -> t.Any:
    status, message, _ = wire.call(
        "tools/call", {"name": name, "arguments": {}, **params}, headers={"X-User": user}
    )
    assert status == 200, message
    return message["result"]


def test_stateless_handlers_see_the_request(env_app: Flask) -> None:
    wire = Wire(env_app)
    expected = {**EXPECTED, "args": None, "header": "bo", "g.user": "bo"}
    expected.update(session="bo", current_user="bo")
    assert text(call_2026(wire, "bo", "inline_facts")) == expected
    assert text(call_2026(wire, "bo", "ctx_facts")) == expected


def test_mrtr_retry_runs_in_the_retry_request(env_app: Flask) -> None:
    wire = Wire(env_app)
    first = call_2026(wire, "bo", "ask_facts")
    assert first["resultType"] == "input_required"
    answer = {"action": "accept", "content": {"name": "Ada"}}
    retry = call_2026(
        wire, "cy", "ask_facts",
        inputResponses={"elicitation-1": answer}, requestState=first["requestState"],
    )  # fmt: skip
    seen = text(retry)
    assert seen["name"] == "Ada"
    assert (seen["g.user"], seen["header"], seen["current_user"]) == ("cy", "cy", "cy")


# -- current_context() --------------------------------------------------------------


def test_current_context_outside_a_handler_says_where_it_works() -> None:
    with pytest.raises(RuntimeError, match="only while a Flask-MCP handler"):
        current_context()


def test_current_context_is_the_declared_context(env_app: Flask) -> None:
    with UserClient(env_app) as client:
        same, request_id = text(client.call_tool("same_context"))
    assert same is True and isinstance(request_id, int)


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_completion_handler_gets_the_context_it_declares(env_app: Flask, version: str) -> None:
    """Its ``ctx`` was ``None``: completions always ran in the view, without a context."""
    with UserClient(env_app, protocol_version=version, log_level="info") as client:
        ref = {"type": "ref/prompt", "name": "topic"}
        kind, facts = client.complete(ref, "other", "")["values"]
        notes = [n["params"]["data"] for n in client.notifications]
    assert kind == "Context" and json.loads(facts)[0] is True
    assert isinstance(json.loads(facts)[1], int) and notes == ["completing"]


def test_current_context_without_a_declared_context(env_app: Flask) -> None:
    with UserClient(env_app) as client:
        seen = text(client.call_tool("inline_context"))
        session_id = client.session_id
    assert seen["session_id"] == session_id and isinstance(seen["request_id"], int)
    assert seen["client"] == "flask-mcp-test-client"
    assert (seen["version"], seen["cancelled"], seen["auth"]) == ("2025-11-25", False, None)
    assert len(seen["refused"]) == 5
    assert all("declare" in m.lower() and "ctx: Context" in m for m in seen["refused"])
    assert "tool 'inline_context'" in seen["refused"][0]

    with UserClient(env_app) as client:
        request_id, cancelled, refused = json.loads(
            client.read_resource("env://context/a")[0]["text"]
        )
    assert isinstance(request_id, int) and cancelled is False
    assert "resource 'env://context/a'" in refused and "ctx.log()" in refused

    stateless = text(call_2026(Wire(env_app), "bo", "inline_context"))
    assert stateless["session_id"] is None and stateless["version"] == "2026-07-28"
    assert stateless["client"] == "test" and len(stateless["refused"]) == 5


# -- async def handlers ------------------------------------------------------------


def test_async_handlers_run_through_ensure_sync(env_app: Flask) -> None:
    with UserClient(env_app, path="/mcp?tenant=acme") as client:
        result = client.call_tool("async_add", {"a": 2, "b": 40})
        assert result["structuredContent"] == {"result": 42}
        assert text(client.call_tool("async_ctx")) == {**EXPECTED, "same": True}
        assert client.read_resource("env://async/x")[0]["text"] == "async x"
        prompt = client.get_prompt("async_prompt", {"name": "y"})
        assert prompt["messages"][0]["content"]["text"] == "async y"
        completion = client.complete({"type": "ref/prompt", "name": "async_prompt"}, "name", "v")
        assert completion["values"] == ["v1", "v2"]
    assert text(call_2026(Wire(env_app), "bo", "async_ctx"))["same"] is True


def test_async_handler_without_asgiref_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "asgiref.sync", None)
    mcp = MCP(name="x", version="1")

    async def fetch() -> str:
        return "x"

    with pytest.raises(RuntimeError, match=r'pip install "flask\[async\]"'):
        mcp.add_tool(fetch)
    with pytest.raises(RuntimeError, match="async def"):
        mcp.add_resource(fetch, "x://y")
    assert not mcp.registry.tools and not mcp.registry.resources


def test_generator_handlers_are_refused() -> None:
    mcp = MCP(name="x", version="1")

    def numbers() -> t.Iterator[int]:
        yield 1

    async def stream() -> t.AsyncIterator[int]:
        yield 1

    with pytest.raises(TypeError, match=r"generator function.*return the whole result"):
        mcp.add_tool(numbers)
    with pytest.raises(TypeError, match="generator function"):
        mcp.add_tool(stream)
    with pytest.raises(TypeError, match="return the whole list of messages"):
        mcp.add_prompt(numbers)
    with pytest.raises(TypeError, match="return the whole contents"):
        mcp.add_resource(stream, "x://y")
    with pytest.raises(TypeError, match="return the whole list of values"):
        mcp.completion("prompt", "p")(numbers)
    assert not mcp.registry.tools and not mcp.registry.prompts and not mcp.registry.completions


# -- Context found by class ---------------------------------------------------------


@pytest.fixture
def module_from(monkeypatch: pytest.MonkeyPatch) -> t.Callable[[str], types.ModuleType]:
    """Make a module from source: its own globals, as an app module would have."""

    def make(source: str) -> types.ModuleType:
        module = types.ModuleType("user_module")
        monkeypatch.setitem(sys.modules, module.__name__, module)  # dataclasses look it up
        exec(compile(textwrap.dedent(source), "user_module.py", "exec"), module.__dict__)
        return module

    return make


@pytest.mark.parametrize("future", ["from __future__ import annotations", ""])
def test_a_users_own_class_named_context_is_an_argument(future: str, module_from: t.Any) -> None:
    user = module_from(f"""
        {future}
        import dataclasses

        @dataclasses.dataclass
        class Context:
            city: str

        def weather(ctx: Context) -> str:
            return ctx.city
    """)
    assert context_parameter(user.weather) is None
    mcp = MCP(name="x", version="1")
    tool = mcp.add_tool(user.weather)
    assert tool.context_param is None
    assert tool.input.schema["required"] == ["ctx"]
    assert tool.input.schema["properties"]["ctx"]["properties"] == {"city": {"type": "string"}}


@pytest.mark.parametrize("future", ["from __future__ import annotations", ""])
def test_context_annotations_found_by_class(future: str, module_from: t.Any) -> None:
    user = module_from(f"""
        {future}
        import typing as t
        from flask_mcp import Context as MCPContext

        class Mine(MCPContext):
            pass

        def aliased(x: int, c: MCPContext) -> None: ...
        def sub(c: Mine) -> None: ...
        def optional(c: t.Optional[MCPContext] = None) -> None: ...
        def union(c: MCPContext | None = None) -> None: ...
        def annotated(c: t.Annotated[MCPContext, "meta"]) -> None: ...
        def nothing(c: int) -> None: ...
        def not_only_context(c: t.Union[MCPContext, int]) -> None: ...
    """)
    for name in ("aliased", "sub", "optional", "union", "annotated"):
        assert context_parameter(getattr(user, name)) == "c", name
    assert context_parameter(user.nothing) is None
    assert context_parameter(user.not_only_context) is None
    tool = MCP(name="x", version="1").add_tool(user.aliased)
    assert tool.context_param == "c" and list(tool.input.schema["properties"]) == ["x"]


def test_context_found_when_another_hint_cannot_be_resolved(module_from: t.Any) -> None:
    user = module_from("""
        from __future__ import annotations
        from flask_mcp import Context

        def prompt(topic: NotImportedAnywhere, ctx: Context) -> str:
            return topic
    """)
    assert context_parameter(user.prompt) == "ctx"
    # A prompt's annotations convert its argument strings, so an unresolvable one is refused.
    with pytest.raises(TypeError, match="Import the names used in annotations"):
        MCP(name="x", version="1").add_prompt(user.prompt)


def test_context_imported_inside_an_app_factory(module_from: t.Any) -> None:
    user = module_from("""
        from __future__ import annotations

        def create():
            from flask_mcp import Context

            def tool(n: int, ctx: Context) -> int:
                return n
            return tool
    """)
    assert context_parameter(user.create()) == "ctx"


def test_handlers_read_the_request_body_as_views_do() -> None:
    """request.get_json() gives the JSON-RPC message, with or without Context."""
    mcp = MCP(name="body", version="1")

    @mcp.tool()
    def plain() -> dict[str, t.Any]:
        return {"body": request.get_json()}

    @mcp.tool()
    def spawned(ctx: Context) -> dict[str, t.Any]:
        return {"body": request.get_json()}

    app = Flask(__name__)
    mcp.init_app(app)
    with MCPTestClient(app) as client:
        for name in ("plain", "spawned"):
            body = client.call_tool(name)["structuredContent"]["body"]
            assert body["method"] == "tools/call"
            assert body["params"]["name"] == name
