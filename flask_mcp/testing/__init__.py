"""Test an app's MCP endpoint in process, in either protocol era, without writing wire messages.

.. code-block:: python

    def test_add(app):
        with MCPTestClient(app) as client:  # or protocol_version="2026-07-28"
            assert client.call_tool("add", {"a": 1, "b": 2})["structuredContent"] == {"result": 3}

:class:`MCPTestClient` drives :meth:`flask.Flask.test_client` (calls, tasks, streams);
:func:`live_server` serves the app on a real socket for HTTP clients such as the official
``mcp`` client. The ``mcp_client`` pytest fixture is in :mod:`flask_mcp.pytest_plugin`.

The package's modules: ``client`` (:class:`MCPTestClient`), ``streams`` (reading event
streams with timeouts, :class:`Subscription`), ``tasks`` (tasks in one shape for both
flavours) and ``live`` (:func:`live_server`).
"""

from __future__ import annotations

from ..errors import MCPError
from .client import Handler
from .client import MCPTestClient
from .live import LiveServer
from .live import live_server
from .streams import Subscription
from .tasks import TaskCancelled
from .tasks import TaskError

__all__ = [
    "Handler",
    "LiveServer",
    "MCPError",
    "MCPTestClient",
    "Subscription",
    "TaskCancelled",
    "TaskError",
    "live_server",
]
