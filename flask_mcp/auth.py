"""OAuth 2.1 resource server: bearer tokens, RFC 9728 metadata, scopes.

Off until configured: set ``MCP_AUTH_RESOURCE`` (the server's canonical URI)
and ``MCP_AUTH_AUTHORIZATION_SERVERS``, and give the server an *authorizer*,
either with ``@mcp.authorizer`` or, for JWT access tokens, with
``MCP_AUTH_JWT_JWKS_URL`` (see :mod:`flask_mcp.jwt_auth`).

An authorizer is called as ``authorizer(token, request)`` for every request to
the MCP endpoint. It returns the token's claims (a dict), an :class:`AuthInfo`,
an error kind such as ``"invalid_token"``, or ``None``; or it raises
:class:`AuthError`. The token never reaches a log, a signal or an error message.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import typing as t

from flask import current_app
from flask import g
from flask import has_app_context
from flask import has_request_context
from flask import request as current_request
from werkzeug.http import quote_header_value

from . import signals
from .auth_metadata import auth_enabled
from .auth_metadata import canonical_resource
from .auth_metadata import metadata_document
from .auth_metadata import metadata_paths
from .auth_metadata import metadata_url
from .auth_metadata import register_metadata_routes
from .config import Settings
from .config import load_settings
from .errors import INVALID_REQUEST as INVALID_REQUEST_CODE
from .errors import MCPError
from .errors import MCPHTTPError

if t.TYPE_CHECKING:
    from flask import Flask
    from flask import Request

    from .dispatcher import Call
    from .extension import MCP
    from .registry import Registry

logger = logging.getLogger("flask_mcp")

INVALID_REQUEST = "invalid_request"
INVALID_TOKEN = "invalid_token"
INSUFFICIENT_SCOPE = "insufficient_scope"
TEMPORARILY_UNAVAILABLE = "temporarily_unavailable"
#: The error kinds an authorizer may answer with (RFC 6750), and their HTTP status.
STATUS = {
    INVALID_REQUEST: 400,
    INVALID_TOKEN: 401,
    INSUFFICIENT_SCOPE: 403,
    TEMPORARILY_UNAVAILABLE: 503,
}
_G_KEY = "_mcp_auth"
_G_CALL = "_mcp_auth_call"
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_UNSAFE = re.compile(r'[^\x20-\x7e]|["\\]')
_INTERNAL = "Internal error while checking the access token. The server log has the details."


@dataclasses.dataclass(frozen=True)
class AuthInfo:
    """What an authorizer established about the caller. Never holds the token itself."""

    #: A stable identifier of the caller (``issuer|subject``); sessions bind to it.
    principal: str
    #: The scopes the token grants, with those that ``MCP_AUTH_IMPLIED_SCOPES`` adds.
    scopes: frozenset[str] = frozenset()
    #: The token's claims (for a JWT, its verified payload).
    claims: dict[str, t.Any] = dataclasses.field(default_factory=dict)
    client_id: str | None = None


class AuthError(Exception):
    """Raised by an authorizer to refuse a token.

    :param kind: ``"invalid_token"`` (401), ``"insufficient_scope"`` (403),
        ``"invalid_request"`` (400) or ``"temporarily_unavailable"`` (503).
    :param description: why, for the client; never include the token.
    :param scopes: for ``insufficient_scope``, the scopes the request needs.
    """

    def __init__(
        self,
        kind: str = INVALID_TOKEN,
        description: str | None = None,
        *,
        scopes: t.Sequence[str] = (),
    ) -> None:
        if kind not in STATUS:
            raise ValueError(f"Unknown auth error kind {kind!r}; use one of {', '.join(STATUS)}.")
        super().__init__(description or kind)
        self.kind = kind
        self.description = description
        self.scopes = tuple(scopes)


class AuthChallenge(MCPHTTPError):
    """A refused request: 400, 401, 403 or 503 with a ``WWW-Authenticate: Bearer`` challenge.

    :attr kind: the RFC 6750 error code, or ``None`` when no usable token was sent.
    :attr reason: the short reason, without the token.
    """

    def __init__(
        self,
        status: int,
        message: str,
        challenge: str,
        kind: str | None,
        reason: str,
        *,
        request_id: t.Any = None,
    ) -> None:
        headers = {"WWW-Authenticate": challenge}
        if status == 503:
            headers["Retry-After"] = "5"
        super().__init__(status, message, request_id=request_id, headers=headers)
        self.kind = kind
        self.reason = reason


class AuthRefused(MCPError):
    """Raised in the dispatcher when the caller lacks the scopes of a tool, resource or prompt.

    Transports answer with :attr:`challenge` (HTTP 403 and its
    ``WWW-Authenticate`` header) when nothing was streamed yet; a stream that
    already started carries the JSON-RPC error instead.
    """

    def __init__(self, challenge: AuthChallenge) -> None:
        status = t.cast(int, challenge.code)
        super().__init__(INVALID_REQUEST_CODE, challenge.description or "", http_status=status)
        self.challenge = challenge
        #: The HTTP headers of the refusal (``WWW-Authenticate``).
        self.headers = dict(challenge.extra_headers)


#: ``authorizer(token, request)`` returns claims, an :class:`AuthInfo`, an error kind or ``None``.
Authorizer = t.Callable[[str, "Request"], t.Any]


def scopes_of(claims: t.Mapping[str, t.Any]) -> frozenset[str]:
    """Return the scopes a token grants: its ``scope`` (RFC 9068) or ``scp`` claim."""
    value = claims.get("scope") or claims.get("scp")
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, (list, tuple)):
        return frozenset(str(item) for item in value)
    return frozenset()


def auth_info_from_claims(claims: t.Mapping[str, t.Any]) -> AuthInfo:
    """Build an :class:`AuthInfo` from token claims; the principal is ``iss|sub``.

    :raises AuthError: the claims name no subject (``sub``, ``client_id`` or ``azp``).
    """
    client_id = claims.get("client_id", claims.get("azp"))
    subject = claims.get("sub") or client_id
    if not isinstance(subject, str) or not subject:
        raise AuthError(INVALID_TOKEN, "the token names no subject (sub)")
    issuer = claims.get("iss")
    return AuthInfo(
        principal=f"{issuer}|{subject}" if isinstance(issuer, str) and issuer else subject,
        scopes=scopes_of(claims),
        claims=dict(claims),
        client_id=client_id if isinstance(client_id, str) else None,
    )


def _expand(scopes: frozenset[str], implied: t.Mapping[str, t.Sequence[str]]) -> frozenset[str]:
    """Add the scopes that broader granted scopes imply, transitively."""
    result, todo = set(scopes), list(scopes)
    while todo:
        for narrower in implied.get(todo.pop(), ()):
            if narrower not in result:
                result.add(narrower)
                todo.append(narrower)
    return frozenset(result)


def _clean(text: str, limit: int = 200) -> str:
    """Make ``text`` fit a quoted header parameter (RFC 6750 ``error_description``)."""
    return _UNSAFE.sub("'", text)[:limit]


class Authenticator:
    """Checks the bearer tokens of one app's requests, their scopes, and builds challenges."""

    def __init__(self, authorizer: Authorizer, settings: Settings, resource_name: str) -> None:
        self.authorizer = authorizer
        self.settings = settings
        #: The canonical URI of the server (``MCP_AUTH_RESOURCE``), the tokens' audience.
        self.resource = canonical_resource(t.cast(str, settings.auth_resource))
        #: Where clients find the RFC 9728 metadata (sent in ``resource_metadata``).
        self.metadata_url = metadata_url(self.resource)
        self.authorization_servers = tuple(settings.auth_authorization_servers or ())
        self.required_scopes = settings.auth_required_scopes
        self.resource_name = resource_name

    def metadata(self) -> dict[str, t.Any]:
        """Return the Protected Resource Metadata document."""
        return metadata_document(self.settings, self.resource, self.resource_name)

    def register_routes(self, app: Flask, mcp_path: str) -> None:
        """Serve the metadata document on ``app`` at its well-known paths."""
        register_metadata_routes(app, self.metadata, metadata_paths(self.resource, mcp_path))

    def challenge(
        self,
        kind: str | None,
        reason: str = "",
        scopes: t.Sequence[str] | None = None,
        *,
        request_id: t.Any = None,
    ) -> AuthChallenge:
        """Return the refusal for ``kind`` (``None``: no usable credentials were sent)."""
        if scopes is None:
            scopes = self.required_scopes or self.settings.auth_scopes_supported or ()
        reason = _clean(reason)
        params = {"error": kind} if kind is not None else {}
        if scopes:
            params["scope"] = " ".join(scopes)
        params["resource_metadata"] = self.metadata_url
        if kind is not None and reason:
            params["error_description"] = reason
        header = "Bearer " + ", ".join(
            f"{key}={quote_header_value(value, allow_token=False)}" for key, value in params.items()
        )
        where = f"the metadata at {self.metadata_url} names the authorization server"
        if kind is None:
            message = f"Unauthorized: send 'Authorization: Bearer <access token>'; {where}."
        elif kind == INVALID_TOKEN:
            message = f"Unauthorized: the access token was rejected ({reason}); {where}."
        elif kind == INSUFFICIENT_SCOPE:
            message = (
                f"Forbidden: this request needs the scopes {params.get('scope', '')!r}. Get a "
                "token that grants them (step-up authorization) and retry."
            )
        elif kind == TEMPORARILY_UNAVAILABLE:
            message = f"Service Unavailable: the token cannot be checked now ({reason}); retry."
        else:
            message = f"Bad Request: {reason}."
        return AuthChallenge(
            STATUS[kind or INVALID_TOKEN], message, header, kind, reason, request_id=request_id
        )

    def _refused(self, challenge: AuthChallenge) -> AuthChallenge:
        """Log and signal a refusal; return it for raising."""
        kind = challenge.kind or "missing_token"
        logger.info("Refused an MCP request: %s (%s)", kind, challenge.reason)
        app = current_app._get_current_object()  # type: ignore[attr-defined]
        signals.send(signals.auth_failed, app, kind=kind, description=challenge.reason)
        return challenge

    # -- tokens --------------------------------------------------------------------

    def verify(self, request: Request) -> AuthInfo:
        """Return the caller of ``request``, or raise an :class:`AuthChallenge` (no signal)."""
        if not request.headers.get("Authorization"):
            raise self.challenge(None, "no access token")
        credentials = request.authorization
        if credentials is None or credentials.type != "bearer":
            raise self.challenge(None, "not a Bearer token")
        token = credentials.token
        if not token or not _B64TOKEN.fullmatch(token):
            raise self.challenge(INVALID_REQUEST, "malformed header; send 'Bearer <token>'")
        info = self._call_authorizer(token, request)
        scopes = _expand(info.scopes, self.settings.auth_implied_scopes)
        info = dataclasses.replace(info, scopes=scopes)
        missing = [scope for scope in self.required_scopes if scope not in info.scopes]
        if missing:
            raise self.challenge(
                INSUFFICIENT_SCOPE, f"the token lacks {' '.join(missing)}", self.required_scopes
            )
        return info

    def _call_authorizer(self, token: str, request: Request) -> AuthInfo:
        try:
            result = self.authorizer(token, request)
            if isinstance(result, t.Mapping):
                result = auth_info_from_claims(result)
        except AuthError as exc:
            reason = exc.description or exc.kind
            raise self.challenge(exc.kind, reason, exc.scopes or None) from None
        except MCPHTTPError:
            raise
        except Exception:
            logger.exception("The MCP authorizer raised; refusing the request.")
            raise MCPHTTPError(500, _INTERNAL) from None
        if isinstance(result, AuthInfo):
            return result
        if isinstance(result, str) and result in STATUS:
            raise self.challenge(result, result.replace("_", " "))
        if result is None or result is False:
            raise self.challenge(INVALID_TOKEN, "the token is not valid")
        logger.error(
            "The MCP authorizer returned a %s; return an AuthInfo, a dict of claims, an error kind "
            "(%s) or None.",
            type(result).__name__,
            ", ".join(STATUS),
        )
        raise MCPHTTPError(500, _INTERNAL)

    def authenticate(self, request: Request) -> AuthInfo:
        """Return who is calling, or log, signal and raise an :class:`AuthChallenge`."""
        try:
            info = self.verify(request)
        except AuthChallenge as exc:
            raise self._refused(exc) from None
        setattr(g, _G_KEY, info)
        return info

    # -- scopes ----------------------------------------------------------------------

    def allows(self, info: AuthInfo | None, scopes: t.Iterable[str]) -> bool:
        """Tell whether ``info`` grants every scope of ``scopes``."""
        return info is not None and set(scopes) <= info.scopes

    def authorize(self, scopes: t.Sequence[str], call: Call) -> None:
        """Raise :class:`AuthRefused` (403 ``insufficient_scope``) unless ``scopes`` are held."""
        if has_app_context():  # for current_auth() and require_scopes() in the handler
            setattr(g, _G_KEY, call.auth)
            setattr(g, _G_CALL, (call.method, call.request_id, tuple(scopes)))
        self.require(call.auth, scopes, call.method, call.request_id)

    def require(
        self, info: AuthInfo | None, scopes: t.Sequence[str], what: str, request_id: t.Any = None
    ) -> None:
        """Raise :class:`AuthRefused` unless ``info`` grants ``scopes``; ``what`` names the call."""
        if info is None:  # fail closed: a call that skipped authentication
            challenge = self.challenge(None, "no caller", request_id=request_id)
            raise AuthRefused(self._refused(challenge))
        if self.allows(info, scopes):
            return
        needed = tuple(dict.fromkeys([*self.required_scopes, *scopes]))
        reason = f"{what} needs {' '.join(needed)}"
        challenge = self.challenge(INSUFFICIENT_SCOPE, reason, needed, request_id=request_id)
        raise AuthRefused(self._refused(challenge))

    def filter_listing(
        self, registry: Registry, kind: str, result: dict[str, t.Any], call: Call
    ) -> dict[str, t.Any]:
        """Drop the entries of a list result whose scopes the caller lacks."""
        if not self.settings.auth_hide_unauthorized:
            return result
        records, field = {
            "tools": (registry.tools, "name"),
            "resources": (registry.resources, "uri"),
            "resourceTemplates": (registry.templates, "uriTemplate"),
            "prompts": (registry.prompts, "name"),
        }[kind]
        kept = []
        for item in result.get(kind, []):
            record = t.cast("dict[str, t.Any]", records).get(item.get(field))
            if record is not None and self.allows(call.auth, record.scopes):
                kept.append(item)
        return {**result, kind: kept}


