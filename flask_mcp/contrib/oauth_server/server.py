"""One app's authorization server: its settings, storage, keys and Authlib server.

:class:`AppServer` is what :class:`~.extension.OAuthServer` keeps per app in
``app.extensions["mcp_oauth_server"]``. It issues tokens (:meth:`issue_tokens`),
revokes families, remembers consents, and answers the RFC 8414 metadata.
"""

from __future__ import annotations

import dataclasses
import secrets
import time
import typing as t
from urllib.parse import urlsplit

import jwt
from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2.rfc9207 import IssuerParameter

from ...auth.metadata import canonical_resource
from ...auth.metadata import resource_pattern
from ...config import OAUTH_SERVER_KEYS
from ...config import read_key
from ...config import read_keys
from ...protocol import client_network
from ...server.sealing import secret_keys
from .client_documents import ClientDocumentError
from .client_documents import ClientDocuments
from .client_documents import ClientDocumentsBusy
from .client_documents import is_document_client_id
from .clients import Client
from .clients import RegistrationEndpoint
from .grants import PKCE
from .grants import AuthorizationCodeGrant
from .grants import RefreshTokenGrant
from .grants import RevocationEndpoint
from .grants import TemporarilyUnavailableError
from .grants import digest
from .grants import error_description
from .keys import ALGORITHM
from .keys import SigningKeys
from .revocations import CHANNEL
from .revocations import KnownLiveFamilies
from .storage import Storage
from .throttle import EndpointLimits

if t.TYPE_CHECKING:
    from flask import Flask

    from ...backends.base import Backend
    from ...runtime.state import AppState


@dataclasses.dataclass(frozen=True)
class OAuthSettings:
    """The validated ``MCP_OAUTH_*`` keys of one app.

    Their defaults and documentation are in :data:`flask_mcp.config.OAUTH_SERVER_KEYS`.
    """

    issuer: str | None
    storage: str | None
    prefix: str
    access_token_lifetime: float
    refresh_token_lifetime: float
    code_lifetime: float
    key_rotation: float
    dynamic_registration: bool
    registration_tokens: tuple[str, ...] | None
    client_metadata_documents: bool
    client_metadata_allow_private: bool
    client_metadata_ca_bundle: str | None
    client_metadata_max_bytes: int
    client_metadata_timeout: float
    client_metadata_max_fetches: int
    consent_max_age: float
    revocation_cache_seconds: float
    registration_rate_limit: str | None
    token_rate_limit: str | None
    max_clients: int
    max_grants: int
    login_view: str | None


def issuer_hosts(allowed: tuple[str, ...] | None, issuer: str) -> tuple[str, ...] | None:
    """Return the ``Host`` values the authorization server's routes accept.

    :param allowed: ``MCP_ALLOWED_HOSTS``, which the MCP endpoint accepts.
    :param issuer: the issuer URL: its host (with its port, if it writes one) is
        accepted too when ``allowed`` is a list, as clients reach the server there.
    """
    if allowed is None:
        return None
    return tuple(dict.fromkeys([*allowed, urlsplit(issuer).netloc.lower()]))


def load_oauth_settings(config: t.MutableMapping[str, t.Any]) -> OAuthSettings:
    """Apply the defaults of the ``MCP_OAUTH_*`` keys to ``config`` and validate them.

    :raises ValueError: a key has an invalid value; the message names it.
    """
    return OAuthSettings(**read_keys(config, OAUTH_SERVER_KEYS, "MCP_OAUTH_"))


#: The most families :meth:`AppServer.family_live` remembers per process.
LIVE_CACHE_SIZE = 10_000


class _Issuer(IssuerParameter):  # type: ignore[misc]
    """RFC 9207: every authorization response names the issuer (``iss``), against mix-up attacks."""

    def __init__(self, issuer: str) -> None:
        self.issuer = issuer

    def get_issuer(self) -> str:
        """The issuer URL."""
        return self.issuer


