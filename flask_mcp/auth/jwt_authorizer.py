"""A built-in authorizer for JWT access tokens signed with keys published as a JWKS.

It checks what RFC 9068 and the MCP authorization spec ask of a resource
server: the signature (with an allow-list of asymmetric algorithms: never
``none``, never ``HS*``), ``exp``/``nbf``/``iat`` with some leeway, the issuer,
and the audience: the token must name this server's canonical URI (RFC 8707).
It needs PyJWT with its crypto extra: ``pip install Flask-MCP[jwt]``.

Configure it with ``MCP_AUTH_JWT_*`` keys, or register one in code::

    mcp.authorizer(JWTAuthorizer("https://auth.example.com/.well-known/jwks.json"))
"""

from __future__ import annotations

import collections
import copy
import hashlib
import http.client
import json
import logging
import threading
import time
import typing as t
import urllib.request

from .deadline import Deadline
from .info import INVALID_TOKEN
from .info import TEMPORARILY_UNAVAILABLE
from .info import AuthError
from .info import AuthInfo
from .info import auth_info_from_claims
from .metadata import check_https
from .metadata import fill_path_args

try:
    import jwt
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "The JWT authorizer needs PyJWT with its crypto extra: pip install 'Flask-MCP[jwt]'."
    ) from exc

if t.TYPE_CHECKING:
    from flask import Request

    from ..config import Settings

logger = logging.getLogger("flask_mcp")

#: Asymmetric algorithms and the JWK key type (``kty``) each one needs.
KEY_TYPES = {
    **dict.fromkeys(("RS256", "RS384", "RS512", "PS256", "PS384", "PS512"), "RSA"),
    **dict.fromkeys(("ES256", "ES384", "ES512", "ES256K"), "EC"),
    "EdDSA": "OKP",
}
_WRONG_AUDIENCE = "the token was issued for another resource (aud)"
_REASONS: tuple[tuple[type[Exception], str], ...] = (
    (jwt.ExpiredSignatureError, "the token expired"),
    (jwt.ImmatureSignatureError, "the token is not valid yet"),
    (jwt.InvalidAudienceError, _WRONG_AUDIENCE),
    (jwt.InvalidIssuerError, "the token was issued by an unexpected issuer (iss)"),
    (jwt.InvalidSignatureError, "the token's signature does not verify"),
    (jwt.InvalidAlgorithmError, "the token's algorithm does not match its key"),
    (jwt.DecodeError, "the token is not a well-formed JWT"),
)
_NO_KEYS = "the signing keys cannot be fetched"
_UNKNOWN_KEY = "the token was signed with an unknown key (kid)"


def check_algorithms(algorithms: t.Iterable[str]) -> tuple[str, ...]:
    """Return the allow-list if every entry is a known asymmetric algorithm.

    :raises ValueError: ``none``, an ``HS*`` algorithm or an unknown name is listed.
    """
    result = tuple(algorithms)
    if not result:
        raise ValueError("MCP_AUTH_JWT_ALGORITHMS is empty: list the algorithms, e.g. ['RS256'].")
    for name in result:
        if name not in KEY_TYPES:
            raise ValueError(
                f"MCP_AUTH_JWT_ALGORITHMS lists {name!r}: only asymmetric algorithms are accepted "
                f"({', '.join(KEY_TYPES)}). 'none' is never safe, and HS* would verify with the "
                "public key as an HMAC secret (algorithm confusion)."
            )
    return result


