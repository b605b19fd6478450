"""``flask mcp``: every subcommand's output and exit status, bad arguments, a missing app.

In process through Flask's CLI runner (``app.test_cli_runner()``), plus a few real
``flask`` subprocesses for what only they show: the ``flask.commands`` entry point, an
app that cannot be found, an app factory.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shlex
import stat
import subprocess
import sys
import typing as t

import click
import pytest
from flask import Flask

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import ToolError
from flask_mcp import current_context
from flask_mcp.cli import cli
from flask_mcp.cli.arguments import convert_arguments
from flask_mcp.cli.arguments import convert_value
from flask_mcp.cli.local import CLIENT_INFO
from flask_mcp.cli.local import InProcessClient
from flask_mcp.server.call import client_facts
from flask_mcp.testing import MCPTestClient
from flask_mcp.transport.path_args import EndpointError
from tests._apps import login_app
from tests._apps import tenants

ROOT = pathlib.Path(__file__).resolve().parent.parent
FLASK = str(pathlib.Path(sys.executable).parent / "flask")


def make_app(**config: t.Any) -> Flask:
    mcp = MCP(name="cli-test", version="2.0.0", title="CLI test", instructions="Be nice.")

    @mcp.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @mcp.tool()
    def shape(
        items: list[int], options: dict[str, t.Any], ratio: float = 1.0, loud: bool = False
    ) -> dict[str, t.Any]:
        """Echo typed arguments."""
        return {"items": items, "options": options, "ratio": ratio, "loud": loud}

    @mcp.tool()
    def fail() -> str:
        """Always fails."""
        raise ToolError("it went wrong")

    @mcp.tool()
    def chatty(ctx: Context) -> str:
        """Report progress and log."""
        ctx.progress(1, 2, "half")
        ctx.info("hello from the tool")
        ctx.debug("a detail")
        return "done"

    @mcp.tool()
    def needs_model(ctx: Context) -> str:
        """Samples: impossible from the command line."""
        ctx.create_message([{"role": "user", "content": {"type": "text", "text": "x"}}], 5)
        return "no"

    @mcp.resource("data://greeting", mime_type="text/plain")
    def greeting() -> str:
        """A greeting."""
        return "hello"

    @mcp.resource("data://items/{name}")
    def item(name: str) -> str:
        """One item."""
        return f"item {name}"

    @mcp.prompt()
    def review(code: str, focus: str = "bugs") -> str:
        """Review code."""
        return f"Review this for {focus}: {code}"

    app = Flask("cli_test")
    app.config.update(SECRET_KEY="s", **config)
    mcp.init_app(app)
    return app


@pytest.fixture
def run() -> t.Callable[..., t.Any]:
    app = make_app()
    runner = app.test_cli_runner()

    def invoke(*args: str) -> t.Any:
        return runner.invoke(cli, args=list(args))

    return invoke


# -- list and inspect -------------------------------------------------------------------


def test_list_everything(run: t.Any) -> None:
    result = run("list")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Tools:" in out and "Resources:" in out and "Templates:" in out and "Prompts:" in out
    assert "add" in out and "Add two integers." in out
    assert "data://greeting" in out and "data://items/{name}" in out
    assert "review code=... [focus=...]" in out


def test_list_one_kind_as_json(run: t.Any) -> None:
    result = run("list", "tools", "--json")
    assert result.exit_code == 0
    tools = json.loads(result.output)
    assert [tool["name"] for tool in tools] == ["add", "shape", "fail", "chatty", "needs_model"]
    assert tools[0]["inputSchema"]["required"] == ["a", "b"]
    assert json.loads(run("list", "--json").output)["prompts"][0]["name"] == "review"


def test_list_rejects_an_unknown_kind(run: t.Any) -> None:
    result = run("list", "widgets")
    assert result.exit_code == 2
    assert "'widgets' is not one of" in result.output


def test_inspect(run: t.Any) -> None:
    result = run("inspect")
    assert result.exit_code == 0
    assert result.output.startswith("cli-test 2.0.0 (CLI test)\n")
    assert "Instructions: Be nice." in result.output
    assert "Tool add: Add two integers." in result.output
    assert '"type": "integer"' in result.output
    assert "Prompt review: Review code." in result.output
    assert "  code (required)" in result.output
    document = json.loads(run("inspect", "--json").output)
    assert document["serverInfo"]["name"] == "cli-test"
    assert document["protocolVersions"][0] == "2026-07-28"
    assert "tools" in document["capabilities"]
    assert document["resourceTemplates"][0]["uriTemplate"] == "data://items/{name}"


# -- call -----------------------------------------------------------------------------


def test_call_converts_arguments_with_the_schema(run: t.Any) -> None:
    result = run("call", "add", "a=2", "b=40")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == '{"result":42}'
    result = run(
        "call", "shape", "items=[1,2]", 'options={"x": true}', "ratio=0.5", "loud=yes", "--raw"
    )
    assert result.exit_code == 0, result.output
    structured = json.loads(result.output)["structuredContent"]
    assert structured == {"items": [1, 2], "options": {"x": True}, "ratio": 0.5, "loud": True}


def test_call_with_json_arguments(run: t.Any) -> None:
    result = run("call", "add", "--json", '{"a": 1, "b": 2}')
    assert result.exit_code == 0 and result.output.strip() == '{"result":3}'
    assert run("call", "add", "--json", '{"a": 1, "b": 2}', "b=5").output.strip() == (
        '{"result":6}'
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["add", "a=x", "b=1"], "argument 'a' must be an integer, e.g. 3, not 'x'"),
        (["add", "a=1.5", "b=1"], "argument 'a' must be an integer"),
        (["add", "a=1"], "Missing argument 'b' of tool 'add': add b=VALUE."),
        (["add", "a=1", "b=2", "c=3"], "Unknown argument 'c' for tool 'add'; it takes: a, b."),
        (["add", "a"], "Argument 'a' of tool 'add' is not KEY=VALUE"),
        (["add", "a=1", "a=2", "b=1"], "Argument 'a' of tool 'add' is given twice."),
        (["shape", "items=1", "options={}"], "argument 'items' must be a JSON array"),
        (["shape", "items=[]", "options=[]"], "argument 'options' must be a JSON object"),
        (["shape", "items=[]", "options={}", "loud=maybe"], "argument 'loud' must be true or"),
        (["add", "--json", "[1]"], "must be a JSON object"),
        (["add", "--json", "{oops"], "is not valid JSON"),
        (["add", "--json", "[" * 5000 + "]" * 5000], "is not valid JSON (it is nested too deeply)"),
        (["add", "--json", '{"a": NaN, "b": 1}'], "is not valid JSON (NaN is not a JSON value)"),
        (["shape", "items=[]", 'options={"x": Infinity}'], "'options' must be a JSON object"),
        (["nope"], "No tool named 'nope'. Tools: add, chatty, fail, needs_model, shape."),
    ],
)
def test_call_bad_arguments_exit_2_naming_the_argument(
    run: t.Any, args: list[str], message: str
) -> None:
    result = run("call", *args)
    assert result.exit_code == 2
    assert message in result.output


def test_call_error_result_exits_1(run: t.Any) -> None:
    result = run("call", "fail")
    assert result.exit_code == 1
    assert "it went wrong" in result.output


def test_call_prints_progress_and_logs_on_stderr(run: t.Any) -> None:
    result = run("call", "chatty")
    assert result.exit_code == 0
    assert result.stdout.strip() == "done"
    assert "progress 1/2 half" in result.stderr
    assert "info: hello from the tool" in result.stderr
    assert "a detail" not in result.stderr
    assert "debug: a detail" in run("call", "chatty", "--log-level", "debug").stderr


def test_call_cannot_ask_a_client(run: t.Any) -> None:
    result = run("call", "needs_model")
    assert result.exit_code == 1
    assert "sampling" in result.output


def test_header_logs_in_to_a_login_protected_view_tool(tmp_path: pathlib.Path) -> None:
    """``--header "Cookie: ..."`` on every request of a command: Flask-Login's session
    (and its ``request_loader``) sees it, as ViewTools' views and ``login_required``
    resources and prompts do; without it each says the call carried no login."""
    app = login_app.create_app(str(tmp_path / "shop.db"))
    browser = app.test_client()
    assert browser.post("/login", data={"user": "bob"}).status_code == 200
    cookie = browser.get_cookie("session")
    assert cookie is not None
    runner = app.test_cli_runner()

    def run(*args: str) -> t.Any:
        return runner.invoke(cli, args=list(args))

    anonymous = run("call", "orders")
    assert anonymous.exit_code == 1
    assert anonymous.stderr.startswith("The view redirected to /login?next=")
    refused = run("read", "shop://orders/lamp")
    assert refused.exit_code == 1
    assert refused.stderr.startswith(
        "Error -32600: Resource 'shop://orders/lamp' answered as a view does"
    )
    header = f"Cookie: session={cookie.value}"
    mine = run("call", "orders", "--header", header, "--header", "X-Trace: 1")
    assert mine.exit_code == 0, mine.output
    assert json.loads(mine.stdout) == {"user": "bob", "items": ["lamp"]}
    assert run("read", "shop://orders/lamp", "--header", header).stdout == "lamp\n"
    assert run("prompt", "reorder", "--header", header).stdout.endswith("\nuser: Reorder lamp.\n")
    assert run("list", "tools", "--header", header).exit_code == 0
    bearer = run("call", "--header", "Authorization:Bearer ada", "orders")
    assert json.loads(bearer.stdout) == {"user": "ada", "items": ["engine", "cards"]}
    for bad in ("Cookie", ": x", "Bad Name: x"):
        wrong = run("call", "orders", "--header", bad)
        assert wrong.exit_code == 2
        assert "'Name: value'" in wrong.output, wrong.output


def facts_app() -> Flask:
    """An app whose tools report what their Context tells of the call and of the caller."""
    mcp = MCP(name="facts", version="1")

    def report(ctx: Context, x: int) -> str:
        call = ctx.call
        return json.dumps(
            {
                "call": None
                if call is None
                else {
                    "method": call.method,
                    "arguments": call.params.get("arguments"),
                    "request_id_agrees": call.request_id == ctx.request_id,
                    "era": call.era,
                    "version": call.version,
                },
                "client": {
                    "version": ctx.client.protocol_version,
                    "capabilities": ctx.client.capabilities,
                    "info": ctx.client.info,
                    "log_level": ctx.client.log_level,
                },
                "facts_of_the_call": call is not None and client_facts(call) == ctx.client,
                "current": current_context() is ctx,
            }
        )

    @mcp.tool()
    def spawned(ctx: Context, x: int) -> str:
        """Declares a Context: runs in a task of its own."""
        return report(ctx, x)

    @mcp.tool()
    def inline(x: int) -> str:
        """Declares none: runs inline; current_context() answers."""
        return report(current_context(), x)

    app = Flask("facts")
    mcp.init_app(app)
    return app


@pytest.mark.parametrize("tool", ["spawned", "inline"])
def test_a_handler_sees_the_same_call_and_facts_from_the_cli_as_over_http(tool: str) -> None:
    app = facts_app()
    result = app.test_cli_runner().invoke(cli, args=["call", tool, "x=7"])
    assert result.exit_code == 0, result.output
    from_cli = json.loads(result.stdout)
    with MCPTestClient(app, client_info=CLIENT_INFO, log_level="info") as client:
        answer = client.call_tool(tool, {"x": 7})
    over_http = json.loads(answer["content"][0]["text"])
    assert from_cli == over_http
    assert from_cli["call"] == {
        "method": "tools/call",
        "arguments": {"x": 7},
        "request_id_agrees": True,
        "era": "handshake",
        "version": from_cli["client"]["version"],
    }
    assert from_cli["client"]["info"] == CLIENT_INFO
    assert from_cli["client"]["log_level"] == "info"
    assert from_cli["facts_of_the_call"] and from_cli["current"] == (tool == "spawned")


ACME = {"path_args": {"tenant": "acme"}, "view_args": {"tenant": "acme"}, "path": "/t/acme/mcp"}


def test_the_in_process_client_calls_the_endpoint_at_its_path() -> None:
    """Its calls get the ``path_args`` and ``request.view_args`` of the path, as over HTTP.

    The request context was built from the rule's text: ``view_args`` were
    ``{'tenant': '<tenant>'}`` and ``ctx.path_args`` ``{}``.
    """
    app = tenants.create_app()
    with app.app_context():
        in_process = InProcessClient(app.extensions["mcp"], app, path="/t/acme/mcp")
        answer = in_process.request("tools/call", {"name": "where", "arguments": {}})
        assert answer["result"]["structuredContent"] == ACME
        with pytest.raises(EndpointError, match="URL variables"):
            InProcessClient(app.extensions["mcp"], app)
    with MCPTestClient(app, path="/t/acme/mcp") as client:  # the same over HTTP
        assert client.call_tool("where", {})["structuredContent"] == ACME


def test_list_all_follows_an_empty_next_cursor() -> None:
    """A ``nextCursor`` of "" says more results follow (2026-07-28: a valid cursor)."""
    app = make_app()
    mcp = app.extensions["mcp"]

    @mcp.middleware
    def pages(call: t.Any, call_next: t.Any) -> t.Any:
        if call.method != "prompts/list":
            return call_next(call)
        if "cursor" not in call.params:
            return {"prompts": [{"name": "first"}], "nextCursor": ""}
        return {"prompts": [{"name": f"after {call.params['cursor']!r}"}]}

    with app.app_context():
        listed = InProcessClient(mcp, app).list_all("prompts/list", "prompts")
    assert [p["name"] for p in listed] == ["first", "after ''"]


def test_every_command_uses_the_endpoint_at_path() -> None:
    """``flask mcp --path /t/acme/mcp ...``: handlers get acme's ``path_args`` and
    ``view_args``, as over HTTP, whichever command calls them."""
    runner = tenants.create_app().test_cli_runner()

    def run(*args: str) -> t.Any:
        result = runner.invoke(cli, args=["--path", "/t/acme/mcp", *args])
        assert result.exit_code == 0, result.output
        return result.stdout

    assert json.loads(run("call", "where")) == ACME
    assert run("read", "tenant://name").strip() == "acme"
    assert "Hello acme" in run("prompt", "greet")
    assert [tool["name"] for tool in json.loads(run("list", "tools", "--json"))] == ["where"]
    assert json.loads(run("inspect", "--json"))["serverInfo"]["name"] == "tenants"
    assert "ok    --path /t/acme/mcp is the MCP endpoint (tenant='acme')" in run("check")


@pytest.mark.parametrize(
    "command", [["list"], ["inspect"], ["call", "where"], ["read", "tenant://name"]]
)
def test_url_variables_without_path_are_refused_naming_one(command: list[str]) -> None:
    """They ran against the rule's text (``{'tenant': '<tenant>'}``), silently (``stdio``:
    tests/test_e2e_stdio.py)."""
    result = tenants.create_app().test_cli_runner().invoke(cli, args=command)
    assert result.exit_code == 2, result.output
    assert "MCP_PATH '/t/<tenant>/mcp' has URL variables (tenant)" in result.stderr
    assert f"flask mcp --path /t/TENANT/mcp {command[0]} ..." in result.stderr


@pytest.mark.parametrize(
    ("app", "path"), [("tenants", "/t/acme/other"), ("tenants", "/t/a/b/mcp"), ("plain", "/other")]
)
def test_a_path_that_is_not_the_endpoints_is_refused(app: str, path: str) -> None:
    flask_app = tenants.create_app() if app == "tenants" else make_app()
    runner = flask_app.test_cli_runner()
    result = runner.invoke(cli, args=["--path", path, "list"])
    assert result.exit_code == 2, result.output
    assert f"{path!r} is not a path of the MCP endpoint" in result.stderr
    checked = runner.invoke(cli, args=["--path", path, "check"])
    assert checked.exit_code == 1
    assert f"FAIL  --path: {path!r} is not a path of the MCP endpoint" in checked.stdout


def test_without_url_variables_path_is_mcp_path(run: t.Any) -> None:
    assert run("--path", "/mcp", "call", "add", "a=1", "b=2").stdout.strip() == '{"result":3}'
    assert run("call", "add", "a=1", "b=2").stdout.strip() == '{"result":3}'


# -- read and prompt ----------------------------------------------------------------------


def test_read(run: t.Any) -> None:
    result = run("read", "data://greeting")
    assert result.exit_code == 0 and result.output == "hello\n"
    assert run("read", "data://items/pen").output == "item pen\n"
    raw = json.loads(run("read", "data://greeting", "--raw").output)
    assert raw["contents"][0]["mimeType"] == "text/plain"


def test_read_unknown_resource_exits_1(run: t.Any) -> None:
    result = run("read", "data://missing/x/y")
    assert result.exit_code == 1
    assert result.output.startswith("Error -32002: ")


def test_prompt(run: t.Any) -> None:
    result = run("prompt", "review", "code=x = 1", "focus=style")
    assert result.exit_code == 0, result.output
    assert "user: Review this for style: x = 1" in result.output
    raw = json.loads(run("prompt", "review", "code=y", "--raw").output)
    assert raw["messages"][0]["content"]["text"] == "Review this for bugs: y"


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["review"], 2, "Missing argument 'code' of prompt 'review': add code=VALUE."),
        (["review", "code=1", "x=2"], 2, "Unknown argument 'x' for prompt 'review'"),
        (["nope"], 2, "No prompt named 'nope'. Prompts: review."),
    ],
)
def test_prompt_bad_arguments(run: t.Any, args: list[str], status: int, message: str) -> None:
    result = run("prompt", *args)
    assert result.exit_code == status
    assert message in result.output


# -- check --------------------------------------------------------------------------------


def test_check_passes() -> None:
    result = make_app().test_cli_runner().invoke(cli, args=["check"])
    assert result.exit_code == 0, result.output
    assert (
        "ok    the server offers 5 tools, 1 resource, 1 resource template, 1 prompt\n"
        in result.output
    )
    assert "ok    the backend memory:// answers" in result.output
    assert "All checks passed." in result.output


def test_check_counts_resource_templates() -> None:
    """A server of templates only offers something: it says so, and what."""
    mcp = MCP(name="templates", version="1")

    @mcp.resource("data://items/{name}")
    def item(name: str) -> str:
        return name

    @mcp.resource("data://other/{name}")
    def other(name: str) -> str:
        return name

    app = Flask("templates")
    app.config["SECRET_KEY"] = "s"
    mcp.init_app(app)
    result = app.test_cli_runner().invoke(cli, args=["check"])
    assert result.exit_code == 0, result.output
    assert (
        "ok    the server offers 0 tools, 0 resources, 2 resource templates, 0 prompts\n"
        in result.output
    )
    empty = Flask("empty")
    empty.config["SECRET_KEY"] = "s"
    MCP(empty, name="empty", version="1")
    result = empty.test_cli_runner().invoke(cli, args=["check"])
    assert result.exit_code == 1
    assert (
        "FAIL  the server offers 0 tools, 0 resources, 0 resource templates, 0 prompts: "
        "declare some with @mcp.tool(), @mcp.resource()..." in result.output
    )


def test_check_names_what_to_fix() -> None:
    from flask_mcp import ConfigWarning

    with pytest.warns(ConfigWarning):
        app = make_app(MCP_PAGE_SIZ=3)
    app.secret_key = None
    result = app.test_cli_runner().invoke(cli, args=["check"])
    assert result.exit_code == 1
    assert (
        "FAIL  Unknown configuration key MCP_PAGE_SIZ: Flask-MCP ignores it; did you mean "
        "MCP_PAGE_SIZE?" in result.output
    )
    assert "FAIL  no SECRET_KEY nor MCP_STATE_KEY" in result.output
    assert "2 problems to fix." in result.stderr


def test_check_reports_an_app_that_does_not_start() -> None:
    from flask.cli import ScriptInfo
    from harness import free_port

    port = free_port()
    runner = make_app().test_cli_runner()
    info = ScriptInfo(create_app=lambda: make_app(MCP_BACKEND=f"redis://127.0.0.1:{port}/0"))
    result = runner.invoke(cli, args=["check"], obj=info)
    assert result.exit_code == 1, result.output
    assert "FAIL  the app did not start: BackendUnavailable: Cannot reach Redis at " in (
        result.output
    )
    assert "Start Redis there, or point MCP_BACKEND" in result.output
    info = ScriptInfo(create_app=lambda: make_app(MCP_PAGE_SIZE=-1))
    result = runner.invoke(cli, args=["check"], obj=info)
    assert result.exit_code == 1
    assert "FAIL  the app did not start: ValueError: " in result.output
    assert "MCP_PAGE_SIZE" in result.output


def test_check_fetches_the_jwks() -> None:
    from harness import free_port

    port = free_port()
    app = make_app(
        MCP_AUTH_RESOURCE="http://127.0.0.1:5000/mcp",
        MCP_AUTH_AUTHORIZATION_SERVERS=["http://127.0.0.1:9/"],
        MCP_AUTH_JWT_JWKS_URL=f"http://127.0.0.1:{port}/jwks.json",
        MCP_AUTH_INSECURE_HTTP=True,
    )
    result = app.test_cli_runner().invoke(cli, args=["check"])
    assert result.exit_code == 1, result.output
    assert "ok    authorization is on for http://127.0.0.1:5000/mcp" in result.output
    assert f"FAIL  cannot fetch the JWKS at http://127.0.0.1:{port}/jwks.json" in result.output
    with jwks_server() as url:
        app = make_app(
            MCP_AUTH_RESOURCE="http://127.0.0.1:5000/mcp",
            MCP_AUTH_AUTHORIZATION_SERVERS=["http://127.0.0.1:9/"],
            MCP_AUTH_JWT_JWKS_URL=url,
            MCP_AUTH_INSECURE_HTTP=True,
        )
        result = app.test_cli_runner().invoke(cli, args=["check"])
    assert result.exit_code == 0, result.output
    assert f"ok    the JWKS at {url} holds 1 key(s)" in result.output


@contextlib.contextmanager
def jwks_server() -> t.Iterator[str]:
    """Serve one key's JWKS on 127.0.0.1; yield its URL."""
    from jwt_keys import JWKSServer
    from jwt_keys import Keys

    with JWKSServer(Keys()) as served:
        yield served.url


