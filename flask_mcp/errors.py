"""Exceptions raised by Flask-MCP and by the code that uses it."""

from __future__ import annotations

import typing as t

from werkzeug.exceptions import HTTPException

# JSON-RPC 2.0 error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# MCP error codes.
#: The server's request to the client timed out or the server is shutting down.
REQUEST_TIMEOUT = -32001
#: Resource not found (handshake era; 2026-07-28 uses ``INVALID_PARAMS``).
RESOURCE_NOT_FOUND = -32002
#: A ``Mcp-*`` header disagrees with the body (2026-07-28).
HEADER_MISMATCH = -32020
#: The request needs a client capability that was not declared (2026-07-28).
MISSING_CLIENT_CAPABILITY = -32021
#: The requested protocol version is not supported (2026-07-28).
UNSUPPORTED_PROTOCOL_VERSION = -32022
#: A URL-mode elicitation must be completed before the request can proceed.
URL_ELICITATION_REQUIRED = -32042


class MCPError(Exception):
    """A JSON-RPC error to send back for the current request.

    Raise it from a handler to answer with a JSON-RPC error instead of a
    result. ``http_status`` is used when the error is the whole HTTP response
    (stateless requests) and is ignored on SSE streams.

    :param code: the JSON-RPC error code.
    :param message: a short, human readable message.
    :param data: optional structured details.
    :param http_status: the HTTP status to use when this error is the response.
    """

    def __init__(
        self,
        code: int,
        message: str,
        data: t.Any = None,
        *,
        http_status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.http_status = http_status

    def to_error(self) -> dict[str, t.Any]:
        """Return the JSON-RPC ``error`` member for this exception."""
        error: dict[str, t.Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class InvalidParams(MCPError):
    """The request's params are missing, mistyped or refer to nothing."""

    def __init__(self, message: str, data: t.Any = None) -> None:
        super().__init__(INVALID_PARAMS, message, data)


class MethodNotFound(MCPError):
    """The method does not exist or is not offered by this server."""

    def __init__(self, method: str) -> None:
        super().__init__(METHOD_NOT_FOUND, f"Method not found: {method}", http_status=404)


class URLElicitationRequired(MCPError):
    """The client must complete URL-mode elicitations before retrying.

    :param elicitations: the ``ElicitRequestURLParams`` objects to complete.
    """

    def __init__(self, elicitations: list[dict[str, t.Any]], message: str | None = None) -> None:
        super().__init__(
            URL_ELICITATION_REQUIRED,
            message or "This request requires more information.",
            {"elicitations": elicitations},
        )


class ToolError(Exception):
    """A tool failed in a way the model should read.

    Raising it from a tool answers with a ``CallToolResult`` whose ``isError``
    is true and whose text is the message.
    """


class ClientRequestError(Exception):
    """A request the server sent to the client failed.

    :param message: what went wrong.
    :param error: the JSON-RPC error object the client answered with, if any.
    """

    def __init__(self, message: str, error: dict[str, t.Any] | None = None) -> None:
        super().__init__(message)
        self.error = error


class CapabilityNotDeclared(ClientRequestError):
    """The client did not declare the capability a server-to-client request needs."""


class ClientRequestTimeout(ClientRequestError):
    """The client did not answer a server-to-client request in time."""


class RequestCancelled(BaseException):
    """Raised inside a handler whose request was cancelled.

    It derives from :class:`BaseException` so that ``except Exception`` in tool
    code does not swallow the cancellation.
    """


class BackendUnavailable(Exception):
    """The shared-state backend (for example Redis) cannot be reached."""


class MCPHTTPError(HTTPException):
    """An HTTP-level refusal with an optional JSON-RPC error body.

    Flask renders it like any :class:`~werkzeug.exceptions.HTTPException`, so
    applications may register error handlers for it.
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: int = INVALID_REQUEST,
        request_id: t.Any = None,
        data: t.Any = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = status
        self.rpc_code = code
        self.request_id = request_id
        self.data = data
        self.extra_headers = headers or {}
