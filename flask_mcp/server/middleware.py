"""Middleware: functions that run around every MCP request, in both protocol eras.

A middleware is a function ``fn(call, call_next)``. It receives the request as
a :class:`CallInfo` and ``call_next``, which runs the rest of the chain (the
middleware registered after it, then the method itself) and returns the
result. It may:

- return ``call_next(call)``'s result, read or changed: time, log, audit, rewrite;
- change ``call.params`` before calling ``call_next(call)``;
- not call ``call_next`` at all and return a result of its own (a cache hit)
  or raise :class:`~flask_mcp.MCPError` (a refusal), or on ``tools/call``
  :class:`~flask_mcp.ToolError` (an ``isError`` result the model reads);
- call ``call_next`` more than once (a retry).

Order: the first registered is the outermost. Its code before ``call_next`` runs
first and its code after ``call_next`` runs last, as Flask runs
``before_request`` functions in registration order and ``after_request``
functions in reverse.

Exceptions travel outward through the chain as in any Python call stack:

- the result of ``call_next`` is what the method answered. A tool that failed
  (it raised, or its arguments were invalid) answers with an ``isError``
  result, not an exception, exactly as the client sees it;
- an :class:`~flask_mcp.MCPError` (unknown method or tool, invalid params, a
  refused scope, a middleware's refusal) propagates out of ``call_next``; catch
  it to answer otherwise, or let it go to become the JSON-RPC error;
- a :class:`~flask_mcp.ToolError` raised by a middleware around ``tools/call``
  becomes the ``isError`` result right there, so the middleware outside it see a
  result, as they do when the tool itself raises it (a 2025-11-25 call with
  ``params.task`` gets its ``CreateTaskResult``, the task failed with that result).
  Around another method it becomes a ``-32603`` error carrying its message;
- any other exception is a bug: logged with its traceback and answered with a
  redacted ``-32603`` (``MCP_EXPOSE_INTERNAL_ERRORS`` shows its text);
- a cancelled request raises :class:`~flask_mcp.errors.RequestCancelled`, and a
  2026-07-28 handler that needs input a control-flow exception, both
  ``BaseException``: use ``finally`` or ``except Exception``, never a bare
  ``except``, so that they pass.

Middleware runs where the method runs: in the greenlet or thread of a handler
that can send messages, so a middleware can set a context variable (an
OpenTelemetry span) that the handler sees. Results are those of the call's
era: a 2026-07-28 result carries ``resultType`` and its ``_meta``; a result a
middleware makes up is given them after the chain.

With no middleware registered, :meth:`~flask_mcp.server.dispatcher.Dispatcher.dispatch`
costs one attribute test more.
"""

from __future__ import annotations

import typing as t

from .. import content
from .. import protocol
from ..errors import INTERNAL_ERROR
from ..errors import MCPError
from ..errors import ToolError
from ..json_codec import plain_result

if t.TYPE_CHECKING:
    from ..auth import AuthInfo
    from ..backends.base import SessionRecord
    from .call import Call

#: What ``call_next`` is: runs the rest of the chain and returns the result.
CallNext = t.Callable[["CallInfo"], dict[str, t.Any]]
#: A middleware function.
Middleware = t.Callable[["CallInfo", CallNext], dict[str, t.Any]]


class Routes(t.Protocol):
    """What the chain needs of the dispatcher: the method itself, the era's shaping, and
    the answer to a ``tools/call`` a middleware refused with a ``ToolError``."""

    def route(self, call: Call) -> dict[str, t.Any]: ...

    def shape(self, call: Call, result: dict[str, t.Any]) -> dict[str, t.Any]: ...

    def refuse_tool_call(self, call: Call, refused: dict[str, t.Any]) -> dict[str, t.Any]: ...


_KINDS = {"tools/call": "tool", "resources/read": "resource", "prompts/get": "prompt"}


