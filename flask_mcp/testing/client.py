"""The in-process test client: an app's MCP endpoint through :meth:`flask.Flask.test_client`.

It speaks either protocol era and answers the server's requests with the handlers it is
given; :mod:`.streams` reads its event streams, :mod:`.tasks` shapes its tasks.
"""

from __future__ import annotations

import itertools
import json
import math
import threading
import time
import typing as t

from werkzeug.exceptions import MethodNotAllowed
from werkzeug.exceptions import NotFound
from werkzeug.routing import RequestRedirect

from .. import protocol
from ..errors import INTERNAL_ERROR
from ..errors import METHOD_NOT_FOUND
from ..errors import MCPError
from ..protocol.headers import NAME_SOURCES
from ..protocol.headers import TASKS_NAME_SOURCES
from ..protocol.headers import HeaderParam
from ..protocol.headers import encode_header_value
from ..protocol.headers import expected_name
from ..protocol.headers import validate_x_mcp_header_schema
from ..transport.path_args import example_path
from .streams import END
from .streams import EventStream
from .streams import Subscription
from .tasks import TASKS_EXTENSION
from .tasks import TaskError
from .tasks import created_task
from .tasks import declaring_tasks
from .tasks import is_over
from .tasks import outcome
from .tasks import poll_interval
from .tasks import task_fields
from .tasks import task_id_of

if t.TYPE_CHECKING:
    from flask import Flask

__all__ = ["Handler", "MCPTestClient", "find_endpoint", "result_of"]

#: Answers the params of a server-to-client request with its result.
Handler = t.Callable[[dict[str, t.Any]], dict[str, t.Any]]
_ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
#: The body field each 2026-07-28 request names in ``Mcp-Name``: ``tasks/*`` name their task.
_NAME_SOURCES = {**NAME_SOURCES, **TASKS_NAME_SOURCES}
_LISTEN_FLAGS = {
    "tools": ("toolsListChanged", "notifications/tools/list_changed"),
    "prompts": ("promptsListChanged", "notifications/prompts/list_changed"),
    "resources": ("resourcesListChanged", "notifications/resources/list_changed"),
}


