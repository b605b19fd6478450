"""The HTTP endpoints: metadata, authorize (login and consent), token, revoke, register, JWKS.

They are registered on each app by :meth:`~.extension.OAuthServer.init_app`, under
``MCP_OAUTH_PREFIX`` (``/oauth``), and read the app's :class:`~.server.AppServer`
from ``app.extensions``. The consent page is the Jinja template
``mcp_oauth/consent.html``: an app overrides it by shipping a template of that
name in its own ``templates/`` folder. Its form carries a CSRF token signed with
the app's ``SECRET_KEY``, bound to the user and to the exact authorization
request, that expires after ``MCP_OAUTH_CONSENT_MAX_AGE`` seconds.
"""

from __future__ import annotations

import hashlib
import io
import logging
import typing as t
from urllib.parse import urlsplit

from authlib.common.urls import add_params_to_uri
from authlib.oauth2.rfc6749.errors import InsecureTransportError
from authlib.oauth2.rfc6749.errors import OAuth2Error
from flask import Blueprint
from flask import abort
from flask import current_app
from flask import jsonify
from flask import redirect
from flask import render_template
from flask import request
from flask import url_for
from itsdangerous import BadSignature
from itsdangerous import SignatureExpired
from itsdangerous import URLSafeTimedSerializer
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wrappers import Response

from ...protocol import client_network
from ...protocol import is_local_host
from ...protocol.hosts import check_request_host
from ...runtime import concurrency as _concurrency
from ...runtime.supervisor import ensure_supervisor
from .clients import RegistrationClosed
from .clients import redirect_host
from .grants import TemporarilyUnavailableError
from .grants import User
from .grants import requested_resource
from .registration import app_server
from .registration import registration
from .storage import unreachable_errors

logger = logging.getLogger("flask_mcp")
WELL_KNOWN = "/.well-known/oauth-authorization-server"
CSRF_SALT = "flask-mcp-oauth-consent"


#: What a cross-origin page may read of the answers of the endpoints a browser-based client
#: calls itself (RFC 9700, "Usage of CORS"): any origin, as no cookie is involved.
CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Expose-Headers": "WWW-Authenticate, Retry-After",
}
#: What a preflight of theirs is told: the client authenticates with ``Authorization``
#: (Basic, or a registration's initial access token), registers with a JSON body, and MCP
#: clients send ``MCP-Protocol-Version`` when they read the metadata.
PREFLIGHT_HEADERS = {
    "Access-Control-Allow-Headers": "Authorization, Content-Type, MCP-Protocol-Version",
    "Access-Control-Max-Age": "86400",
}


def _cross_origin(response: Response) -> Response:
    """Let browser-based clients read the metadata, the keys, and the answers of the token,
    revocation and registration endpoints, and answer their preflights.

    Not the authorization endpoint: the browser is sent there, no page reads it, and
    RFC 9700 forbids CORS on it.
    """
    if request.endpoint is None or request.endpoint == "mcp_oauth.authorize":
        return response
    response.headers.update(CORS_HEADERS)
    if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
        response.headers.update(PREFLIGHT_HEADERS)
        response.headers["Access-Control-Allow-Methods"] = response.headers.get("Allow", "")
    return response


def _no_store(response: Response) -> Response:
    response.headers["Cache-Control"] = "no-store"
    response.headers["Pragma"] = "no-cache"
    return response


def metadata() -> Response:
    """RFC 8414 Authorization Server Metadata."""
    return jsonify(app_server().metadata())


def jwks() -> Response:
    """The public signing keys (previous, current, next)."""
    response = jsonify(app_server().keys.jwks())
    response.headers["Cache-Control"] = "public, max-age=300"
    return response


def _serializer() -> URLSafeTimedSerializer:
    secret = current_app.secret_key
    if not secret:
        raise RuntimeError(
            "The consent page needs the app's SECRET_KEY (it signs the CSRF token): "
            "set app.config['SECRET_KEY'] to a long random value."
        )
    return URLSafeTimedSerializer(secret, salt=CSRF_SALT)


def _request_digest() -> str:
    """A digest of the authorization request's parameters (the CSRF token is bound to it)."""
    return hashlib.sha256(request.query_string).hexdigest()


