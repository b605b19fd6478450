from __future__ import annotations

import base64
import json
import typing as t

import pytest

from flask_mcp.server.sealing import MAX_TOKEN_LENGTH
from flask_mcp.server.sealing import InvalidState
from flask_mcp.server.sealing import StateSealer
from flask_mcp.server.sealing import fingerprint


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@pytest.mark.parametrize(
    "payload",
    [{"step": 1, "args": {"city": "Paris"}}, [1, 2, 3], "text", 42, 1.5, True, None, {}, "世界"],
)
def test_round_trip(payload: t.Any) -> None:
    sealer = StateSealer("secret")
    assert sealer.unseal(sealer.seal(payload)) == payload


def test_token_shape_is_compact_url_safe() -> None:
    token = StateSealer(b"secret").seal({"a": "b" * 100})
    version, body, tag = token.split(".")
    assert version == "v1"
    assert "=" not in token and "+" not in token and "/" not in token
    envelope = json.loads(_unb64(body))
    assert envelope["d"] == {"a": "b" * 100}
    assert isinstance(envelope["t"], int)
    assert len(_unb64(tag)) == 32


def test_payload_is_readable_without_encryption() -> None:
    # Documented: signing gives integrity only.
    token = StateSealer("k").seal({"visible": "yes"})
    assert b"visible" in _unb64(token.split(".")[1])


def test_tuples_come_back_as_lists() -> None:
    sealer = StateSealer("k")
    assert sealer.unseal(sealer.seal({"t": (1, 2)})) == {"t": [1, 2]}


def test_tampered_suffix_rejected() -> None:
    # The conformance "tampered-state" probe appends "-TAMPERED".
    sealer = StateSealer("k")
    token = sealer.seal({"ok": True})
    with pytest.raises(InvalidState, match="integrity"):
        sealer.unseal(token + "-TAMPERED")


def test_modified_payload_rejected() -> None:
    sealer = StateSealer("k")
    version, body, tag = sealer.seal({"admin": False}).split(".")
    envelope = json.loads(_unb64(body))
    envelope["d"]["admin"] = True
    forged = f"{version}.{_b64(json.dumps(envelope).encode())}.{tag}"
    with pytest.raises(InvalidState, match="integrity"):
        sealer.unseal(forged)


def test_flipped_tag_rejected() -> None:
    sealer = StateSealer("k")
    version, body, tag = sealer.seal(1).split(".")
    raw = bytearray(_unb64(tag))
    raw[0] ^= 1
    with pytest.raises(InvalidState):
        sealer.unseal(f"{version}.{body}.{_b64(bytes(raw))}")


def test_wrong_key_rejected() -> None:
    token = StateSealer("a").seal(1)
    with pytest.raises(InvalidState, match="unknown key"):
        StateSealer("b").unseal(token)


def test_purpose_separates_tokens() -> None:
    token = StateSealer("k", purpose="one").seal(1)
    assert StateSealer("k", purpose="one").unseal(token) == 1
    with pytest.raises(InvalidState):
        StateSealer("k", purpose="two").unseal(token)


def test_bind_must_match() -> None:
    sealer = StateSealer("k")
    token = sealer.seal({"x": 1}, bind="alice|tools/call|t")
    assert sealer.unseal(token, bind="alice|tools/call|t") == {"x": 1}
    with pytest.raises(InvalidState, match="different request"):
        sealer.unseal(token, bind="bob|tools/call|t")
    with pytest.raises(InvalidState):
        sealer.unseal(token)


@pytest.mark.parametrize(
    "token",
    [
        "",
        "garbage",
        "v1",
        "v1.",
        "v1.abc",
        "v1..tag",
        "v1.abc.",
        "v2.abc.def",
        "v1.a*c.def",
        "v1.abc.d!f",
        "x" * 50,
    ],
)
def test_malformed_rejected(token: str) -> None:
    with pytest.raises(InvalidState):
        StateSealer("k").unseal(token)


def test_non_string_rejected() -> None:
    with pytest.raises(InvalidState, match="string"):
        StateSealer("k").unseal(t.cast(str, 123))


def test_too_long_rejected() -> None:
    with pytest.raises(InvalidState, match="too long"):
        StateSealer("k").unseal("v1." + "a" * MAX_TOKEN_LENGTH)


def test_invalid_state_is_value_error_with_reason() -> None:
    with pytest.raises(ValueError) as info:
        StateSealer("k").unseal("nope")
    assert isinstance(info.value, InvalidState)
    assert info.value.reason == str(info.value)


def test_expired() -> None:
    clock = Clock()
    sealer = StateSealer("k", max_age=60, clock=clock)
    token = sealer.seal("s")
    clock.now += 59.9
    assert sealer.unseal(token) == "s"
    clock.now += 0.2
    with pytest.raises(InvalidState, match="expired"):
        sealer.unseal(token)


def test_no_expiry() -> None:
    clock = Clock()
    sealer = StateSealer("k", max_age=None, clock=clock)
    token = sealer.seal("s")
    clock.now += 10**9
    assert sealer.unseal(token) == "s"