# -- install --------------------------------------------------------------------------------


def install(tmp_path: pathlib.Path, *args: str) -> t.Any:
    app = make_app()
    runner = app.test_cli_runner()
    from flask.cli import ScriptInfo

    info = ScriptInfo(app_import_path="myproject.app:create_app()", create_app=lambda: app)
    return runner.invoke(cli, args=["install", *args], obj=info)


@pytest.mark.parametrize(
    ("client", "key", "typed"),
    [
        ("claude-desktop", "mcpServers", False),
        ("cursor", "mcpServers", False),
        ("claude-code", "mcpServers", True),
        ("vscode", "servers", True),
    ],
)
def test_install_writes_an_entry_and_keeps_the_others(
    tmp_path: pathlib.Path, client: str, key: str, typed: bool
) -> None:
    config = tmp_path / "sub" / "config.json"
    config.parent.mkdir()
    other = {"command": "other-server", "args": []}
    config.write_text(json.dumps({"theme": "dark", key: {"other": other}}))
    result = install(tmp_path, client, "--config", str(config), "--env", "FLASK_MCP_X=1")
    assert result.exit_code == 0, result.output
    assert f"Added 'cli-test' in {config}." in result.output
    document = json.loads(config.read_text())
    assert document["theme"] == "dark" and document[key]["other"] == other
    entry = document[key]["cli-test"]
    assert entry["command"].endswith("flask")
    assert entry["args"] == ["--app", "myproject.app:create_app()", "mcp", "stdio"]
    assert entry["env"]["FLASK_MCP_X"] == "1"
    assert entry["env"]["PYTHONPATH"]
    assert ("type" in entry) == typed
    again = install(tmp_path, client, "--config", str(config), "--name", "cli-test")
    assert f"Replaced 'cli-test' in {config}." in again.output
    assert json.loads(config.read_text())[key]["other"] == other