def _error_page(error: str, description: str, status: int = 400) -> Response:
    body = render_template("mcp_oauth/error.html", error=error, description=description)
    return _no_store(Response(body, status=status, mimetype="text/html"))


def _login_redirect() -> Response:
    view = app_server().settings.login_view
    if view is None:
        manager = getattr(current_app, "login_manager", None)
        view = getattr(manager, "login_view", None)
    if not view:
        return _error_page(
            "login_required",
            "Sign in to the application first; it has no login view configured "
            "(set MCP_OAUTH_LOGIN_VIEW or Flask-Login's login_manager.login_view).",
            401,
        )
    return redirect(url_for(view, next=request.script_root + request.full_path.rstrip("?")))


def _redirect_identifies_client(redirect_uri: object) -> bool:
    """Tell whether only the client itself can receive a code at ``redirect_uri``.

    An ``https://`` URI on a public host is the client's own. A loopback port or a
    private-use scheme can be taken by any program on the user's computer under the
    client's id (RFC 8252, section 8.6; MCP's "Localhost Redirect URI Risks"): a
    consent given before proves nothing about who asks now, so the page is shown,
    with the host, each time.
    """
    parts = urlsplit(str(redirect_uri))
    return parts.scheme == "https" and not is_local_host(parts.hostname)


def authorize() -> Response | t.Any:
    """The authorization endpoint: log in, show the consent page, issue a code."""
    registered = registration()
    server, extension = registered.app_server, registered.extension
    user_id = extension.current_user_id()
    try:
        grant = server.authlib.get_consent_grant(end_user=User(user_id) if user_id else None)
    except OAuth2Error as error:
        if getattr(error, "redirect_uri", None):
            response = server.authlib.handle_error_response(None, error)
            response.location = add_params_to_uri(response.location, {"iss": server.issuer})
            return response
        response = _error_page(error.error, error.get_error_description() or error.error)
        if isinstance(error, TemporarilyUnavailableError):
            response.status_code = error.status_code
            response.headers["Retry-After"] = str(error.retry_after)
        return response
    if user_id is None:
        return _login_redirect()
    client = grant.client
    scopes = [s for s in (grant.request.scope or "").split() if s]
    user = User(user_id)
    if request.method == "POST":
        try:
            signed = _serializer().loads(
                request.form.get("csrf_token", ""), max_age=int(server.settings.consent_max_age)
            )
        except SignatureExpired:
            return _error_page(
                "invalid_request",
                "The consent form expired (its CSRF token is too old): start again from the "
                "application.",
            )
        except BadSignature:
            return _error_page("invalid_request", "The consent form's CSRF token is not valid.")
        if signed != [user_id, _request_digest()]:
            return _error_page(
                "invalid_request", "The consent form was made for another user or request."
            )
        if request.form.get("decision") != "allow":
            return server.authlib.create_authorization_response(grant=grant, grant_user=None)
        server.remember_consent(user_id, client, scopes)
        return server.authlib.create_authorization_response(grant=grant, grant_user=user)
    # A consent is remembered per client, not per resource: with one resource per tenant
    # (MCP_AUTH_RESOURCE with placeholders) a consent to one tenant's endpoint would
    # grant the others', so the user is asked each time.
    granted = (
        None
        if server.resources is not None or not _redirect_identifies_client(grant.redirect_uri)
        else server.consented_scopes(user_id, client.get_client_id())
    )
    if granted is not None and set(scopes) <= granted:
        return server.authlib.create_authorization_response(grant=grant, grant_user=user)
    token = _serializer().dumps([user_id, _request_digest()])
    descriptions = extension.scope_descriptions
    body = render_template(
        "mcp_oauth/consent.html",
        client=client,
        client_name=client.client_name,
        client_id=client.get_client_id(),
        client_host=redirect_host(str(grant.redirect_uri)),
        loopback=is_local_host(urlsplit(str(grant.redirect_uri)).hostname),
        scopes=[(scope, descriptions.get(scope, "")) for scope in scopes],
        csrf_token=token,
        resource=requested_resource(t.cast(t.Any, server), request.args),
    )
    response = _no_store(Response(body, mimetype="text/html"))
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Content-Security-Policy"] = "frame-ancestors 'none'"
    return response


