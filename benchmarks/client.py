"""A minimal blocking MCP client: the handshake, the 2026-07-28 probe and one-off calls.

It speaks just enough HTTP (``http.client``) and SSE to set up what wrk then
drives; it is not used for the measured traffic.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import os
import typing as t
from urllib.parse import urlsplit

HANDSHAKE_VERSION = "2025-11-25"
STATELESS_VERSION = "2026-07-28"
META = "io.modelcontextprotocol/"
ACCEPT = "application/json, text/event-stream"
CLIENT_INFO = {"name": "flask-mcp-benchmarks", "version": "1.0"}


@dataclasses.dataclass
class Reply:
    """One HTTP answer: status, headers (lower-cased names), raw body and its messages."""

    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def messages(self) -> list[dict[str, t.Any]]:
        """The JSON-RPC messages of the body, whether JSON or SSE."""
        text = self.body.decode("utf-8", "replace")
        if self.headers.get("content-type", "").startswith("text/event-stream"):
            found = []
            for line in text.splitlines():
                if line.startswith("data:") and line[5:].strip():
                    found.append(json.loads(line[5:].strip()))
            return found
        if not text.strip():
            return []
        decoded = json.loads(text)
        return decoded if isinstance(decoded, list) else [decoded]

    def response_to(self, request_id: t.Any) -> dict[str, t.Any] | None:
        """Return the response message with ``request_id``, if any."""
        for message in self.messages:
            if message.get("id") == request_id and ("result" in message or "error" in message):
                return message
        return None


def _auth() -> dict[str, str]:
    """The ``Authorization`` header the JWT benchmark sets (``BENCH_AUTHORIZATION``)."""
    value = os.environ.get("BENCH_AUTHORIZATION")
    return {"Authorization": value} if value else {}


def post(
    url: str,
    message: dict[str, t.Any],
    headers: t.Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> Reply:
    """POST one JSON-RPC message and read the whole answer."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    try:
        conn.request(
            "POST",
            parts.path or "/",
            body=json.dumps(message).encode(),
            headers={
                "Content-Type": "application/json",
                "Accept": ACCEPT,
                **_auth(),
                **(headers or {}),
            },
        )
        response = conn.getresponse()
        body = response.read()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, body)
    finally:
        conn.close()


def initialize(url: str, version: str = HANDSHAKE_VERSION) -> str | None:
    """Run the handshake (initialize + notifications/initialized); return the session id.

    :returns: the ``Mcp-Session-Id``, or ``None`` for a server without sessions.
    :raises RuntimeError: the server refused the handshake.
    """
    reply = post(
        url,
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT_INFO},
        },
    )
    answer = reply.response_to(0)
    if reply.status != 200 or answer is None or "result" not in answer:
        raise RuntimeError(f"initialize failed: HTTP {reply.status} {reply.body[:300]!r}")
    session_id = reply.headers.get("mcp-session-id")
    headers = {"MCP-Protocol-Version": answer["result"]["protocolVersion"]}
    if session_id:
        headers["Mcp-Session-Id"] = session_id
    done = post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
    if done.status not in (200, 202):
        raise RuntimeError(
            f"notifications/initialized failed: HTTP {done.status} {done.body[:300]!r}"
        )
    return session_id


def stateless_params(params: dict[str, t.Any]) -> dict[str, t.Any]:
    """Return ``params`` with the ``_meta`` keys of a 2026-07-28 request."""
    meta = {
        META + "protocolVersion": STATELESS_VERSION,
        META + "clientInfo": CLIENT_INFO,
        META + "clientCapabilities": {},
        **params.get("_meta", {}),
    }
    return {**params, "_meta": meta}


def call_tool(
    url: str,
    name: str,
    arguments: dict[str, t.Any],
    *,
    session_id: str | None = None,
    era: str = "handshake",
    request_id: int = 1,
    progress: bool = False,
) -> Reply:
    """Send one ``tools/call`` the way the wrk script does."""
    params: dict[str, t.Any] = {"name": name, "arguments": arguments}
    if progress:
        params["_meta"] = {"progressToken": request_id}
    headers: dict[str, str] = {}
    if era == "2026":
        params = stateless_params(params)
        headers.update(
            {
                "MCP-Protocol-Version": STATELESS_VERSION,
                "Mcp-Method": "tools/call",
                "Mcp-Name": name,
            }
        )
    else:
        headers["MCP-Protocol-Version"] = HANDSHAKE_VERSION
        if session_id:
            headers["Mcp-Session-Id"] = session_id
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return post(url, message, headers)


def check_call(reply: Reply, request_id: int, expect: t.Sequence[str]) -> str | None:
    """Return why a ``tools/call`` reply is not a correct result, or ``None`` when it is."""
    if reply.status != 200:
        return f"HTTP {reply.status}: {reply.body[:300].decode('utf-8', 'replace')}"
    try:
        answer = reply.response_to(request_id)
    except ValueError:  # a body that is not JSON (a proxy's or a framework's error page)
        return f"not JSON: {reply.body[:300].decode('utf-8', 'replace')}"
    if answer is None:
        return f"no response to id {request_id}: {reply.body[:300].decode('utf-8', 'replace')}"
    if "error" in answer:
        return f"JSON-RPC error {answer['error']}"
    if answer["result"].get("isError"):
        return f"tool error {str(answer['result'])[:300]}"
    text = reply.body.decode("utf-8", "replace")
    missing = [part for part in expect if part not in text]
    return f"body lacks {missing}" if missing else None
