"""Signing keys: one ES256 key per rotation period, shared by every worker, published as a JWKS.

The key of period ``n`` (``n = now // rotation``) is created by whichever worker
needs it first; :meth:`~.storage.Storage.add_signing_key` makes every other worker
read that same key instead of making its own. Tokens are signed with the key of
the current period; the JWKS publishes it, the previous one (tokens it signed
are still valid) and the next one, so that a resource server caching the JWKS
already knows the key of the next period when it starts signing.
Private keys are kept in the storage: protect it like a password database.
"""

from __future__ import annotations

import threading
import time
import typing as t

import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from .storage import Storage

ALGORITHM = "ES256"


class SigningKeys:
    """The rotating keys of one app's authorization server.

    :param storage: where the keys live (shared by every worker).
    :param rotation: seconds between two keys.
    """

    def __init__(self, storage: Storage, rotation: float) -> None:
        self.storage = storage
        self.rotation = rotation
        #: Parsed keys by period: the private key and the public JWK.
        self._periods: dict[int, tuple[t.Any, dict[str, t.Any]]] = {}
        self._lock = threading.Lock()

    def _period(self, now: float | None = None) -> int:
        return int((time.time() if now is None else now) // self.rotation)

    def _load(self, period: int) -> tuple[t.Any, dict[str, t.Any]]:
        found = self._periods.get(period)
        if found is not None:
            return found
        # Kept three periods: its own, then verifying and published in the next one.
        ttl = self.rotation * 3
        record = self.storage.signing_key(period)
        if record is None:
            private = ec.generate_private_key(ec.SECP256R1())
            jwk = ECAlgorithm.to_jwk(private, as_dict=True)
            jwk["kid"] = f"{period}-{jwk['x'][:16]}"
            self.storage.add_signing_key(period, jwk, ttl)
            record = self.storage.signing_key(period) or jwk
        private_key = ECAlgorithm.from_jwk(record)
        public = {k: record[k] for k in ("kty", "crv", "x", "y", "kid")}
        public.update({"use": "sig", "alg": ALGORITHM})
        with self._lock:
            self._periods[period] = (private_key, public)
            for old in [p for p in self._periods if p < period - 2]:
                del self._periods[old]
        return private_key, public

    def current(self) -> tuple[t.Any, str]:
        """Return the private key to sign with now and its ``kid``."""
        private, public = self._load(self._period())
        return private, t.cast(str, public["kid"])

    def public_keys(self) -> list[dict[str, t.Any]]:
        """Return the public JWKs of the previous, current and next periods."""
        now = self._period()
        return [self._load(period)[1] for period in (now - 1, now, now + 1)]

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
        public = self._load(period)[1]
        if public["kid"] != kid:
            raise LookupError(kid)
        return jwt.PyJWK(public, algorithm=ALGORITHM)

    def sign(self, claims: dict[str, t.Any]) -> str:
        """Return ``claims`` as a JWT access token (``typ`` ``at+jwt``, RFC 9068)."""
        private, kid = self.current()
        return jwt.encode(
            claims, private, algorithm=ALGORITHM, headers={"kid": kid, "typ": "at+jwt"}
        )


__all__ = ["ALGORITHM", "SigningKeys"]