class JWKSCache:
    """The keys published at a JWKS URL, fetched lazily and kept for ``cache_seconds``.

    A token signed with an unknown ``kid`` refetches the set (the issuer may
    have rotated its keys), at most once every ``refetch_interval`` seconds so
    that made-up ``kid`` values cannot turn into a flood of fetches. When a
    fetch fails the old keys stay in use; without any, tokens are refused as
    ``temporarily_unavailable`` and the next fetch waits ``refetch_interval``
    seconds too, so that an unreachable issuer does not cost a fetch per request.

    One fetch runs at a time, a name resolution that outlived its fetch counted until
    it ends (a DNS server that never answers leaves one thread, not one per
    ``refetch_interval``). Up to ``max_waiting`` requests wait for the fetch in flight;
    past them a request is answered at once from the keys at hand: ``invalid_token``
    (401) if its key is not among them, ``temporarily_unavailable`` (503) if there are
    none yet, so that a stalled issuer cannot hold every server thread.

    .. versionchanged:: 0.2.0
        ``max_waiting``; a fetch's lingering name resolution holds its slot.
    """

    def __init__(
        self,
        url: str,
        *,
        cache_seconds: float = 300.0,
        refetch_interval: float = 30.0,
        timeout: float = 5.0,
        max_bytes: int = 512 * 1024,
        max_waiting: int = 8,
    ) -> None:
        self.url = url
        self.cache_seconds = cache_seconds
        self.refetch_interval = refetch_interval
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._keys: list[dict[str, t.Any]] | None = None
        #: The keys parsed for PyJWT, by (kid, alg): parsed once per fetch, not per token.
        self._parsed: dict[tuple[str | None, str], jwt.PyJWK] = {}
        self._expires = 0.0
        self._fetched_at = float("-inf")
        self.max_waiting = max_waiting
        self._lock = threading.Lock()
        #: Places for the requests that wait while another one fetches.
        self._waiting = threading.BoundedSemaphore(max_waiting) if max_waiting else None
        #: Held by a fetch, and by its name resolution until that ends.
        self._fetch_slot = threading.BoundedSemaphore(1)

    def fetch(self) -> list[dict[str, t.Any]]:
        """Download and parse the key set.

        ``timeout`` bounds the whole fetch, from the name's resolution to the last byte
        (a :class:`~flask_mcp.auth.deadline.Deadline`): an answer whose head or
        body trickles in fails too, as it would otherwise hold every request with
        a token that waits for the keys.

        :raises ValueError: the answer is not a JWKS.
        :raises OSError: the key set did not arrive within ``timeout`` seconds, what
            answers there does not speak HTTP, or the name resolution of the last fetch
            still runs.
        """
        if not self._fetch_slot.acquire(blocking=False):
            raise OSError("the name resolution of the previous fetch still runs")
        deadline = Deadline(time.monotonic() + self.timeout)
        try:
            return self._download(deadline)
        finally:
            deadline.when_resolved(self._fetch_slot.release)

    def _download(self, deadline: Deadline) -> list[dict[str, t.Any]]:
        """Fetch and parse the key set within ``deadline``; see :meth:`fetch`."""
        fetch = urllib.request.Request(self.url, headers={"Accept": "application/json"})
        parts: list[bytes] = []
        size = 0
        try:
            with deadline, deadline.urlopen(fetch, self.timeout) as response:
                while size <= self.max_bytes:
                    if time.monotonic() >= deadline.at:
                        deadline.cut = True
                        break
                    part = response.read1(self.max_bytes + 1 - size)
                    if not part:
                        break
                    parts.append(part)
                    size += len(part)
        except (OSError, http.client.HTTPException) as exc:  # urllib passes these on unwrapped
            if not deadline.cut:
                if isinstance(exc, OSError):
                    raise
                raise OSError(f"not an HTTP answer ({type(exc).__name__}: {exc})") from exc
        if deadline.cut:  # what it read of the body, if anything, is cut short
            raise TimeoutError(
                f"the JWKS did not arrive within {self.timeout:g} s; raise the "
                "authorizer's timeout if the issuer is that slow"
            )
        body = b"".join(parts)
        if len(body) > self.max_bytes:
            raise ValueError(f"the JWKS is larger than {self.max_bytes} bytes")
        document = json.loads(body)
        keys = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(keys, list):
            raise ValueError("the document has no 'keys' array")
        return [key for key in keys if isinstance(key, dict)]

    def _refresh(self, now: float) -> None:
        self._fetched_at = now
        try:
            self._keys = self.fetch()
            self._parsed = {}
            self._expires = now + self.cache_seconds
        except (OSError, ValueError) as exc:
            logger.warning("Could not fetch the JWKS at %s: %s", self.url, exc)
            self._expires = now + self.refetch_interval
            if self._keys is None:
                raise AuthError(TEMPORARILY_UNAVAILABLE, _NO_KEYS) from None

    def key_for(self, kid: str | None, alg: str) -> dict[str, t.Any]:
        """Return the JWK that may verify a token with this ``kid`` and ``alg``.

        :raises AuthError: no such key (``invalid_token``), or no keys could
            be fetched at all (``temporarily_unavailable``).
        """
        if not self._lock.acquire(blocking=False):  # another request is fetching
            if self._waiting is None or not self._waiting.acquire(blocking=False):
                return self._at_hand(kid, alg)
            try:
                self._lock.acquire()
            finally:
                self._waiting.release()
        try:
            now = time.monotonic()
            if self._keys is None and now < self._expires:  # the last fetch failed just now
                raise AuthError(TEMPORARILY_UNAVAILABLE, _NO_KEYS)
            if self._keys is None or now >= self._expires:
                self._refresh(now)
            key = self._find(kid, alg)
            if key is None and now - self._fetched_at >= self.refetch_interval:
                self._refresh(now)
                key = self._find(kid, alg)
        finally:
            self._lock.release()
        if key is None:
            raise AuthError(INVALID_TOKEN, _UNKNOWN_KEY)
        return key

    def _at_hand(self, kid: str | None, alg: str) -> dict[str, t.Any]:
        """Return the key among those held now, without waiting for the fetch in flight.

        :raises AuthError: as :meth:`key_for`.
        """
        if self._keys is None:
            raise AuthError(TEMPORARILY_UNAVAILABLE, f"{_NO_KEYS} yet; retry in a few seconds")
        key = self._find(kid, alg)
        if key is None:
            raise AuthError(INVALID_TOKEN, _UNKNOWN_KEY)
        return key

    def verifier(self, kid: str | None, alg: str) -> jwt.PyJWK:
        """Return the key of :meth:`key_for` parsed for PyJWT (parsed once per fetch).

        :raises AuthError: as :meth:`key_for`; ``invalid_token`` for a key PyJWT refuses.
        """
        found = self._parsed.get((kid, alg))
        if found is not None and time.monotonic() < self._expires:
            return found
        key = self.key_for(kid, alg)
        try:
            found = jwt.PyJWK(key, algorithm=alg)
        except jwt.PyJWTError:
            raise AuthError(INVALID_TOKEN, "the token's key cannot verify it") from None
        with self._lock:
            if self._keys is not None and any(k is key for k in self._keys):
                self._parsed[(kid, alg)] = found
        return found

    def _find(self, kid: str | None, alg: str) -> dict[str, t.Any] | None:
        candidates = [
            key
            for key in self._keys or ()
            if key.get("kty") == KEY_TYPES[alg]
            and key.get("use", "sig") == "sig"
            and key.get("alg", alg) == alg
            and "verify" in key.get("key_ops", ["verify"])
        ]
        if kid is not None:
            candidates = [key for key in candidates if key.get("kid") == kid]
        return candidates[0] if len(candidates) == 1 else None


