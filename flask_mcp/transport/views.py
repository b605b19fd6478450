"""Streamable HTTP: the POST, GET and DELETE views of the MCP endpoint.

Every request passes the same checks here (Host, Origin, the bearer token,
media types, body size); a POST's body is decoded and its era chosen, then the
era's ladder takes it: :mod:`.handshake` or :mod:`.stateless`.
"""

from __future__ import annotations

import logging
import time
import typing as t

from flask import Blueprint
from flask import Response
from flask import current_app
from flask import request
from werkzeug.exceptions import HTTPException
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.routing import Rule
from werkzeug.wsgi import get_content_length

from .. import protocol
from ..errors import INTERNAL_ERROR
from ..errors import PARSE_ERROR
from ..errors import STORE_UNAVAILABLE_BEFORE_START
from ..errors import BackendUnavailable
from ..errors import MCPError
from ..errors import MCPHTTPError
from ..protocol import jsonrpc
from ..runtime import concurrency as _concurrency
from ..runtime.supervisor import ensure_supervisor
from . import security
from .auth import authenticate
from .handshake import SESSION_KEY
from .handshake import VERSION_KEY
from .handshake import Handshake
from .responses import http_error
from .responses import no_content
from .responses import watch_large_body
from .stateless import handle_stateless

if t.TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment
    from flask import Request
    from flask.blueprints import BlueprintSetupState

    from ..config import Settings
    from ..runtime.state import AppState
    from ..server.dispatcher import Dispatcher

#: The environ key of gunicorn's client connection.
_GUNICORN = "gunicorn.socket"
logger = logging.getLogger("flask_mcp")
#: The methods of the endpoint's rule; a second rule sends every other one to the view,
#: which refuses it with a JSON 405 (Werkzeug's HTML page otherwise).
ENDPOINT_METHODS = ("GET", "POST", "DELETE", "OPTIONS")
#: The WSGI environ key holding the id of the request a POST carries, once decoded.
REQUEST_ID_KEY = "flask_mcp.request_id"
#: Seconds between two warnings about the 503s one cause (an outage, a full Redis) gives.
REFUSALS_LOGGED_EVERY = 10.0


class RefusalLog:
    """Logs the 503s of an unavailable backend: the first refusal of a cause, then at most
    one line every :data:`REFUSALS_LOGGED_EVERY` seconds saying how many came since.

    A full or unreachable Redis refuses every request: one warning each flooded the log
    with one reason. Each refusal is still logged at ``DEBUG``, with its request id.
    """

    __slots__ = ("cause", "last_line", "quiet")

    def __init__(self) -> None:
        #: The class of the error of the last warning (a new cause is logged at once).
        self.cause: type[BaseException] | None = None
        #: When (``time.monotonic()``) the last warning was logged.
        self.last_line = 0.0
        #: The refusals answered since the last warning.
        self.quiet = 0

    def refused(self, exc: BackendUnavailable, request_id: t.Any) -> None:
        """Log that the current request was answered with 503 for ``exc``."""
        now, cause = time.monotonic(), type(exc)
        if cause is self.cause and now - self.last_line < REFUSALS_LOGGED_EVERY:
            self.quiet += 1
            logger.debug(
                "Answered %s %s (request id %r) with 503: %s",
                request.method,
                request.path,
                request_id,
                exc,
            )
            return
        since = f" ({self.quiet} more since the last line)" if self.quiet else ""
        self.cause, self.last_line, self.quiet = cause, now, 0
        logger.warning(
            "Answered %s %s (request id %r) with 503%s: the session store is unavailable: %s",
            request.method,
            request.path,
            request_id,
            since,
            exc,
        )