def test_install_creates_a_missing_file(tmp_path: pathlib.Path) -> None:
    config = tmp_path / "new" / "mcp.json"
    result = install(tmp_path, "cursor", "--config", str(config), "--name", "notes")
    assert result.exit_code == 0
    assert list(json.loads(config.read_text())["mcpServers"]) == ["notes"]


def test_install_leaves_a_broken_file_alone(tmp_path: pathlib.Path) -> None:
    config = tmp_path / "config.json"
    config.write_text("{not json")
    result = install(tmp_path, "claude-desktop", "--config", str(config))
    assert result.exit_code == 1
    assert "is not valid JSON" in result.output and "left unchanged" in result.output
    assert config.read_text() == "{not json"
    config.write_text('{"mcpServers": []}')
    assert install(tmp_path, "cursor", "--config", str(config)).exit_code == 1
    config.write_bytes(b'{"mcpServers": {"caf\xe9": {}}}')  # Latin-1, not UTF-8
    result = install(tmp_path, "cursor", "--config", str(config))
    assert result.exit_code == 1 and not isinstance(result.exception, UnicodeDecodeError)
    assert "cannot be read as UTF-8 JSON" in result.output and "left unchanged" in result.output
    assert config.read_bytes() == b'{"mcpServers": {"caf\xe9": {}}}'


