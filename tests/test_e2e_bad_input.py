"""Malformed input on a real server: a clear error naming the fix, and the next request works."""

from __future__ import annotations

import json
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
            good = http.post(url, headers=headers, content=add_call('{"a":1,"b":2}', version))
            assert good.json()["result"]["structuredContent"] == {"result": 3}, good.text