class Transport:
    """The views of one server's endpoint on one app.

    :param dispatcher: runs the requests.
    :param state: the state of the one app the blueprint is registered on.
    :param roots_changed_hooks: called with the session id when a client's roots change.
    """

    def __init__(
        self,
        dispatcher: Dispatcher,
        state: AppState,
        roots_changed_hooks: t.Sequence[t.Callable[[str], None]] = (),
    ) -> None:
        self.dispatcher = dispatcher
        self.app_state = state
        self.handshake = Handshake(dispatcher, state, roots_changed_hooks)

    # -- shared checks -----------------------------------------------------------

    def _guard(self, state: AppState, environ: WSGIEnvironment) -> None:
        settings = state.settings
        security.check_request_host(environ, settings.allowed_hosts)
        origin = environ.get("HTTP_ORIGIN")
        if origin is not None:
            security.check_origin(origin, settings.allowed_origins)
        ensure_supervisor(state)
        if not state.first_request_seen:
            state.first_request_seen = True
            self._first_request(state, environ)

    def _first_request(self, state: AppState, environ: WSGIEnvironment) -> None:
        """Learn what only a request tells: the server's kind and how many streams it holds."""
        if not state.backend.multiprocess and environ.get("wsgi.multiprocess"):
            logger.warning(
                "Flask-MCP uses the in-memory backend under a multi-process server: sessions "
                "live in one worker only. Run one worker, or set MCP_BACKEND=redis://..."
            )
        if state.settings.max_streams is None:
            state.slots.limit = _concurrency.stream_capacity(environ)

    # -- POST --------------------------------------------------------------------

    def post(self, req: Request | None = None) -> Response:
        state = self.app_state
        settings = state.settings
        if req is None:
            req = t.cast("Request", request._get_current_object())  # type: ignore[attr-defined]
        environ = req.environ
        self._guard(state, environ)
        auth = authenticate(state)
        if environ.get("CONTENT_TYPE") != "application/json":  # else nothing to parse
            security.check_content_type(_mimetype(environ))
        security.check_accept_post(environ.get("HTTP_ACCEPT"))
        length = _content_length(environ)
        security.check_body_size(length, settings.max_body_size)
        flask_limit = state.app.config.get("MAX_CONTENT_LENGTH")  # read per request, as Flask does
        # gunicorn reads the body with no timeout: a client that sends less than its
        # Content-Length, or a chunked body without its last chunk, would hold this thread
        # (or greenlet) for ever. The supervisor ends a read that waited MCP_READ_TIMEOUT.
        # (waitress reads the body before the app runs; uWSGI has its --socket-timeout.)
        # PendingReads.start, .ended and .finish, inline: no Python call on this path.
        watch = (environ[_GUNICORN], time.monotonic()) if _GUNICORN in environ else None
        reading = state.reads.reading
        if watch is not None:
            reading.add(watch)
        cut = False  # by the supervisor
        try:
            if length is not None and flask_limit is None:
                # Exactly CONTENT_LENGTH bytes may be read from any WSGI server's input
                # (PEP 3333); Werkzeug's request.stream would only wrap it, for 4 us.
                body = environ["wsgi.input"].read(length)  # no more than the length checked above
            elif length is None and _concurrency.uwsgi_chunked(environ):
                try:
                    body = _concurrency.read_uwsgi_chunked(environ, settings.max_body_size + 1)
                except _concurrency.ChunkedBodyUnread as unread:
                    raise MCPHTTPError(unread.status, unread.reason) from None
                security.check_body_size(len(body), settings.max_body_size)
                if flask_limit is not None and len(body) > flask_limit:
                    raise _larger_than_flask_allows(flask_limit)
            else:  # chunked, or Flask's MAX_CONTENT_LENGTH applies: Werkzeug enforces both
                try:
                    body = req.stream.read(settings.max_body_size + 1 if length is None else length)
                except RequestEntityTooLarge:
                    raise _larger_than_flask_allows(flask_limit) from None
                security.check_body_size(len(body), settings.max_body_size)
        except HTTPException:  # 413, or Werkzeug's ClientDisconnected
            raise
        except Exception as exc:  # the server's reader: malformed chunks, a body cut short
            if watch is None or watch in reading:  # not cut by the supervisor
                raise MCPHTTPError(
                    400,
                    f"The body could not be read ({type(exc).__name__}: {str(exc)[:200]}); "
                    "send it whole: as long as its Content-Length says, or in well-formed "
                    "chunks ending with the last (zero-length) chunk.",
                ) from None
            body = b""  # the read ended by the supervisor, short or with an error
        finally:
            if watch is not None:
                try:
                    reading.remove(watch)
                except KeyError:  # the supervisor took it
                    cut = True
        if cut:
            raise MCPHTTPError(
                408,
                f"The body did not arrive within {settings.read_timeout:g} s "
                "(MCP_READ_TIMEOUT); send the whole body, as long as its Content-Length says.",
            )
        # Handlers may call request.get_data() or request.get_json() as in any view:
        # the input stream is consumed, so Werkzeug's cache of the body is filled.
        req._cached_data = body
        try:
            message = jsonrpc.loads(body)
        except MCPError as exc:
            return http_error(400, exc.message, code=PARSE_ERROR)
        if isinstance(message, dict) and "method" in message:
            environ[REQUEST_ID_KEY] = message.get("id")  # for a 503 that may come later
        header_version = environ.get(VERSION_KEY)
        era = protocol.era_of_request(
            has_session=bool(environ.get(SESSION_KEY)),
            header_version=header_version.strip() if header_version else None,
            message=message,
        )
        if era == protocol.STATELESS:
            return handle_stateless(self.dispatcher, state, message, auth, req)
        return self.handshake.post(req, message, auth)

    # -- GET -----------------------------------------------------------------------

    def get(self) -> Response:
        state = self.app_state
        settings = state.settings
        environ = request.environ
        self._guard(state, environ)
        _refuse_stateless(environ)
        security.check_accept_sse(request.accept_mimetypes)
        auth = authenticate(state)
        if not settings.enable_get_stream:
            return http_error(
                405,
                "Method Not Allowed: this server offers no GET stream.",
                headers={"Allow": _taken_methods(settings)},
            )
        record = self.handshake.session(environ, auth=auth)
        assert record is not None
        return self.handshake.open_stream(environ, record, auth)

    # -- DELETE ----------------------------------------------------------------------

    def delete(self) -> Response:
        state = self.app_state
        environ = request.environ
        self._guard(state, environ)
        _refuse_stateless(environ)
        record = self.handshake.session(environ, auth=authenticate(state))
        assert record is not None
        self.handshake.end(record)
        return no_content()


