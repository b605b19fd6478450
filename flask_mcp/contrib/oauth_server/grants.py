"""The grants and endpoints, on Authlib: authorization code with PKCE, refresh, revocation.

Tokens belong to a *family*: the tokens issued from one authorization code and
every refresh after it. A family is what gets revoked: revoking any of its
tokens (RFC 7009), redeeming its code a second time, presenting one of its used
refresh tokens again (reuse detection: the token was stolen, or the client is
broken), or the user withdrawing their consent. Access tokens carry their family
in the ``fid`` claim, and the resource server refuses a token whose family is
revoked, in every worker (the revocation is a record in the shared storage).

Codes and refresh tokens are stored under their SHA-256, never in clear, and are
redeemed atomically (:meth:`~.storage.Storage.redeem_grant`): one redemption wins.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
import time
import typing as t

import jwt
from authlib.oauth2.rfc6749 import TokenMixin
from authlib.oauth2.rfc6749 import grants
from authlib.oauth2.rfc6749.errors import InvalidGrantError
from authlib.oauth2.rfc6749.errors import InvalidRequestError
from authlib.oauth2.rfc6749.errors import OAuth2Error
from authlib.oauth2.rfc7009 import RevocationEndpoint as _RevocationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge

if t.TYPE_CHECKING:
    from .storage import Storage


#: Authlib's loggers that write each token they issue, in clear, at DEBUG
#: (``"Issue token %r to %r"``): the grants this server uses.
AUTHLIB_TOKEN_LOGGERS = (
    "authlib.oauth2.rfc6749.grants.authorization_code",
    "authlib.oauth2.rfc6749.grants.refresh_token",
)
#: The fields of a token response that are credentials.
_SECRET_FIELDS = frozenset({"access_token", "refresh_token", "id_token"})


class RedactIssuedTokens(logging.Filter):
    """Replace the credentials of Authlib's ``Issue token`` records with ``"<redacted>"``.

    The record stays (its scope, lifetime and client help a debugging operator); an
    access or refresh token in a log is one anyone reading the log can use.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact the token dict among the record's arguments; keep the record."""
        args = record.args
        if isinstance(args, tuple) and any(isinstance(arg, dict) for arg in args):
            record.args = tuple(
                {k: "<redacted>" if k in _SECRET_FIELDS else v for k, v in arg.items()}
                if isinstance(arg, dict)
                else arg
                for arg in args
            )
        return True


def redact_authlib_token_logs() -> None:
    """Put :class:`RedactIssuedTokens` on Authlib's token loggers, once."""
    for name in AUTHLIB_TOKEN_LOGGERS:
        found = logging.getLogger(name)
        if not any(isinstance(f, RedactIssuedTokens) for f in found.filters):
            found.addFilter(RedactIssuedTokens())


redact_authlib_token_logs()


class Lifetimes(t.Protocol):
    """The setting the grants read (:class:`~.server.OAuthSettings` has it)."""

    code_lifetime: float


class AppServer(t.Protocol):
    """What the grants need of :class:`~.server.AppServer` (which imports them)."""

    storage: Storage
    settings: Lifetimes
    resource: str
    resources: re.Pattern[str] | None

    def canonical(self, resource: str) -> str: ...

    def owns(self, resource: str) -> bool: ...

    def issue_tokens(
        self,
        *,
        client: t.Any,
        user_id: str,
        scope: str,
        family: str,
        refresh_expires_at: float | None = None,
        refresh_scope: str | None = None,
        resource: str | None = None,
    ) -> dict[str, t.Any]: ...

    def decode_access_token(self, token: str, *, verify_exp: bool = True) -> dict[str, t.Any]: ...

    def revoke_family(self, family: str) -> None: ...

    def family_revoked(self, family: str) -> bool: ...


class InvalidTargetError(OAuth2Error):  # type: ignore[misc]
    """RFC 8707: the ``resource`` is not one this server issues tokens for."""

    error = "invalid_target"
    status_code = 400


class TemporarilyUnavailableError(OAuth2Error):  # type: ignore[misc]
    """The server cannot take the request now (RFC 6749 4.1.2.1): HTTP 503, with when
    to retry.

    :param retry_after: seconds after which to retry, sent as ``Retry-After``.
    """

    error = "temporarily_unavailable"
    status_code = 503

    def __init__(self, description: str, retry_after: int) -> None:
        super().__init__(description=description)
        self.retry_after = retry_after

    def get_headers(self) -> list[tuple[str, str]]:
        """The JSON headers, ``Retry-After``, and no caching."""
        headers: list[tuple[str, str]] = super().get_headers()
        return [*headers, ("Retry-After", str(self.retry_after))]


