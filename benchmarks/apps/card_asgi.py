"""The realistic card's tools on FastMCP 4.1.6 or the official SDK (``mcp``), under uvicorn.

``BENCH_ASGI`` picks the framework (``fastmcp`` or ``sdk``), ``BENCH_SDK_MODE``
its transport mode, as a user of either would set it:

- ``json``: sessions, JSON answers (``json_response=True``);
- ``stateless-json``: no sessions, JSON answers (the card's Python server);
- ``stateless-sse``: no sessions, an SSE stream per POST (what a tool that
  reports progress needs);
- ``default``: the framework's default (sessions, SSE answers).

The tools are the same as :mod:`.card_flask_mcp`'s, declared the way each
framework documents, ``async def`` where they do I/O: Redis through
``redis.asyncio`` and HTTP through one shared ``httpx.AsyncClient``, as their
users would write them (the card's second edition does the same). Run::

    BENCH_ASGI=fastmcp BENCH_SDK_MODE=stateless-json uvicorn benchmarks.apps.card_asgi:app
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import json
import os
import time
import typing as t

import httpx
import redis.asyncio as aioredis

from . import card_data as card

FRAMEWORK = os.environ.get("BENCH_ASGI", "sdk")
MODE = os.environ.get("BENCH_SDK_MODE", "stateless-json")
MODES: dict[str, dict[str, bool]] = {
    "default": {},
    "json": {"json_response": True},
    "stateless-json": {"stateless_http": True, "json_response": True},
    "stateless-sse": {"stateless_http": True, "json_response": False},
}
if FRAMEWORK not in ("fastmcp", "sdk"):
    raise SystemExit(f"BENCH_ASGI must be fastmcp or sdk, not {FRAMEWORK!r}")
if MODE not in MODES:
    raise SystemExit(f"BENCH_SDK_MODE must be one of {', '.join(MODES)}, not {MODE!r}")
SERVER_TYPE = FRAMEWORK

if FRAMEWORK == "fastmcp":
    from fastmcp import Context
    from fastmcp import FastMCP

    server: t.Any = FastMCP("card-fastmcp")
    tool = server.tool
    text_only: dict[str, t.Any] = {"output_schema": None}
else:
    from mcp.server.mcpserver import Context  # type: ignore[assignment]
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("card-sdk", log_level="WARNING")
    tool = server.tool
    text_only = {"structured_output": False}


@functools.cache
def _http() -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=card.HTTP_POOL, max_keepalive_connections=card.HTTP_POOL)
    return httpx.AsyncClient(base_url=card.API_URL, timeout=10.0, limits=limits)


@functools.cache
def _redis() -> aioredis.Redis:
    return aioredis.Redis.from_url(card.REDIS_URL, decode_responses=True)


# --- first edition -------------------------------------------------------------------------


@tool()
def calculate_fibonacci(n: int) -> dict[str, t.Any]:
    """Compute the n-th Fibonacci number recursively (n between 0 and 40)."""
    return card.fibonacci_result(n, SERVER_TYPE)


@tool()
async def fetch_external_data(endpoint: str) -> dict[str, t.Any]:
    """GET an HTTP endpoint and report its status and response time."""
    start = time.time()
    try:
        response = await _http().get(endpoint)
    except httpx.HTTPError as exc:
        return card.fetch_error(endpoint, exc, time.time() - start, SERVER_TYPE)
    return card.fetch_result(endpoint, response.status_code, time.time() - start, SERVER_TYPE)


@tool()
def process_json_data(data: dict[str, t.Any]) -> dict[str, t.Any]:
    """Validate a JSON object and upper-case its strings."""
    return card.json_result(data, SERVER_TYPE)


@tool()
async def simulate_database_query(query: str, delay_ms: int = 0) -> dict[str, t.Any]:
    """Simulate a database query that takes delay_ms milliseconds (0 to 5000)."""
    card.check_delay(delay_ms)
    await asyncio.sleep(delay_ms / 1000)
    now = datetime.datetime.now(datetime.timezone.utc).isoformat()
    return card.query_result(query, delay_ms, now, SERVER_TYPE)


# --- second edition ------------------------------------------------------------------------


@tool()
async def search_products(
    category: str = "Electronics",
    min_price: float = 50.0,
    max_price: float = 500.0,
    limit: int = 10,
) -> str:
    """Search products by category and price range, merged with popularity data."""
    params = {"category": category, "min_price": min_price, "max_price": max_price, "limit": limit}
    response, popular = await asyncio.gather(
        _http().get("/products/search", params=params),
        _redis().zrevrangebyscore(card.popular_key(), "+inf", "-inf", start=0, num=10),
    )
    return card.search_text(category, response.json(), popular, SERVER_TYPE)


@tool()
async def get_user_cart(user_id: str = "user-00042") -> str:
    """Get a user's cart with their recent order history."""
    cart = await _redis().hgetall(card.cart_key(user_id))
    items = card.cart_items(cart)
    first = items[0]["product_id"] if items else 1
    _product, history = await asyncio.gather(
        _http().get(f"/products/{first}"),
        _redis().lrange(card.history_key(user_id), 0, 4),
    )
    return card.cart_text(user_id, cart, items, history, SERVER_TYPE)


@tool()
async def checkout(user_id: str = "user-00042", items: list[dict[str, int]] | None = None) -> str:
    """Check out a cart: price it, count the user's rate limit, record the order."""
    if items is None:
        items = card.CHECKOUT_ITEMS
    now = int(time.time())
    first = items[0]["product_id"] if items else 1
    pipe = _redis().pipeline(transaction=False)
    pipe.incr(card.rate_key(user_id))
    pipe.rpush(card.history_key(user_id), card.order_entry(user_id, items, now))
    pipe.zadd(card.popular_key(), {f"product:{first}": 1}, incr=True)
    calculated, counts = await asyncio.gather(
        _http().post("/cart/calculate", json={"user_id": user_id, "items": items}),
        pipe.execute(),
    )
    rate_count = counts[0]
    return card.checkout_text(user_id, items, calculated.json(), rate_count, now, SERVER_TYPE)


# --- large results -------------------------------------------------------------------------

PAYLOADS = {name: card.large_payload(size) for name, size in card.SIZES.items()}
TEXTS = {name: json.dumps(payload, separators=(",", ":")) for name, payload in PAYLOADS.items()}


@tool()
def large_structured(size: str) -> dict[str, t.Any]:
    """Return a structured result of ``size`` (1kb, 100kb, 4mb) of catalog JSON."""
    return PAYLOADS[size]


@tool(**text_only)
def large_text(size: str) -> str:
    """Return ``size`` (1kb, 100kb, 4mb) of catalog JSON as one text block."""
    return TEXTS[size]


@tool()
async def large_progress(size: str, ctx: Context) -> dict[str, t.Any]:  # type: ignore[type-arg]
    """Report one progress step, then return the structured result of ``size``."""
    await ctx.report_progress(1, 2)
    return PAYLOADS[size]


if FRAMEWORK == "fastmcp":
    app = server.http_app(path="/mcp", **MODES[MODE])
else:
    app = server.streamable_http_app(**MODES[MODE])
