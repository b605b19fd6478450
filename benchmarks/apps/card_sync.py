"""The realistic card's tools as plain sync code, shared by Flask-MCP's app and the floor.

A Flask user's tools: Redis through ``redis.Redis`` and HTTP through one
``requests.Session`` (a pool of :data:`.card_data.HTTP_POOL`); under
``gunicorn -k gevent`` the worker's monkey-patching makes every socket wait
cooperative. :mod:`.card_flask_mcp` registers them as MCP tools and
:mod:`.card_floor` calls them from a bare Flask view, so both run the same code.
"""

from __future__ import annotations

import datetime
import functools
import time
import typing as t

import redis
import requests
from requests.adapters import HTTPAdapter

from . import card_data as card


@functools.cache
def _http() -> requests.Session:
    session = requests.Session()
    adapter = HTTPAdapter(pool_connections=1, pool_maxsize=card.HTTP_POOL)
    session.mount("http://", adapter)
    return session


@functools.cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(card.REDIS_URL, decode_responses=True)


def sync_tools(server_type: str) -> list[t.Callable[..., t.Any]]:
    """Return the card's seven tools, each answering with ``server_type`` in its result."""

    def calculate_fibonacci(n: int) -> dict[str, t.Any]:
        """Compute the n-th Fibonacci number recursively (n between 0 and 40)."""
        return card.fibonacci_result(n, server_type)

    def fetch_external_data(endpoint: str) -> dict[str, t.Any]:
        """GET an HTTP endpoint and report its status and response time."""
        start = time.time()
        try:
            response = _http().get(endpoint, timeout=10)
        except requests.RequestException as exc:
            return card.fetch_error(endpoint, exc, time.time() - start, server_type)
        return card.fetch_result(endpoint, response.status_code, time.time() - start, server_type)

    def process_json_data(data: dict[str, t.Any]) -> dict[str, t.Any]:
        """Validate a JSON object and upper-case its strings."""
        return card.json_result(data, server_type)

    def simulate_database_query(query: str, delay_ms: int = 0) -> dict[str, t.Any]:
        """Simulate a database query that takes delay_ms milliseconds (0 to 5000)."""
        card.check_delay(delay_ms)
        time.sleep(delay_ms / 1000)
        now = datetime.datetime.now(datetime.timezone.utc).isoformat()
        return card.query_result(query, delay_ms, now, server_type)

    def search_products(
        category: str = "Electronics",
        min_price: float = 50.0,
        max_price: float = 500.0,
        limit: int = 10,
    ) -> str:
        """Search products by category and price range, merged with popularity data."""
        params = {
            "category": category,
            "min_price": min_price,
            "max_price": max_price,
            "limit": limit,
        }
        found = _http().get(f"{card.API_URL}/products/search", params=params, timeout=10).json()
        popular = _redis().zrevrangebyscore(card.popular_key(), "+inf", "-inf", start=0, num=10)
        return card.search_text(category, found, popular, server_type)

    def get_user_cart(user_id: str = "user-00042") -> str:
        """Get a user's cart with their recent order history."""
        cart = _redis().hgetall(card.cart_key(user_id))
        items = card.cart_items(cart)
        first = items[0]["product_id"] if items else 1
        _http().get(f"{card.API_URL}/products/{first}", timeout=10)
        history = _redis().lrange(card.history_key(user_id), 0, 4)
        return card.cart_text(user_id, cart, items, history, server_type)

    def checkout(user_id: str = "user-00042", items: list[dict[str, int]] | None = None) -> str:
        """Check out a cart: price it, count the user's rate limit, record the order."""
        if items is None:
            items = card.CHECKOUT_ITEMS
        now = int(time.time())
        first = items[0]["product_id"] if items else 1
        calculated = _http().post(
            f"{card.API_URL}/cart/calculate", json={"user_id": user_id, "items": items}, timeout=10
        )
        pipe = _redis().pipeline(transaction=False)
        pipe.incr(card.rate_key(user_id))
        pipe.rpush(card.history_key(user_id), card.order_entry(user_id, items, now))
        pipe.zadd(card.popular_key(), {f"product:{first}": 1}, incr=True)
        rate_count = pipe.execute()[0]
        return card.checkout_text(user_id, items, calculated.json(), rate_count, now, server_type)

    return [
        calculate_fibonacci,
        fetch_external_data,
        process_json_data,
        simulate_database_query,
        search_products,
        get_user_cart,
        checkout,
    ]