class CallInfo:
    """One MCP request as middleware sees it.

    Everything is read from the request; only :attr:`params` may be changed
    (``call.params = {...}`` or ``call.params["arguments"]["x"] = 1``), and the
    change is what the rest of the chain and the method see.

    :param call: the kernel's call.
    """

    __slots__ = ("_call", "extra")

    def __init__(self, call: Call) -> None:
        self._call = call
        #: A dict for middleware to hand values to each other (a start time, a span).
        self.extra: dict[str, t.Any] = {}

    def __repr__(self) -> str:
        target = f" {self.name!r}" if self.name is not None else ""
        return f"<CallInfo {self.method}{target} id={self.request_id!r} era={self.era}>"

    @property
    def method(self) -> str:
        """The JSON-RPC method: ``"tools/call"``, ``"resources/read"``..."""
        return self._call.method

    @property
    def params(self) -> dict[str, t.Any]:
        """The request's params; assign to replace them for the rest of the chain."""
        return self._call.params

    @params.setter
    def params(self, value: dict[str, t.Any]) -> None:
        if not isinstance(value, dict):
            raise TypeError(f"params must be a dict, not {type(value).__name__}.")
        self._call.params = value

    @property
    def kind(self) -> str | None:
        """``"tool"``, ``"resource"`` or ``"prompt"`` for methods that run one, else ``None``."""
        return _KINDS.get(self._call.method)

    @property
    def name(self) -> str | None:
        """The tool or prompt name, or the resource URI, that the request names (or ``None``)."""
        method = self._call.method
        if method not in _KINDS:
            return None
        value = self._call.params.get("uri" if method == "resources/read" else "name")
        return value if isinstance(value, str) else None

    @property
    def arguments(self) -> dict[str, t.Any]:
        """The ``arguments`` of a ``tools/call`` or ``prompts/get`` (empty if none)."""
        value = self._call.params.get("arguments")
        return value if isinstance(value, dict) else {}

    @property
    def meta(self) -> dict[str, t.Any]:
        """The request's ``params._meta`` (empty if none): progress token, trace context..."""
        value = self._call.params.get("_meta")
        return value if isinstance(value, dict) else {}

    @property
    def request_id(self) -> t.Any:
        """The JSON-RPC request id."""
        return self._call.request_id

    @property
    def era(self) -> str:
        """``"handshake"`` (sessions, 2025-11-25 and earlier) or ``"stateless"`` (2026-07-28)."""
        return self._call.era

    @property
    def protocol_version(self) -> str:
        """The protocol revision of the request (``"2025-11-25"``, ``"2026-07-28"``...)."""
        return self._call.version

    @property
    def session(self) -> SessionRecord | None:
        """The session of a handshake-era request, ``None`` at 2026-07-28."""
        return self._call.session

    @property
    def session_id(self) -> str | None:
        """The ``Mcp-Session-Id`` of a handshake-era request, ``None`` at 2026-07-28."""
        session = self._call.session
        return session.id if session is not None else None

    @property
    def auth(self) -> AuthInfo | None:
        """What the authorizer established about the caller, ``None`` without authorization."""
        return self._call.auth

    @property
    def principal(self) -> str | None:
        """The caller's stable id (``issuer|subject``), ``None`` without authorization."""
        auth = self._call.auth
        if auth is not None:
            return auth.principal
        session = self._call.session
        return session.principal if session is not None else None

    @property
    def task_id(self) -> str | None:
        """The id of the task this ``tools/call`` created, once ``call_next`` returned.

        ``None`` before, and for a call that did not become a task. A task's run does
        not go through the middleware again: the request that created it is the one
        call a middleware sees.
        """
        return self._call.created_task

    @property
    def app(self) -> t.Any:
        """The Flask app serving the request (``None`` outside Flask)."""
        return self._call.state.app

    @property
    def call(self) -> Call:
        """The kernel's :class:`~flask_mcp.server.call.Call` (internal; may change)."""
        return self._call


class MiddlewareChain:
    """The middleware of one server, outermost first."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        #: The middleware functions, outermost first.
        self.items: list[Middleware] = []

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def add(self, fn: Middleware) -> Middleware:
        """Append ``fn`` as the innermost middleware so far and return it.

        :raises TypeError: ``fn`` is not callable.
        """
        if not callable(fn):
            raise TypeError(
                f"A middleware must be a function fn(call, call_next), not {fn!r}. Use "
                "@mcp.middleware without parentheses."
            )
        self.items.append(fn)
        return fn

    def run(
        self,
        dispatcher: Routes,
        call: Call,
        route: t.Callable[[Call], dict[str, t.Any]] | None = None,
    ) -> dict[str, t.Any]:
        """Run ``call`` through every middleware, then the dispatcher's method (or ``route``).

        :raises MCPError: the request fails with a JSON-RPC error.
        """
        innermost = dispatcher.route if route is None else route
        items = tuple(self.items)
        last = len(items)
        is_tool = call.method == "tools/call"

        def step(index: int, info: CallInfo) -> dict[str, t.Any]:
            if not isinstance(info, CallInfo):
                raise TypeError(
                    f"call_next takes the CallInfo the middleware received, not {info!r}: "
                    "call_next(call)."
                )
            if index == last:  # what a middleware may change holds no stale bytes
                return plain_result(innermost(info._call))
            try:
                result = items[index](info, lambda nxt: step(index + 1, nxt))
            except ToolError as exc:
                text = str(exc) or type(exc).__name__
                if is_tool:  # a 2025-11-25 task call: a task failed with it (Tasks)
                    return dispatcher.refuse_tool_call(call, content.error_result(text))
                raise MCPError(INTERNAL_ERROR, text) from None
            if not isinstance(result, dict):
                raise TypeError(
                    f"The middleware {_name(items[index])} returned {type(result).__name__}; it "
                    "must return the result dict (return call_next(call), or a result of its own)."
                )
            return result

        result = step(0, CallInfo(call))
        if call.era == protocol.HANDSHAKE:
            return result
        return dispatcher.shape(call, result)


def _name(fn: t.Any) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


__all__ = ["CallInfo", "CallNext", "Middleware", "MiddlewareChain", "Routes"]
