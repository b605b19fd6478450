"""The README stays true to the code: its examples run and its config table is complete."""

from __future__ import annotations

import re
import typing as t
from pathlib import Path

from flask_mcp.config import KEYS

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_every_config_key_is_documented() -> None:
    documented = set(re.findall(r"^\| `(MCP_[A-Z_]+)` \|", README, re.MULTILINE))
    assert documented == {key.name for key in KEYS}


def test_quick_start_runs() -> None:
    block = README.split("## Quick start", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    namespace: dict[str, object] = {"__name__": "readme_quickstart"}
    exec(compile(block, "README.md", "exec"), namespace)
    app = namespace["app"]
    assert app.extensions["mcp"] is namespace["mcp"]  # type: ignore[attr-defined]
    tools = [tool["name"] for tool in namespace["mcp"].registry.described("tools")]  # type: ignore[attr-defined]
    assert tools == ["add", "long_job"]


def test_middleware_audit_recipe_runs(caplog: t.Any) -> None:
    """The audit-log recipe of docs/middleware.md logs one line per call."""
    import json
    import logging

    from flask import Flask

    from flask_mcp import MCP
    from flask_mcp.testing import MCPTestClient

    page = (Path(__file__).resolve().parent.parent / "docs" / "middleware.md").read_text()
    block = page.split("### Audit log", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    mcp = MCP(name="audited", version="1")

    @mcp.tool()
    def add(a: int, b: int) -> str:
        return str(a + b)

    exec(compile(block, "docs/middleware.md", "exec"), {"mcp": mcp})
    app = Flask(__name__)
    mcp.init_app(app)
    with caplog.at_level(logging.INFO, logger="mcp.audit"), MCPTestClient(app) as client:
        client.call_tool("add", {"a": 1, "b": 2})
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "mcp.audit"]
    assert len(lines) == 1
    assert (
        lines[0]["name"] == "add" and lines[0]["outcome"] == "ok" and lines[0]["era"] == "handshake"
    )
