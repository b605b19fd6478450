"""The README stays true to the code: its examples run and its config table is complete."""

from __future__ import annotations

import re
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