class MCPTestClient:
    """Drives an app's MCP endpoint through :meth:`flask.Flask.test_client`.

    The same calls work in both protocol eras. With a handshake-era version it
    runs ``initialize`` and keeps the session; with ``"2026-07-28"`` every
    request is stateless (``_meta``, ``Mcp-*`` headers) and ``InputRequiredResult``
    rounds are answered and retried for the caller. Server-to-client requests
    (sampling, elicitation, roots) are answered by the handlers passed here, on
    an SSE stream or in ``inputResponses``; notifications that arrive on a
    request's stream are collected in :attr:`notifications`. Tools run as tasks
    in both flavours with :meth:`call_tool_as_task` and the task methods.

    :param app: the Flask app on which :meth:`flask_mcp.MCP.init_app` was called.
    :param protocol_version: the version to speak (default: the newest
        handshake-era one).
    :param capabilities: the client capabilities to declare (derived from the
        handlers when omitted).
    :param sampling: answers ``sampling/createMessage`` params with a result.
    :param elicitation: answers ``elicitation/create`` params with a result.
    :param roots: the roots to report for ``roots/list``.
    :param path: the endpoint's path (default: the app's ``MCP_PATH``).
    :param headers: extra HTTP headers for every request (``Authorization``...).
        A ``Cookie`` header is sent as given, on every request: the test client
        then keeps no cookie jar of its own.
    :param client_info: the ``clientInfo`` to send.
    :param log_level: the level of log messages to receive (``logging/setLevel``
        in the handshake era, ``_meta`` in 2026-07-28); ``None`` keeps the default.
    :param max_rounds: most ``InputRequiredResult`` rounds of one request.
    :param timeout: most seconds to wait for one answer.
    :raises RuntimeError: the app serves no MCP endpoint at ``path``.
    """

    def __init__(
        self,
        app: Flask,
        *,
        protocol_version: str = protocol.LATEST_HANDSHAKE_VERSION,
        capabilities: dict[str, t.Any] | None = None,
        sampling: Handler | None = None,
        elicitation: Handler | None = None,
        roots: list[dict[str, t.Any]] | None = None,
        path: str | None = None,
        headers: dict[str, str] | None = None,
        client_info: dict[str, t.Any] | None = None,
        log_level: str | None = None,
        max_rounds: int = 10,
        timeout: float = 30.0,
    ) -> None:
        self.app = app
        self.path = find_endpoint(app, path)
        self.extra_headers = dict(headers or {})
        # Werkzeug's cookie jar replaces a request's Cookie header with its own cookies
        # (none, before a response set one): a Cookie given here is sent as it is instead.
        given_cookie = any(name.lower() == "cookie" for name in self.extra_headers)
        self.client = app.test_client(use_cookies=not given_cookie)
        self.protocol_version = protocol_version
        self.stateless = protocol.is_stateless_version(protocol_version)
        self.handlers: dict[str, Handler] = {}
        caps: dict[str, t.Any] = {}
        if sampling is not None:
            self.handlers["sampling/createMessage"] = sampling
            caps["sampling"] = {}
        if elicitation is not None:
            self.handlers["elicitation/create"] = elicitation
            caps["elicitation"] = {"form": {}, "url": {}}
        self.roots = roots
        if roots is not None:
            self.handlers["roots/list"] = lambda params: {"roots": self.roots}
            caps["roots"] = {"listChanged": True}
        self.capabilities = capabilities if capabilities is not None else caps
        self.client_info = client_info or {"name": "flask-mcp-test-client", "version": "1.0"}
        self.log_level = log_level
        self.max_rounds = max_rounds
        self.timeout = timeout
        self.session_id: str | None = None
        #: The ``initialize`` result, or the ``server/discover`` result in 2026-07-28.
        self.server_result: dict[str, t.Any] = {}
        #: Notifications received on request streams, oldest first.
        self.notifications: list[dict[str, t.Any]] = []
        self._negotiated: str | None = None
        self._ids = itertools.count(1)
        self._tool_headers: dict[str, list[HeaderParam]] = {}
        self._subscriptions: list[Subscription] = []

    def __enter__(self) -> MCPTestClient:
        self.initialize()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- wire ---------------------------------------------------------------------

    def _headers(self, message: dict[str, t.Any]) -> dict[str, str]:
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            **self.extra_headers,
        }
        if self.stateless:
            headers["MCP-Protocol-Version"] = self.protocol_version
            method = message.get("method")
            if isinstance(method, str):
                headers["Mcp-Method"] = method
                params = message.get("params")
                name = expected_name(method, params, name_sources=_NAME_SOURCES)
                if name is not None:
                    headers["Mcp-Name"] = encode_header_value(name)
                if method == "tools/call" and name is not None:
                    headers.update(self._param_headers(name, t.cast(dict[str, t.Any], params)))
        elif self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
            headers["MCP-Protocol-Version"] = self._negotiated or self.protocol_version
        return headers

    def _param_headers(self, name: str, params: dict[str, t.Any]) -> dict[str, str]:
        """Mirror the arguments the tool marks ``x-mcp-header`` into ``Mcp-Param-*``."""
        if name not in self._tool_headers:
            self.list_tools()  # learns every tool's annotated arguments, as a client does
        found: dict[str, str] = {}
        for param in self._tool_headers.get(name, ()):
            value = param.extract(params.get("arguments"))
            if isinstance(value, (bool, int, str)):
                found[param.header_name] = encode_header_value(value)
            elif isinstance(value, float):
                found[param.header_name] = repr(value)
        return found

    def _meta(self, extra: t.Any = None) -> dict[str, t.Any]:
        meta = {
            protocol.META_PROTOCOL_VERSION: self.protocol_version,
            protocol.META_CLIENT_INFO: self.client_info,
            protocol.META_CLIENT_CAPABILITIES: self.capabilities,
        }
        if self.log_level is not None:
            meta[protocol.META_LOG_LEVEL] = self.log_level
        return {**meta, **(extra if isinstance(extra, dict) else {})}

    def post(self, message: dict[str, t.Any], headers: dict[str, str] | None = None) -> t.Any:
        """POST one raw message with this client's headers; return the unread response.

        The request declares a multithreaded server (``wsgi.multithread``), as
        the handler runs in a spawned thread while the response streams. It is
        sent from the calling thread and waits for the response without a
        timeout (the other methods bound their waits with ``timeout``).
        """
        return self.client.post(
            self.path,
            data=json.dumps(message),
            headers={**self._headers(message), **(headers or {})},
            buffered=False,
            multithread=True,
        )

    def request(
        self,
        method: str,
        params: dict[str, t.Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> dict[str, t.Any]:
        """Send a request, answer the server's requests on the way, and return the result.

        In 2026-07-28 an ``InputRequiredResult`` to ``tools/call``, ``prompts/get`` or
        ``resources/read`` is answered with the handlers and retried, up to
        ``max_rounds`` times (to another method it fails the test); the request carries the
        ``Mcp-Method`` and ``Mcp-Name`` headers its method needs (``tasks/*``:
        ``Mcp-Name: <taskId>``).

        :param timeout: most seconds to wait for an answer on a stream (default:
            the client's ``timeout``).
        :raises flask_mcp.MCPError: the server answered with a JSON-RPC error.
        :raises AssertionError: the server answered a method that cannot carry one
            with an ``InputRequiredResult``, or with a ``CreateTaskResult`` a request
            that did not declare the tasks extension.
        """
        params = dict(params or {})
        if self.stateless:
            params["_meta"] = self._meta(params.get("_meta"))
        result = self._exchange(method, params, timeout)
        rounds = 0
        while self.stateless and result.get("resultType") == "input_required":
            if method not in protocol.INPUT_REQUIRED_METHODS:
                raise AssertionError(
                    f"The server answered {method} with an InputRequiredResult, which only "
                    f"{', '.join(sorted(protocol.INPUT_REQUIRED_METHODS))} may carry (MRTR); a "
                    "client rejects it: fix the server to answer with the method's own result."
                )
            rounds += 1
            if rounds > self.max_rounds:
                raise RuntimeError(
                    f"The server answered {method} with InputRequiredResult {self.max_rounds} "
                    "times in a row; pass a larger max_rounds= to MCPTestClient if it must ask "
                    "more often."
                )
            retry = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState")}
            asked = result.get("inputRequests") or {}
            if asked:
                retry["inputResponses"] = {
                    key: self._answer(req.get("method"), req.get("params") or {})
                    for key, req in asked.items()
                }
            if "requestState" in result:
                retry["requestState"] = result["requestState"]
            result = self._exchange(method, retry, timeout)
        if self.stateless and result.get("resultType") == "task":
            self._check_created_task(method, params)
        return result

    @staticmethod
    def _check_created_task(method: str, params: dict[str, t.Any]) -> None:
        """Fail on a ``CreateTaskResult`` the request did not allow, as a client does.

        :raises AssertionError: the request is not ``tools/call``, or did not declare
            the tasks extension in its ``_meta`` capabilities.
        """
        meta = params.get("_meta") or {}
        capabilities = meta.get(protocol.META_CLIENT_CAPABILITIES) or {}
        declared = TASKS_EXTENSION in (capabilities.get("extensions") or {})
        if method == "tools/call" and declared:
            return
        why = "is not tools/call" if method != "tools/call" else "did not declare the extension"
        raise AssertionError(
            f'The server answered {method} with a CreateTaskResult (resultType "task"), '
            f"but the request {why}: the tasks extension allows one only to a tools/call "
            f"that declares {TASKS_EXTENSION!r}; fix the server to answer with the result."
        )

    def _exchange(
        self, method: str, params: dict[str, t.Any], timeout: float | None = None
    ) -> dict[str, t.Any]:
        request_id = next(self._ids)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        wait = self.timeout if timeout is None else timeout
        try:
            return result_of(*self._read(self._post_within(message, wait), request_id, timeout))
        except TimeoutError:
            self._cancel(request_id, f"MCPTestClient stopped waiting after {wait:g} seconds")
            raise

    def _cancel(self, request_id: int, reason: str) -> None:
        """Tell the server the client gave up on a request, so that its handler stops.

        A handshake-era session gets ``notifications/cancelled``. At 2026-07-28 closing
        the request's stream is the signal, which the server notices at the stream's
        next chunk (a test client has no socket to watch).
        """
        if not self.stateless and self.session_id:
            self.notify("notifications/cancelled", {"requestId": request_id, "reason": reason})

    def _post_within(self, message: dict[str, t.Any], timeout: float) -> t.Any:
        """:meth:`post` the request ``message`` from a helper thread; wait ``timeout`` at most.

        A handler that cannot emit runs in the request itself and is answered in one
        JSON response, so the wait for the response is bounded here as the wait for
        an answer on a stream is. A response that comes after the timeout is closed.

        :raises TimeoutError: no response within ``timeout`` seconds.
        """
        lock = threading.Lock()
        arrived = threading.Event()
        outcome: list[t.Any] = []

        def send() -> None:
            try:
                response = self.post(message)
            except BaseException as exc:  # handed to the waiting thread, which raises it
                response = exc
            with lock:
                late = bool(outcome)
                outcome.append(response)
                arrived.set()
            if late and not isinstance(response, BaseException):
                response.close()

        threading.Thread(target=send, daemon=True, name="mcp-test-request").start()
        arrived.wait(timeout)
        with lock:
            if not outcome:
                outcome.append(None)  # the helper thread closes what comes too late
                raise TimeoutError(
                    f"No answer to request {message.get('id')} ({message.get('method')}) "
                    f"within {timeout:g} seconds; pass a larger timeout= if the handler is slow."
                )
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]

    def _read(
        self, response: t.Any, request_id: int, timeout: float | None = None
    ) -> tuple[dict[str, t.Any], int]:
        """Return the answer to ``request_id`` from a JSON or SSE response, and the status."""
        status = int(response.status_code)
        if response.mimetype == "text/event-stream":
            stream = EventStream(response)
            return self._read_stream(
                stream, request_id, self.timeout if timeout is None else timeout
            ), status
        try:
            body = response.get_data()
        finally:
            response.close()
        try:
            answer = json.loads(body) if response.mimetype == "application/json" else None
        except ValueError:
            answer = None
        if not (isinstance(answer, dict) and ("result" in answer or "error" in answer)):
            raise MCPError(
                INTERNAL_ERROR,
                f"HTTP {status} {response.mimetype or 'without a body'} instead of a JSON-RPC "
                f"answer: {body[:500]!r}",
                http_status=status,
            )
        return answer, status

    def _read_stream(
        self, stream: EventStream, request_id: int, timeout: float
    ) -> dict[str, t.Any]:
        deadline = time.monotonic() + timeout
        try:
            while True:
                remaining = deadline - time.monotonic()
                message = stream.get(remaining) if remaining > 0 else None
                if message is None:
                    raise TimeoutError(
                        f"No answer to request {request_id} within {timeout:g} seconds; "
                        "pass a larger timeout= if the handler is slow."
                    )
                if message is END:  # the server closed it early: resume it where it stopped
                    if stream.last_id is None or self.stateless:
                        raise AssertionError(
                            f"The stream of request {request_id} ended unanswered."
                        )
                    stream = self._resume(stream.last_id)
                    continue
                if message.get("id") == request_id and "method" not in message:
                    stream.join(self.timeout)  # it ends right after its answer: settle it
                    return t.cast(dict[str, t.Any], message)
                if "method" in message and "id" in message:
                    if self.stateless:
                        raise AssertionError(
                            f"The server sent a {message['method']} request on the stream of "
                            f"request {request_id}, which 2026-07-28 forbids: fix the server "
                            "to ask in an InputRequiredResult (inputRequests) instead."
                        )
                    self._reply(message)
                elif "method" in message:
                    self.notifications.append(message)
        finally:
            stream.close()

    def _resume(self, last_id: str) -> EventStream:
        """Reopen a stream after ``last_id`` with a GET, as the server's close asks."""
        headers = {**self._headers({}), "Accept": "text/event-stream", "Last-Event-ID": last_id}
        return self._stream(
            self.client.get(self.path, headers=headers, buffered=False, multithread=True)
        )

    def _stream(self, response: t.Any) -> EventStream:
        """Read ``response`` as an event stream.

        :raises flask_mcp.MCPError: the server answered with something else.
        """
        if response.mimetype != "text/event-stream":
            result_of(*self._read(response, -1))  # raises the server's error
            raise MCPError(INTERNAL_ERROR, f"HTTP {response.status_code} without a stream.")
        return EventStream(response)

    def _answer(self, method: t.Any, params: dict[str, t.Any]) -> dict[str, t.Any]:
        handler = self.handlers.get(method) if isinstance(method, str) else None
        if handler is None:
            raise MCPError(
                METHOD_NOT_FOUND,
                f"The server asked for {method} but MCPTestClient has no handler for it: pass "
                "sampling=, elicitation= or roots=.",
            )
        return handler(params)

    def _reply(self, message: dict[str, t.Any]) -> None:
        """Answer a server-to-client request on a handshake-era stream."""
        reply: dict[str, t.Any] = {"jsonrpc": "2.0", "id": message["id"]}
        try:
            reply["result"] = self._answer(message["method"], message.get("params") or {})
        except MCPError as exc:
            reply["error"] = exc.to_error()
        except BaseException as exc:  # the server must not wait for an answer that never comes
            reply["error"] = {"code": INTERNAL_ERROR, "message": f"The test handler raised {exc!r}"}
            self.post(reply).close()
            raise
        self.post(reply).close()

    # -- lifecycle ------------------------------------------------------------------

    def initialize(self) -> dict[str, t.Any]:
        """Run the handshake and keep the session id (2026-07-28: ``server/discover``)."""
        if self.stateless:
            self.server_result = self.request("server/discover")
            return self.server_result
        message = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": self.protocol_version,
                "capabilities": self.capabilities,
                "clientInfo": self.client_info,
            },
        }
        response = self._post_within(message, self.timeout)
        session_id = response.headers.get("Mcp-Session-Id")
        self.server_result = result_of(*self._read(response, 0))
        self.session_id = session_id
        self._negotiated = self.server_result.get("protocolVersion")
        self.notify("notifications/initialized")
        if self.log_level is not None:
            self.request("logging/setLevel", {"level": self.log_level})
        return self.server_result

    @property
    def server_info(self) -> dict[str, t.Any]:
        """The server's ``serverInfo`` (name, version...) from :meth:`initialize`."""
        result = self.server_result
        info = result.get("serverInfo") or result.get("_meta", {}).get(protocol.META_SERVER_INFO)
        return t.cast(dict[str, t.Any], info or {})

    def notify(self, method: str, params: dict[str, t.Any] | None = None) -> int:
        """Send a notification and return the HTTP status."""
        message: dict[str, t.Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        response = self.post(message)
        response.close()
        return int(response.status_code)

    def close(self) -> None:
        """Stop every :meth:`listen` stream and end the session."""
        for subscription in self._subscriptions:
            subscription.close()
        self._subscriptions.clear()
        if self.session_id:
            self.client.delete(self.path, headers=self._headers({})).close()
            self.session_id = None

    # -- methods ----------------------------------------------------------------------

    def list_tools(self) -> list[dict[str, t.Any]]:
        """Return every tool (following pagination)."""
        tools = self._list("tools/list", "tools")
        for tool in tools:
            try:
                self._tool_headers[tool["name"]] = validate_x_mcp_header_schema(
                    tool.get("inputSchema") or {}
                )
            except ValueError:
                self._tool_headers[tool["name"]] = []
        return tools

    def call_tool(
        self, name: str, arguments: dict[str, t.Any] | None = None, **meta: t.Any
    ) -> dict[str, t.Any]:
        """Call a tool and return its ``CallToolResult``; ``meta`` goes into ``_meta``."""
        params: dict[str, t.Any] = {"name": name, "arguments": arguments or {}}
        if meta:
            params["_meta"] = meta
        return self.request("tools/call", params)

    def list_resources(self) -> list[dict[str, t.Any]]:
        """Return every resource."""
        return self._list("resources/list", "resources")

    def list_resource_templates(self) -> list[dict[str, t.Any]]:
        """Return every resource template."""
        return self._list("resources/templates/list", "resourceTemplates")

    def read_resource(self, uri: str) -> list[dict[str, t.Any]]:
        """Return the contents of a resource."""
        return t.cast(
            list[dict[str, t.Any]], self.request("resources/read", {"uri": uri})["contents"]
        )

    def list_prompts(self) -> list[dict[str, t.Any]]:
        """Return every prompt."""
        return self._list("prompts/list", "prompts")

    def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> dict[str, t.Any]:
        """Render a prompt."""
        return self.request("prompts/get", {"name": name, "arguments": arguments or {}})

    def complete(self, ref: dict[str, t.Any], argument: str, value: str) -> dict[str, t.Any]:
        """Ask for argument completions."""
        params = {"ref": ref, "argument": {"name": argument, "value": value}}
        return t.cast(dict[str, t.Any], self.request("completion/complete", params)["completion"])

    def set_log_level(self, level: str) -> None:
        """Receive log messages at ``level`` and above from now on."""
        self.log_level = level
        if not self.stateless:
            self.request("logging/setLevel", {"level": level})

    def set_roots(self, roots: list[dict[str, t.Any]]) -> None:
        """Report other roots from now on (and tell a handshake-era session they changed)."""
        self.roots = roots
        if self.session_id:
            self.notify("notifications/roots/list_changed")

    def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: t.Sequence[str] = (),
    ) -> Subscription:
        """Open a stream of change notifications; use the result as a context manager.

        2026-07-28 sends ``subscriptions/listen``; the handshake era opens the
        session's GET stream and subscribes to ``resource_uris``. Only the
        notifications asked for come out of :meth:`Subscription.get`.
        """
        kinds = {"tools": tools, "prompts": prompts, "resources": resources}
        methods = {_LISTEN_FLAGS[kind][1] for kind, wanted in kinds.items() if wanted}
        wanted_filter: dict[str, t.Any] = {
            _LISTEN_FLAGS[kind][0]: True for kind, on in kinds.items() if on
        }
        if resource_uris:
            wanted_filter["resourceSubscriptions"] = list(resource_uris)
        if self.stateless:
            params = {"notifications": wanted_filter, "_meta": self._meta()}
            message = {"jsonrpc": "2.0", "id": next(self._ids), "method": "subscriptions/listen"}
            response = self.post({**message, "params": params})
        else:
            for uri in resource_uris:
                self.request("resources/subscribe", {"uri": uri})
            headers = {**self._headers({}), "Accept": "text/event-stream"}
            response = self.client.get(self.path, headers=headers, buffered=False, multithread=True)
        stream = self._stream(response)
        subscription = Subscription(stream, methods, set(resource_uris))
        self._subscriptions.append(subscription)
        if not self.stateless:
            subscription.acknowledged = wanted_filter
            return subscription
        ack = stream.get(self.timeout)
        if not (isinstance(ack, dict) and ack.get("method") == _ACKNOWLEDGED):
            subscription.close()
            raise AssertionError(f"subscriptions/listen began with {ack!r}, not {_ACKNOWLEDGED}.")
        subscription.acknowledged = ack["params"].get("notifications", {})
        return subscription

    # -- tasks ------------------------------------------------------------------------

    def call_tool_as_task(
        self,
        name: str,
        arguments: dict[str, t.Any] | None = None,
        *,
        ttl: float | None = None,
        **meta: t.Any,
    ) -> dict[str, t.Any]:
        """Call a tool as a task; return the task the server created.

        At 2025-11-25 the call carries ``params.task`` (``ttl`` in seconds, when
        given). At 2026-07-28 it declares the tasks extension and the server decides:
        questions asked before the task starts are answered with the handlers. A call
        answered at once (in either era) comes back as a task without ``taskId`` that
        carries the ``result`` (the other task methods accept it): ``completed``, or
        ``failed`` for a 2025-11-25 tool error (``isError``), as a task of that era ends.

        :param meta: goes into ``_meta``, as for :meth:`call_tool`.
        :raises flask_mcp.MCPError: the server refused (-32601: the tool does not run
            as a task at 2025-11-25).
        """
        params: dict[str, t.Any] = {"name": name, "arguments": arguments or {}}
        if self.stateless:
            meta = {**meta, protocol.META_CLIENT_CAPABILITIES: declaring_tasks(self.capabilities)}
        else:
            params["task"] = {} if ttl is None else {"ttl": math.ceil(ttl * 1000)}
        if meta:
            params["_meta"] = meta
        return created_task(self.request("tools/call", params))

    def get_task(self, task: dict[str, t.Any] | str) -> dict[str, t.Any]:
        """Return the task's current state (``tasks/get``), given the task or its id.

        At 2026-07-28 a task that is over carries its ``result`` or ``error`` and an
        ``input_required`` one its ``inputRequests``; a 2025-11-25 task's outcome
        comes from :meth:`wait_for_task`.

        :raises flask_mcp.MCPError: the server does not know the task (-32602).
        """
        task_id = task_id_of(task)
        if not task_id and isinstance(task, dict):
            return dict(task)  # answered at once: there is nothing to ask
        return task_fields(self._task_request("tasks/get", {"taskId": task_id}))

    def wait_for_task(
        self, task: dict[str, t.Any] | str, *, timeout: float | None = None
    ) -> dict[str, t.Any]:
        """Wait until the task is over, answering its questions; return it with its outcome.

        At 2026-07-28 it polls ``tasks/get`` (as often as the server suggests, at
        most every 0.1 s) and answers each new ``inputRequests`` key once with the
        handlers, by ``tasks/update``. At 2025-11-25 it follows ``tasks/result``,
        on whose stream the server asks the task's questions. The task returned
        carries ``result`` (``completed``, or a 2025-11-25 tool error) or ``error``.

        :param timeout: most seconds to wait (default: the client's ``timeout``).
        :raises TimeoutError: the task is not over in time; it goes on running.
        """
        wait = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        current = self.get_task(task)
        if not current.get("taskId"):
            return current
        if not self.stateless:
            return self._follow(current, wait)
        answered: set[str] = set()
        while not is_over(current):
            asked = current.get("inputRequests") if current["status"] == "input_required" else None
            pending = {k: v for k, v in (asked or {}).items() if k not in answered}
            if pending:
                answers = {
                    key: self._answer(request.get("method"), request.get("params") or {})
                    for key, request in pending.items()
                }
                self.answer_task(current, answers)
                answered.update(pending)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(
                    f"Task {current['taskId']!r} is not over after {wait:g} seconds (last "
                    f"status {current['status']!r}); it goes on running: wait again, pass a "
                    "larger timeout=, or cancel it with cancel_task()."
                )
            time.sleep(min(poll_interval(current), remaining))
            current = self.get_task(current)
        return current

    def _follow(self, current: dict[str, t.Any], timeout: float) -> dict[str, t.Any]:
        """2025-11-25: ``tasks/result`` blocks until the task is over and carries its questions."""
        found: dict[str, t.Any] = {}
        try:
            found["result"] = self._task_request(
                "tasks/result", {"taskId": current["taskId"]}, timeout=timeout
            )
        except MCPError as exc:
            found["error"] = exc.to_error()
        except TimeoutError:
            raise TimeoutError(
                f"Task {current['taskId']!r} is not over after {timeout:g} seconds; it goes "
                "on running: wait again, pass a larger timeout=, or cancel it with "
                "cancel_task()."
            ) from None
        final = self.get_task(current)
        if final["status"] == "cancelled":
            return final
        return {**final, **found}

    def task_result(
        self, task: dict[str, t.Any] | str, *, timeout: float | None = None
    ) -> dict[str, t.Any]:
        """Wait for the task (see :meth:`wait_for_task`) and return the tool's result.

        A tool error is an ``isError`` result in both flavours.

        :raises flask_mcp.MCPError: the task failed with a JSON-RPC error.
        :raises flask_mcp.testing.TaskCancelled: the task was cancelled.
        :raises TimeoutError: the task is not over in time.
        """
        return outcome(self.wait_for_task(task, timeout=timeout))

    def answer_task(self, task: dict[str, t.Any] | str, responses: dict[str, t.Any]) -> None:
        """Answer some of a 2026-07-28 task's ``inputRequests`` by key (``tasks/update``).

        For answers the handlers do not give; :meth:`wait_for_task` answers with them.

        :raises flask_mcp.testing.TaskError: at 2025-11-25, where the answers go back
            on the ``tasks/result`` stream (use :meth:`wait_for_task`).
        """
        if not self.stateless:
            raise TaskError(
                "At 2025-11-25 a task's questions arrive on the tasks/result stream and the "
                "handlers answer them: use wait_for_task() or task_result()."
            )
        params = {"taskId": task_id_of(task), "inputResponses": responses}
        self._task_request("tasks/update", params)

    def cancel_task(self, task: dict[str, t.Any] | str) -> dict[str, t.Any]:
        """Ask the server to cancel the task (``tasks/cancel``); return its state after.

        A 2026-07-28 server acknowledges and the task may still end otherwise;
        a 2025-11-25 server answers with the task.

        :raises flask_mcp.MCPError: the task is unknown, or (2025-11-25) already over.
        """
        task_id = task_id_of(task)
        if not task_id and isinstance(task, dict):
            return dict(task)
        answer = self._task_request("tasks/cancel", {"taskId": task_id})
        return self.get_task(task_id) if self.stateless else task_fields(answer)

    def list_tasks(self) -> list[dict[str, t.Any]]:
        """Return every task of this session (``tasks/list``, following pagination).

        :raises flask_mcp.testing.TaskError: at 2026-07-28, whose tasks extension has
            no listing (keep the ids of the tasks you create).
        """
        if self.stateless:
            raise TaskError(
                "2026-07-28 tasks cannot be listed (the tasks extension has no tasks/list): "
                "keep the ids of the tasks you create."
            )
        return [task_fields(task) for task in self._list("tasks/list", "tasks")]

    def _task_request(
        self, method: str, params: dict[str, t.Any], timeout: float | None = None
    ) -> dict[str, t.Any]:
        """Send a ``tasks/*`` request; at 2026-07-28 it declares the tasks extension."""
        if self.stateless:
            caps = declaring_tasks(self.capabilities)
            params = {**params, "_meta": {protocol.META_CLIENT_CAPABILITIES: caps}}
        return self.request(method, params, timeout=timeout)

    def _list(self, method: str, key: str) -> list[dict[str, t.Any]]:
        items: list[dict[str, t.Any]] = []
        cursor = None
        while True:
            result = self.request(method, {"cursor": cursor} if cursor is not None else {})
            items += result[key]
            cursor = result.get("nextCursor")
            if cursor is None:  # "" is a cursor too: only its absence ends the list
                return items


