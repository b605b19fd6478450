"""A weather server with MCP Apps views, for ``tests/test_apps_protocol.py``.

Served in process (the test client), on gunicorn (the official client) and over stdio
(``flask --app tests._apps.apps_protocol mcp stdio``). It has

- ``ui://weather/card``, rendered by a function that reads ``g`` (set by a
  ``before_request``), with every ``_meta.ui`` field;
- ``ui://weather/forecast``, a template, left out of ``resources/list`` (``listed=False``);
- a blueprint registered with ``prefix="radar_"``: its view ``ui://map`` becomes
  ``ui://radar/map`` and its tool ``radar_show_map``'s ``ui=`` follows;
- ``weather`` (bound to the card: text for every client, ``structuredContent`` for those
  that render views), ``refresh_weather`` (the card's alone, ``visibility=["app"]``) and
  ``forecast`` (bound to the unlisted view).
"""

from __future__ import annotations

from flask import Flask
from flask import g

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import MCPBlueprint
from flask_mcp import ToolResult

CARD = "ui://weather/card"
FORECAST = "ui://weather/forecast"
CARD_UI = {
    "csp": {
        "connectDomains": ["https://api.example.com"],
        "resourceDomains": ["https://cdn.example.com"],
        "frameDomains": ["https://www.youtube.com"],
        "baseUriDomains": ["https://cdn.example.com"],
    },
    "permissions": {"clipboardWrite": {}, "geolocation": {}},
    "domain": "a904794854a047f6.claudemcpcontent.com",
    "prefersBorder": True,
}

mcp = MCP(name="weather", version="1.0.0")


@mcp.ui(
    CARD,
    name="weather_card",
    title="Weather card",
    csp=CARD_UI["csp"],
    permissions=CARD_UI["permissions"],
    domain=CARD_UI["domain"],
    prefers_border=True,
)
def weather_card() -> str:
    """The weather in a city, as a card."""
    # g.user comes from before_request over HTTP; stdio runs no HTTP request hooks
    return f"<!DOCTYPE html><html><body><p id=who>{g.get('user', 'stdio')}</p></body></html>"


mcp.ui_template(FORECAST, "forecast.html", name="forecast", listed=False)


def report(ctx: Context, city: str) -> ToolResult:
    """Return the weather as text for every client, with the card's data for those with views."""
    data = {"city": city, "celsius": 21}
    return ToolResult(
        content=f"{city}: 21 °C, sunny.",
        structured=data if ctx.client_supports_ui() else None,
    )


@mcp.tool(ui=CARD)
def weather(ctx: Context, city: str) -> ToolResult:
    """Tell the weather in a city."""
    return report(ctx, city)


@mcp.tool(ui=CARD, visibility=["app"])
def refresh_weather(ctx: Context, city: str) -> ToolResult:
    """Refresh the card (the card calls it; hosts keep it from the model)."""
    return report(ctx, city)


@mcp.tool(ui=FORECAST, visibility=["model", "app"])
def forecast(city: str) -> str:
    """Tell tomorrow's weather in a city."""
    return f"{city} tomorrow: rain."


radar = MCPBlueprint("radar", __name__)
radar.ui_template("ui://map", "forecast.html", name="map", prefers_border=False)


@radar.tool(ui="ui://map")
def show_map(region: str) -> str:
    """Show the rain radar of a region."""
    return f"Radar of {region}: light rain in the north."


mcp.register_blueprint(radar, prefix="radar_")


def create_app() -> Flask:
    """Return the app; ``g.user`` is what the card shows (a template sees the request)."""
    flask_app = Flask(__name__)

    @flask_app.before_request
    def who() -> None:
        g.user = "ada"

    mcp.init_app(flask_app)
    return flask_app


app = create_app()