def test_install_print(tmp_path: pathlib.Path) -> None:
    result = install(tmp_path, "vscode", "--print", "--env", "API_KEY=s3cr3t-value")
    assert result.exit_code == 0
    entry = json.loads(result.stdout)["servers"]["cli-test"]
    assert entry["type"] == "stdio" and entry["cwd"]
    assert entry["env"]["API_KEY"] == "********"  # masked: --print never shows a secret
    assert entry["env"]["PYTHONPATH"] == str(pathlib.Path.cwd())  # not from --env: shown
    assert "s3cr3t-value" not in result.output
    assert "The --env values are hidden (********)" in result.stderr
    command = install(tmp_path, "claude-code", "--print").stdout
    assert command.startswith("claude mcp add --scope project cli-test --env PYTHONPATH=")
    assert "-- " in command and command.rstrip().endswith(
        "--app 'myproject.app:create_app()' mcp stdio"
    )
    secret = install(tmp_path, "claude-code", "--print", "--env", "TOKEN=s3cr3t", "--scope", "user")
    assert "--env 'TOKEN=********'" in secret.stdout and "s3cr3t" not in secret.output
    assert secret.stdout.startswith("claude mcp add --scope user cli-test ")


def test_install_writes_the_path_into_the_entry(tmp_path: pathlib.Path) -> None:
    """The client starts ``flask mcp --path /t/acme/mcp stdio``: acme's endpoint; without
    ``--path`` an ``MCP_PATH`` with URL variables is refused, as ``stdio`` would refuse it."""
    from flask.cli import ScriptInfo

    app = tenants.create_app()
    info = ScriptInfo(app_import_path="tests._apps.tenants", create_app=lambda: app)
    runner = app.test_cli_runner()
    config = tmp_path / "config.json"
    result = runner.invoke(
        cli,
        args=["--path", "/t/acme/mcp", "install", "cursor", "--config", str(config)],
        obj=info,
    )
    assert result.exit_code == 0, result.output
    entry = json.loads(config.read_text())["mcpServers"]["tenants"]
    assert entry["args"] == [
        "--app",
        "tests._apps.tenants",
        "mcp",
        "--path",
        "/t/acme/mcp",
        "stdio",
    ]
    shown = runner.invoke(
        cli, args=["--path", "/t/acme/mcp", "install", "claude-code", "--print"], obj=info
    )
    assert shown.stdout.rstrip().endswith("mcp --path /t/acme/mcp stdio")
    for args in (["install", "cursor"], ["--path", "/t/acme", "install", "cursor"]):
        refused = runner.invoke(cli, args=[*args, "--config", str(config)], obj=info)
        assert refused.exit_code == 2, refused.output
        assert "flask mcp --path /t/TENANT/mcp install ..." in refused.stderr
    assert json.loads(config.read_text())["mcpServers"]["tenants"] == entry


