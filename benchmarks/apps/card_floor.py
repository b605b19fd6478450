"""The floor of the realistic card: a bare Flask view running the card's tools.

It answers the card's ``tools/call`` requests as :mod:`.floor_app` answers
``add``: decode the body, run the tool, encode a result of the same shape as
Flask-MCP's, and nothing else (no session, no validation of the arguments, no
greenlet per call, no stream). The tools are :mod:`.card_flask_mcp`'s, the
functions of :mod:`.card_sync`: the same plain sync code on the same clients (one
``requests.Session`` with a pool of :data:`.card_data.HTTP_POOL`, ``redis.Redis``),
made concurrent by ``gunicorn -k gevent``'s patching. Nothing built on Flask and
these clients can be faster, so its req/s is the ceiling of any Flask server on
the card. Run::

    gunicorn -k gevent -w 1 benchmarks.apps.card_floor:app

The result is Flask-MCP's: a dict (the first edition's tools) as a text block of
its compact JSON and as ``structuredContent``, a string (the second edition's)
as one text block; a raised error as a result with ``isError``. Bodies are
encoded with orjson, the encoder of Flask-MCP's bodies, a dict result once (its
bytes are the text and, spliced in, the ``structuredContent``). A request in the
2026-07-28 form gets what :mod:`.floor_app` gives it: its ``MCP-Protocol-Version``,
``Mcp-Method`` and ``Mcp-Name`` headers compared with the body (400 and -32020
when one differs, 400 and -32022 for another version) and ``resultType`` and
``_meta`` ``serverInfo`` in the result.

The benchmarks declare the floor stateless (``stateful=False``), so they send it
no handshake and no ``Mcp-Session-Id``: 2025-11-25 calls come without a session,
as to the ASGI servers' stateless modes. A client that does run the handshake
still gets through: ``initialize`` is answered without a session id (the floor
keeps none) and a notification with 202.
"""

from __future__ import annotations

import typing as t

import orjson
from flask import Flask
from flask import Response
from flask import request

from . import card_sync

SERVER_TYPE = "floor"
#: The ``_meta`` key that marks a 2026-07-28 request, and the one version served.
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
VERSION = "2026-07-28"
#: What ``initialize`` offers: the last handshake-era revision.
HANDSHAKE_VERSION = "2025-11-25"
_SERVER_INFO = {"name": "card-floor", "version": "1.0.0"}
#: The ``_meta`` of every 2026-07-28 result.
_RESULT_META = {"io.modelcontextprotocol/serverInfo": _SERVER_INFO}


#: The card's tools by name: :mod:`.card_sync`'s, as Flask-MCP's app registers them.
TOOLS: dict[str, t.Callable[..., t.Any]] = {
    tool.__name__: tool for tool in card_sync.sync_tools(SERVER_TYPE)
}

# --- the endpoint --------------------------------------------------------------------------

app = Flask(__name__)


def _json(body: object, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status=status, mimetype="application/json")


def _error(request_id: object, code: int, text: str, status: int = 400) -> Response:
    return _json(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}, status
    )


def _refusal(message: dict[str, t.Any], params: dict[str, t.Any], version: object) -> str | None:
    """Return why a 2026-07-28 request's headers do not repeat its body, if they do not."""
    environ = request.environ
    if environ.get("HTTP_MCP_PROTOCOL_VERSION") != version:
        return "MCP-Protocol-Version"
    if environ.get("HTTP_MCP_METHOD") != message.get("method"):
        return "Mcp-Method"
    if environ.get("HTTP_MCP_NAME") != params.get("name"):
        return "Mcp-Name"
    return None


def _result(name: str, arguments: dict[str, t.Any]) -> dict[str, t.Any]:
    """Run tool ``name`` and return its ``CallToolResult`` (``isError`` when it raised)."""
    try:
        value = TOOLS[name](**arguments)
    except Exception as exc:  # noqa: BLE001 - a tool's error is a result, as in Flask-MCP
        return {
            "content": [{"type": "text", "text": f"{type(exc).__name__}: {exc}"}],
            "isError": True,
        }
    if isinstance(value, str):
        return {"content": [{"type": "text", "text": value}]}
    encoded = orjson.dumps(value)
    return {
        "content": [{"type": "text", "text": encoded.decode()}],
        "structuredContent": orjson.Fragment(encoded),
    }


def _other(message: dict[str, t.Any]) -> Response:
    """Answer what is not ``tools/call``: the handshake, notifications, anything else."""
    method = message.get("method")
    if "id" not in message:  # a notification (notifications/initialized) or a response
        return Response(status=202)
    if method == "initialize":
        result = {
            "protocolVersion": HANDSHAKE_VERSION,
            "capabilities": {"tools": {}},
            "serverInfo": _SERVER_INFO,
        }
        return _json({"jsonrpc": "2.0", "id": message["id"], "result": result})
    return _error(message["id"], -32601, f"Method not found: {method}", 200)


@app.post("/mcp")
def endpoint() -> Response:
    """Answer one JSON-RPC request of the card, in either protocol era."""
    message = orjson.loads(request.get_data())
    if message.get("method") != "tools/call":
        return _other(message)
    params = message.get("params") or {}
    meta = params.get("_meta")
    version = meta.get(VERSION_KEY) if meta else None
    if version is not None:  # the 2026-07-28 form
        header = _refusal(message, params, version)
        if header is not None:
            return _error(message.get("id"), -32020, f"Header mismatch: {header}")
        if version != VERSION:
            return _error(message.get("id"), -32022, f"Unsupported protocol version {version}")
    name = params.get("name")
    if name not in TOOLS:
        return _error(message.get("id"), -32602, f"Unknown tool: {name}", 200)
    result = _result(name, params.get("arguments") or {})
    if version is not None:
        result["resultType"] = "complete"
        result["_meta"] = _RESULT_META
    return _json({"jsonrpc": "2.0", "id": message.get("id"), "result": result})
