"""``flask --app ... mcp stdio`` as a subprocess, driven by the official ``mcp`` stdio client.

Both eras: ``mode="legacy"`` (initialize, server-to-client requests on stdout,
answers on stdin) and ``mode="2026-07-28"`` (``_meta`` on every request, MRTR
for sampling, elicitation and roots). The quickstart serves tools, resources,
prompts, progress and logging; ``tests/_apps/stdio_tools.py`` (found through
its app factory) serves the back-channel, cancellation and a handler that prints.
"""

from __future__ import annotations

import functools
import json
import os
import pathlib
import signal
import subprocess
import threading
import time
import typing as t

import anyio
import mcp_types as types
import pytest
from harness import FLASK
from harness import flask_mcp_stdio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

pytestmark = pytest.mark.e2e

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODES = ["legacy", "2026-07-28"]


def params(app: str, **env: str) -> StdioServerParameters:
    return t.cast(StdioServerParameters, flask_mcp_stdio(app, env=env))


async def _sampling(context: t.Any, params: types.CreateMessageRequestParams) -> t.Any:
    text = params.messages[0].content.text  # type: ignore[union-attr]
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text=text.upper()), model="m"
    )


async def _elicitation(context: t.Any, params: t.Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def _roots(context: t.Any) -> types.ListRootsResult:
    return types.ListRootsResult(
        roots=[types.Root(uri="file:///tmp/a"), types.Root(uri="file:///tmp/b")]
    )


def client(app: str, mode: str, env: dict[str, str] | None = None, **kwargs: t.Any) -> Client:
    return Client(
        params(app, **(env or {})),
        mode=mode,
        sampling_callback=_sampling,
        elicitation_callback=_elicitation,
        list_roots_callback=_roots,
        read_timeout_seconds=30,
        **kwargs,
    )


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent), result
    return block.text


@pytest.mark.parametrize("mode", [*MODES, "auto"])
def test_quickstart_over_stdio(mode: str) -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[t.Any] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    async def main() -> None:
        async with client(
            "examples.quickstart", mode, logging_callback=on_log, log_level="debug"
        ) as c:
            if mode == "legacy":  # "auto" finds a modern server: server/discover answers
                await c.set_logging_level("debug")
            names = {tool.name for tool in (await c.list_tools()).tools}
            assert {"add", "convert_length", "search_notes", "save_note", "word_stats"} <= names
            assert text_of(await c.call_tool("add", {"a": 2, "b": 40})) == '{"result":42}'
            failed = await c.call_tool("search_notes", {"query": " "})
            assert failed.is_error and "The query is empty" in text_of(failed)
            stats = await c.call_tool("word_stats", {}, progress_callback=on_progress)
            assert stats.structured_content == {"groceries": 9, "ideas": 12, "meeting": 12}
            resources = await c.list_resources()
            assert [r.uri for r in resources.resources] == ["config://app"]
            templates = await c.list_resource_templates()
            assert [r.uri_template for r in templates.resource_templates] == ["notes://{name}"]
            config = await c.read_resource("config://app")
            assert json.loads(config.contents[0].text)["app"] == "notes"  # type: ignore[union-attr]
            note = await c.read_resource("notes://ideas")
            assert "Ship it." in note.contents[0].text  # type: ignore[union-attr]
            prompt = await c.get_prompt("summarize_note", {"name": "ideas", "style": "haiku"})
            assert prompt.messages[1].content.text == "Summarize the note above as haiku."  # type: ignore[union-attr]

    anyio.run(main)
    assert progress == [
        (1, 3, "Counted groceries"),
        (2, 3, "Counted ideas"),
        (3, 3, "Counted meeting"),
    ]
    assert logs[0] == "Counting words in 3 notes" and logs[-1] == "Done"
    assert {"note": "ideas", "words": 12} in logs


@pytest.mark.parametrize("app", ["tests._apps.stdio_tools", "tests._apps.stdio_gevent"])
@pytest.mark.parametrize("mode", MODES)
def test_sampling_elicitation_and_roots_over_stdio(mode: str, app: str) -> None:
    """Also with gevent's monkey-patching: handlers are greenlets, stdin is read aside."""

    async def main() -> None:
        async with client(app, mode) as c:
            assert text_of(await c.call_tool("sample", {"prompt": "hi"})) == "model said: HI"
            assert text_of(await c.call_tool("ask", {})) == "accept:Ada:HELLO ADA"
            assert text_of(await c.call_tool("roots", {})) == "file:///tmp/a,file:///tmp/b"

    anyio.run(main)