@pytest.mark.parametrize("client", ["claude-desktop", "cursor", "claude-code", "vscode"])
def test_install_print_works_for_every_client(tmp_path: pathlib.Path, client: str) -> None:
    """--print with --env and --env-file: the entry names the env file, holds no secret,
    and nothing is written."""
    env_file = tmp_path / "secrets.env"
    result = install(
        tmp_path, client, "--print", "--env", "API_KEY=s3cr3t", "--env-file", str(env_file)
    )
    assert result.exit_code == 0, result.output
    assert "s3cr3t" not in result.output and not env_file.exists()
    assert f"{env_file} was not written (--print writes nothing)." in result.stderr
    args = ["--app", "myproject.app:create_app()", "--env-file", str(env_file), "mcp", "stdio"]
    if client == "claude-code":
        words = shlex.split(result.stdout)
        assert words[:6] == ["claude", "mcp", "add", "--scope", "project", "cli-test"]
        assert words[words.index("--") + 2 :] == args
        assert not [word for word in words if word.startswith("API_KEY")]
        return
    key = "servers" if client == "vscode" else "mcpServers"
    entry = json.loads(result.stdout)[key]["cli-test"]
    assert entry["args"] == args and list(entry["env"]) == ["PYTHONPATH"]


def test_install_writes_through_a_symlink_and_keeps_the_mode(tmp_path: pathlib.Path) -> None:
    """A config kept in a dotfiles repository and linked into place stays a link; the
    file keeps its permissions."""
    real = tmp_path / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}}))
    real.chmod(0o640)
    link = tmp_path / "home" / "mcp.json"
    link.parent.mkdir()
    link.symlink_to(real)
    result = install(tmp_path, "cursor", "--config", str(link), "--env", "K=v")
    assert result.exit_code == 0, result.output
    assert f"Added 'cli-test' in {link} (-> {real})." in result.output
    assert link.is_symlink() and link.resolve() == real
    assert set(json.loads(real.read_text())["mcpServers"]) == {"other", "cli-test"}
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert [p.name for p in real.parent.iterdir()] == ["mcp.json"]  # no temporary file left