def test_future_dated_rejected_beyond_leeway() -> None:
    clock = Clock()
    issuer = StateSealer("k", clock=Clock(clock.now + 4))
    future = StateSealer("k", clock=Clock(clock.now + 60))
    sealer = StateSealer("k", clock=clock, leeway=5)
    assert sealer.unseal(issuer.seal(1)) == 1
    with pytest.raises(InvalidState, match="future"):
        sealer.unseal(future.seal(1))


def test_key_rotation() -> None:
    old = StateSealer("old")
    rotated = StateSealer(["new", "old"])
    old_token = old.seal("from-old")
    new_token = rotated.seal("from-new")
    assert rotated.unseal(old_token) == "from-old"
    assert rotated.unseal(new_token) == "from-new"
    assert StateSealer("new").unseal(new_token) == "from-new"
    with pytest.raises(InvalidState):
        old.unseal(new_token)


def test_str_and_bytes_keys_equivalent() -> None:
    assert StateSealer(b"k\xc3\xa9").unseal(StateSealer("ké").seal(1)) == 1


@pytest.mark.parametrize("key", ["", b"", [], ["ok", ""]])
def test_empty_keys_rejected(key: t.Any) -> None:
    with pytest.raises(ValueError, match="key"):
        StateSealer(key)


def test_bad_key_type_rejected() -> None:
    with pytest.raises(TypeError, match="bytes or str"):
        StateSealer([t.cast(str, 1)])


@pytest.mark.parametrize(
    "kwargs", [{"max_age": 0}, {"max_age": -1}, {"leeway": -1}, {"purpose": ""}]
)
def test_bad_options_rejected(kwargs: dict[str, t.Any]) -> None:
    with pytest.raises(ValueError):
        StateSealer("k", **kwargs)


@pytest.mark.parametrize("payload", [object(), {"x": {1, 2}}, float("nan")])
def test_unserialisable_payload(payload: t.Any) -> None:
    with pytest.raises(TypeError, match="JSON-serialisable"):
        StateSealer("k").seal(payload)


def test_bad_envelope_rejected_even_when_signed() -> None:
    # A correctly signed token whose envelope has the wrong layout.
    sealer = StateSealer("k")
    body = _b64(b'{"no":"t"}')
    tag = sealer._tag(sealer._mac_keys[0], body, None)
    with pytest.raises(InvalidState, match="layout"):
        sealer.unseal(f"v1.{body}.{tag}")
    body = _b64(b"\xff not json")
    tag = sealer._tag(sealer._mac_keys[0], body, None)
    with pytest.raises(InvalidState, match="JSON"):
        sealer.unseal(f"v1.{body}.{tag}")


def test_tokens_differ_per_issue_time() -> None:
    clock = Clock()
    sealer = StateSealer("k", clock=clock)
    first = sealer.seal(1)
    clock.now += 1
    assert sealer.seal(1) != first


def test_fingerprint() -> None:
    assert fingerprint("alice", "tools/call", {"b": 1, "a": 2}) == fingerprint(
        "alice", "tools/call", {"a": 2, "b": 1}
    )
    assert fingerprint("alice") != fingerprint("bob")
    assert len(fingerprint()) == 32


class TestEncrypted:
    @pytest.fixture(autouse=True)
    def _needs_cryptography(self) -> None:
        pytest.importorskip("cryptography")

    def test_round_trip_and_opacity(self) -> None:
        sealer = StateSealer("k", encrypt=True)
        token = sealer.seal({"secret": "hunter2"})
        assert token.startswith("e1.")
        assert b"hunter2" not in _unb64(token[3:])
        assert sealer.unseal(token) == {"secret": "hunter2"}

    def test_tampered(self) -> None:
        sealer = StateSealer("k", encrypt=True)
        token = sealer.seal(1)
        with pytest.raises(InvalidState, match="integrity"):
            sealer.unseal(token + "-TAMPERED")
        raw = bytearray(_unb64(token[3:]))
        raw[-1] ^= 1
        with pytest.raises(InvalidState, match="integrity"):
            sealer.unseal("e1." + _b64(bytes(raw)))

    def test_short_ciphertext(self) -> None:
        with pytest.raises(InvalidState, match="short"):
            StateSealer("k", encrypt=True).unseal("e1." + _b64(b"x" * 10))

    def test_bind_rotation_and_expiry(self) -> None:
        clock = Clock()
        old = StateSealer("old", encrypt=True, clock=clock)
        sealer = StateSealer(["new", "old"], encrypt=True, clock=clock, max_age=10)
        token = old.seal("v", bind="b")
        assert sealer.unseal(token, bind="b") == "v"
        with pytest.raises(InvalidState):
            sealer.unseal(token, bind="c")
        clock.now += 11
        with pytest.raises(InvalidState, match="expired"):
            sealer.unseal(token, bind="b")

    def test_accepts_signed_tokens_with_same_key(self) -> None:
        signed = StateSealer("k").seal("plain")
        assert StateSealer("k", encrypt=True).unseal(signed) == "plain"

    def test_non_encrypting_sealer_explains_encrypted_tokens(self) -> None:
        token = StateSealer("k", encrypt=True).seal(1)
        with pytest.raises(InvalidState, match="encrypt=True"):
            StateSealer("k").unseal(token)