@pytest.mark.redis
@pytest.mark.parametrize("mode", MODES)
def test_back_channel_with_a_redis_backend(mode: str, redis_url: str) -> None:
    """The backend of the app's config carries the session and the client's answers."""

    async def main() -> None:
        env = {"FLASK_MCP_BACKEND": redis_url}
        async with client("tests._apps.stdio_tools", mode, env) as c:
            assert text_of(await c.call_tool("ask", {})) == "accept:Ada:HELLO ADA"
            assert text_of(await c.call_tool("roots", {})) == "file:///tmp/a,file:///tmp/b"

    anyio.run(main)


@pytest.mark.parametrize("mode", MODES)
def test_handlers_run_concurrently_while_the_client_answers(mode: str) -> None:
    """Three back-channel calls at once: the reader keeps reading while handlers wait."""

    async def main() -> list[str]:
        results: list[str] = []
        async with client("tests._apps.stdio_tools", mode) as c:

            async def one(prompt: str) -> None:
                results.append(text_of(await c.call_tool("sample", {"prompt": prompt})))

            async with anyio.create_task_group() as group:
                for prompt in ("a", "b", "c"):
                    group.start_soon(one, prompt)
        return sorted(results)

    assert anyio.run(main) == ["model said: A", "model said: B", "model said: C"]


@pytest.mark.parametrize("app", ["tests._apps.stdio_tools", "tests._apps.stdio_gevent"])
@pytest.mark.parametrize("mode", MODES)
def test_cancellation_over_stdio(mode: str, app: str) -> None:
    async def main() -> int:
        async with client(app, mode) as c:
            with anyio.move_on_after(1.0) as scope:
                await c.call_tool("hold", {})
            assert scope.cancelled_caught
            for _ in range(100):  # the handler notices within a poll of 20 ms
                count = (await c.call_tool("cancelled_count", {})).structured_content
                assert count is not None
                if count["result"] == 1:
                    return 1
                await anyio.sleep(0.05)
            return 0

    assert anyio.run(main) == 1


@pytest.mark.parametrize("mode", MODES)
def test_app_context_and_config_as_under_http(mode: str) -> None:
    async def main() -> t.Any:
        async with client("tests._apps.stdio_tools", mode) as c:
            return (await c.call_tool("app_facts", {})).structured_content

    facts = anyio.run(main)
    assert facts == {
        "app": "tests._apps.stdio_tools",
        "greeting": "hello",
        "g": "yes",
        "path": "/mcp",
        "url": "/hello",
    }


