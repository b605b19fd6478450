"""Raw 2026-07-28 requests to a real server for the tasks tests (over HTTP, no SDK)."""

from __future__ import annotations

import json
import time
import typing as t
import urllib.request

EXT = {"io.modelcontextprotocol/tasks": {}}
CAPS = {"elicitation": {}, "sampling": {}, "extensions": EXT}
TERMINAL = ("completed", "failed", "cancelled")


def post_2026(
    url: str,
    method: str,
    params: dict[str, t.Any],
    token: str | None = None,
    caps: dict[str, t.Any] | None = None,
) -> dict[str, t.Any]:
    """POST one 2026-07-28 request declaring the tasks extension; return the final message.

    :param token: a bearer token to send.
    :param caps: the client capabilities to declare instead of :data:`CAPS`.
    """
    request = _request_2026(url, method, params, token, caps)
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    if text.startswith("{"):
        return t.cast("dict[str, t.Any]", json.loads(text))
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    return t.cast("dict[str, t.Any]", json.loads(data[-1]))


def _request_2026(
    url: str,
    method: str,
    params: dict[str, t.Any],
    token: str | None = None,
    caps: dict[str, t.Any] | None = None,
) -> urllib.request.Request:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": CAPS if caps is None else caps,
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method,
    }
    name = params.get("taskId") or params.get("name")
    if name:
        headers["Mcp-Name"] = name
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return urllib.request.Request(url, json.dumps(body).encode(), headers)


def listen_2026(
    url: str, notifications: dict[str, t.Any], until: t.Callable[[dict[str, t.Any]], bool]
) -> list[dict[str, t.Any]]:
    """Open a ``subscriptions/listen`` stream; return its messages up to ``until(message)``.

    The first message is the acknowledgement. The stream is closed once ``until`` holds;
    it fails when the stream ends first.
    """
    request = _request_2026(url, "subscriptions/listen", {"notifications": notifications})
    found: list[dict[str, t.Any]] = []
    with urllib.request.urlopen(request, timeout=30) as response:
        for raw in response:
            line = raw.decode().strip()
            if line.startswith("data:") and line[5:].strip():
                found.append(json.loads(line[5:]))
                if until(found[-1]):
                    return found
    raise AssertionError(f"the listen stream ended early: {found}")


def wait_task(
    url: str,
    task_id: str,
    until: t.Callable[[dict[str, t.Any]], bool],
    timeout: float = 30,
    token: str | None = None,
) -> dict[str, t.Any]:
    """Poll ``tasks/get`` until ``until(task)``; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    task: dict[str, t.Any] = {}
    while time.monotonic() < deadline:
        task = post_2026(url, "tasks/get", {"taskId": task_id}, token)["result"]
        if until(task):
            return task
        time.sleep(0.2)
    raise AssertionError(f"task {task_id} did not get there within {timeout} s; last: {task}")