def test_install_creates_a_users_file_private_and_a_projects_file_by_the_umask(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    mine = tmp_path / "cursor" / "mcp.json"
    assert install(tmp_path, "cursor", "--config", str(mine)).exit_code == 0
    assert stat.S_IMODE(mine.stat().st_mode) == 0o600
    umask = os.umask(0o022)
    try:
        assert install(tmp_path, "vscode").exit_code == 0
    finally:
        os.umask(umask)
    assert stat.S_IMODE((project / ".vscode" / "mcp.json").stat().st_mode) == 0o644


@pytest.mark.parametrize(
    ("client", "args", "file", "advice"),
    [
        ("claude-code", [], ".mcp.json", "--scope local (this project) or --scope user"),
        ("vscode", [], ".vscode/mcp.json", "--config PATH: a config file of your own"),
        ("cursor", ["--config", "shared.json"], "shared.json", "--env-file PATH"),
    ],
)
def test_install_never_writes_env_values_into_a_project_file(
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    client: str,
    args: list[str],
    file: str,
    advice: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    result = install(tmp_path, client, *args, "--env", "API_KEY=s3cr3t", "--env", "B=2")
    assert result.exit_code == 2
    assert "Not writing the --env values (API_KEY, B) into " in result.output
    assert "that file belongs to the project" in result.output
    assert "--env-file PATH: a file only you read" in result.output and advice in result.output
    assert not (tmp_path / file).exists()
    assert install(tmp_path, client, *args).exit_code == 0  # without secrets: written
    assert "s3cr3t" not in (tmp_path / file).read_text()


def test_install_puts_env_values_in_an_env_file_that_flask_loads(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """claude-code at project scope: .mcp.json names the env file, which holds the values
    (mode 0600); the entry's own command starts a server that sees them."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "envapp.py").write_text(
        "import os\nfrom flask import Flask\nfrom flask_mcp import MCP\n"
        "mcp = MCP(name='envapp', version='1')\n"
        "@mcp.tool()\ndef secret() -> str:\n    return os.environ.get('API_KEY', 'unset')\n"
        "app = Flask('envapp')\nmcp.init_app(app)\n"
    )
    monkeypatch.chdir(project)
    env_file = tmp_path / "private" / "envapp.env"
    env_file.parent.mkdir()
    env_file.write_text("# mine\nOTHER=kept\nAPI_KEY=old\n")
    env_file.chmod(0o600)
    secret = "s3cr3t 'quoted' \\ value"
    app = Flask("installer")
    MCP(app, name="envapp", version="1")
    from flask.cli import ScriptInfo

    info = ScriptInfo(app_import_path="envapp", create_app=lambda: app)
    result = app.test_cli_runner().invoke(
        cli,
        ["install", "claude-code", "--env", f"API_KEY={secret}", "--env-file", str(env_file)],
        obj=info,
    )
    assert result.exit_code == 0, result.output
    assert f"Wrote API_KEY to {env_file}." in result.output
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["envapp"]
    assert entry["args"] == ["--app", "envapp", "--env-file", str(env_file), "mcp", "stdio"]
    assert entry["env"] == {"PYTHONPATH": str(project)}
    assert "s3cr3t" not in (project / ".mcp.json").read_text()
    text = env_file.read_text()
    assert text.startswith("# mine\nOTHER=kept\n") and "old" not in text
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    # what the client will run, asked for the tool's answer instead of serving stdio
    done = subprocess.run(
        [entry["command"], *entry["args"][:-1], "call", "secret"],
        cwd=tmp_path,
        env={**os.environ, **entry["env"]},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == secret


def test_install_env_file_refuses_what_python_dotenv_would_change(tmp_path: pathlib.Path) -> None:
    env_file = tmp_path / "x.env"
    result = install(tmp_path, "cursor", "--env", "K=a${B}c", "--env-file", str(env_file))
    assert result.exit_code == 2
    assert "python-dotenv expands" in result.output and not env_file.exists()
    missing = install(tmp_path, "cursor", "--env-file", str(env_file))
    assert missing.exit_code == 2 and "does not exist" in missing.output


@pytest.mark.parametrize("scope", ["local", "user"])
def test_install_claude_code_scopes_in_the_users_file(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, scope: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    state = home / ".claude.json"
    state.write_text(json.dumps({"numStartups": 3, "projects": {"/elsewhere": {"x": 1}}}))
    result = install(tmp_path, "claude-code", "--scope", scope, "--env", "API_KEY=s3cr3t")
    assert result.exit_code == 0, result.output
    assert f"Added 'cli-test' in {state}." in result.output
    document = json.loads(state.read_text())
    assert document["numStartups"] == 3 and document["projects"]["/elsewhere"] == {"x": 1}
    found = (
        document["projects"][str(project)]["mcpServers"]
        if scope == "local"
        else document["mcpServers"]
    )
    assert found["cli-test"]["env"]["API_KEY"] == "s3cr3t"  # the user's own file
    assert not (project / ".mcp.json").exists()


@pytest.mark.parametrize("scope", ["local", "user"])
def test_install_claude_code_scopes_never_write_env_values_into_a_project_config(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, scope: str
) -> None:
    """--scope local/user is the user's own file, unless --config names one in the project."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    args = ["claude-code", "--scope", scope, "--config", ".mcp.json"]
    result = install(tmp_path, *args, "--env", "API_KEY=s3cr3t")
    assert result.exit_code == 2
    assert "that file belongs to the project" in result.output
    assert not (tmp_path / ".mcp.json").exists()
    assert install(tmp_path, *args).exit_code == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["zed"], "'zed' is not one of"),
        (["cursor", "--env", "NOVALUE"], "'NOVALUE' is not KEY=VALUE"),
        (["cursor", "--scope", "user"], "--scope is for claude-code only"),
    ],
)
def test_install_bad_arguments(tmp_path: pathlib.Path, args: list[str], message: str) -> None:
    result = install(tmp_path, *args)
    assert result.exit_code == 2
    assert message in result.output