def test_list_changed_reaches_a_session_over_stdio() -> None:
    seen: list[str] = []

    async def handler(message: t.Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            seen.append("tools")

    async def main() -> None:
        async with client("tests._apps.stdio_tools", "legacy", message_handler=handler) as c:
            await c.call_tool("change_tools", {})
            with anyio.fail_after(10):
                while not seen:
                    await anyio.sleep(0.05)

    anyio.run(main)
    assert seen == ["tools"]


def test_resource_updates_reach_a_subscribed_session_over_stdio() -> None:
    updated: list[str] = []

    async def handler(message: t.Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updated.append(str(message.params.uri))

    async def main() -> None:
        async with client("examples.quickstart", "legacy", message_handler=handler) as c:
            await c.subscribe_resource("notes://todo")
            await c.call_tool("save_note", {"name": "todo", "text": "Write the docs."})
            with anyio.fail_after(10):
                while not updated:
                    await anyio.sleep(0.05)
            note = await c.read_resource("notes://todo")
            assert "Write the docs." in note.contents[0].text  # type: ignore[union-attr]

    anyio.run(main)
    assert updated == ["notes://todo"]


def test_listen_over_stdio() -> None:
    from mcp.client.subscriptions import ToolsListChanged

    async def main() -> t.Any:
        c = client("tests._apps.stdio_tools", "2026-07-28")
        async with c, c.listen(tools_list_changed=True) as subscription:
            assert subscription.honored.tools_list_changed
            await c.call_tool("change_tools", {})
            with anyio.fail_after(10):
                return await subscription.__anext__()

    assert isinstance(anyio.run(main), ToolsListChanged)


@pytest.mark.parametrize("mode", MODES)
def test_a_tenants_endpoint_over_stdio(mode: str) -> None:
    """``flask mcp --path /t/acme/mcp stdio`` serves acme's endpoint of ``/t/<tenant>/mcp``:
    handlers get its ``path_args`` and ``view_args``, as over HTTP (they got ``{}`` and
    ``{'tenant': '<tenant>'}``)."""
    server = flask_mcp_stdio("tests._apps.tenants", "--path", "/t/acme/mcp")

    async def main() -> t.Any:
        async with Client(server, mode=mode, read_timeout_seconds=30) as c:
            return (await c.call_tool("where", {})).structured_content

    assert anyio.run(main) == {
        "path_args": {"tenant": "acme"},
        "view_args": {"tenant": "acme"},
        "path": "/t/acme/mcp",
    }


def test_a_tenants_endpoint_needs_its_path_over_stdio() -> None:
    """Without ``--path`` the server does not start, and says what to pass."""
    done = subprocess.run(
        [FLASK, "--app", "tests._apps.tenants", "mcp", "stdio"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "flask mcp --path /t/TENANT/mcp stdio ..." in done.stderr


@pytest.mark.parametrize("kind", ["claude-desktop", "vscode"])
def test_the_installed_entry_starts_the_server(tmp_path: pathlib.Path, kind: str) -> None:
    """What `install` writes runs from anywhere, as a desktop client runs it."""
    config = tmp_path / "config.json"
    done = subprocess.run(
        [FLASK, "--app", "examples.quickstart", "mcp", "install", kind, "--config", str(config)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "Added 'notes'" in done.stdout
    document = json.loads(config.read_text())
    entry = document["servers" if kind == "vscode" else "mcpServers"]["notes"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    server = StdioServerParameters(
        command=entry["command"], args=entry["args"], env=entry["env"], cwd=elsewhere
    )

    async def main() -> str:
        async with Client(server, mode="legacy", read_timeout_seconds=30) as c:
            return text_of(await c.call_tool("add", {"a": 20, "b": 22}))

    assert anyio.run(main) == '{"result":42}'


def test_the_installed_entry_serves_its_tenants_endpoint(tmp_path: pathlib.Path) -> None:
    """`flask mcp --path /t/acme/mcp install` writes an entry that serves acme's endpoint."""
    config = tmp_path / "config.json"
    subprocess.run(
        [FLASK, "--app", "tests._apps.tenants", "mcp", "--path", "/t/acme/mcp"]
        + ["install", "claude-desktop", "--config", str(config)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=60,
        check=True,
    )
    entry = json.loads(config.read_text())["mcpServers"]["tenants"]
    server = StdioServerParameters(
        command=entry["command"], args=entry["args"], env=entry["env"], cwd=tmp_path
    )

    async def main() -> t.Any:
        async with Client(server, mode="legacy", read_timeout_seconds=30) as c:
            return (await c.call_tool("where", {})).structured_content

    assert anyio.run(main)["path_args"] == {"tenant": "acme"}


# -- the wire itself ------------------------------------------------------------------


def start(
    app: str = "examples.quickstart", env: t.Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Run ``flask --app APP mcp stdio``, Ctrl-C (SIGINT) acting on it as in a terminal.

    A command started in the background of a non-interactive shell (as a CI runner may
    start the test run) inherits SIGINT ignored, and Python then leaves it so: the
    server would never see the SIGINT a test sends.
    """
    return subprocess.Popen(
        [FLASK, "--app", app, "mcp", "stdio"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=None if env is None else {**os.environ, **env},
        preexec_fn=functools.partial(signal.signal, signal.SIGINT, signal.SIG_DFL),
    )


def read_message(proc: subprocess.Popen[bytes], timeout: float = 30) -> t.Any:
    """Return the next message the server writes; fail (killing it) after ``timeout``."""
    stdout = proc.stdout
    assert stdout is not None
    lines: list[bytes] = []
    reader = threading.Thread(target=lambda: lines.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if not lines:
        proc.kill()
        pytest.fail(f"the server wrote no line in {timeout:g} s")
    return json.loads(lines[0])


def exchange(
    proc: subprocess.Popen[bytes], lines: list[bytes], answers: int
) -> tuple[list[t.Any], str]:
    """Write ``lines``, close stdin; return every message the server wrote, and its stderr."""
    out, err = proc.communicate(b"".join(lines), timeout=30)
    messages = [json.loads(line) for line in out.splitlines()]
    assert len(messages) == answers, messages
    return messages, err.decode()


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


def line(message: t.Any) -> bytes:
    return json.dumps(message).encode() + b"\n"


def test_stdout_holds_only_messages() -> None:
    proc = start("tests._apps.stdio_tools")
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "noisy"}}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    messages, stderr = exchange(proc, [line(INIT), line(initialized), line(call)], 3)
    assert messages[1]["method"] == "notifications/message"
    assert messages[2]["result"]["content"][0]["text"] == "quiet on stdout"
    assert "a stray print from a handler" in stderr
    assert "a log line from a handler" in stderr
    assert proc.returncode == 0


def test_bad_lines_get_precise_errors() -> None:
    proc = start()
    before_init = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
    bad_version = {
        "jsonrpc": "2.0",
        "id": 8,
        "method": "tools/list",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2099-01-01",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
    messages, _ = exchange(
        proc,
        [b"{not json\n", b"\n", b"[]\n", line(before_init), line(bad_version), b'"text"\n'],
        5,
    )
    by_id = {m["id"]: m["error"] for m in messages if m["id"] is not None}
    anonymous = [m["error"]["code"] for m in messages if m["id"] is None]
    assert sorted(anonymous) == [-32700, -32600, -32600]
    assert by_id[7]["code"] == -32600 and "initialize" in by_id[7]["message"]
    assert by_id[8]["code"] == -32022 and by_id[8]["data"]["supported"] == ["2026-07-28"]
    assert proc.returncode == 0


def test_a_message_over_the_body_limit_is_refused() -> None:
    proc = subprocess.Popen(
        [FLASK, "--app", "examples.quickstart", "mcp", "stdio"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "FLASK_MCP_MAX_BODY_SIZE": "1000"},
    )
    big = {**INIT, "params": {**INIT["params"], "padding": "x" * 5000}}  # type: ignore[dict-item]
    # At the limit, as HTTP takes a body of MCP_MAX_BODY_SIZE bytes: it was refused.
    pre = b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"x":"'
    at_limit = pre + b"a" * (1000 - len(pre) - 4) + b'"}}}'
    assert len(at_limit) == 1000
    over = at_limit.replace(b'"x":"', b'"x":"a')
    lines = [line(big), line(INIT), at_limit + b"\n", over + b"\n"]
    messages, _ = exchange(proc, lines, 4)
    assert messages[0]["id"] is None and "MCP_MAX_BODY_SIZE" in messages[0]["error"]["message"]
    assert messages[1]["result"]["serverInfo"]["name"] == "notes"
    assert messages[2] == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert messages[3]["id"] is None and "MCP_MAX_BODY_SIZE" in messages[3]["error"]["message"]


def test_a_cancel_naming_no_request_is_ignored() -> None:
    proc = start()
    cancels = [
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {}}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},
    ]
    messages, _ = exchange(proc, [*map(line, cancels), line(INIT)], 1)
    assert messages[0]["id"] == 1 and "result" in messages[0]


def test_exits_when_stdin_closes() -> None:
    proc = start()
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0


def stalled_stdio(tmp_path: pathlib.Path, app: str, sent: bytes) -> None:
    """Run ``flask mcp stdio`` on ``app`` with ``MCP_WRITE_TIMEOUT`` 1 s and a stdout
    nobody reads, send it ``sent``: it must log that it ended the session on the write
    timeout, then exit (0) once stdin closes."""
    log = tmp_path / "stderr.log"
    with log.open("wb") as stderr:
        proc = subprocess.Popen(
            [FLASK, "--app", app, "mcp", "stdio"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,  # never read
            stderr=stderr,
            env={**os.environ, "FLASK_MCP_WRITE_TIMEOUT": "1"},
        )
    assert proc.stdin is not None
    try:
        proc.stdin.write(sent)
        proc.stdin.flush()
        for _ in range(300):  # a bound on the wait, not a speed
            if "MCP_WRITE_TIMEOUT" in log.read_text(errors="replace"):
                break
            time.sleep(0.1)
        assert "MCP_WRITE_TIMEOUT" in log.read_text(errors="replace"), log.read_text()
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0, log.read_text()
    finally:
        proc.kill()
        proc.wait()


def test_a_client_that_reads_nothing_has_its_session_ended(tmp_path: pathlib.Path) -> None:
    """A client that stops reading stdout gets its session ended after
    ``MCP_WRITE_TIMEOUT``, as an HTTP client that reads nothing has its connection closed:
    the server's write waited for ever, and every handler with something to write piled
    up behind it."""
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    calls = [
        {
            "jsonrpc": "2.0",
            "id": 10 + number,
            "method": "tools/call",
            "params": {"name": "bulky", "arguments": {"size": 200_000}},
        }
        for number in range(4)
    ]
    stalled_stdio(
        tmp_path, "tests._apps.stdio_tools", b"".join(map(line, [INIT, initialized, *calls]))
    )


@pytest.mark.parametrize("app", ["tests._apps.stdio_tools", "tests._apps.stdio_gevent"])
def test_a_stalled_inline_answer_does_not_stop_the_reading(
    tmp_path: pathlib.Path, app: str
) -> None:
    """A client that stops reading stdout while the reading loop answers inline (parse
    errors here, as ``initialize`` is answered) still has stdin read: after
    ``MCP_WRITE_TIMEOUT`` its session ends, and once stdin closes the process exits.

    The reading loop wrote those answers itself: the write that stalled was its own, so
    stdin was never read again, and the process never exited.
    """
    # Each is answered inline with a parse error of ~100 bytes: ten times a pipe's 64 KiB.
    stalled_stdio(tmp_path, app, b"not json\n" * 6_000)


LISTEN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def open_listen(proc: subprocess.Popen[bytes]) -> None:
    """Open ``subscriptions/listen`` (id ``"changes"``) and read its acknowledgment."""
    assert proc.stdin is not None and proc.stdout is not None
    params = {"notifications": {"toolsListChanged": True}, "_meta": LISTEN_META}
    listen = {"jsonrpc": "2.0", "id": "changes", "method": "subscriptions/listen"}
    proc.stdin.write(line({**listen, "params": params}))
    proc.stdin.flush()
    ack = read_message(proc)
    assert ack["method"] == "notifications/subscriptions/acknowledged", ack


def test_a_client_closing_stdin_gets_nothing_more_for_its_listen() -> None:
    """Closing stdin is how the client ends the session (``basic/transports/stdio.mdx``,
    Shutdown): its subscriptions end with the transport, which carries nothing more
    (``basic/patterns/subscriptions.mdx``, Cancellation). The server wrote a
    ``notifications/cancelled`` "shutting down" for each open listen, as if it had torn
    them down itself, to a client that asked it to end and may read nothing more."""
    proc = start()
    open_listen(proc)
    out, err = proc.communicate(timeout=30)  # closes stdin, reads stdout to its end
    assert out == b"", out
    assert proc.returncode == 0, err.decode()


def test_a_server_interrupted_cancels_its_open_listens() -> None:
    """A server ended on its own side (Ctrl-C: SIGINT) tears its listens down: each gets
    the ``notifications/cancelled`` the spec requires of it (``cancellation.mdx``)."""
    proc = start()
    open_listen(proc)
    proc.send_signal(signal.SIGINT)
    cancel = read_message(proc)
    assert cancel["method"] == "notifications/cancelled", cancel
    assert cancel["params"]["requestId"] == "changes"
    assert "shutting down" in cancel["params"]["reason"]
    proc.communicate(timeout=30)


def test_a_listen_the_server_ended_on_sigint_is_not_told_as_the_client_gone(
    tmp_path: pathlib.Path,
) -> None:
    """A listen torn down because the server was interrupted ends, for ``listen_finished``
    (and the telemetry that follows it), with ``"interrupted"``: the server cancelled it,
    and said so to the client. It was told as ``"client-gone"``, as if the client had left,
    then as ``"shutdown"``, as a listen a stopping HTTP worker ends with its result."""
    signals_file = tmp_path / "signals.jsonl"
    proc = start("tests._apps.observe", {"OBSERVE_SIGNALS": str(signals_file)})
    try:
        open_listen(proc)
        proc.send_signal(signal.SIGINT)
        cancel = read_message(proc)
        assert cancel["method"] == "notifications/cancelled", cancel
        proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    seen = [json.loads(line) for line in signals_file.read_text().splitlines()]
    (finished,) = [s for s in seen if s["signal"] == "listen_finished"]
    assert finished["request_id"] == "changes"
    assert finished["reason"] == "interrupted", finished
