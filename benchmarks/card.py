"""The realistic card's world: its calls and checks, its API and Redis, its servers.

Shared by :mod:`benchmarks.realistic`, :mod:`benchmarks.large` and the tests
that check every server answers every tool right
(``tests/test_benchmark_card.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import time
import typing as t
import urllib.request
import uuid

from . import client
from . import redis_backend
from . import wrk
from .apps import card_data as data
from .servers import HOST
from .servers import ROOT
from .servers import ServerSpec
from .servers import free_port

#: Seconds a card server may take to listen: FastMCP's import and the 4 MB payloads built
#: at import take seconds, and more on a busy machine, with two workers starting at once.
START_TIMEOUT = 120.0
CARD_SCRIPT = ROOT / "benchmarks" / "lua" / "card.lua"
FLASK_APP = "benchmarks.apps.card_flask_mcp:app"
ASGI_APP = "benchmarks.apps.card_asgi:app"
FLOOR_APP = "benchmarks.apps.card_floor:app"
LARGE_FLOOR_APP = "benchmarks.apps.large_floor_app:app"
#: Fields of a Lua pattern; a JSON key matches whether it sits in a text block (escaped
#: quotes, ``": "``) or in ``structuredContent`` (``":``).
_MAGIC = "^$()%.[]*+-?"


def lit(text: str) -> str:
    """Return a Lua pattern matching ``text`` literally."""
    return "".join("%" + ch if ch in _MAGIC else ch for ch in text)


def field(name: str, value: str) -> str:
    """Return a Lua pattern for ``"name": value`` in compact, spaced or escaped JSON.

    :param value: a Lua pattern for the value (a string value: its text, quotes omitted).
    """
    return f'{lit(name)}\\?"%s*:%s*\\?"?{value}'


@dataclasses.dataclass(frozen=True)
class Call:
    """One tool call of the card: what wrk sends and how its answer is judged.

    :param tool: the tool's name.
    :param arguments: its arguments (``"{USER}"`` becomes one of the seeded users).
    :param patterns: Lua patterns every correct response body matches (``lua/card.lua``).
    :param check: judges the decoded ``CallToolResult`` as the card's own checks do;
        returns what is wrong, or ``None``.
    """

    tool: str
    arguments: dict[str, t.Any]
    patterns: tuple[str, ...]
    check: t.Callable[[dict[str, t.Any]], str | None]

    def encoded(self) -> str:
        """Return the call as one entry of ``BENCH_CALLS``."""
        return "\x1f".join(
            (
                self.tool,
                json.dumps(self.arguments, separators=(",", ":")),
                "\x1d".join(self.patterns),
            )
        )

    def arguments_for(self, user: int) -> dict[str, t.Any]:
        """Return the arguments with ``{USER}`` replaced by seeded user ``user``."""
        text = json.dumps(self.arguments).replace("{USER}", data.user_id(user))
        return t.cast("dict[str, t.Any]", json.loads(text))


def text_of(result: dict[str, t.Any]) -> t.Any:
    """Return the JSON decoded from the first text block of a ``CallToolResult``."""
    return json.loads(result["content"][0]["text"])


def _expect(value: t.Any, want: t.Any, what: str) -> str | None:
    return None if value == want else f"{what}: {value!r}, wanted {want!r}"


def _fib(result: dict[str, t.Any]) -> str | None:
    return _expect(structured_dict(result).get("result"), 55, "fibonacci(10)")


def _fetch(result: dict[str, t.Any]) -> str | None:
    return _expect(structured_dict(result).get("status_code"), 200, "fetch status")


def _json(result: dict[str, t.Any]) -> str | None:
    found = structured_dict(result)
    return _expect(
        (found.get("transformed_data"), found.get("original_keys")),
        (
            {"name": "BENCHMARK", "count": 42, "nested": {"key": "VALUE"}},
            ["name", "count", "nested"],
        ),
        "process_json_data",
    )


def _query(result: dict[str, t.Any]) -> str | None:
    found = structured_dict(result)
    return _expect((found.get("query"), found.get("delay_ms")), (data.DB_QUERY, 10), "query")


def _search(result: dict[str, t.Any]) -> str | None:
    found = text_of(result)
    return _expect(
        (found["total_found"], len(found["products"]), len(found["top10_popular_ids"])),
        (2251, 10, 10),
        "search_products (total_found, products, top 10)",
    )


def _cart(result: dict[str, t.Any]) -> str | None:
    found = text_of(result)
    return _expect(
        (
            found["user_id"].startswith("user-"),
            len(found["cart"]["items"]) >= 1,
            len(found["recent_history"]),
        ),
        (True, True, 5),
        "get_user_cart (user, items, history)",
    )


def _checkout(result: dict[str, t.Any]) -> str | None:
    found = text_of(result)
    return _expect(
        (found["status"], found["total"] > 0, found["items_count"]),
        ("confirmed", True, 2),
        "checkout (status, total > 0, items)",
    )


def structured_dict(result: dict[str, t.Any]) -> dict[str, t.Any]:
    """Return a dict result: ``structuredContent`` when given, else the first text block's JSON."""
    found = result.get("structuredContent")
    if isinstance(found, dict):
        return found
    return t.cast("dict[str, t.Any]", text_of(result))