def build_authenticator(
    mcp: MCP, app: Flask, settings: Settings | None = None
) -> Authenticator | None:
    """Return the app's authenticator, or ``None`` when authorization is off.

    :raises ValueError: the ``MCP_AUTH_*`` configuration is incomplete or
        unsafe; the message says how to fix it.
    """
    settings = settings if settings is not None else load_settings(app.config)
    authorizer = getattr(mcp, "_authorizer", None)
    if not auth_enabled(settings, authorizer is not None):
        return None
    if authorizer is None:
        from .jwt_auth import JWTAuthorizer

        authorizer = JWTAuthorizer.from_settings(settings)
    return Authenticator(authorizer, settings, mcp.server_info.get("title") or mcp.name)


def warn_unenforced_scopes(registry: Registry) -> None:
    """Warn that ``scopes=`` declared on tools, resources or prompts are not enforced."""
    kinds = (registry.tools, registry.resources, registry.templates, registry.prompts)
    names = [name for records in kinds for name, record in records.items() if record.scopes]
    if names:
        logger.warning(
            "%s declare scopes=, but authorization is off, so anyone may use them. Set "
            "MCP_AUTH_RESOURCE and an authorizer to enforce scopes.",
            ", ".join(sorted(names)),
        )


def current_authenticator() -> Authenticator | None:
    """Return the authenticator of the current app, or ``None`` when authorization is off."""
    if not has_app_context():
        return None
    mcp = current_app.extensions.get("mcp")
    if mcp is None:
        return None
    try:
        return t.cast("Authenticator | None", mcp.state().authenticator)
    except RuntimeError:
        return None


