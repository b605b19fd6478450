"""Signing keys: one ES256 key per rotation period, shared by every worker, published as a JWKS.

The key of period ``n`` (``n = now // rotation``) is created by whichever worker
needs it first; :meth:`~.storage.Storage.add_signing_key` makes every other worker
read that same key instead of making its own. Tokens are signed with the key of
the current period; the JWKS publishes it, the previous one (tokens it signed
are still valid) and the next one, so that a resource server caching the JWKS
already knows the key of the next period when it starts signing.

The storage never holds a private key in clear: its private part (the JWK's
``d``) is sealed with the app's ``SECRET_KEY`` (AES-GCM, under a subkey derived
for this purpose alone, :class:`~flask_mcp.server.sealing.StateSealer`) and bound
to its ``kid``, and the old keys of ``SECRET_KEY_FALLBACKS`` still unseal it. A
copy of the storage (a backup, a replica, a dump) without the secret signs nothing.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import typing as t

import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from ...server.sealing import InvalidState
from ...server.sealing import StateSealer
from .storage import Record
from .storage import Storage

ALGORITHM = "ES256"
#: The stored JWK's field holding its sealed private part, in place of ``d``.
SEALED_FIELD = "d_sealed"
#: The sealer's purpose: its subkeys of ``SECRET_KEY`` seal nothing else.
SEALING_PURPOSE = "flask-mcp/oauth-signing-key"
#: The fields of an EC JWK that name its public point.
_CURVE_FIELDS = ("kty", "crv", "x", "y")


@dataclasses.dataclass
class _PeriodKey:
    """One period's key as this process knows it."""

    #: The public JWK, as the JWKS publishes it.
    public: dict[str, t.Any]
    #: The stored private part, sealed (``None`` in a record without one).
    sealed: str | None
    #: The private key, once unsealed (only the period that signs needs it).
    private: t.Any = None

    @classmethod
    def from_record(cls, record: Record) -> _PeriodKey:
        """Read a stored key: its public JWK and its sealed private part."""
        public = {field: record[field] for field in (*_CURVE_FIELDS, "kid")}
        public.update({"use": "sig", "alg": ALGORITHM})
        sealed = record.get(SEALED_FIELD)
        return cls(public, sealed if isinstance(sealed, str) else None)


