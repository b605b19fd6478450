"""The floor answers a 2026-07-28 request as that revision requires, as Flask-MCP does.

``floor/gevent@2026`` compares the two with the same request; these tests hold
that both do the work the request needs (the headers compared with the body, a
result with ``resultType`` and ``serverInfo``), so the ratio measures overhead.
No benchmark is run here.
"""

from __future__ import annotations

import json
import sys
import typing as t
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import instructions  # noqa: E402
from benchmarks.apps import floor_app  # noqa: E402

HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "add",
}


def _post(app: t.Any, era: str, headers: dict[str, str]) -> t.Any:
    client = app.test_client()
    return client.post("/mcp", data=instructions.body(7, era), headers=headers)


def test_floor_answers_the_2026_form_with_the_shape_flask_mcp_answers() -> None:
    from benchmarks.apps import flask_mcp_app

    floor = _post(floor_app.app, "2026", HEADERS)
    served = _post(flask_mcp_app.app, "2026", HEADERS)
    assert floor.status_code == served.status_code == 200
    floor_result = json.loads(floor.data)["result"]
    served_result = json.loads(served.data)["result"]
    assert list(floor_result) == list(served_result)
    assert floor_result["resultType"] == served_result["resultType"] == "complete"
    assert list(floor_result["_meta"]) == list(served_result["_meta"])
    assert floor_result["structuredContent"] == served_result["structuredContent"]


@pytest.mark.parametrize(
    ("header", "value", "code"),
    [
        ("Mcp-Name", "blob", -32020),
        ("Mcp-Method", "tools/list", -32020),
        ("MCP-Protocol-Version", "2025-11-25", -32020),
    ],
)
def test_floor_refuses_headers_unlike_the_body(header: str, value: str, code: int) -> None:
    answer = _post(floor_app.app, "2026", {**HEADERS, header: value})
    assert answer.status_code == 400
    assert json.loads(answer.data)["error"]["code"] == code


def test_floor_answers_the_handshake_form_as_before() -> None:
    answer = _post(floor_app.app, "handshake", {"Content-Type": "application/json"})
    result = json.loads(answer.data)["result"]
    assert "resultType" not in result
    assert result["structuredContent"] == {"result": 8888888}


_FAIRNESS_PROBE = """
from gevent import monkey

monkey.patch_all()
import json

import gevent

from benchmarks import instructions
from benchmarks.apps import floor_app

answered = []
seen_by_other = []
other = gevent.spawn(lambda: seen_by_other.append(len(answered)))
for request_id in (1, 2, 3):
    data = instructions.body(request_id, "handshake")
    status, _, body = instructions.call(floor_app.app, instructions.environ(data, "handshake"))
    answered.append((status, json.loads(body)["result"]["structuredContent"]))
print(json.dumps({"answered": answered, "seen_by_other": seen_by_other}))
"""


@pytest.mark.parametrize(("fair", "seen_by_other"), [("1", [1]), ("0", [])])
def test_the_fair_floor_gives_other_greenlets_a_turn(fair: str, seen_by_other: list[int]) -> None:
    """``floor-fair``: one greenlet serving request after request lets the others run.

    Three calls in a row in one greenlet, as a keep-alive connection whose next
    request is already read: the fair floor yields at the second (as Flask-MCP's
    inline calls do, with the same function), so a greenlet waiting since before
    the first runs after one answer; the bare floor never yields. Both answer alike.
    """
    import os
    import subprocess

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "BENCH_FLOOR_FAIR": fair, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", _FAIRNESS_PROBE], env=env, cwd=root, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["seen_by_other"] == seen_by_other
    assert found["answered"] == [["200 OK", {"result": 8888888}]] * 3
