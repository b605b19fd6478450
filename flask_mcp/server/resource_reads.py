"""``ctx.read_resource(uri)``: a handler reads a resource of its own server.

The read is a ``resources/read`` of the same server for the same caller: the URI is
matched against the declared resources, then the templates, the caller's scopes are
checked (:meth:`~flask_mcp.server.methods.Methods.authorize`, the check of
``resources/read``), and the handler's value is converted to ``contents`` as for the
client. It runs in the calling handler's greenlet or thread; middleware registered
with ``@mcp.middleware`` does not run around it (it is not a request).
"""

from __future__ import annotations

import dataclasses
import typing as t

from .running import running_call


def read_resource(ctx: t.Any, uri: str) -> list[dict[str, t.Any]]:
    """Read ``uri`` as ``resources/read`` would for the running call; return its ``contents``.

    :param ctx: the :class:`~flask_mcp.Context` asking (the resource handler's context
        when the running handler has none of its own).

    :raises RuntimeError: no Flask-MCP handler is running, or its server is not found.
    :raises ~flask_mcp.MCPError: as ``resources/read``: no resource serves ``uri`` (-32002
        in 2025-11-25, -32602 in 2026-07-28), the caller lacks its scopes (the request is
        answered with the 403 ``insufficient_scope`` challenge), or its handler failed.
    """
    if not isinstance(uri, str) or not uri:
        raise TypeError(f"ctx.read_resource() takes a URI string, got {uri!r}.")
    call = running_call.get(None)
    if call is None:
        raise RuntimeError(
            "ctx.read_resource() works only while a Flask-MCP handler runs, in its own"
            " greenlet or thread."
        )
    server = getattr(getattr(call.state.app, "extensions", {}), "get", lambda _: None)("mcp")
    dispatcher = getattr(server, "dispatcher", None)
    if dispatcher is None:
        raise RuntimeError(
            "ctx.read_resource() found no MCP server on the app serving this call; it needs"
            " a server registered with init_app(app)."
        )
    read = dataclasses.replace(
        call,
        method="resources/read",
        params={"uri": uri},
        ctx=call.ctx if call.ctx is not None else ctx,
        cache=None,
        scopes=(),
        context_declared=False,
    )
    result = dispatcher.core.resources_read(read)
    return t.cast("list[dict[str, t.Any]]", result["contents"])


__all__ = ["read_resource"]