def _taken_methods(settings: Settings) -> str:
    """Return the ``Allow`` of the endpoint's 405s: the methods it answers other than ``OPTIONS``.

    ``GET`` only with ``MCP_ENABLE_GET_STREAM``; never ``HEAD``, which Werkzeug's rule
    adds to ``GET`` and the endpoint refuses (a ``HEAD`` opens no stream).
    """
    return "GET, POST, DELETE" if settings.enable_get_stream else "POST, DELETE"


def _check_caller(settings: Settings, environ: WSGIEnvironment) -> None:
    """Refuse the ``Host`` and ``Origin`` of any method but ``POST``, ``GET`` and ``DELETE``.

    Those three run :meth:`Transport._guard`; an ``OPTIONS`` (a CORS preflight) and a
    refused method are checked alike, so that a page reached by DNS rebinding or from an
    origin not allowed is not answered as if it were (the spec: servers MUST validate the
    ``Origin`` of every incoming connection).

    :raises MCPHTTPError: 421 for the ``Host``, 403 for the ``Origin``.
    """
    security.check_request_host(environ, settings.allowed_hosts)
    origin = environ.get("HTTP_ORIGIN")
    if origin is not None:
        security.check_origin(origin, settings.allowed_origins)


def _options_response(settings: Settings) -> Response:
    """Return the answer to ``OPTIONS``, offering the methods the endpoint takes.

    Not those of its rule, which has ``HEAD`` (and ``GET`` without
    ``MCP_ENABLE_GET_STREAM``), nor those of the rule taking any method
    (:func:`_refuse_other_methods`): an ``Allow`` (and a CORS layer reading it) offers
    only what the endpoint answers.
    """
    response = current_app.response_class()
    response.headers["Allow"] = f"{_taken_methods(settings)}, OPTIONS"
    return response


def _refuse_other_methods(setup: BlueprintSetupState) -> None:
    """Add, after the endpoint's rule, the same rule for any method, to the same view.

    Werkzeug answers a method no rule takes (TRACE, PUT, a WebDAV or custom one) with
    its HTML 405 before any view runs; this rule sends them to the endpoint's view,
    which refuses them as it refuses everything else, with a JSON-RPC error body.
    """
    endpoint = f"{setup.name_prefix}.{setup.name}.endpoint".lstrip(".")
    url_map = setup.app.url_map
    for rule in list(url_map.iter_rules(endpoint)):
        if rule.methods is not None:
            url_map.add(Rule(rule.rule, **{**rule.get_empty_kwargs(), "methods": None}))


def _refuse_stateless(environ: WSGIEnvironment) -> None:
    """Refuse a GET or DELETE of the 2026-07-28 revision, which has neither.

    Its ``MCP-Protocol-Version`` header tells it; the spec answers 405 and
    ignores any ``Mcp-Session-Id`` (``streamable-http.mdx``, Earlier Streamable
    HTTP Revisions).

    :raises MCPHTTPError: 405 Method Not Allowed.
    """
    version = environ.get(VERSION_KEY)
    if version is not None and version.strip() in protocol.STATELESS_VERSIONS:
        raise MCPHTTPError(
            405,
            f"Method Not Allowed: protocol {version.strip()} has no GET stream and no "
            "sessions to DELETE; POST every request, and POST subscriptions/listen for "
            "change notifications.",
            headers={"Allow": "POST"},
        )


