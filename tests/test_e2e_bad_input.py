"""Malformed input on a real server: a clear error naming the fix, and the next request works."""

from __future__ import annotations

import json
import pathlib
import socket
import subprocess
import sys
import typing as t

import httpx
import pytest
from wire import HEADERS
from wire import V2026
from wire import initialize_request
from wire import meta

pytestmark = pytest.mark.e2e
APP = "tests._apps.backchannel:app"
OLD = "2025-11-25"
ROOT = pathlib.Path(__file__).resolve().parent.parent
FLASK = str(pathlib.Path(sys.executable).parent / "flask")


def start(http: httpx.Client, url: str, version: str = OLD) -> dict[str, str]:
    """Start a session of ``version``; return the headers of its next requests."""
    response = http.post(url, headers=HEADERS, json=initialize_request(version))
    assert response.status_code == 200, response.text
    headers = {
        **HEADERS,
        "Mcp-Session-Id": response.headers["mcp-session-id"],
        "MCP-Protocol-Version": version,
    }
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert http.post(url, headers=headers, json=initialized).status_code == 202
    return headers


def headers_2026(method: str, name: str | None = None) -> dict[str, str]:
    headers = {**HEADERS, "MCP-Protocol-Version": V2026, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def add_call(arguments: str, version: str = OLD) -> str:
    """The raw JSON of a ``tools/call`` of ``add`` with ``arguments`` (JSON text)."""
    extra = f',"_meta":{json.dumps(meta())}' if version == V2026 else ""
    return (
        '{"jsonrpc":"2.0","id":7,"method":"tools/call",'
        f'"params":{{"name":"add","arguments":{arguments}{extra}}}}}'
    )


@pytest.mark.parametrize("worker", ["gevent", "gthread"])
def test_deeply_nested_arguments_are_refused_as_arguments(serve: t.Any, worker: str) -> None:
    # Nested less deeply than the JSON parser refuses, more than validation can recurse.
    deep = "[" * 990 + "]" * 990
    url = serve(APP, worker).url
    with httpx.Client(timeout=30) as http:
        session = start(http, url)
        for version, headers in ((OLD, session), (V2026, headers_2026("tools/call", "add"))):
            body = add_call(f'{{"a":{deep},"b":1}}', version)
            answer = http.post(url, headers=headers, content=body).json()
            text = json.dumps(answer)
            assert "Internal error" not in text, (version, text[:300])
            assert "nested too deeply" in text, (version, text[:300])
            # A huge value of the wrong type is named, not echoed whole to the model.
            huge = http.post(
                url, headers=headers, content=add_call(f'{{"a":"{"x" * 2**20}","b":1}}', version)
            )
            text = huge.json()["result"]["content"][0]["text"]
            assert "'a'" in text and "integer" in text and len(text) < 1000, (version, text[:300])
            good = http.post(url, headers=headers, content=add_call('{"a":1,"b":2}', version))
            assert good.json()["result"]["structuredContent"] == {"result": 3}, good.text


def stdio_exchange(lines: list[bytes]) -> list[t.Any]:
    """Write ``lines`` to ``flask mcp stdio`` and close stdin; return what it wrote."""
    proc = subprocess.Popen(
        [FLASK, "--app", APP.partition(":")[0], "mcp", "stdio"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = proc.communicate(b"".join(lines), timeout=30)
    assert proc.returncode == 0, err.decode()[-2000:]
    return [json.loads(line) for line in out.splitlines()]


def test_an_empty_batch_on_a_batching_session_says_it_is_empty(serve: t.Any) -> None:
    url = serve(APP, "gevent").url
    ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    with httpx.Client(timeout=30) as http:
        session = start(http, url, "2025-03-26")
        answer = http.post(url, headers=session, content=b"[]")
        assert answer.status_code == 400
        error = answer.json()["error"]
        assert error["code"] == -32600 and "empty" in error["message"], error
        assert http.post(url, headers=session, json=[ping]).json() == [
            {"jsonrpc": "2.0", "id": 9, "result": {}}
        ]
    init = initialize_request("2025-03-26")
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    lines = [json.dumps(m).encode() + b"\n" for m in (init, initialized)]
    messages = stdio_exchange([*lines, b"[]\n", json.dumps([ping]).encode() + b"\n"])
    assert messages[1]["error"]["code"] == -32600, messages
    assert "empty" in messages[1]["error"]["message"], messages
    assert messages[2] == [{"jsonrpc": "2.0", "id": 9, "result": {}}]


@pytest.mark.parametrize("bad", [[1], "progress", 5])
def test_a_meta_that_is_no_object_is_invalid_params_in_a_session(serve: t.Any, bad: t.Any) -> None:
    url = serve(APP, "gevent").url
    with httpx.Client(timeout=30) as http:
        session = start(http, url)
        params = {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": bad}
        message = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}
        error = http.post(url, headers=session, json=message).json()["error"]
        assert error["code"] == -32602 and "_meta must be an object" in error["message"], error
        params["_meta"] = {"progressToken": 1}
        good = http.post(url, headers=session, json=message)
        assert "structuredContent" in good.text, good.text


def test_a_notification_sent_with_an_id_is_told_to_drop_it(serve: t.Any) -> None:
    url = serve(APP, "gevent").url
    cancel = {"requestId": 1, "_meta": meta()}
    message = {"jsonrpc": "2.0", "id": 4, "method": "notifications/cancelled", "params": cancel}
    with httpx.Client(timeout=30) as http:
        session = start(http, url)
        for headers in (session, headers_2026("notifications/cancelled")):
            error = http.post(url, headers=headers, json=message).json()["error"]
            assert error["code"] == -32601, error
            assert 'send it without an "id"' in error["message"], error
            del message["id"]
            assert http.post(url, headers=headers, json=message).status_code == 202
            message["id"] = 4


@pytest.mark.parametrize("worker", ["gevent", "gthread"])
def test_a_malformed_chunked_body_is_a_clear_400(serve: t.Any, worker: str) -> None:
    """A chunked body whose chunks are malformed, or that ends before its last chunk, is
    a 400 saying so: it was an HTML 500 with the server's traceback logged as an error."""
    server = serve(APP, worker)
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    head = (
        (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
            "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n"
        ).encode()
        + b"%x\r\n" % len(body)
        + body
    )
    for tail in (b"XX0\r\n\r\n", b"\r\nZZ\r\n\r\n", b"\r\n"):
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
            sock.sendall(head + tail)
            sock.shutdown(socket.SHUT_WR)  # the body ends there
            answer = b""
            while chunk := sock.recv(4096):
                answer += chunk
        status, _, rest = answer.partition(b"\r\n")
        assert status == b"HTTP/1.1 400 BAD REQUEST", answer
        error = json.loads(rest.partition(b"\r\n\r\n")[2])["error"]
        assert error["code"] == -32600 and "could not be read" in error["message"], error
    with httpx.Client(timeout=30) as http:
        start(http, server.url)  # the worker serves the next client
    assert "Traceback" not in server.log(), server.log_tail()