class VerifiedTokens:
    """A bounded cache of verified tokens: their claims, by the SHA-256 of the token.

    An entry lasts until the token's ``exp`` or ``max_seconds`` after it was
    verified, whichever comes first; the oldest entries go when ``size`` are held.
    The token itself is not kept, only its digest.
    """

    def __init__(self, size: int = 10_000, max_seconds: float = 60.0) -> None:
        self.size = size
        self.max_seconds = max_seconds
        self._entries: collections.OrderedDict[bytes, tuple[float, dict[str, t.Any]]] = (
            collections.OrderedDict()
        )
        #: The caller built from an entry's claims (immutable), by the same digest.
        self.infos: dict[bytes, AuthInfo] = {}
        self._lock = threading.Lock()

    @staticmethod
    def digest(token: str) -> bytes:
        """Return the cache key of ``token``."""
        return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()

    def get(self, digest: bytes) -> dict[str, t.Any] | None:
        """Return a copy of the claims of a token verified earlier, if still fresh."""
        entry = self._entries.get(digest)
        if entry is None:
            return None
        if time.time() >= entry[0]:
            with self._lock:
                self._entries.pop(digest, None)
                self.infos.pop(digest, None)
            return None
        return dict(entry[1])

    def fresh(self, digest: bytes) -> bool:
        """Tell whether a token verified earlier is still trusted."""
        entry = self._entries.get(digest)
        return entry is not None and time.time() < entry[0]

    def put(self, digest: bytes, claims: dict[str, t.Any]) -> None:
        """Remember the claims of a token just verified."""
        if self.size <= 0 or self.max_seconds <= 0:
            return
        until = time.time() + self.max_seconds
        exp = claims.get("exp")
        if isinstance(exp, (int, float)) and not isinstance(exp, bool):
            until = min(until, float(exp))
        with self._lock:
            self._entries[digest] = (until, dict(claims))
            self._entries.move_to_end(digest)
            while len(self._entries) > self.size:
                self.infos.pop(self._entries.popitem(last=False)[0], None)

    def clear(self) -> None:
        """Forget every token (after revoking some, for example)."""
        with self._lock:
            self._entries.clear()
            self.infos.clear()

    def __len__(self) -> int:
        return len(self._entries)


