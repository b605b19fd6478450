"""The floor of the large-result benchmark: a bare Flask view answering with orjson.

It answers ``tools/call`` of ``large_structured(size)`` and ``large_text(size)``
with the result Flask-MCP gives (a text block holding the JSON, and for the
structured tool ``structuredContent`` too), encoding the text and the response
with orjson, the encoder Flask-MCP uses for its bodies. Nothing else: no session,
no validation, no greenlet. A request in the 2026-07-28 form gets its
``resultType`` and ``_meta`` ``serverInfo``, and its headers compared with the
body, as :mod:`.floor_app` does.
"""

from __future__ import annotations

import orjson
from flask import Flask
from flask import Response
from flask import request

from .card_data import SIZES
from .card_data import large_payload

VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
_RESULT_META = {"io.modelcontextprotocol/serverInfo": {"name": "bare-flask", "version": "1.0.0"}}

PAYLOADS = {name: large_payload(size) for name, size in SIZES.items()}
TEXTS = {name: orjson.dumps(payload).decode() for name, payload in PAYLOADS.items()}

app = Flask(__name__)


def _error(request_id: object, code: int, text: str) -> Response:
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}
    return Response(orjson.dumps(body), status=400, mimetype="application/json")


@app.post("/mcp")
def endpoint() -> Response:
    """Answer one ``tools/call`` of a large-result tool, in either protocol era."""
    message = orjson.loads(request.get_data())
    params = message.get("params") or {}
    meta = params.get("_meta")
    version = meta.get(VERSION_KEY) if meta else None
    environ = request.environ
    if version is not None and (
        environ.get("HTTP_MCP_PROTOCOL_VERSION") != version
        or environ.get("HTTP_MCP_METHOD") != message.get("method")
        or environ.get("HTTP_MCP_NAME") != params.get("name")
    ):
        return _error(message.get("id"), -32020, "Header mismatch")
    name = params.get("name")
    size = (params.get("arguments") or {}).get("size")
    if size not in PAYLOADS or name not in ("large_structured", "large_text"):
        return _error(message.get("id"), -32602, f"unknown tool or size: {name} {size}")
    if name == "large_text":
        result: dict[str, object] = {"content": [{"type": "text", "text": TEXTS[size]}]}
    else:
        payload = PAYLOADS[size]
        result = {
            "content": [{"type": "text", "text": orjson.dumps(payload).decode()}],
            "structuredContent": payload,
        }
    if version is not None:
        result["resultType"] = "complete"
        result["_meta"] = _RESULT_META
    body = {"jsonrpc": "2.0", "id": message.get("id"), "result": result}
    return Response(orjson.dumps(body), mimetype="application/json")