#: The first edition: CPU, an outbound HTTP GET, a JSON transform, a simulated query.
FIRST_EDITION = (
    Call("calculate_fibonacci", {"n": data.FIB_N}, (field("result", "55"),), _fib),
    Call(
        "fetch_external_data",
        {"endpoint": "{API}/api"},
        (field("status_code", "200"),),
        _fetch,
    ),
    Call(
        "process_json_data",
        {"data": data.JSON_DATA},
        (field("name", "BENCHMARK"), field("key", "VALUE")),
        _json,
    ),
    Call(
        "simulate_database_query",
        {"query": data.DB_QUERY, "delay_ms": data.DB_DELAY_MS},
        (field("delay_ms", "10"), lit(data.DB_QUERY)),
        _query,
    ),
)
#: The second edition: Redis and an HTTP API.
SECOND_EDITION = (
    Call(
        "search_products",
        dict(data.SEARCH),
        (field("total_found", "2251"), lit("top10_popular_ids")),
        _search,
    ),
    Call(
        "get_user_cart",
        {"user_id": "{USER}"},
        (field("user_id", "user%-%d%d%d%d%d"), field("recent_history", "%[{")),
        _cart,
    ),
    Call(
        "checkout",
        {"user_id": "{USER}", "items": data.CHECKOUT_ITEMS},
        (field("status", "confirmed"), field("items_count", "2")),
        _checkout,
    ),
)
EDITIONS = {"v1": FIRST_EDITION, "v2": SECOND_EDITION}


def with_api(call: Call, api_url: str) -> Call:
    """Return ``call`` with ``{API}`` in its arguments replaced by the API's URL."""
    text = json.dumps(call.arguments)
    if "{API}" not in text:
        return call
    return dataclasses.replace(call, arguments=json.loads(text.replace("{API}", api_url)))


def mix_env(calls: t.Sequence[Call]) -> dict[str, str]:
    """Return the environment of ``lua/card.lua`` for a mix of calls."""
    return {
        "BENCH_CALLS": "\x1e".join(call.encoded() for call in calls),
        "BENCH_USERS": str(data.USERS),
    }


@dataclasses.dataclass
class World:
    """The card's API and Redis, seeded, and what the servers need to reach them."""

    api_url: str
    redis_url: str
    prefix: str
    api: subprocess.Popen[bytes]
    redis_process: subprocess.Popen[bytes] | None

    def env(self) -> dict[str, str]:
        """The ``BENCH_CARD_*`` variables every card server gets."""
        return {
            "BENCH_CARD_API": self.api_url,
            "BENCH_CARD_REDIS": self.redis_url,
            "BENCH_CARD_PREFIX": self.prefix,
        }


def _wait_http(url: str, process: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the card API exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:  # noqa: S310 - 127.0.0.1
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"the card API did not answer {url} in {timeout:g}s")