def _refused(
    status: int,
    description: str,
    retry_after: int | None = None,
    error: str = "temporarily_unavailable",
) -> Response:
    """An OAuth error answer (``error``, by default ``temporarily_unavailable``) that no
    token or client follows."""
    response = jsonify(error=error, error_description=description)
    response.status_code = status
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return _no_store(response)


def _over_limit(endpoint: str) -> Response | None:
    """Count the request against the client address's limit (an IPv6 one: its /64); 429 past it."""
    refusal = app_server().limits.check(endpoint, client_network(request.remote_addr))
    if refusal is None:
        return None
    return _refused(
        429,
        f"Too many requests to this endpoint from your address (at most {refusal.limit}): "
        f"retry in {refusal.retry_after} seconds.",
        refusal.retry_after,
    )


def token() -> Response:
    """The token endpoint (authorization code, refresh)."""
    refused = _over_limit("token")
    if refused is not None:
        return refused
    return t.cast(Response, app_server().authlib.create_token_response())


def revoke() -> Response:
    """RFC 7009 token revocation."""
    return t.cast(Response, app_server().authlib.create_endpoint_response("revocation"))


def register() -> Response:
    """RFC 7591 Dynamic Client Registration, within ``MCP_OAUTH_MAX_CLIENTS``."""
    refused = _over_limit("register")
    if refused is not None:
        return refused
    try:
        return t.cast(
            Response, app_server().authlib.create_endpoint_response("client_registration")
        )
    except RegistrationClosed as closed:
        return _refused(
            503,
            f"This server keeps at most {closed.most} registered clients and has that many: "
            "registration is closed until some expire (the operator may raise "
            "MCP_OAUTH_MAX_CLIENTS).",
        )


#: The largest request body an endpoint reads: a registration, a token or revocation
#: request and a consent form are a few KiB; anyone may send one, unauthenticated.
MAX_REQUEST_BYTES = 64 * 1024
#: The environ key of gunicorn's client connection.
_GUNICORN = "gunicorn.socket"


def _check_host() -> None:
    """Refuse a ``Host`` the MCP endpoint refuses, as every route beside it does (421).

    The issuer's host is accepted too (:func:`~.server.issuer_hosts`).
    """
    check_request_host(request.environ, app_server().allowed_hosts)


def _bound_the_body() -> Response | None:
    """Read at most :data:`MAX_REQUEST_BYTES` of a body (less if the app's
    ``MAX_CONTENT_LENGTH`` says so): Flask reads a JSON body whole otherwise.

    A body without ``Content-Length`` (chunked) is read here: Werkzeug stops at the
    bound without a word (the JSON then fails to parse), so one more byte is asked
    for, which raises :exc:`~werkzeug.exceptions.RequestEntityTooLarge` past it.
    uWSGI's ``wsgi.input`` reads a chunked body as empty: it is read with
    ``uwsgi.chunked_read()`` first, as the MCP endpoint reads it.

    On gunicorn, which reads a body with no timeout, a POST's body is read here under
    the MCP endpoint's watch (:class:`~flask_mcp.runtime.runs.PendingReads`): the app's
    supervisor ends a read that waited ``MCP_READ_TIMEOUT``, and the request is answered
    408. A client that sent less than its ``Content-Length``, or a chunked body without
    its last chunk, held its thread (or greenlet) for as long as it kept the connection
    open.
    """
    most = request.max_content_length
    request.max_content_length = MAX_REQUEST_BYTES if most is None else min(most, MAX_REQUEST_BYTES)
    if request.method != "POST":
        return None
    environ = request.environ
    if request.content_length is None and _concurrency.uwsgi_chunked(environ):
        try:
            body = _concurrency.read_uwsgi_chunked(environ, request.max_content_length + 1)
        except _concurrency.ChunkedBodyUnread as unread:
            abort(_refused(unread.status, unread.reason, error="invalid_request"))
        environ["wsgi.input"] = io.BytesIO(body)
        environ["wsgi.input_terminated"] = True  # Werkzeug bounds a terminated input
    sock = environ.get(_GUNICORN)
    state = None if sock is None else app_server().mcp_state()
    if state is None:  # not gunicorn, or no MCP server (whose supervisor watches) on the app
        if request.content_length is None:
            request.get_data(cache=True)  # what the endpoint reads, from this copy
            request.stream.read(1)
        return None
    ensure_supervisor(state)  # a worker that served no MCP request has not started it
    watch = state.reads.start(sock)
    try:
        request.get_data(cache=True)  # what the endpoint reads, from this copy
        if request.content_length is None:
            request.stream.read(1)
    except Exception:
        if not state.reads.ended(watch):
            raise
    finally:
        cut = state.reads.finish(watch)
    if not cut:
        return None
    return _body_refused(
        408,
        f"The request body did not arrive within {state.settings.read_timeout:g} s "
        "(MCP_READ_TIMEOUT); send the whole body, as long as its Content-Length says.",
    )


