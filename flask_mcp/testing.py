"""A protocol-level test client, so tests never hand-write wire messages.

.. code-block:: python

    def test_add(app):
        with MCPTestClient(app) as client:
            assert client.call_tool("add", {"a": 1, "b": 2})["structuredContent"] == {"result": 3}
"""

from __future__ import annotations

import itertools
import json
import typing as t

if t.TYPE_CHECKING:
    from flask import Flask

Handler = t.Callable[[dict[str, t.Any]], dict[str, t.Any]]


class MCPError(Exception):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, error: dict[str, t.Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.error = error


class MCPTestClient:
    """Drives an app's MCP endpoint through :meth:`flask.Flask.test_client`.

    Server-to-client requests (sampling, elicitation, roots) are answered by the
    handlers passed here; notifications are collected in :attr:`notifications`.

    :param app: the Flask app with :class:`~flask_mcp.MCP` registered.
    :param protocol_version: the version to offer in ``initialize``.
    :param capabilities: the client capabilities to declare (derived from the
        handlers when omitted).
    :param sampling: answers ``sampling/createMessage`` params with a result.
    :param elicitation: answers ``elicitation/create`` params with a result.
    :param roots: the roots to report for ``roots/list``.
    """

    def __init__(
        self,
        app: Flask,
        *,
        protocol_version: str = "2025-11-25",
        capabilities: dict[str, t.Any] | None = None,
        sampling: Handler | None = None,
        elicitation: Handler | None = None,
        roots: list[dict[str, t.Any]] | None = None,
        path: str | None = None,
    ) -> None:
        self.app = app
        self.client = app.test_client()
        self.path = path or app.config.get("MCP_PATH", "/mcp")
        self.protocol_version = protocol_version
        self.handlers: dict[str, Handler] = {}
        caps: dict[str, t.Any] = {}
        if sampling is not None:
            self.handlers["sampling/createMessage"] = sampling
            caps["sampling"] = {}
        if elicitation is not None:
            self.handlers["elicitation/create"] = elicitation
            caps["elicitation"] = {"form": {}, "url": {}}
        if roots is not None:
            self.handlers["roots/list"] = lambda params: {"roots": roots}
            caps["roots"] = {"listChanged": True}
        self.capabilities = capabilities if capabilities is not None else caps
        self.session_id: str | None = None
        self.server_result: dict[str, t.Any] = {}
        self.notifications: list[dict[str, t.Any]] = []
        self._ids = itertools.count(1)

    def __enter__(self) -> MCPTestClient:
        self.initialize()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- wire ---------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": self.protocol_version,
        }
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    def post(self, message: dict[str, t.Any]) -> t.Any:
        """POST one raw message and return the streaming test response."""
        return self.client.post(
            self.path,
            data=json.dumps(message),
            headers=self._headers(),
            buffered=False,
            environ_base={"wsgi.multithread": True},
        )

    def request(self, method: str, params: dict[str, t.Any] | None = None) -> dict[str, t.Any]:
        """Send a request, answer the server's requests on the way, and return the result.

        :raises MCPError: the server answered with a JSON-RPC error.
        """
        request_id = next(self._ids)
        message: dict[str, t.Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        response = self.post(message)
        try:
            if response.mimetype == "application/json":
                answer = json.loads(response.get_data())
            else:
                answer = self._read_stream(response, request_id)
        finally:
            response.close()
        if "error" in answer:
            raise MCPError(answer["error"])
        return t.cast(dict[str, t.Any], answer["result"])

    def notify(self, method: str, params: dict[str, t.Any] | None = None) -> int:
        """Send a notification and return the HTTP status."""
        message: dict[str, t.Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return int(self.post(message).status_code)

    def _read_stream(self, response: t.Any, request_id: int) -> dict[str, t.Any]:
        buffer = b""
        for chunk in response.response:
            buffer += chunk
            while b"\n\n" in buffer:
                event, buffer = buffer.split(b"\n\n", 1)
                data = [
                    line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:")
                ]
                if not data or not data[0]:
                    continue
                message = json.loads(b"".join(data))
                if message.get("id") == request_id and "method" not in message:
                    return t.cast(dict[str, t.Any], message)
                if "method" in message and "id" in message:
                    self._answer(message)
                elif "method" in message:
                    self.notifications.append(message)
        raise AssertionError(f"The stream of request {request_id} ended without its response.")

    def _answer(self, message: dict[str, t.Any]) -> None:
        handler = self.handlers.get(message["method"])
        if handler is None:
            reply = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {"code": -32601, "message": "no handler"},
            }
        else:
            reply = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "result": handler(message.get("params") or {}),
            }
        self.post(reply).close()

    # -- lifecycle and methods ------------------------------------------------------

    def initialize(self) -> dict[str, t.Any]:
        """Run the handshake and keep the session id."""
        response = self.post(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": self.protocol_version,
                    "capabilities": self.capabilities,
                    "clientInfo": {"name": "flask-mcp-test-client", "version": "1.0"},
                },
            }
        )
        body = json.loads(response.get_data())
        if "error" in body:
            raise MCPError(body["error"])
        self.session_id = response.headers.get("Mcp-Session-Id")
        self.server_result = body["result"]
        self.notify("notifications/initialized")
        return t.cast(dict[str, t.Any], body["result"])

    def close(self) -> None:
        """End the session."""
        if self.session_id:
            self.client.delete(self.path, headers=self._headers())
            self.session_id = None

    def list_tools(self) -> list[dict[str, t.Any]]:
        """Return every tool (following pagination)."""
        return self._list("tools/list", "tools")

    def call_tool(
        self, name: str, arguments: dict[str, t.Any] | None = None, **meta: t.Any
    ) -> dict[str, t.Any]:
        """Call a tool and return its ``CallToolResult``."""
        params: dict[str, t.Any] = {"name": name, "arguments": arguments or {}}
        if meta:
            params["_meta"] = meta
        return self.request("tools/call", params)

    def list_resources(self) -> list[dict[str, t.Any]]:
        """Return every resource."""
        return self._list("resources/list", "resources")

    def list_resource_templates(self) -> list[dict[str, t.Any]]:
        """Return every resource template."""
        return self._list("resources/templates/list", "resourceTemplates")

    def read_resource(self, uri: str) -> list[dict[str, t.Any]]:
        """Return the contents of a resource."""
        return t.cast(
            list[dict[str, t.Any]], self.request("resources/read", {"uri": uri})["contents"]
        )

    def list_prompts(self) -> list[dict[str, t.Any]]:
        """Return every prompt."""
        return self._list("prompts/list", "prompts")

    def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> dict[str, t.Any]:
        """Render a prompt."""
        return self.request("prompts/get", {"name": name, "arguments": arguments or {}})

    def complete(self, ref: dict[str, t.Any], argument: str, value: str) -> dict[str, t.Any]:
        """Ask for argument completions."""
        params = {"ref": ref, "argument": {"name": argument, "value": value}}
        return t.cast(dict[str, t.Any], self.request("completion/complete", params)["completion"])

    def _list(self, method: str, key: str) -> list[dict[str, t.Any]]:
        items: list[dict[str, t.Any]] = []
        cursor = None
        while True:
            result = self.request(method, {"cursor": cursor} if cursor else {})
            items += result[key]
            cursor = result.get("nextCursor")
            if not cursor:
                return items
