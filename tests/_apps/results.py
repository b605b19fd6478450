"""An app whose tools return bytes, datetimes and pydantic models, for end-to-end tests."""

from __future__ import annotations

import datetime

import pydantic
from flask import Flask

from flask_mcp import MCP

mcp = MCP(name="results", version="1.0.0")

#: The smallest valid PNG: a 1x1 transparent pixel.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


class Point(pydantic.BaseModel):
    x: int
    y: int = 0


class Route(pydantic.BaseModel):
    name: str
    points: list[Point]
    departs: datetime.datetime


@mcp.tool(mime_type="image/png")
def pixel() -> bytes:
    """Return a 1x1 PNG."""
    return PNG


@mcp.tool()
def next_day(when: datetime.datetime) -> datetime.datetime:
    """Return the same time one day later."""
    return when + datetime.timedelta(days=1)


@mcp.tool()
def reverse(route: Route) -> Route:
    """Return the route backwards, leaving a day later."""
    return Route(
        name=f"{route.name} (back)",
        points=route.points[::-1],
        departs=route.departs + datetime.timedelta(days=1),
    )


app = Flask(__name__)
mcp.init_app(app)