def find_endpoint(app: Flask, path: str | None) -> str:
    """Return the MCP endpoint's path on ``app``.

    :raises RuntimeError: there is none at ``path``.
    """
    mcp = app.extensions.get("mcp")
    if mcp is None:
        raise RuntimeError(
            f"The app {app.name!r} has no MCP endpoint: did you call init_app? Call "
            "mcp.init_app(app) (or pass the app to MCP(...)) before making the test client."
        )
    served = t.cast(str, mcp.state(app).settings.path)
    if path is None and "<" in served:
        # Werkzeug would match the rule's text itself, handlers seeing "<tenant>" as a value
        example = example_path(served)
        raise RuntimeError(
            f"The MCP endpoint of {app.name!r} has URL variables (MCP_PATH = {served!r}): "
            f"pass the path of one endpoint, such as MCPTestClient(app, path={example!r})."
        )
    path = path or served
    adapter = app.url_map.bind(app.config.get("SERVER_NAME") or "localhost")
    try:
        adapter.match(path.partition("?")[0], method="POST")  # a query string may follow
    except (NotFound, MethodNotAllowed, RequestRedirect):
        raise RuntimeError(
            f"The app {app.name!r} has no MCP endpoint at {path!r}: did you call init_app? "
            f"Its MCP server is served at {served!r} (MCP_PATH); pass that path, or none."
        ) from None
    return path


def result_of(answer: dict[str, t.Any], status: int) -> dict[str, t.Any]:
    """Return the result of an answer.

    :raises flask_mcp.MCPError: it is an error (``http_status`` is the HTTP status).
    """
    if "error" in answer:
        error = answer["error"] if isinstance(answer["error"], dict) else {}
        raise MCPError(
            error.get("code", INTERNAL_ERROR),
            error.get("message", ""),
            error.get("data"),
            http_status=status,
        )
    return t.cast(dict[str, t.Any], answer["result"])