#: What an ``error_description`` may not hold (RFC 6749 4.1.2.1: %x20-21 / %x23-5B / %x5D-7E).
_NOT_IN_DESCRIPTION = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]")


def error_description(text: str) -> str:
    """Return ``text`` with what an OAuth ``error_description`` may not hold replaced.

    Descriptions quote what the client sent (a redirect URI, a scope, a resource);
    Authlib refuses to build an error whose description holds ``"``, ``\\`` or a
    character outside printable ASCII, which would turn the refusal into a 500.
    ``"`` becomes ``'``, anything else ``?``.
    """
    return _NOT_IN_DESCRIPTION.sub("?", text.replace('"', "'"))


def digest(secret: str) -> str:
    """Return the storage key part of a code or refresh token (its SHA-256)."""
    return hashlib.sha256(secret.encode()).hexdigest()


class User:
    """The resource owner as Authlib sees it: the app's user id."""

    def __init__(self, user_id: str) -> None:
        self.user_id = user_id

    def get_user_id(self) -> str:
        """Return the id (the ``sub`` of the tokens)."""
        return self.user_id


class StoredGrant(TokenMixin):  # type: ignore[misc]
    """An authorization code or refresh token read back from storage."""

    def __init__(self, record: dict[str, t.Any]) -> None:
        self.record = record

    def get_redirect_uri(self) -> str:
        """The redirect URI the authorization request sent, which the token request repeats.

        Empty if it sent none (the client's only URI was used): the token request
        then need not send one either (OAuth 2.1 section 4.1.3).
        """
        if not self.record.get("redirect_uri_sent", True):
            return ""
        return t.cast(str, self.record.get("redirect_uri", ""))

    def get_scope(self) -> str:
        """The scopes granted."""
        return t.cast(str, self.record.get("scope", ""))

    def check_client(self, client: t.Any) -> bool:
        """Tell whether ``client`` is the one the grant was issued to."""
        return bool(client.get_client_id() == self.record["client_id"])

    def get_expires_in(self) -> int:
        """Seconds left."""
        return max(0, int(self.record["exp"] - time.time()))

    def is_expired(self) -> bool:
        """Tell whether it expired."""
        return bool(self.record["exp"] <= time.time())

    def is_revoked(self) -> bool:
        """Families are checked where the grant is read; a grant read is never revoked."""
        return False

    def get_user(self) -> User:
        """The user the grant was issued for."""
        return User(self.record["user_id"])

    def get_client(self) -> t.Any:
        """Not needed: the grant is checked with :meth:`check_client`."""
        raise NotImplementedError


def requested_resource(app_server: AppServer, values: t.Any, granted: str | None = None) -> str:
    """Return the ``resource`` of a request (RFC 8707), checked against this server's.

    With placeholders in ``MCP_AUTH_RESOURCE`` (one resource per tenant) the request
    must name its tenant's endpoint, and a code or refresh token is good for the
    resource it was issued for only.

    :param granted: the resource of the code or refresh token the request redeems.
    :raises InvalidTargetError: the request names another resource, several, or (per
        tenant) none to begin with.
    """
    resources = values.getlist("resource") if hasattr(values, "getlist") else []
    found = {app_server.canonical(asked) for asked in resources}
    for asked in resources:
        if not app_server.owns(app_server.canonical(asked)):
            raise InvalidTargetError(
                description=error_description(
                    f"this server issues tokens for {app_server.resource} only, not {asked}"
                )
            )
    if len(found) > 1:
        raise InvalidTargetError(
            description=error_description(
                f"ask for one resource at a time, not {', '.join(sorted(found))}"
            )
        )
    resource = found.pop() if found else granted
    if granted is not None and resource != granted:
        raise InvalidTargetError(
            description=error_description(f"the grant is for {granted}, not for {resource}")
        )
    if resource is None:
        if app_server.resources is not None:
            raise InvalidTargetError(
                description=error_description(
                    "name the resource (RFC 8707): this server issues tokens for each "
                    f"endpoint of {app_server.resource}"
                )
            )
        resource = app_server.resource
    return resource


def granted_resource(grant: StoredGrant | dict[str, t.Any]) -> str | None:
    """Return the resource a code or refresh token was issued for (``None``: stored before
    grants kept it, when ``MCP_AUTH_RESOURCE`` was the only one)."""
    record = grant.record if isinstance(grant, StoredGrant) else grant
    resource = record.get("resource")
    return resource if isinstance(resource, str) and resource else None


