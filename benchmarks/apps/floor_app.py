"""The floor: a bare Flask view answering ``tools/call`` with a JSON-RPC result.

It does the least an MCP server must do for one call (decode the body, run
the tool, encode a result of the same shape as Flask-MCP's) and nothing else:
no session, no header checks, no greenlet, no stream. Nothing built on Flask
can be faster, so its figures are the ceiling Flask-MCP is measured against.
"""

from __future__ import annotations

import json
import os

from flask import Flask
from flask import Response
from flask import request

BLOB_SIZE = int(os.environ.get("BENCH_BLOB_SIZE", str(1_000_000)))
_BLOB = "x" * BLOB_SIZE

app = Flask(__name__)


def _result(arguments: dict[str, object], name: str) -> dict[str, object]:
    if name == "blob":
        return {"content": [{"type": "text", "text": _BLOB}]}
    total = int(arguments["a"]) + int(arguments["b"])  # type: ignore[call-overload]
    return {
        "content": [{"type": "text", "text": json.dumps({"result": total})}],
        "structuredContent": {"result": total},
    }


@app.post("/mcp")
def endpoint() -> Response:
    """Answer one JSON-RPC ``tools/call`` request."""
    message = request.get_json(force=True)
    params = message.get("params") or {}
    body = {
        "jsonrpc": "2.0",
        "id": message.get("id"),
        "result": _result(params.get("arguments") or {}, params.get("name", "add")),
    }
    return Response(json.dumps(body, separators=(",", ":")), mimetype="application/json")