@contextlib.contextmanager
def world(core: str | None, redis_url: str | None = None) -> t.Iterator[World]:
    """Start the card's API (pinned to ``core``), seed Redis under a fresh prefix; undo both.

    Redis is ``redis_url``, else ``redis://127.0.0.1:$MCP_BENCH_REDIS_PORT/$MCP_BENCH_REDIS_DB``
    (a ``redis-server`` is started when none listens there, as ``python -m benchmarks redis`` does).
    """
    import redis

    redis_process = None
    if redis_url is None:
        redis_process = redis_backend._start_redis(core)  # noqa: SLF001 - same package
        redis_url = redis_backend.URL
    prefix = f"cardbench:{uuid.uuid4().hex[:8]}:"
    port = free_port()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    argv = [sys.executable, "-m", "benchmarks.apps.card_api", str(port)]
    if core is not None:
        argv = ["taskset", "-c", core, *argv]
    api = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    client_ = redis.Redis.from_url(redis_url)
    try:
        _wait_http(f"http://{HOST}:{port}/health", api)
        previous = data.PREFIX
        data.PREFIX = prefix
        try:
            data.seed(client_)
        finally:
            data.PREFIX = previous
        yield World(f"http://{HOST}:{port}", redis_url, prefix, api, redis_process)
    finally:
        api.terminate()
        try:
            api.wait(10)
        except subprocess.TimeoutExpired:
            api.kill()
            api.wait(5)
        previous = data.PREFIX
        data.PREFIX = prefix
        try:
            data.unseed(client_)
        finally:
            data.PREFIX = previous
        client_.close()
        if redis_process is not None:
            redis_process.terminate()
            redis_process.wait(10)


# --- the servers ---------------------------------------------------------------------------


def flask_mcp_spec(name: str, the_world: World, workers: int = 1, **env: str) -> ServerSpec:
    """Flask-MCP's card app under ``gunicorn -k gevent``."""
    return ServerSpec(
        name=name,
        kind="flask_mcp",
        runner="gunicorn",
        app=FLASK_APP,
        worker="gevent",
        workers=workers,
        env=the_world.env() | env,
    )


def floor_spec(name: str, the_world: World, workers: int = 1) -> ServerSpec:
    """The card's floor (a bare Flask view running the same tools) under ``gunicorn -k gevent``.

    Stateless: it is sent no handshake, and its 2025-11-25 calls carry no session.
    """
    return ServerSpec(
        name=name,
        kind="floor",
        runner="gunicorn",
        app=FLOOR_APP,
        worker="gevent",
        workers=workers,
        env=the_world.env(),
        stateful=False,
    )


def asgi_spec(
    framework: str, mode: str, the_world: World, workers: int = 1, name: str | None = None
) -> ServerSpec:
    """FastMCP's or the SDK's card app under uvicorn (uvloop and httptools when installed)."""
    return ServerSpec(
        name=name or f"{framework}/{mode}",
        kind=framework,
        runner="uvicorn",
        app=ASGI_APP,
        workers=workers,
        env=the_world.env() | {"BENCH_ASGI": framework, "BENCH_SDK_MODE": mode},
        stateful=not mode.startswith("stateless"),
        fast_asgi=True,
    )


def fastmcp_available() -> bool:
    """Tell whether FastMCP (the bench extra pins 4.1.6) is installed."""
    import importlib.util

    return importlib.util.find_spec("fastmcp") is not None


def fastmcp_version() -> str | None:
    """Return the installed FastMCP's version."""
    try:
        from importlib.metadata import version

        return version("fastmcp")
    except Exception:  # noqa: BLE001 - not installed
        return None


# --- driving -------------------------------------------------------------------------------


def call_once(
    url: str, call: Call, *, era: str, session_id: str | None, request_id: int = 1
) -> str | None:
    """Call one tool the way wrk does and judge the answer; return what is wrong, or ``None``."""
    reply = client.call_tool(
        url,
        call.tool,
        call.arguments_for(1 + request_id % data.USERS),
        session_id=session_id,
        era=era,
        request_id=request_id,
    )
    problem = client.check_call(reply, request_id, ())
    if problem is not None:
        return problem
    answer = reply.response_to(request_id)
    assert answer is not None
    return call.check(answer["result"])


def drive_mix(
    url: str,
    calls: t.Sequence[Call],
    *,
    connections: int,
    seconds: float,
    sessions: t.Sequence[str],
    era: str,
    core: str | None,
    progress: bool = False,
    count_pattern: str | None = None,
    min_bytes: int = 0,
    timeout_s: float = 30.0,
) -> wrk.WrkResult:
    """Run wrk with ``lua/card.lua`` on a mix of calls."""
    extra = mix_env(calls) | {"BENCH_MIN_BYTES": str(min_bytes)}
    if count_pattern:
        extra |= {"BENCH_COUNT_PATTERN": count_pattern, "BENCH_COUNT_N": "1"}
    return wrk.run(
        url,
        connections=connections,
        seconds=seconds,
        load=wrk.Load(progress=progress),
        sessions=sessions,
        era=era,
        core=core,
        timeout_s=timeout_s,
        script=CARD_SCRIPT,
        env_extra=extra,
    )