class JWTAuthorizer:
    """Check JWT access tokens against the keys of a JWKS URL.

    :param jwks_url: where the authorization server publishes its keys.
    :param issuer: accepted ``iss`` values. Registered on a server without it, the
        authorizer of each app takes ``MCP_AUTH_AUTHORIZATION_SERVERS`` (see
        :meth:`with_defaults`).
    :param audience: accepted ``aud`` values (the same way: ``MCP_AUTH_RESOURCE``). A value
        may hold the placeholders of ``MCP_PATH``'s URL variables
        (``https://mcp.example.com/t/<tenant>/mcp``): each request fills them with its own
        values, so a token for one tenant's endpoint is refused at another's.
    :param algorithms: accepted signature algorithms (asymmetric only).
    :param leeway: seconds of clock skew allowed on ``exp``, ``nbf`` and ``iat``.
    :param required_claims: claims a token must have besides ``exp``, ``iss`` and ``aud``.
    :param cache_seconds: how long the JWKS is kept.
    :param refetch_interval: least seconds between two fetches for an unknown ``kid``.
    :param timeout: seconds to wait for the JWKS URL.
    :param max_waiting: requests that wait for a JWKS fetch in flight; the others are
        answered at once from the keys at hand (see :class:`JWKSCache`).
    :param allow_insecure_http: accept an ``http://`` JWKS URL outside localhost.
    :param token_cache_size: verified tokens remembered (0: verify every request).
    :param token_cache_seconds: longest time a verified token is trusted without being
        verified again (never past its ``exp``).

    Revocation: a verified token is trusted for up to ``token_cache_seconds`` (60 s)
    per process, so a token revoked at the authorization server keeps working for at
    most that long, as it would anyway until its ``exp`` for a resource server that
    only checks signatures (JWT access tokens are not introspected). A key removed from
    the JWKS stops verifying new tokens at the next fetch; tokens it verified stay
    trusted until their cache entry ends. Call :meth:`forget_tokens` to drop them all.
    """

    def __init__(
        self,
        jwks_url: str,
        *,
        issuer: str | t.Sequence[str] | None = None,
        audience: str | t.Sequence[str] | None = None,
        algorithms: t.Sequence[str] = ("RS256", "ES256"),
        leeway: float = 30.0,
        required_claims: t.Sequence[str] = (),
        cache_seconds: float = 300.0,
        refetch_interval: float = 30.0,
        timeout: float = 5.0,
        max_waiting: int = 8,
        allow_insecure_http: bool = False,
        token_cache_size: int = 10_000,
        token_cache_seconds: float = 60.0,
    ) -> None:
        check_https(jwks_url, "jwks_url", allow_insecure_http)
        self.verified = VerifiedTokens(token_cache_size, token_cache_seconds)
        self.issuer = (issuer,) if isinstance(issuer, str) else tuple(issuer or ())
        self.audience = (audience,) if isinstance(audience, str) else tuple(audience or ())
        self.algorithms = check_algorithms(algorithms)
        self.leeway = leeway
        self.required_claims = ["exp", "iss", "aud", *required_claims]
        self.keys = JWKSCache(
            jwks_url,
            cache_seconds=cache_seconds,
            refetch_interval=refetch_interval,
            timeout=timeout,
            max_waiting=max_waiting,
        )

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        issuer: t.Sequence[str] = (),
        audience: t.Sequence[str] = (),
    ) -> JWTAuthorizer:
        """Build the authorizer the ``MCP_AUTH_JWT_*`` settings describe.

        :param issuer: the issuers accepted when ``MCP_AUTH_JWT_ISSUER`` is unset.
        :param audience: the audience accepted when ``MCP_AUTH_JWT_AUDIENCE`` is unset.
        """
        return cls(
            t.cast(str, settings.auth_jwt_jwks_url),
            issuer=settings.auth_jwt_issuer or tuple(issuer),
            audience=settings.auth_jwt_audience or tuple(audience),
            algorithms=settings.auth_jwt_algorithms,
            leeway=settings.auth_jwt_leeway,
            cache_seconds=settings.auth_jwt_jwks_cache_seconds,
            allow_insecure_http=settings.auth_insecure_http,
        )

    def with_defaults(self, *, issuer: t.Sequence[str], audience: t.Sequence[str]) -> JWTAuthorizer:
        """Return this authorizer with ``issuer`` and ``audience`` where it has none.

        Called once per app when the authorizer is registered on a server
        (``mcp.authorizer(JWTAuthorizer(url))``): the app's
        ``MCP_AUTH_AUTHORIZATION_SERVERS`` and ``MCP_AUTH_RESOURCE`` complete it.
        The copy shares the key cache. Returns ``self`` when nothing is missing.
        """
        if self.issuer and self.audience:
            return self
        bound = copy.copy(self)
        bound.issuer = self.issuer or tuple(issuer)
        bound.audience = self.audience or tuple(audience)
        # Its own token cache: a token verified for one audience proves nothing for another.
        bound.verified = VerifiedTokens(self.verified.size, self.verified.max_seconds)
        return bound

    def forget_tokens(self) -> None:
        """Verify every token again from now on (in this process), e.g. after a revocation."""
        self.verified.clear()

    def _expected(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Return the accepted issuers and audiences."""
        if not self.issuer or not self.audience:  # never skip these checks
            raise RuntimeError(
                "JWTAuthorizer has no issuer or audience to check: pass issuer= and audience=, or "
                "register it on a server (mcp.authorizer) whose app sets "
                "MCP_AUTH_AUTHORIZATION_SERVERS and MCP_AUTH_RESOURCE."
            )
        return self.issuer, self.audience

    def audience_for(self, request: Request | None) -> tuple[str, ...]:
        """Return the audiences a token must name for ``request``.

        The placeholders of ``MCP_PATH``'s URL variables are filled with the request's
        values (``request.view_args``); an audience left with placeholders (a request
        outside the MCP endpoint) accepts no token.
        """
        audience = self.audience
        if not any("<" in value for value in audience):
            return audience
        values = getattr(request, "view_args", None) or {}
        filled = (fill_path_args(value, values) for value in audience)
        return tuple(value for value in filled if "<" not in value)

    def _digest(self, token: str, audience: tuple[str, ...]) -> bytes:
        """Return the cache key of ``token`` verified for ``audience``."""
        if audience == self.audience:
            return self.verified.digest(token)
        return self.verified.digest("\n".join((token, *audience)))  # one entry per tenant

    def decode(self, token: str, *, audience: t.Sequence[str] | None = None) -> dict[str, t.Any]:
        """Return the verified claims of ``token``.

        :param audience: the audiences accepted (default: :attr:`audience`); see
            :meth:`audience_for`.
        :raises AuthError: the token is not acceptable (the reason never quotes it).
        """
        issuer, expected = self._expected()
        audience = expected if audience is None else tuple(audience)
        if not audience:
            raise AuthError(INVALID_TOKEN, _WRONG_AUDIENCE)
        digest = self._digest(token, audience)
        cached = self.verified.get(digest)
        if cached is not None:
            return cached
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise AuthError(INVALID_TOKEN, "the token is not a well-formed JWT") from None
        alg, kid = header.get("alg"), header.get("kid")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise AuthError(INVALID_TOKEN, "the token's signature algorithm (alg) is not accepted")
        if kid is not None and not isinstance(kid, str):
            raise AuthError(INVALID_TOKEN, "the token's key id (kid) is not a string")
        try:
            key = self.keys.verifier(kid, alg)
            claims: dict[str, t.Any] = jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=list(audience),
                issuer=list(issuer),
                leeway=self.leeway,
                options={"require": self.required_claims},
            )
            self.verified.put(digest, claims)
            return claims
        except jwt.MissingRequiredClaimError as exc:
            raise AuthError(INVALID_TOKEN, f"the token has no {exc.claim!r} claim") from None
        except jwt.PyJWTError as exc:
            reason = next((text for kind, text in _REASONS if isinstance(exc, kind)), None)
            raise AuthError(INVALID_TOKEN, reason or "the token is not valid") from None

    def __call__(self, token: str, request: Request) -> AuthInfo:
        """Check ``token`` and return the caller, or raise :class:`~flask_mcp.auth.AuthError`."""
        audience = self.audience_for(request)
        digest = self._digest(token, audience)
        info = self.verified.infos.get(digest)
        if info is not None and self.verified.fresh(digest):
            return info
        info = auth_info_from_claims(self.decode(token, audience=audience))
        if digest in self.verified._entries:
            self.verified.infos[digest] = info
        return info


__all__ = ["JWKSCache", "JWTAuthorizer", "KEY_TYPES", "VerifiedTokens", "check_algorithms"]