def _content_length(environ: WSGIEnvironment) -> int | None:
    """Return what Werkzeug's ``get_content_length(environ)`` returns, reading plain digits at once.

    A ``Content-Length`` of ASCII digits without ``Transfer-Encoding`` (every
    client's small POST) is the number itself; anything else (chunked, a sign,
    spaces, no header) takes Werkzeug's parser, whose answer it is. Werkzeug
    parses the header with a regex behind two calls, as much as the rest of
    the view's header checks under a server's load.
    """
    value = environ.get("CONTENT_LENGTH")
    if (
        value
        and value.isdigit()
        and value.isascii()
        and environ.get("HTTP_TRANSFER_ENCODING") is None
    ):
        return int(value)
    return get_content_length(environ)


def _larger_than_flask_allows(limit: int | None) -> MCPHTTPError:
    """Return the 413 of a body past the app's ``MAX_CONTENT_LENGTH`` (``limit``)."""
    return MCPHTTPError(
        413, f"The body is larger than {limit} bytes, the app's MAX_CONTENT_LENGTH."
    )


def _mimetype(environ: WSGIEnvironment) -> str:
    """Return the request's media type, lower-cased, without parameters."""
    return t.cast(str, environ.get("CONTENT_TYPE", "")).partition(";")[0].strip().lower()


def make_blueprint(
    dispatcher: Dispatcher,
    state: AppState,
    roots_changed_hooks: t.Sequence[t.Callable[[str], None]] = (),
) -> Blueprint:
    """Return a blueprint serving ``dispatcher`` at ``MCP_PATH`` for the app of ``state``."""
    path = state.settings.path
    transport = Transport(dispatcher, state, roots_changed_hooks)
    blueprint = Blueprint("mcp", __name__)
    refusals = RefusalLog()

    def endpoint(**path_args: t.Any) -> Response:  # MCP_PATH's URL variables: request.view_args
        try:
            req = request._get_current_object()  # type: ignore[attr-defined]
            method = req.method
            if method == "POST":
                return watch_large_body(state, req.environ, transport.post(req))
            if method == "GET":
                return transport.get()
            if method == "DELETE":
                return transport.delete()
            _check_caller(state.settings, req.environ)  # as _guard does for the three above
            if method == "OPTIONS":
                return _options_response(state.settings)
            allowed = _taken_methods(state.settings)
            if method == "HEAD" and state.settings.enable_get_stream:  # it opens no stream
                return http_error(
                    405,
                    "Method Not Allowed: send GET with Accept: text/event-stream to open a stream.",
                    headers={"Allow": allowed},
                )
            stream = ", GET it to open a stream" if state.settings.enable_get_stream else ""
            return http_error(  # any other method (_refuse_other_methods)
                405,
                f"Method Not Allowed: the MCP endpoint takes no {method}; POST JSON-RPC "
                f"messages to it{stream}, DELETE it to end a session.",
                headers={"Allow": allowed},
            )
        except MCPHTTPError as exc:
            headers = dict(exc.extra_headers)
            return http_error(
                exc.http_status,
                exc.description or "",
                code=exc.rpc_code,
                request_id=exc.request_id,
                data=exc.data,
                headers=headers,
            )
        except BackendUnavailable as exc:  # where and why go to the log, not to the client
            request_id = request.environ.get(REQUEST_ID_KEY)
            refusals.refused(exc, request_id)
            return http_error(
                503,
                STORE_UNAVAILABLE_BEFORE_START,
                code=INTERNAL_ERROR,
                request_id=request_id,
                data={"retryable": True},
                headers={"Retry-After": "2"},
            )

    blueprint.add_url_rule(
        path,
        "endpoint",
        endpoint,
        methods=ENDPOINT_METHODS,
        strict_slashes=False,
        provide_automatic_options=False,  # Flask's reads an Allow of [] off the rule below
    )
    blueprint.record(_refuse_other_methods)
    return blueprint


__all__ = ["REFUSALS_LOGGED_EVERY", "RefusalLog", "Transport", "make_blueprint"]