# -- the real `flask` command ----------------------------------------------------------------


def flask(
    *args: str, cwd: pathlib.Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FLASK, *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_entry_point_registers_the_group() -> None:
    done = flask("--app", "examples.quickstart", "mcp", "call", "add", "a=1", "b=2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '{"result":3}'
    assert "mcp" in flask("--app", "examples.quickstart", "--help").stdout


def test_flask_mcp_path_in_the_environment_is_mcp_path_not_the_path_option() -> None:
    """Flask reads ``FLASK_*`` variables as its commands' options, and ``FLASK_MCP_PATH``,
    the documented way to set ``MCP_PATH``, was taken as ``flask mcp --path``: with URL
    variables the command ran silently at the rule's own text (tenant ``'<tenant>'``)."""
    done = flask(
        "--app", "examples.quickstart", "mcp", "call", "add", "a=1", "b=2",
        env={"FLASK_MCP_PATH": "/t/<tenant>/mcp"},
    )  # fmt: skip
    assert done.returncode == 2, done.stdout
    assert "MCP_PATH '/t/<tenant>/mcp' has URL variables (tenant)" in done.stderr


def test_an_app_factory_is_found() -> None:
    done = flask("--app", "tests._apps.stdio_tools", "mcp", "list", "tools", "--json")
    assert done.returncode == 0, done.stderr
    assert "sample" in [tool["name"] for tool in json.loads(done.stdout)]


def test_a_missing_app(tmp_path: pathlib.Path) -> None:
    done = flask("--app", "no_such_module", "mcp", "list", cwd=tmp_path)
    assert done.returncode == 2
    assert "Could not import 'no_such_module'" in done.stderr
    done = flask("mcp", "list", cwd=tmp_path)
    assert done.returncode == 2
    assert "Could not locate a Flask application" in done.stderr
    done = flask("--app", "no_such_module", "mcp", "stdio", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert "Could not import 'no_such_module'" in done.stderr


def test_an_app_without_a_server(tmp_path: pathlib.Path) -> None:
    (tmp_path / "plain.py").write_text("from flask import Flask\napp = Flask('plain')\n")
    done = flask("--app", "plain", "mcp", "list", cwd=tmp_path)
    assert done.returncode == 1
    assert "The app 'plain' has no MCP server" in done.stderr
    done = flask("--app", "plain", "mcp", "install", "cursor", "--print", cwd=tmp_path)
    assert done.returncode == 1
    done = flask("--app", "plain", "mcp", "stdio", cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert "The app 'plain' has no MCP server" in done.stderr


def test_install_needs_the_app_path(tmp_path: pathlib.Path) -> None:
    (tmp_path / "app.py").write_text(
        "from flask import Flask\nfrom flask_mcp import MCP\n"
        "app = Flask('a')\nMCP(app, name='a', version='1')\n"
    )
    done = flask("mcp", "install", "cursor", "--print", cwd=tmp_path)
    assert done.returncode == 2
    assert "Name the app with `flask --app MODULE mcp install" in done.stderr


# -- conversion rules -------------------------------------------------------------------------


def test_convert_value_follows_the_schema() -> None:
    assert convert_value("n", "3", {"type": ["integer", "null"]}) == 3
    assert convert_value("n", "null", {"type": ["integer", "null"]}) is None
    assert convert_value("s", "42", {"type": "string"}) == "42"
    assert convert_value("u", "7", {"anyOf": [{"type": "integer"}, {"type": "string"}]}) == 7
    assert convert_value("u", "x", {"anyOf": [{"type": "integer"}, {"type": "string"}]}) == "x"
    assert convert_value("e", "m", {"enum": ["m", "km"]}) == "m"
    assert convert_value("e", "2", {"enum": [0, 1, 2]}) == 2
    assert convert_value("any", '{"a": 1}', {}) == {"a": 1}
    assert convert_value("any", "plain words", {}) == "plain words"
    with pytest.raises(click.BadParameter, match="argument 'n' must be a number"):
        convert_value("n", "NaN", {"type": "number"})


def test_convert_arguments_open_schema_takes_anything() -> None:
    schema = {"type": "object", "additionalProperties": True}
    assert convert_arguments(schema, ["x=1", "y=hi"], what="tool 't'") == {"x": 1, "y": "hi"}
