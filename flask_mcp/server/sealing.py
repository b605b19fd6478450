"""Seal and unseal opaque tokens such as the MRTR ``requestState``.

A 2026-07-28 server that answers with an ``InputRequiredResult`` may put
whatever it needs to resume the request into ``requestState``; the client
echoes it back unchanged on the retry. The client is not trusted, so the spec
requires the state to be integrity protected and rejected when verification
fails (``basic/patterns/mrtr.mdx``, "Server Requirements").

:class:`StateSealer` does that with the standard library only::

    sealer = StateSealer(app.secret_key)
    token = sealer.seal({"step": 1}, bind="alice|tools/call|book_flight")
    state = sealer.unseal(token, bind="alice|tools/call|book_flight")

.. warning::
    By default the token is **signed, not encrypted**: the client can decode
    and read the payload (it is base64-encoded JSON). Keep secrets out of it,
    or pass ``encrypt=True`` to use AES-GCM from the optional
    ``cryptography`` package.

Token formats (all base64 is URL-safe without padding)::

    v1.<base64 JSON envelope>.<base64 HMAC-SHA256 tag>    signed
    e1.<base64 nonce + AES-GCM ciphertext>                 encrypted

The envelope is ``{"t": <issued at, ms since the epoch>, "d": <payload>}``.
Keys are never used directly: a subkey is derived per ``purpose`` with
HKDF-SHA256 (RFC 5869), so a token sealed for one purpose never unseals for
another even when the same secret is shared.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import re
import time
import typing as t

__all__ = ["InvalidState", "StateSealer", "fingerprint", "secret_keys"]

_SIGNED = "v1"
_ENCRYPTED = "e1"
_B64URL = re.compile(r"[A-Za-z0-9_-]*")
_KDF_SALT = b"flask-mcp/state-sealer"
_NONCE_SIZE = 12

#: Tokens longer than this are rejected before any decoding work.
MAX_TOKEN_LENGTH = 1_000_000


class InvalidState(ValueError):
    """A sealed token is malformed, tampered with, expired or not yet valid.

    The message says what was wrong; it is safe to show to the client, as it
    never contains key material. For MRTR ``requestState`` the spec's
    reference answer is a JSON-RPC ``-32602`` (Invalid params) error.

    :param reason: why the token was rejected.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def fingerprint(*parts: t.Any) -> str:
    """Return a short, stable digest of JSON-serialisable ``parts``.

    Useful as the ``bind`` value that ties a token to the request that
    produced it, e.g. ``fingerprint(principal, "tools/call", name)``.
    """
    data = json.dumps(parts, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:32]


def secret_keys(config: t.Mapping[str, t.Any]) -> list[bytes | str]:
    """Return an app's ``SECRET_KEY`` then its ``SECRET_KEY_FALLBACKS``, the order a sealer takes.

    Flask (3.1 and later) signs with ``SECRET_KEY`` and still accepts what the old
    keys in ``SECRET_KEY_FALLBACKS`` signed; a sealer given this list does the same.
    Empty when ``SECRET_KEY`` is unset.
    """
    if not config.get("SECRET_KEY"):
        return []
    return [config["SECRET_KEY"], *(k for k in config.get("SECRET_KEY_FALLBACKS") or () if k)]


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64decode(text: str, what: str) -> bytes:
    if not _B64URL.fullmatch(text) or len(text) % 4 == 1:
        raise InvalidState(f"The state token is malformed: its {what} is not URL-safe base64.")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):  # pragma: no cover - guarded by the regex
        raise InvalidState(
            f"The state token is malformed: its {what} is not URL-safe base64."
        ) from None


def _hkdf(key: bytes, info: bytes, length: int = 32) -> bytes:
    """Derive ``length`` bytes from ``key`` with HKDF-SHA256 (RFC 5869)."""
    prk = hmac.new(_KDF_SALT, key, hashlib.sha256).digest()
    out = b""
    block = b""
    counter = 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