def require_scopes(*scopes: str) -> None:
    """Refuse the current call unless the caller holds ``scopes``: a step-up decided at run time.

    Call it in a tool, resource or prompt handler, for example when the
    arguments ask for more than the declared ``scopes=``. Before anything is
    streamed the client gets HTTP 403 with an ``insufficient_scope``
    challenge; afterwards, a JSON-RPC error. Does nothing when authorization
    is off.

    :raises AuthRefused: the caller lacks a scope.
    """
    authenticator = current_authenticator()
    if authenticator is None:
        return
    method, request_id, declared = g.get(_G_CALL, ("this call", None, ()))
    needed = tuple(dict.fromkeys([*declared, *scopes]))  # one challenge for the whole call
    authenticator.require(current_auth(), needed, method, request_id)


def current_auth() -> AuthInfo | None:
    """Return who is calling, in MCP handlers and in any view of the app.

    In a view outside the MCP endpoint the request's bearer token is checked
    on first use; a missing or invalid token gives ``None``.
    """
    if not has_app_context():
        return None
    if _G_KEY in g:
        return t.cast("AuthInfo | None", g.get(_G_KEY))
    info = None
    authenticator = current_authenticator()
    if has_request_context() and authenticator is not None:
        try:
            info = authenticator.verify(current_request)
        except MCPHTTPError:
            info = None
    setattr(g, _G_KEY, info)
    return info


__all__ = [
    "AuthChallenge",
    "AuthError",
    "AuthInfo",
    "AuthRefused",
    "Authenticator",
    "Authorizer",
    "auth_info_from_claims",
    "build_authenticator",
    "current_auth",
    "current_authenticator",
    "require_scopes",
    "scopes_of",
]