class SigningKeys:
    """The rotating keys of one app's authorization server.

    :param storage: where the keys live (shared by every worker).
    :param rotation: seconds between two keys.
    :param secrets: returns the secrets that seal the private keys, the sealing
        one first (the app's ``SECRET_KEY`` then its ``SECRET_KEY_FALLBACKS``).
    """

    def __init__(
        self,
        storage: Storage,
        rotation: float,
        secrets: t.Callable[[], t.Sequence[bytes | str]],
    ) -> None:
        self.storage = storage
        self.rotation = rotation
        self.secrets = secrets
        #: The keys of the periods seen lately.
        self._periods: dict[int, _PeriodKey] = {}
        self._lock = threading.Lock()

    def _period(self, now: float | None = None) -> int:
        return int((time.time() if now is None else now) // self.rotation)

    def _sealer(self) -> StateSealer:
        keys = list(self.secrets())
        if not keys:
            raise RuntimeError(
                "The authorization server seals its signing keys with the app's SECRET_KEY: "
                "set app.config['SECRET_KEY'] to a long random value (secrets.token_hex(32)), "
                "the same in every worker."
            )
        return StateSealer(keys, max_age=None, purpose=SEALING_PURPOSE, encrypt=True)

    def _new_record(self, period: int) -> Record:
        """Make the key of ``period``: its public JWK and its private part, sealed."""
        jwk = ECAlgorithm.to_jwk(ec.generate_private_key(ec.SECP256R1()), as_dict=True)
        kid = f"{period}-{jwk['x'][:16]}"
        record = {field: jwk[field] for field in _CURVE_FIELDS}
        record["kid"] = kid
        record[SEALED_FIELD] = self._sealer().seal(jwk["d"], bind=kid)
        return record

    def _load(self, period: int) -> _PeriodKey:
        found = self._periods.get(period)
        if found is not None:
            return found
        # Kept three periods: its own, then verifying and published in the next one.
        ttl = self.rotation * 3
        record = self.storage.signing_key(period)
        if record is None:
            made = self._new_record(period)
            self.storage.add_signing_key(period, made, ttl)
            record = self.storage.signing_key(period) or made
        key = _PeriodKey.from_record(record)
        with self._lock:
            self._periods[period] = key
            for old in [p for p in self._periods if p < period - 2]:
                del self._periods[old]
        return key

    def _unseal(self, key: _PeriodKey) -> t.Any:
        """Return the private key of ``key``, unsealed with the app's secrets.

        :raises RuntimeError: it cannot be: no secret, another secret, or no sealed part.
        """
        kid = key.public["kid"]
        if key.sealed is None:
            raise RuntimeError(
                f"The stored signing key {kid} has no sealed private part ({SEALED_FIELD!r}), "
                "so it was not made by this authorization server: delete it from the "
                "storage (its period's record) and the next request makes a new one."
            )
        try:
            private = self._sealer().unseal(key.sealed, bind=kid)
        except InvalidState:
            raise RuntimeError(
                f"The signing key {kid} was sealed with another secret than SECRET_KEY and "
                "SECRET_KEY_FALLBACKS: every worker needs the same SECRET_KEY, and a "
                "replaced one stays in SECRET_KEY_FALLBACKS while its keys live "
                "(three MCP_OAUTH_KEY_ROTATION periods)."
            ) from None
        jwk = {field: key.public[field] for field in _CURVE_FIELDS}
        return ECAlgorithm.from_jwk({**jwk, "d": private})

    def current(self) -> tuple[t.Any, str]:
        """Return the private key to sign with now and its ``kid``.

        :raises RuntimeError: the key cannot be unsealed (the message says why).
        """
        key = self._load(self._period())
        if key.private is None:
            key.private = self._unseal(key)
        return key.private, t.cast(str, key.public["kid"])

    def check(self) -> str:
        """Say whether the key of this period unseals here, reading the storage only.

        For ``flask mcp check``: a worker whose ``SECRET_KEY`` differs from the one
        that sealed the stored key fails its first token request.

        :raises RuntimeError: the stored key cannot be unsealed (the message says why).
        """
        record = self.storage.signing_key(self._period())
        if record is None:
            return "no signing key is stored for this period yet: the first token request makes it"
        key = _PeriodKey.from_record(record)
        self._unseal(key)
        return f"the signing key {key.public['kid']} unseals with this app's SECRET_KEY"

    def public_keys(self) -> list[dict[str, t.Any]]:
        """Return the public JWKs of the previous, current and next periods."""
        now = self._period()
        return [self._load(period).public for period in (now - 1, now, now + 1)]

    def jwks(self) -> dict[str, t.Any]:
        """Return the JWKS document."""
        return {"keys": self.public_keys()}

    def verifier(self, kid: str | None, alg: str) -> jwt.PyJWK:
        """Return the key that verifies a token with this ``kid`` (for the resource server).

        :raises LookupError: the ``kid`` names no key of the last three periods.
        """
        if alg != ALGORITHM or not isinstance(kid, str) or "-" not in kid:
            raise LookupError(kid)
        try:
            period = int(kid.split("-", 1)[0])
        except ValueError:
            raise LookupError(kid) from None
        if not self._period() - 1 <= period <= self._period() + 1:
            raise LookupError(kid)
        public = self._load(period).public
        if public["kid"] != kid:
            raise LookupError(kid)
        return jwt.PyJWK(public, algorithm=ALGORITHM)

    def sign(self, claims: dict[str, t.Any]) -> str:
        """Return ``claims`` as a JWT access token (``typ`` ``at+jwt``, RFC 9068)."""
        private, kid = self.current()
        return jwt.encode(
            claims, private, algorithm=ALGORITHM, headers={"kid": kid, "typ": "at+jwt"}
        )


__all__ = ["ALGORITHM", "SEALED_FIELD", "SEALING_PURPOSE", "SigningKeys"]
