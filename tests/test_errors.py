"""Errors a Flask developer expects: ResourceNotFound, abort(), debug mode, clear refusals.

This module also serves its own app to gunicorn (``tests.test_errors:e2e_app``) for the
end-to-end test with the official ``mcp`` client.
"""

from __future__ import annotations

import json
import logging
import typing as t

import pytest
from flask import Flask
from flask import abort
from werkzeug.exceptions import NotFound
from wire import send_2026

import flask_mcp
from flask_mcp import MCP
from flask_mcp import ResourceNotFound
from flask_mcp.backends.memory import MemoryBackend
from flask_mcp.testing import MCPTestClient

V2026 = "2026-07-28"
USERS = {"7": {"name": "Ada"}}


def rpc_error(fn: t.Callable[..., t.Any], *args: t.Any) -> dict[str, t.Any]:
    """Call ``fn`` and return the JSON-RPC error the test client raised for it."""
    with pytest.raises(Exception) as info:
        fn(*args)
    exc = info.value
    error = getattr(exc, "error", None)
    if isinstance(error, dict):  # the test client's own error class
        return error
    assert isinstance(exc, flask_mcp.MCPError), exc
    return exc.to_error()


def make_server() -> MCP:
    mcp = MCP(name="errors", version="1.0.0")

    @mcp.resource("users://{user_id}")
    def user(user_id: str) -> dict[str, str]:
        """A user, or ResourceNotFound."""
        if user_id not in USERS:
            raise ResourceNotFound(f"no user has id {user_id}")
        return USERS[user_id]

    @mcp.resource("pages://{name}")
    def page(name: str) -> str:
        """A page, or flask.abort(404)."""
        if name == "plain":
            abort(404)
        if name == "raised":
            raise NotFound()
        if name == "secret":
            abort(403, "Only admins read this page.")
        if name == "down":
            abort(503, "The wiki is in maintenance.")
        if name == "other":
            raise ResourceNotFound(uri="pages://moved")
        abort(404, f"no page named {name}")

    @mcp.tool()
    def lookup(user_id: str) -> str:
        """Refuse with abort()."""
        if user_id == "admin":
            abort(403, "Only admins may look up the admin.")
        abort(404)

    @mcp.tool()
    def missing_resource() -> str:
        """Raise ResourceNotFound outside a resource read."""
        raise ResourceNotFound("the archive is gone", uri="archive://2020")

    @mcp.tool()
    def crash() -> str:
        """Fail unexpectedly."""
        raise KeyError("secret-detail")

    @mcp.prompt()
    def review(topic: str) -> str:
        """A prompt that aborts."""
        if topic == "down":
            abort(503, "Reviews are paused.")
        abort(404, f"no topic {topic}")

    @mcp.prompt()
    def plain(topic: str) -> str:
        """A prompt without completion."""
        return topic

    @mcp.completion("prompt", "review")
    def complete_topic(argument: str, value: str, context: dict[str, str]) -> list[str]:
        if value == "?":
            abort(400, "Type at least one letter.")
        return ["errors", "config"]

    return mcp


@pytest.fixture
def app() -> Flask:
    app = Flask(__name__)
    make_server().init_app(app)
    return app


@pytest.fixture
def client(app: Flask) -> t.Iterator[MCPTestClient]:
    with MCPTestClient(app) as client:
        yield client


# -- the 2026-07-28 wire, raw ------------------------------------------------------------


def post_2026(app: Flask, method: str, params: dict[str, t.Any]) -> tuple[int, dict[str, t.Any]]:
    """POST one 2026-07-28 request; return the HTTP status and the JSON-RPC answer."""
    response = send_2026(app.test_client(), method, params, caps={})
    assert response.mimetype == "application/json", response.get_data(as_text=True)
    return response.status_code, t.cast(dict[str, t.Any], response.get_json())


# -- ResourceNotFound ------------------------------------------------------------------


def test_resource_not_found_handshake_era(client: MCPTestClient) -> None:
    assert client.read_resource("users://7")[0]["text"] == '{"name":"Ada"}'
    error = rpc_error(client.read_resource, "users://8")
    assert error["code"] == -32002
    assert error["message"] == "Resource not found: users://8 (no user has id 8)"
    assert error["data"] == {"uri": "users://8"}


def test_resource_not_found_2026(app: Flask) -> None:
    status, answer = post_2026(app, "resources/read", {"uri": "users://8"})
    assert status == 200
    assert answer["error"]["code"] == -32602  # the spec's code at 2026-07-28
    assert answer["error"]["data"] == {"uri": "users://8"}
    assert "no user has id 8" in answer["error"]["message"]