class PKCE(CodeChallenge):  # type: ignore[misc]
    """PKCE required on every authorization request, with S256 only (OAuth 2.1, MCP)."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

    def validate_code_challenge(self, grant: t.Any, redirect_uri: str) -> None:
        """Refuse an authorization request without an S256 ``code_challenge``."""
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("PKCE is required: send code_challenge (S256).")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("code_challenge_method must be S256.")
        super().validate_code_challenge(grant, redirect_uri)

    def validate_code_verifier(self, grant: t.Any, result: t.Any) -> None:
        """Require the verifier from every client, public or confidential."""
        if not grant.request.form.get("code_verifier"):
            raise InvalidRequestError("Missing 'code_verifier' (PKCE is required).")
        super().validate_code_verifier(grant, result)

    def get_authorization_code_challenge(self, authorization_code: StoredGrant) -> str:
        """The challenge stored with the code."""
        return t.cast(str, authorization_code.record["code_challenge"])

    def get_authorization_code_challenge_method(self, authorization_code: StoredGrant) -> str:
        """The method stored with the code (always S256)."""
        return t.cast(str, authorization_code.record["code_challenge_method"])


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):  # type: ignore[misc]
    """The authorization code grant, storing codes in the app server's storage."""

    TOKEN_ENDPOINT_AUTH_METHODS = ["none", "client_secret_basic", "client_secret_post"]

    @property
    def app_server(self) -> AppServer:
        """The per-app state this grant works for."""
        return t.cast(AppServer, self.server.app_server)

    def validate_authorization_request(self) -> str:
        """Authlib's checks, then the resource (RFC 8707)."""
        redirect_uri = t.cast(str, super().validate_authorization_request())
        try:
            requested_resource(self.app_server, self.request.args)
        except InvalidTargetError as error:
            error.redirect_uri = redirect_uri
            raise
        return redirect_uri

    def save_authorization_code(self, code: str, request: t.Any) -> None:
        """Store the code with what the token request must match."""
        data = request.payload.data
        lifetime = self.app_server.settings.code_lifetime
        record = {
            "client_id": request.client.get_client_id(),
            "redirect_uri": data.get("redirect_uri") or request.client.get_default_redirect_uri(),
            "redirect_uri_sent": bool(data.get("redirect_uri")),
            "scope": request.scope or "",
            "user_id": request.user.get_user_id(),
            "code_challenge": data.get("code_challenge"),
            "code_challenge_method": data.get("code_challenge_method"),
            "resource": requested_resource(self.app_server, self.request.args),
            "family": secrets.token_urlsafe(16),
            "exp": time.time() + lifetime,
        }
        # indexed now, as its tokens will be: withdrawing the consent withdraws the code too
        self.app_server.storage.add_family(
            record["user_id"], record["client_id"], record["family"], lifetime
        )
        self.app_server.storage.save_grant("code", digest(code), record, lifetime)

    def query_authorization_code(self, code: str, client: t.Any) -> StoredGrant | None:
        """Take the code (one redemption wins); a code used before revokes its tokens."""
        redeemed = self.app_server.storage.redeem_grant(
            "code", digest(code), self.app_server.settings.code_lifetime * 2
        )
        if redeemed.reused_family is not None:
            self.app_server.revoke_family(redeemed.reused_family)
            raise InvalidGrantError(
                "The authorization code was already used; the tokens issued from it are revoked."
            )
        if redeemed.record is None:
            return None
        grant = StoredGrant(redeemed.record)
        if grant.is_expired() or not grant.check_client(client):
            return None
        if self.app_server.family_revoked(redeemed.record["family"]):
            raise InvalidGrantError(
                "The consent this code was given under was withdrawn: authorize again."
            )
        requested_resource(self.app_server, self.request.form, granted_resource(grant))
        if grant.get_redirect_uri() and not self.request.payload.redirect_uri:
            raise InvalidGrantError(
                "Missing 'redirect_uri': send the one of the authorization request."
            )
        return grant

    def delete_authorization_code(self, authorization_code: StoredGrant) -> None:
        """Nothing left to do: the code was taken when it was read."""

    def authenticate_user(self, authorization_code: StoredGrant) -> User:
        """The user who consented."""
        return authorization_code.get_user()

    def generate_token(
        self,
        user: t.Any = None,
        scope: str | None = None,
        grant_type: str | None = None,
        expires_in: int | None = None,
        include_refresh_token: bool = True,
    ) -> dict[str, t.Any]:
        """Issue the first tokens of the code's family."""
        record = self.request.authorization_code.record
        return self.app_server.issue_tokens(
            client=self.request.client,
            user_id=user.get_user_id(),
            scope=scope or "",
            family=record["family"],
            resource=granted_resource(self.request.authorization_code),
        )


