"""Resource templates on a real app: refused values, the opt-out and the URI length cap.

Both eras: the handshake era through :class:`~flask_mcp.testing.MCPTestClient`, 2026-07-28
through raw POSTs on Flask's test client, and both through the official client on gunicorn.
"""

from __future__ import annotations

import typing as t

import pytest
from flask import Flask
from wire import parse
from wire import send_2026

from flask_mcp import MCP
from flask_mcp import ResourceSecurity
from flask_mcp.testing import MCPTestClient

V2026 = "2026-07-28"


def make_app(calls: list[tuple[str, str]], **config: t.Any) -> Flask:
    """An app whose templates record the values their handlers receive."""
    mcp = MCP(name="templates", version="1.0.0")

    @mcp.resource("files://{+path}", mime_type="text/plain")
    def read_file(path: str) -> str:
        calls.append(("files", path))
        return f"file {path}"

    @mcp.resource("notes://{name}", mime_type="text/plain")
    def note(name: str) -> str:
        calls.append(("notes", name))
        return f"note {name}"

    @mcp.resource("git://{repo}/diff/{+range}", security=ResourceSecurity(exempt_params={"range"}))
    def diff(repo: str, range: str) -> str:  # noqa: A002 - the name of the variable
        calls.append(("git", range))
        return f"diff {repo} {range}"

    @mcp.resource("raw://{+anything}", security=None)
    def raw(anything: str) -> str:
        calls.append(("raw", anything))
        return "raw"

    @mcp.resource("abs://{+path}", security=ResourceSecurity(reject_absolute_paths=False))
    def absolute(path: str) -> str:
        calls.append(("abs", path))
        return "abs"

    @mcp.completion("resource", "notes://{name}")
    def complete_note(argument: str, value: str, context: t.Any) -> list[str]:
        return ["groceries"]

    app = Flask(__name__)
    app.config.update(TESTING=True, SECRET_KEY="templates-secret", **config)
    mcp.init_app(app)
    return app


def handshake_error(app: Flask, method: str, params: dict[str, t.Any]) -> tuple[int, str]:
    """The code and text of the JSON-RPC error a 2025-11-25 session gets."""
    with MCPTestClient(app) as client, pytest.raises(Exception) as info:  # noqa: B017, PT011
        client.request(method, params)
    return info.value.code, str(info.value)  # type: ignore[attr-defined]


def post_2026(app: Flask, method: str, params: dict[str, t.Any]) -> tuple[int, dict[str, t.Any]]:
    """POST one 2026-07-28 request; return the HTTP status and the JSON-RPC answer."""
    response = send_2026(app.test_client(), method, params, caps={})
    return response.status_code, parse(response)[-1]


REFUSED = [
    ("files://../secret", "path", "holds a '..' path segment"),
    ("files://a/%2E%2E/b", "path", "holds a '..' path segment"),
    ("notes://..", "name", "holds a '..' path segment"),
    ("notes://%2E%2E%2F%2E%2E%2Fetc", "name", "holds a '..' path segment"),
    ("notes://a%5C..%5Cb", "name", "holds a '..' path segment"),
    ("files:///etc/passwd", "path", "is an absolute path"),
    ("notes://%2Fetc%2Fpasswd", "name", "is an absolute path"),
    ("files://C:/Windows", "path", "is an absolute path"),
    ("notes://%5C%5Cserver%5Cshare", "name", "is an absolute path"),
    ("notes://a%00b", "name", "holds a NUL character"),
    ("git://..%2Fx/diff/HEAD", "repo", "holds a '..' path segment"),
    ("abs://../x", "path", "holds a '..' path segment"),
]

ALLOWED = [
    ("files://a/b.tar.gz", ("files", "a/b.tar.gz")),
    ("notes://v1..v2", ("notes", "v1..v2")),
    ("git://repo/diff/../../etc", ("git", "../../etc")),  # exempt_params={"range"}
    ("raw://../../etc/passwd%00", ("raw", "../../etc/passwd\0")),  # security=None
    ("abs:///etc/passwd", ("abs", "/etc/passwd")),  # reject_absolute_paths=False
]


@pytest.mark.parametrize(("uri", "param", "reason"), REFUSED)
def test_unsafe_values_are_refused_handshake(uri: str, param: str, reason: str) -> None:
    calls: list[tuple[str, str]] = []
    code, text = handshake_error(make_app(calls), "resources/read", {"uri": uri})
    assert code == -32602
    assert f"the value of {param!r} in this URI {reason}" in text
    assert calls == []


@pytest.mark.parametrize(("uri", "param", "reason"), REFUSED)
def test_unsafe_values_are_refused_2026(uri: str, param: str, reason: str) -> None:
    calls: list[tuple[str, str]] = []
    status, message = post_2026(make_app(calls), "resources/read", {"uri": uri})
    assert status != 500
    assert message["error"]["code"] == -32602
    assert f"the value of {param!r} in this URI {reason}" in message["error"]["message"]
    assert message["error"]["data"] == {"uri": uri, "parameter": param}
    assert calls == []