def test_resource_not_found_may_name_another_uri(client: MCPTestClient) -> None:
    error = rpc_error(client.read_resource, "pages://other")
    assert (error["code"], error["data"]) == (-32002, {"uri": "pages://moved"})


def test_resource_not_found_in_a_tool_has_the_era_code(app: Flask, client: MCPTestClient) -> None:
    error = rpc_error(client.call_tool, "missing_resource")
    assert (error["code"], error["data"]) == (-32002, {"uri": "archive://2020"})
    assert error["message"] == "Resource not found: archive://2020 (the archive is gone)"
    _, answer = post_2026(app, "tools/call", {"name": "missing_resource", "arguments": {}})
    assert (answer["error"]["code"], answer["error"]["data"]) == (-32602, {"uri": "archive://2020"})


def test_resource_not_found_is_public() -> None:
    assert "ResourceNotFound" in flask_mcp.__all__
    assert issubclass(ResourceNotFound, flask_mcp.MCPError)


# -- HTTP exceptions (flask.abort) -------------------------------------------------------


@pytest.mark.parametrize("name", ["plain", "raised", "nothing"])
def test_abort_404_in_a_resource_is_resource_not_found(
    app: Flask, client: MCPTestClient, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    uri = f"pages://{name}"
    with caplog.at_level(logging.INFO, logger="flask_mcp"):
        error = rpc_error(client.read_resource, uri)
        _, answer = post_2026(app, "resources/read", {"uri": uri})
    assert (error["code"], error["data"]) == (-32002, {"uri": uri})
    assert (answer["error"]["code"], answer["error"]["data"]) == (-32602, {"uri": uri})
    if name == "nothing":  # the app's description is kept, Werkzeug's default one is not
        assert error["message"] == "Resource not found: pages://nothing (no page named nothing)"
    else:
        assert error["message"] == f"Resource not found: {uri}"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


def test_abort_in_a_tool_is_an_is_error_result(
    client: MCPTestClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="flask_mcp"):
        refused = client.call_tool("lookup", {"user_id": "admin"})
        missing = client.call_tool("lookup", {"user_id": "x"})
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == "403 Forbidden: Only admins may look up the admin."
    assert missing["isError"] is True and missing["content"][0]["text"] == "404 Not Found"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


def test_a_view_decorator_refusing_a_tool_says_what_happened(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``@login_required`` on a tool answers as a view does: a Response, named as a refusal."""
    from flask import Response
    from flask import jsonify
    from flask import redirect
    from flask_login import LoginManager
    from flask_login import login_required

    mcp = MCP(name="login", version="1.0.0")

    @mcp.tool()
    @login_required
    def orders() -> str:
        """The signed-in user's orders."""
        return "none"

    @mcp.tool()
    def teapot() -> t.Any:
        """Answer as a view would."""
        return jsonify({"error": "short and stout"}), 418

    @mcp.tool()
    def as_json() -> t.Any:
        """Return a view's answer by mistake."""
        return jsonify({"a": 1})

    @mcp.tool()
    def moved() -> t.Any:
        """Redirect elsewhere than a login page, as a view does after a POST."""
        return redirect("/orders")

    @mcp.tool()
    def busy() -> t.Any:
        """Answer as a rate-limited view does."""
        return jsonify({"error": "slow down"}), 429, {"Retry-After": "30"}

    @mcp.tool()
    def broken() -> t.Any:
        """Answer a 5xx as a view does."""
        return Response("Traceback: secret", 500)

    @mcp.tool()
    def forbidden() -> t.Any:
        """Answer a 403 as a view does."""
        return jsonify({"error": "admins only"}), 403

    @mcp.resource("shop://stats")
    def stats() -> t.Any:
        """Return a view's answer by mistake."""
        return jsonify({"a": 1})

    @mcp.prompt()
    def brew() -> t.Any:
        """Answer as a view would."""
        return jsonify({"error": "short and stout"}), 418

    app = Flask(__name__)
    app.secret_key = "test"
    manager = LoginManager(app)
    manager.login_view = "login"
    manager.user_loader(lambda user_id: None)
    app.add_url_rule("/login", "login", lambda: "sign in")
    mcp.init_app(app)
    with caplog.at_level(logging.INFO, logger="flask_mcp"), MCPTestClient(app) as client:
        refused = client.call_tool("orders")
        teapot = client.call_tool("teapot")
        mistaken = client.call_tool("as_json")
        texts = {
            name: client.call_tool(name)["content"][0]["text"]
            for name in ("moved", "busy", "broken", "forbidden")
        }
        with pytest.raises(flask_mcp.MCPError) as resource:
            client.read_resource("shop://stats")
        with pytest.raises(flask_mcp.MCPError) as prompt:
            client.get_prompt("brew")
    # a resource's or prompt's JSON-RPC error says the same (tests/test_e2e_views.py: redirect)
    assert (resource.value.code, resource.value.data) == (-32603, {"httpStatus": 200})
    assert resource.value.message == (
        "Resource 'shop://stats' returned a flask Response (HTTP 200 OK), which a resource"
        " cannot send: return the data itself (a dict, str, ...), not jsonify() or"
        " make_response()."
    )
    assert (prompt.value.code, prompt.value.data) == (-32602, {"httpStatus": 418})
    assert prompt.value.message == (
        "Prompt 'brew' answered as a view does and refused the call (HTTP 418 I'M A TEAPOT):"
        " check the arguments and the message, then try again."
    )
    # the per-status explanation is ViewTools' (flask_mcp.errors.view_status_text), framed
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == (
        "Tool 'orders' answered as a view does and redirected to /login?next=%2Fmcp"
        " (HTTP 302 FOUND): this tool needs a login, and the MCP connection carried none that"
        " the app accepts. Ask the user to sign in to the app (connect with a session cookie"
        " or token it accepts); retrying as is will not help."
    ), refused
    assert teapot["isError"] is True
    assert teapot["content"][0]["text"].startswith(
        "Tool 'teapot' answered as a view does and refused the call (HTTP 418 I'M A TEAPOT)"
    ), teapot
    assert texts["moved"] == (
        "Tool 'moved' answered as a view does and redirected to /orders (HTTP 302 FOUND);"
        " an MCP call does not follow redirects, so nothing was done at the new address."
    )  # not a login refusal: /orders is no login page
    assert texts["busy"] == (
        "Tool 'busy' answered as a view does and refused the call (HTTP 429 TOO MANY"
        " REQUESTS): too many calls. Retry in 30 s."
    )
    assert texts["broken"] == (
        "Tool 'broken' answered as a view does and failed (HTTP 500 INTERNAL SERVER ERROR):"
        " an error of the app, not of the arguments; the details are in the server's log."
    )
    assert "Traceback: secret" in caplog.text  # the body is logged, never sent
    assert texts["forbidden"].startswith(
        "Tool 'forbidden' answered as a view does and refused the call (HTTP 403 FORBIDDEN):"
        " the caller is known but not allowed to do this. Do not retry"
    )
    assert mistaken["isError"] is True
    assert mistaken["content"][0]["text"] == (
        "Tool 'as_json' returned a flask Response (HTTP 200 OK), which a tool cannot send:"
        " return the data itself (a dict, str, ...), not jsonify() or make_response();"
        " to offer a view as a tool, use flask_mcp.contrib.view_tools.ViewTools."
    ), mistaken
    refusals = [r for r in caplog.records if "orders" in r.getMessage()]
    assert refusals and all(r.levelno == logging.INFO for r in refusals)


def test_a_streaming_response_a_handler_returned_is_closed() -> None:
    """A view's answer returned by mistake is read for its status, then closed.

    A streamed body (``send_file``, a generator) holds a file or a generator open until
    the response is closed, which a WSGI server does for a view and nothing did here.
    """
    from flask import Response

    closed: list[str] = []

    def streaming(name: str, status: int) -> Response:
        def body() -> t.Iterator[str]:
            yield "never read"  # pragma: no cover - the body is not sent

        response = Response(body(), status)
        response.call_on_close(lambda: closed.append(name))
        return response

    mcp = MCP(name="streams", version="1.0.0")

    @mcp.tool()
    def download() -> t.Any:
        """Return a streamed file by mistake."""
        return streaming("tool", 200)

    @mcp.tool()
    def failing() -> t.Any:
        """Answer a streamed 5xx as a view does."""
        return streaming("tool 500", 200), 500

    @mcp.resource("files://report")
    def report() -> t.Any:
        """Return a streamed file by mistake."""
        return streaming("resource", 200)

    @mcp.prompt()
    def teapot() -> t.Any:
        """Answer a streamed refusal as a view would."""
        return streaming("prompt", 418)

    app = Flask(__name__)
    mcp.init_app(app)
    with MCPTestClient(app) as client:
        assert client.call_tool("download")["isError"] is True
        assert client.call_tool("failing")["isError"] is True
        with pytest.raises(flask_mcp.MCPError):
            client.read_resource("files://report")
        with pytest.raises(flask_mcp.MCPError):
            client.get_prompt("teapot")
    assert closed == ["tool", "tool 500", "resource", "prompt"]


def test_abort_elsewhere_is_a_json_rpc_error_with_its_description(
    client: MCPTestClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="flask_mcp"):
        forbidden = rpc_error(client.read_resource, "pages://secret")
        down = rpc_error(client.read_resource, "pages://down")
        no_topic = rpc_error(client.get_prompt, "review", {"topic": "x"})
        paused = rpc_error(client.get_prompt, "review", {"topic": "down"})
        bad_value = rpc_error(
            client.complete, {"type": "ref/prompt", "name": "review"}, "topic", "?"
        )
    assert forbidden == {
        "code": -32600,
        "message": "403 Forbidden: Only admins read this page.",
        "data": {"httpStatus": 403},
    }
    assert (down["code"], down["message"]) == (
        -32603,
        "503 Service Unavailable: The wiki is in maintenance.",
    )
    assert (no_topic["code"], no_topic["message"]) == (-32602, "404 Not Found: no topic x")
    assert (paused["code"], paused["data"]) == (-32603, {"httpStatus": 503})
    assert (bad_value["code"], bad_value["message"]) == (
        -32602,
        "400 Bad Request: Type at least one letter.",
    )
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert any(r.levelno == logging.WARNING and "503" in r.getMessage() for r in caplog.records)


# -- internal errors and debug mode ------------------------------------------------------


@pytest.mark.parametrize(
    ("debug", "setting", "exposed"),
    [
        (False, None, False),
        (True, None, True),  # flask run --debug shows the exception
        (True, False, False),  # an explicit setting wins
        (False, True, True),
    ],
)
def test_internal_errors_follow_debug_mode(
    debug: bool, setting: bool | None, exposed: bool
) -> None:
    app = Flask(__name__)
    if setting is not None:
        app.config["MCP_EXPOSE_INTERNAL_ERRORS"] = setting
    make_server().init_app(app)
    app.debug = debug  # after init_app, as app.run(debug=True) does
    with MCPTestClient(app) as client:
        text = client.call_tool("crash")["content"][0]["text"]
    assert ("secret-detail" in text) is exposed
    assert ("The server log has the details" in text) is not exposed


# -- completion ----------------------------------------------------------------------------


def test_completion_for_an_unknown_prompt_or_template_is_invalid_params(
    app: Flask, client: MCPTestClient
) -> None:
    error = rpc_error(client.complete, {"type": "ref/prompt", "name": "nope"}, "topic", "e")
    assert error["code"] == -32602 and "nope" in error["message"]
    error = rpc_error(client.complete, {"type": "ref/resource", "uri": "nope://{x}"}, "x", "e")
    assert error["code"] == -32602 and "nope://{x}" in error["message"]
    params = {"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "t", "value": ""}}
    _, answer = post_2026(app, "completion/complete", params)
    assert answer["error"]["code"] == -32602


def test_completion_of_a_known_target_without_handler_is_empty(client: MCPTestClient) -> None:
    empty = {"values": [], "total": 0, "hasMore": False}
    assert client.complete({"type": "ref/prompt", "name": "plain"}, "topic", "e") == empty
    ref = {"type": "ref/resource", "uri": "users://{user_id}"}
    assert client.complete(ref, "user_id", "7") == empty
    assert client.complete({"type": "ref/prompt", "name": "review"}, "topic", "e")["values"] == [
        "errors",
        "config",
    ]


@pytest.mark.parametrize("version", ["2025-11-25", V2026])
@pytest.mark.parametrize("context", [{"arguments": {"other": 1}}, {"arguments": ["x"]}, [1]])
def test_completion_context_must_map_names_to_strings(
    app: Flask, version: str, context: t.Any
) -> None:
    params = {
        "ref": {"type": "ref/prompt", "name": "review"},
        "argument": {"name": "topic", "value": "e"},
        "context": context,
    }
    with MCPTestClient(app, protocol_version=version) as client:
        error = rpc_error(client.request, "completion/complete", params)
        assert error["code"] == -32602 and "context" in error["message"]
        params["context"] = {"arguments": {"other": "x"}}
        found = client.request("completion/complete", params)["completion"]
    assert found["values"] == ["errors", "config"]


@pytest.mark.parametrize("version", ["2025-11-25", V2026])
@pytest.mark.parametrize("argument", [{"name": "topic"}, {"name": "topic", "value": None}])
def test_completion_argument_needs_its_value(app: Flask, version: str, argument: t.Any) -> None:
    params = {"ref": {"type": "ref/prompt", "name": "review"}, "argument": argument}
    with MCPTestClient(app, protocol_version=version) as client:
        error = rpc_error(client.request, "completion/complete", params)
        assert error["code"] == -32602 and "argument.value" in error["message"]
        params["argument"] = {"name": "topic", "value": ""}  # nothing typed yet: still a value
        assert client.request("completion/complete", params)["completion"]["values"]


# -- the unknown-session 404 -------------------------------------------------------------


def _unknown_session(app: Flask, multiprocess: bool) -> str:
    message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    response = app.test_client().post(
        "/mcp",
        data=json.dumps(message),
        content_type="application/json",
        headers={
            "Accept": "application/json, text/event-stream",
            "Mcp-Session-Id": "no-such-session",
            "MCP-Protocol-Version": "2025-11-25",
        },
        environ_overrides={"wsgi.multiprocess": multiprocess},
    )
    assert response.status_code == 404
    return t.cast(str, response.get_json()["error"]["message"])


def test_unknown_session_hints_at_the_memory_backend_under_several_processes(app: Flask) -> None:
    hinted = _unknown_session(app, multiprocess=True)
    assert "MCP_BACKEND=memory://" in hinted and "MCP_BACKEND=redis://" in hinted
    assert "one worker" in hinted
    plain = _unknown_session(app, multiprocess=False)
    assert "memory" not in plain and plain.startswith("Session not found")


def test_unknown_session_has_no_hint_with_a_shared_backend() -> None:
    class SharedBackend(MemoryBackend):
        multiprocess = True  # stands for Redis: every process sees every session

    app = Flask(__name__)
    app.config["MCP_BACKEND"] = SharedBackend()
    make_server().init_app(app)
    assert "memory" not in _unknown_session(app, multiprocess=True)


# -- decorator forms -------------------------------------------------------------------


def test_decorator_forms() -> None:
    mcp = MCP(name="forms", version="1")

    @mcp.tool
    def bare(a: int) -> int:
        return a

    @mcp.tool("named")
    def tool_two() -> str:
        return "two"

    @mcp.tool(name="keyword", title="Keyword")
    def tool_three() -> str:
        return "three"

    @mcp.prompt
    def bare_prompt(topic: str) -> str:
        return topic

    @mcp.prompt("named_prompt")
    def prompt_two() -> str:
        return "two"

    @mcp.resource("data://one")
    def positional() -> str:
        return "one"

    @mcp.resource(uri="data://{name}")
    def keyword_uri(name: str) -> str:
        return name

    # the functions stay what they were: callable and testable
    assert bare(3) == 3 and tool_two() == "two" and bare_prompt("x") == "x"
    assert positional() == "one" and keyword_uri("n") == "n"
    assert set(mcp.registry.tools) == {"bare", "named", "keyword"}
    assert mcp.registry.tools["keyword"].title == "Keyword"
    assert set(mcp.registry.prompts) == {"bare_prompt", "named_prompt"}
    assert "data://one" in mcp.registry.resources and "data://{name}" in mcp.registry.templates

    app = Flask(__name__)
    mcp.init_app(app)
    with MCPTestClient(app) as client:
        assert client.call_tool("bare", {"a": 5})["structuredContent"] == {"result": 5}
        assert client.get_prompt("bare_prompt", {"topic": "t"})["messages"][0]["content"] == {
            "type": "text",
            "text": "t",
        }


def test_bare_resource_decorator_says_a_uri_is_needed() -> None:
    mcp = MCP(name="forms", version="1")
    with pytest.raises(TypeError, match=r"@mcp.resource needs the resource's URI"):

        @mcp.resource  # type: ignore[arg-type]
        def no_uri() -> str:
            return "x"

    assert not mcp.registry.resources and not mcp.registry.templates


# -- end to end: the official client, both eras ----------------------------------------------

e2e_app = Flask(__name__)
e2e_app.config.from_prefixed_env()
make_server().init_app(e2e_app)


@pytest.mark.e2e
def test_official_client_sees_resource_not_found(serve: t.Any) -> None:
    import anyio
    from mcp import Client
    from mcp import MCPError as ClientError

    server = serve("tests.test_errors:e2e_app", "gevent")

    async def read(mode: str, uri: str) -> tuple[int, str, t.Any]:
        async with Client(server.url, mode=mode) as client:
            assert (await client.read_resource("users://7")).contents
            with pytest.raises(ClientError) as info:
                await client.read_resource(uri)
        return info.value.code, info.value.message, info.value.data

    for mode, code in (("legacy", -32002), (V2026, -32602)):
        for uri, message in (
            ("users://8", "Resource not found: users://8 (no user has id 8)"),
            ("pages://plain", "Resource not found: pages://plain"),
        ):
            assert anyio.run(read, mode, uri) == (code, message, {"uri": uri}), (mode, uri)
    assert "Traceback" not in server.log()
