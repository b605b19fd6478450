"""The JWT authorizer's caches: keys parsed once per JWKS fetch, verified tokens by digest."""

from __future__ import annotations

import time
import typing as t

import pytest

jwt = pytest.importorskip("jwt")

from jwt_keys import ISSUER  # noqa: E402
from jwt_keys import RESOURCE  # noqa: E402
from jwt_keys import JWKSServer  # noqa: E402
from jwt_keys import Keys  # noqa: E402
from jwt_keys import tampered  # noqa: E402

from flask_mcp.auth import AuthError  # noqa: E402
from flask_mcp.auth.jwt_authorizer import JWTAuthorizer  # noqa: E402
from flask_mcp.auth.jwt_authorizer import VerifiedTokens  # noqa: E402


@pytest.fixture
def keys() -> Keys:
    return Keys()


@pytest.fixture
def jwks_url(keys: Keys) -> t.Iterator[str]:
    with JWKSServer(keys) as served:
        yield served.url


def counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    calls: list[int] = []
    original = getattr(jwt, name)

    def counted(*args: t.Any, **kwargs: t.Any) -> t.Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(jwt, name, counted)
    return calls


def test_a_token_is_verified_once_and_keys_parsed_once(
    jwks_url: str, keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    decodes, parses = counting(monkeypatch, "decode"), counting(monkeypatch, "PyJWK")
    authorizer = JWTAuthorizer(jwks_url, issuer=ISSUER, audience=RESOURCE)
    first, second = keys.mint(subject="alice"), keys.mint(subject="bob")
    for _ in range(3):
        assert authorizer.decode(first)["sub"] == "alice"
        assert authorizer.decode(second)["sub"] == "bob"
    assert len(decodes) == 2  # one per distinct token
    assert len(parses) == 1  # one per key and fetch
    claims = authorizer.decode(first)
    claims["sub"] = "mallory"  # a caller changing its copy changes nothing cached
    assert authorizer.decode(first)["sub"] == "alice"
    with pytest.raises(AuthError, match="signature"):
        authorizer.decode(tampered(first))  # another digest: verified, and refused
    info = authorizer(first, None)  # type: ignore[arg-type]
    assert authorizer(first, None) is info and info.principal == f"{ISSUER}|alice"  # type: ignore[arg-type]
    authorizer.forget_tokens()
    authorizer.decode(first)
    assert len(decodes) == 4


def test_a_bound_copy_does_not_trust_tokens_verified_for_another_audience(
    jwks_url: str, keys: Keys
) -> None:
    base = JWTAuthorizer(jwks_url)
    a = base.with_defaults(issuer=[ISSUER], audience=[RESOURCE])
    b = base.with_defaults(issuer=[ISSUER], audience=["https://other.example/mcp"])
    token = keys.mint()
    assert a.decode(token)["aud"] == RESOURCE
    with pytest.raises(AuthError, match="another resource"):
        b.decode(token)


def test_verified_tokens_end_at_exp_or_max_seconds_and_stay_bounded() -> None:
    cache = VerifiedTokens(size=3, max_seconds=60)
    now = time.time()
    cache.put(cache.digest("expired"), {"exp": now - 1})
    assert cache.get(cache.digest("expired")) is None
    cache.put(cache.digest("young"), {"exp": now + 3600})
    until = cache._entries[cache.digest("young")][0]
    assert now + 59 <= until <= now + 61  # 60 s, not the hour left to exp
    for i in range(5):
        cache.put(cache.digest(f"t{i}"), {"exp": now + 3600, "i": i})
    assert len(cache) == 3
    assert cache.get(cache.digest("t0")) is None and cache.get(cache.digest("t4")) == {
        "exp": now + 3600,
        "i": 4,
    }
    off = VerifiedTokens(size=0)
    off.put(off.digest("x"), {"exp": now + 10})
    assert off.get(off.digest("x")) is None
