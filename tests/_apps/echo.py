"""An app with extensions added through the public seam, for gunicorn and stdio.

- ``Echo``: the extension of issue 27's sketch, served to every caller;
- ``Strict``: a method only for callers that declared the extension (-32021 otherwise),
  which answers with the caller's settings for it;
- ``Badge``: a tool option (``badge=``) that lands in the tool's ``_meta``;
- a resource and a template that are served but not listed (``listed=False``);
- ``Picky``: added after ``init_app`` and refusing the app: what its ``setup``
  declared (a tool, a prompt) is taken back, not listed nor advertised.
"""

from __future__ import annotations

import contextlib
import typing as t

from flask import Flask

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import Extension


class Echo(Extension):
    id = "com.example/echo"

    def capability(self) -> dict[str, t.Any]:
        return {"version": 1}

    @Extension.method("echo/ping")
    def ping(self, params: dict[str, t.Any], ctx: Context) -> dict[str, t.Any]:
        return {"pong": params.get("x")}


class Strict(Extension):
    id = "com.example/strict"

    @Extension.method("strict/settings", declared_only=True)
    def settings(self, params: dict[str, t.Any], ctx: Context) -> dict[str, t.Any]:
        return {
            "settings": ctx.client_extension(self.id),
            "version": ctx.client.protocol_version,
            "client": ctx.client.info.get("name"),
        }

    @Extension.method("strict/fail")
    def fail(self, params: dict[str, t.Any], ctx: Context) -> dict[str, t.Any]:
        raise RuntimeError("the database password is hunter2")


class Badge(Extension):
    id = "com.example/badge"
    tool_options = ("badge",)

    def capability(self) -> None:
        return None  # nothing to advertise

    def check_tool(self, tool: t.Any, options: dict[str, t.Any]) -> None:
        badge = options.get("badge")
        if badge is not None and not isinstance(badge, str):
            raise TypeError(f"badge= must be a string, got {badge!r}")

    def tool_meta(self, tool: t.Any, options: dict[str, t.Any]) -> dict[str, t.Any] | None:
        if "badge" not in options:
            return None
        return {"com.example/badge": options["badge"]}


mcp = MCP(name="echo-demo", version="1.0.0")
mcp.add_extension(Echo())
mcp.add_extension(Strict())
mcp.add_extension(Badge())


@mcp.tool(badge="gold")
def shout(text: str) -> str:
    """Return the text in capitals."""
    return text.upper()


@mcp.resource("secret://plan", listed=False)
def plan() -> str:
    return "the plan"


@mcp.resource("secret://notes/{name}", listed=False)
def note(name: str) -> str:
    return f"note {name}"


@mcp.resource("public://readme")
def readme() -> str:
    return "read me"


app = Flask(__name__)
mcp.init_app(app)


class Picky(Extension):
    id = "com.example/picky"

    def setup(self, mcp: t.Any) -> None:
        mcp.add_tool(lambda: "", name="picky_tool")
        mcp.add_prompt(lambda: "", name="picky_prompt")

    def init_app(self, app: Flask, mcp: t.Any) -> None:
        raise ValueError(f"Picky refuses {app.name}")


with contextlib.suppress(ValueError):
    mcp.add_extension(Picky())
