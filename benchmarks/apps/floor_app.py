"""The floor: a bare Flask view answering ``tools/call`` with a JSON-RPC result.

It does the least an MCP server must do for one call (decode the body, run
the tool, encode a result of the same shape as Flask-MCP's) and nothing else:
no session, no header checks beyond the spec's, no greenlet, no stream.
Nothing built on Flask can be faster, so its figures are the ceiling
Flask-MCP is measured against.

A request in the 2026-07-28 form (``io.modelcontextprotocol/protocolVersion``
in ``params._meta``) gets what that revision requires of every server, and no
more: the ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` headers
compared with the body (400 and -32020 when one differs, 400 and -32022 for
another version), and a result carrying ``resultType`` (a MUST) and the
server's ``_meta`` ``serverInfo`` (a SHOULD Flask-MCP follows), so that both
sides of ``floor/gevent@2026`` answer the same request with the same response.

With ``BENCH_FLOOR_FAIR=1`` (``floor-fair/gevent``) it also ends each call as
Flask-MCP's inline calls end: it gives the other greenlets a turn when the same
greenlet would otherwise serve a second request in one turn of gevent's loop
(:func:`flask_mcp.runtime.concurrency.let_others_run`, the same function). The
bare floor serves a keep-alive connection whose next request is already read
again and again, which is cheaper and starves the others (its p99); the fair
floor pays what Flask-MCP pays for not doing so, and shows what is left of the
gap to the floor once that price is on both sides.
"""

from __future__ import annotations

import json
import os

from flask import Flask
from flask import Response
from flask import request

BLOB_SIZE = int(os.environ.get("BENCH_BLOB_SIZE", str(1_000_000)))
_BLOB = "x" * BLOB_SIZE
#: The ``_meta`` key that marks a 2026-07-28 request, and the one version served.
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
VERSION = "2026-07-28"
#: The ``_meta`` of every 2026-07-28 result.
_RESULT_META = {"io.modelcontextprotocol/serverInfo": {"name": "bare-flask", "version": "1.0.0"}}
#: Whether each call ends by giving the other greenlets a turn, as Flask-MCP's do.
FAIR = os.environ.get("BENCH_FLOOR_FAIR") == "1"
if FAIR:  # the bare floor imports nothing of Flask-MCP (its RSS is a figure too)
    from flask_mcp.runtime import concurrency

app = Flask(__name__)


def _result(arguments: dict[str, object], name: str) -> dict[str, object]:
    if name == "blob":
        return {"content": [{"type": "text", "text": _BLOB}]}
    total = int(arguments["a"]) + int(arguments["b"])  # type: ignore[call-overload]
    return {
        "content": [{"type": "text", "text": json.dumps({"result": total})}],
        "structuredContent": {"result": total},
    }


def _refusal(message: dict[str, object], params: dict[str, object], version: object) -> str | None:
    """Return why a 2026-07-28 request's headers do not repeat its body, if they do not."""
    environ = request.environ
    if environ.get("HTTP_MCP_PROTOCOL_VERSION") != version:
        return "MCP-Protocol-Version"
    if environ.get("HTTP_MCP_METHOD") != message.get("method"):
        return "Mcp-Method"
    if environ.get("HTTP_MCP_NAME") != params.get("name"):
        return "Mcp-Name"
    return None


def _error(request_id: object, code: int, text: str) -> Response:
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}
    return Response(json.dumps(body), status=400, mimetype="application/json")


@app.post("/mcp")
def endpoint() -> Response:
    """Answer one JSON-RPC ``tools/call`` request, in either protocol era."""
    message = request.get_json(force=True)
    params = message.get("params") or {}
    meta = params.get("_meta")
    version = meta.get(VERSION_KEY) if meta else None
    if version is not None:  # the 2026-07-28 form
        header = _refusal(message, params, version)
        if header is not None:
            return _error(message.get("id"), -32020, f"Header mismatch: {header}")
        if version != VERSION:
            return _error(message.get("id"), -32022, f"Unsupported protocol version {version}")
    result = _result(params.get("arguments") or {}, params.get("name", "add"))
    if version is not None:
        result["resultType"] = "complete"
        result["_meta"] = _RESULT_META
    body = {"jsonrpc": "2.0", "id": message.get("id"), "result": result}
    if FAIR:
        concurrency.let_others_run(concurrency.current_task())
    return Response(json.dumps(body, separators=(",", ":")), mimetype="application/json")
