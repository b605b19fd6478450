"""The Redis backend's key layout (one cluster slot per session) and its busy-count ledger.

Slots are computed with redis-py's own CRC16; only the shared registry's test needs Redis.
Every key name is built by :class:`~flask_mcp.backends.redis.keys.Keys`: a test reads the
package's source for key names built elsewhere, and ``test_backends.py``'s Redis legs fail
when a key without a hash tag is left under their prefix.
"""

from __future__ import annotations

import ast
import os
import uuid
from pathlib import Path

import pytest
from flask import Flask
from harness import delete_keys
from harness import untagged_keys
from redis.crc import key_slot

import flask_mcp
from flask_mcp import MCP
from flask_mcp.backends.base import GENERAL_STREAM
from flask_mcp.backends.base import MESSAGE
from flask_mcp.backends.base import SessionRecord
from flask_mcp.backends.memory import MemoryBackend
from flask_mcp.backends.redis.batch import Ledger
from flask_mcp.backends.redis.keys import Keys
from flask_mcp.backends.redis.urls import CLUSTER_SCHEMES
from flask_mcp.testing import MCPTestClient


def slots(keys: list[str]) -> set[int]:
    return {key_slot(key.encode()) for key in keys}


@pytest.mark.parametrize("sid", ["abc", "x" * 32, "a}b", "a{b", "g", "with:colon"])
def test_every_key_of_a_session_shares_one_slot(sid: str) -> None:
    keys = Keys("mcp:")
    every = [
        *keys.session(sid),
        *keys.stream(sid, "r1"),
        *keys.stream(sid, "{odd}"),
        *keys.answer(sid, '"{id}"'),
        keys.record(sid),
        keys.meta(sid),
    ]
    assert len(slots(every)) == 1
    assert all(key.startswith("mcp:") for key in every)


def test_shared_keys_share_a_slot_of_their_own() -> None:
    keys = Keys("app:")
    shared = [
        keys.seen,
        keys.born,
        keys.hs,
        keys.workers,
        keys.alive,
        keys.reaping,
        keys.owned("host:1:ab"),
        keys.own("addr:1"),
        keys.tasks("live"),
        keys.tasks("alice"),
        keys.registry("my-server", 4242),
        keys.registry("{odd}", 1),
    ]
    assert len(slots(shared)) == 1
    assert keys.task("t1") == "app:{t1}:task"


@pytest.mark.parametrize("prefix", ["a{b:", "a}b:", "{x}:"])
def test_a_prefix_with_braces_is_refused(prefix: str) -> None:
    with pytest.raises(ValueError, match="must not contain"):
        Keys(prefix)


#: What may follow the prefix outside ``Keys``: pub/sub channels, which are no keys.
CHANNELS = ("cancel", "wake", "session", "pub:")


def _built_from_a_prefix(node: ast.AST) -> tuple[ast.expr, str] | None:
    """``(x.prefix, text after it)`` if ``node`` is ``f"{x.prefix}..."`` or ``x.prefix + ...``."""
    if isinstance(node, ast.JoinedStr) and node.values:
        head, rest = node.values[0], node.values[1:]
        if isinstance(head, ast.FormattedValue):
            after = rest[0] if rest else None
            text = after.value if isinstance(after, ast.Constant) else ""
            return head.value, str(text)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        text = node.right.value if isinstance(node.right, ast.Constant) else ""
        return node.left, str(text)
    return None


def test_no_key_name_is_built_outside_the_key_layout() -> None:
    """A string made from a backend's ``prefix`` outside ``backends/redis/keys.py`` is a pub/sub
    channel; a key built there would miss the hash tags (add a method to ``Keys``)."""
    package = Path(flask_mcp.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package).as_posix() == "backends/redis/keys.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            built = _built_from_a_prefix(node)
            if built is None:
                continue
            head, text = built
            if isinstance(head, ast.Attribute) and head.attr in {"prefix", "shared"}:
                found.append((path.relative_to(package).as_posix(), text))
                assert text.startswith(CHANNELS), (
                    f"{path}:{node.lineno}: {ast.unparse(node)} builds a Redis key outside "
                    "flask_mcp/backends/redis/keys.py; add it to Keys with a hash tag"
                )
    assert {text for _, text in found} >= {"cancel", "wake"}, found  # the scan sees them


def echo(text: str) -> str:
    """Echo the text."""
    return text


@pytest.mark.redis
def test_the_shared_registry_log_is_tagged(redis_backend_url: str) -> None:
    """A change made while serving goes to a list under the shared tag ``{g}``; with a
    session and a tool call, nothing under the prefix lacks a hash tag."""
    prefix = f"reg-{uuid.uuid4().hex[:8]}:"
    mcp = MCP(name="tagged", version="1")
    app = Flask(__name__)
    app.config.update(MCP_BACKEND=f"{redis_backend_url}?prefix={prefix}")
    mcp.init_app(app)
    try:
        with app.test_request_context():
            mcp.add_tool(echo, name="echo")
        with MCPTestClient(app) as client:
            assert client.call_tool("echo", {"text": "hi"})["content"][0]["text"] == "hi"
        backend = mcp.state(app).backend
        logs = list(backend.client.scan_iter(match=f"{prefix}*registry*", count=1000))
        log = backend.keys.registry("tagged", os.getppid())
        assert sorted(key.decode() for key in logs) == [log, f"{log}:ids"]
        assert untagged_keys(redis_backend_url, prefix) == []
    finally:
        mcp.state(app).backend.close()
        delete_keys(redis_backend_url, f"{prefix}*")


def test_cluster_url_schemes() -> None:
    assert CLUSTER_SCHEMES == {"redis+cluster": "redis", "rediss+cluster": "rediss"}


def test_the_ledger_never_lets_redis_count_less_than_is_running() -> None:
    ledger = Ledger()
    ledger.reserve("s")  # a lookup counted a request ahead: Redis +1
    assert ledger.surplus("s") == 1
    assert ledger.claim("s")  # the request takes it: no round trip
    assert not ledger.claim("s")  # a second request must ask Redis
    assert ledger.surplus("s") == 0
    assert ledger.release("s")  # its end is owed
    assert not ledger.release("s")  # a request that did not claim writes its own -1
    assert ledger.surplus("s") == 1
    assert ledger.due() == {"s": -1}
    assert not ledger.pending


def test_unclaimed_credits_are_given_back() -> None:
    ledger = Ledger()
    ledger.reserve("s")
    assert ledger.due() == {}  # young: a request may still claim it
    assert ledger.due(everything=True) == {"s": -1}
    ledger.owe("t", -2)
    assert ledger.take("t") == -2 and ledger.take("t") == 0


def test_memory_backend_appends_and_reads_many() -> None:
    backend = MemoryBackend()
    for sid in ("a", "b"):
        backend.create_session(SessionRecord(id=sid, protocol_version="2025-11-25"), 10)
    events = [(sid, GENERAL_STREAM, MESSAGE, {"n": 1}) for sid in ("a", "b")]
    assert backend.append_many(events) == [1, 1]
    assert set(backend.get_sessions(["a", "b", "nope"])) == {"a", "b"}
