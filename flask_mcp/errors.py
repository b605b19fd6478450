"""Exceptions raised by Flask-MCP and by the code that uses it."""

from __future__ import annotations

import json
import logging
import typing as t
from urllib.parse import parse_qs
from urllib.parse import urlsplit

from werkzeug.exceptions import HTTPException
from werkzeug.http import HTTP_STATUS_CODES
from werkzeug.wrappers import Response

logger = logging.getLogger("flask_mcp")

# JSON-RPC 2.0 error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

#: A rate limit refused the request (JSON-RPC's "server error" range; MCP defines none).
RATE_LIMITED = -32000

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
    :param headers: HTTP headers of a refusal (``Retry-After``...). An error that
        carries headers is answered with its ``http_status`` and them in both
        eras, when it is the whole response.
    """

    def __init__(
        self,
        code: int,
        message: str,
        data: t.Any = None,
        *,
        http_status: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.http_status = http_status
        self.headers = headers

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
    """The method does not exist or is not offered by this server.

    A ``notifications/...`` method sent with an ``id`` is a request of a method no
    server has: the message says to send the notification without one.
    """

    def __init__(self, method: str) -> None:
        text = f"Method not found: {method}"
        if method.startswith("notifications/"):
            text += '; it is a notification: send it without an "id" (no answer comes back).'
        super().__init__(METHOD_NOT_FOUND, text, http_status=404)


class URLElicitationRequired(MCPError):
    """The client must complete URL-mode elicitations before retrying.

    At 2026-07-28, which has no error ``-32042``, a ``tools/call``, ``prompts/get`` or
    ``resources/read`` answers with an ``InputRequiredResult`` carrying the elicitations
    instead (keyed by ``elicitationId``); the handler runs again on the client's retry.
    A 2026-07-28 task asks for them in its ``inputRequests`` and runs the handler again
    once the client accepts them (see :doc:`/tasks`).

    :param elicitations: the ``ElicitRequestURLParams`` objects to complete.
    :raises ValueError: an elicitation is not URL mode with a ``url`` and an
        ``elicitationId`` (the spec requires both).
    """

    def __init__(self, elicitations: list[dict[str, t.Any]], message: str | None = None) -> None:
        for elicitation in elicitations:
            if not (
                isinstance(elicitation, dict)
                and elicitation.get("mode") == "url"
                and isinstance(elicitation.get("url"), str)
                and isinstance(elicitation.get("elicitationId"), str)
            ):
                raise ValueError(
                    "URLElicitationRequired takes URL-mode elicitations only: "
                    '{"mode": "url", "elicitationId": ..., "url": ..., "message": ...}, '
                    f"not {elicitation!r}."
                )
        super().__init__(
            URL_ELICITATION_REQUIRED,
            message or "This request requires more information.",
            {"elicitations": elicitations},
        )
        #: The elicitations to complete.
        self.elicitations = elicitations


class ResourceNotFound(MCPError):
    """No resource has the URI being read.

    Raise it from a resource or template handler when the URI names nothing,
    for example a template whose variables match no record. The client gets
    the resource-not-found error of its protocol revision, with
    ``data: {"uri": ...}``: code ``-32002`` in the handshake era (2025-11-25
    and earlier) and ``-32602`` (Invalid Params) at 2026-07-28.

    .. code-block:: python

        @mcp.resource("users://{user_id}")
        def user(user_id: str) -> dict:
            if user_id not in USERS:
                raise ResourceNotFound(f"no user has id {user_id}")
            return USERS[user_id]

    :param detail: why, added to the message in parentheses.
    :param uri: the URI that names nothing (default: the URI being read).
    """

    def __init__(self, detail: str | None = None, *, uri: str | None = None) -> None:
        message = f"Resource not found: {uri}" if uri else "Resource not found"
        if detail:
            message += f" ({detail})"
        super().__init__(RESOURCE_NOT_FOUND, message, None if uri is None else {"uri": uri})
        self.detail = detail
        self.uri = uri


class RateLimited(MCPError):
    """A rate limit refused the request; the client may retry after :attr:`retry_after` seconds.

    Answered in both eras with HTTP 429, a ``Retry-After`` header and a JSON-RPC
    error ``-32000`` whose ``data`` holds ``retryAfter`` (seconds), ``limit``
    (``"5 per 1 minute"``) and ``scope`` (``"principal"``, ``"session"``,
    ``"tool"``...). On a response that is already an event stream only the
    JSON-RPC error is sent.

    :param retry_after: whole seconds until the limit lets a request through.
    :param limit: the limit, as text.
    :param scope: what the limit counts.
    """

    def __init__(self, retry_after: int, limit: str, scope: str) -> None:
        retry_after = max(1, int(retry_after))
        super().__init__(
            RATE_LIMITED,
            f"Rate limit exceeded: {limit} per {scope}. Retry in {retry_after} s.",
            {"retryAfter": retry_after, "limit": limit, "scope": scope},
            http_status=429,
            headers={"Retry-After": str(retry_after)},
        )
        self.retry_after = retry_after


class ToolError(Exception):
    """A tool failed in a way the model should read.

    Raising it from a tool answers with a ``CallToolResult`` whose ``isError``
    is true and whose text is the message.
    """


class ConfigWarning(UserWarning):
    """An ``MCP_*`` configuration key that Flask-MCP does not know, likely misspelled.

    Turn it into an error in tests with
    ``warnings.simplefilter("error", flask_mcp.ConfigWarning)`` or pytest's
    ``filterwarnings = error::flask_mcp.ConfigWarning``.
    """


class RegistrationWarning(UserWarning):
    """A handler registered in a way that works, but not as its author likely meant.

    A tool parameter without a type annotation (its ``inputSchema`` is ``{}``, any
    JSON value) or a return annotation that gives no ``outputSchema``. The message
    names the function and the fix. Make it an error in tests with pytest's
    ``filterwarnings = error::flask_mcp.RegistrationWarning``.
    """


def http_status_of(exc: HTTPException) -> int:
    """Return the status of an :class:`~werkzeug.exceptions.HTTPException`.

    ``abort(response)`` raises one without a ``code``: its response's status is used.
    """
    if exc.code is not None:
        return exc.code
    response = exc.response
    return response.status_code if response is not None else 500


def http_exception_detail(exc: HTTPException) -> str | None:
    """Return the description the app gave an HTTP exception, or ``None``.

    Werkzeug's default descriptions speak of URLs and browsers (``abort(404)``
    says "If you entered the URL manually..."): they are left out.
    """
    description = exc.description
    if not description or description == type(exc).description:
        return None
    return description


def http_exception_text(exc: HTTPException) -> str:
    """Return ``"403 Forbidden: <description>"`` for an exception a handler raised."""
    status = http_status_of(exc)
    text = f"{status} {HTTP_STATUS_CODES.get(status, 'Unknown Error')}"
    detail = http_exception_detail(exc)
    return f"{text}: {detail}" if detail else text


def http_exception_error(exc: HTTPException) -> MCPError:
    """Return the JSON-RPC error for an HTTP exception raised by a handler.

    ``flask.abort()`` and Werkzeug's exceptions are a handler's deliberate
    answer, so the message carries their description (never redacted) and
    ``data`` their ``httpStatus``:

    ====================  =====================================================
    status                JSON-RPC code
    ====================  =====================================================
    401, 403              ``-32600`` Invalid Request: refused whatever the params
    other 4xx             ``-32602`` Invalid Params: the params name nothing or
                          are unacceptable
    5xx and anything else ``-32603`` Internal Error, with the description
    ====================  =====================================================

    A 404 in a resource handler is a resource-not-found error instead (see
    :class:`ResourceNotFound`), and in a tool any status becomes an
    ``isError`` result: the dispatcher decides those before calling this.
    """
    status = http_status_of(exc)
    return MCPError(_status_code(status), http_exception_text(exc), {"httpStatus": status})


def _status_code(status: int) -> int:
    """Return the JSON-RPC code of an HTTP status a handler answered (the table above)."""
    if status in (401, 403):
        return INVALID_REQUEST
    if 400 <= status < 500:
        return INVALID_PARAMS
    return INTERNAL_ERROR


def resource_not_found(uri: str | None, *, handshake: bool, detail: str | None = None) -> MCPError:
    """Return the resource-not-found error of an era: the one rule for every path.

    :param uri: the URI that names nothing (``data: {"uri": ...}``).
    :param handshake: ``True`` for handshake-era requests (``-32002``),
        ``False`` for 2026-07-28 ones (``-32602``, the spec's code there).
    :param detail: why, added to the message in parentheses.
    """
    code = RESOURCE_NOT_FOUND if handshake else INVALID_PARAMS
    message = f"Resource not found: {uri}" if uri else "Resource not found"
    if detail:
        message += f" ({detail})"
    return MCPError(code, message, None if uri is None else {"uri": uri})


def aborted(exc: HTTPException, what: str) -> str:
    """Log an HTTP exception a handler raised on purpose and return its text.

    ``flask.abort()`` is a deliberate answer: it is logged without a
    traceback (``INFO``, ``WARNING`` for 5xx) and its text is never redacted.
    """
    status = http_status_of(exc)
    log = logger.warning if status >= 500 else logger.info
    log("%s answered HTTP %s: %s", what, status, exc.description)
    return http_exception_text(exc)


def view_answer(value: t.Any) -> Response | None:
    """Return the Werkzeug response a tool returned as a view would, or ``None``.

    A decorator made for views (Flask-Login's ``login_required`` with a
    ``login_view``) returns a redirect instead of calling the tool; a tool may also
    return ``jsonify(...)`` or a ``(response, status[, headers])`` tuple out of habit,
    whose status and headers (``Retry-After``) apply as Flask applies them.
    """
    if isinstance(value, Response):
        return value
    if isinstance(value, tuple) and value and isinstance(value[0], Response):
        response = value[0]
        if len(value) > 1 and isinstance(value[1], (int, str)):  # (response, status), a view's
            response.status = value[1]
        if isinstance(value[-1], (dict, list)) and len(value) > 1:  # (..., headers), as Flask's
            response.headers.update(value[-1])
        return response
    return None


#: Characters of a view's error body a text keeps (:func:`shorten`).
ERROR_DETAIL_LIMIT = 300
#: Names of a login page, compared with the last part of a redirect's endpoint and with each
#: segment of its path, lower-cased without ``-`` and ``_`` (``auth.login``, ``/sign-in``,
#: ``/sso``, an identity provider's ``/oauth2/authorize``): a hand-written
#: ``redirect(url_for("auth.login"))``, as in Flask's tutorial, has no ``next=``.
LOGIN_NAMES = frozenset({"login", "signin", "logon", "sso", "authorize"})


def shorten(text: str, limit: int = ERROR_DETAIL_LIMIT) -> str:
    """Return ``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def looks_like_login(endpoint: str | None, path: str) -> bool:
    """Tell whether a redirect's endpoint or path names a login page (:data:`LOGIN_NAMES`)."""
    names = [segment for segment in path.split("/") if segment]
    if endpoint:
        names.append(endpoint.rsplit(".", 1)[-1])
    return any(name.lower().replace("-", "").replace("_", "") in LOGIN_NAMES for name in names)


def _retry_after(headers: t.Any) -> str:
    value = headers.get("Retry-After")
    if value and str(value).strip().isdigit():
        return f" Retry in {int(str(value).strip())} s."
    return " Retry later." if value is None else f" Retry after {shorten(str(value), 40)}."


def view_status_text(
    code: int,
    status: str,
    headers: t.Any,
    detail: str = "",
    *,
    subject: str = "The view",
    kind: str = "tool",
    endpoint: str | None = None,
    login_endpoints: t.Collection[str] = (),
) -> str:
    """Return one line that tells a model what a view's non-2xx answer means and what to do.

    The one explanation per status, for a ``ViewTools`` view
    (:func:`flask_mcp.contrib.view_answers.explain_status`) and for a handler that
    answered as a view does (:func:`view_answer_text`): a redirect to a login page
    (one of ``login_endpoints``, a ``next=`` URL, or a page named in
    :data:`LOGIN_NAMES`) needs a login; another redirect is not followed; 401, 403,
    404, 429 (with ``Retry-After``) and 5xx each say what to do.

    :param code: the HTTP status code.
    :param status: the status line (``"302 FOUND"``).
    :param headers: the response headers (``Location``, ``Retry-After``).
    :param detail: the body, already cut short (may be empty).
    :param subject: who answered, the start of the sentence (``"The view"``).
    :param kind: ``"tool"``, ``"resource"`` or ``"prompt"``: what needs a login.
    :param endpoint: the endpoint of the app a redirect points to, if known.
    :param login_endpoints: the endpoints of the app's login pages.
    """
    suffix = f" It said: {detail}" if detail else ""
    asked = "URI" if kind == "resource" else "arguments"
    if 300 <= code < 400:
        location = str(headers.get("Location") or "")
        shown = shorten(location, 200) or "(no Location)"
        parts = urlsplit(location)
        if (
            (endpoint is not None and endpoint in login_endpoints)
            or "next" in parse_qs(parts.query)
            or looks_like_login(endpoint, parts.path)
        ):
            return (
                f"{subject} redirected to {shown} (HTTP {status}): this {kind} needs a login, "
                "and the MCP connection carried none that the app accepts. Ask the user to sign "
                "in to the app (connect with a session cookie or token it accepts); retrying as "
                "is will not help."
            )
        return (
            f"{subject} redirected to {shown} (HTTP {status}); an MCP call does not follow "
            "redirects, so nothing was done at the new address."
        )
    if code == 401:
        return (
            f"{subject} refused the call (HTTP {status}): this {kind} needs authentication, and "
            "the MCP connection's credentials were missing or not accepted. Ask the user to "
            "connect with credentials the app accepts; retrying as is will not help." + suffix
        )
    if code == 403:
        return (
            f"{subject} refused the call (HTTP {status}): the caller is known but not allowed "
            "to do this. Do not retry; the user needs an account with that permission." + suffix
        )
    if code == 429:
        return f"{subject} refused the call (HTTP {status}): too many calls." + (
            _retry_after(headers) + suffix
        )
    if code >= 500:
        retry = _retry_after(headers) if code == 503 else ""
        return (
            f"{subject} failed (HTTP {status}): an error of the app, not of the arguments; the "
            f"details are in the server's log.{retry}"
        )
    if code == 404:
        return f"{subject} found nothing (HTTP {status}): check the identifiers in the {asked}." + (
            suffix
        )
    if kind == "tool":
        advice = "check the arguments against the tool's input schema and the message, then call"
    else:
        advice = f"check the {asked} and the message, then try"
    return f"{subject} refused the call (HTTP {status}): {advice} again." + suffix


def view_answer_text(response: Response, what: str, kind: str = "tool") -> str:
    """Log a view's answer a handler returned, close it, and return the text that says so.

    A redirect or an error status is a refusal (a view decorator's, on purpose),
    explained as a ``ViewTools`` view's answer is (:func:`view_status_text`) and
    logged at ``INFO``; a 5xx is logged at ``ERROR`` with its body, which is not
    sent. A success is a mistake of the handler's author: logged at ``ERROR``,
    with the fix. The response is then closed (``Response.close()``), as a WSGI
    server closes a view's: a streamed body (``send_file``, a generator), never
    sent, would keep its file or generator open. Its status and headers stay readable.

    :param what: the handler, for the text (``"Tool 'orders'"``).
    :param kind: ``"tool"``, ``"resource"`` or ``"prompt"``: only a tool is told
        about ``ViewTools``.
    """
    try:
        return _view_answer_text(response, what, kind)
    finally:
        response.close()


def _view_answer_text(response: Response, what: str, kind: str) -> str:
    """Log a view's answer and return its text (:func:`view_answer_text`, which closes it)."""
    code = response.status_code
    if 200 <= code < 300:
        line = f"HTTP {response.status}"
        text = (
            f"{what} returned a flask Response ({line}), which a {kind} cannot send:"
            " return the data itself (a dict, str, ...), not jsonify() or make_response()"
        )
        if kind == "tool":
            text += "; to offer a view as a tool, use flask_mcp.contrib.view_tools.ViewTools."
        else:
            text += "."
        logger.error("%s", text)
        return text
    text = view_status_text(
        code,
        response.status,
        response.headers,
        subject=f"{what} answered as a view does and",
        kind=kind,
    )
    if code >= 500:
        body = response.get_data()[:2000] if response.is_sequence else b""
        logger.error("%s The body: %r", text, body)
    else:
        logger.info("%s", text)
    return text


def view_answer_error(response: Response, what: str, kind: str) -> MCPError:
    """Return the JSON-RPC error for a view's answer a resource or prompt returned.

    The message is :func:`view_answer_text`'s (which closes the response); ``data``
    has the ``httpStatus`` (and the redirect's ``location``). A redirect is a refusal
    whatever the params, as a 401 is: ``-32600`` Invalid Request. Another error status
    maps as :func:`http_exception_error` says; a success is a bug of the handler,
    ``-32603``.

    :param what: the handler, for the text (``"Resource 'orders://mine'"``).
    :param kind: ``"resource"`` or ``"prompt"``.
    """
    text = view_answer_text(response, what, kind)
    status = response.status_code
    data: dict[str, t.Any] = {"httpStatus": status}
    location = response.headers.get("Location")
    if 300 <= status < 400 and location:
        data["location"] = location
        return MCPError(INVALID_REQUEST, text, data)
    return MCPError(_status_code(status), text, data)


def handler_error(
    exc: ResourceNotFound | HTTPException, what: str, *, handshake: bool, uri: str | None = None
) -> MCPError:
    """Return the JSON-RPC error for a ``ResourceNotFound`` or HTTP exception of a handler.

    Inside ``resources/read`` (``uri`` given) both a :class:`ResourceNotFound`
    and a 404 become the era's resource-not-found error; elsewhere an HTTP
    exception maps as :func:`http_exception_error` says.

    :param what: the handler, for the log (``"tool 'add'"``).
    """
    if isinstance(exc, ResourceNotFound):
        return resource_not_found(exc.uri or uri, handshake=handshake, detail=exc.detail)
    text = aborted(exc, what)
    if uri is not None and http_status_of(exc) == 404:
        return resource_not_found(uri, handshake=handshake, detail=http_exception_detail(exc))
    error = http_exception_error(exc)
    error.message = text
    return error


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


class BackendFull(BackendUnavailable):
    """The shared-state backend answers but refuses writes: it is full.

    Redis at its ``maxmemory`` with ``maxmemory-policy noeviction`` still answers reads;
    requests are answered as in an outage (HTTP 503) until it has room again.
    """


#: The message of the 503 that refuses a request meeting an unreachable shared-state backend
#: before it started (nothing was done); a request whose run met it is answered with
#: :data:`flask_mcp.runtime.settle.STORE_UNAVAILABLE_WHILE_RUNNING`.
STORE_UNAVAILABLE_BEFORE_START = (
    "Service Unavailable: the session store is unavailable; retry later."
)


def store_unavailable() -> MCPError:
    """Return the refusal of a request that met an unreachable backend before it started.

    Nothing was done, so the client may simply send it again: answered in both eras
    with HTTP 503, ``Retry-After: 2`` and the retryable JSON-RPC error -32603, as the
    transport answers a request whose session it cannot look up.
    """
    return MCPError(
        INTERNAL_ERROR,
        STORE_UNAVAILABLE_BEFORE_START,
        {"retryable": True},
        http_status=503,
        headers={"Retry-After": "2"},
    )


class MCPHTTPError(HTTPException):
    """An HTTP-level refusal with an optional JSON-RPC error body.

    Flask renders it like any :class:`~werkzeug.exceptions.HTTPException`, so
    applications may register error handlers for it. Its HTTP status is
    :attr:`http_status` (also Werkzeug's ``code``); :attr:`rpc_code` is the
    JSON-RPC code of the body, as ``code`` is on :class:`MCPError`.

    :param status: the HTTP status.
    :param message: the text of the body's JSON-RPC error.
    :param code: the JSON-RPC error code of the body.
    :param request_id: the id of the request it answers, if known.
    :param data: ``data`` of the body's JSON-RPC error.
    :param headers: extra HTTP headers (``WWW-Authenticate``, ``Retry-After``...).
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
        self.code = status  # Werkzeug's name for the status, read by Flask's error handlers
        self.http_status = status
        self.rpc_code = code
        self.request_id = request_id
        self.data = data
        self.extra_headers = headers or {}

    def get_body(self, environ: t.Any = None, scope: t.Any = None) -> str:
        """Return the body: a JSON-RPC error, on every route (not Werkzeug's HTML page)."""
        error: dict[str, t.Any] = {"code": self.rpc_code, "message": self.description or ""}
        if self.data is not None:
            error["data"] = self.data
        return json.dumps({"jsonrpc": "2.0", "id": self.request_id, "error": error})

    def get_headers(self, environ: t.Any = None, scope: t.Any = None) -> list[tuple[str, str]]:
        """Return the headers: JSON, and :attr:`extra_headers`."""
        return [("Content-Type", "application/json"), *self.extra_headers.items()]


class MissingClientCapability(CapabilityNotDeclared, MCPError):
    """A 2026-07-28 request needs a client capability its ``_meta`` did not declare.

    Answered with HTTP 400 and error ``-32021``, whose ``data`` names the
    capability: ``{"requiredCapabilities": {"sampling": {}}}``.

    :param capability: the capability, e.g. ``"sampling"``.
    :param sub: a sub-capability, e.g. ``"tools"`` for ``sampling.tools``.
    """

    def __init__(self, capability: str, sub: str | None = None) -> None:
        name = capability if sub is None else f"{capability}.{sub}"
        required: dict[str, t.Any] = {capability: {} if sub is None else {sub: {}}}
        MCPError.__init__(
            self,
            MISSING_CLIENT_CAPABILITY,
            f"Missing required client capability: {name!r}. Declare it in "
            "_meta['io.modelcontextprotocol/clientCapabilities'] to use this.",
            {"requiredCapabilities": required},
            http_status=400,
        )
        self.error = None


__all__ = [
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MISSING_CLIENT_CAPABILITY",
    "PARSE_ERROR",
    "RATE_LIMITED",
    "REQUEST_TIMEOUT",
    "RESOURCE_NOT_FOUND",
    "STORE_UNAVAILABLE_BEFORE_START",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "URL_ELICITATION_REQUIRED",
    "BackendFull",
    "BackendUnavailable",
    "CapabilityNotDeclared",
    "ClientRequestError",
    "ClientRequestTimeout",
    "ConfigWarning",
    "RegistrationWarning",
    "InvalidParams",
    "MCPError",
    "MCPHTTPError",
    "MethodNotFound",
    "MissingClientCapability",
    "RateLimited",
    "RequestCancelled",
    "ResourceNotFound",
    "ToolError",
    "URLElicitationRequired",
    "aborted",
    "handler_error",
    "http_exception_detail",
    "http_exception_error",
    "http_exception_text",
    "http_status_of",
    "resource_not_found",
    "store_unavailable",
]
