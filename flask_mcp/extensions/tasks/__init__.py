"""Tasks, as an extension on the seam: ``tools/call`` as a task and the ``tasks/*`` methods.

Every :class:`~flask_mcp.MCP` adds :class:`Tasks` itself; see :doc:`/tasks`.
"""

from .extension import Tasks as Tasks

__all__ = ["Tasks"]