def _too_large(error: RequestEntityTooLarge) -> Response:
    """Say the body is too large, as the endpoint answers its other errors."""
    return _body_refused(
        413,
        f"The request body is larger than {request.max_content_length} bytes, more than "
        "an OAuth request needs: send only the parameters of the request.",
    )


def _body_refused(status: int, description: str) -> Response:
    """Refuse a request for its body: the consent form as a page, the rest as OAuth errors."""
    if request.endpoint == "mcp_oauth.authorize":
        return _error_page("invalid_request", description, status)
    return _refused(status, description, error="invalid_request")


#: What to do about a request Authlib refused for coming over plain ``http``.
INSECURE_TRANSPORT = (
    "The authorization server is reached over https only, and this request came over "
    "http. Behind a proxy that ends TLS, wrap the app in werkzeug's ProxyFix(x_proto=1) so "
    "that it sees the https the client used; in local development, use a localhost name "
    "or set AUTHLIB_INSECURE_TRANSPORT=1."
)


def _insecure_transport(error: InsecureTransportError) -> Response:
    """Say how to fix a request Authlib refused as plain ``http`` (its own error is a 500)."""
    logger.warning(
        "Answered %s %s with 400: it came over http under a name that is not local (%s); "
        "behind a TLS proxy, use ProxyFix(x_proto=1).",
        request.method,
        request.path,
        request.host,
    )
    if request.endpoint == "mcp_oauth.authorize":
        return _error_page("invalid_request", INSECURE_TRANSPORT)
    return _refused(400, INSECURE_TRANSPORT, error="invalid_request")


def _unreachable(error: Exception) -> Response:
    """Say the storage does not answer and when to retry; where and why go to the log."""
    logger.warning(
        "Answered %s %s with 503: the authorization server's storage is unavailable: %s",
        request.method,
        request.path,
        error,
    )
    description = "The authorization server's storage is unavailable; retry in a few seconds."
    if request.endpoint == "mcp_oauth.authorize":
        response = _error_page("temporarily_unavailable", description, 503)
        response.headers["Retry-After"] = "2"
        return response
    return _refused(503, description, 2)


def make_blueprint(prefix: str, issuer_path: str, storage: object = None) -> Blueprint:
    """Return the blueprint of the endpoints, for one app.

    :param storage: the app's storage: the errors it names as its own "does not
        answer now" are answered with 503 too (see :func:`.storage.unreachable_errors`).
    """
    blueprint = Blueprint("mcp_oauth", __name__, template_folder="templates")
    blueprint.before_request(_check_host)
    blueprint.before_request(_bound_the_body)
    blueprint.after_request(_cross_origin)
    blueprint.register_error_handler(RequestEntityTooLarge, _too_large)
    blueprint.register_error_handler(InsecureTransportError, _insecure_transport)
    for error in unreachable_errors(storage):
        blueprint.register_error_handler(error, _unreachable)
    paths = dict.fromkeys([WELL_KNOWN, WELL_KNOWN + issuer_path.rstrip("/")])
    for number, path in enumerate(paths):
        blueprint.add_url_rule(path, f"metadata_{number}", metadata)
    blueprint.add_url_rule(f"{prefix}/authorize", "authorize", authorize, methods=["GET", "POST"])
    blueprint.add_url_rule(f"{prefix}/token", "token", token, methods=["POST"])
    blueprint.add_url_rule(f"{prefix}/revoke", "revoke", revoke, methods=["POST"])
    blueprint.add_url_rule(f"{prefix}/register", "register", register, methods=["POST"])
    blueprint.add_url_rule(f"{prefix}/jwks", "jwks", jwks)
    return blueprint


__all__ = ["CORS_HEADERS", "PREFLIGHT_HEADERS", "WELL_KNOWN", "make_blueprint"]
