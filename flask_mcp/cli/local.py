"""Requests to the app's own server in process, for ``list``, ``call``, ``read``, ``prompt``.

Each request is a :class:`~flask_mcp.server.call.Call` of the handshake era
without a session (:func:`flask_mcp.kernel.intake.local_call`, carrying this client's
:class:`~flask_mcp.server.context.ClientFacts`), whose handler's ``Context`` the
kernel's one factory builds as over HTTP and stdio, run by
:func:`flask_mcp.transport.runner.run_to_completion`, the runner HTTP and stdio
use: the same validation, handlers, signals and timeouts, in a request context as
over stdio (:func:`~flask_mcp.transport.stdio_channel.stdio_context`), with the
command's ``--header`` headers (a session cookie, for the app's login). A handler's
progress and log messages are handed to a callback (the command prints them on
stderr); asking the client something (sampling, elicitation, roots) is refused,
as there is no client to ask: use ``flask mcp stdio`` with a real client for those.
"""

from __future__ import annotations

import itertools
import typing as t

from .. import protocol
from ..errors import ClientRequestError
from ..kernel import intake
from ..server.context import ClientFacts
from ..server.context import Context
from ..transport import runner
from ..transport.path_args import match_endpoint
from ..transport.stdio_channel import stdio_context

if t.TYPE_CHECKING:
    from ..extension import MCP

CLIENT_INFO = {"name": "flask mcp", "version": "1"}


class NoClientBackChannel:
    """The back-channel of a command-line call: there is no client to ask."""

    def request(
        self, ctx: Context, method: str, params: dict[str, t.Any], key: str | None = None
    ) -> dict[str, t.Any]:
        raise ClientRequestError(
            f"Cannot send {method} from the command line: there is no client to answer it. "
            "Serve the app with `flask mcp stdio` and call the tool from an MCP client."
        )


#: The back-channel of every command-line call.
NO_CLIENT = NoClientBackChannel()


class InProcessClient:
    """The command line's client: sends requests to one app's server in this process.

    There is no transport: each request is run by the runner HTTP and stdio use.

    :param server: the app's :class:`~flask_mcp.MCP` extension.
    :param app: the app it is registered on.
    :param on_message: receives each progress or log notification a handler sends.
    :param log_level: the lowest level of log messages to receive.
    :param path: the path of the endpoint called (``/t/acme/mcp`` for ``MCP_PATH``
        ``/t/<tenant>/mcp``): its URL variables are each call's ``path_args`` and
        ``request.view_args``. Needed when ``MCP_PATH`` has variables.
    :param headers: the headers of every request's context, ``("Cookie", "session=...")``:
        what the app's own login reads (``session``, Flask-Login's ``request_loader``,
        the views of ViewTools). MCP authorization does not check them.
    :raises ~flask_mcp.transport.path_args.EndpointError: ``path`` is not a path of
        the MCP endpoint, or is missing while ``MCP_PATH`` has variables.
    """

    def __init__(
        self,
        server: MCP,
        app: t.Any,
        on_message: t.Callable[[dict[str, t.Any]], None] | None = None,
        log_level: str = "info",
        path: str | None = None,
        headers: t.Sequence[tuple[str, str]] = (),
    ) -> None:
        self.server = server
        #: The headers of every request's context (``--header``).
        self.headers = list(headers)
        self.state = server.state(app)
        #: The endpoint called: its path, and the URL variables it gives each call.
        self.endpoint = match_endpoint(app, self.state.settings.path, path)
        self.on_message = on_message
        self.log_level = log_level
        self.version = protocol.LATEST_HANDSHAKE_VERSION
        #: What this client declares, read by handlers as any client's facts are.
        self.facts = ClientFacts(self.version, {}, CLIENT_INFO, log_level)
        self._ids = itertools.count(1)

    def request(self, method: str, params: dict[str, t.Any] | None = None) -> dict[str, t.Any]:
        """Run one request; return its JSON-RPC response (``result`` or ``error``)."""
        request_id = next(self._ids)
        params = dict(params or {})
        params.setdefault("_meta", {"progressToken": request_id})
        endpoint = self.endpoint
        call = intake.local_call(
            self.state, method, params, request_id, self.facts, endpoint.path_args
        )
        context = intake.context_for(call, NO_CLIENT)
        headers = self.headers or None
        with stdio_context(self.state.app, endpoint.path, transport="local", headers=headers):
            response = runner.run_to_completion(
                self.server.dispatcher, call, context=context, on_message=self.on_message
            )
        if response is None:  # cancelled: only the supervisor's timeout can do that here
            return {"error": {"code": -32603, "message": "The request was cancelled."}}
        return response

    def list_all(self, method: str, key: str) -> list[dict[str, t.Any]]:
        """Return every item of a paginated list method (``tools/list``, key ``tools``)."""
        items: list[dict[str, t.Any]] = []
        cursor = None
        for _ in range(10_000):  # a server whose cursors never end must not hang the command
            response = self.request(method, {"cursor": cursor} if cursor is not None else {})
            if "error" in response:
                raise ErrorAnswer(response["error"])
            result = response["result"]
            items.extend(result.get(key) or [])
            cursor = result.get("nextCursor")
            if cursor is None:  # "" is a cursor too: only its absence ends the list
                break
        return items


class ErrorAnswer(Exception):
    """The JSON-RPC error the server answered to a command-line request (in ``error``)."""

    def __init__(self, error: dict[str, t.Any]) -> None:
        super().__init__(error.get("message", "error"))
        self.error = error


__all__ = ["CLIENT_INFO", "NO_CLIENT", "ErrorAnswer", "InProcessClient", "NoClientBackChannel"]
