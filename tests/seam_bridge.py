"""Attach an extension to a server by hand, until the extension seam (issue 27) is merged.

``mcp.add_extension(extension)`` will do this in the kernel; the Skills and Server Card
extensions are written against its contract, and these tests run them end to end today
through the few hooks the current dispatcher has:

- each ``@Extension.method`` goes into ``mcp.dispatcher.add_method`` (both eras route
  there), called as ``handler(params, ctx)`` with the call's ``InlineContext``;
- ``capability()`` is added under ``capabilities.extensions[id]`` of ``initialize`` and
  ``server/discover``;
- ``setup(mcp)`` runs once; ``init_app(app, mcp)`` runs from :func:`init_app`;
- ``listed=False`` on a resource (an option the seam adds) is dropped: such resources are
  listed here, so no test of this bridge checks that ``resources/list`` leaves them out.

When the seam lands, this module goes and its callers use ``mcp.add_extension``.
"""

from __future__ import annotations

import typing as t

from flask_mcp.server.call import InlineContext

if t.TYPE_CHECKING:
    from flask import Flask

    from flask_mcp import MCP


def add_extension(mcp: MCP, extension: t.Any) -> None:
    """Route the extension's methods, declare its capability and run its ``setup``."""
    for method, attribute in type(extension).methods().items():
        handler = getattr(extension, attribute)

        def run(call: t.Any, handler: t.Any = handler) -> dict[str, t.Any]:
            return t.cast("dict[str, t.Any]", handler(call.params, InlineContext(call)))

        mcp.dispatcher.add_method(method, run)
    capabilities = mcp.registry.capabilities

    def with_extension(era: str = "handshake") -> dict[str, t.Any]:
        found = capabilities(era)
        settings = extension.capability()
        if settings is not None:
            found.setdefault("extensions", {})[extension.id] = settings
        return found

    mcp.registry.capabilities = with_extension  # type: ignore[method-assign]
    add_resource = mcp.add_resource

    def without_listed(*args: t.Any, listed: bool = True, **kwargs: t.Any) -> t.Any:
        return add_resource(*args, **kwargs)

    mcp.add_resource = without_listed  # type: ignore[method-assign]
    extension.setup(mcp)


def init_app(app: Flask, mcp: MCP, extension: t.Any) -> None:
    """Run the extension's ``init_app``, as ``MCP.init_app`` will for added extensions."""
    extension.init_app(app, mcp)
