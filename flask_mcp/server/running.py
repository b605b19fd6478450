"""The context variable holding the call whose handler runs now.

Its own module so that code a :class:`~flask_mcp.Context` method reaches (such as
:mod:`flask_mcp.server.resource_reads`) can find the running call without importing
:mod:`flask_mcp.server.call`, which imports the context. :mod:`~flask_mcp.server.call`
re-exports it, typed, as ``running_handler``.
"""

from __future__ import annotations

import contextvars
import typing as t

#: The :class:`~flask_mcp.server.call.Call` whose handler runs now; each greenlet and
#: thread has its own.
running_call: contextvars.ContextVar[t.Any] = contextvars.ContextVar("flask_mcp.running_handler")

__all__ = ["running_call"]
