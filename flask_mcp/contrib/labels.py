"""Bounded metric labels and span names from what a client sends: :class:`LabelBounds`.

A client chooses the method and the tool, prompt or resource name of its
requests. Used as metric labels (Prometheus) or metric attributes
(OpenTelemetry) as they come, one client could add a series per request:
1,000 calls with random names made 22,000 Prometheus series, and one 1 MB name
added 22 MB to every scrape. So a label value is:

- the name only when the server declares it (a registered tool or prompt, a
  method of the server's method table); anything else is :data:`UNKNOWN`;
- at most :data:`MAX_LENGTH` characters (the MCP tool name limit is 128);
- for tool and prompt names and error types, one of at most ``max_values``
  distinct values per label (default :data:`MAX_VALUES`); past that,
  :data:`OTHER`. Declared names are bounded already; the cap holds when tools
  are added at run time without end.
"""

from __future__ import annotations

import threading
import typing as t

from ..errors import INTERNAL_ERROR
from ..errors import BackendUnavailable

if t.TYPE_CHECKING:
    from ..extension import MCP
    from ..server.middleware import CallInfo

#: The error type of a request cancelled before it was answered.
CANCELLED = "cancelled"
#: The error type of a ``subscriptions/listen`` the interrupted stdio server cancelled.
SHUTDOWN = "shutdown"
#: The value of a label whose name the server does not declare.
UNKNOWN = "unknown"
#: The value of a label once it has :attr:`LabelBounds.max_values` distinct values.
OTHER = "other"
#: Distinct values one label may take (per app for Prometheus, per instrumentor for OTel).
MAX_VALUES = 500
#: The longest label value kept; a declared name longer than this is cut.
MAX_LENGTH = 128
#: Methods of the MCP specification (both eras), known even before the server routes them.
SPEC_METHODS = frozenset(
    {
        "initialize",
        "ping",
        "server/discover",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
        "subscriptions/listen",
        "tasks/get",
        "tasks/result",
        "tasks/list",
        "tasks/cancel",
        "tasks/update",
    }
)


class LabelBounds:
    """Turns client-chosen methods and names into bounded label values.

    :param max_values: distinct values each label may take; then :data:`OTHER`.
    :param max_length: the longest value kept.
    """

    def __init__(self, *, max_values: int = MAX_VALUES, max_length: int = MAX_LENGTH) -> None:
        if max_values < 1 or max_length < 1:
            raise ValueError("max_values and max_length must be at least 1.")
        self.max_values = max_values
        self.max_length = max_length
        self._seen: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def bounded(self, label: str, value: str) -> str:
        """Return ``value`` (cut to :attr:`max_length`) if ``label`` may take it, else ``other``."""
        value = value[: self.max_length]
        seen = self._seen.get(label)
        if seen is not None and value in seen:
            return value
        with self._lock:
            seen = self._seen.setdefault(label, set())
            if value in seen:
                return value
            if len(seen) >= self.max_values:
                return OTHER
            seen.add(value)
        return value

    def method(self, mcp: MCP, method: str) -> str:
        """Return the label of a request's method: the method if the server knows it.

        The methods a server knows are few and its own, so they are neither
        capped nor cut.
        """
        table = getattr(mcp.dispatcher, "methods", None) or ()
        return method if method in SPEC_METHODS or method in table else UNKNOWN

    def name(self, mcp: MCP, kind: str | None, name: str | None) -> str:
        """Return the label of the tool or prompt a request names (empty for other requests).

        A name the server does not declare (no such tool or prompt, enabled or
        not) is :data:`UNKNOWN`; a resource URI is never a label (templates
        make too many).
        """
        if name is None or kind not in ("tool", "prompt"):
            return ""
        registry = mcp.registry
        table = registry.tools if kind == "tool" else registry.prompts
        disabled = registry.disabled.get("tools" if kind == "tool" else "prompts", {})
        if name not in table and name not in disabled:
            return UNKNOWN
        return self.bounded(kind, name)

    def error_type(self, value: str) -> str:
        """Return the label of an error type (a JSON-RPC code, an exception class)."""
        return self.bounded("error_type", value)


def raised_error(exc: BaseException) -> tuple[str, str | None]:
    """The error type and JSON-RPC code of a request whose chain raised ``exc`` (not an
    :class:`~flask_mcp.MCPError`).

    An exception is a bug the client is answered with a redacted ``-32603``: that is its
    error type, as the MCP semantic conventions ask of an error response. The others
    (``RequestCancelled``, a backend outage answered with HTTP 503) sent no JSON-RPC
    error: their class names them.
    """
    if isinstance(exc, Exception) and not isinstance(exc, BackendUnavailable):
        return str(INTERNAL_ERROR), str(INTERNAL_ERROR)
    return type(exc).__qualname__, None


def ended_early(call: CallInfo) -> tuple[str, str | None, str] | None:
    """Tell how the server ended a request before its handler did, if it did.

    A request ``MCP_REQUEST_TIMEOUT`` ended was answered with the timeout's answer,
    and a cancelled one was not answered, whatever the handler returns or raises
    later (on gevent it is interrupted with ``RequestCancelled``; a thread runs on
    and returns). Its error type is the client's: ``tool_error`` for the timeout's
    ``isError`` result of a ``tools/call``, the JSON-RPC code of the timeout error of
    another method, or :data:`CANCELLED`.

    :returns: the error type, the JSON-RPC code (or ``None``) and the answer's text,
        or ``None`` when the handler's own outcome is what the client got.
    """
    run = call.call.run
    if run is None or not run.cancelled.is_set():
        return None
    answer = run.timed_out
    if answer is None:
        return CANCELLED, None, "The request was cancelled."
    error = answer.get("error")
    if isinstance(error, dict):
        code = str(error.get("code"))
        return code, code, str(error.get("message", ""))
    blocks = answer.get("result", {}).get("content") or [{}]
    return "tool_error", None, str(blocks[0].get("text", ""))


def listen_ended(reason: str, error: dict[str, t.Any] | None) -> tuple[str, str | None, str] | None:
    """Tell how a ``subscriptions/listen`` ended for its client, from ``listen_finished``.

    Its result is a success, whether ``MCP_SSE_MAX_STREAM_SECONDS`` ended it
    (``timeout``) or a stopping worker did over HTTP (``shutdown``: a deploy or a reload
    is no burst of errors); a client that left or cancelled it is :data:`CANCELLED`, as a
    request cancelled before its answer; one the interrupted stdio server cancelled, with
    no result (``interrupted``), is :data:`SHUTDOWN`, not read as clients cancelling; a
    refusal has its JSON-RPC code, and a backend failure ``BackendUnavailable``, as for
    other requests (answered with HTTP 503).

    :returns: the error type, the JSON-RPC code (or ``None``) and a description, or
        ``None`` for a listen that ended with its result.
    """
    if reason == "backend-unavailable":
        return BackendUnavailable.__qualname__, None, str((error or {}).get("message", ""))
    if error is not None:
        code = str(error.get("code"))
        return code, code, str(error.get("message", ""))
    if reason == "interrupted":
        return SHUTDOWN, None, "The server cancelled the listen as it shut down."
    if reason not in ("timeout", "shutdown"):  # the client ended it
        return CANCELLED, None, "The client ended the listen."
    return None


__all__ = [
    "CANCELLED",
    "MAX_LENGTH",
    "MAX_VALUES",
    "OTHER",
    "SHUTDOWN",
    "SPEC_METHODS",
    "UNKNOWN",
    "LabelBounds",
    "ended_early",
    "listen_ended",
    "raised_error",
]
