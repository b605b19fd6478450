"""The local HTTP API the realistic card's tools call: a product catalog and a mock endpoint.

``python -m benchmarks.apps.card_api PORT`` serves on 127.0.0.1:PORT, as the
card's Go ``api-service`` does (100,000 products built at start):

- ``GET /products/search?category=&min_price=&max_price=&limit=``: the products
  of a category in a price range, cheapest first, with how many matched;
- ``GET /products/{id}``: one product;
- ``POST /cart/calculate``: a cart's subtotal, tax, shipping, discount and total;
- ``GET /api``: the first edition's mock answer (``fetch_external_data``);
- ``GET /health``.

It is plain asyncio (HTTP/1.1 keep-alive, no framework) with its answers cached,
so that it costs the servers under test as little waiting as it can: it runs
pinned to the client core, and must not be what limits them.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
import typing as t
from urllib.parse import parse_qs

from .card_data import CATALOG_SIZE
from .card_data import CATEGORIES
from .card_data import product

MOCK = b'{"status":"ok","message":"mock response","timestamp":"2026-01-01T00:00:00Z"}'
HEALTH = b'{"status":"ok","server_type":"api-service"}'

CATALOG = [product(i) for i in range(CATALOG_SIZE)]
BY_CATEGORY: dict[str, list[int]] = {c: [] for c in CATEGORIES}
for _index, _item in enumerate(CATALOG):
    BY_CATEGORY[_item["category"]].append(_index)


@functools.lru_cache(maxsize=4096)
def search(query: str) -> bytes:
    """Answer ``/products/search?<query>``."""
    args = {k: v[0] for k, v in parse_qs(query).items()}
    category = args.get("category") or "Electronics"
    low = float(args.get("min_price") or 0)
    high = float(args.get("max_price") or 0) or float("inf")
    limit = int(float(args.get("limit") or 0))
    if limit <= 0 or limit > 1000:
        limit = 10
    found = [
        CATALOG[i] for i in BY_CATEGORY.get(category, []) if low <= CATALOG[i]["price"] <= high
    ]
    found.sort(key=lambda p: p["price"])
    body = {"category": category, "total_found": len(found), "products": found[:limit]}
    return json.dumps(body).encode()


@functools.lru_cache(maxsize=CATALOG_SIZE)
def one_product(number: int) -> bytes:
    """Answer ``/products/{number}``."""
    return json.dumps(CATALOG[number - 1]).encode()


def _r2(value: float) -> float:
    return round(value * 100) / 100


def calculate(body: bytes) -> bytes:
    """Answer ``POST /cart/calculate``."""
    cart = json.loads(body)
    subtotal = 0.0
    for item in cart.get("items", []):
        number = int(item.get("product_id", 0))
        if 1 <= number <= CATALOG_SIZE:
            subtotal += CATALOG[number - 1]["price"] * int(item.get("quantity", 0))
    subtotal = _r2(subtotal)
    tax = _r2(subtotal * 0.085)
    shipping, discount = 5.99, 0.0
    if subtotal >= 100.0:
        discount, shipping = _r2(subtotal * 0.10), 0.0
    user = str(cart.get("user_id", ""))
    return json.dumps(
        {
            "order_id": f"ORD-{user.replace('-', '')}-{len(cart.get('items', []))}",
            "user_id": user,
            "subtotal": subtotal,
            "tax": tax,
            "shipping": shipping,
            "discount": discount,
            "total": _r2(subtotal + tax + shipping - discount),
            "items_count": len(cart.get("items", [])),
        }
    ).encode()


def answer(method: str, target: str, body: bytes) -> tuple[int, bytes]:
    """Route one request; return the status and JSON body."""
    path, _, query = target.partition("?")
    if method == "GET":
        if path == "/products/search":
            return 200, search(query)
        if path.startswith("/products/"):
            tail = path[len("/products/") :]
            if tail.isdigit() and 1 <= int(tail) <= CATALOG_SIZE:
                return 200, one_product(int(tail))
            return 404, b'{"error":"not found"}'
        if path == "/api":
            return 200, MOCK
        if path == "/health":
            return 200, HEALTH
    elif method == "POST" and path == "/cart/calculate":
        try:
            return 200, calculate(body)
        except (ValueError, TypeError, AttributeError):
            return 400, b'{"error":"bad request"}'
    return 404, b'{"error":"not found"}'


class HTTP(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self) -> None:
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = t.cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].decode("latin-1").split("\r\n")
            length = 0
            close = False
            for line in head[1:]:
                name, _, value = line.partition(":")
                lowered = name.strip().lower()
                if lowered == "content-length":
                    length = int(value.strip())
                elif lowered == "connection" and value.strip().lower() == "close":
                    close = True
            if len(self.buffer) < end + 4 + length:
                return
            body = self.buffer[end + 4 : end + 4 + length]
            self.buffer = self.buffer[end + 4 + length :]
            method, target = head[0].split(" ", 2)[:2]
            status, payload = answer(method, target, body)
            reason = b"OK" if status == 200 else b"Error"
            assert self.transport is not None
            self.transport.write(
                b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                % (status, reason, len(payload), payload)
            )
            if close:
                self.transport.close()
                return


async def serve(port: int) -> None:
    """Serve on 127.0.0.1:``port`` until cancelled."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(HTTP, "127.0.0.1", port, backlog=4096)
    print(f"card api listening on 127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1])))
