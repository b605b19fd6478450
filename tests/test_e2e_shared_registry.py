"""Runtime tool changes through one of 4 workers sharing Redis reach every worker.

A tool added, disabled and removed through whichever worker serves the call is
listed and callable (or gone) through every worker, and every open session, on
any worker, gets ``notifications/tools/list_changed`` for each change.
"""

from __future__ import annotations

import contextlib
import json
import time
import typing as t
import uuid

import anyio
import httpx
import mcp_types as types
import pytest
from harness import redis_client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from flask_mcp.server.shared_registry import RECHECK

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.redis,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # handshake-era calls in mcp 2.3
]

SESSIONS = 12
WORKERS = 4


@contextlib.asynccontextmanager
async def session(
    url: str, on_message: t.Any = None, ids: list[str] | None = None
) -> t.AsyncIterator[ClientSession]:
    """Open a session; its id goes into ``ids`` (for the diagnostics) if given."""

    async def note_id(response: httpx.Response) -> None:
        sid = response.headers.get("mcp-session-id")
        if ids is not None and sid and sid not in ids:
            ids.append(sid)

    # a client of its own: a new connection, which any worker may accept; the SDK's
    # timeouts, not httpx's default 5 s, which cuts an idle GET stream between heartbeats (15 s)
    http = httpx.AsyncClient(
        timeout=httpx.Timeout(30.0, read=300.0), event_hooks={"response": [note_id]}
    )
    inside = False  # an error of the block using the session, not of the session
    try:
        async with (
            http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write, message_handler=on_message) as s,
        ):
            await s.initialize()
            try:
                yield s
            except BaseException:
                inside = True
                raise
    except Exception as exc:  # say which session: the SDK's task groups nest the cause deep
        if ids is not None and not inside:
            errors = ", ".join(f"{type(e).__name__}: {e}" for e in leaves(exc))
            ids.append(f"failed: {errors}")
        raise


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions at the bottom of nested exception groups."""
    inner = getattr(exc, "exceptions", None)
    if isinstance(inner, (list, tuple)):
        return [leaf for item in inner for leaf in leaves(item)]
    return [exc]


def pid_of(result: types.CallToolResult) -> int:
    assert not result.is_error, result
    assert result.structured_content is not None
    return int(result.structured_content["pid"])


async def sweep(url: str, tool: str, present: bool) -> set[int]:
    """Open 24 sessions at once; each lists the tools and calls ``tool`` (or whoami)."""
    pids: set[int] = set()

    async def one() -> None:
        async with session(url) as s:
            names = [item.name for item in (await s.list_tools()).tools]
            assert (tool in names) is present, names
            if present:
                result = await s.call_tool(tool, {"text": "hi"})
                assert result.structured_content is not None
                assert result.structured_content["text"] == "HI"
                pids.add(pid_of(result))
            else:
                with pytest.raises(MCPError, match="Unknown tool|not found|shout"):
                    await s.call_tool(tool, {"text": "hi"})
                pids.add(pid_of(await s.call_tool("whoami", {})))

    async with anyio.create_task_group() as group:
        for _ in range(24):
            group.start_soon(one)
    return pids


@pytest.mark.parametrize(
    ("worker", "store"),
    [
        ("gevent", "redis_url"),
        ("gthread", "redis_url"),
        pytest.param("gevent", "redis_cluster_url", marks=pytest.mark.cluster),
    ],
    ids=["gevent", "gthread", "gevent-cluster"],
)
def test_runtime_changes_reach_every_worker_and_session(
    serve: t.Any, request: pytest.FixtureRequest, worker: str, store: str
) -> None:
    prefix = f"e2e-{uuid.uuid4().hex[:8]}:"
    url = request.getfixturevalue(store)
    env = {"FLASK_MCP_BACKEND": f"{url}?prefix={prefix}"}
    # gthread: each open GET stream holds a thread; 12 sessions and 24 at once need room
    # --keep-alive as in contrib/gunicorn.conf.py: with gunicorn's 2 s, a pooled connection
    # the client reuses as the server closes it fails with a ReadError (seen under load)
    server = serve(
        "tests._apps.shared_tools:app",
        worker,
        workers=WORKERS,
        env=env,
        threads=32,
        extra_args=["--keep-alive", "75"],
    )
    heard: dict[int, int] = {i: 0 for i in range(SESSIONS)}
    # what each session heard, in order: (phase, method) of every notification
    log: dict[int, list[tuple[str, str]]] = {i: [] for i in range(SESSIONS)}
    phase = ["open"]
    ids: list[list[str]] = [[] for _ in range(SESSIONS)]
    report: dict[str, t.Any] = {}
    started = time.monotonic()

    def listener(i: int) -> t.Any:
        async def on_message(message: t.Any) -> None:
            method = getattr(message, "method", type(message).__name__)
            log[i].append((f"{phase[0]}@{time.monotonic() - started:.2f}", str(method)))
            if isinstance(message, types.ToolListChangedNotification):
                heard[i] += 1

        return on_message

    async def wait_for_all(count: int) -> None:
        with anyio.move_on_after(20):
            while min(heard.values()) < count:
                await anyio.sleep(0.05)
        # The change is in the log before any session hears of it, but a worker reads the
        # log once the pub/sub announcement reached it: a busy worker may serve the old
        # list until then (docs/blueprints.md).
        await anyio.sleep(RECHECK)

    def stored() -> dict[str, t.Any]:
        """What Redis holds: the registry's operation log, each session's GET stream."""
        client = redis_client(url, decode_responses=True)
        try:
            found: dict[str, t.Any] = {}
            for key in client.scan_iter(match=f"{prefix}registry:*"):
                found[key] = [json.loads(op)["op"] for op in client.lrange(key, 0, -1)]
            for i, sids in enumerate(ids):
                for sid in sids:
                    events = client.xrange(f"{prefix}{{{sid}}}:x:g")
                    methods = [json.loads(f.get("m") or "{}").get("method") for _, f in events]
                    found[f"session {i} {sid[:8]} GET stream"] = methods
            return found
        finally:
            client.close()

    async def main() -> None:
        async with contextlib.AsyncExitStack() as stack:
            sessions = [
                await stack.enter_async_context(session(server.url, listener(i), ids[i]))
                for i in range(SESSIONS)
            ]
            holders = {pid_of(await s.call_tool("whoami", {})) for s in sessions}
            report["session_workers"] = len(holders)
            await anyio.sleep(1)  # the GET streams open after initialize

            phase[0] = "add"
            added = pid_of(await sessions[0].call_tool("add_shouter", {"name": "shout"}))
            await wait_for_all(1)
            report["after_add"] = dict(heard)
            pids: set[int] = set()
            for _ in range(5):
                pids |= await sweep(server.url, "shout", present=True)
                if len(pids) == WORKERS:
                    break
            report["add"] = {"origin": added, "workers_serving_new_tool": len(pids)}
            assert len(pids) == WORKERS, pids
            for s in sessions:  # an already open session on any worker sees it too
                assert pid_of(await s.call_tool("shout", {"text": "x"}))

            phase[0] = "disable"
            pid_of(await sessions[-1].call_tool("set_shouting", {"enabled": False}))
            await wait_for_all(2)
            report["after_disable"] = dict(heard)
            gone: set[int] = set()
            for _ in range(5):
                gone |= await sweep(server.url, "shout", present=False)
                if len(gone) == WORKERS:
                    break
            report["disable"] = {"workers_without_tool": len(gone)}
            assert len(gone) == WORKERS, gone

            phase[0] = "enable+remove"
            pid_of(await sessions[3].call_tool("set_shouting", {"enabled": True}))
            removed = await sessions[5].call_tool("remove_shouter", {"name": "shout"})
            assert removed.structured_content is not None
            assert removed.structured_content["removed"] is True
            await wait_for_all(4)
            report["after_enable_remove"] = dict(heard)
            phase[0] = "final sweep"
            gone = set()
            for _ in range(5):
                gone |= await sweep(server.url, "shout", present=False)
                if len(gone) == WORKERS:
                    break
            assert len(gone) == WORKERS, gone
            if any(count != 4 for count in heard.values()):  # read before the sessions end
                report["stored"] = await anyio.to_thread.run_sync(stored)
            phase[0] = "close"

    try:
        anyio.run(main)
    except Exception as exc:
        raise AssertionError(
            f"failed in phase {phase[0]!r}: {type(exc).__name__}; the innermost errors:\n"
            + "\n".join(f"  {type(e).__name__}: {e}" for e in leaves(exc))
            + f"\nsessions (ids, then how their close failed): {ids}"
            + f"\nlist_changed heard per session: {heard}\n{report}"
        ) from exc
    print(f"shared registry across {WORKERS} {worker} workers: {report}")
    heard_log = "\n".join(f"session {i}: {entries}" for i, entries in log.items())
    assert all(count == 4 for count in heard.values()), (  # one per change, no echo
        f"list_changed heard per session: {heard}\n{heard_log}\n{report}"
    )