@pytest.mark.parametrize(("uri", "call"), ALLOWED)
def test_safe_and_exempt_values_reach_the_handler(uri: str, call: tuple[str, str]) -> None:
    calls: list[tuple[str, str]] = []
    app = make_app(calls)
    with MCPTestClient(app) as client:
        assert client.read_resource(uri)[0]["uri"] == uri
    status, message = post_2026(app, "resources/read", {"uri": uri})
    assert status == 200 and message["result"]["contents"][0]["uri"] == uri
    assert calls == [call, call]


def test_refusal_does_not_fall_through_to_a_later_template() -> None:
    mcp = MCP(name="order", version="1.0.0")
    mcp.add_resource(lambda path: path, "files://{+path}")
    mcp.add_resource(lambda uri: uri, "{+uri}", security=None)  # matches every URI
    app = Flask(__name__)
    mcp.init_app(app)
    code, text = handshake_error(app, "resources/read", {"uri": "files://../etc/passwd"})
    assert code == -32602 and "'..' path segment" in text
    with MCPTestClient(app) as client:
        assert client.read_resource("other://../x")[0]["text"] == "other://../x"


def test_registration_checks_the_security_names() -> None:
    mcp = MCP(name="names", version="1.0.0")
    with pytest.raises(ValueError, match="'rnage', which is not a variable"):
        mcp.add_resource(
            lambda range: range,  # noqa: A002
            "git://diff/{+range}",
            security=ResourceSecurity(exempt_params={"rnage"}),
        )
    with pytest.raises(ValueError, match="more than one multi-segment expression"):
        mcp.add_resource(lambda a, b: a, "u://{+a}/{+b}")
    # A static resource has no values to screen: any policy is accepted.
    mcp.add_resource(lambda: "x", "static://x", security=ResourceSecurity(exempt_params={"y"}))


# -- MCP_MAX_URI_LENGTH ---------------------------------------------------------------------


def long_note(length: int) -> str:
    return "notes://" + "a" * (length - len("notes://"))


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("resources/read", lambda uri: {"uri": uri}),
        ("resources/subscribe", lambda uri: {"uri": uri}),
        ("resources/unsubscribe", lambda uri: {"uri": uri}),
        (
            "completion/complete",
            lambda uri: {"ref": {"type": "ref/resource", "uri": uri}, "argument": {"name": "n"}},
        ),
    ],
)
def test_uri_length_cap_handshake(method: str, params: t.Callable[[str], t.Any]) -> None:
    calls: list[tuple[str, str]] = []
    app = make_app(calls)
    code, text = handshake_error(app, method, params(long_note(8193)))
    assert code == -32602
    assert "8193 characters long; this server accepts at most 8192 (MCP_MAX_URI_LENGTH)" in text
    assert calls == []
    if method == "resources/read":  # exactly at the cap: served
        with MCPTestClient(app) as client:
            assert client.read_resource(long_note(8192))[0]["text"].startswith("note aaa")


def test_uri_length_cap_2026() -> None:
    calls: list[tuple[str, str]] = []
    app = make_app(calls, MCP_MAX_URI_LENGTH=64)
    status, message = post_2026(app, "resources/read", {"uri": long_note(65)})
    assert status != 500 and message["error"]["code"] == -32602
    assert "at most 64 (MCP_MAX_URI_LENGTH)" in message["error"]["message"]
    ref = {"type": "ref/resource", "uri": "notes://{name}" + " " * 60}
    _, message = post_2026(app, "completion/complete", {"ref": ref, "argument": {"name": "n"}})
    assert message["error"]["code"] == -32602
    assert calls == []
    status, message = post_2026(app, "resources/read", {"uri": long_note(64)})
    assert status == 200 and "result" in message and len(calls) == 1


def test_uri_length_cap_is_validated() -> None:
    with pytest.raises(ValueError, match="Invalid MCP_MAX_URI_LENGTH=0: must be a positive"):
        make_app([], MCP_MAX_URI_LENGTH=0)


# -- on the wire: the official client on gunicorn -------------------------------------------


@pytest.mark.e2e
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # handshake-era calls in mcp 2.3
@pytest.mark.parametrize("worker", ["gevent", "gthread"])
def test_official_client_gets_invalid_params(serve: t.Any, worker: str) -> None:
    import anyio
    from mcp import Client

    # A URI over the cap whose Mcp-Name header (2026-07-28) fits gunicorn's 8190-byte limit.
    server = serve("examples.everything:app", worker, env={"FLASK_MCP_MAX_URI_LENGTH": "1000"})
    codes: dict[str, list[int]] = {}

    async def main() -> None:
        for mode in ("legacy", V2026):
            async with Client(server.url, mode=mode) as client:
                read = await client.read_resource("test://template/7/data")
                assert '"id":"7"' in read.contents[0].text  # type: ignore[union-attr]
                for uri in (
                    "test://template/..%2F..%2Fetc/data",
                    "test://template/" + "1" * 1000 + "/data",
                ):
                    with pytest.raises(Exception) as info:  # noqa: B017, PT011
                        await client.read_resource(uri)
                    codes.setdefault(mode, []).append(info.value.code)  # type: ignore[attr-defined]

    anyio.run(main)
    assert codes == {"legacy": [-32602, -32602], V2026: [-32602, -32602]}
