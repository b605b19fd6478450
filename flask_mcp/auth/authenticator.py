"""Checking bearer tokens and scopes, and the challenges that refuse a request.

An :class:`Authenticator` is made once per app from plain values: the settings,
the authorizer and the signal sender. It never looks anything up: the transport
hands it the request to check and the dispatcher hands it the caller and the
scopes a call needs.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import typing as t
from collections.abc import Mapping

from werkzeug.http import quote_header_value

from .. import signals
from ..errors import INVALID_REQUEST as INVALID_REQUEST_CODE
from ..errors import BackendUnavailable
from ..errors import MCPError
from ..errors import MCPHTTPError
from .info import INSUFFICIENT_SCOPE
from .info import INVALID_REQUEST
from .info import INVALID_TOKEN
from .info import STATUS
from .info import TEMPORARILY_UNAVAILABLE
from .info import AuthError
from .info import AuthInfo
from .info import Authorizer
from .info import auth_info_from_claims
from .metadata import auth_enabled
from .metadata import canonical_resource
from .metadata import check_audiences
from .metadata import fill_path_args
from .metadata import metadata_document
from .metadata import metadata_url

if t.TYPE_CHECKING:
    from ..config import Settings

logger = logging.getLogger("flask_mcp")

_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_UNSAFE = re.compile(r'[^\x20-\x7e]|["\\]')
_INTERNAL = "Internal error while checking the access token. The server log has the details."


class Credentials(t.Protocol):
    """What :meth:`Authenticator.verify` reads of a request (a Werkzeug ``Request`` has it)."""

    @property
    def headers(self) -> t.Any: ...


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
        super().__init__(
            INVALID_REQUEST_CODE, challenge.description or "", http_status=challenge.http_status
        )
        self.challenge = challenge
        #: The HTTP headers of the refusal (``WWW-Authenticate``).
        self.headers = dict(challenge.extra_headers)


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
    """Checks the bearer tokens of one app's requests, their scopes, and builds challenges.

    :param authorizer: checks a token (see :data:`~flask_mcp.auth.Authorizer`).
    :param settings: the app's settings (``MCP_AUTH_*``).
    :param resource_name: ``resource_name`` of the metadata document.
    :param sender: the sender of :data:`~flask_mcp.signals.auth_failed` (the app).
    """

    def __init__(
        self,
        authorizer: Authorizer,
        settings: Settings,
        resource_name: str,
        *,
        sender: t.Any = None,
    ) -> None:
        self.authorizer = authorizer
        self.settings = settings
        self.sender = sender
        #: The canonical URI of the server (``MCP_AUTH_RESOURCE``), the tokens' audience.
        self.resource = canonical_resource(t.cast(str, settings.auth_resource))
        #: Where clients find the RFC 9728 metadata (sent in ``resource_metadata``).
        self.metadata_url = metadata_url(self.resource)
        self.authorization_servers = tuple(settings.auth_authorization_servers or ())
        self.required_scopes = settings.auth_required_scopes
        self.resource_name = resource_name
        #: Leave out of list results what the caller's scopes do not allow.
        self.hide_unauthorized = settings.auth_hide_unauthorized

    def metadata(self, path_args: t.Mapping[str, t.Any] | None = None) -> dict[str, t.Any]:
        """Return the Protected Resource Metadata document.

        :param path_args: the values of ``MCP_PATH``'s URL variables in the request; they
            fill the same ``<name>`` placeholders in ``MCP_AUTH_RESOURCE``
            (``https://mcp.example.com/t/<tenant>/mcp``), one resource per tenant.
        """
        resource = fill_path_args(self.resource, path_args or {})
        return metadata_document(self.settings, resource, self.resource_name)

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
        signals.send(signals.auth_failed, self.sender, kind=kind, description=challenge.reason)
        return challenge

    # -- tokens --------------------------------------------------------------------

    def verify(self, request: Credentials) -> AuthInfo:
        """Return the caller of ``request``, or raise an :class:`AuthChallenge` (no signal)."""
        header = request.headers.get("Authorization")
        if not header:
            raise self.challenge(None, "no access token")
        # as Werkzeug's ``request.authorization`` reads it, without building the object
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer":
            raise self.challenge(None, "not a Bearer token")
        token = token.strip(" \t")
        if not token or not _B64TOKEN.fullmatch(token):
            raise self.challenge(INVALID_REQUEST, "malformed header; send 'Bearer <token>'")
        info = self._call_authorizer(token, request)
        implied = self.settings.auth_implied_scopes
        if implied:
            scopes = _expand(info.scopes, implied)
            if scopes != info.scopes:
                info = dataclasses.replace(info, scopes=scopes)
        missing = [scope for scope in self.required_scopes if scope not in info.scopes]
        if missing:
            raise self.challenge(
                INSUFFICIENT_SCOPE, f"the token lacks {' '.join(missing)}", self.required_scopes
            )
        return info

    def _call_authorizer(self, token: str, request: Credentials) -> AuthInfo:
        try:
            result = self.authorizer(token, t.cast(t.Any, request))
            if isinstance(result, AuthInfo):  # the usual answer, before the slower ABC check
                return result
            if isinstance(result, Mapping):
                result = auth_info_from_claims(result)
        except AuthError as exc:
            reason = exc.description or exc.kind
            raise self.challenge(exc.kind, reason, exc.scopes or None) from None
        except (MCPHTTPError, BackendUnavailable):  # a store that does not answer: 503
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

    def authenticate(self, request: Credentials) -> AuthInfo:
        """Return who is calling, or log, signal and raise an :class:`AuthChallenge`."""
        try:
            return self.verify(request)
        except AuthChallenge as exc:
            raise self._refused(self._at_path(exc, getattr(request, "view_args", None))) from None

    def _at_path(
        self, challenge: AuthChallenge, path_args: t.Mapping[str, t.Any] | None
    ) -> AuthChallenge:
        """Point ``resource_metadata`` at the tenant's document when ``MCP_AUTH_RESOURCE`` holds
        placeholders of ``MCP_PATH``'s URL variables."""
        filled = fill_path_args(self.metadata_url, path_args or {})
        if filled != self.metadata_url:
            header = challenge.extra_headers["WWW-Authenticate"]
            challenge.extra_headers["WWW-Authenticate"] = header.replace(self.metadata_url, filled)
            challenge.description = (challenge.description or "").replace(self.metadata_url, filled)
        return challenge

    # -- scopes ----------------------------------------------------------------------

    def allows(self, info: AuthInfo | None, scopes: t.Iterable[str]) -> bool:
        """Tell whether ``info`` grants every scope of ``scopes``."""
        if info is None:
            return False
        granted = info.scopes
        return all(scope in granted for scope in scopes)

    def require(
        self,
        info: AuthInfo | None,
        scopes: t.Sequence[str],
        what: str,
        request_id: t.Any = None,
        path_args: t.Mapping[str, t.Any] | None = None,
    ) -> None:
        """Raise :class:`AuthRefused` unless ``info`` grants ``scopes``; ``what`` names the call."""
        if info is None:  # fail closed: a call that skipped authentication
            challenge = self.challenge(None, "no caller", request_id=request_id)
            raise AuthRefused(self._refused(self._at_path(challenge, path_args)))
        if self.allows(info, scopes):
            return
        needed = tuple(dict.fromkeys([*self.required_scopes, *scopes]))
        reason = f"{what} needs {' '.join(needed)}"
        challenge = self.challenge(INSUFFICIENT_SCOPE, reason, needed, request_id=request_id)
        raise AuthRefused(self._refused(self._at_path(challenge, path_args)))


def build_authenticator(
    authorizer: Authorizer | None,
    settings: Settings,
    *,
    resource_name: str,
    sender: t.Any = None,
) -> Authenticator | None:
    """Return an app's authenticator, or ``None`` when authorization is off.

    Without an authorizer of the app's own, the ``MCP_AUTH_JWT_*`` settings
    build a :class:`~flask_mcp.auth.jwt_authorizer.JWTAuthorizer`. An authorizer
    with a ``with_defaults(issuer=..., audience=...)`` method (a JWT authorizer
    made in code) gets the issuers and the audience it was not given from the
    settings, here, once.

    :raises ValueError: the ``MCP_AUTH_*`` configuration is incomplete or
        unsafe, or lets a token for one endpoint of ``MCP_PATH``'s URL variables (one
        tenant's) in at another's; the message says how to fix it.
    """
    if not auth_enabled(settings, authorizer is not None):
        return None
    resource = canonical_resource(t.cast(str, settings.auth_resource))
    issuer = tuple(settings.auth_authorization_servers or ())
    if authorizer is None:
        from .jwt_authorizer import JWTAuthorizer

        authorizer = JWTAuthorizer.from_settings(settings, issuer=issuer, audience=(resource,))
        check_audiences(authorizer.audience, resource, "MCP_AUTH_JWT_AUDIENCE")
    else:
        with_defaults = getattr(authorizer, "with_defaults", None)
        if callable(with_defaults):
            authorizer = with_defaults(issuer=issuer, audience=(resource,))
            audience = getattr(authorizer, "audience", ())
            check_audiences(audience, resource, f"The authorizer ({type(authorizer).__name__})")
    return Authenticator(t.cast(Authorizer, authorizer), settings, resource_name, sender=sender)


def unenforced_scopes(scoped: t.Iterable[str]) -> None:
    """Warn that the ``scopes=`` declared on ``scoped`` (names) are not enforced."""
    names = sorted(scoped)
    if names:
        logger.warning(
            "%s declare scopes=, but authorization is off, so anyone may use them. Set "
            "MCP_AUTH_RESOURCE and an authorizer to enforce scopes.",
            ", ".join(names),
        )


__all__ = [
    "AuthChallenge",
    "AuthRefused",
    "Authenticator",
    "Credentials",
    "build_authenticator",
    "unenforced_scopes",
]