def _normalize_keys(key: bytes | str | t.Sequence[bytes | str]) -> list[bytes]:
    raw: list[bytes | str] = [key] if isinstance(key, (bytes, str)) else list(key)
    if not raw:
        raise ValueError(
            "StateSealer needs at least one key. Pass the application's secret key,"
            " e.g. StateSealer(app.secret_key), or a list [new_key, old_key] to rotate."
        )
    keys: list[bytes] = []
    for item in raw:
        if isinstance(item, str):
            item = item.encode("utf-8")
        if not isinstance(item, bytes):
            raise TypeError(f"StateSealer keys must be bytes or str, not {type(item).__name__}.")
        if not item:
            raise ValueError(
                "StateSealer got an empty key. Set a secret key, for example"
                " app.secret_key = secrets.token_hex(32)."
            )
        keys.append(item)
    return keys


class StateSealer:
    """Seal JSON-serialisable payloads into opaque, tamper-evident strings.

    :param key: the secret, or a sequence of secrets for key rotation. The
        first key seals; every key is tried when unsealing, so put the new key
        first and keep the old one until its tokens have expired.
    :param max_age: seconds a token stays valid after it was sealed. ``None``
        disables expiry (not recommended: the spec asks for a short TTL to
        limit replay).
    :param purpose: separates token families. Tokens sealed for one purpose
        never unseal for another, even with the same key.
    :param encrypt: encrypt with AES-GCM so the client cannot read the
        payload. Needs the ``cryptography`` package. Signed (``v1``) tokens
        from an earlier non-encrypting sealer with the same key still unseal.
    :param leeway: seconds of clock skew tolerated for tokens that look like
        they were sealed in the future (e.g. by another instance).
    :param clock: returns the current time in seconds; for tests.
    """

    def __init__(
        self,
        key: bytes | str | t.Sequence[bytes | str],
        *,
        max_age: float | None = 600.0,
        purpose: str = "mcp-request-state",
        encrypt: bool = False,
        leeway: float = 5.0,
        clock: t.Callable[[], float] = time.time,
    ) -> None:
        if max_age is not None and max_age <= 0:
            raise ValueError(f"max_age must be positive or None, got {max_age!r}.")
        if leeway < 0:
            raise ValueError(f"leeway must not be negative, got {leeway!r}.")
        if not purpose:
            raise ValueError("purpose must be a non-empty string, e.g. 'mcp-request-state'.")
        keys = _normalize_keys(key)
        info = purpose.encode("utf-8")
        self.max_age = max_age
        self.purpose = purpose
        self.encrypt = encrypt
        self.leeway = leeway
        self._clock = clock
        self._mac_keys = [_hkdf(k, b"mac\x00" + info) for k in keys]
        self._aead: list[t.Any] = []
        if encrypt:
            try:
                from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            except ImportError:  # pragma: no cover - depends on the environment
                raise RuntimeError(
                    "StateSealer(encrypt=True) needs the 'cryptography' package."
                    " Install it (pip install cryptography) or use encrypt=False;"
                    " signed tokens are tamper-proof but readable by the client."
                ) from None
            self._aead = [AESGCM(_hkdf(k, b"enc\x00" + info)) for k in keys]

    def seal(self, payload: t.Any, *, bind: str | None = None) -> str:
        """Return an opaque token carrying ``payload``.

        :param payload: any JSON-serialisable value. It comes back from
            :meth:`unseal` as JSON would (tuples become lists, and so on).
        :param bind: an optional context string, such as the principal and
            the request it belongs to (see :func:`fingerprint`). It is not
            stored in the token; :meth:`unseal` must be given the same value.
        :raises TypeError: if ``payload`` is not JSON-serialisable.
        """
        now_ms = int(self._clock() * 1000)
        try:
            body = json.dumps(
                {"t": now_ms, "d": payload},
                separators=(",", ":"),
                ensure_ascii=False,
                allow_nan=False,
            ).encode("utf-8")
        except (TypeError, ValueError) as e:
            raise TypeError(
                f"The state payload must be JSON-serialisable ({e}). Store plain"
                " dicts, lists, strings, numbers, booleans and None."
            ) from None
        if self.encrypt:
            nonce = os.urandom(_NONCE_SIZE)
            ciphertext = self._aead[0].encrypt(nonce, body, self._aad(bind))
            return f"{_ENCRYPTED}.{_b64encode(nonce + ciphertext)}"
        encoded = _b64encode(body)
        return f"{_SIGNED}.{encoded}.{self._tag(self._mac_keys[0], encoded, bind)}"

    def unseal(self, token: str, *, bind: str | None = None) -> t.Any:
        """Verify ``token`` and return the payload it carries.

        :param token: a value produced by :meth:`seal`.
        :param bind: the same context string given to :meth:`seal`, if any.
        :raises InvalidState: if the token is malformed, fails verification
            (tampered, sealed with an unknown key, for another purpose or
            another ``bind``), has expired, or is dated in the future.
        """
        if not isinstance(token, str):
            raise InvalidState(
                f"The state token must be a string, not {type(token).__name__}."
                " Echo back the exact requestState the server sent."
            )
        if len(token) > MAX_TOKEN_LENGTH:
            raise InvalidState("The state token is too long.")
        version, _, rest = token.partition(".")
        if version == _SIGNED:
            body = self._verify_signed(rest, bind)
        elif version == _ENCRYPTED and self.encrypt:
            body = self._decrypt(rest, bind)
        elif version == _ENCRYPTED:
            raise InvalidState(
                "The state token is encrypted but this sealer does not decrypt;"
                " create the StateSealer with encrypt=True."
            )
        else:
            raise InvalidState(
                "The state token is malformed or has an unknown version."
                " Echo back the exact requestState the server sent."
            )
        return self._open_envelope(body)

    def _aad(self, bind: str | None) -> bytes:
        return _ENCRYPTED.encode("ascii") + b"\x00" + (bind or "").encode("utf-8")

    @staticmethod
    def _tag(mac_key: bytes, encoded: str, bind: str | None) -> str:
        msg = f"{_SIGNED}.{encoded}\x00{bind or ''}".encode()
        return _b64encode(hmac.new(mac_key, msg, hashlib.sha256).digest())

    def _verify_signed(self, rest: str, bind: str | None) -> bytes:
        encoded, sep, tag = rest.partition(".")
        if not sep or not encoded or not tag:
            raise InvalidState("The state token is malformed: expected 'v1.<payload>.<signature>'.")
        if not _B64URL.fullmatch(tag):
            raise InvalidState(self._tampered_message())
        for mac_key in self._mac_keys:
            if hmac.compare_digest(self._tag(mac_key, encoded, bind), tag):
                return _b64decode(encoded, "payload")
        raise InvalidState(self._tampered_message())

    def _decrypt(self, rest: str, bind: str | None) -> bytes:
        from cryptography.exceptions import InvalidTag

        data = _b64decode(rest, "ciphertext")
        if len(data) < _NONCE_SIZE + 16:
            raise InvalidState("The state token is malformed: its ciphertext is too short.")
        nonce, ciphertext = data[:_NONCE_SIZE], data[_NONCE_SIZE:]
        aad = self._aad(bind)
        for aead in self._aead:
            try:
                return t.cast(bytes, aead.decrypt(nonce, ciphertext, aad))
            except InvalidTag:
                continue
        raise InvalidState(self._tampered_message())

    @staticmethod
    def _tampered_message() -> str:
        return (
            "The state token failed its integrity check: it was modified, sealed"
            " with an unknown key, or belongs to a different request."
        )

    def _open_envelope(self, body: bytes) -> t.Any:
        try:
            envelope = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise InvalidState("The state token's payload is not valid JSON.") from None
        issued = envelope.get("t") if isinstance(envelope, dict) else None
        if not isinstance(issued, int) or isinstance(issued, bool) or "d" not in envelope:
            raise InvalidState("The state token's payload has an unexpected layout.")
        now_ms = self._clock() * 1000
        if issued > now_ms + self.leeway * 1000:
            raise InvalidState(
                "The state token was issued in the future; check that the servers'"
                " clocks are synchronised."
            )
        if self.max_age is not None and now_ms - issued > self.max_age * 1000:
            raise InvalidState(
                f"The state token has expired (it is valid for {self.max_age:g} s)."
                " Start the request again without requestState."
            )
        return envelope["d"]
