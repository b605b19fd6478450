"""What every server of the realistic card shares: the tools' pure logic, the data, the seed.

The tools are those of the TM Dev Lab MCP server benchmark, as its Python
(FastMCP) server defines them:

- first edition (CPU and simulated I/O): ``calculate_fibonacci(n)``,
  ``fetch_external_data(endpoint)``, ``process_json_data(data)`` and
  ``simulate_database_query(query, delay_ms)``, driven with ``n=10``, the local
  API's ``/api``, ``{"name": "benchmark", "count": 42, "nested": {"key":
  "value"}}`` and ``delay_ms=10``; each returns a dict (a structured result);
- second edition (I/O on Redis and an HTTP API): ``search_products`` (an HTTP GET
  of ``/products/search`` and a ``ZREVRANGEBYSCORE`` of the popularity set),
  ``get_user_cart`` (``HGETALL`` of the cart, then an HTTP GET of
  ``/products/{id}`` and an ``LRANGE`` of the order history) and ``checkout``
  (an HTTP POST of ``/cart/calculate``, ``INCR``, ``RPUSH`` and ``ZADD INCR``);
  each returns a JSON string (a text result).

Each server module (:mod:`.card_flask_mcp`, :mod:`.card_asgi`) wraps these in its
own framework's tool declaration and does the I/O with the client its users
would use; what a tool computes from what it read is here, once.

The Redis keys carry a prefix (``BENCH_CARD_PREFIX``, default ``bench:`` as in
the card) so that a run on a shared Redis touches only its own keys.
"""

from __future__ import annotations

import json
import os
import typing as t

#: The prefix of every Redis key the card's tools read and write.
PREFIX = os.environ.get("BENCH_CARD_PREFIX", "bench:")
#: The Redis the tools use (``BENCH_CARD_REDIS``).
REDIS_URL = os.environ.get("BENCH_CARD_REDIS", "redis://127.0.0.1:6379/14")
#: The local API (:mod:`.card_api`) the HTTP tools call (``BENCH_CARD_API``).
API_URL = os.environ.get("BENCH_CARD_API", "http://127.0.0.1:8100")
#: Connections each server's HTTP client keeps to the API (50 calls in flight).
HTTP_POOL = 100

#: The arguments the card's load script sends.
FIB_N = 10
JSON_DATA = {"name": "benchmark", "count": 42, "nested": {"key": "value"}}
DB_QUERY = "SELECT * FROM benchmarks"
DB_DELAY_MS = 10
SEARCH = {"category": "Electronics", "min_price": 50.0, "max_price": 500.0, "limit": 10}
CHECKOUT_ITEMS = [{"product_id": 42, "quantity": 2}, {"product_id": 1337, "quantity": 1}]
#: Users the load spreads over (the card's 50 virtual users each had their own).
USERS = 50

CATEGORIES = [
    "Electronics",
    "Books",
    "Clothing",
    "Sports",
    "Home",
    "Garden",
    "Toys",
    "Food",
    "Beauty",
    "Automotive",
    "Music",
    "Movies",
    "Games",
    "Office",
    "Health",
    "Pets",
    "Travel",
    "Tools",
    "Jewelry",
    "Baby",
]
BRANDS = [
    "Alpha",
    "Beta",
    "Gamma",
    "Delta",
    "Epsilon",
    "Zeta",
    "Eta",
    "Theta",
    "Iota",
    "Kappa",
    "Lambda",
    "Mu",
    "Nu",
    "Xi",
    "Omicron",
    "Pi",
    "Rho",
    "Sigma",
    "Tau",
    "Upsilon",
    "Phi",
    "Chi",
    "Psi",
    "Omega",
    "Apex",
    "Nexus",
    "Vertex",
    "Zenith",
    "Nadir",
    "Flux",
    "Forge",
    "Craft",
    "Build",
    "Make",
    "Create",
    "Design",
    "Style",
    "Form",
    "Shape",
    "Mold",
    "Cast",
    "Weld",
    "Fuse",
    "Bond",
    "Link",
    "Chain",
    "Wire",
    "Mesh",
    "Weave",
    "Knit",
]
TAGS = ("sale", "new", "featured", "bestseller", "clearance", "limited", "popular", "exclusive")
CATALOG_SIZE = 100_000


def user_id(n: int) -> str:
    """Return the id of seeded user ``n`` (``user-00042``)."""
    return f"user-{n:05d}"


# --- first edition -------------------------------------------------------------------------


def fib(x: int) -> int:
    """The card's recursive Fibonacci (CPU-bound on purpose)."""
    return x if x <= 1 else fib(x - 1) + fib(x - 2)


