"""The MCP Inspector CLI (``@modelcontextprotocol/inspector``, pinned in ``tests/inspector``)
driving ``flask --app examples.quickstart mcp stdio``.

``tests/inspector/run`` installs the pinned Inspector and Node 22 once (``npm ci``) into
``$MCP_INSPECTOR_HOME`` and runs ``inspector --cli``, which starts the server as its
subprocess and speaks to it over stdio.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys
import typing as t

import pytest

pytestmark = pytest.mark.e2e

ROOT = pathlib.Path(__file__).resolve().parent.parent
RUN = ROOT / "tests" / "inspector" / "run"
FLASK = str(pathlib.Path(sys.executable).parent / "flask")


def inspector(*args: str, app: str = "examples.quickstart") -> tuple[int, t.Any, str]:
    """Run the Inspector CLI against the app over stdio: exit status, JSON output, stderr."""
    if shutil.which("npm") is None:
        pytest.skip("npm is needed to install the pinned MCP Inspector")
    command = [str(RUN), FLASK, "--app", app, "mcp", "stdio", "--cwd", str(ROOT), *args]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, timeout=300, check=False)
    if done.returncode == 3:
        pytest.fail(f"npm ci of the Inspector failed: {done.stderr.decode()[-2000:]}")
    return done.returncode, json.loads(done.stdout), done.stderr.decode()


def test_inspector_lists_tools() -> None:
    status, out, _ = inspector("--method", "tools/list")
    assert status == 0
    names = [tool["name"] for tool in out["tools"]]
    assert names == ["add", "convert_length", "search_notes", "save_note", "word_stats"]
    add = out["tools"][0]
    assert add["inputSchema"]["properties"]["a"]["type"] == "integer"


def test_inspector_calls_tools() -> None:
    status, out, _ = inspector(
        "--method", "tools/call", "--tool-name", "add", "--tool-arg", "a=2", "b=40"
    )
    assert status == 0
    assert out["structuredContent"] == {"result": 42}
    status, out, _ = inspector("--method", "tools/call", "--tool-name", "word_stats")
    assert status == 0
    assert out["structuredContent"] == {"groceries": 9, "ideas": 12, "meeting": 12}


def test_inspector_sees_a_tool_error() -> None:
    status, out, _ = inspector(
        "--method", "tools/call", "--tool-name", "search_notes", "--tool-arg", "query= "
    )
    assert status != 0
    assert "The query is empty" in json.dumps(out)


def test_inspector_reads_resources_and_templates() -> None:
    status, out, _ = inspector("--method", "resources/list")
    assert status == 0 and [r["uri"] for r in out["resources"]] == ["config://app"]
    status, out, _ = inspector("--method", "resources/templates/list")
    assert status == 0
    assert [r["uriTemplate"] for r in out["resourceTemplates"]] == ["notes://{name}"]
    status, out, _ = inspector("--method", "resources/read", "--uri", "notes://ideas")
    assert status == 0 and "Ship it." in out["contents"][0]["text"]


def test_inspector_gets_prompts() -> None:
    status, out, _ = inspector("--method", "prompts/list")
    assert status == 0 and [p["name"] for p in out["prompts"]] == ["summarize_note"]
    status, out, _ = inspector(
        "--method",
        "prompts/get",
        "--prompt-name",
        "summarize_note",
        "--prompt-args",
        "name=ideas",
        "style=haiku",
    )
    assert status == 0
    assert out["messages"][1]["content"]["text"] == "Summarize the note above as haiku."