class AppServer:
    """The authorization server of one app.

    :param app: the app.
    :param settings: its ``MCP_OAUTH_*`` settings.
    :param resource: the MCP server's canonical URI (``MCP_AUTH_RESOURCE``): the audience.
        With placeholders of ``MCP_PATH``'s URL variables (``https://x/t/<tenant>/mcp``)
        each tenant's endpoint is a resource of its own: a token names the one asked for.
    :param issuer: the issuer URL (no trailing slash).
    :param storage: where its records live.
    :param scopes: returns the scopes the server supports now (tools may add some).
    """

    def __init__(
        self,
        app: Flask,
        settings: OAuthSettings,
        *,
        resource: str,
        issuer: str,
        storage: Storage,
        scopes: t.Callable[[], list[str]],
    ) -> None:
        self.app = app
        self.settings = settings
        self.resource = canonical_resource(resource)
        #: The resources of a per-tenant ``resource``; ``None``: ``resource`` only.
        self.resources = resource_pattern(self.resource)
        self.issuer = issuer.rstrip("/")
        #: The ``Host`` values its routes accept (:func:`~flask_mcp.protocol.hosts.host_allowed`):
        #: those of ``MCP_ALLOWED_HOSTS`` and, with a list, the issuer's, where clients
        #: reach it; ``None``: on a loopback connection, localhost names only.
        self.allowed_hosts = issuer_hosts(read_key(app.config, "MCP_ALLOWED_HOSTS"), self.issuer)
        self.storage = storage
        self.scopes = scopes
        self.keys = SigningKeys(storage, settings.key_rotation, lambda: secret_keys(app.config))
        #: Requests per client address on the endpoints anyone may call.
        self.limits = EndpointLimits(
            app,
            {
                "register": ("MCP_OAUTH_REGISTRATION_RATE_LIMIT", settings.registration_rate_limit),
                "token": ("MCP_OAUTH_TOKEN_RATE_LIMIT", settings.token_rate_limit),
            },
        )
        #: Families seen not revoked, until when (``MCP_OAUTH_REVOCATION_CACHE_SECONDS``).
        self._live: dict[str, float] = {}
        #: Families known not revoked, forgotten when a worker revokes one.
        self.known_live = KnownLiveFamilies(self.mcp_backend)
        self.documents = ClientDocuments(
            storage,
            allow_private=settings.client_metadata_allow_private,
            max_bytes=settings.client_metadata_max_bytes,
            timeout=settings.client_metadata_timeout,
            verify=settings.client_metadata_ca_bundle or True,
            max_cached=settings.max_clients,
            max_fetches=settings.client_metadata_max_fetches,
        )
        server = AuthorizationServer(query_client=self.query_client, save_token=self._saved)
        server.app_server = self
        server.load_config({})
        server.register_grant(AuthorizationCodeGrant, [PKCE(required=True)])
        server.register_grant(RefreshTokenGrant)
        server.register_endpoint(RevocationEndpoint)
        if settings.dynamic_registration:
            server.register_endpoint(
                RegistrationEndpoint(
                    storage,
                    settings.registration_tokens or (),
                    self.metadata,
                    max_bytes=settings.client_metadata_max_bytes,
                    max_clients=settings.max_clients,
                )
            )
        server.validate_requested_scope = self._validate_requested_scope
        server.get_authorization_grant = self._authorization_grant
        server.register_extension(_Issuer(self.issuer))
        self.authlib = server

    # -- URLs and metadata ---------------------------------------------------------

    def canonical(self, resource: str) -> str:
        """Return ``resource`` canonicalized the way ``MCP_AUTH_RESOURCE`` is."""
        return canonical_resource(resource)

    def owns(self, resource: str) -> bool:
        """Tell whether this server issues tokens for the canonical ``resource``: it is
        ``MCP_AUTH_RESOURCE``, or one tenant's endpoint of it."""
        if self.resources is None:
            return resource == self.resource
        return "<" not in resource and self.resources.fullmatch(resource) is not None

    def endpoint(self, name: str) -> str:
        """Return the absolute URL of an endpoint (``authorize``, ``token``...)."""
        origin = urlsplit(self.issuer)
        base = f"{origin.scheme}://{origin.netloc}"
        script_root = origin.path.rstrip("/")
        return f"{base}{script_root}{self.settings.prefix}/{name}"

    def metadata(self) -> dict[str, t.Any]:
        """Return the RFC 8414 Authorization Server Metadata document."""
        document: dict[str, t.Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": self.endpoint("authorize"),
            "token_endpoint": self.endpoint("token"),
            "revocation_endpoint": self.endpoint("revoke"),
            "jwks_uri": self.endpoint("jwks"),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": [
                "none",
                "client_secret_post",
                "client_secret_basic",
            ],
            "revocation_endpoint_auth_methods_supported": [
                "none",
                "client_secret_post",
                "client_secret_basic",
            ],
            "scopes_supported": self.scopes(),
            "client_id_metadata_document_supported": self.settings.client_metadata_documents,
            "authorization_response_iss_parameter_supported": True,
        }
        if self.settings.dynamic_registration:
            document["registration_endpoint"] = self.endpoint("register")
        return document

    # -- clients ---------------------------------------------------------------------

    def query_client(self, client_id: str) -> Client | None:
        """Return a registered client, or the client a metadata document describes."""
        if not isinstance(client_id, str) or not client_id:
            return None
        if is_document_client_id(client_id):
            if not self.settings.client_metadata_documents:
                return None
            try:
                return Client(self.documents.get(client_id, self._count_document_fetch))
            except ClientDocumentsBusy as exc:
                raise TemporarilyUnavailableError(
                    description=error_description(
                        f"The client metadata document cannot be fetched now: {exc}."
                    ),
                    retry_after=exc.retry_after,
                ) from None
            except ClientDocumentError as exc:
                from authlib.oauth2.rfc6749.errors import InvalidClientError

                raise InvalidClientError(
                    description=error_description(
                        f"The client metadata document cannot be used: {exc}."
                    )
                ) from None
        record = self.storage.load_client(client_id)
        return None if record is None else Client(record)

    def _count_document_fetch(self) -> None:
        """Count fetching a metadata document as a registration of the caller's address.

        A fetched document is cached like a registered client, so without this one
        address could fill the cache (and make the server fetch) with URL after URL.

        :raises ClientDocumentError: the address is over ``MCP_OAUTH_REGISTRATION_RATE_LIMIT``.
        """
        from flask import has_request_context
        from flask import request

        address = client_network(request.remote_addr) if has_request_context() else "-"
        refusal = self.limits.check("register", address)
        if refusal is not None:
            raise ClientDocumentError(
                f"your address had too many clients registered or client metadata documents "
                f"fetched (at most {refusal.limit}): retry in {refusal.retry_after} seconds"
            )

    def _authorization_grant(self, request: t.Any) -> t.Any:
        """Authlib's grant for an authorization request; a ``response_type`` other than
        ``code`` is refused with a description that says ``code`` is the one supported.

        Authlib builds that error with its arguments swapped: its description is the
        bare type asked for, and a type holding ``"`` or ``\\`` makes the refusal a 500.
        As Authlib does, the error goes to the client's ``redirect_uri`` only once it is
        known to be the client's.
        """
        from authlib.oauth2.rfc6749.errors import OAuth2Error

        response_type = request.payload.response_type
        if response_type == "code":
            return AuthorizationServer.get_authorization_grant(self.authlib, request)
        redirect_uri = None
        client = self.query_client(request.payload.client_id)
        if client is not None:
            asked = request.payload.redirect_uri
            if not asked:
                redirect_uri = client.get_default_redirect_uri()
            elif client.check_redirect_uri(asked):
                redirect_uri = asked
        raise OAuth2Error(
            description=error_description(
                f"The response_type {response_type or ''!r} is not supported: this server "
                "supports response_type=code only (the authorization code flow, with PKCE)."
            ),
            redirect_uri=redirect_uri,
            error="unsupported_response_type",
        )

    def _validate_requested_scope(self, scope: str | None, state: str | None = None) -> None:
        from authlib.oauth2.rfc6749.errors import InvalidScopeError

        if scope:
            unknown = set(scope.split()) - set(self.scopes())
            if unknown:
                raise InvalidScopeError(
                    description=error_description(f"Unknown scope: {', '.join(sorted(unknown))}."),
                    state=state,
                )

    # -- tokens ------------------------------------------------------------------------

    def _saved(self, token: dict[str, t.Any], request: t.Any) -> None:
        """Authlib's ``save_token``: :meth:`issue_tokens` stored what it must already."""

    def issue_tokens(
        self,
        *,
        client: Client,
        user_id: str,
        scope: str,
        family: str,
        refresh_expires_at: float | None = None,
        refresh_scope: str | None = None,
        resource: str | None = None,
    ) -> dict[str, t.Any]:
        """Sign an access token and store a refresh token, both of ``family``.

        The family is indexed under the user and the client, so that withdrawing
        the consent revokes it. The first tokens of a family (a code redeemed) make it
        one of the user's grants to the client, of which ``MCP_OAUTH_MAX_GRANTS`` are
        kept: the oldest past that number are revoked. A refresh token never outlives
        the first one of its family (``MCP_OAUTH_REFRESH_TOKEN_LIFETIME`` after the code
        was redeemed).

        :param refresh_scope: the scopes of the refresh token, when the access token
            has fewer: a refresh that narrows the scope keeps the refresh token's
            (RFC 6749 section 6, kept by OAuth 2.1). Default: ``scope``.
        :param resource: the token's audience, the resource the grant is for (default:
            ``MCP_AUTH_RESOURCE``, which must then name no tenant).
        """
        resource = resource or self.resource
        if not self.owns(resource):
            raise ValueError(f"Cannot issue a token for {resource!r}: name one of this server's.")
        now = time.time()
        lifetime = self.settings.access_token_lifetime
        claims = {
            "iss": self.issuer,
            "sub": user_id,
            "aud": resource,
            "client_id": client.get_client_id(),
            "scope": scope,
            "iat": int(now),
            "exp": int(now + lifetime),
            "jti": secrets.token_urlsafe(16),
            "fid": family,
        }
        token: dict[str, t.Any] = {
            "token_type": "Bearer",
            "access_token": self.keys.sign(claims),
            "expires_in": int(lifetime),
            "scope": scope,
        }
        expires_at = refresh_expires_at or now + self.settings.refresh_token_lifetime
        if expires_at - now > 1 and client.check_grant_type("refresh_token"):
            refresh = secrets.token_urlsafe(32)
            record = {
                "client_id": client.get_client_id(),
                "user_id": user_id,
                "scope": scope if refresh_scope is None else refresh_scope,
                "family": family,
                "resource": resource,
                "exp": expires_at,
            }
            self.storage.save_grant("refresh", digest(refresh), record, expires_at - now)
            token["refresh_token"] = refresh
        ttl = max(expires_at - now, lifetime)
        self.storage.add_family(user_id, client.get_client_id(), family, ttl)
        most = self.settings.max_grants
        if refresh_expires_at is None and most:  # a code redeemed: the family's first tokens
            bounded = self.storage.bound_families(
                user_id, client.get_client_id(), family, now + ttl, most
            )
            for oldest in bounded:
                self.revoke_family(oldest)
        return token

    def decode_access_token(self, token: str, *, verify_exp: bool = True) -> dict[str, t.Any]:
        """Return the claims of an access token this server signed.

        :raises jwt.PyJWTError: it is not one, or (with ``verify_exp``) it expired.
        """
        header = jwt.get_unverified_header(token)
        try:
            key = self.keys.verifier(header.get("kid"), header.get("alg", ""))
        except LookupError:
            raise jwt.InvalidKeyError("unknown key") from None
        claims: dict[str, t.Any] = jwt.decode(
            token,
            key,
            algorithms=[ALGORITHM],
            audience=self.resource if self.resources is None else None,
            issuer=self.issuer,
            options={"verify_exp": verify_exp, "verify_aud": self.resources is None},
        )
        audience = claims.get("aud")
        if self.resources is not None and not (isinstance(audience, str) and self.owns(audience)):
            raise jwt.InvalidAudienceError("the token was issued for another resource")
        return claims

    def mcp_state(self) -> AppState | None:
        """The runtime state of the app's MCP server, or ``None`` (none, or not yet)."""
        registered = self.app.extensions.get("mcp")
        if registered is None:
            return None
        try:
            return t.cast("AppState", registered.state(self.app))
        except RuntimeError:  # mcp.init_app has not run (yet)
            return None

    def mcp_backend(self) -> Backend | None:
        """The backend of the app's MCP server, whose pub/sub carries revocations, or ``None``."""
        state = self.mcp_state()
        return None if state is None else state.backend

    def revoke_family(self, family: str) -> None:
        """Revoke every token of ``family``, in every worker, until they would have expired.

        The record is written first, then the family is published to every worker
        (:mod:`.revocations`), which forgets it before answering its next request.
        """
        ttl = max(self.settings.refresh_token_lifetime, self.settings.access_token_lifetime)
        self.storage.revoke_family(family, ttl)
        self._live.pop(family, None)
        self.known_live.heard(family)
        backend = self.mcp_backend()
        if backend is not None and backend.multiprocess:
            backend.publish(CHANNEL, {"family": family})

    def family_revoked(self, family: str) -> bool:
        """Tell whether ``family`` was revoked (asking the storage every time)."""
        return self.storage.family_revoked(family)

    def family_live(self, family: str, expires_at: float) -> bool:
        """Tell whether a token of ``family``, expiring at ``expires_at``, may be used.

        The storage is asked unless this worker knows the family live and hears
        every revocation published meanwhile (:mod:`.revocations`): either way a
        revocation made on any worker applies at once.

        With ``MCP_OAUTH_REVOCATION_CACHE_SECONDS`` a "not revoked" answer is kept
        that long in this process instead (at most :data:`LIVE_CACHE_SIZE` families),
        so a revocation may take that long to reach this worker. A revocation made
        here applies here at once.
        """
        keep = self.settings.revocation_cache_seconds
        if keep <= 0:
            return self.known_live.live(family, expires_at, lambda: self.family_revoked(family))
        now = time.monotonic()
        until = self._live.get(family)
        if until is not None and now < until:
            return True
        if self.family_revoked(family):
            return False
        if len(self._live) >= LIVE_CACHE_SIZE:
            self._live.pop(next(iter(self._live)), None)
        self._live[family] = now + keep
        return True

    # -- consent ------------------------------------------------------------------------

    def consented_scopes(self, user_id: str, client_id: str) -> set[str] | None:
        """Return the scopes ``user_id`` granted ``client_id`` before, or ``None``."""
        record = self.storage.load_consent(user_id, client_id)
        return None if record is None else set(record.get("scopes", ()))

    def remember_consent(self, user_id: str, client: Client, scopes: t.Iterable[str]) -> None:
        """Remember that ``user_id`` granted ``scopes`` to ``client`` (added to earlier ones)."""
        client_id = client.get_client_id()
        granted = (self.consented_scopes(user_id, client_id) or set()) | set(scopes)
        ttl = self.settings.refresh_token_lifetime
        record = {"scopes": sorted(granted), "client_name": client.client_name, "at": time.time()}
        self.storage.save_consent(user_id, client_id, record, ttl)

    def consents(self, user_id: str) -> dict[str, dict[str, t.Any]]:
        """Return the consents of ``user_id``: by client id, the scopes and the client's name."""
        return self.storage.consents(user_id)

    def revoke_consent(self, user_id: str, client_id: str) -> None:
        """Forget the consent and revoke every token the client holds for the user."""
        for family in sorted(self.storage.revoke_consent(user_id, client_id)):
            self.revoke_family(family)


__all__ = ["AppServer", "OAuthSettings", "load_oauth_settings"]