def fibonacci_result(n: int, server_type: str) -> dict[str, t.Any]:
    """Return ``calculate_fibonacci``'s result.

    :raises ValueError: ``n`` is outside 0..40.
    """
    if n < 0 or n > 40:
        raise ValueError("n must be between 0 and 40")
    return {"input": n, "result": fib(n), "server_type": server_type}


def fetch_result(
    endpoint: str, status: int, elapsed_s: float, server_type: str
) -> dict[str, t.Any]:
    """Return ``fetch_external_data``'s result for an answered GET."""
    return {
        "url": endpoint,
        "status_code": status,
        "response_time_ms": int(elapsed_s * 1000),
        "server_type": server_type,
    }


def fetch_error(
    endpoint: str, error: Exception, elapsed_s: float, server_type: str
) -> dict[str, t.Any]:
    """Return ``fetch_external_data``'s result when the GET failed (as the card does)."""
    return {
        "url": endpoint,
        "status_code": 0,
        "response_time_ms": int(elapsed_s * 1000),
        "error": str(error),
        "server_type": server_type,
    }


def transform_strings(value: t.Any) -> t.Any:
    """Upper-case every string inside ``value`` (``process_json_data``)."""
    if isinstance(value, dict):
        return {k: transform_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [transform_strings(item) for item in value]
    if isinstance(value, str):
        return value.upper()
    return value


def json_result(data: dict[str, t.Any], server_type: str) -> dict[str, t.Any]:
    """Return ``process_json_data``'s result."""
    return {
        "original_keys": list(data.keys()),
        "transformed_data": transform_strings(data),
        "server_type": server_type,
    }


def check_delay(delay_ms: int) -> None:
    """Refuse a ``simulate_database_query`` delay outside 0..5000 ms."""
    if delay_ms < 0 or delay_ms > 5000:
        raise ValueError("delay_ms must be between 0 and 5000")


def query_result(query: str, delay_ms: int, now_iso: str, server_type: str) -> dict[str, t.Any]:
    """Return ``simulate_database_query``'s result."""
    return {"query": query, "delay_ms": delay_ms, "timestamp": now_iso, "server_type": server_type}


# --- second edition ------------------------------------------------------------------------


def popular_key() -> str:
    """The sorted set of product popularity."""
    return f"{PREFIX}popular"


def cart_key(user: str) -> str:
    """A user's cart (a hash)."""
    return f"{PREFIX}cart:{user}"


def history_key(user: str) -> str:
    """A user's order history (a list of JSON strings)."""
    return f"{PREFIX}history:{user}"


def rate_key(user: str) -> str:
    """The rate-limit counter ``checkout`` increments (100 counters, as in the card)."""
    number = int(user.split("-")[1]) if "-" in user else 42
    return f"{PREFIX}ratelimit:user-{number % 100:05d}"


def search_text(
    category: str, search: dict[str, t.Any], popular: t.Sequence[str], server_type: str
) -> str:
    """Return ``search_products``'s text from the API's answer and the top 10 members."""
    top10 = [int(member.split(":")[1]) for member in popular]
    ranks = {pid: rank + 1 for rank, pid in enumerate(top10)}
    products = [
        {
            "id": p["id"],
            "sku": p["sku"],
            "name": p["name"],
            "price": p["price"],
            "rating": p["rating"],
            "popularity_rank": ranks.get(p["id"], 0),
        }
        for p in search.get("products", [])
    ]
    return json.dumps(
        {
            "category": category,
            "total_found": search.get("total_found", 0),
            "products": products,
            "top10_popular_ids": top10,
            "server_type": server_type,
        }
    )


def cart_items(cart: dict[str, str]) -> list[dict[str, t.Any]]:
    """Return the items of a cart hash."""
    return t.cast("list[dict[str, t.Any]]", json.loads(cart.get("items", "[]")))


def cart_text(
    user: str,
    cart: dict[str, str],
    items: list[dict[str, t.Any]],
    history: t.Sequence[str],
    server_type: str,
) -> str:
    """Return ``get_user_cart``'s text."""
    recent = []
    for entry in history:
        try:
            recent.append(json.loads(entry))
        except ValueError:
            recent.append({"raw": entry})
    return json.dumps(
        {
            "user_id": user,
            "cart": {
                "items": items,
                "item_count": len(items),
                "estimated_total": float(cart.get("total", 0)),
            },
            "recent_history": recent,
            "server_type": server_type,
        }
    )


def order_entry(user: str, items: list[dict[str, t.Any]], now: int) -> str:
    """Return the history entry ``checkout`` appends."""
    return json.dumps({"order_id": f"ORD-{user}-{now}", "items": items, "ts": now})


def checkout_text(
    user: str,
    items: list[dict[str, t.Any]],
    calculated: dict[str, t.Any],
    rate_count: int,
    now: int,
    server_type: str,
) -> str:
    """Return ``checkout``'s text."""
    return json.dumps(
        {
            "order_id": calculated.get("order_id", f"ORD-{user}-{now}"),
            "user_id": user,
            "total": calculated.get("total", 0),
            "items_count": len(items),
            "rate_limit_count": rate_count,
            "status": "confirmed",
            "server_type": server_type,
        }
    )


def seed(client: t.Any) -> None:
    """Write the card's data to Redis (``redis.Redis``): carts, histories, popularity, counters.

    As the card's seed: 10,000 carts, 1,000 histories of 20 orders, 100,000
    popularity scores and 100 rate-limit counters, under :data:`PREFIX`.
    """
    pipe = client.pipeline(transaction=False)
    for n in range(1, 10_001):
        items = [
            {"product_id": (n * 7) % CATALOG_SIZE + 1, "qty": 1 + n % 3},
            {"product_id": (n * 13) % CATALOG_SIZE + 1, "qty": 1 + n % 2},
        ]
        if n % 3 == 0:
            items.append({"product_id": (n * 17) % CATALOG_SIZE + 1, "qty": 1})
        total = sum(it["qty"] * (((it["product_id"] * 100) % 9_999) + 1) / 100.0 for it in items)
        pipe.hset(
            cart_key(user_id(n)),
            mapping={
                "user_id": user_id(n),
                "items": json.dumps(items),
                "created": "1740000000",
                "expires": "1740086400",
                "total": f"{total:.2f}",
            },
        )
        if n % 1000 == 0:
            pipe.execute()
    for n in range(1, 1_001):
        key = history_key(user_id(n))
        pipe.delete(key)
        pipe.rpush(
            key,
            *[
                json.dumps(
                    {
                        "order_id": f"ORD-{n:05d}-{j:02d}",
                        "product_id": (n * j * 7) % CATALOG_SIZE + 1,
                        "qty": 1 + j % 3,
                        "price": round(((n * j * 13) % 9_999 + 1) / 100.0, 2),
                        "ts": 1_740_000_000 + n * 86_400 + j * 3_600,
                    }
                )
                for j in range(1, 21)
            ],
        )
        if n % 100 == 0:
            pipe.execute()
    scores = {f"product:{i}": i * 7 % 10_000 for i in range(1, CATALOG_SIZE + 1)}
    members = list(scores.items())
    for start in range(0, len(members), 10_000):
        pipe.zadd(popular_key(), dict(members[start : start + 10_000]))
    for n in range(1, 101):
        pipe.set(f"{PREFIX}ratelimit:{user_id(n)}", 0)
    pipe.execute()


def unseed(client: t.Any) -> int:
    """Delete every key under :data:`PREFIX`; return how many."""
    deleted = 0
    batch: list[t.Any] = []
    for key in client.scan_iter(match=f"{PREFIX}*", count=1000):
        batch.append(key)
        if len(batch) >= 1000:
            deleted += client.delete(*batch)
            batch = []
    if batch:
        deleted += client.delete(*batch)
    return deleted


# --- large results -------------------------------------------------------------------------

#: Result sizes of the large-result tools, in bytes of compact JSON.
SIZES = {"1kb": 1_000, "100kb": 100_000, "4mb": 4_000_000}


def product(i: int) -> dict[str, t.Any]:
    """Return catalog product ``i`` (0-based), as the card's API builds it."""
    category = CATEGORIES[i % 20]
    brand = BRANDS[i % 50]
    return {
        "id": i + 1,
        "sku": f"SKU-{i + 1:06d}",
        "name": f"{brand} {category} Item {i + 1}",
        "category": category,
        "brand": brand,
        "price": 1.0 + (i % 99_900) / 100.0,
        "stock": i % 501,
        "rating": round(1.0 + (i % 40) / 10.0, 1),
        "tags": [TAGS[(i + j) % 8] for j in range(2 + i % 3)],
        "weight": round((1 + i % 100) * 0.1, 2),
        "description": f"Quality {category} by {brand}. SKU {i + 1:06d}.",
    }


def large_payload(size: int) -> dict[str, t.Any]:
    """Return a dict of catalog products whose compact JSON is about ``size`` bytes.

    Real data (strings, numbers, lists, nested objects), not one long string:
    encoding it walks ~20 values per 250 bytes, as a tool answering a database
    query would.
    """
    items = []
    used = 30
    i = 0
    while used < size:
        item = product(i)
        items.append(item)
        used += len(json.dumps(item, separators=(",", ":"))) + 1
        i += 1
    return {"count": len(items), "items": items}
