"""The MCP server's side: check the tokens this authorization server issued.

:class:`IssuedTokenAuthorizer` is the :class:`~flask_mcp.auth.jwt_authorizer.JWTAuthorizer`
of the resource server, with the app's own keys instead of a JWKS fetched over
HTTP: the signature, ``iss``, ``aud`` (the token must name this MCP server, RFC
8707), ``exp`` are checked exactly as for a token from Keycloak or Auth0. Then the
token's family must not be revoked: a storage read, or none while the worker hears every
revocation on the MCP backend's pub/sub (:mod:`.revocations`); a revocation reaches every
worker at once either way. ``MCP_OAUTH_REVOCATION_CACHE_SECONDS`` trades that for fewer
reads where the worker cannot hear them. With Flask-Login, the token's
subject becomes ``current_user`` for the request.
"""

from __future__ import annotations

import typing as t

import jwt
from flask import current_app
from flask import g

from ...auth.info import INVALID_TOKEN
from ...auth.info import AuthError
from ...auth.info import AuthInfo
from ...auth.jwt_authorizer import JWTAuthorizer
from ...errors import BackendUnavailable
from .keys import ALGORITHM
from .registration import app_server
from .storage import unreachable_errors

if t.TYPE_CHECKING:
    from flask import Flask
    from flask import Request


class AppKeys:
    """The current app's signing keys, as the :class:`JWTAuthorizer` asks for them."""

    def verifier(self, kid: str | None, alg: str) -> jwt.PyJWK:
        """Return the public key named ``kid``.

        :raises AuthError: no key of this server has that ``kid``.
        """
        try:
            return app_server().keys.verifier(kid, alg)
        except LookupError:
            raise AuthError(
                INVALID_TOKEN, "the token was signed with an unknown key (kid)"
            ) from None


class IssuedTokenAuthorizer(JWTAuthorizer):
    """Check access tokens of the built-in authorization server (see the module docstring).

    :param load_user: ``load_user(user_id)`` returns the app's user for a token's
        subject, made ``flask_login.current_user`` for the request; ``None``: Flask-Login's
        ``user_loader`` when the app has a ``login_manager``.
    """

    def __init__(self, load_user: t.Callable[[str], t.Any] | None = None) -> None:
        super().__init__(
            "http://127.0.0.1/unused-jwks",  # never fetched: the keys are the app's own
            algorithms=(ALGORITHM,),
            allow_insecure_http=True,
        )
        self.keys = t.cast(t.Any, AppKeys())
        self.load_user = load_user

    def checks(self, app: Flask) -> t.Iterator[tuple[bool, str]]:
        """Say, for ``flask mcp check``, who issues the tokens and what the issuer lacks."""
        try:
            server = app_server(app)
        except RuntimeError as exc:
            yield False, str(exc)
            return
        yield True, f"tokens are issued by this app's authorization server ({server.issuer})"
        if not app.config.get("SECRET_KEY"):
            yield (
                False,
                "no SECRET_KEY: the authorization server seals its signing keys and signs its "
                "consent form with it (MCP_STATE_KEY does not serve there); set "
                "app.config['SECRET_KEY'] to a random value (secrets.token_hex(32)), the same "
                "in every worker",
            )
            return
        try:
            yield True, server.keys.check()
        except RuntimeError as exc:
            yield False, str(exc)
        except Exception as exc:  # the storage's own errors: SQL, Redis, ...
            yield (
                False,
                f"the authorization server's storage does not answer: {str(exc).rstrip('.')}; "
                "check MCP_OAUTH_STORAGE (or MCP_BACKEND, whose Redis it uses by default)",
            )

    def __call__(self, token: str, request: Request) -> AuthInfo:
        """Verify ``token``, refuse a revoked family, and log its user in for this request.

        :raises BackendUnavailable: the authorization server's storage (its keys, the
            token's family) does not answer: the transport answers 503 with
            ``Retry-After``, as when its own backend does not, not 500.
        """
        app = current_app._get_current_object()  # type: ignore[attr-defined]
        server = app_server(app)
        try:
            info = super().__call__(token, request)
            family = info.claims.get("fid")
            expires_at = float(info.claims.get("exp", 0))
            live = isinstance(family, str) and server.family_live(family, expires_at)
        except unreachable_errors(server.storage) as exc:
            raise BackendUnavailable(
                f"the authorization server's storage does not answer: {exc}"
            ) from exc
        if not live:
            raise AuthError(INVALID_TOKEN, "the token was revoked")
        loader = self.load_user
        if loader is None:
            loader = getattr(getattr(app, "login_manager", None), "_user_callback", None)
        if loader is not None:
            user = loader(info.claims["sub"])
            if user is None:
                raise AuthError(INVALID_TOKEN, "the token's user no longer exists")
            g._login_user = user
        return info


__all__ = ["AppKeys", "IssuedTokenAuthorizer"]