class RefreshTokenGrant(grants.RefreshTokenGrant):  # type: ignore[misc]
    """Refresh with rotation: each refresh token works once; a second use revokes its family."""

    TOKEN_ENDPOINT_AUTH_METHODS = ["none", "client_secret_basic", "client_secret_post"]
    INCLUDE_NEW_REFRESH_TOKEN = True

    @property
    def app_server(self) -> AppServer:
        """The per-app state this grant works for."""
        return t.cast(AppServer, self.server.app_server)

    def validate_token_request(self) -> None:
        """Check the request against the stored token, then take the token.

        Authlib takes the token (:meth:`authenticate_refresh_token`) before it checks
        the client, the scope and the resource: a refused refresh would use the token
        up, and the client's retry with it would read as reuse and revoke the family.
        The checks run first on the stored record, so a refused refresh changes
        nothing; the token is taken only by a request that will be answered.
        """
        client = self._validate_request_client()
        self.request.client = client
        value = self.request.form.get("refresh_token")
        record = (
            None if value is None else self.app_server.storage.load_grant("refresh", digest(value))
        )
        if record is not None:
            if not StoredGrant(record).check_client(client):
                raise InvalidGrantError("The refresh token was issued to another client.")
            requested_resource(self.app_server, self.request.form, granted_resource(record))
            self._validate_token_scope(StoredGrant(record))
        refresh_token = self._validate_request_token(client)
        self._validate_token_scope(refresh_token)
        self.request.refresh_token = refresh_token

    def authenticate_refresh_token(self, refresh_token: str) -> StoredGrant | None:
        """Take the token; one used before revokes its family (reuse detection)."""
        redeemed = self.app_server.storage.redeem_grant("refresh", digest(refresh_token), 1.0)
        if redeemed.reused_family is not None:
            self.app_server.revoke_family(redeemed.reused_family)
            raise InvalidGrantError(
                "The refresh token was already used: every token of its family is revoked "
                "(start a new authorization)."
            )
        record = redeemed.record
        if record is None:
            return None
        if self.app_server.family_revoked(record["family"]):
            return None
        requested_resource(self.app_server, self.request.form, granted_resource(record))
        return StoredGrant(record)

    def authenticate_user(self, refresh_token: StoredGrant) -> User:
        """The user the token was issued for."""
        return refresh_token.get_user()

    def revoke_old_credential(self, refresh_token: StoredGrant) -> None:
        """Nothing left to do: the old token was taken when it was read."""

    def issue_token(self, user: User, refresh_token: StoredGrant) -> dict[str, t.Any]:
        """The next tokens of the same family, with at most the scopes granted first.

        The access token has the scopes asked for; the new refresh token keeps all
        those of the old one, so that a later refresh may ask for them again.
        """
        scope = self.request.payload.scope or refresh_token.get_scope()
        return self.app_server.issue_tokens(
            client=self.request.client,
            user_id=user.get_user_id(),
            scope=scope,
            family=refresh_token.record["family"],
            refresh_expires_at=refresh_token.record["exp"],
            refresh_scope=refresh_token.get_scope(),
            resource=granted_resource(refresh_token),
        )


class RevocationEndpoint(_RevocationEndpoint):  # type: ignore[misc]
    """RFC 7009: revoking an access or refresh token revokes its whole family."""

    CLIENT_AUTH_METHODS = ["none", "client_secret_basic", "client_secret_post"]

    @property
    def app_server(self) -> AppServer:
        """The per-app state this endpoint works for."""
        return t.cast(AppServer, self.server.app_server)

    def query_token(self, token_string: str, token_type_hint: str | None) -> StoredGrant | None:
        """Find a refresh token by its digest, or read an access token's claims."""
        if token_type_hint != "access_token":
            record = self.app_server.storage.load_grant("refresh", digest(token_string))
            if record is not None:
                return StoredGrant(record)
        try:
            claims = self.app_server.decode_access_token(token_string, verify_exp=False)
        except jwt.PyJWTError:
            return None
        return StoredGrant(
            {
                "client_id": claims.get("client_id"),
                "family": claims.get("fid"),
                "exp": claims.get("exp", 0),
            }
        )

    def revoke_token(self, token: StoredGrant, request: t.Any) -> None:
        """Revoke the token's family."""
        family = token.record.get("family")
        if isinstance(family, str):
            self.app_server.revoke_family(family)


__all__ = [
    "PKCE",
    "AuthorizationCodeGrant",
    "InvalidTargetError",
    "RefreshTokenGrant",
    "RevocationEndpoint",
    "StoredGrant",
    "TemporarilyUnavailableError",
    "User",
    "digest",
    "error_description",
    "granted_resource",
    "requested_resource",
]
