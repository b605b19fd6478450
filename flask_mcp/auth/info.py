"""Who is calling: :class:`AuthInfo`, the errors an authorizer raises, and token claims."""

from __future__ import annotations

import dataclasses
import typing as t

from ..protocol.hosts import client_network

if t.TYPE_CHECKING:
    from flask import Request

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


def principal_of(auth: AuthInfo | None) -> str | None:
    """Return the principal of ``auth``, or ``None`` for an anonymous caller."""
    return None if auth is None else auth.principal


def client_of(auth: AuthInfo | None, address: str | None) -> str:
    """Return who a request counts against for the per-client bounds.

    The principal when the caller is authenticated, else its network
    (:func:`~flask_mcp.protocol.hosts.client_network`: an IPv6 address stands for its /64).

    :param auth: what the authorizer established, or ``None`` for an anonymous caller.
    :param address: ``REMOTE_ADDR`` (which ``ProxyFix`` sets), or ``None`` (none known).
    """
    if auth is not None and auth.principal:
        return auth.principal
    return f"addr:{client_network(address)}"


__all__ = [
    "INSUFFICIENT_SCOPE",
    "INVALID_REQUEST",
    "INVALID_TOKEN",
    "STATUS",
    "TEMPORARILY_UNAVAILABLE",
    "AuthError",
    "AuthInfo",
    "Authorizer",
    "auth_info_from_claims",
    "client_of",
    "principal_of",
    "scopes_of",
]
